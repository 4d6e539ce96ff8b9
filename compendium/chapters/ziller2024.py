"""The Ziller et al. (2024) chapter: its settings at each scale and the pipelines its notebook calls."""
from __future__ import annotations

from dataclasses import dataclass

import torch

from compendium import validation
from compendium.chapters.base import Settings as _Settings
from compendium.chapters.base import check_image_source, resolve

TITLE = "Bounding reconstruction attack success of adversaries without data priors"

SCALES = {
    "ci": dict(
        n_images=12, resolution=16, sigmas=(1e-3, 1e-2, 1e-1, 1.0), clip_norms=(0.1, 1.0, 10.0, 100.0),
        fig3_resolutions=(8, 16, 32), fig3_draws=8, n_mc=100_000, n_opacus=300, image_source="photos",
        imagenet_dir=None, use_lpips=False,
    ),
    "book": dict(
        n_images=100, resolution=32, sigmas=tuple(float(s) for s in torch.logspace(-3, 1, 9)),
        clip_norms=(0.1, 1.0, 10.0, 100.0, 1000.0), fig3_resolutions=(8, 32, 128), fig3_draws=50,
        n_mc=400_000, n_opacus=2000, image_source="photos", imagenet_dir=None, use_lpips=True,
    ),
    "paper": dict(
        n_images=100, resolution=224, sigmas=tuple(float(s) for s in torch.logspace(-4, 2, 25)),
        clip_norms=(1e-2, 1.0, 10.0, 1e2, 1e3, 1e4), fig3_resolutions=(32, 224, 1024), fig3_draws=50,
        n_mc=1_000_000, n_opacus=1000, image_source="imagenet", imagenet_dir="data/imagenet-val", use_lpips=True,
    ),
}


@dataclass(frozen=True)
class Settings(_Settings):
    """Settings of the Ziller et al. (2024) chapter.

    ``resolution`` and ``n_images`` define the Figure 1/4 data (``n_images`` RGB images, ``resolution`` pixels
    square); ``sigmas`` and ``clip_norms`` the grid of noise multipliers and maximum gradient norms;
    ``fig3_resolutions`` the three resolutions of the single image of Figure 3 and Figures 5-8, with
    ``fig3_draws`` noise draws per cell; ``n_mc`` the Monte-Carlo sample size of the distributional checks;
    ``n_opacus`` the number of privatised gradients drawn through opacus for the observation-model test;
    ``image_source`` is ``"photos"`` (scikit-image's bundled photographs) or ``"imagenet"`` (a folder the user
    supplies, see :func:`compendium.data.imagenet_folder`); ``use_lpips`` asks for the perceptual metric, which is
    used when the ``lpips`` extra and its downloaded weights are present and skipped, with the reason, otherwise.
    """

    n_images: int
    resolution: int
    sigmas: tuple[float, ...]
    clip_norms: tuple[float, ...]
    fig3_resolutions: tuple[int, int, int]
    fig3_draws: int
    n_mc: int
    n_opacus: int
    image_source: str
    imagenet_dir: str | None
    use_lpips: bool

    def validate(self) -> None:
        # Standard errors of per-cell means need a handful of images (t with n - 1 degrees of freedom).
        validation.integer("n_images", self.n_images, minimum=10)
        validation.integer("resolution", self.resolution, minimum=8)
        validation.integer("fig3_draws", self.fig3_draws)
        # Below this the checks cannot resolve the O(1/N) effects they assert (e.g. the 3 % excess over bound (8)).
        validation.integer("n_mc", self.n_mc, minimum=50_000)
        validation.integer("n_opacus", self.n_opacus, minimum=50)
        validation.grid("sigmas", self.sigmas, what="noise multipliers")
        validation.grid("clip_norms", self.clip_norms, what="maximum gradient norms")
        if not isinstance(self.fig3_resolutions, tuple) or len(self.fig3_resolutions) != 3:
            raise ValueError(f"fig3_resolutions={self.fig3_resolutions!r}; allowed: three sizes >= 4 px")
        for r in self.fig3_resolutions:
            validation.integer("fig3_resolutions", r, minimum=4, what="three sizes in px")
        check_image_source(self.image_source, self.imagenet_dir)


def settings(scale: str = "book", device: str = "auto", seed: int = 0, **overrides) -> Settings:
    """The chapter's settings: the scale's values, replaced by every override that is not ``None``."""
    return resolve(Settings, SCALES, scale, device, seed, overrides)
