"""Measures of the controlled grid (``analyses.controlled``): the training side of Sec. 3.4 and App. B.

The subjects are the softmax grids of the two architectures. A measure reads each run's last
checkpoint and pairs the runs by seed (one seed: the same initial weights and batches in every
cell), so that a difference between two cells is the effect of their one switch. The interval of
every estimate is the range over seeds (or over runs): three seeds give no confidence interval,
and the range is the honest statement of what they show.

Nulls: the same grid at step 0 (``random_twin``: the random-initialized models, the position
encoding already switched), and for the label changes, the changes between seeds of one cell.
There is no official computation (the paper trained nothing), so the faithful mode has none.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..analyses.base import ModelResult
from ..analyses.controlled import run_rows, seeds_of, step_of
from ..types import Mode
from .measures import NULLS, measure
from .verdict import Estimate

ANALYSIS = "controlled"
SEED_RANGE = "range over seeds"
RUN_RANGE = "range over runs"
#: the standard pairing of each architecture, against which the other encodings are compared
REFERENCE = {True: "rope", False: "learned"}
#: the paper's "modified RoPE": a large base (Qwen2.5), NTK-aware scaling, partial rotation (Phi-2)
MODIFIED_ROPE = ("rope_1e6", "rope_ntk4", "partial_0.5", "partial_0.25")
TWIN = ("random_twin",)


def _final(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return next(r for r in rows if r["final"])


def _positions(r: ModelResult) -> list[str]:
    return list(dict.fromkeys(rows[0]["position"] for rows in r.data["runs"].values()))


def _label(r: ModelResult, position: str, seed: int) -> str | None:
    rows = run_rows(r, position, "softmax", seed)
    return None if rows is None else str(_final(rows)["frame"])


def _seed_range(values: list[float], detail: str = "", n: int = 0) -> Estimate:
    v = [x for x in values if math.isfinite(x)]
    if not v:
        return Estimate(math.nan, math.nan, math.nan, n=n, interval=SEED_RANGE, detail=detail, undetermined=True)
    return Estimate(float(np.median(v)), min(v), max(v), n=len(v), interval=SEED_RANGE, detail=detail)


@measure("controlled.label_changes", ANALYSIS, null="seed_label_changes", extra_nulls=TWIN)
def label_changes(r: ModelResult, mode: Mode) -> Estimate | None:
    """Per seed, how many position encodings give another final frame label than the architecture's standard
    one (RoPE for the decoder, the learned table for the encoder); median and range over seeds."""
    if mode == "faithful":
        return None
    ref = REFERENCE[r.causal]
    others = [p for p in _positions(r) if p != ref]
    counts, changed = [], set()
    for s in seeds_of(r):
        base = _label(r, ref, s)
        got = {p: _label(r, p, s) for p in others}
        diff = [p for p, lbl in got.items() if lbl is not None and lbl != base]
        changed.update(diff)
        counts.append(float(len(diff)))
    return _seed_range(counts, f"of {len(others)} encodings against {ref}; changed in some seed: "
                               f"{', '.join(sorted(changed)) or 'none'}")


def _seed_label_changes(r: ModelResult, mode: Mode) -> Estimate | None:
    """The same count with the seed as the switch: per seed, how many encodings change label at the next seed."""
    if mode == "faithful":
        return None
    seeds = seeds_of(r)
    counts = []
    for i, s in enumerate(seeds):
        nxt = seeds[(i + 1) % len(seeds)]
        counts.append(float(sum(_label(r, p, s) != _label(r, p, nxt) for p in _positions(r))))
    return _seed_range(counts, "label changes between seeds of one encoding")


NULLS["seed_label_changes"] = _seed_label_changes


def _mean_first(r: ModelResult, position: str, seed: int) -> float:
    rows = run_rows(r, position, "softmax", seed)
    return math.nan if rows is None else float(np.mean(_final(rows)["first_share"]))


@measure("controlled.scaled_first_share_change", ANALYSIS, null="random_twin")
def scaled_first_share_change(r: ModelResult, mode: Mode) -> Estimate | None:
    """Per modified-RoPE scheme, the paired (same seed) change of the layer-mean first-token share against
    standard RoPE at the last checkpoint; one part per scheme, each with its range over seeds."""
    if mode == "faithful" or not r.causal:
        return None
    parts: list[list[Any]] = []
    lows: list[float] = []
    highs: list[float] = []
    for scheme in MODIFIED_ROPE:
        d = [_mean_first(r, scheme, s) - _mean_first(r, "rope", s) for s in seeds_of(r)]
        d = [x for x in d if math.isfinite(x)]
        if d:
            parts.append([scheme, float(np.mean(d)), min(d), max(d)])
            lows.append(min(d))
            highs.append(max(d))
    if not parts:
        return None
    return Estimate(float(np.mean([p[1] for p in parts])), min(lows), max(highs), n=len(seeds_of(r)),
                    interval=SEED_RANGE, parts=parts, detail="modified RoPE minus standard RoPE, paired by seed")


@measure("controlled.learned_encoder_bidirectional", ANALYSIS, null="random_twin")
def learned_encoder_bidirectional(r: ModelResult, mode: Mode) -> Estimate | None:
    """Per seed, 1 when the learned-table encoder's final frame label is bidirectional, else 0."""
    if mode == "faithful" or r.causal:
        return None
    got = [_label(r, "learned", s) for s in seeds_of(r)]
    values = [float(lbl == "bidirectional") for lbl in got if lbl is not None]
    return _seed_range(values, "labels: " + ", ".join(str(x) for x in got))


@measure("controlled.sink_lag", ANALYSIS, null="random_twin")
def sink_lag(r: ModelResult, mode: Mode) -> Estimate | None:
    """Over the softmax runs in which a sink forms and the loss drops: log2(sink step / loss step), the
    doublings of training between the drop of the loss and the sink (negative: the sink came first)."""
    if mode == "faithful":
        return None
    lags = []
    for rows in r.data["runs"].values():
        first = rows[0]
        if first["attention"] != "softmax":
            continue
        sink, loss = step_of(first["sink_step"]), step_of(first["loss_step"])
        if sink is not None and loss is not None and sink > 0 and loss > 0:
            lags.append(math.log2(sink / loss))
    n_runs = sum(rows[0]["attention"] == "softmax" for rows in r.data["runs"].values())
    detail = f"{len(lags)} of {n_runs} softmax runs formed a sink and dropped their loss"
    if not lags:
        return Estimate(math.nan, math.nan, math.nan, interval=RUN_RANGE, detail=detail, undetermined=True)
    return Estimate(float(np.median(lags)), min(lags), max(lags), n=len(lags), interval=RUN_RANGE, detail=detail)

