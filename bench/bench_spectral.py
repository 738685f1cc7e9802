"""Benchmark: threshold graphs and Laplacian spectra against the forward pass that produced the attention.

Times the chapter's per-sample suite (``SpectralReducer``: 3 variants x 8 thresholds x all layers on the
head average, plus the corrected variant's degree statistics per head at one threshold) over all sentences,
and the same suite with length-sorted chunks of sentences padded into one tensor (``threshold_graph_metrics``
on ``[sample x layer, N, N]``, head-averaged part only), to show what cross-sentence batching buys.

The suite is timed as the pages run it: the reducer called on each sentence in turn.

Usage: python bench/bench_spectral.py [--model smollm2] [--n 500]
"""

from __future__ import annotations

import torch

from harness import arguments, forward_attention, report, timed
from sinkframes.metrics.graphs import ALL_THRESHOLDS, SpectralReducer, pad_square, threshold_graph_metrics


def padded_head_average(atts: list[torch.Tensor], causal: bool, chunk: int = 64) -> None:
    """The head-averaged suite on padded batches of ``chunk`` sentences of similar length (all layers
    and thresholds at once); eigenvalue cost grows as N^3, so sentences are sorted by length first."""
    order = sorted(range(len(atts)), key=lambda i: atts[i].shape[-1])
    for k in range(0, len(order), chunk):
        mats, sizes = pad_square([atts[i].mean(1) for i in order[k : k + chunk]])  # [sample, layer, N, N]
        S, L, N, _ = mats.shape
        threshold_graph_metrics(mats.reshape(S * L, N, N), sizes.repeat_interleave(L), causal, ALL_THRESHOLDS)


def main() -> None:
    args = arguments()
    forward_s, atts, causal = forward_attention(args.model, args.n, args.batch_size, args.seed)
    full = SpectralReducer(per_head=True)
    averaged = SpectralReducer(per_head=False)
    full_s, _ = timed(lambda: [full(a, causal) for a in atts])
    avg_s, _ = timed(lambda: [averaged(a, causal) for a in atts])
    padded_s, _ = timed(lambda: padded_head_average(atts, causal))
    report(
        "spectral",
        args.model,
        args.n,
        forward_s,
        full_s,
        head_average_only_s=round(avg_s, 3),
        head_average_padded_batches_s=round(padded_s, 3),
        mean_tokens=round(sum(a.shape[-1] for a in atts) / len(atts), 1),
    )


if __name__ == "__main__":
    main()
