"""The Appendix B analysis: the reducer on known matrices, checkpoint order, sink emergence and its verdicts."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

from sinkframes import verdicts as V
from sinkframes.analyses import rmt as R
from sinkframes.book.params import parameter_problems
from sinkframes.verdicts import measures as M
from tests.attention_cases import causal_first_sink, causal_uniform, stack

RECORD = {"ref": "m", "family": "llama", "paper_frame": "centralized", "causal": True, "n_layers": 2}


def _result(mats: list[torch.Tensor]) -> R.ModelResult:
    """A model result from one ``[layer, head, query, key]`` tensor per sentence."""
    return R.from_summaries(dict(RECORD), [R.RMTReducer()(a, True) for a in mats])


def test_reducer_on_a_perfect_sink_and_on_uniform_attention() -> None:
    sink = _result([stack(causal_first_sink(8))] * 3)
    uni = _result([stack(causal_uniform(8))] * 3)
    assert np.allclose(sink.samples["first_token_share"], 1.0)
    # corrected: the sink's deviation from uniform causal attention is one dominant direction; uniform has none
    assert np.all(sink.samples["corrected/participation_ratio"] < 1.1)
    assert np.allclose(sink.samples["corrected/n_outliers"], 1.0)
    assert np.allclose(uni.samples["corrected/rms_deviation"], 0.0)
    assert np.allclose(uni.samples["corrected/n_outliers"], 0.0)
    assert np.isnan(uni.samples["corrected/participation_ratio"]).all()
    # official: eigenvalues of a causal matrix are its diagonal; the sink matrix has diagonal (1, 0, ..., 0)
    assert np.all(np.isinf(sink.samples["faithful/spectral_gap"]))
    assert np.allclose(sink.samples["faithful/participation_ratio"], 1.0)
    assert np.allclose(uni.samples["first_token_share"], np.mean([1 / (q + 1) for q in range(1, 8)]))
    d = 1 / np.arange(1, 9)  # the diagonal of uniform causal attention
    assert np.allclose(uni.samples["faithful/participation_ratio"], d.sum() ** 2 / np.sum(d**2))
    assert uni.layers["first_token_share"].iloc[0] == pytest.approx(uni.samples["first_token_share"].mean())
    table = R.faithful_layers(sink)
    assert (table["spectral_gap_count"] == 0).all()  # infinite values are dropped, as officially


def _series(shares: dict[str, float], n: int = 10, seed: int = 0) -> R.Series:
    """A run whose checkpoint ``name`` puts a share ``s`` of every query's weight on position 0
    (the rest spread uniformly), with sentence-to-sentence noise."""
    rng = np.random.default_rng(seed)
    ckpts, results = [], []
    for name, s in shares.items():
        mats = []
        for _ in range(n):
            share = float(np.clip(s + rng.normal(0, 0.02), 0, 1))
            a = (1 - share) * causal_uniform(12) + share * causal_first_sink(12)
            mats.append(stack(a))
        ckpts.append(R.Checkpoint(name, f"/ckpt/{name}"))
        results.append(_result(mats))
    return R.Series(ckpts, results, [1.0] * len(ckpts), seed)


def test_emergence_finds_the_first_checkpoint_above_the_threshold() -> None:
    s = _series({"step0": 0.0, "step8": 0.1, "step64": 0.75, "step512": 0.9, "step4096": 0.95})
    em = R.emergence(s)
    assert em["formed_at"] == 64 and em["mean_above_at"] == 64 and em["stays_formed"]
    assert em["final_step"] == 4096 and em["final_share"][0] > 0.9
    est = M.MEASURES["rmt.sink_formed_fraction"].fn(R.series_result(s, "run"), "corrected")
    assert est.value == pytest.approx(64 / 4096) and not est.undetermined
    assert R.sink_formed_fraction(R.series_result(s, "run"), "faithful") is None
    null = M.NULLS["untrained_series"](R.series_result(s, "run"), "corrected")
    assert null.value == math.inf  # step 0 has no sink: the untrained run never forms one


def test_no_sink_is_undetermined_and_a_sink_at_initialization_is_not_diagnostic() -> None:
    none = _series({"step0": 0.0, "step100": 0.1, "step1000": 0.2})
    est = R.sink_formed_fraction(R.series_result(none, "run"), "corrected")
    assert est.undetermined and R.emergence(none)["formed_at"] is None
    born = _series({"step0": 0.8, "step100": 0.8, "step1000": 0.8})
    res = R.series_result(born, "run")
    found = [v for v in V.evaluate([res]) if v.claim == "B.early_emergence" and v.question == "holds"]
    assert found and found[0].status == V.NOT_DIAGNOSTIC


def test_series_verdicts_cover_the_appendix_b_claims() -> None:
    s = _series({"step0": 0.0, "step8": 0.1, "step64": 0.75, "step4096": 0.95})
    found = V.evaluate([R.series_result(s, "run")])
    claims = {v.claim for v in found}
    assert claims == {"B.early_emergence"}  # B.spectral_gap is about Pythia sizes, not one run's checkpoints
    early = [v for v in found if v.claim == "B.early_emergence" and v.question == "holds"][0]
    assert early.status == V.SUPPORTED  # 64 / 4096 is within the first quarter, the untrained run never forms one


def test_checkpoint_orders_in_the_series_tables() -> None:
    s = _series({"step0": 0.0, "step2": 0.1, "step143000": 0.9, "step8": 0.2}, n=4)
    assert R.series_table(s, "faithful")["checkpoint"].tolist() == ["step0", "step143000", "step2", "step8"]
    assert R.series_table(s, "corrected")["checkpoint"].tolist() == ["step0", "step2", "step8", "step143000"]
    comp = R.faithful_comparison(s)
    assert set(comp[comp["order"] == "as rmt.ipynb orders them"]["last"]) == {"step8"}
    assert set(comp[comp["order"] == "by step"]["last"]) == {"step143000"}


def test_direction_changes_counts_reversals() -> None:
    def table(m, lo=None, hi=None):
        m = np.asarray(m, float)
        return pd.DataFrame({"gap": m, "lo": m - 0.1 if lo is None else lo, "hi": m + 0.1 if hi is None else hi})

    assert R.direction_changes(table([1, 2, 3, 4])) == (0, 0)
    assert R.direction_changes(table([1, 2, 1, 2])) == (2, 2)
    # a dip inside overlapping intervals counts only as a change of means
    assert R.direction_changes(table([1.0, 2.0, 1.95, 3.0])) == (0, 2)


def test_checkpoint_names_and_sources() -> None:
    with pytest.raises(ValueError, match="step<N>"):
        R.Checkpoint("final", "x")
    label, ckpts = R.checkpoints_of("EleutherAI/pythia-70m", ["step0", "step1000"])
    assert label == "EleutherAI/pythia-70m" and [c.revision for c in ckpts] == ["step0", "step1000"]
    with pytest.raises(ValueError, match="checkpoint_steps"):
        R.checkpoints_of("EleutherAI/pythia-70m")


def test_checkpoint_folder_source(tmp_path) -> None:
    for name in ("step0", "step16", "step2", "notes"):
        (tmp_path / name).mkdir()
    label, ckpts = R.checkpoints_of(str(tmp_path))
    assert [c.name for c in ckpts] == ["step0", "step2", "step16"] and label == tmp_path.name
    with pytest.raises(ValueError, match="no checkpoint step4"):
        R.checkpoints_of(str(tmp_path), ["step4"])


def test_every_run_is_measured_at_its_checkpoints_with_the_cut_and_read_as_one_series(tmp_path, monkeypatch) -> None:
    for name in ("step0", "step8"):
        (tmp_path / name).mkdir()
    calls = []

    def fake_series(checkpoints, texts, opts=None, *, seed=0, **overrides):
        calls.append(([c.name for c in checkpoints], overrides))
        results = [_result([stack(causal_uniform(6))] * 2) for _ in checkpoints]
        return R.Series(list(checkpoints), results, [3.0] * len(checkpoints), seed)

    monkeypatch.setattr(R, "analyse_series", fake_series)
    runs = R.analyse_runs([str(tmp_path), "EleutherAI/pythia-70m"], ["a b c"], steps=["step0"], seed=2, max_length=64)
    assert [(r.label, r.source) for r in runs] == [(tmp_path.name, str(tmp_path)),
                                                    ("EleutherAI/pythia-70m", "EleutherAI/pythia-70m")]
    assert calls == [(["step0"], {"max_length": 64, "truncation": True})] * 2
    res = runs[0].result
    assert res.analysis == R.SERIES_ANALYSIS and res.ref == tmp_path.name and res.data["series"] is runs[0].series
    with pytest.raises(ValueError, match="no checkpoint step4"):
        R.analyse_runs([str(tmp_path)], ["a"], steps=["step4"])


def test_page_parameters_of_the_emergence_page() -> None:
    assert parameter_problems({"random_init": True, "checkpoint_models": ["shipped"], "checkpoint_steps": None,
                               "checkpoint_max_length": 128}) == []
    bad = parameter_problems({"random_init": "yes", "checkpoint_models": [], "checkpoint_steps": ["final"],
                              "checkpoint_max_length": 1})
    assert len(bad) == 4


def test_series_notes_say_whether_a_sink_formed_and_what_the_official_order_compares() -> None:
    from sinkframes.report.emergence import series_notes

    formed = series_notes(_series({"step0": 0.0, "step8": 0.1, "step64": 0.75, "step4096": 0.95}), "run")
    assert "forms by step 64" in formed and "stays above it" in formed and "to **step8**" in formed
    never = series_notes(_series({"step0": 0.0, "step100": 0.1, "step1000": 0.2}), "run")
    assert "no first-token sink formed" in never and "at step 0" in never and "undecided" in never


def test_provenance_describes_random_twins_and_series_by_their_weights() -> None:
    from sinkframes.report.provenance import model_revision, provenance

    assert "architecture of `minilm`" in model_revision("random:minilm")
    line = provenance("offline", ["run", "tiny:llama"], 4, "embedded", 0, weights={"run": "14 checkpoints"})
    assert "`run` 14 checkpoints" in line and "hub revision" not in line
    s = _series({"step0": 0.0, "step8": 0.1}, n=2)
    assert R.series_result(s, "run").record["weights"].startswith("2 checkpoints")


def test_the_page_seed_draws_the_layer_intervals() -> None:
    mats = [stack((1 - s) * causal_uniform(9) + s * causal_first_sink(9)) for s in (0.1, 0.5, 0.2, 0.9, 0.3)]
    a = _result(mats)
    b = _result(mats)
    b.params["seed"] = 7
    b.layers = R._corrected_layers(b)
    assert a.layers["first_token_share"].equals(b.layers["first_token_share"])  # same means
    assert not a.layers["first_token_share_lo"].equals(b.layers["first_token_share_lo"])  # other resamples
