"""The CPU-versus-GPU comparison of the GPU tier (``tests/device_compare.py``), checked here on known cases: a run
compared with itself differs in nothing, a result moved beyond round-off differs in the quantity that moved."""

from __future__ import annotations

import copy

from sinkframes.analyses import frames
from sinkframes.types import RunOptions
from tests.device_compare import differences, tolerance, verdict_differences


def test_a_run_matches_itself_and_a_moved_value_is_found(texts):
    opts = RunOptions(device="cpu", progress=False)
    a = frames.analyse(["tiny:llama"], texts[:3], opts)
    b = frames.analyse(["tiny:llama"], texts[:3], opts)
    rtol, atol = tolerance("frames")
    assert differences(a[0], b[0], rtol, atol) == [] and verdict_differences(a, b) == []
    moved = copy.deepcopy(a[0])
    name = next(iter(moved.heads))
    moved.heads[name] = moved.heads[name] * (1 + 10 * rtol) + 10 * atol
    found = differences(a[0], moved, rtol, atol)
    assert found and all(name in f for f in found)
