"""Where a build's work runs: the preparation pool, and the pages in this process, in worker processes or
as Ray tasks. Every executor runs a page through :func:`sinkframes_build.execute.run_one`.

Worker processes share the result cache (a key is computed once: see ``Cache.get_or_compute``).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from sinkframes.config import CACHE_ENV
from sinkframes.extraction.shared import ENV as SHARED_ENV
from sinkframes.manifest import Page

from .execute import failure_text, run_one
from .plan import preparation_tasks, start_order

#: where independent pages run: this machine's processes (``jobs``), or Ray tasks
EXECUTORS = ("local", "ray")
#: the failure of a page as ``(page id, message)``
Failure = tuple[str, str]


def _worker_init(counter: Any, jobs: int, n_gpus: int) -> None:
    """Set up one worker process: its share of the cores (``SINKFRAMES_THREADS`` unless already set, and
    ``OMP_NUM_THREADS`` to match, which the page kernels inherit) and, on a machine with several GPUs, a GPU
    of its own."""
    from sinkframes.threads import ENV as THREADS_ENV
    from sinkframes.threads import requested

    _die_with_parent()
    with counter.get_lock():
        index = counter.value
        counter.value += 1
    os.environ.setdefault(THREADS_ENV, str(requested(jobs)))
    # torch and the OpenMP/BLAS pools of every page kernel start with that count, so a page that never calls
    # threads.configure (chapter 9, the scorecard) does not spin a machine-wide pool against the other worker
    os.environ["OMP_NUM_THREADS"] = os.environ[THREADS_ENV]
    if n_gpus > 1:
        os.environ["CUDA_VISIBLE_DEVICES"] = str(index % n_gpus)


#: prctl option: the signal the kernel sends a process when its parent dies (Linux)
PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """Make this worker stop when the build that started it stops: on Linux the kernel sends it SIGTERM when the
    build process dies (killed by TERM or KILL: no worker goes on writing pages for a build that is gone), and
    SIGTERM ends the worker at once (an exception would be caught by the pool's task loop, which would then wait
    for more work); the page's Jupyter kernel notices its parent is gone and exits by itself."""
    import signal
    import sys

    parent = os.getppid()
    if sys.platform.startswith("linux"):
        import contextlib
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    signal.signal(signal.SIGTERM, lambda signum, frame: os._exit(128 + signum))
    if os.getppid() != parent:  # the build died before the request took effect
        sys.exit(1)


def _pool(workers: int, jobs: int, n_gpus: int = 0) -> ProcessPoolExecutor:
    """``workers`` fresh (spawned) processes, each set up by :func:`_worker_init` for ``jobs`` sharing the cores."""
    ctx = mp.get_context("spawn")
    return ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_worker_init,
                               initargs=(ctx.Value("i", 0), jobs, n_gpus))


def _convert_one(key: str) -> str | None:
    """Convert offline model ``key`` (a worker task); the error as text, or ``None``."""
    from sinkframes.models.gguf import offline_folder
    from sinkframes.models.registry import OFFLINE_MODELS

    try:
        offline_folder(OFFLINE_MODELS[key])
        return None
    except Exception as exc:  # noqa: BLE001 - the pages that need the model report it, with their other models
        return failure_text(exc)


def _fill_one(model: str, n: int, settings: dict[str, Any]) -> str | None:
    """Store ``model``'s attention on the first ``n`` sentences of a draw, or with ``settings["draw"] == "second"`` on
    the second draw a page of ``n`` sentences makes (``PageSetup.second_texts``); a worker task; the error as text."""
    from sinkframes import corpus
    from sinkframes.extraction import shared
    from sinkframes.threads import configure
    from sinkframes.types import RunOptions

    try:
        configure()
        drawn = corpus.sample_sentences(n, seed=settings["seed"], dataset=settings["dataset"],
                                        csv_path=settings["csv_path"])
        if settings.get("draw") == "second":
            drawn = corpus.disjoint_draw(drawn, seed=settings["seed"], dataset=settings["dataset"],
                                         csv_path=settings["csv_path"])
        texts = drawn["text"].tolist()
        opts = RunOptions(max_length=settings["max_length"], bos_policy=settings["bos_policy"],
                          dtype=settings["dtype"], device=settings["device"], progress=False)
        shared.fill(model, texts, opts)
        return None
    except Exception as exc:  # noqa: BLE001 - the pages compute what is missing, and report real failures
        return failure_text(exc)


def _prepare_one(model: str, convert: bool, fills: tuple[tuple[int, dict[str, Any]], ...]) -> str | None:
    """Convert offline model ``model`` from GGUF if ``convert``, then store its attention on each of ``fills`` (``(n,
    settings)``; a worker task); what went wrong, as a sentence for the log, or ``None``."""
    if convert and (problem := _convert_one(model)):
        return f"could not be converted ({problem}); its pages will say so"
    for fill in fills:
        if problem := _fill_one(model, *fill):
            return f"its shared attention was not stored ({problem}); its pages compute their own"
    return None


def _draw(n: int, settings: dict[str, Any]) -> str:
    """``200 sentences`` or ``the second draw of 200``: one entry of the attention plan, as the log says it."""
    return f"the second draw of {n}" if settings.get("draw") == "second" else f"{n} sentences"


def _filled(fills: tuple[tuple[int, dict[str, Any]], ...]) -> str:
    """``attention on 200 sentences and on the second draw of 200 ready`` for a task's ``fills``."""
    return "attention on " + " and on ".join(_draw(*f) for f in fills) + " ready" if fills else ""


def prepare_models_and_attention(pages: list[Page], profile: str, jobs: int) -> bool:
    """Before any page starts, in one pool of ``jobs`` processes: convert the GGUF models the pages need, and
    store the attention they will read (``extraction.shared``; :func:`plan.preparation_tasks`). Returns
    whether the pages should read the stored attention.

    Otherwise the first pages to load a model convert it while parallel pages wait on its lock. A failure
    is only announced: the pages that need the model compute or report it themselves."""
    tasks, to_convert, plan = preparation_tasks(pages, profile)
    if not tasks:
        return False
    if to_convert:
        print(f"[sinkframes] converting {', '.join(to_convert)} to fp32 copies from their packages before the pages "
              "start", flush=True)
    if plan:
        print(f"[sinkframes] computing the attention the pages share: "
              f"{', '.join(f'{m} ({_draw(n, s)})' for m, n, s in plan)}", flush=True)
    t0 = time.time()
    with _pool(min(jobs, len(tasks)), jobs) as pool:
        futures = {pool.submit(_prepare_one, *task): task for task in tasks}
        for done, fut in enumerate(as_completed(futures), 1):
            model, convert, fills = futures[fut]
            what = " and ".join(x for x in ("fp32 copy ready" if convert else "", _filled(fills)) if x)
            problem = fut.result()
            said = f"FAILED ({problem})" if problem else what
            print(f"[sinkframes] preparation {done}/{len(tasks)}: {model} {said} "
                  f"({time.time() - t0:.0f} s since the preparation started)", flush=True)
    return bool(plan)


def run_here(numbered: list[tuple[int, Page]], n: int, profile: str, root: Path, out: Path | None,
             reuse: bool) -> list[Failure]:
    """Run pages one after another in this process; their failures."""
    return [f for k, page in numbered if (f := run_one(k, n, page, profile, root, out, reuse))]


def run_in_workers(numbered: list[tuple[int, Page]], n: int, profile: str, root: Path, out: Path | None,
                   jobs: int, reuse: bool) -> list[Failure]:
    """Run independent pages in ``jobs`` worker processes, the longest first (each page still atomic); their
    failures."""
    import torch

    n_gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    workers = min(jobs, len(numbered))
    print(f"[sinkframes] {len(numbered)} pages in {workers} worker processes", flush=True)
    pool = _pool(workers, workers, n_gpus)
    try:
        futures = [pool.submit(run_one, k, n, page, profile, root, out, reuse)
                   for k, page in start_order(numbered, profile)]
        failures = []
        t0 = time.time()
        for done, fut in enumerate(as_completed(futures), 1):
            if (f := fut.result()):
                failures.append(f)
            left = len(futures) - done
            print(f"[sinkframes] {done} of {len(futures)} pages done, {left} to go "
                  f"({time.time() - t0:.0f} s since the pages started)", flush=True)
        return failures
    except KeyboardInterrupt:
        print("[sinkframes] interrupted: the queued pages are dropped and the workers stop with this process; the "
              "pages already written are kept, and the next `make book` continues from the cached results",
              flush=True)
        pool.shutdown(wait=False, cancel_futures=True)
        raise SystemExit(130) from None
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def run_on_ray(numbered: list[tuple[int, Page]], n: int, profile: str, root: Path, out: Path | None,
               address: str | None, reuse: bool) -> list[Failure]:
    """Run independent pages as Ray tasks (one GPU each when the cluster has GPUs); their failures.

    Needs the ``ray`` extra (``pip install 'sinkframes[ray]'``). The result cache (``SINKFRAMES_CACHE``),
    the book folder and ``out`` must be on a file system every node sees; the tasks get the cache path, the
    hub settings, the shared-attention switch and one thread each through their environment.
    """
    try:
        import ray
    except ImportError as exc:
        raise RuntimeError("the Ray executor needs Ray: pip install 'sinkframes[ray]'") from exc
    from sinkframes.config import cache_root
    from sinkframes.threads import ENV as THREADS_ENV

    env = {CACHE_ENV: str(cache_root()), THREADS_ENV: os.environ.get(THREADS_ENV, "1"), "SINKFRAMES_ROOT": str(root)}
    passed = ("HF_HUB_OFFLINE", "HF_HOME", "SINKFRAMES_MODELS", SHARED_ENV)
    env.update({k: os.environ[k] for k in passed if k in os.environ})
    started = not ray.is_initialized()
    if started:
        ray.init(address=address, runtime_env={"env_vars": env}, include_dashboard=False, log_to_driver=True)
    try:
        gpus = 1 if ray.cluster_resources().get("GPU", 0) >= 1 else 0
        task: Any = ray.remote(num_cpus=1, num_gpus=gpus)(run_one)  # Ray's typing stops at five arguments
        print(f"[sinkframes] {len(numbered)} pages as Ray tasks ({'one GPU each' if gpus else 'CPU'})", flush=True)
        results = ray.get([task.remote(k, n, page, profile, root, out, reuse)
                           for k, page in start_order(numbered, profile)])
        return [f for f in results if f]
    finally:
        if started:
            ray.shutdown()
