"""Threshold graphs and Laplacian spectra: known answers, a per-graph reference, faithful vs corrected."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest
import scipy.sparse.linalg as sla
import torch

from sinkframes.metrics import arpack
from sinkframes.metrics import graphs as g
from sinkframes.metrics.arpack import RESTART_SEED, eigsh_smallest
from tests.attention_cases import causal_first_sink, causal_uniform, previous_token, stack

N = 8


def metrics(mats, causal=True, thresholds=(0.05,), modes=("corrected", "faithful")):
    att, sizes = g.pad_square(list(mats))
    out = g.threshold_graph_metrics(att, sizes, causal, thresholds, modes)
    return {k: v.numpy() for k, v in out.items()}  # each [threshold, graph]


def clique_pair(n: int) -> torch.Tensor:
    a = torch.zeros(n, n)
    h = n // 2
    a[:h, :h] = 1.0 / h
    a[h:, h:] = 1.0 / (n - h)
    return a


def test_sink_star():
    """All queries on key 0: a star centred on the sink (lambda2 = 1, centralization = 1)."""
    m = metrics([causal_first_sink(N)])
    assert m["corrected/lambda2"][0, 0] == pytest.approx(1.0, abs=1e-5)
    assert m["corrected/centralization"][0, 0] == pytest.approx(1.0)
    assert m["corrected/star_basic"][0, 0] == pytest.approx(1.0)
    # Gini of in-degrees (n-1, 0, ..., 0) over n nodes = (n - 1) / n
    assert m["corrected/gini"][0, 0] == pytest.approx((N - 1) / N)
    # the official mean-symmetrization gives one-way edges weight 0.5, halving lambda2
    assert m["laplacian/fiedler"][0, 0] == pytest.approx(0.5, abs=1e-5)
    # the official self-loop of the sink's own row lifts its in-degree to n: basic star-likeness n/(n-1) > 1
    assert m["fiedler/star_likeness"][0, 0] == pytest.approx(N / (N - 1))


def test_path():
    """Previous-token attention is a path: lambda2 = 2 (1 - cos(pi / n))."""
    m = metrics([previous_token(N)])
    assert m["corrected/lambda2"][0, 0] == pytest.approx(2 * (1 - math.cos(math.pi / N)), abs=1e-5)


def test_complete_and_two_cliques():
    full = torch.full((N, N), 1.0 / N)
    m = metrics([full, clique_pair(N)], causal=False, thresholds=(0.01,))
    assert m["corrected/lambda2"][0, 0] == pytest.approx(N, abs=1e-4)
    assert m["corrected/lambda2_norm"][0, 0] == pytest.approx(1.0, abs=1e-5)
    assert m["corrected/density_allowed"][0, 0] == pytest.approx(1.0)
    assert m["corrected/centralization"][0, 0] == pytest.approx(0.0)
    assert m["corrected/lambda2"][0, 1] == pytest.approx(0.0, abs=1e-5)  # two components


@pytest.mark.parametrize("t", [0.05, 0.15, 0.3])
def test_uniform_causal(t):
    """Row i gives 1/(i+1) to each visible key: rows with 1/(i+1) > t form a clique, the rest are isolated."""
    m = metrics([causal_uniform(N)], thresholds=(t,))
    clique = sum(1 for i in range(N) if 1 / (i + 1) > t)
    expected = float(N) if clique == N else 0.0
    assert m["corrected/lambda2"][0, 0] == pytest.approx(expected, abs=1e-4)
    # every causal pair passes at most one way: the official (B + B^T) / 2 halves the weights
    assert m["laplacian/fiedler"][0, 0] == pytest.approx(expected / 2, abs=1e-4)
    assert m["corrected/density_allowed"][0, 0] == pytest.approx(clique * (clique - 1) / 2 / (N * (N - 1) / 2))


def test_uniform_bidirectional():
    full = torch.full((N, N), 1.0 / N)
    below = metrics([full], causal=False, thresholds=(0.5 / N,))
    above = metrics([full], causal=False, thresholds=(1.0 / N,))  # strict: 1/n is not > 1/n
    assert below["corrected/lambda2"][0, 0] == pytest.approx(N, abs=1e-4)
    assert below["laplacian/fiedler"][0, 0] == pytest.approx(N, abs=1e-4)  # symmetric B: no halving
    assert above["corrected/edges"][0, 0] == 0
    assert above["laplacian/error"][0, 0] == 1 and above["laplacian/fiedler"][0, 0] == 0
    assert above["fiedler/fiedler"][0, 0] == 0 and np.isnan(above["fiedler/centralization"][0, 0])


def test_padding_does_not_change_results():
    rng = torch.Generator().manual_seed(0)
    mats = [torch.softmax(torch.randn(n, n, generator=rng) * 3, -1) for n in (5, 9, 13)]
    together = metrics(mats, thresholds=g.PAPER_THRESHOLDS)
    for i, m in enumerate(mats):
        alone = metrics([m], thresholds=g.PAPER_THRESHOLDS)
        for k in together:
            np.testing.assert_allclose(together[k][:, i], alone[k][:, 0], atol=1e-4, err_msg=k)


# ----------------------------------------------------------------------------- a per-graph reference


def _gini(d):
    d = np.sort(np.asarray(d, float))
    n = len(d)
    return 0.0 if d.sum() == 0 else 2 * np.sum(np.arange(1, n + 1) * d) / (n * d.sum()) - (n + 1) / n


def reference_one(a: np.ndarray, t: float, variant: str) -> dict[str, float]:
    """A straightforward networkx computation of one graph, written from the definitions."""
    n = a.shape[0]
    B = (a > t * (1 + g.THRESHOLD_TOLERANCE)).astype(float)  # strictly above, round-off a tie
    if variant == "corrected":
        np.fill_diagonal(B, 0)
        G = nx.DiGraph()
        G.add_nodes_from(range(n))
        G.add_edges_from(zip(*np.nonzero(B), strict=True))
        d = np.array([G.in_degree(v) for v in range(n)], float)
        U = nx.Graph()
        U.add_nodes_from(range(n))
        U.add_edges_from(G.edges())
        lam = np.sort(nx.laplacian_spectrum(U))
        dmax = d.max()
        return {
            "lambda2": lam[1],
            "star_basic": dmax / (n - 1),
            "gini": _gini(d),
            "centralization": (dmax - d).sum() / (n - 1) ** 2 if dmax > 0 else 0.0,
            "degree_variance": d.var(),
        }
    if B.sum() < 2:
        return {"fiedler": 0.0}
    G = nx.DiGraph()
    if variant == "laplacian" and n <= g.LAPLACIAN_DENSE_MAX_TOKENS:
        G.add_nodes_from(range(n))
    G.add_edges_from(zip(*np.nonzero(B), strict=True))  # self-loops included
    d = np.array([G.in_degree(v) for v in G.nodes], float)
    N_ = len(d)
    dmax = d.max()
    basic = dmax / max(1, N_ - 1)
    S = (B + B.T) / 2
    lap = np.diag(S.sum(1) - np.diag(S)) - (S - np.diag(np.diag(S)))
    if variant == "laplacian" and n > g.LAPLACIAN_DENSE_MAX_TOKENS:  # the notebook's sparse solver
        lam = np.sort(sla.eigsh(lap, k=3, which="SM", v0=g.arpack_start(n), return_eigenvectors=False))
        lam = np.where(np.abs(lam) < g.ZERO_EIGENVALUE_TOL, 0.0, lam)
    else:
        lam = np.sort(np.linalg.eigvalsh(lap))
    out = {
        "fiedler": lam[1],
        "centralization": (dmax - d).sum() / (N_ - 1) ** 2 if dmax > 0 else 0.0,
        "degree_variance": d.var(),
    }
    if variant == "laplacian":
        out.update({"star_likeness": 0.3 * basic + 0.7 * _gini(d), "basic_star_likeness": basic, "gini": _gini(d)})
    else:
        out["star_likeness"] = basic
    return out


@pytest.mark.parametrize("causal", [True, False])
def test_batched_equals_per_graph_reference(causal):
    rng = np.random.default_rng(1)
    mats = []
    for n in (3, 6, 11, 17, 54, 60):  # beyond 50 tokens laplacian.ipynb drops isolated nodes
        z = rng.normal(size=(n, n)) * rng.uniform(0.5, 4)
        z[:, 0] += rng.uniform(0, 4)  # a sink of random strength
        if causal:
            z = np.where(np.tril(np.ones((n, n))) > 0, z, -np.inf)
        a = np.exp(z - z.max(1, keepdims=True))
        mats.append(torch.tensor(a / a.sum(1, keepdims=True), dtype=torch.float32))
    got = metrics(mats, causal=causal, thresholds=g.ALL_THRESHOLDS)
    for ti, t in enumerate(g.ALL_THRESHOLDS):
        for i, m in enumerate(mats):
            for variant in ("corrected", "laplacian", "fiedler"):
                ref = reference_one(m.double().numpy(), t, variant)
                for k, v in ref.items():
                    assert got[f"{variant}/{k}"][ti, i] == pytest.approx(v, abs=2e-4), (variant, k, t, m.shape)


# ----------------------------------------------------------------------------- faithful vs corrected


def test_threshold_lists_differ_only_by_the_typo():
    assert set(g.PAPER_THRESHOLDS) ^ set(g.FIEDLER_NOTEBOOK_THRESHOLDS) == {0.05, 0.5}
    assert g.FIEDLER_NOTEBOOK_THRESHOLDS.index(0.5) == g.PAPER_THRESHOLDS.index(0.05)


def test_variants_differ_where_the_spec_says():
    """Self-loops, the node set and the symmetrization are the only differences."""
    a = causal_first_sink(N)
    m = metrics([a], thresholds=(0.05,))
    # composite (laplacian) vs basic (fiedler) star-likeness on the same graph
    assert m["laplacian/star_likeness"][0, 0] == pytest.approx(
        0.3 * m["laplacian/basic_star_likeness"][0, 0] + 0.7 * m["laplacian/gini"][0, 0]
    )
    assert m["laplacian/basic_star_likeness"][0, 0] == pytest.approx(m["fiedler/star_likeness"][0, 0])
    # an isolated node changes the fiedler.ipynb node set but not laplacian.ipynb's (n <= 50)
    b = torch.zeros(N, N)
    b[:, 0] = 1.0
    b[N - 1] = 0.0
    b[N - 1, N - 1] = 0.04  # below the threshold: node N-1 has no edge at all
    m = metrics([b], thresholds=(0.05,))
    # in-degrees with self-loops: key 0 gets rows 0..N-2, every other key 0
    assert m["laplacian/centralization"][0, 0] == pytest.approx(1.0)  # over all N nodes
    assert m["fiedler/centralization"][0, 0] == pytest.approx((N - 1) / (N - 2))  # node N-1 dropped
    assert m["laplacian/degree_variance"][0, 0] == pytest.approx(np.var(np.r_[N - 1, np.zeros(N - 1)]))
    assert m["fiedler/degree_variance"][0, 0] == pytest.approx(np.var(np.r_[N - 1, np.zeros(N - 2)]))
    # corrected: no self-loop, all nodes: key 0 has in-degree N-2 among N nodes
    assert m["corrected/star_basic"][0, 0] == pytest.approx((N - 2) / (N - 1))


def test_reducer_shapes_and_per_head():
    rng = torch.Generator().manual_seed(2)
    att = torch.softmax(torch.randn(3, 2, 7, 7, generator=rng), -1)  # [layer, head, query, key]
    out = g.SpectralReducer()(att, causal=False)
    T = len(g.ALL_THRESHOLDS)
    assert out["corrected/lambda2"].shape == (T, 3)
    assert out["head/star_basic"].shape == (3, 2)
    assert int(out["n_tokens"]) == 7
    # the per-head value of a head equals the head-averaged computation when both heads are equal
    same = stack(att[0, 0], layers=3, heads=2)
    o2 = g.SpectralReducer()(same, causal=False)
    ti = g.ALL_THRESHOLDS.index(0.05)
    assert torch.allclose(o2["head/star_basic"][:, 0], o2["corrected/star_basic"][ti])


def test_bad_input_is_rejected():
    with pytest.raises(ValueError, match="graph, N, N"):
        g.threshold_graph_metrics(torch.zeros(3, 4), torch.tensor([4]), True)
    with pytest.raises(ValueError, match="mode must be one of"):
        g.threshold_graph_metrics(torch.zeros(1, 4, 4), torch.tensor([4]), True, modes=("nope",))
    with pytest.raises(ValueError, match="layer, head"):
        g.SpectralReducer()(torch.zeros(4, 4), causal=True)


def test_disconnected_graphs_have_exactly_zero_connectivity(monkeypatch):
    """Round-off must not leak into lambda2: two disjoint random-weight blocks give exactly 0 in every variant."""
    gen = torch.Generator().manual_seed(0)
    n, h = 30, 15
    a = torch.zeros(n, n)
    a[:h, :h] = torch.rand(h, h, generator=gen) + 0.5
    a[h:, h:] = torch.rand(n - h, n - h, generator=gen) + 0.5
    perm = torch.randperm(n, generator=gen)
    a = a[perm][:, perm]
    a = a / a.sum(-1, keepdim=True)  # rows on the simplex, two blocks that never touch
    names = ("corrected/lambda2", "laplacian/fiedler", "fiedler/fiedler")
    out = metrics([a], causal=False, thresholds=(0.01,))
    assert [out[k].item() for k in names] == [0.0, 0.0, 0.0]
    # without the tolerance the solver's round-off shows (so the check above can fail)
    monkeypatch.setattr(g, "ZERO_EIGENVALUE_TOL", 0.0)
    raw = metrics([a], causal=False, thresholds=(0.01,))
    assert all(raw[k].item() != 0.0 and abs(raw[k].item()) < 1e-12 for k in names)
    monkeypatch.undo()
    # the same matrix with one bridge is connected: a positive value, far above the tolerance
    a[perm.tolist().index(0), perm.tolist().index(h)] = 0.2
    a[perm.tolist().index(h), perm.tolist().index(0)] = 0.2
    assert metrics([a], causal=False, thresholds=(0.01,))["corrected/lambda2"].item() > 1e-3


def test_degree_variance_is_computed_without_cancellation():
    deg = torch.tensor([[4000.0, 4001.0, 4000.0, 4001.0]])  # float32 E[d^2] - E[d]^2 loses the 0.25
    st = g._degree_stats(deg, torch.ones(1, 4, dtype=torch.bool))
    assert float(st["degree_variance"][0]) == 0.25


def _two_stars(n: int) -> torch.Tensor:
    """A causal attention matrix whose graph at t = 0.1 is two stars and many isolated tokens."""
    a = torch.zeros(n, n)
    a[:, 0] = 0.05
    a[1:40, 0] = 1.0
    a[41:45, 40] = 1.0
    a[torch.arange(n), torch.arange(n)] = torch.where(a.sum(1) > 0.5, 0.0, 1.0)  # isolated tokens: self only
    return a / a.sum(1, keepdim=True)


def test_laplacian_variant_uses_arpack_above_fifty_tokens_and_the_dense_solver_below():
    big = _two_stars(60)
    m = metrics([big], causal=True, thresholds=(0.1,))
    B = (big > 0.1).double().numpy()
    S = (B + B.T) / 2
    np.fill_diagonal(S, 0)
    lap = np.diag(S.sum(1)) - S
    dense = np.sort(np.linalg.eigvalsh(lap))[:3]
    sparse = g.arpack_smallest(lap)
    assert dense[1] == pytest.approx(0.0, abs=1e-9) and dense[2] == pytest.approx(0.0, abs=1e-9)  # many components
    assert float(m["laplacian/fiedler"][0, 0]) == pytest.approx(sparse[1], abs=1e-6)
    assert float(m["laplacian/spectral_gap"][0, 0]) == pytest.approx(sparse[2] - sparse[1], abs=1e-6)
    assert float(m["fiedler/fiedler"][0, 0]) == pytest.approx(dense[1], abs=1e-9)  # fiedler.ipynb: always dense
    # the start vector is fixed, so the official solver's answer repeats
    assert np.array_equal(g.arpack_smallest(lap), sparse)
    small = metrics([_two_stars(60)[:50, :50] / _two_stars(60)[:50, :50].sum(1, keepdim=True)], causal=True,
                    thresholds=(0.1,))
    assert float(small["laplacian/spectral_gap"][0, 0]) == pytest.approx(0.0, abs=1e-9)  # dense: all zeros found


# ---------------------------------------------------------------------------------------------
# the one-sentence path against the general padded one


def _reference_reducer(reducer: g.SpectralReducer, attn: torch.Tensor, causal: bool) -> dict[str, torch.Tensor]:
    """``SpectralReducer`` as first written: ``threshold_graph_metrics`` on the head average and on every head."""
    L, H, n, _ = attn.shape
    out = g.threshold_graph_metrics(attn.float().mean(1), torch.full((L,), n), causal, reducer.thresholds)
    res = {k: v.contiguous() for k, v in out.items()}
    res["n_tokens"] = torch.tensor(n)
    if reducer.per_head:
        heads = g.threshold_graph_metrics(attn.float().reshape(L * H, n, n), torch.full((L * H,), n), causal,
                                          (reducer.head_threshold,), modes=("corrected",), spectra=False)
        for m in reducer.head_metrics:
            res[f"head/{m}"] = heads[f"corrected/{m}"].reshape(L, H).contiguous()
    return res


def _assert_identical(new: dict[str, torch.Tensor], old: dict[str, torch.Tensor]) -> None:
    assert list(new) == list(old)
    for k in old:
        assert new[k].dtype == old[k].dtype and new[k].shape == old[k].shape, k
        assert torch.equal(new[k].isnan(), old[k].isnan()), k
        assert torch.equal(new[k].nan_to_num(), old[k].nan_to_num()), k  # bit for bit


def _sinky_attention(seed: int, layers: int, heads: int, n: int, causal: bool, symmetric: bool = False) -> torch.Tensor:
    """Seeded attention ``[layer, head, query, key]`` with a sink column, quantized to multiples of 0.001
    (so that weights equal to a threshold occur), optionally symmetric (pairs passing both ways)."""
    gen = torch.Generator().manual_seed(seed)
    logits = 2.0 * torch.randn(layers, heads, n, n, generator=gen)
    if symmetric:
        logits = logits + logits.transpose(-1, -2)
    logits[..., 0] += 3.0
    if causal:
        logits = logits.masked_fill(~torch.tril(torch.ones(n, n, dtype=torch.bool)), float("-inf"))
    return torch.round(torch.softmax(logits, -1) * 1000) / 1000


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("n", [1, 2, 3, 4, 9, 33, 60])
def test_reducer_equals_the_padded_computation_bit_for_bit(causal, n):
    for seed, symmetric in ((n, False), (n + 1, True)):
        att = _sinky_attention(seed, 5, 3, n, causal, symmetric)
        for reducer in (g.SpectralReducer(), g.SpectralReducer(per_head=False), g.SpectralReducer(head_threshold=0.01)):
            _assert_identical(reducer(att, causal), _reference_reducer(reducer, att, causal))


def test_two_token_graphs_have_a_fiedler_value_and_no_third_eigenvalue():
    """Two nodes joined by one edge: Laplacian eigenvalues 0 and 2; the spectral gap needs a third (NaN)."""
    att = torch.tensor([[[[1.0, 0.0], [0.5, 0.5]]]])  # [layer, head, query, key]
    out = g.SpectralReducer()(att, True)
    t = g.ALL_THRESHOLDS.index(0.1)
    assert float(out["corrected/lambda2"][t, 0]) == pytest.approx(2.0)
    assert bool(out["corrected/spectral_gap"][t, 0].isnan())
    assert float(out["fiedler/fiedler"][t, 0]) == pytest.approx(1.0)  # (B + B^T) / 2: the edge weighs 0.5


def test_sentence_paths_equal_threshold_graph_metrics():
    att = _sinky_attention(7, 4, 2, 55, False, symmetric=True)  # > 50 tokens: ARPACK on disconnected graphs
    mats = att.reshape(8, 55, 55)
    sizes = torch.full((8,), 55)
    _assert_identical(g.sentence_graph_metrics(mats, False), g.threshold_graph_metrics(mats, sizes, False))
    _assert_identical(g.head_degree_metrics(mats, True, 0.02),
                      g.threshold_graph_metrics(mats, sizes, True, (0.02,), modes=("corrected",), spectra=False))
    with pytest.raises(ValueError, match="graph, n, n"):
        g.sentence_graph_metrics(torch.zeros(3, 4), True)
    with pytest.raises(ValueError, match="graph, n, n"):
        g.head_degree_metrics(torch.zeros(3, 4), True, 0.1)


def _seeded_restarts() -> dict:
    """``eigsh``'s generator of ARPACK's restarts, seeded as ``metrics.arpack`` seeds it (SciPy >= 1.17)."""
    return {"rng": np.random.default_rng(RESTART_SEED)} if arpack._eigsh_takes_rng() else {}


def test_arpack_is_eigsh_from_the_given_start():
    """``metrics.arpack.eigsh_smallest`` is the public ``eigsh(which="SM")`` from the given start vector, with
    seeded restarts: the same eigenvalues, bit for bit, on connected and disconnected Laplacians."""
    from scipy.sparse import csr_matrix

    rng = np.random.default_rng(9)
    for n, density, isolated in ((51, 0.9, 0), (58, 0.95, 10), (75, 0.97, 25), (90, 0.8, 0)):
        b = (rng.random((n, n)) > density).astype(float)
        b[:isolated, :] = 0.0
        b[:, :isolated] = 0.0
        w = 0.5 * (b + b.T)
        np.fill_diagonal(w, 0.0)
        lap = csr_matrix(np.diag(w.sum(1)) - w)
        v0 = g.arpack_start(n)
        expected = sla.eigsh(lap, k=3, which="SM", v0=v0, return_eigenvectors=False, **_seeded_restarts())
        assert np.array_equal(eigsh_smallest(lap, 3, v0), expected)
        assert np.array_equal(arpack.eigsh_smallest_dense(lap.toarray(), 3, v0), expected)


def test_csr_arrays_from_a_dense_matrix_are_the_constructors():
    from scipy.sparse import csr_matrix

    from sinkframes.metrics.arpack import csr_parts, eigsh_smallest, eigsh_smallest_dense

    rng = np.random.default_rng(1)
    dense = np.where(rng.random((57, 57)) > 0.8, rng.standard_normal((57, 57)), 0.0)
    dense[3] = 0.0  # an empty row
    dense = dense + dense.T
    m = csr_matrix(dense)
    for got, want in zip(csr_parts(dense), (m.indptr, m.indices, m.data), strict=True):
        assert got.dtype == want.dtype and np.array_equal(got, want)
    v0 = g.arpack_start(57)
    assert np.array_equal(eigsh_smallest_dense(dense, 3, v0), eigsh_smallest(m, 3, v0))


@pytest.mark.skipif(not arpack._eigsh_takes_rng(),
                    reason="SciPy < 1.17: eigsh takes no generator for ARPACK's restarts")
def test_arpack_restarts_from_a_seeded_generator():
    """On a graph whose Krylov space runs out (two edges among 60 nodes), ARPACK asks for new random start
    vectors. ``eigsh`` draws them from the operating system's entropy, so its raw answers differ from call
    to call; the book's call draws them from ``RESTART_SEED`` and repeats, equal to ``eigsh`` given that seed."""
    import scipy.sparse.linalg as sla
    from scipy.sparse import csr_matrix

    from sinkframes.metrics.arpack import RESTART_SEED, eigsh_smallest

    n = 60
    b = np.zeros((n, n))
    b[1, 0] = b[2, 0] = 1.0
    w = 0.5 * (b + b.T)
    m = csr_matrix(np.diag(w.sum(1)) - w)
    v0 = g.arpack_start(n)
    unseeded = {tuple(sla.eigsh(m, k=3, which="SM", v0=v0, return_eigenvectors=False)) for _ in range(4)}
    assert len(unseeded) > 1  # the case does exercise the random restarts
    ours = {tuple(eigsh_smallest(m, 3, v0)) for _ in range(4)}
    assert len(ours) == 1
    seeded = sla.eigsh(m, k=3, which="SM", v0=v0, return_eigenvectors=False, rng=np.random.default_rng(RESTART_SEED))
    assert ours == {tuple(seeded)}


def test_reducer_refuses_nonfinite_attention():
    from sinkframes.tensors import NonFiniteInputError

    att = _sinky_attention(3, 3, 2, 6, True)
    att[2, 1, 4, 0] = float("inf")
    with pytest.raises(NonFiniteInputError, match=r"layers \[2\]"):
        g.SpectralReducer()(att, True)


def test_arpack_smallest_is_eigsh_on_the_csr_matrix():
    """``arpack_smallest`` gives ``eigsh``'s eigenvalues on the sparse Laplacian, bit for bit, sorted and with
    those within ``ZERO_EIGENVALUE_TOL`` of 0 set to 0, on disconnected graphs."""
    from scipy.sparse import csr_matrix

    rng = np.random.default_rng(4)
    for n in (51, 64, 87):
        b = (rng.random((n, n)) > 0.95).astype(float)
        b[: n // 3, :] = 0.0
        b[:, : n // 3] = 0.0  # a third of the nodes isolated: a repeated zero eigenvalue
        w = 0.5 * (b + b.T)
        np.fill_diagonal(w, 0.0)
        lap = np.diag(w.sum(1)) - w
        plain = sla.eigsh(csr_matrix(lap), k=3, which="SM", v0=g.arpack_start(n), return_eigenvectors=False,
                          **_seeded_restarts())
        plain = np.sort(plain)
        expected = np.where(np.abs(plain) < g.ZERO_EIGENVALUE_TOL, 0.0, plain)
        assert np.array_equal(g.arpack_smallest(lap), expected)


def test_arpack_on_a_scipy_without_a_restart_generator(monkeypatch):
    """Before SciPy 1.17 ``eigsh`` takes no ``rng``: the same call without it, the same eigenvalues wherever
    ARPACK needs no restart (its own generator draws the restarts there)."""
    def eigsh_before_1_17(A, k=6, M=None, sigma=None, which="LM", v0=None, ncv=None, maxiter=None, tol=0,
                          return_eigenvectors=True, Minv=None, OPinv=None, mode="normal"):
        return sla.eigsh(A, k=k, which=which, v0=v0, return_eigenvectors=return_eigenvectors)

    rng = np.random.default_rng(5)
    b = (rng.random((70, 70)) > 0.9).astype(float)
    w = 0.5 * (b + b.T)
    np.fill_diagonal(w, 0.0)
    lap = np.diag(w.sum(1)) - w
    v0 = g.arpack_start(70)
    now = arpack.eigsh_smallest_dense(lap, 3, v0)
    arpack._eigsh_takes_rng.cache_clear()
    monkeypatch.setattr(arpack, "eigsh", eigsh_before_1_17)
    try:
        assert not arpack._eigsh_takes_rng()
        assert np.array_equal(arpack.eigsh_smallest_dense(lap, 3, v0), now)
    finally:
        monkeypatch.undo()
        arpack._eigsh_takes_rng.cache_clear()


def test_reducer_above_fifty_tokens_gives_eigenvalues_of_the_dense_spectrum():
    """A random sentence of 64 tokens through ``SpectralReducer`` (ARPACK for the laplacian variant): every
    Fiedler value and the third eigenvalue are eigenvalues of the graph's Laplacian as numpy's dense
    ``eigvalsh`` finds them; on connected graphs they are its lambda2 and lambda3, and the dense variants'
    lambda2 is numpy's everywhere."""
    L, H, n = 3, 2, 64
    gen = torch.Generator().manual_seed(7)
    logits = 2.0 * torch.randn(L, H, n, n, generator=gen)
    logits[..., 0] += 3.0
    logits = logits.masked_fill(~torch.tril(torch.ones(n, n, dtype=torch.bool)), float("-inf"))
    att = torch.softmax(logits, -1)
    out = g.SpectralReducer(per_head=False)(att, True)
    mean = att.mean(1).numpy()  # float32, compared with float32 thresholds as the reducer does
    arpack_graphs = 0
    for ti, t in enumerate(g.ALL_THRESHOLDS):
        for layer in range(L):
            b = (mean[layer] > np.float32(t)).astype(float)
            if b.sum() < 2:
                continue
            off = b - np.diag(np.diag(b))
            half = 0.5 * (off + off.T)
            either = np.maximum(off, off.T)
            dense = np.linalg.eigvalsh(np.diag(half.sum(1)) - half)  # (B + B^T) / 2
            lam2 = float(out["laplacian/fiedler"][ti, layer])
            lam3 = lam2 + float(out["laplacian/spectral_gap"][ti, layer])
            for value in (lam2, lam3):
                assert np.abs(dense - value).min() < 1e-9, (t, layer, value)
            if dense[1] > g.ZERO_EIGENVALUE_TOL:  # connected: the dense answer stands
                assert lam2 == pytest.approx(dense[1], abs=1e-9) and lam3 == pytest.approx(dense[2], abs=1e-9)
            else:
                arpack_graphs += 1
            assert float(out["fiedler/fiedler"][ti, layer]) == pytest.approx(max(dense[1], 0.0), abs=1e-9)
            corrected = np.linalg.eigvalsh(np.diag(either.sum(1)) - either)
            assert float(out["corrected/lambda2"][ti, layer]) == pytest.approx(max(corrected[1], 0.0), abs=1e-9)
    assert arpack_graphs > 0  # the case reaches ARPACK


@pytest.mark.parametrize("sentence", [False, True])
def test_a_weight_equal_to_the_threshold_within_round_off_is_a_tie_and_never_an_edge(sentence):
    """Two keys with identical states split a row exactly: 1/2 against the threshold 0.5 is no edge, whichever side of
    0.5 the machine's last bit puts it; a weight clearly above is one."""
    half = torch.tensor(0.5)
    rows = []
    for nudge in (0.0, 6e-8, -6e-8):  # 0.5 as computed exactly, one bit above, one bit below
        a = torch.zeros(4, 4)
        a[:, 0] = 1.0
        a[3, 0], a[3, 1] = half + nudge, 1 - half - nudge
        rows.append(a)
    if sentence:
        out = g.sentence_graph_metrics(torch.stack(rows), causal=True, thresholds=(0.5,))
        density = out["corrected/density_allowed"].numpy()
    else:
        density = metrics(rows, thresholds=(0.5,))["corrected/density_allowed"]
    assert density[0, 0] == density[0, 1] == density[0, 2]  # the same graph for all three
    above = torch.zeros(4, 4)
    above[:, 0] = 1.0
    above[3, 0], above[3, 1] = 0.49, 0.51
    edges = metrics([rows[0], above], thresholds=(0.5,))["corrected/density_allowed"]
    assert edges[0, 1] > edges[0, 0]  # 0.51 passes where 0.5 does not
