"""Assets the rendered book serves itself, so that it reads correctly with no network.

MathJax is the one script the pages would otherwise take from a CDN. :func:`ensure_mathjax` fetches
the pinned release from the npm registry (``npm pack``, whose integrity check npm performs) and
unpacks only what the pages use, the TeX/MathML-to-HTML component and its web fonts, into
``_assets/mathjax/``. ``_config.yml`` makes ``_assets`` a Sphinx static path (copied into the built
site's ``_static``) and points ``mathjax_path`` there. The folder is deliberately not called
``_static``: jupyter-book adds every ``.js`` file under a source ``_static`` folder to every page, which
would load MathJax twice on pages with math and once on pages without.
"""

from __future__ import annotations

import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

MATHJAX_VERSION = "3.2.2"
MATHJAX_SCRIPT = "tex-mml-chtml.js"
#: what the pages need from the npm package: the combined component and the fonts it loads relative to itself
MATHJAX_MEMBERS = (f"package/es5/{MATHJAX_SCRIPT}", "package/es5/output/chtml/fonts/woff-v2/")
STATIC_DIR = "_assets/mathjax"


class AssetError(RuntimeError):
    """An asset could not be fetched or unpacked."""


def mathjax_dir(root: Path) -> Path:
    return Path(root) / STATIC_DIR


def unpack_mathjax(tarball: Path, dest: Path) -> Path:
    """Extract the MathJax members of an npm tarball into ``dest`` (``package/es5/`` stripped)."""
    dest.mkdir(parents=True, exist_ok=True)
    found = 0
    with tarfile.open(tarball, "r:gz") as tar:
        for member in tar.getmembers():
            if not member.isfile() or not member.name.startswith(MATHJAX_MEMBERS):
                continue
            rel = Path(member.name).relative_to("package/es5")
            if ".." in rel.parts:
                continue
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            src = tar.extractfile(member)
            if src is None:
                continue
            with src, open(target, "wb") as fh:
                shutil.copyfileobj(src, fh)
            found += 1
    if not (dest / MATHJAX_SCRIPT).is_file():
        raise AssetError(f"{tarball.name} holds no es5/{MATHJAX_SCRIPT}; is it the mathjax package?")
    return dest / MATHJAX_SCRIPT


def ensure_mathjax(root: Path) -> Path:
    """``_assets/mathjax/tex-mml-chtml.js`` under ``root``, fetched with ``npm pack`` when missing."""
    dest = mathjax_dir(root)
    script = dest / MATHJAX_SCRIPT
    if script.is_file():
        return script
    npm = shutil.which("npm")
    if npm is None:
        raise AssetError("npm is needed once to fetch MathJax for the offline book (Debian: apt-get install npm); "
                         f"or unpack mathjax@{MATHJAX_VERSION}'s es5/ folder into {dest}")
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run([npm, "pack", f"mathjax@{MATHJAX_VERSION}", "--silent"], cwd=tmp,  # noqa: S603
                              capture_output=True, text=True)
        tarballs = sorted(Path(tmp).glob("mathjax-*.tgz"))
        if proc.returncode != 0 or not tarballs:
            raise AssetError(f"npm pack mathjax@{MATHJAX_VERSION} failed: {proc.stderr.strip()[-400:]}")
        partial = dest.with_name(dest.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        unpack_mathjax(tarballs[0], partial)
        shutil.rmtree(dest, ignore_errors=True)
        partial.rename(dest)
    print(f"[sinkframes] MathJax {MATHJAX_VERSION} unpacked into {dest}", flush=True)
    return script
