"""Claims read twice: a section page decides a claim for the scorecard, and a family appendix reads it again on
its own sentences. The scorecard counts the section page's verdict once and sets the appendix's reading beside it
here, saying where the two differ, so that a reader who meets both pages meets one account of them."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from ..verdicts import PageVerdicts, Verdict
from ..verdicts.verdict import INCONCLUSIVE, NOT_EVALUATED

#: statuses that are not a decision: a reading that differs from a decision only by being one of these is not a
#: contradiction, and is counted apart
UNDECIDED = (INCONCLUSIVE, NOT_EVALUATED)


@dataclass(frozen=True)
class Pair:
    """One claim, model and question: the verdict a section page decided and an appendix's reading of it."""

    decided: Verdict
    decided_on: str  # page id
    decided_n: int | None
    reading: Verdict
    read_on: str  # page id
    read_n: int | None
    same_draw: bool = False  # the two pages read the same sentences (same set, seed and count): one computation
    nested: bool = False  # same set and seed, other counts: the smaller draw is the start of the larger one


    @property
    def agreement(self) -> str:
        """``"agree"``, ``"differ"`` (two decisions that are not the same) or ``"one undecided"``."""
        if self.decided.status == self.reading.status:
            return "agree"
        if self.decided.status in UNDECIDED or self.reading.status in UNDECIDED:
            return "one undecided"
        return "differ"


def pairs(saved: dict[str, PageVerdicts]) -> list[Pair]:
    """Every appendix reading that a section page's saved verdict answers, in page and claim order."""
    decided = {(v.claim, v.model, v.question): (pid, v) for pid, pv in saved.items() for v in pv.verdicts}
    out = []
    for pid, pv in saved.items():
        for r in pv.readings:
            hit = decided.get((r.claim, r.model, r.question))
            if hit is None or hit[0] == pid:
                continue
            on, v = hit
            a, b = _draw(saved[on]), _draw(pv)
            nested = a[:2] == b[:2] and a != b and a[1] is not None  # a known seed: its smaller draw starts the larger
            out.append(Pair(v, on, _n(saved[on]), r, pid, _n(pv), a == b, nested))
    return out


def _n(pv: PageVerdicts) -> int | None:
    n = pv.inputs.get("n_sentences")
    return int(n) if isinstance(n, (int, float)) else None


def _draw(pv: PageVerdicts) -> tuple[object, ...]:
    """What decides a page's sentences: the set, the seed and how many (two pages alike read the same ones)."""
    return tuple(pv.inputs.get(k) for k in ("dataset", "seed", "n_sentences"))


def summary(found: list[Pair]) -> str:
    """One paragraph: the readings on the section page's own sentences (one computation twice), and those on part
    of them or on other sentences, how many agree with the section page's verdict and which differ."""
    if not found:
        return ("No appendix read a claim that a section page decides, so every claim here was read once "
                "(run the family appendices to see them read twice).")
    holds = [p for p in found if p.decided.question == "holds"]
    same = [p for p in holds if p.same_draw]
    other = [p for p in holds if not p.same_draw]
    text = (f"An appendix read {len(holds)} *holds?* verdicts of the section pages again. {len(same)} of them on the "
            "very sentences the section page read (the same set, seed and count): one computation made twice, "
            f"and {sum(p.agreement == 'agree' for p in same)} give the same verdict.")
    if not other:
        return text + " None was read on another draw."
    differ = [p for p in other if p.agreement == "differ"]
    where = ("on part of them (the same set and seed, fewer sentences: a seed's smaller draw is the start of its "
             "larger one, so these are not independent draws)" if all(p.nested for p in other)
             else "on other sentences")
    text += (f" {len(other)} {where}: "
             f"{sum(p.agreement == 'agree' for p in other)} agree with the section page's verdict, {len(differ)} "
             f"differ, and in {sum(p.agreement == 'one undecided' for p in other)} one of the two is undecided. "
             "The scorecard counts the section page's verdict")
    if differ:
        text += "; they differ on " + "; ".join(
            f"`{p.decided.claim}` on `{p.decided.model}` ({p.decided.status} on {p.decided_on}, {p.reading.status} on "
            f"{p.read_on})" for p in differ)
    return text + "."


def table(found: list[Pair]) -> pd.DataFrame:
    """One row per pair not read on the same sentences: claim, model, question, each page's status and estimate
    with its sentence count (the pairs read on the same sentences are counted in :func:`summary`)."""
    rows = []
    for p in (p for p in found if not p.same_draw):
        rows.append({"claim": p.decided.claim, "model": p.decided.model, "question": p.decided.question,
                     "section page": f"{p.decided_on} ({p.decided_n or '?'} sentences)",
                     "its verdict": _status(p.decided),
                     "appendix": f"{p.read_on} ({p.read_n or '?'} sentences)",
                     "appendix's reading": _status(p.reading),
                     "": p.agreement})
    return pd.DataFrame(rows)


def _status(v: Verdict) -> str:
    return f"{v.status}: {v.estimate.text()}" if v.estimate is not None else v.status
