"""The diffusion chapter's runs: the data, the prior and the attacked networks, one attack (:func:`attack`), the
:class:`Experiment` that runs each distinct attack once in batches, and the sweeps behind Tables 1-6."""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from scipy import stats
from torch import nn
from tqdm import tqdm

from compendium import data as datasets
from compendium import metrics, validation
from compendium.attacks import diffusion_guided as dg
from compendium.base import digest, in_repository, resolve_device, save_atomically
from compendium.chapters.diffusion.results import over_targets, rv_column
from compendium.chapters.diffusion.settings import (
    METHODS,
    PAPER_TABLE2,
    PAPER_TABLE5,
    PAPER_TABLE6,
    PRIOR_IMAGES,
    TABLE6_VARIANCE,
    Settings,
)
from compendium.models import denoisers
from compendium.models.gradient_targets import gradient_target

# ---------------------------------------------------------------------------------------------------------------
# Data, prior and attacked models
# ---------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Data:
    """Images in [-1, 1]: the prior's training images (``None`` with a pretrained prior), the RV images and their
    labels; the private ``targets`` are the first ``cfg.targets`` RV images."""

    prior: torch.Tensor | None
    images: torch.Tensor
    labels: torch.Tensor
    targets: int

    def target(self, i: int, device: str | torch.device = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
        """The ``i``-th private image (1, C, H, W) and its label (1,), on ``device``."""
        return self.images[i:i + 1].to(device), self.labels[i:i + 1].to(device)


def load_data(cfg: Settings) -> Data:
    """The digits split at :data:`PRIOR_IMAGES` (labels: digit parity), or ``max(targets, rv_images)`` CelebA-HQ
    images from ``cfg.celeba_dir`` (labels alternate 0, 1: the paper does not say where its labels come from)."""
    count = max(cfg.targets, cfg.rv_images)
    if cfg.digits:
        x, y = datasets.digits("all")
        x = 2 * x - 1
        return Data(x[:PRIOR_IMAGES], x[PRIOR_IMAGES:PRIOR_IMAGES + count], y[PRIOR_IMAGES:PRIOR_IMAGES + count] % 2,
                    cfg.targets)
    images = 2 * datasets.celeba_hq(in_repository(cfg.celeba_dir), count, cfg.image_size) - 1
    return Data(None, images, torch.arange(count) % 2, cfg.targets)


@dataclass
class Prior:
    """The denoiser ``eps_theta`` (frozen, in ``eval()``), where it comes from, its training loss per epoch and the
    seconds it took to train (0 for a pretrained one)."""

    model: nn.Module
    source: str
    history: list[float]
    seconds: float

    @property
    def parameters(self) -> int:
        return sum(p.numel() for p in self.model.parameters())

    def describe(self) -> str:
        """One line: where the prior comes from, its size, and its training."""
        line = f"prior: {self.source}, {self.parameters:,} parameters"
        if self.history:
            line += (f", {len(self.history)} epochs in {self.seconds:.0f} s, Eq. (8) loss {self.history[0]:.3f} → "
                     f"{self.history[-1]:.3f}")
        return line


def prior(cfg: Settings, data: Data, progress: bool = True) -> Prior:
    """The digits' prior trained here (:class:`~compendium.models.denoisers.MLPDenoiser`, Eq. 8's loss, Adam lr 2e-3,
    batches of 256, ``cfg.prior_epochs`` epochs) or the pretrained ``cfg.prior_checkpoint``."""
    device = resolve_device(cfg.device)
    if cfg.prior_checkpoint is not None:
        return Prior(denoisers.pretrained_denoiser(cfg.prior_checkpoint).to(device), cfg.prior_checkpoint, [], 0.0)
    generator = torch.Generator().manual_seed(cfg.seed)
    model = denoisers.MLPDenoiser(cfg.shape[1:], hidden=cfg.prior_hidden, generator=generator)
    start = time.perf_counter()
    history = dg.train_denoiser(model, data.prior, epochs=cfg.prior_epochs, generator=generator, device=cfg.device,
                                progress=progress)
    seconds = time.perf_counter() - start
    return Prior(model.eval().requires_grad_(False), "MLPDenoiser trained here", history["loss"], seconds)


def denoiser_costs(cfg: Settings, repeats: int | None = None) -> pd.DataFrame:
    """Why the book's prior is an MLP: seconds per training step (a batch of 256) and per guided sampler step (a
    forward and backward pass for one image) of the book's :class:`MLPDenoiser` and of a ``diffusers.UNet2DModel``
    of about the same size (two resolution levels of 32 and 64 channels), measured side by side over ``repeats``
    training steps and five times as many guided steps (``cfg.cost_repeats`` by default)."""
    from diffusers import UNet2DModel

    repeats = validation.integer("repeats", cfg.cost_repeats if repeats is None else repeats)
    generator = torch.Generator().manual_seed(cfg.seed)
    unet = UNet2DModel(sample_size=cfg.image_size, in_channels=cfg.in_channels, out_channels=cfg.in_channels,
                       block_out_channels=(32, 64), layers_per_block=1, norm_num_groups=8,
                       down_block_types=("DownBlock2D", "DownBlock2D"), up_block_types=("UpBlock2D", "UpBlock2D"))
    nets = {"MLPDenoiser (the book's)": denoisers.MLPDenoiser(cfg.shape[1:], hidden=cfg.prior_hidden,
                                                                generator=generator),
            "UNet2DModel (diffusers)": unet}
    batch = torch.randn((256, *cfg.shape[1:]), generator=generator)
    t = torch.randint(dg.TRAIN_STEPS, (256,), generator=generator)
    rows = []
    for name, net in nets.items():
        opt = torch.optim.Adam(net.parameters(), lr=1e-3)
        x1 = batch[:1].clone().requires_grad_(True)
        start = time.perf_counter()
        for _ in range(repeats):
            opt.zero_grad()
            nn.functional.mse_loss(denoisers.predict_noise(net, batch, t), batch).backward()
            opt.step()
        train_step = (time.perf_counter() - start) / repeats
        start = time.perf_counter()
        for _ in range(5 * repeats):
            torch.autograd.grad(denoisers.predict_noise(net, x1, t[:1]).sum(), x1)
        rows.append({"denoiser": name, "parameters": sum(p.numel() for p in net.parameters()),
                     "training step (s)": train_step, "guided step (s)": (time.perf_counter() - start) / (5 * repeats)})
    return pd.DataFrame(rows)


def attacked_model(cfg: Settings, name: str = "CNN") -> nn.Module:
    """One of the paper's networks at the chapter's image size, with fixed random weights drawn from
    ``cfg.seed + 1``, in ``eval()`` mode on the chapter's device."""
    return gradient_target(name, in_channels=cfg.in_channels, image_size=cfg.image_size,
                           generator=torch.Generator().manual_seed(cfg.seed + 1)).to(resolve_device(cfg.device))


# ---------------------------------------------------------------------------------------------------------------
# One attack
# ---------------------------------------------------------------------------------------------------------------
@dataclass
class Run:
    """One reconstruction: what was attacked and how, the sampler's :class:`~compendium.attacks.diffusion_guided.
    Trajectory`, the raw gradient's norm and the seconds it took."""

    method: str
    model: str
    target: int
    variance: float
    normalised: bool
    parameter: float
    trajectory: dg.Trajectory
    gradient_norm: float
    seconds: float

    def row(self, image: torch.Tensor) -> dict:
        """The run as a table row, scored against the private ``image``: final and oracle-peak PSNR (images in [0, 1]
        as the paper scores them), the peak's timestep, and the final image's SSIM."""
        tr = self.trajectory
        final = (tr.final.cpu() + 1) / 2
        truth = (image.cpu().reshape(final.shape) + 1) / 2
        ssim = float(metrics.ssim(final, truth)) if min(truth.shape[-2:]) >= 7 else math.nan
        return {"method": self.method, "model": self.model, "target": self.target, "σ²": self.variance,
                "gradient": "normalised" if self.normalised else "raw", "parameter": self.parameter,
                "steps": len(tr.loss), "final PSNR": tr.final_psnr, "peak PSNR": tr.peak_psnr,
                "peak t": int(tr.timesteps[tr.peak_step]),
                "final SSIM": ssim, "‖g₀‖": self.gradient_norm, "seconds": self.seconds}


def sampler_steps(cfg: Settings, method: str) -> int:
    """The default step count of ``method``: ``cfg.dsg_steps`` for DSG, ``cfg.dps_steps`` for DPS and the prior."""
    return cfg.dsg_steps if method == "DSG" else cfg.dps_steps


def _each(name: str, value, count: int) -> list:
    """``value`` for each of ``count`` runs: a list of ``count`` values as it is, one value repeated."""
    if isinstance(value, (list, tuple, np.ndarray)):
        if len(value) != count:
            raise ValueError(f"{name} holds {len(value)} values for {count} targets; allowed: one value, or one per "
                             "target")
        return list(value)
    return [value] * count


def attack(cfg: Settings, prior_: Prior, model: nn.Module, data: Data, *, method: str, targets: list[int],
           variance=0.0, normalised: bool = False, parameter=None, model_name: str = "CNN",
           steps: int | None = None, gradients: dict[int, torch.Tensor] | None = None) -> list[Run]:
    """Release the weight gradient of each of the private images ``targets`` (target ``i``'s noise drawn from seed
    ``100 + i``, offset by ``1000 cfg.seed``) and reconstruct them with ``method``, all in one batch: ``"DPS"``
    (Algorithm 1, ``parameter`` = zeta, default ``cfg.dps_zeta``), ``"DSG"`` (Algorithm 2, ``parameter`` = m_r,
    default ``cfg.dsg_rate``), ``"prior"`` (DPS with zeta = 0: an unconditional sample), ``"DLG"`` (the prior-free
    gradient matching, ``cfg.dlg_iterations`` Adam steps) or ``"IG"`` (Inverting Gradients, as many steps from
    ``cfg.ig_restarts`` starts).  ``variance`` and ``parameter`` are one value for every target or one per target
    (``None`` for the default), so a grid of settings of one sampler runs as one batch, a target appearing once per
    setting.  ``steps`` replaces the sampler's step count (:func:`sampler_steps`).  Target ``i``'s sampler seed is
    ``i + 1000 cfg.seed`` whatever batch it runs in; a run's seconds are the batch's over its size.  ``gradients``
    (target -> raw weight gradient on ``model``) supplies and keeps the targets' gradients, so that a caller attacking
    the same targets again computes each once."""
    validation.choice("method", method, (*METHODS, "prior", "DLG", "IG"))
    if not targets:
        raise ValueError("targets=[]; allowed: a non-empty list of image indices")
    for target in targets:
        validation.integer("target", target, minimum=0)
        if target >= len(data.images):
            raise ValueError(f"target={target!r}; allowed: below {len(data.images)}")
    variances = [validation.number("variance", v, at_least=0.0, what="noise variance sigma^2")
                 for v in _each("variance", variance, len(targets))]
    default = {"DPS": cfg.dps_zeta, "DSG": cfg.dsg_rate}.get(method, 0.0 if method == "prior" else math.nan)
    parameters = [default if p is None or method not in METHODS else float(p)
                  for p in _each("parameter", parameter, len(targets))]
    steps = validation.integer("steps", sampler_steps(cfg, method) if steps is None else steps)
    device = resolve_device(cfg.device)
    images, labels = data.images[targets].to(device), data.labels[targets].to(device)
    # one weight gradient per distinct target: a batch holds a target once per setting (a grid of variances)
    distinct = {} if gradients is None else gradients
    for i in dict.fromkeys(targets):
        if i not in distinct:
            distinct[i] = dg.weight_gradient(model, data.images[i:i + 1].to(device), data.labels[i:i + 1].to(device))
    raw = torch.stack([distinct[i] for i in targets])
    del distinct
    released = torch.stack([dg.release(g, sigma=math.sqrt(v), normalise=normalised,
                                       generator=torch.Generator().manual_seed(100 + i + 1000 * cfg.seed))
                            for g, i, v in zip(raw, targets, variances)])
    generators = [torch.Generator().manual_seed(i + 1000 * cfg.seed) for i in targets]
    common = dict(shape=tuple(images.shape), generators=generators, targets=images)
    start = time.perf_counter()
    if method == "DSG":
        trajectories = dg.dsg_reconstruct(prior_.model, model, labels, released, guidance_rate=parameters,
                                          steps=steps, normalise=normalised, **common)
    elif method == "DLG":
        trajectories = dg.gradient_matching(model, labels, released, iterations=cfg.dlg_iterations,
                                            normalise=normalised, **common)
    elif method == "IG":
        trajectories = dg.inverting_gradients(model, labels, released, iterations=cfg.dlg_iterations,
                                              restarts=cfg.ig_restarts, **common)
    else:
        trajectories = dg.dps_reconstruct(prior_.model, model, labels, released, zeta=parameters, steps=steps,
                                          normalise=normalised, **common)
    seconds = (time.perf_counter() - start) / len(targets)
    return [Run(method, model_name, i, v, normalised, p, trajectory, float(g.norm()), seconds)
            for i, v, p, trajectory, g in zip(targets, variances, parameters, trajectories, raw)]


#: Most gradient entries (images x weights) one batch holds: 2 GiB of float32 target gradients (a batch of the paper's
#: 134-million-weight CNN then holds 4 images); a batch holds at least ``cfg.targets`` images.
BATCH_ENTRIES = 2 ** 29
#: The share of the GPU's free memory that a batch's images may fill (:func:`memory_batch`); the rest is headroom
#: for the allocator's fragmentation and the steps' temporaries.
GPU_MEMORY_SHARE = 0.8


def gradient_bytes(model: nn.Module) -> int:
    """Bytes of one weight gradient of ``model`` (its parameters' sizes, in their dtype)."""
    return sum(p.numel() * p.element_size() for p in model.parameters())


class GPUMemoryTooSmall(RuntimeError):
    """Not even one image's guided sampler step fits in the GPU's free memory."""


def memory_batch(size: int, *, free: int, footprint: int, share: float = GPU_MEMORY_SHARE) -> int:
    """The images of one batch on a GPU: ``size`` (the batch the chapter would run), cut to ``floor(share free /
    footprint)``, ``free`` the GPU's free bytes (``torch.cuda.mem_get_info``) and ``footprint`` the bytes one image
    needs (:meth:`Experiment.footprint`).  :class:`GPUMemoryTooSmall` when not one image fits."""
    validation.integer("size", size)
    validation.integer("free", free, minimum=0)
    validation.integer("footprint", footprint)
    fits = int(share * free // footprint)
    if fits < 1:
        raise GPUMemoryTooSmall(
            f"one image's guided sampler step needs about {footprint / 2 ** 30:.1f} GiB of GPU memory and "
            f"{free / 2 ** 30:.1f} GiB are free ({share:.0%} of it usable): use a GPU with more memory, fewer weights "
            "(attacked_models), a smaller prior, or device='cpu'")
    return min(size, fits)


# ---------------------------------------------------------------------------------------------------------------
# Checkpoints: a long run resumes where it stopped
# ---------------------------------------------------------------------------------------------------------------
def checkpoint_key(cfg: Settings, item: dict) -> str:
    """The name of one finished item's file under ``cfg.checkpoint_dir``: ``item`` (what the item is: an attack's
    setting and target, or an RV row's model) with the settings that determine its result (the seed, the images, the
    prior, the baselines' counts, the device type), hashed (SHA-256, 16 hex digits) after a readable prefix."""
    prior = cfg.prior_checkpoint if cfg.prior_checkpoint is not None else (cfg.prior_epochs, cfg.prior_hidden)
    identity = {"item": item, "seed": cfg.seed, "image": [cfg.in_channels, cfg.image_size], "data": cfg.celeba_dir,
                "prior": prior, "dlg": [cfg.dlg_iterations, cfg.ig_restarts], "rv": [cfg.rv_images, cfg.rv_directions],
                "device": resolve_device(cfg.device).type}
    prefix = "-".join(str(item[k]) for k in ("method", "model") if k in item)
    return f"{prefix}-{digest(identity)}.pt"


def checkpoint_path(cfg: Settings, item: dict) -> Path | None:
    """``cfg.checkpoint_dir / checkpoint_key(cfg, item)``, or ``None`` when ``cfg.checkpoint_dir`` is ``None``."""
    return None if cfg.checkpoint_dir is None else in_repository(cfg.checkpoint_dir) / checkpoint_key(cfg, item)


def _save_run(run: Run, path: Path) -> None:
    """:class:`Run` as plain tensors and numbers (``torch.load(weights_only=True)`` reads them back)."""
    payload: dict = {"numpy": []}
    for owner, prefix in ((run, ""), (run.trajectory, "trajectory.")):
        for field in fields(owner):
            value = getattr(owner, field.name)
            if field.name == "trajectory":
                continue
            if isinstance(value, np.ndarray):
                payload["numpy"].append(prefix + field.name)
                value = torch.from_numpy(value)
            payload[prefix + field.name] = value
    save_atomically(payload, path)


def _load_run(path: Path) -> Run:
    payload = torch.load(path, map_location="cpu", weights_only=True)
    values = {k: v.numpy() if k in payload["numpy"] else v for k, v in payload.items() if k != "numpy"}
    trajectory = dg.Trajectory(**{k.split(".", 1)[1]: v for k, v in values.items() if k.startswith("trajectory.")})
    return Run(**{k: v for k, v in values.items() if not k.startswith("trajectory.")}, trajectory=trajectory)


class Experiment:
    """The chapter's attacks on one prior and one set of targets, each computed once: :meth:`run` returns the stored
    :class:`Run` when the same attack was asked for before (the noise grid's runs without noise are also Table 2's
    CNN row, Table 3's default step size, Table 5's samplers), and :meth:`runs` attacks all the targets of a list of
    settings, as few batches as the settings allow: one per method, model, gradient (raw or normalised) and step
    count, whatever the noise variances and step sizes (a batch of 40 images costs about 0.7 times as much per image
    as one of 8 on the CNN); on CUDA a batch holds no more images than the free memory does (:meth:`batch_size`).
    With ``cfg.checkpoint_dir`` every finished run is saved there (:func:`checkpoint_key`, written atomically) and a
    run whose file is present is read instead of attacked, so a lost session resumes where it stopped."""

    def __init__(self, cfg: Settings, prior_: Prior, data: Data):
        self.cfg, self.prior, self.data = cfg, prior_, data
        self._models: dict[str, nn.Module] = {}
        self._runs: dict[tuple, Run] = {}
        self._footprints: dict[tuple, int] = {}
        self._gradients: tuple[str, dict[int, torch.Tensor]] = ("", {})

    def gradients(self, name: str) -> dict[int, torch.Tensor]:
        """The targets' raw weight gradients on the model ``name`` computed so far (:func:`attack` adds to it), kept
        for the last model asked for only: at the paper's 256x256 one gradient holds 10^8 numbers."""
        if self._gradients[0] != name:
            self._gradients = (name, {})
        return self._gradients[1]

    def model(self, name: str = "CNN") -> nn.Module:
        if name not in self._models:
            self._models[name] = attacked_model(self.cfg, name)
        return self._models[name]

    def _setting(self, *, method: str, variance: float = 0.0, normalised: bool = False,
                 parameter: float | None = None, model: str = "CNN", steps: int | None = None) -> dict:
        """The attack's keywords with the chapter's defaults filled in (``parameter``: ``cfg.dps_zeta`` for DPS,
        ``cfg.dsg_rate`` for DSG; ``steps``: :func:`sampler_steps`)."""
        if parameter is None and method in METHODS:
            parameter = self.cfg.dps_zeta if method == "DPS" else self.cfg.dsg_rate
        return dict(method=method, model=model, variance=float(variance), normalised=bool(normalised),
                    parameter=parameter, steps=sampler_steps(self.cfg, method) if steps is None else steps)

    def _attack(self, jobs: list[tuple[dict, int]], progress: bool = False, desc: str = "") -> None:
        """Attack every (setting, target) of ``jobs`` not run before, grouped into batches (class docstring)."""
        groups: dict[tuple, dict[tuple, tuple[dict, int]]] = {}
        for setting, i in jobs:
            key = (*setting.values(), i)
            path = self._checkpoint(setting, i)
            if key not in self._runs and path is not None and path.is_file():
                self._runs[key] = _load_run(path)
            if key not in self._runs:
                group = (setting["method"], setting["model"], setting["normalised"], setting["steps"])
                groups.setdefault(group, {})[key] = (setting, i)
        batches = []
        for (method, name, normalised, steps), pending in groups.items():
            size = self.batch_size(method, name, normalised)
            items = list(pending.items())
            batches += [(method, name, normalised, steps, items[k:k + size]) for k in range(0, len(items), size)]
        for method, name, normalised, steps, items in tqdm(batches, desc=desc, unit="batch", disable=not progress):
            runs = attack(self.cfg, self.prior, self.model(name), self.data, method=method, normalised=normalised,
                          steps=steps, model_name=name, targets=[i for _, (_, i) in items],
                          gradients=self.gradients(name),
                          variance=[s["variance"] for _, (s, _) in items],
                          parameter=[s["parameter"] for _, (s, _) in items])
            for (key, (setting, i)), run in zip(items, runs):
                self._runs[key] = run
                path = self._checkpoint(setting, i)
                if path is not None:
                    _save_run(run, path)

    def _checkpoint(self, setting: dict, target: int) -> Path | None:
        """The file of one attack's :class:`Run` under ``cfg.checkpoint_dir`` (:func:`checkpoint_key`); ``None``
        when checkpoints are off."""
        return checkpoint_path(self.cfg, {**setting, "target": target})

    def batch_size(self, method: str, name: str, normalised: bool) -> int:
        """Images per batch of ``method`` on the model ``name``: at most :data:`BATCH_ENTRIES` gradient entries and
        at least ``cfg.targets`` images; on CUDA also no more than the free memory holds (:func:`memory_batch`, with
        :meth:`footprint`).  An image's run does not depend on its batch, up to float rounding."""
        weights = sum(p.numel() for p in self.model(name).parameters())
        size = max(self.data.targets, BATCH_ENTRIES // weights)
        device = resolve_device(self.cfg.device)
        if device.type != "cuda":
            return size
        footprint = self.footprint(method, name, normalised)
        # free on the device, and what torch's allocator holds unused (it counts as taken there)
        free = (torch.cuda.mem_get_info(device)[0] + torch.cuda.memory_reserved(device)
                - torch.cuda.memory_allocated(device))
        return memory_batch(size, free=int(free), footprint=footprint)

    def footprint(self, method: str, name: str, normalised: bool) -> int:
        """Bytes of CUDA memory one image of ``method`` on the model ``name`` takes, measured once per (method,
        model, gradient): the peak allocated over one guided step of a batch of one (the denoiser's forward pass
        unless the method has no prior, the matching distance to the first target's gradient and its derivative in
        the image, :class:`~compendium.attacks.diffusion_guided.MatchingDistance`), plus the raw and released
        gradients :func:`attack` holds per image."""
        key = (method, name, normalised)
        if key not in self._footprints:
            device = resolve_device(self.cfg.device)
            model = self.model(name)
            image, label = self.data.target(0, device)
            torch.cuda.synchronize(device)
            before = torch.cuda.memory_allocated(device)
            torch.cuda.reset_peak_memory_stats(device)
            gradient = dg.weight_gradient(model, image, label)[None]
            distance = dg.MatchingDistance(model, label, gradient, normalise=normalised)
            x = torch.zeros_like(image).requires_grad_(True)
            x0 = x if method in ("DLG", "IG") else x - denoisers.predict_noise(self.prior.model, x, dg.TRAIN_STEPS // 2)
            torch.autograd.grad(distance(x0).sum(), x)
            peak = torch.cuda.max_memory_allocated(device) - before
            del gradient, distance, x, x0
            self._footprints[key] = int(peak + 2 * gradient_bytes(model))
        return self._footprints[key]

    def run(self, *, target: int, **setting) -> Run:
        """:func:`attack` of one target with the chapter's defaults, once per distinct attack.  All the targets of
        :attr:`data` are attacked together (the tables ask for them all), so a run never depends on the order of
        the calls."""
        setting = self._setting(**setting)
        self._attack([(setting, i) for i in (range(self.data.targets) if target < self.data.targets else [target])])
        return self._runs[(*setting.values(), target)]

    def runs(self, settings: list[dict], progress: bool, desc: str) -> pd.DataFrame:
        """Every target of :attr:`data` attacked in each of the ``settings`` (keywords of :func:`attack` without
        ``targets``), in as few batches as they allow with a progress bar over the batches, as a table of one row per
        run in the order of the settings."""
        settings = [self._setting(**setting) for setting in settings]
        targets = range(self.data.targets)
        self._attack([(setting, i) for setting in settings for i in targets], progress, desc)
        return self.frame([self._runs[(*setting.values(), i)] for setting in settings for i in targets])

    def frame(self, runs: list[Run]) -> pd.DataFrame:
        """One row per run (:meth:`Run.row`)."""
        return pd.DataFrame([r.row(self.data.images[r.target]) for r in runs])

    def seconds(self, method: str) -> float:
        """Mean seconds per reconstruction of ``method`` over the runs so far (the CNN's)."""
        times = [r.seconds for k, r in self._runs.items() if k[0] == method and k[1] == "CNN"]
        return float(np.mean(times)) if times else math.nan


# ---------------------------------------------------------------------------------------------------------------
# Table 1: the noise grid
# ---------------------------------------------------------------------------------------------------------------
def noise_grid(exp: Experiment, progress: bool = True) -> pd.DataFrame:
    """Both samplers on every target for each noise variance, on the CNN: ``cfg.variances`` on raw gradients and
    ``cfg.normalised_variances`` on normalised ones (Sections 4.2.2-4.2.3).  One row per run."""
    cfg = exp.cfg
    jobs = [dict(method=m, variance=v, normalised=n)
            for n, grid in ((False, cfg.variances), (True, cfg.normalised_variances)) for v in grid for m in METHODS]
    return exp.runs(jobs, progress, "noise grid")



def step_comparison(exp: Experiment, progress: bool = True) -> pd.DataFrame:
    """Both samplers on every target without noise at each of their two step counts (``cfg.dsg_steps`` and
    ``cfg.dps_steps``: DSG's and DPS's own papers' defaults; the paper states none): per method and step count the
    mean final and peak PSNR over the targets with their standard errors (:func:`over_targets`)."""
    cfg = exp.cfg
    jobs = [dict(method=m, steps=n) for n in sorted({cfg.dsg_steps, cfg.dps_steps}) for m in METHODS]
    return over_targets(exp.runs(jobs, progress, "equal step counts"), ["method", "steps"])


def sampler_gaps(exp: Experiment, progress: bool = True) -> pd.DataFrame:
    """DPS against DSG on the same targets without noise, at their default step counts (``cfg.dps_steps``,
    ``cfg.dsg_steps``) and at each of the two as an equal count: the mean over targets of the paired difference of
    final PSNR (DPS minus DSG) with its standard error (the spread of the differences, not of the two means: the
    targets are shared)."""
    cfg = exp.cfg
    rows = []
    for dps, dsg in ((cfg.dps_steps, cfg.dsg_steps), *((n, n) for n in sorted({cfg.dsg_steps, cfg.dps_steps}))):
        psnr = {m: exp.runs([dict(method=m, steps=n)], progress, f"{m}, {n} steps")["final PSNR"].to_numpy()
                for m, n in (("DPS", dps), ("DSG", dsg))}
        gap = psnr["DPS"] - psnr["DSG"]
        se = gap.std(ddof=1) / math.sqrt(len(gap)) if len(gap) > 1 else math.nan
        rows.append({"DPS steps": dps, "DSG steps": dsg, "DPS − DSG (dB)": float(gap.mean()), "SE": float(se)})
    return pd.DataFrame(rows)



# ---------------------------------------------------------------------------------------------------------------
# Table 2: Reconstruction Vulnerability
# ---------------------------------------------------------------------------------------------------------------
EXACT_RV_PIXELS = 4096  # the exact Jacobian costs one JVP per pixel: skipped above 64x64 (paper scale: Eq. 17 only)


def jacobian_spectral_norm(cfg: Settings, model: nn.Module, image: torch.Tensor, label: torch.Tensor, *,
                           residual: torch.Tensor) -> tuple[float, str]:
    """``||J||_2`` of the weight gradient's Jacobian at one image (1, C, H, W) and how it was computed: exactly
    (the matrix, :func:`~compendium.attacks.diffusion_guided.gradient_jacobian`) up to :data:`EXACT_RV_PIXELS`
    pixels, else by ``cfg.spectral_iterations`` power-iteration steps from ``residual``
    (:func:`~compendium.attacks.diffusion_guided.gradient_jacobian_spectral_norm`, a lower bound of ``||J||_2`` that
    is at least ``||J^T residual|| / ||residual||``)."""
    if math.prod(cfg.shape[1:]) <= EXACT_RV_PIXELS:
        return float(torch.linalg.matrix_norm(dg.gradient_jacobian(model, image[0], label[0]), ord=2)), "exact"
    norm = dg.gradient_jacobian_spectral_norm(model, image[0], label[0], start=residual,
                                              iterations=cfg.spectral_iterations)
    return norm, f"{cfg.spectral_iterations} power-iteration step{'s' * (cfg.spectral_iterations != 1)}"


def direction_generator(cfg: Settings) -> torch.Generator:
    """The generator of Eq. (17)'s random directions, seeded with ``cfg.seed``, on the chapter's device: each
    direction has as many numbers as the attacked network has weights (10^8 to 2 10^8 at the paper's 256x256), so
    they are drawn where the double back-propagation runs, never on the CPU and copied.  On the CPU it is the
    generator the chapter always used (the same directions)."""
    return torch.Generator(device=resolve_device(cfg.device)).manual_seed(cfg.seed)


def rv_table(exp: Experiment, progress: bool = True) -> pd.DataFrame:
    """Table 2's counterpart: for each of ``cfg.attacked_models``, Reconstruction Vulnerability over the first
    ``cfg.rv_images`` images (Definition 3's maximum of the exact ``||J||_F`` and their mean, and Eq. (17) with
    ``cfg.rv_directions`` Gaussian directions), the mean final PSNR of DPS and DSG on the targets without noise, and
    the paper's RV and PSNR beside.  The DPS runs of :func:`rv_step_sizes` are attacked here too, in the same batch
    as each model's Table 2 run.  With ``cfg.checkpoint_dir`` each model's RV is saved there once computed and read
    back on a rerun (:func:`checkpoint_path`), as the attacks are (:class:`Experiment`)."""
    cfg = exp.cfg
    device = resolve_device(cfg.device)
    images, labels = exp.data.images[:cfg.rv_images].to(device), exp.data.labels[:cfg.rv_images].to(device)
    rows = []
    for name in tqdm(cfg.attacked_models, desc="RV", unit="model", disable=not progress):
        path = checkpoint_path(cfg, {"model": name, "table": "RV"})
        if path is not None and path.is_file():  # a finished model of a resumed run
            rows.append(torch.load(path, weights_only=True))
            continue
        model = exp.model(name)
        exact = (dg.gradient_jacobian_norm(model, images, labels)
                 if math.prod(cfg.shape[1:]) <= EXACT_RV_PIXELS else torch.full((len(images),), math.nan))
        eq17 = dg.gradient_jacobian_norm_eq17(model, images, labels, directions=cfg.rv_directions,
                                              generator=direction_generator(cfg))
        paper = PAPER_TABLE2[name]
        rows.append({"model": name, "parameters": sum(p.numel() for p in model.parameters()),
                     "RV (Def. 3, max)": float(exact.max()), "mean ‖J‖_F": float(exact.mean()),
                     "Eq. (17)": float(eq17.mean()), "paper RV": paper[0], "paper DPS PSNR": paper[1],
                     "paper DSG PSNR": paper[2]})
        if path is not None:
            save_atomically(rows[-1], path)
    table = pd.DataFrame(rows)
    table2_jobs = [dict(method=m, model=name) for name in cfg.attacked_models for m in METHODS]
    exp.runs(table2_jobs + [job for *_, job in _rv_step_jobs(cfg, rv_column(table))], progress, "Table 2 runs")
    for m in METHODS:
        psnr = over_targets(exp.runs([dict(method=m, model=name) for name in cfg.attacked_models], False, ""),
                            ["model"], ("final PSNR",)).set_index("model")
        for se in ("", " SE"):
            table.insert(table.columns.get_loc("paper RV"), f"{m} PSNR{se}",
                         psnr.loc[table["model"], f"final PSNR{se}"].to_numpy())
    return table


def _rv_step_jobs(cfg: Settings, rv: pd.Series) -> list[tuple[float, bool, str, dict]]:
    """:func:`rv_step_sizes`' attacks: ``(zeta, scaled, model, setting)`` for each step size of ``cfg.rv_zetas`` and
    ``cfg.dps_zeta`` and once more ``cfg.dps_zeta RV_CNN / RV`` (``scaled``), on every model of ``rv``."""
    reference = rv["CNN"] if "CNN" in rv.index else rv.iloc[0]
    cases = [(zeta, False) for zeta in sorted({*cfg.rv_zetas, cfg.dps_zeta})] + [(cfg.dps_zeta, True)]
    return [(zeta, scaled, name,
             dict(method="DPS", model=name, parameter=float(zeta * reference / rv[name] if scaled else zeta)))
            for zeta, scaled in cases for name in rv.index]


def rv_step_sizes(exp: Experiment, table2: pd.DataFrame) -> pd.DataFrame:
    """Table 2's correlation against DPS's step size.  The guidance of Algorithm 1 scales with ``||J||``, so at one
    ``zeta`` a model with a larger RV also takes larger steps.  DPS on every model of ``table2`` without noise at
    each step size of ``cfg.rv_zetas`` and ``cfg.dps_zeta`` (Table 2's), and once more at ``cfg.dps_zeta RV_CNN /
    RV`` (every model then takes steps of the CNN's size): per step size Spearman's rho of RV (:func:`rv_column`)
    against the mean final and the mean oracle-peak PSNR over the targets, and the lowest and highest of the models'
    mean final PSNR.  The runs are :func:`rv_table`'s (attacked there, in each model's batch)."""
    rv = rv_column(table2)
    psnr: dict[tuple, dict] = {}
    for zeta, scaled, name, job in _rv_step_jobs(exp.cfg, rv):
        means = exp.runs([job], False, "")[["final PSNR", "peak PSNR"]].mean()
        psnr.setdefault((zeta, scaled), {})[name] = means
    rows = []
    for (zeta, scaled), by_model in psnr.items():
        means = pd.DataFrame(by_model).T.loc[rv.index]
        rows.append({"ζ": zeta, "each model's step": "ζ · RV_CNN / RV" if scaled else "ζ",
                     "ρ (final PSNR)": float(stats.spearmanr(rv, means["final PSNR"]).statistic),
                     "ρ (peak PSNR)": float(stats.spearmanr(rv, means["peak PSNR"]).statistic),
                     "lowest PSNR": float(means["final PSNR"].min()),
                     "highest PSNR": float(means["final PSNR"].max())})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------------------------
# Tables 3-6: the step sizes and the baselines
# ---------------------------------------------------------------------------------------------------------------
def sweep(exp: Experiment, *, method: str, steps: int | None = None, progress: bool = True) -> pd.DataFrame:
    """Tables 3 (DPS, ``cfg.sweep_zetas``) and 4 (DSG, ``cfg.sweep_rates``): the CNN without noise, one row per value
    and target, at the sampler's step count or ``steps``."""
    validation.choice("method", method, METHODS)
    values = exp.cfg.sweep_zetas if method == "DPS" else exp.cfg.sweep_rates
    jobs = [dict(method=method, parameter=float(v), steps=steps) for v in values]
    return exp.runs(jobs, progress, f"{method} sweep")


def baselines(exp: Experiment, progress: bool = True) -> pd.DataFrame:
    """Tables 5 and 6: the mean final and peak PSNR over targets, with their standard errors, of the prior-free
    baselines DLG and Inverting Gradients, DPS and DSG, without noise and at ``sigma^2 = 0.01`` on raw gradients,
    and of the prior alone (an unconditional sample, which ignores the gradient: the floor).  The paper's PSNR
    beside (it has no prior-only column)."""
    settings = [dict(method=m, variance=v) for v in (0.0, TABLE6_VARIANCE) for m in ("DLG", "IG", *METHODS)]
    runs = pd.concat([exp.runs(settings, progress, "baselines"), exp.runs([dict(method="prior")], False, "")])
    out = over_targets(runs.assign(method=runs["method"].replace({"prior": "prior only"})), ["σ²", "method"])
    out.loc[out["method"] == "prior only", "σ²"] = math.nan
    paper = {0.0: PAPER_TABLE5, TABLE6_VARIANCE: PAPER_TABLE6}
    out["paper PSNR"] = [paper.get(v, {}).get(m, math.nan) for v, m in zip(out["σ²"], out["method"])]
    return out


