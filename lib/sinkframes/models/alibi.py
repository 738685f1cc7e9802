"""BLOOM's attention (ALiBi) through the library's one attention hook.

transformers computes BLOOM's attention inside ``BloomAttention.forward`` (``alibi.baddbmm`` then a softmax),
not through a module-level ``eager_attention_forward`` as every other supported architecture does, so the hook
(``extraction.hooks.attention_hook``) had nothing to wrap. :func:`install` gives ``modeling_bloom`` that function
(:func:`eager_attention_forward`: scores times the scale, plus an additive bias, softmax in float32) and a
``BloomAttention.forward`` (:func:`bloom_attention_forward`) that calls it with ALiBi's per-head linear bias added
to the model's mask. The arithmetic is the model's own (the same scale, bias and float32 softmax); a test holds
the logits to those of transformers' forward.
"""

from __future__ import annotations

import sys
from typing import Any

import torch
import torch.nn.functional as F


def eager_attention_forward(module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                            attention_mask: torch.Tensor | None, scaling: float, dropout: float = 0.0,
                            **kwargs: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """Post-softmax weights ``[batch, head, query, key]`` and their output ``[batch, query, head, dim]`` of
    ``softmax(q k^T * scaling + attention_mask)``; ``attention_mask`` is additive (ALiBi's bias and the causal mask)."""
    scores = torch.matmul(query, key.transpose(-1, -2)) * scaling  # [batch, head, query, key]
    if attention_mask is not None:
        scores = scores + attention_mask
    weights = F.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)
    weights = F.dropout(weights, p=dropout, training=module.training)
    out = torch.matmul(weights, value).transpose(1, 2).contiguous()  # [batch, query, head, dim]
    return out, weights


def bloom_attention_forward(self: Any, hidden_states: torch.Tensor, residual: torch.Tensor, alibi: torch.Tensor,
                            attention_mask: torch.Tensor | None, layer_past: Any = None, use_cache: bool = False,
                            output_attentions: bool = False, **kwargs: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """``BloomAttention.forward`` with its attention computed by its module's ``eager_attention_forward`` (the
    function the hook wraps): the same projections, cache update, ALiBi bias, output projection and residual."""
    from transformers.models.bloom.modeling_bloom import dropout_add

    batch, q_len, _ = hidden_states.shape
    query, key, value = self._reshape(self.query_key_value(hidden_states))  # 3 x [batch, head, token, dim]
    if layer_past is not None:
        key, value = layer_past.update(key, value, self.layer_idx)
    bias = self.beta * alibi.view(batch, self.num_heads, 1, -1)  # [batch, head, 1, key]
    if attention_mask is not None:
        bias = bias + attention_mask  # [batch, 1 or head, query, key]
    eager = sys.modules[type(self).__module__].eager_attention_forward  # looked up at call time: the hook's
    out, weights = eager(self, query, key, value, bias, scaling=self.inv_norm_factor,
                         dropout=self.attention_dropout.p)
    context = out.reshape(batch, q_len, self.num_heads * self.head_dim)  # [batch, query, hidden]
    if self.pretraining_tp > 1 and self.slow_but_exact:
        slices = self.hidden_size / self.pretraining_tp
        output = torch.zeros_like(context)
        for i in range(self.pretraining_tp):
            output = output + F.linear(context[:, :, int(i * slices): int((i + 1) * slices)],
                                       self.dense.weight[:, int(i * slices): int((i + 1) * slices)])
    else:
        output = self.dense(context)
    output = dropout_add(output, residual, self.hidden_dropout, self.training)
    return output, weights


#: transformers' own ``BloomAttention.forward``, kept when :func:`install` replaces it (the tests compare the two)
TRANSFORMERS_FORWARD: list[Any] = []


def install() -> None:
    """Route every BLOOM model's attention through :func:`eager_attention_forward` (idempotent)."""
    from transformers.models.bloom import modeling_bloom

    if modeling_bloom.BloomAttention.forward is bloom_attention_forward:
        return
    TRANSFORMERS_FORWARD[:] = [modeling_bloom.BloomAttention.forward]
    modeling_bloom.eager_attention_forward = eager_attention_forward  # type: ignore[attr-defined]
    modeling_bloom.BloomAttention.forward = bloom_attention_forward  # type: ignore[method-assign]
