"""Verdicts as data: the estimate behind a decision, the null's, and the status both give.

Two questions per claim and model: **reproduced?** (the authors' computation, ``faithful`` mode) and
**holds?** (the corrected computation). The status vocabulary is :data:`STATUSES`; one function
(:func:`verdict_table`) renders any list of verdicts.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import pandas as pd

SUPPORTED, NOT_SUPPORTED, NOT_DIAGNOSTIC = "supported", "not supported", "not diagnostic"
INCONCLUSIVE, NOT_EVALUATED = "inconclusive", "not evaluated"
#: every status a verdict can take, in the order the scorecard counts them
STATUSES = (SUPPORTED, NOT_SUPPORTED, NOT_DIAGNOSTIC, INCONCLUSIVE, NOT_EVALUATED)
#: the two questions, and the mode that answers each
QUESTIONS = {"reproduced": "faithful", "holds": "corrected"}


#: the ``interval`` of an estimate that says the claim does not apply to this subject (:func:`not_applicable`)
NOT_APPLICABLE = "not applicable"


def not_applicable(reason: str) -> Estimate:
    """What a measure returns when the claim does not apply to the subject (a decoder without a start token for a
    claim about start tokens): the verdict is *not evaluated*, with ``reason``."""
    return Estimate(math.nan, interval=NOT_APPLICABLE, detail=reason, undetermined=True)


@dataclass(frozen=True)
class Estimate:
    """A measured quantity with the interval a rule decides on.

    ``value`` is a number or a category; ``low``/``high`` bound it (``interval`` says what they are:
    a 95 % bootstrap interval over sentences, a range over layers, or none for a population value);
    ``undetermined`` marks an estimate the data cannot pin down (a rule then says inconclusive).
    ``parts`` holds, for a claim about every layer, region or threshold, one ``[label, value, low, high]``
    per part, each with its own interval; the part-wise rules (``every_*``) decide on them. ``permutation`` holds,
    for a permutation null, the one-sided p-values of the model's own value (``p_greater``, ``p_less``), the
    smallest p any order could reach (``reachable_greater``, ``reachable_less``), the number of ``orders`` and
    whether they were all enumerated (``exact``).
    """

    value: float | str
    low: float | None = None
    high: float | None = None
    n: int = 0
    interval: str = ""
    detail: str = ""
    undetermined: bool = False
    parts: list[list[Any]] = field(default_factory=list)
    permutation: dict[str, float] = field(default_factory=dict)

    def part_estimates(self) -> list[tuple[str, Estimate]]:
        """``(label, Estimate)`` per part; NaN bounds leave a part undetermined."""
        out = []
        for label, value, low, high in self.parts:
            bad = any(x is None or (isinstance(x, float) and math.isnan(x)) for x in (value, low, high))
            out.append((str(label), Estimate(value, low, high, self.n, self.interval, undetermined=bad)))
        return out

    def bounds(self) -> tuple[float, float]:
        """``(low, high)``; a point value without interval is its own bound."""
        v = float(self.value) if not isinstance(self.value, str) else math.nan
        lo = v if self.low is None else float(self.low)
        hi = v if self.high is None else float(self.high)
        return lo, hi

    def text(self) -> str:
        """``value [low, high]`` with three significant decimals, or the category."""
        if isinstance(self.value, str):
            return self.value
        if _num(self.value) == "not computable":
            return "not computable"
        if self.low is None or self.high is None or (self.low == self.high == self.value):
            return _num(self.value)
        return f"{_num(self.value)} [{_num(self.low)}, {_num(self.high)}]"

    def parts_text(self) -> str:
        """``label: value [low, high]`` per part, ``; ``-separated ('' without parts)."""
        return "; ".join(f"{label}: {e.text()}" for label, e in self.part_estimates())


def _num(x: float | None) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "not computable"
    return f"{x:.3g}" if abs(x) < 1000 else f"{x:.0f}"


@dataclass(frozen=True)
class Verdict:
    """One claim, one model, one question: the status and everything behind it."""

    claim: str
    model: str
    question: str  # "reproduced" or "holds"
    status: str
    estimate: Estimate | None = None
    null: Estimate | None = None
    null_status: str = ""
    reason: str = ""
    test: str = ""  # the rule as applied, e.g. "95 % interval above 0"
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"unknown status {self.status!r}; use one of {STATUSES}")
        if self.question not in QUESTIONS:
            raise ValueError(f"unknown question {self.question!r}; use one of {tuple(QUESTIONS)}")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Verdict:
        est = Estimate(**d["estimate"]) if d.get("estimate") else None
        null = Estimate(**d["null"]) if d.get("null") else None
        return cls(**{**d, "estimate": est, "null": null})


def null_text(v: Verdict) -> str:
    """Every null run beside the model, with what the rule said of each (the deciding one first)."""
    nulls = v.extra.get("nulls") or []
    if not nulls:
        return f"{v.null.text()} ({v.null_status})" if v.null is not None else ""
    return "; ".join(f"{n['name']}: {Estimate(**n['estimate']).text()} ({_null_said(n)})" for n in nulls)


def _null_said(n: dict[str, Any]) -> str:
    """What the rule and the difference test said of one null (older verdicts hold the rule's word only)."""
    if "differs" not in n:
        return str(n["status"])
    word = {True: "differs", False: "not distinguishable", None: "not testable"}[n["differs"]]
    return f"rule on the null: {n['status']}; the model {word}: {n['difference']}"


def verdict_table(verdicts: list[Verdict]) -> pd.DataFrame:
    """One row per claim and model, the two questions side by side (the one rendering of verdicts)."""
    from ..paper import CLAIMS_BY_ID

    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for v in verdicts:
        c = CLAIMS_BY_ID[v.claim]
        row = rows.setdefault((v.claim, v.model), {
            "claim": v.claim, "model": v.model, "quantity": c.quantity, "paper": c.printed,
        })
        row[f"{v.question}?"] = v.status
        row[f"{v.question}: ours"] = (v.estimate.text() + (f" ({v.estimate.parts_text()})" if v.estimate.parts else "")
                                      if v.estimate else "")
        row[f"{v.question}: null"] = null_text(v)
        row[f"{v.question}: rule"] = v.test or v.reason
    cols = ["claim", "model", "quantity", "paper"]
    for q in QUESTIONS:
        cols += [f"{q}?", f"{q}: ours", f"{q}: null", f"{q}: rule"]
    return pd.DataFrame(list(rows.values())).reindex(columns=cols).fillna("")


def verdict_lines(verdicts: list[Verdict]) -> str:
    """Markdown bullets: per claim and model, both answers with the numbers behind them."""
    from ..paper import CLAIMS_BY_ID
    from ..paper.claims import PAPER

    by: dict[tuple[str, str], dict[str, Verdict]] = {}
    for v in verdicts:
        by.setdefault((v.claim, v.model), {})[v.question] = v
    lines = []
    for (cid, model), qs in by.items():
        c = CLAIMS_BY_ID[cid]
        parts = []
        for q in QUESTIONS:
            found = qs.get(q)
            if found is None:
                continue
            v = found
            body = f"{q}? **{v.status}**"
            if v.estimate is not None:
                body += f": ours {v.estimate.text()}"
                if v.estimate.interval:
                    body += f" ({v.estimate.interval}, n = {v.estimate.n})"
                if v.estimate.parts:
                    body += f"; by part: {v.estimate.parts_text()}"
            if v.test:
                body += f"; rule: {v.test}"
            if v.null is not None:
                body += f"; null {null_text(v)}"
            if v.reason:
                body += f"; {v.reason}"
            parts.append(body)
        said = "paper" if c.source == PAPER else f"arXiv {c.source}"
        lines.append(f"- `{model}`, {c.id} ({c.quantity}; {said}: {c.printed}): " + ". ".join(parts) + ".")
    return "\n".join(lines)
