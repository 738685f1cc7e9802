"""The controlled-grid page's statements, computed from its measurements (no number is typed)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pandas as pd

from ..analyses.controlled import LOSS_DROP, SINK_SHARE


def _learned(row: pd.Series) -> bool:
    return bool(row["final_loss"] < LOSS_DROP * row["zero_loss"])


def _sink_every_seed(cell: pd.Series) -> str:
    steps = [s.strip() for s in str(cell["sink_steps"]).split(",")]
    formed = sum(s != "never" for s in steps)
    return "all" if formed == len(steps) else ("no" if formed == 0 else f"{formed} of {len(steps)}")


def cell_sentence(cell: pd.Series) -> str:
    """One cell in words: did it learn, did a sink form, how strong, which labels."""
    labels = Counter(x.strip() for x in str(cell["frames"]).split(","))
    label_text = ", ".join(f"{k} x{v}" if v > 1 else k for k, v in labels.items())
    learned = "learned the task" if _learned(cell) else "did **not** learn the task"
    return (f"`{cell['position']}` / {cell['attention']}: {learned} (loss {cell['final_loss']:.2g} against "
            f"{cell['zero_loss']:.2g} for predicting zero); sink formed in {_sink_every_seed(cell)} seeds; largest "
            f"layer first-token share {cell['peak_first_share']:.2f} [{cell['peak_first_low']:.2f}, "
            f"{cell['peak_first_high']:.2f}]{_mass_text(cell)}; labels: {label_text}")


def _mass_text(cell: pd.Series) -> str:
    """For a normalization whose rows need not sum to one: how much weight the rows of that layer carry."""
    return "" if cell["attention"] != "sigmoid" else f" (its rows carry {cell['row_mass']:.2f} of weight in all)"


def findings(final: pd.DataFrame) -> str:
    """Per architecture and normalization: what the grid ended with, one line per cell."""
    out = []
    for (arch, attention), g in final.groupby(["architecture", "attention"], sort=False):
        out.append(f"**{arch}, {attention}**\n")
        out.extend(f"- {cell_sentence(c)}" for _, c in g.iterrows())
        out.append("")
    return "\n".join(out)


def headline(final: pd.DataFrame) -> str:
    """The page's answer in two sentences, from the softmax cells and the controls."""
    lines = []
    for arch, g in final.groupby("architecture", sort=False):
        soft = g[g["attention"] == "softmax"]
        labels = sorted({x.strip() for f in soft["frames"] for x in str(f).split(",")})
        sinks = [c["position"] for _, c in soft.iterrows() if _sink_every_seed(c) == "all"]
        lines.append(f"- **{arch}s, softmax**: a first-token sink (share above {SINK_SHARE:g} with its interval) "
                     f"formed in every seed for {len(sinks)} of {len(soft)} position encodings"
                     f"{' (' + ', '.join(sinks) + ')' if sinks else ''}; largest layer share "
                     f"{soft['peak_first_share'].min():.2f} to {soft['peak_first_share'].max():.2f} (seed means); "
                     f"final frame labels seen: {', '.join(labels)}.")
        for attention, c in g[g["attention"] != "softmax"].groupby("attention", sort=False):
            n = sum(_sink_every_seed(x) == "all" for _, x in c.iterrows())
            mass = (f"; those rows carry {c['row_mass'].min():.2f} to {c['row_mass'].max():.2f} of weight in all"
                    if attention == "sigmoid" else "")
            lines.append(f"  - {attention} control: a sink in every seed for {n} of {len(c)} encodings; largest "
                         f"share {c['peak_first_share'].min():.2f} to {c['peak_first_share'].max():.2f}{mass}.")
    return "\n".join(lines)


def training_note(index: dict[str, Any]) -> str:
    """How the committed checkpoints were made: plan, cost, software."""
    plan, runs = index["plan"], index["runs"]
    seconds = [r["seconds"] for r in runs.values()]
    return (f"{len(runs)} runs of {plan['steps']} steps (batch {plan['batch_size']}, AdamW lr {plan['lr']:g}, weight "
            f"decay {plan['weight_decay']:g}, gradient clipping {plan['grad_clip']:g}), checkpoints at steps "
            f"{', '.join(str(s) for s in plan['checkpoints'])}; {sum(seconds) / 60:.0f} CPU-minutes in all "
            f"({min(seconds):.0f}-{max(seconds):.0f} s per run, {index['jobs']} runs at a time, one thread each, "
            f"{index['wall_seconds'] / 60:.0f} minutes of wall time), torch {index['torch']}.")


def provenance_line(profile: str, n_runs: int, probe: int, folder: str) -> str:
    """The page's provenance: the grid's checkpoints stand where a page's models stand, the probe set where
    its sentences do."""
    from .provenance import provenance

    weights = {"controlled grid": f"{n_runs} runs trained by this project (`train-controlled`), float16, in {folder}"}
    return provenance(profile, ["controlled grid"], probe, "sink_task", 0, weights=weights)


def uniform_first_share(window: int) -> float:
    """The first-token share of uniform causal attention over a ``window``-token sequence: the mean over
    queries 1..n-1 of 1 / (query + 1)."""
    return float(sum(1 / (q + 1) for q in range(1, window)) / (window - 1))


#: Gu et al. (ICLR 2025) count a head as a sink when its first-token share exceeds this (their epsilon)
SINK_HEAD_SHARE = 0.3


def sink_heads(g: pd.DataFrame, eps: float = SINK_HEAD_SHARE) -> tuple[int, int, int] | None:
    """``(step, heads whose first-token share exceeds eps, heads)`` at the last probe of one recipe's records
    ``g`` that measured every head; ``None`` when none did. Gu et al.'s ``Sink_1`` metric is the fraction; their
    share also counts the first query's attention to itself (1/T more) and is measured on 64 tokens."""
    measured = g[g["head_share"].notna()] if "head_share" in g else g.iloc[0:0]
    if measured.empty:
        return None
    step = int(measured["step"].max())
    shares = np.concatenate([np.asarray(h, dtype=float) for h in measured[measured["step"] == step]["head_share"]])
    return step, int((shares > eps).sum()), int(shares.size)


def scout_table(heads: dict[str, dict[str, Any]], records: pd.DataFrame, formed: float = 0.5) -> pd.DataFrame:
    """One row per recipe of the natural-text search: what it changes from the base recipe, how far it ran,
    its last held-out loss, the largest layer share at its last probe, the largest layer and single-head
    first-token shares it reached at any probe, the share uniform causal attention gives the first token over
    the recipe's window, whether a sink formed (a layer's head-mean share above ``formed`` at some probe), and
    how many heads exceed Gu et al.'s 0.3 at the last probe that measured every head (:func:`sink_heads`; empty
    for runs logged before heads were measured). A run continued from its saved state says in how many pieces it
    was made."""
    from ..training.text_lm import changes_from_base

    rows = []
    for recipe, g in records.groupby("recipe", sort=False):
        head = heads.get(str(recipe), {})
        config = head.get("config", {})
        last = g[g["step"] == g["step"].max()]
        planned = config.get("steps")
        ran = int(g["step"].max())
        steps: int | str = ran if planned in (None, ran) else f"{ran} of {planned} (stopped)"
        if resumes := [r for r in head.get("resumes", []) if r["resumed_at"] < ran]:
            steps = f"{steps}, in {len(resumes) + 1} pieces" + (
                "" if all(r["probe_reproduced"] for r in resumes) else " (a continued probe differed)")
        rows.append({"recipe": recipe, "changes": changes_from_base(config) if config else "",
                     "steps": steps,
                     "CPU-minutes": round(float(g["cpu"].max()) / 60, 1),
                     "held-out loss (nats per token)": float(last["loss"].iloc[0]),
                     "layer share at the end": float(last["first_share"].max()),
                     "largest layer share": float(g["first_share"].max()),
                     "largest head share": float(g["best_head"].max()),
                     "uniform share": uniform_first_share(recipe_window(head)),
                     "sink formed": bool(g["first_share"].max() > formed),
                     "sink formed at": _first_crossing(g, formed),
                     f"heads above {SINK_HEAD_SHARE:g} (step)": _sink_heads_words(sink_heads(g))})
    return pd.DataFrame(rows)


def _first_crossing(g: pd.DataFrame, formed: float) -> str:
    """Where one recipe's records first have a layer share above ``formed``: ``layer L, step S, M CPU-minutes``
    (empty when none does)."""
    above = g[g["first_share"] > formed].sort_values(["step", "layer"])
    if above.empty:
        return ""
    row = above.iloc[0]
    return f"layer {int(row['layer'])}, step {int(row['step'])}, {float(row['cpu']) / 60:.0f} CPU-minutes"


def _sink_heads_words(counted: tuple[int, int, int] | None) -> str:
    if counted is None:
        return ""
    step, above, total = counted
    return f"{above} of {total} ({step})"


def recipe_window(head: dict[str, Any]) -> int:
    """The window (tokens) of the recipe whose log header is ``head``; a header without one ran the default."""
    from ..training.text_lm import LMRecipe

    return int(head.get("config", {}).get("seq_len", LMRecipe.seq_len))


def scout_uniform_shares(heads: dict[str, dict[str, Any]]) -> dict[int, float]:
    """Window length (tokens) -> the first-token share of uniform causal attention, for every window the
    recipes of ``heads`` (their log headers) use: the reference line of each."""
    windows = {recipe_window(h) for h in heads.values()}
    return {n: uniform_first_share(n) for n in sorted(windows)}


def scout_summary(table: pd.DataFrame, records: pd.DataFrame | None = None) -> str:
    """The search in one paragraph, from its table (and, given the probe ``records``, the most heads above Gu et
    al.'s threshold at a recipe's last probe that measured every head)."""
    formed = table[table["sink formed"]]
    cpu = float(table["CPU-minutes"].sum())
    best = table.iloc[int(np.argmax(table["largest layer share"].to_numpy()))]
    head = (f"{len(table)} recipes, {cpu:.0f} CPU-minutes of training in all. ")
    if formed.empty:
        text = (head + f"**No recipe formed a first-token sink.** The largest layer share reached is "
                f"{best['largest layer share']:.3f} ({best['recipe']}), against {best['uniform share']:.3f} for "
                f"uniform attention over its window and 0.5 for a formed sink; the largest single head reached "
                f"{table['largest head share'].max():.3f}.")
    else:
        names = ", ".join(f"{r} ({w})" for r, w in zip(formed["recipe"], formed["sink formed at"], strict=True))
        text = (head + f"**A first-token sink formed** (a layer's head-mean share above 0.5 on the held-out windows) "
                f"under {len(formed)} of {len(table)} recipes: {names}. The largest layer share reached is "
                f"{best['largest layer share']:.3f} ({best['recipe']}).")
    counted = {str(r): c for r, g in (records.groupby("recipe", sort=False) if records is not None else [])
               if (c := sink_heads(g)) is not None}
    if counted:
        recipe, (step, above, total) = max(counted.items(), key=lambda kv: kv[1][1] / kv[1][2])
        text += (f" Counted head by head, as Gu et al. (ICLR 2025) count sinks (a head's share above "
                 f"{SINK_HEAD_SHARE:g}), the most is {above} of {total} heads ({above / total:.0%}; {recipe} at step "
                 f"{step}), where their 60M-parameter model trained on 5B tokens had 18 % of its heads above it.")
    return text


def scout_takeaway(table: pd.DataFrame) -> str:
    """The natural-text search's figure in one sentence."""
    best = table.iloc[int(np.argmax(table["largest layer share"].to_numpy()))]
    if table["sink formed"].any():
        return f"A sink formed: the largest layer share reached {best['largest layer share']:.2f}."
    return (f"No recipe came near a sink: the largest layer share reached {best['largest layer share']:.3f} "
            f"({best['recipe']}), against {best['uniform share']:.3f} for uniform attention over its window.")


# ----------------------------------------------------------------------------- the natural-text grid
def _peak(row: pd.Series) -> tuple[int, float, float, float]:
    """``(layer, share, low, high)`` of the layer with the largest first-token share in one probe row."""
    layer = int(np.argmax(row["first_share"]))
    return layer, float(row["first_share"][layer]), float(row["first_low"][layer]), float(row["first_high"][layer])


def text_grid_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Per finished run of the language-model grid, at its last probe: the layer with the largest first-token share,
    that share with its 95 % interval over the held-out windows, the largest last-token share, the frame label the
    earlier rule logged while the run trained,
    the steps at which the sink formed and the held-out loss dropped, the final held-out loss and its CPU-minutes."""
    from ..analyses.controlled import step_of

    columns = ["position", "seed", "layer", "first_share", "first_low", "first_high", "last_share",
               "earlier-rule label", "sink_step", "loss_step", "loss", "cpu_minutes"]
    if rows.empty:
        return pd.DataFrame(columns=columns)
    out = []
    for _, r in rows[rows["final"]].iterrows():
        layer, share, low, high = _peak(r)
        sink, loss = step_of(r["sink_step"]), step_of(r["loss_step"])
        out.append({"position": r["position"], "seed": int(r["seed"]), "layer": layer, "first_share": share,
                    "first_low": low, "first_high": high, "last_share": float(max(r["last_share"])),
                    "earlier-rule label": r["frame"], "sink_step": "never" if sink is None else str(sink),
                    "loss_step": "never" if loss is None else str(loss), "loss": float(r["loss"]),
                    "cpu_minutes": float(r["cpu"]) / 60})
    return pd.DataFrame(out, columns=columns)


def text_grid_progress(runs: dict[str, list[dict[str, Any]]], table: pd.DataFrame) -> str:
    """How much of the grid is trained: the finished runs, those stopped on the way (their last step), those not
    started, in words."""
    from ..training.text_lm import GRID

    finished = set(zip(table["position"], table["seed"], strict=True)) if not table.empty else set()
    partial = [f"`{name}` (step {records[-1]['step']})" for name, records in runs.items()
               if records and (GRID[name].position, GRID[name].seed) not in finished]
    missing = [f"`{name}`" for name in GRID if name not in runs or not runs[name]]
    cpu = table["cpu_minutes"].sum() if not table.empty else 0.0
    text = (f"{len(finished)} of the grid's {len(GRID)} runs have reached step {next(iter(GRID.values())).last_step} "
            f"({cpu:.0f} CPU-minutes)")
    if partial:
        text += (f"; stopped on the way (continued from their saved states where the machine keeps them, else "
                 f"retrained from step 0, which logs the same probes again): {', '.join(partial)}")
    if missing:
        text += f"; not yet started: {', '.join(missing)}"
    return text + "."


def text_grid_summary(table: pd.DataFrame, rows: pd.DataFrame | None = None) -> str:
    """What the finished runs show, one line per encoding: did a sink form, where, how strong, with which label;
    with the probe ``rows``, the labels the same runs had at step 0."""
    if table.empty:
        return "No run of the grid has reached its last step yet: there is nothing to compare."
    out = []
    for position, g in table.groupby("position", sort=False):
        parts = []
        for _, r in g.sort_values("seed").iterrows():
            formed = (f"a sink formed at step {r['sink_step']}" if r["sink_step"] != "never"
                      else "**no sink**")
            parts.append(f"seed {r['seed']}: {formed}; layer {r['layer']} holds {r['first_share']:.2f} "
                         f"[{r['first_low']:.2f}, {r['first_high']:.2f}] of the attention on the first token; "
                         f"earlier-rule label {r['earlier-rule label']}")
        out.append(f"- `{position}`: " + "; ".join(parts))
    if rows is not None and not rows.empty:
        start = Counter(rows[rows["step"] == 0]["frame"])
        out.append("\nAt step 0 (random initialization) the earlier rule labels the same runs "
                   + ", ".join(f"{label} ({n} runs)" for label, n in start.most_common())
                   + ": its labels were logged while the runs trained, and it reads structureless attention as "
                     "distributed, so they say nothing about the runs' frames.")
    return "\n".join(out)


def text_grid_takeaway(table: pd.DataFrame) -> str:
    """The figure's one-line reading: under which encodings a sink formed by the last step, in how many seeds."""
    if table.empty:
        return ""
    from ..training.text_lm import GRID, GRID_BASE
    from ..training.tiny import POSITION_NAMES

    parts = []
    for position, g in table.groupby("position", sort=False):
        n = int((g["sink_step"] != "never").sum())
        parts.append(f"{POSITION_NAMES.get(str(position), position)} {n} of {len(g)}")
    seeds = "" if len(table) == len(GRID) else " (of the seeds trained so far)"
    return f"Runs with a first-token sink by step {GRID_BASE.last_step}, per encoding{seeds}: {'; '.join(parts)}."


def sooner_or_never() -> str:
    """The long natural-text runs' outcome for the scorecard, read from the shipped training logs (chapter 9 shows the
    runs themselves): :func:`~sinkframes.analyses.formation.sooner_or_never`."""
    from ..analyses import formation, text_grid
    from ..training.text_lm import LONG

    runs = {name: records for name, records in formation.read_runs().items() if name in LONG}
    return formation.sooner_or_never(formation.long_run_rows(runs, text_grid.read_grid_log()))
