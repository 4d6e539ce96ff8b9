"""Named scales (``ci``, ``book``, ``paper``) and the chapter registry.

Every chapter notebook has a ``parameters`` cell with ``scale``, ``device`` and ``seed`` plus chapter knobs that
default to ``None`` ("take it from the scale").  :func:`resolve` turns the scale name and those knobs into one
validated, frozen configuration, raising :class:`ValueError` before any computation when a name or value is wrong.

* ``ci``    seconds per notebook on 2 CPU cores; used by the tests.
* ``book``  the default and what the rendered book shows; minutes on a CPU.
* ``paper`` the paper's own settings for a GPU user; may need downloaded data (the chapter says which).
"""
from __future__ import annotations

from dataclasses import dataclass, fields, replace
from pathlib import Path

import torch

SCALES = ("ci", "book", "paper")


@dataclass(frozen=True)
class Chapter:
    """A chapter of the book: its key (used on the command line), notebook and title."""

    key: str
    notebook: str  # path relative to the repository root
    title: str


CHAPTERS: dict[str, Chapter] = {
    c.key: c
    for c in (
        Chapter(
            "ziller2024",
            "notebooks/ziller2024.ipynb",
            "Bounding reconstruction attack success of adversaries without data priors",
        ),
        Chapter("mean_to_extreme", "notebooks/mean_to_extreme.ipynb",
                "From mean to extreme: formal DP bounds on the success of real-world reconstruction attacks"),
        Chapter("hcr", "notebooks/hcr.ipynb",
                "Guarantees of confidentiality via Hammersley-Chapman-Robbins bounds"),
        Chapter("calculator", "notebooks/calculator.ipynb", "The reconstruction-risk calculator"),
    )
}


def chapter(key: str) -> Chapter:
    """The registered chapter called ``key``; a clear error lists the valid keys otherwise."""
    if key not in CHAPTERS:
        raise ValueError(f"chapter={key!r} is unknown; valid chapters: {', '.join(CHAPTERS)}")
    return CHAPTERS[key]


def check_scale(scale: str) -> str:
    if scale not in SCALES:
        raise ValueError(f"scale={scale!r} is unknown; valid scales: {', '.join(SCALES)}")
    return scale


def resolve_device(device: str = "auto") -> torch.device:
    """``"auto"`` means CUDA when available, else CPU; anything else must name a usable torch device."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except RuntimeError as err:
        raise ValueError(f"device={device!r} is not a torch device (use 'auto', 'cpu' or 'cuda[:k]')") from err
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device={device!r} was asked for but CUDA is not available here; use 'auto' or 'cpu'")
    return dev


# ---------------------------------------------------------------------------------------------------------------
# Ziller et al. 2024
# ---------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ZillerScale:
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

    scale: str
    device: str
    seed: int
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

    def __post_init__(self) -> None:
        check_scale(self.scale)
        # Standard errors of per-cell means need a handful of images (t with n - 1 degrees of freedom).
        _positive_int("n_images", self.n_images, minimum=10)
        _positive_int("resolution", self.resolution, minimum=8)
        _positive_int("fig3_draws", self.fig3_draws)
        # Below this the checks cannot resolve the O(1/N) effects they assert (e.g. the 3 % excess over bound (8)).
        _positive_int("n_mc", self.n_mc, minimum=50_000)
        _positive_int("n_opacus", self.n_opacus, minimum=50)
        _positive_grid("sigmas", self.sigmas, "noise multipliers")
        _positive_grid("clip_norms", self.clip_norms, "maximum gradient norms")
        if len(self.fig3_resolutions) != 3 or any(r < 4 for r in self.fig3_resolutions):
            raise ValueError(f"fig3_resolutions must be three sizes >= 4 px; got {self.fig3_resolutions!r}")
        _image_source(self.image_source, self.imagenet_dir)


ZILLER_SCALES = {
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


def ziller(scale: str = "book", device: str = "auto", seed: int = 0, **overrides) -> ZillerScale:
    """Resolve the Ziller et al. chapter's settings: the scale's values, replaced by every override not ``None``."""
    return _resolve(ZillerScale, ZILLER_SCALES, scale, device, seed, overrides)


# ---------------------------------------------------------------------------------------------------------------
# From Mean to Extreme
# ---------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class MeanToExtremeScale:
    """Settings of the "From Mean to Extreme" chapter.

    ``n_images`` images of ``resolution`` pixels for Figures 4 and 5 (``fig4_sigmas`` the noise multipliers of
    Figure 4); ``fig1_resolution`` the side of the images of Figures 1 and 6; ``n_mc`` the Monte-Carlo sample size of
    the distributional checks; ``n_opacus`` the number of reconstructions drawn through opacus for the goodness-of-fit
    tests of the real attack; ``image_source``, ``imagenet_dir`` and ``use_lpips`` as for :class:`ZillerScale`
    (the perceptual metric here is LPIPS-VGG, as in the paper).
    """

    scale: str
    device: str
    seed: int
    n_images: int
    resolution: int
    fig1_resolution: int
    fig4_sigmas: tuple[float, ...]
    n_mc: int
    n_opacus: int
    image_source: str
    imagenet_dir: str | None
    use_lpips: bool

    def __post_init__(self) -> None:
        check_scale(self.scale)
        _positive_int("n_images", self.n_images, minimum=5)
        _positive_int("resolution", self.resolution, minimum=8)
        _positive_int("fig1_resolution", self.fig1_resolution, minimum=8)
        _positive_grid("fig4_sigmas", self.fig4_sigmas, "noise multipliers")
        _positive_int("n_mc", self.n_mc, minimum=10_000)
        _positive_int("n_opacus", self.n_opacus, minimum=200)
        _image_source(self.image_source, self.imagenet_dir)


MEAN_TO_EXTREME_SCALES = {
    "ci": dict(n_images=6, resolution=16, fig1_resolution=32, fig4_sigmas=(1e-4, 1e-3, 1e-2, 1e-1), n_mc=20_000,
               n_opacus=300, image_source="photos", imagenet_dir=None, use_lpips=False),
    "book": dict(n_images=20, resolution=64, fig1_resolution=64,
                 fig4_sigmas=tuple(float(s) for s in torch.logspace(-4, -1, 13)), n_mc=200_000, n_opacus=2000,
                 image_source="photos", imagenet_dir=None, use_lpips=True),
    "paper": dict(n_images=100, resolution=224, fig1_resolution=224,
                  fig4_sigmas=tuple(float(s) for s in torch.logspace(-4, -1, 50)), n_mc=1_000_000, n_opacus=2000,
                  image_source="imagenet", imagenet_dir="data/imagenet-val", use_lpips=True),
}


def mean_to_extreme(scale: str = "book", device: str = "auto", seed: int = 0, **overrides) -> MeanToExtremeScale:
    """Resolve the "From Mean to Extreme" chapter's settings (the scale's values, replaced by overrides not ``None``)."""
    return _resolve(MeanToExtremeScale, MEAN_TO_EXTREME_SCALES, scale, device, seed, overrides)


# ---------------------------------------------------------------------------------------------------------------
# Chaudhuri et al. 2024 (HCR bounds)
# ---------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class HCRScale:
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

    scale: str
    device: str
    seed: int
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

    def __post_init__(self) -> None:
        check_scale(self.scale)
        if self.gray_data not in ("digits", "mnist"):
            raise ValueError(f"gray_data={self.gray_data!r}; allowed: 'digits', 'mnist'")
        if self.colour_data not in ("photos", "cifar10"):
            raise ValueError(f"colour_data={self.colour_data!r}; allowed: 'photos', 'cifar10'")
        for name in ("gray_hidden", "gray_epochs", "colour_per_class", "colour_hidden", "colour_epochs",
                     "num_restarts", "inversion_steps", "decoder_epochs", "imagenet_examples"):
            _positive_int(name, getattr(self, name))
        _positive_int("gray_examples", self.gray_examples, minimum=2)
        _positive_int("gray_cnn_examples", self.gray_cnn_examples, minimum=2)
        _positive_int("colour_examples", self.colour_examples, minimum=2)
        _positive_int("colour_resolution", self.colour_resolution, minimum=8)
        for name in ("gray_kappa", "gray_cnn_kappa", "colour_kappa"):
            if not (isinstance(getattr(self, name), (int, float)) and 0 < getattr(self, name) < float("inf")):
                raise ValueError(f"{name} must be a finite number > 0 (noise level in RMS-feature units); "
                                 f"got {getattr(self, name)!r}")
        _positive_grid("gray_diffdivs", self.gray_diffdivs, "inverse perturbation sizes 1/s")
        _positive_grid("colour_diffdivs", self.colour_diffdivs, "inverse perturbation sizes 1/s")
        if not isinstance(self.power_iterations, tuple) or not self.power_iterations:
            raise ValueError(f"power_iterations must be a non-empty list of integers >= 1; got "
                             f"{self.power_iterations!r}")
        for i in self.power_iterations:
            _positive_int("power_iterations", i)
        if len(self.colour_widths) != 3:
            raise ValueError(f"colour_widths must be three integers >= 1; got {self.colour_widths!r}")
        for w in self.colour_widths:
            _positive_int("colour_widths", w)
        gray_side = 8 if self.gray_data == "digits" else 28
        colour_side = self.colour_resolution if self.colour_data == "photos" else 32
        for name, low, side in (("gray_low_freq", self.gray_low_freq, gray_side),
                                ("colour_low_freq", self.colour_low_freq, colour_side)):
            _positive_int(name, low)
            if low > side:
                raise ValueError(f"{name}={low} exceeds the image side {side}")


HCR_SCALES = {
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


def hcr(scale: str = "book", device: str = "auto", seed: int = 0, **overrides) -> HCRScale:
    """Resolve the HCR chapter's settings (the scale's values, replaced by every override not ``None``)."""
    return _resolve(HCRScale, HCR_SCALES, scale, device, seed, overrides)


def _resolve(config, table: dict, scale: str, device: str, seed: int, overrides: dict):
    check_scale(scale)
    resolve_device(device)
    known = {f.name for f in fields(config)}
    unknown = set(overrides) - known
    if unknown:
        raise ValueError(f"unknown parameter(s) {sorted(unknown)}; valid: {sorted(known - {'scale', 'device', 'seed'})}")
    base = config(scale=scale, device=device, seed=int(seed), **table[scale])
    return replace(base, **{k: _as_tuple(v) for k, v in overrides.items() if v is not None})


def _positive_grid(name: str, grid, what: str) -> None:
    if not isinstance(grid, tuple) or not grid:
        raise ValueError(f"{name} must be a non-empty list or tuple of numbers; got {grid!r}")
    for value in grid:
        if not value > 0:
            raise ValueError(f"{name} must be > 0 ({what}); got {value!r}")


def _image_source(source: str, folder: str | None) -> None:
    if source not in ("photos", "imagenet"):
        raise ValueError(f"image_source={source!r}; allowed: 'photos', 'imagenet'")
    if source == "imagenet" and folder is None:
        raise ValueError("image_source='imagenet' needs imagenet_dir (a folder of ImageNet validation JPEGs)")


def _as_tuple(value):
    """Lists and arrays given as overrides (e.g. by papermill) become tuples of Python numbers, so configs stay hashable."""
    if isinstance(value, (list, tuple)) or hasattr(value, "tolist"):
        items = value.tolist() if hasattr(value, "tolist") else value
        return tuple(items) if isinstance(items, list) else items
    return value


def _positive_int(name: str, value, minimum: int = 1) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value!r}")


def repository_root() -> Path:
    """The repository root (the folder holding ``_config.yml``), for the build pipeline."""
    return Path(__file__).resolve().parent.parent
