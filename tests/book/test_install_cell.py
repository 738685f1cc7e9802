"""The Colab install cell: one setting, pinned in executed pages, silent outside Colab, loud on failure."""

from __future__ import annotations

import re
import subprocess
import sys
import types

import nbformat
import pytest

from sinkframes import manifest
from sinkframes_build import install
from tests.conftest import ROOT

M = manifest.load_manifest(ROOT / "notebooks" / "manifest.yml")
URL, BRANCH = install.repository(ROOT)


def _install_cell(path) -> str:
    nb = nbformat.read(path, as_version=4)
    return next(c.source for c in nb.cells if c.cell_type == "code" and c.source.startswith(install.MARKER))


@pytest.mark.parametrize("page", M.pages, ids=lambda p: p.id)
def test_templates_install_the_configured_repository(page):
    assert _install_cell(ROOT / page.template) == install.install_cell_source(URL, BRANCH), (
        "the install cell does not follow _config.yml: run `python -m sinkframes_build toc --write`"
    )


@pytest.mark.parametrize("page", M.pages, ids=lambda p: p.id)
def test_executed_pages_are_pinned_to_a_commit(page):
    src = _install_cell(ROOT / page.output)
    assert re.search(rf"sinkframes @ git\+{re.escape(URL)}@[0-9a-f]{{7,40}}\"", src), src


def _run(src: str, monkeypatch, colab: bool, result: int = 0) -> list[list[str]]:
    calls: list[list[str]] = []

    def check_call(cmd):
        calls.append(cmd)
        if result:
            raise subprocess.CalledProcessError(result, cmd)
        return 0

    monkeypatch.setattr(subprocess, "check_call", check_call)
    if colab:
        monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    else:
        monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    exec(compile(src, "<install cell>", "exec"), {})
    return calls


def test_the_cell_does_nothing_outside_colab(monkeypatch):
    assert _run(install.install_cell_source(URL, "abc1234"), monkeypatch, colab=False) == []


def test_on_colab_it_installs_the_pinned_ref_and_a_failure_stops_the_run(monkeypatch):
    src = install.install_cell_source("https://example.org/fork/book", "abc1234")
    calls = _run(src, monkeypatch, colab=True)
    assert calls == [
        [sys.executable, "-m", "pip", "install", "-q", "sinkframes @ git+https://example.org/fork/book@abc1234"]
    ]
    with pytest.raises(subprocess.CalledProcessError):
        _run(src, monkeypatch, colab=True, result=1)


def test_a_notebook_without_an_install_cell():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 1")]
    assert install.set_install_cell(nb, URL, "main", required=False) is False
    with pytest.raises(ValueError, match="no install cell"):
        install.set_install_cell(nb, URL, "main")
