"""The "From Mean to Extreme" chapter's pipelines (compendium.chapters.mean_to_extreme) on small inputs: each returns
the numbers its notebook checks, with the columns the notebook reads, and they agree with the paper's closed forms."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from compendium import checks
from compendium.bounds import mean_to_extreme as mte
from compendium.chapters import mean_to_extreme as chapter


def _streams(seed: int = 0):
    return chapter.generators(chapter.settings("ci", "cpu", seed), "cpu")


def test_generators_are_seeded_and_independent():
    (rng1, gen1, cpu1), (rng2, gen2, cpu2) = _streams(3), _streams(3)
    assert rng1.random() == rng2.random()
    assert torch.equal(torch.randn(4, generator=gen1), torch.randn(4, generator=gen2))
    assert torch.equal(torch.randn(4, generator=cpu1), torch.randn(4, generator=cpu2))


def test_variance_table_follows_eq17_and_the_corrected_eq18():
    x0 = torch.rand(1, 3, 4, 4, generator=torch.Generator().manual_seed(0))
    n0 = float(x0.norm())
    table = chapter.variance_table(x0, C=10 * n0, sigma=0.05, n_draws=40, generator=torch.Generator().manual_seed(1))
    assert list(table.M) == [1, 10, 100, 400, 1] and table["loss scale c"].iloc[-1] == pytest.approx(10.0)
    assert np.allclose(table["σ² max(|X|², C²/(Mc²))"],
                       [mte.reconstruction_variance(0.05, norm=n0, C=10 * n0, M=m, loss_scale=c)
                        for m, c in zip(table.M, table["loss scale c"])])
    checks.assert_close(table["Var(X̂ − X) opacus"], table["σ² max(|X|², C²/(Mc²))"], table["± SE"], k=6)
    assert np.allclose(table["± SE"], table["Var(X̂ − X) opacus"] * np.sqrt(2 / (40 * x0.numel())))
    # Prop. B.1: the rows' plain mean is beta c X (beta of eq. 10): biased for M = 4 M* (beta = 1/2) and for c = 10
    assert np.allclose(table["β c (eq. 10)"], [1, 1, 1, 0.5, 10])
    checks.assert_close(table["rows' plain mean / X"], table["β c (eq. 10)"], table["rows' mean SE"], k=6)


def test_shrinkage_counterexample_beats_the_mvue():
    rng, _, cpu = _streams()
    frame = chapter.shrinkage_counterexample(rng, cpu, n_mc=10_000)
    assert list(frame.N) == [10, 64, 3072] and list(frame.draws) == [1000, 1000, 651]
    assert np.all(frame.shrunk_theory < frame.mvue_theory)
    checks.assert_close(frame.mvue, frame.mvue_theory, frame.mvue_se, k=6)
    a = np.array([float(mte.shrinkage_factor(n, sigma=s)) for n, s in zip(frame.N, frame.sigma)])
    assert np.allclose(frame.eta, (1 + a) / 2 * frame.mvue_theory.astype(float))  # midway between the expected MSEs
    checks.assert_close(frame.mvue_hit, frame.gamma, checks.proportion_se(frame.gamma, frame.draws) + 1e-12, k=5)
    assert np.all(frame.hit > frame.gamma + 0.5)
    summary = chapter.shrinkage_summary(frame)
    assert list(summary.columns) == ["N", "σ", "E[MSE] MVUE", "E[MSE] shrinkage", "η", "P(MSE(MVUE) ≤ η)",
                                     "paper's γ(η) (24)", "P(MSE(shrunk) ≤ η)"]


def test_rero_on_a_data_set_respects_props_3_to_5():
    rng, _, cpu = _streams()
    frame = chapter.rero_on_a_data_set(rng, cpu, n_mc=5_000)
    assert list(frame["sample"]) == ["smallest norm", "median norm", "largest norm"]
    assert frame["|X|"].is_monotonic_increasing
    se = checks.proportion_se(frame["paper's γ(η) (24)"], 5_000)
    checks.assert_below(frame["P(MSE ≤ η) MC"], frame["paper's γ(η) (24)"], se, k=5)
    assert np.all(frame["exact (per target)"] <= frame["paper's bound (25)"] + 1e-15)


def test_figure2_regimes_and_plot():
    rng, gen, _ = _streams()
    fig2, regimes, u_norms = chapter.figure2_regimes(rng, gen, "cpu")
    assert len(fig2) == 3 * len(chapter.FIG2_SIGMAS) * 100 and list(regimes) == list(fig2.regime.unique())
    assert regimes["C = √M m"] == pytest.approx(10 * u_norms.min())
    optimal = fig2[fig2.regime == "C = m"]
    assert np.allclose(optimal.scaled, optimal.scaled_optimal, rtol=1e-5)  # clipped: eq. (17) is eq. (20)
    fig = chapter.plot_figure2(fig2, regimes, u_norms)
    assert len(fig.axes) == 9
    plt.close(fig)


def test_figure3_expected_psnr():
    fig, expected = chapter.plot_figure3()
    fig.canvas.draw()
    legends = [(ax, ax.get_legend()) for ax in fig.axes if ax.get_legend() is not None]
    assert len(legends) == 3 and all(leg.get_window_extent().x0 >= ax.get_window_extent().x1 for ax, leg in legends)
    plt.close(fig)
    assert expected[("σ", 0.1)] == pytest.approx(25.517116, abs=1e-6)
    assert expected[("N", 1000)] == pytest.approx(0.004344, abs=1e-6)


def test_ncc_identity_and_law():
    rng, _, cpu = _streams()
    lhs, rhs = chapter.ncc_identity(rng)
    assert abs(lhs - rhs) < 1e-12
    table, samples = chapter.ncc_sample_law(rng, cpu, n_mc=10_000)
    assert [n for n, _, _ in samples] == list(table.N) == [4, 4, 10, 3072]
    assert np.all(table["paper's Prop. 6 (28)"] <= table["paper's bound (28)"])
    assert table["P(NCC > bound) MC"].iloc[1] > 0.3  # the "bound" (28) is exceeded at small N


def test_figure4_to_6_on_tiny_images():
    images = torch.rand(5, 3, 8, 8, generator=torch.Generator().manual_seed(0))
    norms = images.flatten(1).norm(dim=1).numpy()
    fig4 = chapter.figure4_records(images, (1e-3, 1e-2), torch.Generator().manual_seed(0))
    assert set(fig4.columns) >= {"MSE", "PSNR", "NCC", "NMI", "SSIM", "C", "sigma", "image"} and len(fig4) == 10
    e_mse, sd_mse = chapter.figure4_mse_theory(norms, images[0].numel(), (1e-3, 1e-2))
    assert np.allclose(e_mse, [np.mean((s * norms) ** 2) for s in (1e-3, 1e-2)])
    checks.assert_close(fig4.groupby("sigma").MSE.mean().to_numpy(), e_mse, sd_mse, k=6)
    fig = chapter.plot_figure4(fig4, images, norms)
    assert fig.axes[0].get_subplotspec().get_gridspec().ncols == 3  # at most three panels per row
    plt.close(fig)
    fig5, examples = chapter.figure5_scaling(images[:1], seed=0, n_draws=50)
    assert np.allclose(fig5["ratio to a = 1"], fig5.a**2, rtol=1e-3) and set(examples) == {1.0, 10.0, 100.0}
    plt.close(chapter.plot_figure5(images[:1], fig5, examples))


def test_figure6_scenarios():
    cfg = chapter.settings("ci", "cpu", 0)
    five, table6, tiles = chapter.figure6_scenarios(cfg, "cpu")
    assert five.shape == (5, 3, cfg.fig1_resolution, cfg.fig1_resolution) and len(table6) == 12 and len(tiles) == 4
    assert np.allclose(table6[4]["MSE"] / table6[0]["MSE"], 255**2, rtol=1e-3)
    assert len(chapter.figure6_summary(table6)) == 12
    plt.close(chapter.plot_figure6(five, tiles))


def test_claims_name_the_data_the_image_size_and_the_scale_that_ran():
    ci = {c.key: c for c in chapter.claims(chapter.settings("ci", "cpu"))}
    assert list(ci) == [c.key for c in chapter.CLAIMS]
    assert "6 crops of scikit-image's photographs at 16 px, at `ci` scale; the paper: 100 ImageNet" in (
        ci["mte-fig4"].reason)
    assert "5 crops of scikit-image's photographs at 32 px, at `ci` scale" in ci["mte-fig6"].reason
    assert "and at 16 px" in ci["mte-fig6"].reason and "$C=20m$" in ci["mte-fig1"].reason
    paper = chapter.settings("paper", "cpu")
    assert chapter.data_used(paper) == "100 ImageNet validation images at 224 px, at `paper` scale"


def test_counts_are_settings_and_figure1_takes_the_papers_c_at_paper_scale():
    ci, paper = chapter.settings("ci", "cpu"), chapter.settings("paper", "cpu")
    assert paper.fig1_clip_ratio is None and ci.fig1_clip_ratio == 20
    assert "the paper's σ = 5\u00a0×\u00a010⁻⁴ and C = 5000" in chapter.fig1_setting(paper)
    assert chapter.fig1_setting(ci).startswith("four crops of scikit-image's photographs at 32×32 px with "
                                               "σ = 2\u00a0×\u00a010⁻³ and C = 20 m")
    for name, bad in (("ratio_rows", 5), ("variance_draws", 2), ("variance_clip_ratio", 1.0), ("fig2_samples", 3),
                      ("fig5_draws", 1), ("prop7_draws", 3), ("fig1_clip_ratio", 0.5)):
        with pytest.raises(ValueError, match=name):
            chapter.settings("ci", "cpu", **{name: bad})
    rng, gen, _ = _streams()
    fig2, _, u_norms = chapter.figure2_regimes(rng, gen, "cpu", samples=20)
    assert len(u_norms) == 20 and len(fig2) == 3 * len(chapter.FIG2_SIGMAS) * 20


def test_paper_pipeline_runs_at_paper_shapes(paper_shape_notebooks):
    """The paper scale's pipeline on ImageNet-named stand-in JPEGs at 224 px (Figure 1 and the variance table with
    few rows: C = 3 m and 2 |X|), counts cut to seconds: it runs to the end and publishes a complete card; nothing in
    it is a finding."""
    from compendium import scorecard

    executed = paper_shape_notebooks["mean_to_extreme"]  # run by the suite's book work (tests/test_paper_shapes.py)
    if isinstance(executed, Exception):
        raise executed
    rows = {r["key"]: r for r in scorecard.read_card(executed)["rows"]}
    undecided = [k for k, r in rows.items() if r["expect"] in scorecard.CHECKED and not r["checked"]]
    assert list(rows) == [c.key for c in chapter.CLAIMS] and not undecided, undecided
    assert "5 ImageNet validation images at 224 px, at `paper` scale" in rows["mte-fig4"]["reason"]
    assert "C = 3 m ≈ " in rows["mte-fig1"]["found"]
    assert "$C=3m$ instead of the paper's $C$ and $\\sigma$" in rows["mte-fig1"]["reason"]
