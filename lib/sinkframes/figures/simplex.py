"""Figures of the softmax-geometry page: the simplex of three keys, synthetic sweeps, real rows.

Nothing here loads a model; figures are drawn from computed tables and ``softmax_geometry`` results
(``ModelResult``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import matplotlib.pyplot as plt
import matplotlib.tri as mtri
import numpy as np
import pandas as pd

from ..metrics import simplex
from .style import COLUMN_IN, _style, finish, model_colour

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..results import ModelResult

_CORNERS = np.array([[0.0, 0.0], [1.0, 0.0], [0.5, math.sqrt(3) / 2]])  # [vertex, xy]


def _to_xy(p: np.ndarray) -> np.ndarray:
    """``[..., 3]`` barycentric -> ``[..., 2]`` plane coordinates of the triangle."""
    return p @ _CORNERS


def _grid(steps: int = 120) -> np.ndarray:
    """``[point, 3]``: interior barycentric grid of the simplex over three keys."""
    pts = [(i, j, steps - i - j) for i in range(steps + 1) for j in range(steps + 1 - i)]
    p = (np.array(pts, dtype=float) + 1e-3) / (steps + 3e-3)
    return p / p.sum(1, keepdims=True)


def _triangle(ax: plt.Axes, labels: Sequence[str] = ("key 0", "key 1", "key 2")) -> None:
    ax.plot(*np.vstack([_CORNERS, _CORNERS[:1]]).T, color="black", lw=1)
    for (x, y), lab, off in zip(_CORNERS, labels, [(-0.06, -0.05), (0.02, -0.05), (-0.05, 0.03)], strict=False):
        ax.text(x + off[0], y + off[1], lab, fontsize=9)
    ax.set_aspect("equal")
    ax.axis("off")


def simplex_panels(n_paths: int = 6, seed: int = 0) -> Figure:
    """The simplex of three keys: (left) Fisher-Rao distance to the barycentre with the paths of
    ``softmax(z * s)`` as the scale ``s`` grows, for seeded logit vectors ``z``; (middle) the same
    grid measured by the Euclidean distance, for contrast; (right) the Fisher-Rao speed of a row
    under unit logit noise, ``sqrt(1 - sum p^2)``."""
    _style()
    p = _grid()
    xy = _to_xy(p)
    tri = mtri.Triangulation(xy[:, 0], xy[:, 1])
    u = np.full(3, 1 / 3)
    fr = simplex.fisher_rao_distance(p, u)
    eu = np.linalg.norm(p - u, axis=1)
    speed = simplex.expected_noise_speed(p)
    fig, axes = plt.subplots(1, 3, figsize=(13.5, 4.4), layout="constrained")
    panels = [(fr, "Fisher-Rao distance to the barycentre", "viridis"),
              (eu, "Euclidean distance to the barycentre", "viridis"),
              (speed, "Fisher-Rao speed under unit logit noise", "magma")]
    for ax, (val, title, cmap) in zip(axes, panels, strict=True):
        cs = ax.tricontourf(tri, val, levels=14, cmap=cmap)
        ax.tricontour(tri, val, levels=14, colors="white", linewidths=0.3)
        fig.colorbar(cs, ax=ax, shrink=0.7)
        _triangle(ax)
        ax.set_title(title, fontsize=10)
    rng = np.random.default_rng(seed)
    scales = np.concatenate([[0.0], np.geomspace(0.05, 30, 60)])
    for _ in range(n_paths):
        z = rng.normal(size=3)
        path = _to_xy(np.asarray(simplex.temperature_path(z, scales)))  # [scale, 2]
        axes[0].plot(path[:, 0], path[:, 1], color="white", lw=1.2)
        axes[0].plot(path[-1, 0], path[-1, 1], "o", color="red", ms=4)
    axes[0].plot(*_to_xy(u), "o", color="white", ms=5)
    return finish(fig)


def sphere_panel(n_paths: int = 6, seed: int = 0) -> Figure:
    """The same paths on the sphere: ``2 sqrt(p)`` maps the simplex onto an eighth of the sphere of
    radius 2, where Fisher-Rao distances are arc lengths (vertices are a quarter circle apart)."""
    _style()
    fig = plt.figure(figsize=(5.2, 4.6))
    ax = fig.add_subplot(projection="3d")
    th, ph = np.meshgrid(np.linspace(0, math.pi / 2, 30), np.linspace(0, math.pi / 2, 30))
    ax.plot_surface(2 * np.sin(th) * np.cos(ph), 2 * np.sin(th) * np.sin(ph), 2 * np.cos(th), alpha=0.15, color="grey",
                    lw=0)
    rng = np.random.default_rng(seed)
    scales = np.concatenate([[0.0], np.geomspace(0.05, 30, 60)])
    for _ in range(n_paths):
        x = simplex.sphere_embedding(simplex.temperature_path(rng.normal(size=3), scales))  # [scale, 3]
        ax.plot(x[:, 0], x[:, 1], x[:, 2], lw=1.5)
    c = simplex.sphere_embedding(np.full(3, 1 / 3))
    ax.scatter(*c, color="black", s=15)
    ax.set_xlabel("2 sqrt(p0)")
    ax.set_ylabel("2 sqrt(p1)")
    ax.set_zlabel("2 sqrt(p2)")
    ax.set_title("paths of softmax(z s) on the sphere of radius 2", fontsize=10)
    fig.tight_layout()
    return finish(fig)


def sink_sweep(sweep: pd.DataFrame) -> Figure:
    """Four measures of a row against the sink's logit, one line per row length (content logits N(0, 1))."""
    _style()
    panels = [("sink_share", "sink share"), ("normalized_entropy", "entropy / log(keys)"),
              ("distance_to_vertex", "Fisher-Rao distance to nearest vertex"),
              ("noise_speed", "Fisher-Rao speed under unit logit noise")]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.5))
    for n, d in sweep.groupby("keys"):
        for ax, (col, _) in zip(axes, panels, strict=True):
            ax.plot(d["sink_logit"], d[col], label=f"{n} keys")
    for ax, (_, title) in zip(axes, panels, strict=True):
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("sink logit (content logits ~ N(0, 1))")
    axes[2].axhline(math.pi / 2, color="grey", lw=0.8, ls="--")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    return finish(fig)


def key_norm_sweep(table: pd.DataFrame) -> Figure:
    """Sink share across queries (mean, 5th percentile) and the query alignment it needs, against
    the sink's key norm."""
    _style()
    fig, axes = plt.subplots(1, 2, figsize=(9.5, 3.5))
    x = table["sink key norm"]
    axes[0].plot(x, table["sink share (mean)"], marker="o", label="mean over queries")
    axes[0].plot(x, table["sink share (5th percentile)"], marker="o", label="5th percentile")
    axes[0].plot(x, table["sink share (sd across queries)"], marker="o", label="standard deviation")
    axes[0].set_title("sink share at a fixed mean sink logit", fontsize=10)
    axes[0].legend(fontsize=8)
    axes[1].plot(x, table["query-sink cosine (mean)"], marker="o", color="C3")
    axes[1].set_title("query-sink cosine this requires", fontsize=10)
    for ax in axes:
        ax.set_xscale("log", base=2)
        ax.set_xlabel("sink key norm")
    fig.tight_layout()
    return finish(fig)


def entropy_vs_sink_share(results: Sequence[ModelResult]) -> Figure:
    """Normalized entropy against the share on position 0 (left) and on the strongest key (right), one row per
    model: small dots are heads, large ones layer means, coloured by relative depth."""
    _style()
    fig, axes = plt.subplots(len(results), 2, figsize=(COLUMN_IN, 2.9 * len(results) + 0.4), squeeze=False,
                             layout="constrained", sharey=True)
    for c, r in enumerate(results):
        L = r.heads["entropy"].shape[0]  # heads: [layer, head]
        depth = np.repeat(np.arange(L) / max(1, L - 1), r.heads["entropy"].shape[1])  # [layer * head]
        for row, x in enumerate(("first_share", "max_share")):
            ax = axes[c, row]
            ax.scatter(r.heads[x].ravel(), r.heads["normalized_entropy"].ravel(), c=depth, cmap="viridis",
                       s=8, alpha=0.5, vmin=0, vmax=1)
            sc = ax.scatter(r.layers[x], r.layers["normalized_entropy"], c=r.layers["depth"], cmap="viridis",
                            s=60, edgecolor="black", vmin=0, vmax=1)
            ax.plot(r.layers[x], r.layers["normalized_entropy"], color="grey", lw=0.6)
            ax.set_xlim(-0.02, 1.02)
            ax.set_ylim(-0.02, 1.02)
            ax.set_xlabel("share on position 0" if x == "first_share" else "share on strongest key")
            if row == 0:
                ax.set_ylabel("entropy / log(allowed keys)")
                ax.set_title(r.ref, fontsize=10, loc="left")
    fig.colorbar(sc, ax=axes, shrink=0.6, label="relative depth")
    return finish(fig)


def vertex_distance_by_layer(results: Sequence[ModelResult]) -> Figure:
    """Per layer against relative depth: distance to the nearest vertex (band: 95 % bootstrap CI over
    sentences), distance to the uniform row relative to the vertex-to-uniform distance, and the share
    of rows with a majority key (solid) and with a majority on position 0 (dashed)."""
    _style()
    fig, axes = plt.subplots(1, 3, figsize=(13.5, 3.6))
    for r in results:
        d = r.layers
        line = axes[0].plot(d["depth"], d["distance_to_vertex"], marker="o", ms=3, label=r.ref,
                            color=model_colour(r.ref))[0]
        axes[0].fill_between(d["depth"], d["distance_to_vertex_low"], d["distance_to_vertex_high"], alpha=0.2,
                             color=line.get_color())
        axes[1].plot(d["depth"], d["relative_distance_to_uniform"], marker="o", ms=3, color=line.get_color())
        axes[2].plot(d["depth"], d["near_vertex"], marker="o", ms=3, color=line.get_color())
        axes[2].plot(d["depth"], d["near_first_vertex"], ls="--", color=line.get_color())
    axes[0].axhline(math.pi / 2, color="grey", lw=0.8, ls=":")
    axes[0].set_ylim(0, math.pi)
    axes[0].set_title("Fisher-Rao distance to nearest vertex", fontsize=10)
    axes[1].set_ylim(0, 1.02)
    axes[1].set_title("distance to uniform / vertex-to-uniform", fontsize=10)
    axes[2].set_ylim(-0.02, 1.02)
    axes[2].set_title("rows with a majority key (dashed: on position 0)", fontsize=10)
    for ax in axes:
        ax.set_xlabel("relative depth (layer / last layer)")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    return finish(fig)
