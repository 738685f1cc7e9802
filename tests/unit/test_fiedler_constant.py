"""A Fiedler value that is the same in every sentence up to round-off is constant in both modes: no
correlation is computed with it, whatever memory layout the eigensolver saw, and the tables count it."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from sinkframes import stats
from sinkframes.analyses import spectral as sp
from sinkframes.metrics import graphs as g
from sinkframes.report import spectral as spectral_report
from sinkframes.results import ModelResult
from sinkframes.verdicts import MEASURES

SIZES = (12, 17, 23, 31, 40, 47)  # tokens per sentence: up to 50, the dense solver in every variant
L, H = 3, 2
LOW = 5e-4  # below every threshold
VARYING = ("star_likeness", "centralization", "degree_variance", "density")  # with n, on a one-way star


def _record() -> dict:
    return {"ref": "stars", "n_layers": L, "causal": True}


def _star(n: int) -> torch.Tensor:
    """``[layer, head, n, n]`` causal attention whose threshold graph is, at every threshold, the one-way
    star of the in-edges of token 0 (and its self-loop): lambda2 = 0.5 in the faithful variants and 1 in the
    corrected one, in exact arithmetic, for every sentence length."""
    a = torch.tril(torch.full((L, H, n, n), LOW))
    a[..., 0] = 0.0
    a[..., 0] = 1.0 - a.sum(-1)
    return a


def _uniform(n: int) -> torch.Tensor:
    """``[layer, head, n, n]`` uniform causal attention: complete graphs at t = 0.001, lambda2 growing with n."""
    a = torch.tril(torch.ones(L, H, n, n))
    return a / a.sum(-1, keepdim=True)


def _contiguous(make) -> ModelResult:
    """Each sentence's contiguous attention through the reducer, as a model run gives it."""
    reducer = g.SpectralReducer(per_head=False)
    return sp.spectra_from_summaries(_record(), [reducer(make(n), True) for n in SIZES])


def _padded(make) -> ModelResult:
    """The same head-averaged matrices as a non-contiguous slice of one padded batch of every sentence's layers."""
    mats = [make(n).mean(1)[layer] for n in SIZES for layer in range(L)]
    padded, sizes = g.pad_square(mats)
    G, N, _ = padded.shape
    big = torch.zeros(G + 2, N + 3, N + 3)
    big[1:-1, :N, :N] = padded
    view = big[1:-1, :N, :N]
    assert not view.is_contiguous()
    out = g.threshold_graph_metrics(view, sizes, causal=True)  # [threshold, sentence x layer]
    values = {k: v.numpy().reshape(len(g.ALL_THRESHOLDS), len(SIZES), L).transpose(1, 0, 2) for k, v in out.items()}
    return sp.from_values(_record(), values, np.array(SIZES))


@pytest.mark.parametrize("layout", [_contiguous, _padded], ids=["contiguous", "padded-slice"])
def test_one_way_stars_have_a_constant_fiedler_value_that_is_not_correlated(layout):
    ms = layout(_star)
    fied, lam = ms.samples["fiedler/fiedler"], ms.samples["corrected/lambda2"]
    assert np.abs(fied - 0.5).max() < 1e-12 and np.abs(lam - 1.0).max() < 1e-12  # 0.5 and 1 up to round-off
    assert stats.constant_up_to_roundoff(fied, axis=0).all()

    # faithful (fiedler.ipynb): every row kept, no layer correlated, each counted and marked round-off only
    ff = sp.faithful_fiedler(ms)
    assert set(ff.metric) == set(VARYING) and set(ff.threshold) == set(g.FIEDLER_NOTEBOOK_THRESHOLDS)
    assert (ff["layers"] == 0).all() and ff["mean r (official)"].isna().all() and ff["mean p (official)"].isna().all()
    assert (ff["constant Fiedler layers"] == L).all() and ff["round-off only"].all()
    # faithful (laplacian.ipynb): the layer means are constant too, so no correlation across layers either
    fl = sp.faithful_laplacian(ms)["correlations"]
    assert fl["r across layers (faithful)"].isna().all()

    # corrected: no correlation across sentences nor across layers; the pairs whose metric varies are counted
    corr = sp.fiedler_correlations(ms, n_boot=50)
    assert corr["median r across sentences"].isna().all() and corr["r across layers"].isna().all()
    assert corr["low"].isna().all() and (corr["disconnected"] == 0).all()
    counts = corr.groupby("metric")["constant Fiedler layers"].unique()
    assert counts["centralization"].tolist() == [0]  # 1 for every star: constant, nothing to count
    assert all(counts[m].tolist() == [L] for m in ("gini", "star_likeness", "degree_variance"))

    # the verdicts read neither: the across-layer correlations are undefined in both modes
    for mode in ("faithful", "corrected"):
        est = MEASURES["spectral.r_fiedler_degree_variance_by_threshold"].fn(ms, mode)
        assert est is not None and math.isnan(est.value) and est.undetermined
        assert all(e.undetermined for _, e in est.part_estimates())

    note = spectral_report.roundoff_notes(sp.tabulate([ms]))
    n_pairs = len(VARYING) * len(g.FIEDLER_NOTEBOOK_THRESHOLDS) * L
    assert f"{n_pairs} layer-metric pairs" in note and "not correlated" in note
    assert f"{len(ff)} of its {len(ff)} metric x threshold means" in note


@pytest.mark.parametrize("layout", [_contiguous, _padded], ids=["contiguous", "padded-slice"])
def test_a_varying_fiedler_value_is_still_correlated(layout):
    ms = layout(_uniform)
    t = g.PAPER_THRESHOLDS[0]  # complete graphs: lambda2 = n (corrected), n / 2 (faithful)
    assert sp.at(ms, "corrected/lambda2", [t])[:, 0, 0] == pytest.approx(np.array(SIZES, float))
    ff = sp.faithful_fiedler(ms)
    row = ff[(ff.metric == "density") & (ff.threshold == t)].iloc[0]
    assert row["layers"] == L and row["constant Fiedler layers"] == 0 and not row["round-off only"]
    n = np.array(SIZES, float)
    assert row["mean r (official)"] == pytest.approx(np.corrcoef(n / 2, (n + 1) / (2 * n))[0, 1])  # density
    corr = sp.fiedler_correlations(ms, n_boot=50)
    row = corr[(corr.metric == "gini") & (corr.threshold == t)].iloc[0]
    assert np.isfinite(row["median r across sentences"]) and row["constant Fiedler layers"] == 0


def test_a_tiny_but_real_variation_is_correlated_and_round_off_is_not():
    rng = np.random.default_rng(0)
    S, T = 20, len(g.ALL_THRESHOLDS)
    metric = rng.uniform(0, 1, (S, T, L))
    values = {"fiedler/fiedler": 0.5 + 1e-9 * metric,  # a real difference, far above round-off
              **{f"fiedler/{m}": metric for m in VARYING}}
    ms = sp.from_values(_record(), values, np.full(S, 20))
    ff = sp.faithful_fiedler(ms)
    assert (ff["layers"] == L).all() and (ff["constant Fiedler layers"] == 0).all()
    assert ff["mean r (official)"].to_numpy() == pytest.approx(1.0)
    ms.samples["fiedler/fiedler"] = 0.5 + 1e-14 * rng.normal(size=(S, T, L))  # round-off of 0.5: about 100 ulps
    ff = sp.faithful_fiedler(ms)
    assert (ff["layers"] == 0).all() and (ff["constant Fiedler layers"] == L).all() and ff["round-off only"].all()
    # an empty graph's exact 0 is no round-off: the notebook skips that series as well
    ms.samples["fiedler/fiedler"] = np.zeros((S, T, L))
    ms.samples["fiedler/error"] = np.ones((S, T, L))
    ms.samples["fiedler/density"] = np.where(np.arange(S)[:, None, None] < S // 2, np.nan, metric)
    ff = sp.faithful_fiedler(ms)
    dens = ff[ff.metric == "density"]
    assert (dens["layers"] == 0).all() and (dens["constant Fiedler layers"] == 0).all()
    assert not dens["round-off only"].any()


def test_constant_up_to_roundoff():
    c = stats.constant_up_to_roundoff
    assert c(0.5 + np.array([0.0, 1.6e-14, -1e-14]))  # one-way stars
    assert c(np.array([0.0, 3e-13, -2e-13]))  # disconnected graphs: absolute below 1
    assert c(256 + np.array([0.0, 1e-12, -9e-13]))  # relative above 1: a complete graph's n
    assert not c(0.5 + np.array([0.0, 1e-9, 2e-9]))
    assert not c(np.array([1.0, np.nan, 1.0])) and c(np.array([]))
    assert c(np.array([[1.0, 1.0], [1.0, 2.0]])).tolist() == [True, False]
    assert c(np.array([[1.0, 1.0], [1.0, 2.0]]), axis=0).tolist() == [True, False]
