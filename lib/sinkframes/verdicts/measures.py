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


MEASURES: dict[str, Measure] = {}
NULLS: dict[str, Callable[[ModelResult, Mode], Estimate | None]] = {}


def measure(name: str, analysis: str, null: str = "attention") -> Callable[[MeasureFn], MeasureFn]:
    def deco(fn: MeasureFn) -> MeasureFn:
        MEASURES[name] = Measure(name, analysis, fn, null)
        return fn

    return deco


def _seed(r: ModelResult) -> int:
    return int(r.params.get("seed", 0))


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
        draws = np.array([stat(m) for m in means], dtype=float)
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
    return Estimate(frame, n=r.n_sentences, interval="none (a classification)", detail=str(r.data.get("reason", "")),
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


def _kl_region_measure(name: str, combine: Callable[[dict[str, float]], float]) -> None:
    def fn(r: ModelResult, mode: Mode) -> Estimate | None:
        x, layers = _kl(r, mode)
        return boot(x, _region_stat(layers, r.n_layers, combine), _seed(r))

    MEASURES[name] = Measure(name, "information", fn)


_kl_region_measure("information.kl_u_contrast", lambda g: min(g["early"], g["late"]) - g["middle"])
_kl_region_measure("information.kl_three_phase", lambda g: min(g["early"], -g["middle"], -g["late"]))
_kl_region_measure("information.kl_early_positive_late_negative", lambda g: min(g["early"], -g["late"]))


@measure("information.kl_first_layer", "information")
def kl_first_layer(r: ModelResult, mode: Mode) -> Estimate | None:
    x, _ = _kl(r, mode)
    return boot(x[:, 0], float, _seed(r))


@measure("information.kl_max_layer", "information")
def kl_max_layer(r: ModelResult, mode: Mode) -> Estimate | None:
    x, _ = _kl(r, mode)
    return boot(x, lambda m: float(np.nanmax(m)), _seed(r))


@measure("information.kl_max_layer_after_first", "information")
def kl_max_layer_after_first(r: ModelResult, mode: Mode) -> Estimate | None:
    x, layers = _kl(r, mode)
    return boot(x[:, 1:], lambda m: float(np.nanmax(m)) if m.size else math.nan, _seed(r))


@measure("information.kl_mean_after_first", "information")
def kl_mean_after_first(r: ModelResult, mode: Mode) -> Estimate | None:
    x, _ = _kl(r, mode)
    return boot(x[:, 1:], lambda m: float(np.nanmean(m)) if m.size else math.nan, _seed(r))


@measure("information.kl_argmin_layer", "information")
def kl_argmin_layer(r: ModelResult, mode: Mode) -> Estimate | None:
    x, layers = _kl(r, mode)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        m = np.nanmean(x, 0)
    if np.all(np.isnan(m)):
        return Estimate("undefined", n=x.shape[0], undetermined=True)
    return Estimate(int(layers[int(np.nanargmin(m))]), n=x.shape[0], interval="none (a layer index)")


@measure("information.concentration_layers", "information")
def concentration_layers(r: ModelResult, mode: Mode) -> Estimate | None:
    x, layers = _mass(r, mode)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        m = np.nanmean(x, 0)  # [layer]
    if np.all(np.isnan(m)):
        return Estimate(math.nan, n=x.shape[0], undetermined=True)
    return Estimate(float(np.nanmedian(m)), float(np.nanmin(m)), float(np.nanmax(m)), n=x.shape[0],
                    interval=LAYER_RANGE, detail=f"{len(layers)} layers")


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


@measure("information.output_sink_minus_random", "information", null="none")
def output_sink_minus_random(r: ModelResult, mode: Mode) -> Estimate | None:
    out = r.data.get("output")
    if mode == "faithful" or out is None:
        return None
    per = out.per_sentence
    metric = "kl" if out.causal else "distance"
    s = per[per["condition"] == "sink"].sort_values("sentence")[metric].to_numpy()
    q = per[per["condition"] == "random"].sort_values("sentence")[metric].to_numpy()
    est = boot(s - q, float, _seed(r))
    return Estimate(est.value, est.low, est.high, est.n, est.interval,
                    f"{metric}: sink {s.mean():.4g}, random key {q.mean():.4g}", est.undetermined)


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


@measure("spectral.star_likeness", "spectral")
def star_likeness(r: ModelResult, mode: Mode) -> Estimate | None:
    return boot(_thr_mean(_graph(r, mode, "star")), lambda m: float(np.nanmean(m)), _seed(r))


@measure("spectral.centralization", "spectral")
def centralization(r: ModelResult, mode: Mode) -> Estimate | None:
    return boot(_thr_mean(_graph(r, mode, "centralization")), lambda m: float(np.nanmean(m)), _seed(r))


def _lambda2_region(name: str, combine: Callable[[dict[str, float]], float]) -> None:
    def fn(r: ModelResult, mode: Mode) -> Estimate | None:
        x = _thr_mean(_graph(r, mode, "fiedler"))  # [sample, layer]
        return boot(x, _region_stat(list(range(r.n_layers)), r.n_layers, combine), _seed(r))

    MEASURES[name] = Measure(name, "spectral", fn)


_lambda2_region("spectral.lambda2_peak", lambda g: g["middle"] - max(g["early"], g["late"]))
_lambda2_region("spectral.lambda2_dip", lambda g: min(g["early"], g["late"]) - g["middle"])
_lambda2_region("spectral.lambda2_late_minus_early", lambda g: g["late"] - g["early"])


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


MEASURES["spectral.r_fiedler_centralization"] = Measure(
    "spectral.r_fiedler_centralization", "spectral", _layer_corr("centralization"))
MEASURES["spectral.r_fiedler_degree_variance"] = Measure(
    "spectral.r_fiedler_degree_variance", "spectral", _layer_corr("degree_variance"))


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

    level = 1 - 0.05 / len(PAPER_THRESHOLDS)
    f, c = _graph(r, mode, "fiedler"), _graph(r, mode, "centralization")
    signs = []
    parts = []
    for i, t in enumerate(PAPER_THRESHOLDS):
        x = np.concatenate([f[:, i], c[:, i]], axis=1)  # [sample, 2 * layer]
        est = boot(x, _split_pearson(f.shape[2]), _seed(r) + i, level=level)
        lo, hi = est.bounds()
        s = 0 if est.undetermined or (lo <= 0 <= hi) else (1 if lo > 0 else -1)
        signs.append(s)
        parts.append(f"{t:g}: {est.text()}")
    detail = "r across layers by threshold: " + "; ".join(parts)
    settled = [(t, s) for t, s in zip(PAPER_THRESHOLDS, signs, strict=True) if s != 0]
    n = f.shape[0]
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


def _late_minus_early(what: str) -> MeasureFn:
    def fn(r: ModelResult, mode: Mode) -> Estimate | None:
        x, layers = _topo(r, mode, what)
        return boot(x, _region_stat(layers, r.n_layers, lambda g: g["late"] - g["early"]), _seed(r))

    return fn


MEASURES["topology.persistence_late_minus_early"] = Measure(
    "topology.persistence_late_minus_early", "topology", _late_minus_early("persistence"))
MEASURES["topology.betti1_late_minus_early"] = Measure(
    "topology.betti1_late_minus_early", "topology", _late_minus_early("h1"))


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


@measure("topology.first_token_heads", "topology")
def first_token_heads(r: ModelResult, mode: Mode) -> Estimate | None:
    first, _, n = _head_shares(r, mode)
    return Estimate(first, n=n, interval="none (share of heads)", detail=f"{n} heads of the official layers")


@measure("topology.end_anchor_heads", "topology")
def end_anchor_heads(r: ModelResult, mode: Mode) -> Estimate | None:
    first, last, n = _head_shares(r, mode)
    return Estimate(min(first, last), n=n, interval="none (share of heads)",
                    detail=f"first token {first:.2f}, last token {last:.2f} of {n} heads")


# ----------------------------------------------------------------------------- softmax geometry (chapter 2)

@measure("softmax.near_vertex_on_first", "softmax_geometry")
def near_vertex_on_first(r: ModelResult, mode: Mode) -> Estimate | None:
    if mode == "faithful":
        return None
    from ..analyses.softmax_geometry import claim_evidence

    ev = claim_evidence(r)
    return Estimate(min(float(ev["concentrated_layers"]), float(ev["on_first"])), n=r.n_sentences,
                    interval="none (shares of layers and rows)",
                    detail=(f"{ev['concentrated_layers']:.2f} of layers concentrated, "
                            f"{ev['on_first']:.2f} of concentrated rows on position 0"))


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


@measure("values.entropy_last_minus_first", "geometry_values", null="zero")
def entropy_last_minus_first(r: ModelResult, mode: Mode) -> Estimate | None:
    return boot(_values(r, mode, "entropy"), lambda m: float(m[-1] - m[0]), _seed(r))


@measure("values.magnitude_last_minus_first", "geometry_values", null="zero")
def magnitude_last_minus_first(r: ModelResult, mode: Mode) -> Estimate | None:
    return boot(_values(r, mode, "magnitude"), lambda m: float(m[-1] - m[0]), _seed(r))


@measure("values.alignment_last", "geometry_values", null="zero")
def alignment_last(r: ModelResult, mode: Mode) -> Estimate | None:
    return boot(_values(r, mode, "alignment"), lambda m: float(m[-1]), _seed(r))


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
                    detail=f"of {final} steps", undetermined=em["formed_at"] is None)


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


@measure("rmt.gap_direction_changes", "rmt_series", null="untrained_gap")
def gap_direction_changes(r: ModelResult, mode: Mode) -> Estimate | None:
    """How often the layer-mean spectral gap reverses direction along the checkpoints: low = reversals
    between checkpoints whose intervals are disjoint, value and high = reversals of the means (faithful:
    the official ratio in the official string order, which has no intervals)."""
    from ..analyses.rmt import direction_changes, gap_trajectory

    strict, loose = direction_changes(gap_trajectory(_series(r), mode))
    if mode == "faithful":
        return Estimate(float(loose), float(loose), float(loose), r.n_sentences, "none (official means, string order)")
    return Estimate(float(loose), float(strict), float(loose), r.n_sentences,
                    "reversals between disjoint 95 % bootstrap intervals / between means")


NULLS["untrained_gap"] = lambda r, mode: Estimate(0.0, 0.0, 0.0, r.n_sentences, "untrained run: no change")
