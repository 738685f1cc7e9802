"""Figures of the topology chapter, from computed results only (nothing here loads a model)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from ..analyses import topology as atopo
from ..metrics import topology as topo
from .heatmap import heatmap
from .style import COLUMN_IN, _style, finish, model_colour

if TYPE_CHECKING:
    from ..results import ModelResult


def betti_curves(results: Sequence[ModelResult]) -> Figure:
    """Mean corrected Betti curves against the attention threshold, one line per layer (colour = depth): one row
    per model, β0 on the left and β1 on the right."""
    _style()
    fig, axes = plt.subplots(len(results), 2, figsize=(COLUMN_IN, 2.6 * len(results) + 0.5), squeeze=False,
                             layout="constrained")
    cmap = plt.get_cmap("viridis")
    for c, mt in enumerate(results):
        b0, b1 = atopo.mean_curves(mt)  # [layer, threshold] each
        thresholds = mt.data["thresholds"]  # [threshold]
        L = mt.n_layers
        for layer in range(L):
            col = cmap(layer / max(1, L - 1))
            axes[c, 0].plot(thresholds, b0[layer], color=col, lw=1)
            axes[c, 1].plot(thresholds, b1[layer], color=col, lw=1)
        for r, lab in enumerate(("β0 (components)", "β1 (loops)")):
            ax = axes[c, r]
            ax.set_xscale("log")
            for t in topo.PAPER_THRESHOLDS:
                ax.axvline(t, color="grey", lw=0.4, ls=":")
            ax.set_ylabel(lab)
            ax.set_xlim(topo.CURVE_THRESHOLDS.min(), 1.0)
            ax.set_xlabel("threshold t (edge if attention ≥ t)" if c == len(results) - 1 else "")
        axes[c, 0].set_title(f"{mt.ref} ({L} layers)", fontsize=10, loc="left")
        sm = plt.cm.ScalarMappable(cmap=cmap, norm=plt.Normalize(0, L - 1))
        fig.colorbar(sm, ax=axes[c, :], shrink=0.8, label="layer", pad=0.01)
    return finish(fig)


def _diagram(ax: Any, h0: np.ndarray, h1: np.ndarray, title: str) -> None:
    pts = [p for p in (h0, h1) if len(p)]
    finite = np.concatenate([p[np.isfinite(p)] for p in pts]) if pts else np.array([0.0, 1.0])
    lo, hi = min(0.0, float(finite.min())), max(1.0, float(finite.max()))
    top = hi + 0.08 * (hi - lo)
    for dgm, lab, mk in ((h0, "H0", "o"), (h1, "H1", "^")):
        if len(dgm):
            d = np.where(np.isfinite(dgm[:, 1]), dgm[:, 1], top)
            ax.scatter(dgm[:, 0], d, s=14, marker=mk, label=f"{lab} ({len(dgm)})", alpha=0.7)
    ax.plot([lo, top], [lo, top], color="grey", lw=0.6)
    ax.axhline(top, color="grey", lw=0.5, ls="--")
    ax.set_xlim(lo - 0.02, top + 0.02)
    ax.set_ylim(lo - 0.02, top + 0.06)
    ax.set_title(title, fontsize=8)
    ax.tick_params(labelsize=7)
    ax.legend(fontsize=6, loc="lower right")


def persistence_diagrams(example: dict[str, Any]) -> Figure:
    """Faithful (top) and corrected (bottom) diagrams of one sentence at the official layers.

    Points on the dashed line never die (infinite bars)."""
    _style()
    layers = example["layers"]
    fig, axes = plt.subplots(2, len(layers), figsize=(2.5 * len(layers), 5.2), squeeze=False)
    for c, layer in enumerate(layers):
        for row, mode in enumerate(("faithful", "corrected")):
            h0, h1 = example[mode][layer]  # [bar, 2] each
            _diagram(axes[row, c], h0, h1, f"{mode}, layer {layer}")
    for r in range(2):
        axes[r, 0].set_ylabel("death")
    for ax in axes[1]:
        ax.set_xlabel("birth")
    fig.suptitle(f"{example['ref']}: {len(example['tokens'])} tokens", fontsize=10)
    fig.tight_layout()
    return finish(fig)


def faithful_vs_corrected(results: Sequence[ModelResult], t: float = 0.05) -> Figure:
    """Per layer: faithful Betti0/Betti1 (diagram-point counts) beside corrected β0/β1 at threshold ``t``."""
    _style()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for mt in results:
        depth = np.arange(mt.n_layers) / max(1, mt.n_layers - 1)
        k = atopo.threshold_index(mt, t)
        for ax, name in ((axes[0], "betti0"), (axes[1], "betti1")):
            curve = mt.samples[name]  # [sample, layer, threshold]
            faithful = atopo.faithful_field(mt, name).mean(0)  # [layer]
            line = ax.plot(depth, faithful, marker="o", ms=3, label=f"{mt.ref} faithful", color=model_colour(mt.ref))[0]
            ax.plot(depth, curve[:, :, k].mean(0), ls="--", marker="s", ms=3, color=line.get_color(),
                    label=f"{mt.ref} corrected (t={t:g})")
    axes[0].set_title("Betti0: faithful point count vs corrected β0", fontsize=10)
    axes[1].set_title("Betti1: faithful point count vs corrected β1", fontsize=10)
    for ax in axes:
        ax.set_xlabel("relative depth (layer / last layer)")
    axes[1].legend(fontsize=7)
    fig.tight_layout()
    return finish(fig)


def specialization_heatmaps(tables: Sequence[pd.DataFrame]) -> Figure:
    """Layer x head consistency by position (corrected, left) and by string (faithful, right), one row per model."""
    _style()
    fig, axes = plt.subplots(len(tables), 2, figsize=(COLUMN_IN, 3.0 * len(tables) + 0.4), squeeze=False,
                             layout="constrained")
    for c, t in enumerate(tables):
        for r, (col, lab) in enumerate((("position consistency", "by position (corrected)"),
                                        ("faithful consistency", "by string (faithful)"))):
            grid = t.pivot(index="layer", columns="head", values=col)
            heatmap(axes[c, r], grid, vmin=0, vmax=1, cmap="viridis", cbar=r == 1)
            axes[c, r].set_title(f"{t['model'].iloc[0]}: {lab}", fontsize=9)
    return finish(fig)
