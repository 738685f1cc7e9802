"""The scorecard's compact table, its per-claim anchors and the block of models actually run, on a small
synthetic set of saved verdicts with known answers."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from sinkframes import verdicts as V
from sinkframes.manifest import load_manifest
from sinkframes.models.registry import OFFLINE_MODELS, paper_family_of
from sinkframes.paper import CLAIMS
from sinkframes.report import scorecard

LLAMA = {"family": "llama", "paper_frame": "centralized", "causal": True}
BERT = {"family": "bert", "paper_frame": "bidirectional", "causal": False}
RUN = "toy-run (trained here)"
TRAINING = {"family": "training", "paper_frame": "not assigned", "causal": True, "position_encoding": "RoPE, theta 1e4"}
EST = V.Estimate(0.5, 0.4, 0.6, n=10)


def _v(claim: str, model: str, question: str, status: str) -> V.Verdict:
    return V.Verdict(claim, model, question, status, EST)


@pytest.fixture(scope="module")
def saved() -> dict[str, V.PageVerdicts]:
    frames = [
        _v("3.1.centralized", "smollm2", "holds", V.SUPPORTED),  # no official computation: no reproduced verdict
        _v("1.bos_share", "smollm2", "holds", V.NOT_SUPPORTED),
        _v("3.1.bidirectional", "minilm", "reproduced", V.INCONCLUSIVE),
        _v("3.1.bidirectional", "minilm", "holds", V.NOT_DIAGNOSTIC),
        _v("1.removal_hurts", "smollm2", "holds", V.SUPPORTED),
        _v("1.removal_hurts", "minilm", "holds", V.NOT_SUPPORTED),
        _v("1.removal_hurts", "minilm", "reproduced", V.SUPPORTED),
    ]
    emergence = [_v("B.early_emergence", RUN, "holds", V.INCONCLUSIVE)]
    return {
        "emergence": V.PageVerdicts("emergence", "offline", emergence, {RUN: TRAINING}),
        "reference_frames": V.PageVerdicts("reference_frames", "offline", frames, {"smollm2": LLAMA, "minilm": BERT}),
    }


def test_claim_anchor_replaces_the_dots_and_is_unique_per_claim():
    assert scorecard.claim_anchor("3.1.centralized") == "claim-3-1-centralized"
    assert scorecard.claim_anchor("later.first_physical") == "claim-later-first_physical"
    anchors = [scorecard.claim_anchor(c.id) for c in CLAIMS]
    assert len(set(anchors)) == len(CLAIMS)
    assert all(re.fullmatch(r"claim-[A-Za-z0-9_-]+", a) for a in anchors)


def test_tally_counts_each_verdict_kind_per_claim(saved):
    holds = scorecard.tally(saved, "holds")
    assert holds["1.removal_hurts"] == Counter({V.SUPPORTED: 1, V.NOT_SUPPORTED: 1})
    assert holds["3.1.bidirectional"] == Counter({V.NOT_DIAGNOSTIC: 1})
    assert scorecard.tally(saved, "reproduced") == {"3.1.bidirectional": Counter({V.INCONCLUSIVE: 1}),
                                                    "1.removal_hurts": Counter({V.SUPPORTED: 1})}
    assert scorecard.tally_text(holds["1.removal_hurts"]) == "1\u2714 1\u2718"
    assert scorecard.tally_text(Counter({V.INCONCLUSIVE: 2, V.SUPPORTED: 3})) == "3\u2714 2?"
    assert scorecard.tally_text(Counter()) == ""


def test_the_compact_table_has_one_row_per_claim_and_two_symbols_per_model(saved):
    t = scorecard.compact_table(saved)
    assert list(t["claim"]) == [c.id for c in CLAIMS]
    assert list(t.columns) == ["claim", "anchor", "section", "statement", "smollm2", "minilm", RUN, "holds", "note"]
    rows = t.set_index("claim")
    assert rows.loc["3.1.centralized", "smollm2"] == "\u00b7\u2714"  # no official computation, then supported
    assert rows.loc["3.1.centralized", "minilm"] == ""  # a claim about another frame type
    assert rows.loc["3.1.bidirectional", "minilm"] == "?\u2248"
    assert rows.loc["1.removal_hurts", "holds"] == "1\u2714 1\u2718" and rows.loc["1.removal_hurts", RUN] == ""
    assert rows.loc["B.early_emergence", RUN] == "\u00b7?" and rows.loc["B.early_emergence", "smollm2"] == ""
    assert rows.loc["3.1.centralized", "anchor"] == "claim-3-1-centralized"
    assert rows.loc["3.1.centralized", "statement"] == "centralized: frame type (paper: centralized (one sink))"
    assert rows.loc["later.first_physical", "section"] == "later"


def test_rows_without_verdicts_say_why_in_a_few_words(saved):
    rows = scorecard.compact_table(saved).set_index("claim")
    assert rows.loc["3.2.fisher_rao", "note"].startswith("not testable: a mathematical statement")
    assert rows.loc["I.kl_early_late", "note"] == "no phi model in this profile"
    assert rows.loc["5.4.entropy", "note"] == "page `sink_geometry_values` has not run"
    assert rows.loc["5.4.entropy", "smollm2"] == "\u25cb\u25cb"  # about every model, none has a verdict
    assert rows.loc["3.1.centralized", "note"] == ""


def test_the_compact_html_anchors_every_row_and_links_each_claim(saved):
    page = scorecard.compact_html(saved, load_manifest())
    assert page.count('<tr id="claim-') == len(CLAIMS)
    assert '<tr id="claim-3-1-centralized"' in page
    # a claim links to its row on the page that saved a verdict on it, else to that page's closing section
    assert '<a href="01_reference_frames.html#claim-3-1-centralized"' in page
    assert '<a href="05_information_geometry.html#what-the-evidence-supports"' in page  # 1.removal_hurts
    assert '<a href="appendix_e_llama.html#claim-E-betti1_zero"' in page
    assert 'title="smollm2, holds?: supported: 0.5 [0.4, 0.6]"' in page
    assert 'title="smollm2, reproduced?: no official computation"' in page
    assert '<th class="m" title="toy-run (trained here)">toy-run</th>' in page
    assert "not run on this model" in page and scorecard.LEGEND in page


def test_paper_family_of_a_hub_id():
    assert paper_family_of("EleutherAI/pythia-12b") == "pythia"
    assert paper_family_of("google-bert/bert-base-uncased") == "bert"
    assert paper_family_of("FacebookAI/xlm-roberta-large") == "xlm-roberta"
    assert paper_family_of("google/gemma-2b") == "gemma"
    assert paper_family_of("meta-llama/Llama-3.1-8B-Instruct") == "llama"
    assert paper_family_of("smollm2") is None and paper_family_of("tiny:llama") is None


def test_models_run_are_read_from_the_saved_verdicts(saved):
    m = load_manifest()
    t = scorecard.models_run(saved, m).set_index("model")
    assert list(t.index) == ["smollm2", "minilm", RUN]  # the training run last
    assert t.loc["smollm2", "tested as"] == "llama (centralized)"
    assert t.loc["smollm2", "position encoding"] == OFFLINE_MODELS["smollm2"].position
    assert t.loc["smollm2", "stands in for"] == OFFLINE_MODELS["smollm2"].stands_for
    assert t.loc[RUN, "position encoding"] == "RoPE, theta 1e4"  # what the page saved
    assert t.loc["minilm", "pages"] == ["reference_frames"] and t.loc[RUN, "pages"] == ["emergence"]


def test_the_paper_models_not_run_are_named_with_their_stand_ins(saved):
    m = load_manifest()
    paper = scorecard.paper_models(m)
    assert "meta-llama/Llama-3.2-1B" in paper and "EleutherAI/pythia-12b" in paper and len(paper) == len(set(paper))
    missing = {fam: (refs, here) for fam, refs, here in scorecard.not_run(saved, m)}
    assert missing["llama"][1] == ["smollm2"] and "meta-llama/Llama-3.2-1B" in missing["llama"][0]
    assert missing["bert"] == (["google-bert/bert-base-uncased"], ["minilm"])
    assert missing["mistral"] == (["mistralai/Mistral-7B-v0.1"], [])
    table = scorecard.models_run_html(saved, m)
    assert "<tr><td><code>smollm2</code></td><td>llama (centralized)</td>" in table
    assert '<a href="01_reference_frames.html">1</a>' in table and '<a href="07_emergence.html">7</a>' in table
    text = scorecard.not_run_markdown(saved, "offline", m)
    assert f"**Not run** in the `offline` profile: {len(paper)} of the paper's models" in text
    assert "- mistral: `Mistral-7B-v0.1`; no stand-in here: the claims about that family alone are not" in text
    assert "- bert: `bert-base-uncased`; stand-in here: `minilm`." in text


def test_a_profile_that_ran_every_paper_model_says_so():
    m = load_manifest()
    models = {ref: {"family": paper_family_of(ref), "paper_frame": "centralized", "causal": True}
              for ref in scorecard.paper_models(m)}
    saved = {"reference_frames": V.PageVerdicts("reference_frames", "paper", [], models)}
    assert scorecard.not_run(saved, m) == []
    text = scorecard.not_run_markdown(saved, "paper", m)
    assert text == "Every model the `paper` profile names ran in the `paper` profile."


def test_a_model_outside_the_registry_stands_in_for_its_familys_paper_model():
    saved = {"reference_frames": V.PageVerdicts("reference_frames", "smoke", [],
                                                {"tiny:llama": LLAMA, "google/gemma-7b": {**LLAMA, "family": "gemma"},
                                                 "tiny:other": {**LLAMA, "family": "other"}})}
    t = scorecard.models_run(saved, load_manifest()).set_index("model")
    assert t.loc["tiny:llama", "stands in for"] == "meta-llama/Llama-3.2-1B (its family's model in the paper)"
    assert t.loc["google/gemma-7b", "stands in for"] == "itself (a paper model)"
    assert t.loc["tiny:other", "stands in for"] == "no paper model"
    assert t.loc["tiny:llama", "position encoding"] == "not recorded by the page that ran it"


def test_a_comparison_claim_shows_its_group_verdict_in_the_note():
    from sinkframes.paper import CLAIMS_BY_ID
    from sinkframes.report.scorecard import _group_note
    from sinkframes.verdicts import Estimate, Verdict

    c = CLAIMS_BY_ID["C.1.kl_differs"]
    v = Verdict(c.id, c.subject, "holds", "inconclusive", Estimate(0.05, 0.0, 0.12))
    note = _group_note(c, {(c.id, c.subject, "holds"): v})
    assert note == f"compared across {c.subject}: holds? inconclusive 0.05 [0, 0.12]"
    assert _group_note(CLAIMS_BY_ID["1.bos_share"], {}) == ""
