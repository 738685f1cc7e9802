"""One forward pass that captures, per layer, what attention is made of.

Per layer and sample: queries and keys before and after the rotary embedding, the per-head value
vectors, the attention weights, the attention output before the output projection (per head) and
after it, and (optionally) the residual-stream hidden states.

How it is captured (the same way for every supported architecture):

- the model's own ``eager_attention_forward`` is wrapped for the duration of the pass: it receives
  the queries and keys *after* RoPE (and after any query/key norm, e.g. Gemma3's ``q_norm``), the
  values, the additive mask and the scaling, and returns the attention output before the output
  projection and the attention weights;
- a pre-hook on the attention module reads the rotary ``(cos, sin)`` it receives; the keys and
  queries *before* RoPE are recovered by the inverse rotation (exact: RoPE is orthogonal and acts
  on the first ``cos.shape[-1]`` dimensions, which covers partial rotary as in Phi and GPT-NeoX);
  models with absolute positions (BERT, XLM-R) have no rotation, so before == after;
- a hook on the output projection (``o_proj`` / ``dense``) reads the output after it.

Grouped-query attention: keys and values are kept per KV head ``[layer, kv_head, token, dim]``;
query head ``h`` reads KV head ``h // (H / KV)`` (``repeat_interleave``, as ``repeat_kv`` in
transformers); :func:`expand_kv` does that mapping.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import torch
from tqdm import tqdm

from . import models as models_mod


class UnsupportedArchitectureError(ValueError):
    """The model's attention modules are not known to the capture code."""


@dataclass(frozen=True)
class ArchSpec:
    """Where the attention module and its output projection sit, relative to the module list."""

    attention_suffix: str  # module name ends with this
    output_projection: str  # name of the output projection relative to the attention's parent or itself
    output_from_parent: bool = False  # BERT: the projection is a sibling (``attention.output.dense``)
    rotary: bool = True


ARCHITECTURES: dict[str, ArchSpec] = {
    "llama": ArchSpec(".self_attn", "o_proj"),
    "mistral": ArchSpec(".self_attn", "o_proj"),
    "qwen2": ArchSpec(".self_attn", "o_proj"),
    "gemma3": ArchSpec(".self_attn", "o_proj"),
    "gemma3_text": ArchSpec(".self_attn", "o_proj"),
    "phi": ArchSpec(".self_attn", "dense"),
    "gpt_neox": ArchSpec(".attention", "dense"),
    "bert": ArchSpec(".attention.self", "output.dense", output_from_parent=True, rotary=False),
    "xlm-roberta": ArchSpec(".attention.self", "output.dense", output_from_parent=True, rotary=False),
}


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


def expand_kv(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """``[..., kv_head, token, dim]`` -> ``[..., head, token, dim]``: query head h reads KV head h // (H/KV)."""
    kv = x.shape[-3]
    if n_heads % kv:
        raise ValueError(f"{n_heads} query heads cannot share {kv} KV heads evenly")
    return x.repeat_interleave(n_heads // kv, dim=-3)


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


def arch_of(model: torch.nn.Module) -> str:
    cfg = model.config
    cfg = cfg.get_text_config() if hasattr(cfg, "get_text_config") else cfg
    return cfg.model_type


def _spec(model: torch.nn.Module) -> ArchSpec:
    mt = arch_of(model)
    if mt not in ARCHITECTURES:
        raise UnsupportedArchitectureError(
            f"capturing queries, keys and values is not implemented for model_type {mt!r}; supported: "
            f"{', '.join(sorted(ARCHITECTURES))}. Attention-only chapters still work with this model."
        )
    return ARCHITECTURES[mt]


def attention_modules(model: torch.nn.Module) -> list[tuple[torch.nn.Module, torch.nn.Module]]:
    """``(attention module, output projection)`` per layer, in layer order."""
    spec = _spec(model)
    named = dict(model.named_modules())
    found = []
    for name, mod in named.items():
        if name.endswith(spec.attention_suffix) and name.rsplit(".", spec.attention_suffix.count("."))[0].split(".")[-1].isdigit():
            base = name.rsplit(".", 1)[0] if spec.output_from_parent else name
            proj = named.get(f"{base}.{spec.output_projection}")
            if proj is None:
                raise UnsupportedArchitectureError(f"no output projection {base}.{spec.output_projection} in {arch_of(model)}")
            found.append((mod, proj))
    if not found:
        raise UnsupportedArchitectureError(f"no attention modules ending in {spec.attention_suffix!r} in {arch_of(model)}")
    return found


@contextmanager
def capturing(model: torch.nn.Module) -> Iterator[list[dict[str, Any]]]:
    """Context in which each forward pass fills one dict per layer with the captured tensors."""
    spec = _spec(model)
    pairs = attention_modules(model)
    records: list[dict[str, Any]] = [{} for _ in pairs]
    index = {id(att): k for k, (att, _) in enumerate(pairs)}
    modules = {sys.modules[type(att).__module__] for att, _ in pairs}
    originals = {}
    for mod in modules:
        if not hasattr(mod, "eager_attention_forward"):
            raise UnsupportedArchitectureError(f"{mod.__name__} has no eager_attention_forward to capture")
        originals[mod] = mod.eager_attention_forward

    def wrap(orig: Callable) -> Callable:
        def eager(module, query, key, value, attention_mask, *args, **kwargs):
            out, weights = orig(module, query, key, value, attention_mask, *args, **kwargs)
            k = index.get(id(module))
            if k is not None:
                scaling = kwargs.get("scaling")
                if scaling is None:
                    scaling = getattr(module, "scaling", query.shape[-1] ** -0.5)
                rec = records[k]
                rec.update(query=query.detach(), key=key.detach(), value=value.detach(),
                           output_heads=out.detach().transpose(1, 2), attention=weights.detach(),
                           scaling=float(scaling), softcap=kwargs.get("softcap"),
                           mask=None if attention_mask is None else attention_mask.detach())
            return out, weights

        return eager

    def pre_hook(k: int):
        def hook(_mod, args, kwargs):
            pe = kwargs.get("position_embeddings")
            if pe is None and len(args) > 1 and isinstance(args[1], tuple):
                pe = args[1]
            records[k]["rope"] = pe
            return None

        return hook

    def proj_hook(k: int):
        def hook(_mod, _inp, out):
            records[k]["output"] = out.detach()

        return hook

    handles = []
    try:
        for mod, orig in originals.items():
            mod.eager_attention_forward = wrap(orig)
        for k, (att, proj) in enumerate(pairs):
            handles.append(att.register_forward_pre_hook(pre_hook(k), with_kwargs=True))
            handles.append(proj.register_forward_hook(proj_hook(k)))
        yield records
    finally:
        for h in handles:
            h.remove()
        for mod, orig in originals.items():
            mod.eager_attention_forward = orig
    if spec.rotary and records and records[0] and records[0].get("rope") is None:
        raise UnsupportedArchitectureError("the attention modules received no rotary (cos, sin); cannot undo RoPE")


@torch.no_grad()
def iterate_captures(
    lm: models_mod.LoadedModel,
    ids: list[list[int]],
    batch_size: int = 8,
    hidden_states: bool = True,
    progress: bool = True,
    desc: str = "capture",
) -> Iterator[tuple[int, SampleCapture]]:
    """Yield ``(index, SampleCapture)`` per sample: one forward pass per (right-padded) batch."""
    from .extract import STATS, _backbone, _batches

    if batch_size < 1:
        raise ValueError("batch_size must be >= 1")
    spec = _spec(lm.model)
    pad = lm.tokenizer.pad_token_id if lm.tokenizer.pad_token_id is not None else 0
    net = _backbone(lm.model)
    for batch in tqdm(_batches([len(x) for x in ids], batch_size), desc=desc, disable=not progress, file=sys.stderr, leave=False):
        width = max(len(ids[i]) for i in batch)
        input_ids = torch.full((len(batch), width), pad, dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for r, i in enumerate(batch):
            input_ids[r, : len(ids[i])] = torch.tensor(ids[i])
            mask[r, : len(ids[i])] = 1
        kwargs: dict[str, Any] = {"use_cache": False} if lm.record.causal else {}
        with capturing(lm.model) as recs:
            out = net(input_ids=input_ids.to(lm.device), attention_mask=mask.to(lm.device),
                      output_attentions=True, output_hidden_states=hidden_states, **kwargs)
        STATS["forward_passes"] += 1
        if any("attention" not in r or r["attention"] is None for r in recs):
            raise models_mod.AttentionUnavailableError(
                f"{lm.record.ref}: the eager attention function was not called; load with attn_implementation='eager'")
        q = torch.stack([r["query"].float() for r in recs], 1)  # [batch, layer, head, tok, dim]
        k = torch.stack([r["key"].float() for r in recs], 1)  # [batch, layer, kv, tok, dim]
        if spec.rotary:
            q_pre = torch.stack([unrotate(r["query"].float(), r["rope"][0].float(), r["rope"][1].float()) for r in recs], 1)
            k_pre = torch.stack([unrotate(r["key"].float(), r["rope"][0].float(), r["rope"][1].float()) for r in recs], 1)
        else:
            q_pre, k_pre = q, k
        v = torch.stack([r["value"].float() for r in recs], 1)
        att = torch.stack([r["attention"].float() for r in recs], 1)  # [batch, layer, head, q, k]
        oh = torch.stack([r["output_heads"].float() for r in recs], 1)  # [batch, layer, head, tok, dim]
        o = torch.stack([r["output"].float() for r in recs], 1)  # [batch, layer, tok, hidden]
        hid = torch.stack([h.float() for h in out.hidden_states], 1) if hidden_states else None
        scaling = torch.tensor([r["scaling"] for r in recs])
        for r, i in enumerate(batch):
            n = len(ids[i])
            STATS["samples"] += 1
            yield i, SampleCapture(
                query_pre=q_pre[r, :, :, :n].cpu(), query=q[r, :, :, :n].cpu(), key_pre=k_pre[r, :, :, :n].cpu(),
                key=k[r, :, :, :n].cpu(), value=v[r, :, :, :n].cpu(), attention=att[r, :, :, :n, :n].cpu(),
                output_heads=oh[r, :, :, :n].cpu(), output=o[r, :, :n].cpu(),
                hidden=hid[r, :, :n].cpu() if hid is not None else None, scaling=scaling, rotary=spec.rotary,
            )


def summarize_captures(
    ref: str,
    texts: list[str],
    reducer: Callable[[SampleCapture, bool], dict[str, torch.Tensor]],
    *,
    batch_size: int = 8,
    max_length: int = 256,
    bos_policy: str = "default",
    truncation: bool = False,
    dtype: str = "float32",
    device: str = "auto",
    revision: str | None = None,
    quantization: str | None = None,
    hidden_states: bool = True,
    progress: bool = True,
    use_cache: bool = True,
) -> tuple[dict[str, Any], list[dict[str, torch.Tensor]], bool]:
    """Apply ``reducer(capture, causal)`` per sample as it is produced; cached on disk.

    Returns ``(model record, per-sample summaries in text order, cache hit)``. ``reducer.key()``
    identifies the reduction in the cache key.
    """
    from .extract import _run

    rkey = reducer.key() if hasattr(reducer, "key") else {"reducer": getattr(reducer, "__qualname__", repr(reducer))}
    payload, hit = _run(
        ref, texts, {"kind": "capture", **rkey}, reducer,
        hidden_states=hidden_states, batch_size=batch_size, max_length=max_length, bos_policy=bos_policy,
        truncation=truncation, dtype=dtype, device=device, revision=revision, quantization=quantization,
        progress=progress, use_cache=use_cache, iterate=iterate_captures, namespace="captures",
    )
    return payload["record"], payload["results"], hit
