"""Empirical Fisher norms per layer and parameter group: where the loss gradient energy sits.

For one sentence the squared gradient norm of a parameter block, ``||d loss / d theta||^2``,
averaged over sentences, is the trace of that block's diagonal empirical Fisher. Summed per
layer it says which depths the language-model loss is most sensitive to (the paper's "Fisher
information by layer").

Losses:
- decoders: next-token cross-entropy of the sentence.
- encoders with a masked-LM head: masked-token cross-entropy on 15 % of the non-special
  positions (seeded); ``cached_fisher`` loads the head with ``models.load_masked_lm`` whenever
  the checkpoint ships its weights (hub BERT and XLM-R do).
- encoders without one (the offline MiniLM: its checkpoint ends at the pooler, no
  ``cls.predictions`` weights): a masked-sentence *embedding consistency* loss,
  ``1 - cos(pool(h(masked)), pool(h(clean)))`` with the clean embedding held fixed. It lives in
  the space the model was trained for (mean-pooled sentence embeddings) and is zero when masking
  15 % of the tokens does not move the embedding. A masked-LM loss through an untrained head
  would measure the head, not the model.

Modes:
- ``faithful`` reproduces ``fisher.ipynb``: texts cut to 500 characters, all tokenized together
  with padding to the longest (max 128 tokens, pad = EOS for decoders), each sentence run with
  its padding *inside* the loss (labels = input ids at every position, pads included; encoders:
  labels at every position), layer buckets parsed from ``layers.<k>.`` / ``layer.<k>.`` with the
  rest in ``other`` (counted in the total), and the official first-match keyword groups. The
  official run used float16 gradients; pass ``dtype="float16"`` on a GPU to repeat that.
- ``corrected``: each sentence alone (no padding at all), float32, seeded masking, standard
  labels, and groups from the module structure (attention, MLP, norms; embeddings and the final
  norm outside the layers). Shares are of the transformer layers' total.

Engines (the same numbers, to rounding): ``loop`` runs one forward and one backward pass per
sentence and reads each parameter's gradient (the reference; the faithful mode then takes float32
norms, as the official code). ``batched`` runs up to eight sentences of similar length in one
padded pass, gives the weights no gradient and reads each sentence's squared norms from the
activations and output gradients of every module (``probes.per_sample``), in float64: several
times faster. ``auto`` (the default) takes ``batched`` for a float32 model whose every parameter
it can read, else ``loop``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
import torch

from .. import stats
from ..cache import Cache, cache_key
from ..code_digest import code_digest
from ..extraction.batching import get_model, iterate_batches, length_sorted_batches, pad_batch, pad_id, tokenize
from ..models import load_masked_lm
from ..types import MODES, Mode, RunOptions, check_mode
from . import per_sample

__all__ = ["ENGINES", "MODES", "FisherResult", "cached_fisher", "fisher_batches", "fisher_norms", "objective"]

Engine = Literal["auto", "batched", "loop"]
ENGINES: tuple[str, ...] = ("auto", "batched", "loop")

MASK_PROB = 0.15
FAITHFUL_MAX_CHARS = 500
FAITHFUL_MAX_LENGTH = 128
CORRECTED_MAX_LENGTH = 512
_LAYER_RE = re.compile(r"(?:^|\.)(?:layers|layer|h)\.(\d+)\.")


def layer_index(name: str) -> int | None:
    """Layer number parsed from a parameter name (``...layers.3...``, ``...layer.3...``, or BLOOM's and GPT-2's
    ``transformer.h.3...``)."""
    m = _LAYER_RE.search(name)
    return int(m.group(1)) if m else None


def official_group(name: str) -> str | None:
    """The official keyword grouping, first match wins (``post_attention_layernorm`` counts as
    attention, an LM head called ``embed_out`` as embedding, other norms are dropped)."""
    if any(k in name for k in ("attention", "attn", "self", "q_proj", "k_proj", "v_proj")):
        return "attention"
    if any(k in name for k in ("mlp", "feed_forward", "ffn", "dense", "fc")):
        return "mlp"
    if any(k in name for k in ("embed", "token", "wte", "wpe")):
        return "embedding"
    return None


def corrected_group(name: str) -> str:
    """Group from the module structure: ``attention`` (projections, QK-norms inside attention),
    ``mlp``, ``norm`` (the block's layer norms), ``embedding`` or ``other`` (outside the layers)."""
    low = name.lower()
    if layer_index(name) is None:
        return "embedding" if any(k in low for k in ("embed", "wte", "wpe", "lm_head")) else "other"
    if "self_attn." in low or ("attention" in low and "norm" not in low):
        return "attention"
    if "norm" in low:
        return "norm"
    if any(
        k in low
        for k in (
            "mlp",
            "intermediate",
            "output.dense",
            "feed_forward",
            "ffn",
            "fc1",
            "fc2",
            "dense_h_to_4h",
            "dense_4h_to_h",
        )
    ):
        return "mlp"
    return "other"


def squared_grad_norms(model: torch.nn.Module, mode: Mode = "corrected") -> dict[str, float]:
    """``||grad||^2`` of every parameter that has a gradient (float64 accumulation; the faithful
    mode takes the norm in the gradient's own dtype and squares it, as the official code)."""
    faithful = check_mode(mode) == "faithful"
    out: dict[str, float] = {}
    for name, p in model.named_parameters():
        if p.grad is None:
            continue
        if faithful:
            out[name] = float(p.grad.norm().item()) ** 2
        else:
            out[name] = float(p.grad.double().pow(2).sum().item())
    return out


# ---------------------------------------------------------------------------------------------
# losses


def _encoder_inputs(
    ids: torch.Tensor, special: torch.Tensor, mask_id: int, gen: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """Mask 15 % of the non-special positions (at least one); returns masked ids and the mask."""
    cand = (~special).nonzero().flatten()
    if cand.numel() == 0:
        raise ValueError("a sentence has no non-special token to mask")
    # drawn on the host with the CPU generator, so that the masks do not depend on the model's device
    pick = torch.rand(cand.numel(), generator=gen, device="cpu") < MASK_PROB
    if not pick.any():
        pick[torch.randint(cand.numel(), (1,), generator=gen, device="cpu")] = True
    masked = torch.zeros_like(special)
    masked[cand[pick]] = True
    return ids.masked_fill(masked, mask_id), masked


def _pool(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    m = mask.to(hidden.dtype)[..., None]
    return (hidden * m).sum(-2) / m.sum(-2).clamp(min=1)


def _losses(
    model: torch.nn.Module,
    causal: bool,
    has_mlm_head: bool,
    ids: torch.Tensor,
    attn_mask: torch.Tensor,
    masked: tuple[torch.Tensor, torch.Tensor] | None,
    faithful: bool,
) -> torch.Tensor:
    """``[batch]``: each sentence's loss (``ids`` ``[batch, token]``; ``masked``: the encoders' masked ids
    and mask). Sentences are independent, so the gradient of the sum is each one's own in its rows."""
    if causal:
        labels = ids.clone()
        if not faithful:
            labels[attn_mask == 0] = -100
        logits = model(input_ids=ids, attention_mask=attn_mask, use_cache=False).logits.float()  # [batch, token, vocab]
        return _mean_cross_entropy(logits[:, :-1], labels[:, 1:])
    if masked is None:
        raise ValueError("an encoder's loss needs its masked copy of the ids")
    masked_ids, mask = masked
    if has_mlm_head:
        labels = ids.clone() if faithful else ids.masked_fill(~mask, -100)
        logits = model(input_ids=masked_ids, attention_mask=attn_mask).logits.float()  # [batch, token, vocab]
        return _mean_cross_entropy(logits, labels)
    pool_mask = torch.ones_like(attn_mask) if faithful else attn_mask  # faithful: pads inside
    with torch.no_grad():
        clean = _pool(model(input_ids=ids, attention_mask=attn_mask).last_hidden_state, pool_mask)
    noisy = _pool(model(input_ids=masked_ids, attention_mask=attn_mask).last_hidden_state, pool_mask)
    return 1.0 - torch.nn.functional.cosine_similarity(noisy, clean, dim=-1)


def _mean_cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """``[batch]``: mean cross-entropy over each row's labelled positions (label -100 = none).

    ``logits`` ``[batch, token, vocab]`` are flattened to ``[batch * token, vocab]`` rows, so the
    softmax runs along contiguous memory: with the vocabulary as a strided middle dimension
    (``logits.transpose(1, 2)``) the same loss and its gradient took about four times as long.
    """
    b, t, v = logits.shape
    flat = torch.nn.functional.cross_entropy(
        logits.reshape(b * t, v), labels.reshape(b * t), ignore_index=-100, reduction="none"
    )
    ce = flat.view(b, t)  # [batch, token]
    return ce.sum(1) / (labels != -100).sum(1).clamp(min=1)  # [batch]


def objective(causal: bool, has_mlm_head: bool) -> str:
    """Plain name of the loss used for a model."""
    if causal:
        return "next-token cross-entropy"
    return (
        "masked-token cross-entropy" if has_mlm_head else "masked-sentence embedding consistency (no MLM head shipped)"
    )


# ---------------------------------------------------------------------------------------------
# the computation


@dataclass
class FisherResult:
    """Per-sentence squared gradient norms by (layer, group) for one model and mode."""

    ref: str
    mode: Mode
    n_layers: int
    objective: str
    values: pd.DataFrame  # sentence, layer (-1 = outside the layers), group, official_group, fisher

    def per_sentence_layers(self) -> np.ndarray:
        """``[sentence, layer]`` summed squared gradient norms of the transformer layers."""
        v = self.values[self.values["layer"] >= 0]
        t = v.groupby(["sentence", "layer"])["fisher"].sum().unstack("layer").reindex(columns=range(self.n_layers))
        return t.fillna(0.0).to_numpy()

    def by_layer(self) -> pd.DataFrame:
        """Mean Fisher norm per layer and its share. Faithful: share of the total including
        ``other`` (as the official total); corrected: share of the layers' total."""
        per = self.per_sentence_layers()
        mean = per.mean(0)
        other = (
            float(self.values[self.values["layer"] < 0].groupby("sentence")["fisher"].sum().mean())
            if (self.values["layer"] < 0).any()
            else 0.0
        )
        total = mean.sum() + (other if self.mode == "faithful" else 0.0)
        return pd.DataFrame(
            {
                "layer": range(self.n_layers),
                "region": [stats.region_of(i, self.n_layers) for i in range(self.n_layers)],
                "fisher": mean,
                "share": mean / total if total > 0 else np.nan,
            }
        )

    def early_share(self, seed: int = 0, n_boot: int = 2000) -> tuple[float, float, float]:
        """Share of the layers' Fisher in the early third, with a bootstrap interval over sentences."""
        per = self.per_sentence_layers()
        early = stats.layer_regions(self.n_layers)["early"]
        if self.mode == "faithful":
            other = (
                self.values[self.values["layer"] < 0]
                .groupby("sentence")["fisher"]
                .sum()
                .reindex(range(per.shape[0]))
                .fillna(0)
                .to_numpy()
            )
        else:
            other = np.zeros(per.shape[0])

        def share(idx: np.ndarray) -> float:
            tot = per[idx].sum() + other[idx].sum()
            return float(per[idx][:, early].sum() / tot) if tot > 0 else float("nan")

        rng = np.random.default_rng(seed)
        m = per.shape[0]
        boots = [share(np.asarray(rng.integers(0, m, size=m))) for _ in range(n_boot)]
        return share(np.arange(m)), float(np.nanquantile(boots, 0.025)), float(np.nanquantile(boots, 0.975))

    def groups(self) -> pd.DataFrame:
        """Mean Fisher per group and its share: official keyword groups (faithful) or structural
        groups inside the layers (corrected)."""
        if self.mode == "faithful":
            g = self.values.dropna(subset=["official_group"]).groupby(["sentence", "official_group"])["fisher"].sum()
            mean = g.groupby("official_group").sum() / self.values["sentence"].nunique()
        else:
            v = self.values[self.values["layer"] >= 0]
            mean = v.groupby(["sentence", "group"])["fisher"].sum().groupby("group").sum() / v["sentence"].nunique()
        df = mean.rename("fisher").reset_index().rename(columns={"official_group": "group"})
        df["share"] = df["fisher"] / df["fisher"].sum()
        return df


@dataclass
class _Inputs:
    """The sentences as the loss sees them: token ids through the library's tokenization, and how the one
    batching loop pads them."""

    ids: list[list[int]]  # per sentence, unpadded
    pad: int  # the padding id
    width: int | None  # faithful: every sentence padded to the longest of the set (its loss sees the padding)
    masked: list[tuple[list[int], list[int]]] | None  # encoders: per sentence the masked ids and 1 where masked

    def tensors(self, batch: list[int], ids: torch.Tensor, attn_mask: torch.Tensor, device: torch.device
                ) -> tuple[torch.Tensor, torch.Tensor, tuple[torch.Tensor, torch.Tensor] | None]:
        """``ids``, ``attn_mask`` ``[batch, token]`` of a batch on ``device``, with the encoders' masked copy."""
        if self.masked is None:
            return ids.to(device), attn_mask.to(device), None
        width = int(ids.shape[1])  # the batch's width, as the loop padded its ids
        masked_ids, _ = pad_batch([self.masked[i][0] for i in batch], self.pad, width)
        where, _ = pad_batch([self.masked[i][1] for i in batch], 0, width)
        return ids.to(device), attn_mask.to(device), (masked_ids.to(device), where.bool().to(device))


def _inputs(tok: Any, texts: list[str], causal: bool, faithful: bool, gen: torch.Generator) -> _Inputs:
    """Tokenize as the mode says (faithful: texts cut to 500 characters and 128 tokens, padded to the longest
    with EOS for decoders; corrected: up to 512 tokens, each alone) and draw the encoders' masks sentence by
    sentence in order, over the non-special tokens."""
    cut = [t[:FAITHFUL_MAX_CHARS] for t in texts] if faithful else list(texts)
    ids = tokenize(tok, cut, FAITHFUL_MAX_LENGTH if faithful else CORRECTED_MAX_LENGTH, truncation=True)
    pad = pad_id(tok)
    if faithful and causal and tok.eos_token_id is not None:  # the official code pads decoders with EOS
        pad = int(tok.eos_token_id)
    masked = None
    if not causal:
        if tok.mask_token_id is None:
            raise ValueError("this encoder's tokenizer has no mask token; cannot build a masked loss")
        masked = []
        for x in ids:
            special = torch.tensor(tok.get_special_tokens_mask(x, already_has_special_tokens=True), dtype=torch.bool,
                                   device="cpu")
            m_ids, where = _encoder_inputs(torch.tensor(x, device="cpu"), special, tok.mask_token_id, gen)
            masked.append((m_ids.tolist(), where.long().tolist()))
    return _Inputs(ids, pad, max(len(x) for x in ids) if faithful else None, masked)


def fisher_norms(
    lm: Any,
    texts: list[str],
    mode: Mode = "corrected",
    seed: int = 0,
    has_mlm_head: bool | None = None,
    progress: bool = True,
    engine: Engine = "auto",
) -> FisherResult:
    """Per-sentence squared gradient norms of ``lm`` (a ``models.LoadedModel``) on ``texts``.

    ``engine``: ``"batched"`` shares one forward and backward pass among several sentences and reads
    every norm from activations and output gradients (``probes.per_sample``); ``"loop"`` runs one
    backward pass per sentence and reads the norms from the parameters' gradients (the reference);
    ``"auto"`` takes ``batched`` for float32 models whose every parameter it covers, else ``loop``.
    """
    mode = check_mode(mode)
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, got {engine!r}")
    faithful = mode == "faithful"
    model, tok, rec = lm.model, lm.tokenizer, lm.record
    if has_mlm_head is None:
        has_mlm_head = hasattr(model, "cls") or type(model).__name__.endswith("ForMaskedLM")
    # the masked copies are drawn sentence by sentence in order, whatever the engine
    inputs = _inputs(tok, texts, rec.causal, faithful, torch.Generator().manual_seed(seed))
    if engine == "auto":
        dtypes = {p.dtype for p in model.parameters()}
        engine = "batched" if dtypes == {torch.float32} and not per_sample.coverage_gaps(model) else "loop"
    elif engine == "batched" and per_sample.coverage_gaps(model):
        raise ValueError(f"the batched engine cannot cover {per_sample.coverage_gaps(model)[:3]}; use engine='loop'")
    run = _batched_norms if engine == "batched" else _looped_norms
    was_training = model.training
    model.eval()
    try:
        per = run(lm, inputs, has_mlm_head, faithful, progress, mode)
    finally:
        model.zero_grad(set_to_none=True)
        model.train(was_training)
    names = {n: (layer_index(n), corrected_group(n), official_group(n)) for n, _ in model.named_parameters()}
    rows = [
        (s, -1 if names[name][0] is None else names[name][0], names[name][1], names[name][2], val)
        for s, sentence in enumerate(per)
        for name, val in sentence.items()
    ]
    values = pd.DataFrame(rows, columns=["sentence", "layer", "group", "official_group", "fisher"])
    return FisherResult(rec.ref, mode, rec.n_layers, objective(rec.causal, has_mlm_head), values)


def _looped_norms(
    lm: Any, inputs: _Inputs, has_mlm_head: bool, faithful: bool, progress: bool, mode: Mode
) -> list[dict[str, float]]:
    """One forward and backward pass per sentence, in order; norms read from the parameters' gradients."""
    model, rec = lm.model, lm.record
    out = []
    for batch, ids, am in iterate_batches(lm, inputs.ids, None, progress, f"{rec.ref}: Fisher ({mode})",
                                          batches=[[i] for i in range(len(inputs.ids))], pad=inputs.pad,
                                          width=inputs.width):
        model.zero_grad(set_to_none=True)
        losses = _losses(model, rec.causal, has_mlm_head, *inputs.tensors(batch, ids, am, lm.device), faithful)
        losses.sum().backward()
        out.append(squared_grad_norms(model, mode))
    return out


def _batched_norms(
    lm: Any, inputs: _Inputs, has_mlm_head: bool, faithful: bool, progress: bool, mode: Mode
) -> list[dict[str, float]]:
    """Sentences of similar length share a padded batch; norms from ``per_sample`` (no weight gradients)."""
    model, rec = lm.model, lm.record
    named = list(model.named_parameters())
    vocab = int((model.get_output_embeddings() or model.get_input_embeddings()).weight.shape[0])
    out: list[dict[str, float]] = [{} for _ in inputs.ids]
    lengths = [inputs.width or len(x) for x in inputs.ids]  # as run: faithful sentences all have the padded width
    for batch, ids, am in iterate_batches(lm, inputs.ids, None, progress, f"{rec.ref}: Fisher ({mode})",
                                          batches=fisher_batches(lengths, vocab), pad=inputs.pad, width=inputs.width):
        with per_sample.per_sample_norms(model, len(batch)) as acc:
            _losses(model, rec.causal, has_mlm_head, *inputs.tensors(batch, ids, am, lm.device), faithful).sum(
            ).backward()
        for name, p in named:
            sq = acc.squared_norms(p)
            if sq is not None:
                for r, i in enumerate(batch):
                    out[i][name] = float(sq[r])
    return out


def fisher_batches(lengths: list[int], vocab: int, max_batch: int = 8, max_logits: int = 2**27) -> list[list[int]]:
    """Sentence indices in batches of similar length (``extraction.batching``), at most ``max_batch``
    sentences and about ``max_logits`` logits (batch x longest length x vocabulary) each."""
    size = max(1, min(max_batch, max_logits // max(1, max(lengths, default=1) * vocab)))
    return length_sorted_batches(lengths, size)


def cached_fisher(
    ref: str,
    texts: list[str],
    mode: Mode = "corrected",
    seed: int = 0,
    opts: RunOptions | None = None,
    **overrides: Any,
) -> FisherResult:
    """:func:`fisher_norms` for ``ref`` through the on-disk cache (the backward passes are the cost).

    The mode's own fixed token limit (128 faithful, 512 corrected) and character cut enter the key.
    """
    mode = check_mode(mode)
    o = RunOptions.build(opts, **overrides)
    limits = (
        {"max_tokens": FAITHFUL_MAX_LENGTH, "max_chars": FAITHFUL_MAX_CHARS}
        if mode == "faithful"
        else {"max_tokens": CORRECTED_MAX_LENGTH, "max_chars": None}
    )
    # the version is the digest of this module's code: a change to the computation is a new key
    key = cache_key({"kind": "fisher", "version": code_digest(__name__)}, ref, list(texts), o, mode=mode, seed=seed,
                    **limits)

    def compute() -> dict[str, Any]:
        lm = get_model(ref, o, logits=True)
        if not lm.record.causal:  # an encoder: use its masked-LM head where the checkpoint has one
            lm = load_masked_lm(ref, dtype=o.dtype, device=o.device, revision=o.revision) or lm
        res = fisher_norms(lm, list(texts), mode=mode, seed=seed, progress=o.progress)
        return {"n_layers": res.n_layers, "objective": res.objective, "values": res.values.to_dict("list")}

    value, _ = Cache(namespace="fisher").get_or_compute(key, compute, o.use_cache)
    return FisherResult(ref, mode, value["n_layers"], value["objective"], pd.DataFrame(value["values"]))
