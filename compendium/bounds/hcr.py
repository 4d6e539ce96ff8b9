"""Bounds of Chaudhuri, Guo, van der Maaten, Mahloujifar, Tygert (2024), "Guarantees of confidentiality via
Hammersley-Chapman-Robbins bounds".

Setting (Sec. 2.2, eqs. 7-11): the client reveals dithered features ``X = a_theta + Z`` of its input ``theta``
(``p`` values, e.g. an image of shape ``(C, H, W)``) with ``Z ~ N(0, sigma^2 I_n)``.  The Hammersley-Chapman-Robbins
(HCR) inequality lower-bounds the variance of every *unbiased* estimator of the input; for Gaussian dithering its
denominator has the closed form (12), so one forward pass at ``theta + eps`` gives a rigorous bound for whatever
perturbation ``eps`` is used.  Algorithm 1 (:func:`hcr_bound`) finds such perturbations by repeated LSQR on the
Jacobian of the feature map, applied matrix-free through ``torch.func.jvp`` / ``torch.func.vjp``; the paper reports
the bound as a standard deviation per mode of the orthonormal 2-D DCT-II, maximised over 25 random starts.

Functions marked *[ours]* are corrections or closed forms that the paper does not give: the paper's eq. (17) is
false for ``n, p > 1`` and the first form of its eq. (18), ``sigma^2 / ||J e_k||^2``, is the single-direction bound
``1 / I_kk``, not the multivariate Cramer-Rao bound ``sigma^2 [(J^T J)^{-1}]_kk`` (:func:`cramer_rao_bound`), which
is the supremum of the HCR bound over all directions as the perturbation shrinks.

The closed forms are numpy/scipy and vectorised; :func:`hcr_bound` takes a torch feature map and tensors on any
device, and runs LSQR (scipy's recursion, ported to torch) in float64 on that device.
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
import scipy.fft
import torch

from compendium import base, validation
from compendium.jacobians import feature_jacobians

__all__ = [
    "gaussian_chi2", "hcr_variance_bound", "hcr_sd_bound", "hcr_mse_bound", "hcr_sd_along",
    "fisher_diagonal_bound_eq18", "cramer_rao_bound", "crb_direction", "hcr_linear_optimal",
    "dct2", "idct2", "dct_matrix", "low_frequency", "noise_sigma", "bound_visualisation",
    "algorithm1_linear_closed_form", "HCRResult", "hcr_bound", "float64_copy", "SOLVES", "CODE_ATOL_FACTOR",
    "linear_piece_extent", "jacobian_rank", "checkpoint_digest",
]


#: The authors' LSQR tolerance (``lsqr_atol="code"``), ``atol`` being this factor times the smallest ``||z_tilde||``
#: of the examples of a solve (github.com/facebookresearch/hcrbounds).
CODE_ATOL_FACTOR = 2e-2

_SIGMA = "standard deviation of the dithering noise"


def _sigma(sigma):
    """``sigma`` as a float (or a float array, elementwise): finite and > 0."""
    return validation.positive("sigma", sigma, what=_SIGMA)


# ---------------------------------------------------------------------------------------------------------------
# eqs. (2), (5), (6), (12): the HCR bound and the Gaussian chi-square divergence
# ---------------------------------------------------------------------------------------------------------------
def gaussian_chi2(z_eps, sigma):
    """Eq. (12) (Appendix A, eqs. 19-28): the HCR denominator for Gaussian dithering ``Z ~ N(0, sigma^2 I_n)``,

    ``E_theta[(f_{theta+eps}(X) / f_theta(X) - 1)^2] = chi^2(P_{theta+eps} || P_theta)``
    ``= exp(||z_eps||^2 / sigma^2) - 1``

    with ``z_eps = a_{theta+eps} - a_theta`` (eq. 10) the *exact* feature change.  ``z_eps`` has shape ``(..., n)``;
    the norm is over the last axis, so a batch of feature changes gives one divergence per row.  Computed with
    ``expm1`` (accurate for the tiny ``||z_eps|| / sigma`` of the paper's runs).
    """
    s = _sigma(sigma)
    z = np.asarray(z_eps, dtype=float)
    if z.ndim == 0:
        raise ValueError(f"z_eps={z_eps!r}; allowed: an array with at least one axis (the n features)")
    with np.errstate(over="ignore"):               # an overflow is +inf: the bound is 0, as it should be
        return np.expm1(np.sum(z * z, axis=-1) / s**2)


def hcr_variance_bound(delta_g, chi2):
    """Eq. (2): ``Var_theta(hat theta_k) >= (g_k(theta + eps) - g_k(theta))^2 / chi2``, elementwise (broadcast).

    ``delta_g`` is the change of the estimator's mean (eq. 1) under the perturbation, ``chi2`` the denominator (4)
    (eq. 12 for Gaussian noise).  For an unbiased estimator ``delta_g = eps_k`` and this is eq. (5).  A zero
    divergence with a nonzero numerator gives ``+inf`` (no unbiased estimator exists); ``0 / 0`` gives 0.
    """
    d = np.asarray(delta_g, dtype=float)
    c = np.asarray(chi2, dtype=float)
    if np.any(c < 0) or np.any(np.isnan(c)):
        raise ValueError(f"chi2={chi2!r}; allowed: numbers >= 0 (the chi-square divergence, eq. 4)")
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(d == 0, 0.0, d * d / c)
    return out


def hcr_sd_bound(eps, z_eps, sigma):
    """Eqs. (5) + (12) as a standard deviation (the quantity of Sec. 3): for every input coordinate ``k``,

    ``sd(hat theta_k) >= B_k(eps) = |eps_k| / sqrt(exp(||z_eps||^2 / sigma^2) - 1)``.

    ``eps`` has shape ``(batch, *input_shape)`` and ``z_eps`` shape ``(batch, n)``, or one example ``eps`` of any
    shape with ``z_eps`` of shape ``(n,)``.  Apply it to ``dct2(eps)`` for the per-DCT-mode bound the paper reports
    (the DCT is orthogonal, so eq. 2 with ``g = D theta`` holds).
    """
    e = np.abs(np.asarray(eps, dtype=float))
    z = np.asarray(z_eps, dtype=float)
    chi2 = gaussian_chi2(z, sigma)
    if z.ndim == 1:
        return np.sqrt(hcr_variance_bound(e, chi2))
    if z.ndim != 2 or e.ndim < 1 or e.shape[0] != z.shape[0]:
        raise ValueError(f"z_eps of shape {z.shape}; allowed: (n,), or (batch, n) with eps (batch, ...) (eps has "
                         f"shape {e.shape})")
    return np.sqrt(hcr_variance_bound(e, chi2.reshape((-1,) + (1,) * (e.ndim - 1))))


def hcr_mse_bound(eps, z_eps, sigma):
    """Eq. (6) with (12): ``E[(1/p) sum_k (hat theta_k - theta_k)^2] >= mean_k(eps_k^2) / chi2``,
    ``chi2 = exp(||z_eps||^2/sigma^2) - 1``.

    One example: ``eps`` of any shape, ``z_eps`` of shape ``(n,)``; a batch: ``(batch, ...)`` and ``(batch, n)``.
    """
    e = np.asarray(eps, dtype=float)
    z = np.asarray(z_eps, dtype=float)
    chi2 = gaussian_chi2(z, sigma)
    num = np.mean(e * e) if z.ndim == 1 else np.mean(e.reshape(e.shape[0], -1) ** 2, axis=1)
    return hcr_variance_bound(np.sqrt(num), chi2)


def hcr_sd_along(feature_map, x, eps, sigma):
    """The rigorous HCR standard-deviation bound (5)+(12) for one given perturbation, by one exact forward pass.

    ``feature_map`` is any torch function of the input (no differentiability needed, Sec. 2.1); ``x`` and ``eps``
    are tensors of the input shape.  Returns ``(bound, z_eps)`` as numpy arrays:
    ``|eps| / sqrt(expm1(||z||^2/sigma^2))``
    of the input shape, and the exact feature change ``z_eps = a_{x+eps} - a_x`` (eq. 10) in float64.
    """
    _sigma(sigma)
    with torch.no_grad():
        z = (feature_map(x + eps).reshape(-1).double() - feature_map(x).reshape(-1).double()).cpu().numpy()
    e = eps.detach().double().cpu().numpy()
    return hcr_sd_bound(e, z, sigma), z


# ---------------------------------------------------------------------------------------------------------------
# eqs. (13)-(18): the Cramer-Rao limit, and its correction [ours]
# ---------------------------------------------------------------------------------------------------------------
def fisher_diagonal_bound_eq18(J, sigma):
    """The first form of the paper's eq. (18): ``Var(hat theta_k) >= sigma^2 / sum_j J_jk^2 = sigma^2 / ||J e_k||^2``.

    This is the HCR bound along the single coordinate direction ``eps = eps_k e_k`` as ``eps_k -> 0`` (eq. 16), i.e.
    ``1 / I_kk`` with Fisher information ``I = J^T J / sigma^2``.  *[ours]* It is valid but it is **not** the
    multivariate Cramer-Rao bound, which is larger (:func:`cramer_rao_bound`); the paper's second form of (18),
    built on the elementwise reciprocal (17), is wrong for ``n, p > 1`` and is not implemented.  ``J`` is the
    ``(n, p)`` Jacobian (for a linear map ``a_theta = A theta``, ``J = A``).  Columns that are zero give ``+inf``.
    """
    s = _sigma(sigma)
    J = np.asarray(J, dtype=float)
    if J.ndim != 2:
        raise ValueError(f"J of shape {J.shape}; allowed: a 2-D array (the n x p Jacobian)")
    col = np.sum(J * J, axis=0)
    with np.errstate(divide="ignore"):
        return np.where(col > 0, s**2 / col, np.inf)


def cramer_rao_bound(J, sigma, directions=None, rcond: float = 1e-12):
    """*[ours]* The multivariate Cramer-Rao bound, the limit of eqs. (13)-(18) done right:

    ``Var(hat theta_k) >= [I^{-1}]_kk = sigma^2 [(J^T J)^{-1}]_kk``,

    which equals ``lim_{t -> 0} sup_w t^2 w_k^2 / (exp(t^2 ||J w||^2 / sigma^2) - 1)``, attained at
    ``w = (J^T J)^{-1} e_k`` (:func:`crb_direction`).  For a linear map ``A`` with noise ``sigma`` it is exact.

    ``directions`` (shape ``(m, p)``, rows ``d``) asks for the bound on the linear functionals ``d^T theta``,
    ``sigma^2 d^T (J^T J)^{-1} d``; with the rows of :func:`dct_matrix` this is the per-DCT-mode bound
    ``sigma^2 [D (J^T J)^{-1} D^T]_mm``.  Default: the coordinates (``d = e_k``).  A functional that is not in the
    row space of ``J`` (relative SVD cut-off ``rcond``) gets ``+inf``: no unbiased estimator exists.
    """
    s = _sigma(sigma)
    J = np.asarray(J, dtype=float)
    if J.ndim != 2:
        raise ValueError(f"J of shape {J.shape}; allowed: a 2-D array (the n x p Jacobian)")
    p = J.shape[1]
    D = np.eye(p) if directions is None else np.asarray(directions, dtype=float)
    if D.ndim != 2 or D.shape[1] != p:
        raise ValueError(f"directions of shape {D.shape}; allowed: shape (m, {p}) (one functional per row)")
    _, sv, Vt = np.linalg.svd(J, full_matrices=True)
    keep = sv > rcond * (sv[0] if sv.size else 0.0)
    r = int(np.sum(keep))
    coef = D @ Vt.T                                  # coordinates of each direction in the right singular basis
    out = s**2 * np.sum((coef[:, :r] / sv[:r]) ** 2, axis=1)
    null = np.linalg.norm(coef[:, r:], axis=1) > 1e-9 * np.maximum(np.linalg.norm(D, axis=1), 1e-300)
    return np.where(null, np.inf, out)


def linear_piece_extent(layers: torch.nn.Sequential, x: torch.Tensor, direction: torch.Tensor) -> float:
    """How far the input ``x`` (one example, batch of 1) can move along ``direction`` before the piecewise-linear
    ``layers`` (a ``Sequential`` of affine maps, ``Flatten`` and ``ReLU``) change linear piece: the smallest ``t > 0``
    at which the pre-activation ``h_u(x + t v)`` of some ReLU unit ``u`` crosses zero.  Inside the piece every
    pre-activation is affine in ``t``, ``h_u + t d_u`` with ``d_u`` its derivative along ``v`` (one
    ``torch.func.jvp``), so the first crossing is ``min { -h_u / d_u : h_u d_u < 0 }`` (``inf`` if there is none;
    ``0`` if a unit sits exactly at its kink).  *[ours]*: the extent of the null-space argument of the HCR chapter."""
    allowed = (torch.nn.Linear, torch.nn.Conv2d, torch.nn.Flatten, torch.nn.ReLU)
    if not isinstance(layers, torch.nn.Sequential) or not all(isinstance(m, allowed) for m in layers):
        raise ValueError("layers must be a torch.nn.Sequential of Linear, Conv2d, Flatten and ReLU modules; "
                         f"got {layers!r}")
    extent = math.inf
    for index, module in enumerate(layers):
        if isinstance(module, torch.nn.ReLU):
            with torch.no_grad():
                h, d = torch.func.jvp(layers[:index], (x,), (direction.reshape(x.shape).to(x.dtype),))
            if (h == 0).any():
                return 0.0
            crossing = h * d < 0
            if crossing.any():
                extent = min(extent, float((-h[crossing] / d[crossing]).min()))
    return extent


class JacobianRank(NamedTuple):
    """Per example: ``rank`` of ``J``; ``gap``, its largest discarded singular value over its largest (how cleanly
    the zero singular values separate); ``unidentifiable``, how many of the requested functionals have a component in
    the null space of ``J`` (an infinite Cramer-Rao bound: no unbiased estimator of them exists); ``null_direction``,
    a unit input direction ``v`` with ``J v = 0`` (the last right singular vector; ``None`` where ``J`` has full
    column rank)."""

    rank: np.ndarray
    gap: np.ndarray
    unidentifiable: np.ndarray
    null_direction: list


def jacobian_rank(feature_map, x: torch.Tensor, directions=None, rcond: float = 1e-6,
                  chunk_size: int = 4, rows: int | None = 256) -> JacobianRank:
    """*[ours]* Where the HCR bound is infinite: the numerical rank of the feature map's
    Jacobian at each input, from its singular values ``s`` (rank = number of ``s > rcond * s_max``).

    A functional ``d^T theta`` (a row of ``directions``, default the coordinates; the rows of :func:`dct_matrix` for
    the DCT modes) with a component outside the row space of ``J`` has an infinite Cramer-Rao bound, the same test
    as :func:`cramer_rao_bound` with this ``rcond``; for a piecewise-linear (ReLU) map a small step along a null
    direction leaves the features exactly unchanged, so the HCR bound (5) itself is unbounded there.

    ``x`` has shape ``(b, *input_shape)``; the Jacobians are formed ``chunk_size`` examples and ``rows`` output rows
    at a time in the dtype and on the device of ``x`` (memory ``chunk_size * n * p`` values, and the activations of
    ``chunk_size * rows`` backward passes), and decomposed on the host in float64 (LAPACK's SVD); use a float64 copy
    of the map (:func:`float64_copy`) for a clean gap.
    """
    validation.integer("chunk_size", chunk_size)
    if rows is not None:
        validation.integer("rows", rows, what="output rows per backward pass")
    validation.number("rcond", rcond, above=0.0, below=1.0, what="relative singular-value cut-off")
    p = x[0].numel()
    D = np.eye(p) if directions is None else np.asarray(directions, dtype=float)
    if D.ndim != 2 or D.shape[1] != p:
        raise ValueError(f"directions of shape {D.shape}; allowed: shape (m, {p}) (one functional per row)")
    ranks, gaps, unidentifiable, null_directions = [], [], [], []
    for start in range(0, x.shape[0], chunk_size):
        J = feature_jacobians(feature_map, x[start:start + chunk_size], rows=rows).detach().double().cpu().numpy()
        _, sv, Vt = np.linalg.svd(J, full_matrices=True)                      # batched over the chunk
        for s_b, Vt_b in zip(sv, Vt):
            r = int(np.sum(s_b > rcond * s_b[0]))
            ranks.append(r)
            gaps.append(float(np.max(s_b[r:], initial=0.0) / s_b[0]))
            null_part = np.linalg.norm(D @ Vt_b[r:].T, axis=1)
            unidentifiable.append(int(np.sum(null_part > 1e-9 * np.linalg.norm(D, axis=1))))
            null_directions.append(Vt_b[-1] if r < p else None)
    return JacobianRank(np.array(ranks), np.array(gaps), np.array(unidentifiable), null_directions)


def crb_direction(J, k: int):
    """*[ours]* The direction ``w = (J^T J)^{-1} e_k`` that attains the Cramer-Rao bound on coordinate ``k`` in the
    limit of small perturbations; ``J`` must have full column rank."""
    J = np.asarray(J, dtype=float)
    G = J.T @ J
    if np.linalg.matrix_rank(G) < G.shape[0]:
        raise ValueError(f"J of rank {np.linalg.matrix_rank(G)}; allowed: full column rank {G.shape[0]}")
    validation.integer("k", k, minimum=0, what="the coordinate")
    if k >= G.shape[0]:
        raise ValueError(f"k={k!r}; allowed: an integer in [0, {G.shape[0]}) (the coordinate)")
    return np.linalg.solve(G, np.eye(G.shape[0])[:, k])


def hcr_linear_optimal(crb, t2_norm_sq_over_sigma2):
    """*[ours]* The linear case of eqs. (13)-(18): for a linear map and ``eps = t (A^T A)^{-1} e_k`` the HCR variance
    bound is exactly ``CRB_k * x / (e^x - 1)`` with ``x = ||A eps||^2 / sigma^2``; it increases to ``CRB_k`` as
    ``x -> 0``."""
    x = np.asarray(t2_norm_sq_over_sigma2, dtype=float)
    if np.any(x < 0):
        raise ValueError(f"t2_norm_sq_over_sigma2={t2_norm_sq_over_sigma2!r}; allowed: numbers >= 0 "
                         "(x = ||A eps||^2 / sigma^2)")
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(x == 0, 1.0, x / np.expm1(x))
    return np.asarray(crb, dtype=float) * ratio


# ---------------------------------------------------------------------------------------------------------------
# the orthonormal 2-D DCT-II and low-frequency filtering (Sec. 3; the authors' code)
# ---------------------------------------------------------------------------------------------------------------
def dct2(x):
    """Orthonormal type-II DCT over the last two (spatial) axes, each channel separately:
    ``scipy.fft.dctn(x, axes=(-2, -1), norm="ortho")``.  The paper's ``D``; orthogonal, so ``||D x|| = ||x||``."""
    x = np.asarray(x, dtype=float)
    if x.ndim < 2:
        raise ValueError(f"x of shape {x.shape}; allowed: at least two (spatial) axes")
    return scipy.fft.dctn(x, axes=(-2, -1), norm="ortho")


def idct2(c):
    """Inverse of :func:`dct2`: ``scipy.fft.idctn(c, axes=(-2, -1), norm="ortho")`` (= ``D^T``)."""
    c = np.asarray(c, dtype=float)
    if c.ndim < 2:
        raise ValueError(f"c of shape {c.shape}; allowed: at least two (spatial) axes")
    return scipy.fft.idctn(c, axes=(-2, -1), norm="ortho")


def dct_matrix(shape):
    """The ``(p, p)`` matrix ``D`` of :func:`dct2` on flattened inputs of ``shape`` (``(H, W)`` or ``(C, H, W)``):
    ``dct2(x).ravel() == D @ x.ravel()`` and ``D^T D = I``.  Rows are the DCT modes in C order."""
    shape = tuple(int(v) for v in shape)
    if len(shape) < 2 or any(v < 1 for v in shape):
        raise ValueError(f"shape={shape!r}; allowed: at least two positive axes")
    p = int(np.prod(shape))
    return dct2(np.eye(p).reshape((p,) + shape)).reshape(p, p).T


def low_frequency(modes, L: int):
    """The paper's filter: keep the lowest ``L x L`` DCT frequencies of each channel, ``modes[..., :L, :L]``
    (``L = 8`` for MNIST/CIFAR-10, ``32`` for ImageNet: Figures 1, 3, 5 and 6)."""
    L = validation.integer("L", L, what="side of the low-frequency block")
    modes = np.asarray(modes)
    if modes.ndim < 2 or L > min(modes.shape[-2:]):
        raise ValueError(f"L={L}; allowed: at most the spatial size {modes.shape[-2:]} (side of the low-frequency "
                         "block)")
    return modes[..., :L, :L]


def noise_sigma(features, kappa):
    """The noise level of the authors' code, github.com/facebookresearch/hcrbounds (never stated in the paper):
    ``sigma = kappa * sqrt(mean of a_theta^2)`` over all noiseless features of the evaluated examples
    (``kappa`` = 1 MNIST, 5 CIFAR-10, 2 ResNet-18, 3 Swin-T)."""
    kappa = validation.positive("kappa", kappa, what="noise level in units of the RMS feature")
    if isinstance(features, torch.Tensor):
        features = features.detach().double().cpu().numpy()
    a = np.asarray(features, dtype=float)
    return float(kappa * np.sqrt(np.mean(a * a)))


def bound_visualisation(theta, bound, rng: np.random.Generator):
    """Figures 2 and 4 ("reconstructions"; *not* an attack, as the authors' code shows):
    ``D^{-1}(D theta + xi * HCR)`` with i.i.d. Rademacher signs ``xi`` from ``rng``, in normalised units."""
    theta = np.asarray(theta, dtype=float)
    bound = np.asarray(bound, dtype=float)
    if theta.shape != bound.shape:
        raise ValueError(f"bound of shape {bound.shape}; allowed: the shape of theta {theta.shape}")
    xi = rng.choice(np.array([-1.0, 1.0]), size=theta.shape)
    return idct2(dct2(theta) + xi * bound)


# ---------------------------------------------------------------------------------------------------------------
# Algorithm 1 (Sec. 2.2): repeated LSQR, matrix-free through torch.func.jvp / vjp
# ---------------------------------------------------------------------------------------------------------------
def algorithm1_linear_closed_form(A, z, num_power_iterations: int = 10):
    """*[ours]* What Algorithm 1 returns for a linear map ``a_theta = A theta`` with exact least-squares solves
    (the linear case of Sec. 2.2 worked out): ``eps^(1) = A^+ z`` and, for ``i >= 2``, the stationary
    ``eps = (||z|| / ||P z||) A^+ z`` with ``P = A A^+``; ``z_eps = A eps``.  Returns ``(eps, z_eps)``.  Repetitions
    only rescale ``eps`` (and not at all when ``A`` has full row rank): the loop is not inverse iteration."""
    A = np.asarray(A, dtype=float)
    z = np.asarray(z, dtype=float)
    validation.integer("num_power_iterations", num_power_iterations)
    eps = np.linalg.lstsq(A, z, rcond=None)[0]
    if num_power_iterations >= 2:
        eps = eps * np.linalg.norm(z) / np.linalg.norm(A @ eps)
    return eps, A @ eps


@dataclass
class HCRResult:
    """Output of :func:`hcr_bound` (numpy, float64).  ``R`` restarts, ``B`` examples, ``i`` repetitions, ``n``
    features; ``shape`` is one example's input shape.

    - ``bound_dct`` ``(B, *shape)``: per-DCT-mode HCR standard-deviation bound, max over restarts (the histogrammed
      ``hcrmax``); ``bound_dct_per_restart``: ``(R, B, *shape)``.
    - ``bound_pixel`` ``(B, *shape)``: the same in the input coordinates (max over restarts).
    - ``eps`` ``(R, B, *shape)``, ``z_eps`` ``(R, B, n)``: the final perturbations and exact feature changes.
      With ``keep="first"`` these, ``noise`` and ``bound_dct_per_restart`` hold the first draw only (``R = 1``).
    - ``noise`` ``(R, B, n)``: the dithering draws ``Z ~ N(0, sigma^2 I)`` that seed the starts
      ``z = Z / sqrt(n) / diffdiv`` (the code uses the same draws for the dithered accuracy).
    - ``chi2`` ``(R, B)``: ``exp(||z_eps||^2 / sigma^2) - 1`` (eq. 12).
    - ``lsqr_iterations``, ``lsqr_relative_residual`` ``(S, i)``: LSQR ``itn`` and ``r1norm / ||z_tilde||`` of each
      of the ``S`` solves per repetition (``S = R`` joint and per restart, one per restart block; ``R B`` per
      example).
    - ``feature_change_mismatch`` ``(R, B)``: ``1 - ||z_eps|| / ||z||``, near 0 (the code's diagnostic).
    - ``ratio`` ``(R, B)``: ``||z_eps|| / ||eps||``, what the paper says the repetitions minimise.
    """

    bound_dct: np.ndarray
    bound_pixel: np.ndarray
    bound_dct_per_restart: np.ndarray
    eps: np.ndarray
    z_eps: np.ndarray
    noise: np.ndarray
    chi2: np.ndarray
    lsqr_iterations: np.ndarray
    lsqr_relative_residual: np.ndarray
    feature_change_mismatch: np.ndarray
    ratio: np.ndarray
    sigma: float
    diffdiv: float
    solve: str


SOLVES = ("joint", "per_restart", "per_example")


def _jacobian_operator(feature_map, point: torch.Tensor):
    """The Jacobian of the batched feature map at ``point`` (``(b, *shape)`` -> ``(b, n)``), matrix-free on the device
    of ``point``: ``(matvec, rmatvec)`` map ``k`` stacked float64 vectors, ``(k, b p)`` -> ``(k, b n)`` and back, by
    ``torch.func.jvp`` / ``torch.func.vjp`` in the dtype of ``point`` (``k`` is 1 except in tests).  For a map that
    treats examples independently the operator is block-diagonal."""
    shape, dtype = point.shape, point.dtype
    flat = lambda t: feature_map(t).reshape(-1)  # noqa: E731
    _, vjp_fn = torch.func.vjp(flat, point)

    def matvec(v: torch.Tensor) -> torch.Tensor:
        out = torch.func.jvp(flat, (point,), (v.to(dtype).reshape(shape),))[1]
        return out.detach().double().reshape(v.shape[0], -1)

    def rmatvec(w: torch.Tensor) -> torch.Tensor:
        return vjp_fn(w.to(dtype).reshape(-1))[0].detach().double().reshape(w.shape[0], -1)

    return matvec, rmatvec


def _sym_ortho_blocks(a: torch.Tensor, b: torch.Tensor):
    """scipy's ``_sym_ortho`` (the stable Givens rotation of LSQR) for tensors ``a``, ``b`` elementwise:
    ``(c, s, r)`` with ``c a + s b = r``, ``-s a + c b = 0``."""
    zero_b, zero_a = b == 0, (a == 0) & (b != 0)
    big_b = ~zero_b & ~zero_a & (b.abs() > a.abs())
    one = torch.ones_like(a)
    tau = a / torch.where(big_b, b, one)
    sn_b = torch.sign(b) / torch.sqrt(1 + tau * tau)
    c_b, r_b = sn_b * tau, b / torch.where(big_b, sn_b, one)
    tau = b / torch.where(big_b | zero_b | zero_a, one, a)
    c_a = torch.sign(a) / torch.sqrt(1 + tau * tau)
    sn_a, r_a = c_a * tau, a / torch.where(c_a != 0, c_a, one)
    zero = torch.zeros_like(a)
    c = torch.where(zero_b, torch.sign(a), torch.where(zero_a, zero, torch.where(big_b, c_b, c_a)))
    sn = torch.where(zero_b, zero, torch.where(zero_a, torch.sign(b), torch.where(big_b, sn_b, sn_a)))
    r = torch.where(zero_b, a.abs(), torch.where(zero_a, b.abs(), torch.where(big_b, r_b, r_a)))
    return c, sn, r


def _block_lsqr(make_op, rhs: torch.Tensor, ncols: int, atol: torch.Tensor, btol: float, iter_lim: int,
                conlim: float = 1e8):
    """``K`` independent LSQR solves (scipy's ``lsqr`` recursion with ``damp = 0``, ``x0 = 0``) of
    ``min ||A_k x_k - b_k||``, run side by side on the device of ``rhs`` in its dtype (float64), with the Jacobian
    products of all unfinished blocks in one batched call.

    ``rhs`` is ``(K, m)`` (``b_k``), ``atol`` ``(K,)``; ``make_op(blocks)`` returns ``(matvec, rmatvec)`` of the
    block-diagonal operator of the listed blocks (a 1-D index tensor), mapping ``(len(blocks), ncols)`` to
    ``(len(blocks), m)`` and back.  Every block keeps its own Golub-Kahan scalars, norm and condition estimates and
    its own stopping test, exactly as ``scipy.sparse.linalg.lsqr`` would for that block alone
    (``||r|| <= btol ||b|| + atol ||A|| ||x||``, ``||A^T r|| <= atol ||A|| ||r||``, ``cond(A) >= conlim``, their
    machine-precision versions, or ``iter_lim``); a finished block's iterate is frozen and it leaves the batch.
    Returns ``x (K, ncols)``, ``itn (K,)`` and ``r1norm (K,)``, tensors on the device of ``rhs``."""
    K, dev, dt = rhs.shape[0], rhs.device, rhs.dtype
    eps = torch.finfo(dt).eps
    ctol = 1.0 / conlim if conlim > 0 else 0.0
    x, w, v = (torch.zeros((K, ncols), dtype=dt, device=dev) for _ in range(3))
    itn = torch.zeros(K, dtype=torch.long, device=dev)
    norms = lambda M: torch.linalg.vector_norm(M, dim=1)  # noqa: E731
    safe = lambda t: torch.where(t > 0, t, torch.ones_like(t))  # noqa: E731
    bnorm = norms(rhs)
    beta = bnorm.clone()
    u = rhs / safe(beta)[:, None]
    blocks = torch.nonzero(beta > 0).flatten()
    if blocks.numel():
        v[blocks] = make_op(blocks)[1](u[blocks])
    alfa = norms(v)
    v = v / safe(alfa)[:, None]
    w[:] = v
    rhobar, phibar, r1norm = alfa.clone(), beta.clone(), beta.clone()
    anorm, ddnorm, xxnorm, z, sn2 = (torch.zeros(K, dtype=dt, device=dev) for _ in range(5))
    cs2 = -torch.ones(K, dtype=dt, device=dev)
    active = alfa * beta != 0                        # arnorm = 0: x = 0 is the solution, scipy stops at itn = 0
    op, op_blocks = None, None
    while bool(active.any()):
        a = torch.nonzero(active).flatten()
        if op_blocks is None or not torch.equal(a, op_blocks):
            op, op_blocks = make_op(a), a            # finished blocks leave the batched Jacobian products
        itn[a] += 1
        ua = op[0](v[a]) - alfa[a, None] * u[a]
        be = norms(ua)
        pos = be > 0
        ua = ua / safe(be)[:, None]
        anorm[a] = torch.where(pos, torch.sqrt(anorm[a] ** 2 + alfa[a] ** 2 + be ** 2), anorm[a])
        vn = op[1](ua) - be[:, None] * v[a]
        al = norms(vn)
        vn = vn / safe(al)[:, None]
        u[a] = ua
        v[a] = torch.where(pos[:, None], vn, v[a])
        alfa[a] = torch.where(pos, al, alfa[a])
        cs, sn, rho = _sym_ortho_blocks(rhobar[a], be)
        theta = sn * alfa[a]
        rhobar[a] = -cs * alfa[a]
        phi = cs * phibar[a]
        phibar[a] = sn * phibar[a]
        tau = sn * phi
        t1, t2 = phi / rho, -theta / rho
        dk = w[a] / rho[:, None]
        x[a] = x[a] + t1[:, None] * w[a]
        w[a] = v[a] + t2[:, None] * w[a]
        ddnorm[a] += norms(dk) ** 2
        delta, gambar = sn2[a] * rho, -cs2[a] * rho
        rhs_ = phi - delta * z[a]
        zbar = rhs_ / gambar
        xnorm = torch.sqrt(xxnorm[a] + zbar ** 2)
        gamma = torch.sqrt(gambar ** 2 + theta ** 2)
        cs2[a], sn2[a] = gambar / gamma, theta / gamma
        z[a] = rhs_ / gamma
        xxnorm[a] += z[a] ** 2
        acond = anorm[a] * torch.sqrt(ddnorm[a])
        rnorm = phibar[a].abs()
        arnorm = alfa[a] * tau.abs()
        r1norm[a] = rnorm
        test1 = rnorm / bnorm[a]
        test2 = arnorm / (anorm[a] * rnorm + eps)
        test3 = 1.0 / (acond + eps)
        t1m = test1 / (1 + anorm[a] * xnorm / bnorm[a])
        rtol = btol + atol[a] * anorm[a] * xnorm / bnorm[a]
        stop = ((itn[a] >= iter_lim) | (1 + test3 <= 1) | (1 + test2 <= 1) | (1 + t1m <= 1) | (test3 <= ctol)
                | (test2 <= atol[a]) | (test1 <= rtol))
        active[a[stop]] = False
    return x, itn, r1norm


def float64_copy(model: torch.nn.Module) -> torch.nn.Module:
    """A float64 copy of ``model`` (frozen, in eval mode) for the exact forward passes of :func:`hcr_bound`
    (``exact_map=float64_copy(model).features``): the bound is rigorous only if ``z_eps`` is accurate."""
    if not isinstance(model, torch.nn.Module):
        raise ValueError(f"model={type(model).__name__}; allowed: a torch.nn.Module")
    return copy.deepcopy(model).double().eval().requires_grad_(False)


def hcr_bound(feature_map, x, sigma, num_restarts: int = 25, num_power_iterations: int = 10, diffdiv: float = 200.0,
              generator: torch.Generator | None = None, *, solve: str = "joint", jac_at: str = "current",
              lsqr_atol="code", lsqr_btol: float = 1e-8, iter_lim: int | None = None, exact_map=None,
              chunk_size: int = 128, keep: str = "all", progress: bool = False,
              checkpoint: str | Path | None = None) -> HCRResult:
    """Algorithm 1 (Sec. 2.2) and the reported per-DCT-mode HCR bound (Sec. 3, eqs. 5 and 12 in DCT coordinates, as
    histogrammed in Figures 1, 3, 5 and 6) for a batch of examples.

    For each restart ``r`` and example ``b``: draw the dithering noise ``Z ~ N(0, sigma^2 I_n)`` from ``generator``,
    start from ``z = Z / sqrt(n) / diffdiv`` (so ``||z|| ~ sigma / diffdiv``; ``diffdiv = 1/s``), then ``i`` times

    1. ``z_tilde = ||z|| z^(j-1) / ||z^(j-1)||``  (renormalise to the start norm),
    2. ``eps^(j) = argmin_eps ||J eps - z_tilde||`` by LSQR (``scipy.sparse.linalg.lsqr``'s recursion and stopping
       rules, from 0, ``damp = 0``, in torch float64 on the device of ``x``), with ``J`` applied matrix-free
       (``torch.func.jvp`` / ``torch.func.vjp``),
    3. ``z^(j) = a_{x + eps^(j)} - a_x`` by one exact forward pass,

    and bound every DCT mode ``m`` by ``|(D eps)_m| / sqrt(exp(||z_eps||^2 / sigma^2) - 1)`` (eqs. 5, 12); the result
    is the maximum over restarts (each restart is a valid bound, so their maximum is too).  The start vector, the
    Jacobian's evaluation point and the LSQR tolerance are those of the authors' code
    (github.com/facebookresearch/hcrbounds); the paper does not state them.

    Parameters
    ----------
    feature_map : batched torch function, ``(b, *shape) -> (b, n)`` (or any shape with ``b * n`` values), e.g.
        ``model.features``.  ``x`` is ``(B, *shape)`` with at least two spatial axes per example (``(B, H, W)`` or
        ``(B, C, H, W)``).
    sigma : standard deviation of the dithering noise (the code's ``kappa * RMS(features)``, :func:`noise_sigma`).
    num_restarts : ``R`` (the paper: 25).
    num_power_iterations : ``i`` (the paper: 10, or 6 / 4 for CIFAR-10).
    diffdiv : ``1/s`` (the paper: 200, 500 or 1000).
    generator : ``torch.Generator`` for the noise draws (on the device of ``x`` or the CPU), drawn as one ``(R, B, n)``
        block for all ``B`` examples before any chunk runs, so each example's start does not depend on
        ``chunk_size``; ``None`` means a CPU generator seeded 0.  The result is deterministic given the generator's
        state.
    solve : how examples share an LSQR solve.  The authors' code solves one minibatch jointly per restart
        (``"per_restart"``: one block-diagonal operator, one global stopping test, and one forward pass per
        restart); ``"joint"`` (the default) runs the ``R`` restarts' LSQR solves side by side, with the Jacobian
        products of all unfinished restarts in one batched JVP / VJP (much faster on a CPU).  Its stopping rule is
        per block: each restart's minibatch keeps its own LSQR recursion (its own Golub-Kahan scalars, ``||A||`` and
        ``cond(A)`` estimates) and its own scipy stopping test, ``||r|| <= btol ||b|| + atol ||A|| ||x||`` or
        ``||A^T r|| <= atol ||A|| ||r||`` (or ``cond(A) > 1e8``, machine precision, ``iter_lim``), with the code's
        ``atol`` over that restart's examples; once met, the block's iterate is frozen and it leaves the batch.  So
        the joint solve reproduces the per-restart bounds mode for mode (up to rounding of the batched products),
        where one stopping test for all ``R B`` examples moved single modes' bounds by up to 18 %.  ``"per_example"``
        solves each example alone, which changes the bounds (the stopping test is then per example).  Joint solves
        assume the feature map treats examples independently (no BatchNorm batch statistics), so use
        ``"per_restart"`` for such a model, with ``chunk_size`` the minibatch whose statistics it uses.
    jac_at : ``"current"`` (the authors' code: Jacobian at ``x + eps^(j-1)``) or ``"base"`` (Algorithm 1 as printed:
        at ``x``).  In both cases ``eps^(j)`` is added to the original ``x``.
    lsqr_atol : ``"code"`` (the authors' rule ``atol = CODE_ATOL_FACTOR min_b ||z_tilde_b||`` over the examples
        of a solve, an absolute size handed to scipy's relative tolerance, so it shrinks with ``s``) or a float passed
        to scipy as is.
    lsqr_btol, iter_lim : scipy's ``btol`` (code: 1e-8) and iteration cap (``None``: scipy's ``2 x`` columns).
    exact_map : the same feature map in float64 (e.g. a ``double()`` copy of the model), used for the forward passes
        that give ``z_eps`` (steps 6-7) when the Jacobian products run in float32 (as the authors' code does, and
        about twice as fast).  ``None``: ``feature_map`` itself, in the dtype of ``x``.
    chunk_size : at most this many examples go through Algorithm 1 together (memory about ``R * chunk_size``
        examples' activations and Jacobian products); larger batches run chunk after chunk and their results are
        concatenated.  Every example keeps its own noise draws, so chunking changes nothing with
        ``solve="per_example"``; joint and per-restart solves share LSQR's stopping test (and the code's ``atol``)
        among one restart's examples within a chunk only.  Any ``B <= chunk_size`` is one chunk.
    keep : ``"all"`` keeps every draw's per-draw arrays (``eps``, ``z_eps``, ``noise``, ``bound_dct_per_restart``,
        shape ``(R, B, ...)``); ``"first"`` keeps the first draw's only (shape ``(1, B, ...)``), so that the host
        memory of a result is a few ``(B, p)`` arrays whatever ``R`` (each chunk is reduced over the restarts as it
        finishes).
    progress : a tqdm bar over the ``i x S`` solves.
    checkpoint : a folder (``None``: off) where each chunk's results (everything the result keeps of it, its slice of
        every array above) are saved as soon as the chunk finishes (:func:`compendium.base.save_atomically`), one
        file ``hcr-<chunk>-<digest>.pt`` per chunk; a rerun reads the finished chunks back
        (``torch.load(weights_only=True)``) and computes only the missing ones, so a lost session resumes and the
        result is bit for bit that of an uninterrupted run.  The digest (:func:`checkpoint_digest`, SHA-256) covers
        everything that determines the chunk: the parameters and buffers of ``feature_map``'s and ``exact_map``'s
        modules (each a ``torch.nn.Module`` or a bound method of one, such as ``model.features``, else a
        ``ValueError``), the bytes of ``x``, ``sigma``, ``R``, ``i``, ``diffdiv``, ``solve``, ``jac_at``, the LSQR
        tolerances and cap, ``chunk_size``, ``keep``, the generator's state before the draws, and the chunk's index
        and slice; another input never reuses a file.

    The JVP/VJPs run in the dtype and on the device of ``x``, LSQR's vectors in float64 on the same device; the bounds
    are formed on the host in float64, one chunk at a time.  The bound is rigorous
    only if ``z_eps`` is accurate: give float64 inputs, or float32 inputs and a float64 ``exact_map``.
    """
    s = _sigma(sigma)
    if np.ndim(s) != 0:
        raise ValueError(f"sigma={sigma!r}; allowed: a finite number > 0 ({_SIGMA}, one scalar)")
    R = validation.integer("num_restarts", num_restarts, what="random starts per example")
    n_it = validation.integer("num_power_iterations", num_power_iterations, what="LSQR repetitions i")
    diffdiv = validation.positive("diffdiv", diffdiv, what="1/s, the inverse relative size of the perturbation")
    validation.choice("solve", solve, SOLVES)
    validation.choice("jac_at", jac_at, ("current", "base"))
    validation.choice("keep", keep, ("all", "first"))
    if not (isinstance(lsqr_atol, str) and lsqr_atol == "code") and not (
            isinstance(lsqr_atol, (int, float)) and not isinstance(lsqr_atol, bool) and lsqr_atol >= 0):
        raise ValueError(f"lsqr_atol={lsqr_atol!r}; allowed: 'code' or a number >= 0")
    if iter_lim is not None:
        validation.integer("iter_lim", iter_lim, what="LSQR iterations per solve")
    chunk_size = validation.integer("chunk_size", chunk_size, what="examples per chunk")
    validation.generator("generator", generator)
    if not isinstance(x, torch.Tensor) or x.ndim < 3 or not x.is_floating_point() or x.shape[0] < 1:
        raise ValueError(f"x={type(x).__name__} {tuple(getattr(x, 'shape', ()))}; allowed: a floating-point "
                         "torch.Tensor (B, [C,] H, W) with B >= 1 examples")
    if generator is None:
        generator = torch.Generator().manual_seed(0)
    if checkpoint is not None:
        run_digest = checkpoint_digest(feature_map, x, generator=generator, exact_map=exact_map, sigma=s,
                                       num_restarts=R, num_power_iterations=n_it, diffdiv=diffdiv, solve=solve,
                                       jac_at=jac_at, lsqr_atol=lsqr_atol, lsqr_btol=lsqr_btol, iter_lim=iter_lim,
                                       chunk_size=chunk_size, keep=keep)
    from tqdm import tqdm

    x = x.detach()
    B, shape = x.shape[0], tuple(x.shape[1:])
    forward, x_exact = (feature_map, x) if exact_map is None else (exact_map, x.double())
    chunks = [slice(b, min(b + chunk_size, B)) for b in range(0, B, chunk_size)]
    with torch.no_grad():
        a0_first = forward(x_exact[chunks[0]]).reshape(chunks[0].stop, -1)
    n = a0_first.shape[1]
    # every example's draws, before any chunk runs
    noise = torch.randn((R, B, n), generator=generator, device=generator.device, dtype=torch.float64) * s

    kept = 1 if keep == "first" else R
    bound_dct, bound_pixel = np.zeros((B,) + shape), np.zeros((B,) + shape)
    per_restart_kept, eps_kept = np.zeros((kept, B) + shape), np.zeros((kept, B) + shape)
    z_kept = np.zeros((kept, B, n))
    chi2, ratio, mismatch = np.zeros((R, B)), np.zeros((R, B)), np.zeros((R, B))
    its, rres = [], []
    per_chunk = {"joint": lambda b: 1, "per_restart": lambda b: R, "per_example": lambda b: R * b}[solve]
    bar = tqdm(total=n_it * sum(per_chunk(c.stop - c.start) for c in chunks), desc="HCR (Algorithm 1)",
               unit="solve", disable=not progress)
    for index, c in enumerate(chunks):
        path = None if checkpoint is None else Path(checkpoint) / (
            f"hcr-{index}-{base.digest({'run': run_digest, 'chunk': [index, c.start, c.stop]})}.pt")
        if path is not None and path.is_file():
            part = {k: v.numpy() for k, v in torch.load(path, map_location="cpu", weights_only=True).items()}
            bar.update(n_it * per_chunk(c.stop - c.start))
        else:
            out = _algorithm1(feature_map, forward, x[c], x_exact[c], noise[:, c].to(x.device),
                              a0_first if index == 0 else None, diffdiv, n_it, solve, jac_at, lsqr_atol, lsqr_btol,
                              iter_lim, bar)
            part = _chunk_results(*out, s, shape, kept)
            if path is not None:
                base.save_atomically({k: torch.from_numpy(v) for k, v in part.items()}, path)
        bound_dct[c], bound_pixel[c] = part["bound_dct"], part["bound_pixel"]
        per_restart_kept[:, c], eps_kept[:, c], z_kept[:, c] = part["per_restart"], part["eps"], part["z_eps"]
        chi2[:, c], ratio[:, c], mismatch[:, c] = part["chi2"], part["ratio"], part["mismatch"]
        its.append(part["iterations"])
        rres.append(part["residual"])
    bar.close()
    return HCRResult(bound_dct=bound_dct, bound_pixel=bound_pixel, bound_dct_per_restart=per_restart_kept,
                     eps=eps_kept, z_eps=z_kept, noise=noise[:kept].cpu().numpy(), chi2=chi2,
                     lsqr_iterations=np.concatenate(its), lsqr_relative_residual=np.concatenate(rres),
                     feature_change_mismatch=mismatch, ratio=ratio, sigma=s, diffdiv=float(diffdiv), solve=solve)


def _chunk_results(eps_c, z_c, z0_norm, it_c, rres_c, sigma, shape, kept) -> dict[str, np.ndarray]:
    """What :func:`hcr_bound` keeps of one chunk of ``b`` examples, from :func:`_algorithm1`'s tensors: its bounds
    (max over the ``R`` draws), the first ``kept`` draws' per-draw arrays, ``chi2``, ``ratio`` and mismatch per draw,
    and LSQR's iterations and residuals; float64 numpy arrays (integers for the iterations), each its own copy."""
    R, b, p = eps_c.shape
    eps_c = eps_c.cpu().numpy().reshape((R, b) + shape)
    z_c = z_c.cpu().numpy()
    chi2 = gaussian_chi2(z_c, sigma)
    chi2_b = chi2.reshape(chi2.shape + (1,) * len(shape))
    per_restart = np.sqrt(hcr_variance_bound(dct2(eps_c), chi2_b))
    z_norm = np.linalg.norm(z_c, axis=2)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = z_norm / np.linalg.norm(eps_c.reshape(R, -1, p), axis=2)
    part = {"bound_dct": per_restart.max(axis=0), "bound_pixel": np.sqrt(hcr_variance_bound(eps_c, chi2_b)).max(axis=0),
            "per_restart": per_restart[:kept], "eps": eps_c[:kept], "z_eps": z_c[:kept], "chi2": chi2, "ratio": ratio,
            "mismatch": 1.0 - z_norm / z0_norm.cpu().numpy(), "iterations": it_c.cpu().numpy(),
            "residual": rres_c.cpu().numpy()}
    return {k: np.array(v) for k, v in part.items()}      # copies: a view would save its whole base array


def _owning_module(name: str, fn) -> tuple[torch.nn.Module, str]:
    """The module whose parameters and buffers determine the map ``fn`` (a ``torch.nn.Module``, or a bound method of
    one, e.g. ``model.features``) and the method's name; a ``ValueError`` for any other callable."""
    if isinstance(fn, torch.nn.Module):
        return fn, "forward"
    owner = getattr(fn, "__self__", None)
    if isinstance(owner, torch.nn.Module):
        return owner, fn.__func__.__qualname__
    raise ValueError(f"{name}={fn!r}; allowed with checkpoint: a torch.nn.Module or a bound method of one (e.g. "
                     "model.features), whose parameters and buffers name the checkpoint files")


def checkpoint_digest(feature_map, x: torch.Tensor, *, generator: torch.Generator, exact_map=None, **settings) -> str:
    """The SHA-256 digest (64 hex digits, :func:`compendium.base.digest`) of everything that determines a
    :func:`hcr_bound` run, which names its checkpoint files: for ``feature_map`` and ``exact_map`` (``None``: none)
    the module they belong to (``_owning_module``), by its class, the method called, every submodule's
    ``training`` flag, and the names, dtypes, shapes and bytes of its parameters and buffers (its ``state_dict``);
    ``x``'s dtype, shape, device type and bytes; the generator's device type and state before the draws; and
    ``settings`` (``sigma``, ``num_restarts``, ... as keywords, written as JSON)."""
    identity, arrays = {"settings": settings, "x": x.device.type, "generator": generator.device.type}, [x]
    for name, fn in (("feature_map", feature_map), ("exact_map", exact_map)):
        if fn is None:
            identity[name] = None
            continue
        module, method = _owning_module(name, fn)
        state = module.state_dict()
        identity[name] = {"class": f"{type(module).__module__}.{type(module).__qualname__}", "method": method,
                          "training": [m.training for m in module.modules()], "state": list(state)}
        arrays += list(state.values())
    return base.digest(identity, *arrays, generator.get_state(), length=64)


def _algorithm1(feature_map, forward, x, x_exact, noise, a0, diffdiv, n_it, solve, jac_at, lsqr_atol, lsqr_btol,
                iter_lim, bar):
    """Algorithm 1 on one chunk of ``b`` examples (see :func:`hcr_bound`), in torch on the device of ``x``:
    ``noise`` is its ``(R, b, n)`` block of draws, ``a0`` its exact features (``None``: computed here).  Returns
    ``eps (R, b, p)``, ``z_eps (R, b, n)`` (float64), ``||z|| (R, b)`` and LSQR's iteration counts and relative
    residuals ``(S, i)``, tensors on that device."""
    R, B, n = noise.shape
    shape, dev = tuple(x.shape[1:]), x.device
    p = int(np.prod(shape))
    if a0 is None:
        with torch.no_grad():
            a0 = forward(x_exact).reshape(B, -1)
    a0_all = a0.double().repeat(R, 1)                                                # restart-major stack
    x_all = x.unsqueeze(0).expand((R,) + tuple(x.shape)).reshape((R * B,) + shape)
    x_all_exact = x_exact.unsqueeze(0).expand((R,) + tuple(x.shape)).reshape((R * B,) + shape)
    rows = torch.arange(R * B, device=dev)
    # the solves: lists of blocks (rows of the stack) that run side by side, each block with its own LSQR; a joint
    # solve runs every restart's minibatch at once, a per-restart one each restart's alone, per example each row
    calls = {"joint": [rows.reshape(R, B)], "per_restart": [rows.reshape(R, 1, B)[r] for r in range(R)],
             "per_example": [rows[k].reshape(1, 1) for k in range(R * B)]}[solve]
    # the exact forward passes (steps 6-7) see what the feature map would see: one restart's minibatch for
    # per-restart solves (a model with batch statistics couples the examples of a forward pass), else the stack
    forward_groups = rows.reshape(R, B) if solve == "per_restart" else rows.reshape(1, R * B)

    z0 = noise.reshape(R * B, n) / np.sqrt(n) / diffdiv
    z0_norm = torch.linalg.vector_norm(z0, dim=1, keepdim=True)
    zj = z0.clone()
    eps = torch.zeros((R * B, p), dtype=torch.float64, device=dev)
    its, rres = [], []
    for j in range(n_it):
        zt = z0_norm * zj / torch.linalg.vector_norm(zj, dim=1, keepdim=True)                 # step 4
        point = x_all if jac_at == "base" else x_all + eps.to(x.dtype).reshape(x_all.shape)
        it_j, rres_j = [], []
        for blocks in calls:                                                                   # step 5
            m = blocks.shape[1]
            make_op = lambda chosen: _jacobian_operator(  # noqa: E731
                feature_map, point[blocks[chosen].reshape(-1)])
            zt_blocks = zt[blocks.reshape(-1)].reshape(len(blocks), m * n)
            zt_norm = torch.linalg.vector_norm(zt[blocks.reshape(-1)], dim=1).reshape(len(blocks), m)
            atol = (CODE_ATOL_FACTOR * zt_norm.min(dim=1).values if lsqr_atol == "code"
                    else torch.full((len(blocks),), float(lsqr_atol), dtype=torch.float64, device=dev))
            sol, itn, r1 = _block_lsqr(make_op, zt_blocks, m * p, atol, lsqr_btol,
                                       2 * m * p if iter_lim is None else iter_lim)
            eps[blocks.reshape(-1)] = sol.reshape(-1, p)
            it_j.append(itn)
            rres_j.append(r1 / torch.linalg.vector_norm(zt_blocks, dim=1))
            bar.update()
        its.append(torch.cat(it_j))
        rres.append(torch.cat(rres_j))
        with torch.no_grad():                                                                  # steps 6-7 (exact)
            pert = x_all_exact + eps.to(x_exact.dtype).reshape(x_all.shape)
            for g in forward_groups:
                zj[g] = forward(pert[g]).reshape(len(g), n).double() - a0_all[g]
    return (eps.reshape(R, B, p), zj.reshape(R, B, n), z0_norm.reshape(R, B), torch.stack(its, dim=1),
            torch.stack(rres, dim=1))
