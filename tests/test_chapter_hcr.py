"""The HCR chapter's pipelines (compendium.chapters.hcr): the theory checks against their closed forms, and the
experiment pipeline end to end on tiny settings (one training epoch, two images per task, one restart), checking the
structure of every table and the consistency of the results rather than the paper's numbers, which the notebook
asserts at ``ci`` scale."""
from __future__ import annotations

import nbformat
import numpy as np
import pytest
import torch

from compendium.bounds import hcr
from compendium.chapters import hcr as chapter


def test_normalised_and_histogram_mode():
    assert chapter.normalised(torch.tensor(1.0), 0.5, 0.25).item() == pytest.approx(2.0)
    values = np.r_[np.zeros(10), np.linspace(0.0, 1.0, 5)]
    assert chapter.histogram_mode(values, bins=4) == pytest.approx(0.125)  # the fullest of 4 bins over [0, 1]


def test_chi2_check_agrees_with_the_closed_form():
    check = chapter.chi2_check(0, draws=20_000)
    closed, quadrature = check.table["closed form (12)"].to_numpy(), check.table["quadrature"].to_numpy()
    np.testing.assert_allclose(closed[:3], np.expm1(np.array([0.1, 1.0, 2.0]) ** 2), rtol=1e-12)
    np.testing.assert_allclose(quadrature, closed, rtol=1e-10)
    assert check.closed == pytest.approx(np.expm1(0.30 / 0.49), rel=1e-12)
    assert abs(check.mc_mean - check.closed) < 5 * check.mc_se


def test_cumulative_sum_check_closed_forms():
    lin = chapter.cumulative_sum_check(0, draws=4000, directions=200)
    np.testing.assert_allclose(lin.crb, np.r_[1.0, np.full(63, 2.0)], rtol=1e-10)
    np.testing.assert_allclose(lin.eq18, 1 / (64 - np.arange(64)), rtol=1e-12)
    for t, value in lin.along.items():
        assert value == pytest.approx(4 * t**2 / np.expm1(2 * t**2), rel=1e-10)  # CRB x / (e^x - 1), x = 2 t^2
    np.testing.assert_allclose(lin.table["HCR along (AᵀA)⁻¹e₁₀"], lin.table["CRB·x/(eˣ−1)"], rtol=1e-10)
    assert lin.random_ratio <= 1.0 and lin.ols.shape == (4000, 64)
    assert np.all(np.abs(lin.ols_var / lin.crb - 1) < 5 * np.sqrt(2 / 3999))  # OLS attains the CRB


def test_smooth_network_limit_approaches_the_crb():
    smooth = chapter.smooth_network_limit(0, taus=(1.0, 0.1, 0.001))
    ratio = smooth.table["HCR / CRB"].to_numpy()
    assert np.all(np.diff(ratio) > 0) and abs(ratio[-1] - 1) < 1e-3 and ratio[-1] <= 1 + 1e-9
    assert smooth.eq18 < smooth.crb


def test_algorithm1_linear_check():
    alg = chapter.algorithm1_linear_check(chapter.cumulative_sum_check(0, draws=100, directions=10), 0)
    assert alg.rel_err.max() < 1e-8 and alg.stationary < 1e-8
    assert alg.efficiency.shape == (8, 8) and np.all(alg.efficiency <= 1)
    assert abs(np.median(alg.efficiency) - alg.max25 / 8) < 0.03
    assert alg.sv_min == pytest.approx(0.50014830906, rel=1e-9)  # 1 / (2 sin(pi / 258)) for the 64 x 64 cumsum


@pytest.fixture(scope="module")
def tiny():
    """The experiment pipeline on tiny ``ci`` settings (LSQR capped at 30 iterations: the tests check shapes and
    bookkeeping, not converged bounds), once for the tests below."""
    cfg = chapter.settings("ci", "cpu", 0, gray_examples=2, gray_cnn_examples=2, colour_examples=2, num_restarts=1,
                           gray_epochs=1, colour_epochs=1, inversion_steps=5, decoder_epochs=1,
                           power_iterations=(1, 2), lsqr_iter_lim=30)
    datasets = chapter.load_data(cfg)
    tasks = chapter.build_tasks(cfg, datasets)
    accuracy = chapter.train_tasks(tasks, cfg, torch.device("cpu"))
    runs = chapter.run_bounds(tasks, cfg, torch.device("cpu"))
    return cfg, datasets, tasks, accuracy, runs


def test_data_and_tasks(tiny):
    _, datasets, tasks, accuracy, _ = tiny
    assert "digits, 1297 images of 1 × 8 × 8 for training and 500 for testing" in datasets.describe()
    assert datasets.gray_norm == pytest.approx((0.3054, 0.3759), abs=1e-4)  # the training split's mean and sd
    assert list(tasks) == ["gray", "gray_cnn", "colour"] and list(accuracy["task"]) == [t.title for t in
                                                                                          tasks.values()]
    for task in tasks.values():
        assert task.x_eval.shape[0] == 2 and task.sigma > 0 and 0 <= task.accuracy[1] <= 1
        assert task.exact.features(task.x_eval.double()).dtype == torch.float64


def test_bound_runs_summary_and_modes(tiny):
    cfg, _, tasks, _, runs = tiny
    expected = {(k, label) for k in tasks for label in ("main", "limit", "i=1")}
    assert set(runs) == expected | {("gray", "fixed atol, main s"), ("gray", "fixed atol, limit s")}
    summary = chapter.bound_summary(runs, tasks)
    assert len(summary) == len(runs) and {"q10", "median", "q90", "median ‖z_ε‖/‖ε‖"} <= set(summary.columns)
    assert list(summary["images"]) == [len(res.bound_dct) for res in runs.values()]
    assert np.all(summary["q10"] <= summary["median"]) and np.all(summary["median"] <= summary["q90"])
    for key, task in tasks.items():
        res = runs[key, "main"]
        z, bound = chapter.recompute_first_draw(task, res)
        np.testing.assert_allclose(z, res.z_eps[0, 0], rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(bound, res.bound_dct_per_restart[0, 0], rtol=1e-9)
    table, panels = chapter.histogram_modes(tasks, runs)
    assert len(table) == 4 * len(tasks) and set(panels) == set(tasks)
    assert table["histogram mode"].isna().all()  # two images: too few for a mode
    findings = chapter.bound_findings(runs, tasks, cfg)
    assert findings["sweep_images"] == 2 and len(findings["fixed"]) == 2 and set(findings["by_i"]) == {1, 2}
    assert all(len(p) == 4 for p in panels.values())


def test_null_space_and_attacks(tiny):
    cfg, _, tasks, _, runs = tiny
    ranks = chapter.jacobian_ranks(tasks)
    assert list(ranks["images"]) == [2, 2, 2]
    gray = tasks["gray"]
    if gray.jacobian_rank.null_direction[0] is not None:
        steps, mode, extent = chapter.null_direction_steps(gray)
        assert len(steps) == 4 and 0 <= mode < 64 and 0 < extent < np.inf
        inside = steps["step / linear piece"] < 1
        assert np.all(steps["‖z_ε‖ / ‖a(θ)‖"][inside] < 1e-12) and np.all(steps["‖z_ε‖ / ‖a(θ)‖"][~inside] > 1e-12)
    releases = chapter.simulate_releases(gray, cfg, torch.device("cpu"))
    assert (releases.n, releases.K) == (2, 6) and releases.observed.shape == (12, gray.model.feature_dim)
    attacks = chapter.run_attacks(gray, releases, cfg, torch.device("cpu"))
    bound = runs["gray", "main"].bound_dct[:releases.n]
    table, err = chapter.attack_errors(gray, releases, attacks, bound)
    assert list(table["attack"]) == list(attacks.reconstructions) and len(err) == 4
    assert all(e.shape == (6, 2, 1, 8, 8) for e in err.values())
    assert np.all((table["modes below the bound [%]"] >= 0) & (table["modes below the bound [%]"] <= 100))
    # the trivial guess: its error is the spread of the images about the mean image, whatever the noise
    mean_guess = err["mean training image"]
    expected = hcr.dct2((releases.mean_image - releases.truth).reshape(6, 2, 1, 8, 8).double().numpy())
    np.testing.assert_allclose(mean_guess, expected, rtol=1e-12)


def test_checkpoint_dir_is_off_at_ci_and_book_and_validated():
    assert chapter.settings("ci", "cpu").checkpoint_dir is None
    assert chapter.settings("book", "cpu").checkpoint_dir is None
    assert chapter.settings("paper", "cpu").checkpoint_dir == "data/checkpoints/hcr"
    assert chapter.settings("ci", "cpu", checkpoint_dir="/tmp/x").checkpoint_dir == "/tmp/x"
    for bad in ("", 3, ["data"]):
        with pytest.raises(ValueError, match="checkpoint_dir"):
            chapter.settings("ci", "cpu", checkpoint_dir=bad)


def test_checkpoint_bytes_at_paper_scale():
    # off at ci; at paper scale the kept bounds of every run (10,000 MNIST and 2,500 CIFAR-10 images) and three
    # classifiers, about 3 GB, most of them the bounds
    assert chapter.checkpoint_bytes(chapter.settings("ci", "cpu")) == 0
    paper = chapter.settings("paper", "cpu")
    assert 2 * 2**30 < chapter.checkpoint_bytes(paper) < 4 * 2**30
    assert chapter.checkpoint_bytes(paper) < chapter.host_ram_bytes(paper)  # they are part of the kept results
    fewer = chapter.settings("paper", "cpu", gray_examples=5_000)
    assert chapter.checkpoint_bytes(fewer) < chapter.checkpoint_bytes(paper)


def test_paper_shape_checkpoints_into_an_emptied_folder(tmp_path):
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints" / "old.pt").write_bytes(b"")
    params = chapter.paper_shape(tmp_path)
    assert params["checkpoint_dir"] == str(tmp_path / "checkpoints") and not (tmp_path / "checkpoints").exists()


def test_a_lost_session_resumes_the_training_and_the_bounds(tiny, tmp_path, monkeypatch):
    # Checkpoints (issue 42): with checkpoint_dir the classifiers' training and every chunk of the bounds are saved;
    # a second session (the tasks built anew) loads them, with the weights and bounds of the run without checkpoints
    import dataclasses

    from compendium.chapters.hcr import experiments

    cfg, datasets, tasks, _, runs = tiny
    cfg = dataclasses.replace(cfg, checkpoint_dir=str(tmp_path))
    calls = {"chunks": 0}
    real = hcr._algorithm1

    def counted(*args, **kwargs):
        calls["chunks"] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(hcr, "_algorithm1", counted)
    for session in range(2):
        fresh = chapter.build_tasks(cfg, datasets)
        chapter.train_tasks(fresh, cfg, torch.device("cpu"))
        gray = fresh["gray"]
        res = chapter.run_hcr(gray, cfg, torch.device("cpu"), gray.diffdivs[0], gray.iterations[0])
        assert calls["chunks"] == 1  # computed in the first session, read back in the second
        for key, task in fresh.items():
            for mine, theirs in zip(task.model.state_dict().values(), tasks[key].model.state_dict().values()):
                assert torch.equal(mine.cpu(), theirs.cpu()), key
        for field in ("bound_dct", "eps", "z_eps", "chi2", "lsqr_iterations"):
            assert np.array_equal(getattr(res, field), getattr(runs["gray", "main"], field)), field
    names = sorted(p.name.split("-classifier-")[0] for p in tmp_path.glob("*-classifier-*.pt"))
    assert names == sorted(tasks) and len(list((tmp_path / "bounds").glob("hcr-0-*.pt"))) == 1
    assert experiments.checkpoint_folder(dataclasses.replace(cfg, checkpoint_dir=None)) is None


def test_quoted_numbers_solve_the_coding_exercises():
    numbers = chapter.quoted_numbers()
    assert numbers["hcr_ex4_pair"] == pytest.approx(1.0) and numbers["hcr_ex4_third"] == pytest.approx(1.0)
    # the first-difference map: CRB k + 1 against eq. (18)'s 1/2, worst on the second-to-last pixel
    assert numbers["hcr_ex5_worst_pixel"] == 62 and numbers["hcr_ex5_worst_factor"] == pytest.approx(126.0)


def test_book_scale_bounds_real_mnist_digits_with_the_papers_mlp():
    # the book's grayscale task is the paper's MNIST MLP (784 -> 784 -> 784) on the shipped real MNIST digits, at the
    # paper's noise level and sizes, with enough test digits for a histogram mode and its standard error
    cfg = chapter.settings("book", "cpu")
    assert cfg.gray_data == "mnist_digits" and cfg.gray_hidden == 784
    assert cfg.gray_kappa == chapter.PAPER_KAPPA["MNIST"] and cfg.gray_diffdivs == chapter.PAPER_DIFFDIVS["MNIST"]
    assert cfg.gray_examples >= chapter.MIN_MODE_IMAGES and cfg.gray_low_freq == 8
    gray, _ = chapter.data_text(cfg)
    assert "real MNIST digits at 28×28" in gray and "8,000" in gray and "60,000" in gray and "8×8" not in gray
    assert "MLP 784-784-784" in chapter.gray_setup_text(cfg)
    assert chapter.settings("ci", "cpu").gray_data == "digits"  # ci keeps the small digits


def test_mnist_digits_load_at_28_pixels_with_the_mnist_normalisation():
    datasets = chapter.load_data(chapter.settings("ci", "cpu", gray_data="mnist_digits", gray_hidden=16))
    assert datasets.gray_train[0].shape == (8000, 1, 28, 28) and datasets.gray_test[0].shape == (2000, 1, 28, 28)
    assert datasets.gray_norm == pytest.approx((0.1307, 0.3081))


def test_mode_standard_error_is_zero_for_identical_images_and_positive_otherwise():
    same = np.tile(np.linspace(0.0, 1.0, 64).reshape(1, 1, 8, 8), (20, 1, 1, 1))
    assert chapter.mode_standard_error(same, draws=20) == 0.0
    rng = np.random.default_rng(0)
    varied = rng.gamma(4.0, 0.1, size=(20, 1, 8, 8)) * rng.uniform(0.5, 2.0, size=(20, 1, 1, 1))
    assert chapter.mode_standard_error(varied, draws=50) > 0
    assert chapter.mode_standard_error(varied, low=4, draws=50) > 0


def test_paper_sizes_text_reads_both_figures():
    text = chapter.paper_sizes_text()
    assert "MNIST (Figure 1) rises from 0.16 and 0.42" in text
    assert "CIFAR-10 (Figure 3) falls from 0.08 and 0.09" in text


def test_host_ram_at_paper_scale_fits_a_colab_runtime():
    # MNIST's 10,000 and CIFAR-10's 2,500 test images with R = 25: the kept results are a few (B, p) arrays per run
    paper = chapter.host_ram_bytes(chapter.settings("paper", "cpu"))
    assert paper < 40 * 2**30
    assert chapter.host_ram_bytes(chapter.settings("ci", "cpu")) < paper
    # the per-draw arrays are not kept: 25 restarts cost little more than one
    one = chapter.host_ram_bytes(chapter.settings("paper", "cpu", num_restarts=1))
    assert paper - one < 4 * 2**30


def test_paper_pipeline_runs_at_paper_shapes(paper_shape_notebooks):
    # MNIST 28×28 through the paper's 784-784-784 MLP and CIFAR-10 32×32×3 through its 38.6M-parameter CNN, on
    # stand-in files with the counts cut to seconds (run by the suite's book work, tests/test_paper_shapes.py): every
    # cell runs, and the card is complete
    from compendium import scorecard

    executed = paper_shape_notebooks["hcr"]
    if isinstance(executed, Exception):
        raise executed
    card = scorecard.read_card(executed)
    assert card is not None and {row["key"] for row in card["rows"]} == {c.key for c in chapter.CLAIMS}
    verdicts = {row["key"]: row for row in card["rows"]}
    assert "MNIST's 28×28 digits, `paper` scale" in verdicts["hcr-mnist-accuracy"]["found"]
    assert "CIFAR-10 at 32×32" in verdicts["hcr-cifar-accuracy"]["found"]
    assert not verdicts["hcr-abstract-small-nets"]["checked"]          # 2 images: too few for a histogram mode
    assert not verdicts["hcr-fig5"]["checked"]                           # no ImageNet
    text = "\n".join(o.get("text", "") for c in nbformat.read(executed, as_version=4).cells
                     if c.cell_type == "code" for o in c.get("outputs", []))
    assert "1 × 28 × 28" in text and "3 × 32 × 32" in text


def test_median_shift_pairs_the_images_and_gives_its_standard_error():
    """Figures 1 and 3's verdicts: the per-image median of one run's bounds against another's (or, with ``low``, a
    run's lowest modes against all of its modes), paired over the images both ran, with the SE of the mean."""
    first = np.ones((3, 1, 4, 4))
    second = np.ones((4, 1, 4, 4)) * np.array([2.0, 3.0, 4.0, 9.0])[:, None, None, None]  # the 4th: left out
    shift, se = chapter.median_shift(first, second)
    assert shift == pytest.approx(2.0) and se == pytest.approx(np.std([1, 2, 3], ddof=1) / np.sqrt(3))
    modes = np.ones((2, 1, 4, 4))
    modes[:, :, :2, :2] = 5.0  # the lowest 2x2 of 16 modes: the all-mode median stays 1
    assert chapter.median_shift(modes, modes, low=2) == (4.0, 0.0)
    assert chapter.median_shift(first[:1], second[:1]) == (1.0, 0.0)  # one image: no spread
