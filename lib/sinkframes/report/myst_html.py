"""The pages' MyST blocks as HTML, so that a page read outside the book shows them as the book does.

The result box, the folded blocks and the warnings of the pages are MyST Markdown (``:::{admonition}`` fences,
``:class: dropdown``, ``{cite}`` roles), which only jupyter-book renders: JupyterLab, Colab and GitHub show the
fences as text. :func:`display_myst` therefore publishes each block twice in one output, as ``text/markdown``
(MyST, which the book renders: ``nb_mime_priority_overrides`` in ``_config.yml`` puts it before HTML) and as
``text/html`` from :func:`myst_to_html` (admonitions as boxes, dropdowns as ``<details>``, roles as plain text),
which notebook front ends prefer to Markdown.
"""

from __future__ import annotations

import html
import re

__all__ = ["display_myst", "myst_to_html"]

_OPEN = re.compile(r"^(?P<colons>:{3,})\{(?P<kind>[a-z-]+)\}\s*(?P<title>.*)$")
_OPTION = re.compile(r"^:(?P<name>[a-z-]+):\s*(?P<value>.*)$")
_ROLE = re.compile(r"\{(?P<role>[a-z:]+)\}`(?P<text>[^`]*)`")
#: the colours of the book's theme for the admonition classes the pages use
_BORDER = {"tip": "#28a745", "warning": "#f0ad4e", "note": "#0d6efd", "dropdown": "#6c757d"}
_DEFAULT_TITLE = {"note": "Note", "warning": "Warning", "tip": "Tip"}


def _roles(text: str) -> str:
    """MyST roles as plain text: ``{cite}`key``` as ``[key]``, other roles (``{ref}``, ``{doc}``) as their text."""
    def plain(m: re.Match[str]) -> str:
        target = m.group("text")
        if m.group("role").startswith("cite"):
            return "[" + target + "]"
        return target.split("<")[0].strip() or target
    return _ROLE.sub(plain, text)


def _markdown(text: str) -> str:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": True}).enable("table").render(_roles(text))


def _block(kind: str, title: str, options: dict[str, str], body: str) -> str:
    classes = options.get("class", "").split()
    inner = myst_to_html(body)
    if kind != "admonition":  # {note}, {warning}, ...: the directive's name is its class and default title
        classes, title = [kind, *classes], title or _DEFAULT_TITLE.get(kind, kind.title())
    head = html.escape(title)
    if "dropdown" in classes:
        return (f'<details style="border-left: 4px solid {_BORDER["dropdown"]}; padding: 0.2em 0.8em; '
                f'margin: 0.5em 0"><summary><strong>{head}</strong></summary>{inner}</details>')
    colour = next((_BORDER[c] for c in classes if c in _BORDER), _BORDER["note"])
    return (f'<div class="admonition {" ".join(classes)}" style="border-left: 4px solid {colour}; '
            f'padding: 0.2em 0.8em; margin: 0.5em 0"><p><strong>{head}</strong></p>{inner}</div>')


def myst_to_html(myst: str) -> str:
    """HTML of ``myst``: colon-fenced directives (nested ones too) as boxes or ``<details>``, the rest as
    CommonMark with tables and inline HTML."""
    lines, out, text = myst.splitlines(), [], []
    i = 0
    while i < len(lines):
        m = _OPEN.match(lines[i])
        if m is None:
            text.append(lines[i])
            i += 1
            continue
        if text:
            out.append(_markdown("\n".join(text)))
            text = []
        close, options, body = m.group("colons"), {}, []
        i += 1
        while i < len(lines) and (o := _OPTION.match(lines[i])):
            options[o.group("name")] = o.group("value")
            i += 1
        while i < len(lines) and lines[i].strip() != close:
            body.append(lines[i])
            i += 1
        i += 1  # the closing fence
        out.append(_block(m.group("kind"), m.group("title").strip(), options, "\n".join(body).strip()))
    if text:
        out.append(_markdown("\n".join(text)))
    return "".join(out)


def display_myst(myst: str) -> None:
    """Display ``myst`` as one output holding its MyST (for the book) and its HTML (for notebook front ends)."""
    from IPython.display import display

    display({"text/markdown": myst, "text/html": myst_to_html(myst), "text/plain": _roles(myst)}, raw=True)
