"""Spectral graphs of thresholded attention (paper Sec. 4, 5.1-5.3, App. E-J): faithful and corrected.

``analyse_model`` streams the per-sample graph metrics of ``metrics.graphs.SpectralReducer``
through the cache into a ``ModelResult``: ``samples`` holds ``"<variant>/<metric>"`` ``[sample,
threshold, layer]`` (thresholds: ``ALL_THRESHOLDS``), ``"head/<metric>"`` ``[sample, layer, head]`` and
``n_tokens`` ``[sample]``; ``heads`` the per-head means over sentences; ``layers`` the corrected layer means
at every paper threshold. The rest turns them into tables (``result.tables(mode)``, :func:`tabulate`):

- **corrected**: the paper's thresholds, per-sentence values averaged with seeded bootstrap
  intervals over sentences, regions from ``stats.layer_regions`` (thirds by layer index), both
  kinds of Fiedler correlation under their own names;
- **faithful**: the two official notebooks' aggregations (``official_code_spec.md`` 3.3 and 4.3):
  the effectiveness gate with the ``layer % 4`` exception, trend lists contaminated by the interim
  snapshots (the shallow-copy defect), regions as thirds of those lists, across-layer
  correlations of layer means, and ``fiedler.ipynb``'s across-sample correlations on its
  threshold list with 0.5 for 0.05, misaligned after empty graphs, summarized by mean r and mean p.

In both modes a Fiedler value that is the same in every sentence (or layer) up to round-off
(``stats.ROUNDOFF_TOL``) is constant: no correlation is computed with it, and the tables count the
layer-metric pairs so left out (``constant Fiedler layers``, ``round-off only``).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd
import torch
from scipy import stats as sps

from .. import stats
from ..extraction import summarize
from ..metrics.graphs import (
    ALL_THRESHOLDS,
    FIEDLER_NOTEBOOK_THRESHOLDS,
    PAPER_THRESHOLDS,
    GraphVariant,
    SpectralReducer,
    graph_key,
)
from ..results import Analysis, ModelResult, Results, each_model, register, with_twin
from ..types import Mode, RunOptions, check_mode
from ..verdicts.measures import (
    DEPTH_NULLS,
    LAYER_SHAPES,
    MEASURES,
    Measure,
    MeasureFn,
    boot,
    measure,
    region_parts,
    seed_of,
    with_parts,
)
from ..verdicts.structureless import dense_attention, null_summaries, uniform_attention
from ..verdicts.verdict import Estimate

ANALYSIS = "spectral"

#: ``laplacian.ipynb`` computes the full metric set only on "effective" graphs or on every 4th layer
EFFECTIVE_DENSITY = (0.05, 0.95)
GATE_EVERY_LAYERS = 4
#: ``laplacian.ipynb`` dumps interim aggregates after these sample counts (then the final one)
SNAPSHOT_FIRST, SNAPSHOT_STEP = 51, 50
#: the four metrics both notebooks correlate with the Fiedler value
CORRELATED = ("gini", "star_likeness", "centralization", "degree_variance")
CORRECTED_CORRELATED = {"gini": "gini", "star_likeness": "star_composite", "centralization": "centralization",
                        "degree_variance": "degree_variance"}


#: the corrected metrics of the per-layer table and of ``tables(result, "corrected")["layers"]``
LAYER_METRICS = ("lambda2", "lambda2_norm", "star_basic", "star_composite", "centralization", "degree_variance",
                 "density_allowed")


def at(ms: ModelResult, name: str, thresholds: Sequence[float]) -> np.ndarray:
    """``[sample, len(thresholds), layer]`` values of ``name`` at the given thresholds."""
    idx = [ms.data["thresholds"].index(t) for t in thresholds]
    return ms.samples[name][:, idx]


def _head_means(values: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``"head/<metric>"`` ``[sample, layer, head]`` -> ``<metric>`` ``[layer, head]`` means over sentences."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a head with no defined value in any sentence: NaN
        return {k.split("/", 1)[1]: np.nanmean(v, 0) for k, v in values.items() if k.startswith("head/")}


def _layer_means(ms: ModelResult) -> pd.DataFrame:
    """One row per layer: the corrected metrics' means over sentences at each paper threshold (``<metric>@<t>``)."""
    present = [m for m in LAYER_METRICS if graph_key("corrected", m) in ms.samples]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # undefined in every sentence: NaN
        means = {m: np.nanmean(at(ms, graph_key("corrected", m), PAPER_THRESHOLDS), 0) for m in present}  # [t, layer]
    return pd.DataFrame({"layer": range(ms.n_layers),
                         **{f"{m}@{t:g}": means[m][i] for m in present for i, t in enumerate(PAPER_THRESHOLDS)}})


def spectra_from_summaries(record: dict[str, Any], summaries: list[dict[str, torch.Tensor]],
                           thresholds: tuple[float, ...] = ALL_THRESHOLDS) -> ModelResult:
    """Stack the reducer outputs of every sentence into a ``ModelResult``."""
    if not summaries:
        raise ValueError("no samples to aggregate")
    names = [k for k in summaries[0] if k != "n_tokens"]
    values = {k: torch.stack([s[k].double() for s in summaries]).numpy() for k in names}  # float64, as numpy
    return from_values(record, values, np.array([int(s["n_tokens"]) for s in summaries]), thresholds)


def from_values(record: dict[str, Any], values: dict[str, np.ndarray], n_tokens: np.ndarray,
                thresholds: tuple[float, ...] = ALL_THRESHOLDS) -> ModelResult:
    """A ``ModelResult`` from per-sentence values (``"<variant>/<metric>"`` ``[sample, threshold, layer]``,
    ``"head/<metric>"`` ``[sample, layer, head]``) and the token counts ``[sample]``."""
    ms = ModelResult(analysis=ANALYSIS, record=record, n_sentences=int(n_tokens.shape[0]),
                     heads=_head_means(values), samples={**values, "n_tokens": n_tokens},
                     data={"thresholds": tuple(thresholds)}, params={"seed": 0})
    ms.layers = _layer_means(ms)
    return ms


def analyse_model(ref: str, texts: list[str], opts: RunOptions | None = None, *, per_head: bool = True,
                  head_threshold: float = 0.05, seed: int = 0, twin: bool = False, **overrides: Any) -> ModelResult:
    """Threshold-graph metrics of ``ref`` on ``texts`` (one streamed pass, cached).

    ``per_head``/``head_threshold``: per-head metrics at that threshold; ``seed``: the tables' bootstrap
    seed; ``opts``/``overrides`` are run options (``batch_size=``, ``dtype=``, ...). All go to ``params``.
    ``twin``: also run the model's random-initialized twin (:func:`~sinkframes.results.with_twin`),
    the null of the depth and shape claims (layer metrics only).
    """
    o = RunOptions.build(opts, **overrides)
    ex = summarize(ref, texts, SpectralReducer(per_head=per_head, head_threshold=head_threshold), o)
    ms = spectra_from_summaries(ex.record, ex.summaries or [])
    ms.from_cache = ex.from_cache
    ms.params.update({"per_head": per_head, "head_threshold": head_threshold, "seed": seed, **asdict(o)})
    if not twin:
        return ms
    # the twin's nulls read layer metrics only: no per-head graphs (the layer metrics are the same either way)
    return with_twin(ms, lambda t: analyse_model(t, texts, o, per_head=False, head_threshold=head_threshold,
                                                 seed=seed))


def analyse(models: list[str], texts: list[str], opts: RunOptions | None = None, *, per_head: bool = True,
            head_threshold: float = 0.05, seed: int = 0, twin: bool = True, **overrides: Any) -> Results:
    """:func:`analyse_model` for each model (with its random-initialized twin unless ``twin`` is false), in
    order; a failing model is reported, not fatal (``each_model``)."""
    o = RunOptions.build(opts, **overrides)
    return each_model(
        models, lambda m: analyse_model(m, texts, o, per_head=per_head, head_threshold=head_threshold, seed=seed,
                                        twin=twin),
        ANALYSIS)


# ----------------------------------------------------------------------------- corrected


def layer_table(ms: ModelResult, metrics: Sequence[str], thresholds: Sequence[float] = PAPER_THRESHOLDS,
                seed: int = 0, n_boot: int = 1000) -> pd.DataFrame:
    """Long table of corrected layer means with 95 % bootstrap intervals over sentences.

    Columns: model, metric, threshold, layer, depth, region, mean, low, high.
    """
    rows = []
    L = ms.n_layers
    regions = stats.layer_regions(L)
    region = {layer: r for r, ls in regions.items() for layer in ls}
    for metric in metrics:
        x = at(ms, graph_key("corrected", metric), thresholds)  # [sample, t, layer]
        mean, lo, hi = stats.bootstrap_mean_ci_columns(x.reshape(x.shape[0], -1), n_boot=n_boot, seed=seed)
        shape = x.shape[1:]
        for (ti, layer), m, a, b in zip(np.ndindex(*shape), mean, lo, hi, strict=True):
            rows.append({"model": ms.ref, "metric": metric, "threshold": thresholds[ti], "layer": layer,
                         "depth": layer / max(1, L - 1), "region": region[layer], "mean": m, "low": a, "high": b})
    return pd.DataFrame(rows)


def _region_means(x: np.ndarray, n_layers: int) -> np.ndarray:
    """``[..., layer]`` -> ``[..., 3]`` means over early, middle, late layers."""
    regions = stats.layer_regions(n_layers)
    return np.stack([np.nanmean(x[..., regions[r]], axis=-1) if regions[r] else np.full(x.shape[:-1], np.nan)
                     for r in stats.REGIONS], axis=-1)


def _peak_factor(reg: np.ndarray) -> np.ndarray:
    """``min(middle / early, middle / late)``, the official notebook's middle-peak factor."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.minimum(reg[..., 1] / reg[..., 0], reg[..., 1] / reg[..., 2])


def _dip_factor(reg: np.ndarray) -> np.ndarray:
    """``max(middle / early, middle / late)``: below 1 when the middle layers sit under both ends."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.maximum(reg[..., 1] / reg[..., 0], reg[..., 1] / reg[..., 2])


def region_peaks(ms: ModelResult, metric: str, thresholds: Sequence[float] = PAPER_THRESHOLDS,
                 seed: int = 0, n_boot: int = 1000) -> pd.DataFrame:
    """Per threshold: early/middle/late means of a corrected metric and the middle-peak factor.

    The factor ``min(middle/early, middle/late)`` is computed from sentence means, with a bootstrap
    interval (sentences resampled) at level ``1 - 0.05 / len(thresholds)``: one test per threshold,
    Bonferroni-corrected, so that a statement "at some threshold" holds at 95 % jointly. The column
    ``interval vs 1`` describes where that interval lies ("above 1": a middle peak; "below 1"; "straddles
    1"); the registry's claims, not this table, give the verdicts. The mirror image, a U shape, uses the dip factor
    ``max(middle/early, middle/late)``: "middle dip" only when its whole interval lies below 1.
    """
    x = at(ms, graph_key("corrected", metric), thresholds)  # [sample, t, layer]
    S = x.shape[0]
    counts = stats.bootstrap_counts(S, n_boot, seed)  # [boot, sample]
    boot = (counts @ np.nan_to_num(x.reshape(S, -1)) / S).reshape(n_boot, *x.shape[1:])  # [boot, t, layer]
    reg = _region_means(np.nanmean(x, 0), ms.n_layers)  # [t, region]
    point = _peak_factor(reg)  # [t]
    dist = _peak_factor(_region_means(boot, ms.n_layers))  # [boot, t]
    dip_point = _dip_factor(reg)  # [t]
    dip_dist = _dip_factor(_region_means(boot, ms.n_layers))  # [boot, t]
    alpha = 0.05 / len(thresholds) / 2  # Bonferroni over the thresholds, two-sided
    q = [alpha, 1 - alpha]
    rows = []
    for i, t in enumerate(thresholds):
        lo, hi = np.nanquantile(dist[:, i], q) if np.isfinite(dist[:, i]).any() else (np.nan, np.nan)
        where = "above 1" if lo > 1 else ("below 1" if hi < 1 else "straddles 1")
        dlo, dhi = np.nanquantile(dip_dist[:, i], q) if np.isfinite(dip_dist[:, i]).any() else (np.nan, np.nan)
        rows.append({"model": ms.ref, "metric": metric, "threshold": t, "early": reg[i, 0], "middle": reg[i, 1],
                     "late": reg[i, 2], "peak factor": point[i], "low": lo, "high": hi, "interval vs 1": where,
                     "dip factor": dip_point[i], "dip low": dlo, "dip high": dhi, "middle dip": bool(dhi < 1)})
    return pd.DataFrame(rows)


def _pearson_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson r between matching rows of ``x`` and ``y`` ``[..., k]``: NaN when either is constant up to
    round-off (``stats.constant_up_to_roundoff``), and where either has a NaN."""
    xc = x - x.mean(-1, keepdims=True)
    yc = y - y.mean(-1, keepdims=True)
    den = np.sqrt((xc**2).sum(-1) * (yc**2).sum(-1))
    with np.errstate(divide="ignore", invalid="ignore"):
        r = (xc * yc).sum(-1) / den
    constant = stats.constant_up_to_roundoff(x) | stats.constant_up_to_roundoff(y)
    return np.where(constant | ~(den > 0), np.nan, r)


def _roundoff_pairs(fiedler: np.ndarray, metric: np.ndarray) -> np.ndarray:
    """Where the Fiedler series (rows ``[..., k]``) is constant up to round-off while the metric's is not:
    the pairs that only a correlation of the eigensolver's round-off would fill (none is computed)."""
    return stats.constant_up_to_roundoff(fiedler) & ~stats.constant_up_to_roundoff(metric)


def fiedler_correlations(ms: ModelResult, thresholds: Sequence[float] = PAPER_THRESHOLDS, seed: int = 0,
                         n_boot: int = 1000) -> pd.DataFrame:
    """Both kinds of Fiedler correlation, corrected definitions, at each threshold.

    - ``across layers``: Pearson over the ``L`` layer means (as in ``laplacian.ipynb``), with a
      bootstrap interval from resampling sentences;
    - ``across sentences``: Pearson over sentences within each layer (as in ``fiedler.ipynb``),
      summarized by the median over layers and the share of layers with r > 0.

    ``disconnected`` is the share of graphs (sentence x layer) at that threshold whose lambda2 is 0:
    their Fiedler value carries no information, and a correlation over them is undefined (NaN) when
    the series is constant. ``constant Fiedler layers`` counts the layers whose lambda2 is the same in
    every sentence up to round-off (``stats.ROUNDOFF_TOL``, at 0 or at any other value, such as 1 for
    one-way stars) while the metric varies: no correlation is computed there, since it would correlate
    the eigensolver's round-off, and the median leaves them out.
    """
    lam = at(ms, graph_key("corrected", "lambda2"), thresholds)  # [sample, t, layer]
    S = lam.shape[0]
    counts = stats.bootstrap_counts(S, n_boot, seed)  # [boot, sample]
    rows = []
    for name, metric in CORRECTED_CORRELATED.items():
        m = at(ms, graph_key("corrected", metric), thresholds)
        r_layers = _pearson_rows(np.nanmean(m, 0), np.nanmean(lam, 0))  # [t]
        bm = np.einsum("bs,stl->btl", counts, np.nan_to_num(m)) / S
        bl = np.einsum("bs,stl->btl", counts, np.nan_to_num(lam)) / S
        r_boot = _pearson_rows(bm, bl)  # [boot, t]
        r_samples = _pearson_rows(np.moveaxis(m, 0, -1), np.moveaxis(lam, 0, -1))  # [t, layer]
        roundoff = _roundoff_pairs(np.moveaxis(lam, 0, -1), np.moveaxis(m, 0, -1)).sum(-1)  # [t]
        for i, t in enumerate(thresholds):
            finite = r_boot[:, i][np.isfinite(r_boot[:, i])]
            lo, hi = np.quantile(finite, [0.025, 0.975]) if finite.size else (np.nan, np.nan)
            rs = r_samples[i][np.isfinite(r_samples[i])]
            rows.append({"model": ms.ref, "metric": name, "threshold": t,
                         "r across layers": r_layers[i], "low": lo, "high": hi,
                         "median r across sentences": np.median(rs) if rs.size else np.nan,
                         "layers with r > 0": float((rs > 0).mean()) if rs.size else np.nan,
                         "disconnected": float(np.mean(lam[:, i] <= 0)),
                         "constant Fiedler layers": int(roundoff[i])})
    return pd.DataFrame(rows)


def sign_flips(corr: pd.DataFrame, column: str = "r across layers") -> pd.DataFrame:
    """For each model and metric: the thresholds between which the correlation changes sign."""
    rows = []
    for (model, metric), g in corr.groupby(["model", "metric"], sort=False):
        g = g.sort_values("threshold")
        r, t = g[column].to_numpy(), g["threshold"].to_numpy()
        flips = [f"{t[i]:g} -> {t[i + 1]:g}" for i in range(len(r) - 1)
                 if np.isfinite(r[i]) and np.isfinite(r[i + 1]) and np.sign(r[i]) != np.sign(r[i + 1])]
        rows.append({"model": model, "metric": metric, "kind": column, "sign changes": ", ".join(flips) or "none",
                     "r at lowest t": r[0], "r at highest t": r[-1]})
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- faithful


def laplacian_gate(density: np.ndarray, n_layers: int) -> np.ndarray:
    """``[sample, t, layer]`` bool: where ``laplacian.ipynb`` computes the full metric set.

    Effective density ``0.05 <= rho <= 0.95``, or a layer index divisible by 4.
    """
    lo, hi = EFFECTIVE_DENSITY
    every = (np.arange(n_layers) % GATE_EVERY_LAYERS == 0)[None, None, :]
    return ((density >= lo) & (density <= hi)) | every


def snapshot_sizes(n_samples: int) -> list[int]:
    """Sample counts of the interim aggregates (51, 101, ... below ``n``, then ``n``) plus the final one."""
    sizes = list(range(SNAPSHOT_FIRST, n_samples, SNAPSHOT_STEP))
    return sizes + [n_samples, n_samples]


def faithful_laplacian(ms: ModelResult, thresholds: Sequence[float] = PAPER_THRESHOLDS) -> dict[str, pd.DataFrame]:
    """``laplacian.ipynb``'s aggregation of the per-sample values.

    Returns ``layers`` (gated layer means), ``effectiveness`` (per threshold), ``regions`` (the
    report's middle-peak verdicts on trend lists contaminated by the interim snapshots, and the
    same verdict on final values only) and ``correlations`` (across-layer Pearson of layer means;
    ``round-off only`` where the layer-mean Fiedler value is the same in every layer up to round-off
    while the metric varies: no r here, and the notebook's own r there correlates round-off).
    """
    L = ms.n_layers
    dens = at(ms, graph_key("laplacian", "density"), thresholds)  # [sample, t, layer]
    gate = laplacian_gate(dens, L)
    metrics = ("fiedler", "spectral_gap", "star_likeness", "gini", "centralization", "degree_variance")
    gated = {m: np.where(gate, at(ms, graph_key("laplacian", m), thresholds), np.nan) for m in metrics}
    with np.errstate(invalid="ignore"):
        means = {m: np.nanmean(v, 0) for m, v in gated.items()}  # [t, layer]
    rows = []
    for i, t in enumerate(thresholds):
        for layer in range(L):
            rows.append({"model": ms.ref, "threshold": t, "layer": layer, "samples": int(gate[:, i, layer].sum()),
                         "density": float(dens[:, i, layer].mean()), **{m: means[m][i, layer] for m in metrics}})
    layers = pd.DataFrame(rows)

    mean_density = dens.mean(0)  # [t, layer]
    eff = (mean_density >= EFFECTIVE_DENSITY[0]) & (mean_density <= EFFECTIVE_DENSITY[1])
    score = eff.mean(-1)
    effectiveness = pd.DataFrame({"model": ms.ref, "threshold": list(thresholds), "effective layers": eff.sum(-1),
                                  "effectiveness score": score,
                                  "best": [i == int(np.argmax(score)) for i in range(len(thresholds))]})

    sizes = snapshot_sizes(ms.n_sentences)
    reg_rows = []
    for m in ("fiedler", "star_likeness", "gini", "centralization", "degree_variance"):
        with np.errstate(invalid="ignore"):
            snaps = np.stack([np.nanmean(gated[m][:k], 0) for k in sizes], 0)  # [snapshot, t, layer]
        for i, t in enumerate(thresholds):
            contaminated = _thirds_verdict(np.repeat(np.arange(L), len(sizes)), snaps[:, i].T.reshape(-1))
            final = _thirds_verdict(np.arange(L), means[m][i])
            reg_rows.append({"model": ms.ref, "metric": m, "threshold": t,
                             "peak factor (official trend lists)": contaminated[0],
                             "verdict (official)": contaminated[1],
                             "peak factor (final values)": final[0], "verdict (final values)": final[1]})
    regions = pd.DataFrame(reg_rows)

    corr_rows = []
    for m in CORRELATED:
        r = _pearson_rows(means[m], means["fiedler"])  # [t]
        roundoff = _roundoff_pairs(means["fiedler"], means[m])  # [t]
        for i, t in enumerate(thresholds):
            corr_rows.append({"model": ms.ref, "metric": m, "threshold": t, "r across layers (faithful)": r[i],
                              "round-off only": bool(roundoff[i])})
    return {"layers": layers, "effectiveness": effectiveness, "regions": regions,
            "correlations": pd.DataFrame(corr_rows)}


def _thirds_verdict(layer_of_entry: np.ndarray, values: np.ndarray) -> tuple[float, str]:
    """The report's region rule on a layer-sorted trend list: thirds of the entries, then
    CONFIRMED (middle above both), PARTIAL (above one) or NOT CONFIRMED."""
    order = np.argsort(layer_of_entry, kind="stable")
    v = values[order]
    v = v[np.isfinite(v)]
    k = v.size
    if k < 5:
        return float("nan"), "too few entries"
    early, middle, late = v[: k // 3].mean(), v[k // 3 : 2 * k // 3].mean(), v[2 * k // 3 :].mean()
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = float(min(middle / early, middle / late))
    above = int(middle > early) + int(middle > late)
    return factor, {2: "CONFIRMED", 1: "PARTIAL", 0: "NOT CONFIRMED"}[above]


def faithful_fiedler(ms: ModelResult, thresholds: Sequence[float] = FIEDLER_NOTEBOOK_THRESHOLDS) -> pd.DataFrame:
    """``fiedler.ipynb``'s statistics: per layer, Pearson across samples between the Fiedler value and
    each metric; empty-graph samples keep their 0 Fiedler value but have no metric, so the two lists
    are cut to the shorter length (misaligned); the overall value is the mean r and the mean p.

    The notebook skips a layer only when a series is exactly constant. A Fiedler value that is the same
    in every sample up to round-off (``stats.ROUNDOFF_TOL``: 0 on disconnected graphs, 0.5 on one-way
    stars, ...) reaches it as the eigensolver's noise, which it correlates; such a layer is skipped here
    and counted in ``constant Fiedler layers`` (``layers`` counts the layers correlated). ``round-off
    only`` marks the rows whose official mean r and mean p would be made of such layers alone: numbers
    that depend on the LAPACK build and the memory layout, which nothing here reproduces. A row with
    constant Fiedler layers that is not round-off only has the official mean over its other layers,
    where the notebook's own mean also takes in the round-off correlations.
    """
    L = ms.n_layers
    fied = at(ms, graph_key("fiedler", "fiedler"), thresholds)  # [sample, t, layer]
    # an empty graph's 0 is exact in the notebook too (no eigensolver): a series of those is skipped there
    error = graph_key("fiedler", "error")
    empty = at(ms, error, thresholds) > 0 if error in ms.samples else np.zeros(fied.shape, bool)
    rows = []
    for name, key in (("star_likeness", "star_likeness"), ("centralization", "centralization"),
                      ("degree_variance", "degree_variance"), ("density", "density")):
        vals = at(ms, graph_key("fiedler", key), thresholds)
        for i, t in enumerate(thresholds):
            rs, ps = [], []
            roundoff = 0
            for layer in range(L):
                f = fied[:, i, layer]
                v = vals[:, i, layer]
                v = v[np.isfinite(v)]  # samples with an empty graph append no value
                k = min(len(f), len(v))
                if k < 3 or stats.constant_up_to_roundoff(v[:k]):
                    continue
                if stats.constant_up_to_roundoff(f[:k]):
                    roundoff += int(not empty[:k, i, layer].all())
                    continue
                r, p = sps.pearsonr(f[:k], v[:k])
                rs.append(r)
                ps.append(p)
            rows.append({"model": ms.ref, "metric": name, "threshold": t, "layers": len(rs),
                         "mean r (official)": np.mean(rs) if rs else np.nan,
                         "mean p (official)": np.mean(ps) if ps else np.nan,
                         "constant Fiedler layers": roundoff, "round-off only": bool(roundoff and not rs)})
    return pd.DataFrame(rows)


def faithful_vs_corrected(ms: ModelResult, faithful: dict[str, pd.DataFrame],
                          corrected: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Headline quantities side by side, at every threshold either version uses.

    ``faithful`` and ``corrected`` are ``tables(ms, mode)`` of the same model. Columns: the
    algebraic connectivity (mean over layers and sentences), the middle-peak factor of the Fiedler
    value, the star-likeness and the Fiedler-centralization correlation across layers.
    """
    fl, ff = faithful, faithful["fiedler"]
    peaks, corr = corrected["peaks"], corrected["correlations"]
    rows = []
    for t in sorted(set(PAPER_THRESHOLDS) | set(FIEDLER_NOTEBOOK_THRESHOLDS)):
        row: dict[str, Any] = {"model": ms.ref, "threshold": t,
                               "in paper list": t in PAPER_THRESHOLDS,
                               "in fiedler.ipynb list": t in FIEDLER_NOTEBOOK_THRESHOLDS}
        if t in PAPER_THRESHOLDS:
            lay = fl["layers"][fl["layers"].threshold == t]
            reg = fl["regions"][(fl["regions"].metric == "fiedler") & (fl["regions"].threshold == t)].iloc[0]
            fc = fl["correlations"]
            cor = fc[(fc.metric == "centralization") & (fc.threshold == t)].iloc[0]
            pk = peaks[peaks.threshold == t].iloc[0]
            cc = corr[(corr.metric == "centralization") & (corr.threshold == t)].iloc[0]
            row.update({
                "Fiedler (faithful)": float(np.nanmean(lay["fiedler"])),
                "lambda2 (corrected)": float(np.nanmean(at(ms, graph_key("corrected", "lambda2"), [t]))),
                "lambda2 / n (corrected)": float(np.nanmean(at(ms, graph_key("corrected", "lambda2_norm"), [t]))),
                "middle peak (faithful)": reg["peak factor (official trend lists)"],
                "middle peak (corrected)": pk["peak factor"],
                "star-likeness composite (faithful)": float(np.nanmean(lay["star_likeness"])),
                "star-likeness basic (corrected)": float(np.nanmean(at(ms, graph_key("corrected", "star_basic"), [t]))),
                "r(Fiedler, centralization) across layers (faithful)": cor["r across layers (faithful)"],
                "r(lambda2, centralization) across layers (corrected)": cc["r across layers"],
            })
        if t in FIEDLER_NOTEBOOK_THRESHOLDS:
            g = ff[(ff.metric == "centralization") & (ff.threshold == t)].iloc[0]
            row["mean r across samples (fiedler.ipynb)"] = g["mean r (official)"]
        rows.append(row)
    return pd.DataFrame(rows)


def head_table(ms: ModelResult, metric: str) -> np.ndarray:
    """``[layer, head]`` mean over sentences of a per-head corrected metric (at the reducer's head threshold)."""
    return ms.heads[metric]


def tables(ms: ModelResult, mode: Mode = "corrected", seed: int | None = None) -> dict[str, pd.DataFrame]:
    """Every table of one model under one mode (``seed``: the bootstrap seed, default the analysis' own).

    ``corrected``: ``layers`` (layer means with intervals for the main metrics), ``peaks``
    (middle-layer factor of lambda2) and ``correlations`` (both kinds, paper thresholds).
    ``faithful``: ``laplacian.ipynb``'s ``layers``, ``effectiveness``, ``regions`` and
    ``correlations``, plus ``fiedler`` (``fiedler.ipynb``'s summary on its own threshold list).
    """
    mode = check_mode(mode)
    seed = int(ms.params.get("seed", 0)) if seed is None else seed
    if mode == "faithful":
        return {**faithful_laplacian(ms), "fiedler": faithful_fiedler(ms)}
    return {"layers": layer_table(ms, LAYER_METRICS, seed=seed),
            "peaks": region_peaks(ms, "lambda2", seed=seed), "correlations": fiedler_correlations(ms, seed=seed)}




@dataclass
class SpectralTables:
    """Every table of the chapter for several models, each computed once."""

    models: list[ModelResult]
    by_mode: dict[Mode, list[dict[str, pd.DataFrame]]]  # mode -> tables(ms, mode) per model
    flips: pd.DataFrame  # sign changes of both kinds of Fiedler correlation
    comparison: pd.DataFrame  # faithful_vs_corrected for every model

    def per_model(self, mode: Mode) -> list[dict[str, pd.DataFrame]]:
        """``tables(ms, mode)`` of each model, in order."""
        return self.by_mode[check_mode(mode)]

    def table(self, name: str, mode: Mode) -> pd.DataFrame:
        """One table of every model, one frame: ``corrected`` has ``layers``, ``peaks``, ``correlations``;
        ``faithful`` has ``layers``, ``effectiveness``, ``regions``, ``correlations``, ``fiedler``."""
        return pd.concat([t[name] for t in self.per_model(mode)], ignore_index=True)


def tabulate(models: Sequence[ModelResult], seed: int | None = None) -> SpectralTables:
    """Both modes' tables for every model, the sign changes and the side-by-side comparison
    (``seed``: the bootstrap seed, default each model's own)."""
    by_mode: dict[Mode, list[dict[str, pd.DataFrame]]] = {mode: [tables(ms, mode, seed=seed) for ms in models]
                                                          for mode in ("corrected", "faithful")}
    corrected, faithful = by_mode["corrected"], by_mode["faithful"]
    corr = pd.concat([c["correlations"] for c in corrected], ignore_index=True)
    flips = pd.concat([sign_flips(corr), sign_flips(corr, "median r across sentences")], ignore_index=True)
    comparison = pd.concat([faithful_vs_corrected(ms, f, c)
                            for ms, f, c in zip(models, faithful, corrected, strict=True)], ignore_index=True)
    return SpectralTables(list(models), by_mode, flips, comparison)


def on_uniform_attention(result: ModelResult, record: dict[str, Any], seed: int, graph: str = "dense") -> ModelResult:
    """The layer graph metrics of ``result``'s shapes on the dense graph (``graph="dense"``: every allowed edge at
    every threshold) or on uniform attention thresholded like the model's (``"uniform"``): the verdicts' nulls."""
    make = dense_attention if graph == "dense" else uniform_attention
    r = spectra_from_summaries(record, null_summaries(result, SpectralReducer(per_head=False), make))
    r.params.update(seed=seed, null="dense graph" if graph == "dense" else "uniform attention")
    return r

# ---------------------------------------------------------------------- measures the verdicts read
# Each is registered in :data:`sinkframes.verdicts.measures.MEASURES` under the name a claim of
# ``paper.claims`` reads; see that module for the bootstrap and the nulls.

def _variant(mode: Mode) -> str:
    return "laplacian" if mode == "faithful" else "corrected"


#: the graph metric each measure reads, per mode: the faithful variant is ``laplacian.ipynb``'s
_SPECTRAL_NAMES: dict[tuple[Mode, str], tuple[GraphVariant, str]] = {
    ("faithful", "fiedler"): ("laplacian", "fiedler"), ("corrected", "fiedler"): ("corrected", "lambda2"),
    ("faithful", "star"): ("laplacian", "star_likeness"), ("corrected", "star"): ("corrected", "star_composite"),
    ("faithful", "centralization"): ("laplacian", "centralization"),
    ("corrected", "centralization"): ("corrected", "centralization"),
    ("faithful", "degree_variance"): ("laplacian", "degree_variance"),
    ("corrected", "degree_variance"): ("corrected", "degree_variance"),
    ("faithful", "density"): ("laplacian", "density"), ("corrected", "density"): ("corrected", "density_allowed"),
}


def _graph(r: ModelResult, mode: Mode, metric: str) -> np.ndarray:
    """``[sample, threshold, layer]`` of ``metric`` at the paper's thresholds."""
    from ..metrics.graphs import PAPER_THRESHOLDS

    return at(r, graph_key(*_SPECTRAL_NAMES[(mode, metric)]), PAPER_THRESHOLDS)


def _thr_mean(x: np.ndarray) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(x, axis=1)  # [sample, layer]


@measure("spectral.star_likeness", "spectral", extra_nulls=("uniform_graph",))
def star_likeness(r: ModelResult, mode: Mode) -> Estimate | None:
    return boot(_thr_mean(_graph(r, mode, "star")), lambda m: float(np.nanmean(m)), seed_of(r))


@measure("spectral.centralization", "spectral")
def centralization(r: ModelResult, mode: Mode) -> Estimate | None:
    return boot(_thr_mean(_graph(r, mode, "centralization")), lambda m: float(np.nanmean(m)), seed_of(r))


#: a ratio of region means: ``{"early", "middle", "late"} -> [..., threshold]`` arrays in, ``[..., threshold]`` out
Combine = Callable[[dict[str, np.ndarray]], np.ndarray]


def _ratio_stat(n_layers: int, combine: Combine) -> Callable[[np.ndarray], Any]:
    """Statistic of ``[threshold, layer]`` means: ``combine`` of the region means at each threshold (a
    ratio, so that every threshold weighs the same whatever its scale), combined over the thresholds where it is
    defined by the geometric mean (the mean of the log-ratios): a ratio of 2 and one of 1/2 cancel, as they
    should, where an arithmetic mean would read 1.25.

    Batched (``boot`` calls it once on every resample's means, ``[boot, threshold, layer] -> [boot]``): a
    region's mean is a ``nanmean`` over its layers, summed along a contiguous last axis as it was row by row, so
    each resample gets the value the one-at-a-time statistic gave (``tests/unit/test_spectral_ratio_batched.py``)."""
    reg = stats.layer_regions(n_layers)

    def stat(m: np.ndarray) -> np.ndarray:
        m = np.asarray(m, dtype=float)  # [..., threshold, layer]
        nan = np.full(m.shape[:-1], math.nan)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN regions and 0/0: NaN, as intended
            # a contiguous copy, so that each region is summed as one row (the order a row-by-row mean sums in)
            g = {k: np.nanmean(np.ascontiguousarray(m[..., v]), axis=-1) if v else nan
                 for k, v in reg.items()}  # [..., threshold]
            v = np.asarray(combine(g), dtype=float)  # [..., threshold]
            ok = np.isfinite(v) & (v > 0)
            logs = np.where(ok, np.log(np.where(ok, v, 1.0)), 0.0)  # a left-out threshold adds an exact 0
            count = ok.sum(-1)
            return np.where(count > 0, np.exp(logs.sum(-1) / np.maximum(count, 1)), math.nan)  # [...]

    stat.batched = True  # type: ignore[attr-defined]
    return stat


def _div(a: np.ndarray | float, b: np.ndarray | float) -> np.ndarray:
    """``a / b`` where ``b > 0`` and both are finite, NaN elsewhere (element-wise)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where((b > 0) & np.isfinite(a) & np.isfinite(b), a / np.where(b > 0, b, 1.0), math.nan)


def _first_min(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Python's ``min(a, b)`` element-wise: ``b`` only where it is smaller, so a NaN in ``a`` stays."""
    return np.where(b < a, b, a)


def _ratio_measure(name: str, metric: str, combine: Combine, what: str) -> None:
    """A region ratio of a graph metric per paper threshold, its geometric mean over thresholds, with the layer-order
    null and one interval per threshold (so that a profile that reverses at some thresholds shows it)."""
    from ..metrics.graphs import PAPER_THRESHOLDS

    def shape(r: ModelResult, mode: Mode) -> tuple[np.ndarray, Callable[[np.ndarray], float]]:
        return _graph(r, mode, metric), _ratio_stat(r.n_layers, combine)  # [sample, threshold, layer]

    def fn(r: ModelResult, mode: Mode) -> Estimate | None:
        x, stat = shape(r, mode)
        est = boot(x, stat, seed_of(r))
        parts: list[list[Any]] = []
        below: list[str] = []
        above: list[str] = []
        for i, t in enumerate(PAPER_THRESHOLDS):
            e = boot(x[:, i : i + 1], stat, seed_of(r) + i + 1)
            parts.append([f"{t:g}", e.value, e.low, e.high])
            v = float(e.value)
            if not math.isnan(v):
                (above if v >= 1 else below).append(f"{t:g}")
        detail = (f"{what}, geometric mean over thresholds of the per-threshold ratio; ratio >= 1 at t = "
                  f"{', '.join(above) or 'none'}, < 1 at t = {', '.join(below) or 'none'}")
        return Estimate(est.value, est.low, est.high, est.n, est.interval, detail, est.undetermined, parts)

    MEASURES[name] = Measure(name, "spectral", fn, "attention", DEPTH_NULLS)
    LAYER_SHAPES[name] = shape


def _middle_peak(g: dict[str, np.ndarray]) -> np.ndarray:
    """min(middle / early, middle / late): above 1 when the middle third peaks."""
    return _first_min(_div(g["middle"], g["early"]), _div(g["middle"], g["late"]))


_ratio_measure("spectral.lambda2_peak_ratio", "fiedler", _middle_peak,
               "min(middle / early, middle / late) of the layer-mean algebraic connectivity")
_ratio_measure("spectral.lambda2_dip_ratio", "fiedler",
               lambda g: _first_min(_div(g["early"], g["middle"]), _div(g["late"], g["middle"])),
               "min(early / middle, late / middle) of the layer-mean algebraic connectivity")
_ratio_measure("spectral.lambda2_middle_over_early", "fiedler", lambda g: _div(g["middle"], g["early"]),
               "middle / early layer-mean algebraic connectivity")
_ratio_measure("spectral.lambda2_late_over_early", "fiedler", lambda g: _div(g["late"], g["early"]),
               "late / early layer-mean algebraic connectivity")
_ratio_measure("spectral.star_peak_ratio", "star", _middle_peak,
               "min(middle / early, middle / late) of the layer-mean star-likeness")
_ratio_measure("spectral.centralization_peak_ratio", "centralization", _middle_peak,
               "min(middle / early, middle / late) of the layer-mean degree centralization")


@measure("spectral.star_likeness_layers", "spectral", extra_nulls=("uniform_graph",))
def star_likeness_layers(r: ModelResult, mode: Mode) -> Estimate | None:
    """Star-likeness per layer (mean over the paper's thresholds), one interval per layer: "above 0.53
    across layers" is refuted by one layer below."""
    x = _thr_mean(_graph(r, mode, "star"))  # [sample, layer]
    parts = region_parts(x, {f"layer {i}": [i] for i in range(x.shape[1])}, seed_of(r))
    whole = boot(x, lambda m: float(np.nanmin(m)), seed_of(r))
    return with_parts(whole, parts, detail="the lowest layer mean is the value")


@measure("spectral.centralization_middle_max", "spectral", extra_nulls=("random_twin",))
def centralization_middle_max(r: ModelResult, mode: Mode) -> Estimate | None:
    """The largest middle-layer mean degree centralization (mean over the paper's thresholds)."""
    x = _thr_mean(_graph(r, mode, "centralization"))  # [sample, layer]
    mid = stats.layer_regions(r.n_layers)["middle"]
    if not mid:
        return None
    return boot(x[:, mid], lambda m: float(np.nanmax(m)), seed_of(r))


def _pearson(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson r of two series, NaN when either is constant up to round-off (``stats.ROUNDOFF_TOL``) or
    has fewer than three finite points."""
    ok = ~(np.isnan(a) | np.isnan(b))
    a, b = a[ok], b[ok]
    if a.size < 3 or stats.constant_up_to_roundoff(a) or stats.constant_up_to_roundoff(b):
        return math.nan
    return float(np.corrcoef(a, b)[0, 1])


def _layer_corr(other: str) -> MeasureFn:
    def fn(r: ModelResult, mode: Mode) -> Estimate | None:
        f, o = _graph(r, mode, "fiedler"), _graph(r, mode, other)  # [sample, threshold, layer]
        x = np.concatenate([f, o], axis=1)  # [sample, 2 * threshold, layer]
        k = f.shape[1]

        def stat(m: np.ndarray) -> float:
            rs = [_pearson(m[i], m[k + i]) for i in range(k)]
            return float(np.nanmean(rs)) if not all(math.isnan(v) for v in rs) else math.nan

        return boot(x, stat, seed_of(r))

    return fn


def _threshold_correlations(r: ModelResult, mode: Mode, other: str) -> list[tuple[float, Estimate]]:
    """``(threshold, estimate)`` of the across-layer Fiedler-``other`` correlation at each paper threshold,
    each interval Bonferroni-widened over the seven thresholds (each at 1 - 0.05/7)."""
    from ..metrics.graphs import PAPER_THRESHOLDS

    f, o = _graph(r, mode, "fiedler"), _graph(r, mode, other)  # [sample, threshold, layer]
    level = 1 - 0.05 / len(PAPER_THRESHOLDS)
    return [(t, boot(np.concatenate([f[:, i], o[:, i]], axis=1), _split_pearson(f.shape[2]), seed_of(r) + i,
                     level=level))  # [sample, 2 * layer]
            for i, t in enumerate(PAPER_THRESHOLDS)]


def _corr_by_threshold(other: str) -> MeasureFn:
    """The across-layer correlation at each paper threshold, each with its own interval (Bonferroni over
    the seven thresholds), as parts: a sign claim is decided at the thresholds it names."""
    def fn(r: ModelResult, mode: Mode) -> Estimate | None:
        parts: list[list[Any]] = [[f"{t:g}", e.value, e.low if not e.undetermined else math.nan,
                                   e.high if not e.undetermined else math.nan]
                                  for t, e in _threshold_correlations(r, mode, other)]
        whole = _layer_corr(other)(r, mode)
        assert whole is not None
        return Estimate(whole.value, whole.low, whole.high, whole.n,
                        "per threshold: 99.3 % bootstrap over sentences (Bonferroni over 7)",
                        "r across layers at each threshold; the value is their mean", whole.undetermined, parts)

    return fn


MEASURES["spectral.r_fiedler_centralization_by_threshold"] = Measure(
    "spectral.r_fiedler_centralization_by_threshold", "spectral", _corr_by_threshold("centralization"))
MEASURES["spectral.r_fiedler_degree_variance_by_threshold"] = Measure(
    "spectral.r_fiedler_degree_variance_by_threshold", "spectral", _corr_by_threshold("degree_variance"))


def _split_pearson(n_layers: int) -> Callable[[np.ndarray], float]:
    """Pearson r of the two halves (``[:n_layers]``, ``[n_layers:]``) of a layer vector pair."""
    return lambda m: _pearson(m[:n_layers], m[n_layers:])


@measure("spectral.flip_threshold", "spectral")
def flip_threshold(r: ModelResult, mode: Mode) -> Estimate | None:
    """Where the across-layer Fiedler-centralization correlation changes sign: the thresholds on either
    side of the first change between correlations whose intervals exclude 0 (NaN: no change). The
    seven intervals are Bonferroni-widened (each at 1 - 0.05/7), so that a sign settled at any threshold
    is settled at 95 % jointly."""
    from ..metrics.graphs import PAPER_THRESHOLDS

    signs = []
    parts = []
    corr = _threshold_correlations(r, mode, "centralization")
    for t, est in corr:
        lo, hi = est.bounds()
        s = 0 if est.undetermined or (lo <= 0 <= hi) else (1 if lo > 0 else -1)
        signs.append(s)
        parts.append(f"{t:g}: {est.text()}")
    detail = "r across layers by threshold: " + "; ".join(parts)
    settled = [(t, s) for t, s in zip(PAPER_THRESHOLDS, signs, strict=True) if s != 0]
    n = corr[0][1].n  # sentences
    for (t0, s0), (t1, s1) in zip(settled, settled[1:], strict=False):
        if s0 != s1:
            return Estimate(t1, t0, t1, n=n, interval="thresholds bracketing the change (Bonferroni over 7)",
                            detail=detail)
    if len(settled) == len(signs):
        return Estimate(math.nan, n=n, interval="thresholds bracketing the change", detail="no change; " + detail)
    return Estimate(math.nan, n=n, interval="thresholds bracketing the change", undetermined=True,
                    detail=f"{len(signs) - len(settled)} of {len(signs)} correlations straddle 0; " + detail)


@measure("spectral.largest_effective_threshold", "spectral")
def largest_effective_threshold(r: ModelResult, mode: Mode) -> Estimate | None:
    """The largest paper threshold at which most layers' mean density lies in [0.05, 0.95]."""
    from ..metrics.graphs import PAPER_THRESHOLDS

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        d = np.nanmean(_graph(r, mode, "density"), axis=0)  # [threshold, layer]
    ok = ((d >= EFFECTIVE_DENSITY[0]) & (d <= EFFECTIVE_DENSITY[1])).mean(1) > 0.5  # [threshold]
    eff = [t for t, o in zip(PAPER_THRESHOLDS, ok, strict=True) if o]
    return Estimate(max(eff) if eff else math.nan, n=r.n_sentences, interval="none (a threshold)",
                    detail=f"effective at t = {', '.join(f'{t:g}' for t in eff) or 'none'}")


SPEC = register(Analysis(ANALYSIS, __name__, analyse=analyse, tables=tables, on_uniform_attention=on_uniform_attention,
                          attention_null_name="dense graph", family_order=2, family_params=("seed",)))
