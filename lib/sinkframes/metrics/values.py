"""Value-space measures (paper section 5.4, appendix C.2), faithful and corrected.

``mode="faithful"`` reproduces the official ``attention_value`` and ``reference_point`` notebooks
(official-code spec, sections 7 and 8), defects included:

- the "value vectors" are residual-stream hidden states ``X^l`` (``hidden_states[l]``), and the
  attention is the head average ``Ā``;
- attention entropy keeps entries ``> 100 * float32 eps`` and renormalizes; transformation magnitude
  rescales both states of a layer to a maximum of 1e3 when they exceed it (so magnitudes are not
  comparable across layers) and measures ``|X^{l+1}_i - X^l_i|``;
- geometric-semantic alignment correlates ``Ā_ij`` with ``cos(X_i, X_j)`` over all pairs ``i != j``,
  including the zeros a causal mask puts above the diagonal;
- reference tokens: column mean of ``Ā`` over all rows > 0.1 (else the top 10 %, capped at the top
  30 %); reference tokens themselves get the placeholders (0.5, 0.5, 0) that are averaged in.

``mode="corrected"`` measures what the paper describes, per head: the value vectors ``W_V h`` (GQA:
query head h reads KV head ``h // (H/KV)``), the real attention output (``A^h V^h`` before the output
projection, the module's output after it), full-precision entropies over the rows that have a
choice, correlations over the pairs a query can actually see, reference tokens by the per-head rule
of ``metrics.sinks`` and no placeholders. Every function returns per-layer (or per-layer-and-head)
values for ONE sample; first-vs-last "fold" comparisons are made on the aggregates
(:func:`first_last`), as both a difference (what the paper's "fold" numbers are) and a ratio.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..types import Mode, check_mode
from .sinks import eligible_pairs, reference_tokens

FAITHFUL_ENTROPY_EPS = 100 * torch.finfo(torch.float32).eps  # ≈ 1.19e-5
FAITHFUL_REFERENCE_THRESHOLD = 0.1
PLACEHOLDERS = (0.5, 0.5, 0.0)  # relative magnitude, directional guidance, information change of reference tokens


def pearson(x: torch.Tensor, y: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Pearson correlation along the last dim (only where ``mask``); 0 where either side is constant.

    ``x`` and ``y`` broadcast against each other. A one-dimensional ``mask`` (the same entries for every
    row) selects those entries first, so the sums run over them alone; any other mask weights them.
    (The official code returns 0 for a constant vector; NaN would be the strict answer.)
    """
    x, y = x.float(), y.float()
    if mask is None or mask.dim() == 1:
        if mask is not None:
            idx = torch.nonzero(mask).flatten()
            x, y = x.index_select(-1, idx), y.index_select(-1, idx)
        dx, dy = x - x.mean(-1, keepdim=True), y - y.mean(-1, keepdim=True)
    else:
        w = mask.to(x.dtype).expand_as(x)
        cnt = w.sum(-1).clamp_min(1)
        mx, my = (x * w).sum(-1) / cnt, (y * w).sum(-1) / cnt
        dx, dy = (x - mx.unsqueeze(-1)) * w, (y - my.unsqueeze(-1)) * w
    sxy, sxx, syy = (dx * dy).sum(-1), (dx * dx).sum(-1), (dy * dy).sum(-1)
    ok = (sxx > 1e-20) & (syy > 1e-20)
    r = sxy / (sxx.sqrt() * syy.sqrt()).clamp_min(1e-30)
    return torch.where(ok, r, torch.zeros_like(r)).float()


def pair_entries(m: torch.Tensor, pairs: torch.Tensor) -> torch.Tensor:
    """``[..., pair]``: the entries of ``m [..., query, key]`` where ``pairs [query, key]`` is True, in
    row-major order; one gather, whatever the strides of ``m``."""
    i, j = torch.nonzero(pairs, as_tuple=True)
    return m[..., i, j]


# ---------------------------------------------------------------------------------------------
# attention entropy


def row_entropy(attn: torch.Tensor, mode: Mode = "corrected") -> torch.Tensor:
    """Shannon entropy (nats) of every attention row, ``[..., query]``.

    faithful: entries ``<= 1.19e-5`` dropped, the rest renormalized, NaN -> 0.
    corrected: the full row, ``0 log 0 = 0`` (entries below 0, which a softmax never gives, count as 0).
    """
    if check_mode(mode) == "faithful":
        a = torch.nan_to_num(attn.double(), nan=0.0)
        keep = a > FAITHFUL_ENTROPY_EPS
        p = torch.where(keep, a, torch.zeros_like(a))
        p = p / p.sum(-1, keepdim=True).clamp_min(1e-300)
        h = -(torch.where(keep, p * p.clamp_min(1e-300).log(), torch.zeros_like(p))).sum(-1)
        return torch.nan_to_num(h, nan=0.0).float()
    a = attn.float().clamp_min(0)
    return -torch.special.xlogy(a, a).sum(-1)


def query_rows(n: int, causal: bool, device: torch.device) -> torch.Tensor:
    """``[query]`` bool: rows that have a choice (a causal query 0 can only look at itself)."""
    rows = torch.ones(n, dtype=torch.bool, device=device)
    if causal and n > 1:
        rows[0] = False
    return rows


# ---------------------------------------------------------------------------------------------
# transformation magnitude


def faithful_magnitude(pre: torch.Tensor, post: torch.Tensor) -> torch.Tensor:
    """``[layer, token]``: official transformation magnitude ``|post_i - pre_i|`` after its rescale rule.

    ``pre``/``post``: ``[layer, token, hidden]`` (``X^l`` and ``X^{l+1}``). NaN/inf -> 0; if a
    layer's largest absolute entry exceeds 1e3, both states of that layer are scaled to 1e3; the
    difference is clipped to ``[-1e3, 1e3]`` elementwise, and the norm to ``[0, 1e6]``.
    """
    pre = torch.nan_to_num(pre.double(), nan=0.0, posinf=0.0, neginf=0.0)
    post = torch.nan_to_num(post.double(), nan=0.0, posinf=0.0, neginf=0.0)
    return _magnitude(pre, post, pre.abs().amax((-1, -2)), post.abs().amax((-1, -2)))


def _magnitude(pre: torch.Tensor, post: torch.Tensor, pre_peak: torch.Tensor, post_peak: torch.Tensor) -> torch.Tensor:
    """:func:`faithful_magnitude` on cleaned float64 states whose per-layer largest ``|entry|`` is known."""
    m = torch.maximum(pre_peak, post_peak)  # [layer]
    big = m > 1e3
    if not bool(big.any()):  # the scale factor is 1 everywhere: skip two passes that would change nothing
        delta = post - pre
        if float(m.max()) > 500:  # |post - pre| <= 2 max|entry|: below 500 the clip cannot act
            delta.clamp_(-1e3, 1e3)
        return delta.norm(dim=-1).clamp(0, 1e6).float()
    f = torch.where(big, 1e3 / m.clamp_min(1e-300), torch.ones_like(m)).view(-1, 1, 1)
    delta = (post - pre).mul_(f).clamp_(-1e3, 1e3)  # = post f - pre f, up to float64 rounding
    return delta.norm(dim=-1).clamp(0, 1e6).float()


def output_magnitude(output: torch.Tensor) -> torch.Tensor:
    """``[layer, token]``: norm of the attention module's output (after the output projection):
    how far attention moves each token's residual stream."""
    return output.float().norm(dim=-1)


# ---------------------------------------------------------------------------------------------
# geometric-semantic alignment


def cosine_matrix(x: torch.Tensor, tol: float = 1e-8) -> torch.Tensor:
    """``[..., token, token]`` cosine similarity; 0 where a norm is below ``tol``, 1 on the diagonal."""
    return cosine_from_gram(gram_matrix(x.float()), tol)


def gram_matrix(x: torch.Tensor) -> torch.Tensor:
    """``[..., token, token]``: ``x x^T`` of ``x [..., token, dim]``, made exactly symmetric (a product's
    two halves may round differently, and a measure of a symmetric matrix must not see that)."""
    g = x @ x.transpose(-1, -2)
    return (g + g.transpose(-1, -2)) / 2


def cosine_from_gram(gram: torch.Tensor, tol: float = 1e-8) -> torch.Tensor:
    """:func:`cosine_matrix` (float32) from the Gram matrix ``x x^T`` (``[..., token, token]``, computed in
    its own dtype): the norms are the square roots of its diagonal, so the states are read once, by the
    product that forms it."""
    nrm = torch.diagonal(gram, dim1=-2, dim2=-1).clamp_min(0).sqrt()  # [..., token]
    ok = nrm > tol
    inv = torch.where(ok, 1 / nrm.clamp_min(tol), 0.0)  # [..., token]
    s = gram * (inv.unsqueeze(-1) * inv.unsqueeze(-2))  # symmetric where the Gram matrix is
    eye = torch.eye(s.shape[-1], dtype=torch.bool, device=s.device)
    return torch.where(eye, 1.0, s).float()


def faithful_alignment(avg_attn: torch.Tensor, hidden: torch.Tensor) -> torch.Tensor:
    """``[layer]``: Pearson over all pairs ``i != j`` of (``Ā_ij``, ``cos(X_i, X_j)``), causal zeros included."""
    x = torch.nan_to_num(hidden.float(), nan=0.0, posinf=0.0, neginf=0.0)
    return _alignment(avg_attn, gram_matrix(x))


def _clean_states(hidden: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``hidden`` in float64 with NaN/inf set to 0 (the official cleaning), and each layer's largest
    ``|entry|`` (``[layer]`` float64, shared by the magnitude and decomposition rescale rules).
    The extremes are found first; when they are finite, nothing needs cleaning and the largest ``|entry|``
    is read from them (NaN and inf propagate through min and max)."""
    flat = hidden.flatten(1)
    lo, hi = flat.amin(-1), flat.amax(-1)  # [layer] each (two reductions: ``aminmax`` is slower here)
    if bool(torch.isfinite(lo).all() and torch.isfinite(hi).all()):
        return hidden.double(), torch.maximum(-lo, hi).double()
    x = torch.nan_to_num(hidden.double(), nan=0.0, posinf=0.0, neginf=0.0)
    return x, x.abs().amax((-1, -2))


def _alignment(avg_attn: torch.Tensor, gram: torch.Tensor) -> torch.Tensor:
    """:func:`faithful_alignment` from the Gram matrices ``X X^T`` (``[layer, token, token]``) of cleaned states."""
    off = ~torch.eye(avg_attn.shape[-1], dtype=torch.bool, device=avg_attn.device)  # [query, key]
    s = cosine_from_gram(gram)  # [layer, token, token]
    return pearson(pair_entries(avg_attn, off), pair_entries(s, off))


def corrected_alignment(attn: torch.Tensor, value: torch.Tensor, causal: bool) -> torch.Tensor:
    """``[layer, head]``: Pearson over the pairs a query can see (``i > j`` causal, ``i != j``
    otherwise) of (``A^h_ij``, ``cos(v_i, v_j)``) with the head's own value vectors.

    The cosines are computed once per KV head and broadcast over the query heads that read it.
    """
    layers, heads, n, _ = attn.shape
    kv = value.shape[1]
    if heads % kv:
        raise ValueError(f"{heads} query heads cannot share {kv} KV heads evenly")
    pairs = eligible_pairs(n, causal, attn.device)  # [query, key]
    s = pair_entries(cosine_matrix(value), pairs)  # [layer, kv_head, pair]
    a = pair_entries(attn, pairs).reshape(layers, kv, heads // kv, -1)  # [layer, kv_head, group, pair]
    return pearson(a, s.unsqueeze(2)).reshape(layers, heads)  # [layer, kv_head, group] -> [layer, head]


# ---------------------------------------------------------------------------------------------
# reference tokens and the decomposition of the attention output


def faithful_reference_set(avg_attn: torch.Tensor) -> torch.Tensor:
    """``[layer, token]`` bool: official reference tokens of the head-averaged attention.

    Column mean over all rows > 0.1; if none, the top ``max(1, floor(0.1 n))`` columns; at most
    the top ``max(1, floor(0.3 n))`` columns.
    """
    a = torch.nan_to_num(avg_attn.double(), nan=0.0, posinf=1.0)
    n = a.shape[-1]
    col = a.mean(-2)  # [layer, key]
    order = col.argsort(-1, descending=True)
    rank = torch.empty_like(order)
    rank.scatter_(-1, order, torch.arange(n, device=order.device).expand_as(order))  # rank of each column by its mean
    above = col > FAITHFUL_REFERENCE_THRESHOLD
    fallback = rank < max(1, math.floor(0.1 * n))
    chosen = torch.where(above.any(-1, keepdim=True), above, fallback)
    return chosen & (rank < max(1, math.floor(0.3 * n)))


def reference_mix(weights: torch.Tensor, refs: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """``[..., query, dim]``: ``Σ_{j ∈ R} w_ij x_j``, the part of each mixture that comes from the reference
    tokens ``R``.

    ``weights [..., query, key]``, ``refs [..., key]`` bool, ``x [..., key, dim]``. Only the reference
    columns are read (gathered, at most the largest reference count per matrix, padded with zero
    weights), so the cost is that of ``|R|`` columns rather than a masked product over all ``n`` (which is
    used when the largest count exceeds half the columns).
    """
    k = int(refs.sum(-1).max()) if refs.numel() else 0
    if k == 0:
        return weights.new_zeros(*weights.shape[:-1], x.shape[-1])
    if 2 * k > refs.shape[-1]:  # most columns are references somewhere: a masked product is cheaper
        return (weights * refs.unsqueeze(-2)) @ x
    cols = torch.argsort((~refs).to(torch.int8), dim=-1, stable=True)[..., :k]  # [..., k]: reference columns first
    valid = refs.gather(-1, cols)  # [..., k]: False on padding
    w = weights.gather(-1, cols.unsqueeze(-2).expand(*weights.shape[:-1], k)) * valid.unsqueeze(-2)  # [..., query, k]
    xs = x.expand(*refs.shape, x.shape[-1]).gather(-2, cols.unsqueeze(-1).expand(*cols.shape, x.shape[-1]))
    return w @ xs  # [..., query, dim]


def faithful_decomposition(avg_attn: torch.Tensor, hidden_in: torch.Tensor) -> dict[str, torch.Tensor]:
    """Official reference-point decomposition, per ``[layer]`` (means over all n tokens).

    ``avg_attn [layer, query, key]``; ``hidden_in [layer, token, hidden]`` = ``X^l`` entering layer l.
    For token ``i`` outside R: ``y = Σ_j Ã_ij X_j``, ``r = Σ_{j∈R} Ã_ij X_j``, ``u = Σ_{j∉R} Ã_ij X_j``;
    relative magnitude ``clip(|r|/|y|, 0, 1)``, directional guidance ``(cos(r, y) + 1)/2``,
    information change ``|y - u|``, computed as ``|r|``, which it equals exactly in real arithmetic (the
    official code forms ``y`` and ``u`` and subtracts; the two differ by the rounding of ``y``).
    Reference tokens get (0.5, 0.5, 0), averaged in.
    """
    x, peak = _clean_states(hidden_in)
    return _decomposition(avg_attn, gram_matrix(x), peak)


def _decomposition(avg_attn: torch.Tensor, gram: torch.Tensor, peak: torch.Tensor) -> dict[str, torch.Tensor]:
    """:func:`faithful_decomposition` from the Gram matrices ``X X^T`` (``[layer, token, token]``) of the
    cleaned states, whose per-layer largest ``|entry|`` (``peak [layer]``) is known.

    Every quantity the measures need is a quadratic form in the Gram matrix, so no mixture is formed:
    with ``a_i`` the renormalized row and ``b_i`` its reference part, ``|y_i|^2 = a_i G a_i``,
    ``|r_i|^2 = b_i G b_i`` and ``r_i . y_i = b_i G a_i``. ``G`` is float64: a quadratic form loses the
    digits that cancel, so a mixture much shorter than the states it mixes needs them. The official
    rescale (states scaled to a largest entry of 1e5) scales ``G`` by the square of the factor."""
    a = torch.nan_to_num(avg_attn.double(), nan=0.0, posinf=1.0)
    g = gram.double()
    mx = peak.view(-1, 1, 1)  # [layer, 1, 1]
    if bool((mx > 1e5).any()):
        g = torch.where(mx > 1e5, g * (1e5 / mx.clamp_min(1e-300)) ** 2, g)
    refs = faithful_reference_set(a)  # [layer, token]
    rs = a.sum(-1, keepdim=True)
    at = torch.where(rs > 1e-10, a / rs.clamp_min(1e-300), torch.zeros_like(a))  # row-renormalized
    ar = at * refs.unsqueeze(-2)  # [layer, query, key]: the reference columns only
    at_g = at @ g  # [layer, query, key]
    ny = (at_g * at).sum(-1).clamp_min(0).sqrt()  # [layer, token]: |y|
    nr = ((ar @ g) * ar).sum(-1).clamp_min(0).sqrt()  # [layer, token]: |r|
    rel = torch.where(ny < 1e-10, torch.where(nr < 1e-10, 0.0, 1.0), (nr / ny.clamp_min(1e-300)).clamp(0, 1))
    cos = (at_g * ar).sum(-1) / (nr * ny).clamp_min(1e-300)
    direc = torch.where((nr < 1e-10) | (ny < 1e-10), 0.5, (cos + 1) / 2)
    info = nr.clamp(max=1e6)  # |y - u| = |r|
    rel = torch.where(refs, PLACEHOLDERS[0], rel)
    direc = torch.where(refs, PLACEHOLDERS[1], direc)
    info = torch.where(refs, PLACEHOLDERS[2], info)

    def mean(v: torch.Tensor) -> torch.Tensor:
        ok = torch.isfinite(v)
        return (torch.where(ok, v, 0.0).sum(-1) / ok.sum(-1).clamp_min(1)).float()

    return {
        "relative_magnitude": mean(rel),
        "directional_guidance": mean(direc),
        "information_change": mean(info),
        "reference_count": refs.sum(-1).float(),
    }


def corrected_decomposition(
    attn: torch.Tensor, value: torch.Tensor, output_heads: torch.Tensor, causal: bool, refs: torch.Tensor | None = None
) -> dict[str, torch.Tensor]:
    """Per ``[layer, head]``: split each head's real output ``o_i = Σ_j A_ij v_j`` into its reference
    part ``r_i = Σ_{j∈R} A_ij v_j`` and the rest, over queries ``i`` that have a choice and are not
    reference tokens themselves (no placeholders).

    - ``relative_magnitude``: mean ``|r_i| / |o_i|`` (not clipped: it exceeds 1 when the rest
      cancels part of the reference pull);
    - ``directional_guidance``: mean ``(cos(r_i, o_i) + 1)/2`` (same scale as the faithful one);
    - ``reference_count``: reference tokens of the head (``metrics.sinks.reference_tokens``).
    NaN where a head has no reference token or no eligible query.
    """
    if refs is None:
        refs = reference_tokens(attn, causal)  # [layer, head, token]
    layers, heads, n, _ = attn.shape
    kv = value.shape[1]
    if heads % kv:
        raise ValueError(f"{heads} query heads cannot share {kv} KV heads evenly")
    grouped = (layers, kv, heads // kv)  # query heads grouped by the KV head they read: values are not copied
    r = reference_mix(attn.float().reshape(*grouped, n, n), refs.reshape(*grouped, n),
                      value.float().unsqueeze(2)).reshape(layers, heads, n, -1)  # [layer, head, token, dim]
    o = output_heads.float()
    nr, no = r.norm(dim=-1), o.norm(dim=-1)  # [layer, head, token]
    ok = (~refs) & query_rows(n, causal, attn.device) & refs.any(-1, keepdim=True) & (no > 1e-12)
    rel = nr / no.clamp_min(1e-12)
    cos = (r * o).sum(-1) / (nr * no).clamp_min(1e-12)
    cnt = ok.sum(-1)

    def mean(x: torch.Tensor) -> torch.Tensor:
        m = torch.where(ok, x, 0.0).sum(-1) / cnt.clamp_min(1)
        return torch.where(cnt > 0, m, torch.full_like(m, float("nan")))

    return {
        "relative_magnitude": mean(rel),
        "directional_guidance": mean((cos + 1) / 2),
        "reference_count": refs.sum(-1).float(),
    }


# ---------------------------------------------------------------------------------------------
# one sample, both modes


def faithful_summary(attn: torch.Tensor, hidden: torch.Tensor) -> dict[str, torch.Tensor]:
    """All faithful measures of one sample, each ``[layer]``.

    ``attn [layer, head, query, key]``; ``hidden [layer + 1, token, hidden]`` (HF hidden states).
    """
    if hidden is None or hidden.shape[0] != attn.shape[0] + 1:
        raise ValueError("faithful value-space measures need the hidden states [layer + 1, token, hidden]")
    avg = torch.nan_to_num(attn.float().mean(1), nan=0.0)  # [layer, query, key]
    h_tok = row_entropy(avg, "faithful")  # [layer, query]
    x, peak = _clean_states(hidden)  # [layer + 1, token, hidden] float64, [layer + 1]
    mag = _magnitude(x[:-1], x[1:], peak[:-1], peak[1:])  # [layer, token]
    gram = gram_matrix(x[:-1])  # [layer, token, token] float64: shared by alignment and decomposition
    out = {
        "entropy": h_tok.mean(-1),
        "magnitude": mag.mean(-1),
        "alignment": _alignment(avg, gram),
        "entropy_magnitude": pearson(h_tok, mag),
    }
    out.update(_decomposition(avg, gram, peak[:-1]))
    return out


def corrected_summary(
    attn: torch.Tensor, value: torch.Tensor, output_heads: torch.Tensor, output: torch.Tensor, causal: bool
) -> dict[str, torch.Tensor]:
    """All corrected measures of one sample: ``[layer, head]`` per head, ``[layer]`` per token mix."""
    n = attn.shape[-1]
    rows = query_rows(n, causal, attn.device)
    h = row_entropy(attn, "corrected")  # [layer, head, query]
    mag = output_magnitude(output)  # [layer, token]
    out = {
        "entropy": h[..., rows].mean(-1),
        "magnitude": mag[..., rows].mean(-1),
        "alignment": corrected_alignment(attn, value, causal),
        "entropy_magnitude": pearson(h.mean(1)[..., rows], mag[..., rows]),
    }
    out.update(corrected_decomposition(attn, value, output_heads, causal))
    return out


def first_last(per_layer: torch.Tensor | list[float]) -> dict[str, float]:
    """First and last layer of a per-layer profile, their difference (the paper's "fold") and ratio."""
    x = torch.tensor(np.asarray(per_layer, dtype=np.float64), device="cpu")
    first, last = float(x[0]), float(x[-1])
    return {
        "first": first,
        "last": last,
        "difference": last - first,
        "ratio": last / first if first != 0 else float("nan"),
    }
