"""The frame instrument (``metrics.frames``) on attention whose frame is known, before it decides anything."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from sinkframes.analyses import frame_validation as sf
from sinkframes.metrics import frames as fr

#: the strength from which every planted frame must be recovered in at least 95 % of draws
STATED_STRENGTH = 0.2


def _read(attn: torch.Tensor, causal: bool) -> str:
    return fr.FRAMES[int(fr.layer_frames(attn, causal)["frame"][0])]


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("n", [8, 16, 64, 256])
def test_uniform_attention_reads_none_at_every_length_and_mask(causal, n):
    attn, _ = sf.planted_attention("uniform", n, causal, 0.0, 0.0, seed=0)
    assert _read(attn, causal) == "none"
    top = float(fr.layer_frames(attn, causal)["top"][0])
    if n - 1 >= fr.MIN_SOURCES:
        assert top == pytest.approx(0.0, abs=1e-6)
    else:  # no key has the queries a sink needs: nothing to read
        assert math.isnan(top)


def test_two_positions_splitting_attention_exactly_are_two_sinks_not_a_peak():
    n = 32
    attn = torch.full((1, 1, n, n), 0.2 / (n - 2), device="cpu")
    attn[..., 0], attn[..., -1] = 0.4, 0.4  # every query gives the two ends the same share
    out = fr.layer_frames(attn, causal=False)
    assert fr.FRAMES[int(out["frame"][0])] == "bidirectional" and int(out["n_sinks"][0]) == 2
    attn[..., 1], attn[..., -1] = 0.4, 0.2 / (n - 2)  # two equal sinks, not the two ends
    assert _read(attn / attn.sum(-1, keepdim=True), False) == "distributed"


def test_the_planted_frames_are_recovered_and_structureless_attention_reads_none():
    trials = sf.validation_trials(draws=2)
    assert (trials.loc[trials["planted"] == "uniform", "read"] == "none").all()
    random = trials[trials["planted"] == "random"]
    assert (random["read"] == "none").mean() >= 0.95
    assert (random.loc[random["n"] >= 32, "read"] == "none").all()  # chance sinks only in short sentences
    strong = trials[trials["strength"] >= STATED_STRENGTH]
    for kind, rows in strong.groupby("planted"):
        assert (rows["read"] == rows["expected"]).mean() >= 0.95, kind
    long_enough = strong[strong["n"] >= 16]
    assert (long_enough["read"] == long_enough["expected"]).all()
    table = sf.confusion(trials)
    assert list(table.columns) == list(fr.FRAMES) and np.allclose(table.sum(1), 1.0)


def test_a_weak_planted_sink_is_not_read_as_a_frame_it_does_not_have():
    weak = sf.validation_trials(strengths=(0.05,), draws=1)
    planted = weak[~weak["planted"].isin(["uniform", "random"])]
    assert (planted["read"] == "none").mean() > 0.9  # below the stated strength the answer is none, not another frame


def _profile(kinds: list[str], anchors: list[str] | None = None, sentences: int = 20) -> tuple[np.ndarray, np.ndarray]:
    f = np.array([[fr.FRAMES.index(k) for k in kinds]] * sentences)
    a = np.array([[fr.ANCHORS.index(x) if x else fr.NO_ANCHOR for x in (anchors or [""] * len(kinds))]] * sentences)
    return f, a


def test_model_labels_from_profiles_with_known_answers():
    f, a = _profile(["centralized"] * 5 + ["none"], ["first"] * 5 + [""])
    assert fr.frame_profile(f, a, causal=True)["label"] == "centralized"
    f, a = _profile(["none"] * 5 + ["centralized"], [""] * 5 + ["first"])
    assert fr.frame_profile(f, a, causal=True)["label"] == "none"
    f, a = _profile(["distributed"] * 4 + ["centralized"] * 2, [""] * 4 + ["first"] * 2)
    assert fr.frame_profile(f, a, causal=True)["label"] == "distributed"
    f, a = _profile(["distributed"] * 3 + ["centralized"] * 3, [""] * 3 + ["first"] * 3)
    assert fr.frame_profile(f, a, causal=True)["label"] == "mixed"
    # a frame that shifts between the ends across layers is bidirectional, in an encoder only
    f, a = _profile(["centralized"] * 6, ["first"] * 3 + ["last"] * 3)
    assert fr.frame_profile(f, a, causal=False)["label"] == "bidirectional"
    assert fr.frame_profile(f, a, causal=True)["label"] == "centralized"
    f, a = _profile(["centralized"] * 6, ["first"] * 6)
    assert fr.frame_profile(f, a, causal=False)["label"] == "centralized"


def test_a_layer_split_between_sentences_is_not_a_frame_and_stability_reports_it():
    f = np.array([[1, 1, 1]] * 10 + [[2, 2, 2]] * 10)
    a = np.where(f == 1, 0, fr.NO_ANCHOR)
    labels, _ = fr.layer_labels(f, a)
    assert [fr.FRAMES[i] for i in labels] == ["distributed"] * 3  # a tie between kinds is not a centralized frame
    prof = fr.frame_profile(f, a, causal=True, n_boot=100)
    assert 0.2 < prof["stability"] < 0.8  # half of the resamples tip each way
    clear = fr.frame_profile(*_profile(["centralized"] * 3, ["first"] * 3), causal=True, n_boot=50)
    assert clear["stability"] == 1.0


def test_as_a_layer_is_read_structureless_attention_reads_none_and_every_planted_frame_is_found():
    sets = sf.layer_trials(sets=1)
    assert (sets.loc[sets["planted"].isin(["uniform", "random"]), "read"] == "none").all()
    strong = sets[sets["strength"] >= STATED_STRENGTH]
    assert len(strong) >= 20 and (strong["read"] == strong["expected"]).all()


def _labels_one_row_at_a_time(shares):
    """The labels read row by row with ``np.isclose``, as the instrument was first written: the reference the
    whole-array reading must equal on every input."""
    from sinkframes.metrics.frames import ANCHORS, FRAMES, NO_ANCHOR

    kinds, where = shares[:, : len(FRAMES)], shares[:, len(FRAMES):]
    frame = np.zeros(len(shares), dtype=int)
    anchor = np.full(len(shares), NO_ANCHOR, dtype=int)
    for layer, row in enumerate(kinds):
        tied = np.flatnonzero(np.isclose(row, row.max(), rtol=0, atol=1e-9))
        frame[layer] = tied[0] if len(tied) == 1 else (0 if 0 in tied else FRAMES.index("distributed"))
        if frame[layer] == FRAMES.index("centralized"):
            top = np.flatnonzero(np.isclose(where[layer], where[layer].max(), rtol=0, atol=1e-9))
            anchor[layer] = top[0] if len(top) == 1 else ANCHORS.index("other")
    return frame, anchor


def test_the_labels_read_from_shares_equal_the_row_by_row_reading_ties_and_nan_included():
    from sinkframes.metrics.frames import code_shares, labels_from_shares

    rng = np.random.default_rng(0)
    for n_sent in (1, 2, 3, 4, 7, 20):  # few sentences: many exact ties among the shares
        for _ in range(200):
            frames = rng.integers(0, 4, (n_sent, 6))
            anchors = np.where(frames == 1, rng.integers(0, 3, (n_sent, 6)), -1)
            shares = code_shares(frames, anchors)  # [layer, 7]
            got, want = labels_from_shares(shares), _labels_one_row_at_a_time(shares)
            assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    shares = rng.random((5, 7))
    shares[1, 2] = np.nan  # an undefined share: no frame is at the maximum, so the layer reads distributed
    shares[3, :4] = [0.4, 0.4 + 5e-10, 0.1, 0.1]  # a tie within 1e-9 that includes "none"
    got, want = labels_from_shares(shares), _labels_one_row_at_a_time(shares)
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    assert got[0][1] == 2 and got[0][3] == 0
    assert [len(x) for x in labels_from_shares(np.zeros((0, 7)))] == [0, 0]
