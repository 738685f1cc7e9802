"""Position interventions (Sec. 3.4 tested by counterfactual): change the encoding, keep the weights.

For each model, one cached pass over the sentences per intervention of ``probes.positions`` (the
unmodified pass first), each reduced by ``metrics.positions.PositionReducer``; per intervention:

- the **frame label** of the corrected classifier (``analyses.frames.classify``) on the pass's sink
  evidence, with the mask the pass used (an encoder under the causal-mask intervention is read as
  causal, so it cannot be labelled bidirectional by construction);
- the first- and last-token shares per layer, and **where the sink sits**: per sentence and *sink
  layer* (a layer whose unmodified sink sits on physical position 0 in at least half the sentences),
  whether the intervened sink is on physical position 0, on the token that carries position id 0
  (permutations), on the original first token (token edits), elsewhere, or gone;
- a **function check**: the change of next-token loss on the original tokens (decoders) or the cosine of
  the mean-pooled sentence embedding to the unmodified one (encoders). An intervention that raises the
  loss by more than :data:`MAX_LOSS_RISE` nats, or leaves a cosine under :data:`MIN_EMBEDDING_COSINE`,
  has broken the model: it is reported, and its frame is not scored;
- per layer, the first token's residual norm over the other tokens' and, where the attention hook reads
  values, the first token's value norm over the others' per KV head.

The model's random-initialized twin (``random:<ref>``) runs the passes its nulls read
(``probes.positions.TWIN_NAMES``): the null a change must beat (an untrained network whose attention moves
with the encoding too).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import asdict
from typing import Any

import numpy as np
import pandas as pd
import torch

from .. import stats
from ..extraction.run import run_cached
from ..metrics.frames import (
    code_onehot,
    excess_from_received,
    frames_of_excess,
    labels_from_shares,
    layer_labels,
    model_frame,
)
from ..metrics.positions import TIED, PositionReducer, sink_location
from ..models.loading import RANDOM_PREFIX
from ..models.registry import hook_supports
from ..probes import positions as probe
from ..results import Analysis, ModelResult, Results, attach_halves, each_model, register, split_halves, with_twin
from ..types import Mode, RunOptions
from ..verdicts.measures import BOOT, NULLS, boot, measure, seed_of, shape_measure, with_parts
from ..verdicts.structureless import uniform_attention
from ..verdicts.verdict import Estimate, not_applicable

ANALYSIS = "positions"
#: the function check: an intervention that raises the mean next-token loss by more than this many nats
#: (perplexity times e) or leaves the mean cosine of sentence embeddings to the unmodified ones under
#: MIN_EMBEDDING_COSINE has broken the model, and its frame is not read as evidence
MAX_LOSS_RISE = 1.0
MIN_EMBEDDING_COSINE = 0.8
#: a sink layer: one whose unmodified sink sits on physical position 0 in at least this share of sentences
SINK_LAYER_SHARE = 0.5
REDUCER = PositionReducer()


def one_pass(ref: str, texts: list[str], iv: probe.Intervention, opts: RunOptions, seed: int
             ) -> tuple[dict[str, Any], list[dict[str, Any]], bool]:
    """``(model record, per-sample summaries, cache hit)`` of ``ref`` under ``iv`` (cached on disk)."""

    def iterate(lm: Any, ids: list[list[int]], o: RunOptions, _hidden: bool, _desc: str) -> Any:
        return probe.run(iv, lm, ids, o.batch_size, seed, o.progress)

    payload, hit = run_cached(ref, texts, {"kind": "position-intervention", **iv.key(), "seed": seed,
                                           **REDUCER.key()},
                              lambda sample, _causal: REDUCER(sample), opts, iterate, hidden_states=True,
                              namespace="positions")
    return payload["record"], payload["results"], hit


def _head_mean(summaries: list[dict[str, Any]], name: str) -> np.ndarray:
    x = torch.stack([s[name].float() for s in summaries]).numpy()  # [sample, layer, head]
    return stats.nanmean(x, axis=-1)  # [sample, layer]


def _at(summaries: list[dict[str, Any]], where: str) -> np.ndarray:
    """``[sample, layer]`` head-mean received share of the key at each sample's index ``where`` (NaN: none)."""
    out = []
    for s in summaries:
        k = int(s[where])
        recv = s["received"].float().numpy()  # [layer, key]
        out.append(recv[:, k] if k >= 0 else np.full(recv.shape[0], np.nan))
    return np.stack(out)


def arrays(summaries: list[dict[str, Any]], base: list[dict[str, Any]] | None = None) -> dict[str, np.ndarray]:
    """The per-sample arrays of one pass (``base``: the unmodified pass, for the paired function check)."""
    out = {k: _head_mean(summaries, k) for k in ("first_share", "last_share", "first_concentration",
                                                  "reference_count", "sink_concentration")}
    out["first_share_heads"] = torch.stack([s["first_share"].float() for s in summaries]).numpy()  # [s, l, h]
    # each layer's sink from the kept received shares, ties read as ties (metrics.positions.sink_location)
    out["sink_index"] = (torch.stack([sink_location(s["received"], bool(s["causal"]))[0] for s in summaries]).numpy()
                         if summaries else np.zeros((0, 0), int))  # [sample, layer]
    # each layer's frame (the frame instrument) from the head-mean received shares the summaries keep
    read = [frames_of_excess(excess_from_received(s["received"], bool(s["causal"])), bool(s["causal"]))
            for s in summaries]
    out["frame"] = np.stack([r["frame"].long().numpy() for r in read]) if read else np.zeros((0, 0), int)
    out["frame_anchor"] = np.stack([r["anchor"].long().numpy() for r in read]) if read else np.zeros((0, 0), int)
    out["origin"] = np.array([int(s["origin"]) for s in summaries])
    out["first"] = np.array([int(s["first"]) for s in summaries])
    out["n_tokens"] = np.array([int(s["n_tokens"]) for s in summaries])
    out["at_origin"] = _at(summaries, "origin")
    out["at_first"] = _at(summaries, "first")
    out["residual_ratio"] = torch.stack([s["residual_ratio"].float() for s in summaries]).numpy()  # [s, layer+1]
    out["loss"] = np.array([float(s["loss"]) for s in summaries])
    if summaries and summaries[0]["value_ratio"] is not None:
        out["value_ratio"] = torch.stack([s["value_ratio"].float() for s in summaries]).numpy()  # [s, l, kv]
    if summaries and summaries[0]["pooled"] is not None and base is not None:
        out["cosine"] = np.array([float(torch.nn.functional.cosine_similarity(s["pooled"].float(), b["pooled"].float(),
                                                                             dim=0))
                                  for s, b in zip(summaries, base, strict=True)])
    return out


def frame_of(a: dict[str, np.ndarray], causal: bool) -> str:
    """The frame the instrument reads for one pass (``metrics.frames.model_frame`` of its layers' frames)."""
    frame, anchor = layer_labels(a["frame"], a["frame_anchor"])
    return model_frame(frame, anchor, causal)[0]


def sink_layers(base: dict[str, np.ndarray]) -> list[int]:
    """Layers whose unmodified sink sits on physical position 0 in at least :data:`SINK_LAYER_SHARE` of sentences."""
    share = (base["sink_index"] == 0).mean(0)  # [layer]
    return [int(k) for k in np.nonzero(share >= SINK_LAYER_SHARE)[0]]


def where_the_sink_is(a: dict[str, np.ndarray], layers: list[int]) -> dict[str, np.ndarray]:
    """Per sample, the share of ``layers`` whose sink is on physical position 0, else on the token carrying
    position id 0, else on the original first token (after a prefix or a doubled token), else elsewhere, shared
    by two keys within round-off (``tied``), or gone: exclusive, so the six ``[sample]`` shares sum to 1 (NaN
    without sink layers)."""
    if not layers:
        nan = np.full(a["sink_index"].shape[0], np.nan)
        return {"physical 0": nan, "position id 0": nan, "original first": nan, "elsewhere": nan, "tied": nan,
                "none": nan}
    idx = a["sink_index"][:, layers]  # [sample, sink layer]
    origin, first = a["origin"][:, None], a["first"][:, None]
    at0 = idx == 0
    at_origin = (idx == origin) & (origin > 0)
    at_first = (idx == first) & (first > 0) & ~at_origin
    return {
        "physical 0": at0.mean(1),
        "position id 0": at_origin.mean(1),
        "original first": at_first.mean(1),
        "elsewhere": ((idx > 0) & ~at_origin & ~at_first).mean(1),
        "tied": (idx == TIED).mean(1),
        "none": (idx == -1).mean(1),
    }


def function_check(a: dict[str, np.ndarray], base: dict[str, np.ndarray], causal: bool, seed: int
                   ) -> dict[str, Any]:
    """The paired function check of one pass against the unmodified one: ``{what, value, low, high, broken}``."""
    if causal:
        change = a["loss"] - base["loss"]
        v, lo, hi = stats.bootstrap_ci(change, seed=seed)
        return {"what": "loss change (nats)", "value": v, "low": lo, "high": hi,
                "broken": bool(math.isfinite(v) and v > MAX_LOSS_RISE)}
    if "cosine" not in a:
        return {"what": "embedding cosine", "value": math.nan, "low": math.nan, "high": math.nan, "broken": False}
    v, lo, hi = stats.bootstrap_ci(a["cosine"], seed=seed)
    return {"what": "embedding cosine", "value": v, "low": lo, "high": hi,
            "broken": bool(math.isfinite(v) and v < MIN_EMBEDDING_COSINE)}


def from_passes(record: dict[str, Any], passes: dict[str, tuple[probe.Intervention, list[dict[str, Any]]]],
                seed: int = 0) -> ModelResult:
    """The result of one model from its passes (``name -> (intervention, summaries)``, unmodified first)."""
    names = list(passes)
    base_iv, base_s = passes[names[0]]
    if base_iv.kind != "none":
        raise ValueError("the first pass must be the unmodified one")
    base = arrays(base_s, base_s)
    causal = bool(record["causal"])
    layers = sink_layers(base)
    runs, rows = {}, []
    for k, name in enumerate(names):
        iv, summaries = passes[name]
        a = base if k == 0 else arrays(summaries, base_s)
        run_causal = causal or iv.kind == "causal_mask"
        check = function_check(a, base, causal, seed + k)
        where = {w: float(np.nanmean(v)) if np.isfinite(v).any() else math.nan
                 for w, v in where_the_sink_is(a, layers).items()}
        frame = frame_of(a, run_causal)
        runs[name] = {"intervention": asdict(iv), "group": iv.group, "causal": run_causal, "arrays": a,
                      "frame": frame, "check": check, "where": where}
        rows.append({"model": record["ref"], "intervention": name, "changes": iv.group, "frame": frame,
                     "first-token share": float(np.nanmean(a["first_share"])),
                     "last-token share": float(np.nanmean(a["last_share"])) if not run_causal else 0.0,
                     "sink on physical 0": where["physical 0"],
                     "sink on id 0": where["position id 0"] if iv.kind in ("permute", "pe_permute") else math.nan,
                     "no sink": where["none"], check["what"]: check["value"],
                     "scored": "no (function broken)" if check["broken"] else "yes"})
    n_layers = int(record["n_layers"])
    layer_rows = []
    for layer in range(n_layers):
        row = {"layer": layer, "region": stats.region_of(layer, n_layers),
               "first_token_share": float(np.nanmean(base["first_share"][:, layer])),
               "sink_on_position0": float((base["sink_index"][:, layer] == 0).mean()),
               "residual_ratio_in": float(np.nanmean(base["residual_ratio"][:, layer]))}
        if "value_ratio" in base:
            row["value_ratio_first"] = float(np.nanmean(base["value_ratio"][:, layer]))
        layer_rows.append(row)
    return ModelResult(
        analysis=ANALYSIS, record=record, n_sentences=len(base_s), layers=pd.DataFrame(layer_rows),
        heads={"first_token_share": stats.nanmean(base["first_share_heads"], axis=0)},
        samples={"n_tokens": base["n_tokens"]},
        data={"runs": runs, "summary": pd.DataFrame(rows), "sink_layers": layers,
              "baseline_frame": runs[names[0]]["frame"]},
        params={"seed": seed},
    )


def analyse_model(ref: str, texts: list[str], opts: RunOptions | None = None, *, seed: int = 0, twin: bool = True,
                  **overrides: Any) -> ModelResult:
    """Every intervention of ``ref``'s grid on ``texts`` (cached per intervention); with ``twin``, the same grid
    on the random-initialized twin, kept in ``data["twin"]``."""
    o = RunOptions.build(opts, **overrides)
    record, base, hit = one_pass(ref, texts, probe.UNMODIFIED, o, seed)
    grid = probe.interventions_for(record, hook_supports(record.get("architecture")),
                                   twin=ref.startswith(RANDOM_PREFIX))
    passes = {probe.UNMODIFIED.name: (probe.UNMODIFIED, base)}
    hits, skipped = [hit], {}
    for iv in grid[1:]:
        try:
            _, summaries, hit = one_pass(ref, texts, iv, o, seed)
        except probe.PositionRangeError as exc:  # a table too short for this shift: said on the page, not hidden
            skipped[iv.name] = str(exc)
            continue
        passes[iv.name] = (iv, summaries)
        hits.append(hit)
    result = from_passes(record, passes, seed)
    result.data["skipped"] = skipped
    result.from_cache = all(hits)
    result.params.update(asdict(o))
    attach_halves(result, lambda k: _half(record, passes, k, seed, result.params))
    return with_twin(result, lambda t: analyse_model(t, texts, o, seed=seed, twin=False)) if twin else result


def _half(record: dict[str, Any], passes: dict[str, tuple[probe.Intervention, list[dict[str, Any]]]], k: int,
          seed: int, params: dict[str, Any]) -> ModelResult:
    """The result of the same passes on half ``k`` of the sentences (``base.split_halves``)."""
    part = split_halves(len(next(iter(passes.values()))[1]))[k]
    half = from_passes(record, {name: (iv, [s[i] for i in part]) for name, (iv, s) in passes.items()}, seed)
    half.params.update(params)
    return half


def analyse(models: list[str], texts: list[str], opts: RunOptions | None = None, *, seed: int = 0, twin: bool = True,
            **overrides: Any) -> Results:
    """:func:`analyse_model` for each model, in order; a failing model is reported, not fatal."""
    o = RunOptions.build(opts, **overrides)
    return each_model(models, lambda m: analyse_model(m, texts, o, seed=seed, twin=twin), ANALYSIS)


def tables(result: ModelResult, mode: Mode) -> dict[str, pd.DataFrame]:
    """One table: every intervention of the model (the analysis has no faithful counterpart)."""
    return {"interventions": result.data["summary"]}


def summary_table(results: list[ModelResult]) -> pd.DataFrame:
    """Every model's interventions, one row each."""
    return pd.concat([r.data["summary"] for r in results], ignore_index=True) if results else pd.DataFrame()


def first_share_grid(result: ModelResult) -> pd.DataFrame:
    """``[intervention, layer]`` mean first-token share (sentence and head means) of one model."""
    rows = {name: stats.nanmean(run["arrays"]["first_share"], axis=0) for name, run in result.data["runs"].items()}
    return pd.DataFrame(rows).T.rename_axis(index="intervention", columns="layer")


def null_from(result: ModelResult) -> ModelResult:
    """``result`` recomputed with uniform attention in every pass (same lengths, masks, token positions and
    function checks): what the interventions would show if attention had no structure to move."""
    n_layers, n_heads = int(result.record["n_layers"]), int(result.record["n_heads"])
    made: dict[tuple[int, bool], dict[str, Any]] = {}
    passes = {}
    for name, run in result.data["runs"].items():
        a, causal = run["arrays"], bool(run["causal"])
        summaries = []
        for n, origin, first, loss in zip(a["n_tokens"], a["origin"], a["first"], a["loss"], strict=True):
            key = (int(n), causal)
            if key not in made:
                made[key] = REDUCER({"attention": uniform_attention(int(n), n_layers, n_heads, causal),
                                     "hidden": torch.ones(n_layers + 1, int(n), 1, device="cpu"), "causal": causal,
                                     "origin": 0, "first": 0, "loss": 0.0, "pooled": None, "value_ratio": None})
            summaries.append({**made[key], "origin": int(origin), "first": int(first), "loss": float(loss)})
        passes[name] = (probe.Intervention(**run["intervention"]), summaries)
    null = from_passes({**result.record, "ref": f"null:{result.ref}"}, passes, int(result.params.get("seed", 0)))
    null.params = {**result.params, "null": "uniform attention"}
    return null


def sink_heads_table(results: list[ModelResult], min_share: float = 0.5) -> pd.DataFrame:
    """Per model, the sink heads of the unmodified pass (mean first-token share at least ``min_share``) with the
    first token's value norm over the median of the other tokens' (the KV head the sink head reads): below 1 the
    sink adds little to the output (a no-op sink, in the sense of arXiv 2606.08105), above 1 it writes a vector of
    ordinary or larger size into every query's output. Models whose values the attention hook cannot read are
    left out."""
    rows = []
    for r in results:
        a = r.data["runs"]["unmodified"]["arrays"]
        if "value_ratio" not in a:
            continue
        share = stats.nanmean(a["first_share_heads"], axis=0)  # [layer, head]
        ratio = stats.nanmean(a["value_ratio"], axis=0)  # [layer, kv_head]
        group = share.shape[1] // ratio.shape[1]
        for layer, head in zip(*np.nonzero(share >= min_share), strict=True):
            v = float(ratio[layer, head // group])
            rows.append({"model": r.ref, "layer": int(layer), "head": int(head),
                         "first-token share": float(share[layer, head]), "sink value / other values": v,
                         "sink value": "short (no-op)" if v < 1 else "not short"})
    return pd.DataFrame(rows)


def sink_heads_summary(results: list[ModelResult], min_share: float = 0.5) -> pd.DataFrame:
    """:func:`sink_heads_table` counted per model: sink heads, how many have a short sink value, and the median
    ratio."""
    t = sink_heads_table(results, min_share)
    if t.empty:
        return t
    g = t.groupby("model", sort=False)
    return pd.DataFrame({"sink heads": g.size(), "short sink value (no-op)": g["sink value"].apply(
        lambda s: int((s == "short (no-op)").sum())), "median value ratio": g["sink value / other values"].median()
    }).reset_index()


def on_uniform_attention(result: ModelResult, record: dict[str, Any], seed: int, graph: str = "dense") -> ModelResult:
    """:func:`null_from`: every intervention's pass under uniform attention (the verdicts' attention null)."""
    return null_from(result)

# ---------------------------------------------------------------------- measures the verdicts read
# Measures of the position-intervention chapter (``analyses.positions``), and their nulls.
#
# Every measure here reads the per-sentence arrays of the passes (unmodified and intervened, paired by
# sentence) and bootstraps over sentences. There is no official computation of any of them (the paper
# ran no intervention), so the faithful mode has none. Nulls: uniform attention pushed through the
# same interventions (``analyses.positions.null_from``), the model's random-initialized twin
# (``random_twin``: the same measure on the twin's passes), and for the co-location claim the first
# token's norm profile with its layers shuffled.

TWIN = ("random_twin",)
#: the two "modified RoPE" schemes at Qwen2.5's published factor (``probes.positions.SCALING_FACTOR``)
SCALED = ("NTK-aware x4", "linear PI x4")
#: the two ways of taking the absolute positions out of an encoder
NO_ABSOLUTE = ("table zeroed", "table -> mean")
PERMUTED = "ids permuted"
#: a first-token attractor head: a head whose mean first-token share reaches this
ATTRACTOR_SHARE = 0.5
#: the layers the early-attractor account speaks of (the first two)
EARLY_LAYERS = (0, 1)
N_SHUFFLES = 200


def _runs(r: ModelResult) -> dict[str, Any]:
    return r.data["runs"]


def _scored(r: ModelResult, names: tuple[str, ...]) -> list[str]:
    return [n for n in names if n in _runs(r) and not _runs(r)[n]["check"]["broken"]]


def _undetermined(r: ModelResult, why: str) -> Estimate:
    return Estimate(math.nan, math.nan, math.nan, n=r.n_sentences, interval=BOOT, undetermined=True, detail=why)


#: the passes that change the kind of position encoding, by intervention kind: a modified rotary code (another
#: base, NTK-aware or linear scaling, partial rotation as in Phi-2 and Pythia) or absolute positions removed (the
#: table averaged or zeroed, or no positions at all). Offsets (no-ops for a rotary code), shuffled ids (a scramble of
#: word order) and table shifts stay on the page as checks and as the placement experiment; no rotation at all is no
#: encoding the paper types
MODIFIED_ROTARY = ("theta", "ntk", "linear", "partial")
ABSOLUTE_REMOVED = ("pe_mean", "pe_zero", "no_positions")
#: the frame each kind of model starts from in the paper's account, and where a change of kind should move it
PREDICTED = {"rotary": ("centralized", "distributed"), "absolute": ("bidirectional", "another frame")}


def kind_changing(iv: dict[str, Any]) -> str | None:
    """``"rotary"`` or ``"absolute"`` for a pass that changes the kind of position encoding, else None."""
    kind, value = iv["kind"], float(iv.get("value", 0.0))
    if kind in MODIFIED_ROTARY and not (kind == "partial" and value == 0.0):
        return "rotary"
    return "absolute" if kind in ABSOLUTE_REMOVED else None


@measure("positions.frame_moves_as_predicted", ANALYSIS, extra_nulls=TWIN)
def frame_moves_as_predicted(r: ModelResult, mode: Mode) -> Estimate | None:
    """How many passes that change the kind of position encoding (function intact) move the frame the way the paper
    predicts: a rotary model read *centralized* to *distributed* under a modified rotary code, an absolute model read
    *bidirectional* to another frame with its absolute positions removed. Labels of each bootstrap resample of
    sentences are recomputed for the unmodified and every such pass. A model whose own frame is not the one the paper
    ties to its encoding is not a subject of the test (not evaluated, with its frame)."""
    if mode == "faithful":
        return None
    runs = _runs(r)
    kinds = {n: kind_changing(run["intervention"]) for n, run in runs.items()}
    kind = next((k for k in kinds.values() if k is not None), None)
    if kind is None:
        return not_applicable("no pass changes the kind of this model's position encoding")
    start, target = PREDICTED[kind]
    base = runs["unmodified"]["frame"]
    if base != start:
        return not_applicable(f"the model reads {base}, not the {start} frame the paper ties to its {kind} encoding, "
                              "so a change of encoding has no predicted direction here")
    names = [n for n, k in kinds.items() if k == kind and not runs[n]["check"]["broken"]]
    if not names:
        return _undetermined(r, "no pass that changes the kind of position encoding left the model working")
    order = ["unmodified", *names]
    causal = [bool(runs[n]["causal"]) for n in order]
    # [sample, run, layer, 7]: one-hot frames and anchors, whose sentence means give each layer's label
    x = np.stack([code_onehot(runs[n]["arrays"]["frame"], runs[n]["arrays"]["frame_anchor"]) for n in order], 1)

    def moved(lbl: str, first: str) -> bool:
        return lbl == target if kind == "rotary" else lbl != first

    def count(m: np.ndarray) -> float:
        got = [model_frame(*labels_from_shares(m[j]), causal[j])[0] for j in range(len(order))]
        return float(sum(got[0] == start and moved(lbl, got[0]) for lbl in got[1:]))

    point = [runs[n]["frame"] for n in names]
    hits = [n for n, lbl in zip(names, point, strict=True) if moved(lbl, base)]
    est = boot(x, count, seed_of(r))
    labels = ", ".join(f"{n} {lbl}" for n, lbl in zip(names, point, strict=True))
    detail = (f"of {len(names)} passes that change the kind of encoding (function intact): "
              + (f"moved {base} -> {target}: {', '.join(hits)}" if hits else
                 f"none moved {base} -> {target} (labels: {labels})"))
    return Estimate(est.value, est.low, est.high, est.n, est.interval, detail, est.undetermined)


def _paired_change(r: ModelResult, names: tuple[str, ...], array: str) -> Estimate:
    """Per intervention, the sentence-paired change of the layer-mean ``array`` against the unmodified pass."""
    runs = _runs(r)
    scored = _scored(r, names)
    if not scored:
        return _undetermined(r, f"none of {', '.join(names)} left the model working (or ran)")
    base = np.nanmean(runs["unmodified"]["arrays"][array], 1)  # [sample]
    parts = []
    for k, n in enumerate(scored):
        d = np.nanmean(runs[n]["arrays"][array], 1) - base
        e = boot(d, lambda m: float(m), seed_of(r) + 31 * (k + 1))
        parts.append([n, e.value, e.low, e.high])
    first = boot(np.nanmean(runs[scored[0]]["arrays"][array], 1) - base, lambda m: float(m), seed_of(r) + 31)
    return with_parts(first, parts, value=float(np.mean([p[1] for p in parts])),
                      detail="the value is the mean of the parts' changes")


@measure("positions.scaled_rope_first_share_change", ANALYSIS, extra_nulls=TWIN)
def scaled_rope_first_share_change(r: ModelResult, mode: Mode) -> Estimate | None:
    """The change of the first-token share (layer and head mean) under NTK-aware scaling and under linear
    position interpolation, each paired by sentence with the unmodified pass."""
    return None if mode == "faithful" else _paired_change(r, SCALED, "first_share")


@measure("positions.absolute_last_share_change", ANALYSIS, extra_nulls=TWIN)
def absolute_last_share_change(r: ModelResult, mode: Mode) -> Estimate | None:
    """The change of the last-token share when the learned position table is zeroed or replaced by its mean."""
    return None if mode == "faithful" else _paired_change(r, NO_ABSOLUTE, "last_share")


def _sink_share(r: ModelResult, where: str) -> Estimate:
    """Where the sink goes when the position ids are shuffled, decided on the shuffled pass itself: the question
    is where attention puts its sink, which does not need the model to keep working, so the function check is
    stated beside the estimate rather than discarding it (it guards claims about a working model's frame)."""
    runs = _runs(r)
    if PERMUTED not in runs:
        return _undetermined(r, "the permutation did not run")
    layers = r.data["sink_layers"]
    if not layers:
        return _undetermined(r, "no layer has its unmodified sink on position 0 in half the sentences")
    share = where_the_sink_is(runs[PERMUTED]["arrays"], layers)[where]  # [sample]
    est = boot(share, lambda m: float(m), seed_of(r))
    check = runs[PERMUTED]["check"]
    said = f"{check['what']} {check['value']:+.2f}" if math.isfinite(check["value"]) else check["what"]
    state = "the shuffle breaks the model's function" if check["broken"] else "the model keeps working"
    return Estimate(est.value, est.low, est.high, est.n, est.interval,
                    f"over {len(layers)} sink layers, position ids permuted; function check: {said} ({state})",
                    est.undetermined)


@measure("positions.sink_on_position_id0", ANALYSIS, extra_nulls=TWIN)
def sink_on_position_id0(r: ModelResult, mode: Mode) -> Estimate | None:
    """With position ids permuted, the share of sink layers whose sink moves to the token that carries id 0."""
    return None if mode == "faithful" else _sink_share(r, "position id 0")


@measure("positions.sink_on_physical0", ANALYSIS, extra_nulls=TWIN)
def sink_on_physical0(r: ModelResult, mode: Mode) -> Estimate | None:
    """With position ids permuted, the share of sink layers whose sink stays on the first physical token."""
    return None if mode == "faithful" else _sink_share(r, "physical 0")


def onset(profile: np.ndarray) -> float:
    """The first layer at which ``profile [layer]`` reaches halfway from its minimum to its maximum (NaN if flat)."""
    p = np.asarray(profile, dtype=float)
    lo, hi = np.nanmin(p), np.nanmax(p)
    if not np.isfinite(hi - lo) or hi - lo <= 0:
        return math.nan
    return float(np.argmax(p >= lo + 0.5 * (hi - lo)))


def _profiles(r: ModelResult) -> np.ndarray:
    """``[sample, 2, layer]``: the first-token share and the first token's residual ratio entering each layer."""
    a = _runs(r)["unmodified"]["arrays"]
    n_layers = a["first_share"].shape[1]
    return np.stack([a["first_share"], a["residual_ratio"][:, :n_layers]], 1)


@measure("positions.onset_minus_norm_spike", ANALYSIS, null="norm_layers_shuffled")
def onset_minus_norm_spike(r: ModelResult, mode: Mode) -> Estimate | None:
    """The layer where the first-token share rises (halfway to its maximum) minus the layer where the first
    token's residual norm, relative to the other tokens', does: 0 when the sink forms where the norm spikes."""
    if mode == "faithful":
        return None
    return boot(_profiles(r), lambda m: onset(m[0]) - onset(m[1]), seed_of(r))


def _norm_shuffled(r: ModelResult, mode: Mode) -> Estimate | None:
    """The same difference with the norm profile's layers in :data:`N_SHUFFLES` seeded random orders: where
    the rises would fall if the two profiles had nothing to do with each other."""
    if mode == "faithful":
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        m = np.nanmean(_profiles(r), 0)  # [2, layer]
    rng = np.random.default_rng(seed_of(r) + 4099)
    draws = np.array([onset(m[0]) - onset(m[1][rng.permutation(m.shape[1])]) for _ in range(N_SHUFFLES)])
    ok = draws[~np.isnan(draws)]
    if ok.size < 0.95 * N_SHUFFLES:
        return Estimate(math.nan, math.nan, math.nan, undetermined=True, detail="a flat profile")
    return Estimate(float(np.median(ok)), float(np.quantile(ok, 0.025)), float(np.quantile(ok, 0.975)),
                    n=r.n_sentences, interval=f"2.5-97.5 % over {N_SHUFFLES} seeded layer orders of the norm profile",
                    detail="norm profile in random layer order")


NULLS["norm_layers_shuffled"] = _norm_shuffled


@shape_measure("positions.early_attractor_heads", ANALYSIS, nulls=TWIN, null="layer_order")
def early_attractor_heads(r: ModelResult, mode: Mode) -> tuple[np.ndarray, Any] | None:
    """Heads of the first two layers whose first-token share reaches :data:`ATTRACTOR_SHARE` (unmodified pass)."""
    if mode == "faithful":
        return None
    x = np.swapaxes(_runs(r)["unmodified"]["arrays"]["first_share_heads"], 1, 2)  # [sample, head, layer]
    return x, lambda m: float((m[:, list(EARLY_LAYERS)] >= ATTRACTOR_SHARE).sum())


@measure("positions.sink_value_ratio", ANALYSIS, null="random_twin")
def sink_value_ratio(r: ModelResult, mode: Mode) -> Estimate | None:
    """Median, over sink heads (mean first-token share at least :data:`ATTRACTOR_SHARE`), of the first token's
    value norm over the median value norm of the other tokens (the KV head each sink head reads)."""
    if mode == "faithful":
        return None
    a = _runs(r)["unmodified"]["arrays"]
    if "value_ratio" not in a:
        return None  # the attention hook reads no values for this architecture
    heads = np.nanmean(a["first_share_heads"], 0)  # [layer, head]
    group = heads.shape[1] // a["value_ratio"].shape[2]
    pairs = sorted({(int(lyr), int(h) // group) for lyr, h in zip(*np.nonzero(heads >= ATTRACTOR_SHARE), strict=True)})
    if not pairs:
        return _undetermined(r, f"no head with a mean first-token share of {ATTRACTOR_SHARE:g} or more")
    rows, cols = [p[0] for p in pairs], [p[1] for p in pairs]
    est = boot(a["value_ratio"][:, rows, cols], lambda m: float(np.nanmedian(m)), seed_of(r))
    noop = int((np.nanmean(a["value_ratio"][:, rows, cols], 0) < 1).sum())
    return Estimate(est.value, est.low, est.high, est.n, est.interval,
                    f"{len(pairs)} sink (layer, KV head) pairs, {noop} of them with a short sink value (no-op)",
                    est.undetermined)


SPEC = register(Analysis(ANALYSIS, __name__, analyse=analyse, tables=tables, on_uniform_attention=on_uniform_attention))
