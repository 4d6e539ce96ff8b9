"""The Ziller et al. (2024) chapter: its settings at each scale and the pipelines its notebook calls.

The pipelines compute; the notebook checks.  Each pipeline returns the numbers (a ``pandas.DataFrame``, Monte-Carlo
draws, closed-form laws) and the notebook's cells assert the paper's claims on them with :mod:`compendium.checks`.
Random draws come from the generators the caller passes (or from a fresh one seeded with ``seed``), consumed in a
fixed order, so a pipeline gives the same numbers every time it is called in the same place.
"""
from __future__ import annotations

import importlib.util
from dataclasses import dataclass, replace
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch
from scipy import stats

from compendium import checks, data, dp, metrics, plotting, standin, validation
from compendium.attacks import linear_layer
from compendium.bounds import ziller2024 as zb
from compendium.chapters.base import Settings as _Settings
from compendium.chapters.base import IMAGE_SOURCES, check_image_source, resolve
from compendium.scorecard import DIFFERS, IN_SHAPE, REPRODUCED, Claim

TITLE = "Bounding reconstruction attack success of adversaries without data priors"
#: seconds its notebook runs on one core of a quiet 2-core machine (a book build, two chapters at once)
SECONDS = {"ci": 22, "book": 47}

SCALES = {
    "ci": dict(
        n_images=12, resolution=16, sigmas=(1e-3, 1e-2, 1e-1, 1.0), clip_norms=(0.1, 1.0, 10.0, 100.0),
        fig3_resolutions=(8, 16, 32), fig3_draws=8, n_mc=100_000, n_opacus=300, image_source="photos",
        imagenet_dir=None, use_lpips=False, prop1_draws=400, averaging_draws=3, fig3_sigmas=None,
    ),
    "book": dict(
        n_images=100, resolution=32, sigmas=tuple(float(s) for s in torch.logspace(-3, 1, 9)),
        clip_norms=(0.1, 1.0, 10.0, 100.0, 1000.0), fig3_resolutions=(8, 32, 128), fig3_draws=50,
        n_mc=400_000, n_opacus=2000, image_source="photos", imagenet_dir=None, use_lpips=True, prop1_draws=400,
        averaging_draws=10, fig3_sigmas=None,
    ),
    "paper": dict(
        n_images=100, resolution=224, sigmas=tuple(float(s) for s in torch.logspace(-4, 2, 25)),
        clip_norms=(1e-2, 1.0, 10.0, 1e2, 1e3, 1e4), fig3_resolutions=(32, 224, 1024), fig3_draws=50,
        n_mc=1_000_000, n_opacus=1000, image_source="imagenet", imagenet_dir="data/imagenet-val", use_lpips=True,
        prop1_draws=400, averaging_draws=10, fig3_sigmas=None,
    ),
}


@dataclass(frozen=True)
class Settings(_Settings):
    """Settings of the Ziller et al. (2024) chapter.

    ``resolution`` and ``n_images`` define the Figure 1/4 data (``n_images`` RGB images, ``resolution`` pixels
    square); ``sigmas`` and ``clip_norms`` the grid of noise multipliers and maximum gradient norms;
    ``fig3_resolutions`` the three resolutions of the single image of Figure 3 and Figures 5-8, with
    ``fig3_draws`` noise draws per cell; ``n_mc`` the Monte-Carlo sample size of the distributional checks;
    ``n_opacus`` the number of privatised gradients drawn through opacus for the observation-model test;
    ``image_source`` is ``"photos"`` (scikit-image's bundled photographs) or ``"imagenet"`` (a folder the user
    supplies, see :func:`compendium.data.imagenet_folder`); ``use_lpips`` asks for the perceptual metric, which is
    used when the ``lpips`` extra and its downloaded weights are present and skipped, with the reason, otherwise;
    ``prop1_draws`` releases per cell of the check of Proposition 1 and ``averaging_draws`` averages per ``T`` of the
    check of Proposition 4; ``fig3_sigmas`` the noise multipliers of Figures 3 and 5-8 (``None``: ``sigmas``).
    """

    n_images: int
    resolution: int
    sigmas: tuple[float, ...]
    clip_norms: tuple[float, ...]
    fig3_resolutions: tuple[int, int, int]
    fig3_draws: int
    n_mc: int
    n_opacus: int
    image_source: str
    imagenet_dir: str | None
    use_lpips: bool
    prop1_draws: int
    averaging_draws: int
    fig3_sigmas: tuple[float, ...] | None

    def validate(self) -> None:
        # Standard errors of per-cell means need a handful of images (t with n - 1 degrees of freedom).
        validation.integer("n_images", self.n_images, minimum=10)
        validation.integer("resolution", self.resolution, minimum=8)
        validation.integer("fig3_draws", self.fig3_draws, minimum=2)  # a standard deviation per cell
        # Below this the checks cannot resolve the O(1/N) effects they assert (e.g. the 3 % excess over bound (8)).
        validation.integer("n_mc", self.n_mc, minimum=50_000)
        validation.integer("n_opacus", self.n_opacus, minimum=50)
        validation.integer("prop1_draws", self.prop1_draws, minimum=10)  # a standard error per cell
        validation.integer("averaging_draws", self.averaging_draws, minimum=2)
        if self.fig3_sigmas is not None:
            validation.grid("fig3_sigmas", self.fig3_sigmas, what="noise multipliers")
        validation.grid("sigmas", self.sigmas, what="noise multipliers")
        validation.grid("clip_norms", self.clip_norms, what="maximum gradient norms")
        if not isinstance(self.fig3_resolutions, tuple) or len(self.fig3_resolutions) != 3:
            raise ValueError(f"fig3_resolutions={self.fig3_resolutions!r}; allowed: three sizes >= 4 px")
        for r in self.fig3_resolutions:
            validation.integer("fig3_resolutions", r, minimum=4, what="three sizes in px")
        check_image_source(self.image_source, self.imagenet_dir)


def settings(scale: str = "book", device: str = "auto", seed: int = 0, **overrides) -> Settings:
    """The chapter's settings: the scale's values, replaced by every override that is not ``None``."""
    return resolve(Settings, SCALES, scale, device, seed, overrides)


#: The ImageNet-named stand-in JPEGs of a paper-shape run: a few more than its images, so that the seeded draw picks.
PAPER_SHAPE_IMAGES = 12


def paper_shape(folder: str | Path) -> dict:
    """The paper pipeline at the paper's shapes with its counts cut to seconds (:func:`compendium.book.
    execute_paper_shape`): ``PAPER_SHAPE_IMAGES`` ImageNet-named stand-in JPEGs (:func:`compendium.standin.
    imagenet_val`) in ``folder/imagenet-val``, read at the paper's 224 px; Figure 3's resolutions (32, 224,
    1024 px); the paper's grids cut to every other ``C`` (0.01, 10, 1000: all clipped to none clipped) and two noise
    multipliers (1e-4 and 100, the ends of the paper's grid; Figure 3 at 1e-4 only, its 1024 px opacus steps
    take about a second each on one core); the smallest image, draw, Monte-Carlo and opacus counts the settings allow;
    LPIPS only where the ``lpips`` extra is installed.  Returns the notebook's parameters."""
    imagenet = standin.imagenet_val(Path(folder) / "imagenet-val", n=PAPER_SHAPE_IMAGES)
    return dict(scale="paper", imagenet_dir=str(imagenet), n_images=10, n_mc=50_000, n_opacus=50,
                sigmas=list(SCALES["paper"]["sigmas"][::24]), clip_norms=list(SCALES["paper"]["clip_norms"][::2]),
                fig3_draws=2, prop1_draws=10, averaging_draws=2, fig3_sigmas=[SCALES["paper"]["sigmas"][0]],
                use_lpips=importlib.util.find_spec("lpips") is not None)


def describe_images(cfg: Settings, device, images: torch.Tensor, lpips_ok: bool, lpips_reason: str) -> str:
    """Lines of at most 88 characters for the set-up cell: the scale, the device, the seed, the images (count, size,
    dimension N and their L2 norms, which decide where clipping starts in Figure 1) and whether LPIPS (Figure 4) is
    computed (why not is a note for whoever runs the notebook, ``lpips_reason``, not for the book's reader)."""
    norms = images.flatten(1).norm(dim=1).cpu().numpy()
    return (f"scale={cfg.scale}, device={device}, seed={cfg.seed}: {cfg.n_images} images of "
            f"3x{cfg.resolution}x{cfg.resolution} (N = {images[0].numel()}),\n  norms min/median/max = "
            f"{norms.min():.2f}/{np.median(norms):.2f}/{norms.max():.2f}\n"
            + "LPIPS: " + ("used" if lpips_ok else "not computed in this run"))


def ncc_cases(rng: np.random.Generator, *, n_mc: int, seed: int, sizes=(10, 50)):
    """Proposition 3 (eqs. 7-9) on one-dimensional samples: Monte-Carlo NCC of releases against its exact mean.

    For each ``N`` in ``sizes`` a uniform sample ``x`` (drawn from ``rng``) is used centred and as drawn, clipped to
    half its norm (``beta = 1/2``, ``C = ||x|| / 2``, ``sigma = 1``); ``n_mc`` releases of the observation model
    (eq. 3; fresh generator seeded with ``seed`` per case) give the NCC.  Returns ``(table, draws)``: one row per case
    with the signal-to-noise ratio ``a`` (:func:`~compendium.bounds.ziller2024.ncc_snr`), the Monte-Carlo mean and its
    standard error, our exact mean, the paper's eq. (7) and bound (8); ``draws[(N, kind)]`` are the NCC values.
    """
    rows, draws = [], {}
    for n in sizes:
        sample = rng.random(n)
        for kind, x in (("centred", sample - sample.mean()), ("non-centred", sample)):
            C, s = 0.5 * np.linalg.norm(x), 1.0  # clipped: beta = 1/2
            xt = torch.tensor(x)[None]
            rel = linear_layer.sample_release(xt, C, s, n_draws=n_mc,
                                              generator=torch.Generator().manual_seed(seed))[:, 0]
            ncc_draws = metrics.ncc(xt.expand_as(rel), rel).numpy()
            a = zb.ncc_snr(x, C=C, sigma=s)
            mean, se = checks.mean_se(ncc_draws)
            rows.append({"N": n, "sample": kind, "a": a, "MC mean NCC": mean, "± SE": se,
                         "exact mean (ours)": zb.ncc_mean_exact(n, a=a), "eq. (7)": zb.ncc_eq7(x, C=C, sigma=s),
                         "bound (8)": float(zb.ncc_bound_dim(n, sigma=s))})
            draws[(n, kind)] = ncc_draws
    return pd.DataFrame(rows), draws


def rero_cases(rng: np.random.Generator, *, n_mc: int, seed: int, n: int = 48, sigma: float = 0.3):
    """Propositions 5-7 (Section 2.3, eqs. 10-14) on a uniform sample of ``n`` values drawn from ``rng``.

    Three clipping norms (unclipped ``C = 2 ||x||``; clipped to ``beta = 0.9`` and ``beta = 0.5``), ``n_mc`` releases
    each (eq. 3; fresh generator seeded with ``seed``).  At MSE thresholds ``eta = 0.8, 1.0, 1.2`` times ``C^2
    sigma^2`` (bound 5), and the PSNR thresholds ``10 log10(R^2 / eta)`` with the sample's range ``R``, it tabulates
    the Monte-Carlo success probabilities ``P(MSE <= eta)`` and ``P(PSNR >= eta)`` beside the ``gamma`` of
    Propositions 6 and 7, and the non-centrality ``lambda`` of Proposition 5 (eq. 11).  Returns ``(table, mse,
    laws)``: ``mse[case]`` the Monte-Carlo MSEs and ``laws[case]`` the law of Proposition 5 they should follow.
    """
    x = rng.random(n)
    r = x.max() - x.min()
    norm = np.linalg.norm(x)
    rows, mse_draws, laws = [], {}, {}
    for label, C in (("unclipped", 2 * norm), ("clipped, β = 0.9", 0.9 * norm), ("clipped, β = 0.5", 0.5 * norm)):
        xt = torch.tensor(x)[None]
        rel = linear_layer.sample_release(xt, C, sigma, n_draws=n_mc,
                                          generator=torch.Generator().manual_seed(seed))[:, 0]
        m = metrics.mse(xt.expand_as(rel), rel).numpy()
        ps = metrics.psnr(xt.expand_as(rel), rel).numpy()
        mse_draws[label], laws[label] = m, zb.mse_distribution(x, C=C, sigma=sigma)
        lam = zb.mse_noncentrality(x, C=C, sigma=sigma)
        for eta in (0.8, 1.0, 1.2):
            thr = eta * C**2 * sigma**2  # MSE threshold at eta times the bound
            eta_psnr = 10 * np.log10(r**2 / thr)
            rows.append({"case": label, "λ": lam, "η (MSE)": thr, "P(MSE ≤ η) MC": float(np.mean(m <= thr)),
                         "γ (Prop. 6)": float(zb.rero_gamma_mse(thr, N=n, C=C, sigma=sigma)),
                         "η (PSNR, dB)": eta_psnr, "P(PSNR ≥ η) MC": float(np.mean(ps >= eta_psnr)),
                         "γ (Prop. 7)": float(zb.rero_gamma_psnr(eta_psnr, N=n, C=C, sigma=sigma, data_range=r))})
    return pd.DataFrame(rows), mse_draws, laws


def figure2(*, n_mc: int, seed: int, n: int = 50) -> dict:
    """Figure 2 (Section 3.2): the CDFs of MSE, PSNR and NCC at ``C = sigma = T = 1``, ``N = n``, with Monte Carlo.

    The worst cases: an unclipped sample of range 1 (``||X|| = C``) for the MSE (Proposition 6) and the PSNR
    (Proposition 7), and a centred sample clipped to ``beta = 1/2`` (``a = 1 / sigma``) for the NCC (our exact law,
    :func:`~compendium.bounds.ziller2024.ncc_cdf_exact`).  Returns, per metric, ``draws`` (``n_mc`` Monte-Carlo
    values from one generator seeded with ``seed``), ``cdf`` (the closed form), ``bound`` (the bound on the
    expectation: eq. 5, eq. 6 or eq. 8), and the ``grid`` and ``xlabel`` of the plot (:func:`plot_figure2`).
    """
    C, s = 1.0, 1.0
    x_unclipped = torch.zeros(1, n, dtype=torch.float64)
    x_unclipped[0, 0] = 1.0  # ||X|| = 1 = C: not clipped, range R = 1
    x_centred = torch.tensor(np.r_[np.ones(n // 2), -np.ones(n // 2)] * 2 / np.sqrt(n))[None]  # ||X|| = 2: beta = 1/2
    g = torch.Generator().manual_seed(seed)
    rel_u = linear_layer.sample_release(x_unclipped, C, s, n_draws=n_mc, generator=g)[:, 0]
    rel_c = linear_layer.sample_release(x_centred, C, s, n_draws=n_mc, generator=g)[:, 0]
    a = zb.ncc_snr(x_centred.numpy().ravel(), C=C, sigma=s)
    return {
        "MSE": dict(draws=metrics.mse(x_unclipped.expand_as(rel_u), rel_u).numpy(),
                    cdf=lambda e: zb.rero_gamma_mse(e, N=n, C=C, sigma=s), bound=float(zb.mse_lower_bound(C, sigma=s)),
                    grid=np.linspace(0.2, 2.0, 300), xlabel="threshold η"),
        "PSNR": dict(draws=metrics.psnr(x_unclipped.expand_as(rel_u), rel_u).numpy(),
                     cdf=lambda e: zb.psnr_cdf_prop7(e, N=n, C=C, sigma=s),
                     bound=float(zb.psnr_upper_bound(C, sigma=s)),
                     grid=np.linspace(-4, 4, 300), xlabel="threshold η [dB]"),
        "NCC": dict(draws=metrics.ncc(x_centred.expand_as(rel_c), rel_c).numpy(),
                    cdf=lambda e: zb.ncc_cdf_exact(e, N=n, a=a), bound=float(zb.ncc_bound_dim(n, sigma=s)),
                    grid=np.linspace(-0.6, 0.8, 300), xlabel="threshold η"),
    }


def plot_figure2(panels: dict, n_shown: int = 4000):
    """Figure 2's three panels from :func:`figure2`: closed-form CDF, the empirical CDF of the first ``n_shown``
    Monte-Carlo draws, and the bound on the expectation (dashed)."""
    fig, axes = plt.subplots(1, 3, figsize=(plotting.WIDTH, 3.3), sharey=True, layout="constrained")
    for ax, (m, p) in zip(axes, panels.items()):
        ax.plot(p["grid"], p["cdf"](p["grid"]), color=plotting.EXACT, lw=1.5, label="closed form")
        q = np.sort(p["draws"][:n_shown])
        ax.plot(q, np.arange(1, len(q) + 1) / len(q), color=plotting.EMPIRICAL, lw=4, alpha=0.35, label="Monte Carlo")
        ax.axvline(p["bound"], ls="--", color=plotting.DIM_BOUND, label="bound on the expectation")
        ax.set(xlabel=p["xlabel"], title=m)
    axes[0].set_ylabel("P(metric ≤ η)")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncol=3)
    return fig


def figure1_grid(images: torch.Tensor, clip_norms, sigmas, *, lpips: bool, generator: torch.Generator | None):
    """Figures 1 and 4 (Section 3.1, Appendix B): every image reconstructed through opacus (one DP-SGD step of the
    linear-layer attack, eqs. 1-3) at every ``(C, sigma)``, scored by :func:`compendium.metrics.score` (MSE, PSNR,
    NCC, NMI, SSIM, and LPIPS with the AlexNet backbone when ``lpips``).  One row per reconstruction, with ``C``,
    ``sigma`` and the image's index."""
    records = []
    for C, s, rec in linear_layer.reconstruct_grid(images, clip_norms, sigmas, generator=generator):
        frame = pd.DataFrame(metrics.score(images, rec, lpips_net="alex" if lpips else None))
        frame["C"], frame["sigma"], frame["image"] = C, s, np.arange(len(frame))
        records.append(frame)
    return pd.concat(records, ignore_index=True)


def figure1_theory(x_all: np.ndarray, clip_norms, sigmas) -> pd.DataFrame:
    """The closed forms behind Figure 1 (Section 3.1), per image and ``(C, sigma)``: ``E_MSE`` (Proposition 1,
    eq. 4), ``Var_MSE`` (the variance of the law of Proposition 5, ``2 (C^2 sigma^2 / N)^2 (N + 2 lambda)``),
    ``E_NCC_eq7`` (Proposition 3, eq. 7), ``E_PSNR_unclipped`` (our exact expected PSNR without clipping: bound (6)
    with the image's own range plus the Jensen gap Delta_N) and whether the image is ``clipped`` (``||X|| > C``)."""
    flat = x_all.reshape(len(x_all), -1)
    n_dim, ranges = flat.shape[1], np.ptp(flat, axis=1)
    frames = []
    for C in clip_norms:
        for s in sigmas:
            var_mse = zb.mse_distribution(x_all, C=C, sigma=s).var()
            frames.append(pd.DataFrame({
                "C": C, "sigma": s, "image": np.arange(len(x_all)), "E_MSE": zb.expected_mse(x_all, C=C, sigma=s),
                "Var_MSE": var_mse, "E_NCC_eq7": zb.ncc_eq7(x_all, C=C, sigma=s),
                "E_PSNR_unclipped": 10 * np.log10(ranges**2 / (C**2 * s**2)) + zb.psnr_jensen_gap(n_dim),
                "clipped": np.linalg.norm(flat, axis=1) > C}))
    return pd.concat(frames, ignore_index=True)


def figure1_summary(results: pd.DataFrame, theory: pd.DataFrame, x_all: np.ndarray):
    """Figure 1's cells: per ``(C, sigma)`` the mean MSE, PSNR and NCC of :func:`figure1_grid` with their standard
    errors, the per-image means of the closed forms of :func:`figure1_theory`, and the bounds (5), (6), (8), (9)
    (Propositions 1-3).  Bound (6) uses the data's mean squared range ``E[R^2]``, returned beside the table.

    The standard errors come from the noise only: the MSE's from its law (Proposition 5), the NCC's and PSNR's from
    the spread of (experiment - per-image expectation), which removes the spread between images.
    """
    n_dim = x_all[0].size
    both = results.merge(theory, on=["C", "sigma", "image"])
    both["NCC_resid"] = both.NCC - both.E_NCC_eq7
    both["PSNR_resid"] = both.PSNR - both.E_PSNR_unclipped
    cells = both.groupby(["C", "sigma"])
    root_n = np.sqrt(cells.size())
    summary = pd.DataFrame({
        "mean MSE": cells.MSE.mean(), "E[MSE] (4)": cells.E_MSE.mean(),
        "SE MSE": np.sqrt(cells.Var_MSE.sum()) / cells.size(),
        "mean PSNR": cells.PSNR.mean(), "SE PSNR": cells.PSNR_resid.std() / root_n,
        "E[PSNR] exact": cells.E_PSNR_unclipped.mean(),
        "mean NCC": cells.NCC.mean(), "SE NCC": cells.NCC_resid.std() / root_n, "mean (7)": cells.E_NCC_eq7.mean(),
        "all unclipped": ~cells.clipped.any(), "all clipped": cells.clipped.all(),
    }).reset_index()
    summary["bound (5)"] = summary.C**2 * summary.sigma**2
    mean_sq_range = float(np.mean(np.ptp(x_all.reshape(len(x_all), -1), axis=1) ** 2))
    summary["bound (6)"] = zb.psnr_upper_bound(summary.C, sigma=summary.sigma, mean_sq_range=mean_sq_range)
    summary["bound (8)"] = zb.ncc_bound_dim(n_dim, sigma=summary.sigma)
    summary["bound (9)"] = zb.ncc_bound_free(summary.sigma)
    return summary, mean_sq_range


def pooled_expected_mse(x_all: np.ndarray, summary: pd.DataFrame) -> np.ndarray:
    """Eq. (4) read as an expectation over the data set, as Proposition 1's proof takes it: ``(1 - E beta)^2
    E[mean x^2] + C^2 sigma^2`` with the clipping factor averaged over the images, for each ``(C, sigma)`` cell of
    :func:`figure1_summary` (errata: ``beta`` depends on ``X``, so (4) holds per image only)."""
    flat = x_all.reshape(len(x_all), -1)
    norms, second = np.linalg.norm(flat, axis=1), (flat**2).mean(axis=1)
    beta = np.minimum(1.0, summary.C.to_numpy()[:, None] / norms[None, :]).mean(axis=1)
    return (1 - beta) ** 2 * second.mean() + (summary.C * summary.sigma).to_numpy() ** 2


def figure3_clip_norms(norms) -> tuple[float, float, float, float]:
    """Figure 3 (Section 3.3) and Figures 5-8: four maximum gradient norms for one image at three resolutions of
    norms ``lo < mid < hi``: ``0.1 lo`` (every resolution clipped), ``sqrt(lo mid)`` (only the lowest unclipped),
    ``sqrt(mid hi)`` (only the highest clipped) and ``10 hi`` (nothing clipped)."""
    lo, mid, hi = norms
    return tuple(float(c) for c in (0.1 * lo, np.sqrt(lo * mid), np.sqrt(mid * hi), 10 * hi))


def shown_sigmas(sigmas, count: int = 5) -> list[float]:
    """Up to ``count`` noise multipliers, evenly spread over those ``<= 0.1`` (above, every reconstruction is noise),
    for the example reconstructions of Figures 5-8; ``0.1`` as a float32 grid stores it (``0.10000000149``) counts."""
    informative = [s for s in sigmas if s <= 0.1 * (1 + 1e-6)] or list(sigmas)
    return [informative[i] for i in np.unique(np.linspace(0, len(informative) - 1, count).round().astype(int))]


def figure3_grid(images: dict, clip_norms, sigmas, draws: int, *, shown, generator: torch.Generator | None):
    """Figure 3 (Section 3.3): ``draws`` opacus reconstructions of each image of ``images`` (resolution -> image) at
    every ``(C, sigma)``, scored by MSE, PSNR and NCC.  Returns ``(table, examples)``: one row per reconstruction
    with its ``resolution``, ``C`` and ``sigma``, and the first reconstruction of each cell whose ``sigma`` is in
    ``shown`` (Figures 5-8), keyed ``(resolution, C, sigma)``."""
    records, examples = [], {}
    for r, x in images.items():
        batch = x.expand(draws, -1, -1, -1).contiguous()
        for C in clip_norms:
            for s in sigmas:
                rec = linear_layer.reconstruct(batch, C, s, generator=generator)
                if s in shown:
                    examples[(r, C, s)] = rec[0].cpu()
                frame = pd.DataFrame({name: metrics.ALL[name](batch, rec).cpu().numpy()
                                      for name in ("MSE", "PSNR", "NCC")})
                frame["resolution"], frame["C"], frame["sigma"] = r, C, s
                records.append(frame)
    return pd.concat(records, ignore_index=True), examples


def figure3_cells(fig3: pd.DataFrame, images: dict) -> pd.DataFrame:
    """Figure 3's cells: per ``(C, sigma, resolution)`` the mean and standard deviation of the MSE and NCC of
    :func:`figure3_grid`, ``E_MSE``, the expected MSE of Proposition 1 (eq. 4) for that image, and ``E_MSE_sd``,
    the standard deviation of one MSE under the law of Proposition 5 (known exactly, unlike the sample's from a few
    draws)."""
    cells = fig3.groupby(["C", "sigma", "resolution"]).agg(MSE=("MSE", "mean"), MSE_sd=("MSE", "std"),
                                                           NCC=("NCC", "mean"), NCC_sd=("NCC", "std")).reset_index()
    flat = {r: x.double().cpu().numpy().ravel() for r, x in images.items()}
    cells["E_MSE"] = [zb.expected_mse(flat[r], C=C, sigma=s) for r, C, s in zip(cells.resolution, cells.C, cells.sigma)]
    cells["E_MSE_sd"] = [zb.mse_distribution(flat[r], C=C, sigma=s).std()
                         for r, C, s in zip(cells.resolution, cells.C, cells.sigma)]
    return cells


def student_k(draws: int, *, k: float = 6.0, tail: float = 1e-6) -> float:
    """The multiple of a standard error estimated from ``draws`` values that a check allows: ``k``, or the
    two-sided ``tail`` quantile of Student's t with ``draws - 1`` degrees of freedom where that is larger (a few draws
    estimate the standard deviation too poorly for ``k`` of them; from 50 draws on it is ``k = 6``)."""
    return max(k, float(stats.t(draws - 1).isf(tail / 2)))


def figure3_at_clip(cells: pd.DataFrame, images: dict, C: float) -> pd.DataFrame:
    """The cells of :func:`figure3_cells` at the maximum gradient norm ``C``, sorted by ``sigma`` and resolution,
    with eq. (7) (``eq7``) and bound (8) (``bound8``) of Proposition 3 for each image."""
    at = cells[cells.C == C].sort_values(["sigma", "resolution"])
    return at.assign(eq7=[zb.ncc_eq7(images[r].double().cpu().numpy().ravel(), C=C, sigma=s)
                          for r, s in zip(at.resolution, at.sigma)],
                     bound8=[float(zb.ncc_bound_dim(images[r].numel(), sigma=s))
                             for r, s in zip(at.resolution, at.sigma)])


def figure3_resolutions(large: pd.DataFrame, images: dict) -> pd.DataFrame:
    """Section 3.3's explanation of Figure 3 put to the test: per resolution of :func:`figure3_at_clip`'s table
    (nothing clipped), the dimension ``N``, the norm, the per-pixel mean and standard deviation of the image (the
    paper says the variance "remains constant as we change the resolution"), and at the smallest ``sigma`` the mean
    NCC, eq. (7) and bound (8)."""
    first = large[large.sigma == large.sigma.min()].set_index("resolution")
    rows = []
    for r, x in images.items():
        flat = x.double().cpu().numpy().ravel()
        rows.append({"resolution [px]": r, "N": flat.size, "‖X‖": float(np.linalg.norm(flat)),
                     "pixel mean": float(flat.mean()), "pixel sd": float(flat.std()),
                     "NCC": float(first.NCC[r]), "eq. (7)": float(first.eq7[r]), "bound (8)": float(first.bound8[r])})
    return pd.DataFrame(rows)


def describe_figure3_ncc(by_resolution: pd.DataFrame, C: float, sigma: float) -> str:
    """One sentence on the largest ``C`` of Figure 3 from :func:`figure3_resolutions`'s table: how the mean NCC at
    the smallest ``sigma`` changes from the lowest to the highest resolution, beside eq. (7) and the per-pixel
    standard deviation that eq. (7) depends on."""
    lo, hi = by_resolution.iloc[0], by_resolution.iloc[-1]
    res = " / ".join(f"{r:g}" for r in by_resolution["resolution [px]"])
    return (f"C = {C:.4g}, σ = {sigma:.3g}, at {res} px:\n"
            f"  mean NCC {' / '.join(f'{v:.3f}' for v in by_resolution.NCC)} (×{hi.NCC / lo.NCC:.2f} from the lowest "
            f"to the highest resolution)\n  eq. (7)  {' / '.join(f'{v:.3f}' for v in by_resolution['eq. (7)'])}\n"
            f"  per-pixel sd {' / '.join(f'{v:.3f}' for v in by_resolution['pixel sd'])} "
            f"(×{hi['pixel sd'] / lo['pixel sd']:.2f})")


_VARIED = {"baseline": "baseline", "sigma": "σ", "C": "C", "N": "N", "T": "T", "kappa": "κ"}


def _setting(value: float) -> str:
    """A parameter value of Table 1 for a narrow cell: the powers of ten from 10^3 up and from 10^-3 down as 10ᵏ."""
    k = np.log10(value)
    if k == round(k) and abs(k) >= 3:
        return "10" + str(int(round(k))).translate(plotting.SUPERSCRIPTS)
    return f"{value:g}"


def _percent(value: float) -> str:
    return f"{100 * value:.1f}%"


def _decibels(value: float) -> str:
    return f"{value:.1f}".replace("-0.0", "0.0")


def printed(row: dict[str, float]) -> dict[str, str]:
    """A row of :func:`~compendium.bounds.ziller2024.table1_row` at the paper's printed precision: percentages to
    0.1 %, decibels to 0.1 dB, and the MSE as the paper prints it (``1.0`` and ``0.1`` plainly, other powers of ten
    as ``1.0 x 10^k``, written here ``1.0e+k``)."""
    mse = row["mse"]
    return {"worst": _percent(row["worst"]), "mse": f"{mse:.1f}" if 0.1 <= mse <= 1.0 else f"{mse:.1e}",
            "psnr": _decibels(row["psnr"]), "ncc": _percent(row["ncc"])}


def table1() -> pd.DataFrame:
    """Table 1 (Section 3.2) recomputed: one row per printed row, named by the parameter it varies from the baseline
    ``sigma = C = T = 1``, ``N = 1000``, ``kappa = 0.1``; the paper's printed value of each column next to ours
    (:func:`~compendium.bounds.ziller2024.table1_row` at the paper's precision, :func:`printed`); after the PSNR our
    exact ``E[PSNR]`` of an unclipped sample of range 1, after the NCC our exact maximum ``E[NCC]``."""
    rows = []
    for varying, s, C, N, T, kappa, *paper in zb.table1_rows:
        values = zb.table1_row(s, C=C, N=N, T=T, kappa=kappa)
        ours = printed(values)
        value = {"sigma": s, "C": C, "N": N, "T": T, "kappa": kappa}.get(varying)
        name = "baseline" if varying == "baseline" else f"{_VARIED[varying]}\u00a0=\u00a0{_setting(value)}"
        rows.append({"varied": name,
                     "paper: worst case": paper[0], "worst case (ours)": ours["worst"],
                     "paper: min E[MSE]": plotting.written_numbers(paper[1]),
                     "min E[MSE] (ours)": plotting.written_numbers(ours["mse"]),
                     "paper: max E[PSNR] [dB]": plotting.written_numbers(paper[2]),
                     "max E[PSNR] (ours)": plotting.written_numbers(ours["psnr"]),
                     "exact E[PSNR] (ours)": plotting.written_numbers(_decibels(values["psnr_exact"])),
                     "paper: max E[NCC] (8)": paper[3], "max E[NCC] (8) (ours)": ours["ncc"],
                     "exact max E[NCC] (ours)": _percent(values["ncc_exact"])})
    return pd.DataFrame(rows)


def table1_corrections(table: pd.DataFrame) -> str:
    """The rows where our exact columns of :func:`table1` differ from the paper's printed value, one line each."""
    parts = []
    for _, row in table.iterrows():
        for exact, printed, what in (("exact max E[NCC] (ours)", "paper: max E[NCC] (8)", "max E[NCC]"),
                                     ("exact E[PSNR] (ours)", "paper: max E[PSNR] [dB]", "E[PSNR] [dB]")):
            if row[exact] != row[printed]:
                parts.append(f"{row.varied}: {what} {row[exact]} (printed {row[printed]})")
    listed = "".join(f"\n  {p}" for p in parts) if parts else " none"
    return "exact values that differ from the printed ones:" + listed


# Line styles of the theory curves: one per bound (the paper's bounds in orange, the dimension-aware bound (8) in
# purple), our exact predictions solid black; experiments are drawn as points.
STYLE = {"bound (5)": "--", "bound (6)": "-.", "bound (8)": (0, (6, 1.5, 1, 1.5, 1, 1.5)), "bound (9)": ":",
         "exact": "-"}


def figure1_curves(summary: pd.DataFrame, sig_fine, n_dim: int, mean_sq_range: float) -> dict:
    """The theory lines of Figure 1 for :func:`plot_metric_grid`, per ``C`` of ``summary``
    (:func:`figure1_summary`): bound (5) and the per-image mean of Proposition 1 for the MSE; bound (6) with the
    data's mean squared range for the PSNR; bounds (9) and (8) and the per-image mean of eq. (7) for the NCC."""
    curves = {}
    for C, cell in summary.groupby("C"):
        curves[("MSE", C)] = [(sig_fine, C**2 * sig_fine**2, "bound (5)", plotting.BOUND, STYLE["bound (5)"]),
                              (cell.sigma, cell["E[MSE] (4)"], "E[MSE], Prop. 1 (per-image mean)", plotting.EXACT,
                               STYLE["exact"])]
        curves[("PSNR", C)] = [(sig_fine, zb.psnr_upper_bound(C, sigma=sig_fine, mean_sq_range=mean_sq_range),
                                "bound (6)", plotting.BOUND, STYLE["bound (6)"])]
        curves[("NCC", C)] = [(sig_fine, zb.ncc_bound_free(sig_fine), "bound (9)", plotting.BOUND, STYLE["bound (9)"]),
                              (sig_fine, zb.ncc_bound_dim(n_dim, sigma=sig_fine), "bound (8)", plotting.DIM_BOUND,
                               STYLE["bound (8)"]),
                              (cell.sigma, cell["mean (7)"], "eq. (7) (per-image mean)", plotting.EXACT,
                               STYLE["exact"])]
    return curves


def figure3_curves(images: dict, clip_norms, sig_fine) -> dict:
    """The theory lines of Figure 3 for :func:`plot_metric_grid`, per ``C``: bound (5) (the same at every
    resolution), and per resolution (coloured as its points, :func:`hue_colours`) bound (6) with the image's range,
    eq. (7) and bound (8)."""
    colours = plotting.hue_colours(sorted(images))
    curves = {}
    for C in clip_norms:
        curves[("MSE", C)] = [(sig_fine, C**2 * sig_fine**2, "bound (5)", plotting.BOUND, STYLE["bound (5)"])]
        curves[("PSNR", C)], curves[("NCC", C)] = [], []
        for r in sorted(images):
            x = images[r].double().cpu().numpy().ravel()
            curves[("PSNR", C)].append((sig_fine,
                                        zb.psnr_upper_bound(C, sigma=sig_fine, mean_sq_range=float(np.ptp(x)) ** 2),
                                        f"bound (6), {r} px", colours[r], STYLE["bound (6)"]))
            a = zb.ncc_snr(x, C=C, sigma=1.0) / np.asarray(sig_fine)  # a = ||beta (X - mean)|| / (C sigma)
            eq7 = a / np.sqrt(a * a + x.size)  # eq. (7) at every sigma at once
            curves[("NCC", C)] += [(sig_fine, eq7, f"eq. (7), {r} px", colours[r], STYLE["exact"]),
                                   (sig_fine, zb.ncc_bound_dim(x.size, sigma=sig_fine), f"bound (8), {r} px",
                                    colours[r], STYLE["bound (8)"])]
    return curves


def plot_examples(images: torch.Tensor, norms, title: str, per_row: int = 4):
    """The first images of the data set, ``per_row`` to a row, each titled with its norm."""
    k = len(images) // per_row * per_row
    grid = images[:k].reshape(k // per_row, per_row, *images.shape[1:]).cpu()
    fig = plotting.image_grid(grid, [""] * (k // per_row), [""] * per_row, title=title,
                              size=plotting.WIDTH / (per_row + 0.5))
    for ax, v in zip(fig.axes, norms[:k]):
        ax.set_title(f"‖X‖ = {v:.1f}")
    return fig


def figure3_ncc_table(large: pd.DataFrame) -> pd.DataFrame:
    """:func:`figure3_at_clip`'s table as one row per ``sigma``: the mean NCC at each resolution, then bound (8) at
    each resolution."""
    wide = large.pivot(index="sigma", columns="resolution", values=["NCC", "bound8"])
    wide.columns = [f"{'NCC' if v == 'NCC' else 'bound (8)'}, {r} px" for v, r in wide.columns]
    return wide.reset_index().rename(columns={"sigma": "σ"})


def photo_pixel_sd(name: str, resolutions) -> dict:
    """The per-pixel standard deviation of a bundled photograph (:func:`compendium.data.photo`) at each resolution."""
    return {r: float(data.photo(name, r).double().std(unbiased=False)) for r in resolutions}


def quoted_numbers() -> dict[str, float]:
    """The numbers the prose of exercise 1's solution quotes, keyed for ``glue`` (the notebook's cell that glues them
    is tagged ``answers``): the smallest noise multiplier for which an adversary without prior reaches
    ``MSE <= 1e-3`` with probability at most ``0.01`` on ``N = 3 * 64 * 64`` values (Prop. 6 inverted: ``sigma^2 =
    N eta / F^{-1}_{chi^2_N}(gamma)`` with ``C = T = 1``) and the exact epsilon of that ``sigma`` for one step at
    ``delta = 1e-5``.
    """
    n, eta, gamma = 3 * 64 * 64, 1e-3, 0.01
    sigma = float(np.sqrt(n * eta / stats.chi2(n).ppf(gamma)))
    checks.assert_close(float(zb.mse_threshold(gamma, N=n, C=1.0, sigma=sigma)), eta, 1e-12 * eta,
                        what="exercise 1: the MSE reached with probability gamma")
    return {"ziller_ex1_sigma": sigma, "ziller_ex1_epsilon": dp.epsilon_exact(sigma, 1, delta=1e-5)}


# ---------------------------------------------------------------------------------------------------------------
# The scorecard: every result the paper states, decided in the notebook (compendium.scorecard)
# ---------------------------------------------------------------------------------------------------------------
PAPER = "Ziller et al. (2024)"
ERRATA_TABLE = "ziller-errata-table"
#: Rows of the errata table that no claim of the scorecard decides, and why.
ERRATA_ELSEWHERE = {10: "a wrong cross-reference to a figure: no result to check"}
#: Figure 1 of the paper: the number of ImageNet images and their side in pixels (its caption); Figure 3's resolutions
PAPER_FIG1_IMAGES, PAPER_FIG1_SIDE, PAPER_FIG3_SIDES = 100, 224, (32, 224, 1024)


def data_used(cfg: Settings) -> str:
    """What the image experiments ran on, for the scorecard's reasons and findings: the source, count and size of
    the Figure 1/4 images and the scale, and what the paper used instead where it differs."""
    side = f"{cfg.resolution}×{cfg.resolution}"
    ran = f"{cfg.n_images} {IMAGE_SOURCES[cfg.image_source]} at {side}"
    paper = f"{PAPER_FIG1_IMAGES} ImageNet images at {PAPER_FIG1_SIDE}×{PAPER_FIG1_SIDE}"
    same = cfg.image_source == "imagenet" and (cfg.n_images, cfg.resolution) == (PAPER_FIG1_IMAGES, PAPER_FIG1_SIDE)
    return f"{ran}, at `{cfg.scale}` scale" + ("" if same else f"; the paper: {paper}")


def _fig3_sides(resolutions) -> str:
    return ", ".join(map(str, resolutions[:-1])) + f" and {resolutions[-1]} px"


def claims(cfg: Settings) -> tuple[Claim, ...]:
    """:data:`CLAIMS` with the reasons of the image experiments computed from the run's settings (:func:`data_used`,
    Figure 3's resolutions), so that the scorecard names the data, image size and scale that actually ran."""
    reasons = {
        "ziller-fig1": f"the four properties, checked per cell ({data_used(cfg)})",
        "ziller-fig3": f"both properties, checked in every cell (the astronaut at {_fig3_sides(cfg.fig3_resolutions)}"
                       f", at `{cfg.scale}` scale; the paper's: {_fig3_sides(PAPER_FIG3_SIDES)})",
        "ziller-fig4": f"NMI and SSIM never rise with σ beyond 6 SE at any C and fall overall, paired per image "
                       f"({data_used(cfg)}; LPIPS where installed)",
        "ziller-conclusion": "centred, clipped images attain bound (8); the MSE and PSNR follow the clipping bias "
                             f"({data_used(cfg)})",
    }
    return tuple(replace(c, reason=reasons.get(c.key, c.reason)) for c in CLAIMS)


def paired_trend(results: pd.DataFrame, metric: str, *, k: float = 6.0) -> tuple[list[float], float]:
    """Whether ``metric`` of :func:`figure1_grid` falls with ``sigma``, paired per image (Figure 4, Appendix B):
    the ``C`` at which the mean change between neighbouring ``sigma`` exceeds ``k`` of its standard errors upwards,
    and the mean fall from the smallest to the largest ``sigma`` over images and ``C`` in its standard errors."""
    rises = []
    for C, grp in results.groupby("C"):
        steps = np.diff(grp.pivot(index="image", columns="sigma", values=metric).to_numpy(), axis=1)
        if np.any(steps.mean(0) > k * steps.std(0, ddof=1) / np.sqrt(len(steps)) + 1e-12):
            rises.append(float(C))
    per_image = results.pivot_table(index=["C", "image"], columns="sigma", values=metric).to_numpy()
    fall = per_image[:, 0] - per_image[:, -1]
    return rises, float(fall.mean() / (fall.std(ddof=1) / np.sqrt(len(fall))))


_BOOK_DATA = data_used(Settings(scale="book", device="cpu", seed=0, **SCALES["book"]))

CLAIMS = (
    Claim("ziller-prop1", "Prop. 1, eqs. (4)–(5)", "theorem",
          "The expected MSE is $(1-\\beta)^2$ times the sample's second moment plus $C^2\\sigma^2$, at least "
          "$C^2\\sigma^2$.", "{prf:ref}`ziller-prop1`", REPRODUCED),
    Claim("ziller-prop1-proof", "Prop. 1, its proof, eqs. (4) and (21)", "statement",
          "Eq. (4) holds in expectation over the data $X$, with $(1-\\beta)^2$ taken out of it.",
          "{numref}`ziller-fig-tightness`", DIFFERS, erratum=7),
    Claim("ziller-prop2", "Prop. 2, eq. (6)", "theorem",
          "$\\mathbb E[\\mathrm{PSNR}]\\le$ $10\\log_{10}(\\mathbb E[R^2]/(C^2\\sigma^2))$.", "{prf:ref}`ziller-prop2`",
          DIFFERS, erratum=1),
    Claim("ziller-prop3", "Prop. 3, eqs. (7)–(9)", "theorem",
          "(7) is the expected NCC and (8) $(1+N\\sigma^2)^{-1/2}$ bounds it.", "{prf:ref}`ziller-prop3`",
          DIFFERS, erratum=2),
    Claim("ziller-prop3-n1", "Prop. 3", "statement",
          "Bound (9) is an equality for clipped, centred data that is also one-dimensional ($N=1$).",
          "{ref}`ziller-errata`", DIFFERS, erratum=8),
    Claim("ziller-prop4", "Prop. 4, eq. (10)", "theorem",
          "Averaging $T$ linked releases leaves noise of variance $C^2\\sigma^2/T$.", "{prf:ref}`ziller-prop4`",
          REPRODUCED),
    Claim("ziller-remark1", "Remark 1", "statement",
          "The averaged estimate converges in $\\mathcal O(T)$ samples.", "{prf:ref}`ziller-prop4`", DIFFERS,
          erratum=9),
    Claim("ziller-prop5", "Prop. 5, eq. (11)", "theorem",
          "$N\\,\\mathrm{MSE}/(C^2\\sigma^2)$ is non-central $\\chi^2_N$.", "{prf:ref}`ziller-prop5`", REPRODUCED),
    Claim("ziller-prop6", "Prop. 6, eq. (12)", "theorem",
          "$\\mathrm{MSE}\\le\\mathrm{MSE}_{(\\rm bound)}$ (central $\\chi^2$), so $\\Pr(\\mathrm{MSE}\\le\\eta)$ is "
          "at most its CDF.", "{prf:ref}`ziller-prop6`", DIFFERS, erratum=3),
    Claim("ziller-prop7", "Prop. 7, eqs. (13)–(14)", "theorem",
          "$\\Pr(\\mathrm{PSNR}\\le\\eta)=1-P(\\frac N2,\\frac{N\\hat\\eta}{2C^2\\sigma^2})$, an equality.",
          "{prf:ref}`ziller-prop7`", DIFFERS, erratum=4),
    Claim("ziller-propA1", "Prop. A.1, eqs. (68)–(79)", "theorem",
          "$\\mathrm{Var}\\,\\rho=C^2\\sigma^2/\\sqrt N$ and "
          "$\\mathrm{Var}\\,\\nu_i=(1+1/\\sqrt N)C^2\\sigma^2$ in the law of the NCC.",
          "{prf:ref}`ziller-propA1`", DIFFERS, erratum=6),
    Claim("ziller-propC1", "Prop. C.1, eq. (82)", "theorem",
          "The NMI in chain-rule form; independent variables give NMI = 1.", "{prf:ref}`ziller-propC1`",
          REPRODUCED),
    Claim("ziller-linear", "Sec. 3.2", "statement", "The MSE increases linearly with $\\sigma$.",
          "{ref}`ziller-errata`", DIFFERS, erratum=5),
    Claim("ziller-table1", "Table 1", "table",
          f"The worst-case success and the bounds on the MSE, PSNR and NCC for {len(zb.table1_rows)} settings "
          f"({4 * len(zb.table1_rows)} printed values).",
          "{ref}`ziller-table1`", REPRODUCED),
    Claim("ziller-table1-n10", "Table 1, row $N=10$", "table", "The largest expected NCC at $N=10$.",
          "{ref}`ziller-table1`", DIFFERS, erratum=2),
    Claim("ziller-fig1", "Figure 1", "figure",
          "The MSE and PSNR bounds are tight when nothing is clipped; the NCC follows (7), is unchanged by $C$ once "
          "every image is clipped, and is loose for uncentred data.", "{numref}`ziller-fig-tightness`", IN_SHAPE,
          reason=f"the four properties, asserted per cell ({_BOOK_DATA})"),
    Claim("ziller-fig2", "Figure 2", "figure",
          "The CDFs of the MSE, PSNR and NCC at $C=\\sigma=T=1$, $N=50$ as ReRo curves.",
          "{numref}`ziller-fig-rero-cdfs`", REPRODUCED),
    Claim("ziller-fig3", "Figure 3", "figure",
          "At small $C$ the MSE and PSNR degrade with the resolution; where $C>\\lVert X\\rVert$ they are tight.",
          "{numref}`ziller-fig-resolutions`", IN_SHAPE,
          reason="both properties, asserted in every cell (the paper's three resolutions: 32, 224 and 1024 px, "
                 "at `paper` scale)"),
    Claim("ziller-fig3-ncc", "Sec. 3.3, Figure 3", "statement",
          "At large $C$ the NCC converges to the same values at every resolution, since the sample's variance does "
          "not change with it.", "{numref}`ziller-fig-resolutions`", DIFFERS, erratum=11),
    Claim("ziller-fig4", "Figure 4", "figure", "NMI, SSIM and a perceptual loss fall with $\\sigma$ for every $C$.",
          "{numref}`ziller-fig-no-closed-form`", IN_SHAPE,
          reason=f"NMI and SSIM never rise with σ beyond 6 SE at any C and fall overall, paired per image "
                 f"({_BOOK_DATA}; LPIPS where installed)"),
    Claim("ziller-nmi-one", "Appendix C.1", "statement", "The NMI converges to 1 as $\\sigma$ grows.",
          "{ref}`ziller-nmi`", DIFFERS, erratum=12),
    Claim("ziller-fig5-8", "Figures 5–8", "figure",
          "Example reconstructions at three resolutions in four clipping regimes: all clipped, the lowest "
          "unclipped, the highest clipped, nothing clipped.", "{numref}`ziller-fig-all-clipped`", IN_SHAPE,
          reason="each figure's clipping regime holds at the chosen $C$"),
    Claim("ziller-abstract", "Abstract (a)", "headline",
          "The expected reconstruction success of an adversary without a data prior can be bounded by several "
          "metrics.", "{ref}`ziller-errata`", IN_SHAPE,
          reason="with the corrections of errata 1 and 2, every expected-value bound holds in every cell of the "
                 "Figure 1 counterpart"),
    Claim("ziller-conclusion", "Sec. 4", "headline",
          "The metrics are complementary: the NCC is robust to scaling but loose for uncentred data; the MSE and "
          "PSNR are not robust to scaling and depend on $C$.", "{numref}`ziller-fig-centred`", IN_SHAPE,
          reason="centred, clipped photographs attain bound (8); the MSE and PSNR follow the clipping bias"),
)
