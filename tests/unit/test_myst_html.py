"""The pages' MyST blocks as HTML for notebook front ends (``report.myst_html``), on known blocks."""

from __future__ import annotations

import yaml

from sinkframes.book.page import details_markdown
from sinkframes.report.myst_html import myst_to_html
from sinkframes.report.page_verdicts import result_box
from tests.conftest import ROOT


def test_a_dropdown_becomes_details_and_a_nested_tip_a_box_with_its_list_and_links():
    myst = details_markdown("How this page was made", "Models: **minilm**.\n\n:::{admonition} Inner\n:class: tip\n\n"
                            '- one <a href="#x"><code>3.1.centralized</code></a>\n:::')
    out = myst_to_html(myst)
    assert out.startswith("<details") and "<summary><strong>How this page was made</strong></summary>" in out
    assert '<div class="admonition tip"' in out
    assert '<li>one <a href="#x"><code>3.1.centralized</code></a></li>' in out
    assert "<strong>minilm</strong>" in out
    assert ":::" not in out and ":class:" not in out


def test_roles_become_text_and_directives_other_than_admonition_keep_their_title():
    out = myst_to_html("See {cite}`ruscio2025sinking` and {ref}`the table <tab-1>`.\n\n:::{warning}\nCareful.\n:::")
    assert "[ruscio2025sinking]" in out and "the table" in out and "{cite}" not in out
    assert '<div class="admonition warning"' in out and "<strong>Warning</strong>" in out and "<p>Careful.</p>" in out


def test_the_result_box_has_no_fence_in_its_html():
    out = myst_to_html(result_box([], "No claim here."))
    assert "What this page finds" in out and "No claim here." in out and ":::" not in out


def test_the_book_renders_the_myst_copy_before_the_html_one():
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert ["html", "text/markdown", 25] in config["sphinx"]["config"]["nb_mime_priority_overrides"]
