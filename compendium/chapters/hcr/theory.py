"""The HCR chapter's theory checks, each against a closed form: eq. (12) (Appendix A), the Cramér-Rao limit of
eqs. (13)-(18) on a linear map and on a smooth network, and Algorithm 1 on a linear map."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.integrate
import torch

from compendium import checks, models
from compendium.attacks import feature_inversion as inversion
from compendium.bounds import hcr

def chi2_quadrature(c: float) -> float:
    """The left side of eq. (12) for ``||z|| / sigma = c`` as a one-dimensional integral (Appendix A): after a
    rotation only one standard normal coordinate ``u`` matters, and the integrand is
    ``(e^{cu - c^2/2} - 1)^2 phi(u)``."""
    f = lambda u: (np.exp(2 * c * u - c * c - u * u / 2) - 2 * np.exp(c * u - c * c / 2 - u * u / 2)  # noqa: E731
                   + np.exp(-u * u / 2)) / np.sqrt(2 * np.pi)
    return scipy.integrate.quad(f, -40, 40 + 4 * c, epsabs=1e-14, epsrel=1e-13, limit=200)[0]


@dataclass
class Chi2Check:
    """:func:`chi2_check`'s result: ``table`` (one row per ``c``: eq. 12's closed form and the quadrature), and the
    five-dimensional example ``z``, ``sigma``: its closed form ``closed`` and Monte-Carlo mean ``mc_mean`` with its
    standard error ``mc_se``."""

    table: pd.DataFrame
    z: np.ndarray
    sigma: float
    closed: float
    mc_mean: float
    mc_se: float


def chi2_check(seed: int, cs=(0.1, 1.0, 2.0), draws: int = 400_000) -> Chi2Check:
    """Eq. (12) (Appendix A, eqs. 19-28) three ways: the closed form ``exp(||z||^2 / sigma^2) - 1``
    (:func:`hcr.gaussian_chi2`), the one-dimensional quadrature (:func:`chi2_quadrature`) at ``c = ||z|| / sigma``
    in ``cs``, and a Monte-Carlo average of the squared likelihood-ratio deviation (eq. 11) over ``draws`` normal
    vectors in ``n = 5`` dimensions (``z = (0.3, -0.2, 0.1, 0, 0.4)``, ``sigma = 0.7``; torch generator ``seed``)."""
    rows = []
    for c in cs:
        rows.append({"c = ||z||/σ": c, "closed form (12)": float(hcr.gaussian_chi2(np.array([c]), 1.0)),
                     "quadrature": chi2_quadrature(c)})
    z, sigma = np.array([0.3, -0.2, 0.1, 0.0, 0.4]), 0.7
    u = torch.randn(draws, 5, generator=torch.Generator().manual_seed(seed), dtype=torch.float64).numpy()
    ratio = np.exp((2 * sigma * u @ z - z @ z) / (2 * sigma**2))  # f(Z - z) / f(Z) at Z = sigma u
    mc_mean, mc_se = checks.mean_se((ratio - 1) ** 2)
    closed = float(hcr.gaussian_chi2(z, sigma))
    rows.append({"c = ||z||/σ": np.linalg.norm(z) / sigma, "closed form (12)": closed,
                 "quadrature": chi2_quadrature(np.linalg.norm(z) / sigma)})
    return Chi2Check(pd.DataFrame(rows), z, sigma, closed, mc_mean, mc_se)


def cumulative_sum_map(p: int = 64):
    """The linear feature map ``a_theta = A theta`` with ``A`` the ``p x p`` lower-triangular ones (a cumulative sum;
    its inverse is the first difference), on ``(b, 8, 8)`` inputs: returns ``(A, batched torch map)``."""
    A = np.tril(np.ones((p, p)))
    A_t = torch.tensor(A)
    return A, (lambda t: t.reshape(t.shape[0], -1) @ A_t.T)


@dataclass
class LinearCheck:
    """:func:`cumulative_sum_check`'s result.  ``A``, ``linear_map``, ``theta`` (the ``(1, 8, 8)`` input); ``crb``
    and ``eq18`` per coordinate; ``along``: ``{t: HCR variance bound on coordinate 10 along t (A^T A)^{-1} e_10}``;
    ``random_ratio``: the largest ``HCR / CRB`` over the random directions; ``ols`` ``(draws, p)`` the OLS estimates,
    ``ols_var`` their variances; ``table``: ``along`` next to ``CRB x / (e^x - 1)``."""

    A: np.ndarray
    linear_map: object
    theta: torch.Tensor
    crb: np.ndarray
    eq18: np.ndarray
    along: dict
    random_ratio: float
    ols: np.ndarray
    ols_var: np.ndarray
    table: pd.DataFrame


def cumulative_sum_check(seed: int, k: int = 10, ts=(1.0, 0.1, 0.005, 0.001), directions: int = 2000,
                         draws: int = 20_000) -> LinearCheck:
    """The Cramer-Rao limit of eqs. (13)-(18) on the cumulative-sum map (:func:`cumulative_sum_map`, ``sigma = 1``),
    where everything has a closed form: the CRB ``sigma^2 [(A^T A)^{-1}]_kk`` (1, 2, ..., 2) against the paper's
    eq. (18) ``sigma^2 / ||A e_k||^2``; the HCR bound (5)+(12) along the CRB direction ``t (A^T A)^{-1} e_k`` for
    each ``t``, which equals ``CRB_k x / (e^x - 1)`` with ``x = ||A eps||^2 / sigma^2``; the HCR bound of
    ``directions`` random small perturbations (numpy ``default_rng(seed)``), none of which may exceed the CRB; and
    the ordinary least-squares estimator ``A^{-1} X`` on ``draws`` releases ``X = A theta + Z`` (torch generator
    ``seed``), unbiased with variance equal to the CRB."""
    A, linear_map = cumulative_sum_map()
    p = A.shape[0]
    crb = hcr.cramer_rao_bound(A, 1.0)
    eq18 = hcr.fisher_diagonal_bound_eq18(A, 1.0)
    w = hcr.crb_direction(A, k)
    along = {}
    for t in ts:
        eps_t = t * w
        along[t] = hcr.hcr_sd_bound(eps_t, A @ eps_t, 1.0)[k] ** 2
    rand_eps = 0.01 * np.random.default_rng(seed).standard_normal((directions, p))  # small: near the limit
    rand_hcr = hcr.hcr_sd_bound(rand_eps, rand_eps @ A.T, 1.0) ** 2
    theta = torch.linspace(-1, 1, p, dtype=torch.float64).reshape(1, 8, 8)
    X = linear_map(theta) + torch.randn(draws, p, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    ols = inversion.linearised_estimator(linear_map, X, theta).reshape(draws, p).numpy()
    table = pd.DataFrame({"t": list(along), "HCR along (AᵀA)⁻¹e₁₀": list(along.values()),
                          "CRB·x/(eˣ−1)": [hcr.hcr_linear_optimal(crb[k], t**2 * (A @ w) @ (A @ w)) for t in along]})
    return LinearCheck(A, linear_map, theta, crb, eq18, along, float(np.max(rand_hcr / crb)), ols,
                       ols.var(axis=0, ddof=1), table)


@dataclass
class SmoothLimit:
    """:func:`smooth_network_limit`'s result: ``table`` (one row per ``tau``), and the CRB and eq. (18) of the
    coordinate."""

    table: pd.DataFrame
    crb: float
    eq18: float


def smooth_network_limit(seed: int, sigma: float = 0.05, k: int = 5,
                         taus=(1.0, 0.3, 0.1, 0.03, 0.01, 0.003, 0.001)) -> SmoothLimit:
    """The Cramer-Rao limit of eqs. (13)-(18) for a nonlinear map: a smooth network (two tanh layers, 16 -> 40 -> 40,
    float64, initialised from ``seed``) at a random ``4 x 4`` input.  Along the CRB direction ``(J^T J)^{-1} e_k`` of
    its Jacobian, the step is bisected until the exact feature change has ``||z_eps|| / sigma = tau``; the HCR
    variance bound (5)+(12) from that exact forward pass is tabulated against the CRB and the linear theory
    ``tau^2 / (e^{tau^2} - 1)``."""
    smooth = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(16, 40), torch.nn.Tanh(), torch.nn.Linear(40, 40),
                                 torch.nn.Tanh()).double()
    models.init_parameters(smooth, torch.Generator().manual_seed(seed))
    smooth.requires_grad_(False)
    x = torch.randn(1, 4, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(seed + 1))
    J = torch.func.jacrev(lambda t: smooth(t.reshape(1, 4, 4))[0])(x.reshape(-1)).numpy()
    crb = hcr.cramer_rao_bound(J, sigma)[k]
    eq18 = hcr.fisher_diagonal_bound_eq18(J, sigma)[k]
    w = hcr.crb_direction(J, k)
    rows = []
    for tau in np.array(taus):
        lo, hi = 0.0, 10.0 * tau * sigma / np.linalg.norm(J @ w)
        for _ in range(80):  # bisect the step so that the exact feature change has ||z|| / sigma = tau
            mid = (lo + hi) / 2
            _, z = hcr.hcr_sd_along(smooth, x, torch.tensor(mid * w).reshape(1, 4, 4), sigma)
            lo, hi = (mid, hi) if np.linalg.norm(z) / sigma < tau else (lo, mid)
        b, z = hcr.hcr_sd_along(smooth, x, torch.tensor(lo * w).reshape(1, 4, 4), sigma)
        rows.append({"τ = ||z_ε||/σ": tau, "HCR variance bound": b.ravel()[k] ** 2,
                     "HCR / CRB": b.ravel()[k] ** 2 / crb, "linear theory τ²/(e^τ²−1)": tau**2 / np.expm1(tau**2)})
    return SmoothLimit(pd.DataFrame(rows), crb, eq18)


@dataclass
class Algorithm1Check:
    """:func:`algorithm1_linear_check`'s result: ``rel_err`` (per restart, LSQR against the closed form),
    ``stationary`` (how much the repetitions change ``eps``), ``efficiency`` (``8 x 8``: the bound over
    ``sqrt(CRB)`` per DCT mode), ``max25`` (Monte Carlo of ``E max_25 |N(0,1)|``), ``ratio`` (``||z_eps|| / ||eps||``
    per restart) and ``sv_min`` (the smallest singular value of the map)."""

    rel_err: np.ndarray
    stationary: float
    efficiency: np.ndarray
    max25: float
    ratio: np.ndarray
    sv_min: float


def algorithm1_linear_check(lin: LinearCheck, seed: int) -> Algorithm1Check:
    """Algorithm 1 (Sec. 2.2) on the cumulative-sum map of :func:`cumulative_sum_check` (``sigma = 1``, ``s = 1/200``).

    1. With tight LSQR tolerances (``1e-14``), 5 restarts and ``i = 3``: the relative error of ``eps`` against the
       closed form ``A^+ z`` (:func:`hcr.algorithm1_linear_closed_form`), and the change of ``eps`` between ``i = 1``
       and ``i = 3`` (the loop is stationary after one step for an invertible map).
    2. With the authors' tolerance, 25 restarts and ``i = 10``: the per-DCT-mode efficiency ``bound / sqrt(CRB)``,
       whose median should be ``E max_25 |N(0,1)| / sqrt(64)`` (estimated from 200,000 x 25 normal draws), and the
       ratio ``||z_eps|| / ||eps||`` that the paper says the repetitions approximately minimise.
    """
    A, p = lin.A, lin.A.shape[0]
    exact = hcr.hcr_bound(lin.linear_map, lin.theta, 1.0, num_restarts=5, num_power_iterations=3, diffdiv=200.0,
                          generator=torch.Generator().manual_seed(seed), lsqr_atol=1e-14, lsqr_btol=1e-14)
    closed = np.array([hcr.algorithm1_linear_closed_form(A, z0 / np.sqrt(p) / 200.0, 3)[0]
                       for z0 in exact.noise[:, 0]])
    rel_err = np.linalg.norm(exact.eps.reshape(5, -1) - closed, axis=1) / np.linalg.norm(closed, axis=1)
    one_step = hcr.hcr_bound(lin.linear_map, lin.theta, 1.0, num_restarts=5, num_power_iterations=1, diffdiv=200.0,
                             generator=torch.Generator().manual_seed(seed), lsqr_atol=1e-14, lsqr_btol=1e-14)
    stationary = np.max(np.abs(one_step.eps - exact.eps)) / np.max(np.abs(exact.eps))
    code_run = hcr.hcr_bound(lin.linear_map, lin.theta, 1.0, num_restarts=25, num_power_iterations=10, diffdiv=200.0,
                             generator=torch.Generator().manual_seed(seed))
    crb_dct = hcr.cramer_rao_bound(A, 1.0, directions=hcr.dct_matrix((8, 8))).reshape(8, 8)
    efficiency = code_run.bound_dct[0] / np.sqrt(crb_dct)
    max25 = np.abs(np.random.default_rng(seed).standard_normal((200_000, 25))).max(axis=1).mean()
    sv_min = np.linalg.svd(A, compute_uv=False).min()
    return Algorithm1Check(rel_err, stationary, efficiency, max25, code_run.ratio, sv_min)


