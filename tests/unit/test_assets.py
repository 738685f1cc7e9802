"""The book's own MathJax: unpacking the npm tarball keeps the component and its fonts, nothing else."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from sinkframes_build import assets


def _tarball(path: Path, names: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in names.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_unpack_keeps_the_script_and_fonts_only(tmp_path) -> None:
    tgz = _tarball(tmp_path / "mathjax-3.2.2.tgz", {
        "package/es5/tex-mml-chtml.js": b"// component",
        "package/es5/output/chtml/fonts/woff-v2/MathJax_Main-Regular.woff": b"font",
        "package/es5/tex-svg.js": b"// not used",
        "package/ts/index.ts": b"source",
    })
    script = assets.unpack_mathjax(tgz, tmp_path / "out")
    assert script.read_bytes() == b"// component"
    kept = sorted(p.relative_to(tmp_path / "out").as_posix() for p in (tmp_path / "out").rglob("*") if p.is_file())
    assert kept == ["output/chtml/fonts/woff-v2/MathJax_Main-Regular.woff", "tex-mml-chtml.js"]


def test_a_tarball_without_the_component_is_refused(tmp_path) -> None:
    tgz = _tarball(tmp_path / "other.tgz", {"package/index.js": b"x"})
    with pytest.raises(assets.AssetError, match="no es5/tex-mml-chtml.js"):
        assets.unpack_mathjax(tgz, tmp_path / "out")


def test_config_points_mathjax_at_the_unpacked_script() -> None:
    import yaml

    root = Path(__file__).resolve().parents[2]
    cfg = yaml.safe_load((root / "_config.yml").read_text())
    assert cfg["sphinx"]["config"]["mathjax_path"] == f"mathjax/{assets.MATHJAX_SCRIPT}"
    static = cfg["sphinx"]["config"]["html_static_path"]
    assert assets.mathjax_dir(root) == root / static[0] / cfg["sphinx"]["config"]["mathjax_path"].split("/")[0]


def test_missing_npm_is_a_clear_error(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(assets.shutil, "which", lambda name: None)
    with pytest.raises(assets.AssetError, match="npm is needed"):
        assets.ensure_mathjax(tmp_path)
