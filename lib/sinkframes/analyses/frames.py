"""Reference frames (paper sections 1-3.1): per-layer sink shares and the frame type they point to.

The frame-type rule is fixed in advance and applied the same way to every model:

- **bidirectional** if the model is not causal and the last token receives at least 0.05 of the
  attention and at least half as much as the first token (both ends anchor);
- **centralized** if, averaged over layers and heads, at least half of the queries put their
  largest weight on position 0 and a head has at most 1.5 reference tokens;
- **distributed** otherwise (several weaker anchors, or an anchor that is not position 0).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import torch

from .. import stats
from ..extraction import summarize
from ..metrics.sinks import SinkSummaryReducer

RULES = {
    "bidirectional_min_last_share": 0.05,
    "bidirectional_min_last_to_first": 0.5,
    "centralized_min_first_concentration": 0.5,
    "centralized_max_reference_count": 1.5,
}

LAYER_COLUMNS = [
    "first_token_share", "last_token_share", "sink_concentration", "first_token_concentration",
    "reference_count", "reference_has_first", "faithful_reference_count", "mean_head_sink_concentration",
]


@dataclass
class ModelFrames:
    """Sink evidence of one model on one sentence set."""

    record: dict[str, Any]
    n_sentences: int
    layers: pd.DataFrame  # one row per layer
    evidence: dict[str, float]
    frame: str
    reason: str
    from_cache: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ref(self) -> str:
        return self.record["ref"]

    def to_json(self) -> dict[str, Any]:
        """The CLI's JSON shape."""
        return {
            "model": self.ref,
            "n_sentences": self.n_sentences,
            "frame": self.frame,
            "layers": [
                {"layer": int(r.layer), "first_token_share": float(r.first_token_share),
                 "last_token_share": float(r.last_token_share), "sink_concentration": float(r.sink_concentration)}
                for r in self.layers.itertuples()
            ],
        }


def _stack(summaries: list[dict[str, torch.Tensor]], name: str) -> np.ndarray:
    return torch.stack([s[name].float() for s in summaries]).numpy()  # [sample, layer(, head)]


def classify(evidence: dict[str, float], causal: bool) -> tuple[str, str]:
    """Apply ``RULES`` to the model-level evidence; return ``(frame, reason)``."""
    first, last = evidence["first_token_share"], evidence["last_token_share"]
    conc, refs = evidence["first_token_concentration"], evidence["reference_count"]
    if (not causal and last >= RULES["bidirectional_min_last_share"]
            and last >= RULES["bidirectional_min_last_to_first"] * first):
        return "bidirectional", f"last token receives {last:.2f} against {first:.2f} for the first"
    if conc >= RULES["centralized_min_first_concentration"] and refs <= RULES["centralized_max_reference_count"]:
        return "centralized", f"{conc:.0%} of queries peak on position 0; {refs:.2f} reference tokens per head"
    return "distributed", f"only {conc:.0%} of queries peak on position 0; {refs:.2f} reference tokens per head"


def frames_from_summaries(record: dict[str, Any], summaries: list[dict[str, torch.Tensor]], seed: int = 0) -> ModelFrames:
    """Aggregate per-sample summaries into per-layer means (with bootstrap intervals over sentences)."""
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
        row: dict[str, Any] = {"layer": layer, "depth": layer / max(1, n_layers - 1),
                               "region": next(k for k, v in regions.items() if layer in v)}
        for name, arr in per_head.items():
            row[name] = float(np.nanmean(arr[:, layer]))
        for name, arr in per_layer.items():
            row[name] = float(np.nanmean(arr[:, layer]))
        mean, lo, hi = stats.bootstrap_ci(np.nanmean(per_head["first_token_share"][:, layer], axis=-1), seed=seed + layer)
        row["first_token_share_low"], row["first_token_share_high"] = lo, hi
        rows.append(row)
    layers = pd.DataFrame(rows)
    evidence = {name: float(layers[name].mean()) for name in LAYER_COLUMNS}
    evidence["position0_dominant_layers"] = float((layers["first_token_concentration"] >= 0.5).mean())
    frame, reason = classify(evidence, bool(record["causal"]))
    per_head_means = {name: np.nanmean(arr, axis=0) for name, arr in per_head.items()}  # each [layer, head]
    return ModelFrames(record=record, n_sentences=len(summaries), layers=layers, evidence=evidence, frame=frame,
                       reason=reason, extra={"per_head": per_head_means})


def analyse_model(ref: str, texts: list[str], *, seed: int = 0, **opts: Any) -> ModelFrames:
    """Sink evidence of ``ref`` on ``texts`` (streamed reduction, cached)."""
    ex = summarize(ref, texts, SinkSummaryReducer(), **opts)
    mf = frames_from_summaries(ex.record, ex.summaries or [], seed=seed)
    mf.from_cache = ex.from_cache
    mf.extra["bos_policy"] = opts.get("bos_policy", "default")
    mf.extra["position0_tokens"] = sorted({t[0] for t in ex.tokens if t})
    return mf


def analyse(models: list[str], texts: list[str], *, seed: int = 0, **opts: Any) -> list[ModelFrames]:
    return [analyse_model(m, texts, seed=seed, **opts) for m in models]


def frame_table(frames: list[ModelFrames]) -> pd.DataFrame:
    """One row per model: what it is, the evidence, and the frame the rule gives."""
    rows = []
    for f in frames:
        r = f.record
        rows.append({
            "model": f.ref, "family": r["family"], "position encoding": r["position_encoding"],
            "BOS policy": f.extra.get("bos_policy", "default"),
            "position 0": _position0(f), "causal": r["causal"], "sentences": f.n_sentences,
            "first-token share": f.evidence["first_token_share"], "last-token share": f.evidence["last_token_share"],
            "queries peaking on pos. 0": f.evidence["first_token_concentration"],
            "layers where pos. 0 dominates": f.evidence["position0_dominant_layers"],
            "reference tokens / head": f.evidence["reference_count"],
            "reference tokens (official rule)": f.evidence["faithful_reference_count"],
            "frame (this book's rule)": f.frame, "frame (paper, for the family)": r["paper_frame"],
        })
    return pd.DataFrame(rows)


def _position0(f: ModelFrames) -> str:
    """The token at position 0, or how many different ones the sentences put there."""
    seen = f.extra.get("position0_tokens")
    if not seen:
        return f.record["position0_token"]
    return seen[0] if len(seen) == 1 else f"{len(seen)} different tokens"
