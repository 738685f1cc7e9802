"""Chapter 6 text: the numbers behind the sink-geometry and value-space claims, in words."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..analyses.geometry_values import first_last_values, reference_counts
from ..types import MODES

if TYPE_CHECKING:
    from ..results import ModelResult


def _layers(mask: pd.Series) -> str:
    """``"k of n layers"`` for a per-layer boolean mask."""
    return f"{int(mask.sum())} of {len(mask)} layers"


def value_notes(results: list[ModelResult]) -> str:
    """The numbers behind the sink-geometry and value-space claims, per model, in words (the verdicts
    themselves come from the claims registry)."""
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
            f"(mean ratio {d['key_norm_ratio'].mean():.2f}).")
        lines.append(
            f"- *Queries aligned with the sink key*: mean cos(q, k0) {d['cos_to_sink_post'].mean():.2f} against "
            f"{d['cos_to_others_post'].mean():.2f} for other keys; higher in {_layers(aligned)}.")
        lines.append(
            f"- *Alignment rather than norm makes the sink*: the alignment part of the sink logit's advantage exceeds "
            f"the norm part in {_layers(align_wins)} (means {d['alignment_part'].mean():.2f} vs "
            f"{d['norm_part'].mean():.2f}).")
        if rotary:
            shift = (d["cos_to_others_post"] - d["cos_to_others_pre"]).mean()
            shift0 = (d["cos_to_sink_post"] - d["cos_to_sink_pre"]).mean()
            lines.append(
                f"- *RoPE* (Sec. 3.4): rotation changes the mean query cosine to the sink key by {shift0:+.3f} and to "
                f"other keys by {shift:+.3f} (key 0 itself is not rotated; queries are).")
        else:
            lines.append("- *Absolute positions*: no rotation, so before and after coincide; the geometry above is "
                         "what the learned position embeddings produce.")
        for mode in MODES:
            fl = first_last_values(r, mode)
            ent, mag, ali = fl["entropy"], fl["magnitude"], fl["alignment"]
            lines.append(
                f"- *Value space, {mode}*: entropy {ent['first']:.2f} -> {ent['last']:.2f} "
                f"({'falls' if ent['difference'] < 0 else 'does not fall'}); "
                f"magnitude {mag['first']:.2f} -> {mag['last']:.2f} "
                f"(difference {mag['difference']:+.2f}, ratio x{mag['ratio']:.2f}; "
                f"{'rises' if mag['difference'] > 0 else 'does not rise'}); "
                f"alignment {ali['first']:+.2f} -> {ali['last']:+.2f} "
                f"({'ends negative' if ali['last'] < 0 else 'does not end negative'}).")
        c = counts.loc[r.ref]
        if np.isfinite(c["paper"]):
            lines.append(
                f"- *Reference tokens*: {c['official rule (faithful)']:.2f} by the official rule against the paper's "
                f"{c['paper']:g} for {c['paper frame (family)']} frames "
                f"(per-head rule: {c['per-head rule (corrected)']:.2f}).")
        lines.append("")
    return "\n".join(lines)
