"""A matrix heatmap drawn in one pass: seaborn's ``heatmap`` look without its full-figure draw per call.

``seaborn.heatmap`` draws the whole figure after every heatmap to decide whether tick labels overlap;
on a figure of many panels under the constrained layout each of those draws lays out every panel
again, which made a 3 x 3 grid of per-token maps take about 20 s. :func:`heatmap` draws the same
thing (a ``pcolormesh`` with the first row on top, tick labels at the cell centres, a colorbar, a colour
map recentred on ``center``) with no figure draw at all. Labels are laid out for the size the book
prints them at (``style.MIN_FONT_PT`` at least, which ``style.finish`` enforces), thinned to one per
``LABEL_SPACING`` font heights, and column labels turn vertical when the widest, as measured by the
renderer, is wider than its cells; row labels always read across.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import matplotlib as mpl
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.collections import QuadMesh
from matplotlib.colors import Colormap, ListedColormap
from matplotlib.font_manager import FontProperties

from .style import MIN_FONT_PT

Labels = bool | int | str | Sequence[Any]

#: thinned labels are at least this many font heights apart (room for the layout to shrink the axes)
LABEL_SPACING = 1.4


def recentred(cmap: Colormap, vmin: float, vmax: float, center: float) -> Colormap:
    """The part of ``cmap`` that ``[vmin, vmax]`` covers when the map is stretched symmetrically around
    ``center`` (so that ``center`` keeps the map's middle colour), as 256 colours."""
    half = max(vmax - center, center - vmin)
    norm = mpl.colors.Normalize(center - half, center + half)
    lo, hi = (float(norm(v)) for v in (vmin, vmax))
    return ListedColormap(cmap(np.linspace(lo, hi, 256))).with_extremes(bad=cmap(np.ma.masked_invalid([np.nan]))[0])


def _labels(given: Labels, index: Sequence[Any]) -> tuple[list[Any], int | None]:
    """``(labels, step)``: every label (``True``), every ``k``-th (an int ``k``), none (``False``), the
    given list, or ``"auto"`` (``step`` ``None``: thinned to fit the axis)."""
    if given is True:
        return list(index), 1
    if given is False:
        return [], 1
    if isinstance(given, int):
        return list(index), given
    if isinstance(given, str):
        if given != "auto":
            raise ValueError(f"tick labels must be True, False, an int, 'auto' or a list, got {given!r}")
        return list(index), None
    return list(given), 1


def _step_to_fit(ax: Axes, n: int, axis: int, fontsize: float) -> int:
    """The smallest step ``k`` such that every ``k``-th of ``n`` labels, ``LABEL_SPACING`` font heights
    apart, fits the axis's length (seaborn's ``"auto"`` rule, with more room)."""
    box = ax.get_window_extent().transformed(ax.figure.dpi_scale_trans.inverted())
    length_in = [box.width, box.height][axis]
    fit = int(length_in // (LABEL_SPACING * fontsize / 72))
    return n // fit + 1 if fit >= 1 else max(n, 1)


def _widest_in(ax: Axes, labels: Sequence[str], fontsize: float) -> float:
    """The widest of ``labels`` in inches at ``fontsize``, measured by the figure's renderer (no draw)."""
    if not labels:
        return 0.0
    renderer = ax.figure.canvas.get_renderer()  # type: ignore[attr-defined]
    prop = FontProperties(size=fontsize)
    widest = max(renderer.get_text_width_height_descent(str(t), prop, ismath=False)[0] for t in labels)
    return float(widest) / ax.figure.dpi


def heatmap(
    ax: Axes,
    data: Any,
    *,
    cmap: str | Colormap = "viridis",
    vmin: float | None = None,
    vmax: float | None = None,
    center: float | None = None,
    cbar: bool = True,
    xticklabels: Labels = "auto",
    yticklabels: Labels = "auto",
    square: bool = False,
) -> QuadMesh:
    """Draw ``data`` (a DataFrame, whose index and columns label the rows and columns, or a 2-D array) on
    ``ax``: row 0 on top, tick labels at cell centres, a colorbar beside ``ax`` when ``cbar``. ``vmin``/
    ``vmax`` default to the data's range; ``center`` recentres the colour map on that value."""
    frame = data if isinstance(data, pd.DataFrame) else pd.DataFrame(np.asarray(data))
    values = np.ma.masked_invalid(frame.to_numpy(dtype=float))  # [row, column]
    lo = float(np.nanmin(values.filled(np.nan))) if vmin is None else vmin
    hi = float(np.nanmax(values.filled(np.nan))) if vmax is None else vmax
    colours = mpl.colormaps[cmap] if isinstance(cmap, str) else cmap
    if center is not None:
        colours = recentred(colours, lo, hi, center)
    for side in ("left", "bottom", "top", "right"):
        ax.spines[side].set_visible(False)
    mesh = ax.pcolormesh(values, cmap=colours, vmin=lo, vmax=hi)
    n_rows, n_cols = values.shape
    ax.set(xlim=(0, n_cols), ylim=(0, n_rows))
    ax.invert_yaxis()
    ax.grid(False)
    if square:
        ax.set_aspect("equal")
    if cbar:
        ax.figure.colorbar(mesh, ax=ax).outline.set_linewidth(0)
    sizes = (mpl.rcParams["xtick.labelsize"], mpl.rcParams["ytick.labelsize"])
    for axis, (given, index) in enumerate(((xticklabels, frame.columns), (yticklabels, frame.index))):
        fontsize = max(FontProperties(size=sizes[axis]).get_size_in_points(), MIN_FONT_PT)
        labels, step = _labels(given, list(index))
        if step is None:
            step = _step_to_fit(ax, len(labels), axis, fontsize)
        shown = [str(t) for t in labels[::step]]
        ticks = np.arange(len(labels))[::step] + 0.5
        if axis == 0:
            crowded = _widest_in(ax, shown, fontsize) > _cell_size_in(ax, axis, n_cols) * step
            ax.set_xticks(ticks, shown, rotation="vertical" if crowded else 0)
        else:
            ax.set_yticks(ticks, shown, rotation=0, va="center")
    if frame.columns.name is not None:
        ax.set_xlabel(str(frame.columns.name))
    if frame.index.name is not None:
        ax.set_ylabel(str(frame.index.name))
    return mesh


def _cell_size_in(ax: Axes, axis: int, cells: int) -> float:
    """One cell's width (``axis`` 0) or height (1) in inches, at the axes' current size."""
    box = ax.get_window_extent().transformed(ax.figure.dpi_scale_trans.inverted())
    return [box.width, box.height][axis] / max(cells, 1)
