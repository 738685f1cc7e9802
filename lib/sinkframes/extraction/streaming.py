"""Bounded-memory attention extraction: reduce each layer's weights as the forward computes them.

``iterate_samples`` asks the model for every layer's attention at once (``output_attentions=True``),
so a batch holds ``layers x batch x heads x n^2`` floats. Here the forward runs with
``output_attentions=False`` and ``hooks.attention_hook`` reads each layer's post-softmax weights
inside the eager attention call; a :class:`LayerReducer` turns them into small per-sample outputs
right there, and the weights are dropped when the layer returns. The attention itself runs on a few
batch rows at a time (at most ``STREAM_CALL_FLOATS`` weights per call), so one layer's scores and
weights never exist for the whole batch at once: the peak stays below that of a plain eager forward
pass (``bench/bench_memory.py``); the reduction adds at most one sample's copy of one layer
(``SampleLayerReducer``).

``summarize_layers`` is the cached entry point, as ``summarize`` is for whole-sample reducers: a
second call with the same inputs loads the result and runs no forward pass.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from functools import partial
from typing import Any, Protocol, runtime_checkable

import torch

from .. import models
from ..types import RunOptions
from .attention import Extraction, finite_layer
from .batching import STATS, backbone, forward, iterate_batches, raise_non_finite
from .hooks import AttentionCall, attention_hook
from .run import reducer_key, run_cached

__all__ = ["LayerReducer", "SampleLayerReducer", "iterate_layer_outputs", "summarize_layers"]

#: the most attention weights (floats) one eager attention call may hold: 2^22 floats, 16 MiB in float32;
#: a longer batch is computed a few rows at a time (the results are the same)
STREAM_CALL_FLOATS = 2**22


@runtime_checkable
class LayerReducer(Protocol):
    """A reduction applied layer by layer while the forward runs, then assembled per sample.

    - ``key()``: a dict naming the reduction and every parameter it uses (it enters the cache key);
    - ``layer(index, weights, lengths, causal)``: ``weights`` ``[batch, head, query, key]`` float32, on
      the model's device, right-padded (sample ``r`` is real up to ``lengths[r]``); returns one output
      per sample, in batch order. Outputs must not be views of ``weights`` (a view keeps the whole
      layer alive);
    - ``assemble(layers, causal)``: one sample's outputs in layer order -> its result.
    """

    def key(self) -> dict[str, Any]: ...

    def layer(self, index: int, weights: torch.Tensor, lengths: list[int], causal: bool) -> list[Any]: ...

    def assemble(self, layers: list[Any], causal: bool) -> Any: ...


class SampleLayerReducer(ABC):
    """A :class:`LayerReducer` written per sample and per layer: ``sample(index, weights [head, n, n],
    causal)`` receives exactly what ``iterate_samples`` yields for that layer (trimmed to the sample's
    ``n`` real tokens, float32, contiguous, on the CPU), so it gives the same numbers as applying it to
    ``attention[index]`` of every sample."""

    @abstractmethod
    def key(self) -> dict[str, Any]:
        """The reduction's name and parameters (enters the cache key)."""

    @abstractmethod
    def sample(self, index: int, weights: torch.Tensor, causal: bool) -> Any:
        """One sample's output for layer ``index`` from its weights ``[head, query, key]``."""

    @abstractmethod
    def assemble(self, layers: list[Any], causal: bool) -> Any:
        """One sample's result from its per-layer outputs (in layer order)."""

    def layer(self, index: int, weights: torch.Tensor, lengths: list[int], causal: bool) -> list[Any]:
        """Trim and copy one sample at a time, so at most one sample's copy of the layer is alive."""
        out = []
        for r, n in enumerate(lengths):
            w = weights[r, :, :n, :n].to("cpu", memory_format=torch.contiguous_format, copy=True)  # [head, query, key]
            out.append(self.sample(index, w, causal))
            del w
        return out


def _reduce_batch(
    lm: models.LoadedModel,
    net: torch.nn.Module,
    input_ids: torch.Tensor,
    mask: torch.Tensor,
    lengths: list[int],
    reducer: LayerReducer,
) -> list[list[Any]]:
    """One forward pass of a padded batch; ``[layer][sample]`` reducer outputs, checked complete and finite.

    The attention runs on row slices of the batch (at most ``STREAM_CALL_FLOATS`` weights each), and each
    slice is reduced and dropped before the next is computed."""
    causal = lm.record.causal
    per_layer: dict[int, list[Any]] = {}  # layer -> one output per sample of the batch, in row order
    seen: dict[int, int] = {}  # layer -> rows its calls have covered so far
    bad: set[int] = set()

    def read(call: AttentionCall) -> None:
        if seen.get(call.layer, 0) != call.first_row:
            raise models.UnsupportedArchitectureError(
                f"{lm.record.ref}: attention layer {call.layer} was called twice in one forward pass"
            )
        weights = call.weights.float()  # [rows, head, query, key]
        part = lengths[call.first_row : call.first_row + weights.shape[0]]
        seen[call.layer] = call.first_row + len(part)
        if not finite_layer(weights, part):
            bad.add(call.layer)  # not reduced; the forward goes on so that every bad layer is named
        if call.layer in bad:
            return
        outs = list(reducer.layer(call.layer, weights, part, causal))
        if len(outs) != len(part):
            raise ValueError(f"{type(reducer).__name__}.layer returned {len(outs)} outputs for a batch of {len(part)}")
        per_layer.setdefault(call.layer, []).extend(outs)

    with attention_hook(lm.model, read=read, max_weights=STREAM_CALL_FLOATS) as layers:
        forward(lm, net, input_ids, mask, output_attentions=False)
    raise_non_finite(lm, bad)
    missing = [k for k in range(len(layers)) if seen.get(k, 0) != len(lengths)]
    if missing:
        raise models.AttentionUnavailableError(
            f"{lm.record.ref}: the eager attention function was not called for layers {missing}; "
            "load it with attn_implementation='eager' (sinkframes.models.load does)"
        )
    return [per_layer[k] for k in range(len(layers))]


@torch.no_grad()
def iterate_layer_outputs(
    lm: models.LoadedModel, ids: list[list[int]], reducer: LayerReducer, opts: RunOptions, desc: str = "stream"
) -> Iterator[tuple[int, list[Any]]]:
    """Yield ``(index, [reducer output per layer])`` per sample; no layer's weights outlive its call.

    Non-finite weights of a real token are never handed to the reducer: the forward finishes (so every
    bad layer is named) and ``NonFiniteAttentionError`` is raised before the batch yields anything.
    """
    net = backbone(lm.model)
    for batch, input_ids, mask in iterate_batches(lm, ids, opts.batch_size, opts.progress, desc):
        outs = _reduce_batch(lm, net, input_ids, mask, [len(ids[i]) for i in batch], reducer)
        for r, i in enumerate(batch):
            STATS["samples"] += 1
            yield i, [layer[r] for layer in outs]


def _iterate(
    reducer: LayerReducer,
    lm: models.LoadedModel,
    ids: list[list[int]],
    opts: RunOptions,
    hidden_states: bool,
    desc: str,
) -> Iterator[tuple[int, list[Any]]]:
    """``run_cached``'s iterator signature over :func:`iterate_layer_outputs`."""
    if hidden_states:
        raise ValueError("streamed extraction keeps no hidden states")
    return iterate_layer_outputs(lm, ids, reducer, opts, desc)


def summarize_layers(
    ref: str, texts: list[str], reducer: LayerReducer, opts: RunOptions | None = None, **overrides: Any
) -> Extraction:
    """Apply ``reducer`` layer by layer during the forward passes; keep ``reducer.assemble`` per sample.

    Memory stays that of a plain forward pass (no attention output), whatever the depth; results are
    cached on disk under ``reducer.key()`` (a reducer without one is refused).
    """
    product = {"kind": "layer_summary", **reducer_key(reducer)}
    for name in ("layer", "assemble"):
        if not callable(getattr(reducer, name, None)):
            raise TypeError(
                f"{type(reducer).__name__} has no {name}() method; a LayerReducer needs key(), layer() and assemble()"
            )
    o = RunOptions.build(opts, **overrides)
    payload, hit = run_cached(
        ref,
        texts,
        product,
        lambda layers, causal: reducer.assemble(layers, causal),
        o,
        partial(_iterate, reducer),
        hidden_states=False,
        namespace="extractions",
    )
    return Extraction(
        record=payload["record"],
        texts=payload["texts"],
        tokens=payload["tokens"],
        summaries=payload["results"],
        from_cache=hit,
    )
