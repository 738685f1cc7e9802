"""Known answers for the sink-key geometry: norms, cosines and the logit split."""

from __future__ import annotations

import math

import pytest
import torch

from sinkframes.metrics import geometry


def _t(rows) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.float32).view(1, 1, len(rows), -1)  # [layer, head, token, dim]


def test_key_norm_ratio_small_sink_key():
    keys = _t([[1.0, 0.0], [0.0, 2.0], [2.0, 0.0], [0.0, 100.0]])
    causal = geometry.key_norms(keys, causal=True)  # the last key is seen by no other query
    assert causal["key0_norm"].item() == pytest.approx(1.0)
    assert causal["other_key_norm"].item() == pytest.approx(2.0)
    assert causal["key_norm_ratio"].item() == pytest.approx(0.5)
    bidir = geometry.key_norms(keys, causal=False)
    assert bidir["other_key_norm"].item() == pytest.approx(104 / 3)


def test_queries_aligned_with_the_sink_key():
    keys = _t([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0], [0.0, 1.0]])
    queries = _t([[1.0, 0.0], [3.0, 0.0], [2.0, 0.0], [5.0, 0.0]])
    out = geometry.sink_alignment(queries, keys, causal=True)
    assert out["cos_to_sink"].item() == pytest.approx(1.0)
    assert out["cos_to_others"].item() == pytest.approx(0.0, abs=1e-7)


def test_logit_split_is_exact_and_known():
    # causal, 3 tokens: only query 2 has another key (key 1)
    keys = _t([[1.0, 0.0], [0.0, 3.0], [5.0, 5.0]])
    queries = _t([[9.0, 9.0], [7.0, 1.0], [2.0, 0.0]])
    out = geometry.logit_decomposition(queries, keys, scaling=0.5, causal=True)
    # |q|=2, |k0|=1, cos0=1, mean other norm 3, mean other cos 0, s=0.5
    assert out["sink_logit"].item() == pytest.approx(1.0)
    assert out["other_logit"].item() == pytest.approx(0.0, abs=1e-7)
    assert out["norm_part"].item() == pytest.approx(0.5 * 2 * (1 - 3) * (1 + 0) / 2)
    assert out["alignment_part"].item() == pytest.approx(0.5 * 2 * (1 - 0) * (1 + 3) / 2)
    assert (out["norm_part"] + out["alignment_part"]).item() == pytest.approx(
        (out["sink_logit"] - out["typical_logit"]).item()
    )
    assert out["log_key_norm_ratio"].item() == pytest.approx(math.log(1 / 3))
    assert out["log_query_norm"].item() == pytest.approx(math.log(2))
    assert out["sink_cos"].item() == pytest.approx(1.0)


def test_grouped_query_heads_read_their_kv_head():
    keys = torch.tensor([[[[1.0, 0.0], [0.0, 1.0], [0.0, 1.0]]]])  # [layer, 1 kv head, token, dim]
    q_heads = torch.stack([torch.tensor([[1.0, 0.0]] * 3), torch.tensor([[0.0, 1.0]] * 3)]).unsqueeze(
        0
    )  # 2 query heads
    out = geometry.sink_alignment(q_heads, keys, causal=True)
    assert out["cos_to_sink"][0].tolist() == pytest.approx([1.0, 0.0], abs=1e-7)
    assert out["cos_to_others"][0].tolist() == pytest.approx([0.0, 1.0], abs=1e-7)


def test_summary_covers_before_and_after_rope_and_rejects_bad_shapes():
    torch.manual_seed(0)
    q, k = torch.randn(2, 4, 6, 8), torch.randn(2, 2, 6, 8)
    out = geometry.geometry_summary(q, q, k, k, torch.tensor([0.3, 0.3]), causal=True)
    assert out["cos_to_sink_pre"].shape == (2, 4) and out["key_norm_ratio"].shape == (2, 2)
    torch.testing.assert_close(out["cos_to_sink_pre"], out["cos_to_sink_post"])
    with pytest.raises(ValueError, match="must agree"):
        geometry.sink_alignment(q, torch.randn(2, 2, 5, 8), causal=True)
