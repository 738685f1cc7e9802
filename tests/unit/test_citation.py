"""CITATION.cff: valid Citation File Format fields, the package's version, and the paper as the preferred citation."""

from __future__ import annotations

import yaml

from sinkframes import __version__
from tests.conftest import ROOT


def test_the_citation_file_names_this_version_and_the_paper():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0" and cff["type"] == "software"
    assert {"message", "title", "authors", "license", "repository-code"} <= set(cff)
    assert str(cff["version"]) == __version__, "bump CITATION.cff with the package version"
    paper = cff["preferred-citation"]
    assert paper["title"] == "What are you sinking? A geometric approach on attention sink"
    assert [a["family-names"] for a in paper["authors"]] == ["Ruscio", "Nanni", "Silvestri"]
    assert {"type": "other", "value": "arXiv:2508.02546"} in paper["identifiers"]
