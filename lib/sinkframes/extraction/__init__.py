"""Extraction: texts -> tokens -> batched forward passes -> per-sample tensors, through the cache.

``batching`` (tokenize, the one length-sorted batching loop), ``hooks`` (the one attention patch),
``attention`` (attention weights and streamed summaries), ``streaming`` (per-layer reductions
during the forward, memory that of a plain forward pass, whatever the depth), ``capture`` (queries, keys,
values and outputs per layer), ``run`` (the cached pass they share).
"""

from .attention import Extraction, extract_attention, iterate_samples, summarize
from .batching import STATS, NonFiniteAttentionError, TextError, get_model, tokenize
from .capture import SampleCapture, iterate_captures, summarize_captures
from .hooks import AttentionCall, attention_hook, attention_layers
from .streaming import LayerReducer, SampleLayerReducer, iterate_layer_outputs, summarize_layers

__all__ = [
    "STATS",
    "AttentionCall",
    "Extraction",
    "LayerReducer",
    "NonFiniteAttentionError",
    "SampleCapture",
    "SampleLayerReducer",
    "TextError",
    "attention_hook",
    "attention_layers",
    "extract_attention",
    "get_model",
    "iterate_captures",
    "iterate_layer_outputs",
    "iterate_samples",
    "summarize",
    "summarize_captures",
    "summarize_layers",
    "tokenize",
]
