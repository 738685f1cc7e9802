"""Benchmark: the information suites against the forward pass.

1. KL change and sink concentration (``InformationReducer``: every sink rule, faithful and
   corrected) on the attention of ``--n`` sentences, against the forward pass producing it.
2. Empirical Fisher norms (corrected: one forward and backward pass per sentence) on
   ``min(8, n)`` sentences, against a plain forward pass, one sentence at a time, over the same
   sentences.

Usage: python bench/bench_information.py [--model smollm2] [--n 100] [--skip-fisher]

``--skip-fisher`` times the first part only.
"""

from __future__ import annotations

import sys

import torch

from harness import arguments, forward_attention, report, timed
from sinkframes import corpus, extraction
from sinkframes.metrics.information import InformationReducer
from sinkframes.probes import fisher

N_FISHER = 8


def main() -> None:
    skip_fisher = "--skip-fisher" in sys.argv
    if skip_fisher:  # the shared argument parser does not know this flag
        sys.argv.remove("--skip-fisher")
    args = arguments(default_n=100)
    forward_s, atts, causal = forward_attention(args.model, args.n, args.batch_size, args.seed)
    reducer = InformationReducer()
    suite_s, _ = timed(lambda: [reducer(a, causal) for a in atts])
    report("information_kl_concentration", args.model, args.n, forward_s, suite_s)
    if skip_fisher:
        return

    n_fisher = min(N_FISHER, args.n)
    texts = corpus.sample_sentences(n_fisher, seed=args.seed)["text"].tolist()
    lm = extraction.get_model(args.model)
    ids = extraction.tokenize(lm.tokenizer, texts, 256)

    def forward_only() -> None:
        with torch.no_grad():
            for x in ids:
                lm.model(input_ids=torch.tensor([x], device=lm.device))

    fwd_s, _ = timed(forward_only)
    fisher_s, _ = timed(lambda: fisher.fisher_norms(lm, texts, mode="corrected", seed=args.seed, progress=False))
    report("information_fisher", args.model, n_fisher, fwd_s, fisher_s)


if __name__ == "__main__":
    main()
