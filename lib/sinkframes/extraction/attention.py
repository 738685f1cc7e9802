"""Per-sample attention ``[layer, head, query, key]`` from batched forward passes, cached on disk.

``extract_attention`` keeps the full tensors (and hidden states if asked); ``summarize`` applies a
reducer to each sample as it is produced and keeps only its output, so memory does not grow with
layers x heads x n^2. Both pass through the on-disk cache: a second call with the same inputs
loads the result and runs no forward pass (and does not even load the model).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from .. import models
from ..types import RunOptions
from . import shared
from .batching import STATS, backbone, forward, iterate_batches, raise_non_finite
from .run import reducer_key, run_cached


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


def finite_layer(weights: torch.Tensor, lengths: list[int]) -> bool:
    """Whether every sample's real tokens got finite weights in one layer (``weights`` ``[batch, head,
    query, key]``, sample ``r`` real up to ``lengths[r]``); padding may hold anything."""
    return all(bool(torch.isfinite(weights[r, :, :n, :n]).all()) for r, n in enumerate(lengths))


def check_finite_layers(lm: models.LoadedModel, atts: Sequence[torch.Tensor], lengths: list[int]) -> None:
    """``batching.check_finite`` on the per-layer tuple ``atts`` (each ``[batch, head, query, key]``),
    without stacking it into one ``[batch, layer, ...]`` copy."""
    raise_non_finite(lm, [k for k, a in enumerate(atts) if not finite_layer(a, lengths)])


@torch.no_grad()
def iterate_samples(
    lm: models.LoadedModel,
    ids: list[list[int]],
    opts: RunOptions,
    hidden_states: bool = False,
    desc: str = "forward",
    share: bool = True,
) -> Iterator[tuple[int, torch.Tensor, torch.Tensor | None]]:
    """Yield ``(index, attention [layer, head, n, n], hidden [layer+1, n, d] | None)`` per sample.

    Each sample is sliced from the model's per-layer tuple on its own (no ``[batch, layer, ...]`` copy of
    the whole batch), so the peak is the model's attention output plus one sample's layers. When the build
    shares attention between pages (``extraction.shared``; ``share``), the samples it stored come from
    the store first, and only the others run through the model.
    """
    todo = list(range(len(ids)))
    if share and shared.active(opts, hidden_states):
        done = set()
        for i, att in shared.stored(lm.record.ref, ids, opts):
            done.add(i)
            STATS["samples"] += 1
            yield i, att, None
        todo = [i for i in todo if i not in done]
        if not todo:
            return
    net = backbone(lm.model)
    for part, input_ids, mask in iterate_batches(lm, [ids[i] for i in todo], opts.batch_size, opts.progress, desc):
        batch = [todo[j] for j in part]  # indices into ids
        out = forward(lm, net, input_ids, mask, output_attentions=True, output_hidden_states=hidden_states)
        atts = getattr(out, "attentions", None)  # per layer [batch, head, query, key]
        if not atts or any(a is None for a in atts):
            raise models.AttentionUnavailableError(
                f"{lm.record.ref} returned no attention weights; load it with attn_implementation='eager' "
                "(sinkframes.models.load does) and do not use SDPA/flash attention"
            )
        hids = out.hidden_states if hidden_states else None  # per layer + 1 [batch, tok, d]
        del out
        check_finite_layers(lm, atts, [len(ids[i]) for i in batch])
        for r, i in enumerate(batch):
            n = len(ids[i])
            STATS["samples"] += 1
            att = torch.stack([a[r, :, :n, :n].float() for a in atts])  # [layer, head, query, key]
            hid = torch.stack([h[r, :n].float() for h in hids]) if hids is not None else None  # [layer+1, tok, d]
            yield (
                i,
                att.cpu().contiguous(),
                (hid.cpu().contiguous() if hid is not None else None),
            )
            del att, hid


def extract_attention(
    ref: str, texts: list[str], opts: RunOptions | None = None, *, hidden_states: bool = False, **overrides: Any
) -> Extraction:
    """Full per-sample attention (and hidden states if asked) for ``texts``; cached on disk.

    ``opts`` holds the run options; keyword ``overrides`` (``batch_size=``, ``dtype=``, ...) change some.
    """
    o = RunOptions.build(opts, **overrides)

    def keep(att: torch.Tensor, hid: torch.Tensor | None, causal: bool) -> dict[str, Any]:
        return {"attention": att, "hidden": hid}

    payload, hit = run_cached(
        ref,
        texts,
        {"kind": "attention"},
        keep,
        o,
        iterate_samples,
        hidden_states=hidden_states,
        namespace="extractions",
        stored=None if hidden_states else lambda: shared.payload(ref, list(texts), o, keep),
    )
    res = payload["results"]
    return Extraction(
        record=payload["record"],
        texts=payload["texts"],
        tokens=payload["tokens"],
        attentions=[r["attention"] for r in res],
        hidden_states=[r["hidden"] for r in res] if hidden_states else None,
        from_cache=hit,
    )


def summarize(
    ref: str,
    texts: list[str],
    reducer: Callable[[torch.Tensor, bool], dict[str, torch.Tensor]],
    opts: RunOptions | None = None,
    **overrides: Any,
) -> Extraction:
    """Apply ``reducer(attention, causal)`` to each sample as it is produced; keep only its output.

    Memory stays ``O(samples x reducer output)`` instead of ``O(samples x layers x heads x n^2)``.
    ``reducer.key()`` (a dict) identifies the reduction in the cache key.
    """
    o = RunOptions.build(opts, **overrides)

    def reduce(att: torch.Tensor, hid: torch.Tensor | None, causal: bool) -> dict[str, torch.Tensor]:
        return reducer(att, causal)

    payload, hit = run_cached(
        ref,
        texts,
        {"kind": "summary", **reducer_key(reducer)},
        reduce,
        o,
        iterate_samples,
        hidden_states=False,
        namespace="extractions",
        stored=lambda: shared.payload(ref, list(texts), o, reduce),
    )
    return Extraction(
        record=payload["record"],
        texts=payload["texts"],
        tokens=payload["tokens"],
        summaries=payload["results"],
        from_cache=hit,
    )
