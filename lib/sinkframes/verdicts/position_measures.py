"""Measures of the position-intervention chapter (``analyses.positions``), and their nulls.

Every measure here reads the per-sentence arrays of the passes (unmodified and intervened, paired by
sentence) and bootstraps over sentences. There is no official computation of any of them (the paper
ran no intervention), so the faithful mode has none. Nulls: uniform attention pushed through the
same interventions (``analyses.positions.null_from``), the model's random-initialized twin
(``random_twin``: the same measure on the twin's passes), and for the co-location claim the first
token's norm profile with its layers shuffled.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from ..analyses.base import ModelResult
from ..types import Mode
from .measures import BOOT, NULLS, _seed, boot, measure, shape_measure, with_parts
from .verdict import Estimate

ANALYSIS = "positions"
TWIN = ("random_twin",)
#: the two "modified RoPE" schemes at Qwen2.5's published factor (``probes.positions.SCALING_FACTOR``)
SCALED = ("NTK-aware x4", "linear PI x4")
#: the two ways of taking the absolute positions out of an encoder
NO_ABSOLUTE = ("table zeroed", "table -> mean")
PERMUTED = "ids permuted"
#: a first-token attractor head: a head whose mean first-token share reaches this
ATTRACTOR_SHARE = 0.5
#: the layers the early-attractor account speaks of (the first two)
EARLY_LAYERS = (0, 1)
N_SHUFFLES = 200


def _runs(r: ModelResult) -> dict[str, Any]:
    return r.data["runs"]


def _scored(r: ModelResult, names: tuple[str, ...]) -> list[str]:
    return [n for n in names if n in _runs(r) and not _runs(r)[n]["check"]["broken"]]


def _undetermined(r: ModelResult, why: str) -> Estimate:
    return Estimate(math.nan, math.nan, math.nan, n=r.n_sentences, interval=BOOT, undetermined=True, detail=why)


@measure("positions.frame_changes", ANALYSIS, extra_nulls=TWIN)
def frame_changes(r: ModelResult, mode: Mode) -> Estimate | None:
    """How many interventions on the position encoding (function intact) change the frame label, with the
    label of each bootstrap resample of sentences recomputed for the unmodified and every intervened pass."""
    if mode == "faithful":
        return None
    from ..analyses.frames import classify
    from ..analyses.positions import EVIDENCE
    from ..probes.positions import ENCODING_GROUPS

    runs = _runs(r)
    names = [n for n, run in runs.items() if run["group"] in ENCODING_GROUPS and not run["check"]["broken"]]
    if not names:
        return _undetermined(r, "no intervention on the position encoding left the model working")
    order = ["unmodified", *names]
    causal = [bool(runs[n]["causal"]) for n in order]
    keys = list(EVIDENCE.items())
    x = np.stack([np.stack([runs[n]["arrays"][v] for _, v in keys], 1) for n in order], 1)  # [sample, run, 4, layer]

    def labels(m: np.ndarray) -> list[str]:
        return [classify({k: float(np.nanmean(m[j, i])) for i, (k, _) in enumerate(keys)}, causal[j])[0]
                for j in range(len(order))]

    def count(m: np.ndarray) -> float:
        got = labels(m)
        return float(sum(lbl != got[0] for lbl in got[1:]))

    changed = [n for n, lbl in zip(order[1:], labels(np.nanmean(x, 0))[1:], strict=True)
               if lbl != runs["unmodified"]["frame"]]
    est = boot(x, count, _seed(r))
    detail = (f"of {len(names)} scored interventions; changed: {', '.join(changed)}" if changed
              else f"none of {len(names)} scored interventions changes the label ({runs['unmodified']['frame']})")
    return Estimate(est.value, est.low, est.high, est.n, est.interval, detail, est.undetermined)


def _paired_change(r: ModelResult, names: tuple[str, ...], array: str) -> Estimate:
    """Per intervention, the sentence-paired change of the layer-mean ``array`` against the unmodified pass."""
    runs = _runs(r)
    scored = _scored(r, names)
    if not scored:
        return _undetermined(r, f"none of {', '.join(names)} left the model working (or ran)")
    base = np.nanmean(runs["unmodified"]["arrays"][array], 1)  # [sample]
    parts = []
    for k, n in enumerate(scored):
        d = np.nanmean(runs[n]["arrays"][array], 1) - base
        e = boot(d, lambda m: float(m), _seed(r) + 31 * (k + 1))
        parts.append([n, e.value, e.low, e.high])
    first = boot(np.nanmean(runs[scored[0]]["arrays"][array], 1) - base, lambda m: float(m), _seed(r) + 31)
    return with_parts(first, parts, value=float(np.mean([p[1] for p in parts])),
                      detail="the value is the mean of the parts' changes")


@measure("positions.scaled_rope_first_share_change", ANALYSIS, extra_nulls=TWIN)
def scaled_rope_first_share_change(r: ModelResult, mode: Mode) -> Estimate | None:
    """The change of the first-token share (layer and head mean) under NTK-aware scaling and under linear
    position interpolation, each paired by sentence with the unmodified pass."""
    return None if mode == "faithful" else _paired_change(r, SCALED, "first_share")


@measure("positions.absolute_last_share_change", ANALYSIS, extra_nulls=TWIN)
def absolute_last_share_change(r: ModelResult, mode: Mode) -> Estimate | None:
    """The change of the last-token share when the learned position table is zeroed or replaced by its mean."""
    return None if mode == "faithful" else _paired_change(r, NO_ABSOLUTE, "last_share")


def _sink_share(r: ModelResult, where: str) -> Estimate:
    from ..analyses.positions import where_the_sink_is

    runs = _runs(r)
    if PERMUTED not in runs or runs[PERMUTED]["check"]["broken"]:
        return _undetermined(r, "the permutation did not run or broke the model")
    layers = r.data["sink_layers"]
    if not layers:
        return _undetermined(r, "no layer has its unmodified sink on position 0 in half the sentences")
    share = where_the_sink_is(runs[PERMUTED]["arrays"], layers)[where]  # [sample]
    est = boot(share, lambda m: float(m), _seed(r))
    return Estimate(est.value, est.low, est.high, est.n, est.interval,
                    f"over {len(layers)} sink layers, position ids permuted", est.undetermined)


@measure("positions.sink_on_position_id0", ANALYSIS, extra_nulls=TWIN)
def sink_on_position_id0(r: ModelResult, mode: Mode) -> Estimate | None:
    """With position ids permuted, the share of sink layers whose sink moves to the token that carries id 0."""
    return None if mode == "faithful" else _sink_share(r, "position id 0")


@measure("positions.sink_on_physical0", ANALYSIS, extra_nulls=TWIN)
def sink_on_physical0(r: ModelResult, mode: Mode) -> Estimate | None:
    """With position ids permuted, the share of sink layers whose sink stays on the first physical token."""
    return None if mode == "faithful" else _sink_share(r, "physical 0")


def onset(profile: np.ndarray) -> float:
    """The first layer at which ``profile [layer]`` reaches halfway from its minimum to its maximum (NaN if flat)."""
    p = np.asarray(profile, dtype=float)
    lo, hi = np.nanmin(p), np.nanmax(p)
    if not np.isfinite(hi - lo) or hi - lo <= 0:
        return math.nan
    return float(np.argmax(p >= lo + 0.5 * (hi - lo)))


def _profiles(r: ModelResult) -> np.ndarray:
    """``[sample, 2, layer]``: the first-token share and the first token's residual ratio entering each layer."""
    a = _runs(r)["unmodified"]["arrays"]
    n_layers = a["first_share"].shape[1]
    return np.stack([a["first_share"], a["residual_ratio"][:, :n_layers]], 1)


@measure("positions.onset_minus_norm_spike", ANALYSIS, null="norm_layers_shuffled")
def onset_minus_norm_spike(r: ModelResult, mode: Mode) -> Estimate | None:
    """The layer where the first-token share rises (halfway to its maximum) minus the layer where the first
    token's residual norm, relative to the other tokens', does: 0 when the sink forms where the norm spikes."""
    if mode == "faithful":
        return None
    return boot(_profiles(r), lambda m: onset(m[0]) - onset(m[1]), _seed(r))


def _norm_shuffled(r: ModelResult, mode: Mode) -> Estimate | None:
    """The same difference with the norm profile's layers in :data:`N_SHUFFLES` seeded random orders: where
    the rises would fall if the two profiles had nothing to do with each other."""
    if mode == "faithful":
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        m = np.nanmean(_profiles(r), 0)  # [2, layer]
    rng = np.random.default_rng(_seed(r) + 4099)
    draws = np.array([onset(m[0]) - onset(m[1][rng.permutation(m.shape[1])]) for _ in range(N_SHUFFLES)])
    ok = draws[~np.isnan(draws)]
    if ok.size < 0.95 * N_SHUFFLES:
        return Estimate(math.nan, math.nan, math.nan, undetermined=True, detail="a flat profile")
    return Estimate(float(np.median(ok)), float(np.quantile(ok, 0.025)), float(np.quantile(ok, 0.975)),
                    n=r.n_sentences, interval=f"2.5-97.5 % over {N_SHUFFLES} seeded layer orders of the norm profile",
                    detail="norm profile in random layer order")


NULLS["norm_layers_shuffled"] = _norm_shuffled


@shape_measure("positions.early_attractor_heads", ANALYSIS, nulls=TWIN, null="layer_order")
def early_attractor_heads(r: ModelResult, mode: Mode) -> tuple[np.ndarray, Any] | None:
    """Heads of the first two layers whose first-token share reaches :data:`ATTRACTOR_SHARE` (unmodified pass)."""
    if mode == "faithful":
        return None
    x = np.swapaxes(_runs(r)["unmodified"]["arrays"]["first_share_heads"], 1, 2)  # [sample, head, layer]
    return x, lambda m: float((m[:, list(EARLY_LAYERS)] >= ATTRACTOR_SHARE).sum())


@measure("positions.sink_value_ratio", ANALYSIS, null="random_twin")
def sink_value_ratio(r: ModelResult, mode: Mode) -> Estimate | None:
    """Median, over sink heads (mean first-token share at least :data:`ATTRACTOR_SHARE`), of the first token's
    value norm over the median value norm of the other tokens (the KV head each sink head reads)."""
    if mode == "faithful":
        return None
    a = _runs(r)["unmodified"]["arrays"]
    if "value_ratio" not in a:
        return None  # the attention hook reads no values for this architecture
    heads = np.nanmean(a["first_share_heads"], 0)  # [layer, head]
    group = heads.shape[1] // a["value_ratio"].shape[2]
    pairs = sorted({(int(lyr), int(h) // group) for lyr, h in zip(*np.nonzero(heads >= ATTRACTOR_SHARE), strict=True)})
    if not pairs:
        return _undetermined(r, f"no head with a mean first-token share of {ATTRACTOR_SHARE:g} or more")
    rows, cols = [p[0] for p in pairs], [p[1] for p in pairs]
    est = boot(a["value_ratio"][:, rows, cols], lambda m: float(np.nanmedian(m)), _seed(r))
    noop = int((np.nanmean(a["value_ratio"][:, rows, cols], 0) < 1).sum())
    return Estimate(est.value, est.low, est.high, est.n, est.interval,
                    f"{len(pairs)} sink (layer, KV head) pairs, {noop} of them with a short sink value (no-op)",
                    est.undetermined)
