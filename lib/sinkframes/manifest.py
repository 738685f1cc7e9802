"""``notebooks/manifest.yml``: the single source of truth for the book's pages and profiles."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

PROFILES = ("offline", "paper", "colab", "smoke")
#: profiles a page may have: a build with one runs only the pages that define it, and writes their copies to the
#: folder given here (a part of the book of its own), never over the default profile's pages
OPTIONAL_PROFILES: dict[str, str] = {"offline-large": "book/large"}
ALL_PROFILES = (*PROFILES, *OPTIONAL_PROFILES)


class ManifestError(ValueError):
    """A manifest that is missing pages, profiles or files."""


@dataclass
class Page:
    id: str
    template: str
    output: str
    title: str
    part: str
    parameters: dict[str, dict[str, Any]]
    timeout: int = 600  # seconds its kernel may go without progress (sinkframes_build.watchdog)
    run_last: bool = False  # executed after every other page (the scorecard reads their verdicts)
    long_running: bool = False  # started first when pages run in parallel (the longest pages start at once)
    random_twins: bool = False  # its analyses run each model's random-initialized twin too (stored attention: both)
    second_draw: bool = False  # it decides its headline claims again on a second draw (stored attention: its models)

    def output_for(self, profile: str) -> str:
        """Where the executed copy for ``profile`` goes, relative to the book's root."""
        if profile in OPTIONAL_PROFILES:
            return f"{OPTIONAL_PROFILES[profile]}/{Path(self.output).name}"
        return self.output

    def params_for(self, profile: str) -> dict[str, Any]:
        """The page's parameters for ``profile`` (sentence counts capped by ``SINKFRAMES_MAX_SENTENCES``)."""
        from .rehearsal import capped

        if profile not in self.parameters:
            raise ManifestError(f"page {self.id!r} has no parameters for profile {profile!r}")
        return capped({**self.parameters[profile], "profile": profile})


@dataclass
class Manifest:
    root: str
    back_matter: list[str]
    pages: list[Page] = field(default_factory=list)

    def page(self, page_id: str) -> Page:
        for p in self.pages:
            if p.id == page_id:
                return p
        raise ManifestError(f"unknown page {page_id!r}; known: {', '.join(p.id for p in self.pages)}")


def repo_root() -> Path:
    """The book's root: ``$SINKFRAMES_ROOT``, else the nearest folder above cwd holding the manifest,
    else the checkout this library was installed from."""
    env = os.environ.get("SINKFRAMES_ROOT")
    if env:
        return Path(env).resolve()
    here = Path.cwd().resolve()
    for cand in [here, *here.parents]:
        if (cand / "notebooks" / "manifest.yml").exists():
            return cand
    return Path(__file__).resolve().parents[2]  # lib/sinkframes/manifest.py -> the checkout


#: a copy of notebooks/manifest.yml inside the package (``toc --write`` keeps it equal, a test checks it), so an
#: installed copy with no checkout (Colab) still knows each profile's parameters
PACKAGED_MANIFEST = Path(__file__).resolve().parent / "data" / "manifest.yml"
#: each page's template defaults (its ``parameters`` cell), packaged beside the manifest: with them an installed
#: copy tells an edit of a parameter the manifest entry does not list (``seed``, ``max_length``, ...)
PACKAGED_DEFAULTS = PACKAGED_MANIFEST.with_name("template_defaults.json")


def packaged_defaults() -> dict[str, dict[str, Any]]:
    """:data:`PACKAGED_DEFAULTS` read (empty when it is missing or unreadable: then only the manifest is compared)."""
    import json

    try:
        return dict(json.loads(PACKAGED_DEFAULTS.read_text()))
    except (OSError, ValueError):
        return {}


def reader_manifest() -> Manifest | None:
    """The manifest for reading (profile parameters, page titles), not for running pages: the checkout's,
    else the packaged copy, else ``None``."""
    for path in (None, PACKAGED_MANIFEST):
        try:
            return load_manifest(path)
        except (ManifestError, OSError):
            continue
    return None


def load_manifest(path: Path | None = None) -> Manifest:
    path = path or repo_root() / "notebooks" / "manifest.yml"
    if not path.exists():
        raise ManifestError(f"no manifest at {path}; run from the book's repository or set SINKFRAMES_ROOT")
    raw = yaml.safe_load(path.read_text())
    pages = []
    for item in raw.get("pages", []):
        missing = {"id", "template", "output", "title", "part", "parameters"} - set(item)
        if missing:
            raise ManifestError(f"page {item.get('id', '?')} lacks {sorted(missing)}")
        absent = [p for p in PROFILES if p not in item["parameters"]]
        if absent:
            raise ManifestError(f"page {item['id']} has no parameters for profile(s) {absent}")
        unknown = [p for p in item["parameters"] if p not in ALL_PROFILES]
        if unknown:
            raise ManifestError(f"page {item['id']} has parameters for unknown profile(s) {unknown}; known: "
                                f"{', '.join(ALL_PROFILES)}")
        pages.append(Page(**item))
    toc = raw.get("toc", {})
    return Manifest(root=toc.get("root", "book/intro"), back_matter=list(toc.get("back_matter", [])), pages=pages)


#: the sidebar's word for a page whose default profile runs only a pipeline check (random weights)
NOT_RUN_SUFFIX = " (not run here)"


def toc_title(p: Page, profile: str = "offline") -> str:
    """The page's title in the sidebar and on the executed page: its title, marked when ``profile`` runs it as a
    pipeline check only."""
    pipeline = bool(p.parameters.get(profile, {}).get("pipeline_check"))
    # a profile written to its own folder (the larger models) says so, so its page is not taken for the main one
    own = f" ({profile})" if profile in OPTIONAL_PROFILES else ""
    return p.title + own + (NOT_RUN_SUFFIX if pipeline else "")


def render_toc(m: Manifest) -> str:
    """The ``_toc.yml`` text for the manifest (parts in first-seen order, then back matter)."""
    parts: dict[str, list[str]] = {}
    for p in m.pages:
        parts.setdefault(p.part, []).append(f'{Path(p.output).with_suffix("")}\n        title: "{toc_title(p)}"')
    lines = [
        "# Generated from notebooks/manifest.yml by `python -m sinkframes_build toc --write`; do not edit.",
        "format: jb-book",
        f"root: {m.root}",
        "parts:",
    ]
    for caption, files in parts.items():
        lines.append(f"  - caption: {caption}")
        lines.append("    chapters:")
        lines.extend(f"      - file: {f}" for f in files)
    for profile in OPTIONAL_PROFILES:
        extra = [p for p in m.pages if profile in p.parameters]
        if extra:
            lines.append(f"  - caption: Larger models ({profile} profile)")
            lines.append("    chapters:")
            lines.extend(f'      - file: {Path(p.output_for(profile)).with_suffix("")}\n        title: '
                         f'"{toc_title(p, profile)}"' for p in extra)
    if m.back_matter:
        lines.append("  - caption: Back matter")
        lines.append("    chapters:")
        lines.extend(f"      - file: {f}" for f in m.back_matter)
    return "\n".join(lines) + "\n"
