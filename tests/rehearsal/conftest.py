"""The stand-in hub, written once per test session, and how to run a build against it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import PAPER_CSV, ROOT

#: the rehearsal's sentence cap (SINKFRAMES_MAX_SENTENCES): a few sentences per page
REHEARSAL_SENTENCES = 3


@contextmanager
def _env(**values: str) -> Iterator[None]:
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture(scope="session")
def standin_home(tmp_path_factory) -> Path:
    """``HF_HOME`` of a stand-in hub holding every model of the paper and colab profiles (two layers each)."""
    from sinkframes_build.standin_hub import write_standin_hub

    home = tmp_path_factory.mktemp("standin-hf")
    write_standin_hub(home, layers=2)
    return home


def rehearsal_env(home: Path, cache: Path) -> dict[str, str]:
    """The environment of a rehearsal: the stand-in as the hub cache, no network, few sentences, a result cache
    of its own holding the paper's CSV as the download of the profiles' URL."""
    from sinkframes.corpus import PAPER_CSV_URL, keep_download

    if not PAPER_CSV.exists():
        pytest.skip(f"the paper's CSV is not at {PAPER_CSV}")
    with _env(SINKFRAMES_CACHE=str(cache)):
        keep_download(PAPER_CSV_URL, PAPER_CSV)
    env = dict(os.environ)
    env.update(HF_HOME=str(home), HF_HUB_OFFLINE="1", SINKFRAMES_CACHE=str(cache),
               SINKFRAMES_MAX_SENTENCES=str(REHEARSAL_SENTENCES), SINKFRAMES_ROOT=str(ROOT),
               PYTHONPATH=os.pathsep.join([str(ROOT / "lib"), env.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    env.pop("SINKFRAMES_VERDICTS_DIR", None)  # the build puts each page's verdicts beside its output
    return env


def run_build(profile: str, home: Path, work: Path, jobs: int = 2) -> subprocess.CompletedProcess[str]:
    """``python -m sinkframes_build build --profile <profile>`` into ``work/pages`` against the stand-in hub."""
    env = rehearsal_env(home, work / "cache")
    cmd = [sys.executable, "-m", "sinkframes_build", "build", "--profile", profile, "--out", str(work / "pages"),
           "--no-html", "--jobs", str(jobs)]
    return subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=1800)
