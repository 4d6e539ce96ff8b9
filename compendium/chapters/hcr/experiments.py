"""The HCR chapter's experiments: the data, the three classifiers and their dithered accuracy, the HCR bounds of
Algorithm 1 on their test images, the Jacobians' null space, the real attacks on the dithered features, and the
ImageNet runs of the paper scale."""
from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from torch import nn

from compendium import base, data, models, plotting, train
from compendium.attacks import feature_inversion as inversion
from compendium.bounds import hcr
from compendium.chapters.hcr.settings import (
    CIFAR_CLASSES,
    GRAY_DATA,
    IMAGENET_MODELS,
    PAPER_ACCURACY,
    PAPER_DIFFDIVS,
    PAPER_FIGURE_MODES,
    PAPER_KAPPA,
    Settings,
)

# ---------------------------------------------------------------------------------------------------------------
# the data
# ---------------------------------------------------------------------------------------------------------------
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

    The grayscale task: scikit-learn's 8x8 digits (``gray_data="digits"``, ``data.digits``; normalised by the
    training split's pixel mean and sd, 0.3054 / 0.3759 for seed 0), the 10,000 real MNIST digits shipped with the
    package (``"mnist_digits"``, ``data.mnist_digits``: 8,000 to train, 2,000 to test) or all of MNIST (``"mnist"``,
    ``data.mnist``, downloaded into ``cfg.data_dir``), both MNIST sets normalised by the usual 0.1307 / 0.3081
    (Sec. 3.1).  The colour task: crops of 7 bundled photographs (``data.photo_classes``) for CIFAR-10, or CIFAR-10
    (``data.cifar10``, downloaded).  Colour inputs are mapped to ``2x - 1`` as in the paper (Sec. 3.2).
    """
    root = base.in_repository(cfg.data_dir)
    if cfg.gray_data == "digits":
        gray_train, gray_test = data.digits("train", cfg.seed), data.digits("test", cfg.seed)
        gray_norm = (float(gray_train[0].mean()), float(gray_train[0].std()))
    elif cfg.gray_data == "mnist_digits":
        gray_train, gray_test = data.mnist_digits("train", cfg.seed), data.mnist_digits("test", cfg.seed)
        gray_norm = models.MNIST_NORMALIZATION
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
            title=f"{GRAY_DATA[cfg.gray_data]} MLP", paper_name="MNIST", norm=d.gray_norm, train=d.gray_train,
            test=d.gray_test,
            model=models.MnistMLP(1, side_gray, 10, hidden=cfg.gray_hidden,
                                  generator=torch.Generator().manual_seed(cfg.seed)),
            epochs=cfg.gray_epochs, kappa=cfg.gray_kappa, diffdivs=cfg.gray_diffdivs, low=cfg.gray_low_freq,
            examples=cfg.gray_examples, iterations=(i_max, i_max),
            paper_acc=PAPER_ACCURACY["MNIST"], paper_kappa=PAPER_KAPPA["MNIST"],
            paper_modes=_paper_modes("MNIST"),
            paper_sd=models.MNIST_NORMALIZATION[1]),
        "gray_cnn": Task(
            title=f"{GRAY_DATA[cfg.gray_data]} CNN", paper_name=None, norm=d.gray_norm, train=d.gray_train,
            test=d.gray_test,
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
            paper_modes=_paper_modes("CIFAR-10"), paper_sd=models.CIFAR_NORMALIZATION[1]),
    }


def _paper_modes(name: str) -> dict[str, tuple[float, float]]:
    """The modes of the paper's figure for data set ``name`` (:data:`PAPER_FIGURE_MODES`) keyed by run: ``{"main":
    (unfiltered, filtered), "limit": (...)}`` at the paper's two sizes."""
    return {label: tuple(PAPER_FIGURE_MODES[name][s_inv].values())
            for label, s_inv in zip(("main", "limit"), PAPER_DIFFDIVS[name])}


def train_tasks(tasks: dict[str, Task], cfg: Settings, device) -> pd.DataFrame:
    """Trains each task's classifier with the paper's recipe (AdamW, learning rate 1e-3, batch 32; Sec. 3) and sets
    its noise level and accuracies; returns the accuracy table (one row per task).

    Each :class:`Task` gains ``x_test``/``y_test`` (normalised, on ``device``), ``train_seconds``, ``exact`` (a float64
    copy of the model, for the exact forward passes that make each bound rigorous), ``x_eval`` (the first
    ``examples`` test images, the ones bounded), ``sigma`` (``kappa`` times the RMS feature over the test set: the
    authors' code's rule, which the paper never states) and ``accuracy`` ``(clean, dithered)``, the dithered one the
    mean over 25 noise draws (as in the authors' code).

    With ``cfg.checkpoint_dir`` each training checkpoints into :func:`classifier_checkpoint` (:func:`train.fit`: it
    resumes bit for bit, and a finished training is loaded, not repeated; ``train_seconds`` is then the loading's)."""
    acc_rows = []
    for key, task in tasks.items():
        x_train = normalised(task.train[0], *task.norm)
        task.x_test = normalised(task.test[0], *task.norm).to(device)
        task.y_test = task.test[1].to(device)
        start = time.perf_counter()
        # shuffles drawn on the CPU, so that a run on a GPU trains on the book's batches
        checkpoint = classifier_checkpoint(key, task, cfg, device, x_train)
        train.train_classifier(task.model, (x_train.to(device), task.train[1].to(device)), task.epochs,
                               generator=torch.Generator().manual_seed(cfg.seed), device=str(device),
                               progress=False, checkpoint=checkpoint)
        task.train_seconds = time.perf_counter() - start
        model = task.model.eval().requires_grad_(False)
        task.exact = hcr.float64_copy(model)
        task.x_eval = task.x_test[:task.examples]
        # kappa x RMS feature over the test set (the code's RMS is over its thousands of evaluated examples)
        with torch.no_grad():
            features = model.features(task.x_test)
        task.sigma = hcr.noise_sigma(features, task.kappa)
        clean = train.accuracy(model, task.x_test, task.y_test)
        dithered = dithered_accuracy(task, task.sigma, seed=cfg.seed, features=features)
        task.accuracy = (clean, dithered)
        acc_rows.append({"task": task.title, "train [s]": round(task.train_seconds, 1), "κ": task.kappa,
                         "σ": round(task.sigma, 4), "clean [%]": round(100 * clean, 1),
                         "dithered [%]": round(100 * dithered, 1),
                         "paper [%]": "not in the paper" if task.paper_acc is None else
                                      f"{task.paper_name}, κ = {task.paper_kappa:g}: "
                                      f"{task.paper_acc[0]:g} → {task.paper_acc[1]:g}"})
    return pd.DataFrame(acc_rows)


def classifier_checkpoint(key: str, task: Task, cfg: Settings, device, x_train: torch.Tensor) -> Path | None:
    """The training checkpoint of task ``key``'s classifier under ``cfg.checkpoint_dir``
    (``<key>-classifier-<digest>.pt``; ``None`` when ``cfg.checkpoint_dir`` is ``None``), to be called before the
    training: the digest (:func:`base.digest`) covers the untrained model (its class and ``state_dict``), the
    normalised training images and labels, the epochs, the seed, the recipe and the device type, so that a run on
    other data or settings never resumes from it."""
    if cfg.checkpoint_dir is None:
        return None
    identity = {"task": key, "model": type(task.model).__qualname__, "state": list(task.model.state_dict()),
                "epochs": task.epochs, "seed": cfg.seed, "recipe": ["adamw", 1e-3, 32],
                "device": torch.device(device).type}
    name = base.digest(identity, *task.model.state_dict().values(), x_train, task.train[1])
    return checkpoint_folder(cfg) / f"{key}-classifier-{name}.pt"


def checkpoint_folder(cfg: Settings, sub: str = "") -> Path | None:
    """``cfg.checkpoint_dir`` (in the repository unless absolute) or its sub-folder ``sub``; ``None`` when it is
    ``None``."""
    return None if cfg.checkpoint_dir is None else base.in_repository(cfg.checkpoint_dir) / sub


def dithered_accuracy(task: Task, sigma: float, *, seed: int, draws: int = 25, features=None,
                      batch_size: int = 1024) -> float:
    """The accuracy of a trained task's classifier on its test set with Gaussian noise of standard deviation
    ``sigma`` added to the features, the mean over ``draws`` noise draws (as in the authors' code): draw ``r``
    predicts ``head(a + sigma Z)`` with ``Z`` drawn on the CPU from ``torch.Generator().manual_seed(seed + r)``, batch
    by batch (the draws of :func:`compendium.train.accuracy`).  The features ``a`` of the test set (``features``, or
    computed here) are computed once for all draws."""
    model = task.model.eval()
    with torch.no_grad():
        a = model.features(task.x_test) if features is None else features
        correct = []
        for r in range(draws):
            generator, hits = torch.Generator().manual_seed(seed + r), 0
            for start in range(0, len(a), batch_size):
                z = a[start:start + batch_size]
                noise = torch.randn(z.shape, generator=generator, dtype=z.dtype).to(z.device)
                hits += int((model.head(z + sigma * noise).argmax(1) == task.y_test[start:start + batch_size]).sum())
            correct.append(hits / len(a))
    return float(np.mean(correct))


def kappa_sweep(tasks: dict[str, Task], kappas, *, seed: int) -> pd.DataFrame:
    """What each noise level costs: every trained task's clean accuracy and its dithered accuracy (in percent) at
    ``sigma = kappa x`` RMS feature for each ``kappa``, the rule by which the authors' code (and this chapter) sets
    the noise; the paper reports one point of this trade-off per data set."""
    rows = []
    for key, task in tasks.items():
        with torch.no_grad():
            features = task.model.features(task.x_test)
        row = {"task": task.title, "key": key, "clean [%]": 100 * task.accuracy[0]}
        for kappa in kappas:
            row[f"κ = {kappa:g} [%]"] = 100 * dithered_accuracy(task, hcr.noise_sigma(features, kappa), seed=seed,
                                                                 features=features)
        rows.append(row)
    return pd.DataFrame(rows)


def run_hcr(task: Task, cfg: Settings, device, diffdiv: float, iterations: int, examples: int | None = None,
            **kwargs) -> hcr.HCRResult:
    """Algorithm 1 and the per-DCT-mode HCR bound (:func:`hcr.hcr_bound`) on a task's evaluated images (the first
    ``examples`` of them; ``None``: all), with
    ``cfg.num_restarts`` draws, size ``s = 1/diffdiv``, ``iterations`` repetitions and LSQR capped at
    ``cfg.lsqr_iter_lim``, float32 Jacobian products and float64 exact forward passes; the result keeps the first
    draw's per-draw arrays only (``keep="first"``) and carries its wall-clock time as ``seconds``.  With
    ``cfg.checkpoint_dir`` each finished chunk of images is saved under its ``bounds`` folder and read back on a rerun
    (``hcr_bound``'s ``checkpoint``: the files' digests tell the runs apart)."""
    start = time.perf_counter()
    # the noise drawn on the CPU (hcr_bound moves it), so that a run on a GPU bounds the book's draws
    res = hcr.hcr_bound(task.model.features, task.x_eval[:examples], task.sigma, num_restarts=cfg.num_restarts,
                        num_power_iterations=iterations, diffdiv=diffdiv,
                        generator=torch.Generator().manual_seed(cfg.seed), iter_lim=cfg.lsqr_iter_lim,
                        exact_map=task.exact.features, keep="first", checkpoint=checkpoint_folder(cfg, "bounds"),
                        **kwargs)
    res.seconds = time.perf_counter() - start
    return res


def run_bounds(tasks: dict[str, Task], cfg: Settings, device) -> dict:
    """Every HCR run of the chapter (Sec. 3, Figures 1 and 3), keyed ``(task, label)``: for each task the main run
    (the first ``diffdivs`` size, the first ``iterations``) and the ``--limit`` run of the authors' code (the second
    size) on all its bounded images; on the first ``cfg.sweep_examples`` of them (all: ``None``) the sweep over
    fewer repetitions ``i`` (``"i=<i>"``, at the main size), and for the grayscale task the two sizes with one fixed
    LSQR tolerance (``"fixed atol, main s"``/``"fixed atol, limit s"``: the authors' value ``0.02 sigma s`` at the
    main size),
    which separates the tolerance from the size."""
    runs = {}
    for key, task in tasks.items():
        (s_main, s_limit), (i_main, i_limit) = task.diffdivs, task.iterations
        runs[key, "main"] = run_hcr(task, cfg, device, s_main, i_main)
        runs[key, "limit"] = run_hcr(task, cfg, device, s_limit, i_limit)
        for i in cfg.power_iterations:
            if i < i_main:  # the sweep below the main run's repetitions
                runs[key, f"i={i}"] = run_hcr(task, cfg, device, s_main, i, cfg.sweep_examples)
    gray = tasks["gray"]
    fixed_atol = 0.02 * gray.sigma / gray.diffdivs[0]  # the code's value at the main size
    for label, s_inv in zip(("fixed atol, main s", "fixed atol, limit s"), gray.diffdivs):
        runs["gray", label] = run_hcr(gray, cfg, device, s_inv, gray.iterations[0], cfg.sweep_examples,
                                      lsqr_atol=fixed_atol)
    return runs


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
    """The server's view (Sec. 2.2, eq. 7): each of the first ``cfg.attack_images`` evaluated images of a task is
    released ``cfg.releases`` times (``K``) as dithered features ``X = a_theta + Z``, ``Z ~ N(0, sigma^2 I)`` (torch
    generator ``cfg.seed + 7``)."""
    n = min(task.examples, cfg.attack_images)
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



def imagenet_bounds(name: str, cfg: Settings, device, batch: int = 16) -> ImagenetRun:
    """Sec. 3.3 (Figures 5 and 6): a pretrained torchvision ``name`` (``"resnet18"`` or ``"swin_t"``) split into
    features and head, on ``cfg.imagenet_examples`` validation images at 91 px; ``sigma`` is ``kappa`` times the RMS
    feature over those images (:data:`PAPER_KAPPA`, the authors' code: kappa 2 for ResNet-18, 3 for Swin-T).  HCR
    bounds for ``s = 1/500`` and ``1/1000`` with ``i = 10`` and LSQR capped at ``cfg.lsqr_iter_lim``
    (:func:`hcr.hcr_bound` in chunks of ``batch`` images, one joint LSQR solve per restart: ResNet-18's BatchNorm
    uses the statistics of its batch, as in the authors' code, so the images of a chunk are coupled), and the clean
    and dithered accuracy.  With ``cfg.checkpoint_dir`` each finished chunk is saved under its ``imagenet`` folder
    and read back on a rerun (``hcr_bound``'s ``checkpoint``)."""
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
                               iter_lim=cfg.lsqr_iter_lim, keep="first", checkpoint=checkpoint_folder(cfg, "imagenet"),
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


