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


RULES: dict[str, Rule] = {
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


def decide(rule: str, params: Mapping[str, Any], est: Estimate, null: Estimate | None) -> tuple[str, str, str]:
    """``(status, null status, test)``: the rule on the model's estimate, and "not diagnostic" when the
    null meets the claim too."""
    status, test = apply(rule, est, params)
    if null is None:
        return status, "", test
    null_status, _ = apply(rule, null, params)
    if null_status == SUPPORTED:
        return NOT_DIAGNOSTIC, null_status, test
    return status, null_status, test
