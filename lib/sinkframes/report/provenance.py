"""Provenance of a page: which models, sentences, profile and software produced its numbers."""

from __future__ import annotations

import datetime
import importlib.metadata
import json
import platform
import subprocess
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import torch
import transformers

from .._version import __version__
from ..models import resolve_device

if TYPE_CHECKING:
    from ..results import ModelResult
    from ..types import RunOptions


@lru_cache(maxsize=1)
def library_commit(full: bool = False) -> str | None:
    """The commit the library was installed from (``pip install git+...``), or of the checkout it
    runs from (``+ local changes`` when ``lib/`` differs from it); ``None`` when neither is known.
    Abbreviated to 10 characters for reading, whole with ``full`` (for an install cell to pin)."""
    try:
        raw = importlib.metadata.distribution("sinkframes").read_text("direct_url.json") or "{}"
        commit = json.loads(raw).get("vcs_info", {}).get("commit_id")
        if commit:
            return str(commit) if full else str(commit)[:10]
    except (importlib.metadata.PackageNotFoundError, ValueError):
        pass
    here = Path(__file__).resolve().parents[1]  # lib/sinkframes
    try:
        head = subprocess.run(
            ["git", "-C", str(here), "rev-parse", *([] if full else ["--short=10"]), "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(here), "status", "--porcelain", "--", "."],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{head} + local changes" if dirty else head or None


#: the files that hold the claims, their rules, measures and nulls: the registry a verdict is decided with
REGISTRY_FILES = ("paper/claims.py", "verdicts")


@lru_cache(maxsize=1)
def registry_commit() -> str | None:
    """The last commit that changed the claims registry or the verdict rules (``+ local changes`` when they
    differ from it), so that a page names the rules it was decided with and git history shows them committed
    before the page; ``None`` outside a git checkout (an installed copy names the library's commit)."""
    here = Path(__file__).resolve().parents[1]  # lib/sinkframes
    try:
        last = subprocess.run(["git", "-C", str(here), "log", "-1", "--format=%h", "--abbrev=10", "--",
                               *REGISTRY_FILES], capture_output=True, text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(here), "status", "--porcelain", "--", *REGISTRY_FILES],
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{last} + local changes" if dirty else last or None


def provenance(
    profile: str, models: list[str], n_sentences: int, dataset: str, seed: int, opts: RunOptions | None = None,
    weights: dict[str, str] | None = None,
) -> str:
    """Markdown naming the profile, models, sentence count, run options and versions that produced a page
    (``weights``: a description of the weights behind a name that is not a model reference)."""
    commit = library_commit() or "not a git checkout"
    registry = registry_commit() or commit
    run = f"; weights in {opts.dtype} on {resolve_device(opts.device).type}" if opts is not None else ""
    revision = opts.revision if opts is not None else None
    how = ("with `custom` parameters (edited: they match no profile of the manifest)" if profile == "custom"
           else f"with the `{profile}` profile")
    return (
        f"**Produced by** sinkframes {__version__} (commit {commit}; claims and rules of registry commit {registry}) "
        f"{how}: models "
        f"{', '.join(f'`{m}`' for m in models)}; {n_sentences} sentences from the `{dataset}` set "
        f"(seed {seed}); torch {torch.__version__}, transformers {transformers.__version__}, "
        f"Python {platform.python_version()}{run}. Run on {datetime.date.today().isoformat()}; weights: "
        + "; ".join(f"`{m}` {(weights or {}).get(m) or model_revision(m, revision)}" for m in models) + "."
    )


def model_revision(ref: str, revision: str | None = None) -> str:
    """Which weights a reference names: the offline package and its version, random weights, a local
    folder, or a hub revision (``main`` is whatever the hub holds on the run date)."""
    from ..models.loading import hub_fallback
    from ..models.registry import OFFLINE_MODELS

    if hub_fallback(ref):
        return f"{OFFLINE_MODELS[ref].upstream} from the hub, revision {revision or 'main'} (package not installed)"
    if ref in OFFLINE_MODELS:
        return f"from {OFFLINE_MODELS[ref].packages}"
    if ref.startswith("tiny:"):
        return "random weights built from a config (seeded)"
    if ref.startswith("random:"):
        return f"random weights (seeded) in the architecture of `{ref.split(':', 1)[1]}`"
    if Path(ref).expanduser().exists():
        return "from a local folder"
    return f"hub revision {revision or 'main'}"


def model_notes(results: Sequence[ModelResult]) -> str:
    """One line per model of any analysis' results: what was loaded, with its quantization and BOS convention,
    then one per model that failed (``results.Results.failures``)."""
    lines = []
    for res in results:
        r = res.record
        bos = (
            f"adds a start token (`{r['position0_token']}` at position 0)"
            if r["adds_bos"]
            else "adds no start token (position 0 is the first word)"
        )
        lines.append(
            f"- `{r['ref']}`: {r['architecture']} ({r['family']} family), {r['n_layers']} layers, "
            f"{r['n_heads']} query heads / {r['n_kv_heads']} KV head{'s' if r['n_kv_heads'] != 1 else ''}, "
            f"{r['position_encoding']}; weights: {r['quantization']}; tokenizer {bos}."
        )
    lines += [f"- **{f.line()}**" for f in getattr(results, "failures", [])]
    return "\n".join(lines)
