"""Benchmark: the sink summary against the forward pass that produces the attention.

Usage: python bench/bench_sinks.py [--model smollm2] [--n 500]
"""

from __future__ import annotations

from harness import arguments, forward_attention, report, timed
from sinkframes.metrics.sinks import SinkSummaryReducer


def main() -> None:
    args = arguments()
    forward_s, atts, causal = forward_attention(args.model, args.n, args.batch_size, args.seed)
    reducer = SinkSummaryReducer()
    suite_s, _ = timed(lambda: [reducer(a, causal) for a in atts])
    report("sinks", args.model, args.n, forward_s, suite_s)


if __name__ == "__main__":
    main()
