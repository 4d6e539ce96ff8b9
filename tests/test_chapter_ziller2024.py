"""The pipelines of the Ziller et al. (2024) chapter (compendium.chapters.ziller2024) on small inputs: the tables
they return, their reproducibility from the seeds, and agreement of their Monte-Carlo columns with the closed forms
of compendium.bounds.ziller2024 (the notebook asserts the same on the chapter's scales)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from compendium import checks
from compendium.bounds import ziller2024 as zb
from compendium.chapters import ziller2024 as chapter


def test_describe_images_names_the_scale_the_dimension_and_lpips():
    cfg = chapter.settings("ci", device="cpu")
    images = torch.full((cfg.n_images, 3, cfg.resolution, cfg.resolution), 0.5)
    text = chapter.describe_images(cfg, "cpu", images, False, "not requested at this scale")
    first, second = text.split("\n")
    assert first.startswith("scale=ci, device=cpu, seed=0: 12 images of 3x16x16 (N = 768)")
    assert first.endswith("norms min/median/max = 13.86/13.86/13.86")
    assert second == "LPIPS: skipped (not requested at this scale)"
    assert chapter.describe_images(cfg, "cpu", images, True, "").endswith("\nLPIPS: used")


def test_ncc_cases_table_agrees_with_the_exact_mean_and_is_reproducible():
    table, draws = chapter.ncc_cases(np.random.default_rng(0), n_mc=20_000, seed=1)
    assert list(table.columns) == ["N", "sample", "a", "MC mean NCC", "± SE", "exact mean (ours)", "eq. (7)",
                                   "bound (8)"]
    assert list(zip(table.N, table["sample"])) == [(10, "centred"), (10, "non-centred"), (50, "centred"),
                                                   (50, "non-centred")]
    assert set(draws) == {(10, "centred"), (10, "non-centred"), (50, "centred"), (50, "non-centred")}
    assert all(len(d) == 20_000 for d in draws.values())
    checks.assert_close(table["MC mean NCC"], table["exact mean (ours)"], table["± SE"], k=5)
    centred = table[table["sample"] == "centred"]
    assert np.allclose(centred.a, 1.0)  # centred and clipped: a = sqrt(T) / sigma (bound (8) is attained)
    assert np.allclose(centred["eq. (7)"], centred["bound (8)"])
    again, _ = chapter.ncc_cases(np.random.default_rng(0), n_mc=20_000, seed=1)
    pd.testing.assert_frame_equal(table, again)


def test_rero_cases_follow_propositions_5_to_7():
    table, mse, laws = chapter.rero_cases(np.random.default_rng(3), n_mc=20_000, seed=2)
    assert len(table) == 9 and list(mse) == list(laws) == ["unclipped", "clipped, β = 0.9", "clipped, β = 0.5"]
    assert table.columns[:2].tolist() == ["case", "λ"]
    unclipped = table[table.case == "unclipped"]
    assert np.all(unclipped["λ"] == 0) and np.all(table[table.case != "unclipped"]["λ"] > 0)
    se = checks.proportion_se(table["γ (Prop. 6)"], 20_000) + 1e-12
    checks.assert_close(unclipped["P(MSE ≤ η) MC"], unclipped["γ (Prop. 6)"], se[unclipped.index], k=5)
    checks.assert_below(table["P(MSE ≤ η) MC"], table["γ (Prop. 6)"], se, k=5)
    checks.assert_below(table["P(PSNR ≥ η) MC"], table["γ (Prop. 7)"], se, k=5)
    for case, m in mse.items():
        checks.assert_fits(m, laws[case].cdf, what=case)


def test_figure2_panels():
    panels = chapter.figure2(n_mc=5_000, seed=0)
    assert list(panels) == ["MSE", "PSNR", "NCC"]
    assert [p["bound"] for p in panels.values()] == pytest.approx([1.0, 0.0, float(zb.ncc_bound_dim(50, 1.0))])
    assert float(panels["NCC"]["cdf"](0.0)) == pytest.approx(0.158655, abs=1e-6)  # Phi(-a) with a = 1
    for name, p in panels.items():
        assert len(p["draws"]) == 5_000 and len(p["grid"]) == 300
        median = np.median(p["draws"])
        assert float(p["cdf"](median)) == pytest.approx(0.5, abs=5 * 0.5 / np.sqrt(5_000)), name


def test_figure1_grid_theory_and_summary():
    gen = torch.Generator().manual_seed(0)
    images = torch.rand((10, 3, 8, 8), generator=gen)  # ||X|| < 14: unclipped at C = 20, clipped at C = 0.1
    results = chapter.figure1_grid(images, (0.1, 20.0), (0.01, 0.1), lpips=False, generator=gen)
    assert len(results) == 40 and {"MSE", "PSNR", "NCC", "NMI", "SSIM", "C", "sigma", "image"} <= set(results.columns)
    x_all = images.double().numpy()
    theory = chapter.figure1_theory(x_all, (0.1, 20.0), (0.01, 0.1))
    assert len(theory) == 40 and theory.clipped.tolist() == [True] * 20 + [False] * 20
    summary, mean_sq_range = chapter.figure1_summary(results, theory, x_all)
    assert len(summary) == 4 and mean_sq_range == pytest.approx(np.mean(np.ptp(x_all.reshape(10, -1), axis=1) ** 2))
    assert summary["all clipped"].tolist() == [True, True, False, False]
    checks.assert_close(summary["mean MSE"], summary["E[MSE] (4)"], summary["SE MSE"], k=6)
    assert np.allclose(summary["bound (5)"], summary.C**2 * summary.sigma**2)
    unclipped = summary[summary["all unclipped"]]
    assert np.allclose(unclipped["E[MSE] (4)"], unclipped["bound (5)"])  # equality in (5) without clipping


def test_figure3_clip_norms_and_shown_sigmas():
    assert chapter.figure3_clip_norms([1.0, 4.0, 16.0]) == pytest.approx((0.1, 2.0, 8.0, 160.0))
    assert chapter.shown_sigmas((1e-3, 1e-2, 1e-1, 1.0)) == [1e-3, 1e-2, 1e-1]
    assert chapter.shown_sigmas((0.5, 1.0)) == [0.5, 1.0]  # nothing <= 0.1: all of them
    assert len(chapter.shown_sigmas(tuple(np.geomspace(1e-4, 0.1, 20)))) == 5


def test_figure3_grid_cells_and_largest_clip():
    gen = torch.Generator().manual_seed(0)
    images = {r: torch.rand((1, 3, r, r), generator=gen) for r in (4, 8)}
    clip_norms = chapter.figure3_clip_norms([float(images[4].norm()), float(images[8].norm()), 20.0])
    fig3, examples = chapter.figure3_grid(images, clip_norms[:2], (0.01, 1.0), 6, shown=[0.01], generator=gen)
    assert len(fig3) == 2 * 2 * 2 * 6 and list(fig3.columns) == ["MSE", "PSNR", "NCC", "resolution", "C", "sigma"]
    assert set(examples) == {(r, C, 0.01) for r in (4, 8) for C in clip_norms[:2]}
    assert examples[(8, clip_norms[0], 0.01)].shape == (3, 8, 8)
    cells = chapter.figure3_cells(fig3, images)
    assert len(cells) == 8 and {"MSE", "MSE_sd", "NCC", "NCC_sd", "E_MSE"} <= set(cells.columns)
    checks.assert_close(cells.MSE, cells.E_MSE, cells.MSE_sd / np.sqrt(6), k=6)
    at = chapter.figure3_at_clip(cells, images, clip_norms[1])
    assert len(at) == 4 and at.sigma.is_monotonic_increasing
    assert at.bound8.tolist() == [float(zb.ncc_bound_dim(images[r].numel(), s)) for r, s in zip(at.resolution, at.sigma)]
