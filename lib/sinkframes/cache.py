"""Content-addressed on-disk cache for heavy results (attention tensors, summaries).

An entry is two files: ``<digest>.pt`` (a ``torch.save`` payload of tensors, lists, strings and
numbers) and ``<digest>.json`` (the key, the payload's sha256 and its size). Both are written
atomically (temporary file + ``os.replace``), the payload first, so a reader never sees a key
without its payload. On read the hash is checked and the stored key compared with the one asked for: a
truncated or corrupted entry, or one holding another key's result, is reported, deleted and recomputed, never
trusted.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from . import config
from ._version import __version__
from .files import atomic_write_bytes, file_lock

if TYPE_CHECKING:
    from .types import RunOptions


#: what ``_load_or_discard`` returns for an absent entry (``None`` can be a stored value)
_MISSING = object()


class CorruptCacheEntry(RuntimeError):
    """A cache entry whose payload does not match its recorded hash or cannot be read."""


def digest_of(key: dict[str, Any]) -> str:
    """Stable sha256 of a JSON-serialisable key (sorted keys); the library version is added."""
    full = {"sinkframes_version": __version__, **key}
    blob = json.dumps(full, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()


def _canonical(key: Any) -> str:
    """A key as the JSON the entry records it in (so that a stored key compares equal to the one asked for)."""
    return json.dumps(key, sort_keys=True, default=str)


def texts_digest(texts: list[str]) -> str:
    """sha256 over the exact texts, in order (part of every extraction key)."""
    h = hashlib.sha256()
    for t in texts:
        h.update(t.encode("utf-8"))
        h.update(b"\x00")
    return h.hexdigest()


def software_versions() -> dict[str, str]:
    """Versions of the library and of the packages whose numerics a result depends on."""
    import torch as _torch
    import transformers

    return {"sinkframes": __version__, "torch": _torch.__version__, "transformers": transformers.__version__}


def cache_key(product: dict[str, Any], ref: str, texts: list[str], opts: RunOptions, **inputs: Any) -> dict[str, Any]:
    """The only cache-key builder: every input that changes a result.

    ``product`` names what is computed (and its version); ``ref`` and ``opts.revision`` identify
    the weights (``models.source_fingerprint``); the texts enter by digest; ``opts`` contributes
    every result-changing option (max length, BOS policy, truncation, dtype, revision,
    quantization) and the device type; the attention implementation and the library, torch and
    transformers versions are always included; ``inputs`` adds product-specific inputs (seed,
    mode, hidden states, ...).
    """
    from .models import resolve_device, source_fingerprint

    return {
        "product": product,
        "source": source_fingerprint(ref, opts.revision),
        "texts": texts_digest(list(texts)),
        "n_texts": len(texts),
        "options": opts.result_key(),
        "device_type": resolve_device(opts.device).type,
        "attn_implementation": "eager",
        "versions": software_versions(),
        "inputs": inputs,
    }


class Cache:
    """A folder of entries keyed by dictionaries. ``namespace`` separates kinds of results."""

    def __init__(self, root: Path | None = None, namespace: str = "results") -> None:
        self.root = Path(root) if root is not None else config.cache_root()
        self.dir = self.root / namespace

    def _paths(self, key: dict[str, Any]) -> tuple[Path, Path]:
        d = digest_of(key)
        return self.dir / f"{d}.pt", self.dir / f"{d}.json"

    def contains(self, key: dict[str, Any]) -> bool:
        payload, meta = self._paths(key)
        return payload.exists() and meta.exists()

    def load(self, key: dict[str, Any]) -> Any:
        """Return the stored payload; raise ``KeyError`` if absent, ``CorruptCacheEntry`` if damaged."""
        payload, meta = self._paths(key)
        if not (payload.exists() and meta.exists()):
            raise KeyError(digest_of(key))
        try:
            info = json.loads(meta.read_text())
            data = payload.read_bytes()
        except (OSError, ValueError) as exc:
            raise CorruptCacheEntry(f"unreadable cache entry {meta.stem}: {exc}") from exc
        if not isinstance(info, dict):
            kind = type(info).__name__
            raise CorruptCacheEntry(f"cache entry {meta.stem} has a key file of the wrong shape ({kind})")
        if hashlib.sha256(data).hexdigest() != info.get("sha256"):
            raise CorruptCacheEntry(f"cache entry {meta.stem} does not match its recorded hash")
        if _canonical(info.get("key")) != _canonical(key):  # another key's files under this name
            raise CorruptCacheEntry(f"cache entry {meta.stem} holds the result of another key than the one asked for")
        try:
            return torch.load(io.BytesIO(data), weights_only=True)
        except Exception as exc:  # noqa: BLE001 - any unpickling failure means a bad entry
            raise CorruptCacheEntry(f"cache entry {meta.stem} cannot be deserialised: {exc}") from exc

    def store(self, key: dict[str, Any], value: Any) -> None:
        buf = io.BytesIO()
        torch.save(value, buf)
        data = buf.getvalue()
        payload, meta = self._paths(key)
        atomic_write_bytes(payload, data)
        info = {
            "key": key,
            "sinkframes_version": __version__,
            "sha256": hashlib.sha256(data).hexdigest(),
            "bytes": len(data),
        }
        atomic_write_bytes(meta, json.dumps(info, sort_keys=True, default=str, indent=1).encode())

    def discard(self, key: dict[str, Any]) -> None:
        """Remove an entry (best effort: another process may remove it first, the folder may be read-only;
        a payload without its key file, or the reverse, reads as absent)."""
        for p in self._paths(key):
            with contextlib.suppress(OSError):
                p.unlink(missing_ok=True)

    def get_or_compute(
        self, key: dict[str, Any], compute: Callable[[], Any], use_cache: bool = True
    ) -> tuple[Any, bool]:
        """Return ``(value, hit)``; compute and store on a miss or a corrupt entry. ``use_cache=False``
        computes without reading or writing the cache."""
        if not use_cache:
            return compute(), False
        hit = self._load_or_discard(key)
        if hit is not _MISSING:
            return hit, True
        with self._computing(key):  # one process computes a key; the others wait for it, then read it
            hit = self._load_or_discard(key)
            if hit is not _MISSING:
                return hit, True
            value = compute()
            self._store_or_warn(key, value)
        return value, False

    def _load_or_discard(self, key: dict[str, Any]) -> Any:
        """The stored value, or ``_MISSING`` (absent, or corrupt: then discarded with a warning)."""
        try:
            return self.load(key)
        except KeyError:
            return _MISSING
        except CorruptCacheEntry as exc:
            warnings.warn(f"{exc}; recomputing it.", RuntimeWarning, stacklevel=3)
            self.discard(key)
            return _MISSING

    @contextlib.contextmanager
    def _computing(self, key: dict[str, Any]) -> Iterator[None]:
        """Hold the key's lock file (``<digest>.lock``) while computing it, so that two processes missing
        the same key compute it once (see :func:`file_lock`)."""
        with file_lock(self.dir / f"{digest_of(key)}.lock"):
            yield

    def _store_or_warn(self, key: dict[str, Any], value: Any) -> None:
        """Store ``value``; on a read-only or full disk warn and keep going (the result is not lost)."""
        try:
            self.store(key, value)
        except OSError as exc:  # read-only or full disk: keep the result, warn, do not lose the work
            warnings.warn(
                f"could not write the cache entry under {self.dir} ({exc}); the result is returned uncached. "
                "Point SINKFRAMES_CACHE at a writable folder to keep results between runs.",
                RuntimeWarning,
                stacklevel=4,
            )
            self.discard(key)
