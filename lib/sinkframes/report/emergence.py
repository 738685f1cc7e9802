"""What the Appendix B page's numbers say, in sentences (built from the results, never hand-written)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..analyses.positions import ATTRACTOR_SHARE
from ..analyses.rmt import (
    SINK_SHARE_THRESHOLD,
    Series,
    TrainingRun,
    emergence,
    faithful_comparison,
    model_summary,
)
from ..metrics.sinks import uniform_first_token_share
from ..results import ModelResult


def twin_notes(trained: Sequence[ModelResult], random: Sequence[ModelResult | None]) -> str:
    """One bullet per model whose random-initialized twin ran: its corrected statistics beside the twin's."""
    pairs = [(t, r) for t, r in zip(trained, random, strict=True) if r is not None]
    a = model_summary([t for t, _ in pairs], "corrected")
    b = model_summary([r for _, r in pairs], "corrected")
    lines = []
    for (_, t), (_, r) in zip(a.iterrows(), b.iterrows(), strict=True):
        lines.append(
            f"- **{t['model']}**: largest layer first-token share {t['max_first_token_share']:.2f} (layer "
            f"{int(t['at_layer'])}) against {r['max_first_token_share']:.2f} at random initialization; RMS deviation "
            f"from uniform attention {t['rms_deviation']:.2f} against {r['rms_deviation']:.2f}; eigenvalues above the "
            f"noise cut {t['n_outliers']:.2f} against {r['n_outliers']:.2f} per head, the largest "
            f"{t['top_over_edge']:.2f} against {r['top_over_edge']:.2f} times the noise edge; participation ratio "
            f"{t['participation_ratio']:.2f} against {r['participation_ratio']:.2f}; KS distance to same-mask noise "
            f"{t['ks_distance']:.2f} against {r['ks_distance']:.2f}."
        )
    return "\n".join(lines)


def frame_limit_note() -> str:
    """What the corrected spectral statistics can and cannot say about reference frames."""
    return ("These statistics say how far attention is from uniform and whether that deviation is one direction "
            "(a spike), several, or noise; they cannot identify a reference frame. Singular values do not change when "
            "keys are relabelled, so a sink on the first token and a sink on any other single token give the same "
            "numbers, and nothing here says which token the frame sits on. The first-token share, beside the "
            "random-initialized twins, carries the conclusion about first-token frames.")


def threshold_note(max_tokens: int, causal: bool = True, threshold: float = SINK_SHARE_THRESHOLD) -> str:
    """The sink threshold beside the share that uniform attention would give at ``max_tokens`` tokens."""
    kind = "causal" if causal else "bidirectional"
    return (f"A first-token sink counts as formed when some layer's head-mean first-token share has its 95 % lower "
            f"bound above **{threshold:g}**, fixed in advance. Uniform {kind} attention over {max_tokens} tokens gives "
            f"a share of {uniform_first_token_share(max_tokens, causal):.3f} (the mean over queries 1 to "
            f"{max_tokens - 1} of 1 / (query + 1)); each run's share at its sentences' own lengths is printed with it.")


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
    head += (f" Uniform causal attention at these sentences' lengths ({em['mean_tokens']:.0f} tokens on average) "
             f"would give {em['uniform_share']:.3f}.")
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


#: first-token heads of Pythia over its training, as published with arXiv 2606.02378: per model, its number of
#: heads, the heads counted at each step, and how many of them lie in layers 0-1 at every step
PUBLISHED_FIRST_TOKEN_HEADS: dict[str, dict] = {
    "EleutherAI/pythia-1b": {"heads": 128, "steps": {512: 0, 3000: 14, 143000: 74}, "early": 0},
}
#: the source of :data:`PUBLISHED_FIRST_TOKEN_HEADS`
PUBLISHED_SOURCE = "arXiv 2606.02378"
#: a first-token head here: its mean first-token share over the sentences reaches this, the attractor heads of the
#: same paper's claim in chapter 8 (one number for both); the paper's own criterion may differ, so the counts are a
#: check beside theirs, not a verdict
FIRST_TOKEN_HEAD_SHARE = ATTRACTOR_SHARE
#: the early layers the published counts speak of
EARLY_LAYERS = (0, 1)


def first_token_heads(result: ModelResult, share: float = FIRST_TOKEN_HEAD_SHARE) -> tuple[int, int, int]:
    """``(heads whose mean first-token share reaches share, of them in layers 0-1, all heads)`` of one checkpoint."""
    mean = np.asarray(result.heads["first_token_share"], dtype=float)  # [layer, head]
    hit = mean >= share
    return int(hit.sum()), int(hit[list(EARLY_LAYERS)].sum()), int(mean.size)


def published_heads_check(runs: Sequence[TrainingRun]) -> pd.DataFrame:
    """Our first-token head counts beside the published ones (:data:`PUBLISHED_FIRST_TOKEN_HEADS`), one row per
    checkpoint of a run whose model and step the publication counts; empty when no run holds one."""
    rows = []
    for run in runs:
        published = PUBLISHED_FIRST_TOKEN_HEADS.get(run.source)
        if published is None:
            continue
        for checkpoint, result, _loss in run.series.by_name().values():
            if checkpoint.step not in published["steps"]:
                continue
            ours, early, total = first_token_heads(result)
            theirs = published["steps"][checkpoint.step]
            rows.append({"model": run.source, "step": checkpoint.step,
                         f"heads ({PUBLISHED_SOURCE})": f"{theirs} of {published['heads']}",
                         "heads (ours)": f"{ours} of {total}",
                         f"in layers 0-1 ({PUBLISHED_SOURCE})": published["early"], "in layers 0-1 (ours)": early})
    return pd.DataFrame(rows)


def published_heads_note(table: pd.DataFrame, model: str | None) -> str:
    """What the published check says: how our counts were made, or why the page has none."""
    if model is None:
        return (f"The first-token heads of Pythia-1B over its training published with {PUBLISHED_SOURCE} (0 of 128 "
                "heads at step 512, 14 at step 3,000, 74 at step 143,000, none in layers 0-1) are checked where a "
                "profile loads those checkpoints from the hub (the colab and paper profiles); this profile does not.")
    if table.empty:
        return (f"No checkpoint of `{model}` that {PUBLISHED_SOURCE} counts was measured: the published counts "
                f"are for {', '.join(PUBLISHED_FIRST_TOKEN_HEADS)} at steps "
                f"{', '.join(str(s) for p in PUBLISHED_FIRST_TOKEN_HEADS.values() for s in p['steps'])}.")
    return (f"Our count is of the heads whose mean first-token share over this page's sentences reaches "
            f"{FIRST_TOKEN_HEAD_SHARE}; {PUBLISHED_SOURCE} may count with another criterion and other text, so the "
            "two columns are a check of direction and order of magnitude, not a verdict.")
