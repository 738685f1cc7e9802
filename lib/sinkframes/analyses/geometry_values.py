"""The geometry of the sink and the value space (paper sections 3.3-3.4, 5.4, appendix C.2).

One capture pass per model (``capture.summarize_captures``) reduces every sentence at once to
per-layer (and per-head) numbers: the sink-key geometry of ``metrics.geometry`` and the value-space
measures of ``metrics.values`` in both modes. This module averages them over sentences and heads
into one ``ModelResult`` per model and builds the chapter's tables; ``report.geometry_values`` writes
its plain statements from them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd
import torch
from scipy import stats as sps

from .. import paper, stats
from ..code_digest import reducer_version
from ..extraction import capture
from ..metrics import geometry, values
from ..results import Analysis, ModelResult, Results, each_model, register, with_twin
from ..tensors import require_finite
from ..types import MODES, Mode, RunOptions, check_mode
from ..verdicts.measures import NULLS, boot, measure, region_parts, seed_of, shape_measure, with_parts
from ..verdicts.verdict import Estimate

ANALYSIS = "geometry_values"
KEYS = ["layer", "depth", "region"]

GEOMETRY_COLUMNS = [
    "key0_norm", "other_key_norm", "key_norm_ratio", "cos_to_sink_pre", "cos_to_others_pre", "cos_to_sink_post",
    "cos_to_others_post", "sink_logit", "other_logit", "typical_logit", "norm_part", "alignment_part",
    "log_key_norm_ratio", "sink_cos", "log_query_norm",
]
VALUE_COLUMNS = ["entropy", "magnitude", "alignment", "entropy_magnitude", "relative_magnitude", "directional_guidance",
                 "reference_count"]


def _require_finite(x: torch.Tensor, what: str) -> None:
    """:func:`tensors.require_finite` with a one-pass fast path: a finite sum proves every entry finite
    (NaN and inf propagate through a sum); only otherwise (or on overflow) is the entrywise check run."""
    if not bool(torch.isfinite(x.sum())):
        require_finite(x, what)


@dataclass(frozen=True)
class GeometryValuesReducer:
    """Per sample: geometry ``[layer, head]`` and value-space measures in both modes."""

    name: str = "geometry_values"

    @property
    def version(self) -> str:
        """The digest of this reducer's code (``code_digest``): it enters the cache key, so changed code never
        reuses results cached by the old."""
        return reducer_version(type(self))

    def key(self) -> dict[str, Any]:
        return {"reducer": self.name, "version": self.version}

    def __call__(self, cap: capture.SampleCapture, causal: bool) -> dict[str, torch.Tensor]:
        for name in ("attention", "query", "key", "value", "output_heads", "output"):
            _require_finite(getattr(cap, name), name)
        if cap.hidden is not None:
            _require_finite(cap.hidden, "hidden states")
        out: dict[str, torch.Tensor] = {"n_tokens": torch.tensor(cap.n_tokens, device=cap.attention.device)}
        if cap.n_tokens >= 3:
            out.update(geometry.geometry_summary(cap.query_pre, cap.query, cap.key_pre, cap.key, cap.scaling, causal))
        if cap.hidden is None:
            raise ValueError("the faithful value-space measures need hidden states (capture with hidden_states=True)")
        for k, v in values.faithful_summary(cap.attention, cap.hidden).items():
            out[f"faithful_{k}"] = v
        for k, v in values.corrected_summary(cap.attention, cap.value, cap.output_heads, cap.output, causal).items():
            out[f"corrected_{k}"] = v
        return out


def _per_layer(summaries: list[dict[str, torch.Tensor]], name: str) -> np.ndarray:
    """``[sample, layer]``: the measure, averaged over heads (NaN-aware) where it is per head."""
    rows = []
    for s in summaries:
        if name not in s:
            continue
        v = s[name].double()
        if v.dim() == 2:
            ok = torch.isfinite(v)
            v = torch.where(ok, v, 0.0).sum(-1) / ok.sum(-1).clamp_min(1)
            v = torch.where(ok.any(-1), v, torch.full_like(v, float("nan")))
        rows.append(v.numpy())
    return np.stack(rows) if rows else np.empty((0, 0))


def _nanmean0(arr: np.ndarray, n_layers: int) -> np.ndarray:
    """Mean over samples (axis 0) ignoring NaN; NaN (without a warning) where there is no value at all."""
    if not arr.size:
        return np.full(n_layers, np.nan)
    ok = np.isfinite(arr)
    cnt = ok.sum(0)
    total = np.where(ok, arr, 0.0).sum(0)
    return np.where(cnt > 0, total / np.maximum(cnt, 1), np.nan)


def from_summaries(record: dict[str, Any], summaries: list[dict[str, torch.Tensor]]) -> ModelResult:
    """Average per-sample summaries over sentences (and heads) into one row per layer.

    ``layers``: one row per layer, value columns prefixed ``faithful_`` / ``corrected_``; ``samples``:
    each measure ``[sample, layer]`` (head means); ``heads``: a few geometry measures ``[layer, head]``.
    """
    n_layers = int(record["n_layers"])
    names = GEOMETRY_COLUMNS + [f"{m}_{c}" for m in MODES for c in VALUE_COLUMNS] + ["faithful_information_change"]
    per_sample = {n: _per_layer(summaries, n) for n in names}  # each [sample, layer]
    regions = stats.layer_regions(n_layers)
    table: dict[str, Any] = {"layer": np.arange(n_layers), "depth": np.arange(n_layers) / max(1, n_layers - 1),
                             "region": [next(k for k, v in regions.items() if i in v) for i in range(n_layers)]}
    for n, arr in per_sample.items():
        table[n] = _nanmean0(arr, n_layers)
    per_head = {}
    for n in ("key_norm_ratio", "cos_to_sink_post", "alignment_part", "norm_part"):
        stacked = [s[n].double().numpy() for s in summaries if n in s]
        if stacked:
            per_head[n] = _nanmean0(np.stack(stacked), n_layers)  # [layer, head] (key norms: [layer, kv_head])
    return ModelResult(analysis=ANALYSIS, record=record, n_sentences=len(summaries), layers=pd.DataFrame(table),
                       heads=per_head, samples=per_sample)


def analyse_model(ref: str, texts: list[str], opts: RunOptions | None = None, *, seed: int = 0,
                  twin: bool = False, **overrides: Any) -> ModelResult:
    """Capture and reduce ``ref`` on ``texts`` (cached on disk).

    ``opts``/``overrides`` are run options; ``params`` records them. Nothing here is random: ``seed`` is
    taken for the signature every analysis shares, and recorded.
    ``twin``: also run the model's random-initialized twin (:func:`~sinkframes.results.with_twin`),
    the null of the depth and shape claims.
    """
    o = RunOptions.build(opts, **overrides)
    record, summaries, hit = capture.summarize_captures(ref, texts, GeometryValuesReducer(), o)
    result = from_summaries(record, summaries)
    result.from_cache = hit
    result.params.update({"seed": seed, **asdict(o)})
    return with_twin(result, lambda t: analyse_model(t, texts, o, seed=seed)) if twin else result


def analyse(models: list[str], texts: list[str], opts: RunOptions | None = None, *, seed: int = 0,
            twin: bool = True, **overrides: Any) -> Results:
    """:func:`analyse_model` for each model (with its random-initialized twin unless ``twin`` is false), in
    order; a failing model is reported, not fatal (``each_model``)."""
    o = RunOptions.build(opts, **overrides)  # a bad option is the caller's error, not a model's
    return each_model(models, lambda m: analyse_model(m, texts, o, seed=seed, twin=twin), ANALYSIS)


def tables(result: ModelResult, mode: Mode) -> dict[str, pd.DataFrame]:
    """``values``: the value-space measures per layer under ``mode``, without their ``faithful_`` /
    ``corrected_`` prefix (so both modes have the same names; the faithful table adds
    ``information_change``). Under ``"corrected"`` also ``geometry``: the sink-key geometry per layer,
    which has no official counterpart."""
    prefix = f"{mode}_"
    cols = [c for c in result.layers.columns if c.startswith(prefix)]
    values_table = result.layers[KEYS + cols].rename(columns={c: c[len(prefix):] for c in cols})
    out = {"values": values_table}
    if mode == "corrected":
        out["geometry"] = result.layers[KEYS + GEOMETRY_COLUMNS].copy()
    return out


# ---------------------------------------------------------------------------------------------
# tables


def geometry_table(results: list[ModelResult]) -> pd.DataFrame:
    """One row per model: the sink-key geometry averaged over layers (and heads, sentences)."""
    rows = []
    for r in results:
        d = r.layers
        rows.append({
            "model": r.ref, "position encoding": r.record["position_encoding"],
            "|k0| / mean |k_j|": d["key_norm_ratio"].mean(),
            "layers with |k0| < mean |k_j|": f"{int((d['key_norm_ratio'] < 1).sum())} / {len(d)}",
            "cos(q, k0) before RoPE": d["cos_to_sink_pre"].mean(), "cos(q, k0) after": d["cos_to_sink_post"].mean(),
            "cos(q, k_j) before": d["cos_to_others_pre"].mean(), "cos(q, k_j) after": d["cos_to_others_post"].mean(),
            "sink logit": d["sink_logit"].mean(), "other logit": d["other_logit"].mean(),
            "norm part": d["norm_part"].mean(), "alignment part": d["alignment_part"].mean(),
        })
    return pd.DataFrame(rows)


def first_last_values(r: ModelResult, mode: Mode) -> dict[str, dict[str, float]]:
    """``values.first_last`` (first, last, difference, ratio) of entropy, magnitude and alignment under ``mode``."""
    d = r.tables(check_mode(mode))["values"]
    return {name: values.first_last(d[name].tolist()) for name in ("entropy", "magnitude", "alignment")}


def faithful_vs_corrected(results: list[ModelResult]) -> pd.DataFrame:
    """Per model and mode: first-to-last changes (difference AND ratio) and layer-mean values."""
    rows = []
    for r in results:
        for mode in MODES:
            d = r.tables(mode)["values"]
            fl = first_last_values(r, mode)
            ent, mag, ali = fl["entropy"], fl["magnitude"], fl["alignment"]
            rho = sps.spearmanr(d["layer"], d["entropy"]).statistic if len(d) > 2 else float("nan")
            rows.append({
                "model": r.ref, "mode": mode,
                "entropy first": ent["first"], "entropy last": ent["last"], "entropy depth trend (Spearman)": rho,
                "magnitude first": mag["first"], "magnitude last": mag["last"],
                "magnitude difference (paper's 'fold')": mag["difference"], "magnitude ratio": mag["ratio"],
                "alignment first": ali["first"], "alignment last": ali["last"],
                "entropy-magnitude corr.": d["entropy_magnitude"].mean(),
                "reference tokens": d["reference_count"].mean(),
                "relative magnitude": d["relative_magnitude"].mean(),
                "directional guidance": d["directional_guidance"].mean(),
            })
    return pd.DataFrame(rows)


def reference_counts(results: list[ModelResult]) -> pd.DataFrame:
    """Mean reference tokens per model (official rule and per-head rule) beside the paper's value
    for the frame type the paper assigns to the model's family."""
    reported = paper.reference_count_by_frame()
    rows = []
    for r in results:
        frame = r.record["paper_frame"]
        rows.append({
            "model": r.ref, "paper frame (family)": frame,
            "official rule (faithful)": r.layers["faithful_reference_count"].mean(),
            "per-head rule (corrected)": r.layers["corrected_reference_count"].mean(),
            "paper": reported.get(frame, float("nan")),
        })
    return pd.DataFrame(rows)


def change_table(results: list[ModelResult], seed: int = 0) -> pd.DataFrame:
    """First-to-last-layer change of entropy, magnitude and alignment per model and mode, as a paired
    comparison over sentences: the mean difference (last - first) with a 95 % bootstrap interval and a
    sign-flip test of zero difference, Holm-corrected across the rows of the table."""
    rows = []
    for r in results:
        for mode in MODES:
            for name in ("entropy", "magnitude", "alignment"):
                x = r.samples[f"{mode}_{name}"]  # [sample, layer]
                d = x[:, -1] - x[:, 0]  # [sample]: paired by sentence
                mean, lo, hi = stats.bootstrap_ci(d, seed=seed)
                _, p = stats.sign_flip_test(d[~np.isnan(d)], seed=seed)
                rows.append({"model": r.ref, "mode": mode, "measure": name,
                             "first": stats.nanmean(x[:, 0]), "last": stats.nanmean(x[:, -1]),
                             "last - first": mean, "low": lo, "high": hi, "n": int(np.sum(~np.isnan(d))),
                             "p (sign flip)": p})
    out = pd.DataFrame(rows)
    out["p (Holm)"] = stats.holm(out["p (sign flip)"].to_numpy())
    return out

# ---------------------------------------------------------------------- measures the verdicts read
# Each is registered in :data:`sinkframes.verdicts.measures.MEASURES` under the name a claim of
# ``paper.claims`` reads; see that module for the bootstrap and the nulls.

def _values(r: ModelResult, mode: Mode, name: str) -> np.ndarray:
    return r.samples[f"{mode}_{name}"]  # [sample, layer]


@measure("values.key_norm_ratio", "geometry_values", null="unit_ratio")
def key_norm_ratio(r: ModelResult, mode: Mode) -> Estimate | None:
    if mode == "faithful":
        return None
    return boot(r.samples["key_norm_ratio"], lambda m: float(np.nanmean(m)), seed_of(r))


@measure("values.sink_cosine_excess", "geometry_values", null="zero")
def sink_cosine_excess(r: ModelResult, mode: Mode) -> Estimate | None:
    if mode == "faithful":
        return None
    x = r.samples["cos_to_sink_post"] - r.samples["cos_to_others_post"]  # [sample, layer]
    return boot(x, lambda m: float(np.nanmean(m)), seed_of(r))


def _values_shape(name: str, stat: Callable[[np.ndarray], float]
                  ) -> Callable[[ModelResult, Mode], tuple[np.ndarray, Callable[[np.ndarray], float]]]:
    return lambda r, mode: (_values(r, mode, name), stat)


shape_measure("values.entropy_last_minus_first", "geometry_values", null="zero")(
    _values_shape("entropy", lambda m: float(m[-1] - m[0])))
shape_measure("values.magnitude_last_minus_first", "geometry_values", null="zero")(
    _values_shape("magnitude", lambda m: float(m[-1] - m[0])))
shape_measure("values.alignment_last", "geometry_values", null="zero")(
    _values_shape("alignment", lambda m: float(m[-1])))
shape_measure("values.alignment_last_minus_first", "geometry_values", null="zero")(
    _values_shape("alignment", lambda m: float(m[-1] - m[0])))


@measure("values.alignment_first_last", "geometry_values", null="zero")
def alignment_first_last(r: ModelResult, mode: Mode) -> Estimate | None:
    """The first and the last layer's geometric-semantic alignment, each a part with its interval."""
    x = _values(r, mode, "alignment")  # [sample, layer]
    parts = region_parts(x, {"first layer": [0], "last layer": [x.shape[1] - 1]}, seed_of(r))
    return with_parts(boot(x, lambda m: float(m[-1] - m[0]), seed_of(r)), parts,
                      detail="the value is last minus first")


NULLS["unit_ratio"] = lambda r, mode: Estimate(1.0, interval="none (analytic)",
                                               detail="a random key: the same norm as the others on average")
NULLS["zero"] = lambda r, mode: Estimate(0.0, interval="none (analytic)",
                                         detail="uniform attention: the same in every layer, no alignment")


SPEC = register(Analysis(ANALYSIS, __name__, analyse=analyse, tables=tables, family_order=4, family_params=("seed",),
                          needs_hook=True, label="value-space"))
