"""``build --jobs 2`` runs independent pages in two worker processes and makes the same pages as ``--jobs 1``."""

from __future__ import annotations

import pytest

from sinkframes import manifest
from sinkframes_build import batch, compare
from tests.conftest import ROOT

M = manifest.load_manifest(ROOT / "notebooks" / "manifest.yml")
PAGES = ["reference_frames", "appendix_i_phi", "appendix_j_pythia"]


SUB = manifest.Manifest(root=M.root, back_matter=M.back_matter, pages=[M.page(p) for p in PAGES])


@pytest.fixture(scope="module")
def one_by_one(tmp_path_factory):
    """The pages run one after another (``--jobs 1``), for comparison."""
    out = tmp_path_factory.mktemp("one")
    assert batch.build(profile="smoke", out_dir=str(out), html=False, manifest=SUB, jobs=1) == 0
    return out


def _same_pages(a, b) -> None:
    for page in SUB.pages:
        name = page.output.split("/")[-1]
        assert compare.compare_notebooks(a / name, b / name) == [], name


@pytest.mark.slow
def test_two_workers_make_the_same_pages_as_one(one_by_one, tmp_path, capsys):
    assert batch.build(profile="smoke", out_dir=str(tmp_path), html=False, manifest=SUB, jobs=2) == 0
    assert "in 2 worker processes" in capsys.readouterr().out
    _same_pages(one_by_one, tmp_path)


@pytest.mark.slow
def test_the_ray_executor_makes_the_same_pages_on_a_local_ray(one_by_one, tmp_path, capsys):
    ray = pytest.importorskip("ray", reason="the Ray executor is an optional extra: pip install 'sinkframes[ray]'")

    assert not ray.is_initialized()
    assert batch.build(profile="smoke", out_dir=str(tmp_path), html=False, manifest=SUB, executor="ray") == 0
    assert "pages as Ray tasks" in capsys.readouterr().out
    assert not ray.is_initialized()  # the build shut down the Ray it started
    _same_pages(one_by_one, tmp_path)


def test_an_unknown_executor_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="unknown executor 'dask'"):
        batch.build(profile="smoke", out_dir=str(tmp_path), html=False, manifest=SUB, executor="dask")


def test_jobs_below_one_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="jobs must be at least 1"):
        batch.build(profile="smoke", out_dir=str(tmp_path), html=False, manifest=SUB, jobs=0)
