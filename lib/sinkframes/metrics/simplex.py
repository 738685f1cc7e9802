"""Geometry of the probability simplex that softmax maps logits onto (paper §3.2, appendix A).

An attention row over ``m`` keys is a point ``p`` of the simplex ``{p_j >= 0, sum_j p_j = 1}``.
The natural metric there is the **Fisher-Rao metric** of the categorical distribution,
``<u, v>_p = sum_j u_j v_j / p_j`` for tangent vectors (``sum u = sum v = 0``). The map
``p -> 2 sqrt(p)`` sends the simplex isometrically onto the positive orthant of the sphere of
radius 2, so the geodesic (Fisher-Rao) distance has the closed form

    d(p, q) = 2 arccos( sum_j sqrt(p_j q_j) )     (the Bhattacharyya angle, doubled)

which is ``pi`` between two vertices and ``2 arccos(1 / sqrt(m))`` from a vertex to the barycentre.

Softmax ``p = softmax(z)`` has the Jacobian ``J = diag(p) - p p^T``. A logit change ``dz`` moves
``p`` by ``dp = J dz``, whose Fisher-Rao length is ``sqrt(Var_p(dz))`` (the spread of ``dz``
under ``p``): near a vertex almost every logit change leaves the row where it is, near the
barycentre it moves the most. For isotropic logit noise of standard deviation ``sigma`` the
expected squared length is ``sigma^2 (1 - sum_j p_j^2)``.

Tensors hold distributions on their last axis. Functions accept numpy arrays or torch tensors
where stated and return the same kind.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from ..code_digest import reducer_version
from ..tensors import require_finite


def _as_prob(p: torch.Tensor | np.ndarray, name: str = "p") -> torch.Tensor:
    t = torch.as_tensor(p, dtype=torch.float64, device="cpu") if isinstance(p, np.ndarray) else p
    if t.dim() == 0:
        raise ValueError(f"{name} must have a last axis holding a distribution, got a scalar")
    if (t < -1e-6).any():
        raise ValueError(f"{name} has negative entries; pass probabilities, not logits")
    s = t.sum(-1)
    if not torch.allclose(s, torch.ones_like(s), atol=1e-3):
        raise ValueError(
            f"{name} does not sum to 1 on its last axis (sums range {s.min().item():.4g}..{s.max().item():.4g})"
        )
    return t.clamp(min=0)


def _back(t: torch.Tensor, like: torch.Tensor | np.ndarray) -> torch.Tensor | np.ndarray:
    return t.numpy() if isinstance(like, np.ndarray) else t


# --- the metric and its distance -------------------------------------------------------------


def fisher_rao_metric(p: torch.Tensor | np.ndarray) -> torch.Tensor | np.ndarray:
    """``[..., m, m]``: the Fisher information matrix ``diag(1 / p)`` of the categorical
    distribution, in the ambient coordinates (apply it to tangent vectors, ``sum v = 0``)."""
    t = _as_prob(p)
    if (t <= 0).any():
        raise ValueError("the Fisher-Rao metric is defined in the interior of the simplex only (every p_j > 0)")
    return _back(torch.diag_embed(1.0 / t), p)


def fisher_rao_norm(p: torch.Tensor | np.ndarray, v: torch.Tensor | np.ndarray) -> torch.Tensor | np.ndarray:
    """``[...]``: length ``sqrt(sum_j v_j^2 / p_j)`` of the tangent vector ``v`` at ``p``."""
    t = _as_prob(p)
    vt = torch.as_tensor(v, dtype=t.dtype, device=t.device)
    if not torch.allclose(vt.sum(-1), torch.zeros((), dtype=t.dtype, device=t.device), atol=1e-6):
        raise ValueError("a tangent vector of the simplex sums to 0 over its last axis")
    return _back((vt.pow(2) / t).sum(-1).sqrt(), p)


def bhattacharyya_coefficient(p: torch.Tensor | np.ndarray, q: torch.Tensor | np.ndarray) -> torch.Tensor | np.ndarray:
    """``[...]``: ``sum_j sqrt(p_j q_j)`` (1 for equal distributions, 0 for disjoint supports)."""
    a, b = _as_prob(p), _as_prob(q, "q")
    return _back((a * b.to(a.dtype)).sqrt().sum(-1).clamp(0.0, 1.0), p)


def fisher_rao_distance(p: torch.Tensor | np.ndarray, q: torch.Tensor | np.ndarray) -> torch.Tensor | np.ndarray:
    """``[...]``: geodesic distance ``2 arccos(sum sqrt(p q))`` in ``[0, pi]``."""
    bc = torch.as_tensor(bhattacharyya_coefficient(p, q), device="cpu" if isinstance(p, np.ndarray) else p.device)
    return _back(2.0 * torch.arccos(bc), p)


def sphere_embedding(p: torch.Tensor | np.ndarray) -> torch.Tensor | np.ndarray:
    """``2 sqrt(p)``: the isometry onto the positive orthant of the sphere of radius 2; the arc
    length between two images is their Fisher-Rao distance."""
    return _back(2.0 * _as_prob(p).sqrt(), p)


def distance_to_nearest_vertex(p: torch.Tensor | np.ndarray) -> torch.Tensor | np.ndarray:
    """``[...]``: ``2 arccos(sqrt(max_j p_j))``, the distance to the closest one-hot row."""
    t = _as_prob(p)
    return _back(2.0 * torch.arccos(t.amax(-1).sqrt().clamp(0.0, 1.0)), p)


def distance_to_uniform(
    p: torch.Tensor | np.ndarray, allowed: torch.Tensor | np.ndarray | None = None
) -> torch.Tensor | np.ndarray:
    """``[...]``: distance to the uniform distribution over the ``allowed`` keys (bool mask
    broadcastable to ``p``; all keys when omitted). ``p`` must put no mass outside ``allowed``."""
    t = _as_prob(p)
    mask = (
        torch.ones_like(t, dtype=torch.bool)
        if allowed is None
        else torch.as_tensor(allowed, dtype=torch.bool, device=t.device).expand_as(t)
    )
    m = mask.sum(-1).to(t.dtype)
    if (m == 0).any():
        raise ValueError("every row needs at least one allowed key")
    bc = (t.sqrt() * mask).sum(-1) / m.sqrt()
    return _back(2.0 * torch.arccos(bc.clamp(0.0, 1.0)), p)


def vertex_to_barycentre(m: int) -> float:
    """Distance from a vertex to the barycentre of the simplex over ``m`` keys: ``2 arccos(1/sqrt(m))``."""
    if m < 1:
        raise ValueError("m must be >= 1")
    return 2.0 * math.acos(1.0 / math.sqrt(m))


def entropy(p: torch.Tensor | np.ndarray) -> torch.Tensor | np.ndarray:
    """``[...]``: Shannon entropy in nats (``0 log 0 = 0``); ``log m`` for the uniform row."""
    t = _as_prob(p)
    return _back(-torch.special.xlogy(t, t).sum(-1), p)


# --- softmax and how logits move mass --------------------------------------------------------


def softmax_jacobian(z: torch.Tensor | np.ndarray) -> torch.Tensor | np.ndarray:
    """``[..., m, m]``: ``d softmax(z)_i / d z_j = p_i (delta_ij - p_j)``."""
    zt = torch.as_tensor(z, dtype=torch.float64, device="cpu") if isinstance(z, np.ndarray) else z
    p = torch.softmax(zt, -1)
    return _back(torch.diag_embed(p) - p.unsqueeze(-1) * p.unsqueeze(-2), z)


def fisher_rao_speed(p: torch.Tensor | np.ndarray, dz: torch.Tensor | np.ndarray) -> torch.Tensor | np.ndarray:
    """``[...]``: Fisher-Rao length of the first-order move ``J dz`` that a logit change ``dz``
    causes at ``p = softmax(z)``; equals ``sqrt(Var_p(dz))``, the spread of ``dz`` under ``p``."""
    t = _as_prob(p)
    d = torch.as_tensor(dz, dtype=t.dtype, device=t.device)
    mean = (t * d).sum(-1, keepdim=True)
    return _back((t * (d - mean).pow(2)).sum(-1).clamp(min=0).sqrt(), p)


def expected_noise_speed(p: torch.Tensor | np.ndarray, sigma: float = 1.0) -> torch.Tensor | np.ndarray:
    """``[...]``: root mean square Fisher-Rao speed under isotropic logit noise of standard
    deviation ``sigma``: ``sigma sqrt(1 - sum p^2)`` (0 at a vertex, largest at the barycentre)."""
    t = _as_prob(p)
    return _back(sigma * (1.0 - t.pow(2).sum(-1)).clamp(min=0).sqrt(), p)


def temperature_path(z: torch.Tensor | np.ndarray, scales: torch.Tensor | np.ndarray) -> torch.Tensor | np.ndarray:
    """``[scale, ..., m]``: ``softmax(z * s)`` for each scale ``s`` (inverse temperature): from the
    barycentre (``s = 0``) toward the vertex of the largest logit (``s -> inf``)."""
    zt = torch.as_tensor(z, dtype=torch.float64, device="cpu" if isinstance(z, np.ndarray) else z.device)
    st = torch.as_tensor(scales, dtype=torch.float64, device=zt.device).reshape(-1, *([1] * zt.dim()))
    return _back(torch.softmax(zt.unsqueeze(0) * st, -1), z)


# --- what one dominant logit costs ----------------------------------------------------------


def margin_for_share(share: float | np.ndarray, n_keys: int) -> float | np.ndarray:
    """Logit margin over ``n_keys - 1`` equal competitors that gives one key ``share`` of the mass:
    ``log(share / (1 - share)) + log(n_keys - 1)``: logarithmic in both the odds and the length."""
    s = np.asarray(share, dtype=float)
    if n_keys < 2:
        raise ValueError("n_keys must be >= 2 (one key always has all the mass)")
    if ((s <= 0) | (s >= 1)).any():
        raise ValueError("share must lie strictly between 0 and 1")
    out = np.log(s / (1 - s)) + math.log(n_keys - 1)
    return float(out) if out.ndim == 0 else out


def logit_for_share(share: float, other_logits: torch.Tensor | np.ndarray) -> torch.Tensor | np.ndarray:
    """``[...]``: the logit one extra key needs to take ``share`` of the mass against the given
    competitors (last axis): ``log(share / (1 - share)) + logsumexp(other_logits)``."""
    if not 0 < share < 1:
        raise ValueError("share must lie strictly between 0 and 1")
    o = torch.as_tensor(other_logits, dtype=torch.float64,
                        device="cpu" if isinstance(other_logits, np.ndarray) else other_logits.device)
    return _back(math.log(share / (1 - share)) + torch.logsumexp(o, -1), other_logits)


def key_norm_for_margin(
    margin: float | np.ndarray, query_norm: float, cosine: float, head_dim: int
) -> float | np.ndarray:
    """Key norm that turns a query of norm ``query_norm`` at angle ``arccos(cosine)`` into the logit
    ``margin`` (scaled dot product ``|q| |k| cos / sqrt(d)``; competitors' logits taken as 0)."""
    if query_norm <= 0 or not 0 < cosine <= 1 or head_dim < 1:
        raise ValueError("need query_norm > 0, 0 < cosine <= 1 and head_dim >= 1")
    return np.asarray(margin, dtype=float) * math.sqrt(head_dim) / (query_norm * cosine)


def sink_sweep(
    n_keys: int,
    sink_logits: np.ndarray,
    *,
    content_std: float = 1.0,
    noise_std: float = 1.0,
    n_draws: int = 200,
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """One key (the sink) with logit ``t`` against ``n_keys - 1`` content keys whose logits are
    drawn ``N(0, content_std^2)`` (seeded). For each ``t``, averaged over ``n_draws`` draws: the
    sink's share, the row entropy, its Fisher-Rao distance to the nearest vertex and to the
    barycentre, and the expected Fisher-Rao speed under logit noise ``noise_std``.

    Returns arrays ``[len(sink_logits)]`` keyed by measure (plus ``sink_logit``).
    """
    if n_keys < 2 or n_draws < 1:
        raise ValueError("need n_keys >= 2 and n_draws >= 1")
    gen = torch.Generator().manual_seed(seed)
    # a study of the softmax on the host: the CPU generator's draws, numpy in and out
    content = torch.randn(n_draws, n_keys - 1, generator=gen, dtype=torch.float64, device="cpu") * content_std
    t = torch.as_tensor(np.asarray(sink_logits, dtype=float), dtype=torch.float64, device="cpu")  # [logit]
    z = torch.cat([t.view(-1, 1, 1).expand(-1, n_draws, 1), content.unsqueeze(0).expand(len(t), -1, -1)], -1)
    p = torch.softmax(z, -1)  # [logit, draw, key]; key 0 is the sink
    return {
        "sink_logit": t.numpy(),
        "sink_share": p[..., 0].mean(1).numpy(),
        "entropy": entropy(p).mean(1).numpy(),
        "distance_to_vertex": distance_to_nearest_vertex(p).mean(1).numpy(),
        "distance_to_uniform": distance_to_uniform(p).mean(1).numpy(),
        "noise_speed": expected_noise_speed(p, noise_std).mean(1).numpy(),
    }


# --- real attention rows ---------------------------------------------------------------------


def allowed_keys(n: int, causal: bool, device: torch.device | None = None) -> torch.Tensor:
    """``[query, key]`` bool: keys each query can attend to (``j <= i`` when causal)."""
    i = torch.arange(n, device=device).unsqueeze(1)
    j = torch.arange(n, device=device).unsqueeze(0)
    return (j <= i) if causal else torch.ones(n, n, dtype=torch.bool, device=device)


def row_descriptors(attn: torch.Tensor, causal: bool) -> dict[str, torch.Tensor]:
    """Per row of ``attn`` ``[layer, head, query, key]``, for queries ``1..n-1`` (query 0 of a
    causal model sees only itself and is left out everywhere): each value ``[layer, head, query-1]``.

    ``entropy`` (nats), ``normalized_entropy`` (entropy / log of the allowed-key count),
    ``first_share`` (weight on position 0), ``max_share`` (weight on the strongest key),
    ``distance_to_vertex``, ``distance_to_uniform`` (over the allowed keys) and
    ``relative_distance_to_uniform`` (divided by the vertex-to-barycentre distance, 0 = uniform,
    1 = as far as a one-hot row), ``near_vertex`` (1 where the row lies within ``pi / 2``, half the
    vertex-to-vertex distance, of its nearest vertex; equivalently one key holds more than half of
    the mass), ``first_is_top`` (1 where position 0 holds the largest weight) and
    ``near_first_vertex`` (1 where the row lies within ``pi / 2`` of the position-0 vertex).
    """
    if attn.dim() != 4 or attn.shape[-1] != attn.shape[-2]:
        raise ValueError(f"attention must be [layer, head, query, key] with query == key, got {tuple(attn.shape)}")
    n = attn.shape[-1]
    if n < 2:
        raise ValueError("need at least 2 tokens (query 0 is left out)")
    a = attn.float().clamp(min=0)[:, :, 1:, :]  # [layer, head, query-1, key]
    mask = allowed_keys(n, causal, a.device)[1:]  # [query-1, key]
    m = mask.sum(-1).to(a.dtype)  # [query-1]
    a = a * mask
    ent = -torch.special.xlogy(a, a).sum(-1)
    top = a.amax(-1)
    bc_uniform = (a.sqrt().sum(-1) / m.sqrt()).clamp(0.0, 1.0)
    d_uniform = 2.0 * torch.arccos(bc_uniform)
    d_vertex_bary = 2.0 * torch.arccos(1.0 / m.sqrt())  # [query-1], > 0 since m >= 2
    d_vertex = 2.0 * torch.arccos(top.sqrt().clamp(0.0, 1.0))
    near_vertex = (top > 0.5).to(
        a.dtype
    )  # d_vertex < pi/2 exactly when max share > 1/2; compared on shares to avoid arccos rounding
    first_is_top = (a.argmax(-1) == 0).to(a.dtype)
    return {
        "entropy": ent,
        "normalized_entropy": ent / m.log(),
        "first_share": a[..., 0],
        "max_share": top,
        "distance_to_vertex": d_vertex,
        "distance_to_uniform": d_uniform,
        "relative_distance_to_uniform": d_uniform / d_vertex_bary,
        "near_vertex": near_vertex,
        "first_is_top": first_is_top,
        "near_first_vertex": near_vertex * first_is_top,
    }


@dataclass(frozen=True)
class SimplexSummaryReducer:
    """One sample's attention -> per-layer/head means over queries of the row descriptors.

    For ``extract.summarize``: keeps ``O(layers x heads)`` numbers per sample. ``version``, the digest of
    its code, enters cache keys.
    """

    name: str = "simplex_summary"

    @property
    def version(self) -> str:
        """The digest of this reducer's code (``code_digest``): it enters the cache key, so changed code never
        reuses results cached by the old."""
        return reducer_version(type(self))

    def key(self) -> dict:
        return {"reducer": self.name, "version": self.version}

    def __call__(self, attn: torch.Tensor, causal: bool) -> dict[str, torch.Tensor]:
        require_finite(attn)
        rows = row_descriptors(attn, causal)  # each [layer, head, query-1]
        out = {name: v.mean(-1) for name, v in rows.items()}  # each [layer, head]
        out["n_tokens"] = torch.tensor(attn.shape[-1], device=attn.device)
        return out
