"""The "From Mean to Extreme" chapter (Riess et al. 2025): its settings at each scale and the pipelines its notebook
calls.  Each pipeline runs one experiment of the paper (the section, proposition, equation or figure is named in its
docstring) and returns its numbers; the notebook checks them against the paper's claims and shows them."""
from __future__ import annotations

import importlib.util
import textwrap
from dataclasses import dataclass, replace
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch
from scipy import stats

from compendium import checks, data, metrics, plotting, standin, validation
from compendium.attacks import linear_layer as attack
from compendium.bounds import mean_to_extreme as mte
from compendium.chapters.base import Settings as _Settings
from compendium.chapters.base import IMAGE_SOURCES, check_image_source, resolve
from compendium.scorecard import DIFFERS, IN_SHAPE, REPRODUCED, Claim

TITLE = "From mean to extreme: formal DP bounds on the success of real-world reconstruction attacks"
#: seconds its notebook runs on one core of a quiet 2-core machine (a book build, two chapters at once)
SECONDS = {"ci": 23, "book": 28}

SCALES = {
    "ci": dict(n_images=6, resolution=16, fig1_resolution=32, fig4_sigmas=(1e-4, 1e-3, 1e-2, 1e-1), n_mc=20_000,
               n_opacus=200, image_source="photos", imagenet_dir=None, use_lpips=False,
               subsampling_sigmas=(1.0,), subsampling_sample_rates=(0.01,),
               subsampling_steps=(100,), ratio_rows=50, variance_draws=20, variance_clip_ratio=10.0,
               fig1_clip_ratio=20.0, fig2_samples=20, fig5_draws=50, prop7_draws=40),
    "book": dict(n_images=20, resolution=64, fig1_resolution=64,
                 fig4_sigmas=tuple(float(s) for s in torch.logspace(-4, -1, 13)), n_mc=200_000, n_opacus=2000,
                 image_source="photos", imagenet_dir=None, use_lpips=True,
                 subsampling_sigmas=(0.7, 1.0), subsampling_sample_rates=(0.001, 0.01),
                 subsampling_steps=(1000,), ratio_rows=200, variance_draws=50, variance_clip_ratio=10.0,
                 fig1_clip_ratio=20.0, fig2_samples=100, fig5_draws=200, prop7_draws=200),
    "paper": dict(n_images=100, resolution=224, fig1_resolution=224,
                  fig4_sigmas=tuple(float(s) for s in torch.logspace(-4, -1, 50)), n_mc=1_000_000, n_opacus=2000,
                  image_source="imagenet", imagenet_dir="data/imagenet-val", use_lpips=True,
                  subsampling_sigmas=(0.5, 0.7, 1.0, 2.0), subsampling_sample_rates=(0.001, 0.01, 0.1),
                  subsampling_steps=(100, 1000), ratio_rows=200, variance_draws=50, variance_clip_ratio=10.0,
                  fig1_clip_ratio=None, fig2_samples=100, fig5_draws=200, prop7_draws=200),
}


@dataclass(frozen=True)
class Settings(_Settings):
    """Settings of the "From Mean to Extreme" chapter.

    ``n_images`` images of ``resolution`` pixels for Figures 4 and 5 (``fig4_sigmas`` the noise multipliers of
    Figure 4); ``fig1_resolution`` the side of the images of Figures 1 and 6; ``n_mc`` the Monte-Carlo sample size of
    the distributional checks; ``n_opacus`` the number of reconstructions drawn through opacus for the goodness-of-fit
    tests of the real attack; ``image_source``, ``imagenet_dir`` and ``use_lpips`` as in the Ziller chapter's
    settings (the perceptual metric here is LPIPS-VGG, as in the paper); ``subsampling_*`` the DP-SGD settings
    (noise multipliers, Poisson sampling rates, steps) on which the exact prior-aware bound under subsampling is put
    beside the authors' Edgeworth approximation.  The counts of the smaller checks: ``ratio_rows`` gradient rows of
    the ratio attack (eq. 15); ``variance_draws`` opacus reconstructions per row of the variance table, whose image is
    clipped at ``variance_clip_ratio`` times its norm (so ``M* = ceil(variance_clip_ratio^2)``); Figure 1's clipping
    bound ``fig1_clip_ratio`` times the smallest norm at ``sigma = 2e-3`` (``None``: the paper's ``sigma`` and
    ``C``); ``fig2_samples`` samples of Figure 2 (the paper's 100); ``fig5_draws`` reconstructions per scale factor
    of Figure 5; ``prop7_draws`` averages per ``k`` of Prop. 7.
    """

    n_images: int
    resolution: int
    fig1_resolution: int
    fig4_sigmas: tuple[float, ...]
    n_mc: int
    n_opacus: int
    image_source: str
    imagenet_dir: str | None
    use_lpips: bool
    subsampling_sigmas: tuple[float, ...]
    subsampling_sample_rates: tuple[float, ...]
    subsampling_steps: tuple[int, ...]
    ratio_rows: int
    variance_draws: int
    variance_clip_ratio: float
    fig1_clip_ratio: float | None
    fig2_samples: int
    fig5_draws: int
    prop7_draws: int

    def validate(self) -> None:
        validation.integer("n_images", self.n_images, minimum=5)
        validation.integer("resolution", self.resolution, minimum=8)
        validation.integer("fig1_resolution", self.fig1_resolution, minimum=8)
        validation.grid("fig4_sigmas", self.fig4_sigmas, what="noise multipliers")
        validation.integer("n_mc", self.n_mc, minimum=10_000)
        validation.integer("n_opacus", self.n_opacus, minimum=200)
        check_image_source(self.image_source, self.imagenet_dir)
        validation.grid("subsampling_sigmas", self.subsampling_sigmas, what="noise multipliers")
        for q in validation.grid("subsampling_sample_rates", self.subsampling_sample_rates):
            validation.number("subsampling_sample_rates", q, above=0.0, below=1.0)
        for t in self.subsampling_steps:
            validation.integer("subsampling_steps", t, minimum=30, what="the authors' approximation needs T >= 30")
        validation.integer("ratio_rows", self.ratio_rows, minimum=20)
        validation.integer("variance_draws", self.variance_draws, minimum=5)  # a standard error per row
        validation.number("variance_clip_ratio", self.variance_clip_ratio, at_least=1.5)  # M* above the printed M
        if self.fig1_clip_ratio is not None:
            validation.number("fig1_clip_ratio", self.fig1_clip_ratio, at_least=1.5)
        validation.integer("fig2_samples", self.fig2_samples, minimum=20)  # KS tests per regime
        validation.integer("fig5_draws", self.fig5_draws, minimum=5)
        validation.integer("prop7_draws", self.prop7_draws, minimum=20)


def settings(scale: str = "book", device: str = "auto", seed: int = 0, **overrides) -> Settings:
    """The chapter's settings: the scale's values, replaced by every override that is not ``None``."""
    return resolve(Settings, SCALES, scale, device, seed, overrides)


#: The ImageNet-named stand-in JPEGs of a paper-shape run: more than the five of Figure 6, so that each figure's
#: seeded draw picks among them.
PAPER_SHAPE_IMAGES = 12


def paper_shape(folder: str | Path) -> dict:
    """The paper pipeline at the paper's shapes with its counts cut to seconds (:func:`compendium.book.
    execute_paper_shape`): ``PAPER_SHAPE_IMAGES`` ImageNet-named stand-in JPEGs (:func:`compendium.standin.
    imagenet_val`) in ``folder/imagenet-val``, read at the paper's 224 px for Figures 1 and 4-6; Figure 4 at the ends
    of the paper's noise multipliers only; the smallest image, Monte-Carlo and opacus counts the settings allow; the
    224 px checks of the variance table and Figure 1 with few rows (clipping at 2 and 3 times the smallest norm:
    ``M*`` of 4 and 9 instead of the hundreds the paper's ``C`` needs); one DP-SGD setting for the section on
    subsampling; LPIPS-VGG only where the ``lpips`` extra is installed.  Returns the notebook's parameters."""
    imagenet = standin.imagenet_val(Path(folder) / "imagenet-val", n=PAPER_SHAPE_IMAGES)
    paper = SCALES["paper"]
    return dict(scale="paper", imagenet_dir=str(imagenet), n_images=5, n_mc=10_000, n_opacus=200,
                fig4_sigmas=[paper["fig4_sigmas"][0], paper["fig4_sigmas"][-1]], subsampling_sigmas=[1.0],
                subsampling_sample_rates=[0.01], subsampling_steps=[100], ratio_rows=50, variance_draws=8,
                variance_clip_ratio=2.0, fig1_clip_ratio=3.0, fig2_samples=20, fig5_draws=8, prop7_draws=20,
                use_lpips=importlib.util.find_spec("lpips") is not None)


# ---------------------------------------------------------------------------------------------------------------
# Pipelines: each computes one experiment of the notebook and returns its numbers; the notebook checks them.
# The random generators are passed in, so that the notebook's draws come in the same order as before.
# ---------------------------------------------------------------------------------------------------------------
def generators(cfg: Settings, device) -> tuple[np.random.Generator, torch.Generator, torch.Generator]:
    """The chapter's three random streams, all seeded with ``cfg.seed``: numpy (the synthetic targets), torch on
    ``device`` (the opacus attacks) and torch on the CPU (the memory-light sampler of the Monte-Carlo checks)."""
    return (np.random.default_rng(cfg.seed), torch.Generator(device=device).manual_seed(cfg.seed),
            torch.Generator().manual_seed(cfg.seed))


def chapter_images(cfg: Settings, device) -> tuple[torch.Tensor, torch.Tensor]:
    """The images of Figures 4-5 (``cfg.n_images`` at ``cfg.resolution``) and the four of Figure 1 (at
    ``cfg.fig1_resolution``), on ``device``; raises before any work when the paper scale's ImageNet folder is
    missing (Appendix C of the paper uses 100 ImageNet validation images)."""
    images = data.chapter_images(cfg.image_source, cfg.n_images, cfg.resolution, cfg.seed, cfg.imagenet_dir)
    fig1 = data.chapter_images(cfg.image_source, 4, cfg.fig1_resolution, cfg.seed + 1, cfg.imagenet_dir)
    return images.to(device), fig1.to(device)


def lpips_available(cfg: Settings) -> tuple[bool, str]:
    """Whether LPIPS-VGG (the perceptual metric of Figure 4) is requested and usable, and why not (wrapped to lines of
    at most 80 characters, for the notebook's output)."""
    ok, reason = metrics.lpips_status("vgg") if cfg.use_lpips else (False, "not requested at this scale")
    return ok, textwrap.fill(reason, 80)


def variance_table(x0: torch.Tensor, *, C: float, sigma: float, n_draws: int,
                   generator: torch.Generator) -> pd.DataFrame:
    """Variance of the rescaled row mean through opacus against eq. (17) (Props. B.2, 1, corrected eq. 18).

    ``n_draws`` opacus reconstructions of the one image ``x0`` for ``M`` in {1, printed eq. (18), ``M*``, ``4 M*``}
    and for ``M = 1`` with loss scale ``c = sqrt(M*)``: the sample variance of ``X_hat - X`` with its standard error
    (``checks.variance_se``), the closed form ``sigma^2 max(||X||^2, C^2 / (M c^2))``
    (``mte.reconstruction_variance``), and the p-value of a two-sample KS test against the memory-light sampler
    ``attack.sample_rows_release`` (at most 200 000 coordinates of each).  One row per configuration.

    Prop. B.1 (the plain mean is biased): the rows' plain mean, i.e. the average of the M noisy opacus rows before
    ``reconstruct_rows`` divides it by the known scale ``beta c`` (eq. 16; recovered here by multiplying that scale
    back), has expectation ``beta c X`` (the paper's ``nabla_W_j = beta_C(X) d_j X + xi_j`` with ``d_j = c``).  Its
    coefficient along ``X``, ``<mean of rows, X> / ||X||^2`` averaged over the draws, with its standard error, against
    ``beta c`` of eq. (10), ``beta = min(1, C / (sqrt(M) |c| ||X||))``.
    """
    norm = float(x0.norm())
    m_star, m_printed = mte.optimal_rows(C, min_norm=norm), mte.optimal_rows_as_printed(C, min_norm=norm)
    batch = x0.expand(n_draws, *x0.shape[1:]).contiguous()
    rows = []
    for M, c in ((1, 1.0), (m_printed, 1.0), (m_star, 1.0), (4 * m_star, 1.0), (1, float(np.sqrt(m_star)))):
        rec = attack.reconstruct_rows(batch, C, sigma, rows=M, loss_scale=c, generator=generator)
        resid = (rec - x0).double().cpu().numpy().ravel()
        var = resid.var()
        beta_c = c * min(1.0, C / (np.sqrt(M) * abs(c) * norm))  # eq. (10) times the loss scale
        opacus_scale = c * min(1.0, C / (np.sqrt(M) * abs(c) * norm + attack.OPACUS_CLIP_EPS))  # what it divides by
        plain = (rec * opacus_scale).double().flatten(1).cpu().numpy()  # the M rows' plain mean, per draw
        coefficient, coefficient_se = checks.mean_se(plain @ x0.double().flatten().cpu().numpy() / norm**2)
        light = attack.sample_rows_release(batch, C, sigma, rows=M, loss_scale=c, generator=generator)
        step = max(1, resid.size // 200_000)
        p_two = stats.ks_2samp(resid[::step], (light - x0).double().cpu().numpy().ravel()[::step]).pvalue
        rows.append({"M": M, "loss scale c": c, "M c²": M * c * c, "Var(X̂ − X) opacus": var,
                     "± SE": checks.variance_se(var, resid.size),
                     "σ² max(|X|², C²/(Mc²))": float(mte.reconstruction_variance(sigma, norm=norm, C=C, M=M,
                                                                                  loss_scale=c)),
                     "rows' plain mean / X": coefficient, "rows' mean SE": coefficient_se, "β c (eq. 10)": beta_c,
                     "KS p vs memory-light sampler": p_two})
    return pd.DataFrame(rows)


def shrinkage_counterexample(rng: np.random.Generator, generator: torch.Generator, n_mc: int) -> pd.DataFrame:
    """The shrinkage ``a X_hat``, ``a = 1 / (1 + N sigma^2)``, against the MVUE (Theorem 1, Props. 2 and 3).

    For ``(N, sigma)`` in {(10, 1), (64, 0.1), (3072, 0.01)} a target ``U(0, 1)^N`` drawn from ``rng`` and
    ``min(n_mc / 10, 2e6 / N)`` releases of the optimal attack: the mean MSE of ``X_hat`` and of ``a X_hat`` with
    their standard errors and closed forms (eq. 21 and ``mte.shrinkage_expected_mse``), the threshold ``eta`` midway
    between the two expected MSEs, ``eta = (1 + a) sigma^2 ||X||^2 / 2`` (the shrinkage's expected MSE is
    ``a sigma^2 ||X||^2``), Prop. 3's ``gamma(eta)`` (eq. 24, with the target's own norm as ``m``: the MVUE's exact
    success probability), and the frequencies of ``MSE(X_hat) <= eta`` (``mvue_hit``, which must match ``gamma``) and
    of ``MSE(a X_hat) <= eta`` (``hit``).  One row per case, with the number of draws.
    """
    rows = []
    for n, s in ((10, 1.0), (64, 0.1), (3072, 0.01)):
        x = torch.tensor(rng.random(n))[None]
        nx = float(x.norm())
        rel = attack.sample_rows_release(x, nx, s, rows=1, n_draws=min(n_mc // 10, 2_000_000 // n),
                                         generator=generator)[:, 0]
        a = float(mte.shrinkage_factor(n, sigma=s))
        mse_mvue = metrics.mse(x.expand_as(rel), rel).numpy()
        mse_shrunk = metrics.mse(x.expand_as(rel), a * rel).numpy()
        m1, se1 = checks.mean_se(mse_mvue)
        m2, se2 = checks.mean_se(mse_shrunk)
        expected = float(mte.expected_mse(sigma=s, norm=nx))
        eta = 0.5 * (1 + a) * expected  # midway between E[MSE(a X_hat)] = a * expected and E[MSE(X_hat)]
        rows.append({"N": n, "sigma": s, "mvue": m1, "mvue_se": se1, "mvue_theory": mte.expected_mse(sigma=s, norm=nx),
                     "shrunk": m2, "shrunk_se": se2, "shrunk_theory": mte.shrinkage_expected_mse(s, norm=nx, N=n),
                     "eta": eta, "gamma": float(mte.rero_gamma_mse(eta, N=n, sigma=s, min_norm=nx)),
                     "mvue_hit": float(np.mean(mse_mvue <= eta)), "hit": float(np.mean(mse_shrunk <= eta)),
                     "draws": len(mse_shrunk)})
    return pd.DataFrame(rows)


def shrinkage_summary(frame: pd.DataFrame) -> pd.DataFrame:
    """The shown table of :func:`shrinkage_counterexample`: the paper's ``gamma(eta)`` between the two success
    frequencies (the MVUE's, which attains it, and the shrinkage's, which exceeds it)."""
    return pd.DataFrame([{"N": r.N, "σ": r.sigma, "E[MSE] MVUE": r.mvue, "E[MSE] shrinkage": r.shrunk, "η": r.eta,
                          "P(MSE(MVUE) ≤ η)": r.mvue_hit, "paper's γ(η) (24)": r.gamma,
                          "P(MSE(shrunk) ≤ η)": r.hit} for r in frame.itertuples()])


def rero_on_a_data_set(rng: np.random.Generator, generator: torch.Generator, n_mc: int,
                       sigma: float = 0.3) -> pd.DataFrame:
    """Success rates on a data set against the ReRo bounds of Props. 3-5 (eqs. 24-25) and the exact PSNR law.

    A data set of 100 samples ``U(0, 1)^10`` drawn from ``rng``, smallest norm ``m``; for its smallest-, median- and
    largest-norm samples, ``n_mc`` releases of the optimal attack at noise multiplier ``sigma``.  Thresholds
    ``eta = sigma^2 m^2 / 2`` for the MSE and the equivalent ``10 log10(1 / eta)`` dB for the PSNR (nominal range
    ``R = 1``).  Columns: the sample, its norm, the Monte-Carlo ``P(MSE <= eta)`` and the paper's ``gamma(eta)``
    (eq. 24), the Monte-Carlo ``P(PSNR >= eta)``, its exact value for this target (eqs. 62-63) and the paper's bound
    (25).
    """
    D = torch.tensor(rng.random((100, 10)))
    d_norms = D.norm(dim=1).numpy()
    m_D = float(d_norms.min())
    eta_m = 0.5 * sigma**2 * m_D**2
    eta_p = 10 * np.log10(1 / (0.5 * sigma**2 * m_D**2))
    rows = []
    for which, i in (("smallest norm", int(d_norms.argmin())), ("median norm", int(np.argsort(d_norms)[50])),
                     ("largest norm", int(d_norms.argmax()))):
        x = D[i : i + 1]
        rel = attack.sample_rows_release(x, float(x.norm()), sigma, rows=1, n_draws=n_mc, generator=generator)[:, 0]
        mse_x = metrics.mse(x.expand_as(rel), rel).numpy()
        psnr_x = metrics.psnr(x.expand_as(rel), rel, data_range=1.0).numpy()  # nominal range R = 1 (Props. 4-5)
        rows.append({"sample": which, "|X|": float(x.norm()), "P(MSE ≤ η) MC": float(np.mean(mse_x <= eta_m)),
                     "paper's γ(η) (24)": float(mte.rero_gamma_mse(eta_m, N=10, sigma=sigma, min_norm=m_D)),
                     "P(PSNR ≥ η) MC": float(np.mean(psnr_x >= eta_p)),
                     "exact (per target)": float(mte.psnr_success_probability(eta_p, N=10, sigma=sigma,
                                                                              norm=float(x.norm()), data_range=1.0)),
                     "paper's bound (25)": float(mte.rero_gamma_psnr(eta_p, N=10, sigma=sigma, min_norm=m_D,
                                                                     data_range=1.0))})
    return pd.DataFrame(rows)


#: Font sizes of the multi-panel figures: with figures about 7.5 inches wide (the page's column at 110 dpi), tick and
#: axis labels come out at about the size of the body text.
READABLE_FONTS = {"font.size": 12, "axes.titlesize": 13, "axes.labelsize": 13, "xtick.labelsize": 12,
                  "ytick.labelsize": 12, "legend.fontsize": 12, "legend.title_fontsize": 12, "figure.titlesize": 13}

FIG2_SIGMAS = (1e-2, 1e-1, 1.0, 10.0)
FIG2_ROWS = 100


def figure2_regimes(rng: np.random.Generator, generator: torch.Generator, device,
                    samples: int = 100) -> tuple[pd.DataFrame, dict, np.ndarray]:
    """Figure 2 of the paper: MSE, PSNR and NCC of ``samples`` samples ``U(0, 1)^4`` (the paper's 100) in three
    regimes of ``C``.

    The samples are drawn from ``rng``; each is attacked through opacus with ``M = 100`` rows at every ``sigma`` of
    :data:`FIG2_SIGMAS` and ``C`` in {``m``, ``sqrt(M) m``, ``10 sqrt(M) max ||X||``} (``m`` the smallest norm).
    Returns one row per (sample, regime, sigma) with the MSE, NCC, PSNR (nominal range 1, as in the authors' code),
    ``scaled`` = MSE / (``sigma^2 max(||X||^2, C^2 / M) / 4``), which is ``chi^2_4`` by Theorem 2 with eq. (17)'s
    variance, and ``scaled_optimal`` = MSE / (``sigma^2 ||X||^2 / 4``), the same with the optimal variance of
    eq. (20); the regimes ``{label: C}``; and the samples' norms.
    """
    U = torch.tensor(rng.random((samples, 4)), dtype=torch.float32).to(device)
    u_norms = U.norm(dim=1).cpu().numpy()
    M2 = FIG2_ROWS
    regimes = {"C = m": float(u_norms.min()), "C = √M m": float(np.sqrt(M2) * u_norms.min()),
               "C = 10 √M max‖X‖": float(10 * np.sqrt(M2) * u_norms.max())}
    frames = []
    for label, C in regimes.items():
        for s in FIG2_SIGMAS:
            rec = attack.reconstruct_rows(U, C, s, rows=M2, generator=generator)
            frame = pd.DataFrame({name: metrics.ALL[name](U, rec).cpu().numpy() for name in ("MSE", "NCC")})
            frame["PSNR"] = metrics.psnr(U, rec, data_range=1.0).cpu().numpy()
            frame["scaled"] = frame.MSE / (s**2 * np.maximum(u_norms**2, C**2 / M2) / 4)
            frame["scaled_optimal"] = frame.MSE / (u_norms.astype(float) ** 2 * s**2 / 4)
            frame["regime"], frame["sigma"] = label, s
            frames.append(frame)
    return pd.concat(frames, ignore_index=True), regimes, u_norms


def plot_figure2(fig2: pd.DataFrame, regimes: dict, u_norms: np.ndarray):
    """The 3 x 3 panel of Figure 2 from :func:`figure2_regimes`: boxes of the samples per ``sigma``, the 5-95 %
    band of Theorem 2's law at the smallest and largest norm (MSE, PSNR with ``R = 1``) and the bound (28) (NCC)."""
    with plt.rc_context(READABLE_FONTS):
        fig, axes = plt.subplots(3, 3, figsize=(8.4, 8.4), sharex=True)
        grid_s = np.geomspace(5e-3, 20, 100)
        sig2 = list(FIG2_SIGMAS)
        for i, label in enumerate(regimes):
            sub = fig2[fig2.regime == label]
            sd_scale = np.maximum(np.array([u_norms.min(), u_norms.max()]) ** 2, regimes[label] ** 2 / FIG2_ROWS)
            for j, metric in enumerate(["MSE", "PSNR", "NCC"]):
                ax = axes[i, j]
                # manage_ticks=False: the axis's own ticks, whose labels carry a minus sign (−), not "-2.0"
                ax.boxplot([sub[sub.sigma == s][metric] for s in sig2], positions=np.log10(sig2), widths=0.3,
                           patch_artist=True, boxprops={"facecolor": "limegreen", "alpha": 0.5}, manage_ticks=False)
                if metric == "MSE":
                    lo = grid_s**2 * sd_scale[0] / 4 * stats.chi2(4).ppf(0.05)
                    hi = grid_s**2 * sd_scale[1] / 4 * stats.chi2(4).ppf(0.95)
                    ax.fill_between(np.log10(grid_s), lo, hi, color=plotting.BOUND, alpha=0.2,
                                    label="theory, 5-95 %")
                    ax.set_yscale("log")
                elif metric == "PSNR":
                    lo = 10 * np.log10(4 / (grid_s**2 * sd_scale[1] * stats.chi2(4).ppf(0.95)))
                    hi = 10 * np.log10(4 / (grid_s**2 * sd_scale[0] * stats.chi2(4).ppf(0.05)))
                    ax.fill_between(np.log10(grid_s), lo, hi, color=plotting.BOUND, alpha=0.2,
                                    label="theory, 5-95 %")
                else:
                    ax.plot(np.log10(grid_s), mte.ncc_bound(4, sigma=grid_s), "k--", label="bound (28)")
                ax.set_ylabel(f"{label}\n{metric}" if j == 0 else metric)
                if i == 2:
                    ax.set_xlabel(r"$\log_{10}\sigma$")
                if i == 0:
                    ax.set_title(metric + (" [dB, R = 1]" if metric == "PSNR" else ""))
        handles = [*zip(*axes[0, 0].get_legend_handles_labels()), *zip(*axes[0, 2].get_legend_handles_labels())]
        fig.legend([h for h, _ in handles], [label for _, label in handles], loc="outside lower center", ncol=2)
        fig.suptitle(f"{len(u_norms)} samples of $\\mathcal{{U}}(0,1)^4$,\n$M = {FIG2_ROWS}$, one opacus step each")
    return fig


def plot_figure3():
    """Figure 3 of the paper in closed form: ``gamma(eta) = P(MSE <= eta)`` (Theorem 2, eq. 23; left) and
    ``P(PSNR >= eta)`` (eqs. 62-63, ``R = 1``; right) varying ``sigma``, ``N`` and the (smallest) norm around
    ``sigma = N = ||X|| = 1``, with the expected MSE (eq. 21) and expected PSNR (``mte.psnr_mean``) dashed.  The
    x-ranges are the union of the 1-99 % quantiles of the nine laws.  Returns the figure and the expected PSNRs
    ``{(varied quantity, value): dB}``."""
    fixed = {"sigma": 1.0, "N": 1, "norm": 1.0}
    variations = {"σ": ("sigma", [0.1, 1.0, 10.0]), "N": ("N", [1, 10, 1000]),
                  "smallest\nnorm ‖X‖": ("norm", [0.1, 1.0, 10.0])}
    eta_mse = np.geomspace(1.5709e-6, 663.49, 400)
    eta_psnr = np.linspace(-28.218, 58.039, 400)
    with plt.rc_context(READABLE_FONTS):
        fig, axes = plt.subplots(3, 2, figsize=(7.6, 7.8))
        expected_psnr = {}
        for i, (name, (key, values)) in enumerate(variations.items()):
            colours = plt.cm.viridis(np.linspace(0, 0.85, len(values)))
            for v, colour in zip(values, colours):
                p = {**fixed, key: v}
                axes[i, 0].plot(eta_mse, mte.mse_cdf(eta_mse, N=p["N"], sigma=p["sigma"], norm=p["norm"]), color=colour,
                                label=f"{v:g}")
                axes[i, 0].axvline(float(mte.expected_mse(sigma=p["sigma"], norm=p["norm"])), color=colour, ls="--",
                                   lw=1)
                axes[i, 1].plot(eta_psnr, mte.psnr_success_probability(eta_psnr, N=p["N"], sigma=p["sigma"],
                                                                       norm=p["norm"], data_range=1.0),
                                color=colour)
                expected_psnr[(name, v)] = float(mte.psnr_mean(p["N"], sigma=p["sigma"], norm=p["norm"],
                                                               data_range=1.0))
                axes[i, 1].axvline(expected_psnr[(name, v)], color=colour, ls="--", lw=1)
            axes[i, 0].set(xscale="log", xlabel="MSE threshold η", ylabel="P(MSE ≤ η)", ylim=(-0.1, 1.1))
            axes[i, 1].set(xlabel="PSNR threshold η [dB]", ylabel="P(PSNR ≥ η)", ylim=(-0.1, 1.1))
            # the legend beside the row, outside the axes, where it covers no curve
            axes[i, 1].legend(*axes[i, 0].get_legend_handles_labels(), title=name, loc="center left",
                              bbox_to_anchor=(1.02, 0.5), frameon=False)
        fig.suptitle("Closed form; dashed: expected values")
    return fig, expected_psnr


def ncc_identity(rng: np.random.Generator) -> tuple[float, float]:
    """Both sides of Prop. B.4's identity (eq. 66) for a target ``U(0, 1)^50`` and noise ``N(0, 0.3^2)`` drawn
    from ``rng``: the sample NCC of ``X`` and ``X + zeta`` (``metrics.ncc``) and
    ``sigma_X / sigma_Xhat + (mean(x zeta) - mean(x) mean(zeta)) / (sigma_X sigma_Xhat)``."""
    x = torch.tensor(rng.random(50))[None]
    zeta = torch.tensor(rng.normal(0, 0.3, 50))[None]
    xh = x + zeta
    sx, sxh = x.std(unbiased=False), xh.std(unbiased=False)
    rhs = sx / sxh + ((x * zeta).mean() - x.mean() * zeta.mean()) / (sx * sxh)
    return float(metrics.ncc(x, xh)[0]), float(rhs)


def ncc_sample_law(rng: np.random.Generator, generator: torch.Generator, n_mc: int):
    """The sample NCC of the optimal reconstruction against Prop. 6 (eq. 28) and its exact law.

    For ``(N, sigma)`` in {(4, 0.1), (4, 1), (10, 1), (3072, 0.1)}, a target ``U(0, 1)^N`` from ``rng`` and
    ``min(n_mc, 4e6 / N)`` releases: the mean sample NCC and its standard error, Prop. 6's value (28), the "bound"
    ``(1 + N sigma^2)^(-1/2)``, how often the sample NCC exceeds it, and that frequency under the exact law
    (non-central t, ``mte.ncc_cdf_exact``).  Returns the table (with the number of draws) and, per row, the sample
    and its signal-to-noise ratio ``rho`` (for the notebook's goodness-of-fit test).
    """
    rows, samples = [], []
    for n, s in ((4, 0.1), (4, 1.0), (10, 1.0), (3072, 0.1)):
        x = torch.tensor(rng.random(n))[None]
        nx, var = float(x.norm()), float(x.var(unbiased=False))
        rel = attack.sample_rows_release(x, nx, s, rows=1, n_draws=min(n_mc, 4_000_000 // n), generator=generator)[:, 0]
        r = metrics.ncc(x.expand_as(rel), rel).numpy()
        rho = float(mte.ncc_rho(s, norm=nx, variance=var, N=n))
        bound = float(mte.ncc_bound(n, sigma=s))
        _, se = checks.mean_se(r)
        rows.append({"N": n, "σ": s, "mean sample NCC": r.mean(),
                     "paper's Prop. 6 (28)": float(mte.ncc_limit(s, norm=nx, variance=var)),
                     "paper's bound (28)": bound, "P(NCC > bound) MC": float(np.mean(r > bound)),
                     "exact law": float(1 - mte.ncc_cdf_exact(bound, N=n, rho=rho)), "SE of the mean": se,
                     "draws": len(r)})
        samples.append((n, r, rho))
    return pd.DataFrame(rows), samples


def figure4_records(images: torch.Tensor, sigmas, generator: torch.Generator, lpips_net: str | None = None,
                    C: float = 1.0, rows: int = 10) -> pd.DataFrame:
    """Figure 4 of the paper (Appendix C): every metric of ``metrics.score`` (MSE, PSNR, NCC, NMI, SSIM, and LPIPS
    with ``lpips_net``) of the opacus reconstructions of ``images`` with ``C = 1`` and ``M = 10`` rows (every image
    clipped) at each noise multiplier of ``sigmas``; one row per (image, sigma)."""
    records = []
    for s in sigmas:
        rec = attack.reconstruct_rows(images, C, s, rows=rows, generator=generator)
        frame = pd.DataFrame(metrics.score(images, rec, lpips_net=lpips_net))
        frame["C"], frame["sigma"], frame["image"] = C, s, np.arange(len(images))
        records.append(frame)
    return pd.concat(records, ignore_index=True)


def figure4_mse_theory(norms: np.ndarray, N: int, sigmas) -> tuple[np.ndarray, np.ndarray]:
    """Per ``sigma``, the mean over the images of the expected MSE ``sigma^2 ||X||^2`` (Prop. 2, eq. 21) and the
    standard deviation of the images' mean MSE from Theorem 2's variance ``2 sigma^4 ||X||^4 / N`` (eq. 22)."""
    norms = np.asarray(norms).astype(float)
    sig = np.array(sigmas)
    e_mse = np.array([np.mean(mte.expected_mse(sigma=s, norm=norms)) for s in sig])
    sd_mse = np.array([np.sqrt(np.sum(mte.mse_distribution(N=N, sigma=s, norm=norms).var())) / len(norms)
                       for s in sig])
    return e_mse, sd_mse


def plot_figure4(fig4: pd.DataFrame, images: torch.Tensor, norms: np.ndarray):
    """The metrics of Figure 4 from :func:`figure4_records`, three panels per row (MSE, PSNR, NCC; NMI, SSIM[, LPIPS]):
    the mean over the images and its 10-90 % band against ``sigma``, with the per-image means of Prop. 2 (MSE) and of
    Prop. 6's value and bound (28) (NCC); one legend below the panels (the sixth panel is empty when LPIPS is
    absent)."""
    sig = np.array(sorted(fig4.sigma.unique()))
    norms = np.asarray(norms).astype(float)
    variances = images.double().cpu().numpy().reshape(len(images), -1).var(axis=1)
    e_mse, _ = figure4_mse_theory(norms, images[0].numel(), sig)
    exact = "theory: Prop. 2's mean, Prop. 6 (large N)"  # MSE and NCC panels: one style, one legend entry
    theory = {"MSE": [(e_mse, exact, plotting.EXACT, ":")],
              "NCC": [([np.mean(mte.ncc_limit(s, norm=norms, variance=variances)) for s in sig], exact,
                       plotting.EXACT, ":"),
                      (mte.ncc_bound(images[0].numel(), sigma=sig), "bound (28)", plotting.DIM_BOUND, "--")]}
    shown = ["MSE", "PSNR", "NCC", "NMI", "SSIM"] + (["LPIPS"] if "LPIPS" in fig4 else [])
    with plt.rc_context(READABLE_FONTS):
        fig, axes = plt.subplots(2, 3, figsize=(7.4, 5.6), sharex=True)
        for ax, m in zip(axes.flat, shown):
            band = fig4.groupby("sigma")[m].agg(["mean", lambda v: v.quantile(0.1), lambda v: v.quantile(0.9)])
            ax.plot(band.index, band["mean"], "o-", ms=3, lw=1, color=plotting.EMPIRICAL,
                    label="mean (10–90 % band)")
            ax.fill_between(band.index, band.iloc[:, 1], band.iloc[:, 2], color=plotting.EMPIRICAL, alpha=0.2,
                            lw=0)
            for ys, label, colour, style in theory.get(m, []):
                ax.plot(sig, ys, style, color=colour, lw=1.6, label=label)
            ax.set(xscale="log", yscale="log" if m == "MSE" else "linear", title=m + (" [dB]" if m == "PSNR" else ""))
            ax.tick_params(labelbottom=True)
            ax.set_xlabel(r"$\sigma$")
        handles = {}
        for ax in axes.flat:
            for handle, label in zip(*ax.get_legend_handles_labels()):
                handles.setdefault(label, handle)
        if len(shown) < 6:
            axes[1, 2].axis("off")
        # below the panels: inside the empty sixth panel it widened that column and pushed the NCC panel away
        fig.legend(list(handles.values()), list(handles), loc="outside lower center", ncol=2)
        fig.suptitle(f"{len(images)} images, C = 1, M = 10,\nagainst the noise multiplier σ")
    return fig


def fig1_setting(cfg: Settings) -> str:
    """The data and the ``(sigma, C)`` of the counterpart of Figure 1, as a phrase of the prose: four images at
    ``cfg.fig1_resolution`` px with the paper's ``sigma = 5e-4``, ``C = 5000`` (``fig1_clip_ratio`` None) or with
    ``sigma = 2e-3`` and ``C`` that ratio times the smallest of their norms ``m``."""
    source = IMAGE_SOURCES[cfg.image_source]
    side = f"{cfg.fig1_resolution}×{cfg.fig1_resolution} px"
    if cfg.fig1_clip_ratio is None:
        sigma = plotting.written_numbers(f"{PAPER_FIG1_SIGMA:.0e}")
        return f"four {source} at {side} with the paper's σ = {sigma} and C = {PAPER_FIG1_C:g}"
    return (f"four {source} at {side} with σ = {plotting.written_numbers('2e-03')} and C = {cfg.fig1_clip_ratio:g} m, "
            "m the smallest of their norms")


def figure5_scaling(x0: torch.Tensor, seed: int, sigma: float = 1e-3, n_draws: int = 200,
                    scales=(1.0, 10.0, 100.0)) -> tuple[pd.DataFrame, dict]:
    """Figure 5 of the paper (Appendix C): the MSE is not scale invariant.

    The image ``x0`` scaled by each ``a`` of ``scales`` (the caption's ``a = 10``, the authors' code's 100), attacked
    through opacus ``n_draws`` times with ``C = a ||X||``, ``M = 1`` and the same noise draws for every ``a`` (a
    generator seeded with ``seed`` each time).  Returns per ``a`` the mean MSE and its standard error (theory
    ``(sigma a ||X||)^2``, eq. 21), the ratio of the mean MSE to that at ``a = 1``, the mean PSNR and the mean NCC,
    and the first reconstruction of each ``a`` (for the figure).
    """
    n0 = float(x0.norm())
    rows, examples = [], {}
    for a in scales:
        xa = a * x0
        same_draws = torch.Generator(device=x0.device).manual_seed(seed)  # the same noise for every a
        rec = attack.reconstruct_rows(xa.expand(n_draws, *x0.shape[1:]).contiguous(), a * n0, sigma, rows=1,
                                      generator=same_draws)
        mean, se = checks.mean_se(metrics.mse(xa.expand_as(rec), rec).cpu().numpy())
        examples[a] = rec[0].cpu()
        rows.append({"a": a, "mean MSE": mean, "ratio to a = 1": None,
                     "mean PSNR [dB]": float(metrics.psnr(xa.expand_as(rec), rec).mean()),
                     "mean NCC": float(metrics.ncc(xa.expand_as(rec), rec).mean()), "SE": se})
    fig5 = pd.DataFrame(rows)
    fig5["ratio to a = 1"] = fig5["mean MSE"] / fig5["mean MSE"].iloc[0]
    return fig5, examples


def plot_figure5(x0: torch.Tensor, fig5: pd.DataFrame, examples: dict):
    """The images of Figure 5: the original and one reconstruction per ``a``, min-max normalised for display (a
    display-time prior, as in the paper)."""
    tiles = [x0[0].cpu()] + [(r - r.min()) / (r.max() - r.min()) for r in examples.values()]
    labels = ["original X"] + [f"a = {a:g}: MSE {m:.3g}" for a, m in zip(fig5.a, fig5["mean MSE"])]
    return plotting.image_grid(torch.stack(tiles)[None], [""], labels,
                               title="The same picture, MSE × a²", size=2.2)


FIG6_SIGMAS = (1e-3, 2.154e-3, 4.642e-3, 1e-2)


def figure6_scenarios(cfg: Settings, device):
    """Figure 6 of the paper (Appendix C, Section 5.1): five images reconstructed with ``C = 1``, ``M = 1`` at each
    ``sigma`` of :data:`FIG6_SIGMAS` in three scenarios: (1) values in [0, 1] at ``cfg.fig1_resolution``, (2) the
    same in [0, 255], (3) values in [0, 1] at half the resolution; the same noise draws in every scenario.

    Returns the images, one record per (scenario, sigma) with the per-image MSE, PSNR and NCC arrays, and the
    reconstructions of scenario (1).
    """
    five = data.chapter_images(cfg.image_source, 5, cfg.fig1_resolution, cfg.seed + 2, cfg.imagenet_dir).to(device)
    half = torch.nn.functional.interpolate(five, scale_factor=0.5, mode="area")
    scenarios = {"(1) [0, 1]": five, "(2) [0, 255]": 255 * five, f"(3) [0, 1], {cfg.fig1_resolution // 2} px": half}
    table6, tiles = [], []
    for label, xs in scenarios.items():
        for s in FIG6_SIGMAS:
            g6 = torch.Generator(device=device).manual_seed(cfg.seed + int(s * 1e6))  # the same draws in every scenario
            rec = attack.reconstruct_rows(xs, 1.0, s, rows=1, generator=g6)
            table6.append({"scenario": label, "σ": s, "MSE": metrics.mse(xs, rec).cpu().numpy(),
                           "PSNR": metrics.psnr(xs, rec).cpu().numpy(), "NCC": metrics.ncc(xs, rec).cpu().numpy()})
            if label.startswith("(1)"):
                tiles.append(rec.cpu())
    return five, table6, tiles


def figure6_summary(table6: list[dict]) -> pd.DataFrame:
    """Mean MSE, PSNR and NCC per scenario and ``sigma`` of :func:`figure6_scenarios`."""
    return pd.DataFrame([{"scenario": r["scenario"], "σ": r["σ"], "mean MSE": r["MSE"].mean(),
                          "mean PSNR [dB]": r["PSNR"].mean(), "mean NCC": r["NCC"].mean()} for r in table6])


def plot_figure6(five: torch.Tensor, tiles: list[torch.Tensor]):
    """The images of Figure 6, scenario (1): the originals (with their norms) and their reconstructions per sigma."""
    return plotting.image_grid(torch.stack([five.cpu(), *tiles], dim=0),
                               ["original"] + [f"σ = {s:.3g}" for s in FIG6_SIGMAS],
                               [f"‖X‖ = {float(v):.1f}" for v in five.flatten(1).norm(dim=1).cpu()],
                               title="Scenario (1)")


# ---------------------------------------------------------------------------------------------------------------
# The scorecard: every result the paper states, decided in the notebook (compendium.scorecard)
# ---------------------------------------------------------------------------------------------------------------
PAPER = "Riess et al. (2025)"
ERRATA_TABLE = "mte-errata-table"
#: Rows of the errata table that no claim of the scorecard decides, and why.
ERRATA_ELSEWHERE = {7: "the authors' code, not the paper: its Edgeworth approximation is checked on the calculator "
                       "page"}
#: Figure 1 of the paper: noise multiplier, clipping bound and the large number of rows (ImageNet, N = 224 x 224 x 3)
PAPER_FIG1_SIGMA, PAPER_FIG1_C, PAPER_FIG1_M = 5e-4, 5000.0, 1000
#: Figure 2 of the paper: samples of U(0, 1)^dim, their dimension (the caption's) and the rows M
PAPER_FIG2_SAMPLES, PAPER_FIG2_DIM, PAPER_FIG2_ROWS = 100, 4, 100
#: Figure 4 of the paper: the number of ImageNet images and their side in pixels
PAPER_FIG4_IMAGES, PAPER_FIG4_SIDE = 100, 224
#: Figure 5 of the paper: the scale factor a of the caption and the noise multiplier
PAPER_FIG5_A, PAPER_FIG5_SIGMA = 10.0, 1e-3
#: Figure 6 of the paper: the image sides of scenarios (1)-(2) and (3), and the value range of scenario (2)
PAPER_FIG6_SIDES, PAPER_FIG6_RANGE = (224, 64), 255


def data_used(cfg: Settings, *, images: int | None = None, side: int | None = None,
              paper_images: int = PAPER_FIG4_IMAGES) -> str:
    """What an image experiment ran on, for the scorecard's reasons and findings: ``images`` images (default: the
    Figure 4 count) at ``side`` px (default: the Figure 4 resolution), their source and the scale, and the paper's
    data (``paper_images`` ImageNet images at 224 px; Figure 4's 100 by default) where the run's differ."""
    n, side = images or cfg.n_images, side or cfg.resolution
    source = IMAGE_SOURCES[cfg.image_source]
    same = cfg.image_source == "imagenet" and (n, side) == (paper_images, PAPER_FIG4_SIDE)
    return (f"{n} {source} at {side} px, at `{cfg.scale}` scale"
            + ("" if same else f"; the paper: {paper_images} ImageNet images at {PAPER_FIG4_SIDE} px"))


def claims(cfg: Settings) -> tuple[Claim, ...]:
    """:data:`CLAIMS` with the reasons of the image experiments computed from the run's settings (:func:`data_used`),
    so that the scorecard names the data, image size and scale that actually ran."""
    half, fig1 = cfg.fig1_resolution // 2, dict(side=cfg.fig1_resolution)
    reasons = {
        "mte-fig1": "the PSNR gain of $M^*$ rows over one row is $10\\log_{10}(C^2/\\lVert X\\rVert^2)$ within the "
                    f"stated tolerance for every image ({data_used(cfg, images=4, paper_images=4, **fig1)}; "
                    + ("the paper's $C$ and $\\sigma$)" if cfg.fig1_clip_ratio is None
                       else f"$C={cfg.fig1_clip_ratio:g}m$ instead of the paper's $C$ and $\\sigma$)"),
        "mte-fig4": f"the mean MSE on Prop. 2 at every σ; NMI and SSIM fall with σ, paired per image "
                    f"({data_used(cfg)}; LPIPS where installed)",
        "mte-fig6": "with the same noise, scenario (2)'s MSE is $255^2$ times scenario (1)'s with the same PSNR and "
                    "NCC, and scenario (3) has a smaller MSE and a higher NCC, at every σ "
                    f"({data_used(cfg, images=5, paper_images=5, **fig1)}, and at {half} px)",
    }
    return tuple(replace(c, reason=reasons.get(c.key, c.reason)) for c in CLAIMS)


_BOOK_DATA = data_used(Settings(scale="book", device="cpu", seed=0, **SCALES["book"]))
_SQ_NORM = "\\sigma^2\\lVert X\\rVert^2"

CLAIMS = (
    Claim("mte-abstract", "Abstract", "headline",
          "Under DP the success of analytic gradient inversion attacks is upper bounded, from its expectation "
          "(*mean*) to its tail (*extreme*), and the bounds match the attack's experimental success.",
          "{prf:ref}`mte-prop3`", REPRODUCED),
    Claim("mte-eq3", "Sec. 2.2, eq. (3)", "statement",
          "The Gaussian mechanism has the privacy profile $\\delta(\\varepsilon)=\\Phi(-\\varepsilon\\sigma+"
          "\\frac1{2\\sigma})$ $-\\,e^\\varepsilon\\Phi(-\\varepsilon\\sigma-\\frac1{2\\sigma})$.",
          "{prf:ref}`mte-def1`", REPRODUCED),
    Claim("mte-no-dp", "Sec. 3.2, eqs. (4)–(8)", "statement",
          "Without DP, a weight-gradient row of a linear layer divided by its bias gradient is the input, exactly.",
          "{ref}`mte-no-dp`", REPRODUCED),
    Claim("mte-ratio", "Sec. 3.3, eq. (15)", "statement",
          "Under DP the ratio of a noisy weight row and its noisy bias gradient has no moments, so the adversary "
          "refrains from it.", "{ref}`mte-ratio`", REPRODUCED),
    Claim("mte-propB1", "Prop. B.1", "theorem",
          "Without the scales $\\beta_C(X)\\partial_j$, no realisable unbiased estimator of $X$ is built from the "
          "noisy weight rows.", "{prf:ref}`mte-propB1`", REPRODUCED),
    Claim("mte-propB2", "Sec. 4.1, Prop. B.2", "theorem",
          f"The coordinate-wise variance of $\\hat X_M$ is at least ${_SQ_NORM}$, also as $M\\to\\infty$.",
          "{prf:ref}`mte-propB2`", REPRODUCED),
    Claim("mte-prop1", "Prop. 1, eq. (18)", "theorem",
          "The loss $\\mathbf 1_M^\\top f(X)$ with $M\\ge\\max(1,\\lceil C/m\\rceil)$ rows makes the variance "
          f"minimal, ${_SQ_NORM}$.", "{prf:ref}`mte-prop1`", DIFFERS, erratum=1),
    Claim("mte-lemmaB1", "Lemma B.1", "theorem",
          f"Each coordinate of $\\hat X$ is efficient: its variance is the Cramér–Rao bound ${_SQ_NORM}$.",
          "{prf:ref}`mte-lemmaB1`", REPRODUCED),
    Claim("mte-prop2", "Prop. 2, eq. (21)", "theorem",
          f"$\\hat X$ is the MVUE of $X$, and $\\mathbb E[\\mathrm{{MSE}}(X,\\hat X)]={_SQ_NORM}$.",
          "{prf:ref}`mte-prop2`", REPRODUCED),
    Claim("mte-thm1", "Theorem 1", "theorem",
          "Using the MSE as the optimality criterion, $\\hat X$ is the best achievable estimator and reconstruction "
          "of $X$.", "{prf:ref}`mte-thm1`", DIFFERS, erratum=2),
    Claim("mte-cor1", "Corollary 1", "theorem",
          "One linear layer with $M=\\max(1,\\lceil C/m\\rceil)$ rows and the loss $\\mathbf 1_M^\\top WX$ gives the "
          "MVUE with the lowest variance of all architectures, hyper-parameters and losses.",
          "{prf:ref}`mte-thm1`", DIFFERS, erratum=1),
    Claim("mte-fig1", "Figure 1, Sec. 5.1", "figure",
          f"With $M\\ge(C/\\lVert X\\rVert)^2$ rows (the figure's $M={PAPER_FIG1_M}$) the adversary gets the "
          f"least noise; with $M=1$ the noise is over-proportional ($\\sigma={PAPER_FIG1_SIGMA:g}$, "
          f"$C={PAPER_FIG1_C:g}$).",
          "{numref}`mte-fig-rows`", IN_SHAPE,
          reason="the PSNR gain of $M^*$ rows over one row is $10\\log_{10}(C^2/\\lVert X\\rVert^2)$ for every "
                 f"image (four photographs with $C={SCALES['book']['fig1_clip_ratio']:g}m$ instead of ImageNet with "
                 "the paper's $C$ and $\\sigma$, which `paper` scale uses)"),
    Claim("mte-thm2", "Theorem 2, eqs. (22)–(23)", "theorem",
          f"$\\mathrm{{MSE}}(X,\\hat X)\\overset d=\\frac{{{_SQ_NORM}}}{{N}}Y$ with $Y\\sim\\chi^2_N$, so "
          "$\\Pr(\\mathrm{MSE}\\le\\eta)$ is a regularised gamma function.", "{prf:ref}`mte-thm2`", REPRODUCED),
    Claim("mte-propB3", "Sec. 4.2.1, Prop. B.3, eq. (57)", "theorem",
          f"$\\sqrt N(\\mathrm{{MSE}}-{_SQ_NORM})$ converges in law to "
          "$\\mathcal N(0,2\\sigma^4\\lVert X\\rVert^4)$.", "{prf:ref}`mte-propB3`", REPRODUCED),
    Claim("mte-prop3", "Prop. 3, eq. (24)", "theorem",
          "For every $X\\ne0$, $\\Pr(\\mathrm{MSE}\\le\\eta)\\le\\gamma(\\eta)$ with the data set's smallest norm "
          "$m$ (with $C$ when $C\\le m$): $(\\eta,\\gamma)$-ReRo for the MSE.", "{prf:ref}`mte-prop3`", REPRODUCED),
    Claim("mte-prop45", "Props. 4–5, eqs. (25)–(27)", "theorem",
          "$\\Pr(\\mathrm{PSNR}\\ge\\eta)$ is bounded by the same gamma function at $\\tilde\\eta(\\eta)$: "
          "$(-\\eta,\\tilde\\gamma)$-ReRo for $-\\mathrm{PSNR}$.", "{prf:ref}`mte-prop45`", REPRODUCED),
    Claim("mte-any-reconstruction", "Props. 3 and 5", "statement",
          "These ReRo bounds hold for any reconstruction.", "{prf:ref}`mte-prop3`", DIFFERS, erratum=2),
    Claim("mte-fig2", "Figure 2, Sec. 5.1", "figure",
          f"On {PAPER_FIG2_SAMPLES} samples of $\\mathcal U(0,1)^{{{PAPER_FIG2_DIM}}}$ with $M={PAPER_FIG2_ROWS}$, "
          "the attack's MSE, PSNR and NCC follow the derived laws whenever the data is clipped ($C=m$ or "
          "$C=\\sqrt Mm$); with $C$ above every norm the noise is over-proportional.",
          "{numref}`mte-fig-regimes`", REPRODUCED),
    Claim("mte-fig3", "Figure 3, Sec. 5.1", "figure",
          "The CDF of the MSE and the survival function of the PSNR: larger $\\sigma$ or norm, larger errors; "
          "larger $N$, steeper laws; the expected MSE does not change with $N$, the expected PSNR does.",
          "{numref}`mte-fig-rero-curves`", REPRODUCED),
    Claim("mte-fig3-caption", "Figure 3, caption", "statement",
          "Lower values of the PSNR denote better reconstruction results.", "{numref}`mte-fig-rero-curves`",
          DIFFERS, erratum=6),
    Claim("mte-propB4", "Sec. 4.2.2, Prop. B.4, eq. (66)", "theorem",
          "The sample NCC is $\\sigma_X/\\sigma_{\\hat X}$ plus a sample-covariance term that vanishes as "
          "$N\\to\\infty$.", "{prf:ref}`mte-propB4`", REPRODUCED),
    Claim("mte-prop6", "Prop. 6, eq. (28)", "theorem",
          "The NCC of the reconstruction is $(1+\\sigma^2\\lVert X\\rVert^2/\\mathrm{Var}(x))^{-1/2}$, bounded by "
          "$(1+\\sigma^2N)^{-1/2}$.", "{prf:ref}`mte-prop6`", DIFFERS, erratum=3),
    Claim("mte-prop7", "Sec. 4.3, Prop. 7, eq. (29)", "theorem",
          f"The average of $k$ matched reconstructions has mean $X$ and variance ${_SQ_NORM}/k$ per coordinate.",
          "{prf:ref}`mte-prop7`", REPRODUCED),
    Claim("mte-selection", "Sec. 4.3", "statement",
          "A record is selected exactly $k$ times in $\\hat K$ attacks with probability "
          "$\\binom{\\hat K}{k}\\lvert D\\rvert^{-k}$.", "{prf:ref}`mte-prop7`", DIFFERS, erratum=4),
    Claim("mte-composition", "Sec. 5.2", "statement",
          "Over several steps the framework relies on a simpler worst-case bound, which likely overestimates the "
          "risk.", "{ref}`mte-subsampling`", IN_SHAPE,
          reason="ignoring the subsampling overestimates the prior-aware worst case severalfold on every DP-SGD "
                 "setting of the chapter (the paper names no setting)"),
    Claim("mte-conclusion", "Sec. 6", "headline",
          "A large enough $M$ lets the adversary avoid over-proportional noise, but the DP noise still bounds the "
          "reconstruction success whatever $M$.", "{prf:ref}`mte-propB2`", REPRODUCED),
    Claim("mte-cost-of-m", "Sec. 6", "statement",
          "Increasing $M$ costs $\\mathcal O(M)$ computation, so the adversary must trade an optimal reconstruction "
          "against computational requirements.", "{prf:ref}`mte-prop1`", DIFFERS, erratum=5),
    Claim("mte-ncc-rero", "Sec. 6, Remark B.1", "statement",
          "The NCC cannot be put in $(\\eta,\\gamma)$-ReRo form: for finite $N$ the covariance term hinders "
          "meaningful bounds on the sample NCC.", "{prf:ref}`mte-propB4`", DIFFERS, erratum=3),
    Claim("mte-fig4", "Figure 4, Sec. 6", "figure",
          f"On {PAPER_FIG4_IMAGES} ImageNet images, NMI, SSIM and a perceptual loss behave like the bounded "
          "metrics as $\\sigma$ grows.", "{numref}`mte-fig-metrics`", IN_SHAPE,
          reason=f"the mean MSE on Prop. 2 at every σ; NMI and SSIM fall with σ, paired per image ({_BOOK_DATA}; "
                 "LPIPS where installed)"),
    Claim("mte-fig5", "Figure 5", "figure",
          f"Rescaling an image and $C=\\lVert X\\rVert$ by $a={PAPER_FIG5_A:g}$ at $\\sigma={PAPER_FIG5_SIGMA:g}$ "
          "scales the MSE by $a^2$.", "{numref}`mte-fig-scaling`", REPRODUCED),
    Claim("mte-fig6", "Figure 6, Sec. 5.1", "figure",
          f"Images at {PAPER_FIG6_SIDES[0]} px in $(0,1)$ and $(0,{PAPER_FIG6_RANGE})$ and at {PAPER_FIG6_SIDES[1]} "
          "px in $(0,1)$: no single threshold on the MSE, PSNR or NCC marks a successful reconstruction.",
          "{numref}`mte-fig-scenarios`", IN_SHAPE,
          reason="with the same noise, scenario (2)'s MSE is $255^2$ times scenario (1)'s with the same PSNR and "
                 "NCC, and scenario (3) has a smaller MSE and a higher NCC, at every σ (photographs at the Figure 1 "
                 "resolution and at half of it)"),
)
