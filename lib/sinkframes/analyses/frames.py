"""Reference frames (paper sections 1-3.1): per-layer sink shares and the frame type they point to.

The frame of a model is read by the frame instrument (:mod:`sinkframes.metrics.frames`), fixed before any model
was classified with it and validated on attention with planted frames (:mod:`sinkframes.analyses.frame_validation`):
each layer of each sentence reads *none*, *centralized*, *distributed* or *bidirectional* from the positions whose
received share exceeds uniform attention's, and a model's frame is its profile over depth, with a model-level label
(``frame``) only where a clear majority of its framed layers agree (``mixed`` otherwise) and its stability over
resampled sentences.

The book's earlier rule (``frame_earlier``, :func:`classify`) is kept beside it for comparison: it read model-level
means over all layers, so uniform attention met its centralized criterion in a decoder (an ``argmax`` tie goes to
position 0), anything else fell through to *distributed*, and nothing read *none*.

- earlier rule, **bidirectional** if the model is not causal and the last token receives at least 0.05 of the
  attention and at least half as much as the first token (both ends anchor);
- **centralized** if, averaged over layers and heads, at least half of the queries put their
  largest weight on position 0 and a head has at most 1.5 reference tokens;
- **distributed** otherwise (several weaker anchors, or an anchor that is not position 0);
- **undefined** when the evidence the rule reads is undefined (NaN: no query had another key to
  weigh, as in one-token texts); no frame is assigned then.

``analyse`` returns one ``ModelResult`` per model: ``data`` holds the model-level ``evidence``, the ``frame``, its
``reason`` and ``profile`` (:func:`sinkframes.metrics.frames.frame_profile`), and the earlier rule's
``frame_earlier`` and ``reason_earlier``; ``report.frames`` writes the page's statements from them.
"""

from __future__ import annotations

import math
from dataclasses import asdict
from typing import Any

import numpy as np
import pandas as pd
import torch

from .. import stats
from ..extraction import summarize
from ..metrics.frames import MIN_SOURCES, STABLE, FrameSummaryReducer, frame_profile
from ..results import Analysis, ModelResult, Results, each_model, register
from ..types import Mode, RunOptions
from ..verdicts.measures import boot, measure, seed_of
from ..verdicts.structureless import null_summaries
from ..verdicts.verdict import Estimate, not_applicable

ANALYSIS = "frames"

RULES = {
    "bidirectional_min_last_share": 0.05,
    "bidirectional_min_last_to_first": 0.5,
    "centralized_min_first_concentration": 0.5,
    "centralized_max_reference_count": 1.5,
}

LAYER_COLUMNS = [
    "first_token_share",
    "last_token_share",
    "sink_concentration",
    "first_token_concentration",
    "reference_count",
    "reference_has_first",
    "faithful_reference_count",
    "mean_head_sink_concentration",
]
FAITHFUL_COLUMNS = ["faithful_reference_count"]  # the official reference-count rule (head-averaged matrix)


def _stack(summaries: list[dict[str, torch.Tensor]], name: str) -> np.ndarray:
    return torch.stack([s[name].float() for s in summaries]).numpy()  # [sample, layer(, head)]


def classify(evidence: dict[str, float], causal: bool) -> tuple[str, str]:
    """Apply ``RULES`` to the model-level evidence; return ``(frame, reason)``."""
    first, last = evidence["first_token_share"], evidence["last_token_share"]
    conc, refs = evidence["first_token_concentration"], evidence["reference_count"]
    used = {"first-token share": first, "queries peaking on position 0": conc, "reference tokens per head": refs}
    if not causal:
        used["last-token share"] = last
    undefined = [name for name, v in used.items() if not math.isfinite(v)]
    if undefined:
        return "undefined", (
            f"{', '.join(undefined)} undefined (no query had another key to weigh, e.g. one-token "
            "texts), so no frame type is assigned"
        )
    if (
        not causal
        and last >= RULES["bidirectional_min_last_share"]
        and last >= RULES["bidirectional_min_last_to_first"] * first
    ):
        return "bidirectional", f"last token receives {last:.2f} against {first:.2f} for the first"
    min_conc, max_refs = RULES["centralized_min_first_concentration"], RULES["centralized_max_reference_count"]
    if conc >= min_conc and refs <= max_refs:
        return "centralized", f"{conc:.0%} of queries peak on position 0; {refs:.2f} reference tokens per head"
    failed = []  # name the criterion that failed, not one that passed
    if conc < min_conc:
        failed.append(
            f"only {conc:.0%} of queries peak on position 0, below the {min_conc:.0%} a centralized frame needs"
        )
    if refs > max_refs:
        failed.append(f"{refs:.2f} reference tokens per head, above the {max_refs:g} a centralized frame allows")
    return "distributed", "; ".join(failed)


def frames_from_summaries(
    record: dict[str, Any], summaries: list[dict[str, torch.Tensor]], seed: int = 0
) -> ModelResult:
    """Aggregate per-sample summaries into per-layer means (with bootstrap intervals over sentences).

    The result's ``data`` holds ``evidence`` (model-level means), ``frame`` and ``reason``.
    """
    n_layers = int(record["n_layers"])
    per_head = {
        "first_token_share": _stack(summaries, "first_share"),
        "last_token_share": _stack(summaries, "last_share"),
        "sink_concentration": _stack(summaries, "sink_concentration"),
        "first_token_concentration": _stack(summaries, "first_concentration"),
        "reference_count": _stack(summaries, "reference_count"),
        "reference_has_first": _stack(summaries, "reference_has_first"),
    }  # each [sample, layer, head]
    per_layer = {
        "faithful_reference_count": _stack(summaries, "faithful_reference_count"),
        "mean_head_sink_concentration": _stack(summaries, "mean_head_sink_concentration"),
    }  # each [sample, layer]
    rows = []
    regions = stats.layer_regions(n_layers)
    for layer in range(n_layers):
        row: dict[str, Any] = {
            "layer": layer,
            "depth": layer / max(1, n_layers - 1),
            "region": next(k for k, v in regions.items() if layer in v),
        }
        for name, arr in per_head.items():
            row[name] = float(stats.nanmean(arr[:, layer].reshape(-1), axis=0))
        for name, arr in per_layer.items():
            row[name] = float(stats.nanmean(arr[:, layer].reshape(-1), axis=0))
        per_sample = stats.nanmean(per_head["first_token_share"][:, layer], axis=-1)  # [sample]
        mean, lo, hi = stats.bootstrap_ci(per_sample, seed=seed + layer)
        row["first_token_share_low"], row["first_token_share_high"] = lo, hi
        rows.append(row)
    layers = pd.DataFrame(rows)
    evidence = {name: float(layers[name].mean()) for name in LAYER_COLUMNS}
    evidence["position0_dominant_layers"] = float(position0_dominated(layers).mean())
    earlier, earlier_reason = classify(evidence, bool(record["causal"]))
    codes = {name: torch.stack([s[key].long() for s in summaries]).numpy()  # [sample, layer]
             for name, key in (("frame", "frame"), ("frame_anchor", "frame_anchor"))}
    profile = frame_profile(codes["frame"], codes["frame_anchor"], bool(record["causal"]), seed=seed)
    readable = torch.stack([torch.isfinite(s["frame_top"]) for s in summaries]).any()  # some key had its 10 queries
    if not bool(readable):
        profile = {**profile, "label": "undefined",
                   "reason": (f"no sentence has a key that {MIN_SOURCES} queries can see (texts too short), so no "
                              "frame can be read")}
    heads = {name: stats.nanmean(arr, axis=0) for name, arr in per_head.items()}  # each [layer, head]
    return ModelResult(
        analysis=ANALYSIS,
        record=record,
        n_sentences=len(summaries),
        layers=layers,
        heads=heads,
        samples={**per_head, **per_layer, **codes, "n_tokens": np.array([int(s["n_tokens"]) for s in summaries])},
        data={"evidence": evidence, "frame": profile["label"], "reason": profile["reason"], "profile": profile,
              "frame_earlier": earlier, "reason_earlier": earlier_reason},
        params={"seed": seed},
    )


def analyse_model(
    ref: str, texts: list[str], opts: RunOptions | None = None, *, seed: int = 0, **overrides: Any
) -> ModelResult:
    """Sink evidence of ``ref`` on ``texts`` (streamed reduction, cached).

    ``opts``/``overrides`` are run options (``batch_size=``, ``bos_policy=``, ...); ``params`` records them
    with ``seed``, and ``data["position0_tokens"]`` the tokens the sentences put at position 0.
    """
    o = RunOptions.build(opts, **overrides)
    ex = summarize(ref, texts, FrameSummaryReducer(), o)
    result = frames_from_summaries(ex.record, ex.summaries or [], seed=seed)
    result.from_cache = ex.from_cache
    result.params.update(asdict(o))
    result.data["position0_tokens"] = sorted({t[0] for t in ex.tokens if t})
    return result


def analyse(
    models: list[str], texts: list[str], opts: RunOptions | None = None, *, seed: int = 0, **overrides: Any
) -> Results:
    """:func:`analyse_model` for each model, in order; a failing model is reported, not fatal (``each_model``)."""
    o = RunOptions.build(opts, **overrides)  # a bad option is the caller's error, not a model's
    return each_model(models, lambda m: analyse_model(m, texts, o, seed=seed), ANALYSIS)


def tables(result: ModelResult, mode: Mode) -> dict[str, pd.DataFrame]:
    """``layers`` and ``evidence`` (one row, indexed by model) under ``mode``: the official reference-count
    rule when ``"faithful"``, every other measure (this book's) when ``"corrected"``."""
    keys = ["layer", "depth", "region"]
    evidence = result.data["evidence"]
    if mode == "faithful":
        cols = FAITHFUL_COLUMNS
        layer_cols = keys + cols
    else:
        cols = [c for c in evidence if c not in FAITHFUL_COLUMNS]
        layer_cols = [c for c in result.layers.columns if c not in FAITHFUL_COLUMNS]
    ev = pd.DataFrame([{c: evidence[c] for c in cols}], index=pd.Index([result.ref], name="model"))
    return {"layers": result.layers[layer_cols].copy(), "evidence": ev}


#: the strength from which the validation requires every planted frame to be read in 95 % of draws
STATED_STRENGTH = 0.2


def validate_instrument(draws: int = 2, seed: int = 0) -> dict[str, pd.DataFrame]:
    """The frame instrument on attention with planted frames (``analyses.frame_validation``): sentence by sentence
    (``trials``, the ``confusion`` matrix of planted kind against the frame read, the ``recovery`` by strength) and
    as it reads a layer, the frame most of a set of ten sentences of 12 to 64 tokens read (``layer_trials``,
    ``layer_recovery``)."""
    from . import frame_validation as sf

    trials = sf.validation_trials(draws=draws, seed=seed)
    layers = sf.layer_trials(sets=draws, seed=seed)
    return {"trials": trials, "confusion": sf.confusion(trials).reset_index(),
            "recovery": sf.recovery_by_strength(trials), "layer_trials": layers,
            "layer_recovery": sf.recovery_by_strength(layers)}


def bos_comparison_models(results: list[ModelResult], chosen: list[str] | None = None) -> list[str]:
    """The models to run again with a BOS token forced at position 0: those of ``chosen`` that ran, when given,
    else the decoders among ``results`` whose tokenizer puts the first word at position 0 (no start token)."""
    if chosen is not None:  # a model outside the page's models is refused with its parameters (page.setup)
        run = {r.ref for r in results}
        return [m for m in dict.fromkeys(chosen) if m in run]  # one that failed is reported with its failure
    return [r.ref for r in results if r.causal and not r.record["adds_bos"]]


def _number(x: Any) -> float | None:
    """A finite float, or ``None`` (JSON ``null``) for an undefined value: never a bare NaN in JSON."""
    v = float(x)
    return v if math.isfinite(v) else None


def to_json(result: ModelResult) -> dict[str, Any]:
    """The CLI's JSON shape (``python -m sinkframes sinks --json``)."""
    return {
        "model": result.ref,
        "n_sentences": result.n_sentences,
        "frame": result.data["frame"],
        "layers": [
            {
                "layer": int(r["layer"]),
                "first_token_share": _number(r["first_token_share"]),
                "last_token_share": _number(r["last_token_share"]),
                "sink_concentration": _number(r["sink_concentration"]),
            }
            for r in result.layers.to_dict("records")
        ],
    }


def frame_table(results: list[ModelResult]) -> pd.DataFrame:
    """One row per model: what it is, the evidence, and the frame the rule gives."""
    rows = []
    for f in results:
        r = f.record
        ev = f.data["evidence"]
        rows.append(
            {
                "model": f.ref,
                "family": r["family"],
                "position encoding": r["position_encoding"],
                "BOS policy": f.params.get("bos_policy", "default"),
                "position 0": _position0(f),
                "causal": r["causal"],
                "sentences": f.n_sentences,
                "first-token share": ev["first_token_share"],
                "last-token share": ev["last_token_share"],
                "queries peaking on pos. 0": ev["first_token_concentration"],
                "layers where pos. 0 dominates": ev["position0_dominant_layers"],
                "reference tokens / head": ev["reference_count"],
                "reference tokens (official rule)": ev["faithful_reference_count"],
                "frame (instrument)": f.data["frame"],
                "same label in resamples": f.data["profile"]["stability"],
                **{f"{k} layers": v for k, v in f.data["profile"]["shares"].items()},
                "frame (earlier rule)": f.data["frame_earlier"],
                "frame (paper, for the family)": r["paper_frame"],
            }
        )
    return pd.DataFrame(rows)


#: the columns of :func:`design_table`: how a model encodes position
POSITION_CLASSES = ("absolute", "absolute + relative bias", "rotary")


def position_class(position_encoding: str) -> str:
    """``absolute``, ``absolute + relative bias`` or ``rotary``, from a record's position encoding in words."""
    if position_encoding.startswith("RoPE"):
        return "rotary"
    if "relative" in position_encoding:
        return "absolute + relative bias"
    return "absolute"


#: the other axis of :func:`design_table`: the attention mask
MASKS = ("decoder (causal)", "encoder (bidirectional)")


def position0_dominated(layers: pd.DataFrame) -> pd.Series:
    """Per layer (a result's ``layers`` table): whether position 0 is the strongest key of most of its queries."""
    return layers["first_token_concentration"] >= 0.5


def design_table(results: list[ModelResult]) -> pd.DataFrame:
    """Position encoding (absolute / absolute + relative bias / rotary, one row each) against the mask (decoder /
    encoder, one column each): in each cell the models of that design with the frame this book's rule measures,
    ``-`` where no model of the profile has it. The first look at whether the position encoding, or the causal
    mask, goes with the frame type."""
    cells: dict[tuple[str, str], list[str]] = {}
    for f in results:
        mask = MASKS[0] if f.record["causal"] else MASKS[1]
        pe = position_class(str(f.record["position_encoding"]))
        cells.setdefault((pe, mask), []).append(f"{f.ref}: {f.data['frame']}")
    rows = [{"position encoding": pe, **{mask: "; ".join(cells.get((pe, mask), [])) or "-" for mask in MASKS}}
            for pe in POSITION_CLASSES]
    return pd.DataFrame(rows)


def _position0(f: ModelResult) -> str:
    """The token at position 0, or how many different ones the sentences put there."""
    seen = f.data.get("position0_tokens")
    if not seen:
        return f.record["position0_token"]
    return seen[0] if len(seen) == 1 else f"{len(seen)} different tokens"


def on_uniform_attention(result: ModelResult, record: dict[str, Any], seed: int, graph: str = "dense") -> ModelResult:
    """The frames of ``result``'s shapes under uniform attention: the verdicts' attention null (``graph`` unused)."""
    return frames_from_summaries(record, null_summaries(result, FrameSummaryReducer()), seed=seed)

# ---------------------------------------------------------------------- measures the verdicts read
# Each is registered in :data:`sinkframes.verdicts.measures.MEASURES` under the name a claim of
# ``paper.claims`` reads; see that module for the bootstrap and the nulls.

@measure("frames.first_token_share", "frames")
def first_token_share(r: ModelResult, mode: Mode) -> Estimate | None:
    """The mean received share of position 0, where position 0 holds a start token (1.bos_share is about
    beginning-of-sequence tokens: a tokenizer that puts the first word there gives the claim no subject)."""
    if mode == "faithful":
        return None
    if not r.record.get("adds_bos", True) and r.params.get("bos_policy", "default") != "force":
        return not_applicable(f"`{r.ref}` puts the sentence's first word at position 0, not a start token")
    x = np.nanmean(r.samples["first_token_share"], axis=(1, 2))  # [sample]
    return boot(x, float, seed_of(r))


@measure("frames.frame_type", "frames")
def frame_type(r: ModelResult, mode: Mode) -> Estimate | None:
    if mode == "faithful":
        return None
    frame, profile = str(r.data["frame"]), r.data["profile"]
    stability = float(profile["stability"])
    return Estimate(frame, n=r.n_sentences, interval=f"a category; the same label in {stability:.0%} of "
                    "resamples of the sentences", detail=str(r.data.get("reason", "")),
                    undetermined=frame == "undefined" or stability < STABLE)


@measure("frames.reference_count", "frames")
def reference_count(r: ModelResult, mode: Mode) -> Estimate | None:
    if mode == "faithful":
        x = np.nanmean(r.samples["faithful_reference_count"], axis=1)  # [sample]
    else:
        x = np.nanmean(r.samples["reference_count"], axis=(1, 2))  # [sample]
    return boot(x, float, seed_of(r))


SPEC = register(Analysis(ANALYSIS, __name__, analyse=analyse, tables=tables, on_uniform_attention=on_uniform_attention))
