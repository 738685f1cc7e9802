"""Headline claims on two disjoint sentence draws: the draws share no sentence, and a changed verdict is unstable."""

from __future__ import annotations

from sinkframes import corpus
from sinkframes import verdicts as V
from sinkframes.verdicts.draws import UNSTABLE, across_draws, headline_claims, headline_only

E = V.Estimate


def test_the_second_draw_has_as_many_sentences_and_shares_none_with_the_first():
    first = corpus.sample_sentences(150, seed=0)
    second = corpus.disjoint_draw(first, seed=0)
    assert len(second) == 150 and not set(first["text"]) & set(second["text"])
    assert second["text"].tolist() == corpus.disjoint_draw(first, seed=0)["text"].tolist()  # seeded
    big = corpus.sample_sentences(300, seed=0)
    assert len(corpus.disjoint_draw(big, seed=0)) == len(corpus.load_dataset("embedded")) - 300  # what is left


def test_a_verdict_that_changes_between_draws_is_unstable_and_one_that_holds_stands():
    a = V.Verdict("5.1.star", "m", "holds", V.SUPPORTED, E(0.7, 0.69, 0.71))
    b = V.Verdict("3.1.centralized", "m", "holds", V.SUPPORTED, E("centralized"))
    c = V.Verdict("1.bos_share", "m", "holds", V.NOT_SUPPORTED, E(0.5, 0.49, 0.51))
    other = V.Verdict("5.4.entropy", "m", "holds", V.SUPPORTED, E(-1.0, -1.1, -0.9))
    second = [V.Verdict("5.1.star", "m", "holds", V.NOT_SUPPORTED, E(0.6, 0.59, 0.61)),
              V.Verdict("3.1.centralized", "m", "holds", V.SUPPORTED, E("centralized")),
              V.Verdict("1.bos_share", "m", "holds", V.INCONCLUSIVE, E(0.4, 0.35, 0.45))]
    out = {v.claim: v for v in across_draws([a, b, c, other], second)}
    assert out["5.1.star"].status == V.INCONCLUSIVE and UNSTABLE in out["5.1.star"].reason
    assert [d["status"] for d in out["5.1.star"].extra["draws"]] == [V.SUPPORTED, V.NOT_SUPPORTED]
    assert out["3.1.centralized"].status == V.SUPPORTED and len(out["3.1.centralized"].extra["draws"]) == 2
    assert out["1.bos_share"].status == V.NOT_SUPPORTED and "did not confirm" in out["1.bos_share"].reason
    assert out["5.4.entropy"] is other  # not decided on the second draw: kept as it is


def test_only_headline_claims_are_decided_again():
    keep = headline_claims()
    assert {"3.1.centralized", "1.bos_share", "5.1.star"} <= keep and "5.4.entropy" not in keep
    vs = [V.Verdict("5.4.entropy", "m", "holds", V.SUPPORTED), V.Verdict("5.1.star", "m", "holds", V.SUPPORTED)]
    assert [v.claim for v in headline_only(vs)] == ["5.1.star"]


def test_two_halves_that_decide_a_claim_two_ways_make_it_unstable():
    from sinkframes.verdicts.draws import UNSTABLE_HALVES, across_halves

    whole = [V.Verdict("5.1.kl_negative", "m", "holds", V.SUPPORTED, E(-0.2, -0.3, -0.1)),
             V.Verdict("1.removal_hurts", "m", "holds", V.SUPPORTED, E(0.5, 0.4, 0.6)),
             V.Verdict("later.first_physical", "m", "holds", V.NOT_SUPPORTED, E(0.2, 0.1, 0.3)),
             V.Verdict("5.4.entropy", "m", "holds", V.SUPPORTED, E(-1.0, -1.1, -0.9))]
    first = [V.Verdict("5.1.kl_negative", "m", "holds", V.SUPPORTED, E(-0.2, -0.35, -0.05)),
             V.Verdict("1.removal_hurts", "m", "holds", V.SUPPORTED, E(0.5, 0.3, 0.7)),
             V.Verdict("later.first_physical", "m", "holds", V.NOT_SUPPORTED, E(0.2, 0.0, 0.4))]
    second = [V.Verdict("5.1.kl_negative", "m", "holds", V.NOT_SUPPORTED, E(0.1, 0.05, 0.15)),
              V.Verdict("1.removal_hurts", "m", "holds", V.INCONCLUSIVE, E(0.5, -0.1, 1.1)),
              V.Verdict("later.first_physical", "m", "holds", V.NOT_SUPPORTED, E(0.2, 0.0, 0.4))]
    out = {v.claim: v for v in across_halves(whole, first, second)}
    assert out["5.1.kl_negative"].status == V.INCONCLUSIVE and UNSTABLE_HALVES in out["5.1.kl_negative"].reason
    assert [d["draw"] for d in out["5.1.kl_negative"].extra["draws"]] == ["first half", "second half"]
    assert out["1.removal_hurts"].status == V.SUPPORTED
    assert "a half of the sentences alone did not decide it (second: inconclusive)" in out["1.removal_hurts"].reason
    assert out["later.first_physical"].status == V.NOT_SUPPORTED and not out["later.first_physical"].reason
    assert out["5.4.entropy"] is whole[3]


def test_the_halves_are_disjoint_and_cover_the_sentences():
    from sinkframes.results import split_halves

    for n in (1, 2, 7, 40, 100):
        a, b = split_halves(n)
        assert not set(a) & set(b) and sorted([*a, *b]) == list(range(n)) and abs(len(a) - len(b)) <= 1
