"""The book's answer to the paper's questions, in four sentences generated from the saved verdicts.

Each sentence answers one question the paper asks and reads a fixed list of claims (:data:`QUESTIONS`, written
before any page ran with it); each claim enters as the count of models whose corrected computation supports it,
so a sentence changes when its verdicts change and speaks of whatever models the profile ran. Each sentence
links to the scorecard rows it reads.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from ..verdicts import NOT_EVALUATED, SUPPORTED, PageVerdicts, Verdict
from .inference import MIXED, group_status

#: the claims whose group verdicts count as the paper's geometric signatures (sections 3.2-5.4)
SIGNATURES: dict[str, str] = {
    "3.2.near_vertex": "attention near a simplex vertex", "3.3.small_key": "the sink's small key",
    "3.3.aligned_key": "its key aligned with the queries", "5.1.star": "star-like graphs",
    "5.1.corr_negative": "a negative Fiedler correlation", "5.1.kl_negative": "KL lowered by sink removal",
    "5.1.fisher_early": "early Fisher information", "5.2.kl_three_phase": "a three-phase KL profile",
    "5.2.sign_flip": "a Fiedler sign flip",
    "5.3.early_topology": "encoders' early topology", "5.3.connectivity_u": "a U-shaped connectivity",
    "5.3.kl_u": "a U-shaped KL profile", "5.4.entropy": "falling value entropy",
    "5.4.magnitude": "growing value magnitude", "5.4.alignment": "value alignment",
}


@dataclass(frozen=True)
class Clause:
    """One claim inside a sentence: what it says in words, and the anchor of its scorecard row."""

    claim: str
    words: str


@dataclass(frozen=True)
class Question:
    """One sentence of the answer: the question, and the claims it reads (in order)."""

    title: str
    clauses: tuple[Clause, ...]


QUESTIONS: tuple[Question, ...] = (
    Question("Do sinks exist and matter?", (
        Clause("1.removal_hurts", "removing the sink hurts more than removing another key"),
        Clause("later.noop_sinks", "its value is a near no-op"),
        Clause("1.bos_share", "the first token takes 30-40 % of attention"),
    )),
    Question("Does the typology hold?", (
        Clause("3.1.centralized", "RoPE decoders read centralized"),
        Clause("3.1.distributed", "modified-RoPE decoders distributed"),
        Clause("3.1.bidirectional", "absolute-position encoders bidirectional"),
    )),
    Question("Does the position encoding decide?", (
        Clause("3.4.encoding_decides", "changing it at fixed weights changes the frame"),
        Clause("3.4.rope_origin", "shuffled ids move the sink to id 0"),
        Clause("later.first_physical", "it stays on the first physical token"),
        Clause("3.4.encoding_decides.trained", "training alike with another encoding gives another frame"),
        Clause("3.4.sink_forms.text", "on natural text only rotary models form a sink"),
    )),
)


def _holds(saved: dict[str, PageVerdicts]) -> dict[str, list[Verdict]]:
    out: dict[str, list[Verdict]] = {}
    for pv in saved.values():
        for v in pv.verdicts:
            if v.question == "holds" and v.status != NOT_EVALUATED:
                out.setdefault(v.claim, []).append(v)
    return out


def tally(found: list[Verdict]) -> str:
    """In how many of the models a claim was decided on it holds (corrected computation), in words."""
    n = len(found)
    ok = sum(v.status == SUPPORTED for v in found)
    if n == 1:
        return f"in {ok} of 1"
    if ok == n:
        return "in both models" if n == 2 else f"in all {n} models"
    if ok == 0:
        return "in neither model" if n == 2 else f"in none of {n}"
    return f"in {ok} of {n}"


def _link(text: str, claim_id: str, page: str = "") -> str:
    """An HTML link to the scorecard row of ``claim_id``, within the scorecard (``page`` empty) or from elsewhere in
    the book (``page``: the scorecard's HTML). The rows are HTML anchors, which a MyST cross-reference
    (``[text](#anchor)``) cannot find, so the link is HTML in both places."""
    from .scorecard import claim_anchor

    return f'<a href="{page}#{claim_anchor(claim_id)}">{text}</a>'


def _sentence(q: Question, found: dict[str, list[Verdict]], page: str = "") -> str:
    parts = [f"{_link(c.words, c.claim, page)} {tally(found[c.claim])}" for c in q.clauses if found.get(c.claim)]
    if not parts:
        return f"**{q.title}** No model of this profile was tested on it."
    return f"**{q.title}** " + "; ".join(parts) + "."


def _signatures(found: dict[str, list[Verdict]], page: str = "") -> str:
    groups = {cid: found[cid] for cid in SIGNATURES if found.get(cid)}
    if not groups:
        return "**Which geometric signatures hold?** No model of this profile was tested on them."
    verdict = {}
    for cid, vs in groups.items():
        verdict[cid] = group_status(v.status for v in vs)
    count = Counter(verdict.values())
    held = [cid for cid, s in verdict.items() if s == SUPPORTED]
    rest = len(groups) - count.get(SUPPORTED, 0) - count.get(MIXED, 0) - count.get("not supported", 0)
    return (f"**Which geometric signatures hold?** Of {len(groups)} tested, {count.get(SUPPORTED, 0)} hold in every "
            "model (" + ", ".join(_link(SIGNATURES[c], c, page) for c in held) + f"), {count.get(MIXED, 0)} in some, "
            f"{count.get('not supported', 0)} in none; {rest} cannot be told from their nulls or are inconclusive."
            if held else
            f"**Which geometric signatures hold?** Of {len(groups)} tested, none holds in every model; "
            f"{count.get(MIXED, 0)} hold in some, {count.get('not supported', 0)} in none; {rest} cannot be told from "
            "their nulls or are inconclusive.")


def answer(saved: dict[str, PageVerdicts], page: str = "") -> str:
    """The answer (markdown): one sentence per question, generated from the *holds?* verdicts of ``saved``; its
    links lead to the scorecard's rows (``page``: the scorecard's HTML, for a page other than the scorecard)."""
    found = _holds(saved)
    first, typology, encoding = QUESTIONS
    return "\n\n".join([_sentence(first, found, page), _signatures(found, page), _sentence(typology, found, page),
                        _sentence(encoding, found, page)])


#: the lines between which ``book/intro.md`` holds the answer (:func:`write_intro`)
INTRO_START = "<!-- the answer, generated from the saved verdicts (sinkframes.report.answer.write_intro) -->"
INTRO_END = "<!-- end of the answer -->"
#: the scorecard's HTML, as the introduction links to it (both are built into the ``book/`` folder of the site)
SCORECARD_HTML = "00_scorecard.html"


def intro_block(saved: dict[str, PageVerdicts]) -> str:
    """What :func:`write_intro` puts between the markers: the answer, its links to the scorecard's rows."""
    return f"{INTRO_START}\n\n{answer(saved, SCORECARD_HTML)}\n\n{INTRO_END}"


def write_intro(path: Path, saved: dict[str, PageVerdicts]) -> bool:
    """Replace the answer between the markers of ``path`` (the book's introduction) with :func:`intro_block`;
    ``True`` when the text changed. A file without the markers is an error naming them."""
    text = path.read_text()
    if INTRO_START not in text or INTRO_END not in text:
        raise ValueError(f"{path} has no answer block: put the lines {INTRO_START!r} and {INTRO_END!r} where the "
                         "answer goes")
    head, rest = text.split(INTRO_START, 1)
    tail = rest.split(INTRO_END, 1)[1]
    new = head + intro_block(saved) + tail
    if new != text:
        path.write_text(new)
    return new != text


#: the title of the box that opens the scorecard
ANSWER_TITLE = "The answer, from the verdicts below"


def admonition(saved: dict[str, PageVerdicts]) -> str:
    """:func:`answer` in the box that opens the scorecard (a MyST admonition)."""
    return f":::{{admonition}} {ANSWER_TITLE}\n:class: tip\n\n" + answer(saved) + "\n:::"
