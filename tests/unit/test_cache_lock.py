"""Two processes that miss the same cache key at once compute it once (Cache.get_or_compute's lock)."""

from __future__ import annotations

import multiprocessing as mp
import time
from pathlib import Path

from sinkframes.cache import Cache

KEY = {"product": "lock-test", "n": 1}


def _worker(root: str, log: str, barrier) -> float:  # noqa: ANN001 - a multiprocessing barrier
    def compute() -> float:
        with open(log, "a") as fh:  # one line per computation
            fh.write("computed\n")
        time.sleep(1.0)  # long enough that the other worker asks for the key meanwhile
        return 42.0

    barrier.wait()  # both workers ask at the same moment
    value, _ = Cache(Path(root), namespace="lock").get_or_compute(KEY, compute)
    return float(value)


def test_two_workers_on_one_key_compute_it_once(tmp_path):
    ctx = mp.get_context("spawn")
    log = tmp_path / "computations.txt"
    with ctx.Manager() as manager:
        barrier = manager.Barrier(2)
        with ctx.Pool(2) as pool:
            values = pool.starmap(_worker, [(str(tmp_path), str(log), barrier)] * 2)
    assert values == [42.0, 42.0]
    assert log.read_text().splitlines() == ["computed"]
    assert Cache(tmp_path, namespace="lock").load(KEY) == 42.0


def test_without_the_cache_each_call_computes(tmp_path):
    calls = []
    cache = Cache(tmp_path, namespace="lock")
    for _ in range(2):
        cache.get_or_compute(KEY, lambda: calls.append(1) or 1.0, use_cache=False)
    assert len(calls) == 2 and not cache.contains(KEY)
