"""The built book as a reader's browser shows it: headless Chromium, no network, one check per page.

:func:`check_site` opens every HTML page of a built site (``_build/html``) in headless Chromium with
every host name unresolvable (the book must read offline), saves a screenshot of each, and lists
what a reader would meet:

- an image that does not load, or has no alt text;
- a local link, or its ``#anchor``, that does not resolve (read from the HTML files);
- a console error (a failed script, a missing resource);
- raw TeX in the rendered text (``\\(`` or ``$$``: MathJax did not run);
- a table, image or figure wider than the content column (or than the cell output holding it), or an
  image scaled down to fit it (its labels, drawn at 9 pt or more, would shrink below that);
- an error output, a traceback or a stderr stream;
- a Python dict (``{'low': 0.1, ...}``), a float with nine or more decimals, an object's repr, ``None`` or
  ``nan -> nan`` printed as a value (``(None sentences)``) or a MyST fence (``:::{admonition}``, a block the book did
  not render) in the rendered text;
- a word broken across two lines inside a table cell (a break inside a run of letters and digits);
- a figure in a cell's output with no numbered caption (``Figure 1.3.``, ``book.figure_caption``) after it
  in the same cell;
- on a section or family page (:func:`is_section_page`): no result box (the ``What this page finds``
  admonition), or a first figure more than :data:`FIRST_FIGURE_PX` from the top of the page.

It needs the ``chromium`` and ``chromium-driver`` packages (Debian) and Selenium.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urldefrag, urlparse

from sinkframes.report.page_verdicts import BOX_TITLE

#: the window a reader has: a laptop screen
WINDOW = (1280, 1000)
#: the content column of sphinx-book-theme (the article, without the side bars)
COLUMN_SELECTOR = "article.bd-article"
#: a table or figure may pass the column's width by this many pixels (sub-pixel rounding)
WIDTH_SLACK_PX = 2
#: an image shown below this share of its own size has labels smaller than drawn (figures are drawn at
#: 96 dpi with labels of at least 9 pt: see ``figures.style``)
MIN_IMAGE_SCALE_PCT = 97
#: a section page shows its first figure within this many pixels of the page's top
FIRST_FIGURE_PX = 2500
#: the first screen the scorecard's answer must fit (a laptop's browser window), and how far below the title its
#: box may start (the heading's and the box's margins: nothing else between them)
ANSWER_SCREEN = (1280, 900)
ANSWER_AFTER_TITLE_PX = 80
#: the code toggles a section page may show before its result box (the analysis cell that computes it)
TOGGLES_BEFORE_BOX = 1

# every value the page check returns, measured in the page after MathJax (if any) has finished
_PAGE_SCRIPT = """
const done = arguments[arguments.length - 1];
const measure = () => {
  const column = document.querySelector(arguments[0]) || document.body;
  const width = column.clientWidth;
  const name = (el) => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') +
    ' "' + (el.innerText || el.getAttribute('alt') || el.getAttribute('src') || '').trim().slice(0, 50) + '"';
  const broken = [...document.images].filter((im) => !(im.complete && im.naturalWidth > 0))
    .map((im) => im.getAttribute('src'));
  const no_alt = [...column.querySelectorAll('img')].filter((im) => !(im.getAttribute('alt') || '').trim())
    .map((im) => im.getAttribute('src'));
  const shrunk = [...column.querySelectorAll('img')]
    .filter((im) => im.offsetParent !== null && im.naturalWidth > 0)
    .map((im) => [name(im), Math.round(100 * im.getBoundingClientRect().width / im.naturalWidth)])
    .filter(([, pct]) => pct < arguments[2]);
  const wide = [...column.querySelectorAll('table, img, figure, svg.figure, .cell_output img')]
    .filter((el) => el.offsetParent !== null)
    .map((el) => [name(el), Math.round(Math.max(el.scrollWidth, el.getBoundingClientRect().width)),
                  (el.closest('.cell_output') || column).clientWidth])
    .filter(([, w, room]) => w > room + arguments[1]);
  const text = column.innerText;
  const tex = ['\\\\(', '\\\\[', '$$'].filter((t) => text.includes(t));
  const errors = [...column.querySelectorAll('.output.traceback, .output.stderr, .output.error, .output_error')]
    .map((el) => el.innerText.trim().slice(0, 120));
  if (text.includes('Traceback (most recent call last)')) errors.push('a traceback in the text');
  const raw = [];
  for (const rx of [/\\{\\s*['"][^'"\\n]{1,40}['"]\\s*:/g, /(?<![\\w.])-?\\d+\\.\\d{9,}(?!\\d)/g,
                    /<[A-Za-z_][\\w.]* object(?: at 0x[0-9a-f]+)?>/g, /\\bnan -> nan\\b|\\(None [a-z]+\\)/g,
                    /:::\\{[a-z-]+\\}/g]) {
    for (const m of text.matchAll(rx)) raw.push(text.slice(Math.max(0, m.index - 30), m.index + m[0].length + 30));
  }
  // a word broken across lines: a run of letters and digits whose rectangles lie on two lines
  const split_words = [];
  for (const cell of column.querySelectorAll('td, th')) {
    if (cell.offsetParent === null || cell.getClientRects().length === 0) continue;
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const m of node.data.matchAll(/[\\p{L}\\p{N}]{2,}/gu)) {
        const range = document.createRange();
        range.setStart(node, m.index);
        range.setEnd(node, m.index + m[0].length);
        const tops = new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top)));
        if (tops.size > 1) split_words.push(m[0]);
      }
    }
  }
  const caption = /^Figure [0-9A-Z]+(\\.[0-9]+)?\\./;
  const outputs_images = [...column.querySelectorAll('.cell_output img')].filter((im) => im.offsetParent !== null);
  const uncaptioned = outputs_images.filter((im) => {
    const cell = im.closest('.cell') || im.closest('.cell_output');
    return ![...cell.querySelectorAll('strong')].some((s) => caption.test(s.innerText.trim()) &&
      (im.compareDocumentPosition(s) & Node.DOCUMENT_POSITION_FOLLOWING));
  }).map((im) => name(im));
  const first_figure = outputs_images.length ?
    Math.round(outputs_images[0].getBoundingClientRect().top + window.scrollY) : null;
  const boxes = [...column.querySelectorAll('.admonition-title')].map((el) => el.innerText.trim());
  // the page's opening: its title, its first box (the answer or the result box), and the code toggles before it
  const h1 = column.querySelector('h1');
  // the first admonition that is a box (myst-nb draws code toggles as details with the class admonition too)
  const box = [...column.querySelectorAll('.admonition')].find((el) => el.tagName.toLowerCase() !== 'details');
  const page_y = (el, side) => Math.round(el.getBoundingClientRect()[side] + window.scrollY);
  const toggles_before = box ? [...column.querySelectorAll('details.hide, details.toggle-details')]
    .filter((el) => el.offsetParent !== null && (el.compareDocumentPosition(box) & Node.DOCUMENT_POSITION_FOLLOWING))
    .length : 0;
  const opening = box ? {title: (box.querySelector('.admonition-title') || box).innerText.trim().slice(0, 80),
                         top: page_y(box, 'top'), bottom: page_y(box, 'bottom'),
                         after_title: h1 ? page_y(box, 'top') - page_y(h1, 'bottom') : null,
                         toggles_before: toggles_before} : null;
  done({width: width, broken: broken, no_alt: no_alt, wide: wide, shrunk: shrunk, tex: tex, errors: errors,
        raw: raw, split_words: split_words, uncaptioned: uncaptioned, first_figure: first_figure, boxes: boxes,
        opening: opening});
};
const start = () => {
  if (document.readyState !== 'complete' || !document.body) {
    setTimeout(start, 50);  // the page is still loading: measure it once it is whole
  } else if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    MathJax.startup.promise.then(measure, measure);
  } else {
    measure();
  }
};
start();
"""


class BrowserUnavailableError(RuntimeError):
    """Chromium, its driver or Selenium is missing."""


@dataclass
class PageReport:
    """What the browser found on one page (empty ``problems``: clean)."""

    page: str
    problems: list[str] = field(default_factory=list)
    screenshot: Path | None = None


def chromium_driver(window: tuple[int, int] = WINDOW) -> Any:
    """Headless Chromium under Selenium, with every host name unresolvable and console logging on."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError as exc:
        raise BrowserUnavailableError("Selenium is not installed: pip install selenium") from exc
    binary = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    driver_path = shutil.which("chromedriver")
    if not binary or not driver_path:
        raise BrowserUnavailableError("no Chromium or chromedriver on PATH: apt-get install chromium chromium-driver")
    opts = webdriver.ChromeOptions()
    opts.binary_location = binary
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                f"--window-size={window[0]},{window[1]}", "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost",
                "--allow-file-access-from-files", "--hide-scrollbars"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(driver_path), options=opts)


class _Links(HTMLParser):
    """The ``href``/``src`` values and the ``id``/``name`` anchors of one HTML file."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.anchors: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("id"):  # any element's id is an anchor; so is an <a>'s name
            self.anchors.add(str(a["id"]))
        if tag == "a" and a.get("name"):
            self.anchors.add(str(a["name"]))
        if tag == "a" and a.get("href"):
            self.links.append(str(a["href"]))


def _parse(path: Path) -> _Links:
    p = _Links()
    p.feed(path.read_text(errors="replace"))
    return p


def link_problems(site: Path, page: Path, cache: dict[Path, _Links] | None = None) -> list[str]:
    """The local links of ``page`` whose file or ``#anchor`` does not exist in the built ``site``."""
    cache = {} if cache is None else cache
    parsed = cache.setdefault(page, _parse(page))
    problems = []
    for href in parsed.links:
        url = urlparse(href)
        if url.scheme or href.startswith("//") or href.startswith("mailto:"):
            continue  # another host: not part of the offline book (blocked in the browser)
        path_part, anchor = urldefrag(href)
        target = (page.parent / unquote(path_part)).resolve() if path_part else page
        if target.is_dir():
            target = target / "index.html"
        if not target.is_file() or not target.resolve().is_relative_to(site.resolve()):
            problems.append(f"broken link {href!r}")
            continue
        if anchor and target.suffix == ".html":
            anchors = cache.setdefault(target, _parse(target)).anchors
            if unquote(anchor) not in anchors:
                problems.append(f"broken anchor {href!r}")
    return problems


def check_page(driver: Any, site: Path, page: Path, screenshots: Path | None = None,
               link_cache: dict[Path, _Links] | None = None, section: bool | None = None) -> PageReport:
    """Open ``page`` of the built ``site`` and list its problems (see the module docstring); ``section``:
    whether it is a section or family page (by default :func:`is_section_page` of its path)."""
    rel = str(page.relative_to(site))
    report = PageReport(rel)
    driver.get_log("browser")  # drop what earlier pages logged
    driver.get(page.resolve().as_uri())
    driver.set_script_timeout(60)
    found = driver.execute_async_script(_PAGE_SCRIPT, COLUMN_SELECTOR, WIDTH_SLACK_PX, MIN_IMAGE_SCALE_PCT)
    report.problems += [f"image does not load: {src}" for src in found["broken"]]
    report.problems += [f"image without alt text: {str(src)[:80]}" for src in found["no_alt"]]
    report.problems += [f"{what} is {w} px wide, the room for it {room} px" for what, w, room in found["wide"]]
    report.problems += [f"{what} is shown at {pct} % of its size (its labels shrink with it)"
                        for what, pct in found["shrunk"]]
    report.problems += [f"raw TeX in the rendered text ({t!r})" for t in found["tex"]]
    report.problems += [f"error output: {e}" for e in found["errors"]]
    report.problems += [f"console error: {e['message'][:300]}" for e in driver.get_log("browser")
                        if e.get("level") == "SEVERE"]
    report.problems += [f"a raw Python value in the text: {excerpt!r}" for excerpt in found["raw"]]
    if found["split_words"]:
        words = sorted(set(found["split_words"]))
        report.problems.append(f"{len(found['split_words'])} word(s) broken across lines in a table cell: "
                               + ", ".join(words[:12]))
    report.problems += [f"a figure without a numbered caption after it: {what}" for what in found["uncaptioned"]]
    if is_section_page(rel) if section is None else section:
        if BOX_TITLE not in found["boxes"]:
            report.problems.append(f"no result box ({BOX_TITLE!r})")
        opening = found["opening"]
        if opening and opening["title"] == BOX_TITLE and opening["toggles_before"] > TOGGLES_BEFORE_BOX:
            report.problems.append(f"{opening['toggles_before']} code toggles before the result box (at most "
                                   f"{TOGGLES_BEFORE_BOX}: the page's set-up code belongs out of the reader's way)")
        if found["first_figure"] is not None and found["first_figure"] > FIRST_FIGURE_PX:
            report.problems.append(f"the first figure is {found['first_figure']} px from the top "
                                   f"(at most {FIRST_FIGURE_PX})")
    report.problems += link_problems(site, page, link_cache)
    if is_scorecard(rel):
        report.problems += answer_problems(driver)
    if screenshots is not None:
        shot = screenshots / (rel.replace("/", "__").removesuffix(".html") + ".png")
        shot.parent.mkdir(parents=True, exist_ok=True)
        height = driver.execute_script("return document.documentElement.scrollHeight")
        driver.set_window_size(WINDOW[0], min(int(height), 16000))
        driver.save_screenshot(str(shot))
        driver.set_window_size(*WINDOW)
        report.screenshot = shot
    return report


def answer_problems(driver: Any) -> list[str]:
    """What keeps the scorecard's answer (``report.answer.admonition``) from being the first thing a reader sees:
    measured in a window of :data:`ANSWER_SCREEN` on the page the driver shows, the answer must be the page's first
    box, start right under the title (:data:`ANSWER_AFTER_TITLE_PX`) with no code toggle before it, and end inside
    the first screen. Its links are checked with the page's others (:func:`link_problems`)."""
    from sinkframes.report.answer import ANSWER_TITLE

    driver.set_window_size(*ANSWER_SCREEN)
    try:
        driver.execute_script("window.scrollTo(0, 0)")
        found = driver.execute_async_script(_PAGE_SCRIPT, COLUMN_SELECTOR, WIDTH_SLACK_PX, MIN_IMAGE_SCALE_PCT)
    finally:
        driver.set_window_size(*WINDOW)
    opening = found["opening"]
    if not opening or opening["title"] != ANSWER_TITLE:
        return [f"the scorecard's first box is not the answer ({ANSWER_TITLE!r})"]
    problems = []
    if opening["toggles_before"]:
        problems.append(f"{opening['toggles_before']} code toggles before the answer")
    if opening["after_title"] is not None and opening["after_title"] > ANSWER_AFTER_TITLE_PX:
        problems.append(f"the answer starts {opening['after_title']} px below the title (at most "
                        f"{ANSWER_AFTER_TITLE_PX}: something stands between them)")
    if opening["bottom"] > ANSWER_SCREEN[1]:
        problems.append(f"the answer ends {opening['bottom']} px from the top, below the first screen "
                        f"({ANSWER_SCREEN[0]} x {ANSWER_SCREEN[1]})")
    return problems


def is_scorecard(rel: str) -> bool:
    """Whether the page at ``rel`` is a scorecard (``book/00_scorecard.html``, or a larger profile's)."""
    return re.fullmatch(r"book/(?:[\w-]+/)?00_scorecard\.html", rel) is not None


def is_section_page(rel: str) -> bool:
    """Whether the page at ``rel`` (relative to the site) is a section or family page of a book
    (``book/01_reference_frames.html``, ``book/large/appendix_f_qwen.html``): one that opens with a result box."""
    return re.fullmatch(r"book/(?:[\w-]+/)?(?:0[1-9]\w*|appendix_\w+)\.html", rel) is not None


def site_pages(site: Path) -> list[Path]:
    """Every HTML page of the built site a reader can open (not the copied sources or static files)."""
    return sorted(p for p in site.rglob("*.html") if not p.relative_to(site).parts[0].startswith("_"))


def check_site(site: Path, screenshots: Path | None = None, pages: list[Path] | None = None) -> list[PageReport]:
    """:func:`check_page` on every page of ``site`` (or ``pages``), in one browser."""
    driver = chromium_driver()
    cache: dict[Path, _Links] = {}
    try:
        return [check_page(driver, site, p, screenshots, cache) for p in (pages or site_pages(site))]
    finally:
        driver.quit()
