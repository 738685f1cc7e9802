"""The answer grid (``report.answer_grid``) drawn: central claims against families, one coloured cell each."""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle

from ..paper.central import CENTRAL_IDS
from ..report.answer_grid import FAMILY_NAMES, SHORT, Cell
from ..report.inference import MIXED
from .style import COLUMN_IN, _style, finish

#: the colour and mark of each family verdict (colour-blind safe: blue holds, orange does not, and marks besides)
LOOK: dict[str, tuple[str, str]] = {
    "supported": ("#4c9be8", "\u2714"), "not supported": ("#f0a04b", "\u2718"), MIXED: ("#c9b3e6", "\u00b1"),
    "not diagnostic": ("#d9d9d9", "\u2248"), "inconclusive": ("#f2f2f2", "?"),
}


def _label(cell: Cell, mark: str) -> str:
    """Our value, two significant digits, where one model decides the cell and the value is a finite number;
    else the verdict's mark (the colour says the verdict either way)."""
    try:
        value = float(cell.value)
    except ValueError:
        return mark
    if len(cell.models) > 1 or value != value or abs(value) == float("inf"):
        return mark
    return f"{value:.2g}" if value == 0 or abs(value) >= 0.01 else "\u22480"  # the table below has every digit


def verdict_grid(cells: dict[tuple[str, str], Cell]) -> Figure | None:
    """One row per central claim tested here, one column per family; each cell coloured by the family's verdict,
    with our value where one model decides it (else the verdict's mark). ``None`` when nothing was tested."""
    if not cells:
        return None
    _style()
    claims = [cid for cid in CENTRAL_IDS if any(c == cid for c, _ in cells)]
    families = [f for f in FAMILY_NAMES if any(fam == f for _, fam in cells)]
    families += sorted({fam for _, fam in cells} - set(families))
    fig, ax = plt.subplots(figsize=(COLUMN_IN, 0.34 * len(claims) + 1.6), layout="constrained")
    for i, cid in enumerate(claims):
        for j, fam in enumerate(families):
            cell = cells.get((cid, fam))
            if cell is None:
                ax.add_patch(Rectangle((j, i), 1, 1, facecolor="white", edgecolor="#e6e6e6"))
                continue
            colour, mark = LOOK.get(cell.status, ("#ffffff", ""))
            ax.add_patch(Rectangle((j, i), 1, 1, facecolor=colour, edgecolor="white", linewidth=1.5))
            ax.text(j + 0.5, i + 0.5, _label(cell, mark), ha="center", va="center", fontsize=9)
    ax.set_xlim(0, len(families))
    ax.set_ylim(len(claims), 0)
    ax.set_xticks([j + 0.5 for j in range(len(families))], [FAMILY_NAMES.get(f, f) for f in families],
                  rotation=40, ha="right", fontsize=9)
    ax.set_yticks([i + 0.5 for i in range(len(claims))], [SHORT.get(c, c) for c in claims], fontsize=9)
    ax.tick_params(length=0)
    ax.grid(False)
    for side in ax.spines.values():
        side.set_visible(False)
    handles = [Patch(facecolor=c, label=f"{m} {s}") for s, (c, m) in LOOK.items()]
    fig.legend(handles=handles, loc="outside lower center", ncol=3, fontsize=9, frameon=False)
    return finish(fig)
