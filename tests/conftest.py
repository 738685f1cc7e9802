"""Test set-up: no hub access, a fresh result cache and verdict folder per test, converted models shared."""

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
    # a page run by a test saves its verdicts here, never into the checkout's working directory
    monkeypatch.setenv("SINKFRAMES_VERDICTS_DIR", str(tmp_path / "verdicts"))
    from sinkframes.extraction import batching

    batching._MODELS.clear()
    yield


@pytest.fixture(scope="session")
def texts():
    from sinkframes import corpus

    return corpus.sample_sentences(6, seed=3)["text"].tolist()
