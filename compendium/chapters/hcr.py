"""The HCR chapter (Chaudhuri et al. 2024): its settings at each scale and the pipelines its notebook calls."""
from __future__ import annotations

from dataclasses import dataclass

from compendium import validation
from compendium.chapters.base import Settings as _Settings
from compendium.chapters.base import resolve

TITLE = "Guarantees of confidentiality via Hammersley-Chapman-Robbins bounds"


@dataclass(frozen=True)
class Settings(_Settings):
    """Settings of the HCR chapter.  Two tasks, each a classifier trained here whose features are dithered:

    * the grayscale task (the paper's MNIST MLP): ``gray_data`` is ``"digits"`` (scikit-learn's bundled 8x8 digits,
      hidden width ``gray_hidden``) or ``"mnist"`` (downloaded into ``data_dir``; the paper's 784-wide MLP);
    * the grayscale CNN (not in the paper): the colour task's CNN (``colour_widths``, ``colour_hidden``) trained on
      the grayscale data for ``gray_epochs``, dithered at ``gray_cnn_kappa``, ``gray_cnn_examples`` bounded images;
    * the colour task (the paper's CIFAR-10 CNN): ``colour_data`` is ``"photos"`` (7 classes of crops of the bundled
      photographs, ``colour_per_class`` training crops per class at ``colour_resolution`` pixels, CNN widths
      ``colour_widths`` and ``colour_hidden``) or ``"cifar10"`` (downloaded; the paper's widths).

    ``*_epochs`` training epochs; ``*_kappa`` the noise level in units of the RMS feature (the paper: 1 MNIST,
    5 CIFAR-10); ``*_examples`` test examples given an HCR bound; ``num_restarts`` the draws ``R``;
    ``power_iterations`` the numbers ``i`` of LSQR repetitions compared (the last is the main run);
    ``*_diffdivs`` the inverse perturbation sizes ``1/s`` (the first is the main run, the second the paper's
    ``--limit`` run); ``*_low_freq`` the side ``L`` of the low-frequency block; ``inversion_steps`` and
    ``decoder_epochs`` size the two attacks; ``imagenet_dir`` (paper scale only, optional) a folder of ImageNet
    validation images for the pretrained ResNet-18 / Swin-T runs, with ``imagenet_examples`` images.
    """

    gray_data: str
    gray_hidden: int
    gray_epochs: int
    gray_kappa: float
    gray_diffdivs: tuple[float, ...]
    gray_low_freq: int
    gray_cnn_kappa: float
    colour_data: str
    colour_resolution: int
    colour_per_class: int
    colour_widths: tuple[int, int, int]
    colour_hidden: int
    colour_epochs: int
    colour_kappa: float
    colour_diffdivs: tuple[float, ...]
    colour_low_freq: int
    gray_examples: int
    gray_cnn_examples: int
    colour_examples: int
    num_restarts: int
    power_iterations: tuple[int, ...]
    inversion_steps: int
    decoder_epochs: int
    data_dir: str
    imagenet_dir: str | None
    imagenet_examples: int

    def validate(self) -> None:
        validation.choice("gray_data", self.gray_data, ("digits", "mnist"))
        validation.choice("colour_data", self.colour_data, ("photos", "cifar10"))
        for name in ("gray_hidden", "gray_epochs", "colour_per_class", "colour_hidden", "colour_epochs",
                     "num_restarts", "inversion_steps", "decoder_epochs", "imagenet_examples"):
            validation.integer(name, getattr(self, name))
        for name in ("gray_examples", "gray_cnn_examples", "colour_examples"):
            validation.integer(name, getattr(self, name), minimum=2)
        validation.integer("colour_resolution", self.colour_resolution, minimum=8)
        for name in ("gray_kappa", "gray_cnn_kappa", "colour_kappa"):
            validation.positive(name, getattr(self, name), what="noise level in RMS-feature units")
        validation.grid("gray_diffdivs", self.gray_diffdivs, what="inverse perturbation sizes 1/s")
        validation.grid("colour_diffdivs", self.colour_diffdivs, what="inverse perturbation sizes 1/s")
        if not isinstance(self.power_iterations, tuple) or not self.power_iterations:
            raise ValueError(f"power_iterations={self.power_iterations!r}; allowed: a non-empty list of integers >= 1")
        for i in self.power_iterations:
            validation.integer("power_iterations", i)
        if not isinstance(self.colour_widths, tuple) or len(self.colour_widths) != 3:
            raise ValueError(f"colour_widths={self.colour_widths!r}; allowed: three integers >= 1")
        for w in self.colour_widths:
            validation.integer("colour_widths", w)
        gray_side = 8 if self.gray_data == "digits" else 28
        colour_side = self.colour_resolution if self.colour_data == "photos" else 32
        for name, low, side in (("gray_low_freq", self.gray_low_freq, gray_side),
                                ("colour_low_freq", self.colour_low_freq, colour_side)):
            validation.integer(name, low)
            if low > side:
                raise ValueError(f"{name}={low}; allowed: at most the image side {side}")

SCALES = {
    "ci": dict(gray_data="digits", gray_hidden=64, gray_epochs=8, gray_kappa=0.5, gray_diffdivs=(200.0, 1000.0),
               gray_low_freq=4, gray_cnn_kappa=0.25, colour_data="photos", colour_resolution=16, colour_per_class=40,
               colour_widths=(8, 32, 64), colour_hidden=64, colour_epochs=20, colour_kappa=0.25,
               colour_diffdivs=(500.0, 1000.0), colour_low_freq=8, gray_examples=8, gray_cnn_examples=3,
               colour_examples=3, num_restarts=3, power_iterations=(1, 4), inversion_steps=200, decoder_epochs=10,
               data_dir="data", imagenet_dir=None, imagenet_examples=16),
    "book": dict(gray_data="digits", gray_hidden=64, gray_epochs=30, gray_kappa=0.5, gray_diffdivs=(200.0, 1000.0),
                 gray_low_freq=4, gray_cnn_kappa=0.25, colour_data="photos", colour_resolution=16,
                 colour_per_class=200, colour_widths=(8, 32, 64), colour_hidden=64, colour_epochs=20,
                 colour_kappa=0.25, colour_diffdivs=(500.0, 1000.0), colour_low_freq=8, gray_examples=100,
                 gray_cnn_examples=8, colour_examples=6, num_restarts=25, power_iterations=(1, 4, 10),
                 inversion_steps=1500, decoder_epochs=60, data_dir="data", imagenet_dir=None, imagenet_examples=16),
    "paper": dict(gray_data="mnist", gray_hidden=784, gray_epochs=6, gray_kappa=1.0, gray_diffdivs=(200.0, 1000.0),
                  gray_low_freq=8, gray_cnn_kappa=1.0, colour_data="cifar10", colour_resolution=32,
                  colour_per_class=5000, colour_widths=(32, 1024, 3072), colour_hidden=3072, colour_epochs=7,
                  colour_kappa=5.0, colour_diffdivs=(500.0, 1000.0), colour_low_freq=8, gray_examples=1000,
                  gray_cnn_examples=100, colour_examples=500, num_restarts=25, power_iterations=(1, 10),
                  inversion_steps=3000, decoder_epochs=20, data_dir="data", imagenet_dir=None,
                  imagenet_examples=128),
}


def settings(scale: str = "book", device: str = "auto", seed: int = 0, **overrides) -> Settings:
    """The chapter's settings: the scale's values, replaced by every override that is not ``None``."""
    return resolve(Settings, SCALES, scale, device, seed, overrides)
