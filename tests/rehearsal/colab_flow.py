"""The Colab flow as a reader meets it, rehearsed on this machine against the stand-in hub.

A fresh virtualenv gets the package versions a Colab runtime ships (``colab-runtime.txt``) and a
``google.colab`` module imported at kernel start (as Colab's kernel has it, so the templates' install cell
runs). The template's own install cell is pointed at this checkout (a ``file://`` git URL at the committed
HEAD); then the template runs top to bottom in that kernel with its ``parameters`` cell edited as a reader
edits it: the ``colab`` profile's values, with fewer models and sentences. The page must run to the end
with no error, use the edited values, and leave the runtime's torch, numpy and pandas as they were.

Run by ``tests/rehearsal/test_colab_flow.py`` (``make test-colab``); it takes several minutes (the
virtualenv), so ``make test`` leaves it out.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
#: the values a reader types into the parameters cell: the colab profile's, two models and four sentences
EDITS = {"profile": "colab", "models": ["Qwen/Qwen2.5-0.5B", "FacebookAI/xlm-roberta-base"], "n_sentences": 4,
         "dataset": "paper", "dtype": "float32", "batch_size": 2}
TEMPLATE = "notebooks/01_reference_frames.ipynb"
VERSIONS = "import json, torch, numpy, pandas, transformers; print(json.dumps({m.__name__: m.__version__ for m in " \
           "(torch, numpy, pandas, transformers)}))"


def sh(cmd: list[str], **kw) -> str:
    print("[colab]", " ".join(cmd)[:200], flush=True)
    return subprocess.run(cmd, check=True, text=True, capture_output=True, **kw).stdout


def make_runtime(work: Path) -> Path:
    """The virtualenv standing in for a Colab runtime; its python."""
    venv = work / "venv"
    py = venv / "bin" / "python"
    if (venv / ".colab-runtime").exists():  # built by an earlier run in this folder
        return py
    sh([sys.executable, "-m", "venv", str(venv)])
    pins = [ln for ln in (HERE / "colab-runtime.txt").read_text().splitlines() if ln.startswith("pip==")]
    sh([str(py), "-m", "pip", "install", "-q", *pins])  # Colab's pip (a venv's own is older: no git+file@commit)
    sh([str(py), "-m", "pip", "install", "-q", "torch==2.13.0"])
    sh([str(py), "-m", "pip", "install", "-q", "-r", str(HERE / "colab-runtime.txt")])
    site = Path(sh([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).strip())
    colab = site / "google" / "colab"
    colab.mkdir(parents=True, exist_ok=True)
    (site / "google" / "__init__.py").touch()
    (colab / "__init__.py").write_text('"""Stands in for Colab\'s module: the install cell checks it is imported."""\n')
    sh([str(py), "-m", "ipykernel", "install", "--sys-prefix", "--name", "python3"])
    startup = work / "ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True, exist_ok=True)
    (startup / "00-colab.py").write_text("import google.colab  # Colab's kernel imports it at start\n")
    (venv / ".colab-runtime").touch()
    return py


def edited_template(work: Path, commit: str) -> Path:
    """The template with its install cell pointed at this checkout and its parameters cell edited."""
    import nbformat

    sys.path.insert(0, str(ROOT / "lib"))
    from sinkframes.book.params import _literal
    from sinkframes_build.install import set_install_cell

    nb = nbformat.read(ROOT / TEMPLATE, as_version=4)
    set_install_cell(nb, f"file://{ROOT}", commit)
    cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    lines = cell.source.splitlines()
    for name, value in EDITS.items():
        lines = [f"{name} = {_literal(value)}" if ln.startswith(f"{name} =") else ln for ln in lines]
    cell.source = "\n".join(lines) + f"\ncsv_path = {_literal(EDITS_CSV)}"
    out = work / Path(TEMPLATE).name
    nbformat.write(nb, out)
    return out


EDITS_CSV = "https://raw.githubusercontent.com/ValeRuscio/What-are-you-sinking-/main/Data/wiki_dataset_sink.csv"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--hf-home", type=Path, required=True,
                    help="the stand-in hub (python -m sinkframes_build standin-hub)")
    ap.add_argument("--cache", type=Path, required=True, help="SINKFRAMES_CACHE holding the paper CSV's download")
    args = ap.parse_args()
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    commit = sh(["git", "-C", str(ROOT), "rev-parse", "HEAD"]).strip()
    py = make_runtime(work)
    before = json.loads(sh([str(py), "-c", VERSIONS]))
    nb_path = edited_template(work, commit)
    env = {**os.environ, "HF_HOME": str(args.hf_home), "HF_HUB_OFFLINE": "1", "SINKFRAMES_CACHE": str(args.cache),
           "IPYTHONDIR": str(work / "ipython"), "JUPYTER_DATA_DIR": str(work / "jupyter"),
           "JUPYTER_PATH": str(work / "venv" / "share" / "jupyter"), "SINKFRAMES_VERDICTS_DIR": str(work / "verdicts")}
    for k in ("PYTHONPATH", "SINKFRAMES_ROOT", "SINKFRAMES_MAX_SENTENCES", "VIRTUAL_ENV"):
        env.pop(k, None)
    env["PATH"] = f"{work / 'venv' / 'bin'}{os.pathsep}{env['PATH']}"
    runner = ("import sys, nbformat; from nbclient import NotebookClient; nb = nbformat.read(sys.argv[1], 4); "
              "NotebookClient(nb, timeout=1800, kernel_name='python3', resources={'metadata': {'path': sys.argv[2]}})"
              ".execute(); nbformat.write(nb, sys.argv[1].replace('.ipynb', '.out.ipynb'))")
    proc = subprocess.run([str(py), "-c", runner, str(nb_path), str(work)], env=env, text=True, capture_output=True,
                          cwd=work)
    print(proc.stdout[-3000:], proc.stderr[-6000:], sep="\n")
    if proc.returncode != 0:
        return 1
    after = json.loads(sh([str(py), "-c", VERSIONS]))
    report = {"before": before, "after": after, "page": str(nb_path).replace(".ipynb", ".out.ipynb")}
    print("[colab] " + json.dumps(report))
    return 0 if before == after else 2


if __name__ == "__main__":
    sys.exit(main())
