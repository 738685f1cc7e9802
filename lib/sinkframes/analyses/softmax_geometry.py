"""Softmax geometry (paper §3.2, appendix A): synthetic demonstrations and where real rows lie.

Synthetic part: what it costs (in logit margin, or in key norm) to put a given share of the mass on
one key, how a growing sink logit walks a row toward a vertex, and what a small sink key norm
buys. Real part: per-layer descriptors of the attention rows of real models on the simplex
(entropy, share on position 0 and on the strongest key, Fisher-Rao distances to the nearest vertex
and to the uniform row), streamed through ``extraction.summarize``, one ``ModelResult`` per model.
There is no official computation of these descriptors, so only the ``"corrected"`` tables exist.
The page's plain statements are written by ``report.softmax_geometry``.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import asdict
from typing import Any, cast

import numpy as np
import pandas as pd
import torch

from .. import stats
from ..extraction import summarize
from ..metrics import simplex
from ..metrics.simplex import SimplexSummaryReducer
from ..results import Analysis, ModelResult, Results, each_model, register
from ..types import Mode, RunOptions
from ..verdicts.measures import boot, measure, seed_of
from ..verdicts.structureless import null_summaries
from ..verdicts.verdict import Estimate

ANALYSIS = "softmax_geometry"

DESCRIPTORS = [
    "entropy", "normalized_entropy", "first_share", "max_share", "distance_to_vertex", "distance_to_uniform",
    "relative_distance_to_uniform", "near_vertex", "first_is_top", "near_first_vertex",
]


# --- synthetic ---------------------------------------------------------------------------------


def margin_table(shares: tuple[float, ...] = (0.5, 0.9, 0.99), lengths: tuple[int, ...] = (4, 16, 64, 256),
                 head_dim: int = 64, cosine: float = 0.5) -> pd.DataFrame:
    """Logit margin one key needs over equal competitors to hold each share, and the key norm that
    gives that margin to a query of norm ``sqrt(head_dim)`` (unit-variance components) at the given
    cosine. One row per number of keys, one column per share and quantity."""
    rows = []
    for n in lengths:
        row: dict[str, Any] = {"keys": n}
        for s in shares:
            m = simplex.margin_for_share(s, n)
            row[f"margin for {s:.0%}"] = m
            row[f"key norm for {s:.0%}"] = float(simplex.key_norm_for_margin(m, math.sqrt(head_dim), cosine, head_dim))
        rows.append(row)
    return pd.DataFrame(rows).set_index("keys")


def sink_sweep_table(lengths: tuple[int, ...] = (8, 32, 128), sink_logits: np.ndarray | None = None,
                     n_draws: int = 200, seed: int = 0) -> pd.DataFrame:
    """Long table of ``simplex.sink_sweep`` for several row lengths (content logits ``N(0, 1)``)."""
    t = np.linspace(-2.0, 12.0, 57) if sink_logits is None else np.asarray(sink_logits, dtype=float)
    frames = []
    for k, n in enumerate(lengths):
        d = pd.DataFrame(simplex.sink_sweep(n, t, n_draws=n_draws, seed=seed + k))
        d["keys"] = n
        d["normalized_entropy"] = d["entropy"] / math.log(n)
        frames.append(d)
    return pd.concat(frames, ignore_index=True)


def sweep_summary(sweep: pd.DataFrame, shares: tuple[float, ...] = (0.5, 0.9)) -> pd.DataFrame:
    """Per row length: the sink logit at which the sink first reaches each share, and the row's
    entropy, distance to the nearest vertex and noise sensitivity there (read off the sweep)."""
    rows = []
    for n, d in sweep.groupby("keys"):
        start = d.iloc[0]
        row: dict[str, Any] = {"keys": int(cast(int, n)),
                               "noise speed, sink logit 0": float(np.interp(0.0, d["sink_logit"], d["noise_speed"]))}
        for s in shares:
            hit = d[d["sink_share"] >= s]
            if hit.empty:
                row[f"sink logit for {s:.0%}"] = float("nan")
                continue
            r = hit.iloc[0]
            row[f"sink logit for {s:.0%}"] = float(r.sink_logit)
            row[f"distance to vertex at {s:.0%}"] = float(r.distance_to_vertex)
            row[f"noise speed at {s:.0%}"] = float(r.noise_speed)
        row["noise speed, largest sink logit"] = float(d.iloc[-1].noise_speed)
        row["noise speed, smallest sink logit"] = float(start.noise_speed)
        rows.append(row)
    return pd.DataFrame(rows).set_index("keys")


def key_norm_sweep(key_norms: tuple[float, ...] = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0), *, n_keys: int = 32,
                   target_share: float = 0.8, head_dim: int = 64, n_queries: int = 2000, seed: int = 0) -> pd.DataFrame:
    """A sink key of norm ``r`` along a fixed direction ``u`` against ``n_keys - 1`` content keys of norm
    ``sqrt(head_dim)``; queries are ``a u + g`` with ``g ~ N(0, I)`` (seeded) and the shared component
    ``a`` chosen so that the sink's mean logit is the margin that gives ``target_share`` against equal
    competitors. Per key norm: the sink share across queries (mean, spread, 5th percentile), the
    spread of the sink logit, and the query-sink cosine and query norm this requires.

    The sink logit is ``q.k / sqrt(d) = r a / sqrt(d) + r (g.u) / sqrt(d)``: its query-dependent part
    scales with ``r``, so a small key norm makes the sink take the same share from every query, at the
    price of a large shared query component (queries nearly aligned with the sink key).
    """
    if not key_norms or min(key_norms) <= 0:
        raise ValueError("key_norms must be positive")
    gen = torch.Generator().manual_seed(seed)
    d = head_dim
    # a simulation on the host, with the CPU generator
    u = torch.nn.functional.normalize(torch.randn(d, generator=gen, dtype=torch.float64, device="cpu"), dim=0)  # [d]
    content = torch.randn(n_keys - 1, d, generator=gen, dtype=torch.float64, device="cpu")  # [key, d]
    content = content - (content @ u).unsqueeze(1) * u  # content keys orthogonal to the sink direction
    content = torch.nn.functional.normalize(content, dim=1) * math.sqrt(d)
    g = torch.randn(n_queries, d, generator=gen, dtype=torch.float64, device="cpu")  # [query, d]
    margin = float(simplex.margin_for_share(target_share, n_keys))
    rows = []
    for r in key_norms:
        a = margin * math.sqrt(d) / r
        q = g + a * u  # [query, d]
        z_sink = (q @ (r * u)) / math.sqrt(d)  # [query]
        z_content = (q @ content.T) / math.sqrt(d)  # [query, key]
        p = torch.softmax(torch.cat([z_sink.unsqueeze(1), z_content], 1), -1)  # [query, key]; key 0 = sink
        share = p[:, 0]
        rows.append({
            "sink key norm": r, "sink share (mean)": share.mean().item(),
            "sink share (sd across queries)": share.std().item(),
            "sink share (5th percentile)": share.quantile(0.05).item(), "sink logit (sd)": z_sink.std().item(),
            "query-sink cosine (mean)": torch.nn.functional.cosine_similarity(q, u.unsqueeze(0)).mean().item(),
            "query norm (mean)": q.norm(dim=1).mean().item(),
        })
    return pd.DataFrame(rows)


# --- real models -------------------------------------------------------------------------------


def simplex_from_summaries(record: dict[str, Any], summaries: list[dict[str, torch.Tensor]],
                           seed: int = 0) -> ModelResult:
    """Aggregate per-sample ``SimplexSummaryReducer`` outputs into per-layer means and CIs.

    ``layers``: one row per layer (means over sentences, heads, queries); ``heads``: each descriptor
    ``[layer, head]`` (mean over sentences); ``samples``: each descriptor ``[sample, layer, head]``.
    """
    if not summaries:
        raise ValueError(f"no summaries for {record.get('ref')}: nothing to aggregate")
    n_layers = int(record["n_layers"])
    arrays = {k: torch.stack([s[k].float() for s in summaries]).numpy()
              for k in DESCRIPTORS}  # each [sample, layer, head]
    regions = stats.layer_regions(n_layers)
    rows = []
    for layer in range(n_layers):
        row: dict[str, Any] = {"layer": layer, "depth": layer / max(1, n_layers - 1),
                               "region": next(k for k, v in regions.items() if layer in v)}
        for k, arr in arrays.items():
            row[k] = float(np.nanmean(arr[:, layer]))
        for k in ("distance_to_vertex", "entropy"):
            _, lo, hi = stats.bootstrap_ci(np.nanmean(arrays[k][:, layer], axis=-1), seed=seed + layer)
            row[f"{k}_low"], row[f"{k}_high"] = lo, hi
        rows.append(row)
    heads = {k: np.nanmean(arr, axis=0) for k, arr in arrays.items()}  # each [layer, head]
    lengths = np.array([int(s["n_tokens"]) for s in summaries])  # [sample]
    return ModelResult(analysis=ANALYSIS, record=record, n_sentences=len(summaries), layers=pd.DataFrame(rows),
                       heads=heads, samples={**arrays, "n_tokens": lengths}, params={"seed": seed})


def analyse_model(ref: str, texts: list[str], opts: RunOptions | None = None, *, seed: int = 0,
                  **overrides: Any) -> ModelResult:
    """Simplex descriptors of ``ref``'s attention rows on ``texts`` (streamed reduction, cached).

    ``opts``/``overrides`` are run options; ``params`` records them with ``seed``.
    """
    o = RunOptions.build(opts, **overrides)
    ex = summarize(ref, texts, SimplexSummaryReducer(), o)
    result = simplex_from_summaries(ex.record, ex.summaries or [], seed=seed)
    result.from_cache = ex.from_cache
    result.params.update(asdict(o))
    return result


def analyse(models: list[str], texts: list[str], opts: RunOptions | None = None, *, seed: int = 0,
            **overrides: Any) -> Results:
    """:func:`analyse_model` for each model, in order; a failing model is reported, not fatal (``each_model``)."""
    o = RunOptions.build(opts, **overrides)  # a bad option is the caller's error, not a model's
    return each_model(models, lambda m: analyse_model(m, texts, o, seed=seed), ANALYSIS)


def tables(result: ModelResult, mode: Mode) -> dict[str, pd.DataFrame]:
    """``layers`` (the per-layer descriptors) under ``"corrected"``; ``"faithful"`` is an error, as the
    official code has no simplex computation to reproduce."""
    if mode == "faithful":
        raise ValueError("softmax_geometry has no official (faithful) computation: the simplex descriptors are this "
                         "book's own; use mode='corrected'")
    return {"layers": result.layers.copy()}


def model_table(results: list[ModelResult]) -> pd.DataFrame:
    """One row per model: descriptors averaged over layers, and where rows are most concentrated."""
    rows = []
    for r in results:
        d = r.layers
        best = d.loc[cast(int, d["distance_to_vertex"].idxmin())].to_dict()  # layers has a RangeIndex
        rows.append({
            "model": r.ref, "causal": r.record["causal"], "sentences": r.n_sentences,
            "entropy (nats)": d["entropy"].mean(), "normalized entropy": d["normalized_entropy"].mean(),
            "share on position 0": d["first_share"].mean(), "share on strongest key": d["max_share"].mean(),
            "distance to nearest vertex": d["distance_to_vertex"].mean(),
            "relative distance to uniform": d["relative_distance_to_uniform"].mean(),
            "rows with a majority key": d["near_vertex"].mean(),
            "rows with a majority on position 0": d["near_first_vertex"].mean(),
            "most concentrated layer": int(best["layer"]),
            "its distance to vertex": float(best["distance_to_vertex"]),
        })
    return pd.DataFrame(rows)


def head_correlation(r: ModelResult, x: str = "first_share", y: str = "normalized_entropy") -> float:
    """Spearman correlation of two per-head descriptors over all (layer, head) pairs (NaN when
    either is constant, where a rank correlation is undefined)."""
    a = pd.Series(r.heads[x].ravel())
    b = pd.Series(r.heads[y].ravel())
    if a.nunique() < 2 or b.nunique() < 2:
        return float("nan")
    return float(a.corr(b, method="spearman"))


CLAIM_RULE = {"min_concentrated_layers": 0.5, "min_on_first": 0.5}


def claim_evidence(r: ModelResult) -> dict[str, Any]:
    """The geometric reading of §3.2 put to the data with a rule fixed in advance (``CLAIM_RULE``): a model
    supports "attention settles near a vertex, on a reference token" if in at least half of its layers most
    rows hold a majority on one key, and most of those rows hold it on position 0.

    Returns the share of layers with a majority of concentrated rows (``concentrated_layers``), the share of
    concentrated rows on position 0 (``on_first``), whether the first number sits on the rule's threshold
    (``on_threshold``: one layer fewer would fail it) and the ``outcome``: ``"supports"``,
    ``"partly supports"`` (concentrated, mostly not on position 0) or ``"does not support"``.
    """
    d = r.layers
    conc = float((d["near_vertex"] >= 0.5).mean())
    near = d["near_vertex"].mean()
    on_first = d["near_first_vertex"].mean() / near if near > 0 else 0.0
    if conc >= CLAIM_RULE["min_concentrated_layers"] and on_first >= CLAIM_RULE["min_on_first"]:
        outcome = "supports"
    elif conc >= CLAIM_RULE["min_concentrated_layers"]:
        outcome = "partly supports"
    else:
        outcome = "does not support"
    return {"concentrated_layers": conc, "on_first": on_first, "on_threshold": conc < 0.5 + 1.0 / len(d),
            "outcome": outcome}


def on_uniform_attention(result: ModelResult, record: dict[str, Any], seed: int, graph: str = "dense") -> ModelResult:
    """The simplex geometry of ``result``'s shapes under uniform attention: the verdicts' attention null."""
    return simplex_from_summaries(record, null_summaries(result, SimplexSummaryReducer()), seed=seed)

# ---------------------------------------------------------------------- measures the verdicts read
# Each is registered in :data:`sinkframes.verdicts.measures.MEASURES` under the name a claim of
# ``paper.claims`` reads; see that module for the bootstrap and the nulls.

#: a layer is "concentrated" when at least this share of its rows holds a majority on one key
MOST_ROWS = 0.5


@measure("softmax.near_vertex_on_first", "softmax_geometry")
def near_vertex_on_first(r: ModelResult, mode: Mode) -> Estimate | None:
    """min(share of layers where most rows hold a majority on one key, share of those rows on position 0),
    with a bootstrap interval over sentences (the rule of ``analyses.softmax_geometry.claim_evidence``)."""
    if mode == "faithful":
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        nv = np.nanmean(r.samples["near_vertex"], axis=-1)  # [sample, layer]
        nf = np.nanmean(r.samples["near_first_vertex"], axis=-1)  # [sample, layer]
    k = nv.shape[1]

    def stat(m: np.ndarray) -> float:
        near, first = m[:k], m[k:]
        conc = float((near >= MOST_ROWS).mean())
        on_first = float(first.mean() / near.mean()) if near.mean() > 0 else 0.0
        return min(conc, on_first)

    est = boot(np.concatenate([nv, nf], axis=1), stat, seed_of(r))
    m = np.nanmean(np.concatenate([nv, nf], axis=1), 0)
    conc = float((m[:k] >= MOST_ROWS).mean())
    on_first = float(m[k:].mean() / m[:k].mean()) if m[:k].mean() > 0 else 0.0
    return Estimate(est.value, est.low, est.high, est.n, est.interval,
                    f"{conc:.2f} of layers concentrated, {on_first:.2f} of concentrated rows on position 0",
                    est.undetermined)


SPEC = register(Analysis(ANALYSIS, __name__, analyse=analyse, tables=tables, on_uniform_attention=on_uniform_attention))
