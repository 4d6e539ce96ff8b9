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
* :func:`rero_bound_subsampled`: ``1 - f(kappa)`` from it, estimate and certified upper bound; where the bound
  saturates (a simple test already succeeds with probability ``1 - 1e-9``) it answers from that test's exact power
  (:func:`sum_test_power`) in milliseconds;
* :func:`rero_bound_edgeworth`: the approximation of From Mean to Extreme's code (``rero_bound_sgm``): the
  Edgeworth expansion of the composed privacy loss (Zheng et al. 2020), which needs ``T >= 30``;
* :func:`rero_bound_glrt`: the generalised likelihood-ratio test against a d-dimensional Gaussian mechanism
  (Kaissis et al. 2023; the authors' ``rero_bound_glrt_without_subsampling``);
* :func:`minimal_noise_multiplier_subsampled`: the smallest ``sigma`` keeping the certified bound below a target.

The privacy loss is that of the pair ``P = N(0, sigma^2)`` (the target absent), ``Q = (1 - q) N(0, sigma^2) +
q N(1, sigma^2)`` (present; sensitivity 1), the pair opacus' accountants use.  ``f = T(P, Q)`` is the trade-off of
*adding* the target (the test's null hypothesis: absent), ``f^{-1} = T(Q, P)`` that of *removing* it.  By default
(``adjacency="add_or_remove"``, what the calculator and its chapter state) the bound takes ``min(f, f^{-1})``, so it
holds for adding and for removing the target; ``adjacency="add"`` or ``"remove"`` takes one direction.  riskcal
(Kulynych et al.) symmetrises too (Dong et al. 2022, Def. F.1, the convex hull of the same minimum); on the grid of
``benchmarks/riskcal_compare.py`` both pick the same direction (f at small q, f^{-1} at q = 0.2, T = 300).

Why not Google's ``dp_accounting`` (riskcal's engine): every release of it pins ``attrs < 24`` (0.4.x also
``numpy ~= 1.21``), which cannot be installed beside the tested set (``attrs`` 26, ``numpy`` 2); opacus' PRV
discretisation, already a dependency, is used instead.
"""
from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass

import numpy as np
from scipy import integrate, optimize, special, stats
from scipy.fft import next_fast_len

from compendium import checks, validation

__all__ = ["ADJACENCIES", "SubsampledGaussianTradeoff", "gaussian_tradeoff", "rero_bound",
           "subsampled_gaussian_tradeoff", "sum_test_power", "rero_bound_subsampled", "likelihood_ratio_power",
           "rero_bound_edgeworth", "rero_bound_glrt", "minimal_noise_multiplier_subsampled"]


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
#: The directions of neighbouring datasets a bound can hold for, ``"add"`` (``f = T(P, Q)``, the null hypothesis
#: "the target is absent"), ``"remove"`` (``f^{-1} = T(Q, P)``) and both (``min(f, f^{-1})``, the default).
ADJACENCIES = ("add_or_remove", "add", "remove")

#: :func:`rero_bound_subsampled` answers from :func:`sum_test_power` when that test's success is within this of 1.
SATURATION_GAP = 1e-9


@dataclass(frozen=True)
class SubsampledGaussianTradeoff:
    """The trade-off function of T compositions of the Poisson-subsampled Gaussian mechanism.

    ``alpha``, ``beta``: the Neyman-Pearson curve of the discretised privacy loss L = log(Q/P) (thresholds on the
    grid ``loss``; between them the randomised tests interpolate linearly); ``eps``, ``delta``: the privacy profile of
    the discretised loss on the same grid; ``eps_error``, ``delta_error``: opacus' discretisation guarantee.
    Call :meth:`estimate` for ``min(f, f^{-1})`` (or one direction, see :data:`ADJACENCIES`) of the discretised
    loss and :meth:`certified` for the lower envelope that holds for the exact mechanism."""

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

    def estimate(self, alpha, adjacency: str = "add_or_remove"):
        """``min(f(alpha), f^{-1}(alpha))`` of the discretised privacy loss (vectorised over ``alpha``); ``f`` alone
        for ``adjacency="add"``, ``f^{-1}`` for ``"remove"``."""
        adjacency = validation.choice("adjacency", adjacency, ADJACENCIES)
        a = np.asarray(alpha, float)
        # alpha decreases and beta increases along the threshold grid; np.interp needs increasing abscissae
        f = np.interp(a, self.alpha[::-1], self.beta[::-1])
        f_inverse = np.interp(a, self.beta, self.alpha)
        return {"add": f, "remove": f_inverse, "add_or_remove": np.minimum(f, f_inverse)}[adjacency]

    def certified(self, alpha):
        """A trade-off function below the exact mechanism's in both directions (below ``min(f, f^{-1})``, so it
        certifies every ``adjacency``): the conversion of the privacy profile
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
                                 eps_error: float = 1e-2, delta_error: float = 1e-10) -> SubsampledGaussianTradeoff:
    """The trade-off function of ``steps`` compositions of the Poisson-subsampled Gaussian mechanism, from its
    privacy-loss distribution (opacus' PRV discretisation and FFT composition; Gopi et al. 2021).

    The grid's mesh follows opacus' rule from ``eps_error`` and ``delta_error`` (smaller errors: a finer grid, more
    memory and time, linear in ``1 / eps_error``; the defaults take a fraction of a second for T = 1000)."""
    from opacus.accountants.analysis.prv import (Domain, PoissonSubsampledGaussianPRV,
                                                 TruncatedPrivacyRandomVariable, compose_heterogeneous, discretize)

    sigma = validation.positive("noise_multiplier", noise_multiplier)
    q = validation.number("sample_rate", sample_rate, above=0.0, at_most=1.0, what="Poisson sampling rate q")
    T = validation.integer("steps", steps)
    eps_error = validation.positive("eps_error", eps_error)
    delta_error = validation.probability("delta_error", delta_error)

    prv = PoissonSubsampledGaussianPRV(q, sigma)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # log(1 - q) = -inf at q = 1, and the RDP accountant's optimal-order notes
        L = _safe_domain_size(sigma, q, T, eps_error=eps_error, delta_error=delta_error)
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


#: Integer Renyi orders for :func:`_safe_domain_size`.
_INTEGER_ORDERS = np.concatenate([np.arange(2, 64), [80, 96, 128, 160, 192, 256]])
#: Orders below 2, from opacus' series, tried only where the best integer order is 2.
_FRACTIONAL_ORDERS = np.linspace(1.1, 1.9, 9)


def _safe_domain_size(sigma: float, q: float, T: int, *, eps_error: float, delta_error: float) -> float:
    """opacus' ``compute_safe_domain_size`` (Gopi et al. 2021, Remark 5.6): ``[-L, L]`` holds the composed privacy
    loss but for ``delta_error``, ``L`` from RDP tail bounds.  Here the RDP of the subsampled Gaussian is taken at
    integer orders only, in closed form and vectorised (Mironov et al. 2019, Sec. 3.3:
    ``A_a = sum_k C(a, k) q^k (1 - q)^(a - k) e^{(k^2 - k) / (2 sigma^2)}``, RDP ``log(A_a) / (a - 1)`` per step), and
    converted as opacus does, ``eps = T RDP - (log(delta) + log(a)) / (a - 1) + log((a - 1) / a)`` (Balle et al.
    2020, Thm. 21): each order gives a valid tail
    bound, so this ``L`` is safe.  opacus' series for fractional orders (pure Python, over half a small query's
    time) is summed only for orders between 1 and 2, where the best integer order is 2 (large q)."""
    a = _INTEGER_ORDERS[:, None].astype(float)
    k = np.arange(_INTEGER_ORDERS.max() + 1.0)[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        log_terms = (special.gammaln(a + 1) - special.gammaln(k + 1) - special.gammaln(a - k + 1)
                     + np.where(k > 0, k * np.log(q), 0.0) + np.where(a - k > 0, (a - k) * np.log1p(-q), 0.0)
                     + (k * k - k) / (2 * sigma**2))
    orders = _INTEGER_ORDERS.astype(float)
    rdp = special.logsumexp(np.where(k <= a, log_terms, -np.inf), axis=1) / (orders - 1)
    if np.argmin(T * rdp - np.log(delta_error / 4) / (orders - 1)) == 0:  # the best order is below 2 (large q)
        from opacus.accountants.analysis.rdp import compute_rdp

        orders = np.concatenate([_FRACTIONAL_ORDERS, orders])
        rdp = np.concatenate([compute_rdp(q=q, noise_multiplier=sigma, steps=1, orders=_FRACTIONAL_ORDERS), rdp])

    def epsilon(steps: int, delta: float) -> float:
        return float(np.min(steps * rdp - (np.log(delta) + np.log(orders)) / (orders - 1)
                            + np.log((orders - 1) / orders)))

    largest = max(epsilon(T, delta_error / 4), epsilon(1, delta_error / (8 * T)))
    return max(largest, eps_error) + 3


def sum_test_power(kappa, *, noise_multiplier: float, sample_rate: float, steps: int,
                   adjacency: str = "add_or_remove"):
    """The exact success, at type-I error ``kappa``, of the test on the sum ``S`` of the ``T`` releases: a lower
    bound on ``1 - f(kappa)`` (the best test does at least as well), computed in milliseconds.

    Absent, ``S ~ N(0, T sigma^2)``; present, ``S | B ~ N(B, T sigma^2)`` with ``B ~ Binomial(T, q)`` the number of
    batches holding the target.  ``"add"`` (null: absent) rejects when ``S > c``, ``c = sqrt(T) sigma
    Phi^{-1}(1 - kappa)``: power ``E_B[Phi((B - c) / (sqrt(T) sigma))]``; ``"remove"`` (null: present) rejects when
    ``S < c`` with ``E_B[Phi((c - B) / (sqrt(T) sigma))] = kappa``: power ``Phi(c / (sqrt(T) sigma))``;
    ``"add_or_remove"`` the larger.  At ``q = 1`` the ``"add"`` power is the GDP bound ``Phi(Phi^{-1}(kappa) +
    sqrt(T) / sigma)`` itself."""
    k = validation.probability("kappa", kappa, closed=True)
    sigma = validation.positive("noise_multiplier", noise_multiplier)
    q = validation.number("sample_rate", sample_rate, above=0.0, at_most=1.0, what="Poisson sampling rate q")
    T = validation.integer("steps", steps)
    adjacency = validation.choice("adjacency", adjacency, ADJACENCIES)
    scale = np.sqrt(T) * sigma
    b = np.arange(T + 1.0)
    weight = stats.binom.pmf(b, T, q)

    def add(level: float) -> float:
        return float(weight @ stats.norm.cdf((b - scale * stats.norm.isf(level)) / scale))

    def remove(level: float) -> float:
        if level in (0.0, 1.0):
            return level
        c = optimize.brentq(lambda c: weight @ stats.norm.cdf((c - b) / scale) - level, -40 * scale,
                            T + 40 * scale, xtol=1e-12 * scale)
        return float(stats.norm.cdf(c / scale))

    tests = {"add": (add,), "remove": (remove,), "add_or_remove": (add, remove)}[adjacency]
    power = [max(test(float(level)) for test in tests) for level in np.atleast_1d(k)]
    return np.reshape(power, np.shape(k))


def rero_bound_subsampled(kappa, *, noise_multiplier: float, sample_rate: float, steps: int,
                          adjacency: str = "add_or_remove", eps_error: float = 1e-2,
                          delta_error: float = 1e-10) -> tuple[np.ndarray, np.ndarray]:
    """``(estimate, certified)`` ReRo bounds ``1 - f(kappa)`` of DP-SGD with Poisson sampling rate ``q``, noise
    multiplier ``sigma`` and ``T`` steps (see :func:`subsampled_gaussian_tradeoff`; ``adjacency`` picks ``f``,
    ``f^{-1}`` or, by default, both).  ``certified - estimate`` is the numerical error the discretisation may have
    (about ``eps_error`` relative); the exact value lies below ``certified``.  Where :func:`sum_test_power` already
    exceeds ``1 - SATURATION_GAP`` the exact value lies between it and 1: ``(that power, 1.0)`` is returned without
    composing the privacy loss (the saturated regime, which would need the longest grids)."""
    k = validation.probability("kappa", kappa, closed=True)
    validation.positive("eps_error", eps_error)
    validation.probability("delta_error", delta_error)
    setting = dict(noise_multiplier=noise_multiplier, sample_rate=sample_rate, steps=steps)
    lower = sum_test_power(k, **setting, adjacency=adjacency)
    if np.all(lower >= 1 - SATURATION_GAP):
        return lower, np.ones_like(lower)
    curve = subsampled_gaussian_tradeoff(**setting, eps_error=eps_error, delta_error=delta_error)
    return 1.0 - curve.estimate(k, adjacency), 1.0 - curve.certified(k)


#: The most doublings or halvings of sigma :func:`minimal_noise_multiplier_subsampled` tries from its first guess.
MAX_BRACKET_STEPS = 10


def minimal_noise_multiplier_subsampled(target, *, kappa: float, sample_rate: float, steps: int,
                                        eps_error: float = 1e-2, delta_error: float = 1e-10,
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
