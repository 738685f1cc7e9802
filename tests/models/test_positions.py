"""Position interventions on tiny random-weight models: identities that must hold exactly or up to round-off."""

from __future__ import annotations

import pytest
import torch

from sinkframes.extraction.batching import get_model, pad_batch
from sinkframes.probes import positions as probe


def _attention(lm, iv, ids, **kwargs):
    input_ids, mask = pad_batch(ids, 0)
    with torch.no_grad(), probe.applied(iv, lm.model):
        out = lm.model(input_ids=input_ids, attention_mask=mask, output_attentions=True, **kwargs)
    return torch.stack(out.attentions, 1)  # [batch, layer, head, query, key]


def _state(model):
    return {k: v.clone() for k, v in {**dict(model.named_parameters()), **dict(model.named_buffers())}.items()}


IDS = [[5, 17, 42, 9, 33, 71, 8, 12, 64, 3]]


def test_theta_times_one_equals_no_intervention_bit_for_bit():
    lm = get_model("tiny:llama", device="cpu")
    assert torch.equal(_attention(lm, probe.Intervention("theta", 1.0), IDS), _attention(lm, probe.UNMODIFIED, IDS))


def test_a_position_offset_changes_rotary_attention_only_by_round_off():
    # RoPE scores depend on relative positions only: an offset keeps every q.k up to float error
    lm = get_model("tiny:llama", device="cpu")
    base = _attention(lm, probe.UNMODIFIED, IDS)
    shifted = _attention(lm, probe.UNMODIFIED, IDS, position_ids=torch.arange(10).unsqueeze(0) + 64)
    assert torch.allclose(shifted, base, atol=1e-5)
    permuted = _attention(lm, probe.UNMODIFIED, IDS, position_ids=torch.tensor([[3, 0, 1, 2, 4, 5, 6, 7, 8, 9]]))
    assert not torch.allclose(permuted, base, atol=1e-4)  # a permutation changes relative positions: not a no-op


def test_without_rotation_position_ids_change_nothing():
    # partial 0 leaves every frequency at 0: a model with no position encoding, which no id can reach
    lm = get_model("tiny:llama", device="cpu")
    nope = probe.Intervention("partial", 0.0)
    perm = torch.tensor([[3, 0, 1, 2, 4, 5, 6, 7, 8, 9]])
    assert torch.allclose(_attention(lm, nope, IDS, position_ids=perm), _attention(lm, nope, IDS), atol=1e-6)
    assert torch.allclose(_attention(lm, nope, IDS, position_ids=perm + 500), _attention(lm, nope, IDS), atol=1e-6)


def test_permuting_absolute_positions_of_a_model_that_ignores_them_changes_nothing():
    lm = get_model("tiny:bert", device="cpu")
    zero = probe.Intervention("pe_zero")
    perm = torch.tensor([[3, 0, 1, 2, 4, 5, 6, 7, 8, 9]])
    assert torch.allclose(_attention(lm, zero, IDS, position_ids=perm), _attention(lm, zero, IDS), atol=1e-6)
    assert not torch.allclose(_attention(lm, probe.UNMODIFIED, IDS, position_ids=perm),
                              _attention(lm, probe.UNMODIFIED, IDS), atol=1e-6)


@pytest.mark.parametrize("ref", ["tiny:llama", "tiny:gemma3", "tiny:bert"])
def test_every_intervention_is_undone_after_its_pass(ref, texts):
    lm = get_model(ref, device="cpu")
    before = _state(lm.model)
    ids = [lm.tokenizer(t)["input_ids"] for t in texts[:3]]
    plain = _attention(lm, probe.UNMODIFIED, ids[:1])
    record = lm.record.to_dict()
    for iv in probe.interventions_for(record, supports_hook=True)[1:]:
        try:
            for _ in probe.run(iv, lm, ids, batch_size=2, seed=0, progress=False):
                pass
        except probe.PositionRangeError:
            continue  # a shift beyond a tiny model's position table
    after = _state(lm.model)
    assert before.keys() == after.keys()
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert torch.equal(_attention(lm, probe.UNMODIFIED, ids[:1]), plain)


def test_token_edits_say_where_the_original_first_token_went(texts):
    lm = get_model("tiny:llama", device="cpu")
    ids = [[7, 8, 9, 10]]
    new, first = probe.edit_tokens(probe.Intervention("prefix", 4), ids, lm.tokenizer, seed=0)
    assert len(new[0]) == 8 and new[0][4:] == ids[0] and first == [4]
    new, first = probe.edit_tokens(probe.Intervention("duplicate"), ids, lm.tokenizer, seed=0)
    assert new == [[7, 7, 8, 9, 10]] and first == [1]
    again, _ = probe.edit_tokens(probe.Intervention("prefix", 4), ids, lm.tokenizer, seed=0)
    assert again == probe.edit_tokens(probe.Intervention("prefix", 4), ids, lm.tokenizer, seed=0)[0]


def test_a_random_twin_runs_no_head_and_its_attention_and_hidden_states_are_the_full_models():
    """The twin's pass (``random:<ref>``) skips the language-model head: no loss, the same attention and hidden
    states as the model with its head, bit for bit."""
    import math

    twin = get_model("random:tiny:llama", device="cpu")
    iv = probe.Intervention("ntk", 4.0)
    samples = dict(probe.run(iv, twin, IDS, batch_size=1, seed=0, progress=False))
    assert math.isnan(samples[0]["loss"]) and samples[0]["pooled"] is None
    input_ids, mask = pad_batch(IDS, 0)
    with torch.no_grad(), probe.applied(iv, twin.model):
        out = twin.model(input_ids=input_ids, attention_mask=mask, output_attentions=True, output_hidden_states=True,
                         use_cache=False)
    assert torch.equal(samples[0]["attention"], torch.stack(out.attentions, 1)[0])
    assert torch.equal(samples[0]["hidden"], torch.stack(out.hidden_states, 1)[0])
    model = get_model("tiny:llama", device="cpu")
    assert math.isfinite(dict(probe.run(iv, model, IDS, batch_size=1, seed=0, progress=False))[0]["loss"])
