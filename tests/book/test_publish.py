"""Publishing: the workflow builds the HTML of the committed pages with the target CI's build test runs, and
``make publish`` puts a built site on a branch (here a scratch branch of a local clone, not pushed)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT

FLAGS = ["-W", "-n", "--keep-going"]


def test_the_workflow_builds_the_committed_pages_with_make_html_and_deploys_them():
    flow = yaml.safe_load((ROOT / ".github" / "workflows" / "publish.yml").read_text())
    build = flow["jobs"]["build"]["steps"]
    assert [s["run"] for s in build if "run" in s] == ["make html"]  # no page is executed
    upload = next(s for s in build if str(s.get("uses", "")).startswith("actions/upload-pages-artifact"))
    assert upload["with"]["path"] == "_build/html"
    assert any(str(s.get("uses", "")).startswith("actions/deploy-pages") for s in flow["jobs"]["deploy"]["steps"])
    # `make html` runs jupyter-book as the build test does (tests/book/conftest.py: the HTML CI checks)
    recipe = ROOT.joinpath("Makefile").read_text().split("\nhtml:", 1)[1].split("\n\n", 1)[0]
    assert "jupyter-book build . " + " ".join(FLAGS) in recipe
    fixture = ROOT.joinpath("tests", "book", "conftest.py").read_text()
    assert all(f'"{f}"' in fixture for f in FLAGS)


@pytest.mark.skipif(shutil.which("git") is None or shutil.which("make") is None, reason="needs git and make")
def test_make_publish_puts_the_site_on_a_branch_without_pushing(tmp_path):
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--no-checkout", str(ROOT), str(clone)], check=True)
    subprocess.run(["git", "-C", str(clone), "checkout", "-q", "HEAD", "--", "Makefile"], check=True)
    for key, value in (("user.name", "book"), ("user.email", "book@example.org")):
        subprocess.run(["git", "-C", str(clone), "config", key, value], check=True)
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("<html>the book</html>\n")
    venv = Path(sys.executable).parents[1]
    out = subprocess.run(["make", "-C", str(clone), "publish", "PUBLISH_NEEDS=", "PUBLISH_PUSH=0",
                          "PUBLISH_BRANCH=scratch-site", f"PUBLISH_DIR={site}", f"VENV={venv}"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    shown = subprocess.run(["git", "-C", str(clone), "show", "scratch-site:index.html"], capture_output=True,
                           text=True, check=True)
    assert shown.stdout == "<html>the book</html>\n"
    files = subprocess.run(["git", "-C", str(clone), "ls-tree", "--name-only", "scratch-site"], capture_output=True,
                           text=True, check=True).stdout.split()
    assert sorted(files) == [".nojekyll", "index.html"]
    remote = subprocess.run(["git", "-C", str(ROOT), "branch", "--list", "scratch-site"], capture_output=True,
                            text=True, check=True)
    assert remote.stdout == ""  # nothing was pushed back
