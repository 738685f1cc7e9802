"""Tokenization and the one batching loop every forward pass of the library goes through.

Texts are tokenized with the tokenizer's default special tokens (``bos_policy="default"``, as in
the paper) or with a BOS token forced at position 0 (``bos_policy="force"``; tokenizers without a
BOS token get their EOS token, the document separator, instead). Batches are sorted by length and
right-padded; with right padding a real token never attends to padding (causal) or is masked from
it (bidirectional), so trimming each sample to its ``n`` real tokens gives exactly the unpadded
result. The official Fisher notebook's padding (every sentence padded to the longest of the set,
the padding inside its loss) is an option of the same loop (``width``, ``pad``).
"""

from __future__ import annotations

import sys
import unicodedata
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from typing import Any

import torch
from tqdm import tqdm

from .. import models
from ..types import BOS_POLICIES, RunOptions

#: counters that tests and the CLI read to prove a cache hit ran no forward pass
STATS: dict[str, int] = {"forward_passes": 0, "samples": 0, "model_loads": 0}

#: loaded models by load options, least recently used first (see :func:`get_model`)
_MODELS: OrderedDict[tuple[Any, ...], models.LoadedModel] = OrderedDict()
#: the models kept in memory on the CPU may hold this many bytes of parameters together (the most recent
#: is always kept): a page that runs several analyses over the offline models (about 1.7 GB in fp32)
#: loads each once, while models of several GB are still let go as soon as the next one loads
KEEP_MODEL_BYTES = 2 * 2**30


class TextError(ValueError):
    """An input text that cannot be analysed (empty, or longer than ``max_length`` tokens)."""


class NonFiniteAttentionError(RuntimeError):
    """A forward pass produced NaN or infinite attention weights (typically float16 overflow)."""


def check_finite(lm: models.LoadedModel, att: torch.Tensor, lengths: list[int]) -> None:
    """Raise ``NonFiniteAttentionError`` naming the layers where a sample's real tokens got
    non-finite attention (``att`` ``[batch, layer, head, query, key]``, sample ``r`` real up to
    ``lengths[r]``). Nothing is cached then: a NaN must never become a number or a verdict."""
    bad: set[int] = set()
    for r, n in enumerate(lengths):
        finite = torch.isfinite(att[r, :, :, :n, :n]).flatten(1).all(-1)  # [layer]
        bad.update(int(i) for i in torch.nonzero(~finite).flatten())
    raise_non_finite(lm, bad)


def raise_non_finite(lm: models.LoadedModel, bad_layers: Iterable[int]) -> None:
    """Raise ``NonFiniteAttentionError`` naming ``bad_layers`` (nothing if there are none)."""
    bad = sorted(set(bad_layers))
    if bad:
        raise NonFiniteAttentionError(
            f"{lm.record.ref} in {lm.record.dtype} produced NaN or infinite attention weights in layers {bad}; "
            + ("rerun it with dtype='float32'" if lm.record.dtype != "float32"
               else "its weights or inputs hold non-finite values: check the checkpoint")
            + " (nothing was cached)"
        )


def _parameter_bytes(lm: models.LoadedModel) -> int:
    return sum(p.numel() * p.element_size() for p in lm.model.parameters())


def get_model(ref: str, opts: RunOptions | None = None, *, logits: bool = False, **overrides: Any
              ) -> models.LoadedModel:
    """Load ``ref`` as ``opts`` say, or return it from memory. ``logits``: the caller runs the language-model head,
    whose output the memory check then counts (the attention pages run the backbone alone).

    Recently used models stay loaded while those on the CPU hold at most ``KEEP_MODEL_BYTES`` of parameters
    together (the most recent always stays), so a page that runs several analyses over a few small models
    loads each once. Models on an accelerator are let go before another one loads: its memory is scarce.
    """
    o = RunOptions.build(opts, **overrides)
    key = (ref, o.dtype, str(o.device), o.revision, o.quantization)
    if key in _MODELS:
        _MODELS.move_to_end(key)
        return _MODELS[key]
    for k in [k for k, lm in _MODELS.items() if lm.device.type != "cpu"]:
        del _MODELS[k]
    from ..models.memory import check

    # the weights' size and one batch's attention, printed before the load; refused when the device cannot hold them
    check(ref, dtype=o.dtype, device=models.resolve_device(o.device), batch_size=o.batch_size,
          max_length=o.max_length, revision=o.revision, quantization=o.quantization, logits=logits)
    _MODELS[key] = models.load(ref, dtype=o.dtype, device=o.device, revision=o.revision, quantization=o.quantization)
    STATS["model_loads"] += 1
    sizes = {k: _parameter_bytes(lm) if lm.device.type == "cpu" else KEEP_MODEL_BYTES + 1 for k, lm in _MODELS.items()}
    while len(_MODELS) > 1 and sum(sizes[k] for k in _MODELS) > KEEP_MODEL_BYTES:
        _MODELS.popitem(last=False)
    return _MODELS[key]


def visible(text: str) -> bool:
    """Whether ``text`` holds a character that is neither white space, a control character (Unicode Cc) nor an
    invisible format character (Cf: zero-width spaces and joiners, direction marks)."""
    return any(not ch.isspace() and unicodedata.category(ch) not in ("Cc", "Cf") for ch in text)


def check_texts(texts: Any) -> None:
    """Raise ``TextError`` unless ``texts`` is a non-empty sequence of texts with visible characters, naming each bad
    one: a lone string would otherwise be read character by character, and an invisible text gives a frame label."""
    if isinstance(texts, (str, bytes)):
        raise TextError("texts must be a list of texts, got a single string: wrap it in a list ([text])")
    if not texts:
        raise TextError("no texts given")
    wrong = [f"{i} ({type(t).__name__})" for i, t in enumerate(texts) if not isinstance(t, str)]
    if wrong:
        raise TextError(f"texts must be strings; not at positions {', '.join(wrong[:10])}")
    empty = [i for i, t in enumerate(texts) if not visible(t)]
    if empty:
        raise TextError(f"text(s) with no visible characters (empty, white space, control or zero-width characters "
                        f"only) at positions {empty[:10]}; drop them before extraction")


def tokenize(
    tokenizer: Any, texts: list[str], max_length: int, bos_policy: str = "default", truncation: bool = False
) -> list[list[int]]:
    """Token ids per text; raises ``TextError`` naming every bad text and what to do."""
    if bos_policy not in BOS_POLICIES:
        raise ValueError(f"bos_policy must be one of {BOS_POLICIES}, got {bos_policy!r}")
    check_texts(texts)
    if truncation:  # the tokenizer's own truncation keeps its end token ([SEP], </s>), as the official code's does
        ids = [tokenizer(t, truncation=True, max_length=max_length)["input_ids"] for t in texts]
    else:
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
        ids = [x[:max_length] for x in ids]  # only a forced BOS can still overflow by one
    return ids


def tokenize_for(lm: models.LoadedModel, texts: list[str], opts: RunOptions) -> list[list[int]]:
    """:func:`tokenize` with the model's tokenizer and the run options; a ``max_length`` beyond the
    positions the model has (``max_position_embeddings``) is refused before any text is cut to it."""
    positions = getattr(getattr(lm.model, "config", None), "max_position_embeddings", None)
    if isinstance(positions, int) and opts.max_length > positions:
        raise TextError(
            f"max_length={opts.max_length} exceeds the {positions} positions {lm.record.ref} has; "
            f"use max_length <= {positions} (with truncation=True for longer texts)"
        )
    return tokenize(lm.tokenizer, texts, opts.max_length, opts.bos_policy, opts.truncation)


def length_sorted_batches(lengths: list[int], batch_size: int) -> list[list[int]]:
    """Sample indices grouped into batches of similar length (shortest first)."""
    if batch_size < 1:
        raise ValueError("batch_size must be >= 1")
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    return [order[k : k + batch_size] for k in range(0, len(order), batch_size)]


def pad_id(tokenizer: Any) -> int:
    """The id used for right padding (never attended to, so its value does not matter)."""
    return int(tokenizer.pad_token_id) if tokenizer.pad_token_id is not None else 0


def pad_batch(ids: list[list[int]], pad: int, width: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded ``input_ids [batch, width]`` and ``attention_mask [batch, width]`` (``width``: the longest
    of ``ids`` unless given)."""
    longest = max(len(x) for x in ids)
    if width is None:
        width = longest
    elif width < longest:
        raise ValueError(f"width={width} is shorter than the longest sample ({longest} tokens)")
    # built on the host from token lists; forward() moves them to the model's device once
    input_ids = torch.full((len(ids), width), pad, dtype=torch.long, device="cpu")
    mask = torch.zeros((len(ids), width), dtype=torch.long, device="cpu")
    for r, x in enumerate(ids):
        input_ids[r, : len(x)] = torch.tensor(x, device="cpu")
        mask[r, : len(x)] = 1
    return input_ids, mask


def backbone(model: torch.nn.Module) -> torch.nn.Module:
    """The transformer without its LM head (attention does not depend on the head)."""
    return getattr(model, "base_model", model)


def forward(
    lm: models.LoadedModel, net: torch.nn.Module, input_ids: torch.Tensor, mask: torch.Tensor, **kwargs: Any
) -> Any:
    """One forward pass of ``net`` (the model or its backbone) on a padded batch; counted in ``STATS``."""
    if lm.record.causal:
        kwargs.setdefault("use_cache", False)
    out = net(input_ids=input_ids.to(lm.device), attention_mask=mask.to(lm.device), **kwargs)
    STATS["forward_passes"] += 1
    return out


def iterate_batches(
    lm: models.LoadedModel, ids: list[list[int]], batch_size: int | None, progress: bool = True, desc: str = "forward",
    *, batches: list[list[int]] | None = None, pad: int | None = None, width: int | None = None,
) -> Iterator[tuple[list[int], torch.Tensor, torch.Tensor]]:
    """The one batching loop: yield ``(sample indices, input_ids, attention_mask)`` per batch,
    length-sorted and right-padded.

    ``batches`` replaces the length-sorted plan of ``batch_size`` samples by a caller's (lists of sample
    indices; ``batch_size`` is then ``None``, one or the other); ``pad`` the tokenizer's padding id; ``width``
    pads every batch to that many tokens instead of its longest sample (the official Fisher notebook pads every
    sentence to the longest of the whole set)."""
    if (batch_size is None) == (batches is None):
        raise ValueError("give iterate_batches either batch_size (the length-sorted plan) or batches (a caller's "
                         f"plan), not {'both' if batches is not None else 'neither'}")
    pad = pad_id(lm.tokenizer) if pad is None else pad
    plan = batches
    if batch_size is not None:
        plan = length_sorted_batches([len(x) for x in ids], batch_size)
    for batch in tqdm(plan or [], desc=desc, disable=not progress, file=sys.stderr, leave=False):
        input_ids, mask = pad_batch([ids[i] for i in batch], pad, width)
        yield batch, input_ids, mask
