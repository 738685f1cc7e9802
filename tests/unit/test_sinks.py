"""Sink metrics on synthetic attention matrices with known answers."""

from __future__ import annotations

import math

import pytest
import torch

from sinkframes.metrics import sinks
from tests.attention_cases import causal_first_sink, causal_uniform, previous_token, stack, two_ends


def test_perfect_first_token_sink():
    a = stack(causal_first_sink(8))
    assert torch.allclose(sinks.first_token_share(a, causal=True), torch.ones(2, 3))
    assert torch.allclose(sinks.last_token_share(a, causal=True), torch.zeros(2, 3))
    assert torch.allclose(sinks.sink_concentration(a), torch.ones(2, 3))
    refs = sinks.reference_tokens(a, causal=True)
    assert refs[..., 0].all() and refs[..., 1:].sum() == 0


def test_uniform_causal_shares():
    n = 6
    a = stack(causal_uniform(n))
    expected_first = sum(1 / (i + 1) for i in range(1, n)) / (n - 1)
    assert sinks.first_token_share(a, causal=True)[0, 0].item() == pytest.approx(expected_first)
    recv = sinks.received_share(a, causal=True)
    # key n-2 is seen only by query n-1, which gives it 1/n; the last key by nobody
    assert recv[0, 0, n - 2].item() == pytest.approx(1 / n)
    assert math.isnan(recv[0, 0, n - 1].item())


def test_bidirectional_two_ends():
    n = 7
    a = stack(two_ends(n))
    first = sinks.first_token_share(a, causal=False)[0, 0].item()
    last = sinks.last_token_share(a, causal=False)[0, 0].item()
    # queries 1..n-1 give 0.5 to key 0 except the last query, which gives 1/n
    assert first == pytest.approx((0.5 * (n - 2) + 1 / n) / (n - 1))
    assert last == pytest.approx((0.5 * (n - 2) + 1 / n) / (n - 1))
    refs = sinks.reference_tokens(a, causal=False)
    assert refs[0, 0].nonzero().flatten().tolist() == [0, n - 1]


def test_uniform_bidirectional_reference_threshold():
    for n, expect in [(8, 8), (12, 0)]:  # 1/8 >= 0.1 but 1/12 < 0.1
        a = stack(torch.full((n, n), 1.0 / n))
        assert sinks.reference_tokens(a, causal=False)[0, 0].sum().item() == expect
        assert sinks.first_token_share(a, causal=False)[0, 0].item() == pytest.approx(1 / n)


def test_previous_token_head_has_no_reference_tokens():
    n = 10
    a4 = stack(previous_token(n))
    assert sinks.reference_tokens(a4, causal=True).sum() == 0
    # every query after the first peaks on a different key: concentration is 1/(n-1)
    assert sinks.sink_concentration(a4)[0, 0].item() == pytest.approx(1 / (n - 1))
    assert sinks.first_token_share(a4, causal=True)[0, 0].item() == pytest.approx(1 / (n - 1))


def test_strongest_key_share_counts_queries():
    a = torch.tensor([[1.0, 0, 0, 0], [0.9, 0.1, 0, 0], [0.2, 0.7, 0.1, 0], [0.6, 0.1, 0.1, 0.2]])
    share = sinks.strongest_key_share(stack(a))[0, 0]
    assert share.tolist() == pytest.approx([2 / 3, 1 / 3, 0, 0])


def test_faithful_reference_count_rule():
    n = 10
    # column means over all rows: only key 0 passes 0.1
    a = stack(causal_first_sink(n))
    assert sinks.faithful_reference_count(a).tolist() == [1, 1]
    # nothing passes 0.1 -> fallback to top floor(0.1 n) = 1 ... with n = 20 -> 2
    u = stack(torch.full((20, 20), 1 / 20))
    assert sinks.faithful_reference_count(u).tolist() == [2, 2]
    # everything passes -> capped at floor(0.3 n) = 1 for n = 4
    small = stack(torch.full((4, 4), 0.25))
    assert sinks.faithful_reference_count(small).tolist() == [1, 1]


def test_shape_errors_are_clear():
    with pytest.raises(ValueError, match=r"\[layer, head, query, key\]"):
        sinks.first_token_share(torch.ones(3, 3), causal=True)


def test_reducer_outputs_shapes_and_ranges():
    a = stack(causal_uniform(9), layers=4, heads=2)
    out = sinks.SinkSummaryReducer()(a, causal=True)
    assert out["first_share"].shape == (4, 2)
    assert out["faithful_reference_count"].shape == (4,)
    for k in ("first_share", "last_share", "sink_concentration", "first_concentration"):
        assert ((out[k] >= 0) & (out[k] <= 1)).all(), k


@pytest.mark.parametrize("causal", [True, False])
def test_reducer_each_equals_one_call_per_sample(causal):
    g = torch.Generator().manual_seed(3)
    w = torch.rand(5, 3, 2, 9, 9, generator=g)  # [sample, layer, head, query, key]
    if causal:
        w = w * torch.tril(torch.ones(9, 9))
    w = w / w.sum(-1, keepdim=True)
    w[2, 1, 0, :, 0] = 1.0  # one sample's head is a sink: the split must keep it with its sample and layer
    r = sinks.SinkSummaryReducer()
    together, apart = r.each(w, causal), [r(x, causal) for x in w]
    assert len(together) == 5
    for a, b in zip(together, apart, strict=True):
        assert a.keys() == b.keys()
        for k in a:
            assert torch.equal(a[k], b[k]), k
    with pytest.raises(ValueError, match="sample, layer"):
        r.each(w[0], causal)
