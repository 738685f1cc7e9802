"""The built book in headless Chromium with every other host blocked (sinkframes_build.browser).

Every page must load its images, resolve its local links and anchors, log no console error, render
every formula (no raw TeX), keep tables and figures within the text column, and show no error
output. Screenshots of every page go to ``_build/screenshots/``. Each kind of problem is also shown
to be caught, on a deliberately broken copy of a page.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from sinkframes.report.page_verdicts import BOX_TITLE
from sinkframes_build import browser
from tests.conftest import ROOT

SCREENSHOTS = ROOT / "_build" / "screenshots"
BROKEN = "broken-"


@pytest.fixture(scope="module")
def driver():
    d = browser.chromium_driver()  # a missing Chromium is an error that names the packages, never a skip
    yield d
    d.quit()


@pytest.mark.slow
def test_every_page_reads_well_in_a_browser(built_html, driver):
    pages = [p for p in browser.site_pages(built_html) if not p.name.startswith(BROKEN)]
    assert len(pages) >= 16 and any(p.name == "02_softmax_geometry.html" for p in pages)
    shutil.rmtree(SCREENSHOTS, ignore_errors=True)
    cache: dict = {}
    reports = [browser.check_page(driver, built_html, p, SCREENSHOTS, cache) for p in pages]
    problems = [f"{r.page}: {p}" for r in reports for p in r.problems]
    assert not problems, "\n".join(problems)
    assert all(r.screenshot and r.screenshot.stat().st_size > 10_000 for r in reports)


def _broken_copy(site: Path, source: str, name: str, edit) -> Path:
    """A copy of ``source`` beside it (so its relative links and assets still resolve), edited."""
    src = site / "book" / source
    target = src.with_name(f"{BROKEN}{name}.html")
    target.write_text(edit(src.read_text()))
    return target


def _insert(html: str, snippet: str) -> str:
    """``snippet`` at the top of the page's article."""
    return re.sub(r'(<article class="bd-article"[^>]*>)', lambda m: m.group(1) + snippet, html, count=1)


CASES = {
    "image": ('<img src="no-such-figure.png" alt="missing">', "image does not load"),
    "alt": ('<img src="../_static/mathjax/../../_static/no-alt.png">', "without alt text"),
    "table": ("<table><tr>" + "<td>a_rather_long_column_value</td>" * 40 + "</tr></table>", "px wide"),
    "figure": ('<img src="data:image/svg+xml;utf8,<svg xmlns=\'http://www.w3.org/2000/svg\' width=\'1800\' '
               "height='40'><rect width='1800' height='40' fill='red'/></svg>\" alt=\"a wide figure\">",
               "% of its size"),
    "script": ("<script>undefinedFunctionOfTheBook();</script>", "console error"),
    "link": ('<a href="no-such-page.html">a page</a> <a href="intro.html#no-such-anchor">an anchor</a>',
             "broken link"),
    "dict": ("<p>within {'low': 0.366, 'high': 0.654}</p>", "raw Python value"),
    "float": ("<p>a share of 0.7899999999999999</p>", "raw Python value"),
    "repr": ("<p>&lt;IPython.core.display.Markdown object&gt;</p>", "raw Python value"),
    "nan span": ("<p>1.89 -&gt; 2.62 and nan -&gt; nan</p>", "raw Python value"),
    "myst": ("<p>:::{admonition} The answer :class: tip</p>", "raw Python value"),
    "none": ("<p>Models: qwen05 (None sentences)</p>", "raw Python value"),
    "split word": ('<table><tr><td style="max-width:40px;overflow-wrap:anywhere">centralization</td></tr></table>',
                   "broken across lines in a table cell"),
    "caption": ('<div class="cell"><div class="cell_output"><img alt="an uncaptioned figure" src="data:image/svg+xml;'
                "utf8,<svg xmlns='http://www.w3.org/2000/svg' width='200' height='40'/>\"></div></div>",
                "without a numbered caption"),
    "traceback": ('<div class="cell_output"><div class="output traceback"><pre>Traceback (most recent call last)'
                  "</pre></div></div>", "error output"),
}


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(CASES))
def test_each_problem_is_caught(built_html, driver, kind):
    snippet, expected = CASES[kind]
    page = _broken_copy(built_html, "intro.html", kind, lambda h: _insert(h, snippet))
    report = browser.check_page(driver, built_html, page)
    assert any(expected in p for p in report.problems), report.problems
    if kind == "link":
        assert any("broken anchor" in p for p in report.problems)


@pytest.mark.slow
def test_a_section_page_without_its_result_box_or_with_a_late_figure_is_caught(built_html, driver):
    page = "02_softmax_geometry.html"
    clean = browser.check_page(driver, built_html, built_html / "book" / page)
    assert browser.is_section_page(clean.page) and not clean.problems, clean.problems

    def without_box(html: str) -> str:
        return html.replace(f">{BOX_TITLE}<", ">Something else<")

    report = browser.check_page(driver, built_html, _broken_copy(built_html, page, "box", without_box), section=True)
    assert any("no result box" in p for p in report.problems), report.problems
    pushed = _broken_copy(built_html, page, "late", lambda h: _insert(h, '<div style="height:3000px"></div>'))
    report = browser.check_page(driver, built_html, pushed, section=True)
    assert any("first figure is" in p for p in report.problems), report.problems
    as_other = browser.check_page(driver, built_html, pushed, section=False)
    assert not any("first figure is" in p for p in as_other.problems)


@pytest.mark.slow
def test_raw_tex_is_caught_when_mathjax_does_not_run(built_html, driver):
    clean = browser.check_page(driver, built_html, built_html / "book" / "02_softmax_geometry.html")
    assert not [p for p in clean.problems if "TeX" in p]

    def without_mathjax(html: str) -> str:
        return re.sub(r'<script[^>]*src="[^"]*mathjax[^"]*"[^>]*></script>', "", html)

    page = _broken_copy(built_html, "02_softmax_geometry.html", "tex", without_mathjax)
    report = browser.check_page(driver, built_html, page)
    assert any("raw TeX" in p for p in report.problems), report.problems


@pytest.mark.slow
def test_the_scorecard_opens_with_its_answer_and_anything_before_it_is_caught(built_html, driver):
    page = built_html / "book" / "00_scorecard.html"
    assert browser.is_scorecard("book/00_scorecard.html") and not browser.is_section_page("book/00_scorecard.html")
    assert browser.answer_problems(_opened(driver, page)) == []
    pushed = _broken_copy(built_html, "00_scorecard.html", "answer",
                          lambda h: re.sub(r'(title="Link to this heading">#</a></h1>)',
                                           r'\1<div style="height:700px">provenance</div>', h, count=1))
    found = browser.answer_problems(_opened(driver, pushed))
    assert any("below the title" in p for p in found) and any("below the first screen" in p for p in found), found
    no_answer = _broken_copy(built_html, "00_scorecard.html", "no-answer",
                             lambda h: h.replace(">The answer, from the verdicts below<", ">Something else<"))
    assert browser.answer_problems(_opened(driver, no_answer)) == [
        "the scorecard's first box is not the answer ('The answer, from the verdicts below')"]


def _opened(driver, page: Path):
    driver.get(page.resolve().as_uri())
    return driver


@pytest.mark.slow
def test_setup_code_before_a_result_box_is_caught(built_html, driver):
    toggle = '<details class="hide above-input"><summary>Show code cell source</summary><pre>x = 1</pre></details>'
    pushed = _broken_copy(built_html, "02_softmax_geometry.html", "toggles", lambda h: _insert(h, toggle * 2))
    report = browser.check_page(driver, built_html, pushed, section=True)
    assert any("code toggles before the result box" in p for p in report.problems), report.problems
