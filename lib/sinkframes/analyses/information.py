"""Information geometry (paper sections 5.1-5.3, appendices C, E-J): one call per model.

For each model: the streamed KL-change / sink-mass summary of every sentence (faithful and
corrected, every sink rule), the output-level attention edit on a subset of the sentences, and
empirical Fisher norms (faithful and corrected) on a smaller subset (backward passes are the
cost). Everything passes through the on-disk cache.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .. import extract, interventions
from ..metrics import fisher as fisher_mod
from ..metrics import information as inf

DEFAULT_RULE = "p90"


@dataclass
class ModelInformation:
    """Information-geometry evidence of one model on one sentence set."""

    record: dict[str, Any]
    n_sentences: int
    summaries: list[dict[str, Any]]
    output: interventions.OutputCheck | None = None
    fisher: dict[str, fisher_mod.FisherResult] = field(default_factory=dict)
    seed: int = 0
    _tables: dict[tuple[str, str], pd.DataFrame] = field(default_factory=dict, repr=False)

    @property
    def ref(self) -> str:
        return self.record["ref"]

    def layers(self, mode: str, rule: str = DEFAULT_RULE) -> pd.DataFrame:
        if (mode, rule) not in self._tables:
            self._tables[(mode, rule)] = inf.layer_table(self.summaries, mode, rule, seed=self.seed)
        return self._tables[(mode, rule)]

    def regions(self, rule: str = DEFAULT_RULE) -> pd.DataFrame:
        return inf.region_table(self.summaries, rule, seed=self.seed)


def analyse(models: list[str], texts: list[str], *, n_output: int = 50, n_fisher: int = 16, seed: int = 0,
            batch_size: int = 16, max_length: int = 256, dtype: str = "float32", device: str = "auto",
            progress: bool = True) -> list[ModelInformation]:
    """Run every suite of the chapter for each model (cached)."""
    if n_output < 0 or n_fisher < 0:
        raise ValueError("n_output and n_fisher must be >= 0")
    out = []
    for ref in models:
        ex = extract.summarize(ref, texts, inf.InformationReducer(), batch_size=batch_size, max_length=max_length,
                               dtype=dtype, device=device, progress=progress)
        res = ModelInformation(ex.record, len(texts), ex.summaries, seed=seed)
        if n_output:
            res.output = interventions.cached_output_check(ref, texts[:n_output], seed=seed, max_length=max_length,
                                                           dtype=dtype, progress=progress)
        if n_fisher:
            res.fisher = {m: fisher_mod.cached_fisher(ref, texts[:n_fisher], m, seed=seed, dtype=dtype, progress=progress)
                          for m in fisher_mod.MODES}
        out.append(res)
    return out


def kl_profiles(results: list[ModelInformation], rule: str = DEFAULT_RULE) -> pd.DataFrame:
    """Long table for plotting: model, mode, layer, relative depth, KL reduction, interval, sink mass."""
    frames = []
    for r in results:
        for mode in inf.MODES:
            d = r.layers(mode, rule).copy()
            d["model"], d["mode"] = r.ref, mode
            d["depth"] = d["layer"] / max(1, r.record["n_layers"] - 1)
            if mode == "faithful":
                d["ci_low"] = d["kl_reduction"] - d["kl_reduction_std"]
                d["ci_high"] = d["kl_reduction"] + d["kl_reduction_std"]
            frames.append(d)
    return pd.concat(frames, ignore_index=True)


def summary_table(results: list[ModelInformation], rule: str = DEFAULT_RULE) -> pd.DataFrame:
    """One row per model and mode: KL reduction by region, layers with negative / positive
    reduction, sink mass range, and (corrected) layers significant after Holm correction."""
    rows = []
    for r in results:
        for mode in inf.MODES:
            d = r.layers(mode, rule)
            row: dict[str, Any] = {"model": r.ref, "family": r.record["family"], "mode": mode, "layers": len(d)}
            for region in ("early", "middle", "late"):
                sub = d[d["region"] == region]
                row[f"kl_{region}"] = float(sub["kl_reduction"].mean()) if len(sub) else np.nan
            if mode == "corrected":
                sig = d["p_holm"] < 0.05
                row["negative_layers"] = int(((d["ci_high"] < 0) & sig).sum())
                row["positive_layers"] = int(((d["ci_low"] > 0) & sig).sum())
            else:
                row["negative_layers"] = int((d["kl_reduction"] < 0).sum())
                row["positive_layers"] = int((d["kl_reduction"] > 0).sum())
            row["sink_mass_min"] = float(d["sink_mass"].min())
            row["sink_mass_max"] = float(d["sink_mass"].max())
            row["sink_mass_max_layer"] = int(d.loc[d["sink_mass"].idxmax(), "layer"])
            rows.append(row)
    return pd.DataFrame(rows)


def rule_table(results: list[ModelInformation]) -> pd.DataFrame:
    """Corrected mean KL reduction and sink mass per model and sink rule, with the mean number
    of sinks and how often position 0 is one of them."""
    rows = []
    for r in results:
        for rule in inf.rules():
            d = r.layers("corrected", rule)
            rows.append({"model": r.ref, "rule": rule, "n_sinks": d["n_sinks"].mean(),
                         "position0_is_sink": d["sinks_include_first"].mean(),
                         "kl_reduction": d["kl_reduction"].mean(), "sink_mass": d["sink_mass"].mean()})
    return pd.DataFrame(rows)


def fisher_table(results: list[ModelInformation]) -> pd.DataFrame:
    """One row per model and mode: early-third share (with interval), attention and MLP shares,
    peak layer and the loss used."""
    rows = []
    for r in results:
        for mode, fr in r.fisher.items():
            share, lo, hi = fr.early_share(seed=r.seed)
            g = fr.groups().set_index("group")["share"]
            by = fr.by_layer()
            rows.append({"model": r.ref, "mode": mode, "sentences": int(fr.values["sentence"].nunique()),
                         "early_share": share, "early_low": lo, "early_high": hi,
                         "attention_share": float(g.get("attention", 0.0)), "mlp_share": float(g.get("mlp", 0.0)),
                         "peak_layer": int(by.loc[by["fisher"].idxmax(), "layer"]),
                         "peak_region": by.loc[by["fisher"].idxmax(), "region"], "objective": fr.objective})
    return pd.DataFrame(rows)


def fisher_profiles(results: list[ModelInformation]) -> pd.DataFrame:
    """Long table: model, mode, layer, relative depth, Fisher share of the layer."""
    frames = []
    for r in results:
        for mode, fr in r.fisher.items():
            d = fr.by_layer()
            d["model"], d["mode"] = r.ref, mode
            d["depth"] = d["layer"] / max(1, r.record["n_layers"] - 1)
            frames.append(d)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def output_table(results: list[ModelInformation]) -> pd.DataFrame:
    """The output-level check of every model: one row per condition."""
    frames = [r.output.summary for r in results if r.output is not None]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
