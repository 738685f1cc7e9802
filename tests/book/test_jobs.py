"""``build --jobs 2`` runs independent pages in two worker processes and makes the same pages as ``--jobs 1``."""

from __future__ import annotations

import pytest

from sinkframes.book import batch, compare, manifest
from tests.conftest import ROOT

M = manifest.load_manifest(ROOT / "notebooks" / "manifest.yml")
PAGES = ["reference_frames", "appendix_i_phi", "appendix_j_pythia"]


@pytest.mark.slow
def test_two_workers_make_the_same_pages_as_one(tmp_path, capsys):
    sub = manifest.Manifest(root=M.root, back_matter=M.back_matter, pages=[M.page(p) for p in PAGES])
    one, two = tmp_path / "one", tmp_path / "two"
    assert batch.build(profile="smoke", out_dir=str(one), html=False, manifest=sub, jobs=1) == 0
    assert batch.build(profile="smoke", out_dir=str(two), html=False, manifest=sub, jobs=2) == 0
    assert "in 2 worker processes" in capsys.readouterr().out
    for page in sub.pages:
        name = page.output.split("/")[-1]
        assert compare.compare_notebooks(one / name, two / name) == [], name


def test_jobs_below_one_is_an_error(tmp_path):
    sub = manifest.Manifest(root=M.root, back_matter=M.back_matter, pages=[M.page("appendix_i_phi")])
    with pytest.raises(ValueError, match="jobs must be at least 1"):
        batch.build(profile="smoke", out_dir=str(tmp_path), html=False, manifest=sub, jobs=0)
