"""What sets the models a page ran apart from the paper's, written from their records and the offline registry.

Every page that reads real models owes its reader the same caveats: weights stored in fewer bits and read back,
tokenizers that put a word (not a start token) at position 0, stand-ins that are not the paper's checkpoints,
task-tuned rather than base weights, and sizes. Written here from what was run, so a page on the ``paper`` profile
does not repeat the offline models' caveats, and a new offline model needs no template prose.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..models.registry import OFFLINE_MODELS, PAPER_MODELS

if TYPE_CHECKING:
    from ..results import ModelResult

#: a parameter count in words: its first number and unit ("494 M (630 M as loaded ...)" -> 494, "M")
_PARAMS = re.compile(r"([\d.]+)\s*([MB])")
_UNIT = {"M": 1e6, "B": 1e9}


def names(refs: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c`` (code-formatted)."""
    quoted = [f"`{r}`" for r in refs]
    if not quoted:
        return ""
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


def _unique(results: Sequence[ModelResult]) -> list[ModelResult]:
    """One result per model, in the order first met."""
    seen: dict[str, ModelResult] = {}
    for r in results:
        seen.setdefault(r.ref, r)
    return list(seen.values())


def first_word_at_position0(results: Sequence[ModelResult]) -> str:
    """Which tokenizers put the first word, not a special token, at position 0 (the sink's usual seat)."""
    no_bos = [r.ref for r in _unique(results) if not r.record["adds_bos"]]
    if not no_bos:
        return "every tokenizer here puts a special token at position 0"
    return "tokenizers that put the first word, not a special token, at position 0: " + names(no_bos)


def quantized(results: Sequence[ModelResult]) -> str:
    """Which models' weights were stored in fewer bits than fp32 and read back, with the storage format."""
    low = [r for r in _unique(results) if not str(r.record["quantization"]).startswith("none")]
    if not low:
        return "no weights stored in fewer bits than fp32"
    return "weights stored in fewer bits than fp32 and read back: " + ", ".join(
        f"`{r.ref}` ({re.split(r', (?:dequantized|converted)', str(r.record['quantization']))[0]})" for r in low)


def stand_ins(results: Sequence[ModelResult]) -> str | None:
    """The offline models as stand-ins: the paper family each stands for (or none). ``None`` when no offline model
    ran."""
    offline = [r for r in _unique(results) if r.ref in OFFLINE_MODELS]
    if not offline:
        return None
    by_family: dict[str, list[str]] = {}
    for r in offline:
        family = str(r.record["family"])
        by_family.setdefault(family if family in PAPER_MODELS else "", []).append(r.ref)
    parts = [f"{names(refs)} for {family}" for family, refs in by_family.items() if family]
    if "" in by_family:
        parts.append(f"{names(by_family[''])} for no paper family")
    return "offline stand-ins, not the paper's checkpoints: " + ", ".join(parts)


def tuned(results: Sequence[ModelResult]) -> str | None:
    """The offline models tuned for a task rather than released as base checkpoints, with the task; ``None`` when
    there are none."""
    found = [r.ref for r in _unique(results) if r.ref in OFFLINE_MODELS and OFFLINE_MODELS[r.ref].tuning != "base"]
    if not found:
        return None
    return "tuned for a task, not base weights: " + ", ".join(f"`{ref}` ({OFFLINE_MODELS[ref].tuning})"
                                                                for ref in found)


def sizes(results: Sequence[ModelResult]) -> str | None:
    """The range of the offline models' parameter counts (from the registry); ``None`` when none ran."""
    counts = []
    for r in _unique(results):
        found = _PARAMS.search(OFFLINE_MODELS[r.ref].params) if r.ref in OFFLINE_MODELS else None
        if found:
            counts.append((float(found.group(1)) * _UNIT[found.group(2)], f"{found.group(1)} {found.group(2)}", r.ref))
    if not counts:
        return None
    (_, low, low_ref), (_, high, high_ref) = min(counts), max(counts)
    if low_ref == high_ref:
        return f"size: {low} parameters (`{low_ref}`)"
    return f"sizes from {low} (`{low_ref}`) to {high} (`{high_ref}`) parameters"


def model_confounds(results: Sequence[ModelResult]) -> list[str]:
    """Each way the models run differ from the paper's, as a phrase naming the models."""
    phrases = [quantized(results), first_word_at_position0(results), stand_ins(results), tuned(results),
               sizes(results)]
    return [p for p in phrases if p]


def model_caveats(results: Sequence[ModelResult], lead: str = "Caveats of the models run") -> str:
    """The caveats :func:`model_confounds` finds, one bullet each under ``lead``, and where the paper's own models
    are run (the ``paper`` profile) when a stand-in ran."""
    if not results:
        return f"**{lead}**: no model ran."
    lines = [f"**{lead}** (written from their records):", ""] + [f"- {p}." for p in model_confounds(results)]
    if any(r.ref in OFFLINE_MODELS for r in results):
        lines += ["", "The `paper` profile reruns this page on the paper's models."]
    return "\n".join(lines)


def stands_for(results: Sequence[ModelResult]) -> str:
    """One bullet per model run: the checkpoint it is and the paper's model it stands for (offline models, from
    the registry), or the family its architecture places it in (any other)."""
    lines = []
    for r in _unique(results):
        if r.ref in OFFLINE_MODELS:
            m = OFFLINE_MODELS[r.ref]
            lines.append(f"- `{r.ref}` ({m.upstream}; {m.architecture}; {m.params} parameters): "
                         f"stands for {m.stands_for}.")
        else:
            lines.append(f"- `{r.ref}`: a {r.record['architecture']} model of the {r.record['family']} family.")
    return "\n".join(lines) if lines else "No model ran."
