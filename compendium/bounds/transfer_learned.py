"""ROC theory of Maciazek & Allison (2025), "Vulnerability of transfer-learned neural networks to data
reconstruction attacks in the small-data regime" (Section 2 and Appendix A.1).

Setting (Section 2, Definition 1, Eqs. (1)-(2)): a reconstruction ``R(theta)`` counts as a success when its smallest
MSE to the ``N`` training images is at most ``tau``.  TPR uses the released model's own training set, FPR an
independent one; both are CDFs of ``l_min-MSE`` (Eq. (4)), under ``H0`` (own data) and ``H1`` (independent data).
Appendix A.1 fits Gaussians ``N(mu0, sigma0^2)`` (under ``H0``) and ``N(mu1, sigma1^2)`` (under ``H1``) to
``phi = log((l/4) / (1 - l/4))`` (:func:`min_mse_logit`) and compares two ways of turning ``phi`` into a test:

* the *cumulative* ROC, Eqs. (7)-(9): success iff ``phi < Phi(tau)`` (:func:`cumulative_roc`).  Eliminating the
  threshold gives the binormal ROC, Eq. (6) (:func:`analytic_tpr`)

      ``TPR = 1/2 - 1/2 erf((mu0 - mu1) / (sqrt(2) sigma0) + (sigma1 / sigma0) erf^{-1}(1 - 2 FPR))``
      ``= Phi_N((mu1 - mu0) / sigma0 + (sigma1 / sigma0) Phi_N^{-1}(FPR))``;

* the *Neyman-Pearson* ROC, Eqs. (5), (10)-(12): success iff the log-likelihood ratio (11),
  ``log(sigma1/sigma0) - (phi - mu0)^2 / (2 sigma0^2) + (phi - mu1)^2 / (2 sigma1^2)``, exceeds ``C~``
  (:func:`neyman_pearson_roc`, :func:`neyman_pearson_tpr`).

Theorem 1 claims the two ROCs are identical and equal to Eq. (6); its proof reduces the N-P half to identity (13),
which the authors report checking numerically but not proving.  What holds (tested in
``tests/test_bounds_transfer_learned.py``):

* the cumulative half (Eqs. (7)-(9) => Eq. (6)) is exact for every ``mu0, sigma0, mu1, sigma1``;
* the N-P half is exact only when ``sigma0 == sigma1`` (and ``mu0 <= mu1``).  When the variances differ, (11) is a
  parabola in ``phi``, the N-P acceptance region has a second tail (``sigma0 > sigma1``, the paper's case) or is a
  bounded interval (``sigma0 < sigma1``), and the N-P ROC lies strictly above Eq. (6): identity (13) is false
  (:func:`identity13_residual`, :func:`theorem1_residual`, :func:`theorem1_gap`).  The gap is the mass of the part of
  the N-P region that the one-tailed test lacks.  For ``sigma0 > sigma1`` that is a far right tail: negligible at
  small FPR for the paper's parameters, largest at large FPR.  For ``sigma0 < sigma1`` it is the far left end cut
  off the interval, and the gap sits at *small* FPR.  Example: the probit line through the two ROC points of
  Table 1 for MNIST, N = 10, ``(FPR, TPR) = (0.018, 0.636)`` and ``(0.01, 0.431)``, has
  ``(mu1 - mu0)/sigma0 = 5.12`` and ``sigma1/sigma0 = 2.27``; with those Gaussians the N-P TPR at FPR = 1e-3 is
  0.052 against 0.028 from Eq. (6) (0.439 against 0.431 at FPR = 0.01).  The two-point fit is fragile, so this
  shows what the theorem's error can amount to, not what the paper's attack achieves;
* when ``mu0 > mu1`` the N-P test rejects on the other side and Eq. (6) lies below the diagonal: the theorem as
  stated (no condition on the means) fails there even with equal variances.

Section 2's baseline attack, which outputs one fixed image whatever the weights, has
``TPR = FPR = 1 - (1 - kappa)^N`` (:func:`baseline_tpr`).

Everything is numpy/scipy, vectorised over the first argument (the Gaussian parameters are scalars), and every
input is checked by :mod:`compendium.validation` before any computation.
"""
from __future__ import annotations

import numpy as np
from scipy import special, stats

from compendium import validation

__all__ = ["min_mse_logit", "analytic_tpr", "cumulative_roc", "log_likelihood_ratio", "neyman_pearson_roots",
           "neyman_pearson_roc", "neyman_pearson_tpr", "theorem1_gap", "theorem1_residual",
           "identity13_residual", "baseline_tpr"]

_SQRT2 = np.sqrt(2.0)


# ---------------------------------------------------------------------------------------------------------------
# input rules
# ---------------------------------------------------------------------------------------------------------------
def _scalar(name: str, value, what: str, **limits) -> float:
    """A finite scalar number within ``limits`` (see :func:`compendium.validation.number`)."""
    if np.ndim(value) != 0:
        raise ValueError(f"{name}={value!r}; allowed: a single finite number ({what})")
    return validation.number(name, value, what=what, **limits)


def _gaussians(mu0, sigma0, mu1, sigma1) -> tuple[float, float, float, float]:
    """The four parameters of the fitted Gaussians of ``phi`` (App. A.1, Theorem 1's assumption)."""
    return (_scalar("mu0", mu0, "mean of phi under H0, the model's own training set"),
            _scalar("sigma0", sigma0, "standard deviation of phi under H0", above=0.0),
            _scalar("mu1", mu1, "mean of phi under H1, an independent training set"),
            _scalar("sigma1", sigma1, "standard deviation of phi under H1", above=0.0))


def _out(x, like):
    """A float for a scalar first argument, an array of its shape otherwise."""
    x = np.asarray(x, float)
    return float(x.reshape(-1)[0]) if np.ndim(like) == 0 else x.reshape(np.shape(like))


# ---------------------------------------------------------------------------------------------------------------
# Gaussian masses, computed without cancellation
# ---------------------------------------------------------------------------------------------------------------
def _outside(lo, hi, mu, sigma):
    """``P[phi < lo] + P[phi > hi]`` for ``phi ~ N(mu, sigma^2)`` (``lo <= hi``)."""
    return stats.norm.cdf((lo - mu) / sigma) + stats.norm.sf((hi - mu) / sigma)


def _inside(lo, hi, mu, sigma):
    """``P[lo < phi < hi]`` for ``phi ~ N(mu, sigma^2)`` (``lo <= hi``), from the side of the nearer tail."""
    a, b = (np.asarray(lo, float) - mu) / sigma, (np.asarray(hi, float) - mu) / sigma
    left = stats.norm.cdf(b) - stats.norm.cdf(a)
    right = stats.norm.sf(a) - stats.norm.sf(b)
    middle = 1.0 - stats.norm.cdf(a) - stats.norm.sf(b)
    return np.where(b <= 0, left, np.where(a >= 0, right, middle))


# ---------------------------------------------------------------------------------------------------------------
# the observable and the cumulative ROC
# ---------------------------------------------------------------------------------------------------------------
def min_mse_logit(min_mse):
    """App. A.1: ``phi = log((l/4) / (1 - l/4))`` of a min-MSE ``l`` in ``(0, 4)`` (images scaled to ``[-1, 1]``),
    the transform under which the paper finds ``l_min-MSE`` approximately normal (Fig. 7)."""
    m = validation.number("min_mse", min_mse, above=0.0, below=4.0, what="min-MSE of images in [-1, 1]")
    return _out(special.logit(np.asarray(m, float) / 4.0), min_mse)


def analytic_tpr(fpr, *, mu0, sigma0, mu1, sigma1):
    """Eq. (6), the analytic (binormal) ROC of Theorem 1:

        ``TPR = 1/2 - 1/2 erf((mu0 - mu1) / (sqrt(2) sigma0) + (sigma1 / sigma0) erf^{-1}(1 - 2 FPR))``,

    computed in the equivalent probit form ``Phi_N((mu1 - mu0) / sigma0 + (sigma1 / sigma0) Phi_N^{-1}(FPR))``
    (``erf^{-1}(1 - 2p) = -Phi_N^{-1}(p) / sqrt(2)``), which keeps its accuracy in the tails.  Paper's convention:
    TPR is a probability under ``H0: phi ~ N(mu0, sigma0^2)``, FPR under ``H1: phi ~ N(mu1, sigma1^2)``, success
    iff ``phi`` is *below* the threshold (Eq. (7)); so the curve is above the diagonal iff ``mu0 < mu1``.
    ``analytic_tpr(0) = 0`` and ``analytic_tpr(1) = 1``."""
    p = validation.probability("fpr", fpr, closed=True, what="false-positive rate")
    mu0, sigma0, mu1, sigma1 = _gaussians(mu0, sigma0, mu1, sigma1)
    tpr = stats.norm.cdf((mu1 - mu0) / sigma0 + sigma1 / sigma0 * stats.norm.ppf(p))
    return _out(tpr, fpr)


def cumulative_roc(threshold, *, mu0, sigma0, mu1, sigma1):
    """Eqs. (7)-(9): the cumulative ROC point of the test "success iff ``phi < threshold``" (``threshold`` is
    ``Phi(tau)``, the transformed MSE threshold).  Returns ``(fpr, tpr)`` with

        ``TPR_cum = 1/2 (1 - erf((mu0 - threshold) / (sqrt(2) sigma0)))``   (Eq. (8)),
        ``FPR_cum = 1/2 (1 - erf((mu1 - threshold) / (sqrt(2) sigma1)))``   (Eq. (9)).

    Eliminating ``threshold`` gives Eq. (6): ``tpr == analytic_tpr(fpr)`` for every parameter set."""
    t = validation.number("threshold", threshold, what="threshold Phi(tau) on the phi scale")
    mu0, sigma0, mu1, sigma1 = _gaussians(mu0, sigma0, mu1, sigma1)
    t = np.asarray(t, float)
    return (_out(stats.norm.cdf((t - mu1) / sigma1), threshold),
            _out(stats.norm.cdf((t - mu0) / sigma0), threshold))


# ---------------------------------------------------------------------------------------------------------------
# the Neyman-Pearson ROC
# ---------------------------------------------------------------------------------------------------------------
def log_likelihood_ratio(phi, *, mu0, sigma0, mu1, sigma1):
    """Eq. (11): ``log(rho0(phi) / rho1(phi)) = log(sigma1 / sigma0) - (phi - mu0)^2 / (2 sigma0^2)
    + (phi - mu1)^2 / (2 sigma1^2)`` of the two Gaussians; the Neyman-Pearson test (5) accepts ``H0`` where it
    exceeds a threshold ``C~``.  Vectorised over ``phi``."""
    mu0, sigma0, mu1, sigma1 = _gaussians(mu0, sigma0, mu1, sigma1)
    phi = np.asarray(validation.number("phi", phi, what="transformed min-MSE"), float)
    return _out(np.log(sigma1 / sigma0) - (phi - mu0) ** 2 / (2 * sigma0**2) + (phi - mu1) ** 2 / (2 * sigma1**2),
                phi)


def neyman_pearson_roots(llr_threshold, *, mu0, sigma0, mu1, sigma1):
    """Eq. (12): the vertex ``r0`` of the log-likelihood ratio (11) and the half-width ``delta(C~)`` of the set where
    (11) equals ``C~``, for ``sigma0 != sigma1``::

        r0 = (mu1 sigma0^2 - mu0 sigma1^2) / (sigma0^2 - sigma1^2),
        delta = sigma0 sigma1 sqrt((mu0 - mu1)^2 + 2 (C~ + log(sigma0 / sigma1)) (sigma0^2 - sigma1^2))
                / |sigma0^2 - sigma1^2|.

    Returns ``(r0, delta)``; ``delta`` is ``nan`` where (11) never reaches ``C~``, i.e. below
    ``C~_min = log(sigma1/sigma0) - (mu0 - mu1)^2 / (2 (sigma0^2 - sigma1^2))`` when ``sigma0 > sigma1`` (the paper's
    case; there the N-P test accepts ``H0`` everywhere) and above that value when ``sigma0 < sigma1`` (where it
    accepts ``H0`` nowhere).  The paper writes ``delta`` with ``sigma0^2 - sigma1^2`` in the denominator, which is
    positive in its case; the absolute value extends it to ``sigma0 < sigma1``."""
    c = validation.number("llr_threshold", llr_threshold, what="threshold C~ on the log-likelihood ratio (11)")
    mu0, sigma0, mu1, sigma1 = _gaussians(mu0, sigma0, mu1, sigma1)
    if sigma0 == sigma1:
        raise ValueError(f"sigma1={sigma1!r}; allowed: a finite number > 0 and != sigma0 "
                         "(Eq. (12) needs unequal variances)")
    dvar = sigma0**2 - sigma1**2
    r0 = (mu1 * sigma0**2 - mu0 * sigma1**2) / dvar
    radicand = (mu0 - mu1) ** 2 + 2.0 * (np.asarray(c, float) + np.log(sigma0 / sigma1)) * dvar
    with np.errstate(invalid="ignore"):
        delta = np.where(radicand >= 0, sigma0 * sigma1 * np.sqrt(np.maximum(radicand, 0.0)) / abs(dvar), np.nan)
    return r0, _out(delta, llr_threshold)


def neyman_pearson_roc(llr_threshold, *, mu0, sigma0, mu1, sigma1):
    """Eqs. (10)-(12): the Neyman-Pearson ROC point ``(fpr, tpr)`` of the test "success iff the log-likelihood ratio
    (11) exceeds ``llr_threshold`` = ``C~``", exact for every ``sigma0, sigma1``.

    * ``sigma0 > sigma1`` (the paper's case): (11) is a convex parabola; the test accepts ``H0`` on the two tails
      ``phi < r0 - delta`` or ``phi > r0 + delta`` (everywhere when ``C~ <= C~_min``), and
      ``TPR = 1 - 1/2 (erf((mu0 - r0 + delta)/(sqrt(2) sigma0)) - erf((mu0 - r0 - delta)/(sqrt(2) sigma0)))``,
      FPR the same with ``mu1, sigma1`` -- the expressions after Eq. (12);
    * ``sigma0 < sigma1``: a concave parabola; the test accepts ``H0`` on ``(r0 - delta, r0 + delta)``;
    * ``sigma0 == sigma1``: (11) is linear, ``(mu0 - mu1)(2 phi - mu0 - mu1) / (2 sigma^2)``; the test is one-tailed,
      ``phi < (mu0 + mu1)/2 - C~ sigma^2 / (mu1 - mu0)`` when ``mu0 < mu1`` (the cumulative test), the mirror image
      when ``mu0 > mu1``, and all-or-nothing when the two Gaussians coincide.

    ``r0`` and ``delta`` are :func:`neyman_pearson_roots`; tail masses are summed, never differenced, so small rates
    keep their relative accuracy."""
    c = validation.number("llr_threshold", llr_threshold, what="threshold C~ on the log-likelihood ratio (11)")
    mu0, sigma0, mu1, sigma1 = _gaussians(mu0, sigma0, mu1, sigma1)
    c = np.asarray(c, float)
    if sigma0 == sigma1:
        s = sigma0
        if mu0 == mu1:
            accept = (c < 0).astype(float)  # the ratio is 1 everywhere
            return _out(accept, llr_threshold), _out(accept, llr_threshold)
        t = 0.5 * (mu0 + mu1) - c * s**2 / (mu1 - mu0)
        if mu0 < mu1:
            fpr, tpr = stats.norm.cdf((t - mu1) / s), stats.norm.cdf((t - mu0) / s)
        else:
            fpr, tpr = stats.norm.sf((t - mu1) / s), stats.norm.sf((t - mu0) / s)
        return _out(fpr, llr_threshold), _out(tpr, llr_threshold)
    r0, delta = neyman_pearson_roots(c, mu0=mu0, sigma0=sigma0, mu1=mu1, sigma1=sigma1)
    delta = np.asarray(delta, float)
    no_root = np.isnan(delta)
    d = np.where(no_root, 0.0, delta)
    lo, hi = r0 - d, r0 + d
    if sigma0 > sigma1:
        fpr, tpr = _outside(lo, hi, mu1, sigma1), _outside(lo, hi, mu0, sigma0)
        fpr, tpr = np.where(no_root, 1.0, fpr), np.where(no_root, 1.0, tpr)
    else:
        fpr, tpr = _inside(lo, hi, mu1, sigma1), _inside(lo, hi, mu0, sigma0)
        fpr, tpr = np.where(no_root, 0.0, fpr), np.where(no_root, 0.0, tpr)
    return _out(fpr, llr_threshold), _out(tpr, llr_threshold)


def _bisect(f, lo, hi, target, iterations: int = 200):
    """Elementwise root of the nondecreasing ``f(x) = target`` in ``[lo, hi]``, to the last bit."""
    lo, hi = np.array(lo, float), np.array(hi, float)
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        if not np.any((mid > lo) & (mid < hi)):
            break
        below = f(mid) < target
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    return 0.5 * (lo + hi)


def neyman_pearson_tpr(fpr, *, mu0, sigma0, mu1, sigma1):
    """The exact Neyman-Pearson ROC ``TPR_NP(FPR)`` of ``H0: N(mu0, sigma0^2)`` against ``H1: N(mu1, sigma1^2)``:
    the largest TPR of any test with false-positive rate ``fpr`` (the N-P lemma; Eqs. (5), (10)-(12)).

    The acceptance region of :func:`neyman_pearson_roc` is parametrised by its *near* endpoint ``e`` (the one on the
    side of ``r0`` where both means lie; the *far* endpoint is ``2 r0 - e``), and ``e`` is found by bisection from
    ``FPR_NP(e) = fpr`` (monotone in ``e``; bracketed by ``mu1 + sigma1 Phi_N^{-1}(fpr / 2)`` ...
    ``mu1 + sigma1 Phi_N^{-1}(fpr)`` in the two-tailed case and ``mu1 + sigma1 Phi_N^{-1}(fpr)`` ...
    ``mu1 + sigma1 Phi_N^{-1}((1 + fpr) / 2)`` in the interval case).  The statistic is first reflected so that
    ``mu0 <= mu1`` (the likelihood ratio, hence the N-P ROC, is unchanged).  When ``sigma0 == sigma1`` the test is
    one-tailed and ``TPR_NP = Phi_N(|mu1 - mu0| / sigma0 + Phi_N^{-1}(fpr))``, i.e. :func:`analytic_tpr` when
    ``mu0 <= mu1``.  Always ``TPR_NP >= analytic_tpr`` (Eq. (6) is the ROC of one particular test)."""
    p = validation.probability("fpr", fpr, closed=True, what="false-positive rate")
    mu0, sigma0, mu1, sigma1 = _gaussians(mu0, sigma0, mu1, sigma1)
    if mu0 > mu1:  # reflect phi -> -phi
        mu0, mu1 = -mu0, -mu1
    p = np.atleast_1d(np.asarray(p, float))
    if sigma0 == sigma1:
        return _out(stats.norm.cdf((mu1 - mu0) / sigma0 + stats.norm.ppf(p)), fpr)
    r0 = (mu1 * sigma0**2 - mu0 * sigma1**2) / (sigma0**2 - sigma1**2)
    tpr = p.copy()  # the endpoints: FPR 0 -> TPR 0, FPR 1 -> TPR 1
    inner = (p > 0) & (p < 1)
    a = p[inner]
    if sigma0 > sigma1:
        # both means lie left of r0 (mu1 - r0 = sigma1^2 (mu0 - mu1) / (sigma0^2 - sigma1^2) <= 0); accept H0 on
        # (-inf, e) u (2 r0 - e, inf) with e <= r0
        e = _bisect(lambda x: _outside(x, 2 * r0 - x, mu1, sigma1),
                    mu1 + sigma1 * stats.norm.ppf(a / 2), np.minimum(r0, mu1 + sigma1 * stats.norm.ppf(a)), a)
        tpr[inner] = _outside(e, 2 * r0 - e, mu0, sigma0)
    else:
        # both means lie right of r0; accept H0 on (2 r0 - e, e) with e >= r0
        e = _bisect(lambda x: _inside(2 * r0 - x, x, mu1, sigma1),
                    np.maximum(r0, mu1 + sigma1 * stats.norm.ppf(a)), mu1 + sigma1 * stats.norm.ppf((1 + a) / 2), a)
        tpr[inner] = _inside(2 * r0 - e, e, mu0, sigma0)
    return _out(tpr, fpr)


# ---------------------------------------------------------------------------------------------------------------
# Theorem 1 and identity (13)
# ---------------------------------------------------------------------------------------------------------------
def theorem1_gap(fpr, *, mu0, sigma0, mu1, sigma1):
    """Theorem 1's claim ``TPR_NP(FPR) = TPR_(6)(FPR)`` as a difference: :func:`neyman_pearson_tpr` minus
    :func:`analytic_tpr`.  Zero iff ``sigma0 == sigma1`` and ``mu0 <= mu1``; positive inside ``(0, 1)`` otherwise
    (it is the mass of the N-P region that the one-tailed test misses, which can be far below rounding when the
    variances are close, e.g. ``sigma0 = 1``, ``sigma1 = 1.01``, ``mu0 - mu1 = -2``)."""
    return _out(np.asarray(neyman_pearson_tpr(fpr, mu0=mu0, sigma0=sigma0, mu1=mu1, sigma1=sigma1))
                - np.asarray(analytic_tpr(fpr, mu0=mu0, sigma0=sigma0, mu1=mu1, sigma1=sigma1)), fpr)


def _erfinv_1m2(p, q):
    """``erf^{-1}(1 - 2p)`` for ``p + q = 1``, from whichever of ``p``, ``q`` is smaller."""
    p, q = np.asarray(p, float), np.asarray(q, float)
    return np.where(p < 0.5, -special.ndtri(p), special.ndtri(q)) / _SQRT2


def identity13_residual(delta, *, delta_mu, sigma0, sigma1):
    """Identity (13) of the proof of Theorem 1, right-hand side minus left-hand side (``0``)::

        sqrt(2) dmu + 2 sigma1 erf^{-1}(erf(sigma1 dmu/(sqrt(2) dvar) + delta/(sqrt(2) sigma1))
                                        - erf(sigma1 dmu/(sqrt(2) dvar) - delta/(sqrt(2) sigma1)) - 1)
                    - 2 sigma0 erf^{-1}(same with sigma0),

    ``dmu = mu0 - mu1``, ``dvar = sigma0^2 - sigma1^2 > 0`` (the paper's case ``sigma0 > sigma1``; (13) divides by
    ``dvar``), ``delta > 0`` the half-width of Eq. (12).  The paper reports checking (13) numerically for
    ``dmu < 0``; it is not an identity: the residual is nonzero for ``sigma0 != sigma1`` (e.g. ``7.99e-4`` at
    ``dmu = -2, sigma0 = 1, sigma1 = 0.5, delta = 1``).  The arguments of ``erf^{-1}`` are ``1 - 2 FPR_NP`` and
    ``1 - 2 TPR_NP``, so the residual equals ``sqrt(2) (dmu + sigma0 Phi_N^{-1}(TPR_NP) - sigma1 Phi_N^{-1}(FPR_NP))``,
    ``sqrt(2) sigma0`` times the probit-scale distance of the N-P point from Eq. (6); it is evaluated in that form,
    each rate from its smaller complement (``1 - erf = erfc``), which removes the cancellation of the printed
    ``erf - erf - 1`` near the ROC's ends."""
    d = validation.positive("delta", delta, what="half-width of the N-P region, Eq. (12)")
    dmu = _scalar("delta_mu", delta_mu, "mu0 - mu1")
    sigma0 = _scalar("sigma0", sigma0, "standard deviation of phi under H0", above=0.0)
    sigma1 = _scalar("sigma1", sigma1, "standard deviation of phi under H1; (13) is stated for sigma0 > sigma1",
                     above=0.0, below=sigma0)
    d = np.asarray(d, float)
    dvar = sigma0**2 - sigma1**2

    def term(s):
        centre = s * dmu / (_SQRT2 * dvar)  # (mu_i - r0) / (sqrt(2) sigma_i)
        hi, lo = centre + d / (_SQRT2 * s), centre - d / (_SQRT2 * s)
        outside = 0.5 * special.erfc(hi) + 0.5 * special.erfc(-lo)  # 1 - (erf(hi) - erf(lo)) / 2: the N-P rate
        inside = np.where(lo >= 0, 0.5 * (special.erfc(lo) - special.erfc(hi)),
                          np.where(hi <= 0, 0.5 * (special.erfc(-hi) - special.erfc(-lo)),
                                   1.0 - outside))
        return _erfinv_1m2(outside, inside)

    return _out(_SQRT2 * dmu + 2 * sigma1 * term(sigma1) - 2 * sigma0 * term(sigma0), delta)


def theorem1_residual(llr_threshold, *, mu0, sigma0, mu1, sigma1):
    """Identity (13) at the N-P threshold ``C~`` instead of at ``delta``:

        ``sqrt(2) (mu0 - mu1 + sigma0 Phi_N^{-1}(TPR_NP(C~)) - sigma1 Phi_N^{-1}(FPR_NP(C~)))``,

    with the N-P point of :func:`neyman_pearson_roc`.  For ``sigma0 > sigma1`` and ``C~ > C~_min`` it equals
    :func:`identity13_residual` at ``delta = delta(C~)`` of Eq. (12); unlike (13) it is defined for every
    ``sigma0, sigma1``.  It is zero iff the N-P point lies on Eq. (6): for every ``C~`` when ``sigma0 == sigma1`` and
    ``mu0 < mu1``, for none inside the ROC when ``sigma0 != sigma1``; ``2 sqrt(2) (mu0 - mu1)`` when
    ``sigma0 == sigma1`` and ``mu0 > mu1``.  ``nan`` at the ROC's end points (FPR and TPR both 0 or both 1), where
    both probits are infinite."""
    c = validation.number("llr_threshold", llr_threshold, what="threshold C~ on the log-likelihood ratio (11)")
    mu0, sigma0, mu1, sigma1 = _gaussians(mu0, sigma0, mu1, sigma1)
    fpr, tpr = neyman_pearson_roc(c, mu0=mu0, sigma0=sigma0, mu1=mu1, sigma1=sigma1)
    fpr, tpr = np.asarray(fpr, float), np.asarray(tpr, float)
    end = (fpr <= 0) | (fpr >= 1) | (tpr <= 0) | (tpr >= 1)
    with np.errstate(invalid="ignore"):
        out = _SQRT2 * (mu0 - mu1 + sigma0 * stats.norm.ppf(tpr) - sigma1 * stats.norm.ppf(fpr))
    return _out(np.where(end, np.nan, out), llr_threshold)


# ---------------------------------------------------------------------------------------------------------------
# Section 2: the baseline attack
# ---------------------------------------------------------------------------------------------------------------
def baseline_tpr(kappa, n):
    """Section 2: the constant attack ``R0(theta) = Z0`` that ignores the weights has
    ``TPR_tau(R0) = 1 - (1 - kappa_tau(Z0))^N`` (the chance that one of the ``N`` training images lies within
    ``tau`` of ``Z0``, ``kappa = P_{Z ~ pi}[l(Z, Z0) <= tau]``), which tends to 1 as ``N`` grows.  Because ``R0``
    ignores ``theta``, its FPR (Eq. (2)) is the same number, so its ROC point lies on the diagonal (the paper says
    only that the FPR "tends to 1 as well").  Computed as ``-expm1(N log1p(-kappa))``."""
    k = validation.probability("kappa", kappa, closed=True, what="chance one prior draw is within tau of Z0")
    n_ = validation.integer("n", n, minimum=1, what="training-set size N")
    k = np.asarray(k, float)
    with np.errstate(divide="ignore"):
        out = -np.expm1(np.asarray(n_, float) * np.log1p(-k))
    out = np.where(k >= 1, 1.0, out)
    return float(out) if np.ndim(out) == 0 else out
