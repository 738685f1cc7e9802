"""`make lab` starts JupyterLab on the templates with the project's "sinkframes" kernel."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.loads(r.read())


@pytest.mark.slow
def test_make_lab_serves_the_templates_with_the_sinkframes_kernel(tmp_path):
    port, token = _free_port(), "sinkframes-test"
    args = f"--no-browser --port={port} --IdentityProvider.token={token} --ServerApp.ip=127.0.0.1"
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path / "rt"), "JUPYTER_CONFIG_DIR": str(tmp_path / "cfg")}
    proc = subprocess.Popen(
        ["make", "-s", "lab", f"LAB_ARGS={args}"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline, specs = time.monotonic() + 120, None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                specs = _get(f"{base}/api/kernelspecs?token={token}")
                break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(1)
        if specs is None:
            log = proc.stderr.read().decode()[-2000:] if proc.poll() is not None and proc.stderr else "still starting"
            pytest.fail(f"JupyterLab did not answer on {base}: {log}")
        assert "sinkframes" in specs["kernelspecs"]
        contents = _get(f"{base}/api/contents?token={token}")
        names = {item["name"] for item in contents["content"]}
        assert "01_reference_frames.ipynb" in names and "manifest.yml" in names  # the templates folder
        with urllib.request.urlopen(f"{base}/lab?token={token}", timeout=10) as r:
            assert r.status == 200
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
