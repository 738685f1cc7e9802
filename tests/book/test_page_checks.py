"""The reader-facing checks of executed pages (``sinkframes_build.page_checks``), each shown to fail on a
broken copy."""

from __future__ import annotations

import copy

import nbformat
import pytest

from sinkframes import manifest
from sinkframes.book.figure_caption import caption_markdown, chapter_label
from sinkframes.report import takeaways
from sinkframes_build import page_checks
from tests.conftest import ROOT

M = manifest.load_manifest(ROOT / "notebooks" / "manifest.yml")
PNG = {"image/png": "iVBORw0KGgo=", "text/plain": "<Figure size 640x480 with 1 Axes>"}
BOX = ":::{admonition} What this page finds\n:class: tip\n\n- **Holds**: supported.\n:::"


def _md(text: str):
    return nbformat.v4.new_output("display_data", data={"text/markdown": text, "text/plain": "<Markdown>"})


def _clean_page() -> nbformat.NotebookNode:
    """A small executed page as the book makes it: a result box, a captioned figure, formatted numbers."""
    nb = nbformat.v4.new_notebook()
    box = nbformat.v4.new_code_cell("pg.result_box(claim_verdicts)", outputs=[_md(BOX)])
    box.metadata["mystnb"] = {"markdown_format": "myst"}
    fig = nbformat.v4.new_code_cell("fig = frame_figures.layer_profiles(results)\npg.figure(fig, ...)", outputs=[
        nbformat.v4.new_output("display_data", data=PNG),
        _md(caption_markdown("1.1", "Four sink measures per layer.", "The share ranges from 0.12 (a) to 0.93 (b)."))])
    table = nbformat.v4.new_code_cell("t", outputs=[nbformat.v4.new_output(
        "execute_result", data={"text/html": "<table><td>0.123</td></table>", "text/plain": "{'raw': 0.1234567891}"})])
    nb.cells = [nbformat.v4.new_markdown_cell("# 1. A page"), box, fig, table]
    return nb


def test_a_clean_page_has_no_problem():
    # the DataFrame's plain-text fallback holds a dict, but the book renders its HTML: nothing to report
    assert page_checks.page_problems(_clean_page(), section=True) == []


def test_a_section_page_without_its_result_box_fails():
    nb = _clean_page()
    nb.cells[1].outputs = []
    assert page_checks.page_problems(nb, section=True) == ["no result box ('What this page finds')"]
    assert page_checks.page_problems(nb, section=False) == []  # the scorecard has no box


def test_a_figure_without_a_caption_fails():
    nb = _clean_page()
    nb.cells[2].outputs = nb.cells[2].outputs[:1]
    assert page_checks.page_problems(nb, section=True) == ["cell 2: a figure without a caption"]
    # a caption shown above the figure (as the inline backend would order it) does not count
    nb.cells[2].outputs = [_md(caption_markdown("1.1", "Caption.")), nbformat.v4.new_output("display_data", data=PNG)]
    assert page_checks.uncaptioned_figures(nb) == [2]


def test_a_myst_block_in_a_cell_that_does_not_render_myst_fails():
    nb = _clean_page()
    assert page_checks.unrendered_myst(nb) == []
    del nb.cells[1].metadata["mystnb"]
    assert page_checks.page_problems(nb, section=True) == [
        "cell 1: a MyST block shown as plain text (the cell needs mystnb.markdown_format: myst)"]


def test_a_figure_whose_labels_overlap_fails():
    nb = _clean_page()
    overlap = " *Labels overlap in this figure:* panel 1 x tick 'a' / panel 1 x tick 'b'."
    text = caption_markdown("1.1", "Crowded.") + overlap
    nb.cells[2].outputs[1] = _md(text)
    assert page_checks.page_problems(nb, section=True) == [
        "cell 2: *Labels overlap in this figure:* panel 1 x tick 'a' / panel 1 x tick 'b'."]


@pytest.mark.parametrize("text", ["{'low': 0.1, 'high': 0.3}", "{&#x27;low&#x27;: 0.1}", "r = 0.123456789012",
                                  "share -0.0000000012"])
def test_a_raw_python_value_in_the_text_fails(text):
    nb = _clean_page()
    nb.cells.append(nbformat.v4.new_code_cell("x", outputs=[_md(f"The estimate is {text}.")]))
    assert [p.split(":")[0] for p in page_checks.page_problems(nb, section=True)] == ["cell 4"]
    nb.cells[-1].outputs = []
    nb.cells.append(nbformat.v4.new_markdown_cell(f"Typed: {text}"))
    assert len(page_checks.raw_values(nb)) == 1


def test_formatted_numbers_and_math_pass():
    nb = _clean_page()
    nb.cells.append(nbformat.v4.new_markdown_cell("$\\{x_i\\}$ with 0.12345678 and {cite}`ruscio2025sinking`, "
                                                  "`{'code': 1}` is inline code"))
    # inline code quoting a dict is still a dict a reader sees: it is reported, the rest is not
    assert len(page_checks.raw_values(nb)) == 1


def test_a_broken_copy_of_a_committed_page_fails_each_check():
    page = next(p for p in M.pages if p.id == "reference_frames")
    nb = nbformat.read(ROOT / page.output, as_version=4)
    before = page_checks.page_problems(nb, section=True)
    broken = copy.deepcopy(nb)
    for cell in broken.cells:  # every caption and every result box removed, a raw dict printed
        if cell.cell_type == "code":
            cell.outputs = [o for o in cell.outputs if not str(o.get("data", {}).get("text/markdown", "")).startswith(
                ("**Figure", ":::{admonition}"))]
    broken.cells.append(nbformat.v4.new_code_cell("x", outputs=[_md("{'low': 0.1}")]))
    after = page_checks.page_problems(broken, section=True)
    assert any("no result box" in p for p in after)
    assert sum("without a caption" in p for p in after) >= 5
    assert sum("raw Python value" in p for p in after) == sum("raw Python value" in p for p in before) + 1


@pytest.mark.parametrize("page", M.pages, ids=lambda p: p.id)
def test_every_committed_page_reads_as_a_finished_page(page):
    """Every executed page: its result box (section and family pages), every figure captioned, no raw values."""
    nb = nbformat.read(ROOT / page.output, as_version=4)
    assert page_checks.page_problems(nb, section=not page.run_last) == []


def test_figure_numbers_follow_the_chapter():
    assert chapter_label("reference_frames") == "1"
    assert chapter_label("emergence") == "7"
    assert chapter_label("appendix_e_llama") == "E"
    assert chapter_label("scorecard") == "" and chapter_label(None) == ""
    with pytest.raises(ValueError):
        caption_markdown("1.1", " ")


def test_the_layer_frames_takeaway_counts_layers_and_names_each_models_frame():
    from types import SimpleNamespace

    def result(ref, kinds, label):
        return SimpleNamespace(ref=ref, data={"profile": {"layer_frames": kinds, "label": label}})

    found = takeaways.layer_frames([result("a", ["none", "centralized", "centralized"], "centralized"),
                                    result("b", ["distributed", "none"], "none"),
                                    result("c", ["centralized", "centralized"], "centralized")])
    assert found == ("Of the 7 layers of the 3 models, 2 none, 4 centralized, 1 distributed; read as a whole, "
                     "centralized: a, c; none: b.")
    assert takeaways.layer_frames([result("a", ["bidirectional"], "bidirectional")]) == (
        "Of the 1 layer of the model, 1 bidirectional; read as a whole, bidirectional: a.")
    assert takeaways.layer_frames([]) == takeaways.NOTHING


def test_a_takeaway_is_written_from_the_numbers():
    assert takeaways.spread({"a": 0.5, "b": 0.123456, "c": float("nan")}, "the share") == (
        "The share ranges from 0.123 (b) to 0.5 (a).")
    assert takeaways.spread({"a": 0.5}, "the share") == "The share is 0.5 in a."
    assert takeaways.spread({"a": 0.0, "b": 0.0}, "the share") == "The share is 0 in all 2 models."
    assert takeaways.spread({}, "the share") == takeaways.NOTHING
