"""Claims that compare models: frame types against each other, or the sizes of one family in order.

A comparison claim (``Claim.compares``) names the models it compares by role and a per-model measure of
:data:`measures.MEASURES`. Each model's estimate is measured as for a per-model claim; a comparison of
:data:`COMPARISONS` turns them into one :class:`Estimate` for the group, whose interval is built from the
models' intervals (never narrower than they allow), and the claim's rule (``verdicts.rules``) decides it.

Two kinds of null sit beside it, each the same comparison on inputs that can meet the claim without the
structure it is about: the models' own nulls (uniform attention of each model's shapes, its layers in random
order, its random-initialized twin where the page runs one), and the group labels permuted across the same
models (the median relabeling): if another grouping of these models (frame types) or another order of the
sizes meets the claim as well, the frame type or the size explains nothing.

A page evaluates the comparison claims it tests (``Claim.page``) on every model of the group it ran; a page
with too few says which models would evaluate the claim and under which profile.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any

import numpy as np

from ..paper import CLAIMS, Claim
from ..paper.claims import FRAME_BY_FAMILY
from ..results import ModelResult
from ..types import Mode
from .evaluate import _null_name, _Nulls, deciding_null, null_rows, same_as_null
from .measures import registered
from .rules import decide_all
from .verdict import NOT_DIAGNOSTIC, NOT_EVALUATED, QUESTIONS, Estimate, Verdict

#: one member of a comparison: ``(group, model ref, its estimate)``; groups are frame types or size labels
Member = tuple[str, str, Estimate]
ComparisonFn = Callable[[Sequence[Member]], Estimate]
COMPARISONS: dict[str, ComparisonFn] = {}
#: the profiles whose models a "not evaluated" verdict points to, in this order
PROFILES = ("paper", "colab", "offline", "offline-large")
#: relabelings of the frame-label null drawn at random (seeded) when there are more than this many
MAX_RELABELINGS = 500
PAIRS = "intervals of the pair: every model of one group against every model of the other"


def comparison(name: str) -> Callable[[ComparisonFn], ComparisonFn]:
    def deco(fn: ComparisonFn) -> ComparisonFn:
        COMPARISONS[name] = fn
        return fn

    return deco


def _bounds(e: Estimate) -> tuple[float, float]:
    """The estimate's bounds, NaN for an undetermined one (a comparison then cannot settle on it)."""
    if e.undetermined or isinstance(e.value, str):
        return math.nan, math.nan
    return e.bounds()


def _span(ests: Sequence[Estimate]) -> tuple[float, float, float]:
    """A group of models as one ``(mean value, lowest low, highest high)``: the group's claim must hold for
    each of its models, so its interval covers all of theirs."""
    lows, highs = zip(*(_bounds(e) for e in ests), strict=True)
    values = [float(e.value) if not isinstance(e.value, str) else math.nan for e in ests]
    return float(np.mean(values)), float(np.min(lows)), float(np.max(highs))  # NaN when any model is undetermined


def _step(a: tuple[float, float, float], b: tuple[float, float, float]) -> tuple[float, float, float]:
    """``b - a`` with the widest interval the two intervals allow: ``[low_b - high_a, high_b - low_a]``."""
    return b[0] - a[0], b[1] - a[2], b[2] - a[1]


def _estimate(value: float, low: float, high: float, parts: list[list[Any]], n: int, detail: str,
              interval: str) -> Estimate:
    bad = any(math.isnan(x) for x in (value, low, high))
    return Estimate(value, low, high, n=n, interval=interval, detail=detail, undetermined=bad, parts=parts)


def _groups(members: Sequence[Member]) -> dict[str, list[Estimate]]:
    out: dict[str, list[Estimate]] = {}
    for group, _, e in members:
        out.setdefault(group, []).append(e)
    return out


@comparison("compare.groups_differ")
def groups_differ(members: Sequence[Member]) -> Estimate:
    """Per pair of groups, the absolute difference of their values with an interval from the pair's
    intervals (zero when they overlap); the value is the smallest pair's. Two groups differ only where every
    model of one lies apart from every model of the other."""
    by = {g: _span(es) for g, es in _groups(members).items()}
    parts: list[list[Any]] = []
    for (ga, a), (gb, b) in itertools.combinations(by.items(), 2):
        d, lo, hi = _step(b, a)
        if math.isnan(lo) or math.isnan(hi):
            part = [math.nan, math.nan, math.nan]
        elif lo > 0:
            part = [abs(d), lo, hi]
        elif hi < 0:
            part = [abs(d), -hi, -lo]
        else:
            part = [abs(d), 0.0, max(abs(lo), abs(hi))]
        parts.append([f"{ga} vs {gb}", *part])
    if not parts:
        return Estimate(math.nan, math.nan, math.nan, undetermined=True, detail="fewer than two groups")
    value, low, high = (float(np.min([float(p[i]) for p in parts])) for i in (1, 2, 3))
    return _estimate(value, low, high, parts, len(members), "the smallest difference between two groups",
                     f"absolute difference per pair of groups; {PAIRS}")


def _adjacent(members: Sequence[Member]) -> list[list[Any]]:
    """One ``[label, difference, low, high]`` per step from one member (in order) to the next."""
    spans = [(g, _span([e])) for g, _, e in members]
    return [[f"{ga} -> {gb}", *_step(a, b)] for (ga, a), (gb, b) in itertools.pairwise(spans)]


@comparison("compare.end_to_end")
def last_minus_first(members: Sequence[Member]) -> Estimate:
    """The last member's value minus the first's (largest minus smallest size), its interval from their
    two intervals; each step between neighbours is a part, shown beside it."""
    if len(members) < 2:
        return Estimate(math.nan, math.nan, math.nan, undetermined=True, detail="fewer than two models")
    d, lo, hi = _step(_span([members[0][2]]), _span([members[-1][2]]))
    return _estimate(d, lo, hi, _adjacent(members), len(members),
                     f"{members[-1][0]} minus {members[0][0]}; each step shown",
                     "difference of the two models' intervals (low of one minus high of the other)")


@comparison("compare.rise_and_fall")
def rise_and_fall(members: Sequence[Member]) -> Estimate:
    """A non-monotonic order: the smaller of the largest rise and the largest fall between neighbours.
    Above 0 in its whole interval only when some step rises and some step falls with the two models'
    intervals apart in each; at or below 0 when every step goes one way, intervals apart."""
    steps = _adjacent(members)
    if len(steps) < 2:
        return Estimate(math.nan, math.nan, math.nan, undetermined=True, detail="fewer than three models")
    d = np.array([[float(x) for x in s[1:]] for s in steps])  # [step, (difference, low, high)]
    value = min(np.max(d[:, 0]), np.max(-d[:, 0]))
    low = min(np.max(d[:, 1]), np.max(-d[:, 2]))
    high = min(np.max(d[:, 2]), np.max(-d[:, 1]))
    return _estimate(float(value), float(low), float(high), steps, len(members),
                     "min(largest rise, largest fall) between neighbouring sizes",
                     "steps between neighbours, each from the two models' intervals")


# ----------------------------------------------------------------------------- who enters a comparison

_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([mb])(?![a-z])", re.IGNORECASE)


def size_of(ref: str) -> float | None:
    """Parameter count read off a hub id (``EleutherAI/pythia-2.8b`` -> 2.8e9), ``None`` when it names none."""
    m = _SIZE.search(ref.rsplit("/", 1)[-1])
    return None if m is None else float(m.group(1)) * (1e6 if m.group(2).lower() == "m" else 1e9)


def _family(result: ModelResult) -> str:
    from ..models.registry import paper_family_of

    return paper_family_of(result.ref) or str(result.record.get("family", ""))


def members_of(claim: Claim, results: Sequence[ModelResult]) -> list[tuple[str, ModelResult]]:
    """``(group, result)`` of every result that enters ``claim``'s comparison: by frame type, the results of
    those frame types in the groups' order; by size, the family's sizes (one result each), smallest first."""
    spec = claim.compares
    analysis = registered()[str(spec["measure"])].analysis
    mine = [r for r in results if r.analysis == analysis]
    if spec["by"] == "frame":
        groups = list(spec["groups"])
        frame = {r.ref: FRAME_BY_FAMILY.get(_family(r), str(r.record.get("paper_frame", ""))) for r in mine}
        return sorted(((frame[r.ref], r) for r in mine if frame[r.ref] in groups),
                      key=lambda gr: groups.index(gr[0]))
    sized: dict[float, ModelResult] = {}
    for r in mine:
        s = size_of(r.ref)
        if _family(r) == spec["family"] and s is not None:
            sized.setdefault(s, r)
    return [(_size_label(s), sized[s]) for s in sorted(sized)]


def _size_label(size: float) -> str:
    return f"{size / 1e9:g}B" if size >= 1e9 else f"{size / 1e6:g}M"


def enough(claim: Claim, members: Sequence[tuple[str, Any]]) -> bool:
    """Whether ``members`` (``(group, ...)``) can decide ``claim``: every group present (frame types), or at
    least ``min_models`` sizes."""
    spec = claim.compares
    if spec["by"] == "frame":
        return {g for g, _ in members} >= set(spec["groups"])
    return len(members) >= int(spec.get("min_models", 2))


def needs(claim: Claim) -> str:
    """What would evaluate ``claim``: the models of the first profile (:data:`PROFILES`) whose page runs enough
    of the group, and how to run it."""
    from ..manifest import reader_manifest
    from ..models.registry import paper_family_of

    manifest = reader_manifest()
    page = next((p for p in manifest.pages if p.id == claim.page), None) if manifest else None
    spec = claim.compares
    for profile in PROFILES:
        models = list((page.parameters.get(profile) or {}).get(str(spec.get("models_param", "models")), [])
                      if page else [])
        fam = {m: paper_family_of(m) or "" for m in models}
        if spec["by"] == "frame":
            found = [(FRAME_BY_FAMILY.get(fam[m], ""), m) for m in models if FRAME_BY_FAMILY.get(fam[m], "")]
        else:
            found = [(m, m) for m in models if fam[m] == spec["family"] and size_of(m) is not None]
        if found and enough(claim, found):
            return (f"needs models {', '.join(m for _, m in found)} (run with --profile {profile}: "
                    f"`python -m sinkframes_build build --profile {profile} --pages {claim.page}`)")
    return "needs models no profile of this book runs on one page"


# ----------------------------------------------------------------------------- the verdicts

def _measured(members: Sequence[tuple[str, ModelResult]], fn: Callable[[ModelResult], Estimate | None]
              ) -> list[Member] | None:
    """``fn`` on each member (``None`` when any member has no such estimate)."""
    out: list[Member] = []
    for group, r in members:
        e = fn(r)
        if e is None:
            return None
        out.append((group, r.ref, e))
    return out


def relabeled(members: Sequence[Member], compare: ComparisonFn, seed: int = 0) -> Estimate | None:
    """The comparison with the group labels permuted across the same models (group sizes kept): a permutation
    null. Its ``permutation`` holds the share of labellings (the models' own included) whose value reaches the
    own one, each way, and the smallest share any labelling could reach; its value and interval are the median
    relabeling's, by value, for display. ``None`` when no other labelling exists. With one model per group a
    frame type cannot be told from the model that stands for it, and the p-value says so (3 groups: at least 1/3).
    """
    labels = [g for g, _, _ in members]
    if len(members) <= 8:
        orders = sorted(set(itertools.permutations(labels)))
        exact = True
    else:
        rng = np.random.default_rng(seed)
        orders = sorted({tuple(labels[i] for i in rng.permutation(len(labels))) for _ in range(MAX_RELABELINGS)})
        exact = False
    if len(orders) < 2:
        return None

    def moved(order: tuple[str, ...]) -> list[Member]:
        return sorted(((g, ref, e) for g, (_, ref, e) in zip(order, members, strict=True)),
                      key=lambda m: labels.index(m[0]))

    own = float(compare(list(members)).value)
    ests = [compare(moved(o)) for o in orders if list(o) != labels]
    values = np.array([float(e.value) for e in ests] + ([own] if exact or tuple(labels) not in orders else []))
    ranked = sorted(ests, key=lambda e: -math.inf if math.isnan(float(e.value)) else float(e.value))
    mid = ranked[len(ranked) // 2]
    perm: dict[str, float] = {}
    if not math.isnan(own) and not np.isnan(values).any():
        tol = 1e-9 * max(1.0, abs(own))
        perm = {"p_greater": float(np.mean(values >= own - tol)), "p_less": float(np.mean(values <= own + tol)),
                "reachable_greater": float(np.mean(values >= values.max() - tol)),
                "reachable_less": float(np.mean(values <= values.min() + tol)),
                "orders": float(values.size), "exact": float(exact), "observed": own}
    return Estimate(mid.value, mid.low, mid.high, mid.n, mid.interval,
                    f"the median of {len(ests)} relabelings of the same models", mid.undetermined, mid.parts,
                    permutation=perm)


def _nulls(claim: Claim, members: Sequence[tuple[str, ModelResult]], mode: Mode, own: list[Member]
           ) -> list[tuple[str, Estimate | None]]:
    """The comparison on each kind of the per-model measure's null, and on the models relabeled."""
    m = registered()[str(claim.compares["measure"])]
    compare = COMPARISONS[claim.measure]
    runners = {r.ref: _Nulls(r) for _, r in members}
    out: list[tuple[str, Estimate | None]] = []
    for kind in (m.null, *m.extra_nulls):
        got = _measured(members, lambda r, k=kind: runners[r.ref].run(m, k, mode))  # type: ignore[misc]
        if got is not None:
            out.append((f"each model's {_null_name(m, kind)}", compare(got)))
    what = "frame labels permuted across the models" if claim.compares["by"] == "frame" else "sizes in other orders"
    out.append((what, relabeled(own, compare)))
    return out


def _decided(claim: Claim, question: str, est: Estimate, own: list[Member],
             nulls: list[tuple[str, Estimate | None]]) -> Verdict:
    status, rows, test = decide_all(claim.rule, claim.params, est, nulls)
    first = deciding_null(rows)
    reason = same_as_null(rows) if status == NOT_DIAGNOSTIC else ""
    extra = {"nulls": null_rows(rows), "models": [ref for _, ref, _ in own],
             "members": [{"group": g, "model": ref, "estimate": asdict(e)} for g, ref, e in own]}
    return Verdict(claim.id, claim.subject, question, status, est, first.estimate if first else None,
                   first.meets if first else "", reason, test, extra)


def evaluate_claim(claim: Claim, results: Sequence[ModelResult]) -> list[Verdict]:
    """Both verdicts of one comparison claim on the models of ``results`` that enter it; "not evaluated",
    saying which models would evaluate it, when too few do."""
    members = members_of(claim, results)
    if not enough(claim, members):
        ran = ", ".join(r.ref for _, r in members) or "none"
        return [Verdict(claim.id, claim.subject, q, NOT_EVALUATED, reason=f"{needs(claim)}; ran here: {ran}",
                        extra={"models": [r.ref for _, r in members]}) for q in QUESTIONS]
    m = registered()[str(claim.compares["measure"])]
    out = []
    for question, mode in QUESTIONS.items():
        own = _measured(members, lambda r, md=mode: m.fn(r, md))  # type: ignore[misc]
        if own is None:
            if mode == "corrected":
                out.append(Verdict(claim.id, claim.subject, question, NOT_EVALUATED,
                                   reason="no data for this quantity in some model of this run"))
            continue
        est = COMPARISONS[claim.measure](own)
        out.append(_decided(claim, question, est, own, _nulls(claim, members, mode, own)))  # type: ignore[arg-type]
    return out


def comparison_claims(page: str | None = None, claims: Sequence[Claim] | None = None) -> list[Claim]:
    """The testable comparison claims of ``page`` (or among ``claims``)."""
    pool = CLAIMS if claims is None else claims
    return [c for c in pool if c.compares and c.testable and (page is None or c.page == page)]


def evaluate_comparisons(results: Sequence[ModelResult], page: str | None = None,
                         claims: Sequence[Claim] | None = None) -> list[Verdict]:
    """Both verdicts of every comparison claim of ``page`` (or among ``claims``) on ``results``."""
    return [v for c in comparison_claims(page, claims) for v in evaluate_claim(c, results)]

