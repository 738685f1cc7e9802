"""The spectral ratio statistics run batched (every bootstrap resample and every layer order in one call): they
must give each resample the value the one-at-a-time computation gives, bit for bit, NaNs and empty regions included."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from sinkframes import stats
from sinkframes.analyses import spectral
from sinkframes.verdicts import measures


def _one_at_a_time(n_layers: int, combine_scalar):
    """The statistic as it was computed before batching: a Python loop over thresholds and regions."""
    reg = stats.layer_regions(n_layers)

    def stat(m: np.ndarray) -> float:
        out = []
        for row in m:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                g = {k: float(np.nanmean(row[v])) if v else math.nan for k, v in reg.items()}
            out.append(float(combine_scalar(g)))
        v = np.array(out)
        v = v[np.isfinite(v) & (v > 0)]
        return float(np.exp(np.log(v).mean())) if v.size else math.nan

    return stat


def _div(a: float, b: float) -> float:
    return a / b if b > 0 and math.isfinite(a) and math.isfinite(b) else math.nan


SCALAR = {
    "peak": lambda g: min(_div(g["middle"], g["early"]), _div(g["middle"], g["late"])),
    "dip": lambda g: min(_div(g["early"], g["middle"]), _div(g["late"], g["middle"])),
    "middle_over_early": lambda g: _div(g["middle"], g["early"]),
}
BATCHED = {
    "peak": spectral._middle_peak,
    "dip": lambda g: spectral._first_min(spectral._div(g["early"], g["middle"]), spectral._div(g["late"], g["middle"])),
    "middle_over_early": lambda g: spectral._div(g["middle"], g["early"]),
}


def _means(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    m = rng.gamma(2.0, 1.0, shape)
    m[rng.random(shape) < 0.08] = np.nan  # undefined layers
    m[rng.random(shape) < 0.03] = 0.0  # zero denominators
    m[:2] = np.nan  # a resample with no defined layer
    m[2:4] = 0.0  # one whose every ratio is 0 / 0
    return m


@pytest.mark.parametrize("kind", sorted(SCALAR))
@pytest.mark.parametrize("n_layers", [2, 6, 30])
def test_the_batched_statistic_equals_the_loop_on_every_resample(kind, n_layers):
    rng = np.random.default_rng(n_layers)
    means = _means(rng, (400, 7, n_layers))  # [boot, threshold, layer]
    batched = spectral._ratio_stat(n_layers, BATCHED[kind])
    loop = _one_at_a_time(n_layers, SCALAR[kind])
    got = batched(means)
    want = np.array([loop(m) for m in means])
    assert got.shape == (400,)
    np.testing.assert_array_equal(got, want)  # bit for bit, NaN where the loop gives NaN
    assert np.isnan(want).any()
    assert np.isfinite(want).any() == (n_layers >= 3)  # two layers leave the early third empty: NaN throughout
    assert float(batched(means[3])) == want[3] or (math.isnan(want[3]) and math.isnan(float(batched(means[3]))))


def test_boot_and_the_layer_order_null_use_the_batched_path_with_the_same_numbers():
    rng = np.random.default_rng(0)
    x = _means(rng, (12, 7, 9))  # [sample, threshold, layer]
    batched = spectral._ratio_stat(9, BATCHED["peak"])
    loop = _one_at_a_time(9, SCALAR["peak"])
    a, b = measures.boot(x, batched, seed=3), measures.boot(x, loop, seed=3)
    assert (a.value, a.low, a.high, a.undetermined) == (b.value, b.low, b.high, b.undetermined)
    m = np.nanmean(x, 0)
    orders = np.array([rng.permutation(9) for _ in range(50)])
    got = batched(np.moveaxis(m[..., orders], -2, 0))
    np.testing.assert_array_equal(got, [loop(m[..., o]) for o in orders])
