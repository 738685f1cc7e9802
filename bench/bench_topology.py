"""Benchmark: the topology suite (faithful and corrected, every layer) against the forward pass.

``TopologyReducer`` works on all layers of a sample at once: spanning forests by a batched Prim for
H0, dominated-vertex reduction and one ripser call per sample for H1 (see ``metrics.topology``).
``ms_per_sentence_layer`` is the suite time per sentence and layer.

Usage: python bench/bench_topology.py [--model smollm2] [--n 100] [--threads 2]
"""

from __future__ import annotations

from harness import arguments, forward_attention, report, timed
from sinkframes.metrics.topology import TopologyReducer


def main() -> None:
    args = arguments(default_n=100)
    forward_s, atts, causal = forward_attention(args.model, args.n, args.batch_size, args.seed)
    reducer = TopologyReducer()
    suite_s, _ = timed(lambda: [reducer(a, causal) for a in atts])
    layers = int(atts[0].shape[0])
    report(
        "topology",
        args.model,
        args.n,
        forward_s,
        suite_s,
        layers=layers,
        ms_per_sentence_layer=round(1000 * suite_s / (args.n * layers), 2),
    )


if __name__ == "__main__":
    main()
