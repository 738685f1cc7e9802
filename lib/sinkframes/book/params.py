"""One ``parameters`` cell per executed page, holding the values the page ran with.

papermill adds an ``injected-parameters`` cell after the template's ``parameters`` cell; a reader
who opens the executed page (launch button, download) and edits ``parameters`` would have the
injected cell silently undo the edit. :func:`merge_parameters` writes the values that were run into
the ``parameters`` cell (template defaults where nothing was injected) and drops the injected cell.
"""

from __future__ import annotations

import ast
import json
from typing import Any


def _literal(value: Any) -> str:
    """Python source for a literal, with double-quoted strings (the templates' style)."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_literal(k)}: {_literal(v)}" for k, v in value.items()) + "}"
    if value is None or isinstance(value, (bool, int, float)):
        return repr(value)
    raise TypeError(f"parameter value {value!r} is not a literal")


def _assignments(source: str) -> dict[str, tuple[str, Any]]:
    """``name -> (source line, value)`` for each ``name = <literal>`` line of a parameters cell."""
    out: dict[str, tuple[str, Any]] = {}
    lines = source.splitlines()
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            text = "\n".join(lines[node.lineno - 1 : (node.end_lineno or node.lineno)])
            out[node.targets[0].id] = (text, ast.literal_eval(node.value))
    return out


def merge_parameters(nb: Any) -> bool:
    """Fold the injected parameters into the ``parameters`` cell (in place); ``True`` if anything changed."""
    cells = nb.cells
    tagged = [i for i, c in enumerate(cells) if "parameters" in c.metadata.get("tags", [])]
    injected = [i for i, c in enumerate(cells) if "injected-parameters" in c.metadata.get("tags", [])]
    if not injected:
        return False
    if len(tagged) != 1:
        raise ValueError(f"expected one cell tagged 'parameters', found {len(tagged)}")
    defaults = _assignments(cells[tagged[0]].source)
    run: dict[str, Any] = {}
    for i in injected:
        run.update({k: v for k, (_, v) in _assignments(cells[i].source).items()})
    lines = [f"{name} = {_literal(run[name])}" if name in run else text for name, (text, _) in defaults.items()]
    # names the template does not declare were still set when the page ran: keep them, after the rest
    lines += [f"{name} = {_literal(value)}" for name, value in run.items() if name not in defaults]
    cells[tagged[0]].source = "\n".join(lines)
    for i in sorted(injected, reverse=True):
        del cells[i]
    return True
