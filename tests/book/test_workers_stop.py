"""A build's worker processes stop when the build process dies, however it is killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT

SCRIPT = """
import os, sys, time
from sinkframes_build import executors

def work(path):
    with open(path, "w") as fh:
        fh.write(str(os.getpid()))
    time.sleep(120)

if __name__ == "__main__":
    pool = executors._pool(1, 1)
    pool.submit(work, sys.argv[1])
    time.sleep(120)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split()[2] == "Z")  # a zombie has stopped


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_a_worker_stops_when_the_build_process_is_killed(tmp_path, sig):
    script, pidfile = tmp_path / "build.py", tmp_path / "worker.pid"
    script.write_text(SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "lib") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    build = subprocess.Popen([sys.executable, str(script), str(pidfile)], env=env)
    try:
        deadline = time.time() + 120
        while not (pidfile.exists() and pidfile.read_text()) and time.time() < deadline:
            time.sleep(0.2)
        worker = int(pidfile.read_text())
        assert _alive(worker)
        build.send_signal(sig)
        build.wait(timeout=30)
        deadline = time.time() + 60
        while _alive(worker) and time.time() < deadline:
            time.sleep(0.2)
        assert not _alive(worker), "the worker went on after the build process died"
    finally:
        build.kill()
