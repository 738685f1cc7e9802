"""Seeded statistics shared by every chapter: bootstrap intervals and layer regions."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

REGIONS = ("early", "middle", "late")

#: A series is constant up to round-off when its range is at most ``ROUNDOFF_TOL * max(1, max |x|)``
#: (relative above 1, absolute below): no correlation is computed with it (:func:`constant_up_to_roundoff`).
#: Values equal in exact arithmetic come out of a dense symmetric eigensolver with errors of a few ulps
#: times the matrix norm, and a Laplacian's norm grows with the graph (up to twice its largest degree):
#: the Fiedler value 0.5 of every one-way star comes out as 0.5 +- 1.6e-14 (about 150 ulps), the complete
#: graph's n as n +- 1e-12 at 256 tokens, and the digits depend on the LAPACK build, the thread count and
#: the memory layout of the matrix. A correlation with such a series correlates that noise and is not
#: reproducible. 1e-12 (about 4500 ulps at 1) covers the round-off of graphs of several hundred tokens
#: with room to spare, and lies far below any difference between sentences that carries information.
ROUNDOFF_TOL = 1e-12


def nanmean(x: np.ndarray, axis: int | None = None) -> Any:
    """Mean ignoring NaN, without a warning where nothing is left (that slice is NaN).

    ``axis=None`` gives a ``float``; otherwise an array.
    """
    x = np.asarray(x)
    if axis is None:
        kept = x[~np.isnan(x)]
        return float(kept.mean()) if kept.size else float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(x, axis=axis)


def constant_up_to_roundoff(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Whether ``x`` is constant up to round-off along ``axis``: its range is at most
    ``ROUNDOFF_TOL * max(1, max |x|)`` (:data:`ROUNDOFF_TOL`). An empty slice is constant; a slice with a
    NaN is not (drop missing values first where they should not count)."""
    x = np.asarray(x, dtype=float)
    if x.shape[axis] == 0:
        return np.ones(np.delete(x.shape, axis), dtype=bool) if x.ndim > 1 else np.array(True)
    with np.errstate(invalid="ignore"):
        return np.ptp(x, axis) <= ROUNDOFF_TOL * np.maximum(1.0, np.abs(x).max(axis))


def layer_regions(n_layers: int) -> dict[str, list[int]]:
    """Thirds by layer index: early ``[0, L//3)``, middle ``[L//3, 2L//3)``, late ``[2L//3, L)``.

    The one definition of early/middle/late used everywhere in the library.
    """
    if n_layers < 1:
        raise ValueError("n_layers must be >= 1")
    a, b = n_layers // 3, (2 * n_layers) // 3
    return {"early": list(range(0, a)), "middle": list(range(a, b)), "late": list(range(b, n_layers))}


def region_of(layer: int, n_layers: int) -> str:
    for name, layers in layer_regions(n_layers).items():
        if layer in layers:
            return name
    raise ValueError(f"layer {layer} outside 0..{n_layers - 1}")


def bootstrap_ci(
    values: np.ndarray,
    n_boot: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[float, float, float]:
    """Mean of ``values`` (axis 0 = independent units, e.g. sentences) and a percentile bootstrap
    interval for it. NaNs are ignored. Returns ``(mean, low, high)``."""
    x = np.asarray(values, dtype=float)
    x = x[~np.isnan(x)]
    if x.size == 0:
        return float("nan"), float("nan"), float("nan")
    if x.size == 1:
        return float(x[0]), float(x[0]), float(x[0])
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, x.size, size=(n_boot, x.size))
    means = x[idx].mean(1)
    alpha = (1 - level) / 2
    return float(x.mean()), float(np.quantile(means, alpha)), float(np.quantile(means, 1 - alpha))


# ----------------------------------------------------------------------------- many columns at once


def bootstrap_counts(n_units: int, n_boot: int = 1000, seed: int = 0) -> np.ndarray:
    """``[boot, unit]`` how often each unit is drawn in each bootstrap replicate (rows sum to ``n_units``).

    A replicate's mean of any per-unit statistic is then ``counts @ values / n_units``.
    """
    rng = np.random.default_rng(seed)
    return rng.multinomial(n_units, np.full(n_units, 1.0 / n_units), size=n_boot).astype(float)


def bootstrap_mean_ci_columns(
    values: np.ndarray,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Means and percentile bootstrap intervals of every column of ``values`` ``[unit, column]``.

    All columns share the same resampled units (one multinomial draw of counts per replicate), so
    thousands of columns cost one matrix product. NaNs are ignored per column.
    Returns ``(mean, low, high)``, each ``[column]``.
    """
    x = np.asarray(values, dtype=float)
    if x.ndim != 2 or x.shape[0] == 0:
        raise ValueError(f"values must be [unit, column] with at least one unit, got shape {x.shape}")
    ok = np.isfinite(x)
    filled = np.where(ok, x, 0.0)
    counts = bootstrap_counts(x.shape[0], n_boot, seed)  # [boot, unit]
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = filled.sum(0) / ok.sum(0)
        boot = (counts @ filled) / (counts @ ok)  # [boot, column]
    alpha = (1 - level) / 2
    with np.errstate(invalid="ignore"):
        low = np.nanquantile(boot, alpha, axis=0) if np.isfinite(boot).any() else np.full(x.shape[1], np.nan)
        high = np.nanquantile(boot, 1 - alpha, axis=0) if np.isfinite(boot).any() else np.full(x.shape[1], np.nan)
    return mean, low, high


# ---------------------------------------------------------------------------------------------
# Paired tests and multiple-comparison correction (added for the information-geometry chapter)


def sign_flip_test(values: np.ndarray, n_perm: int = 10000, seed: int = 0) -> tuple[float, float]:
    """Two-sided sign-flip permutation test of ``mean(values) == 0`` for paired differences.

    Under the null each difference is symmetric around 0, so its sign is exchangeable. With at
    most 16 values the exact distribution over all ``2^n`` sign patterns is used; otherwise
    ``n_perm`` seeded random patterns (p includes the observed pattern, so it is never 0).
    NaNs are dropped. Returns ``(mean, p)``.
    """
    x = np.asarray(values, dtype=float)
    x = x[~np.isnan(x)]
    if x.size == 0:
        return float("nan"), float("nan")
    obs = abs(x.mean())
    if x.size <= 16:
        signs = 1 - 2 * ((np.arange(2**x.size)[:, None] >> np.arange(x.size)) & 1)  # [pattern, value]
        null = np.abs((signs * x).mean(1))
        return float(x.mean()), float(np.mean(null >= obs - 1e-12))
    rng = np.random.default_rng(seed)
    signs = rng.choice(np.array([-1.0, 1.0]), size=(n_perm, x.size))
    null = np.abs((signs * x).mean(1))
    return float(x.mean()), float((1 + np.sum(null >= obs - 1e-12)) / (n_perm + 1))


def _adjust(p_values: np.ndarray, step: Callable[[np.ndarray, int], np.ndarray]) -> np.ndarray:
    """Apply ``step(sorted finite p-values, m)`` -> adjusted values in the same order; NaNs stay NaN."""
    p = np.asarray(p_values, dtype=float)
    out = np.full_like(p, np.nan)
    ok = np.flatnonzero(~np.isnan(p))
    if ok.size:
        order = ok[np.argsort(p[ok], kind="stable")]
        out[order] = np.minimum(step(p[order], ok.size), 1.0)
    return out


def holm(p_values: np.ndarray) -> np.ndarray:
    """Holm step-down adjusted p-values (family-wise error control); NaNs stay NaN."""
    return _adjust(p_values, lambda p, m: np.maximum.accumulate((m - np.arange(m)) * p))


def fdr_bh(p_values: np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (false-discovery rate); NaNs stay NaN."""
    return _adjust(p_values, lambda p, m: np.minimum.accumulate((p * m / np.arange(1, m + 1))[::-1])[::-1])


def cohens_dz(values: np.ndarray) -> float:
    """Effect size of paired differences: mean / sample standard deviation (NaN if undefined)."""
    x = np.asarray(values, dtype=float)
    x = x[~np.isnan(x)]
    if x.size < 2:
        return float("nan")
    sd = x.std(ddof=1)
    return float(x.mean() / sd) if sd > 0 else float("nan")


def fisher_combined_p(p_values: np.ndarray) -> float:
    """Fisher's method as the official KL notebook computes it: ``X = -2 sum ln(p + 1e-10)``,
    ``p = 1 - chi2_{2k}.cdf(X)``. With every p fixed at 1 (the shipped setting) it is 1."""
    from scipy.stats import chi2

    p = np.asarray(p_values, dtype=float)
    p = p[~np.isnan(p)]
    if p.size == 0:
        return float("nan")
    x = -2.0 * np.sum(np.log(p + 1e-10))
    return float(1.0 - chi2.cdf(x, 2 * p.size))
