"""The controlled grid measured: where each run's attention goes at each committed checkpoint.

For every run of :mod:`sinkframes.training.controlled` and every checkpoint, one forward pass of a
fixed probe set (``PROBE_SIZE`` sequences of the task, drawn with a seed no run trains on) gives:

- the task loss, beside the loss of predicting zero everywhere;
- per layer: the head-mean first-token share with its 95 % bootstrap interval over probe sequences,
  the last-token share, the mean attention mass of a row, and where the sink sits
  (:func:`~sinkframes.metrics.positions.sink_location`: the first token, the last, elsewhere or none);
- the corrected frame label (:func:`~sinkframes.analyses.frames.classify`).

Sigmoid attention's rows need not sum to one: its weights are divided by their row sum before they
are measured, so that its shares compare with softmax's; the row mass says how much a head attends
at all.

Per run, two steps are derived: the *sink step*, the first checkpoint at which some layer's
first-token share has its lower bound above :data:`SINK_SHARE` (the rule ``B.early_emergence`` uses
on the language-model run), and the *loss step*, the first checkpoint at which the loss falls below
half the zero-prediction loss (the model has begun to use the marked contents).
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from ..metrics.frames import FrameSummaryReducer
from ..metrics.positions import TIED, sink_location
from ..metrics.sinks import received_share
from ..results import Analysis, ModelResult, register
from ..threads import single_torch_thread
from ..training.controlled import CHECKPOINT_DIR, RunSpec, load_checkpoint, load_index
from ..training.sink_task import TASK, SinkTask
from ..types import Mode
from ..verdicts.measures import NULLS, measure
from ..verdicts.verdict import Estimate, not_applicable
from .frames import frames_from_summaries

ANALYSIS = "controlled"
PROBE_SEED = 999
PROBE_SIZE = 64
#: a sink has formed when some layer's first-token share has its lower 95 % bound above this
SINK_SHARE = 0.5
#: the loss has dropped when it is below this fraction of the zero-prediction loss
LOSS_DROP = 0.5
#: the subjects the verdict layer decides on: the softmax grid of each architecture
SUBJECTS = {"decoder": "controlled-decoder", "encoder": "controlled-encoder"}


def probe(task: SinkTask = TASK) -> tuple[torch.Tensor, torch.Tensor]:
    """The fixed probe set: ``(ids [probe, length], content [probe, length, content_dim])``."""
    return task.sample(PROBE_SIZE, torch.Generator().manual_seed(PROBE_SEED))


def _location(index: int, n: int) -> str:
    return {-1: "none", TIED: "tied", 0: "first token", n - 1: "last token"}.get(index, "elsewhere")


def measure_weights(w: torch.Tensor, causal: bool) -> dict[str, Any]:
    """Shares, interval, mass, sink location and frame label from attention ``w [probe, layer, head, q, k]``."""
    mass = w.sum(-1)  # [probe, layer, head, query]
    a = w / mass.clamp_min(1e-12).unsqueeze(-1)
    n_layers, n = a.shape[1], a.shape[-1]
    summaries = FrameSummaryReducer().each(a, causal)
    record = {"n_layers": n_layers, "causal": causal}
    frames = frames_from_summaries(record, summaries, seed=0)
    # the summaries keep the first key's share only; the sink's location needs every key's (tiny tensors here)
    flat = a.reshape(-1, *a.shape[2:])  # [probe * layer, head, query, key]
    recv = received_share(flat, causal).reshape(*a.shape[:3], n).mean((0, 2))  # [layer, key]
    where, _ = sink_location(recv, causal)
    layers = frames.layers
    return {
        "first_share": layers["first_token_share"].tolist(),
        "first_low": layers["first_token_share_low"].tolist(),
        "first_high": layers["first_token_share_high"].tolist(),
        "last_share": layers["last_token_share"].tolist(),
        "mass": mass.mean((0, 2, 3)).tolist(),
        "location": [_location(int(i), n) for i in where],
        "frame": frames.data["frame"],
        "formed": bool(max(layers["first_token_share_low"]) > SINK_SHARE),
    }


def measure_run(spec: RunSpec, steps: list[int], folder: Path = CHECKPOINT_DIR,
                task: SinkTask = TASK) -> list[dict[str, Any]]:
    """One row per checkpoint of ``spec``: its loss and :func:`measure_weights`."""
    ids, content = probe(task)
    zero = task.zero_loss(ids, content, spec.causal)
    rows = []
    for step in steps:
        model = load_checkpoint(spec, step, folder, task)
        with torch.no_grad():
            prediction, w = model(ids, content)  # w [probe, layer, head, query, key]
            loss = float(task.loss(prediction, ids, content, spec.causal))
        rows.append({"step": step, "loss": loss, "zero_loss": zero, "loss_dropped": loss < LOSS_DROP * zero,
                     **measure_weights(w, spec.causal)})
    return rows


def first_step(rows: list[dict[str, Any]], test: str) -> int | None:
    """The first checkpoint at which the sink has formed (``"sink"``) or the loss has dropped (``"loss"``)."""
    for row in rows:
        if row["formed" if test == "sink" else "loss_dropped"]:
            return int(row["step"])
    return None


def measure_grid(folder: Path = CHECKPOINT_DIR, positions: list[str] | None = None, seeds: list[int] | None = None,
                 task: SinkTask = TASK) -> pd.DataFrame:
    """Every run at every checkpoint (or the runs of some ``positions`` and ``seeds``): one row each, the
    per-layer values as lists."""
    index = load_index(folder)
    steps = list(index["plan"]["checkpoints"])
    rows = []
    for name, entry in index["runs"].items():
        spec = RunSpec(entry["architecture"], entry["position"], entry["attention"], int(entry["seed"]))
        if (positions is not None and spec.position not in positions) or (seeds is not None and spec.seed not in seeds):
            continue
        # one thread: the tiny models' ops are microseconds each, and split over threads on a busy machine every op
        # waits for all of them (chapter 9 beside two training runs: this loop took 546 s on two threads, 62 s on one,
        # with the same page text)
        with single_torch_thread():
            run_rows = measure_run(spec, steps, folder, task)
        sink, loss = first_step(run_rows, "sink"), first_step(run_rows, "loss")
        for row in run_rows:
            rows.append({"run": name, "cell": spec.cell, "architecture": spec.architecture,
                         "position": spec.position, "attention": spec.attention, "seed": spec.seed,
                         "sink_step": sink, "loss_step": loss, "final": row["step"] == steps[-1], **row})
    return pd.DataFrame(rows)


def final_table(measured: pd.DataFrame) -> pd.DataFrame:
    """Per cell at the last checkpoint: the largest layer first-token share (mean and range over seeds), the
    largest last-token share, the mean row mass of the layer with the largest share (1 under softmax; what a
    sigmoid head gives in all), the frame labels of the seeds, and the sink and loss steps."""
    final = measured[measured["final"]].copy()
    final["peak_share"] = final["first_share"].map(max)
    final["peak_last"] = final["last_share"].map(max)
    final["peak_mass"] = [m[int(np.argmax(f))] for f, m in zip(final["first_share"], final["mass"], strict=True)]
    out = []
    for _, g in final.groupby("cell", sort=False):
        out.append({
            "architecture": g["architecture"].iloc[0], "position": g["position"].iloc[0],
            "attention": g["attention"].iloc[0], "seeds": len(g),
            "peak_first_share": g["peak_share"].mean(), "peak_first_low": g["peak_share"].min(),
            "peak_first_high": g["peak_share"].max(), "peak_last_share": g["peak_last"].mean(),
            "row_mass": g["peak_mass"].mean(),
            "frames": ", ".join(g["frame"]), "sink_steps": ", ".join(_step_text(s) for s in g["sink_step"]),
            "loss_steps": ", ".join(_step_text(s) for s in g["loss_step"]),
            "final_loss": g["loss"].mean(), "zero_loss": g["zero_loss"].mean(),
        })
    return pd.DataFrame(out)


def step_of(x: Any) -> int | None:
    """A sink or loss step as stored (``None``, or NaN once it went through a DataFrame) -> the step or ``None``."""
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else int(x)


def _step_text(step: Any) -> str:
    s = step_of(step)
    return "never" if s is None else str(s)


def group_results(measured: pd.DataFrame) -> list[ModelResult]:
    """One :class:`ModelResult` per architecture's softmax grid, the subjects of the training-side claims;
    ``data["runs"]`` holds every run of the architecture (all normalizations) for the measures and nulls."""
    out = []
    for arch, subject in SUBJECTS.items():
        g = measured[measured["architecture"] == arch]
        if g.empty:
            continue
        record = {"ref": f"{arch} grid (softmax)", "name": f"{arch} grid (softmax)", "family": subject,
                  "paper_frame": "controlled", "causal": arch == "decoder", "n_layers": len(g["first_share"].iloc[0]),
                  "position_encoding": "seven, one per cell of the grid",
                  "weights": "trained by this project (chapter 9)"}
        runs: dict[str, list[dict[str, Any]]] = {
            str(run): [{str(k): v for k, v in row.items()} for row in rows.sort_values("step").to_dict("records")]
            for run, rows in g.groupby("run", sort=False)}
        twin = ModelResult(analysis=ANALYSIS, record={**record, "ref": f"{arch} grid at step 0"},
                           n_sentences=PROBE_SIZE, data={"runs": {k: untrained(v) for k, v in runs.items()}})
        out.append(ModelResult(analysis=ANALYSIS, record=record, n_sentences=PROBE_SIZE,
                               data={"runs": runs, "twin": twin}, params={"seed": 0}))
    return out


def untrained(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A run frozen at its random initialization: its step-0 row as the last checkpoint, and the sink and
    loss steps that row alone gives (0, or never)."""
    first = min(rows, key=lambda r: r["step"])
    sink = 0 if first["formed"] else None
    loss = 0 if first["loss_dropped"] else None
    return [{**first, "final": True, "sink_step": sink, "loss_step": loss}]


def seeds_of(result: ModelResult) -> list[int]:
    return sorted({int(rows[0]["seed"]) for rows in result.data["runs"].values()})


def run_rows(result: ModelResult, position: str, attention: str, seed: int) -> list[dict[str, Any]] | None:
    """The checkpoint rows of one run of the group, or None if it was not trained."""
    for rows in result.data["runs"].values():
        r = rows[0]
        if (r["position"], r["attention"], int(r["seed"])) == (position, attention, seed):
            return rows
    return None

# ---------------------------------------------------------------------- measures the verdicts read
# Measures of the controlled grid (``analyses.controlled``): the training side of Sec. 3.4 and App. B.
#
# The subjects are the softmax grids of the two architectures. A measure reads each run's last
# checkpoint and pairs the runs by seed (one seed: the same initial weights and batches in every
# cell), so that a difference between two cells is the effect of their one switch. The interval of
# every estimate is the range over seeds (or over runs): three seeds give no confidence interval,
# and the range is the honest statement of what they show.
#
# Nulls: the same grid at step 0 (``random_twin``: the random-initialized models, the position
# encoding already switched), and for the label changes, the changes between seeds of one cell.
# There is no official computation (the paper trained nothing), so the faithful mode has none.

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
    if r.record.get("frame_labels"):  # labels of another rule (the text grid's log)
        return not_applicable(f"the runs' frame labels are those of {r.record['frame_labels']}; the frame "
                              "instrument reads them once the runs are retrained")
    ref = REFERENCE[r.causal]
    others = [p for p in _positions(r) if p != ref]
    counts, changed, parts = [], set(), []
    for s in seeds_of(r):
        base = _label(r, ref, s)
        if base is None:  # the reference run of this seed is not (yet) trained: nothing to compare with
            continue
        got = {p: _label(r, p, s) for p in others}
        diff = [p for p, lbl in got.items() if lbl is not None and lbl != base]
        changed.update(diff)
        counts.append(float(len(diff)))
        parts.append([f"seed {s}", float(len(diff)), float(len(diff)), float(len(diff))])
    est = _seed_range(counts, f"of {len(others)} encodings against {ref}; changed in some seed: "
                              f"{', '.join(sorted(changed)) or 'none'}")
    return replace(est, parts=parts)  # the claim is "in every seed": each seed is a part


def _seed_label_changes(r: ModelResult, mode: Mode) -> Estimate | None:
    """The same count with the seed as the switch: per seed, how many encodings change label at the next seed."""
    if mode == "faithful":
        return None
    seeds = seeds_of(r)
    if len(seeds) < 2:
        return Estimate(math.nan, math.nan, math.nan, interval=SEED_RANGE, undetermined=True,
                        detail="one seed: no change between seeds to measure")
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
    parts: list[list[Any]] = []  # the claim is "in every seed": each scheme at each seed is a part
    for scheme in MODIFIED_ROPE:
        for s in seeds_of(r):
            d = _mean_first(r, scheme, s) - _mean_first(r, "rope", s)
            if math.isfinite(d):
                parts.append([f"{scheme} seed {s}", d, d, d])
    if not parts:
        return None
    values = [p[1] for p in parts]
    return Estimate(float(np.mean(values)), min(values), max(values), n=len(seeds_of(r)),
                    interval=SEED_RANGE, parts=parts, detail="modified RoPE minus standard RoPE, paired by seed")


@measure("controlled.sink_lag", ANALYSIS, null="random_twin")
def sink_lag(r: ModelResult, mode: Mode) -> Estimate | None:
    """Over the softmax runs in which a sink forms and the loss drops: log2(sink step / loss step), the
    doublings of training between the drop of the loss and the sink (negative: the sink came first)."""
    if mode == "faithful":
        return None
    lags, parts = [], []  # the claim is "in every run that forms a sink": each such run is a part
    for run, rows in r.data["runs"].items():
        first = rows[0]
        if first["attention"] != "softmax":
            continue
        sink, loss = step_of(first["sink_step"]), step_of(first["loss_step"])
        if sink is not None and loss is not None and sink > 0 and loss > 0:
            lags.append(math.log2(sink / loss))
            parts.append([str(run), lags[-1], lags[-1], lags[-1]])
    n_runs = sum(rows[0]["attention"] == "softmax" for rows in r.data["runs"].values())
    detail = f"{len(lags)} of {n_runs} softmax runs formed a sink and dropped their loss"
    if not lags:
        return Estimate(math.nan, math.nan, math.nan, interval=RUN_RANGE, detail=detail, undetermined=True)
    return Estimate(float(np.median(lags)), min(lags), max(lags), n=len(lags), interval=RUN_RANGE, detail=detail,
                    parts=parts)


SPEC = register(Analysis(ANALYSIS, __name__))
