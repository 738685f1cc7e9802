"""Batched forward passes that return per-sample attention ``[layer, head, query, key]``.

Texts are tokenized with the tokenizer's default special tokens (``bos_policy="default"``, as in
the paper) or with a BOS token forced at position 0 (``bos_policy="force"``; tokenizers without a
BOS token get their EOS token, the document separator, instead). Batches are sorted
by length and right-padded; with right padding a real token never attends to padding (causal) or
is masked from it (bidirectional), so trimming each sample to its ``n`` real tokens gives exactly
the unpadded attention. Results pass through the on-disk cache: a second call with the same
inputs loads them and runs no forward pass (and does not even load the model).
"""

from __future__ import annotations

import sys
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import torch
from tqdm import tqdm

from . import models as models_mod
from .cache import Cache, texts_digest

BOS_POLICIES = ("default", "force")

#: counters that tests and the CLI read to prove a cache hit ran no forward pass
STATS: dict[str, int] = {"forward_passes": 0, "samples": 0, "model_loads": 0}

_LAST_MODEL: dict[tuple, models_mod.LoadedModel] = {}


class TextError(ValueError):
    """An input text that cannot be analysed (empty, or longer than ``max_length`` tokens)."""


@dataclass
class Extraction:
    """Per-sample outputs of one model on one text set (lists follow the order of ``texts``)."""

    record: dict[str, Any]
    texts: list[str]
    tokens: list[list[str]]
    attentions: list[torch.Tensor] | None = None  # each [layer, head, query, key]
    hidden_states: list[torch.Tensor] | None = None  # each [layer + 1, token, hidden]
    summaries: list[dict[str, torch.Tensor]] | None = None
    from_cache: bool = False


def get_model(
    ref: str,
    dtype: str = "float32",
    device: str = "auto",
    revision: str | None = None,
    quantization: str | None = None,
) -> models_mod.LoadedModel:
    """Load ``ref`` (keeping only the most recent model in memory, to bound RAM)."""
    key = (ref, dtype, str(device), revision, quantization)
    if key not in _LAST_MODEL:
        _LAST_MODEL.clear()
        _LAST_MODEL[key] = models_mod.load(ref, dtype=dtype, device=device, revision=revision, quantization=quantization)
        STATS["model_loads"] += 1
    return _LAST_MODEL[key]


def tokenize(tokenizer: Any, texts: list[str], max_length: int, bos_policy: str = "default", truncation: bool = False) -> list[list[int]]:
    """Token ids per text; raises ``TextError`` naming every bad text and what to do."""
    if bos_policy not in BOS_POLICIES:
        raise ValueError(f"bos_policy must be one of {BOS_POLICIES}, got {bos_policy!r}")
    if not texts:
        raise TextError("no texts given")
    empty = [i for i, t in enumerate(texts) if not isinstance(t, str) or not t.strip()]
    if empty:
        raise TextError(f"empty text at positions {empty[:10]}; drop them before extraction")
    ids = [tokenizer(t)["input_ids"] for t in texts]
    if bos_policy == "force":
        # the BOS token, or the EOS/document separator for tokenizers without one (Qwen2.5)
        bos = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
        if bos is None:
            raise TextError("bos_policy='force' but this tokenizer defines neither a BOS nor an EOS token")
        ids = [x if x and x[0] == bos else [bos, *x] for x in ids]
    too_long = [i for i, x in enumerate(ids) if len(x) > max_length]
    if too_long:
        if not truncation:
            worst = max(len(ids[i]) for i in too_long)
            raise TextError(
                f"{len(too_long)} text(s) exceed max_length={max_length} tokens (longest {worst}), e.g. positions "
                f"{too_long[:10]}; raise max_length or pass truncation=True"
            )
        ids = [x[:max_length] for x in ids]
    return ids


def _batches(lengths: list[int], batch_size: int) -> list[list[int]]:
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    return [order[k : k + batch_size] for k in range(0, len(order), batch_size)]


def _backbone(model: torch.nn.Module) -> torch.nn.Module:
    """The transformer without its LM head (attention does not depend on the head)."""
    return getattr(model, "base_model", model)


@torch.no_grad()
def iterate_samples(
    lm: models_mod.LoadedModel,
    ids: list[list[int]],
    batch_size: int = 16,
    hidden_states: bool = False,
    progress: bool = True,
    desc: str = "forward",
) -> Iterator[tuple[int, torch.Tensor, torch.Tensor | None]]:
    """Yield ``(index, attention [layer, head, n, n], hidden [layer+1, n, d] | None)`` per sample."""
    if batch_size < 1:
        raise ValueError("batch_size must be >= 1")
    pad = lm.tokenizer.pad_token_id if lm.tokenizer.pad_token_id is not None else 0
    net = _backbone(lm.model)
    batches = _batches([len(x) for x in ids], batch_size)
    for batch in tqdm(batches, desc=desc, disable=not progress, file=sys.stderr, leave=False):
        width = max(len(ids[i]) for i in batch)
        input_ids = torch.full((len(batch), width), pad, dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for r, i in enumerate(batch):
            input_ids[r, : len(ids[i])] = torch.tensor(ids[i])
            mask[r, : len(ids[i])] = 1
        kwargs: dict[str, Any] = {"use_cache": False} if lm.record.causal else {}
        out = net(
            input_ids=input_ids.to(lm.device),
            attention_mask=mask.to(lm.device),
            output_attentions=True,
            output_hidden_states=hidden_states,
            **kwargs,
        )
        STATS["forward_passes"] += 1
        atts = getattr(out, "attentions", None)
        if not atts or any(a is None for a in atts):
            raise models_mod.AttentionUnavailableError(
                f"{lm.record.ref} returned no attention weights; load it with attn_implementation='eager' "
                "(sinkframes.models.load does) and do not use SDPA/flash attention"
            )
        att = torch.stack([a.float() for a in atts], 1)  # [batch, layer, head, query, key]
        hid = torch.stack([h.float() for h in out.hidden_states], 1) if hidden_states else None  # [batch, layer+1, tok, d]
        if not torch.isfinite(att).all():
            warnings.warn(f"{lm.record.ref}: non-finite attention weights (try dtype='float32')", RuntimeWarning, stacklevel=2)
        for r, i in enumerate(batch):
            n = len(ids[i])
            STATS["samples"] += 1
            yield i, att[r, :, :, :n, :n].cpu().contiguous(), (hid[r, :, :n].cpu().contiguous() if hid is not None else None)


def _key(ref: str, texts: list[str], product: dict[str, Any], **opts: Any) -> dict[str, Any]:
    return {
        "product": product,
        "source": models_mod.source_fingerprint(ref, opts.get("revision")),
        "texts": texts_digest(texts),
        "n_texts": len(texts),
        "attn_implementation": "eager",
        **opts,
    }


def _run(
    ref: str,
    texts: list[str],
    product: dict[str, Any],
    per_sample: Callable[..., dict[str, Any]],
    *,
    hidden_states: bool,
    batch_size: int,
    max_length: int,
    bos_policy: str,
    truncation: bool,
    dtype: str,
    device: str,
    revision: str | None,
    quantization: str | None,
    progress: bool,
    use_cache: bool,
    iterate: Callable[..., Iterator[tuple]] | None = None,
    namespace: str = "extractions",
) -> tuple[dict[str, Any], bool]:
    """One cached pass over ``texts``: ``iterate(lm, ids, batch_size, hidden_states, progress, desc=)``
    yields ``(index, *sample)`` (``iterate_samples`` by default) and ``per_sample(*sample, causal)``
    reduces each sample as it comes."""
    iterate = iterate or iterate_samples
    texts = list(texts)
    dev = models_mod.resolve_device(device)
    key = _key(ref, texts, product, bos_policy=bos_policy, max_length=max_length, truncation=truncation, dtype=dtype,
               device_type=dev.type, revision=revision, quantization=quantization, hidden_states=hidden_states)

    def compute() -> dict[str, Any]:
        lm = get_model(ref, dtype=dtype, device=device, revision=revision, quantization=quantization)
        ids = tokenize(lm.tokenizer, texts, max_length, bos_policy, truncation)
        results: list[Any] = [None] * len(texts)
        for i, *sample in iterate(lm, ids, batch_size, hidden_states, progress, desc=f"{ref}: forward"):
            results[i] = per_sample(*sample, lm.record.causal)
        tokens = [lm.tokenizer.convert_ids_to_tokens(x) for x in ids]
        return {"record": lm.record.to_dict(), "texts": texts, "tokens": tokens, "results": results}

    if not use_cache:
        return compute(), False
    return Cache(namespace=namespace).get_or_compute(key, compute)


def extract_attention(
    ref: str,
    texts: list[str],
    *,
    hidden_states: bool = False,
    batch_size: int = 16,
    max_length: int = 256,
    bos_policy: str = "default",
    truncation: bool = False,
    dtype: str = "float32",
    device: str = "auto",
    revision: str | None = None,
    quantization: str | None = None,
    progress: bool = True,
    use_cache: bool = True,
) -> Extraction:
    """Full per-sample attention (and hidden states if asked) for ``texts``; cached on disk."""
    payload, hit = _run(
        ref, texts, {"kind": "attention"},
        lambda att, hid, causal: {"attention": att, "hidden": hid},
        hidden_states=hidden_states, batch_size=batch_size, max_length=max_length, bos_policy=bos_policy,
        truncation=truncation, dtype=dtype, device=device, revision=revision, quantization=quantization,
        progress=progress, use_cache=use_cache,
    )
    res = payload["results"]
    return Extraction(
        record=payload["record"], texts=payload["texts"], tokens=payload["tokens"],
        attentions=[r["attention"] for r in res],
        hidden_states=[r["hidden"] for r in res] if hidden_states else None,
        from_cache=hit,
    )


def summarize(
    ref: str,
    texts: list[str],
    reducer: Callable[[torch.Tensor, bool], dict[str, torch.Tensor]],
    *,
    batch_size: int = 16,
    max_length: int = 256,
    bos_policy: str = "default",
    truncation: bool = False,
    dtype: str = "float32",
    device: str = "auto",
    revision: str | None = None,
    quantization: str | None = None,
    progress: bool = True,
    use_cache: bool = True,
) -> Extraction:
    """Apply ``reducer(attention, causal)`` to each sample as it is produced; keep only its output.

    Memory stays ``O(samples x reducer output)`` instead of ``O(samples x layers x heads x n^2)``.
    ``reducer.key()`` (a dict) identifies the reduction in the cache key.
    """
    rkey = reducer.key() if hasattr(reducer, "key") else {"reducer": getattr(reducer, "__qualname__", repr(reducer))}
    payload, hit = _run(
        ref, texts, {"kind": "summary", **rkey},
        lambda att, hid, causal: reducer(att, causal),
        hidden_states=False, batch_size=batch_size, max_length=max_length, bos_policy=bos_policy,
        truncation=truncation, dtype=dtype, device=device, revision=revision, quantization=quantization,
        progress=progress, use_cache=use_cache,
    )
    return Extraction(record=payload["record"], texts=payload["texts"], tokens=payload["tokens"],
                      summaries=payload["results"], from_cache=hit)
