"""The formation test (does the position encoding decide whether a sink forms on natural text?) on known cases."""

from __future__ import annotations

import json
from math import comb

import pytest

from sinkframes.analyses import formation as fm
from sinkframes.training import text_lm as tl


def _records(formed_at: int | None, last: int = 8000) -> list[dict]:
    return [{"step": s, "formed": formed_at is not None and s >= formed_at,
             "head_share": [[0.9, 0.1], [0.2, 0.35]]} for s in range(0, last + 1, 250)]


def _runs(formed: dict[str, int]) -> dict[str, list[dict]]:
    """Every run of the design; ``formed`` maps position to how many of its seeds form a sink (at step 5000)."""
    return {tl.grid_name(p, s): _records(5000 if s < formed.get(p, 0) else None)
            for p in tl.FORMATION_POSITIONS for s in tl.FORMATION_SEEDS}


def test_the_new_runs_differ_from_the_grid_only_in_their_seed_and_the_long_runs_only_in_their_stop():
    for name, recipe in tl.FORMATION.items():
        assert name not in tl.GRID and recipe.seed not in tl.GRID_SEEDS
        assert recipe == tl.GRID_BASE.with_(name=name, position=recipe.position, seed=recipe.seed)
    assert len(tl.FORMATION) == len(tl.FORMATION_POSITIONS) * (len(tl.FORMATION_SEEDS) - len(tl.GRID_SEEDS))
    for recipe in tl.LONG.values():
        grid = tl.GRID[tl.grid_name(recipe.position, recipe.seed)]
        assert recipe.with_(name=grid.name, stop_at=grid.stop_at) == grid
        assert recipe.last_step == tl.LONG_STOP == 3 * grid.last_step


def test_a_clear_split_is_supported_with_the_exact_p_value():
    rows = fm.formation_cells(_runs({"rope": 5}))
    test = fm.formation_test(rows)
    assert (test.rotary_formed, test.rotary_runs, test.non_rotary_formed, test.non_rotary_runs) == (5, 5, 0, 10)
    assert test.p_value == pytest.approx(1 / comb(15, 5))
    assert test.verdict == "supported"


def test_a_weak_split_and_the_opposite_split_are_not_supported():
    weak = fm.formation_test(fm.formation_cells(_runs({"rope": 2})))  # 2 of 5 against 0 of 10
    assert weak.p_value == pytest.approx(comb(5, 2) / comb(15, 2)) and weak.verdict == "not supported"
    three = fm.formation_test(fm.formation_cells(_runs({"rope": 3})))  # 3 of 5 against 0 of 10: p = 10 / 455
    assert three.p_value == pytest.approx(10 / 455) and three.verdict == "supported"
    opposite = fm.formation_test(fm.formation_cells(_runs({"nope": 5, "learned": 5})))
    assert opposite.p_value == pytest.approx(1.0) and opposite.verdict == "not supported"


def test_no_verdict_while_a_run_is_missing_or_short():
    runs = _runs({"rope": 5})
    runs[tl.grid_name("nope", 4)] = _records(None, last=7750)
    test = fm.formation_test(fm.formation_cells(runs))
    assert test.finished == 14 and test.needed == 15 and test.verdict is None and test.p_value is None
    del runs[tl.grid_name("nope", 4)]
    assert fm.formation_test(fm.formation_cells(runs)).verdict is None


def test_a_sink_formed_after_step_8000_does_not_count_and_one_lost_later_still_counts():
    assert not fm.formed_by(_records(8250, last=24000))
    lost = _records(5000)
    for r in lost[-5:]:
        r["formed"] = False
    assert fm.formed_by(lost) and fm.first_formed(lost) == 5000


def test_gu_sink_head_share_counts_heads_above_the_threshold():
    assert fm.sink_head_share({"head_share": [[0.9, 0.1], [0.2, 0.35]]}) == 0.5
    assert fm.sink_head_share({"head_share": [[0.3, 0.3]]}) == 0.0  # above, not at


def test_the_log_refuses_a_run_of_another_recipe(tmp_path):
    log = tmp_path / "formation.jsonl"
    name = tl.grid_name("rope", 2)
    bad = tl.recipe_dict(tl.FORMATION[name].with_(lr=1e-2))
    log.write_text(json.dumps({"recipe": name, "config": bad}) + "\n")
    with pytest.raises(ValueError, match="not the test's recipe"):
        fm.read_runs(log)
    log.write_text(json.dumps({"recipe": name, "config": tl.recipe_dict(tl.FORMATION[name])}) + "\n"
                   + "".join(json.dumps({"recipe": name, **r}) + "\n" for r in _records(None)[:3]))
    assert [r["step"] for r in fm.read_runs(log)[name]] == [0, 250, 500]
    with pytest.raises(ValueError, match="both"):
        fm.all_runs({name: []}, {name: []})


def test_the_gu_table_counts_sink_heads_per_encoding_beside_their_published_share():
    runs = _runs({"rope": 2})  # every run: 2 of 4 heads above 0.3 (0.9 and 0.35)
    runs[tl.grid_name("learned", 4)] = _records(None, last=7750)  # unfinished: left out
    table = fm.gu_comparison(runs).set_index("position encoding")
    assert list(table.index) == ["rope", "nope", "learned"]
    assert table.loc["rope", "runs"] == 5 and table.loc["learned", "runs"] == 4
    assert table.loc["rope", "sink heads here, % (mean)"] == pytest.approx(50.0)
    assert table.loc["rope", "runs that formed a sink"] == 2 and table.loc["nope", "runs that formed a sink"] == 0
    assert table.loc["nope", "Gu et al., %"] == pytest.approx(20.35)
    assert table.loc["learned", "Gu et al., %"] == pytest.approx(33.13)
    assert fm.tokens_seen() == pytest.approx(8000 * 32 * 128 / 1e6)


def test_the_formation_text_draws_no_answer_before_every_run_is_in():
    runs = _runs({"rope": 5})
    runs[tl.grid_name("nope", 4)] = _records(None, last=7750)
    text = fm.formation_text(fm.formation_test(fm.formation_cells(runs)))
    assert "14 of the test's 15 runs" in text and "no answer is drawn before" in text
    done = fm.formation_text(fm.formation_test(fm.formation_cells(_runs({"rope": 5}))))
    assert "the claim is **supported**" in done


def _rows(rotary_formed: int, non_rotary_formed: int, finished: int = 15) -> list[dict]:
    rows = []
    for k, (p, s) in enumerate((p, s) for p in ("rope", "nope", "learned") for s in range(5)):
        formed = (s < rotary_formed) if p == "rope" else ((5 * (p == "learned") + s) < non_rotary_formed)
        rows.append({"run": f"grid-{p}-s{s}", "position": p, "seed": s, "finished": k < finished,
                     "formed": formed if k < finished else None})
    return rows


def test_the_registry_claim_is_decided_by_fishers_test_once_every_run_is_in():
    from sinkframes import verdicts
    from sinkframes.analyses import formation

    def holds(rows):
        (v,) = [v for v in verdicts.evaluate([formation.formation_result(rows)]) if v.question == "holds"]
        return v

    waiting = holds(_rows(5, 0, finished=9))
    assert waiting.claim == "3.4.sink_forms.text" and waiting.status == verdicts.NOT_EVALUATED
    assert "9 of the test's 15 runs" in waiting.reason
    clear = holds(_rows(5, 0))  # 5 of 5 against 0 of 10: p = 1 / C(15, 5)
    assert clear.status == verdicts.SUPPORTED and abs(clear.estimate.value - 1 / 3003) < 1e-12
    weak = holds(_rows(1, 0))  # 1 of 5 against 0 of 10: p = 1/3
    assert weak.status == verdicts.NOT_SUPPORTED and abs(weak.estimate.value - 1 / 3) < 1e-9
    assert [v.question for v in verdicts.evaluate([formation.formation_result(_rows(5, 0))])] == ["holds"]


def _long_records(formed_at: int | None, last: int, shift: float = 0.0) -> list[dict]:
    """Probes every 250 steps; layer 1's share rises to 0.6 at ``formed_at`` (lower bound 0.55), else stays 0.2."""
    out = []
    for s in range(0, last + 1, 250):
        formed = formed_at is not None and s >= formed_at
        share = 0.6 if formed else 0.2
        out.append({"step": s, "loss": 4.0 + shift, "formed": formed, "first_share": [0.1, share],
                    "first_low": [0.09, share - 0.05], "head_share": [[0.9, 0.1], [0.2, 0.35]]})
    return out


def test_the_long_runs_report_when_a_sink_formed_or_how_far_none_did():
    runs = {"long-nope-s0": _long_records(None, 24000), "long-learned-s0": _long_records(12000, 24000)}
    grid = {"grid-nope-s0": _long_records(None, 8000),
            "grid-learned-s0": _long_records(None, 8000, shift=1e-4)}
    rows = fm.long_run_rows(runs, grid).set_index("run")
    assert list(rows.index) == list(tl.LONG)
    assert rows.loc["long-nope-s0", "step"] == 24000 and fm._missing(rows.loc["long-nope-s0", "sink step"])
    assert rows.loc["long-learned-s0", "sink step"] == 12000
    assert rows.loc["long-nope-s0", "largest layer"] == 1
    assert rows.loc["long-nope-s0", "share low"] == pytest.approx(0.15)
    assert rows.loc["long-nope-s0", "tokens (M)"] == pytest.approx(24000 * 32 * 128 / 1e6)
    assert rows.loc["long-nope-s0", "sink heads % at 8000"] == pytest.approx(50.0)
    # the first 33 probes (steps 0 to 8000) are compared with the grid run's: equal, or all different by 1e-4
    assert (rows.loc["long-nope-s0", "equal probes"], rows.loc["long-nope-s0", "compared probes"]) == (33, 33)
    assert (rows.loc["long-learned-s0", "equal probes"], rows.loc["long-learned-s0", "compared probes"]) == (0, 33)
    assert fm._missing(rows.loc["long-rope-s1", "step"])
    text = fm.long_run_text(fm.long_run_rows(runs, grid))
    assert "`long-nope-s0` ran all 24,000 steps and formed **no sink** by step 24,000 (98M tokens)" in text
    assert "`long-learned-s0` ran all 24,000 steps and formed a sink at step 12,000 (49M tokens), after" in text
    assert "0 of its 33 probes up to step 8,000 equal" in text and "`long-rope-s1` has not been trained yet." in text
    assert (rows.loc["long-learned-s0", "probes after"], rows.loc["long-learned-s0", "unformed after"]) == (48, 0)
    assert fm._missing(rows.loc["long-nope-s0", "probes after"])  # no sink: nothing after it to count
    assert "(it held at all 48 later probes; at its last probe layer 1's share is 0.600, lower bound 0.550)" in text


def test_a_sink_that_falls_below_the_rule_again_is_said_to():
    records = _long_records(1000, 2000)
    records[6]["formed"] = False  # step 1500: the lower bound under 0.5 again
    rows = fm.long_run_rows({"long-rope-s1": records}, {}).set_index("run")
    assert (rows.loc["long-rope-s1", "probes after"], rows.loc["long-rope-s1", "unformed after"]) == (4, 1)
    text = fm.long_run_text(rows.reset_index())
    assert "formed a sink at step 1,000 (4M tokens), by the test's step 8,000 (at 1 of its 4 later probes" in text


def test_a_long_run_still_training_says_how_far_it_got():
    rows = fm.long_run_rows({"long-rope-s1": _long_records(None, 10250)}, {})
    text = fm.long_run_text(rows)
    assert "`long-rope-s1` has reached step 10,250 of 24,000 so far (it is continued from its saved state)" in text
    assert "probes up to step" not in text  # no grid run to compare with


def test_the_long_run_figure_plots_the_largest_layer_and_the_sink_head_percentage():
    import matplotlib

    matplotlib.use("Agg")
    from sinkframes.figures.controlled import long_run_curves

    runs = {"long-nope-s0": _long_records(None, 1000), "long-learned-s0": _long_records(500, 1000)}
    fig = long_run_curves(runs)
    left = {ln.get_label(): ln for ln in fig.axes[0].get_lines() if ln.get_label() in runs}
    right = {ln.get_label(): ln for ln in fig.axes[1].get_lines() if ln.get_label() in runs}
    assert list(left["long-learned-s0"].get_ydata()) == pytest.approx([0.2, 0.2, 0.6, 0.6, 0.6])
    assert list(right["long-nope-s0"].get_ydata()) == pytest.approx([50.0] * 5)  # 0.9 and 0.35 of 4 heads
    assert left["long-nope-s0"].get_color() != left["long-learned-s0"].get_color()


def test_the_long_run_takeaway_names_each_trained_run():
    rows = fm.long_run_rows({"long-nope-s0": _long_records(None, 9000), "long-learned-s0": _long_records(500, 1000)},
                            {})
    assert fm.long_run_takeaway(rows) == "long-nope-s0: no sink by step 9,000; long-learned-s0: a sink at step 500."
    assert fm.long_run_takeaway(fm.long_run_rows({}, {})) == ""


def test_the_scorecard_line_says_the_long_runs_are_observed_and_compares_gu_et_al_scale():
    rows = fm.long_run_rows({"long-nope-s0": _long_records(None, 24000), "long-learned-s0": _long_records(500, 1000)},
                            {})
    line = fm.sooner_or_never(rows)
    assert "long-nope-s0: no sink by step 24,000; long-learned-s0: a sink at step 500." in line
    assert "one per cell, observed, not a verdict" in line
    assert line.endswith("with 5B tokens, about 51 times the 98M these runs saw.")  # 5e9 / (24000 * 32 * 128)
    assert fm.sooner_or_never(fm.long_run_rows({}, {})) == ""
