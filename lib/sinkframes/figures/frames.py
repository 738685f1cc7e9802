"""Figures of chapter 1 (reference frames): attention maps, layer profiles, reference counts, heads."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from .heatmap import heatmap
from .style import COLUMN_IN, _short, _style, finish, model_colour

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..extraction import Extraction
    from ..results import ModelResult


def attention_maps(examples: Sequence[Extraction], sample: int = 0,
                   layers: Sequence[float] = (0.0, 0.5, 1.0)) -> Figure:
    """Head-averaged attention of one sentence per model at a few relative depths.

    ``examples``: one extraction per model; ``layers``: depths in [0, 1] (0 = first layer).
    """
    _style()
    fig, axes = plt.subplots(len(examples), len(layers), figsize=(COLUMN_IN, 2.55 * len(examples)),
                             squeeze=False, layout="constrained")
    for r, ex in enumerate(examples):
        if ex.attentions is None:
            raise ValueError(f"{ex.record['ref']}: attention_maps needs full attention (extract_attention)")
        att = ex.attentions[sample]  # [layer, head, query, key]
        n_layers = att.shape[0]
        toks = _sparse_labels([_short(t) for t in ex.tokens[sample]])
        for c, depth in enumerate(layers):
            layer = int(round(depth * (n_layers - 1)))
            ax = axes[r, c]
            heatmap(ax, att[layer].mean(0).numpy(), cmap="magma", vmin=0, vmax=1, square=True,
                        cbar=c == len(layers) - 1, xticklabels=toks, yticklabels=toks)
            ax.tick_params(labelsize=9, length=2, pad=1)
            ax.set_title(f"{ex.record['ref']}: layer {layer}", fontsize=10)
            if c == 0:
                ax.set_ylabel("query")
            ax.set_xlabel("key")
    return finish(fig)


#: at most this many token labels per axis of an attention map (9-point labels on a panel about 2 in high)
MAX_TOKEN_LABELS = 8


def _sparse_labels(tokens: Sequence[str], most: int = MAX_TOKEN_LABELS) -> list[str]:
    """Every ``k``-th token's label (the first always: it is where a sink sits), the others blank, so that
    labels never overlap; ``k`` is the smallest step that keeps at most ``most`` labels."""
    step = max(1, -(-len(tokens) // most))
    return [t if i % step == 0 else "" for i, t in enumerate(tokens)]


#: the line styles of one model shown under several conditions, in order (the first condition solid)
LINE_STYLES = ("-", "--", ":", "-.")
#: the bars of two rules (not models) side by side
RULE_GREYS = ("#404040", "#a6a6a6")


def layer_profiles(frames: Sequence[ModelResult], labels: Sequence[str] | None = None) -> Figure:
    """Per-layer sink measures against relative depth, one line per model (band: 95 % bootstrap CI)."""
    _style()
    panels = [
        ("first_token_share", "share of attention on position 0"),
        ("last_token_share", "share of attention on the last token"),
        ("first_token_concentration", "queries whose strongest key is position 0"),
        ("reference_count", "reference tokens per head"),
    ]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.3 * len(panels), 3.6))
    seen: dict[str, int] = {}
    for k, f in enumerate(frames):
        d = f.layers
        # one colour per model, as on every page; a model shown again (another condition, ``labels``) keeps its
        # colour and takes the next line style
        style = LINE_STYLES[seen.get(f.ref, 0) % len(LINE_STYLES)]
        seen[f.ref] = seen.get(f.ref, 0) + 1
        for ax, (col, _title) in zip(axes, panels, strict=True):
            line = ax.plot(d["depth"], d[col], marker="o", ms=3, label=labels[k] if labels else f.ref,
                           color=model_colour(f.ref), ls=style)[0]
            if col == "first_token_share":
                ax.fill_between(d["depth"], d["first_token_share_low"], d["first_token_share_high"], alpha=0.2,
                                color=line.get_color())
    for ax, (_, title) in zip(axes, panels, strict=True):
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("relative depth (layer / last layer)")
    for ax in axes[:3]:
        ax.set_ylim(-0.02, 1.02)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    return finish(fig)


def reference_counts(frames: Sequence[ModelResult]) -> Figure:
    """Mean number of reference tokens per model: this book's rule per head, and the official rule."""
    _style()
    rows = []
    for f in frames:
        ev = f.data["evidence"]
        rows.append({"model": f.ref, "rule": "per head (this book)", "count": ev["reference_count"]})
        rows.append({"model": f.ref, "rule": "head average, column mean > 0.1 (official)",
                     "count": ev["faithful_reference_count"]})
    fig, ax = plt.subplots(figsize=(7, 3.4))
    # the two rules in greys: the palette's colours stand for models on every page
    sns.barplot(data=pd.DataFrame(rows), x="model", y="count", hue="rule", ax=ax, palette=RULE_GREYS)
    ax.axhline(1.0, color="grey", lw=0.8, ls="--")
    ax.set_ylabel("reference tokens (mean over layers)")
    # the bars fill the panel: the legend goes above it, outside the axes
    ax.legend(fontsize=8, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2, frameon=False)
    fig.tight_layout()
    return finish(fig)


def heads_heatmap(frames: Sequence[ModelResult], measure: str, title: str) -> Figure:
    """Layer x head heatmap of one per-head measure (mean over sentences), one panel per model."""
    _style()
    fig, axes = plt.subplots(1, len(frames), figsize=(3.6 * len(frames), 3.8), squeeze=False, layout="constrained")
    for ax, f in zip(axes[0], frames, strict=True):
        heatmap(ax, f.heads[measure], vmin=0, vmax=1, cmap="viridis", cbar=ax is axes[0][-1])
        ax.set_title(f.ref, fontsize=10)
        ax.set_xlabel("head")
        ax.set_ylabel("layer")
    fig.suptitle(title, fontsize=11)
    return finish(fig)


#: one colour per frame of the instrument, in :data:`sinkframes.metrics.frames.FRAMES` order
FRAME_COLOURS = ("#e5e5e5", "#0072b2", "#e69f00", "#009e73")


def layer_frames(frames: Sequence[ModelResult]) -> Figure:
    """Each model's frame layer by layer (the frame most sentences read), one row per model, layers left to right
    at their relative depth; the label at the right is the model-level frame and how stable it is."""
    from matplotlib.patches import Patch

    from ..metrics.frames import FRAMES

    _style()
    fig, ax = plt.subplots(figsize=(COLUMN_IN, 0.42 * len(frames) + 1.3), layout="constrained")
    for row, f in enumerate(frames):
        prof = f.data["profile"]
        kinds = prof["layer_frames"]
        n = len(kinds)
        for layer, kind in enumerate(kinds):
            ax.barh(row, 1 / n, left=layer / n, height=0.8, color=FRAME_COLOURS[FRAMES.index(kind)],
                    edgecolor="white", linewidth=0.5)
        ax.text(1.02, row, f"{prof['label']} ({prof['stability']:.0%})", va="center", fontsize=9)
    ax.set_yticks(range(len(frames)), [f.ref for f in frames])
    ax.set_ylim(len(frames) - 0.5, -0.5)
    ax.set_xlim(0, 1)
    ax.set_xlabel("layers, first to last (relative depth)")
    ax.grid(False)
    ax.legend(handles=[Patch(color=c, label=k) for k, c in zip(FRAMES, FRAME_COLOURS, strict=True)],
              loc="upper center", bbox_to_anchor=(0.5, -0.35 if len(frames) < 4 else -0.12), ncol=4, frameon=False)
    return finish(fig)


def instrument_recovery(recovery: pd.DataFrame) -> Figure:
    """The share of draws in which the instrument reads each planted frame, against the planted strength."""
    _style()
    fig, ax = plt.subplots(figsize=(COLUMN_IN * 0.75, 3.0), layout="constrained")
    for kind, row in recovery.iterrows():
        values = row.dropna()
        if len(values) > 1:
            ax.plot(values.index, values.to_numpy(), marker="o", ms=4, label=str(kind))
    ax.axhline(0.95, color="grey", ls="--", lw=1)
    ax.set_xlabel("planted strength (share of each row a sink takes)")
    ax.set_ylabel("read as planted")
    ax.set_ylim(-0.02, 1.02)
    ax.legend(fontsize=9, loc="lower right")
    return finish(fig)
