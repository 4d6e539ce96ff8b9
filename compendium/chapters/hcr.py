"""The HCR chapter (Chaudhuri, Guo, van der Maaten, Mahloujifar and Tygert 2024, "Guarantees of confidentiality via
Hammersley-Chapman-Robbins bounds"): its settings at each scale and the pipelines its notebook calls.

Each pipeline computes one step of the chapter and returns a table (``pandas.DataFrame``) or a small dataclass; the
notebook shows the result and asserts the paper's claims on it.  Equation, section, algorithm and figure numbers are
the paper's; "the authors' code" is github.com/facebookresearch/hcrbounds.
"""
from __future__ import annotations

import copy

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.integrate
import torch
from torch import nn

from compendium import base, checks, data, metrics, models, plotting, standin, train, validation
from compendium.attacks import feature_inversion as inversion
from compendium.bounds import hcr
from compendium.chapters.base import Settings as _Settings
from compendium.chapters.base import resolve
from compendium.scorecard import DIFFERS, IN_SHAPE, REPRODUCED, Claim

TITLE = "Guarantees of confidentiality via Hammersley-Chapman-Robbins bounds"
#: seconds its notebook runs on one core of a quiet 2-core machine (a book build, two chapters at once)
SECONDS = {"ci": 39, "book": 342}
#: The modes of the paper's histograms of per-mode bounds, in normalised units, read off Figure 1 (MNIST) and
#: Figure 3 (CIFAR-10): all DCT modes ("unfiltered") and the lowest-frequency ones ("filtered").
PAPER_FIGURE_MODES = {"MNIST": {"unfiltered": 0.16, "filtered": 0.42},
                      "CIFAR-10": {"unfiltered": 0.08, "filtered": 0.09}}
#: Accuracy in percent without and with dithering: Sec. 3.1 (MNIST), 3.2 (CIFAR-10), 3.3.1 (ResNet-18), 3.3.2 (Swin-T).
PAPER_ACCURACY = {"MNIST": (97.9, 95.1), "CIFAR-10": (70.0, 50.0), "ResNet-18": (57.0, 54.0), "Swin-T": (64.0, 54.0)}
#: kappa of the authors' code (the paper states no noise level): MNIST, CIFAR-10, ResNet-18, Swin-T.
PAPER_KAPPA = {"MNIST": 1.0, "CIFAR-10": 5.0, "ResNet-18": 2.0, "Swin-T": 3.0}
#: The MNIST mean that Sec. 3.1 prints ("subtract the overall mean 0.1037"); the data's mean, and the code's, is
#: ``models.MNIST_NORMALIZATION[0]``.
PAPER_PRINTED_MNIST_MEAN = 0.1037


def paper_numbers() -> dict[str, float]:
    """The paper's values that the chapter's prose quotes, keyed for ``glue``: ``hcr_paper_acc_<net>_{clean,dithered}``
    and ``hcr_paper_kappa_<net>`` (``net``: ``mnist``, ``cifar10``, ``resnet18``, ``swint``), the printed MNIST mean
    ``hcr_paper_printed_mnist_mean`` and the true one ``hcr_mnist_mean``."""
    numbers = {"hcr_paper_printed_mnist_mean": PAPER_PRINTED_MNIST_MEAN,
               "hcr_mnist_mean": models.MNIST_NORMALIZATION[0]}
    for name, (clean, dithered) in PAPER_ACCURACY.items():
        key = name.lower().replace("-", "")
        numbers |= {f"hcr_paper_acc_{key}_clean": clean, f"hcr_paper_acc_{key}_dithered": dithered,
                    f"hcr_paper_kappa_{key}": PAPER_KAPPA[name]}
    return {key: float(value) for key, value in numbers.items()}


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
    ``rank_images`` evaluated images per task get a full Jacobian and its SVD (0 skips the null-space section: the
    paper CNN's 3,072 x 3,072 float64 Jacobian takes CPU-minutes); ``releases`` ``K`` dithered releases
    of each attacked image.  ``lsqr_iter_lim`` caps every LSQR solve (``None``: scipy's ``2 x`` columns, as the
    authors' code).  ``gray_min_accuracy`` and ``max_dithering_cost`` (fractions) are the thresholds of the
    in-shape check of the paper's MNIST accuracy (Sec. 3.1): the grayscale MLP trains to at least the first, and
    dithering costs it at most the second.
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
    gray_min_accuracy: float
    max_dithering_cost: float

    def validate(self) -> None:
        validation.choice("gray_data", self.gray_data, ("digits", "mnist"))
        validation.choice("colour_data", self.colour_data, ("photos", "cifar10"))
        for name in ("gray_hidden", "gray_epochs", "colour_per_class", "colour_hidden", "colour_epochs",
                     "num_restarts", "inversion_steps", "decoder_epochs", "imagenet_examples", "releases"):
            validation.integer(name, getattr(self, name))
        validation.integer("rank_images", self.rank_images, minimum=0, what="images per task (0: skip the ranks)")
        for name in ("gray_examples", "gray_cnn_examples", "colour_examples"):
            validation.integer(name, getattr(self, name), minimum=2)
        validation.integer("colour_resolution", self.colour_resolution, minimum=8)
        for name in ("gray_kappa", "gray_cnn_kappa", "colour_kappa"):
            validation.positive(name, getattr(self, name), what="noise level in RMS-feature units")
        if self.lsqr_iter_lim is not None:
            validation.integer("lsqr_iter_lim", self.lsqr_iter_lim, what="LSQR iterations per solve")
        for name in ("gray_min_accuracy", "max_dithering_cost"):
            validation.number(name, getattr(self, name), above=0.0, below=1.0, what="a fraction of the test set")
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

SCALES = {
    "ci": dict(gray_data="digits", gray_hidden=64, gray_epochs=8, gray_kappa=0.5, gray_diffdivs=(200.0, 1000.0),
               gray_low_freq=4, gray_cnn_kappa=0.25, colour_data="photos", colour_resolution=16, colour_per_class=40,
               colour_widths=(8, 32, 64), colour_hidden=64, colour_epochs=20, colour_kappa=0.25,
               colour_diffdivs=(500.0, 1000.0), colour_low_freq=8, gray_examples=8, gray_cnn_examples=3,
               colour_examples=3, num_restarts=3, power_iterations=(1, 4), inversion_steps=200, decoder_epochs=10,
               data_dir="data", imagenet_dir=None, imagenet_examples=16, lsqr_iter_lim=None,
               rank_images=32, releases=6, gray_min_accuracy=0.8, max_dithering_cost=0.08),
    "book": dict(gray_data="digits", gray_hidden=64, gray_epochs=30, gray_kappa=0.5, gray_diffdivs=(200.0, 1000.0),
                 gray_low_freq=4, gray_cnn_kappa=0.25, colour_data="photos", colour_resolution=16,
                 colour_per_class=200, colour_widths=(8, 32, 64), colour_hidden=64, colour_epochs=20,
                 colour_kappa=0.25, colour_diffdivs=(500.0, 1000.0), colour_low_freq=8, gray_examples=100,
                 gray_cnn_examples=8, colour_examples=6, num_restarts=25, power_iterations=(1, 4, 10),
                 inversion_steps=1500, decoder_epochs=60, data_dir="data", imagenet_dir=None, imagenet_examples=16,
                 lsqr_iter_lim=None, rank_images=32, releases=25, gray_min_accuracy=0.8, max_dithering_cost=0.08),
    "paper": dict(gray_data="mnist", gray_hidden=784, gray_epochs=6, gray_kappa=1.0, gray_diffdivs=(200.0, 1000.0),
                  gray_low_freq=8, gray_cnn_kappa=1.0, colour_data="cifar10", colour_resolution=32,
                  colour_per_class=5000, colour_widths=(32, 1024, 3072), colour_hidden=3072, colour_epochs=7,
                  colour_kappa=5.0, colour_diffdivs=(500.0, 1000.0), colour_low_freq=8, gray_examples=10_000,
                  gray_cnn_examples=100, colour_examples=2_500, num_restarts=25, power_iterations=(1, 10),
                  inversion_steps=3000, decoder_epochs=20, data_dir="data", imagenet_dir=None,
                  imagenet_examples=128, lsqr_iter_lim=None, rank_images=32, releases=25, gray_min_accuracy=0.95,
                  max_dithering_cost=0.05),
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
    gray_side, colour_side = _sides(cfg)
    p = {"gray": gray_side ** 2, "gray_cnn": gray_side ** 2, "colour": 3 * colour_side ** 2}
    with torch.device("meta"):
        nets = {"gray": models.MnistMLP(1, gray_side, 10, hidden=cfg.gray_hidden),
                "gray_cnn": models.CifarCNN(1, gray_side, 10, widths=cfg.colour_widths, hidden=cfg.colour_hidden),
                "colour": models.CifarCNN(3, colour_side, 10, widths=cfg.colour_widths, hidden=cfg.colour_hidden)}
    n = {key: net.feature_dim for key, net in nets.items()}
    examples = {"gray": cfg.gray_examples, "gray_cnn": cfg.gray_cnn_examples, "colour": cfg.colour_examples}
    images = {"digits": 1797, "mnist": 70_000}[cfg.gray_data] * p["gray"] + (
        8 * (cfg.colour_per_class + max(cfg.colour_examples // 7 + 1, 10)) if cfg.colour_data == "photos"
        else 60_000) * p["colour"]
    data_bytes = 3 * 4 * images
    model_bytes = sum(12 * sum(w.numel() for w in net.parameters()) for net in nets.values())
    R, f64 = cfg.num_restarts, 8
    runs = {key: 2 + sum(i < max(cfg.power_iterations) for i in cfg.power_iterations) + 2 * (key == "gray")
            for key in nets}
    kept = sum(runs[key] * examples[key] * (f64 * (4 * p[key] + n[key]) + 3 * f64 * R) for key in nets)
    transient = max(f64 * R * (examples[key] * n[key] + 2 * min(examples[key], 128) * (4 * p[key] + 2 * n[key]))
                    for key in nets)
    jacobians = max(f64 * min(cfg.rank_images, examples[key], 4) * (n[key] * p[key] + 2 * p[key] ** 2)
                    for key in nets)
    return int(data_bytes + model_bytes + kept + transient + jacobians)


def paper_shape(folder) -> dict:
    """The paper pipeline at the paper's shapes, cut to seconds (:func:`compendium.book.execute_paper_shape`): writes
    MNIST (28×28, 100 training and 10 test digits) and CIFAR-10 (32×32×3, 50 training and 10 test images) stand-ins
    into ``folder`` (:mod:`compendium.standin`) and returns the notebook's parameters: ``scale="paper"`` (the
    paper's MLP 784 → 784 → 784 and CNN with widths 32, 1024, 3072 and 3,072 hidden units, its sizes ``s`` and
    noise levels), with 2 images per task, 2 restarts, 1 epoch, repetitions ``i`` of 1 and 2, LSQR capped at 5
    iterations, no full Jacobians (``rank_images=0``: the CNN's 3,072 x 3,072 float64 Jacobian alone takes over ten
    CPU-minutes; :func:`hcr.jacobian_rank` is tested on its own), 2 releases, 5 inversion steps, 1 decoder epoch
    and no ImageNet."""
    folder = Path(folder)
    standin.mnist(folder / "mnist", train=100, test=10, seed=0)
    standin.cifar10(folder / "cifar10", per_batch=10, test=10, seed=1)
    return dict(scale="paper", data_dir=str(folder), gray_examples=2, gray_cnn_examples=2, colour_examples=2,
                num_restarts=2, gray_epochs=1, colour_epochs=1, power_iterations=[1, 2], lsqr_iter_lim=5,
                rank_images=0, releases=2, inversion_steps=5, decoder_epochs=1, imagenet_dir=None)


# ---------------------------------------------------------------------------------------------------------------
# the data
# ---------------------------------------------------------------------------------------------------------------
CIFAR_CLASSES = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]


def normalised(x, mean, sd):
    """``(x - mean) / sd``: the inputs in the units every bound of the chapter is stated in (Sec. 3.1: MNIST's
    mean/sd normalisation; Sec. 3.2: CIFAR-10's ``2x - 1``)."""
    return (x - mean) / sd


@dataclass
class Datasets:
    """The two data sets of the chapter, as ``(images, labels)`` pairs: the grayscale task (the paper's MNIST,
    Sec. 3.1) with its normalisation ``gray_norm = (mean, sd)``, and the colour task (CIFAR-10, Sec. 3.2) with its
    class names and ``colour_norm``."""

    gray_data: str
    gray_train: tuple
    gray_test: tuple
    gray_norm: tuple
    colour_data: str
    colour_train: tuple
    colour_test: tuple
    colour_classes: list
    colour_norm: tuple

    def describe(self) -> str:
        """One line: the shapes, sizes and normalisation of both tasks."""
        def images(x: torch.Tensor) -> str:  # 1297 images of 1 × 8 × 8
            return f"{len(x)} images of {' × '.join(str(n) for n in x.shape[1:])}"

        return (f"grayscale task: {self.gray_data}, {images(self.gray_train[0])} for training and "
                f"{len(self.gray_test[1])} for testing, normalisation {self.gray_norm[0]:.4f} / "
                f"{self.gray_norm[1]:.4f}; colour task: {self.colour_data}, {images(self.colour_train[0])} for "
                f"training and {len(self.colour_test[1])} for testing, {len(self.colour_classes)} classes")


def load_data(cfg: Settings) -> Datasets:
    """The chapter's data, loaded before any expensive work so that a missing data set stops the chapter first.

    ``book``/``ci`` scale: scikit-learn's 8x8 digits (``data.digits``; normalised by the training split's pixel mean
    and sd, 0.3054 / 0.3759 for seed 0) stand in for MNIST, and crops of 7 bundled photographs
    (``data.photo_classes``) for CIFAR-10.  ``paper`` scale: MNIST (``data.mnist``, normalised by the usual
    0.1307 / 0.3081, Sec. 3.1) and CIFAR-10 (``data.cifar10``), downloaded into ``cfg.data_dir``.  Colour inputs are
    mapped to ``2x - 1`` as in the paper (Sec. 3.2).
    """
    root = base.in_repository(cfg.data_dir)
    if cfg.gray_data == "digits":
        gray_train, gray_test = data.digits("train", cfg.seed), data.digits("test", cfg.seed)
        gray_norm = (float(gray_train[0].mean()), float(gray_train[0].std()))
    else:
        gray_train, gray_test = (data.mnist(root / "mnist", split, download=True) for split in ("train", "test"))
        gray_norm = models.MNIST_NORMALIZATION
    if cfg.colour_data == "photos":
        colour_train = data.photo_classes(cfg.colour_per_class, cfg.colour_resolution, seed=cfg.seed + 1)
        colour_test = data.photo_classes(max(cfg.colour_examples // 7 + 1, 10), cfg.colour_resolution,
                                         seed=cfg.seed + 2)
        colour_classes = list(data.PHOTO_NAMES)
    else:
        colour_train, colour_test = (data.cifar10(root / "cifar10", split, download=True)
                                     for split in ("train", "test"))
        colour_classes = list(CIFAR_CLASSES)
    return Datasets(cfg.gray_data, gray_train, gray_test, gray_norm, cfg.colour_data, colour_train, colour_test,
                    colour_classes, models.CIFAR_NORMALIZATION)


# ---------------------------------------------------------------------------------------------------------------
# the theory checks: eq. (12), the Cramer-Rao limit of eqs. (13)-(18), Algorithm 1 on a linear map
# ---------------------------------------------------------------------------------------------------------------
def chi2_quadrature(c: float) -> float:
    """The left side of eq. (12) for ``||z|| / sigma = c`` as a one-dimensional integral (Appendix A): after a
    rotation only one standard normal coordinate ``u`` matters, and the integrand is
    ``(e^{cu - c^2/2} - 1)^2 phi(u)``."""
    f = lambda u: (np.exp(2 * c * u - c * c - u * u / 2) - 2 * np.exp(c * u - c * c / 2 - u * u / 2)  # noqa: E731
                   + np.exp(-u * u / 2)) / np.sqrt(2 * np.pi)
    return scipy.integrate.quad(f, -40, 40 + 4 * c, epsabs=1e-14, epsrel=1e-13, limit=200)[0]


@dataclass
class Chi2Check:
    """:func:`chi2_check`'s result: ``table`` (one row per ``c``: eq. 12's closed form and the quadrature), and the
    five-dimensional example ``z``, ``sigma``: its closed form ``closed`` and Monte-Carlo mean ``mc_mean`` with its
    standard error ``mc_se``."""

    table: pd.DataFrame
    z: np.ndarray
    sigma: float
    closed: float
    mc_mean: float
    mc_se: float


def chi2_check(seed: int, cs=(0.1, 1.0, 2.0), draws: int = 400_000) -> Chi2Check:
    """Eq. (12) (Appendix A, eqs. 19-28) three ways: the closed form ``exp(||z||^2 / sigma^2) - 1``
    (:func:`hcr.gaussian_chi2`), the one-dimensional quadrature (:func:`chi2_quadrature`) at ``c = ||z|| / sigma``
    in ``cs``, and a Monte-Carlo average of the squared likelihood-ratio deviation (eq. 11) over ``draws`` normal
    vectors in ``n = 5`` dimensions (``z = (0.3, -0.2, 0.1, 0, 0.4)``, ``sigma = 0.7``; torch generator ``seed``)."""
    rows = []
    for c in cs:
        rows.append({"c = ||z||/σ": c, "closed form (12)": float(hcr.gaussian_chi2(np.array([c]), 1.0)),
                     "quadrature": chi2_quadrature(c)})
    z, sigma = np.array([0.3, -0.2, 0.1, 0.0, 0.4]), 0.7
    u = torch.randn(draws, 5, generator=torch.Generator().manual_seed(seed), dtype=torch.float64).numpy()
    ratio = np.exp((2 * sigma * u @ z - z @ z) / (2 * sigma**2))  # f(Z - z) / f(Z) at Z = sigma u
    mc_mean, mc_se = checks.mean_se((ratio - 1) ** 2)
    closed = float(hcr.gaussian_chi2(z, sigma))
    rows.append({"c = ||z||/σ": np.linalg.norm(z) / sigma, "closed form (12)": closed,
                 "quadrature": chi2_quadrature(np.linalg.norm(z) / sigma)})
    return Chi2Check(pd.DataFrame(rows), z, sigma, closed, mc_mean, mc_se)


def quoted_numbers() -> dict[str, float]:
    """The coding exercises' solutions, keyed for ``glue``, each checked here.

    Exercise 4: the feature map ``a = (theta_1 + theta_2, theta_3)`` (a 2 x 3 Jacobian of rank 2) at ``sigma = 1``:
    :func:`~compendium.bounds.hcr.cramer_rao_bound` on the first pixel is infinite (``e_1`` is not in the row space:
    no unbiased estimator exists), on the sum of the first two pixels ``sigma^2``, and on the third ``sigma^2``.
    Exercise 5: the cumulative-sum map of 64 pixels at ``sigma = 1``: the paper's eq. (18)
    (:func:`~compendium.bounds.hcr.fisher_diagonal_bound_eq18`, ``1 / ||A e_k||^2``) against the Cramér-Rao bound
    on the first pixel (CRB 1, eq. (18) 1/64: all 64 features see it) and on the last (CRB 2, eq. (18) 1: it is
    the difference of the last two features).
    """
    J = np.array([[1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    pixel, pair, third = hcr.cramer_rao_bound(J, 1.0, directions=np.array([[1.0, 0, 0], [1, 1, 0], [0, 0, 1]]))
    assert np.isinf(pixel) and np.isclose(pair, 1.0) and np.isclose(third, 1.0), (pixel, pair, third)
    A, _ = cumulative_sum_map(64)
    crb, eq18 = hcr.cramer_rao_bound(A, 1.0), hcr.fisher_diagonal_bound_eq18(A, 1.0)
    assert np.allclose([crb[0], eq18[0], crb[-1], eq18[-1]], [1.0, 1 / 64, 2.0, 1.0]), (crb, eq18)
    return {"hcr_ex4_pair": float(pair), "hcr_ex4_third": float(third), "hcr_ex5_crb_first": float(crb[0]),
            "hcr_ex5_eq18_first": float(eq18[0]), "hcr_ex5_ratio_first": float(crb[0] / eq18[0]),
            "hcr_ex5_crb_last": float(crb[-1]), "hcr_ex5_eq18_last": float(eq18[-1])}


def cumulative_sum_map(p: int = 64):
    """The linear feature map ``a_theta = A theta`` with ``A`` the ``p x p`` lower-triangular ones (a cumulative sum;
    its inverse is the first difference), on ``(b, 8, 8)`` inputs: returns ``(A, batched torch map)``."""
    A = np.tril(np.ones((p, p)))
    A_t = torch.tensor(A)
    return A, (lambda t: t.reshape(t.shape[0], -1) @ A_t.T)


@dataclass
class LinearCheck:
    """:func:`cumulative_sum_check`'s result.  ``A``, ``linear_map``, ``theta`` (the ``(1, 8, 8)`` input); ``crb``
    and ``eq18`` per coordinate; ``along``: ``{t: HCR variance bound on coordinate 10 along t (A^T A)^{-1} e_10}``;
    ``random_ratio``: the largest ``HCR / CRB`` over the random directions; ``ols`` ``(draws, p)`` the OLS estimates,
    ``ols_var`` their variances; ``table``: ``along`` next to ``CRB x / (e^x - 1)``."""

    A: np.ndarray
    linear_map: object
    theta: torch.Tensor
    crb: np.ndarray
    eq18: np.ndarray
    along: dict
    random_ratio: float
    ols: np.ndarray
    ols_var: np.ndarray
    table: pd.DataFrame


def cumulative_sum_check(seed: int, k: int = 10, ts=(1.0, 0.1, 0.005, 0.001), directions: int = 2000,
                         draws: int = 20_000) -> LinearCheck:
    """The Cramer-Rao limit of eqs. (13)-(18) on the cumulative-sum map (:func:`cumulative_sum_map`, ``sigma = 1``),
    where everything has a closed form: the CRB ``sigma^2 [(A^T A)^{-1}]_kk`` (1, 2, ..., 2) against the paper's
    eq. (18) ``sigma^2 / ||A e_k||^2``; the HCR bound (5)+(12) along the CRB direction ``t (A^T A)^{-1} e_k`` for
    each ``t``, which equals ``CRB_k x / (e^x - 1)`` with ``x = ||A eps||^2 / sigma^2``; the HCR bound of
    ``directions`` random small perturbations (numpy ``default_rng(seed)``), none of which may exceed the CRB; and
    the ordinary least-squares estimator ``A^{-1} X`` on ``draws`` releases ``X = A theta + Z`` (torch generator
    ``seed``), unbiased with variance equal to the CRB."""
    A, linear_map = cumulative_sum_map()
    p = A.shape[0]
    crb = hcr.cramer_rao_bound(A, 1.0)
    eq18 = hcr.fisher_diagonal_bound_eq18(A, 1.0)
    w = hcr.crb_direction(A, k)
    along = {}
    for t in ts:
        eps_t = t * w
        along[t] = hcr.hcr_sd_bound(eps_t, A @ eps_t, 1.0)[k] ** 2
    rand_eps = 0.01 * np.random.default_rng(seed).standard_normal((directions, p))  # small: near the limit
    rand_hcr = hcr.hcr_sd_bound(rand_eps, rand_eps @ A.T, 1.0) ** 2
    theta = torch.linspace(-1, 1, p, dtype=torch.float64).reshape(1, 8, 8)
    X = linear_map(theta) + torch.randn(draws, p, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    ols = inversion.linearised_estimator(linear_map, X, theta).reshape(draws, p).numpy()
    table = pd.DataFrame({"t": list(along), "HCR along (AᵀA)⁻¹e₁₀": list(along.values()),
                          "CRB·x/(eˣ−1)": [hcr.hcr_linear_optimal(crb[k], t**2 * (A @ w) @ (A @ w)) for t in along]})
    return LinearCheck(A, linear_map, theta, crb, eq18, along, float(np.max(rand_hcr / crb)), ols,
                       ols.var(axis=0, ddof=1), table)


@dataclass
class SmoothLimit:
    """:func:`smooth_network_limit`'s result: ``table`` (one row per ``tau``), and the CRB and eq. (18) of the
    coordinate."""

    table: pd.DataFrame
    crb: float
    eq18: float


def smooth_network_limit(seed: int, sigma: float = 0.05, k: int = 5,
                         taus=(1.0, 0.3, 0.1, 0.03, 0.01, 0.003, 0.001)) -> SmoothLimit:
    """The Cramer-Rao limit of eqs. (13)-(18) for a nonlinear map: a smooth network (two tanh layers, 16 -> 40 -> 40,
    float64, initialised from ``seed``) at a random ``4 x 4`` input.  Along the CRB direction ``(J^T J)^{-1} e_k`` of
    its Jacobian, the step is bisected until the exact feature change has ``||z_eps|| / sigma = tau``; the HCR
    variance bound (5)+(12) from that exact forward pass is tabulated against the CRB and the linear theory
    ``tau^2 / (e^{tau^2} - 1)``."""
    smooth = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(16, 40), torch.nn.Tanh(), torch.nn.Linear(40, 40),
                                 torch.nn.Tanh()).double()
    models.init_parameters(smooth, torch.Generator().manual_seed(seed))
    smooth.requires_grad_(False)
    x = torch.randn(1, 4, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(seed + 1))
    J = torch.func.jacrev(lambda t: smooth(t.reshape(1, 4, 4))[0])(x.reshape(-1)).numpy()
    crb = hcr.cramer_rao_bound(J, sigma)[k]
    eq18 = hcr.fisher_diagonal_bound_eq18(J, sigma)[k]
    w = hcr.crb_direction(J, k)
    rows = []
    for tau in np.array(taus):
        lo, hi = 0.0, 10.0 * tau * sigma / np.linalg.norm(J @ w)
        for _ in range(80):  # bisect the step so that the exact feature change has ||z|| / sigma = tau
            mid = (lo + hi) / 2
            _, z = hcr.hcr_sd_along(smooth, x, torch.tensor(mid * w).reshape(1, 4, 4), sigma)
            lo, hi = (mid, hi) if np.linalg.norm(z) / sigma < tau else (lo, mid)
        b, z = hcr.hcr_sd_along(smooth, x, torch.tensor(lo * w).reshape(1, 4, 4), sigma)
        rows.append({"τ = ||z_ε||/σ": tau, "HCR variance bound": b.ravel()[k] ** 2,
                     "HCR / CRB": b.ravel()[k] ** 2 / crb, "linear theory τ²/(e^τ²−1)": tau**2 / np.expm1(tau**2)})
    return SmoothLimit(pd.DataFrame(rows), crb, eq18)


@dataclass
class Algorithm1Check:
    """:func:`algorithm1_linear_check`'s result: ``rel_err`` (per restart, LSQR against the closed form),
    ``stationary`` (how much the repetitions change ``eps``), ``efficiency`` (``8 x 8``: the bound over
    ``sqrt(CRB)`` per DCT mode), ``max25`` (Monte Carlo of ``E max_25 |N(0,1)|``), ``ratio`` (``||z_eps|| / ||eps||``
    per restart) and ``sv_min`` (the smallest singular value of the map)."""

    rel_err: np.ndarray
    stationary: float
    efficiency: np.ndarray
    max25: float
    ratio: np.ndarray
    sv_min: float


def algorithm1_linear_check(lin: LinearCheck, seed: int) -> Algorithm1Check:
    """Algorithm 1 (Sec. 2.2) on the cumulative-sum map of :func:`cumulative_sum_check` (``sigma = 1``, ``s = 1/200``).

    1. With tight LSQR tolerances (``1e-14``), 5 restarts and ``i = 3``: the relative error of ``eps`` against the
       closed form ``A^+ z`` (:func:`hcr.algorithm1_linear_closed_form`), and the change of ``eps`` between ``i = 1``
       and ``i = 3`` (the loop is stationary after one step for an invertible map).
    2. With the authors' tolerance, 25 restarts and ``i = 10``: the per-DCT-mode efficiency ``bound / sqrt(CRB)``,
       whose median should be ``E max_25 |N(0,1)| / sqrt(64)`` (estimated from 200,000 x 25 normal draws), and the
       ratio ``||z_eps|| / ||eps||`` that the paper says the repetitions approximately minimise.
    """
    A, p = lin.A, lin.A.shape[0]
    exact = hcr.hcr_bound(lin.linear_map, lin.theta, 1.0, num_restarts=5, num_power_iterations=3, diffdiv=200.0,
                          generator=torch.Generator().manual_seed(seed), lsqr_atol=1e-14, lsqr_btol=1e-14)
    closed = np.array([hcr.algorithm1_linear_closed_form(A, z0 / np.sqrt(p) / 200.0, 3)[0]
                       for z0 in exact.noise[:, 0]])
    rel_err = np.linalg.norm(exact.eps.reshape(5, -1) - closed, axis=1) / np.linalg.norm(closed, axis=1)
    one_step = hcr.hcr_bound(lin.linear_map, lin.theta, 1.0, num_restarts=5, num_power_iterations=1, diffdiv=200.0,
                             generator=torch.Generator().manual_seed(seed), lsqr_atol=1e-14, lsqr_btol=1e-14)
    stationary = np.max(np.abs(one_step.eps - exact.eps)) / np.max(np.abs(exact.eps))
    code_run = hcr.hcr_bound(lin.linear_map, lin.theta, 1.0, num_restarts=25, num_power_iterations=10, diffdiv=200.0,
                             generator=torch.Generator().manual_seed(seed))
    crb_dct = hcr.cramer_rao_bound(A, 1.0, directions=hcr.dct_matrix((8, 8))).reshape(8, 8)
    efficiency = code_run.bound_dct[0] / np.sqrt(crb_dct)
    max25 = np.abs(np.random.default_rng(seed).standard_normal((200_000, 25))).max(axis=1).mean()
    sv_min = np.linalg.svd(A, compute_uv=False).min()
    return Algorithm1Check(rel_err, stationary, efficiency, max25, code_run.ratio, sv_min)


# ---------------------------------------------------------------------------------------------------------------
# the experiments: three classifiers, their dithered accuracy, and the HCR bounds of Algorithm 1
# ---------------------------------------------------------------------------------------------------------------
@dataclass
class Task:
    """One of the chapter's three classification tasks: its untrained classifier and settings (:func:`build_tasks`),
    then what :func:`train_tasks` and :func:`jacobian_ranks` add to it."""

    title: str  #: the task's name in tables and figures
    paper_name: str | None  #: the paper's data set for this task (``None``: not in the paper)
    norm: tuple[float, float]  #: the data's normalisation (mean, standard deviation)
    train: tuple[torch.Tensor, torch.Tensor]  #: training images and labels
    test: tuple[torch.Tensor, torch.Tensor]  #: test images and labels
    model: nn.Module  #: the classifier, trained in place by :func:`train_tasks`
    epochs: int  #: training epochs
    kappa: float  #: the noise level kappa of the dithered release
    diffdivs: tuple[float, ...]  #: ``1 / s`` of the main and the limit run (Algorithm 1's step size)
    low: int  #: the low-frequency DCT block shown in the figures
    examples: int  #: the test images bounded
    iterations: tuple[int, int]  #: the repetitions ``i`` of the main and the limit run
    paper_acc: tuple[float, float] | None  #: the paper's clean and dithered accuracy
    paper_kappa: float | None  #: the paper's kappa
    paper_modes: dict | None  #: the histogram modes of the paper's figures, read off them
    paper_sd: float | None  #: the paper's normalisation standard deviation
    # set by train_tasks
    x_test: torch.Tensor | None = None  #: the normalised test images, on the device
    y_test: torch.Tensor | None = None  #: the test labels, on the device
    train_seconds: float | None = None  #: seconds to train the classifier
    exact: nn.Module | None = None  #: a float64 copy of the classifier, for the exact forward passes of the bounds
    x_eval: torch.Tensor | None = None  #: the first ``examples`` test images, the ones bounded
    sigma: float | None = None  #: kappa times the RMS feature over the test set (the authors' code's rule)
    accuracy: tuple[float, float] | None = None  #: clean and dithered accuracy
    # set by jacobian_ranks
    jacobian_rank: hcr.JacobianRank | None = None  #: the feature map's Jacobian rank at the bounded images


def build_tasks(cfg: Settings, datasets: Datasets) -> dict[str, Task]:
    """The three tasks, each a :class:`Task` with its untrained classifier and its settings: ``"gray"`` (the paper's
    MNIST MLP, Sec. 3.1, Figures 1-2), ``"gray_cnn"`` (the CIFAR-10 CNN on the grayscale data; not in the paper) and
    ``"colour"`` (the paper's CIFAR-10 CNN, Sec. 3.2, Figures 3-4).  ``iterations`` are the repetitions ``i`` of the
    main and the limit run (the paper: 10 and 10 for MNIST, 6 and 4 for CIFAR-10, capped at the largest
    ``cfg.power_iterations``); ``paper_acc``, ``paper_kappa``, ``paper_modes`` (the histogram modes of the paper's
    figures, read off them) and ``paper_sd`` are the paper's values for comparison."""
    side_gray = datasets.gray_train[0].shape[-1]
    i_max = max(cfg.power_iterations)
    d = datasets
    return {  # iterations: i of the main and the limit run
        "gray": Task(
            title=f"{cfg.gray_data} MLP", paper_name="MNIST", norm=d.gray_norm, train=d.gray_train, test=d.gray_test,
            model=models.MnistMLP(1, side_gray, 10, hidden=cfg.gray_hidden,
                                  generator=torch.Generator().manual_seed(cfg.seed)),
            epochs=cfg.gray_epochs, kappa=cfg.gray_kappa, diffdivs=cfg.gray_diffdivs, low=cfg.gray_low_freq,
            examples=cfg.gray_examples, iterations=(i_max, i_max),
            paper_acc=PAPER_ACCURACY["MNIST"], paper_kappa=PAPER_KAPPA["MNIST"],
            paper_modes={"main": (0.16, 0.42), "limit": (0.20, 0.47)},
            paper_sd=models.MNIST_NORMALIZATION[1]),
        "gray_cnn": Task(
            title=f"{cfg.gray_data} CNN", paper_name=None, norm=d.gray_norm, train=d.gray_train, test=d.gray_test,
            model=models.CifarCNN(1, side_gray, 10, widths=cfg.colour_widths, hidden=cfg.colour_hidden,
                                  generator=torch.Generator().manual_seed(cfg.seed)),
            epochs=cfg.gray_epochs, kappa=cfg.gray_cnn_kappa, diffdivs=cfg.gray_diffdivs, low=cfg.gray_low_freq,
            examples=cfg.gray_cnn_examples, iterations=(i_max, i_max),
            paper_acc=None, paper_kappa=None, paper_modes=None, paper_sd=None),
        "colour": Task(
            title=f"{cfg.colour_data} CNN", paper_name="CIFAR-10", norm=d.colour_norm, train=d.colour_train,
            test=d.colour_test,
            model=models.CifarCNN(3, d.colour_train[0].shape[-1], len(d.colour_classes), widths=cfg.colour_widths,
                                  hidden=cfg.colour_hidden, generator=torch.Generator().manual_seed(cfg.seed)),
            epochs=cfg.colour_epochs, kappa=cfg.colour_kappa, diffdivs=cfg.colour_diffdivs, low=cfg.colour_low_freq,
            examples=cfg.colour_examples, iterations=(min(6, i_max), min(4, i_max)),
            paper_acc=PAPER_ACCURACY["CIFAR-10"], paper_kappa=PAPER_KAPPA["CIFAR-10"],
            paper_modes={"main": (0.08, 0.09), "limit": (0.065, 0.08)}, paper_sd=models.CIFAR_NORMALIZATION[1]),
    }


def train_tasks(tasks: dict[str, Task], cfg: Settings, device) -> pd.DataFrame:
    """Trains each task's classifier with the paper's recipe (AdamW, learning rate 1e-3, batch 32; Sec. 3) and sets
    its noise level and accuracies; returns the accuracy table (one row per task).

    Each :class:`Task` gains ``x_test``/``y_test`` (normalised, on ``device``), ``train_seconds``, ``exact`` (a float64
    copy of the model, for the exact forward passes that make each bound rigorous), ``x_eval`` (the first
    ``examples`` test images, the ones bounded), ``sigma`` (``kappa`` times the RMS feature over the test set: the
    authors' code's rule, which the paper never states) and ``accuracy`` ``(clean, dithered)``, the dithered one the
    mean over 25 noise draws (as in the authors' code)."""
    acc_rows = []
    for task in tasks.values():
        x_train = normalised(task.train[0], *task.norm)
        task.x_test = normalised(task.test[0], *task.norm).to(device)
        task.y_test = task.test[1].to(device)
        start = time.perf_counter()
        # shuffles drawn on the CPU, so that a run on a GPU trains on the book's batches
        train.train_classifier(task.model, (x_train.to(device), task.train[1].to(device)), task.epochs,
                               generator=torch.Generator().manual_seed(cfg.seed), device=str(device),
                               progress=False)
        task.train_seconds = time.perf_counter() - start
        model = task.model.eval().requires_grad_(False)
        task.exact = hcr.float64_copy(model)
        task.x_eval = task.x_test[:task.examples]
        # kappa x RMS feature over the test set (the code's RMS is over its thousands of evaluated examples)
        task.sigma = hcr.noise_sigma(model.features(task.x_test), task.kappa)
        clean = train.accuracy(model, task.x_test, task.y_test)
        dithered = dithered_accuracy(task, task.sigma, seed=cfg.seed)
        task.accuracy = (clean, dithered)
        acc_rows.append({"task": task.title, "train [s]": round(task.train_seconds, 1), "κ": task.kappa,
                         "σ": round(task.sigma, 4), "clean [%]": round(100 * clean, 1),
                         "dithered [%]": round(100 * dithered, 1),
                         "paper [%]": "not in the paper" if task.paper_acc is None else
                                      f"{task.paper_name}, κ = {task.paper_kappa:g}: "
                                      f"{task.paper_acc[0]:g} → {task.paper_acc[1]:g}"})
    return pd.DataFrame(acc_rows)


def dithered_accuracy(task: Task, sigma: float, *, seed: int, draws: int = 25) -> float:
    """The accuracy of a trained task's classifier on its test set with Gaussian noise of standard deviation
    ``sigma`` added to the features, the mean over ``draws`` noise draws (as in the authors' code)."""
    return float(np.mean([train.accuracy(task.model, task.x_test, task.y_test, feature_noise=sigma,
                                         generator=torch.Generator().manual_seed(seed + r)) for r in range(draws)]))


def kappa_sweep(tasks: dict[str, Task], kappas, *, seed: int) -> pd.DataFrame:
    """What each noise level costs: every trained task's clean accuracy and its dithered accuracy (in percent) at
    ``sigma = kappa x`` RMS feature for each ``kappa``, the rule by which the authors' code (and this chapter) sets
    the noise; the paper reports one point of this trade-off per data set."""
    rows = []
    for key, task in tasks.items():
        features = task.model.features(task.x_test)
        row = {"task": task.title, "key": key, "clean [%]": 100 * task.accuracy[0]}
        for kappa in kappas:
            row[f"κ = {kappa:g} [%]"] = 100 * dithered_accuracy(task, hcr.noise_sigma(features, kappa), seed=seed)
        rows.append(row)
    return pd.DataFrame(rows)


def run_hcr(task: Task, cfg: Settings, device, diffdiv: float, iterations: int, **kwargs) -> hcr.HCRResult:
    """Algorithm 1 and the per-DCT-mode HCR bound (:func:`hcr.hcr_bound`) on a task's evaluated images, with
    ``cfg.num_restarts`` draws, size ``s = 1/diffdiv``, ``iterations`` repetitions and LSQR capped at
    ``cfg.lsqr_iter_lim``, float32 Jacobian products and float64 exact forward passes; the result keeps the first
    draw's per-draw arrays only (``keep="first"``) and carries its wall-clock time as ``seconds``."""
    start = time.perf_counter()
    # the noise drawn on the CPU (hcr_bound moves it), so that a run on a GPU bounds the book's draws
    res = hcr.hcr_bound(task.model.features, task.x_eval, task.sigma, num_restarts=cfg.num_restarts,
                        num_power_iterations=iterations, diffdiv=diffdiv,
                        generator=torch.Generator().manual_seed(cfg.seed), iter_lim=cfg.lsqr_iter_lim,
                        exact_map=task.exact.features, keep="first", **kwargs)
    res.seconds = time.perf_counter() - start
    return res


def run_bounds(tasks: dict[str, Task], cfg: Settings, device) -> dict:
    """Every HCR run of the chapter (Sec. 3, Figures 1 and 3), keyed ``(task, label)``: for each task the main run
    (the first ``diffdivs`` size, the first ``iterations``) and the ``--limit`` run of the authors' code (the second
    size), the sweep over fewer repetitions ``i`` (``"i=<i>"``, at the main size), and for the grayscale task the
    two sizes with one fixed LSQR tolerance (``"fixed atol, main s"``/``"fixed atol, limit s"``: the authors' value
    ``0.02 sigma s`` at the main size), which separates the tolerance from the size."""
    runs = {}
    for key, task in tasks.items():
        (s_main, s_limit), (i_main, i_limit) = task.diffdivs, task.iterations
        runs[key, "main"] = run_hcr(task, cfg, device, s_main, i_main)
        runs[key, "limit"] = run_hcr(task, cfg, device, s_limit, i_limit)
        for i in cfg.power_iterations:
            if i < i_main:  # the sweep below the main run's repetitions
                runs[key, f"i={i}"] = run_hcr(task, cfg, device, s_main, i)
    gray = tasks["gray"]
    fixed_atol = 0.02 * gray.sigma / gray.diffdivs[0]  # the code's value at the main size
    for label, s_inv in zip(("fixed atol, main s", "fixed atol, limit s"), gray.diffdivs):
        runs["gray", label] = run_hcr(gray, cfg, device, s_inv, gray.iterations[0], lsqr_atol=fixed_atol)
    return runs


def bound_summary(runs: dict, tasks: dict[str, Task]) -> pd.DataFrame:
    """One row per HCR run: size ``1/s``, repetitions ``i``, total LSQR iterations, the 10/50/90 % quantiles of the
    per-mode bound over all modes and examples, the median over the lowest ``L x L`` modes (the paper's filtered
    histograms), the median ``||z_eps|| / ||eps||`` and the seconds per example."""
    rows = []
    for (key, label), res in runs.items():
        task, b = tasks[key], res.bound_dct
        q10, q50, q90 = np.quantile(b, [0.1, 0.5, 0.9])
        rows.append({"task": task.title, "run": label, "1/s": res.diffdiv,
                     "i": res.lsqr_iterations.shape[1], "LSQR its": int(res.lsqr_iterations.sum()),
                     "q10": q10, "median": q50, "q90": q90,
                     "median low L×L": np.median(hcr.low_frequency(b, task.low)), "L": task.low,
                     "median ‖z_ε‖/‖ε‖": np.median(res.ratio), "s per example": res.seconds / task.examples})
    return pd.DataFrame(rows)


def exact_on_cpu(task: Task) -> torch.nn.Module:
    """A CPU copy of the task's float64 model, for the checks below that recompute single images on the CPU beside
    numpy (the task's own copy stays on the chapter's device for :func:`run_hcr`)."""
    return copy.deepcopy(task.exact).cpu()


def recompute_first_draw(task: Task, res: hcr.HCRResult):
    """The first draw of the first example of a run, recomputed independently: its exact feature change by a fresh
    float64 forward pass, and its per-DCT-mode bound (5)+(12) from that change.  Returns ``(z_eps, bound)``."""
    eps0 = torch.tensor(res.eps[0, :1])
    _, z = hcr.hcr_sd_along(exact_on_cpu(task).features, task.x_eval[:1].double().cpu(), eps0, task.sigma)
    return z, hcr.hcr_sd_bound(hcr.dct2(res.eps[0, 0]), z, task.sigma)


def histogram_mode(values, bins: int = 256) -> float:
    """The centre of the fullest of ``bins`` equal bins over the range of ``values`` (the authors' code histograms
    the bounds with ``np.histogram(values, bins=256)``)."""
    counts, edges = np.histogram(np.ravel(values), bins=bins)
    return 0.5 * (edges[counts.argmax()] + edges[counts.argmax() + 1])


def histogram_modes(tasks: dict[str, Task], runs: dict):
    """The counterparts of Figures 1 and 3: for each task the histogram panels (all modes and the lowest ``L x L``,
    for the main and the limit run) and a table of their modes, in normalised units and in 8-bit gray levels, next
    to the modes of the paper's figures.  Returns ``(table, {task: panels})``."""
    mode_rows, panels = [], {}
    for key, task in tasks.items():
        panels[key] = {}
        for label in ("main", "limit"):
            res = runs[key, label]
            name = f"s = 1/{res.diffdiv:g}, i = {res.lsqr_iterations.shape[1]}"
            panels[key][f"{name}: all modes"] = res.bound_dct
            panels[key][f"{name}: lowest {task.low}×{task.low}"] = hcr.low_frequency(res.bound_dct, task.low)
            paper = task.paper_modes[label] if task.paper_modes else (np.nan, np.nan)
            for part, values, paper_value in (("all", res.bound_dct, paper[0]),
                                              ("low", hcr.low_frequency(res.bound_dct, task.low), paper[1])):
                mode_rows.append({"task": task.title, "run": name, "modes": part,
                                  "histogram mode": histogram_mode(values),
                                  "in 8-bit levels": histogram_mode(values) * task.norm[1] * 255,
                                  "paper": paper_value, "paper's data": task.paper_name or "—",
                                  "paper in 8-bit levels": paper_value * (task.paper_sd or np.nan) * 255})
    return pd.DataFrame(mode_rows), panels


# ---------------------------------------------------------------------------------------------------------------
# the null space of ReLU features: where no unbiased estimator exists
# ---------------------------------------------------------------------------------------------------------------
def jacobian_ranks(tasks: dict[str, Task], max_images: int = 32, jacobian_rows: int = 256) -> pd.DataFrame:
    """The rank of each task's float64 feature Jacobian at up to ``max_images`` evaluated images
    (:func:`hcr.jacobian_rank` on the task's device, ``jacobian_rows`` output rows per backward pass, one full SVD per
    image), the gap between its zero and nonzero singular values, and
    the share of DCT modes (every channel's) outside its row space, whose Cramer-Rao bound (eqs. 13-18 done right)
    is infinite.  Stores the :class:`hcr.JacobianRank` as ``task.jacobian_rank``; returns one row per task (one row
    saying so when ``max_images`` is 0, the tasks' ranks then ``None``)."""
    if max_images == 0:
        for task in tasks.values():
            task.jacobian_rank = None
        return pd.DataFrame({"task": ["not run: rank_images = 0"]})
    rows = []
    for task in tasks.values():
        x_rank = task.x_eval[:max_images].double()
        D_task = np.kron(np.eye(x_rank.shape[1]), hcr.dct_matrix(tuple(x_rank.shape[-2:])))  # every channel's DCT
        task.jacobian_rank = jr = hcr.jacobian_rank(task.exact.features, x_rank, directions=D_task,
                                                    rows=jacobian_rows)
        rows.append({"task": task.title, "images": len(x_rank), "pixels p": x_rank[0].numel(),
                     "features n": task.model.feature_dim,
                     "rank J: median (min–max)": f"{int(np.median(jr.rank))} ({jr.rank.min()}–{jr.rank.max()})",
                     "largest 'zero' singular value / largest": plotting.sci(jr.gap.max(), 1),
                     "DCT modes with infinite CRB [%]": round(100 * jr.unidentifiable.sum() / D_task.shape[0]
                                                              / len(x_rank), 1)})
    return pd.DataFrame(rows)


def null_direction_steps(task: Task, fractions=(1e-2, 1e-1, 0.9, 2.0)):
    """Steps along a null direction ``v`` of the Jacobian at the task's first evaluated image (from
    ``task.jacobian_rank``), of lengths ``fractions`` times the extent of the linear piece along ``v``
    (:func:`hcr.linear_piece_extent`: the step at which the first ReLU unit changes side): the exact feature change
    relative to the features, and the HCR bound (5)+(12) on the DCT mode that the direction moves most.  Inside the
    piece (fraction < 1) the features must not move; past it they do.  Returns ``(table, mode, extent)``, or
    ``None`` where the Jacobian has full column rank at that image (no null direction) or was not computed."""
    if task.jacobian_rank is None:
        return None
    null_dir = task.jacobian_rank.null_direction[0]  # a unit vector with J v = 0 at the first image
    if null_dir is None:
        return None
    model, theta0 = exact_on_cpu(task), task.x_eval[:1].double().cpu()
    mode = np.argmax(np.abs(hcr.dct_matrix(theta0.shape[-2:]) @ null_dir))
    extent = hcr.linear_piece_extent(model.features, theta0, torch.from_numpy(null_dir))
    feature_norm = float(model.features(theta0).norm())
    rows = []
    for fraction in fractions:
        eps_null = torch.tensor(fraction * extent * null_dir).reshape(theta0.shape)
        _, z_null = hcr.hcr_sd_along(model.features, theta0, eps_null, task.sigma)
        rows.append({"step / linear piece": fraction, "step ‖ε‖": fraction * extent,
                     "‖z_ε‖ / ‖a(θ)‖": np.linalg.norm(z_null) / feature_norm,
                     f"HCR bound on DCT mode {mode} (5)+(12)": float(hcr.hcr_sd_bound(
                         hcr.dct2(eps_null.numpy()), z_null, task.sigma).ravel()[mode])})
    return pd.DataFrame(rows), mode, extent


# ---------------------------------------------------------------------------------------------------------------
# beyond the paper: real attacks on the dithered features
# ---------------------------------------------------------------------------------------------------------------
@dataclass
class Releases:
    """:func:`simulate_releases`'s result: ``theta`` ``(n, ...)`` the released images, ``clean`` their features,
    ``observed`` ``(K n, features)`` the dithered releases (release-major), ``truth`` the matching images,
    ``mean_image`` the mean training image and ``(lo, hi)`` the valid pixel range, all normalised."""

    n: int
    K: int
    theta: torch.Tensor
    clean: torch.Tensor
    observed: torch.Tensor
    truth: torch.Tensor
    mean_image: torch.Tensor
    lo: float
    hi: float


def simulate_releases(task: Task, cfg: Settings, device) -> Releases:
    """The server's view (Sec. 2.2, eq. 7): each of the first (at most 20) evaluated images of a task is released
    ``cfg.releases`` times (``K``) as dithered features ``X = a_theta + Z``, ``Z ~ N(0, sigma^2 I)`` (torch
    generator ``cfg.seed + 7``)."""
    n = min(task.examples, 20)
    K = cfg.releases
    theta = task.x_eval[:n]
    lo = normalised(torch.tensor(0.0), *task.norm).item()
    hi = normalised(torch.tensor(1.0), *task.norm).item()
    noise_gen = torch.Generator().manual_seed(cfg.seed + 7)
    with torch.no_grad():
        clean = task.model.features(theta)
        observed = (clean.unsqueeze(0) + task.sigma * torch.randn((K,) + clean.shape, generator=noise_gen)
                    .to(device)).reshape(K * n, -1)
    truth = theta.unsqueeze(0).expand(K, *theta.shape).reshape(K * n, *theta.shape[1:])
    mean_image = normalised(task.train[0].mean(0, keepdim=True), *task.norm).to(device)
    return Releases(n, K, theta, clean, observed, truth, mean_image, lo, hi)


@dataclass
class Attacks:
    """:func:`run_attacks`'s result: ``reconstructions`` (attack name -> ``(K n, ...)`` images, normalised),
    ``optimised`` (the optimisation attack's :class:`inversion.InversionResult`, with its data loss), the trained
    ``decoder`` and its training ``history``, and the wall-clock ``seconds`` of all three."""

    reconstructions: dict
    optimised: object
    decoder: torch.nn.Module
    history: object
    seconds: float


def run_attacks(task: Task, releases: Releases, cfg: Settings, device) -> Attacks:
    """Three reconstruction attacks on the dithered releases (beyond the paper, which bounds unbiased estimators
    only, eqs. 5-6): Gauss-Newton (three steps of ``x <- x + J^+ (X - a_x)`` from the mean training image, rcond
    1e-3: the locally unbiased estimator); inversion by optimisation (Adam on ``||a_x - X||^2`` in the valid pixel
    range, ``cfg.inversion_steps`` steps); and a decoder trained for ``cfg.decoder_epochs`` on the training images
    with fresh noise of the same sigma (an attacker with a data prior).  The mean training image is the trivial
    guess."""
    feats = task.model.features
    start = time.perf_counter()
    decoder = models.FeatureDecoder(releases.clean.shape[1], tuple(releases.theta.shape[1:]),
                                    generator=torch.Generator().manual_seed(cfg.seed))
    history = inversion.train_decoder(decoder, feats, normalised(task.train[0], *task.norm).to(device),
                                      task.sigma, cfg.decoder_epochs,
                                      generator=torch.Generator().manual_seed(cfg.seed), device=str(device),
                                      progress=False)
    optimised = inversion.invert_by_optimisation(feats, releases.observed, releases.mean_image,
                                                 steps=cfg.inversion_steps, lr=0.05, bounds=(releases.lo, releases.hi))
    reconstructions = {
        "Gauss–Newton (locally unbiased)": inversion.linearised_estimator(feats, releases.observed,
                                                                          releases.mean_image, rcond=1e-3,
                                                                          iterations=3),
        "optimisation (box)": optimised.reconstruction,
        "decoder (trained prior)": inversion.decode(decoder, releases.observed),
        "mean training image": releases.mean_image.expand_as(releases.truth),
    }
    return Attacks(reconstructions, optimised, decoder, history, time.perf_counter() - start)


def attack_errors(task: Task, releases: Releases, attacks: Attacks, bound: np.ndarray):
    """Each attack's error against the HCR bound of Algorithm 1 (``bound``, ``(n, ...)`` per DCT mode): the mean
    squared error, the PSNR (pixels in [0, 1]), and per DCT mode the root-mean-square error over the ``K`` releases
    divided by the bound on that mode (an unbiased attacker cannot go below 1, eq. 5).  Returns ``(table,
    {attack: DCT errors (K, n, ...)})``."""
    shape = releases.theta.shape[1:]
    err_dct = {name: hcr.dct2((rec - releases.truth).reshape(releases.K, releases.n, *shape).double().cpu().numpy())
               for name, rec in attacks.reconstructions.items()}
    rows = []
    sd = task.norm[1]
    for name, e in err_dct.items():
        rmse_mode = np.sqrt(np.mean(e**2, axis=0))  # per example and mode, over the K releases
        rows.append({"attack": name, "MSE [normalised²]": float(np.mean(e**2)),
                     "PSNR [dB]": float(metrics.psnr(releases.truth * sd, attacks.reconstructions[name] * sd,
                                                     data_range=1.0).mean()),
                     "median RMSE / HCR bound": float(np.median(rmse_mode / bound)),
                     "modes below the bound [%]": float(100 * np.mean(rmse_mode < bound))})
    return pd.DataFrame(rows), err_dct


# ---------------------------------------------------------------------------------------------------------------
# paper scale: ImageNet (Sec. 3.3, Figures 5 and 6)
# ---------------------------------------------------------------------------------------------------------------
@dataclass
class ImagenetRun:
    """:func:`imagenet_bounds`'s result: the histogram ``panels`` (all modes and the lowest 32 x 32, per size), the
    noise level ``sigma``, and ``accuracy`` ``(clean, dithered)`` when the images have labels (else ``None``)."""

    panels: dict
    sigma: float
    accuracy: tuple | None


#: The pretrained ImageNet models of Sec. 3.3, keyed as :func:`models.imagenet_split_model` names them.
IMAGENET_MODELS = {"resnet18": "ResNet-18", "swin_t": "Swin-T"}


def imagenet_bounds(name: str, cfg: Settings, device, batch: int = 16) -> ImagenetRun:
    """Sec. 3.3 (Figures 5 and 6): a pretrained torchvision ``name`` (``"resnet18"`` or ``"swin_t"``) split into
    features and head, on ``cfg.imagenet_examples`` validation images at 91 px; ``sigma`` is ``kappa`` times the RMS
    feature over those images (:data:`PAPER_KAPPA`, the authors' code: kappa 2 for ResNet-18, 3 for Swin-T).  HCR
    bounds for ``s = 1/500`` and ``1/1000`` with ``i = 10`` and LSQR capped at ``cfg.lsqr_iter_lim``
    (:func:`hcr.hcr_bound` in chunks of ``batch`` images, one joint LSQR solve per restart: ResNet-18's BatchNorm
    uses the statistics of its batch, as in the authors' code, so the images of a chunk are coupled), and the clean
    and dithered accuracy."""
    net = models.imagenet_split_model(name).to(device)
    images, labels = data.imagenet_val_images(cfg.imagenet_dir, cfg.imagenet_examples, models.imagenet_transform(name),
                                              seed=cfg.seed)
    with torch.no_grad():
        features = torch.cat([net.features(images[b:b + batch].to(device)) for b in range(0, len(images), batch)])
    sigma = hcr.noise_sigma(features, PAPER_KAPPA[IMAGENET_MODELS[name]])
    panels = {}
    for s_inv in PAPER_DIFFDIVS["ImageNet"]:
        bounds = hcr.hcr_bound(net.features, images.to(device), sigma, num_restarts=cfg.num_restarts,
                               num_power_iterations=10, diffdiv=s_inv, solve="per_restart", chunk_size=batch,
                               iter_lim=cfg.lsqr_iter_lim, keep="bounds",
                               generator=torch.Generator(device=device).manual_seed(cfg.seed),
                               progress=True).bound_dct
        panels[f"{name}, s = 1/{s_inv:g}: all"] = bounds
        panels[f"{name}, s = 1/{s_inv:g}: lowest 32×32"] = hcr.low_frequency(bounds, 32)
    accuracy = None
    if labels is not None:
        x_all, y_all = images.to(device), labels.to(device)
        accuracy = (train.accuracy(net, x_all, y_all, batch_size=batch),
                    train.accuracy(net, x_all, y_all, feature_noise=sigma, batch_size=batch))
    return ImagenetRun(panels, sigma, accuracy)


def imagenet_table(runs: dict[str, ImagenetRun]) -> pd.DataFrame:
    """The accuracy of each ImageNet model without and with dithering beside the paper's (Sec. 3.3), one row per
    model with labelled images; a one-row table saying why when there is none."""
    rows = [{"model": name, "clean [%]": round(100 * run.accuracy[0], 1),
             "dithered [%]": round(100 * run.accuracy[1], 1),
             "paper [%]": "{:g} → {:g}".format(*PAPER_ACCURACY[IMAGENET_MODELS[name]])}
            for name, run in runs.items() if run.accuracy is not None]
    if rows:
        return pd.DataFrame(rows)
    why = "not run (needs imagenet_dir at paper scale)" if not runs else "the images carry no labels"
    return pd.DataFrame({"model": [why]})


def imagenet_verdicts(runs: dict[str, ImagenetRun]) -> dict[str, tuple[bool | None, str]]:
    """The ImageNet claims (Sec. 3.3, Figures 5 and 6) decided on :func:`imagenet_bounds`' runs: ``{claim: (holds,
    found)}``, ``holds`` ``None`` where the run does not decide it (no runs; no labels for the accuracy).  Figures 5
    and 6 ("next to no protection") hold when the median per-mode bound is below :data:`NO_PROTECTION` at both
    sizes; the accuracy when both models' clean and dithered accuracy are within 5 points of the paper's."""
    if not runs:
        why = "ImageNet not run: it needs `imagenet_dir` at `paper` scale"
        return {key: (None, why) for key in ("hcr-imagenet-accuracy", "hcr-fig5", "hcr-fig6", "hcr-abstract-imagenet")}
    verdicts, medians = {}, {}
    for name, claim in zip(IMAGENET_MODELS, ("hcr-fig5", "hcr-fig6")):
        medians[name] = [float(np.median(v)) for label, v in runs[name].panels.items() if label.endswith("all")]
        verdicts[claim] = (bool(max(medians[name]) < NO_PROTECTION),
                           f"{IMAGENET_MODELS[name]}: median bound " + ", ".join(f"{m:.3g}" for m in medians[name])
                           + " normalised units at s = " + ", ".join(f"1/{d:g}" for d in PAPER_DIFFDIVS["ImageNet"]))
    verdicts["hcr-abstract-imagenet"] = (verdicts["hcr-fig5"][0] and verdicts["hcr-fig6"][0],
                                         "; ".join(verdicts[c][1] for c in ("hcr-fig5", "hcr-fig6")))
    labelled = {name: run.accuracy for name, run in runs.items() if run.accuracy is not None}
    if len(labelled) < len(IMAGENET_MODELS):
        verdicts["hcr-imagenet-accuracy"] = (None, "the ImageNet images carry no labels")
    else:
        gaps = [abs(100 * ours - paper) for name, acc in labelled.items()
                for ours, paper in zip(acc, PAPER_ACCURACY[IMAGENET_MODELS[name]])]
        verdicts["hcr-imagenet-accuracy"] = (bool(max(gaps) <= 5), "; ".join(
            f"{IMAGENET_MODELS[name]}: {acc[0]:.1%} → {acc[1]:.1%}" for name, acc in labelled.items()))
    return verdicts


# ---------------------------------------------------------------------------------------------------------------
# The scorecard: every result the paper states, decided in the notebook (compendium.scorecard)
# ---------------------------------------------------------------------------------------------------------------
PAPER = "Chaudhuri et al. (2024)"
ERRATA_TABLE = "hcr-errata-table"
#: Rows of the errata table that no claim of the scorecard decides, and why (none).
ERRATA_ELSEWHERE: dict[int, str] = {}
#: The perturbation sizes ``1/s`` of the paper's figures: the main run and the smaller size (Sec. 3.1-3.3).
PAPER_DIFFDIVS = {"MNIST": (200.0, 1000.0), "CIFAR-10": (500.0, 1000.0), "ImageNet": (500.0, 1000.0)}
_IMAGENET = ("needs ImageNet validation images (which cannot ship), torchvision's pretrained weights and a GPU: "
             "`paper` scale with `imagenet_dir`")
#: Figures 5 and 6 show "next to no protection" when the median per-mode bound is below this many normalised units:
#: a tenth of the normalised pixels' standard deviation (about 1, Sec. 3.3), an error the paper calls
#: "perceptually indistinguishable".
NO_PROTECTION = 0.1


def data_text(cfg: Settings) -> tuple[str, str]:
    """What the grayscale and the colour task ran on, with image size and scale, for the scorecard's reasons and
    findings: e.g. ``("scikit-learn's 8×8 digits, `book` scale", "7 photo classes at 16×16, `book` scale")``."""
    gray = "scikit-learn's 8×8 digits" if cfg.gray_data == "digits" else "MNIST's 28×28 digits"
    colour = (f"7 photo classes at {cfg.colour_resolution}×{cfg.colour_resolution}" if cfg.colour_data == "photos"
              else "CIFAR-10 at 32×32")
    return f"{gray}, `{cfg.scale}` scale", f"{colour}, `{cfg.scale}` scale"


def _accuracy(name: str) -> str:
    clean, dithered = PAPER_ACCURACY[name]
    return f"{clean:g} % without dithering and {dithered:g} % with"


def _sizes(name: str) -> str:
    main, limit = PAPER_DIFFDIVS[name]
    return f"$s=1/{main:g}$ and $s=1/{limit:g}$"


def claims(cfg: Settings) -> tuple[Claim, ...]:
    """The paper's results for the scorecard, their reasons naming the data, image size and scale of ``cfg``
    (:func:`data_text`); :data:`CLAIMS` are those of the ``book`` scale."""
    gray, colour = data_text(cfg)
    return (
        Claim("hcr-abstract-small-nets", "Abstract (a)", "headline",
              "The HCR bounds are on the precipice of being effectual for small neural nets on MNIST and CIFAR-10.",
              "{ref}`hcr-paper-scale`", IN_SHAPE,
              reason="MNIST and CIFAR-10 run at `paper` scale only (downloads, a GPU): there the histogram modes "
                     "of the MLP's and the CNN's bounds are within a factor of 2 of the paper's Figures 1 and 3"),
        Claim("hcr-abstract-imagenet", "Abstract (b)", "headline",
              "The HCR bounds are insufficient on their own for ResNet-18 and Swin-T pretrained on ImageNet.",
              "{ref}`hcr-paper-scale`", IN_SHAPE,
              reason=f"{_IMAGENET}; there both models' median bound is below {NO_PROTECTION:g} normalised units"),
        Claim("hcr-abstract-accuracy", "Abstract (c)", "headline",
              "The added noise incurs little degradation in the accuracy of classification.",
              "{ref}`hcr-experiments`", DIFFERS, erratum=7),
        Claim("hcr-tight", "Sec. 1", "statement", "The HCR bounds are typically tight.", "{prf:ref}`hcr-alg1`",
              DIFFERS, erratum=3),
        Claim("hcr-crb-limit", "Sec. 1, Sec. 2.4", "statement",
              "The Cramér–Rao bound is a limit of the HCR bound as the perturbation $\\varepsilon$ shrinks.",
              "{prf:ref}`hcr-prop-crb`", REPRODUCED),
        Claim("hcr-thm-hcr", "Sec. 2.1, eqs. (1)–(4)", "theorem",
              "$\\operatorname{Var}_\\theta(\\hat\\theta_k)\\ge(g_k(\\theta+\\varepsilon)-g_k(\\theta))^2/"
              "\\mathbb E_\\theta[(f_{\\theta+\\varepsilon}(X)/f_\\theta(X)-1)^2]$ for every estimator and every "
              "$\\varepsilon$.", "{prf:ref}`hcr-thm-hcr`", REPRODUCED),
        Claim("hcr-cor-unbiased", "Sec. 2.1, eqs. (5)–(6)", "theorem",
              "For an unbiased estimator "
              "$\\operatorname{Var}_\\theta(\\hat\\theta_k)\\ge\\varepsilon_k^2/\\chi^2$, and its mean square error "
              "is at least $\\frac1p\\lVert\\varepsilon\\rVert^2/\\chi^2$.",
              "{prf:ref}`hcr-cor-unbiased`", REPRODUCED),
        Claim("hcr-alg1", "Sec. 2.2, Algorithm 1", "statement",
              "Repeated LSQR solves through the Jacobian, each followed by an exact forward pass, give a perturbation "
              "$\\varepsilon$ and its feature change $z_\\varepsilon$.", "{prf:ref}`hcr-alg1`", REPRODUCED),
        Claim("hcr-minimise", "Sec. 2.2", "statement",
              "Repeating the LSQR step ($i=10$ times, say) approximately minimises "
              "$\\lVert z_\\varepsilon\\rVert/\\lVert\\varepsilon\\rVert$.", "{prf:ref}`hcr-alg1`", DIFFERS, erratum=2),
        Claim("hcr-any-eps", "Sec. 2.2", "statement",
              "Any approximation whatsoever to the ideal $\\varepsilon$ yields a perfectly rigorous guarantee, with "
              "$z_\\varepsilon$ the exact feature change of the $\\varepsilon$ used.", "{ref}`hcr-bounds`", REPRODUCED),
        Claim("hcr-prop-gauss", "Sec. 2.3, eqs. (7)–(12); App. A", "theorem",
              "For Gaussian dithering the denominator of (5) is "
              "$\\exp(\\lVert z_\\varepsilon\\rVert^2/\\sigma^2)-1$.", "{prf:ref}`hcr-prop-gauss`", REPRODUCED),
        Claim("hcr-eq18", "Sec. 2.4, eqs. (13)–(18)", "statement",
              "As $\\varepsilon\\to0$ along coordinate $k$ the HCR bound becomes, exactly, the Cramér–Rao bound "
              "$\\sigma^2/\\sum_j(\\partial(z_\\varepsilon)_j/\\partial\\varepsilon_k)^2$ (18), by (17) also "
              "$\\sigma^2/\\sum_j1/(\\partial\\varepsilon_k/\\partial(z_\\varepsilon)_j)^2$.",
              "{prf:ref}`hcr-prop-crb`", DIFFERS, erratum=1),
        Claim("hcr-mnist-mean", "Sec. 3.1", "statement",
              f"MNIST is normalised by subtracting the overall mean {PAPER_PRINTED_MNIST_MEAN:.4f}.",
              "{ref}`hcr-experiments`", DIFFERS, erratum=5),
        Claim("hcr-mnist-accuracy", "Sec. 3.1", "statement",
              f"The MNIST MLP's test accuracy is {_accuracy('MNIST')}.", "{ref}`hcr-experiments`", IN_SHAPE,
              reason=f"the grayscale MLP trains (to {cfg.gray_min_accuracy:.0%} or more) and dithering costs it "
                     f"at most {100 * cfg.max_dithering_cost:.0f} points ({gray})"),
        Claim("hcr-sizes", "Sec. 3.1–3.3", "statement",
              f"The smaller size $s=1/{PAPER_DIFFDIVS['MNIST'][1]:g}$ is close to the limit in which the HCR bounds "
              "become Cramér–Rao bounds.", "{ref}`hcr-bounds`", DIFFERS, erratum=4),
        Claim("hcr-finite", "Sec. 2.2, Sec. 3", "statement",
              "The finite per-mode bounds of Algorithm 1 quantify how well an unbiased estimator can reconstruct the "
              "input.", "{ref}`hcr-null-space`", DIFFERS, erratum=9),
        Claim("hcr-fig1", "Figure 1", "figure",
              f"Histograms of the bounds on every DCT mode of MNIST's test images at {_sizes('MNIST')}, all modes and "
              f"the lowest 8×8, peaking near {PAPER_FIGURE_MODES['MNIST']['unfiltered']:g} and "
              f"{PAPER_FIGURE_MODES['MNIST']['filtered']:g} normalised units at the larger size.",
              "{numref}`hcr-fig-histograms-gray`", IN_SHAPE,
              reason=f"the smaller size gives the larger median bound, as in the paper's panels ({gray})"),
        Claim("hcr-fig2", "Figure 2", "figure",
              "Reconstructions of three examples from MNIST's test set, at both sizes, beside the unperturbed image.",
              "{numref}`hcr-fig-bound-visual-gray`", DIFFERS, erratum=6),
        Claim("hcr-cifar-accuracy", "Sec. 3.2", "statement",
              f"The CIFAR-10 CNN's test accuracy is {_accuracy('CIFAR-10')}.", "{ref}`hcr-experiments`", IN_SHAPE,
              reason=f"at one κ the colour CNN loses more accuracy to dithering than the grayscale MLP, as CIFAR-10 "
                     f"does against MNIST in the paper ({colour} against {gray})"),
        Claim("hcr-fig3", "Figure 3", "figure",
              f"Histograms of the bounds on every DCT mode of CIFAR-10 test images at {_sizes('CIFAR-10')}, all modes "
              f"and the lowest 8×8, peaking near {PAPER_FIGURE_MODES['CIFAR-10']['unfiltered']:g} and "
              f"{PAPER_FIGURE_MODES['CIFAR-10']['filtered']:g} normalised units at the larger size.",
              "{numref}`hcr-fig-histograms-colour`", IN_SHAPE,
              reason=f"the lowest-frequency modes have the larger median bound at both sizes, as in the paper's "
                     f"panels ({colour})"),
        Claim("hcr-fig4", "Figure 4", "figure",
              "Reconstructions of three examples from CIFAR-10's test set, at both sizes, beside the unperturbed "
              "image.", "{numref}`hcr-fig-bound-visual-colour`", DIFFERS, erratum=6),
        Claim("hcr-imagenet-accuracy", "Sec. 3.3.1–3.3.2", "statement",
              f"ResNet-18's top-1 accuracy is {_accuracy('ResNet-18')}; Swin-T's is {_accuracy('Swin-T')}.",
              "{ref}`hcr-paper-scale`", IN_SHAPE,
              reason=f"{_IMAGENET}; there both models' clean and dithered accuracies are within 5 points of the "
                     "paper's"),
        Claim("hcr-fig5", "Figure 5", "figure",
              f"Histograms of the bounds on the DCT modes of ImageNet validation images for ResNet-18 at "
              f"{_sizes('ImageNet')}: next to no protection.", "{numref}`hcr-fig-imagenet-resnet18`", IN_SHAPE,
              reason=f"{_IMAGENET}; there the median bound is below {NO_PROTECTION:g} normalised units at both sizes"),
        Claim("hcr-fig6", "Figure 6", "figure",
              f"Histograms of the bounds on the DCT modes of ImageNet validation images for Swin-T at "
              f"{_sizes('ImageNet')}: effectively no protection.", "{numref}`hcr-fig-imagenet-swin-t`", IN_SHAPE,
              reason=f"{_IMAGENET}; there the median bound is below {NO_PROTECTION:g} normalised units at both sizes"),
        Claim("hcr-conclusion", "Sec. 4", "headline",
              "In the presence of noise, the HCR bounds rigorously limit the quality of the reconstruction.",
              "{numref}`hcr-fig-attack-ratio`", DIFFERS, erratum=8),
    )


CLAIMS = claims(Settings(scale="book", device="cpu", seed=0, **SCALES["book"]))
