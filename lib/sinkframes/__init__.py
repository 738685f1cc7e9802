"""sinkframes: attention sinks as reference frames, measured on real models.

The library behind the executable book reproducing "What are you sinking? A geometric approach
on attention sink" (Ruscio, Nanni, Silvestri, arXiv 2508.02546). Data path: sentences (``corpus``)
-> model (``models``) -> one forward pass (``extraction``) -> on-disk cache (``cache``) -> metrics
-> statistics (``stats``) -> analyses (one ``ModelResult`` per model) -> figures and report.

The public API the book's templates use:

- ``book.page.setup(...)``: sentences, ``RunOptions`` and the provenance line of a page;
- ``analyses.<page>.analyse(models, texts, opts, ...)``: one ``ModelResult`` per model, with
  ``result.tables(mode)`` for ``mode`` in ``"faithful"`` / ``"corrected"``;
- ``figures.<page>``: figures of those results; ``report`` and ``report.<page>``: provenance,
  model notes and the text that states each page's verdicts;
- ``paper``: what the paper and the official notebooks report; ``extraction``: attention itself.

Subpackages load on first use (``sinkframes.analyses`` ...), so importing ``sinkframes`` is cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

from ._version import __version__
from .types import MODES, Mode, RunOptions

_SUBMODULES = ("analyses", "book", "corpus", "extraction", "figures", "models", "paper", "report", "stats")

__all__ = ["MODES", "Mode", "RunOptions", "__version__", *_SUBMODULES]


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'sinkframes' has no attribute {name!r}")
