"""Figures of Appendix B: RMT statistics by layer (trained beside random-initialized) and over training."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from ..analyses.rmt import SINK_SHARE_THRESHOLD, Series, series_table
from ..metrics import rmt
from ..results import ModelResult
from .style import _style, finish, model_colour

PANELS = (("first_token_share", "first-token share"), ("rms_deviation", "RMS deviation from uniform attention"),
          ("n_outliers", "eigenvalues above the noise edge"), ("ks_distance", "KS distance to same-mask noise"))


def layer_profiles(trained: Sequence[ModelResult], random: Sequence[ModelResult | None],
                   labels: Sequence[str]) -> Figure:
    """Per layer (relative depth), each corrected statistic of each trained model (solid, 95 % CI) and of
    its random-initialized twin (dashed)."""
    _style()
    fig, axes = plt.subplots(1, len(PANELS), figsize=(4.2 * len(PANELS), 3.4), squeeze=False)
    for ax, (col, title) in zip(axes[0], PANELS, strict=True):
        for ms, twin, label in zip(trained, random, labels, strict=True):
            for res, style, name in ((ms, "-", label), (twin, "--", f"{label}, random init")):
                if res is None:
                    continue
                d = res.layers
                depth = d["layer"] / max(1, res.n_layers - 1)
                ax.plot(depth, d[col], style, marker="o", ms=2.5, color=model_colour(label), label=name)
                if style == "-":
                    ax.fill_between(depth, d[f"{col}_lo"], d[f"{col}_hi"], alpha=0.2, color=model_colour(label))
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("relative depth (layer / last layer)")
    fig.tight_layout()
    # the lines fill the panels: the legend goes under them, outside every axes
    handles, names = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, names, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=min(4, max(1, len(names))),
               fontsize=8, frameon=False)
    return finish(fig)


def example_spectrum(a: np.ndarray, title: str, causal: bool) -> Figure:
    """One head's deviation spectrum (eigenvalues of ``X X^T / n``, ``X`` its attention against uniform attention
    on the same mask) by rank, log scale, against the quantiles of same-mask noise at the same scale,
    with the noise edge and the outlier cut: points above the cut are the outliers."""
    _style()
    eig = rmt.deviation_spectra(a, causal)
    m = rmt.corrected_metrics(a, causal)
    n = eig.size
    rank = np.arange(1, n + 1)
    fig, ax = plt.subplots(figsize=(6.0, 3.4))
    if not eig[0] > 0 or m["rms_deviation"] == 0:
        ax.text(0.5, 0.5, "uniform attention: no deviation", ha="center", va="center", transform=ax.transAxes)
    else:
        floor = 1e-9 * eig[0]
        scale = eig.mean()
        null = rmt.noise_null(n, causal)
        expected = np.quantile(null.pooled, (n - rank + 0.5) / n) * scale  # [n], the noise's quantile at each rank
        ax.plot(rank, np.maximum(eig, floor), "o", ms=3, label="eigenvalues")
        ax.plot(rank, np.maximum(expected, floor), color="black", label="same-mask noise, same scale")
        ax.axhline(null.edge * scale, color="grey", ls=":", label="noise edge")
        ax.axhline(null.cut * scale, color="grey", ls="--", label="outlier cut")
        ax.set_yscale("log")
        ax.legend(fontsize=8)
    ax.set_xlabel("rank")
    ax.set_ylabel("eigenvalue of X X^T / n")
    ax.set_title(f"{title}: {int(m['n_outliers'])} above the cut, KS {m['ks_distance']:.2f}", fontsize=10)
    fig.tight_layout()
    return finish(fig)


def emergence_curves(series: Series, label: str, heldout: pd.DataFrame | None = None) -> Figure:
    """Over training steps: each layer's first-token share with the threshold fixed in advance, the
    loss, and the corrected spectral statistics averaged over layers and heads."""
    _style()
    table = series_table(series, "corrected")
    order = np.argsort([c.step for c in series.checkpoints])
    steps = np.array([series.checkpoints[i].step for i in order])
    x = np.where(steps == 0, 0.5, steps)  # step 0 drawn at 0.5 on the log axis
    fig, axes = plt.subplots(1, 3, figsize=(14.5, 3.6))
    shares = np.array([np.nanmean(series.results[i].samples["first_token_share"], axis=(0, 2)) for i in order])
    cmap = plt.get_cmap("viridis")
    for layer in range(shares.shape[1]):
        axes[0].plot(x, shares[:, layer], marker="o", ms=2.5, color=cmap(layer / max(1, shares.shape[1] - 1)),
                     label=f"layer {layer}")
    axes[0].axhline(SINK_SHARE_THRESHOLD, color="black", ls=":", label="threshold (fixed in advance)")
    axes[0].set_title(f"{label}: first-token share by layer", fontsize=10)
    axes[0].set_ylabel("mean weight on position 0")
    # one line per layer fills the panel: the legend goes under it, outside the axes (tight_layout makes room)
    axes[0].legend(fontsize=8, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.25), frameon=False)
    axes[1].plot(x, table["loss"], marker="o", ms=3, label="loss on the page's sentences")
    if heldout is not None:
        axes[1].plot(np.where(heldout["step"] == 0, 0.5, heldout["step"]), heldout["loss"], marker="s", ms=3,
                     label="held-out training text (training log)")
    axes[1].set_ylabel("cross-entropy (nats per token)")
    axes[1].set_title("loss", fontsize=10)
    axes[1].legend(fontsize=8)
    for col, name in (("participation_ratio", "participation ratio"), ("stable_rank", "stable rank"),
                      ("n_outliers", "outliers above the noise cut")):
        axes[2].plot(x, table[col], marker="o", ms=3, label=name)
    axes[2].set_title("corrected deviation-spectrum statistics (mean over layers and heads)", fontsize=10)
    axes[2].legend(fontsize=8)
    for ax in axes:
        ax.set_xscale("log")
        ax.set_xlabel("training step (step 0 at 0.5)")
    fig.tight_layout()
    return finish(fig)
