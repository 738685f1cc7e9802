"""Sinks and reference tokens, per layer and head, from one sample's attention.

All functions take ``attn`` shaped ``[layer, head, query, key]`` (rows sum to 1 over the real
tokens) and a ``causal`` flag. Conventions, stated once:

- *received share* of key ``j``: mean of ``attn[..., i, j]`` over the queries ``i != j`` that can
  see ``j`` (``i > j`` when causal, every ``i != j`` otherwise). Excluding ``j`` itself keeps
  self-attention out of the sink measures; restricting to queries that can see ``j`` removes the
  early-position bias of plain column means in causal models.
- *first-token share* is the received share of position 0; *last-token share* that of position
  ``n-1``, which is exactly 0 in causal models (no query can attend to a later token): a
  bidirectional frame is impossible there by construction.
- *strongest-key share* of ``j``: fraction of the queries ``i >= 1`` whose largest weight is on
  ``j`` (query 0 is left out: in causal models it can only look at itself).
- *sink concentration*: the largest strongest-key share over positions: how much the queries agree
  on one single key.
- *reference tokens* (``mode="corrected"``): keys that receive at least ``tau`` from at least
  ``min_fraction`` of the queries that can see them, with at least ``min_sources`` such queries:
  the paper's "weight above a threshold from many source tokens".
  (``mode="faithful"``): the official ``reference_point`` rule on the head-averaged matrix: column
  mean over all rows > 0.1, else the top ``max(1, floor(0.1 n))`` columns, capped at the top
  ``max(1, floor(0.3 n))``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from ..code_digest import reducer_version
from ..tensors import require_finite

REFERENCE_TAU = 0.1
REFERENCE_MIN_FRACTION = 0.5
REFERENCE_MIN_SOURCES = 3
FAITHFUL_REFERENCE_THRESHOLD = 0.1


def _check(attn: torch.Tensor) -> torch.Tensor:
    if attn.dim() != 4 or attn.shape[-1] != attn.shape[-2]:
        raise ValueError(f"attention must be [layer, head, query, key] with query == key, got {tuple(attn.shape)}")
    return attn.float()


def eligible_pairs(n: int, causal: bool, device: torch.device) -> torch.Tensor:
    """``[query, key]`` bool mask of the pairs (i, j) with i != j and, when causal, i > j."""
    i = torch.arange(n, device=device).unsqueeze(1)
    j = torch.arange(n, device=device).unsqueeze(0)
    return (i > j) if causal else (i != j)


def received_share(attn: torch.Tensor, causal: bool) -> torch.Tensor:
    """``[layer, head, key]``: mean attention each key receives from the queries that can see it.

    NaN where no query can see the key (the last position of a causal model, or n == 1).
    """
    a = _check(attn)
    n = a.shape[-1]
    mask = eligible_pairs(n, causal, a.device).to(a.dtype)  # [query, key]
    count = mask.sum(0)  # [key]
    total = (a * mask).sum(-2)  # [layer, head, key]
    return total / count.where(count > 0, torch.full_like(count, float("nan")))


def first_token_share(attn: torch.Tensor, causal: bool) -> torch.Tensor:
    """``[layer, head]``: mean weight that queries 1..n-1 give to position 0."""
    return received_share(attn, causal)[..., 0]


def uniform_first_token_share(n: int, causal: bool) -> float:
    """The first-token share of uniform attention over ``n`` tokens: ``1 / n`` bidirectional, and causal the mean
    over queries ``1..n-1`` of ``1 / (i + 1)``, which is ``(H_n - 1) / (n - 1)`` (about 0.035 at 128 tokens)."""
    if n < 2:
        return float("nan")
    if not causal:
        return 1.0 / n
    return math.fsum(1.0 / (i + 1) for i in range(1, n)) / (n - 1)


def last_token_share(attn: torch.Tensor, causal: bool) -> torch.Tensor:
    """``[layer, head]``: mean weight the other queries give to position n-1 (0 when causal)."""
    a = _check(attn)
    if causal:
        return torch.zeros(a.shape[:2], dtype=a.dtype, device=a.device)
    return received_share(a, causal)[..., -1]


def strongest_key_share(attn: torch.Tensor) -> torch.Tensor:
    """``[layer, head, key]``: fraction of queries 1..n-1 whose largest weight falls on each key."""
    a = _check(attn)
    n = a.shape[-1]
    if n < 2:
        return torch.full((*a.shape[:2], n), float("nan"), device=a.device)
    top = a[:, :, 1:, :].argmax(-1)  # [layer, head, query-1]
    onehot = torch.nn.functional.one_hot(top, n).to(a.dtype)  # [layer, head, query-1, key]
    return onehot.mean(-2)


def sink_concentration(attn: torch.Tensor) -> torch.Tensor:
    """``[layer, head]``: largest strongest-key share over positions (1 = all queries agree)."""
    return strongest_key_share(attn).amax(-1)


def reference_tokens(
    attn: torch.Tensor,
    causal: bool,
    tau: float = REFERENCE_TAU,
    min_fraction: float = REFERENCE_MIN_FRACTION,
    min_sources: int = REFERENCE_MIN_SOURCES,
) -> torch.Tensor:
    """``[layer, head, key]`` bool: keys that at least ``min_fraction`` of their possible sources
    give weight >= ``tau`` (and that have at least ``min_sources`` possible sources)."""
    a = _check(attn)
    n = a.shape[-1]
    mask = eligible_pairs(n, causal, a.device)  # [query, key]
    count = mask.sum(0)  # [key]
    hits = ((a >= tau) & mask).sum(-2)  # [layer, head, key]
    frac = hits / count.clamp(min=1)
    return (frac >= min_fraction) & (count >= min_sources)


def faithful_reference_count(attn: torch.Tensor) -> torch.Tensor:
    """``[layer]``: number of reference tokens by the official rule on the head-averaged matrix."""
    a = _check(attn)
    n = a.shape[-1]
    col = a.mean(1).mean(-2)  # [layer, key]: column mean of the head average over all rows
    above = (col > FAITHFUL_REFERENCE_THRESHOLD).sum(-1)
    fallback = max(1, math.floor(0.1 * n))
    cap = max(1, math.floor(0.3 * n))
    count = torch.where(above == 0, torch.full_like(above, fallback), above)
    return count.clamp(max=cap)


@dataclass(frozen=True)
class SinkSummaryReducer:
    """Turns one sample's attention into the small per-layer/head summary the chapter needs.

    Used by ``extract.summarize`` so that only ``O(layers x heads)`` numbers per sample are kept.
    ``version``, the digest of its code, enters cache keys.
    """

    tau: float = REFERENCE_TAU
    min_fraction: float = REFERENCE_MIN_FRACTION
    min_sources: int = REFERENCE_MIN_SOURCES
    name: str = "sink_summary"

    @property
    def version(self) -> str:
        """The digest of this reducer's code (``code_digest``): it enters the cache key, so changed code never
        reuses results cached by the old."""
        return reducer_version(type(self))

    def key(self) -> dict:
        return {
            "reducer": self.name,
            "version": self.version,
            "tau": self.tau,
            "min_fraction": self.min_fraction,
            "min_sources": self.min_sources,
        }

    def __call__(self, attn: torch.Tensor, causal: bool) -> dict[str, torch.Tensor]:
        require_finite(attn)
        a = _check(attn)
        n = a.shape[-1]
        recv = received_share(a, causal)  # [layer, head, key]
        sks = strongest_key_share(a)  # [layer, head, key]
        refs = reference_tokens(a, causal, self.tau, self.min_fraction, self.min_sources)
        mean_head = a.mean(1, keepdim=True)  # [layer, 1, query, key]
        return {
            "n_tokens": torch.tensor(n, device=a.device),
            "first_share": recv[..., 0],
            "last_share": last_token_share(a, causal),
            "first_concentration": sks[..., 0],
            "sink_concentration": sks.amax(-1),
            "reference_count": refs.sum(-1),
            "reference_has_first": refs[..., 0],
            "mean_head_sink_concentration": strongest_key_share(mean_head).amax(-1)[:, 0],
            "faithful_reference_count": faithful_reference_count(a),
        }

    def each(self, attn: torch.Tensor, causal: bool) -> list[dict[str, torch.Tensor]]:
        """The summaries of samples of one length, ``attn [sample, layer, head, query, key]``, in one call:
        every statistic is computed layer by layer, so the samples are stacked as layers and split again.
        Equal to ``[self(a) for a in attn]``, in a fraction of the time when the samples are many and small."""
        return summaries_stacked(self, attn, causal)


def summaries_stacked(reduce: Callable[[torch.Tensor, bool], dict[str, torch.Tensor]], attn: torch.Tensor,
                      causal: bool) -> list[dict[str, torch.Tensor]]:
    """``[reduce(a, causal) for a in attn]`` for a per-layer reducer, in one call: the samples ``attn [sample, layer,
    head, query, key]`` (one length) are stacked as layers and split again."""
    if attn.dim() != 5:
        raise ValueError(f"attention must be [sample, layer, head, query, key], got {tuple(attn.shape)}")
    n_samples, n_layers = attn.shape[:2]
    stacked = reduce(attn.reshape(n_samples * n_layers, *attn.shape[2:]), causal)  # [sample * layer, ...]
    n_tokens = stacked.pop("n_tokens")
    split = {k: v.reshape(n_samples, n_layers, *v.shape[1:]) for k, v in stacked.items()}
    return [{"n_tokens": n_tokens.clone(), **{k: v[i] for k, v in split.items()}} for i in range(n_samples)]
