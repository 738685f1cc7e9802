"""Which loaded models stay in memory between analyses (``extraction.batching.get_model``)."""

from __future__ import annotations

import torch

from sinkframes.extraction import batching
from sinkframes.models import LoadedModel


def _fake_load(sizes: dict[str, int], device: str = "cpu"):
    loads: list[str] = []

    def load(ref, **kwargs):
        loads.append(ref)
        module = torch.nn.Linear(sizes[ref], 1, bias=False)  # sizes[ref] float32 parameters
        return LoadedModel(model=module, tokenizer=None, record=None, device=torch.device(device))  # type: ignore[arg-type]

    return load, loads


def test_small_models_stay_loaded_and_the_least_recent_goes_first(monkeypatch):
    monkeypatch.setattr(batching, "KEEP_MODEL_BYTES", 4 * 250)  # room for 250 float32 parameters
    load, loads = _fake_load({"a": 100, "b": 100, "c": 100})
    monkeypatch.setattr(batching.models, "load", load)
    a = batching.get_model("a")
    batching.get_model("b")
    assert batching.get_model("a") is a and loads == ["a", "b"]  # both fit: no second load
    batching.get_model("c")  # 300 > 250: the least recently used ("b") goes
    assert list(batching._MODELS) == [("a", "float32", "auto", None, None), ("c", "float32", "auto", None, None)]
    batching.get_model("b")
    assert loads == ["a", "b", "c", "b"]


def test_a_model_larger_than_the_budget_is_kept_alone(monkeypatch):
    monkeypatch.setattr(batching, "KEEP_MODEL_BYTES", 4 * 250)
    load, loads = _fake_load({"small": 10, "big": 1000})
    monkeypatch.setattr(batching.models, "load", load)
    batching.get_model("small")
    big = batching.get_model("big")
    assert [k[0] for k in batching._MODELS] == ["big"] and batching.get_model("big") is big
    assert loads == ["small", "big"]


def test_models_on_an_accelerator_are_let_go_before_the_next_loads(monkeypatch):
    load, loads = _fake_load({"a": 10, "b": 10}, device="meta")
    monkeypatch.setattr(batching.models, "load", load)
    batching.get_model("a")
    batching.get_model("b")
    assert [k[0] for k in batching._MODELS] == ["b"]
