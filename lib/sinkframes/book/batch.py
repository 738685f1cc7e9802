"""Run the manifest's pages with papermill, then build the HTML with jupyter-book.

Each page executes into a temporary file next to its target; only a page that ran to the end
replaces the executed copy (stderr noise and widget state stripped), so a failure or an
interruption never leaves a half-written page and never destroys the previous good one. Failures
are collected, reported together at the end, and make the exit status non-zero. With ``jobs`` > 1
independent pages run in worker processes that share the result cache (a key is computed once:
see ``Cache.get_or_compute``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import nbformat

from ..analyses.base import FAILED_MODELS_KEY
from ..cache import atomic_write_bytes
from ..config import CACHE_ENV
from ..extraction.shared import ENV as SHARED_ENV
from ..verdicts.store import ENV as VERDICTS_ENV
from . import forked_kernel
from .alt_text import set_alt_texts
from .install import pinned_ref, repository, set_install_cell
from .manifest import OPTIONAL_PROFILES, Manifest, Page, load_manifest, repo_root
from .params import merge_parameters, parameter_problems


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
    """The models an executed notebook reports as failed (``analyses.base.announce``), in order, once each."""
    nb = nbformat.read(path, as_version=4)
    found = [
        ref
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
        for ref in o.get("metadata", {}).get(FAILED_MODELS_KEY, [])
    ]
    return list(dict.fromkeys(found))


class PartialPageError(RuntimeError):
    """A page ran to the end, but some of its models failed: it is written, and the build reports it."""


#: kernel starts tried per page: two kernels started at once by parallel workers can pick the same free port
KERNEL_START_ATTEMPTS = 2


def kernel_start_failure(exc: BaseException) -> bool:
    """Whether ``exc`` says the kernel never started (nothing of the page ran), so starting again is safe."""
    if type(exc).__name__ == "ZMQError":
        return True
    text = str(exc)
    return "Kernel died before replying to kernel_info" in text or "Kernel didn't respond" in text


def _page_key(page: Page, profile: str, root: Path) -> dict[str, Any]:
    from .page_cache import page_key

    return page_key(page.id, page.title, root / page.template, page.params_for(profile), profile, root)


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


def _restorable(page: Page, profile: str, root: Path) -> bool:
    """Whether ``build --reuse`` will copy ``page`` from the page cache instead of executing it."""
    from .page_cache import PageCache

    return not page.run_last and PageCache().load(_page_key(page, profile, root)) is not None


def target_of(page: Page, root: Path, out_dir: Path | None = None, profile: str = "offline") -> Path:
    """Where the executed copy of ``page`` goes: ``out_dir`` when given, else the manifest's output path for
    ``profile`` (an optional profile's pages go to a folder of their own)."""
    return (out_dir / Path(page.output).name) if out_dir else root / page.output_for(profile)


def run_page(page: Page, profile: str, root: Path, out_dir: Path | None = None) -> Path:
    """Execute one page; return the executed copy's path. Raises on failure: nothing is written when the
    page stopped on an error; a page that ran with some models failing is written, then
    :class:`PartialPageError` names them. A page that ran to the end with all its models is stored in the
    page cache (``page_cache``), for ``build(reuse=True)``."""
    import papermill as pm

    from .page_cache import PageCache

    target = target_of(page, root, out_dir, profile)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.stem}.running.ipynb")
    # a page saves its verdicts in a folder of its own; they join the others (next to the executed copies)
    # only when the page ran to the end. The pages that run last (the scorecard) read them there.
    shared = target.parent / "verdicts"
    private = not page.run_last
    saved = target.parent / f".{target.stem}.verdicts.running" if private else shared
    if private:
        shutil.rmtree(saved, ignore_errors=True)
    previous = os.environ.get(VERDICTS_ENV)
    os.environ[VERDICTS_ENV] = str(saved)
    forked = {"kernel_manager_class": forked_kernel.kernel_manager_class()} if forked_kernel.use_zygote() else {}
    try:
        for attempt in range(KERNEL_START_ATTEMPTS):
            try:
                pm.execute_notebook(
                    str(root / page.template),
                    str(tmp),
                    parameters=page.params_for(profile),
                    cwd=str(root),
                    progress_bar=False,
                    execution_timeout=page.timeout,
                    kernel_name="python3",
                    # every output has arrived when the last cell replies; a graceful shutdown then waited
                    # about 2.5 s per page for the kernel to tear down torch and exit
                    shutdown_kernel="immediate",
                    **forked,  # forked from this worker's zygote: the libraries already imported
                )
                break
            except Exception as exc:
                if attempt + 1 == KERNEL_START_ATTEMPTS or not kernel_start_failure(exc):
                    raise
                print(f"[sinkframes] {page.id}: the kernel did not start ({exc}); starting it again"
                      + (", an ordinary one" if forked else ""), file=sys.stderr)
                forked = {}
        errors = has_error_output(tmp)
        if errors:
            raise RuntimeError(f"page {page.id} holds error outputs: {errors}")
        clean_executed(tmp)
        set_title(tmp, page.title)
        failed = failed_models(tmp)
        if private:
            verdicts = sorted(saved.glob("*.json"))
            if not failed:
                PageCache().store(_page_key(page, profile, root), tmp, verdicts)
            for v in verdicts:
                shared.mkdir(exist_ok=True)
                os.replace(v, shared / v.name)
        os.replace(tmp, target)
        if failed:
            raise PartialPageError(f"page {page.id} was written without these failed models: {', '.join(failed)} "
                                   f"(each failure is shown on the page, {target})")
    finally:
        if tmp.exists():
            tmp.unlink()
        if private:
            shutil.rmtree(saved, ignore_errors=True)
        if previous is None:
            os.environ.pop(VERDICTS_ENV, None)
        else:
            os.environ[VERDICTS_ENV] = previous
    return target


def _report(failures: list[tuple[str, str]], n_pages: int) -> None:
    """The build's failure summary: every failed page with its whole error (cut at 2000 characters)."""
    print(f"\n[sinkframes] {len(failures)} of {n_pages} page(s) failed:", file=sys.stderr)
    for pid, msg in failures:
        short = msg if len(msg) < 2000 else msg[:2000] + " ..."
        print(f"  - {pid}: {short}", file=sys.stderr)


#: leftovers older than this are from a killed run, not from one still going
STALE_AFTER_S = 3600.0


def remove_leftovers(root: Path, out: Path | None = None, stale_after_s: float = STALE_AFTER_S) -> list[Path]:
    """Delete what killed runs leave behind: half-written pages (``.<page>.running.ipynb``) and their verdicts
    (``.<page>.verdicts.running/``), and
    half-converted GGUF work folders (``<models>/.<key>-*``) older than ``stale_after_s``."""
    from ..config import models_root

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


def build_html(root: Path) -> int:
    """``jupyter-book build . -W -n --keep-going`` (never executes notebooks; see _config.yml), with
    MathJax served from the built site (fetched once, see ``book.assets``)."""
    from .assets import ensure_mathjax

    ensure_mathjax(root)
    exe = shutil.which("jupyter-book") or str(Path(sys.executable).with_name("jupyter-book"))
    cmd = [exe, "build", str(root), "-W", "-n", "--keep-going"]
    print(f"[sinkframes] {' '.join(cmd)}", flush=True)
    return subprocess.call(cmd, cwd=root)


def failure_text(exc: BaseException) -> str:
    """An error as the build reports it: ``Type: message``."""
    return f"{type(exc).__name__}: {exc}".strip()


def _run_one(k: int, n: int, page: Page, profile: str, root: Path, out: Path | None,
             reuse: bool = False) -> tuple[str, str] | None:
    """Run page ``k`` of ``n`` with progress lines (with ``reuse``, copy its stored copy when its inputs are
    unchanged); the failure as ``(page id, message)``, or ``None``."""
    print(f"[sinkframes] [{k}/{n}] {page.id} ({profile}) ...", flush=True)
    t0 = time.time()
    try:
        if reuse and not page.run_last:
            target = target_of(page, root, out, profile)
            if restore_page(page, profile, root, target):
                print(f"[sinkframes] [{k}/{n}] {page.id}: reused, its inputs are unchanged -> {target}", flush=True)
                return None
        path = run_page(page, profile, root, out)
        print(f"[sinkframes] [{k}/{n}] {page.id}: ok in {time.time() - t0:.0f} s -> {path}", flush=True)
        return None
    except Exception as exc:  # noqa: BLE001 - every failure is collected and reported
        print(f"[sinkframes] [{k}/{n}] {page.id}: FAILED after {time.time() - t0:.0f} s", flush=True)
        traceback.print_exc(limit=1)
        return page.id, failure_text(exc)


def _worker_init(counter: Any, jobs: int, n_gpus: int, runs_pages: bool = False) -> None:
    """Set up one worker process: its share of the cores (``SINKFRAMES_THREADS``, which the page kernels
    inherit, unless already set) and, on a machine with several GPUs, a GPU of its own."""
    from ..threads import ENV as THREADS_ENV
    from ..threads import requested

    with counter.get_lock():
        index = counter.value
        counter.value += 1
    os.environ.setdefault(THREADS_ENV, str(requested(jobs)))
    if n_gpus > 1:
        os.environ["CUDA_VISIBLE_DEVICES"] = str(index % n_gpus)
    if runs_pages:  # its kernel zygote, with this worker's environment (its imports start now)
        forked_kernel.start_zygote()


def _run_in_workers(numbered: list[tuple[int, Page]], n: int, profile: str, root: Path, out: Path | None,
                    jobs: int, reuse: bool, zygotes: bool = False) -> list[tuple[str, str]]:
    """Run independent pages in ``jobs`` worker processes (each page still atomic); their failures. With
    ``zygotes`` (some page will execute) each worker starts a kernel zygote (``forked_kernel``) at once."""
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    import torch

    ctx = mp.get_context("spawn")
    counter = ctx.Value("i", 0)
    n_gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    workers = min(jobs, len(numbered))
    print(f"[sinkframes] {len(numbered)} pages in {workers} worker processes", flush=True)
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_worker_init,
                             initargs=(counter, workers, n_gpus, zygotes)) as pool:
        futures = [pool.submit(_run_one, k, n, page, profile, root, out, reuse) for k, page in start_order(numbered)]
        return [f for fut in futures if (f := fut.result())]


def start_order(numbered: list[tuple[int, Page]]) -> list[tuple[int, Page]]:
    """The order pages are handed to the workers: the ``long_running`` ones first, each group in manifest order.

    Started in manifest order, the longest page (chapter 5) began in the middle of the build and ran alone at
    its end while the other worker idled; started first, it runs beside the others."""
    return sorted(numbered, key=lambda item: not item[1].long_running)


def models_to_convert(pages: list[Page], profile: str) -> list[str]:
    """The offline models the pages name whose package files have no usable converted copy yet, in order."""
    from ..models.gguf import converted_copy_problem, converted_folder
    from ..models.registry import OFFLINE_MODELS

    named = [m for page in pages for m in page.params_for(profile).get("models", []) or []]
    keys = [m for m in dict.fromkeys(named) if m in OFFLINE_MODELS and OFFLINE_MODELS[m].converted]
    return [k for k in keys if converted_copy_problem(OFFLINE_MODELS[k], converted_folder(OFFLINE_MODELS[k]))]


def _convert_one(key: str) -> str | None:
    """Convert offline model ``key`` (a worker task); the error as text, or ``None``."""
    from ..models.gguf import offline_folder
    from ..models.registry import OFFLINE_MODELS

    try:
        offline_folder(OFFLINE_MODELS[key])
        return None
    except Exception as exc:  # noqa: BLE001 - the pages that need the model report it, with their other models
        return failure_text(exc)


#: profiles whose builds share attention between pages (``extraction.shared``): the offline one, whose
#: small models' attention over a few hundred sentences takes a few hundred MB on disk; the hub models of
#: the other profiles would take tens of GB
SHARED_ATTENTION_PROFILES = ("offline", "offline-large")
#: the run options a page uses when the manifest does not set them (the templates' defaults)
_PAGE_DEFAULTS: dict[str, Any] = {"dataset": "embedded", "csv_path": None, "seed": 0, "selection": "balanced",
                                  "max_length": 256, "bos_policy": "default", "dtype": "float32", "device": "auto"}


def attention_plan(pages: list[Page], profile: str) -> list[tuple[str, int, dict[str, Any]]]:
    """``(model, sentences, settings)`` to store before the pages start: for each model and sentence draw
    (dataset, seed) and run options, the largest number of sentences a page asks for (a draw of ``n``
    sentences begins with the draw of fewer). Pages with the topology page's ``official`` selection are
    left out: they choose their sentences otherwise."""
    plan: dict[tuple[Any, ...], int] = {}
    for page in pages:
        params = {**_PAGE_DEFAULTS, **page.params_for(profile)}
        if params["selection"] != "balanced" or not isinstance(params.get("n_sentences"), int):
            continue
        for model in params.get("models") or []:
            key = (model, *(params[k] for k in _PAGE_DEFAULTS if k != "selection"))
            plan[key] = max(plan.get(key, 0), params["n_sentences"])
    fields = [k for k in _PAGE_DEFAULTS if k != "selection"]
    return [(key[0], n, dict(zip(fields, key[1:], strict=True))) for key, n in plan.items()]


def _fill_one(model: str, n: int, settings: dict[str, Any]) -> str | None:
    """Store ``model``'s attention on the first ``n`` sentences of a draw (a worker task); the error as text."""
    from .. import corpus
    from ..extraction import shared
    from ..threads import configure
    from ..types import RunOptions

    try:
        configure()
        texts = corpus.sample_sentences(n, seed=settings["seed"], dataset=settings["dataset"],
                                        csv_path=settings["csv_path"])["text"].tolist()
        opts = RunOptions(max_length=settings["max_length"], bos_policy=settings["bos_policy"],
                          dtype=settings["dtype"], device=settings["device"], progress=False)
        shared.fill(model, texts, opts)
        return None
    except Exception as exc:  # noqa: BLE001 - the pages compute what is missing, and report real failures
        return failure_text(exc)


def _package_bytes(model: str) -> int:
    """Size of an offline model's packaged files: the larger, the longer its conversion."""
    from ..models.gguf import package_dir
    from ..models.parts import part_files
    from ..models.registry import OFFLINE_MODELS

    om = OFFLINE_MODELS[model]
    try:
        if om.parts:
            return sum(f.stat().st_size for f in part_files(om))
        return sum(f.stat().st_size for f in package_dir(om).rglob("*") if f.is_file())
    except Exception:  # noqa: BLE001 - only an ordering hint; the conversion reports real problems
        return 0


def _prepare_one(model: str, convert: bool, fill: tuple[int, dict[str, Any]] | None) -> str | None:
    """Convert offline model ``model`` from GGUF if ``convert``, then store its attention on ``fill`` = ``(n,
    settings)`` if given (a worker task); what went wrong, as a sentence for the log, or ``None``."""
    if convert and (problem := _convert_one(model)):
        return f"could not be converted ({problem}); its pages will say so"
    if fill is not None and (problem := _fill_one(model, *fill)):
        return f"its shared attention was not stored ({problem}); its pages compute their own"
    return None


Task = tuple[str, bool, "tuple[int, dict[str, Any]] | None"]  # (model, convert it, attention to store)


def preparation_tasks(pages: list[Page], profile: str) -> tuple[list[Task], list[str], list[tuple[str, int, dict[str, Any]]]]:
    """The tasks of :func:`prepare_models_and_attention` in the order they are given to the pool, with the
    models to convert and the attention plan they come from. Each model to convert is converted by its
    first attention task (or a task of its own if no page shares its attention); tasks with a conversion
    come first, the largest package first; the others keep the plan's order."""
    to_convert = models_to_convert(pages, profile)
    plan = attention_plan(pages, profile) if profile in SHARED_ATTENTION_PROFILES else []
    tasks: list[Task] = []
    for model, n, settings in plan:
        tasks.append((model, model in to_convert and all(t[0] != model for t in tasks), (n, settings)))
    tasks += [(m, True, None) for m in to_convert if all(t[0] != m for t in tasks)]
    sizes = {m: _package_bytes(m) for m in to_convert}
    tasks.sort(key=lambda t: -sizes[t[0]] if t[1] else 0)  # stable: the plan's order otherwise
    return tasks, to_convert, plan


def prepare_models_and_attention(pages: list[Page], profile: str, jobs: int) -> bool:
    """Before any page starts, in one pool of ``jobs`` processes: convert the GGUF models the pages need, and
    store the attention they will read (``extraction.shared``; one task per model and setting of
    :func:`attention_plan`, for the profiles in ``SHARED_ATTENTION_PROFILES``). Returns whether the pages
    should read the stored attention.

    Otherwise the first pages to load a model convert it while parallel pages wait on its lock. A model's
    first attention task converts it, and tasks with a conversion go first, the largest model first, so
    that the longest chain starts at once and the others fill the second process. A failure is only
    announced: the pages that need the model compute or report it themselves."""
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    tasks, to_convert, plan = preparation_tasks(pages, profile)
    if not tasks:
        return False
    if to_convert:
        print(f"[sinkframes] converting {', '.join(to_convert)} to fp32 copies from their packages before the pages "
              "start", flush=True)
    if plan:
        print(f"[sinkframes] computing the attention the pages share: "
              f"{', '.join(f'{m} ({n} sentences)' for m, n, _ in plan)}", flush=True)
    ctx = mp.get_context("spawn")
    with ProcessPoolExecutor(max_workers=min(jobs, len(tasks)), mp_context=ctx, initializer=_worker_init,
                             initargs=(ctx.Value("i", 0), jobs, 0)) as pool:
        futures = [pool.submit(_prepare_one, *task) for task in tasks]
        for (model, _, _), fut in zip(tasks, futures, strict=True):
            if (problem := fut.result()):
                print(f"[sinkframes] {model}: {problem}", flush=True)
    return bool(plan)


#: where independent pages run: worker processes on this machine, or Ray tasks
EXECUTORS = ("local", "ray")


def _run_on_ray(numbered: list[tuple[int, Page]], n: int, profile: str, root: Path, out: Path | None,
                address: str | None, reuse: bool) -> list[tuple[str, str]]:
    """Run independent pages as Ray tasks (one GPU each when the cluster has GPUs); their failures.

    The result cache (``SINKFRAMES_CACHE``), the book folder and ``out`` must be on a file system every
    node sees; the tasks get the cache path, the hub setting and one thread each through their environment.
    """
    try:
        import ray
    except ImportError as exc:
        raise RuntimeError("the Ray executor needs Ray: pip install 'ray>=2.9'") from exc
    from ..config import cache_root
    from ..threads import ENV as THREADS_ENV

    env = {CACHE_ENV: str(cache_root()), THREADS_ENV: os.environ.get(THREADS_ENV, "1"), "SINKFRAMES_ROOT": str(root)}
    env.update({k: os.environ[k] for k in ("HF_HUB_OFFLINE", "HF_HOME", "SINKFRAMES_MODELS") if k in os.environ})
    started = not ray.is_initialized()
    if started:
        ray.init(address=address, runtime_env={"env_vars": env}, include_dashboard=False, log_to_driver=True)
    try:
        gpus = 1 if ray.cluster_resources().get("GPU", 0) >= 1 else 0
        task: Any = ray.remote(num_cpus=1, num_gpus=gpus)(_run_one)  # Ray's typing stops at five arguments
        print(f"[sinkframes] {len(numbered)} pages as Ray tasks ({'one GPU each' if gpus else 'CPU'})", flush=True)
        results = ray.get([task.remote(k, n, page, profile, root, out, reuse) for k, page in numbered])
        return [f for f in results if f]
    finally:
        if started:
            ray.shutdown()


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
    if executor not in EXECUTORS:
        raise ValueError(f"unknown executor {executor!r}; choose one of {', '.join(EXECUTORS)}")
    root = repo_root()
    os.environ.setdefault(CACHE_ENV, str(root / ".cache" / "sinkframes"))
    m = manifest or load_manifest()
    if pages is not None and not pages:
        raise ValueError(
            "no page ids given; name pages (see notebooks/manifest.yml) or leave the option out to build all"
        )
    chosen = [m.page(p) for p in pages] if pages else [p for p in m.pages if profile in p.parameters]
    chosen = sorted(chosen, key=lambda page: page.run_last)  # the scorecard reads what the others saved
    out = Path(out_dir).resolve() if out_dir else None
    failures: list[tuple[str, str]] = [
        (page.id, f"ParameterError: {'; '.join(problems)}")
        for page in chosen
        if (problems := parameter_problems(page.params_for(profile)))
    ]
    if failures:  # nothing runs: every page's parameters are checked before any model loads
        _report(failures, len(chosen))
        return 1
    remove_leftovers(root, out)
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")
    numbered = list(enumerate(chosen, 1))
    first = [(k, page) for k, page in numbered if not page.run_last]
    last = [(k, page) for k, page in numbered if page.run_last]  # they read what the others saved: after them
    n = len(chosen)
    # the pages that will execute (the others are copied from the page cache)
    pending = [] if executor == "ray" else [page for k, page in first if not (reuse and _restorable(page, profile, root))]
    if executor == "ray":
        failures += _run_on_ray(first, n, profile, root, out, ray_address, reuse)
    elif jobs > 1 and len(first) > 1:
        sharing = prepare_models_and_attention(pending, profile, jobs)
        previous = os.environ.get(SHARED_ENV)
        if sharing:
            os.environ[SHARED_ENV] = "1"  # the page workers and their kernels inherit it
        try:
            failures += _run_in_workers(first, n, profile, root, out, jobs, reuse, zygotes=bool(pending))
        finally:
            if sharing and previous is None:
                del os.environ[SHARED_ENV]
            elif sharing and previous is not None:
                os.environ[SHARED_ENV] = previous
    else:
        if len(pending) + len(last) > 1:
            forked_kernel.start_zygote()  # several pages to execute here: their kernels fork from one zygote
        failures += [f for k, page in first if (f := _run_one(k, n, page, profile, root, out, reuse))]
    failures += [f for k, page in last if (f := _run_one(k, n, page, profile, root, out))]
    status = 0
    if failures:
        _report(failures, len(chosen))
        status = 1
    if html and out is None:
        rc = build_html(root)
        if rc != 0:
            print(f"[sinkframes] jupyter-book build failed (exit {rc})", file=sys.stderr)
            status = status or rc
        else:
            print(f"[sinkframes] HTML: {root / '_build' / 'html' / 'index.html'}")
    return status
