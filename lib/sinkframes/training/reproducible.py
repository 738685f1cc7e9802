"""One reproducible arithmetic for a training run, without changing the caller's torch settings."""

from __future__ import annotations

import math
import resource
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


def warmup_cosine(step: int, warmup: int, steps: int) -> float:
    """The learning-rate factor of the language-model runs: linear warm-up over ``warmup`` steps, then cosine
    decay to 10 % at ``steps``."""
    if step < warmup:
        return (step + 1) / warmup
    frac = (step - warmup) / max(1, steps - warmup)
    return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, frac)))


def cpu_seconds() -> float:
    """User and system CPU seconds of this process so far (a run's cost, whatever else shares the machine)."""
    use = resource.getrusage(resource.RUSAGE_SELF)
    return use.ru_utime + use.ru_stime
