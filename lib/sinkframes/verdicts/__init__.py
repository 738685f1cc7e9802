"""The verdict layer: measures of each claim's quantity, fixed rules, nulls, and verdicts as data.

``evaluate(results)`` gives, for every analysis result, both verdicts (``reproduced`` with the
faithful computation, ``holds`` with the corrected one) of every claim of ``paper.claims`` that
concerns the model's family or frame type and that the analysis measures; ``evaluate_comparisons(results,
page)`` those of the claims that compare models (``verdicts.compare``), once for the group.

Each analysis module declares its own measures; ``MEASURES`` and ``NULLS`` read from this package come with
every analysis's registered (:func:`measures.registered`).
"""

from typing import Any

from . import measures
from .compare import COMPARISONS, evaluate_comparisons
from .evaluate import claims_of, evaluate, evaluate_model
from .measures import Measure, boot, registered
from .nulls import null_result, uniform_attention
from .rules import RULES, apply, decide
from .store import PageVerdicts, load_all, model_records, save
from .verdict import (
    INCONCLUSIVE,
    NOT_DIAGNOSTIC,
    NOT_EVALUATED,
    NOT_SUPPORTED,
    QUESTIONS,
    STATUSES,
    SUPPORTED,
    Estimate,
    Verdict,
    verdict_lines,
    verdict_table,
)

__all__ = [
    "COMPARISONS",
    "INCONCLUSIVE",
    "MEASURES",
    "NOT_DIAGNOSTIC",
    "NOT_EVALUATED",
    "NOT_SUPPORTED",
    "NULLS",
    "QUESTIONS",
    "RULES",
    "STATUSES",
    "SUPPORTED",
    "Estimate",
    "Measure",
    "PageVerdicts",
    "Verdict",
    "apply",
    "boot",
    "claims_of",
    "decide",
    "evaluate",
    "evaluate_comparisons",
    "evaluate_model",
    "load_all",
    "model_records",
    "null_result",
    "registered",
    "save",
    "uniform_attention",
    "verdict_lines",
    "verdict_table",
]


def __getattr__(name: str) -> Any:
    """``MEASURES`` and ``NULLS`` with every analysis's measures registered (the analysis modules import this
    package, so it cannot import them when it loads)."""
    if name in ("MEASURES", "NULLS"):
        registered()
        return getattr(measures, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
