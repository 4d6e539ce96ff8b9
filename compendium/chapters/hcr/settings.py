"""The HCR chapter's settings at each scale (:data:`SCALES`, :class:`Settings`), its plans (:func:`host_ram_bytes`,
:func:`checkpoint_bytes`, :func:`paper_shape`) and the paper's numbers it compares with (the ``PAPER_*`` constants,
from Chaudhuri et al. 2024 and the authors' code, github.com/facebookresearch/hcrbounds)."""
from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import torch

from compendium import models, standin, validation
from compendium.chapters.base import Settings as _Settings
from compendium.chapters.base import resolve

#: The modes of the paper's histograms of per-mode bounds, in normalised units (the normalised pixels' standard
#: deviation, Sec. 3.1-3.2), read off Figure 1 (MNIST, over its 10,000 test images) and Figure 3 (CIFAR-10, 2,500
#: test images): for each size ``1/s`` (Figure 1: 200 and 1000; Figure 3: 500 and 1000) the mode over all DCT modes
#: ("unfiltered") and over the lowest 8x8 ("filtered").
PAPER_FIGURE_MODES = {"MNIST": {200.0: {"unfiltered": 0.16, "filtered": 0.42},
                                1000.0: {"unfiltered": 0.20, "filtered": 0.47}},
                      "CIFAR-10": {500.0: {"unfiltered": 0.08, "filtered": 0.09},
                                   1000.0: {"unfiltered": 0.065, "filtered": 0.08}}}
#: Training images of the paper's MNIST MLP (Sec. 3.1: "all 60,000 examples from the training set").
PAPER_MNIST_TRAIN = 60_000
#: Draws R of Algorithm 1 per example (Sec. 3: "HCR bounds maximized over 25 independent and identically
#: distributed pseudorandom realizations").
PAPER_RESTARTS = 25
#: Repetitions i of LSQR in Algorithm 1 (Sec. 2.2: "Repeating this process several (say, i = 10) times"; the
#: MNIST runs of Figure 1).
PAPER_REPETITIONS = 10
#: Fewest bounded images for a histogram mode to be reported (with its bootstrap standard error over the images).
MIN_MODE_IMAGES = 16
#: Standard errors of the mean paired difference beyond which the chapter calls one set of per-image median bounds
#: larger than another (Figures 1 and 3: the images are few, and a median over the modes of one image varies).
SIGNIFICANT_SE = 2.0
#: Accuracy in percent without and with dithering: Sec. 3.1 (MNIST), 3.2 (CIFAR-10), 3.3.1 (ResNet-18), 3.3.2 (Swin-T).
PAPER_ACCURACY = {"MNIST": (97.9, 95.1), "CIFAR-10": (70.0, 50.0), "ResNet-18": (57.0, 54.0), "Swin-T": (64.0, 54.0)}
#: kappa of the authors' code (the paper states no noise level): MNIST, CIFAR-10, ResNet-18, Swin-T.
PAPER_KAPPA = {"MNIST": 1.0, "CIFAR-10": 5.0, "ResNet-18": 2.0, "Swin-T": 3.0}
#: The MNIST mean that Sec. 3.1 prints ("subtract the overall mean 0.1037"); the data's mean, and the code's, is
#: ``models.MNIST_NORMALIZATION[0]``.
PAPER_PRINTED_MNIST_MEAN = 0.1037


#: The perturbation sizes ``1/s`` of the paper's figures: the main run and the smaller size (Sec. 3.1-3.3).
PAPER_DIFFDIVS = {"MNIST": (200.0, 1000.0), "CIFAR-10": (500.0, 1000.0), "ImageNet": (500.0, 1000.0)}
#: Figures 5 and 6 show "next to no protection" when the median per-mode bound is below this many normalised units:
#: a tenth of the normalised pixels' standard deviation (about 1, Sec. 3.3), an error the paper calls
#: "perceptually indistinguishable".
NO_PROTECTION = 0.1

#: The pretrained ImageNet models of Sec. 3.3, keyed as :func:`models.imagenet_split_model` names them.
IMAGENET_MODELS = {"resnet18": "ResNet-18", "swin_t": "Swin-T"}

CIFAR_CLASSES = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]


def paper_numbers() -> dict[str, float]:
    """The paper's values that the chapter's prose quotes, keyed for ``glue``: ``hcr_paper_acc_<net>_{clean,dithered}``
    (their difference ``hcr_paper_drop_<net>``, in points) and ``hcr_paper_kappa_<net>`` (``net``: ``mnist``,
    ``cifar10``, ``resnet18``, ``swint``), the printed MNIST mean ``hcr_paper_printed_mnist_mean``, the true one
    ``hcr_mnist_mean``, the paper's MNIST training images ``hcr_paper_mnist_train``, its draws per example
    ``hcr_paper_restarts`` and its repetitions of LSQR ``hcr_paper_repetitions``."""
    numbers = {"hcr_paper_printed_mnist_mean": PAPER_PRINTED_MNIST_MEAN,
               "hcr_mnist_mean": models.MNIST_NORMALIZATION[0], "hcr_paper_mnist_train": PAPER_MNIST_TRAIN,
               "hcr_paper_restarts": PAPER_RESTARTS, "hcr_paper_repetitions": PAPER_REPETITIONS}
    for name, (clean, dithered) in PAPER_ACCURACY.items():
        key = name.lower().replace("-", "")
        numbers |= {f"hcr_paper_acc_{key}_clean": clean, f"hcr_paper_acc_{key}_dithered": dithered,
                    f"hcr_paper_drop_{key}": clean - dithered, f"hcr_paper_kappa_{key}": PAPER_KAPPA[name]}
    return {key: float(value) for key, value in numbers.items()}


#: The grayscale task's data sets (:class:`Settings`' ``gray_data``) and their names in tables and findings.
GRAY_DATA = {"digits": "digits", "mnist_digits": "MNIST", "mnist": "MNIST"}


@dataclass(frozen=True)
class Settings(_Settings):
    """Settings of the HCR chapter.  Two tasks, each a classifier trained here whose features are dithered:

    * the grayscale task (the paper's MNIST MLP, hidden width ``gray_hidden``): ``gray_data`` is ``"digits"``
      (scikit-learn's bundled 8x8 digits), ``"mnist_digits"`` (10,000 real 28x28 MNIST digits shipped with the
      package, :func:`compendium.data.mnist_digits`: 8,000 to train, 2,000 to test) or ``"mnist"`` (all of MNIST,
      downloaded into ``data_dir``);
    * the grayscale CNN (not in the paper): the colour task's CNN (``colour_widths``, ``colour_hidden``) trained on
      the grayscale data for ``gray_epochs``, dithered at ``gray_cnn_kappa``, ``gray_cnn_examples`` bounded images;
    * the colour task (the paper's CIFAR-10 CNN): ``colour_data`` is ``"photos"`` (7 classes of crops of the bundled
      photographs, ``colour_per_class`` training crops per class at ``colour_resolution`` pixels, CNN widths
      ``colour_widths`` and ``colour_hidden``) or ``"cifar10"`` (downloaded; the paper's widths).

    ``*_epochs`` training epochs; ``*_kappa`` the noise level in units of the RMS feature (the paper: 1 MNIST,
    5 CIFAR-10); ``*_examples`` test examples given an HCR bound; ``num_restarts`` the draws ``R``;
    ``power_iterations`` the numbers ``i`` of LSQR repetitions compared (the last is the main run), run with the
    fixed-tolerance runs on the first ``sweep_examples`` bounded images of each task (``None``: all of them);
    ``*_diffdivs`` the inverse perturbation sizes ``1/s`` (the first is the main run, the second the paper's
    ``--limit`` run); ``*_low_freq`` the side ``L`` of the low-frequency block; ``inversion_steps`` and
    ``decoder_epochs`` size the two attacks; ``imagenet_dir`` (paper scale only, optional) a folder of ImageNet
    validation images for the pretrained ResNet-18 / Swin-T runs, with ``imagenet_examples`` images.
    ``rank_images`` evaluated images per task get a full Jacobian and its SVD (0 skips the null-space section: the
    paper CNN's 3,072 x 3,072 float64 Jacobian takes CPU-minutes); ``releases`` ``K`` dithered releases of each
    of the ``attack_images`` attacked images.  ``lsqr_iter_lim`` caps every LSQR solve (``None``: scipy's ``2 x``
    columns, as the authors' code).  ``gray_min_accuracy`` and ``max_dithering_cost`` (fractions) are the
    thresholds of the in-shape check of the paper's MNIST accuracy (Sec. 3.1): the grayscale MLP trains to at least
    the first, and dithering costs it at most the second.  ``checkpoint_dir`` (``None``: off; ``paper`` scale:
    ``data/checkpoints/hcr``, in the repository unless absolute) is where a long run saves its work as it goes, so
    that a lost session resumes where it stopped with the same results: each classifier's training
    (:func:`~compendium.chapters.hcr.experiments.train_tasks`) and each finished chunk of images of every HCR run
    (:func:`~compendium.chapters.hcr.experiments.run_hcr`, :func:`~compendium.chapters.hcr.experiments.
    imagenet_bounds`), each file named by a digest of what determines it.
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
    lsqr_iter_lim: int | None
    rank_images: int
    releases: int
    attack_images: int
    sweep_examples: int | None
    gray_min_accuracy: float
    max_dithering_cost: float
    checkpoint_dir: str | None

    def validate(self) -> None:
        validation.choice("gray_data", self.gray_data, GRAY_DATA)
        validation.choice("colour_data", self.colour_data, ("photos", "cifar10"))
        for name in ("gray_hidden", "gray_epochs", "colour_per_class", "colour_hidden", "colour_epochs",
                     "num_restarts", "inversion_steps", "decoder_epochs", "imagenet_examples", "releases",
                     "attack_images"):
            validation.integer(name, getattr(self, name))
        validation.integer("rank_images", self.rank_images, minimum=0, what="images per task (0: skip the ranks)")
        if self.sweep_examples is not None:
            validation.integer("sweep_examples", self.sweep_examples, what="images of the sweeps (None: all)")
        for name in ("gray_examples", "gray_cnn_examples", "colour_examples"):
            validation.integer(name, getattr(self, name), minimum=2)
        validation.integer("colour_resolution", self.colour_resolution, minimum=8)
        for name in ("gray_kappa", "gray_cnn_kappa", "colour_kappa"):
            validation.positive(name, getattr(self, name), what="noise level in RMS-feature units")
        if self.lsqr_iter_lim is not None:
            validation.integer("lsqr_iter_lim", self.lsqr_iter_lim, what="LSQR iterations per solve")
        for name in ("gray_min_accuracy", "max_dithering_cost"):
            validation.number(name, getattr(self, name), above=0.0, below=1.0, what="a fraction of the test set")
        if self.checkpoint_dir is not None and not (isinstance(self.checkpoint_dir, str) and self.checkpoint_dir):
            raise ValueError(f"checkpoint_dir={self.checkpoint_dir!r}; allowed: None (no checkpoints) or a folder")
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
        gray_side, colour_side = _sides(self)
        for name, low, side in (("gray_low_freq", self.gray_low_freq, gray_side),
                                ("colour_low_freq", self.colour_low_freq, colour_side)):
            validation.integer(name, low)
            if low > side:
                raise ValueError(f"{name}={low}; allowed: at most the image side {side}")

    def sweep_images(self, examples: int) -> int:
        """The images of a task with ``examples`` bounded images that the sweep over ``i`` and the fixed-tolerance
        runs bound: the first ``sweep_examples`` (all when ``None``)."""
        return examples if self.sweep_examples is None else min(examples, self.sweep_examples)

SCALES = {
    "ci": dict(gray_data="digits", gray_hidden=64, gray_epochs=8, gray_kappa=0.5, gray_diffdivs=(200.0, 1000.0),
               gray_low_freq=4, gray_cnn_kappa=0.25, colour_data="photos", colour_resolution=16, colour_per_class=40,
               colour_widths=(8, 32, 64), colour_hidden=64, colour_epochs=20, colour_kappa=0.25,
               colour_diffdivs=(500.0, 1000.0), colour_low_freq=8, gray_examples=4, gray_cnn_examples=2,
               colour_examples=2, num_restarts=2, power_iterations=(1, 2), inversion_steps=200, decoder_epochs=10,
               data_dir="data", imagenet_dir=None, imagenet_examples=16, lsqr_iter_lim=None,
               rank_images=32, releases=6, attack_images=4, sweep_examples=4, gray_min_accuracy=0.8,
               max_dithering_cost=0.08, checkpoint_dir=None),
    "book": dict(gray_data="mnist_digits", gray_hidden=784, gray_epochs=6, gray_kappa=1.0,
                 gray_diffdivs=(200.0, 1000.0), gray_low_freq=8, gray_cnn_kappa=0.25, colour_data="photos",
                 colour_resolution=16, colour_per_class=200, colour_widths=(8, 32, 64), colour_hidden=64,
                 colour_epochs=20, colour_kappa=0.25, colour_diffdivs=(500.0, 1000.0), colour_low_freq=8,
                 gray_examples=24, gray_cnn_examples=3, colour_examples=6, num_restarts=10,
                 power_iterations=(1, 4, 10), inversion_steps=1000, decoder_epochs=10, data_dir="data",
                 imagenet_dir=None, imagenet_examples=16, lsqr_iter_lim=None, rank_images=8, releases=6,
                 attack_images=6, sweep_examples=8, gray_min_accuracy=0.9, max_dithering_cost=0.05,
                 checkpoint_dir=None),
    "paper": dict(gray_data="mnist", gray_hidden=784, gray_epochs=6, gray_kappa=1.0, gray_diffdivs=(200.0, 1000.0),
                  gray_low_freq=8, gray_cnn_kappa=1.0, colour_data="cifar10", colour_resolution=32,
                  colour_per_class=5000, colour_widths=(32, 1024, 3072), colour_hidden=3072, colour_epochs=7,
                  colour_kappa=5.0, colour_diffdivs=(500.0, 1000.0), colour_low_freq=8, gray_examples=10_000,
                  gray_cnn_examples=100, colour_examples=2_500, num_restarts=PAPER_RESTARTS,
                  power_iterations=(1, PAPER_REPETITIONS), inversion_steps=3000, decoder_epochs=20, data_dir="data",
                  imagenet_dir=None, imagenet_examples=128, lsqr_iter_lim=None, rank_images=32, releases=25,
                  attack_images=20, sweep_examples=None, gray_min_accuracy=0.95, max_dithering_cost=0.05,
                  checkpoint_dir="data/checkpoints/hcr"),
}


def settings(scale: str = "book", device: str = "auto", seed: int = 0, **overrides) -> Settings:
    """The chapter's settings: the scale's values, replaced by every override that is not ``None``."""
    return resolve(Settings, SCALES, scale, device, seed, overrides)


def _sides(cfg: Settings) -> tuple[int, int]:
    """The image side of the grayscale and of the colour task's data."""
    return (8 if cfg.gray_data == "digits" else 28), (cfg.colour_resolution if cfg.colour_data == "photos" else 32)


def host_ram_bytes(cfg: Settings) -> int:
    """An estimate of the chapter's peak host memory in bytes at ``cfg``, for planning a run (counted as if every
    tensor sat on the host, as on a CPU): the data three times (loaded, normalised, on the device) in float32; the
    classifiers and their float64 copies; the kept results of every HCR run (:func:`run_bounds`; per run and image
    ``bound_dct``, ``bound_pixel`` and the first draw's ``eps`` and per-DCT-mode bound, ``p`` float64 values each,
    its ``z_eps``, ``n`` values, and ``R`` values of ``chi2``, ``ratio`` and mismatch); the largest transient of one
    run (its ``(R, B, n)`` block of noise draws and a chunk's ``R x 128`` examples' LSQR vectors, four of ``p`` and
    two of ``n`` values, and their host copies), and the Jacobians of :func:`jacobian_ranks` (4 images' ``n x p``
    and ``p x p`` factors)."""
    nets, p, n, examples, kept = _sizes(cfg)
    gray_side, colour_side = _sides(cfg)
    images = {"digits": 1797, "mnist_digits": 10_000, "mnist": 70_000}[cfg.gray_data] * p["gray"] + (
        8 * (cfg.colour_per_class + max(cfg.colour_examples // 7 + 1, 10)) if cfg.colour_data == "photos"
        else 60_000) * p["colour"]
    data_bytes = 3 * 4 * images
    model_bytes = sum(12 * sum(w.numel() for w in net.parameters()) for net in nets.values())
    R, f64 = cfg.num_restarts, 8
    transient = max(f64 * R * (examples[key] * n[key] + 2 * min(examples[key], 128) * (4 * p[key] + 2 * n[key]))
                    for key in nets)
    jacobians = max(f64 * min(cfg.rank_images, examples[key], 4) * (n[key] * p[key] + 2 * p[key] ** 2)
                    for key in nets)
    return int(data_bytes + model_bytes + kept + transient + jacobians)


def checkpoint_bytes(cfg: Settings) -> int:
    """The bytes the chapter's checkpoints take under ``cfg.checkpoint_dir`` at the end of a run (0 when it is
    ``None``), for planning a run's disk: the three classifiers' finished training files (float32 weights; while one
    trains, its file also holds AdamW's two moments), and every HCR run's kept results (:func:`host_ram_bytes`' kept
    results, saved chunk by chunk).  ImageNet's runs are not counted (a few ``(B, p)`` arrays of their images)."""
    if cfg.checkpoint_dir is None:
        return 0
    nets, *_, kept = _sizes(cfg)
    weights = [4 * sum(w.numel() for w in net.parameters()) for net in nets.values()]
    return int(sum(weights) + 2 * max(weights) + kept)


def _sizes(cfg: Settings) -> tuple[dict, dict, dict, dict, int]:
    """The three tasks' networks (on the meta device), and per task the pixels ``p``, features ``n`` and bounded
    images, and the bytes every HCR run keeps (:func:`run_bounds`; per run and image ``bound_dct``, ``bound_pixel``
    and the first draw's ``eps`` and per-DCT-mode bound, ``p`` float64 values each, its ``z_eps``, ``n`` values, and
    ``R`` values of ``chi2``, ``ratio`` and mismatch)."""
    gray_side, colour_side = _sides(cfg)
    p = {"gray": gray_side ** 2, "gray_cnn": gray_side ** 2, "colour": 3 * colour_side ** 2}
    with torch.device("meta"):
        nets = {"gray": models.MnistMLP(1, gray_side, 10, hidden=cfg.gray_hidden),
                "gray_cnn": models.CifarCNN(1, gray_side, 10, widths=cfg.colour_widths, hidden=cfg.colour_hidden),
                "colour": models.CifarCNN(3, colour_side, 10, widths=cfg.colour_widths, hidden=cfg.colour_hidden)}
    n = {key: net.feature_dim for key, net in nets.items()}
    examples = {"gray": cfg.gray_examples, "gray_cnn": cfg.gray_cnn_examples, "colour": cfg.colour_examples}
    R, f64 = cfg.num_restarts, 8
    sweep = {key: cfg.sweep_images(examples[key]) * (sum(i < max(cfg.power_iterations)
                                                               for i in cfg.power_iterations) + 2 * (key == "gray"))
             for key in nets}  # the bounded images of every run
    kept = sum((2 * examples[key] + sweep[key]) * (f64 * (4 * p[key] + n[key]) + 3 * f64 * R) for key in nets)
    return nets, p, n, examples, kept


def paper_shape(folder) -> dict:
    """The paper pipeline at the paper's shapes, cut to seconds (:func:`compendium.book.execute_paper_shape`): writes
    MNIST (28×28, 20 training and 4 test digits) and CIFAR-10 (32×32×3, 20 training and 4 test images) stand-ins into
    ``folder`` (:mod:`compendium.standin`) and returns the notebook's parameters: ``scale="paper"`` (the paper's MLP
    784 → 784 → 784 and CNN with widths 32, 1024, 3072 and 3,072 hidden units, its sizes ``s`` and noise levels),
    with 2 images per task (too few for a histogram mode), 1 restart, 1 epoch, one repetition ``i``, LSQR capped at
    2 iterations, no full Jacobians (``rank_images=0``: the CNN's 3,072 x 3,072 float64 Jacobian alone takes over
    ten CPU-minutes; :func:`hcr.jacobian_rank` is tested on its own), 1 release of 2 attacked images, 1 inversion
    step, 1 decoder epoch and no ImageNet; the checkpoints go to an emptied ``folder/checkpoints`` (written and
    never found from an earlier run)."""
    folder = Path(folder)
    standin.mnist(folder / "mnist", train=20, test=4, seed=0)
    standin.cifar10(folder / "cifar10", per_batch=4, test=4, seed=1)
    checkpoints = folder / "checkpoints"
    shutil.rmtree(checkpoints, ignore_errors=True)
    return dict(scale="paper", data_dir=str(folder), gray_examples=2, gray_cnn_examples=2, colour_examples=2,
                num_restarts=1, gray_epochs=1, colour_epochs=1, power_iterations=[1], lsqr_iter_lim=2,
                rank_images=0, releases=1, attack_images=2, sweep_examples=2, inversion_steps=1, decoder_epochs=1,
                imagenet_dir=None, checkpoint_dir=str(checkpoints))
