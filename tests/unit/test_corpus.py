from __future__ import annotations

import hashlib

import pytest

from sinkframes import corpus
from tests.conftest import PAPER_CSV


def test_embedded_set_is_balanced_and_within_length_classes():
    df = corpus.embedded_sentences()
    assert list(df.columns) == corpus.COLUMNS
    assert len(df) >= 400
    assert not df["text"].duplicated().any()
    counts = df.groupby(["field", "category"]).size()
    assert set(df["field"]) == set(corpus.FIELDS)
    assert counts.min() == counts.max() >= 25
    assert (df["word_count"] == df["text"].str.split().str.len()).all()
    for cat, (lo, hi) in corpus.LENGTH_CLASSES.items():
        wc = df.loc[df["category"] == cat, "word_count"]
        assert wc.between(lo, hi).all(), cat


def test_sampling_is_seeded_and_balanced():
    a = corpus.sample_sentences(40, seed=7)
    b = corpus.sample_sentences(40, seed=7)
    c = corpus.sample_sentences(40, seed=8)
    assert a["text"].tolist() == b["text"].tolist()
    assert a["text"].tolist() != c["text"].tolist()
    assert a["field"].value_counts().tolist() == [10, 10, 10, 10]
    assert not a["text"].duplicated().any()


def test_sampling_errors():
    with pytest.raises(ValueError, match="only"):
        corpus.sample_sentences(10_000)
    with pytest.raises(ValueError, match="at least 1"):
        corpus.sample_sentences(0)
    with pytest.raises(corpus.DatasetError, match="csv_path"):
        corpus.load_dataset("paper")
    with pytest.raises(corpus.DatasetError, match="unknown dataset"):
        corpus.load_dataset("wiki")


def test_missing_csv_says_what_to_do(tmp_path):
    with pytest.raises(corpus.DatasetError, match="dataset='embedded'"):
        corpus.load_paper_csv(tmp_path / "nope.csv")


def test_csv_without_text_column(tmp_path):
    p = tmp_path / "bad.csv"
    p.write_text("a,b\n1,2\n")
    with pytest.raises(corpus.DatasetError, match="no 'text' column"):
        corpus.load_paper_csv(p)


@pytest.mark.skipif(not PAPER_CSV.exists(), reason="the paper's CSV is not at ../shared/data")
def test_paper_csv_loads_with_checksum():
    df = corpus.load_paper_csv(PAPER_CSV, sha256=corpus.PAPER_CSV_SHA256)
    assert len(df) == 811
    assert {"text", "word_count", "field", "category", "focus_word"} <= set(df.columns)
    assert set(df["field"]) == set(corpus.FIELDS)
    s = corpus.sample_sentences(12, seed=1, dataset="paper", csv_path=PAPER_CSV)
    assert len(s) == 12 and s["field"].value_counts().tolist() == [3, 3, 3, 3]


@pytest.mark.skipif(not PAPER_CSV.exists(), reason="the paper's CSV is not at ../shared/data")
def test_paper_csv_checksum_mismatch(tmp_path):
    p = tmp_path / "copy.csv"
    p.write_bytes(PAPER_CSV.read_bytes() + b"\n")
    with pytest.raises(corpus.DatasetError, match="is not the published file"):
        corpus.load_paper_csv(p, sha256=corpus.PAPER_CSV_SHA256)
    assert hashlib.sha256(PAPER_CSV.read_bytes()).hexdigest() == corpus.PAPER_CSV_SHA256


def test_a_folder_given_as_the_csv_is_a_clear_error(tmp_path):
    with pytest.raises(corpus.DatasetError, match="is a folder, not a CSV file"):
        corpus.load_dataset("paper", tmp_path, sha256=None)


def test_a_text_column_that_is_not_text_is_refused_and_empty_cells_are_dropped(tmp_path):
    numbers = tmp_path / "numbers.csv"
    numbers.write_text("text,field\n12,a\n13,b\n")
    with pytest.raises(corpus.DatasetError, match="not text in rows \\[0, 1\\]"):
        corpus.load_dataset("paper", numbers, sha256=None)
    holes = tmp_path / "holes.csv"
    holes.write_text("text,field\nA real sentence.,a\n,b\n")
    frame = corpus.load_dataset("paper", holes, sha256=None)
    assert frame["text"].tolist() == ["A real sentence."]  # the empty cell is not the sentence "nan"
