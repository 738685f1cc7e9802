"""Sentence sets: the embedded STEM sentences, the paper's CSV, and seeded sampling.

The embedded set was written for this project: encyclopedic sentences balanced over the paper's
four fields (mathematics, physics, medicine, geography) and four length classes, with the columns
of the paper's CSV that apply to it (``text, word_count, field, category``). The paper's own CSV
(``wiki_dataset_sink.csv``, 811 rows, MIT licence) is read from a path or a URL the user gives.
"""

from __future__ import annotations

import hashlib
import io
import re
from functools import lru_cache
from importlib import resources
from pathlib import Path

import pandas as pd

FIELDS = ("mathematics", "physics", "medicine", "geography")
#: word-count range of each length class of the embedded set (inclusive)
LENGTH_CLASSES = {"short": (8, 18), "medium": (19, 29), "long": (30, 39), "very_long": (40, 50)}
PAPER_CSV_SHA256 = "133ad56b417c274ccb69a7260b374c281e860ee7a16fb609e435c2aef4870a68"
PAPER_CSV_URL = "https://raw.githubusercontent.com/ValeRuscio/What-are-you-sinking-/main/Data/wiki_dataset_sink.csv"
COLUMNS = ["text", "word_count", "field", "category"]


class DatasetError(ValueError):
    """A sentence file that is missing, malformed or not the expected one."""


@lru_cache(maxsize=1)
def _embedded_frame() -> pd.DataFrame:
    with resources.files("sinkframes").joinpath("data/sentences.csv").open("rb") as fh:
        return pd.read_csv(fh)


def embedded_sentences() -> pd.DataFrame:
    """The embedded sentence set (a copy; columns ``text, word_count, field, category``)."""
    return _embedded_frame().copy()


def load_paper_csv(source: str | Path, sha256: str | None = None) -> pd.DataFrame:
    """Load the paper's sentence CSV from a local path or an http(s) URL.

    ``sha256``: when given, the raw bytes must hash to it (use ``PAPER_CSV_SHA256`` for the
    published file). Rows with an empty ``text`` are dropped; ``word_count`` is recomputed when
    the column is missing.
    """
    src = str(source)
    scheme = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*)://", src)
    if scheme and scheme.group(1).lower() not in ("http", "https"):
        raise DatasetError(f"{src}: a {scheme.group(1)}:// address cannot be read; give an http(s) URL or a local "
                           "path of wiki_dataset_sink.csv")
    if src.startswith(("http://", "https://")):
        data = _download(src, sha256)
    else:
        path = Path(src).expanduser()
        if not path.exists():
            raise DatasetError(
                f"paper CSV not found at {path}. Get Data/wiki_dataset_sink.csv from the authors' repository "
                f"(ValeRuscio/What-are-you-sinking-) and pass its path, or use dataset='embedded'."
            )
        if not path.is_file():
            raise DatasetError(f"{path} is a folder, not a CSV file; pass the path of wiki_dataset_sink.csv itself")
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise DatasetError(f"could not read {path}: {exc}") from exc
    if sha256 is not None:
        got = hashlib.sha256(data).hexdigest()
        if got != sha256:
            raise DatasetError(
                f"{src} is not the published file (sha256 {got}, expected {sha256}); to analyse another CSV with "
                "the same columns, call corpus.load_dataset('paper', path, sha256=None)"
            )
    try:
        frame = pd.read_csv(io.BytesIO(data))
    except Exception as exc:  # noqa: BLE001 - pandas raises many types
        raise DatasetError(f"{src} is not a readable CSV: {exc}") from exc
    if "text" not in frame.columns:
        raise DatasetError(f"{src} has no 'text' column (columns: {list(frame.columns)})")
    frame = frame[frame["text"].notna()]  # an empty cell is no sentence (not the string "nan")
    not_text = [i for i, t in zip(frame.index.tolist(), frame["text"].tolist(), strict=True) if not isinstance(t, str)]
    if not_text:
        raise DatasetError(
            f"{src}: the 'text' column holds values that are not text in rows {not_text[:10]} "
            f"(e.g. {frame['text'].loc[not_text[0]]!r}); every row's text must be a sentence"
        )
    frame = frame[frame["text"].str.strip().str.len() > 0].reset_index(drop=True)
    if "word_count" not in frame.columns:
        frame["word_count"] = frame["text"].astype(str).map(lambda t: len(t.split()))
    return frame


def downloaded_copy(url: str) -> Path:
    """Where the copy of a CSV downloaded from ``url`` is kept (under the result cache, ``downloads/``)."""
    from .config import cache_root

    name = Path(url.split("?", 1)[0]).name or "download.csv"
    return cache_root() / "downloads" / f"{hashlib.sha256(url.encode()).hexdigest()[:16]}-{name}"


def _download(url: str, sha256: str | None) -> bytes:
    """The bytes at ``url``: the kept copy when there is one whose sha256 is ``sha256`` (every page of a build
    reads the same file, downloaded once), else downloaded and kept."""
    copy = downloaded_copy(url)
    if copy.is_file():
        data = copy.read_bytes()
        if sha256 is None or hashlib.sha256(data).hexdigest() == sha256:
            return data
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=60) as resp:  # noqa: S310 - user-given URL
            data = resp.read()
    except OSError as exc:
        raise DatasetError(f"could not download {url}: {exc}. Download it once and pass the local path.") from exc
    if sha256 is None or hashlib.sha256(data).hexdigest() == sha256:
        from .files import atomic_write_bytes

        atomic_write_bytes(copy, data)
    return data


def keep_download(url: str, local: str | Path) -> Path:
    """Store the local file ``local`` as the downloaded copy of ``url`` (a machine without network, or a
    mirror); the paper's CSV must still match its pinned sha256 when it is read."""
    from .files import atomic_write_bytes

    copy = downloaded_copy(url)
    atomic_write_bytes(copy, Path(local).expanduser().read_bytes())
    return copy


def load_dataset(
    dataset: str = "embedded", csv_path: str | Path | None = None, sha256: str | None = PAPER_CSV_SHA256
) -> pd.DataFrame:
    """``dataset='embedded'`` (default) or ``'paper'`` (needs ``csv_path``: a path or URL).

    The paper's CSV must be the published file (``sha256``, by default ``PAPER_CSV_SHA256``); pass
    ``sha256=None`` to analyse another CSV with the same columns.
    """
    if dataset == "embedded":
        return embedded_sentences()
    if dataset == "paper":
        if csv_path is None:
            raise DatasetError("dataset='paper' needs csv_path (a local path or URL of wiki_dataset_sink.csv)")
        return load_paper_csv(csv_path, sha256=sha256)
    raise DatasetError(f"unknown dataset {dataset!r}; use 'embedded' or 'paper'")


def sample_sentences(
    n: int,
    seed: int = 0,
    dataset: str = "embedded",
    csv_path: str | Path | None = None,
    frame: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """``n`` rows drawn without replacement with a seeded generator (stratified by field when possible).

    Stratification keeps the fields balanced for small ``n``; the draw depends only on ``seed``.
    """
    data = frame if frame is not None else load_dataset(dataset, csv_path)
    if n < 1:
        raise ValueError(f"n must be at least 1 (got {n})")
    if n > len(data):
        raise ValueError(f"asked for {n} sentences but the {dataset} set has only {len(data)}")
    if "field" in data.columns and data["field"].notna().all():
        groups = sorted(data["field"].unique())
        shuffled = data.sample(frac=1.0, random_state=seed)
        # round-robin over fields in shuffled order: balanced and deterministic
        buckets = [shuffled[shuffled["field"] == g] for g in groups]
        order: list[int] = []
        depth = 0
        while len(order) < n:
            for b in buckets:
                if depth < len(b):
                    order.append(b.index[depth])
                    if len(order) == n:
                        break
            depth += 1
        picked = data.loc[order]
    else:
        picked = data.sample(n=n, random_state=seed)
    return picked.reset_index(drop=True)


def disjoint_draw(first: pd.DataFrame, seed: int = 0, dataset: str = "embedded",
                  csv_path: str | Path | None = None) -> pd.DataFrame:
    """A second draw of as many sentences as ``first`` holds (fewer if the set has not that many left), from the
    sentences ``first`` left out: independent of it, so that a verdict decided on both is not decided twice on
    the same sentences. Seeded by ``seed + 1``, stratified like :func:`sample_sentences`."""
    data = load_dataset(dataset, csv_path)
    rest = data[~data["text"].isin(set(first["text"]))]
    if rest.empty:
        raise ValueError(f"the {dataset} set has no sentence left for a second draw of {len(first)}")
    return sample_sentences(min(len(first), len(rest)), seed=seed + 1, dataset=dataset, frame=rest)
