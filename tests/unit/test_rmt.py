"""Random-matrix statistics against matrices whose spectrum is known."""

from __future__ import annotations

import numpy as np
import pytest

from sinkframes.metrics import rmt


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def test_mp_cdf_is_a_distribution_with_the_known_mean() -> None:
    # the unit-scale MP law has mean 1 for every ratio
    for gamma in (0.1, 0.5, 1.0):
        lo, hi = rmt.mp_edges(gamma)
        x = np.linspace(lo, hi, 20001)
        f = rmt.mp_cdf(x, gamma)
        assert f[0] == pytest.approx(0.0, abs=1e-9) and f[-1] == pytest.approx(1.0)
        assert np.all(np.diff(f) >= -1e-12)
        mean = hi - np.trapezoid(f, x)  # E[X] = hi - integral of F over [lo, hi] (lo >= 0)
        assert mean == pytest.approx(1.0, abs=2e-3)


def test_gaussian_matrix_follows_mp_with_no_outlier() -> None:
    x = _rng(1).standard_normal((200, 800)) * 1.5  # variance 2.25, gamma 0.25
    eig, gamma = rmt.covariance_spectrum(x)
    assert gamma == pytest.approx(0.25)
    m = rmt.spectrum_metrics(eig, gamma)
    assert m["mp_scale"] == pytest.approx(2.25, rel=0.05)
    assert m["n_outliers"] == 0
    assert m["ks_distance"] < 0.06
    # the largest eigenvalue sits at the MP edge
    assert eig[0] == pytest.approx(2.25 * (1 + 0.5) ** 2, rel=0.06)


def test_gaussian_square_matrix_fits_at_gamma_one() -> None:
    eig, gamma = rmt.covariance_spectrum(_rng(2).standard_normal((300, 300)))
    m = rmt.spectrum_metrics(eig, gamma)
    assert gamma == 1.0 and m["mp_scale"] == pytest.approx(1.0, rel=0.06) and m["n_outliers"] == 0
    assert m["ks_distance"] < 0.06


def test_rank_one_spike_gives_one_outlier_at_the_bbp_location() -> None:
    p, m, ell = 200, 800, 3.0  # covariance I + ell u u^T, above the BBP threshold sqrt(gamma) = 0.5
    rng = _rng(3)
    u = np.zeros(p)
    u[0] = 1.0
    z = rng.standard_normal((p, m))
    x = z + (np.sqrt(1 + ell) - 1) * np.outer(u, u) @ z  # rows: samples of N(0, I + ell u u^T)
    eig, gamma = rmt.covariance_spectrum(x)
    res = rmt.spectrum_metrics(eig, gamma)
    assert res["n_outliers"] == 1
    bbp = (1 + ell) * (1 + gamma / ell)  # where the top eigenvalue converges
    assert eig[0] == pytest.approx(bbp, rel=0.1)
    assert res["mp_scale"] == pytest.approx(1.0, rel=0.06)


def test_spike_below_threshold_gives_no_outlier() -> None:
    p, m, ell = 200, 800, 0.2  # below sqrt(gamma) = 0.5: the top eigenvalue sticks to the edge
    rng = _rng(4)
    z = rng.standard_normal((p, m))
    z[0] *= np.sqrt(1 + ell)
    eig, gamma = rmt.covariance_spectrum(z)
    assert rmt.spectrum_metrics(eig, gamma)["n_outliers"] == 0


def test_perfect_sink_deviation_is_rank_one() -> None:
    n = 12
    a = np.zeros((n, n))
    a[:, 0] = 1.0  # every query puts all its weight on token 0
    m = rmt.corrected_metrics(a, causal=False)
    assert m["participation_ratio"] == pytest.approx(1.0)
    assert m["stable_rank"] == pytest.approx(1.0)
    assert m["relative_gap"] == pytest.approx(1.0)
    assert m["n_outliers"] == 1
    assert np.isfinite(m["top_over_edge"]) and np.isfinite(m["ks_distance"])
    eig = rmt.deviation_spectra(a, False)  # X = n 1 e_0^T - 1 1^T = 1 (n e_0 - 1)^T
    assert eig[0] == pytest.approx(n * (n - 1)) and np.allclose(eig[1:], 0.0, atol=1e-9)


def test_identity_attention_has_a_flat_deviation_spectrum() -> None:
    m = rmt.corrected_metrics(np.eye(10), causal=False)  # X = 10 I - 1 1^T: 9 equal singular values
    assert m["participation_ratio"] == pytest.approx(9.0) and m["stable_rank"] == pytest.approx(9.0)
    assert m["relative_gap"] == pytest.approx(0.0, abs=1e-12)


def test_faithful_eigenvalues_of_a_causal_matrix_are_its_diagonal() -> None:
    rng = _rng(5)
    n = 9
    logits = rng.standard_normal((n, n))
    a = np.exp(logits) * np.tril(np.ones((n, n)))
    a /= a.sum(1, keepdims=True)
    mu = rmt.official_moduli(a)
    assert np.allclose(mu, np.sort(np.diag(a))[::-1], atol=1e-10)
    assert mu[0] == pytest.approx(1.0)  # A_00 = 1 for causal attention
    metrics = rmt.official_metrics(a)
    d = np.sort(np.diag(a))[::-1]
    assert metrics["spectral_gap"] == pytest.approx(d[0] / d[1], rel=1e-9)
    assert metrics["participation_ratio"] == pytest.approx(d.sum() ** 2 / np.sum(d**2), rel=1e-9)


def test_faithful_checkpoint_order_is_lexicographic() -> None:
    names = ["step0", "step2", "step143000", "step8"]
    assert rmt.faithful_order(names)[-1] == "step8"
    assert rmt.faithful_order(names) == ["step0", "step143000", "step2", "step8"]
    assert rmt.step_order(names) == ["step0", "step2", "step8", "step143000"]
    with pytest.raises(ValueError, match="step<N>"):
        rmt.step_order(["final"])


def test_official_mp_kl_known_cases() -> None:
    # equal moduli: numpy spreads the range to [0.5, 1.5], all mass in the bin holding 1.0
    equal = rmt.official_mp_kl(np.ones(10))
    edges = np.linspace(0.5, 1.5, 21)
    centres = (edges[:-1] + edges[1:]) / 2
    lo, hi = rmt.mp_edges(0.99)
    dens = np.sqrt((hi - centres) * (centres - lo)) / (2 * np.pi * 0.99 * centres)
    q = dens / dens.sum()
    assert equal == pytest.approx(-np.log(q[10]), rel=1e-9)  # 1.0 falls in bin 10 ([1.0, 1.05))
    # a value far beyond the MP support after division by the mean: infinite, as officially
    assert rmt.official_mp_kl(np.array([100.0] + [1.0] * 9)) == np.inf


def test_official_sink_concentration_and_entropy() -> None:
    n = 10
    u = np.full((n, n), 1.0 / n)
    m = rmt.official_metrics(u)
    assert m["entropy"] == pytest.approx(np.log2(n), rel=1e-6)
    assert m["sink_concentration"] == pytest.approx(1.0)  # all columns tie at the 90th percentile
    s = np.zeros((n, n))
    s[:, 0] = 1.0
    assert rmt.official_metrics(s)["sink_concentration"] == pytest.approx(1.0)
    assert rmt.official_metrics(s)["entropy"] == pytest.approx(0.0, abs=1e-6)


def test_mp_quantile_inverts_the_cdf() -> None:
    q = np.array([0.1, 0.5, 0.9])
    x = rmt.mp_quantile(q, 0.3, 2.0)
    assert np.allclose(rmt.mp_cdf(x, 0.3, 2.0), q, atol=1e-4)
    assert rmt.mp_quantile(np.array([0.5]), 0.3)[0] == pytest.approx(rmt.mp_median(0.3))


def test_spectrum_metrics_scale_is_never_zero_for_a_nonzero_matrix() -> None:
    x = np.zeros((20, 40))
    x[:, 0] = 1.0  # rank one: the median eigenvalue is 0, the mean is not
    m = rmt.spectrum_metrics(*rmt.covariance_spectrum(x))
    assert m["mp_scale"] > 0 and m["n_outliers"] == 1 and np.isfinite(m["top_over_edge"])
    assert np.isnan(rmt.spectrum_metrics(np.zeros(4), 1.0)["mp_scale"])  # no positive eigenvalue: undefined
