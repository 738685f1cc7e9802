"""The attention null of a result: its analysis rerun on structureless attention of its shapes.

The inputs (uniform attention, the dense graph) are built in :mod:`sinkframes.verdicts.structureless`;
each attention analysis declares how it reruns on them in its registered spec (``results.Analysis``).
"""

from __future__ import annotations

from ..results import ModelResult, spec_of
from .structureless import dense_attention, lengths_of, null_summaries, uniform_attention

__all__ = ["dense_attention", "lengths_of", "null_result", "null_summaries", "uniform_attention"]


def null_result(result: ModelResult, graph: str = "dense") -> ModelResult:
    """The analysis of ``result`` recomputed on uniform attention (same record, lengths and parameters), by
    its spec's ``on_uniform_attention``. For the threshold graphs ``graph`` picks the input: ``"dense"``
    (every allowed edge at every threshold) or ``"uniform"`` (uniform attention thresholded like the model's:
    at ``t`` a row keeps its keys while ``1 / n >= t``)."""
    try:
        build = spec_of(result.analysis).on_uniform_attention
    except ValueError:
        build = None
    if build is None:
        raise ValueError(f"no attention null for analysis {result.analysis!r}")
    rec = {**result.record, "ref": f"null:{result.ref}"}
    r: ModelResult = build(result, rec, int(result.params.get("seed", 0)), graph)
    r.params = {**result.params, "null": "uniform attention", **r.params}  # an analysis may name its own input
    return r
