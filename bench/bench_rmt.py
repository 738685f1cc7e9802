"""Benchmark: the official and corrected random-matrix statistics (Appendix B) against the forward pass.

Usage: python bench/bench_rmt.py [--model smollm2] [--n 100]
"""

from __future__ import annotations

from harness import arguments, forward_attention, report, timed
from sinkframes.analyses.rmt import RMTReducer


def main() -> None:
    args = arguments(default_n=100)
    forward_s, atts, causal = forward_attention(args.model, args.n, args.batch_size, args.seed)
    reducer = RMTReducer()
    suite_s, _ = timed(lambda: [reducer(a, causal) for a in atts])
    report("rmt (official on head means, corrected per head, all layers)", args.model, args.n, forward_s, suite_s)


if __name__ == "__main__":
    main()
