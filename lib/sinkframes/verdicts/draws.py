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
first token's share, star-likeness) on both draws. The passes of chapters 5 and 8 (sink removal, Fisher, the
counterfactual encodings) are the book's most costly, so their headline claims are decided instead on the two
disjoint halves of the page's own sentences (``results.split_halves``: each a random draw of half as many),
by :func:`across_halves`: the verdict on all the sentences stands only where the halves do not decide it two ways.
Those of the trained grids rest on their seeds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, replace

from ..paper.central import CENTRAL_IDS
from .verdict import INCONCLUSIVE, NOT_DIAGNOSTIC, NOT_SUPPORTED, SUPPORTED, Verdict

#: the statuses that count as a decision, for comparing two draws
DECIDED = (SUPPORTED, NOT_SUPPORTED, NOT_DIAGNOSTIC)
UNSTABLE = "unstable between two disjoint sentence draws"
UNSTABLE_HALVES = "unstable between the two disjoint halves of the page's sentences"


def headline_claims() -> set[str]:
    """The claims of the scorecard's "What this book finds" lines (``paper.central.CENTRAL``)."""
    return set(CENTRAL_IDS)


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


def across_halves(whole: Sequence[Verdict], first: Sequence[Verdict], second: Sequence[Verdict]) -> list[Verdict]:
    """``whole`` (the verdicts on all the page's sentences) with each verdict that both halves also decide checked
    against them: where the halves decide it two different ways it is **inconclusive** ("unstable between the two
    disjoint halves"); where one half cannot decide, the verdict stands and says so; both halves' estimates are
    kept. Verdicts the halves do not hold are kept as they are."""
    a = {(v.claim, v.model, v.question): v for v in first}
    b = {(v.claim, v.model, v.question): v for v in second}
    out = []
    for v in whole:
        key = (v.claim, v.model, v.question)
        h1, h2 = a.get(key), b.get(key)
        if h1 is None or h2 is None:
            out.append(v)
            continue
        draws = [{"draw": f"{name} half", "status": h.status, "estimate": asdict(h.estimate) if h.estimate else None}
                 for name, h in (("first", h1), ("second", h2))]
        extra = {**v.extra, "draws": draws}
        if h1.status in DECIDED and h2.status in DECIDED and h1.status != h2.status and v.status in DECIDED:
            reason = f"{UNSTABLE_HALVES} (first: {h1.status}; second: {h2.status})"
            out.append(replace(v, status=INCONCLUSIVE, reason="; ".join(x for x in (reason, v.reason) if x),
                               extra=extra))
        elif v.status in DECIDED and (h1.status not in DECIDED or h2.status not in DECIDED):
            undecided = ", ".join(f"{name}: {h.status}" for name, h in (("first", h1), ("second", h2))
                                  if h.status not in DECIDED)
            note = f"a half of the sentences alone did not decide it ({undecided})"
            out.append(replace(v, reason="; ".join(x for x in (v.reason, note) if x), extra=extra))
        else:
            out.append(replace(v, extra=extra))
    return out
