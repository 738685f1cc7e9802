"""Information geometry (paper sections 5.1-5.3, appendices C, E-J): one call per model.

For each model: the streamed KL-change / sink-mass summary of every sentence (faithful and
corrected, every sink rule), the output-level attention edit on a subset of the sentences, and
empirical Fisher norms (faithful and corrected) on a smaller subset (backward passes are the
cost). Everything passes through the on-disk cache.

The ``ModelResult``: ``samples`` holds every summary entry ``"<rule>/..."`` as ``[sample, layer]``
(and ``n_tokens`` ``[sample]``); ``layers`` the corrected per-layer table of ``DEFAULT_RULE``;
``data["output"]`` the ``OutputCheck`` (or ``None``), ``data["fisher"]`` a ``FisherResult`` per mode and
``data["layer_tables"]`` the layer tables computed so far (:func:`model_layers`, keyed by mode and rule).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping
from dataclasses import asdict, replace
from typing import Any

import numpy as np
import pandas as pd
import torch

from .. import stats
from ..extraction import summarize
from ..metrics import information as inf
from ..models.registry import hook_supports
from ..probes import fisher as fisher_mod
from ..probes import sink_removal
from ..results import Analysis, ModelResult, Results, attach_halves, each_model, register, split_halves, with_twin
from ..types import MODES, Mode, RunOptions, check_mode
from ..verdicts.measures import (
    BOOT,
    MEASURES,
    NO_INTERVAL,
    NULLS,
    Measure,
    MeasureFn,
    boot,
    measure,
    region_parts,
    region_stat,
    regions_in,
    seed_of,
    shape_measure,
    with_parts,
)
from ..verdicts.structureless import null_summaries
from ..verdicts.verdict import Estimate

ANALYSIS = "information"
DEFAULT_RULE = "p90"


def _nanstd(x: np.ndarray) -> float:
    x = np.asarray(x, dtype=float)
    x = x[~np.isnan(x)]
    return float(x.std()) if x.size else float("nan")


def stack_summaries(summaries: list[dict[str, torch.Tensor]], key: str) -> np.ndarray:
    """``[sample, layer]`` array of one summary entry (float64)."""
    return np.stack([s[key].double().numpy() for s in summaries])


def stack_all(summaries: list[dict[str, torch.Tensor]]) -> dict[str, np.ndarray]:
    """Every summary entry stacked: ``"<rule>/..."`` -> ``[sample, layer]``, ``n_tokens`` -> ``[sample]``."""
    return {k: stack_summaries(summaries, k) for k in summaries[0]}


def layer_table(samples: Mapping[str, np.ndarray], mode: Mode, rule: str, seed: int = 0,
                n_perm: int = 20000) -> pd.DataFrame:
    """Per-layer KL reduction and sink mass for one sink ``rule``.

    Faithful: the official layer subset, mean, population std and count over samples, sink mass
    from heads 0-3, and the official significance (p fixed at 1, Fisher-combined p = 1).
    Corrected: every layer, bootstrap 95 % intervals over sentences, a sign-flip test of zero mean
    reduction per layer with Holm correction across layers, and sink mass from all heads.
    """
    mode = check_mode(mode)
    red = samples[inf.removal_key(rule, "reduction", mode)]  # [sample, layer]
    before = samples[inf.removal_key(rule, "before", mode)]  # [sample, layer]
    mass = samples[inf.removal_key(rule, "mass_first4" if mode == "faithful" else "mass_all_heads")]  # [sample, layer]
    nsink = samples[inf.removal_key(rule, "n_sinks")]  # [sample, layer]
    first = samples[inf.removal_key(rule, "has_first")]  # [sample, layer]
    n_layers = red.shape[1]
    rows = []
    if mode == "faithful":
        for layer in inf.official_layers(n_layers):
            x = red[:, layer]
            rows.append({
                "layer": layer, "region": stats.region_of(layer, n_layers),
                "kl_before": stats.nanmean(before[:, layer]),
                "kl_reduction": stats.nanmean(x), "kl_reduction_std": _nanstd(x),
                "count": int(np.sum(~np.isnan(x))),
                "sink_mass": stats.nanmean(mass[:, layer]), "sink_mass_std": _nanstd(mass[:, layer]),
                "n_sinks": float(nsink[:, layer].mean()), "sinks_include_first": float(first[:, layer].mean()),
                "p_value": inf.OFFICIAL_P_VALUE,
                "combined_p": stats.fisher_combined_p(np.full(int(np.sum(~np.isnan(x))), inf.OFFICIAL_P_VALUE)),
            })
        return pd.DataFrame(rows)
    for layer in range(n_layers):
        x = red[:, layer]
        mean, lo, hi = stats.bootstrap_ci(x, seed=seed + layer)
        _, p = stats.sign_flip_test(x, n_perm=n_perm, seed=seed + layer)
        m, mlo, mhi = stats.bootstrap_ci(mass[:, layer], seed=seed + layer)
        rows.append({
            "layer": layer, "region": stats.region_of(layer, n_layers),
            "kl_before": stats.nanmean(before[:, layer]),
            "kl_reduction": mean, "ci_low": lo, "ci_high": hi, "count": int(np.sum(~np.isnan(x))),
            "effect_dz": stats.cohens_dz(x), "p_value": p,
            "sink_mass": m, "sink_mass_low": mlo, "sink_mass_high": mhi,
            "n_sinks": float(nsink[:, layer].mean()), "sinks_include_first": float(first[:, layer].mean()),
        })
    df = pd.DataFrame(rows)
    df["p_holm"] = stats.holm(df["p_value"].to_numpy())
    return df


def region_table(samples: Mapping[str, np.ndarray], rule: str, seed: int = 0) -> pd.DataFrame:
    """Corrected KL reduction and sink mass averaged over the layers of each region (thirds,
    ``stats.layer_regions``) per sentence, with bootstrap intervals over sentences."""
    red = samples[inf.removal_key(rule, "reduction", "corrected")]  # [sample, layer]
    mass = samples[inf.removal_key(rule, "mass_all_heads")]  # [sample, layer]
    rows = []
    for region, layers in stats.layer_regions(red.shape[1]).items():
        if not layers:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN sentences (no sink in the region)
            r = np.nanmean(red[:, layers], axis=1)
            m = np.nanmean(mass[:, layers], axis=1)
        mean, lo, hi = stats.bootstrap_ci(r, seed=seed)
        mm, mlo, mhi = stats.bootstrap_ci(m, seed=seed)
        rows.append({"region": region, "layers": f"{layers[0]}-{layers[-1]}", "kl_reduction": mean, "ci_low": lo,
                     "ci_high": hi, "sink_mass": mm, "sink_mass_low": mlo, "sink_mass_high": mhi})
    return pd.DataFrame(rows)


def from_summaries(record: dict[str, Any], summaries: list[dict[str, torch.Tensor]], seed: int = 0) -> ModelResult:
    """A ``ModelResult`` from the reducer outputs of every sentence (no output check, no Fisher norms yet)."""
    if not summaries:
        raise ValueError("no sentences to aggregate")
    r = ModelResult(analysis=ANALYSIS, record=record, n_sentences=len(summaries), samples=stack_all(summaries),
                    data={"output": None, "fisher": {}}, params={"seed": seed})
    r.layers = model_layers(r, "corrected")
    return r


def model_layers(r: ModelResult, mode: Mode, rule: str = DEFAULT_RULE) -> pd.DataFrame:
    """:func:`layer_table` of ``r`` under ``mode`` and sink ``rule`` (computed once per result)."""
    mode = check_mode(mode)
    done = r.data.setdefault("layer_tables", {})  # (mode, rule) -> table
    if (mode, rule) not in done:
        done[(mode, rule)] = layer_table(r.samples, mode, rule, seed=_seed(r))
    return done[(mode, rule)]


def model_regions(r: ModelResult, rule: str = DEFAULT_RULE) -> pd.DataFrame:
    """:func:`region_table` of ``r`` for sink ``rule``."""
    return region_table(r.samples, rule, seed=_seed(r))


def tables(r: ModelResult, mode: Mode) -> dict[str, pd.DataFrame]:
    """``layers`` under ``mode`` (``DEFAULT_RULE``); ``"corrected"`` adds ``regions``."""
    if mode == "faithful":
        return {"layers": model_layers(r, mode)}
    return {"layers": model_layers(r, mode), "regions": model_regions(r)}


def analyse_model(ref: str, texts: list[str], opts: RunOptions | None = None, *, n_output: int = 50,
                  n_fisher: int = 16, seed: int = 0, twin: bool = False, **overrides: Any) -> ModelResult:
    """Every suite of the chapter for ``ref`` (cached): KL change and sink mass on all ``texts``, the
    output-level check on the first ``n_output``, Fisher norms (both modes) on the first ``n_fisher``.

    ``opts``/``overrides`` are run options (``batch_size=``, ``bos_policy=``, ...); every suite gets all
    of them, and ``params`` records them with ``n_output``, ``n_fisher`` and ``seed``.
    ``twin``: also run the model's random-initialized twin (:func:`~sinkframes.results.with_twin`),
    the null of the depth and shape claims. The twin runs the
    KL suite only (no output check, no Fisher norms): the shape claims read the KL profile.
    """
    if n_output < 0 or n_fisher < 0:
        raise ValueError("n_output and n_fisher must be >= 0")
    o = RunOptions.build(opts, **overrides)
    ex = summarize(ref, texts, inf.InformationReducer(), o)
    r = from_summaries(ex.record, ex.summaries or [], seed=seed)
    r.from_cache = ex.from_cache
    r.params.update({"n_output": n_output, "n_fisher": n_fisher, **asdict(o)})
    arch = ex.record.get("architecture")
    if n_output and not hook_supports(arch):
        # the check edits attention inside the model, through the one attention hook, which this architecture's
        # attention code (computed inline, not through an eager attention function) does not offer
        r.data["output_unavailable"] = (f"`{ref}`: no output-level check (the attention hook does not support "
                                        f"{arch}'s attention)")
    elif n_output:
        r.data["output"] = sink_removal.cached_output_check(ref, texts[:n_output], seed=seed, opts=o)
    if n_fisher:
        r.data["fisher"] = {m: fisher_mod.cached_fisher(ref, texts[:n_fisher], m, seed=seed, opts=o) for m in MODES}
    attach_halves(r, lambda k: half_of(r, k))
    return with_twin(r, lambda t: analyse_model(t, texts, o, n_output=0, n_fisher=0, seed=seed)) if twin else r


def half_of(r: ModelResult, k: int) -> ModelResult:
    """``r`` on half ``k`` of its sentences (``base.split_halves``), each suite halved over its own sentences: the
    KL suite over the page's, the output check over its first ``n_output``, Fisher over its first ``n_fisher``."""
    part = split_halves(r.n_sentences)[k]
    half = ModelResult(analysis=ANALYSIS, record=r.record, n_sentences=len(part),
                       samples={name: a[part.start:part.stop] for name, a in r.samples.items()},
                       data={"output": None, "fisher": {}}, params=dict(r.params))
    half.layers = model_layers(half, "corrected")
    if "output_unavailable" in r.data:
        half.data["output_unavailable"] = r.data["output_unavailable"]
    out = r.data.get("output")
    if out is not None:
        per = out.per_sentence
        keep = split_halves(int(per["sentence"].max()) + 1)[k]
        half.data["output"] = sink_removal.summarize_check(out.ref, out.causal, per[per["sentence"].isin(keep)],
                                                            seed=_seed(r))
    for mode, f in (r.data.get("fisher") or {}).items():
        keep = split_halves(int(f.values["sentence"].max()) + 1)[k]
        half.data["fisher"][mode] = replace(f, values=f.values[f.values["sentence"].isin(keep)])
    return half


def analyse(models: list[str], texts: list[str], opts: RunOptions | None = None, *, n_output: int = 50,
            n_fisher: int = 16, seed: int = 0, twin: bool = True, **overrides: Any) -> Results:
    """:func:`analyse_model` for each model (with its random-initialized twin unless ``twin`` is false), in
    order; a failing model is reported, not fatal (``each_model``)."""
    if n_output < 0 or n_fisher < 0:
        raise ValueError("n_output and n_fisher must be >= 0")
    o = RunOptions.build(opts, **overrides)
    return each_model(models, lambda m: analyse_model(m, texts, o, n_output=n_output, n_fisher=n_fisher, seed=seed,
                                                      twin=twin), ANALYSIS)


def _seed(r: ModelResult) -> int:
    """The analysis' seed (bootstrap intervals of the tables)."""
    return int(r.params.get("seed", 0))


def _fisher(r: ModelResult) -> dict[Mode, fisher_mod.FisherResult]:
    """The Fisher results per mode (empty when ``n_fisher=0``)."""
    return r.data.get("fisher") or {}


def kl_profiles(results: list[ModelResult], rule: str = DEFAULT_RULE) -> pd.DataFrame:
    """Long table for plotting: model, mode, layer, relative depth, KL reduction, interval, sink mass."""
    frames = []
    for r in results:
        for mode in MODES:
            d = model_layers(r, mode, rule).copy()
            d["model"], d["mode"] = r.ref, mode
            d["depth"] = d["layer"] / max(1, r.record["n_layers"] - 1)
            if mode == "faithful":
                d["ci_low"] = d["kl_reduction"] - d["kl_reduction_std"]
                d["ci_high"] = d["kl_reduction"] + d["kl_reduction_std"]
            frames.append(d)
    return pd.concat(frames, ignore_index=True)


def summary_table(results: list[ModelResult], rule: str = DEFAULT_RULE) -> pd.DataFrame:
    """One row per model and mode: KL reduction by region, layers with negative / positive
    reduction, sink mass range, and (corrected) layers significant after Holm correction."""
    rows = []
    for r in results:
        for mode in MODES:
            d = model_layers(r, mode, rule)
            row: dict[str, Any] = {"model": r.ref, "family": r.record["family"], "mode": mode, "layers": len(d)}
            for region in ("early", "middle", "late"):
                sub = d[d["region"] == region]
                row[f"kl_{region}"] = float(sub["kl_reduction"].mean()) if len(sub) else np.nan
            if mode == "corrected":
                sig = d["p_holm"] < 0.05
                row["negative_layers"] = int(((d["ci_high"] < 0) & sig).sum())
                row["positive_layers"] = int(((d["ci_low"] > 0) & sig).sum())
            else:
                row["negative_layers"] = int((d["kl_reduction"] < 0).sum())
                row["positive_layers"] = int((d["kl_reduction"] > 0).sum())
            row["sink_mass_min"] = float(d["sink_mass"].min())
            row["sink_mass_max"] = float(d["sink_mass"].max())
            row["sink_mass_max_layer"] = int(d["layer"].iloc[int(np.nanargmax(d["sink_mass"].to_numpy()))])
            rows.append(row)
    return pd.DataFrame(rows)


def rule_table(results: list[ModelResult]) -> pd.DataFrame:
    """Corrected mean KL reduction and sink mass per model and sink rule, with the mean number
    of sinks and how often position 0 is one of them."""
    rows = []
    for r in results:
        for rule in inf.rules():
            d = model_layers(r, "corrected", rule)
            rows.append({"model": r.ref, "rule": rule, "n_sinks": d["n_sinks"].mean(),
                         "position0_is_sink": d["sinks_include_first"].mean(),
                         "kl_reduction": d["kl_reduction"].mean(), "sink_mass": d["sink_mass"].mean()})
    return pd.DataFrame(rows)


def fisher_table(results: list[ModelResult]) -> pd.DataFrame:
    """One row per model and mode: early-third share (with interval), attention and MLP shares,
    peak layer and the loss used."""
    rows = []
    for r in results:
        for mode, fr in _fisher(r).items():
            share, lo, hi = fr.early_share(seed=_seed(r))
            g = fr.groups().set_index("group")["share"]
            by = fr.by_layer()
            peak = by.iloc[int(np.nanargmax(by["fisher"].to_numpy()))]
            rows.append({"model": r.ref, "mode": mode, "sentences": int(fr.values["sentence"].nunique()),
                         "early_share": share, "early_low": lo, "early_high": hi,
                         "attention_share": float(g.get("attention", 0.0)), "mlp_share": float(g.get("mlp", 0.0)),
                         "peak_layer": int(peak["layer"]),
                         "peak_region": peak["region"], "objective": fr.objective})
    return pd.DataFrame(rows)


def fisher_profiles(results: list[ModelResult]) -> pd.DataFrame:
    """Long table: model, mode, layer, relative depth, Fisher share of the layer."""
    frames = []
    for r in results:
        for mode, fr in _fisher(r).items():
            d = fr.by_layer()
            d["model"], d["mode"] = r.ref, mode
            d["depth"] = d["layer"] / max(1, r.record["n_layers"] - 1)
            frames.append(d)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def output_unavailable(results: list[ModelResult]) -> list[str]:
    """Why the output-level check did not run on some models (a sentence each; empty when it ran on all)."""
    return [str(r.data["output_unavailable"]) for r in results if r.data.get("output_unavailable")]


def output_table(results: list[ModelResult]) -> pd.DataFrame:
    """The output-level check of every model: one row per condition."""
    frames = [r.data["output"].summary for r in results if r.data.get("output") is not None]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def on_uniform_attention(result: ModelResult, record: dict[str, Any], seed: int, graph: str = "dense") -> ModelResult:
    """The KL suite of ``result``'s shapes under uniform attention: the verdicts' attention null (``graph`` unused)."""
    return from_summaries(record, null_summaries(result, inf.InformationReducer()), seed=seed)

# ---------------------------------------------------------------------- measures the verdicts read
# Each is registered in :data:`sinkframes.verdicts.measures.MEASURES` under the name a claim of
# ``paper.claims`` reads; see that module for the bootstrap and the nulls.

def _mode_layers(r: ModelResult, mode: Mode) -> list[int]:
    """The layers ``mode`` analyses: the official notebook's subset (faithful) or every layer."""
    return inf.official_layers(r.n_layers) if mode == "faithful" else list(range(r.n_layers))


def _kl(r: ModelResult, mode: Mode) -> tuple[np.ndarray, list[int]]:
    """``([sample, layer], layers)``: the KL reduction under ``mode`` on the layers that mode analyses."""
    layers = _mode_layers(r, mode)
    return r.samples[inf.removal_key("p90", "reduction", mode)][:, layers], layers  # [sample, layer]


def _mass(r: ModelResult, mode: Mode) -> tuple[np.ndarray, list[int]]:
    return _mass_at(r, mode, "p90")


def _kl_region_shape(combine: Callable[[dict[str, float]], float]
                     ) -> Callable[[ModelResult, Mode], tuple[np.ndarray, Callable[[np.ndarray], float]]]:
    def shape(r: ModelResult, mode: Mode) -> tuple[np.ndarray, Callable[[np.ndarray], float]]:
        x, layers = _kl(r, mode)
        return x, region_stat(layers, r.n_layers, combine)

    return shape


shape_measure("information.kl_u_contrast", "information")(
    _kl_region_shape(lambda g: min(g["early"], g["late"]) - g["middle"]))


def _kl_groups(r: ModelResult, mode: Mode, skip_first: bool) -> tuple[np.ndarray, dict[str, list[int]]]:
    """``([sample, layer], region -> positions)``: the KL reduction and its regions (layer 0 left out of
    the early region when ``skip_first``)."""
    x, layers = _kl(r, mode)
    reg = regions_in(layers, r.n_layers)
    if skip_first:
        reg["early"] = [i for i in reg["early"] if layers[i] != 0]
    return x, reg


def _kl_regions_fn(skip_first: bool) -> MeasureFn:
    def fn(r: ModelResult, mode: Mode) -> Estimate | None:
        x, reg = _kl_groups(r, mode, skip_first)
        parts = region_parts(x, reg, seed_of(r))
        whole = boot(x[:, [i for v in reg.values() for i in v]], lambda m: float(np.nanmean(m)), seed_of(r))
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
    reg = regions_in(layers, r.n_layers)
    groups = {"first layer": [0], "middle": reg["middle"], "last layer": [len(layers) - 1]}
    parts = region_parts(x, groups, seed_of(r))
    return with_parts(boot(x, lambda m: float(np.nanmean(m)), seed_of(r)), parts,
                      detail=f"layers {layers[0]} and {layers[-1]}, middle third")


@measure("information.kl_early_drop_p80_p95", "information", null="none")
def kl_early_drop_p80_p95(r: ModelResult, mode: Mode) -> Estimate | None:
    """Relative drop of the early-region KL reduction from the 80th- to the 95th-percentile sink rule:
    ``1 - early(p95) / early(p80)``."""
    layers = _mode_layers(r, mode)
    early = regions_in(layers, r.n_layers)["early"]
    keys = [inf.removal_key("p80", "reduction", mode), inf.removal_key("p95", "reduction", mode)]
    if not all(k in r.samples for k in keys) or not early:
        return None
    a = r.samples[keys[0]][:, layers][:, early]  # [sample, early layer]
    b = r.samples[keys[1]][:, layers][:, early]
    k = a.shape[1]

    def stat(m: np.ndarray) -> float:
        lo80 = float(np.nanmean(m[:k]))
        return 1.0 - float(np.nanmean(m[k:])) / lo80 if abs(lo80) > 1e-12 else math.nan

    return boot(np.concatenate([a, b], axis=1), stat, seed_of(r))


@measure("information.kl_first_layer", "information")
def kl_first_layer(r: ModelResult, mode: Mode) -> Estimate | None:
    x, _ = _kl(r, mode)
    return boot(x[:, 0], float, seed_of(r))


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
    """``([sample, layer], layers)``: the attention mass on ``rule``'s sinks (faithful: the first four heads)."""
    key = inf.removal_key(rule, "mass_first4" if mode == "faithful" else "mass_all_heads")
    layers = _mode_layers(r, mode)
    return r.samples[key][:, layers], layers


def _concentration_regions(rule: str) -> MeasureFn:
    def fn(r: ModelResult, mode: Mode) -> Estimate | None:
        x, layers = _mass_at(r, mode, rule)
        parts = region_parts(x, regions_in(layers, r.n_layers), seed_of(r))
        return with_parts(boot(x, lambda m: float(np.nanmean(m)), seed_of(r)), parts,
                          detail=f"region means, {rule} sinks")

    return fn


MEASURES["information.concentration_regions"] = Measure(
    "information.concentration_regions", "information", _concentration_regions("p90"))
MEASURES["information.concentration_regions_p80"] = Measure(
    "information.concentration_regions_p80", "information", _concentration_regions("p80"))


@measure("information.concentration_max", "information")
def concentration_max(r: ModelResult, mode: Mode) -> Estimate | None:
    x, layers = _mass(r, mode)
    est = boot(x, lambda m: float(np.nanmax(m)), seed_of(r))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        m = np.nanmean(x, 0)
    where = f"at layer {layers[int(np.nanargmax(m))]} of {r.n_layers}" if not np.all(np.isnan(m)) else ""
    return Estimate(est.value, est.low, est.high, est.n, est.interval, where, est.undetermined)


#: half-width, in relative depth (layer / (layers - 1)), of the window around a printed layer
DEPTH_WINDOW = 0.1


def layers_near(layer_range: tuple[int, int], of: int, n_layers: int, window: float = DEPTH_WINDOW) -> list[int]:
    """This model's layers whose relative depth lies within ``window`` of the printed layers ``layer_range``
    (first, last; 0-based) of a model with ``of`` layers: a printed layer read at its depth, not by its number."""
    lo, hi = layer_range[0] / (of - 1) - window, layer_range[1] / (of - 1) + window
    return [i for i in range(n_layers) if lo - 1e-9 <= i / max(1, n_layers - 1) <= hi + 1e-9]


def concentration_near(layer_range: tuple[int, int], of: int) -> MeasureFn:
    """The largest layer-mean concentration among the layers at the printed layers' relative depth
    (:func:`layers_near`) with the corrected computation; the authors' computation (faithful) keeps their
    maximum over the layers their notebook analyses, as the paper's number was made."""
    def fn(r: ModelResult, mode: Mode) -> Estimate | None:
        if mode == "faithful":
            return concentration_max(r, mode)
        x, layers = _mass(r, mode)
        near = layers_near(layer_range, of, r.n_layers)
        idx = [i for i, layer in enumerate(layers) if layer in near]
        if not idx:
            return Estimate(math.nan, math.nan, math.nan, undetermined=True,
                            detail=f"no analysed layer at the depth of layer(s) {layer_range} of {of}")
        est = boot(x[:, idx], lambda m: float(np.nanmax(m)), seed_of(r))
        where = (f"largest layer mean over layers {near[0]}-{near[-1]} of {r.n_layers}, the relative depth of "
                 f"layer{'s' if layer_range[0] != layer_range[1] else ''} "
                 f"{'-'.join(str(v) for v in dict.fromkeys(layer_range))} of {of} +- {DEPTH_WINDOW:g}")
        return Estimate(est.value, est.low, est.high, est.n, est.interval, where, est.undetermined)

    return fn


#: the printed layers of the concentration claims, with the layer count of the paper's model (App. E: Llama-3.2-3B,
#: 28 layers; App. F: Qwen2.5-7B, 28; App. G: Mistral-7B, 32, and a Gemma model with at least 22 layers whose variant
#: the paper does not name, read as gemma-7b's 28)
PRINTED_CONCENTRATION_LAYERS = {"llama_layer25": ((25, 25), 28), "qwen_layers23_25": ((23, 25), 28),
                                "gemma_layer21": ((21, 21), 28), "mistral_layer21": ((21, 21), 32)}
MEASURES["information.concentration_at_llama_layer25"] = Measure(
    "information.concentration_at_llama_layer25", "information",
    concentration_near(*PRINTED_CONCENTRATION_LAYERS["llama_layer25"]))
MEASURES["information.concentration_at_qwen_layers23_25"] = Measure(
    "information.concentration_at_qwen_layers23_25", "information",
    concentration_near(*PRINTED_CONCENTRATION_LAYERS["qwen_layers23_25"]))
MEASURES["information.concentration_at_gemma_layer21"] = Measure(
    "information.concentration_at_gemma_layer21", "information",
    concentration_near(*PRINTED_CONCENTRATION_LAYERS["gemma_layer21"]))
MEASURES["information.concentration_at_mistral_layer21"] = Measure(
    "information.concentration_at_mistral_layer21", "information",
    concentration_near(*PRINTED_CONCENTRATION_LAYERS["mistral_layer21"]))


@measure("information.concentration_first_layer", "information")
def concentration_first_layer(r: ModelResult, mode: Mode) -> Estimate | None:
    x, _ = _mass(r, mode)
    return boot(x[:, 0], float, seed_of(r))


def _fisher_at(r: ModelResult, mode: Mode) -> fisher_mod.FisherResult | None:
    """The Fisher result of ``mode``, or None when the run kept no Fisher pass."""
    return _fisher(r).get(mode)


@measure("information.fisher_early_share", "information", null="equal_fisher_early")
def fisher_early_share(r: ModelResult, mode: Mode) -> Estimate | None:
    fr = _fisher_at(r, mode)
    if fr is None:
        return None
    share, lo, hi = fr.early_share(seed=seed_of(r))
    return Estimate(share, lo, hi, n=int(fr.values["sentence"].nunique()), interval=BOOT)


@measure("information.fisher_peak_region", "information", null="equal_fisher_peak")
def fisher_peak_region(r: ModelResult, mode: Mode) -> Estimate | None:
    fr = _fisher_at(r, mode)
    if fr is None:
        return None
    by = fr.by_layer()
    peak = by.iloc[int(np.nanargmax(by["fisher"].to_numpy()))]
    return Estimate(str(peak["region"]), n=int(fr.values["sentence"].nunique()), interval="none (a region)",
                    detail=f"peak at layer {int(peak['layer'])}")


@measure("information.fisher_attention_share", "information", null="none")
def fisher_attention_share(r: ModelResult, mode: Mode) -> Estimate | None:
    fr = _fisher_at(r, mode)
    if fr is None:
        return None
    g = fr.groups().set_index("group")["share"]
    return Estimate(float(g.get("attention", math.nan)), n=int(fr.values["sentence"].nunique()),
                    interval=NO_INTERVAL)


@measure("information.fisher_last3_share", "information", null="equal_fisher_last3")
def fisher_last3_share(r: ModelResult, mode: Mode) -> Estimate | None:
    fr = _fisher_at(r, mode)
    if fr is None:
        return None
    per = fr.per_sentence_layers()  # [sentence, layer]
    return boot(per, lambda m: float(m[-3:].sum() / m.sum()) if m.sum() > 0 else math.nan, seed_of(r))


def _equal_fisher(r: ModelResult, mode: Mode, layers: Callable[[int], list[int]]) -> Estimate | None:
    fr = _fisher_at(r, mode)
    if fr is None:
        return None
    return Estimate(len(layers(r.n_layers)) / r.n_layers, n=0, interval="none (analytic)",
                    detail="every layer the same Fisher norm")


NULLS["equal_fisher_early"] = lambda r, mode: _equal_fisher(r, mode, lambda n: stats.layer_regions(n)["early"])
NULLS["equal_fisher_last3"] = lambda r, mode: _equal_fisher(r, mode, lambda n: list(range(max(0, n - 3), n)))
NULLS["equal_fisher_peak"] = lambda r, mode: (
    None if _fisher_at(r, mode) is None else Estimate("no peak", interval="none (analytic)",
                                                   detail="every layer the same Fisher norm"))


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
    est = boot(s - q, float, seed_of(r))
    return Estimate(est.value, est.low, est.high, est.n, est.interval,
                    f"{metric}: {'sink' if removed == 'sink' else 'second random key'} {s.mean():.4g}, random key "
                    f"{q.mean():.4g}", est.undetermined)


@measure("information.output_sink_minus_random", "information", null="second_random_key")
def output_sink_minus_random(r: ModelResult, mode: Mode) -> Estimate | None:
    return _removal_difference(r, mode, "sink")


NULLS["second_random_key"] = lambda r, mode: _removal_difference(r, mode, "random2")


SPEC = register(Analysis(ANALYSIS, __name__, analyse=analyse, tables=tables, on_uniform_attention=on_uniform_attention,
                          family_order=3, family_params=("n_output", "n_fisher", "seed"), left_out=output_unavailable))
