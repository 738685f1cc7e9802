"""One style for every figure of the book: theme, resolution, sizes that fit the text column, token labels.

At ``DPI`` 96 a Matplotlib point is a CSS point, so a figure no wider than ``COLUMN_IN`` (with its labels,
as the notebook saves it: a tight bounding box) is shown at its own size in a cell's output area of the
book (about 690 px at a 1280-pixel window) and its labels keep their point sizes. Every figure function
ends with :func:`finish`, which enforces both: no text under ``MIN_FONT_PT``, and a figure wider than the
column re-laid out in more rows of panels (colorbars move with their panels under the constrained layout;
a figure that cannot be re-laid out is scaled down to the column with its fonts kept).
"""

from __future__ import annotations

import contextlib
import functools
import math
import zlib
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import seaborn as sns
import yaml
from matplotlib.axes import Axes
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure
from matplotlib.gridspec import GridSpec
from matplotlib.layout_engine import ConstrainedLayoutEngine, PlaceHolderLayoutEngine
from matplotlib.text import Text

from ..models.registry import OFFLINE_MODELS

DPI = 96
#: the widest figure shown at its own size in a cell's output area (6.9 in = 662 px at 96 dpi)
COLUMN_IN = 6.9
#: the smallest label a reader should have to read, in points at the rendered size
MIN_FONT_PT = 9.0


def _style() -> None:
    """Apply the book's seaborn theme and figure resolution (every figure function calls it first)."""
    sns.set_theme(context="notebook", style="whitegrid", palette="colorblind")
    plt.rcParams["figure.dpi"] = DPI
    plt.rcParams["savefig.dpi"] = DPI


#: the models the book names, each with its colour on every page: the seven default models take seven colours
#: that differ pairwise by at least 43 in CIELAB (delta E 1976; the closest pair is blue and grey), chosen from the
#: colour-blind palette and Paul Tol's muted scheme (its indigo) with black; the palette's orange and tan (37
#: apart) and its two pinks (21) were too alike to tell apart in a seven-line plot
_KNOWN_COLOUR = {**{key: m.colour for key, m in OFFLINE_MODELS.items()}, "llama-6x64 (trained here)": "#ca9161"}
_KNOWN_ORDER = tuple(_KNOWN_COLOUR)


#: the profiles whose hub models are coloured so that no page of theirs shows two models in one colour
_HUB_PROFILES = ("colab", "paper")
_MANIFEST = Path(__file__).resolve().parents[1] / "data" / "manifest.yml"


def _base(ref: str) -> str:
    """The model a label derives from: a twin (``random:<ref>``) or a suffixed label (``"<ref> (forced BOS)"``)."""
    return ref if ref in _KNOWN_ORDER else ref.removeprefix("random:").split(" (")[0]


@functools.lru_cache(maxsize=1)
def hub_colour_index() -> dict[str, int]:
    """``{hub model: palette index}`` for every model the manifest's colab and paper pages name: a greedy colouring
    of the graph whose edges join two models shown on one page, taken in the order the pages name them, so that
    every page shows its models in distinct colours (7 of the palette's 10 are needed today)."""
    pages: list[list[str]] = []
    for page in yaml.safe_load(_MANIFEST.read_text())["pages"]:
        for profile in _HUB_PROFILES:
            params = page.get("parameters", {}).get(profile) or {}
            refs = [_base(str(m)) for key, value in params.items() if "model" in key and isinstance(value, list)
                    for m in value]
            if refs:
                pages.append(list(dict.fromkeys(refs)))
    order = list(dict.fromkeys(ref for refs in pages for ref in refs))
    neighbours: dict[str, set[str]] = {ref: set() for ref in order}
    for refs in pages:
        for ref in refs:
            neighbours[ref] |= set(refs) - {ref}
    index: dict[str, int] = {}
    for ref in order:
        taken = {index[other] for other in neighbours[ref] if other in index}
        index[ref] = min(i for i in range(len(order) + 1) if i not in taken)
    return index


def model_colour(ref: str) -> tuple[float, float, float]:
    """One colour per model across the book (colour-blind palette): the book's offline models in a fixed order,
    the colab and paper profiles' hub models by :func:`hub_colour_index` (distinct on every page of those
    profiles), any other model by a stable hash of its name (two such models may share a colour); a random-
    initialized twin (``random:<ref>``) and a label with a suffix (``"<ref> (forced BOS)"``) take the colour of
    the model they derive from."""
    palette = sns.color_palette("colorblind", 10)
    base = _base(ref)
    if base in _KNOWN_COLOUR:
        return to_rgb(_KNOWN_COLOUR[base])
    hub = hub_colour_index()
    if base in hub:
        return tuple(palette[hub[base] % len(palette)])
    return tuple(palette[zlib.crc32(base.encode()) % len(palette)])


def _short(tok: str, width: int = 10) -> str:
    """A token as an axis label: word-start markers as ``_``, newlines escaped, cut to ``width`` characters."""
    tok = tok.replace("Ġ", "_").replace("▁", "_").replace("\n", "\\n")
    return tok if len(tok) <= width else tok[: width - 1] + "~"


def _panels(fig: Figure) -> list[Axes]:
    """The figure's grid panels (axes placed by a subplot spec; not colorbars or insets)."""
    return [ax for ax in fig.axes if ax.get_subplotspec() is not None and ax.get_label() != "<colorbar>"]


def _clamp_fonts(fig: Figure) -> None:
    """Raise every text of ``fig`` (titles, labels, tick labels, legends, annotations) to ``MIN_FONT_PT``."""
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            sizes = [float(t.get_fontsize()) for t in axis.get_ticklabels(which="both")]
            if sizes and min(sizes) < MIN_FONT_PT:
                axis.set_tick_params(which="both", labelsize=max(MIN_FONT_PT, *sizes))
    for t in fig.findobj(Text):
        if t.get_text() and float(t.get_fontsize()) < MIN_FONT_PT:
            t.set_fontsize(MIN_FONT_PT)


def _reflow(fig: Figure, panels: list[Axes]) -> bool:
    """Lay a too-wide row of one-cell panels out in more rows of at most ``COLUMN_IN``; ``False`` when the
    figure has several rows of panels, a panel spans several cells, or the panels already fit."""
    w, h = fig.get_size_inches()
    specs = [ax.get_subplotspec() for ax in panels]
    gs = specs[0].get_gridspec() if specs[0] is not None else None
    if gs is None:
        return False
    nrows, ncols = gs.get_geometry()
    if nrows > 1:  # a grid of rows (measures) by columns (models) reads worse wrapped than scaled
        return False
    cells = []
    for ax, s in zip(panels, specs, strict=True):
        if s is None or s.get_gridspec() is not gs or len(s.rowspan) != 1 or len(s.colspan) != 1:
            return False
        cells.append((s.rowspan.start, s.colspan.start, ax))
    panel_w, panel_h = w / ncols, h / nrows
    per_row = max(1, round(COLUMN_IN / panel_w))  # panels may shrink a little to fit two (or more) a row
    if per_row >= ncols:
        return False
    chunks = math.ceil(ncols / per_row)
    new = GridSpec(nrows * chunks, per_row, figure=fig)
    for r, c, ax in cells:
        ax.set_subplotspec(new[r * chunks + c // per_row, c % per_row])
        if c % per_row == 0:  # a panel that now starts a row shows its y tick labels (sharey hid them)
            ax.tick_params(axis="y", labelleft=True)
    fig.set_size_inches(min(COLUMN_IN, per_row * panel_w), panel_h * nrows * chunks)
    return True


def finish(fig: Figure) -> Figure:
    """``fig`` made to fit the text column with readable labels (see the module docstring)."""
    fig.set_dpi(DPI)
    _clamp_fonts(fig)
    w, h = fig.get_size_inches()
    if w > COLUMN_IN + 1e-6:
        panels = _panels(fig)
        # colorbars follow their panels only under the constrained layout, which places them at every draw
        movable = len(panels) == len(fig.axes) or isinstance(fig.get_layout_engine(), ConstrainedLayoutEngine)
        if not movable or not panels or not _reflow(fig, panels):
            fig.set_size_inches(COLUMN_IN, h * COLUMN_IN / w)
    _layout(fig)
    # the notebook saves the tight bounding box plus a margin; labels, legends and colorbars outside the axes
    # widen it and keep their size when the figure shrinks: measure the saved width, shrink until it fits
    for _ in range(5):
        saved_in = saved_width_in(fig)
        if saved_in <= COLUMN_IN + 1e-3:
            break
        w, h = fig.get_size_inches()
        scale = 0.99 * COLUMN_IN / saved_in
        fig.set_size_inches(w * scale, h * scale)
        _layout(fig)
    return fig


#: two labels overlap when their boxes share at least this many pixels in each direction (anti-aliasing aside)
OVERLAP_PX = 2.0


def _drawn_ticks(axis: Any) -> list[Text]:
    """The major tick labels ``axis`` draws: none for a hidden axis (a twin's shared one), else those of ticks inside
    its view limits (the locator may place more)."""
    if not axis.get_visible():
        return []
    low, high = sorted(axis.get_view_interval())
    span = (high - low) * 1e-9
    return [t for loc, t in zip(axis.get_majorticklocs(), axis.get_ticklabels(), strict=False)
            if low - span <= loc <= high + span]


def _labels(fig: Figure) -> list[tuple[str, Text]]:
    """Every visible, non-empty text a reader reads as a label: titles, axis labels, tick labels and legend
    entries of each axes, texts placed in axes coordinates (not at data points), and the figure's own texts
    (its title among them), each with its role (``"panel 2 title"``)."""
    out: list[tuple[str, Text]] = []
    for k, ax in enumerate(fig.axes):
        if not ax.get_visible():
            continue
        where = f"panel {k + 1}"
        out += [(f"{where} title", t) for t in ax.get_children()
                if isinstance(t, Text) and t.get_transform() is not ax.transData]
        if ax.axison:  # an axes turned off draws no axis labels and no ticks
            out += [(f"{where} {name} label", axis.label) for name, axis in (("x", ax.xaxis), ("y", ax.yaxis))
                    if axis.get_visible()]
            out += [(f"{where} x tick", t) for t in _drawn_ticks(ax.xaxis)]
            out += [(f"{where} y tick", t) for t in _drawn_ticks(ax.yaxis)]
        legend = ax.get_legend()
        if legend is not None and legend.get_visible():
            out += [(f"{where} legend", t) for t in legend.get_texts()]
            out.append((f"{where} legend title", legend.get_title()))
    out += [("figure text", t) for t in fig.get_children() if isinstance(t, Text)]
    return [(role, t) for role, t in out if t.get_visible() and t.get_text().strip()]


def overlapping_labels(fig: Figure) -> list[str]:
    """Pairs of labels of ``fig`` drawn over each other, as ``"panel 1 x tick '0.5' / panel 2 y label 'share'"``
    (empty when none): tick labels crowded on an axis, a title over a neighbour's, a rotated label into a panel's
    ticks. Texts inside a panel's data area (annotations) are not labels and are not compared."""
    fig.canvas.draw()
    boxes = [(role, t, t.get_window_extent()) for role, t in _labels(fig)]
    found = []
    for i, (role_a, a, box_a) in enumerate(boxes):
        for role_b, b, box_b in boxes[i + 1:]:
            dx = min(box_a.x1, box_b.x1) - max(box_a.x0, box_b.x0)
            dy = min(box_a.y1, box_b.y1) - max(box_a.y0, box_b.y0)
            if dx < OVERLAP_PX or dy < OVERLAP_PX:
                continue
            if _apart_when_rotated(a, box_a, b, box_b, fig.dpi):
                continue
            found.append(f"{role_a} {a.get_text()[:30]!r} / {role_b} {b.get_text()[:30]!r}")
    return found


def _apart_when_rotated(a: Text, box_a: Any, b: Text, box_b: Any, dpi: float) -> bool:
    """Whether two texts drawn at the same slanted angle (rotated tick labels) stand apart although their upright
    bounding boxes meet: the lines they are written on lie at least a text height apart."""
    angle = a.get_rotation()
    if abs(angle - b.get_rotation()) > 1e-6 or angle % 90 == 0:
        return False
    normal = (-math.sin(math.radians(angle)), math.cos(math.radians(angle)))
    gap = abs((box_b.x0 + box_b.x1 - box_a.x0 - box_a.x1) / 2 * normal[0]
              + (box_b.y0 + box_b.y1 - box_a.y0 - box_a.y1) / 2 * normal[1])
    height = max(float(a.get_fontsize()), float(b.get_fontsize())) * dpi / 72
    return gap >= height


def saved_width_in(fig: Figure) -> float:
    """The width, in inches, of ``fig`` saved as a notebook saves it (PNG, tight bounding box, margin)."""
    import io
    import struct

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, bbox_inches="tight")
    width_px = struct.unpack(">I", buf.getvalue()[16:20])[0]  # the PNG header's width field
    return width_px / DPI


def _layout(fig: Figure) -> None:
    """``tight_layout`` unless the figure has a layout engine of its own (constrained: it lays the figure out
    at every draw). An earlier ``tight_layout`` call leaves a placeholder engine, which does not count."""
    if isinstance(fig.get_layout_engine(), PlaceHolderLayoutEngine | None):
        with contextlib.suppress(ValueError, RuntimeError):  # a layout tight_layout cannot solve stays as it is
            fig.tight_layout()
