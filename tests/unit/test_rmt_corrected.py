"""The corrected random-matrix statistics on attention matrices whose answer is known.

The corrected statistics read the *deviation* of attention from structureless (uniform) attention on the
same mask: each query's weight on each key it can see, in units of the uniform weight for that query, minus 1
(``(number of visible keys) * A - 1``; zero on masked keys). Uniform attention has no deviation at all; a
perfect sink is one direction (rank one when bidirectional, one dominant direction when causal); softmax of
small iid logits is noise, whose spectrum follows the same-mask Gaussian null (Marchenko-Pastur at ratio 1
for bidirectional attention); local (banded) attention is structure that is neither.

Expected, per case (``n = 64``):

=====================  ===========  ===============  ==========  ============  ==========
case                   rms dev.     outliers         PR / n      gap           KS
=====================  ===========  ===============  ==========  ============  ==========
uniform                0            0                undefined   undefined     undefined
perfect sink           > 1          1                ~ 1 / n     ~ 1           > 0.5
random (sd 0.3)        ~ 0.3        0                > 0.3       < 0.3         < 0.1
banded (width 5)       > 1          several          between     < 0.5         > 0.15
=====================  ===========  ===============  ==========  ============  ==========
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from sinkframes.metrics import rmt
from sinkframes.metrics.sinks import first_token_share, uniform_first_token_share

N = 64


def _mask(n: int, causal: bool) -> np.ndarray:
    return np.tril(np.ones((n, n), bool)) if causal else np.ones((n, n), bool)


def uniform(n: int, causal: bool) -> np.ndarray:
    m = _mask(n, causal).astype(float)
    return m / m.sum(1, keepdims=True)


def sink(n: int, key: int = 0) -> np.ndarray:
    a = np.zeros((n, n))
    a[:, key] = 1.0
    return a


def random_softmax(n: int, causal: bool, sd: float = 0.3, seed: int = 0) -> np.ndarray:
    logits = np.random.default_rng(seed).standard_normal((n, n)) * sd
    logits = np.where(_mask(n, causal), logits, -np.inf)
    w = np.exp(logits - logits.max(1, keepdims=True))
    return w / w.sum(1, keepdims=True)


def banded(n: int, causal: bool, width: int = 5) -> np.ndarray:
    i, j = np.indices((n, n))
    band = _mask(n, causal) & ((i - j < width) if causal else (np.abs(i - j) < width))
    return band / band.sum(1, keepdims=True)


def stats(a: np.ndarray, causal: bool) -> dict[str, float]:
    return rmt.corrected_metrics(a, causal=causal)


CAUSAL = pytest.mark.parametrize("causal", [False, True], ids=["bidirectional", "causal"])


@CAUSAL
def test_uniform_attention_has_no_deviation(causal: bool) -> None:
    m = stats(uniform(N, causal), causal)
    assert m["rms_deviation"] == pytest.approx(0.0, abs=1e-12)
    assert m["n_outliers"] == 0
    for k in ("participation_ratio", "stable_rank", "relative_gap", "top_over_edge", "ks_distance"):
        assert np.isnan(m[k]), k  # nothing beyond the baseline: no spectrum to describe


@CAUSAL
def test_perfect_sink_is_one_outlier_far_above_the_noise_edge(causal: bool) -> None:
    m = stats(sink(N), causal)
    assert m["n_outliers"] == 1
    assert m["participation_ratio"] < 1.05 and m["stable_rank"] < 1.05
    assert m["relative_gap"] > 0.95
    assert 5 < m["top_over_edge"] < N  # finite, and bounded by the size of the matrix
    assert m["ks_distance"] > 0.5  # one eigenvalue carries nearly everything: nothing like the null's spread
    assert m["rms_deviation"] > 1


@CAUSAL
def test_random_softmax_attention_is_noise(causal: bool) -> None:
    for seed in range(5):
        m = stats(random_softmax(N, causal, seed=seed), causal)
        assert m["n_outliers"] == 0, seed
        assert m["top_over_edge"] < 1.15, seed
        assert m["ks_distance"] < 0.1, seed
        assert m["participation_ratio"] > 0.3 * N, seed
        assert m["rms_deviation"] == pytest.approx(0.3, rel=0.1)  # the logits' sd, for small logits


def test_outliers_in_pure_noise_are_rare() -> None:
    # the cut (null mean + 3 sd of the largest eigenvalue) flags few noise matrices; skewed weights (softmax of
    # larger logits) flag more at this size, so the count is a screen, not a test with a fixed level
    for causal, limit in ((False, 0.02), (True, 0.05)):
        mats = np.stack([random_softmax(N, causal, seed=s) for s in range(100)])
        found = rmt.deviation_metrics(rmt.deviation_spectra(mats, causal), causal)
        assert np.mean(found[:, rmt.CORRECTED_METRICS.index("n_outliers")] > 0) <= limit, causal


@CAUSAL
def test_banded_attention_is_structure_neither_noise_nor_a_sink(causal: bool) -> None:
    m = stats(banded(N, causal), causal)
    s, r = stats(sink(N), causal), stats(random_softmax(N, causal), causal)
    assert m["n_outliers"] >= 3
    assert m["ks_distance"] > 0.15
    assert s["participation_ratio"] < m["participation_ratio"] < r["participation_ratio"]
    assert m["relative_gap"] < 0.5


@CAUSAL
def test_the_statistics_separate_the_four_cases(causal: bool) -> None:
    u, s, r, b = (stats(a, causal) for a in (uniform(N, causal), sink(N), random_softmax(N, causal),
                                             banded(N, causal)))
    # uniform and sink were both rank one before centring; now one has no deviation and one a single spike
    assert u["rms_deviation"] == 0 < s["rms_deviation"]
    assert [x["n_outliers"] for x in (u, s, r)] == [0, 1, 0] and b["n_outliers"] > 1
    assert s["top_over_edge"] > b["top_over_edge"] > r["top_over_edge"]


def test_causal_identity_attention_is_not_mistaken_for_no_deviation_or_a_sink() -> None:
    m = stats(np.eye(N), True)
    assert m["rms_deviation"] > 1
    assert m["participation_ratio"] > 0.2 * N and m["relative_gap"] < 0.2


def test_spectra_cannot_say_which_key_is_the_sink() -> None:
    # singular values do not change when keys are relabelled: a sink on key 17 reads as one on key 0
    a, b = stats(sink(N, 0), False), stats(sink(N, 17), False)
    assert all(np.isclose(a[k], b[k], atol=0.02, equal_nan=True) for k in rmt.CORRECTED_METRICS)  # KS: round-off


def test_sink_plus_noise_keeps_one_outlier() -> None:
    for causal in (False, True):
        m = stats(0.3 * sink(N) + 0.7 * random_softmax(N, causal), causal)
        assert m["n_outliers"] == 1 and m["relative_gap"] > 0.8


def test_full_mask_null_is_marchenko_pastur_at_ratio_one() -> None:
    null = rmt.noise_null(128, False)
    assert null.edge == pytest.approx(4.0, rel=0.08)  # MP edge (1 + sqrt(1))^2 at unit scale
    grid = np.sort(null.pooled)
    assert np.abs(rmt.mp_cdf(grid, 1.0) - np.arange(1, grid.size + 1) / grid.size).max() < 0.05
    assert null.cut > null.edge


def test_causal_null_is_not_marchenko_pastur() -> None:
    # a lower-triangular noise matrix has a longer tail than MP (edge e / (mean 1/2) = 2e against 4)
    assert rmt.noise_null(128, True).edge > 4.5


def test_null_is_deterministic() -> None:
    rmt.noise_null.cache_clear()
    a = rmt.noise_null(40, True)
    rmt.noise_null.cache_clear()
    assert np.array_equal(a.pooled, rmt.noise_null(40, True).pooled)


def test_batched_equals_one_at_a_time() -> None:
    mats = np.stack([uniform(20, True), sink(20), random_softmax(20, True), banded(20, True)])
    eig = rmt.deviation_spectra(mats, True)
    batched = rmt.deviation_metrics(eig, True)
    for i, a in enumerate(mats):
        one = stats(a, True)
        assert np.allclose(batched[i], [one[k] for k in rmt.CORRECTED_METRICS], equal_nan=True, rtol=1e-9), i


def test_too_small_matrices_are_undefined() -> None:
    assert np.isnan(rmt.deviation_metrics(rmt.deviation_spectra(sink(2)[None], True), True)).all()


@pytest.mark.parametrize("n", [8, 40, 128])
def test_uniform_first_token_share(n: int) -> None:
    # queries 1..n-1 (query 0 can only see itself); query i gives 1 / (i + 1) to key 0
    expected = np.mean([1 / (i + 1) for i in range(1, n)])
    assert uniform_first_token_share(n, True) == pytest.approx(expected, rel=1e-12)
    a = torch.from_numpy(uniform(n, True))[None, None]
    assert uniform_first_token_share(n, True) == pytest.approx(float(first_token_share(a, True)), rel=1e-6)
    assert uniform_first_token_share(n, False) == pytest.approx(1 / n)
    if n == 128:
        assert uniform_first_token_share(n, True) == pytest.approx(0.0349, abs=1e-4)
