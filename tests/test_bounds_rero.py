"""compendium.bounds.rero: the ReRo bound of the Poisson-subsampled Gaussian mechanism from its exact trade-off
function, against the closed form at q = 1, its monotonicity, a Monte Carlo likelihood-ratio test, the authors'
Edgeworth approximation and the GLRT bound."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from compendium.bounds import rero
from compendium.bounds import ziller2024 as zb

KAPPAS = np.array([1e-3, 0.01, 0.1, 0.5, 0.9])


@pytest.mark.parametrize("sigma, steps", [(1.0, 1), (2.0, 10), (0.7, 3)])
def test_full_batch_equals_the_gdp_closed_form(sigma, steps):
    estimate, certified = rero.rero_bound_subsampled(KAPPAS, noise_multiplier=sigma, sample_rate=1.0, steps=steps)
    closed = zb.worst_case_success(sigma, kappa=KAPPAS, T=steps)
    assert np.max(np.abs(estimate - closed)) < 1e-6
    # the certified envelope is loose by about eps_error (default 0.01) relative, never below the exact value
    assert np.all(certified >= closed - 1e-12) and np.max(certified / closed - 1) < 0.011


def test_subsampling_never_raises_the_bound_and_it_is_monotone():
    base = dict(noise_multiplier=1.0, sample_rate=0.05, steps=50)
    estimate, certified = rero.rero_bound_subsampled(KAPPAS, **base)
    assert np.all(estimate <= certified + 1e-12)
    assert np.all(certified <= zb.worst_case_success(1.0, kappa=KAPPAS, T=50) + 1e-9)
    assert np.all(estimate >= KAPPAS - 1e-9)  # never below the prior's own success
    for name, values in (("noise_multiplier", (0.6, 1.0, 2.0)), ("steps", (10, 50, 200)),
                         ("sample_rate", (0.01, 0.05, 0.3))):
        bounds = [rero.rero_bound_subsampled(0.01, **(base | {name: v}))[0] for v in values]
        steps = np.diff(bounds)
        assert np.all(steps < 0) if name == "noise_multiplier" else np.all(steps > 0), (name, bounds)


def test_monte_carlo_likelihood_ratio_test_does_not_beat_it():
    """The most powerful test between "absent" (N(0, s^2) each step) and "present" (the target sampled with
    probability q each step) at type-I error kappa, simulated: its power stays below the bound and comes close."""
    sigma, q, steps, kappa = 0.8, 0.3, 5, 0.05
    power, se = rero.likelihood_ratio_power(noise_multiplier=sigma, sample_rate=q, steps=steps, kappa=kappa,
                                            draws=200_000, rng=np.random.default_rng(0))
    estimate, certified = rero.rero_bound_subsampled(kappa, noise_multiplier=sigma, sample_rate=q, steps=steps)
    assert power <= certified + 5 * se
    assert power >= estimate - 0.02  # the bound is (nearly) attained: not trivially loose


def test_edgeworth_approximation_is_close_at_many_steps_and_refuses_few():
    estimate, _ = rero.rero_bound_subsampled(0.01, noise_multiplier=1.0, sample_rate=0.01, steps=1000)
    edgeworth = rero.rero_bound_edgeworth(0.01, noise_multiplier=1.0, sample_rate=0.01, steps=1000)
    assert abs(edgeworth - estimate) < 0.01 * estimate
    with pytest.raises(ValueError, match="steps=10; allowed: an integer >= 30"):
        rero.rero_bound_edgeworth(0.01, noise_multiplier=1.0, sample_rate=0.01, steps=10)


def test_glrt_is_the_two_sided_test_in_one_dimension_and_weaker_than_neyman_pearson():
    kappa, mu = np.array([0.01, 0.1, 0.3]), 2.0
    z = stats.norm.isf(kappa / 2)
    two_sided = stats.norm.sf(z - mu) + stats.norm.cdf(-z - mu)
    glrt_1 = rero.rero_bound_glrt(kappa, dim=1, sensitivity=1.0, noise_sd=1 / mu)
    assert np.allclose(np.maximum(glrt_1, two_sided), glrt_1) and np.allclose(glrt_1[:2], two_sided[:2], rtol=1e-8)
    neyman_pearson = 1 - rero.gaussian_tradeoff(kappa, mu=mu)
    for d in (1, 10, 1000):
        assert np.all(rero.rero_bound_glrt(kappa, dim=d, sensitivity=1.0, noise_sd=1 / mu) <= neyman_pearson)
    assert rero.rero_bound_glrt(0.01, dim=1000, sensitivity=1.0, noise_sd=0.5) < 0.02


def test_minimal_noise_multiplier_is_the_smallest_that_keeps_the_target():
    setting = dict(kappa=0.01, sample_rate=0.02, steps=100)
    sigma = rero.minimal_noise_multiplier_subsampled(0.05, **setting, rtol=1e-3)
    bound = lambda s: rero.rero_bound_subsampled(0.01, noise_multiplier=s, sample_rate=0.02, steps=100)[1]  # noqa
    assert bound(sigma) <= 0.05 < bound(sigma * 0.99)


def test_minimal_noise_multiplier_at_the_ends_of_its_range():
    """A target the noiseless run already meets needs no noise; one the accountant cannot certify is refused after
    a bounded search instead of doubling sigma forever."""
    # q = 0.001, T = 10: the target is in no batch with probability 0.99, so success is at most 1 - 0.99 * 0.99
    noiseless = 1 - (1 - 0.001) ** 10 * (1 - 0.01)
    assert rero.minimal_noise_multiplier_subsampled(noiseless + 1e-3, kappa=0.01, sample_rate=0.001, steps=10) == 0.0
    with pytest.raises(ValueError, match="below what the accountant certifies"):
        rero.minimal_noise_multiplier_subsampled(0.01 + 1e-9, kappa=0.01, sample_rate=1.0, steps=1)


@pytest.mark.parametrize("call, match", [
    (lambda: rero.rero_bound_subsampled(0.1, noise_multiplier=1.0, sample_rate=0.0, steps=10), "sample_rate=0.0"),
    (lambda: rero.rero_bound_subsampled(0.1, noise_multiplier=1.0, sample_rate=1.5, steps=10), "sample_rate=1.5"),
    (lambda: rero.rero_bound_subsampled(1.5, noise_multiplier=1.0, sample_rate=0.1, steps=10), "kappa=1.5"),
    (lambda: rero.rero_bound_subsampled(0.1, noise_multiplier=-1.0, sample_rate=0.1, steps=10), "noise_multiplier"),
    (lambda: rero.minimal_noise_multiplier_subsampled(0.01, kappa=0.05, sample_rate=0.1, steps=10),
     "target=0.01; allowed: a success probability above kappa"),
])
def test_bad_input_is_refused_before_work(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_sum_test_power_is_the_gdp_bound_at_full_batch_and_below_the_exact_value():
    kappa = np.array([0.001, 0.01, 0.1])
    full = rero.sum_test_power(kappa, noise_multiplier=2.0, sample_rate=1.0, steps=10, adjacency="add")
    assert np.allclose(full, zb.worst_case_success(2.0, kappa=kappa, T=10), rtol=1e-9)
    for adjacency in rero.ADJACENCIES:
        power = rero.sum_test_power(kappa, noise_multiplier=1.0, sample_rate=0.05, steps=60, adjacency=adjacency)
        estimate, _ = rero.rero_bound_subsampled(kappa, noise_multiplier=1.0, sample_rate=0.05, steps=60,
                                                 adjacency=adjacency)
        assert np.all(kappa <= power + 1e-12) and np.all(power <= estimate + 1e-9), adjacency


def test_saturated_bound_is_answered_from_the_sum_test():
    """q = 0.2, T = 3000, sigma = 0.77: the bound is 1 to nine digits; no privacy-loss grid is built."""
    estimate, certified = rero.rero_bound_subsampled(0.01, noise_multiplier=0.77, sample_rate=0.2, steps=3000)
    assert certified == 1.0 and 1 - rero.SATURATION_GAP <= estimate <= 1.0


def test_adjacency_takes_one_direction_or_the_smaller_trade_off():
    setting = dict(noise_multiplier=0.8, sample_rate=0.1, steps=30)
    add, remove, both = (rero.rero_bound_subsampled(KAPPAS, **setting, adjacency=a)
                         for a in ("add", "remove", "add_or_remove"))
    assert np.allclose(both[0], np.maximum(add[0], remove[0]))
    assert np.all(both[1] >= both[0]) and np.array_equal(add[1], both[1])  # one certified envelope for all three
    with pytest.raises(ValueError, match="adjacency='both'"):
        rero.rero_bound_subsampled(0.01, **setting, adjacency="both")
