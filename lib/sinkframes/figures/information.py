"""Figures of chapter 5 (information geometry): KL change, sink mass, Fisher by layer, output check."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

from .style import _style, finish, model_colour


def information_profiles(profiles: pd.DataFrame, column: str, ylabel: str,
                         band: tuple[str, str] | None = None) -> Figure:
    """One panel per mode (faithful, corrected): ``column`` against relative depth, one line per
    model; ``band`` names the low/high columns to shade (faithful: +-1 std; corrected: 95 % CI)."""
    _style()
    modes = list(dict.fromkeys(profiles["mode"]))
    fig, axes = plt.subplots(1, len(modes), figsize=(5.4 * len(modes), 3.6), sharey=True, squeeze=False)
    for ax, mode in zip(axes[0], modes, strict=True):
        d = profiles[profiles["mode"] == mode]
        for model, g in d.groupby("model", sort=False):
            line = ax.plot(g["depth"], g[column], marker="o", ms=3, label=model, color=model_colour(str(model)))[0]
            if band and band[0] in g and g[band[0]].notna().any():
                ax.fill_between(g["depth"], g[band[0]], g[band[1]], alpha=0.2, color=line.get_color())
        ax.axhline(0, color="grey", lw=0.8)
        ax.set_title(mode, fontsize=10)
        ax.set_xlabel("relative depth (layer / last layer)")
    axes[0][0].set_ylabel(ylabel)
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    return finish(fig)


def output_check(table: pd.DataFrame) -> Figure:
    """Bars of the output change per model for sink removal and the random-key control (95 % CI)."""
    _style()
    models = list(dict.fromkeys(table["model"]))
    fig, axes = plt.subplots(1, len(models), figsize=(3.4 * len(models), 3.4), squeeze=False)
    for ax, model in zip(axes[0], models, strict=True):
        d = table[(table["model"] == model) & table["condition"].isin(["sink", "random"])]
        err = [d["mean"] - d["ci_low"], d["ci_high"] - d["mean"]]
        ax.bar(d["condition"], d["mean"], yerr=err, color=sns.color_palette("colorblind")[:len(d)], capsize=4)
        ax.set_title(model, fontsize=10)
        ax.set_ylabel("next-token KL" if d["metric"].iloc[0] == "kl" else "embedding distance (1 - cos)")
        ax.set_yscale("log")
    fig.tight_layout()
    return finish(fig)
