"""The one batching loop's plan and padding, on token ids with a known layout (no model)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
import torch

from sinkframes.extraction.batching import iterate_batches, length_sorted_batches, pad_batch

IDS = [[5, 6, 7], [8], [9, 10]]


def _lm(pad_token_id: int | None = 0) -> Any:
    """What the loop reads of a loaded model: its tokenizer's padding id."""
    return SimpleNamespace(tokenizer=SimpleNamespace(pad_token_id=pad_token_id))


def test_pad_batch_pads_right_to_the_longest_or_to_a_width():
    ids, mask = pad_batch(IDS, 1)
    assert ids.tolist() == [[5, 6, 7], [8, 1, 1], [9, 10, 1]]
    assert mask.tolist() == [[1, 1, 1], [1, 0, 0], [1, 1, 0]]
    ids, mask = pad_batch([[8]], 2, width=3)
    assert ids.tolist() == [[8, 2, 2]] and mask.tolist() == [[1, 0, 0]]
    with pytest.raises(ValueError, match="shorter than the longest"):
        pad_batch(IDS, 0, width=2)


def test_default_plan_is_length_sorted():
    assert length_sorted_batches([3, 1, 2], 2) == [[1, 2], [0]]
    got = [(b, ids.tolist()) for b, ids, _ in iterate_batches(_lm(), IDS, 2, progress=False)]
    assert got == [([1, 2], [[8, 0], [9, 10]]), ([0], [[5, 6, 7]])]


def test_a_callers_plan_padding_id_and_width():
    """The official Fisher padding: sentences one at a time in their order, each padded to the set's longest."""
    out = list(iterate_batches(_lm(), IDS, None, progress=False, batches=[[0], [1], [2]], pad=4, width=3))
    assert [b for b, _, _ in out] == [[0], [1], [2]]
    assert torch.cat([ids for _, ids, _ in out]).tolist() == [[5, 6, 7], [8, 4, 4], [9, 10, 4]]
    assert torch.cat([m for _, _, m in out]).tolist() == [[1, 1, 1], [1, 0, 0], [1, 1, 0]]


def test_a_plan_is_either_a_batch_size_or_the_callers_batches():
    with pytest.raises(ValueError, match="not both"):
        list(iterate_batches(_lm(), IDS, 2, progress=False, batches=[[0], [1], [2]]))
    with pytest.raises(ValueError, match="not neither"):
        list(iterate_batches(_lm(), IDS, None, progress=False))
