"""Named decision rules: an estimate and fixed parameters in, a status out.

Every rule decides on the interval's bounds, never on its existence: a wider interval can only
move a verdict towards "inconclusive". A rule returns ``supported``, ``not supported`` or
``inconclusive``; whether the verdict is diagnostic is decided by a test of difference against each null
(:func:`decide_all`): the model must meet the claim *and* differ from each null in the claim's direction.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .verdict import INCONCLUSIVE, NOT_DIAGNOSTIC, NOT_SUPPORTED, SUPPORTED, Estimate

Rule = Callable[..., tuple[str, str]]

#: values closer than this to a rule's threshold count as equal to it (round-off, not signal: a
#: uniform-attention KL change of 1e-17 is zero)
NUMERIC_TOL = 1e-9


def _undetermined(est: Estimate) -> bool:
    """No decision possible: flagged so, a non-finite bound, or an inverted interval."""
    if est.undetermined:
        return True
    lo, hi = est.bounds()
    return not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi


def above(est: Estimate, threshold: float) -> tuple[str, str]:
    """Supported when the interval's lower bound exceeds ``threshold``; not supported when its upper
    bound does not."""
    test = f"interval above {threshold:g}"
    if _undetermined(est):
        return INCONCLUSIVE, test
    lo, hi = est.bounds()
    if lo > threshold + NUMERIC_TOL:
        return SUPPORTED, test
    if hi <= threshold + NUMERIC_TOL:
        return NOT_SUPPORTED, test
    return INCONCLUSIVE, test


def below(est: Estimate, threshold: float) -> tuple[str, str]:
    """Supported when the interval's upper bound is under ``threshold``; not supported when its lower
    bound is not."""
    test = f"interval below {threshold:g}"
    if _undetermined(est):
        return INCONCLUSIVE, test
    lo, hi = est.bounds()
    if hi < threshold - NUMERIC_TOL:
        return SUPPORTED, test
    if lo >= threshold - NUMERIC_TOL:
        return NOT_SUPPORTED, test
    return INCONCLUSIVE, test


def within(est: Estimate, low: float, high: float) -> tuple[str, str]:
    """Supported when the whole interval lies in ``[low, high]``; not supported when none of it does."""
    test = f"interval inside [{low:.4g}, {high:.4g}]"
    if _undetermined(est):
        return INCONCLUSIVE, test
    lo, hi = est.bounds()
    if low <= lo and hi <= high:
        return SUPPORTED, test
    if hi < low or lo > high:
        return NOT_SUPPORTED, test
    return INCONCLUSIVE, test


def at_least(est: Estimate, share: float) -> tuple[str, str]:
    """Supported when the interval's lower bound reaches ``share``; not supported when its upper bound
    stays under it."""
    test = f"interval at or above {share:g}"
    if _undetermined(est):
        return INCONCLUSIVE, test
    lo, hi = est.bounds()
    if lo >= share:
        return SUPPORTED, test
    if hi < share:
        return NOT_SUPPORTED, test
    return INCONCLUSIVE, test


def equals(est: Estimate, expected: Any) -> tuple[str, str]:
    """A category (or an integer such as a layer index) equal to ``expected``."""
    test = f"equals {expected}"
    if est.undetermined:
        return INCONCLUSIVE, test
    return (SUPPORTED if est.value == expected else NOT_SUPPORTED), test


def flip_within(est: Estimate, low: float, high: float) -> tuple[str, str]:
    """A sign change located between two thresholds ``(a, b]``: supported when ``[a, b]`` lies inside the
    printed ``[low, high]``, not supported when the change is elsewhere or the correlation keeps one sign
    at every threshold, inconclusive when too few signs are settled to say."""
    test = f"sign change between thresholds inside [{low:g}, {high:g}]"
    if est.undetermined:
        return INCONCLUSIVE, test
    if isinstance(est.value, str) or math.isnan(float(est.value)):
        return NOT_SUPPORTED, test  # every correlation settled with one sign: no change anywhere
    if _undetermined(est):
        return INCONCLUSIVE, test
    a, b = est.bounds()
    ok = low - NUMERIC_TOL <= a and b <= high + NUMERIC_TOL
    return (SUPPORTED if ok else NOT_SUPPORTED), test


def _every(est: Estimate, rule: Rule, at: list[str] | None, **params: Any) -> tuple[str, str]:
    """``rule`` on each part of ``est`` (those labelled in ``at``, when given): supported when every part
    is, not supported when any part is not; a claim about every layer or region is refuted by one."""
    parts = [(lbl, e) for lbl, e in est.part_estimates() if at is None or lbl in at]
    if not parts:
        status, test = rule(est, **params)
        return (status if est.parts == [] else INCONCLUSIVE), test
    results = [(lbl, *rule(e, **params)) for lbl, e in parts]
    test = f"every part's {results[0][2]}" + (f" (parts {', '.join(at)})" if at is not None else "")
    statuses = [s for _, s, _ in results]
    if NOT_SUPPORTED in statuses:
        return NOT_SUPPORTED, test
    if all(s == SUPPORTED for s in statuses):
        return SUPPORTED, test
    return INCONCLUSIVE, test


def every_below(est: Estimate, threshold: float, at: list[str] | None = None) -> tuple[str, str]:
    """:func:`below` on every part (layer, region or threshold) of ``est``."""
    return _every(est, below, at, threshold=threshold)


def every_above(est: Estimate, threshold: float, at: list[str] | None = None) -> tuple[str, str]:
    """:func:`above` on every part of ``est``."""
    return _every(est, above, at, threshold=threshold)


def every_within(est: Estimate, low: float, high: float, at: list[str] | None = None) -> tuple[str, str]:
    """:func:`within` on every part of ``est``: one part wholly outside ``[low, high]`` refutes it."""
    return _every(est, within, at, low=low, high=high)


def each_within(est: Estimate, ranges: Mapping[str, list[float]]) -> tuple[str, str]:
    """Each labelled part inside its own ``[low, high]`` (e.g. a value printed per region)."""
    by = dict(est.part_estimates())
    missing = [k for k in ranges if k not in by]
    test = "each part inside its own range: " + "; ".join(f"{k} [{lo:.4g}, {hi:.4g}]" for k, (lo, hi) in ranges.items())
    if missing:
        return INCONCLUSIVE, test
    statuses = [within(by[k], lo, hi)[0] for k, (lo, hi) in ranges.items()]
    if NOT_SUPPORTED in statuses:
        return NOT_SUPPORTED, test
    return (SUPPORTED if all(s == SUPPORTED for s in statuses) else INCONCLUSIVE), test


RULES: dict[str, Rule] = {
    "every_below": every_below,
    "every_above": every_above,
    "every_within": every_within,
    "each_within": each_within,
    "above": above,
    "below": below,
    "within": within,
    "at_least": at_least,
    "equals": equals,
    "flip_within": flip_within,
}


def apply(rule: str, est: Estimate, params: Mapping[str, Any]) -> tuple[str, str]:
    """``(status, test)`` of the named rule on ``est``."""
    if rule not in RULES:
        raise ValueError(f"unknown rule {rule!r}; known: {sorted(RULES)}")
    return RULES[rule](est, **params)


def describe(rule: str, params: Mapping[str, Any]) -> str:
    """The rule in words, as a page prints it (``interval inside [0.765, 0.895]``), never a dict."""
    labels = list(params.get("at") or ["part"])
    probe = Estimate("x") if rule == "equals" else Estimate(0.0, parts=[[k, 0.0, 0.0, 0.0] for k in labels])
    return apply(rule, probe, params)[1]


#: the direction in which each rule's claim points: +1 where a larger value meets it, -1 where a smaller one does.
#: A range (``within``), a category (``equals``) or a located sign change points nowhere: against a null it is
#: enough that the null does not meet the claim.
DIRECTION: dict[str, int] = {"above": 1, "every_above": 1, "at_least": 1, "below": -1, "every_below": -1}
#: the one-sided level of a permutation null (the model must lie beyond the null's 95 % quantile)
ALPHA = 0.05


@dataclass(frozen=True)
class NullCheck:
    """One null beside the model: its estimate, what the rule says of it (``meets``), whether the model differs
    from it in the claim's direction (``differs``; ``None`` where the null could not be computed) and the test
    with its numbers (``how``)."""

    name: str
    estimate: Estimate
    meets: str
    differs: bool | None
    how: str


def _labelled(est: Estimate, at: list[str] | None) -> list[tuple[str, Estimate]]:
    """The parts of ``est`` a part-wise rule reads (those in ``at`` when given), or the whole as one part."""
    parts = [(lbl, e) for lbl, e in est.part_estimates() if at is None or lbl in at]
    return parts or [("", est)]


def differs_from(rule: str, params: Mapping[str, Any], est: Estimate, null: Estimate) -> tuple[bool | None, str]:
    """Whether the model's ``est`` differs from ``null`` in the direction the claim points (:data:`DIRECTION`).

    - A permutation null (one carrying ``permutation`` p-values, as the layers in random order do): the model's
      value must lie beyond the null's one-sided 95 % quantile, i.e. its p-value at most :data:`ALPHA`.
    - Any other null: the interval of model minus null, ``[low_model - high_null, high_model - low_null]`` (no
      pairing assumed, so never narrower than the two intervals allow), must exclude zero on the claim's side;
      for a claim about every part, in every part (matched by label, or against the null's whole interval).
    - A claim that points nowhere (a range, a category): the null must not meet the claim.
    """
    d = DIRECTION.get(rule, 0)
    if d == 0:
        meets = apply(rule, null, params)[0]
        if meets == INCONCLUSIVE and _undetermined(null):
            return None, "the null is not computable"
        return meets != SUPPORTED, ("the null meets the claim too" if meets == SUPPORTED
                                    else f"the null does not meet the claim ({meets})")
    perm = null.permutation
    if perm:
        p = float(perm["p_greater" if d > 0 else "p_less"])
        reach = float(perm["reachable_greater" if d > 0 else "reachable_less"])
        orders = int(perm["orders"])
        how = (f"permutation p = {p:.3g} ({'all' if perm.get('exact') else 'seeded'} {orders} orders; "
               f"the smallest p any order of these layers reaches: {reach:.3g})")
        return p <= ALPHA, how
    if _undetermined(null):
        return None, "the null is not computable"
    part_wise = rule.startswith("every_")  # other rules decide on the whole; their parts are shown beside it
    mine = _labelled(est, params.get("at")) if part_wise else [("", est)]
    theirs = dict(null.part_estimates()) if part_wise else {}
    gaps = []
    for label, e in mine:
        n = theirs.get(label, null)
        if _undetermined(e) or _undetermined(n):
            return None, "not computable in some part"
        (mlo, mhi), (nlo, nhi) = e.bounds(), n.bounds()
        gaps.append((label, mlo - nhi, mhi - nlo))
    apart = [(lo > NUMERIC_TOL) if d > 0 else (hi < -NUMERIC_TOL) for _, lo, hi in gaps]
    if len(gaps) == 1:
        _, lo, hi = gaps[0]
        how = f"model minus null [{_fmt(lo)}, {_fmt(hi)}] {'excludes' if apart[0] else 'includes'} 0"
    else:
        how = f"model minus null apart from 0 in {sum(apart)} of {len(gaps)} parts"
    return all(apart), how


def _fmt(x: float) -> str:
    return f"{x:.3g}" if abs(x) < 1000 else f"{x:.0f}"


def decide(rule: str, params: Mapping[str, Any], est: Estimate, null: Estimate | None) -> tuple[str, str, str]:
    """``(status, null status, test)`` against one null (:func:`decide_all`)."""
    status, rows, test = decide_all(rule, params, est, [("null", null)])
    return status, (rows[0].meets if rows else ""), test


def decide_all(rule: str, params: Mapping[str, Any], est: Estimate, nulls: list[tuple[str, Estimate | None]]
               ) -> tuple[str, list[NullCheck], str]:
    """The rule on the model's estimate, then a test of difference against each null: ``(status, checks, test)``.

    A model that meets the claim is "supported" only where it differs from every null in the claim's direction
    (:func:`differs_from`); where it cannot be told from some null it is "not diagnostic". A model that fails the
    claim is "not supported" whatever the nulls do: a failure where a structureless input passes is a refutation.
    A null that could not be computed decides nothing and says so."""
    status, test = apply(rule, est, params)
    rows = []
    for name, n in nulls:
        if n is None:
            continue
        differs, how = differs_from(rule, params, est, n)
        rows.append(NullCheck(name, n, apply(rule, n, params)[0], differs, how))
    if status == SUPPORTED and any(r.differs is False for r in rows):
        status = NOT_DIAGNOSTIC
    return status, rows, test
