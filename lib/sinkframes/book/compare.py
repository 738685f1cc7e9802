"""Compare what two executed copies of a page show: every text output, cell by cell.

Used to prove that a change of the library keeps a page's numbers (``bench/compare_pages.py``):
figures are not compared (their bytes change with matplotlib's metadata), every ``text/plain``,
``text/markdown``, ``text/html`` and stream output is. The provenance line, which names software
versions, can be excluded.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat

TEXT_TYPES = ("text/markdown", "text/plain", "text/html")
PROVENANCE = re.compile(r"\*\*Produced by\*\*")


@dataclass(frozen=True)
class TextOutput:
    """One text output of a code cell: the code cell's index among code cells, the kind and the text."""

    cell: int
    kind: str
    text: str


def _as_text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def text_outputs(nb: Any, skip_provenance: bool = True) -> list[TextOutput]:
    """Every text output of ``nb`` in order (images skipped)."""
    found = []
    code = [c for c in nb.cells if c.cell_type == "code"]
    for k, cell in enumerate(code):
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                found.append(TextOutput(k, f"stream:{out.get('name')}", _as_text(out.get("text", ""))))
                continue
            data = out.get("data", {})
            texts = {kind: _as_text(data[kind]) for kind in TEXT_TYPES if kind in data}
            if skip_provenance and any(PROVENANCE.search(t) for t in texts.values()):
                continue
            found.extend(TextOutput(k, kind, text) for kind, text in texts.items())
    return found


def compare_notebooks(old: Path | str, new: Path | str, skip_provenance: bool = True) -> list[str]:
    """Human-readable differences between the text outputs of two executed notebooks (empty: same)."""
    a = text_outputs(nbformat.read(str(old), as_version=4), skip_provenance)
    b = text_outputs(nbformat.read(str(new), as_version=4), skip_provenance)
    problems = []
    if len(a) != len(b):
        problems.append(f"{len(a)} text outputs in {old}, {len(b)} in {new}")
    for x, y in zip(a, b, strict=False):
        if (x.kind, x.text) != (y.kind, y.text):
            diff = "\n".join(
                difflib.unified_diff(x.text.splitlines(), y.text.splitlines(), "old", "new", lineterm="", n=0)
            )
            problems.append(f"code cell {x.cell} ({x.kind}) -> code cell {y.cell} ({y.kind}):\n{diff}")
    return problems
