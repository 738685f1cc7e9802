"""The installed run's verdict check (tests/installed/run_templates.py), which stands in for the smoke test's in CI."""

from __future__ import annotations

import importlib.util
import json

from sinkframes import manifest
from tests.conftest import ROOT

M = manifest.load_manifest()


def _runner():
    spec = importlib.util.spec_from_file_location("run_templates", ROOT / "tests" / "installed" / "run_templates.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _save(folder, page_id, profile="smoke"):
    folder.mkdir(exist_ok=True)
    (folder / f"{page_id}.json").write_text(json.dumps({"profile": profile}))


def test_the_installed_run_checks_the_verdicts_every_page_saves(tmp_path):
    check = _runner().verdict_problems
    savers = [p.id for p in M.pages if not p.run_last and "family" not in p.params_for("smoke")]
    folder = tmp_path / "verdicts"
    for page_id in savers:
        _save(folder, page_id)
    _save(folder, "appendix_h_encoders")
    assert check(M.pages, folder) == []
    _save(folder, savers[0], profile="custom")  # a page run with its manifest parameters labelled custom
    assert check(M.pages, folder) == [f"{savers[0]}: its verdicts are labelled 'custom', not 'smoke'"]
    _save(folder, savers[0])
    (folder / f"{savers[1]}.json").unlink()  # a section page that saved nothing
    assert len(check(M.pages, folder)) == 1 and "expected every section page's" in check(M.pages, folder)[0]
    _save(folder, savers[1])
    (folder / "appendix_h_encoders.json").unlink()
    assert check(M.pages, folder) == ["appendix_h_encoders saved no verdicts"]
