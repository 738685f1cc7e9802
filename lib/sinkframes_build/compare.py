"""Compare what two executed copies of a page show: its prose and every text output, cell by cell.

Used to prove that a change of the library keeps a page's numbers (``bench/compare_pages.py``):
figures are not compared (their bytes change with matplotlib's metadata), every markdown cell and every
``text/plain``, ``text/markdown``, ``text/html`` and stream output is. The provenance line, which names software
versions, can be excluded.

Two texts match when their words are identical and each printed decimal number is the same or differs by at
most one unit in its last printed digit (``0.684`` against ``0.685``). The round-off of float32 forward passes
can differ from one machine to another, and an attention weight that sits on a graph
threshold can fall either side of it, which moves a three-digit interval bound by one unit and nothing else.
Integers (counts, sizes, layer indices) and every word, verdicts included, must match exactly; ``exact=True``
asks the same of decimals. Where decimals are forgiven, so is the width of the blanks between words: a text table
pads its columns to its longest entry, so ``0.72`` printed for ``0.721`` moves every row's padding by one. An HTML
table's ``<wbr>`` (a line-break hint inside a long cell, ``0.<wbr>721``) is read as nothing, so its numbers count as
numbers.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import nbformat

TEXT_TYPES = ("text/markdown", "text/plain", "text/html")
PROVENANCE = re.compile(r"\*\*Produced by\*\*")
#: a printed decimal number: digits, a point, digits, an optional exponent (the sign stays in the words)
DECIMAL = re.compile(r"\d+\.\d+(?:[eE][-+]?\d+)?")
#: a run of blanks (spaces, tabs) inside a line: a text table's column padding
BLANKS = re.compile(r"[ \t]+")
#: a line-break hint of an HTML table cell: it shows nothing
WORD_BREAK = "<wbr>"


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


def last_digit_unit(number: str) -> Decimal:
    """One unit in the last printed digit of a decimal ``number`` (``"0.684"``: 0.001; ``"1.5e-05"``: 1e-06)."""
    mantissa, _, exponent = number.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    return Decimal(1).scaleb(int(exponent or 0) - decimals)


def roundoff_differences(a: str, b: str) -> int | None:
    """How many printed decimals of ``b`` differ from those of ``a`` by at most one unit in the last printed
    digit (the smaller unit of the two), everything else being identical but the width of the blanks between words
    (a text table's padding); ``None`` when the texts differ in anything else (a word, an integer, a line break, a
    larger change, the number of numbers)."""
    if a == b:
        return 0
    a, b = a.replace(WORD_BREAK, ""), b.replace(WORD_BREAK, "")
    words_a = [BLANKS.sub(" ", w) for w in DECIMAL.split(a)]
    words_b = [BLANKS.sub(" ", w) for w in DECIMAL.split(b)]
    if words_a != words_b:
        return None
    moved = 0
    for x, y in zip(DECIMAL.findall(a), DECIMAL.findall(b), strict=True):
        if x == y:
            continue
        if abs(Decimal(x) - Decimal(y)) > min(last_digit_unit(x), last_digit_unit(y)):
            return None
        moved += 1
    return moved


def _prose_differences(old: Any, new: Any) -> list[str]:
    """The markdown cells that differ (a page's prose left behind by an edit of its template)."""
    a = [c.source for c in old.cells if c.cell_type == "markdown"]
    b = [c.source for c in new.cells if c.cell_type == "markdown"]
    if len(a) != len(b):
        return [f"{len(a)} markdown cells against {len(b)}"]
    return [f"markdown cell {k}:\n" + "\n".join(difflib.unified_diff(x.splitlines(), y.splitlines(), "old", "new",
                                                                    lineterm="", n=0))
            for k, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]


def compare_notebooks(old: Path | str, new: Path | str, skip_provenance: bool = True, exact: bool = False
                      ) -> list[str]:
    """Human-readable differences between the prose and text outputs of two executed notebooks (empty: same); unless
    ``exact``, a decimal that moved by one unit in its last printed digit is not a difference
    (:func:`roundoff_differences`)."""
    return compare_counting_roundoff(old, new, skip_provenance, exact)[0]


def compare_counting_roundoff(old: Path | str, new: Path | str, skip_provenance: bool = True, exact: bool = False
                              ) -> tuple[list[str], int]:
    """:func:`compare_notebooks`'s differences, and how many printed decimals moved by one unit in their last
    digit in the outputs that otherwise match."""
    nb_old, nb_new = nbformat.read(str(old), as_version=4), nbformat.read(str(new), as_version=4)
    a, b = text_outputs(nb_old, skip_provenance), text_outputs(nb_new, skip_provenance)
    problems = _prose_differences(nb_old, nb_new)
    moved = 0
    if len(a) != len(b):
        problems.append(f"{len(a)} text outputs in {old}, {len(b)} in {new}")
    for x, y in zip(a, b, strict=False):
        if x.kind == y.kind and not exact and (n := roundoff_differences(x.text, y.text)) is not None:
            moved += n
            continue
        if (x.kind, x.text) != (y.kind, y.text):
            diff = "\n".join(
                difflib.unified_diff(x.text.splitlines(), y.text.splitlines(), "old", "new", lineterm="", n=0)
            )
            problems.append(f"code cell {x.cell} ({x.kind}) -> code cell {y.cell} ({y.kind}):\n{diff}")
    return problems, moved
