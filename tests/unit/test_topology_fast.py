"""The batched topology path of ``TopologyReducer`` against the per-layer reference it replaces.

The reference is the per-layer code (``faithful_layer``, ``corrected_layer``: ripser's union-find
replayed edge by edge, gudhi flag complexes), run layer by layer as the reducer used to; the batched
path must give the same outputs bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from sinkframes.metrics import topology as T


def reference_reducer(attn: torch.Tensor, causal: bool, max_tokens: int = T.FAITHFUL_MAX_TOKENS) -> dict:
    """The reducer as it was computed before the batched path: one layer at a time, gudhi and a Python union-find."""
    a = attn.float()
    n_layers, n = a.shape[0], a.shape[-1]
    fa = a[..., :max_tokens, :max_tokens] if causal else a
    favg = fa.mean(1).numpy()  # [layer, query, key]
    avg = a.mean(1).numpy()  # [layer, query, key]
    per_layer = [T.faithful_layer(favg[layer]) for layer in range(n_layers)]
    faithful = np.array([[d[f] for f in T.FAITHFUL_FIELDS] for d in per_layer])  # [layer, field]
    b0, b1, tp0, tp1, nb1, mp1 = [], [], [], [], [], []
    for layer in range(n_layers):
        c = T.corrected_layer(avg[layer], causal)
        b0.append(c.betti0)
        b1.append(c.betti1)
        tp0.append(c.total_persistence(0))
        tp1.append(c.total_persistence(1))
        nb1.append(len(c.h1))
        mp1.append(float((np.minimum(c.h1[:, 1], c.max_scale) - c.h1[:, 0]).max()) if len(c.h1) else 0.0)
    return {
        "n_tokens": torch.tensor(n),
        "faithful": torch.tensor(faithful, dtype=torch.float32),
        "faithful_top": T.faithful_top_keys(fa).to(torch.int16),
        "corrected_top": T.corrected_top_keys(a, causal).to(torch.int16),
        "betti0_curve": torch.tensor(np.array(b0), dtype=torch.int16),
        "betti1_curve": torch.tensor(np.array(b1), dtype=torch.int16),
        "total_persistence0": torch.tensor(tp0, dtype=torch.float32),
        "total_persistence1": torch.tensor(tp1, dtype=torch.float32),
        "h1_bars": torch.tensor(nb1, dtype=torch.int16),
        "h1_max_persistence": torch.tensor(mp1, dtype=torch.float32),
    }


KINDS = ("softmax", "ties", "sink", "sparse")


def attention(n: int, causal: bool, kind: str, seed: int, layers: int = 3, heads: int = 2) -> torch.Tensor:
    """``[layer, head, n, n]`` test attention: plain softmax, coarse values with ties and exact zeros
    (and weights of exactly 1), a sink column, or softmax with small weights set to exactly 0."""
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(layers, heads, n, n, generator=g) * 2.0
    if kind == "sink":
        logits[..., 0] += 6.0
    hidden = torch.triu(torch.ones(n, n, dtype=torch.bool), 1)
    if causal:
        logits = logits.masked_fill(hidden, float("-inf"))
    a = logits.softmax(-1)
    if kind == "ties":
        a = torch.randint(0, 5, a.shape, generator=g).float() / 4  # 0, 1/4, ..., 1: ties, zeros and ones
        if causal:
            a = a.masked_fill(hidden, 0.0)
    elif kind == "sparse":
        a = torch.where(a < 0.05, torch.zeros_like(a), a)
    return a


def assert_same(new: dict, ref: dict) -> None:
    assert new.keys() == ref.keys()
    for key in ref:
        x, y = new[key], ref[key]
        assert x.dtype == y.dtype and x.shape == y.shape, key
        if x.dtype.is_floating_point:
            assert torch.equal(x.isnan(), y.isnan()), key
            x, y = x.nan_to_num(), y.nan_to_num()
        assert torch.equal(x, y), (key, x, y)


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("kind", KINDS)
def test_reducer_matches_the_reference_bit_for_bit(causal, kind):
    sizes = [1, 2, 3, 4, 5, 7, 9, 12, 17, 25, 31, 40, 49, 60]
    for seed, n in enumerate(sizes):
        att = attention(n, causal, kind, seed=1000 * KINDS.index(kind) + seed)
        assert_same(T.TopologyReducer()(att, causal), reference_reducer(att, causal))


def test_reducer_matches_the_reference_with_a_short_cut():
    att = attention(40, True, "softmax", seed=5)
    assert_same(T.TopologyReducer(max_tokens=20)(att, True), reference_reducer(att, True, max_tokens=20))


def test_uniform_and_degenerate_inputs_match_the_reference():
    for n in (1, 2, 3, 8, 33):
        uniform = torch.full((2, 2, n, n), 1.0 / n)
        causal_uniform = torch.tril(torch.ones(n, n)) / torch.arange(1, n + 1)[:, None]
        identity = torch.eye(n).expand(2, 2, n, n).clone()
        for att, causal in ((uniform, False), (causal_uniform.expand(2, 2, n, n).clone(), True),
                            (identity, False), (identity, True)):
            assert_same(T.TopologyReducer()(att, causal), reference_reducer(att, causal))


def random_distance(k: int, rng: np.random.Generator, kind: str) -> np.ndarray:
    """Asymmetric float32 distances with a non-zero diagonal, as the faithful path builds them."""
    if kind == "ties":
        d = rng.integers(0, 4, (k, k)) / 4
    elif kind == "causal":
        d = np.ones((k, k))
        d[np.tril_indices(k)] = rng.random(k * (k + 1) // 2)
    else:
        d = rng.random((k, k))
        d[rng.random((k, k)) < 0.2] = 0.0  # absent edges
    return d.astype(np.float32)


@pytest.mark.parametrize("kind", ["plain", "ties", "causal"])
def test_batched_ripser_h0_replays_the_union_find(kind):
    rng = np.random.default_rng(["plain", "ties", "causal"].index(kind))
    for k in (1, 2, 3, 5, 8, 13, 30):
        dist = np.stack([random_distance(k, rng, kind) for _ in range(6)])  # [layer, k, k]
        for mine, ref in zip(T._ripser_h0_layers(dist), [T._ripser_h0(d) for d in dist], strict=True):
            assert np.array_equal(mine, ref)  # same bars, same order


def symmetric_graph(k: int, rng: np.random.Generator, p_edge: float, levels: int | None) -> np.ndarray:
    """Symmetric edge values (``inf`` = no edge, on the diagonal too), optionally on a few levels (ties)."""
    w = rng.integers(1, levels + 1, (k, k)) / levels if levels else rng.random((k, k))
    w = np.where(rng.random((k, k)) < p_edge, w, np.inf)
    w = np.triu(w, 1)
    w = w + w.T
    w[np.tril_indices(k)] = w.T[np.tril_indices(k)]
    np.fill_diagonal(w, np.inf)
    return w


def gudhi_h1(edges: np.ndarray) -> np.ndarray:
    """The reference H1 diagram: gudhi's flag complex, vertices at 0 (edges are > 0 here)."""
    m = edges.copy()
    np.fill_diagonal(m, 0.0)
    return T._flag_persistence(m, np.finfo(float).max)[1]


def sorted_bars(dgm: np.ndarray) -> np.ndarray:
    return dgm[np.lexsort((dgm[:, 1], dgm[:, 0]))]


@pytest.mark.parametrize("levels", [None, 3])
@pytest.mark.parametrize("p_edge", [0.3, 0.7, 1.0])
def test_batched_h1_matches_gudhi(levels, p_edge):
    rng = np.random.default_rng(int(10 * p_edge) + (levels or 0))
    for k in (2, 3, 4, 6, 10, 20, 35):
        graphs = np.stack([symmetric_graph(k, rng, p_edge, levels) for _ in range(5)])  # [graph, k, k]
        for mine, ref in zip(T._h1_ripser(T._h1_reduce(graphs)), [gudhi_h1(g) for g in graphs], strict=True):
            assert np.array_equal(sorted_bars(mine), sorted_bars(ref))
            assert np.array_equal(mine[:, 1], ref[:, 1])  # by increasing death, infinite last, as gudhi lists them


def test_h1_of_a_four_cycle_is_one_bar_from_its_last_edge_to_its_first_diagonal():
    e = np.full((4, 4), np.inf)
    for (i, j), w in {(0, 1): 0.1, (1, 2): 0.2, (2, 3): 0.3, (0, 3): 0.4, (0, 2): 0.6, (1, 3): 0.7}.items():
        e[i, j] = e[j, i] = w
    (h1,) = T._h1_ripser(T._h1_reduce(e[None]))
    assert h1.tolist() == [[0.4, 0.6]]
    e[1, 3] = e[3, 1] = e[0, 2] = e[2, 0] = np.inf  # no diagonal: the loop never closes
    (h1,) = T._h1_ripser(T._h1_reduce(e[None]))
    assert h1.tolist() == [[0.4, np.inf]]


def test_paths_and_cones_have_no_h1():
    k = 7
    path = np.full((k, k), np.inf)
    for i in range(k - 1):
        path[i, i + 1] = path[i + 1, i] = 0.1 * (i + 1)
    cone = np.full((k, k), 0.9)
    cone[0, :] = cone[:, 0] = 0.2  # vertex 0 joins every pair before the pair itself
    np.fill_diagonal(cone, np.inf)
    graphs = np.stack([path, cone])
    assert T._h1_reduce(graphs)[1] is None  # the cone is recognised without a computation
    for dgm in T._h1_ripser(T._h1_reduce(graphs)):
        assert dgm.shape == (0, 2)


def test_dominated_vertices_are_removed_and_the_diagram_kept():
    rng = np.random.default_rng(3)
    k = 12
    g = symmetric_graph(k, rng, 0.8, None)
    g[0, 1:] = g[1:, 0] = np.inf
    g[0, 1] = g[1, 0] = 0.0001  # vertex 0: a leaf, dominated by its only neighbour
    (reduced,) = T._h1_reduce(g[None])
    assert reduced is not None and len(reduced) < k
    (mine,) = T._h1_ripser([reduced])
    assert np.array_equal(sorted_bars(mine), sorted_bars(gudhi_h1(g)))


def test_row_sums_round_like_numpy_on_each_array():
    rng = np.random.default_rng(0)
    rows = [rng.random(m) * 10.0 ** rng.integers(-8, 8, m) for m in rng.integers(0, 300, 200)]
    rows += [rng.random(m) for m in (0, 1, 7, 8, 9, 127, 128, 129) for _ in range(3)]
    expected = np.array([np.sum(r) for r in rows])
    assert np.array_equal(T._row_sums(rows), expected)


@pytest.mark.parametrize("n", [1, 2, 3, 6])
def test_many_layers_of_few_tokens_match_the_reference(n):
    for causal in (True, False):
        att = attention(n, causal, "softmax", seed=n, layers=30, heads=3)
        assert_same(T.TopologyReducer()(att, causal), reference_reducer(att, causal))


@pytest.mark.parametrize("causal", [True, False])
def test_spanning_forest_h0_matches_gudhi(causal):
    max_scale = 1.0 - float(T.CURVE_THRESHOLDS.min())
    for seed, (n, kind) in enumerate([(1, "softmax"), (2, "ties"), (6, "sparse"), (13, "ties"), (30, "sink")]):
        avg = attention(n, causal, kind, seed=seed, layers=4, heads=1)[:, 0].numpy()  # [layer, n, n]
        edges = T._corrected_distance_layers(avg, causal)
        edges = np.where(edges <= max_scale, edges, np.inf)
        edges[:, np.arange(n), np.arange(n)] = np.inf
        for layer, mine in enumerate(T._mst_h0_layers(edges)):
            ref = T.corrected_diagrams(T.corrected_distance(avg[layer], causal), max_scale)[0]
            assert np.array_equal(mine, ref)
