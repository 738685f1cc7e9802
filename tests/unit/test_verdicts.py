"""The verdict layer: every rule on a passing, a failing and a null case; estimates, nulls, measures."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from sinkframes import verdicts as V
from sinkframes.analyses import frames, information
from sinkframes.metrics.frames import FrameSummaryReducer
from sinkframes.metrics.information import InformationReducer
from sinkframes.results import ModelResult
from sinkframes.verdicts import measures as M
from sinkframes.verdicts.rules import decide
from tests.attention_cases import causal_first_sink, causal_uniform, stack

E = V.Estimate

# ----------------------------------------------------------------------------- rules: pass, fail, null

# rule, params, a passing estimate, a failing one, a null that meets the claim (-> not diagnostic)
RULE_CASES = [
    ("above", {"threshold": 0.5}, E(0.7, 0.6, 0.8), E(0.3, 0.2, 0.4), E(0.9, 0.85, 0.95)),
    ("below", {"threshold": 0.0}, E(-0.2, -0.3, -0.1), E(0.2, 0.1, 0.3), E(-1.0, -1.1, -0.9)),
    ("within", {"low": 0.3, "high": 0.4}, E(0.35, 0.33, 0.37), E(0.6, 0.55, 0.65), E(0.35, 0.34, 0.36)),
    ("at_least", {"share": 0.9}, E(0.95), E(0.5), E(1.0)),
    ("equals", {"expected": "centralized"}, E("centralized"), E("distributed"), E("centralized")),
    ("flip_within", {"low": 0.1, "high": 0.2}, E(0.2, 0.1, 0.2), E(0.05, 0.02, 0.05), E(0.2, 0.1, 0.2)),
    ("every_below", {"threshold": 0.0},
     E(-0.15, -0.3, -0.05, parts=[["early", -0.2, -0.3, -0.1], ["late", -0.1, -0.15, -0.05]]),
     E(0.15, 0.05, 0.3, parts=[["early", 0.1, 0.05, 0.15], ["late", 0.2, 0.1, 0.3]]),
     E(-1.0, -1.1, -0.9, parts=[["early", -1.0, -1.1, -0.9]])),
    ("every_above", {"threshold": 0.5},
     E(0.7, 0.6, 0.8, parts=[["0.001", 0.7, 0.6, 0.8], ["0.1", 0.75, 0.7, 0.8]]),
     E(0.3, 0.2, 0.4, parts=[["0.001", 0.25, 0.2, 0.3], ["0.1", 0.35, 0.3, 0.4]]),
     E(0.9, 0.85, 0.95, parts=[["0.001", 0.9, 0.85, 0.95]])),
    ("every_within", {"low": 0.3, "high": 0.4},
     E(0.35, 0.33, 0.37, parts=[["layer 0", 0.35, 0.33, 0.37], ["layer 1", 0.36, 0.34, 0.38]]),
     E(0.45, 0.33, 0.65, parts=[["layer 0", 0.35, 0.33, 0.37], ["layer 1", 0.6, 0.55, 0.65]]),
     E(0.35, 0.34, 0.36, parts=[["layer 0", 0.35, 0.34, 0.36]])),
    ("each_within", {"ranges": {"early": [0.0, math.inf], "middle": [-math.inf, 0.0]}},
     E(0.0, -0.15, 0.15, parts=[["early", 0.1, 0.05, 0.15], ["middle", -0.1, -0.15, -0.05]]),
     E(-0.1, -0.15, -0.05, parts=[["early", -0.1, -0.15, -0.05], ["middle", -0.1, -0.15, -0.05]]),
     E(0.0, -0.15, 0.15, parts=[["early", 0.1, 0.05, 0.15], ["middle", -0.1, -0.15, -0.05]])),
]


@pytest.mark.parametrize(("rule", "params", "good", "bad", "null"), RULE_CASES, ids=[c[0] for c in RULE_CASES])
def test_every_rule_passes_fails_and_is_not_diagnostic_when_the_null_passes(rule, params, good, bad, null):
    failing_null = bad
    assert decide(rule, params, good, failing_null)[0] == V.SUPPORTED
    assert decide(rule, params, bad, failing_null)[0] == V.NOT_SUPPORTED
    status, null_status, _ = decide(rule, params, good, null)
    assert status == V.NOT_DIAGNOSTIC and null_status == V.SUPPORTED
    # a model that fails where the null passes is a refutation, not "not diagnostic"
    status, null_status, _ = decide(rule, params, bad, null)
    assert status == V.NOT_SUPPORTED and null_status == V.SUPPORTED


def test_rules_cover_every_rule_the_registry_names():
    from sinkframes.paper import CLAIMS

    assert {c.rule for c in CLAIMS if c.rule} <= {case[0] for case in RULE_CASES} == set(V.RULES)


@pytest.mark.parametrize("rule", ["above", "below", "within", "at_least"])
def test_a_wider_interval_never_makes_a_claim_easier_to_pass(rule):
    params = dict(next(c[1] for c in RULE_CASES if c[0] == rule))
    centre = next(c[2] for c in RULE_CASES if c[0] == rule).bounds()[0]
    statuses = [V.apply(rule, E(centre, centre - w, centre + w), params)[0] for w in (0.0, 0.05, 0.2, 1.0)]
    order = {V.SUPPORTED: 0, V.INCONCLUSIVE: 1, V.NOT_SUPPORTED: 1}
    assert [order[s] for s in statuses] == sorted(order[s] for s in statuses)
    assert statuses[-1] == V.INCONCLUSIVE  # an interval wide enough to straddle the threshold decides nothing


def test_an_interval_that_straddles_the_threshold_is_inconclusive_and_nan_is_never_supported():
    assert V.apply("above", E(0.5, 0.4, 0.6), {"threshold": 0.5})[0] == V.INCONCLUSIVE
    assert V.apply("within", E(0.3, 0.25, 0.35), {"low": 0.3, "high": 0.4})[0] == V.INCONCLUSIVE
    assert V.apply("above", E(math.nan), {"threshold": 0.0})[0] == V.INCONCLUSIVE
    assert V.apply("equals", E("x", undetermined=True), {"expected": "x"})[0] == V.INCONCLUSIVE
    # round-off is zero: a uniform-attention KL change of 1e-17 is not below 0
    assert V.apply("below", E(-1e-17, -2e-17, -1e-18), {"threshold": 0.0})[0] == V.NOT_SUPPORTED


def test_flip_rule_without_any_sign_change_is_not_supported_and_undecided_signs_are_inconclusive():
    assert V.apply("flip_within", E(math.nan), {"low": 0.1, "high": 0.2})[0] == V.NOT_SUPPORTED
    assert V.apply("flip_within", E(math.nan, undetermined=True), {"low": 0.1, "high": 0.2})[0] == V.INCONCLUSIVE


def test_one_layer_outside_a_range_refutes_a_claim_about_every_layer():
    inside = [[f"layer {i}", 0.35, 0.34, 0.36] for i in range(5)]
    one_out = [*inside[:4], ["layer 4", 0.6, 0.55, 0.65]]
    # the range of the layer means spans the claim's range, but a layer range is not an interval
    assert V.apply("every_within", E(0.35, 0.34, 0.65, parts=one_out), {"low": 0.3, "high": 0.4})[0] == V.NOT_SUPPORTED
    assert V.apply("every_within", E(0.35, 0.34, 0.36, parts=inside), {"low": 0.3, "high": 0.4})[0] == V.SUPPORTED
    straddles = [*inside[:4], ["layer 4", 0.4, 0.38, 0.42]]
    assert V.apply("every_within", E(0.35, 0.34, 0.42, parts=straddles), {"low": 0.3, "high": 0.4})[0] == V.INCONCLUSIVE


def test_a_sign_claim_is_decided_at_the_thresholds_it_names():
    # negative below the flip, positive at 0.2: the mean over thresholds is negative, the claim at 0.2 is not
    parts = [["0.001", -0.5, -0.7, -0.3], ["0.01", -0.4, -0.6, -0.2], ["0.1", -0.3, -0.5, -0.1], ["0.2", 0.6, 0.4, 0.8]]
    est = E(-0.15, -0.7, 0.8, parts=parts)
    assert V.apply("every_below", est, {"threshold": 0.0, "at": ["0.001", "0.01", "0.1"]})[0] == V.SUPPORTED
    assert V.apply("every_below", est, {"threshold": 0.0})[0] == V.NOT_SUPPORTED
    assert V.apply("every_below", est, {"threshold": 0.0, "at": ["0.05"]})[0] == V.INCONCLUSIVE  # not measured there


def test_several_nulls_any_indistinguishable_makes_a_passing_model_not_diagnostic():
    good, failing, passing = E(0.7, 0.6, 0.8), E(0.3, 0.2, 0.4), E(0.9, 0.85, 0.95)
    status, rows, _ = V.rules.decide_all("above", {"threshold": 0.5}, good, [("a", failing), ("b", passing)])
    assert status == V.NOT_DIAGNOSTIC and [r.meets for r in rows] == [V.NOT_SUPPORTED, V.SUPPORTED]
    assert [r.differs for r in rows] == [True, False]
    status, _, _ = V.rules.decide_all("above", {"threshold": 0.5}, failing, [("b", passing)])
    assert status == V.NOT_SUPPORTED
    assert V.rules.decide_all("above", {"threshold": 0.5}, good, [("a", failing), ("c", None)])[0] == V.SUPPORTED


def test_a_large_effect_beside_a_small_null_that_meets_the_claim_is_supported():
    # the model's rise is seven times its random twin's: both meet "above 0", but the model differs from the twin
    model, twin = E(150.7, 140.0, 160.0), E(19.9, 18.0, 22.0)
    status, rows, _ = V.rules.decide_all("above", {"threshold": 0.0}, model, [("random-initialized twin", twin)])
    assert status == V.SUPPORTED and rows[0].meets == V.SUPPORTED and rows[0].differs is True
    assert "excludes 0" in rows[0].how
    # a model inside the null's interval is not diagnostic even where the null itself does not meet the claim
    status, rows, _ = V.rules.decide_all("above", {"threshold": 0.5}, E(0.56, 0.52, 0.6),
                                         [("null", E(0.48, 0.45, 0.53))])
    assert status == V.NOT_DIAGNOSTIC and rows[0].meets == V.INCONCLUSIVE and rows[0].differs is False


def test_the_difference_is_taken_in_the_claims_direction_and_part_by_part():
    # a null far *above* a model that must be below a threshold: the model is beyond the null in the claim's
    # direction
    status, rows, _ = V.rules.decide_all("below", {"threshold": 0.0}, E(-0.5, -0.6, -0.4), [("n", E(0.9, 0.8, 1.0))])
    assert status == V.SUPPORTED and rows[0].differs is True
    parts = [["early", 0.7, 0.6, 0.8], ["late", 0.9, 0.85, 0.95]]
    model = E(0.8, 0.6, 0.95, parts=parts)
    null_parts = [["early", 0.7, 0.65, 0.75], ["late", 0.55, 0.5, 0.58]]
    status, rows, _ = V.rules.decide_all("every_above", {"threshold": 0.5}, model,
                                         [("n", E(0.6, 0.5, 0.75, parts=null_parts))])
    assert status == V.NOT_DIAGNOSTIC and "1 of 2 parts" in rows[0].how  # early overlaps, late is apart


def _entropy_result(per_layer: np.ndarray, n: int = 12, seed: int = 0) -> ModelResult:
    """A value-space result whose corrected entropy is ``per_layer`` plus sentence noise shared by every layer."""
    M.registered()
    noise = np.random.default_rng(seed).normal(0, 0.01, (n, 1))
    x = np.asarray(per_layer, dtype=float)[None, :] + noise  # [sample, layer]
    return ModelResult("geometry_values", {**RECORD, "n_layers": x.shape[1]}, n, samples={"corrected_entropy": x},
                       params={"seed": 0})


def test_the_layer_order_null_passes_on_a_structureless_depth_profile_and_fails_on_a_structured_one():
    name = "values.entropy_last_minus_first"
    flat = _entropy_result(np.full(8, 2.0))
    model, null = M.MEASURES[name].fn(flat, "corrected"), M.layer_order_null(name, flat, "corrected")
    assert null.value == pytest.approx(0.0) and null.low == pytest.approx(0.0) and null.high == pytest.approx(0.0)
    # every layer alike: whatever passes for the model passes for the null, so a pass is not diagnostic
    status, rows, _ = V.rules.decide_all("below", {"threshold": 0.5}, model, [("layers in random order", null)])
    assert status == V.NOT_DIAGNOSTIC and null.permutation["p_less"] == 1.0 and rows[0].differs is False
    falling = _entropy_result(np.linspace(3.0, 1.0, 8))
    model, null = M.MEASURES[name].fn(falling, "corrected"), M.layer_order_null(name, falling, "corrected")
    assert model.value == pytest.approx(-2.0, abs=0.05) and null.low < 0 < null.high
    status, rows, _ = V.rules.decide_all("below", {"threshold": 0.0}, model, [("layers in random order", null)])
    # the order the model has is the most extreme there is: only orders with 3.0 first and 1.0 last reach it
    assert null.permutation["exact"] == 0.0 and null.permutation["p_less"] < 0.05
    assert status == V.SUPPORTED and rows[0].meets == V.INCONCLUSIVE and rows[0].differs is True


def test_every_depth_and_shape_claim_has_a_null_that_can_pass():
    from sinkframes.paper import CLAIMS

    shapes = ("late_minus_early", "peak_ratio", "dip_ratio", "u_contrast", "last_minus_first", "alignment_last",
              "_over_early")
    for c in CLAIMS:
        if c.testable and any(k in c.measure for k in shapes):
            nulls = M.MEASURES[c.measure].extra_nulls
            assert "layer_order" in nulls and "random_twin" in nulls and c.measure in M.LAYER_SHAPES, c.id
    for name in ("information.kl_first_middle_last", "information.kl_argmin_layer",
                 "spectral.centralization_middle_max", "positions.early_attractor_heads"):
        assert "random_twin" in M.MEASURES[name].extra_nulls, name


def test_the_twin_null_passes_where_the_architecture_alone_gives_the_shape_and_fails_where_training_does():
    from sinkframes.verdicts.evaluate import _Nulls

    name = "values.entropy_last_minus_first"
    m = M.MEASURES[name]
    falling = _entropy_result(np.linspace(3.0, 1.0, 8))
    assert _Nulls(falling).run(m, "random_twin", "corrected") is None  # no twin ran: the null is not run
    # a twin (random weights, same architecture) that falls as much: the fall owes nothing to training
    falling.data["twin"] = _entropy_result(np.linspace(3.0, 1.0, 8), seed=1)
    model, twin = m.fn(falling, "corrected"), _Nulls(falling).run(m, "random_twin", "corrected")
    assert twin.high < 0
    status, rows, _ = V.rules.decide_all("below", {"threshold": 0.0}, model, [("random-initialized twin", twin)])
    assert status == V.NOT_DIAGNOSTIC and rows[0].meets == V.SUPPORTED
    # a flat twin: the trained model's fall is its own
    falling.data["twin"] = _entropy_result(np.full(8, 2.0), seed=1)
    twin = _Nulls(falling).run(m, "random_twin", "corrected")
    status, rows, _ = V.rules.decide_all("below", {"threshold": 0.0}, model, [("random-initialized twin", twin)])
    assert status == V.SUPPORTED and rows[0].meets != V.SUPPORTED


def test_star_likeness_is_checked_against_thresholded_uniform_attention_too():
    assert "uniform_graph" in M.MEASURES["spectral.star_likeness"].extra_nulls
    assert "uniform_graph" in M.MEASURES["spectral.star_likeness_layers"].extra_nulls


def test_unknown_rule_and_status_are_refused():
    with pytest.raises(ValueError, match="unknown rule"):
        V.apply("roughly", E(1.0), {})
    with pytest.raises(ValueError, match="unknown status"):
        V.Verdict("x", "m", "holds", "partly supported")


def test_verdicts_survive_json():
    v = V.Verdict("E.kl_negative", "m", "holds", V.INCONCLUSIVE, E(-0.1, -0.2, 0.01, n=5, interval="b"),
                  E(0.0), V.NOT_SUPPORTED, "", "interval below 0")
    assert V.Verdict.from_json(json.loads(json.dumps(v.to_json()))) == v


def test_store_round_trip_and_bad_files_name_themselves(tmp_path):
    v = V.Verdict("E.kl_negative", "m", "reproduced", V.NOT_EVALUATED, reason="no official computation")
    V.save("information_geometry", "smoke", [v], tmp_path, models={"m": {"family": "llama"}})
    saved = V.load_all(tmp_path)["information_geometry"]
    assert saved.verdicts == [v] and saved.models == {"m": {"family": "llama"}} and saved.profile == "smoke"
    assert V.load_all(tmp_path, profile="offline") == {}
    (tmp_path / "broken.json").write_text("{}")
    with pytest.raises(ValueError, match="broken.json"):
        V.load_all(tmp_path)


# ----------------------------------------------------------------------------- bootstrap and nulls

def test_boot_on_constant_data_has_a_zero_width_interval_and_bootstraps_the_whole_statistic():
    e = V.boot(np.full((20, 3), 2.0), lambda m: float(m.max()))
    assert (e.value, e.low, e.high, e.n) == (2.0, 2.0, 2.0, 20)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 4))
    mx = V.boot(x, lambda m: float(m.max()), seed=1)
    assert mx.low <= mx.value <= mx.high and mx.high - mx.low < 0.5
    assert V.boot(x, lambda m: math.nan).undetermined


def test_boot_resamples_exactly_as_one_draw_per_replicate(monkeypatch):
    from sinkframes.verdicts import measures

    rng = np.random.default_rng(4)
    x = rng.normal(size=(23, 5, 3))  # [sample, layer, head]
    x[x > 1.5] = np.nan
    stat = lambda m: float(np.nanmax(m))  # noqa: E731

    def one_by_one(seed: int, n_boot: int) -> np.ndarray:
        g = np.random.default_rng(seed)
        draws = np.array([stat(np.nanmean(x[g.integers(0, 23, 23)], 0)) for _ in range(n_boot)])
        alpha = (1 - 0.95) / 2
        return np.array([np.quantile(draws, alpha), np.quantile(draws, 1 - alpha)])

    want = one_by_one(7, 300)
    for chunk in (1, 7 * x.size, 10**9):  # replicates resampled one, seven or all at a time
        monkeypatch.setattr(measures, "BOOT_CHUNK_VALUES", chunk)
        e = V.boot(x, stat, seed=7, n_boot=300)
        assert (e.low, e.high) == tuple(want)


def test_boot_on_few_sentences_computes_each_distinct_resample_once_with_the_same_interval():
    rng = np.random.default_rng(5)
    calls: list[int] = []

    def stat(m: np.ndarray) -> float:
        calls.append(1)
        return float(np.nanmax(m) - np.nanmin(m))

    for n in (2, 3, 4):
        x = rng.normal(size=(n, 4, 2))  # [sample, layer, head]
        x[0, 1, 0] = np.nan
        g = np.random.default_rng(3)
        draws = np.array([stat(np.nanmean(x[g.integers(0, n, n)], 0)) for _ in range(1000)])
        calls.clear()
        e = V.boot(x, stat, seed=3)
        assert (e.low, e.high) == (np.quantile(draws, 0.025), np.quantile(draws, 0.975))
        distinct = len({tuple(r) for r in np.random.default_rng(3).integers(0, n, (1000, n))})
        assert len(calls) == 1 + distinct <= 1 + n**n  # the point estimate, then one call per distinct resample


def test_uniform_and_dense_nulls_have_the_model_shapes():
    a = V.uniform_attention(5, 2, 3, causal=True)
    assert a.shape == (2, 3, 5, 5) and torch.allclose(a.sum(-1), torch.ones(2, 3, 5))
    assert float(a[0, 0, 0, 1]) == 0.0 and float(a[0, 0, 4, 0]) == pytest.approx(0.2)
    b = V.uniform_attention(4, 1, 1, causal=False)
    assert torch.allclose(b, torch.full((1, 1, 4, 4), 0.25))
    with pytest.raises(ValueError, match="at least one token"):
        V.uniform_attention(0, 1, 1, causal=True)


RECORD = {"ref": "hand", "family": "llama", "paper_frame": "centralized", "causal": True, "n_layers": 3, "n_heads": 2}


def _frames(make, lengths=(6, 8, 9, 12)) -> ModelResult:
    summaries = [FrameSummaryReducer()(stack(make(n), layers=3, heads=2), True) for n in lengths]
    return frames.frames_from_summaries(RECORD, summaries)


def test_null_result_is_the_same_analysis_on_uniform_attention():
    model = _frames(causal_first_sink)
    null = V.null_result(model)
    direct = _frames(causal_uniform)
    assert null.ref == "null:hand" and null.analysis == "frames"
    assert np.allclose(null.samples["first_token_share"], direct.samples["first_token_share"])


def test_the_frame_claim_beats_uniform_attention_which_reads_no_frame_at_any_length():
    short, long = (12, 13, 14, 16), (20, 25, 30, 35)
    for lengths in (short, long):
        by = {(v.claim, v.question): v for v in V.evaluate_model(_frames(causal_first_sink, lengths))}
        # every query on position 0: the first token takes everything
        assert by[("1.bos_share", "holds")].estimate.value == pytest.approx(1.0)
        assert by[("1.bos_share", "holds")].status == V.NOT_SUPPORTED  # 100 % is outside the printed 30-40 %
        assert ("1.bos_share", "reproduced") not in by  # no official notebook computes it: no verdict, not a count
        # the earlier rule read long uniform rows as centralized (argmax ties on position 0): the instrument reads none
        assert by[("3.1.centralized", "holds")].status == V.SUPPORTED
        assert by[("3.1.centralized", "holds")].null.value == "none"


def _information(make, lengths=(8, 10, 12, 14, 16, 18)) -> ModelResult:
    rec = {**RECORD, "n_layers": 3, "n_heads": 4}
    summaries = [InformationReducer()(stack(make(n), layers=3, heads=4), True) for n in lengths]
    return information.from_summaries(rec, summaries)


def test_information_measures_on_hand_built_samples_have_known_answers():
    r = _information(causal_uniform)
    red = np.array([[0.1, -0.2, -0.3], [0.3, -0.2, -0.1]])  # [sample, layer]
    for mode in ("faithful", "corrected"):
        r.samples[f"p90/{mode}/reduction"] = red
    r.samples["p90/mass_all_heads"] = np.array([[0.5, 0.9, 0.7], [0.5, 0.7, 0.9]])
    first = M.MEASURES["information.kl_first_layer"].fn(r, "corrected")
    assert first.value == pytest.approx(0.2) and first.low == pytest.approx(0.1) and first.high == pytest.approx(0.3)
    after = M.MEASURES["information.kl_regions_after_first"].fn(r, "corrected")
    assert [p[0] for p in after.parts] == ["middle", "late"]  # 3 layers: early is layer 0 alone, left out
    assert [p[1] for p in after.parts] == pytest.approx([-0.2, -0.2])
    assert M.MEASURES["information.kl_argmin_layer"].fn(r, "corrected").value in (1, 2)
    reg = M.MEASURES["information.concentration_regions"].fn(r, "corrected")
    assert [p[1] for p in reg.parts] == pytest.approx([0.5, 0.8, 0.8])
    assert reg.parts[0][2] == pytest.approx(0.5) and reg.parts[0][3] == pytest.approx(0.5)
    mx = M.MEASURES["information.concentration_max"].fn(r, "corrected")
    assert mx.value == pytest.approx(0.8) and mx.high == pytest.approx(0.9) and "layer 1" in mx.detail
    # a printed layer read at its depth: layer 0 of a 3-layer model is the only one near layer 0 of 28
    first_of_28 = information.concentration_near((0, 0), 28)(r, "corrected")
    assert first_of_28.value == pytest.approx(0.5) and "layers 0-0 of 3" in first_of_28.detail


def test_a_printed_layer_is_read_at_its_relative_depth_within_the_window():
    # layer 25 of 28 sits at depth 25/27 = 0.926; +-0.1 covers depths 0.826-1.0: layers 24-29 of a 30-layer model
    assert information.layers_near((25, 25), 28, 30) == [24, 25, 26, 27, 28, 29]
    # layer 21 of 28 (depth 0.778) in an 18-layer model: depths 0.678-0.878, layers 12-14 (12/17 = 0.706 ...)
    assert information.layers_near((21, 21), 28, 18) == [12, 13, 14]
    assert information.layers_near((23, 25), 28, 24) == [18, 19, 20, 21, 22, 23]


def test_ratios_over_thresholds_combine_as_a_geometric_mean():
    from sinkframes.analyses.spectral import _ratio_stat

    # 6 layers: early 0-1, middle 2-3, late 4-5; middle / early is 2 at one threshold and 1/2 at the other
    m = np.array([[1.0, 1.0, 2.0, 2.0, 1.0, 1.0], [2.0, 2.0, 1.0, 1.0, 2.0, 2.0]])  # [threshold, layer]
    stat = _ratio_stat(6, lambda g: g["middle"] / g["early"])
    assert stat(m) == pytest.approx(1.0)  # an arithmetic mean would read 1.25


def test_llama_kl_claim_excludes_layer_zero_and_encoder_claim_is_the_first_layer():
    r = _information(causal_uniform)
    for mode in ("faithful", "corrected"):
        r.samples[f"p90/{mode}/reduction"] = np.array([[0.3, -0.2, -0.1]] * 5 + [[0.2, -0.1, -0.2]] * 5)
    by = {(v.claim, v.question): v.status for v in V.evaluate_model(r)}
    assert by[("E.kl_negative", "holds")] == V.SUPPORTED  # positive layer 0 is the stated exception
    assert by[("5.1.kl_negative", "holds")] == V.NOT_SUPPORTED  # "consistently negative" has no exception


@pytest.mark.parametrize("rule", sorted(V.RULES))
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_no_rule_turns_a_non_finite_estimate_into_support(rule, bad):
    params = next(c[1] for c in RULE_CASES if c[0] == rule)
    for est in (E(bad), E(0.5, bad, 0.6), E(0.5, 0.4, bad), E(bad, bad, bad, undetermined=True)):
        assert V.apply(rule, est, params)[0] != V.SUPPORTED, (rule, est)
    assert V.apply(rule, E(0.5, 0.6, 0.4), params)[0] != V.SUPPORTED  # an inverted interval decides nothing


def test_measures_on_nan_attention_summaries_are_undetermined_not_numbers():
    r = _information(causal_uniform)
    for key in list(r.samples):
        if key != "n_tokens":
            r.samples[key] = np.full_like(np.asarray(r.samples[key], dtype=float), np.nan)
    for name in ("information.kl_first_layer", "information.kl_u_contrast", "information.concentration_max",
                 "information.concentration_regions", "information.kl_argmin_layer"):
        est = M.MEASURES[name].fn(r, "corrected")
        assert est.undetermined, name
        assert V.apply("above", est, {"threshold": 0.0})[0] == V.INCONCLUSIVE


def test_common_word_heads_counts_the_modal_word_and_leaves_first_tokens_out(monkeypatch):
    import pandas as pd

    from sinkframes.analyses import topology
    from sinkframes.results import ModelResult
    from sinkframes.verdicts import MEASURES

    spec = pd.DataFrame({"token": ["<bos>", "<bos>", ",", ",", ",", "the", "of", ","],
                         "faithful token": ["<bos>"] * 8})
    monkeypatch.setattr(topology, "head_specialization", lambda r: spec)
    r = ModelResult("topology", {"ref": "m"}, 2, data={"tokens": [["<bos>", "a", ","], ["<bos>", "the", "of"]]})
    fn = MEASURES["topology.common_word_heads"].fn
    est = fn(r, "corrected")
    assert est.value == 4 / 8 and "4 of 8 heads on ','" in est.detail
    assert fn(r, "faithful").value == 0.0  # every head on the first token: no word specialization


def test_rather_than_bos_asks_the_common_word_to_beat_the_first_token(monkeypatch):
    from sinkframes.analyses import topology
    from sinkframes.verdicts import MEASURES

    def result_with(first: float, low: float, high: float, word: float):
        monkeypatch.setattr(topology, "common_word_heads", lambda r, mode: V.Estimate(word, n=8, detail="w"))
        monkeypatch.setattr(topology, "first_token_heads",
                            lambda r, mode: V.Estimate(first, low, high, n=100, interval="95 % bootstrap"))
        return MEASURES["topology.word_over_first_heads"].fn(None, "corrected")

    # qwen05's case: the first token is still the plurality target of the specialized heads (0.357 against 0.214)
    est = result_with(0.357, 0.33, 0.38, 0.214)
    assert est.value == pytest.approx(0.214 - 0.357) and V.apply("above", est, {"threshold": 0.0})[0] == V.NOT_SUPPORTED
    est = result_with(0.1, 0.08, 0.12, 0.4)  # the word wins, whatever the sentences
    assert est.low == pytest.approx(0.4 - 0.12) and V.apply("above", est, {"threshold": 0.0})[0] == V.SUPPORTED


def test_the_bootstrap_means_without_nan_are_the_nan_aware_means_bit_for_bit():
    """``boot`` averages a NaN-free input with ``np.mean`` (no masking copy): the resample means, and so the interval,
    must be those ``np.nanmean`` gives, on inputs of the shapes the measures pass."""
    from sinkframes.verdicts import measures

    rng = np.random.default_rng(3)
    for shape in [(20,), (200, 24), (100, 7, 30), (16, 14, 64)]:
        x = rng.standard_normal(shape) * 37.0
        got = measures.boot(x, lambda m: float(np.sum(np.ravel(m) * np.arange(np.size(m)))), seed=5, n_boot=300)
        idx = np.random.default_rng(5).integers(0, shape[0], (300, shape[0]))
        draws = np.array([float(np.sum(np.ravel(m) * np.arange(np.size(m)))) for m in np.nanmean(x[idx], 1)])
        alpha = (1 - 0.95) / 2  # as boot computes it
        assert (got.low, got.high) == (float(np.quantile(draws, alpha)), float(np.quantile(draws, 1 - alpha)))
    y = rng.standard_normal((30, 4))
    y[3, 1] = np.nan  # with a NaN the NaN-aware means are kept
    est = measures.boot(y, lambda m: float(m[1]), seed=2, n_boot=200)
    idx = np.random.default_rng(2).integers(0, 30, (200, 30))
    with np.errstate(all="ignore"):
        draws = np.nanmean(y[idx], 1)[:, 1]
    assert est.high == float(np.quantile(draws, 1 - (1 - 0.95) / 2))
