"""Where the sink sits, and what the first token carries, from one pass of one sentence.

- *sink location* of a layer: the key whose head-mean received share (``metrics.sinks.received_share``)
  most exceeds what uniform attention would give it, among the keys at least ``SINK_MIN_SOURCES`` queries
  can see; a layer has a sink only when that excess reaches ``SINK_MIN_EXCESS`` (ten percentage points),
  so uniform attention, whose every key gets exactly its uniform share, has none. Measured against the
  uniform share rather than as a plain maximum because under a causal mask the plain maximum is position
  0 for *any* attention that spreads evenly (it is the one key every query sees).
- *residual ratio* of the first token: the norm of position 0's hidden state over the median norm of the
  other tokens', per layer (``hidden_states``: index 0 is the embedding, ``l`` the input of layer ``l``):
  the "massive activation" some accounts tie to the sink.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

from ..code_digest import reducer_version
from .sinks import SinkSummaryReducer, received_share

SINK_MIN_EXCESS = 0.1
SINK_MIN_SOURCES = 3
#: two keys whose excess differs by less than this are tied: float round-off (about 1e-7 on a share) must not pick
#: the sink, as it did where two tokens carry identical hidden states (an encoder's ``<s>`` and ``</s>`` from some
#: layer on)
TIE_TOLERANCE = 1e-4
#: the sink index of a layer whose largest excess is shared by two keys or more (:data:`TIE_TOLERANCE`)
TIED = -2


def uniform_received(n: int, causal: bool, device: torch.device) -> torch.Tensor:
    """``[key]``: the received share (mean over the queries that can see a key, itself excluded) under
    uniform attention: ``mean_{i>j} 1/(i+1)`` when causal, ``1/n`` otherwise; NaN for a key no query sees."""
    if not causal:
        return torch.full((n,), 1.0 / n if n > 1 else math.nan, device=device)
    inv = 1.0 / torch.arange(1, n + 1, dtype=torch.float64, device=device)  # weight query i gives each key: 1/(i+1)
    out = torch.full((n,), math.nan, dtype=torch.float64, device=device)
    for j in range(n - 1):
        out[j] = inv[j + 1 :].mean()
    return out.float()


def sources(n: int, causal: bool, device: torch.device) -> torch.Tensor:
    """``[key]``: how many other queries can see each key."""
    j = torch.arange(n, device=device)
    return (n - 1 - j) if causal else torch.full((n,), n - 1, device=device)


def sink_location(recv: torch.Tensor, causal: bool, min_excess: float = SINK_MIN_EXCESS,
                  min_sources: int = SINK_MIN_SOURCES) -> tuple[torch.Tensor, torch.Tensor]:
    """``(index [layer], excess [layer])`` from the head-mean received share ``recv [layer, key]``: the key
    with the largest excess over the uniform share (-1 where no key reaches ``min_excess``; :data:`TIED` where
    another key's excess is within :data:`TIE_TOLERANCE` of it, so that round-off never chooses between them)."""
    n = recv.shape[-1]
    excess = recv.float() - uniform_received(n, causal, recv.device)  # [layer, key]
    ok = (sources(n, causal, recv.device) >= min_sources) & torch.isfinite(excess)
    masked = torch.where(ok, excess, torch.full_like(excess, -math.inf))
    best, idx = masked.max(-1)
    tied = (masked >= best.unsqueeze(-1) - TIE_TOLERANCE).sum(-1) > 1  # [layer]
    idx = torch.where(tied, torch.full_like(idx, TIED), idx)
    idx = torch.where(best >= min_excess, idx, torch.full_like(idx, -1))
    return idx, torch.where(torch.isfinite(best), best, torch.full_like(best, math.nan))


def residual_ratio(hidden: torch.Tensor) -> torch.Tensor:
    """``[layer + 1]``: ``|h[0]| / median_{j >= 1} |h[j]|`` per layer of ``hidden [layer + 1, token, d]``."""
    norms = hidden.float().norm(dim=-1)  # [layer + 1, token]
    if norms.shape[-1] < 2:
        return torch.full((norms.shape[0],), math.nan, device=norms.device)
    return norms[:, 0] / norms[:, 1:].median(-1).values.clamp_min(1e-12)


@dataclass(frozen=True)
class PositionReducer:
    """One intervened pass of one sentence -> the numbers the chapter keeps (``O(layer x head + n)``)."""

    min_excess: float = SINK_MIN_EXCESS
    min_sources: int = SINK_MIN_SOURCES

    @property
    def version(self) -> str:
        """The digest of this reducer's code (``code_digest``): it enters the cache key, so changed code never
        reuses results cached by the old."""
        return reducer_version(type(self))

    def key(self) -> dict[str, Any]:
        return {"reducer": "position_summary", "version": self.version, "min_excess": self.min_excess,
                "min_sources": self.min_sources, "sinks": SinkSummaryReducer().key()}

    def __call__(self, sample: dict[str, Any]) -> dict[str, Any]:
        att, causal = sample["attention"], bool(sample["causal"])  # [layer, head, query, key]
        recv = received_share(att, causal).mean(1)  # [layer, key]
        index, excess = sink_location(recv, causal, self.min_excess, self.min_sources)
        out: dict[str, Any] = dict(SinkSummaryReducer()(att, causal))
        out.update(received=recv, sink_index=index, sink_excess=excess,
                   residual_ratio=residual_ratio(sample["hidden"]), origin=int(sample["origin"]),
                   first=int(sample["first"]), causal=causal, loss=float(sample["loss"]),
                   pooled=sample["pooled"], value_ratio=sample["value_ratio"])
        return out
