"""Extraction: texts -> tokens -> batched forward passes -> per-sample tensors, through the cache.

``batching`` (tokenize, the one length-sorted batching loop), ``hooks`` (the one attention patch),
``attention`` (attention weights and per-sample summaries), ``capture`` (queries, keys, values and
outputs per layer), ``run`` (the cached pass they share).
"""

from .attention import Extraction, extract_attention, iterate_samples, summarize
from .batching import STATS, NonFiniteAttentionError, TextError, get_model, tokenize
from .capture import SampleCapture, iterate_captures, summarize_captures
from .hooks import AttentionCall, attention_hook, attention_layers

__all__ = [
    "STATS",
    "AttentionCall",
    "Extraction",
    "NonFiniteAttentionError",
    "SampleCapture",
    "TextError",
    "attention_hook",
    "attention_layers",
    "extract_attention",
    "get_model",
    "iterate_captures",
    "iterate_samples",
    "summarize",
    "summarize_captures",
    "tokenize",
]
