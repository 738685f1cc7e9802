"""Figures of the position-intervention chapter: shares under each intervention, where the sink goes, the
function check, and the first token's residual norm beside its share."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import matplotlib.pyplot as plt
import numpy as np

from .. import stats
from .heatmap import heatmap
from .style import _style, finish, model_colour

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..analyses.base import ModelResult

WHERE_COLOURS = {"physical 0": "#1b7837", "position id 0": "#762a83", "original first": "#5aae61",
                 "elsewhere": "#f1a340", "none": "#bdbdbd"}


def first_share_heatmaps(results: Sequence[ModelResult], ncols: int = 2) -> Figure:
    """Per model, the first-token share (sentence and head mean) per intervention (rows) and layer (columns);
    rows of interventions that broke the model are marked with a dagger."""
    from ..analyses.positions import first_share_grid

    _style()
    nrows = -(-len(results) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(6.2 * ncols, 4.6 * nrows), squeeze=False, layout="constrained")
    for ax, r in zip(axes.flat, results, strict=False):
        grid = first_share_grid(r)
        grid.index = [f"{n} \u2020" if r.data["runs"][n]["check"]["broken"] else n for n in grid.index]
        heatmap(ax, grid, vmin=0, vmax=1, cmap="viridis", xticklabels="auto", yticklabels=True)
        ax.set_title(r.ref, fontsize=10)
        ax.set_xlabel("layer")
    for ax in list(axes.flat)[len(results):]:
        ax.set_visible(False)
    fig.suptitle("First-token share per layer under each intervention (\u2020: the function check failed)",
                 fontsize=11)
    return finish(fig)


def where_the_sink_goes(results: Sequence[ModelResult]) -> Figure:
    """Per model, for each intervention, the share of sink layers whose sink is on physical position 0, on the
    token carrying position id 0, on the original first token, elsewhere, or gone (stacked bars)."""
    _style()
    shown = [r for r in results if r.data["sink_layers"]]
    fig, axes = plt.subplots(len(shown) or 1, 1, figsize=(11, 2.9 * max(1, len(shown))), squeeze=False,
                             layout="constrained")
    for ax, r in zip(axes[:, 0], shown, strict=False):
        runs = r.data["runs"]
        names = list(runs)
        left = np.zeros(len(names))
        for where, colour in WHERE_COLOURS.items():
            vals = np.nan_to_num(np.array([runs[n]["where"][where] for n in names], dtype=float))
            ax.barh(names, vals, left=left, color=colour, label=where)
            left += vals
        ax.invert_yaxis()
        ax.set_xlim(0, 1)
        ax.set_title(f"{r.ref}: {len(r.data['sink_layers'])} sink layers", fontsize=10)
        ax.tick_params(axis="y", labelsize=8)
    if not shown:
        axes[0, 0].text(0.5, 0.5, "no model has a layer whose sink sits on position 0", ha="center")
        axes[0, 0].set_axis_off()
    else:
        axes[0, 0].legend(ncol=5, fontsize=8, loc="lower center", bbox_to_anchor=(0.5, 1.12))
        axes[-1, 0].set_xlabel("share of (sentence, sink layer) pairs")
    return finish(fig)


def function_checks(results: Sequence[ModelResult]) -> Figure:
    """The function check of every intervention, decoders (loss change) and encoders (embedding cosine) apart,
    with its 95 % interval and the line past which the model counts as broken."""
    from ..analyses.positions import MAX_LOSS_RISE, MIN_EMBEDDING_COSINE

    _style()
    kinds = [("decoders", [r for r in results if r.causal]), ("encoders", [r for r in results if not r.causal])]
    kinds = [(k, rs) for k, rs in kinds if rs]
    fig, axes = plt.subplots(1, len(kinds), figsize=(6.2 * len(kinds), 6.4), squeeze=False, layout="constrained")
    for ax, (kind, rs) in zip(axes[0], kinds, strict=True):
        names = list(dict.fromkeys(n for r in rs for n in r.data["runs"]))
        y = np.arange(len(names))
        for j, r in enumerate(rs):
            off = (j - (len(rs) - 1) / 2) * 0.8 / max(1, len(rs))
            for i, n in enumerate(names):
                if n not in r.data["runs"]:
                    continue
                c = r.data["runs"][n]["check"]
                ax.errorbar(c["value"], i + off, xerr=[[c["value"] - c["low"]], [c["high"] - c["value"]]], fmt="o",
                            ms=3, color=model_colour(r.ref), label=r.ref if i == 0 else None)
        line = MAX_LOSS_RISE if kind == "decoders" else MIN_EMBEDDING_COSINE
        ax.axvline(line, color="#b2182b", ls="--", lw=1)
        ax.set_yticks(y, names, fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel("next-token loss change (nats)" if kind == "decoders" else "cosine to the unmodified embedding")
        if kind == "decoders":
            ax.set_xscale("symlog", linthresh=0.1)
        ax.set_title(kind, fontsize=10)
        ax.legend(fontsize=8, loc="lower right")
    return finish(fig)


def norm_and_share(results: Sequence[ModelResult]) -> Figure:
    """Per model (unmodified pass), the first-token share per layer beside the first token's residual norm
    over the other tokens' median entering that layer (log scale)."""
    _style()
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), layout="constrained")
    for r in results:
        a = r.data["runs"]["unmodified"]["arrays"]
        n = a["first_share"].shape[1]
        depth = np.arange(n) / max(1, n - 1)
        axes[0].plot(depth, stats.nanmean(a["first_share"], axis=0), color=model_colour(r.ref), label=r.ref)
        axes[1].plot(depth, stats.nanmean(a["residual_ratio"][:, :n], axis=0), color=model_colour(r.ref))
    axes[0].set_ylabel("first-token share")
    axes[1].set_ylabel("|h first| / median |h other|")
    axes[1].set_yscale("log")
    for ax in axes:
        ax.set_xlabel("relative depth (0 = first layer)")
    axes[0].legend(fontsize=8)
    return finish(fig)
