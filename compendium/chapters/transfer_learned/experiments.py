"""The transfer-learning chapter's experiments: the data pools and the feature extractor, one attack
(:func:`run_attack`, Algorithms 1 and 3 with the reconstructor of Section 3.1) and the sweeps of Sections 3.2 and 4
that re-run it, and the privacy accounting of the authors' README."""
from __future__ import annotations

import dataclasses
import hashlib
import math
import os
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd
import torch
from tqdm import tqdm

from compendium import data, metrics, models, standin, train, validation
from compendium.attacks import shadow_reconstructor as attack
from compendium.attacks.shadow_store import locked
from compendium.attacks.transfer_heads import (
    NUM_CLASSES,
    TRAINING_VARIANTS,
    Attack,
    AttackResult,
    IDENTITY_TASKS,
    HeadRecipe,
    compared_images,
    epsilons,
    head_accuracy,
    identity_head_scores,
    shadow_heads,
)
from compendium.base import in_repository, resolve_device
from compendium.chapters.transfer_learned.results import reconstruction_examples
from compendium.chapters.transfer_learned.settings import (
    OOD,
    PAPER_BINARY,
    PAPER_README_EPSILONS,
    PAPER_ROW,
    PAPER_TABLE1,
    PAPER_VARIANTS,
    POOL_SIZES,
    Settings,
)
from compendium.data import Pools
from compendium.models.extractors import Extractor, vggtiny_checkpoint


def readme_accounting(entries: int = 5) -> pd.DataFrame:
    """The first ``entries`` of each table of the authors' README (:data:`PAPER_README_EPSILONS`, the largest noise
    first) beside :func:`epsilons` of the same noise multiplier under its dataset's recipe (Table 3's epochs): one
    row per entry."""
    validation.choice("entries", entries, (1, 2, 3, 4, 5))
    return pd.DataFrame([{"data": PAPER_ROW[dataset], "N": n, "noise multiplier": sigma, "repository ε": eps,
                          **epsilons(HeadRecipe.of(dataset, n), sigma)}
                         for (dataset, n), table in PAPER_README_EPSILONS.items()
                         for sigma, eps in list(table.items())[:entries]])


def pools(cfg: Settings) -> Pools:
    """The chapter's three disjoint pools, images in [-1, 1] (the paper's ``X / 127.5 - 1``).

    * ``digits``: scikit-learn's digits, permuted by ``numpy.random.default_rng(cfg.seed)`` and cut into 500 / 800 /
      497 images (the 0-16 gray levels ``X`` to ``X / 8 - 1``);
    * ``mnist_digits`` (offline, 28x28): the shipped Fashion-MNIST subset's 10,000 training images
      (:func:`compendium.data.fashion_mnist_subset`; a 28x28 domain other than the digits, as the paper's EMNIST
      letters) / the 8,000 ``"train"`` / the 2,000 ``"test"`` digits of :func:`compendium.data.mnist_digits`, split by
      ``cfg.seed``;
    * ``mnist``: EMNIST letters (train split, 26 classes) / MNIST train / MNIST test, resized to 32x32 (bilinear,
      antialiased, as the authors' ``Resize(32, antialias=True)``);
    * ``cifar10``: CIFAR-100 train (100 classes) / CIFAR-10 train / CIFAR-10 test.

    The paper's data are read from ``cfg.data_dir``; a missing file raises ``FileNotFoundError`` saying what to put
    where."""
    if cfg.dataset == "digits":
        x, y = data.digits("all")
        perm = torch.from_numpy(np.random.default_rng(cfg.seed).permutation(len(y)))
        x, y = 2 * x[perm] - 1, y[perm]
        a, b = POOL_SIZES["pretrain"], POOL_SIZES["pretrain"] + POOL_SIZES["train"]
        return Pools((x[:a], y[:a]), (x[a:b], y[a:b]), (x[b:], y[b:]))
    if cfg.dataset == "mnist_digits":
        parts = (data.fashion_mnist_subset("train"), data.mnist_digits("train", cfg.seed),
                 data.mnist_digits("test", cfg.seed))
        return Pools(*((2 * x - 1, y) for x, y in parts))
    root = in_repository(cfg.data_dir)
    if cfg.dataset == "mnist":
        def mnist32(x):
            return 2 * torch.nn.functional.interpolate(x, size=32, mode="bilinear", antialias=True) - 1

        pretrain = data.emnist_letters(root / "emnist", "train")
        train_split, test_split = data.mnist(root / "mnist", "train"), data.mnist(root / "mnist", "test")
        return Pools(*((mnist32(x), y) for x, y in (pretrain, train_split, test_split)))
    pretrain = data.cifar100(root / "cifar100", "train")
    train_split, test_split = data.cifar10(root / "cifar10", "train"), data.cifar10(root / "cifar10", "test")
    return Pools(*((2 * x - 1, y) for x, y in (pretrain, train_split, test_split)))


def feature_extractor(cfg: Settings, pool: Pools, progress: bool = False) -> Extractor:
    """The pre-trained base model whose frozen features the heads are trained on (Appendix D.1).

    * ``digits``: an MLP (64 -> F -> F -> 10, ReLU) trained with AdamW on the pre-training pool only; its post-ReLU
      penultimate layer is the ``F``-dimensional deep feature; its accuracy is on the validation pool (the same task);
    * ``mnist_digits``: the same MLP on 28x28 inputs (784 -> F -> F -> 10) trained on the Fashion-MNIST pool only, as
      the paper's VGGtiny on EMNIST letters: another domain, so its accuracy is on Fashion-MNIST's shipped test
      subset (its own task), not on the digits;
    * ``mnist``: the paper's VGGtiny trained on EMNIST letters (Adam, lr 1e-4, batches of 256, ``cfg.extractor_epochs``
      epochs; the authors' random-affine augmentation is left out), or loaded from the authors'
      ``VGGtiny_classifier_EMNIST_50EP.pth`` given as ``cfg.extractor_checkpoint``; 256 features; with a
      ``cfg.shadow_dir`` its training is checkpointed there (:func:`compendium.train.fit`) and resumed after a crash,
      and the pools' features are saved beside it (:func:`saved_features`);
    * ``cifar10``: TorchVision's EfficientNet-B0, with the authors' CIFAR-100 fine-tuned weights when
      ``cfg.extractor_checkpoint`` is given (ImageNet weights otherwise), on the paper's 224x224 input; 1280 features.
    """
    device = resolve_device(cfg.device)

    def seeded() -> torch.Generator:  # the initial weights and the batches each from a generator seeded cfg.seed
        return torch.Generator().manual_seed(cfg.seed)

    start = time.perf_counter()
    if cfg.dataset == "cifar10":
        checkpoint = None if cfg.extractor_checkpoint is None else in_repository(cfg.extractor_checkpoint)
        model = models.transfer_extractor("efficientnet_b0", checkpoint=checkpoint, device=device)
        transform = models.transfer_transform("efficientnet_b0")
        return Extractor(model, math.nan, time.perf_counter() - start, lambda x: transform((x + 1) / 2), 256,
                         whole_model=True)
    if cfg.dataset == "mnist":
        model = models.VGGTiny(num_classes=26, generator=seeded())
        if cfg.extractor_checkpoint is None:  # saved as it trains beside the stored heads, resumed after a crash
            saved = None if cfg.shadow_dir is None else in_repository(cfg.shadow_dir) / (
                f"extractor-vggtiny-emnist{len(pool.pretrain[1])}-epochs{cfg.extractor_epochs}-seed{cfg.seed}.pt")
            with locked(saved):  # the chapter's jobs side by side: one trains it, the others wait and load it
                train.train_classifier(model, pool.pretrain, cfg.extractor_epochs, lr=1e-4, optimizer="adam",
                                       batch_size=256, generator=seeded(), device=cfg.device, progress=progress,
                                       checkpoint=saved)
        else:
            saved = None
            model.load_authors_state_dict(vggtiny_checkpoint(cfg.extractor_checkpoint))
        model.to(device).eval().requires_grad_(False)
        extractor = Extractor(model, math.nan, time.perf_counter() - start)  # letters, not digits: no head accuracy
        return extractor if saved is None else saved_features(
            extractor, pool, saved.with_name(f"features-{saved.stem}.pt"))
    side = pool.pretrain[0].shape[-1]  # 8 (the digits) or 28 (Fashion-MNIST)
    model = models.MnistMLP(1, side, NUM_CLASSES, hidden=cfg.extractor_hidden, generator=seeded())
    train.train_classifier(model, pool.pretrain, cfg.extractor_epochs, generator=seeded(), device=cfg.device,
                           progress=progress, batch_size=32 if cfg.dataset == "digits" else 128)
    seconds = time.perf_counter() - start
    model.eval().requires_grad_(False)
    if cfg.dataset == "digits":
        x, y = pool.validation
    else:  # its own task's held-out images
        x, y = data.fashion_mnist_subset("test")
        x = 2 * x - 1
    return Extractor(model, train.accuracy(model, x.to(device), y.to(device)), seconds)


def saved_features(extractor: Extractor, pool: Pools, path: Path) -> Extractor:
    """``extractor`` with the features of ``pool``'s training and validation images read from ``path``, computed
    and written there the first time (under its lock, atomically), so that every process of a run (the chapter's
    jobs on several cards, then the notebook) trains and scores on the same features bit for bit whatever device
    computed them: the head stores' fingerprints hash them.  The file keeps a digest of the images; other images
    recompute it."""
    digest = hashlib.sha256(pool.train[0].contiguous().numpy())
    digest.update(pool.validation[0].contiguous().numpy())
    with locked(path):
        stored = torch.load(path, weights_only=True) if path.is_file() else {}
        if stored.get("images") != digest.hexdigest():
            stored = {"images": digest.hexdigest(), "train": extractor.features(pool.train[0]),
                      "validation": extractor.features(pool.validation[0])}
            torch.save(stored, path.with_name(path.name + ".part"))
            path.with_name(path.name + ".part").replace(path)
    extractor._cached[id(pool)] = (pool, stored["train"], stored["validation"])  # as pool_features keeps them
    return extractor


#: CelebA's faces are reconstructed at 64 x 64 (Section 3.1); its photos are read this many at a time.
CELEBA_RESOLUTION, CELEBA_BATCH = 64, 256


#: CelebA's splits of the adversary's and the victims' pools (Section 3.1, the authors' code).
CELEBA_POOLS = ("train+valid", "test")


def celeba_data(cfg: Settings, progress: bool = False) -> tuple[Pools, Extractor]:
    """The CelebA experiment's pools and extractor (Section 3.1, Appendix D): the adversary draws its shadow sets
    from the ``"train+valid"`` split (182,637 photos), the victims' sets come from ``"test"`` (19,962), the labels
    are the identities (read from ``cfg.data_dir/celeba``; a missing photo, annotation file or checkpoint raises
    ``FileNotFoundError`` before any work).  The extractor is TorchVision's WideResNet-50-2 with the authors'
    CelebA-attribute weights (``cfg.identity_checkpoint``; ImageNet's otherwise), 2,048 features of the 224 x 224
    crop, and the targets that crop at 64 x 64 (:func:`compendium.data.celeba_crops`): each photo is read once, its
    features computed on ``cfg.device`` and only its face kept, the training faces as uint8 (2.2 GB; 9 GB as
    float32), the validation faces in [-1, 1].  There is no pre-training pool: the extractor comes trained.

    The faces and features are saved to ``cfg.data_dir/celeba/compendium-<weights>.pt`` (about 4 GB) and read from
    there while the photos' names are the same, as the authors precompute theirs: features recomputed on another GPU
    could differ in their last bits, and a stored run of shadow heads (:func:`run_attack`) is tied to exact ones."""
    root = in_repository(cfg.data_dir) / "celeba"
    splits = [data.celeba_identities(root, split) for split in CELEBA_POOLS]
    device = resolve_device(cfg.device)
    start = time.perf_counter()
    checkpoint = None if cfg.identity_checkpoint is None else in_repository(cfg.identity_checkpoint)
    model = models.transfer_extractor("wide_resnet50_2", checkpoint=checkpoint, device=device)
    mean, std = (torch.tensor(v, device=device).view(1, 3, 1, 1) for v in models.IMAGENET_NORMALIZATION)
    extractor = Extractor(model, math.nan, 0.0, lambda x: ((x + 1) / 2 - mean) / std, CELEBA_BATCH,
                          whole_model=True)  # its input: the 224 x 224 crops in [-1, 1]
    cache = root / f"compendium-{'imagenet' if checkpoint is None else checkpoint.stem}.pt"
    names = [[f.name for f in files] for files, _ in splits]
    with locked(cache):  # jobs side by side: one process reads the photos, the others wait and load
        stored = torch.load(cache, weights_only=True) if cache.is_file() else {}
        if stored.get("names") != names:
            stored = {"names": names, "faces": [], "features": []}
            for files, _ in splits:
                faces, feats = [], []
                batches = data.celeba_batches(files, resolution=CELEBA_RESOLUTION, batch_size=CELEBA_BATCH,
                                              workers=0 if device.type == "cpu" else min(8, os.cpu_count() or 1))
                for crops, face in tqdm(batches, desc="CelebA photos", unit="batch", disable=not progress):
                    feats.append(extractor.features(attack.signed_unit(crops)))
                    faces.append(face)
                stored["faces"].append(torch.cat(faces))
                stored["features"].append(torch.cat(feats))
            torch.save(stored, cache.with_suffix(".partial"))
            cache.with_suffix(".partial").replace(cache)  # never a half-written file under the cache's name
    extractor.seconds = time.perf_counter() - start
    (train_faces, val_faces), ((_, train_ids), (_, val_ids)) = stored["faces"], splits
    empty = (torch.empty(0, 3, CELEBA_RESOLUTION, CELEBA_RESOLUTION), torch.empty(0, dtype=torch.int64))
    return Pools(empty, (train_faces, train_ids), (attack.signed_unit(val_faces), val_ids),
                 features=tuple(stored["features"])), extractor


def identity_data(cfg: Settings, pool: Pools, extractor: Extractor, progress: bool = False
                  ) -> tuple[Pools, Extractor]:
    """The pools and extractor of the CelebA experiment (``Attack(N, task="identity")``): CelebA's
    (:func:`celeba_data`) when ``cfg.identity_source`` is ``"celeba"``, else ``pool`` and ``extractor`` (an identity
    is then a class)."""
    return celeba_data(cfg, progress) if cfg.identity_source == "celeba" else (pool, extractor)


def identity_learning_rates(cfg: Settings, pool: Pools, extractor: Extractor, *, set_size: int = 10, count: int = 64
                            ) -> dict[float, float]:
    """Why the digits' identity heads train at a learning rate other than Table 3's CelebA row: for Table 3's rate and
    for the one this run uses (:data:`~compendium.attacks.transfer_heads.IDENTITY_TASKS`), the share of ``count``
    one-identity heads (``N = set_size``, drawn from ``cfg.seed``) whose training loss is still at least
    :data:`~compendium.attacks.transfer_heads.RESTART_LOSS` after one training of Table 3's 100 epochs, before the
    restart rule; ``{lr: share}``, Table 3's rate first."""
    validation.integer("count", count)
    recipe = dataclasses.replace(HeadRecipe.of(cfg.identity_source, set_size, identity=True), max_attempts=1)
    labels, features = pool.train[1], extractor.pool_features(pool)[0]
    shares = {}
    for lr in dict.fromkeys((IDENTITY_TASKS["celeba"]["lr"], recipe.lr)):
        generator = torch.Generator().manual_seed(cfg.seed)
        sets = recipe.sets(labels, count=count, generator=generator)
        x, y = features[sets.flatten(1)], recipe.set_targets(sets, labels)
        heads = train.fit_binary_heads(x, y, hidden=recipe.hidden, steps=recipe.epochs, lr=lr,
                                       weight_decay=recipe.weight_decay, init_std=recipe.init_std,
                                       generator=generator, pos_weight=recipe.pos_weight, device=cfg.device)
        shares[lr] = float((heads.loss(x, y, recipe.pos_weight) >= recipe.restart_loss).double().mean())
    return shares


def attack_recipe(cfg: Settings, spec: Attack) -> HeadRecipe:
    """The victims' recipe of the attack ``spec``: the row of ``cfg``'s dataset for its task, with ``spec.init_std``
    if given, else, for the class heads, ``cfg.init_std`` if set (the binary and CelebA tasks keep their rows'
    values), changed by ``spec.variant``; the CelebA task restarts at most ``cfg.identity_max_attempts`` times."""
    init_std = spec.init_std if spec.init_std is not None or spec.task != "classes" else cfg.init_std
    dataset = cfg.identity_source if spec.identity else cfg.dataset
    recipe = HeadRecipe.of(dataset, spec.set_size, init_std, binary=spec.binary, variant=spec.variant,
                           identity=spec.identity)
    return dataclasses.replace(recipe, max_attempts=cfg.identity_max_attempts) if spec.identity else recipe


def validation_count(cfg: Settings, spec: Attack, labels: torch.Tensor) -> int:
    """How many validation heads :func:`run_attack` trains for ``spec`` on a validation pool with ``labels``:
    ``cfg.shadow_val``, or with ``cfg.disjoint_validation`` (not for the identity task) at most as many sets
    without a shared image as the pool holds (:func:`~compendium.attacks.shadow_reconstructor.disjoint_set_count`)."""
    if not cfg.disjoint_validation or spec.identity:
        return cfg.shadow_val
    most = attack.disjoint_set_count(labels, per_class=spec.set_size // NUM_CLASSES, num_classes=NUM_CLASSES)
    return min(cfg.shadow_val, most)


def attack_files(cfg: Settings, spec: Attack, *, val_count: int) -> tuple[Path | None, Path | None]:
    """Where :func:`run_attack` keeps the attack ``spec``'s training shadow heads (a store folder in
    ``cfg.shadow_dir``) and its reconstructor's training (a :func:`compendium.train.fit` checkpoint in that folder),
    each named by everything it depends on and by no device, so that a run on one card is found by a run on
    another; ``(None, None)`` without ``cfg.shadow_dir`` (heads in memory, no checkpoint)."""
    if cfg.shadow_dir is None:
        return None, None
    identity, variant, sigma = spec.identity, spec.variant, spec.noise_multiplier
    shadow_train = spec.shadow_train or (cfg.identity_shadow_train if identity else cfg.shadow_train)
    steps = spec.steps or (cfg.identity_steps if identity else cfg.reconstructor_steps)
    store = in_repository(cfg.shadow_dir) / (
        f"{cfg.identity_source if identity else cfg.dataset}{'-binary' if spec.binary else ''}"
        f"{'-canonical' if spec.canonical else ''}"
        f"{'' if variant is None else '-' + variant.replace(' ', '').replace('/', '-')}{'-ood' if spec.ood else ''}"
        f"{'-identity' if identity else ''}"
        f"-N{spec.set_size}"
        f"-K{shadow_train}-std{attack_recipe(cfg, spec).init_std:g}-sigma{sigma}"
        f"{'' if sigma is None else f'-C{cfg.dp_max_grad_norm:g}'}-seed{cfg.seed}")
    width = cfg.identity_hidden if identity else cfg.hidden
    checkpoint = store / (  # the reconstructor's identity beside its heads'
        f"reconstructor-{cfg.reconstructor}{width}-{'conditional' if spec.conditional else 'unconditional'}"
        f"-steps{steps}{'-curves' if spec.curves else ''}-val{val_count}.pt")
    return store, checkpoint


#: The validation heads' random stream: ``cfg.seed * 1000 + N + VALIDATION_STREAM`` (the training heads' is
#: ``cfg.seed * 1000 + N``).
VALIDATION_STREAM = 500


def run_attack(cfg: Settings, pool: Pools, extractor: Extractor, spec: Attack, *, progress: bool = True
               ) -> AttackResult:
    """The attack ``spec`` from its heads to its tables (:func:`prepare_attack`, the reconstructor's training under
    its checkpoint's lock, then the scores)."""
    training, finish = prepare_attack(cfg, pool, extractor, spec, progress=progress)
    start = time.perf_counter()
    with locked(training.checkpoint):  # the same job twice at once: the second waits, then loads the first's
        history = training.run(device=cfg.device, progress=progress)
    return finish(history, time.perf_counter() - start)


def prepare_attack(cfg: Settings, pool: Pools, extractor: Extractor, spec: Attack, *, progress: bool = True
                   ) -> tuple[attack.ReconstructorTraining, Callable[[dict, float], AttackResult]]:
    """The whole attack ``spec`` (an :class:`~compendium.attacks.transfer_heads.Attack`, which says what is attacked,
    how the victims train and what the adversary does): Algorithm 1 on the training pool (``spec.shadow_train``
    heads, default ``cfg.shadow_train``, ``cfg.identity_shadow_train`` for the identity task) and on the validation
    pool (``cfg.shadow_val`` heads; with ``cfg.disjoint_validation`` as many sets without a shared image as the pool
    holds, at most that many), the weight statistics, the reconstructor trained with Eq. (3) for ``spec.steps`` Adam
    steps (default ``cfg.reconstructor_steps``, ``cfg.identity_steps`` for the identity task; rounded up to whole
    passes over the heads), and Algorithm 3's tables ``H0``, ``H1`` with ``H1*``. Every draw comes from generators
    seeded by ``cfg.seed`` and the set size, so the same attack gives the same numbers; the validation heads' from
    one of their own (:data:`VALIDATION_STREAM`), so that every attack at the same ``N`` and task has the same
    victims' sets. DP-SGD clips at ``cfg.dp_max_grad_norm``. With ``spec.ood`` the adversary's shadow sets and the
    reconstructor's targets come from :func:`out_of_distribution_pool`, while ``tau_NN`` and the prior draws of
    ``H1*`` stay those of the data distribution. The identity task's reconstructor is the paper's CelebA one:
    unconditional, trained and scored against the identity's ``M`` images only. With ``spec.curves`` the
    reconstructor is scored after every pass over the heads (:func:`training_curves`): the validation heads' Eq. (3)
    loss and TPR at FPR = 0.01, the latter against surrogate draws from a generator of their own, so that the run's
    numbers do not change.

    Returned in two parts, so that reconstructors can train together (:func:`run_attacks`): the reconstructor's
    training (:class:`~compendium.attacks.shadow_reconstructor.ReconstructorTraining`, not yet run) and
    ``finish(history, seconds)``, which scores the trained reconstructor and returns the
    :class:`~compendium.attacks.transfer_heads.AttackResult`."""
    if not isinstance(spec, Attack):
        raise ValueError(f"spec={spec!r}; allowed: an Attack (compendium.attacks.transfer_heads.Attack)")
    identity, canonical, ood = spec.identity, spec.canonical, spec.ood
    set_size, conditional, noise_multiplier = spec.set_size, spec.conditional, spec.noise_multiplier
    shadow_train = spec.shadow_train or (cfg.identity_shadow_train if identity else cfg.shadow_train)
    steps = spec.steps or (cfg.identity_steps if identity else cfg.reconstructor_steps)
    epochs, steps_run = attack.whole_passes(steps, heads=shadow_train)
    dataset = cfg.identity_source if identity else cfg.dataset
    recipe = attack_recipe(cfg, spec)
    dp_options = {} if noise_multiplier is None else dict(noise_multiplier=noise_multiplier,
                                                          max_grad_norm=cfg.dp_max_grad_norm)
    perceptual = (metrics.lpips_network("vgg", resolve_device(cfg.device)) if dataset in ("cifar10", "celeba")
                  else None)  # Section 3.1: LPIPS for CIFAR and CelebA
    generator = torch.Generator().manual_seed(cfg.seed * 1000 + set_size)
    seconds = {}
    start = time.perf_counter()
    train_x, train_y = out_of_distribution_pool(cfg, pool) if ood else pool.train
    val_x, val_y = pool.validation
    feats_train, feats_val = extractor.pool_features(pool)
    if ood:
        feats_train = extractor.features(train_x)
    val_count = validation_count(cfg, spec, val_y)
    store, checkpoint = attack_files(cfg, spec, val_count=val_count)
    fingerprint = None
    if store is not None:  # a stored run is tied to the exact features and labels it was trained on
        hasher = hashlib.sha256(feats_train.numpy())  # 1.5 GB of CelebA features: hashed in place, not copied
        hasher.update(train_y.numpy())
        digest = hasher.hexdigest()[:16]
        fingerprint = {"dataset": dataset, "seed": cfg.seed, "features": digest}
    train_sets, train_weights = shadow_heads(feats_train, train_y, recipe, count=shadow_train, generator=generator,
                                           device=cfg.device, store=store, progress=progress,
                                           fingerprint=fingerprint, canonical=canonical, **dp_options)
    disjoint = cfg.disjoint_validation and not identity  # the authors' validation sets share no image
    # the victims from a stream of their own: every attack at this N (other training heads, DP-SGD, another recipe)
    # attacks heads on the same sets, from the same initial weights
    val_generator = torch.Generator().manual_seed(cfg.seed * 1000 + set_size + VALIDATION_STREAM)
    val_sets, val_weights = shadow_heads(feats_val, val_y, recipe, count=val_count, generator=val_generator,
                                       device=cfg.device, canonical=canonical, disjoint=disjoint, **dp_options)
    seconds["shadow heads"] = time.perf_counter() - start
    scores = identity_head_scores(val_weights, feats_val, val_y, val_sets, recipe) if identity else {}
    accuracy = scores["accuracy"] if identity else head_accuracy(val_weights, feats_val, val_y, recipe)

    statistics = attack.WeightStatistics.fit(train_weights, device=cfg.device)
    val_w = statistics.standardise(val_weights)
    val_images = compared_images(val_x, val_sets, conditional=conditional, identity=identity)
    on_epoch = None
    if spec.curves:
        curve_surrogate = statistics.surrogate(val_count, torch.Generator().manual_seed(cfg.seed + 1))

        def on_epoch(net):
            h0 = attack.min_mse_table(net, val_w, val_images, conditional=conditional)
            h1 = attack.min_mse_table(net, curve_surrogate, val_images, conditional=conditional)
            return {"validation loss": attack.validation_loss(net, val_w, val_images, conditional=conditional,
                                                              perceptual=perceptual),
                    "TPR@FPR=0.01": attack.tpr_at_fpr(h0, h1)}
    inputs = train_weights.shape[1] + (NUM_CLASSES if conditional else 0)
    width = cfg.identity_hidden if identity else cfg.hidden
    if cfg.reconstructor == "residual":
        model = models.ResidualReconstructor(inputs, width=width, out_channels=train_x.shape[1],
                                             size=train_x.shape[-1], generator=generator)
    else:
        model = models.MLPReconstructor(inputs, tuple(train_x.shape[1:]), width, generator=generator)
    training = attack.ReconstructorTraining(model, train_weights, train_sets[:, :1] if identity else train_sets,
                                            train_x, epochs, generator,
                                            statistics=statistics, perceptual=perceptual, conditional=conditional,
                                            on_epoch=on_epoch, checkpoint=checkpoint)

    def finish(history: dict, reconstructor_seconds: float) -> AttackResult:
        history["steps"] = [steps_run * (epoch + 1) // epochs for epoch in range(len(history["loss"]))]
        seconds["reconstructor"] = reconstructor_seconds
        surrogate = statistics.surrogate(val_count, generator)
        h0 = attack.min_mse_table(model, val_w, val_images, conditional=conditional)
        h1 = attack.min_mse_table(model, surrogate, val_images, conditional=conditional)
        h_prior = attack.prior_table(pool.train[0], val_images, generator)  # prior draws disjoint from the sets
        tau = attack.nearest_neighbour_threshold(val_x, pool.train[0], device=cfg.device)
        return AttackResult(set_size, tau, h0, h1, h_prior, float(accuracy.mean()), float(accuracy.std()), model,
                            statistics, val_w, val_sets, surrogate, history, seconds, conditional, identity, scores)

    return training, finish


#: The sections of :func:`chapter_attacks`, in the notebook's order; the identity task's attacks run on its own pools
#: (:func:`identity_data`).
SECTIONS = ("Table 1", "factors", "unconditional", "binary", "variants", "identity", "DP-SGD")


def chapter_attacks(cfg: Settings) -> dict[str, dict[object, Attack]]:
    """Every attack the chapter's notebook runs, one reconstructor's training each, by section (:data:`SECTIONS`) in
    the notebook's order, each under the key its table's row reads: ``"Table 1"`` one per ``N`` of
    ``cfg.set_sizes`` (scored after every pass, Fig. 3c); ``"factors"`` (:func:`factor_sweep`) keyed ``("shadow
    heads", K)`` (as many reconstructor steps as the main run takes, to within a pass over the K heads) and ``("init
    std", s)``; ``"unconditional"`` (Algorithm 2, ``N = 10``); ``"binary"``
    (:func:`binary_sweep`) keyed by ``canonical``; ``"variants"`` (:func:`variant_sweep`) keyed by the change
    (``None``: Table 3's recipe; :data:`OOD`); ``"identity"`` one per ``N`` of ``cfg.identity_set_sizes``;
    ``"DP-SGD"`` (:func:`dp_sweep`) keyed by the noise multiplier (0: without DP, where the sweep's budget is not
    the main run's).  The notebook, the sweeps and ``python -m
    compendium jobs`` (:func:`~compendium.chapters.transfer_learned.jobs.chapter_jobs`) all read this one list."""
    changes = [*cfg.training_variants, *([OOD] if cfg.ood else [])]
    _, main_steps = attack.whole_passes(cfg.reconstructor_steps, heads=cfg.shadow_train)  # the main run's, as run
    dp = {sigma: Attack(cfg.dp_set_size, shadow_train=cfg.dp_shadow_train, noise_multiplier=sigma,
                        steps=cfg.dp_reconstructor_steps) for sigma in cfg.dp_noise_multipliers}
    if not _dp_budget_is_main(cfg):  # the sweep's row without DP, at the sweep's budget
        dp = {0.0: Attack(cfg.dp_set_size, shadow_train=cfg.dp_shadow_train, steps=cfg.dp_reconstructor_steps)} | dp
    return {
        "Table 1": {n: Attack(n, curves=True) for n in cfg.set_sizes},
        "factors": {**{("shadow heads", k): Attack(10, shadow_train=k, steps=main_steps) for k in cfg.shadow_counts
                       if k != cfg.shadow_train},
                    **{("init std", s): Attack(10, init_std=s) for s in cfg.init_stds if s != cfg.head_init_std}},
        "unconditional": {10: Attack(10, conditional=False, steps=cfg.unconditional_steps)},
        "binary": {canonical: Attack(10, task="binary", canonical=canonical) for canonical in cfg.binary_variants},
        "variants": {change: Attack(10, shadow_train=cfg.variant_shadow_train, steps=cfg.variant_reconstructor_steps,
                                    variant=change if change in TRAINING_VARIANTS else None, ood=change == OOD)
                     for change in ([None, *changes] if changes else [])},
        "identity": {n: Attack(n, task="identity", curves=True) for n in cfg.identity_set_sizes},
        "DP-SGD": dp,
    }


def _dp_budget_is_main(cfg: Settings) -> bool:
    """Whether the DP-SGD sweep's attacks get the main run's shadow heads and steps at one of its set sizes (the
    ``paper`` scale): its row without DP is then the main run's, else an attack of its own at the sweep's budget
    (key 0), so that every row of the sweep is equally strong."""
    return (cfg.dp_set_size in cfg.set_sizes and cfg.dp_shadow_train == cfg.shadow_train
            and cfg.dp_reconstructor_steps == cfg.reconstructor_steps)


def run_section(cfg: Settings, pool: Pools, extractor: Extractor, section: str, *, progress: bool = False
                ) -> dict[object, AttackResult]:
    """:func:`run_attacks` on the attacks of one section of :func:`chapter_attacks`, the results under their keys."""
    validation.choice("section", section, SECTIONS)
    specs = chapter_attacks(cfg)[section]
    return dict(zip(specs, run_attacks(cfg, pool, extractor, list(specs.values()), progress=progress)))


def run_attacks(cfg: Settings, pool: Pools, extractor: Extractor, specs: list[Attack], *, workers: int | None = None,
                progress: bool = False) -> list[AttackResult]:
    """:func:`run_attack` for each of ``specs``, the results in the same order, ``workers`` attacks at a time on Python
    threads with one math-library thread each (default: as many as ``torch.get_num_threads()``, so one at a time on
    a GPU or where a book build gives each chapter one core). The reconstructor's small matrix products (batches of
    32 heads) keep two cores busier as two trainings side by side than as one training on two threads
    (``benchmarks/bench.py`` measures the ratio). Each attack draws only from generators of its own, so the results
    are those of the attacks run one after another; the first error is raised once every attack has ended.

    With ``cfg.stack_reconstructors`` (``None``: on CUDA) the attacks' reconstructors that share an architecture, a
    number of heads and a length train as one stacked model instead (:func:`run_stacked`)."""
    specs = list(specs)
    for spec in specs:
        if not isinstance(spec, Attack):
            raise ValueError(f"spec={spec!r}; allowed: an Attack (compendium.attacks.transfer_heads.Attack)")
    stack = cfg.stack_reconstructors
    if stack or (stack is None and resolve_device(cfg.device).type == "cuda"):
        return run_stacked(cfg, pool, extractor, specs, progress=progress)
    if workers is None:
        workers = 1 if resolve_device(cfg.device).type != "cpu" else torch.get_num_threads()
    validation.integer("workers", workers)
    workers = min(workers, len(specs))
    if workers <= 1:
        return [run_attack(cfg, pool, extractor, spec, progress=progress) for spec in specs]
    threads = torch.get_num_threads()
    try:
        with ThreadPoolExecutor(workers, initializer=torch.set_num_threads, initargs=(1,)) as threads_pool:
            futures = [threads_pool.submit(run_attack, cfg, pool, extractor, spec, progress=progress)
                       for spec in specs]
        return [future.result() for future in futures]
    finally:
        torch.set_num_threads(threads)


def run_stacked(cfg: Settings, pool: Pools, extractor: Extractor, specs: list[Attack], *, progress: bool = False
                ) -> list[AttackResult]:
    """:func:`run_attack` for each of ``specs`` with the reconstructors that share
    :meth:`~compendium.attacks.shadow_reconstructor.ReconstructorTraining.stack_key` (architecture, heads, epochs,
    loss) trained as one stacked model (:func:`~compendium.attacks.shadow_reconstructor.train_reconstructors`): the
    results of the separate attacks up to float rounding.  With ``cfg.shadow_dir`` a group holds its members'
    checkpoint locks, skips those already finished (loaded, as :func:`run_attack` does), saves its stacked run
    beside the first pending member's heads (``stacked-<digest>.pt``, resumed after a crash) and leaves each
    member's finished checkpoint where :func:`run_attack` and the chapter's jobs find it.  A member's
    ``seconds["reconstructor"]`` is its group's wall time."""
    prepared = [prepare_attack(cfg, pool, extractor, spec, progress=progress) for spec in specs]
    groups: dict[tuple, list[int]] = {}
    for i, (training, _) in enumerate(prepared):
        groups.setdefault(training.stack_key(), []).append(i)
    results: list[AttackResult | None] = [None] * len(specs)
    for members in groups.values():
        trainings = [prepared[i][0] for i in members]
        start = time.perf_counter()
        with ExitStack() as held:
            for path in sorted({t.checkpoint for t in trainings if t.checkpoint is not None}):
                held.enter_context(locked(path))  # in one order, so that two runs never wait on each other
            pending = [t for t in trainings if t.checkpoint is None or (train.checkpoint_progress(t.checkpoint)
                                                                         or (0, 1))[0] < t.epochs]
            stacked = {}
            if len(pending) > 1:
                names = "|".join(str(t.checkpoint) for t in pending)
                group = (None if any(t.checkpoint is None for t in pending) else pending[0].checkpoint.with_name(
                    f"stacked-{hashlib.sha256(names.encode()).hexdigest()[:12]}.pt"))
                histories = attack.train_reconstructors(pending, device=cfg.device, progress=progress,
                                                        checkpoint=group)
                stacked = {id(t): history for t, history in zip(pending, histories)}
            histories = [stacked[id(t)] if id(t) in stacked else t.run(device=cfg.device, progress=progress)
                         for t in trainings]
        seconds = time.perf_counter() - start
        for i, history in zip(members, histories):
            results[i] = prepared[i][1](history, seconds)
    return results


#: The validation heads that :func:`clipping_sweep` trains per clipping norm.
CLIPPING_HEADS = 200


def clipping_sweep(cfg: Settings, pool: Pools, extractor: Extractor, norms: tuple[float, ...], *,
                   heads: int = CLIPPING_HEADS) -> pd.DataFrame:
    """Step (3) of the paper's DP-SGD procedure (Section 4): the heads' test accuracy with clipping alone (DP-SGD at
    noise multiplier 0, Poisson rate 1/2) for each clipping norm, beside the non-private recipe; ``heads`` validation
    heads per norm, the same sets and initial weights for every row."""
    recipe = HeadRecipe.of(cfg.dataset, cfg.dp_set_size, cfg.init_std)
    val_y = pool.validation[1]
    feats = extractor.pool_features(pool)[1]
    rows = []
    for norm in (None, *norms):
        options = {} if norm is None else dict(noise_multiplier=0.0, max_grad_norm=norm)
        _, weights = shadow_heads(feats, val_y, recipe, count=heads, device=cfg.device,
                                  generator=torch.Generator().manual_seed(cfg.seed), **options)
        rows.append({"clipping norm C": math.inf if norm is None else norm,
                     "head accuracy": float(head_accuracy(weights, feats, val_y).mean())})
    return pd.DataFrame(rows)


def dp_sweep(cfg: Settings, pool: Pools, extractor: Extractor, reference: AttackResult, *, examples: int = 1,
             progress: bool = False) -> tuple[pd.DataFrame, dict]:
    """Section 4 (Fig. 4) for ``N = cfg.dp_set_size``: for every noise multiplier, every head (training and
    validation shadow heads) is re-trained with DP-SGD and a fresh reconstructor is trained on them; one row per
    noise level with epsilon (PRV and RDP at the code's q = 1/2, and PRV at the stated q), the heads' test accuracy,
    TPR*, FPR* and TPR at FPR = 0.01.  The first row (noise multiplier 0) is the attack without DP at the sweep's
    own shadow heads and steps; ``reference`` (the main run's attack at the same ``N``) stands in for it where the
    sweep's budget is the main run's.  Also returns Figs. 5 and 16's counterpart: per noise multiplier (0 without
    DP), the :func:`reconstruction_examples` of the first ``examples`` validation heads, trained on the same sets at
    every noise level (:data:`VALIDATION_STREAM`)."""
    recipe = HeadRecipe.of(cfg.dataset, cfg.dp_set_size, cfg.init_std)
    results = {0.0: reference} | run_section(cfg, pool, extractor, "DP-SGD", progress=progress)
    rows, shown = [], {}
    for sigma, result in results.items():
        eps = (dict.fromkeys(("eps_prv", "eps_rdp", "eps_prv_stated_q"), math.inf) if sigma == 0
               else epsilons(recipe, sigma))
        rows.append({"noise multiplier": sigma, **eps, **_rates_row(result)})
        shown[sigma] = reconstruction_examples(result, pool, heads=examples)
    return pd.DataFrame(rows), shown


def _rates_row(result: AttackResult) -> dict[str, float]:
    """A sweep's row of an attack: the heads' accuracy and the rates, each with its standard error."""
    s = result.summary()
    return {"head accuracy": s["head accuracy"], "TPR*": s["TPR*"], "FPR*": s["FPR*"],
            "TPR@FPR=0.01": s["TPR@FPR=0.01"], "TPR@FPR=0.01 SE": s["TPR@FPR=0.01 SE"],
            "TPR* SE": s["TPR* SE"], "FPR* SE": s["FPR* SE"]}


def factor_sweep(cfg: Settings, pool: Pools, extractor: Extractor, reference: AttackResult,
                 progress: bool = False) -> pd.DataFrame:
    """Section 3.2's factors at ``N = 10`` (Fig. 3a and 3b): the attack re-run with each number of training shadow
    heads in ``cfg.shadow_counts`` and with each initialisation standard deviation in ``cfg.init_stds``; one row per
    run (the reference run, ``cfg.shadow_train`` heads at ``cfg.head_init_std``, is included in both), each rate with
    its standard error."""
    results = run_section(cfg, pool, extractor, "factors", progress=progress)
    results |= {("shadow heads", cfg.shadow_train): reference, ("init std", cfg.head_init_std): reference}
    return pd.DataFrame([{"factor": factor, "value": value,
                          "reconstructor steps": results[factor, value].history["steps"][-1],
                          **_rates_row(results[factor, value])}
                         for factor in ("shadow heads", "init std")
                         for value in sorted(v for f, v in results if f == factor)])


def binary_sweep(cfg: Settings, pool: Pools, extractor: Extractor, reference: AttackResult,
                 progress: bool = False) -> pd.DataFrame:
    """Section 3.2, point 4 at ``N = 10``: the attack on Table 6's binary heads (even / odd digits; vehicles / animals
    for CIFAR-10) with the 10-class conditional reconstructor, once per entry of ``cfg.binary_variants`` (``True``:
    hidden units ordered by output weight first), beside ``reference``, the 10-class heads' attack; one row per run
    with the rates and the heads' test accuracy on their own task, and the paper's TPR and FPR at ``tau_NN`` (Table 1
    and :data:`PAPER_BINARY`; the ordered heads are ours)."""
    experiment = PAPER_ROW[cfg.dataset]
    paper = lambda rates: {"paper TPR*": rates[0], "paper FPR*": rates[1]}
    rows = [{"heads": "10-class (Table 3)", **_rates_row(reference), **paper(PAPER_TABLE1[experiment][10])}]
    for canonical, result in run_section(cfg, pool, extractor, "binary", progress=progress).items():
        rows.append({"heads": "binary (Table 6), hidden units ordered" if canonical else "binary (Table 6)",
                     **_rates_row(result), **paper((np.nan, np.nan) if canonical else PAPER_BINARY[experiment])})
    return pd.DataFrame(rows)


def variant_sweep(cfg: Settings, pool: Pools, extractor: Extractor, progress: bool = False) -> pd.DataFrame:
    """Section 3.2, points 5, 7 and 8 at ``N = 10``: the attack with Table 3's recipe, with each changed recipe of
    ``cfg.training_variants`` (:data:`TRAINING_VARIANTS`) and, with ``cfg.ood``, with the adversary's shadow sets
    drawn out of distribution (:data:`OOD`, :func:`out_of_distribution_pool`), all with ``cfg.variant_shadow_train``
    training heads and ``cfg.variant_reconstructor_steps`` reconstructor steps (fewer than the main run's at ``book``
    scale: the rows compare with each other, not with Table 1); one row per change with the heads' gradient steps,
    the rates (with the binomial standard errors of TPR*, FPR* and of the TPR at FPR = 0.01), the heads' test
    accuracy, and the paper's TPR and FPR at ``tau_NN`` where it gives them (Table 1 for Table 3's recipe,
    :data:`PAPER_VARIANTS`; for the epochs and mini-batches the paper observed no significant changes).  Without
    changes (``ci``) nothing runs and the table is empty."""
    experiment = PAPER_ROW[cfg.dataset]
    specs = chapter_attacks(cfg)["variants"]
    rows = []
    for change, result in run_section(cfg, pool, extractor, "variants", progress=progress).items():
        paper = PAPER_TABLE1[experiment][10][:2] if change is None else PAPER_VARIANTS.get(change, {}).get(
            experiment, (np.nan, np.nan))
        rows.append({"change": "none (Table 3's full-batch SGD)" if change is None else change,
                     "gradient steps": HeadRecipe.of(cfg.dataset, 10, variant=specs[change].variant).steps,
                     **_rates_row(result),
                     "paper TPR*": paper[0], "paper FPR*": paper[1]})
    return pd.DataFrame(rows)


def out_of_distribution_pool(cfg: Settings, pool: Pools) -> tuple[torch.Tensor, torch.Tensor]:
    """Section 3.2, point 8: an adversary whose prior is not the victims'.  The paper trains its shadow heads on
    CIFAR-100 images with random balanced labels 0-9 and attacks CIFAR-10 heads; here the images of the pre-training
    pool (CIFAR-100 for ``cifar10``, EMNIST letters for ``mnist``, Fashion-MNIST for ``mnist_digits``; for the
    ``digits``, digits the attack never sees, turned by 90 degrees so that they are other symbols) with labels
    ``randperm % 10`` (seeded by ``cfg.seed``)."""
    images = pool.pretrain[0]
    if cfg.dataset == "digits":
        images = torch.rot90(images, 1, dims=(-2, -1)).contiguous()
    labels = torch.randperm(len(images), generator=torch.Generator().manual_seed(cfg.seed + 2)) % NUM_CLASSES
    return images, labels


def paper_shape(folder) -> dict:
    """The paper-shape run (:func:`compendium.book.execute_paper_shape`): writes stand-in EMNIST letters and MNIST
    (:mod:`compendium.standin`, 28×28 IDX files, read and padded to 32×32 as the paper's) into ``folder`` and returns
    the notebook's parameters: ``scale="paper"`` with the paper's MNIST pipeline (VGGtiny trained on the letters, its
    256 features, Table 3's heads written to a shadow-head store, Table 2's generator at 32×32, disjoint validation
    sets, every sweep) and its counts cut to seconds.  The CelebA experiment runs on MNIST's classes
    (``identity_dataset="mnist"``): CelebA's needs WideResNet-50-2's pre-trained weights and LPIPS' VGG, which come
    from hubs, so this run substitutes them by the setting the chapter documents."""
    folder = Path(folder)
    standin.emnist_letters(folder / "emnist", train=52, test=26)
    standin.mnist(folder / "mnist", train=200, test=100)
    # lists, not tuples: papermill writes a tuple parameter as its string (the settings take lists as tuples)
    counts = dict(shadow_val=10, unconditional_steps=2, hidden=4,
                  extractor_epochs=1, shadow_counts=[20], init_stds=[0.02], variant_shadow_train=20,
                  variant_reconstructor_steps=1, identity_shadow_train=20, identity_steps=1, identity_max_attempts=2,
                  identity_hidden=4, dp_noise_multipliers=[1.82], dp_shadow_train=20, dp_reconstructor_steps=1,
                  readme_entries=1)
    return {"scale": "paper", "dataset": "mnist", "identity_dataset": "mnist", "shadow_train": 40,
            "reconstructor_steps": 2,
            "overrides": {"data_dir": str(folder), "shadow_dir": str(folder / "shadow-heads"), **counts}}
