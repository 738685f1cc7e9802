"""The natural-text position-encoding grid measured: the language models of :data:`~sinkframes.training.text_lm.GRID`.

The runs are measured while they train (:func:`probe_fields`, given to the training loop as its probe's
``extra``): at every probe, on the 32 held-out windows, the sink-task grid's measures of
:func:`~sinkframes.analyses.controlled.measure_weights` (per layer the first-token share with its 95 % bootstrap
interval, the last-token share, where the sink sits, the corrected frame label). The log is the result; this module
reads it back into the rows the controlled grid's measures and verdicts take (:func:`grid_rows`,
:func:`grid_result`), so that the training-side claims are decided on natural text by the same code as on the task.

The loss step of a language model: the first probe at which the held-out loss has made half of its fall from step 0
to the run's last probe (the task's rule, half the zero-prediction loss, has no counterpart on text).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from ..paper.claims import CLAIMS
from ..results import ModelResult
from ..training.text_lm import GRID, GRID_LOG, LMRecipe, recipe_dict
from .controlled import ANALYSIS, first_step, measure_weights, untrained

SUBJECT = "controlled-text"
#: the held-out loss has dropped once it has made this fraction of its fall from step 0 to the last probe
LOSS_FALL = 0.5
#: the claims decided on this grid (the formation test's claim is decided by analyses.formation on its own runs)
TEXT_CLAIMS = tuple(c.id for c in CLAIMS if c.subject == SUBJECT and not c.measure.startswith("formation."))


#: the grid's frame labels were logged while it trained, by the book's earlier rule (``analyses.frames.classify``),
#: which cannot register a centralized frame in a decoder or say "none"; its weights are not kept, so the frame
#: instrument cannot read them again: the claim that reads labels waits for the runs to be retrained
EARLIER_LABELS = "the earlier rule, logged while training"


def _rounded(x: Any) -> Any:
    if isinstance(x, float):
        return round(x, 4)
    if isinstance(x, list):
        return [_rounded(v) for v in x]
    return x


def probe_fields(w: torch.Tensor) -> dict[str, Any]:
    """The controlled grid's measures of causal attention ``w [window, layer, head, query, key]``, rounded for the
    log: ``first_low``/``first_high`` (the first-token share's interval per layer), ``last_share``, ``location``,
    ``frame``, ``formed``."""
    m = measure_weights(w, causal=True)
    return {k: _rounded(m[k]) for k in ("first_low", "first_high", "last_share", "location", "frame", "formed")}


def read_run_log(log: Path, recipes: Mapping[str, LMRecipe], whose: str) -> dict[str, list[dict[str, Any]]]:
    """``{run: its probe records in step order}`` for the runs of a probe log whose header matches their recipe in
    ``recipes`` (a run of another recipe under one of those names raises ``ValueError``, naming ``whose`` recipe it
    is not: it would be compared as if trained alike). A run's records are those of its last start from step 0 (a
    run restarted afresh replaces its records; a piece continued from a saved state replaces the steps it repeats)."""
    runs: dict[str, list[dict[str, Any]]] = {}
    if not Path(log).exists():
        return runs
    for line in Path(log).read_text().splitlines():
        rec = json.loads(line)
        name = rec["recipe"]
        if "config" in rec:
            if name not in recipes or rec["config"] != recipe_dict(recipes[name]):
                raise ValueError(f"{log}: {name} was trained with {rec['config']}, which is not {whose} recipe")
            runs[name] = []
        elif "step" in rec:
            kept = runs.setdefault(name, [])
            kept[:] = [r for r in kept if r["step"] < rec["step"]]  # a piece continued from an earlier state
            kept.append(rec)
    return runs


def read_grid_log(log: Path = GRID_LOG) -> dict[str, list[dict[str, Any]]]:
    """:func:`read_run_log` of the grid's runs."""
    return read_run_log(log, GRID, "the grid's")


def _loss_dropped(records: list[dict[str, Any]]) -> list[bool]:
    start, end = records[0]["loss"], records[-1]["loss"]
    level = start - LOSS_FALL * (start - end)
    return [r["loss"] <= level and start > end for r in records]


def grid_rows(runs: dict[str, list[dict[str, Any]]]) -> pd.DataFrame:
    """One row per probe of every run that reached its last step, in the columns of the controlled grid's
    ``measure_grid`` (``run, position, attention, seed, step, loss, first_share, first_low, ..., frame, formed,
    loss_dropped, sink_step, loss_step, final``)."""
    rows = []
    for name, records in runs.items():
        recipe: LMRecipe = GRID[name]
        if not records or records[-1]["step"] != recipe.last_step or records[0]["step"] != 0:
            continue
        dropped = _loss_dropped(records)
        probe = [{**r, "loss_dropped": d} for r, d in zip(records, dropped, strict=True)]
        sink, loss = first_step(probe, "sink"), first_step(probe, "loss")
        for r in probe:
            rows.append({"run": name, "cell": recipe.position, "architecture": "decoder",
                         "position": recipe.position, "attention": "softmax", "seed": recipe.seed,
                         "sink_step": sink, "loss_step": loss, "final": r["step"] == recipe.last_step,
                         **{k: v for k, v in r.items() if k not in ("recipe",)}})
    return pd.DataFrame(rows)


def grid_record(ref: str) -> dict[str, Any]:
    """The record of the natural-text grid as a subject of claims (``ref`` names the result): one subject, one
    column on the scorecard, for this grid's claims and the formation test's. The paper frame is the subject too,
    so that the sink-task grid's claims (subject "controlled") stay off it."""
    return {"ref": ref, "name": "language-model grid (natural text)", "family": SUBJECT, "paper_frame": SUBJECT,
            "causal": True, "position_encoding": "seven, one per cell of the grid",
            "weights": "trained by this project (chapter 9, natural text)"}


def grid_result(measured: pd.DataFrame) -> ModelResult | None:
    """The grid as the subject of the natural-text claims (``None`` when no run has reached its last step);
    ``data["runs"]`` holds every finished run, ``data["twin"]`` the same runs frozen at step 0."""
    if measured.empty:
        return None
    n_layers = len(measured["first_share"].iloc[0])
    record = {**grid_record("text grid"), "n_layers": n_layers, "frame_labels": EARLIER_LABELS}
    runs = {str(run): [{str(k): v for k, v in row.items()} for row in g.sort_values("step").to_dict("records")]
            for run, g in measured.groupby("run", sort=False)}
    twin = ModelResult(analysis=ANALYSIS, record={**record, "ref": "text grid at step 0"}, n_sentences=32,
                       data={"runs": {k: untrained(v) for k, v in runs.items()}})
    return ModelResult(analysis=ANALYSIS, record=record, n_sentences=32, data={"runs": runs, "twin": twin},
                       params={"seed": 0})


def finished_runs(measured: pd.DataFrame) -> int:
    return 0 if measured.empty else int(measured["run"].nunique())


def complete(measured: pd.DataFrame) -> bool:
    """Whether every run of the grid has reached its last step: its claims are decided on the whole grid only,
    since the rules read every seed and every encoding and a part of the grid is not the design they were set on."""
    return finished_runs(measured) == len(GRID)


def waiting(measured: pd.DataFrame) -> list[tuple[str, str]]:
    """``(claim, why)`` for each claim of the grid while the grid is not complete (none once it is)."""
    if complete(measured):
        return []
    why = (f"not decided yet: {finished_runs(measured)} of the grid's {len(GRID)} runs have reached their last step, "
           "and the rule reads all of them")
    return [(claim, why) for claim in TEXT_CLAIMS]
