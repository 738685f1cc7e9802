"""One style for every figure of the book: theme, resolution, token labels."""

from __future__ import annotations

import matplotlib.pyplot as plt
import seaborn as sns

DPI = 80


def _style() -> None:
    """Apply the book's seaborn theme and figure resolution (every figure function calls it first)."""
    sns.set_theme(context="notebook", style="whitegrid", palette="colorblind")
    plt.rcParams["figure.dpi"] = DPI
    plt.rcParams["savefig.dpi"] = DPI


def _short(tok: str, width: int = 10) -> str:
    """A token as an axis label: word-start markers as ``_``, newlines escaped, cut to ``width`` characters."""
    tok = tok.replace("Ġ", "_").replace("▁", "_").replace("\n", "\\n")
    return tok if len(tok) <= width else tok[: width - 1] + "~"
