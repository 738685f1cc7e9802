"""The natural-text position-encoding grid: its recipes, its probe's frame measures, its log read back, its verdicts."""

from __future__ import annotations

import json
import math

import pytest
import torch

from sinkframes.analyses import text_grid as G
from sinkframes.analyses.controlled import step_of
from sinkframes.training import text_lm as T
from sinkframes.training.tiny import POSITIONS
from sinkframes.verdicts import MEASURES
from sinkframes.verdicts.verdict import NOT_EVALUATED, NOT_SUPPORTED, SUPPORTED

DOCS = [(f"doc{i}.txt", f"The function number {i} returns a list of {i % 7} items. " * 20) for i in range(40)]
SMALL = T.LMRecipe("t", d_model=32, n_heads=2, n_layers=2, d_mlp=64, seq_len=32, batch_size=8, steps=40, warmup=5)


def test_the_grid_cells_differ_only_in_position_encoding_and_seed_and_share_one_data_order():
    assert set(T.GRID_POSITIONS) == set(POSITIONS) and len(T.GRID) == len(POSITIONS) * len(T.GRID_SEEDS)
    fields = {name: T.recipe_dict(r) for name, r in T.GRID.items()}
    rest = [{k: v for k, v in f.items() if k not in ("name", "position", "seed")} for f in fields.values()]
    assert all(r == rest[0] for r in rest)
    assert {r.batch_seed for r in T.GRID.values()} == {1000} and {r.last_step for r in T.GRID.values()} == {8000}
    # the grid's recipe is the search's wd0.5-48k, stopped early: the same weights up to the stop
    base = T.recipe_dict(T.SCOUTS["wd0.5-48k"])
    assert {k: v for k, v in rest[0].items() if k not in ("data_seed", "stop_at")} == {
        k: v for k, v in base.items() if k not in ("name", "position", "seed")}
    # fields at their default stay out of a recipe's record, so that the search's logs still match their recipes
    assert "data_seed" not in base and "stop_at" not in base
    with pytest.raises(ValueError, match="stop_at"):
        T.BASE.with_(stop_at=T.BASE.steps + 1)


def test_a_data_seed_equal_to_the_default_changes_nothing_and_a_stop_ends_the_run_on_its_schedule():
    train, held, vocab, bos = T.token_streams(DOCS, vocab=300)
    a, ra = T.train_lm(SMALL, train, held, vocab, bos, probe_every=10, progress=None)
    b, rb = T.train_lm(SMALL.with_(data_seed=SMALL.seed + 1000), train, held, vocab, bos, probe_every=10,
                       progress=None)
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values(), strict=True))
    # stopped at step 20 of a 40-step schedule: the records of the whole run up to step 20
    _, stopped = T.train_lm(SMALL.with_(stop_at=20), train, held, vocab, bos, probe_every=10, progress=None)
    strip = [{k: v for k, v in r.items() if k not in ("wall", "cpu")} for r in stopped]
    assert strip == [{k: v for k, v in r.items() if k not in ("wall", "cpu")} for r in ra[:3]]
    # another weight seed on the same data order differs; the data order alone differs too
    c, _ = T.train_lm(SMALL.with_(seed=1, data_seed=1000), train, held, vocab, bos, probe_every=40, progress=None)
    d, _ = T.train_lm(SMALL.with_(data_seed=7), train, held, vocab, bos, probe_every=40, progress=None)
    assert not torch.equal(c.embed.weight, a.embed.weight) and not torch.equal(d.embed.weight, a.embed.weight)


def _attention(kind: str, n: int = 16) -> torch.Tensor:
    mask = torch.tril(torch.ones(n, n))
    w = mask / mask.sum(-1, keepdim=True)  # uniform causal rows
    if kind == "sink":
        w = torch.zeros(n, n)
        w[:, 0] = 1.0
    return w.expand(8, 2, 2, n, n).clone()  # [window, layer, head, query, key]


def test_the_probe_fields_label_a_known_sink_and_uniform_attention():
    sink = G.probe_fields(_attention("sink"))
    assert sink["formed"] and sink["frame"] == "centralized" and sink["location"] == ["first token"] * 2
    assert sink["first_low"] == pytest.approx([1.0, 1.0])
    flat = G.probe_fields(_attention("uniform"))
    assert not flat["formed"] and flat["location"] == ["none", "none"]
    json.dumps(sink), json.dumps(flat)  # the log takes them as they are


def _records(peak: float, frame: str, sink_from: int | None, losses: tuple[float, ...]) -> list[dict]:
    steps = (0, 2000, 4000, 6000, 8000)
    out = []
    for step, loss in zip(steps, losses, strict=True):
        share = peak if sink_from is not None and step >= sink_from else 0.05
        out.append({"step": step, "loss": loss, "first_share": [share, 0.04], "best_head": [share, 0.05],
                    "head_share": [[share, share], [0.04, 0.04]], "first_low": [share - 0.05, 0.03],
                    "first_high": [share + 0.05, 0.05], "last_share": [0.01, 0.05],
                    "location": ["first token" if share > 0.5 else "none", "none"],
                    "frame": frame if step else "distributed", "formed": share - 0.05 > 0.5,
                    "wall": step / 10, "cpu": step / 10})
    return out


def _log(tmp_path, runs: dict[str, list[dict]], config: dict | None = None):
    log = tmp_path / "grid.jsonl"
    with log.open("w") as fh:
        for name, records in runs.items():
            fh.write(json.dumps({"recipe": name, "config": config or T.recipe_dict(T.GRID[name])}) + "\n")
            for r in records:
                fh.write(json.dumps({"recipe": name, **r}) + "\n")
    return log


FAST = (8.3, 4.5, 4.2, 4.0, 3.9)  # half the fall (8.3 -> 3.9) reached at step 2000


def test_the_log_reads_back_into_rows_with_sink_and_loss_steps(tmp_path):
    runs = {"grid-rope-s0": _records(0.8, "centralized", 4000, FAST),
            "grid-nope-s0": _records(0.8, "centralized", None, FAST),
            "grid-learned-s0": _records(0.8, "centralized", 4000, FAST)[:3]}  # not finished: left out
    rows = G.grid_rows(G.read_grid_log(_log(tmp_path, runs)))
    assert set(rows["run"]) == {"grid-rope-s0", "grid-nope-s0"}
    rope = rows[rows["run"] == "grid-rope-s0"]
    assert set(rope["sink_step"]) == {4000} and set(rope["loss_step"]) == {2000}
    assert set(rows[rows["run"] == "grid-nope-s0"]["sink_step"].map(step_of)) == {None}
    assert rope["final"].tolist() == [False] * 4 + [True]
    # a run logged with another recipe under a grid name is refused: it was not trained alike
    with pytest.raises(ValueError, match="not the grid's recipe"):
        G.read_grid_log(_log(tmp_path, {"grid-rope-s0": runs["grid-rope-s0"]},
                             config={**T.recipe_dict(T.GRID["grid-rope-s0"]), "lr": 1e-2}))
    # a run continued from a saved state after a later probe had been logged keeps one record per step
    log = _log(tmp_path, {"grid-rope-s0": runs["grid-rope-s0"]})
    with log.open("a") as fh:
        fh.write(json.dumps({"recipe": "grid-rope-s0", "resumed_at": 6000, "probe_reproduced": True}) + "\n")
        fh.write(json.dumps({"recipe": "grid-rope-s0", **runs["grid-rope-s0"][-1]}) + "\n")
    assert [r["step"] for r in G.read_grid_log(log)["grid-rope-s0"]] == [0, 2000, 4000, 6000, 8000]


def test_the_natural_text_claims_are_decided_on_the_grid_and_its_step_zero_null(tmp_path):
    from sinkframes.verdicts import evaluate

    runs = {}
    for seed in T.GRID_SEEDS:
        runs[T.grid_name("rope", seed)] = _records(0.8, "centralized", 4000, FAST)
        runs[T.grid_name("rope_1e6", seed)] = _records(0.7, "distributed", 4000, FAST)
        runs[T.grid_name("nope", seed)] = _records(0.9, "centralized", 4000, FAST)
    result = G.grid_result(G.grid_rows(G.read_grid_log(_log(tmp_path, runs))))
    assert result is not None and result.family == "controlled-text"
    lag = MEASURES["controlled.sink_lag"].fn(result, "corrected")
    assert lag.value == pytest.approx(math.log2(4000 / 2000)) and lag.n == 6
    found = {v.claim: v for v in evaluate([result]) if v.question == "holds"}
    # the logged labels are the earlier rule's: the label claim waits for runs the frame instrument can read
    assert found["3.4.encoding_decides.text"].status == NOT_EVALUATED
    assert "earlier rule" in found["3.4.encoding_decides.text"].reason
    assert found["3.4.scaled_rope_bias.text"].status == SUPPORTED  # 0.7 below 0.8, paired, in both seeds
    assert found["B.early_emergence.text"].status == NOT_SUPPORTED  # the sink came a doubling after the loss
    assert not any(c.startswith(("3.4.encoding_decides.trained", "B.early_emergence.trained")) for c in found)
    assert G.grid_result(G.grid_rows({})) is None


def test_the_page_reports_what_is_trained_and_what_it_shows(tmp_path):
    from sinkframes.figures.controlled import text_grid_curves
    from sinkframes.report import controlled as R

    runs = {"grid-rope-s0": _records(0.8, "centralized", 4000, FAST),
            "grid-nope-s0": _records(0.8, "centralized", None, FAST),
            "grid-learned-s0": _records(0.8, "centralized", 4000, FAST)[:3]}
    read = G.read_grid_log(_log(tmp_path, runs))
    rows = G.grid_rows(read)
    table = R.text_grid_table(rows).set_index("position")
    assert table.loc["rope", "first_share"] == 0.8 and table.loc["rope", "first_low"] == pytest.approx(0.75)
    assert (table.loc["rope", "sink_step"], table.loc["nope", "sink_step"]) == ("4000", "never")
    assert table.loc["rope", "loss_step"] == "2000" and table.loc["rope", "layer"] == 0
    progress = R.text_grid_progress(read, table.reset_index())
    assert progress.startswith("2 of the grid's 14 runs have reached step 8000")
    assert "`grid-learned-s0` (step 4000)" in progress and "`grid-rope-s1`" in progress
    summary = R.text_grid_summary(table.reset_index(), rows)
    assert "- `nope`: seed 0: **no sink**" in summary and "a sink formed at step 4000" in summary
    assert "At step 0 (random initialization) the earlier rule labels the same runs distributed (2 runs)" in summary
    assert "earlier-rule label centralized" in summary  # the logged labels say which rule made them
    assert R.text_grid_takeaway(table.reset_index()).endswith(
        "per encoding (of the seeds trained so far): RoPE 1 of 1; no positions 0 of 1.")
    # once every run is trained the takeaway no longer qualifies its counts
    whole = {name: _records(0.8, "centralized", 4000 if run.position == "rope" else None, FAST)
             for name, run in T.GRID.items()}
    whole_rows = G.grid_rows(G.read_grid_log(_log(tmp_path, whole)))
    assert G.complete(whole_rows)
    assert R.text_grid_takeaway(R.text_grid_table(whole_rows)).startswith(
        "Runs with a first-token sink by step 8000, per encoding: RoPE 2 of 2;")
    text_grid_curves(rows, R.uniform_first_share(128))
    # nothing finished: an empty table, and the page says so
    empty = R.text_grid_table(G.grid_rows({}))
    assert empty.empty and "nothing to compare" in R.text_grid_summary(empty)
    assert R.text_grid_progress({}, empty).startswith("0 of the grid's 14 runs")


def test_the_claims_wait_for_the_whole_grid_and_one_seed_gives_no_seed_null(tmp_path):
    from sinkframes.verdicts import NULLS

    one = {name: _records(0.8, "centralized", 4000, FAST) for name, r in T.GRID.items() if r.seed == 0}
    rows = G.grid_rows(G.read_grid_log(_log(tmp_path, one)))
    assert not G.complete(rows)
    waiting = G.waiting(rows)
    assert [c for c, _ in waiting] == list(G.TEXT_CLAIMS) and len(G.TEXT_CLAIMS) == 3
    assert "7 of the grid's 14 runs" in waiting[0][1]
    null = NULLS["seed_label_changes"](G.grid_result(rows), "corrected")
    assert null is not None and null.undetermined  # one seed: nothing to change between
    every = {name: _records(0.8, "centralized", 4000, FAST) for name in T.GRID}
    rows = G.grid_rows(G.read_grid_log(_log(tmp_path, every)))
    assert G.complete(rows) and G.waiting(rows) == []


def test_the_scorecard_says_the_text_claims_wait_for_the_grid():
    from sinkframes.paper.claims import CLAIMS
    from sinkframes.report.scorecard import note_for

    claim = next(c for c in CLAIMS if c.id == "B.early_emergence.text")
    note = note_for(claim, {"decoder grid (softmax)": {"family": "controlled-decoder", "paper_frame": "controlled",
                                                       "causal": True}}, "offline", {"controlled_emergence"})
    assert note.startswith("not evaluated yet: chapter 9 decides it once every run of the natural-text grid")


def test_every_position_encoding_has_a_readable_name():
    from sinkframes.training.tiny import POSITION_NAMES, POSITIONS

    assert set(POSITION_NAMES) == set(POSITIONS)
    assert all("_" not in name for name in POSITION_NAMES.values())  # no configuration name on a figure
