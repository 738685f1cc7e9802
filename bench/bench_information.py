"""Benchmark: the information suites against the forward pass.

1. KL change and sink concentration (``InformationReducer``: every sink rule, faithful and
   corrected) on the attention of ``--n`` sentences, against the forward pass producing it.
2. Empirical Fisher norms (corrected) on ``min(32, n)`` sentences (chapter 5's count), against a
   plain forward pass, one sentence at a time, over the same sentences: the default engine (one
   batched backward pass per eight sentences, norms from activations and output gradients), and
   the reference engine (one backward pass per sentence) as ``loop_ratio``.

Usage: python bench/bench_information.py [--model smollm2] [--n 100] [--skip-fisher]

``--skip-fisher`` times the first part only.
"""

from __future__ import annotations

import torch

from harness import arguments, forward_attention, report, timed
from sinkframes import corpus, extraction
from sinkframes.metrics.information import InformationReducer
from sinkframes.probes import fisher

N_FISHER = 32


def main() -> None:
    args = arguments(default_n=100, extra=lambda ap: ap.add_argument("--skip-fisher", action="store_true"))
    forward_s, atts, causal = forward_attention(args.model, args.n, args.batch_size, args.seed)
    reducer = InformationReducer()
    suite_s, _ = timed(lambda: [reducer(a, causal) for a in atts])
    report("information_kl_concentration", args.model, args.n, forward_s, suite_s)
    if args.skip_fisher:
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
    loop_s, _ = timed(lambda: fisher.fisher_norms(lm, texts, mode="corrected", seed=args.seed, progress=False,
                                                  engine="loop"))
    report("information_fisher", args.model, n_fisher, fwd_s, fisher_s, loop_s=round(loop_s, 3),
           loop_ratio=round(loop_s / fwd_s, 4) if fwd_s > 0 else None)


if __name__ == "__main__":
    main()
