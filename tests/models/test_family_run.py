"""A family page's whole pipeline on a tiny model: every analysis, every table, every claim of the appendix."""

from __future__ import annotations

from sinkframes.report import family
from sinkframes.types import RunOptions


def test_family_pages_run_every_analysis_on_tiny_models():
    from sinkframes import corpus

    texts = corpus.sample_sentences(4, seed=3)["text"].tolist()
    opts = RunOptions(batch_size=4, device="cpu", progress=False, use_cache=False)
    fr = family.run("llama", ["tiny:llama"], texts, opts, n_output=2, n_fisher=1)
    assert {k: len(v) for k, v in fr.results.items()} == {a.name: 1 for a in family.family_analyses()}
    for table in (family.topology_summary, family.spectral_summary, family.fiedler_table,
                  family.information_summary, family.values_summary):
        assert len(table(fr)) == 1
    verdict_rows = family.verdict_table(fr)
    assert set(verdict_rows["claim"]) == {c.id for c in family.appendix_claims("llama")}
    assert "E.kl_negative" in set(verdict_rows[verdict_rows["model"] == "tiny:llama"]["claim"])
    assert len(family.pipeline_table(fr)) == 4


def test_the_output_check_is_skipped_with_a_reason_where_the_hook_cannot_edit_attention(texts):
    """tiny:mpnet: KL and sink mass run from the attention weights; the output-level check says why it did not run."""
    from sinkframes.analyses import information

    r = information.analyse_model("tiny:mpnet", texts[:3], n_output=2, n_fisher=0, progress=False)
    assert r.data["output"] is None and r.samples
    assert information.output_unavailable([r]) == [
        "`tiny:mpnet`: no output-level check (the attention hook does not support mpnet's attention)"]
    assert information.output_table([r]).empty


def test_a_family_page_leaves_the_hook_analyses_out_for_mpnet_and_says_so(texts):
    from sinkframes.report import family
    from sinkframes.types import RunOptions

    fr = family.run("encoders", ["tiny:bert", "tiny:mpnet"], texts[:3], RunOptions(progress=False), n_output=2,
                    n_fisher=0)
    assert [r.ref for r in fr.results["topology"]] == ["tiny:bert", "tiny:mpnet"]
    values = fr.results["geometry_values"]
    assert [r.ref for r in values] == ["tiny:bert"] and not values.failures
    assert fr.not_run == [
        "`tiny:mpnet`: no value-space analysis (the attention hook does not support mpnet's attention)",
        "`tiny:mpnet`: no output-level check (the attention hook does not support mpnet's attention)"]
    assert "Not run:\n- `tiny:mpnet`: no value-space" in family.header(fr)
