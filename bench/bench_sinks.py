"""Benchmark: the sink summary against the forward pass that produces the attention.

Usage: python bench/bench_sinks.py [--model smollm2] [--n 100]
Prints JSON with the forward-pass time, the reduction time and their ratio (goal: ratio << 1).
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from sinkframes import corpus, extract
from sinkframes.metrics.sinks import SinkSummaryReducer


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--batch-size", type=int, default=16)
    args = ap.parse_args()
    torch.manual_seed(0)
    texts = corpus.sample_sentences(args.n, seed=0)["text"].tolist()
    lm = extract.get_model(args.model)
    ids = extract.tokenize(lm.tokenizer, texts, 256)
    reducer = SinkSummaryReducer()
    t_forward = t_reduce = 0.0
    t0 = time.perf_counter()
    for _, att, _ in extract.iterate_samples(lm, ids, args.batch_size, progress=False):
        t1 = time.perf_counter()
        reducer(att, lm.record.causal)
        t_reduce += time.perf_counter() - t1
    t_forward = time.perf_counter() - t0 - t_reduce
    print(json.dumps({"model": args.model, "n_sentences": args.n, "forward_s": round(t_forward, 3),
                      "sink_summary_s": round(t_reduce, 3), "ratio": round(t_reduce / t_forward, 4),
                      "threads": torch.get_num_threads()}, indent=2))


if __name__ == "__main__":
    main()
