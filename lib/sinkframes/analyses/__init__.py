"""Chapter-level analyses: each turns models and sentences into tables a page can show.

Each analysis module registers itself once, at import, as a ``results.Analysis`` spec; :func:`load_all` imports
every module of this package, so the registry (``results.analyses()``) holds them all without a list of names.
"""

from __future__ import annotations

import importlib
import pkgutil


def load_all() -> None:
    """Import every module of this package (each registers its analysis; a second call costs nothing)."""
    for info in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{info.name}")
