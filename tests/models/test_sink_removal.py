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
    assert set(check.summary["condition"]) == {"sink", "random", "random2", "noop"}


def test_random_keys_seeded():
    assert sink_removal.random_keys([5, 9, 1], 3) == sink_removal.random_keys([5, 9, 1], 3)
    assert sink_removal.random_keys([1], 0) == [-1]


def test_the_second_random_key_differs_from_the_first_where_it_can():
    lengths = [1, 2, 3, 5, 9, 17] * 20
    first = sink_removal.random_keys(lengths, 7)
    second = sink_removal.second_random_keys(lengths, first, 7)
    assert second == sink_removal.second_random_keys(lengths, first, 7)
    for n, a, b in zip(lengths, first, second, strict=True):
        if n == 1:
            assert a == b == -1
        else:
            assert 1 <= b <= n - 1 and (b != a or n == 2)
    assert len({b for n, b in zip(lengths, second, strict=True) if n == 17}) > 5  # spread, not one key


def test_the_removal_null_passes_only_when_a_random_key_beats_another():
    import pandas as pd

    from sinkframes.results import ModelResult
    from sinkframes.verdicts import MEASURES, NULLS

    def result(sink, rand, rand2):
        rows = [{"sentence": i, "condition": c, "kl": v} for i in range(len(sink))
                for c, v in (("sink", sink[i]), ("random", rand[i]), ("random2", rand2[i]))]
        out = sink_removal.OutputCheck("m", True, pd.DataFrame(rows), pd.DataFrame())
        return ModelResult("information", {"ref": "m"}, len(sink), data={"output": out})

    r = result([1.0, 1.2, 0.9, 1.1] * 5, [0.1, 0.2, 0.1, 0.15] * 5, [0.12, 0.18, 0.09, 0.16] * 5)
    est = MEASURES["information.output_sink_minus_random"].fn(r, "corrected")
    null = NULLS["second_random_key"](r, "corrected")
    assert est.low > 0 and null.low < 0 < null.high  # the sink matters; a second random key does not
    special = result([1.0] * 8, [0.1] * 4 + [0.2] * 4, [0.9] * 8)  # a "random" key as harmful as the sink
    assert NULLS["second_random_key"](special, "corrected").low > 0
