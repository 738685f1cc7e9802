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


def test_transformers_own_model_loading_fails_too(tmp_path):
    """A model folder read with ``AutoModel.from_pretrained`` (as a converter's test reads its output) is a load."""
    from transformers import AutoModel, BertConfig

    BertConfig(vocab_size=8, hidden_size=4, num_hidden_layers=1, num_attention_heads=1,
               intermediate_size=4).save_pretrained(tmp_path)
    with pytest.raises(ModelLoadInUnitTier):
        AutoModel.from_pretrained(tmp_path)
