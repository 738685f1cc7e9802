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

The edit goes through ``extraction.hooks.attention_hook`` (transformers 5.x eager attention): the
original function computes the weights, the edit changes them, and the output is recomputed as
``weights @ values``.
Rows whose whole visible mass sat on the removed key (query 0 of a causal model when key 0 is
removed) are left unchanged: they have nothing to renormalize. The control removes one random
non-sink key (seeded, one per sentence) instead of position 0; a second random key (``random2``,
another seeded draw, a different key where the sentence has two) is the null of the paired comparison:
``random2 - random`` is what ``sink - random`` would be if position 0 were a key like any other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import torch

from .. import stats
from ..cache import Cache, cache_key
from ..code_digest import code_digest
from ..extraction.batching import forward, get_model, iterate_batches, tokenize_for
from ..extraction.hooks import Edit, attention_hook
from ..models import LoadedModel
from ..types import RunOptions

CONDITIONS = ("sink", "random", "random2")


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


def second_random_keys(lengths: list[int], first: list[int], seed: int) -> list[int]:
    """Per sentence a key from ``1..n-1`` other than ``first`` where there is one (seeded apart from
    :func:`random_keys`)."""
    rng = np.random.default_rng([seed, 2])
    out = []
    for n, k in zip(lengths, first, strict=True):
        if n < 2:
            out.append(-1)
        elif n == 2:
            out.append(1)
        else:
            j = int(rng.integers(1, n - 1))  # one of the n - 2 non-sink keys other than k
            out.append(j if j < k else j + 1)
    return out


def _outputs(lm: LoadedModel, input_ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Logits ``[batch, token, vocab]`` (decoders) or last hidden states ``[batch, token, d]``."""
    out = forward(lm, lm.model, input_ids, mask)
    if lm.record.causal:
        return out.logits.float()
    return out.last_hidden_state.float() if hasattr(out, "last_hidden_state") else out[0].float()


def _decoder_scores(base: torch.Tensor, edited: dict[str, torch.Tensor], ids: list[int]) -> dict[str, dict[str, float]]:
    """Per condition: mean next-token KL(base || edited) over positions, and both mean negative
    log-likelihoods. ``base`` ``[token, vocab]`` logits, ``edited`` ``{condition: [token, vocab]}``; the base
    distribution is computed once for all conditions.

    Everything is float64 and goes one position at a time: each position's values are those of the whole
    ``[position, vocab]`` computation (every step works along one row), but a row's temporaries (2 MB at
    Gemma 3's 262k-token vocabulary) are reused from the heap, where whole-sentence ones (about 80 MB each)
    were fresh memory every time and most of the time went to mapping it (3-4 times slower, measured)."""
    n = len(ids)
    dev = base.device
    nll_base = torch.empty(n - 1, dtype=torch.float64, device=dev)  # [position]
    kl = {cond: torch.empty(n - 1, dtype=torch.float64, device=dev) for cond in edited}
    nll_edit = {cond: torch.empty(n - 1, dtype=torch.float64, device=dev) for cond in edited}
    for i in range(n - 1):
        target = ids[i + 1]
        lp = torch.log_softmax(base[i].double(), -1)  # [vocab]
        p = lp.exp()
        nll_base[i] = -lp[target]
        for cond, logits in edited.items():
            lq = torch.log_softmax(logits[i].double(), -1)
            kl[cond][i] = (p * (lp - lq)).sum()
            nll_edit[cond][i] = -lq[target]
    nll_b = nll_base.mean().item()
    return {cond: {"kl": kl[cond].mean().item(), "nll_base": nll_b, "nll_edit": nll_edit[cond].mean().item()}
            for cond in edited}


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
def output_check(
    lm: LoadedModel, texts: list[str], seed: int = 0, opts: RunOptions | None = None, noop: bool = False
) -> pd.DataFrame:
    """Per-sentence scores for removing position 0 (``sink``) and a random key (``random``).

    ``noop=True`` adds a ``noop`` condition (the edit installed but removing nothing), which must
    reproduce the unedited outputs exactly.
    """
    o = opts or RunOptions()
    ids = tokenize_for(lm, texts, o)
    lengths = [len(x) for x in ids]
    rand = random_keys(lengths, seed)
    conditions = {"sink": [0 if len(x) > 1 else -1 for x in ids], "random": rand,
                  "random2": second_random_keys(lengths, rand, seed)}
    if noop:
        conditions["noop"] = [-1] * len(ids)
    rows = []
    for idx, input_ids, mask in iterate_batches(lm, ids, o.batch_size, o.progress, f"{lm.record.ref}: attention edit"):
        base = _outputs(lm, input_ids, mask)
        edited = {}  # every condition's outputs at once, so that each sentence's base is scored once
        for cond, keys in conditions.items():
            with attention_hook(lm.model, edit=remove_key(torch.tensor([keys[i] for i in idx], device=lm.device))):
                edited[cond] = _outputs(lm, input_ids, mask)
        for r, i in enumerate(idx):
            n = len(ids[i])
            if lm.record.causal:
                scores = _decoder_scores(base[r], {c: e[r] for c, e in edited.items()}, ids[i])
            else:
                scores = {c: _encoder_scores(base[r], e[r], n) for c, e in edited.items()}
            for cond, keys in conditions.items():
                rows.append({"sentence": i, "condition": cond, "removed_key": keys[i], "n_tokens": n, **scores[cond]})
    return pd.DataFrame(rows).sort_values("sentence", kind="stable").reset_index(drop=True)


def summarize_check(ref: str, causal: bool, per: pd.DataFrame, seed: int = 0) -> OutputCheck:
    """Means with bootstrap intervals over sentences, perplexities, and a sign-flip test of the
    paired difference sink - random (KL for decoders, embedding distance for encoders)."""
    metric = "kl" if causal else "distance"
    rows = []
    for cond in [c for c in ("sink", "random", "random2", "noop") if c in set(per["condition"])]:
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


def cached_output_check(
    ref: str, texts: list[str], seed: int = 0, opts: RunOptions | None = None, **overrides: Any
) -> OutputCheck:
    """:func:`output_check` and :func:`summarize_check` for ``ref``, through the on-disk cache."""
    o = RunOptions.build(opts, **overrides)
    key = cache_key({"kind": "output_check", "version": code_digest(__name__)}, ref, list(texts), o, seed=seed)

    def compute() -> dict[str, Any]:
        lm = get_model(ref, o, logits=True)
        per = output_check(lm, list(texts), seed=seed, opts=o)
        return {"causal": lm.record.causal, "per_sentence": per.to_dict("list")}

    value, _ = Cache(namespace="interventions").get_or_compute(key, compute, o.use_cache)
    return summarize_check(ref, value["causal"], pd.DataFrame(value["per_sentence"]), seed=seed)
