"""Claims that compare models: comparisons of synthetic per-model estimates with known answers."""

from __future__ import annotations

import pytest

from sinkframes.paper import CLAIMS, Claim
from sinkframes.results import ModelResult
from sinkframes.verdicts import (
    INCONCLUSIVE,
    MEASURES,
    NOT_DIAGNOSTIC,
    NOT_EVALUATED,
    NOT_SUPPORTED,
    NULLS,
    SUPPORTED,
    Estimate,
    Measure,
    apply,
)
from sinkframes.verdicts.compare import (
    COMPARISONS,
    evaluate_claim,
    groups_differ,
    last_minus_first,
    members_of,
    relabeled,
    rise_and_fall,
    size_of,
)


def _sizes(*values: tuple[float, float, float]) -> list[tuple[str, str, Estimate]]:
    return [(f"{i}B", f"m{i}", Estimate(v, lo, hi)) for i, (v, lo, hi) in enumerate(values, 1)]


def test_a_clear_increase_is_supported_and_overlapping_intervals_are_inconclusive():
    rise = last_minus_first(_sizes((1.0, 0.9, 1.1), (2.0, 1.9, 2.1), (4.0, 3.9, 4.1)))
    assert rise.value == pytest.approx(3.0) and rise.bounds() == pytest.approx((2.8, 3.2))
    assert apply("above", rise, {"threshold": 0.0})[0] == SUPPORTED
    assert len(rise.parts) == 2  # each step between neighbours shown
    overlap = last_minus_first(_sizes((1.0, 0.5, 1.5), (1.2, 0.7, 1.7)))
    assert apply("above", overlap, {"threshold": 0.0})[0] == INCONCLUSIVE
    fall = last_minus_first(_sizes((2.0, 1.9, 2.1), (1.0, 0.9, 1.1)))
    assert apply("above", fall, {"threshold": 0.0})[0] == NOT_SUPPORTED


def test_non_monotonic_only_when_a_step_is_clearly_reversed():
    up_down = rise_and_fall(_sizes((1.0, 0.9, 1.1), (3.0, 2.9, 3.1), (2.0, 1.9, 2.1)))
    assert apply("above", up_down, {"threshold": 0.0})[0] == SUPPORTED
    assert up_down.value == pytest.approx(1.0) and up_down.low == pytest.approx(0.8)
    monotonic = rise_and_fall(_sizes((1.0, 0.9, 1.1), (2.0, 1.9, 2.1), (3.0, 2.9, 3.1)))
    assert apply("above", monotonic, {"threshold": 0.0})[0] == NOT_SUPPORTED
    # the fall lies inside the intervals: not shown to reverse, not shown to be monotonic either
    unsure = rise_and_fall(_sizes((1.0, 0.9, 1.1), (3.0, 2.5, 3.5), (2.8, 2.3, 3.3)))
    assert apply("above", unsure, {"threshold": 0.0})[0] == INCONCLUSIVE
    assert rise_and_fall(_sizes((1.0, 0.9, 1.1), (2.0, 1.9, 2.1))).undetermined  # two sizes cannot reverse


def test_groups_differ_pairwise_on_every_model_of_each_group():
    apart = [("a", "m1", Estimate(1.0, 0.9, 1.1)), ("a", "m2", Estimate(1.2, 1.1, 1.3)),
             ("b", "m3", Estimate(2.0, 1.9, 2.1)), ("c", "m4", Estimate(-1.0, -1.1, -0.9))]
    est = groups_differ(apart)
    assert [p[0] for p in est.parts] == ["a vs b", "a vs c", "b vs c"]
    assert est.parts[0][2] == pytest.approx(1.9 - 1.3)  # the pair's lower bound: b's low minus a's high
    assert apply("every_above", est, {"threshold": 0.0})[0] == SUPPORTED
    close = [*apart[:2], ("b", "m3", Estimate(1.4, 1.25, 1.55)), apart[3]]
    assert apply("every_above", groups_differ(close), {"threshold": 0.0})[0] == INCONCLUSIVE


def test_an_undetermined_model_leaves_its_pairs_inconclusive_whatever_its_place():
    for first in (True, False):
        a = [("a", "m1", Estimate(1.0, 0.9, 1.1)), ("a", "m2", Estimate(float("nan"), undetermined=True))]
        members = [*(a if first else a[::-1]), ("b", "m3", Estimate(5.0, 4.9, 5.1))]
        est = groups_differ(members)
        assert est.undetermined and apply("every_above", est, {"threshold": 0.0})[0] == INCONCLUSIVE


def test_relabeling_one_model_per_group_differs_as_much():
    one_each = [("a", "m1", Estimate(1.0, 0.9, 1.1)), ("b", "m2", Estimate(2.0, 1.9, 2.1)),
                ("c", "m3", Estimate(3.0, 2.9, 3.1))]
    null = relabeled(one_each, groups_differ)
    assert null is not None and apply("every_above", null, {"threshold": 0.0})[0] == SUPPORTED
    mixed = [("a", "m1", Estimate(1.0, 0.9, 1.1)), ("a", "m2", Estimate(1.1, 1.0, 1.2)),
             ("b", "m3", Estimate(3.0, 2.9, 3.1)), ("b", "m4", Estimate(3.1, 3.0, 3.2))]
    null = relabeled(mixed, groups_differ)
    assert null is not None and apply("every_above", null, {"threshold": 0.0})[0] != SUPPORTED


def test_sizes_are_read_off_hub_ids():
    assert size_of("EleutherAI/pythia-2.8b") == pytest.approx(2.8e9)
    assert size_of("EleutherAI/pythia-160m") == pytest.approx(1.6e8)
    assert size_of("EleutherAI/pythia-12b-deduped") == pytest.approx(1.2e10)
    assert size_of("smollm2") is None


def _result(ref: str, est: Estimate, null: Estimate, family: str = "pythia", frame: str = "centralized"
            ) -> ModelResult:
    record = {"ref": ref, "family": family, "paper_frame": frame, "causal": True, "n_layers": 2, "n_heads": 1}
    return ModelResult(analysis="synthetic", record=record, n_sentences=10, data={"est": est, "null": null})


@pytest.fixture
def synthetic(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(NULLS, "synthetic_null", lambda r, mode: r.data["null"])
    monkeypatch.setitem(MEASURES, "synthetic.value", Measure("synthetic.value", "synthetic",
                                                             lambda r, mode: r.data["est"], null="synthetic_null"))


def _trend_claim(min_models: int = 2) -> Claim:
    return Claim("test.trend", "J", "synthetic", "pythia sizes", "a value across sizes", "rises", "",
                 measure="compare.end_to_end", rule="above", params={"threshold": 0.0}, why="test",
                 null="test", compares={"by": "size", "family": "pythia", "measure": "synthetic.value",
                                        "min_models": min_models})


def test_a_comparison_claim_is_decided_for_the_group_with_its_nulls(synthetic: None):
    flat = Estimate(0.0, -0.1, 0.1)
    results = [_result("EleutherAI/pythia-12b", Estimate(4.0, 3.8, 4.2), flat),
               _result("EleutherAI/pythia-2.8b", Estimate(1.0, 0.8, 1.2), flat),
               _result("EleutherAI/pythia-6.9b", Estimate(2.0, 1.8, 2.2), flat)]
    assert [g for g, _ in members_of(_trend_claim(), results)] == ["2.8B", "6.9B", "12B"]
    found = evaluate_claim(_trend_claim(), results)
    # three sizes: the own order is the steepest of 6, so its permutation p-value is 1/6, not under 0.05
    assert {v.question: v.status for v in found} == {"reproduced": NOT_DIAGNOSTIC, "holds": NOT_DIAGNOSTIC}
    v = found[0]
    assert v.extra["nulls"][1]["estimate"]["permutation"]["p_greater"] == pytest.approx(1 / 6)
    # the end-to-end rise reads the two ends only: with five sizes 6 of the 120 orders reach it, p = 0.05
    five = [*results, _result("EleutherAI/pythia-160m", Estimate(0.0, -0.2, 0.2), flat),
            _result("EleutherAI/pythia-70m", Estimate(-1.0, -1.2, -0.8), flat)]
    found = evaluate_claim(_trend_claim(), five)
    assert {v.status for v in found} == {SUPPORTED}
    assert found[0].extra["nulls"][1]["estimate"]["permutation"]["p_greater"] == pytest.approx(6 / 120)
    assert v.model == "pythia sizes" and v.extra["models"] == [r.ref for r in (results[1], results[2], results[0])]
    assert [n["name"] for n in v.extra["nulls"]] == ["each model's synthetic null", "sizes in other orders"]


def test_a_null_that_rises_too_makes_the_comparison_not_diagnostic(synthetic: None):
    results = [_result("EleutherAI/pythia-2.8b", Estimate(1.0, 0.8, 1.2), Estimate(1.0, 0.9, 1.1)),
               _result("EleutherAI/pythia-12b", Estimate(4.0, 3.8, 4.2), Estimate(4.0, 3.9, 4.1))]
    found = evaluate_claim(_trend_claim(), results)
    assert {v.status for v in found} == {NOT_DIAGNOSTIC}  # the null rises as much: model minus null includes 0
    assert "synthetic null" in found[0].reason


def test_too_few_models_say_which_would_evaluate_the_claim(synthetic: None):
    results = [_result("EleutherAI/pythia-2.8b", Estimate(1.0, 0.8, 1.2), Estimate(0.0))]
    found = evaluate_claim(_trend_claim(), results)
    assert {v.status for v in found} == {NOT_EVALUATED}
    assert found[0].reason.startswith("needs models") and "pythia-2.8b" in found[0].reason


def test_frame_groups_use_the_family_the_paper_assigns(synthetic: None):
    claim = Claim("test.frames", "C.1", "synthetic", "centralized vs distributed vs bidirectional", "q", "differ", "",
                  measure="compare.groups_differ", rule="every_above", params={"threshold": 0.0}, why="t", null="t",
                  compares={"by": "frame", "groups": ["centralized", "distributed"], "measure": "synthetic.value"})
    results = [_result("q", Estimate(3.0, 2.9, 3.1), Estimate(0.0), "qwen", "distributed"),
               _result("l1", Estimate(1.0, 0.9, 1.1), Estimate(0.0), "llama", "centralized"),
               _result("l2", Estimate(1.1, 1.0, 1.2), Estimate(0.0), "gemma", "centralized")]
    assert [(g, r.ref) for g, r in members_of(claim, results)] == [
        ("centralized", "l1"), ("centralized", "l2"), ("distributed", "q")]
    found = evaluate_claim(claim, results)
    # three models: the own labelling is one of three, so a permutation p-value cannot go under 1/3
    assert {v.status for v in found} == {NOT_DIAGNOSTIC}
    perm = next(n for n in found[0].extra["nulls"] if n["name"].startswith("frame labels"))["estimate"]["permutation"]
    assert perm["p_greater"] == pytest.approx(1 / 3) and perm["orders"] == 3
    # four models of each type, apart: only the own labelling and its mirror differ as much (2 of 70)
    more = [_result(f"q{i}", Estimate(3.0 + 0.05 * i, 2.9 + 0.05 * i, 3.1 + 0.05 * i), Estimate(0.0), "qwen",
                    "distributed") for i in range(4)]
    more += [_result(f"l{i}", Estimate(1.0 + 0.05 * i, 0.9 + 0.05 * i, 1.1 + 0.05 * i), Estimate(0.0), "llama",
                     "centralized") for i in range(4)]
    found = evaluate_claim(claim, more)
    assert {v.status for v in found} == {SUPPORTED}
    perm = next(n for n in found[0].extra["nulls"] if n["name"].startswith("frame labels"))["estimate"]["permutation"]
    assert perm["p_greater"] == pytest.approx(2 / 70)


def test_the_registrys_comparison_claims_name_their_measures_and_groups():
    comparing = [c for c in CLAIMS if c.compares]
    assert {c.id for c in comparing} >= {"C.1.frames_differ", "C.1.kl_differs", "B.spectral_gap",
                                         "J.specialized_heads", "J.stronger_reference"}
    for c in comparing:
        assert c.testable and c.measure in COMPARISONS and c.compares["measure"] in MEASURES, c.id
        assert c.compares["by"] in ("frame", "size") and c.page, c.id
        assert not c.applies_to("pythia", "centralized", True)  # never decided per model
