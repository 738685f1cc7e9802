"""Every figure of the book has alt text: its figure function's first docstring paragraph."""

from __future__ import annotations

import nbformat
import pytest

from sinkframes import manifest
from sinkframes.figures import frames
from sinkframes_build.alt_text import alt_text, set_alt_texts
from tests.conftest import ROOT

M = manifest.load_manifest(ROOT / "notebooks" / "manifest.yml")
PNG = {"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"}


@pytest.mark.parametrize("page", M.pages, ids=lambda p: p.id)
def test_every_committed_figure_has_alt_text(page):
    nb = nbformat.read(ROOT / page.output, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code" and any("image/png" in o.get("data", {}) for o in cell.outputs):
            alt = cell.metadata.get("mystnb", {}).get("image", {}).get("alt", "")
            assert len(alt) > 20 and "``" not in alt, (page.id, cell.source[:80])


def test_the_alt_text_is_the_drawing_functions_docstring():
    nb = nbformat.v4.new_notebook()
    imports = nbformat.v4.new_code_cell("from sinkframes.figures import frames as frame_figures")
    drawn = nbformat.v4.new_code_cell("fig = frame_figures.layer_profiles(results)",
                                      outputs=[nbformat.v4.new_output("display_data", data=PNG)])
    unknown = nbformat.v4.new_code_cell("plt.plot([1, 2])", outputs=[nbformat.v4.new_output("display_data", data=PNG)])
    nb.cells = [imports, drawn, unknown]
    assert set_alt_texts(nb) == [2]  # the cell drawn without a figure function is reported
    assert drawn.metadata["mystnb"]["image"]["alt"] == alt_text(frames.layer_profiles)
    assert alt_text(frames.layer_profiles).startswith("Per-layer") and "\n" not in alt_text(frames.layer_profiles)
