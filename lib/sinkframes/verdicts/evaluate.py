"""Claims x models -> verdicts: both questions, with every null beside the model."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import asdict
from typing import Any

from ..paper import Claim, claims_for
from ..paper.claims import is_rotary
from ..results import TWIN, ModelResult, spec_of
from ..types import Mode
from .measures import NULLS, Measure, layer_order_null, registered
from .nulls import null_result
from .rules import NullCheck, apply, decide_all
from .verdict import NOT_APPLICABLE, NOT_DIAGNOSTIC, NOT_EVALUATED, QUESTIONS, Estimate, Verdict

#: what each kind of null is called on the page
NULL_NAMES = {"attention": "uniform attention", "uniform_graph": "uniform attention, thresholded",
              "layer_order": "layers in random order", "random_twin": "random-initialized twin"}


def claims_of(result: ModelResult) -> list[Claim]:
    """The testable claims about ``result``'s family and frame type that its analysis measures."""
    rec = result.record
    return [
        c for c in claims_for(str(rec["family"]), str(rec["paper_frame"]), bool(rec["causal"]), rotary=is_rotary(rec))
        if c.testable and not c.compares and registered()[c.measure].analysis == result.analysis
    ]


def _null_name(m: Measure, kind: str) -> str:
    if kind == "attention":
        return spec_of(m.analysis).attention_null_name
    return NULL_NAMES.get(kind, kind.replace("_", " "))


def _tolerance_note(claim: Claim, est: Estimate, status: str) -> str:
    """Says when a verdict hangs on the tolerance the book adds to the paper's printed value."""
    if not claim.bare:
        return ""
    bare, _ = apply(claim.rule, est, claim.bare)
    if bare == status:
        return ""
    return f"hangs on the tolerance ({claim.tolerance}): against the printed value alone it is {bare}"


class _Nulls:
    """The nulls of one result, each structureless input built once, when a claim first needs it."""

    def __init__(self, result: ModelResult) -> None:
        self.result = result
        self.cache: dict[str, ModelResult] = {}

    def _input(self, kind: str) -> ModelResult:
        if kind not in self.cache:
            self.cache[kind] = null_result(self.result, graph="uniform" if kind == "uniform_graph" else "dense")
        return self.cache[kind]

    def run(self, m: Measure, kind: str, mode: Mode) -> Estimate | None:
        """The measure ``m`` on the null ``kind``: uniform attention (or its thresholded graph), the layers in
        random orders, the random-initialized twin the analysis ran (``random_twin``), or a named null."""
        if kind in ("attention", "uniform_graph"):
            return m.fn(self._input(kind), mode)
        if kind == "layer_order":
            return layer_order_null(m.name, self.result, mode)
        if kind == "random_twin":  # the same measure on the twin's own result, when the analysis ran one
            twin = self.result.data.get(TWIN)
            return None if twin is None else m.fn(twin, mode)
        fn: Callable[[ModelResult, Mode], Any] = NULLS[kind]
        return fn(self.result, mode)


def _verdict(claim: Claim, m: Measure, result: ModelResult, question: str, est: Estimate,
             nulls: list[tuple[str, Estimate | None]]) -> Verdict:
    """One verdict: the rule on the model's estimate and on every null, with the reasons a reader needs."""
    status, rows, test = decide_all(claim.rule, claim.params, est, nulls)
    reasons = [same_as_null(rows)] if status == NOT_DIAGNOSTIC else []
    note = _tolerance_note(claim, est, status)
    if note:
        reasons.append(note)
    first = deciding_null(rows)
    return Verdict(claim.id, result.ref, question, status, est, first.estimate if first else None,
                   first.meets if first else "", "; ".join(reasons), test, {"nulls": null_rows(rows)})


def deciding_null(rows: list[NullCheck]) -> NullCheck | None:
    """The null a verdict names first: one the model cannot be told from, else the first."""
    same = [r for r in rows if r.differs is False]
    return same[0] if same else (rows[0] if rows else None)


def same_as_null(rows: list[NullCheck]) -> str:
    """Why a verdict that meets the claim is not diagnostic: the nulls it cannot be told from, with the test."""
    same = [r for r in rows if r.differs is False]
    return "not distinguishable from " + "; ".join(f"{r.name} ({r.how})" for r in same)


def null_rows(rows: list[NullCheck]) -> list[dict[str, Any]]:
    """The nulls as stored beside a verdict: name, estimate, what the rule says of it, and the difference test."""
    return [{"name": r.name, "estimate": asdict(r.estimate), "status": r.meets, "differs": r.differs,
             "difference": r.how} for r in rows]


def evaluate_model(result: ModelResult, only: Collection[str] | None = None) -> list[Verdict]:
    """Both verdicts for every claim ``result`` can test (each null computed once, when needed); ``only``: just
    the claims with these ids."""
    nulls = _Nulls(result)
    out = []
    for claim in claims_of(result):
        if only is not None and claim.id not in only:
            continue
        m = registered()[claim.measure]
        for question, mode in QUESTIONS.items():
            est = m.fn(result, mode)  # type: ignore[arg-type]
            if est is None:
                if mode == "faithful":
                    continue  # no official computation: the scorecard says so once, not as a verdict
                out.append(Verdict(claim.id, result.ref, question, NOT_EVALUATED,
                                   reason="no data for this quantity in this run"))
                continue
            if est.interval == NOT_APPLICABLE:
                out.append(Verdict(claim.id, result.ref, question, NOT_EVALUATED, estimate=est, reason=est.detail))
                continue
            rows = [(_null_name(m, k), nulls.run(m, k, mode)) for k in (m.null, *m.extra_nulls)]  # type: ignore[arg-type]
            out.append(_verdict(claim, m, result, question, est, rows))
    return out


def evaluate(results: Sequence[ModelResult], only: Collection[str] | None = None) -> list[Verdict]:
    """:func:`evaluate_model` for each result, in order (``only``: just the claims with these ids)."""
    return [v for r in results for v in evaluate_model(r, only)]
