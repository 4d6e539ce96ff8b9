"""Unit tests of compendium.bounds.ziller2024: Table 1 of the paper, reference values of the closed forms
(computed independently with scipy, see each test) and Monte-Carlo checks of Propositions 1-7 with fixed numpy
Generators and standard-error-based tolerances."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from compendium.bounds import ziller2024 as z

# ---------------------------------------------------------------------------------------------------------------
# Table 1 of the paper (Section 3.2)
# ---------------------------------------------------------------------------------------------------------------
# A second, independent transcription of the paper's Table 1: (sigma, C, N, T, kappa) and the printed worst-case
# success, min E[MSE] (as a number), max E[PSNR], max E[NCC].
PAPER_TABLE1 = [
    (1.0, 1.0, 1e3, 1, 0.1, "38.9%", 1.0, "0.0", "3.2%"), (1e-4, 1.0, 1e3, 1, 0.1, "100.0%", 1e-8, "80.0", "100.0%"),
    (1e-2, 1.0, 1e3, 1, 0.1, "100.0%", 1e-4, "40.0", "95.3%"), (1e2, 1.0, 1e3, 1, 0.1, "10.2%", 1e4, "-40.0", "0.0%"),
    (1e4, 1.0, 1e3, 1, 0.1, "10.0%", 1e8, "-80.0", "0.0%"), (1.0, 1e-2, 1e3, 1, 0.1, "38.9%", 1e-4, "40.0", "3.2%"),
    (1.0, 10.0, 1e3, 1, 0.1, "38.9%", 1e2, "-20.0", "3.2%"), (1.0, 1e4, 1e3, 1, 0.1, "38.9%", 1e8, "-80.0", "3.2%"),
    (1.0, 1.0, 10, 1, 0.1, "38.9%", 1.0, "0.0", "30.2%"), (1.0, 1.0, 1e5, 1, 0.1, "38.9%", 1.0, "0.0", "0.3%"),
    (1.0, 1.0, 1e9, 1, 0.1, "38.9%", 1.0, "0.0", "0.0%"), (1.0, 1.0, 1e3, 10, 0.1, "97.0%", 0.1, "10.0", "10.0%"),
    (1.0, 1.0, 1e3, 1e5, 0.1, "100.0%", 1e-5, "50.0", "99.5%"),
    (1.0, 1.0, 1e3, 1e9, 0.1, "100.0%", 1e-9, "90.0", "100.0%"),
    (1.0, 1.0, 1e3, 1, 0.1, "38.9%", 1.0, "0.0", "3.2%"), (1.0, 1.0, 1e3, 1, 1e-5, "0.1%", 1.0, "0.0", "3.2%"),
    (1.0, 1.0, 1e3, 1, 1e-9, "0.0%", 1.0, "0.0", "3.2%"),
]


def test_table1_has_17_rows_matching_a_second_transcription():
    assert len(z.table1_rows) == 17
    for row, printed in zip(z.table1_rows, PAPER_TABLE1):
        _, sigma, C, N, T, kappa, worst, mse, psnr, ncc = row
        assert (sigma, C, N, T, kappa) == printed[:5]
        assert (worst, psnr, ncc) == (printed[5], printed[7], printed[8])
        assert float(mse) == pytest.approx(printed[6], rel=1e-12)


@pytest.mark.parametrize("row", z.table1_rows, ids=[f"{i:02d}-{r[0]}" for i, r in enumerate(z.table1_rows)])
def test_table1_row_reproduces_printed_values(row):
    """Numbers within the printed precision (the chapter's formatting reproduces the strings exactly:
    test_chapter_ziller2024)."""
    _, sigma, C, N, T, kappa, worst, mse, psnr, ncc = row
    got = z.table1_row(sigma, C=C, N=N, T=T, kappa=kappa)
    assert got["worst"] == pytest.approx(float(worst.rstrip("%")) / 100, abs=5e-4)
    assert got["ncc"] == pytest.approx(float(ncc.rstrip("%")) / 100, abs=5e-4)
    assert got["psnr"] == pytest.approx(float(psnr), abs=0.05)
    # the MSE column is C^2 sigma^2 / T
    assert got["mse"] == pytest.approx(C**2 * sigma**2 / T, rel=1e-12) == pytest.approx(float(mse), rel=0.05)
    # exact columns [ours]: the exact NCC maximum is never below bound (8), the exact PSNR is the bound + Delta_N
    assert got["ncc_exact"] >= z.ncc_bound_dim(N, sigma=sigma, T=T) - 1e-6
    assert got["psnr_exact"] == pytest.approx(z.psnr_upper_bound(C, sigma=sigma, T=T) + z.psnr_jensen_gap(N), abs=1e-12)


def test_table1_exact_columns_n10():
    got = z.table1_row(1.0, C=1.0, N=10, T=1, kappa=0.1)
    assert got["ncc_exact"] == pytest.approx(0.310288, abs=2e-5)  # the paper prints 30.2 %, exact is 31.0 %
    assert got["psnr_exact"] == pytest.approx(0.448714, abs=1e-5)


# ---------------------------------------------------------------------------------------------------------------
# Reference values: Delta_N from the digamma function, the exact NCC mean by two-dimensional quadrature
# (cross-checked against scipy's non-central t law), the CDFs of Figure 2 (C = sigma = T = 1, N = 50) from scipy's
# regularised incomplete gamma function and non-central t law; all computed independently of this package
# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("N, gap", [(1, 5.517116), (2, 2.506816), (5, 0.925630), (10, 0.448714), (50, 0.087438),
                                    (1000, 0.004344), (150528, 0.000029)])
def test_psnr_jensen_gap_reference(N, gap):
    assert float(z.psnr_jensen_gap(N)) == pytest.approx(gap, abs=1e-5)


def test_psnr_jensen_gap_is_about_4343_over_N():
    N = np.array([100, 1000, 10000])
    assert np.allclose(z.psnr_jensen_gap(N) * N, 10 / np.log(10), rtol=2e-2)


@pytest.mark.parametrize("N, a, expected", [(10, 1.0, 0.310288), (1000, 1.0, 0.031615), (50, 0.5, 0.07089),
                                            (50, 1.0, 0.14076), (50, 2.0, 0.27371), (50, 5.0, 0.58123),
                                            (50, 20.0, 0.94474)])
def test_ncc_mean_exact_reference(N, a, expected):
    assert z.ncc_mean_exact(N, a=a) == pytest.approx(expected, abs=2e-5)


def test_ncc_mean_exact_vectorised_matches_scalar():
    a = [0.5, 1.0, 2.0, 5.0, 20.0]
    vec = z.ncc_mean_exact(50, a=a)
    assert vec.shape == (5,)
    assert np.allclose(vec, [z.ncc_mean_exact(50, a=v) for v in a], atol=1e-14)
    assert np.allclose(vec, [0.07089, 0.14076, 0.27371, 0.58123, 0.94474], atol=2e-5)
    assert np.all(np.diff(vec) > 0)  # increasing in a


def test_figure2_mse_cdf_reference():
    eta = np.array([0.5, 0.75, 1.0, 1.25, 1.5])
    got = z.rero_gamma_mse(eta, N=50, C=1.0, sigma=1.0)
    assert np.allclose(got, [0.0012, 0.0960, 0.5266, 0.8896, 0.9874], atol=6e-5)


def test_figure2_psnr_cdf_reference():
    eta = np.array([-2.0, -1.0, 0.0, 1.0, 2.0])
    got = z.psnr_cdf_prop7(eta, N=50, C=1.0, sigma=1.0, data_range=1.0)
    assert np.allclose(got, [0.0053, 0.1034, 0.4734, 0.8510, 0.9808], atol=6e-5)
    # success form is the complement
    assert np.allclose(z.rero_gamma_psnr(eta, N=50, C=1.0, sigma=1.0), 1 - got, atol=1e-15)


def test_figure2_ncc_cdf_reference():
    t = np.array([-0.2, 0.0, 0.14, 0.3, 0.5])
    got = z.ncc_cdf_exact(t, N=50, a=1.0)
    assert np.allclose(got, [0.0086, 0.1587, 0.4899, 0.8728, 0.9972], atol=6e-5)


@pytest.mark.parametrize("a", [0.3, 1.0, 2.5])
def test_ncc_cdf_at_zero_is_phi_minus_a(a):
    assert float(z.ncc_cdf_exact(0.0, N=50, a=a)) == pytest.approx(stats.norm.cdf(-a), abs=1e-10)


def test_ncc_cdf_endpoints():
    assert float(z.ncc_cdf_exact(-1.0, N=20, a=1.0)) == pytest.approx(0.0, abs=1e-12)
    assert float(z.ncc_cdf_exact(1.0, N=20, a=1.0)) == pytest.approx(1.0, abs=1e-12)


def test_mse_threshold_reference_and_inverse():
    assert float(z.mse_threshold(0.05, N=50, C=1, sigma=1)) == pytest.approx(0.69529, abs=1e-5)
    assert float(z.mse_threshold(0.5, N=50, C=1, sigma=1)) == pytest.approx(0.98670, abs=1e-5)  # the median MSE
    g = np.array([0.01, 0.3, 0.9])
    eta = z.mse_threshold(g, N=200, C=0.7, sigma=0.4, T=3)
    assert np.allclose(z.rero_gamma_mse(eta, N=200, C=0.7, sigma=0.4, T=3), g, atol=1e-10)


# ---------------------------------------------------------------------------------------------------------------
# Closed-form identities
# ---------------------------------------------------------------------------------------------------------------
def test_clip_factor_and_expected_mse_closed_form():
    X = np.full(100, 0.3)  # ||X|| = 3
    assert z.clip_factor(X, C=6.0) == 1.0
    assert z.clip_factor(X, C=1.5) == pytest.approx(0.5, rel=1e-15)
    assert z.expected_mse(X, C=6.0, sigma=0.1) == pytest.approx(36 * 0.01, rel=1e-12)  # unclipped: C^2 sigma^2
    # clipped: (||X|| - C)^2 / N + C^2 sigma^2 / T
    assert z.expected_mse(X, C=1.5, sigma=0.1, T=4) == pytest.approx(1.5**2 / 100 + 2.25 * 0.01 / 4, rel=1e-12)
    # the paper's form (4): (1-beta)^2 / N sum x_i^2 + C^2 sigma^2
    b = z.clip_factor(X, C=1.5)
    assert z.expected_mse(X, C=1.5, sigma=0.1) == pytest.approx((1 - b) ** 2 * np.mean(X**2) + 2.25 * 0.01, rel=1e-12)
    batch = np.stack([X, 3 * X])
    assert np.allclose(z.clip_factor(batch, C=4.5), [1.0, 0.5])
    assert np.allclose(z.expected_mse(batch, C=1.5, sigma=0.1),
                       [z.expected_mse(X, C=1.5, sigma=0.1), z.expected_mse(3 * X, C=1.5, sigma=0.1)])


def test_ncc_eq7_equals_snr_form_and_bound8_attained_when_centred_and_clipped():
    rng = np.random.default_rng(7)
    X = rng.normal(size=64)
    X -= X.mean()
    C, sigma = 0.5 * np.linalg.norm(X), 0.3
    a = z.ncc_snr(X, C=C, sigma=sigma)
    assert a == pytest.approx(1 / sigma, rel=1e-12)  # centred and clipped: a = sqrt(T)/sigma
    assert z.ncc_eq7(X, C=C, sigma=sigma) == pytest.approx(z.ncc_bound_dim(64, sigma=sigma), rel=1e-12)
    # eq. (7) literally
    Y = rng.random(64)
    C2, s2 = 2.0, 0.2
    b = z.clip_factor(Y, C=C2)
    lit = b * np.sqrt(np.var(Y)) / np.sqrt(b * b * np.var(Y) + C2**2 * s2**2)
    assert z.ncc_eq7(Y, C=C2, sigma=s2) == pytest.approx(lit, rel=1e-12)
    assert z.ncc_eq7(Y, C=C2, sigma=s2) < z.ncc_bound_dim(64, sigma=s2) < z.ncc_bound_free(s2)


def test_ncc_bounds_values():
    assert float(z.ncc_bound_dim(1000, sigma=1.0)) == pytest.approx(0.031607, abs=1e-6)
    assert float(z.ncc_bound_dim(3072, sigma=0.01)) == pytest.approx(0.87464, abs=1e-5)
    assert float(z.ncc_bound_free(1.0)) == pytest.approx(np.sqrt(0.5), rel=1e-14)
    assert float(z.ncc_bound_dim(1000, sigma=1.0, T=10)) == pytest.approx(0.0995037, abs=1e-7)


def test_expected_psnr_exact():
    assert float(z.expected_psnr_exact(0.5, N=10, C=1.0, sigma=0.1)) == pytest.approx(
        10 * np.log10(0.25 / 0.01) + 0.448714, abs=1e-5)


def test_worst_case_success_values_monotone_and_kappa_zero():
    assert float(z.worst_case_success(1.0, kappa=0.1)) == pytest.approx(0.389144, abs=1e-6)
    assert float(z.worst_case_success(1.0, kappa=0.1, T=10)) == pytest.approx(0.969995, abs=1e-6)
    assert float(z.worst_case_success(1.0, kappa=1e-9)) == pytest.approx(2.8993e-7, rel=1e-4)
    sig = np.logspace(-2, 3, 30)
    w = z.worst_case_success(sig, kappa=0.1)
    assert np.all(np.diff(w) <= 0)  # non-increasing in sigma (saturates at 1 for tiny sigma)
    assert np.all(np.diff(w[sig > 0.2]) < 0)  # strictly decreasing where not saturated
    assert w[-1] == pytest.approx(0.1, abs=1e-3)  # no privacy loss -> prior success kappa
    k = np.linspace(0.01, 0.99, 30)
    assert np.all(np.diff(z.worst_case_success(2.0, kappa=k)) > 0)  # increasing in kappa
    assert np.all(np.diff(z.worst_case_success(2.0, kappa=0.1, T=np.arange(1, 20))) > 0)  # increasing in T
    assert np.all(z.worst_case_success(sig, kappa=k) >= k)  # never below the prior
    assert np.all(z.worst_case_success(sig, kappa=0.0) == 0.0)  # no prior, no success
    assert np.all(z.worst_case_success(sig, kappa=1.0) == 1.0)
    # invariance: only sqrt(T)/sigma matters
    assert float(z.worst_case_success(3.0, kappa=0.2, T=9)) == pytest.approx(
        float(z.worst_case_success(1.0, kappa=0.2)), abs=1e-14)


# ---------------------------------------------------------------------------------------------------------------
# Monte Carlo checks (fixed seeds, SE-based tolerances)
# ---------------------------------------------------------------------------------------------------------------
def _release(X, C, sigma, rng, n, T=1):
    """n draws of beta X + mean of T N(0, C^2 sigma^2) vectors (eq. 3 with Prop. 4), shape (n, N)."""
    beta = z.clip_factor(X, C=C)
    return beta * X + rng.normal(0.0, C * sigma / np.sqrt(T), size=(n, X.size))


@pytest.mark.parametrize("C_factor, sigma, T", [(2.0, 0.01, 1), (2.0, 0.1, 1), (0.5, 0.01, 1), (0.5, 0.1, 1),
                                                (0.2, 0.05, 10), (3.0, 0.05, 10)])
def test_prop1_expected_mse_monte_carlo(C_factor, sigma, T):
    rng = np.random.default_rng(12345)
    X = rng.random(3072) * 0.8 + 0.1
    C = C_factor * np.linalg.norm(X)
    m = np.mean((_release(X, C, sigma, rng, 400, T) - X) ** 2, axis=1)
    theory = z.expected_mse(X, C=C, sigma=sigma, T=T)
    se = m.std(ddof=1) / np.sqrt(m.size)
    assert abs(m.mean() - theory) < 6 * se
    if C_factor >= 1:
        assert theory == pytest.approx(float(z.mse_lower_bound(C, sigma=sigma, T=T)), rel=1e-12)  # equality in (5)
    else:
        assert theory > float(z.mse_lower_bound(C, sigma=sigma, T=T))


def test_prop2_psnr_bound_violated_by_jensen_gap_unclipped():
    rng = np.random.default_rng(2024)
    N, C, sigma, M = 10, 1.0, 0.1, 100_000
    X = np.linspace(0, 1, N)
    X = X * 0.9 / np.linalg.norm(X)  # ||X|| = 0.9 < C: unclipped
    R = X.max() - X.min()
    rec = _release(X, C, sigma, rng, M)
    ps = 10 * np.log10(R * R / np.mean((rec - X) ** 2, axis=1))
    se = ps.std(ddof=1) / np.sqrt(M)
    bound = float(z.psnr_upper_bound(C, sigma=sigma, mean_sq_range=R * R))
    assert ps.mean() > bound + 5 * se  # the printed bound (6) is exceeded
    exact = float(z.expected_psnr_exact(R, N=N, C=C, sigma=sigma))
    assert exact == pytest.approx(bound + float(z.psnr_jensen_gap(N)), abs=1e-12)
    assert abs(ps.mean() - exact) < 5 * se


def test_prop2_corrected_bound_holds_when_clipped():
    rng = np.random.default_rng(99)
    N, sigma, M = 10, 0.1, 50_000
    X = rng.random(N)
    C = 0.5 * np.linalg.norm(X)
    R = X.max() - X.min()
    ps = 10 * np.log10(R * R / np.mean((_release(X, C, sigma, rng, M) - X) ** 2, axis=1))
    se = ps.std(ddof=1) / np.sqrt(M)
    assert ps.mean() <= float(z.expected_psnr_exact(R, N=N, C=C, sigma=sigma)) + 5 * se


def _mc_ncc(X, rec):
    a = X - X.mean()
    b = rec - rec.mean(axis=1, keepdims=True)
    return (b @ a) / np.sqrt((a @ a) * np.sum(b * b, axis=1))


@pytest.mark.parametrize("N, C_factor, sigma, T", [(50, 0.5, 0.1, 1), (50, 2.0, 0.02, 1), (200, 0.3, 0.2, 4),
                                                   (20, 1.5, 0.1, 1)])
def test_prop3_ncc_eq7_and_exact_mean_monte_carlo(N, C_factor, sigma, T):
    rng = np.random.default_rng(31 + N)
    X = rng.random(N)  # not centred
    C = C_factor * np.linalg.norm(X)
    v = _mc_ncc(X, _release(X, C, sigma, rng, 20_000, T))
    se = v.std(ddof=1) / np.sqrt(v.size)
    eq7 = z.ncc_eq7(X, C=C, sigma=sigma, T=T)
    assert abs(v.mean() - eq7) < 5 * se + 2 / N * eq7
    exact = z.ncc_mean_exact(N, a=z.ncc_snr(X, C=C, sigma=sigma, T=T))
    assert abs(v.mean() - exact) < 5 * se
    # the exact CDF at its median-ish point
    t0 = float(np.median(v))
    p = float(z.ncc_cdf_exact(t0, N=N, a=z.ncc_snr(X, C=C, sigma=sigma, T=T)))
    assert abs(p - 0.5) < 5 * np.sqrt(0.25 / v.size)


def test_prop3_bound8_attained_for_centred_clipped_data():
    rng = np.random.default_rng(5)
    N, sigma = 100, 0.1
    X = rng.normal(size=N)
    X -= X.mean()
    C = 0.5 * np.linalg.norm(X)
    v = _mc_ncc(X, _release(X, C, sigma, rng, 20_000))
    se = v.std(ddof=1) / np.sqrt(v.size)
    assert abs(v.mean() - z.ncc_mean_exact(N, a=1 / sigma)) < 5 * se
    # (8) is attained up to its O(1/N) relative excess
    assert v.mean() == pytest.approx(float(z.ncc_bound_dim(N, sigma=sigma)), rel=2 / N)


@pytest.mark.parametrize("C_factor", [2.0, 0.5, 0.3])
def test_prop5_mse_distribution_ks(C_factor):
    rng = np.random.default_rng(48)
    X = rng.random(48)
    C, sigma = C_factor * np.linalg.norm(X), 0.3
    lam = z.mse_noncentrality(X, C=C, sigma=sigma)
    if C_factor >= 1:
        assert lam == 0.0
    else:
        beta = z.clip_factor(X, C=C)
        assert lam == pytest.approx((1 - beta) ** 2 * np.sum(X**2) / (C * C * sigma * sigma), rel=1e-12)
        assert lam > 1
    law = z.mse_distribution(X, C=C, sigma=sigma)
    m = np.mean((_release(X, C, sigma, rng, 20_000) - X) ** 2, axis=1)
    assert stats.kstest(m, law.cdf).pvalue > 1e-3
    assert law.mean() == pytest.approx(z.expected_mse(X, C=C, sigma=sigma), rel=1e-10)


def test_prop5_with_averaging_T():
    rng = np.random.default_rng(4)
    X = rng.random(30)
    C, sigma, T = 0.6 * np.linalg.norm(X), 0.5, 7
    rel = X * z.clip_factor(X, C=C) + rng.normal(0, C * sigma, size=(10_000, T, 30)).mean(axis=1)
    m = np.mean((rel - X) ** 2, axis=1)
    assert stats.kstest(m, z.mse_distribution(X, C=C, sigma=sigma, T=T).cdf).pvalue > 1e-3


@pytest.mark.parametrize("clipped", [False, True])
def test_prop6_rero_mse_monte_carlo(clipped):
    rng = np.random.default_rng(66)
    N, sigma, M = 48, 0.3, 20_000
    X = rng.random(N)
    C = np.linalg.norm(X) * (0.5 if clipped else 2.0)
    m = np.mean((_release(X, C, sigma, rng, M) - X) ** 2, axis=1)
    s2 = C * C * sigma * sigma
    for eta in (0.6 * s2, s2, 1.4 * s2):
        gamma = float(z.rero_gamma_mse(eta, N=N, C=C, sigma=sigma))
        p = np.mean(m <= eta)
        se = np.sqrt(gamma * (1 - gamma) / M)
        assert p <= gamma + 5 * se
        if not clipped:
            assert abs(p - gamma) < 5 * se + 1e-12
    if clipped:  # strictly below at eta = C^2 sigma^2 (0.168 against gamma = 0.527 with this seed)
        assert np.mean(m <= s2) < float(z.rero_gamma_mse(s2, N=N, C=C, sigma=sigma)) - 0.1


@pytest.mark.parametrize("clipped", [False, True])
def test_prop7_psnr_cdf_monte_carlo(clipped):
    rng = np.random.default_rng(77)
    N, sigma, M = 48, 0.05, 20_000
    X = rng.random(N)
    C = np.linalg.norm(X) * (0.9 if clipped else 2.0)
    R = X.max() - X.min()
    ps = 10 * np.log10(R * R / np.mean((_release(X, C, sigma, rng, M) - X) ** 2, axis=1))
    # thresholds around the unclipped expected PSNR so that the probabilities are not all 0 or 1
    centre = float(z.psnr_upper_bound(C, sigma=sigma, mean_sq_range=R * R))
    for eta in (centre - 1.0, centre, centre + 1.0):
        f = float(z.psnr_cdf_prop7(eta, N=N, C=C, sigma=sigma, data_range=R))
        p = np.mean(ps <= eta)
        se = np.sqrt(max(f * (1 - f), 1e-4) / M)
        if clipped:
            assert p >= f - 5 * se
        else:
            assert abs(p - f) < 5 * se
        # the success form: P(PSNR >= eta) <= gamma
        assert np.mean(ps >= eta) <= float(z.rero_gamma_psnr(eta, N=N, C=C, sigma=sigma, data_range=R)) + 5 * se
    if clipped:
        f = float(z.psnr_cdf_prop7(centre, N=N, C=C, sigma=sigma, data_range=R))
        assert np.mean(ps <= centre) > f + 0.1  # a strict lower bound, visibly


# ---------------------------------------------------------------------------------------------------------------
# Input validation
# ---------------------------------------------------------------------------------------------------------------
X5 = np.ones(5)


@pytest.mark.parametrize("call, name", [
    (lambda: z.clip_factor(X5, C=0.0), "C"),
    (lambda: z.clip_factor(X5, C=-1.0), "C"),
    (lambda: z.expected_mse(X5, C=-1.0, sigma=1.0), "C"),
    (lambda: z.expected_mse(X5, C=1.0, sigma=0.0), "sigma"),
    (lambda: z.mse_lower_bound(1.0, sigma=-0.5), "sigma"),
    (lambda: z.mse_lower_bound(0.0, sigma=1.0), "C"),
    (lambda: z.mse_lower_bound(1.0, sigma=1.0, T=0), "T"),
    (lambda: z.expected_mse(X5, C=1.0, sigma=1.0, T=0.5), "T"),
    (lambda: z.psnr_upper_bound(1.0, sigma=0.0), "sigma"),
    (lambda: z.ncc_snr(X5, C=0.0, sigma=1.0), "C"),
    (lambda: z.ncc_eq7(X5, C=1.0, sigma=-1.0), "sigma"),
    (lambda: z.ncc_bound_dim(10, sigma=0.0), "sigma"),
    (lambda: z.ncc_bound_dim(10, sigma=1.0, T=0), "T"),
    (lambda: z.ncc_bound_free(-1.0), "sigma"),
    (lambda: z.rero_gamma_mse(0.5, N=10, C=0.0, sigma=1.0), "C"),
    (lambda: z.psnr_cdf_prop7(0.0, N=10, C=1.0, sigma=0.0), "sigma"),
    (lambda: z.mse_distribution(X5, C=1.0, sigma=0.0), "sigma"),
    (lambda: z.worst_case_success(0.0, kappa=0.1), "sigma"),
    (lambda: z.worst_case_success(1.0, kappa=0.1, T=0), "T"),
    (lambda: z.worst_case_success(1.0, kappa=-0.1), "kappa"),
    (lambda: z.worst_case_success(1.0, kappa=1.5), "kappa"),
    (lambda: z.mse_threshold(0.0, N=10, C=1.0, sigma=1.0), "gamma"),
    (lambda: z.mse_threshold(1.0, N=10, C=1.0, sigma=1.0), "gamma"),
    (lambda: z.mse_threshold(-0.2, N=10, C=1.0, sigma=1.0), "gamma"),
    (lambda: z.ncc_cdf_exact(0.1, N=2, a=1.0), "N"),
    (lambda: z.ncc_mean_exact(2, a=1.0), "N"),
    (lambda: z.psnr_jensen_gap(0), "N"),
], ids=lambda v: v if isinstance(v, str) else "")
def test_invalid_inputs_raise_value_error_naming_the_parameter(call, name):
    with pytest.raises(ValueError, match=rf"^{name}=.*; allowed: "):
        call()


def test_validation_is_vectorised():
    with pytest.raises(ValueError,
                       match=r"^sigma=array\(\[1\., 0\., 2\.\]\); allowed: a finite number > 0 \(noise multiplier\)$"):
        z.mse_lower_bound(1.0, sigma=np.array([1.0, 0.0, 2.0]))
    with pytest.raises(ValueError,
                       match=r"^kappa=.*; allowed: a probability in \[0, 1\] \(prior success probability\)$"):
        z.worst_case_success(1.0, kappa=np.array([0.1, 1.01]))


def test_remark2_decomposition_sums_to_prop1_and_vanishes_unclipped():
    x = np.random.default_rng(7).random((5, 40))
    norms = np.linalg.norm(x, axis=1)
    C = float(np.median(norms))
    bias2, scaled_var, noise = z.expected_mse_decomposition(x, C=C, sigma=0.3, T=4)
    np.testing.assert_allclose(bias2 + scaled_var + noise, z.expected_mse(x, C=C, sigma=0.3, T=4), rtol=1e-12)
    clipped = norms > C
    assert np.all((bias2 > 0) == clipped) and np.all((scaled_var > 0) == clipped)
    np.testing.assert_allclose(noise, C**2 * 0.3**2 / 4)


def test_psnr_success_probability_is_tail_accurate_and_shared_with_mean_to_extreme():
    """Far in the tail the success probability is tiny but not zero: 1 - cdf would round it to 0."""
    import mpmath

    from compendium.bounds import mean_to_extreme as mte

    N, C, sigma = 3072, 1.0, 1.0
    for eta in (3.0, 4.0):  # 1.8e-130 and 2.2e-215
        eta_hat = 10 ** (-eta / 10)
        x = N * eta_hat / (2 * C**2 * sigma**2)
        exact = float(mpmath.gammainc(N / 2, 0, x, regularized=True))
        got = float(z.rero_gamma_psnr(eta, N=N, C=C, sigma=sigma))
        assert 0 < exact < 1e-100 and got == pytest.approx(exact, rel=1e-12)
        assert float(1 - z.psnr_cdf_prop7(eta, N=N, C=C, sigma=sigma)) == 0.0  # what 1 - cdf gave
        assert got == mte.psnr_success_probability(eta, N=N, sigma=sigma, norm=C, data_range=1.0)
    # and the complement, accurate in its own tail
    exact_cdf = float(mpmath.gammainc(N / 2, N * 10 ** 0.3 / 2, mpmath.inf, regularized=True))  # 7.8e-206
    assert float(z.psnr_cdf_prop7(-3.0, N=N, C=C, sigma=sigma)) == pytest.approx(exact_cdf, rel=1e-10)
    assert exact_cdf < 1e-100
