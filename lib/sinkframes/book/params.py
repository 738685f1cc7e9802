"""One ``parameters`` cell per executed page, holding the values the page ran with.

papermill adds an ``injected-parameters`` cell after the template's ``parameters`` cell; a reader
who opens the executed page (launch button, download) and edits ``parameters`` would have the
injected cell silently undo the edit. :func:`merge_parameters` writes the values that were run into
the ``parameters`` cell (template defaults where nothing was injected) and drops the injected cell.
"""

from __future__ import annotations

import ast
import json
import re
from functools import cache
from pathlib import Path
from typing import Any

from ..paper.claims import APPENDIX_OF
from ..types import BOS_POLICIES, MIN_TOKENS


def _literal(value: Any) -> str:
    """Python source for a literal, with double-quoted strings (the templates' style)."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_literal(k)}: {_literal(v)}" for k, v in value.items()) + "}"
    if value is None or isinstance(value, (bool, int, float)):
        return repr(value)
    raise TypeError(f"parameter value {value!r} is not a literal")


def _assignments(source: str) -> dict[str, tuple[str, Any]]:
    """``name -> (source line, value)`` for each ``name = <literal>`` line of a parameters cell."""
    out: dict[str, tuple[str, Any]] = {}
    lines = source.splitlines()
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            text = "\n".join(lines[node.lineno - 1 : (node.end_lineno or node.lineno)])
            out[node.targets[0].id] = (text, ast.literal_eval(node.value))
    return out


@cache
def template_parameters(template: Path) -> dict[str, Any]:
    """The values of a template's ``parameters`` cell (empty when the file or the cell is missing), read once."""
    import nbformat

    if not template.is_file():
        return {}
    nb = nbformat.read(template, as_version=4)
    cells = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    return {k: v for c in cells for k, (_, v) in _assignments(c.source).items()}


def unknown_parameters(params: dict[str, Any], template: Path) -> list[str]:
    """A problem per parameter name the template does not declare. papermill writes each name into the page as
    code, so a name is accepted only when it is one of the template's own (never an expression)."""
    known = set(template_parameters(Path(template))) | {"profile"}  # the manifest adds the profile name itself
    return [f"unknown parameter {name!r} (not a name the template {Path(template).name} declares; parameters are "
            f"written into the page as code, so only these are accepted: {', '.join(sorted(known))})"
            for name in params if not (isinstance(name, str) and name.isidentifier() and name in known)]


def merge_parameters(nb: Any) -> bool:
    """Fold the injected parameters into the ``parameters`` cell (in place); ``True`` if anything changed."""
    cells = nb.cells
    tagged = [i for i, c in enumerate(cells) if "parameters" in c.metadata.get("tags", [])]
    injected = [i for i, c in enumerate(cells) if "injected-parameters" in c.metadata.get("tags", [])]
    if not injected:
        return False
    if len(tagged) != 1:
        raise ValueError(f"expected one cell tagged 'parameters', found {len(tagged)}")
    defaults = _assignments(cells[tagged[0]].source)
    run: dict[str, Any] = {}
    for i in injected:
        run.update({k: v for k, (_, v) in _assignments(cells[i].source).items()})
    lines = [f"{name} = {_literal(run[name])}" if name in run else text for name, (text, _) in defaults.items()]
    # names the template does not declare were still set when the page ran: keep them, after the rest
    lines += [f"{name} = {_literal(value)}" for name, value in run.items() if name not in defaults]
    cells[tagged[0]].source = "\n".join(lines)
    for i in sorted(injected, reverse=True):
        del cells[i]
    return True


# ---------------------------------------------------------------------------------------------
# validation: every page's parameters are checked in one place, before any model loads


class ParameterError(ValueError):
    """A page parameter of the wrong type or value; the message lists every problem found."""


_INT_MIN = {
    "n_sentences": 1,
    "n_examples": 0,
    "n_output": 0,
    "n_fisher": 0,
    "batch_size": 1,
    "max_length": MIN_TOKENS,
    "max_tokens": MIN_TOKENS,
    "checkpoint_max_length": MIN_TOKENS,
    "example_sentence": 0,
    "seed": None,
}
_CHOICES: dict[str, tuple[str, ...]] = {
    # the paper's appendices and BLOOM (report.family.FAMILIES; a test keeps the two equal)
    "family": (*APPENDIX_OF, "bloom"),
    "dataset": ("embedded", "paper"),
    "bos_policy": BOS_POLICIES,
    "selection": ("balanced", "official"),
}


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _model_list_problems(params: dict[str, Any]) -> list[str]:
    """The problems of ``profile``, ``models`` and ``bos_comparison`` (a part of :func:`parameter_problems`)."""
    problems = []
    if "profile" in params:
        from ..manifest import ALL_PROFILES

        known = [*ALL_PROFILES, "custom"]
        if params["profile"] not in known:
            problems.append(f"profile must be one of {known}, got {params['profile']!r} (a page's verdicts are saved "
                            "under its profile's name; name edited parameters 'custom')")
    for name in ("models", "bos_comparison"):
        if name in params and not (name == "bos_comparison" and params[name] is None):  # None: derived from models
            v = params[name]
            if not isinstance(v, list) or not all(isinstance(m, str) and m.strip() for m in v):
                problems.append(f"{name} must be a list of model references (strings), got {v!r}")
            elif name == "models" and not v:
                problems.append(
                    "models is empty: name at least one model (an offline key, tiny:<arch>, a folder or a hub id)"
                )
            elif len(set(v)) < len(v):
                twice = sorted({m for m in v if v.count(m) > 1})
                problems.append(f"{name} lists {', '.join(twice)} more than once (each model is one unit of the "
                                "verdicts: name it once)")
    bos = params.get("bos_comparison")
    models = params.get("models")
    if isinstance(bos, list) and isinstance(models, list):
        outside = [m for m in bos if m not in models]
        if outside:
            problems.append(f"bos_comparison names {', '.join(map(str, outside))}, which models does not hold: "
                            "the comparison reuses the page's own runs, so add it to models or drop it here")
    return problems


def parameter_problems(params: dict[str, Any]) -> list[str]:  # noqa: C901 - one flat check per parameter
    """What is wrong with a page's parameters (empty: fine). Unknown names are left to the template."""
    problems = _model_list_problems(params)
    for name, low in _INT_MIN.items():
        if name in params:
            v = params[name]
            if not _is_int(v):
                problems.append(f"{name} must be a whole number, got {v!r} ({type(v).__name__})")
            elif low is not None and v < low:
                problems.append(f"{name} must be at least {low}, got {v}")
    from ..models.loading import DTYPES  # loads torch: only when parameters are checked

    for name, choices in {**_CHOICES, "dtype": tuple(DTYPES)}.items():
        if name in params and params[name] not in choices:
            problems.append(f"{name} must be one of {list(choices)}, got {params[name]!r}")
    if "csv_path" in params and params["csv_path"] is not None and not isinstance(params["csv_path"], str):
        problems.append(f"csv_path must be a path or URL (a string) or None, got {params['csv_path']!r}")
    if params.get("dataset") == "paper" and not params.get("csv_path"):
        problems.append("dataset='paper' needs csv_path (a local path or URL of wiki_dataset_sink.csv)")
    if "pipeline_check" in params and not isinstance(params["pipeline_check"], bool):
        problems.append(f"pipeline_check must be true or false, got {params['pipeline_check']!r}")
    if "random_init" in params and not isinstance(params["random_init"], bool):
        problems.append(f"random_init must be true or false, got {params['random_init']!r}")
    if "checkpoint_models" in params:
        v = params["checkpoint_models"]
        if not isinstance(v, list) or not v or not all(isinstance(m, str) and m.strip() for m in v):
            problems.append("checkpoint_models must be a non-empty list of checkpoint sources ('shipped', a folder of "
                            f"step<N> folders or a hub id with step<N> revisions), got {v!r}")
    if "checkpoint_steps" in params and params["checkpoint_steps"] is not None:
        v = params["checkpoint_steps"]
        if not isinstance(v, list) or not v or not all(isinstance(s, str) and re.fullmatch(r"step\d+", s) for s in v):
            problems.append(f"checkpoint_steps must be None or a list of names like 'step1000', got {v!r}")
    if params.get("published_check_model") is not None:
        v = params["published_check_model"]
        steps = params.get("published_check_steps")
        if not isinstance(v, str) or not v.strip():
            problems.append(f"published_check_model must be None or a hub id with step<N> revisions, got {v!r}")
        if not isinstance(steps, list) or not steps or not all(isinstance(s, str) and re.fullmatch(r"step\d+", s)
                                                                 for s in steps):
            problems.append("published_check_steps must list the checkpoints to count (names like 'step3000') when "
                            f"published_check_model is set, got {steps!r}")
    if "example_threshold" in params:
        t = params["example_threshold"]
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 < t < 1:
            problems.append(f"example_threshold must be a number between 0 and 1, got {t!r}")
    return problems


def check_parameters(params: dict[str, Any], where: str = "page") -> None:
    """Raise ``ParameterError`` listing every problem of ``params``."""
    problems = parameter_problems(params)
    if problems:
        raise ParameterError(f"{where}: bad parameters: " + "; ".join(problems))
