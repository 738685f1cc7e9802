"""Every offline model's bytes are pinned by sha256 and checked before use; a converted copy is checked by its bytes."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os

import pytest

from sinkframes.models import gguf
from sinkframes.models.loading import ModelLoadError
from sinkframes.models.registry import OFFLINE_MODELS


def test_every_offline_model_pins_the_bytes_it_reads():
    for key, om in OFFLINE_MODELS.items():
        assert om.sha256 or om.files_sha256, f"{key} has no pinned sha256"
        if om.fmt in ("folder", "gguf"):
            assert om.files_sha256, f"{key} reads its package's files in place: pin each one"
        assert all(len(h) == 64 for _, h in om.files_sha256)
    # no model package's code is imported: a split model is joined by the library from its parts
    assert OFFLINE_MODELS["gemma3"].fmt == "gguf-parts" and len(OFFLINE_MODELS["gemma3"].parts) == 4


def _fake(tmp_path, content: bytes = b"weights"):
    pkg = tmp_path / "pkg"
    (pkg / "model").mkdir(parents=True)
    (pkg / "model" / "model.safetensors").write_bytes(content)
    om = dataclasses.replace(OFFLINE_MODELS["minilm"], key="fake",
                             files_sha256=(("model/model.safetensors", hashlib.sha256(b"weights").hexdigest()),))
    return om, pkg


def test_a_package_file_with_other_bytes_of_the_same_size_is_refused(tmp_path):
    om, pkg = _fake(tmp_path)
    gguf.check_pinned_files(om, pkg)  # the pinned bytes pass
    om, pkg = _fake(tmp_path / "altered", b"weighTs")  # same size, one byte changed
    with pytest.raises(ModelLoadError, match="the book pins"):
        gguf.check_pinned_files(om, pkg)


def test_a_converted_copy_altered_with_its_mtime_kept_is_converted_again(tmp_path, monkeypatch):
    monkeypatch.setattr(gguf, "weights_fingerprint", lambda om: [["pkg/file", 1, 1]])
    target = tmp_path / "fp32"
    target.mkdir()
    weights = target / "model.safetensors"
    weights.write_bytes(b"converted")
    meta = {"source": [["pkg/file", 1, 1]], "files": gguf._files_of(target),
            "sha256": {"model.safetensors": hashlib.sha256(b"converted").hexdigest()}}
    (target / gguf.CONVERTED_META).write_text(json.dumps(meta))
    om = OFFLINE_MODELS["smollm2"]
    assert gguf.converted_copy_problem(om, target) is None
    st = weights.stat()
    weights.write_bytes(b"convertEd")
    os.utime(weights, ns=(st.st_atime_ns, st.st_mtime_ns))  # same size, same mtime
    assert gguf.converted_copy_problem(om, target) == "model.safetensors differ from the bytes the conversion wrote"
    del meta["sha256"]
    (target / gguf.CONVERTED_META).write_text(json.dumps(meta))
    assert "no sha256" in str(gguf.converted_copy_problem(om, target))
