"""The fused sink-geometry and value-space reduction returns what the per-measure reference
(``tests/unit/geometry_reference.py``, the reducer's version 1) returns, up to the rounding of the dtype,
on seeded captures (the captures of tiny models: ``tests/models/test_geometry_values.py``)."""

from __future__ import annotations

import math

import pytest
import torch

from sinkframes.analyses.geometry_values import GeometryValuesReducer
from sinkframes.extraction.capture import SampleCapture
from sinkframes.metrics import geometry, values
from sinkframes.tensors import NonFiniteInputError
from tests.unit import geometry_reference as ref


def _softmax_attention(scores: torch.Tensor, causal: bool) -> torch.Tensor:
    """``[layer, head, query, key]`` rows that sum to 1, zero above the diagonal when causal."""
    n = scores.shape[-1]
    if causal:
        scores = scores.masked_fill(~torch.tril(torch.ones(n, n, dtype=torch.bool)), float("-inf"))
    return scores.softmax(-1)


def _capture(
    n: int,
    causal: bool,
    *,
    layers: int = 3,
    heads: int = 4,
    kv: int = 2,
    dim: int = 8,
    hidden: int = 12,
    hidden_scale: float = 1.0,
    sink: float = 4.0,
    seed: int = 0,
    cancelling: bool = False,
) -> SampleCapture:
    """A seeded capture with a first-token sink; ``hidden_scale`` puts the residual stream in the
    ranges where the official rescale rules (1e3, 1e5) act. ``cancelling``: uniform attention over
    states that alternate between ``v`` and ``-v`` (plus 1e-3 noise), so that every row seeing an even
    number of tokens mixes them into a vector about 1e5 times shorter than the states."""
    g = torch.Generator().manual_seed(seed)

    def r(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=g)

    scores = r(layers, heads, n, n) * (0.0 if cancelling else 1.0)
    scores[..., 0] += 0.0 if cancelling else sink  # [layer, head, query, key]
    attn = _softmax_attention(scores, causal)
    value = r(layers, kv, n, dim)
    out_heads = attn @ value.repeat_interleave(heads // kv, dim=1)  # [layer, head, token, dim]
    states = r(layers + 1, n, hidden) * hidden_scale
    states[:, 0] *= 5  # a massive first-token state, as in real models
    if cancelling:
        sign = (-1.0) ** torch.arange(n, dtype=torch.float32)  # [token]
        states = 100.0 * sign[None, :, None] * r(layers + 1, 1, hidden) + 1e-3 * r(layers + 1, n, hidden)
    return SampleCapture(
        query_pre=r(layers, heads, n, dim), query=r(layers, heads, n, dim), key_pre=r(layers, kv, n, dim),
        key=r(layers, kv, n, dim), value=value, attention=attn, output_heads=out_heads, output=r(layers, n, hidden),
        hidden=states, scaling=torch.tensor([0.3, 1 / math.sqrt(dim), 0.7])[:layers], rotary=True,
    )


CASES = [
    pytest.param(dict(n=12, causal=True), id="causal-gqa"),
    pytest.param(dict(n=12, causal=False), id="bidirectional-gqa"),
    pytest.param(dict(n=9, causal=True, kv=4), id="causal-mha"),
    pytest.param(dict(n=9, causal=True, kv=1, heads=3), id="causal-one-kv-head"),
    pytest.param(dict(n=3, causal=True), id="causal-3-tokens"),
    pytest.param(dict(n=3, causal=False), id="bidirectional-3-tokens"),
    pytest.param(dict(n=2, causal=True), id="2-tokens-no-geometry"),
    pytest.param(dict(n=10, causal=True, hidden_scale=400.0), id="magnitude-rescale"),
    pytest.param(dict(n=10, causal=False, hidden_scale=1e5), id="decomposition-rescale"),
    pytest.param(dict(n=15, causal=True, sink=12.0), id="hard-sink"),
    pytest.param(dict(n=15, causal=True, sink=-3.0), id="no-sink"),
    pytest.param(dict(n=12, causal=True, cancelling=True), id="cancelling-mixtures"),
]


@pytest.mark.parametrize("case", CASES)
def test_reducer_equals_the_reference(case):
    for seed in range(3):
        cap = _capture(**case, seed=seed)
        ref.assert_same(ref.reference_reduce(cap, case["causal"]), GeometryValuesReducer()(cap, case["causal"]))


@pytest.mark.parametrize("case", CASES[:2] + CASES[7:9])
def test_fused_functions_equal_their_references(case):
    cap, causal = _capture(**case), case["causal"]
    ref.assert_same(
        ref.reference_geometry_summary(cap.query_pre, cap.query, cap.key_pre, cap.key, cap.scaling, causal),
        geometry.geometry_summary(cap.query_pre, cap.query, cap.key_pre, cap.key, cap.scaling, causal),
    )
    states = cap.hidden
    assert states is not None
    torch.testing.assert_close(values.faithful_magnitude(states[:-1], states[1:]),
                               ref.reference_faithful_magnitude(states[:-1], states[1:]), rtol=0, atol=0)
    avg = cap.attention.mean(1)  # [layer, query, key]
    ref.assert_same(ref.reference_faithful_decomposition(avg, states[:-1]),
                 values.faithful_decomposition(avg, states[:-1]))
    torch.testing.assert_close(values.corrected_alignment(cap.attention, cap.value, causal),
                               ref.reference_corrected_alignment(cap.attention, cap.value, causal), rtol=0, atol=0)
    ref.assert_same(ref.reference_corrected_decomposition(cap.attention, cap.value, cap.output_heads, causal),
                 values.corrected_decomposition(cap.attention, cap.value, cap.output_heads, causal))


def test_scalar_scaling_and_the_error_for_too_few_tokens():
    cap = _capture(6, True)
    ref.assert_same(
        ref.reference_geometry_summary(cap.query_pre, cap.query, cap.key_pre, cap.key, 0.37, True),
        geometry.geometry_summary(cap.query_pre, cap.query, cap.key_pre, cap.key, 0.37, True),
    )
    short = _capture(2, True)
    with pytest.raises(ValueError, match="no query has a key other than position 0"):
        geometry.geometry_summary(short.query_pre, short.query, short.key_pre, short.key, 0.5, True)
    with pytest.raises(ValueError, match="must agree"):
        geometry.geometry_summary(cap.query_pre, cap.query, cap.key_pre[..., :5, :], cap.key, 0.5, True)


def test_thread_count_is_restored_and_huge_finite_values_pass_the_finite_check():
    before = torch.get_num_threads()
    cap = _capture(8, True)
    assert cap.hidden is not None
    cap.hidden[1, 2, :4] = 3e38  # finite, but their float32 sum overflows: the entrywise check decides
    GeometryValuesReducer()(cap, True)
    assert torch.get_num_threads() == before
    cap.attention[2, 1, 5, 0] = math.nan
    with pytest.raises(NonFiniteInputError, match=r"attention holds NaN or infinite values in layers \[2\]"):
        GeometryValuesReducer()(cap, True)
    assert torch.get_num_threads() == before
