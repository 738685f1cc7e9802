"""More training text for the natural-text search: the Linux kernel's English documentation.

Gu et al. (ICLR 2025) found that a sink needs enough training data, not only enough steps: in their
controlled pre-training, fewer unique tokens gave fewer sink heads at the same number of steps. The Python
documentation of :mod:`sinkframes.training.emergence` is about 3M BPE tokens; the reStructuredText sources of
the kernel's documentation add about three times as much prose of a similar kind (technical English with code).

The text comes from the Debian package ``linux-doc-6.1`` (version pinned in :data:`KERNEL_DOC_PACKAGE`; the
documentation is GPL-2.0 with some files under CC-BY-4.0, and is read at training time, never shipped), fetched
with ``apt-get download`` and unpacked with ``dpkg-deb``: every ``*.rst.gz`` under ``Documentation/`` except the
``translations/`` tree.
"""

from __future__ import annotations

import gzip
from pathlib import Path

from .emergence import TrainingError, unpack_debian_package

KERNEL_DOC_PACKAGE = "linux-doc-6.1=6.1.192-3"
KERNEL_DOC_ROOT = "usr/share/doc/linux-doc-6.1/Documentation"


def fetch_kernel_docs(work: Path) -> list[tuple[str, str]]:
    """Download and unpack the pinned ``linux-doc`` package into ``work``; return its documents
    (:func:`read_kernel_docs`)."""
    unpacked = unpack_debian_package(KERNEL_DOC_PACKAGE, work, "--kernel-dir with its unpacked Documentation folder")
    return read_kernel_docs(unpacked / KERNEL_DOC_ROOT)


def read_kernel_docs(root: Path) -> list[tuple[str, str]]:
    """Every ``*.rst`` or ``*.rst.gz`` under ``root`` outside ``translations/``, as ``(relative path, text)``
    sorted by path (the ``.gz`` suffix dropped from the name)."""
    root = Path(root)
    files = sorted(p for p in root.rglob("*.rst*") if p.is_file() and p.name.endswith((".rst", ".rst.gz"))
                   and "translations" not in p.relative_to(root).parts)
    if not files:
        raise TrainingError(f"no .rst or .rst.gz files under {root} (outside translations/)")
    docs = []
    for p in files:
        raw = gzip.decompress(p.read_bytes()) if p.suffix == ".gz" else p.read_bytes()
        docs.append((p.relative_to(root).as_posix().removesuffix(".gz"), raw.decode("utf-8", errors="replace")))
    return docs
