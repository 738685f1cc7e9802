"""Verdicts on disk: each page saves its own, the scorecard reads them all.

The folder is ``$SINKFRAMES_VERDICTS_DIR`` when set (the batch run points it next to the executed
pages), else ``verdicts/`` under the current directory.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .verdict import Verdict

ENV = "SINKFRAMES_VERDICTS_DIR"


def folder() -> Path:
    return Path(os.environ.get(ENV) or "verdicts")


@dataclass
class PageVerdicts:
    """What one page saved: its verdicts and the models it ran (``ref -> family, paper_frame, causal``)."""

    page: str
    profile: str
    verdicts: list[Verdict]
    models: dict[str, dict[str, Any]] = field(default_factory=dict)
    inputs: dict[str, Any] = field(default_factory=dict)  # n_sentences, dataset, seed
    registry: dict[str, Any] = field(default_factory=dict)  # the registry version and fingerprint decided with
    #: an appendix's own reading of claims a section page decides (not counted: the scorecard sets them beside the
    #: section page's verdicts, ``report.reconcile``)
    readings: list[Verdict] = field(default_factory=list)


def save(page: str, profile: str, verdicts: list[Verdict], directory: Path | None = None,
         models: dict[str, dict[str, Any]] | None = None, inputs: dict[str, Any] | None = None,
         readings: list[Verdict] | None = None) -> Path:
    """Write ``verdicts`` of ``page`` (run under ``profile`` on ``models``) to ``<folder>/<page>.json``; ``readings``:
    the page's own reading of claims another page decides (see :class:`PageVerdicts`)."""
    d = directory or folder()
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"{page}.json"
    tmp = path.with_suffix(".json.tmp")
    from ..paper.rule_log import stamp

    body = {"page": page, "profile": profile, "models": models or {}, "inputs": inputs or {},
            "registry": stamp(), "verdicts": [v.to_json() for v in verdicts]}
    if readings:
        body["readings"] = [v.to_json() for v in readings]
    tmp.write_text(json.dumps(body, indent=1, sort_keys=True, default=_plain) + "\n")
    os.replace(tmp, path)
    return path


def _plain(x: Any) -> Any:
    """numpy scalars as Python numbers; NaN stays NaN (JSON ``NaN``, which Python's json reads back)."""
    if hasattr(x, "item"):
        return x.item()
    return str(x)


def load_all(directory: Path | None = None, profile: str | None = None) -> dict[str, PageVerdicts]:
    """Every page's saved verdicts (``page -> PageVerdicts``), optionally only those run under ``profile``."""
    d = directory or folder()
    out: dict[str, PageVerdicts] = {}
    for path in sorted(d.glob("*.json")):
        try:
            raw = json.loads(path.read_text())
            if profile is not None and raw.get("profile") != profile:
                continue
            out[str(raw["page"])] = PageVerdicts(str(raw["page"]), str(raw["profile"]),
                                                 [Verdict.from_json(v) for v in raw["verdicts"]],
                                                 dict(raw.get("models", {})), dict(raw.get("inputs", {})),
                                                 dict(raw.get("registry", {})),
                                                 [Verdict.from_json(v) for v in raw.get("readings", [])])
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{path} is not a verdict file ({exc}); delete it and re-run its page") from exc
    return out


def model_records(results: list[Any]) -> dict[str, dict[str, Any]]:
    """What the scorecard needs to know of each model behind ``results`` (family, frame, mask, encoding, weights)."""
    keys = ("family", "paper_frame", "causal", "position_encoding", "weights")
    return {r.ref: {k: r.record[k] for k in keys if k in r.record} for r in results}
