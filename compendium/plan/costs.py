"""Each chapter's planner: from its settings to its costly steps (counts times seconds per unit), peak GPU memory,
host RAM and disk, registered with :func:`compendium.plan.steps.planner`."""
from __future__ import annotations

import math
from dataclasses import dataclass

from compendium import chapters
from compendium.base import plural
from compendium.plan.machines import FLOPS_EFFICIENCY, MEASURED, flops_seconds, measured
from compendium.plan.steps import Need, Step, planner

#: Bytes of a float32 / float64 value.
F32, F64 = 4, 8
#: Tensors of an image batch's size that an opacus step holds at once (estimate: the batch, its per-sample gradients,
#: the noise and the reconstruction).
OPACUS_COPIES = 4
#: The measured DP-SGD step's image side; below it a step's fixed cost dominates (estimate: no faster below).
ZILLER_SIDE = 224
#: A JPEG of ImageNet's validation set, on average: 6.4 GB over 50,000 files (ILSVRC2012_img_val.tar).
IMAGENET_JPEG_BYTES = 6.4e9 / 50_000
#: AlexNet's LPIPS weights, downloaded once into torch's cache (the torchvision checkpoint, 233 MB).
LPIPS_ALEX_BYTES = 233e6
#: The clipping norms of the Ziller chapter's Figure 3 (``figure3_clip_norms`` returns four).
FIGURE3_CLIP_NORMS = 4
#: Values per Monte-Carlo release of the image chapters' distributional checks (their largest sample, ``N = 50``),
#: and the arrays of that size they hold at once (estimate: releases, metric, a sorted copy).
MC_VALUES, MC_ARRAYS = 50, 3


def _dp_sgd_seconds(side: int) -> tuple[float, str]:
    """Seconds of one opacus DP-SGD step of the linear-layer attack on one 3 x side x side image: the measured step at
    224 x 224, scaled by the pixels above that size (the work is linear in the pixels), not below it."""
    seconds, basis = measured("Ziller: 15,000 DP-SGD steps on 224x224 images")
    if side == ZILLER_SIDE:
        return seconds, basis
    scale = max(1.0, (side / ZILLER_SIDE) ** 2)
    return seconds * scale, f"estimate: {basis} x {scale:.3g} (pixels; no faster below {ZILLER_SIDE}²)"


def _opacus_batch_bytes(images: int, side: int) -> float:
    """GPU bytes of a batch of ``images`` RGB images of ``side`` pixels through opacus (:data:`OPACUS_COPIES`)."""
    return OPACUS_COPIES * images * 3 * side**2 * F32


def _images_disk(cfg) -> tuple[tuple[str, float], ...]:
    """The ImageNet JPEGs the chapter reads (when it reads ImageNet) and LPIPS's weights (when asked for; downloaded
    only where the ``lpips`` extra is installed, which the label says: without it the chapter computes no LPIPS)."""
    parts = []
    if cfg.image_source == "imagenet":
        parts.append((f"{cfg.n_images} ImageNet JPEGs", cfg.n_images * IMAGENET_JPEG_BYTES))
    if cfg.use_lpips:
        parts.append(("LPIPS weights, with the lpips extra", LPIPS_ALEX_BYTES))
    return tuple(parts)


@planner("ziller2024")
def _ziller(cfg):
    """Ziller et al.: one opacus DP-SGD step per reconstruction (:func:`_dp_sgd_seconds`): Figures 1 and 4's
    ``n_images x |sigmas| x |clip_norms|``, Figure 3's ``4 x |sigmas| x fig3_draws`` at each of ``fig3_resolutions``,
    and ``n_opacus`` for the observation-model test.  GPU memory: the larger opacus batch; RAM: the Monte-Carlo
    draws; disk: the ImageNet JPEGs and LPIPS's weights."""
    grid = cfg.n_images * len(cfg.sigmas) * len(cfg.clip_norms)
    seconds, basis = _dp_sgd_seconds(cfg.resolution)
    steps = [Step(f"Figures 1, 4: {cfg.resolution}² images", grid, "DP-SGD steps", seconds, basis,
                  "n_images x sigmas x clip_norms")]
    for side in cfg.fig3_resolutions:
        seconds, basis = _dp_sgd_seconds(side)
        steps.append(Step(f"Figure 3: {side}² image", FIGURE3_CLIP_NORMS * len(cfg.sigmas) * cfg.fig3_draws,
                          "DP-SGD steps", seconds, basis, "sigmas x fig3_draws (four clipping norms)"))
    seconds, basis = _dp_sgd_seconds(cfg.resolution)
    steps.append(Step("observation-model test", cfg.n_opacus, "DP-SGD steps", seconds, basis, "n_opacus"))
    steps.append(Step("Prop. 4 averages (T = 1, 10, 100)", cfg.averaging_draws * 111, "DP-SGD steps", seconds, basis,
                      "averaging_draws x 111"))
    side = max(cfg.fig3_resolutions)
    gpu = Need((("Figure 3 batch", _opacus_batch_bytes(cfg.fig3_draws, side)),
                ("Figure 1 batch", _opacus_batch_bytes(cfg.n_images, cfg.resolution))),
               f"fig3_draws={cfg.fig3_draws} at fig3_resolutions={cfg.fig3_resolutions}: reduce them")
    ram = Need((("Monte-Carlo draws", MC_ARRAYS * cfg.n_mc * MC_VALUES * F64),), f"n_mc={cfg.n_mc}: reduce it")
    disk = Need(_images_disk(cfg), "point imagenet_dir at a larger disk", summed=True)
    return steps, gpu, ram, disk, cfg.imagenet_dir or "data"


def _cpu_step(key: str, name: str, count: float, book_count: float, unit: str, parameter: str) -> Step:
    """A step that runs on the CPU at any device: ``count`` units at the chapter's measured ``book``-scale time
    (``SECONDS["book"]``) over the ``book_count`` units it did there (an estimate: the whole chapter's time put on this
    step, an upper bound)."""
    seconds = chapters.chapter(key).seconds["book"] / book_count
    return Step(name, count, unit, seconds, f"estimate: the book run's {chapters.chapter(key).seconds['book']} s "
                f"(SECONDS) over its {book_count:,.0f} {unit}", parameter, on_cpu=True)


def _accounted_steps(sigmas, rates, steps) -> int:
    """DP-SGD steps accounted on a grid: ``|sigmas| |rates| sum(steps)``."""
    return len(sigmas) * len(rates) * sum(steps)


def _variance_table_rows(clip_ratio: float) -> int:
    """The rows of one draw of the From-Mean-to-Extreme variance table: ``M = 1``, the printed ``ceil(r)``, ``M* =
    ceil(r^2)``, ``4 M*`` and one row with a loss scale, ``r`` the clipping bound over the image's norm."""
    m_star = math.ceil(clip_ratio**2)
    return 1 + math.ceil(clip_ratio) + m_star + 4 * m_star + 1


@planner("mean_to_extreme")
def _mean_to_extreme(cfg):
    """From Mean to Extreme: Figure 4's ``n_images x |fig4_sigmas|`` opacus steps of ten rows, the variance table's
    ``variance_draws`` reconstructions with ``1 + M + M* + 4 M* + 1`` rows (:func:`_variance_table_rows`), the ratio
    attack's ``ratio_rows`` rows and as many one-row steps, Figure 5's ``3 x fig5_draws`` steps (each a step of one
    row on a ``resolution``-sided image, whose cost a row scales), and the exact prior-aware bound under subsampling
    on the CPU (:func:`_cpu_step` over :func:`_accounted_steps`).  Memory as the Ziller chapter's."""
    module = chapters.chapter("mean_to_extreme").module
    book = module.settings("book", device="cpu")
    seconds, basis = _dp_sgd_seconds(cfg.resolution)
    steps = [Step(f"Figure 4: {cfg.resolution}² images", cfg.n_images * len(cfg.fig4_sigmas) * 10, "DP-SGD row-steps",
                  seconds, basis, "n_images x fig4_sigmas x 10 rows"),
             Step("variance table", cfg.variance_draws * _variance_table_rows(cfg.variance_clip_ratio),
                  "DP-SGD row-steps", seconds, basis, "variance_draws x rows (variance_clip_ratio)"),
             Step("ratio attack", 2 * cfg.ratio_rows, "DP-SGD row-steps", seconds, basis, "2 x ratio_rows"),
             Step("Figure 5", 3 * cfg.fig5_draws, "DP-SGD steps", seconds, basis, "3 x fig5_draws"),
             _cpu_step("mean_to_extreme", "exact bound under subsampling",
                       _accounted_steps(cfg.subsampling_sigmas, cfg.subsampling_sample_rates, cfg.subsampling_steps),
                       _accounted_steps(book.subsampling_sigmas, book.subsampling_sample_rates,
                                        book.subsampling_steps),
                       "accounted steps", "subsampling_sigmas x subsampling_sample_rates x subsampling_steps")]
    gpu = Need((("Figure 4 batch", _opacus_batch_bytes(cfg.n_images, cfg.resolution)),
                ("opacus reconstructions", _opacus_batch_bytes(cfg.n_opacus, 16))),
               f"n_images={cfg.n_images} at resolution={cfg.resolution}: reduce them")
    ram = Need((("Monte-Carlo draws", MC_ARRAYS * cfg.n_mc * MC_VALUES * F64),), f"n_mc={cfg.n_mc}: reduce it")
    return steps, gpu, ram, Need(_images_disk(cfg), "point imagenet_dir at a larger disk", summed=True), (
        cfg.imagenet_dir or "data")


def _attack_values(settings, trials: int) -> float:
    """Per-sample gradient values that the calculator's prior-aware attack computes
    (:func:`compendium.attacks.prior_aware.run_prior_aware_attack`, all ``trials`` trainings of a setting in one model
    of ``trials / kappa`` weights): ``sum over (sigma, q, T, kappa) of T (q trials + 1) trials / kappa``."""
    return sum(steps * (q * trials + 1) * trials * round(1 / kappa) for _, q, steps, kappa in settings)


@planner("calculator")
def _calculator(cfg):
    """The calculator page, both steps on the CPU: the exact bound against the authors' Edgeworth approximation on its
    grid (:func:`_accounted_steps`), and the prior-aware attack against opacus' DP-SGD (:func:`_attack_values`).
    Seconds per unit from the book run: the attack's measured share (the module's ``ATTACK_SECONDS``) over its
    values, the rest of ``SECONDS["book"]`` over the accounted steps (an upper bound: every other cell counted there).
    RAM: the attack's dense inputs ``(trials + 1) trials / kappa`` and three batch-sized copies (the batch, its
    per-sample gradients, their clipped sum) in float32 (estimate; 0.84 GB measured at 2,000 trials, q = 0.5,
    kappa = 0.05), or the likelihood-ratio check's two arrays of ``mc_draws`` float64 values."""
    module = chapters.chapter("calculator").module
    book = module.settings("book", device="cpu")
    attack_seconds, total = module.ATTACK_SECONDS["book"], module.SECONDS["book"]
    book_steps = _accounted_steps(book.edgeworth_sigmas, book.edgeworth_sample_rates, book.edgeworth_steps)
    book_values = _attack_values(book.attack_settings, book.attack_trials)
    steps = [Step("exact bound against Edgeworth",
                  _accounted_steps(cfg.edgeworth_sigmas, cfg.edgeworth_sample_rates, cfg.edgeworth_steps),
                  "accounted steps", (total - attack_seconds) / book_steps,
                  f"estimate: the book run's {total} s (SECONDS) less the attack's {attack_seconds} s, over its "
                  f"{book_steps:,.0f} accounted steps", "edgeworth_sigmas x edgeworth_sample_rates x edgeworth_steps",
                  on_cpu=True),
             Step("prior-aware attack against DP-SGD", _attack_values(cfg.attack_settings, cfg.attack_trials),
                  "per-sample gradient values", attack_seconds / book_values,
                  f"estimate: the book run's attack, {attack_seconds} s (ATTACK_SECONDS), over its "
                  f"{book_values:.3g} per-sample gradient values", "attack_settings x attack_trials", on_cpu=True)]
    trials = cfg.attack_trials
    attack_bytes = max(((trials + 1) + 3 * (q * trials + 1)) * trials * round(1 / kappa) * F32
                       for _, q, _, kappa in cfg.attack_settings)
    ram = Need((("likelihood-ratio draws", 2 * cfg.mc_draws * F64), ("prior-aware attack", attack_bytes)),
               f"mc_draws={cfg.mc_draws}, attack_trials={trials}: reduce them")
    return steps, Need((), "none"), ram, Need((), "none"), "."


# ---------------------------------------------------------------------------------------------------------------
# counting work of a network: forward multiply-accumulates on the meta device (no memory, no weights)
# ---------------------------------------------------------------------------------------------------------------
def forward_macs(model, shape: tuple[int, ...]) -> float:
    """Multiply-accumulates of one forward pass of ``model`` (built on the ``meta`` device) on one input of ``shape``
    (without the batch axis): ``weights x output positions`` of every convolution and linear layer."""
    import torch

    total = [0.0]

    def count(module, _, output):
        positions = output.numel() / output.shape[1] if isinstance(module, torch.nn.Conv2d) else (
            output.numel() / output.shape[-1])
        total[0] += module.weight.numel() * positions

    hooks = [m.register_forward_hook(count) for m in model.modules()
             if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear))]
    with torch.no_grad():
        model(torch.empty((1, *shape), device="meta"))
    for hook in hooks:
        hook.remove()
    return total[0]


def weights_of(model) -> int:
    return sum(p.numel() for p in model.parameters())


def _meta(build):
    """``build()`` on the ``meta`` device: shapes without memory."""
    import torch

    with torch.device("meta"):
        return build()


def _training_step(name: str, epochs: int, images: int, macs: float, parameter: str) -> Step:
    """Training a network for ``epochs`` over ``images``: about 3 forward passes of work per image (forward, and
    backward twice the forward), ``6 x MACs`` FLOPs (an estimate at :data:`FLOPS_EFFICIENCY`)."""
    return Step(name, epochs * images, "images", flops_seconds(6 * macs),
                f"estimate: 6 x {macs:.3g} MACs per image at {FLOPS_EFFICIENCY:g} of the FP32 peak", parameter)


# ---------------------------------------------------------------------------------------------------------------
# HCR
# ---------------------------------------------------------------------------------------------------------------
#: The images whose full Jacobian (p x n float32) the rank check holds (``hcr.jacobian_ranks``' ``max_images``).
HCR_RANK_IMAGES = 32
#: Downloads (bytes): the four MNIST ``*-ubyte.gz`` files and CIFAR-10's ``cifar-10-python.tar.gz``.
MNIST_BYTES, CIFAR10_BYTES = 11_594_722, 170_498_071
#: Training images: MNIST's and CIFAR-10's training splits, the digits' (the HCR chapter's split of 1,797) and the
#: shipped MNIST digits' (``data.mnist_digits``: 8,000 of 10,000).
MNIST_TRAIN, CIFAR10_TRAIN, DIGITS_TRAIN, MNIST_DIGITS_TRAIN = 60_000, 50_000, 1297, 8000
#: torchvision's ImageNet weights (bytes) and forward cost (GMACs, its ``_ops`` figures) of the HCR ImageNet networks.
IMAGENET_NETWORKS = {"resnet18": (46_830_571, 1.81), "swin_t": (113_400_000, 4.49)}


def hcr_solves(cfg) -> dict[str, int]:
    """LSQR solves (one image, one restart, one repetition) of each task of the HCR chapter: ``examples x R x`` the
    repetitions of its runs (``hcr.run_bounds``: the main and the limit run on every bounded image; on the first
    ``sweep_examples`` of them the sweep below the main run's ``i``, and for the grayscale MLP the two
    fixed-tolerance runs)."""
    i_max = max(cfg.power_iterations)
    out = {}
    for task, examples, (i_main, i_limit) in (("gray", cfg.gray_examples, (i_max, i_max)),
                                              ("gray_cnn", cfg.gray_cnn_examples, (i_max, i_max)),
                                              ("colour", cfg.colour_examples, (min(6, i_max), min(4, i_max)))):
        sweep = sum(i for i in cfg.power_iterations if i < i_main) + (2 * i_main if task == "gray" else 0)
        out[task] = cfg.num_restarts * (examples * (i_main + i_limit) + cfg.sweep_images(examples) * sweep)
    return out


@planner("hcr")
def _hcr(cfg):
    """Chaudhuri et al.: :func:`hcr_solves` LSQR solves per task, at ``paper`` scale the measured ImageNet ResNet-18
    solve scaled by the network's forward MACs (:func:`forward_macs`), else the book run's time per solve; the two
    classifiers' training (:func:`_training_step`); with ``imagenet_dir``, ResNet-18's and Swin-T's bounds.  RAM:
    the chapter's own estimate (:func:`compendium.chapters.hcr.host_ram_bytes`);
    GPU: the larger classifier with AdamW's state and the rank check's Jacobians; disk: the downloads and, with
    ``checkpoint_dir``, the checkpoints (:func:`compendium.chapters.hcr.checkpoint_bytes`)."""
    from compendium import models

    module = chapters.chapter("hcr").module
    book_solves = sum(hcr_solves(module.settings("book", device="cpu")).values())
    gray_side, colour_side = (8 if cfg.gray_data == "digits" else 28), (32 if cfg.colour_data == "cifar10"
                                                                         else cfg.colour_resolution)
    gray = _meta(lambda: models.MnistMLP(1, gray_side, 10, hidden=cfg.gray_hidden))
    colour = _meta(lambda: models.CifarCNN(3, colour_side, 10, widths=cfg.colour_widths, hidden=cfg.colour_hidden))
    gray_cnn = _meta(lambda: models.CifarCNN(1, gray_side, 10, widths=cfg.colour_widths, hidden=cfg.colour_hidden))
    book_seconds = chapters.chapter("hcr").seconds["book"]

    resnet, resnet_basis = measured("HCR: one ImageNet bound, ResNet-18 (R = 25, i = 10)")
    solves, steps = hcr_solves(cfg), []
    networks = {"gray": (gray, (1, gray_side, gray_side)), "gray_cnn": (gray_cnn, (1, gray_side, gray_side)),
                "colour": (colour, (3, colour_side, colour_side))}
    for task, (network, shape) in networks.items():
        examples = f"{'colour' if task == 'colour' else task}_examples"
        if cfg.scale == "paper":
            ratio = forward_macs(network, shape) / (IMAGENET_NETWORKS["resnet18"][1] * 1e9)
            steps.append(Step(f"HCR bounds, {task}", solves[task], "LSQR solves", resnet * ratio,
                              f"estimate: {resnet_basis} x {ratio:.3g} (forward MACs); an upper bound, as the chapter "
                              "solves its images together where the measurement solved one", f"{examples} x "
                              "num_restarts x power_iterations"))
        else:  # the book's small networks, on the CPU whatever the device (the GPU check ran this chapter's book
            # scale no faster on the H200 than on 2 CPU cores): the book run's time over its solves
            steps.append(Step(f"HCR bounds, {task}", solves[task], "LSQR solves", book_seconds / book_solves,
                              f"estimate: the book run's {book_seconds} s (SECONDS) over its {book_solves:,} solves: "
                              "an upper bound", f"{examples} x num_restarts x power_iterations", on_cpu=True))
    gray_images = {"mnist": MNIST_TRAIN, "mnist_digits": MNIST_DIGITS_TRAIN, "digits": DIGITS_TRAIN}[cfg.gray_data]
    colour_images = CIFAR10_TRAIN if cfg.colour_data == "cifar10" else 7 * cfg.colour_per_class
    steps += [_training_step("training the grayscale MLP and CNN", cfg.gray_epochs, gray_images,
                             forward_macs(gray, (1, gray_side, gray_side))
                             + forward_macs(gray_cnn, (1, gray_side, gray_side)), "gray_epochs"),
              _training_step("training the colour CNN", cfg.colour_epochs, colour_images,
                             forward_macs(colour, (3, colour_side, colour_side)), "colour_epochs")]
    disk = [("MNIST files", MNIST_BYTES)] if cfg.gray_data == "mnist" else []
    disk += [("CIFAR-10 archive", CIFAR10_BYTES)] if cfg.colour_data == "cifar10" else []
    if cfg.imagenet_dir is not None:
        seconds, basis = measured("HCR: one ImageNet bound, ResNet-18 (R = 25, i = 10)")
        count = cfg.imagenet_examples * 2 * cfg.num_restarts * 10  # two sizes s, i = 10
        ratio = IMAGENET_NETWORKS["swin_t"][1] / IMAGENET_NETWORKS["resnet18"][1]
        steps += [Step("HCR bounds, ImageNet ResNet-18", count, "LSQR solves", seconds, basis,
                       "imagenet_examples x num_restarts (two sizes, i = 10)"),
                  Step("HCR bounds, ImageNet Swin-T", count, "LSQR solves", seconds * ratio,
                       f"estimate: the ResNet-18 solve x {ratio:.3g} (torchvision's GMACs)",
                       "imagenet_examples x num_restarts (two sizes, i = 10)")]
        disk += [(f"{cfg.imagenet_examples} ImageNet JPEGs", cfg.imagenet_examples * IMAGENET_JPEG_BYTES),
                 ("ResNet-18 and Swin-T weights", sum(b for b, _ in IMAGENET_NETWORKS.values()))]
    if cfg.checkpoint_dir is not None:
        disk += [("checkpoints: the classifiers and every finished chunk of bounds (checkpoint_dir)",
                  module.checkpoint_bytes(cfg))]
    gray_p, colour_p = gray_side**2, 3 * colour_side**2
    ram = Need((("data, classifiers, kept bounds, one run's LSQR block and the rank check's Jacobians "
                 "(hcr.host_ram_bytes)", module.host_ram_bytes(cfg)),),
               f"gray_examples={cfg.gray_examples}, colour_examples={cfg.colour_examples}: reduce them", summed=True)
    gpu = Need((("classifier, its gradient and AdamW's moments", 4 * F32 * max(weights_of(gray), weights_of(colour))),
                (f"Jacobians of the rank check ({HCR_RANK_IMAGES} images)",
                 HCR_RANK_IMAGES * F32 * max(gray_p * cfg.gray_hidden, colour_p * cfg.colour_hidden))),
               f"colour_widths={cfg.colour_widths}, colour_hidden={cfg.colour_hidden}: reduce them", summed=True)
    return steps, gpu, ram, Need(tuple(disk), "point data_dir at a larger disk", summed=True), cfg.data_dir


# ---------------------------------------------------------------------------------------------------------------
# transfer-learned networks
# ---------------------------------------------------------------------------------------------------------------
#: The reconstructed images (channels, side) of each data set (the digits 8 x 8, the shipped MNIST digits 28 x 28, MNIST
#: resized to 32 x 32, CelebA's faces at 64 x 64: the chapter's ``pools`` and ``CELEBA_RESOLUTION``).
TRANSFER_IMAGES = {"digits": (1, 8), "mnist_digits": (1, 28), "mnist": (1, 32), "cifar10": (3, 32), "celeba": (3, 64)}
#: Pools held in memory (images): MNIST's (EMNIST letters' 124,800 training images, MNIST's 60,000 + 10,000) and
#: CIFAR's (CIFAR-100's 50,000 training images, CIFAR-10's 50,000 + 10,000), as float32; the digits' 1,797; the shipped
#: Fashion-MNIST subset's 10,000 and MNIST digits' 10,000.
TRANSFER_POOL_IMAGES = {"digits": 1797, "mnist_digits": 20_000, "mnist": 124_800 + 70_000, "cifar10": 50_000 + 60_000}
#: CelebA (Section 3.1): the adversary's "train+valid" photos and the victims' "test" ones, and what one holds in
#: memory: a 64 x 64 face (uint8 for training, float32 for validation) and 2,048 float32 features.
CELEBA_TRAIN, CELEBA_TEST = 182_637, 19_962


def celeba_store() -> dict[str, int]:
    """Bytes of what the CelebA experiment keeps of the photos, in memory and saved next to them: the training faces
    (64 x 64, 8-bit), the test faces (float32) and both splits' 2,048 float32 features."""
    face = 3 * 64**2
    return {"training faces": CELEBA_TRAIN * face, "test faces": CELEBA_TEST * face * F32,
            "features": (CELEBA_TRAIN + CELEBA_TEST) * 2048 * F32}


#: WideResNet-50-2's forward cost on a 224 x 224 crop (GMACs, torchvision's figure) and EMNIST letters' training
#: images (VGGtiny's pre-training set).
WIDE_RESNET_GMACS, EMNIST_LETTERS_TRAIN = 11.4, 124_800
#: What the GPU check timed for this chapter: heads of 2,570 weights (256 features) at N = 10 and 40, and Table 2's
#: MNIST generator of 52,965,377 weights (compendium.models.ResidualReconstructor's docstring).
MEASURED_HEAD = (2570, 10, 40)
MEASURED_GENERATOR_WEIGHTS = 52_965_377


@dataclass(frozen=True)
class TransferRun:
    """One attack of the transfer-learning chapter as the notebook runs it: its heads (``kind``: ``"class"``,
    ``"binary"``, ``"identity"`` or ``"DP-SGD"``; ``heads`` training heads on ``set_size`` images, ``dim`` weights on
    ``features`` inputs, trained by the recipe that ``store`` names) and its reconstructor's Adam ``steps``."""

    label: str
    kind: str
    set_size: int
    heads: int
    steps: int
    dim: int
    features: int
    store: tuple


def transfer_runs(cfg) -> list[TransferRun]:
    """Every attack the transfer-learning notebook runs, in its order: the chapter's one list
    (:func:`compendium.chapters.transfer_learned.chapter_attacks`, which the notebook, its sweeps and ``python -m
    compendium jobs`` read too), labelled ``"<section>: <key>"``; ``store`` names the heads (as ``run_attack`` names
    its folder), so that attacks on the same heads share them."""
    from compendium.attacks.shadow_reconstructor import whole_passes

    tl = chapters.chapter("transfer_learned").module
    features = {row: f for f, row, _ in tl.PAPER_EXTRACTOR_FEATURES.values()} | {
        "digits": cfg.extractor_hidden, "mnist_digits": cfg.extractor_hidden}
    runs = []
    for section, attacks in tl.chapter_attacks(cfg).items():
        for key, spec in attacks.items():
            identity, binary = spec.task == "identity", spec.task == "binary"
            dataset = cfg.identity_source if identity else cfg.dataset
            recipe = tl.HeadRecipe.of(dataset, spec.set_size, binary=binary, variant=spec.variant, identity=identity)
            heads = spec.shadow_train or (cfg.identity_shadow_train if identity else cfg.shadow_train)
            init_std = spec.init_std if spec.init_std is not None else cfg.head_init_std
            store = (dataset, binary, spec.canonical, spec.variant, spec.ood, identity, spec.set_size, heads, init_std,
                     spec.noise_multiplier)
            steps = spec.steps or (cfg.identity_steps if identity else cfg.reconstructor_steps)
            _, actual = whole_passes(steps, heads=heads)  # as run_attack rounds them
            kind = ("identity" if identity else "binary" if binary else
                    "class" if spec.noise_multiplier is None else "DP-SGD")
            runs.append(TransferRun(f"{section}: {key}", kind, spec.set_size, heads, actual,
                                    recipe.dim(features[dataset]), features[dataset], store))
    return runs


def _head_seconds(run: TransferRun, cfg) -> float:
    """Seconds per training head on the reference card: the measured MNIST heads (256 features, 2,570 weights) at
    N = 10 and 40, linear in N between and beyond them, times the head's weights over 2,570; a DP-SGD head twice that
    (two steps an epoch), a CelebA head ``identity_max_attempts`` times (the restart rule's worst case)."""
    low = MEASURED["transfer: 2.56e6 training heads, N = 10"]
    high = MEASURED["transfer: 2.56e6 training heads, N = 40"]
    weights, n_low, n_high = MEASURED_HEAD
    seconds = max(low, low + (high - low) * (run.set_size - n_low) / (n_high - n_low)) * run.dim / weights
    return seconds * (2 if run.kind == "DP-SGD" else 1) * (cfg.identity_max_attempts if run.kind == "identity" else 1)


def _reconstructor(cfg, run: TransferRun):
    """The reconstructor of ``run`` on the meta device (Table 2's generator, or the book's MLP)."""
    from compendium import models

    identity = run.kind == "identity"
    channels, side = TRANSFER_IMAGES[cfg.identity_source if identity else cfg.dataset]
    inputs = run.dim + (0 if identity else 10)  # the conditional reconstructors also read the class
    width = cfg.identity_hidden if identity else cfg.hidden
    if cfg.reconstructor == "residual":
        return _meta(lambda: models.ResidualReconstructor(inputs, width=width, out_channels=channels, size=side))
    return _meta(lambda: models.MLPReconstructor(inputs, (channels, side, side), width))


@planner("transfer_learned")
def _transfer(cfg):
    """Maciazek & Allison: the shadow heads of every attack of :func:`transfer_runs` (those sharing a store trained
    once; :func:`_head_seconds`), the reconstructors' Adam steps at the measured MNIST generator's step times its
    weights (:func:`_reconstructor`, counted on the meta device), CelebA's photos through WideResNet-50-2 and
    VGGtiny's pre-training.  Disk: every store, ``heads x (weights + N) x 4`` bytes (:func:`head_stores`); RAM: the
    pools (and the heads, when ``shadow_dir`` is ``None``); GPU: a reconstructor's training or a shard of heads."""
    from compendium.attacks.transfer_heads import SHARD_BYTES, SHARD_SIZE

    runs = transfer_runs(cfg)
    stored = cfg.shadow_dir is not None
    fresh = list({r.store: r for r in reversed(runs)}.values())[::-1] if stored else runs  # stored heads are shared
    steps = []
    head_groups: dict = {}
    for r in fresh:
        head_groups.setdefault((r.kind, r.set_size, r.dim), []).append(r)
    for (kind, n, dim), group in head_groups.items():
        steps.append(Step(f"{kind} shadow heads, N = {n}, {dim:,} weights ({plural(len(group), 'set')})",
                          sum(r.heads + cfg.shadow_val for r in group), "heads", _head_seconds(group[0], cfg),
                          "estimate: the measured heads (gpu_check.json) scaled by N and the weights",
                          "shadow_train (and the sweeps' counts)"))
    reference = MEASURED["transfer: reconstructor, 1e6 Adam steps (Table 2, MNIST, batch 32)"]
    reconstructors: dict = {}
    for r in runs:
        reconstructors.setdefault(weights_of(_reconstructor(cfg, r)), []).append(r)
    for weights, group in reconstructors.items():
        ratio = weights / MEASURED_GENERATOR_WEIGHTS
        basis = ("measured on the H200 (gpu_check.json: Table 2's MNIST generator)" if ratio == 1 else
                 f"estimate: the measured MNIST generator's step x {ratio:.3g} (its weights)")
        steps.append(Step(f"reconstructors of {weights:,} weights ({plural(len(group), 'run')})",
                          sum(r.steps for r in group),
                          "Adam steps", reference * ratio, basis, "reconstructor_steps (and the sweeps' steps)"))
    if cfg.identity_source == "celeba":
        steps.append(Step("CelebA photos through WideResNet-50-2", CELEBA_TRAIN + CELEBA_TEST, "images",
                          flops_seconds(2 * WIDE_RESNET_GMACS * 1e9),
                          f"estimate: 2 x {WIDE_RESNET_GMACS} GMACs at {FLOPS_EFFICIENCY:g} of the FP32 peak "
                          "(once: the features are saved)", "identity_dataset"))
    if cfg.dataset == "mnist" and cfg.extractor_checkpoint is None:
        from compendium import models

        macs = forward_macs(_meta(lambda: models.VGGTiny(num_classes=26)), (1, 32, 32))
        steps.append(_training_step("VGGtiny on EMNIST letters", cfg.extractor_epochs, EMNIST_LETTERS_TRAIN, macs,
                                    "extractor_epochs (or extractor_checkpoint)"))

    largest = max(runs, key=lambda r: r.dim)
    biggest = max(reconstructors)
    shard = max(1, min(SHARD_SIZE, SHARD_BYTES // (F32 * largest.set_size * largest.features)))  # shadow_heads' rule
    gpu = Need((("training a reconstructor: its weights, gradient and Adam's moments, and the heads' weight "
                 "covariance (float64, twice)", 4 * F32 * biggest + 2 * F64 * largest.dim**2),
                ("one shard of heads (weights, gradient, momentum) and its features",
                 3 * F32 * shard * largest.dim + SHARD_BYTES)),
               f"hidden={cfg.hidden} / identity_hidden={cfg.identity_hidden} (the reconstructors' widths): reduce "
               "them", summed=False)
    store_bytes = {r.store: F32 * r.heads * (r.dim + r.set_size) for r in fresh}  # weights and int32 sets
    ram = [("pools (float32)", F32 * TRANSFER_POOL_IMAGES.get(cfg.dataset, 0) * math.prod(
        (TRANSFER_IMAGES[cfg.dataset][0], TRANSFER_IMAGES[cfg.dataset][1], TRANSFER_IMAGES[cfg.dataset][1])))]
    if cfg.identity_source == "celeba":
        ram.append(("CelebA faces and features", sum(celeba_store().values())))
    if not stored:
        ram.append(("the largest run's heads (held in memory)", max(store_bytes.values())))
    disk = []
    for dataset in dict.fromkeys(store[0] for store in store_bytes) if stored else ():
        mine = [b for store, b in store_bytes.items() if store[0] == dataset]
        disk.append((f"{len(mine)} head stores of {dataset}", sum(mine)))
    if cfg.identity_source == "celeba":
        disk.append(("CelebA faces and features saved in data_dir/celeba", ram[1][1]))
    return (steps, gpu, Need(tuple(ram), f"dataset={cfg.dataset!r}, identity_dataset={cfg.identity_dataset!r}: a "
                                         "smaller data set", summed=True),
            Need(tuple(disk), f"shadow_train={cfg.shadow_train:,}: reduce it, or point shadow_dir at a larger disk "
                              "(the variant, DP-SGD and identity counts of shadow heads count too)", summed=True),
            cfg.shadow_dir or cfg.data_dir)


# ---------------------------------------------------------------------------------------------------------------
# diffusion
# ---------------------------------------------------------------------------------------------------------------
#: The prior's checkpoint, google/ddpm-celebahq-256 from the Hugging Face hub (about 450 MB, the reproduce page),
#: cached in HF_HOME, and its weights (its UNet2DModel configuration, counted once).
PRIOR_CHECKPOINT_BYTES, PRIOR_WEIGHTS = 450e6, 113_673_219
#: Gradient-sized tensors a sampler batch holds at once (estimate: the released gradients, the reconstructions' and
#: the graph of their double backpropagation).
GRADIENT_COPIES = 3


def diffusion_runs(cfg) -> dict[str, int]:
    """Reconstructions (one target each) of every distinct attack the diffusion chapter runs, by method: the noise
    grid, the step comparison, Table 2's runs and the DPS step sizes of RV, the sweeps of Tables 3-4 (and DSG's at
    DPS's step count), the baselines and the prior alone (where ``cfg.baselines``); ``Experiment`` runs each distinct
    setting once.  The keys are ``"DPS <steps>"``, ``"DSG <steps>"``, ``"DLG"``, ``"IG"`` and ``"prior <steps>"``;
    the values count runs times targets."""
    module = chapters.chapter("diffusion").module
    default = {"DPS": (cfg.dps_zeta, cfg.dps_steps), "DSG": (cfg.dsg_rate, cfg.dsg_steps)}

    def job(method, model="CNN", variance=0.0, normalised=False, parameter=None, steps=None):
        p, n = default.get(method, (None, cfg.dps_steps))
        return (method, model, float(variance), normalised, p if parameter is None else parameter, steps or n)

    jobs = {job(m, variance=v, normalised=n) for n, grid in ((False, cfg.variances), (True, cfg.normalised_variances))
            for v in grid for m in module.METHODS}
    jobs |= {job(m, steps=n) for n in {cfg.dsg_steps, cfg.dps_steps} for m in module.METHODS}
    for name in cfg.attacked_models:
        jobs |= {job(m, name) for m in module.METHODS}
        jobs |= {job("DPS", name, parameter=float(z)) for z in {*cfg.rv_zetas, cfg.dps_zeta}}
        jobs.add(job("DPS", name, parameter=cfg.dps_zeta if name == "CNN" else ("scaled", name)))
    jobs |= {job("DPS", parameter=float(z)) for z in cfg.sweep_zetas}
    jobs |= {job("DSG", parameter=float(r)) for r in cfg.sweep_rates}
    jobs |= {job("DSG", parameter=float(r), steps=cfg.dps_steps) for r in cfg.sweep_rates}
    if cfg.baselines:
        jobs |= {job(m, variance=v) for v in (0.0, module.TABLE6_VARIANCE) for m in ("DLG", "IG", *module.METHODS)}
        jobs.add(job("prior"))
    counts: dict[str, int] = {}
    for method, *_, steps in jobs:
        key = method if method in ("DLG", "IG") else f"{method} {steps}"
        counts[key] = counts.get(key, 0) + cfg.targets
    return counts


@planner("diffusion")
def _diffusion(cfg):
    """Huang, Meng et al.: the sampler steps of every distinct attack (:func:`diffusion_runs`) at the measured DPS and
    DSG steps (at ``paper`` scale; the book run's time per step for the digits), the baselines' gradient-matching
    steps and Eq. (17)'s directions each at most a DSG step.  GPU: the prior and :data:`GRADIENT_COPIES` batches of
    gradients of the largest attacked network; RAM and disk: the images and the prior's checkpoint."""
    from compendium.models import gradient_targets

    module = chapters.chapter("diffusion").module
    dps, dps_basis = measured("diffusion: DPS, one 256x256 reconstruction (1000 steps)")
    dsg, dsg_basis = measured("diffusion: DSG, one 256x256 reconstruction (100 steps)")
    if cfg.digits:  # the book's own small prior: its measured book-scale time (2 CPU cores) over its sampler steps,
        # not converted between devices (the GPU check ran the book's chapter about as fast on the H200)
        book = module.settings("book", device="cpu")
        book_steps = sum(int(k.split()[-1]) * v if " " in k else book.dlg_iterations * v
                         for k, v in diffusion_runs(book).items())
        seconds = chapters.chapter("diffusion").seconds["book"]
        dps = dsg = seconds / book_steps
        dps_basis = dsg_basis = (f"estimate: the book run's {seconds} s (SECONDS, 2 CPU cores) over its "
                                 f"{book_steps:,} sampler steps: an upper bound")
    below_dsg = f"estimate: at most a DSG step, {dsg_basis.removeprefix('estimate: ')}"
    steps, runs = [], diffusion_runs(cfg)
    for key, count in sorted(runs.items()):
        method, _, n = key.partition(" ")
        if method in ("DLG", "IG"):
            iterations = cfg.dlg_iterations * (cfg.ig_restarts if method == "IG" else 1)
            steps.append(Step(f"{method} baseline ({plural(count, 'run')})", count * iterations,
                              "gradient-matching steps", dsg,
                              below_dsg, "dlg_iterations x targets",
                              on_cpu=cfg.digits))
        else:
            seconds, basis = (dsg, dsg_basis) if method == "DSG" else (dps, dps_basis)
            if method == "prior":
                basis = f"estimate: at most a DPS step, {basis.removeprefix('estimate: ')}"
            steps.append(Step(f"{method}, {n} steps ({plural(count, 'run')})", count * int(n), "sampler steps",
                              seconds, basis,
                              "targets x the grids (variances, sweep_zetas, sweep_rates, attacked_models)",
                              on_cpu=cfg.digits))
    weights = {name: weights_of(_meta(lambda: gradient_targets.gradient_target(
        name, in_channels=cfg.in_channels, image_size=cfg.image_size))) for name in cfg.attacked_models}
    steps.append(Step("Reconstruction Vulnerability, Eq. (17)", cfg.rv_images * cfg.rv_directions * len(weights),
                      "directions (one image)", dsg, below_dsg,
                      "rv_images x rv_directions x attacked_models", on_cpu=cfg.digits))
    largest = max(weights.values())
    batch = min(max(cfg.targets, module.BATCH_ENTRIES // largest), max(runs.values()))  # Experiment._attack's rule
    pixels = cfg.in_channels * cfg.image_size**2
    gpu = Need((("prior's weights (its activations not counted)", 0 if cfg.digits else F32 * PRIOR_WEIGHTS),
                (f"gradients of a batch of {batch} targets", GRADIENT_COPIES * F32 * batch * largest)),
               f"targets={cfg.targets} (a batch holds at least the targets) or attacked_models: reduce them",
               summed=True)
    ram = Need((("images (float32)", F32 * pixels * max(cfg.targets, cfg.rv_images)),
                ("the prior's checkpoint, loaded", 0 if cfg.digits else PRIOR_CHECKPOINT_BYTES)),
               f"rv_images={cfg.rv_images}: reduce it", summed=True)
    disk = Need((("the prior's checkpoint (HF_HOME)", 0 if cfg.digits else PRIOR_CHECKPOINT_BYTES),),
                "point HF_HOME at a larger disk", summed=True)
    return steps, gpu, ram, disk, cfg.celeba_dir or "."


