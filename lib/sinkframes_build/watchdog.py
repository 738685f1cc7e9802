"""Stop a page whose kernel has stopped making progress, not one that is merely slow.

A page's length depends on the machine: an hour of work on a busy laptop is not a failure, a kernel that waits on
nothing is. :func:`stall_watchdog` watches the processes this process started (a page's kernel) and counts their
CPU time and disk traffic; when neither has grown for ``limit`` seconds it kills them, which ends the page's
execution with an error, and the watchdog's ``fired`` says why (the build turns that into one sentence:
:class:`PageStalledError`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

#: how much a kernel must do to count as progress between two looks: a share of one core over the interval, or
#: bytes read or written
MIN_CPU_SHARE = 0.05
MIN_IO_BYTES = 1_000_000


class PageStalledError(RuntimeError):
    """A page's kernel made no progress (no CPU time, no disk traffic) for the stall limit and was stopped."""


@dataclass
class Watch:
    """What the watchdog saw: whether it stopped the kernel, and after how many seconds without progress."""

    limit: float
    fired: bool = False
    idle_seconds: float = 0.0
    _stop: threading.Event = field(default_factory=threading.Event, repr=False)


def _activity() -> tuple[float, float]:
    """``(CPU seconds, bytes read and written)`` of every process this one started, summed."""
    import psutil

    cpu, io = 0.0, 0.0
    for child in psutil.Process().children(recursive=True):
        try:
            t = child.cpu_times()
            cpu += t.user + t.system
            counters = child.io_counters() if hasattr(child, "io_counters") else None
            if counters is not None:
                io += counters.read_bytes + counters.write_bytes
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return cpu, io


def _kill_children() -> None:
    import psutil

    for child in psutil.Process().children(recursive=True):
        try:
            child.kill()
        except psutil.NoSuchProcess:
            continue


@contextmanager
def stall_watchdog(limit: float, poll: float = 10.0) -> Iterator[Watch]:
    """Within the block, kill this process's children when they make no progress for ``limit`` seconds (looking
    every ``poll`` seconds); the yielded :class:`Watch` says whether it did."""
    watch = Watch(limit)

    def run() -> None:
        cpu, io = _activity()
        idle = 0.0
        while not watch._stop.wait(poll):
            now_cpu, now_io = _activity()
            if now_cpu - cpu >= MIN_CPU_SHARE * poll or now_io - io >= MIN_IO_BYTES:
                idle = 0.0
            else:
                idle += poll
            cpu, io = now_cpu, now_io
            watch.idle_seconds = idle
            if idle >= limit:
                watch.fired = True
                _kill_children()
                return

    thread = threading.Thread(target=run, name="sinkframes-stall-watchdog", daemon=True)
    thread.start()
    try:
        yield watch
    finally:
        watch._stop.set()
        thread.join()
