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

from compendium import validation
from compendium.dp import check_dp_parameters, make_dp_sgd

# opacus clips a per-sample gradient g by min(1, C / (||g|| + 1e-6)) (DPOptimizer.clip_and_accumulate).
OPACUS_CLIP_EPS = 1e-6


def linear_layer_model(n_features: int, device: torch.device | str = "cpu") -> torch.nn.Linear:
    """Eq. (1): ``nn.Linear(N, 1, bias=False)`` with ``W_0 = 0`` (the adversary's choice; the gradient is ``X`` for any
    W)."""
    return linear_rows_model(n_features, 1, device=device)


def linear_rows_model(n_features: int, rows: int, bias: bool = False,
                      device: torch.device | str = "cpu") -> torch.nn.Linear:
    """``nn.Linear(N, M, bias=bias)`` with all parameters 0 (Corollary 1 of "From Mean to Extreme": ``bias=False``).

    Under the loss ``c 1_M^T f(X)`` every weight-gradient row is ``c X`` and every bias gradient is ``c``,
    whatever the parameters are.
    """
    model = torch.nn.Linear(n_features, rows, bias=bias, device=device)
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
    return model


def _run_dp_sgd(model, flat, max_grad_norm, noise_multiplier, store, steps=1, lr=1.0, loss_scale=1.0,
                generator=None, progress=False, desc="DP-SGD attack") -> None:
    """The attack loop shared by every attack here (opacus DP-SGD, batch of one, one sample after the other).

    For each row ``x`` of ``flat``: all parameters reset to 0; ``steps`` DP-SGD steps with the loss
    ``loss_scale * sum(model(x))``; then ``store(i, updates)`` with ``updates[k] = (P_0 - P_T) / (lr * steps)`` for
    the k-th parameter ``P`` (the average privatised gradient, read from the weights as a data trap would).
    """
    gsm, optimizer = make_dp_sgd(model, max_grad_norm, noise_multiplier, lr=lr, generator=generator)
    with warnings.catch_warnings():
        # torch warns that the backward hook fires "since no inputs require gradients": true and harmless here.
        warnings.filterwarnings("ignore", message="Full backward hook is firing")
        for i in tqdm(range(flat.shape[0]), desc=desc, disable=not progress, leave=False):
            with torch.no_grad():
                for p in model.parameters():
                    p.zero_()
            for _ in range(steps):
                optimizer.zero_grad(set_to_none=True)
                loss = gsm(flat[i : i + 1]).sum()
                (loss if loss_scale == 1.0 else loss_scale * loss).backward()
                optimizer.step()
            store(i, [-p.detach() / (lr * steps) for p in model.parameters()])


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
    validation.integer("steps", steps)
    if not lr > 0:
        raise ValueError(f"lr must be > 0; got {lr!r}")
    flat = images.reshape(images.shape[0], -1)
    out = torch.empty_like(flat)

    def store(i, updates):
        out[i] = updates[0][0]

    _run_dp_sgd(linear_layer_model(flat.shape[1], flat.device), flat, max_grad_norm, noise_multiplier, store,
                steps=steps, lr=lr, generator=generator, progress=progress)
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
    validation.integer("steps", steps)
    flat = images.reshape(images.shape[0], -1)
    beta = (max_grad_norm / flat.norm(dim=1)).clamp(max=1.0)
    shape = images.shape if n_draws is None else (n_draws, *images.shape)
    noise = torch.randn(shape, generator=generator, device=images.device, dtype=images.dtype)
    scale = max_grad_norm * noise_multiplier / steps**0.5
    return beta.reshape(-1, *([1] * (images.ndim - 1))) * images + scale * noise


# ---------------------------------------------------------------------------------------------------------------
# "From Mean to Extreme": M rows, the optimal unbiased reconstruction (Corollary 1) and the ratio attack (eq. 15)
# ---------------------------------------------------------------------------------------------------------------
def _check_rows_attack(max_grad_norm, noise_multiplier, rows, loss_scale) -> None:
    check_dp_parameters(max_grad_norm, noise_multiplier)
    validation.integer("rows", rows)
    validation.number("loss_scale", loss_scale, what="c, non-zero")
    if loss_scale == 0:
        raise ValueError(f"loss_scale={loss_scale!r}; allowed: a finite non-zero number (c)")


def reconstruct_rows(
    images: torch.Tensor,
    max_grad_norm: float,
    noise_multiplier: float,
    rows: int,
    loss_scale: float = 1.0,
    generator: torch.Generator | None = None,
    progress: bool = False,
) -> torch.Tensor:
    """Corollary 1 of "From Mean to Extreme", run through opacus: the optimal unbiased reconstruction from M rows.

    For every image: ``nn.Linear(N, M, bias=False)`` with ``W_0 = 0``, loss ``c 1_M^T W X`` (``c = loss_scale``),
    one DP-SGD step with lr 1 (opacus clips the (M, N) per-sample gradient ``c 1_M X^T`` to ``max_grad_norm`` and adds
    ``N(0, C^2 sigma^2)`` to each of its M N entries).  The M noisy rows, read from ``W_0 - W_1``, are averaged and
    divided by the known scale ``beta c`` (assumption A*, eq. 16), with ``beta`` the factor opacus applied,
    ``min(1, C / (sqrt(M) |c| ||X|| + 1e-6))`` (eq. 10 up to opacus' 1e-6).  Result:
    ``X_hat ~ N(X, sigma^2 max(||X||^2, C^2 / (M c^2)) I_N)``, the optimum ``N(X, sigma^2 ||X||^2 I_N)`` once
    ``M c^2 >= (C / ||X||)^2`` (see :func:`compendium.bounds.mean_to_extreme.optimal_rows`).  Shaped like ``images``.
    Memory grows with ``M N`` (opacus keeps the per-sample gradient and the noise); use
    :func:`sample_rows_release` for large Monte-Carlo samples.
    """
    _check_rows_attack(max_grad_norm, noise_multiplier, rows, loss_scale)
    flat = images.reshape(images.shape[0], -1)
    grad_norm = flat.double().norm(dim=1) * abs(loss_scale) * rows**0.5
    scale = (max_grad_norm / (grad_norm + OPACUS_CLIP_EPS)).clamp(max=1.0) * loss_scale  # beta c per image
    out = torch.empty_like(flat)

    def store(i, updates):
        out[i] = updates[0].mean(0) / scale[i].item()

    _run_dp_sgd(linear_rows_model(flat.shape[1], rows, device=flat.device), flat, max_grad_norm, noise_multiplier,
                store, loss_scale=loss_scale, generator=generator, progress=progress, desc=f"DP-SGD attack, M = {rows}")
    return out.reshape(images.shape)


def sample_rows_release(
    images: torch.Tensor,
    max_grad_norm: float,
    noise_multiplier: float,
    rows: int,
    loss_scale: float = 1.0,
    n_draws: int | None = None,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """The law of :func:`reconstruct_rows` in one batched call: ``X + N(0, sigma^2 max(||X||^2, C^2 / (M c^2)))``.

    Equal in distribution to the opacus attack (the mean of M independent ``N(0, C^2 sigma^2)`` rows divided by
    ``beta c`` is ``N(0, C^2 sigma^2 / (M c^2 beta^2))``), with ``beta = min(1, C / (sqrt(M) |c| ||X||))`` exactly,
    and needing memory for N values per draw instead of M N.  With ``n_draws`` the result has a leading axis of
    that many independent draws.
    """
    _check_rows_attack(max_grad_norm, noise_multiplier, rows, loss_scale)
    flat = images.reshape(images.shape[0], -1)
    sd = noise_multiplier * torch.clamp(flat.norm(dim=1), min=max_grad_norm / (rows**0.5 * abs(loss_scale)))
    shape = images.shape if n_draws is None else (n_draws, *images.shape)
    noise = torch.randn(shape, generator=generator, device=images.device, dtype=images.dtype)
    return images + sd.reshape(-1, *([1] * (images.ndim - 1))) * noise


def ratio_attack(
    images: torch.Tensor,
    max_grad_norm: float,
    noise_multiplier: float,
    rows: int = 1,
    loss_scale: float = 1.0,
    generator: torch.Generator | None = None,
    progress: bool = False,
) -> torch.Tensor:
    """Eq. (15) of "From Mean to Extreme": the ratio reconstruction from a layer *with* bias, through opacus.

    For every image: ``nn.Linear(N, M, bias=True)`` with all parameters 0, loss ``c 1_M^T (W X + b)``, one DP-SGD
    step; row j of the reconstruction is the noisy weight-gradient row divided by the noisy bias gradient,
    ``(beta c X + xi_j) / (beta c + xi'_j)`` (eq. 8 without noise).  No knowledge of ``beta`` is needed, but each
    entry is a ratio of normals without finite mean or variance (Cauchy-like tails), which is why the paper rejects
    it.  Returns shape ``(rows, *images.shape)``: M ratio reconstructions of every image.
    """
    _check_rows_attack(max_grad_norm, noise_multiplier, rows, loss_scale)
    flat = images.reshape(images.shape[0], -1)
    out = torch.empty(rows, *flat.shape, dtype=flat.dtype, device=flat.device)

    def store(i, updates):
        weight, bias = updates
        out[:, i] = weight / bias[:, None]

    _run_dp_sgd(linear_rows_model(flat.shape[1], rows, bias=True, device=flat.device), flat, max_grad_norm,
                noise_multiplier, store, loss_scale=loss_scale, generator=generator, progress=progress,
                desc="DP-SGD ratio attack")
    return out.reshape(rows, *images.shape)
