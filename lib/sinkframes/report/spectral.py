"""Plain statements for the spectral-graph chapter, generated from the computed tables."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..analyses import spectral as sp
from ..metrics.graphs import PAPER_THRESHOLDS, graph_key


def _fmt_ts(ts: Sequence[float]) -> str:
    return ", ".join(f"{t:g}" for t in ts) if len(ts) else "none"


def middle_peak_notes(peaks: pd.DataFrame) -> str:
    """Per model: at which thresholds the corrected lambda2 has a middle-layer peak (interval above 1)."""
    lines = []
    for model, g in peaks.groupby("model", sort=False):
        yes = g[g["interval vs 1"] == "above 1"].threshold.tolist()
        no = g[g["interval vs 1"] == "below 1"].threshold.tolist()
        dip = g[g["middle dip"]].threshold.tolist()
        lines.append(f"- `{model}`: middle-layer peak of lambda2 (interval above 1) at t = {_fmt_ts(yes)}; no peak at "
                     f"t = {_fmt_ts(no)} (factors {g['peak factor'].min():.2f} to {g['peak factor'].max():.2f}; "
                     f"the paper reports 1.01x-1.61x for Llama); middle dip (a U shape) at t = {_fmt_ts(dip)}.")
    return "\n".join(lines)


def flip_notes(flips: pd.DataFrame, metric: str = "centralization") -> str:
    """Per model: where the Fiedler-centralization correlation changes sign, by kind."""
    lines = []
    for model, g in flips[flips.metric == metric].groupby("model", sort=False):
        parts = [f"{row.kind}: {row['sign changes']} (r {row['r at lowest t']:+.2f} at t = 0.001, "
                 f"{row['r at highest t']:+.2f} at t = 0.2)" for _, row in g.iterrows()]
        lines.append(f"- `{model}`: " + "; ".join(parts) + ".")
    return "\n".join(lines)


def magnitude_notes(tab: sp.SpectralTables, t: float = 0.001) -> str:
    """The official Fiedler values at a low threshold beside the sentence length they track."""
    lines = []
    for ms, f in zip(tab.models, tab.per_model("faithful"), strict=True):
        lay = f["layers"]
        g = lay[lay.threshold == t].sort_values("layer")
        n = float(np.mean(ms.samples["n_tokens"]))
        first, last = float(g.fiedler.iloc[0]), float(g.fiedler.iloc[-1])
        scale = "n/2" if ms.record["causal"] else "n"
        norm = float(np.nanmean(sp.at(ms, graph_key("corrected", "lambda2_norm"), [t])))
        lines.append(f"- `{ms.ref}` (mean n = {n:.1f} tokens): official Fiedler value {first:.2f} in the first layer "
                     f"and {last:.2f} in the last at t = {t:g}; a complete graph gives {scale} = "
                     f"{n / 2 if ms.record['causal'] else n:.1f}, so these numbers mostly measure sentence length; "
                     f"lambda2 / n (corrected) is {norm:.2f}.")
    return "\n".join(lines)


def star_notes(tab: sp.SpectralTables) -> str:
    """Star-likeness under both definitions, as ranges over the paper's thresholds."""
    lines = []
    for ms, f in zip(tab.models, tab.per_model("faithful"), strict=True):
        comp = f["layers"].groupby("threshold")["star_likeness"].mean()
        basic = np.nanmean(sp.at(ms, graph_key("corrected", "star_basic"), PAPER_THRESHOLDS), axis=(0, 2))
        lines.append(f"- `{ms.ref}`: composite star-likeness (official, laplacian.ipynb) {comp.min():.2f} to "
                     f"{comp.max():.2f}; basic star-likeness d_max / (n - 1) without self-loops (corrected) "
                     f"{basic.min():.2f} to {basic.max():.2f} across t = 0.001-0.2.")
    return "\n".join(lines)


def roundoff_notes(tab: sp.SpectralTables) -> str:
    """Per model: the layer-metric pairs whose Fiedler value is the same in every sentence up to round-off
    (``constant Fiedler layers`` of both modes' tables), which are not correlated, and the rows of
    ``fiedler.ipynb``'s summary that would be correlations of round-off alone."""
    lines = []
    for ms, c, f in zip(tab.models, tab.per_model("corrected"), tab.per_model("faithful"), strict=True):
        fied = f["fiedler"]
        only = fied[fied["round-off only"]]
        where = f" (t = {_fmt_ts(sorted(set(only.threshold)))})" if len(only) else ""
        lines.append(f"- `{ms.ref}`: {int(fied['constant Fiedler layers'].sum())} layer-metric pairs on "
                     f"`fiedler.ipynb`'s list ({int(c['correlations']['constant Fiedler layers'].sum())} in the "
                     "corrected correlations) have a Fiedler value constant up to round-off: not correlated. "
                     f"The notebook correlates its eigensolver's round-off there; {len(only)} of its "
                     f"{len(fied)} metric x threshold means{where} would be such correlations alone, their r "
                     "and p not reproducible (they depend on the LAPACK build and the memory layout).")
    return "\n".join(lines)
