"""Gradient-guided diffusion reconstruction (Huang, Meng et al. 2024, "Gradient-guided conditional diffusion models
for private image reconstruction"): an attacker holds the (possibly noised) weight gradient ``g`` of one private
image and steers the reverse diffusion of an unconditional prior towards images whose gradient matches it.

* The prior: ``diffusers``' :class:`~diffusers.DDPMScheduler` (1000 steps, linear betas 1e-4 to 0.02, epsilon
  prediction, Tweedie's estimate clipped to [-1, 1], as the DPS checkpoint the paper uses) and
  :class:`~diffusers.DDIMScheduler` (respaced, eta = 1) with any denoiser ``eps_theta(x, t)``
  (:func:`compendium.models.denoisers.predict_noise`); :func:`train_denoiser` fits one with Eq. (8)'s loss.
* The release (Section 3): ``g = grad_W F(x; W) + xi`` or, normalised, ``g / ||g|| + xi``, ``xi ~ N(0, sigma^2 I)``
  (:func:`weight_gradient`, :func:`release`).
* Algorithm 1 (DPS-based, :func:`dps_reconstruct`): a DDPM step, then ``x_{t-1} -= zeta grad_{x_t} ||g - g(x0_hat)||``,
  the gradient taken through the attacked model's double back-propagation, Tweedie's formula and the denoiser.
* Algorithm 2 (DSG-based, :func:`dsg_reconstruct`): a DDIM (eta = 1) mean ``u``, then a step of length
  ``r = sqrt(n) sigma_t`` on the sphere around ``u``, in the direction ``d_sample + m_r (d_star - d_sample)`` that
  mixes the sampler's own noise with the steepest descent ``d_star`` of the loss.
* A gradient-matching baseline without a prior (:func:`gradient_matching`, DLG-style) and the prior alone
  (``zeta = 0``).
* Reconstruction Vulnerability (Definition 3, Eq. 16): the Frobenius norm of the Jacobian of the weight gradient
  with respect to the input, exactly (:func:`gradient_jacobian_norm`, ``torch.func``) and by the paper's random
  projections Eq. (17) (:func:`gradient_jacobian_norm_eq17`).

Every sampler returns a :class:`Trajectory`: the final Tweedie estimate, the loss at every step and, when the
private image is given, the MSE and PSNR at every step and the **oracle** peak (the step closest to the private
image, which an attacker cannot pick: it uses the private image).  Images are in [-1, 1], shape (1, C, H, W).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import nn

from compendium import metrics, train, validation
from compendium.models.denoisers import predict_noise

if TYPE_CHECKING:  # diffusers takes seconds to import: it is imported where a schedule is built
    from diffusers import DDIMScheduler, DDPMScheduler

TRAIN_STEPS = 1000


def ddpm_scheduler() -> DDPMScheduler:
    """The paper's prior schedule: 1000 steps, linear betas from 1e-4 to 0.02, epsilon prediction, the posterior
    variance ``beta~_t`` and Tweedie's estimate clipped to [-1, 1] (the DPS configuration)."""
    from diffusers import DDPMScheduler

    return DDPMScheduler(num_train_timesteps=TRAIN_STEPS, beta_schedule="linear", beta_start=1e-4, beta_end=0.02,
                         prediction_type="epsilon", variance_type="fixed_small", clip_sample=True)


def ddim_scheduler(steps: int) -> DDIMScheduler:
    """The same schedule respaced to ``steps`` DDIM steps (DSG's default: 100), final alpha 1."""
    from diffusers import DDIMScheduler

    validation.integer("steps", steps)
    scheduler = DDIMScheduler(num_train_timesteps=TRAIN_STEPS, beta_schedule="linear", beta_start=1e-4,
                              beta_end=0.02, prediction_type="epsilon", clip_sample=True, set_alpha_to_one=True)
    scheduler.set_timesteps(steps)
    return scheduler


def train_denoiser(model: nn.Module, images: torch.Tensor, *, epochs: int, generator: torch.Generator,
                   lr: float = 2e-3, batch_size: int = 256, device: str = "auto",
                   progress: bool = True) -> dict[str, list[float]]:
    """Fit ``eps_theta`` to ``images`` (B, C, H, W) in [-1, 1] with Eq. (8)'s loss ``||eps - eps_theta(x_t, t)||^2``,
    ``x_t = sqrt(abar_t) x_0 + sqrt(1 - abar_t) eps`` (``DDPMScheduler.add_noise``), ``t`` uniform, through
    :func:`compendium.train.fit` (Adam)."""
    scheduler = ddpm_scheduler()

    def loss_fn(net: nn.Module, batch: tuple) -> torch.Tensor:
        (x0,) = batch
        t = torch.randint(TRAIN_STEPS, (len(x0),), generator=generator, device=generator.device).to(x0.device)
        noise = torch.randn(x0.shape, generator=generator, device=generator.device).to(x0.device)
        noisy = scheduler.add_noise(x0, noise, t)
        return nn.functional.mse_loss(predict_noise(net, noisy, t), noise)

    return train.fit(model, loss_fn, (images,), epochs=epochs, optimizer="adam", lr=lr, weight_decay=0.0,
                     batch_size=batch_size, generator=generator, device=device, progress=progress,
                     desc="diffusion prior")


@torch.no_grad()
def sample_prior(denoiser: nn.Module, shape: tuple[int, ...], *, generator: torch.Generator,
                 steps: int = TRAIN_STEPS) -> torch.Tensor:
    """Unconditional samples of the prior, a batch of ``shape`` (B, C, H, W) on the denoiser's device: ``steps``
    ancestral DDPM steps (``DDPMScheduler.step``) from ``x_N ~ N(0, I)`` drawn from ``generator``; the samplers
    with ``zeta = 0`` / ``m_r = 0`` do the same one image at a time."""
    _check_generator(generator)
    device = next(denoiser.parameters()).device
    scheduler = ddpm_scheduler()
    scheduler.set_timesteps(validation.integer("steps", steps))
    x = torch.randn(shape, generator=generator, device=generator.device).to(device)
    for t in scheduler.timesteps:
        x = scheduler.step(predict_noise(denoiser, x, t), t, x, generator=generator).prev_sample
    return x.clamp(-1, 1)


# ---------------------------------------------------------------------------------------------------------------
# The release
# ---------------------------------------------------------------------------------------------------------------
def weight_gradient(model: nn.Module, x: torch.Tensor, label: torch.Tensor, *,
                    create_graph: bool = False) -> torch.Tensor:
    """``flatten(grad_W CE(model(x), label))`` over all parameters of ``model`` for the batch ``x`` (one image in the
    paper), differentiable in ``x`` when ``create_graph`` (for the double back-propagation of the samplers)."""
    params = [p for p in model.parameters() if p.requires_grad]
    loss = nn.functional.cross_entropy(model(x), label)
    return torch.cat([g.flatten() for g in torch.autograd.grad(loss, params, create_graph=create_graph)])


def release(gradient: torch.Tensor, *, sigma: float, normalise: bool, generator: torch.Generator) -> torch.Tensor:
    """The released gradient: ``g + xi`` ("Not Normalize") or ``g / ||g|| + xi`` ("Normalize", sensitivity 1),
    ``xi ~ N(0, sigma^2 I)`` drawn once from ``generator`` (Section 4.2.2; the paper's grid is in ``sigma^2``)."""
    sigma = validation.number("sigma", sigma, at_least=0.0, what="standard deviation of the gradient noise")
    g = gradient.detach()
    if normalise:
        g = g / g.norm()
    return g + sigma * torch.randn(g.shape, generator=generator, device=generator.device).to(g)


def _matching_loss(model, x0, label, target_gradient, normalise) -> torch.Tensor:
    g = weight_gradient(model, x0, label, create_graph=True)
    if normalise:  # the attacker knows the defence: it normalises its own gradient too
        g = g / g.norm()
    return (target_gradient - g).norm()


# ---------------------------------------------------------------------------------------------------------------
# Trajectories
# ---------------------------------------------------------------------------------------------------------------
SNAPSHOTS = 7  # estimates kept along a trajectory, evenly spaced from the first step to the last


@dataclass
class Trajectory:
    """A sampler's run: ``final`` (the last Tweedie estimate, (1, C, H, W) in [-1, 1]); per step ``timesteps`` and
    the matching ``loss``; the estimates at :data:`SNAPSHOTS` evenly spaced steps (``snapshots`` (k, C, H, W) at the
    step indices ``snapshot_steps``, the paper's Figure 3); with the private image, ``mse`` and ``psnr`` per step and
    the **oracle** peak (``peak_step``, ``peak_psnr``, ``peak_image``): the step whose estimate is closest to the
    private image, which the attacker cannot know."""

    final: torch.Tensor
    timesteps: np.ndarray
    loss: np.ndarray
    snapshots: torch.Tensor
    snapshot_steps: np.ndarray
    mse: np.ndarray | None = None
    psnr: np.ndarray | None = None
    peak_step: int | None = None
    peak_psnr: float | None = None
    peak_image: torch.Tensor | None = None

    @property
    def final_psnr(self) -> float | None:
        return None if self.psnr is None else float(self.psnr[-1])


class _Recorder:
    def __init__(self, target, steps: int):
        self.target = None if target is None else target.detach()
        self.keep = set(np.linspace(0, steps - 1, min(SNAPSHOTS, steps)).round().astype(int).tolist())
        self.timesteps, self.loss, self.mse, self.psnr, self.best = [], [], [], [], (-math.inf, None, None)
        self.snapshots, self.snapshot_steps = [], []

    def __call__(self, t, x0, loss):
        x0 = x0.detach()
        if len(self.timesteps) in self.keep:
            self.snapshots.append(x0[0].cpu())
            self.snapshot_steps.append(len(self.timesteps))
        self.timesteps.append(int(t))
        self.loss.append(float(loss.detach()) if torch.is_tensor(loss) else float(loss))
        if self.target is not None:
            self.mse.append(float(metrics.mse(x0, self.target)))
            self.psnr.append(float(metrics.psnr(x0, self.target, data_range=2.0)))  # images in [-1, 1]
            if self.psnr[-1] > self.best[0]:
                self.best = (self.psnr[-1], len(self.psnr) - 1, x0.clone())
        self.final = x0

    def result(self) -> Trajectory:
        known = self.target is not None
        return Trajectory(self.final, np.array(self.timesteps), np.array(self.loss), torch.stack(self.snapshots),
                          np.array(self.snapshot_steps), np.array(self.mse) if known else None,
                          np.array(self.psnr) if known else None, self.best[1] if known else None,
                          self.best[0] if known else None, self.best[2] if known else None)


def _check_generator(generator) -> None:
    if not isinstance(generator, torch.Generator):
        raise ValueError(f"generator={generator!r}; allowed: a torch.Generator (the samplers are seeded)")


def _check_common(target_gradient, shape, generator, target) -> None:
    _check_generator(generator)
    if target_gradient.ndim != 1:
        raise ValueError(f"target_gradient of shape {tuple(target_gradient.shape)}; allowed: a flat vector")
    if len(shape) != 4 or shape[0] != 1:
        raise ValueError(f"shape={tuple(shape)}; allowed: (1, C, H, W), one image")
    if target is not None and tuple(target.shape) != tuple(shape):
        raise ValueError(f"target of shape {tuple(target.shape)}; allowed: {tuple(shape)}")


def dps_reconstruct(denoiser: nn.Module, model: nn.Module, label: torch.Tensor, target_gradient: torch.Tensor, *,
                    shape: tuple[int, ...], zeta: float, generator: torch.Generator, steps: int = TRAIN_STEPS,
                    normalise: bool = False, target: torch.Tensor | None = None) -> Trajectory:
    """Algorithm 1 (DPS-based): from ``x_N ~ N(0, I)``, ``steps`` DDPM steps (the posterior mean of the clipped
    Tweedie estimate plus ``sigma~_t z``, ``DDPMScheduler.step``), each followed by the guidance
    ``x_{t-1} <- x_{t-1} - zeta grad_{x_t} ||g - grad_W F(x0_hat(x_t); W)||``.  ``zeta = 0`` samples the prior alone.
    ``target`` (the private image, for the oracle curves only) is never used by the attack."""
    _check_common(target_gradient, shape, generator, target)
    zeta = validation.number("zeta", zeta, at_least=0.0, what="DPS step size")
    scheduler = ddpm_scheduler()
    scheduler.set_timesteps(steps)
    device = target_gradient.device
    x = torch.randn(shape, generator=generator, device=generator.device).to(device)
    record = _Recorder(target, len(scheduler.timesteps))
    for t in scheduler.timesteps:
        x = x.detach().requires_grad_(True)
        out = scheduler.step(predict_noise(denoiser, x, t), t, x, generator=generator)
        loss = _matching_loss(model, out.pred_original_sample, label, target_gradient, normalise)
        guidance = torch.autograd.grad(loss, x)[0] if zeta > 0 else 0.0
        record(t, out.pred_original_sample, loss)
        x = out.prev_sample.detach() - zeta * guidance
    return record.result()


def ddim_sigma(scheduler: DDIMScheduler, t: int, eta: float = 1.0) -> float:
    """``sigma~_t = eta sqrt((1 - abar_prev) / (1 - abar_t)) sqrt(1 - abar_t / abar_prev)`` of a DDIM step from ``t``
    to the next kept timestep (DDIM's Eq. 16; the noise ``DDIMScheduler.step`` adds with ``eta``)."""
    prev = int(t) - scheduler.config.num_train_timesteps // scheduler.num_inference_steps
    abar = float(scheduler.alphas_cumprod[int(t)])
    abar_prev = float(scheduler.alphas_cumprod[prev]) if prev >= 0 else float(scheduler.final_alpha_cumprod)
    return eta * math.sqrt((1 - abar_prev) / (1 - abar) * (1 - abar / abar_prev))


def dsg_reconstruct(denoiser: nn.Module, model: nn.Module, label: torch.Tensor, target_gradient: torch.Tensor, *,
                    shape: tuple[int, ...], guidance_rate: float, generator: torch.Generator, steps: int = 100,
                    interval: int = 1, normalise: bool = False, target: torch.Tensor | None = None) -> Trajectory:
    """Algorithm 2 (DSG-based), over ``steps`` respaced DDIM steps with eta = 1: the DDIM mean ``u`` (noise-free
    ``DDIMScheduler.step``), and on every ``interval``-th step ``x_{t-1} = u + r d_m / ||d_m||`` with
    ``r = sqrt(n) sigma~_t``, ``d_star = -r G / ||G||`` (``G`` the loss gradient in ``x_t``), ``d_sample = sigma~_t
    eps``, ``d_m = d_sample + m_r (d_star - d_sample)``; otherwise the plain step ``u + sigma~_t eps``.  Where
    ``d_m = 0`` (``m_r = 1`` and ``G = 0``, Tweedie's estimate clipped everywhere) the step is the mean ``u``, as in
    the DSG reference code (its mixed step is then ``0 / (0 + eps) r``).  ``m_r = 0`` samples the prior alone."""
    _check_common(target_gradient, shape, generator, target)
    rate = validation.number("guidance_rate", guidance_rate, at_least=0.0, at_most=1.0, what="m_r")
    validation.integer("interval", interval)
    scheduler = ddim_scheduler(steps)
    device = target_gradient.device
    n = math.prod(shape[1:])
    x = torch.randn(shape, generator=generator, device=generator.device).to(device)
    record = _Recorder(target, len(scheduler.timesteps))
    for index, t in enumerate(scheduler.timesteps):
        x = x.detach().requires_grad_(True)
        out = scheduler.step(predict_noise(denoiser, x, t), t, x, eta=1.0, use_clipped_model_output=True,
                             variance_noise=torch.zeros_like(x))
        loss = _matching_loss(model, out.pred_original_sample, label, target_gradient, normalise)
        sigma_t = ddim_sigma(scheduler, t)
        guided = rate > 0 and index % interval == 0 and sigma_t > 0
        grad = torch.autograd.grad(loss, x)[0] if guided else None
        record(t, out.pred_original_sample, loss)
        u = out.prev_sample.detach()
        noise = torch.randn(shape, generator=generator, device=generator.device).to(device)
        if guided:
            r = math.sqrt(n) * sigma_t
            # a zero loss gradient (Tweedie's estimate clipped everywhere) leaves only the sampler's own direction
            d_star = -r * grad / grad.norm() if grad.norm() > 0 else torch.zeros_like(grad)
            d_sample = sigma_t * noise
            d_m = d_sample + rate * (d_star - d_sample)
            if d_m.norm() == 0:  # m_r = 1 and a zero loss gradient: the DSG reference returns the mean u
                x = u
                continue
        x = u + r * d_m / d_m.norm() if guided else u + sigma_t * noise
    return record.result()


def gradient_matching(model: nn.Module, label: torch.Tensor, target_gradient: torch.Tensor, *,
                      shape: tuple[int, ...], iterations: int, generator: torch.Generator, lr: float = 0.05,
                      normalise: bool = False, target: torch.Tensor | None = None) -> Trajectory:
    """The prior-free baseline (DLG, Zhu et al. 2019): Adam on ``||g - grad_W F(x; W)||^2`` over ``x`` from a
    Gaussian start, ``iterations`` steps, the iterate clipped to [-1, 1] when it is scored."""
    _check_common(target_gradient, shape, generator, target)
    validation.integer("iterations", iterations)
    x = torch.randn(shape, generator=generator, device=generator.device).to(target_gradient.device)
    x.requires_grad_(True)
    opt = torch.optim.Adam([x], lr=validation.positive("lr", lr))
    record = _Recorder(target, iterations)
    for step in range(iterations):
        opt.zero_grad()
        loss = _matching_loss(model, x, label, target_gradient, normalise) ** 2
        loss.backward()
        opt.step()
        record(iterations - 1 - step, x.detach().clamp(-1, 1), loss.detach())
    return record.result()


def total_variation(x: torch.Tensor) -> torch.Tensor:
    """The anisotropic total variation ``mean |x[..., i+1, j] - x[..., i, j]| + mean |x[..., i, j+1] - x[..., i, j]|``
    (the regulariser of Inverting Gradients, as in the authors' ``inversefed``)."""
    return (x[..., 1:, :] - x[..., :-1, :]).abs().mean() + (x[..., :, 1:] - x[..., :, :-1]).abs().mean()


def inverting_gradients(model: nn.Module, label: torch.Tensor, target_gradient: torch.Tensor, *,
                        shape: tuple[int, ...], iterations: int, generator: torch.Generator, restarts: int = 2,
                        lr: float = 0.1, tv_weight: float = 1e-4,
                        target: torch.Tensor | None = None) -> Trajectory:
    """The optimisation baseline Inverting Gradients (Geiping et al. 2020, Eq. 4): Adam on the cosine distance
    ``1 - <g, grad_W F(x)> / (||g|| ||grad_W F(x)||)`` plus ``tv_weight`` times :func:`total_variation`, with the
    sign of the gradient as the step direction, the learning rate divided by 10 after 3/8, 5/8 and 7/8 of the
    ``iterations``, and ``x`` kept in [-1, 1] after every step (the defaults of their ``inversefed``), from
    ``restarts`` Gaussian starts.  The restart with the lowest final loss is returned: the attacker's own choice,
    made without the private image.  The cosine ignores the gradient's scale, so a normalised release is attacked
    the same way."""
    _check_common(target_gradient, shape, generator, target)
    validation.integer("iterations", iterations)
    validation.integer("restarts", restarts)
    validation.number("tv_weight", tv_weight, at_least=0.0)
    best = None
    for _ in range(restarts):
        x = torch.randn(shape, generator=generator, device=generator.device).to(target_gradient.device)
        x.requires_grad_(True)
        opt = torch.optim.Adam([x], lr=validation.positive("lr", lr))
        milestones = [int(iterations * f) for f in (3 / 8, 5 / 8, 7 / 8)]
        schedule = torch.optim.lr_scheduler.MultiStepLR(opt, milestones=milestones, gamma=0.1)
        record = _Recorder(target, iterations)
        for step in range(iterations):
            opt.zero_grad()
            g = weight_gradient(model, x, label, create_graph=True)
            loss = 1 - nn.functional.cosine_similarity(g, target_gradient, dim=0) + tv_weight * total_variation(x)
            (grad,) = torch.autograd.grad(loss, x)
            x.grad = grad.sign()
            opt.step()
            schedule.step()
            with torch.no_grad():
                x.clamp_(-1, 1)
            record(iterations - 1 - step, x.detach(), loss.detach())
        if best is None or record.loss[-1] < best.loss[-1]:
            best = record
    return best.result()


# ---------------------------------------------------------------------------------------------------------------
# Reconstruction Vulnerability (Definition 3, Eqs. 16-17)
# ---------------------------------------------------------------------------------------------------------------
def _gradient_map(model: nn.Module, label: torch.Tensor):
    params = {k: v.detach() for k, v in model.named_parameters()}

    def gradient_of(x: torch.Tensor) -> torch.Tensor:
        def loss(p):
            return nn.functional.cross_entropy(torch.func.functional_call(model, p, (x[None],)), label[None])

        return torch.cat([g.flatten() for g in torch.func.grad(loss)(params).values()])

    return gradient_of


def gradient_jacobian(model: nn.Module, image: torch.Tensor, label: torch.Tensor) -> torch.Tensor:
    """``J = d g(x) / d x`` for one image ``x`` (C, H, W) and its label: an ``m x n`` matrix (``m`` weights, ``n``
    pixels), ``g`` the flattened weight gradient, by forward-over-reverse ``torch.func.jacfwd`` of ``torch.func.grad``
    (one Jacobian-vector product per pixel; reverse mode would need one per weight, ``m`` of them)."""
    return torch.func.jacfwd(_gradient_map(model, label))(image).flatten(1)


def gradient_jacobian_norm(model: nn.Module, images: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """``||d g(x) / d x||_F`` per image (B,): the quantity Definition 3 maximises over the data (Eq. 16), exactly
    (:func:`gradient_jacobian`)."""
    return torch.stack([gradient_jacobian(model, x, y).norm() for x, y in zip(images, labels)])


DIRECTION_LAWS = ("gaussian", "unit")


def gradient_jacobian_norm_eq17(model: nn.Module, images: torch.Tensor, labels: torch.Tensor, *, directions: int,
                                generator: torch.Generator, law: str = "gaussian") -> torch.Tensor:
    """The paper's estimator Eq. (17) per image (B,): ``mean_j ||grad_x (v_j^T grad_W F(x; W))|| = mean_j ||J^T v_j||``
    over ``directions`` random ``v_j`` in the weight-gradient space (one vector-Jacobian product, i.e. one double
    back-propagation, per direction; ``torch.func.vjp`` under ``vmap``, in chunks of at most 2^27 numbers).

    The paper says "random orthogonal directions" and gives no law.  ``law="gaussian"``: ``v ~ N(0, I_m)``, so
    ``E ||J^T v||^2 = ||J||_F^2`` and, by Jensen, the mean of norms is at most ``||J||_F``; ``law="unit"``: ``v``
    uniform on the unit sphere, about ``1 / sqrt(m)`` times the Gaussian value."""
    validation.integer("directions", directions)
    validation.choice("law", law, DIRECTION_LAWS)
    out = []
    for x, y in zip(images, labels):
        gradient, vjp = torch.func.vjp(_gradient_map(model, y), x)
        chunk = max(1, 2 ** 27 // gradient.numel())
        norms = []
        for start in range(0, directions, chunk):
            v = torch.randn((min(chunk, directions - start), gradient.numel()), generator=generator,
                            device=generator.device).to(gradient)
            if law == "unit":
                v = v / v.norm(dim=1, keepdim=True)
            norms.append(torch.func.vmap(vjp)(v)[0].flatten(1).norm(dim=1))
        out.append(float(torch.cat(norms).mean()))
    return torch.tensor(out)
