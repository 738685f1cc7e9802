"""Known answers for the value-space measures, faithful and corrected."""

from __future__ import annotations

import math

import pytest
import torch

from sinkframes.metrics import sinks, values


def test_row_entropy_uniform_one_hot_and_faithful_cut():
    a = torch.tensor([[0.25] * 4, [1.0, 0, 0, 0]])
    assert values.row_entropy(a).tolist() == pytest.approx([math.log(4), 0.0], abs=1e-6)
    tiny = torch.tensor([[0.5, 0.5 - 1e-6, 1e-6, 0.0]])
    assert values.row_entropy(tiny, "faithful").item() == pytest.approx(math.log(2), abs=1e-6)
    assert values.row_entropy(tiny, "corrected").item() > values.row_entropy(tiny, "faithful").item()
    with pytest.raises(ValueError, match="mode"):
        values.row_entropy(a, "paper")


def test_faithful_magnitude_rescale_and_clip():
    pre = torch.zeros(3, 1, 2)
    post = torch.tensor([[[3.0, 4.0]], [[3000.0, 4000.0]], [[1000.0, 0.0]]])
    pre[2, 0, 0] = -1000.0  # difference 2000 is clipped to 1000
    assert values.faithful_magnitude(pre, post)[:, 0].tolist() == pytest.approx([5.0, 1250.0, 1000.0])


def test_pearson_constant_is_zero_and_linear_is_one():
    x = torch.tensor([1.0, 2.0, 3.0, 4.0])
    assert values.pearson(x, 2 * x + 1).item() == pytest.approx(1.0)
    assert values.pearson(x, torch.ones(4)).item() == 0.0
    assert values.pearson(x, -x, torch.tensor([True, True, False, True])).item() == pytest.approx(-1.0)


def test_faithful_alignment_counts_every_off_diagonal_pair():
    hidden = torch.tensor([[[1.0, 0.0], [2.0, 0.0], [0.0, 1.0]]])  # cos: (0,1) = 1, others 0
    s = values.cosine_matrix(hidden)
    avg = 0.1 + 0.5 * s  # a linear function of the similarity off the diagonal
    assert values.faithful_alignment(avg, hidden).item() == pytest.approx(1.0)
    causal = torch.tril(avg)  # the zeros above the diagonal enter the faithful correlation
    assert values.faithful_alignment(causal, hidden).item() < 0.99


def test_corrected_alignment_uses_only_visible_pairs_and_each_heads_values():
    v = torch.tensor([[[[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]]])  # [layer, kv, token, dim]
    s = values.cosine_matrix(v)[0, 0]
    a = torch.tril(0.2 + s, -1).view(1, 1, 4, 4)  # rows need not sum to 1 for a correlation
    assert values.corrected_alignment(a, v, causal=True).item() == pytest.approx(1.0)


def test_faithful_reference_set_rules():
    one = torch.zeros(1, 10, 10)
    one[..., 0] = 1.0
    assert values.faithful_reference_set(one).sum().item() == 1
    uniform20 = torch.full((1, 20, 20), 0.05)  # no column mean above 0.1: fallback top floor(0.1 * 20) = 2
    assert values.faithful_reference_set(uniform20).sum().item() == 2
    uniform5 = torch.full((1, 5, 5), 0.2)  # all above 0.1, capped at floor(0.3 * 5) = 1
    assert values.faithful_reference_set(uniform5).sum().item() == 1
    two = torch.zeros(1, 10, 10)
    two[..., :2] = 0.5
    assert values.faithful_reference_set(two)[0].tolist() == [True, True] + [False] * 8


def _half_on_first(n: int = 10) -> tuple[torch.Tensor, torch.Tensor]:
    a = torch.full((n, n), 0.5 / (n - 1))
    a[:, 0] = 0.5
    x = torch.zeros(n, 2)
    x[0, 0] = 1.0
    x[1:, 1] = 1.0
    return a, x  # reference part (0.5, 0), full mixture (0.5, 0.5)


def test_faithful_decomposition_with_placeholders_averaged_in():
    a, x = _half_on_first()
    out = values.faithful_decomposition(a.unsqueeze(0), x.unsqueeze(0))
    rel, direc = 1 / math.sqrt(2), (1 / math.sqrt(2) + 1) / 2
    assert out["reference_count"].item() == 1
    assert out["relative_magnitude"].item() == pytest.approx((0.5 + 9 * rel) / 10, abs=1e-6)
    assert out["directional_guidance"].item() == pytest.approx((0.5 + 9 * direc) / 10, abs=1e-6)
    assert out["information_change"].item() == pytest.approx((0.0 + 9 * 0.5) / 10, abs=1e-6)


def test_corrected_decomposition_on_real_head_outputs_without_placeholders():
    a, x = _half_on_first()
    attn = a.view(1, 1, 10, 10)
    v = x.view(1, 1, 10, 2)
    out = values.corrected_decomposition(attn, v, attn @ v, causal=False)
    assert out["reference_count"].item() == 1
    assert out["relative_magnitude"].item() == pytest.approx(1 / math.sqrt(2), abs=1e-6)
    assert out["directional_guidance"].item() == pytest.approx((1 / math.sqrt(2) + 1) / 2, abs=1e-6)
    no_refs = values.corrected_decomposition(
        attn, v, attn @ v, causal=False, refs=torch.zeros(1, 1, 10, dtype=torch.bool)
    )
    assert math.isnan(no_refs["relative_magnitude"].item())


def test_first_last_reports_the_papers_fold_as_a_difference():
    # official Llama-3.2-3B report: 2.4574 -> 84.0645, printed by the paper as "81.61-fold"
    out = values.first_last([2.4574, 7.8, 84.0645])
    assert out["difference"] == pytest.approx(81.6071, abs=1e-4)
    assert out["ratio"] == pytest.approx(34.21, abs=0.01)


def test_summaries_on_a_real_capture_agree_with_the_sink_module(texts):
    from sinkframes import extraction as extract
    from sinkframes.extraction import capture
    from sinkframes.types import RunOptions

    lm = extract.get_model("tiny:llama")
    ids = extract.tokenize(lm.tokenizer, texts[:2], 256)
    for _, c in capture.iterate_captures(lm, ids, RunOptions(batch_size=2, progress=False)):
        f = values.faithful_summary(c.attention, c.hidden)
        torch.testing.assert_close(f["reference_count"], sinks.faithful_reference_count(c.attention).float())
        corr = values.corrected_summary(c.attention, c.value, c.output_heads, c.output, causal=True)
        layers, heads = c.attention.shape[:2]
        assert corr["entropy"].shape == (layers, heads) and corr["magnitude"].shape == (layers,)
        torch.testing.assert_close(corr["reference_count"], sinks.reference_tokens(c.attention, True).sum(-1).float())
        assert torch.isfinite(f["entropy"]).all() and torch.isfinite(corr["alignment"]).all()
    with pytest.raises(ValueError, match="hidden states"):
        values.faithful_summary(c.attention, None)


def test_corrected_summary_known_entropy_and_output_magnitude():
    attn = torch.tensor([[1.0, 0, 0], [0.5, 0.5, 0], [1 / 3, 1 / 3, 1 / 3]]).view(1, 1, 3, 3)
    value = torch.eye(3).view(1, 1, 3, 3)
    output = torch.tensor([[[1.0, 0.0], [0.0, 2.0], [3.0, 0.0]]])  # [layer, token, hidden]: norms 1, 2, 3
    out = values.corrected_summary(attn, value, attn @ value, output, causal=True)
    # query 0 of a causal model has no choice and is left out
    assert out["entropy"].item() == pytest.approx((math.log(2) + math.log(3)) / 2, abs=1e-6)
    assert out["magnitude"].item() == pytest.approx(2.5)
    assert values.output_magnitude(output)[0].tolist() == pytest.approx([1.0, 2.0, 3.0])
