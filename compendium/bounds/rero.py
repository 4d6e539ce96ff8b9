"""Reconstruction robustness (ReRo) of a prior-aware adversary, from a mechanism's trade-off function.

An adversary with a prior that guesses right with probability ``kappa`` by chance reconstructs the target with
probability at most

    ``gamma <= 1 - f(kappa)``                                                    (Hayes et al. 2023, Thm. 2)

where ``f`` is the mechanism's trade-off function (the smallest type-II error of any test between "the target was
in the data" and "it was not" at type-I error ``alpha``; Dong et al. 2022).  Ziller et al. (2024, Table 1) and From
Mean to Extreme use it with the Gaussian trade-off of full-batch DP-SGD,
``G_mu(alpha) = Phi(Phi^{-1}(1 - alpha) - mu)``, ``mu = sqrt(T) / sigma``
(:func:`compendium.bounds.ziller2024.worst_case_success`).  This module adds what real DP-SGD needs:

* :func:`subsampled_gaussian_tradeoff`: the trade-off function of the Poisson-subsampled Gaussian mechanism
  (sampling rate ``q``, noise multiplier ``sigma``) composed ``T`` times, computed from its privacy-loss
  distribution, discretised and composed by FFT with opacus' PRV machinery (Gopi et al. 2021).  It returns the
  Neyman-Pearson curve of the discretised privacy loss (the estimate) and a certified lower envelope from the
  privacy profile with opacus' error guarantee (``delta_true(eps) <= delta_disc(eps - eps_error) + delta_error``),
  converted by ``f(alpha) = sup_eps max(0, 1 - delta(eps) - e^eps alpha, e^-eps (1 - delta(eps) - alpha))``;
* :func:`rero_bound_subsampled`: ``1 - f(kappa)`` from it, estimate and certified upper bound;
* :func:`rero_bound_edgeworth`: the approximation of From Mean to Extreme's code (``rero_bound_sgm``): the
  Edgeworth expansion of the composed privacy loss (Zheng et al. 2020), which needs ``T >= 30``;
* :func:`rero_bound_glrt`: the generalised likelihood-ratio test against a d-dimensional Gaussian mechanism
  (Kaissis et al. 2023; the authors' ``rero_bound_glrt_without_subsampling``);
* :func:`minimal_noise_multiplier_subsampled`: the smallest ``sigma`` keeping the certified bound below a target.

The privacy loss is that of the "remove" pair ``P = N(0, sigma^2)``, ``Q = (1 - q) N(0, sigma^2) + q N(1, sigma^2)``
(sensitivity 1), the pair opacus' accountants use; the trade-off function is symmetrised (``min(f, f^{-1})``), so the
bound holds for adding and for removing the target.
"""
from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass

import numpy as np
from scipy import integrate, optimize, stats
from scipy.fft import next_fast_len

from compendium import checks, validation

__all__ = ["SubsampledGaussianTradeoff", "gaussian_tradeoff", "rero_bound", "subsampled_gaussian_tradeoff",
           "rero_bound_subsampled", "likelihood_ratio_power", "rero_bound_edgeworth",
           "rero_bound_glrt", "minimal_noise_multiplier_subsampled"]


def gaussian_tradeoff(alpha, *, mu):
    """``G_mu(alpha) = Phi(Phi^{-1}(1 - alpha) - mu)``, the trade-off function of ``mu``-GDP (Dong et al. 2022)."""
    a = validation.probability("alpha", alpha, closed=True)
    mu = validation.number("mu", mu, at_least=0.0)
    return stats.norm.cdf(stats.norm.isf(a) - mu)


def rero_bound(tradeoff, kappa):
    """``gamma = 1 - f(kappa)``: the largest success probability of a reconstruction adversary whose prior alone
    succeeds with probability ``kappa``, against a mechanism with trade-off function ``f`` (a callable)."""
    k = validation.probability("kappa", kappa, closed=True)
    return 1.0 - tradeoff(k)


# ---------------------------------------------------------------------------------------------------------------
# the exact trade-off function of the Poisson-subsampled Gaussian mechanism
# ---------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SubsampledGaussianTradeoff:
    """The trade-off function of T compositions of the Poisson-subsampled Gaussian mechanism.

    ``alpha``, ``beta``: the Neyman-Pearson curve of the discretised privacy loss L = log(Q/P) (thresholds on the
    grid ``loss``; between them the randomised tests interpolate linearly); ``eps``, ``delta``: the privacy profile of
    the discretised loss on the same grid; ``eps_error``, ``delta_error``: opacus' discretisation guarantee.
    Call :meth:`estimate` for ``min(f, f^{-1})`` of the discretised loss and :meth:`certified` for the lower
    envelope that holds for the exact mechanism."""

    noise_multiplier: float
    sample_rate: float
    steps: int
    loss: np.ndarray
    alpha: np.ndarray
    beta: np.ndarray
    eps: np.ndarray
    delta: np.ndarray
    eps_error: float
    delta_error: float

    def estimate(self, alpha):
        """``min(f(alpha), f^{-1}(alpha))`` of the discretised privacy loss (vectorised over ``alpha``)."""
        a = np.asarray(alpha, float)
        # alpha decreases and beta increases along the threshold grid; np.interp needs increasing abscissae
        f = np.interp(a, self.alpha[::-1], self.beta[::-1])
        f_inverse = np.interp(a, self.beta, self.alpha)
        return np.minimum(f, f_inverse)

    def certified(self, alpha):
        """A trade-off function below the exact mechanism's: the conversion of the privacy profile
        ``delta(eps) <= delta_disc(eps - eps_error) + delta_error`` (eps >= 0) into
        ``sup_eps max(0, 1 - delta(eps) - e^eps alpha, e^-eps (1 - delta(eps) - alpha))``."""
        a = np.atleast_1d(np.asarray(alpha, float))
        keep = self.eps + self.eps_error >= 0
        eps = self.eps[keep] + self.eps_error
        one_minus_delta = 1.0 - np.minimum(1.0, self.delta[keep] + self.delta_error)
        out = np.empty_like(a)
        with np.errstate(over="ignore"):
            exp_eps = np.exp(eps)  # inf for huge eps: that term is then -inf and drops out of the max
        for i, ai in enumerate(a):  # one pass over the profile per alpha (a few alphas per call)
            out[i] = max(0.0, np.max(np.maximum(one_minus_delta - exp_eps * ai,
                                                np.exp(-eps) * (one_minus_delta - ai))))
        return out.reshape(np.shape(alpha))


def subsampled_gaussian_tradeoff(*, noise_multiplier: float, sample_rate: float, steps: int,
                                 eps_error: float = 1e-3, delta_error: float = 1e-10) -> SubsampledGaussianTradeoff:
    """The trade-off function of ``steps`` compositions of the Poisson-subsampled Gaussian mechanism, from its
    privacy-loss distribution (opacus' PRV discretisation and FFT composition; Gopi et al. 2021).

    The grid's mesh follows opacus' rule from ``eps_error`` and ``delta_error`` (smaller errors: a finer grid, more
    memory and time; the defaults take well under a second for T = 1000)."""
    from opacus.accountants.analysis.prv import (Domain, PoissonSubsampledGaussianPRV,
                                                 TruncatedPrivacyRandomVariable, compose_heterogeneous,
                                                 compute_safe_domain_size, discretize)

    sigma = validation.positive("noise_multiplier", noise_multiplier)
    q = validation.number("sample_rate", sample_rate, above=0.0, at_most=1.0, what="Poisson sampling rate q")
    T = validation.integer("steps", steps)
    eps_error = validation.positive("eps_error", eps_error)
    delta_error = validation.probability("delta_error", delta_error)

    prv = PoissonSubsampledGaussianPRV(q, sigma)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # log(1 - q) = -inf at q = 1, and the RDP accountant's optimal-order notes
        L = compute_safe_domain_size([prv], [T], eps_error=eps_error, delta_error=delta_error)
        mesh = eps_error / np.sqrt(T * np.log(12 / delta_error) / 2)  # opacus' PRVAccountant._get_domain
        domain = Domain.create_aligned(-L, L, mesh)
        # Widen the grid to the next length the FFT handles fast (an awkward length with a large prime factor
        # costs several times more); a symmetric aligned grid of that even length is create_aligned's shape.
        fast = next_fast_len(domain.size, real=True)
        fast += fast % 2
        if fast != domain.size:
            domain = Domain.create_aligned(-(fast / 2 - 1) * domain.dt, (fast / 2 - 1) * domain.dt, domain.dt)
        composed = compose_heterogeneous([discretize(TruncatedPrivacyRandomVariable(prv, -L, L), domain)], [T])
    t, p = composed.domain.ts, np.clip(composed.pmf, 0.0, None)  # FFT round-off leaves tiny negative masses
    p = p / p.sum()
    tail_q = np.flip(np.flip(p).cumsum())                   # Q(L >= t_i)
    tail_p = np.flip(np.flip(p * np.exp(-t)).cumsum())      # P(L >= t_i) = E_Q[e^-L; L >= t_i]
    alpha = np.append(np.minimum(tail_p, 1.0), 0.0)         # the test "reject when L >= t_i", and "never reject"
    beta = np.append(1.0 - tail_q, 1.0)
    with np.errstate(over="ignore", invalid="ignore"):  # e^t overflows only where tail_p is 0
        delta = np.nan_to_num(np.maximum(tail_q - np.exp(t) * tail_p, 0.0), nan=0.0)  # hockey-stick at eps = t_i
    return SubsampledGaussianTradeoff(sigma, q, T, t, alpha, beta, t, delta, eps_error, delta_error)


def rero_bound_subsampled(kappa, *, noise_multiplier: float, sample_rate: float, steps: int,
                          eps_error: float = 1e-3, delta_error: float = 1e-10) -> tuple[np.ndarray, np.ndarray]:
    """``(estimate, certified)`` ReRo bounds ``1 - f(kappa)`` of DP-SGD with Poisson sampling rate ``q``, noise
    multiplier ``sigma`` and ``T`` steps (see :func:`subsampled_gaussian_tradeoff`).  ``certified - estimate`` is the
    numerical error the discretisation may have; the exact value lies below ``certified``."""
    k = validation.probability("kappa", kappa, closed=True)
    curve = subsampled_gaussian_tradeoff(noise_multiplier=noise_multiplier, sample_rate=sample_rate, steps=steps,
                                         eps_error=eps_error, delta_error=delta_error)
    return 1.0 - curve.estimate(k), 1.0 - curve.certified(k)


#: The most doublings or halvings of sigma :func:`minimal_noise_multiplier_subsampled` tries from its first guess.
MAX_BRACKET_STEPS = 10


def minimal_noise_multiplier_subsampled(target, *, kappa: float, sample_rate: float, steps: int,
                                        eps_error: float = 1e-3, delta_error: float = 1e-10,
                                        rtol: float = 1e-3) -> float:
    """The smallest noise multiplier whose certified ReRo bound (:func:`rero_bound_subsampled`) is at most
    ``target``, by bracketing and Brent's method on ``log sigma`` (the bound falls as sigma grows), to relative
    precision ``rtol``.  ``target`` must exceed ``kappa``: the prior alone already succeeds with ``kappa``.  A target
    at or above the noiseless bound ``1 - (1 - q)^T (1 - kappa)`` needs no noise (0 is returned); one too close to
    ``kappa`` for the accountant's precision raises ``ValueError``."""
    target = validation.probability("target", target)
    kappa = validation.probability("kappa", kappa)
    if target <= kappa:
        raise ValueError(f"target={target!r}; allowed: a success probability above kappa={kappa!r} (the prior alone "
                         "already succeeds with kappa, whatever the noise)")

    sample_rate = validation.number("sample_rate", sample_rate, above=0.0, at_most=1.0, what="Poisson sampling rate q")
    steps = validation.integer("steps", steps)

    @functools.lru_cache(maxsize=None)  # the bracketing may ask twice for one end
    def excess(log_sigma: float) -> float:
        return float(rero_bound_subsampled(kappa, noise_multiplier=float(np.exp(log_sigma)), sample_rate=sample_rate,
                                           steps=steps, eps_error=eps_error, delta_error=delta_error)[1]) - target

    # Start from the central-limit approximation (the composition is about mu-GDP with mu = q sqrt(T (e^{1/sigma^2}
    # - 1)), Bu et al. 2020, whose ReRo bound Phi(Phi^-1(kappa) + mu) meets the target), within a few per cent of the
    # root for DP-SGD's usual q and T: a bracket 10 % either side of it saves Brent's method half its evaluations,
    # each a privacy-loss composition.  Where the approximation is off the bracket widens by factors of 2 (small
    # sigmas need a long, fine privacy-loss grid: stop at the first unsafe one).
    if target >= 1 - (1 - sample_rate) ** steps * (1 - kappa):
        return 0.0  # met without noise: the target is in no batch with probability (1 - q)^T, and then only the prior
    mu = stats.norm.ppf(target) - stats.norm.ppf(kappa)
    guess = -0.5 * np.log(np.log1p((mu / (sample_rate * np.sqrt(steps))) ** 2))
    lo, hi = guess - np.log(1.1), guess + np.log(1.1)
    for _ in range(MAX_BRACKET_STEPS):
        if excess(lo) > 0:
            break
        lo, hi = lo - np.log(2.0), lo  # safe: try less noise
    else:
        raise ValueError(f"target={target!r}: no noise multiplier above sigma = {np.exp(lo):.3g} exceeds it, yet "
                         "the noiseless bound does; give a smaller target")
    for _ in range(MAX_BRACKET_STEPS):
        if excess(hi) <= 0:
            break
        lo, hi = hi, hi + np.log(2.0)  # unsafe: more noise
    else:
        raise ValueError(f"target={target!r} is below what the accountant certifies even at sigma = {np.exp(hi):.3g}: "
                         f"the bound tends to kappa={kappa!r} plus its numerical error (eps_error={eps_error!r}); "
                         "give a larger target or a smaller eps_error")
    # Brent's root is within xtol of the exact one on either side: stepping up by xtol lands on the safe side.
    xtol = np.log1p(rtol) / 2
    return float(np.exp(optimize.brentq(excess, lo, hi, xtol=xtol) + xtol))


def likelihood_ratio_power(*, noise_multiplier: float, sample_rate: float, steps: int, kappa: float, draws: int,
                           rng: np.random.Generator) -> tuple[float, float]:
    """The most powerful test of "the target was in the data", simulated: ``draws`` runs of ``steps`` releases
    ``N(b_t, sigma^2)`` with ``b_t = 0`` (absent) or ``b_t ~ Bernoulli(q)`` (present, Poisson sampling; sensitivity
    1), the privacy-loss statistic ``sum_t log(1 - q + q exp((x_t - 1/2) / sigma^2))``, its threshold at type-I error
    ``kappa`` from the absent runs.  Returns the power (the adversary's success) and its standard error.  The check
    that :func:`rero_bound_subsampled` holds for the best adversary there is (and is nearly attained)."""

    sigma, q = noise_multiplier, sample_rate
    absent = rng.normal(0.0, sigma, (draws, steps))
    present = rng.normal((rng.random((draws, steps)) < q).astype(float), sigma)

    def loss(x):
        return np.log1p(q * np.expm1((x - 0.5) / sigma**2)).sum(axis=1)

    threshold = np.quantile(loss(absent), 1 - kappa)
    power = float(np.mean(loss(present) > threshold))
    return power, float(checks.proportion_se(power, draws) + checks.proportion_se(kappa, draws))


# ---------------------------------------------------------------------------------------------------------------
# the Edgeworth approximation of the authors' code
# ---------------------------------------------------------------------------------------------------------------
def _loss_cumulants(mu: float, q: float) -> tuple[np.ndarray, np.ndarray]:
    """The first five cumulants of one step's privacy loss ``L = log(1 - q + q e^{mu x - mu^2/2})`` under
    ``P = N(0, 1)`` and under ``Q = (1 - q) N(0, 1) + q N(mu, 1)``, by quadrature of its raw moments."""
    def loss(x):
        z = mu * x - mu * mu / 2
        return z + np.log(q) + np.log1p((1 / q - 1) * np.exp(-z)) if z > 0 else np.log1p(q * np.expm1(z))

    def density_p(x):
        return stats.norm.pdf(x)

    def density_q(x):
        return (1 - q) * stats.norm.pdf(x) + q * stats.norm.pdf(x, loc=mu)

    out = []
    for density in (density_p, density_q):
        m = [integrate.quad(lambda x, r=r: loss(x) ** r * density(x), -np.inf, np.inf)[0] for r in range(1, 6)]
        out.append(np.array([  # cumulants from raw moments
            m[0],
            m[1] - m[0] ** 2,
            m[2] - 3 * m[1] * m[0] + 2 * m[0] ** 3,
            m[3] - 4 * m[2] * m[0] - 3 * m[1] ** 2 + 12 * m[1] * m[0] ** 2 - 6 * m[0] ** 4,
            m[4] - 5 * m[3] * m[0] - 10 * m[2] * m[1] + 20 * m[2] * m[0] ** 2 + 30 * m[1] ** 2 * m[0]
            - 60 * m[1] * m[0] ** 3 + 24 * m[0] ** 5,
        ]))
    return out[0], out[1]


def _edgeworth_cdf(x, cumulants):
    """Edgeworth expansion of the CDF of a standardised sum with the given cumulants (orders 2-5) at ``x``:
    ``Phi(x) - phi(x) [k3/6 He2 + k4/24 He3 + k3^2/72 He5 + k5/120 He4 + k3 k4/144 He6 + k3^3/1296 He8]``, with the
    standardised cumulants ``k_r = kappa_r / sd^r`` and probabilists' Hermite polynomials ``He``."""
    sd = np.sqrt(cumulants[1])
    k3, k4, k5 = cumulants[2] / sd**3, cumulants[3] / sd**4, cumulants[4] / sd**5
    he = np.polynomial.hermite_e.hermeval
    correction = (k3 / 6 * he(x, [0, 0, 1]) + k4 / 24 * he(x, [0, 0, 0, 1]) + k3**2 / 72 * he(x, [0] * 5 + [1])
                  + k5 / 120 * he(x, [0] * 4 + [1]) + k3 * k4 / 144 * he(x, [0] * 6 + [1])
                  + k3**3 / 1296 * he(x, [0] * 8 + [1]))
    return stats.norm.cdf(x) - stats.norm.pdf(x) * correction


def rero_bound_edgeworth(kappa, *, noise_multiplier: float, sample_rate: float, steps: int):
    """From Mean to Extreme's code (``rero_bound_sgm``): the ReRo bound ``1 - f(kappa)`` of the subsampled Gaussian
    mechanism with ``f`` approximated by the Edgeworth expansion of the composed privacy loss (Zheng et al. 2020):
    the threshold is the approximate ``(1 - kappa)``-quantile of the standardised loss under ``P``, and the type-II
    error its approximate CDF under ``Q``.  Not a bound: an approximation, valid for ``T >= 30`` (the code refuses
    fewer steps); compare it with :func:`rero_bound_subsampled`."""
    k = validation.probability("kappa", kappa)
    sigma = validation.positive("noise_multiplier", noise_multiplier)
    q = validation.number("sample_rate", sample_rate, above=0.0, at_most=1.0, what="Poisson sampling rate q")
    T = validation.integer("steps", steps, minimum=30, what="the Edgeworth approximation needs T >= 30")
    cum_p, cum_q = _loss_cumulants(1.0 / sigma, q)
    shift = np.sqrt(T) * (cum_q[0] - cum_p[0]) / np.sqrt(cum_p[1])  # distance of the standardised means
    cum_p, cum_q = T * cum_p, T * cum_q

    def quantile(level: float) -> float:
        return optimize.brentq(lambda x: _edgeworth_cdf(x, cum_p) - level, -40.0, 40.0)

    h = np.array([quantile(1 - ki) for ki in np.atleast_1d(k)])
    x = (h - shift) * np.sqrt(cum_p[1] / cum_q[1])
    beta = np.clip(_edgeworth_cdf(x, cum_q), 0.0, 1.0)
    return (1.0 - beta).reshape(np.shape(k))


# ---------------------------------------------------------------------------------------------------------------
# the generalised likelihood-ratio test
# ---------------------------------------------------------------------------------------------------------------
def rero_bound_glrt(kappa, *, dim: int, sensitivity: float, noise_sd: float):
    """Success of the generalised likelihood-ratio test against the d-dimensional Gaussian mechanism
    ``Y = x + N(0, s^2 I_d)`` when the record shifts ``x`` by a vector of norm ``Delta`` in an unknown direction
    (Kaissis et al. 2023; the authors' ``rero_bound_glrt_without_subsampling``): the test on ``||Y||^2 / s^2``,
    central chi-square with ``d`` degrees of freedom under one hypothesis and non-central with ``Delta^2 / s^2`` under
    the other, run in the direction that is more powerful at type-I error ``kappa``:

    ``max(ncx2.sf(chi2.isf(kappa, d), d, lambda), chi2.cdf(ncx2.ppf(kappa, d, lambda), d))``,
    ``lambda = (Delta / s)^2`` (reject "absent" when the norm is large, or "present" when it is small).

    Without knowing the direction the adversary is weaker than the Neyman-Pearson test (:func:`gaussian_tradeoff`
    with ``mu = Delta / s``), and the weaker the larger ``d``."""
    k = validation.probability("kappa", kappa)
    d = validation.integer("dim", dim)
    nc = (validation.positive("sensitivity", sensitivity) / validation.positive("noise_sd", noise_sd)) ** 2
    forward = stats.ncx2.sf(stats.chi2.isf(k, d), d, nc)
    reverse = stats.chi2.cdf(stats.ncx2.ppf(k, d, nc), d)
    return np.maximum(forward, reverse)
