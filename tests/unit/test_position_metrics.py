"""Sink location, uniform shares, the frame-change count and the co-location onset on inputs with known answers."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from sinkframes.analyses import positions
from sinkframes.analyses import positions as pm
from sinkframes.metrics.positions import PositionReducer, residual_ratio, sink_location, uniform_received
from sinkframes.probes.positions import UNMODIFIED, Intervention, causal_edit, permutation, scaled_frequencies
from sinkframes.verdicts.nulls import uniform_attention


def _star(n: int, layers: int = 2, heads: int = 2, key: int = 0) -> torch.Tensor:
    """Every query (that can) puts all its weight on ``key``; earlier queries on themselves."""
    a = torch.zeros(layers, heads, n, n)
    for i in range(n):
        a[:, :, i, key if i >= key else i] = 1.0
    return a


def _previous(n: int, layers: int = 2, heads: int = 2) -> torch.Tensor:
    """Every query on the token before it (query 0 on itself): no common anchor."""
    a = torch.zeros(layers, heads, n, n)
    a[:, :, 0, 0] = 1.0
    for i in range(1, n):
        a[:, :, i, i - 1] = 1.0
    return a


def test_uniform_received_share_known_values():
    u = uniform_received(3, causal=True, device=torch.device("cpu"))
    assert u[0].item() == pytest.approx((1 / 2 + 1 / 3) / 2)
    assert u[1].item() == pytest.approx(1 / 3)
    assert math.isnan(u[2].item())
    assert torch.allclose(uniform_received(4, causal=False, device=torch.device("cpu")), torch.full((4,), 0.25))


def test_sink_location_finds_the_star_and_no_sink_in_uniform_attention():
    from sinkframes.metrics.sinks import received_share

    idx, excess = sink_location(received_share(_star(8), True).mean(1), True)
    assert idx.tolist() == [0, 0] and (excess > 0.5).all()
    idx, _ = sink_location(received_share(_star(8, key=2), True).mean(1), True)
    assert idx.tolist() == [2, 2]
    for causal in (True, False):
        idx, excess = sink_location(received_share(uniform_attention(8, 2, 2, causal), causal).mean(1), causal)
        assert idx.tolist() == [-1, -1]
        assert excess.abs().max() < 1e-6


def test_two_keys_sharing_the_sink_within_round_off_read_as_a_tie_on_any_machine():
    from sinkframes.metrics.positions import TIED

    # an encoder whose first and last tokens split the attention exactly (identical hidden states): shares 0.4 / 0.4
    recv = torch.tensor([[0.4, 0.05, 0.05, 0.05, 0.05, 0.4]])  # [layer, key]
    for noise in (0.0, 1e-7, -1e-7):  # the round-off another CPU could add to either key
        nudged = recv.clone()
        nudged[0, 5] += noise
        idx, excess = sink_location(nudged, causal=False)
        assert idx.tolist() == [TIED] and excess.item() == pytest.approx(0.4 - 1 / 6, abs=1e-6)
    # apart by more than the tolerance: the larger key is the sink
    recv[0, 5] = 0.39
    assert sink_location(recv, causal=False)[0].tolist() == [0]


def test_residual_ratio_of_a_massive_first_token():
    h = torch.ones(3, 5, 4)
    h[1, 0] *= 50.0
    assert residual_ratio(h).tolist() == pytest.approx([1.0, 50.0, 1.0])


def test_causal_edit_equals_a_causal_mask_before_the_softmax():
    scores = torch.randn(2, 3, 6, 6, generator=torch.Generator().manual_seed(0))
    masked = scores.masked_fill(torch.triu(torch.ones(6, 6, dtype=torch.bool), 1), -math.inf).softmax(-1)
    assert torch.allclose(causal_edit(scores.softmax(-1), torch.nn.Identity()), masked, atol=1e-6)


def test_theta_times_one_is_the_identity_and_the_other_scalings_are_what_they_say():
    inv = 1.0 / (10000 ** (torch.arange(0, 16, 2, dtype=torch.float) / 16))  # L = 8 pairs
    assert torch.equal(scaled_frequencies(Intervention("theta", 1.0), inv), inv)
    base16 = 1.0 / ((10000 * 16) ** (torch.arange(0, 16, 2, dtype=torch.float64) / 16))
    assert torch.allclose(scaled_frequencies(Intervention("theta", 16.0), inv).double(), base16, rtol=1e-6)
    assert torch.allclose(scaled_frequencies(Intervention("linear", 4.0), inv), inv / 4)
    half = scaled_frequencies(Intervention("partial", 0.5), inv)
    assert torch.equal(half[:4], inv[:4]) and not half[4:].any()
    assert not scaled_frequencies(Intervention("partial", 0.0), inv).any()
    ntk = scaled_frequencies(Intervention("ntk", 4.0), inv)
    assert ntk[0] == inv[0] and float(ntk[-1]) == pytest.approx(float(inv[-1]) / 4, rel=1e-5)  # lowest: interpolated


def test_the_permutation_moves_position_zero_and_depends_only_on_the_seed():
    for n in range(2, 12):
        p = permutation(n, np.random.default_rng([0, n]))
        assert p[0] != 0 and sorted(p.tolist()) == list(range(n))
    assert permutation(9, np.random.default_rng(5)).tolist() == permutation(9, np.random.default_rng(5)).tolist()


def _record(causal: bool = True, layers: int = 2, heads: int = 2) -> dict:
    return {"ref": "synthetic", "n_layers": layers, "n_heads": heads, "causal": causal, "family": "llama",
            "paper_frame": "centralized", "architecture": "llama", "position_encoding": "RoPE"}


def _summaries(make, lengths, origin=0, hidden_first=1.0):
    out = []
    for n in lengths:
        h = torch.ones(3, n, 4)
        h[:, 0] *= hidden_first
        out.append(PositionReducer()({"attention": make(n), "hidden": h, "causal": True, "origin": origin,
                                      "first": 0, "loss": 1.0, "pooled": None, "value_ratio": None}))
    return out


def _two_sinks(n: int, layers: int = 2, heads: int = 2) -> torch.Tensor:
    """Every query (that can) splits its weight between keys 0 and 1: two anchors, none dominant."""
    a = torch.zeros(layers, heads, n, n)
    a[:, :, 0, 0] = 1.0
    a[:, :, 1:, 0] = 0.5
    a[:, :, 1, 1] += 0.5
    a[:, :, 2:, 1] = 0.5
    return a


def test_the_frame_moves_as_predicted_only_under_a_change_of_kind_and_not_on_the_uniform_null():
    lengths = [12, 14, 16, 18, 20, 12, 14, 16]
    passes = {"unmodified": (UNMODIFIED, _summaries(_star, lengths)),
              "offset 1": (Intervention("offset", 1.0), _summaries(_two_sinks, lengths)),  # not a change of kind
              # no rotation at all: no encoding the paper types
              "partial 0": (Intervention("partial", 0.0), _summaries(_two_sinks, lengths)),
              "NTK-aware x4": (Intervention("ntk", 4.0), _summaries(_two_sinks, lengths)),
              "theta x16": (Intervention("theta", 16.0), _summaries(_previous, lengths))}  # moves, but to none
    r = positions.from_passes(_record(), passes)
    assert r.data["runs"]["unmodified"]["frame"] == "centralized"
    assert r.data["runs"]["NTK-aware x4"]["frame"] == "distributed"
    assert r.data["runs"]["theta x16"]["frame"] == "none"  # a previous-token pattern has no sink
    est = pm.frame_moves_as_predicted(r, "corrected")
    assert (est.value, est.low, est.high) == (1.0, 1.0, 1.0)
    assert "NTK-aware x4" in est.detail and "offset" not in est.detail and "partial 0" not in est.detail
    null = pm.frame_moves_as_predicted(positions.null_from(r), "corrected")
    assert null.interval == "not applicable" and "reads none" in null.detail  # uniform attention: no frame to move


def test_where_the_sink_goes_under_a_known_move():
    lengths = [6, 7, 8, 9, 10, 6, 7, 8]
    passes = {"unmodified": (UNMODIFIED, _summaries(_star, lengths)),
              "ids permuted": (Intervention("permute"), _summaries(lambda n: _star(n, key=2), lengths, origin=2))}
    r = positions.from_passes(_record(), passes)
    assert r.data["sink_layers"] == [0, 1]
    assert pm.sink_on_position_id0(r, "corrected").value == 1.0
    assert pm.sink_on_physical0(r, "corrected").value == 0.0
    null = positions.null_from(r)
    assert null.data["sink_layers"] == []  # uniform attention has no sink to follow
    assert pm.sink_on_physical0(null, "corrected").undetermined
    # a shuffle that breaks the model's function still says where the sink went, with the check beside it
    r.data["runs"]["ids permuted"]["check"]["broken"] = True
    moved = pm.sink_on_position_id0(r, "corrected")
    assert moved.value == 1.0 and not moved.undetermined and "breaks the model's function" in moved.detail


def test_onset_and_the_colocation_measure():
    assert pm.onset(np.array([0.1, 0.1, 0.8, 0.9])) == 2.0
    assert math.isnan(pm.onset(np.ones(4)))
    lengths = [6, 7, 8, 9]
    layers = 4

    def rising(n: int) -> torch.Tensor:  # uniform in layers 0-1, a star from layer 2 on
        a = uniform_attention(n, layers, 2, True).clone()
        a[2:] = _star(n, layers=2)
        return a

    out = []
    for n in lengths:
        h = torch.ones(layers + 1, n, 4)
        h[2:, 0] *= 40.0  # the first token's norm jumps entering layer 2
        out.append(PositionReducer()({"attention": rising(n), "hidden": h, "causal": True, "origin": 0, "first": 0,
                                      "loss": 1.0, "pooled": None, "value_ratio": None}))
    r = positions.from_passes(_record(layers=layers), {"unmodified": (UNMODIFIED, out)})
    est = pm.onset_minus_norm_spike(r, "corrected")
    assert est.value == 0.0


def test_sink_heads_are_labelled_by_the_length_of_the_sink_value():
    lengths = [6, 7, 8, 9]
    out = []
    for n in lengths:
        att = _star(n)  # [layer 2, head 2]: every head a sink head
        ratio = torch.tensor([[0.2], [3.0]])  # [layer, kv_head]: a short sink value in layer 0, a long one in 1
        out.append(PositionReducer()({"attention": att, "hidden": torch.ones(3, n, 4), "causal": True, "origin": 0,
                                      "first": 0, "loss": 1.0, "pooled": None, "value_ratio": ratio}))
    r = positions.from_passes(_record(), {"unmodified": (UNMODIFIED, out)})
    t = positions.sink_heads_table([r])
    assert len(t) == 4 and set(t[t.layer == 0]["sink value"]) == {"short (no-op)"}
    assert set(t[t.layer == 1]["sink value"]) == {"not short"}
    s = positions.sink_heads_summary([r]).iloc[0]
    assert (s["sink heads"], s["short sink value (no-op)"]) == (4, 2)
    est = pm.sink_value_ratio(r, "corrected")
    assert est.value == pytest.approx(1.6) and "2 sink (layer, KV head) pairs, 1 of them with a short" in est.detail
