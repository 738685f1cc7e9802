"""Run one page: execute its template with papermill (or copy its stored copy), clean it, put it in place.

A page executes into a temporary file next to its target; only a page that ran to the end replaces the
executed copy (stderr noise and widget state stripped), so a failure or an interruption never leaves a
half-written page and never destroys the previous good one. Its verdicts are saved in a folder of its
own and join the others only when it ran to the end.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import nbformat

from sinkframes.book.params import merge_parameters
from sinkframes.cache import atomic_write_bytes
from sinkframes.manifest import Page, repo_root, toc_title
from sinkframes.results import FAILED_MODELS_KEY
from sinkframes.verdicts.store import ENV as VERDICTS_ENV

from .alt_text import set_alt_texts
from .install import pinned_ref, repository, set_install_cell
from .plan import record_duration

#: kernel starts tried per page: two kernels started at once by parallel workers can pick the same free port
KERNEL_START_ATTEMPTS = 2


class PartialPageError(RuntimeError):
    """A page ran to the end, but some of its models failed: it is written, and the build reports it."""


def clean_executed(path: Path) -> None:
    """Drop stderr streams and widget state from an executed notebook, keep one ``parameters`` cell holding
    the values it ran with, and give its figures alt text (in place)."""
    nb = nbformat.read(path, as_version=4)
    merge_parameters(nb)
    url, branch = repository(repo_root())
    set_install_cell(nb, url, pinned_ref(branch), required=False)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = [
                o for o in cell.outputs if not (o.get("output_type") == "stream" and o.get("name") == "stderr")
            ]
    nb.metadata.pop("widgets", None)
    set_alt_texts(nb)
    nbformat.write(nb, path)


def set_title(path: Path, title: str) -> None:
    """Give an executed page the manifest's title (one template can serve several pages: the family
    appendices), as the first line of its first markdown cell."""
    nb = nbformat.read(path, as_version=4)
    first = next((c for c in nb.cells if c.cell_type == "markdown"), None)
    if first is None:
        return
    lines = first.source.splitlines()
    heading = f"# {title}"
    if not lines or lines[0] != heading:
        first.source = "\n".join([heading, *lines[1:]]) if lines and lines[0].startswith("# ") else (
            "\n".join([heading, "", *lines]))
        nbformat.write(nb, path)


#: the tag of a template's analysis sections that a pipeline check (random weights) leaves empty
PIPELINE_SECTION_TAG = "analysis-section"


def fold_cells(path: Path, tag: str) -> int:
    """Remove the cells tagged ``tag`` from the rendered page (jupyter-book's ``remove-cell`` tag; the
    notebook keeps them, for a reader who opens it on Colab); returns how many."""
    nb = nbformat.read(path, as_version=4)
    hit = [c for c in nb.cells if tag in c.metadata.get("tags", [])]
    for c in hit:
        tags = c.metadata["tags"]
        if "remove-cell" not in tags:
            tags.append("remove-cell")
    if hit:
        nbformat.write(nb, path)
    return len(hit)


def has_error_output(path: Path) -> list[str]:
    """Names of the error outputs an executed notebook holds (empty list when clean)."""
    nb = nbformat.read(path, as_version=4)
    return [
        o.get("ename", "error")
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
        if o.get("output_type") == "error"
    ]


def failed_models(path: Path) -> list[str]:
    """The models an executed notebook reports as failed (``results.announce``), in order, once each."""
    nb = nbformat.read(path, as_version=4)
    found = [
        ref
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
        for ref in o.get("metadata", {}).get(FAILED_MODELS_KEY, [])
    ]
    return list(dict.fromkeys(found))


def kernel_start_failure(exc: BaseException) -> bool:
    """Whether ``exc`` says the kernel never started (nothing of the page ran), so starting again is safe."""
    if type(exc).__name__ == "ZMQError":
        return True
    text = str(exc)
    return "Kernel died before replying to kernel_info" in text or "Kernel didn't respond" in text


def failure_text(exc: BaseException) -> str:
    """An error as the build reports it: ``Type: message``."""
    return f"{type(exc).__name__}: {exc}".strip()


def target_of(page: Page, root: Path, out_dir: Path | None = None, profile: str = "offline") -> Path:
    """Where the executed copy of ``page`` goes: ``out_dir`` when given, else the manifest's output path for
    ``profile`` (an optional profile's pages go to a folder of their own)."""
    return (out_dir / Path(page.output).name) if out_dir else root / page.output_for(profile)


def _page_key(page: Page, profile: str, root: Path) -> dict[str, Any]:
    from .page_cache import page_key

    return page_key(page.id, page.title, root / page.template, page.params_for(profile), profile, root)


def restorable(page: Page, profile: str, root: Path) -> bool:
    """Whether ``build --reuse`` will copy ``page`` from the page cache instead of executing it."""
    from .page_cache import PageCache

    return not page.run_last and PageCache().load(_page_key(page, profile, root)) is not None


def restore_page(page: Page, profile: str, root: Path, target: Path) -> bool:
    """Copy the stored copy of ``page`` (and the verdicts it saved) into place when one was computed from
    exactly these inputs (``page_cache``); ``False`` when there is none."""
    from .page_cache import PageCache

    stored = PageCache().load(_page_key(page, profile, root))
    if stored is None:
        return False
    verdicts = target.parent / "verdicts"
    for name, data in stored.verdicts.items():
        atomic_write_bytes(verdicts / name, data)
    nb = nbformat.reads(stored.notebook.decode(), as_version=4)
    url, branch = repository(root)
    set_install_cell(nb, url, pinned_ref(branch), required=False)  # the same library, now at this commit
    text = nbformat.writes(nb)
    atomic_write_bytes(target, (text if text.endswith("\n") else text + "\n").encode())  # as nbformat.write
    return True


def _execute(page: Page, profile: str, root: Path, out: Path) -> None:
    """papermill on ``page``'s template into ``out``, its kernel started again once if it never started."""
    import papermill as pm

    from sinkframes.book.params import ParameterError, unknown_parameters

    from .watchdog import PageStalledError, stall_watchdog

    unknown = unknown_parameters(page.params_for(profile), root / page.template)
    if unknown:  # checked again here: every way of running a page passes through this call
        raise ParameterError(f"page {page.id}: " + "; ".join(unknown))
    for attempt in range(KERNEL_START_ATTEMPTS):
        # no limit on a cell's time, which depends on the machine: a kernel that stops making progress for the
        # page's stall limit is stopped instead (sinkframes_build.watchdog)
        with stall_watchdog(page.timeout) as watch:
            try:
                pm.execute_notebook(
                    str(root / page.template),
                    str(out),
                    parameters=page.params_for(profile),
                    cwd=str(root),
                    progress_bar=False,
                    execution_timeout=None,
                    kernel_name="python3",
                    # every output has arrived when the last cell replies; a graceful shutdown then waited
                    # about 2.5 s per page for the kernel to tear down torch and exit
                    shutdown_kernel="immediate",
                )
                return
            except Exception as exc:
                if watch.fired:
                    raise PageStalledError(
                        f"page {page.id}: its kernel made no progress (no CPU time, no disk traffic) for "
                        f"{watch.limit:.0f} s and was stopped. Every result it finished is cached, so running the "
                        "build again (`make book`) continues from there.") from exc
                if attempt + 1 == KERNEL_START_ATTEMPTS or not kernel_start_failure(exc):
                    raise
                print(f"[sinkframes] {page.id}: the kernel did not start ({exc}); starting it again",
                      file=sys.stderr)


@contextmanager
def _verdict_folder(folder: Path, private: bool) -> Iterator[Path]:
    """``folder`` as the running page's verdict folder (``verdicts.store``), emptied first and removed after
    when ``private``; the previous setting restored after."""
    previous = os.environ.get(VERDICTS_ENV)
    if private:
        shutil.rmtree(folder, ignore_errors=True)
    os.environ[VERDICTS_ENV] = str(folder)
    try:
        yield folder
    finally:
        if private:
            shutil.rmtree(folder, ignore_errors=True)
        if previous is None:
            os.environ.pop(VERDICTS_ENV, None)
        else:
            os.environ[VERDICTS_ENV] = previous


def run_page(page: Page, profile: str, root: Path, out_dir: Path | None = None) -> Path:
    """Execute one page; return the executed copy's path. Raises on failure: nothing is written when the
    page stopped on an error; a page that ran with some models failing is written, then
    :class:`PartialPageError` names them. A page that ran to the end with all its models is stored in the
    page cache (``page_cache``), for ``build(reuse=True)``."""
    from .page_cache import PageCache

    target = target_of(page, root, out_dir, profile)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.stem}.running.ipynb")
    # the pages that run last (the scorecard) read the others' verdicts next to the executed copies
    shared = target.parent / "verdicts"
    private = not page.run_last
    folder = target.parent / f".{target.stem}.verdicts.running" if private else shared
    try:
        with _verdict_folder(folder, private):
            _execute(page, profile, root, tmp)
            errors = has_error_output(tmp)
            if errors:
                raise RuntimeError(f"page {page.id} holds error outputs: {errors}")
            clean_executed(tmp)
            set_title(tmp, toc_title(page, profile))  # the sidebar shows the page's own title
            if page.params_for(profile).get("pipeline_check"):
                fold_cells(tmp, PIPELINE_SECTION_TAG)
            failed = failed_models(tmp)
            if private:
                verdicts = sorted(folder.glob("*.json"))
                if not failed:
                    PageCache().store(_page_key(page, profile, root), tmp, verdicts)
                for v in verdicts:
                    shared.mkdir(exist_ok=True)
                    os.replace(v, shared / v.name)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    if failed:
        raise PartialPageError(f"page {page.id} was written without these failed models: {', '.join(failed)} "
                               f"(each failure is shown on the page, {target})")
    return target


def run_one(k: int, n: int, page: Page, profile: str, root: Path, out: Path | None,
            reuse: bool = False) -> tuple[str, str] | None:
    """Run page ``k`` of ``n`` with progress lines (with ``reuse``, copy its stored copy when its inputs are
    unchanged); the failure as ``(page id, message)``, or ``None``. Every executor runs pages through this."""
    print(f"[sinkframes] [{k}/{n}] {page.id} ({profile}) ...", flush=True)
    t0 = time.time()
    try:
        if reuse and not page.run_last:
            target = target_of(page, root, out, profile)
            if restore_page(page, profile, root, target):
                print(f"[sinkframes] [{k}/{n}] {page.id}: reused, its inputs are unchanged -> {target}", flush=True)
                return None
        path = run_page(page, profile, root, out)
        took = time.time() - t0
        record_duration(page.id, profile, took)  # the next build starts the longest pages first
        print(f"[sinkframes] [{k}/{n}] {page.id}: ok in {took:.0f} s -> {path}", flush=True)
        return None
    except Exception as exc:  # noqa: BLE001 - every failure is collected and reported
        print(f"[sinkframes] [{k}/{n}] {page.id}: FAILED after {time.time() - t0:.0f} s", flush=True)
        traceback.print_exc(limit=1)
        return page.id, failure_text(exc)
