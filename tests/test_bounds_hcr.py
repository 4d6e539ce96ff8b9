"""Unit tests of compendium.bounds.hcr (Chaudhuri et al. 2024): the Gaussian chi-square identity (12) against its
closed form ``expm1(||z||^2 / sigma^2)`` written out, quadrature and Monte Carlo; the closed forms on the
cumulative-sum map (CRB, eq. 18, Algorithm 1); Algorithm 1 with LSQR against its closed form on a linear map, and in
chunks; the approach to the Cramer-Rao limit; DCT helpers; validation."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.fft
import scipy.integrate
import scipy.sparse.linalg
import torch

from compendium import jacobians
from compendium.bounds import hcr


def _linear_map(rng, n=24, shape=(4, 4)):
    p = int(np.prod(shape))
    A = rng.standard_normal((n, p))
    assert np.linalg.matrix_rank(A) == p
    At = torch.tensor(A)
    return A, (lambda t: t.reshape(t.shape[0], -1) @ At.T), torch.tensor(rng.standard_normal((1,) + shape))


# ---------------------------------------------------------------------------------------------------------------
# eq. (12): the Gaussian chi-square divergence (Appendix A)
# ---------------------------------------------------------------------------------------------------------------
def test_gaussian_chi2_reference_value():
    z = np.array([0.3, -0.2, 0.1, 0.0, 0.4])
    assert hcr.gaussian_chi2(z, 0.7) == pytest.approx(0.844567620433489, rel=1e-10)


@pytest.mark.parametrize("c, expected", [(0.1, 0.010050167084168081), (1.0, 1.7182818284590453),
                                         (2.0, 53.59815003314425)])
def test_gaussian_chi2_matches_quadrature(c, expected):
    # the feature change c * sigma along one axis, any sigma
    assert hcr.gaussian_chi2(np.array([0.0, 3.0 * c, 0.0]), 3.0) == pytest.approx(expected, rel=1e-10)
    f = lambda u: (np.exp(c * u - c * c / 2) - 1) ** 2 * np.exp(-u * u / 2) / np.sqrt(2 * np.pi)  # noqa: E731
    quad = scipy.integrate.quad(f, -40, 40 + 4 * c, epsabs=1e-14, epsrel=1e-13, limit=200)[0]
    assert hcr.gaussian_chi2(np.array([c]), 1.0) == pytest.approx(quad, rel=1e-9)


def test_gaussian_chi2_matches_monte_carlo_importance_weights():
    # E[(f(Z - z)/f(Z) - 1)^2] with Z ~ N(0, sigma^2 I_5): the likelihood ratio of a Gaussian shift
    rng = np.random.default_rng(20240617)
    sigma, z = 0.7, np.array([0.2, -0.15, 0.1, 0.0, 0.25])
    Z = sigma * rng.standard_normal((400_000, 5))
    w = np.exp((Z @ z) / sigma**2 - z @ z / (2 * sigma**2))
    sample = (w - 1.0) ** 2
    mc, se = sample.mean(), sample.std(ddof=1) / np.sqrt(sample.size)
    exact = hcr.gaussian_chi2(z, sigma)
    assert abs(mc - exact) < 4 * se
    assert se < 0.02 * exact  # the check has power


def test_gaussian_chi2_is_vectorised_over_rows():
    z = np.random.default_rng(1).standard_normal((3, 4, 6))
    out = hcr.gaussian_chi2(z, 1.3)
    assert out.shape == (3, 4)
    np.testing.assert_allclose(out[2, 1], np.expm1(z[2, 1] @ z[2, 1] / 1.69), rtol=1e-14)


def test_identity_map_hcr_tends_to_sigma_squared():
    # Sec. 2.1 for the identity map: a_theta = theta, eps = t e_k gives t^2 / (e^{t^2/sigma^2} - 1) <= sigma^2,
    # -> sigma^2 as t -> 0
    sigma = 0.8
    vals = [hcr.hcr_variance_bound(t, hcr.gaussian_chi2(np.array([t]), sigma)) for t in (1.0, 0.1, 1e-3)]
    assert all(v <= sigma**2 for v in vals) and np.all(np.diff(vals) > 0)
    assert vals[-1] == pytest.approx(sigma**2, rel=1e-6)


def test_hcr_sd_and_mse_bounds_agree_with_definitions():
    rng = np.random.default_rng(2)
    eps, z = rng.standard_normal((3, 2, 4, 4)), 0.1 * rng.standard_normal((3, 7))
    b = hcr.hcr_sd_bound(eps, z, 0.5)
    den = np.expm1((z**2).sum(1) / 0.25)
    np.testing.assert_allclose(b, np.abs(eps) / np.sqrt(den)[:, None, None, None], rtol=1e-13)
    np.testing.assert_allclose(hcr.hcr_mse_bound(eps, z, 0.5), (eps**2).reshape(3, -1).mean(1) / den, rtol=1e-13)
    assert hcr.hcr_sd_bound(eps[0], z[0], 0.5).shape == (2, 4, 4)
    assert hcr.hcr_variance_bound(1.0, 0.0) == np.inf and hcr.hcr_variance_bound(0.0, 0.0) == 0.0


# ---------------------------------------------------------------------------------------------------------------
# eqs. (13)-(18) and the Cramer-Rao bound, on the cumulative-sum map (lower-triangular ones, p = n = 64, sigma = 1)
# ---------------------------------------------------------------------------------------------------------------
P = 64
L_CUMSUM = np.tril(np.ones((P, P)))


def test_crb_and_eq18_on_cumsum_map():
    crb = hcr.cramer_rao_bound(L_CUMSUM, 1.0)
    np.testing.assert_allclose(crb, np.r_[1.0, np.full(P - 1, 2.0)], rtol=1e-10)
    eq18 = hcr.fisher_diagonal_bound_eq18(L_CUMSUM, 1.0)
    np.testing.assert_allclose(eq18, 1.0 / (P - np.arange(P)), rtol=1e-12)
    assert np.all(eq18 <= crb * (1 + 1e-12))
    # sigma scaling
    np.testing.assert_allclose(hcr.cramer_rao_bound(L_CUMSUM, 2.5), 6.25 * crb, rtol=1e-12)


@pytest.mark.parametrize("t, expected", [(1.0, 0.626070570999), (0.1, 1.980066666222), (0.005, 1.999950000417),
                                         (0.001, 1.999998000001)])
def test_hcr_along_crb_direction_cumsum(t, expected):
    k = 10
    eps = t * hcr.crb_direction(L_CUMSUM, k)
    var = hcr.hcr_sd_bound(eps, L_CUMSUM @ eps, 1.0)[k] ** 2
    assert var == pytest.approx(expected, rel=1e-10)
    x = (L_CUMSUM @ eps) @ (L_CUMSUM @ eps)
    assert hcr.hcr_linear_optimal(2.0, x) == pytest.approx(var, rel=1e-10)


def test_hcr_never_exceeds_crb_for_random_perturbations():
    rng = np.random.default_rng(3)
    crb = hcr.cramer_rao_bound(L_CUMSUM, 1.0)
    eps = rng.standard_normal((500, P)) * rng.uniform(1e-3, 1, (500, 1))
    ratio = hcr.hcr_sd_bound(eps, eps @ L_CUMSUM.T, 1.0) ** 2 / crb
    assert ratio.max() <= 1.0


def test_crb_is_infinite_outside_the_row_space_and_in_dct_coordinates():
    J = np.zeros((3, 4))
    J[0, 0], J[1, 1], J[2, 2] = 1.0, 2.0, 4.0   # coordinate 3 is not identifiable
    np.testing.assert_allclose(hcr.cramer_rao_bound(J, 1.0), [1.0, 0.25, 1 / 16, np.inf])
    rng = np.random.default_rng(4)
    A = rng.standard_normal((20, 16))
    D = hcr.dct_matrix((4, 4))
    G = np.linalg.inv(A.T @ A)
    np.testing.assert_allclose(hcr.cramer_rao_bound(A, 0.3, directions=D), 0.09 * np.diag(D @ G @ D.T), rtol=1e-9)


# ---------------------------------------------------------------------------------------------------------------
# DCT helpers
# ---------------------------------------------------------------------------------------------------------------
def test_dct_is_orthonormal():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 6, 5))
    c = hcr.dct2(x)
    np.testing.assert_allclose(hcr.idct2(c), x, atol=1e-13)
    np.testing.assert_allclose((c**2).sum(axis=(-2, -1)), (x**2).sum(axis=(-2, -1)), rtol=1e-13)
    assert hcr.dct2(np.ones((8, 8)))[0, 0] == pytest.approx(8.0, rel=1e-14)
    D = hcr.dct_matrix((3, 6, 5))
    np.testing.assert_allclose(D.T @ D, np.eye(90), atol=1e-12)
    np.testing.assert_allclose(D @ x[0].ravel(), c[0].ravel(), atol=1e-12)
    np.testing.assert_allclose(c, scipy.fft.dctn(x, axes=(2, 3), norm="ortho"), atol=1e-14)
    assert hcr.low_frequency(c, 4).shape == (2, 3, 4, 4)


def test_bound_visualisation_and_noise_sigma():
    rng = np.random.default_rng(6)
    theta = rng.standard_normal((1, 8, 8))
    np.testing.assert_allclose(hcr.bound_visualisation(theta, np.zeros_like(theta), rng), theta, atol=1e-13)
    b = np.full_like(theta, 0.5)
    diff = hcr.dct2(hcr.bound_visualisation(theta, b, rng) - theta)
    np.testing.assert_allclose(np.abs(diff), 0.5, atol=1e-12)
    assert hcr.noise_sigma(torch.full((3, 4), -2.0), 1.5) == pytest.approx(3.0, rel=1e-14)


# ---------------------------------------------------------------------------------------------------------------
# Algorithm 1
# ---------------------------------------------------------------------------------------------------------------
def test_algorithm1_closed_form_cumsum():
    # exact solves, start z = s sigma N(0, I)/sqrt(p) from default_rng(12345); the median DCT efficiency of these draws
    # is 0.273 (0.280 in pixels), against the theory E max_25 |N(0,1)| / sqrt(64) = 0.2815
    rng = np.random.default_rng(12345)
    theta_shape = (8, 8)
    D8 = hcr.dct_matrix(theta_shape)
    crb_dct = hcr.cramer_rao_bound(L_CUMSUM, 1.0, directions=D8)
    best_dct, best_pix = np.zeros(P), np.zeros(P)
    for _ in range(25):
        z0 = (1 / 200) * rng.standard_normal(P) / np.sqrt(P)
        e1, _ = hcr.algorithm1_linear_closed_form(L_CUMSUM, z0, 1)
        e, ze = hcr.algorithm1_linear_closed_form(L_CUMSUM, z0, 10)
        assert np.linalg.norm(e - e1) / np.linalg.norm(e1) < 1e-8  # stationary (square invertible map)
        best_dct = np.maximum(best_dct, hcr.hcr_sd_bound(D8 @ e, ze, 1.0))
        best_pix = np.maximum(best_pix, hcr.hcr_sd_bound(e, ze, 1.0))
    assert np.median(best_dct / np.sqrt(crb_dct)) == pytest.approx(0.273, abs=0.02)
    assert np.median(best_pix / np.sqrt(hcr.cramer_rao_bound(L_CUMSUM, 1.0))) == pytest.approx(0.280, abs=0.02)


def test_hcr_bound_cumsum_with_code_tolerance():
    # Algorithm 1 with scipy LSQR and the authors' atol = 0.02 ||z|| on the cumsum map (p = n = 64, sigma = 1,
    # i = 10, R = 25, s = 1/200).  The same run with numpy's default_rng(12345) starts, in the order of the test
    # above, gives a DCT efficiency median of 0.272 (theory E max_25 |N(0,1)| / 8 = 0.28) and a median
    # ||z_eps|| / ||eps|| of 0.717 >> sigma_min = 0.500; torch's noise stream differs, hence +-0.03 and +-0.05.
    Lt = torch.tensor(L_CUMSUM)
    x = torch.linspace(-1, 1, P, dtype=torch.float64).reshape(1, 8, 8)
    res = hcr.hcr_bound(lambda t: t.reshape(t.shape[0], -1) @ Lt.T, x, 1.0, num_restarts=25, num_power_iterations=10,
                        diffdiv=200.0, generator=torch.Generator().manual_seed(0))
    crb_dct = hcr.cramer_rao_bound(L_CUMSUM, 1.0, directions=hcr.dct_matrix((8, 8))).reshape(8, 8)
    assert np.all(res.bound_dct <= np.sqrt(crb_dct))
    assert np.median(res.bound_dct / np.sqrt(crb_dct)) == pytest.approx(0.272, abs=0.03)
    assert np.median(res.ratio) == pytest.approx(0.717, abs=0.05)
    assert np.all(np.abs(res.feature_change_mismatch) < 0.05)


def test_hcr_bound_lsqr_matches_closed_form_on_linear_map():
    rng = np.random.default_rng(7)
    A, fm, x = _linear_map(rng)
    sigma, R = 0.7, 4
    res = hcr.hcr_bound(fm, x, sigma, num_restarts=R, num_power_iterations=3, diffdiv=200.0,
                        generator=torch.Generator().manual_seed(11), lsqr_atol=1e-14, lsqr_btol=1e-14)
    assert res.bound_dct.shape == (1, 4, 4) and res.eps.shape == (R, 1, 4, 4) and res.noise.shape == (R, 1, 24)
    # the start vectors are Z / sqrt(n) / diffdiv with Z ~ N(0, sigma^2 I) (loose sanity check on the draws)
    assert 0.3 < res.noise.std() / sigma < 1.7
    per = []
    for r in range(R):
        e, ze = hcr.algorithm1_linear_closed_form(A, res.noise[r, 0] / np.sqrt(24) / 200.0, 3)
        np.testing.assert_allclose(res.z_eps[r, 0], ze, rtol=1e-6, atol=1e-12 * np.linalg.norm(ze))
        per.append(hcr.hcr_sd_bound(hcr.dct2(e.reshape(4, 4)), ze, sigma))
    np.testing.assert_allclose(res.bound_dct_per_restart[:, 0], np.array(per), rtol=1e-4)
    np.testing.assert_allclose(res.bound_dct[0], np.max(per, axis=0), rtol=1e-4)
    # every per-DCT-mode bound is a valid bound: below the Cramer-Rao bound of that mode
    crb_dct = hcr.cramer_rao_bound(A, sigma, directions=hcr.dct_matrix((4, 4))).reshape(4, 4)
    assert np.all(res.bound_dct <= np.sqrt(crb_dct))
    assert np.all(np.abs(res.feature_change_mismatch) < 1e-8)  # ||z_eps|| = ||z|| after the renormalisation


def test_hcr_bound_is_deterministic_and_jac_at_irrelevant_for_linear_map():
    rng = np.random.default_rng(8)
    _, fm, x = _linear_map(rng)
    kw = dict(num_restarts=2, num_power_iterations=2, diffdiv=500.0)
    r1 = hcr.hcr_bound(fm, x, 1.1, generator=torch.Generator().manual_seed(3), **kw)
    r2 = hcr.hcr_bound(fm, x, 1.1, generator=torch.Generator().manual_seed(3), **kw)
    r3 = hcr.hcr_bound(fm, x, 1.1, generator=torch.Generator().manual_seed(3), jac_at="base", **kw)
    np.testing.assert_array_equal(r1.bound_dct, r2.bound_dct)
    np.testing.assert_allclose(r1.bound_dct, r3.bound_dct, rtol=1e-10)
    r4 = hcr.hcr_bound(fm, x, 1.1, generator=torch.Generator().manual_seed(4), **kw)
    assert not np.allclose(r1.bound_dct, r4.bound_dct)


def test_shrinking_perturbation_approaches_cramer_rao():
    # (a) HCR along the CRB direction, computed by one exact forward pass of the torch map, increases monotonically to
    #     the CRB as the perturbation shrinks (the limit (13)-(18) done right); (b) Algorithm 1's own bound increases
    #     monotonically with diffdiv to its linearised limit and stays below the CRB (it is not the CRB direction).
    rng = np.random.default_rng(9)
    A, fm, x = _linear_map(rng, n=36, shape=(6, 6))
    sigma, k = 0.9, 7
    crb = hcr.cramer_rao_bound(A, sigma)[k]
    w = hcr.crb_direction(A, k)
    vals = []
    for tau in (1.0, 0.3, 0.1, 0.03, 0.01):      # ||z_eps|| / sigma = tau
        t = tau * sigma / np.linalg.norm(A @ w)
        b, z = hcr.hcr_sd_along(fm, x, torch.tensor(t * w).reshape(1, 6, 6), sigma)
        assert np.linalg.norm(z) / sigma == pytest.approx(tau, rel=1e-10)
        vals.append(b.ravel()[k] ** 2)
    assert np.all(np.diff(vals) > 0) and vals[-1] <= crb
    assert (crb - vals[-1]) / crb < 1e-3

    bounds = []
    for dd in (2.0, 10.0, 100.0, 1000.0):
        res = hcr.hcr_bound(fm, x, sigma, num_restarts=1, num_power_iterations=2, diffdiv=dd,
                            generator=torch.Generator().manual_seed(5), lsqr_atol=1e-14, lsqr_btol=1e-14)
        bounds.append(res.bound_dct)
    bounds = np.array(bounds)
    assert np.all(np.diff(bounds, axis=0) > 0)
    limit = sigma * np.abs(hcr.dct2(res.eps[0])) / np.linalg.norm(res.z_eps[0])   # sigma |D eps| / ||A eps||
    assert np.max(np.abs(bounds[-1] / limit - 1)) < 1e-3
    crb_dct = hcr.cramer_rao_bound(A, sigma, directions=hcr.dct_matrix((6, 6))).reshape(6, 6)
    assert np.all(bounds[-1] <= np.sqrt(crb_dct))


def test_hcr_bound_on_nonlinear_map_is_the_exact_forward_pass_bound():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(16, 20), torch.nn.Tanh(), torch.nn.Linear(20, 20),
                              torch.nn.Tanh()).double()
    for q in net.parameters():
        q.requires_grad_(False)
    x = torch.randn(1, 4, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    sigma = hcr.noise_sigma(net(x), 1.0)
    res = hcr.hcr_bound(net, x, sigma, num_restarts=3, num_power_iterations=3, diffdiv=200.0,
                        generator=torch.Generator().manual_seed(2))
    assert res.bound_dct.shape == (1, 4, 4) and np.all(np.isfinite(res.bound_dct)) and np.all(res.bound_dct > 0)
    for r in range(3):
        b, z = hcr.hcr_sd_along(net, x, torch.tensor(res.eps[r]), sigma)
        np.testing.assert_allclose(res.z_eps[r, 0], z, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(res.bound_dct_per_restart[r], hcr.hcr_sd_bound(hcr.dct2(res.eps[r]), z, sigma),
                                   rtol=1e-12)
    # ||z_eps|| / sigma is about s = 1/diffdiv (the paper's "size of the perturbation")
    assert np.all(np.abs(np.linalg.norm(res.z_eps, axis=-1) / sigma * 200.0 - 1) < 0.5)
    assert np.all(np.abs(res.feature_change_mismatch) < 0.05)


# ---------------------------------------------------------------------------------------------------------------
# input validation
# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("sigma", [0.0, -1.0, np.nan, np.inf])
def test_bad_sigma_raises(sigma):
    with pytest.raises(ValueError, match=r"^sigma=.*; allowed: a finite number > 0"):
        hcr.gaussian_chi2(np.ones(3), sigma)
    with pytest.raises(ValueError, match="sigma"):
        hcr.cramer_rao_bound(np.eye(3), sigma)
    with pytest.raises(ValueError, match="sigma"):
        hcr.hcr_bound(lambda t: t.reshape(t.shape[0], -1), torch.zeros(1, 2, 2), sigma)


@pytest.mark.parametrize("kwargs, name", [
    (dict(num_restarts=0), "num_restarts"), (dict(num_restarts=2.5), "num_restarts"),
    (dict(num_power_iterations=0), "num_power_iterations"), (dict(diffdiv=0.0), "diffdiv"),
    (dict(diffdiv=-3.0), "diffdiv"), (dict(jac_at="middle"), "jac_at"), (dict(lsqr_atol=-1.0), "lsqr_atol"),
    (dict(lsqr_atol="tight"), "lsqr_atol"), (dict(solve="batched"), "solve"), (dict(chunk_size=0), "chunk_size"),
    (dict(generator=3), "generator"),
])
def test_hcr_bound_validation(kwargs, name):
    with pytest.raises(ValueError, match=rf"^{name}=.*; allowed: "):
        hcr.hcr_bound(lambda t: t.reshape(t.shape[0], -1), torch.zeros(1, 2, 2), 1.0, **kwargs)


def test_other_validation():
    with pytest.raises(ValueError, match=r"x=Tensor \(4, 4\); allowed"):
        hcr.hcr_bound(lambda t: t, torch.zeros(4, 4), 1.0)
    with pytest.raises(ValueError, match="z_eps"):
        hcr.gaussian_chi2(1.0, 1.0)
    with pytest.raises(ValueError, match="chi2"):
        hcr.hcr_variance_bound(1.0, -0.5)
    with pytest.raises(ValueError, match="directions"):
        hcr.cramer_rao_bound(np.eye(3), 1.0, directions=np.eye(4))
    with pytest.raises(ValueError, match=r"L=9; allowed: at most"):
        hcr.low_frequency(np.zeros((8, 8)), 9)
    with pytest.raises(ValueError, match="kappa"):
        hcr.noise_sigma(np.ones(3), 0.0)
    with pytest.raises(ValueError, match="full column rank"):
        hcr.crb_direction(np.ones((3, 2)), 0)
    with pytest.raises(ValueError, match=r"x of shape \(4,\); allowed"):
        hcr.dct2(np.ones(4))


def test_solve_modes_agree_on_a_batch_of_linear_examples():
    # Three examples through one linear map: with tight tolerances every way of sharing the LSQR solves gives the
    # closed form of Algorithm 1 for every (restart, example); the noise is one (R, B, n) block from the generator.
    rng = np.random.default_rng(10)
    A, fm, _ = _linear_map(rng)
    x = torch.tensor(rng.standard_normal((3, 4, 4)))
    results = {solve: hcr.hcr_bound(fm, x, 0.8, num_restarts=2, num_power_iterations=2, diffdiv=100.0,
                                    generator=torch.Generator().manual_seed(1), solve=solve, lsqr_atol=1e-14,
                                    lsqr_btol=1e-14) for solve in hcr.SOLVES}
    ref = results["per_example"]
    assert ref.bound_dct.shape == (3, 4, 4) and ref.noise.shape == (2, 3, 24) and ref.lsqr_iterations.shape == (6, 2)
    assert results["joint"].lsqr_iterations.shape == (2, 2) and results["per_restart"].lsqr_iterations.shape == (2, 2)
    for r in range(2):
        for b in range(3):
            e, _ = hcr.algorithm1_linear_closed_form(A, ref.noise[r, b] / np.sqrt(24) / 100.0, 2)
            np.testing.assert_allclose(ref.eps[r, b].ravel(), e, rtol=1e-7, atol=1e-12)
    for solve in ("joint", "per_restart"):
        np.testing.assert_array_equal(results[solve].noise, ref.noise)
        np.testing.assert_allclose(results[solve].bound_dct, ref.bound_dct, rtol=1e-6)



def test_block_lsqr_is_scipys_lsqr_block_by_block():
    # The joint solve's K side-by-side LSQR recursions, in torch: each block gives scipy's iterate, iteration count
    # and residual for that block alone (scipy's lsqr is the reference), with its own atol (blocks of very different
    # scales and conditioning stop at different iterations), although all blocks' products go through one
    # block-diagonal operator.  Past the loss of orthogonality of its Golub-Kahan vectors LSQR's iterate follows
    # rounding, so the products' rounding (torch's against numpy's) moves it by up to about 1e-7 here.
    rng = np.random.default_rng(20)
    K, m, q = 4, 60, 40
    mats = [rng.standard_normal((m, q)) @ np.diag(np.logspace(0, 0.15 * k, q)) for k in range(K)]
    rhs = rng.standard_normal((K, m)) * np.array([[1.0], [1e-3], [10.0], [0.1]])
    atol = np.array([1e-2, 1e-6, 1e-3, 1e-8])
    stack = torch.tensor(np.stack(mats))

    def make_op(blocks):                              # block-diagonal: (len(blocks), q) <-> (len(blocks), m)
        A = stack[blocks]
        return (lambda v: torch.einsum("kmq,kq->km", A, v), lambda w: torch.einsum("kmq,km->kq", A, w))

    x, itn, r1 = hcr._block_lsqr(make_op, torch.tensor(rhs), q, torch.tensor(atol), 1e-8, 2 * q)
    for k in range(K):
        ref = scipy.sparse.linalg.lsqr(mats[k], rhs[k], atol=atol[k], btol=1e-8, iter_lim=2 * q)
        assert itn[k] == ref[2]
        np.testing.assert_allclose(x[k].numpy(), ref[0], rtol=0, atol=1e-6 * np.abs(ref[0]).max())  # rounding
        assert float(r1[k]) == pytest.approx(ref[3], rel=1e-9)
    assert len(set(itn.tolist())) > 1                  # the blocks did stop at different iterations


def test_hcr_bound_keeps_the_first_draw_only_when_asked():
    # keep="first": the same bounds, the per-draw arrays of the first restart only (host memory independent of R)
    rng = np.random.default_rng(22)
    _, fm, _ = _linear_map(rng)
    x = torch.tensor(rng.standard_normal((3, 4, 4)))
    kw = dict(num_restarts=4, num_power_iterations=2, diffdiv=100.0, chunk_size=2)
    full = hcr.hcr_bound(fm, x, 0.7, generator=torch.Generator().manual_seed(4), **kw)
    first = hcr.hcr_bound(fm, x, 0.7, generator=torch.Generator().manual_seed(4), keep="first", **kw)
    np.testing.assert_array_equal(first.bound_dct, full.bound_dct)
    np.testing.assert_array_equal(first.ratio, full.ratio)
    for field in ("eps", "z_eps", "noise", "bound_dct_per_restart"):
        assert getattr(first, field).shape[0] == 1
        np.testing.assert_array_equal(getattr(first, field)[0], getattr(full, field)[0])


def _solve_gap(feature_map, x, sigma, **kw):
    """max over modes (and restarts) of |joint / per_restart - 1| of the per-DCT-mode bounds, default settings."""
    res = {solve: hcr.hcr_bound(feature_map, x, sigma, generator=torch.Generator().manual_seed(3), solve=solve, **kw)
           for solve in ("joint", "per_restart")}
    gap = np.abs(res["joint"].bound_dct / res["per_restart"].bound_dct - 1).max()
    gap_r = np.abs(res["joint"].bound_dct_per_restart / res["per_restart"].bound_dct_per_restart - 1).max()
    return gap, gap_r, res


def test_default_joint_solve_reproduces_per_restart_bounds_on_a_conv_map():
    # The authors' code (github.com/facebookresearch/hcrbounds) runs one LSQR per restart with its own stopping test
    # and atol = 0.02 min_b ||z_tilde_b||.  The default joint solve batches the restarts' Jacobian products but keeps
    # one LSQR recursion and stopping test per restart, so it reproduces the per-restart bounds mode for mode (a
    # single stopping test for all restarts moved single modes by up to 18 % on a small conv map).
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(1, 3, 3), torch.nn.ReLU(), torch.nn.Conv2d(3, 4, 3, stride=2),
                              torch.nn.ReLU(), torch.nn.Flatten()).eval().requires_grad_(False)
    x = torch.rand(2, 1, 8, 8)
    with torch.no_grad():
        sigma = hcr.noise_sigma(net(x), 1.0)
    gap, gap_r, res = _solve_gap(net, x, float(sigma), num_restarts=2, num_power_iterations=2,
                                 exact_map=hcr.float64_copy(net))
    assert gap < 0.02 and gap_r < 0.02, (gap, gap_r)
    assert res["joint"].lsqr_iterations.shape == res["per_restart"].lsqr_iterations.shape == (2, 2)
    assert np.abs(res["joint"].lsqr_iterations - res["per_restart"].lsqr_iterations).max() <= 1


def test_default_joint_solve_reproduces_per_restart_bounds_on_a_linear_map():
    # the same on a float64 linear map with fewer features than pixels, where only rounding separates the two
    rng = np.random.default_rng(21)
    A = torch.tensor(rng.standard_normal((10, 36)))
    x = torch.tensor(rng.standard_normal((4, 6, 6)))
    gap, gap_r, res = _solve_gap(lambda t: t.reshape(t.shape[0], -1) @ A.T, x, 0.5, num_restarts=4,
                                 num_power_iterations=3)
    assert gap < 1e-8 and gap_r < 1e-8, (gap, gap_r)
    np.testing.assert_array_equal(res["joint"].lsqr_iterations, res["per_restart"].lsqr_iterations)

def test_chunked_call_equals_the_unchunked_one():
    # chunk_size bounds how many examples run together; every example keeps its noise draws (one (R, B, n) block drawn
    # first).  Per-example solves then differ only by the rounding of forward passes over batches of another size
    # (which the code's loose LSQR tolerance amplifies to about 1e-8); joint and per-restart solves share their LSQR
    # stopping test within a chunk only, so they agree once LSQR converges.
    rng = np.random.default_rng(12)
    _, fm, _ = _linear_map(rng)
    x = torch.tensor(rng.standard_normal((5, 4, 4)))
    kw = dict(num_restarts=3, num_power_iterations=2, diffdiv=100.0)
    tight = dict(lsqr_atol=1e-14, lsqr_btol=1e-14)
    for solve, tol, rtol in (("per_example", {}, 1e-6), ("per_example", tight, 1e-9), ("joint", tight, 1e-9),
                             ("per_restart", tight, 1e-9)):
        whole = hcr.hcr_bound(fm, x, 0.9, generator=torch.Generator().manual_seed(2), solve=solve, **kw, **tol)
        chunked = hcr.hcr_bound(fm, x, 0.9, generator=torch.Generator().manual_seed(2), solve=solve, chunk_size=2,
                                **kw, **tol)                                    # chunks of 2, 2 and 1 examples
        np.testing.assert_array_equal(chunked.noise, whole.noise)
        for field in ("bound_dct", "bound_pixel", "bound_dct_per_restart", "eps", "z_eps", "chi2", "ratio"):
            expected = getattr(whole, field)
            np.testing.assert_allclose(getattr(chunked, field), expected, rtol=rtol,
                                       atol=rtol * np.abs(expected).max(), err_msg=f"{solve}: {field}")
        solves = {"per_example": (15, 15), "joint": (3, 9), "per_restart": (3, 9)}[solve]
        assert (len(whole.lsqr_iterations), len(chunked.lsqr_iterations)) == solves
    # a batch no larger than chunk_size is one chunk: the default path, bit for bit
    one = hcr.hcr_bound(fm, x, 0.9, generator=torch.Generator().manual_seed(2), chunk_size=5, **kw)
    default = hcr.hcr_bound(fm, x, 0.9, generator=torch.Generator().manual_seed(2), **kw)
    np.testing.assert_array_equal(one.bound_dct, default.bound_dct)


def test_per_restart_forward_passes_see_one_restart_batch():
    # a map with batch statistics (like BatchNorm in training mode) couples the examples of a forward pass: with
    # per-restart solves the exact forward passes (steps 6-7) must see one restart's minibatch, as the authors' code
    # does, so z_eps of restart r equals the feature change of that minibatch alone.
    W = torch.tensor(np.random.default_rng(13).standard_normal((6, 4)))

    def batch_stats(t):
        h = t.reshape(t.shape[0], -1) @ W.T
        return (h - h.mean(0)) / h.std(0)

    x = torch.tensor(np.random.default_rng(14).standard_normal((3, 2, 2)))
    res = hcr.hcr_bound(batch_stats, x, 1.0, num_restarts=2, num_power_iterations=1, diffdiv=10.0,
                        generator=torch.Generator().manual_seed(0), solve="per_restart")
    for r in range(2):
        with torch.no_grad():
            z = batch_stats(x + torch.tensor(res.eps[r])) - batch_stats(x)
        np.testing.assert_allclose(res.z_eps[r], z.numpy(), rtol=1e-10, atol=1e-13)


def test_code_tolerance_is_the_minimum_over_the_examples_of_a_solve():
    # The authors' atol = 0.02 min_b ||z_tilde_b|| is looser for a joint solve over examples of very different scales
    # than per example; per-example solves then take at least as many iterations in total.
    rng = np.random.default_rng(11)
    _, fm, _ = _linear_map(rng)
    x = torch.tensor(rng.standard_normal((4, 4, 4)))
    kw = dict(num_restarts=1, num_power_iterations=1, diffdiv=200.0)
    joint = hcr.hcr_bound(fm, x, 1.0, generator=torch.Generator().manual_seed(0), **kw)
    single = hcr.hcr_bound(fm, x, 1.0, generator=torch.Generator().manual_seed(0), solve="per_example", **kw)
    assert single.lsqr_iterations.sum() >= joint.lsqr_iterations.sum()
    assert np.all(np.isfinite(joint.bound_dct)) and np.all(joint.bound_dct > 0)


# where the bound is infinite: the rank of the Jacobian [ours]

def test_feature_jacobians_of_a_linear_map_are_its_matrix():
    A = torch.randn(5, 12, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    x = torch.randn(3, 1, 3, 4, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    J = jacobians.feature_jacobians(lambda t: t.flatten(1) @ A.T, x)
    assert J.shape == (3, 5, 12)
    torch.testing.assert_close(J, A.expand(3, 5, 12), rtol=0, atol=0)


def test_jacobian_rank_of_a_known_rank_map_and_its_null_direction():
    rng = np.random.default_rng(2)
    p, r = 10, 6
    A = torch.tensor(rng.normal(size=(8, r)) @ rng.normal(size=(r, p)))  # rank 6 < p = 10
    feature_map = lambda t: t.flatten(1) @ A.T  # noqa: E731
    x = torch.tensor(rng.normal(size=(5, p)))
    D = hcr.dct_matrix((2, 5))
    got = hcr.jacobian_rank(feature_map, x, directions=D, chunk_size=2)  # chunks of 2, 2 and 1
    assert got.rank.tolist() == [r] * 5 and np.all(got.gap < 1e-12)
    expected = np.isinf(hcr.cramer_rao_bound(A.numpy(), 1.0, D, rcond=1e-6)).sum()
    assert got.unidentifiable.tolist() == [expected] * 5 and expected > 0
    v = got.null_direction[0]
    assert np.linalg.norm(v) == pytest.approx(1.0) and np.linalg.norm(A.numpy() @ v) < 1e-12
    full = hcr.jacobian_rank(lambda t: t.flatten(1) @ torch.eye(p, dtype=torch.float64), x)
    assert full.rank.tolist() == [p] * 5 and full.unidentifiable.tolist() == [0] * 5
    assert full.null_direction == [None] * 5


def test_jacobian_rank_of_a_relu_layer_counts_its_active_units():
    W = torch.randn(20, 16, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    x = torch.randn(4, 16, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    got = hcr.jacobian_rank(lambda t: torch.relu(t @ W.T), x)
    active = (x @ W.T > 0).sum(1)  # the rows of J that are not zero; generic W: rank = min(active, p)
    assert got.rank.tolist() == torch.clamp(active, max=16).tolist()


@pytest.mark.parametrize("kwargs, match", [(dict(rcond=0.0), "rcond"), (dict(chunk_size=0), "chunk_size"),
                                           (dict(directions=np.eye(3)), "directions")])
def test_jacobian_rank_rejects_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        hcr.jacobian_rank(lambda t: t.flatten(1), torch.zeros(2, 4), **kwargs)


def test_linear_piece_extent_is_the_first_relu_crossing():
    """By hand: ReLU(x) then ReLU(W y + b); along v the pre-activations are x + t v and W(x + t v) + b while no unit
    changes side, and the extent is the first zero among them."""
    import torch.nn as nn

    layers = nn.Sequential(nn.Flatten(), nn.ReLU(), nn.Linear(2, 1, dtype=torch.float64), nn.ReLU())
    with torch.no_grad():
        layers[2].weight.copy_(torch.tensor([[1.0, 1.0]]))
        layers[2].bias.fill_(-1.0)
    x, v = torch.tensor([[1.0, 2.0]], dtype=torch.float64), torch.tensor([[-1.0, -1.0]], dtype=torch.float64)
    # first layer: 1 - t and 2 - t cross at 1 and 2; second: 3 - 2t - 1 = 2 - 2t crosses at 1
    assert hcr.linear_piece_extent(layers, x, v) == pytest.approx(1.0)
    assert hcr.linear_piece_extent(layers, x, torch.tensor([[-1.0, 0.5]], dtype=torch.float64)) == pytest.approx(1.0)
    assert hcr.linear_piece_extent(layers, x, -v) == float("inf")  # every unit moves away from its kink
    with pytest.raises(ValueError, match="Sequential of Linear"):
        hcr.linear_piece_extent(nn.Sequential(nn.Tanh()), x, v)
