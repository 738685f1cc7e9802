"""A gated repository without a login: the real loading path (transformers -> huggingface_hub -> HTTP) against a
local server that answers as the hub answers for a gated model, and the error says what to do."""

from __future__ import annotations

import http.server
import os
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest

from sinkframes.models.errors import hub_access_problem
from sinkframes_build.standin_hub import STANDINS
from tests.conftest import ROOT


class _GatedHub(http.server.BaseHTTPRequestHandler):
    """Every request is refused as huggingface.co refuses a gated file to a caller without access."""

    def _refuse(self) -> None:
        body = b'{"error": "Access to model is restricted. You must have access to it and be authenticated."}'
        self.send_response(401)
        self.send_header("X-Error-Code", "GatedRepo")
        self.send_header("X-Error-Message", "Access to model is restricted and you are not in the authorized list.")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    do_GET = do_HEAD = _refuse  # noqa: N815 - the handler's method names

    def log_message(self, *args: object) -> None:  # quiet
        return


@pytest.fixture()
def gated_hub() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _GatedHub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


LOAD = """
import sys
from sinkframes.models import ModelLoadError, load
try:
    load(sys.argv[1], device="cpu")
except ModelLoadError as exc:
    print(exc)
    sys.exit(3)
"""


@pytest.mark.parametrize("repo", ["meta-llama/Llama-3.2-1B", "google/gemma-7b", "mistralai/Mistral-7B-v0.1"])
def test_a_gated_repository_without_login_says_how_to_get_access(repo, gated_hub, tmp_path):
    assert STANDINS[repo].gated
    env = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")}
    env.update(HF_HUB_OFFLINE="0", HF_ENDPOINT=gated_hub, HF_HOME=str(tmp_path / "hf"),
               HF_HUB_ETAG_TIMEOUT="5", HF_HUB_DOWNLOAD_TIMEOUT="5", HF_HUB_DISABLE_IMPLICIT_TOKEN="1",
               PYTHONPATH=str(ROOT / "lib"))
    proc = subprocess.run([sys.executable, "-c", LOAD, repo], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3, proc.stderr[-2000:]
    message = proc.stdout
    assert f"{repo!r} is a gated repository" in message
    assert f"https://huggingface.co/{repo}" in message and "HF_TOKEN" in message and "hf auth login" in message


def test_other_hub_refusals_are_told_apart():
    class RepositoryNotFoundError(OSError):
        pass

    try:
        try:
            raise RepositoryNotFoundError("404 Client Error")
        except RepositoryNotFoundError as inner:
            raise OSError("not a valid model identifier") from inner
    except OSError as exc:
        problem = hub_access_problem("org/typo", exc)
    assert problem is not None and "no repository 'org/typo'" in problem
    assert hub_access_problem("org/name", OSError("connection reset")) is None
