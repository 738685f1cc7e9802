"""Test set-up: no hub access, a fresh result cache per session, converted models shared."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# converted GGUF copies are reused across runs (and with `make book`); results are not
os.environ.setdefault("SINKFRAMES_MODELS", str(ROOT / ".cache" / "sinkframes" / "models"))
PAPER_CSV = ROOT.parent / "shared" / "data" / "wiki_dataset_sink.csv"


@pytest.fixture(autouse=True)
def _fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SINKFRAMES_CACHE", str(tmp_path / "cache"))
    from sinkframes.extraction import batching

    batching._LAST_MODEL.clear()
    yield


@pytest.fixture(scope="session")
def texts():
    from sinkframes import corpus

    return corpus.sample_sentences(6, seed=3)["text"].tolist()
