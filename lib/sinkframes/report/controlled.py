"""The controlled-grid page's statements, computed from its measurements (no number is typed)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pandas as pd

from ..analyses.controlled import LOSS_DROP, SINK_SHARE


def _learned(row: pd.Series) -> bool:
    return bool(row["final_loss"] < LOSS_DROP * row["zero_loss"])


def _sink_every_seed(cell: pd.Series) -> str:
    steps = [s.strip() for s in str(cell["sink_steps"]).split(",")]
    formed = sum(s != "never" for s in steps)
    return "all" if formed == len(steps) else ("no" if formed == 0 else f"{formed} of {len(steps)}")


def cell_sentence(cell: pd.Series) -> str:
    """One cell in words: did it learn, did a sink form, how strong, which labels."""
    labels = Counter(x.strip() for x in str(cell["frames"]).split(","))
    label_text = ", ".join(f"{k} x{v}" if v > 1 else k for k, v in labels.items())
    learned = "learned the task" if _learned(cell) else "did **not** learn the task"
    return (f"`{cell['position']}` / {cell['attention']}: {learned} (loss {cell['final_loss']:.2g} against "
            f"{cell['zero_loss']:.2g} for predicting zero); sink formed in {_sink_every_seed(cell)} seeds; largest "
            f"layer first-token share {cell['peak_first_share']:.2f} [{cell['peak_first_low']:.2f}, "
            f"{cell['peak_first_high']:.2f}]{_mass_text(cell)}; labels: {label_text}")


def _mass_text(cell: pd.Series) -> str:
    """For a normalization whose rows need not sum to one: how much weight the rows of that layer carry."""
    return "" if cell["attention"] != "sigmoid" else f" (its rows carry {cell['row_mass']:.2f} of weight in all)"


def findings(final: pd.DataFrame) -> str:
    """Per architecture and normalization: what the grid ended with, one line per cell."""
    out = []
    for (arch, attention), g in final.groupby(["architecture", "attention"], sort=False):
        out.append(f"**{arch}, {attention}**\n")
        out.extend(f"- {cell_sentence(c)}" for _, c in g.iterrows())
        out.append("")
    return "\n".join(out)


def headline(final: pd.DataFrame) -> str:
    """The page's answer in two sentences, from the softmax cells and the controls."""
    lines = []
    for arch, g in final.groupby("architecture", sort=False):
        soft = g[g["attention"] == "softmax"]
        labels = sorted({x.strip() for f in soft["frames"] for x in str(f).split(",")})
        sinks = [c["position"] for _, c in soft.iterrows() if _sink_every_seed(c) == "all"]
        lines.append(f"- **{arch}s, softmax**: a first-token sink (share above {SINK_SHARE:g} with its interval) "
                     f"formed in every seed for {len(sinks)} of {len(soft)} position encodings"
                     f"{' (' + ', '.join(sinks) + ')' if sinks else ''}; largest layer share "
                     f"{soft['peak_first_share'].min():.2f} to {soft['peak_first_share'].max():.2f} (seed means); "
                     f"final frame labels seen: {', '.join(labels)}.")
        for attention, c in g[g["attention"] != "softmax"].groupby("attention", sort=False):
            n = sum(_sink_every_seed(x) == "all" for _, x in c.iterrows())
            mass = (f"; those rows carry {c['row_mass'].min():.2f} to {c['row_mass'].max():.2f} of weight in all"
                    if attention == "sigmoid" else "")
            lines.append(f"  - {attention} control: a sink in every seed for {n} of {len(c)} encodings; largest "
                         f"share {c['peak_first_share'].min():.2f} to {c['peak_first_share'].max():.2f}{mass}.")
    return "\n".join(lines)


def training_note(index: dict[str, Any]) -> str:
    """How the committed checkpoints were made: plan, cost, software."""
    plan, runs = index["plan"], index["runs"]
    seconds = [r["seconds"] for r in runs.values()]
    return (f"{len(runs)} runs of {plan['steps']} steps (batch {plan['batch_size']}, AdamW lr {plan['lr']:g}, weight "
            f"decay {plan['weight_decay']:g}, gradient clipping {plan['grad_clip']:g}), checkpoints at steps "
            f"{', '.join(str(s) for s in plan['checkpoints'])}; {sum(seconds) / 60:.0f} CPU-minutes in all "
            f"({min(seconds):.0f}-{max(seconds):.0f} s per run, {index['jobs']} runs at a time, one thread each, "
            f"{index['wall_seconds'] / 60:.0f} minutes of wall time), torch {index['torch']}.")


def provenance_line(profile: str, n_runs: int, probe: int, folder: str) -> str:
    """The page's provenance: the grid's checkpoints stand where a page's models stand, the probe set where
    its sentences do."""
    from .provenance import provenance

    weights = {"controlled grid": f"{n_runs} runs trained by this project (`train-controlled`), float16, in {folder}"}
    return provenance(profile, ["controlled grid"], probe, "sink_task", 0, weights=weights)
