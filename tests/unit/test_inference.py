"""Group verdicts from model verdicts, and the counts under multiplicity control, on cases with known answers."""

from __future__ import annotations

import pytest

from sinkframes import verdicts as V
from sinkframes.report import inference as I
from sinkframes.verdicts.store import PageVerdicts

E = V.Estimate
BOOT = "95 % bootstrap over sentences"


def _saved(*verdicts: V.Verdict) -> dict[str, PageVerdicts]:
    models = {"a": {"family": "bert"}, "b": {"family": "bert"}}
    return {"p": PageVerdicts("p", "offline", list(verdicts), models=models)}


def test_a_group_whose_models_disagree_reads_mixed_and_one_that_agrees_reads_their_verdict():
    lines = I.family_lines(_saved(
        V.Verdict("5.4.entropy", "a", "holds", V.SUPPORTED, E(-0.5, -0.6, -0.4, interval=BOOT)),
        V.Verdict("5.4.entropy", "b", "holds", V.NOT_SUPPORTED, E(0.2, 0.1, 0.3, interval=BOOT)),
        V.Verdict("5.3.kl_u", "a", "holds", V.SUPPORTED, E(0.03, 0.02, 0.04, interval=BOOT)),
        V.Verdict("5.3.kl_u", "b", "holds", V.SUPPORTED, E(0.05, 0.04, 0.06, interval=BOOT)),
    ))
    row = lines.set_index("claim").loc["5.4.entropy"]
    assert row["group verdict"] == I.MIXED and row["models"] == 2 and row["span of their intervals"] == "[-0.6, 0.3]"
    assert "a: supported" in row["model verdicts"] and "b: not supported" in row["model verdicts"]
    assert lines.set_index("claim").loc["5.3.kl_u", "group verdict"] == V.SUPPORTED


def test_holm_rejects_step_down_and_stops_at_the_first_failure():
    # 4 hypotheses at 5 %: thresholds 0.0125, 0.0167, 0.025, 0.05 in order of p
    assert I.holm([0.01, 0.04, 0.015, 0.5]) == [True, False, True, False]
    assert I.holm([0.02, 0.02]) == [True, True]  # 0.02 <= 0.025, then 0.02 <= 0.05
    assert I.holm([0.03, 0.03]) == [False, False]


def test_a_decisions_p_value_is_the_largest_of_the_claim_and_each_null():
    # "5.4.entropy" is decided "below 0": a value 3.92 standard errors under 0 has p = norm.sf(3.92) ~ 4.4e-5
    est = E(-0.2, -0.3, -0.1, interval=BOOT)
    perm = {"p_greater": 0.9, "p_less": 0.03, "reachable_greater": 0.001, "reachable_less": 0.001, "orders": 720,
            "exact": 1.0, "observed": -0.2}
    nulls = [{"name": "layers in random order", "estimate": E(0.0, -0.15, 0.15, permutation=perm).__dict__,
              "status": V.INCONCLUSIVE, "differs": True, "difference": ""}]
    v = V.Verdict("5.4.entropy", "a", "holds", V.SUPPORTED, est, extra={"nulls": nulls})
    assert I.decision_p(v) == pytest.approx(0.03)  # the permutation p is the larger
    v0 = V.Verdict("5.4.entropy", "a", "holds", V.SUPPORTED, est)
    assert I.decision_p(v0) == pytest.approx(4.4e-5, rel=0.05)
    ranged = E(-0.2, -0.3, -0.1, interval="range of the layer means")
    layers = V.Verdict("5.4.entropy", "a", "holds", V.SUPPORTED, ranged)
    assert I.decision_p(layers) is None  # not a bootstrap: no p-value, counted raw only


def test_holm_is_stricter_than_benjamini_hochberg_on_three_borderline_decisions():
    # three models each just supported at 95 % (z ~ 1.98, p ~ 0.024): Holm's first threshold is 0.05 / 3, so none
    # survives it; Benjamini-Hochberg keeps all three (each p <= 0.05 * 3 / 3)
    vs = [V.Verdict("5.4.entropy", m, "holds", V.SUPPORTED, E(-0.1, -0.199, -0.001, interval=BOOT)) for m in "abc"]
    m = I.multiplicity(_saved(*vs))
    assert m["supported"] == 3 and m["with p"] == 3 and m["holm"] == 0 and m["bh"] == 3
