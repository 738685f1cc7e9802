"""A claim read on a section page and again on an appendix is decided once and set beside its second reading."""

from __future__ import annotations

from sinkframes import verdicts as V
from sinkframes.report import reconcile

BERT = {"family": "bert", "paper_frame": "bidirectional", "causal": False}


def _v(claim: str, model: str, status: str, value: float = 1.0) -> V.Verdict:
    return V.Verdict(claim, model, "holds", status, V.Estimate(value, value - 0.1, value + 0.1, n=10))


def _saved(section: list[V.Verdict], readings: list[V.Verdict]) -> dict[str, V.PageVerdicts]:
    return {
        "spectral_graphs": V.PageVerdicts("spectral_graphs", "offline", section, {"minilm": BERT},
                                          {"n_sentences": 200}),
        "appendix_h_encoders": V.PageVerdicts("appendix_h_encoders", "offline", [], {"minilm": BERT},
                                              {"n_sentences": 100}, readings=readings),
    }


def test_a_reading_that_decides_the_other_way_is_named_and_one_undecided_is_counted_apart():
    saved = _saved([_v("H.bert_connectivity", "minilm", V.SUPPORTED), _v("H.bert_betti1", "minilm", V.SUPPORTED),
                    _v("H.xlmr_connectivity", "minilm", V.SUPPORTED)],
                   [_v("H.bert_connectivity", "minilm", V.NOT_SUPPORTED, 0.9),
                    _v("H.bert_betti1", "minilm", V.SUPPORTED), _v("H.xlmr_connectivity", "minilm", V.INCONCLUSIVE),
                    _v("H.bert_kl_first", "minilm", V.SUPPORTED)])  # no section verdict: not a pair
    found = reconcile.pairs(saved)
    assert [(p.decided.claim, p.agreement) for p in found] == [
        ("H.bert_connectivity", "differ"), ("H.bert_betti1", "agree"), ("H.xlmr_connectivity", "one undecided")]
    text = reconcile.summary(found)
    assert "read 3 *holds?* verdicts" in text and "0 of them on the very sentences" in text
    assert "3 on other sentences" in text and "1 agree" in text and "1 differ" in text and "in 1 one" in text
    assert "`H.bert_connectivity` on `minilm` (supported on spectral_graphs, not supported on appendix_h_encoders)" \
        in text
    row = reconcile.table(found).iloc[0]
    assert row["section page"] == "spectral_graphs (200 sentences)" and row["appendix"].endswith("(100 sentences)")


def test_readings_are_saved_and_read_back_but_not_counted(tmp_path):
    reading = _v("H.bert_connectivity", "minilm", V.NOT_SUPPORTED)
    V.save("appendix_h_encoders", "offline", [], tmp_path, models={"minilm": BERT}, readings=[reading])
    back = V.load_all(tmp_path)["appendix_h_encoders"]
    assert back.verdicts == [] and back.readings == [reading]
    V.save("spectral_graphs", "offline", [_v("H.bert_connectivity", "minilm", V.SUPPORTED)], tmp_path)
    assert V.load_all(tmp_path)["spectral_graphs"].readings == []


def test_no_readings_say_so():
    assert "read once" in reconcile.summary([])


def test_a_reading_on_the_section_pages_own_sentences_is_one_computation_and_stays_out_of_the_table():
    saved = _saved([_v("H.bert_betti1", "minilm", V.SUPPORTED)], [_v("H.bert_betti1", "minilm", V.SUPPORTED)])
    saved["spectral_graphs"].inputs.update({"n_sentences": 100, "seed": 0, "dataset": "embedded"})
    saved["appendix_h_encoders"].inputs.update({"seed": 0, "dataset": "embedded"})
    found = reconcile.pairs(saved)
    assert [p.same_draw for p in found] == [True]
    assert "1 of them on the very sentences" in reconcile.summary(found) and reconcile.table(found).empty


def test_a_smaller_draw_of_the_same_seed_is_said_to_be_part_of_the_larger():
    saved = _saved([_v("H.bert_betti1", "minilm", V.SUPPORTED)], [_v("H.bert_betti1", "minilm", V.SUPPORTED)])
    for pv in saved.values():
        pv.inputs.update({"seed": 0, "dataset": "embedded"})
    (pair,) = reconcile.pairs(saved)
    assert pair.nested and not pair.same_draw
    assert "1 on part of them (the same set and seed, fewer sentences" in reconcile.summary([pair])
