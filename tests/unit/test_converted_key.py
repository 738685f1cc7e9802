"""A result-cache key names the converted bytes a result was computed from, not only the package's files."""

from __future__ import annotations

import json

from sinkframes.models import gguf, registry, source_fingerprint


def _fake_copy(folder, digest: str, om) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model.safetensors").write_bytes(b"weights")
    record = {"source": gguf.weights_fingerprint(om), "files": gguf._files_of(folder),
              "sha256": {"model.safetensors": digest}}
    (folder / gguf.CONVERTED_META).write_text(json.dumps(record))


def test_the_key_of_a_converted_model_changes_with_its_converted_bytes(tmp_path, monkeypatch):
    om = registry.OFFLINE_MODELS["smollm2"]
    assert om.converted
    monkeypatch.setenv("SINKFRAMES_MODELS", str(tmp_path))
    folder = gguf.converted_folder(om)
    _fake_copy(folder, "a" * 64, om)
    first = source_fingerprint("smollm2")
    assert first["converted_sha256"] == {"model.safetensors": "a" * 64}
    _fake_copy(folder, "b" * 64, om)  # converted again, by other code, to other bytes
    assert source_fingerprint("smollm2") != first
    twin = source_fingerprint("random:smollm2")["architecture_of"]
    assert twin["converted_sha256"] == {"model.safetensors": "b" * 64}


def test_a_model_read_from_its_package_keeps_a_key_without_converted_bytes():
    assert "converted_sha256" not in source_fingerprint("minilm")


def test_a_missing_copy_is_converted_before_its_key_is_made(tmp_path, monkeypatch):
    om = registry.OFFLINE_MODELS["smollm2"]
    monkeypatch.setenv("SINKFRAMES_MODELS", str(tmp_path))
    made = []

    def convert(om_, *_):
        made.append(om_.key)
        _fake_copy(gguf.converted_folder(om_), "c" * 64, om_)
        return gguf.converted_folder(om_), om_.quantization

    monkeypatch.setattr(gguf, "offline_folder", convert)
    assert gguf.converted_fingerprint(om) == {"model.safetensors": "c" * 64} and made == ["smollm2"]
    assert gguf.converted_fingerprint(om) == {"model.safetensors": "c" * 64} and made == ["smollm2"]  # once
