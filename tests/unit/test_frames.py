"""Frame-type rule and per-layer aggregation on synthetic summaries with known answers."""

from __future__ import annotations

import pytest
import torch

from sinkframes.analyses import frames
from sinkframes.metrics.frames import FrameSummaryReducer
from sinkframes.results import ModelResult
from tests.attention_cases import causal_first_sink, previous_token, stack, two_ends


def record(causal: bool, n_layers: int) -> dict:
    return {"ref": "synthetic", "family": "llama", "paper_frame": "centralized", "causal": causal,
            "n_layers": n_layers, "position_encoding": "RoPE", "position0_token": "<bos>", "adds_bos": True}


def summaries_of(mat: torch.Tensor, causal: bool, n: int = 5, layers: int = 3, heads: int = 2):
    att = stack(mat, layers, heads)
    return [FrameSummaryReducer()(att, causal) for _ in range(n)]


def test_centralized_on_a_perfect_sink():
    mf = frames.frames_from_summaries(record(True, 3), summaries_of(causal_first_sink(16), True))
    assert isinstance(mf, ModelResult) and mf.analysis == "frames"
    assert mf.data["frame"] == "centralized"
    assert mf.layers["first_token_share"].tolist() == pytest.approx([1, 1, 1])
    assert mf.data["evidence"]["reference_count"] == pytest.approx(1.0)
    assert mf.heads["first_token_concentration"].shape == (3, 2)  # [layer, head]
    assert mf.samples["first_token_share"].shape == (5, 3, 2)  # [sample, layer, head]
    out = frames.to_json(mf)
    assert out["n_sentences"] == 5 and [r["layer"] for r in out["layers"]] == [0, 1, 2]
    assert set(out) == {"model", "n_sentences", "frame", "layers"} and out["frame"] == "centralized"
    # under 11 tokens no key of a causal sentence has the 10 queries a sink needs: no frame can be read
    short = frames.frames_from_summaries(record(True, 3), summaries_of(causal_first_sink(8), True))
    assert short.data["frame"] == "undefined" and "too short" in short.data["reason"]


def test_tables_split_the_official_rule_from_this_books_measures():
    mf = frames.frames_from_summaries(record(True, 3), summaries_of(causal_first_sink(8), True))
    faithful = mf.tables("faithful")
    assert faithful["layers"].columns.tolist() == ["layer", "depth", "region", "faithful_reference_count"]
    assert faithful["evidence"].columns.tolist() == ["faithful_reference_count"]
    corrected = mf.tables("corrected")
    assert "faithful_reference_count" not in corrected["layers"] and "reference_count" in corrected["layers"]
    assert corrected["evidence"].loc["synthetic", "first_token_share"] == pytest.approx(1.0)
    assert corrected["evidence"].loc["synthetic"].to_dict() == {
        k: v for k, v in mf.data["evidence"].items() if k != "faithful_reference_count"}
    with pytest.raises(ValueError, match="mode must be one of"):
        mf.tables("official")


def test_bidirectional_on_two_ends():
    mf = frames.frames_from_summaries(record(False, 3), summaries_of(two_ends(16), False))
    assert mf.data["frame"] == "bidirectional"


def test_a_previous_token_head_has_no_sink():
    # every key gets its weight from one query: no position receives attention from many source tokens
    for n in (12, 40):
        mf = frames.frames_from_summaries(record(True, 3), summaries_of(previous_token(n), True))
        assert mf.data["frame"] == "none"
        assert mf.data["frame_earlier"] == "distributed"  # the earlier rule's fall-through


def test_classify_thresholds_are_the_stated_ones():
    ev = {"first_token_share": 0.4, "last_token_share": 0.2, "first_token_concentration": 0.6, "reference_count": 1.2}
    assert frames.classify(ev, causal=False)[0] == "bidirectional"
    assert frames.classify(ev, causal=True)[0] == "centralized"  # a causal model is never bidirectional
    assert frames.classify({**ev, "reference_count": 1.6}, causal=True)[0] == "distributed"
    assert frames.classify({**ev, "first_token_concentration": 0.49}, causal=True)[0] == "distributed"


def test_bos_comparison_defaults_to_the_decoders_without_a_start_token():
    from sinkframes.analyses.frames import bos_comparison_models
    from sinkframes.results import ModelResult

    def result(ref: str, causal: bool, adds_bos: bool) -> ModelResult:
        return ModelResult("frames", {"ref": ref, "causal": causal, "adds_bos": adds_bos, "n_layers": 1}, 1)

    results = [result("enc", False, True), result("no-bos", True, False), result("bos", True, True)]
    assert bos_comparison_models(results) == ["no-bos"]
    assert bos_comparison_models(results, ["bos"]) == ["bos"] and bos_comparison_models(results, []) == []


def test_the_design_table_places_each_model_by_mask_and_position_encoding():
    from sinkframes.analyses.frames import design_table, position_class

    assert position_class("RoPE, theta=1000") == "rotary"
    assert position_class("learned absolute plus a relative position bias (32 buckets)") == "absolute + relative bias"
    assert position_class("learned absolute (absolute)") == "absolute"

    def result(ref: str, causal: bool, pe: str, frame: str) -> ModelResult:
        return ModelResult("frames", {"ref": ref, "causal": causal, "position_encoding": pe, "n_layers": 1}, 1,
                           data={"frame": frame})

    table = design_table([result("dec", True, "RoPE, theta=1e+06", "distributed"),
                          result("dec2", True, "RoPE, theta=1e+04", "centralized"),
                          result("enc", False, "learned absolute (absolute)", "bidirectional"),
                          result("renc", False, "RoPE, theta=1000", "centralized")])
    assert list(table.columns) == ["position encoding", "decoder (causal)", "encoder (bidirectional)"]
    rows = table.set_index("position encoding").to_dict("index")
    assert rows == {
        "absolute": {"decoder (causal)": "-", "encoder (bidirectional)": "enc: bidirectional"},
        "absolute + relative bias": {"decoder (causal)": "-", "encoder (bidirectional)": "-"},
        "rotary": {"decoder (causal)": "dec: distributed; dec2: centralized",
                   "encoder (bidirectional)": "renc: centralized"},
    }


def test_the_evidence_summary_is_written_from_the_results():
    """Known inputs: a decoder whose sink dominates 3 of 4 layers and reads the paper's frame, an encoder whose
    sink dominates 1 of 4 layers and reads another, and one of a family the paper gives no frame."""
    import pandas as pd

    from sinkframes.report.frames import evidence_summary

    def result(ref, causal, concentration, layer_frames, frame, paper, pe="RoPE, theta=1e+04", bos=True, quant="none"):
        rec = {"ref": ref, "causal": causal, "family": f"{ref}-family", "paper_frame": paper, "position_encoding": pe,
               "adds_bos": bos, "quantization": quant, "n_layers": len(concentration)}
        return ModelResult("frames", rec, 3, layers=pd.DataFrame({"layer": range(len(concentration)),
                                                                  "first_token_concentration": concentration}),
                           data={"frame": frame, "profile": {"layer_frames": layer_frames}})

    text = evidence_summary([
        result("dec", True, [0.9, 0.8, 0.2, 0.6], ["centralized", "centralized", "none", "distributed"],
               "centralized", "centralized", bos=False, quant="GGUF Q4_0, dequantized to fp32"),
        result("enc", False, [0.9, 0.1, 0.2, 0.3], ["bidirectional", "bidirectional", "centralized", "none"],
               "bidirectional", "centralized", pe="learned absolute (absolute)"),
        result("odd", False, [0.7, 0.7], ["none", "none"], "none", "not assigned"),
    ])
    lines = text.splitlines()
    assert lines[0] == "Written from this run's 3 models:"
    assert lines[2] == ("- **A first-position sink**: position 0 is the strongest key of most queries in at least half "
                        "the layers of `dec` and `odd` (75 to 100 % of their layers); in fewer than half the layers "
                        "of `enc` (1 of 4) (the per-layer notes above).")
    assert lines[3] == "- **Decoders**: `dec` reads **centralized** (2 centralized, 1 distributed, of 3 framed layers)."
    assert lines[4] == ("- **Encoders**: `enc` reads **bidirectional** (2 bidirectional, 1 centralized, of 3 framed "
                        "layers); `odd` reads **none** (no layer framed).")
    assert "1 of 3 models read the frame the paper gives their family (`dec`)" in lines[5]
    assert "`enc` reads bidirectional where the paper gives the enc-family family centralized" in lines[5]
    assert "the paper gives no frame to the family of `odd`" in lines[5]
    assert "by mask, decoders: `dec` centralized; encoders: `enc` bidirectional, `odd` none" in lines[6]
    assert "by position encoding, rotary: `dec` centralized, `odd` none; absolute: `enc` bidirectional" in lines[6]
    assert lines[7].startswith("- **A bidirectional frame cannot be tested on decoders**")
    assert ("not a special token, at position 0: `dec`; weights stored in fewer bits than fp32 and read back: "
            "`dec` (GGUF Q4_0);" in lines[8])
    assert evidence_summary([]) == "No model ran on this page, so it supports no statement."
