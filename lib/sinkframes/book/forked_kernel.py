"""Page kernels forked from a process that has already imported the heavy libraries.

A fresh page kernel spends 8-10 s on one core importing torch, transformers and its model code, pandas,
scipy and matplotlib before its first cell computes anything, and ``make book`` runs 14 pages. A build
worker therefore keeps one *zygote*: a process that imports those libraries once, computes nothing, and
forks a kernel for each page. A forked kernel is the state a fresh kernel reaches after the same imports
(the modules are loaded, nothing else ran), so a page computes the same outputs.

How a page gets one. The build gives papermill :func:`kernel_manager_class`, whose kernel command is this
module's launcher wrapped around the usual ``ipykernel_launcher`` command. The launcher, a small process
that jupyter_client starts, signals and kills like any kernel, sends the command, its environment, its
working directory and its stdin/stdout/stderr to the zygote over a Unix socket; the zygote forks a child
that runs ipykernel with them. The launcher forwards signals to the child (an interrupt reaches the
page) and exits with the child's status. Killing the launcher closes its connection, and the zygote then
kills the child.

The launcher starts an ordinary kernel instead whenever no zygote is set (``SINKFRAMES_KERNEL_ZYGOTE``
unset), it cannot be reached, or the environment of the request differs from the zygote's in anything a
library may have read while the zygote imported it (only the variables jupyter_client sets per kernel
and the page's verdict folder may differ). ``SINKFRAMES_FORK_KERNELS=0`` turns the zygote off.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import struct
import sys
from pathlib import Path
from typing import Any

#: the zygote's socket, for the launchers of the kernels it should fork
ENV = "SINKFRAMES_KERNEL_ZYGOTE"
#: ``0`` keeps every page kernel an ordinary one
SWITCH_ENV = "SINKFRAMES_FORK_KERNELS"
#: variables that may differ between a kernel's environment and the zygote's: jupyter_client's per-kernel
#: ones, the page's verdict folder (``verdicts.store``) and the backend ipykernel itself would choose
PER_KERNEL_ENV = ("JPY_PARENT_PID", "JPY_SESSION_NAME", "SINKFRAMES_VERDICTS_DIR", "MPLBACKEND", ENV)
#: the backend ipykernel chooses when none is set; the zygote sets it before importing matplotlib
INLINE_BACKEND = "module://matplotlib_inline.backend_inline"
#: what the zygote imports: the libraries every page loads, and the model code of the models the books use
PRELOAD = (
    "numpy", "pandas", "torch", "scipy.linalg", "scipy.sparse", "scipy.sparse.linalg", "scipy.stats",
    "matplotlib", "matplotlib.pyplot", "seaborn", "networkx", "gudhi", "tokenizers",
    "transformers",
    "transformers.models.llama.modeling_llama", "transformers.models.gemma3.modeling_gemma3",
    "transformers.models.bert.modeling_bert", "transformers.models.qwen2.modeling_qwen2",
    "transformers.models.phi.modeling_phi", "transformers.models.gpt_neox.modeling_gpt_neox",
    "transformers.models.xlm_roberta.modeling_xlm_roberta", "transformers.models.mistral.modeling_mistral",
    "IPython.display",  # not ipykernel.kernelapp: its traits read JPY_PARENT_PID at import
    "sinkframes.book.page", "sinkframes.report", "sinkframes.paper", "sinkframes.extraction",
    "sinkframes.analyses.frames", "sinkframes.analyses.softmax_geometry", "sinkframes.analyses.topology",
    "sinkframes.analyses.spectral", "sinkframes.analyses.information", "sinkframes.analyses.geometry_values",
    "sinkframes.analyses.rmt", "sinkframes.figures",
)
#: seconds the build waits for a zygote to finish its imports before giving up on it
START_TIMEOUT_S = 180.0


# --------------------------------------------------------------------------------------------- messages
def _send_message(sock: socket.socket, obj: Any, fds: list[int] | None = None) -> None:
    """One length-prefixed JSON message, with file descriptors attached when given."""
    data = json.dumps(obj).encode()
    payload = struct.pack("!I", len(data)) + data
    if fds:
        socket.send_fds(sock, [payload[:1]], fds)
        sock.sendall(payload[1:])
    else:
        sock.sendall(payload)


def _recv_exact(sock: socket.socket, n: int, first: bytes = b"") -> bytes:
    buf = first
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("the other end closed the connection")
        buf += chunk
    return buf


def _recv_message(sock: socket.socket, with_fds: int = 0) -> tuple[Any, list[int]]:
    """A message of :func:`_send_message` and the descriptors that came with it."""
    fds: list[int] = []
    first = b""
    if with_fds:
        first, fds, _, _ = socket.recv_fds(sock, 1, with_fds)
        if not first:
            raise ConnectionError("the other end closed the connection")
    head = _recv_exact(sock, 4, first)
    (length,) = struct.unpack("!I", head)
    return json.loads(_recv_exact(sock, length)), fds


# --------------------------------------------------------------------------------------------- launcher
def wrap_command(cmd: list[str]) -> list[str]:
    """The launcher's command for the kernel command ``cmd`` (it runs ``cmd`` itself when no zygote serves)."""
    return [sys.executable, "-m", __name__, *cmd]


def _kernel_arguments(cmd: list[str]) -> list[str] | None:
    """The ipykernel arguments of an ``ipykernel_launcher`` command, or ``None`` for any other kernel."""
    if "-m" in cmd:
        k = cmd.index("-m")
        if k + 1 < len(cmd) and cmd[k + 1] == "ipykernel_launcher":
            return cmd[k + 2 :]
    return None


def launch(cmd: list[str]) -> int:
    """Run kernel command ``cmd`` in a child of the zygote and wait for it; ``cmd`` itself when none serves."""
    path = os.environ.get(ENV)
    args = _kernel_arguments(cmd)
    if not path or args is None:
        os.execv(cmd[0], cmd)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
        _send_message(sock, {"args": args, "options": _interpreter_options(cmd), "env": dict(os.environ),
                             "cwd": os.getcwd()}, [0, 1, 2])
        answer, _ = _recv_message(sock)
    except OSError:
        answer = {"refused": "the zygote could not be reached"}
    if "pid" not in answer:
        sock.close()
        print(f"[sinkframes] an ordinary page kernel: {answer.get('refused')}", file=sys.stderr, flush=True)
        os.execv(cmd[0], cmd)
    child = int(answer["pid"])

    def forward(signum: int, frame: Any) -> None:
        try:
            os.kill(child, signum)
        except ProcessLookupError:
            pass

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(sig, forward)
    try:
        status, _ = _recv_message(sock)
        return int(status["exit"])
    except (OSError, ValueError, KeyError):  # the zygote went away: so must its child
        forward(signal.SIGKILL, None)
        return 1


def kernel_manager_class() -> type:
    """jupyter_client's ``AsyncKernelManager`` whose kernels start through :func:`launch` (papermill's
    ``kernel_manager_class``)."""
    from jupyter_client.manager import AsyncKernelManager

    class ForkedKernelManager(AsyncKernelManager):
        """Kernels forked from the build worker's zygote when one serves, ordinary ones otherwise."""

        def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
            return wrap_command(super().format_kernel_cmd(extra_arguments))

    return ForkedKernelManager


# --------------------------------------------------------------------------------------------- zygote
def _interpreter_options(cmd: list[str]) -> list[str]:
    return cmd[1 : cmd.index("-m")] if "-m" in cmd else cmd[1:]


def env_problem(own: dict[str, str], requested: dict[str, str]) -> str | None:
    """Why a kernel with environment ``requested`` cannot be forked from a zygote with ``own``, or ``None``."""
    differ = sorted(k for k in set(own) | set(requested) if own.get(k) != requested.get(k) and k not in PER_KERNEL_ENV)
    if requested.get("MPLBACKEND", INLINE_BACKEND) != own.get("MPLBACKEND", INLINE_BACKEND):
        differ.append("MPLBACKEND")
    return f"environment differs in {', '.join(differ)}" if differ else None


def preload(modules: tuple[str, ...] = PRELOAD) -> list[str]:
    """Import ``modules`` (those that fail to import are left out); the ones that failed."""
    import importlib

    os.environ.setdefault("MPLBACKEND", INLINE_BACKEND)  # as ipykernel would, before matplotlib reads it
    failed = []
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - an optional library: the page imports it itself, or says why not
            failed.append(name)
    return failed


def redo_import_time_choices() -> None:
    """Make again the choices a preloaded library made at import by asking whether it runs in a kernel: it
    ran in the zygote, which is not one. pandas shows at most 20 columns in a kernel and fits the terminal
    otherwise (``display.max_columns`` 20 or 0, chosen by ``is_terminal`` when pandas is imported)."""
    is_terminal = _pandas_is_terminal()
    if is_terminal is not None:
        import pandas as pd

        pd.set_option("display.max_columns", 0 if is_terminal() else 20)


def _pandas_is_terminal() -> Any:
    """pandas' own test of whether it runs in a terminal (where pandas keeps it), if pandas is loaded."""
    if "pandas" not in sys.modules:
        return None
    for where in ("pandas.core.config_init", "pandas.io.formats.console"):
        module = sys.modules.get(where)
        if module is not None and callable(getattr(module, "is_terminal", None)):
            return module.is_terminal
    return None


def import_time_problem() -> str | None:
    """Why this zygote's imports would differ from a kernel's in a way :func:`redo_import_time_choices` does
    not mend, or ``None``. ``tqdm.auto`` picks its notebook bars at import when ipywidgets is installed."""
    import importlib.util

    if "pandas" in sys.modules and _pandas_is_terminal() is None:
        return "this pandas chooses its display width at import in a way not known here"
    if "tqdm.autonotebook" in sys.modules and importlib.util.find_spec("ipywidgets") is not None:
        return "tqdm chose its progress bars at import, and a kernel would choose ipywidgets ones"
    return None


def _python_threads() -> int:
    """Python threads of this process. The BLAS libraries' own pools (numpy's and scipy's OpenBLAS start
    one at import) are not counted: OpenBLAS stops and restarts its pool around a fork itself."""
    import threading

    return threading.active_count()


def _launcher_path() -> str:
    import importlib.util

    spec = importlib.util.find_spec("ipykernel_launcher")
    return str(spec.origin) if spec is not None and spec.origin else "ipykernel_launcher"


def _run_child(request: dict[str, Any], fds: list[int], keep_closed: list[int]) -> None:
    """In the forked child: take the launcher's stdio, environment and directory, then be the kernel."""
    code = 1
    try:
        for fd in keep_closed:
            os.close(fd)
        os.setsid()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        for sig in (signal.SIGCHLD, signal.SIGINT, signal.SIGTERM, signal.SIGPIPE):
            signal.signal(sig, signal.SIG_DFL if sig != signal.SIGINT else signal.default_int_handler)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv = [_launcher_path(), *request["args"]]  # as `python -m ipykernel_launcher` has it
        from ipykernel.kernelapp import IPKernelApp

        app = IPKernelApp.instance()
        app.initialize(request["args"])
        assert app.shell is not None
        with app.shell.builtin_trap:  # get_ipython() answers as in a cell
            redo_import_time_choices()  # now that this process is a kernel
        app.start()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # noqa: BLE001 - the kernel's own failure, told on its stderr
        import traceback

        os.write(2, traceback.format_exc().encode())  # the real stderr: the kernel has replaced sys.stderr
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def serve(path: str, modules: tuple[str, ...] = PRELOAD) -> None:
    """The zygote: import ``modules``, listen on ``path``, print ``ready`` and fork a kernel per request.

    It stops when its stdin closes (the build worker that started it is gone). One Python thread throughout,
    so that forking is safe; children are reaped as they exit and their launchers told."""
    if sys.path and sys.path[0] in ("", os.getcwd()):
        del sys.path[0]  # as ipykernel_launcher does before its imports (the kernel then keeps it out)
    own = dict(os.environ)  # what a kernel's environment is compared with: the zygote's before its imports
    options = _interpreter_options(sys.orig_argv)
    failed = preload(modules)
    added = {k: v for k, v in os.environ.items() if k not in own}  # set by the imports (torch sets some)
    problem = import_time_problem()
    if problem:
        print(f"not ready: {problem}", flush=True)
        return
    if _python_threads() != 1:
        print(f"not ready: {_python_threads()} Python threads after the imports; forking would be unsafe", flush=True)
        return
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(16)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the build's Ctrl-C is the worker's to handle
    print("ready" + (f" (not imported: {', '.join(failed)})" if failed else ""), flush=True)
    children: dict[int, socket.socket] = {}  # pid -> its launcher's connection
    orphans: set[int] = set()  # killed after their launcher went away, not yet reaped
    try:
        while True:
            watched = [listener, sys.stdin, *children.values()]
            readable, _, _ = select.select(watched, [], [], 0.05)
            if sys.stdin in readable and not os.read(sys.stdin.fileno(), 1):
                return
            for conn in [c for c in readable if c not in (listener, sys.stdin)]:
                pid = next(p for p, c in children.items() if c is conn)
                os.kill(pid, signal.SIGKILL)  # a launcher never writes after its request: it is gone
                conn.close()
                del children[pid]
                orphans.add(pid)
            if listener in readable:
                conn, _ = listener.accept()
                try:
                    request, fds = _recv_message(conn, with_fds=3)
                except (OSError, ValueError):
                    conn.close()
                    continue
                problem = ("no stdio received" if len(fds) != 3
                           else f"interpreter options {request['options']} (the zygote's: {options})"
                           if request["options"] != options else env_problem(own, request["env"]))
                if problem:
                    _send_message(conn, {"refused": problem})
                    conn.close()
                    for fd in fds:
                        os.close(fd)
                    continue
                sys.stdout.flush()
                pid = os.fork()
                if pid == 0:
                    request["env"] = {**added, **request["env"]}  # as the same imports in a fresh kernel
                    _run_child(request, fds, [listener.fileno(), conn.fileno(),
                                              *(c.fileno() for c in children.values())])
                for fd in fds:
                    os.close(fd)
                _send_message(conn, {"pid": pid})
                children[pid] = conn
            _reap(children, orphans)
    finally:
        for pid in list(children):
            os.kill(pid, signal.SIGKILL)
        listener.close()
        Path(path).unlink(missing_ok=True)


def _reap(children: dict[int, socket.socket], orphans: set[int]) -> None:
    """Collect exited children; tell each one's launcher its exit status."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        orphans.discard(pid)
        conn = children.pop(pid, None)
        if conn is not None:
            try:
                _send_message(conn, {"exit": os.waitstatus_to_exitcode(status)})
            except OSError:
                pass
            conn.close()


# ------------------------------------------------------------------------------------ the build's side
def kernel_interpreter_options(kernel_name: str = "python3") -> list[str]:
    """The interpreter options of kernel ``kernel_name``'s command (``-Xfrozen_modules=off`` for ipykernel's
    own spec): the zygote runs with the same ones, and forks only for commands that have them."""
    from jupyter_client.kernelspec import KernelSpecManager

    argv = KernelSpecManager().get_kernel_spec(kernel_name).argv
    return argv[1 : argv.index("-m")] if "-m" in argv else []


class Zygote:
    """A zygote process of this build worker: :meth:`launch` starts its imports, :meth:`wait` waits for them."""

    def __init__(self) -> None:
        self.proc: Any = None
        self.path: str | None = None
        self.waited = False

    def launch(self, modules: tuple[str, ...] = PRELOAD) -> None:
        """Start the zygote (returns at once; it imports ``modules`` meanwhile)."""
        import subprocess
        import tempfile

        self.path = os.path.join(tempfile.mkdtemp(prefix="sinkframes-zygote-"), "socket")
        cmd = [sys.executable, *kernel_interpreter_options(), "-m", __name__, "--serve", self.path,
               "--modules", ",".join(modules)]
        # os.environ, as jupyter_client gives kernels (the C-level environment may hold more: COLUMNS and LINES
        # under pytest)
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True,
                                     env=dict(os.environ))

    def wait(self, timeout_s: float = START_TIMEOUT_S) -> str | None:
        """Wait until the zygote serves; its socket, or ``None`` (the reason printed once) if it does not."""
        if not self.waited and self.proc is not None:
            self.waited = True
            ready, _, _ = select.select([self.proc.stdout], [], [], timeout_s)
            line = self.proc.stdout.readline().decode().strip() if ready else "no answer in time"
            if not line.startswith("ready"):
                print(f"[sinkframes] page kernels start on their own (the kernel zygote: {line or 'exited'})",
                      file=sys.stderr, flush=True)
                self.stop()
        return self.path  # None when never launched, or stopped

    def stop(self) -> None:
        """End the zygote (closing its stdin) and remove its socket folder."""
        if self.proc is not None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=10)
            except Exception:  # noqa: BLE001 - it is ended either way
                self.proc.kill()
            self.proc = None
        if self.path is not None:
            Path(self.path).unlink(missing_ok=True)
            try:
                os.rmdir(os.path.dirname(self.path))
            except OSError:
                pass
            self.path = None


_ZYGOTE = Zygote()


def enabled() -> bool:
    """Whether page kernels may be forked here: a POSIX system with Unix sockets, and not switched off."""
    return (os.environ.get(SWITCH_ENV, "1") != "0" and hasattr(os, "fork") and hasattr(socket, "send_fds")
            and hasattr(socket, "AF_UNIX"))


def start_zygote() -> None:
    """Start this process's zygote if :func:`enabled` and not yet started (without waiting for its imports:
    a build worker calls this when it starts, and the imports overlap what runs before its first page)."""
    if enabled() and _ZYGOTE.proc is None and not _ZYGOTE.waited:
        import atexit

        _ZYGOTE.launch()
        atexit.register(_ZYGOTE.stop)


def use_zygote() -> bool:
    """Whether this process's zygote (if :func:`start_zygote` started one) serves, waiting for its imports;
    if so the kernels' launchers are pointed at it. Without a zygote, ordinary kernels."""
    path = _ZYGOTE.wait()
    if path is None:
        os.environ.pop(ENV, None)
        return False
    os.environ[ENV] = path
    return True


def main(argv: list[str]) -> int:
    if argv[:1] == ["--serve"]:
        modules = tuple(m for m in argv[3].split(",") if m) if argv[2:3] == ["--modules"] else PRELOAD
        serve(argv[1], modules)
        return 0
    return launch(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
