"""Alt text for the figures of an executed page, from the docstring of the function that drew them.

Every figure of the book comes from one call to a figure function (``sinkframes.figures.*``, or
``figures.family.kl_figure``) whose docstring says what it shows. :func:`set_alt_texts` finds that call in
each code cell with an image output and stores the docstring's first paragraph as the cell's image alt
text (``mystnb.image.alt``), which the HTML build puts on the ``<img>``.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from typing import Any

import nbformat

#: modules whose functions draw the book's figures
FIGURE_MODULES = ("sinkframes.figures", "sinkframes.report.family")


def _aliases(nb: nbformat.NotebookNode) -> dict[str, str]:
    """``alias -> module`` for the figure modules a notebook imports (``from sinkframes.figures import x as y``)."""
    out: dict[str, str] = {}
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                for a in node.names:
                    full = f"{node.module}.{a.name}"
                    if any(full.startswith(m) or node.module.startswith(m) for m in FIGURE_MODULES):
                        out[a.asname or a.name] = full
    return out


def _figure_call(source: str, aliases: dict[str, str]) -> Any:
    """The first figure function a cell calls, or ``None``."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name) and node.func.value.id in aliases):
            try:
                module = importlib.import_module(aliases[node.func.value.id])
            except ImportError:
                continue
            func = getattr(module, node.func.attr, None)
            if callable(func) and inspect.getdoc(func) and "Figure" in str(inspect.signature(func).return_annotation):
                return func
    return None


def alt_text(func: Any) -> str:
    """The first paragraph of ``func``'s docstring, on one line."""
    doc = inspect.getdoc(func) or ""
    return " ".join(doc.split("\n\n")[0].split()).replace("``", "")


def set_alt_texts(nb: nbformat.NotebookNode) -> list[int]:
    """Give every code cell with an image output its figure's alt text (in place); the indices of the cells
    with an image but no figure function found (left without alt text)."""
    aliases = _aliases(nb)
    missing = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or not any("image/png" in o.get("data", {}) for o in cell.get("outputs", [])):
            continue
        func = _figure_call(cell.source, aliases)
        if func is None:
            missing.append(i)
            continue
        meta = cell.metadata.setdefault("mystnb", {})
        meta.setdefault("image", {})["alt"] = alt_text(func)
    return missing
