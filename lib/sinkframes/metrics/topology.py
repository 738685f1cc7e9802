"""Persistent homology of attention (paper section 4, 5.1-5.3, appendices E-J), with gudhi and ripser.

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

How ``TopologyReducer`` computes this, all layers of a sample at once (same numbers, bit for bit,
as the per-layer functions ``faithful_layer`` and ``corrected_layer``, which are kept as the reference):

- faithful H0: Kruskal merges exactly the edges of the minimum spanning forest under ripser's strict
  edge order, so a Prim run on the ranks of that order (one vertex per step, every layer together)
  finds them and the union-find is replayed on those edges only; when every upper-triangle entry
  holds one non-zero value (a causal model) the merges are the star of the last token and the bars
  follow from a running minimum of the vertex births;
- corrected H0: births 0, deaths the weights of a minimum spanning forest of the edges up to the
  cut (zero weights dropped), one infinite bar per component, again by Prim over all layers;
- H1 (both modes): vertices dominated by another one at every scale, and leaves, are removed (this
  keeps the H1 diagram); a graph that collapses to a cone has no H1; the rest go to ripser in one
  call per sample as a disjoint union, with each graph's edge values replaced by their ranks (exact
  in ripser's float32) and read back. Bars are listed as gudhi lists them, by increasing death with the
  infinite ones last; only bars of equal death (and the infinite ones) may come in another order than
  gudhi's, which can move a float64 sum over them (``total_persistence1``, faithful ``dim1_avg``) by
  an ulp, far below the float32 they are stored in.

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
from pyRipser import doRipsFiltrationDMSparse as _ripser_sparse

from ..code_digest import reducer_version
from ..tensors import require_finite
from ..threads import single_torch_thread
from .sinks import received_share

FAITHFUL_MAX_POINTS = 30
FAITHFUL_MAX_TOKENS = 48
PAPER_THRESHOLDS: tuple[float, ...] = (0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2)
#: attention thresholds of the Betti curves (log-spaced, the paper's seven included)
CURVE_THRESHOLDS: np.ndarray = np.unique(np.concatenate([np.round(np.logspace(-3, 0, 46), 6), PAPER_THRESHOLDS]))
#: an edge whose distance is within this of a threshold's scale counts as present there: round-off (about 1e-7 on
#: a float32 share, and more where two tokens split their attention exactly) must not decide a Betti number, as it
#: did for uniform-like attention whose shares equal a threshold (1/10 at t = 0.1)
SCALE_TOLERANCE = 1e-6
SPECIALIZED_MIN_CONSISTENCY = 0.3  # official report rule
SPECIALIZED_MIN_SAMPLES = 5
FIGURE_MIN_CONSISTENCY = 0.5  # official figure rule
APEXES = 2  # candidate dominating vertices per reduction round (see _h1_reduce)


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
    """Betti number at each attention threshold ``t`` (scale ``1 - t``): bars with ``birth <= 1-t < death``, the
    scale taken :data:`SCALE_TOLERANCE` wider so that an edge within round-off of the threshold counts as present."""
    r = 1.0 - np.asarray(thresholds, dtype=float) + SCALE_TOLERANCE  # [threshold]
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
    h0, h1 = corrected_diagrams(corrected_distance(avg, causal), max_scale=1.0 - float(t.min()) + SCALE_TOLERANCE)
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


# ----------------------------------------------------------------------------- all layers at once


def _prim_forest(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Minimum spanning forest of every layer's graph at once (Prim, one vertex per step for all layers).

    ``key``: ``[layer, n, n]`` symmetric edge keys, ``inf`` = no edge, diagonal ignored. Returns the
    forest edges ``(u, v)``, each ``[layer, n - 1]``, with ``u = -1`` where a step starts a new
    component instead of adding an edge. With distinct keys the forest is the unique one Kruskal finds.
    """
    n_layers, n, _ = key.shape
    rows = np.arange(n_layers)
    in_tree = np.zeros((n_layers, n), bool)  # [layer, vertex]
    in_tree[:, 0] = True
    best = key[:, 0, :].copy()  # [layer, vertex]: lightest edge to the tree
    src = np.zeros((n_layers, n), np.intp)  # [layer, vertex]: tree end of that edge
    us = np.full((n_layers, max(n - 1, 0)), -1, np.intp)  # [layer, step]
    vs = np.zeros_like(us)
    for step in range(n - 1):
        cand = np.where(in_tree, np.inf, best)  # [layer, vertex]
        v = cand.argmin(1)  # [layer]
        new = ~np.isfinite(cand[rows, v])  # no edge leaves the tree: start the next component
        v = np.where(new, (~in_tree).argmax(1), v)
        us[:, step] = np.where(new, -1, src[rows, v])
        vs[:, step] = v
        in_tree[rows, v] = True
        kv = key[rows, v]  # [layer, vertex]
        closer = kv < best
        best = np.where(closer, kv, best)
        src = np.where(closer, v[:, None], src)
    return us, vs


def _ripser_h0_layers(dist: np.ndarray) -> list[np.ndarray]:
    """:func:`_ripser_h0` of every layer's ``[layer, k, k]`` float32 distance, with the same bars in the same order.

    Kruskal merges exactly the edges of the minimum spanning forest under its strict order (value,
    then larger combinatorial index first); Prim on the ranks of that order finds them for all layers
    at once, and the union-find (union by rank, elder rule) is then replayed on those edges only.
    When every upper-triangle edge has one non-zero value (a causal model: ``1 - 0``), the order is
    the star of the last vertex, ``{k-2, k-1}, {k-3, k-1}, ...``: the bar births are a running
    minimum of the vertex births, and the last vertex stays the root.
    """
    d = dist.astype(np.float32)
    n_layers, k, _ = d.shape
    iu, ju = np.triu_indices(k, 1)
    desc = np.argsort(-(ju * (ju - 1) // 2 + iu), kind="stable")  # edges by decreasing combinatorial index
    iu, ju = iu[desc], ju[desc]
    vals = d[:, iu, ju]  # [layer, edge]
    diag = np.diagonal(d, axis1=1, axis2=2).astype(float)  # [layer, vertex]: vertex births
    bars_b = np.full((n_layers, max(k - 1, 0)), np.nan)  # [layer, merge]
    bars_d = np.full((n_layers, max(k - 1, 0)), np.nan)
    root = np.broadcast_to(np.arange(k), (n_layers, k)).copy()  # [layer, vertex]: root of its component
    birth = diag.copy()  # [layer, vertex]: component birth, at its root
    star = (vals == vals[:, :1]).all(1) & (vals[:, 0] != 0) if k > 1 else np.zeros(n_layers, bool)  # [layer]
    if star.any():
        x = diag[star, ::-1]  # [layer, vertex] in merge order k-1, k-2, ..., 0
        low = np.minimum.accumulate(x, axis=1)
        bars_b[star] = np.maximum(low[:, :-1], x[:, 1:])
        bars_d[star] = vals[star, :1].astype(float)
        root[star] = k - 1
        birth[star, k - 1] = low[:, -1]
    general = np.flatnonzero(~star)
    if general.size and k > 1:
        b, dd, r, bi = _ripser_h0_replay(d[general], vals[general], iu, ju)
        bars_b[general], bars_d[general], root[general], birth[general] = b, dd, r, bi
    out = []
    for layer in range(n_layers):
        keep = bars_d[layer] > bars_b[layer]  # merges only (NaN elsewhere), zero-length bars dropped
        finite = np.stack([bars_b[layer][keep], bars_d[layer][keep]], 1)  # [bar, 2]
        roots = np.flatnonzero(root[layer] == np.arange(k))
        infinite = np.stack([birth[layer, roots], np.full(len(roots), np.inf)], 1)
        out.append(np.concatenate([finite, infinite]))
    return out


def _ripser_h0_replay(
    d: np.ndarray, vals: np.ndarray, iu: np.ndarray, ju: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """General case of :func:`_ripser_h0_layers`: ``d`` ``[layer, k, k]``, ``vals`` ``[layer, edge]`` on the
    edges ``(iu, ju)`` listed by decreasing combinatorial index. Returns the merge bars' births and deaths
    ``[layer, merge]`` (NaN past the last merge), the final roots ``[layer, vertex]`` and component births."""
    n_layers, k, _ = d.shape
    rows = np.arange(n_layers)
    order = np.argsort(vals, axis=1, kind="stable")  # ties keep the larger index first
    rank = np.empty(vals.shape)  # [layer, edge]: position in Kruskal's order
    np.put_along_axis(rank, order, np.arange(vals.shape[1], dtype=float)[None, :], axis=1)
    rank[vals == 0] = np.inf  # exact zeros are absent edges
    key = np.full((n_layers, k, k), np.inf)  # [layer, k, k]
    key[:, iu, ju] = rank
    key[:, ju, iu] = rank
    us, vs = _prim_forest(key)
    merge = us >= 0  # [layer, step]
    er = np.where(merge, key[rows[:, None], np.maximum(us, 0), vs], np.inf)  # rank of each forest edge
    by = np.argsort(er, axis=1)  # forest edges in Kruskal order
    us, vs, merge = (np.take_along_axis(x, by, 1) for x in (us, vs, merge))
    lo, hi = np.minimum(us, vs).clip(0), np.maximum(us, vs)
    deaths = np.where(merge, d[rows[:, None], lo, hi].astype(float), np.nan)  # [layer, step]
    root = np.broadcast_to(np.arange(k), (n_layers, k)).copy()  # [layer, vertex]
    height = np.zeros((n_layers, k), np.intp)  # union-by-rank rank of each root
    birth = np.diagonal(d, axis1=1, axis2=2).astype(float)  # [layer, vertex]
    births = np.full(us.shape, np.nan)  # [layer, step]
    for step in range(us.shape[1]):
        ok = merge[:, step]  # [layer]
        if not ok.any():
            break  # merges come first
        u, v = root[rows, lo[:, step]], root[rows, hi[:, step]]
        bu, bv = birth[rows, u], birth[rows, v]
        births[:, step] = np.where(ok, np.maximum(bu, bv), np.nan)
        swap = height[rows, u] > height[rows, v]
        u, v = np.where(swap, v, u), np.where(swap, u, v)
        root = np.where(ok[:, None] & (root == u[:, None]), v[:, None], root)
        birth[rows, v] = np.where(ok, np.minimum(bu, bv), birth[rows, v])
        height[rows, v] += ok & (height[rows, u] == height[rows, v])
    return births, deaths, root, birth


def _faithful_h1_edges(dist: np.ndarray) -> np.ndarray:
    """The graphs :func:`_faithful_h1` builds from ``[layer, k, k]`` distances: symmetric edge values of the
    non-zero upper triangle, ``inf`` for no edge (diagonal too)."""
    d = dist.astype(np.float32).astype(float)
    k = d.shape[-1]
    present = np.triu(np.ones((k, k), bool), 1) & (d != 0)  # [layer, k, k]
    m = np.where(present, d, np.inf)
    return np.minimum(m, m.transpose(0, 2, 1))


def _corrected_distance_layers(avg: np.ndarray, causal: bool) -> np.ndarray:
    """:func:`corrected_distance` of every layer: ``[layer, n, n]``."""
    a = avg.astype(float)
    n = a.shape[-1]
    fwd = np.where(observed_pairs(n, causal), a, -np.inf)  # [layer, query, key]
    s = np.maximum(fwd, fwd.transpose(0, 2, 1))  # [layer, n, n]; -inf where neither direction is observed
    d = np.where(s > 0, 1.0 - s, np.inf)
    d[:, np.arange(n), np.arange(n)] = 0.0
    return d


def _mst_h0(edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """H0 of flag filtrations with every vertex at 0, from a minimum spanning forest of each layer.

    ``edges``: ``[layer, n, n]``, ``inf`` = no edge. Returns the finite deaths ``[layer, n - 1]`` in
    increasing order (the forest's edges ``w > 0``; zero-length bars dropped; NaN-padded) and the number
    of infinite bars ``[layer]`` (components). Ties change which forest is found, not its weights.
    """
    n_layers, n, _ = edges.shape
    us, vs = _prim_forest(edges)
    merge = us >= 0  # [layer, step]
    w = np.where(merge, edges[np.arange(n_layers)[:, None], np.maximum(us, 0), vs], np.nan)  # [layer, step]
    deaths = np.sort(np.where(w > 0, w, np.nan), axis=1)  # [layer, step], shortest first, NaN last
    return deaths, n - merge.sum(1)


def _mst_h0_layers(edges: np.ndarray) -> list[np.ndarray]:
    """H0 diagrams of :func:`_mst_h0`, as gudhi lists them: finite bars by increasing death, then infinite ones."""
    deaths, n_inf = _mst_h0(edges)
    out = []
    for layer in range(len(deaths)):
        death = np.concatenate([deaths[layer][~np.isnan(deaths[layer])], np.full(n_inf[layer], np.inf)])
        out.append(np.stack([np.zeros(len(death)), death], 1))
    return out


def _row_sums(rows: list[np.ndarray]) -> np.ndarray:
    """``np.sum`` of each 1-D float array, with its rounding: arrays of one length are summed as the rows of one
    matrix, which numpy reduces one row at a time with the same pairwise summation."""
    out = np.zeros(len(rows))
    lengths = np.array([len(r) for r in rows])
    for m in np.unique(lengths):
        sel = np.flatnonzero(lengths == m)
        if m:
            out[sel] = np.stack([rows[i] for i in sel]).sum(1)
    return out


def _bar_stats_layers(dgms: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_bar_stats` of each diagram: mean and max of the finite bar lengths ``[layer]``, NaN without any."""
    lives = [d[:, 1] - d[:, 0] for d in dgms]
    lives = [x[np.isfinite(x)] for x in lives]
    count = np.array([len(x) for x in lives])
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(count > 0, _row_sums(lives) / np.maximum(count, 1), np.nan)
    top = np.array([x.max() if len(x) else np.nan for x in lives])
    return mean, top


def _betti_curves(dgms: list[np.ndarray], thresholds: np.ndarray = CURVE_THRESHOLDS) -> np.ndarray:
    """:func:`betti_curve` of each diagram: ``[layer, threshold]``."""
    out = np.zeros((len(dgms), len(thresholds)), np.int64)
    for layer, dgm in enumerate(dgms):
        if len(dgm):
            out[layer] = betti_curve(dgm, thresholds)
    return out


def _h1_reduce(edges: np.ndarray) -> list[np.ndarray | None]:
    """Shrink flag filtrations without changing their H1 diagrams: ``None`` where the diagram is empty.

    ``edges``: ``[graph, n, n]`` symmetric edge values, ``inf`` = no edge (diagonal too). Vertex ``c``
    *dominates* ``u`` when it joins ``u`` and each neighbour ``v`` of ``u`` no later than the edge
    ``{u, v}`` (``w_cu <= w_uv`` and ``w_cv <= w_uv``): at every scale where ``u`` has an edge its link
    is a cone, and removing ``u`` changes no H1 (elsewhere ``u`` is isolated). A leaf (one neighbour)
    lies on no cycle and goes too. Each round takes the ``APEXES`` vertices that join the most others
    early enough (``w_cu`` below every other edge of ``u``); if one joins all of them, the complex is
    a cone at every scale, with no H1 at all. Otherwise the vertices the apexes dominate are removed
    (the apexes stay, so each removal is valid in any order) and rounds repeat while they remove some.
    """
    e = edges.copy()  # [graph, n, n]; a removed vertex loses its edges
    g, n, _ = e.shape
    if n < 3:
        return [None] * g
    cone = np.zeros(g, bool)
    active = np.arange(g)
    eye = np.eye(n, dtype=bool)
    while active.size:
        x = e[active]  # [graph, n, n]
        low = np.partition(x, 1, axis=2)[..., :2]  # [graph, vertex, 2]: two lightest edges
        first = x.argmin(2)  # [graph, vertex]
        c = np.arange(n)[None, :, None]
        # [graph, c, u]: lightest edge of u that avoids c; every edge of u enters no earlier than {c, u}
        avoid = np.where(first[:, None, :] == c, low[:, None, :, 1], low[:, None, :, 0])
        joins = (x <= avoid) | ~np.isfinite(avoid) | eye[None]  # [graph, c, u]
        count = joins.sum(2)  # [graph, c]
        apexes = np.argsort(-count, axis=1, kind="stable")[:, :APEXES]  # [graph, apex]
        rows = np.arange(active.size)
        done = count[rows, apexes[:, 0]] == n
        cone[active[done]] = True
        xa = x[rows[:, None], apexes]  # [graph, apex, v]: edges of each apex
        later = (xa[:, :, None, :] <= x[:, None]) | ~np.isfinite(x[:, None])  # [graph, apex, u, v]
        later |= np.arange(n)[None, None, None, :] == apexes[:, :, None, None]
        dominated = (joins[rows[:, None], apexes] & later.all(3)).any(1)  # [graph, u]
        degree = np.isfinite(x).sum(2)  # [graph, u]
        dominated = (dominated & (degree > 0)) | (degree == 1)  # a leaf lies on no cycle
        dominated[rows[:, None], apexes] &= degree[rows[:, None], apexes] == 1  # apexes stay, unless leaves
        dominated[done] = False
        for i in np.flatnonzero(dominated.any(1)):
            e[active[i], dominated[i], :] = np.inf
            e[active[i], :, dominated[i]] = np.inf
        active = active[~done & dominated.any(1)]
    out: list[np.ndarray | None] = [None] * g
    for i in np.flatnonzero(~cone):
        keep = np.flatnonzero(np.isfinite(e[i]).any(1))  # vertices with an edge left
        out[i] = e[i][np.ix_(keep, keep)]
    return out


def _h1_ripser(graphs: list[np.ndarray | None]) -> list[np.ndarray]:
    """H1 diagrams (field Z/2, zero-length bars dropped, by increasing death) of the flag filtrations of ``graphs``.

    Each graph: ``[n, n]`` symmetric edge values, ``inf`` = no edge, vertices at the start; ``None``:
    an empty diagram. All go to ripser in one call, as one disjoint union. ripser works in float32, so
    it gets each graph's edges as ranks (equal values share a rank, each graph its own range, below
    2**24): a monotone relabelling, which keeps the diagram; bars are read back in the graph's values.
    """
    out = [np.zeros((0, 2)) for _ in graphs]
    rows, cols, ranks, tables, firsts, owners = [], [], [], [], [], []
    n_vertices = n_ranks = 0
    for i, e in enumerate(graphs):
        if e is None:
            continue
        iu, ju = np.nonzero(np.triu(np.isfinite(e), 1))
        if len(iu) < 3:
            continue  # a cycle needs three edges
        values, inv = np.unique(e[iu, ju], return_inverse=True)
        rows.append(iu + n_vertices)
        cols.append(ju + n_vertices)
        ranks.append(inv + n_ranks)
        tables.append(values)
        firsts.append(n_ranks)
        owners.append(i)
        n_vertices += e.shape[0]
        n_ranks += len(values)
    if not owners:
        return out
    if n_ranks >= 2**24:
        raise ValueError("too many distinct edge values for exact float32 ranks")
    res = _ripser_sparse(
        np.concatenate(rows).astype(np.int32),
        np.concatenate(cols).astype(np.int32),
        np.concatenate(ranks).astype(np.float32),
        n_vertices,
        1,  # maxdim
        float(n_ranks),  # threshold above every rank
        2,  # field Z/2
        0,  # no cocycles
    )
    dgm = np.asarray(res["births_and_deaths_by_dim"][1], dtype=float).reshape(-1, 2)  # [bar, (birth, death) rank]
    table = np.concatenate([*tables, [np.inf]])  # rank -> value; n_ranks -> inf
    which = np.searchsorted(np.asarray(firsts), dgm[:, 0], side="right") - 1  # owner slot of each bar
    death = np.where(np.isfinite(dgm[:, 1]), dgm[:, 1], n_ranks).astype(np.intp)
    bars = np.stack([table[dgm[:, 0].astype(np.intp)], table[death]], 1)  # [bar, 2] in the graphs' values
    for slot, i in enumerate(owners):
        mine = bars[which == slot]
        out[i] = mine[np.argsort(mine[:, 1], kind="stable")]  # by death, infinite last, as gudhi finds them
    return out


def _faithful_fields(avg: np.ndarray, h0: list[np.ndarray], h1: list[np.ndarray]) -> np.ndarray:
    """``[layer, field]``: :data:`FAITHFUL_FIELDS` of every layer, as :func:`faithful_layer` computes them.

    ``avg``: ``[layer, query, key]`` float32. Its statistics are taken per layer over the flattened
    matrix (numpy reduces each row of ``[layer, query * key]`` as it reduces one matrix).
    """
    n_layers, n, _ = avg.shape
    flat = np.ascontiguousarray(avg).reshape(n_layers, n * n)  # [layer, query * key]
    idx = subsample_indices(n)[1:]
    # C-contiguous rows: numpy sums along the fast axis pairwise, as it sums one 1-D array
    diag = np.ascontiguousarray(np.diagonal(avg, axis1=1, axis2=2)[:, idx])  # [layer, sampled token]
    self_att = diag.mean(1).astype(float) if idx.size else np.full(n_layers, np.nan)
    d0a, d0m = _bar_stats_layers(h0)
    d1a, d1m = _bar_stats_layers(h1)
    count0 = np.array([len(d) for d in h0], float)
    count1 = np.array([len(d) for d in h1], float)
    stats = [flat.mean(1), flat.max(1), flat.min(1), flat.std(1)]
    return np.stack([count0, count1, d0a, d0m, d1a, d1m, *(s.astype(float) for s in stats), self_att], 1)


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

    @property
    def version(self) -> str:
        """The digest of this reducer's code (``code_digest``): it enters the cache key, so changed code never
        reuses results cached by the old."""
        return reducer_version(type(self))

    def key(self) -> dict[str, Any]:
        return {
            "reducer": self.name,
            "version": self.version,
            "max_tokens": self.max_tokens,
            "max_points": FAITHFUL_MAX_POINTS,
            "thresholds": [float(t) for t in CURVE_THRESHOLDS],
        }

    def __call__(self, attn: torch.Tensor, causal: bool) -> dict[str, torch.Tensor]:
        if attn.dim() != 4 or attn.shape[-1] != attn.shape[-2]:
            require_finite(attn)
            raise ValueError(f"attention must be [layer, head, query, key], got {tuple(attn.shape)}")
        with single_torch_thread():  # small reductions: a thread pool only adds waiting on a busy machine
            a = attn.detach().cpu().float()
            if not np.isfinite(a.numpy()).all():
                require_finite(attn)  # raises, naming the layers
            n_layers, n = a.shape[0], a.shape[-1]
            fa = a[..., : self.max_tokens, : self.max_tokens] if causal else a
            favg = fa.mean(1).numpy()  # [layer, query, key] (faithful input)
            avg = a.mean(1).numpy()  # [layer, query, key]
            faithful_top = faithful_top_keys(fa).to(torch.int16)  # [layer, head]
            corrected_top = corrected_top_keys(a, causal).to(torch.int16)  # [layer, head]
        sub = subsample_indices(favg.shape[-1])
        fdist = (np.float32(1.0) - favg)[:, sub][:, :, sub]  # [layer, point, point]
        max_scale = 1.0 - float(CURVE_THRESHOLDS.min())
        cedges = _corrected_distance_layers(avg, causal)  # [layer, n, n]
        cedges = np.where(cedges <= max_scale + SCALE_TOLERANCE, cedges, np.inf)  # edges of the cut filtration
        cedges[:, np.arange(n), np.arange(n)] = np.inf
        h1 = _h1_ripser(_h1_reduce(_faithful_h1_edges(fdist)) + _h1_reduce(cedges))
        f_h1, c_h1 = h1[:n_layers], h1[n_layers:]
        faithful = _faithful_fields(favg, _ripser_h0_layers(fdist), f_h1)  # [layer, field]
        deaths, n_inf = _mst_h0(cedges)  # [layer, step], [layer]
        r = 1.0 - CURVE_THRESHOLDS  # [threshold]: scales
        b0 = n_inf[:, None] + (deaths[:, :, None] > r + SCALE_TOLERANCE).sum(1)  # [layer, threshold]
        # each bar cut at the largest scale, in gudhi's order (finite by increasing death, then the infinite ones)
        cut = [np.concatenate([x[~np.isnan(x)], np.full(k, max_scale)]) for x, k in zip(deaths, n_inf, strict=True)]
        tp0 = _row_sums(cut)
        tp1 = np.zeros(n_layers)
        mp1 = np.zeros(n_layers)
        for layer in np.flatnonzero([len(d) for d in c_h1]):
            tp1[layer] = total_persistence(c_h1[layer], max_scale)
            mp1[layer] = float((np.minimum(c_h1[layer][:, 1], max_scale) - c_h1[layer][:, 0]).max())
        b1 = _betti_curves(c_h1)  # [layer, threshold]
        nb1 = [len(d) for d in c_h1]
        # gudhi's diagrams are numpy arrays on the host: the summary is built there
        return {
            "n_tokens": torch.tensor(n, device="cpu"),
            "faithful": torch.tensor(faithful, dtype=torch.float32, device="cpu"),  # [layer, field]
            "faithful_top": faithful_top,  # [layer, head]
            "corrected_top": corrected_top,  # [layer, head]
            "betti0_curve": torch.tensor(b0, dtype=torch.int16, device="cpu"),  # [layer, threshold]
            "betti1_curve": torch.tensor(b1, dtype=torch.int16, device="cpu"),  # [layer, threshold]
            "total_persistence0": torch.tensor(tp0, dtype=torch.float32, device="cpu"),  # [layer]
            "total_persistence1": torch.tensor(tp1, dtype=torch.float32, device="cpu"),  # [layer]
            "h1_bars": torch.tensor(nb1, dtype=torch.int16, device="cpu"),  # [layer]
            "h1_max_persistence": torch.tensor(mp1, dtype=torch.float32, device="cpu"),  # [layer]
        }
