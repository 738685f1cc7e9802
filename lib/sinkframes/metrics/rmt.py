"""Random-matrix statistics of attention (paper App. B): the official ones and corrected ones.

**Faithful** (``official_code_spec.md`` 6.2), on one ``n x n`` matrix ``A``:
``eigvals(A)`` by moduli (for a causal, lower-triangular ``A`` these are exactly its diagonal, the
self-attention weights), spectral gap ``mu1 / mu2``, participation ratio ``(sum mu)^2 / sum mu^2``,
stable rank ``sum s^2 / s1^2``, a KL divergence between a 20-bin histogram of the top-10 moduli
(divided by their mean) and a Marchenko-Pastur density with ``gamma = 0.99`` (``inf`` when a bin
outside the MP support holds mass), row entropy in bits and the 90th-percentile column-sum share.
Checkpoints are ordered as strings (:func:`faithful_order`).

**Corrected**: statistics of the attention matrix's *deviation from structureless attention on the same
mask*, ``X = (number of keys query i can see) * A[i, j] - 1`` on the keys query ``i`` can see and 0 on the
others (:func:`deviation_matrix`): each weight in units of the uniform weight, so uniform attention (causal or
not) is ``X = 0`` and every row of ``X`` sums to 0. The raw matrix is no use here: a row-stochastic ``A`` has
``A 1 = 1``, so its largest singular value is at least 1 whatever the attention does, and a perfect sink and
uniform attention are both rank one. The spectrum is that of ``X X^T / n`` (squared singular values over
``n``), and the null is the same computation on iid Gaussian noise with the same mask, row-centred the same
way (:func:`noise_null`, seeded, ``NULL_DRAWS`` draws): for bidirectional attention that is the
Marchenko-Pastur law at ratio ``gamma = 1``; for causal attention the matrix is lower-triangular, whose noise
spectrum is not MP (its edge sits near ``2e`` times the mean eigenvalue, not 4), so the null is simulated on
the triangle rather than read from a formula. The scale is the mean eigenvalue (the matrix's energy per
entry), which is zero only when ``X`` is: the edge is that scale times the null's mean largest eigenvalue, an
outlier lies above the scale times the null's mean largest plus ``OUTLIER_SDS`` standard deviations,
``top_over_edge`` is the largest eigenvalue over the edge (about 1 for noise; at most ``n`` over the null
edge, reached by a rank-one ``X``), ``ks_distance`` the Kolmogorov-Smirnov distance of the scaled eigenvalues
to the null's, and ``rms_deviation`` the root mean square of ``X`` over the visible entries (0 for uniform
attention, where every other statistic is undefined). The scale includes any outlier's energy, so a strong
spike raises the edge: the outlier count errs towards too few.

Singular values do not change when keys are relabelled, so none of these statistics can say *which* token
a sink sits on, or tell a first-token frame from a sink on any other single key; the first-token share says
that. Checkpoints are ordered by step (:func:`step_order`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

#: official constants (``rmt.ipynb``)
OFFICIAL_TOP_K = 10
OFFICIAL_BINS = 20
OFFICIAL_GAMMA = 0.99
OFFICIAL_SINK_PERCENTILE = 90
#: :func:`spectrum_metrics` (a data matrix against MP): an eigenvalue is an outlier above
#: ``edge * (1 + OUTLIER_MARGIN * p ** (-2/3))`` (the Tracy-Widom scale of the largest eigenvalue's fluctuation)
OUTLIER_MARGIN = 2.0
#: corrected: Gaussian draws behind the same-mask null, its seed, and how many of the null's standard
#: deviations of the largest eigenvalue above its mean make an outlier
NULL_DRAWS = 32
NULL_SEED = 0
OUTLIER_SDS = 3.0
#: corrected: the smallest matrix described, and the root-mean-square deviation below which attention counts
#: as uniform (float32 round-off of weights, in units of the uniform weight)
MIN_TOKENS = 3
ZERO_DEVIATION = 1e-6

FAITHFUL_METRICS = ("spectral_gap", "participation_ratio", "stable_rank", "marchenko_pastur_kl", "entropy",
                    "sink_concentration")
CORRECTED_METRICS = ("participation_ratio", "stable_rank", "relative_gap", "n_outliers", "top_over_edge",
                     "ks_distance", "rms_deviation")
_MODE_METRICS = {"faithful": FAITHFUL_METRICS, "corrected": CORRECTED_METRICS}


def rmt_key(mode: str, metric: str) -> str:
    """The result key of ``metric`` under ``mode`` (``rmt_key("corrected", "relative_gap")`` is
    ``"corrected/relative_gap"``): the one place such a key is spelled; an unknown name raises."""
    if metric not in _MODE_METRICS.get(mode, ()):
        raise KeyError(f"no {mode} statistic {metric!r}; they are {_MODE_METRICS.get(mode)}")
    return f"{mode}/{metric}"


#: :func:`spectrum_metrics` of a data matrix against the MP law
MP_METRICS = ("participation_ratio", "stable_rank", "relative_gap", "n_outliers", "top_over_edge", "ks_distance",
              "mp_scale")


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


# ----------------------------------------------------------------------------------------- MP on a data matrix
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


def _ks(ascending: np.ndarray, model: np.ndarray) -> np.ndarray:
    """KS distance of each row's empirical CDF (``ascending`` ``[spectrum, p]``) to the model CDF at those points."""
    p = ascending.shape[1]
    return np.maximum(np.abs(np.arange(1, p + 1) / p - model).max(1), np.abs(model - np.arange(0, p) / p).max(1))


def spectrum_metrics(eig: np.ndarray, gamma: float) -> dict[str, float]:
    """A covariance spectrum ``eig`` (descending, of a ``p x m`` data matrix with ``gamma = p / m``) against the MP
    law whose scale is the mean eigenvalue (``MP_METRICS``); a spectrum with no positive value gives NaN."""
    e = np.clip(np.asarray(eig, dtype=np.float64), 0.0, None)
    out = dict.fromkeys(MP_METRICS, float("nan"))
    if e.size < 2 or e[0] <= 0:
        return out
    p, total = e.size, e.sum()
    scale = total / p
    edge = scale * (1 + np.sqrt(gamma)) ** 2
    grid, cdf = _mp_cdf_table(round(float(gamma), 12))
    model = np.interp(e[::-1] / scale, grid, cdf, left=0.0, right=1.0)
    out.update(participation_ratio=total**2 / np.sum(e**2), stable_rank=total / e[0], relative_gap=(e[0] - e[1]) / e[0],
               n_outliers=float(np.sum(e > edge * (1 + OUTLIER_MARGIN * p ** (-2 / 3)))), top_over_edge=e[0] / edge,
               ks_distance=float(_ks(e[None, ::-1] / scale, model[None])[0]), mp_scale=scale)
    return {k: float(v) for k, v in out.items()}


# ----------------------------------------------------------------------------------------- corrected
def visible_keys(n: int, causal: bool) -> np.ndarray:
    """``[query, key]`` bool: the keys each query can see (its own position and earlier ones when causal)."""
    return np.tril(np.ones((n, n), dtype=bool)) if causal else np.ones((n, n), dtype=bool)


def deviation_matrix(a: np.ndarray, causal: bool) -> np.ndarray:
    """``(visible keys of query i) * a[..., i, j] - 1`` on visible keys, 0 elsewhere: ``a`` ``[..., n, n]``
    against uniform attention on the same mask, in units of the uniform weight (0 for uniform attention)."""
    a = np.asarray(a, dtype=np.float64)
    mask = visible_keys(a.shape[-1], causal)
    count = mask.sum(-1, keepdims=True)  # [query, 1]
    return np.where(mask, count * a - 1.0, 0.0)


def deviation_spectra(a: np.ndarray, causal: bool) -> np.ndarray:
    """Eigenvalues (descending) of ``X X^T / n`` for the deviation ``X`` of each matrix of ``a`` ``[..., n, n]``."""
    x = deviation_matrix(a, causal)
    return np.linalg.svd(x, compute_uv=False) ** 2 / x.shape[-1]  # [..., n], descending


@dataclass(frozen=True)
class NoiseNull:
    """The spectrum of same-mask noise, each draw divided by its mean eigenvalue: every draw's eigenvalues
    (``pooled``, sorted), the mean largest (``edge``) and the outlier cut (``edge`` + ``OUTLIER_SDS`` sd)."""

    pooled: np.ndarray
    edge: float
    cut: float


@lru_cache(maxsize=1024)
def noise_null(n: int, causal: bool) -> NoiseNull:
    """The null of :func:`deviation_metrics` for ``n`` tokens: iid Gaussian entries on the visible keys, each
    row centred over them (as a deviation of row-stochastic attention is), ``NULL_DRAWS`` seeded draws."""
    rng = np.random.default_rng([NULL_SEED, n, int(causal)])
    mask = visible_keys(n, causal)
    g = np.where(mask, rng.standard_normal((NULL_DRAWS, n, n)), 0.0)  # [draw, query, key]
    g = np.where(mask, g - g.sum(-1, keepdims=True) / mask.sum(-1, keepdims=True), 0.0)
    e = np.linalg.svd(g, compute_uv=False) ** 2 / n  # [draw, n], descending
    e /= e.mean(-1, keepdims=True)
    top = e[:, 0]
    return NoiseNull(np.sort(e.ravel()), float(top.mean()), float(top.mean() + OUTLIER_SDS * top.std(ddof=1)))


def deviation_metrics(eig: np.ndarray, causal: bool) -> np.ndarray:
    """``CORRECTED_METRICS`` of many deviation spectra of ``n``-token attention at once: ``eig`` ``[spectrum, n]``
    (each descending, from :func:`deviation_spectra`) -> ``[spectrum, metric]``. Uniform attention (no deviation)
    has ``rms_deviation`` 0, no outlier and the rest NaN; fewer than ``MIN_TOKENS`` tokens give NaN throughout."""
    eig = np.clip(np.asarray(eig, dtype=np.float64), 0.0, None)  # [spectrum, n]
    count, n = eig.shape
    out = np.full((count, len(CORRECTED_METRICS)), np.nan)
    if n < MIN_TOKENS:
        return out
    visible = n * (n + 1) / 2 if causal else n * n
    total = eig.sum(1)
    rms = np.sqrt(total * n / visible)  # ||X||_F^2 = n * sum(eig)
    flat = rms <= ZERO_DEVIATION
    out[flat, CORRECTED_METRICS.index("n_outliers")] = 0.0
    out[flat, CORRECTED_METRICS.index("rms_deviation")] = 0.0
    e, total = eig[~flat], total[~flat]
    if not e.size:
        return out
    null = noise_null(n, causal)
    scale = total / n  # mean eigenvalue
    ascending = e[:, ::-1] / scale[:, None]
    model = np.searchsorted(null.pooled, ascending, side="right") / null.pooled.size
    out[~flat] = np.stack([total**2 / (e**2).sum(1), total / e[:, 0], (e[:, 0] - e[:, 1]) / e[:, 0],
                           (e > null.cut * scale[:, None]).sum(1), e[:, 0] / (null.edge * scale), _ks(ascending, model),
                           rms[~flat]], 1)
    return out


def corrected_metrics(a: np.ndarray, causal: bool) -> dict[str, float]:
    """Corrected statistics of one attention matrix ``a`` ``[query, key]`` (:func:`deviation_metrics`)."""
    a = np.asarray(a, dtype=np.float64)
    row = deviation_metrics(deviation_spectra(a, causal)[None], causal)[0]
    return dict(zip(CORRECTED_METRICS, (float(x) for x in row), strict=True))
