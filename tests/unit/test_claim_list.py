"""Every bullet of the paper's claim list maps to registry claims, and no typed value differs from the printed one."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sinkframes.paper import CLAIMS, CLAIMS_BY_ID
from sinkframes.paper.claims import BULLETS, LATER, PAPER

CLAIM_LIST = Path(__file__).resolve().parents[3] / "shared" / "reference" / "paper_claims.txt"
NUMBER = re.compile(r"\d+(?:\.\d+)?")


def _bullets() -> list[str]:
    if not CLAIM_LIST.exists():
        pytest.skip(f"the paper's claim list is not at {CLAIM_LIST} (shared/ beside the checkout)")
    return [line[1:].strip() for line in CLAIM_LIST.read_text(encoding="utf-8").splitlines() if line.startswith("•")]


def _numbers(text: str) -> set[float]:
    return {float(x) for x in NUMBER.findall(text)}


def test_every_bullet_is_mapped_in_order_to_claims_that_exist():
    bullets = _bullets()
    assert len(BULLETS) == len(bullets)
    for (start, ids), text in zip(BULLETS, bullets, strict=True):
        assert text.startswith(start), (start, text[:80])
        assert ids, start
        assert all(i in CLAIMS_BY_ID for i in ids), [i for i in ids if i not in CLAIMS_BY_ID]


def test_every_claim_comes_from_a_bullet():
    mapped = {i for _, ids in BULLETS for i in ids}
    assert [c.id for c in CLAIMS if c.id not in mapped and c.source == PAPER] == []


def test_claims_of_later_work_name_their_source_and_stay_apart_from_the_papers():
    later = [c for c in CLAIMS if c.source != PAPER]
    assert later, "the registry keeps the later accounts the position chapter tests"
    assert all(c.section == LATER and c.where == f"arXiv {c.source}" for c in later)
    mapped = {i for _, ids in BULLETS for i in ids}
    assert not [c.id for c in later if c.id in mapped]


def test_every_number_typed_in_a_claim_is_printed_in_its_bullets():
    bullets = _bullets()
    text_of: dict[str, str] = {}
    for (_, ids), text in zip(BULLETS, bullets, strict=True):
        for i in ids:
            text_of[i] = text_of.get(i, "") + " " + text
    for c in CLAIMS:
        if c.source != PAPER:
            continue
        typed = _numbers(c.printed)
        assert typed <= _numbers(text_of[c.id]), (c.id, c.printed, sorted(typed - _numbers(text_of[c.id])))


def test_the_number_check_catches_a_rounded_value():
    assert not _numbers("13.33") <= _numbers("peaks in middle layers at 13.3343")
