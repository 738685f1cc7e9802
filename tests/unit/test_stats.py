from __future__ import annotations

import numpy as np
import pytest

from sinkframes import stats


@pytest.mark.parametrize("n", [1, 2, 3, 7, 30])
def test_layer_regions_partition(n):
    r = stats.layer_regions(n)
    assert sorted(sum(r.values(), [])) == list(range(n))
    assert stats.region_of(n - 1, n) == "late"


def test_layer_regions_thirds():
    assert stats.layer_regions(30) == {
        "early": list(range(10)),
        "middle": list(range(10, 20)),
        "late": list(range(20, 30)),
    }


def test_bootstrap_is_seeded_and_brackets_mean():
    x = np.random.default_rng(1).normal(2.0, 1.0, 200)
    a = stats.bootstrap_ci(x, seed=5)
    b = stats.bootstrap_ci(x, seed=5)
    assert a == b
    mean, lo, hi = a
    assert lo < mean < hi
    assert mean == pytest.approx(x.mean())
    # width about 2 * 1.96 * sd / sqrt(n)
    assert hi - lo == pytest.approx(2 * 1.96 / np.sqrt(200), rel=0.2)


def test_bootstrap_constant_and_nan():
    assert stats.bootstrap_ci(np.array([3.0, 3.0, np.nan])) == (3.0, 3.0, 3.0)
    assert all(np.isnan(v) for v in stats.bootstrap_ci(np.array([np.nan])))


def test_sign_flip_exact_small_sample():
    # 3 positive values: only the all-plus and all-minus patterns reach |mean| -> p = 2/8
    mean, p = stats.sign_flip_test(np.array([1.0, 2.0, 3.0]))
    assert mean == pytest.approx(2.0)
    assert p == pytest.approx(0.25)
    # symmetric values: every pattern is at least as extreme as a zero mean
    assert stats.sign_flip_test(np.array([1.0, -1.0]))[1] == pytest.approx(1.0)


def test_sign_flip_monte_carlo_seeded_and_sensitive():
    rng = np.random.default_rng(0)
    shifted = rng.normal(1.0, 1.0, 40)
    null = rng.normal(0.0, 1.0, 40)
    assert stats.sign_flip_test(shifted, seed=3) == stats.sign_flip_test(shifted, seed=3)
    assert stats.sign_flip_test(shifted, n_perm=2000)[1] < 0.001
    assert stats.sign_flip_test(null, n_perm=2000)[1] > 0.05


def test_holm_and_bh_known_values():
    p = np.array([0.01, 0.04, 0.03, np.nan, 0.5])
    # Holm: sorted 0.01, 0.03, 0.04, 0.5 times 4, 3, 2, 1 -> 0.04, 0.09, 0.09 (monotone), 0.5
    np.testing.assert_allclose(stats.holm(p), [0.04, 0.09, 0.09, np.nan, 0.5])
    # BH: 0.01*4/1=0.04, 0.03*4/2=0.06, 0.04*4/3=0.0533, 0.5 -> min from the right: 0.04, 0.0533, 0.0533, 0.5
    np.testing.assert_allclose(stats.fdr_bh(p), [0.04, 0.04 * 4 / 3, 0.04 * 4 / 3, np.nan, 0.5])


def test_cohens_dz_and_fisher_method():
    assert stats.cohens_dz(np.array([1.0, 2.0, 3.0])) == pytest.approx(2.0)
    assert stats.fisher_combined_p(np.ones(5)) == pytest.approx(1.0)
    # one p of 0.05: X = -2 ln 0.05 with 2 degrees of freedom -> p = 0.05
    assert stats.fisher_combined_p(np.array([0.05])) == pytest.approx(0.05, rel=1e-6)


def test_nanmean_ignores_nan_and_is_nan_without_a_warning_when_nothing_is_left():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert stats.nanmean(np.array([1.0, np.nan, 3.0])) == 2.0
        assert np.isnan(stats.nanmean(np.array([np.nan, np.nan])))
        cols = stats.nanmean(np.array([[1.0, np.nan], [3.0, np.nan]]), axis=0)
    assert cols[0] == 2.0 and np.isnan(cols[1])
