"""Random-matrix statistics of attention (paper App. B): the official ones and corrected ones.

**Faithful** (``official_code_spec.md`` 6.2), on one ``n x n`` matrix ``A``:
``eigvals(A)`` by moduli (for a causal, lower-triangular ``A`` these are exactly its diagonal, the
self-attention weights), spectral gap ``mu1 / mu2``, participation ratio ``(sum mu)^2 / sum mu^2``,
stable rank ``sum s^2 / s1^2``, a KL divergence between a 20-bin histogram of the top-10 moduli
(divided by their mean) and a Marchenko-Pastur density with ``gamma = 0.99`` (``inf`` when a bin
outside the MP support holds mass), row entropy in bits and the 90th-percentile column-sum share.
Checkpoints are ordered as strings (:func:`faithful_order`).

**Corrected**: the spectrum that the Marchenko-Pastur law describes, the eigenvalues of
``W = X X^T / m`` for a ``p x m`` matrix ``X`` (``p <= m``; squared singular values over ``m``), with
the MP law's scale fitted from the bulk (the median eigenvalue against the MP median at the
matrix's own aspect ratio ``gamma = p / m``), the eigenvalues above the fitted edge
``sigma^2 (1 + sqrt(gamma))^2`` counted as outliers, the relative spectral gap
``(l1 - l2) / l1``, the participation ratio and stable rank of that spectrum, and the
Kolmogorov-Smirnov distance of the eigenvalues to the fitted law. Checkpoints are ordered by step
(:func:`step_order`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

import numpy as np

#: official constants (``rmt.ipynb``)
OFFICIAL_TOP_K = 10
OFFICIAL_BINS = 20
OFFICIAL_GAMMA = 0.99
OFFICIAL_SINK_PERCENTILE = 90
#: corrected: an eigenvalue is an outlier above ``edge * (1 + OUTLIER_MARGIN * p ** (-2/3))``
#: (the Tracy-Widom scale of the largest eigenvalue's fluctuation at finite size)
OUTLIER_MARGIN = 2.0

FAITHFUL_METRICS = ("spectral_gap", "participation_ratio", "stable_rank", "marchenko_pastur_kl", "entropy",
                    "sink_concentration")
CORRECTED_METRICS = ("participation_ratio", "stable_rank", "relative_gap", "n_outliers", "top_over_edge",
                     "ks_distance", "mp_scale")


# ----------------------------------------------------------------------------------------- faithful
def official_moduli(a: np.ndarray) -> np.ndarray:
    """``|eigvals(a)|`` sorted descending (for a lower-triangular ``a``: its diagonal, sorted)."""
    return np.sort(np.abs(np.linalg.eigvals(np.asarray(a, dtype=np.float64))))[::-1]


def official_mp_kl(moduli: np.ndarray) -> float:
    """KL(histogram of the top-10 moduli / their mean || MP density at gamma 0.99), natural log.

    ``inf`` when a histogram bin with mass lies where the MP density is 0 (outside its support).
    """
    top = np.asarray(moduli, dtype=np.float64)[:OFFICIAL_TOP_K]
    if top.size == 0 or not np.isfinite(top).all() or top.mean() <= 0:
        return float("nan")
    x = top / top.mean()
    hist, edges = np.histogram(x, bins=OFFICIAL_BINS, density=True)
    centres = (edges[:-1] + edges[1:]) / 2
    g = OFFICIAL_GAMMA
    lo, hi = (1 - np.sqrt(g)) ** 2, (1 + np.sqrt(g)) ** 2
    inside = (centres > lo) & (centres < hi)
    dens = np.zeros_like(centres)
    c = centres[inside]
    dens[inside] = np.sqrt((hi - c) * (c - lo)) / (2 * np.pi * g * c)
    p = hist / hist.sum()
    if dens.sum() <= 0:
        return float("inf")
    q = dens / dens.sum()
    mass = p > 0
    if np.any(mass & (q == 0)):
        return float("inf")
    return float(np.sum(p[mass] * np.log(p[mass] / q[mass])))


def official_metrics(a: np.ndarray) -> dict[str, float]:
    """The six official statistics of one attention matrix ``a`` ``[query, key]``."""
    a = np.asarray(a, dtype=np.float64)
    mu = official_moduli(a)
    sv = np.linalg.svd(a, compute_uv=False)
    col = a.sum(0)  # [key]
    tau = np.percentile(col, OFFICIAL_SINK_PERCENTILE)
    with np.errstate(divide="ignore", invalid="ignore"):
        gap = mu[0] / mu[1] if mu.size > 1 else float("nan")
        pr = mu.sum() ** 2 / np.sum(mu**2)
        sr = np.sum(sv**2) / sv[0] ** 2
        conc = col[col >= tau].sum() / col.sum()
    entropy = float(np.mean(-np.sum(a * np.log2(a + 1e-10), axis=1)))
    return {"spectral_gap": float(gap), "participation_ratio": float(pr), "stable_rank": float(sr),
            "marchenko_pastur_kl": official_mp_kl(mu), "entropy": entropy, "sink_concentration": float(conc)}


def _step_number(name: str) -> int:
    m = re.fullmatch(r"step(\d+)", str(name))
    if m is None:
        raise ValueError(f"checkpoint name {name!r} is not of the form step<N>")
    return int(m.group(1))


def faithful_order(names: Iterable[str]) -> list[str]:
    """The official checkpoint order: ``sorted`` on the strings ("step143000" before "step2")."""
    return sorted(names)


def step_order(names: Iterable[str]) -> list[str]:
    """Checkpoints by training step."""
    return sorted(names, key=_step_number)


# ----------------------------------------------------------------------------------------- MP law
def mp_edges(gamma: float, scale: float = 1.0) -> tuple[float, float]:
    """Support ``[scale (1 - sqrt g)^2, scale (1 + sqrt g)^2]`` of the MP law with ratio ``gamma`` in (0, 1]."""
    if not 0 < gamma <= 1:
        raise ValueError(f"gamma must lie in (0, 1], got {gamma}")
    return scale * (1 - np.sqrt(gamma)) ** 2, scale * (1 + np.sqrt(gamma)) ** 2


@lru_cache(maxsize=64)
def _mp_cdf_table(gamma: float, points: int = 4001) -> tuple[np.ndarray, np.ndarray]:
    """``(x, F(x))`` of the unit-scale MP law on its support, integrated on a grid dense at both edges."""
    lo, hi = mp_edges(gamma)
    t = np.linspace(0.0, 1.0, points)
    x = lo + (hi - lo) * (1 - np.cos(np.pi * t)) / 2  # [points], dense near lo and hi
    # with x = lo + (hi - lo)(1 - cos(theta))/2, sqrt((hi - x)(x - lo)) dx = (hi - lo)^2 sin^2(theta)/4 dtheta
    theta = np.pi * t
    if lo > 0:
        integrand = ((hi - lo) ** 2 * np.sin(theta) ** 2 / 4) / (2 * np.pi * gamma * x)  # density * dx/dtheta
    else:  # gamma = 1: x = hi (1 - cos)/2, and sin^2 / (1 - cos) = 1 + cos removes the 0/0 at x = 0
        integrand = hi * (1 + np.cos(theta)) / (4 * np.pi * gamma)
    cdf = np.concatenate([[0.0], np.cumsum((integrand[1:] + integrand[:-1]) / 2 * np.diff(theta))])
    return x, cdf / cdf[-1]


def mp_cdf(x: np.ndarray, gamma: float, scale: float = 1.0) -> np.ndarray:
    """The MP law's CDF at ``x`` (ratio ``gamma``, variance ``scale``)."""
    grid, cdf = _mp_cdf_table(round(float(gamma), 12))
    return np.interp(np.asarray(x, dtype=np.float64) / scale, grid, cdf, left=0.0, right=1.0)


def mp_quantile(q: np.ndarray, gamma: float, scale: float = 1.0) -> np.ndarray:
    """The MP law's quantiles at probabilities ``q`` (ratio ``gamma``, variance ``scale``)."""
    grid, cdf = _mp_cdf_table(round(float(gamma), 12))
    return scale * np.interp(np.asarray(q, dtype=np.float64), cdf, grid)


def mp_median(gamma: float) -> float:
    """Median of the unit-scale MP law with ratio ``gamma``."""
    grid, cdf = _mp_cdf_table(round(float(gamma), 12))
    return float(np.interp(0.5, cdf, grid))


# ----------------------------------------------------------------------------------------- corrected
def covariance_spectrum(x: np.ndarray) -> tuple[np.ndarray, float]:
    """Eigenvalues (descending) of ``X X^T / m`` for ``X`` oriented ``p x m`` with ``p <= m``, and ``gamma = p / m``."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or min(x.shape) < 2:
        raise ValueError(f"need a matrix with at least 2 rows and 2 columns, got shape {x.shape}")
    if x.shape[0] > x.shape[1]:
        x = x.T
    p, m = x.shape
    sv = np.linalg.svd(x, compute_uv=False)
    return np.sort(sv**2 / m)[::-1], p / m


def spectrum_metrics(eig: np.ndarray, gamma: float) -> dict[str, float]:
    """Corrected statistics of a covariance spectrum ``eig`` (descending) with aspect ratio ``gamma``."""
    row = spectra_metrics(np.asarray(eig, dtype=np.float64)[None, :], gamma)[0]
    return dict(zip(CORRECTED_METRICS, (float(x) for x in row), strict=True))


def spectra_metrics(eig: np.ndarray, gamma: float) -> np.ndarray:
    """:func:`spectrum_metrics` of many spectra at once: ``eig`` ``[spectrum, p]`` (each descending)
    -> ``[spectrum, len(CORRECTED_METRICS)]``; a spectrum whose largest value is not positive gives NaN."""
    eig = np.clip(np.asarray(eig, dtype=np.float64), 0.0, None)  # [spectrum, p]
    p = eig.shape[1]
    out = np.full((eig.shape[0], len(CORRECTED_METRICS)), np.nan)
    ok = eig[:, 0] > 0
    e = eig[ok]
    if not e.size:
        return out
    total, top = e.sum(1), e[:, 0]
    tiny = 1e-12 * top
    scale = np.median(e, axis=1) / mp_median(gamma)
    edge = scale * (1 + np.sqrt(gamma)) ** 2
    cut = edge * (1 + OUTLIER_MARGIN * p ** (-2 / 3)) + tiny
    n_out = (e > cut[:, None]).sum(1)
    bulk = scale > tiny
    ks = np.full(e.shape[0], np.nan)
    over = np.full(e.shape[0], np.inf)
    if bulk.any():
        ascending = e[bulk][:, ::-1] / scale[bulk, None]  # [spectrum, p] in units of the fitted scale
        grid, cdf = _mp_cdf_table(round(float(gamma), 12))
        model = np.interp(ascending, grid, cdf, left=0.0, right=1.0)
        hi_gap = np.abs(np.arange(1, p + 1) / p - model).max(1)
        lo_gap = np.abs(model - np.arange(0, p) / p).max(1)
        ks[bulk] = np.maximum(hi_gap, lo_gap)
        over[bulk] = top[bulk] / edge[bulk]
    # with no bulk (scale 0) every nonzero eigenvalue is an outlier and no law is compared
    out[ok] = np.stack([total**2 / (e**2).sum(1), total / top, (e[:, 0] - e[:, 1]) / top, n_out, over, ks, scale], 1)
    return out


def attention_spectra(a: np.ndarray) -> np.ndarray:
    """Eigenvalues (descending) of ``A A^T / n`` for each square matrix of ``a`` ``[..., n, n]`` -> ``[..., n]``."""
    a = np.asarray(a, dtype=np.float64)
    sv = np.linalg.svd(a, compute_uv=False)  # [..., n], descending
    return sv**2 / a.shape[-1]


def corrected_metrics(a: np.ndarray) -> dict[str, float]:
    """Corrected statistics of one attention matrix ``a`` ``[query, key]``."""
    eig, gamma = covariance_spectrum(a)
    return spectrum_metrics(eig, gamma)
