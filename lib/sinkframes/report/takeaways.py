"""One-sentence takeaways under the book's figures, written from the results the figure draws (never typed).

Each function takes what its figure function takes and returns one sentence for ``pg.figure(fig, caption,
takeaway)`` (``book.figure_caption``). Numbers are printed with three significant digits at most; a quantity
with no finite value is left out of the sentence, and a figure with nothing measured says so.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..analyses.frames import position0_dominated
from .page_verdicts import number_text

if TYPE_CHECKING:
    from ..results import ModelResult

NOTHING = "No model has a finite value to show here."


def _finite(values: Mapping[str, Any]) -> dict[str, float]:
    return {k: float(v) for k, v in values.items() if v is not None and math.isfinite(float(v))}


def spread(values: Mapping[str, Any], what: str) -> str:
    """``what`` per model as one sentence: its value for one model, else the highest and lowest with their
    models ("{what} ranges from 0.12 (a) to 0.93 (b)."); :data:`NOTHING` without a finite value."""
    vals = _finite(values)
    if not vals:
        return NOTHING
    if len(vals) == 1:
        (name, v), = vals.items()
        return f"{what[0].upper()}{what[1:]} is {number_text(v)} in {name}."
    lo, hi = min(vals, key=vals.__getitem__), max(vals, key=vals.__getitem__)
    if number_text(vals[lo]) == number_text(vals[hi]):
        return f"{what[0].upper()}{what[1:]} is {number_text(vals[lo])} in all {len(vals)} models."
    return f"{what[0].upper()}{what[1:]} ranges from {number_text(vals[lo])} ({lo}) to {number_text(vals[hi])} ({hi})."


def _layer_mean(results: Sequence[ModelResult], column: str) -> dict[str, float]:
    return {r.ref: float(np.nanmean(r.layers[column])) for r in results if column in r.layers}


# ----------------------------------------------------------------------------------------- 1. reference frames
def first_share(results: Sequence[ModelResult]) -> str:
    """The share of attention on position 0, over every sentence, layer and head, per model."""
    return spread({r.ref: r.data["evidence"]["first_token_share"] for r in results},
                  "the mean share of attention on position 0 over all sentences")


def dominated_layers(results: Sequence[ModelResult], labels: Sequence[str] | None = None) -> str:
    """In how many layers of each model position 0 is the strongest key of most queries."""
    names = list(labels) if labels else [r.ref for r in results]
    parts = [f"{int(position0_dominated(r.layers).sum())} of {len(r.layers)} layers of {name}"
             for r, name in zip(results, names, strict=True)]
    return "Position 0 is the strongest key of most queries in " + "; ".join(parts) + "."


def layer_frames(results: Sequence[ModelResult]) -> str:
    """How many layers of all the models read each frame (the frame most sentences read in the layer), and the
    frame each model reads as a whole (``data["profile"]`` of the frame analysis)."""
    from ..metrics.frames import FRAMES

    layers = Counter(kind for r in results for kind in r.data["profile"]["layer_frames"])
    if not layers:
        return NOTHING
    counts = ", ".join(f"{layers[k]} {k}" for k in (*FRAMES, *sorted(set(layers) - set(FRAMES))) if layers[k])
    models: dict[str, list[str]] = {}
    for r in results:
        models.setdefault(str(r.data["profile"]["label"]), []).append(r.ref)
    whole = "; ".join(f"{label}: {', '.join(refs)}" for label, refs in models.items())
    noun = "model" if len(results) == 1 else f"{len(results)} models"
    total = sum(layers.values())
    return f"Of the {total} layer{'s' if total != 1 else ''} of the {noun}, {counts}; read as a whole, {whole}."


def head_share(results: Sequence[ModelResult], measure: str, what: str, at_least: float = 0.5) -> str:
    """The share of (layer, head) cells of each model whose ``measure`` is at least ``at_least`` (``what`` says
    it in words)."""
    return spread({r.ref: float(np.nanmean(np.asarray(r.heads[measure], dtype=float) >= at_least))
                   for r in results}, f"the share of heads in which {what}")


def reference_rules(results: Sequence[ModelResult]) -> str:
    """How the two reference-token rules compare, model by model."""
    ev = {r.ref: r.data["evidence"] for r in results}
    more = sorted(k for k, e in ev.items() if e["faithful_reference_count"] > e["reference_count"])
    return (f"The official rule counts more reference tokens than the per-head rule in {len(more)} of {len(ev)} "
            f"models" + (f" ({', '.join(more)})" if more else "") + "; "
            + spread({k: e["reference_count"] for k, e in ev.items()}, "the per-head count").lower())


def forced_bos(default: Sequence[ModelResult], forced: Sequence[ModelResult]) -> str:
    """How the share on position 0 moves when a start token is forced there."""
    before = {r.ref: r.data["evidence"]["first_token_share"] for r in default}
    parts = [f"{number_text(before[f.ref])} to {number_text(f.data['evidence']['first_token_share'])} in {f.ref}"
             for f in forced if f.ref in before]
    if not parts:
        return "No model was run with a forced start token."
    return "Forcing a start token moves the mean share on position 0 from " + "; ".join(parts) + "."


# ----------------------------------------------------------------------------------------- 2. softmax geometry
def sweep_takeaway(sweep: pd.DataFrame, column: str, what: str) -> str:
    """``column`` of the sink sweep at its largest sink logit, per row length."""
    last = sweep.loc[sweep.groupby("keys")["sink_logit"].idxmax()]
    vals = {f"{int(n)} keys": v for n, v in zip(last["keys"], last[column], strict=True)}
    return spread(vals, f"{what} at a sink logit of {number_text(float(last['sink_logit'].max()))}")


def key_norm_takeaway(table: pd.DataFrame) -> str:
    """The sink share at the smallest and largest sink key norm of the sweep."""
    t = table.sort_values("sink key norm")
    lo, hi = t.iloc[0], t.iloc[-1]
    return (f"The mean sink share goes from {number_text(lo['sink share (mean)'])} at a sink key norm of "
            f"{number_text(lo['sink key norm'])} to {number_text(hi['sink share (mean)'])} at "
            f"{number_text(hi['sink key norm'])}.")


def entropy_takeaway(results: Sequence[ModelResult]) -> str:
    """The correlation, over layers, of normalized entropy with the share on position 0, per model."""
    r_by_model = {}
    for r in results:
        d = r.layers[["first_share", "normalized_entropy"]].dropna()
        if len(d) > 2 and d.std().min() > 0:
            r_by_model[r.ref] = float(np.corrcoef(d.iloc[:, 0], d.iloc[:, 1])[0, 1])
    return spread(r_by_model, "the correlation over layers of entropy with the share on position 0")


def vertex_takeaway(results: Sequence[ModelResult]) -> str:
    """The share of rows with a majority key, averaged over layers, per model."""
    return spread(_layer_mean(results, "near_vertex"), "the share of rows with a majority key (mean over layers)")


# ----------------------------------------------------------------------------------------------- 3. topology
def betti0_at(results: Sequence[ModelResult], t: float = 0.05) -> str:
    """The corrected beta0 at threshold ``t``, averaged over layers, per model."""
    from ..analyses import topology as atopo

    vals = {}
    for mt in results:
        b0, _ = atopo.mean_curves(mt)  # [layer, threshold]
        vals[mt.ref] = float(np.nanmean(np.asarray(b0)[:, atopo.threshold_index(mt, t)]))
    return spread(vals, f"the mean number of components (corrected beta0) at t = {t:g}, averaged over layers,")


def faithful_betti0(results: Sequence[ModelResult]) -> str:
    """The faithful Betti0 point count, averaged over sentences and layers, per model."""
    from ..analyses import topology as atopo

    return spread({mt.ref: float(np.nanmean(atopo.faithful_field(mt, "betti0"))) for mt in results},
                  "the faithful Betti0 point count (mean over sentences and layers)")


# ------------------------------------------------------------------------------------------ 4. spectral graphs
def peak_depth(table: pd.DataFrame, metric: str, what: str, threshold: float = 0.01) -> str:
    """The relative depth at which ``metric``'s layer mean peaks at ``threshold``, per model."""
    d = table[(table.metric == metric) & np.isclose(table.threshold, threshold)].dropna(subset=["mean"])
    vals = {str(m): float(g["depth"].to_numpy()[int(np.argmax(g["mean"].to_numpy()))])
            for m, g in d.groupby("model", sort=False)}
    return spread(vals, f"the relative depth where {what} peaks at t = {threshold:g}")


def sign_changes(corr: pd.DataFrame) -> str:
    """How often the across-layer correlation changes sign from one threshold to the next, per model."""
    vals = {}
    for model, g in corr.groupby("model", sort=False):
        n = 0
        for _, m in g.groupby("metric"):
            r = np.sign(m.sort_values("threshold")["r across layers"].dropna().to_numpy())
            n += int((r[1:] * r[:-1] < 0).sum())
        vals[str(model)] = n
    return spread(vals, "the number of sign changes of the across-layer correlation over the thresholds")


def spectral_heads(results: Sequence[ModelResult], metric: str, what: str, at_least: float = 0.5) -> str:
    """The share of heads whose corrected ``metric`` is at least ``at_least``, per model."""
    from ..analyses import spectral as sp

    return spread({ms.ref: float(np.nanmean(np.asarray(sp.head_table(ms, metric), dtype=float) >= at_least))
                   for ms in results}, f"the share of heads whose {what} is at least {at_least:g}")


def effectiveness(table: pd.DataFrame) -> str:
    """The official effectiveness score, averaged over thresholds, per model."""
    means = table.groupby("model", sort=False)["effectiveness score"].mean()
    return spread({str(k): v for k, v in means.items()},
                  "the official effectiveness score (mean over thresholds)")


# -------------------------------------------------------------------------------------- 5. information geometry
def profile_peak(profiles: pd.DataFrame, column: str, what: str, mode: str = "corrected") -> str:
    """The largest per-layer ``column`` of ``mode`` (the only mode when there is one), per model."""
    d = profiles[profiles["mode"] == mode] if mode in set(profiles["mode"]) else profiles
    peaks = d.groupby("model", sort=False)[column].max()
    return spread({str(k): v for k, v in peaks.items()}, f"the largest per-layer {what} ({mode})")


def output_ratio(checks: pd.DataFrame) -> str:
    """Removing the sinks against removing random keys: the ratio of the output changes, per model."""
    if checks.empty:
        return "No model ran the output-level check."
    vals = {}
    for model, g in checks.groupby("model", sort=False):
        by = g.set_index("condition")["mean"]
        if {"sink", "random"} <= set(by.index) and by["random"] > 0:
            vals[str(model)] = float(by["sink"] / by["random"])
    return spread(vals, "the output change from removing the sinks over that from removing random keys")


def family_kl(fr: Any) -> str:
    """The largest corrected KL reduction of the family's models (the family appendix's figure)."""
    from ..analyses import information

    if fr.pipeline_check or not fr.results.get("information"):
        return ""
    return profile_peak(information.kl_profiles(fr.results["information"]), "kl_reduction", "KL reduction (nats)")


# ------------------------------------------------------------------------------------ 6. sink geometry, values
def layer_mean(results: Sequence[ModelResult], column: str, what: str) -> str:
    """``column`` of each model's layer table, averaged over layers."""
    return spread(_layer_mean(results, column), f"{what} (mean over layers)")


def head_mean(results: Sequence[ModelResult], measure: str, what: str) -> str:
    """A per-head measure averaged over layers and heads, per model."""
    return spread({r.ref: float(np.nanmean(np.asarray(r.heads[measure], dtype=float))) for r in results},
                  f"{what} (mean over layers and heads)")


def rope_shift(results: Sequence[ModelResult]) -> str:
    """How much the rotary embedding changes the mean query cosine to key 0, per model."""
    return spread({r.ref: float(np.nanmean(r.layers["cos_to_sink_post"] - r.layers["cos_to_sink_pre"]))
                   for r in results}, "the change of the mean query cosine to key 0 made by the rotary embedding")


def counts_table(counts: pd.DataFrame, column: str, what: str) -> str:
    """One column of a per-model table."""
    return spread(dict(zip(counts["model"].astype(str), counts[column], strict=True)), what)


# ------------------------------------------------------------------------------ B. random-matrix statistics
def twin_share(trained: Sequence[ModelResult], twins: Sequence[ModelResult | None]) -> str:
    """The first-token share of each trained model beside its random-initialized twin (mean over layers)."""
    parts = []
    for ms, twin in zip(trained, twins, strict=True):
        text = f"{number_text(float(np.nanmean(ms.layers['first_token_share'])))} in {ms.ref}"
        if twin is not None:
            text += f" against {number_text(float(np.nanmean(twin.layers['first_token_share'])))} in its random twin"
        parts.append(text)
    return "The mean first-token share over layers is " + "; ".join(parts) + "."


# ------------------------------------------------------------------------------------ 8. position interventions
def broken_runs(results: Sequence[ModelResult]) -> str:
    """How many interventions broke each model (its function check past the line)."""
    parts = [f"{sum(bool(run['check']['broken']) for run in r.data['runs'].values())} of {len(r.data['runs'])} "
             f"in {r.ref}" for r in results]
    return "Passes that broke the model: " + "; ".join(parts) + "."


def share_range(results: Sequence[ModelResult]) -> str:
    """The spread of the first-token share over each model's interventions."""
    vals = {}
    for r in results:
        shares = [float(np.nanmean(run["arrays"]["first_share"])) for run in r.data["runs"].values()]
        if shares:
            vals[r.ref] = max(shares) - min(shares)
    return spread(vals, "the spread of the first-token share over the interventions (largest minus smallest)")


def stays_on_first(results: Sequence[ModelResult], placement: Sequence[str], where: str = "physical 0") -> str:
    """The share of sink layers whose sink stays on ``where``, averaged over the placement interventions."""
    vals = {}
    for r in results:
        runs = [r.data["runs"][n]["where"][where] for n in placement if n in r.data["runs"] and r.data["sink_layers"]]
        if runs:
            vals[r.ref] = float(np.nanmean(np.asarray(runs, dtype=float)))
    return spread(vals, f"the share of sink layers whose sink stays on {where}, averaged over the interventions,")


def residual_peak(results: Sequence[ModelResult]) -> str:
    """The largest ratio of the first token's residual norm to the other tokens' median, per model."""
    from .. import stats

    return spread({r.ref: float(np.nanmax(stats.nanmean(r.data["runs"]["unmodified"]["arrays"]["residual_ratio"],
                                                       axis=0))) for r in results},
                  "the largest first-token residual norm over the median of the others")


# -------------------------------------------------------------------------------------- 9. controlled grid
def grid_sinks(final: pd.DataFrame, threshold: float = 0.5) -> str:
    """How many cells of the grid end with a largest layer first-token share of at least ``threshold``."""
    n = int((final["peak_first_share"] >= threshold).sum())
    return (f"{n} of {len(final)} cells of the grid end with a largest layer first-token share of at least "
            f"{threshold:g} (seed mean).")


def runs_with_sink(measured: pd.DataFrame, attention: str, threshold: float = 0.5) -> str:
    """How many runs of one attention normalization end with a sink (largest layer share at the last step)."""
    m = measured[measured["attention"] == attention]
    if m.empty:
        return f"No run with {attention} attention was measured."
    last = m.loc[m.groupby("run")["step"].idxmax()]
    n = int((last["first_share"].map(max) >= threshold).sum())
    return (f"{n} of {len(last)} {attention} runs end with a largest layer first-token share of at least "
            f"{threshold:g}.")


def sink_step(series: Any, label: str) -> str:
    """The first checkpoint at which some layer's mean first-token share clears the threshold fixed in advance."""
    from ..analyses.rmt import SINK_SHARE_THRESHOLD

    order = np.argsort([c.step for c in series.checkpoints])
    for i in order:
        shares = np.nanmean(series.results[i].samples["first_token_share"], axis=(0, 2))  # [layer]
        if np.nanmax(shares) >= SINK_SHARE_THRESHOLD:
            return (f"In {label}, a layer's first-token share first clears {SINK_SHARE_THRESHOLD:g} at step "
                    f"{series.checkpoints[i].step}.")
    return f"In {label}, no layer's first-token share clears {SINK_SHARE_THRESHOLD:g} at any checkpoint measured."
