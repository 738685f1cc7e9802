"""BLOOM (ALiBi) through the one attention hook (sinkframes.models.alibi): the same numbers as transformers."""

from __future__ import annotations

import torch

from sinkframes.extraction.hooks import attention_hook
from sinkframes.models import alibi
from sinkframes.models.tiny import build_tiny


def _inputs() -> dict[str, torch.Tensor]:
    ids = torch.tensor([[5, 17, 230, 44, 9, 101, 7, 60], [5, 88, 12, 301, 2, 0, 0, 0]])
    mask = torch.tensor([[1] * 8, [1] * 5 + [0] * 3])  # the second sentence right-padded
    return {"input_ids": ids, "attention_mask": mask}


def test_the_hooked_forward_gives_transformers_logits_and_weights():
    from transformers.models.bloom import modeling_bloom

    model, _ = build_tiny("bloom")
    alibi.install()
    assert modeling_bloom.BloomAttention.forward is alibi.bloom_attention_forward
    with torch.no_grad():
        ours = model(**_inputs(), output_attentions=True)
        modeling_bloom.BloomAttention.forward = alibi.TRANSFORMERS_FORWARD[0]
        try:
            theirs = model(**_inputs(), output_attentions=True)
        finally:
            modeling_bloom.BloomAttention.forward = alibi.bloom_attention_forward
    keep = _inputs()["attention_mask"].bool()
    assert torch.allclose(ours.logits[keep], theirs.logits[keep], atol=1e-5)
    for a, b in zip(ours.attentions, theirs.attentions, strict=True):
        assert torch.allclose(a, b, atol=1e-6)


def test_the_hook_reads_and_edits_bloom_attention():
    model, _ = build_tiny("bloom")
    seen = []
    with torch.no_grad(), attention_hook(model, read=seen.append):
        plain = model(**_inputs())
    assert [c.layer for c in seen] == [0, 1, 2]
    w = seen[0].weights  # [batch, head, query, key]
    assert w.shape == (2, 4, 8, 8)
    assert torch.allclose(w.sum(-1), torch.ones(2, 4, 8))
    assert torch.all(w[0].triu(1) == 0)  # causal: no weight on a later key
    assert seen[0].scaling == 1 / (64 // 4) ** 0.5

    def on_first(weights: torch.Tensor, _module: torch.nn.Module) -> torch.Tensor:
        out = torch.zeros_like(weights)
        out[..., 0] = 1.0  # every query reads the first token only
        return out

    with torch.no_grad(), attention_hook(model, edit=on_first):
        edited = model(**_inputs())
    assert not torch.allclose(edited.logits, plain.logits)
