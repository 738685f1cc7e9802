"""The scorecard: every claim of the registry, both verdicts per model, from the pages' saved verdicts."""

from __future__ import annotations

import html
import re
from collections import Counter

import pandas as pd

from ..manifest import Manifest, ManifestError, reader_manifest
from ..paper import APPENDIX_OF, CLAIMS, Claim
from ..paper.central import CENTRAL
from ..paper.claims import LATER, PAPER, is_rotary
from ..verdicts import NOT_EVALUATED, QUESTIONS, STATUSES, PageVerdicts, Verdict
from .tables import breakable

NOT_THIS_FAMILY = "-"
#: the "reproduced?" cell of a claim whose quantity no official notebook computes (not a verdict, not counted)
NO_OFFICIAL = "no official computation"


def models_of(saved: dict[str, PageVerdicts]) -> dict[str, dict]:
    """Every model the pages ran (first-seen order) with its family, paper frame and causality."""
    out: dict[str, dict] = {}
    for pv in saved.values():
        for ref, rec in pv.models.items():
            out.setdefault(ref, rec)
    return out


def _index(saved: dict[str, PageVerdicts]) -> dict[tuple[str, str, str], Verdict]:
    return {(v.claim, v.model, v.question): v for pv in saved.values() for v in pv.verdicts}


def _cell(v: Verdict | None) -> str:
    if v is None:
        return NOT_THIS_FAMILY
    if v.estimate is None or v.status == NOT_EVALUATED:
        return v.status
    return f"{v.status}: {v.estimate.text()}"


def _applies(c: Claim, rec: dict) -> bool:
    return c.applies_to(str(rec["family"]), str(rec["paper_frame"]), bool(rec["causal"]), is_rotary(rec))


def _concerns(c: Claim, rec: dict) -> bool:
    """Whether the compact table expects a verdict of this model on ``c``: a training run (the emergence page's
    checkpoints) answers only the claims about training, any other model those of its family and frame."""
    from ..analyses.rmt import SERIES_FAMILY

    return c.subject == SERIES_FAMILY if rec.get("family") == SERIES_FAMILY else _applies(c, rec)


def note_for(c: Claim, models: dict[str, dict], profile: str, ran: set[str]) -> str:
    """Why a claim has no verdict here, and what would evaluate it ('' when it has verdicts)."""
    if c.untestable:
        return f"not evaluated: {c.untestable}"
    from ..analyses.text_grid import SUBJECT as TEXT_GRID

    if not any(_applies(c, rec) for rec in models.values()):
        if c.subject == TEXT_GRID:  # the page passes the grid only once every run is trained
            return ("not evaluated yet: chapter 9 decides it once every run of the natural-text grid is trained "
                    "(its progress is on the page; `lib/sinkframes/data/text_lm/README.md` says how to continue it)")
        return (f"not evaluated: no {c.subject} model in the `{profile}` profile; "
                f"`python -m sinkframes_build build --profile paper --pages {c.page}` evaluates it")
    if c.page not in ran:
        return f"not evaluated: page `{c.page}` has not saved verdicts under the `{profile}` profile"
    return ""


def scorecard_table(saved: dict[str, PageVerdicts], profile: str) -> pd.DataFrame:
    """One row per claim (registry order, grouped by section): the paper's value and, per model, the
    two verdicts with our estimate (``-``: the claim is not about that model's family)."""
    models = models_of(saved)
    found = _index(saved)
    rows = []
    for c in CLAIMS:
        row = {"section": c.section, "claim": c.id, "where": c.where, "about": c.subject, "quantity": c.quantity,
               "paper": c.printed, "page": c.page}
        for ref in models:
            for q in QUESTIONS:
                row[f"{ref} {q}?"] = _cell(found.get((c.id, ref, q)))
            if (c.id, ref, "holds") in found and (c.id, ref, "reproduced") not in found:
                row[f"{ref} reproduced?"] = NO_OFFICIAL
        row["note"] = note_for(c, models, profile, set(saved))
        rows.append(row)
    return pd.DataFrame(rows)


def counts(saved: dict[str, PageVerdicts], profile: str) -> pd.DataFrame:
    """Verdicts by status and question over every (claim, model) pair tested, plus the claims without any."""
    found = _index(saved)
    table = {q: Counter(v.status for (_, _, qq), v in found.items() if qq == q) for q in QUESTIONS}
    out = pd.DataFrame({q: [table[q].get(s, 0) for s in STATUSES] for q in QUESTIONS}, index=list(STATUSES))
    out.index.name = "verdicts (claim x model)"
    return out


def claim_counts(saved: dict[str, PageVerdicts], profile: str) -> dict[str, int]:
    """How many claims the registry holds, how many no profile can test, how many were tested here."""
    models = models_of(saved)
    tested = {v.claim for pv in saved.values() for v in pv.verdicts}
    no_model = [c for c in CLAIMS if c.testable and not any(_applies(c, r) for r in models.values())]
    return {"claims": len(CLAIMS), "untestable": sum(not c.testable for c in CLAIMS),
            "tested here": len(tested), "no model here": len(no_model)}


SCORECARD_STYLE = (
    "<style>table.scorecard{font-size:0.8em;border-collapse:collapse}"
    "table.scorecard td,table.scorecard th{padding:3px 6px;vertical-align:top;overflow-wrap:break-word}"
    "table.scorecard td:first-child{width:17em}"
    "table.scorecard td.note{max-width:none;color:#555;padding-top:0}"
    "table.scorecard .where{color:#555}</style>"
)


def _verdict_line(model: str, reproduced: str, holds: str) -> str:
    """One model's two verdicts on a claim on one line (``""`` when the claim does not concern it)."""
    if reproduced.strip() in ("-", "") and holds.strip() in ("-", ""):
        return ""
    return (f"<code>{breakable(model)}</code>: reproduced: {html.escape(reproduced)}; "
            f"holds: {html.escape(holds)}")


def html_table(table: pd.DataFrame, manifest: Manifest | None = None,
               saved: dict[str, PageVerdicts] | None = None) -> str:
    """The scorecard as an HTML table, one block per section: per claim, where the paper makes it and what it
    reports (linked to its row on the page that tests it, :func:`_claim_targets`), then both verdicts of every
    model it concerns, a line per model (two columns whatever the number of models, so that the table fits the
    page); a note, when there is one, on a row of its own. Pages as ``manifest`` lists them (by default the
    checkout's manifest or the library's packaged copy)."""
    targets = _claim_targets(manifest, saved)
    models = list(dict.fromkeys(c.rsplit(" ", 1)[0] for c in table.columns if c.endswith("?")))
    head = ["claim, and what the paper reports", "both verdicts of each model it concerns, with our estimate"]
    out = [SCORECARD_STYLE, '<table class="scorecard">',
           "<thead><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr></thead><tbody>"]
    for section, g in table.groupby("section", sort=False):
        label = "Accounts published after the paper" if section == LATER else f"Section {section}"
        out.append(f'<tr><th colspan="{len(head)}">{html.escape(label)}</th></tr>')
        for _, r in g.iterrows():
            target = targets.get(str(r["claim"]))
            claim = breakable(r["claim"])
            if target:
                claim = f'<a href="{target[0]}" title="{html.escape(target[1])}">{claim}</a>'
            claim += (f'<br><span class="where">{html.escape(str(r["where"]))}; {html.escape(str(r["about"]))}'
                      f"</span><br>{html.escape(str(r['quantity']))}: <i>{html.escape(str(r['paper']))}</i>")
            lines = [_verdict_line(m, str(r[f"{m} reproduced?"]), str(r[f"{m} holds?"])) for m in models]
            cells = [claim, "<br>".join(x for x in lines if x) or "–"]
            out.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
            if str(r["note"]).strip():
                out.append(f'<tr><td class="note" colspan="{len(head)}">{html.escape(str(r["note"]))}</td></tr>')
    out.append("</tbody></table>")
    return "\n".join(out)


def provenance_line(profile: str, saved: dict[str, PageVerdicts]) -> str:
    """The provenance line of the scorecard: the models and the largest sentence set behind its verdicts."""
    from .provenance import provenance

    inputs = [pv.inputs for pv in saved.values() if pv.inputs]
    n = max((int(i.get("n_sentences", 0)) for i in inputs), default=0)
    dataset = str(inputs[0].get("dataset", "embedded")) if inputs else "embedded"
    seed = int(inputs[0].get("seed", 0)) if inputs else 0
    weights = {m: str(r["weights"]) for m, r in models_of(saved).items() if r.get("weights")}
    return provenance(profile, list(models_of(saved)), n, dataset, seed, weights=weights) + (
        f" Verdicts saved by {len(saved)} pages: {', '.join(f'`{p}`' for p in saved)}.")


BADGES = {"supported": "\u2714 supported", "not supported": "\u2718 not supported",
          "not diagnostic": "\u2248 not diagnostic", "inconclusive": "? inconclusive",
          "not evaluated": "\u2013 not evaluated"}


def findings(saved: dict[str, PageVerdicts], profile: str, manifest: Manifest | None = None) -> str:
    """"What this book finds": one line per central claim (:data:`CENTRAL`) with each tested model's *holds?*
    verdict, our estimate and the paper's value, linked to the page that shows the evidence. Written from the
    saved verdicts only."""
    manifest = manifest or reader_manifest()
    pages = {p.id: p.output.split("/")[-1].replace(".ipynb", ".html") for p in manifest.pages} if manifest else {}
    found = _index(saved)
    by_id = {c.id: c for c in CLAIMS}
    lines = [f"**What this book finds** (the `{profile}` profile; *holds?*, the corrected computation):", ""]
    for text, ids in CENTRAL:
        cells = []
        for ref in models_of(saved):
            v = next((found[(i, ref, "holds")] for i in ids if (i, ref, "holds") in found), None)
            if v is None:
                continue
            est = ""
            if v.estimate is not None and v.status != NOT_EVALUATED:
                e = v.estimate
                est = f" ({e.detail})" if e.undetermined and e.detail else (" (undetermined)" if e.undetermined
                                                                             else f" {e.text()}")
            cells.append(f"`{ref}` {BADGES.get(v.status, v.status)}{est}")
        group = _group_badge([v for ref in models_of(saved) for v in
                              [next((found[(i, ref, "holds")] for i in ids if (i, ref, "holds") in found), None)]
                              if v is not None and v.status != NOT_EVALUATED])
        claim = by_id[ids[0]]
        link = f" ([evidence]({pages[claim.page]}#what-the-evidence-supports))" if claim.page in pages else ""
        said = "paper" if claim.source == PAPER else f"arXiv {claim.source}"
        printed = " / ".join(by_id[i].printed for i in ids)
        body = f"{group}: " + "; ".join(cells) if cells else "no model of this profile is tested on it"
        lines.append(f"- **{text}** ({said}: *{printed}*){link}: {body}.")
    return "\n".join(lines)


def _group_badge(found: list[Verdict]) -> str:
    """The verdict of the group a central claim is about, from its models' (``report.inference.family_lines``):
    one status where they agree, mixed where they do not."""
    from .inference import MIXED, group_status

    if not found:
        return "no verdict"
    status = group_status(v.status for v in found)
    word = "\u25d0 mixed" if status == MIXED else BADGES.get(status, "")
    return f"**{word}** for the group ({len(found)} model{'s' if len(found) > 1 else ''})"


def summary(saved: dict[str, PageVerdicts], profile: str) -> str:
    """Plain counts of what the scorecard holds, in words."""
    cc = claim_counts(saved, profile)
    holds = {str(k): int(v) for k, v in counts(saved, profile)["holds"].items()}
    models = ", ".join(f"`{m}` ({r['family']})" for m, r in models_of(saved).items())
    held, not_diag, against = holds["supported"], holds["not diagnostic"], holds["not supported"]
    return (
        f"The registry holds {cc['claims']} claims; {cc['untestable']} cannot be tested by any profile (each says "
        f"why), {cc['no model here']} concern families without a model in the `{profile}` profile, and "
        f"{cc['tested here']} were tested on {models}. Of the {sum(holds.values())} (claim, model) pairs tested "
        f"with the corrected computation, {held} are supported, {against} are not, {not_diag} are not diagnostic "
        "(they meet the claim but cannot be told from one of their nulls) and the rest are inconclusive or have no "
        "corrected measure."
    )


# ------------------------------------------------------------------------------------ the models actually run
#: what the run trained by the emergence page stands in for (its record's family is ``training``)
TRAINED_STANDS_FOR = "the paper's Pythia training checkpoints (App. B), at toy scale"


def models_in_order(saved: dict[str, PageVerdicts]) -> dict[str, dict]:
    """:func:`models_of` with training runs (the emergence page's checkpoints) after the pretrained models."""
    from ..analyses.rmt import SERIES_FAMILY

    models = models_of(saved)
    return dict(sorted(models.items(), key=lambda kv: kv[1].get("family") == SERIES_FAMILY))


def _page_links(manifest: Manifest | None) -> dict[str, tuple[str, str]]:
    """``page id -> (html file, short label)``: the chapter number of a numbered title, else the title."""
    if manifest is None:
        return {}
    out = {}
    for p in manifest.pages:
        number = p.title.split(". ", 1)[0]
        label = number if len(number) <= 3 else p.title.split(":", 1)[0]
        out[p.id] = (p.output.split("/")[-1].replace(".ipynb", ".html"), label)
    return out


def _position_of(ref: str, rec: dict) -> str:
    from ..models.registry import OFFLINE_MODELS

    if ref in OFFLINE_MODELS and OFFLINE_MODELS[ref].position:
        return OFFLINE_MODELS[ref].position
    return str(rec.get("position_encoding") or "not recorded by the page that ran it")


def _stands_for(ref: str, rec: dict) -> str:
    from ..analyses.rmt import SERIES_FAMILY
    from ..models.registry import OFFLINE_MODELS, PAPER_MODELS, paper_family_of

    family = str(rec.get("family"))
    if ref in OFFLINE_MODELS:
        return OFFLINE_MODELS[ref].stands_for
    if family == SERIES_FAMILY:
        return TRAINED_STANDS_FOR
    if paper_family_of(ref):
        return "itself (a paper model)"
    return f"{PAPER_MODELS[family]} (its family's model in the paper)" if family in PAPER_MODELS else "no paper model"


def models_run(saved: dict[str, PageVerdicts], manifest: Manifest | None = None) -> pd.DataFrame:
    """One row per model the pages ran (read from their saved verdict files): the family it is tested as and
    the frame the paper assigns to that family, its position encoding, the paper model it stands in for, and
    the pages (manifest order, chapter numbers) that ran it."""
    pages = _page_links(manifest)
    order = [p for p in pages if p in saved] + [p for p in saved if p not in pages]
    rows = []
    for ref, rec in models_in_order(saved).items():
        ran = [p for p in order if ref in saved[p].models]
        rows.append({"model": ref, "tested as": f"{rec['family']} ({rec['paper_frame']})",
                     "position encoding": _position_of(ref, rec), "stands in for": _stands_for(ref, rec),
                     "pages": ran})
    return pd.DataFrame(rows, columns=["model", "tested as", "position encoding", "stands in for", "pages"])


def paper_models(manifest: Manifest | None = None) -> list[str]:
    """Every model the pages of the ``paper`` profile run (manifest order, once each)."""
    manifest = manifest or reader_manifest()
    refs: list[str] = []
    for p in manifest.pages if manifest else []:
        params = p.parameters.get("paper", {})
        refs += [str(m) for m in [*params.get("models", []), *params.get("checkpoint_models", [])]]
    return list(dict.fromkeys(refs))


def not_run(saved: dict[str, PageVerdicts], manifest: Manifest | None = None) -> list[tuple[str, list[str], list[str]]]:
    """The paper's models that no page ran, by family: ``(family, hub ids, models run here of that family)``."""
    from ..models.registry import paper_family_of

    ran = models_of(saved)
    out: dict[str, list[str]] = {}
    for ref in paper_models(manifest):
        if ref not in ran:
            out.setdefault(paper_family_of(ref) or "no paper family", []).append(ref)
    return [(fam, refs, [m for m, r in ran.items() if r["family"] == fam]) for fam, refs in out.items()]


MODELS_STYLE = (
    "<style>table.sc-models{font-size:0.8em;border-collapse:collapse;max-width:100%}"
    "table.sc-models td,table.sc-models th{padding:2px 6px;vertical-align:top;text-align:left;"
    "overflow-wrap:break-word}table.sc-models thead th{border-bottom:1px solid #999}"
    "table.sc-models td.pg{white-space:nowrap}table.sc-models td:nth-child(2){min-width:9em;overflow-wrap:normal}"
    "</style>"
)


def models_run_html(saved: dict[str, PageVerdicts], manifest: Manifest | None = None) -> str:
    """:func:`models_run` as an HTML table, each page that ran a model linked by its chapter number."""
    manifest = manifest or reader_manifest()
    links = _page_links(manifest)
    head = ["model", "tested as (paper's frame)", "position encoding", "stands in for", "pages that ran it"]
    out = [MODELS_STYLE, '<table class="sc-models"><thead><tr>'
           + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr></thead><tbody>"]
    for _, r in models_run(saved, manifest).iterrows():
        pages = ", ".join(f'<a href="{links[p][0]}">{html.escape(links[p][1])}</a>' if p in links
                          else f"<code>{html.escape(p)}</code>" for p in r["pages"])
        cells = [f"<code>{breakable(r['model'])}</code>",
                 *(html.escape(str(r[k])) for k in ("tested as", "position encoding", "stands in for"))]
        out.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + f'<td class="pg">{pages}</td></tr>')
    out.append("</tbody></table>")
    return "\n".join(out)


def not_run_markdown(saved: dict[str, PageVerdicts], profile: str, manifest: Manifest | None = None) -> str:
    """In plain words, which of the paper's models no page ran, by family, and what stands in for them."""
    missing = not_run(saved, manifest)
    if not missing:
        return f"Every model the `paper` profile names ran in the `{profile}` profile."
    n = sum(len(refs) for _, refs, _ in missing)
    lines = [f"**Not run** in the `{profile}` profile: {n} of the paper's models "
             f"(`python -m sinkframes_build build --profile paper` runs them):", ""]
    for fam, refs, here in missing:
        names = ", ".join(f"`{r.rsplit('/', 1)[-1]}`" for r in refs)
        instead = (f"stand-in here: {', '.join(f'`{m}`' for m in here)}" if here
                   else "no stand-in here: the claims about that family alone are not evaluated")
        lines.append(f"- {fam}: {names}; {instead}.")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------- the scorecard at a glance
#: one symbol per verdict, for the compact table (:data:`BADGES` spells them out)
SYMBOLS = {"supported": "\u2714", "not supported": "\u2718", "not diagnostic": "\u2248", "inconclusive": "?",
           "not evaluated": "\u2013"}
#: the *reproduced?* symbol of a claim no official notebook computes
NO_OFFICIAL_SYMBOL = "\u00b7"
#: a claim that concerns a model's family but has no verdict for it (its page did not run that model)
NOT_RUN_SYMBOL = "\u25cb"


def claim_anchor(claim_id: str) -> str:
    """The HTML id of a claim's row in the scorecard: ``claim-`` and the id with its dots (and anything else
    outside letters, digits, ``_`` and ``-``) replaced by ``-`` (``3.1.centralized`` -> ``claim-3-1-centralized``).
    Chapter pages link to ``00_scorecard.html#<anchor>``."""
    return "claim-" + re.sub(r"[^A-Za-z0-9_-]", "-", claim_id)


def tally(saved: dict[str, PageVerdicts], question: str = "holds") -> dict[str, Counter]:
    """Per claim, how many models got each verdict on ``question`` (``holds`` or ``reproduced``)."""
    out: dict[str, Counter] = {}
    for (claim, _, q), v in _index(saved).items():
        if q == question:
            out.setdefault(claim, Counter())[v.status] += 1
    return out


def tally_text(counts: Counter) -> str:
    """A claim's verdict counts in symbols, in the order of :data:`STATUSES` (``2✔ 1✘``; '' for none)."""
    return " ".join(f"{counts[s]}{SYMBOLS.get(s, s)}" for s in STATUSES if counts.get(s))


def _symbol(v: Verdict | None, question: str) -> str:
    if v is None:
        return NO_OFFICIAL_SYMBOL if question == "reproduced" else NOT_RUN_SYMBOL
    return SYMBOLS.get(v.status, "?")


def _badges(c: Claim, ref: str, rec: dict, found: dict) -> str:
    """A model's two symbols on a claim (*reproduced?* then *holds?*): '' when the claim is not about its family,
    :data:`NOT_RUN_SYMBOL` twice when it is but the model has no verdict on it."""
    rep, hol = found.get((c.id, ref, "reproduced")), found.get((c.id, ref, "holds"))
    if rep is None and hol is None:
        return f"{NOT_RUN_SYMBOL}{NOT_RUN_SYMBOL}" if _concerns(c, rec) and c.testable else ""
    return _symbol(rep, "reproduced") + _symbol(hol, "holds")


def _short_note(c: Claim, models: dict[str, dict], ran: set[str]) -> str:
    """Why a claim has no verdict here, in a few words (the detailed table says how to evaluate it)."""
    if c.untestable:
        return f"not testable: {c.untestable}"
    if not any(_applies(c, rec) for rec in models.values()):
        return f"no {c.subject} model in this profile"
    return f"page `{c.page}` has not run" if c.page not in ran else ""


def _group_note(c: Claim, found: dict) -> str:
    """A claim that compares models is decided once for the group it names (its subject), not per model: its two
    verdicts in words ('' for any other claim, or when the group has none)."""
    if not getattr(c, "compares", None):
        return ""
    got = [(q, found.get((c.id, c.subject, q))) for q in ("reproduced", "holds")]
    parts = [f"{q}? {v.status}" + (f" {v.estimate.text()}" if v.estimate is not None else "")
             for q, v in got if v is not None]
    return f"compared across {c.subject}: " + "; ".join(parts) if parts else ""


def compact_table(saved: dict[str, PageVerdicts]) -> pd.DataFrame:
    """One row per claim (registry order): its id and anchor, section, a short statement (what it is about, the
    quantity and the paper's value), per model the two verdict symbols (*reproduced?* then *holds?*), the
    *holds?* counts over models, and a short note when no model has a verdict on it."""
    models = models_in_order(saved)
    found = _index(saved)
    counts_of = tally(saved, "holds")
    rows = []
    for c in CLAIMS:
        row = {"claim": c.id, "anchor": claim_anchor(c.id), "section": "later" if c.section == LATER else c.section,
               "statement": f"{c.subject}: {c.quantity} (paper: {c.printed})"}
        row.update({ref: _badges(c, ref, rec, found) for ref, rec in models.items()})
        row["holds"] = tally_text(counts_of.get(c.id, Counter()))
        row["note"] = _group_note(c, found) or ("" if row["holds"] else _short_note(c, models, set(saved)))
        rows.append(row)
    return pd.DataFrame(rows, columns=["claim", "anchor", "section", "statement", *models, "holds", "note"])


COMPACT_STYLE = (
    "<style>table.sc-compact{font-size:0.8em;border-collapse:collapse;width:100%}"
    "table.sc-compact td,table.sc-compact th{padding:2px 4px;vertical-align:top;text-align:left}"
    "table.sc-compact td.st{min-width:16em;overflow-wrap:break-word}table.sc-compact td.id{overflow-wrap:break-word;"
    "max-width:8.5em}table.sc-compact th.m{writing-mode:vertical-rl;transform:rotate(180deg);white-space:nowrap;"
    "vertical-align:bottom;padding:4px 1px;width:1.9em}table.sc-compact td.b{text-align:center;white-space:nowrap;"
    "padding:2px 1px;width:1.9em}table.sc-compact td.n{color:#666;font-style:italic}"
    "table.sc-compact td.t span{white-space:nowrap}table.sc-compact tr.first td{border-top:1px solid #bbb}"
    "table.sc-compact tr:target{background:#fff3b0}"
    ".sc-ok{color:#1a7f37}.sc-no{color:#c62828}.sc-nd{color:#b26a00}.sc-inc{color:#5a6b8c}.sc-ne{color:#888}"
    "table.sc-compact td.b+td.b{border-left:1px solid #e4e4e4}.sc-legend{font-size:0.85em}</style>"
)
_SYMBOL_CLASS = {"supported": "sc-ok", "not supported": "sc-no", "not diagnostic": "sc-nd", "inconclusive": "sc-inc",
                 "not evaluated": "sc-ne"}
LEGEND = (
    '<p class="sc-legend">Each model\'s cell holds two symbols: <b>reproduced?</b> (the authors\' computation), '
    "then <b>holds?</b> (the corrected one). "
    + ", ".join(f'<span class="{_SYMBOL_CLASS[s]}">{SYMBOLS[s]}</span> {s}' for s in STATUSES)
    + f", {NO_OFFICIAL_SYMBOL} no official computation, {NOT_RUN_SYMBOL} not run on this model; blank: the claim "
    "is not about the model's family. Hover a symbol for the estimate. The last column counts the <b>holds?</b> "
    "verdicts over models. A claim's id links to its row on the page that tests it.</p>"
)


def _short_ref(ref: str) -> str:
    """A model's column label: the hub id's name, without a parenthesized remark."""
    return ref.split(" (", 1)[0].rsplit("/", 1)[-1]


#: the heading every chapter ends with: where a claim without a row on its page links
EVIDENCE_HEADING = "what-the-evidence-supports"


def _claim_targets(manifest: Manifest | None, saved: dict[str, PageVerdicts] | None = None
                   ) -> dict[str, tuple[str, str]]:
    """``claim id -> (link, page title)``: claims of appendices E-J link to their row of the family page (which
    lists every claim of its appendix), the others to their row of the section page that tests them when that
    page saved a verdict on them in ``saved``, else to the page's closing section."""
    manifest = manifest or reader_manifest()
    if manifest is None:
        raise ManifestError("no manifest: neither a checkout nor the library's packaged copy (reinstall sinkframes)")
    titles = {p.id: (p.output.split("/")[-1].replace(".ipynb", ".html"), p.title) for p in manifest.pages}
    appendix_page = {APPENDIX_OF[str(p.parameters["offline"]["family"])]: p.id for p in manifest.pages
                     if str(p.parameters.get("offline", {}).get("family")) in APPENDIX_OF}  # the paper's appendices
    has_row = {(pid, v.claim) for pid, pv in (saved or {}).items() for v in pv.verdicts}
    out = {}
    for c in CLAIMS:
        pid = appendix_page.get(c.section, c.page)
        target = titles.get(pid)
        if target:
            anchor = claim_anchor(c.id) if c.section in appendix_page or (pid, c.id) in has_row else EVIDENCE_HEADING
            out[c.id] = (f"{target[0]}#{anchor}", target[1])
    return out


def _tip(v: Verdict | None, question: str, symbols: str) -> str:
    """The hover text of one symbol: the verdict and our estimate, or why there is none."""
    if v is not None:
        return _cell(v)
    return "not run on this model" if symbols.startswith(NOT_RUN_SYMBOL) else NO_OFFICIAL


def _tally_html(counts: Counter) -> str:
    """:func:`tally_text` with each symbol in its colour."""
    return " ".join(f'<span class="{_SYMBOL_CLASS.get(s, "")}">{counts[s]}{SYMBOLS.get(s, s)}</span>'
                    for s in STATUSES if counts.get(s))


def _badge_html(symbols: str, tips: tuple[str, str]) -> str:
    spans = []
    for sym, tip in zip(symbols, tips, strict=True):
        status = next((s for s, x in SYMBOLS.items() if x == sym), "")
        cls = f' class="{_SYMBOL_CLASS[status]}"' if status else ""
        spans.append(f'<span{cls} title="{html.escape(tip)}">{sym}</span>')
    return "".join(spans)


def compact_html(saved: dict[str, PageVerdicts], manifest: Manifest | None = None) -> str:
    """:func:`compact_table` as one HTML table the width of the text column: a row per claim with its anchor
    (:func:`claim_anchor`), its id linked to the page that tests it, one narrow column per model, and the
    legend above it."""
    table = compact_table(saved)
    found = _index(saved)
    counts_of = tally(saved, "holds")
    targets = _claim_targets(manifest, saved)
    models = list(models_in_order(saved))
    head = ("<thead><tr><th>claim</th><th>sec.</th><th>what the paper reports</th>"
            + "".join(f'<th class="m" title="{html.escape(m)}">{html.escape(_short_ref(m))}</th>' for m in models)
            + "<th>holds?</th></tr></thead>")
    out = [COMPACT_STYLE, LEGEND, f'<table class="sc-compact">{head}<tbody>']
    previous = None
    for _, r in table.iterrows():
        cid = str(r["claim"])
        label = breakable(cid)
        if cid in targets:
            href, title = targets[cid]
            label = f'<a href="{href}" title="{html.escape(title)}">{label}</a>'
        cells = [f'<td class="id">{label}</td>', f"<td>{html.escape(str(r['section']))}</td>",
                 f'<td class="st">{html.escape(str(r["statement"]))}</td>']
        if r["note"]:
            cells.append(f'<td class="n" colspan="{len(models) + 1}">{html.escape(str(r["note"]))}</td>')
        else:
            for m in models:
                tips = tuple(f"{m}, {q}?: {_tip(found.get((cid, m, q)), q, str(r[m]))}" for q in QUESTIONS)
                cells.append(f'<td class="b">{_badge_html(str(r[m]), (tips[0], tips[1]))}</td>'
                             if r[m] else '<td class="b"></td>')
            cells.append(f'<td class="t">{_tally_html(counts_of.get(cid, Counter()))}</td>')
        first = ' class="first"' if previous is not None and r["section"] != previous else ""
        previous = r["section"]
        out.append(f'<tr id="{r["anchor"]}"{first}>' + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    return "\n".join(out)
