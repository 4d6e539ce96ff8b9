"""The reconstruction-risk calculator's page: its settings (the page has no scale-dependent work; the scale, device
and seed are accepted so that it builds with the chapters) and the pipelines it calls.  The numbers come from
:func:`compendium.risk.assess` (Ziller et al. 2024 and Riess et al. 2025) and
:func:`compendium.risk.assess_dithering` (Chaudhuri et al. 2024); the pipelines compute the page's curves and its
simulated attacks, and the page checks them."""
from __future__ import annotations

import math
from dataclasses import dataclass
from types import SimpleNamespace

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from compendium import checks, plotting, risk
from compendium.bounds import hcr
from compendium.chapters.base import Settings as _Settings
from compendium.chapters.base import resolve

TITLE = "The reconstruction-risk calculator"

SCALES = {"ci": {}, "book": {}, "paper": {}}


@dataclass(frozen=True)
class Settings(_Settings):
    """The calculator page's settings: only the scale, device and seed."""


def settings(scale: str = "book", device: str = "auto", seed: int = 0, **overrides) -> Settings:
    """The page's settings (no chapter knobs)."""
    return resolve(Settings, SCALES, scale, device, seed, overrides)


# ---------------------------------------------------------------------------------------------------------------
# Pipelines
# ---------------------------------------------------------------------------------------------------------------
def bound_curves(sigmas, *, dim: int = 3 * 224 * 224, clip: float = 1.0, eta_mse: float = 0.01, kappa: float = 1e-3,
                 min_norm: float = 100.0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The calculator's output (one row per noise multiplier of ``sigmas``, one step, ``delta = 1e-5``) for an image
    of ``dim`` values: without the data norm (the data-independent bounds of Ziller et al. 2024: eqs. 6, 8, 9, the
    ReRo bound of Prop. 6 at ``eta_mse`` and the prior-aware worst case of Table 1 at ``kappa``), and with the
    smallest data norm ``min_norm`` (Riess et al. 2025, Prop. 3, eq. 24, at ``eta_mse``).  Both carry
    ``epsilon_exact`` (the exact GDP accounting of the same ``sigma``)."""
    curves = pd.DataFrame([risk.assess(risk.RiskQuery(noise_multiplier=s, clip=clip, dim=dim, eta_mse=eta_mse,
                                                      kappa=kappa)) for s in sigmas])
    with_m = pd.DataFrame([risk.assess(risk.RiskQuery(noise_multiplier=s, clip=clip, dim=dim, eta_mse=eta_mse,
                                                      min_norm=min_norm)) for s in sigmas])
    return curves, with_m


def plot_bound_curves(curves: pd.DataFrame, with_m: pd.DataFrame):
    """The page's figure from :func:`bound_curves`: left, the expected-value bounds against epsilon (NCC, eqs. 8-9,
    and PSNR, eq. 6, of Ziller et al. 2024); right, the probabilities of a successful reconstruction (without and
    with the smallest norm, and the prior-aware worst case)."""
    eps = curves.epsilon_exact
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    ax = axes[0]
    ax.plot(eps, curves.ncc_upper_bound, color=plotting.DIM_BOUND, label="max E[NCC], eq. (8)")
    ax.plot(eps, curves.ncc_upper_bound_dimension_free, "--", color=plotting.BOUND, label="max E[NCC], eq. (9)")
    ax.set(xscale="log", xlabel=r"$\varepsilon$ at $\delta=10^{-5}$ (one step)", ylabel="NCC bound")
    twin = ax.twinx()
    twin.plot(eps, curves.psnr_upper_bound_db, color=plotting.EXACT, label="max E[PSNR], eq. (6) [dB]")
    twin.set_ylabel("PSNR bound [dB]")
    twin.grid(False)
    handles = ax.get_legend_handles_labels()[0] + twin.get_legend_handles_labels()[0]
    ax.legend(handles, [h.get_label() for h in handles], loc="center left")
    ax.set_title("Expected-value bounds (Ziller et al.)")
    ax = axes[1]
    ax.plot(eps, curves.mse_success_probability, color=plotting.BOUND, label="P(MSE ≤ 0.01), no data norm")
    ax.plot(eps, with_m.mse_success_probability, color=plotting.EMPIRICAL, label="P(MSE ≤ 0.01), smallest norm 100")
    ax.plot(eps, curves.worst_case_success, "--", color=plotting.EXACT, label="worst case, κ = 0.001")
    ax.set(xscale="log", xlabel=r"$\varepsilon$ at $\delta=10^{-5}$ (one step)", ylabel="success probability",
           title="Probability of a successful reconstruction")
    ax.legend(loc="center right")
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
