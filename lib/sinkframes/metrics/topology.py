"""Persistent homology of attention (paper section 4, 5.1-5.3, appendices E-J), with gudhi.

Two modes, computed on the head-averaged attention ``Ā`` of a layer (``[query, key]``):

``faithful`` reproduces the official topology notebook, defects included:

- distance ``D = 1 - Ā`` in float32: asymmetric, with a non-zero diagonal ``1 - Ā_ii``;
- more than ``FAITHFUL_MAX_POINTS`` (30) tokens: keep rows/columns ``floor(linspace(0, n-1, 30))``;
- the official code hands ``D`` to ripser as a distance matrix. Because the diagonal is non-zero,
  ripser takes its sparse path: vertex ``i`` is born at ``D_ii``, edge ``{i, j}`` (``i < j``) enters
  at ``D_ij`` (the **upper triangle only**: attention of the earlier token to the later one), the
  lower triangle is ignored, entries exactly 0 are dropped as absent edges, edge values are used
  literally even below a vertex birth, and bars of zero length are dropped. ``_ripser_h0``
  replays that union-find step by step; H1 (which ignores vertex births) comes from the gudhi
  flag complex on the same edges;
- "Betti0"/"Betti1" are the **numbers of diagram points** (infinite H0 bar included), mean and max
  persistence are taken over the finite bars (NaN when there are none);
- for a causal model the upper triangle of ``Ā`` is 0, every edge enters at 1, so Betti0 is
  ``min(n, 30)`` (minus tokens with zero self-attention), Betti1 is 0 and the H0 persistences are
  the self-attention weights: the numbers measure token count and self-attention, not topology.

``corrected`` is what the paper meant:

- a symmetric similarity ``s_ij = max`` of the *observed* directions ``Ā_ij`` and ``Ā_ji``
  (a causal mask hides ``Ā_ij`` for ``j > i``; a hidden entry is missing, not evidence of zero
  attention); pairs with no observed direction, or no attention at all, are absent edges;
- distance ``1 - s`` with a zero diagonal, flag (Vietoris-Rips) complex up to triangles;
- Betti numbers as functions of the scale: ``betti_k(t)`` = rank of ``H_k`` of the graph of the
  pairs with ``s >= t`` (scale ``r = 1 - t``), on a grid of attention thresholds and at the paper's
  seven thresholds; total persistence per dimension, the area under the Betti curve over the
  scales ``[0, 1 - 0.001]`` (every bar cut at the smallest threshold, infinite ones included).

Head specialization: per head, the key each sample's head "fixes on". ``faithful``: argmax of the
plain column mean of ``A^h`` (all rows, self-attention and causal zeros included, which biases causal
models to position 0), compared across samples as a token *string*. ``corrected``: argmax of the
received share (mean over the queries that can see the key, self excluded; see ``metrics.sinks``),
compared both as a *position* (first / last / index) and as a string.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import gudhi
import numpy as np
import torch

from ..tensors import require_finite
from .sinks import received_share

FAITHFUL_MAX_POINTS = 30
FAITHFUL_MAX_TOKENS = 48
PAPER_THRESHOLDS: tuple[float, ...] = (0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2)
#: attention thresholds of the Betti curves (log-spaced, the paper's seven included)
CURVE_THRESHOLDS: np.ndarray = np.unique(np.concatenate([np.round(np.logspace(-3, 0, 46), 6), PAPER_THRESHOLDS]))
SPECIALIZED_MIN_CONSISTENCY = 0.3  # official report rule
SPECIALIZED_MIN_SAMPLES = 5
FIGURE_MIN_CONSISTENCY = 0.5  # official figure rule


# ----------------------------------------------------------------------------- helpers


def _square(mat: np.ndarray | torch.Tensor, name: str = "attention") -> np.ndarray:
    a = mat.detach().cpu().numpy() if isinstance(mat, torch.Tensor) else np.asarray(mat)
    if a.ndim != 2 or a.shape[0] != a.shape[1] or a.shape[0] < 1:
        raise ValueError(f"{name} must be a square [query, key] matrix, got shape {a.shape}")
    if not np.isfinite(a).all():
        raise ValueError(f"{name} contains NaN or inf; extract attention in float32")
    return a


def faithful_layers(n_layers: int) -> list[int]:
    """The official notebook's five analysed layers ``{0, s, 2s, 3s, L-1}`` with ``s = max(1, L//4)``."""
    if n_layers < 1:
        raise ValueError("n_layers must be >= 1")
    s = max(1, n_layers // 4)
    return sorted({x for x in (0, s, 2 * s, 3 * s, n_layers - 1) if x < n_layers})


def subsample_indices(n: int, k: int = FAITHFUL_MAX_POINTS) -> np.ndarray:
    """Indices of the tokens the official code keeps: all if ``n <= k``, else ``floor(linspace(0, n-1, k))``."""
    if n <= k:
        return np.arange(n)
    return np.floor(np.linspace(0, n - 1, k)).astype(int)


def _intervals(st: gudhi.SimplexTree, dim: int) -> np.ndarray:
    out = np.asarray(st.persistence_intervals_in_dimension(dim), dtype=float)
    return out.reshape(-1, 2)


def _flag_persistence(filtration: np.ndarray, max_scale: float) -> tuple[np.ndarray, np.ndarray]:
    """H0 and H1 diagrams (field Z/2, zero-length bars dropped) of the flag complex up to triangles.

    ``filtration``: symmetric, vertices on the diagonal, ``inf`` for absent edges; edges above
    ``max_scale`` are left out.
    """
    st = gudhi.SimplexTree.create_from_array(filtration, max_filtration=max_scale)
    st.expansion(2)
    # the top dimension's homology is only needed when triangles are missing (then H1 or H0 is the top)
    st.compute_persistence(homology_coeff_field=2, persistence_dim_max=st.dimension() < 2)
    return _intervals(st, 0), _intervals(st, 1)


# ----------------------------------------------------------------------------- faithful


def faithful_distance(avg: np.ndarray | torch.Tensor) -> np.ndarray:
    """``1 - Ā`` in float32 on the (at most 30) subsampled tokens, as the official code builds it."""
    a = _square(avg).astype(np.float32)
    idx = subsample_indices(a.shape[0])
    return (np.float32(1.0) - a)[np.ix_(idx, idx)]


def _ripser_h0(dist: np.ndarray) -> np.ndarray:
    """H0 diagram ripser computes for a distance matrix with a non-zero diagonal (sparse path).

    Vertex births on the diagonal, edges from the strict upper triangle (exact zeros absent),
    processed by increasing value (ties: larger simplex index first), elder rule with
    ``birth = max`` of the two components' births, bars kept only if ``death > birth``.
    """
    d = dist.astype(np.float32)
    k = d.shape[0]
    birth = [float(x) for x in np.diag(d)]
    iu, ju = np.triu_indices(k, 1)
    vals = d[iu, ju]
    keep = vals != 0
    iu, ju, vals = iu[keep], ju[keep], vals[keep]
    index = ju * (ju - 1) // 2 + iu  # combinatorial index of edge {i < j}
    order = np.lexsort((-index, vals))
    parent = list(range(k))
    rank = [0] * k

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    bars: list[tuple[float, float]] = []
    for e in order:
        u, v = find(int(iu[e])), find(int(ju[e]))
        if u == v:
            continue
        b, dth = max(birth[u], birth[v]), float(vals[e])
        if dth > b:
            bars.append((b, dth))
        if rank[u] > rank[v]:
            u, v = v, u
        parent[u] = v  # v is the root of the merged component
        birth[v] = min(birth[u], birth[v])
        if rank[u] == rank[v]:
            rank[v] += 1
    bars += [(birth[i], np.inf) for i in range(k) if find(i) == i]
    return np.asarray(bars, dtype=float).reshape(-1, 2)


def _faithful_h1(dist: np.ndarray) -> np.ndarray:
    """H1 diagram of the flag complex on the upper-triangle edges (vertex births play no part in H1)."""
    d = dist.astype(np.float32).astype(float)
    k = d.shape[0]
    if k < 3:
        return np.zeros((0, 2))
    up = np.triu(d, 1)
    present = np.triu(np.ones((k, k), bool), 1) & (up != 0)
    m = np.where(present, up, np.inf)
    m = np.minimum(m, m.T)
    finite = m[np.isfinite(m)]
    base = min(0.0, float(finite.min())) if finite.size else 0.0
    if finite.size == k * (k - 1) and np.all(finite == finite[0]):
        return np.zeros((0, 2))  # complete graph, every edge and triangle at one value: only zero-length bars
    np.fill_diagonal(m, base)
    return _flag_persistence(m, np.finfo(float).max)[1]


def faithful_diagrams(dist: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(H0, H1)`` diagrams ``[bar, (birth, death)]`` the official ``ripser(D, maxdim=1)`` call returns."""
    d = _square(dist, "distance")
    return _ripser_h0(d), _faithful_h1(d)


def _bar_stats(dgm: np.ndarray) -> tuple[float, float]:
    life = dgm[:, 1] - dgm[:, 0]
    life = life[np.isfinite(life)]
    return (float(life.mean()), float(life.max())) if life.size else (float("nan"), float("nan"))


FAITHFUL_FIELDS = (
    "betti0",
    "betti1",
    "dim0_avg",
    "dim0_max",
    "dim1_avg",
    "dim1_max",
    "attention_mean",
    "attention_max",
    "attention_min",
    "attention_std",
    "self_attention",
)


def faithful_layer(avg: np.ndarray | torch.Tensor) -> dict[str, float]:
    """The official per-layer numbers of one sample: diagram-point counts, persistences, attention stats."""
    a = _square(avg).astype(np.float32)
    h0, h1 = faithful_diagrams(faithful_distance(a))
    d0a, d0m = _bar_stats(h0)
    d1a, d1m = _bar_stats(h1)
    idx = subsample_indices(a.shape[0])[1:]
    # not an official output: the mean self-attention of the sampled tokens after the first, which
    # the H0 persistence of a causal model reduces to
    self_att = float(np.diag(a)[idx].mean()) if idx.size else float("nan")
    return {
        "betti0": float(len(h0)),
        "betti1": float(len(h1)),
        "dim0_avg": d0a,
        "dim0_max": d0m,
        "dim1_avg": d1a,
        "dim1_max": d1m,
        "attention_mean": float(a.mean()),
        "attention_max": float(a.max()),
        "attention_min": float(a.min()),
        "attention_std": float(a.std()),
        "self_attention": self_att,
    }


def faithful_top_keys(attn: torch.Tensor) -> torch.Tensor:
    """``[layer, head]``: argmax of the plain column mean of each head (the official ``top_token`` position)."""
    return attn.float().mean(-2).argmax(-1)  # column mean over all queries: [layer, head, key] -> argmax


# ----------------------------------------------------------------------------- corrected


def observed_pairs(n: int, causal: bool) -> np.ndarray:
    """``[query, key]`` bool: entries the model could fill (``j <= i`` when causal, all otherwise)."""
    return np.tril(np.ones((n, n), bool)) if causal else np.ones((n, n), bool)


def symmetric_similarity(avg: np.ndarray | torch.Tensor, causal: bool) -> np.ndarray:
    """``s_ij = max`` of the observed ``Ā_ij``, ``Ā_ji``; NaN where neither direction is observed; 0 diagonal."""
    a = _square(avg).astype(float)
    obs = observed_pairs(a.shape[0], causal)
    fwd = np.where(obs, a, -np.inf)
    s = np.maximum(fwd, fwd.T)
    s[np.isneginf(s)] = np.nan
    np.fill_diagonal(s, 0.0)
    return s


def corrected_distance(avg: np.ndarray | torch.Tensor, causal: bool) -> np.ndarray:
    """Symmetric ``1 - s`` with a zero diagonal; ``inf`` for absent edges (hidden pairs, zero attention)."""
    s = symmetric_similarity(avg, causal)
    d = 1.0 - s
    absent = ~(s > 0)
    np.fill_diagonal(absent, False)
    d[absent] = np.inf
    np.fill_diagonal(d, 0.0)
    return d


def corrected_diagrams(dist: np.ndarray, max_scale: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(H0, H1)`` diagrams of the flag complex of a symmetric distance matrix (``inf`` = no edge).

    ``max_scale``: leave out edges longer than this (bars still alive there become infinite);
    ``None`` keeps the whole filtration.
    """
    d = np.asarray(dist, dtype=float)
    if d.ndim != 2 or d.shape[0] != d.shape[1] or not np.allclose(d, d.T, equal_nan=True) or np.any(np.diag(d) != 0):
        raise ValueError("corrected distance must be a symmetric square matrix with a zero diagonal")
    return _flag_persistence(d, np.finfo(float).max if max_scale is None else float(max_scale))


def betti_curve(dgm: np.ndarray, thresholds: np.ndarray | tuple[float, ...] = CURVE_THRESHOLDS) -> np.ndarray:
    """Betti number at each attention threshold ``t`` (scale ``1 - t``): bars with ``birth <= 1-t < death``."""
    r = 1.0 - np.asarray(thresholds, dtype=float)  # [threshold]
    b, d = dgm[:, 0:1], dgm[:, 1:2]  # [bar, 1]
    return ((b <= r) & (r < d)).sum(0)


def total_persistence(dgm: np.ndarray, max_scale: float | None = None) -> float:
    """Sum of the bar lengths: finite bars only, or, with ``max_scale``, every bar cut at that scale
    (= the area under the Betti curve between scale 0 and ``max_scale``)."""
    if max_scale is None:
        life = dgm[:, 1] - dgm[:, 0]
        return float(life[np.isfinite(life)].sum())
    return float(np.clip(np.minimum(dgm[:, 1], max_scale) - dgm[:, 0], 0, None).sum())


@dataclass
class CorrectedLayer:
    """Corrected topology of one layer of one sample."""

    h0: np.ndarray  # [bar, 2]
    h1: np.ndarray  # [bar, 2]
    thresholds: np.ndarray = field(default_factory=lambda: CURVE_THRESHOLDS)

    @property
    def betti0(self) -> np.ndarray:
        return betti_curve(self.h0, self.thresholds)

    @property
    def betti1(self) -> np.ndarray:
        return betti_curve(self.h1, self.thresholds)

    @property
    def max_scale(self) -> float:
        return 1.0 - float(self.thresholds.min())

    def total_persistence(self, dim: int) -> float:
        """Area under the Betti-``dim`` curve over scales ``[0, 1 - min threshold]``."""
        return total_persistence(self.h0 if dim == 0 else self.h1, self.max_scale)


def corrected_layer(
    avg: np.ndarray | torch.Tensor, causal: bool, thresholds: np.ndarray = CURVE_THRESHOLDS
) -> CorrectedLayer:
    """Corrected diagrams of one head-averaged matrix (all tokens, no subsampling).

    The filtration stops at the smallest threshold (scale ``1 - min(thresholds)``): weaker edges
    change no Betti number on the grid, and leaving them out makes the complex several times smaller.
    """
    t = np.asarray(thresholds, dtype=float)
    h0, h1 = corrected_diagrams(corrected_distance(avg, causal), max_scale=1.0 - float(t.min()))
    return CorrectedLayer(h0, h1, t)


def corrected_top_keys(attn: torch.Tensor, causal: bool) -> torch.Tensor:
    """``[layer, head]``: key with the largest received share (visible queries, self excluded)."""
    recv = received_share(attn, causal)  # [layer, head, key], NaN where no query can see the key
    return torch.nan_to_num(recv, nan=-1.0).argmax(-1)


def position_label(pos: int, n: int) -> str:
    """A position comparable across sentences of different length: ``first``, ``last`` or its index."""
    if pos == 0:
        return "first"
    if pos == n - 1:
        return "last"
    return str(pos)


# ----------------------------------------------------------------------------- per-sample reducer


@dataclass(frozen=True)
class TopologyReducer:
    """One sample's attention ``[layer, head, n, n]`` -> faithful and corrected topology, per layer.

    Used with ``extract.summarize`` so that only small arrays per sample are kept. ``faithful``
    fields use the official conventions; for causal models the attention is first cut to the first
    ``max_tokens`` tokens, which is exactly what tokenizer truncation gives a causal model (its
    attention on a prefix does not depend on later tokens). Bidirectional models are used whole.
    """

    max_tokens: int = FAITHFUL_MAX_TOKENS
    name: str = "topology"
    version: int = 2

    def key(self) -> dict[str, Any]:
        return {
            "reducer": self.name,
            "version": self.version,
            "max_tokens": self.max_tokens,
            "max_points": FAITHFUL_MAX_POINTS,
            "thresholds": [float(t) for t in CURVE_THRESHOLDS],
        }

    def __call__(self, attn: torch.Tensor, causal: bool) -> dict[str, torch.Tensor]:
        require_finite(attn)
        if attn.dim() != 4 or attn.shape[-1] != attn.shape[-2]:
            raise ValueError(f"attention must be [layer, head, query, key], got {tuple(attn.shape)}")
        a = attn.float()
        n_layers, n = a.shape[0], a.shape[-1]
        fa = a[..., : self.max_tokens, : self.max_tokens] if causal else a
        favg = fa.mean(1).numpy()  # [layer, query, key] (faithful input)
        avg = a.mean(1).numpy()  # [layer, query, key]
        per_layer = [faithful_layer(favg[layer]) for layer in range(n_layers)]
        faithful = np.array([[d[f] for f in FAITHFUL_FIELDS] for d in per_layer])  # [layer, field]
        b0, b1, tp0, tp1, nb1, mp1 = [], [], [], [], [], []
        for layer in range(n_layers):
            c = corrected_layer(avg[layer], causal)
            b0.append(c.betti0)
            b1.append(c.betti1)
            tp0.append(c.total_persistence(0))
            tp1.append(c.total_persistence(1))
            nb1.append(len(c.h1))
            mp1.append(float((np.minimum(c.h1[:, 1], c.max_scale) - c.h1[:, 0]).max()) if len(c.h1) else 0.0)
        return {
            "n_tokens": torch.tensor(n),
            "faithful": torch.tensor(faithful, dtype=torch.float32),  # [layer, field]
            "faithful_top": faithful_top_keys(fa).to(torch.int16),  # [layer, head]
            "corrected_top": corrected_top_keys(a, causal).to(torch.int16),  # [layer, head]
            "betti0_curve": torch.tensor(np.array(b0), dtype=torch.int16),  # [layer, threshold]
            "betti1_curve": torch.tensor(np.array(b1), dtype=torch.int16),  # [layer, threshold]
            "total_persistence0": torch.tensor(tp0, dtype=torch.float32),  # [layer]
            "total_persistence1": torch.tensor(tp1, dtype=torch.float32),  # [layer]
            "h1_bars": torch.tensor(nb1, dtype=torch.int16),  # [layer]
            "h1_max_persistence": torch.tensor(mp1, dtype=torch.float32),  # [layer]
        }
