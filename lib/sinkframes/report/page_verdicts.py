"""A page's verdicts for its reader: the result box at the top and the verdict table at the end.

Both are written from the page's verdicts only (never from typed numbers). The box (:func:`result_box`) is a
MyST admonition of at most three bullets: the claims each question supports or refutes, and the strongest
refutation. The table (:func:`verdict_html`) has one row per verdict: the claim (linked to its row of the
scorecard, and carrying the anchor the scorecard links back to), the question, the model, our estimate, the
rule in words, the nulls' values and the verdict, with one sentence of explanation where the verdict has a reason.
"""

from __future__ import annotations

import contextlib
import html
import math
import posixpath
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..paper import CLAIMS, CLAIMS_BY_ID, Claim
from ..paper.claims import PAPER
from ..verdicts.rules import NUMERIC_TOL, describe
from ..verdicts.verdict import NOT_SUPPORTED, QUESTIONS, STATUSES, SUPPORTED, Estimate, Verdict
from .scorecard import BADGES, claim_anchor
from .tables import breakable

#: what each question means, as the box and the table say it
QUESTION_WORDS = {"reproduced": "the authors' computation", "holds": "the corrected computation"}
#: the box's title, and what it says when no claim of the registry is decided on the page
BOX_TITLE = "What this page finds"
NO_VERDICTS = "No claim of the registry concerns these models here."
#: claims listed per verdict in one line of the box before the rest are counted
BOX_CLAIMS = 4
_ORDER = {c.id: i for i, c in enumerate(CLAIMS)}


# ------------------------------------------------------------------------------------------------ numbers in words
#: what a page prints for a statistic that could not be computed (NaN)
NOT_COMPUTABLE = "not computable"


def number_text(x: float | None) -> str:
    """An estimate's number as a page prints it: three significant digits (whole above 1000), a value within
    round-off of zero (``NUMERIC_TOL``) as ``0``, and the non-finite values as words (a NaN is a statistic that
    could not be computed: a constant series, no data)."""
    if x is None or math.isnan(x):
        return NOT_COMPUTABLE
    if math.isinf(x):
        return "infinity" if x > 0 else "minus infinity"
    if abs(x) < NUMERIC_TOL:
        return "0"
    return f"{x:.3g}" if abs(x) < 1000 else f"{x:.0f}"


def param_text(x: Any) -> str:
    """A rule's parameter at the precision it was written with: the fewest decimals (up to six) that give the
    number up to float round-off (``0.7899999999999999`` -> ``0.79``), non-finite values as words."""
    if isinstance(x, str):
        return x
    x = float(x)
    if math.isnan(x) or math.isinf(x):
        return number_text(x)
    for d in range(7):
        if abs(round(x, d) - x) <= 1e-6 * max(1.0, abs(x)):
            return f"{round(x, d) + 0.0:.{d}f}"
    return f"{x:.6g}"


def estimate_text(e: Estimate | None) -> str:
    """``value [low, high]`` in :func:`number_text`'s words, the category of a classification, or
    ``undetermined`` (with the estimate's detail when it has one)."""
    if e is None:
        return ""
    if e.undetermined:
        return f"undetermined ({e.detail})" if e.detail else "undetermined"
    if isinstance(e.value, str):
        return e.value
    value = number_text(float(e.value))
    if value == NOT_COMPUTABLE or e.low is None or e.high is None:
        return value
    low, high = number_text(float(e.low)), number_text(float(e.high))
    if NOT_COMPUTABLE in (low, high):
        return f"{value} (interval {NOT_COMPUTABLE})"
    return value if low == high == value else f"{value} [{low}, {high}]"


def parts_text(e: Estimate | None) -> str:
    """``label: value [low, high]`` per part of a part-wise estimate, ``; ``-separated ('' without parts)."""
    if e is None or not e.parts:
        return ""
    return "; ".join(f"{label}: {estimate_text(p)}" for label, p in e.part_estimates())


# ---------------------------------------------------------------------------------------------- rules in words
def _range_text(low: Any, high: Any) -> str:
    lo, hi = float(low), float(high)
    if math.isinf(lo) and lo < 0 and not math.isinf(hi):
        return f"at most {param_text(hi)}"
    if math.isinf(hi) and hi > 0 and not math.isinf(lo):
        return f"at least {param_text(lo)}"
    return f"within [{param_text(lo)}, {param_text(hi)}]"


_SIMPLE = {
    "above": lambda p: f"above {param_text(p['threshold'])}",
    "below": lambda p: f"below {param_text(p['threshold'])}",
    "within": lambda p: _range_text(p["low"], p["high"]),
    "at_least": lambda p: f"at least {param_text(p['share'])}",
    "equals": lambda p: f"equals {p['expected']}",
    "flip_within": lambda p: f"sign change between thresholds within [{param_text(p['low'])}, "
                             f"{param_text(p['high'])}]",
}


def rule_text(rule: str, params: Mapping[str, Any]) -> str:
    """A claim's rule in words at the precision of its parameters, applied to the estimate's interval:
    ``within [0.91, 1.01]``, ``above 0.5``, ``below 0 in every part``, ``early at least 0; middle at most 0``."""
    if rule in _SIMPLE:
        return str(_SIMPLE[rule](params))
    if rule.startswith("every_") and rule[len("every_"):] in _SIMPLE:
        base = _SIMPLE[rule[len("every_"):]]({k: v for k, v in params.items() if k != "at"})
        at = params.get("at")
        return f"{base} in each of {', '.join(str(a) for a in at)}" if at else f"{base} in every part"
    if rule == "each_within":
        return "; ".join(f"{label} {_range_text(lo, hi)}" for label, (lo, hi) in params["ranges"].items())
    return describe(rule, params)  # a rule added later: the registry's own wording


def claim_rule_text(claim: Claim) -> str:
    """:func:`rule_text` of a registry claim ('' for a claim without a rule)."""
    return rule_text(claim.rule, claim.params) if claim.rule else ""


# ---------------------------------------------------------------------------------------------------- the box
def _by_claim(found: Sequence[Verdict], question: str) -> dict[str, Counter]:
    """Per claim (registry order), how many models got each verdict on ``question``."""
    out: dict[str, Counter] = {}
    for v in sorted(found, key=lambda v: _ORDER.get(v.claim, len(_ORDER))):
        if v.question == question:
            out.setdefault(v.claim, Counter())[v.status] += 1
    return out


def _models(k: int, n: int) -> str:
    """``k`` of a claim's ``n`` models in words: ``its only model``, ``both models``, ``all 3 models``,
    ``1 of 3 models``."""
    if k < n:
        return f"{k} of {n} models"
    return "its only model" if n == 1 else "both models" if n == 2 else f"all {n} models"


def _share(k: int, n: int) -> str:
    """How many of a claim's models, in the box's parentheses: '' for the only one, ``both``, ``all 3``,
    ``1 of 3``."""
    if n == 1:
        return ""
    return f" ({_models(k, n).removesuffix(' models')})"


#: a claim's subject (``Claim.subject``) as a reader names it; a subject not listed reads as it is stored
SUBJECT_WORDS = {
    "all": "all models", "centralized": "centralized models", "distributed": "distributed models",
    "bidirectional": "bidirectional models", "centralized vs distributed vs bidirectional": "the three frame types",
    "llama": "Llama", "qwen": "Qwen2.5", "mistral": "Mistral", "gemma": "Gemma", "pythia": "Pythia",
    "pythia sizes": "Pythia's sizes", "bert": "BERT", "xlm-roberta": "XLM-RoBERTa", "phi": "Phi-2",
    "rotary": "rotary models", "decoders": "decoders", "training": "training", "controlled": "models trained here",
    "controlled-text": "text models trained here", "controlled-decoder": "decoders trained here",
    "controlled-encoder": "encoders trained here",
}


def claim_words(claim_id: str) -> str:
    """The claim in a few words for a reader: what it is about and of whom, as the registry states it
    (``frame type (centralized models)``); the id itself where the registry does not hold it."""
    claim = CLAIMS_BY_ID.get(claim_id)
    if claim is None:
        return claim_id
    return f"{claim.quantity} ({SUBJECT_WORDS.get(claim.subject, claim.subject)})"


def claim_link(claim_id: str) -> str:
    """The claim in words (:func:`claim_words`) linked to its row of the page's verdict table, the id in the link's
    title (inline HTML, so Markdown keeps it)."""
    return (f'<a href="#{claim_anchor(claim_id)}" title="claim {html.escape(claim_id)}">'
            f"{html.escape(claim_words(claim_id))}</a>")


def _listed(items: list[str]) -> str:
    if len(items) <= BOX_CLAIMS:
        return ", ".join(items)
    return ", ".join(items[:BOX_CLAIMS]) + f" and {len(items) - BOX_CLAIMS} more"


def question_line(found: Sequence[Verdict], question: str) -> str:
    """One bullet of the box: the claims ``question`` finds supported and not supported, each with on how many
    of its models (the most models first, :data:`BOX_CLAIMS` named), then how many claims got each other
    verdict ('' when no verdict answers ``question``)."""
    counts = _by_claim(found, question)
    if not counts:
        return ""
    models = len({v.model for v in found if v.question == question})
    groups = []
    for status in STATUSES:
        named = [(cid, c[status], sum(c.values())) for cid, c in counts.items() if c[status]]
        if not named:
            continue
        if status in (SUPPORTED, NOT_SUPPORTED):
            named.sort(key=lambda x: (-x[1] / x[2], -x[1]))  # stable: the registry's order breaks ties
            groups.append(f"*{status}*: {_listed([claim_link(cid) + _share(k, n) for cid, k, n in named])}")
        else:
            groups.append(f"*{status}* on {len(named)} claim{'s' if len(named) != 1 else ''}")
    head = (f"**{question.capitalize()}?** ({QUESTION_WORDS[question]}; {len(counts)} "
            f"claim{'s' if len(counts) != 1 else ''} on {models} model{'s' if models != 1 else ''})")
    return f"{head} {'; '.join(groups)}."


def _refutation_rank(cid: str, holds: Counter, reproduced: Counter) -> tuple:
    """Sort key of a refuted claim: the share of models the corrected computation refutes it on, their number,
    then the same for the authors' computation, then the registry order."""
    def share(c: Counter) -> float:
        return c[NOT_SUPPORTED] / sum(c.values()) if c else 0.0

    return (-share(holds), -holds[NOT_SUPPORTED], -share(reproduced), -reproduced[NOT_SUPPORTED],
            _ORDER.get(cid, len(_ORDER)))


def _said(c: Claim) -> str:
    return "paper" if c.source == PAPER else f"arXiv {c.source}"


def strongest_refutation(found: Sequence[Verdict]) -> str:
    """One bullet of the box: the claim refuted on the largest share of models (the corrected computation
    first, the authors' to break ties or when the corrected one refutes nothing), with its rule and one
    model's estimate; '' when no verdict is *not supported*."""
    holds, reproduced = _by_claim(found, "holds"), _by_claim(found, "reproduced")
    refuted = [cid for cid in {**holds, **reproduced} if holds.get(cid, Counter())[NOT_SUPPORTED]
               or reproduced.get(cid, Counter())[NOT_SUPPORTED]]
    if not refuted:
        return ""
    cid = min(refuted, key=lambda c: _refutation_rank(c, holds.get(c, Counter()), reproduced.get(c, Counter())))
    claim = CLAIMS_BY_ID[cid]
    said = {}
    for question, counts in (("holds", holds.get(cid)), ("reproduced", reproduced.get(cid))):
        if counts and counts[NOT_SUPPORTED]:
            said[question] = _models(counts[NOT_SUPPORTED], sum(counts.values()))
    if len(said) == 2 and said["holds"] == said["reproduced"]:
        where = f"{said['holds']} by both computations"
    else:
        where = " and on ".join(f"{on} by {QUESTION_WORDS[q]}" for q, on in said.items())
    first = next(v for q in ("holds", "reproduced") for v in found
                 if v.claim == cid and v.question == q and v.status == NOT_SUPPORTED)
    ours = (f"; our estimate on `{first.model}` by {QUESTION_WORDS[first.question]}: {estimate_text(first.estimate)}"
            if first.estimate else "")
    return (f"**Refuted on the most models**: {claim_link(cid)} ({html.escape(claim.quantity)}; {_said(claim)}: "
            f"*{html.escape(claim.printed)}*) is not supported on {where}; rule: "
            f"{claim_rule_text(claim)}{ours}.")


def result_box(found: Sequence[Verdict], empty: str = NO_VERDICTS, title: str = BOX_TITLE) -> str:
    """The page's result box as MyST Markdown: an admonition of at most three bullets written from ``found``
    (the claims supported and refuted on each question, then the claim refuted on the most models), or ``empty`` when
    the page decided no claim. Render it from a cell whose ``mystnb.markdown_format`` is ``myst``."""
    lines = [question_line(found, "holds"), question_line(found, "reproduced"), strongest_refutation(found)]
    if found and not any(v.status == NOT_SUPPORTED for v in found):
        lines[2] = "**No refutation**: no claim tested here is *not supported* on any model."
    bullets = [f"- {line}" for line in lines if line] or [f"- {empty}"]
    return "\n".join([f":::{{admonition}} {title}", ":class: tip", "", *bullets, ":::"])


# -------------------------------------------------------------------------------------------------- the table
VERDICTS_STYLE = (
    "<style>table.pv{font-size:0.8em;border-collapse:collapse;width:100%}"
    "table.pv td,table.pv th{padding:2px 5px;vertical-align:top;text-align:left;overflow-wrap:break-word}"
    "table.pv thead th{border-bottom:1px solid #999}table.pv tr.first td{border-top:1px solid #bbb}"
    "table.pv td.c{min-width:8em;max-width:14em}table.pv td.v{white-space:nowrap}"
    "table.pv .q,table.pv .parts{color:#555;font-size:0.92em}table.pv td.why,table.pv td.n{color:#555;"
    "font-style:italic;padding-top:0}table.pv tr:target td{background:#fff3b0}"
    ".sc-ok{color:#1a7f37}.sc-no{color:#c62828}.sc-nd{color:#b26a00}.sc-inc{color:#5a6b8c}.sc-ne{color:#888}"
    "</style>"
)
_BADGE_CLASS = {"supported": "sc-ok", "not supported": "sc-no", "not diagnostic": "sc-nd", "inconclusive": "sc-inc",
                "not evaluated": "sc-ne"}
_HEAD = ("claim", "question", "model", "ours [interval]", "rule", "null", "verdict")


def reason_sentence(reason: str) -> str:
    """A verdict's reason as one short sentence: the tolerance's own explanation (the registry's, shown on the
    scorecard) is left out, the first letter capitalized ('' for no reason)."""
    text = re.sub(r"hangs on the tolerance \([^()]*\)", "hangs on the book's tolerance", reason.strip())
    return text[:1].upper() + text[1:] + ("" if not text or text.endswith(".") else ".")


def null_cell(v: Verdict) -> str:
    """Every null run beside the model with its value (HTML-escaped, one per line)."""
    nulls = v.extra.get("nulls") or []
    if not nulls and v.null is not None:
        return html.escape(estimate_text(v.null))
    return "<br>".join(f"{html.escape(str(n['name']))}: {html.escape(estimate_text(Estimate(**n['estimate'])))}"
                       + _difference_note(n) for n in nulls)


#: how the test of difference against a null reads in a table cell
DIFFERENCE_WORDS = {True: "model differs", False: "model not distinguishable", None: "difference not testable"}


def _difference_note(n: dict[str, Any]) -> str:
    """The model-against-null test under a null's value ('' for verdicts stored before it existed)."""
    if "differs" not in n:
        return ""
    return (f'<br><span class="parts">{DIFFERENCE_WORDS[n["differs"]]}: '
            f"{html.escape(str(n.get('difference', '')))}</span>")


def _estimate_cell(e: Estimate | None) -> str:
    if e is None:
        return "–"
    tip = ", ".join(x for x in (e.interval, f"n = {e.n}" if e.n else "", e.detail if not e.undetermined else "") if x)
    body = html.escape(estimate_text(e))
    if e.parts:
        body += f'<br><span class="parts">{html.escape(parts_text(e))}</span>'
    return f'<span title="{html.escape(tip)}">{body}</span>' if tip else body


def _claim_cell(claim_id: str, scorecard: str) -> str:
    c = CLAIMS_BY_ID[claim_id]
    link = (f'<a href="{html.escape(scorecard)}#{claim_anchor(claim_id)}" title="this claim on the scorecard">'
            f"{breakable(claim_id)}</a>")
    return (f'{link}<br><span class="q">{html.escape(c.quantity)}; {_said(c)}: '
            f"<i>{html.escape(c.printed)}</i></span>")


def _verdict_rows(claim_id: str, verdicts: list[Verdict], scorecard: str) -> list[str]:
    """The rows of one claim: one per question and model, the claim and its rule on the first, each reason on
    a row of its own below its verdict."""
    rows = []
    order = list(QUESTIONS)
    verdicts = sorted(verdicts, key=lambda v: order.index(v.question))  # stable: models keep their order
    for i, v in enumerate(verdicts):
        first = i == 0
        new_question = first or verdicts[i - 1].question != v.question
        cells = [f'<td class="c">{_claim_cell(claim_id, scorecard)}</td>' if first else '<td class="c"></td>',
                 f"<td>{v.question}?</td>" if new_question else "<td></td>",
                 f"<td><code>{breakable(v.model)}</code></td>",
                 f"<td>{_estimate_cell(v.estimate)}</td>",
                 f"<td>{html.escape(claim_rule_text(CLAIMS_BY_ID[claim_id]))}</td>" if first else "<td></td>",
                 f"<td>{null_cell(v)}</td>",
                 f'<td class="v"><span class="{_BADGE_CLASS.get(v.status, "")}">'
                 f"{html.escape(BADGES.get(v.status, v.status))}</span></td>"]
        attrs = f' id="{claim_anchor(claim_id)}" class="first"' if first else ""
        rows.append(f"<tr{attrs}>{''.join(cells)}</tr>")
        why = reason_sentence(v.reason)
        if why:
            why = html.escape(why, quote=False)
            rows.append(f'<tr><td></td><td class="why" colspan="{len(_HEAD) - 1}">{why}</td></tr>')
    return rows


def verdict_html(found: Sequence[Verdict], scorecard: str = "00_scorecard.html",
                 untested: Iterable[tuple[str, str]] = ()) -> str:
    """The page's verdicts as one compact HTML table (columns :data:`_HEAD`), a block of rows per claim in the
    registry's order; the block's first row carries the claim's anchor (:func:`~.scorecard.claim_anchor`) and
    links the claim to its row of the ``scorecard`` page. ``untested``: ``(claim id, why)`` of claims the page
    shows without a verdict, each on a row of its own with its anchor."""
    by: dict[str, list[Verdict]] = {}
    for v in sorted(found, key=lambda v: _ORDER.get(v.claim, len(_ORDER))):
        by.setdefault(v.claim, []).append(v)
    out = [VERDICTS_STYLE, '<table class="pv"><thead><tr>' + "".join(f"<th>{h}</th>" for h in _HEAD)
           + "</tr></thead><tbody>"]
    for claim_id, verdicts in by.items():
        out += _verdict_rows(claim_id, verdicts, scorecard)
    for claim_id, why in untested:
        out.append(f'<tr id="{claim_anchor(claim_id)}" class="first"><td class="c">'
                   f'{_claim_cell(claim_id, scorecard)}</td><td class="n" colspan="{len(_HEAD) - 1}">'
                   f"not evaluated: {html.escape(why)}</td></tr>")
    out.append("</tbody></table>")
    return "\n".join(out)


def scorecard_href(profile: str) -> str:
    """The scorecard's HTML file relative to the folder a page of ``profile`` is written to
    (``00_scorecard.html``, or ``../00_scorecard.html`` from an optional profile's folder)."""
    from ..manifest import OPTIONAL_PROFILES, ManifestError, reader_manifest

    scorecard = "book/00_scorecard.ipynb"
    manifest = reader_manifest()
    if manifest is not None:
        with contextlib.suppress(ManifestError):
            scorecard = manifest.page("scorecard").output
    folder = OPTIONAL_PROFILES.get(profile, posixpath.dirname(scorecard))
    return posixpath.relpath(scorecard.replace(".ipynb", ".html"), folder)
