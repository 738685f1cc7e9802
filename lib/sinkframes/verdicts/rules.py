"""Named decision rules: an estimate and fixed parameters in, a status out.

Every rule decides on the interval's bounds, never on its existence: a wider interval can only
move a verdict towards "inconclusive". A rule returns ``supported``, ``not supported`` or
``inconclusive``; whether the verdict is diagnostic is decided by running the same rule on the null
(:func:`decide`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
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


def decide(rule: str, params: Mapping[str, Any], est: Estimate, null: Estimate | None) -> tuple[str, str, str]:
    """``(status, null status, test)``: the rule on the model's estimate; "not diagnostic" only when the
    model meets the claim *and* the null meets it too. A model that fails the claim is "not supported"
    whatever the null does: a failure where a structureless input passes is a refutation, not a
    lack of diagnosticity."""
    status, test = apply(rule, est, params)
    if null is None:
        return status, "", test
    null_status, _ = apply(rule, null, params)
    if status == SUPPORTED and null_status == SUPPORTED:
        return NOT_DIAGNOSTIC, null_status, test
    return status, null_status, test


def decide_all(rule: str, params: Mapping[str, Any], est: Estimate, nulls: list[tuple[str, Estimate | None]]
               ) -> tuple[str, list[tuple[str, Estimate, str]], str]:
    """:func:`decide` against several nulls: ``(status, [(null name, null estimate, its status)], test)``.
    A model that meets the claim is "not diagnostic" when any null meets it too."""
    status, test = apply(rule, est, params)
    rows = [(name, n, apply(rule, n, params)[0]) for name, n in nulls if n is not None]
    if status == SUPPORTED and any(s == SUPPORTED for _, _, s in rows):
        status = NOT_DIAGNOSTIC
    return status, rows, test
