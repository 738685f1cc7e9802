"""Print the claims registry's history from git: per commit that touched ``paper/claims.py``, the claims whose
rule (measure, rule, parameters, subject, comparison) was added, changed or removed. The rule-change log
(``sinkframes/data/rule_changes.json``) was first written from this output.

Usage: python bench/rule_history.py [--json]
"""

from __future__ import annotations

import json
import subprocess
import sys
import types
from typing import Any

from sinkframes.paper.rule_log import rule_of

PATH = "lib/sinkframes/paper/claims.py"


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], check=True, capture_output=True, text=True).stdout


def rules_at(commit: str) -> dict[str, dict[str, Any]]:
    """``{claim id: its rule}`` in ``claims.py`` as of ``commit`` (the file run on its own)."""
    src = _git("show", f"{commit}:{PATH}")
    mod = types.ModuleType("claims_at")
    mod.__dict__["__name__"] = "claims_at"
    sys.modules["claims_at"] = mod
    exec(compile(src, f"{commit}:{PATH}", "exec"), mod.__dict__)  # noqa: S102 - the project's own history
    return {c.id: rule_of(c) for c in getattr(mod, "CLAIMS", ())  # the file held no claims before the registry
            if getattr(c, "rule", "") and not getattr(c, "untestable", "")}


def history() -> list[dict[str, Any]]:
    commits = _git("log", "--reverse", "--format=%h|%ad", "--date=iso", "--", PATH).split("\n")
    before: dict[str, dict[str, Any]] = {}
    out = []
    for line in filter(None, commits):
        commit, date = line.split("|")
        now = rules_at(commit)
        added = sorted(set(now) - set(before))
        removed = sorted(set(before) - set(now))
        changed = sorted(k for k in set(now) & set(before) if now[k] != before[k])
        if added or removed or changed:
            subject = _git("log", "-1", "--format=%s", commit).strip()
            out.append({"commit": commit, "date": date, "added": added, "changed": changed, "removed": removed,
                        "subject": subject})
        before = now
    return out


def first_results(pages: dict[str, str]) -> dict[str, str]:
    """When each page (``id -> executed notebook``) was first committed with its results (ISO date and time)."""
    out = {}
    for page, path in pages.items():
        dates = _git("log", "--diff-filter=A", "--reverse", "--format=%ad", "--date=iso", "--", path).split("\n")
        if dates[0]:
            out[page] = dates[0]
    return out


if __name__ == "__main__":
    h = history()
    if "--json" in sys.argv:
        print(json.dumps(h, indent=1))
    else:
        for e in h:
            print(f"{e['date'][:10]} {e['commit']}: +{len(e['added'])} ~{len(e['changed'])} -{len(e['removed'])}  "
                  f"{e['subject'][:90]}")
