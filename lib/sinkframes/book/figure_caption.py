"""Numbered figures with a caption and a takeaway: ``pg.figure(fig, caption, takeaway)`` on every page.

A figure of the book is shown, then, in the same cell, a caption block under it::

    **Figure 1.3.** What the figure shows. *Takeaway:* what a reader should carry away.

The number is the page's chapter label (``1`` for "1. Reference frames", ``E`` for "E. Llama", read from
the page's manifest title) and the figure's place on the page, counted in the kernel that runs it. The caption says
what is drawn; the takeaway says what it shows, and wherever it holds a number it comes from a ``report``
function of the results, never from typed text. jupyter-book's own numbered figures (myst-nb ``glue`` with
``{glue:figure}``) would need one static Markdown cell per figure, which the pages that draw one figure per
model in a loop cannot have, and a figure that a reader's notebook on Colab would not show.
"""

from __future__ import annotations

import re
from typing import Any

#: how a caption block starts, in Markdown (the checks in ``sinkframes_build.page_checks`` look for it)
CAPTION_PREFIX = "**Figure "
#: the page's figure count, per page id (one kernel runs one page)
_COUNTS: dict[str, int] = {}


def chapter_label(page_id: str | None) -> str:
    """The chapter part of a figure number: ``1`` for "1. Reference frames", ``E`` for "E. Llama",
    from the page's manifest title; ``""`` when the page or its title has none."""
    if not page_id:
        return ""
    from ..manifest import ManifestError, reader_manifest

    m = reader_manifest()
    if m is None:
        return ""
    try:
        title = m.page(page_id).title
    except ManifestError:
        return ""
    match = re.match(r"([0-9]+|[A-Z])\.\s", title)
    return match.group(1) if match else ""


def next_number(page_id: str | None) -> str:
    """The next figure number of ``page_id``: ``"1.3"`` (chapter and place), or ``"3"`` without a chapter."""
    key = page_id or ""
    _COUNTS[key] = _COUNTS.get(key, 0) + 1
    chapter = chapter_label(page_id)
    return f"{chapter}.{_COUNTS[key]}" if chapter else str(_COUNTS[key])


def reset(page_id: str | None = None) -> None:
    """Start the figure count of ``page_id`` (every page when ``None``) again at 1 (``page.setup`` does)."""
    if page_id is None:
        _COUNTS.clear()
    else:
        _COUNTS.pop(page_id, None)


#: what a caption says when labels of its figure are drawn over each other (``figures.style.overlapping_labels``)
OVERLAP_NOTE = "*Labels overlap in this figure:*"


def caption_markdown(number: str, caption: str, takeaway: str = "") -> str:
    """The caption block of figure ``number``: ``**Figure N.** caption *Takeaway:* takeaway``."""
    caption = caption.strip()
    if not caption:
        raise ValueError(f"figure {number} needs a caption")
    text = f"{CAPTION_PREFIX}{number}.** {caption}"
    if takeaway.strip():
        text += f" *Takeaway:* {takeaway.strip()}"
    return text


def show(fig: Any, caption: str, takeaway: str = "", page_id: str | None = None) -> str:
    """Display ``fig`` and its numbered caption under it, and close ``fig`` (so that the notebook does not show
    it a second time at the end of the cell); the caption block, as displayed. A figure function that had
    nothing to draw (``None``, as ``figures.family.kl_figure`` for a pipeline check) shows nothing."""
    if fig is None:
        return ""
    import matplotlib.pyplot as plt
    from IPython.display import Markdown, display

    from ..figures.style import overlapping_labels

    text = caption_markdown(next_number(page_id), caption, takeaway)
    overlaps = overlapping_labels(fig)
    if overlaps:  # said under the figure, where the page checks (sinkframes_build.page_checks) find it
        text += f" {OVERLAP_NOTE} {'; '.join(overlaps[:3])}."
    display(fig)
    plt.close(fig)
    display(Markdown(text))
    return text
