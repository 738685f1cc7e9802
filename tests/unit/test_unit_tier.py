"""The unit tier's guard (``tests/unit/conftest.py``) refuses every way to a model."""

from __future__ import annotations

import pytest

from .conftest import ModelLoadInUnitTier


@pytest.mark.parametrize("ref", ["tiny:llama", "minilm", "random:tiny:bert"])
def test_a_model_load_fails_in_the_unit_tier(ref):
    from sinkframes.extraction.batching import get_model

    with pytest.raises(ModelLoadInUnitTier):
        get_model(ref, device="cpu")


def test_the_masked_lm_and_the_tiny_builder_fail_too():
    from sinkframes.models import load_masked_lm
    from sinkframes.models.tiny import build_tiny

    for call in (lambda: load_masked_lm("tiny:bert"), lambda: build_tiny("llama")):
        with pytest.raises(ModelLoadInUnitTier):
            call()
