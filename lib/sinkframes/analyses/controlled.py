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
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from ..metrics.positions import sink_location
from ..metrics.sinks import SinkSummaryReducer, received_share
from ..training.controlled import CHECKPOINT_DIR, RunSpec, load_checkpoint, load_index
from ..training.sink_task import TASK, SinkTask
from .base import ModelResult
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
    return {-1: "none", 0: "first token", n - 1: "last token"}.get(index, "elsewhere")


def measure_weights(w: torch.Tensor, causal: bool) -> dict[str, Any]:
    """Shares, interval, mass, sink location and frame label from attention ``w [probe, layer, head, q, k]``."""
    mass = w.sum(-1)  # [probe, layer, head, query]
    a = w / mass.clamp_min(1e-12).unsqueeze(-1)
    n_layers, n = a.shape[1], a.shape[-1]
    summaries = SinkSummaryReducer().each(a, causal)
    record = {"n_layers": n_layers, "causal": causal}
    frames = frames_from_summaries(record, summaries, seed=0)
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
        rows.append({"step": step, "loss": loss, "zero_loss": zero, **measure_weights(w, spec.causal)})
    return rows


def first_step(rows: list[dict[str, Any]], test: str) -> int | None:
    """The first checkpoint at which the sink has formed (``"sink"``) or the loss has dropped (``"loss"``)."""
    for row in rows:
        if (row["formed"] if test == "sink" else row["loss"] < LOSS_DROP * row["zero_loss"]):
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
    loss = 0 if first["loss"] < LOSS_DROP * first["zero_loss"] else None
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
