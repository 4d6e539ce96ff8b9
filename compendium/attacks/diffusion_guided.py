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
  ``r = sqrt(n) sigma~_t`` (``sigma~_t`` the DDIM step's spread) on the sphere around ``u``, in the direction
  ``d_sample + m_r (d_star - d_sample)`` that mixes the sampler's own noise with the steepest descent ``d_star`` of
  the loss.
* A gradient-matching baseline without a prior (:func:`gradient_matching`, DLG-style) and the prior alone
  (``zeta = 0``).
* Reconstruction Vulnerability (Definition 3, Eq. 16): the Frobenius norm of the Jacobian of the weight gradient
  with respect to the input, exactly (:func:`gradient_jacobian_norm`, ``torch.func``) and by the paper's random
  projections Eq. (17) (:func:`gradient_jacobian_norm_eq17`).

Every sampler returns a :class:`Trajectory`: the final Tweedie estimate, the loss at every step and, when the
private image is given, the MSE and PSNR at every step and the **oracle** peak (the step closest to the private
image, which an attacker cannot pick: it uses the private image).  Images are in [-1, 1].  Every attack runs a batch
of private images at once, each with its own released gradient, label and generator, and returns one trajectory per
image: the batch shares the forward and backward passes (:mod:`compendium.per_sample_gradients`), and an image's run
is the one it would have alone up to float rounding (which a guided sampler may amplify over many steps).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import nn

from compendium import metrics, per_sample_gradients, train, validation
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
    with ``zeta = 0`` / ``m_r = 0`` do the same with one generator per image."""
    if not isinstance(generator, torch.Generator):
        raise ValueError(f"generator={generator!r}; allowed: a torch.Generator (the samplers are seeded)")
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
    if sigma == 0:  # no draw: g + 0 xi is g, and a draw of 10^8 numbers takes a second on one CPU core
        return g
    return g + sigma * torch.randn(g.shape, generator=generator, device=generator.device).to(g)


class MatchingDistance:
    """``||t_b - g(x0_b)||`` per image (B,), ``g`` the weight gradient of one image and ``t_b`` its released
    gradient (a row of ``target_gradients``), differentiable in ``x0``; with ``normalise`` the attacker normalises
    its own gradient too (it knows the defence): ``||t_b - g / ||g||||``.  From
    :class:`~compendium.per_sample_gradients.GradientProducts`, one pass for the whole batch (the same as
    :func:`weight_gradient` image by image, up to float cancellation near a match); what does not change between
    the steps of a sampler is computed once."""

    def __init__(self, model: nn.Module, labels: torch.Tensor, target_gradients: torch.Tensor, *, normalise: bool):
        self.products = per_sample_gradients.GradientProducts(model, target_gradients)
        self.labels, self.normalise = labels, normalise
        self.target_square = target_gradients.square().sum(1)

    def __call__(self, x0: torch.Tensor) -> torch.Tensor:
        square, dot = self.products(x0, self.labels)
        if self.normalise:
            distance = 1 - 2 * dot / square.sqrt() + self.target_square
        else:
            distance = square - 2 * dot + self.target_square
        return distance.clamp_min(torch.finfo(distance.dtype).tiny).sqrt()  # >= 0 up to cancellation: no NaN


# ---------------------------------------------------------------------------------------------------------------
# Trajectories
# ---------------------------------------------------------------------------------------------------------------
SNAPSHOTS = 7  # estimates kept along a trajectory, evenly spaced from the first step to the last


@dataclass
class Trajectory:
    """A sampler's run on one image: ``final`` (the last Tweedie estimate, (1, C, H, W) in [-1, 1]); per step
    ``timesteps`` and the matching ``loss``; the estimates at :data:`SNAPSHOTS` evenly spaced steps (``snapshots``
    (k, C, H, W) at the step indices ``snapshot_steps``, the paper's Figure 3); with the private image, ``mse`` and
    ``psnr`` per step and the **oracle** peak (``peak_step``, ``peak_psnr``, ``peak_image``): the step whose estimate
    is closest to the private image, which the attacker cannot know."""

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
    """Every step of a batch of runs: the timestep, each image's loss and, against the private images, its MSE and
    PSNR; :meth:`result` splits them into one :class:`Trajectory` per image."""

    def __init__(self, targets, steps: int):
        self.targets = None if targets is None else targets.detach()
        self.keep = set(np.linspace(0, steps - 1, min(SNAPSHOTS, steps)).round().astype(int).tolist())
        self.timesteps, self.loss, self.mse, self.psnr = [], [], [], []
        self.snapshots, self.snapshot_steps = [], []
        self.best_psnr = self.best_step = self.best_image = None

    def __call__(self, t, x0, loss):
        x0 = x0.detach()
        if len(self.timesteps) in self.keep:
            self.snapshots.append(x0.cpu())
            self.snapshot_steps.append(len(self.timesteps))
        self.timesteps.append(int(t))
        self.loss.append(loss.detach().cpu())
        if self.targets is not None:
            self.mse.append(metrics.mse(x0, self.targets).cpu())
            psnr = metrics.psnr(x0, self.targets, data_range=2.0).cpu()  # images in [-1, 1]
            self.psnr.append(psnr)
            if self.best_psnr is None:
                self.best_psnr, self.best_step, self.best_image = psnr, torch.zeros(len(psnr), dtype=torch.long), x0
            else:
                better = psnr > self.best_psnr
                self.best_psnr = torch.where(better, psnr, self.best_psnr)
                self.best_step = torch.where(better, len(self.psnr) - 1, self.best_step)
                self.best_image = torch.where(better.to(x0.device).reshape(-1, 1, 1, 1), x0, self.best_image)
        self.final = x0

    def result(self) -> list[Trajectory]:
        loss, snapshots, timesteps = torch.stack(self.loss, 1), torch.stack(self.snapshots, 1), np.array(self.timesteps)
        known = self.targets is not None
        mse, psnr = (torch.stack(self.mse, 1).numpy(), torch.stack(self.psnr, 1).numpy()) if known else (None, None)
        return [Trajectory(self.final[b:b + 1], timesteps, loss[b].numpy(), snapshots[b],
                           np.array(self.snapshot_steps), mse[b] if known else None, psnr[b] if known else None,
                           int(self.best_step[b]) if known else None, float(self.best_psnr[b]) if known else None,
                           self.best_image[b:b + 1] if known else None) for b in range(len(loss))]


def _generators(generators, count: int) -> list[torch.Generator]:
    """One seeded generator per image (a single one for one image)."""
    if isinstance(generators, torch.Generator) and count == 1:
        return [generators]
    if (not isinstance(generators, (list, tuple)) or len(generators) != count
            or not all(isinstance(g, torch.Generator) for g in generators)):
        raise ValueError(f"generators={generators!r}; allowed: a list of {count} torch.Generator, one per image (the "
                         "samplers are seeded image by image)")
    return list(generators)


def _check_common(labels, target_gradients, shape, generators, targets) -> list[torch.Generator]:
    if len(shape) != 4:
        raise ValueError(f"shape={tuple(shape)}; allowed: (B, C, H, W)")
    if target_gradients.ndim != 2 or len(target_gradients) != shape[0] or len(labels) != shape[0]:
        raise ValueError(f"target_gradients of shape {tuple(target_gradients.shape)} and {len(labels)} labels for "
                         f"shape={tuple(shape)}; allowed: (B, m) flat gradients and B labels, one per image")
    if targets is not None and tuple(targets.shape) != tuple(shape):
        raise ValueError(f"targets of shape {tuple(targets.shape)}; allowed: {tuple(shape)}")
    return _generators(generators, shape[0])


def _per_image(name: str, value, count: int, like: torch.Tensor, *, at_most: float | None = None,
               what: str) -> torch.Tensor:
    """``value`` (one number, or one per image) as a (B, 1, 1, 1) tensor of ``like``'s dtype and device, each in
    [0, ``at_most``]."""
    values = validation.number(name, value, at_least=0.0, at_most=at_most, what=what)
    values = np.full(count, values) if np.ndim(values) == 0 else values
    if values.shape != (count,):
        raise ValueError(f"{name} holds {values.size} values for {count} images; allowed: one number, or one per image")
    return torch.as_tensor(values, dtype=like.dtype, device=like.device).reshape(-1, 1, 1, 1)


def _noise(shape, generators: list[torch.Generator], device) -> torch.Tensor:
    """``N(0, I)`` of ``shape`` (B, ...), image ``b`` drawn from ``generators[b]`` (diffusers' ``randn_tensor``), so
    an image's draws do not depend on the batch it runs in."""
    from diffusers.utils.torch_utils import randn_tensor

    return randn_tensor(tuple(shape), generator=generators if len(generators) > 1 else generators[0], device=device)


def dps_reconstruct(denoiser: nn.Module, model: nn.Module, labels: torch.Tensor, target_gradients: torch.Tensor, *,
                    shape: tuple[int, ...], zeta, generators, steps: int = TRAIN_STEPS,
                    normalise: bool = False, targets: torch.Tensor | None = None) -> list[Trajectory]:
    """Algorithm 1 (DPS-based) on a batch of ``shape`` (B, C, H, W), one released gradient (a row of
    ``target_gradients``), label and generator per image: from ``x_N ~ N(0, I)``, ``steps`` DDPM steps (the
    posterior mean of the clipped Tweedie estimate plus ``sigma~_t z``, ``DDPMScheduler.step``), each followed by the
    guidance ``x_{t-1} <- x_{t-1} - zeta grad_{x_t} ||g - grad_W F(x0_hat(x_t); W)||``, ``zeta`` one number or one
    per image (a sweep over step sizes runs in one batch).  ``zeta = 0`` samples the prior alone.  ``targets`` (the
    private images, for the oracle curves only) are never used by the attack."""
    generators = _check_common(labels, target_gradients, shape, generators, targets)
    device = target_gradients.device
    zeta = _per_image("zeta", zeta, shape[0], target_gradients, what="DPS step size")
    guided = bool((zeta > 0).any())
    scheduler = ddpm_scheduler()
    scheduler.set_timesteps(steps)
    x = _noise(shape, generators, device)
    record = _Recorder(targets, len(scheduler.timesteps))
    distance = MatchingDistance(model, labels, target_gradients, normalise=normalise)
    for t in scheduler.timesteps:
        x = x.detach().requires_grad_(True)
        out = scheduler.step(predict_noise(denoiser, x, t), t, x, generator=generators)
        loss = distance(out.pred_original_sample)
        guidance = torch.autograd.grad(loss.sum(), x)[0] if guided else 0.0
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


def _norms(v: torch.Tensor) -> torch.Tensor:
    return v.flatten(1).norm(dim=1).reshape(-1, *([1] * (v.ndim - 1)))


def dsg_reconstruct(denoiser: nn.Module, model: nn.Module, labels: torch.Tensor, target_gradients: torch.Tensor, *,
                    shape: tuple[int, ...], guidance_rate, generators, steps: int = 100, interval: int = 1,
                    normalise: bool = False, targets: torch.Tensor | None = None) -> list[Trajectory]:
    """Algorithm 2 (DSG-based) on a batch of images (as :func:`dps_reconstruct`), over ``steps`` respaced DDIM steps
    with eta = 1: the DDIM mean ``u`` (noise-free ``DDIMScheduler.step``), and on every ``interval``-th step
    ``x_{t-1} = u + r d_m / ||d_m||`` with ``r = sqrt(n) sigma~_t``, ``d_star = -r G / ||G||`` (``G`` the loss
    gradient in ``x_t``), ``d_sample = sigma~_t eps``, ``d_m = d_sample + m_r (d_star - d_sample)``; otherwise the
    plain step ``u + sigma~_t eps``.  Where ``d_m = 0`` (``m_r = 1`` and ``G = 0``, Tweedie's estimate clipped
    everywhere) the step is the mean ``u``, as in the DSG reference code (its mixed step is then ``0 / (0 + eps)
    r``).  ``m_r`` is one number or one per image; an image with ``m_r = 0`` samples the prior alone."""
    generators = _check_common(labels, target_gradients, shape, generators, targets)
    device = target_gradients.device
    rate = _per_image("guidance_rate", guidance_rate, shape[0], target_gradients, at_most=1.0, what="m_r")
    validation.integer("interval", interval)
    scheduler = ddim_scheduler(steps)
    n = math.prod(shape[1:])
    x = _noise(shape, generators, device)
    record = _Recorder(targets, len(scheduler.timesteps))
    distance = MatchingDistance(model, labels, target_gradients, normalise=normalise)
    for index, t in enumerate(scheduler.timesteps):
        x = x.detach().requires_grad_(True)
        out = scheduler.step(predict_noise(denoiser, x, t), t, x, eta=1.0, use_clipped_model_output=True,
                             variance_noise=torch.zeros_like(x))
        loss = distance(out.pred_original_sample)
        sigma_t = ddim_sigma(scheduler, t)
        guided = bool((rate > 0).any()) and index % interval == 0 and sigma_t > 0
        grad = torch.autograd.grad(loss.sum(), x)[0] if guided else None
        record(t, out.pred_original_sample, loss)
        u = out.prev_sample.detach()
        noise = _noise(shape, generators, device)
        if not guided:
            x = u + sigma_t * noise
            continue
        r = math.sqrt(n) * sigma_t
        # a zero loss gradient (Tweedie's estimate clipped everywhere) leaves only the sampler's own direction
        grad_norm = _norms(grad)
        d_star = torch.where(grad_norm > 0, -r * grad / grad_norm.clamp_min(torch.finfo(grad.dtype).tiny), 0.0)
        d_sample = sigma_t * noise
        d_m = d_sample + rate * (d_star - d_sample)
        d_norm = _norms(d_m)
        # m_r = 1 and a zero loss gradient: d_m = 0, and the DSG reference returns the mean u
        x = torch.where(d_norm > 0, u + r * d_m / d_norm.clamp_min(torch.finfo(d_m.dtype).tiny), u)
        x = torch.where(rate > 0, x, u + d_sample)  # m_r = 0: the plain step
    return record.result()


def gradient_matching(model: nn.Module, labels: torch.Tensor, target_gradients: torch.Tensor, *,
                      shape: tuple[int, ...], iterations: int, generators, lr: float = 0.05,
                      normalise: bool = False, targets: torch.Tensor | None = None) -> list[Trajectory]:
    """The prior-free baseline (DLG, Zhu et al. 2019) on a batch of images: Adam on ``||g - grad_W F(x; W)||^2``
    over ``x`` from a Gaussian start, ``iterations`` steps, the iterate clipped to [-1, 1] when it is scored.  Adam
    works element by element, so each image's run is the one it would have alone."""
    generators = _check_common(labels, target_gradients, shape, generators, targets)
    validation.integer("iterations", iterations)
    x = _noise(shape, generators, target_gradients.device).requires_grad_(True)
    opt = torch.optim.Adam([x], lr=validation.positive("lr", lr))
    record = _Recorder(targets, iterations)
    distance = MatchingDistance(model, labels, target_gradients, normalise=normalise)
    for step in range(iterations):
        opt.zero_grad()
        loss = distance(x) ** 2
        loss.sum().backward()
        opt.step()
        record(iterations - 1 - step, x.detach().clamp(-1, 1), loss.detach())
    return record.result()


def total_variation(x: torch.Tensor) -> torch.Tensor:
    """The anisotropic total variation ``mean |x[..., i+1, j] - x[..., i, j]| + mean |x[..., i, j+1] - x[..., i, j]|``
    per image (B,) (the regulariser of Inverting Gradients, as in the authors' ``inversefed``)."""
    return ((x[..., 1:, :] - x[..., :-1, :]).abs().flatten(1).mean(1)
            + (x[..., :, 1:] - x[..., :, :-1]).abs().flatten(1).mean(1))


def inverting_gradients(model: nn.Module, labels: torch.Tensor, target_gradients: torch.Tensor, *,
                        shape: tuple[int, ...], iterations: int, generators, restarts: int = 2,
                        lr: float = 0.1, tv_weight: float = 1e-4,
                        targets: torch.Tensor | None = None) -> list[Trajectory]:
    """The optimisation baseline Inverting Gradients (Geiping et al. 2020, Eq. 4) on a batch of images: Adam on the
    cosine distance ``1 - <g, grad_W F(x)> / (||g|| ||grad_W F(x)||)`` plus ``tv_weight`` times
    :func:`total_variation`, with the sign of the gradient as the step direction, the learning rate divided by 10
    after 3/8, 5/8 and 7/8 of the ``iterations``, and ``x`` kept in [-1, 1] after every step (the defaults of their
    ``inversefed``), from ``restarts`` Gaussian starts.  Per image the restart with the lowest final loss is
    returned: the attacker's own choice, made without the private image.  The cosine ignores the gradient's scale,
    so a normalised release is attacked the same way."""
    generators = _check_common(labels, target_gradients, shape, generators, targets)
    validation.integer("iterations", iterations)
    validation.integer("restarts", restarts)
    validation.number("tv_weight", tv_weight, at_least=0.0)
    target_norm = target_gradients.norm(dim=1)
    products = per_sample_gradients.GradientProducts(model, target_gradients)
    best = None
    for _ in range(restarts):
        x = _noise(shape, generators, target_gradients.device).requires_grad_(True)
        opt = torch.optim.Adam([x], lr=validation.positive("lr", lr))
        milestones = [int(iterations * f) for f in (3 / 8, 5 / 8, 7 / 8)]
        schedule = torch.optim.lr_scheduler.MultiStepLR(opt, milestones=milestones, gamma=0.1)
        record = _Recorder(targets, iterations)
        for step in range(iterations):
            opt.zero_grad()
            square, dot = products(x, labels)
            loss = 1 - dot / (square.sqrt() * target_norm) + tv_weight * total_variation(x)
            (grad,) = torch.autograd.grad(loss.sum(), x)
            x.grad = grad.sign()
            opt.step()
            schedule.step()
            with torch.no_grad():
                x.clamp_(-1, 1)
            record(iterations - 1 - step, x.detach(), loss.detach())
        runs = record.result()
        best = runs if best is None else [r if r.loss[-1] < b.loss[-1] else b for r, b in zip(runs, best)]
    return best


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


def gradient_jacobian_spectral_norm(model: nn.Module, image: torch.Tensor, label: torch.Tensor, *,
                                    start: torch.Tensor, iterations: int) -> float:
    """``||J||_2`` of ``J = d g(x) / d x`` for one image (C, H, W), without forming ``J``: power iteration on
    ``J J^T`` from ``start`` (a vector of the weight-gradient space), one vector-Jacobian and one Jacobian-vector
    product (``torch.func.vjp``, ``torch.func.jvp``) per step.  It returns the largest ``||J^T v_k||`` over the
    unit iterates ``v_0 = start / ||start||, ..., v_iterations``: a lower bound of ``||J||_2`` that grows with the
    iterations, and at least ``||J^T start|| / ||start||`` (so at least ``||grad_x ||g - g(x)|| ||`` when ``start``
    is the residual ``g(x) - g``; Lemma 5's left side, Eq. 33)."""
    validation.integer("iterations", iterations, minimum=0)
    gradient_of = _gradient_map(model, label)
    _, vjp = torch.func.vjp(gradient_of, image)
    v = start.detach().flatten().to(image) / start.norm()
    best = 0.0
    for step in range(iterations + 1):
        (w,) = vjp(v)
        best = max(best, float(w.norm()))
        if step < iterations:
            jw = torch.func.jvp(gradient_of, (image,), (w,))[1]
            v = jw / jw.norm()
    return best


def gradient_jacobian_norm(model: nn.Module, images: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """``||d g(x) / d x||_F`` per image (B,): the quantity Definition 3 maximises over the data (Eq. 16), exactly
    (:func:`gradient_jacobian`)."""
    return torch.stack([gradient_jacobian(model, x, y).norm() for x, y in zip(images, labels)])


DIRECTION_LAWS = ("gaussian", "unit")


def gradient_jacobian_norm_eq17(model: nn.Module, images: torch.Tensor, labels: torch.Tensor, *, directions: int,
                                generator: torch.Generator, law: str = "gaussian") -> torch.Tensor:
    """The paper's estimator Eq. (17) per image (B,): ``mean_j ||grad_x (v_j^T grad_W F(x; W))|| = mean_j ||J^T v_j||``
    over ``directions`` random ``v_j`` in the weight-gradient space (one vector-Jacobian product, i.e. one double
    back-propagation, per direction; ``torch.func.vjp`` under ``vmap``, in chunks of at most 2^27 numbers).  The
    directions are drawn on ``generator``'s device: pass one on the model's device (a direction has as many numbers as
    the model has weights).

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
