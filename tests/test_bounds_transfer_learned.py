"""Unit tests of compendium.bounds.transfer_learned (Maciazek & Allison 2025, Section 2 and Appendix A.1): Eq. (6)
against reference values and against Eqs. (7)-(9), the exact Neyman-Pearson ROC against Eq. (6) and against a Monte
Carlo likelihood-ratio test, Theorem 1 and identity (13) at equal and unequal variances, the baseline attack against
simulation, and the input rules.  Reference values: computed with scipy (and, where stated, mpmath at 60 digits)
from independent transcriptions of the paper's formulas."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import special

from compendium.bounds import transfer_learned as tl

FPRS = np.array([1e-3, 1e-2, 0.1, 0.5])
GRID = np.concatenate([[0.0, 1e-300, 1e-12, 1e-6], np.linspace(1e-3, 1 - 1e-3, 41), [1 - 1e-9, 1.0]])


def params(mu0, sigma0, mu1, sigma1):
    return {"mu0": mu0, "sigma0": sigma0, "mu1": mu1, "sigma1": sigma1}


def eq6_literal(fpr, mu0, sigma0, mu1, sigma1):
    """Eq. (6) exactly as printed (erf form)."""
    return 0.5 - 0.5 * special.erf((mu0 - mu1) / (np.sqrt(2) * sigma0)
                                   + sigma1 / sigma0 * special.erfinv(1 - 2 * fpr))


# ---------------------------------------------------------------------------------------------------------------
# Eq. (6), the observable phi, Eqs. (7)-(9)
# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("p, expected", [
    ((-4, 1, -2, 0.5), [0.675404, 0.798655, 0.912962, 0.977250]),
    ((-4, 1, -3, 1), [0.018298, 0.092362, 0.389144, 0.841345]),
    ((-3, 0.8, -2, 0.5), [0.247811, 0.419189, 0.673295, 0.894350]),
    ((0, 1, 0, 1), [0.001, 0.01, 0.1, 0.5]),  # chance line
])
def test_eq6_reference_values_and_printed_erf_form(p, expected):
    tpr = tl.analytic_tpr(FPRS, **params(*p))
    assert np.max(np.abs(tpr - expected)) < 1e-6
    assert np.max(np.abs(tpr - eq6_literal(FPRS, *p))) < 1e-14


def test_phi_of_the_nearest_neighbour_thresholds():
    # tau_NN of MNIST, CIFAR-10, CelebA (Section 2) through phi = logit(l / 4) (App. A.1)
    phi = tl.min_mse_logit(np.array([0.0696, 0.1284, 0.1217]))
    assert np.max(np.abs(phi - [-4.033732, -3.406273, -3.461593])) < 1e-6
    assert tl.min_mse_logit(2.0) == 0.0


@pytest.mark.parametrize("p", [(-4, 1, -2, 0.5), (-4.43, 0.48, -2.67, 0.59), (1, 2, -1, 0.3), (0, 1, 0, 3)])
def test_cumulative_roc_eliminates_to_eq6(p):
    """The part of Theorem 1 that holds: Eqs. (8)-(9) with the threshold eliminated are Eq. (6), any parameters
    (thresholds within 5 sigma1 of mu1, where FPR is not rounded to 0 or 1)."""
    thresholds = p[2] + p[3] * np.linspace(-5, 5, 41)
    fpr, tpr = tl.cumulative_roc(thresholds, **params(*p))
    assert np.max(np.abs(tl.analytic_tpr(fpr, **params(*p)) - tpr)) < 1e-10
    assert np.all(np.diff(fpr) >= 0) and np.all(np.diff(tpr) >= 0)


# ---------------------------------------------------------------------------------------------------------------
# the Neyman-Pearson ROC against Eq. (6)
# ---------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("p", [(-4, 1, -2, 1), (-4, 0.5, -3.9, 0.5), (0, 2, 5, 2), (1, 1, 1, 1)])
def test_neyman_pearson_equals_eq6_at_equal_variances(p):
    kw = params(*p)
    assert np.max(np.abs(tl.neyman_pearson_tpr(GRID, **kw) - tl.analytic_tpr(GRID, **kw))) < 1e-12
    assert np.max(np.abs(tl.theorem1_gap(GRID, **kw))) < 1e-12


def test_neyman_pearson_dominates_eq6_and_is_a_proper_roc():
    rng = np.random.default_rng(0)
    for _ in range(60):
        mu0, mu1 = rng.normal(0, 2, 2)
        sigma0, sigma1 = np.exp(rng.normal(0, 0.7, 2))
        kw = params(mu0, sigma0, mu1, sigma1)
        tpr = tl.neyman_pearson_tpr(GRID, **kw)
        assert np.all(tpr >= tl.analytic_tpr(GRID, **kw) - 1e-12), kw
        assert np.all(tpr >= GRID - 1e-12), kw  # never below chance
        assert tpr[0] == 0.0 and tpr[-1] == 1.0
        assert np.all(np.diff(tpr) >= -1e-15), kw
        inner = GRID[4:-2]  # concave on an even grid: the N-P ROC is the upper concave envelope
        assert np.all(np.diff(tl.neyman_pearson_tpr(inner, **kw), 2) <= 1e-12), kw


@pytest.mark.parametrize("p", [(-4, 1, -2, 0.5), (-3, 0.8, -2, 0.5), (-4, 0.5, -2, 1), (0, 1, 5.1154, 2.2736),
                               (-1, 1, 0, 0.5)])
def test_neyman_pearson_strictly_above_eq6_at_unequal_variances(p):
    gap = tl.theorem1_gap(FPRS, **params(*p))
    assert np.all(gap > 0) and gap.max() > 1e-6


def test_analytic_and_cumulative_endpoints_and_monotonicity():
    for p in [(-4, 1, -2, 0.5), (2, 1, 0, 3), (0, 1, 0, 1)]:
        tpr = tl.analytic_tpr(GRID, **params(*p))
        assert tpr[0] == 0.0 and tpr[-1] == 1.0 and np.all(np.diff(tpr) >= 0)
    fpr, tpr = tl.cumulative_roc(np.array([-60.0, 60.0]), **params(-4, 1, -2, 0.5))
    assert list(fpr) == [0.0, 1.0] and list(tpr) == [0.0, 1.0]


@pytest.mark.parametrize("p", [(-4, 1, -2, 0.5), (-0.5, 0.6, 0, 0.5), (-4, 0.5, -2, 1), (2, 1, 0, 1.5)])
def test_roc_point_at_a_threshold_and_inverse_agree(p):
    kw = params(*p)
    fpr, tpr = tl.neyman_pearson_roc(np.linspace(-4, 6, 21), **kw)
    inner = (fpr > 1e-300) & (fpr < 1)
    assert np.max(np.abs(tl.neyman_pearson_tpr(fpr[inner], **kw) - tpr[inner])) < 1e-10


def test_two_tailed_formulas_after_eq12_as_printed():
    """sigma0 > sigma1: the printed TPR_NP, FPR_NP in r0 and delta(C~) (Eq. (12)), transcribed separately."""
    mu0, s0, mu1, s1 = -4.0, 1.0, -2.0, 0.5
    c_min = np.log(s1 / s0) - 0.5 * (mu0 - mu1) ** 2 / (s0**2 - s1**2)
    c = c_min + np.array([0.01, 0.5, 3.0, 6.0, 10.0])
    r0 = (mu1 * s0**2 - mu0 * s1**2) / (s0**2 - s1**2)
    delta = s0 * s1 * np.sqrt((mu0 - mu1) ** 2 + 2 * (c + np.log(s0 / s1)) * (s0**2 - s1**2)) / (s0**2 - s1**2)
    printed = [1 - 0.5 * (special.erf((m - r0 + delta) / (np.sqrt(2) * s)) - special.erf((m - r0 - delta)
                                                                                         / (np.sqrt(2) * s)))
               for m, s in ((mu1, s1), (mu0, s0))]
    fpr, tpr = tl.neyman_pearson_roc(c, **params(mu0, s0, mu1, s1))
    assert np.max(np.abs(fpr - printed[0])) < 1e-12 and np.max(np.abs(tpr - printed[1])) < 1e-12
    assert np.allclose(tl.neyman_pearson_roots(c, **params(mu0, s0, mu1, s1))[1], delta, rtol=1e-13)
    # below C~_min the N-P test accepts H0 everywhere
    assert tl.neyman_pearson_roc(c_min - 1, **params(mu0, s0, mu1, s1)) == (1.0, 1.0)


@pytest.mark.parametrize("p", [(-4, 1, -2, 0.5), (-0.5, 1, 0, 0.5), (0, 1, 5.1154, 2.2736), (1.5, 0.7, 0, 1.2)])
def test_neyman_pearson_against_a_monte_carlo_likelihood_ratio_test(p):
    """Sample phi under H0 and H1, apply the likelihood-ratio test (11) > C~ and compare the frequencies with the
    exact ROC point (5 standard errors); at the same FPR the simulated test beats Eq. (6) where the gap is large."""
    mu0, s0, mu1, s1 = p
    kw, n = params(*p), 200_000
    rng = np.random.default_rng(1)
    x0, x1 = rng.normal(mu0, s0, n), rng.normal(mu1, s1, n)

    def llr(x):  # Eq. (11)
        return np.log(s1 / s0) - (x - mu0) ** 2 / (2 * s0**2) + (x - mu1) ** 2 / (2 * s1**2)

    for c in np.quantile(llr(x1), [0.5, 0.9, 0.99, 0.999]):
        fpr, tpr = tl.neyman_pearson_roc(c, **kw)
        f_mc, t_mc = np.mean(llr(x1) > c), np.mean(llr(x0) > c)
        se_f, se_t = np.sqrt(fpr * (1 - fpr) / n) + 1e-12, np.sqrt(tpr * (1 - tpr) / n) + 1e-12
        assert abs(f_mc - fpr) < 5 * se_f and abs(t_mc - tpr) < 5 * se_t, (c, fpr, f_mc, tpr, t_mc)
        assert abs(t_mc - tl.neyman_pearson_tpr(fpr, **kw)) < 5 * se_t
        if tl.theorem1_gap(fpr, **kw) > 20 * se_t:
            assert t_mc - tl.analytic_tpr(fpr, **kw) > 10 * se_t


# ---------------------------------------------------------------------------------------------------------------
# Theorem 1 and identity (13)
# ---------------------------------------------------------------------------------------------------------------
def test_theorem1_table_of_the_implementation_notes():
    """(mu0, sigma0, mu1, sigma1) = (-4, 1, -2, 0.5): N-P point at C~ and Eq. (6) at its FPR (values to 1e-6)."""
    kw = params(-4.0, 1.0, -2.0, 0.5)
    c_min = np.log(0.5) - 0.5 * 4 / 0.75
    rows = [(c_min + 0.01, 0.946251, 0.998126, 0.997482, 6.4e-4), (0, 0.048474, 0.879024, 0.879016, 8.1e-6),
            (1, 0.018930, 0.831933, 0.831930, 3.3e-6), (2, 0.007198, 0.781238, 0.781237, 1.4e-6),
            (4, 0.000978, 0.674220, 0.674220, 3.0e-7)]
    for c, f_ref, t_ref, t6_ref, gap_ref in rows:
        fpr, tpr = tl.neyman_pearson_roc(c, **kw)
        assert abs(fpr - f_ref) < 1e-6 and abs(tpr - t_ref) < 1e-6
        assert abs(tl.analytic_tpr(fpr, **kw) - t6_ref) < 1e-6
        assert abs(tl.theorem1_gap(fpr, **kw) - gap_ref) < 0.05 * gap_ref


def test_identity13_residual_reference_values():
    """(13) is not an identity.  References: the printed expression in mpmath at 60 digits."""
    cases = [((-2, 1, 0.5, 1), 7.9921491e-4), ((-2, 1, 0.5, 3), 1.6622029e-8), ((-0.5, 0.6, 0.5, 0.5), 2.4545594e-4),
             ((-1, 0.8, 0.7, 2), 3.3624101e-14)]
    for (dmu, s0, s1, d), ref in cases:
        r = tl.identity13_residual(d, delta_mu=dmu, sigma0=s0, sigma1=s1)
        assert abs(r - ref) < max(1e-6 * ref, 5e-16), (dmu, s0, s1, d, r)
    # the printed erf form in double precision agrees where it has no cancellation
    dmu, s0, s1, d = -2.0, 1.0, 0.5, np.array([0.5, 1.0, 1.5])
    dvar = s0**2 - s1**2

    def term(s):
        c = s * dmu / (np.sqrt(2) * dvar)
        return special.erfinv(special.erf(c + d / (np.sqrt(2) * s)) - special.erf(c - d / (np.sqrt(2) * s)) - 1)

    printed = np.sqrt(2) * dmu + 2 * s1 * term(s1) - 2 * s0 * term(s0)
    assert np.max(np.abs(tl.identity13_residual(d, delta_mu=dmu, sigma0=s0, sigma1=s1) - printed)) < 1e-12


def test_identity13_is_theorem1_at_the_threshold():
    """For sigma0 > sigma1, (13) at delta(C~) of Eq. (12) is the probit-form residual of the N-P point at C~."""
    for mu0, s0, mu1, s1 in [(-0.5, 0.6, 0.0, 0.5), (-4.0, 1.0, -2.0, 0.5)]:
        kw = params(mu0, s0, mu1, s1)
        c_min = np.log(s1 / s0) - 0.5 * (mu0 - mu1) ** 2 / (s0**2 - s1**2)
        c = c_min + np.array([0.01, 0.5, 1.0, 2.0, 4.0])
        _, delta = tl.neyman_pearson_roots(c, **kw)
        r13 = tl.identity13_residual(delta, delta_mu=mu0 - mu1, sigma0=s0, sigma1=s1)
        assert np.allclose(tl.theorem1_residual(c, **kw), r13, rtol=1e-7, atol=1e-14)
        assert np.all(r13 > 0) and r13[0] > 1e-3


def test_theorem1_residual_vanishes_only_at_equal_variances():
    c = np.linspace(-3, 5, 17)
    for p in [(-4, 1, -2, 1), (-1, 0.3, 0, 0.3), (0, 2, 0.1, 2)]:
        assert np.nanmax(np.abs(tl.theorem1_residual(c, **params(*p)))) < 1e-12
    for p in [(-4, 1, -2, 0.5), (-0.5, 0.6, 0, 0.5), (-4, 0.5, -2, 1), (-1, 1, 0, 1.5)]:
        r = tl.theorem1_residual(c, **params(*p))
        assert np.nanmax(np.abs(r)) > 1e-5 and np.all(r[np.isfinite(r)] > 0), p
    # continuity: the residual shrinks to zero as sigma1 -> sigma0
    sizes = [np.nanmax(np.abs(tl.theorem1_residual(c, **params(-0.5, 1.0, 0.0, 1.0 - h)))) for h in (0.3, 0.1, 0.03)]
    assert sizes[0] > sizes[1] > sizes[2]
    # Theorem 1 states no condition on the means: with mu0 > mu1 the N-P test is the other one-tailed test
    r = tl.theorem1_residual(c, **params(2.0, 1.0, 0.0, 1.0))
    assert np.allclose(r[np.isfinite(r)], 2 * np.sqrt(2) * 2.0, rtol=1e-10)


def test_where_the_gap_sits():
    """sigma0 > sigma1 (the paper's case): the extra N-P tail is far out and matters only at large FPR.  sigma0 <
    sigma1: the N-P region is an interval and the gap sits at small FPR (the binormal fit of the paper's Table 1,
    MNIST N = 10: a = 5.1154, b = sigma1 / sigma0 = 2.2736)."""
    paper_case = tl.theorem1_gap(np.array([1e-3, 1e-2, 0.5, 0.95]), **params(-4, 1, -2, 0.5))
    assert paper_case[0] < 1e-6 and paper_case[1] < 1e-5 and paper_case[3] > 1e-4
    assert np.all(np.diff(paper_case) > 0)
    mnist = params(0.0, 1.0, 5.1154, 2.2736)
    assert tl.theorem1_gap(1e-3, **mnist) > 0.8 * tl.analytic_tpr(1e-3, **mnist)  # N-P TPR almost twice Eq. (6)
    assert tl.theorem1_gap(0.5, **mnist) < 1e-10


# ---------------------------------------------------------------------------------------------------------------
# Section 2: the baseline attack
# ---------------------------------------------------------------------------------------------------------------
def test_baseline_reference_values():
    table = {0.001: [0.009955, 0.039230, 0.095208, 0.632305], 0.01: [0.095618, 0.331028, 0.633968, 0.999957],
             0.05: [0.401263, 0.871488, 0.994079, 1.000000]}
    for kappa, row in table.items():
        got = [tl.baseline_tpr(kappa, n) for n in (10, 40, 100, 1000)]
        assert np.max(np.abs(np.array(got) - row)) < 1e-6
    assert np.all(np.diff(tl.baseline_tpr(0.01, np.array([1, 10, 100, 1000]))) > 0)
    assert tl.baseline_tpr(np.array([0.0, 1.0]), 5).tolist() == [0.0, 1.0]


def test_baseline_attack_simulated():
    """Prior pi = U(0, 1), l(Z, Z0) = (Z - Z0)^2, Z0 = 0.5, tau = 0.01: kappa = 0.2.  The constant attack's
    TPR (own training set) and FPR (an independent one) both match 1 - (1 - kappa)^N within 5 SE."""
    rng = np.random.default_rng(2)
    trials, z0, tau, kappa = 40_000, 0.5, 0.01, 0.2
    for n in (1, 3, 10):
        own, other = rng.random((trials, n)), rng.random((trials, n))  # the weights never enter R0
        tpr = np.mean(((own - z0) ** 2).min(axis=1) <= tau)
        fpr = np.mean(((other - z0) ** 2).min(axis=1) <= tau)
        p = tl.baseline_tpr(kappa, n)
        se = np.sqrt(p * (1 - p) / trials)
        assert abs(tpr - p) < 5 * se and abs(fpr - p) < 5 * se


# ---------------------------------------------------------------------------------------------------------------
# vectorisation and input rules
# ---------------------------------------------------------------------------------------------------------------
def test_shapes():
    kw = params(-4, 1, -2, 0.5)
    x = np.full((2, 3), 0.1)
    for f in (tl.analytic_tpr, tl.neyman_pearson_tpr, tl.theorem1_gap):
        assert f(x, **kw).shape == (2, 3) and isinstance(f(0.1, **kw), float)
    assert tl.neyman_pearson_roc(np.zeros((2, 3)), **kw)[1].shape == (2, 3)
    assert isinstance(tl.baseline_tpr(0.1, 3), float)


@pytest.mark.parametrize("call, name", [
    (lambda: tl.analytic_tpr(1.5, **params(-4, 1, -2, 0.5)), "fpr"),
    (lambda: tl.analytic_tpr(0.1, **params(-4, 0, -2, 0.5)), "sigma0"),
    (lambda: tl.neyman_pearson_tpr(0.1, **params(-4, 1, -2, -0.5)), "sigma1"),
    (lambda: tl.neyman_pearson_tpr(0.1, **params(np.nan, 1, -2, 0.5)), "mu0"),
    (lambda: tl.neyman_pearson_tpr(0.1, **params(-4, 1, [-2, 1], 0.5)), "mu1"),
    (lambda: tl.neyman_pearson_roc(np.inf, **params(-4, 1, -2, 0.5)), "llr_threshold"),
    (lambda: tl.cumulative_roc("a", **params(-4, 1, -2, 0.5)), "threshold"),
    (lambda: tl.neyman_pearson_roots(0.0, **params(-4, 1, -2, 1)), "sigma1"),
    (lambda: tl.identity13_residual(1.0, delta_mu=-2, sigma0=0.5, sigma1=1.0), "sigma1"),
    (lambda: tl.identity13_residual(0.0, delta_mu=-2, sigma0=1.0, sigma1=0.5), "delta"),
    (lambda: tl.min_mse_logit(4.0), "min_mse"),
    (lambda: tl.baseline_tpr(1.2, 10), "kappa"),
    (lambda: tl.baseline_tpr(0.1, 0), "n"),
    (lambda: tl.baseline_tpr(0.1, 2.5), "n"),
])
def test_bad_input_names_the_parameter(call, name):
    with pytest.raises(ValueError, match=rf"^{name}=.*; allowed: "):
        call()


def test_gaussian_parameters_are_keyword_only():
    with pytest.raises(TypeError):
        tl.analytic_tpr(0.1, -4, 1, -2, 0.5)


def test_log_likelihood_ratio_is_eq11_of_the_gaussian_densities():
    from scipy import stats

    phi = np.linspace(-6.0, 1.0, 50)
    params = dict(mu0=-4.0, sigma0=1.0, mu1=-2.0, sigma1=0.5)
    expected = stats.norm.logpdf(phi, -4.0, 1.0) - stats.norm.logpdf(phi, -2.0, 0.5)
    np.testing.assert_allclose(tl.log_likelihood_ratio(phi, **params), expected, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="sigma0"):
        tl.log_likelihood_ratio(phi, mu0=0.0, sigma0=-1.0, mu1=0.0, sigma1=1.0)
