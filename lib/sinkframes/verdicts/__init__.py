"""The verdict layer: measures of each claim's quantity, fixed rules, nulls, and verdicts as data.

``evaluate(results)`` gives, for every analysis result, both verdicts (``reproduced`` with the
faithful computation, ``holds`` with the corrected one) of every claim of ``paper.claims`` that
concerns the model's family or frame type and that the analysis measures; ``evaluate_comparisons(results,
page)`` those of the claims that compare models (``verdicts.compare``), once for the group.
"""

from . import (
    controlled_measures,  # noqa: F401  (registers the controlled-grid measures)
    position_measures,  # noqa: F401  (registers the position-intervention measures)
)
from .compare import COMPARISONS, evaluate_comparisons
from .evaluate import claims_of, evaluate, evaluate_model
from .measures import MEASURES, NULLS, Measure, boot
from .nulls import null_result, uniform_attention
from .rules import RULES, apply, decide
from .store import PageVerdicts, load_all, save
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
    "null_result",
    "save",
    "uniform_attention",
    "verdict_lines",
    "verdict_table",
]
