"""Thread counts: set deliberately for torch and BLAS, from the environment or per worker."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch
from threadpoolctl import threadpool_info

from sinkframes import threads


@pytest.fixture(autouse=True)
def _restore():
    before = torch.get_num_threads()
    yield
    threads.configure(before)


def test_configure_sets_torch_and_blas(monkeypatch) -> None:
    monkeypatch.delenv(threads.ENV, raising=False)
    assert threads.configure(1) == 1 and torch.get_num_threads() == 1
    np.linalg.svd(np.eye(3))  # make sure numpy's BLAS is loaded
    assert all(p["num_threads"] == 1 for p in threadpool_info() if p["user_api"] == "blas")


def test_environment_and_workers_decide_the_count(monkeypatch) -> None:
    monkeypatch.setenv(threads.ENV, "1")
    assert threads.requested() == 1 and threads.configure() == 1
    monkeypatch.setenv(threads.ENV, "two")
    with pytest.raises(ValueError, match="whole number"):
        threads.requested()
    monkeypatch.delenv(threads.ENV)
    assert threads.requested(workers=10**6) == 1  # never below one thread
    with pytest.raises(ValueError, match="workers"):
        threads.requested(workers=0)


def test_single_blas_thread_is_scoped() -> None:
    threads.configure(2)
    np.linalg.svd(np.eye(3))
    with threads.single_blas_thread():
        assert all(p["num_threads"] == 1 for p in threadpool_info() if p["user_api"] == "blas")
    assert any(p["num_threads"] == 2 for p in threadpool_info() if p["user_api"] == "blas")


def test_single_torch_thread_is_scoped_and_restored_after_an_error() -> None:
    threads.configure(2)
    with threads.single_torch_thread():
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == 2
    with pytest.raises(RuntimeError, match="inside"), threads.single_torch_thread():
        raise RuntimeError("inside")
    assert torch.get_num_threads() == 2


@pytest.mark.parametrize("preset", [None, "1"])
def test_a_page_worker_gives_its_kernels_its_share_of_the_cores(monkeypatch, preset):
    """Page kernels inherit the worker's environment: torch reads OMP_NUM_THREADS when it is imported, so a
    page that never calls configure() still gets the worker's share, not a pool as large as the machine."""
    import multiprocessing as mp

    from sinkframes_build.executors import _worker_init

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    if preset is None:
        monkeypatch.delenv(threads.ENV, raising=False)
    else:
        monkeypatch.setenv(threads.ENV, preset)
    _worker_init(mp.get_context("spawn").Value("i", 0), 2, 0)
    expected = preset or str(threads.requested(2))
    assert os.environ[threads.ENV] == expected and os.environ["OMP_NUM_THREADS"] == expected
