"""One reproducible arithmetic for a training run, without changing the caller's torch settings."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch


@contextmanager
def deterministic_threads(n: int = 1) -> Iterator[None]:
    """Run the block on ``n`` threads with deterministic algorithms (a rerun on the same machine gives the
    same weights bit for bit); the thread count and the deterministic flag are restored afterwards, so a
    test or a page that trains a model keeps its own settings."""
    threads, deterministic = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    torch.set_num_threads(n)
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
        torch.use_deterministic_algorithms(deterministic)
