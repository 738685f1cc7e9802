"""The nulls' summaries are cached by shape: a second call reads exactly what the first computed."""

from __future__ import annotations

import pytest
import torch

from sinkframes.metrics.graphs import SpectralReducer
from sinkframes.metrics.information import InformationReducer
from sinkframes.metrics.simplex import SimplexSummaryReducer
from sinkframes.metrics.sinks import SinkSummaryReducer
from sinkframes.metrics.topology import TopologyReducer
from sinkframes.verdicts import nulls


def _equal(a: object, b: object) -> bool:
    if isinstance(a, torch.Tensor):
        if not (isinstance(b, torch.Tensor) and a.dtype == b.dtype and a.shape == b.shape):
            return False
        same = a == b
        return bool((same | (a.isnan() & b.isnan())).all() if a.is_floating_point() else same.all())
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return (isinstance(b, (list, tuple)) and len(a) == len(b)
                and all(_equal(x, y) for x, y in zip(a, b, strict=True)))
    return a == b


class Counting:
    """A reducer that counts how often it runs."""

    def __init__(self, inner: object) -> None:
        self.inner, self.calls = inner, 0

    def key(self) -> dict:
        return self.inner.key()  # type: ignore[attr-defined]

    def __call__(self, attn: torch.Tensor, causal: bool) -> object:
        self.calls += 1
        return self.inner(attn, causal)  # type: ignore[operator]


@pytest.mark.parametrize("reducer", [SinkSummaryReducer(), InformationReducer(), SpectralReducer(per_head=False),
                                     TopologyReducer(max_tokens=12), SimplexSummaryReducer()],
                         ids=lambda r: type(r).__name__)
@pytest.mark.parametrize("causal", [True, False])
def test_a_cached_null_summary_is_the_computed_one(reducer, causal):
    computed = reducer(nulls.dense_attention(9, 2, 3, causal), causal)
    counting = Counting(reducer)
    first = nulls.null_summary(counting, nulls.dense_attention, 9, 2, 3, causal)
    second = nulls.null_summary(counting, nulls.dense_attention, 9, 2, 3, causal)
    assert _equal(first, computed) and _equal(second, computed)
    assert counting.calls == 1  # the second call read the cache


def test_another_shape_is_another_entry():
    r = SinkSummaryReducer()
    a = nulls.null_summary(r, nulls.uniform_attention, 6, 2, 2, True)
    b = nulls.null_summary(r, nulls.uniform_attention, 7, 2, 2, True)
    assert int(a["n_tokens"]) == 6 and int(b["n_tokens"]) == 7
