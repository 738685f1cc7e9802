"""Chapter 2 text: where each model's attention rows lie on the simplex, and the verdict on §3.2."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, cast

from ..analyses.softmax_geometry import head_correlation

if TYPE_CHECKING:
    from ..results import ModelResult


def geometry_notes(results: list[ModelResult]) -> str:
    """Plain statements drawn from the data: how concentrated each model's rows are, on which key,
    and whether lower entropy goes with a larger share on position 0 across heads."""
    lines = []
    for r in results:
        d = r.layers
        L = len(d)
        majority_layers = int((d["near_vertex"] >= 0.5).sum())
        first_layers = int((d["near_first_vertex"] >= 0.5).sum())
        near = d["near_vertex"].mean()
        near_first = d["near_first_vertex"].mean()
        on_first = near_first / near if near > 0 else float("nan")
        rho = head_correlation(r)
        lo = d.loc[cast(int, d["distance_to_vertex"].idxmin())].to_dict()  # layers has a RangeIndex
        hi = d.loc[cast(int, d["distance_to_vertex"].idxmax())].to_dict()
        trend = ("the correlation of entropy and the weight on position 0 is undefined (one is constant)"
                 if math.isnan(rho) else
                 "lower entropy goes with more weight on position 0" if rho <= -0.5 else
                 "higher entropy goes with more weight on position 0" if rho >= 0.5 else
                 "entropy and the weight on position 0 are only weakly related")
        lines.append(
            f"- `{r.ref}`: {near:.0%} of rows give one key more than half of their mass (within pi/2 of a vertex), "
            f"and {on_first:.0%} of those put it on position 0; a majority of rows do so in {majority_layers} of {L} "
            f"layers ({first_layers} with position 0 as that key). Rows are closest to a vertex in layer "
            f"{int(lo['layer'])} (mean distance {lo['distance_to_vertex']:.2f}, share on position 0 "
            f"{lo['first_share']:.2f}) and farthest in layer {int(hi['layer'])} ({hi['distance_to_vertex']:.2f}). "
            f"Across heads, {trend}"
            + ("." if math.isnan(rho) else f" (Spearman {rho:+.2f}).")
        )
    return "\n".join(lines)
