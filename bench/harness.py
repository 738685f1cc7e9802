"""Shared benchmark harness: time a metric suite against the forward pass that feeds it.

Every ``bench/bench_<suite>.py`` script calls :func:`run_suite` and prints one JSON object with
the forward-pass time, the suite time and their ratio (goal: ratio well below 1).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

import torch

from sinkframes import corpus, extraction
from sinkframes.types import RunOptions


def arguments(
    default_model: str = "smollm2", default_n: int = 500, extra: Callable[[argparse.ArgumentParser], None] | None = None
) -> argparse.Namespace:
    """The options every benchmark accepts (model key, number of sentences, batch size, seed); ``extra``
    adds a script's own."""
    ap = argparse.ArgumentParser()
    if extra is not None:
        extra(ap)
    ap.add_argument("--model", default=default_model)
    ap.add_argument("--n", type=int, default=default_n)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=None, help="torch and BLAS threads (default: SINKFRAMES_THREADS "
                    "or torch's default); printed with the result")
    args = ap.parse_args()
    from sinkframes.threads import configure

    configure(args.threads)  # pinned, so a result states the thread count it was measured with
    return args


def benchmark_texts(n: int, seed: int = 0) -> list[str]:
    """``n`` seeded sentences from the embedded set; beyond its size the draw is repeated in order
    (timing depends on lengths, not on the sentences being distinct)."""
    available = len(corpus.embedded_sentences())
    texts = corpus.sample_sentences(min(n, available), seed=seed)["text"].tolist()
    return [texts[i % len(texts)] for i in range(n)]


def forward_attention(
    model: str, n: int, batch_size: int = 16, seed: int = 0
) -> tuple[float, list[torch.Tensor], bool]:
    """Run the forward passes over ``n`` seeded sentences; return (seconds, attentions, causal).

    The attentions are kept in sentence order, each ``[layer, head, query, key]``.
    """
    torch.manual_seed(seed)
    texts = benchmark_texts(n, seed)
    opts = RunOptions(batch_size=batch_size, progress=False)
    lm = extraction.get_model(model, opts)
    ids = extraction.tokenize(lm.tokenizer, texts, opts.max_length)
    out: list[Any] = [None] * len(ids)
    t0 = time.perf_counter()
    for i, att, _ in extraction.iterate_samples(lm, ids, opts):
        out[i] = att
    return time.perf_counter() - t0, out, lm.record.causal


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """Wall-clock seconds of one call of ``fn`` and its result."""
    t0 = time.perf_counter()
    value = fn()
    return time.perf_counter() - t0, value


def report(suite: str, model: str, n: int, forward_s: float, suite_s: float, **extra: Any) -> dict[str, Any]:
    """Print and return the JSON record of one benchmark."""
    rec = {
        "suite": suite,
        "model": model,
        "n_sentences": n,
        "forward_s": round(forward_s, 3),
        "suite_s": round(suite_s, 3),
        "ratio": round(suite_s / forward_s, 4) if forward_s > 0 else None,
        "threads": torch.get_num_threads(),
        **extra,
    }
    print(json.dumps(rec, indent=2))
    return rec
