"""DP-SGD glue around opacus: privatised optimisers and the sigma -> epsilon conversion.

All DP-SGD in the book goes through opacus (per-sample clipping, Gaussian noise, accountants).  The exact
epsilon of the (non-subsampled, composed) Gaussian mechanism is computed here in closed form because opacus has no
exact accountant for it; it serves as the reference the RDP and PRV accountants are compared with.
"""
from __future__ import annotations

import warnings

import numpy as np
import torch
from opacus import GradSampleModule
from opacus.accountants import PRVAccountant, RDPAccountant
from opacus.optimizers import DPOptimizer
from scipy import optimize, special

from compendium import validation

# opacus' PRV accountant discretises the privacy-loss distribution; for a single release with a very small noise
# multiplier (sigma < 0.03, epsilon of order 1000) it raises "Discrete mean differs significantly" or does not
# finish.  The composition is about mu-GDP, mu = sqrt(T) / sigma without subsampling and q sqrt(T (e^{1/sigma^2} -
# 1)) with it (Bu et al. 2020, the central limit of subsampled DP-SGD); where 1 / mu is below this value the PRV
# column is reported as out of range rather than attempted.  Subsampling matters: q = 0.004, T = 2000, sigma = 1.1
# has sigma / sqrt(T) = 0.025 but 1 / mu = 4.9, well inside the accountant's range.
PRV_MIN_EFFECTIVE_SIGMA = 0.03


def effective_mu(noise_multiplier: float, steps: int, sample_rate: float = 1.0) -> float:
    """The GDP parameter the composition is close to: ``sqrt(T) / sigma`` at ``q = 1`` (exact), else the central
    limit ``q sqrt(T (e^{1/sigma^2} - 1))`` (Bu et al. 2020, Thm. 5)."""
    if sample_rate == 1:
        return float(np.sqrt(steps) / noise_multiplier)
    return float(sample_rate * np.sqrt(steps * np.expm1(1 / noise_multiplier**2)))


def prv_in_range(noise_multiplier: float, steps: int, sample_rate: float = 1.0) -> bool:
    """Whether opacus' PRV accountant is inside its numerical range: ``1 / mu >= PRV_MIN_EFFECTIVE_SIGMA``, or
    ``sigma / sqrt(T) >= PRV_MIN_EFFECTIVE_SIGMA`` (the full-batch ``1 / mu``, which bounds the subsampled
    composition's privacy loss from above; the central limit overstates ``mu`` at large ``q`` and small ``sigma``,
    where the accountant works, e.g. the transfer-learning chapter's ``q = 1/2``)."""
    floor = PRV_MIN_EFFECTIVE_SIGMA
    return (1 / effective_mu(noise_multiplier, steps, sample_rate) >= floor
            or noise_multiplier / np.sqrt(steps) >= floor)

# Renyi orders for the RDP accountant: opacus' defaults (1.1 to 63) plus orders close to 1 (very small sigma) and up
# to 4096 (very large sigma), so that the optimal order lies inside the range for every sigma the book uses.
RDP_ORDERS = sorted(set(RDPAccountant.DEFAULT_ALPHAS) | set((1 + np.geomspace(1e-4, 0.1, 40)).tolist())
                    | set(np.geomspace(64, 4096, 40).tolist()))


def check_dp_parameters(max_grad_norm: float, noise_multiplier: float) -> None:
    """``ValueError`` unless ``max_grad_norm > 0`` and ``noise_multiplier >= 0`` (0 switches the noise off)."""
    validation.positive("max_grad_norm", max_grad_norm, what="C")
    validation.number("noise_multiplier", noise_multiplier, at_least=0.0, what="sigma; 0 switches the noise off")


def make_dp_sgd(
    model: torch.nn.Module,
    max_grad_norm: float,
    noise_multiplier: float,
    lr: float = 1.0,
    generator: torch.Generator | None = None,
) -> tuple[GradSampleModule, DPOptimizer]:
    """Wrap ``model`` for DP-SGD with batches of one (Abadi et al. 2016, Algorithm 1).

    Per-sample gradients are clipped to ``max_grad_norm`` (C) by opacus, ``N(0, C^2 sigma^2)`` noise is added, and
    with ``expected_batch_size=1`` and summed losses the noisy sum is the update direction.  ``generator`` makes the
    noise reproducible (opacus' non-secure RNG).  ``max_grad_norm`` and ``noise_multiplier`` can be changed later on
    the returned optimizer.
    """
    check_dp_parameters(max_grad_norm, noise_multiplier)
    gsm = GradSampleModule(model, loss_reduction="sum")
    optimizer = DPOptimizer(
        torch.optim.SGD(gsm.parameters(), lr=lr),
        noise_multiplier=noise_multiplier,
        max_grad_norm=max_grad_norm,
        expected_batch_size=1,
        loss_reduction="sum",
        generator=generator,
    )
    return gsm, optimizer


def gaussian_delta(eps: float, mu: float) -> float:
    """delta(eps) of mu-GDP (Dong et al. 2022, Cor. 2.13): Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)."""
    return float(special.ndtr(-eps / mu + mu / 2) - np.exp(eps + special.log_ndtr(-eps / mu - mu / 2)))


def epsilon_exact(noise_multiplier: float, steps: int = 1, delta: float = 1e-5) -> float:
    """Exact epsilon of ``steps`` composed Gaussian mechanisms without subsampling (sampling rate 1).

    The composition is ``mu``-GDP with ``mu = sqrt(steps) / sigma`` (Dong et al. 2022); epsilon solves
    ``delta(eps) = delta`` for the GDP privacy profile.  Exact: the RDP accountant gives a larger epsilon and the
    PRV accountant approximates this one.
    """
    _check_accounting(noise_multiplier, steps, delta)
    mu = np.sqrt(steps) / noise_multiplier
    if gaussian_delta(0.0, mu) <= delta:
        return 0.0
    hi = 1.0
    while gaussian_delta(hi, mu) > delta:
        hi *= 2.0
    return float(optimize.brentq(lambda e: gaussian_delta(e, mu) - delta, 0.0, hi, xtol=1e-10, rtol=1e-12))


def epsilon(noise_multiplier: float, steps: int = 1, delta: float = 1e-5, sample_rate: float = 1.0,
            accountant: str = "rdp") -> float:
    """Epsilon from an opacus accountant (``"rdp"``: Mironov 2017; ``"prv"``: Gopi et al. 2021).

    Raises ``ValueError`` when ``accountant="prv"`` is asked outside its numerical range
    (``1 / mu < PRV_MIN_EFFECTIVE_SIGMA``, :func:`effective_mu`).
    """
    _check_accounting(noise_multiplier, steps, delta)
    validation.number("sample_rate", sample_rate, above=0.0, at_most=1.0, what="Poisson sampling rate q")
    if accountant == "rdp":
        acc = RDPAccountant()
    elif accountant == "prv":
        if not prv_in_range(noise_multiplier, steps, sample_rate):
            raise ValueError(
                f"the PRV accountant is out of its numerical range for 1/mu = "
                f"{1 / effective_mu(noise_multiplier, steps, sample_rate):.3g} and sigma/sqrt(steps) = "
                f"{noise_multiplier / np.sqrt(steps):.3g}, both < {PRV_MIN_EFFECTIVE_SIGMA} (mu: the composition's "
                "GDP parameter, see compendium.dp.effective_mu); the RDP epsilon holds")
        acc = PRVAccountant()
    else:
        raise ValueError(f"accountant={accountant!r}; allowed: 'rdp', 'prv'")
    acc.history = [(float(noise_multiplier), float(sample_rate), int(steps))]
    with warnings.catch_warnings(), np.errstate(all="ignore"):  # both accountants warn on log(0) at q = 1
        warnings.filterwarnings("ignore", category=RuntimeWarning)
        # at very large epsilon the best Renyi order is the smallest one tried; the RDP value is then a valid but
        # loose bound (the PRV accountant gives the tight one), which is what the callers print beside it
        warnings.filterwarnings("ignore", message="Optimal order is the smallest alpha")
        if accountant == "rdp":
            # opacus' default orders first, all of RDP_ORDERS only when the best default order is an end of that
            # range: epsilon is unimodal in the order, so an interior best is the best over RDP_ORDERS too, and at
            # q < 1 each fractional order near 1 costs opacus a slowly converging series (20 ms)
            eps, best = acc.get_privacy_spent(delta=delta, alphas=RDPAccountant.DEFAULT_ALPHAS)
            if min(RDPAccountant.DEFAULT_ALPHAS) < best < max(RDPAccountant.DEFAULT_ALPHAS):
                return float(eps)
            return float(acc.get_epsilon(delta=delta, alphas=RDP_ORDERS))
        return float(acc.get_epsilon(delta=delta))


def epsilon_report(sigmas, steps: int = 1, delta: float = 1e-5) -> list[dict]:
    """One row per sigma: exact, RDP and PRV epsilon at ``delta`` (PRV ``None`` where out of range)."""
    rows = []
    for s in sigmas:
        prv = None
        if prv_in_range(s, steps):
            prv = epsilon(s, steps, delta, accountant="prv")
        rows.append({"sigma": float(s), "steps": steps, "delta": delta, "eps_exact": epsilon_exact(s, steps, delta),
                     "eps_rdp": epsilon(s, steps, delta, accountant="rdp"), "eps_prv": prv})
    return rows


def _check_accounting(noise_multiplier: float, steps: int, delta: float) -> None:
    validation.positive("noise_multiplier", noise_multiplier, what="sigma; > 0 for a finite epsilon")
    validation.integer("steps", steps)
    validation.probability("delta", delta)
