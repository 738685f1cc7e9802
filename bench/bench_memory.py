"""Benchmark: peak resident memory of attention extraction against a plain forward pass.

Usage: python bench/bench_memory.py [--model smollm2] [--n 8] [--batch-size 16] [--threads N]

``n`` inputs of exactly 512 tokens run as one batch of ``min(batch size, n)``; each
path runs in its own fresh process, which loads the model, runs one 8-token forward pass (so that
memory-mapped weights are paged in and kernels initialised: what every later pass finds), records
its resident memory, resets the peak (``/proc/self/clear_refs``) and reports the peak (``VmHWM``)
after the run:

- ``weights``: the model loaded and warmed up, nothing else run (the baseline);
- ``forward``: one plain forward pass without attention output or hook (the model's own activations);
- ``full``: ``iterate_samples`` (the model returns every layer's attention at once);
- ``stacked``: the same forward followed by one ``torch.stack`` of all layers (the full path as it
  was before it sliced samples from the per-layer tuple).

One JSON object: the peaks in MiB, the size of one layer of attention at that batch, and each
path's excess over the baseline in layers of attention. The child processes run with glibc's
``MALLOC_MMAP_THRESHOLD_`` fixed at 1 MiB (unless set), so that freed tensors go back to the system
and the peak measures live memory rather than what the allocator chose to keep.
"""

from __future__ import annotations

import gc
import json
import os
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import torch

from harness import arguments, benchmark_texts
from sinkframes import extraction
from sinkframes.threads import configure
from sinkframes.types import RunOptions

HERE = Path(__file__).resolve().parent
PHASES = ("weights", "forward", "full", "stacked")
MIB = 2**20
TOKENS = 512  # tokens per input


def status_mib(field: str) -> float:
    """A ``/proc/self/status`` memory field (``VmRSS``, ``VmHWM``) in MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def reset_peak() -> bool:
    """Reset the kernel's peak-RSS mark (``VmHWM``) to the current RSS; False where not allowed."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


class PeakSampler:
    """Samples ``VmRSS`` every few milliseconds: a peak where ``VmHWM`` cannot be reset."""

    def __init__(self, every_s: float = 0.005) -> None:
        self.every_s, self.peak, self._stop = every_s, 0.0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, status_mib("VmRSS"))
            time.sleep(self.every_s)

    def __enter__(self) -> PeakSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, status_mib("VmRSS"))


def inputs(n: int, tokens: int, seed: int) -> list[str]:
    """``n`` texts of seeded sentences joined until each is longer than ``tokens`` tokens (cut later)."""
    sentences = benchmark_texts(max(n * 64, 64), seed)
    words_needed = 2 * tokens  # a word is at least one token: twice as many words is always enough
    out = []
    for j in range(n):
        parts: list[str] = []
        k = j * 7
        while sum(len(p.split()) for p in parts) < words_needed:
            parts.append(sentences[k % len(sentences)])
            k += 1
        out.append(" ".join(parts))
    return out


def measure(phase: str, model: str, n: int, batch_size: int, tokens: int, seed: int, threads: int) -> dict[str, Any]:
    """Run one phase in this (fresh) process; its memory figures in MiB."""
    configure(threads)
    opts = RunOptions(batch_size=batch_size, max_length=tokens, truncation=True, progress=False, use_cache=False)
    lm = extraction.get_model(model, opts)
    ids = extraction.tokenize(lm.tokenizer, inputs(n, tokens, seed), tokens, opts.bos_policy, truncation=True)
    if any(len(x) != tokens for x in ids):
        raise RuntimeError(f"inputs are not all {tokens} tokens: {sorted({len(x) for x in ids})}")
    net = extraction.batching.backbone(lm.model)
    with torch.no_grad():  # pages in every weight, starts the thread pools
        warm_ids, warm_mask = extraction.batching.pad_batch([ids[0][:8]], 0)
        extraction.batching.forward(lm, net, warm_ids, warm_mask, output_attentions=False)
    gc.collect()
    loaded = status_mib("VmRSS")
    exact = reset_peak()
    t0 = time.perf_counter()
    with PeakSampler() as sampler:
        if phase == "forward":
            for _batch, input_ids, mask in extraction.batching.iterate_batches(lm, ids, batch_size, False):
                with torch.no_grad():
                    extraction.batching.forward(lm, net, input_ids, mask, output_attentions=False)
        elif phase == "full":
            for _, att, _ in extraction.iterate_samples(lm, ids, opts):  # att [layer, head, query, key]
                _ = att[:, :, :, 0].mean(-1)
                del att
        elif phase == "stacked":
            for _batch, input_ids, mask in extraction.batching.iterate_batches(lm, ids, batch_size, False):
                with torch.no_grad():
                    out = extraction.batching.forward(lm, net, input_ids, mask, output_attentions=True)
                att = torch.stack([a.float() for a in out.attentions], 1)  # [batch, layer, head, query, key]
                _ = att[:, :, :, :, 0].mean(-1)
                del out, att
        elif phase != "weights":
            raise ValueError(f"unknown phase {phase!r}; one of {PHASES}")
    seconds = time.perf_counter() - t0
    return {
        "phase": phase,
        "loaded_mib": round(loaded, 1),
        "peak_mib": round(status_mib("VmHWM") if exact else sampler.peak, 1),
        "peak_source": "VmHWM" if exact else "sampled VmRSS",
        "ru_maxrss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),  # includes loading
        "seconds": round(seconds, 2),
        "layers": int(lm.model.config.num_hidden_layers),
        "heads": int(lm.model.config.num_attention_heads),
    }


def in_fresh_process(phase: str, args: Any, batch: int, threads: int) -> dict[str, Any]:
    """:func:`measure` in a new interpreter, so no phase inherits another's memory."""
    call = (
        f"import sys, json; sys.path.insert(0, {str(HERE)!r}); import bench_memory as b; "
        f"print(json.dumps(b.measure({phase!r}, {args.model!r}, {args.n}, {batch}, {TOKENS}, {args.seed}, "
        f"{threads})))"
    )
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": os.environ.get("MALLOC_MMAP_THRESHOLD_", str(MIB))}
    done = subprocess.run([sys.executable, "-c", call], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"phase {phase} failed:\n{done.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    args = arguments(default_n=8)
    tokens = TOKENS
    threads = torch.get_num_threads()
    batch = min(args.batch_size, args.n)
    runs = {phase: in_fresh_process(phase, args, batch, threads) for phase in PHASES}
    base = runs["weights"]
    layer_mib = batch * base["heads"] * tokens * tokens * 4 / MIB
    rec = {
        "suite": "memory",
        "model": args.model,
        "n_inputs": args.n,
        "tokens": tokens,
        "batch_size": batch,
        "threads": threads,
        "layers": base["layers"],
        "heads": base["heads"],
        "one_layer_attention_mib": round(layer_mib, 1),
        "all_layers_attention_mib": round(layer_mib * base["layers"], 1),
        "weights_baseline_mib": base["peak_mib"],
        "peak_mib": {p: r["peak_mib"] for p, r in runs.items()},
        "excess_over_weights_mib": {p: round(r["peak_mib"] - base["peak_mib"], 1) for p, r in runs.items()},
        "excess_over_weights_layers": {
            p: round((r["peak_mib"] - base["peak_mib"]) / layer_mib, 2) for p, r in runs.items()
        },
        "seconds": {p: r["seconds"] for p, r in runs.items()},
        "peak_source": base["peak_source"],
        "malloc_mmap_threshold": os.environ.get("MALLOC_MMAP_THRESHOLD_", str(MIB)),
    }
    print(json.dumps(rec, indent=2))


if __name__ == "__main__":
    main()
