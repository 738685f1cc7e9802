"""How many threads torch and the BLAS libraries use: decided once per process, stated, never left to chance.

Left alone, torch and numpy's BLAS each start a pool as large as the machine; when both pools (or two
processes) compete for the same cores, small per-matrix calls slow by one or two orders of magnitude
(threads spin waiting for each other). :func:`configure` sets both pools to one count: the
``SINKFRAMES_THREADS`` environment variable if set, else torch's own default divided among the worker
processes that share the machine. :func:`single_blas_thread` is for loops over many small matrices,
which run fastest on one thread; :func:`single_torch_thread` is for a sample's many small torch
reductions (tens of tokens each), which a thread pool only makes wait on a busy machine.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import torch

ENV = "SINKFRAMES_THREADS"
_DEFAULT = torch.get_num_threads()  # torch's choice at import: the physical cores it may use


def requested(workers: int = 1) -> int:
    """The thread count for one of ``workers`` processes: ``SINKFRAMES_THREADS``, else torch's default / workers."""
    raw = os.environ.get(ENV, "").strip()
    if raw:
        if not raw.isdigit() or int(raw) < 1:
            raise ValueError(f"{ENV}={raw!r}: give a whole number of threads, at least 1 (or unset it)")
        return int(raw)
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    return max(1, _DEFAULT // workers)


def configure(threads: int | None = None, workers: int = 1) -> int:
    """Set torch's and the BLAS/OpenMP pools' thread counts to ``threads`` (default :func:`requested`);
    return the count."""
    from threadpoolctl import threadpool_limits

    n = requested(workers) if threads is None else int(threads)
    if n < 1:
        raise ValueError(f"threads must be at least 1, got {n}")
    torch.set_num_threads(n)
    threadpool_limits(limits=n)  # numpy/scipy BLAS and OpenMP pools, for the rest of the process
    return n


@contextmanager
def single_blas_thread() -> Iterator[None]:
    """One BLAS thread inside the block (loops of small ``eig``/``svd`` calls)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        yield


@contextmanager
def single_torch_thread() -> Iterator[None]:
    """torch on one thread inside the block, its previous count restored after (also on an error).

    For per-sample metric suites: each op is microseconds of work, and split over several threads every
    op waits for all of them to be scheduled, which costs milliseconds on a loaded machine. Reductions
    along a dimension give the same numbers whatever the thread count.
    """
    before = torch.get_num_threads()
    if before == 1:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
