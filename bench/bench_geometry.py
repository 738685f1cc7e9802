"""Benchmark: the sink-geometry and value-space suite against the forward pass.

Times (1) the plain attention forward pass, (2) the capture forward pass (queries, keys, values,
outputs and hidden states through hooks) and (3) the reduction of every captured sentence to the
chapter's per-layer numbers (``GeometryValuesReducer``: both value-space modes and the geometry).

With ``--compare`` the version-1 reduction (``tests/unit/geometry_reference.py``: each measure on its own,
on the session's thread count) is timed on the same captures right after, and its ratio reported beside.

Usage: python bench/bench_geometry.py [--model smollm2] [--n 100] [--threads 2] [--compare]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from harness import arguments, forward_attention, report, timed
from sinkframes import corpus, extraction
from sinkframes.analyses.geometry_values import GeometryValuesReducer
from sinkframes.types import RunOptions


def main() -> None:
    compare = "--compare" in sys.argv
    if compare:
        sys.argv.remove("--compare")
    args = arguments(default_n=100)
    forward_s, _, causal = forward_attention(args.model, args.n, args.batch_size, args.seed)
    texts = corpus.sample_sentences(args.n, seed=args.seed)["text"].tolist()
    opts = RunOptions(batch_size=args.batch_size, progress=False)
    lm = extraction.get_model(args.model, opts)
    ids = extraction.tokenize(lm.tokenizer, texts, opts.max_length)
    t0 = time.perf_counter()
    caps = [c for _, c in extraction.iterate_captures(lm, ids, opts)]
    capture_s = time.perf_counter() - t0
    reducer = GeometryValuesReducer()
    suite_s, _ = timed(lambda: [reducer(c, causal) for c in caps])
    extra: dict[str, float | None] = {}
    if compare:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        from tests.unit.geometry_reference import reference_reduce

        old_s, _ = timed(lambda: [reference_reduce(c, causal) for c in caps])
        extra = {"reference_suite_s": round(old_s, 3),
                 "reference_ratio": round(old_s / forward_s, 4) if forward_s > 0 else None}
    report(
        "geometry_values",
        args.model,
        args.n,
        forward_s,
        suite_s,
        capture_forward_s=round(capture_s, 3),
        capture_overhead=round(capture_s / forward_s, 3) if forward_s > 0 else None,
        **extra,
    )


if __name__ == "__main__":
    main()
