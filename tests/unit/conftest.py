"""The unit tier loads no model: every way the library builds one (``models.load``, ``models.load_masked_lm``, the
tiny models' ``build_tiny``) and transformers' own ``from_pretrained`` of a model raise here, so a unit test that
reaches a model fails instead of quietly costing seconds. Tests that need a model belong in ``tests/models`` (tiny
models) or ``tests/offline`` (the real ones)."""

from __future__ import annotations

import pytest


class ModelLoadInUnitTier(AssertionError):
    """A unit test reached a model load."""


def _refuse(*args, **kwargs):
    raise ModelLoadInUnitTier(f"the unit tier loads no model (asked for {args[:1]}): move the test to tests/models")


@pytest.fixture(autouse=True)
def no_model_loads(monkeypatch):
    import sinkframes.models as models
    import sinkframes.models.loading as loading
    import sinkframes.models.tiny as tiny
    import sinkframes.probes.fisher as fisher

    for module, name in ((models, "load"), (loading, "load"), (models, "load_masked_lm"), (loading, "load_masked_lm"),
                         (fisher, "load_masked_lm"), (tiny, "build_tiny")):
        monkeypatch.setattr(module, name, _refuse)
    from transformers import PreTrainedModel

    monkeypatch.setattr(PreTrainedModel, "from_pretrained", classmethod(_refuse))  # every model class, Auto* too
