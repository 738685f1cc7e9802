"""Streamed per-layer extraction gives what the full path gives, caches, and refuses what it must."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from sinkframes import extraction as extract
from sinkframes.extraction import batching
from sinkframes.types import RunOptions

KW: dict[str, Any] = dict(progress=False, device="cpu")


class ColumnStats(extract.SampleLayerReducer):
    """Per head: mean attention to key 0, the largest weight, and the column sums (length n)."""

    def key(self) -> dict[str, Any]:
        return {"reducer": "test_column_stats"}

    def sample(self, index: int, weights: torch.Tensor, causal: bool) -> dict[str, torch.Tensor]:
        # weights [head, query, key]
        return {
            "sink": weights[:, :, 0].mean(-1),  # [head]
            "top": weights.amax((-2, -1)),  # [head]
            "columns": weights.sum(-2),  # [head, key]
            "layer": torch.tensor(index),
        }

    def assemble(self, layers: list[dict[str, torch.Tensor]], causal: bool) -> dict[str, torch.Tensor]:
        return {name: torch.stack([x[name] for x in layers]) for name in layers[0]}  # [layer, ...]


class BatchedSink:
    """A :class:`LayerReducer` written on the padded batch: mean attention to key 0 over real queries."""

    def key(self) -> dict[str, Any]:
        return {"reducer": "test_batched_sink"}

    def layer(self, index: int, weights: torch.Tensor, lengths: list[int], causal: bool) -> list[torch.Tensor]:
        # weights [batch, head, query, key]
        real = torch.arange(weights.shape[2])[None, :] < torch.tensor(lengths)[:, None]  # [batch, query]
        sink = (weights[:, :, :, 0] * real[:, None]).sum(-1) / torch.tensor(lengths)[:, None]  # [batch, head]
        return list(sink.unbind(0))

    def assemble(self, layers: list[torch.Tensor], causal: bool) -> torch.Tensor:
        return torch.stack(layers)  # [layer, head]


def _full_path(ref: str, texts: list[str], reducer: ColumnStats, batch_size: int) -> list[dict[str, torch.Tensor]]:
    """The same reduction applied to every layer of what ``iterate_samples`` yields."""
    opts = RunOptions(batch_size=batch_size, **KW)
    lm = batching.get_model(ref, opts)
    ids = batching.tokenize_for(lm, texts, opts)
    out: list[Any] = [None] * len(texts)
    for i, att, _ in extract.iterate_samples(lm, ids, opts):  # att [layer, head, query, key]
        out[i] = reducer.assemble([reducer.sample(k, att[k], lm.record.causal) for k in range(len(att))], True)
    return out


@pytest.mark.parametrize("ref", ["tiny:llama", "tiny:qwen2", "tiny:bert"])
def test_streamed_layers_equal_the_full_path_with_padding(ref, texts):
    lengths = [len(x) for x in extract.extract_attention(ref, texts, **KW).tokens]
    batches = batching.length_sorted_batches(lengths, 4)
    assert any(len({lengths[i] for i in b}) > 1 for b in batches)  # some batch pads its shorter sentences
    streamed = extract.summarize_layers(ref, texts, ColumnStats(), batch_size=4, **KW)
    assert streamed.summaries is not None and not streamed.from_cache
    full = _full_path(ref, texts, ColumnStats(), batch_size=4)
    for s, f, n in zip(streamed.summaries, full, lengths, strict=True):
        assert s["columns"].shape == (3, 4, n)  # [layer, head, key]
        assert s["layer"].tolist() == [0, 1, 2]
        for name in f:
            assert torch.equal(s[name], f[name]), name


@pytest.mark.parametrize("ref", ["tiny:llama", "tiny:qwen2", "tiny:bert"])
def test_attention_computed_a_row_at_a_time_gives_the_same_numbers(ref, texts, monkeypatch):
    from sinkframes.extraction import streaming

    whole = extract.summarize_layers(ref, texts, ColumnStats(), batch_size=4, **KW)
    calls: list[int] = []
    real_layer = ColumnStats.layer
    monkeypatch.setattr(streaming, "STREAM_CALL_FLOATS", 1)  # every call holds one row

    def counted(self: ColumnStats, index: int, weights: torch.Tensor, lengths: list[int], causal: bool) -> list:
        calls.append(weights.shape[0])  # the rows one attention call computed
        return real_layer(self, index, weights, lengths, causal)

    monkeypatch.setattr(ColumnStats, "layer", counted)
    batching._MODELS.clear()
    sliced = extract.summarize_layers(ref, texts, ColumnStats(), batch_size=4, use_cache=False, **KW)
    assert calls and set(calls) == {1}
    for a, b in zip(whole.summaries or [], sliced.summaries or [], strict=True):
        for name in a:
            assert torch.equal(a[name], b[name]), name


def test_row_slices_of_a_layer_read_twice_are_refused(texts, monkeypatch):
    from sinkframes import models
    from sinkframes.extraction import hooks, streaming

    lm = batching.get_model("tiny:llama", device="cpu")
    ids = batching.tokenize_for(lm, texts[:2], RunOptions(**KW))
    input_ids, mask = batching.pad_batch(ids, batching.pad_id(lm.tokenizer))
    real_hook = hooks.attention_hook

    def twice(model: Any, *, read: Any = None, edit: Any = None, max_weights: Any = None) -> Any:
        def read_twice(call: Any) -> None:
            read(call)
            read(call)  # the same rows again

        return real_hook(model, read=read_twice, edit=edit, max_weights=max_weights)

    monkeypatch.setattr(streaming, "attention_hook", twice)
    with pytest.raises(models.UnsupportedArchitectureError, match="called twice"):
        streaming._reduce_batch(lm, batching.backbone(lm.model), input_ids, mask, [len(x) for x in ids], ColumnStats())


def test_a_batched_layer_reducer_matches_its_per_sample_form(texts):
    assert isinstance(BatchedSink(), extract.LayerReducer)
    batched = extract.summarize_layers("tiny:llama", texts, BatchedSink(), batch_size=3, **KW)
    single = extract.summarize_layers("tiny:llama", texts, ColumnStats(), batch_size=3, **KW)
    for b, s in zip(batched.summaries or [], single.summaries or [], strict=True):
        torch.testing.assert_close(b, s["sink"])


def test_a_cache_hit_runs_no_forward_pass(texts):
    first = extract.summarize_layers("tiny:bert", texts, ColumnStats(), **KW)
    batching._MODELS.clear()
    before = dict(extract.STATS)
    second = extract.summarize_layers("tiny:bert", texts, ColumnStats(), **KW)
    assert not first.from_cache and second.from_cache
    assert before == extract.STATS
    for a, b in zip(first.summaries or [], second.summaries or [], strict=True):
        assert all(torch.equal(a[k], b[k]) for k in a)


def test_a_reducer_without_a_key_is_refused(texts):
    class NoKey:
        def layer(self, index: int, weights: torch.Tensor, lengths: list[int], causal: bool) -> list[Any]:
            return [weights[r].sum() for r in range(len(lengths))]

        def assemble(self, layers: list[Any], causal: bool) -> Any:
            return layers

    before = extract.STATS["forward_passes"]
    with pytest.raises(TypeError, match="no key\\(\\) method"):
        extract.summarize_layers("tiny:bert", texts, NoKey(), **KW)
    assert extract.STATS["forward_passes"] == before


def test_non_finite_layers_are_named_and_nothing_is_cached(texts):
    lm = batching.get_model("tiny:llama", device="cpu")
    with torch.no_grad():
        lm.model.model.layers[1].self_attn.q_proj.weight.fill_(float("nan"))
    with pytest.raises(extract.NonFiniteAttentionError, match=r"tiny:llama in float32 .* layers \[1, 2\]"):
        extract.summarize_layers("tiny:llama", texts[:3], ColumnStats(), **KW)
    batching._MODELS.clear()
    before = extract.STATS["forward_passes"]
    extract.summarize_layers("tiny:llama", texts[:3], ColumnStats(), **KW)
    assert extract.STATS["forward_passes"] > before


@pytest.mark.parametrize("ref", ["tiny:llama", "tiny:bert"])
def test_iterate_samples_yields_what_the_stacked_batch_gave(ref, texts):
    """The per-sample slicing of ``iterate_samples`` equals slicing one stacked ``[batch, layer, ...]`` copy."""
    opts = RunOptions(batch_size=4, **KW)
    lm = batching.get_model(ref, opts)
    ids = batching.tokenize_for(lm, texts, opts)
    got = list(extract.iterate_samples(lm, ids, opts, hidden_states=True))
    order = [i for b in batching.length_sorted_batches([len(x) for x in ids], 4) for i in b]
    assert [i for i, _, _ in got] == order
    net = batching.backbone(lm.model)
    k = 0
    with torch.no_grad():
        for batch, input_ids, mask in batching.iterate_batches(lm, ids, 4, False):
            out = batching.forward(lm, net, input_ids, mask, output_attentions=True, output_hidden_states=True)
            att = torch.stack([a.float() for a in out.attentions], 1)  # [batch, layer, head, query, key]
            hid = torch.stack([h.float() for h in out.hidden_states], 1)  # [batch, layer+1, tok, d]
            for r, i in enumerate(batch):
                n = len(ids[i])
                _, a, h = got[k]
                assert a.dtype == torch.float32 and a.is_contiguous() and h is not None and h.is_contiguous()
                assert torch.equal(a, att[r, :, :, :n, :n]) and torch.equal(h, hid[r, :, :n])
                k += 1
