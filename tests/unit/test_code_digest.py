"""The reducers' cache versions are digests of their code: known cases on a small package written for the test."""

from __future__ import annotations

import re

import pytest

from sinkframes import code_digest as C


@pytest.fixture()
def package(tmp_path, monkeypatch):
    """A package laid out as the library is: ``metrics/a.py`` reads ``metrics/b.py`` and ``tensors.py`` (followed)
    and ``report.py`` (not followed)."""
    (tmp_path / "metrics").mkdir()
    (tmp_path / "__init__.py").write_text("")
    (tmp_path / "metrics" / "__init__.py").write_text('"""Metrics."""\n')
    (tmp_path / "metrics" / "a.py").write_text(
        '"""A."""\nfrom ..tensors import f\nfrom . import b\nfrom ..report import r\n\n\n'
        'def a(x):\n    """Doc."""\n    return f(x) + b.g(x) + r(x)\n')
    (tmp_path / "metrics" / "b.py").write_text("def g(x):\n    return 2 * x\n")
    (tmp_path / "tensors.py").write_text("def f(x):\n    return x  # the identity\n")
    (tmp_path / "report.py").write_text("def r(x):\n    return 0\n")
    monkeypatch.setattr(C, "ROOT", tmp_path)
    C._module_code.cache_clear()
    yield tmp_path
    C._module_code.cache_clear()


def _digest_after(root, path: str, old: str, new: str) -> str:
    file = root / path
    file.write_text(file.read_text().replace(old, new))
    C._module_code.cache_clear()
    return C.code_digest("sinkframes.metrics.a")


def test_the_digest_follows_the_numerical_imports_and_nothing_else(package):
    assert C.modules_read("sinkframes.metrics.a") == ["sinkframes.metrics", "sinkframes.metrics.a",
                                                      "sinkframes.metrics.b", "sinkframes.tensors"]
    first = C.code_digest("sinkframes.metrics.a")
    assert re.fullmatch(r"[0-9a-f]{12}", first)
    # wording, comments and layout keep the digest
    assert _digest_after(package, "metrics/a.py", '"""Doc."""', '"""Other words."""') == first
    assert _digest_after(package, "tensors.py", "# the identity", "# unchanged") == first
    assert _digest_after(package, "metrics/a.py", "return f(x)", "return  f( x )") == first
    # a module that is not followed (the pages, the verdicts) does not enter it
    assert _digest_after(package, "report.py", "return 0", "return 1") == first
    # a change to what runs, here or in a module it reads, does
    changed = _digest_after(package, "metrics/b.py", "2 * x", "3 * x")
    assert changed != first
    assert _digest_after(package, "tensors.py", "return x", "return -x") not in (first, changed)


def test_every_reducer_of_the_library_keys_its_results_by_its_code():
    from sinkframes.analyses.geometry_values import GeometryValuesReducer
    from sinkframes.analyses.rmt import RMTReducer
    from sinkframes.metrics.frames import FrameSummaryReducer
    from sinkframes.metrics.graphs import SpectralReducer
    from sinkframes.metrics.information import InformationReducer
    from sinkframes.metrics.positions import PositionReducer
    from sinkframes.metrics.simplex import SimplexSummaryReducer
    from sinkframes.metrics.sinks import SinkSummaryReducer
    from sinkframes.metrics.topology import TopologyReducer

    reducers = [GeometryValuesReducer(), RMTReducer(), FrameSummaryReducer(), SpectralReducer(),
                InformationReducer(), PositionReducer(), SimplexSummaryReducer(), SinkSummaryReducer(),
                TopologyReducer()]
    for r in reducers:
        assert r.key()["version"] == C.code_digest(type(r).__module__), type(r).__name__
    assert C.modules_read("sinkframes.metrics.sinks") == ["sinkframes.metrics.sinks", "sinkframes.tensors"]
    # the frame instrument reads the sink summary: a change there gives the frame reducer a new version too
    assert "sinkframes.metrics.sinks" in C.modules_read("sinkframes.metrics.frames")


def test_a_reducer_outside_the_package_is_versioned_by_its_file():
    class Local:
        pass

    assert re.fullmatch(r"[0-9a-f]{12}", C.reducer_version(Local))


#: the one version of a cache key set by hand: the layout of the stored sentence attention (a storage format, not a
#: computation; what a stored sentence holds follows from the model and options in its key)
FORMAT_VERSIONS = {"extraction/shared.py"}


def hand_set_versions(source: str) -> list[str]:
    """The cache-key versions a module's source sets by hand: an integer after ``"version":`` or a ``*VERSION = n``."""
    return re.findall(r'"version":\s*\d+|^\w*VERSION\s*=\s*\d+', source, re.MULTILINE)


def test_no_cache_key_of_the_library_carries_a_version_set_by_hand():
    """The probes' caches (Fisher, the output check, the text loss, the position interventions) are keyed by the
    digest of their module's code, as the reducers are."""
    from pathlib import Path

    lib = Path(C.ROOT)
    found = {p.relative_to(lib).as_posix(): hand_set_versions(p.read_text()) for p in lib.rglob("*.py")
             if p.relative_to(lib).as_posix() not in FORMAT_VERSIONS | {"models/e5s1.py"}}  # e5s1: a file format
    assert not {k: v for k, v in found.items() if v}
    assert hand_set_versions('key = {"kind": "x", "version": 3}\nFISHER_VERSION = 5\n') == [
        '"version": 3', "FISHER_VERSION = 5"]


def test_the_probes_key_their_caches_by_their_code():
    from sinkframes.probes import positions

    assert positions.UNMODIFIED.key()["version"] == C.code_digest("sinkframes.probes.positions")
    for module in ("sinkframes.probes.fisher", "sinkframes.probes.sink_removal", "sinkframes.analyses.rmt"):
        assert re.search(r'"version": code_digest\(__name__\)', C.module_path(module).read_text()), module
