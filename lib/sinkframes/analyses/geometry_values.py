"""The geometry of the sink and the value space (paper sections 3.3-3.4, 5.4, appendix C.2).

One capture pass per model (``capture.summarize_captures``) reduces every sentence at once to
per-layer (and per-head) numbers: the sink-key geometry of ``metrics.geometry`` and the value-space
measures of ``metrics.values`` in both modes. This module averages them over sentences and heads,
builds the chapter's tables and writes its plain statements from the data.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import torch
from scipy import stats as sps

from .. import paper, stats
from ..extraction import capture
from ..metrics import geometry, values
from ..types import MODES

GEOMETRY_COLUMNS = [
    "key0_norm", "other_key_norm", "key_norm_ratio", "cos_to_sink_pre", "cos_to_others_pre", "cos_to_sink_post",
    "cos_to_others_post", "sink_logit", "other_logit", "typical_logit", "norm_part", "alignment_part",
    "log_key_norm_ratio", "sink_cos", "log_query_norm",
]
VALUE_COLUMNS = ["entropy", "magnitude", "alignment", "entropy_magnitude", "relative_magnitude", "directional_guidance",
                 "reference_count"]


@dataclass(frozen=True)
class GeometryValuesReducer:
    """Per sample: geometry ``[layer, head]`` and value-space measures in both modes."""

    name: str = "geometry_values"
    version: int = 1

    def key(self) -> dict[str, Any]:
        return {"reducer": self.name, "version": self.version}

    def __call__(self, cap: capture.SampleCapture, causal: bool) -> dict[str, torch.Tensor]:
        out: dict[str, torch.Tensor] = {"n_tokens": torch.tensor(cap.n_tokens)}
        if cap.n_tokens >= 3:
            out.update(geometry.geometry_summary(cap.query_pre, cap.query, cap.key_pre, cap.key, cap.scaling, causal))
        for k, v in values.faithful_summary(cap.attention, cap.hidden).items():
            out[f"faithful_{k}"] = v
        for k, v in values.corrected_summary(cap.attention, cap.value, cap.output_heads, cap.output, causal).items():
            out[f"corrected_{k}"] = v
        return out


@dataclass
class ModelGeometry:
    """Per-layer sink geometry and value-space measures of one model on one sentence set."""

    record: dict[str, Any]
    n_sentences: int
    layers: pd.DataFrame  # one row per layer; value columns prefixed faithful_ / corrected_
    per_sample: dict[str, np.ndarray]  # name -> [sample, layer] (head means)
    from_cache: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ref(self) -> str:
        return self.record["ref"]


def _per_layer(summaries: list[dict[str, torch.Tensor]], name: str) -> np.ndarray:
    """``[sample, layer]``: the measure, averaged over heads (NaN-aware) where it is per head."""
    rows = []
    for s in summaries:
        if name not in s:
            continue
        v = s[name].double()
        if v.dim() == 2:
            ok = torch.isfinite(v)
            v = torch.where(ok, v, 0.0).sum(-1) / ok.sum(-1).clamp_min(1)
            v = torch.where(ok.any(-1), v, torch.full_like(v, float("nan")))
        rows.append(v.numpy())
    return np.stack(rows) if rows else np.empty((0, 0))


def _nanmean0(arr: np.ndarray, n_layers: int) -> np.ndarray:
    """Mean over samples (axis 0) ignoring NaN; NaN (without a warning) where there is no value at all."""
    if not arr.size:
        return np.full(n_layers, np.nan)
    ok = np.isfinite(arr)
    cnt = ok.sum(0)
    total = np.where(ok, arr, 0.0).sum(0)
    return np.where(cnt > 0, total / np.maximum(cnt, 1), np.nan)


def from_summaries(record: dict[str, Any], summaries: list[dict[str, torch.Tensor]]) -> ModelGeometry:
    """Average per-sample summaries over sentences (and heads) into one row per layer."""
    n_layers = int(record["n_layers"])
    names = GEOMETRY_COLUMNS + [f"{m}_{c}" for m in MODES for c in VALUE_COLUMNS] + ["faithful_information_change"]
    per_sample = {n: _per_layer(summaries, n) for n in names}
    regions = stats.layer_regions(n_layers)
    table: dict[str, Any] = {"layer": np.arange(n_layers), "depth": np.arange(n_layers) / max(1, n_layers - 1),
                             "region": [next(k for k, v in regions.items() if i in v) for i in range(n_layers)]}
    for n, arr in per_sample.items():
        table[n] = _nanmean0(arr, n_layers)
    per_head = {}
    for n in ("key_norm_ratio", "cos_to_sink_post", "alignment_part", "norm_part"):
        stacked = [s[n].double().numpy() for s in summaries if n in s]
        if stacked:
            per_head[n] = _nanmean0(np.stack(stacked), n_layers)  # [layer, head] (key norms: [layer, kv_head])
    return ModelGeometry(record=record, n_sentences=len(summaries), layers=pd.DataFrame(table), per_sample=per_sample,
                         extra={"per_head": per_head})


def analyse_model(ref: str, texts: list[str], **opts: Any) -> ModelGeometry:
    """Capture and reduce ``ref`` on ``texts`` (cached on disk)."""
    record, summaries, hit = capture.summarize_captures(ref, texts, GeometryValuesReducer(), **opts)
    mg = from_summaries(record, summaries)
    mg.from_cache = hit
    return mg


def analyse(models: list[str], texts: list[str], **opts: Any) -> list[ModelGeometry]:
    return [analyse_model(m, texts, **opts) for m in models]


# ---------------------------------------------------------------------------------------------
# tables


def geometry_table(results: list[ModelGeometry]) -> pd.DataFrame:
    """One row per model: the sink-key geometry averaged over layers (and heads, sentences)."""
    rows = []
    for r in results:
        d = r.layers
        rows.append({
            "model": r.ref, "position encoding": r.record["position_encoding"],
            "|k0| / mean |k_j|": d["key_norm_ratio"].mean(),
            "layers with |k0| < mean |k_j|": f"{int((d['key_norm_ratio'] < 1).sum())} / {len(d)}",
            "cos(q, k0) before RoPE": d["cos_to_sink_pre"].mean(), "cos(q, k0) after": d["cos_to_sink_post"].mean(),
            "cos(q, k_j) before": d["cos_to_others_pre"].mean(), "cos(q, k_j) after": d["cos_to_others_post"].mean(),
            "sink logit": d["sink_logit"].mean(), "other logit": d["other_logit"].mean(),
            "norm part": d["norm_part"].mean(), "alignment part": d["alignment_part"].mean(),
        })
    return pd.DataFrame(rows)


def faithful_vs_corrected(results: list[ModelGeometry]) -> pd.DataFrame:
    """Per model and mode: first-to-last changes (difference AND ratio) and layer-mean values."""
    rows = []
    for r in results:
        d = r.layers
        for mode in MODES:
            ent = values.first_last(d[f"{mode}_entropy"].to_numpy())
            mag = values.first_last(d[f"{mode}_magnitude"].to_numpy())
            ali = values.first_last(d[f"{mode}_alignment"].to_numpy())
            rho = sps.spearmanr(d["layer"], d[f"{mode}_entropy"]).statistic if len(d) > 2 else float("nan")
            rows.append({
                "model": r.ref, "mode": mode,
                "entropy first": ent["first"], "entropy last": ent["last"], "entropy depth trend (Spearman)": rho,
                "magnitude first": mag["first"], "magnitude last": mag["last"],
                "magnitude difference (paper's 'fold')": mag["difference"], "magnitude ratio": mag["ratio"],
                "alignment first": ali["first"], "alignment last": ali["last"],
                "entropy-magnitude corr.": d[f"{mode}_entropy_magnitude"].mean(),
                "reference tokens": d[f"{mode}_reference_count"].mean(),
                "relative magnitude": d[f"{mode}_relative_magnitude"].mean(),
                "directional guidance": d[f"{mode}_directional_guidance"].mean(),
            })
    return pd.DataFrame(rows)


def reference_counts(results: list[ModelGeometry]) -> pd.DataFrame:
    """Mean reference tokens per model (official rule and per-head rule) beside the paper's value
    for the frame type the paper assigns to the model's family."""
    reported = paper.reference_count_by_frame()
    rows = []
    for r in results:
        frame = r.record["paper_frame"]
        rows.append({
            "model": r.ref, "paper frame (family)": frame,
            "official rule (faithful)": r.layers["faithful_reference_count"].mean(),
            "per-head rule (corrected)": r.layers["corrected_reference_count"].mean(),
            "paper": reported.get(frame, float("nan")),
        })
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------
# statements generated from the data


def _layers(mask: pd.Series) -> str:
    return f"{int(mask.sum())} of {len(mask)} layers"


def claims_markdown(results: list[ModelGeometry]) -> str:
    """Plain statements of which claims each model's numbers support, computed from the tables."""
    lines = []
    counts = reference_counts(results).set_index("model")
    for r in results:
        d = r.layers
        rotary = r.record["position_encoding"].startswith("RoPE")
        small = d["key_norm_ratio"] < 1
        aligned = d["cos_to_sink_post"] > d["cos_to_others_post"]
        align_wins = d["alignment_part"] > d["norm_part"]
        lines.append(f"**`{r.ref}`** ({r.record['position_encoding']}; {r.n_sentences} sentences)")
        lines.append(
            f"- *Small sink key* (Sec. 3.3): the position-0 key is shorter than the mean other key in {_layers(small)} "
            f"(mean ratio {d['key_norm_ratio'].mean():.2f}) -> {'supported' if small.mean() > 0.5 else 'not supported'}.")
        lines.append(
            f"- *Queries aligned with the sink key*: mean cos(q, k0) {d['cos_to_sink_post'].mean():.2f} against "
            f"{d['cos_to_others_post'].mean():.2f} for other keys; higher in {_layers(aligned)} -> "
            f"{'supported' if aligned.mean() > 0.5 else 'not supported'}.")
        lines.append(
            f"- *Alignment rather than norm makes the sink*: the alignment part of the sink logit's advantage exceeds the "
            f"norm part in {_layers(align_wins)} (means {d['alignment_part'].mean():.2f} vs {d['norm_part'].mean():.2f}) -> "
            f"{'supported' if align_wins.mean() > 0.5 else 'not supported'}.")
        if rotary:
            shift = (d["cos_to_others_post"] - d["cos_to_others_pre"]).mean()
            shift0 = (d["cos_to_sink_post"] - d["cos_to_sink_pre"]).mean()
            lines.append(
                f"- *RoPE* (Sec. 3.4): rotation changes the mean query cosine to the sink key by {shift0:+.3f} and to other "
                f"keys by {shift:+.3f} (key 0 itself is not rotated; queries are).")
        else:
            lines.append("- *Absolute positions*: no rotation, so before and after coincide; the geometry above is what the "
                         "learned position embeddings produce.")
        for mode in MODES:
            ent = values.first_last(d[f"{mode}_entropy"].to_numpy())
            mag = values.first_last(d[f"{mode}_magnitude"].to_numpy())
            ali = values.first_last(d[f"{mode}_alignment"].to_numpy())
            lines.append(
                f"- *Value space, {mode}*: entropy {ent['first']:.2f} -> {ent['last']:.2f} "
                f"({'falls' if ent['difference'] < 0 else 'does not fall'}); magnitude {mag['first']:.2f} -> {mag['last']:.2f} "
                f"(difference {mag['difference']:+.2f}, ratio x{mag['ratio']:.2f}; "
                f"{'rises' if mag['difference'] > 0 else 'does not rise'}); alignment {ali['first']:+.2f} -> {ali['last']:+.2f} "
                f"({'ends negative' if ali['last'] < 0 else 'does not end negative'}).")
        c = counts.loc[r.ref]
        if np.isfinite(c["paper"]):
            lines.append(
                f"- *Reference tokens*: {c['official rule (faithful)']:.2f} by the official rule against the paper's "
                f"{c['paper']:g} for {c['paper frame (family)']} frames (per-head rule: {c['per-head rule (corrected)']:.2f}).")
        lines.append("")
    return "\n".join(lines)
