"""The two recipes of CONTRIBUTING.md, checked against the code: each test fails when a step of a recipe is missed.

"Add a model": every offline model has its row in the README's models table, its colour and its packages pinned;
every default model runs on a page and has a real-model test, and the README counts the models as the registry.
"Add an analysis": every analysis module is registered, declares measures, is shown by a page of the manifest and
has its row in the recipe's table; the recipe names every file that keeps analyses or pages by name, and every file
it names exists. No model is loaded.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import nbformat
import pytest

from sinkframes.figures.style import _KNOWN_COLOUR
from sinkframes.manifest import load_manifest
from sinkframes.models.registry import DEFAULT_OFFLINE, OFFLINE_MODELS
from sinkframes.results import analyses
from sinkframes.verdicts import measures as M
from tests.conftest import ROOT

LIB = ROOT / "lib" / "sinkframes"
ANALYSES = LIB / "analyses"
MANIFEST = load_manifest(ROOT / "notebooks" / "manifest.yml")
#: the registered analyses of the chapters: those whose name is their module's (the registry, not a list)
CHAPTER_ANALYSES = sorted(n for n, spec in analyses().items() if spec.module == f"sinkframes.analyses.{n}")
#: the requirement files `make book` installs, and the one `make book-large` adds
BOOK_REQUIREMENTS = ("requirements.txt", "requirements-nodeps.txt")
LARGE_REQUIREMENTS = ("requirements-large.txt",)
#: the files the "add an analysis" recipe edits that hold no list of names (those are found by scanning, below)
ANALYSIS_RECIPE_FILES = (
    "lib/sinkframes/results.py",  # Analysis, register
    "lib/sinkframes/paper/claims.py",
    "lib/sinkframes/data/rule_changes.json",
    "lib/sinkframes/report/page_verdicts.py",
    "lib/sinkframes/report/takeaways.py",
    "notebooks/manifest.yml",
    "tests/unit/test_claims.py",
    "tests/unit/test_architecture.py",
    "README.md",
)


# ----------------------------------------------------------------------------------------------------- helpers

def _section(text: str, title: str) -> str:
    """The body of the ``## title`` section of a markdown text (up to the next ``## `` heading)."""
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def _contributing(title: str) -> str:
    return _section((ROOT / "CONTRIBUTING.md").read_text(), title)


def _norm(name: str) -> str:
    """A distribution name as pip compares it (case and ``-_.`` runs ignored)."""
    return re.sub(r"[-_.]+", "-", name.strip().lower())


@cache
def _pins(files: tuple[str, ...]) -> dict[str, str]:
    """``{normalized name: version}`` of every ``name==version`` line of ``files``."""
    out: dict[str, str] = {}
    for name in files:
        for line in (ROOT / name).read_text().splitlines():
            line = line.split("#", 1)[0].strip()
            if "==" in line:
                pkg, version = line.split("==", 1)
                out[_norm(pkg)] = version.strip()
    return out


def _install_words(pip: str) -> list[str]:
    """The package words of an install command (``pip install --no-deps a==1 b==2 && pip install c d``)."""
    words: list[str] = []
    for part in pip.split("&&"):
        tokens = part.split()
        if tokens[:2] != ["pip", "install"]:
            raise ValueError(f"not a pip install command: {part!r}")
        words += [t for t in tokens[2:] if not t.startswith("-")]
    return words


def _readme_model_keys() -> set[str]:
    return set(re.findall(r"^\| `([^`]+)` \|", _section((ROOT / "README.md").read_text(), "The models actually run"),
                          re.MULTILINE))


def _code(nb_path: Path) -> str:
    """The code of a template's cells, IPython magics and shell lines left out."""
    nb = nbformat.read(nb_path, as_version=4)
    lines = [line for c in nb.cells if c.cell_type == "code" for line in c.source.splitlines()
             if not line.lstrip().startswith(("%", "!"))]
    return "\n".join(lines)


@cache
def _imported_analyses(template: str) -> frozenset[str]:
    """The modules of ``sinkframes.analyses`` a template imports."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(_code(ROOT / template))):
        if isinstance(node, ast.ImportFrom) and node.module == "sinkframes.analyses":
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("sinkframes.analyses."):
            found.add(node.module.split(".")[2])
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[2] for a in node.names if a.name.startswith("sinkframes.analyses."))
    return frozenset(found)


def _analysis_modules() -> dict[str, str]:
    """``{module name: the value of its ANALYSIS}`` for every module of ``analyses/`` that assigns ``ANALYSIS``."""
    out: dict[str, str] = {}
    for path in sorted(ANALYSES.glob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if (isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "ANALYSIS"
                                                     for t in node.targets)
                    and isinstance(node.value, ast.Constant)):
                out[path.stem] = node.value.value
    return out


def _module_of(name: str) -> str:
    """The module that declares measure ``name`` (a shape measure's registered function is a wrapper)."""
    fn = M.LAYER_SHAPES.get(name, M.registered()[name].fn)
    return fn.__module__


def _recipe_table() -> list[list[str]]:
    """The rows of the recipe's table: ``[analysis module, page id, template, figures, page text]``, unquoted."""
    rows = []
    for line in _contributing("Recipe: add an analysis").splitlines():
        cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
        if line.startswith("| `analyses/"):
            rows.append(cells)
    return rows


def _strings(node: ast.AST) -> set[str]:
    """The string constants a literal tuple, list or set holds, or a literal dict holds as keys or values."""
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        items = node.elts
    elif isinstance(node, ast.Dict):
        items = [*(k for k in node.keys if k is not None), *node.values]
    else:
        return set()
    return {e.value for e in items if isinstance(e, ast.Constant) and isinstance(e.value, str)}


def _files_listing_names(names: set[str], at_least: int = 3) -> set[str]:
    """The Python files of ``lib/`` and ``tests/`` (this one left out) with a literal collection holding at least
    ``at_least`` of ``names``: the places a new analysis or page must be added by hand."""
    found = set()
    for root in (LIB, ROOT / "tests"):
        for path in root.rglob("*.py"):
            if path.resolve() == Path(__file__).resolve():
                continue
            tree = ast.parse(path.read_text())
            if any(len(_strings(n) & names) >= at_least for n in ast.walk(tree)):
                found.add(path.relative_to(ROOT).as_posix())
    return found


def _named_paths(text: str) -> set[str]:
    """The file paths a markdown text quotes in backticks (placeholders such as ``<name>`` left out)."""
    return set(re.findall(r"`([A-Za-z0-9_./-]+\.(?:py|yml|json|md|ipynb|txt|cff|sh))`", text))


# ----------------------------------------------------------------------------------------- "Add a model"

def test_the_default_offline_models_are_registered_and_the_manifest_runs_no_other():
    assert set(DEFAULT_OFFLINE) <= set(OFFLINE_MODELS)
    for page in MANIFEST.pages:
        named = [m for m in page.parameters["offline"].get("models", []) if m in OFFLINE_MODELS]
        assert set(named) <= set(DEFAULT_OFFLINE), f"{page.id}: add the key to DEFAULT_OFFLINE"
        other = [m for m in page.parameters["offline"].get("models", []) if not str(m).startswith(("tiny:", "random:"))]
        assert set(other) <= set(OFFLINE_MODELS), f"{page.id}: {other} is not an offline key"


@pytest.mark.parametrize("key", sorted(DEFAULT_OFFLINE))
def test_every_default_offline_model_runs_on_a_page_and_has_a_real_model_test(key):
    """Steps 5 and 8: a default model's key is in some page's offline entry, and the real-model tests name it."""
    running = [p.id for p in MANIFEST.pages if key in p.parameters["offline"].get("models", [])]
    assert running, f"`{key}` is in DEFAULT_OFFLINE but no page's offline entry runs it (notebooks/manifest.yml)"
    tests = (ROOT / "tests" / "offline" / "test_offline_models.py").read_text()
    assert re.search(rf"[\"']{key}[\"']", tests), f"`{key}` has no test of the real model in tests/offline"


NUMBER_WORDS = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve")


def model_counts(text: str) -> set[str]:
    """The number words a text counts the models with ("seven real pretrained models", "the seven models")."""
    qualifiers = "(?:real |small |real pretrained |small offline )?"
    return set(re.findall(rf"\b({'|'.join(NUMBER_WORDS)})(?= {qualifiers}models\b)", text))


def test_every_count_of_the_models_is_the_number_of_default_models():
    """Step 6: the README, the book's introduction and this recipe count the models as DEFAULT_OFFLINE does."""
    word = NUMBER_WORDS[len(DEFAULT_OFFLINE) - 1]
    for name in ("README.md", "book/intro.md"):
        found = model_counts((ROOT / name).read_text())
        assert found, f"{name} no longer counts the models: drop it from this test"
        assert found == {word}, f"{name} counts the models as {sorted(found)}; DEFAULT_OFFLINE holds {word}"


def test_the_count_check_can_fail():
    assert model_counts("uses seven real pretrained models; the six models and eight small offline models") == {
        "seven", "six", "eight"}
    assert model_counts("seven layers of models") == set()


def test_the_readme_models_table_is_the_one_the_registry_writes():
    from sinkframes_build.readme import with_models_table

    readme = (ROOT / "README.md").read_text()
    assert with_models_table(readme) == readme, "run python -m sinkframes_build toc --write"
    assert _readme_model_keys() == set(OFFLINE_MODELS)


def test_the_models_table_refuses_a_record_that_leaves_a_column_empty(monkeypatch):
    from dataclasses import replace

    from sinkframes_build import readme

    monkeypatch.setitem(readme.OFFLINE_MODELS, "minilm", replace(OFFLINE_MODELS["minilm"], licence=""))
    with pytest.raises(ValueError, match="minilm: its registry record leaves licence empty"):
        readme.models_table()
    with pytest.raises(ValueError, match="marker"):
        readme.with_models_table("# a README without the markers\n")


@pytest.mark.parametrize("key", sorted(OFFLINE_MODELS))
def test_every_offline_model_has_its_colour(key):
    assert OFFLINE_MODELS[key].colour, f"give `{key}` its colour in its registry record (colour)"
    assert _KNOWN_COLOUR[key] == OFFLINE_MODELS[key].colour


@pytest.mark.parametrize("key", sorted(OFFLINE_MODELS))
def test_every_offline_models_packages_are_pinned(key):
    om = OFFLINE_MODELS[key]
    files = BOOK_REQUIREMENTS if key in DEFAULT_OFFLINE else BOOK_REQUIREMENTS + LARGE_REQUIREMENTS
    pins = _pins(files)
    for word in _install_words(om.pip):
        if "==" in word:
            name, version = word.split("==", 1)
            assert pins.get(_norm(name)) == version, f"{key}: pin {word} in one of {files}"
        else:  # a dependency the command installs unpinned, which the book's environment pins
            assert _norm(word) in _pins(BOOK_REQUIREMENTS[:1]), f"{key}: pin {word} in requirements.txt"
    for part in om.parts:  # the pieces the library joins are among the pinned packages
        assert part in _install_words(om.pip), f"{key}: {part} is not in its pip command"


def test_the_pin_check_can_fail():
    assert _install_words("pip install --no-deps a==1 b_c==2 && pip install gguf") == ["a==1", "b_c==2", "gguf"]
    assert _norm("B_c.D") == "b-c-d"
    with pytest.raises(ValueError):
        _install_words("conda install x")
    assert "no-such-package-part1" not in _pins(BOOK_REQUIREMENTS + LARGE_REQUIREMENTS)


# -------------------------------------------------------------------------------------- "Add an analysis"

def test_every_analysis_module_is_registered_under_its_own_name():
    modules = _analysis_modules()
    assert set(modules) == set(CHAPTER_ANALYSES), (
        "an analysis module registers no spec: end it with SPEC = register(Analysis(ANALYSIS, __name__, ...))")
    # a chapter's analysis, its module and its results share one name
    assert all(value == name for name, value in modules.items()), modules


@pytest.mark.parametrize("name", CHAPTER_ANALYSES)
def test_every_declared_analysis_registers_a_measure(name):
    declared = [m for m in M.registered() if _module_of(m) == f"sinkframes.analyses.{name}"]
    assert declared, f"analyses/{name}.py declares no measure (@measure or @shape_measure)"


@pytest.mark.parametrize("name", CHAPTER_ANALYSES)
def test_every_declared_analysis_is_shown_by_a_page_whose_template_imports_it(name):
    pages = [p.id for p in MANIFEST.pages if name in _imported_analyses(p.template)]
    assert pages, f"no template of notebooks/manifest.yml imports sinkframes.analyses.{name}"


def figures_without_takeaway(code: str) -> int:
    """How many ``pg.figure(...)`` calls of a template's code pass no takeaway (the sentence under the figure)."""
    calls = [n for n in ast.walk(ast.parse(code)) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
             and n.func.attr == "figure" and isinstance(n.func.value, ast.Name) and n.func.value.id == "pg"]
    return sum(len(c.args) < 3 and not any(k.arg == "takeaway" for k in c.keywords) for c in calls)


@pytest.mark.parametrize("template", sorted({p.template for p in MANIFEST.pages}))
def test_every_figure_of_a_template_has_its_takeaway(template):
    """Step 6 of the analysis recipe: each figure a page shows gets the sentence a takeaway function writes."""
    assert figures_without_takeaway(_code(ROOT / template)) == 0, f"{template}: pass a takeaway to pg.figure"


def test_the_takeaway_check_can_fail():
    assert figures_without_takeaway("pg.figure(fig, 'caption')\npg.figure(f, 'c', takeaways.spread(x, 'y'))\n"
                                    "pg.figure(f, 'c', takeaway='t')") == 1


def test_the_template_import_check_can_fail():
    assert "positions" in _imported_analyses("notebooks/08_position_interventions.ipynb")
    assert "positions" not in _imported_analyses("notebooks/00_scorecard.ipynb")


def test_the_recipe_table_lists_every_analysis_as_it_is_wired():
    rows = _recipe_table()
    assert sorted(Path(r[0]).stem for r in rows) == CHAPTER_ANALYSES, (
        "CONTRIBUTING.md's table of analyses must list every registered analysis")
    pages = {p.id: p for p in MANIFEST.pages}
    for module, page_id, template, figures, report in rows:
        name = Path(module).stem
        assert (LIB / module).is_file() and (LIB / figures).is_file(), (module, figures)
        assert not report or (LIB / report).is_file(), report
        assert page_id in pages and pages[page_id].template == template, (page_id, template)
        assert name in _imported_analyses(template), f"{template} does not import {name}"


def test_the_recipe_names_every_file_that_keeps_analyses_or_sections_by_name():
    sections = {p.id for p in MANIFEST.pages if not p.run_last and "family_appendix" not in p.template}
    listing = _files_listing_names(set(CHAPTER_ANALYSES)) | _files_listing_names(sections)
    assert "tests/unit/test_shared_attention.py" in listing  # the scan finds a list it must find
    assert "lib/sinkframes/report/family.py" not in listing  # the family pages read the specs' family_order
    named = _named_paths(_contributing("Recipe: add an analysis"))
    assert sorted(listing - named) == [], "name these files in CONTRIBUTING.md's 'Recipe: add an analysis'"
    assert sorted(set(ANALYSIS_RECIPE_FILES) - named) == []


@pytest.mark.parametrize("title", ["Recipe: add an analysis", "Recipe: add a model"])
def test_every_file_a_recipe_names_exists(title):
    named = _named_paths(_contributing(title))
    assert named
    missing = sorted(p for p in named if not (ROOT / p).exists() and not (LIB / p).exists())
    assert missing == []


def test_the_name_scan_can_fail(tmp_path):
    tree = ast.parse('X = ("frames", "topology", "spectral")\nY = {"a": "frames"}\n')
    held = [_strings(n) for n in ast.walk(tree)]
    assert {"frames", "topology", "spectral"} in held and {"a", "frames"} in held
    assert _named_paths("see `tests/unit/test_x.py` and `analyses/<name>.py`") == {"tests/unit/test_x.py"}
