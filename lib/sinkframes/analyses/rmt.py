"""Random-matrix statistics of attention per model and across training checkpoints (paper App. B).

``analyse_model`` streams :class:`RMTReducer` through the cache into a ``ModelResult``:
``samples`` holds ``"faithful/<metric>"`` ``[sample, layer]`` (the official statistics of the
head-averaged matrix), ``"corrected/<metric>"`` ``[sample, layer, head]`` (``metrics.rmt``'s
corrected statistics of each head), ``first_token_share`` ``[sample, layer, head]`` and
``n_tokens`` ``[sample]``.

``analyse_series`` does the same for every checkpoint of a training run and adds each
checkpoint's language-model loss on the same texts; :func:`series_table` orders the checkpoints
by step (corrected) or as strings (faithful, as ``rmt.ipynb`` does), and :func:`emergence` reports
the first checkpoint whose first-token share clears a threshold fixed in advance.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd
import torch

from .. import stats
from ..code_digest import code_digest, reducer_version
from ..extraction import summarize
from ..metrics import rmt
from ..metrics.sinks import first_token_share, uniform_first_token_share
from ..results import TWIN, Analysis, ModelResult, Results, each_model, register, with_twin
from ..tensors import require_finite
from ..types import Mode, RunOptions, check_mode
from ..verdicts.measures import NULLS, boot, measure, seed_of
from ..verdicts.verdict import Estimate

ANALYSIS = "rmt"
#: a first-token sink has formed when some layer's head-mean first-token share has its lower 95 %
#: bootstrap bound above this (uniform attention's share: ``metrics.sinks.uniform_first_token_share``)
SINK_SHARE_THRESHOLD = 0.5
#: statistics shown in the summary tables (corrected, per head then averaged)
CORRECTED_SHOWN = ("rms_deviation", "participation_ratio", "stable_rank", "relative_gap", "n_outliers",
                   "top_over_edge", "ks_distance")


@dataclass(frozen=True)
class RMTReducer:
    """Per-sample official and corrected spectral statistics of attention (``version`` enters cache keys)."""

    name: str = "rmt"

    @property
    def version(self) -> str:
        """The digest of this reducer's code (``code_digest``): it enters the cache key, so changed code never
        reuses results cached by the old."""
        return reducer_version(type(self))

    def key(self) -> dict[str, Any]:
        return {"reducer": self.name, "version": self.version, "faithful": list(rmt.FAITHFUL_METRICS),
                "corrected": list(rmt.CORRECTED_METRICS), "null": [rmt.NULL_DRAWS, rmt.NULL_SEED, rmt.OUTLIER_SDS],
                "zero_deviation": rmt.ZERO_DEVIATION}

    def __call__(self, attn: torch.Tensor, causal: bool) -> dict[str, torch.Tensor]:
        require_finite(attn)
        a = attn.detach().double().cpu().numpy()  # [layer, head, query, key]
        n_layers, n_heads, n = a.shape[0], a.shape[1], a.shape[-1]
        faithful = np.full((n_layers, len(rmt.FAITHFUL_METRICS)), np.nan)  # [layer, metric]
        corrected = np.full((n_layers, n_heads, len(rmt.CORRECTED_METRICS)), np.nan)  # [layer, head, metric]
        if n >= rmt.MIN_TOKENS:
            from ..threads import single_blas_thread

            # one BLAS thread: these matrices are small, and threads contending with torch's cost 100x
            with np.errstate(all="ignore"), single_blas_thread():
                for layer in range(n_layers):
                    off = rmt.official_metrics(a[layer].mean(0))
                    faithful[layer] = [off[m] for m in rmt.FAITHFUL_METRICS]
                # every head's deviation spectrum at once, against noise on the same (causal or full) mask
                spectra = rmt.deviation_spectra(a, causal).reshape(n_layers * n_heads, n)  # [layer * head, n]
                corrected = rmt.deviation_metrics(spectra, causal).reshape(n_layers, n_heads, -1)
        return {"faithful": torch.from_numpy(faithful), "corrected": torch.from_numpy(corrected),
                "first_token_share": first_token_share(attn, causal).double().cpu(),  # [layer, head]
                "n_tokens": torch.tensor(n, device="cpu")}


def from_summaries(record: dict[str, Any], summaries: list[dict[str, torch.Tensor]]) -> ModelResult:
    """Stack the reducer outputs of every sentence into a ``ModelResult``."""
    if not summaries:
        raise ValueError("no samples to aggregate")
    faithful = torch.stack([s["faithful"] for s in summaries]).numpy()  # [sample, layer, metric]
    corrected = torch.stack([s["corrected"] for s in summaries]).numpy()  # [sample, layer, head, metric]
    samples: dict[str, np.ndarray] = {rmt.rmt_key("faithful", m): faithful[..., i]
                                      for i, m in enumerate(rmt.FAITHFUL_METRICS)}
    samples.update({rmt.rmt_key("corrected", m): corrected[..., i] for i, m in enumerate(rmt.CORRECTED_METRICS)})
    samples["first_token_share"] = torch.stack([s["first_token_share"] for s in summaries]).numpy()
    samples["n_tokens"] = np.array([int(s["n_tokens"]) for s in summaries])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        heads = {m: np.nanmean(_finite(samples[rmt.rmt_key("corrected", m)]), 0) for m in rmt.CORRECTED_METRICS}
        heads["first_token_share"] = np.nanmean(samples["first_token_share"], 0)
    ms = ModelResult(analysis=ANALYSIS, record=record, n_sentences=len(summaries), heads=heads, samples=samples,
                     params={"seed": 0})
    ms.layers = _corrected_layers(ms)
    return ms


def analyse_model(ref: str, texts: list[str], opts: RunOptions | None = None, *, seed: int = 0, twin: bool = False,
                  **overrides: Any) -> ModelResult:
    """Official and corrected RMT statistics of ``ref`` on ``texts`` (one streamed pass, cached); with
    ``twin``, the same of its random-initialized twin in ``data[TWIN]`` (:func:`~.base.with_twin`)."""
    o = RunOptions.build(opts, **overrides)
    ex = summarize(ref, texts, RMTReducer(), o)
    ms = from_summaries(ex.record, ex.summaries or [])
    ms.from_cache = ex.from_cache
    ms.params.update({"seed": seed, **asdict(o)})
    if seed:  # the per-layer intervals were drawn with seed 0 when the result was assembled
        ms.layers = _corrected_layers(ms)
    return with_twin(ms, lambda t: analyse_model(t, texts, o, seed=seed)) if twin else ms


def analyse(models: list[str], texts: list[str], opts: RunOptions | None = None, *, seed: int = 0,
            twin: bool = True, **overrides: Any) -> Results:
    """:func:`analyse_model` for each model (with its random-initialized twin if ``twin``, as every attention
    analysis does by default), in order; a failing model is reported, not fatal (``each_model``). The checkpoint
    series (:func:`analyse_series`) runs no twin: its own step 0 is its random start."""
    o = RunOptions.build(opts, **overrides)  # a bad option is the caller's error, not a model's
    return each_model(models, lambda m: analyse_model(m, texts, o, seed=seed, twin=twin), ANALYSIS)


def twins_of(results: Sequence[ModelResult]) -> list[ModelResult | None]:
    """Each result's random-initialized twin (``data[TWIN]``), aligned with ``results``; ``None`` where it was
    not run or failed."""
    return [r.data.get(TWIN) for r in results]


def _finite(x: np.ndarray) -> np.ndarray:
    """``x`` with +-inf as NaN (the official aggregation drops both)."""
    return np.where(np.isfinite(x), x, np.nan)


def _corrected_layers(ms: ModelResult) -> pd.DataFrame:
    """Per layer: head-mean of each corrected statistic, averaged over sentences with a bootstrap interval."""
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for layer in range(ms.n_layers):
            row: dict[str, Any] = {"layer": layer}
            for m in ("first_token_share", *CORRECTED_SHOWN):
                key = m if m == "first_token_share" else rmt.rmt_key("corrected", m)
                per_sample = np.nanmean(_finite(ms.samples[key][:, layer]), -1)  # [sample]
                seed = int(ms.params.get("seed", 0))
                row[m], row[f"{m}_lo"], row[f"{m}_hi"] = stats.bootstrap_ci(per_sample, seed=seed)
            rows.append(row)
    return pd.DataFrame(rows)


def faithful_layers(ms: ModelResult) -> pd.DataFrame:
    """``rmt.ipynb``'s aggregation: per layer, mean, std and count of the finite per-text values of
    each official statistic of the head-averaged matrix (infinite and undefined values dropped)."""
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for layer in range(ms.n_layers):
            row: dict[str, Any] = {"layer": layer}
            for m in rmt.FAITHFUL_METRICS:
                v = ms.samples[rmt.rmt_key("faithful", m)][:, layer]
                ok = v[np.isfinite(v)]
                row[m] = float(ok.mean()) if ok.size else float("nan")
                row[f"{m}_std"] = float(ok.std(ddof=0)) if ok.size else float("nan")
                row[f"{m}_count"] = int(ok.size)
            rows.append(row)
    return pd.DataFrame(rows)


def tables(ms: ModelResult, mode: Mode = "corrected") -> dict[str, pd.DataFrame]:
    """``{"layers": ...}``: the official aggregation (faithful) or the corrected layer table."""
    return {"layers": faithful_layers(ms) if check_mode(mode) == "faithful" else ms.layers}


def model_summary(results: Sequence[ModelResult], mode: Mode, labels: Sequence[str] | None = None) -> pd.DataFrame:
    """One row per model: each statistic averaged over layers (faithful: of the official per-layer means;
    corrected: of the per-layer means), and the first-token share of the layer where it is largest."""
    mode = check_mode(mode)
    rows = []
    for i, ms in enumerate(results):
        row: dict[str, Any] = {"model": labels[i] if labels else ms.ref}
        if mode == "faithful":
            fl = faithful_layers(ms)
            for m in rmt.FAITHFUL_METRICS:
                row[m] = float(stats.nanmean(fl[m].to_numpy()))
            v = ms.samples[rmt.rmt_key("faithful", "marchenko_pastur_kl")]
            row["mp_kl_infinite_%"] = 100.0 * float(np.mean(np.isinf(v)))
        else:
            for m in CORRECTED_SHOWN:
                row[m] = float(stats.nanmean(ms.layers[m].to_numpy()))
            top = int(np.nanargmax(ms.layers["first_token_share"]))
            row["max_first_token_share"] = float(ms.layers["first_token_share"][top])
            row["at_layer"] = top
        rows.append(row)
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------------------- training series
@dataclass
class Checkpoint:
    """One checkpoint of a training run: its name (``step<N>``), how to load it, and its revision."""

    name: str
    ref: str
    revision: str | None = None

    def __post_init__(self) -> None:
        rmt.step_order([self.name])  # the name must be step<N>

    @property
    def step(self) -> int:
        return int(self.name[4:])


@dataclass
class Series:
    """Every checkpoint's ``ModelResult`` and its loss on the same texts (nats per token)."""

    checkpoints: list[Checkpoint]
    results: list[ModelResult]
    loss: list[float]
    seed: int = 0

    def by_name(self) -> dict[str, tuple[Checkpoint, ModelResult, float]]:
        return {c.name: (c, r, lo) for c, r, lo in zip(self.checkpoints, self.results, self.loss, strict=True)}


@torch.no_grad()
def text_loss(ref: str, texts: Sequence[str], opts: RunOptions) -> float:
    """Mean next-token cross-entropy (nats) of a causal LM over ``texts`` (each truncated to ``max_length``),
    through the library's one batching loop (length-sorted, right-padded: a real token never sees padding);
    cached on disk, so a warm rerun loads no checkpoint."""
    from ..cache import Cache, cache_key
    from ..extraction.batching import forward, get_model, iterate_batches, tokenize_for

    o = RunOptions.build(opts, truncation=True)
    key = cache_key({"kind": "text_loss", "version": code_digest(__name__)}, ref, list(texts), o)

    @torch.no_grad()
    def compute() -> float:
        lm = get_model(ref, o, logits=True)  # the model the analysis just ran, when it was not a cache hit
        ids = tokenize_for(lm, list(texts), o)
        total, count = 0.0, 0
        for batch, input_ids, mask in iterate_batches(lm, ids, o.batch_size, progress=False, desc="loss"):
            logits = forward(lm, lm.model, input_ids, mask).logits.float()  # [batch, width, vocab]
            targets = input_ids.to(logits.device)  # [batch, width]
            for r, i in enumerate(batch):
                n = len(ids[i])
                if n < 2:
                    continue
                nll = torch.nn.functional.cross_entropy(logits[r, : n - 1], targets[r, 1:n], reduction="sum")
                total, count = total + float(nll), count + n - 1
        return total / count if count else float("nan")

    value, _ = Cache(namespace="text_loss").get_or_compute(key, compute, opts.use_cache)
    return float(value)


def analyse_series(checkpoints: Sequence[Checkpoint], texts: list[str], opts: RunOptions | None = None, *,
                   seed: int = 0, **overrides: Any) -> Series:
    """:func:`analyse_model` and :func:`text_loss` at every checkpoint (given in any order)."""
    o = RunOptions.build(opts, **overrides)
    results, losses = [], []
    for c in checkpoints:
        oc = RunOptions.build(o, revision=c.revision)
        results.append(analyse_model(c.ref, texts, oc, seed=seed))
        losses.append(text_loss(c.ref, texts, oc))
    return Series(list(checkpoints), results, losses, seed)


def _layer_max_share(ms: ModelResult, seed: int) -> tuple[float, float, float, int]:
    """The largest layer's head-mean first-token share, with a bootstrap interval of that maximum
    (sentences resampled, the maximum taken again in each replicate), and the layer."""
    per = np.nanmean(ms.samples["first_token_share"], -1)  # [sample, layer]
    means = np.nanmean(per, 0)  # [layer]
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, per.shape[0], size=(2000, per.shape[0]))
    boot = np.nanmean(per[idx], 1).max(-1)  # [boot]
    return float(means.max()), float(np.quantile(boot, 0.025)), float(np.quantile(boot, 0.975)), int(means.argmax())


def series_table(series: Series, mode: Mode) -> pd.DataFrame:
    """One row per checkpoint. Corrected: by step, with the loss, the largest layer first-token share
    (interval) and the corrected statistics averaged over layers and heads. Faithful: in
    ``rmt.ipynb``'s string order, the official statistics averaged over layers."""
    mode = check_mode(mode)
    named = series.by_name()
    order = rmt.faithful_order(named) if mode == "faithful" else rmt.step_order(named)
    rows = []
    for name in order:
        c, ms, loss = named[name]
        row: dict[str, Any] = {"checkpoint": name, "step": int(name[4:])}
        if mode == "faithful":
            fl = faithful_layers(ms)
            for m in rmt.FAITHFUL_METRICS:
                row[m] = float(stats.nanmean(fl[m].to_numpy()))
        else:
            row["loss"] = loss
            share, lo, hi, layer = _layer_max_share(ms, series.seed)
            row.update({"max_first_token_share": share, "share_lo": lo, "share_hi": hi, "at_layer": layer})
            for m in CORRECTED_SHOWN:
                row[m] = float(stats.nanmean(ms.layers[m].to_numpy()))
        rows.append(row)
    return pd.DataFrame(rows)


def faithful_comparison(series: Series) -> pd.DataFrame:
    """``rmt.ipynb``'s "first -> last" comparison: its first and last checkpoints in string order, and
    the same comparison between the first and last by step, per official statistic (layer means)."""
    named = series.by_name()
    rows = []
    for label, order in (("as rmt.ipynb orders them", rmt.faithful_order(named)), ("by step", rmt.step_order(named))):
        first, last = faithful_layers(named[order[0]][1]), faithful_layers(named[order[-1]][1])
        for m in ("spectral_gap", "participation_ratio", "entropy", "sink_concentration"):
            a, b = float(np.nanmean(first[m])), float(np.nanmean(last[m]))
            rows.append({"order": label, "first": order[0], "last": order[-1], "statistic": m, "first_value": a,
                         "last_value": b, "change_%": 100.0 * (b - a) / a if a else math.inf})
    return pd.DataFrame(rows)


def uniform_share(ms: ModelResult) -> float:
    """The first-token share uniform attention would have on ``ms``'s sentences (their token counts): the
    floor that a measured share is read against."""
    return float(np.mean([uniform_first_token_share(int(n), ms.causal) for n in ms.samples["n_tokens"]]))


def emergence(series: Series, threshold: float = SINK_SHARE_THRESHOLD) -> dict[str, Any]:
    """When a first-token sink forms: the first checkpoint (by step) whose largest layer share has
    its lower bound above ``threshold`` (``formed``), and the first whose upper bound is (``possible``);
    ``None`` where no checkpoint qualifies. ``final_share`` is the last checkpoint's value and interval."""
    table = series_table(series, "corrected")
    mean_ok = table[table["max_first_token_share"] > threshold]
    lo_ok = table[table["share_lo"] > threshold]
    hi_ok = table[table["share_hi"] > threshold]
    last, first = table.iloc[-1], table.iloc[0]
    return {
        "threshold": threshold,
        "formed_at": None if lo_ok.empty else int(lo_ok["step"].iloc[0]),
        "mean_above_at": None if mean_ok.empty else int(mean_ok["step"].iloc[0]),
        "possible_from": None if hi_ok.empty else int(hi_ok["step"].iloc[0]),
        "stays_formed": bool(not lo_ok.empty and (table.loc[lo_ok.index[0]:, "share_lo"] > threshold).all()),
        "final_step": int(last["step"]),
        "final_share": (float(last["max_first_token_share"]), float(last["share_lo"]), float(last["share_hi"])),
        "final_layer": int(last["at_layer"]),
        "first_step": int(first["step"]),
        "first_share": (float(first["max_first_token_share"]), float(first["share_lo"]), float(first["share_hi"])),
        "uniform_share": uniform_share(series.results[0]),
        "mean_tokens": float(np.mean(series.results[0].samples["n_tokens"])),
    }


# ----------------------------------------------------------------------------------------- verdict inputs
SERIES_ANALYSIS = "rmt_series"
#: the registry subject of claims about a training run's checkpoints
SERIES_FAMILY = "training"


def series_result(series: Series, label: str) -> ModelResult:
    """The series as one ``ModelResult`` (``analysis="rmt_series"``) for the verdict layer: its record
    names the run (``label``) and the subject ``training``; ``data["series"]`` holds the checkpoints."""
    first = series.results[0].record
    record = {**first, "ref": label, "family": SERIES_FAMILY, "paper_frame": "not assigned", "causal": True,
              "weights": f"{len(series.checkpoints)} checkpoints of a training run (the emergence page)"}
    return ModelResult(analysis=SERIES_ANALYSIS, record=record, n_sentences=series.results[0].n_sentences,
                       data={"series": series}, params={"seed": series.seed})


@dataclass
class TrainingRun:
    """One training run measured at its checkpoints: its label, where it came from (``source`` of
    :func:`checkpoints_of`), the :class:`Series` and the series as the verdict layer reads it."""

    label: str
    source: str
    series: Series

    @property
    def result(self) -> ModelResult:
        return series_result(self.series, self.label)


def analyse_runs(sources: Sequence[str], texts: list[str], opts: RunOptions | None = None, *,
                 steps: Sequence[str] | None = None, seed: int = 0, max_length: int = 128) -> list[TrainingRun]:
    """Every training run in ``sources`` (each as :func:`checkpoints_of` reads it, at ``steps`` or at all of its
    checkpoints) measured by :func:`analyse_series` on ``texts`` cut to ``max_length`` tokens."""
    runs = []
    for source in sources:
        label, checkpoints = checkpoints_of(source, steps)
        series = analyse_series(checkpoints, texts, opts, seed=seed, max_length=max_length, truncation=True)
        runs.append(TrainingRun(label, source, series))
    return runs


def gap_trajectory(series: Series, mode: Mode) -> pd.DataFrame:
    """Per checkpoint (faithful: string order, official ``mu1/mu2`` of the head-averaged matrix, finite
    values; corrected: by step, relative gap of each head's spectrum): the mean over sentences of the
    layer-mean spectral gap, with a bootstrap interval (corrected only; the official code has none)."""
    mode = check_mode(mode)
    named = series.by_name()
    order = rmt.faithful_order(named) if mode == "faithful" else rmt.step_order(named)
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for name in order:
            ms = named[name][1]
            if mode == "faithful":
                v = float(np.nanmean(faithful_layers(ms)["spectral_gap"]))
                rows.append({"checkpoint": name, "gap": v, "lo": v, "hi": v})
            else:
                per = np.nanmean(_finite(ms.samples[rmt.rmt_key("corrected", "relative_gap")]), axis=(1, 2))  # [sample]
                m, lo, hi = stats.bootstrap_ci(per, seed=series.seed)
                rows.append({"checkpoint": name, "gap": m, "lo": lo, "hi": hi})
    return pd.DataFrame(rows)


def direction_changes(gap: pd.DataFrame) -> tuple[int, int]:
    """How often the gap's direction of change reverses along the checkpoints: counting only steps
    whose intervals are disjoint (``strict``), and counting every change of the means (``loose``)."""

    def reversals(signs: list[int]) -> int:
        s = [x for x in signs if x != 0]
        return sum(1 for a, b in zip(s, s[1:], strict=False) if a != b)

    m, lo, hi = gap["gap"].to_numpy(), gap["lo"].to_numpy(), gap["hi"].to_numpy()
    loose = [int(np.sign(b - a)) for a, b in zip(m, m[1:], strict=False)]
    strict = [(1 if lo[i + 1] > hi[i] else -1 if hi[i + 1] < lo[i] else 0) for i in range(len(m) - 1)]
    return reversals(strict), reversals(loose)


# ----------------------------------------------------------------------------------------- checkpoint sources
SHIPPED = "shipped"


def checkpoints_of(source: str, steps: Sequence[str] | None = None) -> tuple[str, list[Checkpoint]]:
    """``(label, checkpoints)`` of a training run.

    ``source``: ``"shipped"`` (the run this package ships, ``python -m sinkframes train-emergence``), a
    folder holding ``step<N>`` model folders, or a hub id whose revisions are ``step<N>`` (Pythia);
    ``steps`` selects checkpoints (required for a hub id, whose revisions cannot be listed offline).
    """
    from pathlib import Path

    from ..training.emergence import CHECKPOINT_DIR, RUN_NAME

    folder = CHECKPOINT_DIR if source == SHIPPED else Path(source).expanduser()
    if folder.is_dir():
        found = {p.name: p for p in folder.iterdir() if p.is_dir() and re.fullmatch(r"step\d+", p.name)}
        if not found:
            raise ValueError(f"{folder} holds no step<N> checkpoint folders"
                             + (": run `python -m sinkframes train-emergence`" if source == SHIPPED else ""))
        names = list(steps) if steps is not None else rmt.step_order(found)
        missing = [n for n in names if n not in found]
        if missing:
            have = ", ".join(rmt.step_order(found))
            raise ValueError(f"no checkpoint {', '.join(missing)} in {folder}; it has {have}")
        label = RUN_NAME if source == SHIPPED else folder.name
        return label, [Checkpoint(n, str(found[n])) for n in names]
    if source == SHIPPED:
        raise ValueError(f"the shipped checkpoints are missing from {folder}: reinstall the package or run "
                         "`python -m sinkframes train-emergence`")
    if not steps:
        raise ValueError(f"{source!r} is not a folder; for a hub id give checkpoint_steps (e.g. ['step0', 'step1000'])")
    return source, [Checkpoint(n, source, revision=n) for n in steps]


def diagonal_check(ref: str, text: str, opts: RunOptions | None = None, **overrides: Any) -> pd.DataFrame:
    """Per layer, for one sentence: the official "eigenvalues" of the head-averaged attention against
    its sorted diagonal (equal for a causal model: a triangular matrix's eigenvalues are its diagonal)."""
    from ..extraction import extract_attention

    ex = extract_attention(ref, [text], RunOptions.build(opts, **overrides))
    if not ex.attentions:
        raise ValueError(f"no attention came back for {ref!r}")
    a = ex.attentions[0].double().numpy().mean(1)  # [layer, query, key]
    rows = []
    for layer in range(a.shape[0]):
        mu = rmt.official_moduli(a[layer])
        diag = np.sort(np.diag(a[layer]))[::-1]
        rows.append({"layer": layer, "top eigenvalue moduli": np.round(mu[:4], 4).tolist(),
                     "top diagonal entries": np.round(diag[:4], 4).tolist(),
                     "largest difference": float(np.max(np.abs(mu - diag)))})
    return pd.DataFrame(rows)

# ---------------------------------------------------------------------- measures the verdicts read
# Each is registered in :data:`sinkframes.verdicts.measures.MEASURES` under the name a claim of
# ``paper.claims`` reads; see that module for the bootstrap and the nulls.

def _series(r: ModelResult) -> Any:
    return r.data["series"]


def _fraction(step: int | None, final: int) -> float:
    return math.inf if step is None else step / final


@measure("rmt.sink_formed_fraction", "rmt_series", null="untrained_series")
def sink_formed_fraction(r: ModelResult, mode: Mode) -> Estimate | None:
    """Fraction of the run at which a first-token sink forms (largest layer share above the threshold):
    the first checkpoint whose mean clears it, bounded by the first whose interval reaches it and the
    first whose interval clears it. Undetermined when no checkpoint's interval clears it."""
    if mode == "faithful":
        return None

    em = emergence(_series(r))
    final = em["final_step"]
    return Estimate(_fraction(em["mean_above_at"], final), _fraction(em["possible_from"], final),
                    _fraction(em["formed_at"], final), r.n_sentences, "checkpoints where the 95 % bootstrap "
                    f"interval of the largest layer first-token share first reaches / clears {em['threshold']:g}",
                    detail=f"of {final} steps" + ("; no checkpoint's interval clears the threshold: no sink formed"
                                                  if em["formed_at"] is None else ""),
                    undetermined=em["formed_at"] is None)


def _untrained_fraction(r: ModelResult, mode: Mode) -> Estimate | None:
    """The untrained run: every checkpoint equal to step 0, so a sink 'forms' at 0 or never."""
    if mode == "faithful":
        return None

    s = _series(r)
    first = min(range(len(s.checkpoints)), key=lambda i: s.checkpoints[i].step)
    frozen = Series(list(s.checkpoints), [s.results[first]] * len(s.results), [s.loss[first]] * len(s.loss), s.seed)
    em = emergence(frozen)
    v = 0.0 if em["formed_at"] is not None else math.inf
    return Estimate(v, v, v, r.n_sentences, "untrained run", undetermined=not math.isfinite(v))


NULLS["untrained_series"] = _untrained_fraction


@measure("rmt.gap_change", "rmt_series", null="no_training")
def gap_change(r: ModelResult, mode: Mode) -> Estimate | None:
    """The spectral gap's change over the run, last checkpoint minus first: faithful, the official ``mu1/mu2``
    of the head-averaged matrix in the official (string) order of the checkpoints, a point value; corrected,
    each head's relative gap by step, paired by sentence, with a bootstrap interval over sentences."""
    from ..metrics import rmt

    named = _series(r).by_name()
    if mode == "faithful":
        order = rmt.faithful_order(named)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            a, b = (float(np.nanmean(faithful_layers(named[k][1])["spectral_gap"])) for k in (order[0], order[-1]))
        return Estimate(b - a, n=r.n_sentences, interval="none (the official comparison has none)",
                        detail=f"{order[-1]} minus {order[0]} (official order)", undetermined=math.isnan(b - a))
    order = rmt.step_order(named)
    first, last = (named[k][1].samples[rmt.rmt_key("corrected", "relative_gap")] for k in (order[0], order[-1]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        per = (np.nanmean(np.where(np.isfinite(last), last, np.nan), axis=(1, 2))
               - np.nanmean(np.where(np.isfinite(first), first, np.nan), axis=(1, 2)))  # [sample]
    est = boot(per, float, seed_of(r))
    return Estimate(est.value, est.low, est.high, est.n, est.interval, f"{order[-1]} minus {order[0]}",
                    est.undetermined)


NULLS["no_training"] = lambda r, mode: Estimate(0.0, interval="none (analytic)",
                                                detail="an untrained run: every checkpoint equal to the first")


SPEC = register(Analysis(ANALYSIS, __name__, analyse=analyse, tables=tables))
#: the series of a training run's checkpoints (``series_result``), read by the emergence claims
SERIES_SPEC = register(Analysis(SERIES_ANALYSIS, __name__))
