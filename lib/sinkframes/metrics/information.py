"""Information geometry of attention: sink sets, KL change when sinks are removed, sink mass.

All functions take one sample's attention ``attn`` shaped ``[layer, head, query, key]``.

Two modes, as everywhere in the book:

- ``mode="faithful"`` reproduces the official ``KL.ipynb`` computation: percentile sink sets
  (incoming mass summed over heads and queries at or above its ``q``-th percentile), the
  inter-head divergence ``mean_h mean_{i in S} KL(P^h_i || mean_h P^h_i)`` on 20 evenly spaced
  query rows ``S`` when ``n > 20``, masked rows that become empty replaced by a uniform row over
  every non-sink column (future positions included), sink mass ("sink concentration") from heads
  0-3 only, and per-sample p-values fixed at 1. The official code ran in float16; here the
  weights are rounded to float16 as it did, but the arithmetic is float64 (float16 sums can
  underflow to 0 and give infinite KL, which is a precision accident rather than a definition).
- ``mode="corrected"``: every head and every query row, float64, rows that lose all their
  visible mass are left out (no uniform mass on future tokens), and sink mass from all heads.
  Uncertainty (bootstrap over sentences) and tests (sign flip, Holm across layers) are added by
  :func:`layer_table`.

"KL reduction" is the official name: ``divergence before - divergence after`` sink removal. The
quantity is how different the heads are from their average, not how uniform each head is.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..tensors import require_finite
from ..types import Mode, check_mode
from .sinks import REFERENCE_MIN_FRACTION, REFERENCE_MIN_SOURCES, REFERENCE_TAU, reference_tokens

SINK_QUANTILES = (0.8, 0.9, 0.95)
FAITHFUL_ROWS = 20
FAITHFUL_HEADS = 4
OFFICIAL_P_VALUE = 1.0


def _check(attn: torch.Tensor) -> torch.Tensor:
    if attn.dim() != 4 or attn.shape[-1] != attn.shape[-2]:
        raise ValueError(f"attention must be [layer, head, query, key] with query == key, got {tuple(attn.shape)}")
    return attn


def official_layers(n_layers: int) -> list[int]:
    """The layers ``KL.ipynb`` analyses: all when ``L <= 6``, else 0, the odd layers up to
    ``L-2`` and ``L-1``."""
    if n_layers < 1:
        raise ValueError("n_layers must be >= 1")
    if n_layers <= 6:
        return list(range(n_layers))
    return sorted({0, n_layers - 1, *range(1, n_layers - 1, 2)})


def faithful_rows(n: int) -> torch.Tensor:
    """Query rows the official code keeps: ``floor(linspace(0, n-1, 20))`` when ``n > 20``."""
    if n > FAITHFUL_ROWS:
        return torch.from_numpy(np.floor(np.linspace(0, n - 1, FAITHFUL_ROWS)).astype(np.int64))
    return torch.arange(n)


# ---------------------------------------------------------------------------------------------
# sink sets


def percentile_sinks(attn: torch.Tensor, q: float) -> torch.Tensor:
    """``[layer, key]`` bool: keys whose incoming mass (summed over heads and queries) is at or
    above its ``q``-quantile (linear interpolation, as ``numpy.percentile``). Official rule."""
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"q must be in [0, 1], got {q}")
    a = _check(attn).double()
    incoming = a.sum(dim=(1, 2))  # [layer, key]
    tau = torch.quantile(incoming, q, dim=-1, keepdim=True)  # [layer, 1]
    return incoming >= tau


def threshold_sinks(
    attn: torch.Tensor,
    causal: bool,
    tau: float = REFERENCE_TAU,
    min_fraction: float = REFERENCE_MIN_FRACTION,
    min_sources: int = REFERENCE_MIN_SOURCES,
) -> torch.Tensor:
    """``[layer, key]`` bool: the paper's definition, a token whose weight exceeds ``tau`` across
    many source tokens, applied to the head-averaged attention (``sinks.reference_tokens``)."""
    a = _check(attn).float()
    return reference_tokens(a.mean(1, keepdim=True), causal, tau, min_fraction, min_sources)[:, 0]


def sink_sets(attn: torch.Tensor, causal: bool) -> dict[str, torch.Tensor]:
    """Every sink rule the chapter compares: ``threshold`` and ``p80``/``p90``/``p95``."""
    out = {"threshold": threshold_sinks(attn, causal)}
    for q in SINK_QUANTILES:
        out[f"p{round(q * 100)}"] = percentile_sinks(attn, q)
    return out


# ---------------------------------------------------------------------------------------------
# KL and sink removal


def kl_rows(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """``KL(p || q)`` along the last axis in nats, both renormalized to sum 1 first (as
    ``scipy.stats.entropy``). ``0 log 0 = 0``; ``inf`` where ``q = 0 < p``."""
    if not (p.is_floating_point() and p.dtype == q.dtype and p.dtype in (torch.float32, torch.float64)):
        p, q = p.double(), q.double()
    p = p / p.sum(-1, keepdim=True)
    q = q / q.sum(-1, keepdim=True)
    return (torch.special.xlogy(p, p) - torch.special.xlogy(p, q)).sum(-1)


def remove_columns(probs: torch.Tensor, columns: torch.Tensor, empty: str = "nan") -> torch.Tensor:
    """Zero ``columns`` (``[layer, key]`` bool) in row distributions ``[layer, head, query, key]``
    and renormalize each row.

    ``empty`` decides rows that lose all their mass: ``"nan"`` marks them undefined (corrected);
    ``"uniform"`` replaces them by a uniform row over every non-removed column, future positions
    included (the official fallback, which breaks causality).
    """
    if empty not in ("nan", "uniform"):
        raise ValueError("empty must be 'nan' or 'uniform'")
    keep = (~columns).to(probs.dtype)[:, None, None, :]  # [layer, 1, 1, key]
    kept = probs * keep
    total = kept.sum(-1, keepdim=True)  # [layer, head, query, 1]
    out = kept / total.where(total > 0, torch.ones_like(total))
    dead = (total <= 0).expand_as(out)
    if empty == "uniform":
        uniform = (keep / keep.sum(-1, keepdim=True).clamp(min=1)).expand_as(out)
        return torch.where(dead, uniform, out)
    return torch.where(dead, torch.full_like(out, float("nan")), out)


def divergence_rows(probs: torch.Tensor) -> torch.Tensor:
    """``[layer, head, query]``: ``KL(P^h_i || mean_h P^h_i)`` per row (NaN rows stay NaN)."""
    return kl_rows(probs, probs.mean(1, keepdim=True))


def inter_head_divergence(probs: torch.Tensor, rows: torch.Tensor | None = None) -> torch.Tensor:
    """``[layer, head]``: mean over query rows of ``KL(P^h_i || mean_h P^h_i)``.

    ``rows`` selects query rows (default all); rows holding NaN are skipped.
    """
    if rows is not None:
        probs = probs[:, :, rows]
    return torch.nanmean(divergence_rows(probs), dim=-1)


def _row_probs(attn: torch.Tensor, faithful: bool, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """Rows ``[..., query, key]`` renormalized to sum 1 (uniform ``1/n`` where a row sums to 0)."""
    a = attn
    if faithful:
        a = a.half()  # the official code held the weights in float16
    a = a.to(dtype)
    total = a.sum(-1, keepdim=True)
    n = a.shape[-1]
    return torch.where(total > 0, a / total.where(total > 0, torch.ones_like(total)), torch.full_like(a, 1.0 / n))


def _faithful_change(
    probs_rows: torch.Tensor, columns: torch.Tensor, before: torch.Tensor | None = None
) -> dict[str, torch.Tensor]:
    """Faithful change on probabilities already restricted to the official rows ``[layer, head, 20, key]``."""
    if before is None:
        before = inter_head_divergence(probs_rows).mean(-1)
    after = inter_head_divergence(remove_columns(probs_rows, columns, "uniform")).mean(-1)
    return {"before": before, "after": after, "reduction": before - after}


def _corrected_change(
    probs: torch.Tensor, columns: torch.Tensor, before_rows: torch.Tensor | None = None
) -> dict[str, torch.Tensor]:
    """Corrected change: all rows still defined after removal, the same rows before and after."""
    masked = remove_columns(probs, columns, "nan")
    defined = ~torch.isnan(masked[:, 0, :, 0])  # [layer, query]: the same rows for every head
    if before_rows is None:
        before_rows = divergence_rows(probs)  # [layer, head, query]
    b = torch.where(defined[:, None, :], before_rows, torch.full_like(before_rows, float("nan")))
    before = torch.nanmean(b, -1).mean(-1)
    after = inter_head_divergence(masked).mean(-1)
    none = ~columns.any(-1) | ~defined.any(-1)  # [layer]: nothing removed, or nothing left
    nan = torch.full_like(before, float("nan"))
    before, after = torch.where(none, nan, before), torch.where(none, nan, after)
    return {"before": before, "after": after, "reduction": before - after}


def kl_change(attn: torch.Tensor, columns: torch.Tensor, mode: Mode = "corrected") -> dict[str, torch.Tensor]:
    """Inter-head divergence before and after removing ``columns``, per layer.

    Returns ``before``, ``after`` and ``reduction = before - after``, each ``[layer]`` (means over
    heads). Faithful: 20 rows, uniform fallback. Corrected: all rows defined after removal, the
    same rows before and after; a layer with no sink gives NaN (nothing to remove).
    """
    check_mode(mode)
    if mode == "faithful":
        rows = faithful_rows(attn.shape[-1])
        return _faithful_change(_row_probs(attn[:, :, rows], True), columns)
    return _corrected_change(_row_probs(attn, False), columns)


def sink_mass_share(attn: torch.Tensor, columns: torch.Tensor, heads: int | None = None) -> torch.Tensor:
    """``[layer]``: the paper's "sink concentration": share of a head's attention mass that lands
    on the ``columns`` (``[layer, key]`` bool), averaged over the first ``heads`` heads (all when
    ``None``; the official notebook uses 4)."""
    a = _check(attn)
    if heads is not None:
        a = a[:, : min(heads, a.shape[1])]
    return _mass_share(a.double().sum(-2), columns)


def _mass_share(colmass: torch.Tensor, columns: torch.Tensor) -> torch.Tensor:
    """``[layer]`` from per-head column masses ``[layer, head, key]``."""
    on = (colmass * columns.to(colmass.dtype)[:, None, :]).sum(-1)  # [layer, head]
    total = colmass.sum(-1)
    return (on / total.where(total > 0, torch.ones_like(total))).mean(-1)


# ---------------------------------------------------------------------------------------------
# streaming reducer and tables


@dataclass(frozen=True)
class InformationReducer:
    """One sample's attention -> per-layer KL change and sink mass for every rule and mode.

    Keeps ``O(layers x rules)`` numbers per sample (for ``extract.summarize``). ``version`` enters
    the cache key: bump it when the summary changes.
    """

    name: str = "information"
    version: int = 1

    def key(self) -> dict:
        return {
            "reducer": self.name,
            "version": self.version,
            "quantiles": list(SINK_QUANTILES),
            "rows": FAITHFUL_ROWS,
            "heads": FAITHFUL_HEADS,
            "tau": REFERENCE_TAU,
        }

    def __call__(self, attn: torch.Tensor, causal: bool) -> dict[str, torch.Tensor]:
        require_finite(attn)
        a = _check(attn).float()
        n_layers, n = a.shape[0], a.shape[-1]
        out: dict[str, torch.Tensor] = {"n_tokens": torch.tensor(n)}
        # shared work: corrected row divergences once; faithful only on its layers and 20 rows
        probs = _row_probs(a, False, torch.float32)  # [layer, head, query, key]; float32 is ample here
        before_rows = divergence_rows(probs)  # [layer, head, query]
        f_layers = torch.tensor(official_layers(n_layers))
        f_probs = _row_probs(a[f_layers][:, :, faithful_rows(n)], True)  # [official layer, head, row, key]
        f_before = inter_head_divergence(f_probs).mean(-1)
        colmass = a.double().sum(-2)  # [layer, head, key]
        for rule, cols in sink_sets(a, causal).items():
            out[f"{rule}/n_sinks"] = cols.sum(-1)
            out[f"{rule}/has_first"] = cols[:, 0]
            out[f"{rule}/mass_all_heads"] = _mass_share(colmass, cols).float()
            out[f"{rule}/mass_first4"] = _mass_share(colmass[:, :FAITHFUL_HEADS], cols).float()
            ch = _corrected_change(probs, cols, before_rows)
            out[f"{rule}/corrected/before"] = ch["before"].float()
            out[f"{rule}/corrected/reduction"] = ch["reduction"].float()
            fch = _faithful_change(f_probs, cols[f_layers], f_before)
            for name in ("before", "reduction"):
                full = torch.full((n_layers,), float("nan"))
                full[f_layers] = fch[name].float()
                out[f"{rule}/faithful/{name}"] = full
        return out


def rules() -> list[str]:
    """The sink rules every summary holds: the fixed threshold and each percentile."""
    return ["threshold", *[f"p{round(q * 100)}" for q in SINK_QUANTILES]]
