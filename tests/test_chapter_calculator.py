"""The calculator page's pipelines (compendium.chapters.calculator): the bound curves come from risk.assess, and the
simulated least-squares attacks attain the Cramér-Rao bound of the dithering calculator."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest

from compendium import plan, risk
from compendium.bounds import hcr, rero
from compendium.chapters import calculator as chapter


def test_bound_curves_are_the_calculators_numbers():
    sigmas = np.geomspace(1e-2, 1.0, 5)
    curves, with_m = chapter.bound_curves(sigmas, dim=3072, min_norm=20.0)
    assert len(curves) == len(with_m) == 5
    for i, sigma in enumerate(sigmas):  # the calculator's own numbers, key by key
        one = risk.assess(risk.RiskQuery(noise_multiplier=sigma, clip=1.0, dim=3072, eta_mse=0.01, kappa=1e-3))
        m = risk.assess(risk.RiskQuery(noise_multiplier=sigma, clip=1.0, dim=3072, eta_mse=0.01, min_norm=20.0))
        for key in curves.columns.drop("noise_multiplier"):
            assert curves[key].iloc[i] == pytest.approx(one[key], rel=1e-12, abs=1e-300), key
        assert with_m.mse_success_probability.iloc[i] == pytest.approx(m["mse_success_probability"], rel=1e-12)
        assert with_m.epsilon_exact.iloc[i] == one["epsilon_exact"]
    assert np.all(np.diff(curves.epsilon_exact) < 0)  # more noise, smaller epsilon
    fig = chapter.plot_bound_curves(curves, with_m)
    assert len(fig.axes) == 3  # two panels and the PSNR twin axis
    plt.close(fig)


def test_least_squares_attacks_attain_the_cramer_rao_bound():
    rng = np.random.default_rng(1)
    A = rng.normal(size=(32, 16)) / np.sqrt(32)
    attacks = chapter.least_squares_attacks(A, 0.3, 2, 5_000, rng)
    assert attacks.estimates.shape == (5_000, 16) and attacks.theta.shape == (16,)
    assert np.allclose(attacks.crb, hcr.cramer_rao_bound(A, 0.3 / np.sqrt(2)))
    assert np.all(np.abs(attacks.z) < 5)
    assert attacks.dct_sd.shape == (16,)


def test_paper_pipeline_runs_at_paper_shapes(paper_shape_notebooks):
    """The page at paper scale with the ends of its grids: it runs to the end and pastes the grid that ran."""
    import nbformat

    executed = paper_shape_notebooks["calculator"]  # run by the suite's book work (tests/test_paper_shapes.py)
    if isinstance(executed, Exception):
        raise executed
    glued = {o["metadata"]["scrapbook"]["name"]: next(v for k, v in o["data"].items() if k.endswith("text/plain"))
             for c in nbformat.read(executed, as_version=4).cells for o in c.get("outputs", [])
             if "scrapbook" in o.get("metadata", {})}
    assert float(glued["calc_curve_q_min"]) == chapter.SCALES["paper"]["curve_sample_rates"][-1]
    assert int(glued["calc_curve_points"]) == 2


def test_paper_shape_cuts_the_paper_grids_to_their_ends(tmp_path):
    params = chapter.paper_shape(tmp_path)
    assert params["scale"] == "paper" and not any(tmp_path.iterdir())
    cfg = chapter.settings(**params)
    assert cfg.edgeworth_steps == (30,) and cfg.curve_sample_rates == (1.0, 0.001)
    assert len(cfg.attack_settings) == 2 and cfg.attack_trials == 50


def test_attack_against_bound_stays_below_the_bound_on_a_tiny_setting():
    settings = [(1.5, 0.5, 5, 0.25), (2.0, 1.0, 3, 0.5)]
    table = chapter.attack_against_bound(settings, trials=200, seed=0)
    assert list(table.columns) == ["σ", "q", "T", "κ", "trials", "attack success", "SE", "bound (estimate)",
                                   "bound (certified)", "gap [SE]"]
    assert len(table) == 2 and (table.trials == 200).all()
    assert (table["attack success"] <= table["bound (certified)"] + 3 * table.SE).all()
    assert (table["bound (estimate)"] <= table["bound (certified)"] + 1e-12).all()
    assert np.allclose(table["gap [SE]"], (table["bound (certified)"] - table["attack success"]) / table.SE)


@pytest.mark.parametrize("settings, trials", [
    ([(1.0, 0.1, 10, 0.3)], 100),        # kappa not 1 / m
    ([(0.0, 0.1, 10, 0.5)], 100),        # sigma 0
    ([(1.0, 1.5, 10, 0.5)], 100),        # q above 1
    ([(1.0, 0.1, 10)], 100),             # three numbers
    ([], 100),                           # no setting
    ([(1.0, 0.1, 10, 0.5)], 5),          # too few trials
])
def test_attack_against_bound_refuses_bad_input(settings, trials):
    with pytest.raises(ValueError):
        chapter.attack_against_bound(settings, trials=trials)


def test_adjacency_bounds_default_is_the_larger_direction():
    out = chapter.adjacency_bounds(kappa=0.01, noise_multiplier=1.0, sample_rate=0.1, steps=10)
    assert set(out) == set(rero.ADJACENCIES)
    assert out["add_or_remove"] == max(out["add"], out["remove"])


def test_same_epsilon_worst_cases_calibrates_each_pair():
    table = chapter.same_epsilon_worst_cases(epsilon=2.0, pairs=[(0.1, 10), (1.0, 5)], kappa=0.01)
    assert table.shape[0] == 2 and np.allclose(table["epsilon (RDP)"], 2.0, atol=0.01)
    assert (table["worst case (certified)"] > 0.01).all()
    with pytest.raises(ValueError):
        chapter.same_epsilon_worst_cases(epsilon=-1.0, pairs=[(0.1, 10)], kappa=0.01)


def test_attack_settings_are_validated_at_every_scale():
    for scale in chapter.SCALES:
        cfg = chapter.settings(scale, device="cpu")
        assert all(len(s) == 4 for s in cfg.attack_settings)
    with pytest.raises(ValueError):
        chapter.settings("ci", device="cpu", attack_settings=[[1.0, 0.1, 10, 0.3]])
    cfg = chapter.settings("ci", device="cpu", attack_settings=[[1.0, 0.1, 10, 0.5]])
    assert cfg.attack_settings == ((1.0, 0.1, 10, 0.5),)


def test_the_plan_costs_the_attack_and_the_edgeworth_grid_from_the_book_run():
    """``python -m compendium plan calculator``: the attack against DP-SGD is a step, its count follows the settings,
    and at book scale the two steps add up to the measured SECONDS, the attack's share to ATTACK_SECONDS."""
    found = plan.plan("calculator", "book", device="cpu")
    steps = {s.name: s for s in found.steps}
    attack = steps["prior-aware attack against DP-SGD"]
    cfg = chapter.settings("book", device="cpu")
    n = cfg.attack_trials
    assert attack.count == sum(t * (q * n + 1) * n * round(1 / k) for _, q, t, k in cfg.attack_settings)
    assert attack.on_cpu and attack.hours * 3600 == pytest.approx(chapter.ATTACK_SECONDS["book"])
    assert found.hours * 3600 == pytest.approx(chapter.SECONDS["book"])
    more = plan.plan("calculator", "book", device="cpu", attack_trials=2 * n)
    assert steps["exact bound against Edgeworth"] == more.steps[0]
    assert 3.9 < more.steps[1].count / attack.count < 4.1  # the model grows with the trials, and so does each batch
    assert more.ram.bytes > found.ram.bytes


def test_quoted_numbers_are_the_exercises_checked_answers():
    out = chapter.quoted_numbers(min_norm=4.0)
    assert set(out) == {"calc_exercise1_sigma", "calc_exercise1_growth", "calc_exercise2_subsampled",
                        "calc_exercise2_full_batch"}
    assert 1 < out["calc_exercise1_growth"] < np.sqrt(3)  # Poisson sampling: less than the full-batch sqrt(3)
    assert out["calc_exercise2_subsampled"] < out["calc_exercise2_full_batch"]
