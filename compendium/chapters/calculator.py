"""The reconstruction-risk calculator's page: its settings (the page has no scale-dependent work; the scale, device
and seed are accepted so that it builds with the chapters) and the pipelines it calls.  The numbers come from
:func:`compendium.risk.assess` (Ziller et al. 2024 and Riess et al. 2025) and
:func:`compendium.risk.assess_dithering` (Chaudhuri et al. 2024); the pipelines compute the page's curves and its
simulated attacks, and the page checks them."""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from compendium import checks, dp, plotting, risk, validation
from compendium.bounds import mean_to_extreme as mte
from compendium.bounds import rero
from compendium.bounds import ziller2024 as zb
from compendium.bounds import hcr
from compendium.chapters.base import Settings as _Settings
from compendium.chapters.base import resolve

TITLE = "The reconstruction-risk calculator"
#: seconds its notebook runs on one core of a quiet 2-core machine (measured as its cells' CPU time, one thread)
SECONDS = {"ci": 18, "book": 60}
#: of them, the seconds of the prior-aware attack against DP-SGD (:func:`attack_against_bound`) in the book run: the
#: planner (compendium/plan/costs.py) spreads them over the per-sample gradient values that the attack computes
ATTACK_SECONDS = {"book": 13}

SCALES = {
    "ci": dict(curve_sample_rates=(1.0, 0.01), curve_points=2, edgeworth_sigmas=(1.0,),
               edgeworth_sample_rates=(0.01, 0.1), edgeworth_steps=(100,), mc_draws=50_000,
               attack_settings=((0.8, 0.2, 50, 0.1), (1.5, 0.5, 20, 0.05)), attack_trials=200),
    "book": dict(curve_sample_rates=(1.0, 0.1, 0.01, 0.001), curve_points=8, edgeworth_sigmas=(0.7, 1.0),
                 edgeworth_sample_rates=(0.001, 0.01, 0.1), edgeworth_steps=(100, 1000), mc_draws=200_000,
                 attack_settings=((1.0, 0.1, 100, 0.1), (0.8, 0.2, 50, 0.1), (1.5, 0.5, 20, 0.05)),
                 attack_trials=2000),
    "paper": dict(curve_sample_rates=(1.0, 0.1, 0.03, 0.01, 0.003, 0.001), curve_points=16,
                  edgeworth_sigmas=(0.5, 0.7, 1.0, 2.0, 4.0), edgeworth_sample_rates=(0.001, 0.003, 0.01, 0.03, 0.1),
                  edgeworth_steps=(30, 100, 1000, 10_000), mc_draws=1_000_000,
                  attack_settings=((1.0, 0.1, 100, 0.1), (0.8, 0.2, 50, 0.1), (1.5, 0.5, 20, 0.05),
                                   (2.0, 0.01, 1000, 0.1)), attack_trials=2000),
}


@dataclass(frozen=True)
class Settings(_Settings):
    """The calculator page's settings.  Only the section on subsampling depends on the scale: the sampling rates
    ``curve_sample_rates`` and ``curve_points`` noise levels per rate in the figure of the bound against epsilon; the
    grid of noise multipliers, sampling rates and step counts on which the authors' Edgeworth approximation is compared
    with the exact bound; ``mc_draws`` simulated DP-SGD runs per hypothesis in the likelihood-ratio check;
    ``attack_settings`` the settings ``(sigma, q, T, kappa)`` at which the prior-aware attack runs against real
    DP-SGD, ``attack_trials`` trainings each."""

    curve_sample_rates: tuple[float, ...]
    curve_points: int
    edgeworth_sigmas: tuple[float, ...]
    edgeworth_sample_rates: tuple[float, ...]
    edgeworth_steps: tuple[int, ...]
    mc_draws: int
    attack_settings: tuple[tuple[float, float, int, float], ...]
    attack_trials: int

    def validate(self) -> None:
        for q in validation.grid("curve_sample_rates", self.curve_sample_rates, what="sampling rates"):
            validation.number("curve_sample_rates", q, above=0.0, at_most=1.0)
        validation.integer("curve_points", self.curve_points, minimum=2)
        validation.grid("edgeworth_sigmas", self.edgeworth_sigmas, what="noise multipliers")
        validation.grid("edgeworth_sample_rates", self.edgeworth_sample_rates, what="sampling rates")
        for q in self.edgeworth_sample_rates:
            validation.number("edgeworth_sample_rates", q, above=0.0, below=1.0)
        for t in self.edgeworth_steps:
            validation.integer("edgeworth_steps", t, minimum=30, what="the approximation needs T >= 30")
        validation.integer("mc_draws", self.mc_draws, minimum=10_000)
        object.__setattr__(self, "attack_settings", _attack_settings(self.attack_settings))
        validation.integer("attack_trials", self.attack_trials, minimum=20)


def _attack_settings(settings) -> tuple[tuple[float, float, int, float], ...]:
    """``settings`` as a tuple of ``(sigma, q, T, kappa)`` tuples (papermill passes lists), each checked: ``sigma >
    0``, ``0 < q <= 1``, ``T >= 1``, ``kappa = 1 / m`` for an integer ``m >= 2`` (the attack's prior)."""
    if isinstance(settings, (str, bytes)) or not hasattr(settings, "__len__") or len(settings) == 0:
        raise ValueError(f"attack_settings={settings!r}; allowed: a non-empty list of (sigma, q, T, kappa)")
    checked = []
    for one in settings:
        if isinstance(one, (str, bytes)) or not hasattr(one, "__len__") or len(one) != 4:
            raise ValueError(f"attack_settings has {one!r}; allowed: (sigma, q, T, kappa)")
        sigma, q, steps, kappa = one
        validation.positive("attack_settings sigma", sigma)
        validation.number("attack_settings q", q, above=0.0, at_most=1.0, what="Poisson sampling rate q")
        validation.integer("attack_settings T", steps)
        validation.probability("attack_settings kappa", kappa)
        m = round(1 / kappa)
        if m < 2 or abs(m * kappa - 1) > 1e-9:
            raise ValueError(f"attack_settings kappa={kappa!r}; allowed: 1 / m for an integer m >= 2")
        checked.append((float(sigma), float(q), int(steps), float(kappa)))
    return tuple(checked)


def settings(scale: str = "book", device: str = "auto", seed: int = 0, **overrides) -> Settings:
    """The page's settings (no chapter knobs)."""
    return resolve(Settings, SCALES, scale, device, seed, overrides)


def paper_shape(folder: str | Path) -> dict:
    """The page at ``paper`` scale with its grids cut to seconds (:func:`compendium.book.execute_paper_shape`): the
    ends of the paper scale's sampling rates (two values of epsilon each) and of its noise multipliers and sampling
    rates for the Edgeworth comparison, at its smallest step count (with ``T = 10,000`` the comparison held more
    than 17 GB and was killed on a 23 GB machine), the fewest simulated runs the settings allow, and the attack
    against real DP-SGD at the paper scale's two settings with the fewest steps, 50 trainings each.  The page reads
    no data, so nothing is written into ``folder``.  Returns the notebook's parameters."""
    paper = SCALES["paper"]

    def ends(name: str) -> list:
        return [paper[name][0], paper[name][-1]]

    return dict(scale="paper", curve_sample_rates=ends("curve_sample_rates"), curve_points=2,
                edgeworth_sigmas=ends("edgeworth_sigmas"), edgeworth_sample_rates=ends("edgeworth_sample_rates"),
                edgeworth_steps=list(paper["edgeworth_steps"][:1]), mc_draws=10_000,
                attack_settings=[list(s) for s in sorted(paper["attack_settings"], key=lambda s: s[2])[:2]],
                attack_trials=50)


# ---------------------------------------------------------------------------------------------------------------
# Pipelines
# ---------------------------------------------------------------------------------------------------------------
def bound_curves(sigmas, *, dim: int = 3 * 224 * 224, clip: float = 1.0, eta_mse: float = 0.01, kappa: float = 1e-3,
                 min_norm: float = 100.0, delta: float = 1e-5) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The calculator's rows that the page's figure plots (:func:`compendium.risk.assess`'s keys, one row per noise
    multiplier of ``sigmas``, one step, the same functions vectorised over ``sigmas``; the accountants that the figure
    does not plot are not run) for an image of ``dim`` values: without the data norm (the data-independent bounds of
    Ziller et al. 2024: eqs. 6, 8, 9, the ReRo bound of Prop. 6 at ``eta_mse`` and the prior-aware worst case of
    Table 1 at ``kappa``), and with the smallest data norm ``min_norm`` (Riess et al. 2025, Prop. 3, eq. 24, at
    ``eta_mse``).  Both carry ``epsilon_exact`` (the exact GDP accounting of the same ``sigma`` at ``delta``)."""
    s = np.asarray([validation.positive("sigmas", float(v)) for v in np.ravel(sigmas)])
    eps = np.array([dp.epsilon_exact(v, 1, delta) for v in s])
    curves = pd.DataFrame({"noise_multiplier": s, "epsilon_exact": eps,
                           "ncc_upper_bound": zb.ncc_bound_dim(dim, sigma=s, T=1),
                           "ncc_upper_bound_dimension_free": zb.ncc_bound_free(s, T=1),
                           "psnr_upper_bound_db": zb.psnr_upper_bound(clip, sigma=s, T=1, mean_sq_range=1.0),
                           "mse_success_probability": zb.rero_gamma_mse(eta_mse, N=dim, C=clip, sigma=s, T=1),
                           "worst_case_success": zb.worst_case_success(s, kappa=kappa, T=1)})
    with_m = pd.DataFrame({"noise_multiplier": s, "epsilon_exact": eps, "mse_success_probability": mte.rero_gamma_mse(
        eta_mse, N=dim, sigma=s, min_norm=min_norm, T=1)})
    return curves, with_m


def plot_bound_curves(curves: pd.DataFrame, with_m: pd.DataFrame):
    """The page's figure from :func:`bound_curves`: on top, the expected-value bounds against epsilon (NCC,
    eqs. 8-9, and PSNR, eq. 6, of Ziller et al. 2024); below, the probabilities of a successful reconstruction
    (without and with the smallest norm, and the prior-aware worst case); each legend under its panel, off the
    curves."""
    eps = curves.epsilon_exact
    fig, axes = plt.subplots(2, 1, figsize=(plotting.WIDTH, 8.0), layout="constrained")
    below = dict(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncols=2, fontsize="small")
    ax = axes[0]
    ax.plot(eps, curves.ncc_upper_bound, color=plotting.DIM_BOUND, label="max E[NCC], eq. (8)")
    ax.plot(eps, curves.ncc_upper_bound_dimension_free, "--", color=plotting.BOUND, label="max E[NCC], eq. (9)")
    ax.set(xscale="log", xlabel=r"$\varepsilon$ at $\delta=10^{-5}$ (one step)", ylabel="NCC bound")
    twin = ax.twinx()
    twin.plot(eps, curves.psnr_upper_bound_db, color=plotting.EXACT, label="max E[PSNR], eq. (6) [dB]")
    twin.set_ylabel("PSNR bound [dB]")
    twin.grid(False)
    handles = ax.get_legend_handles_labels()[0] + twin.get_legend_handles_labels()[0]
    ax.legend(handles, [h.get_label() for h in handles], **below)
    ax.set_title("Expected-value bounds (Ziller et al.)")
    ax = axes[1]
    ax.plot(eps, curves.mse_success_probability, color=plotting.BOUND, label="P(MSE ≤ 0.01), no data norm")
    ax.plot(eps, with_m.mse_success_probability, color=plotting.EMPIRICAL, label="P(MSE ≤ 0.01), smallest norm 100")
    ax.plot(eps, curves.worst_case_success, "--", color=plotting.EXACT, label="worst case, κ = 0.001")
    ax.set(xscale="log", xlabel=r"$\varepsilon$ at $\delta=10^{-5}$ (one step)", ylabel="success probability",
           title="Probability of a successful reconstruction")
    ax.legend(**below)
    return fig


def least_squares_attacks(A: np.ndarray, feature_noise: float, releases: int, draws: int,
                          rng: np.random.Generator) -> SimpleNamespace:
    """Simulated unbiased attacks on inference-time dithering (Chaudhuri et al. 2024, Section 2: features
    ``A theta + N(0, sigma^2 I)`` released ``releases`` times): an input ``theta ~ U(0, 1)^p`` from ``rng``, ``draws``
    sets of releases, and least squares on each set's average.  Returns ``theta``, the ``estimates`` (draws x p),
    their per-coordinate ``variance`` (ddof 1), the Cramér-Rao bound ``crb`` ``sigma^2 [(A^T A)^-1]_kk / T`` that
    least squares attains for a linear map (``hcr.cramer_rao_bound``), the z-scores of the variances against it
    (standard error ``crb sqrt(2 / (draws - 1))``) and the bound's standard deviations ``dct_sd`` for the 2-D DCT
    modes of a square input."""
    p = A.shape[1]
    theta = rng.uniform(size=p)  # the client's input, flattened
    observed = A @ theta + feature_noise * rng.normal(size=(draws, releases, A.shape[0]))
    estimates = np.linalg.lstsq(A, observed.mean(axis=1).T, rcond=None)[0].T  # least squares on the averages
    variance = estimates.var(axis=0, ddof=1)
    crb = hcr.cramer_rao_bound(A, feature_noise / np.sqrt(releases))  # the calculator's per-coordinate variances
    z = (variance - crb) / checks.variance_se(crb, draws - 1)
    side = math.isqrt(p)
    dct_sd = np.sqrt(hcr.cramer_rao_bound(A, feature_noise / np.sqrt(releases),
                                          directions=hcr.dct_matrix((side, side))))
    return SimpleNamespace(theta=theta, estimates=estimates, variance=variance, crb=crb, z=z, dct_sd=dct_sd)


# ---------------------------------------------------------------------------------------------------------------
# The prior-aware worst case under Poisson subsampling
# ---------------------------------------------------------------------------------------------------------------
def subsampled_curves(*, sample_rates, points: int, steps: int = 1000, kappa: float = 0.01,
                      delta: float = 1e-5) -> pd.DataFrame:
    """The prior-aware worst case against epsilon for several sampling rates at ``steps`` DP-SGD steps: for each
    ``q`` the noise multipliers that give ``points`` values of epsilon between 0.3 and 8 (opacus' RDP accountant,
    calibrated by ``opacus.accountants.utils.get_noise_multiplier``), and at each the exact bound
    (:func:`compendium.bounds.rero.rero_bound_subsampled`; the GDP closed form at ``q = 1``) beside the full-batch
    value that ignores ``q``.  One row per (q, sigma).  The privacy-loss grid is ten times coarser than the default
    (``eps_error = 0.01``: a figure needs no more), and the table keeps each value's numerical error."""
    import warnings

    from opacus.accountants.utils import get_noise_multiplier

    rows = []
    for q in sample_rates:
        for eps in np.geomspace(0.3, 8.0, points):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                sigma = get_noise_multiplier(target_epsilon=float(eps), target_delta=delta, sample_rate=float(q),
                                             steps=steps, accountant="rdp", epsilon_tolerance=0.005)
            full = float(zb.worst_case_success(sigma, kappa=kappa, T=steps))
            if q == 1:
                estimate = certified = full
            else:
                estimate, certified = (float(v) for v in rero.rero_bound_subsampled(
                    kappa, noise_multiplier=sigma, sample_rate=float(q), steps=steps, eps_error=0.01))
            rows.append({"q": q, "sigma": sigma, "epsilon (RDP)": float(eps), "exact bound": certified,
                         "numerical error": certified - estimate, "full-batch bound": full})
    return pd.DataFrame(rows)


def plot_subsampled_curves(curves: pd.DataFrame, *, steps: int, kappa: float):
    """The exact prior-aware worst case (solid) and the full-batch value that ignores the sampling rate (dashed)
    against epsilon, one colour per sampling rate; the prior's own success ``kappa`` dotted."""
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    colours = plt.cm.viridis(np.linspace(0, 0.85, curves.q.nunique()))
    for colour, (q, part) in zip(colours, curves.groupby("q", sort=False)):
        ax.plot(part["epsilon (RDP)"], part["exact bound"], "o-", color=colour, ms=4, label=f"q = {q:g}: exact")
        if q != 1:
            ax.plot(part["epsilon (RDP)"], part["full-batch bound"], "--", color=colour, lw=1,
                    label=f"q = {q:g}: full-batch formula")
    ax.axhline(kappa, color="grey", linestyle=":", label=f"prior alone (κ = {kappa:g})")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ticks = [t for t in (0.3, 0.5, 1, 2, 3, 5, 8)
             if curves["epsilon (RDP)"].min() <= t <= curves["epsilon (RDP)"].max()]
    ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xlabel(rf"$\varepsilon$ at $\delta=10^{{-5}}$ after $T = {steps}$ steps (RDP accountant)")
    ax.set_ylabel("reconstruction success bound γ (log scale)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    ax.set_title("Prior-aware worst case: the sampling rate matters")
    return fig


def quoted_numbers(*, min_norm: float) -> dict[str, float]:
    """The numbers that the exercises' written solutions quote, keyed for ``glue``, each checked here.

    Exercise 1: the smallest ``sigma`` whose certified worst case (Hayes et al. 2023, Thm. 2, for DP-SGD with Poisson
    sampling ``q = 0.01``: :func:`compendium.bounds.rero.minimal_noise_multiplier_subsampled`) is at most 5 % at prior
    success ``kappa = 0.01`` for ``T = 3000`` steps, checked to bracket the bound at 0.2 %, and its growth over the
    ``sigma`` of ``T = 1000``.  Exercise 2: ``P(MSE <= 0.045)`` for ``N = 3072``, ``C = 10``, ``sigma = 0.2`` and the
    smallest norm ``min_norm`` after ``T = 100`` steps at ``q = 0.1`` (:func:`compendium.risk.assess`), checked against
    ``P(B = 0) + sum_b P(B = b) gamma(eta; T = b)`` over ``B ~ Binomial(T, q)`` with From Mean to Extreme's Prop. 3
    (eq. 24), and the full-batch value of the same query.
    """
    from scipy import stats

    kappa, q, target = 0.01, 0.01, 0.05
    sigmas = {t: rero.minimal_noise_multiplier_subsampled(target, kappa=kappa, sample_rate=q, steps=t)
              for t in (1000, 3000)}
    at, below = (float(rero.rero_bound_subsampled(kappa, noise_multiplier=s, sample_rate=q, steps=3000)[1])
                 for s in (sigmas[3000], sigmas[3000] / 1.002))
    if not at <= target < below:
        raise AssertionError(f"exercise 1: sigma = {sigmas[3000]} does not bracket the target ({at}, {below})")
    query = risk.RiskQuery(noise_multiplier=0.2, clip=10.0, dim=3072, eta_mse=0.045, min_norm=min_norm, steps=100,
                           sample_rate=0.1)
    result = risk.assess(query)
    b = np.arange(1, 101)
    by_sum = stats.binom.pmf(0, 100, 0.1) + stats.binom.pmf(b, 100, 0.1) @ np.array(
        [mte.rero_gamma_mse(0.045, N=3072, sigma=0.2, min_norm=min_norm, T=int(t)) for t in b])
    checks.assert_close(result["mse_success_probability_subsampled"], float(by_sum), 0.0, rtol=1e-9,
                        what="exercise 2: the calculator against the binomial sum")
    return {"calc_exercise1_sigma": sigmas[3000], "calc_exercise1_growth": sigmas[3000] / sigmas[1000],
            "calc_exercise2_subsampled": result["mse_success_probability_subsampled"],
            "calc_exercise2_full_batch": result["mse_success_probability"]}


# ---------------------------------------------------------------------------------------------------------------
# Does an attack reach the worst case?  The practitioners' questions
# ---------------------------------------------------------------------------------------------------------------
def attack_against_bound(settings, *, trials: int, seed: int = 0) -> pd.DataFrame:
    """The prior-aware attack of Hayes et al. (2023) against real DP-SGD beside the ReRo bound
    ``gamma = 1 - f(kappa)`` of the same mechanism (Hayes et al. 2023, Thm. 2; :func:`compendium.bounds.rero.
    rero_bound_subsampled`, both adjacency directions).  For each ``(sigma, q, T, kappa)`` of ``settings``:
    :func:`compendium.attacks.prior_aware.run_prior_aware_attack` with ``trials`` trainings (seed ``seed``), its
    success rate and binomial standard error, the bound's estimate and certified value, and the gap
    ``(certified - success) / SE`` in standard errors (negative: the attack above the bound).  One row per setting.
    Bad settings or ``trials < 20`` raise ``ValueError`` before any training."""
    import warnings

    from compendium.attacks.prior_aware import run_prior_aware_attack

    settings = _attack_settings(settings)
    trials = validation.integer("trials", trials, minimum=20)
    rows = []
    for sigma, q, steps, kappa in settings:
        with warnings.catch_warnings():  # torch's note on opacus' hooks (the inputs need no gradient)
            warnings.filterwarnings("ignore", message="Full backward hook is firing")
            attack = run_prior_aware_attack(noise_multiplier=sigma, sample_rate=q, steps=steps, kappa=kappa,
                                            trials=trials, seed=seed)
        estimate, certified = (float(v) for v in rero.rero_bound_subsampled(
            kappa, noise_multiplier=sigma, sample_rate=q, steps=steps))
        rows.append({"σ": sigma, "q": q, "T": steps, "κ": kappa, "trials": trials, "attack success": attack["success"],
                     "SE": attack["se"], "bound (estimate)": estimate, "bound (certified)": certified,
                     "gap [SE]": (certified - attack["success"]) / attack["se"]})
    return pd.DataFrame(rows)


def adjacency_bounds(*, kappa: float, noise_multiplier: float, sample_rate: float, steps: int) -> dict[str, float]:
    """The ReRo bound ``1 - f(kappa)`` (estimate) of DP-SGD with Poisson sampling for each of
    :data:`compendium.bounds.rero.ADJACENCIES`: ``"add"`` (``f``, null: the target absent), ``"remove"`` (``f^{-1}``)
    and the default ``"add_or_remove"``, ``min(f, f^{-1})`` (Dong et al. 2022, Def. F.1 symmetrise the same way),
    whose bound is the larger of the two (checked here)."""
    out = {a: float(rero.rero_bound_subsampled(kappa, noise_multiplier=noise_multiplier, sample_rate=sample_rate,
                                               steps=steps, adjacency=a)[0]) for a in rero.ADJACENCIES}
    checks.assert_close(out["add_or_remove"], max(out["add"], out["remove"]), 0.0, rtol=1e-12,
                        what="the default takes the larger of the two directions")
    return out


def same_epsilon_worst_cases(*, epsilon: float, pairs, kappa: float, delta: float = 1e-5) -> pd.DataFrame:
    """For one privacy budget ``epsilon`` (at ``delta``) and each ``(q, T)`` of ``pairs``: the noise multiplier that
    opacus' RDP accountant calibrates to it (``opacus.accountants.utils.get_noise_multiplier``) and the certified
    prior-aware worst case ``1 - f(kappa)`` at that sigma (Hayes et al. 2023, Thm. 2; :func:`compendium.bounds.
    rero.rero_bound_subsampled`).  One row per pair."""
    import warnings

    from opacus.accountants.utils import get_noise_multiplier

    eps = validation.positive("epsilon", epsilon)
    validation.probability("kappa", kappa)
    validation.probability("delta", delta)
    rows = []
    for q, steps in pairs:
        validation.number("q", q, above=0.0, at_most=1.0, what="Poisson sampling rate q")
        validation.integer("T", steps)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sigma = float(get_noise_multiplier(target_epsilon=eps, target_delta=delta, sample_rate=float(q),
                                               steps=int(steps), accountant="rdp", epsilon_tolerance=0.005))
        estimate, certified = (float(v) for v in rero.rero_bound_subsampled(
            kappa, noise_multiplier=sigma, sample_rate=float(q), steps=int(steps)))
        rows.append({"q": float(q), "T": int(steps), "σ": sigma, "epsilon (RDP)": dp.epsilon(
            sigma, int(steps), delta, sample_rate=float(q)), "worst case (certified)": certified,
            "numerical error": certified - estimate})
    return pd.DataFrame(rows)
