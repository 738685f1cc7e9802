"""Per-sentence attention computed once for a build and read by every page that needs it.

The book's pages run many analyses over the same few models and overlapping sentence sets (the
first 100-200 sentences of one seeded draw), and every analysis that needs only attention would
otherwise run its own forward pass. The batch build first runs :func:`fill`: one pass per model
over the union of the pages' sentences, storing each sentence's attention ``[layer, head, query,
key]`` under its token ids, the model and the result-changing run options. With
``SINKFRAMES_SHARED_ATTENTION=1`` (which the build then sets for its pages), ``iterate_samples``
reads the stored sentences and runs the forward pass only for the others.

Only :func:`fill` writes the store, so what a page reads never depends on which page ran first. A
causal model's attention is stored as its lower triangle (the rest is exactly zero), which halves
the disk it takes; a matrix with weight above the diagonal is stored whole.

The fill also stores the model's record and each text's token ids and tokens, so that a reduction of
sentences the store holds entirely (:func:`payload`) loads no model: a page that only reads stored
attention would otherwise load every model and random twin it names (about half of such a page's
time on the offline profile, measured in ``bench/README.md``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import torch

from ..cache import Cache, CorruptCacheEntry, cache_key
from ..code_digest import code_digest
from ..types import RunOptions

#: set to "1" to read stored sentence attention in ``iterate_samples``
ENV = "SINKFRAMES_SHARED_ATTENTION"
NAMESPACE = "attention"
#: the stored layout's format (enters the key): a format, raised when the layout of a stored sentence changes; what
#: a sentence's attention is follows from the model and the options in the key
VERSION = 1


def active(opts: RunOptions, hidden_states: bool) -> bool:
    """Whether an attention-only pass with ``opts`` reads the store (off when caching is off)."""
    return os.environ.get(ENV) == "1" and opts.use_cache and not hidden_states


def base_key(ref: str, opts: RunOptions) -> dict[str, Any]:
    """The part of every sentence's key that depends on the model and options (built once per pass:
    fingerprinting a model's weights takes a while)."""
    return cache_key({"kind": "sentence_attention", "version": VERSION}, ref, [], opts)


def sentence_key(base: dict[str, Any], ids: list[int]) -> dict[str, Any]:
    return {**base, "ids": [int(t) for t in ids]}


def _code() -> dict[str, str]:
    """The digests of the code that writes a model's record and tokenizes a text: a change to either stores them
    again (the attention, keyed by token ids, stays)."""
    return {"record": code_digest("sinkframes.models.loading"), "tokens": code_digest("sinkframes.extraction.batching")}


def record_key(base: dict[str, Any]) -> dict[str, Any]:
    """The key of the model's record (``ModelRecord.to_dict`` of the model the fill loaded)."""
    return {**base, "part": "record", "code": _code()["record"]}


def text_key(base: dict[str, Any], text: str) -> dict[str, Any]:
    """The key of one text's ``{"ids", "tokens"}`` under the model and options of ``base``."""
    return {**base, "part": "tokens", "code": _code()["tokens"], "text": text}


def pack(att: torch.Tensor) -> dict[str, torch.Tensor]:
    """``att`` ``[layer, head, n, n]`` as stored: its lower triangle when everything above is zero."""
    n = att.shape[-1]
    rows, cols = torch.tril_indices(n, n, device=att.device)
    upper = torch.triu(att, diagonal=1)
    if bool((upper == 0).all()):
        # tril: [layer, head, n (n + 1) / 2]
        return {"tril": att[..., rows, cols].contiguous(), "n": torch.tensor(n, device=att.device)}
    return {"full": att.contiguous()}


def unpack(stored: dict[str, torch.Tensor]) -> torch.Tensor:
    """The ``[layer, head, n, n]`` tensor :func:`pack` stored, exactly."""
    if "full" in stored:
        return stored["full"]
    n = int(stored["n"])
    tril = stored["tril"]  # [layer, head, n (n + 1) / 2]
    att = torch.zeros(*tril.shape[:-1], n, n, dtype=tril.dtype, device=tril.device)
    rows, cols = torch.tril_indices(n, n, device=tril.device)
    att[..., rows, cols] = tril
    return att


def stored(ref: str, ids: list[list[int]], opts: RunOptions, base: dict[str, Any] | None = None
           ) -> Iterator[tuple[int, torch.Tensor]]:
    """``(index, attention)`` for each sample of ``ids`` the store holds (a damaged entry is skipped and
    removed, so the forward pass computes that sample); ``base``: :func:`base_key`, when the caller has it."""
    cache = Cache(namespace=NAMESPACE)
    base = base_key(ref, opts) if base is None else base
    for i, x in enumerate(ids):
        key = sentence_key(base, x)
        if not cache.contains(key):
            continue
        try:
            yield i, unpack(cache.load(key))
        except (KeyError, CorruptCacheEntry):
            cache.discard(key)


def fill(ref: str, texts: list[str], opts: RunOptions) -> int:
    """Store the attention of every text of ``texts`` that is not stored yet; how many were computed.

    A finished fill leaves a marker under the texts' digest, so filling the same texts again (a build
    after a change to the library) loads no model."""
    from .attention import iterate_samples
    from .batching import get_model, tokenize_for

    cache, base = Cache(namespace=NAMESPACE), base_key(ref, opts)  # the model's reference, as pages read it
    marker = cache_key({"kind": "sentence_attention_filled", "version": VERSION, "code": _code()}, ref, list(texts),
                       opts)
    if cache.contains(marker):
        return 0
    lm = get_model(ref, opts)
    ids = tokenize_for(lm, texts, opts)
    todo = [x for x in dict.fromkeys(tuple(x) for x in ids) if not cache.contains(sentence_key(base, list(x)))]
    for i, att, _ in iterate_samples(lm, [list(x) for x in todo], opts, hidden_states=False, share=False):
        cache.store(sentence_key(base, list(todo[i])), pack(att))
    if not cache.contains(record_key(base)):
        cache.store(record_key(base), lm.record.to_dict())
    for text, x in zip(texts, ids, strict=True):
        if not cache.contains(text_key(base, text)):
            cache.store(text_key(base, text), {"ids": list(x), "tokens": lm.tokenizer.convert_ids_to_tokens(x)})
    cache.store(marker, len(texts))
    return len(todo)


def payload(ref: str, texts: list[str], opts: RunOptions, per_sample: Callable[..., Any]
            ) -> dict[str, Any] | None:
    """``{record, texts, tokens, results}`` of ``per_sample(attention, None, causal)`` over ``texts`` read from the
    store alone, as ``extraction.run.run_cached`` computes it, without loading the model; ``None`` unless the store
    is read (:func:`active`) and holds the record, the tokens and the attention of every text (the caller then runs
    the model, which reads what the store holds and computes the rest)."""
    from .batching import STATS

    if not active(opts, hidden_states=False):
        return None
    cache, base = Cache(namespace=NAMESPACE), base_key(ref, opts)
    try:
        record = cache.load(record_key(base))
        tokenized = [cache.load(text_key(base, t)) for t in texts]
    except (KeyError, CorruptCacheEntry):
        return None  # not stored (or damaged): the model runs
    atts = dict(stored(ref, [x["ids"] for x in tokenized], opts, base))
    if len(atts) < len(texts):
        return None  # a sentence the store lacks: the model runs, and computes only what is missing
    causal = bool(record["causal"])
    results = []
    for i in range(len(texts)):
        STATS["samples"] += 1
        results.append(per_sample(atts[i], None, causal))
    return {"record": record, "texts": list(texts), "tokens": [x["tokens"] for x in tokenized], "results": results}
