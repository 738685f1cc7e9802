"""The map from the paper's figures and tables to the pages that remake them (sinkframes.report.reproduction_map)."""

from __future__ import annotations

import re

from sinkframes.paper import CLAIMS_BY_ID
from sinkframes.paper.claims import Claim
from sinkframes.report import reproduction_map as rm
from tests.conftest import ROOT


def _claim(cid: str, where: str, page: str = "topology", section: str = "G") -> Claim:
    return Claim(id=cid, section=section, where=where, subject="gemma", quantity="q", printed="p", notebook="",
                 page=page, measure="", why="", null="")


def test_items_are_read_from_where_figures_first_in_the_papers_numbering():
    claims = [_claim("a", "App. G, Table 21"), _claim("b", "Sec. 3.1, Fig. 1"), _claim("c", "App. G, Table 9"),
              _claim("d", "Sec. 5.3; App. H, Table 28"), _claim("e", "Sec. 2 (text only)")]
    found = rm.items(claims)
    assert list(found) == ["Figure 1", "Table 9", "Table 21", "Table 28"]
    assert [c.id for c in found["Table 21"]] == ["a"] and [c.id for c in found["Table 28"]] == ["d"]


def test_every_registry_figure_and_table_is_on_the_map_with_each_of_its_claims():
    found = rm.items()
    assert "Figure 1" in found and "Table 27" in found
    assert [c.id for c in found["Figure 1"]] == ["3.1.centralized", "3.1.distributed", "3.1.bidirectional"]
    text = rm.page_markdown()
    for item, claims in found.items():
        assert f">{item}</td>" in text
        for c in claims:
            if c.page:
                assert f"00_scorecard.html#claim-{re.sub(r'[^A-Za-z0-9_-]', '-', c.id)}\"" in text, c.id
    untestable = CLAIMS_BY_ID["G.mistral_connectivity"]
    assert not untestable.page and "not tested here: a Fiedler value" in text


def test_a_familys_claim_links_its_deciding_page_and_its_appendix():
    text = rm.page_markdown()
    row = next(line for line in text.splitlines() if "#claim-G-gemma_bos_heads" in line)
    assert '<a href="03_topology.html">3. Topology of attention</a>' in row
    assert 'href="appendix_g_gemma_mistral.html"' in row


def test_the_committed_page_is_current():
    # `python -m sinkframes_build toc --write` writes it; a registry change without it fails here
    assert (ROOT / rm.PAGE).read_text() == rm.page_markdown()
