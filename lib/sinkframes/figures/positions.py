"""Figures of the position-intervention chapter: shares under each intervention, where the sink goes, the
function check, and the first token's residual norm beside its share."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from .. import stats
from .heatmap import heatmap
from .style import _style, finish, model_colour

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..results import ModelResult

WHERE_COLOURS = {"physical 0": "#1b7837", "position id 0": "#762a83", "original first": "#5aae61",
                 "elsewhere": "#f1a340", "tied": "#8c96c6", "none": "#bdbdbd"}


def first_share_heatmaps(results: Sequence[ModelResult]) -> Figure:
    """The first-token share (mean over sentences, heads and layers) per intervention (rows) and model (columns),
    written in each cell; rotary models in one panel, models with learned absolute positions in the other (their
    grids differ). A dagger marks an intervention that broke the model (its function check failed)."""
    _style()
    groups = [[r for r in results if str(r.record["position_encoding"]).startswith("RoPE")],
              [r for r in results if not str(r.record["position_encoding"]).startswith("RoPE")]]
    groups = [g for g in groups if g]
    rows = [len(dict.fromkeys(n for r in g for n in r.data["runs"])) for g in groups]
    fig, axes = plt.subplots(1, len(groups), figsize=(5.6 * len(groups), 0.34 * max(rows) + 1.6), squeeze=False,
                             layout="constrained")
    for ax, g, title in zip(axes[0], groups, ("rotary positions", "learned absolute positions"), strict=False):
        names = list(dict.fromkeys(n for r in g for n in r.data["runs"]))
        table = pd.DataFrame({r.ref: {n: float(np.nanmean(run["arrays"]["first_share"]))
                                      for n, run in r.data["runs"].items()} for r in g}).reindex(names)
        heatmap(ax, table, vmin=0, vmax=1, cmap="viridis", xticklabels=True, yticklabels=True, cbar=False)
        for i, n in enumerate(names):
            for j, r in enumerate(g):
                v = float(table.to_numpy(dtype=float)[i, j])
                if not np.isfinite(v):
                    continue
                broken = r.data["runs"][n]["check"]["broken"]
                ax.text(j + 0.5, i + 0.5, f"{v:.2f}" + (" \u2020" if broken else ""), ha="center", va="center",
                        fontsize=8, color="white" if v < 0.55 else "black")
        ax.set_title(title, fontsize=10)
    fig.suptitle("First-token share under each intervention (\u2020: the function check failed)", fontsize=11)
    return finish(fig)


#: the interventions that ask where the sink sits (the others change its strength, not its place)
PLACEMENT = ("unmodified", "offset 4096", "ids permuted", "shift 64", "partial 0", "table zeroed", "no positions",
             "first token -> '.'", "first token -> 'house'", "first token doubled", "random prefix 4", "causal mask")


def where_the_sink_goes(results: Sequence[ModelResult]) -> Figure:
    """Per model, for the interventions that move positions or tokens (:data:`PLACEMENT`), the share of sink
    layers whose sink is on physical position 0, on the token carrying position id 0, on the original first
    token, elsewhere, or gone (stacked bars); decoders in the left column, encoders in the right."""
    _style()
    shown = [r for r in results if r.data["sink_layers"]]
    columns = [[r for r in shown if r.causal], [r for r in shown if not r.causal]]
    columns = [c for c in columns if c]
    nrows = max((len(c) for c in columns), default=1)
    rows_per = max((sum(n in r.data["runs"] for n in PLACEMENT) for r in shown), default=1)
    fig, axes = plt.subplots(nrows, max(1, len(columns)), figsize=(10, (0.34 * rows_per + 1.0) * nrows),
                             squeeze=False, layout="constrained")
    for c, col in enumerate(columns):
        for i in range(nrows):
            ax = axes[i, c]
            if i >= len(col):
                ax.set_visible(False)
                continue
            r = col[i]
            runs = r.data["runs"]
            names = [n for n in PLACEMENT if n in runs]
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
        handles, labels = axes[0, 0].get_legend_handles_labels()
        fig.legend(handles, labels, ncol=5, fontsize=8, loc="outside upper center")
        fig.supxlabel("share of (sentence, sink layer) pairs", fontsize=10)
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
