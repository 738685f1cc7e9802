"""The scorecard gathers saved verdicts: one row per claim, a column pair per model, honest notes."""

from __future__ import annotations

from sinkframes import verdicts as V
from sinkframes.manifest import load_manifest
from sinkframes.paper import CLAIMS
from sinkframes.report import scorecard

LLAMA = {"family": "llama", "paper_frame": "centralized", "causal": True}


def _saved() -> dict[str, V.PageVerdicts]:
    vs = [
        V.Verdict("E.kl_negative", "smollm2", "holds", V.SUPPORTED, V.Estimate(-0.1, -0.2, -0.05, n=10)),
        V.Verdict("E.kl_negative", "smollm2", "reproduced", V.NOT_DIAGNOSTIC, V.Estimate(-0.1, -0.2, -0.05, n=10),
                  V.Estimate(-0.3, -0.4, -0.2), V.SUPPORTED),
    ]
    return {"information_geometry": V.PageVerdicts("information_geometry", "offline", vs, {"smollm2": LLAMA},
                                                   {"n_sentences": 10, "dataset": "embedded", "seed": 0})}


def test_one_row_per_claim_with_a_column_pair_per_model():
    t = scorecard.scorecard_table(_saved(), "offline")
    assert len(t) == len(CLAIMS) and list(t["claim"]) == [c.id for c in CLAIMS]
    assert {"smollm2 reproduced?", "smollm2 holds?"} <= set(t.columns)
    row = t.set_index("claim").loc["E.kl_negative"]
    assert row["smollm2 holds?"] == "supported: -0.1 [-0.2, -0.05]" and row["note"] == ""
    assert row["smollm2 reproduced?"].startswith("not diagnostic")


def test_claims_without_a_verdict_say_why_and_how_to_evaluate_them():
    t = scorecard.scorecard_table(_saved(), "offline").set_index("claim")
    assert t.loc["H.bert_kl_first", "smollm2 holds?"] == "-"  # about another family
    assert "no bert model in the `offline` profile" in t.loc["H.bert_kl_first", "note"]
    assert "--profile paper --pages information_geometry" in t.loc["H.bert_kl_first", "note"]
    assert t.loc["5.2.fisher_peaks", "note"].startswith("not evaluated: 'multiple peaks' has no stated criterion")
    # a llama claim measured on a page that saved nothing
    assert "page `topology` has not saved verdicts" in t.loc["E.betti1_zero", "note"]


def test_counts_add_up_and_the_html_links_each_claim_to_its_page():
    saved = _saved()
    c = scorecard.counts(saved, "offline")
    assert c.loc["supported", "holds"] == 1 and c.loc["not diagnostic", "reproduced"] == 1 and int(c.sum().sum()) == 2
    cc = scorecard.claim_counts(saved, "offline")
    assert cc["claims"] == len(CLAIMS) and cc["tested here"] == 1
    html = scorecard.html_table(scorecard.scorecard_table(saved, "offline"), load_manifest())
    # without the saved verdicts a section claim links to its page's closing section; an appendix claim always
    # links to its row of the family page, which lists every claim of its appendix
    assert '<a href="05_information_geometry.html#what-the-evidence-supports"' in html  # section claims
    assert '<a href="appendix_e_llama.html#claim-E-kl_negative"' in html  # appendix E claims
    assert '<a href="appendix_e_llama.html#claim-E-betti1_zero"' in html
    assert html.count("<tr><th colspan") == len({c.section for c in CLAIMS})
    assert "2 pages" not in scorecard.provenance_line("offline", saved)
    assert "`smollm2`" in scorecard.provenance_line("offline", saved)


def test_the_findings_box_is_written_from_the_saved_verdicts():
    vs = [V.Verdict("5.1.star", "smollm2", "holds", V.NOT_SUPPORTED, V.Estimate(0.31, 0.29, 0.33, n=10)),
          V.Verdict("3.1.centralized", "smollm2", "holds", V.SUPPORTED, V.Estimate("centralized"))]
    saved = {"spectral_graphs": V.PageVerdicts("spectral_graphs", "offline", vs, {"smollm2": LLAMA}, {})}
    text = scorecard.findings(saved, "offline", load_manifest())
    star = next(line for line in text.splitlines() if "star-like" in line)
    assert "`smollm2` \u2718 not supported 0.31 [0.29, 0.33]" in star and "04_spectral_graphs.html#" in star
    frames = next(line for line in text.splitlines() if "frame type follows" in line)
    assert "\u2714 supported centralized" in frames and "centralized (one sink) / distributed" in frames
    assert "no model of this profile is tested on it" in next(x for x in text.splitlines() if "emerge" in x)
    assert len([line for line in text.splitlines() if line.startswith("- ")]) == len(scorecard.CENTRAL)


def test_an_undetermined_estimate_says_why_in_the_findings_box():
    vs = [V.Verdict("3.4.rope_origin", "smollm2", "holds", V.INCONCLUSIVE,
                    V.Estimate(float("nan"), float("nan"), float("nan"), undetermined=True,
                               detail="the permutation did not run or broke the model"))]
    saved = {"position_interventions": V.PageVerdicts("position_interventions", "offline", vs, {"smollm2": LLAMA})}
    line = next(x for x in scorecard.findings(saved, "offline", load_manifest()).splitlines() if "rotary code" in x)
    assert "? inconclusive (the permutation did not run or broke the model)" in line and "undefined" not in line
