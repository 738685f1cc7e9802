"""Every analysis and probe runs on tiny models while a library tensor made without a device raises
(``tests/device_trap.py``): the guard, on a machine without a GPU, against the CPU tensors that failed on CUDA
(the Fisher norms, the position interventions, the output-level check)."""

from __future__ import annotations

import pytest

from sinkframes.extraction.batching import get_model
from sinkframes.results import analyses
from sinkframes.types import RunOptions
from tests.device_trap import DefaultDeviceTrap

#: keyword arguments an analysis takes here beyond ``(models, texts, opts)``: the output-level check on two sentences
SMALLER = {"information": {"n_output": 2}}


def _run(name: str, analyse):
    return lambda ref, texts, o: analyse([ref], texts, o, **SMALLER.get(name, {}))


#: every registered analysis that reads a model (its spec has an entry point), by name: a new analysis is run here
#: and on CUDA (``tests/gpu/test_cuda.py``) by registering it, with no list to edit
RUNS = {name: _run(name, spec.analyse) for name, spec in sorted(analyses().items()) if spec.analyse is not None}


@pytest.mark.parametrize("arch", ["llama", "bert", "gemma3"])
@pytest.mark.parametrize("analysis", sorted(RUNS))
def test_the_analysis_makes_every_tensor_on_a_named_device(arch, analysis, texts):
    ref, opts = f"tiny:{arch}", RunOptions(progress=False)
    get_model(ref, opts)  # loading is transformers' business, outside the trap
    with DefaultDeviceTrap():
        results = RUNS[analysis](ref, texts[:3], opts)
    assert results, f"{analysis} returned nothing for {ref}"
