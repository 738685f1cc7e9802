"""A Sphinx extension for the book's HTML build (listed in ``_config.yml``): each page loads each
script once, and MathJax only where there is math.

- sphinx-thebe and sphinx-togglebutton register their inline configuration scripts from build-time
  events that the Sphinx 7 HTML builder sees twice, so every page declared ``const THEBE_JS_URL``
  twice, and the second declaration was a console error. Repeated entries are dropped.
- Once one page has math, Sphinx keeps MathJax in the scripts of the pages written after it. A page
  whose document holds no math node loses the MathJax scripts.
"""

from __future__ import annotations

from typing import Any

from docutils import nodes


def _key(script: Any) -> tuple[str, str]:
    """What makes two script entries the same: their file name (``None`` and ``""`` alike) and inline body."""
    attrs = getattr(script, "attributes", {}) or {}
    return str(getattr(script, "filename", script) or ""), str(attrs.get("body", ""))


def _is_mathjax(script: Any) -> bool:
    name, body = _key(script)
    return "mathjax" in name.lower() or body.lstrip().startswith("window.MathJax")


def has_math(doctree: Any) -> bool:
    """Whether a page's document holds an inline or display formula."""
    if doctree is None:
        return False
    return next(iter(doctree.findall(lambda n: isinstance(n, (nodes.math, nodes.math_block)))), None) is not None


def page_scripts(scripts: list[Any], math: bool) -> list[Any]:
    """``scripts`` without repeats (the first of each kept), and without MathJax when ``math`` is false."""
    seen: set[tuple[str, str]] = set()
    kept = []
    for s in scripts:
        k = _key(s)
        if k in seen or (not math and _is_mathjax(s)):
            continue
        seen.add(k)
        kept.append(s)
    return kept


def _on_page(app: Any, pagename: str, templatename: str, context: dict[str, Any], doctree: Any) -> None:
    """``html-page-context`` handler: the page's scripts, cleaned by :func:`page_scripts`."""
    if context.get("script_files"):
        context["script_files"] = page_scripts(context["script_files"], has_math(doctree))


def setup(app: Any) -> dict[str, Any]:
    app.connect("html-page-context", _on_page, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
