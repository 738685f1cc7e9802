"""The Colab flow in a fresh virtualenv at a Colab runtime's versions (``colab_flow.py``): several minutes, so
it runs only when asked (``make test-colab``, or ``SINKFRAMES_COLAB_FLOW=1 pytest tests/rehearsal``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import nbformat
import pytest

from tests.conftest import PAPER_CSV, ROOT

from .colab_flow import EDITS
from .conftest import rehearsal_env

pytestmark = [pytest.mark.slow, pytest.mark.skipif(os.environ.get("SINKFRAMES_COLAB_FLOW") != "1",
                                                   reason="the Colab flow builds a virtualenv: make test-colab")]


def test_the_template_runs_as_on_colab_with_the_readers_edits(standin_home, tmp_path):
    if not PAPER_CSV.exists():
        pytest.skip("no paper CSV")
    rehearsal_env(standin_home, tmp_path / "cache")  # keeps the CSV as the URL's download in that cache
    proc = subprocess.run([sys.executable, str(ROOT / "tests" / "rehearsal" / "colab_flow.py"), "--work",
                           str(tmp_path / "colab"), "--hf-home", str(standin_home), "--cache", str(tmp_path / "cache")],
                          capture_output=True, text=True, timeout=3000)
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1].removeprefix("[colab] "))
    assert report["before"] == report["after"]  # the install cell left torch, numpy, pandas, transformers alone
    nb = nbformat.read(report["page"], as_version=4)
    text = "\n".join(str(o.get("data", {}).get("text/markdown", "")) for c in nb.cells for o in c.get("outputs", []))
    assert f"{EDITS['n_sentences']} sentences from the `paper` set" in text
    assert all(f"`{m}`" in text for m in EDITS["models"]) and "meta-llama" not in text.split("Produced by")[1][:400]
