"""Unit tests of compendium.dp: the exact epsilon of the composed Gaussian mechanism, the opacus accountants around it,
parameter checks and the DP-SGD optimiser factory."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from opacus.optimizers import DPOptimizer
from scipy import stats

from compendium import dp


def _delta_gdp(eps: float, mu: float) -> float:
    """Privacy profile of mu-GDP (Dong et al. 2022, Cor. 2.13), written independently of the module."""
    return stats.norm.cdf(-eps / mu + mu / 2) - np.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2)


@pytest.mark.parametrize("sigma, steps, delta", [(0.3, 1, 1e-5), (1.0, 1, 1e-5), (3.0, 1, 1e-5), (10.0, 1, 1e-5),
                                                 (1.0, 10, 1e-5), (2.0, 100, 1e-6), (0.7, 1, 1e-3)])
def test_epsilon_exact_solves_the_privacy_profile(sigma, steps, delta):
    eps = dp.epsilon_exact(sigma, steps, delta)
    assert eps > 0
    assert abs(_delta_gdp(eps, np.sqrt(steps) / sigma) - delta) < 1e-9
    # a slightly smaller epsilon would not be enough
    assert _delta_gdp(0.99 * eps, np.sqrt(steps) / sigma) > delta


def test_epsilon_exact_reference_value():
    # sigma = 1, one release, delta = 1e-5 (1-GDP): epsilon = 4.3772 (a well-known value)
    assert dp.epsilon_exact(1.0) == pytest.approx(4.37718, abs=1e-4)


def test_epsilon_exact_zero_when_delta_already_met():
    # delta(0) = 2 Phi(mu/2) - 1 ~ mu / sqrt(2 pi) < 1e-5 for sigma = 1e6
    assert dp.epsilon_exact(1e6) == 0.0
    assert dp.epsilon_exact(1e4) > 0.0


def test_epsilon_exact_monotone_in_sigma_steps_delta():
    sig = np.logspace(-1.5, 2, 15)
    eps = np.array([dp.epsilon_exact(s) for s in sig])
    assert np.all(np.diff(eps) < 0)
    assert dp.epsilon_exact(1.0, 10) > dp.epsilon_exact(1.0, 1)
    assert dp.epsilon_exact(1.0, delta=1e-3) < dp.epsilon_exact(1.0, delta=1e-5)


@pytest.mark.parametrize("sigma, T", [(0.5, 4), (1.0, 10), (2.0, 100), (3.0, 1000)])
def test_epsilon_exact_depends_only_on_sigma_over_sqrt_steps(sigma, T):
    assert dp.epsilon_exact(sigma * np.sqrt(T), T) == pytest.approx(dp.epsilon_exact(sigma, 1), rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("sigma", [0.3, 1.0, 3.0, 10.0])
def test_rdp_is_an_upper_bound_on_the_exact_epsilon(sigma):
    exact = dp.epsilon_exact(sigma)
    rdp = dp.epsilon(sigma, accountant="rdp")
    assert rdp >= exact
    assert rdp < 1.5 * exact + 0.5  # and not absurdly loose


@pytest.mark.parametrize("sigma, steps", [(0.3, 1), (1.0, 1), (3.0, 1), (10.0, 1), (2.0, 10)])
def test_prv_close_to_exact(sigma, steps):
    exact = dp.epsilon_exact(sigma, steps)
    prv = dp.epsilon(sigma, steps, accountant="prv")
    assert abs(prv - exact) <= 0.02 + 1e-3 * exact


def test_rdp_with_steps_composes():
    assert dp.epsilon(1.0, 10, accountant="rdp") > dp.epsilon(1.0, 1, accountant="rdp")
    assert dp.epsilon(1.0, 10, accountant="rdp") >= dp.epsilon_exact(1.0, 10)


def test_prv_out_of_range_raises():
    s = dp.PRV_MIN_EFFECTIVE_SIGMA
    with pytest.raises(ValueError, match="PRV"):
        dp.epsilon(0.5 * s, accountant="prv")
    with pytest.raises(ValueError, match="PRV"):  # the effective sigma counts: sigma / sqrt(steps)
        dp.epsilon(2 * s, steps=16, accountant="prv")
    # the RDP accountant has no such limit
    assert dp.epsilon(0.5 * s, accountant="rdp") > dp.epsilon_exact(0.5 * s)


def test_rdp_small_sigma_no_alpha_range_warning():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        eps = dp.epsilon(0.01, accountant="rdp")
    assert dp.epsilon_exact(0.01) <= eps < 5500


def test_unknown_accountant_raises():
    with pytest.raises(ValueError, match="accountant.*'rdp', 'prv'"):
        dp.epsilon(1.0, accountant="gdp")


@pytest.mark.parametrize("kwargs, name", [
    (dict(noise_multiplier=0.0), "noise_multiplier"), (dict(noise_multiplier=-1.0), "noise_multiplier"),
    (dict(noise_multiplier=float("inf")), "noise_multiplier"), (dict(noise_multiplier=1.0, steps=0), "steps"),
    (dict(noise_multiplier=1.0, steps=2.5), "steps"), (dict(noise_multiplier=1.0, delta=0.0), "delta"),
    (dict(noise_multiplier=1.0, delta=1.0), "delta"), (dict(noise_multiplier=1.0, sample_rate=0.0), "sample_rate"),
    (dict(noise_multiplier=1.0, sample_rate=1.5), "sample_rate"),
])
def test_epsilon_bad_arguments(kwargs, name):
    with pytest.raises(ValueError, match=name):
        dp.epsilon(**kwargs)
    if "sample_rate" not in kwargs:
        with pytest.raises(ValueError, match=name):
            dp.epsilon_exact(**kwargs)


def test_epsilon_report_rows():
    rows = dp.epsilon_report([0.01, 1.0], steps=1)
    assert [r["sigma"] for r in rows] == [0.01, 1.0]
    assert rows[0]["eps_prv"] is None  # below PRV_MIN_EFFECTIVE_SIGMA
    assert rows[1]["eps_exact"] == pytest.approx(dp.epsilon_exact(1.0), rel=1e-12)
    assert rows[1]["eps_rdp"] >= rows[1]["eps_exact"]
    assert abs(rows[1]["eps_prv"] - rows[1]["eps_exact"]) <= 0.02 + 1e-3 * rows[1]["eps_exact"]


@pytest.mark.parametrize("C, sigma, name", [
    (1.0, -0.1, "noise_multiplier"), (1.0, float("nan"), "noise_multiplier"), (1.0, float("inf"), "noise_multiplier"),
    (0.0, 1.0, "max_grad_norm"), (-1.0, 1.0, "max_grad_norm"), (float("inf"), 1.0, "max_grad_norm"),
    (float("nan"), 1.0, "max_grad_norm"),
])
def test_check_dp_parameters_rejects(C, sigma, name):
    with pytest.raises(ValueError, match=name):
        dp.check_dp_parameters(C, sigma)


def test_check_dp_parameters_accepts_zero_noise():
    dp.check_dp_parameters(1e-3, 0.0)  # no exception: sigma = 0 switches the noise off
    dp.check_dp_parameters(1e6, 100.0)


def test_make_dp_sgd_settings():
    model = torch.nn.Linear(5, 1, bias=False)
    gsm, opt = dp.make_dp_sgd(model, max_grad_norm=0.7, noise_multiplier=1.3, lr=0.5)
    assert isinstance(opt, DPOptimizer)
    assert opt.noise_multiplier == 1.3 and opt.max_grad_norm == 0.7
    assert opt.expected_batch_size == 1
    assert opt.param_groups[0]["lr"] == 0.5
    assert list(gsm.parameters())[0] is model.weight
    with pytest.raises(ValueError, match="max_grad_norm"):
        dp.make_dp_sgd(torch.nn.Linear(5, 1), max_grad_norm=0.0, noise_multiplier=1.0)


def test_make_dp_sgd_step_clips_without_noise():
    """One step with sigma = 0 and a batch of one: the update is -lr * clipped gradient."""
    model = torch.nn.Linear(4, 1, bias=False)
    torch.nn.init.zeros_(model.weight)
    gsm, opt = dp.make_dp_sgd(model, max_grad_norm=1.0, noise_multiplier=0.0, lr=1.0)
    x = torch.tensor([[3.0, 0.0, 4.0, 0.0]])  # gradient = x, norm 5
    opt.zero_grad()
    gsm(x).sum().backward()
    opt.step()
    assert torch.allclose(-model.weight.detach()[0], x[0] / (5 + 1e-6), atol=1e-7)


def test_make_dp_sgd_generator_reproducible():
    def run(seed):
        model = torch.nn.Linear(6, 1, bias=False)
        torch.nn.init.zeros_(model.weight)
        gsm, opt = dp.make_dp_sgd(model, 1.0, 2.0, generator=torch.Generator().manual_seed(seed))
        opt.zero_grad()
        gsm(torch.ones(1, 6)).sum().backward()
        opt.step()
        return model.weight.detach().clone()

    assert torch.equal(run(0), run(0))
    assert not torch.equal(run(0), run(1))


def test_prv_epsilon_at_a_common_subsampled_setting():
    """q = 0.004, T = 2000, sigma = 1.1: sigma / sqrt(T) = 0.025, yet the subsampled composition is far from the
    accountant's limit (1 / mu = 4.9); its epsilon is below RDP's and close to it."""
    assert dp.prv_in_range(1.1, 2000, 0.004) and not dp.prv_in_range(1.1, 2000)
    prv = dp.epsilon(1.1, 2000, 1e-5, 0.004, accountant="prv")
    rdp = dp.epsilon(1.1, 2000, 1e-5, 0.004, accountant="rdp")
    assert 0.6 * rdp < prv < rdp
