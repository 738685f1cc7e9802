"""From model verdicts to statements about families, with the count of decisions kept honest.

- **Family lines**: where a family of the paper has several stand-ins here, one line per claim for the family,
  beside the model lines: the family is *supported* only where every stand-in is, *mixed* where they disagree
  (naming which), and its interval is the span of the stand-ins' intervals (models as the unit). With one to
  three stand-ins per family no spread between models can be estimated from the models themselves, so the span
  is the least an interval for the family must cover, not a confidence interval.
- **Multiplicity**: every *holds?* decision gets a one-sided p-value for "the claim holds and the model differs
  from every null" (:func:`decision_p`), and the counts of supported verdicts are given raw, under Holm's
  family-wise control and under Benjamini-Hochberg's false-discovery control, both at 5 %.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import false_discovery_control, norm

from ..paper import CLAIMS, CLAIMS_BY_ID
from ..verdicts import NOT_EVALUATED, SUPPORTED, Estimate, PageVerdicts, Verdict
from ..verdicts.rules import DIRECTION

MIXED = "mixed"


def group_status(statuses: Iterable[str]) -> str:
    """The verdict of a group of models: their common status, :data:`MIXED` where they disagree."""
    seen = set(statuses)
    return next(iter(seen)) if len(seen) == 1 else MIXED
_ORDER = {c.id: i for i, c in enumerate(CLAIMS)}
ALPHA = 0.05
#: the interval kinds whose bounds are read as a normal 95 % interval for a p-value (bootstraps over sentences)
BOOTSTRAP = "bootstrap"
Z95 = float(norm.ppf(0.975))


def _holds(saved: dict[str, PageVerdicts]) -> list[tuple[Verdict, dict[str, Any]]]:
    """Every *holds?* verdict with the record of its model (a comparison's record is empty)."""
    out = []
    for pv in saved.values():
        for v in pv.verdicts:
            if v.question == "holds":
                out.append((v, pv.models.get(v.model, {})))
    return out


# ----------------------------------------------------------------------------------------------- family lines

def family_lines(saved: dict[str, PageVerdicts]) -> pd.DataFrame:
    """One row per claim: the verdict for the group the claim is about (its subject: a family, a frame type,
    the decoders, every model), from every model tested on it here. The group is *supported* only where every
    model is, :data:`MIXED` where they disagree (each named), and its interval is the span of theirs. A group
    with one model here has that model's verdict, and says it rests on one."""
    by: dict[str, dict[str, Verdict]] = {}
    for v, _ in _holds(saved):
        if v.status != NOT_EVALUATED:
            by.setdefault(v.claim, {})[v.model] = v
    rows = []
    for cid, models in sorted(by.items(), key=lambda kv: _ORDER.get(kv[0], len(_ORDER))):
        statuses = {m: v.status for m, v in models.items()}
        group = group_status(statuses.values())
        rows.append({"claim": cid, "about": CLAIMS_BY_ID[cid].subject, "models": len(models),
                     "group verdict": group, "model verdicts": "; ".join(f"{m}: {s}" for m, s in statuses.items()),
                     "span of their intervals": span_text([v.estimate for v in models.values()])})
    return pd.DataFrame(rows, columns=["claim", "about", "models", "group verdict", "model verdicts",
                                       "span of their intervals"])


def span_text(ests: Sequence[Estimate | None]) -> str:
    """The span of several models' intervals, ``[lowest bound, highest bound]`` (the categories seen, for categorical
    estimates; ``not computable`` where one is undefined): the one way the scorecard prints a group's values."""
    if any(e is not None and isinstance(e.value, str) for e in ests):
        return ", ".join(sorted({str(e.value) for e in ests if e is not None}))  # categories: the ones seen
    lows, highs = [], []
    for e in ests:
        if e is None or e.undetermined:
            return "not computable"
        lo, hi = e.bounds()
        lows.append(lo)
        highs.append(hi)
    return f"[{min(lows):.3g}, {max(highs):.3g}]"


def family_counts(lines: pd.DataFrame, at_least: int = 1) -> Counter:
    """The group verdicts of :func:`family_lines`, counted (over groups of at least ``at_least`` models)."""
    sel = lines[lines["models"] >= at_least] if len(lines) else lines
    return Counter(sel["group verdict"]) if len(sel) else Counter()


# ----------------------------------------------------------------------------------------------- multiplicity

def _se(e: Estimate) -> float | None:
    """A standard error read off a 95 % bootstrap interval (``None`` for other intervals or none)."""
    if BOOTSTRAP not in e.interval or e.undetermined or isinstance(e.value, str):
        return None
    lo, hi = e.bounds()
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return None
    return max((hi - lo) / (2 * Z95), 1e-12)


def _one_sided(value: float, se: float, threshold: float, direction: int) -> float:
    """P(the quantity is on the wrong side of ``threshold``), normal approximation."""
    return float(norm.sf(direction * (value - threshold) / se))


def _claim_p(rule: str, params: dict[str, Any], e: Estimate) -> float | None:
    """The p-value of "the claim holds" for one estimate (``None`` where the rule has no direction or the interval
    is not a bootstrap)."""
    d = DIRECTION.get(rule, 0)
    if rule in ("within", "every_within"):
        lo_p = _claim_p("above", {"threshold": params["low"]}, e)
        hi_p = _claim_p("below", {"threshold": params["high"]}, e)
        return None if lo_p is None or hi_p is None else max(lo_p, hi_p)
    if d == 0:
        return None
    threshold = float(params.get("threshold", params.get("share", 0.0)))
    if rule.startswith("every_"):
        parts = [p for lbl, p in e.part_estimates() if params.get("at") is None or lbl in params["at"]] or [e]
        ps = [_claim_p(rule.removeprefix("every_"), params, p) for p in parts]
        return None if any(p is None for p in ps) else max(p for p in ps if p is not None)
    se = _se(e)
    return None if se is None else _one_sided(float(e.value), se, threshold, d)


def _null_p(rule: str, e: Estimate, null: dict[str, Any]) -> float | None:
    """The p-value of "the model differs from this null in the claim's direction"."""
    d = DIRECTION.get(rule, 0)
    n = Estimate(**null["estimate"])
    if d == 0:
        return None
    if n.permutation:
        return float(n.permutation["p_greater" if d > 0 else "p_less"])
    se_m = _se(e)
    if se_m is None or n.undetermined or isinstance(n.value, str):
        return None
    lo, hi = n.bounds()
    se_n = 0.0 if lo == hi else _se(n)
    if se_n is None:
        return None
    return float(norm.sf(d * (float(e.value) - float(n.value)) / math.hypot(se_m, se_n)))


def decision_p(v: Verdict) -> float | None:
    """One-sided p-value of the whole decision (the claim holds *and* the model differs from every null): the
    largest of its parts' (an intersection-union test). Normal approximations to the 95 % bootstrap intervals,
    permutation p-values where the null is a permutation; ``None`` where a part has none (a category, a range
    over layers, a located sign change)."""
    c = CLAIMS_BY_ID.get(v.claim)
    if c is None or v.estimate is None or v.status == NOT_EVALUATED or c.rule == "" or v.estimate.undetermined:
        return None
    ps = [_claim_p(c.rule, dict(c.params), v.estimate)]
    ps += [_null_p(c.rule, v.estimate, n) for n in v.extra.get("nulls") or [] if n.get("differs") is not None]
    return None if any(p is None for p in ps) else max(p for p in ps if p is not None)


def holm(ps: list[float], alpha: float = ALPHA) -> list[bool]:
    """Holm's step-down procedure: which hypotheses are rejected with family-wise error at most ``alpha``."""
    order = np.argsort(ps)
    out = [False] * len(ps)
    for rank, i in enumerate(order):
        if ps[i] > alpha / (len(ps) - rank):
            break
        out[i] = True
    return out


def multiplicity(saved: dict[str, PageVerdicts]) -> dict[str, int]:
    """Supported *holds?* verdicts raw and under Holm and Benjamini-Hochberg control over every decision that has
    a p-value; how many decisions have none (they count raw only)."""
    decided = [v for v, _ in _holds(saved) if v.status != NOT_EVALUATED]
    with_p = [(v, decision_p(v)) for v in decided]
    tested = [(v, p) for v, p in with_p if p is not None]
    ps = [p for _, p in tested]
    holm_ok = holm(ps) if ps else []
    bh = false_discovery_control(ps) if ps else np.array([])
    return {"decisions": len(decided), "with p": len(tested), "without p": len(decided) - len(tested),
            "supported": sum(v.status == SUPPORTED for v in decided),
            "supported with p": sum(v.status == SUPPORTED for v, _ in tested),
            "holm": sum(ok and v.status == SUPPORTED for (v, _), ok in zip(tested, holm_ok, strict=True)),
            "bh": sum(q <= ALPHA and v.status == SUPPORTED for (v, _), q in zip(tested, bh, strict=True))}


def multiplicity_text(saved: dict[str, PageVerdicts]) -> str:
    """The counts of :func:`multiplicity` in words."""
    m = multiplicity(saved)
    return (f"Of {m['decisions']} *holds?* decisions, {m['supported']} are supported at 95 % each, with no control "
            f"for their number. {m['with p']} of them have a one-sided p-value for the whole decision (the claim "
            f"holds and the model differs from every null; normal approximations to the bootstrap intervals, "
            f"permutation p-values for the layer orders and relabelings); of the {m['supported with p']} supported "
            f"among them, {m['holm']} stay supported under Holm's family-wise control at 5 % and {m['bh']} under "
            f"Benjamini-Hochberg's false-discovery control at 5 %. The other {m['without p']} (categories, ranges "
            "over layers, located sign changes) count raw only.")


def group_summary(lines: pd.DataFrame) -> str:
    """The group verdicts counted, over every group and over those resting on two models or more."""
    def said(counts: Counter) -> str:
        order = [SUPPORTED, "not supported", MIXED, "not diagnostic", "inconclusive"]
        return ", ".join(f"{counts.get(s, 0)} {s}" for s in order)

    many = lines[lines["models"] >= 2] if len(lines) else lines
    return (f"{len(lines)} claims have a verdict for their group here: {said(family_counts(lines))}. "
            f"Of the {len(many)} whose group has two models or more: {said(family_counts(lines, 2))}.")


def lines_html(lines: pd.DataFrame) -> str:
    """The group lines as a folded HTML table (one row per claim)."""
    body = lines.to_html(index=False, escape=True, border=0, classes="scorecard")
    return f"<details><summary>The {len(lines)} group lines, one per claim</summary>\n{body}\n</details>"
