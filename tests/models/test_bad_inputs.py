"""Faults that must never become a wrong number or lost work: non-finite attention, failed cache
writes, reducers that cannot be told apart in the cache."""

from __future__ import annotations

import pytest
import torch

from sinkframes import cache
from sinkframes.extraction import NonFiniteAttentionError, batching, capture, summarize
from sinkframes.metrics.sinks import SinkSummaryReducer


def _poison_layer(ref: str, layer: int) -> None:
    """Make one layer's queries NaN in the model the extraction will use (the in-memory copy)."""
    lm = batching.get_model(ref, device="cpu")
    attn = lm.model.model.layers[layer].self_attn
    with torch.no_grad():
        attn.q_proj.weight.fill_(float("nan"))


@pytest.mark.parametrize("reader", ["attention", "capture"])
def test_non_finite_attention_stops_the_run_names_the_layers_and_is_not_cached(reader, texts):
    _poison_layer("tiny:llama", 1)

    def run():
        if reader == "attention":
            return summarize("tiny:llama", texts[:3], SinkSummaryReducer(), progress=False, device="cpu")
        from sinkframes.analyses.geometry_values import GeometryValuesReducer

        return capture.summarize_captures(
            "tiny:llama", texts[:3], GeometryValuesReducer(), progress=False, device="cpu"
        )

    with pytest.raises(NonFiniteAttentionError, match=r"tiny:llama in float32 .* layers \[1, 2\].*dtype='float32'"):
        run()
    batching._LAST_MODEL.clear()  # a healthy model again: the result is computed, not read from a poisoned entry
    before = batching.STATS["forward_passes"]
    run()
    assert batching.STATS["forward_passes"] > before


def test_a_failed_cache_write_keeps_the_result_and_warns(monkeypatch, texts):
    def full_disk(path, data):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(cache, "_atomic_write_bytes", full_disk)
    with pytest.warns(RuntimeWarning, match="returned uncached"):
        ex = summarize("tiny:bert", texts[:2], SinkSummaryReducer(), progress=False, device="cpu")
    assert len(ex.summaries or []) == 2 and not ex.from_cache


def test_a_reducer_without_a_key_is_refused(texts):
    with pytest.raises(TypeError, match="no key\\(\\) method"):
        summarize("tiny:bert", texts[:2], lambda att, causal: {"x": att.sum()}, progress=False, device="cpu")
