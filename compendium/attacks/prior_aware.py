"""The prior-aware reconstruction attack of Hayes et al. (2023) against real DP-SGD training (opacus).

The adversary knows a prior of ``m = 1 / kappa`` equally likely candidates for the target, sees the model at every
step and the privatised gradient of every step (clipped per sample, summed, Gaussian noise ``N(0, C^2 sigma^2 I)``;
Poisson sampling with rate ``q``), and picks the candidate with the largest likelihood

    ``L_i = sum_t log(1 - q + q exp((<y_t, g_i(theta_t)> - ||g_i(theta_t)||^2 / 2) / (C sigma)^2))``

where ``y_t`` is the privatised gradient and ``g_i(theta_t)`` candidate i's clipped gradient at the step's model.
Hayes et al. show that this attack nearly meets the ReRo bound ``1 - f(kappa)`` when the candidates' gradients are
orthogonal and of norm C; :func:`run_prior_aware_attack` builds that case with a linear model.
"""
from __future__ import annotations

import numpy as np
import torch

from compendium import checks, dp, validation


def run_prior_aware_attack(*, noise_multiplier: float, sample_rate: float, steps: int, kappa: float, trials: int,
                           clip: float = 1.0, lr: float = 0.01, seed: int = 0) -> dict:
    """Success rate of the prior-aware attack over ``trials`` independent DP-SGD trainings, with its standard error.

    Model: linear regression ``w . x`` (no bias) on ``m = round(1 / kappa)`` features, loss ``(w . x - y)^2 / 2``.
    Candidates ``x_i = e_i`` (the i-th unit vector) with label ``y_i = -10``: the gradient ``(w . x_i - y_i) x_i``
    has norm near 10, so clipping makes it ``C e_i`` (orthogonal candidates, norm C: the attack's best case).  Each
    trial draws its target uniformly from the candidates and trains ``steps`` DP-SGD steps with opacus (Poisson
    sampling of the target with rate ``q``; a zero record keeps a batch from being empty, its gradient is 0).  All
    trials train at once as one opacus model whose weight holds one block per trial (a record of trial j touches only
    block j, so clipping and noise are per trial).  Returns ``success`` (the fraction of trials where the attack named
    the target), ``se`` (its binomial standard error), ``kappa`` (the prior's success, ``1 / m``) and the settings."""
    sigma = validation.positive("noise_multiplier", noise_multiplier)
    q = validation.number("sample_rate", sample_rate, above=0.0, at_most=1.0, what="Poisson sampling rate q")
    T = validation.integer("steps", steps)
    kappa = validation.probability("kappa", kappa)
    n = validation.integer("trials", trials)
    m = int(round(1 / kappa))
    if m < 2 or abs(m * kappa - 1) > 1e-9:
        raise ValueError(f"kappa={kappa!r}; allowed: 1 / m for an integer m >= 2 (a prior of m candidates)")
    clip = validation.positive("clip", clip)
    rng = np.random.default_rng(seed)
    generator = torch.Generator().manual_seed(seed)

    targets = rng.integers(m, size=n)
    model = torch.nn.Linear(n * m, 1, bias=False)
    torch.nn.init.zeros_(model.weight)
    gsm, optimizer = dp.make_dp_sgd(model, max_grad_norm=clip, noise_multiplier=sigma, lr=lr, generator=generator)
    inputs = torch.zeros(n + 1, n * m)  # row j < n: trial j's target in its block; row n: the zero record
    inputs[np.arange(n), np.arange(n) * m + targets] = 1.0
    labels = torch.full((n + 1, 1), -10.0)
    labels[n] = 0.0
    candidates = torch.eye(m)
    scores = torch.zeros(n, m)
    noise_sd = clip * sigma
    for _ in range(T):
        batch = np.append(np.flatnonzero(rng.random(n) < q), n)
        weights = model.weight.detach().reshape(n, m).clone()  # the model the adversary sees at this step
        optimizer.zero_grad()
        loss = 0.5 * ((gsm(inputs[batch]) - labels[batch]) ** 2).sum()
        loss.backward()
        optimizer.step()
        released = model.weight.grad.detach().reshape(n, m)  # clipped, summed, noised (opacus' DPOptimizer)
        # candidate i's clipped gradient in trial j: (w_j . e_i - y) e_i, clipped to norm C
        residual = weights @ candidates.T + 10.0                        # (n, m): w_j . e_i - y_i
        norms = residual.abs()
        scale = torch.clamp(clip / norms, max=1.0) * residual          # the clipped gradient's one coordinate
        inner = released * scale                                         # <y_t, g_i> (g_i lies along e_i)
        scores += torch.log1p(q * torch.expm1((inner - scale**2 / 2) / noise_sd**2))
    guesses = scores.argmax(dim=1).numpy()
    success = float(np.mean(guesses == targets))
    return {"success": success, "se": float(checks.proportion_se(max(success, 1 / n), n)), "kappa": 1 / m,
            "noise_multiplier": sigma, "sample_rate": q, "steps": T, "trials": n}
