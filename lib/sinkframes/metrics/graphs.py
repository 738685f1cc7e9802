"""Threshold graphs of attention and their Laplacian spectra, computed in batches.

A threshold graph keeps the pairs whose attention weight is strictly above ``t``; a weight within round-off of
``t`` (a relative :data:`THRESHOLD_TOLERANCE`) is a tie and is not above it, so that the CPU's last bits never
decide an edge (two keys with identical hidden states split a query's attention exactly, and 1/2 or 1/4 of a row
can meet a threshold; computed on another machine, the same weight lands on either side of it). Everything here
works on a padded batch of square matrices ``[graph, N, N]`` with their true sizes ``[graph]``
(graphs = samples x layers, or samples x layers x heads), for all thresholds at once, with one
``torch.linalg.eigvalsh`` call per batch instead of one networkx graph at a time.

Three variants are computed side by side, because the paper's numbers come from two notebooks
that define the same names differently (``official_code_spec.md`` sections 3 and 4):

``laplacian`` (faithful to ``laplacian.ipynb``)
    ``B = 1[A > t]`` with the diagonal (self-loops count 1 in in-degrees); degree statistics over
    all ``n`` nodes when ``n <= 50`` and over the nodes that have an edge when ``n > 50``;
    ``star_likeness = 0.3 * basic + 0.7 * gini`` (the composite); Laplacian of
    ``S = (B + B^T) / 2`` (a one-way edge weighs 0.5), all eigenvalues when ``n <= 50`` and the
    three smallest from ARPACK (``eigsh``, ``which="SM"``, dense fallback) above, as the notebook
    does: on a disconnected graph ARPACK finds only some copies of the repeated eigenvalue 0, so
    its Fiedler value and spectral gap can differ from the dense solver's. The notebook starts
    ARPACK from its internal random vector; this book starts it from a fixed one
    (:func:`arpack_start`), so the behaviour is the official solver's and the numbers repeat.
    Fewer than 2 edges: every metric 0.
``fiedler`` (faithful to ``fiedler.ipynb``)
    the same ``B`` and ``S``; degree statistics always over the nodes that have an edge;
    ``star_likeness = d_max / max(1, N - 1)`` (the basic ratio). Fewer than 2 edges: Fiedler and
    star-likeness 0, the other metrics missing (NaN).
``corrected`` (this book's definitions)
    no self-loops; all ``n`` nodes; an undirected edge ``{i, j}`` when either direction passes the
    threshold (``S = max(B, B^T)``), so that a causal pair (which can only pass one way) weighs as
    much as a bidirectional one and decoders and encoders live on the same scale (the official
    mean-symmetrization halves every decoder's connectivity). Both star-likeness definitions under
    their own names, and size-normalized variants: ``lambda2 / n`` and the density relative to
    the pairs the attention mask allows.

Degree statistics and eigenvalue differences are computed in float64 (a variance as
``E[(d - mean)^2]``, not ``E[d^2] - mean^2``), as numpy does in the official notebooks.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import torch
from scipy.sparse.linalg import ArpackError, ArpackNoConvergence

from ..code_digest import reducer_version
from ..tensors import require_finite
from ..types import MODES, Mode, check_mode
from .arpack import eigsh_smallest_dense

#: how far above a threshold, relative to it, a weight must be to count as above it: a float32 softmax weight carries
#: a relative round-off of about 1e-7 per operation, and the forward passes of two machines add their own; 1e-5 is
#: about a hundred units of the last bit, and a thousand times finer than the closest two thresholds of the paper
THRESHOLD_TOLERANCE = 1e-5


def above(t: torch.Tensor) -> torch.Tensor:
    """The value a weight must exceed to be above threshold ``t`` (a weight within round-off of ``t`` is a tie)."""
    return t * (1.0 + THRESHOLD_TOLERANCE)
#: the thresholds of the paper (Sec. 4) and of ``laplacian.ipynb``
PAPER_THRESHOLDS: tuple[float, ...] = (0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2)
#: the list in ``fiedler.ipynb``: 0.5 where the paper has 0.05
FIEDLER_NOTEBOOK_THRESHOLDS: tuple[float, ...] = (0.001, 0.005, 0.01, 0.02, 0.5, 0.1, 0.2)
#: every threshold either variant needs, sorted
ALL_THRESHOLDS: tuple[float, ...] = tuple(sorted(set(PAPER_THRESHOLDS) | set(FIEDLER_NOTEBOOK_THRESHOLDS)))
#: ``laplacian.ipynb`` builds the graph from its edge list (isolated nodes dropped) above this size
#: the official notebooks behind the faithful mode: laplacian.ipynb and fiedler.ipynb
FAITHFUL_VARIANTS = ("laplacian", "fiedler")
LAPLACIAN_DENSE_MAX_TOKENS = 50
#: Laplacian eigenvalues below this are 0 (unit-weight graphs of <= 10^4 nodes have a nonzero
#: algebraic connectivity of at least 4 / n^2 = 4e-8, so nothing real is lost)
ZERO_EIGENVALUE_TOL = 1e-9
STAR_COMPOSITE_WEIGHTS = (0.3, 0.7)  # basic, Gini

CORRECTED_METRICS = (
    "lambda2",
    "lambda2_norm",
    "spectral_gap",
    "star_basic",
    "star_composite",
    "gini",
    "centralization",
    "degree_variance",
    "density",
    "density_allowed",
    "edges",
)
LAPLACIAN_METRICS = (
    "fiedler",
    "spectral_gap",
    "star_likeness",
    "basic_star_likeness",
    "gini",
    "centralization",
    "degree_variance",
    "density",
    "error",
)
FIEDLER_METRICS = ("fiedler", "star_likeness", "centralization", "degree_variance", "density", "error")
#: the metrics of each variant: a per-sentence result holds ``"<variant>/<metric>"`` (``head`` is the corrected
#: variant per head)
VARIANT_METRICS: dict[str, tuple[str, ...]] = {"corrected": CORRECTED_METRICS, "laplacian": LAPLACIAN_METRICS,
                                               "fiedler": FIEDLER_METRICS, "head": CORRECTED_METRICS}
GraphVariant = Literal["corrected", "laplacian", "fiedler", "head"]


def graph_key(variant: GraphVariant, metric: str) -> str:
    """The result key of ``metric`` under ``variant`` (``graph_key("corrected", "lambda2")`` is
    ``"corrected/lambda2"``): the one place such a key is spelled; an unknown name raises."""
    if metric not in VARIANT_METRICS[variant]:
        raise KeyError(f"no graph metric {metric!r} in the {variant} variant; it has {VARIANT_METRICS[variant]}")
    return f"{variant}/{metric}"


def pad_square(mats: Sequence[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """Stack matrices ``[..., n_i, n_i]`` (same leading shape) into ``[graph, ..., N, N]`` with zeros.

    Returns the padded batch and the sizes ``[graph]``.
    """
    if not mats:
        raise ValueError("no matrices to pad")
    big = max(m.shape[-1] for m in mats)
    lead = mats[0].shape[:-2]
    out = torch.zeros((len(mats), *lead, big, big), dtype=torch.float32, device=mats[0].device)
    for g, m in enumerate(mats):
        if m.shape[:-2] != lead or m.shape[-1] != m.shape[-2]:
            raise ValueError(
                f"matrix {g} has shape {tuple(m.shape)}; expected [..., n, n] with leading shape {tuple(lead)}"
            )
        n = m.shape[-1]
        out[g, ..., :n, :n] = m.float()
    return out, torch.tensor([m.shape[-1] for m in mats], dtype=torch.long, device=out.device)


def _valid(sizes: torch.Tensor, big: int) -> torch.Tensor:
    """``[graph, N]`` bool: which node slots are real tokens."""
    return torch.arange(big, device=sizes.device)[None, :] < sizes[:, None]


def _gini(deg: torch.Tensor, count: torch.Tensor) -> torch.Tensor:
    """Gini of the degrees of ``count`` nodes, the others (padding, dropped nodes) being 0.

    ``G = 2 sum_k k d_(k) / (N sum d) - (N + 1) / N`` with ``d`` ascending and ``k = 1..N``. Sorting
    all slots puts the extra zeros first, which shifts every positive degree's rank by
    ``slots - N``; that shift is subtracted again.
    """
    slots = deg.shape[-1]
    d = torch.sort(deg, dim=-1).values
    ranks = torch.arange(1, slots + 1, dtype=d.dtype, device=d.device)
    total = d.sum(-1)
    weighted = (d * ranks).sum(-1) - (slots - count) * total
    n = count.clamp(min=1)
    g = 2 * weighted / (n * total.clamp(min=1e-12)) - (n + 1) / n
    return torch.where(total > 0, g, torch.zeros_like(g))


def _degree_stats(deg: torch.Tensor, nodes: torch.Tensor) -> dict[str, torch.Tensor]:
    """Star-likeness, Gini, centralization and variance of in-degrees over a node set, in float64.

    ``deg`` ``[..., N]`` in-degrees (0 outside the set); ``nodes`` ``[..., N]`` bool node set.
    """
    deg = deg.double()
    count = nodes.sum(-1).to(deg.dtype)  # [...]
    dmax = deg.amax(-1)
    total = deg.sum(-1)
    basic = dmax / (count - 1).clamp(min=1)
    central = torch.where(dmax > 0, (count * dmax - total) / (count - 1).clamp(min=1) ** 2, torch.zeros_like(dmax))
    mean = total / count.clamp(min=1)
    var = (((deg - mean[..., None]) ** 2) * nodes).sum(-1) / count.clamp(min=1)  # two-pass: no cancellation
    gini = _gini(deg, count)
    wb, wg = STAR_COMPOSITE_WEIGHTS
    return {
        "star_basic": basic,
        "gini": gini,
        "star_composite": wb * basic + wg * gini,
        "centralization": central,
        "degree_variance": var.clamp(min=0),
        "nodes": count,
    }


def _spectrum(weights: torch.Tensor, valid: torch.Tensor, k: int = 3) -> torch.Tensor:
    """The ``k`` smallest Laplacian eigenvalues of each weighted graph ``[..., N, N]``.

    Padding slots get a large isolated self-weight, which moves their eigenvalues above every
    real one without coupling them to the graph, so the smallest ``n`` eigenvalues of the padded
    matrix are exactly those of the ``n x n`` graph. Missing eigenvalues (``n < k``) are NaN.
    Eigenvalues within ``ZERO_EIGENVALUE_TOL`` of 0 are set to exactly 0: a disconnected graph's
    algebraic connectivity is 0, and the solver's round-off (about 1e-16, different between
    machines) must not decide later steps such as the official zero-range skip.
    """
    return _laplacian_eigenvalues(-weights.double(), valid, k)


def _laplacian_eigenvalues(lap: torch.Tensor, valid: torch.Tensor, k: int = 3) -> torch.Tensor:
    """:func:`_spectrum` from the negated float64 weights ``[..., N, N]`` (overwritten in place with the
    Laplacian: diagonal = row sums; self-loops ignored)."""
    diag = lap.diagonal(dim1=-2, dim2=-1)
    diag.zero_()  # self-loops do not enter a Laplacian
    big = 4.0 * lap.shape[-1] + 10.0
    diag.copy_(-lap.sum(-1) + (~valid).double() * big)
    ev = torch.linalg.eigvalsh(lap)[..., :k]  # ascending, float64
    if ev.shape[-1] < k:  # fewer than k nodes in every graph: the missing eigenvalues are NaN below
        ev = torch.cat([ev, ev.new_zeros((*ev.shape[:-1], k - ev.shape[-1]))], -1)
    ev = torch.where(ev.abs() < ZERO_EIGENVALUE_TOL, torch.zeros_like(ev), ev)
    n = valid.sum(-1, keepdim=True)
    idx = torch.arange(k, device=ev.device)
    return torch.where(idx < n, ev, torch.full_like(ev, float("nan")))


@functools.cache
def arpack_start(n: int) -> np.ndarray:
    """The fixed ARPACK start vector for an ``n``-node graph (seeded by ``n``; not constant, since the
    constant vector is itself an eigenvector of every Laplacian). Drawn once per size and shared: read-only."""
    v0 = np.random.default_rng(n).uniform(-1.0, 1.0, n)
    v0.setflags(write=False)
    return v0


def arpack_smallest(lap: np.ndarray, k: int = 3) -> np.ndarray:
    """The ``k`` smallest eigenvalues of a Laplacian as ``laplacian.ipynb`` finds them above 50 nodes:
    ARPACK ``eigsh(which="SM")`` on the sparse Laplacian (from :func:`arpack_start`), the dense solver when
    ARPACK fails."""
    n = lap.shape[0]
    try:
        ev = eigsh_smallest_dense(lap, k, arpack_start(n))
    except (ArpackNoConvergence, ArpackError):
        ev = np.linalg.eigvalsh(lap)[:k]
    ev = np.sort(np.asarray(ev, dtype=np.float64))
    return np.where(np.abs(ev) < ZERO_EIGENVALUE_TOL, 0.0, ev)


def _arpack_graph(b: np.ndarray, solved: dict[bytes, torch.Tensor]) -> torch.Tensor:
    """:func:`arpack_smallest` of the Laplacian of ``S = (B + B^T) / 2`` for one threshold graph ``b``
    (``[n, n]`` float64 0/1), looked up in ``solved`` first (the same graph, as at neighbouring
    thresholds, is solved once) and stored there."""
    key = b.tobytes()
    if key not in solved:
        w = 0.5 * (b + b.T)
        np.fill_diagonal(w, 0.0)  # self-loops do not enter a Laplacian
        lap = np.diag(w.sum(1)) - w
        solved[key] = torch.from_numpy(arpack_smallest(lap))
    return solved[key]


def _laplacian_spectrum(adjacency: torch.Tensor, dense_ev: torch.Tensor, sizes: torch.Tensor) -> torch.Tensor:
    """``laplacian.ipynb``'s three smallest eigenvalues ``[threshold, graph, 3]``: the dense ones up to
    ``LAPLACIAN_DENSE_MAX_TOKENS`` nodes, ARPACK's above, on ``S = (B + B^T) / 2`` from the threshold
    graphs ``adjacency`` ``[threshold, graph, N, N]`` (bool ``B``).

    ARPACK is asked only where the dense solver sees a repeated zero (a disconnected graph): with a
    simple zero both solvers find the same three eigenvalues, so the dense ones stand."""
    big = torch.nonzero(sizes > LAPLACIAN_DENSE_MAX_TOKENS).flatten().tolist()
    if not big:
        return dense_ev
    ev = dense_ev.clone()
    solved: dict[bytes, torch.Tensor] = {}
    for gi in big:
        n = int(sizes[gi])
        for ti in torch.nonzero(dense_ev[:, gi, 1] == 0).flatten().tolist():
            ev[ti, gi] = _arpack_graph(adjacency[ti, gi, :n, :n].double().numpy(), solved)
    return ev


def threshold_graph_metrics(
    att: torch.Tensor,
    sizes: torch.Tensor,
    causal: bool,
    thresholds: Sequence[float] = ALL_THRESHOLDS,
    modes: Sequence[Mode] = MODES,
    spectra: bool = True,
) -> dict[str, torch.Tensor]:
    """Graph metrics of every matrix at every threshold.

    ``att`` ``[graph, N, N]`` padded attention (rows = queries, columns = keys), ``sizes``
    ``[graph]``. Returns ``{"<variant>/<metric>": [threshold, graph]}`` for the requested modes:
    ``"corrected"`` gives the ``corrected`` variant, ``"faithful"`` both official notebooks'
    variants, ``laplacian`` and ``fiedler`` (see the module docstring for their definitions).
    ``spectra=False`` skips the eigenvalues of the
    corrected variant (its lambda2 and spectral gap are then NaN), for degree statistics alone.
    """
    if att.dim() != 3 or att.shape[-1] != att.shape[-2]:
        raise ValueError(f"attention must be [graph, N, N], got {tuple(att.shape)}")
    variants = set(FAITHFUL_VARIANTS) if "faithful" in {check_mode(m) for m in modes} else set()
    if "corrected" in modes:
        variants.add("corrected")
    a = att.float()
    G, N, _ = a.shape
    sizes = sizes.to(a.device).long()
    valid = _valid(sizes, N)  # [graph, N]
    pair = valid[:, :, None] & valid[:, None, :]  # [graph, N, N]
    t = torch.tensor(list(thresholds), dtype=a.dtype, device=a.device)
    B = (a[None] > above(t)[:, None, None, None]) & pair[None]  # [threshold, graph, query, key]
    Bf = B.to(a.dtype)  # [threshold, graph, query, key]; float sums are much faster than bool ones
    loops = Bf.diagonal(dim1=-2, dim2=-1)  # [threshold, graph, node] self-loops
    deg = Bf.sum(-2)  # in-degree, self-loop counted (the official convention)
    both = Bf * Bf.transpose(-1, -2)
    one_way_only = bool(((both.sum((-1, -2)) - loops.sum(-1)) == 0).all())  # always so for causal attention
    full = valid[None].expand(len(t), G, N)
    corrected_ev = None
    if "corrected" in variants and spectra:
        w = Bf + Bf.transpose(-1, -2) - both  # max(B, B^T); the diagonal is ignored by _spectrum
        corrected_ev = _spectrum(w, full)
    touched, faithful_ev = None, None
    if "laplacian" in variants or "fiedler" in variants:
        touched = (Bf.sum(-1) + deg) > 0  # nodes that appear in the edge list
        sym = 0.5 * (Bf + Bf.transpose(-1, -2))  # S = (B + B^T) / 2
        # no pair passing both ways: (B + B^T) / 2 = max(B, B^T) / 2 off the diagonal, a spectrum already known
        faithful_ev = 0.5 * corrected_ev if corrected_ev is not None and one_way_only else _spectrum(sym, full)
    return _graph_outputs(
        _GraphQuantities(B, sizes, valid, deg, loops, touched, corrected_ev, faithful_ev), variants, causal, spectra
    )


@dataclass(frozen=True)
class _GraphQuantities:
    """What every metric is computed from, for ``[threshold, graph]`` threshold graphs of ``N`` slots."""

    adjacency: torch.Tensor  # [threshold, graph, N, N] bool B
    sizes: torch.Tensor  # [graph] long
    valid: torch.Tensor  # [graph, N] bool: real tokens
    deg: torch.Tensor  # [threshold, graph, N] float32 in-degrees, self-loops counted
    loops: torch.Tensor  # [threshold, graph, N] float32 self-loops
    touched: torch.Tensor | None  # [threshold, graph, N] bool nodes with an edge (faithful variants only)
    corrected_ev: torch.Tensor | None  # [threshold, graph, 3] of max(B, B^T) (None: spectra not asked)
    faithful_ev: torch.Tensor | None  # [threshold, graph, 3] of (B + B^T) / 2 (faithful variants only)


def _graph_outputs(q: _GraphQuantities, variants: set[str], causal: bool, spectra: bool) -> dict[str, torch.Tensor]:
    """``{"<variant>/<metric>": [threshold, graph]}`` in float64 from the graphs' degrees and spectra."""
    T, G, N = q.deg.shape
    dtype = q.deg.dtype
    n = q.sizes.to(dtype)[None].expand(T, G)  # [threshold, graph]
    deg_off = q.deg - q.loops  # in-degree without self-loops
    total = q.deg.sum(-1)  # edges with self-loops
    edges = total - q.loops.sum(-1)  # edges without
    full = q.valid[None].expand(T, G, N)
    out: dict[str, torch.Tensor] = {}
    if "corrected" in variants:
        st = _degree_stats(deg_off, full)
        ev = q.corrected_ev if q.corrected_ev is not None else torch.full((T, G, 3), float("nan"), device=q.deg.device)
        allowed = n * (n - 1) / 2 if causal else n * (n - 1)
        out.update(
            {
                graph_key("corrected", "lambda2"): ev[..., 1],
                graph_key("corrected", "lambda2_norm"): ev[..., 1] / n,
                graph_key("corrected", "spectral_gap"): ev[..., 2] - ev[..., 1],
                graph_key("corrected", "star_basic"): st["star_basic"],
                graph_key("corrected", "star_composite"): st["star_composite"],
                graph_key("corrected", "gini"): st["gini"],
                graph_key("corrected", "centralization"): st["centralization"],
                graph_key("corrected", "degree_variance"): st["degree_variance"],
                graph_key("corrected", "density"): total / n**2,
                graph_key("corrected", "density_allowed"): edges / allowed.clamp(min=1),
                graph_key("corrected", "edges"): edges,
            }
        )
    if q.touched is not None and q.faithful_ev is not None:
        touched, ev = q.touched, q.faithful_ev
        error = total < 2
        density = total / n**2
        zero = torch.zeros_like(total)
        nan = torch.full_like(total, float("nan"))
        if "laplacian" in variants:
            dense = (q.sizes <= LAPLACIAN_DENSE_MAX_TOKENS)[None, :, None]
            st = _degree_stats(q.deg, torch.where(dense, q.valid[None].expand_as(touched), touched))
            lev = _laplacian_spectrum(q.adjacency, ev, q.sizes) if spectra else ev
            vals = {
                "fiedler": lev[..., 1],
                "spectral_gap": lev[..., 2] - lev[..., 1],
                "star_likeness": st["star_composite"],
                "basic_star_likeness": st["star_basic"],
                "gini": st["gini"],
                "centralization": st["centralization"],
                "degree_variance": st["degree_variance"],
            }
            for k, v in vals.items():
                out[graph_key("laplacian", k)] = torch.where(error, zero.double(), torch.nan_to_num(v.double(), 0.0))
            out[graph_key("laplacian", "density")] = density
            out[graph_key("laplacian", "error")] = error.to(dtype)
        if "fiedler" in variants:
            st = _degree_stats(q.deg, touched)
            out[graph_key("fiedler", "fiedler")] = torch.where(error, zero, torch.nan_to_num(ev[..., 1], nan=0.0))
            out[graph_key("fiedler", "star_likeness")] = torch.where(error, zero, st["star_basic"])
            out[graph_key("fiedler", "centralization")] = torch.where(error, nan, st["centralization"])
            out[graph_key("fiedler", "degree_variance")] = torch.where(error, nan, st["degree_variance"])
            out[graph_key("fiedler", "density")] = torch.where(error, nan, density)
            out[graph_key("fiedler", "error")] = error.to(dtype)
    return {k: v.double() for k, v in out.items()}  # float64 throughout, as numpy computes the official values


def sentence_graph_metrics(
    att: torch.Tensor, causal: bool, thresholds: Sequence[float] = ALL_THRESHOLDS
) -> dict[str, torch.Tensor]:
    """:func:`threshold_graph_metrics` (every variant, with spectra) for unpadded graphs ``[graph, n, n]``
    of one size, such as one sentence's layers: the same values bit for bit from fewer, larger tensor calls.

    Every quantity comes from the bool threshold graphs; the corrected Laplacian is built in float64
    in one step, and whether any pair passes both ways is read off the degree sums
    (``|max(B, B^T)| = 2 |B| - |B and B^T|`` off the diagonal) instead of a product of matrices.
    """
    if att.dim() != 3 or att.shape[-1] != att.shape[-2]:
        raise ValueError(f"attention must be [graph, n, n], got {tuple(att.shape)}")
    a = att.float()
    G, N, _ = a.shape
    t = torch.tensor(list(thresholds), dtype=a.dtype, device=a.device)
    B = a[None] > above(t)[:, None, None, None]  # [threshold, graph, query, key]
    sizes = torch.full((G,), N, dtype=torch.long, device=a.device)
    valid = torch.ones(G, N, dtype=torch.bool, device=a.device)  # [graph, node]
    full = valid[None].expand(len(t), G, N)
    loops = B.diagonal(dim1=-2, dim2=-1).to(a.dtype)  # [threshold, graph, node]
    deg = B.view(torch.uint8).sum(-2, dtype=torch.int32).to(a.dtype)  # [threshold, graph, node] in-degree with loops
    either = B | B.transpose(-1, -2)  # [threshold, graph, query, key] max(B, B^T)
    lap = torch.where(either, torch.tensor(-1.0, dtype=torch.float64, device=a.device),
                      torch.tensor(-0.0, dtype=torch.float64, device=a.device))
    corrected_ev = _laplacian_eigenvalues(lap, full)  # [threshold, graph, 3]
    neighbours = lap.diagonal(dim1=-2, dim2=-1)  # [threshold, graph, node]: other nodes linked either way
    touched = (neighbours > 0) | (loops > 0)  # nodes in the edge list: a link or a self-loop
    undirected = neighbours.sum(-1)  # [threshold, graph]: off-diagonal entries of max(B, B^T)
    directed = (deg - loops).sum(-1).double()  # [threshold, graph]: off-diagonal entries of B
    if bool((undirected == 2 * directed).all()):  # no pair passes both ways
        faithful_ev = 0.5 * corrected_ev
    else:
        half = B.double()  # [threshold, graph, query, key]
        faithful_ev = _laplacian_eigenvalues((half + half.transpose(-1, -2)).mul_(-0.5), full)
    quantities = _GraphQuantities(B, sizes, valid, deg, loops, touched, corrected_ev, faithful_ev)
    return _graph_outputs(quantities, {"corrected", *FAITHFUL_VARIANTS}, causal, True)


def head_degree_metrics(att: torch.Tensor, causal: bool, threshold: float) -> dict[str, torch.Tensor]:
    """The corrected variant's degree metrics (``star_basic``, ``centralization``, ``density_allowed``, ...)
    of unpadded graphs ``[graph, n, n]`` at one threshold, as ``threshold_graph_metrics(..., (threshold,),
    modes=("corrected",), spectra=False)`` gives them (``[1, graph]``), from one comparison and one sum."""
    if att.dim() != 3 or att.shape[-1] != att.shape[-2]:
        raise ValueError(f"attention must be [graph, n, n], got {tuple(att.shape)}")
    a = att.float()
    G, N, _ = a.shape
    B = (a > torch.tensor(threshold, dtype=a.dtype, device=a.device))[None]  # [1, graph, query, key]
    loops = B.diagonal(dim1=-2, dim2=-1).to(a.dtype)  # [1, graph, node]
    deg = B.view(torch.uint8).sum(-2, dtype=torch.int32).to(a.dtype)  # [1, graph, node]
    sizes = torch.full((G,), N, dtype=torch.long, device=a.device)
    valid = torch.ones(G, N, dtype=torch.bool, device=a.device)  # [graph, node]
    quantities = _GraphQuantities(B, sizes, valid, deg, loops, None, None, None)
    return _graph_outputs(quantities, {"corrected"}, causal, False)


@dataclass(frozen=True)
class SpectralReducer:
    """Per-sample threshold-graph metrics for ``extract.summarize``.

    From one sample's attention ``[layer, head, query, key]`` it keeps
    ``{"<variant>/<metric>": [threshold, layer]}`` on the head-averaged matrix for every
    threshold in ``ALL_THRESHOLDS`` (the corrected and both faithful variants), and, if
    ``per_head``, ``{"head/<metric>": [layer, head]}`` for the corrected variant's degree statistics
    at ``head_threshold`` (per-head spectra at every threshold would cost more than the forward pass).
    ``version``, the digest of its code, enters cache keys (the last hand-set version was 9: a weight within
    round-off of a threshold is not above it; 8: ARPACK's restarts seeded).
    """

    per_head: bool = True
    head_threshold: float = 0.05
    head_metrics: tuple[str, ...] = ("star_basic", "centralization", "density_allowed")
    name: str = "spectral"
    thresholds: tuple[float, ...] = field(default=ALL_THRESHOLDS)

    @property
    def version(self) -> str:
        """The digest of this reducer's code (``code_digest``): it enters the cache key, so changed code never
        reuses results cached by the old."""
        return reducer_version(type(self))

    def key(self) -> dict:
        return {
            "reducer": self.name,
            "version": self.version,
            "per_head": self.per_head,
            "head_threshold": self.head_threshold,
            "head_metrics": list(self.head_metrics),
            "thresholds": list(self.thresholds),
        }

    def __call__(self, attn: torch.Tensor, causal: bool) -> dict[str, torch.Tensor]:
        if attn.dim() != 4 or attn.shape[-1] != attn.shape[-2]:
            require_finite(attn)
            raise ValueError(f"attention must be [layer, head, n, n], got {tuple(attn.shape)}")
        L, H, n, _ = attn.shape
        a = attn.float()
        mean = a.mean(1)  # [layer, query, key]
        if not bool(torch.isfinite(mean.sum())):  # NaN and inf reach the sum; a finite overflow passes below
            require_finite(attn)
        res = sentence_graph_metrics(mean, causal, self.thresholds)
        res["n_tokens"] = torch.tensor(n, device=attn.device)
        if self.per_head:
            heads = head_degree_metrics(a.reshape(L * H, n, n), causal, self.head_threshold)
            for m in self.head_metrics:
                res[graph_key("head", m)] = heads[graph_key("corrected", m)].reshape(L, H).contiguous()
        return res
