"""Topology of attention per model: faithful and corrected persistent homology, head specialization.

One streamed pass per model (``extraction.summarize`` with ``TopologyReducer``) gives, per sentence and
layer, the official notebook's numbers and the corrected Betti curves; this module aggregates them
into the chapter's tables; its measures (at the end) read the claims' quantities from them.
``CLAIM_RULES["bos_min_consistency"]`` says when a head counts as fixed on a token.

Every function takes the ``ModelResult`` of :func:`analyse_model`: its ``samples`` hold the per-sentence
arrays (``faithful`` ``[sample, layer, field]``, ``betti0``/``betti1`` ``[sample, layer, threshold]``, ...),
its ``layers`` one row per layer, its ``data`` the tokens, the Betti-curve thresholds and the official
analysed layers (:func:`analysed_layers`).
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

import numpy as np
import pandas as pd
import torch

from .. import stats
from ..extraction import extract_attention, summarize
from ..metrics import topology as topo
from ..results import Analysis, ModelResult, Results, each_model, register, with_twin
from ..types import Mode, RunOptions
from ..verdicts.measures import BOOT, boot, measure, region_stat, regions_in, seed_of, shape_measure
from ..verdicts.structureless import null_summaries
from ..verdicts.verdict import Estimate

ANALYSIS = "topology"

CLAIM_RULES = {
    "bos_min_consistency": 0.9,  # a head "fixes on" a token if it does so in >= 90 % of sentences
}

#: reducer output -> name in ``ModelResult.samples`` and the dtype it is kept in
_SAMPLES = {
    "n_tokens": ("n_tokens", int),  # [sample]
    "faithful": ("faithful", float),  # [sample, layer, field] (fields: topo.FAITHFUL_FIELDS)
    "faithful_top": ("faithful_top", int),  # [sample, layer, head]
    "corrected_top": ("corrected_top", int),  # [sample, layer, head]
    "betti0_curve": ("betti0", float),  # [sample, layer, threshold]
    "betti1_curve": ("betti1", float),  # [sample, layer, threshold]
    "total_persistence0": ("total_persistence0", float),  # [sample, layer]
    "total_persistence1": ("total_persistence1", float),  # [sample, layer]
    "h1_bars": ("h1_bars", float),  # [sample, layer]
    "h1_max_persistence": ("h1_max_persistence", float),  # [sample, layer]
}


# ----------------------------------------------------------------------------- accessors

def analysed_layers(r: ModelResult) -> list[int]:
    """The official notebook's analysed layers for this depth."""
    return list(r.data["analysed_layers"])


def faithful_field(r: ModelResult, name: str) -> np.ndarray:
    """``[sample, layer]`` values of one faithful field (``topo.FAITHFUL_FIELDS``)."""
    return r.samples["faithful"][..., topo.FAITHFUL_FIELDS.index(name)]


def threshold_index(r: ModelResult, t: float) -> int:
    """Index of the Betti-curve threshold closest to ``t``."""
    return int(np.argmin(np.abs(r.data["thresholds"] - t)))


def n_heads(r: ModelResult) -> int:
    """Attention heads per layer."""
    return int(r.samples["faithful_top"].shape[2])


# ----------------------------------------------------------------------------- sentences

SELECTIONS = ("balanced", "official")


def official_selection(data: pd.DataFrame, n: int, seed: int = 0) -> pd.DataFrame:
    """The official notebook's sentence choice, with its random part seeded.

    For each ``focus_word`` (most frequent first, at most ``n``) the row with the shortest text
    (stable order on ties); then, if fewer than ``n``, ``(n - k) // 2`` rows drawn from the shortest
    third of the set by text length and as many from the middle third (the longest third is never
    used), topped up from the whole set; duplicates are possible, as in the official code; first ``n`` kept.
    """
    if "focus_word" not in data.columns:
        raise ValueError("selection='official' needs a 'focus_word' column (the paper's CSV has one; "
                         "the embedded set does not: use selection='balanced')")
    if n < 1:
        raise ValueError(f"n must be at least 1 (got {n})")
    rng = np.random.default_rng(seed)
    length = data["text"].astype(str).str.len()
    words = data["focus_word"].value_counts().index[:n]
    picked = [data.index[data["focus_word"] == w][np.argsort(length[data["focus_word"] == w].to_numpy(),
                                                             kind="stable")[0]]
              for w in words]
    rest = n - len(picked)
    if rest > 0:
        order = data.index[np.argsort(length.to_numpy(), kind="stable")]
        third = len(order) // 3
        for part in (order[:third], order[third: 2 * third]):
            take = min(rest // 2, len(part))
            picked += list(rng.choice(part, size=take, replace=False))
        short = n - len(picked)
        if short > 0:
            picked += list(rng.choice(data.index, size=min(short, len(data)), replace=False))
    return data.loc[picked[:n]].reset_index(drop=True)


def sentences(n: int, seed: int = 0, dataset: str = "embedded", csv_path: str | None = None,
              selection: str = "balanced") -> pd.DataFrame:
    """The chapter's sentences: the book's seeded field-balanced draw, or the official notebook's choice."""
    from .. import corpus

    if selection not in SELECTIONS:
        raise ValueError(f"selection must be one of {SELECTIONS}, got {selection!r}")
    if selection == "balanced":
        return corpus.sample_sentences(n, seed=seed, dataset=dataset, csv_path=csv_path)
    return official_selection(corpus.load_dataset(dataset, csv_path), n, seed=seed)


# ----------------------------------------------------------------------------- analysis

def from_summaries(record: dict[str, Any], tokens: list[list[str]], summaries: list[dict[str, torch.Tensor]],
                   max_tokens: int = topo.FAITHFUL_MAX_TOKENS) -> ModelResult:
    """Stack the reducer outputs of every sentence into a ``ModelResult`` (``layers``: :func:`layer_summary`)."""
    if not summaries:
        raise ValueError("no sentences to aggregate")
    samples: dict[str, np.ndarray] = {name: torch.stack([s[key] for s in summaries]).numpy().astype(kind)
               for key, (name, kind) in _SAMPLES.items() if key in summaries[0]}
    n_layers = samples["faithful"].shape[1]
    if int(record["n_layers"]) != n_layers:
        raise ValueError(f"record says {record['n_layers']} layers, the summaries have {n_layers}")
    r = ModelResult(analysis=ANALYSIS, record=record, n_sentences=len(summaries), samples=samples,
                    data={"tokens": tokens, "thresholds": topo.CURVE_THRESHOLDS, "max_tokens": max_tokens,
                          "analysed_layers": topo.faithful_layers(n_layers)},
                    params={"max_tokens": max_tokens})
    r.layers = layer_summary(r)
    return r


def analyse_model(ref: str, texts: list[str], opts: RunOptions | None = None, *,
                  max_tokens: int = topo.FAITHFUL_MAX_TOKENS, twin: bool = False, **overrides: Any) -> ModelResult:
    """Faithful and corrected topology of ``ref`` on ``texts`` (streamed, cached).

    ``max_tokens``: the official truncation to ``max_tokens`` tokens for the faithful numbers. For a
    decoder it is a cut of the attention (a causal prefix does not see later tokens); an encoder's
    attention depends on every token, so its faithful numbers come from a second forward pass on
    the texts as the tokenizer truncates them (keeping its end token), as the official notebook does.
    ``opts``/``overrides`` are run options (``batch_size=``, ``dtype=``, ...), recorded in ``params``.
    ``twin``: also run the model's random-initialized twin (:func:`~sinkframes.results.with_twin`),
    the null of the depth and shape claims.
    """
    o = RunOptions.build(opts, **overrides)
    ex = summarize(ref, texts, topo.TopologyReducer(max_tokens=max_tokens), o)
    r = from_summaries(ex.record, ex.tokens, ex.summaries or [], max_tokens=max_tokens)
    r.from_cache = ex.from_cache
    if not r.causal:
        cut_opts = o.with_(max_length=min(o.max_length, max_tokens), truncation=True)
        cut = summarize(ref, texts, topo.TopologyReducer(max_tokens=max_tokens), cut_opts)
        r = with_faithful_from(r, from_summaries(cut.record, cut.tokens, cut.summaries or [], max_tokens=max_tokens))
        r.from_cache = ex.from_cache and cut.from_cache
    r.params.update(asdict(o))
    return with_twin(r, lambda t: analyse_model(t, texts, o, max_tokens=max_tokens)) if twin else r


def with_faithful_from(r: ModelResult, cut: ModelResult) -> ModelResult:
    """``r`` with its faithful fields (and the tokens they name) taken from ``cut``, the same texts
    tokenized with the official truncation."""
    r.samples["faithful"] = cut.samples["faithful"]  # [sample, layer, field]
    r.samples["faithful_top"] = cut.samples["faithful_top"]  # [sample, layer, head]
    r.data["faithful_tokens"] = cut.data["tokens"]
    r.data["faithful_truncation"] = f"tokenizer truncation to {r.data['max_tokens']} tokens (a second forward pass)"
    r.layers = layer_summary(r)
    return r


def analyse(models: list[str], texts: list[str], opts: RunOptions | None = None, *,
            max_tokens: int = topo.FAITHFUL_MAX_TOKENS, twin: bool = True, **overrides: Any) -> Results:
    """:func:`analyse_model` for each model (with its random-initialized twin unless ``twin`` is false), in
    order; a failing model is reported, not fatal (``each_model``)."""
    o = RunOptions.build(opts, **overrides)
    return each_model(models, lambda m: analyse_model(m, texts, o, max_tokens=max_tokens, twin=twin), ANALYSIS)


# ----------------------------------------------------------------------------- tables

def _mean_std(x: np.ndarray) -> str:
    x = x[~np.isnan(x)]
    return f"{x.mean():.2f} ± {x.std():.2f}" if x.size else "N/A"


def _mean_count(x: np.ndarray) -> str:
    x = x[~np.isnan(x)]
    return f"{x.mean():.4f} [{x.size}]" if x.size else "N/A [0]"


def layer_summary(r: ModelResult) -> pd.DataFrame:
    """One row per layer (every layer): whether the official code analyses it, the faithful fields'
    means over sentences (NaN-ignoring: ``faithful <field>``) and the corrected columns of :func:`corrected_table`."""
    analysed = set(analysed_layers(r))
    faithful = pd.DataFrame([{"layer": layer, "analysed": layer in analysed,
                              **{f"faithful {name}": stats.nanmean(faithful_field(r, name)[:, layer])
                                 for name in topo.FAITHFUL_FIELDS}}
                             for layer in range(r.n_layers)])
    return faithful.merge(corrected_table(r).drop(columns="model"), on="layer")


def faithful_table(r: ModelResult) -> pd.DataFrame:
    """The official report's per-layer table at the analysed layers (mean ± population std over sentences;
    [n] = sentences with a finite bar)."""
    rows = []
    for layer in analysed_layers(r):
        f = {name: faithful_field(r, name)[:, layer] for name in topo.FAITHFUL_FIELDS}
        dim0_max = (round(float(np.nanmean(f["dim0_max"])), 4) if np.isfinite(f["dim0_max"]).any()
                    else float("nan"))
        rows.append({
            "model": r.ref, "layer": layer, "Betti0": _mean_std(f["betti0"]), "Betti1": _mean_std(f["betti1"]),
            "attn mean": round(float(f["attention_mean"].mean()), 4),
            "attn max": round(float(f["attention_max"].mean()), 4),
            "attn std": round(float(f["attention_std"].mean()), 4),
            "dim0 avg pers [n]": _mean_count(f["dim0_avg"]), "dim0 max pers": dim0_max,
            "dim1 avg pers [n]": _mean_count(f["dim1_avg"]),
        })
    return pd.DataFrame(rows)


def corrected_table(r: ModelResult, thresholds: tuple[float, ...] = topo.PAPER_THRESHOLDS,
                    layers: list[int] | None = None) -> pd.DataFrame:
    """Per layer (default: every layer): corrected Betti numbers at the paper's thresholds, total
    persistence and H1 bar count (means over sentences)."""
    s = r.samples
    rows = []
    for layer in range(r.n_layers) if layers is None else layers:
        row: dict[str, Any] = {"model": r.ref, "layer": layer}
        for t in thresholds:
            k = threshold_index(r, t)
            row[f"β0@{t:g}"] = s["betti0"][:, layer, k].mean()
            row[f"β1@{t:g}"] = s["betti1"][:, layer, k].mean()
        row["total pers. H0"] = s["total_persistence0"][:, layer].mean()
        row["total pers. H1"] = s["total_persistence1"][:, layer].mean()
        row["H1 bars"] = s["h1_bars"][:, layer].mean()
        rows.append(row)
    return pd.DataFrame(rows)


def tables(r: ModelResult, mode: Mode) -> dict[str, pd.DataFrame]:
    """``layers`` at the official analysed layers: the official report's table (``"faithful"``) or the
    corrected Betti numbers and persistence (``"corrected"``); ``"faithful"`` adds the official Welch
    tests between those layers (``tests``)."""
    if mode == "faithful":
        return {"layers": faithful_table(r), "tests": faithful_layer_tests(r)}
    return {"layers": corrected_table(r, layers=analysed_layers(r))}


def layer_tables(results: list[ModelResult], mode: Mode) -> pd.DataFrame:
    """The ``layers`` table of every model under ``mode``, one table."""
    return pd.concat([r.tables(mode)["layers"] for r in results], ignore_index=True)


def degeneracy_table(results: list[ModelResult]) -> pd.DataFrame:
    """Per model: what the faithful numbers reduce to. On causal models Betti0 is the capped token count
    (the same at every layer), Betti1 is 0 and the H0 persistence equals the self-attention."""
    rows = []
    for r in results:
        s = r.samples
        b0, b1 = faithful_field(r, "betti0"), faithful_field(r, "betti1")  # [sample, layer]
        n_tok = s["n_tokens"]  # [sample]
        cap = np.minimum(np.minimum(n_tok, r.data["max_tokens"] if r.causal else n_tok), topo.FAITHFUL_MAX_POINTS)
        pers, selfatt = faithful_field(r, "dim0_avg"), faithful_field(r, "self_attention")
        both = np.isfinite(pers) & np.isfinite(selfatt)
        rows.append({
            "model": r.ref, "causal": r.record["causal"], "sentences": len(n_tok),
            "faithful Betti0 (mean)": b0.mean(), "min(tokens, 30) (mean)": cap.mean(),
            "sentences with the same Betti0 at every layer": float((b0 == b0[:, :1]).all(1).mean()),
            "Betti0 = min(tokens, 30)": float((b0 == cap[:, None]).mean()),
            "faithful Betti1 (max)": b1.max(),
            "max |dim0 persistence - self-attention|": (float(np.abs(pers - selfatt)[both].max()) if both.any()
                                                        else float("nan")),
            "corrected β1 > 0 (share of sentence-layers, any threshold)": float((s["betti1"].max(-1) > 0).mean()),
        })
    return pd.DataFrame(rows)


def faithful_layer_tests(r: ModelResult) -> pd.DataFrame:
    """The official significance report: Welch's t-test for every pair of analysed layers.

    Reproduced as the code does it (paired sentences tested as independent samples, no correction,
    ``p < 0.05``); constant data give ``p = nan``. On decoders Betti0 and mean attention are identical
    across layers (``p = 1``) and Betti1 and max attention are constant (``p = nan``).
    """
    from scipy.stats import ttest_ind

    metrics = {"betti0": "Betti0", "betti1": "Betti1", "attention_mean": "mean attention",
               "attention_max": "max attention", "dim0_avg": "dim0 persistence"}
    rows = []
    layers = analysed_layers(r)
    for a_i, i in enumerate(layers):
        for j in layers[a_i + 1:]:
            for name, label in metrics.items():
                x, y = faithful_field(r, name)[:, i], faithful_field(r, name)[:, j]
                x, y = x[np.isfinite(x)], y[np.isfinite(y)]
                with np.errstate(all="ignore"), warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)  # scipy's note on near-constant data
                    p = (float(ttest_ind(x, y, equal_var=False).pvalue) if len(x) > 1 and len(y) > 1
                         else float("nan"))
                rows.append({"model": r.ref, "comparison": f"layer_{i}_vs_{j}", "metric": label,
                             "mean_i": x.mean() if len(x) else np.nan, "mean_j": y.mean() if len(y) else np.nan,
                             "p": p, "significant": bool(p < 0.05)})
    return pd.DataFrame(rows)


def faithful_tests_summary(results: list[ModelResult]) -> pd.DataFrame:
    """Per model and metric: how many layer pairs the official Welch tests call significant, and the p range."""
    rows = []
    for r in results:
        t = faithful_layer_tests(r)
        for metric, g in t.groupby("metric", sort=False):
            p = g["p"].to_numpy()
            rows.append({"model": r.ref, "metric": metric, "pairs": len(g),
                         "significant (p < 0.05)": int(g["significant"].sum()),
                         "p = nan (constant)": int(np.isnan(p).sum()),
                         "smallest p": np.nanmin(p) if np.isfinite(p).any() else np.nan,
                         "largest p": np.nanmax(p) if np.isfinite(p).any() else np.nan})
    return pd.DataFrame(rows)


def _consistency(labels: list[str]) -> tuple[str, float]:
    c = Counter(labels)
    top, count = c.most_common(1)[0]
    return top, count / len(labels)


def head_specialization(r: ModelResult, layers: list[int] | None = None) -> pd.DataFrame:
    """Per head: the token it fixes on and in what share of sentences (consistency).

    ``faithful``: token string at the argmax of the plain column mean (official rule).
    ``by position`` / ``by string``: argmax of the received share (corrected), as a position
    (first / last / index) and as a token string. Default layers: the official analysed ones.
    """
    layers = analysed_layers(r) if layers is None else layers
    tokens = r.data["tokens"]
    f_tokens = r.data.get("faithful_tokens", tokens)  # encoders: the officially truncated texts
    n_tok, f_top, c_top = r.samples["n_tokens"], r.samples["faithful_top"], r.samples["corrected_top"]
    S = len(tokens)
    rows = []
    for layer in layers:
        for h in range(f_top.shape[2]):
            f_lab = [f_tokens[s][f_top[s, layer, h]] for s in range(S)]
            p_lab = [topo.position_label(int(c_top[s, layer, h]), int(n_tok[s])) for s in range(S)]
            c_lab = [tokens[s][c_top[s, layer, h]] for s in range(S)]
            ft, fc = _consistency(f_lab)
            pt, pc = _consistency(p_lab)
            ct, cc = _consistency(c_lab)
            rows.append({"model": r.ref, "layer": layer, "head": h, "faithful token": ft, "faithful consistency": fc,
                         "position": pt, "position consistency": pc, "token": ct, "token consistency": cc})
    return pd.DataFrame(rows)


def specialization_summary(results: list[ModelResult]) -> pd.DataFrame:
    """Per model, over the official analysed layers: how many heads are 'specialized' by each reading."""
    rows = []
    for r in results:
        t = head_specialization(r)
        enough = len(r.data["tokens"]) >= topo.SPECIALIZED_MIN_SAMPLES
        rows.append({
            "model": r.ref, "layers": str(analysed_layers(r)), "heads": len(t),
            "faithful: consistency >= 0.3": int(enough and (t["faithful consistency"]
                                                            >= topo.SPECIALIZED_MIN_CONSISTENCY).sum()),
            "faithful: >= 0.5": int((t["faithful consistency"] >= topo.FIGURE_MIN_CONSISTENCY).sum()),
            "faithful: 100 %": int((t["faithful consistency"] >= 1.0).sum()),
            "faithful: most common token": Counter(t["faithful token"]).most_common(1)[0][0],
            "by position: >= 0.5": int((t["position consistency"] >= 0.5).sum()),
            "by position: most common": Counter(t["position"]).most_common(1)[0][0],
            "by string (corrected): >= 0.5": int((t["token consistency"] >= 0.5).sum()),
        })
    return pd.DataFrame(rows)


def head_table_compact(r: ModelResult) -> pd.DataFrame:
    """Layer x head grid: ``position (consistency) | string (consistency)`` of the corrected score."""
    t = head_specialization(r)
    t["cell"] = [f"{p} {pc:.0%} | {k} {kc:.0%}" for p, pc, k, kc in
                 zip(t["position"], t["position consistency"], t["token"], t["token consistency"], strict=True)]
    grid = t.pivot(index="layer", columns="head", values="cell")
    grid.columns = [f"head {h}" for h in grid.columns]
    return grid


def _finite_mean(x: np.ndarray) -> float:
    return np.nanmean(x) if np.isfinite(x).any() else np.nan


def results_sample_comparison(results: list[ModelResult]) -> pd.DataFrame:
    """The official Results_sample/ runs beside this book's faithful numbers, row for row at the analysed layers."""
    from .. import paper

    ref = paper.results_sample_topology()
    ref = ref.assign(source="official Results_sample", depth=ref["layer"] / (ref["layers"] - 1))
    rows = []
    for r in results:
        spec = head_specialization(r)

        def f(name: str, layer: int, r: ModelResult = r) -> np.ndarray:
            return faithful_field(r, name)[:, layer]  # [sample]

        for layer in analysed_layers(r):
            sl = spec[spec["layer"] == layer]
            rows.append({
                "source": "this book (faithful)", "model": r.ref, "layers": r.n_layers, "heads": n_heads(r),
                "layer": layer, "depth": layer / max(1, r.n_layers - 1),
                "betti0": f("betti0", layer).mean(), "betti0_std": f("betti0", layer).std(),
                "betti1": f("betti1", layer).mean(), "betti1_std": f("betti1", layer).std(),
                "attn_mean": f("attention_mean", layer).mean(), "attn_max": f("attention_max", layer).mean(),
                "attn_std": f("attention_std", layer).mean(),
                "dim0_avg": _finite_mean(f("dim0_avg", layer)), "dim0_n": int(np.isfinite(f("dim0_avg", layer)).sum()),
                "dim1_avg": _finite_mean(f("dim1_avg", layer)), "dim1_n": int(np.isfinite(f("dim1_avg", layer)).sum()),
                "heads_cons_0.3": int((sl["faithful consistency"] >= topo.SPECIALIZED_MIN_CONSISTENCY).sum()),
                "heads_cons_0.5": int((sl["faithful consistency"] >= topo.FIGURE_MIN_CONSISTENCY).sum()),
                "top_token": Counter(sl["faithful token"]).most_common(1)[0][0],
            })
    cols = ["source", "model", "layers", "heads", "layer", "depth", "betti0", "betti0_std", "betti1", "betti1_std",
            "attn_mean", "attn_max", "attn_std", "dim0_avg", "dim0_n", "dim1_avg", "dim1_n", "heads_cons_0.3",
            "heads_cons_0.5", "top_token"]
    return pd.concat([ref[cols], pd.DataFrame(rows, columns=cols)], ignore_index=True)


def mean_curves(r: ModelResult) -> tuple[np.ndarray, np.ndarray]:
    """Mean Betti curves over sentences: ``([layer, threshold], [layer, threshold])``."""
    return r.samples["betti0"].mean(0), r.samples["betti1"].mean(0)


def example_diagrams(ref: str, text: str, opts: RunOptions | None = None, **overrides: Any) -> dict[str, Any]:
    """Faithful and corrected diagrams of one sentence at the official layers (for the diagram figure)."""
    ex = extract_attention(ref, [text], opts, **overrides)
    if not ex.attentions:
        raise ValueError(f"no attention weights extracted for {ref}")
    att = ex.attentions[0]  # [layer, head, query, key]
    causal = bool(ex.record["causal"])
    layers = topo.faithful_layers(att.shape[0])
    out: dict[str, Any] = {"ref": ref, "tokens": ex.tokens[0], "layers": layers, "faithful": {}, "corrected": {}}
    for layer in layers:
        avg = att[layer].mean(0)  # [query, key]
        fa = avg[: topo.FAITHFUL_MAX_TOKENS, : topo.FAITHFUL_MAX_TOKENS] if causal else avg
        out["faithful"][layer] = topo.faithful_diagrams(topo.faithful_distance(fa))
        c = topo.corrected_layer(avg, causal)
        out["corrected"][layer] = (c.h0, c.h1)
    return out


def on_uniform_attention(result: ModelResult, record: dict[str, Any], seed: int, graph: str = "dense") -> ModelResult:
    """The topology of ``result``'s shapes under uniform attention (an encoder's faithful numbers on its truncated
    texts' lengths, as the model's): the verdicts' attention null (``graph`` and ``seed`` unused)."""
    max_tokens = int(result.params.get("max_tokens", result.data.get("max_tokens", 30)))
    summaries = null_summaries(result, topo.TopologyReducer(max_tokens=max_tokens))
    r = from_summaries(record, result.data["tokens"], summaries, max_tokens=max_tokens)
    if "faithful_tokens" in result.data:  # an encoder's faithful numbers come from truncated texts
        cut_tokens = result.data["faithful_tokens"]
        shadow = ModelResult(result.analysis, result.record, len(cut_tokens), data={"tokens": cut_tokens})
        cut = null_summaries(shadow, topo.TopologyReducer(max_tokens=max_tokens))
        r = with_faithful_from(r, from_summaries(record, cut_tokens, cut, max_tokens=max_tokens))
    return r

# ---------------------------------------------------------------------- measures the verdicts read
# Each is registered in :data:`sinkframes.verdicts.measures.MEASURES` under the name a claim of
# ``paper.claims`` reads; see that module for the bootstrap and the nulls.

def _topo_layers(r: ModelResult, mode: Mode, name: str) -> tuple[np.ndarray, list[int]]:
    """``([sample, layer], layers)``: a faithful field on the official layers or a corrected curve
    averaged over the paper's thresholds on every layer."""
    from ..metrics import topology as topo

    if mode == "faithful":
        layers = analysed_layers(r)
        return faithful_field(r, name)[:, layers], layers  # [sample, analysed layer]
    if name in ("betti0", "betti1"):
        ks = [int(np.argmin(np.abs(topo.CURVE_THRESHOLDS - t))) for t in topo.PAPER_THRESHOLDS]
        return r.samples[name][:, :, ks].mean(2), list(range(r.n_layers))
    return r.samples[name], list(range(r.n_layers))


_TOPO_NAMES = {"persistence": ("dim0_avg", "total_persistence0"), "betti1": ("betti1", "betti1"),
               "betti0": ("betti0", "betti0"), "h1": ("betti1", "h1_bars")}


def _topo(r: ModelResult, mode: Mode, what: str) -> tuple[np.ndarray, list[int]]:
    faithful, corrected = _TOPO_NAMES[what]
    return _topo_layers(r, mode, faithful if mode == "faithful" else corrected)


@measure("topology.betti1_max", "topology")
def betti1_max(r: ModelResult, mode: Mode) -> Estimate | None:
    x, _ = _topo(r, mode, "betti1")
    return boot(x, lambda m: float(np.nanmax(m)), seed_of(r))


@measure("topology.betti0_range", "topology")
def betti0_range(r: ModelResult, mode: Mode) -> Estimate | None:
    x, _ = _topo(r, mode, "betti0")
    return boot(x, lambda m: float(np.nanmax(m) - np.nanmin(m)), seed_of(r))


def _late_minus_early(what: str) -> Callable[[ModelResult, Mode], tuple[np.ndarray, Callable[[np.ndarray], float]]]:
    def shape(r: ModelResult, mode: Mode) -> tuple[np.ndarray, Callable[[np.ndarray], float]]:
        x, layers = _topo(r, mode, what)
        return x, region_stat(layers, r.n_layers, lambda g: g["late"] - g["early"])

    return shape


shape_measure("topology.persistence_late_minus_early", "topology")(_late_minus_early("persistence"))
shape_measure("topology.betti1_late_minus_early", "topology")(_late_minus_early("h1"))


@measure("topology.betti1_early", "topology")
def betti1_early(r: ModelResult, mode: Mode) -> Estimate | None:
    """Mean H1 count of the early third of the layers."""
    x, layers = _topo(r, mode, "h1")
    early = regions_in(layers, r.n_layers)["early"]
    if not early:
        return None
    return boot(x[:, early], lambda m: float(np.nanmean(m)), seed_of(r))


def _head_shares(r: ModelResult, mode: Mode) -> tuple[float, float, int]:
    """Shares of heads (official analysed layers) fixed on the first and on the last token."""

    spec = head_specialization(r)
    if mode == "faithful":  # the official rule: the same token string at the argmax in every sentence
        full = spec["faithful consistency"] >= 1.0
        toks = r.data.get("faithful_tokens", r.data["tokens"])  # encoders: the officially truncated texts
        first_tok = {t[0] for t in toks if t}
        last_tok = {t[-1] for t in toks if t}
        first = float((full & spec["faithful token"].isin(first_tok)).mean())
        last = float((full & spec["faithful token"].isin(last_tok)).mean())
    else:
        strong = spec["position consistency"] >= CLAIM_RULES["bos_min_consistency"]
        first = float((strong & (spec["position"] == "first")).mean())
        last = float((strong & (spec["position"] == "last")).mean())
    return first, last, len(spec)


def _position_hits(r: ModelResult, layers: list[int], where: str) -> np.ndarray:
    """``[sample, head]`` 1 where a head's most-received key (corrected) is the first (``where="first"``)
    or the last token of the sentence, over the heads of ``layers``."""
    top = r.samples["corrected_top"][:, layers]  # [sample, layer, head]
    n = np.asarray(r.samples["n_tokens"]).astype(int).reshape(-1, 1, 1)
    hit = top == 0 if where == "first" else top == n - 1
    return hit.reshape(top.shape[0], -1).astype(float)


def _fixed_share(min_consistency: float) -> Callable[[np.ndarray], float]:
    return lambda m: float(np.mean(m >= min_consistency - 1e-12))


@measure("topology.first_token_heads", "topology")
def first_token_heads(r: ModelResult, mode: Mode) -> Estimate | None:
    """Share of heads (official analysed layers) fixed on the first token; corrected: in at least 90 % of
    sentences, with a bootstrap interval over sentences (the official rule has none)."""
    if mode == "faithful":
        first, _, n = _head_shares(r, mode)
        return Estimate(first, n=n, interval="none (share of heads, official rule)",
                        detail=f"{n} heads of the official layers")

    x = _position_hits(r, analysed_layers(r), "first")
    est = boot(x, _fixed_share(CLAIM_RULES["bos_min_consistency"]), seed_of(r))
    return Estimate(est.value, est.low, est.high, est.n, est.interval, f"{x.shape[1]} heads of the official layers",
                    est.undetermined)


@measure("topology.end_anchor_regions", "topology")
def end_anchor_regions(r: ModelResult, mode: Mode) -> Estimate | None:
    """App. H's bipolar pattern as printed: the share of early-layer heads fixed on the first token and the
    share of middle- and late-layer heads fixed on the last token, each a part with its interval
    (corrected; the official rule keeps no per-sentence positions)."""
    if mode == "faithful":
        return None

    reg = stats.layer_regions(r.n_layers)
    stat = _fixed_share(CLAIM_RULES["bos_min_consistency"])
    parts: list[list[Any]] = []
    for k, (label, layers, where) in enumerate((("early: first token", reg["early"], "first"),
                                                ("middle and late: last token", reg["middle"] + reg["late"], "last"))):
        if not layers:
            continue
        e = boot(_position_hits(r, layers, where), stat, seed_of(r) + k)
        parts.append([label, e.value, e.low, e.high])
    if not parts:
        return None
    return Estimate(min(float(p[1]) for p in parts), min(float(p[2]) for p in parts),
                    max(float(p[3]) for p in parts), r.n_sentences, BOOT + "; one interval per part",
                    "the smaller share is the value", parts=parts)


@measure("topology.the_heads", "topology")
def the_heads(r: ModelResult, mode: Mode) -> Estimate | None:
    """Share of heads (official layers) whose official specialized token is the word "the" (any case,
    with or without a leading space marker), as App. J counts it; the official rule has no interval."""

    spec = head_specialization(r)
    col = "faithful token" if mode == "faithful" else "token"
    words = spec[col].astype(str).str.replace("\u0120", "", regex=False).str.replace("\u2581", "", regex=False)
    share = float((words.str.strip().str.lower() == "the").mean())
    return Estimate(share, n=len(spec), interval="none (share of heads)", detail=f"{len(spec)} heads")


@measure("topology.word_over_first_heads", "topology")
def word_over_first_heads(r: ModelResult, mode: Mode) -> Estimate | None:
    """App. F's "specialization on common linguistic elements *rather than* BOS": the share of heads specialized on
    the most common word minus the share fixed on the first token (positive: the word wins). The first token's share
    carries its interval over sentences (corrected rule); the word's is a count of heads, so the difference's
    interval is the first token's, mirrored."""
    word = common_word_heads(r, mode)
    first = first_token_heads(r, mode)
    if word is None or first is None:
        return None
    w = float(word.value)
    lo, hi = first.bounds()
    return Estimate(w - float(first.value), w - hi, w - lo, first.n, first.interval,
                    f"common word {w:.3f} of heads against the first token's {float(first.value):.3f}; {word.detail}",
                    first.undetermined)


@measure("topology.common_word_heads", "topology")
def common_word_heads(r: ModelResult, mode: Mode) -> Estimate | None:
    """Share of heads (official layers) whose specialized token is the most common one among the heads that do
    not fix on a position-0 token (the sentences' first tokens, BOS included): App. F's "specialization on common
    linguistic elements rather than BOS". The token is read by the official rule (faithful) or the corrected one;
    a share of heads, so no interval."""

    spec = head_specialization(r)
    col = "faithful token" if mode == "faithful" else "token"
    toks = r.data.get("faithful_tokens", r.data["tokens"]) if mode == "faithful" else r.data["tokens"]
    first = {t[0] for t in toks if t}
    words = spec.loc[~spec[col].isin(first), col]
    if words.empty:
        return Estimate(0.0, n=len(spec), interval="none (share of heads)",
                        detail=f"every one of {len(spec)} heads fixes on a first token")
    word, count = words.value_counts().index[0], int(words.value_counts().iloc[0])
    return Estimate(count / len(spec), n=len(spec), interval="none (share of heads)",
                    detail=f"{count} of {len(spec)} heads on {word!r}")


@measure("topology.specialized_heads", "topology")
def specialized_heads(r: ModelResult, mode: Mode) -> Estimate | None:
    """How many heads (official analysed layers) are "specialized" by the official report's rule: the same
    token at the head's argmax in at least 30 % of at least 5 sentences (App. J counts them per size). The
    token is read by the official argmax (faithful) or the corrected one; a count of heads, so no interval."""
    from ..metrics import topology as topo

    spec = head_specialization(r)
    col = "faithful consistency" if mode == "faithful" else "token consistency"
    enough = r.n_sentences >= topo.SPECIALIZED_MIN_SAMPLES
    count = int(enough and (spec[col] >= topo.SPECIALIZED_MIN_CONSISTENCY).sum())
    return Estimate(float(count), n=len(spec), interval="none (a count of heads)",
                    detail=f"of {len(spec)} heads of the official layers")


SPEC = register(Analysis(ANALYSIS, __name__, analyse=analyse, tables=tables, on_uniform_attention=on_uniform_attention,
                          family_order=1))
