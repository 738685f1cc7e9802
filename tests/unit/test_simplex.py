"""Simplex geometry with known answers: analytic Fisher-Rao distances, the softmax Jacobian
against finite differences, entropies, and the row reducer on hand-built attention."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from sinkframes.metrics import simplex
from tests.attention_cases import causal_first_sink, causal_uniform, stack, two_ends


def test_distance_between_vertices_is_pi():
    e = torch.eye(4, dtype=torch.float64)
    d = simplex.fisher_rao_distance(e.unsqueeze(1), e.unsqueeze(0))  # [4, 4]
    assert torch.allclose(d, math.pi * (1 - torch.eye(4, dtype=torch.float64)))


def test_vertex_to_barycentre_and_known_pair():
    for m in (2, 3, 10):
        u = torch.full((m,), 1.0 / m, dtype=torch.float64)
        v = torch.zeros(m, dtype=torch.float64)
        v[0] = 1
        assert simplex.fisher_rao_distance(u, v).item() == pytest.approx(simplex.vertex_to_barycentre(m))
        assert simplex.vertex_to_barycentre(m) == pytest.approx(2 * math.acos(1 / math.sqrt(m)))
    # two keys: (1/2, 1/2) against (1, 0) is a quarter circle of the radius-2 sphere: pi / 2
    assert simplex.vertex_to_barycentre(2) == pytest.approx(math.pi / 2)
    # p = (0.36, 0.64), q = (0.64, 0.36): BC = 2 * 0.6 * 0.8 = 0.96
    p = np.array([0.36, 0.64])
    assert simplex.fisher_rao_distance(p, p[::-1].copy()) == pytest.approx(2 * math.acos(0.96))


def test_distance_is_arc_length_on_the_sphere_and_a_metric():
    gen = torch.Generator().manual_seed(0)
    p, q, r = torch.softmax(torch.randn(3, 50, 5, generator=gen, dtype=torch.float64), -1)
    xp, xq = simplex.sphere_embedding(p), simplex.sphere_embedding(q)
    assert torch.allclose(xp.norm(dim=-1), torch.full((50,), 2.0, dtype=torch.float64))
    angle = torch.arccos((xp * xq).sum(-1) / 4)
    d = simplex.fisher_rao_distance(p, q)
    assert torch.allclose(d, 2 * angle)
    assert torch.allclose(d, simplex.fisher_rao_distance(q, p))
    assert torch.allclose(simplex.fisher_rao_distance(p, p), torch.zeros(50, dtype=torch.float64), atol=1e-6)
    assert (d <= simplex.fisher_rao_distance(p, r) + simplex.fisher_rao_distance(r, q) + 1e-12).all()


def test_small_distances_match_the_metric():
    p = torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64)
    v = torch.tensor([1.0, -0.4, -0.6], dtype=torch.float64)
    eps = 1e-5
    d = simplex.fisher_rao_distance(p, p + eps * v).item()
    g = simplex.fisher_rao_metric(p)
    assert d / eps == pytest.approx(math.sqrt(v @ g @ v), rel=1e-4)
    assert simplex.fisher_rao_norm(p, v).item() == pytest.approx(math.sqrt(v @ g @ v))


def test_jacobian_against_finite_differences():
    z = torch.tensor([1.3, -0.2, 0.5, 2.0], dtype=torch.float64)
    jac = simplex.softmax_jacobian(z)
    eps = 1e-6
    fd = torch.stack(
        [
            (torch.softmax(z + eps * e, -1) - torch.softmax(z - eps * e, -1)) / (2 * eps)
            for e in torch.eye(4, dtype=torch.float64)
        ],
        -1,
    )  # column j = d p / d z_j
    assert torch.allclose(jac, fd, atol=1e-8)
    assert torch.allclose(jac.sum(0), torch.zeros(4, dtype=torch.float64), atol=1e-12)  # mass is conserved
    assert torch.allclose(jac, torch.autograd.functional.jacobian(lambda x: torch.softmax(x, -1), z))


def test_speed_is_the_metric_length_of_the_jacobian_step():
    gen = torch.Generator().manual_seed(1)
    z = torch.randn(6, generator=gen, dtype=torch.float64)
    dz = torch.randn(6, generator=gen, dtype=torch.float64)
    p = torch.softmax(z, -1)
    dp = simplex.softmax_jacobian(z) @ dz
    assert simplex.fisher_rao_speed(p, dz).item() == pytest.approx(simplex.fisher_rao_norm(p, dp).item())
    # a shift of every logit by the same amount moves nothing
    assert simplex.fisher_rao_speed(p, torch.full((6,), 3.0, dtype=torch.float64)).item() == pytest.approx(0, abs=1e-7)


def test_expected_noise_speed_vertex_barycentre_and_monte_carlo():
    m = 8
    u = torch.full((m,), 1 / m, dtype=torch.float64)
    assert simplex.expected_noise_speed(u, 2.0).item() == pytest.approx(2 * math.sqrt(1 - 1 / m))
    v = torch.zeros(m, dtype=torch.float64)
    v[3] = 1
    assert simplex.expected_noise_speed(v).item() == pytest.approx(0)
    p = torch.softmax(torch.linspace(-1, 2, m, dtype=torch.float64), -1)
    dz = torch.randn(200_000, m, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    mc = simplex.fisher_rao_speed(p.expand(len(dz), m), dz).pow(2).mean().sqrt().item()
    assert mc == pytest.approx(simplex.expected_noise_speed(p).item(), rel=0.01)


def test_entropy_and_vertex_distance():
    for m in (2, 7, 64):
        assert simplex.entropy(torch.full((m,), 1 / m)).item() == pytest.approx(math.log(m), rel=1e-6)
    assert simplex.entropy(torch.tensor([0.0, 1.0, 0.0])).item() == 0
    p = torch.tensor([0.25, 0.75], dtype=torch.float64)
    assert simplex.distance_to_nearest_vertex(p).item() == pytest.approx(2 * math.acos(math.sqrt(0.75)))
    assert simplex.distance_to_nearest_vertex(p).item() == pytest.approx(
        simplex.fisher_rao_distance(p, torch.tensor([0.0, 1.0], dtype=torch.float64)).item()
    )


def test_distance_to_uniform_over_allowed_keys():
    p = torch.tensor([0.5, 0.5, 0.0, 0.0], dtype=torch.float64)
    allowed = torch.tensor([True, True, False, False])
    assert simplex.distance_to_uniform(p, allowed).item() == pytest.approx(0, abs=1e-6)
    assert simplex.distance_to_uniform(p).item() == pytest.approx(2 * math.acos(2 * math.sqrt(0.5 * 0.25)))


def test_margin_and_logit_for_share():
    for n in (2, 10, 300):
        for s in (0.5, 0.9, 0.999):
            m = simplex.margin_for_share(s, n)
            z = torch.zeros(n, dtype=torch.float64)
            z[0] = m
            assert torch.softmax(z, -1)[0].item() == pytest.approx(s)
    others = torch.tensor([0.3, -1.0, 2.0, 0.0], dtype=torch.float64)
    t = simplex.logit_for_share(0.8, others)
    assert torch.softmax(torch.cat([t.view(1), others]), -1)[0].item() == pytest.approx(0.8)
    assert simplex.margin_for_share(0.5, 2) == pytest.approx(0.0)
    assert simplex.key_norm_for_margin(2.0, query_norm=8.0, cosine=0.5, head_dim=64) == pytest.approx(4.0)
    with pytest.raises(ValueError, match="strictly between"):
        simplex.margin_for_share(1.0, 5)


def test_temperature_path_goes_from_barycentre_to_the_argmax_vertex():
    z = np.array([0.2, 1.0, -0.5])
    path = simplex.temperature_path(z, np.array([0.0, 1.0, 50.0]))
    assert np.allclose(path[0], 1 / 3)
    assert np.allclose(path[-1], [0, 1, 0], atol=1e-10)
    d = simplex.distance_to_nearest_vertex(simplex.temperature_path(z, np.linspace(0, 20, 30)))
    assert (np.diff(d) < 0).all()


def test_sink_sweep_is_seeded_and_moves_toward_the_vertex():
    logits = np.linspace(-2, 12, 15)
    a = simplex.sink_sweep(16, logits, n_draws=50, seed=4)
    b = simplex.sink_sweep(16, logits, n_draws=50, seed=4)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert (np.diff(a["sink_share"]) > 0).all()
    # once the sink holds a tenth of the mass, raising its logit only concentrates the row
    past = a["sink_share"][:-1] > 0.1
    assert (np.diff(a["entropy"])[past] < 0).all() and (np.diff(a["distance_to_vertex"])[past] < 0).all()
    assert a["sink_share"][-1] > 0.999 and a["noise_speed"][-1] < 0.05
    # with every content logit at 0 the sink share is the closed form 1 / (1 + (n - 1) e^-t)
    c = simplex.sink_sweep(16, logits, content_std=0.0, n_draws=1)
    assert np.allclose(c["sink_share"], 1 / (1 + 15 * np.exp(-logits)))


def test_bad_input_is_rejected():
    with pytest.raises(ValueError, match="sum to 1"):
        simplex.entropy(torch.tensor([0.5, 0.6]))
    with pytest.raises(ValueError, match="logits"):
        simplex.fisher_rao_distance(torch.tensor([1.5, -0.5]), torch.tensor([0.5, 0.5]))
    with pytest.raises(ValueError, match="query == key"):
        simplex.row_descriptors(torch.ones(2, 3, 4), causal=True)


def test_reducer_on_a_perfect_first_token_sink():
    n = 6
    out = simplex.SimplexSummaryReducer()(stack(causal_first_sink(n)), causal=True)
    ones, zeros = torch.ones(2, 3), torch.zeros(2, 3)
    assert torch.allclose(out["first_share"], ones) and torch.allclose(out["max_share"], ones)
    assert torch.allclose(out["entropy"], zeros) and torch.allclose(out["distance_to_vertex"], zeros, atol=1e-3)
    # every row is a vertex: relative distance to the uniform row over its i + 1 keys is exactly 1
    assert torch.allclose(out["relative_distance_to_uniform"], ones, atol=1e-5)
    assert out["n_tokens"].item() == n
    assert torch.allclose(out["near_vertex"], ones) and torch.allclose(out["near_first_vertex"], ones)


def test_reducer_on_causal_uniform_rows():
    n = 5
    out = simplex.SimplexSummaryReducer()(stack(causal_uniform(n)), causal=True)
    # query i (1..n-1) spreads over i + 1 keys
    ks = np.arange(2, n + 1)
    assert out["entropy"][0, 0].item() == pytest.approx(np.log(ks).mean(), rel=1e-5)
    assert out["first_share"][0, 0].item() == pytest.approx((1 / ks).mean(), rel=1e-5)
    assert torch.allclose(out["normalized_entropy"], torch.ones(2, 3), atol=1e-5)
    assert torch.allclose(out["distance_to_uniform"], torch.zeros(2, 3), atol=2e-3)
    expected_vertex = np.mean([2 * math.acos(math.sqrt(1 / k)) for k in ks])
    assert out["distance_to_vertex"][1, 2].item() == pytest.approx(expected_vertex, rel=1e-5)
    # query 1 splits 1/2, 1/2: exactly pi/2 from both vertices, not strictly within
    assert torch.allclose(out["near_vertex"], torch.zeros(2, 3))


def test_reducer_on_bidirectional_two_ends():
    n = 6
    rows = simplex.row_descriptors(stack(two_ends(n)), causal=False)  # queries 1..5
    # queries 1..4 split 0.5 / 0.5 between the ends; query 5 is uniform over 6 keys
    assert torch.allclose(rows["first_share"][0, 0], torch.tensor([0.5, 0.5, 0.5, 0.5, 1 / 6]))
    assert rows["entropy"][0, 0, 0].item() == pytest.approx(math.log(2), rel=1e-6)
    assert rows["distance_to_vertex"][0, 0, 0].item() == pytest.approx(math.pi / 2, rel=1e-6)
    assert rows["distance_to_uniform"][0, 0, 4].item() == pytest.approx(0, abs=2e-3)
    assert rows["near_vertex"][0, 0].tolist() == [0, 0, 0, 0, 0]
    three = torch.zeros(1, 1, 3, 3)
    three[0, 0, :, 0] = torch.tensor([1.0, 0.9, 0.6])
    three[0, 0, 1:, 1:] = torch.tensor([[0.05, 0.05], [0.2, 0.2]])
    r = simplex.row_descriptors(three, causal=False)
    # rows (0.9, .05, .05) and (0.6, .2, .2) are within pi/2 of the position-0 vertex
    assert r["near_vertex"][0, 0].tolist() == [1, 1] and r["near_first_vertex"][0, 0].tolist() == [1, 1]
    three[0, 0, 2] = torch.tensor([0.2, 0.6, 0.2])
    r = simplex.row_descriptors(three, causal=False)
    assert r["near_vertex"][0, 0].tolist() == [1, 1] and r["near_first_vertex"][0, 0].tolist() == [1, 0]
    three[0, 0, 2] = torch.tensor([0.4, 0.4, 0.2])
    assert simplex.row_descriptors(three, causal=False)["near_vertex"][0, 0].tolist() == [1, 0]
