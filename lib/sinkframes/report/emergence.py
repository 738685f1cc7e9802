"""What the Appendix B page's numbers say, in sentences (built from the results, never hand-written)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..analyses.base import ModelResult
from ..analyses.rmt import Series, emergence, faithful_comparison, model_summary


def twin_notes(trained: Sequence[ModelResult], random: Sequence[ModelResult | None]) -> str:
    """One bullet per model whose random-initialized twin ran: its corrected statistics beside the twin's."""
    pairs = [(t, r) for t, r in zip(trained, random, strict=True) if r is not None]
    a = model_summary([t for t, _ in pairs], "corrected")
    b = model_summary([r for _, r in pairs], "corrected")
    lines = []
    for (_, t), (_, r) in zip(a.iterrows(), b.iterrows(), strict=True):
        lines.append(
            f"- **{t['model']}**: largest layer first-token share {t['max_first_token_share']:.2f} (layer "
            f"{int(t['at_layer'])}) against {r['max_first_token_share']:.2f} at random initialization; participation "
            f"ratio {t['participation_ratio']:.2f} against {r['participation_ratio']:.2f}; eigenvalues above the MP "
            f"edge {t['n_outliers']:.2f} against {r['n_outliers']:.2f} per head; KS distance to the fitted law "
            f"{t['ks_distance']:.2f} against {r['ks_distance']:.2f}."
        )
    return "\n".join(lines)


def series_notes(series: Series, label: str) -> str:
    """Whether and when a first-token sink forms in ``series``, and what the official order compares."""
    em = emergence(series)
    share, lo, hi = em["final_share"]
    if em["formed_at"] is None:
        head = (f"**{label}: no first-token sink formed within the run.** At the last checkpoint (step "
                f"{em['final_step']}) the largest layer share is {share:.2f} [{lo:.2f}, {hi:.2f}] (layer "
                f"{em['final_layer']}), against the threshold of {em['threshold']:g} fixed in advance; it was "
                f"{em['first_share'][0]:.2f} [{em['first_share'][1]:.2f}, {em['first_share'][2]:.2f}] at step "
                f"{em['first_step']}. Whether and when it would cross the threshold with more training, this run "
                "cannot say, so the claim that sinks emerge early stays undecided on it.")
    else:
        stays = ("and stays above it to the end" if em["stays_formed"]
                 else "but does not stay above it at every later checkpoint")
        head = (f"**{label}: a first-token sink forms by step {em['formed_at']}** of {em['final_step']}: the first "
                f"checkpoint whose largest layer share has its 95 % lower bound above {em['threshold']:g} {stays}. "
                f"The mean first crosses the threshold at step {em['mean_above_at']}; at the last checkpoint the "
                f"share is {share:.2f} [{lo:.2f}, {hi:.2f}] (layer {em['final_layer']}).")
    comp = faithful_comparison(series)
    official = comp[comp["order"] == "as rmt.ipynb orders them"].iloc[0]
    by_step = comp[comp["order"] == "by step"].iloc[0]
    tail = (f" Ordered as strings, as `rmt.ipynb` orders them, the run's 'first to last' comparison is "
            f"{official['first']} to **{official['last']}**; by step it is {by_step['first']} to {by_step['last']}.")
    return head + tail


def diagonal_note(max_difference: float) -> str:
    """The causal-eigenvalue fact, with the measured difference."""
    return (f"Largest difference between the official eigenvalue moduli and the sorted diagonal over every layer: "
            f"{max_difference:.1e}" + (" (round-off): the official spectrum of causal attention *is* its "
                                       "self-attention weights." if np.isfinite(max_difference) and
                                       max_difference < 1e-6 else "."))
