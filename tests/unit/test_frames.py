"""Frame-type rule and per-layer aggregation on synthetic summaries with known answers."""

from __future__ import annotations

import pytest
import torch

from sinkframes.analyses import frames
from sinkframes.metrics.sinks import SinkSummaryReducer

from tests.attention_cases import causal_first_sink, previous_token, stack, two_ends


def record(causal: bool, n_layers: int) -> dict:
    return {"ref": "synthetic", "family": "llama", "paper_frame": "centralized", "causal": causal,
            "n_layers": n_layers, "position_encoding": "RoPE", "position0_token": "<bos>", "adds_bos": True}


def summaries_of(mat: torch.Tensor, causal: bool, n: int = 5, layers: int = 3, heads: int = 2):
    att = stack(mat, layers, heads)
    return [SinkSummaryReducer()(att, causal) for _ in range(n)]


def test_centralized_on_a_perfect_sink():
    mf = frames.frames_from_summaries(record(True, 3), summaries_of(causal_first_sink(8), True))
    assert mf.frame == "centralized"
    assert mf.layers["first_token_share"].tolist() == pytest.approx([1, 1, 1])
    assert mf.evidence["reference_count"] == pytest.approx(1.0)
    out = mf.to_json()
    assert out["n_sentences"] == 5 and [r["layer"] for r in out["layers"]] == [0, 1, 2]


def test_bidirectional_on_two_ends():
    mf = frames.frames_from_summaries(record(False, 3), summaries_of(two_ends(8), False))
    assert mf.frame == "bidirectional"


def test_distributed_on_a_previous_token_pattern():
    mf = frames.frames_from_summaries(record(True, 3), summaries_of(previous_token(10), True))
    assert mf.frame == "distributed"


def test_classify_thresholds_are_the_stated_ones():
    ev = {"first_token_share": 0.4, "last_token_share": 0.2, "first_token_concentration": 0.6, "reference_count": 1.2}
    assert frames.classify(ev, causal=False)[0] == "bidirectional"
    assert frames.classify(ev, causal=True)[0] == "centralized"  # a causal model is never bidirectional
    assert frames.classify({**ev, "reference_count": 1.6}, causal=True)[0] == "distributed"
    assert frames.classify({**ev, "first_token_concentration": 0.49}, causal=True)[0] == "distributed"
