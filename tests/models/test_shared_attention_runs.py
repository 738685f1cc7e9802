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


def _first_token_share(att: torch.Tensor, causal: bool) -> dict[str, torch.Tensor]:
    return {"first": att[..., 0].mean((-1, -2))}  # [layer, head, query] -> [layer]


_first_token_share.key = lambda: {"reducer": "first_token_share_test"}  # type: ignore[attr-defined]


@pytest.mark.parametrize("ref", ["tiny:llama", "random:tiny:llama"])
def test_a_reduction_of_stored_sentences_loads_no_model_and_equals_the_models_own(ref, monkeypatch):
    """What the store gives without a model (record, tokens, the reduced attention) is what the model gives."""
    from sinkframes.extraction import extract_attention, summarize

    texts = corpus.sample_sentences(5, seed=3)["text"].tolist()
    opts = RunOptions(batch_size=2, progress=False)
    from_model = summarize(ref, texts, _first_token_share, opts, use_cache=False)
    shared.fill(ref, texts, opts)
    monkeypatch.setenv(shared.ENV, "1")
    batching._MODELS.clear()
    loads = batching.STATS["model_loads"]
    from_store = summarize(ref, texts[1:4], _first_token_share, opts)  # a part of what was stored
    assert batching.STATS["model_loads"] == loads
    assert from_store.record == from_model.record and from_store.tokens == from_model.tokens[1:4]
    for a, b in zip(from_store.summaries, from_model.summaries[1:4], strict=True):
        assert torch.equal(a["first"], b["first"])  # the same batches stored them: bit for bit
    whole = extract_attention(ref, texts[:2], opts)
    assert batching.STATS["model_loads"] == loads and len(whole.attentions) == 2


def test_a_text_the_store_lacks_runs_the_model(monkeypatch):
    from sinkframes.extraction import summarize

    texts = corpus.sample_sentences(4, seed=4)["text"].tolist()
    opts = RunOptions(batch_size=2, progress=False)
    shared.fill("tiny:llama", texts[:3], opts)
    monkeypatch.setenv(shared.ENV, "1")
    assert shared.payload("tiny:llama", texts[:3], opts, lambda att, hid, causal: 0) is not None
    assert shared.payload("tiny:llama", texts, opts, lambda att, hid, causal: 0) is None
    batching._MODELS.clear()
    loads, passes = batching.STATS["model_loads"], batching.STATS["forward_passes"]
    got = summarize("tiny:llama", texts, _first_token_share, opts)
    assert len(got.summaries) == 4
    assert batching.STATS["model_loads"] == loads + 1 and batching.STATS["forward_passes"] == passes + 1
    monkeypatch.setenv(shared.ENV, "0")
    assert shared.payload("tiny:llama", texts[:3], opts, lambda att, hid, causal: 0) is None  # the store is off


def test_the_preparation_stores_the_second_draw_a_page_decides_again(monkeypatch):
    """The fill of a second-draw entry stores exactly the sentences ``PageSetup.second_texts`` gives the page."""
    from sinkframes.book.page import setup
    from sinkframes_build.executors import _fill_one

    settings = {"dataset": "embedded", "csv_path": None, "seed": 1, "max_length": 256, "bos_policy": "default",
                "dtype": "float32", "device": "cpu"}
    assert _fill_one("tiny:llama", 4, {**settings, "draw": "second"}) is None
    pg = setup(page_id="t", profile="smoke", models=["tiny:llama"], n_sentences=4, dataset="embedded", seed=1,
               device="cpu", show=False)
    monkeypatch.setenv(shared.ENV, "1")
    opts = RunOptions(progress=False, device="cpu")
    assert shared.payload("tiny:llama", pg.second_texts, opts, lambda att, hid, causal: 0) is not None
    assert shared.payload("tiny:llama", pg.texts, opts, lambda att, hid, causal: 0) is None  # the first draw: not
