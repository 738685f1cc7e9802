"""The verdict checks a smoke run of every page makes (``sinkframes_build.page_checks``): the smoke test in
tests/book and the installed run (tests/installed/run_templates.py), which stands in for it in CI, both call them."""

from __future__ import annotations

import json

from sinkframes import manifest
from sinkframes_build import page_checks

M = manifest.load_manifest()


def _save(folder, page_id, profile="smoke"):
    folder.mkdir(exist_ok=True)
    (folder / f"{page_id}.json").write_text(json.dumps({"profile": profile}))


def test_the_savers_are_the_pages_of_the_books_chapters():
    # the chapters are the manifest's two parts of numbered pages; the overview and the family appendices save none
    chapters = {p.id for p in M.pages if p.part in ("Paper sections", "Beyond the paper")}
    assert len(chapters) == 9 and page_checks.verdict_savers(M.pages) == chapters


def test_the_verdicts_every_page_saves_are_checked(tmp_path):
    check = page_checks.verdict_problems
    savers = sorted(page_checks.verdict_savers(M.pages))
    folder = tmp_path / "verdicts"
    for page_id in savers:
        _save(folder, page_id)
    _save(folder, "appendix_h_encoders")
    assert check(M.pages, folder) == []
    _save(folder, savers[0], profile="custom")  # a page run with its manifest parameters labelled custom
    assert check(M.pages, folder) == [f"{savers[0]}: its verdicts are labelled 'custom', not 'smoke'"]
    assert page_checks.saved_verdict_problems(savers[0], folder) == check(M.pages, folder)
    _save(folder, savers[0])
    (folder / f"{savers[1]}.json").unlink()  # a section page that saved nothing
    assert len(check(M.pages, folder)) == 1 and "expected every section page's" in check(M.pages, folder)[0]
    assert page_checks.saved_verdict_problems(savers[1], folder) == [f"{savers[1]} saved no verdicts"]
    _save(folder, savers[1])
    (folder / "appendix_h_encoders.json").unlink()
    assert check(M.pages, folder) == ["appendix_h_encoders saved no verdicts"]
