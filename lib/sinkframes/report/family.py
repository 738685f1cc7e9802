"""The model-family appendices (paper appendices E-J): one page per family, a view of the claims registry.

Each page runs the analyses that already exist (topology, spectral graphs, information geometry, the
value space) on the family's models, shows the per-family tables the appendix prints beside the
paper's values, and gives both verdicts of every claim of that appendix. Families without a real
model in a profile run the pipeline on random weights of their architecture: a check that the code
runs end to end, which shows no number and decides no claim.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .. import stats, verdicts
from ..analyses import frames, geometry_values, information, spectral, topology
from ..metrics.graphs import PAPER_THRESHOLDS, graph_key
from ..models import OFFLINE_MODELS
from ..models.registry import hook_supports
from ..paper import APPENDIX_OF, CLAIMS, CLAIMS_BY_ID, Claim
from ..results import Analysis, ModelResult, Results, analyses
from ..types import RunOptions
from ..verdicts.rules import describe


@dataclass(frozen=True)
class Family:
    """One appendix: its letter, the paper families it covers and how it is named."""

    key: str
    appendix: str
    families: tuple[str, ...]
    name: str
    #: False for a family the paper did not study (it has no appendix there and no claim is about it)
    in_paper: bool = True
    #: a published number to check the family's models against: per hub id, the share of heads that put more than
    #: half their attention on the first token, and where it was published
    published_sink_heads: tuple[tuple[str, float], ...] = ()
    published_source: str = ""


FAMILIES: dict[str, Family] = {
    f.key: f
    for f in (
        Family("llama", APPENDIX_OF["llama"], ("llama",), "Llama"),
        Family("qwen", APPENDIX_OF["qwen"], ("qwen",), "Qwen2.5"),
        Family("gemma_mistral", APPENDIX_OF["gemma_mistral"], ("gemma", "mistral"), "Gemma and Mistral"),
        Family("encoders", APPENDIX_OF["encoders"], ("bert", "xlm-roberta"), "BERT and XLM-RoBERTa"),
        Family("phi", APPENDIX_OF["phi"], ("phi",), "Phi-2"),
        Family("pythia", APPENDIX_OF["pythia"], ("pythia",), "Pythia"),
        # ALiBi, the position encoding the paper's typology leaves out: a causal decoder whose heads add a linear
        # bias on the distance to each key and have no position embedding
        Family("bloom", "K", ("bloom",), "BLOOM", in_paper=False,
               published_sink_heads=(("bigscience/bloom-560m", 0.44), ("bigscience/bloom-1b7", 0.36),
                                     ("bigscience/bloom-3b", 0.38), ("bigscience/bloom-7b1", 0.31)),
               published_source="arXiv 2603.09616"),
    )
}
#: a first-token sink head as the published check counts it: more than half its attention on the first token
PUBLISHED_SINK_HEAD_SHARE = 0.5


def family_analyses() -> list[Analysis]:
    """The analyses every family page runs, in page order: those the registry gives a ``family_order``."""
    return sorted((a for a in analyses().values() if a.family_order is not None),
                  key=lambda a: a.family_order or 0)


def family_of(key: str) -> Family:
    """The appendix of ``key``; an unknown key is an error that lists the known ones."""
    if key not in FAMILIES:
        raise ValueError(f"unknown family {key!r}; choose one of {', '.join(FAMILIES)}")
    return FAMILIES[key]


def page_id(key: str) -> str:
    """The manifest id of the family's appendix page (``appendix_e_llama``, ...)."""
    fam = family_of(key)
    return f"appendix_{fam.appendix.lower()}_{fam.key}"


def appendix_claims(key: str) -> list[Claim]:
    """The registry's claims printed in the family's appendix."""
    letter = family_of(key).appendix
    return [c for c in CLAIMS if c.section == letter]


def claims_table(key: str) -> pd.DataFrame:
    """The appendix's claims as the paper prints them, with how each is decided (or why it is not)."""
    rows = [{"claim": c.id, "where": c.where, "about": c.subject, "quantity": c.quantity, "paper": c.printed,
             "rule": describe(c.rule, c.params) if c.testable else "", "null": c.null,
             "not testable because": c.untestable} for c in appendix_claims(key)]
    if not rows and not family_of(key).in_paper:
        return pd.DataFrame([{"claim": "none", "about": f"the paper did not study {family_of(key).name}"}])
    return pd.DataFrame(rows)


@dataclass
class FamilyResults:
    """What a family page computed: one list of results per analysis (empty for a pipeline check's numbers)."""

    family: Family
    models: list[str]
    pipeline_check: bool
    results: dict[str, list[ModelResult]] = field(default_factory=dict)
    #: analyses left out for some models, with the reason (a sentence each)
    not_run: list[str] = field(default_factory=list)
    #: the verdicts of every result, evaluated once (``family_verdicts``): the table and the summary share them
    evaluated: list[verdicts.Verdict] | None = field(default=None, repr=False)

    def all(self) -> list[ModelResult]:
        return [r for a in family_analyses() for r in self.results.get(a.name, [])]


def run(key: str, models: list[str], texts: list[str], opts: RunOptions, *, n_output: int, n_fisher: int,
        seed: int = 0, pipeline_check: bool = False) -> FamilyResults:
    """Every analysis of the page on ``models`` (each cached as on the section pages)."""
    fam = family_of(key)
    out = FamilyResults(fam, list(models), pipeline_check)
    params: dict[str, Any] = {"seed": seed, "n_output": n_output, "n_fisher": n_fisher}
    records: dict[str, dict[str, Any]] = {}
    left_out: list[str] = []
    for a in family_analyses():
        if a.analyse is None:
            raise ValueError(f"analysis {a.name!r} has a family_order but no entry point (its spec's analyse)")
        run_on = list(models)
        if a.needs_hook:  # a model whose attention the hook cannot wrap (MPNet computes its attention inline)
            run_on = [m for m in models if m not in records or hook_supports(records[m]["architecture"])]
            out.not_run += [f"`{m}`: no {a.label or a.name} analysis (the attention hook does not support "
                            f"{records[m]['architecture']}'s attention)" for m in models if m not in run_on]
        found = a.analyse(run_on, texts, opts, **{p: params[p] for p in a.family_params}) if run_on else Results()
        out.results[a.name] = found
        records.update({r.ref: r.record for r in found if r.ref not in records})
        left_out += a.left_out(found) if a.left_out else []
    out.not_run += left_out
    if fam.published_sink_heads:  # the per-head first-token shares its published check counts, and the frame
        out.results["frames"] = frames.analyse(models, texts, opts, seed=seed)
    return out


def published_check(fr: FamilyResults) -> pd.DataFrame:
    """Per model of the page, the share of its heads whose mean first-token share exceeds
    :data:`PUBLISHED_SINK_HEAD_SHARE`, beside the published share for that checkpoint (``Family.published_sink_heads``)
    where there is one; empty for a family without published numbers or a pipeline check."""
    published = dict(fr.family.published_sink_heads)
    if fr.pipeline_check or not published:
        return pd.DataFrame()
    rows = []
    for r in fr.results.get("frames", []):
        share = np.asarray(r.heads["first_token_share"], dtype=float)  # [layer, head]
        ours = int((share > PUBLISHED_SINK_HEAD_SHARE).sum())
        theirs = published.get(r.ref)
        rows.append({"model": r.ref, "heads": int(share.size), "sink heads (ours)": ours,
                     "share (ours)": ours / share.size,
                     f"share ({fr.family.published_source})": np.nan if theirs is None else theirs,
                     "frame (chapter 1's instrument)": r.data["frame"]})
    return pd.DataFrame(rows)


def published_note(fr: FamilyResults) -> str:
    """How the published check counts, and what it can say ('' for a family without one)."""
    fam = fr.family
    if not fam.published_sink_heads:
        return ""
    listed = ", ".join(f"{ref.split('/')[-1]} {share:.0%}" for ref, share in fam.published_sink_heads)
    return (f"{fam.published_source} counts the heads of {fam.name} that put more than half their attention on the "
            f"first token: {listed}. This page counts the same way on its own sentences: a head is a sink head when "
            f"its mean first-token share (over queries after the first, then over sentences) exceeds "
            f"{PUBLISHED_SINK_HEAD_SHARE}. The text and the sentence lengths differ from theirs, so the comparison is "
            "of order and direction, not a verdict; no claim of the paper is about this family. The frame is the one "
            "chapter 1's instrument reads.")


def header(fr: FamilyResults) -> str:
    """What the page shows, in words: real models, or a pipeline check that decides nothing."""
    fam = fr.family
    names = ", ".join(f"`{m}`" for m in fr.models)
    if fr.pipeline_check and not fam.in_paper:
        return (f"**Pipeline check only.** No real {fam.name} model runs in this profile: {names} "
                f"{'has' if len(fr.models) == 1 else 'have'} random weights with the family's architecture. The "
                "analyses below ran end to end on it; no number is shown. `python -m sinkframes_build build --profile "
                f"colab --pages {page_id(fam.key)}` runs a real {fam.name} model (network), or open this page on "
                "Colab and set `models`.")
    if fr.pipeline_check:
        return (f"**Pipeline check only.** No real {fam.name} model runs in this profile: {names} "
                f"{'has' if len(fr.models) == 1 else 'have'} random weights with the family's architecture. The "
                "analyses below ran end to end on it, which tests the code path the paper's models take; no "
                "number is shown and no claim is decided. The claims of appendix "
                f"{fam.appendix} are *not evaluated* here: `python -m sinkframes_build build --profile paper --pages "
                f"{page_id(fam.key)}` evaluates them on the paper's models (network and, for "
                "the large ones, a GPU), or open this page on Colab and set `models`.")
    roles = _stand_ins(fr)
    gaps = "".join(f"\n- {line}" for line in fr.not_run)
    if not fam.in_paper:
        return (f"Models: {names}, of a family the paper did not study: {fam.name} has no appendix there and no "
                "claim of the paper is about it. Its analyses run as for the paper's families, so its numbers can be "
                "read beside theirs; its check is a published count (below)."
                + (f"\n\nNot run:{gaps}" if gaps else ""))
    return (f"Models: {names}, standing in for the paper's {fam.name} models of appendix {fam.appendix}"
            + (f" ({roles})" if roles else "") + ". Each is tested against the claims of the family it stands in "
            "for (a model of no paper family, against the claims about all encoders or all decoders)."
            + (f"\n\nNot run:{gaps}" if gaps else ""))


#: parameters of a paper checkpoint whose id does not say its size (the model card's figure)
_NOMINAL_PARAMETERS = {"microsoft/phi-2": 2.7e9}


def nominal_parameters(model_id: str) -> float | None:
    """A checkpoint's size as its name or model card gives it (``EleutherAI/pythia-2.8b`` -> 2.8e9), or None."""
    import re

    if model_id in _NOMINAL_PARAMETERS:
        return _NOMINAL_PARAMETERS[model_id]
    m = re.search(r"-(\d+(?:\.\d+)?)([mb])(?:-|$)", model_id.lower())
    return float(m.group(1)) * (1e6 if m.group(2) == "m" else 1e9) if m else None


def not_run_box(fr: FamilyResults, profile: str) -> str:
    """For a pipeline check: the warning that opens the page (MyST), with the parameters cell that runs the
    family on Colab and the paper's checkpoints with the size of their weights; ``""`` for real models."""
    if not fr.pipeline_check:
        return ""
    from ..manifest import ManifestError, reader_manifest

    fam, pid = fr.family, page_id(fr.family.key)
    decides = (f"decides none of appendix {fam.appendix}'s claims" if fam.in_paper
               else "shows none of its numbers (no claim of the paper is about this family)")
    lines = [":::{admonition} Not run in this profile: a pipeline check on random weights", ":class: warning", "",
             f"No real {fam.name} model runs in the `{profile}` profile, so this page {decides}. Its analysis "
             f"sections ran end to end on {len(fr.models)} random-weight model(s) of the family's architecture "
             "(which tests the code path the real models take) and are left out of this page."]
    m = reader_manifest()
    try:
        page = m.page(pid) if m is not None else None
    except ManifestError:
        page = None
    if page is not None and "colab" in page.parameters:
        params = {k: v for k, v in page.parameters["colab"].items()}
        body = "\n".join([f"profile = {'colab'!r}", *(f"{k} = {v!r}" for k, v in params.items())])
        lines += ["", "To run it, open this page on Colab with a GPU runtime and replace its parameters cell with:",
                  "", "```python", body, "```"]
    if page is not None and "paper" in page.parameters:
        ids = page.parameters["paper"].get("models", [])
        sizes = [(i, nominal_parameters(i)) for i in ids]
        described = ", ".join(f"`{i}`" + (f" ({n / 1e9:.1f} B parameters, about {2 * n / 1e9:.1f} GB of weights in "
                                          "float16)" if n else "") for i, n in sizes)
        whose = "paper" if fam.in_paper else "paper profile"
        lines += ["", f"The {whose}'s checkpoints: {described}. `python -m sinkframes_build build --profile paper "
                  f"--pages {pid}` runs them (network access; a GPU with room for the weights and one batch, which the "
                  "page measures before it loads a model). Their running time was not measured here."]
    return "\n".join([*lines, ":::"])


def _stand_ins(fr: FamilyResults) -> str:
    """``key: what it stands in for`` for the offline models of the page (from the registry, which a cached
    result's record may predate), ``;``-joined."""
    return "; ".join(f"`{m}`: {OFFLINE_MODELS[m].stands_for}" for m in fr.models
                     if m in OFFLINE_MODELS and OFFLINE_MODELS[m].stands_for)


def pipeline_table(fr: FamilyResults) -> pd.DataFrame:
    """Which analysis ran on which model, with the shapes it produced (no values)."""
    rows = []
    for a in family_analyses():
        for r in fr.results.get(a.name, []):
            rows.append({"analysis": a.name, "model": r.ref, "architecture": r.record["architecture"],
                         "layers": r.n_layers, "heads": r.record["n_heads"], "sentences": r.n_sentences,
                         "completed": True})
    return pd.DataFrame(rows)


def _region_means(x: np.ndarray, n_layers: int) -> dict[str, float]:
    """``x`` ``[layer]`` -> first layer, early, middle, late, last layer."""
    reg = stats.layer_regions(n_layers)
    out = {"first layer": float(x[0])}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        out.update({k: float(np.nanmean(x[v])) if v else float("nan") for k, v in reg.items()})
    out["last layer"] = float(x[-1])
    return out


def _span(first: float, last: float, digits: int) -> str:
    """``"a -> b"`` with ``digits`` decimals; "undefined" for a side with no value (NaN: nothing to average there)."""
    def one(x: float) -> str:
        return f"{x:.{digits}f}" if np.isfinite(x) else "undefined"

    return f"{one(float(first))} -> {one(float(last))}"


def topology_summary(fr: FamilyResults) -> pd.DataFrame:
    """Per model: Betti numbers and persistence early -> late (corrected, means over the paper's
    thresholds; faithful at the official first and last analysed layers) and head specialization."""
    rows = []
    for r in fr.results.get("topology", []):
        lay = topology.layer_summary(r)
        beta0 = lay[[c for c in lay.columns if c.startswith("β0@")]].to_numpy().mean(1)  # [layer]
        beta1 = lay[[c for c in lay.columns if c.startswith("β1@")]].to_numpy().mean(1)  # [layer]
        reg = stats.layer_regions(r.n_layers)
        early, late = reg["early"], reg["late"]
        spec = topology.head_specialization(r)
        strong = spec["position consistency"] >= topology.CLAIM_RULES["bos_min_consistency"]
        f_an = lay[lay["analysed"]]
        rows.append({
            "model": r.ref,
            "β0 early -> late": _span(np.mean(beta0[early]), np.mean(beta0[late]), 2),
            "β1 early -> late": _span(np.mean(beta1[early]), np.mean(beta1[late]), 2),
            "total persistence H0 early -> late": _span(lay["total pers. H0"].iloc[early].mean(),
                                                        lay["total pers. H0"].iloc[late].mean(), 3),
            "faithful Betti0 first -> last": _span(f_an["faithful betti0"].iloc[0],
                                                   f_an["faithful betti0"].iloc[-1], 2),
            "faithful Betti1 first -> last": _span(f_an["faithful betti1"].iloc[0],
                                                   f_an["faithful betti1"].iloc[-1], 2),
            "faithful persistence first -> last": _span(f_an["faithful dim0_avg"].iloc[0],
                                                        f_an["faithful dim0_avg"].iloc[-1], 4),
            "heads fixed on position 0": float((strong & (spec["position"] == "first")).mean()),
            "heads fixed on the last token": float((strong & (spec["position"] == "last")).mean()),
            "most common token (official reading)": spec["faithful token"].mode().iloc[0],
        })
    return pd.DataFrame(rows)


def spectral_summary(fr: FamilyResults) -> pd.DataFrame:
    """Per model: algebraic connectivity by region (threshold-averaged) and its peak ratio,
    star-likeness (both definitions), degree centralization."""
    rows = []
    for r in fr.results.get("spectral", []):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            lam = np.nanmean(spectral.at(r, graph_key("corrected", "lambda2"), PAPER_THRESHOLDS), (0, 1))  # [layer]
            official = np.nanmean(spectral.at(r, graph_key("laplacian", "fiedler"), PAPER_THRESHOLDS), axis=(0, 1))
            comp = float(np.nanmean(spectral.at(r, graph_key("laplacian", "star_likeness"), PAPER_THRESHOLDS)))
            basic = float(np.nanmean(spectral.at(r, graph_key("corrected", "star_basic"), PAPER_THRESHOLDS)))
            cent = float(np.nanmean(spectral.at(r, graph_key("corrected", "centralization"), PAPER_THRESHOLDS)))
        reg = _region_means(lam, r.n_layers)
        off = _region_means(official, r.n_layers)
        rows.append({
            "model": r.ref,
            "λ2 early / middle / late": f"{reg['early']:.2f} / {reg['middle']:.2f} / {reg['late']:.2f}",
            "middle peak ratio": reg["middle"] / max(reg["early"], reg["late"]),
            "official Fiedler early -> late": f"{off['early']:.2f} -> {off['late']:.2f}",
            "composite star-likeness (official)": comp,
            "basic star-likeness (corrected)": basic,
            "degree centralization": cent,
        })
    return pd.DataFrame(rows)


def fiedler_table(fr: FamilyResults) -> pd.DataFrame:
    """The across-layer Fiedler-centralization correlation at the paper's seven thresholds, per model."""
    frames = []
    for r in fr.results.get("spectral", []):
        c = spectral.fiedler_correlations(r, seed=int(r.params.get("seed", 0)))
        c = c[c["metric"] == "centralization"]
        frames.append(c.pivot(index="model", columns="threshold", values="r across layers"))
    return pd.concat(frames) if frames else pd.DataFrame()


def information_summary(fr: FamilyResults) -> pd.DataFrame:
    """Per model: corrected KL reduction by region, sink concentration by depth with its maximum and
    where, and the Fisher shares (early third, attention vs MLP)."""
    rows = []
    fisher = information.fisher_table(fr.results.get("information", []))
    for r in fr.results.get("information", []):
        d = information.model_layers(r, "corrected")
        kl = _region_means(d["kl_reduction"].to_numpy(), r.n_layers)
        mass = d["sink_mass"].to_numpy()
        row: dict[str, Any] = {"model": r.ref, **{f"KL {k}": v for k, v in kl.items()}}
        row["sink concentration early / middle / late"] = " / ".join(
            f"{v:.0%}" for k, v in _region_means(mass, r.n_layers).items() if k in ("early", "middle", "late"))
        row["max sink concentration"] = f"{np.nanmax(mass):.1%} at layer {int(np.nanargmax(mass))} of {r.n_layers}"
        f = fisher[(fisher["model"] == r.ref) & (fisher["mode"] == "corrected")] if len(fisher) else fisher
        if len(f):
            row["Fisher early third"] = f"{f['early_share'].iloc[0]:.0%}"
            row["Fisher attention / MLP"] = f"{f['attention_share'].iloc[0]:.0%} / {f['mlp_share'].iloc[0]:.0%}"
        rows.append(row)
    return pd.DataFrame(rows)


def values_summary(fr: FamilyResults) -> pd.DataFrame:
    """Per model: reference tokens (both rules) and the first-to-last changes of the value space."""
    res = fr.results.get("geometry_values", [])
    if not res:
        return pd.DataFrame()
    counts = geometry_values.reference_counts(res).set_index("model")
    change = geometry_values.change_table(res)
    change = change[change["mode"] == "corrected"]
    rows = []
    for r in res:
        c = {str(row["measure"]): row for _, row in change[change["model"] == r.ref].iterrows()}
        rows.append({
            "model": r.ref,
            "reference tokens (official rule)": counts.loc[r.ref, "official rule (faithful)"],
            "reference tokens (per-head rule)": counts.loc[r.ref, "per-head rule (corrected)"],
            **{f"{m} last - first [95 %]": _interval(c[m]) for m in ("entropy", "magnitude", "alignment")},
        })
    return pd.DataFrame(rows)


def _interval(row: Any) -> str:
    """``mean [low, high]`` of a change-table row."""
    return f"{float(row['last - first']):+.3g} [{float(row['low']):+.3g}, {float(row['high']):+.3g}]"


def family_verdicts(fr: FamilyResults) -> list[verdicts.Verdict]:
    """Both verdicts of every claim of the appendix, from the page's results (none for a pipeline check)."""
    if fr.pipeline_check:
        return []
    claims = appendix_claims(fr.family.key)
    ids = {c.id for c in claims}
    if fr.evaluated is None:  # the claims comparing the family's sizes are decided here, on every size it ran
        fr.evaluated = verdicts.evaluate(fr.all()) + verdicts.evaluate_comparisons(fr.all(), claims=claims)
    return [v for v in fr.evaluated if v.claim in ids]


def own_claims(key: str) -> list[Claim]:
    """The appendix's claims that its own page decides (``Claim.page`` is the appendix): those comparing the
    family's sizes, which no section page runs together (Pythia's, for Appendix J)."""
    pid = page_id(key)
    return [c for c in appendix_claims(key) if c.page == pid]


def save_own_verdicts(fr: FamilyResults, profile: str, inputs: dict[str, Any]) -> list[verdicts.Verdict]:
    """Save, for the scorecard, the verdicts of :func:`own_claims`, and this page's reading of the appendix's other
    claims, which the section pages decide: the scorecard counts the first and sets the second beside the section
    pages' verdicts (``report.reconcile``). Nothing for a pipeline check or a page with neither."""

    ids = {c.id for c in own_claims(fr.family.key)}
    if fr.pipeline_check:
        return []
    everything = family_verdicts(fr)
    found = [v for v in everything if v.claim in ids]
    readings = [v for v in everything if v.claim not in ids]
    if found or readings:
        verdicts.save(page_id(fr.family.key), profile, found, models=verdicts.model_records(fr.all()), inputs=inputs,
                      readings=readings)
    return found


def verdict_table(fr: FamilyResults) -> pd.DataFrame:
    """The appendix's claims with the paper's value, ours and both verdicts per model; claims that no
    model here can test say why."""
    found = family_verdicts(fr)
    table = verdicts.verdict_table(found) if found else pd.DataFrame()
    missing = []
    for cid, why in untested_claims(fr):
        c = CLAIMS_BY_ID[cid]
        missing.append({"claim": c.id, "model": "", "quantity": c.quantity, "paper": c.printed,
                        "reproduced?": "not evaluated", "holds?": "not evaluated", "reproduced: rule": why})
    return pd.concat([table, pd.DataFrame(missing)], ignore_index=True).fillna("")


def untested_claims(fr: FamilyResults) -> list[tuple[str, str]]:
    """``(claim id, why)`` of each claim of the appendix without a verdict on this page (the page's verdict
    table lists them after the verdicts)."""
    tested = {v.claim for v in family_verdicts(fr)}
    why = "pipeline check: random weights decide no claim" if fr.pipeline_check else "no model of this family here"
    return [(c.id, c.untestable or why) for c in appendix_claims(fr.family.key) if c.id not in tested]


def no_verdicts_note(fr: FamilyResults) -> str:
    """What the result box says when the page decides no claim of its appendix."""
    if not fr.family.in_paper:
        return (f"No claim of the paper is about {fr.family.name}, which the paper did not study: this page measures "
                "it as the paper's families are measured, with a published count as its check."
                + (" Here a pipeline check on random weights shows no number." if fr.pipeline_check else ""))
    if fr.pipeline_check:
        return (f"A pipeline check: random weights decide none of the appendix's {len(appendix_claims(fr.family.key))} "
                f"claims; a real {fr.family.name} model decides them.")
    return "No model here is tested against the appendix's claims."


def scorecard_note(fr: FamilyResults, profile: str, n_sentences: int) -> str:
    """Where the scorecard's verdicts on these claims come from: the section page that tests each claim saves them,
    with that page's sentence count; this page measures the same quantities again on its own sentences, so its
    numbers can differ from the scorecard's (within their intervals) when the counts differ."""
    from ..manifest import reader_manifest

    manifest = reader_manifest()
    tested = {v.claim for v in family_verdicts(fr)}
    if manifest is None or not tested:
        return ""
    pages = {p.id: p for p in manifest.pages}
    by_page: dict[str, list[str]] = {}
    for c in appendix_claims(fr.family.key):
        if c.id in tested and c.page in pages:
            by_page.setdefault(c.page, []).append(c.id)
    parts, differ = [], False
    for pid, ids in by_page.items():
        n = pages[pid].parameters.get(profile, {}).get("n_sentences")
        differ = differ or n != n_sentences
        count = f" ({n} sentences)" if n else ""  # a profile that does not run the section page has no count
        parts.append(f"{', '.join(ids)} from *{pages[pid].title}*{count}")
    text = ("Each claim is decided once, for the scorecard, on the section page that tests it: "
            + "; ".join(parts) + ".")
    if differ:
        text += (f" This page measures the same quantities again on its own {n_sentences} sentences, a second "
                 "draw, so a verdict here can differ from the scorecard's; the scorecard's *Claims read twice* sets "
                 "this page's reading beside each section page's verdict and names those that differ.")
    return text


def evidence_summary(fr: FamilyResults) -> str:
    """What this family's evidence supports, counted from the verdicts, in plain words."""
    fam = fr.family
    claims = appendix_claims(fam.key)
    if not fam.in_paper:
        return (f"No claim of the paper is about {fam.name}, so nothing is decided here; the published check above "
                "says whether its heads agree with the published count.")
    if fr.pipeline_check:
        return (f"Nothing is decided on this page: its {len(claims)} claims stay *not evaluated* until a real "
                f"{fam.name} model runs (see the command above).")
    found = family_verdicts(fr)
    holds = [v for v in found if v.question == "holds"]
    by: dict[str, list[str]] = {}
    for v in holds:
        by.setdefault(v.status, []).append(f"{v.claim} (`{v.model}`)")
    untested = [c.id for c in claims if not any(v.claim == c.id for v in found)]
    parts = [f"Of the {len(claims)} claims of appendix {fam.appendix}, {len({v.claim for v in found})} were "
             f"tested here with the corrected computation:"]
    for status in verdicts.STATUSES:
        if by.get(status):
            parts.append(f"- **{status}**: {', '.join(by[status])}")
    if untested:
        parts.append(f"- not evaluated here: {', '.join(untested)}")
    return "\n".join(parts)


def section(fr: FamilyResults, table: Any) -> Any:
    """``table(fr)`` for real models; for a pipeline check, a line saying why no number is shown."""
    if fr.pipeline_check:
        from IPython.display import Markdown

        return Markdown("*Pipeline check: the analysis ran on random weights; its numbers are not results and are "
                        "not shown.*")
    return table(fr).round(4)

