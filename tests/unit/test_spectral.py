"""Aggregation of threshold-graph metrics: corrected tables and the official notebooks' statistics."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sinkframes import stats
from sinkframes.analyses import spectral as sp
from sinkframes.metrics.graphs import ALL_THRESHOLDS, FIEDLER_NOTEBOOK_THRESHOLDS, PAPER_THRESHOLDS
from sinkframes.results import ModelResult

T = len(ALL_THRESHOLDS)


def spectra(values: dict[str, np.ndarray], n_layers: int, n_samples: int) -> ModelResult:
    rec = {"ref": "synthetic", "n_layers": n_layers, "causal": True}
    full = {k: np.broadcast_to(v, (n_samples, T, n_layers)).astype(float).copy() for k, v in values.items()}
    return sp.from_values(rec, full, np.full(n_samples, 20))


def test_middle_peak_is_found_with_its_factor():
    L, S = 9, 30
    rng = np.random.default_rng(0)
    profile = np.array([1, 1, 1, 3, 3, 3, 1.5, 1.5, 1.5])  # middle 3x early, 2x late
    lam = profile[None, None, :] + rng.normal(0, 0.05, (S, T, L))
    ms = spectra({"corrected/lambda2": lam}, L, S)
    peaks = sp.region_peaks(ms, "lambda2")
    assert (peaks["interval vs 1"] == "above 1").all()
    assert peaks["peak factor"].to_numpy() == pytest.approx(2.0, abs=0.05)
    assert (peaks["low"] < peaks["peak factor"]).all() and (peaks["peak factor"] < peaks["high"]).all()
    flat = spectra({"corrected/lambda2": np.ones(L) + rng.normal(0, 0.05, (S, T, L))}, L, S)
    assert (sp.region_peaks(flat, "lambda2")["interval vs 1"] != "above 1").all()


def test_correlations_across_layers_and_sentences():
    L, S = 12, 40
    rng = np.random.default_rng(1)
    lam = np.linspace(1, 5, L)[None, None, :] + rng.normal(0, 0.1, (S, T, L))
    values = {"corrected/lambda2": lam,
              "corrected/centralization": -lam,  # perfectly anti-correlated at every level
              "corrected/gini": lam.copy(),
              "corrected/star_composite": rng.normal(size=(S, T, L)),
              "corrected/degree_variance": np.where(np.arange(T)[None, :, None] < 3, lam, -lam)}
    corr = sp.fiedler_correlations(spectra(values, L, S))
    cen = corr[corr.metric == "centralization"]
    assert cen["r across layers"].to_numpy() == pytest.approx(-1.0)
    assert cen["median r across sentences"].to_numpy() == pytest.approx(-1.0)
    assert (cen["layers with r > 0"] == 0).all()
    flips = sp.sign_flips(corr)
    var = flips[flips.metric == "degree_variance"].iloc[0]
    assert var["sign changes"] == f"{PAPER_THRESHOLDS[2]:g} -> {PAPER_THRESHOLDS[3]:g}"
    assert flips[flips.metric == "gini"].iloc[0]["sign changes"] == "none"


def test_laplacian_gate():
    dens = np.array([0.01, 0.5, 0.99, 0.01, 0.01])[None, None, :]  # layers 0..4
    gate = sp.laplacian_gate(dens, 5)[0, 0]
    assert gate.tolist() == [True, True, False, False, True]  # layer 0 and 4 always, layer 1 effective


def test_snapshot_sizes():
    assert sp.snapshot_sizes(500) == [51, 101, 151, 201, 251, 301, 351, 401, 451, 500, 500]  # 11 entries per layer
    assert sp.snapshot_sizes(40) == [40, 40]


def test_official_trend_lists_mix_interim_snapshots():
    """The shallow-copy defect: region averages include means over the first 51, 101, ... samples."""
    L, S = 6, 120
    fied = np.zeros((S, T, L))
    fied[:60, :, 2:4] = 10.0  # only the early samples have a middle-layer peak
    ms = spectra({"laplacian/fiedler": fied, "laplacian/density": np.full((S, T, L), 0.5),
                  **{f"laplacian/{m}": np.ones((S, T, L))
                     for m in ("spectral_gap", "star_likeness", "gini", "centralization", "degree_variance")}},
                 L, S)
    ms.samples["laplacian/fiedler"] = fied + 1.0
    reg = sp.faithful_laplacian(ms)["regions"]
    row = reg[(reg.metric == "fiedler")].iloc[0]
    # final values: middle layers mean 1 + 10 * 60/120 = 6 against 1 -> factor 6
    assert row["peak factor (final values)"] == pytest.approx(6.0)
    # snapshots 51, 101, 120, 120 give middle means 11, 1+10*60/101, 6, 6 -> a larger factor
    mids = [11.0, 1 + 600 / 101, 6.0, 6.0]
    assert row["peak factor (official trend lists)"] == pytest.approx(np.mean(mids), rel=1e-6)
    assert row["verdict (official)"] == "CONFIRMED"


def test_thirds_verdict():
    assert sp._thirds_verdict(np.arange(6), np.array([1, 1, 4, 4, 2, 2.0])) == (2.0, "CONFIRMED")
    assert sp._thirds_verdict(np.arange(6), np.array([5, 5, 4, 4, 2, 2.0]))[1] == "PARTIAL"
    assert sp._thirds_verdict(np.arange(3), np.ones(3))[1] == "too few entries"


def test_faithful_fiedler_misaligns_after_empty_graphs():
    """fiedler.ipynb keeps a 0 Fiedler value for an empty graph but no metric value, then cuts the
    longer list: every later sample is paired with the wrong one."""
    L, S = 1, 6
    f = np.array([0.0, 1, 2, 3, 4, 5])
    c = np.array([np.nan, 1, 2, 3, 4, 5])  # sample 0 had an empty graph
    vals = {"fiedler/fiedler": f[:, None, None], "fiedler/centralization": c[:, None, None],
            "fiedler/star_likeness": f[:, None, None], "fiedler/degree_variance": c[:, None, None],
            "fiedler/density": c[:, None, None]}
    ms = spectra(vals, L, S)
    res = sp.faithful_fiedler(ms)
    row = res[(res.metric == "centralization") & (res.threshold == 0.5)].iloc[0]
    # paired: fiedler [0,1,2,3,4] with centralization [1,2,3,4,5]
    assert row["mean r (official)"] == pytest.approx(1.0)
    # with a linear series the shift happens to keep r; irregular series expose the misalignment
    f = np.array([0.0, 2, 7, 1, 8, 3])
    c2 = np.array([np.nan, 5, 1, 4, 2, 3])
    ms.samples["fiedler/fiedler"] = np.broadcast_to(f[:, None, None], (S, T, L)).copy()
    ms.samples["fiedler/centralization"] = np.broadcast_to(c2[:, None, None], (S, T, L)).copy()
    row = sp.faithful_fiedler(ms)
    r_official = row[(row.metric == "centralization") & (row.threshold == 0.5)].iloc[0]["mean r (official)"]
    assert r_official == pytest.approx(np.corrcoef(f[:5], c2[1:])[0, 1])
    assert r_official != pytest.approx(np.corrcoef(f[1:], c2[1:])[0, 1])
    assert set(res.threshold) == set(FIEDLER_NOTEBOOK_THRESHOLDS)


def test_bootstrap_columns_matches_single_column_mean():
    rng = np.random.default_rng(3)
    x = rng.normal(2.0, 1.0, size=(200, 3))
    x[0, 1] = np.nan
    mean, lo, hi = stats.bootstrap_mean_ci_columns(x, seed=1)
    assert mean == pytest.approx(np.nanmean(x, 0))
    assert (lo < mean).all() and (mean < hi).all()
    assert (hi - lo) == pytest.approx(2 * 1.96 / np.sqrt(200), rel=0.25)  # normal-theory width
    with pytest.raises(ValueError):
        stats.bootstrap_mean_ci_columns(np.zeros(5))


def test_tables_by_mode():
    L, S = 6, 10
    rng = np.random.default_rng(4)
    keys = [f"corrected/{m}" for m in ("lambda2", "lambda2_norm", "star_basic", "star_composite", "centralization",
                                       "degree_variance", "density_allowed", "gini")]
    keys += [f"laplacian/{m}" for m in ("fiedler", "spectral_gap", "star_likeness", "gini", "centralization",
                                        "degree_variance", "density")]
    keys += [f"fiedler/{m}" for m in ("fiedler", "star_likeness", "centralization", "degree_variance", "density")]
    ms = spectra({k: rng.uniform(0.1, 1, (S, T, L)) for k in keys}, L, S)
    corrected = ms.tables("corrected")
    faithful = ms.tables("faithful")
    assert set(corrected) == {"layers", "peaks", "correlations"}
    assert set(faithful) == {"layers", "effectiveness", "regions", "correlations", "fiedler"}
    assert set(faithful["fiedler"].threshold) == set(FIEDLER_NOTEBOOK_THRESHOLDS)
    assert set(corrected["peaks"].threshold) == set(PAPER_THRESHOLDS)
    # the registered builder is sp.tables with the analysis' seed; another seed moves only the intervals
    pd.testing.assert_frame_equal(corrected["layers"], sp.tables(ms, "corrected", seed=0)["layers"])
    other = sp.tables(ms, "corrected", seed=1)["layers"]
    assert other["mean"].equals(corrected["layers"]["mean"]) and not other["low"].equals(corrected["layers"]["low"])
    with pytest.raises(ValueError, match="mode"):
        sp.tables(ms, "exact")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="mode"):
        ms.tables("exact")  # type: ignore[arg-type]


def test_result_fields_and_cross_model_tables():
    L, S, H = 5, 8, 3
    rng = np.random.default_rng(6)
    keys = [f"corrected/{m}" for m in sp.LAYER_METRICS + ("gini",)]
    keys += [f"laplacian/{m}" for m in ("fiedler", "spectral_gap", "star_likeness", "gini", "centralization",
                                        "degree_variance", "density")]
    keys += [f"fiedler/{m}" for m in ("fiedler", "star_likeness", "centralization", "degree_variance", "density")]
    values = {k: rng.uniform(0.1, 1, (S, T, L)) for k in keys}
    star = rng.uniform(0, 1, (S, L, H))
    star[:, 0, 0] = np.nan  # a head never defined: its mean is NaN, without a warning
    ms = sp.from_values({"ref": "a", "n_layers": L, "causal": True}, {**values, "head/star_basic": star},
                        np.full(S, 12))
    assert ms.analysis == "spectral" and ms.n_sentences == S and ms.samples["n_tokens"].shape == (S,)
    assert sp.head_table(ms, "star_basic").shape == (L, H) and np.isnan(sp.head_table(ms, "star_basic")[0, 0])
    assert sp.head_table(ms, "star_basic")[1:] == pytest.approx(star[:, 1:].mean(0))
    # the per-layer table: corrected layer means at each paper threshold
    assert ms.layers["layer"].tolist() == list(range(L))
    t = PAPER_THRESHOLDS[2]
    assert ms.layers[f"lambda2@{t:g}"].to_numpy() == pytest.approx(sp.at(ms, "corrected/lambda2", [t])[:, 0].mean(0))
    other = sp.from_values({"ref": "b", "n_layers": L, "causal": False}, values, np.full(S, 12))
    tab = sp.tabulate([ms, other])
    assert tab.table("peaks", "corrected")["model"].unique().tolist() == ["a", "b"]
    pd.testing.assert_frame_equal(tab.per_model("faithful")[1]["regions"], other.tables("faithful")["regions"])
    assert tab.comparison["model"].unique().tolist() == ["a", "b"]
    with pytest.raises(ValueError, match="mode"):
        tab.table("layers", "official")  # type: ignore[arg-type]


def test_u_shape_is_a_middle_dip():
    L, S = 9, 30
    rng = np.random.default_rng(5)
    profile = np.array([4, 4, 4, 1, 1, 1, 2, 2, 2.0])  # middle at 1/4 of early and 1/2 of late
    ms = spectra({"corrected/lambda2": profile[None, None, :] + rng.normal(0, 0.05, (S, T, L))}, L, S)
    peaks = sp.region_peaks(ms, "lambda2")
    assert peaks["middle dip"].all() and (peaks["interval vs 1"] == "below 1").all()
    assert peaks["dip factor"].to_numpy() == pytest.approx(0.5, abs=0.03)
    hump = spectra({"corrected/lambda2": np.array([1, 1, 1, 3, 3, 3, 1, 1, 1.0])[None, None, :]
                    + rng.normal(0, 0.05, (S, T, L))}, L, S)
    assert not sp.region_peaks(hump, "lambda2")["middle dip"].any()
