"""Chapter 5 text: plain verdicts on the paper's KL, concentration, Fisher and output claims."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import stats
from ..analyses import information as info_mod
from ..paper import CONCENTRATION_RANGES, FISHER_SHAPES, KL_SHAPES, KL_SIGNS

if TYPE_CHECKING:
    import pandas as pd

    from ..analyses.base import ModelResult


def _kl_shape_verdict(shape: str, regions: pd.DataFrame, layers: pd.DataFrame) -> tuple[str, str]:
    """(verdict, evidence) for one KL-profile claim from corrected region and layer tables."""
    reg = regions.set_index("region")
    means = {str(k): float(v) for k, v in reg["kl_reduction"].items()}
    early, middle, late_mean = (means.get(k, float("nan")) for k in ("early", "middle", "late"))
    sig = layers["p_holm"] < 0.05
    neg = int(((layers["ci_high"] < 0) & sig).sum())
    pos = int(((layers["ci_low"] > 0) & sig).sum())
    n = len(layers)
    ev = (f"{neg} of {n} layers significantly negative and {pos} significantly positive (Holm-corrected sign-flip "
          f"tests); region means early {early:+.3f}, middle {middle:+.3f}, late {late_mean:+.3f}"
          ) if {"early", "middle", "late"} <= set(reg.index) else f"{neg} negative, {pos} positive of {n} layers"
    if shape == "negative":
        ok = neg == n
        return ("supported" if ok else ("partly supported" if neg > n / 2 else "not supported")), ev
    if not {"early", "middle", "late"} <= set(reg.index):
        return "not testable (too few layers for three regions)", ev
    e, m, late = (reg.loc[k] for k in ("early", "middle", "late"))
    if shape == "u_shaped":
        ok = bool(m["ci_high"] < e["ci_low"] and m["ci_high"] < late["ci_low"])
        return ("supported" if ok else "not supported"), ev
    if shape == "three_phase":
        ok = bool(e["ci_low"] > 0 and m["ci_high"] < 0 and late["ci_high"] < 0)
        return ("supported" if ok else "not supported"), ev
    if shape == "decreasing":
        ok = bool(e["ci_low"] > 0 and late["ci_high"] < 0)
        return ("supported" if ok else "not supported"), ev
    return "not testable", ev


def information_verdicts(results: list[ModelResult]) -> str:
    """One line per model and claim: the paper's statement for the model's family, what the data
    show, and whether they support it (corrected measures decide; faithful shown beside)."""
    shape_text = {"negative": "negative in every layer", "u_shaped": "U-shaped over depth",
                  "three_phase": "three phases (positive early, negative middle and late)",
                  "decreasing": "positive early, negative late"}
    lines = []
    ftab = info_mod.fisher_table(results) if any(r.data.get("fisher") for r in results) else None
    for r in results:
        fam = r.record["family"]
        name = f"`{r.ref}` ({fam} family)"
        corr = info_mod.model_layers(r, "corrected")
        faith = info_mod.model_layers(r, "faithful")
        shape = KL_SHAPES.get(fam)
        if shape:
            verdict, ev = _kl_shape_verdict(shape, info_mod.model_regions(r), corr)
            lines.append(f"- {name}, KL reduction {shape_text[shape]}: **{verdict}**. {ev}; faithful mean over its "
                         f"{len(faith)} layers {faith['kl_reduction'].mean():+.3f}.")
        sign = KL_SIGNS.get(fam)
        if sign:
            per_sentence = np.nanmean(r.samples["p90/corrected/reduction"], 1)  # [sample]
            m, lo, hi = stats.bootstrap_ci(per_sentence, seed=int(r.params.get("seed", 0)))
            ok = lo > 0 if sign > 0 else hi < 0
            lines.append(f"- {name}, mean KL reduction {'positive' if sign > 0 else 'negative'}: "
                         f"**{'supported' if ok else 'not supported'}**. "
                         f"Corrected mean over layers {m:+.3f} (95 % interval {lo:+.3f} to {hi:+.3f}).")
        rng = CONCENTRATION_RANGES.get(fam)
        if rng:
            med = float(faith["sink_mass"].median())
            ok = rng[0] <= med <= rng[1]
            lines.append(f"- {name}, sink concentration in {rng[0]:.0%}-{rng[1]:.0%}: "
                         f"**{'supported' if ok else 'not supported'}**. "
                         f"Faithful (heads 0-3, 90th-percentile sinks) median over layers {med:.0%} (range "
                         f"{faith['sink_mass'].min():.0%}-{faith['sink_mass'].max():.0%}); "
                         f"all heads {corr['sink_mass'].median():.0%}.")
        fshape = FISHER_SHAPES.get(fam)
        if fshape and ftab is not None:
            rows = ftab[(ftab["model"] == r.ref) & (ftab["mode"] == "corrected")]
            if len(rows):
                row = rows.iloc[0]
                if fshape == "early":
                    ok = bool(row["early_low"] <= 0.7 and row["early_high"] >= 0.5)
                    claim, ev = "about 60 % of the Fisher information in the early layers", (
                        f"early third holds {row['early_share']:.0%} "
                        f"(95 % interval {row['early_low']:.0%}-{row['early_high']:.0%})")
                elif fshape == "middle":
                    ok = bool(row["peak_region"] == "middle")
                    claim = "Fisher information peaks in the middle layers"
                    ev = f"peak at layer {row['peak_layer']} ({row['peak_region']} third)"
                else:
                    ok, claim, ev = False, "several Fisher peaks", "not evaluated by a fixed rule"
                lines.append(f"- {name}, {claim}: **{'supported' if ok else 'not supported'}**. Corrected: {ev}; "
                             f"loss: {row['objective']}; {int(row['sentences'])} sentences.")
        output = r.data.get("output")
        if output is not None:
            s = output.summary.set_index("condition")
            metric = "next-token KL" if output.causal else "sentence-embedding distance (1 - cosine)"
            p = float(s.loc["sink", "p_sign_flip"])
            ok = s.loc["sink", "mean"] > s.loc["random", "mean"] and p < 0.05
            extra = (f"; perplexity {s.loc['sink', 'ppl_base']:.1f} -> {s.loc['sink', 'ppl_edit']:.1f} "
                     f"without the sink, -> {s.loc['random', 'ppl_edit']:.1f} without a random key"
                     ) if output.causal else ""
            lines.append(f"- {name}, removing attention to position 0 changes the outputs more than removing a random "
                         f"key: **{'supported' if ok else 'not supported'}**. {metric} {s.loc['sink', 'mean']:.4f} "
                         f"against {s.loc['random', 'mean']:.4f} (sign-flip p = {p:.4f}){extra}.")
    return "\n".join(lines)
