"""Attention stored once per build and read by the pages, on tiny models (``extraction.shared``)."""

from __future__ import annotations

import pytest
import torch

from sinkframes import corpus
from sinkframes.extraction import batching, shared
from sinkframes.extraction.attention import iterate_samples
from sinkframes.types import RunOptions


def _samples(lm, ids, opts, share=True):
    return {i: att for i, att, _ in iterate_samples(lm, ids, opts, share=share)}


@pytest.mark.parametrize("ref", ["tiny:llama", "tiny:bert"])
def test_pages_read_what_the_build_stored_and_compute_only_the_rest(ref, monkeypatch):
    texts = corpus.sample_sentences(6, seed=2)["text"].tolist()
    opts = RunOptions(batch_size=3, progress=False)
    lm = batching.get_model(ref, opts)
    ids = batching.tokenize_for(lm, texts, opts)
    direct = _samples(lm, ids, opts, share=False)
    assert shared.fill(ref, texts[:3], opts) == 3
    batching._MODELS.clear()
    loads = batching.STATS["model_loads"]
    assert shared.fill(ref, texts[:3], opts) == 0  # stored already: nothing computed, no model loaded
    assert batching.STATS["model_loads"] == loads
    assert shared.fill(ref, texts[1:4], opts) == 1  # another set: only its new sentence is computed
    monkeypatch.setenv(shared.ENV, "1")
    before = batching.STATS["forward_passes"]
    read = _samples(lm, ids, opts)
    assert batching.STATS["forward_passes"] - before == 1  # one batch for the two sentences not stored
    assert sorted(read) == list(range(6))
    for i in range(3):  # stored from the same batches: the same tensors, bit for bit
        assert torch.equal(read[i], direct[i])
    for i in range(3, 6):  # stored from or computed in other batches: equal up to float32 rounding
        torch.testing.assert_close(read[i], direct[i], rtol=1e-5, atol=1e-6)
    monkeypatch.setenv(shared.ENV, "0")
    before = batching.STATS["forward_passes"]
    _samples(lm, ids, opts)
    assert batching.STATS["forward_passes"] - before == 2  # not shared: every sentence through the model


def test_a_damaged_entry_is_computed_again(monkeypatch):
    texts = corpus.sample_sentences(2, seed=5)["text"].tolist()
    opts = RunOptions(batch_size=2, progress=False)
    shared.fill("tiny:llama", texts, opts)
    lm = batching.get_model("tiny:llama", opts)
    ids = batching.tokenize_for(lm, texts, opts)
    cache = shared.Cache(namespace=shared.NAMESPACE)
    payload, _ = cache._paths(shared.sentence_key(shared.base_key(lm.record.ref, opts), ids[0]))
    payload.write_bytes(b"damaged")
    monkeypatch.setenv(shared.ENV, "1")
    before = batching.STATS["forward_passes"]
    assert sorted(_samples(lm, ids, opts)) == [0, 1]
    assert batching.STATS["forward_passes"] - before == 1 and not payload.exists()
