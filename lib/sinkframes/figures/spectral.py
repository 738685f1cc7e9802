"""Figures of the spectral-graph chapter, from computed spectral ``ModelResult``s and tables. No model loading."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

from ..analyses import spectral as sp
from ..metrics.graphs import PAPER_THRESHOLDS, graph_key
from .heatmap import heatmap
from .style import COLUMN_IN, _style, finish, model_colour

if TYPE_CHECKING:
    from ..results import ModelResult

LABELS = {
    "lambda2": "algebraic connectivity lambda2",
    "lambda2_norm": "lambda2 / n",
    "star_basic": "star-likeness (basic: d_max / (n-1))",
    "star_composite": "star-likeness (composite)",
    "centralization": "degree centralization",
    "degree_variance": "in-degree variance",
    "density_allowed": "density (of allowed pairs)",
    "gini": "Gini of in-degrees",
}


#: column titles short enough for a third of the text column
SHORT_LABELS = {"lambda2_norm": "lambda2 / n", "star_basic": "star-likeness (basic)",
                "centralization": "degree centralization"}


def threshold_sweeps(models: Sequence[ModelResult],
                     metrics: Sequence[str] = ("lambda2_norm", "star_basic", "centralization")) -> Figure:
    """Corrected metric against threshold, one line per layer (colour = depth): one row per model, one column
    per metric, each column on one y-range so that the models compare at a glance."""
    _style()
    fig, axes = plt.subplots(len(models), len(metrics), figsize=(COLUMN_IN, 0.6 + 1.35 * len(models)),
                             squeeze=False, sharex=True, sharey="col", layout="constrained")
    cmap = plt.get_cmap("viridis")
    for r, ms in enumerate(models):
        L = ms.n_layers
        for c, metric in enumerate(metrics):
            ax = axes[r, c]
            y = np.nanmean(sp.at(ms, graph_key("corrected", metric), PAPER_THRESHOLDS), 0)  # [t, layer]
            for layer in range(L):
                ax.plot(PAPER_THRESHOLDS, y[:, layer], color=cmap(layer / max(1, L - 1)), lw=1, alpha=0.85)
            ax.set_xscale("log")
            ax.set_xticks([1e-3, 1e-2, 1e-1])
            if r == 0:
                ax.set_title(SHORT_LABELS.get(metric, metric))
            if c == 0:
                ax.set_ylabel(ms.ref)
            if r == len(models) - 1:
                ax.set_xlabel("threshold t")
    sm = plt.cm.ScalarMappable(cmap=cmap, norm=plt.Normalize(0, 1))
    fig.colorbar(sm, ax=axes, shrink=0.5, label="relative depth")
    return finish(fig)


def layer_profiles(table: pd.DataFrame, metric: str,
                   thresholds: Sequence[float] = (0.001, 0.01, 0.05, 0.2)) -> Figure:
    """Corrected layer means against relative depth with 95 % bootstrap bands, one panel per model."""
    _style()
    d = table[(table.metric == metric) & (table.threshold.isin(thresholds))]
    models = list(dict.fromkeys(d.model))
    fig, axes = plt.subplots(1, len(models), figsize=(4.3 * len(models), 3.4), squeeze=False, sharey=True)
    palette = sns.color_palette("rocket", len(thresholds))
    for ax, model in zip(axes[0], models, strict=True):
        for k, t in enumerate(thresholds):
            g = d[(d.model == model) & (d.threshold == t)].sort_values("layer")
            ax.plot(g.depth, g["mean"], color=palette[k], marker="o", ms=2.5, label=f"t = {t:g}")
            ax.fill_between(g.depth, g["low"], g["high"], color=palette[k], alpha=0.2)
        ax.set_title(model, fontsize=10)
        ax.set_xlabel("relative depth")
    axes[0, 0].set_ylabel(LABELS.get(metric, metric))
    axes[0, -1].legend(fontsize=8)
    fig.tight_layout()
    return finish(fig)


def correlation_flips(corr: pd.DataFrame) -> Figure:
    """Fiedler correlations against threshold: across layers (solid) and median across sentences (dashed)."""
    _style()
    models = list(dict.fromkeys(corr.model))
    fig, axes = plt.subplots(1, len(models), figsize=(4.3 * len(models), 3.4), squeeze=False, sharey=True)
    metrics = list(dict.fromkeys(corr.metric))
    palette = dict(zip(metrics, sns.color_palette("colorblind", len(metrics)), strict=True))
    for ax, model in zip(axes[0], models, strict=True):
        for m in metrics:
            g = corr[(corr.model == model) & (corr.metric == m)].sort_values("threshold")
            ax.plot(g.threshold, g["r across layers"], color=palette[m], marker="o", ms=3,
                    label=f"{m} (across layers)")
            ax.fill_between(g.threshold, g["low"], g["high"], color=palette[m], alpha=0.15)
            ax.plot(g.threshold, g["median r across sentences"], color=palette[m], ls="--", lw=1)
        ax.axhline(0, color="black", lw=0.7)
        ax.set_xscale("log")
        ax.set_ylim(-1.05, 1.05)
        ax.set_title(model, fontsize=10)
        ax.set_xlabel("threshold t")
    axes[0, 0].set_ylabel("Pearson r with lambda2")
    fig.tight_layout()
    # the lines and bands fill the panels: one legend for all of them, under the panels and outside every axes
    handles, names = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, names, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=min(3, max(1, len(names))),
               fontsize=8, frameon=False)
    return finish(fig)


def faithful_vs_corrected(tab: sp.SpectralTables, threshold: float = 0.01) -> Figure:
    """Per-layer algebraic connectivity: the official computation (gated layer means, mean-symmetrized
    graph) beside the corrected one (all sentences, max-symmetrized), at one threshold."""
    _style()
    fig, axes = plt.subplots(1, len(tab.models), figsize=(4.3 * len(tab.models), 3.3), squeeze=False)
    for ax, ms, f in zip(axes[0], tab.models, tab.per_model("faithful"), strict=True):
        lay = f["layers"]
        L = ms.n_layers
        depth = np.arange(L) / max(1, L - 1)
        g = lay[lay.threshold == threshold].sort_values("layer")
        ax.plot(depth, g["fiedler"], marker="s", ms=3, label="faithful (laplacian.ipynb)")
        ax.plot(depth, np.nanmean(sp.at(ms, graph_key("corrected", "lambda2"), [threshold]), 0)[0], marker="o", ms=3,
                label="corrected")
        ax.set_title(f"{ms.ref}, t = {threshold:g}", fontsize=10)
        ax.set_xlabel("relative depth")
    axes[0, 0].set_ylabel("algebraic connectivity")
    axes[0, 0].legend(fontsize=8)
    fig.tight_layout()
    return finish(fig)


def head_heatmaps(models: Sequence[ModelResult], metric: str) -> Figure:
    """Layer x head heatmap of one corrected per-head metric (at the analysis' head threshold), one panel per model."""
    _style()
    fig, axes = plt.subplots(1, len(models), figsize=(3.6 * len(models), 3.8), squeeze=False, layout="constrained")
    for ax, ms in zip(axes[0], models, strict=True):
        heatmap(ax, sp.head_table(ms, metric), vmin=0, vmax=1, cmap="viridis", cbar=ax is axes[0][-1])
        ax.set_title(ms.ref, fontsize=10)
        ax.set_xlabel("head")
        ax.set_ylabel("layer")
    t = models[0].params.get("head_threshold", 0.05)
    fig.suptitle(f"{LABELS.get(metric, metric)} per head, t = {t:g}", fontsize=11)
    return finish(fig)


def effectiveness(table: pd.DataFrame) -> Figure:
    """The official threshold-effectiveness score (share of layers with mean density in [0.05, 0.95])."""
    _style()
    fig, ax = plt.subplots(figsize=(7, 3.2))
    sns.barplot(data=table.assign(threshold=table.threshold.map(lambda t: f"{t:g}")), x="threshold",
                y="effectiveness score", hue="model", ax=ax,
                palette={m: model_colour(str(m)) for m in table["model"].unique()})
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return finish(fig)
