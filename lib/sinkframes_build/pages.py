"""Checks on executed pages: the provenance line must state what the page actually ran with."""

from __future__ import annotations

import re
from typing import Any

from .compare import text_outputs

PROVENANCE_RE = re.compile(
    r"\*\*Produced by\*\* sinkframes (?P<version>\S+)(?: \(commit (?P<commit>[^)]+)\))? with the `(?P<profile>[^`]+)` "
    r"profile: models "
    r"(?P<models>(?:`[^`]+`(?:, )?)+); (?P<n>\d+) sentences from the `(?P<dataset>[^`]+)` set "
    r"\(seed (?P<seed>-?\d+)\); "
    r"torch (?P<torch>\S+), transformers (?P<transformers>\S+), Python \S+?(?:; weights in (?P<dtype>\w+) on "
    r"(?P<device>\w+))?\.(?:\s|$)"
)


def provenance_of(nb: Any) -> dict[str, Any] | None:
    """The fields of the page's provenance line, or ``None`` when it has none."""
    for out in text_outputs(nb, skip_provenance=False):
        m = PROVENANCE_RE.search(out.text)
        if m:
            d: dict[str, Any] = m.groupdict()
            d["models"] = re.findall(r"`([^`]+)`", d["models"])
            d["n"], d["seed"] = int(d["n"]), int(d["seed"])
            return d
    return None


def provenance_problems(nb: Any) -> list[str]:
    """What is wrong with an executed page's provenance against the parameters it ran with (empty: fine)."""
    params = nb.metadata.get("papermill", {}).get("parameters")
    if params is None:
        return ["the page holds no papermill parameters (was it executed by `sinkframes_build build`?)"]
    prov = provenance_of(nb)
    if prov is None:
        return ["no provenance line ('**Produced by** sinkframes ...') among the page's outputs"]
    problems = []
    if prov["profile"] != params.get("profile"):
        problems.append(f"provenance names profile {prov['profile']!r}, the page ran {params.get('profile')!r}")
    if "models" in params and prov["models"] != list(params["models"]):
        problems.append(f"provenance names models {prov['models']}, the page ran {params['models']}")
    if "n_sentences" in params and not 0 < prov["n"] <= int(params["n_sentences"]):
        problems.append(f"provenance names {prov['n']} sentences, the page asked for {params['n_sentences']}")
    if "seed" in params and prov["seed"] != int(params["seed"]):
        problems.append(f"provenance names seed {prov['seed']}, the page ran seed {params['seed']}")
    if prov["dtype"] is not None and "dtype" in params and prov["dtype"] != params["dtype"]:
        problems.append(f"provenance names dtype {prov['dtype']!r}, the page ran {params['dtype']!r}")
    if "dataset" in params and prov["dataset"] != params["dataset"]:
        problems.append(f"provenance names dataset {prov['dataset']!r}, the page ran {params['dataset']!r}")
    return problems
