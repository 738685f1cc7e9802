"""Geometry of the sink key (paper sections 3.3-3.4): key norms, query-key angles, logit parts.

The paper explains the first-token sink under standard RoPE: position 0 gets the identity rotation,
and a key with a *small* norm but a high cosine to the queries becomes an effective sink. No
official notebook computes these quantities; this module does, per layer and head, from captured
queries ``[layer, head, token, dim]`` and keys ``[layer, kv_head, token, dim]`` (GQA: query head h
reads KV head ``h // (H/KV)``, see ``tensors.expand_kv``).

Conventions: *other keys* of query ``i`` are the keys ``j >= 1`` it can see, excluding itself
(``j < i`` when causal, ``j != i`` otherwise), the same pairs ``metrics.sinks`` uses; queries are
``i >= 1``. Models with absolute positions (BERT) have no rotation: "before" and "after" coincide
and every function applies unchanged.

The sink logit ``s |q_i| |k_0| cos_i0`` is compared with a typical other key ``s |q_i| k̄ c̄``
(``k̄``: mean norm of the other keys, ``c̄``: mean cosine of ``q_i`` to them). The difference splits
exactly into a *norm part* and an *alignment part* (the symmetric two-factor split
``a0 b0 - a b = (a0 - a)(b0 + b)/2 + (b0 - b)(a0 + a)/2``): the norm part is what the sink's key
norm contributes, the alignment part what its direction contributes.
"""

from __future__ import annotations

import torch

from ..tensors import expand_kv
from .sinks import eligible_pairs

_EPS = 1e-12


def _check(q: torch.Tensor, k: torch.Tensor) -> None:
    if q.dim() != 4 or k.dim() != 4 or q.shape[-2:] != k.shape[-2:] or q.shape[0] != k.shape[0]:
        raise ValueError(
            "queries [layer, head, token, dim] and keys [layer, kv_head, token, dim] must agree, got "
            f"{tuple(q.shape)} and {tuple(k.shape)}"
        )
    if q.shape[-2] < 2:
        raise ValueError("at least 2 tokens are needed to compare position 0 with other keys")


def other_key_mask(n: int, causal: bool, device: torch.device) -> torch.Tensor:
    """``[query, key]`` bool: key ``j >= 1`` visible to query ``i >= 1``, ``j != i``."""
    m = eligible_pairs(n, causal, device)
    m[:, 0] = False
    m[0] = False
    return m


def key_norms(key: torch.Tensor, causal: bool) -> dict[str, torch.Tensor]:
    """Per ``[layer, kv_head]``: norm of the position-0 key, mean norm of keys 1..n-1, their ratio.

    In causal models key ``n-1`` is seen by no other query, so the mean runs over ``1..n-2``.
    """
    norms = key.float().norm(dim=-1)  # [layer, kv, token]
    n = norms.shape[-1]
    if n < 2:
        raise ValueError("at least 2 tokens are needed")
    seen = other_key_mask(n, causal, norms.device).any(0)  # [token]
    other = norms[..., seen].mean(-1) if seen.any() else norms[..., 1:].mean(-1)
    return {
        "key0_norm": norms[..., 0],
        "other_key_norm": other,
        "key_norm_ratio": norms[..., 0] / other.clamp_min(_EPS),
    }


def cosines(query: torch.Tensor, key: torch.Tensor) -> torch.Tensor:
    """``[layer, head, query, key]`` cosine between every query and every (GQA-expanded) key."""
    _check(query, key)
    k = expand_kv(key.float(), query.shape[1])
    qn = query.float() / query.float().norm(dim=-1, keepdim=True).clamp_min(_EPS)
    kn = k / k.norm(dim=-1, keepdim=True).clamp_min(_EPS)
    return qn @ kn.transpose(-1, -2)


def sink_alignment(query: torch.Tensor, key: torch.Tensor, causal: bool) -> dict[str, torch.Tensor]:
    """Per ``[layer, head]``: mean cosine of queries ``i >= 1`` to key 0, and to their other keys."""
    cos = cosines(query, key)  # [layer, head, query, key]
    n = cos.shape[-1]
    m = other_key_mask(n, causal, cos.device).to(cos.dtype)  # [query, key]
    rows = m.sum(-1) > 0  # queries with at least one other key
    to_sink = cos[..., 1:, 0].mean(-1)
    per_row_other = (cos * m).sum(-1) / m.sum(-1).clamp_min(1)  # [layer, head, query]
    other = per_row_other[..., rows].mean(-1) if rows.any() else torch.full_like(to_sink, float("nan"))
    return {"cos_to_sink": to_sink, "cos_to_others": other}


def logit_decomposition(
    query: torch.Tensor, key: torch.Tensor, scaling: torch.Tensor | float, causal: bool
) -> dict[str, torch.Tensor]:
    """Per ``[layer, head]`` (means over queries ``i >= 1`` that have other keys):

    - ``sink_logit``: ``s q_i . k_0``; ``other_logit``: mean of ``s q_i . k_j`` over other keys;
    - ``log_query_norm`` (``log |q_i|``), ``log_sink_key_norm`` (``log |k_0|``), ``sink_cos``:
      the three factors of the sink logit (besides the scale ``s``), in log form where defined;
    - ``log_key_norm_ratio``: ``log |k_0| - mean_j log |k_j|``;
    - ``norm_part`` and ``alignment_part``: the exact split of ``sink_logit - s |q_i| k̄ c̄``.
    """
    _check(query, key)
    q = query.float()
    k = expand_kv(key.float(), q.shape[1])  # [layer, head, token, dim]
    n = q.shape[-2]
    s = torch.as_tensor(scaling, dtype=torch.float32, device=q.device)
    s = s.reshape(-1, 1, 1) if s.dim() else s  # per layer, broadcast over [head, query]
    qn = q.norm(dim=-1)  # [layer, head, token]
    kn = k.norm(dim=-1)  # [layer, head, token]
    cos = cosines(query, key)  # [layer, head, query, key]
    m = other_key_mask(n, causal, q.device).to(q.dtype)  # [query, key]
    cnt = m.sum(-1)  # [query]
    rows = cnt > 0
    if not rows.any():
        raise ValueError("no query has a key other than position 0 (need at least 3 tokens in a causal model)")
    kbar = (kn.unsqueeze(-2) * m).sum(-1) / cnt.clamp_min(1)  # [layer, head, query]
    logk_bar = (kn.clamp_min(_EPS).log().unsqueeze(-2) * m).sum(-1) / cnt.clamp_min(1)
    cbar = (cos * m).sum(-1) / cnt.clamp_min(1)  # [layer, head, query]
    a0 = kn[..., 0:1].expand_as(kbar)  # [layer, head, query]
    b0 = cos[..., 0]  # [layer, head, query]
    scale = s * qn  # [layer, head, query]
    logits = (s.unsqueeze(-1) if s.dim() else s) * (q @ k.transpose(-1, -2))  # [layer, head, query, key]
    out = {
        "sink_logit": logits[..., 0],
        "other_logit": (logits * m).sum(-1) / cnt.clamp_min(1),
        "log_query_norm": qn.clamp_min(_EPS).log(),
        "log_sink_key_norm": kn[..., 0:1].clamp_min(_EPS).log().expand_as(kbar),
        "sink_cos": b0,
        "log_key_norm_ratio": kn[..., 0:1].clamp_min(_EPS).log() - logk_bar,
        "norm_part": scale * (a0 - kbar) * (b0 + cbar) / 2,
        "alignment_part": scale * (b0 - cbar) * (a0 + kbar) / 2,
        "typical_logit": scale * kbar * cbar,
    }
    return {name: v[..., rows].mean(-1) for name, v in out.items()}


def _row_mean(x: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """Mean over the last dim restricted to ``rows``; a slice (no copy) when they form one run."""
    idx = torch.nonzero(rows).flatten()
    if idx.numel() and int(idx[-1]) - int(idx[0]) + 1 == idx.numel():
        return x[..., int(idx[0]) : int(idx[-1]) + 1].mean(-1)
    return x[..., rows].mean(-1)


def _other_mean(m: torch.Tensor, cnt: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """``[..., query, dim]``: mean of ``x [..., key, dim]`` over each query's other keys (``m [query, key]``),
    one ``[n, n] @ [n, dim]`` product instead of a masked ``[query, key]`` matrix per head."""
    return (m @ x) / cnt.unsqueeze(-1)


def _row_dot(q: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """``[layer, kv_head, group, query]``: ``q_i . x_i`` for grouped queries ``q [layer, kv_head, group,
    query, dim]`` and one ``x [layer, kv_head, query, dim]`` per KV head (broadcast over the group; a
    single row ``x [layer, kv_head, 1, dim]`` is broadcast over the queries too). A broadcast product
    and a sum: a batched matrix-vector product is several times slower at these sizes."""
    return (q * x.unsqueeze(2)).sum(-1)


def geometry_summary(  # long: three measures from one pass that shares the per-KV-head means of the keys
    query_pre: torch.Tensor,
    query: torch.Tensor,
    key_pre: torch.Tensor,
    key: torch.Tensor,
    scaling: torch.Tensor | float,
    causal: bool,
) -> dict[str, torch.Tensor]:
    """All geometry measures of one sample; ``[layer, head]`` (key norms ``[layer, kv_head]``).

    The values of :func:`key_norms`, :func:`sink_alignment` (before and after RoPE, suffixes ``_pre`` and
    ``_post``) and :func:`logit_decomposition`, computed together and without any ``[query, key]`` matrix:
    every mean over a query's other keys is linear, so ``mean_j cos(q_i, k_j) = q̂_i . mean_j k̂_j`` and
    ``mean_j q_i . k_j = q_i . mean_j k_j``, where ``mean_j`` runs over the keys the query sees (one
    ``[n, n] @ [n, dim]`` product per KV head); query heads are grouped by the KV head they read, so no
    key is copied per head. The same numbers as those functions up to float32 rounding (the sums are
    taken in another order; tested).
    """
    _check(query, key)
    _check(query_pre, key_pre)
    layers, heads, n, dim = query.shape
    kv = key.shape[1]
    if heads % kv:
        raise ValueError(f"{heads} query heads cannot share {kv} KV heads evenly")
    m = other_key_mask(n, causal, query.device).float()  # [query, key]
    cnt = m.sum(-1)  # [query]
    rows = cnt > 0  # queries with at least one other key
    if not rows.any():
        raise ValueError("no query has a key other than position 0 (need at least 3 tokens in a causal model)")
    cnt = cnt.clamp_min(1)

    def per_head(x: torch.Tensor) -> torch.Tensor:  # [layer, kv_head, group, ...] -> [layer, head, ...]
        return x.reshape(layers, heads, *x.shape[3:])

    out: dict[str, torch.Tensor] = {}
    for tag, (q_flat, k) in {"pre": (query_pre.float(), key_pre.float()), "post": (query.float(), key.float())}.items():
        q = q_flat.reshape(layers, kv, heads // kv, n, dim)  # [layer, kv_head, group, query, dim]
        q_norm = q.norm(dim=-1)  # [layer, kv_head, group, query]
        qn = q_norm.clamp_min(_EPS)
        kn = k.norm(dim=-1)  # [layer, kv_head, key]
        k_unit = k / kn.unsqueeze(-1).clamp_min(_EPS)  # [layer, kv_head, key, dim]
        to_sink = _row_dot(q, k_unit[:, :, :1])  # [layer, kv_head, group, query]: q_i . k̂_0
        b0 = per_head(to_sink / qn)  # [layer, head, query]: cosine to key 0
        cbar = per_head(_row_dot(q, _other_mean(m, cnt, k_unit)) / qn)  # [layer, head, query]
        out[f"cos_to_sink_{tag}"] = b0[..., 1:].mean(-1)
        out[f"cos_to_others_{tag}"] = _row_mean(cbar, rows)
        if tag == "pre":
            continue
        seen = m.sum(0) > 0  # [key]: keys some query sees as an other key
        other = kn[..., seen].mean(-1) if seen.any() else kn[..., 1:].mean(-1)
        out.update(key0_norm=kn[..., 0], other_key_norm=other, key_norm_ratio=kn[..., 0] / other.clamp_min(_EPS))
        s = torch.as_tensor(scaling, dtype=torch.float32, device=kn.device)
        s = s.reshape(-1, 1, 1) if s.dim() else s  # per layer, broadcast over [head, query]
        q_norm = per_head(q_norm)  # [layer, head, query]
        log_kn = kn.clamp_min(_EPS).log()  # [layer, kv_head, key]
        means = _other_mean(m, cnt, torch.stack([kn, log_kn], -1))  # [layer, kv_head, query, 2]
        kbar, logk_bar = expand_kv(means, heads).unbind(-1)  # each [layer, head, query]
        a0 = expand_kv(kn[..., :1, None], heads)[..., 0].expand_as(kbar)  # [layer, head, query]: |k_0|
        log_a0 = expand_kv(log_kn[..., :1, None], heads)[..., 0]  # [layer, head, 1]
        sink_dot = per_head(to_sink * kn[:, :, None, :1].clamp_min(_EPS))  # [layer, head, query]: q_i . k_0
        other_dot = per_head(_row_dot(q, _other_mean(m, cnt, k)))  # [layer, head, query]: q_i . mean k_j
        scale = s * q_norm  # [layer, head, query]
        per_query = {
            "sink_logit": s * sink_dot,
            "other_logit": s * other_dot,
            "log_query_norm": q_norm.clamp_min(_EPS).log(),
            "log_sink_key_norm": log_a0.expand_as(kbar),
            "sink_cos": b0,
            "log_key_norm_ratio": log_a0 - logk_bar,
            "norm_part": scale * (a0 - kbar) * (b0 + cbar) / 2,
            "alignment_part": scale * (b0 - cbar) * (a0 + kbar) / 2,
            "typical_logit": scale * kbar * cbar,
        }
        stacked = _row_mean(torch.stack(list(per_query.values())), rows)  # [measure, layer, head]
        out.update(zip(per_query, stacked.unbind(0), strict=True))
    first = ["key0_norm", "other_key_norm", "key_norm_ratio"]  # the order of the separate functions
    return {name: out[name] for name in first + [k for k in out if k not in first]}
