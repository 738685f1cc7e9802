"""The paper's figures and tables, each with the pages and verdict rows of this book that remake it.

Written from the claims registry alone: every claim names where the paper states it (``Claim.where``: "App. G,
Table 21") and the page that decides it (``Claim.page``); a family's claims are read again on its appendix page.
``python -m sinkframes_build toc --write`` writes the page (``book/reproduction.md``) and a test keeps it current, so a
claim added to the registry shows up here without an edit.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from pathlib import Path

from ..paper import CLAIMS, Claim
from .page_verdicts import claim_words
from .scorecard import claim_anchor

#: the page written from :func:`page_markdown`, relative to the book's root
PAGE = "book/reproduction.md"
#: the scorecard, whose row of every claim (``scorecard.claim_anchor``) holds its verdicts on each model that ran
SCORECARD = "00_scorecard.html"
#: a figure or table of the paper as the registry's ``where`` names it
_ITEM = re.compile(r"\b(Fig\.|Table) ?(\d+)")
#: the family appendix pages of the book, by the paper's appendix letter
_FAMILY_PAGE = {"E": "appendix_e_llama", "F": "appendix_f_qwen", "G": "appendix_g_gemma_mistral",
                "H": "appendix_h_encoders", "I": "appendix_i_phi", "J": "appendix_j_pythia"}


def items(claims: Iterable[Claim] = CLAIMS) -> dict[str, list[Claim]]:
    """``{"Figure 1": [claims], "Table 10": [...], ...}``: every figure and table of the paper the registry cites,
    figures first, each in the paper's numbering, with its claims in registry order."""
    found: dict[tuple[int, int], list[Claim]] = {}
    for c in claims:
        for kind, number in _ITEM.findall(c.where):
            found.setdefault((0 if kind == "Fig." else 1, int(number)), []).append(c)
    return {f"{'Figure' if k == 0 else 'Table'} {n}": found[(k, n)] for k, n in sorted(found)}


def _titles() -> dict[str, tuple[str, str]]:
    """``{page id: (html file relative to book/, title)}`` of the manifest's pages."""
    from ..manifest import load_manifest

    return {p.id: (Path(p.output).with_suffix(".html").name, p.title) for p in load_manifest().pages}


def _link(href: str, text: str) -> str:
    return f'<a href="{html.escape(href)}">{html.escape(text)}</a>'


def _where(claim: Claim, titles: dict[str, tuple[str, str]]) -> str:
    """The page that decides ``claim`` with the claim's row of the scorecard, and the family appendix that reads
    it again."""
    if not claim.page:
        return f"not tested here: {html.escape(claim.untestable)}"
    target, title = titles[claim.page]
    parts = [_link(target, f"{title.split('.')[0]}. {_short_title(title)}")
             + f" ({_link(f'{SCORECARD}#{claim_anchor(claim.id)}', 'its verdicts')})"]
    family = _FAMILY_PAGE.get(claim.section.split(".")[0])
    if family and family != claim.page and family in titles:
        parts.append(_link(titles[family][0], f"Appendix {titles[family][1]}"))
    return "; read again in ".join(parts)


def _short_title(title: str) -> str:
    """A page title without its chapter number and subtitle ("Topology of attention")."""
    return title.split(". ", 1)[-1].split(":")[0]


def page_markdown() -> str:
    """The reproduction map page: one row per claim of each figure and table of the paper."""
    titles = _titles()
    rows = []
    for item, claims in items().items():
        for k, c in enumerate(claims):
            rows.append("<tr>" + (f'<td rowspan="{len(claims)}">{item}</td>' if k == 0 else "")
                        + f"<td>{html.escape(claim_words(c.id))}: <em>{html.escape(c.printed)}</em></td>"
                        + f"<td>{_where(c, titles)}</td></tr>")
    n_items, n_claims = len(items()), sum(len(v) for v in items().values())
    return "\n".join([
        "# Where each figure and table of the paper is remade",
        "",
        "<!-- Generated from the claims registry by `python -m sinkframes_build toc --write`; do not edit. -->",
        "",
        f"The paper's {n_items} figures and tables that state a claim this book tests ({n_claims} claims), each "
        "claim with the page that remakes it (its figures and, at its end, its verdict table: our estimate, the rule, "
        "the nulls and both verdicts), the claim's row of the scorecard (its verdict on every model that ran, or "
        "why none did: a family with no offline model is decided where the colab or paper profile runs one), and "
        "the family's appendix page, which reads the claim again. The scorecard holds every claim, including those "
        "the paper states in its text only.",
        "",
        "<table>",
        "<thead><tr><th>paper</th><th>claim (what the paper reports)</th><th>remade on</th></tr></thead>",
        "<tbody>",
        *rows,
        "</tbody>",
        "</table>",
        "",
    ])
