"""The diffusion chapter's settings at each scale (:data:`SCALES`, :class:`Settings`), the scope of its
findings, its paper-shape run (:func:`paper_shape`) and the paper's numbers it compares with (the ``PAPER_*``
constants, from Huang, Meng et al. 2024)."""
from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from compendium import standin, validation
from compendium.chapters.base import Settings as _Settings
from compendium.chapters.base import resolve
from compendium.models.gradient_targets import NAMES as MODEL_NAMES

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
#: How far above the prior-only floor DPS's mean final PSNR without noise must end for the conclusion's claim (a
#: reconstruction from the gradient, not a sample of the prior) to count as reproduced (dB).
FLOOR_MARGIN = 10.0
#: The image the paper attacks, channels x side: 3x256x256 faces.
PAPER_IMAGE = (3, 256)
#: The paper's PSNR as it prints it, to four decimals (``formats`` of :func:`compendium.plotting.table`).
PAPER_PSNR_FORMAT = {"paper PSNR": "{:.4f}"}
#: How far DPS's mean final PSNR must fall over the raw noise grid for Table 1's trend to count as reproduced (dB).
T1_DPS_DROP = 8.0
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
    "ci": dict(image_size=8, in_channels=1, prior_epochs=25, prior_hidden=512, prior_samples=8, targets=2,
               dps_steps=100, dps_zeta=3.0, dsg_steps=25, dsg_rate=0.2, variances=(0.0, 1e-3, 1e-1),
               normalised_variances=(1e-2,), attacked_models=("MLP_1", "CNN"), rv_images=2, rv_directions=8,
               sweep_zetas=(0.3, 3.0, 30.0), sweep_rates=(0.05, 0.2, 1.0), rv_zetas=(30.0,), dlg_iterations=50,
               ig_restarts=2, spectral_iterations=5, cost_repeats=1, baselines=True, prior_checkpoint=None,
               celeba_dir=None, checkpoint_dir=None),
    "book": dict(image_size=8, in_channels=1, prior_epochs=700, prior_hidden=512, prior_samples=16, targets=8,
                 dps_steps=1000, dps_zeta=3.0, dsg_steps=100, dsg_rate=0.2, variances=(0.0, 1e-4, 1e-3, 1e-2, 1e-1),
                 normalised_variances=(1e-4, 1e-3, 1e-2, 1e-1), attacked_models=MODEL_NAMES, rv_images=10,
                 rv_directions=30, sweep_zetas=(0.3, 1.0, 3.0, 10.0, 30.0),
                 sweep_rates=(0.05, 0.1, 0.2, 0.4, 0.6, 1.0), rv_zetas=(1.0, 10.0), dlg_iterations=1000,
                 ig_restarts=2, spectral_iterations=5, cost_repeats=2, baselines=True, prior_checkpoint=None,
                 celeba_dir=None, checkpoint_dir=None),
    "paper": dict(image_size=256, in_channels=3, prior_epochs=1, prior_hidden=512, prior_samples=4, targets=4,
                  dps_steps=1000, dps_zeta=230.0, dsg_steps=100, dsg_rate=0.2,
                  variances=(0.0, 1e-4, 1e-3, 1e-2, 1e-1), normalised_variances=(1e-4, 1e-3, 1e-2, 1e-1),
                  attacked_models=MODEL_NAMES, rv_images=310, rv_directions=1000,
                  sweep_zetas=tuple(float(z) for z in PAPER_TABLE3), sweep_rates=tuple(PAPER_TABLE4),
                  rv_zetas=(110.0, 310.0),
                  dlg_iterations=1000, ig_restarts=2, spectral_iterations=5, cost_repeats=2, baselines=True,
                  prior_checkpoint="google/ddpm-celebahq-256", celeba_dir="data/celeba-hq",
                  checkpoint_dir="data/checkpoints/diffusion"),
}


@dataclass(frozen=True)
class Settings(_Settings):
    """Settings of the diffusion chapter.

    ``image_size`` / ``in_channels`` the images (8 / 1: the digits; otherwise CelebA-HQ from ``celeba_dir`` with the
    pretrained prior ``prior_checkpoint``); ``prior_epochs`` / ``prior_hidden`` the prior trained here (Adam,
    batches of 256) and ``prior_samples`` how many of its samples to show; ``targets`` the private images attacked;
    ``dps_steps`` / ``dps_zeta`` Algorithm 1 (DDPM steps, step size), ``dsg_steps`` / ``dsg_rate`` Algorithm 2 (DDIM
    steps, guidance rate m_r); ``variances`` the noise grid sigma^2 on raw gradients (0 allowed) and
    ``normalised_variances`` on normalised ones (Table 1; empty: raw gradients only); ``attacked_models`` Table 2's
    networks (the others use the CNN); ``rv_images`` / ``rv_directions`` the images and random directions of
    Reconstruction Vulnerability; ``sweep_zetas`` / ``sweep_rates`` Tables 3-4; ``rv_zetas`` DPS step sizes besides
    ``dps_zeta`` at which Table 2's correlation is taken again; ``dlg_iterations`` the prior-free baselines' Adam
    steps and ``ig_restarts`` Inverting Gradients' random starts per reconstruction (the authors' ``inversefed``
    examples use 1 to 8);
    ``spectral_iterations`` the power-iteration steps of ``||J||_2`` above :data:`~compendium.chapters.diffusion.
    experiments.EXACT_RV_PIXELS` pixels (Lemma 5's check); ``cost_repeats`` the timed steps per denoiser in
    :func:`~compendium.chapters.diffusion.experiments.denoiser_costs` (digits only); ``baselines`` whether Tables
    5-6's baselines and the prior-only floor run (``False``: their claims are recorded as not run);
    ``checkpoint_dir`` a folder (in the repository unless absolute) where every finished reconstruction and RV row is
    saved and found again on a rerun with the same settings, so that a lost session resumes (``None``: off; the
    ``paper`` scale's runs take hours).
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
    ig_restarts: int
    spectral_iterations: int
    cost_repeats: int
    baselines: bool
    prior_checkpoint: str | None
    celeba_dir: str | None
    checkpoint_dir: str | None

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
                     "dlg_iterations", "ig_restarts", "cost_repeats"):
            validation.integer(name, getattr(self, name))
        validation.integer("spectral_iterations", self.spectral_iterations, minimum=0)
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
        if self.normalised_variances:  # empty: no normalised rows
            validation.grid("normalised_variances", self.normalised_variances, what="noise variances")
        if self.checkpoint_dir is not None and not isinstance(self.checkpoint_dir, str):
            raise ValueError(f"checkpoint_dir={self.checkpoint_dir!r}; allowed: None or a folder")
        if not isinstance(self.baselines, bool):
            raise ValueError(f"baselines={self.baselines!r}; allowed: True or False")
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


#: The paper-shape run's counts (:func:`paper_shape`): the paper scale's images, prior topology and CNN, each count
#: cut to its least (one target, image, direction, restart and iteration, no power-iteration step beyond the first
#: product, one step size and one guidance rate, the scale's defaults), so that the run takes about half a minute of
#: CPU time on one thread (and 7 GB of memory: the CNN's gradients).  The samplers keep two steps each: DSG's last step
#: lands on the clean image with no noise left to steer (sigma~ = 0), so one step would never run its guidance, and
#: one DPS step with DSG's two would add a run of each at the other's count (the step comparison) instead of saving
#: one.  The noise grid keeps raw gradients without noise and at Table 6's variance; normalised gradients (the same
#: code path, divided by their norm) and the baselines (DLG and Inverting Gradients, whose steps are the samplers'
#: matching distance without a prior) are skipped, their claims and findings recorded as not run.
PAPER_SHAPE_OVERRIDES = dict(dps_steps=2, dsg_steps=2, prior_samples=1, attacked_models=["CNN"], rv_images=1,
                             rv_directions=1, variances=[0.0, TABLE6_VARIANCE], normalised_variances=[],
                             sweep_zetas=[230.0], sweep_rates=[0.2], rv_zetas=[230.0], dlg_iterations=1,
                             ig_restarts=1, spectral_iterations=0, baselines=False)
#: The stand-in prior's channel widths per resolution level in the paper-shape run: the hub checkpoint's are
#: (128, 128, 256, 256, 512, 512), 114 M parameters that take tens of seconds a step on one core; these take a third
#: of a second for a forward and backward pass at 256².
PAPER_SHAPE_UNET_WIDTHS = (8, 8, 16, 16, 32, 32)


def paper_shape(folder: str | Path) -> dict:
    """The notebook's parameters for a run of the paper pipeline at its shapes on stand-in files in ``folder``
    (:func:`compendium.book.execute_paper_shape`): one 256² JPEG of random pixels as the CelebA-HQ target
    (:func:`compendium.standin.celeba_hq`), a ``UNet2DModel`` with the hub checkpoint's topology at 256² and random
    weights, saved to ``folder/unet`` as ``prior_checkpoint`` (:func:`compendium.standin.diffusion_unet`, with the
    channel widths :data:`PAPER_SHAPE_UNET_WIDTHS`), the paper's CNN at 3×256×256 as the one attacked network,
    :data:`PAPER_SHAPE_OVERRIDES`' counts, and checkpoints in an emptied ``folder/checkpoints``.  Nothing is
    downloaded; the numbers mean nothing."""
    folder = Path(folder)
    images = standin.celeba_hq(folder / "celeba-hq", n=1, side=PAPER_IMAGE[1])
    unet = standin.diffusion_unet(folder / "unet", sample_size=PAPER_IMAGE[1], channels=PAPER_IMAGE[0],
                                  widths=PAPER_SHAPE_UNET_WIDTHS)
    checkpoints = folder / "checkpoints"  # saved and read back, never found from an earlier run
    shutil.rmtree(checkpoints, ignore_errors=True)
    return {"scale": "paper", "targets": 1, "celeba_dir": str(images), "prior_checkpoint": str(unet),
            "overrides": {**PAPER_SHAPE_OVERRIDES, "checkpoint_dir": str(checkpoints)}}

