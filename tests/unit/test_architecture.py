"""The library's seams: one attention patch, one batching loop, one cache-key builder, and
metrics that never reach back to models, caches or statistics tables."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

LIB = Path(__file__).resolve().parents[2] / "lib" / "sinkframes"
SOURCES = {p.relative_to(LIB).as_posix(): p.read_text() for p in LIB.rglob("*.py")}
FORBIDDEN_IN_METRICS = ("models", "extraction", "cache", "probes", "analyses", "stats", "pandas", "transformers")


def _where(pattern: str) -> list[str]:
    return sorted(name for name, src in SOURCES.items() if re.search(pattern, src, re.MULTILINE))


def _imports(src: str) -> set[str]:
    """Top-level names a module imports (``from ..models import x`` -> ``models``; ``import pandas`` -> ``pandas``)."""
    found = set()
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, ast.Import):
            found.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            mod = (node.module or "").split(".")
            if node.level == 0:
                found.add(mod[0])
            elif node.level >= 2:  # ..x from inside a subpackage: the sibling package x (or the names)
                found.update([mod[0]] if mod[0] else [a.name for a in node.names])
    return found


def test_one_attention_patch():
    # the hook wraps each model's eager attention function; models/alibi.py only gives BLOOM, which computes its
    # attention inline, such a function for the hook to wrap
    assert _where(r"\.eager_attention_forward\s*=") == ["extraction/hooks.py", "models/alibi.py"]


def test_one_batching_loop():
    assert _where(r"^def (pad_batch|length_sorted_batches|iterate_batches)\b") == ["extraction/batching.py"]
    # nobody else builds padded batches or sorts samples by length
    assert _where(r"input_ids = torch\.full\(") == ["extraction/batching.py"]
    assert _where(r"sorted\(range\(len\(") == ["extraction/batching.py"]
    # texts are tokenized in one place, the Fisher probe's official padding included
    assert _where(r"(tok|tokenizer)\(t\b") == ["extraction/batching.py"]
    assert _where(r"padding=True") == []


def test_one_cache_key_builder():
    assert _where(r"^def cache_key\b") == ["cache.py"]
    # every key is made by cache_key: nothing else digests texts or fingerprints weights for a key
    assert _where(r"texts_digest\(") == ["cache.py"]
    assert _where(r"source_fingerprint\(") == ["cache.py", "models/loading.py"]
    for name, src in SOURCES.items():
        if name == "cache.py":
            continue
        for call in re.finditer(r"get_or_compute\((\w+)", src):
            assert call.group(1) == "key" and "key = cache_key(" in src, (
                f"{name}: a cache entry keyed without cache_key"
            )


@pytest.mark.parametrize("name", sorted(n for n in SOURCES if n.startswith("metrics/")))
def test_metrics_do_not_reach_models_caches_or_statistics(name):
    bad = _imports(SOURCES[name]) & set(FORBIDDEN_IN_METRICS)
    assert not bad, f"{name} imports {sorted(bad)}"


def test_the_import_check_can_fail():
    assert _imports("from ..cache import Cache\nimport pandas as pd\nfrom .. import stats\n") == {
        "cache",
        "pandas",
        "stats",
    }


def test_one_mode_definition():
    assert _where(r"^MODES\b.*=") == ["types.py"]
    assert _where(r'Literal\["faithful", "corrected"\]') == ["types.py"]


def test_each_analysis_declares_its_own_measures():
    """A claim's measure is found by its name: only its analysis module spells it, and nothing is left in the
    verdict layer (which holds the registry and the bootstrap, not the quantities)."""
    from sinkframes.results import spec_of
    from sinkframes.verdicts.measures import registered

    for name, m in registered().items():
        declared = rf'(?i:measure)\(\s*"{re.escape(name)}"|MEASURES\["{re.escape(name)}"\]'
        module = spec_of(m.analysis).module.removeprefix("sinkframes.").replace(".", "/")
        assert _where(declared) == [f"{module}.py"], name


def test_result_keys_are_spelled_by_their_producers_alone():
    """Per-sentence result keys come from one function per producer, which refuses an unknown name, so that a
    reader greps the function, not an f-string."""
    from sinkframes.metrics.graphs import graph_key
    from sinkframes.metrics.information import removal_key
    from sinkframes.metrics.rmt import rmt_key

    assert graph_key("corrected", "lambda2") == "corrected/lambda2"
    assert removal_key("p90", "reduction", "faithful") == "p90/faithful/reduction"
    assert removal_key("p80", "mass_first4") == "p80/mass_first4"
    assert rmt_key("corrected", "relative_gap") == "corrected/relative_gap"
    for bad in (lambda: graph_key("fiedler", "lambda2"), lambda: removal_key("p90", "reduction"),
                lambda: removal_key("p42", "n_sinks"), lambda: rmt_key("faithful", "relative_gap")):
        with pytest.raises(KeyError):
            bad()
    assembled = r'f"(\{(rule|variant|mode)\}|corrected|laplacian|fiedler|faithful|head|p\d+)/'
    assert _where(assembled) == ["metrics/graphs.py", "metrics/information.py", "metrics/rmt.py"]


#: the library's layers, lowest first: a package or top-level module imports only from lower layers (and itself).
#: ``results`` (the result type and the analysis registry) sits under the verdict layer, which the analyses plug
#: into; the page API the templates import (``book``) and the command line are on top, and nothing below them reaches
#: back up. The build (``lib/sinkframes_build``) is a package of its own above all of them.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("_version", "types", "config", "files", "stats", "tensors", "threads", "notebook", "rehearsal", "paper",
     "code_digest"),
    ("manifest", "corpus"),
    ("models",),
    ("cache",),
    ("extraction", "training"),
    ("metrics", "probes"),
    ("results",),
    ("verdicts",),
    ("analyses",),
    ("report",),
    ("figures",),
    ("book",),
    ("cli",),
    ("__main__", "__init__"),
)
LAYER_OF = {unit: k for k, units in enumerate(LAYERS) for unit in units}


def _unit(parts: list[str]) -> str:
    """The layer unit of a module path inside the package: its subpackage, or the top-level module's name."""
    return parts[0].removesuffix(".py")


def imported_units(path: str, src: str) -> set[str]:
    """The library units (``LAYERS``) module ``path`` (relative to the package) imports, at any depth of its code."""
    here = path.split("/")
    found = set()
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, ast.ImportFrom) and node.level > 0:
            base = here[:-node.level]  # the package the dots name
            target = base + (node.module.split(".") if node.module else [])
            if not target:  # ``from . import x`` at the top: x is the unit
                found.update(a.name for a in node.names)
            else:
                found.add(target[0])
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("sinkframes."):
            found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[1] for a in node.names if a.name.startswith("sinkframes."))
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module"
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
              and node.args[0].value.startswith("sinkframes.")):  # an import by name is an import too
            found.add(node.args[0].value.split(".")[1])
    return found - {_unit(here)}


#: the one upward reach the layers allow: the analysis registry (``results``) loads the analysis modules, which
#: register themselves into it, so that ``results.analyses()`` holds them all wherever it is called from
PLUG_INS = {("results.py", "analyses")}


def test_every_unit_of_the_library_has_a_layer():
    units = {_unit(name.split("/")) for name in SOURCES}
    assert units == set(LAYER_OF), (f"give a layer to {sorted(units - set(LAYER_OF))}; "
                                    f"drop {sorted(set(LAYER_OF) - units)}")


def test_layers_point_one_way():
    """No import reaches a unit of the same or a higher layer (so no package cycle), function-level imports too."""
    upward = []
    for name, src in SOURCES.items():
        me = _unit(name.split("/"))
        for unit in imported_units(name, src):
            if unit in LAYER_OF and LAYER_OF[unit] >= LAYER_OF[me] and (name, unit) not in PLUG_INS:
                upward.append(f"{name} -> {unit}")
    assert not upward, "imports that point up or sideways:\n" + "\n".join(sorted(upward))


def test_the_layer_check_can_fail():
    assert imported_units("verdicts/nulls.py", "from ..analyses import frames\nfrom .rules import x\n") == {"analyses"}
    assert imported_units("cache.py", "def f():\n    from .models import load\n") == {"models"}
    assert imported_units("analyses/frames.py", "from .. import stats, verdicts\n") == {"stats", "verdicts"}
    assert imported_units("verdicts/rules.py", "import importlib\nimportlib.import_module('sinkframes.analyses')\n") \
        == {"analyses"}
    assert imported_units("cache.py", "from importlib import import_module\nimport_module('sinkframes.report.x')\n") \
        == {"report"}
    assert LAYER_OF["analyses"] > LAYER_OF["verdicts"] > LAYER_OF["results"]


def test_the_registry_holds_every_analysis_module_that_makes_results():
    """An analysis module that makes ``ModelResult``s under its own name registers a spec; each spec's name is its
    module's, and an analysis with an attention null gives it in the spec."""
    from sinkframes.results import analyses

    specs = analyses()
    making = {m.group(1) for name, src in SOURCES.items() if name.startswith("analyses/")
              for m in re.finditer(r'^(?:SERIES_)?ANALYSIS = "(\w+)"', src, re.MULTILINE)}
    assert set(specs) == making
    for name, spec in specs.items():
        module = spec.module.removeprefix("sinkframes.")
        has_null = re.search(r"^def on_uniform_attention\b", SOURCES[module.replace(".", "/") + ".py"], re.MULTILINE)
        own_module = module == f"analyses.{name}"  # a second analysis of a module (rmt_series) has no null of its own
        assert (spec.on_uniform_attention is not None) == bool(has_null and own_module), name


def test_the_library_never_imports_the_build():
    """The installed package holds no ``sinkframes_build``, so no module of ``sinkframes`` may import it."""
    def names(node: ast.AST) -> list[str]:
        if isinstance(node, ast.Import):
            return [a.name for a in node.names]
        return [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else []

    found = [name for name, src in SOURCES.items() for node in ast.walk(ast.parse(src))
             if any(n.split(".")[0] == "sinkframes_build" for n in names(node))]
    assert not found, f"modules of the library that import the build: {found}"


def test_the_installed_package_leaves_the_build_out():
    """pyproject.toml's package list takes every package of ``sinkframes`` and none of ``sinkframes_build``."""
    import tomllib
    from setuptools import find_packages

    root = LIB.parents[1]
    found = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    packages = set(find_packages(where=str(root / found["where"][0]), include=found["include"]))
    ours = {p.parent.relative_to(LIB.parent).as_posix().replace("/", ".") for p in LIB.rglob("__init__.py")}
    assert packages == ours
    assert (LIB.parent / "sinkframes_build" / "__init__.py").is_file()
