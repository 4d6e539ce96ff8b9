"""compendium.attacks.prior_aware: Hayes et al. (2023)'s prior-aware attack against opacus DP-SGD training stays
below the calculator's worst case ``worst_case_success_subsampled`` (within its standard error) and comes close."""
from __future__ import annotations

import pytest

from compendium.attacks import prior_aware
from compendium.bounds import rero


@pytest.mark.parametrize("sigma, q, steps, kappa", [(1.0, 0.1, 100, 0.1), (0.8, 0.2, 50, 0.1)])
def test_attack_meets_the_bound_but_does_not_beat_it(sigma, q, steps, kappa):
    result = prior_aware.run_prior_aware_attack(noise_multiplier=sigma, sample_rate=q, steps=steps, kappa=kappa,
                                                trials=400, seed=0)
    estimate, certified = rero.rero_bound_subsampled(kappa, noise_multiplier=sigma, sample_rate=q, steps=steps)
    assert result["success"] <= float(certified) + 3 * result["se"]
    assert result["success"] >= float(estimate) - 0.12  # m = 10 candidates: close to the binary test's bound
    assert result["success"] > 2 * kappa  # far above the prior alone


def test_attack_is_deterministic_and_refuses_bad_input():
    run = dict(noise_multiplier=1.0, sample_rate=0.2, steps=5, kappa=0.25, trials=20, seed=3)
    assert prior_aware.run_prior_aware_attack(**run) == prior_aware.run_prior_aware_attack(**run)
    with pytest.raises(ValueError, match="kappa=0.3; allowed: 1 / m"):
        prior_aware.run_prior_aware_attack(**(run | {"kappa": 0.3}))
    with pytest.raises(ValueError, match="sample_rate"):
        prior_aware.run_prior_aware_attack(**(run | {"sample_rate": 0.0}))
