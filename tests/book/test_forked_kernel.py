"""Page kernels forked from a zygote (``book.forked_kernel``): the same state and outputs as an ordinary
kernel, signals and kills reach the forked process, and anything the zygote cannot vouch for gets an
ordinary kernel."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time

import nbformat
import pytest

from sinkframes.book import forked_kernel as fk

pytestmark = pytest.mark.skipif(not fk.enabled(), reason="forked kernels need fork and Unix sockets")

#: a small preload, so that the tests start their zygote in a few seconds
MODULES = ("numpy", "pandas", "matplotlib", "matplotlib.pyplot")

_STATE = """
import json, os, sys
preloaded = "pandas" in sys.modules
import numpy as np, pandas as pd, matplotlib, matplotlib.pyplot as plt
options = ["display.max_columns", "display.width", "display.max_rows", "display.precision",
           "display.expand_frame_repr", "display.notebook_repr_html"]
state = {"pandas": {k: repr(pd.get_option(k)) for k in options},
         "rc": {k: repr(v) for k, v in sorted(matplotlib.rcParams.items())},
         "backend": matplotlib.get_backend(), "numpy": repr(np.get_printoptions()),
         "argv0": os.path.basename(sys.argv[0]), "argv": sys.argv[1:2] + sys.argv[3:], "xoptions": sorted(sys._xoptions),
         "cwd": os.getcwd(), "path0": sys.path[0], "env": sorted(k for k in os.environ if not k.startswith("JPY_"))}
print(json.dumps({"preloaded": preloaded, "ppid": os.getppid(), "pid": os.getpid(), "state": state}))
"""


@contextlib.contextmanager
def _zygote(monkeypatch):
    """A zygote started from inside the test (its environment is compared with the kernels': pytest changes
    some variables between a fixture's set-up and the test)."""
    z = fk.Zygote()
    z.launch(MODULES)
    try:
        assert z.wait(120) is not None
        monkeypatch.setenv(fk.ENV, z.path)
        yield z
    finally:
        z.stop()


def _notebook(path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(_STATE),
                nbformat.v4.new_code_cell("pd.DataFrame(np.arange(30).reshape(2, 15) * 10**6)"),
                nbformat.v4.new_code_cell("plt.plot([0, 1, 4], [1, 3, 2]);")]
    nbformat.write(nb, path)


def _run(tmp_path, name: str, forked: bool) -> nbformat.NotebookNode:
    import papermill as pm

    src, out = tmp_path / "page.ipynb", tmp_path / f"{name}.ipynb"
    if not src.exists():
        _notebook(src)
    extra = {"kernel_manager_class": fk.kernel_manager_class()} if forked else {}
    pm.execute_notebook(str(src), str(out), kernel_name="python3", progress_bar=False, cwd=str(tmp_path),
                        shutdown_kernel="immediate", **extra)
    return nbformat.read(out, as_version=4)


def _state(nb: nbformat.NotebookNode) -> dict:
    return json.loads(nb.cells[0].outputs[0]["text"])


def test_a_forked_kernel_is_in_the_state_of_an_ordinary_one(tmp_path, monkeypatch):
    """After the same imports: the same pandas display options (pandas chose them at import, in the zygote,
    which is not a kernel), matplotlib settings and backend, numpy print options, command line, interpreter
    options, directory, path and environment; the same table text and the same figure bytes."""
    with _zygote(monkeypatch) as zygote:
        zygote_pid = zygote.proc.pid
        forked = _run(tmp_path, "forked", True)
        ordinary = _run(tmp_path, "ordinary", False)
    f, o = _state(forked), _state(ordinary)
    assert f["preloaded"] and f["ppid"] == zygote_pid  # really forked, with the modules already imported
    assert not o["preloaded"] and o["ppid"] != zygote_pid
    assert f["state"] == o["state"]
    table = [c.outputs[0]["data"]["text/plain"] for c in (forked.cells[1], ordinary.cells[1])]
    # wider than the console: a kernel wraps all 15 columns, a terminal's pandas would cut some out ("...")
    assert table[0] == table[1] and "..." not in table[0] and "\\" in table[0]
    images = [next(x["data"]["image/png"] for x in c.outputs if "image/png" in x.get("data", {}))
              for c in (forked.cells[2], ordinary.cells[2])]
    assert images[0] == images[1]


def test_an_environment_the_zygote_did_not_import_with_gets_an_ordinary_kernel(tmp_path, monkeypatch, capfd):
    with _zygote(monkeypatch) as zygote:
        zygote_pid = zygote.proc.pid
        monkeypatch.setenv("SINKFRAMES_TEST_ONLY_VARIABLE", "1")
        state = _state(_run(tmp_path, "refused", True))
    assert not state["preloaded"] and state["ppid"] != zygote_pid
    assert "environment differs in SINKFRAMES_TEST_ONLY_VARIABLE" in capfd.readouterr().err


def test_the_environment_may_differ_only_in_per_kernel_variables():
    own = {"PATH": "/bin", "MPLBACKEND": fk.INLINE_BACKEND, "A": "1"}
    assert fk.env_problem(own, {"PATH": "/bin", "A": "1", "JPY_PARENT_PID": "7",
                                "SINKFRAMES_VERDICTS_DIR": "/tmp/v"}) is None
    assert fk.env_problem(own, {"PATH": "/usr/bin", "A": "1"}) == "environment differs in PATH"
    assert fk.env_problem(own, {"PATH": "/bin"}) == "environment differs in A"
    assert fk.env_problem(own, {"PATH": "/bin", "A": "1", "MPLBACKEND": "agg"}) == "environment differs in MPLBACKEND"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


async def _kernel_pid_then(action: str, zygote: fk.Zygote) -> tuple[int, dict]:
    """Start a forked kernel, take its pid, then interrupt a long cell (``interrupt``) or kill the launcher."""
    km = fk.kernel_manager_class()(kernel_name="python3")
    await km.start_kernel()
    kc = km.client()
    kc.start_channels()
    try:
        await kc.wait_for_ready(timeout=60)
        seen: list[dict] = []
        await kc.execute_interactive("import os; print(os.getpid())", timeout=60, output_hook=seen.append)
        pid = int(next(m["content"]["text"] for m in seen if m["msg_type"] == "stream"))
        result: dict = {}
        if action == "interrupt":
            msg_id = kc.execute("import time; time.sleep(60)")
            await asyncio.sleep(1.0)
            t0 = time.time()
            await km.interrupt_kernel()
            while True:
                msg = await kc.get_shell_msg(timeout=20)
                if msg["parent_header"].get("msg_id") == msg_id:
                    result = {"status": msg["content"]["status"], "ename": msg["content"].get("ename"),
                              "seconds": time.time() - t0}
                    break
        await km.shutdown_kernel(now=True)
        return pid, result
    finally:
        kc.stop_channels()


def test_an_interrupt_reaches_the_forked_kernel(monkeypatch):
    with _zygote(monkeypatch) as zygote:
        pid, result = asyncio.run(_kernel_pid_then("interrupt", zygote))
    assert result["status"] == "error" and result["ename"] == "KeyboardInterrupt" and result["seconds"] < 15


def test_killing_the_launcher_ends_the_forked_kernel(monkeypatch):
    with _zygote(monkeypatch) as zygote:
        pid, _ = asyncio.run(_kernel_pid_then("kill", zygote))
        deadline = time.time() + 10
        while _alive(pid) and time.time() < deadline:
            time.sleep(0.1)
        assert not _alive(pid)
        assert zygote.proc.poll() is None  # the zygote goes on serving


def test_the_zygote_ends_with_its_stdin_and_leaves_no_socket():
    z = fk.Zygote()
    z.launch(("json",))
    path = z.wait(60)
    assert path is not None and os.path.exists(path)
    proc = z.proc
    z.stop()
    assert proc.poll() is not None and not os.path.exists(path) and not os.path.exists(os.path.dirname(path))


def test_without_a_zygote_the_launcher_runs_the_ordinary_command(monkeypatch, capfd):
    import subprocess
    import sys

    monkeypatch.delenv(fk.ENV, raising=False)
    done = subprocess.run(fk.wrap_command([sys.executable, "-c", "print('ordinary')"]), capture_output=True,
                          text=True, timeout=60, env=os.environ.copy())
    assert done.returncode == 0 and done.stdout.strip() == "ordinary"
