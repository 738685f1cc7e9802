"""When the registry's rules changed, said plainly: the rule-change log, its version, and each page's account.

The log (``data/rule_changes.json``) lists every change to the rules of the claims registry in order: the
claims added, changed or removed (read from git history by ``bench/rule_history.py`` for the registry file),
changes to how every verdict is inferred (the tests against the nulls), and changes to a measure behind some
claims. Each entry says when, what, why and which verdicts moved (where that was recorded). The last entry
holds the :func:`fingerprint` of the rules it leaves, so a rule changed without a log entry is caught by a
test, and every page's saved verdicts record the version they were decided with.

It also holds when each page first showed results, so that a page can say which of its claims had their rule
fixed before its first results and which were revised after them (:func:`history_note`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from .claims import CLAIMS, CLAIMS_BY_ID

#: how verdicts are inferred from estimates and nulls (``verdicts.rules.decide_all``); a change to it is an entry
#: of the log about every claim
INFERENCE = "difference-from-each-null/1; headline-claims-on-two-draws/1; headline-claims-on-two-halves/1"
EVERY_CLAIM = "every claim"


def rule_of(claim: Any) -> dict[str, str]:
    """What decides a claim: its measure, rule, parameters, subject and comparison (works on any version of
    :class:`~.claims.Claim`, for the history script)."""
    return {"measure": claim.measure, "rule": claim.rule,
            "params": json.dumps(dict(claim.params), sort_keys=True, default=str), "subject": claim.subject,
            "compares": json.dumps(dict(getattr(claim, "compares", {}) or {}), sort_keys=True, default=str)}


def fingerprint() -> str:
    """A short hash of every testable claim's rule and of :data:`INFERENCE`: what the log's last entry must hold."""
    body = {c.id: rule_of(c) for c in CLAIMS if c.testable}
    text = json.dumps({"rules": body, "inference": INFERENCE}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Change:
    """One entry of the log: ``claims`` is a list of ids or :data:`EVERY_CLAIM`."""

    version: int
    date: str  # ISO date and time
    kind: str  # "registry" (rules added, changed or removed), "inference", "measure"
    added: tuple[str, ...]
    changed: tuple[str, ...]
    removed: tuple[str, ...]
    title: str  # a few words, as a page names the change
    what: str
    why: str
    moved: str
    commit: str = ""

    def touches(self, claim_id: str) -> bool:
        return EVERY_CLAIM in self.changed or claim_id in self.added or claim_id in self.changed


@cache
def _raw() -> dict[str, Any]:
    return dict(json.loads(resources.files("sinkframes.data").joinpath("rule_changes.json").read_text()))


def changes() -> list[Change]:
    """The log, oldest first, each entry numbered (its version)."""
    return [Change(i + 1, e["date"], e["kind"], tuple(e.get("added", ())), tuple(e.get("changed", ())),
                   tuple(e.get("removed", ())), e["title"], e["what"], e["why"], e.get("moved", "not recorded"),
                   e.get("commit", "")) for i, e in enumerate(_raw()["changes"])]


def logged_fingerprint() -> str:
    """The fingerprint the log's last entry leaves the rules with."""
    return str(_raw()["fingerprint"])


def version() -> int:
    """The registry's version: the number of the log's last entry."""
    return len(changes())


def stamp() -> dict[str, Any]:
    """What a page saves beside its verdicts: the registry version and fingerprint they were decided with."""
    return {"version": version(), "fingerprint": fingerprint()}


def first_results(page: str) -> str:
    """When ``page`` first showed results (ISO date and time; '' for a page the log does not know)."""
    return str(_raw()["first_results"].get(page, ""))


def history_note(claim_ids: list[str]) -> str:
    """One paragraph, true of the claims' own history: how many of ``claim_ids`` had their rule written before
    their page first showed results and kept since, which were written after, and which were revised after (each
    revision with its date and title)."""
    ids = [c for c in dict.fromkeys(claim_ids) if c in CLAIMS_BY_ID and CLAIMS_BY_ID[c].testable]
    if not ids:
        return ""
    log = changes()
    kept, written_after = [], []
    revised: dict[int, list[str]] = {}
    for cid in ids:
        first = first_results(CLAIMS_BY_ID[cid].page)
        entries = [e for e in log if e.touches(cid)]
        written = next((e for e in entries if cid in e.added), None)
        late = [e for e in entries if first and e.date > first]
        if written is not None and first and written.date > first:
            written_after.append(cid)
        for e in late:
            if e is not written:
                revised.setdefault(e.version, []).append(cid)
        if not late:
            kept.append(cid)
    by_version = {e.version: e for e in log}

    def names(cids: list[str]) -> str:
        return "all of them" if len(cids) == len(ids) else ", ".join(f"`{c}`" for c in cids)

    parts = [f"Rules from the claims registry (`sinkframes.paper.claims`), version {version()} of its rule-change "
             f"log (listed on the scorecard). Of the {len(ids)} claims here,"]
    parts.append(f"{len(kept)} had their rule written before their page first showed results and kept since;"
                 if kept else "none kept the rule it had when its page first showed results;")
    if written_after:
        parts.append(f"written after their page's first results: {names(written_after)};")
    for v, cids in sorted(revised.items()):
        e = by_version[v]
        parts.append(f"revised on {e.date[:10]} ({e.title}): {names(cids)};")
    return " ".join(parts).rstrip(";") + "."


def log_table() -> Any:
    """The log as a table (one row per entry) for the scorecard."""
    import pandas as pd

    rows = []
    for e in changes():
        claims = "every claim" if EVERY_CLAIM in e.changed else "; ".join(
            x for x in (f"added {', '.join(e.added)}" if e.added else "",
                        f"changed {', '.join(e.changed)}" if e.changed else "",
                        f"removed {', '.join(e.removed)}" if e.removed else "") if x)
        rows.append({"version": e.version, "date": e.date[:10], "kind": e.kind, "change": e.title, "claims": claims,
                     "what": e.what,
                     "why": e.why, "verdicts moved": e.moved, "commit": e.commit})
    return pd.DataFrame(rows)
