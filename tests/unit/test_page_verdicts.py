"""A page's result box and verdict table, written from a small synthetic verdict list with known answers."""

from __future__ import annotations

import math
import re

import pytest

from sinkframes import verdicts as V
from sinkframes.paper import CLAIMS, CLAIMS_BY_ID
from sinkframes.report import family
from sinkframes.report import page_verdicts as pv
from sinkframes.report.tables import breakable

E = V.Estimate
BOOT = "95 % bootstrap over sentences"
UNIFORM_ZERO = {"name": "uniform attention", "estimate": {"value": 1e-17, "low": -2e-17, "high": 3e-17},
                "status": V.NOT_SUPPORTED}
TOLERANCE = ("hangs on the tolerance (+-5 percentage points: another member of the family than the paper's model): "
             "against the printed value alone it is not supported")


def _found() -> list[V.Verdict]:
    """1.bos_share refuted on both models by the corrected computation and reproduced on one; 5.4.entropy supported
    on one model and not diagnostic on the other."""
    return [
        V.Verdict("1.bos_share", "a", "reproduced", V.SUPPORTED, E(0.35, 0.31, 0.39, n=8, interval=BOOT),
                  reason=TOLERANCE),
        V.Verdict("1.bos_share", "a", "holds", V.NOT_SUPPORTED, E(0.53, 0.52, 0.54, n=8, interval=BOOT),
                  extra={"nulls": [UNIFORM_ZERO]}),
        V.Verdict("1.bos_share", "b", "holds", V.NOT_SUPPORTED, E(0.61, 0.6, 0.62)),
        V.Verdict("5.4.entropy", "a", "holds", V.SUPPORTED, E(-0.2, -0.3, -0.1)),
        V.Verdict("5.4.entropy", "b", "holds", V.NOT_DIAGNOSTIC, E(-0.2, -0.3, -0.1),
                  reason="the null (uniform attention) meets the claim too"),
    ]


def _link(cid: str) -> str:
    c = CLAIMS_BY_ID[cid]
    return f'<a href="#{pv.claim_anchor(cid)}" title="claim {cid}">{c.quantity} ({pv.SUBJECT_WORDS[c.subject]})</a>'


def test_the_box_names_a_claim_in_words_with_its_id_in_the_title():
    link = pv.claim_link("1.bos_share")
    assert ">share of attention on the beginning-of-sequence token (all models)</a>" in link
    assert 'title="claim 1.bos_share"' in link and "<code>" not in link
    assert pv.claim_words("no.such_claim") == "no.such_claim"
    assert pv.claim_words("3.1.centralized") == "frame type (centralized models)"


def test_every_registry_subject_has_words():
    assert {c.subject for c in CLAIMS} <= set(pv.SUBJECT_WORDS)


def test_numbers_print_round_off_as_zero_and_non_finite_values_as_words():
    assert pv.number_text(1e-17) == "0" and pv.number_text(-3e-12) == "0"
    assert pv.number_text(math.inf) == "infinity" and pv.number_text(-math.inf) == "minus infinity"
    assert pv.number_text(math.nan) == "not computable" and pv.number_text(None) == "not computable"
    nan = V.Estimate(math.nan, math.nan, math.nan)
    assert pv.estimate_text(nan) == "not computable" and nan.text() == "not computable"
    assert pv.estimate_text(V.Estimate(0.5, math.nan, 0.7)) == "0.5 (interval not computable)"
    assert pv.number_text(0.53214) == "0.532" and pv.number_text(12345.6) == "12346"
    assert pv.estimate_text(E(1e-17, -2e-17, 3e-17)) == "0"
    assert pv.estimate_text(E(0.5, 0.4, math.inf)) == "0.5 [0.4, infinity]"
    assert pv.estimate_text(E("centralized")) == "centralized"
    assert pv.estimate_text(E(0.0, undetermined=True, detail="too few layers")) == "undetermined (too few layers)"
    assert pv.parts_text(E(0.1, parts=[["early", 0.1, 0.0, 0.2], ["late", -0.1, -0.2, 0.0]])) == (
        "early: 0.1 [0, 0.2]; late: -0.1 [-0.2, 0]")


def test_rule_parameters_print_at_the_precision_they_were_written_with():
    assert pv.param_text(0.7899999999999999) == "0.79" and pv.param_text(1.6800000000000002) == "1.68"
    assert pv.param_text(0.9006) == "0.9006" and pv.param_text(5) == "5" and pv.param_text(-0.0) == "0"
    assert pv.param_text(0.050000001) == "0.05" and pv.param_text(-math.inf) == "minus infinity"


@pytest.mark.parametrize(("rule", "params", "text"), [
    ("within", {"low": 0.91, "high": 1.0100000000000002}, "within [0.91, 1.01]"),
    ("above", {"threshold": 0.5}, "above 0.5"),
    ("below", {"threshold": 0.0}, "below 0"),
    ("at_least", {"share": 0.9099999999999999}, "at least 0.91"),
    ("equals", {"expected": "middle"}, "equals middle"),
    ("flip_within", {"low": 0.1, "high": 0.2}, "sign change between thresholds within [0.1, 0.2]"),
    ("every_below", {"threshold": 0.0}, "below 0 in every part"),
    ("every_above", {"threshold": 1.0, "at": ["0.1", "0.2"]}, "above 1 in each of 0.1, 0.2"),
    ("every_within", {"low": 0.765, "high": 0.895}, "within [0.765, 0.895] in every part"),
    ("each_within", {"ranges": {"early": [0.0, math.inf], "middle": [-math.inf, 0.0], "late": [0.1, 0.2]}},
     "early at least 0; middle at most 0; late within [0.1, 0.2]"),
])
def test_rules_print_as_text(rule, params, text):
    assert pv.rule_text(rule, params) == text


def test_every_registry_rule_prints_as_words_never_as_a_dict():
    for c in CLAIMS:
        text = pv.claim_rule_text(c)
        assert bool(text) == bool(c.rule)
        assert not re.search(r"[{}']|\binf\b|\bnan\b|\d{5,}", text), (c.id, text)
    assert pv.claim_rule_text(CLAIMS_BY_ID["C.2.refs_bidirectional"]) == "within [1.48, 1.68]"


def test_the_result_box_is_written_from_the_verdicts():
    assert pv.result_box(_found()) == "\n".join([
        ":::{admonition} What this page finds",
        ":class: tip",
        "",
        f"- **Holds?** (the corrected computation; 2 claims on 2 models) *supported*: {_link('5.4.entropy')} "
        f"(1 of 2); *not supported*: {_link('1.bos_share')} (both); *not diagnostic* on 1 claim.",
        f"- **Reproduced?** (the authors' computation; 1 claim on 1 model) *supported*: {_link('1.bos_share')}.",
        f"- **Refuted on the most models**: {_link('1.bos_share')} (share of attention on the beginning-of-sequence "
        "token; paper: *30-40 %*) is not supported on both models by the corrected computation; rule: "
        "within [0.3, 0.4]; our estimate on `a` by the corrected computation: 0.53 [0.52, 0.54].",
        ":::",
    ])


def test_the_result_box_without_refutations_or_verdicts():
    supported = [v for v in _found() if v.status != V.NOT_SUPPORTED]
    box = pv.result_box(supported)
    assert box.count("\n- ") == 3 and "**No refutation**: no claim tested here is *not supported*" in box
    assert pv.result_box([]).splitlines()[3] == f"- {pv.NO_VERDICTS}"
    assert pv.result_box([], empty="A pipeline check.").splitlines()[3] == "- A pipeline check."


def test_the_strongest_refutation_prefers_the_larger_share_then_both_computations():
    found = [
        V.Verdict("5.4.entropy", "a", "holds", V.NOT_SUPPORTED, E(0.2, 0.1, 0.3)),
        V.Verdict("5.4.entropy", "b", "holds", V.SUPPORTED, E(-0.2, -0.3, -0.1)),
        V.Verdict("5.4.magnitude", "a", "holds", V.NOT_SUPPORTED, E(-1.0, -2.0, -0.5)),
        V.Verdict("5.4.magnitude", "a", "reproduced", V.NOT_SUPPORTED, E(-1.0, -2.0, -0.5)),
    ]
    line = pv.strongest_refutation(found)
    assert line.startswith(f"**Refuted on the most models**: {_link('5.4.magnitude')}")
    assert "is not supported on its only model by both computations; rule: above 0" in line
    assert pv.strongest_refutation(found[1:2]) == ""


def test_the_verdict_table_has_one_row_per_verdict_anchored_and_linked_to_the_scorecard():
    page = pv.verdict_html(_found(), "../00_scorecard.html", [("5.2.fisher_peaks", "no stated criterion")])
    rows = re.findall(r"<tr[ >].*?</tr>", page)
    assert len(rows) == 1 + 5 + 2 + 1  # header, one per verdict, one per reason, the untested claim
    for cid in ("1.bos_share", "5.4.entropy", "5.2.fisher_peaks"):
        anchor = pv.claim_anchor(cid)
        assert page.count(f'id="{anchor}"') == 1
        shown = breakable(cid)  # the id wraps at its dots and underscores, never inside a word
        assert f'<a href="../00_scorecard.html#{anchor}" title="this claim on the scorecard">{shown}</a>' in page
    first = next(r for r in rows if 'id="claim-1-bos_share"' in r)
    assert re.findall(r"<td[^>]*>(.*?)</td>", first)[1:] == [
        "reproduced?", "<code>a</code>", f'<span title="{BOOT}, n = 8">0.35 [0.31, 0.39]</span>',
        "within [0.3, 0.4]", "", '<span class="sc-ok">\u2714 supported</span>']
    assert "<td>uniform attention: 0</td>" in page  # a null of 1e-17 is zero
    assert '<td class="why" colspan="6">Hangs on the book\'s tolerance: against the printed value alone it is not ' \
           "supported.</td>" in page
    assert "The null (uniform attention) meets the claim too." in page
    assert '<span class="sc-nd">\u2248 not diagnostic</span>' in page
    assert 'colspan="6">not evaluated: no stated criterion</td>' in page
    assert "{" not in page.split("</style>", 1)[1]


def test_the_scorecard_link_leaves_an_optional_profile_folder():
    assert pv.scorecard_href("offline") == "00_scorecard.html"
    assert pv.scorecard_href("offline-large") == "../00_scorecard.html"


def test_a_family_page_lists_its_untested_claims_with_the_reason():
    fr = family.FamilyResults(family.family_of("qwen"), ["tiny:qwen2"], pipeline_check=True)
    untested = family.untested_claims(fr)
    assert [cid for cid, _ in untested] == [c.id for c in family.appendix_claims("qwen")]
    assert {why for _, why in untested} <= {"pipeline check: random weights decide no claim",
                                            *(c.untestable for c in family.appendix_claims("qwen"))}
    assert family.no_verdicts_note(fr).startswith("A pipeline check: random weights decide none of the appendix's 12")
    fr.pipeline_check, fr.evaluated = False, [V.Verdict("F.sign_flip", "qwen05", "holds", V.SUPPORTED)]
    assert "F.sign_flip" not in {cid for cid, _ in family.untested_claims(fr)}
