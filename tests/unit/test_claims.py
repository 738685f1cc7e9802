"""The claims registry: every section of the paper, each claim once, rules that exist, known fixes."""

from __future__ import annotations

from collections import Counter

import pytest

from sinkframes import paper
from sinkframes.manifest import load_manifest
from sinkframes.paper import CLAIMS, CLAIMS_BY_ID
from sinkframes.results import analyses
from sinkframes.verdicts import COMPARISONS, MEASURES, RULES, apply
from sinkframes.verdicts.measures import registered
from sinkframes.verdicts.verdict import Estimate

#: claims per numbered part, counted from the paper's claim list (shared/reference/paper_claims.txt; each
#: bullet's claims are listed in paper.claims.BULLETS)
EXPECTED_PER_SECTION = {
    "1": 2, "3.1": 3, "3.2": 2, "3.3": 2, "3.4": 11, "4": 2, "5.1": 4, "5.2": 3, "5.3": 4, "5.4": 3,
    "A": 2, "B": 4, "B.1": 3, "C.1": 2, "C.2": 6, "E": 11, "F": 12, "G": 20, "H": 16, "I": 7, "J": 7,
    paper.claims.LATER: 4,
}


def test_every_section_has_its_claims_and_there_are_more_than_sixty():
    assert dict(Counter(c.section for c in CLAIMS)) == EXPECTED_PER_SECTION
    assert list(EXPECTED_PER_SECTION) == list(paper.SECTIONS)
    assert len(CLAIMS) > 60


def test_ids_are_unique_and_each_statement_is_stored_once():
    assert len(CLAIMS_BY_ID) == len(CLAIMS)
    keys = Counter((c.subject, c.quantity, c.printed) for c in CLAIMS)
    assert [k for k, n in keys.items() if n > 1] == []


def test_every_claim_is_testable_or_says_why_not():
    pages = {p.id for p in load_manifest().pages}
    specs = set(analyses())  # every analysis module's spec (results.register)
    for c in CLAIMS:
        assert c.subject in paper.claims.SUBJECTS, c.id
        assert c.testable != bool(c.untestable), c.id
        if c.testable:
            per_model = c.compares["measure"] if c.compares else c.measure  # a comparison names it in compares
            assert per_model in MEASURES and c.rule in RULES and c.page in pages, c.id
            assert (c.measure in COMPARISONS) == bool(c.compares), c.id
            assert c.null and c.why, c.id
            probe = Estimate("x") if c.rule == "equals" else Estimate(0.5, 0.4, 0.6)
            if c.bare:
                apply(c.rule, probe, c.bare)
                assert c.tolerance, c.id  # a tolerance says why it is what it is
            apply(c.rule, probe, c.params)  # the parameters fit the rule
            analysis = MEASURES[per_model].analysis
            assert analysis in specs, c.id


def test_gemma_and_mistral_concentrations_are_not_swapped():
    gemma, mistral = CLAIMS_BY_ID["G.gemma_concentration_max"], CLAIMS_BY_ID["G.mistral_concentration_max"]
    assert (gemma.subject, gemma.printed) == ("gemma", "91.57 % at layer 21")
    assert (mistral.subject, mistral.printed) == ("mistral", "95.44 % at layer 21")
    assert gemma.params == pytest.approx({"low": 0.8657, "high": 0.9657})
    assert mistral.params == pytest.approx({"low": 0.9044, "high": 1.0044})
    assert gemma.bare == pytest.approx({"low": 0.9157, "high": 0.9157})


def test_encoder_connectivity_drop_is_early_to_middle_and_standard_rope_claims_are_not_tested_on_encoders():
    for cid in ("H.bert_connectivity", "H.xlmr_connectivity"):
        assert CLAIMS_BY_ID[cid].measure == "spectral.lambda2_middle_over_early"
    for cid in ("3.3.small_key", "3.3.aligned_key"):
        assert not CLAIMS_BY_ID[cid].applies_to("bert", "bidirectional", False)


def test_one_estimate_is_counted_once_per_model():
    """Two claims that apply to the same model never read the same measure with the same rule and params."""
    seen: dict[tuple, str] = {}
    for fam, frame, causal in (("llama", "centralized", True), ("gemma", "centralized", True),
                               ("qwen", "distributed", True), ("bert", "bidirectional", False),
                               ("xlm-roberta", "bidirectional", False), ("mistral", "centralized", True)):
        seen.clear()
        for c in paper.claims_for(fam, frame, causal):
            if not c.testable:
                continue
            key = (c.measure, c.rule, repr(sorted(c.params.items())))
            assert key not in seen, (fam, c.id, seen.get(key))
            seen[key] = c.id


def test_encoder_kl_claims_are_about_the_first_layer_and_the_u_shape():
    for cid, value in (("H.bert_kl_first", "+0.0392"), ("H.xlmr_kl_first", "+0.0635")):
        c = CLAIMS_BY_ID[cid]
        assert c.printed == value and c.measure == "information.kl_first_layer" and c.rule == "above"
    assert CLAIMS_BY_ID["5.3.kl_u"].measure == "information.kl_u_contrast"  # stated in Sec. 5.3 and App. H
    assert not any(c.measure == "information.kl_mean" for c in CLAIMS)  # "mean KL positive" is never claimed


def test_llama_kl_claims_are_about_regions_after_layer_zero():
    for cid in ("E.kl_negative", "E.kl_values"):
        c = CLAIMS_BY_ID[cid]
        assert c.measure == "information.kl_regions_after_first" and c.rule.startswith("every_"), cid
    assert "except layer 0" in CLAIMS_BY_ID["E.kl_negative"].printed
    assert CLAIMS_BY_ID["E.kl_values"].bare == {"low": -0.13, "high": -0.07}


def test_concentration_claims_compare_like_with_like():
    kinds = {c.id: c.measure for c in CLAIMS if "concentration" in c.quantity and c.testable}
    for cid, m in kinds.items():
        q = CLAIMS_BY_ID[cid].quantity
        printed_layer = "layer" in q + CLAIMS_BY_ID[cid].printed and "first" not in q and "layer 0" not in q
        if ("maximum" in q or "layer 25" in q) and printed_layer:  # a printed layer is read at its relative depth
            assert m.startswith("information.concentration_at_") and m in registered(), cid
        elif "maximum" in q:
            assert m == "information.concentration_max", cid
        elif "layer 0" in q or "first-layer" in q:
            assert m == "information.concentration_first_layer", cid
        elif "t = 0.8" in q:
            assert m == "information.concentration_regions_p80", cid
        else:
            assert m == "information.concentration_regions", cid


def test_gemma_is_tested_on_its_own_connectivity_claim_and_fisher_peaks_have_no_rule():
    g = CLAIMS_BY_ID["G.gemma_connectivity_falls"]
    assert g.subject == "gemma" and g.printed == "13.0545 -> 9.9455" and g.measure == "spectral.lambda2_late_over_early"
    assert CLAIMS_BY_ID["E.connectivity_peak"].subject == "llama"
    assert not CLAIMS_BY_ID["5.2.fisher_peaks"].testable


def test_claims_apply_by_the_family_and_frame_the_paper_assigns():
    llama = {c.id for c in paper.claims_for("llama", "centralized", True)}
    assert {"E.kl_negative", "5.1.kl_negative", "1.bos_share", "3.1.centralized"} <= llama
    assert not any(i.startswith(("G.gemma", "H.", "3.1.distributed")) for i in llama)
    bert = {c.id for c in paper.claims_for("bert", "bidirectional", False)}
    # an encoder's [CLS] is a beginning-of-sequence token: the claim about those tokens applies to it
    assert {"H.bert_kl_first", "5.3.kl_u", "3.1.bidirectional", "1.bos_share"} <= bert


def test_reference_counts_come_from_the_registry():
    assert paper.reference_count_by_frame() == {"centralized": 1.0006, "distributed": 1.23, "bidirectional": 1.58}


def test_claims_about_the_rotary_code_apply_to_every_rotary_model_the_rope_encoder_included():
    nomic = {c.id for c in paper.claims_for("nomic-bert", "not assigned", False, rotary=True)}
    assert {"3.4.rope_origin", "later.first_physical"} <= nomic
    bert = {c.id for c in paper.claims_for("bert", "bidirectional", False, rotary=False)}
    assert not {"3.4.rope_origin", "later.first_physical"} & bert
    assert paper.claims.is_rotary({"position_encoding": "RoPE, theta=1000"})
    assert not paper.claims.is_rotary({"position_encoding": "learned absolute (absolute)"})
    assert "rotary" in paper.subjects_of(["nomic-bert"]) and "rotary" not in paper.subjects_of(["bert"])


def test_the_readme_states_the_registrys_size():
    import re

    from tests.conftest import ROOT

    text = " ".join((ROOT / "README.md").read_text().split())
    stated = re.search(r"every claim of the paper \((\d+) of them", text)
    assert stated is not None and int(stated.group(1)) == len(CLAIMS), "update the count in README.md"
