"""Executed pages kept by everything they ran with, so that an unchanged page is copied, not re-executed.

A page's output is decided by its template, its parameters, the library's code and data, and the
software installed beside it (with the models, which install as packages). :func:`page_key` names
all of them: the template and the library by the sha256 of their bytes, the parameters as they are
(a parameter naming a local file adds that file's digest), Python and every installed
distribution by version, and whether the library has local changes against its git commit (a page
computed from uncommitted code is reused only while the code is still uncommitted, so a committed
book never carries it). ``build --reuse`` looks the key up before starting a kernel: on a hit the
stored page and the verdicts it saved are copied into place, and nothing runs. Only pages that ran
to the end with every model are stored; ``make reproduce`` never reuses, it re-executes every page.
A restored page keeps its own provenance line (the date and commit it was computed at); its install
cell is pinned again to the current commit, whose library is the same.
"""

from __future__ import annotations

import functools
import hashlib
import json
import platform
import shutil
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from sinkframes.cache import atomic_write_bytes, digest_of
from sinkframes.config import cache_root

#: bump when what a stored page holds changes (2: each file's sha256 is kept and checked)
PAGE_CACHE_VERSION = 2


def _file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@functools.cache
def library_digest() -> str:
    """sha256 over the ``sinkframes`` package and this build package: every file's relative path and bytes
    (compiled files left out), so any change to the code or its data, or to how pages are executed and
    post-processed, makes a new key."""
    import sinkframes

    packages = (Path(sinkframes.__file__).resolve().parent, Path(__file__).resolve().parent)
    root = packages[0].parent
    h = hashlib.sha256()
    files = sorted(p for package in packages for p in package.rglob("*") if p.is_file())
    for path in files:
        rel = path.relative_to(root) if path.is_relative_to(root) else path
        if "__pycache__" in rel.parts or path.suffix in {".pyc", ".pyo"}:
            continue
        h.update(str(rel).encode())
        h.update(b"\x00")
        h.update(path.read_bytes())
        h.update(b"\x00")
    return h.hexdigest()


def library_has_local_changes() -> bool:
    """Whether the library runs from a git checkout whose ``lib/`` differs from its commit."""
    from sinkframes.report.provenance import library_commit

    return "+" in (library_commit() or "")


@functools.cache
def environment_digest() -> str:
    """sha256 over the Python version and the name and version of every installed distribution."""
    found = sorted({(d.metadata["Name"] or "").lower(): d.version for d in metadata.distributions()}.items())
    return hashlib.sha256(json.dumps([platform.python_version(), found]).encode()).hexdigest()


def _local_files(params: dict[str, Any], root: Path) -> dict[str, str]:
    """``name -> sha256`` of every string parameter that names an existing local file (a CSV, say)."""
    out = {}
    for name, value in params.items():
        if isinstance(value, str) and "://" not in value and value:
            path = Path(value) if Path(value).is_absolute() else root / value
            if path.is_file():
                out[name] = _file_digest(path)
    return out


def page_key(page_id: str, title: str, template: Path, params: dict[str, Any], profile: str,
             root: Path) -> dict[str, Any]:
    """Every input that decides what an executed page holds (see the module docstring)."""
    return {
        "kind": "page",
        "version": PAGE_CACHE_VERSION,
        "page": page_id,
        "title": title,
        "profile": profile,
        "template": _file_digest(template),
        "params": params,
        "files": _local_files(params, root),
        "library": library_digest(),
        "library_local_changes": library_has_local_changes(),
        "environment": environment_digest(),
    }


@dataclass(frozen=True)
class StoredPage:
    """A stored page: the executed notebook's bytes and the verdict files it saved (``name -> bytes``)."""

    notebook: bytes
    verdicts: dict[str, bytes]


class PageCache:
    """``<cache root>/pages/<digest>/``: ``page.ipynb``, ``verdicts/<name>.json`` and ``hashes.json`` (their
    sha256), complete only once ``key.json`` is written (last)."""

    def __init__(self, root: Path | None = None) -> None:
        self.dir = (Path(root) if root is not None else cache_root()) / "pages"

    def _folder(self, key: dict[str, Any]) -> Path:
        return self.dir / digest_of(key)

    def load(self, key: dict[str, Any]) -> StoredPage | None:
        """The stored page for ``key``, or ``None``: absent, incomplete, or not what was stored (its files'
        sha256 are checked against ``hashes.json``; a damaged or edited entry is dropped, with a message naming
        it, and the page is executed again)."""
        folder = self._folder(key)
        try:
            if json.loads((folder / "key.json").read_text()) != json.loads(json.dumps(key, default=str)):
                return None
        except (OSError, ValueError):
            return None
        try:
            hashes = json.loads((folder / "hashes.json").read_text())
            notebook = (folder / "page.ipynb").read_bytes()
            verdicts = {p.name: p.read_bytes() for p in sorted((folder / "verdicts").glob("*.json"))}
            found = {"page.ipynb": _digest(notebook), **{f"verdicts/{k}": _digest(v) for k, v in verdicts.items()}}
            if found != hashes:
                raise ValueError("its files differ from the ones stored (edited, truncated or missing)")
        except (OSError, ValueError) as exc:
            print(f"[sinkframes] dropped the stored copy {folder} of page {key.get('page')}: {exc}; "
                  "the page is executed again", file=sys.stderr, flush=True)
            shutil.rmtree(folder, ignore_errors=True)
            return None
        return StoredPage(notebook, verdicts)

    def store(self, key: dict[str, Any], notebook: Path, verdicts: list[Path]) -> None:
        """Keep ``notebook`` and ``verdicts`` under ``key``, with the sha256 of each file (a read-only or full
        disk only skips storing)."""
        folder = self._folder(key)
        try:
            (folder / "key.json").unlink(missing_ok=True)  # incomplete until written again, last
            data = notebook.read_bytes()
            atomic_write_bytes(folder / "page.ipynb", data)
            hashes = {"page.ipynb": _digest(data)}
            for old in (folder / "verdicts").glob("*.json"):
                old.unlink()
            for v in verdicts:
                body = v.read_bytes()
                atomic_write_bytes(folder / "verdicts" / v.name, body)
                hashes[f"verdicts/{v.name}"] = _digest(body)
            atomic_write_bytes(folder / "hashes.json", json.dumps(hashes, sort_keys=True).encode())
            atomic_write_bytes(folder / "key.json", json.dumps(key, sort_keys=True, default=str).encode())
        except OSError:
            return


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
