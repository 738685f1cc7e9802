"""The quantity behind each claim, measured on an analysis result under one mode.

A measure is ``fn(result, mode) -> Estimate | None``: ``faithful`` is the authors' computation,
``corrected`` the book's; ``None`` means the mode has no such computation (no official notebook
computes it). Intervals are 95 % percentile bootstraps over sentences of the whole statistic
(a maximum over layers is bootstrapped as a maximum), unless the estimate says otherwise.

Measures of attention analyses get their null by running on :func:`nulls.null_result`; the others
(Fisher, the output check, the value space) carry their own null in :data:`NULLS`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import stats
from ..analyses.base import ModelResult
from ..types import Mode
from .verdict import Estimate

N_BOOT = 1000
#: values of the resampled array built at once by :func:`boot` (about 128 MB of float64)
BOOT_CHUNK_VALUES = 2**24
BOOT = "95 % bootstrap over sentences"
#: :func:`boot` evaluates the statistic once per distinct resample when there are fewer than this many times
#: ``n_boot`` possible resamples (``n ** n`` for ``n`` sentences: up to 5 sentences at 1000 draws)
DEDUP_RESAMPLES = 10
LAYER_RANGE = "range of the layer means"
NO_INTERVAL = "none (a population value)"

MeasureFn = Callable[[ModelResult, Mode], "Estimate | None"]


@dataclass(frozen=True)
class Measure:
    """A named quantity: the analysis it reads, how it is computed, and how its null is made."""

    name: str
    analysis: str
    fn: MeasureFn
    null: str = "attention"  # "attention": the same fn on uniform attention; else a key of NULLS
    #: further nulls run beside the first: ``"layer_order"`` (the model's own layers in random orders,
    #: :func:`layer_order_null`), ``"uniform_graph"`` (thresholded uniform attention) or keys of NULLS
    extra_nulls: tuple[str, ...] = ()


MEASURES: dict[str, Measure] = {}
NULLS: dict[str, Callable[[ModelResult, Mode], Estimate | None]] = {}


def measure(name: str, analysis: str, null: str = "attention", extra_nulls: tuple[str, ...] = ()
            ) -> Callable[[MeasureFn], MeasureFn]:
    def deco(fn: MeasureFn) -> MeasureFn:
        MEASURES[name] = Measure(name, analysis, fn, null, extra_nulls)
        return fn

    return deco


#: for depth and shape measures: ``fn(result, mode) -> ([sample, ..., layer] values, statistic of their
#: sentence mean)``, so that :func:`layer_order_null` can recompute the statistic with the layers reordered
ShapeFn = Callable[[ModelResult, Mode], tuple[np.ndarray, Callable[[np.ndarray], float]] | None]
LAYER_SHAPES: dict[str, ShapeFn] = {}
N_LAYER_ORDERS = 200
LAYER_ORDER = "2.5-97.5 % of the statistic over 200 seeded random layer orders"


def layer_order_null(name: str, r: ModelResult, mode: Mode) -> Estimate | None:
    """The depth statistic ``name`` recomputed on the model's own layer means put in random orders: the
    shape a model would show if depth did not matter. Its interval is the 2.5-97.5 % range over
    :data:`N_LAYER_ORDERS` seeded orders, so it meets a claim when almost every order does (as a model
    whose layers are all alike does)."""
    got = LAYER_SHAPES[name](r, mode)
    if got is None:
        return None
    x, stat = got
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        m = np.nanmean(np.asarray(x, dtype=float), 0)  # [..., layer]
        rng = np.random.default_rng(_seed(r) + 7919)
        draws = np.array([stat(m[..., rng.permutation(m.shape[-1])]) for _ in range(N_LAYER_ORDERS)], dtype=float)
    ok = draws[~np.isnan(draws)]
    if ok.size < 0.95 * N_LAYER_ORDERS:
        return Estimate(math.nan, math.nan, math.nan, n=x.shape[0], interval=LAYER_ORDER, undetermined=True,
                        detail="undefined in some layer orders")
    return Estimate(float(np.median(ok)), float(np.quantile(ok, 0.025)), float(np.quantile(ok, 0.975)),
                    n=x.shape[0], interval=LAYER_ORDER, detail="layers in random order")


#: the nulls every depth and shape measure runs beside its first: both can pass where depth does not matter
DEPTH_NULLS = ("layer_order", "random_twin")


def shape_measure(name: str, analysis: str, nulls: tuple[str, ...] = DEPTH_NULLS, null: str = "attention"
                  ) -> Callable[[ShapeFn], ShapeFn]:
    """Register a depth/shape measure from its ``(values, statistic)``: the bootstrap estimate, the
    attention null, the layer-order null and the random-initialized twin's."""
    def deco(shape: ShapeFn) -> ShapeFn:
        def fn(r: ModelResult, mode: Mode) -> Estimate | None:
            got = shape(r, mode)
            return None if got is None else boot(got[0], got[1], _seed(r))

        MEASURES[name] = Measure(name, analysis, fn, null, nulls)
        LAYER_SHAPES[name] = shape
        return shape

    return deco


def region_parts(x: np.ndarray, groups: dict[str, list[int]], seed: int) -> list[list[Any]]:
    """One ``[label, value, low, high]`` per group of positions along the last axis of ``x``
    ``[sample, ..., layer]``: the group mean with its bootstrap interval over sentences."""
    parts: list[list[Any]] = []
    for k, (label, idx) in enumerate(groups.items()):
        if not idx:
            continue
        e = boot(x[..., idx], lambda m: float(np.nanmean(m)), seed + 101 * (k + 1))
        parts.append([label, e.value, e.low, e.high])
    return parts


def with_parts(est: Estimate, parts: list[list[Any]], value: float | None = None, detail: str = "") -> Estimate:
    """``est`` carrying per-part intervals (its value replaced by ``value`` when given)."""
    lows = [p[2] for p in parts if p[2] is not None and not math.isnan(p[2])]
    highs = [p[3] for p in parts if p[3] is not None and not math.isnan(p[3])]
    v = est.value if value is None else value
    return Estimate(v, min(lows) if lows else est.low, max(highs) if highs else est.high, est.n,
                    est.interval + "; one interval per part", detail or est.detail, est.undetermined, parts)


def _seed(r: ModelResult) -> int:
    return int(r.params.get("seed", 0))


def _draws(stat: Callable[[np.ndarray], float], means: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """``stat`` of each resample's ``means``. With few sentences the same resample is drawn many times (3
    sentences: 27 possible draws of 3): ``stat`` then runs once per distinct draw and the others copy its value,
    the same value it would compute again (the same rows give the same means)."""
    n_boot, n = idx.shape
    if n ** n >= DEDUP_RESAMPLES * n_boot:  # few repeats to expect: one call per draw
        return np.array([stat(m) for m in means], dtype=float)
    _, first, inverse = np.unique(idx, axis=0, return_index=True, return_inverse=True)
    return np.array([stat(means[i]) for i in first], dtype=float)[inverse.reshape(-1)]


def boot(x: np.ndarray, stat: Callable[[np.ndarray], float], seed: int = 0, n_boot: int = N_BOOT,
         level: float = 0.95) -> Estimate:
    """``stat`` of the mean over sentences of ``x`` ``[sample, ...]``, with a ``level`` bootstrap interval
    over sentences; an undefined statistic (NaN) in more than 5 % of resamples leaves it undetermined."""
    x = np.asarray(x, dtype=float)
    n = x.shape[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN slices: undefined statistic
        value = float(stat(np.nanmean(x, 0)))
        if n < 2:
            return Estimate(value, value, value, n=n, interval="none (one sentence)", undetermined=math.isnan(value))
        idx = np.random.default_rng(seed).integers(0, n, (n_boot, n))  # [boot, sample]: the same draws one by one
        chunk = max(1, BOOT_CHUNK_VALUES // max(1, x.size))  # replicates resampled at once, memory bounded
        means = np.concatenate([np.nanmean(x[idx[i : i + chunk]], 1) for i in range(0, n_boot, chunk)])  # [boot, ...]
        draws = _draws(stat, means, idx)
    ok = draws[~np.isnan(draws)]
    kind = BOOT if level == 0.95 else f"{level:.1%} bootstrap over sentences"
    if math.isnan(value) or ok.size < 0.95 * n_boot:
        return Estimate(value, math.nan, math.nan, n=n, interval=kind, undetermined=True,
                        detail="undefined in some resamples (a constant series or no data)")
    alpha = (1 - level) / 2
    return Estimate(value, float(np.quantile(ok, alpha)), float(np.quantile(ok, 1 - alpha)), n=n, interval=kind)


def _regions(layers: Sequence[int], n_layers: int) -> dict[str, list[int]]:
    """Positions (in ``layers``) of the layers in each third of the model."""
    out: dict[str, list[int]] = {"early": [], "middle": [], "late": []}
    for i, layer in enumerate(layers):
        out[stats.region_of(layer, n_layers)].append(i)
    return out


def _region_stat(layers: Sequence[int], n_layers: int, combine: Callable[[dict[str, float]], float]
                 ) -> Callable[[np.ndarray], float]:
    reg = _regions(layers, n_layers)

    def stat(m: np.ndarray) -> float:
        if not all(reg.values()):
            return math.nan
        return combine({k: float(np.nanmean(m[v])) for k, v in reg.items()})

    return stat


# ----------------------------------------------------------------------------- frames (chapter 1)

@measure("frames.first_token_share", "frames")
def first_token_share(r: ModelResult, mode: Mode) -> Estimate | None:
    if mode == "faithful":
        return None
    x = np.nanmean(r.samples["first_token_share"], axis=(1, 2))  # [sample]
    return boot(x, float, _seed(r))


@measure("frames.frame_type", "frames")
def frame_type(r: ModelResult, mode: Mode) -> Estimate | None:
    if mode == "faithful":
        return None
    frame = str(r.data["frame"])
    return Estimate(frame, n=r.n_sentences, interval="no interval: a category", detail=str(r.data.get("reason", "")),
                    undetermined=frame == "undefined")


@measure("frames.reference_count", "frames")
def reference_count(r: ModelResult, mode: Mode) -> Estimate | None:
    if mode == "faithful":
        x = np.nanmean(r.samples["faithful_reference_count"], axis=1)  # [sample]
    else:
        x = np.nanmean(r.samples["reference_count"], axis=(1, 2))  # [sample]
    return boot(x, float, _seed(r))


# ----------------------------------------------------------------------------- information (chapter 5)

def _kl(r: ModelResult, mode: Mode) -> tuple[np.ndarray, list[int]]:
    """``([sample, layer], layers)``: the KL reduction under ``mode`` on the layers that mode analyses."""
    from ..metrics.information import official_layers

    red = r.samples[f"p90/{mode}/reduction"]  # [sample, layer]
    layers = official_layers(r.n_layers) if mode == "faithful" else list(range(r.n_layers))
    return red[:, layers], layers


def _mass(r: ModelResult, mode: Mode) -> tuple[np.ndarray, list[int]]:
    from ..metrics.information import official_layers

    key = "p90/mass_first4" if mode == "faithful" else "p90/mass_all_heads"
    layers = official_layers(r.n_layers) if mode == "faithful" else list(range(r.n_layers))
    return r.samples[key][:, layers], layers


def _kl_region_shape(combine: Callable[[dict[str, float]], float]
                     ) -> Callable[[ModelResult, Mode], tuple[np.ndarray, Callable[[np.ndarray], float]]]:
    def shape(r: ModelResult, mode: Mode) -> tuple[np.ndarray, Callable[[np.ndarray], float]]:
        x, layers = _kl(r, mode)
        return x, _region_stat(layers, r.n_layers, combine)

    return shape


shape_measure("information.kl_u_contrast", "information")(
    _kl_region_shape(lambda g: min(g["early"], g["late"]) - g["middle"]))


def _kl_groups(r: ModelResult, mode: Mode, skip_first: bool) -> tuple[np.ndarray, dict[str, list[int]]]:
    """``([sample, layer], region -> positions)``: the KL reduction and its regions (layer 0 left out of
    the early region when ``skip_first``)."""
    x, layers = _kl(r, mode)
    reg = _regions(layers, r.n_layers)
    if skip_first:
        reg["early"] = [i for i in reg["early"] if layers[i] != 0]
    return x, reg


def _kl_regions_fn(skip_first: bool) -> MeasureFn:
    def fn(r: ModelResult, mode: Mode) -> Estimate | None:
        x, reg = _kl_groups(r, mode, skip_first)
        parts = region_parts(x, reg, _seed(r))
        whole = boot(x[:, [i for v in reg.values() for i in v]], lambda m: float(np.nanmean(m)), _seed(r))
        label = "regions after layer 0" if skip_first else "regions"
        return with_parts(whole, parts, detail=f"{label}: " + ", ".join(p[0] for p in parts))

    return fn


MEASURES["information.kl_regions"] = Measure("information.kl_regions", "information", _kl_regions_fn(False))
MEASURES["information.kl_regions_after_first"] = Measure(
    "information.kl_regions_after_first", "information", _kl_regions_fn(True))


@measure("information.kl_first_middle_last", "information", extra_nulls=("random_twin",))
def kl_first_middle_last(r: ModelResult, mode: Mode) -> Estimate | None:
    """The first analysed layer, the middle region and the last analysed layer, each with its interval
    (the U shape of App. G as printed: positive first and final layers, negative middle)."""
    x, layers = _kl(r, mode)
    reg = _regions(layers, r.n_layers)
    groups = {"first layer": [0], "middle": reg["middle"], "last layer": [len(layers) - 1]}
    parts = region_parts(x, groups, _seed(r))
    return with_parts(boot(x, lambda m: float(np.nanmean(m)), _seed(r)), parts,
                      detail=f"layers {layers[0]} and {layers[-1]}, middle third")


@measure("information.kl_early_drop_p80_p95", "information", null="none")
def kl_early_drop_p80_p95(r: ModelResult, mode: Mode) -> Estimate | None:
    """Relative drop of the early-region KL reduction from the 80th- to the 95th-percentile sink rule:
    ``1 - early(p95) / early(p80)``."""
    from ..metrics.information import official_layers

    layers = official_layers(r.n_layers) if mode == "faithful" else list(range(r.n_layers))
    early = _regions(layers, r.n_layers)["early"]
    keys = [f"p80/{mode}/reduction", f"p95/{mode}/reduction"]
    if not all(k in r.samples for k in keys) or not early:
        return None
    a = r.samples[keys[0]][:, layers][:, early]  # [sample, early layer]
    b = r.samples[keys[1]][:, layers][:, early]
    k = a.shape[1]

    def stat(m: np.ndarray) -> float:
        lo80 = float(np.nanmean(m[:k]))
        return 1.0 - float(np.nanmean(m[k:])) / lo80 if abs(lo80) > 1e-12 else math.nan

    return boot(np.concatenate([a, b], axis=1), stat, _seed(r))


@measure("information.kl_first_layer", "information")
def kl_first_layer(r: ModelResult, mode: Mode) -> Estimate | None:
    x, _ = _kl(r, mode)
    return boot(x[:, 0], float, _seed(r))


@measure("information.kl_argmin_layer", "information", extra_nulls=("random_twin",))
def kl_argmin_layer(r: ModelResult, mode: Mode) -> Estimate | None:
    x, layers = _kl(r, mode)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        m = np.nanmean(x, 0)
    if np.all(np.isnan(m)):
        return Estimate("undefined", n=x.shape[0], undetermined=True)
    return Estimate(int(layers[int(np.nanargmin(m))]), n=x.shape[0], interval="none (a layer index)")


def _mass_at(r: ModelResult, mode: Mode, rule: str) -> tuple[np.ndarray, list[int]]:
    from ..metrics.information import official_layers

    key = f"{rule}/mass_first4" if mode == "faithful" else f"{rule}/mass_all_heads"
    layers = official_layers(r.n_layers) if mode == "faithful" else list(range(r.n_layers))
    return r.samples[key][:, layers], layers


def _concentration_regions(rule: str) -> MeasureFn:
    def fn(r: ModelResult, mode: Mode) -> Estimate | None:
        x, layers = _mass_at(r, mode, rule)
        parts = region_parts(x, _regions(layers, r.n_layers), _seed(r))
        return with_parts(boot(x, lambda m: float(np.nanmean(m)), _seed(r)), parts,
                          detail=f"region means, {rule} sinks")

    return fn


MEASURES["information.concentration_regions"] = Measure(
    "information.concentration_regions", "information", _concentration_regions("p90"))
MEASURES["information.concentration_regions_p80"] = Measure(
    "information.concentration_regions_p80", "information", _concentration_regions("p80"))


@measure("information.concentration_max", "information")
def concentration_max(r: ModelResult, mode: Mode) -> Estimate | None:
    x, layers = _mass(r, mode)
    est = boot(x, lambda m: float(np.nanmax(m)), _seed(r))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        m = np.nanmean(x, 0)
    where = f"at layer {layers[int(np.nanargmax(m))]} of {r.n_layers}" if not np.all(np.isnan(m)) else ""
    return Estimate(est.value, est.low, est.high, est.n, est.interval, where, est.undetermined)


@measure("information.concentration_first_layer", "information")
def concentration_first_layer(r: ModelResult, mode: Mode) -> Estimate | None:
    x, _ = _mass(r, mode)
    return boot(x[:, 0], float, _seed(r))


def _fisher(r: ModelResult, mode: Mode) -> Any:
    """The ``probes.fisher.FisherResult`` of ``mode``, or None when the run kept no Fisher pass."""
    return (r.data.get("fisher") or {}).get(mode)


@measure("information.fisher_early_share", "information", null="equal_fisher_early")
def fisher_early_share(r: ModelResult, mode: Mode) -> Estimate | None:
    fr = _fisher(r, mode)
    if fr is None:
        return None
    share, lo, hi = fr.early_share(seed=_seed(r))
    return Estimate(share, lo, hi, n=int(fr.values["sentence"].nunique()), interval=BOOT)


@measure("information.fisher_peak_region", "information", null="equal_fisher_peak")
def fisher_peak_region(r: ModelResult, mode: Mode) -> Estimate | None:
    fr = _fisher(r, mode)
    if fr is None:
        return None
    by = fr.by_layer()
    peak = by.iloc[int(np.nanargmax(by["fisher"].to_numpy()))]
    return Estimate(str(peak["region"]), n=int(fr.values["sentence"].nunique()), interval="none (a region)",
                    detail=f"peak at layer {int(peak['layer'])}")


@measure("information.fisher_attention_share", "information", null="none")
def fisher_attention_share(r: ModelResult, mode: Mode) -> Estimate | None:
    fr = _fisher(r, mode)
    if fr is None:
        return None
    g = fr.groups().set_index("group")["share"]
    return Estimate(float(g.get("attention", math.nan)), n=int(fr.values["sentence"].nunique()),
                    interval=NO_INTERVAL)


@measure("information.fisher_last3_share", "information", null="equal_fisher_last3")
def fisher_last3_share(r: ModelResult, mode: Mode) -> Estimate | None:
    fr = _fisher(r, mode)
    if fr is None:
        return None
    per = fr.per_sentence_layers()  # [sentence, layer]
    return boot(per, lambda m: float(m[-3:].sum() / m.sum()) if m.sum() > 0 else math.nan, _seed(r))


def _equal_fisher(r: ModelResult, mode: Mode, layers: Callable[[int], list[int]]) -> Estimate | None:
    fr = _fisher(r, mode)
    if fr is None:
        return None
    return Estimate(len(layers(r.n_layers)) / r.n_layers, n=0, interval="none (analytic)",
                    detail="every layer the same Fisher norm")


NULLS["equal_fisher_early"] = lambda r, mode: _equal_fisher(r, mode, lambda n: stats.layer_regions(n)["early"])
NULLS["equal_fisher_last3"] = lambda r, mode: _equal_fisher(r, mode, lambda n: list(range(max(0, n - 3), n)))
NULLS["equal_fisher_peak"] = lambda r, mode: (
    None if _fisher(r, mode) is None else Estimate("no peak", interval="none (analytic)",
                                                   detail="every layer the same Fisher norm"))
NULLS["none"] = lambda r, mode: None


def _removal_difference(r: ModelResult, mode: Mode, removed: str) -> Estimate | None:
    """The paired per-sentence difference ``removed - random`` of the output change (KL for decoders, embedding
    distance for encoders), bootstrapped over sentences."""
    out = r.data.get("output")
    if mode == "faithful" or out is None:
        return None
    per = out.per_sentence
    if removed not in set(per["condition"]):
        return None  # an output check cached before the second random key existed
    metric = "kl" if out.causal else "distance"
    s = per[per["condition"] == removed].sort_values("sentence")[metric].to_numpy()
    q = per[per["condition"] == "random"].sort_values("sentence")[metric].to_numpy()
    est = boot(s - q, float, _seed(r))
    return Estimate(est.value, est.low, est.high, est.n, est.interval,
                    f"{metric}: {'sink' if removed == 'sink' else 'second random key'} {s.mean():.4g}, random key "
                    f"{q.mean():.4g}", est.undetermined)


@measure("information.output_sink_minus_random", "information", null="second_random_key")
def output_sink_minus_random(r: ModelResult, mode: Mode) -> Estimate | None:
    return _removal_difference(r, mode, "sink")


NULLS["second_random_key"] = lambda r, mode: _removal_difference(r, mode, "random2")


# ----------------------------------------------------------------------------- spectral graphs (chapter 4)

def _variant(mode: Mode) -> str:
    return "laplacian" if mode == "faithful" else "corrected"


_SPECTRAL_NAMES = {
    ("faithful", "fiedler"): "laplacian/fiedler", ("corrected", "fiedler"): "corrected/lambda2",
    ("faithful", "star"): "laplacian/star_likeness", ("corrected", "star"): "corrected/star_composite",
    ("faithful", "centralization"): "laplacian/centralization",
    ("corrected", "centralization"): "corrected/centralization",
    ("faithful", "degree_variance"): "laplacian/degree_variance",
    ("corrected", "degree_variance"): "corrected/degree_variance",
    ("faithful", "density"): "laplacian/density", ("corrected", "density"): "corrected/density_allowed",
}


def _graph(r: ModelResult, mode: Mode, metric: str) -> np.ndarray:
    """``[sample, threshold, layer]`` of ``metric`` at the paper's thresholds."""
    from ..analyses.spectral import at
    from ..metrics.graphs import PAPER_THRESHOLDS

    return at(r, _SPECTRAL_NAMES[(mode, metric)], PAPER_THRESHOLDS)


def _thr_mean(x: np.ndarray) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(x, axis=1)  # [sample, layer]


@measure("spectral.star_likeness", "spectral", extra_nulls=("uniform_graph",))
def star_likeness(r: ModelResult, mode: Mode) -> Estimate | None:
    return boot(_thr_mean(_graph(r, mode, "star")), lambda m: float(np.nanmean(m)), _seed(r))


@measure("spectral.centralization", "spectral")
def centralization(r: ModelResult, mode: Mode) -> Estimate | None:
    return boot(_thr_mean(_graph(r, mode, "centralization")), lambda m: float(np.nanmean(m)), _seed(r))


def _ratio_stat(n_layers: int, combine: Callable[[dict[str, float]], float]
                ) -> Callable[[np.ndarray], float]:
    """Statistic of ``[threshold, layer]`` means: ``combine`` of the region means at each threshold (a
    ratio, so that every threshold weighs the same whatever its scale), averaged over the thresholds
    where it is defined."""
    reg = stats.layer_regions(n_layers)

    def per_threshold(m: np.ndarray) -> np.ndarray:
        out = []
        for row in m:
            g = {k: float(np.nanmean(row[v])) if v else math.nan for k, v in reg.items()}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                try:
                    out.append(float(combine(g)))
                except ZeroDivisionError:
                    out.append(math.nan)
        return np.array(out)

    def stat(m: np.ndarray) -> float:
        v = per_threshold(m)
        v = v[np.isfinite(v)]
        return float(v.mean()) if v.size else math.nan

    return stat


def _div(a: float, b: float) -> float:
    return a / b if b > 0 and math.isfinite(a) and math.isfinite(b) else math.nan


def _ratio_measure(name: str, metric: str, combine: Callable[[dict[str, float]], float], what: str) -> None:
    """A region ratio of a graph metric per paper threshold, averaged over thresholds, with the layer-order
    null and one interval per threshold (so that a profile that reverses at some thresholds shows it)."""
    from ..metrics.graphs import PAPER_THRESHOLDS

    def shape(r: ModelResult, mode: Mode) -> tuple[np.ndarray, Callable[[np.ndarray], float]]:
        return _graph(r, mode, metric), _ratio_stat(r.n_layers, combine)  # [sample, threshold, layer]

    def fn(r: ModelResult, mode: Mode) -> Estimate | None:
        x, stat = shape(r, mode)
        est = boot(x, stat, _seed(r))
        parts: list[list[Any]] = []
        below: list[str] = []
        above: list[str] = []
        for i, t in enumerate(PAPER_THRESHOLDS):
            e = boot(x[:, i : i + 1], stat, _seed(r) + i + 1)
            parts.append([f"{t:g}", e.value, e.low, e.high])
            v = float(e.value)
            if not math.isnan(v):
                (above if v >= 1 else below).append(f"{t:g}")
        detail = (f"{what}, mean over thresholds of the per-threshold ratio; ratio >= 1 at t = "
                  f"{', '.join(above) or 'none'}, < 1 at t = {', '.join(below) or 'none'}")
        return Estimate(est.value, est.low, est.high, est.n, est.interval, detail, est.undetermined, parts)

    MEASURES[name] = Measure(name, "spectral", fn, "attention", DEPTH_NULLS)
    LAYER_SHAPES[name] = shape


def _middle_peak(g: dict[str, float]) -> float:
    """min(middle / early, middle / late): above 1 when the middle third peaks."""
    return min(_div(g["middle"], g["early"]), _div(g["middle"], g["late"]))


_ratio_measure("spectral.lambda2_peak_ratio", "fiedler", _middle_peak,
               "min(middle / early, middle / late) of the layer-mean algebraic connectivity")
_ratio_measure("spectral.lambda2_dip_ratio", "fiedler",
               lambda g: min(_div(g["early"], g["middle"]), _div(g["late"], g["middle"])),
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
    parts = region_parts(x, {f"layer {i}": [i] for i in range(x.shape[1])}, _seed(r))
    whole = boot(x, lambda m: float(np.nanmin(m)), _seed(r))
    return with_parts(whole, parts, detail="the lowest layer mean is the value")


@measure("spectral.centralization_middle_max", "spectral", extra_nulls=("random_twin",))
def centralization_middle_max(r: ModelResult, mode: Mode) -> Estimate | None:
    """The largest middle-layer mean degree centralization (mean over the paper's thresholds)."""
    x = _thr_mean(_graph(r, mode, "centralization"))  # [sample, layer]
    mid = stats.layer_regions(r.n_layers)["middle"]
    if not mid:
        return None
    return boot(x[:, mid], lambda m: float(np.nanmax(m)), _seed(r))


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

        return boot(x, stat, _seed(r))

    return fn


def _threshold_correlations(r: ModelResult, mode: Mode, other: str) -> list[tuple[float, Estimate]]:
    """``(threshold, estimate)`` of the across-layer Fiedler-``other`` correlation at each paper threshold,
    each interval Bonferroni-widened over the seven thresholds (each at 1 - 0.05/7)."""
    from ..metrics.graphs import PAPER_THRESHOLDS

    f, o = _graph(r, mode, "fiedler"), _graph(r, mode, other)  # [sample, threshold, layer]
    level = 1 - 0.05 / len(PAPER_THRESHOLDS)
    return [(t, boot(np.concatenate([f[:, i], o[:, i]], axis=1), _split_pearson(f.shape[2]), _seed(r) + i,
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
    from ..analyses.spectral import EFFECTIVE_DENSITY
    from ..metrics.graphs import PAPER_THRESHOLDS

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        d = np.nanmean(_graph(r, mode, "density"), axis=0)  # [threshold, layer]
    ok = ((d >= EFFECTIVE_DENSITY[0]) & (d <= EFFECTIVE_DENSITY[1])).mean(1) > 0.5  # [threshold]
    eff = [t for t, o in zip(PAPER_THRESHOLDS, ok, strict=True) if o]
    return Estimate(max(eff) if eff else math.nan, n=r.n_sentences, interval="none (a threshold)",
                    detail=f"effective at t = {', '.join(f'{t:g}' for t in eff) or 'none'}")


# ----------------------------------------------------------------------------- topology (chapter 3)

def _topo_layers(r: ModelResult, mode: Mode, name: str) -> tuple[np.ndarray, list[int]]:
    """``([sample, layer], layers)``: a faithful field on the official layers or a corrected curve
    averaged over the paper's thresholds on every layer."""
    from ..analyses import topology as topo_an
    from ..metrics import topology as topo

    if mode == "faithful":
        layers = topo_an.analysed_layers(r)
        return topo_an.faithful_field(r, name)[:, layers], layers  # [sample, analysed layer]
    if name in ("betti0", "betti1"):
        ks = [int(np.argmin(np.abs(topo.CURVE_THRESHOLDS - t))) for t in topo.PAPER_THRESHOLDS]
        return r.samples[name][:, :, ks].mean(2), list(range(r.n_layers))
    return r.samples[name], list(range(r.n_layers))


_TOPO_NAMES = {"persistence": ("dim0_avg", "total_persistence0"), "betti1": ("betti1", "betti1"),
               "betti0": ("betti0", "betti0"), "h1": ("betti1", "h1_bars")}


def _topo(r: ModelResult, mode: Mode, what: str) -> tuple[np.ndarray, list[int]]:
    faithful, corrected = _TOPO_NAMES[what]
    return _topo_layers(r, mode, faithful if mode == "faithful" else corrected)


@measure("topology.betti1_max", "topology")
def betti1_max(r: ModelResult, mode: Mode) -> Estimate | None:
    x, _ = _topo(r, mode, "betti1")
    return boot(x, lambda m: float(np.nanmax(m)), _seed(r))


@measure("topology.betti0_range", "topology")
def betti0_range(r: ModelResult, mode: Mode) -> Estimate | None:
    x, _ = _topo(r, mode, "betti0")
    return boot(x, lambda m: float(np.nanmax(m) - np.nanmin(m)), _seed(r))


def _late_minus_early(what: str) -> Callable[[ModelResult, Mode], tuple[np.ndarray, Callable[[np.ndarray], float]]]:
    def shape(r: ModelResult, mode: Mode) -> tuple[np.ndarray, Callable[[np.ndarray], float]]:
        x, layers = _topo(r, mode, what)
        return x, _region_stat(layers, r.n_layers, lambda g: g["late"] - g["early"])

    return shape


shape_measure("topology.persistence_late_minus_early", "topology")(_late_minus_early("persistence"))
shape_measure("topology.betti1_late_minus_early", "topology")(_late_minus_early("h1"))


@measure("topology.betti1_early", "topology")
def betti1_early(r: ModelResult, mode: Mode) -> Estimate | None:
    """Mean H1 count of the early third of the layers."""
    x, layers = _topo(r, mode, "h1")
    early = _regions(layers, r.n_layers)["early"]
    if not early:
        return None
    return boot(x[:, early], lambda m: float(np.nanmean(m)), _seed(r))


def _head_shares(r: ModelResult, mode: Mode) -> tuple[float, float, int]:
    """Shares of heads (official analysed layers) fixed on the first and on the last token."""
    from ..analyses.topology import CLAIM_RULES, head_specialization

    spec = head_specialization(r)
    if mode == "faithful":  # the official rule: the same token string at the argmax in every sentence
        full = spec["faithful consistency"] >= 1.0
        toks = r.data.get("faithful_tokens", r.data["tokens"])  # encoders: the officially truncated texts
        first_tok = {t[0] for t in toks if t}
        last_tok = {t[-1] for t in toks if t}
        first = float((full & spec["faithful token"].isin(first_tok)).mean())
        last = float((full & spec["faithful token"].isin(last_tok)).mean())
    else:
        strong = spec["position consistency"] >= CLAIM_RULES["bos_min_consistency"]
        first = float((strong & (spec["position"] == "first")).mean())
        last = float((strong & (spec["position"] == "last")).mean())
    return first, last, len(spec)


def _position_hits(r: ModelResult, layers: list[int], where: str) -> np.ndarray:
    """``[sample, head]`` 1 where a head's most-received key (corrected) is the first (``where="first"``)
    or the last token of the sentence, over the heads of ``layers``."""
    top = r.samples["corrected_top"][:, layers]  # [sample, layer, head]
    n = np.asarray(r.samples["n_tokens"]).astype(int).reshape(-1, 1, 1)
    hit = top == 0 if where == "first" else top == n - 1
    return hit.reshape(top.shape[0], -1).astype(float)


def _fixed_share(min_consistency: float) -> Callable[[np.ndarray], float]:
    return lambda m: float(np.mean(m >= min_consistency - 1e-12))


@measure("topology.first_token_heads", "topology")
def first_token_heads(r: ModelResult, mode: Mode) -> Estimate | None:
    """Share of heads (official analysed layers) fixed on the first token; corrected: in at least 90 % of
    sentences, with a bootstrap interval over sentences (the official rule has none)."""
    if mode == "faithful":
        first, _, n = _head_shares(r, mode)
        return Estimate(first, n=n, interval="none (share of heads, official rule)",
                        detail=f"{n} heads of the official layers")
    from ..analyses.topology import CLAIM_RULES, analysed_layers

    x = _position_hits(r, analysed_layers(r), "first")
    est = boot(x, _fixed_share(CLAIM_RULES["bos_min_consistency"]), _seed(r))
    return Estimate(est.value, est.low, est.high, est.n, est.interval, f"{x.shape[1]} heads of the official layers",
                    est.undetermined)


@measure("topology.end_anchor_regions", "topology")
def end_anchor_regions(r: ModelResult, mode: Mode) -> Estimate | None:
    """App. H's bipolar pattern as printed: the share of early-layer heads fixed on the first token and the
    share of middle- and late-layer heads fixed on the last token, each a part with its interval
    (corrected; the official rule keeps no per-sentence positions)."""
    if mode == "faithful":
        return None
    from ..analyses.topology import CLAIM_RULES

    reg = stats.layer_regions(r.n_layers)
    stat = _fixed_share(CLAIM_RULES["bos_min_consistency"])
    parts: list[list[Any]] = []
    for k, (label, layers, where) in enumerate((("early: first token", reg["early"], "first"),
                                                ("middle and late: last token", reg["middle"] + reg["late"], "last"))):
        if not layers:
            continue
        e = boot(_position_hits(r, layers, where), stat, _seed(r) + k)
        parts.append([label, e.value, e.low, e.high])
    if not parts:
        return None
    return Estimate(min(float(p[1]) for p in parts), min(float(p[2]) for p in parts),
                    max(float(p[3]) for p in parts), r.n_sentences, BOOT + "; one interval per part",
                    "the smaller share is the value", parts=parts)


@measure("topology.the_heads", "topology")
def the_heads(r: ModelResult, mode: Mode) -> Estimate | None:
    """Share of heads (official layers) whose official specialized token is the word "the" (any case,
    with or without a leading space marker), as App. J counts it; the official rule has no interval."""
    from ..analyses.topology import head_specialization

    spec = head_specialization(r)
    col = "faithful token" if mode == "faithful" else "token"
    words = spec[col].astype(str).str.replace("\u0120", "", regex=False).str.replace("\u2581", "", regex=False)
    share = float((words.str.strip().str.lower() == "the").mean())
    return Estimate(share, n=len(spec), interval="none (share of heads)", detail=f"{len(spec)} heads")


@measure("topology.common_word_heads", "topology")
def common_word_heads(r: ModelResult, mode: Mode) -> Estimate | None:
    """Share of heads (official layers) whose specialized token is the most common one among the heads that do
    not fix on a position-0 token (the sentences' first tokens, BOS included): App. F's "specialization on common
    linguistic elements rather than BOS". The token is read by the official rule (faithful) or the corrected one;
    a share of heads, so no interval."""
    from ..analyses.topology import head_specialization

    spec = head_specialization(r)
    col = "faithful token" if mode == "faithful" else "token"
    toks = r.data.get("faithful_tokens", r.data["tokens"]) if mode == "faithful" else r.data["tokens"]
    first = {t[0] for t in toks if t}
    words = spec.loc[~spec[col].isin(first), col]
    if words.empty:
        return Estimate(0.0, n=len(spec), interval="none (share of heads)",
                        detail=f"every one of {len(spec)} heads fixes on a first token")
    word, count = words.value_counts().index[0], int(words.value_counts().iloc[0])
    return Estimate(count / len(spec), n=len(spec), interval="none (share of heads)",
                    detail=f"{count} of {len(spec)} heads on {word!r}")


@measure("topology.specialized_heads", "topology")
def specialized_heads(r: ModelResult, mode: Mode) -> Estimate | None:
    """How many heads (official analysed layers) are "specialized" by the official report's rule: the same
    token at the head's argmax in at least 30 % of at least 5 sentences (App. J counts them per size). The
    token is read by the official argmax (faithful) or the corrected one; a count of heads, so no interval."""
    from ..analyses.topology import head_specialization
    from ..metrics import topology as topo

    spec = head_specialization(r)
    col = "faithful consistency" if mode == "faithful" else "token consistency"
    enough = r.n_sentences >= topo.SPECIALIZED_MIN_SAMPLES
    count = int(enough and (spec[col] >= topo.SPECIALIZED_MIN_CONSISTENCY).sum())
    return Estimate(float(count), n=len(spec), interval="none (a count of heads)",
                    detail=f"of {len(spec)} heads of the official layers")


# ----------------------------------------------------------------------------- softmax geometry (chapter 2)

#: a layer is "concentrated" when at least this share of its rows holds a majority on one key
MOST_ROWS = 0.5


@measure("softmax.near_vertex_on_first", "softmax_geometry")
def near_vertex_on_first(r: ModelResult, mode: Mode) -> Estimate | None:
    """min(share of layers where most rows hold a majority on one key, share of those rows on position 0),
    with a bootstrap interval over sentences (the rule of ``analyses.softmax_geometry.claim_evidence``)."""
    if mode == "faithful":
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        nv = np.nanmean(r.samples["near_vertex"], axis=-1)  # [sample, layer]
        nf = np.nanmean(r.samples["near_first_vertex"], axis=-1)  # [sample, layer]
    k = nv.shape[1]

    def stat(m: np.ndarray) -> float:
        near, first = m[:k], m[k:]
        conc = float((near >= MOST_ROWS).mean())
        on_first = float(first.mean() / near.mean()) if near.mean() > 0 else 0.0
        return min(conc, on_first)

    est = boot(np.concatenate([nv, nf], axis=1), stat, _seed(r))
    m = np.nanmean(np.concatenate([nv, nf], axis=1), 0)
    conc = float((m[:k] >= MOST_ROWS).mean())
    on_first = float(m[k:].mean() / m[:k].mean()) if m[:k].mean() > 0 else 0.0
    return Estimate(est.value, est.low, est.high, est.n, est.interval,
                    f"{conc:.2f} of layers concentrated, {on_first:.2f} of concentrated rows on position 0",
                    est.undetermined)


# ----------------------------------------------------------------------------- value space (chapter 6)

def _values(r: ModelResult, mode: Mode, name: str) -> np.ndarray:
    return r.samples[f"{mode}_{name}"]  # [sample, layer]


@measure("values.key_norm_ratio", "geometry_values", null="unit_ratio")
def key_norm_ratio(r: ModelResult, mode: Mode) -> Estimate | None:
    if mode == "faithful":
        return None
    return boot(r.samples["key_norm_ratio"], lambda m: float(np.nanmean(m)), _seed(r))


@measure("values.sink_cosine_excess", "geometry_values", null="zero")
def sink_cosine_excess(r: ModelResult, mode: Mode) -> Estimate | None:
    if mode == "faithful":
        return None
    x = r.samples["cos_to_sink_post"] - r.samples["cos_to_others_post"]  # [sample, layer]
    return boot(x, lambda m: float(np.nanmean(m)), _seed(r))


def _values_shape(name: str, stat: Callable[[np.ndarray], float]
                  ) -> Callable[[ModelResult, Mode], tuple[np.ndarray, Callable[[np.ndarray], float]]]:
    return lambda r, mode: (_values(r, mode, name), stat)


shape_measure("values.entropy_last_minus_first", "geometry_values", null="zero")(
    _values_shape("entropy", lambda m: float(m[-1] - m[0])))
shape_measure("values.magnitude_last_minus_first", "geometry_values", null="zero")(
    _values_shape("magnitude", lambda m: float(m[-1] - m[0])))
shape_measure("values.alignment_last", "geometry_values", null="zero")(
    _values_shape("alignment", lambda m: float(m[-1])))
shape_measure("values.alignment_last_minus_first", "geometry_values", null="zero")(
    _values_shape("alignment", lambda m: float(m[-1] - m[0])))


@measure("values.alignment_first_last", "geometry_values", null="zero")
def alignment_first_last(r: ModelResult, mode: Mode) -> Estimate | None:
    """The first and the last layer's geometric-semantic alignment, each a part with its interval."""
    x = _values(r, mode, "alignment")  # [sample, layer]
    parts = region_parts(x, {"first layer": [0], "last layer": [x.shape[1] - 1]}, _seed(r))
    return with_parts(boot(x, lambda m: float(m[-1] - m[0]), _seed(r)), parts,
                      detail="the value is last minus first")


NULLS["unit_ratio"] = lambda r, mode: Estimate(1.0, interval="none (analytic)",
                                               detail="a random key: the same norm as the others on average")
NULLS["zero"] = lambda r, mode: Estimate(0.0, interval="none (analytic)",
                                         detail="uniform attention: the same in every layer, no alignment")


# --------------------------------------------------------------------------- training series (App. B)
def _series(r: ModelResult) -> Any:
    return r.data["series"]


def _fraction(step: int | None, final: int) -> float:
    return math.inf if step is None else step / final


@measure("rmt.sink_formed_fraction", "rmt_series", null="untrained_series")
def sink_formed_fraction(r: ModelResult, mode: Mode) -> Estimate | None:
    """Fraction of the run at which a first-token sink forms (largest layer share above the threshold):
    the first checkpoint whose mean clears it, bounded by the first whose interval reaches it and the
    first whose interval clears it. Undetermined when no checkpoint's interval clears it."""
    if mode == "faithful":
        return None
    from ..analyses.rmt import emergence

    em = emergence(_series(r))
    final = em["final_step"]
    return Estimate(_fraction(em["mean_above_at"], final), _fraction(em["possible_from"], final),
                    _fraction(em["formed_at"], final), r.n_sentences, "checkpoints where the 95 % bootstrap "
                    f"interval of the largest layer first-token share first reaches / clears {em['threshold']:g}",
                    detail=f"of {final} steps" + ("; no checkpoint's interval clears the threshold: no sink formed"
                                                  if em["formed_at"] is None else ""),
                    undetermined=em["formed_at"] is None)


def _untrained_fraction(r: ModelResult, mode: Mode) -> Estimate | None:
    """The untrained run: every checkpoint equal to step 0, so a sink 'forms' at 0 or never."""
    if mode == "faithful":
        return None
    from ..analyses.rmt import Series, emergence

    s = _series(r)
    first = min(range(len(s.checkpoints)), key=lambda i: s.checkpoints[i].step)
    frozen = Series(list(s.checkpoints), [s.results[first]] * len(s.results), [s.loss[first]] * len(s.loss), s.seed)
    em = emergence(frozen)
    v = 0.0 if em["formed_at"] is not None else math.inf
    return Estimate(v, v, v, r.n_sentences, "untrained run", undetermined=not math.isfinite(v))


NULLS["untrained_series"] = _untrained_fraction


@measure("rmt.gap_change", "rmt_series", null="no_training")
def gap_change(r: ModelResult, mode: Mode) -> Estimate | None:
    """The spectral gap's change over the run, last checkpoint minus first: faithful, the official ``mu1/mu2``
    of the head-averaged matrix in the official (string) order of the checkpoints, a point value; corrected,
    each head's relative gap by step, paired by sentence, with a bootstrap interval over sentences."""
    from ..analyses.rmt import faithful_layers
    from ..metrics import rmt

    named = _series(r).by_name()
    if mode == "faithful":
        order = rmt.faithful_order(named)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            a, b = (float(np.nanmean(faithful_layers(named[k][1])["spectral_gap"])) for k in (order[0], order[-1]))
        return Estimate(b - a, n=r.n_sentences, interval="none (the official comparison has none)",
                        detail=f"{order[-1]} minus {order[0]} (official order)", undetermined=math.isnan(b - a))
    order = rmt.step_order(named)
    first, last = (named[k][1].samples["corrected/relative_gap"] for k in (order[0], order[-1]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        per = (np.nanmean(np.where(np.isfinite(last), last, np.nan), axis=(1, 2))
               - np.nanmean(np.where(np.isfinite(first), first, np.nan), axis=(1, 2)))  # [sample]
    est = boot(per, float, _seed(r))
    return Estimate(est.value, est.low, est.high, est.n, est.interval, f"{order[-1]} minus {order[0]}",
                    est.undetermined)


NULLS["no_training"] = lambda r, mode: Estimate(0.0, interval="none (analytic)",
                                                detail="an untrained run: every checkpoint equal to the first")
