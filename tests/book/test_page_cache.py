"""``build(reuse=True)`` copies a page whose inputs are unchanged instead of executing it
(``sinkframes_build.page_cache``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sinkframes import manifest
from sinkframes_build import batch, execute, page_cache
from tests.conftest import ROOT

M = manifest.load_manifest(ROOT / "notebooks" / "manifest.yml")
PAGE = M.page("softmax_geometry")
SUB = manifest.Manifest(root=M.root, back_matter=M.back_matter, pages=[PAGE])
WITH_SCORECARD = manifest.Manifest(root=M.root, back_matter=M.back_matter, pages=[PAGE, M.page("scorecard")])


def _key(template: Path, params: dict, root: Path = ROOT) -> dict:
    return page_cache.page_key(PAGE.id, PAGE.title, template, params, "smoke", root)


def test_the_key_changes_with_the_template_the_parameters_and_a_named_file(tmp_path):
    template = tmp_path / "page.ipynb"
    template.write_text("{}")
    data = tmp_path / "sentences.csv"
    data.write_text("text\na\n")
    params = {"n_sentences": 6, "csv_path": str(data)}
    first = _key(template, params)
    assert _key(template, dict(params)) == first  # the same inputs make the same key
    assert _key(template, {**params, "n_sentences": 7}) != first
    data.write_text("text\nb\n")
    assert _key(template, params) != first  # the file a parameter names enters by content
    data.write_text("text\na\n")
    template.write_text('{"cells": []}')
    assert _key(template, params) != first
    assert first["library"] == page_cache.library_digest() and first["environment"] == page_cache.environment_digest()


def test_a_page_computed_from_uncommitted_code_is_not_reused_once_it_is_committed(tmp_path, monkeypatch):
    template = tmp_path / "page.ipynb"
    template.write_text("{}")
    monkeypatch.setattr(page_cache, "library_has_local_changes", lambda: True)
    dirty = _key(template, {})
    monkeypatch.setattr(page_cache, "library_has_local_changes", lambda: False)
    assert _key(template, {}) != dirty


def _no_kernel(*args, **kwargs):
    raise AssertionError("a kernel was started")


def _only_the_scorecard(run_page):
    def run(page, *args, **kwargs):
        assert page.id == "scorecard", f"{page.id} was executed"
        return run_page(page, *args, **kwargs)

    return run


@pytest.mark.slow
def test_an_unchanged_page_is_copied_with_its_verdicts_and_rerun_only_when_asked(tmp_path, monkeypatch, capsys):
    first, second, third = tmp_path / "first", tmp_path / "second", tmp_path / "third"
    assert batch.build(profile="smoke", out_dir=str(first), html=False, manifest=SUB, reuse=True) == 0
    assert "ok in" in capsys.readouterr().out  # nothing stored yet: the page ran
    name = Path(PAGE.output).name
    saved = sorted(p.name for p in (first / "verdicts").glob("*.json"))
    assert saved == [f"{PAGE.id}.json"]
    assert not list(first.glob(".*running*"))  # the page's private verdict folder is gone

    real_run_page = execute.run_page
    monkeypatch.setattr(execute, "run_page", _only_the_scorecard(real_run_page))
    # the scorecard (which always runs) reads the verdicts the reused page brought back
    assert batch.build(profile="smoke", out_dir=str(second), html=False, manifest=WITH_SCORECARD, reuse=True) == 0
    out = capsys.readouterr().out
    assert f"{PAGE.id}: reused, its inputs are unchanged" in out and "scorecard: ok in" in out
    assert (second / name).read_bytes() == (first / name).read_bytes()
    assert (second / "verdicts" / saved[0]).read_bytes() == (first / "verdicts" / saved[0]).read_bytes()

    # a reused page is pinned again to the commit the build runs at (its library is the same)
    fourth = tmp_path / "fourth"
    monkeypatch.setattr(execute, "pinned_ref", lambda branch: "abc1234def")
    assert batch.build(profile="smoke", out_dir=str(fourth), html=False, manifest=SUB, reuse=True) == 0
    assert "@abc1234def" in (fourth / name).read_text() and "@abc1234def" not in (first / name).read_text()

    # without reuse the page executes (here the stand-in kernel refuses, so the build fails)
    import papermill

    monkeypatch.setattr(execute, "run_page", real_run_page)
    monkeypatch.setattr(papermill, "execute_notebook", _no_kernel)
    assert batch.build(profile="smoke", out_dir=str(third), html=False, manifest=SUB) == 1
    assert not (third / name).exists()


def test_a_page_that_failed_is_not_stored_and_leaves_no_verdicts(tmp_path, monkeypatch):
    import papermill

    monkeypatch.setattr(papermill, "execute_notebook", _no_kernel)
    assert batch.build(profile="smoke", out_dir=str(tmp_path), html=False, manifest=SUB, reuse=True) == 1
    assert not (page_cache.PageCache().dir).exists() or not any(page_cache.PageCache().dir.iterdir())
    assert not (tmp_path / "verdicts").exists() and not list(tmp_path.glob(".*running*"))


def _stored(tmp_path: Path) -> tuple[page_cache.PageCache, dict]:
    template = tmp_path / "page.ipynb"
    template.write_text("{}")
    nb, verdict = tmp_path / "out.ipynb", tmp_path / "softmax_geometry.json"
    nb.write_text('{"text": "looks **distributed**"}')
    verdict.write_text('{"verdicts": []}')
    cache, key = page_cache.PageCache(tmp_path / "cache"), _key(template, {})
    cache.store(key, nb, [verdict])
    return cache, key


def test_a_stored_page_is_reused_only_while_its_files_are_the_ones_stored(tmp_path, capsys):
    cache, key = _stored(tmp_path)
    got = cache.load(key)
    assert got is not None and b"distributed" in got.notebook and list(got.verdicts) == ["softmax_geometry.json"]
    folder = cache.dir / page_cache.digest_of(key)
    # an edited page (still valid JSON) is dropped, with a message naming it, and executed again
    (folder / "page.ipynb").write_text('{"text": "looks **centralized**"}')
    assert cache.load(key) is None and not folder.exists()
    assert f"dropped the stored copy {folder}" in capsys.readouterr().err
    # a lost verdict file: the same
    cache, key = _stored(tmp_path)
    (folder / "verdicts" / "softmax_geometry.json").unlink()
    assert cache.load(key) is None and not folder.exists()
    # a truncated page: the same, and the next store works again
    cache, key = _stored(tmp_path)
    (folder / "page.ipynb").write_bytes((folder / "page.ipynb").read_bytes()[:5])
    assert cache.load(key) is None
    cache, key = _stored(tmp_path)
    assert cache.load(key) is not None


def test_a_second_build_into_the_same_folder_is_refused_while_the_first_runs(tmp_path, capsys):
    with batch.build_lock(tmp_path):
        assert batch.build(profile="smoke", out_dir=str(tmp_path), html=False, manifest=SUB) == 1
    assert "another build is writing into" in capsys.readouterr().err


def test_a_parameter_name_the_template_does_not_declare_is_refused_before_any_kernel(tmp_path, monkeypatch, capsys):
    import dataclasses

    import papermill

    from sinkframes.book.params import unknown_parameters

    monkeypatch.setattr(papermill, "execute_notebook", _no_kernel)
    evil = "import os; os.system('touch pwned'); x"
    page = dataclasses.replace(PAGE, parameters={"smoke": {**PAGE.parameters["smoke"], evil: 1}})
    m = manifest.Manifest(root=M.root, back_matter=M.back_matter, pages=[page])
    assert batch.build(profile="smoke", out_dir=str(tmp_path), html=False, manifest=m) == 1
    err = capsys.readouterr().err
    assert "unknown parameter" in err and "written into the page as code" in err
    assert not (tmp_path / "pwned").exists() and not (ROOT / "pwned").exists()
    # every page of the manifest passes the check under every profile it lists
    for p in M.pages:
        for profile in p.parameters:
            assert unknown_parameters(p.params_for(profile), ROOT / p.template) == [], (p.id, profile)
