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

import math
from dataclasses import dataclass

import numpy as np
import torch

from ..code_digest import reducer_version
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


def faithful_rows(n: int, device: torch.device) -> torch.Tensor:
    """Query rows the official code keeps: ``floor(linspace(0, n-1, 20))`` when ``n > 20``."""
    if n > FAITHFUL_ROWS:
        return torch.from_numpy(np.floor(np.linspace(0, n - 1, FAITHFUL_ROWS)).astype(np.int64)).to(device)
    return torch.arange(n, device=device)


# ---------------------------------------------------------------------------------------------
# sink sets


def percentile_sinks(attn: torch.Tensor, q: float) -> torch.Tensor:
    """``[layer, key]`` bool: keys whose incoming mass (summed over heads and queries) is at or
    above its ``q``-quantile (linear interpolation, as ``numpy.percentile``). Official rule."""
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"q must be in [0, 1], got {q}")
    return _percentile_columns(_check(attn).double().sum(dim=(1, 2)), q)


def _percentile_columns(incoming: torch.Tensor, q: float) -> torch.Tensor:
    """``[layer, key]`` bool from the incoming mass ``[layer, key]``: at or above its ``q``-quantile."""
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
        rows = faithful_rows(attn.shape[-1], attn.device)
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


#: a floor for the head-mean weights before their log: far below any positive weight float32 attention
#: can produce, so only exact zeros (columns no head attends to, whose terms are all 0) are moved
_LOG_FLOOR = 1e-300


def _removal_divergences(
    x: torch.Tensor, keep: torch.Tensor, row_layer: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Row divergences ``KL(P'_h || mean_h P'_h) - log H`` after zeroing columns, for several column sets at once.

    ``x`` ``[row, head, key]`` float64 non-negative weights of any row scale (rows are renormalized;
    a row with no mass at all is uniform, as :func:`_row_probs`); ``keep`` ``[layer, key, set]`` bool
    the columns each set keeps (set 0 must keep every column); ``row_layer`` ``[row]`` each row's layer.
    With ``s_h = sum_k keep_k x_hk`` and ``u_k = sum_h x_hk / s_h`` on the kept columns the head mean
    is ``u / H``, so

        ``KL_h - log H = (A_h - C_h) / s_h - log s_h``,  ``A_h = sum_k keep_k x_hk log x_hk``,
        ``C_h = sum_k keep_k x_hk log u_k``:

    batched matrix products instead of a masked, renormalized copy of the attention per set (``log H``
    is added by the caller, after the means). A head that keeps no mass (``s_h = 0``, "dead") counts
    as uniform over the kept columns (the official fallback, :func:`remove_columns` with
    ``"uniform"``); ``dead`` says where, so that the corrected mode can drop those rows instead. No
    kept column at all gives NaN. Returns ``kl`` and ``dead``, each ``[row, head, set]``.
    """
    k = keep.double()[row_layer]  # [row, key, set]
    kept = keep.sum(1).double()[row_layer]  # [row, set]
    s = x @ k  # [row, head, set]
    if not bool((s[..., 0] > 0).all()):  # rows without mass are uniform before anything is removed
        x = torch.where((s[..., :1] > 0), x, torch.ones_like(x))
        s = x @ k
    dead = s <= 0  # [row, head, set]
    inv = torch.where(dead, 0.0, s.reciprocal())  # [row, head, set]
    u = x.transpose(1, 2) @ inv  # [row, key, set]: sum over live heads of x_hk / s_h
    some_dead = bool(dead.any())
    if some_dead:  # dead heads add 1 / K to every kept column
        u = u + (dead.sum(1) / kept)[:, None, :]
    log_u = u.clamp_min_(_LOG_FLOOR).log_().mul_(k)  # [row, key, set]; 0 off the kept columns
    kl = (torch.special.xlogy(x, x) @ k - x @ log_u).mul_(inv).sub_(s.log())  # [row, head, set]
    if some_dead:
        uniform = -kept.log() - log_u.sum(1) / kept  # [row, set]
        kl = torch.where(dead, uniform[:, None, :], kl)
    return kl.masked_fill_(~(kept > 0)[:, None, :], float("nan")), dead


def _corrected_summary(kl: torch.Tensor, dead: torch.Tensor, cols: torch.Tensor) -> dict[str, torch.Tensor]:
    """Corrected ``before`` and ``reduction`` ``[layer, rule]`` from :func:`_removal_divergences` on every
    row (``kl``, ``dead`` ``[layer, query, head, set]``, set 0 removing nothing; ``log H`` not yet added)
    and the sinks ``[layer, key, rule]``.

    The same rules as :func:`_corrected_change`: a row counts before removal when head 0 keeps mass,
    after removal when every head does; no sink, or no row left, gives NaN."""
    n_heads = kl.shape[2]
    defined = ~dead[:, :, 0, 1:]  # [layer, query, rule]
    usable = ~dead[..., 1:].any(2, keepdim=True)  # [layer, query, 1, rule]
    before_sum = kl[..., 0].transpose(1, 2) @ defined.double()  # [layer, head, rule]
    before = (before_sum / defined.sum(1)[:, None, :]).mean(1) + math.log(n_heads)  # [layer, rule]
    after_sum = torch.where(usable, kl[..., 1:], 0.0).sum(1)  # [layer, head, rule]
    after = (after_sum / usable.sum(1)).mean(1) + math.log(n_heads)
    none = ~cols.any(1) | ~defined.any(1)  # [layer, rule]
    before = before.masked_fill(none, float("nan"))
    after = after.masked_fill(none, float("nan"))
    return {"before": before, "after": after, "reduction": before - after}


# ---------------------------------------------------------------------------------------------
# per-sample reducer and tables


@dataclass(frozen=True)
class InformationReducer:
    """One sample's attention -> per-layer KL change and sink mass for every rule and mode.

    Keeps ``O(layers x rules)`` numbers per sample (for ``extract.summarize``). ``version``, the digest of
    its code, enters the cache key.
    """

    name: str = "information"

    @property
    def version(self) -> str:
        """The digest of this reducer's code (``code_digest``): it enters the cache key, so changed code never
        reuses results cached by the old."""
        return reducer_version(type(self))

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
        if attn.dim() != 4 or attn.shape[-1] != attn.shape[-2]:
            require_finite(attn)
            _check(attn)
        a = attn.float()
        n_layers, n_heads, n = a.shape[0], a.shape[1], a.shape[-1]
        head_mean = a.mean(1, keepdim=True)  # [layer, 1, query, key]
        if not bool(torch.isfinite(head_mean.sum())):  # NaN and inf reach the sum; a finite overflow passes below
            require_finite(attn)
        dev = a.device
        f_layers = torch.tensor(official_layers(n_layers), device=dev)
        rows = faithful_rows(n, dev)
        n_rows = n_layers * n
        # every row both modes use, in one float64 batch: corrected [layer x query] then faithful
        # [official layer x official row] in float16 precision (as the official code held them)
        x = torch.empty(n_rows + len(f_layers) * len(rows), n_heads, n, dtype=torch.float64,
                        device=dev)  # [row, head, key]
        xc = x[:n_rows].view(n_layers, n, n_heads, n)  # [layer, query, head, key]
        xc.copy_(a.transpose(1, 2))
        x[n_rows:].view(len(f_layers), len(rows), n_heads, n).copy_(a[f_layers[:, None], :, rows].half())

        sinks = {"threshold": reference_tokens(head_mean, causal)[:, 0]}  # [layer, key], as threshold_sinks
        incoming = a.sum(dim=(1, 2), dtype=torch.float64)  # [layer, key]
        for q in SINK_QUANTILES:
            sinks[f"p{round(q * 100)}"] = _percentile_columns(incoming, q)
        cols = torch.stack(list(sinks.values()), -1)  # [layer, key, rule]
        colmass = xc.sum(1)  # [layer, head, key] float64
        # column sets: "nothing removed" (the divergence before removal) and each rule's complement
        nothing = torch.ones(n_layers, n, 1, dtype=torch.bool, device=dev)
        keep = torch.cat([nothing, ~cols], -1)  # [layer, key, 1 + rule]
        row_layer = torch.cat([torch.arange(n_layers, device=dev).repeat_interleave(n),
                               f_layers.repeat_interleave(len(rows))])
        kl, dead = _removal_divergences(x, keep, row_layer)  # [row, head, set] each
        shape = (n_layers, n, n_heads, -1)
        corrected = _corrected_summary(kl[:n_rows].view(shape), dead[:n_rows].view(shape), cols)
        faithful = kl[n_rows:].view(len(f_layers), len(rows), n_heads, -1).mean(1).mean(1)  # [official layer, set]
        faithful = faithful + math.log(n_heads)
        f_before = faithful[:, 0]

        out: dict[str, torch.Tensor] = {"n_tokens": torch.tensor(n, device=dev)}
        for i, (rule, c) in enumerate(sinks.items()):
            out[removal_key(rule, "n_sinks")] = c.sum(-1)
            out[removal_key(rule, "has_first")] = c[:, 0]
            out[removal_key(rule, "mass_all_heads")] = _mass_share(colmass, c).float()
            out[removal_key(rule, "mass_first4")] = _mass_share(colmass[:, :FAITHFUL_HEADS], c).float()
            out[removal_key(rule, "before", "corrected")] = corrected["before"][:, i].float()
            out[removal_key(rule, "reduction", "corrected")] = corrected["reduction"][:, i].float()
            for name, value in (("before", f_before), ("reduction", f_before - faithful[:, i + 1])):
                full = torch.full((n_layers,), float("nan"), device=dev)
                full[f_layers] = value.float()
                out[removal_key(rule, name, "faithful")] = full
        return out


#: what each sink rule's summary holds per layer: shared by both modes, or under ``<rule>/<mode>/``
RULE_FIELDS = ("n_sinks", "has_first", "mass_all_heads", "mass_first4")
MODE_FIELDS = ("before", "reduction")


def removal_key(rule: str, field: str, mode: Mode | None = None) -> str:
    """The result key of ``field`` under the sink rule ``rule`` (``removal_key("p90", "reduction", "corrected")``
    is ``"p90/corrected/reduction"``): the one place such a key is spelled; an unknown name raises."""
    if rule not in rules():
        raise KeyError(f"no sink rule {rule!r}; the rules are {rules()}")
    if mode is None:
        if field not in RULE_FIELDS:
            raise KeyError(f"no field {field!r} shared by the modes; they are {RULE_FIELDS} (or pass a mode)")
        return f"{rule}/{field}"
    if field not in MODE_FIELDS:
        raise KeyError(f"no field {field!r} per mode; they are {MODE_FIELDS}")
    return f"{rule}/{check_mode(mode)}/{field}"


def rules() -> list[str]:
    """The sink rules every summary holds: the fixed threshold and each percentile."""
    return ["threshold", *[f"p{round(q * 100)}" for q in SINK_QUANTILES]]
