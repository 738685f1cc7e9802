"""The quantity behind each claim, measured on an analysis result under one mode: the registry and its tools.

Each analysis declares its own measures at the end of its module (``analyses/frames.py``,
``analyses/spectral.py``, ...), beside its reducer, its tables and its attention null, with the
:func:`measure` and :func:`shape_measure` decorators of this module; :func:`registered` loads them all (the
registered analyses, ``results.analyses``). A
measure is ``fn(result, mode) -> Estimate | None``: ``faithful`` is the authors' computation,
``corrected`` the book's; ``None`` means the mode has no such computation (no official notebook
computes it). Intervals are 95 % percentile bootstraps over sentences of the whole statistic
(a maximum over layers is bootstrapped as a maximum), unless the estimate says otherwise.

Measures of attention analyses get their null by running on :func:`nulls.null_result`; the others
(Fisher, the output check, the value space) carry their own null in :data:`NULLS`.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import stats
from ..results import ModelResult, analyses
from ..types import Mode
from .verdict import Estimate

N_BOOT = 1000
#: values of the resampled array built at once by :func:`boot` (about 128 MB of float64)
BOOT_CHUNK_VALUES = 2**24
BOOT = "95 % bootstrap over sentences"
#: :func:`boot` evaluates the statistic once per distinct resample when there are fewer than this many times
#: ``n_boot`` possible resamples (``n ** n`` for ``n`` sentences: up to 5 sentences at 1000 draws)
DEDUP_RESAMPLES = 10
LAYER_RANGE = "range of the layer means"
NO_INTERVAL = "none (a population value)"

MeasureFn = Callable[[ModelResult, Mode], "Estimate | None"]


@dataclass(frozen=True)
class Measure:
    """A named quantity: the analysis it reads, how it is computed, and how its null is made."""

    name: str
    analysis: str
    fn: MeasureFn
    null: str = "attention"  # "attention": the same fn on uniform attention; else a key of NULLS
    #: further nulls run beside the first: ``"layer_order"`` (the model's own layers in random orders,
    #: :func:`layer_order_null`), ``"uniform_graph"`` (thresholded uniform attention) or keys of NULLS
    extra_nulls: tuple[str, ...] = ()


MEASURES: dict[str, Measure] = {}
NULLS: dict[str, Callable[[ModelResult, Mode], Estimate | None]] = {}
NULLS["none"] = lambda r, mode: None

def registered() -> dict[str, Measure]:
    """:data:`MEASURES` with every analysis's measures (and their nulls in :data:`NULLS`) registered: the
    registered analyses (``results.analyses``) loaded, each module declaring its measures at import."""
    analyses()
    return MEASURES


def measure(name: str, analysis: str, null: str = "attention", extra_nulls: tuple[str, ...] = ()
            ) -> Callable[[MeasureFn], MeasureFn]:
    def deco(fn: MeasureFn) -> MeasureFn:
        MEASURES[name] = Measure(name, analysis, fn, null, extra_nulls)
        return fn

    return deco


#: for depth and shape measures: ``fn(result, mode) -> ([sample, ..., layer] values, statistic of their
#: sentence mean)``, so that :func:`layer_order_null` can recompute the statistic with the layers reordered
ShapeFn = Callable[[ModelResult, Mode], tuple[np.ndarray, Callable[[np.ndarray], float]] | None]
LAYER_SHAPES: dict[str, ShapeFn] = {}
#: every order of the layers is tried up to this many orders (7 layers); beyond, :data:`N_LAYER_ORDERS` seeded ones
MAX_EXACT_ORDERS = 5040
N_LAYER_ORDERS = 2000
LAYER_ORDER = "2.5-97.5 % of the statistic over the layers in random order (every order up to 7 layers)"


def _orders(n_layers: int, rng: np.random.Generator) -> tuple[np.ndarray, bool]:
    """``([order, layer] permutations, exact)``: all of them when few enough, else seeded random ones."""
    if math.factorial(n_layers) <= MAX_EXACT_ORDERS:
        return np.array(list(itertools.permutations(range(n_layers)))), True
    return np.array([rng.permutation(n_layers) for _ in range(N_LAYER_ORDERS)]), False


def layer_order_null(name: str, r: ModelResult, mode: Mode) -> Estimate | None:
    """The depth statistic ``name`` recomputed on the model's own layer means put in other orders: the shape a
    model would show if depth did not matter. A permutation test: ``permutation`` holds the one-sided p-values of
    the model's own order (the share of orders whose statistic reaches it, counting the model's), and the
    smallest p-value any order of these layers could reach (a 6-layer model has 720 orders, and a statistic of
    region means gives many of them the same value, so its p-value has a floor). The interval is the 2.5-97.5 %
    range of the statistic over the orders."""
    got = LAYER_SHAPES[name](r, mode)
    if got is None:
        return None
    x, stat = got
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        m = np.nanmean(np.asarray(x, dtype=float), 0)  # [..., layer]
        rng = np.random.default_rng(seed_of(r) + 7919)
        orders, exact = _orders(m.shape[-1], rng)
        if _batched(stat):  # every order at once: [order, ..., layer] -> [order]
            draws = np.asarray(stat(np.moveaxis(m[..., orders], -2, 0)), dtype=float).reshape(len(orders))
        else:
            draws = np.array([stat(m[..., order]) for order in orders], dtype=float)  # [order]
        observed = float(stat(m))
    ok = draws[~np.isnan(draws)]
    if ok.size < 0.95 * len(orders) or math.isnan(observed):
        return Estimate(math.nan, math.nan, math.nan, n=x.shape[0], interval=LAYER_ORDER, undetermined=True,
                        detail="undefined in some layer orders")
    tol = 1e-9 * max(1.0, abs(observed))
    extra = 0 if exact else 1  # seeded orders: the model's own order counts as one more

    def share(count: int) -> float:
        return (count + extra) / (ok.size + extra)

    perm = {"p_greater": share(int(np.sum(ok >= observed - tol))), "p_less": share(int(np.sum(ok <= observed + tol))),
            "reachable_greater": share(int(np.sum(ok >= ok.max() - tol))),
            "reachable_less": share(int(np.sum(ok <= ok.min() + tol))),
            "orders": float(ok.size), "exact": float(exact), "observed": observed}
    return Estimate(float(np.median(ok)), float(np.quantile(ok, 0.025)), float(np.quantile(ok, 0.975)),
                    n=x.shape[0], interval=LAYER_ORDER, detail="layers in random order", permutation=perm)


#: the nulls every depth and shape measure runs beside its first: both can pass where depth does not matter
DEPTH_NULLS = ("layer_order", "random_twin")


def shape_measure(name: str, analysis: str, nulls: tuple[str, ...] = DEPTH_NULLS, null: str = "attention"
                  ) -> Callable[[ShapeFn], ShapeFn]:
    """Register a depth/shape measure from its ``(values, statistic)``: the bootstrap estimate, the
    attention null, the layer-order null and the random-initialized twin's."""
    def deco(shape: ShapeFn) -> ShapeFn:
        def fn(r: ModelResult, mode: Mode) -> Estimate | None:
            got = shape(r, mode)
            return None if got is None else boot(got[0], got[1], seed_of(r))

        MEASURES[name] = Measure(name, analysis, fn, null, nulls)
        LAYER_SHAPES[name] = shape
        return shape

    return deco


def region_parts(x: np.ndarray, groups: dict[str, list[int]], seed: int) -> list[list[Any]]:
    """One ``[label, value, low, high]`` per group of positions along the last axis of ``x``
    ``[sample, ..., layer]``: the group mean with its bootstrap interval over sentences."""
    parts: list[list[Any]] = []
    for k, (label, idx) in enumerate(groups.items()):
        if not idx:
            continue
        e = boot(x[..., idx], lambda m: float(np.nanmean(m)), seed + 101 * (k + 1))
        parts.append([label, e.value, e.low, e.high])
    return parts


def with_parts(est: Estimate, parts: list[list[Any]], value: float | None = None, detail: str = "") -> Estimate:
    """``est`` carrying per-part intervals (its value replaced by ``value`` when given)."""
    lows = [p[2] for p in parts if p[2] is not None and not math.isnan(p[2])]
    highs = [p[3] for p in parts if p[3] is not None and not math.isnan(p[3])]
    v = est.value if value is None else value
    return Estimate(v, min(lows) if lows else est.low, max(highs) if highs else est.high, est.n,
                    est.interval + "; one interval per part", detail or est.detail, est.undetermined, parts)


def seed_of(r: ModelResult) -> int:
    """The seed the analysis ran with: every bootstrap of its measures starts from it."""
    return int(r.params.get("seed", 0))


def _batched(stat: Callable[[np.ndarray], float]) -> bool:
    """Whether ``stat`` is marked ``batched``: it takes a stack of inputs on its leading axis and returns one value
    per input (``analyses.spectral``'s region-ratio statistics)."""
    return bool(getattr(stat, "batched", False))


def _draws(stat: Callable[[np.ndarray], float], means: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """``stat`` of each resample's ``means``. With few sentences the same resample is drawn many times (3
    sentences: 27 possible draws of 3): ``stat`` then runs once per distinct draw and the others copy its value,
    the same value it would compute again (the same rows give the same means). A ``stat`` marked ``batched``
    takes every resample's means at once."""
    n_boot, n = idx.shape
    if _batched(stat):  # one call on every resample's means, ``[boot, ...] -> [boot]``
        return np.asarray(stat(means), dtype=float).reshape(n_boot)
    if n ** n >= DEDUP_RESAMPLES * n_boot:  # few repeats to expect: one call per draw
        return np.array([stat(m) for m in means], dtype=float)
    _, first, inverse = np.unique(idx, axis=0, return_index=True, return_inverse=True)
    return np.array([stat(means[i]) for i in first], dtype=float)[inverse.reshape(-1)]


def boot(x: np.ndarray, stat: Callable[[np.ndarray], float], seed: int = 0, n_boot: int = N_BOOT,
         level: float = 0.95) -> Estimate:
    """``stat`` of the mean over sentences of ``x`` ``[sample, ...]``, with a ``level`` bootstrap interval
    over sentences; an undefined statistic (NaN) in more than 5 % of resamples leaves it undetermined."""
    x = np.asarray(x, dtype=float)
    n = x.shape[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN slices: undefined statistic
        value = float(stat(np.nanmean(x, 0)))
        if n < 2:
            return Estimate(value, value, value, n=n, interval="none (one sentence)", undetermined=math.isnan(value))
        idx = np.random.default_rng(seed).integers(0, n, (n_boot, n))  # [boot, sample]: the same draws one by one
        chunk = max(1, BOOT_CHUNK_VALUES // max(1, x.size))  # replicates resampled at once, memory bounded
        # without a NaN, nanmean is mean (the same sums, divided by the same count) less the copy it makes to mask
        mean_of = np.nanmean if np.isnan(x).any() else np.mean
        means = np.concatenate([mean_of(x[idx[i : i + chunk]], 1) for i in range(0, n_boot, chunk)])  # [boot, ...]
        draws = _draws(stat, means, idx)
    ok = draws[~np.isnan(draws)]
    kind = BOOT if level == 0.95 else f"{level:.1%} bootstrap over sentences"
    if math.isnan(value) or ok.size < 0.95 * n_boot:
        return Estimate(value, math.nan, math.nan, n=n, interval=kind, undetermined=True,
                        detail="undefined in some resamples (a constant series or no data)")
    alpha = (1 - level) / 2
    return Estimate(value, float(np.quantile(ok, alpha)), float(np.quantile(ok, 1 - alpha)), n=n, interval=kind)


def regions_in(layers: Sequence[int], n_layers: int) -> dict[str, list[int]]:
    """Positions (in ``layers``) of the layers in each third of the model."""
    out: dict[str, list[int]] = {"early": [], "middle": [], "late": []}
    for i, layer in enumerate(layers):
        out[stats.region_of(layer, n_layers)].append(i)
    return out


def region_stat(layers: Sequence[int], n_layers: int, combine: Callable[[dict[str, float]], float]
                ) -> Callable[[np.ndarray], float]:
    """The statistic ``combine({region: mean})`` of a layer vector (``layers`` its layer numbers); NaN when a
    third of the model has no analysed layer."""
    reg = regions_in(layers, n_layers)

    def stat(m: np.ndarray) -> float:
        if not all(reg.values()):
            return math.nan
        return combine({k: float(np.nanmean(m[v])) for k, v in reg.items()})

    return stat


