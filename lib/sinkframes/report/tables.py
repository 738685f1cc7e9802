"""One table style for the whole book: how a ``DataFrame`` looks on a page.

:func:`install` makes every ``DataFrame`` a page displays render through :func:`to_html` (the text
form is unchanged):

- no index column (a meaningful index, as a pivot table's, becomes ordinary columns);
- headers in words (``kl_early`` -> ``kl early``) that wrap at spaces;
- numbers with three significant digits, never ``-0.000`` or float32 noise (``34.228001`` -> ``34.2``);
  integers as they are; ``NaN`` as an en dash;
- tokenizer space markers made visible (``Ġthe``, ``▁the`` -> ``·the``; ``Ċ`` -> ``↵``), with a note;
- a table wider than the text column is split into several tables of fewer columns, each repeating the
  leading label columns (model, mode, ...), and a long one is folded into a collapsed "full table".

The widths are estimated from character counts (``CHAR_PX``); the browser check of the built book
measures the real ones.
"""

from __future__ import annotations

import html
import math
import re
from typing import Any

import numpy as np
import pandas as pd

#: a cell's output area in the book's HTML theme at a 1280-pixel window is about 690 px; keep a margin
COLUMN_PX = 650
#: average width of one character at the table's font size (0.8 em of 16 px), and cell padding
CHAR_PX = 7.0
#: the same for a header's bold characters (measured in the built book: "magnitude" takes 78 px)
HEADER_CHAR_PX = 8.7
CELL_PAD_PX = 12
#: a cell wraps beyond this many characters
WRAP_CHARS = 24
#: at most this many leading label columns are repeated in each part of a split table
MAX_KEYS = 2
#: a table with more rows than this is folded into a collapsed "full table"
FOLD_ROWS = 30
SPACE_MARKERS = {"Ġ": "·", "▁": "·", "Ċ": "↵"}
MARKER_NOTE = "In tokens, · marks a leading space and ↵ a line break."

_STYLE = (
    "<style>"
    "table.sf-table{font-size:0.8em;border-collapse:collapse;margin:0.3em 0 0.8em 0;max-width:100%}"
    "table.sf-table th,table.sf-table td{padding:2px 6px;vertical-align:top;white-space:normal;"
    f"max-width:{WRAP_CHARS * CHAR_PX:.0f}px;overflow-wrap:break-word}}"
    "table.sf-table td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}"
    "table.sf-table thead th{border-bottom:1px solid #999;text-align:left}"
    ".sf-table-note{font-size:0.8em;color:#555;margin:-0.5em 0 0.8em 0}"
    "</style>"
)


def format_number(x: Any) -> str:
    """A number as a reader wants it: three significant digits, no ``-0``, integers unchanged."""
    if x is None or (isinstance(x, float | np.floating) and math.isnan(float(x))):
        return "–"
    if isinstance(x, bool | np.bool_):
        return "yes" if x else "no"
    if isinstance(x, int | np.integer):
        return str(int(x))
    v = float(x)
    if math.isinf(v):
        return "∞" if v > 0 else "−∞"
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 1e6 or a < 1e-3:
        mantissa, exponent = f"{v:.2e}".split("e")
        return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"
    if v.is_integer():
        return str(int(v))
    decimals = max(0, 2 - math.floor(math.log10(a)))
    s = f"{v:.{decimals}f}"
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    return "0" if float(s) == 0 else s


def breakable(text: str) -> str:
    """``text`` escaped for HTML, with a line-break opportunity (``<wbr>``) after every ``.``, ``_``, ``/``, ``:``
    and ``-``: a long identifier (``5.1.centralization_falls``, ``random:minilm``) wraps at its joints, so
    that no cell has to break a word in the middle (the tables' ``overflow-wrap`` is ``break-word``)."""
    return re.sub(r"([._/:-])(?=\S)", r"\1<wbr>", html.escape(text))


def show_markers(text: str) -> tuple[str, bool]:
    """``text`` with tokenizer space markers made visible, and whether there was any."""
    out = text
    for marker, shown in SPACE_MARKERS.items():
        out = out.replace(marker, shown)
    return out, out != text


def header(col: Any) -> str:
    """A column name in words: tuple levels joined, underscores as spaces."""
    if isinstance(col, tuple):
        col = " ".join(str(c) for c in col if str(c))
    return str(col).replace("_", " ")


def _flatten(df: pd.DataFrame) -> pd.DataFrame:
    """The frame with a meaningful index turned into columns (a default range index is dropped)."""
    if isinstance(df.index, pd.RangeIndex) or (df.index.names == [None] and df.index.equals(pd.RangeIndex(len(df)))):
        return df.reset_index(drop=True)
    names = [n if n is not None else ("" if df.index.nlevels == 1 else f"level {i}")
             for i, n in enumerate(df.index.names)]
    out = df.copy()
    out.index = out.index.set_names(names)
    if any(n in out.columns for n in names):
        return out.reset_index(drop=True)
    return out.reset_index()


def _cells(df: pd.DataFrame) -> tuple[list[str], list[list[str]], list[bool], bool]:
    """Headers, formatted cell strings, which columns are numeric, and whether any token marker was shown."""
    heads = [header(c) for c in df.columns]
    numeric = [pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c]) for c in df.columns]
    marked = False
    rows = []
    for row in df.itertuples(index=False):
        cells = []
        for v in row:
            if isinstance(v, str):
                v, m = show_markers(v)
                marked |= m
                cells.append(v)
            elif isinstance(v, int | float | np.integer | np.floating | bool | np.bool_) or v is None:
                cells.append(format_number(v))
            else:
                text, m = show_markers(str(v))
                marked |= m
                cells.append(text)
        rows.append(cells)
    return heads, rows, numeric, marked


def column_px(head: str, cells: list[str]) -> float:
    """Estimated rendered width of one column: its longest header word or cell, wrapped at ``WRAP_CHARS``."""
    longest_word = max((len(w) for w in head.split()), default=0)
    longest_cell = max((len(c) for c in cells), default=0)
    return max(longest_word * HEADER_CHAR_PX, min(max(longest_cell, 1), WRAP_CHARS) * CHAR_PX) + CELL_PAD_PX


def _key_columns(df: pd.DataFrame) -> int:
    """How many leading columns are labels (text, not numbers) to repeat in each part of a split table."""
    n = 0
    for c in df.columns[:MAX_KEYS]:
        if pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c]):
            break
        n += 1
    return n


def column_groups(widths: list[float], n_keys: int, limit: float = COLUMN_PX) -> list[list[int]]:
    """Column indices of each part: the key columns, then as many others as fit in ``limit`` (at least one)."""
    keys = list(range(n_keys))
    key_px = sum(widths[:n_keys])
    groups: list[list[int]] = []
    current: list[int] = []
    used = key_px
    for i in range(n_keys, len(widths)):
        if current and used + widths[i] > limit:
            groups.append(keys + current)
            current, used = [], key_px
        current.append(i)
        used += widths[i]
    if current or not groups:
        groups.append(keys + current)
    return groups


def _table(heads: list[str], rows: list[list[str]], numeric: list[bool], cols: list[int]) -> str:
    th = "".join(f"<th>{breakable(heads[i])}</th>" for i in cols)
    body = "".join(
        "<tr>" + "".join(f'<td class="num">{html.escape(r[i])}</td>' if numeric[i] else f"<td>{breakable(r[i])}</td>"
                         for i in cols) + "</tr>"
        for r in rows
    )
    return f'<table class="sf-table"><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>'


def to_html(df: pd.DataFrame, limit: float = COLUMN_PX) -> str:
    """``df`` in the book's table style (see the module docstring)."""
    flat = _flatten(df)
    heads, rows, numeric, marked = _cells(flat)
    widths = [column_px(h, [r[i] for r in rows]) for i, h in enumerate(heads)]
    groups = column_groups(widths, _key_columns(flat), limit) if heads else [[]]
    parts = [_table(heads, rows, numeric, g) for g in groups]
    if len(parts) > 1:
        parts = [f'<div class="sf-table-note">Part {k} of {len(parts)} (the table is split by columns to fit the '
                 f"page).</div>{p}" for k, p in enumerate(parts, 1)]
    body = "".join(parts)
    if len(rows) > FOLD_ROWS:
        body = (f"<details><summary>Full table: {len(rows)} rows, {len(heads)} columns (click to open)</summary>"
                f"{body}</details>")
    note = f'<div class="sf-table-note">{html.escape(MARKER_NOTE)}</div>' if marked else ""
    return _STYLE + body + note


def install(shell: Any = None) -> bool:
    """Render every ``DataFrame`` the running IPython kernel displays with :func:`to_html`; ``False``
    outside IPython (nothing to do)."""
    if shell is None:
        try:
            from IPython import get_ipython
        except ImportError:  # pragma: no cover - IPython comes with the notebook tooling
            return False
        shell = get_ipython()
    if shell is None:
        return False
    shell.display_formatter.formatters["text/html"].for_type(pd.DataFrame, to_html)
    return True
