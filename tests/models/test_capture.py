"""The captured queries, keys and values reproduce each tiny model's own attention and output."""

from __future__ import annotations

import pytest
import torch

from sinkframes import extraction as extract
from sinkframes.extraction import capture, hooks
from sinkframes.models import ARCHITECTURES, UnsupportedArchitectureError
from sinkframes.models.tiny import tiny_architectures
from sinkframes.types import RunOptions


def _captures(ref: str, texts: list[str]):
    lm = extract.get_model(ref)
    ids = extract.tokenize(lm.tokenizer, texts[:3], 256)
    return lm, dict(
        capture.iterate_captures(lm, ids, RunOptions(batch_size=2, progress=False))
    )  # batch 2: padding exercised


def _visible(lm, layer: int, n: int) -> torch.Tensor:
    """``[query, key]`` bool: which keys each query may see in ``layer`` (causal, sliding window)."""
    if not lm.record.causal:
        return torch.ones(n, n, dtype=torch.bool)
    i = torch.arange(n).unsqueeze(1)
    j = torch.arange(n).unsqueeze(0)
    vis = j <= i
    cfg = lm.model.config
    types = getattr(cfg, "layer_types", None)
    if types is not None and types[layer] == "sliding_attention" and cfg.sliding_window:
        vis &= (i - j) < cfg.sliding_window
    return vis


@pytest.mark.parametrize("arch", [a for a in tiny_architectures() if a in ARCHITECTURES])
def test_captured_tensors_reproduce_attention_and_output(arch, texts):
    lm, caps = _captures(f"tiny:{arch}", texts)
    assert sorted(caps) == [0, 1, 2]
    for c in caps.values():
        n, heads = c.n_tokens, lm.record.n_heads
        assert c.query.shape[1] == heads and c.key.shape[1] == lm.record.n_kv_heads
        k = hooks.expand_kv(c.key, heads)  # [layer, head, token, dim]
        v = hooks.expand_kv(c.value, heads)
        for layer in range(c.query.shape[0]):
            logits = c.query[layer] @ k[layer].transpose(-1, -2) * c.scaling[layer]  # [head, query, key]
            if arch == "bloom":  # ALiBi: a bias per head, linear in the key's position, added to q.k
                from transformers.models.bloom.modeling_bloom import build_alibi_tensor

                ones = torch.ones(1, n, dtype=torch.long, device=logits.device)
                logits = logits + build_alibi_tensor(ones, heads, logits.dtype)  # [head, 1, key]
            logits = logits.masked_fill(~_visible(lm, layer, n), float("-inf"))
            torch.testing.assert_close(logits.softmax(-1), c.attention[layer], atol=1e-5, rtol=1e-4)
        torch.testing.assert_close(c.attention @ v, c.output_heads, atol=1e-5, rtol=1e-4)
        # the output projection applied to the concatenated heads gives the captured output
        attn_mods = hooks.attention_layers(lm.model)
        for layer, (_, proj) in enumerate(attn_mods):
            flat = c.output_heads[layer].transpose(0, 1).reshape(n, -1)  # [token, head * dim]
            torch.testing.assert_close(proj(flat), c.output[layer], atol=1e-5, rtol=1e-4)


def test_attention_matches_the_models_own_attention_weights(texts):
    lm, caps = _captures("tiny:qwen2", texts)
    ex = extract.extract_attention("tiny:qwen2", texts[:3], use_cache=False, progress=False)
    for i, c in caps.items():
        torch.testing.assert_close(c.attention, ex.attentions[i], atol=1e-6, rtol=1e-5)


def test_keys_before_rope_are_the_key_projection(texts):
    lm, caps = _captures("tiny:llama", texts)
    c = caps[0]
    n, kv, d = c.n_tokens, lm.record.n_kv_heads, lm.record.head_dim
    with torch.no_grad():
        for layer, block in enumerate(lm.model.model.layers):
            h = block.input_layernorm(c.hidden[layer])  # [token, hidden]
            k = block.self_attn.k_proj(h).view(n, kv, d).transpose(0, 1)  # [kv, token, dim]
            q = block.self_attn.q_proj(h).view(n, -1, d).transpose(0, 1)
            torch.testing.assert_close(c.key_pre[layer], k, atol=1e-5, rtol=1e-4)
            torch.testing.assert_close(c.query_pre[layer], q, atol=1e-5, rtol=1e-4)
    # position 0 gets the identity rotation; later positions are rotated but keep their norm
    torch.testing.assert_close(c.key_pre[:, :, 0], c.key[:, :, 0])
    assert not torch.allclose(c.key_pre[:, :, 1:], c.key[:, :, 1:])
    torch.testing.assert_close(c.key_pre.norm(dim=-1), c.key.norm(dim=-1), atol=1e-5, rtol=1e-5)


def test_absolute_position_models_have_no_rotation(texts):
    _, caps = _captures("tiny:bert", texts)
    c = caps[0]
    assert not c.rotary
    assert torch.equal(c.key_pre, c.key) and torch.equal(c.query_pre, c.query)


def test_unrotate_inverts_a_known_rotation():
    x = torch.tensor([[[[1.0, 0.0, 0.0, 1.0, 5.0]]]])  # [batch, head, token, dim]; last dim not rotated
    theta = torch.tensor([torch.pi / 2, 0.0])
    cos = torch.cat([theta.cos(), theta.cos()]).view(1, 1, 4)
    sin = torch.cat([theta.sin(), theta.sin()]).view(1, 1, 4)
    rotated = torch.tensor([[[[0.0, 0.0, 1.0, 1.0, 5.0]]]])  # pair (1, 1): (1,0) turned by 90 degrees -> (0,1)
    torch.testing.assert_close(capture.unrotate(rotated, cos, sin), x, atol=1e-6, rtol=0)


def test_expand_kv_maps_query_heads_like_repeat_interleave():
    kv = torch.arange(2.0).view(2, 1, 1)  # [kv_head, token, dim]
    assert hooks.expand_kv(kv, 4).flatten().tolist() == [0.0, 0.0, 1.0, 1.0]
    with pytest.raises(ValueError, match="evenly"):
        hooks.expand_kv(kv, 3)


def test_unsupported_architecture_is_a_clear_error():
    class Cfg:
        model_type = "t5"

    class Net(torch.nn.Module):
        config = Cfg()

    with pytest.raises(hooks.UnsupportedArchitectureError, match="t5"):
        hooks.attention_layers(Net())


def test_an_architecture_the_hook_does_not_know_is_refused_with_what_still_works(texts):
    """MPNet computes attention inline (with its relative bias): capture refuses it and says which chapters run."""
    lm = extract.get_model("tiny:mpnet")
    with pytest.raises(UnsupportedArchitectureError, match="model_type 'mpnet'.*still work"):
        hooks.attention_layers(lm.model)
