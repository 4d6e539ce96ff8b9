"""Closed forms of Ziller et al. (2024), "Bounding reconstruction attack success of adversaries without data priors".

Setting (eqs. 1-3): the adversary makes the model a bias-free linear layer whose loss is its output, so the weight
gradient *is* the input ``X`` (N values).  One DP-SGD step with clipping norm ``C`` and noise multiplier ``sigma``
releases ``X_hat = beta * X + xi`` with ``beta = min(1, C / ||X||_2)`` and ``xi ~ N(0, C^2 sigma^2 I_N)``; averaging
``T`` linked releases replaces ``sigma^2`` by ``sigma^2 / T`` (Proposition 4).  Every expectation below is over the
noise with ``X`` fixed.

Functions marked *[ours]* are corrections or exact laws that the paper does not give; the chapter shows why they are
needed.  Everything is numpy/scipy and vectorised over its array arguments.
"""
from __future__ import annotations

import numpy as np
from scipy import special, stats

from compendium import validation

__all__ = [
    "clip_factor", "expected_mse", "expected_mse_decomposition", "mse_lower_bound", "psnr_upper_bound",
    "psnr_jensen_gap", "expected_psnr_exact",
    "ncc_snr", "ncc_eq7", "ncc_bound_dim", "ncc_bound_free", "ncc_cdf_exact", "ncc_mean_exact",
    "mse_noncentrality", "mse_distribution", "rero_gamma_mse", "mse_threshold", "psnr_cdf_prop7", "rero_gamma_psnr",
    "worst_case_success", "table1_rows", "table1_row",
]


# Input rules (compendium.validation; scalars or arrays, checked elementwise).  The values are only checked: every
# function computes with its arguments as given.
def _check_C(C) -> None:
    validation.positive("C", C, what="maximum gradient norm")


def _check_sigma(sigma) -> None:
    validation.positive("sigma", sigma, what="noise multiplier")


def _check_T(T) -> None:
    validation.number("T", T, at_least=1, what="number of averaged steps")


def _flat(X) -> np.ndarray:
    """(batch, N) float64 view of one sample or a batch of samples (any trailing shape)."""
    X = np.asarray(X, dtype=float)
    return X.reshape(1, -1) if X.ndim == 1 else X.reshape(X.shape[0], -1)


def clip_factor(X, *, C):
    """Eq. (3): ``beta = 1 / max(1, ||X||_2 / C) = min(1, C / ||X||_2)`` per sample (rows of a batch)."""
    _check_C(C)
    norm = np.linalg.norm(_flat(X), axis=1)
    beta = 1.0 / np.maximum(1.0, norm / C)
    return beta if np.ndim(X) > 1 else float(beta[0])


def expected_mse(X, *, C, sigma, T=1):
    """Proposition 1, eq. (4): ``E[MSE] = (1 - beta)^2 / N * sum_i x_i^2 + C^2 sigma^2 / T``.

    Equivalently ``max(0, ||X|| - C)^2 / N + C^2 sigma^2 / T``: the squared clipping bias plus the noise variance.
    """
    _check_C(C)
    _check_sigma(sigma)
    _check_T(T)
    x = _flat(X)
    n = x.shape[1]
    out = np.maximum(0.0, np.linalg.norm(x, axis=1) - C) ** 2 / n + mse_lower_bound(C, sigma=sigma, T=T)
    return out if np.ndim(X) > 1 else float(out[0])


def expected_mse_decomposition(X, *, C, sigma, T=1):
    """Remark 2: ``E[MSE] = ((1 - beta) mean X)^2 + (1 - beta)^2 Var X + C^2 sigma^2 / T``.

    Returns the three terms (squared bias of the mean, scaled data variance, noise variance); their sum is
    :func:`expected_mse`.  Mean and variance are empirical over the N coordinates of each sample.
    """
    _check_C(C)
    _check_sigma(sigma)
    _check_T(T)
    x = _flat(X)
    shrink = 1.0 - clip_factor(x, C=C)
    parts = ((shrink * x.mean(axis=1)) ** 2, shrink**2 * x.var(axis=1),
             np.broadcast_to(mse_lower_bound(C, sigma=sigma, T=T), shrink.shape))
    return tuple(p if np.ndim(X) > 1 else float(p[0]) for p in parts)


def mse_lower_bound(C, *, sigma, T=1):
    """Proposition 1, eq. (5), with Proposition 4: ``E[MSE] >= C^2 sigma^2 / T`` (equality iff ``||X|| <= C``)."""
    _check_C(C)
    _check_sigma(sigma)
    _check_T(T)
    return np.asarray(C, float) ** 2 * np.asarray(sigma, float) ** 2 / np.asarray(T, float)


def psnr_upper_bound(C, *, sigma, T=1, mean_sq_range=1.0):
    """Proposition 2, eq. (6), as printed: ``E[PSNR] <= 10 log10(E[(max X - min X)^2] / (C^2 sigma^2 / T))`` dB.

    ``mean_sq_range`` is ``E[R^2]``, the mean squared dynamic range of the data (1 for Table 1).  The paper's proof
    swaps an expectation of a ratio for a ratio of expectations; the bound is exceeded by
    :func:`psnr_jensen_gap` (see :func:`expected_psnr_exact`).
    """
    return 10.0 * np.log10(np.asarray(mean_sq_range, float) / mse_lower_bound(C, sigma=sigma, T=T))


def psnr_jensen_gap(N):
    """*[ours]* ``Delta_N = 10/ln 10 * (ln(N/2) - psi(N/2))`` dB, about ``4.343 / N``.

    Without clipping ``MSE = C^2 sigma^2 / N * chi^2_N`` and ``E ln chi^2_N = psi(N/2) + ln 2``, so the exact expected
    PSNR is the printed bound (6) plus ``Delta_N`` > 0: eq. (6) is not an upper bound.  With clipping the MSE is
    stochastically larger, so ``(6) + Delta_N`` is a valid bound for every ``X``.
    """
    validation.number("N", N, at_least=1, what="data dimension")
    N = np.asarray(N, float)
    return 10.0 / np.log(10.0) * (np.log(N / 2.0) - special.digamma(N / 2.0))


def expected_psnr_exact(data_range, *, N, C, sigma, T=1):
    """*[ours]* Exact ``E[PSNR]`` of an unclipped sample with dynamic range ``R``:
    ``10 log10(R^2 T/(C^2 sigma^2)) + Delta_N``."""
    return psnr_upper_bound(C, sigma=sigma, T=T, mean_sq_range=np.asarray(data_range, float) ** 2) + psnr_jensen_gap(N)


def ncc_snr(X, *, C, sigma, T=1):
    """*[ours]* The signal-to-noise ratio ``a = ||beta (X - mean X)||_2 / (C sigma / sqrt(T))`` that drives the NCC.

    ``a <= sqrt(T) / sigma``, with equality iff ``X`` is centred and clipped (this is how bound (8) arises).
    """
    _check_C(C)
    _check_sigma(sigma)
    _check_T(T)
    x = _flat(X)
    beta = clip_factor(x, C=C)
    centred = np.linalg.norm(x - x.mean(axis=1, keepdims=True), axis=1)
    out = beta * centred * np.sqrt(T) / (C * sigma)
    return out if np.ndim(X) > 1 else float(out[0])


def ncc_eq7(X, *, C, sigma, T=1):
    """Proposition 3, eq. (7): ``beta sqrt(Var X) / sqrt(beta^2 Var X + C^2 sigma^2 / T)``.

    A plug-in (large-N) approximation of ``E[NCC]``, not an exact expectation; equal to ``a / sqrt(a^2 + N)`` with
    ``a`` from :func:`ncc_snr`.  The exact mean is :func:`ncc_mean_exact`.
    """
    a = np.asarray(ncc_snr(X, C=C, sigma=sigma, T=T), float)
    n = _flat(X).shape[1]
    out = a / np.sqrt(a * a + n)
    return out if np.ndim(X) > 1 else float(out)


def ncc_bound_dim(N, *, sigma, T=1):
    """Proposition 3, eq. (8): ``E[NCC] <= (1 + N sigma^2 / T)^(-1/2)`` (dimension-aware; attained by centred, clipped
    X)."""
    _check_sigma(sigma)
    _check_T(T)
    return 1.0 / np.sqrt(1.0 + np.asarray(N, float) * np.asarray(sigma, float) ** 2 / np.asarray(T, float))


def ncc_bound_free(sigma, *, T=1):
    """Proposition 3, eq. (9): ``E[NCC] <= (1 + sigma^2 / T)^(-1/2)``, free of the data and of N."""
    return ncc_bound_dim(1, sigma=sigma, T=T)


def ncc_cdf_exact(t, *, N, a):
    """*[ours]* Exact CDF of the NCC between ``X`` and ``X_hat`` for ``N >= 3``.

    Projecting the centred noise onto ``beta (X - mean X)`` and onto its orthogonal complement in the centred
    subspace gives ``NCC = (a + g) / sqrt((a + g)^2 + W)`` with ``g ~ N(0,1)``, ``W ~ chi^2_{N-2}`` independent, i.e.
    ``NCC = tau / sqrt(tau^2 + N - 2)`` with ``tau`` non-central t (``N - 2`` d.o.f., non-centrality ``a``).  Hence
    ``P(NCC <= t) = F_{t'(N-2, a)}(t sqrt((N-2)/(1-t^2)))``.  Replaces the paper's Proposition A.1 (eqs. 68-79).
    """
    validation.number("N", N, at_least=3, what="data dimension; the NCC is undefined below 3")
    t = np.clip(np.asarray(t, float), -1.0, 1.0)
    nu = np.asarray(N, float) - 2.0
    with np.errstate(divide="ignore"):
        arg = t * np.sqrt(nu / (1.0 - t * t))
    return stats.nct(nu, a).cdf(arg)


def ncc_mean_exact(N, *, a, n_hermite=120, n_quantiles=4000):
    """*[ours]* Exact ``E[NCC] = E[(a+g)/sqrt((a+g)^2 + W)]`` by Gauss-Hermite (g) x chi^2 quantile (W) quadrature.

    Accurate to about 1e-5 for N >= 10.  The data-independent maximum is ``ncc_mean_exact(N, a=sqrt(T)/sigma)``, which
    exceeds bound (8) by O(1/N) relative (Table 1, N = 10: 31.0 % instead of the printed 30.2 %).
    """
    validation.number("N", N, at_least=3, what="data dimension; the NCC is undefined below 3")
    g, w = np.polynomial.hermite_e.hermegauss(n_hermite)
    w = w / w.sum()
    q = stats.chi2(N - 2).ppf((np.arange(n_quantiles) + 0.5) / n_quantiles)
    scalar = np.ndim(a) == 0
    a = np.atleast_1d(np.asarray(a, float))
    u = a[:, None, None] + g[None, :, None]
    vals = np.einsum("h,ahq->a", w, u / np.sqrt(u * u + q[None, None, :])) / n_quantiles
    return float(vals[0]) if scalar else vals


def mse_noncentrality(X, *, C, sigma, T=1):
    """Proposition 5, eq. (11): ``lambda = (1 - beta)^2 / (C^2 sigma^2 / T) * sum_i x_i^2``."""
    _check_C(C)
    _check_sigma(sigma)
    _check_T(T)
    x = _flat(X)
    beta = clip_factor(x, C=C)
    out = (1 - beta) ** 2 * (x * x).sum(axis=1) / mse_lower_bound(C, sigma=sigma, T=T)
    return out if np.ndim(X) > 1 else float(out[0])


def mse_distribution(X, *, C, sigma, T=1):
    """Proposition 5: ``MSE = C^2 sigma^2 / (N T) * Y`` with ``Y ~ chi^2_N(lambda)``; returned as a frozen scipy law."""
    n = _flat(X).shape[1]
    lam = mse_noncentrality(X, C=C, sigma=sigma, T=T)
    scale = float(mse_lower_bound(C, sigma=sigma, T=T)) / n
    if np.all(np.asarray(lam) == 0):
        return stats.chi2(n, scale=scale)
    return stats.ncx2(n, lam, scale=scale)


def rero_gamma_mse(eta, *, N, C, sigma, T=1):
    """Proposition 6: ``P(MSE <= eta) <= gamma = P(N/2, N eta / (2 C^2 sigma^2 / T))`` (regularised lower gamma).

    The worst case is ``lambda = 0`` (no clipping): the central chi^2 variable of eq. (12) is stochastically
    *smaller* than the MSE (the paper writes the inequality the other way round).
    """
    return special.gammainc(np.asarray(N, float) / 2.0,
                            np.asarray(N, float) * np.asarray(eta, float)
                            / (2.0 * mse_lower_bound(C, sigma=sigma, T=T)))


def mse_threshold(gamma, *, N, C, sigma, T=1):
    """*[ours]* Inverse of Proposition 6: the MSE ``eta`` reached with probability at most ``gamma``."""
    validation.probability("gamma", gamma, what="success probability")
    g = np.asarray(gamma, float)
    return mse_lower_bound(C, sigma=sigma, T=T) / np.asarray(N, float) * stats.chi2(N).ppf(g)


def psnr_cdf_prop7(eta, *, N, C, sigma, data_range=1.0, T=1):
    """Proposition 7, eqs. (13)-(14): ``P(PSNR <= eta) = 1 - P(N/2, N eta_hat / (2 C^2 sigma^2/T))``,
    ``eta_hat = R^2 10^(-eta/10)``.  Exact without clipping; with clipping it is a lower bound on ``P(PSNR <= eta)``.
    Computed as the upper regularised gamma function ``Q(N/2, .)``, accurate in its own tail (no ``1 - P``).
    """
    eta_hat = np.asarray(data_range, float) ** 2 * 10.0 ** (-np.asarray(eta, float) / 10.0)
    x = np.asarray(N, float) * eta_hat / (2.0 * mse_lower_bound(C, sigma=sigma, T=T))
    return special.gammaincc(np.asarray(N, float) / 2.0, x)


def rero_gamma_psnr(eta, *, N, C, sigma, data_range=1.0, T=1):
    """*[ours]* Success-probability form of Proposition 7: ``P(PSNR >= eta) <= P(N/2, N eta_hat T / (2 C^2 sigma^2))``.

    ``PSNR >= eta`` iff ``MSE <= eta_hat = R^2 10^(-eta/10)``, so this is Proposition 6 (:func:`rero_gamma_mse`) at
    ``eta_hat``: the regularised lower gamma function itself, accurate far into its tail, where ``1 - cdf`` would
    round to 0.  It is From Mean to Extreme's Theorem 2 with the clipping bound ``C`` in place of the data norm.
    """
    _check_C(C)
    validation.positive("data_range", data_range, what="PSNR data range R")
    eta_hat = np.asarray(data_range, float) ** 2 * 10.0 ** (-np.asarray(eta, float) / 10.0)
    return rero_gamma_mse(eta_hat, N=N, C=C, sigma=sigma, T=T)


def worst_case_success(sigma, *, kappa, T=1):
    """Table 1, "worst-case success" (formula not printed in the paper; reconstructed, reproduces all 17 rows).

    ReRo bound of a mu-GDP mechanism with ``mu = sqrt(T) / sigma`` (add/remove adjacency; Dong et al. 2022;
    Hayes et al. 2023; Kaissis et al. 2023a): ``gamma = Phi(Phi^{-1}(kappa) + sqrt(T) / sigma)``, where ``kappa`` is
    the prior probability of a correct match by chance.
    """
    _check_sigma(sigma)
    _check_T(T)
    validation.probability("kappa", kappa, closed=True, what="prior success probability")
    k = np.asarray(kappa, float)
    return stats.norm.cdf(stats.norm.ppf(k) + np.sqrt(np.asarray(T, float)) / np.asarray(sigma, float))


# Table 1 of the paper, transcribed: (varying, sigma, C, N, T, kappa) and the printed
# (worst-case success, min E[MSE], max E[PSNR], max E[NCC]).
table1_rows = (
    ("baseline", 1.0, 1.0, 1e3, 1, 0.1, "38.9%", "1.0", "0.0", "3.2%"),
    ("sigma", 1e-4, 1.0, 1e3, 1, 0.1, "100.0%", "1.0e-08", "80.0", "100.0%"),
    ("sigma", 1e-2, 1.0, 1e3, 1, 0.1, "100.0%", "1.0e-04", "40.0", "95.3%"),
    ("sigma", 1e2, 1.0, 1e3, 1, 0.1, "10.2%", "1.0e+04", "-40.0", "0.0%"),
    ("sigma", 1e4, 1.0, 1e3, 1, 0.1, "10.0%", "1.0e+08", "-80.0", "0.0%"),
    ("C", 1.0, 1e-2, 1e3, 1, 0.1, "38.9%", "1.0e-04", "40.0", "3.2%"),
    ("C", 1.0, 10.0, 1e3, 1, 0.1, "38.9%", "1.0e+02", "-20.0", "3.2%"),
    ("C", 1.0, 1e4, 1e3, 1, 0.1, "38.9%", "1.0e+08", "-80.0", "3.2%"),
    ("N", 1.0, 1.0, 10, 1, 0.1, "38.9%", "1.0", "0.0", "30.2%"),
    ("N", 1.0, 1.0, 1e5, 1, 0.1, "38.9%", "1.0", "0.0", "0.3%"),
    ("N", 1.0, 1.0, 1e9, 1, 0.1, "38.9%", "1.0", "0.0", "0.0%"),
    ("T", 1.0, 1.0, 1e3, 10, 0.1, "97.0%", "0.1", "10.0", "10.0%"),
    ("T", 1.0, 1.0, 1e3, 1e5, 0.1, "100.0%", "1.0e-05", "50.0", "99.5%"),
    ("T", 1.0, 1.0, 1e3, 1e9, 0.1, "100.0%", "1.0e-09", "90.0", "100.0%"),
    ("kappa", 1.0, 1.0, 1e3, 1, 0.1, "38.9%", "1.0", "0.0", "3.2%"),
    ("kappa", 1.0, 1.0, 1e3, 1, 1e-5, "0.1%", "1.0", "0.0", "3.2%"),
    ("kappa", 1.0, 1.0, 1e3, 1, 1e-9, "0.0%", "1.0", "0.0", "3.2%"),
)


def table1_row(sigma, *, C, N, T, kappa) -> dict[str, float]:
    """One row of Table 1 recomputed (the chapter formats it at the paper's printed precision): the worst-case
    success, the smallest ``E[MSE]``, the largest ``E[PSNR]`` and the largest ``E[NCC]`` by bound (8), with our
    exact columns beside.

    Exact columns *[ours]*: the data-independent maximum of the exact ``E[NCC]`` (:func:`ncc_mean_exact` at
    ``a = sqrt(T)/sigma``) and the exact ``E[PSNR]`` of an unclipped sample of range 1 (bound + Delta_N).
    """
    ncc = float(ncc_bound_dim(N, sigma=sigma, T=T))
    psnr = float(psnr_upper_bound(C, sigma=sigma, T=T))
    return {
        "worst": float(worst_case_success(sigma, kappa=kappa, T=T)),
        "mse": float(mse_lower_bound(C, sigma=sigma, T=T)),
        "psnr": psnr,
        "ncc": ncc,
        "ncc_exact": float(ncc_mean_exact(int(N), a=np.sqrt(T) / sigma)) if N <= 1e6 else ncc,
        "psnr_exact": float(psnr + psnr_jensen_gap(N)),
    }
