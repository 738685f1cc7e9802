"""One sentence's threshold graphs over several processes, when this process was given several threads.

A sentence's spectral suite is 30 layers x 8 thresholds of small graphs. Its two costs cannot use a
second core from inside one process: ARPACK's loop (the official solver of the faithful variant above
50 tokens) holds the interpreter lock, and LAPACK's ``eigvalsh`` spends most of its time on per-matrix
overhead, one matrix after the other. So where ``threads.configure`` gave the process ``k > 1``
threads, :class:`SplitGraphMetrics` hands every ``k``-th layer to each of ``k - 1`` helper processes
and computes the rest itself, each on one thread. Every graph is computed by the same function as in
one process, with the sentence-wide choice (whether any pair passes both ways) made once for all of
them. The degree statistics and ARPACK's answers are the same bit for bit; the dense eigenvalues agree
to LAPACK's rounding (about 1e-14), which already depends on where in memory each matrix of a batch lies.

The helpers start on first use (a few seconds: a fresh interpreter imports torch), stay for later
sentences and end with this process. If a helper fails or dies, its share is computed here instead
(nothing computed is lost) and this process starts no helper again.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pickle
import subprocess
import threading
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

#: most helper processes started, whatever the thread count
MAX_HELPERS = 7


class _Worker:
    """One helper process (``python -m sinkframes.metrics.graph_workers``) and pickled messages over its
    stdin and stdout. Its first message says it is ready (torch imported)."""

    def __init__(self) -> None:
        import sys

        env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
               "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}  # the modules this process imports
        self.proc = subprocess.Popen([sys.executable, "-m", __name__], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, env=env)
        self.ready = False

    def send(self, obj: Any) -> None:
        assert self.proc.stdin is not None
        pickle.dump(obj, self.proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
        self.proc.stdin.flush()

    def recv(self) -> Any:
        """The next answer (after the ready message, read first if it has not been)."""
        self.wait_ready()
        assert self.proc.stdout is not None
        return pickle.load(self.proc.stdout)

    def wait_ready(self) -> None:
        """Read the ready message if it has not been read."""
        assert self.proc.stdout is not None
        if not self.ready:
            pickle.load(self.proc.stdout)
            self.ready = True

    def alive(self) -> bool:
        return self.proc.poll() is None

    def end(self, kill: bool = False) -> None:
        """Tell the helper to finish (or kill it) and wait for it."""
        try:
            if not kill:
                self.send(None)
                self.proc.wait(timeout=5)
        except (OSError, ValueError, subprocess.TimeoutExpired):
            pass
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):  # a pipe the helper closed first
                    stream.close()


def _serve() -> None:
    """A helper's loop: receive ``(attention, causal, thresholds, one_way)`` on stdin, send back the metrics as
    numpy arrays (or ``("error", text)``) on stdout; ``None`` or the end of stdin ends it."""
    import signal
    import sys
    import traceback

    # Ctrl-C, or a notebook kernel's shutdown, reaches the whole process group: the parent decides, and ends
    # its helpers (or its exit closes their stdin)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    read, write = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # a stray print must not enter the answers

    def send(obj: Any) -> None:
        pickle.dump(obj, write, protocol=pickle.HIGHEST_PROTOCOL)
        write.flush()

    torch.set_num_threads(1)
    from .graphs import sentence_graph_metrics

    send(("ready", None))
    while True:
        try:
            job = pickle.load(read)
        except EOFError:
            return
        if job is None:
            return
        att, causal, thresholds, one_way = job
        try:
            out = sentence_graph_metrics(torch.from_numpy(att), causal, thresholds, one_way=one_way)
            answer: tuple[str, Any] = ("ok", {k: v.numpy() for k, v in out.items()})
        except Exception:  # noqa: BLE001 - reported to the parent, which computes the share itself
            answer = ("error", traceback.format_exc())
        send(answer)


class _Helpers:
    """The helper processes of this process: started on demand, ended at exit.

    Plain subprocesses (``python -m``), not ``multiprocessing``: its ``spawn`` would run the caller's
    main script again in each helper."""

    def __init__(self) -> None:
        self._workers: list[_Worker] = []
        self._lock = threading.Lock()
        self.failed = False  # a helper failed: none is started again in this process
        atexit.register(self.close)

    def get(self, count: int) -> list[_Worker]:
        """Up to ``count`` running helpers, starting the missing ones; none after a helper failed."""
        with self._lock:
            if self.failed:
                return []
            self._workers = [w for w in self._workers if w.alive()]
            while len(self._workers) < count:
                self._workers.append(_Worker())
            return self._workers[:count]

    def drop(self, worker: _Worker) -> None:
        """Stop using ``worker`` (it failed), and start no other: what failed once (a helper that cannot import
        this package, a machine out of memory) would fail again, on every sentence."""
        with self._lock:
            self.failed = True
            if worker in self._workers:
                self._workers.remove(worker)
        worker.end(kill=True)

    def close(self) -> None:
        """End every helper."""
        with self._lock:
            workers, self._workers = self._workers, []
        for worker in workers:
            worker.end()


_HELPERS = _Helpers()


def helper_count() -> int:
    """How many helpers a sentence is split over: the process's torch threads minus the one it runs on."""
    return min(MAX_HELPERS, max(0, torch.get_num_threads() - 1))


def start_helpers() -> int:
    """Start the helpers now and wait until they are ready (instead of on the first sentence that needs them);
    return how many run."""
    workers = _HELPERS.get(helper_count())
    for worker in workers:
        try:
            worker.wait_ready()
        except (EOFError, OSError, pickle.UnpicklingError) as exc:
            _give_up(worker, repr(exc))
    return len(_HELPERS.get(helper_count()))


class SplitGraphMetrics:
    """``graphs.sentence_graph_metrics(att, causal, thresholds)`` (``att`` ``[graph, n, n]``) with every
    ``helpers + 1``-th graph computed by each helper process; the same values (see the module docstring).
    One sentence at a time: the helpers answer in the order they were asked, so two threads must not
    share them.

    Creating it hands the helpers their shares, so the caller can do other work before :meth:`result`
    computes the rest here and collects theirs. ``helpers`` defaults to :func:`helper_count`; with none
    (one thread), everything runs in :meth:`result`.
    """

    def __init__(
        self, att: torch.Tensor, causal: bool, thresholds: Sequence[float], helpers: int | None = None
    ) -> None:
        from .graphs import one_way_only

        self.att, self.causal, self.thresholds = att, causal, tuple(thresholds)
        count = min(helper_count() if helpers is None else helpers, att.shape[0] - 1)
        self.parts = max(count, 0) + 1
        self.one_way = one_way_only(att, min(self.thresholds)) if count > 0 else None
        self.sent: list[tuple[int, _Worker]] = []
        for k, worker in enumerate(_HELPERS.get(count) if count > 0 else [], start=1):
            share = att[k :: self.parts].float().contiguous().numpy()
            try:
                worker.send((share, causal, self.thresholds, self.one_way))
                self.sent.append((k, worker))
            except (OSError, ValueError) as exc:
                _give_up(worker, repr(exc))

    def _share(self, k: int) -> dict[str, torch.Tensor]:
        from .graphs import sentence_graph_metrics

        return sentence_graph_metrics(self.att[k :: self.parts], self.causal, self.thresholds, one_way=self.one_way)

    def result(self) -> dict[str, torch.Tensor]:
        """Compute this process's share, collect the helpers' (a failed helper's share is computed here) and
        return ``{"<variant>/<metric>": [threshold, graph]}``."""
        from ..threads import single_torch_thread

        if self.parts == 1:
            return self._share(0)
        shares: dict[int, dict[str, torch.Tensor] | None] = {}
        with single_torch_thread():  # the helpers use the other cores
            try:
                shares[0] = self._share(0)
            finally:  # every answer is read, also after an error here, so none is left for the next sentence
                for k, worker in self.sent:
                    shares[k] = _receive(worker)
            for k in range(1, self.parts):
                if shares.get(k) is None:
                    shares[k] = self._share(k)
        return _interleave({k: v for k, v in shares.items() if v is not None}, self.parts, self.att.shape[0])


def _receive(worker: _Worker) -> dict[str, torch.Tensor] | None:
    """A helper's answer as tensors, or ``None`` (the helper is dropped) if it failed or died."""
    try:
        status, payload = worker.recv()
    except (EOFError, OSError, pickle.UnpicklingError) as exc:
        _give_up(worker, repr(exc))
        return None
    if status != "ok":
        _give_up(worker, payload)
        return None
    return {k: torch.from_numpy(np.asarray(v)) for k, v in payload.items()}


def _give_up(worker: _Worker, why: str) -> None:
    """Drop a failed helper, saying why; its work is done in this process."""
    warnings.warn("a spectral helper process failed; this process computes its graphs, and every graph from now "
                  f"on, itself:\n{why}", RuntimeWarning, stacklevel=3)
    _HELPERS.drop(worker)


def _interleave(shares: dict[int, dict[str, torch.Tensor]], parts: int, graphs: int) -> dict[str, torch.Tensor]:
    """Put each share's ``[threshold, graph]`` columns back in graph order (share ``k`` holds graphs ``k::parts``)."""
    out: dict[str, torch.Tensor] = {}
    for name, first in shares[0].items():
        full = torch.empty((*first.shape[:-1], graphs), dtype=first.dtype)
        for k in range(parts):
            full[..., k::parts] = shares[k][name]
        out[name] = full
    return out


if __name__ == "__main__":
    _serve()
