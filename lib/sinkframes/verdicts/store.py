"""Verdicts on disk: each page saves its own, the scorecard reads them all.

The folder is ``$SINKFRAMES_VERDICTS_DIR`` when set (the batch run points it next to the executed
pages), else ``verdicts/`` under the current directory.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from .verdict import Verdict

ENV = "SINKFRAMES_VERDICTS_DIR"


def folder() -> Path:
    return Path(os.environ.get(ENV) or "verdicts")


def save(page: str, profile: str, verdicts: list[Verdict], directory: Path | None = None) -> Path:
    """Write ``verdicts`` of ``page`` (run under ``profile``) to ``<folder>/<page>.json``."""
    d = directory or folder()
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"{page}.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps({"page": page, "profile": profile, "verdicts": [v.to_json() for v in verdicts]},
                              indent=1, sort_keys=True, default=str) + "\n")
    os.replace(tmp, path)
    return path


def load_all(directory: Path | None = None, profile: str | None = None) -> dict[str, list[Verdict]]:
    """Every page's saved verdicts (``page -> verdicts``), optionally only those run under ``profile``."""
    d = directory or folder()
    out: dict[str, list[Verdict]] = {}
    for path in sorted(d.glob("*.json")):
        try:
            raw = json.loads(path.read_text())
            if profile is not None and raw.get("profile") != profile:
                continue
            out[str(raw["page"])] = [Verdict.from_json(v) for v in raw["verdicts"]]
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{path} is not a verdict file ({exc}); delete it and re-run its page") from exc
    return out
