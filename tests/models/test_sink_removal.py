"""The in-model attention edit: exact no-op identity, and the edit really changes the weights."""

from __future__ import annotations

import pytest
import torch

from sinkframes import corpus
from sinkframes import extraction as extract
from sinkframes.extraction import batching, hooks
from sinkframes.probes import sink_removal
from sinkframes.types import RunOptions


@pytest.fixture(scope="module", params=["tiny:llama", "tiny:gemma3", "tiny:bert"])
def lm(request):
    return extract.get_model(request.param, device="cpu")


def _inputs(lm, n=3):
    texts = corpus.sample_sentences(n, seed=0)["text"].tolist()
    ids = extract.tokenize(lm.tokenizer, texts, 256)
    return ids, batching.pad_batch(ids, batching.pad_id(lm.tokenizer))


@torch.no_grad()
def test_noop_edit_reproduces_outputs_exactly(lm):
    ids, (input_ids, mask) = _inputs(lm)
    base = sink_removal._outputs(lm, input_ids, mask)
    with hooks.attention_hook(lm.model, edit=sink_removal.remove_key(torch.full((len(ids),), -1))):
        same = sink_removal._outputs(lm, input_ids, mask)
    assert torch.equal(base, same)
    # the patch is removed afterwards
    assert torch.equal(sink_removal._outputs(lm, input_ids, mask), base)


@torch.no_grad()
def test_sink_removal_changes_weights_as_specified(lm):
    ids, (input_ids, mask) = _inputs(lm)
    seen = []

    def spy(weights, module):
        new = sink_removal.remove_key(torch.zeros(len(ids), dtype=torch.long))(weights, module)
        seen.append((weights, new))
        return new

    with hooks.attention_hook(lm.model, edit=spy):
        edited = sink_removal._outputs(lm, input_ids, mask)
    assert len(seen) == lm.record.n_layers
    w, new = seen[0]  # [batch, head, query, key]
    n = len(ids[0])
    if lm.record.causal:
        assert torch.equal(new[0, :, 0], w[0, :, 0])  # query 0 only sees key 0: unchanged
        rows = slice(1, n)
    else:
        rows = slice(0, n)
    assert torch.all(new[0, :, rows, 0] == 0)
    torch.testing.assert_close(new[0, :, rows, :n].sum(-1), torch.ones_like(new[0, :, rows, 0]))
    expected = w[0, :, rows, 1:n] / w[0, :, rows, 1:n].sum(-1, keepdim=True)
    torch.testing.assert_close(new[0, :, rows, 1:n], expected)
    assert not torch.equal(edited, sink_removal._outputs(lm, input_ids, mask))


def test_output_check_scores(lm):
    texts = corpus.sample_sentences(4, seed=1)["text"].tolist()
    per = sink_removal.output_check(lm, texts, seed=0, opts=RunOptions(batch_size=2, progress=False), noop=True)
    check = sink_removal.summarize_check(lm.record.ref, lm.record.causal, per)
    noop = per[per["condition"] == "noop"]
    if lm.record.causal:
        assert (noop["kl"].abs() < 1e-9).all() and (noop["nll_base"] == noop["nll_edit"]).all()
        assert (per["kl"] >= -1e-9).all()
    else:
        assert (noop["distance"].abs() < 1e-9).all()
    rand = per[per["condition"] == "random"]
    assert ((rand["removed_key"] >= 1) & (rand["removed_key"] < rand["n_tokens"])).all()
    assert set(check.summary["condition"]) == {"sink", "random", "noop"}


def test_random_keys_seeded():
    assert sink_removal.random_keys([5, 9, 1], 3) == sink_removal.random_keys([5, 9, 1], 3)
    assert sink_removal.random_keys([1], 0) == [-1]
