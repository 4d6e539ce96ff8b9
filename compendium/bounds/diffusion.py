"""Theory checks of Huang, Meng et al. (2024), "Gradient-guided conditional diffusion models for private image
reconstruction: analyzing adversarial impacts of differential privacy and denoising".

Setting: the adversary observes ``g = g0(x0) + N(0, sigma^2 I_m)``, the (possibly normalised) weight gradient
``g0(x) = grad_W F(x; W)`` of one private image ``x0`` plus Gaussian noise, and samples ``x0`` with a pretrained
diffusion model guided by ``||g - g0(x0_hat(x_t))||`` (Algorithms 1 and 2).  The paper's results, as printed:

* Lemma 1 (Dwork & Roth 2014, Thm. A.1): the Gaussian mechanism is ``(eps, delta)``-DP if
  ``sigma >= Delta sqrt(2 ln(1.25/delta)) / eps``; the paper maps its noise variances to the epsilons of Table 1
  with it (484.48, 153.21, 48.45, 15.32 at ``delta = 1e-5``).
* Theorem 1, eq. (14) (proof eq. 15): the Jensen gap of the DPS approximation is at most
  ``d / sqrt(2 pi sigma^2) ||grad_x grad_W F|| int ||x0 - x0_hat|| dP(x0 | x_t)``.
* Lemma 2, eq. (19) (from DPS): a ``beta'``-strongly convex loss has Jensen gap ``>= beta'/2 sum_i sigma_i^2``.
* Lemma 3, eq. (20): the isotropic Gaussian density on ``R^d`` is ``L``-Lipschitz with
  ``L = d / sqrt(2 pi sigma^2) exp(-1 / (2 sigma^2))``.
* Theorem 2, eq. (21) (proof eqs. 22-27): the Jensen gap of the attack loss is at least
  ``1/2 (beta lambda_min(J_g^T J_g) - alpha L_g) sum_i sigma_i^2`` with ``L_g`` the constant of Lemma 3.
* Lemma 5, eq. (33): ``||grad_x L|| <= sqrt(lambda_max(J_g J_g^T)) L_g``.
* Theorem 4, eq. (37) (proof eqs. 38-44): a lower bound on the per-step change of the attack loss under the DSG
  step (Algorithm 2).
* Definition 3, eqs. (16)-(17): the Reconstruction Vulnerability ``RV = max_x ||grad_x grad_W F(x; W)||_F`` and
  its random-projection estimator.

What this module shows (*[ours]* marks quantities the paper does not give):

* Lemma 1 is used far outside its validity range ``eps < 1``; the exact epsilon of the same release (the
  analytic Gaussian mechanism, :func:`compendium.dp.epsilon_exact`) is 1.2 to 11 times the printed one
  (the chapter's ``epsilon_table``).
* Lemma 3's constant is not the Lipschitz constant of the density: the true one is
  ``(2 pi sigma^2)^(-d/2) e^(-1/2) / sigma`` (:func:`gaussian_density_lipschitz`), and for ``d = 1`` the two agree
  only at ``sigma = 1``.  ``L_g`` is *increasing* in ``sigma^2`` on ``(0, 1)``, so the paper's reading of Theorem 2
  ("larger noise, smaller ``L_g``") fails on every noise level it uses.
* Eq. (14) fails on a one-dimensional linear-Gaussian example (:func:`theorem1_linear_gaussian_check`) when the
  DP noise is small (``a = 1, s = sigma = 0.1``: the gap is 1.57 times the bound, 3.67 times in absolute value);
  in that example it holds for every ``a, s`` once ``sigma >= 1``.
* Eq. (21) fails on a one-dimensional example that satisfies Assumptions 1-4 (:func:`theorem2_logcosh_check`):
  the true Jensen gap is negative.
* Lemma 5 fails for a linear gradient map, and with its constant Theorem 4's right-hand side exceeds the true
  change (:func:`lemma5_bound`, :func:`theorem4_rhs`).

Everything is numpy/scipy and returns numbers (the chapter builds the tables); inputs are checked with
:mod:`compendium.validation`.
"""
from __future__ import annotations

import numpy as np
from scipy import stats

from compendium import dp, validation

__all__ = [
    "TABLE1_EPSILONS",
    "TABLE1_VARIANCES",
    "gaussian_density_lipschitz",
    "gaussian_mechanism_epsilon",
    "gaussian_mechanism_epsilon_exact",
    "lemma2_bound",
    "lemma3_lipschitz",
    "lemma3_ratio",
    "lemma5_bound",
    "linear_gaussian_jensen_gap",
    "linear_jensen_gap",
    "logcosh_jensen_gap",
    "lsq_gradient_jacobian",
    "lsq_jacobian_frobenius",
    "rv_definition3",
    "rv_eq17",
    "theorem1_bound",
    "theorem1_bound_line1",
    "theorem1_bound_true_lipschitz",
    "theorem1_linear_gaussian_check",
    "theorem2_bound",
    "theorem2_logcosh_check",
    "theorem4_rhs",
    "theorem4_trials",
]

# Table 1 of the paper, "Normalize" rows: the noise variances sigma^2 and the printed (eps, 1e-5) labels.
TABLE1_VARIANCES = (1e-4, 1e-3, 1e-2, 1e-1)
TABLE1_EPSILONS = (484.48, 153.21, 48.45, 15.32)


def _sigma(sigma, what="standard deviation of the Gaussian noise"):
    return validation.positive("sigma", sigma, what=what)


def _d(d):
    return validation.integer("d", d, minimum=1, what="dimension of the Gaussian density")


# ---------------------------------------------------------------------------------------------------------------
# Lemma 1: the Gaussian mechanism
# ---------------------------------------------------------------------------------------------------------------
def gaussian_mechanism_epsilon(sigma, *, delta, sensitivity=1.0, strict=False):
    """Lemma 1 solved for epsilon: ``eps = Delta sqrt(2 ln(1.25 / delta)) / sigma``.

    Dwork & Roth (2014, Thm. A.1), which the paper cites, prove the guarantee only for ``eps < 1``; the paper
    applies it at ``eps`` from 15 to 484 (Table 1), where the value is a number, not a guarantee (it is *below*
    the exact epsilon there, :func:`gaussian_mechanism_epsilon_exact`).  With ``strict=True`` a ``ValueError``
    is raised where ``eps >= 1``; otherwise the formula's value is returned everywhere (the paper's numbers).
    """
    s = _sigma(sigma)
    d = validation.probability("delta", delta)
    c = validation.positive("sensitivity", sensitivity, what="l2-sensitivity Delta")
    eps = np.sqrt(2.0 * np.log(1.25 / np.asarray(d, float))) * np.asarray(c, float) / np.asarray(s, float)
    if strict and np.any(eps >= 1.0):
        raise ValueError(f"epsilon={eps!r}; allowed: < 1 (Lemma 1 / Dwork & Roth Thm. A.1 holds only for "
                         f"epsilon < 1; use gaussian_mechanism_epsilon_exact)")
    return float(eps) if np.ndim(eps) == 0 else eps


def gaussian_mechanism_epsilon_exact(sigma, *, delta, sensitivity=1.0):
    """*[ours]* The exact epsilon of the same release: one Gaussian mechanism with noise multiplier
    ``sigma / Delta`` is ``mu``-GDP with ``mu = Delta / sigma``, and epsilon solves ``delta(eps) = delta`` for its
    privacy profile (Balle & Wang 2018; :func:`compendium.dp.epsilon_exact`).  Valid for every ``eps``."""
    s = _sigma(sigma)
    d = validation.probability("delta", delta)
    c = validation.positive("sensitivity", sensitivity, what="l2-sensitivity Delta")
    out = np.vectorize(lambda si, ci: dp.epsilon_exact(si / ci, 1, d), otypes=[float])(s, c)
    return float(out) if np.ndim(out) == 0 else out


# ---------------------------------------------------------------------------------------------------------------
# Lemma 3: the Lipschitz constant of a Gaussian density
# ---------------------------------------------------------------------------------------------------------------
def _log_true_lipschitz(s, d):
    return -0.5 * d * np.log(2.0 * np.pi * s * s) - np.log(s) - 0.5


def _log_lemma3(s, d):
    return np.log(d) - 0.5 * np.log(2.0 * np.pi * s * s) - 1.0 / (2.0 * s * s)


def gaussian_density_lipschitz(sigma, *, d):
    """*[ours]* The Lipschitz constant of the density ``phi`` of ``N(0, sigma^2 I_d)``:
    ``sup ||grad phi|| = (2 pi sigma^2)^(-d/2) e^(-1/2) / sigma``.

    ``||grad phi(x)|| = ||x|| / sigma^2 phi(x)`` depends on ``r = ||x||`` only and is largest at ``r = sigma``.
    Computed in log space; overflows to ``inf`` (e.g. ``d = 10^8``, ``sigma < (2 pi)^(-1/2)``) rather than raising.
    """
    s = np.asarray(_sigma(sigma), float)
    dd = np.asarray(_d(d), float)
    with np.errstate(over="ignore"):
        out = np.exp(_log_true_lipschitz(s, dd))
    return float(out) if np.ndim(out) == 0 else out


def lemma3_lipschitz(sigma, *, d):
    """Lemma 3, eq. (20), as printed: ``L = d / sqrt(2 pi sigma^2) exp(-1 / (2 sigma^2))``.

    The same expression is ``L_g`` in Theorem 2 (eq. 21) and Lemma 5 (eq. 33).  It is not a Lipschitz constant of
    the density (compare :func:`gaussian_density_lipschitz`, :func:`lemma3_ratio`).  As a function of
    ``sigma^2`` it increases on ``(0, 1)`` and is largest at ``sigma^2 = 1`` (``L / d = 0.24197``).
    """
    s = np.asarray(_sigma(sigma), float)
    dd = np.asarray(_d(d), float)
    out = dd / np.sqrt(2.0 * np.pi * s * s) * np.exp(-1.0 / (2.0 * s * s))
    return float(out) if np.ndim(out) == 0 else out


def lemma3_ratio(sigma, *, d):
    """*[ours]* Lemma 3's constant over the true Lipschitz constant,
    ``d (2 pi sigma^2)^((d-1)/2) sigma e^(1/2 - 1/(2 sigma^2))`` (computed in log space).

    Below 1 Lemma 3 is false.  For ``d = 1`` the ratio is ``sigma e^(1/2 - 1/(2 sigma^2))``: below 1 for
    ``sigma < 1``, 1 at ``sigma = 1``.
    """
    s = np.asarray(_sigma(sigma), float)
    dd = np.asarray(_d(d), float)
    with np.errstate(over="ignore"):
        out = np.exp(_log_lemma3(s, dd) - _log_true_lipschitz(s, dd))
    return float(out) if np.ndim(out) == 0 else out


# ---------------------------------------------------------------------------------------------------------------
# Theorem 1: the upper bound of the Jensen gap
# ---------------------------------------------------------------------------------------------------------------
def _theorem1_args(sigma, d, jacobian_norm, mean_deviation):
    s = np.asarray(_sigma(sigma, what="standard deviation of the DP noise"), float)
    dd = np.asarray(_d(d), float)
    j = np.asarray(validation.number("jacobian_norm", jacobian_norm, at_least=0.0,
                                     what="||grad_x grad_W F||"), float)
    m1 = np.asarray(validation.number("mean_deviation", mean_deviation, at_least=0.0,
                                      what="int ||x0 - x0_hat|| dP(x0 | x_t)"), float)
    return s, dd, j, m1


def theorem1_bound(*, sigma, d, jacobian_norm, mean_deviation):
    """Theorem 1, eq. (14): ``J <= d / sqrt(2 pi sigma^2) * ||grad_x grad_W F|| * m1``,
    ``m1 = int ||x0 - x0_hat|| dP(x0 | x_t)``.

    The constant is Lemma 3's without its exponential factor (the proof, eq. 15, drops ``exp(-1/(2 sigma^2)) <= 1``),
    so *[our reading]* the gap bounded is that of the likelihood ``phi_sigma(g - grad_W F(x0; W))``, not of
    ``grad_W F`` as the left-hand side is printed, and ``d`` (undefined in the paper) is the gradient dimension.
    """
    s, dd, j, m1 = _theorem1_args(sigma, d, jacobian_norm, mean_deviation)
    out = dd / np.sqrt(2.0 * np.pi * s * s) * j * m1
    return float(out) if np.ndim(out) == 0 else out


def theorem1_bound_line1(*, sigma, d, jacobian_norm, mean_deviation):
    """The first line of the proof of Theorem 1, eq. (15): eq. (14) times ``exp(-1 / (2 sigma^2))``, i.e. Lemma 3's
    ``L`` times ``||grad_x grad_W F|| * m1``."""
    s, dd, j, m1 = _theorem1_args(sigma, d, jacobian_norm, mean_deviation)
    out = dd / np.sqrt(2.0 * np.pi * s * s) * np.exp(-1.0 / (2.0 * s * s)) * j * m1
    return float(out) if np.ndim(out) == 0 else out


def theorem1_bound_true_lipschitz(*, sigma, d, jacobian_norm, mean_deviation):
    """*[ours]* Eq. (14) with the true Lipschitz constant of the density (:func:`gaussian_density_lipschitz`):
    ``|J| <= Lip(phi_sigma) * ||grad_x grad_W F|| * m1``.

    A valid bound on ``|E phi(g - G(x0)) - phi(g - G(x0_hat))|`` whenever ``jacobian_norm`` bounds the Lipschitz
    constant of ``G = grad_W F(. ; W)`` (its largest spectral norm; the Frobenius norm of Definition 3 is larger).
    """
    s, dd, j, m1 = _theorem1_args(sigma, d, jacobian_norm, mean_deviation)
    with np.errstate(over="ignore"):
        out = np.exp(_log_true_lipschitz(s, dd)) * j * m1
    return float(out) if np.ndim(out) == 0 else out


def _toy1_args(a, s, sigma):
    a = validation.number("a", a, what="slope of the gradient map g0(x) = a x")
    s = validation.positive("s", s, what="posterior standard deviation of x0 given x_t")
    sigma = _sigma(sigma, what="standard deviation of the DP noise")
    return float(a), float(s), float(sigma)


def linear_gaussian_jensen_gap(delta, *, a, s, sigma):
    """*[ours]* The exact Jensen gap of Theorem 1 in one dimension.

    With ``g0(x) = a x``, ``P(x0 | x_t) = N(mu, s^2)``, ``x0_hat = mu`` and the likelihood
    ``f(x0) = phi_sigma(g - a x0)``: ``J(delta) = E f(x0) - f(mu) = N(delta; 0, sigma^2 + a^2 s^2) -
    N(delta; 0, sigma^2)``, ``delta = g - a mu`` (a Gaussian convolution).
    """
    a, s, sigma = _toy1_args(a, s, sigma)
    delta = np.asarray(validation.number("delta", delta, what="g - a mu"), float)
    out = (stats.norm.pdf(delta, scale=np.sqrt(sigma**2 + a * a * s * s)) - stats.norm.pdf(delta, scale=sigma))
    return float(out) if np.ndim(out) == 0 else out


def theorem1_linear_gaussian_check(*, a, s, sigma) -> dict:
    """*[ours]* Eq. (14) against the exact gap of :func:`linear_gaussian_jensen_gap`, maximised over ``delta``.

    ``J`` is most negative at ``delta = 0`` and largest at ``delta^2 = 3 ln(v2/v1) / (1/v1 - 1/v2)``
    (``v1 = sigma^2``, ``v2 = sigma^2 + a^2 s^2``; where ``phi_v2 / v2 = phi_v1 / v1``).  ``||grad_x grad_W F|| =
    |a|`` and ``m1 = E|x0 - mu| = s sqrt(2/pi)``.  Returns the smallest gap ``min_gap`` (at ``delta = 0``), the
    largest ``max_gap`` (signed) and ``max_abs_gap``, where the largest occurs, the bounds of eqs. (14) and (15,
    line 1) and :func:`theorem1_bound_true_lipschitz`, and whether each bound holds for ``|J|``.  Eq. (14) fails,
    e.g., at ``a = 1, s = sigma = 0.1`` (``max J = 0.4987 > 0.3183``).
    """
    a, s, sigma = _toy1_args(a, s, sigma)
    v1, v2 = sigma**2, sigma**2 + a * a * s * s
    kw = {"sigma": sigma, "d": 1, "jacobian_norm": abs(a), "mean_deviation": s * np.sqrt(2.0 / np.pi)}
    if v2 == v1:  # a = 0: no gap
        peak, max_gap, at_zero = 0.0, 0.0, 0.0
    else:
        peak = float(np.sqrt(3.0 * np.log(v2 / v1) / (1.0 / v1 - 1.0 / v2)))
        max_gap = linear_gaussian_jensen_gap(peak, a=a, s=s, sigma=sigma)
        at_zero = -linear_gaussian_jensen_gap(0.0, a=a, s=s, sigma=sigma)
    max_abs = max(max_gap, at_zero)
    eq14, line1, true = theorem1_bound(**kw), theorem1_bound_line1(**kw), theorem1_bound_true_lipschitz(**kw)
    return {"a": a, "s": s, "sigma": sigma, "argmax_delta": peak, "min_gap": -at_zero, "max_gap": max_gap,
            "max_abs_gap": max_abs,
            "bound_eq14": eq14, "bound_eq15_line1": line1, "bound_true_lipschitz": true,
            "eq14_holds_signed": bool(max_gap <= eq14), "eq14_holds": bool(max_abs <= eq14),
            "eq15_line1_holds": bool(max_abs <= line1), "true_lipschitz_holds": bool(max_abs <= true)}


# ---------------------------------------------------------------------------------------------------------------
# Lemma 2 and Theorem 2: the lower bound of the Jensen gap
# ---------------------------------------------------------------------------------------------------------------
def _variances(posterior_variances):
    v = validation.number("posterior_variances", posterior_variances, at_least=0.0,
                          what="eigenvalues sigma_i^2 of the covariance of P(x0 | x_t)")
    return float(np.sum(v))


def lemma2_bound(*, beta_prime, posterior_variances):
    """Lemma 2, eq. (19): ``J >= beta'/2 * sum_i sigma_i^2`` for a ``beta'``-strongly convex loss in ``x`` and a
    Gaussian ``P(x0 | x_t)`` with covariance eigenvalues ``sigma_i^2`` (equality for a quadratic loss)."""
    b = validation.positive("beta_prime", beta_prime, what="strong convexity of the loss in x")
    return 0.5 * b * _variances(posterior_variances)


def theorem2_bound(*, beta, alpha, lambda_min, sigma, d, posterior_variances):
    """Theorem 2, eq. (21): ``J >= 1/2 (beta lambda_min(J_g^T J_g) - alpha L_g) sum_i sigma_i^2`` with
    ``L_g = d / sqrt(2 pi sigma^2) exp(-1/(2 sigma^2))`` (Lemma 3; ``sigma`` the DP noise).

    Evaluated as printed.  The proof's eqs. (25)-(26) carry a factor ``m`` (``m alpha L_g``) that eqs. (27) and
    (21) drop; eq. (25) bounds ``|dL/dg_i|`` by the smoothness ``alpha``; and ``L_g``, the smoothness of ``g`` in
    Assumption 3, is replaced by Lemma 3's density constant.  Counterexample: :func:`theorem2_logcosh_check`.
    """
    b = validation.positive("beta", beta, what="strong convexity of the loss in g (Assumption 1)")
    al = validation.positive("alpha", alpha, what="smoothness of the loss in g (Assumption 2)")
    lam = validation.number("lambda_min", lambda_min, at_least=0.0, what="smallest eigenvalue of J_g^T J_g")
    total = _variances(posterior_variances)
    lg = lemma3_lipschitz(sigma, d=d)
    return 0.5 * (b * lam - al * lg) * total


def linear_jensen_gap(A, cov) -> float:
    """*[ours]* The exact Jensen gap of ``L(x) = ||A x - g~||^2`` under ``x ~ N(mu, Sigma)``: ``tr(A^T A Sigma)``
    (independent of ``mu`` and ``g~``).  Here ``g`` is linear, its true smoothness is 0, and the gap is at least
    ``lambda_min(A^T A) tr(Sigma)``, eq. (21) with ``beta = 2`` and ``L_g = 0``: the bound holds."""
    A = np.atleast_2d(np.asarray(A, float))
    cov = np.atleast_2d(np.asarray(cov, float))
    if cov.shape != (A.shape[1], A.shape[1]) or not np.all(np.isfinite(cov)) or not np.all(np.isfinite(A)):
        raise ValueError(f"cov=<array of shape {cov.shape}>; allowed: a finite ({A.shape[1]}, {A.shape[1]}) matrix "
                         f"(A has {A.shape[1]} columns)")
    if not np.allclose(cov, cov.T) or np.linalg.eigvalsh(0.5 * (cov + cov.T)).min() < -1e-12:
        raise ValueError(f"cov={cov.tolist()}; allowed: a symmetric positive semi-definite matrix (covariance)")
    return float(np.trace(A.T @ A @ cov))


def _logcosh(x):
    x = np.abs(x)
    return x + np.log1p(np.exp(-2.0 * x)) - np.log(2.0)


def logcosh_jensen_gap(*, c, residual, s, n_nodes=80) -> float:
    """*[ours]* The Jensen gap of ``L(x) = (g(x) - g~)^2`` with ``g(x) = x - c log cosh(x)`` under
    ``x ~ N(0, s^2)``, ``residual = g(0) - g~ = -g~``, by Gauss-Hermite quadrature (``n_nodes`` nodes).

    For ``0 < c < 1`` this satisfies Assumptions 1-4 everywhere: ``L`` is 2-strongly convex and 2-smooth in ``g``
    (``beta = alpha = 2``), ``g'' = -c sech^2`` is bounded by ``c`` (A3 with smoothness ``c``) and
    ``g' = 1 - c tanh`` lies in ``[1 - c, 1 + c]`` (A4).  For small ``s`` the gap is about
    ``s^2 (1 - c * residual)``: negative once ``c * residual > 1``.
    """
    c = validation.number("c", c, above=0.0, below=1.0, what="curvature of g")
    r = validation.number("residual", residual, what="g(mu) - g~")
    s = validation.positive("s", s, what="posterior standard deviation of x0 given x_t")
    n = validation.integer("n_nodes", n_nodes, minimum=2)
    z, w = np.polynomial.hermite_e.hermegauss(n)
    x = s * z
    loss = (x - c * _logcosh(x) + r) ** 2
    return float(np.dot(w, loss) / np.sqrt(2.0 * np.pi) - r * r)


def theorem2_logcosh_check(*, c, residual, s, sigma) -> dict:
    """*[ours]* Eq. (21) against the exact gap of :func:`logcosh_jensen_gap` (one dimension, ``d = m = n = 1``,
    DP noise ``sigma``).

    Returns the gap and eq. (21) with ``beta = alpha = 2`` and ``lambda_min`` taken at the posterior mean
    (``g'(0)^2 = 1``) and as its infimum over ``R`` (``(1 - c)^2``), and, as a reading more favourable to the paper,
    with ``L_g`` replaced by the true smoothness ``c`` of ``g`` (Assumption 3).  The bound fails in all three
    readings where the gap is negative, e.g. ``c = 0.5``, ``residual = 10``, ``s = sigma = 0.1``: gap ``-0.04``.
    The proof breaks at eq. (25): ``|dL/dg| = 2 |g - g~|`` is not bounded by ``alpha``.
    """
    c = validation.number("c", c, above=0.0, below=1.0, what="curvature of g")
    validation.number("residual", residual, what="g(mu) - g~")
    validation.positive("s", s, what="posterior standard deviation of x0 given x_t")
    _sigma(sigma, what="standard deviation of the DP noise")
    gap = logcosh_jensen_gap(c=c, residual=residual, s=s)
    var = float(s) ** 2
    at_mean = theorem2_bound(beta=2.0, alpha=2.0, lambda_min=1.0, sigma=sigma, d=1, posterior_variances=var)
    at_inf = theorem2_bound(beta=2.0, alpha=2.0, lambda_min=(1.0 - c) ** 2, sigma=sigma, d=1,
                            posterior_variances=var)
    smooth = 0.5 * (2.0 * (1.0 - c) ** 2 - 2.0 * c) * var
    return {"c": float(c), "residual": float(residual), "s": float(s), "sigma": float(sigma), "gap": gap,
            "L_g": lemma3_lipschitz(sigma, d=1), "bound_at_mean": at_mean, "bound_inf_lambda": at_inf,
            "bound_true_smoothness": smooth, "holds_at_mean": bool(gap >= at_mean),
            "holds_inf_lambda": bool(gap >= at_inf), "holds_true_smoothness": bool(gap >= smooth)}


# ---------------------------------------------------------------------------------------------------------------
# Lemma 5 and Theorem 4: the per-step change of the attack loss
# ---------------------------------------------------------------------------------------------------------------
def lemma5_bound(*, lambda_max, sigma, d):
    """Lemma 5, eq. (33): ``||grad_x L(x_t)|| <= sqrt(lambda_max(J_g J_g^T)) * L_g`` (``L_g`` of Lemma 3).

    The proof's last step uses ``||grad_g L|| <= L_g``, which no assumption gives: for ``L = ||g - g~||``
    (Algorithms 1-2) ``||grad_g L|| = 1``, and the bound that holds is ``sqrt(lambda_max) = ||J_g||_2``.
    """
    lam = validation.number("lambda_max", lambda_max, at_least=0.0, what="largest eigenvalue of J_g J_g^T")
    return float(np.sqrt(lam) * lemma3_lipschitz(sigma, d=d))


def theorem4_rhs(*, beta_prime, n, sigma_t, k, grad_bound):
    """Theorem 4, eq. (37): ``L(x_{t-1}) - L(x_t) >= beta' n sigma_t^2 / 2 + beta' k sqrt(n) sigma_t
    - (k + sqrt(n) sigma_t) G + beta' k^2 / 2``, which equals ``beta'/2 s^2 - s G`` with ``s = sqrt(n) sigma_t + k``.

    ``G`` (``grad_bound``) is the paper's ``sqrt(lambda_max(J_g J_g^T)) L_g`` (:func:`lemma5_bound`); the bound
    holds for a ``beta'``-strongly convex loss whenever ``G >= ||grad_x L(x_t)||`` and the step is
    ``x_{t-1} - x_t = -s grad L / ||grad L||`` (the proof's construction ``u_theta(x_t) - x_t = -k d``, which
    Algorithm 2 does not guarantee).
    """
    b = validation.positive("beta_prime", beta_prime, what="strong convexity of the loss in x")
    n = validation.integer("n", n, minimum=1, what="image dimension")
    st = validation.number("sigma_t", sigma_t, at_least=0.0, what="sampler noise std at step t")
    k = validation.positive("k", k, what="length of u_theta(x_t) - x_t along -d")
    g = validation.number("grad_bound", grad_bound, at_least=0.0, what="G >= ||grad_x L(x_t)||")
    rn = np.sqrt(np.asarray(n, float)) * np.asarray(st, float)
    out = b * rn**2 / 2.0 + b * k * rn - (k + rn) * np.asarray(g, float) + b * k * k / 2.0
    return float(out) if np.ndim(out) == 0 else out


def theorem4_trials(*, trials, n, rng) -> tuple[np.ndarray, np.ndarray]:
    """*[ours]* Theorem 4 under its own construction, ``trials`` random cases at once (batched, no loop): a quadratic
    loss ``L(x) = 1/2 (x - x*)^T H (x - x*)`` with ``H = Q Q^T + I/2`` (``Q`` standard normal, ``n x n``), so
    ``beta' = lambda_min(H)``; a point ``x_t ~ N(0, 9 I)``; any ``G = ||grad L(x_t)|| (1 + U)`` above the gradient
    norm; ``sigma_t ~ U(0, 1)``, ``k ~ U(0, 2)``; the step ``x_{t-1} = x_t - s d``, ``d = grad / ||grad||``,
    ``s = sqrt(n) sigma_t + k``.  Returns the true change ``L(x_{t-1}) - L(x_t)`` and eq. (37)'s right-hand side
    (:func:`theorem4_rhs`), each of shape (trials,): the theorem holds where the first is at least the second."""
    t = validation.integer("trials", trials)
    n = validation.integer("n", n, what="dimension")
    Q = rng.normal(size=(t, n, n))
    H = Q @ Q.transpose(0, 2, 1) + 0.5 * np.eye(n)
    star, xt = rng.normal(size=(t, n)), 3.0 * rng.normal(size=(t, n))
    grad = np.einsum("tij,tj->ti", H, xt - star)
    norm = np.linalg.norm(grad, axis=1)
    G, sigma_t, k = norm * (1.0 + rng.random(t)), rng.random(t), 2.0 * rng.random(t)
    s = np.sqrt(n) * sigma_t + k

    def loss(x):
        return 0.5 * np.einsum("ti,tij,tj->t", x - star, H, x - star)

    change = loss(xt - (s / norm)[:, None] * grad) - loss(xt)
    rhs = theorem4_rhs(beta_prime=np.linalg.eigvalsh(H)[:, 0], n=n, sigma_t=sigma_t, k=k, grad_bound=G)
    return change, rhs


# ---------------------------------------------------------------------------------------------------------------
# Definition 3: Reconstruction Vulnerability of a linear least-squares model
# ---------------------------------------------------------------------------------------------------------------
def _lsq_args(W, x, y):
    W = np.atleast_2d(np.asarray(W, float))
    x = np.asarray(x, float).ravel()
    y = np.asarray(y, float).ravel()
    K, D = W.shape
    if x.size != D:
        raise ValueError(f"x={x.tolist()}; allowed: {D} numbers (W is {K} x {D})")
    if y.size != K:
        raise ValueError(f"y={y.tolist()}; allowed: {K} numbers (W is {K} x {D})")
    return W, x, y


def lsq_gradient_jacobian(W, x, y) -> np.ndarray:
    """*[ours]* ``J = grad_x grad_W F`` for ``F(x; W) = 1/2 ||W x - y||^2``: a ``(K D) x D`` matrix whose row
    ``(k, i)`` (row-major, as ``grad_W F`` flattened) is ``d(grad_W F)_{ki} / dx_j = W_{kj} x_i + r_k delta_{ij}``,
    ``r = W x - y``."""
    W, x, y = _lsq_args(W, x, y)
    K, D = W.shape
    r = W @ x - y
    J = W[:, None, :] * x[None, :, None] + r[:, None, None] * np.eye(D)[None]
    return J.reshape(K * D, D)


def lsq_jacobian_frobenius(W, x, y) -> float:
    """*[ours]* ``||J||_F = sqrt(||W||_F^2 ||x||^2 + 2 r^T W x + D ||r||^2)`` for :func:`lsq_gradient_jacobian`."""
    W, x, y = _lsq_args(W, x, y)
    r = W @ x - y
    return float(np.sqrt(np.sum(W * W) * (x @ x) + 2.0 * r @ (W @ x) + W.shape[1] * (r @ r)))


def rv_definition3(jacobians) -> float:
    """Definition 3, eq. (16): ``RV = max_x ||grad_x grad_W F(x; W)||_F`` over the given Jacobians (one per image)."""
    return float(max(np.linalg.norm(np.asarray(J, float), "fro") for J in jacobians))


def rv_eq17(jacobians, directions) -> float:
    """Eq. (17): ``RV ~ 1/(N M) sum_i sum_j ||grad_x (v_ij^T grad_W F(x_i; W))|| = mean ||J_i^T v_ij||``.

    ``directions`` has shape ``(N, M, m)`` (directions per image) or ``(M, m)`` (shared).  The paper does not give
    the law of ``v``: Gaussian ``v`` gives ``E ||J^T v||^2 = ||J||_F^2``, unit ``v`` gives ``||J||_F^2 / m``, and
    either way the mean of norms is not the maximum of Definition 3 (eq. 16).
    """
    Js = [np.asarray(J, float) for J in jacobians]
    V = np.asarray(directions, float)
    if V.ndim == 2:
        V = np.broadcast_to(V, (len(Js),) + V.shape)
    if V.ndim != 3 or V.shape[0] != len(Js) or any(V.shape[2] != J.shape[0] for J in Js):
        raise ValueError(f"directions=<array of shape {np.shape(directions)}>; allowed: shape (N, M, m) or (M, m) "
                         f"with N = {len(Js)} Jacobians of m rows")
    return float(np.mean([np.linalg.norm(V[i] @ J, axis=1).mean() for i, J in enumerate(Js)]))
