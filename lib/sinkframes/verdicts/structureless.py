"""Structureless inputs of a result's shapes: the attention nulls of the verdicts are built from these.

A verdict is diagnostic only if a null fails the claim. The null of an attention analysis is the
analysis' own reducer applied to uniform attention (every allowed key weighted equally: causal for
decoders, bidirectional for encoders) with the model's layers, heads and sentence lengths; for the
threshold graphs it can be the dense graph (every allowed edge present at every threshold), because
uniform weights of 1/n would fall under the larger thresholds and leave an empty graph, not a
structureless one. Sentences of equal length give identical nulls, so the reducer runs once per length.

Each attention analysis declares its own null beside its reducer, as the ``on_uniform_attention(result, record,
seed, graph)`` of its registered spec (``results.Analysis``; ``verdicts.nulls.null_result`` reads it there).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from ..results import ModelResult

#: ``make(n, layers, heads, causal)`` -> ``[layer, head, n, n]``: a structureless input of one length
MakeAttention = Callable[[int, int, int, bool], torch.Tensor]


def uniform_attention(n: int, n_layers: int, n_heads: int, causal: bool) -> torch.Tensor:
    """``[layer, head, n, n]`` rows that weigh every allowed key equally."""
    if n < 1:
        raise ValueError(f"need at least one token, got n = {n}")
    mask = torch.ones(n, n, device="cpu")  # [query, key]: nulls are compared on the host, as results are
    mask = torch.tril(mask) if causal else mask
    a = mask / mask.sum(-1, keepdim=True)
    return a.expand(n_layers, n_heads, n, n).contiguous()


def dense_attention(n: int, n_layers: int, n_heads: int, causal: bool) -> torch.Tensor:
    """``[layer, head, n, n]`` with weight 1 on every allowed pair: above every threshold, a dense graph."""
    if n < 1:
        raise ValueError(f"need at least one token, got n = {n}")
    mask = torch.ones(n, n, device="cpu")  # [query, key]: nulls are compared on the host, as results are
    mask = torch.tril(mask) if causal else mask
    return mask.expand(n_layers, n_heads, n, n).contiguous()


def lengths_of(result: ModelResult) -> np.ndarray:
    """``[sample]`` token counts of the sentences behind ``result``."""
    if "n_tokens" in result.samples:
        return np.asarray(result.samples["n_tokens"]).astype(int).reshape(-1)
    tokens = result.data.get("tokens")
    if tokens is not None:
        return np.array([len(t) for t in tokens])
    raise ValueError(f"{result.analysis} result of {result.ref} keeps no sentence lengths; a null needs them")


def null_summaries(result: ModelResult, reducer: Any, make: MakeAttention = uniform_attention
                   ) -> list[dict[str, torch.Tensor]]:
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
