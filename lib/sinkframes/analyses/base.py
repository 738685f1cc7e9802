"""The one result type every analysis returns, per model.

A ``ModelResult`` holds what one analysis found for one model on one sentence set:

- ``record``: the model record (``models.ModelRecord.to_dict()``);
- ``layers``: the per-layer table (one row per layer, a ``layer`` column), or an empty frame;
- ``heads``: per-head arrays ``name -> [layer, head]`` (means over sentences);
- ``samples``: per-sentence arrays ``name -> [sample, ...]``;
- ``data``: what else the analysis keeps (evidence behind a verdict, tokens, sub-results);
- ``params``: the analysis parameters and run options it ran with;
- ``from_cache``: whether the heavy pass came from the on-disk cache.

``result.tables(mode)`` returns the analysis' named tables under ``"faithful"`` (the official
computation) or ``"corrected"``; each analysis module registers its table builder once with
:func:`register_tables`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..types import Mode, check_mode

TableBuilder = Callable[["ModelResult", Mode], dict[str, pd.DataFrame]]
_TABLES: dict[str, TableBuilder] = {}


def register_tables(analysis: str) -> Callable[[TableBuilder], TableBuilder]:
    """Decorator: ``builder(result, mode) -> {name: table}`` becomes ``ModelResult.tables`` for ``analysis``."""

    def deco(builder: TableBuilder) -> TableBuilder:
        _TABLES[analysis] = builder
        return builder

    return deco


@dataclass
class ModelResult:
    """What one analysis found for one model on one sentence set (see the module docstring)."""

    analysis: str
    record: dict[str, Any]
    n_sentences: int
    layers: pd.DataFrame = field(default_factory=pd.DataFrame)  # one row per layer
    heads: dict[str, np.ndarray] = field(default_factory=dict)  # name -> [layer, head]
    samples: dict[str, np.ndarray] = field(default_factory=dict)  # name -> [sample, ...]
    data: dict[str, Any] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    from_cache: bool = False

    @property
    def ref(self) -> str:
        return str(self.record["ref"])

    @property
    def n_layers(self) -> int:
        return int(self.record["n_layers"])

    @property
    def family(self) -> str:
        return str(self.record["family"])

    @property
    def causal(self) -> bool:
        return bool(self.record["causal"])

    def tables(self, mode: Mode = "corrected") -> dict[str, pd.DataFrame]:
        """The analysis' named tables under ``mode`` (``"faithful"`` or ``"corrected"``)."""
        mode = check_mode(mode)
        if self.analysis not in _TABLES:
            raise ValueError(f"no tables registered for analysis {self.analysis!r}")
        return _TABLES[self.analysis](self, mode)
