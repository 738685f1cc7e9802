"""Every reducer refuses NaN or infinite input instead of turning it into a number."""

from __future__ import annotations

import math

import pytest
import torch

from sinkframes.analyses.geometry_values import GeometryValuesReducer
from sinkframes.analyses.rmt import RMTReducer
from sinkframes.extraction.capture import SampleCapture
from sinkframes.metrics.frames import FrameSummaryReducer
from sinkframes.metrics.graphs import SpectralReducer
from sinkframes.metrics.information import InformationReducer
from sinkframes.metrics.simplex import SimplexSummaryReducer
from sinkframes.metrics.sinks import SinkSummaryReducer
from sinkframes.metrics.topology import TopologyReducer
from sinkframes.tensors import NonFiniteInputError, require_finite
from tests.attention_cases import causal_uniform, stack

REDUCERS = [SinkSummaryReducer(), FrameSummaryReducer(), SimplexSummaryReducer(), SpectralReducer(), TopologyReducer(),
            InformationReducer(), RMTReducer()]


@pytest.mark.parametrize("reducer", REDUCERS, ids=lambda r: type(r).__name__)
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf], ids=["nan", "inf", "-inf"])
def test_every_attention_reducer_refuses_non_finite_attention(reducer, bad) -> None:
    attn = stack(causal_uniform(6), layers=3, heads=2)
    reducer(attn.clone(), True)  # finite: fine
    attn[1, 0, 3, 2] = bad
    with pytest.raises(NonFiniteInputError, match=r"layers \[1\]"):
        reducer(attn, True)


def test_the_capture_reducer_refuses_non_finite_tensors() -> None:
    layers, heads, n, d = 2, 2, 5, 4
    g = torch.Generator().manual_seed(0)

    def r(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=g)

    cap = SampleCapture(query_pre=r(layers, heads, n, d), query=r(layers, heads, n, d), key_pre=r(layers, heads, n, d),
                        key=r(layers, heads, n, d), value=r(layers, heads, n, d),
                        attention=stack(causal_uniform(n), layers, heads), output_heads=r(layers, heads, n, d),
                        output=r(layers, n, 8), hidden=r(layers + 1, n, 8), scaling=torch.full((layers,), 0.5),
                        rotary=True)
    cap.value[0, 1, 2, 3] = math.nan
    with pytest.raises(NonFiniteInputError, match=r"value holds NaN or infinite values in layers \[0\]"):
        GeometryValuesReducer()(cap, True)


def test_require_finite_names_every_bad_layer() -> None:
    x = torch.zeros(4, 3)
    x[0, 1] = math.inf
    x[2, 0] = math.nan
    with pytest.raises(NonFiniteInputError, match=r"layers \[0, 2\].*float32"):
        require_finite(x)
    require_finite(torch.zeros(2, 2))
