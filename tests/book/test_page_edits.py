"""A page as a reader meets it: one failing model leaves the others rendered, and an edited
``parameters`` cell is what reruns (no hidden cell undoes it)."""

from __future__ import annotations

import ast
import dataclasses
import json

import nbformat
import pytest

from sinkframes import manifest
from sinkframes_build import execute
from tests.conftest import ROOT

M = manifest.load_manifest(ROOT / "notebooks" / "manifest.yml")


def _text(nb: nbformat.NotebookNode) -> str:
    return "\n".join(json.dumps(o.get("data", o.get("text", ""))) for c in nb.cells if c.cell_type == "code"
                     for o in c.outputs)


@pytest.mark.slow
def test_a_failing_model_is_reported_the_others_render_and_an_edit_reruns(tmp_path):
    page = M.page("reference_frames")
    smoke = page.params_for("smoke")
    broken = dataclasses.replace(page, parameters={"smoke": {**page.parameters["smoke"],
                                                             "models": ["tiny:llama", "tiny:nonexistent"],
                                                             "bos_comparison": ["tiny:llama"]}})
    with pytest.raises(execute.PartialPageError, match="tiny:nonexistent"):
        execute.run_page(broken, "smoke", ROOT, tmp_path)
    path = tmp_path / "01_reference_frames.ipynb"
    assert path.exists() and execute.has_error_output(path) == []  # written, and every cell ran
    assert execute.failed_models(path) == ["tiny:nonexistent"]
    nb = nbformat.read(path, as_version=4)
    text = _text(nb)
    assert "unknown tiny architecture" in text and "layers, 4 query heads" in text  # the failure, and tiny:llama

    # the reader edits the one parameters cell and runs the page as Jupyter or Colab would (no papermill)
    cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    ran = {t.id: ast.literal_eval(s.value) for s in ast.parse(cell.source).body for t in s.targets}
    assert ran["models"] == ["tiny:llama", "tiny:nonexistent"] and ran["n_sentences"] == smoke["n_sentences"]
    cell.source = cell.source.replace('models = ["tiny:llama", "tiny:nonexistent"]', 'models = ["tiny:qwen2"]')
    cell.source = cell.source.replace('bos_comparison = ["tiny:llama"]', 'bos_comparison = ["tiny:qwen2"]')
    assert 'models = ["tiny:qwen2"]' in cell.source and 'bos_comparison = ["tiny:qwen2"]' in cell.source
    from nbclient import NotebookClient

    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}).execute()
    text = _text(nb)
    assert "`tiny:qwen2`: qwen2" in text and "tiny:llama" not in text and "Model failed" not in text
    assert "`custom` parameters" in text  # the provenance says the run was edited

    # an edit of a parameter that setup() is not given (bos_comparison) counts as well
    cell.source = cell.source.replace('models = ["tiny:qwen2"]', f"models = {json.dumps(smoke['models'])}")
    cell.source = cell.source.replace('bos_comparison = ["tiny:qwen2"]', 'bos_comparison = ["tiny:llama"]')
    assert 'bos_comparison = ["tiny:llama"]' in cell.source
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}).execute()
    assert "`custom` parameters" in _text(nb)
