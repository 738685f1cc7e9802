"""Attention matrices ``[query, key]`` with known sink structure, shared by the metric tests."""

from __future__ import annotations

import torch


def stack(mat: torch.Tensor, layers: int = 2, heads: int = 3) -> torch.Tensor:
    """Repeat one matrix over layers and heads: ``[layer, head, query, key]``."""
    return mat.expand(layers, heads, *mat.shape).clone()


def causal_first_sink(n: int) -> torch.Tensor:
    """Every query puts all its weight on position 0."""
    a = torch.zeros(n, n)
    a[:, 0] = 1.0
    return a


def causal_uniform(n: int) -> torch.Tensor:
    """Each query spreads its weight evenly over the keys it can see."""
    a = torch.tril(torch.ones(n, n))
    return a / a.sum(-1, keepdim=True)


def two_ends(n: int) -> torch.Tensor:
    """Bidirectional: every middle query splits its weight between the first and last token."""
    a = torch.zeros(n, n)
    a[:, 0] = 0.5
    a[:, -1] = 0.5
    a[0] = 1.0 / n
    a[-1] = 1.0 / n
    return a


def previous_token(n: int) -> torch.Tensor:
    """Each query looks only at the token before it (query 0 at itself)."""
    a = torch.zeros(n, n)
    a[0, 0] = 1.0
    for i in range(1, n):
        a[i, i - 1] = 1.0
    return a
