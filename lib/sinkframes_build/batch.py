"""``build``: run the manifest's pages, then build the HTML with jupyter-book.

A build checks every page's parameters, removes what killed runs left, prepares the models and the
attention the pages share (``executors.prepare_models_and_attention``, from ``plan``), runs the
independent pages with one executor (this process, worker processes or Ray; each page through
``execute.run_one``) and then, here, the pages that read the others' verdicts (the scorecard). Failures
are collected, reported together at the end, and make the exit status non-zero.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sinkframes.book.params import parameter_problems, unknown_parameters
from sinkframes.config import CACHE_ENV
from sinkframes.extraction.shared import ENV as SHARED_ENV
from sinkframes.manifest import OPTIONAL_PROFILES, Manifest, Page, load_manifest, repo_root

from . import executors
from .execute import restorable, run_one

#: leftovers older than this are from a killed run, not from one still going
STALE_AFTER_S = 3600.0


def _report(failures: list[executors.Failure], n_pages: int) -> None:
    """The build's failure summary: every failed page with its whole error (cut at 2000 characters)."""
    print(f"\n[sinkframes] {len(failures)} of {n_pages} page(s) failed:", file=sys.stderr)
    for pid, msg in failures:
        short = msg if len(msg) < 2000 else msg[:2000] + " ..."
        print(f"  - {pid}: {short}", file=sys.stderr)


def remove_leftovers(root: Path, out: Path | None = None, stale_after_s: float = STALE_AFTER_S) -> list[Path]:
    """Delete what killed runs leave behind: half-written pages (``.<page>.running.ipynb``) and their verdicts
    (``.<page>.verdicts.running/``), and
    half-converted GGUF work folders (``<models>/.<key>-*``) older than ``stale_after_s``."""
    from sinkframes.config import models_root

    now = time.time()
    folders = [out] if out else [root / "book", *(root / f for f in OPTIONAL_PROFILES.values())]
    found = [p for folder in folders for p in folder.glob(".*.running.ipynb")]
    found += [p for folder in folders for p in folder.glob(".*.verdicts.running") if p.is_dir()]
    if models_root().is_dir():
        found += [p for p in models_root().glob(".*-*") if p.is_dir()]
    removed = []
    for p in found:
        try:
            if now - p.stat().st_mtime < stale_after_s:
                continue
            shutil.rmtree(p) if p.is_dir() else p.unlink()
            removed.append(p)
        except OSError:
            continue
    for p in removed:
        print(f"[sinkframes] removed {p} (left by an interrupted run)", file=sys.stderr)
    return removed


class BuildRunning(RuntimeError):
    """Another build holds the lock of the folder this one would write into."""


@contextmanager
def build_lock(folder: Path) -> Iterator[None]:
    """Hold ``<folder>/.build.lock`` for a whole build, so that two builds never write pages and verdicts into one
    folder at once (one of them would lose a page's verdicts); raise :class:`BuildRunning` when another build
    holds it. Without ``fcntl`` (Windows) no lock is taken."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".build.lock", "a+b") as fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise BuildRunning(f"another build is writing into {folder}; wait for it to finish, or write this one "
                               "elsewhere with --out") from exc
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def build_html(root: Path) -> int:
    """``jupyter-book build . -W -n --keep-going`` (never executes notebooks; see _config.yml), with
    MathJax served from the built site (fetched once, see ``sinkframes_build.assets``)."""
    from .assets import ensure_mathjax

    ensure_mathjax(root)
    exe = shutil.which("jupyter-book") or str(Path(sys.executable).with_name("jupyter-book"))
    cmd = [exe, "build", str(root), "-W", "-n", "--keep-going"]
    print(f"[sinkframes] {' '.join(cmd)}", flush=True)
    return subprocess.call(cmd, cwd=root)


@contextmanager
def _reading_shared_attention(on: bool) -> Iterator[None]:
    """With ``on``, the pages (and the workers and kernels that inherit this environment) read the stored
    attention (``extraction.shared``); the previous setting is restored after."""
    previous = os.environ.get(SHARED_ENV)
    if on:
        os.environ[SHARED_ENV] = "1"
    try:
        yield
    finally:
        if on and previous is None:
            del os.environ[SHARED_ENV]
        elif on and previous is not None:
            os.environ[SHARED_ENV] = previous


def _choose(m: Manifest, pages: list[str] | None, profile: str) -> list[Page]:
    """The pages to build (the named ones, else every page of ``profile``), those that read the others'
    results (the scorecard) last."""
    if pages is not None and not pages:
        raise ValueError(
            "no page ids given; name pages (see notebooks/manifest.yml) or leave the option out to build all"
        )
    chosen = [m.page(p) for p in pages] if pages else [p for p in m.pages if profile in p.parameters]
    return sorted(chosen, key=lambda page: page.run_last)


def build(
    profile: str = "offline",
    pages: list[str] | None = None,
    out_dir: str | None = None,
    html: bool = True,
    manifest: Manifest | None = None,
    jobs: int = 1,
    executor: str = "local",
    ray_address: str | None = None,
    reuse: bool = False,
) -> int:
    """Run the chosen pages (all by default) with ``profile``, then build the HTML unless ``html`` is false
    or the pages go to ``out_dir``. ``jobs`` > 1 runs independent pages in that many worker processes;
    ``executor="ray"`` runs them as Ray tasks instead (on the cluster at ``ray_address``, else on a local
    Ray instance). The pages that read the others' results (the scorecard) run after them, here. With
    ``reuse`` a page whose inputs are unchanged since it last ran to the end is copied from the page cache
    instead of executed (``page_cache``; the scorecard always runs). Returns the exit status."""
    if executor not in executors.EXECUTORS:
        raise ValueError(f"unknown executor {executor!r}; choose one of {', '.join(executors.EXECUTORS)}")
    if executor == "ray" and importlib.util.find_spec("ray") is None:
        raise ValueError("the Ray executor needs Ray, which is not installed: pip install 'sinkframes[ray]' "
                         "(or build with the local executor)")
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")
    root = repo_root()
    os.environ.setdefault(CACHE_ENV, str(root / ".cache" / "sinkframes"))
    chosen = _choose(manifest or load_manifest(), pages, profile)
    out = Path(out_dir).resolve() if out_dir else None
    failures = [(page.id, f"ParameterError: {'; '.join(problems)}") for page in chosen
                if (problems := unknown_parameters(page.params_for(profile), root / page.template)
                    + parameter_problems(page.params_for(profile)))]
    if failures:  # nothing runs: every page's parameters are checked before any model loads
        _report(failures, len(chosen))
        return 1
    try:
        with build_lock(out or root):
            return _build_locked(chosen, profile, root, out, html, jobs, executor, ray_address, reuse)
    except BuildRunning as exc:
        print(f"[sinkframes] {exc}", file=sys.stderr)
        return 1


#: the profile whose verdicts the book's introduction answers with (its default pages)
INTRO_PROFILE = "offline"


def _write_intro_answer(root: Path) -> None:
    """The answer in ``book/intro.md``, from the verdicts the pages just saved (``report.answer.write_intro``)."""
    from sinkframes.report.answer import write_intro
    from sinkframes.verdicts import load_all

    book = root / "book"
    if write_intro(book / "intro.md", load_all(book / "verdicts", INTRO_PROFILE)):
        print("[sinkframes] book/intro.md: the answer written again from the new verdicts", flush=True)


def _build_locked(chosen: list[Page], profile: str, root: Path, out: Path | None, html: bool, jobs: int,
                  executor: str, ray_address: str | None, reuse: bool) -> int:
    """:func:`build` once its folder is locked and its parameters are checked."""
    failures: list[executors.Failure] = []
    t0 = time.time()
    remove_leftovers(root, out)
    numbered = list(enumerate(chosen, 1))
    first = [(k, page) for k, page in numbered if not page.run_last]
    last = [(k, page) for k, page in numbered if page.run_last]  # they read what the others saved: after them
    n = len(chosen)
    pending = [page for _, page in first if not (reuse and restorable(page, profile, root))]  # to execute
    with _reading_shared_attention(executors.prepare_models_and_attention(pending, profile, jobs)):
        if executor == "ray":
            failures += executors.run_on_ray(first, n, profile, root, out, ray_address, reuse)
        elif jobs > 1 and len(first) > 1:
            failures += executors.run_in_workers(first, n, profile, root, out, jobs, reuse)
        else:
            failures += executors.run_here(first, n, profile, root, out, reuse)
    failures += [f for k, page in last if (f := run_one(k, n, page, profile, root, out))]
    if out is None and profile == INTRO_PROFILE and not failures:
        _write_intro_answer(root)
    status = 0
    if failures:
        _report(failures, len(chosen))
        status = 1
    where = out or root / "book"
    if html and out is None:
        rc = build_html(root)
        if rc != 0:
            print(f"[sinkframes] jupyter-book build failed (exit {rc})", file=sys.stderr)
            status = status or rc
        else:
            where = root / "_build" / "html" / "index.html"
            print(f"[sinkframes] HTML: {where}")
    print(f"[sinkframes] done in {(time.time() - t0) / 60:.1f} min: {n} pages, {len(failures)} failed; "
          f"open {where}", flush=True)
    return status
