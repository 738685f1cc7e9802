"""Attention with a known frame, to validate the frame instrument (:mod:`sinkframes.metrics.frames`) before it
decides anything.

Each matrix ``[1, head, n, n]`` mixes, row by row, a structureless part with planted sinks: a query that can see
a planted position gives it ``strength`` of its row (jittered by up to 20 % per sink, so that no sink of a
distributed frame dominates another), and spreads the rest as the structureless part does. The structureless part
is uniform attention (``noise`` 0) or the softmax of Gaussian logits of standard deviation ``noise`` over the
mask, drawn per head, query and key (random attention: peaks everywhere, agreed on by no query).

Planted frames (:data:`PLANTED`): *uniform* and *random* (no sink: the answer is none), *centralized* (one sink,
at the first position or, in a third of the draws, at another position in the first half that at least
:data:`~sinkframes.metrics.frames.MIN_SOURCES` queries can see), *distributed* (two to
three sinks of similar strength, the first position among them), *bidirectional* (bidirectional masks only: the
first and the last position).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch

from ..metrics.frames import FRAMES, MIN_SOURCES, layer_frames

PLANTED = ("uniform", "random", "centralized", "distributed", "bidirectional")
#: the frame each planted kind should be read as
EXPECTED = {"uniform": "none", "random": "none", "centralized": "centralized", "distributed": "distributed",
            "bidirectional": "bidirectional"}
LENGTHS = (16, 32, 64, 128, 256)
STRENGTHS = (0.05, 0.1, 0.15, 0.2, 0.3)
NOISES = (0.5, 1.0, 2.0)
HEADS = 4


def _sinks(kind: str, n: int, causal: bool, strength: float, rng: np.random.Generator) -> dict[int, float]:
    """``{position: share}`` of the planted sinks."""
    jitter = lambda: float(strength * rng.uniform(0.8, 1.2))  # noqa: E731
    # a sink away from the ends sits in the first half, where at least MIN_SOURCES queries see it in a causal mask
    half = max(2, min(n // 2, n - MIN_SOURCES))
    if kind == "centralized":
        where = 0 if rng.random() < 2 / 3 or n < 4 else int(rng.integers(1, half))
        return {where: jitter()}
    if kind == "distributed":
        k = int(rng.integers(2, 4))
        others = rng.choice(np.arange(1, half), size=min(k - 1, half - 1), replace=False)
        return {0: jitter(), **{int(p): jitter() for p in others}}
    if kind == "bidirectional":
        if causal:
            raise ValueError("a bidirectional frame needs a bidirectional mask")
        return {0: jitter(), n - 1: jitter()}
    return {}


def planted_attention(kind: str, n: int, causal: bool, strength: float, noise: float, seed: int,
                      heads: int = HEADS) -> tuple[torch.Tensor, dict[int, float]]:
    """``(attention [1, head, n, n], the planted sinks)`` of one draw (``kind`` in :data:`PLANTED`)."""
    if kind not in PLANTED:
        raise ValueError(f"unknown planted frame {kind!r}; choose from {PLANTED}")
    rng = np.random.default_rng(seed)
    gen = torch.Generator().manual_seed(seed)
    mask = torch.ones(n, n, dtype=torch.bool, device="cpu")  # [query, key]
    mask = torch.tril(mask) if causal else mask
    if kind == "uniform" or noise == 0:
        logits = torch.zeros(heads, n, n, device="cpu")
    else:
        logits = torch.randn(heads, n, n, generator=gen, device="cpu") * noise  # [head, query, key]
    base = logits.masked_fill(~mask, -float("inf")).softmax(-1)
    sinks = _sinks(kind, n, causal, strength, rng) if kind not in ("uniform", "random") else {}
    planted = torch.zeros(n, n, device="cpu")  # [query, key]: the share each query gives each planted sink
    for p, s in sinks.items():
        planted[:, p] = s
    planted = planted * mask  # a causal query sees only the sinks before it
    total = planted.sum(-1, keepdim=True).clamp(max=0.95)  # [query, 1]
    planted = planted * (total / planted.sum(-1, keepdim=True).clamp(min=1e-12))
    attn = (1 - total) * base + planted  # [head, query, key]
    return attn.unsqueeze(0), sinks


def validation_trials(lengths: Sequence[int] = LENGTHS, strengths: Sequence[float] = STRENGTHS,
                      noises: Sequence[float] = NOISES, draws: int = 4, seed: int = 0) -> pd.DataFrame:
    """One row per draw: ``planted, mask, n, strength, noise, expected, read`` (the frame the instrument reads)."""
    rows = []
    for i, (kind, causal, n, strength, noise, _draw) in enumerate(itertools.product(
            PLANTED, (True, False), lengths, strengths, noises, range(draws))):
        if kind == "bidirectional" and causal:
            continue
        if kind == "uniform" and (noise != noises[0] or strength != strengths[0]):
            continue  # uniform attention has neither a strength nor noise: one cell per mask and length
        if kind == "random" and strength != strengths[0]:
            continue
        attn, _ = planted_attention(kind, n, causal, strength, noise, seed=seed * 1_000_003 + i)
        frame = FRAMES[int(layer_frames(attn, causal)["frame"][0])]
        rows.append({"planted": kind, "mask": "causal" if causal else "bidirectional", "n": n,
                     "strength": 0.0 if kind in ("uniform", "random") else strength,
                     "noise": 0.0 if kind == "uniform" else noise, "expected": EXPECTED[kind], "read": frame})
    return pd.DataFrame(rows)


def layer_trials(strengths: Sequence[float] = STRENGTHS, noises: Sequence[float] = NOISES, sets: int = 4,
                 sentences: int = 10, lengths: tuple[int, int] = (12, 64), seed: int = 0) -> pd.DataFrame:
    """The instrument as it reads a model's layer: sets of ``sentences`` draws of one planted kind, strength, noise
    and mask at lengths drawn from ``lengths`` (as a sentence set's lengths vary), each set read as the frame most
    of its sentences read (:func:`sinkframes.metrics.frames.layer_labels`). One row per set, as
    :func:`validation_trials`."""
    from ..metrics.frames import layer_labels

    rows = []
    rng = np.random.default_rng(seed)
    for i, (kind, causal, strength, noise, _set) in enumerate(itertools.product(
            PLANTED, (True, False), strengths, noises, range(sets))):
        if (kind == "bidirectional" and causal) or (kind in ("uniform", "random") and strength != strengths[0]) \
                or (kind == "uniform" and noise != noises[0]):
            continue
        codes, anchors = [], []
        for j in range(sentences):
            n = int(rng.integers(lengths[0], lengths[1] + 1))
            attn, _ = planted_attention(kind, n, causal, strength, noise, seed=(seed * 7919 + i) * 1000 + j)
            out = layer_frames(attn, causal)
            codes.append(int(out["frame"][0]))
            anchors.append(int(out["anchor"][0]))
        frame, _ = layer_labels(np.array(codes)[:, None], np.array(anchors)[:, None])
        rows.append({"planted": kind, "mask": "causal" if causal else "bidirectional", "n": lengths[0],
                     "strength": 0.0 if kind in ("uniform", "random") else strength,
                     "noise": 0.0 if kind == "uniform" else noise, "expected": EXPECTED[kind],
                     "read": FRAMES[int(frame[0])]})
    return pd.DataFrame(rows)


def confusion(trials: pd.DataFrame) -> pd.DataFrame:
    """The share of each planted kind read as each frame (rows: planted kind, columns: :data:`FRAMES`)."""
    table = pd.crosstab(trials["planted"], trials["read"], normalize="index")
    return table.reindex(index=[k for k in PLANTED if k in set(trials["planted"])], columns=list(FRAMES),
                         fill_value=0.0)


def recovery_by_strength(trials: pd.DataFrame) -> pd.DataFrame:
    """The share of draws read as planted, per planted kind and strength (the structureless kinds at 0)."""
    hit = trials.assign(recovered=trials["read"] == trials["expected"])
    return hit.pivot_table(index="planted", columns="strength", values="recovered", aggfunc="mean")
