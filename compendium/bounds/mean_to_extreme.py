"""Closed forms of Riess et al., "From Mean to Extreme: Formal Differential Privacy Bounds on the Success of
Real-World Data Reconstruction Attacks" (revised version of arXiv 2402.12861).

Setting (Corollary 1): the adversary replaces the network by one bias-free linear layer ``f(X) = W X`` with
``W`` of shape (M, N) and the loss ``c 1_M^T W X``, so every row of the weight gradient is ``c X``.  One DP-SGD step
(batch of one, clipping norm ``C``, noise multiplier ``sigma``) releases the M rows
``beta c X + N(0, C^2 sigma^2 I_N)`` with ``beta = min(1, C / (sqrt(M) |c| ||X||_2))``.  Knowing ``beta``
(assumption A*), the adversary averages the rows and divides by ``beta c``:

    ``X_hat ~ N(X, sigma^2 max(||X||^2, C^2 / (M c^2)) I_N)``   (eq. 17 with eq. 10's beta: reconstruction_variance)

which is ``N(X, sigma^2 ||X||^2 I_N)`` (eq. 20) once ``M c^2 >= (C / m)^2``, ``m`` the smallest non-zero norm in the
data set.  Averaging ``T`` matched releases (Proposition 7) replaces ``sigma^2`` by ``sigma^2 / T`` everywhere.

Arguments: ``norm`` is ``||X||_2`` of the target, ``min_norm`` is ``m``, ``N`` the data dimension, ``T`` the number
of averaged releases, ``data_range`` the PSNR range ``R``.  ``Gamma_R`` is the regularised *lower* incomplete gamma
function (``scipy.special.gammainc``).  Every probability is over the DP noise with ``X`` fixed.

Functions marked *[ours]* are corrections of, or exact laws beyond, the paper.  The privacy profile of eq. (3) is
``compendium.dp.gaussian_delta(eps, 1 / sigma)`` (mu-GDP with ``mu = 1 / sigma``); it is not repeated here.
Everything is numpy/scipy and vectorised over its array arguments.
"""
from __future__ import annotations

import numpy as np
from scipy import special, stats

from compendium import validation

from . import ziller2024

__all__ = [
    "optimal_rows", "optimal_rows_as_printed", "reconstruction_variance", "expected_mse", "mse_distribution",
    "mse_cdf", "rero_gamma_mse", "rero_gamma_mse_dp_only", "mse_threshold", "minimal_noise_multiplier",
    "asymptotic_normal_cdf", "psnr_success_probability", "rero_gamma_psnr", "psnr_mean", "psnr_sd",
    "ncc_limit", "ncc_bound", "ncc_rho", "ncc_cdf_exact", "shrinkage_factor", "shrinkage_expected_mse",
    "shrinkage_mse_distribution", "selection_probability", "selection_probability_as_printed",
]

# Relative slack when rounding C^2 / m^2 up to an integer: floating-point noise such as (3 * 0.1 / 0.1)^2 =
# 9.000000000000004 must not add a row.
_CEIL_RTOL = 1e-12


# ---------------------------------------------------------------------------------------------------------------
# Validated inputs (the rules and messages of compendium.validation)
# ---------------------------------------------------------------------------------------------------------------
def _scale(sigma, norm, T, norm_name: str = "norm", norm_what: str = "||X||_2 of the target") -> np.ndarray:
    """Validated per-coordinate variance of the (averaged) reconstruction, ``sigma^2 ||X||^2 / T``."""
    s = _float(validation.positive("sigma", sigma, what="noise multiplier"))
    n = _float(validation.positive(norm_name, norm, what=norm_what))
    t = _float(validation.number("T", T, at_least=1, what="number of averaged releases"))
    return s * s * n * n / t


def _float(value) -> np.ndarray:
    """A validated value as a float array (0-d for a scalar), so that every closed form computes in numpy."""
    return np.asarray(value, float)


def _dim(N) -> np.ndarray:
    return _float(validation.number("N", N, at_least=1, what="data dimension"))


def _scalar(x):
    """Python scalars for scalar results, arrays otherwise."""
    return x.item() if np.ndim(x) == 0 else x


# ---------------------------------------------------------------------------------------------------------------
# Proposition 1: the number of rows M
# ---------------------------------------------------------------------------------------------------------------
def optimal_rows(C, *, min_norm):
    """*[ours]* Corrected eq. (18): ``M* = max(1, ceil(C^2 / m^2))``, the fewest rows that clip every sample.

    With ``M >= M*`` the gradient norm ``sqrt(M) ||X||`` reaches ``C`` for every ``X`` with ``||X|| >= m``, and the
    variance of the reconstruction is the optimum ``sigma^2 ||X||^2``; more rows do not help.  The paper prints
    ``ceil(C / m)`` (:func:`optimal_rows_as_printed`), which leaves a variance ``C / m`` times too large (its own
    proof, eq. 48, Fig. 1 and Fig. 2 use the square).
    """
    c = _float(validation.positive("C", C, what="maximum gradient norm"))
    m = _float(validation.positive("min_norm", min_norm, what="smallest non-zero data norm m"))
    ratio = (c / m) ** 2
    out = np.maximum(1, np.ceil(ratio * (1 - _CEIL_RTOL))).astype(np.int64)
    return _scalar(out)


def optimal_rows_as_printed(C, *, min_norm):
    """Eq. (18) as printed: ``M = max(1, ceil(C / m))`` (kept to show the cost of the missing square)."""
    c = _float(validation.positive("C", C, what="maximum gradient norm"))
    m = _float(validation.positive("min_norm", min_norm, what="smallest non-zero data norm m"))
    out = np.maximum(1, np.ceil((c / m) * (1 - _CEIL_RTOL))).astype(np.int64)
    return _scalar(out)


def reconstruction_variance(sigma, *, norm, C, M=None, loss_scale=1.0):
    """Eq. (17) for the loss ``c 1_M^T W X``: per-coordinate variance ``sigma^2 max(||X||^2, C^2 / (M c^2))``.

    *[ours]* in this closed form (eq. 17 with the clipping factor of eq. 10): with
    ``beta = min(1, C / (sqrt(M) |c| ||X||))`` the variance
    ``sigma^2 C^2 / (M c^2 beta^2)`` of eq. (17) is ``sigma^2 C^2 / (M c^2)`` while unclipped and ``sigma^2 ||X||^2``
    once clipped (Proposition B.2's floor).  Only ``M c^2`` matters: one row with ``c >= C / m`` is as good as
    ``M*`` rows.  ``M=None`` means ``M >= M*`` (Proposition 1), i.e. ``sigma^2 ||X||^2`` (``C`` is then unused
    beyond its validation).
    """
    floor = _scale(sigma, norm, 1)
    c = _float(validation.positive("C", C, what="maximum gradient norm"))
    if M is None:
        return _scalar(floor)
    rows = _float(validation.integer("M", M, minimum=1, what="number of rows of the linear layer"))
    ls = _float(validation.number("loss_scale", loss_scale, what="loss scale c"))
    if not np.all(ls != 0):
        raise ValueError(f"loss_scale={loss_scale!r}; allowed: a finite non-zero number (loss scale c)")
    s = np.asarray(sigma, float)
    return _scalar(np.maximum(floor, s * s * c * c / (rows * ls * ls)))


# ---------------------------------------------------------------------------------------------------------------
# Proposition 2, Theorem 2, Propositions B.3 and 3: the MSE
# ---------------------------------------------------------------------------------------------------------------
def expected_mse(*, sigma, norm, T=1):
    """Proposition 2, eq. (21), with Proposition 7: ``E[MSE] = sigma^2 ||X||^2 / T`` (the MVUE's MSE)."""
    return _scalar(_scale(sigma, norm, T))


def mse_distribution(*, N, sigma, norm, T=1):
    """Theorem 2, eq. (22): ``MSE = sigma^2 ||X||^2 / (N T) * Y``, ``Y ~ chi^2_N``, as a frozen scipy law.

    Equivalently Gamma(shape N/2, scale ``2 sigma^2 ||X||^2 / (N T)``); mean ``sigma^2 ||X||^2 / T``, variance
    ``2 sigma^4 ||X||^4 / (N T^2)``.
    """
    n = _dim(N)
    return stats.chi2(n, scale=_scale(sigma, norm, T) / n)


def mse_cdf(eta, *, N, sigma, norm, T=1):
    """Theorem 2, eq. (23): ``P(MSE <= eta) = Gamma_R(N/2, N eta T / (2 sigma^2 ||X||^2))`` (0 for ``eta <= 0``)."""
    n = _dim(N)
    x = n * np.maximum(np.asarray(eta, float), 0.0) / (2.0 * _scale(sigma, norm, T))
    return _scalar(special.gammainc(n / 2.0, x))


def rero_gamma_mse(eta, *, N, sigma, min_norm, T=1):
    """Proposition 3, eq. (24): ``gamma(eta) = Gamma_R(N/2, N eta T / (2 sigma^2 m^2))``.

    Bounds ``P(MSE <= eta)`` of the optimal *unbiased* reconstruction for every ``X`` with ``||X|| >= m`` (eq. 23 is
    decreasing in ``||X||``).  The paper's "for any reconstruction" (eq. 60) is false for biased estimators: see
    :func:`shrinkage_mse_distribution`.
    """
    validation.positive("min_norm", min_norm, what="smallest non-zero data norm m")
    return mse_cdf(eta, N=N, sigma=sigma, norm=min_norm, T=T)


def rero_gamma_mse_dp_only(eta, *, N, sigma, C, T=1):
    """Proposition 3, variant for ``C <= m``: ``gamma'(eta) = Gamma_R(N/2, N eta T / (2 sigma^2 C^2))``.

    Looser than :func:`rero_gamma_mse` (``gamma' >= gamma``) but depends on the DP parameters only.  Valid only if
    ``C`` does not exceed the smallest data norm, which this function cannot check.
    """
    validation.positive("C", C, what="maximum gradient norm")
    return mse_cdf(eta, N=N, sigma=sigma, norm=C, T=T)


def mse_threshold(gamma, *, N, sigma, norm, T=1):
    """*[ours]* Inverse of eq. (23): ``eta(gamma) = sigma^2 ||X||^2 F^{-1}_{chi^2_N}(gamma) / (N T)``.

    The MSE that the reconstruction reaches with probability exactly ``gamma``; with ``norm = m`` the threshold of
    an ``(eta, gamma)``-ReRo statement (Proposition 3).
    """
    g = _float(validation.probability("gamma", gamma))
    n = _dim(N)
    return _scalar(_scale(sigma, norm, T) * stats.chi2(n).ppf(g) / n)


def minimal_noise_multiplier(gamma, *, eta, N, norm, T=1):
    """*[ours]* Calibration from Proposition 3: the smallest ``sigma`` with ``P(MSE <= eta) <= gamma``.

    ``P(MSE <= eta)`` decreases in ``sigma``, so the answer solves eq. (23) with equality:
    ``sigma = sqrt(N eta T / (||X||^2 F^{-1}_{chi^2_N}(gamma)))``.  With ``norm = m`` it protects every sample of the
    data set against the optimal unbiased reconstruction.
    """
    g = _float(validation.probability("gamma", gamma))
    e = _float(validation.positive("eta", eta, what="MSE threshold"))
    n = _dim(N)
    nrm = _float(validation.positive("norm", norm, what="||X||_2 of the target"))
    t = _float(validation.number("T", T, at_least=1, what="number of averaged releases"))
    return _scalar(np.sqrt(n * e * t / (nrm * nrm * stats.chi2(n).ppf(g))))


def asymptotic_normal_cdf(eta, *, N, sigma, norm, T=1):
    """Proposition B.3, eq. (57): ``P(MSE <= eta) ~ Phi(sqrt(N) (eta - E) / (sqrt(2) E))``, ``E = sigma^2 ||X||^2 / T``.

    The CLT approximation of :func:`mse_cdf`; the standardised MSE has skewness ``sqrt(8 / N)``, so it is accurate
    only for large ``N``.
    """
    n = _dim(N)
    E = _scale(sigma, norm, T)
    return _scalar(special.ndtr(np.sqrt(n) * (np.asarray(eta, float) - E) / (np.sqrt(2.0) * E)))


# ---------------------------------------------------------------------------------------------------------------
# Propositions 4 and 5: the PSNR
# ---------------------------------------------------------------------------------------------------------------
def _mse_of_psnr(eta_db, data_range) -> np.ndarray:
    """Eq. (62): ``PSNR >= eta`` iff ``MSE <= R^2 10^(-eta/10)``."""
    r = _float(validation.positive("data_range", data_range, what="PSNR data range R"))
    return r * r * 10.0 ** (-np.asarray(eta_db, float) / 10.0)


def psnr_success_probability(eta_db, *, N, sigma, norm, data_range, T=1):
    """Exact ``P(PSNR >= eta) = Gamma_R(N/2, N R^2 10^(-eta/10) T / (2 sigma^2 ||X||^2))`` (eqs. 62-63 before m).

    ``R`` is the data range the PSNR is computed with (per-target range of Definition 4, or a nominal range).
    """
    return mse_cdf(_mse_of_psnr(eta_db, data_range), N=N, sigma=sigma, norm=norm, T=T)


def rero_gamma_psnr(eta_db, *, N, sigma, min_norm, data_range, T=1):
    """Propositions 4-5, eqs. (25)/(27): ``P(PSNR >= eta) <= Gamma_R(N/2, N R_D^2 10^(-eta/10) T / (2 sigma^2 m^2))``.

    ``data_range`` is ``R_D`` (global data range), or the nominal range when the PSNR uses one.  For ``C <= m``
    pass ``min_norm=C`` for eq. (26).  Same caveat as Proposition 3: a bound for the optimal unbiased reconstruction.
    """
    validation.positive("min_norm", min_norm, what="smallest non-zero data norm m")
    return psnr_success_probability(eta_db, N=N, sigma=sigma, norm=min_norm, data_range=data_range, T=T)


def psnr_mean(N, *, sigma, norm, data_range, T=1):
    """*[ours]* ``E[PSNR] = 10 log10(N R^2 T / (sigma^2 ||X||^2)) - 10/ln 10 (psi(N/2) + ln 2)`` dB.

    From ``PSNR = 10 log10(N R^2 T / (sigma^2 ||X||^2)) - 10 log10 Y``, ``Y ~ chi^2_N`` (Theorem 2).
    """
    n = _dim(N)
    r = _float(validation.positive("data_range", data_range, what="PSNR data range R"))
    a = 10.0 * np.log10(n * r * r / _scale(sigma, norm, T))
    return _scalar(a - 10.0 / np.log(10.0) * (special.digamma(n / 2.0) + np.log(2.0)))


def psnr_sd(N):
    """*[ours]* ``sd[PSNR] = 10/ln 10 sqrt(psi'(N/2))`` dB, free of sigma, ``||X||``, R and T (the sd of ``10 log10 Y``,
    ``Y ~ chi^2_N``, by Theorem 2)."""
    n = _dim(N)
    return _scalar(10.0 / np.log(10.0) * np.sqrt(special.polygamma(1, n / 2.0)))


# ---------------------------------------------------------------------------------------------------------------
# Proposition 6 and its exact extension: the NCC
# ---------------------------------------------------------------------------------------------------------------
def ncc_limit(sigma, *, norm, variance, T=1):
    """Proposition 6, eq. (28) (equality): ``NCC = (1 + sigma^2 ||X||^2 / (T Var x))^(-1/2)``.

    ``variance`` is the empirical (ddof = 0) variance of the target's entries.  This is the large-N value of the
    sample NCC, not a bound on it (Remark B.1 warns of the covariance term; the chapter shows the sample NCC above
    it at small N); the exact law is :func:`ncc_cdf_exact`.
    """
    v = _float(validation.positive("variance", variance, what="variance of the target's entries"))
    return _scalar(1.0 / np.sqrt(1.0 + _scale(sigma, norm, T) / v))


def ncc_bound(N, *, sigma, T=1):
    """Proposition 6, eq. (28) (bound): ``NCC <= (1 + sigma^2 N / T)^(-1/2)``, since ``Var x <= ||X||^2 / N``."""
    n = _dim(N)
    s = _float(validation.positive("sigma", sigma, what="noise multiplier"))
    t = _float(validation.number("T", T, at_least=1, what="number of averaged releases"))
    return _scalar(1.0 / np.sqrt(1.0 + s * s * n / t))


def ncc_rho(sigma, *, norm, variance, N, T=1):
    """*[ours]* Signal-to-noise ratio of the sample NCC: ``rho = sqrt(N Var x) / (sigma ||X|| / sqrt(T))``.

    ``rho <= sqrt(T) / sigma``; eq. (28) is ``rho / sqrt(rho^2 + N)``.
    """
    n = _dim(N)
    v = _float(validation.positive("variance", variance, what="variance of the target's entries"))
    return _scalar(np.sqrt(n * v / _scale(sigma, norm, T)))


def ncc_cdf_exact(t, *, N, rho):
    """*[ours]* Exact CDF of the sample NCC of Proposition B.4 (eq. 66), ``N >= 3``.

    ``NCC = tau / sqrt(tau^2 + N - 2)`` with ``tau`` non-central t (``N - 2`` degrees of freedom, non-centrality
    ``rho`` from :func:`ncc_rho`), so ``P(NCC <= t) = F_{t'(N-2, rho)}(t sqrt((N-2)/(1-t^2)))``.  The same law as in
    Ziller et al. (2024) (:func:`compendium.bounds.ziller2024.ncc_cdf_exact`); decreasing in ``rho``, hence
    ``rho = sqrt(T) / sigma`` gives a data-independent tail bound ``P(NCC >= t)`` (contrary to the paper's section 6).
    """
    return ziller2024.ncc_cdf_exact(t, N=N, a=rho)


# ---------------------------------------------------------------------------------------------------------------
# Theorem 1 counterexample: linear shrinkage beats the MVUE
# ---------------------------------------------------------------------------------------------------------------
def shrinkage_factor(N, *, sigma, T=1):
    """*[ours]* The MSE-optimal scalar ``a`` for ``a X_hat``: ``a = 1 / (1 + N sigma^2 / T)`` (against Theorem 1).

    ``E[MSE(X, a X_hat)] = ((1 - a)^2 + a^2 N sigma^2 / T) ||X||^2 / N`` is minimised by this ``a`` for every
    ``X`` at once (the noise variance is proportional to ``||X||^2``), and it uses only public ``N``, ``sigma``, ``T``.
    """
    n = _dim(N)
    s = _float(validation.positive("sigma", sigma, what="noise multiplier"))
    t = _float(validation.number("T", T, at_least=1, what="number of averaged releases"))
    return _scalar(1.0 / (1.0 + n * s * s / t))


def shrinkage_expected_mse(sigma, *, norm, N, T=1):
    """*[ours]* ``E[MSE(X, a X_hat)] = sigma^2 ||X||^2 / (T + N sigma^2) < sigma^2 ||X||^2 / T`` (against
    Theorem 1).

    Strictly below the MVUE's :func:`expected_mse` for every ``X != 0``: Theorem 1 ("best achievable estimator")
    holds only among unbiased estimators.
    """
    v = _scale(sigma, norm, T)
    a = np.asarray(shrinkage_factor(N, sigma=sigma, T=T), float)
    return _scalar(a * v)


def shrinkage_mse_distribution(N, *, sigma, norm, T=1):
    """*[ours]* Law of ``MSE(X, a X_hat)`` with ``a`` from :func:`shrinkage_factor`, as a frozen scipy law.

    ``a X_hat - X ~ N(-(1 - a) X, a^2 sigma^2 ||X||^2 / T I_N)``, so ``MSE = a^2 sigma^2 ||X||^2 / (N T) * Y`` with
    ``Y ~ chi'^2_N(lambda)``, ``lambda = (1 - a)^2 T / (a^2 sigma^2) = N^2 sigma^2 / T`` (free of ``X``).  Its CDF
    exceeds Proposition 3's ``gamma(eta)`` near ``E[MSE(X_hat)]``: the shrunk reconstruction violates
    Proposition 3's "for any reconstruction" (Monte Carlo in the chapter and in the unit tests).
    """
    n = _dim(N)
    v = _scale(sigma, norm, T)
    a = np.asarray(shrinkage_factor(N, sigma=sigma, T=T), float)
    s, t = np.asarray(sigma, float), np.asarray(T, float)
    return stats.ncx2(n, n * n * s * s / t, scale=a * a * v / n)


# ---------------------------------------------------------------------------------------------------------------
# Proposition 7: how often is a target selected?
# ---------------------------------------------------------------------------------------------------------------
def _selection_args(k, K, dataset_size):
    kk = _float(validation.integer("k", k, minimum=0, what="number of selections"))
    KK = _float(validation.integer("K", K, minimum=0, what="number of attacked steps"))
    D = _float(validation.integer("dataset_size", dataset_size, minimum=1, what="number of records |D|"))
    return kk, KK, D


def _log_comb(K, k):
    return special.gammaln(K + 1) - special.gammaln(k + 1) - special.gammaln(K - k + 1)


def selection_probability(k, *, K, dataset_size):
    """*[ours]* ``P(target selected exactly k times in K steps) = Binom(K, 1/|D|).pmf(k)`` (one record per step).

    Corrects the expression printed in section 4.3 (:func:`selection_probability_as_printed`), which omits the
    factor ``(1 - 1/|D|)^(K - k)``.
    """
    kk, KK, D = _selection_args(k, K, dataset_size)
    return _scalar(stats.binom.pmf(kk, KK, 1.0 / D))


def selection_probability_as_printed(k, *, K, dataset_size):
    """Section 4.3 as printed: ``binom(K, k) / |D|^k``; a union bound on ``P(>= k selections)`` that can exceed 1.

    ``(k, K, |D|) = (10, 10^4, 1000)`` gives 2743.36, while the exact probability is 0.125173.
    """
    kk, KK, D = _selection_args(k, K, dataset_size)
    with np.errstate(invalid="ignore"):
        out = np.where(kk <= KK, np.exp(_log_comb(KK, np.minimum(kk, KK)) - kk * np.log(D)), 0.0)
    return _scalar(out)
