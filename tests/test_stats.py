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
    assert stats.layer_regions(30) == {"early": list(range(10)), "middle": list(range(10, 20)), "late": list(range(20, 30))}


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
