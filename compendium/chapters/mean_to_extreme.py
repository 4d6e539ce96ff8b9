"""The "From Mean to Extreme" chapter: its settings at each scale and the pipelines its notebook calls."""
from __future__ import annotations

from dataclasses import dataclass

import torch

from compendium import validation
from compendium.chapters.base import Settings as _Settings
from compendium.chapters.base import check_image_source, resolve

TITLE = "From mean to extreme: formal DP bounds on the success of real-world reconstruction attacks"

SCALES = {
    "ci": dict(n_images=6, resolution=16, fig1_resolution=32, fig4_sigmas=(1e-4, 1e-3, 1e-2, 1e-1), n_mc=20_000,
               n_opacus=300, image_source="photos", imagenet_dir=None, use_lpips=False),
    "book": dict(n_images=20, resolution=64, fig1_resolution=64,
                 fig4_sigmas=tuple(float(s) for s in torch.logspace(-4, -1, 13)), n_mc=200_000, n_opacus=2000,
                 image_source="photos", imagenet_dir=None, use_lpips=True),
    "paper": dict(n_images=100, resolution=224, fig1_resolution=224,
                  fig4_sigmas=tuple(float(s) for s in torch.logspace(-4, -1, 50)), n_mc=1_000_000, n_opacus=2000,
                  image_source="imagenet", imagenet_dir="data/imagenet-val", use_lpips=True),
}


@dataclass(frozen=True)
class Settings(_Settings):
    """Settings of the "From Mean to Extreme" chapter.

    ``n_images`` images of ``resolution`` pixels for Figures 4 and 5 (``fig4_sigmas`` the noise multipliers of
    Figure 4); ``fig1_resolution`` the side of the images of Figures 1 and 6; ``n_mc`` the Monte-Carlo sample size of
    the distributional checks; ``n_opacus`` the number of reconstructions drawn through opacus for the goodness-of-fit
    tests of the real attack; ``image_source``, ``imagenet_dir`` and ``use_lpips`` as in the Ziller chapter's
    settings (the perceptual metric here is LPIPS-VGG, as in the paper).
    """

    n_images: int
    resolution: int
    fig1_resolution: int
    fig4_sigmas: tuple[float, ...]
    n_mc: int
    n_opacus: int
    image_source: str
    imagenet_dir: str | None
    use_lpips: bool

    def validate(self) -> None:
        validation.integer("n_images", self.n_images, minimum=5)
        validation.integer("resolution", self.resolution, minimum=8)
        validation.integer("fig1_resolution", self.fig1_resolution, minimum=8)
        validation.grid("fig4_sigmas", self.fig4_sigmas, what="noise multipliers")
        validation.integer("n_mc", self.n_mc, minimum=10_000)
        validation.integer("n_opacus", self.n_opacus, minimum=200)
        check_image_source(self.image_source, self.imagenet_dir)


def settings(scale: str = "book", device: str = "auto", seed: int = 0, **overrides) -> Settings:
    """The chapter's settings: the scale's values, replaced by every override that is not ``None``."""
    return resolve(Settings, SCALES, scale, device, seed, overrides)
