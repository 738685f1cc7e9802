"""The answer's sentences follow from the verdicts they read, by rules fixed in ``report.answer``."""

from __future__ import annotations

import re

from sinkframes import verdicts as V
from sinkframes.paper import CLAIMS_BY_ID
from sinkframes.report import answer
from sinkframes.verdicts.store import PageVerdicts

E = V.Estimate


def _saved(*vs: V.Verdict) -> dict[str, PageVerdicts]:
    return {"p": PageVerdicts("p", "offline", list(vs))}


def test_every_claim_the_answer_reads_is_in_the_registry():
    ids = [c.claim for q in answer.QUESTIONS for c in q.clauses] + list(answer.SIGNATURES)
    assert all(i in CLAIMS_BY_ID and CLAIMS_BY_ID[i].testable for i in ids), [i for i in ids if i not in CLAIMS_BY_ID]


def test_a_sentence_counts_the_models_that_support_each_claim_and_changes_with_them():
    ok = [V.Verdict("1.removal_hurts", m, "holds", V.SUPPORTED, E(1.0)) for m in "abc"]
    text = answer.answer(_saved(*ok))
    link = '<a href="#claim-1-removal_hurts">removing the sink hurts more than removing another key</a>'
    assert f"{link} in all 3 models" in text
    flipped = [*ok[:2], V.Verdict("1.removal_hurts", "c", "holds", V.NOT_SUPPORTED, E(0.0))]
    assert "in 2 of 3" in answer.answer(_saved(*flipped))
    assert "**Does the typology hold?** No model of this profile was tested on it." in text


def test_the_signatures_sentence_names_what_holds_in_every_model_and_counts_the_rest():
    vs = [V.Verdict("3.3.small_key", m, "holds", V.SUPPORTED, E(0.5)) for m in "ab"]
    vs += [V.Verdict("5.4.entropy", "a", "holds", V.SUPPORTED, E(-1.0)),
           V.Verdict("5.4.entropy", "b", "holds", V.NOT_SUPPORTED, E(0.1)),
           V.Verdict("5.1.star", "a", "holds", V.NOT_DIAGNOSTIC, E(0.7))]
    text = answer.answer(_saved(*vs))
    assert ("Of 3 tested, 1 hold in every model (<a href=\"#claim-3-3-small_key\">the sink's small key</a>), "
            "1 in some, 0 in none; 1 cannot be told from their nulls") in text
    words = re.sub(r"\(#[^)]*\)", "", text).split()
    assert len(words) < 200


def test_the_introduction_holds_the_answer_of_the_committed_verdicts():
    """``make book`` writes the answer into ``book/intro.md`` from the verdicts it saved: the committed copy is the
    answer of the committed verdicts, its links lead to the scorecard's rows."""
    from pathlib import Path

    from sinkframes.report.answer import SCORECARD_HTML, intro_block
    from sinkframes.verdicts import load_all

    root = Path(__file__).resolve().parents[2] / "book"
    block = intro_block(load_all(root / "verdicts", "offline"))
    assert block in (root / "intro.md").read_text(), "run `make book` (it writes the answer into book/intro.md)"
    assert f'<a href="{SCORECARD_HTML}#claim-3-1-centralized">' in block


def test_the_answer_is_written_between_its_markers_and_a_file_without_them_is_refused(tmp_path):
    import pytest

    from sinkframes.report.answer import INTRO_END, INTRO_START, write_intro

    page = tmp_path / "intro.md"
    page.write_text(f"# Title\n\n{INTRO_START}\nold answer\n{INTRO_END}\n\nmore\n")
    assert write_intro(page, _saved()) is True
    text = page.read_text()
    assert "old answer" not in text and text.startswith("# Title") and text.endswith("more\n")
    assert "**Does the typology hold?**" in text
    assert write_intro(page, _saved()) is False  # nothing changed: the file is left alone
    (tmp_path / "bare.md").write_text("# Title\n")
    with pytest.raises(ValueError, match="has no answer block"):
        write_intro(tmp_path / "bare.md", _saved())
