"""One failing model is reported and the others still come back (results.each_model)."""

from __future__ import annotations

import nbformat
import pytest

from sinkframes.report import model_notes
from sinkframes.results import (
    FAILED_MODELS_KEY,
    AllModelsFailedError,
    ModelFailure,
    ModelResult,
    Results,
    each_model,
)
from sinkframes_build.execute import failed_models

RECORD = {"ref": "", "architecture": "llama", "family": "llama", "n_layers": 2, "n_heads": 2, "n_kv_heads": 1,
          "position_encoding": "RoPE", "quantization": "none", "adds_bos": True, "position0_token": "<s>"}


def _run(ref: str) -> ModelResult:
    if ref.startswith("bad"):
        raise ValueError(f"cannot load {ref}")
    return ModelResult(analysis="test", record={**RECORD, "ref": ref}, n_sentences=1)


def test_a_failing_model_is_recorded_and_the_others_come_back_in_order():
    with pytest.warns(RuntimeWarning, match="`bad1` failed in the test analysis"):
        out = each_model(["a", "bad1", "b"], _run, "test")
    assert isinstance(out, Results) and [r.ref for r in out] == ["a", "b"]
    assert out.failures == [ModelFailure("bad1", "test", "ValueError: cannot load bad1")]
    notes = model_notes(out).splitlines()
    assert len(notes) == 3 and notes[-1].startswith("- **`bad1` failed") and "ValueError: cannot load bad1" in notes[-1]


def test_no_failure_no_warning_and_an_empty_list_is_allowed(recwarn):
    assert [r.ref for r in each_model(["a"], _run, "test")] == ["a"]
    assert each_model([], _run, "test") == [] and not recwarn.list


def test_every_model_failing_is_an_error_naming_each():
    with pytest.warns(RuntimeWarning), pytest.raises(AllModelsFailedError, match="bad1.*\n.*bad2") as info:
        each_model(["bad1", "bad2"], _run, "test")
    assert isinstance(info.value.__cause__, ValueError)


def test_an_interrupt_is_not_swallowed():
    def stop(ref: str) -> ModelResult:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        each_model(["a"], stop, "test")


def test_the_build_finds_failed_models_in_a_page(tmp_path):
    nb = nbformat.v4.new_notebook()
    marked = nbformat.v4.new_output("display_data", data={"text/markdown": "**Model failed.**"},
                                    metadata={FAILED_MODELS_KEY: ["bad1"]})
    again = nbformat.v4.new_output("display_data", data={"text/markdown": "**Model failed.**"},
                                   metadata={FAILED_MODELS_KEY: ["bad1"]})
    plain = nbformat.v4.new_output("display_data", data={"text/markdown": "fine"})
    nb.cells = [nbformat.v4.new_code_cell("x", outputs=[plain, marked]),
                nbformat.v4.new_code_cell("y", outputs=[again])]
    nbformat.write(nb, tmp_path / "p.ipynb")
    assert failed_models(tmp_path / "p.ipynb") == ["bad1"]
    nb.cells = nb.cells[:1]
    nb.cells[0].outputs = [plain]
    nbformat.write(nb, tmp_path / "q.ipynb")
    assert failed_models(tmp_path / "q.ipynb") == []
