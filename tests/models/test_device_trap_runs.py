"""Every analysis and probe runs on tiny models while a library tensor made without a device raises
(``tests/device_trap.py``): the guard, on a machine without a GPU, against the CPU tensors that failed on CUDA
(the Fisher norms, the position interventions, the output-level check)."""

from __future__ import annotations

import pytest

from sinkframes.analyses import (
    frames,
    geometry_values,
    information,
    positions,
    rmt,
    softmax_geometry,
    spectral,
    topology,
)
from sinkframes.extraction.batching import get_model
from sinkframes.types import RunOptions
from tests.device_trap import DefaultDeviceTrap

RUNS = {
    "frames": lambda ref, texts, o: frames.analyse([ref], texts, o),
    "information": lambda ref, texts, o: information.analyse([ref], texts, o, n_output=2),
    "positions": lambda ref, texts, o: positions.analyse([ref], texts, o),
    "spectral": lambda ref, texts, o: spectral.analyse([ref], texts, o),
    "topology": lambda ref, texts, o: topology.analyse([ref], texts, o),
    "geometry_values": lambda ref, texts, o: geometry_values.analyse([ref], texts, o),
    "softmax_geometry": lambda ref, texts, o: softmax_geometry.analyse([ref], texts, o),
    "rmt": lambda ref, texts, o: rmt.analyse([ref], texts, o),
}


@pytest.mark.parametrize("arch", ["llama", "bert", "gemma3"])
@pytest.mark.parametrize("analysis", sorted(RUNS))
def test_the_analysis_makes_every_tensor_on_a_named_device(arch, analysis, texts):
    ref, opts = f"tiny:{arch}", RunOptions(progress=False)
    get_model(ref, opts)  # loading is transformers' business, outside the trap
    with DefaultDeviceTrap():
        results = RUNS[analysis](ref, texts[:3], opts)
    assert results, f"{analysis} returned nothing for {ref}"
