"""The output check's decoder scores (``probes.sink_removal._decoder_scores``) against known answers and
against the same quantities computed on the whole ``[position, vocab]`` matrix at once."""

from __future__ import annotations

import math

import pytest
import torch

from sinkframes.probes.sink_removal import _decoder_scores


def test_known_kl_and_likelihoods():
    """Base uniform over 4 tokens; the edit puts logit log(2) on token 1 (probabilities 1/5, 2/5, 1/5, 1/5).
    KL(uniform || edited) = sum 1/4 log((1/4) / q) and the NLLs are -log of the target's probability."""
    base = torch.zeros(3, 4)  # [position, vocab]; the last position predicts nothing
    edited = torch.zeros(3, 4)
    edited[:, 1] = math.log(2.0)
    ids = [0, 1, 2]  # targets: token 1 after position 0, token 2 after position 1
    q = torch.tensor([0.2, 0.4, 0.2, 0.2], dtype=torch.float64)
    kl = float((0.25 * torch.log(0.25 / q)).sum())
    out = _decoder_scores(base, {"edit": edited, "same": base.clone()}, ids)
    assert out["edit"]["kl"] == pytest.approx(kl, rel=1e-6)  # the logit log(2) is float32
    assert out["edit"]["nll_base"] == pytest.approx(math.log(4.0), rel=1e-12)
    assert out["edit"]["nll_edit"] == pytest.approx(-(math.log(0.4) + math.log(0.2)) / 2, rel=1e-6)
    assert out["same"]["kl"] == 0.0 and out["same"]["nll_edit"] == out["same"]["nll_base"]


def test_row_by_row_equals_the_whole_matrix():
    gen = torch.Generator().manual_seed(3)
    base = 3.0 * torch.randn(12, 5000, generator=gen)
    edited = {c: base + scale * torch.randn(12, 5000, generator=gen) for c, scale in (("a", 0.5), ("b", 0.1))}
    ids = torch.randint(0, 5000, (10,), generator=gen).tolist()  # 10 tokens: 9 predicted positions
    lp = torch.log_softmax(base[:9].double(), -1)
    rows, target = torch.arange(9), torch.tensor(ids[1:])
    out = _decoder_scores(base, edited, ids)
    for cond, logits in edited.items():
        lq = torch.log_softmax(logits[:9].double(), -1)
        assert out[cond]["kl"] == pytest.approx(float((lp.exp() * (lp - lq)).sum(-1).mean()), rel=1e-12)
        assert out[cond]["nll_edit"] == pytest.approx(float(-lq[rows, target].mean()), rel=1e-12)
        assert out[cond]["nll_base"] == pytest.approx(float(-lp[rows, target].mean()), rel=1e-12)
