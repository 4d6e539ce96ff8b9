"""Statistical checks for the chapters' assert-cells: theory against experiment with a stated tolerance.

A Monte-Carlo mean is compared with its closed form within ``k`` standard errors (plus an optional relative slack
for known O(1/N) approximations); a sample is compared with a closed-form law by a Kolmogorov-Smirnov test.  Each
check raises ``AssertionError`` with the numbers when it fails and returns a one-line report when it holds.
"""
from __future__ import annotations

import numpy as np
from scipy import stats


def mean_se(sample, axis=0):
    """Sample mean and its standard error along ``axis``."""
    x = np.asarray(sample, float)
    return x.mean(axis), x.std(axis, ddof=1) / np.sqrt(x.shape[axis])


def variance_se(variance, n):
    """Standard error of a sample variance of ``n`` Gaussian draws, ``variance * sqrt(2 / n)`` (its exact standard
    deviation is ``sigma^2 sqrt(2 / (n - 1))``; pass ``n - 1`` for that)."""
    return np.asarray(variance, float) * np.sqrt(2 / np.asarray(n, float))


def proportion_se(p, n):
    """Standard error of a proportion ``p`` estimated from ``n`` Bernoulli draws, ``sqrt(p (1 - p) / n)``."""
    p = np.asarray(p, float)
    return np.sqrt(p * (1 - p) / np.asarray(n, float))


def assert_close(empirical, theory, se, k: float = 5.0, rtol: float = 0.0, what: str = "value") -> str:
    """``|empirical - theory| <= k * se + rtol * |theory|`` elementwise."""
    empirical, theory, se = (np.asarray(v, float) for v in (empirical, theory, se))
    tol = k * se + rtol * np.abs(theory)
    gap = np.abs(empirical - theory)
    if not np.all(gap <= tol):
        worst = np.unravel_index(np.argmax(gap - tol), np.broadcast(gap, tol).shape) if gap.ndim else ()
        raise AssertionError(
            f"{what}: experiment {np.broadcast_to(empirical, gap.shape)[worst]:.6g} vs theory "
            f"{np.broadcast_to(theory, gap.shape)[worst]:.6g} differ by {gap[worst]:.3g} > tolerance "
            f"{np.broadcast_to(tol, gap.shape)[worst]:.3g} ({k} SE + {rtol} relative)"
        )
    return (f"{what}: agree within {k} SE{f' + {rtol:g} rel.' if rtol else ''} "
            f"(largest gap {np.max(gap / np.maximum(tol, 1e-300)):.2f} of the tolerance)")


def assert_below(empirical, bound, se, k: float = 5.0, what: str = "value") -> str:
    """``empirical <= bound + k * se`` elementwise (a bound that the experiment must respect)."""
    empirical, bound, se = (np.asarray(v, float) for v in (empirical, bound, se))
    if not np.all(empirical <= bound + k * se):
        excess = np.max(empirical - bound - k * se)
        raise AssertionError(f"{what}: experiment exceeds the bound by {excess:.3g} beyond {k} SE")
    return f"{what}: below the bound (within {k} SE) everywhere"


def assert_greater(high, low, se, k: float = 3.0, what: str = "value") -> str:
    """``high - low > k * se`` elementwise: an ordering that the noise of the experiment cannot explain (``se`` the
    standard error of the difference)."""
    high, low, se = (np.asarray(v, float) for v in (high, low, se))
    if not np.all(high - low > k * se):
        raise AssertionError(f"{what}: the difference {np.min(high - low):.3g} is not above {k} SE "
                             f"({np.max(k * se):.3g})")
    return f"{what}: greater by more than {k} SE"


def assert_fits(sample, cdf, alpha: float = 1e-3, what: str = "sample") -> float:
    """Kolmogorov-Smirnov test of ``sample`` against the CDF ``cdf``; fails when the p-value is below ``alpha``."""
    p = float(stats.kstest(np.asarray(sample, float).ravel(), cdf).pvalue)
    if p < alpha:
        raise AssertionError(f"{what}: KS test rejects the law (p = {p:.2e} < {alpha})")
    return p
