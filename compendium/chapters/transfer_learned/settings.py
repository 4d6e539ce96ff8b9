"""The transfer-learning chapter's settings at each scale (:data:`SCALES`, :class:`Settings`) and the paper's
numbers it compares with (the ``PAPER_*`` constants, from Maciazek & Allison 2025 and the authors' README)."""
from __future__ import annotations

from dataclasses import dataclass

from compendium import validation
from compendium.attacks.transfer_heads import (
    BINARY_TASKS,
    DATASETS,
    IDENTITY_TASKS,
    NUM_CLASSES,
    TRAINING_VARIANTS,
)
from compendium.chapters.base import Settings as _Settings
from compendium.chapters.base import resolve

POOL_SIZES = {"pretrain": 500, "train": 800, "validation": 497}  # the digits' three pools (:func:`pools`)
#: The paper's MNIST pools (Appendix D): the adversary's (MNIST's training split) and the victims' (its test split).
PAPER_MNIST_POOLS = {"train": 60_000, "validation": 10_000}


#: Table 3's CIFAR-10 init std as printed; ``settings(init_std=PAPER_TABLE3_CIFAR_INIT_STD)`` runs it.
PAPER_TABLE3_CIFAR_INIT_STD = 0.002


RECONSTRUCTORS = ("mlp", "residual")


#: The paper's Table 1 (MNIST, CIFAR, CelebA rows) and defended epsilons of Section 4 (gamma = 0.015).
PAPER_TABLE1 = {
    "MNIST": {10: (0.636, 0.018, 0.431), 40: (0.374, 0.098, 0.052)},
    "CIFAR": {10: (0.388, 0.063, 0.217), 40: (0.580, 0.383, 0.045)},
    "CelebA": {10: (0.441, 0.012, 0.385), 40: (0.341, 0.102, 0.084)},
}


PAPER_HEAD_ACCURACY = {"MNIST": {10: 0.812, 40: 0.920}, "CIFAR": {10: 0.587, 40: 0.794},  # Table 4
                       "CelebA": {10: 0.914, 40: 0.935}}  # Table 5


#: Table 5: the CelebA heads' test accuracy, classification TPR (the identity's photos) and TNR (the others'), mean
#: and standard deviation over 5,000 heads.
PAPER_TABLE5 = {10: {"accuracy": (0.914, 0.037), "TPR": (0.434, 0.286), "TNR": (0.967, 0.035)},
                40: {"accuracy": (0.935, 0.030), "TPR": (0.645, 0.216), "TNR": (0.967, 0.022)}}


#: The paper's experiment beside each dataset.
PAPER_ROW = {"digits": "MNIST", "mnist_digits": "MNIST", "mnist": "MNIST", "cifar10": "CIFAR"}


#: Section 2's nearest-neighbour thresholds tau_NN (MNIST at the reconstruction resolution 32x32, CelebA at 64x64).
PAPER_TAU_NN = {"MNIST": 0.0696, "CIFAR": 0.1284, "CelebA": 0.1217}


#: Section 3.2, point 3: TPR and FPR at tau_NN of the unconditional reconstructor (Algorithm 2), CIFAR-10, N = 10.
PAPER_UNCONDITIONAL = {"CIFAR": (0.543, 0.281)}


#: Section 3.2, point 4: TPR and FPR at tau_NN of the binary heads (even / odd MNIST, animal / vehicle CIFAR), N = 10.
PAPER_BINARY = {"MNIST": (0.461, 0.018), "CIFAR": (0.282, 0.095)}


#: TPR and FPR at tau_NN, N = 10: point 5's with Adam, point 8's with out-of-distribution shadow data (CIFAR only);
#: for the other variants the paper reports only "no significant change".
OOD = "out-of-distribution shadow data"


PAPER_VARIANTS = {"Adam": {"MNIST": (0.443, 0.022), "CIFAR": (0.362, 0.111)}, OOD: {"CIFAR": (0.171, 0.044)}}


#: The authors' README, per (experiment, N): CPU hours for the 2.56e6 training heads (Apple M4 Pro, one head at a
#: time: seconds per seed times the seeds) and GPU hours per 10^6 reconstructor steps (one V100).
PAPER_README_HOURS = {"heads": {("MNIST", 10): 3.2, ("MNIST", 40): 6.1},
                      "reconstructor": {("MNIST", 10): 9.5, ("MNIST", 40): 10.4, ("CIFAR", 10): 58.5,
                                        ("CelebA", 10): 87.8}}


#: The authors' README (``models_per_seed`` of the MNIST test split): validation heads per N, sets without a shared
#: image, the test set's smallest class (892 images of 5s) over M.
PAPER_README_VALIDATION_SETS = {10: 892, 40: 223}


#: Section 3.1: the longest reconstructor training, hours on one RTX 3090.
PAPER_RECONSTRUCTOR_HOURS = 72


#: The steps of the authors' released MNIST N = 40 reconstructor, ``cond_rec_MNIST_N40_trained_1000EP.pth``: 1000
#: epochs of their ``cond_reconstructor.py``, each over the 71 seeds of 1,280 heads that its ``DATA_MEM_LIMIT`` of
#: 32 GB holds, in batches of 32.
AUTHORS_RELEASED_N40_STEPS = 1000 * 71 * 1280 // 32


#: The authors' README: epsilon for each DP_NOISE (noise multiplier) at delta = N^-1.1 with the configs' BATCH_SIZE Max
#: and TRAINING_EPOCHS Auto, per (dataset of DATASETS, N); the paper's Figure 4 axes.
PAPER_README_EPSILONS = {("mnist", 10): {1.82: 5, 1.23: 10, 0.85: 20, 0.60: 40, 0.435: 80},
                         ("mnist", 40): {5.21: 2, 2.75: 5, 1.75: 10, 1.15: 20, 0.79: 40},
                         ("cifar10", 10): {1.48: 10, 1.02: 20, 0.714: 40, 0.514: 80, 0.374: 160},
                         ("cifar10", 40): {2.15: 10, 1.41: 20, 0.953: 40, 0.666: 80, 0.477: 160}}


PAPER_DEFENDED_EPSILON = {("MNIST", 10): 7.2, ("MNIST", 40): 6.0, ("CIFAR", 10): 15.5, ("CIFAR", 40): 41.8}


GAMMA = 0.015


#: Standard errors (of a difference of two rates) beyond which the chapter calls a change of the attack's rates
#: significant, as the paper's "We have not observed significant changes" (Section 3.2, points 5 and 7) is read:
#: about a 5 % two-sided test for each comparison.
SIGNIFICANT_SE = 2.0


#: Standard errors above chance (TPR = FPR = 0.01 at FPR = 0.01) beyond which an attack counts as working.
CHANCE_SE = 3.0


def paper_numbers() -> dict[str, float]:
    """The paper's values that the chapter's prose quotes, keyed for ``glue`` (one definition: the ``PAPER_*``
    constants above): ``tl_paper_<experiment>_<N>_{tpr,fpr,tpr01}`` (Table 1; experiment ``mnist``, ``cifar`` or
    ``celeba``), ``tl_paper_<kind>_<experiment>_{tpr,fpr}`` at ``N = 10`` for ``uncond``, ``binary``, ``adam`` and
    ``ood`` (Section 3.2), ``tl_paper_acc_<experiment>_<N>`` (Tables 4 and 5), ``tl_paper_t5_<N>_<rate>_{mean,sd}``
    (Table 5), ``tl_paper_tau_<experiment>`` and ``tl_paper_eps_<experiment>_<N>`` (Section 4's defended epsilon),
    ``tl_paper_t3_<row>_{lr,init_std}`` (Table 3's MNIST, binary and CelebA rows) and ``tl_paper_gamma`` (the
    defence's threshold)."""
    numbers = {}
    for experiment, rows in PAPER_TABLE1.items():
        for n, (tpr, fpr, tpr01) in rows.items():
            key = f"tl_paper_{experiment.lower()}_{n}"
            numbers |= {f"{key}_tpr": tpr, f"{key}_fpr": fpr, f"{key}_tpr01": tpr01}
    for kind, table in (("uncond", PAPER_UNCONDITIONAL), ("binary", PAPER_BINARY),
                        ("adam", PAPER_VARIANTS["Adam"]), ("ood", PAPER_VARIANTS[OOD])):
        for experiment, (tpr, fpr) in table.items():
            key = f"tl_paper_{kind}_{experiment.lower()}"
            numbers |= {f"{key}_tpr": tpr, f"{key}_fpr": fpr}
    for experiment, rows in PAPER_HEAD_ACCURACY.items():
        numbers |= {f"tl_paper_acc_{experiment.lower()}_{n}": value for n, value in rows.items()}
    for n, rates in PAPER_TABLE5.items():
        for rate, (mean, sd) in rates.items():
            numbers |= {f"tl_paper_t5_{n}_{rate.lower()}_mean": mean, f"tl_paper_t5_{n}_{rate.lower()}_sd": sd}
    numbers |= {f"tl_paper_tau_{experiment.lower()}": tau for experiment, tau in PAPER_TAU_NN.items()}
    numbers |= {f"tl_paper_eps_{experiment.lower()}_{n}": eps
                for (experiment, n), eps in PAPER_DEFENDED_EPSILON.items()}
    for row, recipe in (("mnist", DATASETS["mnist"]), ("binary", BINARY_TASKS["mnist"]),
                        ("celeba", IDENTITY_TASKS["celeba"])):
        numbers |= {f"tl_paper_t3_{row}_lr": recipe["lr"], f"tl_paper_t3_{row}_init_std": recipe["init_std"]}
    return {key: float(value) for key, value in numbers.items()} | {"tl_paper_gamma": GAMMA}


SCALES = {
    "ci": dict(dataset="digits", data_dir="data", shadow_dir=None, reconstructor="mlp", extractor_checkpoint=None,
               set_sizes=(10, 40), shadow_train=4000, shadow_val=200, reconstructor_steps=3000,
               unconditional_steps=300, hidden=512, extractor_epochs=40, extractor_hidden=64, init_std=None,
               shadow_counts=(), init_stds=(), binary_variants=(), training_variants=(), ood=False,
               variant_shadow_train=2000, variant_reconstructor_steps=1000, identity_set_sizes=(10,),
               identity_shadow_train=1000, identity_steps=300, identity_max_attempts=5, identity_dataset=None,
               identity_checkpoint=None, identity_hidden=512, dp_set_size=10,
               dp_noise_multipliers=(8.0,), dp_max_grad_norm=10.0, dp_shadow_train=2000, dp_reconstructor_steps=500,
               readme_entries=1, disjoint_validation=False, stack_reconstructors=None),
    "book": dict(dataset="mnist_digits", data_dir="data", shadow_dir=None, reconstructor="mlp",
                 extractor_checkpoint=None, set_sizes=(10, 40), shadow_train=20_000, shadow_val=500,
                 reconstructor_steps=4500, unconditional_steps=1000, hidden=512, extractor_epochs=10,
                 extractor_hidden=64, init_std=None, shadow_counts=(4000,), init_stds=(0.2,),
                 binary_variants=(False,), training_variants=tuple(TRAINING_VARIANTS), ood=True,
                 variant_shadow_train=5000, variant_reconstructor_steps=1000, identity_set_sizes=(10, 40),
                 identity_shadow_train=6000, identity_steps=1500, identity_max_attempts=5, identity_dataset=None,
                 identity_checkpoint=None, identity_hidden=512, dp_set_size=10,
                 dp_noise_multipliers=(0.5, 1.0, 2.0), dp_max_grad_norm=10.0, dp_shadow_train=5000,
                 dp_reconstructor_steps=1500, readme_entries=2, disjoint_validation=False,
                 stack_reconstructors=None),
    "paper": dict(dataset="mnist", data_dir="data", shadow_dir="data/transfer-learned-shadow-heads",
                  reconstructor="residual", extractor_checkpoint=None, set_sizes=(10, 40), shadow_train=2_560_000,
                  shadow_val=10_000, reconstructor_steps=1_000_000, unconditional_steps=1_000_000, hidden=256,
                  extractor_epochs=50, extractor_hidden=256, init_std=None,
                  shadow_counts=(10_000, 100_000, 1_000_000), init_stds=(0.0002, 0.02, 0.2),
                  binary_variants=(False, True), training_variants=tuple(TRAINING_VARIANTS), ood=True,
                  variant_shadow_train=2_560_000, variant_reconstructor_steps=1_000_000, identity_set_sizes=(10, 40),
                  identity_shadow_train=2_560_000, identity_steps=1_000_000, identity_max_attempts=100,
                  identity_dataset="celeba", identity_checkpoint=None, identity_hidden=512, dp_set_size=10,
                  dp_noise_multipliers=(0.435, 0.6, 0.85, 1.23, 1.82), dp_max_grad_norm=4.0,
                  dp_shadow_train=2_560_000, dp_reconstructor_steps=1_000_000, readme_entries=5,
                  disjoint_validation=True, stack_reconstructors=None),
}


@dataclass(frozen=True)
class Settings(_Settings):
    """Settings of the transfer-learning chapter, one comment per field (the scales' values: :data:`SCALES`)."""

    #: ``"digits"`` (scikit-learn's 8x8 digits, offline; ``ci``), ``"mnist_digits"`` (10,000 real 28x28 MNIST digits
    #: and a Fashion-MNIST subset shipped with the package, offline; ``book``), ``"mnist"`` or ``"cifar10"`` (the
    #: paper's; read from ``data_dir``, downloaded by :func:`compendium.data.mnist` / :func:`~compendium.data.cifar10`
    #: only when asked).
    dataset: str
    #: Where the paper's data sets are read from (and downloaded to, when asked).
    data_dir: str
    #: A folder where the training shadow heads are written (``None``: held in memory).
    shadow_dir: str | None
    #: ``"mlp"`` (the book's) or ``"residual"`` (Table 2; ``hidden`` is then its width S, 256 for MNIST and 512 for
    #: CIFAR).
    reconstructor: str
    #: The authors' extractor weights (VGGtiny for MNIST, instead of training it here; the fine-tuned EfficientNet-B0
    #: for CIFAR, ImageNet weights otherwise).
    extractor_checkpoint: str | None
    #: The attacked heads' training-set sizes ``N`` (multiples of the 10 classes; Table 1 uses 10 and 40).
    set_sizes: tuple[int, ...]
    #: Training shadow heads per ``N`` (the paper: 2.56e6).
    shadow_train: int
    #: Validation shadow heads per ``N`` (the paper: 1e4).
    shadow_val: int
    #: The reconstructor's Adam steps on batches of 32 shadow heads, rounded up to whole passes over the heads (the
    #: paper: about 1e6).
    reconstructor_steps: int
    #: Adam steps of Algorithm 2's unconditional reconstructor (Section 3.2, point 3; fewer than the main run's at
    #: ``ci`` and ``book``).
    unconditional_steps: int
    #: The reconstructor's width.
    hidden: int
    #: The feature extractor's training epochs (the MLP's for the digits and the shipped MNIST digits, VGGtiny's for
    #: MNIST; not used for CIFAR's pre-trained EfficientNet).
    extractor_epochs: int
    #: The feature dimension of the MLP extractor of ``digits`` and ``mnist_digits`` (VGGtiny and EfficientNet-B0 fix
    #: theirs at 256 and 1280).
    extractor_hidden: int
    #: The class heads' initial weight spread (``None``: the dataset's row of :data:`DATASETS`, MNIST's 0.002,
    #: CIFAR-10's 0.0002 as the authors' code; the CelebA task keeps its row's 0.0002).
    init_std: float | None
    #: Extra numbers of training shadow heads at ``N = 10`` (Section 3.2, Fig. 3a; none at ``ci``).
    shadow_counts: tuple[int, ...]
    #: Extra initial weight spreads at ``N = 10`` (Section 3.2, Fig. 3b; none at ``ci``).
    init_stds: tuple[float, ...]
    #: The attacks on Table 6's binary heads at ``N = 10`` (Section 3.2, point 4), each ``False`` (the raw weights)
    #: or ``True`` (hidden units ordered; none at ``ci``).
    binary_variants: tuple[bool, ...]
    #: The changed training recipes of Section 3.2, points 5 and 7 (names of :data:`TRAINING_VARIANTS`; none at
    #: ``ci``), run at ``N = 10`` beside Table 3's recipe at the same settings.
    training_variants: tuple[str, ...]
    #: Also attack with an adversary that draws its shadow sets out of distribution (point 8,
    #: :func:`out_of_distribution_pool`).
    ood: bool
    #: Training shadow heads of the recipe and out-of-distribution variants.
    variant_shadow_train: int
    #: Reconstructor steps of the recipe and out-of-distribution variants.
    variant_reconstructor_steps: int
    #: Set sizes of the CelebA experiment (Table 5, Figures 2, 11, 12; :data:`IDENTITY_TASKS`).
    identity_set_sizes: tuple[int, ...]
    #: Training shadow heads of the CelebA experiment.
    identity_shadow_train: int
    #: Reconstructor steps of the CelebA experiment.
    identity_steps: int
    #: The restart rule's largest number of trainings per head (the authors' 100 at ``paper`` scale).
    identity_max_attempts: int
    #: The CelebA experiment's data: ``None`` or ``dataset`` (``dataset``'s; an identity is then a class), or
    #: ``"celeba"`` (CelebA's photos and identities from ``data_dir/celeba`` by :func:`celeba_data`; ``paper``).
    identity_dataset: str | None
    #: The CelebA extractor's weights (the authors' ``WideResNet50_CelebA_Attributes_20EP.pth``; ``None``:
    #: ImageNet's).
    identity_checkpoint: str | None
    #: The CelebA reconstructor's width (Table 2's S = 512 for CelebA).
    identity_hidden: int
    #: Set size of the DP-SGD sweep of Section 4 (Fig. 4).
    dp_set_size: int
    #: Noise multipliers of the DP-SGD sweep.
    dp_noise_multipliers: tuple[float, ...]
    #: Clipping norm of the DP-SGD sweep (Section 4: 4.0 for MNIST, 1.2 for CIFAR).
    dp_max_grad_norm: float
    #: Training shadow heads per noise level of the DP-SGD sweep.
    dp_shadow_train: int
    #: Reconstructor steps per noise level of the DP-SGD sweep.
    dp_reconstructor_steps: int
    #: How many entries of each of the four noise -> epsilon tables of the authors' README
    #: (:data:`PAPER_README_EPSILONS`, five each) the accounting check recomputes (:func:`readme_accounting`).
    readme_entries: int
    #: Validation heads whose sets share no image, as the authors' (892 at ``N = 10``, 223 at ``N = 40`` from
    #: MNIST's test set; the ``paper`` scale's); else each set is drawn independently (``ci``, ``book``).
    disjoint_validation: bool
    #: Train the reconstructors of a sweep that share an architecture, heads count and length as one stacked model
    #: (:func:`compendium.attacks.shadow_reconstructor.train_reconstructors`; the same results up to float rounding,
    #: the GPU busy with all of them at batch 32); ``None``: on CUDA only, so that no CPU run's numbers move.
    stack_reconstructors: bool | None

    def validate(self) -> None:
        validation.choice("dataset", self.dataset, tuple(DATASETS))
        validation.choice("reconstructor", self.reconstructor, RECONSTRUCTORS)
        if self.identity_dataset is not None:
            validation.choice("identity_dataset", self.identity_dataset, (self.dataset, "celeba"))
        if self.identity_checkpoint is not None and self.identity_source != "celeba":
            raise ValueError(f"identity_checkpoint={self.identity_checkpoint!r} with the CelebA experiment on "
                             f"{self.identity_source!r}; allowed: None (the checkpoint is CelebA's WideResNet-50-2)")
        if self.dataset in ("digits", "mnist_digits") and self.reconstructor == "residual":
            raise ValueError(f"reconstructor='residual' with dataset={self.dataset!r}; allowed: 'mlp' (Table 2's "
                             "generator outputs 32x32 images, the digits are 8x8 and the shipped MNIST digits 28x28)")
        if not isinstance(self.identity_set_sizes, tuple) or not self.identity_set_sizes or len(
                set(self.identity_set_sizes)) < len(self.identity_set_sizes):
            raise ValueError(f"identity_set_sizes={self.identity_set_sizes!r}; allowed: a non-empty tuple of distinct "
                             "set sizes")
        sizes = [*(("set_sizes", n) for n in self.set_sizes), ("dp_set_size", self.dp_set_size),
                 *(("identity_set_sizes", n) for n in self.identity_set_sizes)]
        for name, n in sizes:
            validation.integer(name, n, minimum=NUM_CLASSES)
            if n % NUM_CLASSES:
                raise ValueError(f"{name}={n!r}; allowed: a multiple of the {NUM_CLASSES} classes (sets of N = 10 M "
                                 "images)")
            if self.dataset == "digits" and n // NUM_CLASSES > 17:
                raise ValueError(f"{name}={n!r}; allowed: at most 170 (the digits pools hold >= 17 images of "
                                 "every class)")
        validation.integer("shadow_train", self.shadow_train, minimum=2, what="K >= 2 training shadow heads")
        validation.integer("shadow_val", self.shadow_val, minimum=1, what="K >= 1 validation shadow heads")
        validation.integer("reconstructor_steps", self.reconstructor_steps)
        validation.integer("unconditional_steps", self.unconditional_steps)
        validation.integer("dp_reconstructor_steps", self.dp_reconstructor_steps)
        validation.integer("hidden", self.hidden)
        validation.integer("extractor_epochs", self.extractor_epochs)
        validation.integer("extractor_hidden", self.extractor_hidden)
        if self.init_std is not None:
            validation.positive("init_std", self.init_std)
        for k in self.shadow_counts:
            validation.integer("shadow_counts", k, minimum=2)
        for std in self.init_stds:
            validation.positive("init_stds", std)
        if not all(isinstance(v, bool) for v in self.binary_variants):
            raise ValueError(f"binary_variants={self.binary_variants!r}; allowed: a tuple of True / False")
        if not isinstance(self.training_variants, tuple) or len(set(self.training_variants)) < len(
                self.training_variants):
            raise ValueError(f"training_variants={self.training_variants!r}; allowed: a tuple of distinct names of "
                             f"{tuple(TRAINING_VARIANTS)}")
        for name in self.training_variants:
            validation.choice("training_variants", name, tuple(TRAINING_VARIANTS))
        if not isinstance(self.ood, bool):
            raise ValueError(f"ood={self.ood!r}; allowed: True or False")
        validation.integer("variant_shadow_train", self.variant_shadow_train, minimum=2)
        validation.integer("variant_reconstructor_steps", self.variant_reconstructor_steps)
        validation.integer("identity_shadow_train", self.identity_shadow_train, minimum=2)
        validation.integer("identity_steps", self.identity_steps)
        validation.integer("identity_max_attempts", self.identity_max_attempts)
        validation.integer("identity_hidden", self.identity_hidden)
        validation.grid("dp_noise_multipliers", self.dp_noise_multipliers, what="noise multipliers")
        validation.positive("dp_max_grad_norm", self.dp_max_grad_norm)
        validation.integer("dp_shadow_train", self.dp_shadow_train, minimum=2)
        validation.choice("readme_entries", self.readme_entries, (1, 2, 3, 4, 5))
        if not isinstance(self.disjoint_validation, bool):
            raise ValueError(f"disjoint_validation={self.disjoint_validation!r}; allowed: True or False")
        if self.stack_reconstructors is not None and not isinstance(self.stack_reconstructors, bool):
            raise ValueError(f"stack_reconstructors={self.stack_reconstructors!r}; allowed: None (on CUDA only), True "
                             "or False")

    @property
    def head_init_std(self) -> float:
        """The class heads' initialisation: :attr:`init_std`, else the dataset's row of Table 3 (:data:`DATASETS`)."""
        return self.init_std if self.init_std is not None else DATASETS[self.dataset]["init_std"]

    @property
    def identity_source(self) -> str:
        """The CelebA experiment's data: ``identity_dataset``, or ``dataset`` when that is ``None``."""
        return self.identity_dataset or self.dataset


#: The paper scale's values that differ for CIFAR: Table 2's width S = 512 and Section 4's clipping norm C = 1.2.
PAPER_CIFAR = dict(hidden=512, dp_max_grad_norm=1.2)


def settings(scale: str = "book", device: str = "auto", seed: int = 0, **overrides) -> Settings:
    """The chapter's settings: the scale's values (at ``paper`` scale with ``dataset="cifar10"``, CIFAR's
    :data:`PAPER_CIFAR`; with ``dataset="digits"`` or ``"mnist_digits"``, the offline run at the paper's counts, the
    CelebA experiment on those digits too), replaced by every override that is not ``None``."""
    if scale == "paper" and overrides.get("dataset") == "cifar10":
        overrides = {**PAPER_CIFAR, **{k: v for k, v in overrides.items() if v is not None}}
    offline = overrides.get("dataset") in ("digits", "mnist_digits")
    if scale == "paper" and offline and overrides.get("identity_dataset") is None:
        overrides = {**overrides, "identity_dataset": overrides["dataset"]}
    return resolve(Settings, SCALES, scale, device, seed, overrides)


#: Table 2's D_Theta, the trained head parameters the reconstructor reads (MNIST, CIFAR-10 and CelebA experiments).
PAPER_TABLE2_D_THETA = {"MNIST": 2570, "CIFAR": 12810, "CelebA": 8201}


#: The width of the paper's frozen features (Appendix D.1): VGGtiny's last hidden layer for MNIST, EfficientNet-B0's
#: pooled features for CIFAR-10, WideResNet-50-2's for CelebA; and the row of the heads trained on them.
PAPER_EXTRACTOR_FEATURES = {"MNIST": (256, "mnist", False), "CIFAR": (1280, "cifar10", False),
                            "CelebA": (2048, "celeba", True)}


#: Section 4: the accuracy (percentage points) that defending the attack costs, at N = 10 ("over 30") and N = 40
#: ("slightly above 10"), for MNIST and CIFAR alike.
PAPER_DEFENCE_ACCURACY_COST = {10: 30, 40: 10}


PAPER_SHADOW_TRAIN = SCALES["paper"]["shadow_train"]  # Section 3.1: training shadow heads per experiment
