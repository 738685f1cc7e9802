"""Converting a packaged GGUF model: the file is parsed once per conversion, and parallel callers convert once."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")

from sinkframes.models import OFFLINE_MODELS  # noqa: E402
from sinkframes.models import gguf as conversion  # noqa: E402


def _tiny_gguf(path: Path) -> Path:
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_uint32("test.value", 7)
    writer.add_tensor("w", np.arange(6, dtype=np.float32).reshape(2, 3))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_readers_of_one_file_are_shared_inside_the_block_only(tmp_path):
    a, b = _tiny_gguf(tmp_path / "a.gguf"), _tiny_gguf(tmp_path / "b.gguf")
    original = gguf.GGUFReader
    with conversion.one_parse_per_file():
        first = gguf.GGUFReader(a)
        assert gguf.GGUFReader(str(a)) is first  # the same file by another spelling: the same reader
        assert gguf.GGUFReader(b) is not first
        assert int(first.fields["test.value"].parts[-1][0]) == 7
        np.testing.assert_array_equal(np.asarray(first.tensors[0].data).ravel(), np.arange(6, dtype=np.float32))
    assert gguf.GGUFReader is original
    assert gguf.GGUFReader(a) is not gguf.GGUFReader(a)


def test_the_shared_reader_reads_plain_arrays_with_the_same_fields_and_tensors(tmp_path):
    """Inside the block the reader parses over a plain ndarray view of its memory map (each slice of an
    ``np.memmap`` is a Python-level call, most of Gemma 3's parse): every field and tensor as the stock reader."""
    path = _tiny_gguf(tmp_path / "a.gguf")
    stock = gguf.GGUFReader(path)
    with conversion.one_parse_per_file():
        plain = gguf.GGUFReader(path)
    assert type(stock.data) is np.memmap and type(plain.data) is np.ndarray
    assert list(plain.fields) == list(stock.fields)
    for name, field in stock.fields.items():
        other = plain.fields[name]
        assert other.types == field.types and other.data == field.data, name
        for a, b in zip(field.parts, other.parts, strict=True):
            np.testing.assert_array_equal(a, b)
            assert type(b) is np.ndarray
    for a, b in zip(stock.tensors, plain.tensors, strict=True):
        assert (a.name, a.tensor_type, list(a.shape)) == (b.name, b.tensor_type, list(b.shape))
        np.testing.assert_array_equal(np.asarray(a.data), np.asarray(b.data))


def test_the_reader_is_restored_when_the_conversion_fails(tmp_path):
    original = gguf.GGUFReader
    with pytest.raises(RuntimeError, match="boom"), conversion.one_parse_per_file():
        raise RuntimeError("boom")
    assert gguf.GGUFReader is original


def test_two_callers_at_once_convert_once(tmp_path, monkeypatch):
    monkeypatch.setenv("SINKFRAMES_MODELS", str(tmp_path / "models"))
    calls: list[Path] = []

    def convert(om, pkg, target):  # a slow conversion that leaves a usable copy
        calls.append(target)
        time.sleep(0.3)
        target.mkdir(parents=True)

    monkeypatch.setattr(conversion, "package_dir", lambda om: tmp_path / "package")
    monkeypatch.setattr(conversion, "converted_copy_problem", lambda om, t: None if t.exists() else "no copy yet")
    monkeypatch.setattr(conversion, "convert_offline", convert)
    om = OFFLINE_MODELS["smollm2"]
    folders: list[Path] = []
    workers = [threading.Thread(target=lambda: folders.append(conversion.offline_folder(om)[0])) for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert len(calls) == 1
    assert folders == [calls[0], calls[0]]


def test_the_build_converts_first_only_the_gguf_models_its_pages_name_and_lack(tmp_path, monkeypatch):
    from sinkframes.manifest import Page
    from sinkframes_build import plan

    monkeypatch.setenv("SINKFRAMES_MODELS", str(tmp_path / "models"))
    pages = [
        Page("a", "t.ipynb", "a.ipynb", "A", "P", {"offline": {"models": ["minilm", "smollm2", "tiny:llama"]}}),
        Page("b", "t.ipynb", "b.ipynb", "B", "P", {"offline": {"models": ["smollm2", "gemma3"]}}),
        Page("c", "t.ipynb", "c.ipynb", "C", "P", {"offline": {}}),
    ]
    assert plan.models_to_convert(pages, "offline") == ["smollm2", "gemma3"]  # minilm ships plain weights
    monkeypatch.setattr(conversion, "converted_copy_problem", lambda om, t: None if om.key == "smollm2" else "none")
    assert plan.models_to_convert(pages, "offline") == ["gemma3"]


def test_a_failed_conversion_is_reported_not_raised(monkeypatch):
    from sinkframes_build import executors

    def broken(om):
        raise conversion.ModelLoadError("reading 'gemma3' needs the gguf package")

    monkeypatch.setattr(conversion, "offline_folder", broken)
    assert executors._convert_one("gemma3") == "ModelLoadError: reading 'gemma3' needs the gguf package"
