"""The committed controlled-grid checkpoints: complete, loadable, and remade bit for bit by their first steps."""

from __future__ import annotations

from dataclasses import replace

import torch

from sinkframes.training import controlled as grid


def test_every_run_of_the_grid_is_committed_with_every_checkpoint():
    index = grid.load_index()
    assert sorted(index["runs"]) == sorted(r.name for r in grid.grid())
    assert tuple(index["plan"]["checkpoints"]) == grid.GridPlan().checkpoints
    spec = grid.RunSpec("encoder", "partial_0.25", "sigmoid", 2)
    for step in grid.GridPlan().checkpoints:
        model = grid.load_checkpoint(spec, step)
        assert all(torch.isfinite(p).all() for p in model.parameters())
    assert len(index["runs"][spec.name]["train_loss"]) == grid.GridPlan().steps


def test_the_first_steps_of_one_run_of_each_kind_are_remade_within_float16_rounding():
    # bit for bit on the CPU instruction set that made them; elsewhere float32 kernels round differently and a
    # stored float16 weight can move by one rounding step (measured on an AVX2-only CPU: one step at most)
    diffs = grid.check(step=64)
    assert len(diffs) == 6
    assert all(steps <= 1.0 for _, steps in diffs.values()), diffs
    # a recipe changed by 0.3 % in its learning rate is far outside that (1,636 steps on the same CPU)
    changed = grid.check(step=64, runs=grid.check_kinds()[:1], plan=replace(grid.GridPlan(), lr=0.00301))
    assert min(steps for _, steps in changed.values()) > 100


def test_float16_steps_count_rounding_steps_at_the_magnitude():
    a = torch.tensor([1.0, 0.5, -2.0, 0.0], dtype=torch.float16)
    one_up = torch.tensor([1.0 + 2**-10, 0.5, -2.0 - 2**-9, 0.0], dtype=torch.float16)
    assert grid.float16_steps(a, a) == 0.0
    assert grid.float16_steps(a, one_up) == 1.0  # one step at 1.0 and one at 2.0
    assert grid.float16_steps(a, torch.tensor([1.0, 0.5 + 2**-9, -2.0, 0.0], dtype=torch.float16)) == 4.0
