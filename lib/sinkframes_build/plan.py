"""What a build will do, decided before any page runs: the order pages start in, the models to convert
and the attention the pages share.

Nothing here runs a model or a kernel; :mod:`sinkframes_build.executors` carries the plan out.
"""

from __future__ import annotations

import inspect
import json
import math
from dataclasses import asdict
from pathlib import Path
from typing import Any

from sinkframes.book.params import template_parameters
from sinkframes.manifest import Manifest, Page, repo_root
from sinkframes.models.loading import RANDOM_PREFIX
from sinkframes.types import RunOptions

#: profiles whose builds share attention between pages (``extraction.shared``): the offline one, whose
#: small models' attention over a few hundred sentences takes a few hundred MB on disk; the hub models of
#: the other profiles would take tens of GB
SHARED_ATTENTION_PROFILES = ("offline", "offline-large")
#: the parameters that decide which attention a page reads: the sentence draw and the run options that
#: enter the attention's cache key
ATTENTION_SETTINGS = ("dataset", "csv_path", "seed", "max_length", "bos_policy", "dtype", "device")

#: ``(model, convert it, the (sentences, settings) of each attention draw to store, none or more)``
Task = tuple[str, bool, "tuple[tuple[int, dict[str, Any]], ...]"]


#: the file, in the page cache's folder, that keeps each page's last execution time per profile
DURATIONS = "durations.json"


def _durations_file() -> Path:
    from sinkframes.config import cache_root

    return cache_root() / "pages" / DURATIONS


#: each page's execution time in a build from an empty cache (``make reproduce``'s, as CI runs it), packaged: the
#: start order of a fresh clone, whose page cache has measured nothing yet
COLD_DURATIONS = Path(__file__).resolve().parent / "cold_durations.json"


def _read_durations(path: Path, profile: str) -> dict[str, float]:
    import json

    try:
        return {k: float(v) for k, v in json.loads(path.read_text()).get(profile, {}).items()}
    except (OSError, ValueError, AttributeError):
        return {}


def measured_durations(profile: str) -> dict[str, float]:
    """``page id -> seconds``: the longest execution of each page under ``profile`` this cache has recorded, over
    the packaged cold-build times (:data:`COLD_DURATIONS`) for pages it has not; empty when neither holds any."""
    return {**_read_durations(COLD_DURATIONS, profile), **_read_durations(_durations_file(), profile)}


def record_duration(page_id: str, profile: str, seconds: float) -> None:
    """Keep the longest time ``page_id`` took to execute under ``profile`` (its cost from an empty cache, which a
    later run that reuses cached results does not lower; workers write one at a time; a read-only or full disk
    only skips it)."""
    import json

    from sinkframes.cache import atomic_write_bytes, file_lock

    path = _durations_file()
    try:
        with file_lock(path.with_suffix(".lock")):
            try:
                data = json.loads(path.read_text())
            except (OSError, ValueError):
                data = {}
            kept = data.setdefault(profile, {})
            kept[page_id] = max(round(float(seconds), 1), float(kept.get(page_id, 0.0)))
            atomic_write_bytes(path, json.dumps(data, sort_keys=True, indent=1).encode())
    except OSError:
        return


def start_order(numbered: list[tuple[int, Page]], profile: str | None = None) -> list[tuple[int, Page]]:
    """The order pages are handed to the workers: longest first, by the longest time each page took under
    ``profile`` (:func:`measured_durations`: this cache's, else the packaged cold build's); a page never timed goes
    by its ``long_running`` flag (first) and otherwise after the timed ones, each group in manifest order.

    Started in manifest order, the longest page began in the middle of the build and ran alone at its end while
    the other worker idled; started first, it runs beside the others."""
    took = measured_durations(profile) if profile else {}

    def cost(item: tuple[int, Page]) -> float:
        page = item[1]
        if page.id in took:
            return took[page.id]
        return math.inf if page.long_running else -1.0

    return sorted(numbered, key=lambda item: -cost(item))


def template_defaults_text(m: Manifest) -> str:
    """The JSON of :data:`PACKAGED_DEFAULTS` for ``m``: ``{page id: {name: default}}`` read from the templates."""
    table = {p.id: template_parameters(repo_root() / p.template) for p in m.pages}
    return json.dumps(table, indent=1, sort_keys=True) + "\n"


def run_parameters(page: Page, profile: str) -> dict[str, Any]:
    """The parameters ``page`` runs with under ``profile``: the manifest's values over its template's
    ``parameters`` cell, over ``page.setup``'s and ``RunOptions``' defaults for names neither sets."""
    from sinkframes.book.page import setup

    signature = inspect.signature(setup).parameters.values()
    defaults = {p.name: p.default for p in signature if p.default is not inspect.Parameter.empty}
    template = template_parameters(repo_root() / page.template)
    return {**asdict(RunOptions()), **defaults, **template, **page.params_for(profile)}


def attention_plan(pages: list[Page], profile: str) -> list[tuple[str, int, dict[str, Any]]]:
    """``(model, sentences, settings)`` to store before the pages start: for each model and sentence draw
    (dataset, seed) and run options, the largest number of sentences a page asks for (a draw of ``n``
    sentences begins with the draw of fewer). Pages with the topology page's ``official`` selection are
    left out: they choose their sentences otherwise. A page marked ``random_twins`` adds each model's
    random-initialized twin (``random:<model>``), which its analyses run beside the model. A page marked
    ``second_draw`` adds, for its models, the second draw it decides its headline claims on again
    (``corpus.disjoint_draw`` of its sentences; settings ``draw: "second"``), so that two pages with the same
    second draw run its forward pass once."""
    plan: dict[tuple[Any, ...], int] = {}
    second: dict[tuple[Any, ...], None] = {}  # (model, *settings, n), in order
    for page in pages:
        params = run_parameters(page, profile)
        if params["selection"] != "balanced" or not isinstance(params.get("n_sentences"), int):
            continue
        models = list(params.get("models") or [])
        if page.second_draw:  # a second draw of n is disjoint from the first n: its own entry for each n
            for model in models:
                second[(model, *(params[k] for k in ATTENTION_SETTINGS), params["n_sentences"])] = None
        if page.random_twins:
            models += [f"{RANDOM_PREFIX}{m}" for m in models if not m.startswith(RANDOM_PREFIX)]
        for model in models:
            key = (model, *(params[k] for k in ATTENTION_SETTINGS))
            plan[key] = max(plan.get(key, 0), params["n_sentences"])
    first = [(key[0], n, dict(zip(ATTENTION_SETTINGS, key[1:], strict=True))) for key, n in plan.items()]
    return first + [(key[0], key[-1], {**dict(zip(ATTENTION_SETTINGS, key[1:-1], strict=True)), "draw": "second"})
                    for key in second]


def models_to_convert(pages: list[Page], profile: str) -> list[str]:
    """The offline models the pages name whose package files have no usable converted copy yet, in order."""
    from sinkframes.models.gguf import converted_copy_problem, converted_folder
    from sinkframes.models.registry import OFFLINE_MODELS

    named = [m for page in pages for m in page.params_for(profile).get("models", []) or []]
    keys = [m for m in dict.fromkeys(named) if m in OFFLINE_MODELS and OFFLINE_MODELS[m].converted]
    return [k for k in keys if converted_copy_problem(OFFLINE_MODELS[k], converted_folder(OFFLINE_MODELS[k]))]


def _package_bytes(model: str) -> int:
    """Size of an offline model's packaged files (0 for any other model): the larger, the longer its conversion and
    its passes."""
    from sinkframes.models.gguf import package_dir
    from sinkframes.models.parts import part_files
    from sinkframes.models.registry import OFFLINE_MODELS

    om = OFFLINE_MODELS.get(model)
    if om is None:
        return 0
    try:
        if om.parts:
            return sum(f.stat().st_size for f in part_files(om))
        return sum(f.stat().st_size for f in package_dir(om).rglob("*") if f.is_file())
    except Exception:  # noqa: BLE001 - only an ordering hint; the conversion reports real problems
        return 0


def preparation_tasks(pages: list[Page], profile: str
                      ) -> tuple[list[Task], list[str], list[tuple[str, int, dict[str, Any]]]]:
    """The preparation's tasks in the order they are given to the pool, with the models to convert and the
    attention plan they come from. One task per model: it converts the model if it must be (its package
    is read once), then stores its attention on each of its plan's entries (a first draw and a second draw, with
    the model loaded once). Tasks with a conversion come first, the largest package first, so that the longest
    chain starts at once; the others follow the most work first (sentences times the package's size, a random
    twin's that of its model), so that the short tasks of the small and tiny models fill the end."""
    to_convert = models_to_convert(pages, profile)
    plan = attention_plan(pages, profile) if profile in SHARED_ATTENTION_PROFILES else []
    fills: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    for model, n, settings in plan:
        fills.setdefault(model, []).append((n, settings))
    tasks: list[Task] = [(m, m in to_convert, tuple(f)) for m, f in fills.items()]
    tasks += [(m, True, ()) for m in to_convert if m not in fills]
    sizes = {m: _package_bytes(m) for m in to_convert}

    def work(task: Task) -> float:
        return sum(n for n, _ in task[2]) * (_package_bytes(task[0].removeprefix(RANDOM_PREFIX)) or 0)

    tasks.sort(key=lambda t: (0, -sizes[t[0]]) if t[1] else (1, -work(t)))  # stable otherwise
    return tasks, to_convert, plan
