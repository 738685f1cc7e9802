"""The book's HTML, built once per test session for the build test and the browser test."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT


@pytest.fixture(scope="session")
def built_html(tmp_path_factory) -> Path:
    """``jupyter-book build`` of the committed pages (as ``build_html`` runs it) into a scratch folder."""
    from sinkframes_build.assets import ensure_mathjax

    ensure_mathjax(ROOT)  # what build_html does first: MathJax into _assets/ (npm, once)
    out = tmp_path_factory.mktemp("book")
    exe = shutil.which("jupyter-book") or str(Path(sys.executable).with_name("jupyter-book"))
    proc = subprocess.run(
        [exe, "build", str(ROOT), "--path-output", str(out), "-W", "-n", "--keep-going"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return out / "_build" / "html"
