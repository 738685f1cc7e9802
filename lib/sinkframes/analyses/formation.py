"""Does the position encoding decide whether a first-token sink forms on natural text?

The natural-text grid (:data:`~sinkframes.training.text_lm.GRID`) formed a sink in 5 of its 10 rotary runs and in
none of its 4 non-rotary runs by step 8000; two seeds cannot tell that split from chance. The test fixed here, before
any of its new runs was trained, decides it on more seeds of three cells (:data:`~sinkframes.training.text_lm.
FORMATION_POSITIONS` x :data:`~sinkframes.training.text_lm.FORMATION_SEEDS`):

- a run *formed a sink by step 8000* when at any probe up to that step some layer's first-token share has its lower
  95 % bound above 0.5 (the grid's ``formed`` field, :data:`~sinkframes.analyses.controlled.SINK_SHARE`);
- rotary: standard RoPE (5 runs); non-rotary: no position encoding and the learned table (10 runs);
- Fisher's exact test, one-sided (the rotary runs form a sink more often), at :data:`ALPHA`: the claim is supported
  when p < 0.05 and not supported otherwise; it is decided only once all 15 runs have reached step 8000.

The long runs (:data:`~sinkframes.training.text_lm.LONG`) answer *sooner or never*: the first probe at which each
formed a sink, if any, by step 24,000. One run per cell decides nothing statistically; it is reported as observed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..results import Analysis, ModelResult, register
from ..training.text_lm import (
    FORMATION,
    FORMATION_LOG,
    FORMATION_POSITIONS,
    FORMATION_SEEDS,
    GRID,
    GRID_BASE,
    LONG,
    LMRecipe,
    grid_name,
)
from ..types import Mode
from ..verdicts.measures import measure
from ..verdicts.verdict import Estimate, not_applicable
from .text_grid import grid_record, read_run_log

if TYPE_CHECKING:
    import pandas as pd

#: the test's level (one-sided)
ALPHA = 0.05
#: a run counts as having formed a sink when it did so at a probe up to this step (the grid's last step)
FORMATION_STEP = GRID_BASE.last_step
ROTARY = ("rope",)
NON_ROTARY = ("nope", "learned")
#: Gu et al.'s sink metric (arXiv 2410.10781): a head is a sink head when its mean attention to the first token
#: exceeds this
GU_THRESHOLD = 0.3


def formed_by(records: Sequence[Mapping[str, Any]], step: int = FORMATION_STEP) -> bool:
    """Whether some probe at or before ``step`` has the grid's ``formed`` flag."""
    return any(bool(r["formed"]) for r in records if r["step"] <= step)


def first_formed(records: Sequence[Mapping[str, Any]]) -> int | None:
    """The first probe step at which the run had formed a sink, or None."""
    return next((int(r["step"]) for r in records if r["formed"]), None)


def sink_head_share(record: Mapping[str, Any], threshold: float = GU_THRESHOLD) -> float:
    """Gu et al.'s metric on one probe: the share of heads whose mean attention to the first token (queries 1 to the
    window's end, ``head_share``) exceeds ``threshold``."""
    heads = [h for layer in record["head_share"] for h in layer]
    return sum(h > threshold for h in heads) / len(heads)


def read_runs(log: Path = FORMATION_LOG,
              recipes: Mapping[str, LMRecipe] | None = None) -> dict[str, list[dict[str, Any]]]:
    """``{run: probe records in step order}`` from a log of the formation test's runs (``text_grid.read_run_log``)."""
    return read_run_log(log, {**FORMATION, **LONG} if recipes is None else recipes, "the test's")


@dataclass(frozen=True)
class FormationTest:
    """The counts, the p-value and the verdict of the formation test (``verdict`` None until every run is in)."""

    rotary_formed: int
    rotary_runs: int
    non_rotary_formed: int
    non_rotary_runs: int
    finished: int
    needed: int
    p_value: float | None
    verdict: str | None


def formation_cells(runs: Mapping[str, Sequence[Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """One row per run of the test's design (position, seed): whether it has reached step 8000, whether it formed a
    sink by then, the first step it had, and Gu et al.'s sink-head share at its last probe up to step 8000."""
    rows = []
    for p in FORMATION_POSITIONS:
        for s in FORMATION_SEEDS:
            name = grid_name(p, s)
            records = [r for r in runs.get(name, []) if r["step"] <= FORMATION_STEP]
            done = bool(records) and records[0]["step"] == 0 and records[-1]["step"] == FORMATION_STEP
            rows.append({"run": name, "position": p, "seed": s, "finished": done,
                         "formed": formed_by(records) if done else None,
                         "sink_step": first_formed(records) if done else None,
                         "sink_heads": sink_head_share(records[-1]) if done else None})
    return rows


def formation_test(rows: Sequence[Mapping[str, Any]]) -> FormationTest:
    """Fisher's exact test, one-sided, on the rows of :func:`formation_cells`; no verdict while a run is missing."""
    from scipy.stats import fisher_exact

    done = [r for r in rows if r["finished"]]
    rot = [r for r in done if r["position"] in ROTARY]
    non = [r for r in done if r["position"] in NON_ROTARY]
    a, c = sum(bool(r["formed"]) for r in rot), sum(bool(r["formed"]) for r in non)
    p_value = verdict = None
    if len(done) == len(rows):
        p_value = float(fisher_exact([[a, len(rot) - a], [c, len(non) - c]], alternative="greater").pvalue)
        verdict = "supported" if p_value < ALPHA else "not supported"
    return FormationTest(a, len(rot), c, len(non), len(done), len(rows), p_value, verdict)


#: the analysis name of the test's one result (``formation_result``) and its measure
ANALYSIS = "formation"
#: the one "model" the test's verdict is about: the runs of its design, taken together; named as the natural-text
#: grid (``text_grid``), whose runs it extends with more seeds, so that the scorecard gives both one column
TEST_REF = "text grid"


def formation_result(rows: Sequence[Mapping[str, Any]]) -> ModelResult:
    """The formation test on the rows of :func:`formation_cells` as one result, for the registry's claim
    ``3.4.sink_forms.text`` (decided once every run has reached step 8000)."""
    record = {**grid_record(TEST_REF), "n_layers": 0}
    return ModelResult(analysis=ANALYSIS, record=record, n_sentences=0,
                       data={"test": formation_test(rows), "rows": [dict(r) for r in rows]})


@measure("formation.rotary_forms_more", ANALYSIS, null="none")
def rotary_forms_more(r: ModelResult, mode: Mode) -> Estimate | None:
    """The one-sided p-value of Fisher's exact test that standard RoPE runs form a sink by step 8000 more often
    than the non-rotary ones; not evaluated while a run of the design is missing. No faithful counterpart."""
    if mode == "faithful":
        return None
    t: FormationTest = r.data["test"]
    if t.p_value is None:
        return not_applicable(f"{t.finished} of the test's {t.needed} runs have reached step {FORMATION_STEP}; it is "
                              "decided once all have")
    return Estimate(t.p_value, t.p_value, t.p_value, n=t.finished, interval="exact (Fisher's test)",
                    detail=(f"standard RoPE formed a sink by step {FORMATION_STEP} in {t.rotary_formed} of "
                            f"{t.rotary_runs} runs, no positions and the learned table in {t.non_rotary_formed} of "
                            f"{t.non_rotary_runs}; Fisher's exact test, one-sided"))


def all_runs(grid_runs: Mapping[str, list[dict[str, Any]]],
             formation_runs: Mapping[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    """The grid's runs of the test's cells and the test's own runs, by name (a name in both is an error)."""
    both = set(grid_runs) & set(formation_runs)
    if both:
        raise ValueError(f"runs logged both in the grid's log and in the formation log: {sorted(both)}")
    keep = {n: r for n, r in grid_runs.items() if n in GRID}
    return {**keep, **formation_runs}


#: Gu et al. (arXiv 2410.10781, Table 3): 60M-parameter Llama-style models trained on 5B tokens, changing only the
#: position encoding; the percentage of heads whose sink score (mean attention to the first token) exceeds 0.3
GU_TABLE3: dict[str, float] = {"RoPE": 18.18, "NoPE": 20.35, "ALiBi": 20.78, "absolute": 32.73, "learnable": 33.13,
                               "relative": 35.53}
#: the grid's position encodings that match a row of Gu et al.'s table
GU_NAME = {"rope": "RoPE", "nope": "NoPE", "learned": "learnable"}
#: what the two set-ups differ in, said once beside the table
def setup_difference() -> str:
    """What Gu et al.'s set-up and the grid's differ in, from the grid's recipe."""
    b = GRID_BASE
    params = b.n_layers * (4 * b.d_model**2 + 2 * b.d_model * b.d_mlp) + b.vocab * b.d_model
    return (f"Gu et al. trained 60M-parameter models on 5B tokens; the grid trains {b.n_layers} layers of width "
            f"{b.d_model} (about {params / 1e6:.1f}M parameters with the embedding) and a run has seen "
            f"{tokens_seen():.0f}M tokens by step {FORMATION_STEP:,} ({b.batch_size} windows of {b.seq_len} tokens a "
            "step). Gu et al. also report that the amount of data decides whether a sink appears (about 4 % of heads "
            "at 500M tokens, under 1 % at 50M).")


def gu_comparison(runs: Mapping[str, Sequence[Mapping[str, Any]]]) -> Any:
    """Per position encoding of the grid, the share of heads that are sink heads by Gu et al.'s metric
    (:func:`sink_head_share`, threshold 0.3) at step 8000 in each finished run, their mean, how many runs formed a
    sink by the grid's rule, and Gu et al.'s percentage for the same encoding where their table has it."""
    import pandas as pd

    by: dict[str, list[tuple[float, bool]]] = {}
    for name, records in runs.items():
        recipe = {**GRID, **FORMATION}.get(name)
        upto = [r for r in records if r["step"] <= FORMATION_STEP]
        if recipe is None or not upto or upto[-1]["step"] != FORMATION_STEP:
            continue
        by.setdefault(recipe.position, []).append((100 * sink_head_share(upto[-1]), formed_by(upto)))
    order = list(dict.fromkeys(r.position for r in GRID.values()))
    rows = []
    for position, found in sorted(by.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order)):
        shares = [s for s, _ in found]
        rows.append({"position encoding": position, "runs": len(found),
                     "sink heads here, % (each run)": ", ".join(f"{s:.1f}" for s in shares),
                     "sink heads here, % (mean)": sum(shares) / len(shares),
                     "runs that formed a sink": sum(f for _, f in found),
                     "Gu et al., %": GU_TABLE3.get(GU_NAME.get(position, ""), float("nan"))})
    return pd.DataFrame(rows)


def tokens_seen(step: int = FORMATION_STEP) -> float:
    """Millions of training tokens a grid run has seen by ``step``."""
    return step * GRID_BASE.batch_size * GRID_BASE.seq_len / 1e6


def formation_text(test: FormationTest) -> str:
    """Where the formation test stands, in words (its verdict only once every run is in)."""
    head = (f"Standard RoPE formed a sink by step 8,000 in {test.rotary_formed} of {test.rotary_runs} finished runs; "
            f"no position encoding and the learned table in {test.non_rotary_formed} of {test.non_rotary_runs}. ")
    if test.verdict is None:
        return head + (f"{test.finished} of the test's {test.needed} runs have reached step 8,000; the test (Fisher's "
                       "exact test, one-sided, at 0.05, fixed before its new runs) is decided when all have, and no "
                       "answer is drawn before.")
    return head + f"Fisher's exact test, one-sided: p = {test.p_value:.3g}, so the claim is **{test.verdict}**."



def same_start(records: Sequence[Mapping[str, Any]], grid_records: Sequence[Mapping[str, Any]],
               upto: int = FORMATION_STEP) -> tuple[int, int]:
    """``(equal, compared)``: of the probes up to ``upto`` that a long run and its grid run both logged, how many
    agree in the held-out loss and in every layer's and head's first-token share (a long run repeats its grid run's
    first steps, so on the same software and CPU every probe agrees)."""
    grid_at = {int(r["step"]): r for r in grid_records if r["step"] <= upto}
    keys = ("loss", "first_share", "head_share")
    pairs = [(r, grid_at[int(r["step"])]) for r in records if int(r["step"]) in grid_at]
    return sum(all(a[k] == b[k] for k in keys) for a, b in pairs), len(pairs)


def long_run_rows(runs: Mapping[str, Sequence[Mapping[str, Any]]],
                  grid_runs: Mapping[str, Sequence[Mapping[str, Any]]]) -> pd.DataFrame:
    """One row per run of :data:`~sinkframes.training.text_lm.LONG` (sooner or never): how far it has been trained,
    the tokens it has seen, the first step at which it had formed a sink (the grid's rule) or None, the largest
    layer's first-token share and its lower 95 % bound at its last probe, how many later probes fell below the rule
    again, Gu et al.'s sink-head share at step 8000 and at its last probe, and how many of its first probes equal its
    grid run's. A run not yet started has only its
    name, position and seed."""
    import pandas as pd

    rows: list[dict[str, Any]] = []
    for name, recipe in LONG.items():
        records = [r for r in runs.get(name, []) if r["step"] <= recipe.last_step]
        row: dict[str, Any] = {"run": name, "position": recipe.position, "seed": recipe.seed,
                               "planned": recipe.last_step, "step": None}
        if records and records[0]["step"] == 0:
            last = records[-1]
            layer = max(range(len(last["first_share"])), key=lambda i: last["first_share"][i])
            at8k = [r for r in records if r["step"] == FORMATION_STEP]
            equal, compared = same_start(records, grid_runs.get(grid_name(recipe.position, recipe.seed), []))
            sink = first_formed(records)
            later = None if sink is None else [r for r in records if r["step"] > sink]  # no sink: nothing to count
            row |= {"step": int(last["step"]), "tokens (M)": tokens_seen(int(last["step"])),
                    "sink step": sink, "probes after": None if later is None else len(later),
                    "unformed after": None if later is None else sum(not r["formed"] for r in later),
                    "largest layer": layer,
                    "share": last["first_share"][layer], "share low": last["first_low"][layer],
                    "sink heads % at 8000": 100 * sink_head_share(at8k[0]) if at8k else None,
                    "sink heads % now": 100 * sink_head_share(last), "loss": last["loss"],
                    "equal probes": equal, "compared probes": compared}
        rows.append(row)
    whole = ["seed", "planned", "step", "sink step", "probes after", "unformed after", "largest layer", "equal probes",
             "compared probes"]
    table = pd.DataFrame(rows)
    return table.astype({c: "Int64" for c in whole if c in table})


def long_run_text(rows: pd.DataFrame) -> str:
    """What each long run shows, as observed (one run per cell decides nothing statistically): when it formed a
    sink, or that it had formed none by the step it reached, with the tokens seen then."""
    parts = []
    for _, r in rows.iterrows():
        if _missing(r["step"]):
            parts.append(f"`{r['run']}` has not been trained yet.")
            continue
        step, planned = int(r["step"]), int(r["planned"])
        reach = (f"ran all {planned:,} steps" if step == planned
                 else f"has reached step {step:,} of {planned:,} so far (it is continued from its saved state)")
        equal, compared = int(r["equal probes"]), int(r["compared probes"])
        start = (f"its {compared} probes up to step {FORMATION_STEP:,} equal its grid run's" if equal == compared
                 else f"{equal} of its {compared} probes up to step {FORMATION_STEP:,} equal its grid run's (the "
                      "others differ: runs agree bit for bit only on the same software and CPU)")
        if not _missing(r["sink step"]):
            sink = int(r["sink step"])
            found = (f"formed a sink at step {sink:,} ({tokens_seen(sink):.0f}M tokens), "
                     + ("after" if sink > FORMATION_STEP else "by") + f" the test's step {FORMATION_STEP:,}")
            later, lost = int(r["probes after"]), int(r["unformed after"])
            if later:
                found += (f" (at {lost} of its {later} later probes the lower bound fell to 0.5 or below again; "
                          if lost else f" (it held at all {later} later probes; ")
                found += (f"at its last probe layer {int(r['largest layer'])}'s share is {r['share']:.3f}, lower bound "
                          f"{r['share low']:.3f})")
        else:
            found = (f"formed **no sink** by step {step:,} ({tokens_seen(step):.0f}M tokens): its largest layer share "
                     f"is {r['share']:.3f} (layer {int(r['largest layer'])}, lower bound {r['share low']:.3f}), "
                     f"against 0.5")
        gu = f"{r['sink heads % now']:.1f} % of its heads are sink heads by Gu et al.'s metric at its last probe"
        parts.append(f"`{r['run']}` {reach} and {found}; " + (f"{start}; " if compared else "") + f"{gu}.")
    return " ".join(parts)


def long_run_takeaway(rows: pd.DataFrame) -> str:
    """One line per trained long run for the figure: where it formed a sink, or how far it went without one."""
    said = []
    for _, r in rows.iterrows():
        if _missing(r["step"]):
            continue
        if not _missing(r["sink step"]):
            said.append(f"{r['run']}: a sink at step {int(r['sink step']):,}")
        else:
            said.append(f"{r['run']}: no sink by step {int(r['step']):,}")
    return "; ".join(said) + "." if said else ""


#: the training tokens of Gu et al.'s models (arXiv 2410.10781: 60M parameters on 5B tokens), which formed a sink
#: under every position encoding
GU_TOKENS = 5e9


def sooner_or_never(rows: pd.DataFrame) -> str:
    """The long runs' outcome in one paragraph for the scorecard (observed, one run per cell: no verdict), beside
    Gu et al.'s scale; empty when no long run has been trained."""
    take = long_run_takeaway(rows)
    if not take:
        return ""
    reached = max(int(s) for s in rows["step"] if not _missing(s))
    return (f"**Sooner or never** (chapter 9: runs continued past the formation test's step {FORMATION_STEP:,}, one "
            f"per cell, observed, not a verdict): {take.rstrip('.')}. Gu et al. found a sink under every encoding "
            f"with {GU_TOKENS / 1e9:.0f}B tokens, about {GU_TOKENS / (tokens_seen(reached) * 1e6):.0f} times the "
            f"{tokens_seen(reached):.0f}M these runs saw.")


def _missing(value: Any) -> bool:
    """Whether a table cell is missing (None or NaN)."""
    import pandas as pd

    return bool(pd.isna(value))


SPEC = register(Analysis(ANALYSIS, __name__))
