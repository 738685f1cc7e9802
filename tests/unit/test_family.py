"""The family appendices: each is a view of the claims registry for one appendix."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from sinkframes.figures import family as family_figures
from sinkframes.report import family


def test_each_family_page_holds_its_appendix_claims():
    counts = {k: len(family.appendix_claims(k)) for k in family.FAMILIES}
    assert counts == {"llama": 11, "qwen": 12, "gemma_mistral": 20, "encoders": 16, "phi": 7, "pythia": 7,
                      "bloom": 0}
    assert "{" not in "".join(family.claims_table("llama")["rule"])  # rules in words, never a dict
    t = family.claims_table("gemma_mistral")
    assert {"G.gemma_concentration_max", "G.mistral_concentration_max"} <= set(t["claim"])
    assert t.set_index("claim").loc["G.mistral_connectivity", "not testable because"].startswith("a Fiedler value")
    with pytest.raises(ValueError, match="unknown family 'mistral'; choose one of llama, qwen"):
        family.family_of("mistral")


def test_a_pipeline_check_shows_no_number_and_decides_no_claim():
    fr = family.FamilyResults(family.family_of("qwen"), ["tiny:qwen2"], pipeline_check=True)
    text = family.header(fr)
    assert "Pipeline check only" in text and "no claim is decided" in text
    assert "--profile paper --pages appendix_f_qwen" in text
    table = family.verdict_table(fr)
    assert len(table) == 12 and set(table["holds?"]) == {"not evaluated"}
    assert set(table["reproduced: rule"]) <= {"pipeline check: random weights decide no claim",
                                              *(c.untestable for c in family.appendix_claims("qwen"))}
    assert "Pipeline check" in family.section(fr, family.topology_summary).data
    assert family_figures.kl_figure(fr) is None
    assert "stay *not evaluated*" in family.evidence_summary(fr)


def test_the_verdict_table_and_the_summary_share_one_evaluation(monkeypatch):
    from sinkframes import verdicts

    calls: list[int] = []
    real = verdicts.evaluate

    def counted(results):
        calls.append(len(results))
        return real(results)

    monkeypatch.setattr(verdicts, "evaluate", counted)
    fr = family.FamilyResults(family.family_of("qwen"), [], pipeline_check=False)
    table = family.verdict_table(fr)
    assert set(table["reproduced: rule"]) <= {"no model of this family here",
                                              *(c.untestable for c in family.appendix_claims("qwen"))}
    assert "not evaluated here" in family.evidence_summary(fr)
    assert calls == [0]


def test_the_scorecard_note_names_the_section_pages_and_their_sentence_counts(monkeypatch):
    from sinkframes.verdicts import Verdict

    fr = family.FamilyResults(family.family_of("llama"), ["smollm2"], False)
    fr.evaluated = [Verdict("E.kl_negative", "smollm2", "holds", "supported"),
                    Verdict("E.betti1_zero", "smollm2", "holds", "supported")]
    note = family.scorecard_note(fr, "offline", 100)
    assert "E.kl_negative from *5. Information geometry" in note and "E.betti1_zero from *3. Topology" in note
    assert "(100 sentences)" in note and "its own" not in note  # the same counts: nothing to explain
    assert "its own 64 sentences" in family.scorecard_note(fr, "offline", 64)
    assert "Claims read twice" in family.scorecard_note(fr, "offline", 64)
    assert "None" not in family.scorecard_note(fr, "offline-large", 64)  # no section page in that profile
    assert family.scorecard_note(family.FamilyResults(family.family_of("llama"), [], False), "offline", 100) == ""


def test_only_the_claims_an_appendix_decides_itself_are_saved_by_its_page(tmp_path, monkeypatch):
    from sinkframes import verdicts
    from sinkframes.verdicts import Verdict

    assert [c.id for c in family.own_claims("pythia")] == ["J.specialized_heads", "J.stronger_reference"]
    assert family.own_claims("llama") == []  # the section pages decide every claim of Appendix E
    monkeypatch.setenv(verdicts.store.ENV, str(tmp_path))
    fr = family.FamilyResults(family.family_of("pythia"), ["pythia-70m", "pythia-160m"], False)
    fr.evaluated = [Verdict("J.specialized_heads", "pythia", "holds", "supported"),
                    Verdict("J.betti1_zero", "pythia-70m", "holds", "supported")]
    saved = family.save_own_verdicts(fr, "paper", {"n_sentences": 10, "dataset": "embedded", "seed": 0})
    assert [v.claim for v in saved] == ["J.specialized_heads"]
    stored = verdicts.load_all(tmp_path)
    assert [v.claim for v in stored["appendix_j_pythia"].verdicts] == ["J.specialized_heads"]
    assert stored["appendix_j_pythia"].profile == "paper"
    fr_llama = family.FamilyResults(family.family_of("llama"), ["smollm2"], False)
    fr_llama.evaluated = [Verdict("E.kl_negative", "smollm2", "holds", "supported")]
    assert family.save_own_verdicts(fr_llama, "offline", {}) == []  # nothing of its own to count ...
    stored = verdicts.load_all(tmp_path)
    assert stored["appendix_e_llama"].verdicts == []  # ... and its reading of a section page's claim kept apart
    assert [v.claim for v in stored["appendix_e_llama"].readings] == ["E.kl_negative"]
    assert [v.claim for v in stored["appendix_j_pythia"].readings] == ["J.betti1_zero"]
    fr_check = family.FamilyResults(family.family_of("phi"), ["tiny:phi"], True)
    fr_check.evaluated = [Verdict("I.kl_early_late", "tiny:phi", "holds", "supported")]
    assert family.save_own_verdicts(fr_check, "smoke", {}) == [] and "appendix_i_phi" not in verdicts.load_all(tmp_path)


def test_a_page_not_run_opens_with_a_warning_that_says_how_to_run_it():
    import ast
    import re

    fr = family.FamilyResults(family.family_of("phi"), ["tiny:phi"], pipeline_check=True)
    box = family.not_run_box(fr, "offline")
    assert box.startswith(":::{admonition} Not run in this profile") and ":class: warning" in box
    cell = re.search(r"```python\n(.*?)\n```", box, re.S).group(1)
    params = {n.targets[0].id: ast.literal_eval(n.value) for n in ast.parse(cell).body}  # a cell one can paste
    assert params["profile"] == "colab" and params["models"] == ["microsoft/phi-2"]
    assert params["pipeline_check"] is False
    assert "`microsoft/phi-2` (2.7 B parameters, about 5.4 GB of weights in float16)" in box
    assert family.not_run_box(family.FamilyResults(fr.family, ["phi2"], pipeline_check=False), "offline") == ""
    assert family.nominal_parameters("EleutherAI/pythia-410m") == 410e6
    assert family.nominal_parameters("some/model") is None


def test_the_build_folds_the_analysis_sections_of_a_pipeline_check(tmp_path):
    import nbformat

    from sinkframes import manifest
    from sinkframes_build.execute import PIPELINE_SECTION_TAG, fold_cells

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# I. Phi-2"), nbformat.v4.new_markdown_cell("## Topology"),
                nbformat.v4.new_code_cell("x")]
    for c in nb.cells[1:]:
        c.metadata["tags"] = [PIPELINE_SECTION_TAG]
    path = tmp_path / "page.ipynb"
    nbformat.write(nb, path)
    assert fold_cells(path, PIPELINE_SECTION_TAG) == 2
    tags = [c.metadata.get("tags", []) for c in nbformat.read(path, 4).cells]
    assert tags == [[], [PIPELINE_SECTION_TAG, "remove-cell"], [PIPELINE_SECTION_TAG, "remove-cell"]]
    m = manifest.load_manifest(manifest.repo_root() / "notebooks" / "manifest.yml")
    assert manifest.toc_title(m.page("appendix_i_phi")) == "I. Phi-2 (not run here)"
    assert manifest.toc_title(m.page("appendix_e_llama")) == "E. Llama"


def test_a_span_with_no_value_on_a_side_says_undefined_not_nan():
    assert family._span(3.271, 2.6149, 2) == "3.27 -> 2.61"
    assert family._span(float("nan"), float("nan"), 4) == "undefined -> undefined"
    assert family._span(0.5, float("nan"), 3) == "0.500 -> undefined"


def test_the_family_parameter_accepts_every_family_page():
    from sinkframes.book.params import _CHOICES
    from sinkframes.report.family import FAMILIES

    assert set(_CHOICES["family"]) == set(FAMILIES)


def test_a_family_the_paper_did_not_study_says_so_and_checks_its_published_count():
    import numpy as np

    from sinkframes.report import family as fam

    bloom = fam.family_of("bloom")
    assert not bloom.in_paper and fam.page_id("bloom") == "appendix_k_bloom" and fam.appendix_claims("bloom") == []
    assert fam.claims_table("bloom").to_dict("records") == [{"claim": "none",
                                                             "about": "the paper did not study BLOOM"}]
    share = np.full((24, 16), 0.2)  # [layer, head]
    share[4:, :8] = 0.51  # 160 of 384 heads above one half
    share[0, 0] = 0.5  # at one half: not more than half
    result = SimpleNamespace(ref="bigscience/bloom-560m", heads={"first_token_share": share},
                             data={"frame": "centralized"})
    fr = fam.FamilyResults(bloom, ["bigscience/bloom-560m"], False, results={"frames": [result]})
    row = fam.published_check(fr).iloc[0]
    assert (row["heads"], row["sink heads (ours)"]) == (384, 160)
    assert row["share (ours)"] == 160 / 384 and row["share (arXiv 2603.09616)"] == 0.44
    assert "bloom-560m 44%" in fam.published_note(fr)
    assert fam.published_check(fam.FamilyResults(fam.family_of("pythia"), [], False)).empty
    assert "the paper did not study" in fam.no_verdicts_note(fr)


def test_the_family_pages_run_the_analyses_the_registry_orders_for_them():
    specs = family.family_analyses()
    assert [a.name for a in specs] == ["topology", "spectral", "information", "geometry_values"]
    assert all(a.analyse is not None for a in specs)
    # what each entry point is given is a parameter of its own
    import inspect

    for a in specs:
        assert set(a.family_params) <= set(inspect.signature(a.analyse).parameters), a.name
    assert [a.name for a in specs if a.needs_hook] == ["geometry_values"]
