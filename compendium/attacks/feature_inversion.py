"""Reconstruction attacks on revealed (dithered) features, for the HCR chapter (Chaudhuri et al. 2024).

Setting: a client reveals ``X = a(theta) + Z``, ``Z ~ N(0, sigma^2 I_n)``, where ``a`` is the feature map
(``model.features`` of a :class:`compendium.models.SplitClassifier`, or any batched torch function from inputs of
shape ``(B, C, H, W)`` to features of shape ``(B, n)``).  The HCR bound lower-bounds the standard deviation of every
*unbiased* estimator of ``theta``; the attacks here are real estimators whose errors the chapter puts beside it.

* :func:`invert_by_optimisation` -- inversion by optimisation through the network, the MAP estimate under a
  Gaussian prior centred at ``x_init`` (the maximum-likelihood estimate when ``prior_weight = 0``): for each example
  ``b``

  ``x_b* = argmin_x  L_b(x),   L_b(x) = ||a(x) - X_b||^2 + lambda ||x - x_init_b||^2``

  (optionally projected onto a box ``lo <= x <= hi``).  The negative log-posterior with prior
  ``theta ~ N(x_init, tau^2 I)`` is ``L_b / (2 sigma^2)`` up to a constant, with ``lambda = sigma^2 / tau^2``.
  For a linear map ``a(x) = A x`` the minimiser is the ridge / MAP solution
  ``x* = x_init + (A^T A + lambda I)^{-1} A^T (X - A x_init)``.
* :func:`linearised_estimator` -- the Gauss-Newton (linearised least-squares) estimator
  ``x_hat = x0 + J^+ (X - a(x0))`` with ``J = da/dx`` at ``x0`` (per example, ``torch.func.vmap(jacrev)``) and
  ``J^+`` the pseudo-inverse that keeps singular values above ``rcond * s_max``.  For a linear (or affine) map with
  full column rank it is the ordinary least-squares estimator ``A^+ X``: unbiased, with covariance
  ``sigma^2 (A^T A)^{-1}``, i.e. it attains the Cramer-Rao bound
  (:func:`compendium.bounds.hcr.cramer_rao_bound`).  For a nonlinear map it is unbiased only to first order in the
  noise and in ``x0 - theta``.
* :func:`train_decoder` / :func:`decode` -- a learned inverse (:class:`compendium.models.FeatureDecoder`, trained
  through :func:`compendium.train.fit`): an MLP from the ``n``
  features to the pixels, trained by the attacker on *other* images (its own data) to minimise the mean squared error
  ``E ||g(a(x) + sigma Z) - x||^2 / p`` with fresh noise every batch.  It approximates the posterior mean
  ``E[theta | X]`` under the attacker's image distribution: biased, and so not bound by the HCR bound (which holds
  for unbiased estimators only).

Random state comes only from explicit ``torch.Generator`` arguments (noise drawn on the CPU and moved to the
device, so results do not depend on the device's random stream); tensors may live on any device.
"""
from __future__ import annotations

import math
from typing import Callable, NamedTuple

import torch
from torch import nn
from tqdm import tqdm

from compendium import validation
from compendium.base import resolve_device
from compendium.jacobians import feature_jacobians
from compendium.train import fit

__all__ = ["InversionResult", "invert_by_optimisation", "linearised_estimator", "train_decoder", "decode"]

FeatureMap = Callable[[torch.Tensor], torch.Tensor]
SCHEDULES = ("cosine", "constant")


# ---------------------------------------------------------------------------------------------------------------
# validation helpers
# ---------------------------------------------------------------------------------------------------------------
def _check_tensor(name: str, t, min_ndim: int = 2) -> torch.Tensor:
    if not isinstance(t, torch.Tensor) or not t.is_floating_point():
        raise ValueError(f"{name} must be a floating-point torch.Tensor; got {type(t).__name__} "
                         f"{getattr(t, 'dtype', '')}")
    if t.ndim < min_ndim or t.shape[0] == 0:
        raise ValueError(f"{name} must have shape (B, ...) with B >= 1 and at least {min_ndim} axes; "
                         f"got {tuple(t.shape)}")
    if not bool(torch.isfinite(t).all()):
        raise ValueError(f"{name} must contain only finite values; got NaN or infinity")
    return t


def _check_start(name: str, x0, batch: int) -> torch.Tensor:
    _check_tensor(name, x0)
    if x0.shape[0] not in (1, batch):
        raise ValueError(f"{name} must have leading dimension B = {batch} (one start per example) or 1 (shared); "
                         f"got shape {tuple(x0.shape)}")
    return x0


def _check_feature_map(feature_map) -> None:
    if not callable(feature_map):
        raise ValueError(f"feature_map must be a callable (e.g. model.features); got {type(feature_map).__name__}")


def _check_feature_shape(features: torch.Tensor, observed: torch.Tensor) -> None:
    if features.shape[1:] != observed.shape[1:]:
        raise ValueError(f"observed has per-example shape {tuple(observed.shape[1:])} but feature_map gives "
                         f"{tuple(features.shape[1:])}; they must match")


# ---------------------------------------------------------------------------------------------------------------
# inversion by optimisation (MAP under a Gaussian prior; maximum likelihood without it)
# ---------------------------------------------------------------------------------------------------------------
class InversionResult(NamedTuple):
    """Output of :func:`invert_by_optimisation`: ``reconstruction`` (shape of ``x_init`` broadcast to ``B``,
    detached) and ``data_loss`` (shape ``(B,)``, ``||a(x_b) - X_b||^2`` at the returned reconstruction)."""

    reconstruction: torch.Tensor
    data_loss: torch.Tensor


def invert_by_optimisation(feature_map: FeatureMap, observed: torch.Tensor, x_init: torch.Tensor,
                           steps: int = 2000, lr: float = 1e-2, prior_weight: float = 0.0,
                           bounds: tuple[float, float] | None = None, schedule: str = "cosine",
                           progress: bool = False) -> InversionResult:
    """Invert the revealed features by optimisation, all ``B`` examples at once.

    Minimises, by Adam on one ``(B, ...)`` tensor started at ``x_init``,

    ``sum_b L_b(x_b),   L_b(x) = ||a(x) - X_b||^2 + lambda ||x - x_init_b||^2``,

    with ``lambda = prior_weight``.  ``L_b / (2 sigma^2)`` is the negative log-posterior under the prior
    ``theta ~ N(x_init, (sigma^2 / lambda) I)``, so the minimiser is the MAP estimate (the maximum-likelihood
    estimate for ``lambda = 0``); for ``a(x) = A x`` it is ``x_init + (A^T A + lambda I)^{-1} A^T (X - A x_init)``.
    With ``bounds = (lo, hi)`` every step is followed by clamping to the box (projected Adam), and the start is
    clamped too.

    Parameters
    ----------
    feature_map : batched torch function ``(B, *input_shape) -> (B, *feature_shape)``, e.g. ``model.features``.
        Its parameters receive no gradient (only ``x`` is differentiated).
    observed : revealed features ``X``, shape ``(B, *feature_shape)``.
    x_init : start and prior mean, shape ``(B, *input_shape)`` or ``(1, *input_shape)`` (shared, e.g. the training
        mean image).
    steps : number of Adam steps (at least 1).
    lr : Adam's learning rate (positive), the largest step per pixel and step.
    prior_weight : ``lambda >= 0``.
    bounds : ``None`` or ``(lo, hi)`` with ``lo < hi``.
    schedule : ``"cosine"`` (the default: the learning rate decays from ``lr`` to 0 over ``steps``, which lets Adam
        settle on the minimiser instead of oscillating at a distance of about ``lr``) or ``"constant"``.

    Returns an :class:`InversionResult` ``(reconstruction, data_loss)``.  Deterministic (no randomness at all).
    """
    _check_feature_map(feature_map)
    _check_tensor("observed", observed)
    batch = observed.shape[0]
    _check_start("x_init", x_init, batch)
    validation.integer("steps", steps)
    lr = validation.positive("lr", lr)
    prior_weight = validation.number("prior_weight", prior_weight, at_least=0.0)
    if bounds is not None:
        if (not isinstance(bounds, (tuple, list)) or len(bounds) != 2
                or not all(isinstance(b, (int, float)) and not isinstance(b, bool) for b in bounds)
                or math.isnan(bounds[0]) or math.isnan(bounds[1]) or not bounds[0] < bounds[1]):
            raise ValueError(f"bounds={bounds!r}; allowed: None or a pair (lo, hi) of numbers with lo < hi")
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule={schedule!r}; allowed: {', '.join(map(repr, SCHEDULES))}")

    observed = observed.detach()
    prior_mean = x_init.detach().to(observed.device)
    x = prior_mean.expand(batch, *prior_mean.shape[1:]).clone()
    if bounds is not None:
        x.clamp_(bounds[0], bounds[1])
    with torch.no_grad():
        _check_feature_shape(feature_map(x[:1]), observed)
    x.requires_grad_(True)
    # Adam rather than L-BFGS: Adam's update is elementwise, so with a loss that is a sum over examples each
    # example's trajectory is exactly the one it would have alone (the batch is only a speed-up), and the box
    # projection is a plain clamp.  L-BFGS shares its line search and curvature pairs across the whole tensor,
    # which couples the examples (one bad example shortens everyone's steps) and does not combine with clamping.
    opt = torch.optim.Adam([x], lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps) if schedule == "cosine" else None
    bar = tqdm(range(steps), desc="inversion by optimisation", unit="step", disable=not progress)
    with torch.enable_grad():
        for step in bar:
            data = (feature_map(x) - observed).flatten(1).pow(2).sum(1)
            loss = data.sum()
            if prior_weight > 0:
                loss = loss + prior_weight * (x - prior_mean).pow(2).sum()
            (grad,) = torch.autograd.grad(loss, x)   # no gradient accumulates in the feature map's parameters
            x.grad = grad
            opt.step()
            if sched is not None:
                sched.step()
            if bounds is not None:
                with torch.no_grad():
                    x.clamp_(bounds[0], bounds[1])
            if progress and (step % 50 == 0 or step == steps - 1):
                bar.set_postfix(data_loss=f"{float(data.detach().mean()):.4g}")
    x = x.detach()
    with torch.no_grad():
        data_loss = (feature_map(x) - observed).flatten(1).pow(2).sum(1)
    return InversionResult(x, data_loss)


# ---------------------------------------------------------------------------------------------------------------
# the linearised (Gauss-Newton) estimator
# ---------------------------------------------------------------------------------------------------------------
def linearised_estimator(feature_map: FeatureMap, observed: torch.Tensor, x0: torch.Tensor,
                         rcond: float | None = None, iterations: int = 1, chunk_size: int = 64) -> torch.Tensor:
    """The linearised (Gauss-Newton) least-squares estimator ``x_hat = x0 + J^+ (X - a(x0))``, per example.

    ``J`` is the ``(n, p)`` Jacobian of the flattened feature map at ``x0_b`` (``torch.func.vmap(jacrev)``), and
    ``J^+ = V_r S_r^{-1} U_r^T`` its pseudo-inverse over the singular values ``s > rcond * s_max``
    (``torch.linalg.pinv(J, rtol=rcond)``; ``rcond=None``: ``max(n, p) * eps`` of the dtype).  With
    ``iterations = k > 1`` the step is repeated from each new point (Gauss-Newton; the Jacobian is recomputed).

    For a linear map ``a(x) = A x`` (or affine) with full column rank, ``J^+ = (A^T A)^{-1} A^T`` and
    ``x_hat = A^+ X`` whatever ``x0`` is: the ordinary least-squares estimator, unbiased, with covariance
    ``sigma^2 (A^T A)^{-1}`` -- it attains the Cramer-Rao bound, the small-perturbation limit of the HCR bound.  Where
    ``J`` is rank deficient (``n < p``, dead ReLUs) only the component of ``theta`` in ``J``'s row space is estimated
    (the rest stays at ``x0``) and no unbiased estimator of the full input exists (the bound is infinite).  For a
    nonlinear map the estimator is unbiased only to first order (in the noise and in ``x0 - theta``).

    Parameters
    ----------
    feature_map : batched torch function ``(B, *input_shape) -> (B, *feature_shape)``, e.g. ``model.features``;
        it must work under ``torch.func.vmap`` (standard layers do).
    observed : ``X``, shape ``(B, *feature_shape)``.
    x0 : linearisation point, shape ``(B, *input_shape)`` or ``(1, *input_shape)`` (shared: the Jacobian and its
        pseudo-inverse are then computed once for the first step, which makes large Monte-Carlo batches cheap).
    rcond : ``None`` or a relative cut-off in ``[0, 1)``.
    iterations : Gauss-Newton steps (at least 1).
    chunk_size : examples whose Jacobians are held at once (memory ``chunk_size * n * p`` values).

    Returns the estimates, shape ``(B, *input_shape)``, detached, in the dtype of ``x0``.
    """
    _check_feature_map(feature_map)
    _check_tensor("observed", observed)
    batch = observed.shape[0]
    _check_start("x0", x0, batch)
    if rcond is not None:
        if isinstance(rcond, bool) or not isinstance(rcond, (int, float)) or not 0 <= rcond < 1:
            raise ValueError(f"rcond={rcond!r}; allowed: None or a number in [0, 1)")
    validation.integer("iterations", iterations)
    validation.integer("chunk_size", chunk_size)

    observed = observed.detach()
    x = x0.detach().to(observed.device)
    with torch.no_grad():
        _check_feature_shape(feature_map(x[:1]), observed)
    flat_obs = observed.reshape(batch, -1)
    shape = x.shape[1:]

    def pinv(J: torch.Tensor) -> torch.Tensor:
        tol = max(J.shape[-2:]) * torch.finfo(J.dtype).eps if rcond is None else float(rcond)
        return torch.linalg.pinv(J, rtol=tol)

    for _ in range(iterations):
        if x.shape[0] == 1:
            # one linearisation point shared by every example: one Jacobian, one pseudo-inverse
            J_pinv = pinv(feature_jacobians(feature_map, x)[0])                           # (p, n)
            with torch.no_grad():
                resid = flat_obs - feature_map(x).reshape(1, -1)                          # (B, n)
            x = (x.reshape(1, -1) + resid @ J_pinv.T).reshape(batch, *shape)
            continue
        out = torch.empty_like(x)
        for start in range(0, batch, chunk_size):
            xc = x[start:start + chunk_size]
            J_pinv = pinv(feature_jacobians(feature_map, xc))                              # (b, p, n)
            with torch.no_grad():
                resid = flat_obs[start:start + chunk_size] - feature_map(xc).reshape(xc.shape[0], -1)
            step = (J_pinv @ resid.unsqueeze(-1)).squeeze(-1)
            out[start:start + chunk_size] = xc + step.reshape(xc.shape)
        x = out
    return x.detach()


# ---------------------------------------------------------------------------------------------------------------
# the learned decoder
# ---------------------------------------------------------------------------------------------------------------
def train_decoder(decoder: nn.Module, feature_map: FeatureMap, images: torch.Tensor, sigma: float, epochs: int,
                  batch_size: int = 64, lr: float = 1e-3, generator: torch.Generator | None = None,
                  device: str = "auto", progress: bool = True) -> dict[str, list[float]]:
    """Train ``decoder`` in place on the attacker's own ``images`` to invert dithered features.

    Minimises by Adam the mean squared error per pixel ``mean (g(a(x) + sigma Z) - x)^2`` over shuffled batches,
    with fresh noise ``Z ~ N(0, I_n)`` every batch.  The feature map is frozen: its features of ``images`` are
    computed once, without gradient, in ``eval()`` mode (restored afterwards); an ``nn.Module`` feature map is moved
    to ``device`` with the decoder (``"auto"``: CUDA when available) and both are left there.  The shuffling
    (``torch.randperm``) and the noise are drawn from ``generator`` on the CPU (a freshly seeded one when ``None``:
    then not reproducible), so the result is deterministic given the generator and the decoder's initial weights.

    Returns ``{"loss": [...]}``: the mean training loss of each epoch over the batches as they were seen.
    """
    if not isinstance(decoder, nn.Module):
        raise ValueError(f"decoder must be a torch.nn.Module; got {type(decoder).__name__}")
    _check_feature_map(feature_map)
    _check_tensor("images", images)
    sigma = validation.number("sigma", sigma, at_least=0.0)
    validation.integer("epochs", epochs)
    validation.integer("batch_size", batch_size)
    lr = validation.positive("lr", lr)
    validation.generator("generator", generator, cpu=True)
    declared = getattr(decoder, "output_shape", None)
    if declared is not None and tuple(declared) != tuple(images.shape[1:]):
        raise ValueError(f"images have per-example shape {tuple(images.shape[1:])} but the decoder outputs "
                         f"{tuple(declared)}; they must match")
    dev = resolve_device(device)
    if generator is None:
        generator = torch.Generator()
        generator.seed()

    decoder.to(dev)
    fm_module = feature_map if isinstance(feature_map, nn.Module) else None
    if fm_module is not None:
        fm_module.to(dev)
        fm_was_training = fm_module.training
        fm_module.eval()
    try:
        with torch.no_grad():
            feats = torch.cat([feature_map(images[i:i + 1024].to(dev)).reshape(min(1024, len(images) - i), -1)
                               for i in range(0, len(images), 1024)])
    finally:
        if fm_module is not None:
            fm_module.train(fm_was_training)
    targets = images.to(dev)
    with torch.no_grad():
        out_shape = decoder(feats[:1]).shape[1:]
    if out_shape != images.shape[1:]:
        raise ValueError(f"decoder outputs per-example shape {tuple(out_shape)} but images have "
                         f"{tuple(images.shape[1:])}; they must match")

    def loss_fn(net: nn.Module, batch: tuple) -> torch.Tensor:
        fb, xb = batch
        noise = torch.randn(fb.shape, generator=generator, dtype=fb.dtype).to(dev)  # fresh noise every batch
        return nn.functional.mse_loss(net(fb + sigma * noise), xb)

    return fit(decoder, loss_fn, (feats, targets), epochs=epochs, optimizer="adam", lr=lr, batch_size=batch_size,
               generator=generator, device=device, progress=progress, desc="training the decoder")


@torch.no_grad()
def decode(decoder: nn.Module, observed: torch.Tensor, batch_size: int = 1024) -> torch.Tensor:
    """The decoder's reconstructions ``g(X)`` of revealed features ``observed`` (shape ``(B, ...)``), computed in
    ``eval()`` mode (restored afterwards) without gradient, on the decoder's device, returned on ``observed``'s."""
    if not isinstance(decoder, nn.Module):
        raise ValueError(f"decoder must be a torch.nn.Module; got {type(decoder).__name__}")
    _check_tensor("observed", observed)
    validation.integer("batch_size", batch_size)
    p = next(decoder.parameters(), None)
    dev = p.device if p is not None else observed.device
    was_training = decoder.training
    decoder.eval()
    try:
        out = [decoder(observed[i:i + batch_size].to(dev)).to(observed.device)
               for i in range(0, observed.shape[0], batch_size)]
    finally:
        decoder.train(was_training)
    return torch.cat(out)
