"""One cached pass of a model over a text set, reduced sample by sample.

``run_cached`` is the engine under ``extract_attention``, ``summarize`` and
``summarize_captures``: it builds the cache key (``cache.cache_key``), and on a miss loads the
model, tokenizes, iterates the samples the given iterator yields and keeps only what
``per_sample`` returns for each. A hit loads neither the model nor runs a forward pass.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from .. import models
from ..cache import Cache, cache_key
from ..types import RunOptions
from .batching import check_texts, get_model, tokenize_for

#: ``iterate(lm, ids, opts, hidden_states, desc)`` yields ``(index, *sample)``
Iterate = Callable[[models.LoadedModel, list[list[int]], RunOptions, bool, str], Iterator[tuple[Any, ...]]]


def reducer_key(reducer: Any) -> dict[str, Any]:
    """What identifies a reduction in a cache key: ``reducer.key()``; a reducer without one is refused,
    because two different functions with one name would share cache entries."""
    if not hasattr(reducer, "key"):
        raise TypeError(
            f"reducer {getattr(reducer, '__qualname__', reducer)!r} has no key() method; give it one that returns a "
            "dict naming the reduction and every parameter it uses (it enters the cache key)"
        )
    key = reducer.key()
    if not isinstance(key, dict):
        raise TypeError(f"{type(reducer).__name__}.key() must return a dict, got {type(key).__name__}")
    return key


def run_cached(
    ref: str,
    texts: list[str],
    product: dict[str, Any],
    per_sample: Callable[..., Any],
    opts: RunOptions,
    iterate: Iterate,
    *,
    hidden_states: bool,
    namespace: str,
    stored: Callable[[], dict[str, Any] | None] | None = None,
) -> tuple[dict[str, Any], bool]:
    """``({record, texts, tokens, results}, cache hit)`` for ``ref`` on ``texts``.

    ``per_sample(*sample, causal)`` reduces each sample as it comes; results follow the text order. ``stored``: on a
    miss, the same payload from stored inputs without loading the model (``extraction.shared.payload``), or
    ``None`` when they are not all stored.
    """
    check_texts(texts)  # before the key: its digest reads every text
    texts = list(texts)
    key = cache_key(product, ref, texts, opts, hidden_states=hidden_states)

    def compute() -> dict[str, Any]:
        if stored is not None and (found := stored()) is not None:
            return found
        lm = get_model(ref, opts)
        ids = tokenize_for(lm, texts, opts)
        results: list[Any] = [None] * len(texts)
        for i, *sample in iterate(lm, ids, opts, hidden_states, f"{ref}: forward"):
            results[i] = per_sample(*sample, lm.record.causal)
        tokens = [lm.tokenizer.convert_ids_to_tokens(x) for x in ids]
        return {"record": lm.record.to_dict(), "texts": texts, "tokens": tokens, "results": results}

    return Cache(namespace=namespace).get_or_compute(key, compute, opts.use_cache)
