"""Provenance of a page: which models, sentences, profile and software produced its numbers."""

from __future__ import annotations

import platform
from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch
import transformers

from .._version import __version__

if TYPE_CHECKING:
    from ..analyses.base import ModelResult


def provenance(profile: str, models: list[str], n_sentences: int, dataset: str, seed: int) -> str:
    """Markdown naming the profile, models, sentence count and versions that produced a page."""
    return (
        f"**Produced by** sinkframes {__version__} with the `{profile}` profile: models "
        f"{', '.join(f'`{m}`' for m in models)}; {n_sentences} sentences from the `{dataset}` set "
        f"(seed {seed}); torch {torch.__version__}, transformers {transformers.__version__}, "
        f"Python {platform.python_version()}."
    )


def model_notes(results: Sequence[ModelResult]) -> str:
    """One line per model of any analysis' results: what was loaded, with its quantization and BOS convention."""
    lines = []
    for res in results:
        r = res.record
        bos = (f"adds a start token (`{r['position0_token']}` at position 0)" if r["adds_bos"]
               else "adds no start token (position 0 is the first word)")
        lines.append(
            f"- `{r['ref']}`: {r['architecture']} ({r['family']} family), {r['n_layers']} layers, "
            f"{r['n_heads']} query heads / {r['n_kv_heads']} KV head{'s' if r['n_kv_heads'] != 1 else ''}, "
            f"{r['position_encoding']}; weights: {r['quantization']}; tokenizer {bos}."
        )
    return "\n".join(lines)
