"""The scorecard: every claim of the registry, both verdicts per model, from the pages' saved verdicts."""

from __future__ import annotations

import html
from collections import Counter

import pandas as pd

from ..book.manifest import Manifest, ManifestError, reader_manifest
from ..paper import APPENDIX_OF, CLAIMS, Claim
from ..paper.claims import LATER, PAPER
from ..verdicts import NOT_EVALUATED, QUESTIONS, STATUSES, PageVerdicts, Verdict

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
    return c.applies_to(str(rec["family"]), str(rec["paper_frame"]), bool(rec["causal"]))


def note_for(c: Claim, models: dict[str, dict], profile: str, ran: set[str]) -> str:
    """Why a claim has no verdict here, and what would evaluate it ('' when it has verdicts)."""
    if c.untestable:
        return f"not evaluated: {c.untestable}"
    if not any(_applies(c, rec) for rec in models.values()):
        return (f"not evaluated: no {c.subject} model in the `{profile}` profile; "
                f"`python -m sinkframes build --profile paper --pages {c.page}` evaluates it")
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
    "table.scorecard td,table.scorecard th{padding:3px 6px;vertical-align:top;overflow-wrap:anywhere}"
    "table.scorecard td{max-width:13em}table.scorecard td:first-child{max-width:17em}"
    "table.scorecard td.note{max-width:none;color:#555;padding-top:0}"
    "table.scorecard .where{color:#555}</style>"
)


def _verdict_cell(reproduced: str, holds: str) -> str:
    """One model's two verdicts on a claim, one per line (an en dash when the claim does not concern it)."""
    if reproduced.strip() in ("-", "") and holds.strip() in ("-", ""):
        return "–"
    return f"reproduced: {html.escape(reproduced)}<br>holds: {html.escape(holds)}"


def html_table(table: pd.DataFrame, manifest: Manifest | None = None) -> str:
    """The scorecard as an HTML table, one block per section: per claim, where the paper makes it and what it
    reports (linked to the page that tests it), then one column per model with both verdicts; a note, when
    there is one, on a row of its own. Pages as ``manifest`` lists them (by default the checkout's manifest
    or the library's packaged copy)."""
    manifest = manifest or reader_manifest()
    if manifest is None:
        raise ManifestError("no manifest: neither a checkout nor the library's packaged copy (reinstall sinkframes)")
    titles = {p.id: (p.output.split("/")[-1].replace(".ipynb", ".html"), p.title) for p in manifest.pages}
    # claims of appendices E-J link to their family page, the others to the section page that tests them
    appendix_page = {APPENDIX_OF[str(p.parameters["offline"]["family"])]: p.id for p in manifest.pages
                     if "family" in p.parameters.get("offline", {})}
    models = list(dict.fromkeys(c.rsplit(" ", 1)[0] for c in table.columns if c.endswith("?")))
    head = ["claim, and what the paper reports", *models]
    out = [SCORECARD_STYLE, '<table class="scorecard">',
           "<thead><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr></thead><tbody>"]
    for section, g in table.groupby("section", sort=False):
        label = "Accounts published after the paper" if section == LATER else f"Section {section}"
        out.append(f'<tr><th colspan="{len(head)}">{html.escape(label)}</th></tr>')
        for _, r in g.iterrows():
            target = titles.get(appendix_page.get(str(r["section"]), r["page"]))
            claim = html.escape(r["claim"])
            if target:
                claim = (f'<a href="{target[0]}#what-the-evidence-supports" title="{html.escape(target[1])}">'
                         f"{claim}</a>")
            claim += (f'<br><span class="where">{html.escape(str(r["where"]))}; {html.escape(str(r["about"]))}'
                      f"</span><br>{html.escape(str(r['quantity']))}: <i>{html.escape(str(r['paper']))}</i>")
            cells = [claim, *(_verdict_cell(str(r[f"{m} reproduced?"]), str(r[f"{m} holds?"])) for m in models)]
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


#: the paper's central claims, and the later accounts the book weighs them against, in the order the box lists
#: them: (line, the claims whose verdicts fill it)
CENTRAL: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("The frame type follows the family the paper assigns (Sec. 3.1)",
     ("3.1.centralized", "3.1.distributed", "3.1.bidirectional")),
    ("Decoders give 30-40 % of their attention to the first token (Sec. 1)", ("1.bos_share",)),
    ("Centralized frames make star-like threshold graphs (Sec. 5.1)", ("5.1.star",)),
    ("Removing the sink lowers the KL in every region of a centralized model (Sec. 5.1)", ("5.1.kl_negative",)),
    ("Fisher information sits in the early layers of a centralized model (Sec. 5.1)", ("5.1.fisher_early",)),
    ("Removing the sink harms the model more than removing another key (Sec. 1)", ("1.removal_hurts",)),
    ("Reference frames emerge early in training (App. B)", ("B.early_emergence",)),
    ("Changing the position encoding at fixed weights changes the frame (Sec. 3.4)", ("3.4.encoding_decides",)),
    ("The sink follows position 0 of the rotary code (Sec. 3.3-3.4)", ("3.4.rope_origin",)),
    ("... or the first physical token (arXiv 2509.21042)", ("later.first_physical",)),
)
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
        claim = by_id[ids[0]]
        link = f" ([evidence]({pages[claim.page]}#what-the-evidence-supports))" if claim.page in pages else ""
        said = "paper" if claim.source == PAPER else f"arXiv {claim.source}"
        printed = " / ".join(by_id[i].printed for i in ids)
        body = "; ".join(cells) if cells else "no model of this profile is tested on it"
        lines.append(f"- **{text}** ({said}: *{printed}*){link}: {body}.")
    return "\n".join(lines)


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
        "(a structureless null meets the claim too) and the rest are inconclusive or have no corrected measure."
    )
