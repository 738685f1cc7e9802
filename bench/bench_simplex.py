"""Benchmark: the simplex row descriptors against the forward pass that produces the attention.

Usage: python bench/bench_simplex.py [--model smollm2] [--n 500]
"""

from __future__ import annotations

from harness import arguments, forward_attention, report, timed
from sinkframes.analyses.softmax_geometry import sink_sweep_table
from sinkframes.metrics.simplex import SimplexSummaryReducer


def main() -> None:
    args = arguments()
    forward_s, atts, causal = forward_attention(args.model, args.n, args.batch_size, args.seed)
    reducer = SimplexSummaryReducer()
    suite_s, _ = timed(lambda: [reducer(a, causal) for a in atts])
    sweep_s, _ = timed(lambda: sink_sweep_table(seed=args.seed))
    report("simplex", args.model, args.n, forward_s, suite_s, synthetic_sweep_s=round(sweep_s, 3))


if __name__ == "__main__":
    main()
