"""Counterfactual position encodings at fixed weights: one forward pass per intervention.

The paper (Sec. 3.4) says the position encoding decides the reference frame. At inference the
encoding of a trained model can be changed while its weights stay as they are, and the frame read
again. Each :class:`Intervention` changes one thing, in one of four ways:

- **the position ids** handed to the model (``offset``: ids start at ``k``; ``permute``: a seeded
  shuffle of the ids while the tokens and the mask keep their order; ``pe_shift``/``pe_permute`` are
  the same for learned absolute positions);
- **the rotary code** (``theta``: base times ``m``, i.e. ``inv_freq_i * m^(-i/L)`` over the ``L``
  frequency pairs, exact for ``m = 1``; ``ntk``: NTK-aware scaling by ``s``, the base times
  ``s^(L/(L-1))``; ``linear``: position interpolation by ``s``, every frequency divided by ``s``;
  ``partial``: only the fraction ``p`` of pairs with the highest frequencies keeps rotating, the rest
  get frequency 0, so ``p = 0`` is no position encoding at all);
- **the learned position table** (``pe_mean``: every row replaced by the table's mean; ``pe_zero``:
  zeroed; ``rel_bias_off``: MPNet's relative position bias zeroed; ``no_positions``: both);
- **the tokens and the mask** (``first_token``: the first physical token replaced by a content-free
  token (``"."``) or a content word (``"house"``); ``duplicate``: the first token doubled;
  ``prefix``: ``k`` seeded random tokens put in front; ``causal_mask``: an encoder's attention
  restricted to earlier keys and renormalized, through the one attention hook; off-distribution).

Every edit of the model is undone when the pass ends, also when it raises (:func:`applied`).
``run`` yields per sample the attention, the hidden states, the function check (next-token loss of
the original tokens for a decoder, the mean-pooled last hidden state for an encoder), the value-norm
ratio of the first token per KV head where the hook can read values, and where position id 0 and
the original first token sit. A random-initialized twin (``random:<ref>``) runs without its language-model
head: an untrained network has no function to break, its nulls read attention and hidden states alone,
and the head is most of a pass for a large vocabulary (Gemma 3's 262k rows are about 60 % of its pass; the
twins' loss changed by at most 0.03 nats under any intervention when they still ran it, far from the
1-nat rule of ``analyses.positions``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch

from .. import models
from ..code_digest import code_digest
from ..extraction.batching import STATS, backbone, check_finite, forward, iterate_batches
from ..extraction.hooks import AttentionCall, attention_hook
from ..models.loading import RANDOM_PREFIX
from ..models.registry import ARCHITECTURES

ROTARY, ABSOLUTE, TOKENS, MASK = "rotary code", "absolute positions", "first token", "mask"
#: the groups of interventions that change the position encoding itself (the others change tokens or the mask)
ENCODING_GROUPS = (ROTARY, ABSOLUTE)
CONTENT_FREE, CONTENT_WORD = ".", "house"
#: the published scaling factor of Qwen2.5's long-context RoPE (YaRN, factor 4); Phi-2 publishes no scaling,
#: its modification is the partial rotary (0.4), which the ``partial`` arm covers
SCALING_FACTOR = 4.0


class PositionRangeError(ValueError):
    """An intervention asks for position ids beyond the model's position table."""


@dataclass(frozen=True)
class Intervention:
    """One change of the position encoding, the tokens or the mask (see the module docstring)."""

    kind: str
    value: float = 0.0
    word: str = ""

    @property
    def group(self) -> str:
        if self.kind in ("offset", "permute", "theta", "ntk", "linear", "partial"):
            return ROTARY
        if self.kind in ("pe_shift", "pe_permute", "pe_mean", "pe_zero", "rel_bias_off", "no_positions"):
            return ABSOLUTE
        if self.kind == "causal_mask":
            return MASK
        if self.kind == "none":
            return "none"
        if self.kind in ("first_token", "duplicate", "prefix"):
            return TOKENS
        raise ValueError(f"unknown intervention kind {self.kind!r}")

    @property
    def name(self) -> str:
        """The label pages and verdicts use (``offset 64``, ``theta x1/16``, ``partial 0.4``)."""
        v = self.value
        if self.kind == "none":
            return "unmodified"
        if self.kind == "theta":
            return f"theta x{v:g}" if v >= 1 else f"theta x1/{1 / v:g}"
        if self.kind in ("ntk", "linear"):
            return f"{'NTK-aware' if self.kind == 'ntk' else 'linear PI'} x{v:g}"
        if self.kind == "first_token":
            return f"first token -> '{self.word}'"
        if self.kind in ("offset", "pe_shift", "prefix", "partial"):
            label = {"offset": "offset", "pe_shift": "shift", "prefix": "random prefix", "partial": "partial"}
            return f"{label[self.kind]} {v:g}"
        return {"permute": "ids permuted", "pe_permute": "ids permuted", "pe_mean": "table -> mean",
                "pe_zero": "table zeroed", "rel_bias_off": "relative bias off", "no_positions": "no positions",
                "duplicate": "first token doubled", "causal_mask": "causal mask"}[self.kind]

    def key(self) -> dict[str, Any]:
        return {"intervention": asdict(self), "version": code_digest(__name__)}


UNMODIFIED = Intervention("none")
#: offsets are a check of the machinery (RoPE scores depend on position differences only): a near and a far one
OFFSETS = (1, 4096)
#: the ends of a 256-fold range of rotary bases (the modified-RoPE schemes add the moderate factor 4)
THETAS = (1 / 16, 16)
#: Phi-2's fraction, Pythia's, and no rotation at all
PARTIALS = (0.4, 0.25, 0.0)
SHIFTS = (1, 64)
PREFIXES = (4,)


#: the interventions the random-initialized twin runs: those its null is read for (the scaled-RoPE and
#: no-absolute-positions changes, the permutation) and the most drastic change of the encoding (no rotation)
TWIN_NAMES = ("ids permuted", "NTK-aware x4", "linear PI x4", "partial 0", "table -> mean", "table zeroed")


def interventions_for(record: dict[str, Any], supports_hook: bool, twin: bool = False) -> list[Intervention]:
    """The grid for one model: the unmodified pass first, then its encoding's arm, then tokens and mask (for a
    random-initialized twin, ``twin``, the unmodified pass and :data:`TWIN_NAMES` only)."""
    if twin:
        return [iv for iv in interventions_for(record, supports_hook) if iv.kind == "none" or iv.name in TWIN_NAMES]
    out = [UNMODIFIED]
    if str(record.get("position_encoding", "")).startswith("RoPE"):
        out += [Intervention("offset", k) for k in OFFSETS] + [Intervention("permute")]
        out += [Intervention("theta", m) for m in THETAS]
        out += [Intervention("ntk", SCALING_FACTOR), Intervention("linear", SCALING_FACTOR)]
        out += [Intervention("partial", p) for p in PARTIALS]
    else:
        out += [Intervention("pe_shift", k) for k in SHIFTS] + [Intervention("pe_permute")]
        out += [Intervention("pe_mean"), Intervention("pe_zero")]
        if record.get("architecture") == "mpnet":
            out += [Intervention("rel_bias_off"), Intervention("no_positions")]
    out += [Intervention("first_token", word=CONTENT_FREE), Intervention("first_token", word=CONTENT_WORD),
            Intervention("duplicate")]
    out += [Intervention("prefix", k) for k in PREFIXES]
    if not record.get("causal") and supports_hook:
        out.append(Intervention("causal_mask"))
    return out


# ----------------------------------------------------------------------------- tokens


def _token_id(tokenizer: Any, word: str) -> int:
    """The id of ``word`` as it reads inside a sentence (the last piece of ``" word"``)."""
    ids = tokenizer(f" {word}", add_special_tokens=False)["input_ids"]
    if not ids:
        raise ValueError(f"the tokenizer gives no token for {word!r}")
    return int(ids[-1])


def _random_ids(tokenizer: Any, k: int, rng: np.random.Generator) -> list[int]:
    """``k`` ids drawn from the vocabulary, special tokens left out."""
    special = set(getattr(tokenizer, "all_special_ids", []) or [])
    size = len(tokenizer)
    out: list[int] = []
    while len(out) < k:
        t = int(rng.integers(0, size))
        if t not in special:
            out.append(t)
    return out


def edit_tokens(iv: Intervention, ids: list[list[int]], tokenizer: Any, seed: int
                ) -> tuple[list[list[int]], list[int]]:
    """The token ids the pass runs on, and per sample the physical index of the original first token."""
    if iv.kind == "first_token":
        t = _token_id(tokenizer, iv.word)
        return [[t, *x[1:]] for x in ids], [0] * len(ids)
    if iv.kind == "duplicate":
        return [[x[0], *x] for x in ids], [1] * len(ids)
    if iv.kind == "prefix":
        k = int(iv.value)
        out = []
        for i, x in enumerate(ids):
            rng = np.random.default_rng([seed, 1_000_003, i])
            out.append([*_random_ids(tokenizer, k, rng), *x])
        return out, [k] * len(ids)
    return [list(x) for x in ids], [0] * len(ids)


# ----------------------------------------------------------------------------- position ids


def default_position_ids(lm: models.LoadedModel, input_ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``[batch, width]`` the ids the model uses when none are given: ``0..n-1``, or for MPNet/RoBERTa-style
    embeddings ``padding_idx + 1 + (0..n-1)`` on real tokens and ``padding_idx`` on padding."""
    width = input_ids.shape[1]
    if lm.record.architecture in ("mpnet", "roberta", "xlm-roberta"):
        config: Any = lm.model.config
        pad = int(config.pad_token_id)
        return (torch.cumsum(mask, 1) * mask + pad).long()
    return torch.arange(width, device=input_ids.device).unsqueeze(0).expand(input_ids.shape[0], width).clone()


def permutation(n: int, rng: np.random.Generator) -> np.ndarray:
    """A seeded shuffle of ``0..n-1`` that moves position 0 (for ``n >= 2``)."""
    if n < 2:
        return np.arange(n)
    while True:
        p = rng.permutation(n)
        if p[0] != 0:
            return p


def position_ids(iv: Intervention, lm: models.LoadedModel, input_ids: torch.Tensor, mask: torch.Tensor,
                 rows: list[int], seed: int) -> tuple[torch.Tensor | None, list[int]]:
    """``(position ids or None, per row the physical index whose id is the model's first id (-1: none))``.

    ``rows`` are the samples' indices in the text set (the permutation of a sample does not depend on
    its batch)."""
    lengths = mask.sum(1).tolist()
    if iv.kind not in ("offset", "pe_shift", "permute", "pe_permute"):
        return None, [0] * len(rows)
    base = default_position_ids(lm, input_ids, mask)
    first_id = base[:, :1].clone()  # [batch, 1] the id of each row's first token
    ids = base.clone()
    if iv.kind in ("offset", "pe_shift"):
        ids = ids + int(iv.value) * mask
        limit = getattr(lm.model.config, "max_position_embeddings", None)
        if iv.kind == "pe_shift" and isinstance(limit, int) and int(ids.max()) >= limit:
            raise PositionRangeError(f"shift {iv.value:g} puts position ids beyond the {limit} rows of the "
                                     "position table")
        return ids, [-1] * len(rows)
    origin = []
    for r, (i, n) in enumerate(zip(rows, lengths, strict=True)):
        p = permutation(int(n), np.random.default_rng([seed, 7_919, i]))
        ids[r, :n] = base[r, :n][torch.as_tensor(p, device=base.device)]
        origin.append(int(torch.nonzero(ids[r, :n] == first_id[r, 0])[0, 0]))
    return ids, origin


# ----------------------------------------------------------------------------- model edits


def rotary_buffers(model: torch.nn.Module) -> list[tuple[torch.nn.Module, str]]:
    """``(module, buffer name)`` of every inverse-frequency table a rotary embedding reads
    (``inv_freq``, Gemma3's ``<layer type>_inv_freq``), the ``original_*`` copies left out."""
    found = []
    for mod in model.modules():
        for name, _ in mod.named_buffers(recurse=False):
            if name.endswith("inv_freq") and "original" not in name:
                found.append((mod, name))
    return found


def scaled_frequencies(iv: Intervention, inv_freq: torch.Tensor) -> torch.Tensor:
    """``inv_freq`` ``[L]`` under a rotary intervention (module docstring); other kinds leave it as it is."""
    L = inv_freq.shape[0]
    i = torch.arange(L, dtype=torch.float64, device=inv_freq.device)
    f = inv_freq.double()
    if iv.kind == "theta":
        out = f * torch.pow(float(iv.value), -i / L)
    elif iv.kind == "ntk":
        out = f * torch.pow(float(iv.value), -(i / L) * L / max(L - 1, 1))
    elif iv.kind == "linear":
        out = f / float(iv.value)
    elif iv.kind == "partial":
        keep = round(float(iv.value) * L)
        out = torch.where(i < keep, f, torch.zeros_like(f))
    else:
        return inv_freq
    return out.to(inv_freq.dtype)


def _position_table(model: torch.nn.Module) -> torch.nn.Embedding:
    for name, mod in model.named_modules():
        if name.endswith("embeddings.position_embeddings") and isinstance(mod, torch.nn.Embedding):
            return mod
    raise models.UnsupportedArchitectureError(
        "this model has no learned position table (embeddings.position_embeddings)")


def _relative_bias(model: torch.nn.Module) -> torch.nn.Embedding:
    for name, mod in model.named_modules():
        if name.endswith("relative_attention_bias") and isinstance(mod, torch.nn.Embedding):
            return mod
    raise models.UnsupportedArchitectureError("this model has no relative position bias (relative_attention_bias)")


@contextmanager
def _replaced(tensor: torch.Tensor, new: torch.Tensor) -> Iterator[None]:
    """``tensor``'s values replaced by ``new`` in the block, the originals back afterwards."""
    saved = tensor.detach().clone()
    with torch.no_grad():
        tensor.copy_(new)
    try:
        yield
    finally:
        with torch.no_grad():
            tensor.copy_(saved)


@contextmanager
def applied(iv: Intervention, model: torch.nn.Module) -> Iterator[None]:
    """The model-side part of ``iv`` (rotary frequencies, position table, relative bias) for the block."""
    with ExitStack() as stack:
        if iv.kind in ("theta", "ntk", "linear", "partial"):
            buffers = rotary_buffers(model)
            if not buffers:
                raise models.UnsupportedArchitectureError("no rotary inverse-frequency buffer (inv_freq) in this model")
            for mod, name in buffers:
                buf = getattr(mod, name)
                stack.enter_context(_replaced(buf, scaled_frequencies(iv, buf)))
        if iv.kind in ("pe_mean", "pe_zero", "no_positions"):
            w = _position_table(model).weight
            new = torch.zeros_like(w) if iv.kind != "pe_mean" else w.mean(0, keepdim=True).expand_as(w)
            stack.enter_context(_replaced(w, new))
        if iv.kind in ("rel_bias_off", "no_positions"):
            w = _relative_bias(model).weight
            stack.enter_context(_replaced(w, torch.zeros_like(w)))
        yield


def causal_edit(weights: torch.Tensor, _module: torch.nn.Module) -> torch.Tensor:
    """``weights [batch, head, query, key]`` restricted to keys at or before the query, rows renormalized:
    the same as a causal mask before the softmax."""
    n = weights.shape[-1]
    kept = weights * torch.tril(torch.ones(n, n, dtype=weights.dtype, device=weights.device))
    return kept / kept.sum(-1, keepdim=True).clamp_min(torch.finfo(weights.dtype).tiny)


# ----------------------------------------------------------------------------- the pass


def _row_loss(logits: torch.Tensor, ids: list[int], n_original: int) -> float:
    """Mean next-token loss on the original sentence's tokens after its first (the last ``n_original - 1``
    targets of the row), so that every variant of a sentence is scored on the same targets."""
    n = len(ids)
    if n_original < 2:
        return math.nan
    start = n - n_original
    pred = logits[start : n - 1].float()  # [n_original - 1, vocab]
    target = torch.tensor(ids[start + 1 : n], device=pred.device)
    return float(torch.nn.functional.cross_entropy(pred, target))


@torch.no_grad()
def run(iv: Intervention, lm: models.LoadedModel, ids: list[list[int]], batch_size: int, seed: int,
        progress: bool = True) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(index, sample)`` per sentence of ``ids`` under ``iv``; ``sample`` holds ``attention``
    ``[layer, head, n, n]``, ``hidden`` ``[layer + 1, n, d]``, ``loss`` (decoders) or ``pooled`` ``[d]``
    (encoders), ``value_ratio`` ``[layer, kv_head]`` (or None), ``origin`` and ``first`` (physical indices
    of position id 0 and of the original first token) and ``causal`` (whether the pass was causal)."""
    if iv.kind == "causal_mask" and lm.record.causal:
        raise ValueError("a causal mask is already what a decoder uses; the intervention is for encoders")
    new_ids, first = edit_tokens(iv, ids, lm.tokenizer, seed)
    n_original = [len(x) for x in ids]
    readable = lm.record.architecture in ARCHITECTURES  # the hook reads values only where it wraps attention
    causal = bool(lm.record.causal) or iv.kind == "causal_mask"
    net = backbone(lm.model) if lm.record.ref.startswith(RANDOM_PREFIX) else lm.model  # a twin: no head
    for batch, input_ids, mask in iterate_batches(lm, new_ids, batch_size, progress, f"{lm.record.ref}: {iv.name}"):
        pos, origin = position_ids(iv, lm, input_ids, mask, batch, seed)
        ratios: dict[int, torch.Tensor] = {}

        def read(call: AttentionCall, ratios: dict[int, torch.Tensor] = ratios) -> None:
            ratios[call.layer] = call.value.float().norm(dim=-1)  # [batch, kv_head, token], cut to real tokens below

        kwargs: dict[str, Any] = {"output_attentions": True, "output_hidden_states": True}
        if pos is not None:
            kwargs["position_ids"] = pos.to(lm.device)
        with ExitStack() as stack:
            stack.enter_context(applied(iv, lm.model))
            if readable:
                stack.enter_context(attention_hook(lm.model, read=read,
                                                   edit=causal_edit if iv.kind == "causal_mask" else None))
            out = forward(lm, net, input_ids, mask, **kwargs)
        atts = out.attentions  # per layer [batch, head, query, key]
        if not atts or any(a is None for a in atts):
            raise models.AttentionUnavailableError(f"{lm.record.ref} returned no attention weights")
        att = torch.stack([a.float() for a in atts], 1)  # [batch, layer, head, query, key]
        check_finite(lm, att, [len(new_ids[i]) for i in batch])
        hid = torch.stack([h.float() for h in out.hidden_states], 1)  # [batch, layer + 1, token, d]
        logits = getattr(out, "logits", None)
        for r, i in enumerate(batch):
            n = len(new_ids[i])
            STATS["samples"] += 1
            sample: dict[str, Any] = {
                "attention": att[r, :, :, :n, :n].cpu(),
                "hidden": hid[r, :, :n].cpu(),
                "origin": int(origin[r]),
                "first": int(first[i]),
                "causal": causal,
                "loss": _row_loss(logits[r], new_ids[i], n_original[i]) if logits is not None else math.nan,
                "pooled": None if lm.record.causal else hid[r, -1, :n].mean(0).cpu(),
                "value_ratio": None,
            }
            if ratios and n >= 2:
                v = torch.stack([ratios[k][r, :, :n] for k in sorted(ratios)])  # [layer, kv_head, token]
                sample["value_ratio"] = (v[..., 0] / v[..., 1:].median(-1).values.clamp_min(1e-12)).cpu()
            yield i, sample
