"""The committed controlled-grid checkpoints: complete, loadable, and remade bit for bit by their first steps."""

from __future__ import annotations

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


def test_the_first_steps_of_one_run_of_each_kind_are_remade_bit_for_bit():
    diffs = grid.check(step=64)
    assert len(diffs) == 6
    assert diffs == {name: 0.0 for name in diffs}
