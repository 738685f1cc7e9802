"""The GPU tier (``make test-gpu``): skipped, saying why, on a machine without CUDA."""

from __future__ import annotations

import pytest
import torch

from tests.rehearsal.conftest import standin_home  # noqa: F401 - the stand-in hub, written once per session


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="no CUDA device: the GPU tier runs on a machine with one (make test-gpu)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
