"""Benchmark: the position-intervention chapter for one model, every pass from an empty cache.

Times the model load, then each intervention's pass (forward pass, reduction, function check) over the
same sentences, the twin's grid included, against one plain forward pass returning attention. Prints the
per-pass times, their total and the ratio of the mean pass to the plain forward pass.

Usage: python bench/bench_positions.py [--model smollm2] [--n 40] [--no-twin]
"""

from __future__ import annotations

import time

from harness import arguments, benchmark_texts, forward_attention, report
from sinkframes.analyses import positions
from sinkframes.extraction.batching import get_model
from sinkframes.models.loading import RANDOM_PREFIX
from sinkframes.models.registry import hook_supports
from sinkframes.probes import positions as probe
from sinkframes.types import RunOptions


def main() -> None:
    args = arguments(default_n=40, extra=lambda ap: ap.add_argument("--no-twin", action="store_true"))
    texts = benchmark_texts(args.n, args.seed)
    opts = RunOptions(batch_size=args.batch_size, progress=False, use_cache=False)
    t0 = time.perf_counter()
    get_model(args.model, opts)
    load_s = time.perf_counter() - t0
    forward_s, _, _ = forward_attention(args.model, args.n, args.batch_size, args.seed)
    passes: dict[str, float] = {}
    refs = [args.model] if args.no_twin else [args.model, f"{RANDOM_PREFIX}{args.model}"]
    for ref in refs:
        record, _, _ = positions.one_pass(ref, texts, probe.UNMODIFIED, opts, args.seed)
        grid = probe.interventions_for(record, hook_supports(record["architecture"]), twin=ref != args.model)
        for iv in grid:
            t0 = time.perf_counter()
            try:
                positions.one_pass(ref, texts, iv, opts, args.seed)
            except probe.PositionRangeError:
                continue
            passes[f"{ref}: {iv.name}"] = round(time.perf_counter() - t0, 2)
    total = sum(passes.values())
    report("positions", args.model, args.n, forward_s, total / len(passes), load_s=round(load_s, 1),
           passes=len(passes), total_s=round(total, 1), per_pass=passes)


if __name__ == "__main__":
    main()
