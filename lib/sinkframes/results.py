"""The one result type every analysis returns, per model.

A ``ModelResult`` holds what one analysis found for one model on one sentence set:

- ``record``: the model record (``models.ModelRecord.to_dict()``);
- ``layers``: the per-layer table (one row per layer, a ``layer`` column), or an empty frame;
- ``heads``: per-head arrays ``name -> [layer, head]`` (means over sentences);
- ``samples``: per-sentence arrays ``name -> [sample, ...]``;
- ``data``: what else the analysis keeps (evidence behind a verdict, tokens, sub-results);
- ``params``: the analysis parameters and run options it ran with;
- ``from_cache``: whether the heavy pass came from the on-disk cache.

``result.tables(mode)`` returns the analysis' named tables under ``"faithful"`` (the official
computation) or ``"corrected"``. Each analysis module registers itself once, as an :class:`Analysis` spec
(:func:`register`): its name, entry point, tables and attention null. The verdict layer, the family pages and the
tests read the registry (:func:`analyses`), not lists of names.

:func:`each_model` runs one analysis over several models and isolates them: a model that fails
(a missing package, an unsupported architecture, out of memory) is announced and recorded in
``Results.failures``, and the other models' results still come back, so a page renders what did run.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .types import Mode, check_mode

TableBuilder = Callable[["ModelResult", Mode], dict[str, pd.DataFrame]]
#: ``(result, record of the null, seed, graph) -> result``: the analysis recomputed on structureless attention of
#: the result's shapes (``verdicts.structureless``), the null a model must differ from
NullBuilder = Callable[["ModelResult", dict[str, Any], int, str], "ModelResult"]


@dataclass(frozen=True)
class Analysis:
    """One analysis, registered once by its module (:func:`register`): its name (``ModelResult.analysis`` of its
    results, and the module's name for a chapter's analysis); the module that declares it and its measures; its
    entry point; the tables a page shows; how it reruns on structureless attention for its null (``None``: it
    has no attention null), and what that null is called on the page; and whether and how the family appendices
    run it."""

    name: str
    module: str
    analyse: Callable[..., Any] | None = None
    tables: TableBuilder | None = None
    on_uniform_attention: NullBuilder | None = None
    attention_null_name: str = "uniform attention"
    #: its place among the analyses every family appendix runs (``report.family.run``); ``None``: they do not run it
    family_order: int | None = None
    #: the family page's parameters its entry point takes besides the models, texts and options (``seed``,
    #: ``n_output``, ``n_fisher``)
    family_params: tuple[str, ...] = ()
    #: it reads queries, keys and values through the attention hook, so a model whose attention the hook cannot
    #: wrap is left out of it (the page says so, with ``label``)
    needs_hook: bool = False
    #: what the page calls it where a model is left out of it ("value-space"); its name when empty
    label: str = ""
    #: why it left parts of its work undone on some models, a sentence each, read off its results
    left_out: Callable[[list[ModelResult]], list[str]] | None = None


_ANALYSES: dict[str, Analysis] = {}


def register(spec: Analysis) -> Analysis:
    """Record ``spec`` under its name (its module calls this once, at import)."""
    _ANALYSES[spec.name] = spec
    return spec


def analyses() -> dict[str, Analysis]:
    """Every registered analysis, the package's analysis modules loaded (``sinkframes.analyses.load_all``)."""
    importlib.import_module("sinkframes.analyses").load_all()
    return dict(_ANALYSES)


def spec_of(name: str) -> Analysis:
    """The registered analysis ``name``; a clear error for a name no module registers."""
    found = _ANALYSES.get(name) or analyses().get(name)
    if found is None:
        raise ValueError(f"no analysis {name!r} is registered (known: {', '.join(sorted(_ANALYSES))})")
    return found


@dataclass
class ModelResult:
    """What one analysis found for one model on one sentence set (see the module docstring)."""

    analysis: str
    record: dict[str, Any]
    n_sentences: int
    layers: pd.DataFrame = field(default_factory=pd.DataFrame)  # one row per layer
    heads: dict[str, np.ndarray] = field(default_factory=dict)  # name -> [layer, head]
    samples: dict[str, np.ndarray] = field(default_factory=dict)  # name -> [sample, ...]
    data: dict[str, Any] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    from_cache: bool = False

    @property
    def ref(self) -> str:
        return str(self.record["ref"])

    @property
    def n_layers(self) -> int:
        return int(self.record["n_layers"])

    @property
    def family(self) -> str:
        return str(self.record["family"])

    @property
    def causal(self) -> bool:
        return bool(self.record["causal"])

    def tables(self, mode: Mode = "corrected") -> dict[str, pd.DataFrame]:
        """The analysis' named tables under ``mode`` (``"faithful"`` or ``"corrected"``)."""
        mode = check_mode(mode)
        spec = spec_of(self.analysis)
        if spec.tables is None:
            raise ValueError(f"analysis {self.analysis!r} registers no tables")
        return spec.tables(self, mode)


#: where a result keeps the same analysis of its model's random-initialized twin (``data[TWIN]``)
TWIN = "twin"


#: where a result keeps how to make the same analysis on each of two disjoint halves of its sentences
#: (``attach_halves``), and the halves once made
HALVES = "halves"
HALVES_MADE = "halves_made"


def split_halves(n: int) -> tuple[range, range]:
    """The sentence positions of two disjoint halves of ``n`` sentences, in draw order. A page's sentences are a
    seeded random draw, so each half is a random draw of half as many, independent of the other: the headline
    claims of the pages whose passes are too costly to run on a second draw are decided on both halves."""
    h = n // 2
    return range(0, h), range(h, n)


def attach_halves(result: ModelResult, make: Callable[[int], ModelResult]) -> ModelResult:
    """``result`` with ``make(k)`` (the same analysis on half ``k`` of its sentences, from the same passes) kept in
    ``result.data[HALVES]``, called only when a page asks for the halves (:func:`halves_of`)."""
    result.data[HALVES] = make
    return result


def halves_of(result: ModelResult) -> tuple[ModelResult, ModelResult]:
    """The two halves of ``result`` (made once), each with the twin's half on the same sentences as its twin."""
    made = result.data.get(HALVES_MADE)
    if made is None:
        make = result.data[HALVES]
        made = (make(0), make(1))
        twin = result.data.get(TWIN)
        if twin is not None and HALVES in twin.data:
            for half, twin_half in zip(made, halves_of(twin), strict=True):
                half.data[TWIN] = twin_half  # each half's null is the twin on the same sentences
        result.data[HALVES_MADE] = made
    return made


def halves(results: list[ModelResult]) -> tuple[Results, Results] | None:
    """The results on each half of the sentences (``attach_halves``), model by model; ``None`` unless every
    result can make them."""
    if not results or any(HALVES not in r.data for r in results):
        return None
    pairs = [halves_of(r) for r in results]
    return Results(p[0] for p in pairs), Results(p[1] for p in pairs)


def with_twin(result: ModelResult, run: Callable[[str], ModelResult]) -> ModelResult:
    """``result`` with ``run(twin ref)`` kept in ``result.data[TWIN]``: the same analysis, on the same texts and
    options, of the model's random-initialized twin (same architecture and configuration, random weights).

    The twin is the null of the depth and shape claims that can pass: a late-minus-early difference, a U
    shape or a middle peak that the architecture gives before any training shows up in the twin too. A
    result that is itself a twin gets none. A twin that fails (out of memory, say) is announced and leaves
    ``result`` as it was, without the twin: its verdicts then list that null as not run."""
    from .models.loading import RANDOM_PREFIX

    if result.ref.startswith(RANDOM_PREFIX):
        return result
    twin = f"{RANDOM_PREFIX}{result.ref}"
    try:
        result.data[TWIN] = run(twin)
    except Exception as exc:  # noqa: BLE001 - the trained model's result must survive its null's failure
        warnings.warn(f"`{twin}` failed in the {result.analysis} analysis ({type(exc).__name__}: {exc}); the "
                      f"verdicts of `{result.ref}` go without the random-initialized twin's null", RuntimeWarning,
                      stacklevel=2)
    return result


#: the key under which a page's output carries the failed models (read by the batch build)
FAILED_MODELS_KEY = "sinkframes/failed-models"


@dataclass(frozen=True)
class ModelFailure:
    """One model an analysis could not run: its reference and the error, as ``Type: message``."""

    ref: str
    analysis: str
    error: str

    def line(self) -> str:
        return f"`{self.ref}` failed in the {self.analysis} analysis and is left out: {self.error}"


class Results(list[ModelResult]):
    """The results of the models that ran, in order, with ``failures`` for those that did not."""

    def __init__(self, results: Iterable[ModelResult] = (), failures: Iterable[ModelFailure] = ()) -> None:
        super().__init__(results)
        self.failures: list[ModelFailure] = list(failures)


class AllModelsFailedError(RuntimeError):
    """Every model of an analysis failed: there is nothing to show."""


def announce(failure: ModelFailure) -> None:
    """Say that a model failed where the reader looks: as a marked output in a notebook (the batch
    build finds it by ``FAILED_MODELS_KEY``), as a warning elsewhere."""
    from .notebook import kernel_shell

    if kernel_shell() is not None:
        from IPython.display import Markdown, display

        display(Markdown(f"**Model failed.** {failure.line()}"),
                metadata={FAILED_MODELS_KEY: [failure.ref]})
    else:
        warnings.warn(failure.line(), RuntimeWarning, stacklevel=3)


def each_model(models: Iterable[str], run: Callable[[str], ModelResult], analysis: str) -> Results:
    """``run(ref)`` for each model, in order; a model that raises is announced and recorded, not fatal.

    Raises :class:`AllModelsFailedError` (with every model's error) when no model ran, and lets
    ``KeyboardInterrupt`` through.
    """
    out = Results()
    refs = list(models)
    last: Exception | None = None
    for ref in refs:
        try:
            out.append(run(ref))
        except Exception as exc:  # noqa: BLE001 - isolation: one model's failure must not lose the others
            last = exc
            failure = ModelFailure(ref, analysis, f"{type(exc).__name__}: {exc}".strip())
            out.failures.append(failure)
            announce(failure)
    if refs and not out:
        raise AllModelsFailedError(
            f"every model failed in the {analysis} analysis:\n" + "\n".join(f"- {f.line()}" for f in out.failures)
        ) from last
    return out
