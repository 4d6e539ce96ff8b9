"""Every check behind the book's assert-cells, with a case that must pass and one that must fail, and the two
standard errors the notebooks use."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from compendium import checks


def test_mean_se_is_sample_sd_over_root_n():
    mean, se = checks.mean_se([1.0, 2.0, 3.0, 4.0])
    assert mean == 2.5 and se == pytest.approx(np.std([1, 2, 3, 4], ddof=1) / 2, rel=1e-15)
    means, ses = checks.mean_se(np.array([[0.0, 1.0], [2.0, 1.0]]), axis=0)
    assert np.allclose(means, [1.0, 1.0]) and np.allclose(ses, [1.0, 0.0])


def test_variance_se_matches_the_spread_of_sample_variances():
    n, draws = 200, 20_000
    variances = np.random.default_rng(0).standard_normal((draws, n)).var(axis=1, ddof=1)
    assert checks.variance_se(1.0, n) == pytest.approx(np.sqrt(2 / n), rel=1e-15)
    assert variances.std() == pytest.approx(checks.variance_se(1.0, n - 1), rel=0.03)
    assert np.allclose(checks.variance_se(np.array([1.0, 4.0]), 8), [0.5, 2.0])


def test_proportion_se_matches_the_spread_of_proportions():
    p, n = 0.2, 400
    hits = np.random.default_rng(1).random((10_000, n)) < p
    assert checks.proportion_se(p, n) == pytest.approx(0.02, rel=1e-15)
    assert hits.mean(axis=1).std() == pytest.approx(checks.proportion_se(p, n), rel=0.03)
    assert checks.proportion_se(0.0, 10) == 0.0 and checks.proportion_se(1.0, 10) == 0.0


def test_assert_close_passes_within_k_se_and_fails_beyond():
    assert "agree within 5 SE" in checks.assert_close(1.04, 1.0, 0.01, k=5, what="x")
    with pytest.raises(AssertionError, match=r"x: experiment 1.06 vs theory 1 differ by 0.06 > tolerance 0.05"):
        checks.assert_close(1.06, 1.0, 0.01, k=5, what="x")


def test_assert_close_relative_slack_and_arrays():
    checks.assert_close([1.0, 2.09], [1.0, 2.0], 0.0, rtol=0.05)
    with pytest.raises(AssertionError, match="experiment 2.2 vs theory 2"):
        checks.assert_close([1.0, 2.2], [1.0, 2.0], 0.0, rtol=0.05)  # the worst element is named


def test_assert_greater_needs_more_than_k_standard_errors():
    assert "greater" in checks.assert_greater([2.0, 3.0], 1.0, 0.3, k=3)
    with pytest.raises(AssertionError, match="not above 3 SE"):
        checks.assert_greater([2.0, 1.8], 1.0, 0.3, k=3)


def test_assert_below_respects_the_bound_up_to_k_se():
    assert "below the bound" in checks.assert_below([0.9, 1.04], 1.0, 0.01, k=5)
    with pytest.raises(AssertionError, match="exceeds the bound by 0.01"):
        checks.assert_below([0.9, 1.06], 1.0, 0.01, k=5)


def test_assert_fits_accepts_the_true_law_and_rejects_a_shifted_one():
    sample = np.random.default_rng(2).standard_normal(5000)
    assert checks.assert_fits(sample, stats.norm.cdf) > 1e-3
    with pytest.raises(AssertionError, match="KS test rejects"):
        checks.assert_fits(sample + 0.1, stats.norm.cdf)
