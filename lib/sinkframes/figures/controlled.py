"""Figures of the controlled grid: the first-token share each switch ends with, and when the sink forms
against when the loss drops."""

from __future__ import annotations

from typing import TYPE_CHECKING

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from ..training.tiny import ATTENTIONS, POSITION_NAMES, POSITIONS
from .heatmap import heatmap
from .style import COLUMN_IN, _style, finish

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def final_share_heatmaps(final: pd.DataFrame) -> Figure:
    """Per architecture, the largest layer first-token share at the last checkpoint (mean over seeds; the seed
    range written under it) for each position encoding (rows) and attention normalization (columns)."""
    _style()
    archs = list(dict.fromkeys(final["architecture"]))
    # one architecture per row: each heatmap gets the column's width, so its cells hold their numbers
    fig, axes = plt.subplots(len(archs), 1, figsize=(COLUMN_IN, 3.4 * len(archs) + 0.4), squeeze=False,
                             layout="constrained")
    for ax, arch in zip(axes[:, 0], archs, strict=True):
        g = final[final["architecture"] == arch]
        cols = [a for a in ATTENTIONS if a in set(g["attention"])]
        rows = [p for p in POSITIONS if p in set(g["position"])]
        mean = g.pivot(index="position", columns="attention", values="peak_first_share").reindex(index=rows,
                                                                                               columns=cols)
        mean.index = [POSITION_NAMES.get(p, p) for p in mean.index]
        heatmap(ax, mean, vmin=0, vmax=1, cmap="viridis", xticklabels=True, yticklabels=True, cbar=False)
        for i, p in enumerate(rows):
            for j, a in enumerate(cols):
                cell = g[(g["position"] == p) & (g["attention"] == a)]
                if cell.empty:
                    continue
                c = cell.iloc[0]
                v = float(c["peak_first_share"])
                ax.text(j + 0.5, i + 0.5, f"{v:.2f}\n{c['peak_first_low']:.2f}-{c['peak_first_high']:.2f}",
                        ha="center", va="center", fontsize=7.5, color="white" if v < 0.55 else "black")
        ax.set_title(f"{arch}", fontsize=10)
        ax.set_xlabel("")
        ax.set_ylabel("")
    fig.suptitle("Largest layer first-token share at the last step (seed mean, seed range)", fontsize=10)
    return finish(fig)


def emergence_curves(measured: pd.DataFrame, attention: str = "softmax") -> Figure:
    """Per position encoding (rows) and architecture (columns): the largest layer first-token share (green)
    and the loss over the zero-prediction loss (grey, right axis) at each checkpoint, one line per seed; the
    dotted line is the share a sink must clear (0.5)."""
    from ..analyses.controlled import LOSS_DROP, SINK_SHARE

    _style()
    m = measured[measured["attention"] == attention].copy()
    if m.empty:
        fig, ax = plt.subplots(figsize=(4.0, 0.8))
        ax.axis("off")
        ax.text(0.5, 0.5, f"no {attention} run among the measured checkpoints", ha="center", va="center", fontsize=9)
        return finish(fig)
    m["peak"] = m["first_share"].map(max)
    m["loss_ratio"] = m["loss"] / m["zero_loss"]
    rows = [p for p in POSITIONS if p in set(m["position"])]
    archs = list(dict.fromkeys(m["architecture"]))
    fig, axes = plt.subplots(len(rows), len(archs), figsize=(3.3 * len(archs), 1.35 * len(rows) + 0.8),
                             squeeze=False, sharex=True, sharey=True, layout="constrained")
    for i, p in enumerate(rows):
        for j, arch in enumerate(archs):
            ax = axes[i][j]
            twin = ax.twinx()
            twin.grid(False)
            for _, run in m[(m["position"] == p) & (m["architecture"] == arch)].groupby("run"):
                x = np.maximum(run["step"].to_numpy(), 16)  # step 0 drawn at the left edge of the log axis
                ax.plot(x, run["peak"], color="#1b7837", lw=1.2, marker="o", ms=2.5)
                twin.plot(x, run["loss_ratio"].clip(upper=1.5), color="#7f7f7f", lw=0.9, ls="--")
            ax.axhline(SINK_SHARE, color="#1b7837", lw=0.7, ls=":")
            twin.axhline(LOSS_DROP, color="#7f7f7f", lw=0.7, ls=":")
            ax.set_xscale("log", base=2)
            ax.set_ylim(0, 1)
            twin.set_ylim(0, 1.5)
            twin.tick_params(labelsize=8)
            if j < len(archs) - 1:
                twin.set_yticklabels([])
            ax.set_title(f"{arch}, {POSITION_NAMES.get(p, p)}", fontsize=9)
            ax.tick_params(labelsize=8)
    fig.supxlabel("training step (log scale; step 0 at the left edge)", fontsize=9)
    fig.supylabel("largest layer first-token share (green)", fontsize=9)
    fig.suptitle(f"When the sink forms ({attention}); grey dashed: loss / zero-prediction loss (right axis)",
                 fontsize=10)
    return finish(fig)


def scout_curves(records: pd.DataFrame, uniform: dict[int, float], formed: float = 0.5) -> Figure:
    """Per recipe of the natural-text search, against CPU-minutes: the largest layer first-token share (left)
    and the largest single head's (right), with the formation line and, per window length in ``uniform``
    (tokens -> share), the share that uniform causal attention gives the first token."""
    _style()
    fig, axes = plt.subplots(1, 2, figsize=(8.6, 4.8), sharey=True, layout="constrained")
    peak = records.groupby(["recipe", "step"], sort=False).agg(cpu=("cpu", "first"), layer=("first_share", "max"),
                                                               head=("best_head", "max")).reset_index()
    palette = plt.get_cmap("tab20")  # one distinct colour for each of up to 20 recipes (tab10 repeats after 10)
    for ax, col, title in ((axes[0], "layer", "largest layer share (mean over heads)"),
                           (axes[1], "head", "largest single head's share")):
        for i, (recipe, g) in enumerate(peak.groupby("recipe", sort=False)):
            ax.plot(g["cpu"] / 60, g[col], marker=".", ms=3, color=palette(i % palette.N), label=str(recipe))
        for share in uniform.values():
            ax.axhline(share, color="0.5", ls=":", lw=1)
        ax.axhline(formed, color="0.3", ls="--", lw=1)
        ax.set_title(title)
        ax.set_xlabel("CPU-minutes of training")
        ax.set_ylim(0, 1)
    axes[0].set_ylabel("first-token share")
    axes[0].text(0.02, formed + 0.02, "a sink has formed", transform=axes[0].get_yaxis_transform(), fontsize=9)
    lines = sorted(uniform.items(), key=lambda item: -item[1])  # highest share first
    axes[0].text(0.02, lines[0][1] + 0.02, "uniform attention over " + " / ".join(f"{n}" for n, _ in lines)
                 + " tokens", transform=axes[0].get_yaxis_transform(), fontsize=9)
    handles, labels = axes[1].get_legend_handles_labels()
    fig.legend(handles, labels, title="recipe", fontsize=9, loc="outside lower center", ncols=5)
    return finish(fig)


def text_grid_curves(rows: pd.DataFrame, uniform: float, formed: float = 0.5) -> Figure:
    """The language-model grid's finished runs against training steps: the largest layer first-token share (left;
    the formation line and the share of uniform attention dotted) and the held-out loss (right); one colour per
    position encoding, solid for seed 0 and dashed for the others."""
    _style()
    fig, axes = plt.subplots(1, 2, figsize=(8.6, 4.6), layout="constrained")
    palette = plt.get_cmap("tab10")
    colour = {p: palette(i) for i, p in enumerate(POSITIONS)}
    for (position, seed), g in rows.groupby(["position", "seed"], sort=False):
        g = g.sort_values("step")
        style = {"color": colour[str(position)], "ls": "-" if str(seed) == "0" else "--", "lw": 1.3}
        axes[0].plot(g["step"], [max(f) for f in g["first_share"]], **style)
        axes[1].plot(g["step"], g["loss"], **style)
    axes[0].axhline(formed, color="0.3", ls="--", lw=1)
    axes[0].axhline(uniform, color="0.5", ls=":", lw=1)
    axes[0].text(0.02, formed + 0.02, "a sink has formed", transform=axes[0].get_yaxis_transform(), fontsize=9)
    axes[0].text(0.02, uniform + 0.02, "uniform attention", transform=axes[0].get_yaxis_transform(), fontsize=9)
    axes[0].set(title="largest layer first-token share", xlabel="training step", ylabel="first-token share",
                ylim=(0, 1))
    axes[1].set(title="held-out loss (nats per token)", xlabel="training step", yscale="log")
    # one entry per encoding (its colour) and one per line style (the seeds), not one per run
    shown = [p for p in POSITIONS if p in set(rows["position"].astype(str))]
    handles = [Line2D([], [], color=colour[p], lw=1.3, label=POSITION_NAMES.get(p, p)) for p in shown]
    handles += [Line2D([], [], color="0.3", lw=1.3, ls="-", label="seed 0"),
                Line2D([], [], color="0.3", lw=1.3, ls="--", label="other seeds")]
    fig.legend(handles=handles, fontsize=9, loc="outside lower center", ncols=3)
    return finish(fig)


def long_run_curves(runs: dict[str, list[dict]], threshold: float = 0.3, formed: float = 0.5,
                    test_step: int = 8000) -> Figure:
    """The long runs (sooner or never) against training steps: the largest layer first-token share (left, the
    formation line dashed) and the percentage of heads whose first-token share exceeds ``threshold`` (right, Gu et
    al.'s sink metric); the formation test's step marked on both. One colour per position encoding."""
    _style()
    fig, axes = plt.subplots(1, 2, figsize=(8.6, 4.2), layout="constrained")
    palette = plt.get_cmap("tab10")
    colour = {p: palette(i) for i, p in enumerate(POSITIONS)}
    for name, records in runs.items():
        position = name.split("-")[1]
        steps = [r["step"] for r in records]
        heads = [[h for layer in r["head_share"] for h in layer] for r in records]
        style = {"color": colour.get(position, "0.3"), "lw": 1.3, "label": name}
        axes[0].plot(steps, [max(r["first_share"]) for r in records], **style)
        axes[1].plot(steps, [100 * sum(h > threshold for h in hs) / len(hs) for hs in heads], **style)
    for ax in axes:
        ax.axvline(test_step, color="0.5", ls=":", lw=1)
        ax.set_xlabel("training step")
    axes[0].axhline(formed, color="0.3", ls="--", lw=1)
    axes[0].text(0.02, formed + 0.02, "a sink has formed", transform=axes[0].get_yaxis_transform(), fontsize=9)
    axes[0].set(title="largest layer first-token share", ylabel="first-token share", ylim=(0, 1))
    axes[1].set(title=f"heads above {threshold} (Gu et al.'s metric), %", ylim=(0, 100))
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=9, loc="outside lower center", ncols=3)
    return finish(fig)
