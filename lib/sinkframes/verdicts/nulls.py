"""Structureless inputs: the same analysis run on uniform attention of the model's shapes.

A verdict is diagnostic only if a null fails the claim. The null of an attention analysis is the
analysis' own reducer applied to uniform attention (every allowed key weighted equally: causal for
decoders, bidirectional for encoders) with the model's layers, heads and sentence lengths; for the
threshold graphs it is the dense graph (every allowed edge present at every threshold), because
uniform weights of 1/n would fall under the larger thresholds and leave an empty graph, not a
structureless one. Sentences of equal length give identical nulls, so the reducer runs once per length.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ..analyses.base import ModelResult


def uniform_attention(n: int, n_layers: int, n_heads: int, causal: bool) -> torch.Tensor:
    """``[layer, head, n, n]`` rows that weigh every allowed key equally."""
    if n < 1:
        raise ValueError(f"need at least one token, got n = {n}")
    mask = torch.tril(torch.ones(n, n)) if causal else torch.ones(n, n)  # [query, key]
    a = mask / mask.sum(-1, keepdim=True)
    return a.expand(n_layers, n_heads, n, n).contiguous()


def dense_attention(n: int, n_layers: int, n_heads: int, causal: bool) -> torch.Tensor:
    """``[layer, head, n, n]`` with weight 1 on every allowed pair: above every threshold, a dense graph."""
    if n < 1:
        raise ValueError(f"need at least one token, got n = {n}")
    mask = torch.tril(torch.ones(n, n)) if causal else torch.ones(n, n)  # [query, key]
    return mask.expand(n_layers, n_heads, n, n).contiguous()


def lengths_of(result: ModelResult) -> np.ndarray:
    """``[sample]`` token counts of the sentences behind ``result``."""
    if "n_tokens" in result.samples:
        return np.asarray(result.samples["n_tokens"]).astype(int).reshape(-1)
    tokens = result.data.get("tokens")
    if tokens is not None:
        return np.array([len(t) for t in tokens])
    raise ValueError(f"{result.analysis} result of {result.ref} keeps no sentence lengths; a null needs them")


def null_summaries(result: ModelResult, reducer: Any, make: Any = uniform_attention) -> list[dict[str, torch.Tensor]]:
    """``reducer`` on ``make(n, layers, heads, causal)`` (uniform attention) of ``result``'s shapes, one
    summary per sentence."""
    rec = result.record
    by_length: dict[int, dict[str, torch.Tensor]] = {}
    out = []
    for n in lengths_of(result):
        if int(n) not in by_length:
            by_length[int(n)] = reducer(make(int(n), int(rec["n_layers"]), int(rec["n_heads"]),
                                                          bool(rec["causal"])), bool(rec["causal"]))
        out.append(by_length[int(n)])
    return out


def null_result(result: ModelResult, graph: str = "dense") -> ModelResult:
    """The analysis of ``result`` recomputed on uniform attention (same record, lengths and parameters).
    For the threshold graphs ``graph`` picks the input: ``"dense"`` (every allowed edge at every threshold)
    or ``"uniform"`` (uniform attention thresholded like the model's: at ``t`` a row keeps its keys while
    ``1 / n >= t``)."""
    rec = {**result.record, "ref": f"null:{result.ref}"}
    seed = int(result.params.get("seed", 0))
    if result.analysis == "frames":
        from ..analyses import frames
        from ..metrics.sinks import SinkSummaryReducer

        r = frames.frames_from_summaries(rec, null_summaries(result, SinkSummaryReducer()), seed=seed)
    elif result.analysis == "information":
        from ..analyses import information
        from ..metrics.information import InformationReducer

        r = information.from_summaries(rec, null_summaries(result, InformationReducer()), seed=seed)
    elif result.analysis == "spectral":
        from ..analyses import spectral
        from ..metrics.graphs import SpectralReducer

        make = dense_attention if graph == "dense" else uniform_attention
        r = spectral.spectra_from_summaries(rec, null_summaries(result, SpectralReducer(per_head=False), make))
        r.params["seed"] = seed
    elif result.analysis == "topology":
        from ..analyses import topology
        from ..metrics.topology import TopologyReducer

        max_tokens = int(result.params.get("max_tokens", result.data.get("max_tokens", 30)))
        summaries = null_summaries(result, TopologyReducer(max_tokens=max_tokens))
        r = topology.from_summaries(rec, result.data["tokens"], summaries, max_tokens=max_tokens)
        if "faithful_tokens" in result.data:  # an encoder's faithful numbers come from truncated texts
            cut_tokens = result.data["faithful_tokens"]
            shadow = ModelResult(result.analysis, result.record, len(cut_tokens), data={"tokens": cut_tokens})
            cut = null_summaries(shadow, TopologyReducer(max_tokens=max_tokens))
            r = topology.with_faithful_from(r, topology.from_summaries(rec, cut_tokens, cut, max_tokens=max_tokens))
    elif result.analysis == "softmax_geometry":
        from ..analyses import softmax_geometry
        from ..metrics.simplex import SimplexSummaryReducer

        r = softmax_geometry.simplex_from_summaries(rec, null_summaries(result, SimplexSummaryReducer()), seed=seed)
    elif result.analysis == "positions":
        from ..analyses import positions

        r = positions.null_from(result)
    else:
        raise ValueError(f"no attention null for analysis {result.analysis!r}")
    r.params = {**result.params, **r.params,
                "null": "dense graph" if result.analysis == "spectral" and graph == "dense" else "uniform attention"}
    return r
