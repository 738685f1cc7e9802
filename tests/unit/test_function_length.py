"""No function of the library is over 60 lines (its docstring left out) without a reason beside it: ruff has no
rule that counts lines (``pyproject.toml`` limits branches and statements)."""

from __future__ import annotations

import ast
from pathlib import Path

LIB = Path(__file__).resolve().parents[2] / "lib" / "sinkframes"
MAX_LINES = 60
MARK = "# long:"


def _reason(lines: list[str], node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """The ``# long: <reason>`` comment between the ``def`` line and the function's first statement, or ''."""
    for line in lines[node.lineno - 1 : node.body[0].lineno - 1]:
        if MARK in line:
            return line.split(MARK, 1)[1].strip()
    return ""


def _size(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines from the ``def`` to the end, less the docstring's."""
    size = (node.end_lineno or node.lineno) - node.lineno + 1
    first = node.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        size -= (first.end_lineno or first.lineno) - first.lineno + 1
    return size


def test_long_functions_say_why():
    long = []
    for path in sorted(LIB.rglob("*.py")):
        text = path.read_text()
        lines = text.splitlines()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                size = _size(node)
                if size > MAX_LINES and not _reason(lines, node):
                    long.append(f"{path.relative_to(LIB)}:{node.lineno} {node.name} ({size} lines)")
    assert not long, f"functions over {MAX_LINES} lines with no '{MARK} <reason>' beside their def: {long}"
