"""Chapters 5 and 8 check their headline claims on the two disjoint halves of their sentences, made from the same
passes: each half is the analysis of half the sentences, and the twin's halves are paired with the model's."""

from __future__ import annotations

import numpy as np

from sinkframes import results as base
from sinkframes.analyses import information, positions


def test_the_information_halves_split_every_suite_over_its_own_sentences(texts):
    r = information.analyse_model("tiny:llama", texts[:6], n_output=4, n_fisher=2, twin=True, device="cpu",
                                  progress=False)
    a, b = base.halves_of(r)
    assert (a.n_sentences, b.n_sentences) == (3, 3)
    for name, x in r.samples.items():
        assert np.array_equal(np.concatenate([a.samples[name], b.samples[name]]), x, equal_nan=True), name
    assert sorted(a.data["output"].per_sentence["sentence"].unique()) == [0, 1]
    assert sorted(b.data["output"].per_sentence["sentence"].unique()) == [2, 3]
    for mode, f in r.data["fisher"].items():
        assert set(a.data["fisher"][mode].values["sentence"]) == {0}
        assert set(b.data["fisher"][mode].values["sentence"]) == {1}
        assert len(a.data["fisher"][mode].values) + len(b.data["fisher"][mode].values) == len(f.values)
    twin = r.data[base.TWIN]
    assert a.data[base.TWIN] is base.halves_of(twin)[0] and b.data[base.TWIN] is base.halves_of(twin)[1]
    halves = base.halves([r])
    assert halves is not None and halves[0][0] is a and halves[1][0] is b


def test_the_position_halves_are_the_passes_on_each_half(texts):
    r = positions.analyse_model("tiny:llama", texts[:4], twin=False, device="cpu", progress=False)
    a, b = base.halves_of(r)
    assert (a.n_sentences, b.n_sentences) == (2, 2) and list(a.data["runs"]) == list(r.data["runs"])
    for name, run in r.data["runs"].items():
        whole = run["arrays"]["first_share"]
        parts = [h.data["runs"][name]["arrays"]["first_share"] for h in (a, b)]
        assert np.array_equal(np.concatenate(parts), whole, equal_nan=True), name
    assert base.halves([r]) is not None


def test_results_without_halves_have_none():
    assert base.halves([]) is None
