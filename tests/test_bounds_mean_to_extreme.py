"""Unit tests of compendium.bounds.mean_to_extreme: reference values R1-R7 (the paper's closed forms evaluated
independently with scipy, outside this package) to their printed
precision, closed-form identities, and Monte-Carlo checks of the paper's results against a faithful numpy
simulation of the attack (M x N gradient, clipping, noise, known-beta rescaling) with fixed numpy Generators and
standard-error-based tolerances, including the discrepancies (missing square in eq. 18, shrinkage beating the
"best achievable" estimator, the printed selection probability)."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from compendium import dp
from compendium.bounds import mean_to_extreme as mte
from compendium.bounds import ziller2024


def _printed(value, text: str) -> bool:
    """``value`` agrees with the printed ``text`` within half a unit of its last printed digit."""
    mant, _, exp = text.lower().partition("e")
    decimals = len(mant.split(".")[1]) if "." in mant else 0
    unit = 10.0 ** (int(exp or 0) - decimals)
    return abs(float(value) - float(text)) <= 0.5 * unit * (1 + 1e-9)


def test_printed_helper():
    assert _printed(0.0796557, "0.0796557") and _printed(0.07965574, "0.0796557")
    assert not _printed(0.0796558, "0.0796557")
    assert _printed(1.721164e-4, "1.72116e-04") and not _printed(1.72118e-4, "1.72116e-04")


# ---------------------------------------------------------------------------------------------------------------
# Reference values: eqs. 3, 17-18, 23, 25, 28 and Prop. 7 evaluated independently with scipy (digits as shown)
# ---------------------------------------------------------------------------------------------------------------
R1 = {0.5: ("0.599186", "0.509862", "0.331898", "0.0849533", "9.9973"),
      1.0: ("0.238422", "0.126937", "0.0209236", "4.71224e-05", "4.3772"),
      2.0: ("0.0524403", "0.00682959", "9.43917e-06", "2.70603e-16", "1.9931"),
      5.0: ("0.000512536", "1.75463e-08", "4.0437e-25", "2.01457e-90", "0.7255")}


@pytest.mark.parametrize("sigma", R1)
def test_r1_privacy_profile_eq3_is_dp_gaussian_delta(sigma):
    """Eq. (3) is the mu-GDP profile with mu = 1/sigma, already in compendium.dp (not duplicated in the module)."""
    for eps, text in zip((0.5, 1.0, 2.0, 4.0), R1[sigma]):
        assert _printed(dp.gaussian_delta(eps, 1.0 / sigma), text), (eps, text)
    assert _printed(dp.epsilon_exact(sigma, 1, 1e-5), R1[sigma][4])


def test_r1_epsilon_sigma_10():
    assert _printed(dp.epsilon_exact(10.0, 1, 1e-5), "0.3407")


# (C, m, M*, Var(M*)/sigma^2, printed M, Var/sigma^2, M = 1: Var/sigma^2)
R2 = [(5000.0, 200.0, 625, 40000.0, 25, 1.0e6, 2.5e7), (10.0, 1.0, 100, 1.0, 10, 10.0, 100.0),
      (3.0, 1.0, 9, 1.0, 3, 3.0, 9.0), (1.0, 0.5, 4, 0.25, 2, 0.5, 1.0), (1.0, 2.0, 1, 4.0, 1, 4.0, 4.0)]


@pytest.mark.parametrize("C, m, m_star, v_star, m_printed, v_printed, v_one", R2)
def test_r2_optimal_rows_and_variance(C, m, m_star, v_star, m_printed, v_printed, v_one):
    assert mte.optimal_rows(C, min_norm=m) == m_star and isinstance(mte.optimal_rows(C, min_norm=m), int)
    assert mte.optimal_rows_as_printed(C, min_norm=m) == m_printed
    assert mte.reconstruction_variance(1.0, norm=m, C=C, M=m_star) == pytest.approx(v_star, rel=1e-12)
    assert mte.reconstruction_variance(1.0, norm=m, C=C, M=m_printed) == pytest.approx(v_printed, rel=1e-12)
    assert mte.reconstruction_variance(1.0, norm=m, C=C, M=1) == pytest.approx(v_one, rel=1e-12)
    assert mte.reconstruction_variance(1.0, norm=m, C=C) == pytest.approx(m * m, rel=1e-12)  # M = None: the optimum
    # the missing square costs a factor C/m (when C > m)
    assert v_printed / v_star == pytest.approx(max(1.0, np.ceil(C / m) ** 2 / np.ceil(C / m)), rel=1e-12)


def test_optimal_rows_float_noise_vectorised_and_sufficient():
    assert (3 * 0.1 / 0.1) ** 2 > 9  # floating-point noise (9.000000000000004) ...
    assert mte.optimal_rows(3 * 0.1, min_norm=0.1) == 9  # ... adds no row
    assert mte.optimal_rows_as_printed(3 * 0.1, min_norm=0.1) == 3
    assert mte.optimal_rows(1.0, min_norm=0.3) == 12 and mte.optimal_rows_as_printed(1.0, min_norm=0.3) == 4
    C = np.array([0.5, 1.0, 3.0, 7.3])
    M = mte.optimal_rows(C, min_norm=0.7)
    assert M.dtype.kind == "i" and np.array_equal(M, [1, 3, 19, 109])
    # M* is the smallest M that reaches the floor sigma^2 m^2 (for C > m)
    assert np.allclose(mte.reconstruction_variance(0.3, norm=0.7, C=C, M=M), 0.09 * 0.49, rtol=1e-12)
    big = C > 0.7
    assert np.all(mte.reconstruction_variance(0.3, norm=0.7, C=C[big], M=M[big] - 1) > 0.09 * 0.49)


def test_reconstruction_variance_only_m_c2_matters():
    assert mte.reconstruction_variance(0.5, norm=2.0, C=10.0, M=1, loss_scale=5.0) == pytest.approx(1.0, rel=1e-12)
    assert mte.reconstruction_variance(0.5, norm=2.0, C=10.0, M=25) == pytest.approx(1.0, rel=1e-12)
    assert mte.reconstruction_variance(0.5, norm=2.0, C=10.0, M=4, loss_scale=-2.5) == pytest.approx(1.0, rel=1e-12)
    assert mte.reconstruction_variance(0.5, norm=2.0, C=10.0, M=1) == pytest.approx(25.0, rel=1e-12)


R3 = {1: ("0.0796557", "0.248170", "0.520500", "0.682689", "0.842701"),
      10: ("2.49795e-09", "1.72116e-04", "0.108822", "0.559507", "0.970747"),
      1000: (None, "5.36439e-307", "4.06717e-44", "0.505947", "1")}


@pytest.mark.parametrize("N", R3)
def test_r3_theorem2_cdf(N):
    eta = np.array([0.01, 0.1, 0.5, 1.0, 2.0])
    got = mte.mse_cdf(eta, N=N, sigma=1.0, norm=1.0)
    assert got.shape == (5,)
    for v, text in zip(got, R3[N]):
        if text is None:  # printed "0 (underflow)"
            assert v == 0.0 or v < 1e-307
        else:
            assert _printed(v, text), (v, text)
    assert np.allclose(mte.rero_gamma_mse(eta, N=N, sigma=1.0, min_norm=1.0), got, rtol=0, atol=0)
    assert np.allclose(mte.mse_distribution(N=N, sigma=1.0, norm=1.0).cdf(eta), got, rtol=1e-10, atol=1e-300)


def test_r3_imagenet_scale_and_small_n():
    N, sigma, norm = 150528, 5e-4, 200.0
    E = mte.expected_mse(sigma=sigma, norm=norm)
    assert E == pytest.approx(0.01, rel=1e-12)
    assert _printed(mte.mse_distribution(N=N, sigma=sigma, norm=norm).std(), "3.64507e-05")
    cdf = [mte.mse_cdf(f * E, N=N, sigma=sigma, norm=norm) for f in (0.98, 0.99, 1.0, 1.01)]
    assert all(_printed(v, t) for v, t in zip(cdf, ("1.67e-08", "0.00296696", "0.500485", "0.996886")))
    assert _printed(mte.asymptotic_normal_cdf(0.99 * E, N=N, sigma=sigma, norm=norm), "0.0030401")  # Prop. B.3
    assert _printed(mte.mse_cdf(0.01, N=4, sigma=0.1, norm=1.0), "0.593994")


R4 = {1: ("0.998435", "0.924642", "0.682689", "0.426117", "0.248170", "5.517116", "9.6476"),
      10: ("1", "0.999537", "0.559507", "0.0226571", "1.72116e-04", "0.448714", "2.0431"),
      1000: ("1", "1", "0.505947", "7.85437e-104", "5.36439e-307", "0.004344", "0.1943")}


@pytest.mark.parametrize("N", R4)
def test_r4_psnr_survival_mean_sd(N):
    ref = R4[N]
    got = mte.psnr_success_probability(np.array([-10.0, -5.0, 0.0, 5.0, 10.0]), N=N, sigma=1.0, norm=1.0,
                                       data_range=1.0)
    assert all(_printed(v, t) for v, t in zip(got, ref[:5])), got
    assert np.array_equal(mte.rero_gamma_psnr([-10.0, -5.0, 0.0, 5.0, 10.0], N=N, sigma=1.0, min_norm=1.0,
                                              data_range=1.0), got)
    assert _printed(mte.psnr_mean(N, sigma=1.0, norm=1.0, data_range=1.0), ref[5])
    assert _printed(mte.psnr_sd(N), ref[6])
    if N == 10:  # the Jensen gap of Ziller et al. is the same digamma term
        assert mte.psnr_mean(N, sigma=1.0, norm=1.0, data_range=1.0) == pytest.approx(
            float(ziller2024.psnr_jensen_gap(N)), abs=1e-12)


def test_r4_psnr_mean_shifts_and_figure3():
    assert _printed(mte.psnr_mean(1, sigma=0.1, norm=1.0, data_range=1.0), "25.517116")
    assert _printed(mte.psnr_mean(1, sigma=10.0, norm=1.0, data_range=1.0), "-14.482884")
    assert mte.psnr_mean(1, sigma=1.0, norm=0.1, data_range=1.0) == pytest.approx(
        mte.psnr_mean(1, sigma=0.1, norm=1.0, data_range=1.0), abs=1e-12)
    # Fig. 3 x-ranges: union of the [1 %, 99 %] quantiles of the 9 distributions (sigma, N, ||X||)
    cases = [(1, s, 1.0) for s in (0.1, 1.0, 10.0)] + [(n, 1.0, 1.0) for n in (1, 10, 1000)] + \
            [(1, 1.0, x) for x in (0.1, 1.0, 10.0)]
    lo = min(mte.mse_threshold(0.01, **dict(zip(("N", "sigma", "norm"), c))) for c in cases)
    hi = max(mte.mse_threshold(0.99, **dict(zip(("N", "sigma", "norm"), c))) for c in cases)
    assert _printed(lo, "1.5709e-06") and _printed(hi, "663.49")
    assert _printed(10 * np.log10(1 / hi), "-28.218") and _printed(10 * np.log10(1 / lo), "58.039")
    # E[MSE] constant in N, E[PSNR] not (row 2)
    assert [mte.expected_mse(sigma=1.0, norm=1.0)] * 3 == [1.0, 1.0, 1.0]
    assert all(_printed(mte.psnr_mean(n, sigma=1.0, norm=1.0, data_range=1.0), t)
               for n, t in ((1, "5.517"), (10, "0.449"), (1000, "0.0043")))


@pytest.mark.parametrize("eta, gamma, N, m, text", [(0.1, 0.1, 1, 1.0, "2.51651"), (0.1, 0.1, 10, 1.0, "0.453368"),
                                                    (0.01, 0.05, 3072, 20.0, "0.00510735"),
                                                    (0.01, 0.05, 150528, 200.0, "0.000501504")])
def test_r5_minimal_noise_multiplier(eta, gamma, N, m, text):
    s = mte.minimal_noise_multiplier(gamma, eta=eta, N=N, norm=m)
    assert _printed(s, text)
    assert mte.rero_gamma_mse(eta, N=N, sigma=s, min_norm=m) == pytest.approx(
        gamma, rel=1e-9)  # the calibration is tight
    assert mte.rero_gamma_mse(eta, N=N, sigma=1.01 * s, min_norm=m) < gamma < mte.rero_gamma_mse(
        eta, N=N, sigma=0.99 * s, min_norm=m)


def test_r5_mse_threshold_and_inverse():
    assert _printed(mte.mse_threshold(0.1, N=1, sigma=1.0, norm=1.0), "0.0157908")
    assert _printed(mte.mse_threshold(0.5, N=10, sigma=1.0, norm=1.0), "0.934182")
    assert _printed(mte.mse_threshold(0.01, N=3072, sigma=0.01, norm=20.0), "0.037664")
    g = np.array([0.01, 0.3, 0.9])
    law = dict(N=200, sigma=0.7, norm=0.4, T=3)
    assert np.allclose(mte.mse_cdf(mte.mse_threshold(g, **law), **law), g, atol=1e-10)
    # T enters as sigma^2 -> sigma^2 / T everywhere (Proposition 7)
    assert mte.minimal_noise_multiplier(0.1, eta=0.1, N=10, norm=1.0, T=4) == pytest.approx(
        2 * mte.minimal_noise_multiplier(0.1, eta=0.1, N=10, norm=1.0), rel=1e-12)


@pytest.mark.parametrize("sigma, N, bound, uniform", [(1.0, 4, "0.447214", "0.242536"),
                                                      (0.1, 4, "0.980581", "0.928477"),
                                                      (0.1, 3072, "0.177555", "0.089846"),
                                                      (0.01, 150528, "0.249589", "0.127816")])
def test_r6_ncc(sigma, N, bound, uniform):
    assert _printed(mte.ncc_bound(N, sigma=sigma), bound)
    # U(0,1) large-N value: ||X||^2 / N -> 1/3, Var -> 1/12
    assert _printed(mte.ncc_limit(sigma, norm=np.sqrt(N / 3), variance=1 / 12), uniform)


def test_r7_selection_probability_printed_vs_exact():
    printed = mte.selection_probability_as_printed(10, K=10_000, dataset_size=1000)
    assert _printed(printed, "2743.36") and printed > 1  # not a probability
    assert _printed(mte.selection_probability(10, K=10_000, dataset_size=1000), "0.125173")
    k = np.arange(0, 60)
    p = mte.selection_probability(k, K=10_000, dataset_size=1000)
    assert p.sum() == pytest.approx(1.0, abs=1e-12)
    # the printed expression is the union bound on P(at least k selections)
    tail = np.cumsum(p[::-1])[::-1]
    assert np.all(mte.selection_probability_as_printed(k[1:], K=10_000, dataset_size=1000) >= tail[1:] - 1e-15)
    assert mte.selection_probability_as_printed(12, K=10, dataset_size=100) == 0.0
    assert mte.selection_probability_as_printed(2, K=5, dataset_size=3) == pytest.approx(10 / 9, rel=1e-12)


def test_r7_selection_probability_monte_carlo():
    rng = np.random.default_rng(7)
    trials, K, D = 2000, 10_000, 1000
    counts = (rng.integers(0, D, size=(trials, K)) == 0).sum(axis=1)  # record 0 is the target
    for k in (8, 10, 12):
        p = float(mte.selection_probability(k, K=K, dataset_size=D))
        assert abs(np.mean(counts == k) - p) < 5 * np.sqrt(p * (1 - p) / trials)


# ---------------------------------------------------------------------------------------------------------------
# Closed-form identities
# ---------------------------------------------------------------------------------------------------------------
def test_mse_distribution_moments_and_averaging():
    law = mte.mse_distribution(N=50, sigma=0.3, norm=4.0, T=5)
    assert law.mean() == pytest.approx(mte.expected_mse(sigma=0.3, norm=4.0, T=5), rel=1e-12)
    assert law.var() == pytest.approx(2 * (0.09 * 16 / 5) ** 2 / 50, rel=1e-12)
    assert mte.expected_mse(sigma=0.3, norm=4.0, T=5) == pytest.approx(
        mte.expected_mse(sigma=0.3 / np.sqrt(5), norm=4.0), rel=1e-12)
    eta = np.linspace(0.05, 0.6, 7)
    assert np.allclose(mte.mse_cdf(eta, N=50, sigma=0.3, norm=4.0, T=5), law.cdf(eta), atol=1e-12)
    assert mte.mse_cdf(-1.0, N=50, sigma=0.3, norm=4.0) == 0.0


def test_rero_gammas_ordering():
    eta = np.logspace(-2, 1, 20)
    g = mte.rero_gamma_mse(eta, N=10, sigma=1.0, min_norm=2.0)
    g_dp = mte.rero_gamma_mse_dp_only(eta, N=10, sigma=1.0, C=1.5)  # C = 1.5 <= m = 2
    assert np.all(g_dp >= g) and np.any(g_dp > g)
    # the bound holds for every norm >= m
    assert np.all(mte.mse_cdf(eta[:, None], N=10, sigma=1.0, norm=np.array([2.0, 3.0, 10.0])) <= g[:, None] + 1e-15)
    assert np.array_equal(mte.rero_gamma_psnr(3.0, N=10, sigma=1.0, min_norm=2.0, data_range=1.0),
                          mte.psnr_success_probability(3.0, N=10, sigma=1.0, norm=2.0, data_range=1.0))


def test_psnr_probability_is_the_mse_cdf_at_the_equivalent_threshold():
    eta_db, R = np.array([0.0, 7.5, 15.0]), 0.8
    assert np.allclose(mte.psnr_success_probability(eta_db, N=64, sigma=0.05, norm=3.0, data_range=R),
                       mte.mse_cdf(R * R * 10 ** (-eta_db / 10), N=64, sigma=0.05, norm=3.0), atol=1e-15)


def test_ncc_limit_rho_and_exact_law():
    sigma, N = 0.2, 40
    X = np.random.default_rng(3).random(N)
    norm, var = np.linalg.norm(X), X.var()
    rho = mte.ncc_rho(sigma, norm=norm, variance=var, N=N)
    assert mte.ncc_limit(sigma, norm=norm, variance=var) == pytest.approx(rho / np.sqrt(rho**2 + N), rel=1e-12)
    assert rho <= 1 / sigma and mte.ncc_limit(sigma, norm=norm, variance=var) < mte.ncc_bound(N, sigma=sigma)
    Xc = X - X.mean()  # centred: equality in eq. (28), rho = 1/sigma
    assert mte.ncc_limit(sigma, norm=np.linalg.norm(Xc), variance=Xc.var()) == pytest.approx(
        mte.ncc_bound(N, sigma=sigma), rel=1e-12)
    assert mte.ncc_rho(sigma, norm=np.linalg.norm(Xc), variance=Xc.var(), N=N) == pytest.approx(1 / sigma, rel=1e-12)
    assert mte.ncc_rho(sigma, norm=norm, variance=var, N=N, T=4) == pytest.approx(2 * rho, rel=1e-12)
    t = np.array([-0.3, 0.0, 0.2, 0.6])
    assert np.array_equal(mte.ncc_cdf_exact(t, N=N, rho=rho), ziller2024.ncc_cdf_exact(t, N=N, a=rho))
    assert float(mte.ncc_cdf_exact(0.0, N=N, rho=rho)) == pytest.approx(stats.norm.cdf(-rho), abs=1e-10)


def test_asymptotic_normal_is_only_asymptotic():
    E = mte.expected_mse(sigma=1.0, norm=1.0)
    # N = 10: the lower tail is 3x too heavy (skewness sqrt(8/N) ignored); N = 150528: within 1e-3
    assert (mte.asymptotic_normal_cdf(0.3 * E, N=10, sigma=1.0, norm=1.0)
            > 3 * mte.mse_cdf(0.3 * E, N=10, sigma=1.0, norm=1.0))
    eta = E * np.array([0.995, 1.0, 1.005])
    assert np.allclose(mte.asymptotic_normal_cdf(eta, N=150528, sigma=1.0, norm=1.0),
                       mte.mse_cdf(eta, N=150528, sigma=1.0, norm=1.0), atol=1e-3)
    assert mte.asymptotic_normal_cdf(E, N=7, sigma=1.0, norm=1.0) == pytest.approx(0.5, abs=1e-15)


def test_shrinkage_closed_forms():
    N, sigma, norm, T = 10, 1.0, 2.0, 3
    a = mte.shrinkage_factor(N, sigma=sigma, T=T)
    assert a == pytest.approx(1 / (1 + N * sigma**2 / T), rel=1e-12)
    e = mte.shrinkage_expected_mse(sigma, norm=norm, N=N, T=T)
    # bias-variance: ((1 - a)^2 + a^2 N sigma^2 / T) ||X||^2 / N, minimised at a
    def risk(b):
        return ((1 - b) ** 2 + b * b * N * sigma**2 / T) * norm**2 / N
    assert e == pytest.approx(risk(a), rel=1e-12) == pytest.approx(sigma**2 * norm**2 / (T + N * sigma**2), rel=1e-12)
    assert risk(a) < min(risk(a * 0.99), risk(a * 1.01))
    assert e < mte.expected_mse(sigma=sigma, norm=norm, T=T)
    law = mte.shrinkage_mse_distribution(N, sigma=sigma, norm=norm, T=T)
    assert law.mean() == pytest.approx(e, rel=1e-12)


# ---------------------------------------------------------------------------------------------------------------
# Monte Carlo of the faithful attack (Corollary 1, eqs. 9-16 in numpy): M x N gradient, clipping, noise, known beta
# ---------------------------------------------------------------------------------------------------------------
def _attack(X, sigma, C, M, rng, trials, loss_scale=1.0, T=1):
    """``trials`` reconstructions, each the mean over T steps of (1/(M beta c)) sum_j noisy rows; shape (trials, N)."""
    N = X.size
    beta = min(1.0, C / (np.sqrt(M) * abs(loss_scale) * np.linalg.norm(X)))  # eq. (10)
    out = np.zeros((trials, N))
    for _ in range(T):
        noisy = beta * loss_scale * X + sigma * C * rng.standard_normal((trials, M, N))  # eq. (11)
        out += noisy.mean(axis=1) / (beta * loss_scale) / T  # eq. (16)
    return out


def _mse(X, Y):
    return np.mean((Y - X) ** 2, axis=-1)


def _ncc(X, Y):
    a = X - X.mean()
    b = Y - Y.mean(axis=-1, keepdims=True)
    return (b @ a) / np.sqrt((a @ a) * np.sum(b * b, axis=-1))


@pytest.mark.parametrize("c_over_norm, M, sigma", [(1.0, 1, 0.1), (0.5, 1, 1.0), (10.0, 100, 0.1), (10.0, 10, 1.0),
                                                   (100.0, 100, 0.1)],
                         ids=["C=|X|", "clipped", "M=M*", "M=printed", "unclipped"])
def test_mc_eq17_and_theorem2_faithful_attack(c_over_norm, M, sigma):
    """Var = sigma^2 max(||X||^2, C^2/M) (eq. 17/Prop. 1, corrected) and N MSE / Var ~ chi^2_N (Theorem 2)."""
    rng = np.random.default_rng(16 + M)
    N, trials = 16, 4000
    X = rng.random(N)
    norm = np.linalg.norm(X)
    C = c_over_norm * norm
    Y = _attack(X, sigma, C, M, rng, trials)
    var = mte.reconstruction_variance(sigma, norm=norm, C=C, M=M)
    m = _mse(X, Y)
    assert abs(m.mean() - var) < 5 * var * np.sqrt(2 / (N * trials))
    assert stats.kstest(m * N / var, stats.chi2(N).cdf).pvalue > 1e-3
    assert abs(Y.mean(0) - X).max() < 5 * np.sqrt(var / trials)  # unbiased
    if M >= mte.optimal_rows(C, min_norm=norm):  # Theorem 2 exactly as stated
        assert stats.kstest(m, mte.mse_distribution(N=N, sigma=sigma, norm=norm).cdf).pvalue > 1e-3
        assert var == pytest.approx(mte.expected_mse(sigma=sigma, norm=norm), rel=1e-12)
    elif c_over_norm == 10.0:  # printed eq. (18): C/m = 10 times the optimum, visibly
        assert m.mean() > 9 * mte.expected_mse(sigma=sigma, norm=norm)


def test_mc_loss_scale_and_averaging():
    rng = np.random.default_rng(5)
    N, trials, sigma = 16, 4000, 0.5
    X = rng.random(N)
    norm = np.linalg.norm(X)
    se = np.sqrt(2 / (N * trials))
    m5 = _mse(X, _attack(X, sigma, 5 * norm, 1, rng, trials, loss_scale=5.0))
    assert abs(m5.mean() / mte.expected_mse(sigma=sigma, norm=norm) - 1) < 5 * se  # one row, c = C / ||X||: optimal
    m1 = _mse(X, _attack(X, sigma, 5 * norm, 1, rng, trials))
    assert abs(m1.mean() / mte.expected_mse(sigma=sigma, norm=norm) - 25) < 5 * 25 * se
    # Proposition 7: averaging k releases divides the variance by k; MSE law with T = k
    for k in (5, 20):
        mk = _mse(X, _attack(X, sigma, norm, 1, rng, trials, T=k))
        assert abs(mk.mean() - mte.expected_mse(sigma=sigma, norm=norm, T=k)) < 5 * mte.expected_mse(
            sigma=sigma, norm=norm, T=k) * se
        assert stats.kstest(mk, mte.mse_distribution(N=N, sigma=sigma, norm=norm, T=k).cdf).pvalue > 1e-3


def test_mc_prop3_rero_over_a_data_set():
    """Every sample of a 30-sample data set: P(MSE <= eta) <= gamma(eta) (m = min norm), equality for argmin."""
    rng = np.random.default_rng(33)
    N, sigma, trials = 10, 1.0, 2000
    data = rng.random((30, N))
    norms = np.linalg.norm(data, axis=1)
    m = norms.min()
    for eta in np.array([0.1, 0.5, 1.0]) * sigma**2 * m**2:
        gamma = mte.rero_gamma_mse(eta, N=N, sigma=sigma, min_norm=m)
        se = np.sqrt(gamma * (1 - gamma) / trials)
        for i, X in enumerate(data):
            p = np.mean(_mse(X, _attack(X, sigma, norms[i], 1, rng, trials)) <= eta)
            assert p <= gamma + 5 * se
            if i == norms.argmin():
                assert abs(p - gamma) < 5 * se


def test_mc_psnr_exact_probability_mean_sd():
    rng = np.random.default_rng(42)
    N, sigma, trials = 10, 0.3, 20_000
    X = rng.random(N)
    norm = np.linalg.norm(X)
    Y = _attack(X, sigma, norm, 1, rng, trials)
    for R in (X.max() - X.min(), 1.0):  # per-target range (Definition 4) and a nominal range
        ps = 10 * np.log10(R * R / _mse(X, Y))
        for eta in (0.0, 5.0, 10.0):
            p = float(mte.psnr_success_probability(eta, N=N, sigma=sigma, norm=norm, data_range=R))
            assert abs(np.mean(ps >= eta) - p) < 5 * np.sqrt(max(p * (1 - p), 1e-4) / trials)
        sd = mte.psnr_sd(N)
        assert abs(ps.mean() - mte.psnr_mean(N, sigma=sigma, norm=norm, data_range=R)) < 5 * sd / np.sqrt(trials)
        assert abs(ps.std(ddof=1) / sd - 1) < 5 * np.sqrt(0.5 / trials) * 2  # heavier-than-normal tails: 2x slack


def test_mc_prop_b3_clt_holds_for_large_n_only():
    rng = np.random.default_rng(3)
    sigma, trials = 0.1, 4000
    p = {}
    for N in (10, 3072):
        X = rng.random(N)
        norm = np.linalg.norm(X)
        m = _mse(X, X + sigma * norm * rng.standard_normal((trials, N)))  # the law of X_hat (eq. 20)
        p[N] = stats.kstest(m, lambda e, N=N, norm=norm: mte.asymptotic_normal_cdf(e, N=N, sigma=sigma,
                                                                                    norm=norm)).pvalue
    assert p[3072] > 1e-3 and p[10] < 1e-3


def test_mc_prop6_ncc_large_n_limit_and_small_n_exact_law():
    rng = np.random.default_rng(6)
    N, trials = 3072, 1000
    X = rng.random(N)
    norm = np.linalg.norm(X)
    for sigma in (0.1, 1.0):
        r = _ncc(X, X + sigma * norm * rng.standard_normal((trials, N)))
        assert abs(r.mean() - mte.ncc_limit(sigma, norm=norm, variance=X.var())) < 0.005
    # small N: the "bound" (28) is exceeded often (Remark B.1), at the rate of the exact non-central-t law
    N, trials, sigma = 4, 4000, 0.1
    X = np.array([0.2, 0.5, 0.7, 0.8])  # P(NCC > bound) = 0.262 (it depends on X: 0.06-0.64 for U(0,1) draws)
    norm = np.linalg.norm(X)
    r = _ncc(X, _attack(X, sigma, norm, 1, rng, trials))
    rho = mte.ncc_rho(sigma, norm=norm, variance=X.var(), N=N)
    bound = mte.ncc_bound(N, sigma=sigma)
    p_exceed = 1 - float(mte.ncc_cdf_exact(bound, N=N, rho=rho))
    assert p_exceed > 0.1
    assert abs(np.mean(r > bound) - p_exceed) < 5 * np.sqrt(p_exceed * (1 - p_exceed) / trials)
    assert stats.kstest(r, lambda t: mte.ncc_cdf_exact(t, N=N, rho=rho)).pvalue > 1e-3
    # data-independent tail bound with rho = 1/sigma (F decreasing in rho)
    assert 1 - mte.ncc_cdf_exact(bound, N=N, rho=1 / sigma) >= p_exceed


@pytest.mark.parametrize("N, sigma, eta_factor, gamma_text", [(10, 1.0, 0.5, "0.1088"), (64, 0.1, 0.5, "2.76e-4"),
                                                               (3072, 0.01, 0.995, "0.4255")])
def test_mc_shrinkage_beats_mvue_and_violates_prop3(N, sigma, eta_factor, gamma_text):
    """Against Theorem 1 and Prop. 3: a X_hat with a = 1/(1 + N sigma^2) has lower E[MSE] for every X and
    P(MSE <= eta) >> gamma(eta)."""
    rng = np.random.default_rng(N)
    trials = 4000 if N < 1000 else 1000
    X = rng.random(N)
    norm = np.linalg.norm(X)
    Y = _attack(X, sigma, norm, 1, rng, trials)
    a = mte.shrinkage_factor(N, sigma=sigma)
    m_hat, m_shr = _mse(X, Y), _mse(X, a * Y)
    e_hat, e_shr = mte.expected_mse(sigma=sigma, norm=norm), mte.shrinkage_expected_mse(sigma, norm=norm, N=N)
    assert abs(m_hat.mean() - e_hat) < 5 * m_hat.std(ddof=1) / np.sqrt(trials)
    assert abs(m_shr.mean() - e_shr) < 5 * m_shr.std(ddof=1) / np.sqrt(trials)
    assert e_shr < e_hat and m_shr.mean() < m_hat.mean()
    eta = eta_factor * e_hat
    gamma = mte.rero_gamma_mse(eta, N=N, sigma=sigma, min_norm=norm)  # the data set {X}: m = ||X||
    assert _printed(gamma, gamma_text)
    p_th = float(mte.shrinkage_mse_distribution(N, sigma=sigma, norm=norm).cdf(eta))
    p = np.mean(m_shr <= eta)
    assert abs(p - p_th) < 5 * np.sqrt(max(p_th * (1 - p_th), 1e-4) / trials)
    assert p > gamma + 5 * np.sqrt(gamma * (1 - gamma) / trials) + 0.1  # violates the "for any reconstruction" bound
    # PSNR is a decreasing function of the MSE: Proposition 5 is violated as well
    eta_db = 10 * np.log10(1 / eta)
    assert np.mean(10 * np.log10(1 / m_shr) >= eta_db) > mte.rero_gamma_psnr(eta_db, N=N, sigma=sigma, min_norm=norm,
                                                                             data_range=1.0) + 0.1
    if sigma**2 > 1 / N:  # even the constant reconstruction 0 beats the MVUE
        assert norm**2 / N < e_hat


def test_mc_shrinkage_law_ks():
    rng = np.random.default_rng(64)
    N, sigma, T, trials = 64, 0.1, 2, 4000
    X = rng.random(N)
    norm = np.linalg.norm(X)
    Y = X + sigma * norm / np.sqrt(T) * rng.standard_normal((trials, N))
    m = _mse(X, mte.shrinkage_factor(N, sigma=sigma, T=T) * Y)
    assert stats.kstest(m, mte.shrinkage_mse_distribution(N, sigma=sigma, norm=norm, T=T).cdf).pvalue > 1e-3


# ---------------------------------------------------------------------------------------------------------------
# Input validation
# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("call, name", [
    (lambda: mte.optimal_rows(0.0, min_norm=1.0), "C"),
    (lambda: mte.optimal_rows(1.0, min_norm=-1.0), "min_norm"),
    (lambda: mte.optimal_rows_as_printed(1.0, min_norm=0.0), "min_norm"),
    (lambda: mte.reconstruction_variance(0.0, norm=1.0, C=1.0), "sigma"),
    (lambda: mte.reconstruction_variance(1.0, norm=0.0, C=1.0), "norm"),
    (lambda: mte.reconstruction_variance(1.0, norm=1.0, C=-1.0), "C"),
    (lambda: mte.reconstruction_variance(1.0, norm=1.0, C=1.0, M=0), "M"),
    (lambda: mte.reconstruction_variance(1.0, norm=1.0, C=1.0, M=2.5), "M"),
    (lambda: mte.reconstruction_variance(1.0, norm=1.0, C=1.0, M=2, loss_scale=0.0), "loss_scale"),
    (lambda: mte.expected_mse(sigma=-1.0, norm=1.0), "sigma"),
    (lambda: mte.expected_mse(sigma=1.0, norm=np.nan), "norm"),
    (lambda: mte.expected_mse(sigma=1.0, norm=1.0, T=0.5), "T"),
    (lambda: mte.mse_distribution(N=0, sigma=1.0, norm=1.0), "N"),
    (lambda: mte.mse_cdf(0.1, N=10, sigma=0.0, norm=1.0), "sigma"),
    (lambda: mte.mse_cdf(0.1, N=0.5, sigma=1.0, norm=1.0), "N"),
    (lambda: mte.rero_gamma_mse(0.1, N=10, sigma=1.0, min_norm=0.0), "min_norm"),
    (lambda: mte.rero_gamma_mse_dp_only(0.1, N=10, sigma=1.0, C=0.0), "C"),
    (lambda: mte.mse_threshold(0.0, N=10, sigma=1.0, norm=1.0), "gamma"),
    (lambda: mte.mse_threshold(1.0, N=10, sigma=1.0, norm=1.0), "gamma"),
    (lambda: mte.minimal_noise_multiplier(1.5, eta=0.1, N=10, norm=1.0), "gamma"),
    (lambda: mte.minimal_noise_multiplier(0.1, eta=0.0, N=10, norm=1.0), "eta"),
    (lambda: mte.minimal_noise_multiplier(0.1, eta=0.1, N=10, norm=-1.0), "norm"),
    (lambda: mte.minimal_noise_multiplier(0.1, eta=0.1, N=10, norm=1.0, T=0), "T"),
    (lambda: mte.asymptotic_normal_cdf(0.1, N=0, sigma=1.0, norm=1.0), "N"),
    (lambda: mte.psnr_success_probability(0.0, N=10, sigma=1.0, norm=1.0, data_range=0.0), "data_range"),
    (lambda: mte.rero_gamma_psnr(0.0, N=10, sigma=1.0, min_norm=-2.0, data_range=1.0), "min_norm"),
    (lambda: mte.psnr_mean(10, sigma=1.0, norm=1.0, data_range=-1.0), "data_range"),
    (lambda: mte.psnr_sd(0), "N"),
    (lambda: mte.ncc_limit(1.0, norm=1.0, variance=0.0), "variance"),
    (lambda: mte.ncc_bound(10, sigma=0.0), "sigma"),
    (lambda: mte.ncc_bound(10, sigma=1.0, T=0), "T"),
    (lambda: mte.ncc_rho(1.0, norm=1.0, variance=0.1, N=0), "N"),
    (lambda: mte.ncc_cdf_exact(0.1, N=2, rho=1.0), "N"),
    (lambda: mte.shrinkage_factor(10, sigma=-1.0), "sigma"),
    (lambda: mte.shrinkage_expected_mse(1.0, norm=0.0, N=10), "norm"),
    (lambda: mte.shrinkage_mse_distribution(10, sigma=1.0, norm=1.0, T=0), "T"),
    (lambda: mte.selection_probability(-1, K=10, dataset_size=100), "k"),
    (lambda: mte.selection_probability(1.5, K=10, dataset_size=100), "k"),
    (lambda: mte.selection_probability(1, K=-10, dataset_size=100), "K"),
    (lambda: mte.selection_probability(1, K=10, dataset_size=0), "dataset_size"),
    (lambda: mte.selection_probability_as_printed(1, K=10, dataset_size=0.5), "dataset_size"),
], ids=lambda v: v if isinstance(v, str) else "")
def test_invalid_inputs_raise_value_error_naming_the_parameter(call, name):
    with pytest.raises(ValueError, match=rf"\b{name}\b"):
        call()


def test_validation_is_vectorised():
    with pytest.raises(ValueError, match="sigma"):
        mte.expected_mse(sigma=np.array([1.0, 0.0]), norm=1.0)
    with pytest.raises(ValueError, match="gamma"):
        mte.mse_threshold(np.array([0.1, 1.0]), N=10, sigma=1.0, norm=1.0)
    assert mte.expected_mse(sigma=np.array([1.0, 2.0]), norm=np.array([[1.0], [3.0]])).shape == (2, 2)


def test_validation_messages_use_the_package_format():
    with pytest.raises(ValueError, match=r"^sigma=-1\.0; allowed: a finite number > 0 \(noise multiplier\)$"):
        mte.expected_mse(sigma=-1.0, norm=1.0)
    with pytest.raises(ValueError, match=r"^gamma=1\.5; allowed: a probability in \(0, 1\)$"):
        mte.minimal_noise_multiplier(1.5, eta=0.1, N=10, norm=1.0)
    with pytest.raises(ValueError, match=r"^M=0; allowed: an integer >= 1 \(number of rows of the linear layer\)$"):
        mte.reconstruction_variance(1.0, norm=1.0, C=1.0, M=0)
    with pytest.raises(ValueError, match=r"^loss_scale=0\.0; allowed: a finite non-zero number \(loss scale c\)$"):
        mte.reconstruction_variance(1.0, norm=1.0, C=1.0, M=2, loss_scale=0.0)
