"""Claims x models -> verdicts: both questions, with the null beside the model."""

from __future__ import annotations

from collections.abc import Sequence

from ..analyses.base import ModelResult
from ..paper import Claim, claims_for
from .measures import MEASURES, NULLS
from .nulls import null_result
from .rules import decide
from .verdict import NOT_EVALUATED, QUESTIONS, Estimate, Verdict


def claims_of(result: ModelResult) -> list[Claim]:
    """The testable claims about ``result``'s family and frame type that its analysis measures."""
    rec = result.record
    return [
        c for c in claims_for(str(rec["family"]), str(rec["paper_frame"]), bool(rec["causal"]))
        if c.testable and MEASURES[c.measure].analysis == result.analysis
    ]


def evaluate_model(result: ModelResult) -> list[Verdict]:
    """Both verdicts for every claim ``result`` can test (its null computed once, when needed)."""
    null_cache: list[ModelResult] = []

    def attention_null() -> ModelResult:
        if not null_cache:
            null_cache.append(null_result(result))
        return null_cache[0]

    out = []
    for claim in claims_of(result):
        m = MEASURES[claim.measure]
        for question, mode in QUESTIONS.items():
            est = m.fn(result, mode)  # type: ignore[arg-type]
            if est is None:
                reason = ("no official notebook computes this quantity" if mode == "faithful"
                          else "no data for this quantity in this run")
                out.append(Verdict(claim.id, result.ref, question, NOT_EVALUATED, reason=reason))
                continue
            null: Estimate | None
            null = m.fn(attention_null(), mode) if m.null == "attention" else NULLS[m.null](result, mode)  # type: ignore[arg-type]
            status, null_status, test = decide(claim.rule, claim.params, est, null)
            reason = "the null meets the claim too" if null_status == "supported" else ""
            out.append(Verdict(claim.id, result.ref, question, status, est, null, null_status, reason, test))
    return out


def evaluate(results: Sequence[ModelResult]) -> list[Verdict]:
    """:func:`evaluate_model` for each result, in order."""
    return [v for r in results for v in evaluate_model(r)]
