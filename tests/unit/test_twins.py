"""The random-initialized twin beside a result: attached, never nested, and a failing twin loses nothing."""

from __future__ import annotations

import pytest

from sinkframes.results import TWIN, ModelResult, with_twin


def _result(ref: str) -> ModelResult:
    return ModelResult("topology", {"ref": ref, "n_layers": 2, "family": "llama", "causal": True}, 3)


def test_the_twin_is_the_same_analysis_of_the_random_prefixed_reference():
    asked: list[str] = []

    def run(ref: str) -> ModelResult:
        asked.append(ref)
        return _result(ref)

    r = with_twin(_result("smollm2"), run)
    assert asked == ["random:smollm2"] and r.data[TWIN].ref == "random:smollm2"
    # a twin gets no twin of its own
    assert TWIN not in with_twin(_result("random:smollm2"), run).data and asked == ["random:smollm2"]


def test_a_failing_twin_is_announced_and_the_model_result_survives():
    def run(ref: str) -> ModelResult:
        raise MemoryError("no room for a second copy")

    r = _result("qwen05")
    with pytest.warns(RuntimeWarning, match="random:qwen05.*MemoryError.*without the random-initialized twin"):
        out = with_twin(r, run)
    assert out is r and TWIN not in r.data and r.ref == "qwen05"


def test_each_attention_analysis_declares_its_null_in_its_spec():
    """The analyses whose measures are checked against structureless attention are exactly those whose registered
    spec gives the null (the registry, not a list of names)."""
    from sinkframes.results import analyses
    from sinkframes.verdicts import measures as M
    from sinkframes.verdicts.nulls import null_result

    attention_nulls = {m.analysis for m in M.registered().values() if "attention" in (m.null, *m.extra_nulls)}
    declared = {name for name, spec in analyses().items() if spec.on_uniform_attention is not None}
    assert attention_nulls and attention_nulls == declared
    assert analyses()["spectral"].attention_null_name == "dense graph"
    for name in ("geometry_values", "no-such-analysis"):
        with pytest.raises(ValueError, match="no attention null"):
            null_result(ModelResult(name, {"ref": "m"}, 1))
