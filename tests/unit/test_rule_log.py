"""The rule-change log: every rule change is logged, pages say what their history was, saved verdicts are current."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sinkframes.paper import CLAIMS
from sinkframes.paper import rule_log as R

BOOK = Path(__file__).resolve().parents[2] / "book"


def test_the_logs_last_entry_holds_the_rules_as_they_are():
    # a rule (or the inference) changed without an entry in data/rule_changes.json fails here
    assert R.fingerprint() == R.logged_fingerprint(), "log the change in sinkframes/data/rule_changes.json"
    log = R.changes()
    assert [e.version for e in log] == list(range(1, len(log) + 1)) and R.version() == len(log)
    assert [e.date for e in log] == sorted(e.date for e in log)
    assert all(e.title and e.what and e.why and e.kind in ("registry", "inference", "measure") for e in log)


def test_the_fingerprint_moves_with_a_rule(monkeypatch: pytest.MonkeyPatch):
    from dataclasses import replace

    before = R.fingerprint()
    c = next(c for c in CLAIMS if c.rule == "above")
    moved = tuple(replace(x, params={**x.params, "threshold": x.params["threshold"] + 0.01}) if x is c else x
                  for x in CLAIMS)
    monkeypatch.setattr(R, "CLAIMS", moved)
    assert R.fingerprint() != before


def test_every_testable_claim_was_written_by_some_entry():
    added = {cid for e in R.changes() for cid in e.added}
    assert {c.id for c in CLAIMS if c.testable} <= added


def test_a_page_says_which_rules_came_after_its_first_results():
    note = R.history_note(["3.4.encoding_decides", "5.4.entropy"])
    assert "written after their page's first results: `5.4.entropy`" in note  # the registry came after chapter 6
    assert "(the frame instrument): `3.4.encoding_decides`" in note
    assert "(tests of difference against the nulls): all of them" in note
    assert "before any result" not in note


def test_committed_verdicts_were_decided_with_the_current_registry():
    files = sorted((BOOK / "verdicts").glob("*.json"))
    if not files:
        pytest.skip("no committed verdicts beside this copy of the tests (an installed package)")
    stale = [f.name for f in files if json.loads(f.read_text()).get("registry", {}).get("fingerprint")
             != R.fingerprint()]
    assert not stale, f"re-execute these pages with the current registry (version {R.version()}): {stale}"
