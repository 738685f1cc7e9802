"""A sentence's threshold graphs over several processes, when this process was given several threads.

A sentence's spectral suite is 30 layers x 8 thresholds of small graphs. Its two costs cannot use a
second core from inside one process: ARPACK's loop (the official solver of the faithful variant above
50 tokens) holds the interpreter lock, and LAPACK's ``eigvalsh`` spends most of its time on per-matrix
overhead, one matrix after the other. So where ``threads.configure`` gave the process ``k > 1``
threads, ``k - 1`` helper processes take part of the work, each on one thread:

- :func:`map_with_helpers` sends whole sentences to the helpers while this process computes the next
  ones (the short sentences, whose cost is per-call overhead that splitting would only add to);
- :class:`SplitGraphMetrics` hands every ``k``-th layer of one long sentence to each helper and computes
  the rest itself, with the sentence-wide choice (whether any pair passes both ways) made once for all.

Every graph is computed by the same function as in one process. The degree statistics and ARPACK's
answers are the same bit for bit; the dense eigenvalues agree to LAPACK's rounding (about 1e-14), which
already depends on where in memory each matrix of a batch lies.

The helpers start on first use (a few seconds: a fresh interpreter imports torch), stay for later
sentences and end with this process. If a helper fails or dies, its jobs are computed here instead
(nothing computed is lost) and this process starts no helper again.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pickle
import queue
import subprocess
import threading
import warnings
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np
import torch

#: most helper processes started, whatever the thread count
MAX_HELPERS = 7


#: pipe capacity asked for (Linux): a sentence's attention (about 1 MB at 30 tokens) in one write, so that the
#: threads passing messages do not wait for the interpreter lock once per 64 KB
PIPE_BYTES = 4 << 20


def _widen(pipe: Any) -> None:
    """Make a pipe hold up to :data:`PIPE_BYTES` (or the system's limit) where the platform allows it."""
    try:
        import fcntl
    except ImportError:  # not POSIX
        return
    setsize = getattr(fcntl, "F_SETPIPE_SZ", None)
    if pipe is None or setsize is None:
        return
    for size in (PIPE_BYTES, 1 << 20):
        with contextlib.suppress(OSError):  # above /proc/sys/fs/pipe-max-size: try the default limit
            fcntl.fcntl(pipe.fileno(), setsize, size)
            return


class _Worker:
    """One helper process (``python -m sinkframes.metrics.graph_workers``) and pickled messages over its
    stdin and stdout. A reader thread takes its answers off the pipe as they come, so this process can ask
    whether one is there without waiting (:meth:`Ticket.ready`); the first message says the helper is ready
    (torch imported). Answers come in the order the jobs were sent."""

    def __init__(self) -> None:
        import sys

        env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
               "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}  # the modules this process imports
        self.proc = subprocess.Popen([sys.executable, "-m", __name__], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, env=env)
        for pipe in (self.proc.stdin, self.proc.stdout):
            _widen(pipe)
        self._answers: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
        self._ready = threading.Event()
        self.dead: str | None = None  # why the pipe ended, once it has
        self.dropped = False  # this process stopped using it
        self.waiting: deque[Ticket] = deque()  # sent jobs whose answers have not been taken, oldest first
        self._jobs: queue.SimpleQueue[tuple[Callable[..., Any], tuple[Any, ...]] | None] = queue.SimpleQueue()
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._write, daemon=True).start()

    def _read(self) -> None:
        """The reader thread: every answer into the queue; at the end of the pipe, why it ended."""
        assert self.proc.stdout is not None
        try:
            pickle.load(self.proc.stdout)  # the ready message
            self._ready.set()
            while True:
                self._answers.put(pickle.load(self.proc.stdout))
        except (EOFError, OSError, ValueError, pickle.UnpicklingError) as exc:
            self.dead = f"the helper's answers ended: {exc!r} (exit status {self.proc.poll()})"
            self._ready.set()
            self._answers.put(("error", self.dead))

    def submit(self, fn: Callable[..., dict[str, np.ndarray]], *args: Any) -> Ticket:
        """Send ``fn(*args)`` (a module-level function, numpy arrays as arguments) to the helper, without waiting:
        the writer thread passes it on when the helper reads (a pipe holds only tens of kilobytes)."""
        ticket = Ticket(self, fn, args)
        if self.dead is not None:
            ticket.answer = ("error", self.dead)
        else:
            self.waiting.append(ticket)
            self._jobs.put((fn, args))
        return ticket

    def _write(self) -> None:
        """The writer thread: every job onto the helper's stdin, in order; ``None`` ends the helper and the thread."""
        assert self.proc.stdin is not None
        while True:
            job = self._jobs.get()
            try:
                pickle.dump(job, self.proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
                self.proc.stdin.flush()
            except (OSError, ValueError) as exc:  # the helper is gone: its reader reports it
                if job is not None:
                    self.dead = self.dead or f"the helper took no job: {exc!r}"
                    self._answers.put(("error", self.dead))
                return
            if job is None:
                return

    def take_answer(self) -> None:
        """Give the oldest waiting ticket its answer (waiting for it if it is not there yet)."""
        ticket = self.waiting.popleft()
        ticket.answer = self._answers.get() if self.dead is None or not self._answers.empty() else ("error", self.dead)

    def queued_bytes(self) -> int:
        """Bytes of array arguments of the jobs whose answers have not been taken."""
        return sum(t.nbytes for t in self.waiting)

    def answers_ready(self) -> int:
        """How many answers have come and not been taken."""
        return self._answers.qsize()

    def wait_ready(self) -> None:
        """Wait until the helper has said it is ready; raise ``EOFError`` if it ended first."""
        self._ready.wait()
        if self.dead is not None:
            raise EOFError(self.dead)

    def alive(self) -> bool:
        return self.dead is None and self.proc.poll() is None

    def end(self, kill: bool = False) -> None:
        """Tell the helper to finish once it has read the jobs before (or kill it), and wait for it."""
        if not kill:
            self._jobs.put(None)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=5)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._jobs.put(None)  # the writer thread ends (after a kill: on the broken pipe)
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):  # a pipe the helper closed first
                self.proc.stdin.close()


class Ticket:
    """A job sent to a helper: :meth:`result` gives its answer, or computes the job here if the helper failed
    (and drops that helper, saying why)."""

    def __init__(self, worker: _Worker, fn: Callable[..., dict[str, np.ndarray]], args: tuple[Any, ...]) -> None:
        self.worker, self.fn, self.args = worker, fn, args
        self.nbytes = sum(a.nbytes for a in args if isinstance(a, np.ndarray))
        self.answer: tuple[str, Any] | None = None

    def ready(self) -> bool:
        """Whether :meth:`result` would not wait for the helper."""
        if self.answer is not None:
            return True
        return self.worker.answers_ready() > self.worker.waiting.index(self)

    def failed(self) -> bool:
        """Whether the helper failed on this job (waiting for its answer)."""
        while self.answer is None:
            self.worker.take_answer()
        return self.answer[0] != "ok"

    def result(self) -> dict[str, torch.Tensor]:
        """The job's output as tensors."""
        if self.failed():
            assert self.answer is not None
            _give_up(self.worker, self.answer[1])
            out = self.fn(*self.args)
        else:
            assert self.answer is not None
            out = self.answer[1]
        self.args = ()  # the attention sent is not needed any more
        return {k: torch.from_numpy(np.asarray(v)) for k, v in out.items()}


def _serve() -> None:
    """A helper's loop: receive ``(function, arguments)`` on stdin, send back ``("ok", function(*arguments))``
    (or ``("error", text)``) on stdout; ``None`` or the end of stdin ends it."""
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
    from . import graphs  # noqa: F401 - imported before the ready message, not during the first job

    send(("ready", None))
    while True:
        try:
            job = pickle.load(read)
        except EOFError:
            return
        if job is None:
            return
        try:
            fn, args = job
            answer: tuple[str, Any] = ("ok", fn(*args))
        except Exception:  # noqa: BLE001 - reported to the parent, which computes the job itself
            answer = ("error", traceback.format_exc())
        send(answer)


def graphs_job(
    att: np.ndarray, causal: bool, thresholds: tuple[float, ...], one_way: bool | None
) -> dict[str, np.ndarray]:
    """A helper's share of a split sentence: ``graphs.sentence_graph_metrics`` as numpy arrays."""
    from .graphs import sentence_graph_metrics

    out = sentence_graph_metrics(torch.from_numpy(att), causal, thresholds, one_way=one_way)
    return {k: v.numpy() for k, v in out.items()}


def reducer_job(reducer: Callable[[torch.Tensor, bool], dict[str, torch.Tensor]], att: np.ndarray,
                causal: bool) -> dict[str, np.ndarray]:
    """A whole sentence: ``reducer(att, causal)`` (a picklable reducer) as numpy arrays."""
    return {k: v.numpy() for k, v in reducer(torch.from_numpy(att), causal).items()}


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
    for worker in _HELPERS.get(helper_count()):
        try:
            worker.wait_ready()
        except EOFError as exc:
            _give_up(worker, str(exc))
    return len(_HELPERS.get(helper_count()))


class SplitGraphMetrics:
    """``graphs.sentence_graph_metrics(att, causal, thresholds)`` (``att`` ``[graph, n, n]``) with every
    ``helpers + 1``-th graph computed by each helper process; the same values (see the module docstring).
    One thread at a time may use the helpers.

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
        workers = _HELPERS.get(count) if count > 0 else []  # none after a helper failed
        self.parts = len(workers) + 1
        self.one_way = one_way_only(att, min(self.thresholds)) if workers else None
        self.sent: list[tuple[int, Ticket]] = [
            (k, worker.submit(graphs_job, att[k :: self.parts].float().contiguous().numpy(), causal,
                              self.thresholds, self.one_way))
            for k, worker in enumerate(workers, start=1)
        ]

    def _share(self, k: int) -> dict[str, torch.Tensor]:
        from .graphs import sentence_graph_metrics

        return sentence_graph_metrics(self.att[k :: self.parts], self.causal, self.thresholds, one_way=self.one_way)

    def result(self) -> dict[str, torch.Tensor]:
        """Compute this process's share, collect the helpers' (a failed helper's share is computed here) and
        return ``{"<variant>/<metric>": [threshold, graph]}``."""
        from ..threads import single_torch_thread

        if self.parts == 1:
            return self._share(0)
        with single_torch_thread():  # the helpers use the other cores
            shares = {0: self._share(0)}
            for k, ticket in self.sent:
                shares[k] = ticket.result()
        return _interleave(shares, self.parts, self.att.shape[0])


#: most sentences waiting for, or in, one helper before this process computes the next one itself (with 2, the
#: helper ran dry while this process was busy on a long sentence; 4 was the fastest of 1-8, measured)
QUEUE_DEPTH = 4
#: most bytes of arguments waiting for one helper; a larger item is computed here (``compute`` may split it)
QUEUE_BYTES = 64 << 20


def map_with_helpers(
    items: Iterable[tuple[int, torch.Tensor]],
    compute: Callable[[torch.Tensor], dict[str, torch.Tensor]],
    job: Callable[[torch.Tensor], tuple[Callable[..., dict[str, np.ndarray]], tuple[Any, ...]]],
    depth: int = QUEUE_DEPTH,
) -> Iterator[tuple[int, dict[str, torch.Tensor]]]:
    """``(index, compute(x))`` for every ``(index, x)`` of ``items``, with whole items sent to the helpers as
    ``fn(*args) = job(x)`` while this process goes on with the next; results in the order they finish.

    An item goes to the least busy helper if fewer than ``depth`` of its jobs, and at most ``QUEUE_BYTES`` of
    arguments, wait there with it; else it is computed here on one thread, and an item too large for any
    queue with all threads (``compute`` may split it over the helpers). With no helper (one thread), this is
    ``compute`` on each item in turn.
    """
    from ..threads import single_torch_thread

    pending: list[tuple[int, Ticket]] = []

    def finished(wait: bool) -> Iterator[tuple[int, dict[str, torch.Tensor]]]:
        nonlocal pending
        ready = [wait or t.ready() for _, t in pending]  # read once: an answer may arrive meanwhile
        done = [item for item, r in zip(pending, ready, strict=True) if r]
        pending = [item for item, r in zip(pending, ready, strict=True) if not r]
        for i, t in done:
            yield i, t.result()

    for i, x in items:
        yield from finished(wait=False)
        workers = _HELPERS.get(helper_count())
        if not workers:
            yield i, compute(x)
            continue
        worker = min(workers, key=lambda w: len(w.waiting))
        fn, args = job(x)
        size = sum(a.nbytes for a in args if isinstance(a, np.ndarray))
        if size > QUEUE_BYTES:
            yield i, compute(x)
        elif len(worker.waiting) < depth and worker.queued_bytes() + size <= QUEUE_BYTES:
            pending.append((i, worker.submit(fn, *args)))
        else:
            with single_torch_thread():  # the helpers use the other cores
                yield i, compute(x)
    yield from finished(wait=True)


def _give_up(worker: _Worker, why: str) -> None:
    """Drop a failed helper, saying why (once); its work is done in this process."""
    if worker.dropped:
        return
    worker.dropped = True
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
