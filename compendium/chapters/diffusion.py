"""The diffusion chapter (Huang, Meng et al. 2024, "Gradient-guided conditional diffusion models for private image
reconstruction"): its settings at each scale and the pipelines its notebook calls.

At ``ci`` and ``book`` scale everything runs on scikit-learn's bundled 8x8 digits, offline: images 0-1499 (in
scikit-learn's order) train the diffusion prior from scratch, the next ones are the private targets, which the prior
never sees (the paper's FFHQ-trained prior and CelebA-HQ targets); a target's label is its digit's parity, the
two classes of the paper's attacked models, known to the attacker.  The attacked networks are the paper's
(:func:`compendium.models.gradient_targets.gradient_target`) at 1x8x8 with fixed random weights.  At ``paper`` scale
the prior is a pretrained ``diffusers.UNet2DModel`` from the Hugging Face hub and the targets are CelebA-HQ faces
from a folder the user fills, at 3x256x256.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from scipy import stats
from torch import nn
from tqdm import tqdm

from compendium import data as datasets
from compendium import metrics, standin, validation
from compendium.attacks import diffusion_guided as dg
from compendium.base import in_repository, resolve_device
from compendium.bounds import diffusion as theory
from compendium.chapters.base import Settings as _Settings
from compendium.chapters.base import resolve
from compendium.models import denoisers
from compendium.models.gradient_targets import NAMES as MODEL_NAMES
from compendium.models.gradient_targets import gradient_target
from compendium.scorecard import DIFFERS, IN_SHAPE, NOT_CHECKABLE, NOT_HERE, REPRODUCED, Claim

TITLE = "Gradient-guided conditional diffusion models for private image reconstruction"
#: seconds its notebook runs on one core of a quiet 2-core machine (a book build, two chapters at once)
SECONDS = {"ci": 36, "book": 594}

PRIOR_IMAGES = 1500  # digits 0-1499 train the prior; the targets follow
DELTA = 1e-5  # Table 1's delta
METHODS = ("DPS", "DSG")

#: Table 1 (PSNR in dB and MSE, at the oracle peak), keyed by (method, normalised, sigma^2).
PAPER_TABLE1 = {
    ("DPS", False, 1e-4): (24.0428, 3.9420e-03), ("DPS", False, 1e-3): (20.4003, 9.1194e-03),
    ("DPS", False, 1e-2): (18.4069, 1.4431e-02), ("DPS", False, 1e-1): (16.8882, 2.0473e-02),
    ("DSG", False, 1e-4): (28.0284, 1.5746e-03), ("DSG", False, 1e-3): (24.0488, 3.9366e-03),
    ("DSG", False, 1e-2): (14.9709, 3.6552e-02), ("DSG", False, 1e-1): (9.0239, 1.2520e-01),
    ("DPS", True, 1e-4): (27.0536, 1.9708e-03), ("DPS", True, 1e-3): (24.0561, 3.9300e-03),
    ("DPS", True, 1e-2): (20.7678, 8.3796e-03), ("DPS", True, 1e-1): (18.5801, 1.3867e-02),
    ("DSG", True, 1e-4): (30.0189, 9.9565e-04), ("DSG", True, 1e-3): (26.2142, 2.3910e-03),
    ("DSG", True, 1e-2): (22.4340, 5.7095e-03), ("DSG", True, 1e-1): (11.5858, 6.9409e-02),
}
#: Table 2: RV (Eq. 17) and PSNR of DPS and DSG, per attacked model (ResNet9 is our ResMini's counterpart).
PAPER_TABLE2 = {"ResMini": (0.0543, 10.170, 10.223), "MLP_3": (8.7102, 34.3071, 45.052),
                "CNN": (18.5093, 37.3518, 38.528), "MLP_2": (20.8503, 44.1768, 45.122),
                "MLP_1": (52.7335, 46.1509, 43.422)}
#: Tables 3 and 4: PSNR against the DPS step size zeta and the DSG guidance rate m_r (CNN, no noise).
PAPER_TABLE3 = {30: 28.0407, 70: 31.2382, 110: 35.7306, 150: 36.0518, 190: 38.1324, 230: 39.7673, 270: 38.0847,
                310: 22.1962}
PAPER_TABLE4 = {0.01: 26.9023, 0.05: 34.1201, 0.10: 36.6198, 0.15: 38.6787, 0.20: 41.1230, 0.30: 38.3065,
                0.40: 39.6746, 0.60: 36.9023, 0.80: 35.6101, 1.00: 35.0800}
#: Tables 5 and 6: PSNR of the baselines and both samplers without noise and at sigma^2 = 0.01 (raw gradients).
PAPER_TABLE5 = {"DLG": 13.1835, "IG": 17.0756, "GI": 16.5109, "GIAS": 13.3885, "GGL": 17.4923, "GIFD": 20.0534,
                "FinetunedDiff": 25.2863, "DPS": 39.7673, "DSG": 41.1229}
PAPER_TABLE6 = {"DLG": 6.5871, "IG": 11.2677, "GI": 10.4968, "GIAS": 12.1276, "GGL": 14.8982, "GIFD": 13.7118,
                "FinetunedDiff": 11.6675, "DPS": 18.4069, "DSG": 14.9709}
TABLE6_VARIANCE = 1e-2
#: The image the paper attacks, channels x side: 3x256x256 faces.
PAPER_IMAGE = (3, 256)
#: The paper's PSNR as it prints it, to four decimals (``formats`` of :func:`compendium.plotting.table`).
PAPER_PSNR_FORMAT = {"paper PSNR": "{:.4f}"}
#: The lower end of the axis of L_g / d (Lemma 3's constant per dimension) in the chapter's figure of it.
LIPSCHITZ_FLOOR = 1e-25
#: How far DPS's mean final PSNR must fall over the raw noise grid for Table 1's trend to count as reproduced (dB).
T1_DPS_DROP = 8.0
#: Inverting Gradients' random starts per reconstruction (the authors' ``inversefed`` examples use 1 to 8).
IG_RESTARTS = 2
#: The paper's other baselines and what each needs that the book does not ship.
OTHER_BASELINES = {
    "GI (GradInversion, Yin et al. 2021)": "BatchNorm statistics of the attacked network and group consistency over "
                                          "many restarts, designed for ImageNet-scale ResNets",
    "GIAS (Jeon et al. 2021)": "a pretrained StyleGAN generator whose latent space and weights are searched",
    "GGL (Li et al. 2022)": "a pretrained BigGAN and a black-box optimiser (CMA-ES) over its latent space",
    "GIFD (Fang et al. 2023)": "a pretrained StyleGAN2 searched layer by layer in its intermediate features",
    "FinetunedDiff (the paper's own comparison)": "a diffusion model fine-tuned on the leaked gradient, with the "
                                                 "paper's unpublished fine-tuning recipe",
}

SCALES = {
    "ci": dict(image_size=8, in_channels=1, prior_epochs=40, prior_hidden=512, prior_samples=8, targets=2,
               dps_steps=200, dps_zeta=3.0, dsg_steps=25, dsg_rate=0.2, variances=(0.0, 1e-3, 1e-1),
               normalised_variances=(1e-2,), attacked_models=("MLP_1", "CNN"), rv_images=2, rv_directions=8,
               sweep_zetas=(0.3, 3.0, 30.0), sweep_rates=(0.05, 0.2, 1.0), rv_zetas=(30.0,), dlg_iterations=100,
               prior_checkpoint=None, celeba_dir=None),
    "book": dict(image_size=8, in_channels=1, prior_epochs=700, prior_hidden=512, prior_samples=16, targets=8,
                 dps_steps=1000, dps_zeta=3.0, dsg_steps=100, dsg_rate=0.2, variances=(0.0, 1e-4, 1e-3, 1e-2, 1e-1),
                 normalised_variances=(1e-4, 1e-3, 1e-2, 1e-1), attacked_models=MODEL_NAMES, rv_images=10,
                 rv_directions=30, sweep_zetas=(0.3, 1.0, 3.0, 10.0, 30.0),
                 sweep_rates=(0.05, 0.1, 0.2, 0.4, 0.6, 1.0), rv_zetas=(1.0, 10.0), dlg_iterations=1000,
                 prior_checkpoint=None,
                 celeba_dir=None),
    "paper": dict(image_size=256, in_channels=3, prior_epochs=1, prior_hidden=512, prior_samples=4, targets=4,
                  dps_steps=1000, dps_zeta=230.0, dsg_steps=100, dsg_rate=0.2,
                  variances=(0.0, 1e-4, 1e-3, 1e-2, 1e-1), normalised_variances=(1e-4, 1e-3, 1e-2, 1e-1),
                  attacked_models=MODEL_NAMES, rv_images=310, rv_directions=1000,
                  sweep_zetas=tuple(float(z) for z in PAPER_TABLE3), sweep_rates=tuple(PAPER_TABLE4),
                  rv_zetas=(110.0, 310.0),
                  dlg_iterations=1000, prior_checkpoint="google/ddpm-celebahq-256", celeba_dir="data/celeba-hq"),
}


@dataclass(frozen=True)
class Settings(_Settings):
    """Settings of the diffusion chapter.

    ``image_size`` / ``in_channels`` the images (8 / 1: the digits; otherwise CelebA-HQ from ``celeba_dir`` with the
    pretrained prior ``prior_checkpoint``); ``prior_epochs`` / ``prior_hidden`` the prior trained here (Adam,
    batches of 256) and ``prior_samples`` how many of its samples to show; ``targets`` the private images attacked;
    ``dps_steps`` / ``dps_zeta`` Algorithm 1 (DDPM steps, step size), ``dsg_steps`` / ``dsg_rate`` Algorithm 2 (DDIM
    steps, guidance rate m_r); ``variances`` the noise grid sigma^2 on raw gradients (0 allowed) and
    ``normalised_variances`` on normalised ones (Table 1); ``attacked_models`` Table 2's networks (the others use
    the CNN); ``rv_images`` / ``rv_directions`` the images and random directions of Reconstruction Vulnerability;
    ``sweep_zetas`` / ``sweep_rates`` Tables 3-4; ``rv_zetas`` DPS step sizes besides ``dps_zeta`` at which Table 2's
    correlation is taken again; ``dlg_iterations`` the prior-free baseline's Adam steps.
    """

    image_size: int
    in_channels: int
    prior_epochs: int
    prior_hidden: int
    prior_samples: int
    targets: int
    dps_steps: int
    dps_zeta: float
    dsg_steps: int
    dsg_rate: float
    variances: tuple[float, ...]
    normalised_variances: tuple[float, ...]
    attacked_models: tuple[str, ...]
    rv_images: int
    rv_directions: int
    sweep_zetas: tuple[float, ...]
    sweep_rates: tuple[float, ...]
    rv_zetas: tuple[float, ...]
    dlg_iterations: int
    prior_checkpoint: str | None
    celeba_dir: str | None

    def validate(self) -> None:
        validation.integer("image_size", self.image_size, minimum=8)
        if self.image_size % 4:
            raise ValueError(f"image_size={self.image_size!r}; allowed: a multiple of 4 (the CNN pools twice)")
        validation.choice("in_channels", self.in_channels, (1, 3))
        if self.digits and self.prior_checkpoint is not None:
            raise ValueError(f"prior_checkpoint={self.prior_checkpoint!r}; allowed: None at image_size=8 (the "
                             "digits' prior is trained here)")
        if not self.digits and (self.prior_checkpoint is None or self.celeba_dir is None):
            raise ValueError(f"image_size={self.image_size!r} needs prior_checkpoint (a pretrained UNet2DModel) and "
                             "celeba_dir (a folder of CelebA-HQ images); allowed without them: image_size=8, "
                             "in_channels=1 (the bundled digits)")
        for name in ("prior_epochs", "prior_hidden", "prior_samples", "targets", "rv_images", "rv_directions",
                     "dlg_iterations"):
            validation.integer(name, getattr(self, name))
        validation.integer("dps_steps", self.dps_steps, minimum=2)
        validation.integer("dsg_steps", self.dsg_steps, minimum=2)
        if self.digits and max(self.targets, self.rv_images) + PRIOR_IMAGES > 1797:
            raise ValueError(f"targets={self.targets!r}, rv_images={self.rv_images!r}; allowed: at most 297 (the "
                             "digits after the prior's 1500)")
        validation.number("dps_zeta", self.dps_zeta, at_least=0.0, what="DPS step size")
        validation.number("dsg_rate", self.dsg_rate, at_least=0.0, at_most=1.0, what="DSG guidance rate m_r")
        if not self.variances:
            raise ValueError("variances=(); allowed: a non-empty list of noise variances >= 0")
        validation.number("variances", list(self.variances), at_least=0.0, what="noise variances")
        validation.grid("normalised_variances", self.normalised_variances, what="noise variances")
        if not self.attacked_models or any(m not in MODEL_NAMES for m in self.attacked_models):
            raise ValueError(f"attacked_models={self.attacked_models!r}; allowed: a non-empty subset of {MODEL_NAMES}")
        validation.grid("sweep_zetas", self.sweep_zetas, what="DPS step sizes")
        validation.grid("sweep_rates", self.sweep_rates, what="DSG guidance rates")
        validation.grid("rv_zetas", self.rv_zetas, what="DPS step sizes")
        validation.number("sweep_rates", list(self.sweep_rates), at_most=1.0, what="DSG guidance rates")

    @property
    def digits(self) -> bool:
        return self.image_size == 8 and self.in_channels == 1

    @property
    def shape(self) -> tuple[int, int, int, int]:
        return (1, self.in_channels, self.image_size, self.image_size)


def settings(scale: str = "book", device: str = "auto", seed: int = 0, **overrides) -> Settings:
    """The chapter's settings: the scale's values, replaced by every override that is not ``None``."""
    return resolve(Settings, SCALES, scale, device, seed, overrides)


def scope(cfg: Settings) -> str:
    """Where a finding of the run was made, for the scorecard's ``found`` texts, the findings table and the errata:
    the images (their size and source), the prior, the number of targets and the scale, from the settings."""
    side = f"{cfg.image_size}×{cfg.image_size}"
    if cfg.digits:
        images = f"{side} digits and a prior trained here"
    else:
        images = (f"{cfg.in_channels}×{side} images of {Path(cfg.celeba_dir).name} and the prior "
                  f"{Path(cfg.prior_checkpoint).name}")
    return f"{images}, {cfg.targets} target{'s' * (cfg.targets != 1)}, {cfg.scale} scale"


#: Fewest targets for a finding stated beyond k standard errors of the mean over the targets (fewer: not checked).
SE_TARGETS = 3


class Findings:
    """The run's own findings that no claim of the paper decides (an ordering of two means, the sign of a
    correlation, a plateau): each is recorded with whether it held and what was measured, and never stops the run;
    :meth:`table` lists them for the notebook (the paper's claims go on the scorecard card instead).  ``targets``
    is the number of targets a mean is taken over: an ordering by standard errors needs :data:`SE_TARGETS`."""

    def __init__(self, targets: int):
        self.targets = validation.integer("targets", targets)
        self.rows: list[dict] = []

    def check(self, what: str, *, holds, found: str) -> bool:
        """Record the finding ``what`` (a sentence), whether it ``holds``, and ``found`` (the numbers behind it)."""
        self.rows.append({"finding": what, "holds": "yes" if bool(holds) else "no", "found": found})
        return bool(holds)

    def _by_se(self, what: str, holds: bool, found: str) -> bool:
        if self.targets < SE_TARGETS:
            self.rows.append({"finding": what, "holds": "not run", "found": f"{self.targets} targets; {found}"})
            return False
        return self.check(what, holds=holds, found=found)

    def greater(self, what: str, high: float, low: float, se: float, *, k: float = 3.0) -> bool:
        """``high - low > k se``: an ordering that the noise of the means cannot explain (``se`` the standard error of
        the difference), recorded as ``"not run"`` with fewer than :data:`SE_TARGETS` targets."""
        return self._by_se(what, high - low > k * se, f"{high:.2f} against {low:.2f} dB, {k:g} SE = {k * se:.2f} dB")

    def at_most(self, what: str, value: float, bound: float, se: float, *, k: float = 3.0) -> bool:
        """``value <= bound + k se``: ``value`` not above ``bound`` beyond the noise (``se`` of the difference),
        recorded as ``"not run"`` with fewer than :data:`SE_TARGETS` targets."""
        return self._by_se(what, value <= bound + k * se,
                           f"{value:.2f} against {bound:.2f} dB, {k:g} SE = {k * se:.2f} dB")

    def table(self) -> pd.DataFrame:
        """One row per finding, in the order they were recorded."""
        return pd.DataFrame(self.rows, columns=["finding", "holds", "found"])


#: The paper-shape run's counts (:func:`paper_shape`): the paper scale's images, prior topology and CNN, each count
#: cut so that the run takes about a minute and a half of CPU time (and 7 GB of memory: the CNN's gradients); two
#: step counts, step sizes and guidance rates keep every table.
PAPER_SHAPE_OVERRIDES = dict(dps_steps=3, dsg_steps=2, prior_samples=1, attacked_models=["CNN"], rv_images=1,
                             rv_directions=2, variances=[0.0, TABLE6_VARIANCE], normalised_variances=[TABLE6_VARIANCE],
                             sweep_zetas=[110.0, 230.0], sweep_rates=[0.2, 1.0], rv_zetas=[230.0],
                             dlg_iterations=2)


def paper_shape(folder: str | Path) -> dict:
    """The notebook's parameters for a run of the paper pipeline at its shapes on stand-in files in ``folder``
    (:func:`compendium.book.execute_paper_shape`): one 256² JPEG of random pixels as the CelebA-HQ target
    (:func:`compendium.standin.celeba_hq`), a ``UNet2DModel`` with the hub checkpoint's topology at 256² and random
    weights, saved to ``folder/unet`` as ``prior_checkpoint`` (:func:`compendium.standin.diffusion_unet`, channel
    widths cut from the checkpoint's (128, ..., 512) to (16, ..., 64): the full 114 M parameters take tens of seconds
    a step on one core), the paper's CNN at 3×256×256 as the one attacked network, and
    :data:`PAPER_SHAPE_OVERRIDES`' counts.  Nothing is downloaded; the numbers mean nothing."""
    folder = Path(folder)
    images = standin.celeba_hq(folder / "celeba-hq", n=1, side=PAPER_IMAGE[1])
    unet = standin.diffusion_unet(folder / "unet", sample_size=PAPER_IMAGE[1], channels=PAPER_IMAGE[0])
    return {"scale": "paper", "targets": 1, "celeba_dir": str(images), "prior_checkpoint": str(unet),
            "overrides": dict(PAPER_SHAPE_OVERRIDES)}


def epsilon_table(variances=theory.TABLE1_VARIANCES, *, delta=1e-5, sensitivity=1.0) -> pd.DataFrame:
    """Table 1's epsilons against exact ones: one row per noise variance ``sigma^2``.

    Columns: ``variance``, ``sigma``, ``eps_printed`` (Table 1, where the variance is one of the paper's; else NaN),
    ``eps_lemma1`` (:func:`~compendium.bounds.diffusion.gaussian_mechanism_epsilon`), ``lemma1_applies``
    (``eps_lemma1 < 1``), ``eps_exact`` (:func:`~compendium.bounds.diffusion.gaussian_mechanism_epsilon_exact`) and
    ``exact_over_lemma1``.
    """
    var = validation.grid("variances", list(variances), what="noise variances sigma^2")
    printed = dict(zip(theory.TABLE1_VARIANCES, theory.TABLE1_EPSILONS))
    rows = []
    for v in var:
        s = float(np.sqrt(v))
        e1 = theory.gaussian_mechanism_epsilon(s, delta=delta, sensitivity=sensitivity)
        ex = theory.gaussian_mechanism_epsilon_exact(s, delta=delta, sensitivity=sensitivity)
        rows.append({"variance": float(v), "sigma": s, "eps_printed": printed.get(v, np.nan), "eps_lemma1": e1,
                     "lemma1_applies": bool(e1 < 1.0), "eps_exact": ex, "exact_over_lemma1": ex / e1})
    return pd.DataFrame(rows)


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


def denoiser_costs(cfg: Settings, repeats: int = 3) -> pd.DataFrame:
    """Why the book's prior is an MLP: seconds per training step (a batch of 256) and per guided sampler step (a
    forward and backward pass for one image) of the book's :class:`MLPDenoiser` and of a ``diffusers.UNet2DModel``
    of about the same size (two resolution levels of 32 and 64 channels), measured side by side."""
    from diffusers import UNet2DModel

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
           steps: int | None = None) -> list[Run]:
    """Release the weight gradient of each of the private images ``targets`` (target ``i``'s noise drawn from seed
    ``100 + i``, offset by ``1000 cfg.seed``) and reconstruct them with ``method``, all in one batch: ``"DPS"``
    (Algorithm 1, ``parameter`` = zeta, default ``cfg.dps_zeta``), ``"DSG"`` (Algorithm 2, ``parameter`` = m_r,
    default ``cfg.dsg_rate``), ``"prior"`` (DPS with zeta = 0: an unconditional sample), ``"DLG"`` (the prior-free
    gradient matching, ``cfg.dlg_iterations`` Adam steps) or ``"IG"`` (Inverting Gradients, as many steps from
    :data:`IG_RESTARTS` starts).  ``variance`` and ``parameter`` are one value for every target or one per target
    (``None`` for the default), so a grid of settings of one sampler runs as one batch, a target appearing once per
    setting.  ``steps`` replaces the sampler's step count (:func:`sampler_steps`).  Target ``i``'s sampler seed is
    ``i + 1000 cfg.seed`` whatever batch it runs in; a run's seconds are the batch's over its size."""
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
    raw = torch.stack([dg.weight_gradient(model, x[None], y[None]) for x, y in zip(images, labels)])
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
                                              restarts=IG_RESTARTS, **common)
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


class Experiment:
    """The chapter's attacks on one prior and one set of targets, each computed once: :meth:`run` returns the stored
    :class:`Run` when the same attack was asked for before (the noise grid's runs without noise are also Table 2's
    CNN row, Table 3's default step size, Table 5's samplers), and :meth:`runs` attacks all the targets of a list of
    settings, as few batches as the settings allow: one per method, model, gradient (raw or normalised) and step
    count, whatever the noise variances and step sizes (a batch of 40 images costs about 0.7 times as much per image
    as one of 8 on the CNN); on CUDA a batch holds no more images than the free memory does (:meth:`batch_size`)."""

    def __init__(self, cfg: Settings, prior_: Prior, data: Data):
        self.cfg, self.prior, self.data = cfg, prior_, data
        self._models: dict[str, nn.Module] = {}
        self._runs: dict[tuple, Run] = {}
        self._footprints: dict[tuple, int] = {}

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
                          variance=[s["variance"] for _, (s, _) in items],
                          parameter=[s["parameter"] for _, (s, _) in items])
            for (key, _), run in zip(items, runs):
                self._runs[key] = run

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


def over_targets(runs: pd.DataFrame, by: list[str], columns: tuple[str, ...] = ("final PSNR", "peak PSNR"),
                 *, extra: tuple[str, ...] = ()) -> pd.DataFrame:
    """Per group of ``by``: the mean over the targets of each of ``columns`` with its standard error (``std / sqrt(n)``,
    ddof 1; NaN for a single target) in a column ``"... SE"`` after it, and the mean of each of ``extra``."""
    groups = runs.groupby(by, sort=False)
    out = groups[list(columns) + list(extra)].mean()
    for column in columns:
        se = groups[column].agg(lambda x: x.std(ddof=1) / math.sqrt(len(x)) if len(x) > 1 else math.nan)
        out.insert(out.columns.get_loc(column) + 1, f"{column} SE", se)
    return out.reset_index()


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


def table1(grid: pd.DataFrame) -> pd.DataFrame:
    """Table 1's counterpart: per method, gradient and sigma^2, the mean over targets of the final and the oracle-peak
    PSNR with their standard errors, the peak's timestep and the final SSIM; epsilon of the normalised release
    (sensitivity 1, delta = 1e-5) by Lemma 1 and exactly; the paper's (peak) PSNR beside."""
    out = over_targets(grid, ["method", "gradient", "σ²"], extra=("peak t", "final SSIM"))
    normalised = out["gradient"] == "normalised"
    sigma = np.sqrt(out["σ²"].where(normalised & (out["σ²"] > 0)))
    out["ε (Lemma 1)"] = [theory.gaussian_mechanism_epsilon(s, delta=DELTA) if np.isfinite(s) else np.nan
                          for s in sigma]
    out["ε (exact)"] = [theory.gaussian_mechanism_epsilon_exact(s, delta=DELTA) if np.isfinite(s) else np.nan
                        for s in sigma]
    out["paper PSNR"] = [PAPER_TABLE1.get((m, g == "normalised", v), (np.nan,))[0]
                         for m, g, v in zip(out["method"], out["gradient"], out["σ²"])]
    return out


def paper_table1_consistency() -> pd.DataFrame:
    """Table 1 against itself: the printed PSNR beside ``-10 log10(MSE)`` of the printed MSE (images in [0, 1])."""
    rows = [{"method": m, "gradient": "normalised" if n else "raw", "σ²": v, "MSE": mse, "PSNR printed": psnr,
             "-10 log10 MSE": -10 * math.log10(mse)} for (m, n, v), (psnr, mse) in PAPER_TABLE1.items()]
    out = pd.DataFrame(rows)
    out["difference (dB)"] = out["PSNR printed"] - out["-10 log10 MSE"]
    return out


# ---------------------------------------------------------------------------------------------------------------
# Table 2: Reconstruction Vulnerability
# ---------------------------------------------------------------------------------------------------------------
EXACT_RV_PIXELS = 4096  # the exact Jacobian costs one JVP per pixel: skipped above 64x64 (paper scale: Eq. 17 only)


#: Power-iteration steps of ``||J||_2`` above :data:`EXACT_RV_PIXELS` pixels (Lemma 5's check).
SPECTRAL_ITERATIONS = 5


def jacobian_spectral_norm(cfg: Settings, model: nn.Module, image: torch.Tensor, label: torch.Tensor, *,
                           residual: torch.Tensor) -> tuple[float, str]:
    """``||J||_2`` of the weight gradient's Jacobian at one image (1, C, H, W) and how it was computed: exactly
    (the matrix, :func:`~compendium.attacks.diffusion_guided.gradient_jacobian`) up to :data:`EXACT_RV_PIXELS`
    pixels, else by :data:`SPECTRAL_ITERATIONS` power-iteration steps from ``residual``
    (:func:`~compendium.attacks.diffusion_guided.gradient_jacobian_spectral_norm`, a lower bound of ``||J||_2`` that
    is at least ``||J^T residual|| / ||residual||``)."""
    if math.prod(cfg.shape[1:]) <= EXACT_RV_PIXELS:
        return float(torch.linalg.matrix_norm(dg.gradient_jacobian(model, image[0], label[0]), ord=2)), "exact"
    norm = dg.gradient_jacobian_spectral_norm(model, image[0], label[0], start=residual,
                                              iterations=SPECTRAL_ITERATIONS)
    return norm, f"{SPECTRAL_ITERATIONS} power-iteration steps"


def paper_rank_correlations(models: tuple[str, ...] = tuple(PAPER_TABLE2)) -> dict[str, float]:
    """Spearman's rank correlation of RV and PSNR over the ``models`` rows of the paper's Table 2 (which prints
    none), for DPS and DSG."""
    rv, dps, dsg = np.array([PAPER_TABLE2[m] for m in models]).T
    return {"DPS": float(stats.spearmanr(rv, dps).statistic), "DSG": float(stats.spearmanr(rv, dsg).statistic)}


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
    as each model's Table 2 run."""
    cfg = exp.cfg
    device = resolve_device(cfg.device)
    images, labels = exp.data.images[:cfg.rv_images].to(device), exp.data.labels[:cfg.rv_images].to(device)
    rows = []
    for name in tqdm(cfg.attacked_models, desc="RV", unit="model", disable=not progress):
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


def rv_column(table2: pd.DataFrame) -> pd.Series:
    """RV per model from :func:`rv_table`: Definition 3's exact maximum, or Eq. (17) where the exact Jacobian was
    skipped (above :data:`EXACT_RV_PIXELS` pixels)."""
    column = "RV (Def. 3, max)" if table2["RV (Def. 3, max)"].notna().all() else "Eq. (17)"
    return table2.set_index("model")[column]


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
        rows.append({"ζ": zeta, "step size": "ζ · RV_CNN / RV" if scaled else "ζ",
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


def sweep_table(runs: pd.DataFrame, column: str) -> pd.DataFrame:
    """A sweep's runs (:func:`sweep`) as Table 3 or 4: per value (named ``column``) the mean final and peak PSNR over
    the targets with their standard errors."""
    return over_targets(runs, ["parameter"]).rename(columns={"parameter": column})


def paper_parameter_counts() -> dict[str, int]:
    """The weights of each attacked network at the paper's 3x256x256 input, counted on the ``meta`` device (no memory
    is allocated): the size of one gradient, the vector every sampler step differentiates twice."""
    with torch.device("meta"):
        return {name: sum(p.numel() for p in gradient_target(name, in_channels=PAPER_IMAGE[0],
                                                            image_size=PAPER_IMAGE[1]).parameters())
                for name in MODEL_NAMES}


def quoted_numbers() -> dict[str, float]:
    """The numbers the prose quotes that no step of the pipeline computes (the exercise solutions', and the
    paper-scale section's), keyed for ``glue``.

    Exercise 1: the exact epsilon (delta = 1e-5) of ``sigma^2 = 1e-2`` at sensitivity 1 (add/remove) and 2 (replace,
    which equals sensitivity 1 at ``sigma = 0.05``), Table 1's Lemma 1 label and Lemma 1 at sensitivity 2.  Exercise
    2: the CNN's weight count ``m`` at 3x256x256, ``sqrt(m)``, its RV in Table 2 and the ``||J||_F = RV sqrt(m)`` a
    unit-direction RV implies.  Exercise 3: ``L_g / d`` (Eq. 21) at ``sigma^2 = 1e-2``.  And the smallest and the
    largest network of the paper's (ResMini aside) with their gradient sizes in GB (float32).
    """
    sigma = math.sqrt(TABLE6_VARIANCE)
    exact_1 = theory.gaussian_mechanism_epsilon_exact(sigma, delta=1e-5, sensitivity=1.0)
    exact_2 = theory.gaussian_mechanism_epsilon_exact(sigma, delta=1e-5, sensitivity=2.0)
    if not math.isclose(exact_2, theory.gaussian_mechanism_epsilon_exact(sigma / 2, delta=1e-5), rel_tol=1e-9):
        raise AssertionError("sensitivity 2 at sigma must equal sensitivity 1 at sigma / 2")
    counts = paper_parameter_counts()
    m, rv = counts["CNN"], PAPER_TABLE2["CNN"][0]
    large = {name: n for name, n in counts.items() if name != "ResMini"}
    printed = dict(zip(theory.TABLE1_VARIANCES, theory.TABLE1_EPSILONS))[TABLE6_VARIANCE]
    return {"df_ex1_exact_1": exact_1, "df_ex1_exact_2": exact_2, "df_ex1_printed": printed,
            "df_ex1_ratio": exact_2 / printed,
            "df_ex1_lemma1_2": theory.gaussian_mechanism_epsilon(sigma, delta=1e-5, sensitivity=2.0),
            "df_ex2_m": float(m), "df_ex2_sqrt_m": math.sqrt(m), "df_ex2_rv": rv, "df_ex2_frobenius": rv * math.sqrt(m),
            "df_ex3_lg_per_d": float(theory.lemma3_lipschitz(sigma, d=1)),
            "df_paper_weights_min": float(min(large.values())), "df_paper_weights_max": float(max(large.values())),
            "df_paper_gradient_gb_min": 4 * min(large.values()) / 1e9,
            "df_paper_gradient_gb_max": 4 * max(large.values()) / 1e9}


# ---------------------------------------------------------------------------------------------------------------
# The scorecard: every result the paper states, decided in the notebook (compendium.scorecard)
# ---------------------------------------------------------------------------------------------------------------
PAPER = "Huang, Meng et al. (2024)"
ERRATA_TABLE = "df-errata-table"
#: Rows of the errata table that no claim of the scorecard decides, and why (none).
ERRATA_ELSEWHERE: dict[int, str] = {}
_T1_DSG_RAW = PAPER_TABLE1[("DSG", False, TABLE6_VARIANCE)]  # (PSNR, MSE) of the row that contradicts itself
_T3_BEST = max(PAPER_TABLE3, key=PAPER_TABLE3.get)
_T4_BEST = max(PAPER_TABLE4, key=PAPER_TABLE4.get)
_T5_BEST = max((k for k in PAPER_TABLE5 if k not in METHODS), key=PAPER_TABLE5.get)
_T6_BEST = max((k for k in PAPER_TABLE6 if k not in METHODS), key=PAPER_TABLE6.get)

CLAIMS = (
    Claim("df-fig1", "Figure 1", "figure",
          "The forward (noising) and the reverse (denoising) process of a diffusion model.",
          "{numref}`df-fig-prior-samples`", NOT_CHECKABLE,
          reason="a schematic of the two processes: it states no result"),
    Claim("df-lemma1", "Lemma 1", "theorem",
          "Gaussian noise with $\\sigma\\ge\\Delta\\sqrt{2\\ln(5/(4\\delta))}/\\varepsilon$ makes a release of "
          "$\\ell_2$-sensitivity $\\Delta$ $(\\varepsilon,\\delta)$-DP, stated for every $\\varepsilon$.",
          "{prf:ref}`df-lemma1`", DIFFERS, erratum=1),
    Claim("df-thm1", "Theorem 1, Eq. (14)", "theorem",
          "The Jensen gap of the DPS approximation is at most $\\frac{d}{\\sqrt{2\\pi\\sigma^2}}"
          "\\lVert\\nabla_{\\mathbf x}\\nabla_WF\\rVert\\int\\lVert\\mathbf x_0-\\hat{\\mathbf x}_0\\rVert\\,"
          "dP_\\theta(\\mathbf x_0\\mid\\mathbf x_t)$.", "{prf:ref}`df-thm1`", DIFFERS, erratum=2),
    Claim("df-def3", "Definition 3, Eqs. (16)–(17)", "statement",
          "Eq. (17), a mean of $\\lVert\\nabla_{\\mathbf x}(\\mathbf v^\\top\\nabla_WF)\\rVert$ over random orthogonal "
          "directions, estimates RV, the maximum over the images of $\\lVert\\nabla_{\\mathbf x}\\nabla_WF\\rVert_F$.",
          "{prf:ref}`df-def3`", DIFFERS, erratum=7),
    Claim("df-lemma2", "Lemma 2, Eq. (19)", "theorem",
          "For a $\\beta'$-strongly convex loss and a Gaussian posterior with variances $\\sigma_i^2$ the Jensen "
          "gap is at least $\\frac12\\beta'\\sum_i\\sigma_i^2$.", "{prf:ref}`df-lemma2`", REPRODUCED),
    Claim("df-lemma3", "Lemma 3, Eq. (20)", "theorem",
          "The density of $\\mathcal N(0,\\sigma^2I_d)$ is Lipschitz with "
          "$L=\\frac{d}{\\sqrt{2\\pi\\sigma^2}}e^{-1/(2\\sigma^2)}$.", "{prf:ref}`df-lemma3`", DIFFERS, erratum=3),
    Claim("df-thm2", "Theorem 2, Eq. (21)", "theorem",
          "Under Assumptions 1–4 the Jensen gap is at least "
          "$\\frac12\\big(\\beta\\lambda_{\\min}(\\mathbf J_g^\\top\\mathbf J_g)-\\alpha L_g\\big)\\sum_i\\sigma_i^2$.",
          "{prf:ref}`df-thm2`", DIFFERS, erratum=4),
    Claim("df-thm2-noise", "Sec. 3.2, after Theorem 2", "statement",
          "A larger DP noise $\\sigma^2$ gives a smaller $L_g$, hence a larger lower bound on the Jensen gap.",
          "{numref}`df-fig-lipschitz`", DIFFERS, erratum=4),
    Claim("df-lemma4", "Lemma 4, Eq. (28)", "theorem",
          "A $\\beta'$-strongly convex, $\\alpha'$-smooth loss has "
          "$\\beta'I\\preceq\\nabla^2\\mathcal L\\preceq\\alpha'I$.",
          "{prf:ref}`df-lemma4`", REPRODUCED),
    Claim("df-thm3", "Theorem 3", "theorem",
          "The attack loss decreases monotonically along the denoising steps of Algorithm 2.",
          "{prf:ref}`df-thm3`", DIFFERS, erratum=6),
    Claim("df-lemma5", "Lemma 5, Eq. (33)", "theorem",
          "$\\lVert\\nabla_{\\mathbf x}\\mathcal L\\rVert_2"
          "\\le\\sqrt{\\lambda_{\\max}(\\mathbf J_g\\mathbf J_g^\\top)}\\,L_g$.",
          "{prf:ref}`df-lemma5`", DIFFERS, erratum=5),
    Claim("df-thm4", "Theorem 4, Eq. (37), and its figures", "theorem",
          "Along the guided step of length $s$ the loss changes by at least $\\frac{\\beta'}2s^2-sG$, with $G$ a bound "
          "on $\\lVert\\nabla\\mathcal L\\rVert$ (Lemma 5's in the paper).", "{prf:ref}`df-thm4`", REPRODUCED),
    Claim("df-fig2", "Sec. 4.2.1, Figure 2", "figure",
          "Along the reverse process the gradient distance falls, and the MSE to the private image falls with it.",
          "{numref}`df-fig-loss-trajectory`", IN_SHAPE,
          reason="for both samplers the loss and the MSE of the last step are below those of the first (the first "
                 "target)"),
    Claim("df-fig3", "Sec. 4.2.1, Figure 3", "figure",
          "The estimates $\\hat{\\mathbf x}_0(\\mathbf x_t)$ approach the private image along the reverse process.",
          "{numref}`df-fig-snapshots`", IN_SHAPE,
          reason="both samplers' last snapshot is closer to the target (MSE) than their first"),
    Claim("df-noise-figure", "Sec. 4.2.2, unnumbered figure of PSNR against σ² (raw gradients)", "figure",
          "Small noise on the raw gradients leaves the reconstructions nearly identical to the private images; larger "
          "noise degrades them.", "{numref}`df-fig-psnr-trajectory`", IN_SHAPE,
          reason="both samplers' best PSNR along the trajectory is lower at the grid's largest σ² than at its smallest "
                 "(the first target)"),
    Claim("df-dp-figure", "Sec. 4.2.2, unnumbered figure of PSNR against ε (normalised gradients)", "figure",
          "On normalised gradients the reconstructions of both samplers decline as $\\varepsilon$ decreases.",
          "{ref}`df-noisy`", IN_SHAPE,
          reason="on normalised gradients both samplers' mean final PSNR falls with σ² (no rise of 1 dB) and stays "
                 "below the noiseless one"),
    Claim("df-normalised", "Sec. 4.2.2, Table 1", "statement",
          "Gradients normalised before the noise is added are easier to attack than raw ones.",
          "{ref}`df-noisy`", NOT_CHECKABLE,
          reason="it depends on ‖g₀‖, which the paper does not report: normalising to norm 1 shrinks the signal where "
                 "‖g₀‖ > 1; the chapter's table of findings says which gradient the run's CNN gave the higher PSNR"),
    Claim("df-table1", "Table 1", "table",
          "The quality of both samplers' reconstructions falls with the noise variance $\\sigma^2$, on raw and on "
          "normalised gradients.", "{ref}`df-noisy`", IN_SHAPE,
          reason=f"on raw gradients both samplers' mean final PSNR falls with σ² (no rise of 1 dB), DPS's by more than "
                 f"{T1_DPS_DROP:g} dB (the paper reports the oracle peak)"),
    Claim("df-table1-eps", "Table 1, its ε", "table",
          "The normalised rows are $(\\varepsilon,\\delta)$-DP by Lemma 1, with $\\varepsilon$ = "
          + ", ".join(f"{e:g}" for e in theory.TABLE1_EPSILONS) + ".", "{ref}`df-privacy`", DIFFERS, erratum=1),
    Claim("df-table1-dsg", "Table 1, DSG, raw gradients", "table",
          f"At $\\sigma^2$ = {TABLE6_VARIANCE:g}: PSNR {_T1_DSG_RAW[0]:.4f} dB and MSE {_T1_DSG_RAW[1]:.4e}.",
          "{ref}`df-noisy`", DIFFERS, erratum=8),
    Claim("df-samplers", "Tables 1, 5 and 6", "table",
          f"DSG beats DPS without noise ({PAPER_TABLE5['DSG']:.4f} against {PAPER_TABLE5['DPS']:.4f} dB) and DPS beats "
          f"DSG at $\\sigma^2$ = {TABLE6_VARIANCE:g} ({PAPER_TABLE6['DPS']:.4f} against {PAPER_TABLE6['DSG']:.4f} dB).",
          "{ref}`the step-count table <df-steps-label>`", DIFFERS, erratum=9),
    Claim("df-table2", "Table 2 and its figure", "table",
          f"RV of five networks with fixed random weights, from ResNet9's {PAPER_TABLE2['ResMini'][0]:g} to MLP_1's "
          f"{PAPER_TABLE2['MLP_1'][0]:g}, beside both samplers' reconstructions.", "{ref}`df-rv-sec`", IN_SHAPE,
          reason="the network with the paper's largest RV has the largest RV here, and the MLPs keep the paper's "
                 "order (Definition 3's exact RV where the images are small enough, else Eq. (17); the paper's RV and "
                 "PSNR are at 256×256)"),
    Claim("df-rv", "Sec. 4.2.3", "statement",
          "Models with a larger RV give better reconstructions: RV measures a model's vulnerability.",
          "{ref}`the step-size table <df-rv-step-label>`", DIFFERS, erratum=10),
    Claim("df-table3", "Table 3, Sec. 4.2.4", "table",
          f"DPS's PSNR peaks at the step size $\\zeta$ = {_T3_BEST} ({PAPER_TABLE3[_T3_BEST]:.4f} dB) and falls "
          "beyond it.", "{ref}`df-sweeps`", IN_SHAPE,
          reason="the step size has an interior optimum, on the scale's grid of ζ (the paper's belong to its gradient "
                 "scale at 256×256)"),
    Claim("df-table4", "Table 4, Sec. 4.2.4", "table",
          f"Too small a guidance rate gives too little guidance: the PSNR is lowest at $m_r$ = "
          f"{min(PAPER_TABLE4):g} ({PAPER_TABLE4[min(PAPER_TABLE4)]:.4f} dB).", "{ref}`df-sweeps`", IN_SHAPE,
          reason="the mean final PSNR is lowest at the grid's smallest $m_r$ (DSG's step count)"),
    Claim("df-table4-peak", "Table 4, Sec. 4.2.4", "statement",
          f"The guidance rate has an interior optimum, $m_r$ = {_T4_BEST:.2f} ({PAPER_TABLE4[_T4_BEST]:.4f} dB); "
          "higher rates degrade the reconstruction.", "{ref}`df-sweeps`", NOT_CHECKABLE,
          reason="Table 4 states neither how many images each PSNR averages nor a spread, so its differences near "
                 "the peak cannot be told from the noise of the runs; the chapter's table of findings says whether "
                 "the run's PSNR rises up to $m_r=1$"),
    Claim("df-table5", "Table 5, Sec. 4.2.5", "table",
          f"Without noise both samplers ({PAPER_TABLE5['DPS']:.4f} and {PAPER_TABLE5['DSG']:.4f} dB) beat seven "
          f"baselines, the best of them {_T5_BEST} ({PAPER_TABLE5[_T5_BEST]:.4f} dB).", "{ref}`df-baselines`",
          NOT_HERE,
          reason="five of the baselines need pretrained generators or an unpublished fine-tuning recipe that the book "
                 "does not download, and the comparison needs the paper's 256×256 faces; the chapter's table of "
                 "findings says whether the prior-free Inverting Gradients beats DPS on the images that ran"),
    Claim("df-table6", "Table 6, Sec. 4.2.5", "table",
          f"With noise of variance {TABLE6_VARIANCE:g} on the raw gradients the samplers stay ahead: DPS "
          f"{PAPER_TABLE6['DPS']:.4f} dB, DSG {PAPER_TABLE6['DSG']:.4f} dB, the best baseline {_T6_BEST} "
          f"{PAPER_TABLE6[_T6_BEST]:.4f} dB.", "{ref}`df-baselines`", IN_SHAPE,
          reason="under that noise the best method run is a diffusion sampler, ahead of the prior-free DLG and "
                 "Inverting Gradients (the pretrained baselines are not run)"),
    Claim("df-abstract", "Abstract", "headline",
          "Gradient-guided diffusion models reconstruct private images starting from random noise, even when a small "
          "amount of DP noise is added to the gradients.", "{ref}`df-baselines`", IN_SHAPE,
          reason=f"with noise of variance {TABLE6_VARIANCE:g} on the raw gradients the better sampler still ends "
                 "above the prior-only floor"),
    Claim("df-conclusion", "Sec. 6", "headline",
          "Two training-free methods reconstruct private images from leaked gradients with minimal changes to a "
          "diffusion model's sampling and without prior knowledge of the image.", "{ref}`df-baselines`", IN_SHAPE,
          reason="from noiseless gradients both samplers end above the prior-only floor, DPS by more than 10 dB"),
)
