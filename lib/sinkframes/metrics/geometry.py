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


def other_key_mask(n: int, causal: bool) -> torch.Tensor:
    """``[query, key]`` bool: key ``j >= 1`` visible to query ``i >= 1``, ``j != i``."""
    m = eligible_pairs(n, causal)
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
    seen = other_key_mask(n, causal).any(0)  # [token]
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
    m = other_key_mask(n, causal).to(cos.dtype)  # [query, key]
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
    s = torch.as_tensor(scaling, dtype=torch.float32)
    s = s.reshape(-1, 1, 1) if s.dim() else s  # per layer, broadcast over [head, query]
    qn = q.norm(dim=-1)  # [layer, head, token]
    kn = k.norm(dim=-1)  # [layer, head, token]
    cos = cosines(query, key)  # [layer, head, query, key]
    m = other_key_mask(n, causal).to(q.dtype)  # [query, key]
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


def _unit(x: torch.Tensor) -> torch.Tensor:
    """``x`` divided by its norm along the last dim (at least ``_EPS``), as :func:`cosines` does."""
    return x / x.norm(dim=-1, keepdim=True).clamp_min(_EPS)


def _row_mean(x: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """Mean over the last dim restricted to ``rows``; a slice (no copy) when they form one run."""
    idx = torch.nonzero(rows).flatten()
    if idx.numel() and int(idx[-1]) - int(idx[0]) + 1 == idx.numel():
        return x[..., int(idx[0]) : int(idx[-1]) + 1].mean(-1)
    return x[..., rows].mean(-1)


def geometry_summary(
    query_pre: torch.Tensor,
    query: torch.Tensor,
    key_pre: torch.Tensor,
    key: torch.Tensor,
    scaling: torch.Tensor | float,
    causal: bool,
) -> dict[str, torch.Tensor]:
    """All geometry measures of one sample; ``[layer, head]`` (key norms ``[layer, kv_head]``).

    The values of :func:`key_norms`, :func:`sink_alignment` (before and after RoPE, suffixes ``_pre`` and
    ``_post``) and :func:`logit_decomposition`, computed together so that nothing is computed twice (the
    cosines after RoPE serve both the alignment and the logit split, key norms are taken once per KV head).
    The same arithmetic as those functions on the same shapes, so the same numbers to the bit.
    """
    _check(query, key)
    _check(query_pre, key_pre)
    n = query.shape[-2]
    group = query.shape[1] // key.shape[1]
    m = other_key_mask(n, causal).float()  # [query, key]
    cnt = m.sum(-1)  # [query]
    rows = cnt > 0  # queries with at least one other key
    if not rows.any():
        raise ValueError("no query has a key other than position 0 (need at least 3 tokens in a causal model)")
    cnt = cnt.clamp_min(1)
    out: dict[str, torch.Tensor] = {}
    for tag, (q, k) in {"pre": (query_pre.float(), key_pre.float()), "post": (query.float(), key.float())}.items():
        k_h = expand_kv(k, q.shape[1])  # [layer, head, key, dim]
        cos = _unit(q) @ _unit(k_h).transpose(-1, -2)  # [layer, head, query, key]
        cbar = (cos * m).sum(-1) / cnt  # [layer, head, query]: mean cosine to the other keys
        out[f"cos_to_sink_{tag}"] = cos[..., 1:, 0].mean(-1)
        out[f"cos_to_others_{tag}"] = _row_mean(cbar, rows)
        if tag == "pre":
            continue
        kn = k.norm(dim=-1)  # [layer, kv_head, key]
        seen = m.sum(0) > 0  # [key]: keys some query sees as an other key
        other = kn[..., seen].mean(-1) if seen.any() else kn[..., 1:].mean(-1)
        out.update(key0_norm=kn[..., 0], other_key_norm=other, key_norm_ratio=kn[..., 0] / other.clamp_min(_EPS))
        s = torch.as_tensor(scaling, dtype=torch.float32)
        s = s.reshape(-1, 1, 1) if s.dim() else s  # per layer, broadcast over [head, query]
        qn = q.norm(dim=-1)  # [layer, head, query]
        kn_h = kn.repeat_interleave(group, dim=1)  # [layer, head, key]
        kbar = (kn_h.unsqueeze(-2) * m).sum(-1) / cnt  # [layer, head, query]: mean norm of the other keys
        log_kn = kn_h.clamp_min(_EPS).log()  # [layer, head, key]
        logk_bar = (log_kn.unsqueeze(-2) * m).sum(-1) / cnt  # [layer, head, query]
        a0 = kn_h[..., 0:1].expand_as(kbar)  # [layer, head, query]
        b0 = cos[..., 0]  # [layer, head, query]
        scale = s * qn  # [layer, head, query]
        logits = (s.unsqueeze(-1) if s.dim() else s) * (q @ k_h.transpose(-1, -2))  # [layer, head, query, key]
        per_query = {
            "sink_logit": logits[..., 0],
            "other_logit": (logits * m).sum(-1) / cnt,
            "log_query_norm": qn.clamp_min(_EPS).log(),
            "log_sink_key_norm": log_kn[..., 0:1].expand_as(kbar),
            "sink_cos": b0,
            "log_key_norm_ratio": log_kn[..., 0:1] - logk_bar,
            "norm_part": scale * (a0 - kbar) * (b0 + cbar) / 2,
            "alignment_part": scale * (b0 - cbar) * (a0 + kbar) / 2,
            "typical_logit": scale * kbar * cbar,
        }
        stacked = _row_mean(torch.stack(list(per_query.values())), rows)  # [measure, layer, head]
        out.update(zip(per_query, stacked.unbind(0), strict=True))
    first = ["key0_norm", "other_key_norm", "key_norm_ratio"]  # the order of the separate functions
    return {name: out[name] for name in first + [k for k in out if k not in first]}
