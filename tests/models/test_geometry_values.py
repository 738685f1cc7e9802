"""Aggregation, tables and generated statements of the sink-geometry chapter, on hand-built summaries."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from sinkframes import paper
from sinkframes.analyses import geometry_values as gv
from sinkframes.report import geometry_values as gv_report
from sinkframes.types import MODES
from tests.unit import geometry_reference as ref

RECORD = {
    "ref": "toy",
    "n_layers": 3,
    "paper_frame": "centralized",
    "position_encoding": "RoPE, theta=10000",
    "causal": True,
}


def _summary(scale: float) -> dict[str, torch.Tensor]:
    """One sample: 3 layers, 2 heads; geometry says 'small, aligned sink key'; entropy falls, magnitude rises."""
    per_head = lambda v: torch.tensor(v, dtype=torch.float32).view(3, 1).repeat(1, 2)  # noqa: E731
    s: dict[str, torch.Tensor] = {"n_tokens": torch.tensor(5)}
    s.update(
        key0_norm=per_head([1, 1, 1]), other_key_norm=per_head([2, 2, 2]), key_norm_ratio=per_head([0.5, 0.5, 2.0])
    )
    for tag in ("pre", "post"):
        s[f"cos_to_sink_{tag}"] = per_head([0.8, 0.8, 0.8])
        s[f"cos_to_others_{tag}"] = per_head([0.1, 0.1, 0.1])
    for k in ["sink_logit", "other_logit", "typical_logit", "log_key_norm_ratio", "sink_cos", "log_query_norm"]:
        s[k] = per_head([1, 1, 1])
    s["norm_part"], s["alignment_part"] = per_head([-1, -1, -1]), per_head([2, 2, 2])
    for mode in MODES:
        s[f"{mode}_entropy"] = torch.tensor([2.0, 1.5, 1.0])
        s[f"{mode}_magnitude"] = torch.tensor([1.0, 2.0, 4.0]) * scale
        s[f"{mode}_alignment"] = torch.tensor([0.2, 0.0, -0.3])
        s[f"{mode}_entropy_magnitude"] = torch.tensor([0.1, 0.1, 0.1])
        s[f"{mode}_relative_magnitude"] = (
            torch.tensor([[0.5, float("nan")]] * 3) if mode == "corrected" else torch.tensor([0.5] * 3)
        )
        s[f"{mode}_directional_guidance"] = torch.tensor([0.9] * 3)
        s[f"{mode}_reference_count"] = torch.tensor([1.0, 1.0, 2.0])
    s["faithful_information_change"] = torch.tensor([0.3] * 3)
    return s


def test_layer_means_over_samples_and_heads_ignore_nan():
    mg = gv.from_summaries(RECORD, [_summary(1.0), _summary(3.0)])
    d = mg.layers
    assert mg.analysis == "geometry_values" and mg.n_sentences == 2 and len(d) == 3
    assert d["faithful_magnitude"].tolist() == pytest.approx([2.0, 4.0, 8.0])
    assert d["corrected_relative_magnitude"].tolist() == pytest.approx([0.5] * 3)  # the NaN head is left out
    assert d["region"].tolist() == ["early", "middle", "late"]
    assert mg.heads["key_norm_ratio"].tolist() == [[0.5, 0.5], [0.5, 0.5], [2.0, 2.0]]
    assert mg.samples["faithful_magnitude"].tolist() == [[1.0, 2.0, 4.0], [3.0, 6.0, 12.0]]  # [sample, layer]


def test_tables_by_mode_share_their_column_names():
    mg = gv.from_summaries(RECORD, [_summary(1.0), _summary(3.0)])
    faithful, corrected = mg.tables("faithful"), mg.tables("corrected")
    assert faithful["values"]["magnitude"].tolist() == pytest.approx([2.0, 4.0, 8.0])
    assert faithful["values"].columns.tolist() == ["layer", "depth", "region", *gv.VALUE_COLUMNS, "information_change"]
    assert corrected["values"].columns.tolist() == ["layer", "depth", "region", *gv.VALUE_COLUMNS]
    assert "geometry" not in faithful and corrected["geometry"].columns.tolist()[3:] == gv.GEOMETRY_COLUMNS
    assert gv.first_last_values(mg, "corrected")["magnitude"]["ratio"] == pytest.approx(4.0)


def test_tables_report_difference_and_ratio():
    mg = gv.from_summaries(RECORD, [_summary(1.0)])
    t = gv.faithful_vs_corrected([mg]).set_index("mode")
    assert t.loc["faithful", "magnitude difference (paper's 'fold')"] == pytest.approx(3.0)
    assert t.loc["corrected", "magnitude ratio"] == pytest.approx(4.0)
    assert t.loc["faithful", "entropy depth trend (Spearman)"] == pytest.approx(-1.0)
    refs = gv.reference_counts([mg]).iloc[0]
    assert refs["official rule (faithful)"] == pytest.approx(4 / 3) and refs["paper"] == pytest.approx(1.0006)
    g = gv.geometry_table([mg]).iloc[0]
    assert g["layers with |k0| < mean |k_j|"] == "2 / 3"


def test_notes_and_verdicts_follow_the_numbers():
    from sinkframes import verdicts

    mg = gv.from_summaries({**RECORD, "family": "llama", "n_heads": 2}, [_summary(1.0), _summary(1.0)])
    text = gv_report.value_notes([mg])
    assert "shorter than the mean other key in 2 of 3 layers" in text and "supported" not in text
    assert "entropy 2.00 -> 1.00 (falls)" in text and "ratio x4.00; rises" in text and "ends negative" in text
    by = {(v.claim, v.question): v for v in verdicts.evaluate_model(mg)}
    # key-norm ratios 0.5, 0.5, 2.0: the mean is 1.0, not below the random-key null of 1
    assert by[("3.3.small_key", "holds")].estimate.value == pytest.approx(1.0)
    assert by[("3.3.small_key", "holds")].status == "not supported"
    assert ("3.3.small_key", "reproduced") not in by  # no official computation: no verdict, not counted
    assert by[("3.3.aligned_key", "holds")].estimate.value == pytest.approx(0.7)
    assert by[("5.4.entropy", "reproduced")].estimate.value == pytest.approx(-1.0)
    assert by[("5.4.magnitude", "holds")].estimate.value == pytest.approx(3.0)
    # the alignment meets the claim, but three layers have 6 orders: no p-value under 1/6, so it cannot be told from
    # its layers in random order
    align = by[("5.4.alignment", "holds")]
    assert align.status == "not diagnostic" and "layers in random order (permutation p" in align.reason


def test_paper_folds_are_differences_not_ratios():
    f = paper.magnitude_folds()
    assert np.allclose(f["difference last - first"], f["paper's 'fold'"], atol=0.01)
    assert (f["ratio last / first"] < f["paper's 'fold'"]).all()
    assert paper.reference_count_by_frame() == {"centralized": 1.0006, "distributed": 1.23, "bidirectional": 1.58}


def test_capture_summaries_are_cached(texts):
    from sinkframes import extraction as extract

    before = extract.STATS["forward_passes"]
    rec, sums, hit = gv.capture.summarize_captures("tiny:llama", texts[:2], gv.GeometryValuesReducer(), progress=False)
    assert not hit and len(sums) == 2 and rec["ref"] == "tiny:llama"
    mid = extract.STATS["forward_passes"]
    _, again, hit2 = gv.capture.summarize_captures("tiny:llama", texts[:2], gv.GeometryValuesReducer(), progress=False)
    assert hit2 and extract.STATS["forward_passes"] == mid > before
    torch.testing.assert_close(again[0]["corrected_entropy"], sums[0]["corrected_entropy"])


def test_first_to_last_changes_are_paired_with_intervals_and_corrected_tests():
    mg = gv.from_summaries(RECORD, [_summary(1.0), _summary(2.0), _summary(3.0)])
    t = gv.change_table([mg]).set_index(["mode", "measure"])
    ent = t.loc[("corrected", "entropy")]
    assert ent["last - first"] == pytest.approx(-1.0) and ent["low"] == ent["high"] == pytest.approx(-1.0)
    mag = t.loc[("faithful", "magnitude")]  # 3, 6, 9 by sentence: mean 6, interval inside [3, 9]
    assert mag["last - first"] == pytest.approx(6.0) and 3.0 <= mag["low"] <= mag["high"] <= 9.0
    assert ent["n"] == 3 and (t["p (Holm)"] >= t["p (sign flip)"]).all()


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["llama", "qwen2", "bert", "gemma2"])
def test_reducer_equals_the_reference_on_tiny_model_captures(arch, texts):
    from sinkframes import extraction
    from sinkframes.extraction import capture
    from sinkframes.types import RunOptions

    lm = extraction.get_model(f"tiny:{arch}")
    ids = extraction.tokenize(lm.tokenizer, texts[:3], 256)
    seen = 0
    for _, c in capture.iterate_captures(lm, ids, RunOptions(batch_size=2, progress=False)):
        ref.assert_same(ref.reference_reduce(c, lm.record.causal), gv.GeometryValuesReducer()(c, lm.record.causal))
        seen += 1
    assert seen == 3
