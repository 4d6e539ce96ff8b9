"""The pipelines of the Ziller et al. (2024) chapter (compendium.chapters.ziller2024) on small inputs: the tables
they return, their reproducibility from the seeds, and agreement of their Monte-Carlo columns with the closed forms
of compendium.bounds.ziller2024 (the notebook asserts the same on the chapter's scales)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from scipy import stats

from compendium import checks, plotting
from compendium.bounds import ziller2024 as zb
from compendium.chapters import ziller2024 as chapter


def test_describe_images_names_the_scale_the_dimension_and_lpips():
    cfg = chapter.settings("ci", device="cpu")
    images = torch.full((cfg.n_images, 3, cfg.resolution, cfg.resolution), 0.5)
    text = chapter.describe_images(cfg, "cpu", images, False, "not requested at this scale")
    first, second, third = text.split("\n")
    assert first == "scale=ci, device=cpu, seed=0: 12 images of 3x16x16 (N = 768),"
    assert second == "  norms min/median/max = 13.86/13.86/13.86"
    assert third == "LPIPS: not computed in this run"  # the reason is a build note, not reader text
    long = chapter.describe_images(cfg, "cpu", images, False, "a reason " * 30)
    assert max(len(line) for line in long.split("\n")) <= 88
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
    assert [p["bound"] for p in panels.values()] == pytest.approx([1.0, 0.0, float(zb.ncc_bound_dim(50, sigma=1.0))])
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
    # 0.1 as a float32 grid stores it is still shown (the captions quote the largest shown sigma)
    assert max(chapter.shown_sigmas(tuple(float(v) for v in torch.logspace(-3, 1, 9)))) == pytest.approx(0.1)


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
    assert at.bound8.tolist() == [float(zb.ncc_bound_dim(images[r].numel(), sigma=s))
                                  for r, s in zip(at.resolution, at.sigma)]


def test_figure3_resolutions_tables_and_sentence():
    images = {r: torch.linspace(0, 1, 3 * r * r).reshape(1, 3, r, r) for r in (4, 8)}
    large = pd.DataFrame({"sigma": [0.01, 0.01, 1.0, 1.0], "resolution": [4, 8, 4, 8], "NCC": [0.5, 0.6, 0.0, 0.01],
                          "bound8": [0.99, 0.97, 0.14, 0.07], "eq7": [0.51, 0.59, 0.0, 0.0]})
    by_res = chapter.figure3_resolutions(large, images)
    assert by_res["resolution [px]"].tolist() == [4, 8] and by_res.N.tolist() == [48, 192]
    assert by_res.NCC.tolist() == [0.5, 0.6] and by_res["bound (8)"].tolist() == [0.99, 0.97]  # smallest sigma only
    assert by_res["pixel sd"].tolist() == pytest.approx([float(x.std(unbiased=False)) for x in images.values()])
    text = chapter.describe_figure3_ncc(by_res, 100.0, 0.01)
    lines = text.split("\n")
    assert lines[0] == "C = 100, σ = 0.01, at 4 / 8 px:" and len(lines) == 4
    assert lines[1].startswith("  mean NCC 0.500 / 0.600 (×1.20") and lines[2] == "  eq. (7)  0.510 / 0.590"
    sd = by_res["pixel sd"]
    assert lines[3] == f"  per-pixel sd {sd[0]:.3f} / {sd[1]:.3f} (×{sd[1] / sd[0]:.2f})"
    wide = chapter.figure3_ncc_table(large)
    assert list(wide.columns) == ["σ", "NCC, 4 px", "NCC, 8 px", "bound (8), 4 px", "bound (8), 8 px"]
    assert wide["NCC, 8 px"].tolist() == [0.6, 0.01]
    sd = chapter.photo_pixel_sd("astronaut", (8, 32))
    assert 0 < sd[8] < sd[32] < 0.5  # downsampling averages detail away


@pytest.mark.parametrize("row", zb.table1_rows, ids=[f"{i:02d}-{r[0]}" for i, r in enumerate(zb.table1_rows)])
def test_table1_rows_at_the_printed_precision_are_the_papers_strings(row):
    _, sigma, C, N, T, kappa, *paper = row
    got = chapter.printed(zb.table1_row(sigma, C=C, N=N, T=T, kappa=kappa))
    assert [got[k] for k in ("worst", "mse", "psnr", "ncc")] == paper


def test_table1_puts_the_papers_values_next_to_ours():
    table = chapter.table1()
    assert len(table) == len(zb.table1_rows) and table.varied.iloc[0] == "baseline"
    assert table.varied.tolist()[8] == "N\u00a0=\u00a010" and table.varied.tolist()[-1] == "κ\u00a0=\u00a010⁻⁹"
    assert table.varied.tolist()[1] == "σ\u00a0=\u00a010⁻⁴" and table.varied.tolist()[4] == "σ\u00a0=\u00a010⁴"
    paper = [c for c in table.columns if c.startswith("paper")]
    assert len(paper) == 4 and all(table.columns[table.columns.get_loc(c) + 1].endswith("(ours)") for c in paper)
    for c in paper:
        assert (table[c] == table[table.columns[table.columns.get_loc(c) + 1]]).all(), c
    psnr = table["paper: max E[PSNR] [dB]"].tolist() + table["max E[PSNR] (ours)"].tolist()
    assert "\u221240.0" in psnr and not any("-" in v for v in psnr)  # true minus signs
    table1_claim = next(c for c in chapter.CLAIMS if c.key == "ziller-table1")
    assert f"{len(zb.table1_rows)} settings ({4 * len(zb.table1_rows)} printed values)" in table1_claim.says
    line = chapter.table1_corrections(table)
    assert "\n  N\u00a0=\u00a010: max E[NCC] 31.0% (printed 30.2%)" in line
    assert "\n  N\u00a0=\u00a010: E[PSNR] [dB] 0.4 (printed 0.0)" in line


def test_metric_grid_draws_experiments_as_points_and_each_bound_in_its_own_style():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    gen = torch.Generator().manual_seed(0)
    images = torch.rand((10, 3, 8, 8), generator=gen)
    results = chapter.figure1_grid(images, (0.1, 20.0), (0.01, 0.1), lpips=False, generator=gen)
    x_all = images.double().numpy()
    summary, er2 = chapter.figure1_summary(results, chapter.figure1_theory(x_all, (0.1, 20.0), (0.01, 0.1)), x_all)
    sig = np.geomspace(0.01, 0.1, 5)
    curves = chapter.figure1_curves(summary, sig, 192, er2)
    styles = {label: style for spec in curves.values() for _, _, label, _, style in spec if label.startswith("bound")}
    assert sorted(styles) == ["bound (5)", "bound (6)", "bound (8)", "bound (9)"]
    assert len({str(s) for s in styles.values()}) == 4  # one line style per bound
    plotting.set_style()
    fig = plotting.metric_grid(results, ["MSE", "PSNR", "NCC"], row="C", theory=curves, logy=("MSE",))
    assert fig.get_size_inches()[0] == pytest.approx(plotting.WIDTH) and len(fig.axes) == 6
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels[0].startswith("experiment") and {"bound (5)", "bound (6)", "bound (8)", "bound (9)"} <= set(labels)
    for ax in fig.axes:
        assert all(t.get_size() == plotting.FONT for t in ax.get_xticklabels() + ax.get_yticklabels())
        experiment = [ln for ln in ax.get_lines() if ln.get_marker() == "o"]
        assert experiment and all(ln.get_linestyle() == "None" for ln in experiment)  # points, not lines
    with pytest.raises(ValueError, match="at most three panels"):
        plotting.metric_grid(results, ["MSE", "PSNR", "NCC", "NMI"], row="C")
    curves3 = chapter.figure3_curves({4: images[:1, :, :4, :4], 8: images[:1]}, (0.1, 20.0), sig)
    assert [c[2] for c in curves3[("NCC", 20.0)]] == ["eq. (7), 4 px", "bound (8), 4 px", "eq. (7), 8 px",
                                                      "bound (8), 8 px"]
    plt.close("all")


def test_counts_are_settings():
    cfg = chapter.settings("ci", device="cpu", fig3_sigmas=[1e-3])
    assert cfg.fig3_sigmas == (1e-3,) and chapter.settings("book", device="cpu").fig3_sigmas is None
    for name, bad in (("prop1_draws", 5), ("averaging_draws", 1), ("fig3_sigmas", [0.0])):
        with pytest.raises(ValueError, match=name):
            chapter.settings("ci", device="cpu", **{name: bad})


def test_quoted_numbers_solve_the_exercises():
    numbers = chapter.quoted_numbers()
    n = 3 * 64 * 64
    sigma = numbers["ziller_ex1_sigma"]
    # Prop. 6 at that sigma: P(MSE <= 1e-3) is exactly gamma = 0.01
    assert abs(stats.chi2(n).cdf(n * 1e-3 / sigma**2) - 0.01) < 1e-9
    assert set(numbers) == {"ziller_ex1_sigma", "ziller_ex1_epsilon"}
    assert numbers["ziller_ex1_epsilon"] > 100  # "an epsilon in the hundreds"


def test_claims_name_the_data_the_image_size_and_the_scale_that_ran():
    ci = {c.key: c for c in chapter.claims(chapter.settings("ci", device="cpu"))}
    assert [c.key for c in chapter.claims(chapter.settings("ci", device="cpu"))] == [c.key for c in chapter.CLAIMS]
    assert "12 crops of scikit-image's photographs at 16×16, at `ci` scale" in ci["ziller-fig1"].reason
    assert "the paper: 100 ImageNet images at 224×224" in ci["ziller-fig4"].reason
    assert "8, 16 and 32 px, at `ci` scale" in ci["ziller-fig3"].reason
    paper = chapter.settings("paper", device="cpu")
    assert chapter.data_used(paper) == "100 ImageNet validation images at 224×224, at `paper` scale"


def test_paired_trend_finds_a_rise_and_measures_the_fall():
    rng = np.random.default_rng(0)
    rows = [{"C": C, "sigma": s, "image": i, "SSIM": 1.0 - s + 0.01 * rng.random() + (0.5 * s if C == 10 else 0)}
            for C in (1, 10) for s in (0.1, 0.5, 0.9) for i in range(8)]
    rises, fall = chapter.paired_trend(pd.DataFrame(rows), "SSIM")
    assert rises == [] and fall > 6  # C = 10 falls more slowly but still falls
    rows = [{**r, "SSIM": r["SSIM"] + (2 * r["sigma"] if r["C"] == 10 else 0)} for r in rows]
    rises, _ = chapter.paired_trend(pd.DataFrame(rows), "SSIM")
    assert rises == [10.0]


def test_student_k_widens_the_tolerance_only_for_a_few_draws():
    assert chapter.student_k(50) == 6.0
    assert chapter.student_k(3) > 100 and chapter.student_k(8) > chapter.student_k(20) > 6.0


def test_paper_pipeline_runs_at_paper_shapes(paper_shape_notebooks):
    """The paper scale's pipeline on ImageNet-named stand-in JPEGs at 224 px, Figure 3 at 32, 224 and 1024 px, counts
    cut to seconds: it runs to the end and publishes a complete card; nothing in it is a finding."""
    import nbformat

    from compendium import scorecard

    executed = paper_shape_notebooks["ziller2024"]  # run by the suite's book work (tests/test_paper_shapes.py)
    if isinstance(executed, Exception):
        raise executed
    card = scorecard.read_card(executed)
    assert [r["key"] for r in card["rows"]] == [c.key for c in chapter.CLAIMS]
    assert all(r["checked"] for r in card["rows"] if r["expect"] in scorecard.CHECKED)
    rows = {r["key"]: r for r in card["rows"]}
    assert "10 ImageNet validation images at 224×224, at `paper` scale" in rows["ziller-fig1"]["reason"]
    assert "32, 224 and 1024 px, at `paper` scale" in rows["ziller-fig3"]["reason"]
    setup = next(c for c in nbformat.read(executed, as_version=4).cells if c.get("id") == "cell-003-setup")
    assert "10 images of 3x224x224 (N = 150528)" in "".join(o.get("text", "") for o in setup.outputs)
