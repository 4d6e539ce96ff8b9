"""The reconstruction-risk calculator: its numbers are the chapters' closed forms; bad input is refused cleanly."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats

from compendium import cli, dp, risk
from compendium.bounds import hcr
from compendium.bounds import mean_to_extreme as mte
from compendium.bounds import rero
from compendium.bounds import ziller2024 as zb


def test_data_independent_numbers_are_the_first_chapters_closed_forms():
    q = risk.RiskQuery(noise_multiplier=0.5, clip=2.0, dim=3072, steps=4, eta_mse=0.2, eta_psnr=8.0, kappa=0.1,
                       data_range=1.0, target_probability=0.01)
    r = risk.assess(q)
    assert r["expected_mse_lower_bound"] == pytest.approx(2.0**2 * 0.5**2 / 4, rel=1e-12)
    assert r["psnr_upper_bound_db"] == pytest.approx(10 * np.log10(4 / (2.0**2 * 0.5**2)), rel=1e-12)
    assert r["psnr_upper_bound_corrected_db"] == pytest.approx(r["psnr_upper_bound_db"] + zb.psnr_jensen_gap(3072))
    assert r["ncc_upper_bound"] == pytest.approx((1 + 3072 * 0.25 / 4) ** -0.5, rel=1e-12)
    assert r["ncc_upper_bound_dimension_free"] == pytest.approx((1 + 0.25 / 4) ** -0.5, rel=1e-12)
    # P(MSE <= eta) for noise C sigma / sqrt(T) per coordinate: F_{chi2_N}(N eta T / (C sigma)^2)
    assert r["mse_success_probability"] == pytest.approx(stats.chi2(3072).cdf(3072 * 0.2 * 4 / 1.0), rel=1e-10)
    eta_hat = 10 ** (-8.0 / 10)
    assert r["psnr_success_probability"] == pytest.approx(stats.chi2(3072).cdf(3072 * eta_hat * 4 / 1.0), rel=1e-10)
    assert r["worst_case_success"] == pytest.approx(stats.norm.cdf(stats.norm.ppf(0.1) + 2 / 0.5), rel=1e-12)
    assert r["epsilon_rdp"] == pytest.approx(dp.epsilon(0.5, 4, 1e-5, accountant="rdp"))
    assert r["epsilon_exact"] == pytest.approx(dp.epsilon_exact(0.5, 4, 1e-5))
    assert r["epsilon_rdp"] >= r["epsilon_exact"] and abs(r["epsilon_prv"] - r["epsilon_exact"]) < 0.05
    for key in ("expected_mse_lower_bound", "mse_success_probability", "worst_case_success", "ncc_upper_bound"):
        assert r[f"{key}_source"].startswith("Ziller et al. 2024")


def test_table1_baseline_through_the_calculator():
    r = risk.assess(risk.RiskQuery(noise_multiplier=1.0, clip=1.0, dim=1000, kappa=0.1))
    assert (f"{100 * r['worst_case_success']:.1f}%", f"{r['expected_mse_lower_bound']:.1f}",
            f"{r['psnr_upper_bound_db']:.1f}", f"{100 * r['ncc_upper_bound']:.1f}%") == ("38.9%", "1.0", "0.0", "3.2%")


def test_with_the_smallest_norm_the_numbers_are_the_second_chapters():
    q = risk.RiskQuery(noise_multiplier=0.05, clip=10.0, dim=3072, min_norm=4.0, eta_mse=0.04, eta_psnr=14.0,
                       data_range=1.0, target_probability=0.05)
    r = risk.assess(q)
    assert r["expected_mse_lower_bound"] == pytest.approx(0.05**2 * 4.0**2, rel=1e-12)
    scale = 0.05**2 * 4.0**2 / 3072  # MSE = scale * chi2_N (Theorem 2)
    assert r["mse_success_probability"] == pytest.approx(stats.chi2(3072).cdf(0.04 / scale), rel=1e-10)
    assert r["psnr_success_probability"] == pytest.approx(stats.chi2(3072).cdf(10 ** (-1.4) / scale), rel=1e-10)
    assert r["psnr_upper_bound_db"] == pytest.approx(float(mte.psnr_mean(3072, sigma=0.05, norm=4.0, data_range=1.0)))
    assert r["mse_success_probability_source"].startswith("From Mean to Extreme")
    # The optimal attack (noise sigma m) is stronger than the first chapter's (noise sigma C) when m < C.
    r1 = risk.assess(risk.RiskQuery(noise_multiplier=0.05, clip=10.0, dim=3072, eta_mse=0.04))
    assert r["mse_success_probability"] > r1["mse_success_probability"]


@pytest.mark.parametrize("min_norm", [None, 3.0])
def test_minimal_noise_multiplier_is_the_inverse(min_norm):
    q = risk.RiskQuery(noise_multiplier=1.0, clip=1.5, dim=500, steps=3, eta_mse=0.05, target_probability=0.02,
                       min_norm=min_norm)
    sigma_min = risk.assess(q)["minimal_noise_multiplier"]
    at = risk.assess(risk.RiskQuery(noise_multiplier=sigma_min, clip=1.5, dim=500, steps=3, eta_mse=0.05,
                                    min_norm=min_norm))
    assert at["mse_success_probability"] == pytest.approx(0.02, rel=1e-8)
    above = risk.assess(risk.RiskQuery(noise_multiplier=1.01 * sigma_min, clip=1.5, dim=500, steps=3, eta_mse=0.05,
                                       min_norm=min_norm))
    assert above["mse_success_probability"] < 0.02


def test_prv_out_of_range_is_reported_not_raised():
    r = risk.assess(risk.RiskQuery(noise_multiplier=0.01, clip=1.0, dim=10))
    assert r["epsilon_prv"] is None and "PRV" in r["epsilon_prv_note"] and r["epsilon_rdp"] > 100


@pytest.mark.parametrize("kwargs, name", [
    (dict(noise_multiplier=0.0), "noise_multiplier"), (dict(noise_multiplier=-1.0), "noise_multiplier"),
    (dict(dim=0), "dim"), (dict(clip=0.0), "clip"), (dict(steps=0), "steps"), (dict(sample_rate=1.5), "sample_rate"),
    (dict(delta=1.0), "delta"), (dict(kappa=0.0), "kappa"), (dict(min_norm=-2.0), "min_norm"),
    (dict(eta_mse=0.1, target_probability=1.2), "target_probability"), (dict(target_probability=0.1), "eta_mse"),
])
def test_bad_queries_raise_value_errors_naming_the_parameter(kwargs, name):
    base = dict(noise_multiplier=1.0, clip=1.0, dim=100)
    with pytest.raises(ValueError, match=name):
        risk.RiskQuery(**{**base, **kwargs})


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "compendium", "risk", *args], capture_output=True, text=True)


def test_cli_json_is_flat_and_matches_assess():
    args = ["--noise-multiplier", "0.8", "--clip", "1", "--dim", "3072", "--steps", "10", "--sample-rate", "0.01",
            "--eta-mse", "0.05", "--eta-psnr", "13", "--kappa", "0.01", "--target-probability", "0.05", "--json"]
    done = _cli(*args)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert all(not isinstance(v, (dict, list)) for v in out.values())
    for key in ("epsilon_rdp", "epsilon_prv", "expected_mse_lower_bound", "psnr_upper_bound_db", "ncc_upper_bound",
                "ncc_upper_bound_dimension_free", "mse_success_probability", "psnr_success_probability",
                "worst_case_success", "minimal_noise_multiplier"):
        assert isinstance(out[key], float), key
    expected = risk.assess(risk.RiskQuery(noise_multiplier=0.8, clip=1.0, dim=3072, steps=10, sample_rate=0.01,
                                          eta_mse=0.05, eta_psnr=13.0, kappa=0.01, target_probability=0.05))
    for key, value in expected.items():
        assert out[key] == pytest.approx(value) if isinstance(value, float) else out[key] == value, key
    assert out["epsilon_exact"] is None  # subsampled: no exact GDP epsilon


@pytest.mark.parametrize("args, message", [
    (["--noise-multiplier", "0", "--clip", "1", "--dim", "10"], "noise_multiplier"),
    (["--noise-multiplier", "-2", "--clip", "1", "--dim", "10"], "noise_multiplier"),
    (["--noise-multiplier", "1", "--clip", "1", "--dim", "0"], "dim"),
    (["--noise-multiplier", "1", "--clip", "1", "--dim", "10", "--target-probability", "0.1"], "eta_mse"),
    (["--noise-multiplier", "1", "--clip", "1", "--dim", "10", "--eta-mse", "0.1", "--target-probability", "2"],
     "target_probability"),
    (["--noise-multiplier", "abc", "--clip", "1", "--dim", "10"], "noise-multiplier"),
    (["--clip", "1", "--dim", "10"], "noise-multiplier"),
])
def test_cli_bad_input_exits_2_with_a_message_and_no_traceback(args, message, capsys):
    try:  # in-process (the JSON test above runs the real entry point): argparse exits, main() returns
        code = cli.main(["risk", *args])
    except SystemExit as exit_:
        code = exit_.code
    err = capsys.readouterr().err
    assert code == 2 and message in err and "Traceback" not in err, err


def test_cli_human_report_lists_sources(capsys):
    assert cli.main(["risk", "--noise-multiplier", "1", "--clip", "1", "--dim", "1000", "--kappa", "0.1"]) == 0
    out = capsys.readouterr().out
    assert "worst_case_success" in out and "Ziller et al. 2024" in out and "0.389" in out


@pytest.mark.parametrize("eta, gamma, dim, min_norm, expected", [
    (0.1, 0.1, 1, 1.0, 2.51651), (0.1, 0.1, 10, 1.0, 0.453368), (0.01, 0.05, 3072, 20.0, 0.00510735),
    (0.01, 0.05, 150528, 200.0, 0.000501504),
])
def test_minimal_noise_multiplier_matches_reference_calibration_values(eta, gamma, dim, min_norm, expected):
    q = risk.RiskQuery(noise_multiplier=1.0, clip=1e6, dim=dim, eta_mse=eta, target_probability=gamma,
                       min_norm=min_norm)
    assert risk.assess(q)["minimal_noise_multiplier"] == pytest.approx(expected, rel=2e-6)


# The prior-aware worst case under Poisson subsampling (compendium.bounds.rero).

def test_subsampled_worst_case_is_exact_and_below_the_full_batch_value():
    q = risk.RiskQuery(noise_multiplier=1.0, clip=1.0, dim=100, steps=60, sample_rate=0.05, kappa=0.01)
    out = risk.assess(q)
    estimate, certified = rero.rero_bound_subsampled(0.01, noise_multiplier=1.0, sample_rate=0.05, steps=60)
    assert out["worst_case_success_subsampled"] == pytest.approx(float(certified), rel=1e-12)
    assert 0 <= out["worst_case_success_subsampled_numerical_error"] == pytest.approx(float(certified - estimate))
    assert out["worst_case_success_subsampled"] < 0.5 * out["worst_case_success"]
    assert out["worst_case_success_edgeworth"] == pytest.approx(out["worst_case_success_subsampled"], rel=0.05)
    assert "worst_case_success_subsampled_source" in out and 0 < out["glrt_success"] <= out["worst_case_success"]
    full = risk.assess(risk.RiskQuery(noise_multiplier=1.0, clip=1.0, dim=100, steps=60, kappa=0.01))
    assert "worst_case_success_subsampled" not in full  # q = 1: the full-batch value is the exact one


def test_minimal_noise_multiplier_subsampled_keeps_the_target():
    q = risk.RiskQuery(noise_multiplier=1.0, clip=1.0, dim=100, steps=50, sample_rate=0.05, kappa=0.01,
                       target_success=0.1)
    sigma = risk.assess(q)["minimal_noise_multiplier_subsampled"]
    assert rero.rero_bound_subsampled(0.01, noise_multiplier=sigma, sample_rate=0.05, steps=50)[1] <= 0.1
    full = risk.assess(risk.RiskQuery(noise_multiplier=1.0, clip=1.0, dim=100, steps=50, kappa=0.01,
                                      target_success=0.1))
    assert zb.worst_case_success(full["minimal_noise_multiplier_subsampled"], kappa=0.01, T=50) == pytest.approx(0.1)


@pytest.mark.parametrize("kwargs, message", [
    (dict(sample_rate=0.0), "sample_rate=0.0"), (dict(sample_rate=1.5), "sample_rate=1.5"),
    (dict(kappa=1.2), "kappa=1.2"), (dict(kappa=0.2, target_success=0.1), "target_success=0.1"),
    (dict(target_success=0.1), "give --kappa"),
])
def test_bad_subsampling_queries_raise_before_work(kwargs, message):
    with pytest.raises(ValueError, match=message):
        risk.RiskQuery(noise_multiplier=1.0, clip=1.0, dim=10, steps=40, **kwargs)


def test_cli_reports_the_subsampled_keys_in_json(capsys):
    args = ["risk", "--noise-multiplier", "1", "--clip", "1", "--dim", "10", "--steps", "40", "--sample-rate",
            "0.05", "--kappa", "0.01", "--json"]
    assert cli.main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert {"worst_case_success", "worst_case_success_subsampled", "worst_case_success_edgeworth",
            "glrt_success"} <= set(out)
    assert cli.main(args[:-1] + ["--target-success", "0.001"]) == 2  # below kappa: refused
    assert "target_success" in capsys.readouterr().err


# Inference-time dithering (the HCR chapter): X = A theta + N(0, sigma^2 I), T releases averaged.

def _gaussian_matrix(n: int, p: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, p)) / np.sqrt(n)


def test_dithering_closed_forms_from_a_matrix():
    A, sigma, T = _gaussian_matrix(40, 16, seed=1), 0.3, 4
    r = risk.assess_dithering(risk.DitheringQuery(feature_noise=sigma, matrix=A, releases=T))
    s_max = np.linalg.svd(A, compute_uv=False)[0]
    assert r["dithering_gain"] == pytest.approx(s_max, rel=1e-12)
    assert r["dithering_sd_floor"] == pytest.approx(sigma / (s_max * np.sqrt(T)), rel=1e-12)
    crb = sigma**2 * np.diag(np.linalg.inv(A.T @ A)) / T
    assert r["dithering_mse_lower_bound"] == pytest.approx(crb.mean(), rel=1e-10)
    assert r["dithering_sd_per_coordinate_min"] == pytest.approx(np.sqrt(crb.min()), rel=1e-10)
    assert r["dithering_sd_per_coordinate_median"] == pytest.approx(np.median(np.sqrt(crb)), rel=1e-10)
    assert r["dithering_sd_per_coordinate_max"] == pytest.approx(np.sqrt(crb.max()), rel=1e-10)
    assert r["dithering_unidentifiable_coordinates"] == 0 and r["input_matrix_shape"] == (40, 16)
    assert r["dithering_sd_floor"] < r["dithering_sd_per_coordinate_min"]  # the floor only needs the gain
    assert r["dithering_sd_floor_source"].startswith("Chaudhuri et al. 2024")


def test_dithering_from_the_gain_alone():
    r = risk.assess_dithering(risk.DitheringQuery(feature_noise=0.5, gain=2.0, releases=9))
    assert r["dithering_sd_floor"] == pytest.approx(0.5 / (2.0 * 3), rel=1e-12)
    assert r["dithering_mse_lower_bound"] == pytest.approx(0.5**2 / (2.0**2 * 9), rel=1e-12)
    assert not any(key.startswith("dithering_sd_per_coordinate") for key in r)
    assert r["input_gain"] == 2.0 and r["input_matrix_shape"] is None and r["input_releases"] == 9
    # the gain of a matrix gives the matrix's floor
    A = _gaussian_matrix(30, 10, seed=2)
    from_matrix = risk.assess_dithering(risk.DitheringQuery(feature_noise=0.5, matrix=A, releases=9))
    from_gain = risk.assess_dithering(risk.DitheringQuery(feature_noise=0.5, gain=np.linalg.norm(A, 2), releases=9))
    assert from_gain["dithering_sd_floor"] == pytest.approx(from_matrix["dithering_sd_floor"], rel=1e-12)
    assert from_gain["dithering_mse_lower_bound"] <= from_matrix["dithering_mse_lower_bound"]


def test_least_squares_attains_the_per_coordinate_bound():
    A, sigma, T, draws = _gaussian_matrix(40, 16, seed=3), 0.4, 3, 4000
    r = risk.assess_dithering(risk.DitheringQuery(feature_noise=sigma, matrix=A, releases=T))
    bound = hcr.cramer_rao_bound(A, sigma / np.sqrt(T))
    assert np.sqrt(bound.min()) == pytest.approx(r["dithering_sd_per_coordinate_min"], rel=1e-12)
    assert np.sqrt(bound.max()) == pytest.approx(r["dithering_sd_per_coordinate_max"], rel=1e-12)
    assert np.all(np.sqrt(bound) >= r["dithering_sd_floor"] * (1 - 1e-12))
    rng = np.random.default_rng(4)
    theta = rng.uniform(size=16)
    releases = A @ theta + sigma * rng.normal(size=(draws, T, 40))
    estimates = np.linalg.lstsq(A, releases.mean(axis=1).T, rcond=None)[0].T  # OLS: unbiased
    variance = estimates.var(axis=0, ddof=1)
    standard_error = bound * np.sqrt(2 / (draws - 1))
    assert np.all(np.abs(variance - bound) < 5 * standard_error), np.max(np.abs(variance - bound) / standard_error)
    assert np.all(np.abs(estimates.mean(axis=0) - theta) < 5 * np.sqrt(bound / draws))


def test_rank_deficient_matrix_has_unidentifiable_coordinates():
    wide = risk.assess_dithering(risk.DitheringQuery(feature_noise=0.3, matrix=_gaussian_matrix(8, 16, seed=5)))
    assert wide["dithering_mse_lower_bound"] == np.inf and wide["dithering_unidentifiable_coordinates"] == 16
    assert np.isfinite(wide["dithering_sd_floor"]) and wide["dithering_sd_per_coordinate_min"] == np.inf
    # three unseen coordinates (zero columns): only they have no unbiased estimator
    A = np.hstack([_gaussian_matrix(20, 7, seed=6), np.zeros((20, 3))])
    r = risk.assess_dithering(risk.DitheringQuery(feature_noise=0.3, matrix=A, releases=2))
    crb = 0.3**2 * np.diag(np.linalg.inv(A[:, :7].T @ A[:, :7])) / 2
    assert r["dithering_unidentifiable_coordinates"] == 3 and r["dithering_mse_lower_bound"] == np.inf
    assert r["dithering_sd_per_coordinate_min"] == pytest.approx(np.sqrt(crb.min()), rel=1e-10)
    assert r["dithering_sd_per_coordinate_max"] == np.inf
    report = risk.format_report(r)
    assert re.search(r"dithering_mse_lower_bound\s+inf\s", report)
    assert re.search(r"dithering_unidentifiable_coordinates\s+3\s", report) and "input_" not in report


@pytest.mark.parametrize("kwargs, name", [
    (dict(gain=1.0, matrix=np.eye(3)), "exactly one of gain"), (dict(), "exactly one of gain"),
    (dict(feature_noise=-0.1, gain=1.0), "feature_noise"), (dict(feature_noise=np.inf, gain=1.0), "feature_noise"),
    (dict(gain=0.0), "gain"), (dict(gain=np.nan), "gain"), (dict(gain=1.0, releases=0), "releases"),
    (dict(gain=1.0, releases=1.5), "releases"), (dict(matrix=np.array([[1.0, np.nan]])), "matrix"),
    (dict(matrix=np.ones(4)), "matrix"), (dict(matrix=np.ones((0, 3))), "matrix"), (dict(matrix="abc"), "matrix"),
])
def test_bad_dithering_queries_raise_value_errors_naming_the_parameter(kwargs, name):
    with pytest.raises(ValueError, match=name):
        risk.DitheringQuery(**{"feature_noise": 0.3, **kwargs})


def test_dithering_query_keeps_a_read_only_copy_of_the_matrix():
    A = np.eye(3)
    q = risk.DitheringQuery(feature_noise=1.0, matrix=A)
    A[0, 0] = 100.0
    assert q.matrix[0, 0] == 1.0 and not q.matrix.flags.writeable


def test_cli_dithering_json_matches_assess(tmp_path, capsys):
    A = _gaussian_matrix(12, 6, seed=7)
    np.save(tmp_path / "A.npy", A)
    assert cli.main(["dithering", "--feature-noise", "0.2", "--matrix", str(tmp_path / "A.npy"), "--releases", "5",
                     "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    expected = risk.assess_dithering(risk.DitheringQuery(feature_noise=0.2, matrix=A, releases=5))
    assert out.keys() == expected.keys() and out.pop("input_matrix_shape") == [12, 6]  # a tuple becomes a list
    for key, value in out.items():
        assert value == pytest.approx(expected[key], rel=1e-12) if isinstance(value, float) else value == expected[key]
    assert cli.main(["dithering", "--feature-noise", "0.2", "--feature-gain", "4", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["dithering_sd_floor"] == pytest.approx(0.05, rel=1e-12) and out["input_gain"] == 4.0


def test_cli_dithering_infinite_bounds_are_valid_json(tmp_path, capsys):
    np.save(tmp_path / "wide.npy", _gaussian_matrix(4, 8, seed=8))
    assert cli.main(["dithering", "--feature-noise", "1", "--matrix", str(tmp_path / "wide.npy"), "--json"]) == 0
    text = capsys.readouterr().out
    out = json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} is not JSON"))
    assert out["dithering_mse_lower_bound"] == "inf" and float(out["dithering_sd_per_coordinate_max"]) == np.inf
    assert cli.main(["dithering", "--feature-noise", "1", "--matrix", str(tmp_path / "wide.npy")]) == 0
    assert re.search(r"dithering_mse_lower_bound\s+inf\s", capsys.readouterr().out)


@pytest.mark.parametrize("args, message", [
    (["--feature-noise", "0", "--feature-gain", "1"], "feature_noise"),
    (["--feature-noise", "1", "--feature-gain", "-1"], "gain"),
    (["--feature-noise", "1", "--feature-gain", "1", "--releases", "0"], "releases"),
    (["--feature-noise", "1"], "--feature-gain"),
    (["--feature-noise", "1", "--feature-gain", "1", "--matrix", "A.npy"], "not allowed with"),
    (["--feature-noise", "1", "--matrix", "missing.npy"], "missing.npy"),
    (["--feature-noise", "1", "--matrix", "not-an-array.npy"], "not-an-array.npy"),
    (["--feature-noise", "1", "--matrix", "nan.npy"], "matrix must hold finite numbers"),
])
def test_cli_dithering_bad_input_exits_2_with_a_message_and_no_traceback(args, message, tmp_path, monkeypatch,
                                                                         capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "not-an-array.npy").write_text("1 2\n3 4\n")
    np.save(tmp_path / "nan.npy", np.array([[1.0, np.nan], [0.0, 1.0]]))
    try:
        code = cli.main(["dithering", *args])
    except SystemExit as exit_:
        code = exit_.code
    err = capsys.readouterr().err
    assert code == 2 and message in err and "Traceback" not in err, err


def test_edgeworth_comparison_tabulates_both_values():
    table = risk.edgeworth_comparison(sigmas=(1.0,), sample_rates=(0.1,), steps=(40,), kappas=(0.01, 0.1))
    assert list(table.kappa) == [0.01, 0.1] and (table["numerical error"] >= 0).all()
    exact = rero.rero_bound_subsampled(np.array([0.01, 0.1]), noise_multiplier=1.0, sample_rate=0.1, steps=40,
                                       eps_error=risk.EDGEWORTH_EPS_ERROR)[0]
    assert np.allclose(table.exact, exact, rtol=1e-12)
    assert np.allclose(table["relative error"], table["Edgeworth (authors' code)"] / table.exact - 1)


def test_subsampled_training_leads_and_full_batch_rows_are_labelled():
    """q < 1: the rows of the training that ran come first (epsilon, the subsampled worst case, the subsampled MSE
    rows); the full-batch rows follow, each labelled "if the target were in every step"; the inputs, delta among
    them, head the text and the JSON."""
    q = risk.RiskQuery(noise_multiplier=1.1, clip=1.0, dim=784, steps=200, sample_rate=0.04, kappa=0.01,
                       eta_mse=0.01)
    out = risk.assess(q)
    keys = [k for k in out if not k.endswith("_source")]
    assert keys[0].startswith("input_") and "input_delta" in keys
    first_full = min(keys.index(k) for k in risk.FULL_BATCH_KEYS if k in keys)
    for key in ("epsilon_prv", "worst_case_success_subsampled", "mse_success_probability_subsampled",
                "expected_mse_lower_bound_subsampled"):
        assert keys.index(key) < first_full, key
    assert all(out[f"{k}_source"].startswith(risk.IF_EVERY_STEP) for k in risk.FULL_BATCH_KEYS
               if f"{k}_source" in out)
    # the subsampled MSE rows lie between the no-release floor and the full-batch values
    assert (1 - 0.04) ** 200 <= out["mse_success_probability_subsampled"] <= out["mse_success_probability"]
    assert out["expected_mse_lower_bound_subsampled"] >= out["expected_mse_lower_bound"]
    text = risk.format_report(out).splitlines()
    assert text[0].startswith("inputs: ") and "delta=1e-05" in text[0] and "sample_rate=0.04" in text[0]
    assert "about 8 of the 200 steps" in text[1]
    assert text.index(f"-- {risk.IF_EVERY_STEP}: not the training that ran --") > 2


def test_worst_case_curve_and_plot(tmp_path, capsys):
    q = risk.RiskQuery(noise_multiplier=1.1, clip=1.0, dim=784, steps=200, sample_rate=0.04, kappa=0.01)
    curve = risk.worst_case_curve(q)
    assert 0.01 in curve["kappa"] and np.all(np.diff(curve["kappa"]) > 0)
    assert np.all(curve["kappa"] <= curve["estimate"] + 1e-9) and np.all(curve["estimate"] <= curve["certified"])
    assert np.all(curve["certified"] <= curve["full_batch"] + 1e-9)
    path = tmp_path / "risk.png"
    args = ["risk", "--noise-multiplier", "1.1", "--clip", "1", "--dim", "784", "--steps", "200",
            "--sample-rate", "0.04", "--kappa", "0.01", "--json", "--plot", str(path)]
    assert cli.main(args) == 0 and path.stat().st_size > 10_000
    captured = capsys.readouterr()
    assert json.loads(captured.out)["input_kappa"] == 0.01 and "plot written" in captured.err
    with pytest.raises(ValueError, match="kappas"):
        risk.worst_case_curve(q, kappas=[0.1, 1.5])
    code = cli.main(args[:-1] + [str(tmp_path / "missing" / "risk.png")])
    assert code == 2 and "does not exist" in capsys.readouterr().err
