"""The analytic linear-layer attack of Ziller et al. (2024), Section 2.1, run for real through opacus DP-SGD.

The adversary (e.g. a malicious federated-learning server) sets the model to one bias-free linear layer
``Y = W^T X`` with ``W`` of shape (N, 1) and uses the output itself as the loss (eq. 1).  Then the weight gradient is
the input, ``grad_W L = X`` (eq. 2), for any ``W``; with N parameters this is the smallest model that can carry an
incompressible input.  Under DP-SGD with a batch of one the update releases ``X_hat = beta X + xi``
(eq. 3; ``beta = min(1, C/||X||)``, ``xi ~ N(0, C^2 sigma^2 I)``), and ``T`` steps on the same sample give the
average of ``T`` such releases (Proposition 4), readable from the first and last weights alone:
``X_hat_avg = (W_0 - W_T) / (lr T)``.

:func:`reconstruct` runs that attack with opacus (per-sample clipping and noise); :func:`sample_release` draws from
the closed-form observation model (eq. 3) in one batched call, and is used for large Monte-Carlo samples once the
chapter has tested that opacus' releases follow it.
"""
from __future__ import annotations

import warnings

import torch
from tqdm import tqdm

from ..dp import check_dp_parameters, make_dp_sgd


def linear_layer_model(n_features: int, device: torch.device | str = "cpu") -> torch.nn.Linear:
    """Eq. (1): ``nn.Linear(N, 1, bias=False)`` with ``W_0 = 0`` (the adversary's choice; the gradient is ``X`` for any W)."""
    model = torch.nn.Linear(n_features, 1, bias=False, device=device)
    torch.nn.init.zeros_(model.weight)
    return model


def reconstruct(
    images: torch.Tensor,
    max_grad_norm: float,
    noise_multiplier: float,
    steps: int = 1,
    lr: float = 1.0,
    generator: torch.Generator | None = None,
    progress: bool = False,
) -> torch.Tensor:
    """Reconstruct each image from the weights of DP-SGD on the linear layer (opacus; batch of one; ``steps`` steps).

    For every image: ``W_0 = 0``; ``steps`` DP-SGD steps (forward, loss = output, backward, opacus clips the
    per-sample gradient to ``max_grad_norm`` and adds ``N(0, C^2 sigma^2)`` noise, SGD update); the reconstruction
    is ``(W_0 - W_T) / (lr * steps)``, reshaped like the image.  ``noise_multiplier=0`` with
    ``max_grad_norm >= ||X||`` recovers ``X`` exactly.
    """
    check_dp_parameters(max_grad_norm, noise_multiplier)
    _check_steps(steps)
    if not lr > 0:
        raise ValueError(f"lr must be > 0; got {lr!r}")
    flat = images.reshape(images.shape[0], -1)
    model = linear_layer_model(flat.shape[1], flat.device)
    gsm, optimizer = make_dp_sgd(model, max_grad_norm, noise_multiplier, lr=lr, generator=generator)
    out = torch.empty_like(flat)
    with warnings.catch_warnings():
        # torch warns that the backward hook fires "since no inputs require gradients": true and harmless here.
        warnings.filterwarnings("ignore", message="Full backward hook is firing")
        for i in tqdm(range(flat.shape[0]), desc="DP-SGD attack", disable=not progress, leave=False):
            with torch.no_grad():
                model.weight.zero_()
            for _ in range(steps):
                optimizer.zero_grad(set_to_none=True)
                gsm(flat[i : i + 1]).sum().backward()
                optimizer.step()
            out[i] = -model.weight.detach()[0] / (lr * steps)
    return out.reshape(images.shape)


def reconstruct_grid(
    images: torch.Tensor,
    clip_norms,
    sigmas,
    steps: int = 1,
    generator: torch.Generator | None = None,
    progress: bool = True,
):
    """:func:`reconstruct` for every (C, sigma) pair, yielded as ``(C, sigma, reconstructions)``.

    A generator, so that only one grid cell's reconstructions are in memory at a time (at the paper's scale the whole
    grid would need gigabytes); a progress bar counts the cells.
    """
    with tqdm(total=len(clip_norms) * len(sigmas), desc="attack grid (C, sigma)", disable=not progress) as bar:
        for c in clip_norms:
            for s in sigmas:
                yield float(c), float(s), reconstruct(images, float(c), float(s), steps=steps, generator=generator)
                bar.update()


def sample_release(
    images: torch.Tensor,
    max_grad_norm: float,
    noise_multiplier: float,
    steps: int = 1,
    n_draws: int | None = None,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Closed-form observation model, eq. (3) with Proposition 4: ``beta X + N(0, C^2 sigma^2 / T)`` per image.

    ``beta = min(1, C / ||X||)`` exactly (opacus uses ``C / (||X|| + 1e-6)``, a negligible difference).  With
    ``n_draws`` the result has a leading axis of that many independent draws.
    """
    check_dp_parameters(max_grad_norm, noise_multiplier)
    _check_steps(steps)
    flat = images.reshape(images.shape[0], -1)
    beta = (max_grad_norm / flat.norm(dim=1)).clamp(max=1.0)
    shape = images.shape if n_draws is None else (n_draws, *images.shape)
    noise = torch.randn(shape, generator=generator, device=images.device, dtype=images.dtype)
    scale = max_grad_norm * noise_multiplier / steps**0.5
    return beta.reshape(-1, *([1] * (images.ndim - 1))) * images + scale * noise


def _check_steps(steps) -> None:
    if int(steps) != steps or steps < 1:
        raise ValueError(f"steps must be an integer >= 1; got {steps!r}")
