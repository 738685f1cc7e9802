"""``page.setup(...)``: the one set-up call every template makes after its ``parameters`` cell.

It draws the page's sentences, gathers the run options into one ``RunOptions``, and shows the
provenance line (models, sentences, profile, versions) so every page states what produced it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import pandas as pd

from .. import corpus
from ..report.myst_html import display_myst
from ..report.provenance import provenance
from ..types import RunOptions
from .params import check_parameters

VERDICT_PREAMBLE = (
    "Each claim of the paper this page measures, from the claims registry (`sinkframes.paper.claims`); a claim's "
    "id links to its row of the scorecard. **reproduced?** applies the rule to the authors' computation (faithful "
    "mode), **holds?** to the corrected one. *ours* is the estimate with its interval (hover it for the kind of "
    "interval and the number of sentences), decided by the rule beside it; each *null* is the same computation on "
    "input without the structure the claim is about (uniform attention, a dense graph, the layers in random order, "
    "the random-initialized twin). A model that meets the claim is **supported** only where it also differs from "
    "every null in the claim's direction (the interval of model minus null excludes zero, or a permutation p-value "
    "of at most 0.05); where it cannot be told from some null it is **not diagnostic**; where its interval "
    "straddles the rule's threshold it is **inconclusive**."
)


@dataclass
class PageSetup:
    """What a page runs on: its profile, models, sentences and run options."""

    profile: str
    models: list[str]
    sentences: pd.DataFrame
    dataset: str
    seed: int
    opts: RunOptions
    page_id: str | None = None
    csv_path: str | None = None

    @property
    def texts(self) -> list[str]:
        return self.sentences["text"].tolist()

    def provenance(self) -> str:
        """The markdown provenance line of the page."""
        from ..rehearsal import provenance_note

        return (provenance(self.profile, self.models, len(self.sentences), self.dataset, self.seed, self.opts)
                + provenance_note())

    @property
    def inputs(self) -> dict[str, Any]:
        """What the page's verdicts were computed on, saved beside them."""
        return {"n_sentences": len(self.sentences), "dataset": self.dataset, "seed": self.seed}

    @functools.cached_property
    def second_texts(self) -> list[str]:
        """A second draw of as many sentences, disjoint from the page's (``corpus.disjoint_draw``): the headline
        claims a page decides are decided on both (:meth:`verdicts`' ``again``)."""
        return corpus.disjoint_draw(self.sentences, seed=self.seed, dataset=self.dataset,
                                    csv_path=self.csv_path)["text"].tolist()

    def verdicts(self, page_id: str, results: list[Any], show: bool = True, again: list[Any] | None = None,
                 halves: tuple[list[Any], list[Any]] | None = None) -> list[Any]:
        """Both verdicts of every registry claim the ``results`` test; saved for the scorecard
        (``verdicts.store``) and, with ``show``, shown as the verdict table (:meth:`verdict_table`). A page
        computes them where its results exist, shows :meth:`result_box` there and the table at its end.
        ``again``: the same analysis on :attr:`second_texts`; the headline claims are then decided on both draws
        (``verdicts.draws``). ``halves``: the results on the two disjoint halves of the page's sentences
        (``results.halves``), for pages too costly for a second draw: the headline claims are checked on
        both (``verdicts.draws.across_halves``)."""
        inputs = self.inputs if again is None else {**self.inputs, "second_draw_sentences": len(self.second_texts)}
        if halves is not None:
            inputs = {**inputs, "halves_sentences": [halves[0][0].n_sentences, halves[1][0].n_sentences]}
        return save_verdicts(page_id, self.profile, results, inputs, show, again, halves)

    def result_box(self, found: list[Any], empty: str = "", provenance: bool = False) -> None:
        """The box at the top of the page: what its verdicts ``found`` say, in at most three bullets
        (``report.page_verdicts.result_box``); ``empty`` is what it says when there are none. With ``provenance``,
        the folded provenance block follows it (a page that set up with ``show=False``, so that its finding comes
        before how it was made)."""
        show_result_box(found, empty)
        if provenance:
            show_details(PROVENANCE_TITLE, self.provenance())

    def myst(self, markdown: str) -> None:
        """Show a MyST block (an admonition) as the book renders it, in the book and in a notebook front end
        (``report.myst_html.display_myst``)."""
        display_myst(markdown)

    def details(self, title: str, markdown: str) -> None:
        """Show ``markdown`` folded under ``title`` (:func:`show_details`): material a reader opens on demand."""
        show_details(title, markdown)

    def figure(self, fig: Any, caption: str, takeaway: str = "") -> None:
        """Show ``fig`` with its numbered caption under it (``book.figure_caption``): ``caption`` says what
        is drawn, ``takeaway`` (one sentence, from a ``report`` function wherever it holds a number) what it shows."""
        show_figure(self.page_id, fig, caption, takeaway)

    def verdict_table(self, found: list[Any], untested: list[tuple[str, str]] | None = None) -> None:
        """The verdicts ``found`` as the page's verdict table, each claim linked to its row of the scorecard;
        ``untested``: ``(claim id, why)`` of claims the page lists without a verdict."""
        show_verdict_table(found, self.profile, untested or [])


def show_result_box(found: list[Any], empty: str = "") -> None:
    """Display the result box of ``found`` (a MyST admonition, with its HTML for notebook front ends: the cell
    that shows it renders its Markdown as MyST in the book, ``mystnb.markdown_format: myst`` in its metadata)."""
    from ..report.page_verdicts import NO_VERDICTS, result_box

    display_myst(result_box(found, empty or NO_VERDICTS))


#: the title of the folded block that holds a page's provenance line
PROVENANCE_TITLE = "How this page was made: versions, models, sentences"


def details_markdown(title: str, markdown: str) -> str:
    """``markdown`` in a folded MyST block (an admonition of class ``dropdown``) titled ``title``."""
    return "\n".join([f"::::{{admonition}} {title}", ":class: dropdown", "", markdown.strip(), "::::"])


def show_details(title: str, markdown: str) -> None:
    """Display :func:`details_markdown`: MyST in the book (the cell's ``mystnb.markdown_format`` is ``myst``), a
    ``<details>`` block in a notebook front end."""
    display_myst(details_markdown(title, markdown))


def show_figure(page_id: str | None, fig: Any, caption: str, takeaway: str = "") -> None:
    """:meth:`PageSetup.figure` for a page without a set-up (the controlled grid): figures of ``page_id``."""
    from .figure_caption import show

    show(fig, caption, takeaway, page_id)


def show_verdict_table(found: list[Any], profile: str, untested: list[tuple[str, str]]) -> None:
    """Display the preamble and the verdict table of ``found`` (links to the scorecard of ``profile``'s book)."""
    from IPython.display import HTML, Markdown, display

    from ..report.page_verdicts import NO_VERDICTS, scorecard_href, verdict_html

    if not found and not untested:
        display(Markdown(NO_VERDICTS))
        return
    from ..paper.rule_log import history_note

    display(Markdown(VERDICT_PREAMBLE + "\n\n" + history_note([v.claim for v in found] + [c for c, _ in untested])))
    display(HTML(verdict_html(found, scorecard_href(profile), untested)))


def save_verdicts(page_id: str, profile: str, results: list[Any], inputs: dict[str, Any], show: bool = True,
                  again: list[Any] | None = None, halves: tuple[list[Any], list[Any]] | None = None) -> list[Any]:
    """Both verdicts of every registry claim the ``results`` test (those comparing models once for the group),
    saved for the scorecard with the page's ``inputs`` (a page with no sentence set, such as the controlled grid,
    calls this directly). ``again``: the same analysis on a second, disjoint draw; the headline claims are then
    decided on both (``verdicts.draws.across_draws``); ``halves``: the results on two disjoint halves of the page's
    sentences, on which the headline claims are checked (``verdicts.draws.across_halves``)."""
    from .. import verdicts as v
    from ..verdicts.draws import across_draws, across_halves, headline_claims, headline_only

    def headline(found_on: list[Any]) -> list[Any]:
        return headline_only(v.evaluate(found_on, only=headline_claims())
                             + v.evaluate_comparisons(found_on, page=page_id))

    found = v.evaluate(results) + v.evaluate_comparisons(results, page=page_id)
    if again is not None:
        found = across_draws(found, headline(again))
    if halves is not None:
        found = across_halves(found, headline(halves[0]), headline(halves[1]))
    v.save(page_id, profile, found, models=v.model_records(results), inputs=inputs)
    if show:
        show_verdict_table(found, profile, [])
    return found


CUSTOM = "custom"
#: the page's parameters that ``setup`` is not given but checks with the others, read from the running notebook
CHECKED_FROM_THE_PAGE = ("bos_comparison",)
#: parameters whose value changes no result (``RunOptions.result_key`` leaves them out): editing them keeps the label
RESULT_NEUTRAL = frozenset({"profile", "device", "batch_size", "progress", "use_cache"})


def profile_label(profile: str, received: dict[str, Any], page_id: str | None = None) -> str:
    """``profile`` when the page ran with that profile's values (on the names both hold), else ``custom``:
    a reader edited the parameters, and the page must not claim a profile.

    With ``page_id`` the values are compared with that page's manifest entry only; without it, with any
    page's. A name the entry does not list is compared with the template's default (packaged in
    ``data/template_defaults.json``), unless it changes no result (:data:`RESULT_NEUTRAL`). The manifest is the
    checkout's, or the copy packaged with the library (an installed copy, as on Colab); with neither, or an unknown
    page, the profile name is kept as given.
    """
    from ..manifest import ManifestError, packaged_defaults, reader_manifest
    from ..rehearsal import capped

    m = reader_manifest()
    if m is None:
        return profile
    if page_id is not None:
        try:
            pages = [m.page(page_id)]
        except ManifestError:
            return profile
    else:
        pages = m.pages
    defaults = packaged_defaults()
    judged = False
    for page in pages:
        # names the entry does not list run with the template's default; those that change no result are left out
        unlisted = {k: v for k, v in defaults.get(page.id, {}).items() if k not in RESULT_NEUTRAL}
        expected = {**unlisted, **capped(page.parameters.get(profile, {}))}
        shared = [k for k in expected if k in received]
        if not shared:  # nothing in common to compare (a page without parameters, such as the scorecard)
            continue
        judged = True
        if all(received[k] == expected[k] for k in shared):
            return profile
    return CUSTOM if judged else profile


def notebook_parameters() -> dict[str, Any]:
    """The running notebook's variables (its parameters among them), when a kernel runs it; else empty.

    :func:`profile_label` compares only the names of the page's manifest entry, so the page's other
    parameters (``n_fisher``, ``bos_comparison``, ...) are judged as well as those given to :func:`setup`.
    """
    from ..notebook import kernel_shell

    shell = kernel_shell()
    if shell is None:
        return {}
    return {k: v for k, v in shell.user_ns.items() if not k.startswith("_")}


def setup(
    *,
    profile: str,
    models: list[str],
    n_sentences: int,
    dataset: str = "embedded",
    csv_path: str | None = None,
    seed: int = 0,
    selection: str = "balanced",
    show: bool = True,
    page_id: str | None = None,
    **run_options: Any,
) -> PageSetup:
    """Sentences, run options and provenance of a page.

    ``selection``: ``"balanced"`` (the book's seeded, field-balanced draw) or ``"official"`` (the
    topology notebook's sentence choice; needs the paper's CSV). ``run_options`` are
    ``RunOptions`` fields (``batch_size``, ``max_length``, ``bos_policy``, ``dtype``, ``device``, ...);
    an unknown name is an error that lists the valid ones. ``show`` displays the provenance line now (a page whose
    result box comes first passes ``False`` and shows it with the box, :meth:`PageSetup.result_box`).
    ``page_id`` (the manifest id of the calling page) makes the profile label compare the parameters with
    that page's entry only (see :func:`profile_label`).
    """
    in_page = notebook_parameters()
    edited = {k: v for k, v in in_page.items() if k in CHECKED_FROM_THE_PAGE}
    check_parameters(
        {
            **edited,
            "profile": profile,
            "models": models,
            "n_sentences": n_sentences,
            "dataset": dataset,
            "csv_path": csv_path,
            "seed": seed,
            "selection": selection,
            **run_options,
        }
    )
    opts = RunOptions.build(**run_options)
    received = {"models": list(models), "n_sentences": n_sentences, "dataset": dataset, "csv_path": csv_path,
                "seed": seed, "selection": selection, **run_options}
    received = {**in_page, **received}  # the page's other parameters (n_fisher, ...) count too
    if profile_label(profile, received, page_id) == CUSTOM:
        profile = f"{CUSTOM}"  # edited parameters: the provenance and saved verdicts say so
    from ..threads import configure

    configure()  # one thread count for torch and BLAS in this kernel (SINKFRAMES_THREADS overrides)
    from ..report.tables import install as table_style

    table_style()  # every DataFrame the page shows in the book's table style (report.tables)
    if selection == "balanced":
        sentences = corpus.sample_sentences(n_sentences, seed=seed, dataset=dataset, csv_path=csv_path)
    else:
        from ..analyses.topology import sentences as topology_sentences

        sentences = topology_sentences(n_sentences, seed=seed, dataset=dataset, csv_path=csv_path, selection=selection)
    page = PageSetup(profile=profile, models=list(models), sentences=sentences, dataset=dataset, seed=seed, opts=opts,
                     page_id=page_id, csv_path=csv_path)
    from .figure_caption import reset

    reset(page_id)  # a page run again in the same kernel numbers its figures from 1
    if show:
        show_details(PROVENANCE_TITLE, page.provenance())
    return page
