"""Figures of the sink-geometry and value-space chapter. Nothing here loads a model."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from ..types import MODES
from .heatmap import heatmap
from .style import COLUMN_IN, _style, finish, model_colour

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..results import ModelResult


def key_geometry(results: Sequence[ModelResult]) -> Figure:
    """Per layer: sink-key norm ratio, query cosines to the sink and to other keys, the logit split."""
    _style()
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.7))
    for r in results:
        d = r.layers
        c = axes[0].plot(d["depth"], d["key_norm_ratio"], marker="o", ms=3, label=r.ref,
                         color=model_colour(r.ref))[0].get_color()
        axes[1].plot(d["depth"], d["cos_to_sink_post"], marker="o", ms=3, color=c, label=f"{r.ref}: key 0")
        axes[1].plot(d["depth"], d["cos_to_others_post"], ls="--", color=c, label=f"{r.ref}: other keys")
        axes[2].plot(d["depth"], d["alignment_part"], marker="o", ms=3, color=c, label=f"{r.ref}: alignment part")
        axes[2].plot(d["depth"], d["norm_part"], ls="--", color=c, label=f"{r.ref}: norm part")
    axes[0].axhline(1, color="grey", lw=0.8, ls=":")
    axes[0].set_title("|key 0| / mean |other key|", fontsize=10)
    axes[1].set_title("mean cos(query, key): key 0 vs others", fontsize=10)
    axes[2].set_title("sink logit advantage: alignment vs norm part", fontsize=10)
    axes[2].axhline(0, color="grey", lw=0.8, ls=":")
    for ax in axes:
        ax.set_xlabel("relative depth (layer / last layer)")
        ax.legend(fontsize=7)
    fig.tight_layout()
    return finish(fig)


def rope_effect(results: Sequence[ModelResult]) -> Figure:
    """Query-key cosine before and after the rotary embedding, per layer, one panel per model."""
    _style()
    fig, axes = plt.subplots(1, len(results), figsize=(4.4 * len(results), 3.6), squeeze=False)
    for ax, r in zip(axes[0], results, strict=True):
        d = r.layers
        ax.plot(d["layer"], d["cos_to_sink_pre"], color="C0", ls="--", label="key 0, before RoPE")
        ax.plot(d["layer"], d["cos_to_sink_post"], color="C0", marker="o", ms=3, label="key 0, after RoPE")
        ax.plot(d["layer"], d["cos_to_others_pre"], color="C1", ls="--", label="other keys, before")
        ax.plot(d["layer"], d["cos_to_others_post"], color="C1", marker="o", ms=3, label="other keys, after")
        ax.set_title(f"{r.ref} ({r.record['position_encoding'].split(',')[0]})", fontsize=10)
        ax.set_xlabel("layer")
    axes[0][0].set_ylabel("mean cosine")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    return finish(fig)


def per_head(results: Sequence[ModelResult], measure: str, title: str, center: float | None = None) -> Figure:
    """Layer x head heatmap of one geometry measure (mean over sentences), one panel per model."""
    _style()
    fig, axes = plt.subplots(1, len(results), figsize=(3.8 * len(results), 3.9), squeeze=False, layout="constrained")
    for ax, r in zip(axes[0], results, strict=True):
        data = r.heads[measure]  # [layer, head] (key norms: [layer, kv_head])
        step = max(1, data.shape[0] // 10)
        heatmap(ax, data, cmap="coolwarm" if center is not None else "viridis", center=center, yticklabels=step)
        ax.set_title(r.ref, fontsize=10)
        ax.set_xlabel("KV head" if measure == "key_norm_ratio" else "head")
        ax.set_ylabel("layer")
    fig.suptitle(title, fontsize=11)
    return finish(fig)


_VALUE_PANELS = [("entropy", "attention entropy (nats)"), ("magnitude", "transformation magnitude"),
                 ("alignment", "geometric-semantic alignment"), ("relative_magnitude", "reference part / output")]


def value_profiles(results: Sequence[ModelResult]) -> Figure:
    """Value-space measures by depth: one row per measure, faithful (left) and corrected (right); the legend of the
    models above the panels."""
    _style()
    fig, axes = plt.subplots(len(_VALUE_PANELS), 2, figsize=(COLUMN_IN, 2.4 * len(_VALUE_PANELS) + 0.8),
                             squeeze=False, layout="constrained")
    for col, mode in enumerate(MODES):
        for row, (name, title) in enumerate(_VALUE_PANELS):
            ax = axes[row][col]
            for r in results:
                ax.plot(r.layers["depth"], r.layers[f"{mode}_{name}"], marker="o", ms=3, label=r.ref,
                        color=model_colour(r.ref))
            ax.set_title(f"{title} ({mode})", fontsize=9)
            if name == "magnitude" and mode == "faithful":
                ax.set_yscale("log")
            ax.set_xlim(-0.05, 1.05)  # relative depth: the same axis for every model, one layer or many
            ax.set_xticks([0, 0.5, 1])
            if row == len(_VALUE_PANELS) - 1:
                ax.set_xlabel("relative depth")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside upper center", ncol=min(4, max(1, len(labels))), fontsize=8,
               frameon=False)
    return finish(fig)


def reference_counts(table: pd.DataFrame) -> Figure:
    """Mean reference tokens per model by both rules, against the paper's value for its frame."""
    _style()
    long = table.melt(id_vars=["model"], value_vars=["official rule (faithful)", "per-head rule (corrected)"],
                      var_name="rule", value_name="count")
    fig, ax = plt.subplots(figsize=(7, 3.4))
    sns.barplot(data=long, x="model", y="count", hue="rule", ax=ax)
    for k, v in enumerate(table["paper"]):
        if pd.notna(v):
            ax.plot([k - 0.4, k + 0.4], [v, v], color="black", lw=2, label="paper (family's frame)" if k == 0 else None)
    ax.set_ylabel("reference tokens (mean over layers)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return finish(fig)
