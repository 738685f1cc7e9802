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

import matplotlib.pyplot as plt
import seaborn as sns
import yaml
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.gridspec import GridSpec
from matplotlib.layout_engine import ConstrainedLayoutEngine, PlaceHolderLayoutEngine
from matplotlib.text import Text

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


#: the models the book names, in a fixed order: each keeps its colour on every page
_KNOWN_ORDER = ("smollm2", "gemma3", "minilm", "llama-6x64 (trained here)", "qwen05", "mpnet", "nomic", "e5small",
                "qwen15")


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
    if base in _KNOWN_ORDER:
        return tuple(palette[_KNOWN_ORDER.index(base)])
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
