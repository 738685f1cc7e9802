"""Book structure: templates, manifest, table of contents, executed pages, smoke runs, HTML build."""

from __future__ import annotations

import ast
import copy
import json
import os
import re
from pathlib import Path

import nbformat
import pytest

from sinkframes import manifest
from sinkframes.book import params
from sinkframes_build import batch, compare, execute, page_checks, pages
from tests.conftest import ROOT

M = manifest.load_manifest(ROOT / "notebooks" / "manifest.yml")
TEMPLATES = sorted((ROOT / "notebooks").glob("*.ipynb"))


def test_every_template_is_in_the_manifest():
    assert sorted({ROOT / p.template for p in M.pages}) == TEMPLATES


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: p.name)
def test_template_structure(path):
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(not c.outputs and c.execution_count is None for c in code), "templates are committed without outputs"
    tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1, "exactly one cell tagged 'parameters'"
    params = ast.parse(tagged[0].source)
    assert all(isinstance(s, ast.Assign) and isinstance(s.value, (ast.Constant, ast.List)) for s in params.body), (
        "literals only"
    )
    for c in code:
        # IPython magics (the Colab install line) are not Python: parse them as `pass`
        src = "\n".join(
            line[: len(line) - len(line.lstrip())] + "pass" if line.lstrip().startswith(("%", "!")) else line
            for line in c.source.splitlines()
        )
        tree = ast.parse(src)
        assert not any(isinstance(n, (ast.FunctionDef, ast.ClassDef)) for n in ast.walk(tree)), (
            "no def/class in notebooks"
        )


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: p.name)
def test_machinery_cells_are_hidden_in_the_rendered_page(path):
    # the rendered page opens with its title and its finding: the install cell is left out of the HTML, the
    # parameters and the setup show their outputs but not their code; on Colab and in JupyterLab (and in the
    # notebook a reader downloads) the tags change nothing
    nb = nbformat.read(path, as_version=4)
    for c in (c for c in nb.cells if c.cell_type == "code"):
        tags = c.metadata.get("tags", [])
        if "google.colab" in c.source:
            assert "remove-cell" in tags
        if "parameters" in tags or "page.setup(" in c.source:
            assert "remove-input" in tags
        if "page.setup(" in c.source:
            # the provenance is shown after the result box, which says what the page found
            assert "show=False" in c.source


def _verdict_pages() -> list[Path]:
    """The templates that compute their verdicts (a section page through ``pg.verdicts``, the family template
    through ``family_verdicts``)."""
    return [p for p in TEMPLATES
            if "pg.verdicts(" in p.read_text() or "family_report.family_verdicts(" in p.read_text()]


def test_the_verdict_pages_are_the_templates_of_the_pages_the_registry_claims_name():
    from sinkframes.paper.claims import CLAIMS

    claimed = {c.page for c in CLAIMS if c.testable}
    templates = {ROOT / p.template for p in M.pages if p.id in claimed}
    # the grids of chapter 9 have no model set-up: their page saves its verdicts through page.save_verdicts
    by_the_grid_api = {p for p in templates if "page.save_verdicts(" in p.read_text()}
    assert [p.name for p in by_the_grid_api] == ["09_controlled_emergence.ipynb"]
    assert set(_verdict_pages()) == templates - by_the_grid_api
    assert {p.name for p in _verdict_pages()} >= {"01_reference_frames.ipynb", "family_appendix.ipynb"}


@pytest.mark.parametrize("path", _verdict_pages(), ids=lambda p: p.name)
def test_every_section_and_family_page_shows_its_result_box_before_its_verdict_table(path):
    # the box is computed where the page's verdicts are (one evaluation, shown at once), rendered as MyST (it is an
    # admonition), with its code folded away; the verdict table at the end shows the same verdicts
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    box = [i for i, c in enumerate(code) if "result_box(claim_verdicts" in c.source]
    table = [i for i, c in enumerate(code) if "pg.verdict_table(claim_verdicts" in c.source]
    assert len(box) == 1 and len(table) == 1 and box[0] < table[0]
    cell = code[box[0]]
    assert "claim_verdicts = " in cell.source and "show=False" in cell.source or "family_verdicts(fr)" in cell.source
    assert cell.metadata.get("mystnb", {}).get("markdown_format") == "myst"
    assert "hide-input" in cell.metadata.get("tags", [])
    assert sum("claim_verdicts = " in c.source for c in code) == 1, "the verdicts are computed once"
    if any("page.setup(" in c.source for c in code):
        assert "provenance=True" in cell.source, "how the page was made follows what it found"
    if path.name != "07_emergence.ipynb":  # its verdicts need the training run, further down the page
        setup = next(i for i, c in enumerate(code) if "page.setup(" in c.source)
        assert box[0] == setup + 1, "the box follows the page's set-up, before its first section"


@pytest.mark.parametrize("page", M.pages, ids=lambda p: p.id)
def test_manifest_parameters_are_template_parameters(page):
    nb = nbformat.read(ROOT / page.template, as_version=4)
    cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    names = {t.id for s in ast.parse(cell.source).body for t in s.targets}
    for profile in page.parameters:  # the required profiles and any optional one the page defines
        unknown = set(page.params_for(profile)) - names
        assert not unknown, f"{page.id}/{profile}: {unknown}"
    shared = sum(p.template == page.template for p in M.pages) > 1
    if not shared:  # a shared template has a generic title; the batch run gives each page its own
        title = next(c for c in nb.cells if c.cell_type == "markdown").source.splitlines()[0]
        assert title == f"# {page.title}"


def test_the_family_appendices_are_one_template_run_with_other_parameters():
    pages = [p for p in M.pages if p.template == "notebooks/family_appendix.ipynb"]
    assert [p.params_for("offline")["family"] for p in pages] == ["llama", "qwen", "gemma_mistral", "encoders",
                                                                    "phi", "pythia", "bloom"]
    assert [p.part for p in pages] == ["Model families"] * 7
    executed = [nbformat.read(ROOT / p.output, as_version=4) for p in pages]
    code = [[c.source for c in nb.cells if c.cell_type == "code" and "parameters" not in c.metadata.get("tags", [])
             and not c.source.startswith("# On Colab")] for nb in executed]
    assert all(c == code[0] for c in code[1:]) and code[0]  # the same code, cell for cell
    titles = [next(c for c in nb.cells if c.cell_type == "markdown").source.splitlines()[0] for nb in executed]
    assert titles == [f"# {manifest.toc_title(p)}" for p in pages]  # "(not run here)" for a pipeline check
    assert titles[-2] == "# J. Pythia (not run here)"
    assert titles[-1] == "# K. BLOOM: ALiBi, a family the paper did not study (not run here)"
    families = {nb.metadata["papermill"]["parameters"]["family"] for nb in executed}
    assert len(families) == 7  # ... with other parameters


def test_toc_matches_manifest():
    assert (ROOT / "_toc.yml").read_text() == manifest.render_toc(M)


@pytest.mark.parametrize("page", M.pages, ids=lambda p: p.id)
def test_executed_pages_are_committed_and_clean(page):
    path = ROOT / page.output
    assert path.exists(), f"{page.output} missing: run `make book`"
    assert execute.has_error_output(path) == []
    nb = nbformat.read(path, as_version=4)
    streams = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.get("name") == "stderr"]
    assert not streams
    assert nb.metadata["papermill"]["parameters"]["profile"] == "offline"
    assert pages.provenance_problems(nb) == []
    assert path.stat().st_size < 5_000_000
    # one parameters cell, holding the values the page ran with (a reader's edit is what reruns)
    assert not [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
    cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    ran = {t.id: ast.literal_eval(s.value) for s in ast.parse(cell.source).body for t in s.targets}
    assert {k: ran[k] for k in nb.metadata["papermill"]["parameters"]} == nb.metadata["papermill"]["parameters"]
    offline = page.params_for("offline")
    assert {k: ran.get(k) for k in offline} == offline, "the page disagrees with its manifest entry: run `make book`"


def _params_notebook(defaults: str, injected: str | None) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    p = nbformat.v4.new_code_cell(defaults)
    p.metadata["tags"] = ["parameters"]
    nb.cells = [nbformat.v4.new_markdown_cell("# T"), p]
    if injected is not None:
        inj = nbformat.v4.new_code_cell(injected)
        inj.metadata["tags"] = ["injected-parameters"]
        nb.cells.append(inj)
    nb.cells.append(nbformat.v4.new_code_cell("print(models)"))
    return nb


def test_injected_parameters_are_folded_into_the_parameters_cell():
    nb = _params_notebook('models = ["a", "b"]\nn = 3\npath = None', '# Parameters\nmodels = ["c"]\npath = "x\'y"\n')
    assert params.merge_parameters(nb) is True
    assert len(nb.cells) == 3 and nb.cells[1].source == 'models = ["c"]\nn = 3\npath = "x\'y"'
    assert params.merge_parameters(nb) is False  # nothing injected any more: unchanged
    extra = _params_notebook("n = 3", "profile = 'smoke'\nn = 4")
    assert params.merge_parameters(extra) and extra.cells[1].source == 'n = 4\nprofile = "smoke"'


def _first_page() -> nbformat.NotebookNode:
    return nbformat.read(ROOT / M.pages[0].output, as_version=4)


def test_provenance_check_fails_on_a_page_without_or_with_a_wrong_provenance_line():
    nb = _first_page()
    assert pages.provenance_problems(nb) == []
    wrong_models = copy.deepcopy(nb)
    wrong_models.metadata["papermill"]["parameters"]["models"] = ["minilm"]
    assert any("models" in p for p in pages.provenance_problems(wrong_models))
    wrong_profile = copy.deepcopy(nb)
    wrong_profile.metadata["papermill"]["parameters"]["profile"] = "paper"
    assert any("profile" in p for p in pages.provenance_problems(wrong_profile))
    stripped = copy.deepcopy(nb)
    for cell in stripped.cells:
        if cell.cell_type == "code":
            cell.outputs = [o for o in cell.outputs if "Produced by" not in json.dumps(o)]
    assert pages.provenance_problems(stripped) == [
        "no provenance line ('**Produced by** sinkframes ...') among the page's outputs"
    ]


def _first_plain_output(nb):
    """The first ``text/plain`` output of ``nb`` other than the provenance line (to edit in place)."""
    return next(
        o
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
        if "text/plain" in o.get("data", {}) and "Produced by" not in json.dumps(o)
    )


def test_page_comparison_sees_a_changed_number_and_ignores_figures(tmp_path):
    nb = _first_page()
    nbformat.write(nb, tmp_path / "a.ipynb")
    assert compare.compare_notebooks(tmp_path / "a.ipynb", tmp_path / "a.ipynb") == []
    changed = copy.deepcopy(nb)
    out = _first_plain_output(changed)
    out["data"]["text/plain"] = out["data"]["text/plain"] + " 0.001"
    nbformat.write(changed, tmp_path / "b.ipynb")
    problems = compare.compare_notebooks(tmp_path / "a.ipynb", tmp_path / "b.ipynb")
    assert len(problems) == 1 and "+" in problems[0] and "0.001" in problems[0]
    no_images = copy.deepcopy(nb)
    for c in no_images.cells:
        for o in c.get("outputs", []):
            o.get("data", {}).pop("image/png", None)
    nbformat.write(no_images, tmp_path / "c.ipynb")
    assert compare.compare_notebooks(tmp_path / "a.ipynb", tmp_path / "c.ipynb") == []


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("0.651 [0.617, 0.685]", "0.651 [0.617, 0.685]", 0),
        ("0.651 [0.617, 0.685]", "0.651 [0.617, 0.684]", 1),  # one unit in the last digit: round-off
        ("0.784 [0.768, 0.801]", "0.785 [0.768, 0.800]", 2),
        ("ratio 1.1 at t = 0.2", "ratio 1.09 at t = 0.2", 1),  # 1.095 printed to 3 digits either way
        ("1.5e-05", "1.6e-05", 1),
        ("0.651 [0.617, 0.685]", "0.651 [0.617, 0.687]", None),  # two units
        ("0.685", "0.6862", None),  # more than one unit of the finer print
        ("0.651 [0.617, 0.685]", "0.651 [0.617, 0.683]", None),  # two units
        ("0.5", "1", None),  # an integer is a word: it must match
        ("n = 100", "n = 101", None),
        ("0.651 supported", "0.652 not supported", None),  # a verdict's words must match
        ("1.5e-05", "1.5e-04", None),
        ("0.1 0.2", "0.1", None),
        # a text table pads its columns: a number printed one digit shorter moves the padding, nothing else
        ("14        supported: 0.72 [0.703, 0.739]", "14       supported: 0.721 [0.704, 0.739]", 2),
        ("14        supported: 0.72", "14 supported: 0.73", 1),
        ("a  b", "a b", 0),
        ("a b", "ab", None),  # a blank removed joins two words
        ("a\nb", "a b", None),  # a line break is not padding
        ("14  supported: 0.72", "14  supported: 0.74", None),
        ("<td>0.<wbr>72 [0.<wbr>703]</td>", "<td>0.<wbr>721 [0.<wbr>704]</td>", 2),  # an HTML line-break hint
        ("<td>0.<wbr>72</td>", "<td>0.<wbr>75</td>", None),
    ],
)
def test_roundoff_is_one_unit_in_the_last_printed_decimal_digit(a, b, expected):
    assert compare.roundoff_differences(a, b) == expected


def test_page_comparison_forgives_last_digit_roundoff_unless_exact(tmp_path):
    nb = _first_page()
    nbformat.write(nb, tmp_path / "a.ipynb")
    moved = copy.deepcopy(nb)
    out = _first_plain_output(moved)
    out["data"]["text/plain"] = out["data"]["text/plain"] + " 0.685"
    nbformat.write(moved, tmp_path / "b.ipynb")
    out["data"]["text/plain"] = out["data"]["text/plain"][: -len("0.685")] + "0.684"
    nbformat.write(moved, tmp_path / "c.ipynb")
    assert compare.compare_counting_roundoff(tmp_path / "b.ipynb", tmp_path / "c.ipynb") == ([], 1)
    exact = compare.compare_notebooks(tmp_path / "b.ipynb", tmp_path / "c.ipynb", exact=True)
    assert len(exact) == 1 and "0.684" in exact[0]
    # a number added to a text is a difference, round-off or not
    assert len(compare.compare_notebooks(tmp_path / "a.ipynb", tmp_path / "c.ipynb")) == 1
    prose = copy.deepcopy(nb)
    cell = next(c for c in prose.cells if c.cell_type == "markdown")
    cell.source += "\nA sentence the template gained."
    nbformat.write(prose, tmp_path / "d.ipynb")
    problems = compare.compare_notebooks(tmp_path / "a.ipynb", tmp_path / "d.ipynb")
    assert len(problems) == 1 and problems[0].startswith("markdown cell") and "gained" in problems[0]


@pytest.fixture(scope="module")
def smoke_dir(tmp_path_factory):
    """One folder for every smoke page, so the scorecard (run last) reads the verdicts the others saved."""
    return tmp_path_factory.mktemp("smoke")


#: set by .ci/run, which runs `make test-installed` beside `make test`: every template then runs with the smoke profile
#: there (from an installed copy, with the same checks: tests/installed/run_templates.py), not twice
SMOKE_IN_INSTALLED = "SINKFRAMES_SMOKE_IN_INSTALLED"


@pytest.mark.slow
@pytest.mark.parametrize("page", sorted(M.pages, key=lambda p: p.run_last), ids=lambda p: p.id)
def test_smoke_run_of_every_template(page, smoke_dir):
    if os.environ.get(SMOKE_IN_INSTALLED) == "1":
        pytest.skip("this template runs with the smoke profile in make test-installed, beside this run (.ci/run)")
    out = execute.run_page(page, "smoke", ROOT, smoke_dir)
    assert out.exists() and execute.has_error_output(out) == []
    # the result box, a caption under every figure, no raw Python values (sinkframes_build.page_checks)
    assert page_checks.page_problems(nbformat.read(out, as_version=4), section=not page.run_last) == []
    assert not list(smoke_dir.glob(".*.running.ipynb"))
    # the section pages save their verdicts beside their copies; a family page that ran a model saves its own
    # reading of the claims the section pages decide, a pipeline check nothing; the scorecard, run last, reads them
    if page.run_last:
        assert page_checks.verdict_problems(M.pages, smoke_dir / "verdicts") == []
    elif page.id in page_checks.verdict_savers(M.pages):
        assert page_checks.saved_verdict_problems(page.id, smoke_dir / "verdicts") == []


def test_failed_page_is_reported_and_leaves_nothing(tmp_path, monkeypatch, capsys):
    broken = tmp_path / "broken.ipynb"
    nb = nbformat.v4.new_notebook()
    p = nbformat.v4.new_code_cell("x = 1")
    p.metadata["tags"] = ["parameters"]
    nb.cells = [nbformat.v4.new_markdown_cell("# Broken"), p, nbformat.v4.new_code_cell("raise RuntimeError('boom')")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, broken)
    good = tmp_path / "good.ipynb"
    nb.cells = nb.cells[:2] + [nbformat.v4.new_code_cell("print(x)")]
    nbformat.write(nb, good)
    params = {k: {"x": 2} for k in manifest.PROFILES}
    m = manifest.Manifest(
        root="book/intro",
        back_matter=[],
        pages=[
            manifest.Page("broken", str(broken), "book/broken.ipynb", "Broken", "Tests", params, 60),
            manifest.Page("good", str(good), "book/good.ipynb", "Good", "Tests", params, 60),
        ],
    )
    out = tmp_path / "out"
    rc = batch.build(profile="smoke", out_dir=str(out), html=False, manifest=m)
    err = capsys.readouterr().err
    assert rc == 1
    assert "broken" in err and "boom" in err
    assert (out / "good.ipynb").exists()
    assert not (out / "broken.ipynb").exists() and not list(out.glob(".*running*"))


@pytest.mark.slow
def test_book_builds_without_warnings(built_html):
    html = built_html  # built with -W (warnings are errors) by the session fixture
    assert (html / "index.html").exists()
    page = html / "book" / "01_reference_frames.html"
    assert page.exists()
    assert re.search(r"sinkframes\s+\d", page.read_text())
    # the formulas need no network: MathJax and its fonts come with the site, no page names a CDN
    math_page = (html / "book" / "02_softmax_geometry.html").read_text()
    assert re.search(r'src="[./]*_static/mathjax/tex-mml-chtml\.js(\?v=\w+)?"', math_page)
    assert (html / "_static" / "mathjax" / "tex-mml-chtml.js").is_file()
    assert list((html / "_static" / "mathjax" / "output" / "chtml" / "fonts" / "woff-v2").glob("*.woff"))
    assert not [p.name for p in html.rglob("*.html") if "cdn.jsdelivr.net" in p.read_text()]
    assert math_page.count("mathjax/tex-mml-chtml.js") == 1  # loaded once
    # ... and only where there is math; every script once per page; no empty index page
    assert "mathjax" not in (html / "book" / "intro.html").read_text().lower().split("<body")[0]
    assert all(p.read_text().count("const THEBE_JS_URL") <= 1 for p in html.rglob("*.html"))
    assert not (html / "genindex.html").exists()


def test_an_optional_profile_has_pages_of_its_own_folder_and_toc_part(tmp_path):
    """offline-large: only the pages that define it, written to book/large/, listed in a part of their own."""
    params = {k: {"x": 2} for k in manifest.PROFILES}
    one = manifest.Page("one", "t.ipynb", "book/01_one.ipynb", "1. One", "Sections", params)
    two = manifest.Page("two", "t.ipynb", "book/02_two.ipynb", "2. Two", "Sections",
                        {**params, "offline-large": {"x": 3}})
    m = manifest.Manifest(root="book/intro", back_matter=[], pages=[one, two])
    assert [p.id for p in m.pages if "offline-large" in p.parameters] == ["two"]
    assert two.output_for("offline-large") == "book/large/02_two.ipynb" and two.output_for("offline") == two.output
    assert execute.target_of(two, tmp_path, None, "offline-large") == tmp_path / "book/large/02_two.ipynb"
    toc = manifest.render_toc(m)
    assert 'caption: Larger models (offline-large profile)\n    chapters:\n      - file: book/large/02_two\n' in toc
    assert "book/large/01_one" not in toc
    with pytest.raises(manifest.ManifestError, match="no parameters for profile"):
        one.params_for("offline-large")


def test_the_manifest_refuses_a_profile_it_does_not_know(tmp_path):
    text = (ROOT / "notebooks" / "manifest.yml").read_text().replace("      offline-large:", "      offline-huge:", 1)
    bad = tmp_path / "manifest.yml"
    bad.write_text(text)
    with pytest.raises(manifest.ManifestError, match="unknown profile.*offline-huge"):
        manifest.load_manifest(bad)
