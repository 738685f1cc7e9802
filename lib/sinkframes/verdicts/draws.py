"""The headline claims decided on two disjoint sentence draws: a verdict that changes between them says so.

A page that decides a headline claim (one of the lines of the scorecard's "What this book finds") runs its analysis
again on a second draw of as many sentences, disjoint from the first (``corpus.disjoint_draw``), and each headline
verdict is then the first draw's only where the second agrees with it:

- both draws decided alike: the verdict stands, with both draws' estimates kept;
- both decided (supported, not supported or not diagnostic) but differently: **inconclusive**, "unstable between
  two disjoint sentence draws", with both statuses;
- the second draw could not decide (inconclusive, not evaluated): the first draw's verdict stands and says that the
  second did not confirm it.

Other claims keep their first-draw verdict. Chapters 1 and 4 decide their headline claims (the frame types, the
first token's share, star-likeness) on both draws; the headline claims of chapters 5 and 8 (sink removal, Fisher,
the counterfactual encodings) rest on one draw, their passes being the book's most costly, and those of the trained
grids rest on their seeds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, replace

from .verdict import INCONCLUSIVE, NOT_DIAGNOSTIC, NOT_SUPPORTED, SUPPORTED, Verdict

#: the statuses that count as a decision, for comparing two draws
DECIDED = (SUPPORTED, NOT_SUPPORTED, NOT_DIAGNOSTIC)
UNSTABLE = "unstable between two disjoint sentence draws"


def headline_claims() -> set[str]:
    """The claims of the scorecard's "What this book finds" lines (``report.scorecard.CENTRAL``)."""
    from ..report.scorecard import CENTRAL

    return {cid for _, ids in CENTRAL for cid in ids}


def headline_only(found: Sequence[Verdict]) -> list[Verdict]:
    """The verdicts of ``found`` on headline claims."""
    keep = headline_claims()
    return [v for v in found if v.claim in keep]


def across_draws(first: Sequence[Verdict], second: Sequence[Verdict]) -> list[Verdict]:
    """``first`` with each verdict that ``second`` (the same claims on a disjoint draw) also decides combined by the
    rules of the module docstring; verdicts ``second`` does not hold are kept as they are."""
    again = {(v.claim, v.model, v.question): v for v in second}
    out = []
    for v in first:
        w = again.get((v.claim, v.model, v.question))
        if w is None:
            out.append(v)
            continue
        draws = [{"draw": "first", "status": v.status, "estimate": asdict(v.estimate) if v.estimate else None},
                 {"draw": "second (disjoint)", "status": w.status,
                  "estimate": asdict(w.estimate) if w.estimate else None}]
        extra = {**v.extra, "draws": draws}
        if v.status in DECIDED and w.status in DECIDED and v.status != w.status:
            reason = f"{UNSTABLE} (first: {v.status}; second: {w.status})"
            out.append(replace(v, status=INCONCLUSIVE, reason="; ".join(x for x in (reason, v.reason) if x),
                               extra=extra))
        elif v.status in DECIDED and w.status not in DECIDED:
            note = f"the second, disjoint draw did not confirm it ({w.status})"
            out.append(replace(v, reason="; ".join(x for x in (v.reason, note) if x), extra=extra))
        else:
            out.append(replace(v, extra=extra))
    return out
