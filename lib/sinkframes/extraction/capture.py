"""One forward pass that captures, per layer, what attention is made of.

Per layer and sample: queries and keys before and after the rotary embedding, the per-head value
vectors, the attention weights, the attention output before the output projection (per head) and
after it, and (optionally) the residual-stream hidden states.

How it is captured (the same way for every supported architecture):

- ``hooks.attention_hook`` reads every eager attention call: the queries and keys *after* RoPE
  (and after any query/key norm, e.g. Gemma3's ``q_norm``), the values, the scaling, the attention
  weights and the attention output before the output projection;
- a pre-hook on the attention module reads the rotary ``(cos, sin)`` it receives; the keys and
  queries *before* RoPE are recovered by the inverse rotation (exact: RoPE is orthogonal and acts
  on the first ``cos.shape[-1]`` dimensions, which covers partial rotary as in Phi and GPT-NeoX);
  models with absolute positions (BERT, XLM-R) have no rotation, so before == after;
- a hook on the output projection (``o_proj`` / ``dense``) reads the output after it.

Grouped-query attention: keys and values are kept per KV head ``[layer, kv_head, token, dim]``;
query head ``h`` reads KV head ``h // (H / KV)`` (``repeat_interleave``, as ``repeat_kv`` in
transformers); ``tensors.expand_kv`` does that mapping.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch

from .. import models
from ..types import RunOptions
from .batching import STATS, backbone, check_finite, forward, iterate_batches
from .hooks import AttentionCall, attention_hook, spec_of
from .run import reducer_key, run_cached


@dataclass
class SampleCapture:
    """Everything captured for one sample, trimmed to its ``n`` real tokens."""

    query_pre: torch.Tensor  # [layer, head, token, dim]   before RoPE (== query for absolute positions)
    query: torch.Tensor  # [layer, head, token, dim]       after RoPE: what is scored
    key_pre: torch.Tensor  # [layer, kv_head, token, dim]
    key: torch.Tensor  # [layer, kv_head, token, dim]
    value: torch.Tensor  # [layer, kv_head, token, dim]
    attention: torch.Tensor  # [layer, head, query, key]
    output_heads: torch.Tensor  # [layer, head, token, dim]  attention @ V, before the output projection
    output: torch.Tensor  # [layer, token, hidden]           after the output projection
    hidden: torch.Tensor | None  # [layer + 1, token, hidden] residual stream (HF hidden_states)
    scaling: torch.Tensor  # [layer] the factor applied to q.k
    rotary: bool

    @property
    def n_tokens(self) -> int:
        return int(self.attention.shape[-1])


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """The RoPE pairing used by transformers: ``(x1, x2) -> (-x2, x1)`` on the two halves."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def unrotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Undo RoPE on ``x [batch, head, token, dim]`` given ``cos, sin [batch, token, rot_dim]``.

    Only the first ``rot_dim`` dimensions are rotated (partial rotary leaves the rest unchanged).
    """
    rd = cos.shape[-1]
    c, s = cos.unsqueeze(1).to(x.dtype), sin.unsqueeze(1).to(x.dtype)
    rot, rest = x[..., :rd], x[..., rd:]
    back = rot * c - rotate_half(rot) * s
    return torch.cat((back, rest), dim=-1)


@contextmanager
def capturing(model: torch.nn.Module) -> Iterator[list[dict[str, Any]]]:
    """Context in which each forward pass fills one dict per layer with the captured tensors."""
    spec = spec_of(model)
    records: list[dict[str, Any]] = []

    def read(call: AttentionCall) -> None:
        records[call.layer].update(
            query=call.query,
            key=call.key,
            value=call.value,
            output_heads=call.output.transpose(1, 2),
            attention=call.weights,
            scaling=call.scaling,
            softcap=call.softcap,
            mask=call.mask,
        )

    def pre_hook(k: int) -> Callable[..., None]:
        def hook(_mod: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
            pe = kwargs.get("position_embeddings")
            if pe is None and len(args) > 1 and isinstance(args[1], tuple):
                pe = args[1]
            records[k]["rope"] = pe

        return hook

    def proj_hook(k: int) -> Callable[..., None]:
        def hook(_mod: torch.nn.Module, _inp: Any, out: torch.Tensor) -> None:
            records[k]["output"] = out.detach()

        return hook

    handles = []
    with attention_hook(model, read=read) as layers:
        records.extend({} for _ in layers)
        try:
            for k, (att, proj) in enumerate(layers):
                handles.append(att.register_forward_pre_hook(pre_hook(k), with_kwargs=True))
                handles.append(proj.register_forward_hook(proj_hook(k)))
            yield records
        finally:
            for h in handles:
                h.remove()
    if spec.rotary and records and records[0] and records[0].get("rope") is None:
        raise models.UnsupportedArchitectureError(
            "the attention modules received no rotary (cos, sin); cannot undo RoPE"
        )


@torch.no_grad()
def iterate_captures(
    lm: models.LoadedModel, ids: list[list[int]], opts: RunOptions, hidden_states: bool = True, desc: str = "capture"
) -> Iterator[tuple[int, SampleCapture]]:
    """Yield ``(index, SampleCapture)`` per sample: one forward pass per (right-padded) batch."""
    spec = spec_of(lm.model)
    net = backbone(lm.model)
    for batch, input_ids, mask in iterate_batches(lm, ids, opts.batch_size, opts.progress, desc):
        with capturing(lm.model) as recs:
            out = forward(lm, net, input_ids, mask, output_attentions=True, output_hidden_states=hidden_states)
        if any("attention" not in r or r["attention"] is None for r in recs):
            raise models.AttentionUnavailableError(
                f"{lm.record.ref}: the eager attention function was not called; load with attn_implementation='eager'"
            )
        q = torch.stack([r["query"].float() for r in recs], 1)  # [batch, layer, head, tok, dim]
        k = torch.stack([r["key"].float() for r in recs], 1)  # [batch, layer, kv, tok, dim]
        if spec.rotary:
            q_pre = torch.stack(
                [unrotate(r["query"].float(), r["rope"][0].float(), r["rope"][1].float()) for r in recs], 1
            )
            k_pre = torch.stack(
                [unrotate(r["key"].float(), r["rope"][0].float(), r["rope"][1].float()) for r in recs], 1
            )
        else:
            q_pre, k_pre = q, k
        v = torch.stack([r["value"].float() for r in recs], 1)
        att = torch.stack([r["attention"].float() for r in recs], 1)  # [batch, layer, head, q, k]
        check_finite(lm, att, [len(ids[i]) for i in batch])
        oh = torch.stack([r["output_heads"].float() for r in recs], 1)  # [batch, layer, head, tok, dim]
        o = torch.stack([r["output"].float() for r in recs], 1)  # [batch, layer, tok, hidden]
        hid = torch.stack([h.float() for h in out.hidden_states], 1) if hidden_states else None
        scaling = torch.tensor([r["scaling"] for r in recs], device=att.device)
        for r, i in enumerate(batch):
            n = len(ids[i])
            STATS["samples"] += 1
            yield (
                i,
                SampleCapture(
                    query_pre=q_pre[r, :, :, :n].cpu(),
                    query=q[r, :, :, :n].cpu(),
                    key_pre=k_pre[r, :, :, :n].cpu(),
                    key=k[r, :, :, :n].cpu(),
                    value=v[r, :, :, :n].cpu(),
                    attention=att[r, :, :, :n, :n].cpu(),
                    output_heads=oh[r, :, :, :n].cpu(),
                    output=o[r, :, :n].cpu(),
                    hidden=hid[r, :, :n].cpu() if hid is not None else None,
                    scaling=scaling,
                    rotary=spec.rotary,
                ),
            )


def summarize_captures(
    ref: str,
    texts: list[str],
    reducer: Callable[[SampleCapture, bool], dict[str, torch.Tensor]],
    opts: RunOptions | None = None,
    *,
    hidden_states: bool = True,
    **overrides: Any,
) -> tuple[dict[str, Any], list[dict[str, torch.Tensor]], bool]:
    """Apply ``reducer(capture, causal)`` per sample as it is produced; cached on disk.

    Returns ``(model record, per-sample summaries in text order, cache hit)``. ``reducer.key()``
    identifies the reduction in the cache key.
    """
    o = RunOptions.build(opts, **overrides)
    payload, hit = run_cached(
        ref,
        texts,
        {"kind": "capture", **reducer_key(reducer)},
        reducer,
        o,
        iterate_captures,
        hidden_states=hidden_states,
        namespace="captures",
    )
    return payload["record"], payload["results"], hit
