"""Output-level check: what the model predicts when attention to a key is removed inside it.

The paper argues that sinks matter but only removes them post hoc from attention matrices. Here
the post-softmax weights of every layer and head have one key column zeroed and their rows
renormalized *during* the forward pass, so the change reaches the outputs:

- decoders: KL between the next-token distributions with and without the edit, and the
  perplexity of the sentences' own next tokens;
- encoders: the sentence embedding the model was trained to produce (mean-pooled last hidden
  state, as sentence-transformers pools MiniLM), compared by cosine similarity. Masked-token
  prediction needs a masked-LM head; the offline MiniLM checkpoint ships none (its weights end at
  the pooler), and a head built from the tied input embeddings predicts none of the masked tokens,
  so for it the embedding is the output that is checked.

The edit wraps the model's ``eager_attention_forward`` (transformers 5.x): the original function
computes the weights, the edit changes them, and the output is recomputed as ``weights @ values``.
Rows whose whole visible mass sat on the removed key (query 0 of a causal model when key 0 is
removed) are left unchanged: they have nothing to renormalize. The control removes one random
non-sink key (seeded, one per sentence) instead of position 0.
"""

from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import numpy as np
import pandas as pd
import torch
from tqdm import tqdm

from . import extract, models as models_mod, stats
from .cache import Cache, texts_digest
from .models import LoadedModel

Edit = Callable[[torch.Tensor, Any], torch.Tensor]  # weights [batch, head, query, key], module -> weights
CONDITIONS = ("sink", "random")


def _repeat_kv(value: torch.Tensor, groups: int) -> torch.Tensor:
    """``[batch, kv_head, key, d]`` -> ``[batch, kv_head * groups, key, d]`` (grouped-query attention)."""
    if groups == 1:
        return value
    b, h, k, d = value.shape
    return value[:, :, None].expand(b, h, groups, k, d).reshape(b, h * groups, k, d)


def _attention_modules(model: torch.nn.Module) -> list[Any]:
    """The Python modules that define the ``eager_attention_forward`` the model's layers call."""
    impl = getattr(model.config, "_attn_implementation", None)
    if impl not in (None, "eager"):
        raise ValueError(f"the attention edit needs attn_implementation='eager', this model uses {impl!r}; "
                         "load it with sinkframes.models.load")
    found = {}
    for sub in model.modules():
        mod = sys.modules.get(type(sub).__module__)
        if mod is not None and hasattr(mod, "eager_attention_forward") and "Attention" in type(sub).__name__:
            found[mod.__name__] = mod
    if not found:
        raise ValueError(f"no eager attention function found in {type(model).__name__}; this architecture is not supported")
    return list(found.values())


@contextlib.contextmanager
def attention_edit(model: torch.nn.Module, edit: Edit) -> Iterator[None]:
    """Within the block, every eager attention call of ``model`` uses ``edit(weights, module)``
    as its post-softmax weights (output recomputed as ``weights @ values``)."""
    patched = []
    try:
        for mod in _attention_modules(model):
            original = mod.eager_attention_forward

            def wrapped(module, query, key, value, attention_mask, *args, _orig=original, **kwargs):
                out, weights = _orig(module, query, key, value, attention_mask, *args, **kwargs)
                new = edit(weights, module)
                v = _repeat_kv(value, getattr(module, "num_key_value_groups", 1))  # [batch, head, key, d]
                return torch.matmul(new.to(v.dtype), v).transpose(1, 2).contiguous(), new

            mod.eager_attention_forward = wrapped
            patched.append((mod, original))
        yield
    finally:
        for mod, original in patched:
            mod.eager_attention_forward = original


def remove_key(keys: torch.Tensor) -> Edit:
    """An edit that zeroes key ``keys[b]`` in every row of batch item ``b`` and renormalizes the
    rows that lost mass. A negative index removes nothing (the no-op edit: weights untouched)."""

    def edit(weights: torch.Tensor, module: Any) -> torch.Tensor:  # [batch, head, query, key]
        k = keys.to(weights.device)
        if (k < 0).all():
            return weights
        col = torch.zeros(weights.shape[0], weights.shape[-1], dtype=torch.bool, device=weights.device)
        rows = torch.nonzero(k >= 0).flatten()
        col[rows, k[rows]] = True
        col = col[:, None, None, :]  # [batch, 1, 1, key]
        kept = weights.masked_fill(col, 0.0)
        total = kept.sum(-1, keepdim=True)
        lost = (weights * col).sum(-1, keepdim=True) > 0
        renorm = lost & (total > 0)
        return torch.where(renorm, kept / total.where(total > 0, torch.ones_like(total)), weights)

    return edit


def random_keys(lengths: list[int], seed: int) -> list[int]:
    """One key per sentence drawn uniformly from positions ``1..n-1`` (seeded)."""
    rng = np.random.default_rng(seed)
    return [int(rng.integers(1, n)) if n > 1 else -1 for n in lengths]


def _batch(ids: list[list[int]], pad: int) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(x) for x in ids)
    input_ids = torch.full((len(ids), width), pad, dtype=torch.long)
    mask = torch.zeros((len(ids), width), dtype=torch.long)
    for r, x in enumerate(ids):
        input_ids[r, : len(x)] = torch.tensor(x)
        mask[r, : len(x)] = 1
    return input_ids, mask


def _forward(lm: LoadedModel, input_ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Logits ``[batch, token, vocab]`` (decoders) or last hidden states ``[batch, token, d]``."""
    kwargs: dict[str, Any] = {"use_cache": False} if lm.record.causal else {}
    out = lm.model(input_ids=input_ids.to(lm.device), attention_mask=mask.to(lm.device), **kwargs)
    if lm.record.causal:
        return out.logits.float()
    return out.last_hidden_state.float() if hasattr(out, "last_hidden_state") else out[0].float()


def _decoder_scores(base: torch.Tensor, edited: torch.Tensor, ids: list[int]) -> dict[str, float]:
    """Mean next-token KL(base || edited) over positions, and both mean negative log-likelihoods."""
    n = len(ids)
    lp = torch.log_softmax(base[: n - 1].double(), -1)  # [position, vocab]
    lq = torch.log_softmax(edited[: n - 1].double(), -1)
    kl = (lp.exp() * (lp - lq)).sum(-1).mean().item()
    target = torch.tensor(ids[1:])
    nll_b = -lp[torch.arange(n - 1), target].mean().item()
    nll_e = -lq[torch.arange(n - 1), target].mean().item()
    return {"kl": kl, "nll_base": nll_b, "nll_edit": nll_e}


def _encoder_scores(base: torch.Tensor, edited: torch.Tensor, n: int) -> dict[str, float]:
    """Cosine similarity of mean-pooled sentence embeddings, and its distance ``1 - cos``."""
    a, b = base[:n].double().mean(0), edited[:n].double().mean(0)
    cos = torch.nn.functional.cosine_similarity(a, b, dim=0).item()
    return {"cosine": cos, "distance": 1.0 - cos}


@dataclass
class OutputCheck:
    """Per-sentence scores of one model under each edit, and their summary."""

    ref: str
    causal: bool
    per_sentence: pd.DataFrame  # sentence, condition, removed key, scores
    summary: pd.DataFrame  # one row per condition


@torch.no_grad()
def output_check(lm: LoadedModel, texts: list[str], seed: int = 0, batch_size: int = 8, max_length: int = 256,
                 progress: bool = True, noop: bool = False) -> pd.DataFrame:
    """Per-sentence scores for removing position 0 (``sink``) and a random key (``random``).

    ``noop=True`` adds a ``noop`` condition (the edit installed but removing nothing), which must
    reproduce the unedited outputs exactly.
    """
    ids = extract.tokenize(lm.tokenizer, texts, max_length)
    pad = lm.tokenizer.pad_token_id if lm.tokenizer.pad_token_id is not None else 0
    rand = random_keys([len(x) for x in ids], seed)
    conditions = {"sink": [0 if len(x) > 1 else -1 for x in ids], "random": rand}
    if noop:
        conditions["noop"] = [-1] * len(ids)
    rows = []
    order = list(range(len(ids)))
    for start in tqdm(range(0, len(order), batch_size), desc=f"{lm.record.ref}: attention edit", disable=not progress,
                      file=sys.stderr, leave=False):
        idx = order[start : start + batch_size]
        input_ids, mask = _batch([ids[i] for i in idx], pad)
        base = _forward(lm, input_ids, mask)
        for cond, keys in conditions.items():
            k = torch.tensor([keys[i] for i in idx])
            with attention_edit(lm.model, remove_key(k)):
                edited = _forward(lm, input_ids, mask)
            for r, i in enumerate(idx):
                n = len(ids[i])
                score = (_decoder_scores(base[r], edited[r], ids[i]) if lm.record.causal
                         else _encoder_scores(base[r], edited[r], n))
                rows.append({"sentence": i, "condition": cond, "removed_key": keys[i], "n_tokens": n, **score})
    return pd.DataFrame(rows)


def summarize_check(ref: str, causal: bool, per: pd.DataFrame, seed: int = 0) -> OutputCheck:
    """Means with bootstrap intervals over sentences, perplexities, and a sign-flip test of the
    paired difference sink - random (KL for decoders, embedding distance for encoders)."""
    metric = "kl" if causal else "distance"
    rows = []
    for cond in [c for c in ("sink", "random", "noop") if c in set(per["condition"])]:
        d = per[per["condition"] == cond].sort_values("sentence")
        mean, lo, hi = stats.bootstrap_ci(d[metric].to_numpy(), seed=seed)
        row = {"model": ref, "condition": cond, "metric": metric, "mean": mean, "ci_low": lo, "ci_high": hi}
        if causal:
            row["ppl_base"] = float(np.exp(np.average(d["nll_base"], weights=d["n_tokens"] - 1)))
            row["ppl_edit"] = float(np.exp(np.average(d["nll_edit"], weights=d["n_tokens"] - 1)))
        rows.append(row)
    s = per[per["condition"] == "sink"].sort_values("sentence")[metric].to_numpy()
    r = per[per["condition"] == "random"].sort_values("sentence")[metric].to_numpy()
    diff, p = stats.sign_flip_test(s - r, seed=seed)
    summary = pd.DataFrame(rows)
    summary["sink_minus_random"] = diff
    summary["p_sign_flip"] = p
    return OutputCheck(ref, causal, per, summary)


def cached_output_check(ref: str, texts: list[str], seed: int = 0, batch_size: int = 8, max_length: int = 256,
                        dtype: str = "float32", progress: bool = True) -> OutputCheck:
    """:func:`output_check` and :func:`summarize_check` for ``ref``, through the on-disk cache."""
    key = {"product": "output_check", "version": 1, "source": models_mod.source_fingerprint(ref),
           "texts": texts_digest(list(texts)), "seed": seed, "max_length": max_length, "dtype": dtype,
           "attn_implementation": "eager"}

    def compute() -> dict[str, Any]:
        lm = extract.get_model(ref, dtype=dtype)
        per = output_check(lm, list(texts), seed=seed, batch_size=batch_size, max_length=max_length, progress=progress)
        return {"causal": lm.record.causal, "per_sentence": per.to_dict("list")}

    value, _ = Cache(namespace="interventions").get_or_compute(key, compute)
    return summarize_check(ref, value["causal"], pd.DataFrame(value["per_sentence"]), seed=seed)
