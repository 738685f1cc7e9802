"""What a reader must find on an executed page, checked on the notebook itself (no HTML build needed).

- a section or family page opens with its result box (the ``What this page finds`` admonition);
- every figure has its numbered caption (``book.figure_caption``) under it, in the same cell;
- a MyST block (an admonition) is rendered, not printed as text;
- no figure's labels are drawn over each other (its caption would say so: ``figure_caption.OVERLAP_NOTE``);
- no rendered text shows a Python dict (``{'low': 0.1, ...}``) or a float with nine or more decimals
  (a number printed with ``str`` instead of the page's formatting).

The rendered text is what a reader sees: markdown cells, and each output in the representation the book
renders (Markdown before HTML before plain text; an image's plain-text fallback is never shown).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sinkframes.book.figure_caption import CAPTION_PREFIX, OVERLAP_NOTE
from sinkframes.manifest import Page
from sinkframes.report.page_verdicts import BOX_TITLE

#: a Python dict printed as text: an opening brace, a quoted key and a colon (HTML-escaped quotes too)
DICT_RE = re.compile(r"\{\s*(?:'|&#x27;|&#39;|\"|&quot;)[^'\"&\n]{1,40}(?:'|&#x27;|&#39;|\"|&quot;)\s*:")
#: a float with nine or more decimals
LONG_FLOAT_RE = re.compile(r"(?<![\w.])-?\d+\.\d{9,}(?![\d])")
#: the order in which the book renders an output's representations (myst-nb's priority for HTML, with Markdown
#: first: ``nb_mime_priority_overrides`` in ``_config.yml``, for the MyST blocks that carry an HTML copy)
RENDER_ORDER = ("text/markdown", "text/html", "image/svg+xml", "image/png", "image/jpeg", "text/latex", "text/plain")


def _rendered(output: Any) -> tuple[str, str]:
    """``(mime type, text)`` of what the book shows for one output (``("", "")`` for nothing)."""
    if output.get("output_type") == "stream":
        return "stream", "".join(output.get("text", ""))
    data = output.get("data", {})
    for mime in RENDER_ORDER:
        if mime in data:
            value = data[mime]
            return mime, value if isinstance(value, str) else "".join(value)
    return "", ""


def rendered_texts(nb: Any) -> list[tuple[int, str]]:
    """``(cell index, text)`` of every text a reader sees: markdown cells and the rendered text outputs."""
    out = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            out.append((i, cell.source))
        elif cell.cell_type == "code":
            for o in cell.get("outputs", []):
                mime, text = _rendered(o)
                if mime and not mime.startswith("image/") and text:
                    out.append((i, text))
    return out


def has_result_box(nb: Any) -> bool:
    """Whether a Markdown output of the page opens its result box (``:::{admonition} What this page finds``)."""
    marker = f":::{{admonition}} {BOX_TITLE}"
    return any(marker in text for _, text in rendered_texts(nb))


def uncaptioned_figures(nb: Any) -> list[int]:
    """The cells with a figure that no caption block follows in the same cell's outputs."""
    cells = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        kinds = [_rendered(o) for o in cell.get("outputs", [])]
        for k, (mime, _) in enumerate(kinds):
            if not mime.startswith("image/"):
                continue
            after = next((text for m, text in kinds[k + 1:] if not m.startswith("image/")), "")
            if not after.lstrip().startswith(CAPTION_PREFIX):
                cells.append(i)
                break
    return cells


def raw_values(nb: Any) -> list[tuple[int, str]]:
    """``(cell index, excerpt)`` of every Python dict or over-long float in the rendered text."""
    found = []
    for i, text in rendered_texts(nb):
        for rx in (DICT_RE, LONG_FLOAT_RE):
            found += [(i, text[max(0, m.start() - 30): m.end() + 30]) for m in rx.finditer(text)]
    return found


def unrendered_myst(nb: Any) -> list[int]:
    """The cells whose Markdown output holds a MyST block (``:::{admonition}``) that the book would print as text:
    the cell lacks ``mystnb.markdown_format: myst`` in its metadata."""
    cells = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or cell.metadata.get("mystnb", {}).get("markdown_format") == "myst":
            continue
        if any(mime == "text/markdown" and ":::{" in text for mime, text in map(_rendered, cell.get("outputs", []))):
            cells.append(i)
    return cells


def page_problems(nb: Any, section: bool) -> list[str]:
    """Every problem of an executed page; ``section``: a section or family page, which needs its result box."""
    problems = []
    if section and not has_result_box(nb):
        problems.append(f"no result box ({BOX_TITLE!r})")
    problems += [f"cell {i}: a figure without a caption" for i in uncaptioned_figures(nb)]
    problems += [f"cell {i}: a MyST block shown as plain text (the cell needs mystnb.markdown_format: myst)"
                 for i in unrendered_myst(nb)]
    problems += [f"cell {i}: a raw Python value in the text: {excerpt!r}" for i, excerpt in raw_values(nb)]
    problems += [f"cell {i}: {text[text.index(OVERLAP_NOTE):][:200]}" for i, text in rendered_texts(nb)
                 if OVERLAP_NOTE in text]
    return problems


def verdict_savers(pages: Sequence[Page]) -> set[str]:
    """The pages that must save verdicts of their own: every section page (not a family page, not the scorecard)."""
    return {p.id for p in pages if not p.run_last and "family" not in p.params_for("smoke")}


def saved_verdict_problems(page_id: str, folder: Path) -> list[str]:
    """What is wrong with the verdicts one section page saved in ``folder`` on a smoke run: none saved, or saved
    with another profile's label (a page run with its manifest parameters must not be labelled custom)."""
    path = folder / f"{page_id}.json"
    if not path.is_file():
        return [f"{page_id} saved no verdicts"]
    if (profile := json.loads(path.read_text())["profile"]) != "smoke":
        return [f"{page_id}: its verdicts are labelled {profile!r}, not 'smoke'"]
    return []


def verdict_problems(pages: Sequence[Page], folder: Path) -> list[str]:
    """What is wrong with the verdicts a smoke run of every page saved in ``folder``: every section page saves its
    own, labelled with the smoke profile; a family page that ran a model may save its reading of the claims the
    section pages decide, a pipeline check nothing (the scorecard, run last, reads them)."""
    savers = verdict_savers(pages)
    readers = {p.id for p in pages if not p.params_for("smoke").get("pipeline_check", True)}
    saved = {p.stem for p in folder.glob("*.json")}
    problems = []
    if not savers <= saved <= savers | readers:
        problems.append(f"saved verdicts {sorted(saved)}: expected every section page's {sorted(savers)}, and "
                        f"otherwise only the family pages' {sorted(readers)}")
    if "appendix_h_encoders" not in saved:  # the encoders' appendix reads claims chapters 3-5 decide
        problems.append("appendix_h_encoders saved no verdicts")
    for page_id in sorted(savers & saved):
        problems += saved_verdict_problems(page_id, folder)
    return problems
