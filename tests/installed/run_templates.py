"""Execute every template with the smoke profile in a scratch folder, with an installed ``sinkframes``.

Run by ``tests/installed/run.sh`` with the fresh virtualenv's python, from outside the repository:
the manifest comes from the installed package (its packaged copy), the templates are copied into
the scratch folder, and each page must run to the end with no error output and no failed model,
in a kernel that imports the installed library at the floor transformers version.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import papermill as pm

from sinkframes.manifest import PACKAGED_MANIFEST, Page, load_manifest
from sinkframes.threads import ENV as THREADS_ENV
from sinkframes.verdicts.store import ENV as VERDICTS_ENV

# the build package is not installed (the wheel holds the science and the page API): this runner reads executed
# pages with its helpers from the checkout's lib/, put last on the path so that the installed sinkframes is the one
# imported
sys.path.append(str(Path(__file__).resolve().parents[2] / "lib"))
from sinkframes_build.execute import failed_models, has_error_output  # noqa: E402
from sinkframes_build.page_checks import page_problems, verdict_problems  # noqa: E402

PROBE = ("import importlib.util, json, sys, sinkframes, transformers\nprint(json.dumps({'python': sys.executable, "
         "'sinkframes': sinkframes.__file__, 'transformers': transformers.__version__, "
         "'build_installed': importlib.util.find_spec('sinkframes_build') is not None}))")


def kernel_facts(work: Path) -> dict[str, str]:
    """What the kernel papermill starts imports: its python, the library's file, transformers' version."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(PROBE)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, work / "probe.ipynb")
    pm.execute_notebook(str(work / "probe.ipynb"), str(work / "probe.out.ipynb"), kernel_name="python3",
                        progress_bar=False, cwd=str(work))
    out = nbformat.read(work / "probe.out.ipynb", as_version=4).cells[0].outputs
    return json.loads("".join(o.get("text", "") for o in out if o.get("name") == "stdout"))


class _KernelStart:
    """Held from a page's start until its kernel runs: two kernels started at once in one process can be handed
    the same free port (the second then fails with "Address already in use"), so kernels start one at a time."""

    _lock = threading.Lock()

    def __init__(self) -> None:
        self._lock.acquire()
        self._held = True

    def done(self, **_: object) -> None:
        if self._held:
            self._held = False
            self._lock.release()


def run_page(page: Page, templates: Path, out: Path, work: Path) -> list[str]:
    """Execute ``page``'s template with the smoke profile into ``out``; the problems found (none when it ran clean)."""
    target = out / f"{page.id}.ipynb"
    print(f"[installed] {page.id} ...", flush=True)
    starting = _KernelStart()
    try:
        pm.execute_notebook(str(templates / Path(page.template).name), str(target),
                            parameters=page.params_for("smoke"), cwd=str(work), progress_bar=False,
                            kernel_name="python3", execution_timeout=page.timeout,
                            on_notebook_start=starting.done)
    except Exception as exc:  # noqa: BLE001 - every page is tried; failures are listed together
        return [f"{page.id}: {type(exc).__name__}: {str(exc)[-1500:]}"]
    finally:
        starting.done()
    problems = []
    if errors := has_error_output(target):
        problems.append(f"{page.id}: error outputs {errors}")
    if failed := failed_models(target):
        problems.append(f"{page.id}: failed models {failed}")
    # the result box, a caption under every figure, no raw Python values (what tests/book's smoke run checks)
    problems += [f"{page.id}: {p}" for p in page_problems(nbformat.read(target, as_version=4),
                                                           section=not page.run_last)]
    print(f"[installed] {page.id}: {'ok' if not problems else 'FAILED'}", flush=True)
    return problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--templates", type=Path, required=True, help="the checkout's notebooks/ folder")
    ap.add_argument("--work", type=Path, required=True, help="scratch folder outside the repository")
    ap.add_argument("--floor", type=Path, required=True, help="requirements-floor.txt (the expected versions)")
    ap.add_argument("--jobs", type=int, default=2, help="templates executed at once (default 2)")
    args = ap.parse_args()
    work = args.work.resolve()
    floor = dict(line.split("==") for line in args.floor.read_text().splitlines()
                 if "==" in line and not line.startswith("#"))
    facts = kernel_facts(work)
    print(f"[installed] kernel: {facts}", flush=True)
    venv = Path(sys.prefix).resolve()
    problems = []
    if not Path(facts["sinkframes"]).resolve().is_relative_to(venv):
        problems.append(f"the kernel imports sinkframes from {facts['sinkframes']}, not from {venv}")
    if facts["build_installed"]:
        problems.append("the installed package holds the build (sinkframes_build): pyproject.toml's package list "
                        "must leave it out")
    if facts["transformers"] != floor["transformers"]:
        problems.append(f"the kernel has transformers {facts['transformers']}, not the floor {floor['transformers']}")
    m = load_manifest(PACKAGED_MANIFEST)  # what an installed copy knows; the checkout's copy is tested equal
    templates, out = work / "notebooks", work / "pages"
    shutil.copytree(args.templates, templates, ignore=shutil.ignore_patterns("*.yml", ".ipynb_checkpoints"))
    out.mkdir()
    os.environ[VERDICTS_ENV] = str(out / "verdicts")
    # the pages in two kernels at a time, one thread each (the machine's two cores); the scorecard last, since it
    # reads what the others saved
    os.environ.setdefault(THREADS_ENV, "1")
    first, last = [p for p in m.pages if not p.run_last], [p for p in m.pages if p.run_last]
    for group in (first, last):
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            for found in pool.map(lambda page: run_page(page, templates, out, work), group):
                problems.extend(found)
    problems += verdict_problems(m.pages, out / "verdicts")
    if problems:
        print("[installed] FAILED:\n" + "\n".join(f"  - {p}" for p in problems), file=sys.stderr)
        return 1
    print(f"[installed] all {len(m.pages)} pages ran with the installed library (transformers "
          f"{facts['transformers']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
