"""The Colab install cell: generated from one setting, pinned, and loud when it fails.

The repository to install from is ``repository.url`` in ``_config.yml`` (the same setting the
book's repository and launch buttons use; a fork changes that one line and runs
``python -m sinkframes_build toc --write``). Templates install ``repository.branch``; an executed page is
pinned to the commit of the library that produced it. The cell runs pip through
``subprocess.check_call``, so a failed install stops "run all" instead of printing and going on,
and it does nothing outside Colab.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

#: first line of the install cell (how the cell is found in templates and pages)
MARKER = "# On Colab: install the library"


def repository(root: Path) -> tuple[str, str]:
    """``(url, branch)`` from ``_config.yml``'s ``repository`` section."""
    cfg = yaml.safe_load((root / "_config.yml").read_text()) or {}
    repo = cfg.get("repository") or {}
    url, branch = repo.get("url"), repo.get("branch", "main")
    if not url:
        raise ValueError(f"{root / '_config.yml'} has no repository.url: set it to the repository readers install from")
    return str(url).rstrip("/"), str(branch)


def install_cell_source(url: str, ref: str) -> str:
    """The install cell for ``url`` at ``ref`` (a branch, tag or commit)."""
    return (
        f"{MARKER} at `{ref}` (torch, numpy and pandas stay as Colab ships them).\n"
        "import subprocess\n"
        "import sys\n"
        "\n"
        'if "google.colab" in sys.modules:\n'
        f'    subprocess.check_call([sys.executable, "-m", "pip", "install", "-q", "sinkframes @ git+{url}@{ref}"])'
    )


def set_install_cell(nb: Any, url: str, ref: str, required: bool = True) -> bool:
    """Write the install cell of ``nb`` (the code cell starting with ``MARKER``); ``True`` if it changed.

    A notebook without one is an error when ``required`` (templates), else left alone."""
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.source.startswith(MARKER):
            new = install_cell_source(url, ref)
            changed = cell.source != new
            cell.source = new
            return changed
    if not required:
        return False
    raise ValueError(f"no install cell (a code cell starting with {MARKER!r}) in this notebook")


def pinned_ref(branch: str) -> str:
    """The whole commit of the library producing a page (``branch`` when it is not a clean git checkout): pip checks
    out exactly that commit, which an abbreviation cannot promise once the history grows."""
    from sinkframes.report.provenance import library_commit

    commit = library_commit(full=True)
    return commit if commit and "+" not in commit else branch
