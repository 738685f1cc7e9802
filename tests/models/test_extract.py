"""Extraction: batching and padding do not change attention; errors are clear; cache works."""

from __future__ import annotations

import pytest
import torch

from sinkframes import extraction as extract
from sinkframes import models
from sinkframes.cache import Cache
from sinkframes.extraction import batching
from sinkframes.metrics.sinks import SinkSummaryReducer
from sinkframes.models.tiny import tiny_architectures
from sinkframes.types import RunOptions

ARCHS = tiny_architectures()


@pytest.mark.parametrize("arch", ARCHS)
def test_batched_equals_one_by_one(arch, texts):
    kw = dict(progress=False, use_cache=False, device="cpu")
    batched = extract.extract_attention(f"tiny:{arch}", texts, batch_size=4, **kw)
    single = extract.extract_attention(f"tiny:{arch}", texts, batch_size=1, **kw)
    causal = batched.record["causal"]
    for a, b, toks in zip(batched.attentions, single.attentions, batched.tokens, strict=True):
        n = len(toks)
        assert a.shape == (3, 4, n, n)  # [layer, head, query, key]
        assert torch.allclose(a, b, atol=1e-5)
        assert torch.allclose(a.sum(-1), torch.ones(3, 4, n), atol=1e-5)
        if causal:
            assert torch.all(torch.triu(a, diagonal=1) == 0)


def test_hidden_states_shape(texts):
    ex = extract.extract_attention("tiny:llama", texts[:2], hidden_states=True, progress=False, device="cpu")
    n = len(ex.tokens[0])
    assert ex.hidden_states[0].shape == (4, n, 64)  # [layer + 1, token, hidden]


def test_text_errors(texts):
    lm = models.load("tiny:llama", device="cpu")
    with pytest.raises(extract.TextError, match="no visible characters .* at positions \\[1\\]"):
        extract.tokenize(lm.tokenizer, ["fine", "  "], 64)
    with pytest.raises(extract.TextError, match="raise max_length or pass truncation=True"):
        extract.tokenize(lm.tokenizer, texts, 5)
    ids = extract.tokenize(lm.tokenizer, texts, 5, truncation=True)
    assert max(len(x) for x in ids) == 5
    assert ids == [x[:5] for x in extract.tokenize(lm.tokenizer, texts, 512)]  # a decoder: a plain cut
    with pytest.raises(extract.TextError, match="no texts"):
        extract.tokenize(lm.tokenizer, [], 64)


def test_truncation_keeps_the_encoders_end_token(texts):
    bert = models.load("tiny:bert", device="cpu")
    full = extract.tokenize(bert.tokenizer, texts, 512)
    cut = extract.tokenize(bert.tokenizer, texts, 8, truncation=True)
    sep, cls = bert.tokenizer.sep_token_id, bert.tokenizer.cls_token_id
    for f, c in zip(full, cut, strict=True):
        assert len(c) == min(8, len(f)) and c[0] == cls and c[-1] == sep  # [CLS] ... [SEP], as the tokenizer cuts
        assert c[1:-1] == f[1 : len(c) - 1]


def test_force_bos_on_a_tokenizer_without_one(texts):
    lm = models.load("tiny:qwen2", device="cpu")
    plain = extract.tokenize(lm.tokenizer, texts[:2], 256)
    forced = extract.tokenize(lm.tokenizer, texts[:2], 256, bos_policy="force")
    assert [x[0] for x in forced] == [lm.tokenizer.bos_token_id] * 2
    assert [x[1:] for x in forced] == plain
    bert = models.load("tiny:bert", device="cpu")  # no BOS token: its EOS stands in
    eos_first = extract.tokenize(bert.tokenizer, texts[:1], 256, bos_policy="force")
    assert eos_first[0][0] == bert.tokenizer.eos_token_id
    bert.tokenizer.eos_token = None
    with pytest.raises(extract.TextError, match="neither a BOS nor an EOS"):
        extract.tokenize(bert.tokenizer, texts[:1], 256, bos_policy="force")


def test_model_without_attention_weights(texts):
    lm = models.load("tiny:llama", device="cpu")
    lm.model.config._attn_implementation = "sdpa"
    for mod in lm.model.modules():
        if hasattr(mod, "config"):
            mod.config._attn_implementation = "sdpa"
    ids = extract.tokenize(lm.tokenizer, texts[:1], 256)
    with pytest.raises(models.AttentionUnavailableError, match="eager"):
        list(extract.iterate_samples(lm, ids, RunOptions(progress=False)))


def test_second_call_runs_no_forward_pass_and_loads_no_model(texts):
    first = extract.summarize("tiny:bert", texts, SinkSummaryReducer(), progress=False, device="cpu")
    batching._MODELS.clear()
    before = dict(extract.STATS)
    second = extract.summarize("tiny:bert", texts, SinkSummaryReducer(), progress=False, device="cpu")
    assert not first.from_cache and second.from_cache
    assert before == extract.STATS
    for a, b in zip(first.summaries, second.summaries, strict=True):
        assert all(torch.equal(a[k], b[k]) for k in a)


def test_key_changes_with_inputs(texts):
    kw = dict(progress=False, device="cpu")
    extract.summarize("tiny:bert", texts, SinkSummaryReducer(), **kw)
    other_texts = extract.summarize("tiny:bert", texts[:-1], SinkSummaryReducer(), **kw)
    other_bos = extract.summarize("tiny:qwen2", texts, SinkSummaryReducer(), bos_policy="force", **kw)
    plain = extract.summarize("tiny:qwen2", texts, SinkSummaryReducer(), **kw)
    other_tau = extract.summarize("tiny:bert", texts, SinkSummaryReducer(tau=0.2), **kw)
    assert not any(x.from_cache for x in (other_texts, other_bos, plain, other_tau))
    assert len(other_bos.tokens[0]) == len(plain.tokens[0]) + 1


def test_corrupt_entry_is_recomputed(texts, tmp_path):
    kw = dict(progress=False, device="cpu")
    extract.summarize("tiny:bert", texts, SinkSummaryReducer(), **kw)
    entries = list((Cache(namespace="extractions").dir).glob("*.pt"))
    assert len(entries) == 1
    entries[0].write_bytes(entries[0].read_bytes()[:100])  # truncate the payload
    before = extract.STATS["forward_passes"]
    with pytest.warns(RuntimeWarning, match="does not match its recorded hash"):
        again = extract.summarize("tiny:bert", texts, SinkSummaryReducer(), **kw)
    assert not again.from_cache and extract.STATS["forward_passes"] > before
    assert not list(entries[0].parent.glob("*.tmp"))


