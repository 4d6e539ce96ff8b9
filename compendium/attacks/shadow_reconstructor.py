"""The weak adversary's reconstruction attack on small transfer-learned heads (Maciazek & Allison 2025, Sections 2-3
and Appendix A): shadow training sets, weight statistics, the reconstructor's soft-min loss and its evaluation.

The adversary knows the released head weights ``theta``, the training recipe and the data prior, not the data.  It

1. samples many balanced training sets of ``N = C M`` images from a public pool and trains a head on each, exactly as
   the victim's head was trained (Algorithm 1; the heads are trained by :func:`compendium.train.fit_linear_heads`);
2. standardises the weights with their mean and per-coordinate standard deviation (:class:`WeightStatistics`,
   Section 3.1) and trains a reconstructor network ``R(theta, c)`` that outputs one image close to *some* training
   image of class ``c``, with the soft-min loss Eq. (3) (:func:`softmin_loss`, :func:`train_reconstructor`);
3. is scored by the min-MSE tables of Algorithm 3 (:func:`min_mse_table`): under ``H0`` the reconstruction from a
   head is compared with that head's own class-``c`` images; under ``H1`` a reconstruction from random weights
   ``N(0, Cov~)`` (the standardised weights' correlation matrix, the paper's surrogate for an independent head)
   with the same images; under ``H1*`` a random image of the prior (Appendix A.1).  A reconstruction succeeds when
   the min-MSE is at most ``tau``: TPR and FPR of Definition 1, Eqs. (1)-(2) (:func:`rates`), at the nearest-neighbour
   threshold of Section 2 (:func:`nearest_neighbour_threshold`) or at the threshold where FPR = 0.01
   (:func:`tpr_at_fpr`).

Images are in the paper's range [-1, 1] here (``X / 127.5 - 1``), so that MSEs, ``tau_NN`` and the logit transform
``phi = log((l/4) / (1 - l/4))`` of Appendix A.1 are on the paper's scale.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import torch
from torch import nn

from compendium import train, validation
from compendium.base import resolve_device


def _generator(generator) -> torch.Generator:
    if not isinstance(generator, torch.Generator):
        raise ValueError(f"generator={generator!r}; allowed: a torch.Generator (the attack's draws are seeded)")
    return generator


# ---------------------------------------------------------------------------------------------------------------
# Algorithm 1: balanced training sets
# ---------------------------------------------------------------------------------------------------------------
KEY_BUDGET = 1 << 24  # random keys held at once by balanced_sets (64 MB): MNIST's 6,000 images per class x 2,796 sets


def balanced_sets(labels: torch.Tensor, *, per_class: int, count: int, num_classes: int,
                  generator: torch.Generator) -> torch.Tensor:
    """``count`` balanced training sets drawn from a pool with ``labels``: indices of shape (count, num_classes,
    per_class), set ``k``'s class-``c`` images ``[k, c]``, ``per_class`` distinct images of class ``c`` drawn uniformly
    without replacement, independently for every set (``N = num_classes * per_class``; Algorithm 1, "sample D_k").
    """
    validation.integer("per_class", per_class)
    validation.integer("count", count)
    validation.integer("num_classes", num_classes, minimum=2)
    _generator(generator)
    out = torch.empty(count, num_classes, per_class, dtype=torch.long)
    for c in range(num_classes):
        members = torch.nonzero(labels.cpu() == c).flatten()
        if len(members) < per_class:
            raise ValueError(f"class {c} has {len(members)} images in the pool; allowed: at least "
                             f"per_class={per_class}")
        rows = max(1, KEY_BUDGET // len(members))  # keys drawn for this many sets at a time: the same stream
        for start in range(0, count, rows):
            keys = torch.rand(min(rows, count - start), len(members), generator=generator,
                              device=generator.device).cpu()
            out[start:start + rows, c] = members[keys.topk(per_class, dim=1).indices]  # a uniform subset
    return out


def disjoint_set_count(labels: torch.Tensor, *, per_class: int, num_classes: int) -> int:
    """How many balanced sets of ``per_class`` images per class a pool with ``labels`` holds without sharing an
    image: the smallest class's size over ``per_class``."""
    validation.integer("per_class", per_class)
    sizes = torch.bincount(labels.cpu(), minlength=num_classes)[:num_classes]
    return int(sizes.min()) // per_class


def disjoint_balanced_sets(labels: torch.Tensor, *, per_class: int, count: int, num_classes: int,
                           generator: torch.Generator) -> torch.Tensor:
    """``count`` balanced sets (count, num_classes, per_class) that share no image, as the authors draw their
    validation heads from the MNIST test set (their README: 892 sets at ``N = 10``, 223 at ``N = 40``, the size of
    its smallest class over ``per_class``): each class's images in a uniform random order, cut into consecutive
    groups of ``per_class``; at most :func:`disjoint_set_count` sets."""
    validation.integer("count", count)
    _generator(generator)
    most = disjoint_set_count(labels, per_class=per_class, num_classes=num_classes)
    if count > most:
        raise ValueError(f"count={count!r}; allowed: at most {most} sets of {per_class} images per class without a "
                         "shared image in this pool")
    out = torch.empty(count, num_classes, per_class, dtype=torch.long)
    for c in range(num_classes):
        members = torch.nonzero(labels.cpu() == c).flatten()
        order = torch.randperm(len(members), generator=generator, device=generator.device).cpu()
        out[:, c] = members[order[:count * per_class]].view(count, per_class)
    return out


def one_vs_rest_sets(identities: torch.Tensor, *, positives: int, count: int, generator: torch.Generator,
                     negative_groups: int = 9) -> torch.Tensor:
    """``count`` training sets of the paper's CelebA experiment (Section 3.1: "M images of that person and 9M images
    of other randomly selected people"), indices of shape (count, 1 + negative_groups, positives): row ``[k, 0]``
    holds ``M = positives`` distinct images of one identity (label 1), the identity drawn uniformly among those with
    more than ``M`` images and its images uniformly among its own, and rows ``[k, 1:]`` the ``9 M`` negatives
    (label 0), drawn uniformly *with replacement* from the images of all other identities, as the authors' code does
    (``torch.randint``).  The authors' loop (``shadow_model_training.py``) instead walks through a permutation of the
    images and takes each image's identity with that identity's first ``M`` images, so it weights the identities by
    their number of images; uniform identities are our choice (the digits' classes are nearly equal in size).
    ``identities`` (B,) are the pool's identity labels (any integers)."""
    validation.integer("positives", positives)
    validation.integer("count", count)
    validation.integer("negative_groups", negative_groups)
    _generator(generator)
    labels = identities.cpu()
    order = torch.argsort(labels, stable=True)  # the pool by identity: identity i's images are order[start[i]:...]
    _, sizes = torch.unique_consecutive(labels[order], return_counts=True)
    starts = torch.cumsum(sizes, 0) - sizes
    eligible = torch.nonzero(sizes > positives).flatten()
    if not len(eligible):
        raise ValueError(f"no identity has more than positives={positives} images in the pool of {len(labels)}")
    if len(sizes) < 2:
        raise ValueError("the pool holds one identity; allowed: at least two (the negatives are other identities')")
    out = torch.empty(count, 1 + negative_groups, positives, dtype=torch.long)
    rows = max(1, KEY_BUDGET // int(sizes.max()))
    for first in range(0, count, rows):
        n = min(rows, count - first)
        chosen = eligible[torch.randint(len(eligible), (n,), generator=generator, device=generator.device).cpu()]
        size, start = sizes[chosen][:, None], starts[chosen][:, None]
        keys = torch.rand(n, int(sizes.max()), generator=generator, device=generator.device).cpu()
        keys[torch.arange(keys.shape[1]) >= size] = -1.0  # beyond the identity's images: never among the largest
        out[first:first + n, 0] = order[start + keys.topk(positives, dim=1).indices]
        # a uniform draw from the len(labels) - size images of the other identities, skipping identity's block
        others = torch.rand(n, negative_groups * positives, generator=generator, device=generator.device).cpu()
        picks = (others * (len(labels) - size)).long()
        out[first:first + n, 1:] = order[picks + (picks >= start) * size].reshape(n, negative_groups, positives)
    return out


# ---------------------------------------------------------------------------------------------------------------
# Section 3.1: weight statistics and the Gaussian surrogate
# ---------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class WeightStatistics:
    """Mean, standard deviation and correlation matrix of the training shadow weights (float64; the biased ``1/K``
    covariance of Section 3.1).  ``standardise`` maps weights to ``(theta - mean) / std``; the correlation matrix is
    the covariance ``Cov~`` of the standardised weights, from which :meth:`surrogate` draws the random weights that
    estimate the false-positive rate (Algorithms 2-3)."""

    mean: torch.Tensor
    std: torch.Tensor
    correlation: torch.Tensor

    @classmethod
    def fit(cls, weights: torch.Tensor, chunk: int = 65_536, device: str = "cpu") -> "WeightStatistics":
        """The statistics of ``weights`` (K, D) in float64, read ``chunk`` rows at a time in two passes (the mean,
        then the centred outer products, summed on ``device``: 2.56e6 CelebA heads of 8,201 weights are 1.7e14
        multiply-adds), so that memory-mapped weights (:class:`~compendium.attacks.shadow_store.ShadowStore`) are
        never held in memory.  The statistics are returned on the CPU."""
        if not (isinstance(weights, torch.Tensor) and weights.ndim == 2 and weights.shape[0] >= 2):
            raise ValueError(f"weights of shape {tuple(getattr(weights, 'shape', ()))}; allowed: (K, D) with K >= 2")
        validation.integer("chunk", chunk)
        device = resolve_device(device)
        K, D = weights.shape
        rows = [slice(start, start + chunk) for start in range(0, K, chunk)]
        mean = sum(weights[r].to(device, torch.float64).sum(0) for r in rows) / K
        cov = torch.zeros(D, D, dtype=torch.float64, device=device)
        for r in rows:
            centred = weights[r].to(device, torch.float64) - mean
            cov += centred.T @ centred
        mean, cov = mean.cpu(), cov.cpu() / K
        std = cov.diagonal().sqrt().clamp(min=1e-12)  # no coordinate of a trained head has zero variance
        return cls(mean, std, cov / std[:, None] / std[None, :])

    def standardise(self, weights: torch.Tensor) -> torch.Tensor:
        """``(theta - mean) / std`` as float32, on the weights' device."""
        dev = weights.device
        return ((weights.double() - self.mean.to(dev)) / self.std.to(dev)).float()

    def surrogate(self, count: int, generator: torch.Generator, jitter: float = 1e-5) -> torch.Tensor:
        """``count`` draws of ``N(0, Cov~ + jitter I)`` (already standardised; float32), by a Cholesky factor.  The
        jitter ``1e-5 I`` is the authors' code's."""
        validation.integer("count", count)
        _generator(generator)
        factor = torch.linalg.cholesky(self.correlation + jitter * torch.eye(len(self.std), dtype=torch.float64))
        z = torch.randn(count, len(self.std), generator=generator, device=generator.device,
                        dtype=torch.float64).cpu()
        return (z @ factor.T).float()


# ---------------------------------------------------------------------------------------------------------------
# Eq. (3): the soft-min reconstruction loss
# ---------------------------------------------------------------------------------------------------------------
PERCEPTUAL_PAIRS = 512  # pairs per LPIPS call: 4,096 validation heads x 4 CelebA faces at once need over 100 GB


def reconstruction_errors(reconstruction: torch.Tensor, targets: torch.Tensor,
                          perceptual: nn.Module | None = None) -> torch.Tensor:
    """``l_i = (MSE + MAE) / 2`` between each reconstruction (B, ...) and each of its ``M`` targets (B, M, ...),
    means over pixels and channels: shape (B, M) (Section 3.1, the MNIST loss).  With ``perceptual`` (an LPIPS
    network on RGB images in [-1, 1], :func:`compendium.metrics.lpips_network`) its distance is added, the paper's
    loss for CIFAR and CelebA."""
    diff = (reconstruction[:, None] - targets).flatten(2)
    errors = 0.5 * ((diff ** 2).mean(-1) + diff.abs().mean(-1))
    if perceptual is not None:
        B, M = targets.shape[:2]
        pairs = zip(reconstruction.repeat_interleave(M, 0).split(PERCEPTUAL_PAIRS),
                    targets.flatten(0, 1).split(PERCEPTUAL_PAIRS))
        errors = errors + torch.cat([perceptual(a, b).flatten() for a, b in pairs]).reshape(B, M)
    return errors


def softmin_loss(errors: torch.Tensor, alpha: float = 100.0) -> torch.Tensor:
    """Eq. (3): ``sum_i l_i exp(-alpha l_i) / sum_i exp(-alpha l_i)`` over the last dimension, the errors weighted by
    ``softmax(-alpha l)``, which is computed stably (shifted by the minimum).  It lies between the minimum
    (``alpha -> infinity``) and the mean (``alpha -> 0``); its gradient is ``w_j (1 - alpha (l_j - L))``."""
    alpha = validation.positive("alpha", alpha)
    return (errors * torch.softmax(-alpha * errors, dim=-1)).sum(-1)


def condition(weights: torch.Tensor, classes: torch.Tensor, num_classes: int) -> torch.Tensor:
    """The conditional reconstructor's input: standardised weights (B, D) concatenated with ``onehot(c)`` (B, C)."""
    return torch.cat([weights, nn.functional.one_hot(classes, num_classes).to(weights.dtype)], dim=1)


def whole_passes(steps: int, *, heads: int, batch_size: int = 32) -> tuple[int, int]:
    """The reconstructor's training of at least ``steps`` Adam steps in whole passes over ``heads`` shadow models:
    ``(epochs, steps run)`` with ``epochs = ceil(steps * batch_size / heads)`` and ``ceil(heads / batch_size)``
    steps per pass (the paper counts steps, Section 3.1; :func:`train_reconstructor` counts passes)."""
    validation.integer("steps", steps)
    validation.integer("heads", heads)
    epochs = math.ceil(steps * batch_size / heads)
    return epochs, epochs * math.ceil(heads / batch_size)


def train_reconstructor(model: nn.Module, weights: torch.Tensor, sets: torch.Tensor, pool: torch.Tensor, *,
                        epochs: int, generator: torch.Generator, statistics: WeightStatistics | None = None,
                        perceptual: nn.Module | None = None, conditional: bool = True, alpha: float = 100.0,
                        lr: float = 2e-4, batch_size: int = 32, device: str = "auto", progress: bool = True,
                        on_epoch: Callable[[nn.Module], dict[str, float]] | None = None,
                        checkpoint: str | Path | None = None, checkpoint_steps: int = 10_000
                        ) -> dict[str, list[float]]:
    """Train the conditional reconstructor (Section 3.1) through :func:`compendium.train.fit`: Adam (lr 2e-4, batches
    of 32 shadow models), each batch element with a class ``c`` drawn uniformly, input ``(theta_k, onehot(c))``,
    loss Eq. (3) over the ``M`` class-``c`` images of ``D_k``.  ``weights`` (K, D) are the shadow weights, standardised
    batch by batch with ``statistics`` when given (already standardised otherwise), ``sets`` (K, C, M) the indices of
    their training images in ``pool`` (images in [-1, 1], or uint8 pixels: :func:`signed_unit`).  Weights and
    images are looked up batch by batch, so neither the ``K`` sets' images nor a standardised copy of memory-mapped
    weights is ever held in memory.
    ``perceptual`` adds an LPIPS term to the errors (:func:`reconstruction_errors`).  With ``conditional=False`` it
    trains Algorithm 2's unconditional reconstructor ``R(theta)``: no class input, Eq. (3) over all ``N`` images of
    ``D_k``.  ``on_epoch`` is :func:`compendium.train.fit`'s (validation curves, Fig. 3c), and so is ``checkpoint``
    (a file that the training is saved to as it goes and resumed from, bit-identically, after an interruption)."""
    _generator(generator)
    if weights.ndim != 2 or sets.ndim != 3 or weights.shape[0] != sets.shape[0]:
        raise ValueError(f"weights {tuple(weights.shape)} and sets {tuple(sets.shape)}; allowed: (K, D) and "
                         "(K, C, M) with the same K")
    prepare = _batch_preparer(pool, sets.shape[1], statistics=statistics, conditional=conditional,
                              generator=generator)

    def loss_fn(net: nn.Module, batch: tuple) -> torch.Tensor:
        inputs, targets = prepare(batch)
        return softmin_loss(reconstruction_errors(net(inputs), targets, perceptual), alpha).mean()

    return train.fit(model, loss_fn, (weights, sets), epochs=epochs, optimizer="adam", lr=lr, weight_decay=0.0,
                     batch_size=batch_size, generator=generator, device=device, progress=progress,
                     desc="reconstructor", on_epoch=on_epoch, fused=True, checkpoint=checkpoint,
                     checkpoint_steps=checkpoint_steps)


def _batch_preparer(pool: torch.Tensor, num_classes: int, *, statistics: WeightStatistics | None,
                    conditional: bool, generator: torch.Generator):
    """The reconstructor's input and targets for a batch ``(theta, members)`` of shadow weights and their sets:
    the standardised weights with a class ``c`` drawn uniformly from ``generator`` (conditional: the input
    ``(theta, onehot(c))``, the targets the ``M`` class-``c`` images) or alone (unconditional: all ``N`` images)."""
    def prepare(batch: tuple) -> tuple[torch.Tensor, torch.Tensor]:
        theta, members = batch
        if statistics is not None:
            theta = statistics.standardise(theta)
        if conditional:
            classes = torch.randint(num_classes, (len(theta),), generator=generator, device=generator.device)
            classes = classes.to(theta.device)
            chosen = members[torch.arange(len(theta), device=members.device), classes].long().cpu()
            theta = condition(theta, classes, num_classes)
        else:
            chosen = members.flatten(1).long().cpu()
        return theta, signed_unit(pool[chosen]).to(theta.device)

    return prepare


@dataclass
class ReconstructorTraining:
    """One reconstructor's training, :func:`train_reconstructor`'s arguments held until it runs: alone
    (:meth:`run`) or stacked with others of the same architecture and length (:func:`train_reconstructors`)."""

    model: nn.Module
    weights: torch.Tensor
    sets: torch.Tensor
    pool: torch.Tensor
    epochs: int
    generator: torch.Generator
    statistics: WeightStatistics | None = None
    perceptual: nn.Module | None = None
    conditional: bool = True
    on_epoch: Callable[[nn.Module], dict[str, float]] | None = None
    checkpoint: Path | None = None

    def run(self, *, device: str = "auto", progress: bool = True) -> dict[str, list[float]]:
        """:func:`train_reconstructor` of this training."""
        return train_reconstructor(self.model, self.weights, self.sets, self.pool, epochs=self.epochs,
                                   generator=self.generator, statistics=self.statistics, perceptual=self.perceptual,
                                   conditional=self.conditional, device=device, progress=progress,
                                   on_epoch=self.on_epoch, checkpoint=self.checkpoint)

    def stack_key(self) -> tuple:
        """What trainings stacked together share: the architecture, the number of heads, the epochs, the loss (the
        sets' sizes may differ: each model's targets are gathered and scored on their own)."""
        shapes = tuple((name, tuple(p.shape)) for name, p in self.model.named_parameters())
        return (type(self.model).__name__, shapes, len(self.weights), self.epochs, self.conditional,
                self.perceptual is not None)


def train_reconstructors(trainings: list[ReconstructorTraining], *, alpha: float = 100.0, lr: float = 2e-4,
                         batch_size: int = 32, device: str = "auto", progress: bool = True,
                         checkpoint: str | Path | None = None, checkpoint_steps: int = 10_000
                         ) -> list[dict[str, list[float]]]:
    """:func:`train_reconstructor` for each of ``trainings`` (the same :meth:`ReconstructorTraining.stack_key`:
    architecture, heads, epochs and loss), trained as one stacked model by :func:`compendium.train.fit_stacked`:
    each on its own heads, batches, class draws and initial weights, one Adam over the stacked parameters (Adam acts
    on every element alone, and Eq. (3) is each model's own mean), so the results equal the separate trainings up to
    float rounding, at one computation per step for all.  ``checkpoint`` (a file) saves the stacked run and resumes
    it; each training's own ``checkpoint`` then receives its finished run in :func:`compendium.train.fit`'s format,
    which :func:`train_reconstructor` loads.  Returns each training's history."""
    if not trainings or any(not isinstance(t, ReconstructorTraining) for t in trainings):
        raise ValueError(f"trainings={trainings!r}; allowed: a non-empty list of ReconstructorTraining")
    if len({t.stack_key() for t in trainings}) > 1:
        raise ValueError("trainings of different architectures, heads, epochs or losses; allowed: trainings that "
                         "share ReconstructorTraining.stack_key()")
    perceptual = trainings[0].perceptual
    prepares = [_batch_preparer(t.pool, t.sets.shape[1], statistics=t.statistics, conditional=t.conditional,
                                generator=t.generator) for t in trainings]

    def loss_fn(forward, batches: list) -> torch.Tensor:
        parts = [prepare(batch) for prepare, batch in zip(prepares, batches)]
        out = forward(torch.stack([inputs for inputs, _ in parts]))
        return torch.stack([softmin_loss(reconstruction_errors(o, targets, perceptual), alpha).mean()
                            for o, (_, targets) in zip(out, parts)])

    kept = [t.checkpoint for t in trainings]
    return train.fit_stacked([t.model for t in trainings], loss_fn, [(t.weights, t.sets) for t in trainings],
                             epochs=trainings[0].epochs, generators=[t.generator for t in trainings],
                             optimizer="adam", lr=lr, weight_decay=0.0, batch_size=batch_size, device=device,
                             progress=progress, desc=f"{len(trainings)} stacked reconstructors",
                             on_epoch=[t.on_epoch for t in trainings], fused=True, checkpoint=checkpoint,
                             checkpoints=kept if all(path is not None for path in kept) else None,
                             checkpoint_steps=checkpoint_steps)


# ---------------------------------------------------------------------------------------------------------------
# Algorithm 3 and Definition 1: min-MSE tables, rates, thresholds
# ---------------------------------------------------------------------------------------------------------------
def mse_matrix(candidates: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """The MSE (over pixels and channels) between each candidate (B, ...) and each of its ``M`` targets (B, M, ...):
    shape (B, M)."""
    return ((candidates[:, None] - targets) ** 2).flatten(2).mean(-1)


def min_mse(candidates: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Eq. (4): the smallest MSE between each candidate (B, ...) and its ``M`` targets (B, M, ...): shape (B,)."""
    return mse_matrix(candidates, targets).min(-1).values


def reconstructions(model: nn.Module, weights: torch.Tensor, images: torch.Tensor, *, conditional: bool,
                    batch_size: int):
    """Yield ``(rows, c, reconstructions, targets)`` for ``batch_size`` heads and one class (one group, the whole
    set, when not ``conditional``) at a time: the reconstructions ``R(theta_k, c)`` (or ``R(theta_k)``) on the CPU
    and the images ``images[rows, c]`` they are compared with; the model in ``eval()`` mode, restored afterwards."""
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    if not conditional:
        images = images.flatten(1, 2)[:, None]  # one group: the whole set
    K, C = images.shape[:2]
    try:
        for start in range(0, K, batch_size):
            rows = slice(start, start + batch_size)
            theta = weights[rows].to(device)
            for c in range(C):
                classes = torch.full((len(theta),), c, dtype=torch.long, device=device)
                yield rows, c, model(condition(theta, classes, C) if conditional else theta).cpu(), images[rows, c]
    finally:
        model.train(was_training)


@torch.no_grad()
def min_mse_table(model: nn.Module, weights: torch.Tensor, images: torch.Tensor, batch_size: int = 4096,
                  conditional: bool = True) -> torch.Tensor:
    """Algorithm 3's table ``H[k, c] = min_{Z in D_k^c} MSE(Z, R(theta_k, c))`` for weights (K, D) against the images
    (K, C, M, ...) of each set (float64, (K, C)).  With the heads' own weights it is the ``H0`` table; with surrogate
    weights (one draw per ``k``, reused for every class, as in Algorithm 3) the ``H1`` table.  With
    ``conditional=False`` it is Algorithm 2's for the unconditional ``R(theta)``: ``H[k, 0] = min_{Z in D_k}
    MSE(Z, R(theta_k))`` over all ``N = C M`` images, shape (K, 1)."""
    table = torch.empty(len(weights), images.shape[1] if conditional else 1, dtype=torch.float64)
    for rows, c, out, targets in reconstructions(model, weights, images, conditional=conditional,
                                                  batch_size=batch_size):
        table[rows, c] = min_mse(out, targets).double()
    return table


@torch.no_grad()
def validation_loss(model: nn.Module, weights: torch.Tensor, images: torch.Tensor, *, conditional: bool = True,
                    perceptual: nn.Module | None = None, alpha: float = 100.0, batch_size: int = 4096) -> float:
    """The training loss Eq. (3) on held-out heads, every class of every set once (the validation loss of Fig. 3c):
    the mean over ``k`` and ``c`` of the soft-min of :func:`reconstruction_errors` between ``R(theta_k, c)`` and the
    class-``c`` images of ``D_k`` (all ``N`` images for the unconditional ``R(theta_k)``); weights (K, D) already
    standardised, images (K, C, M, ...)."""
    device = next(model.parameters()).device
    total, count = 0.0, 0
    for _, _, out, targets in reconstructions(model, weights, images, conditional=conditional,
                                               batch_size=batch_size):
        errors = reconstruction_errors(out.to(device), targets.to(device), perceptual)
        total += float(softmin_loss(errors, alpha).sum())
        count += len(out)
    return total / count


def signed_unit(images: torch.Tensor) -> torch.Tensor:
    """Images in [-1, 1]: float images as they are, uint8 pixels ``X`` as the paper's ``X / 127.5 - 1`` (float32).
    A pool may keep its images as uint8 (CelebA's 182,637 training faces at 64 x 64: 2.2 GB instead of 9 GB as
    float32); they are converted where they are gathered."""
    return images.float() / 127.5 - 1 if images.dtype == torch.uint8 else images


def prior_table(pool: torch.Tensor, images: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """The ``H1*`` table of Appendix A.1: for every set ``k`` and class ``c``, the min-MSE of one image drawn uniformly
    from ``pool`` (a "reconstruction" that is a random draw from the prior) against the set's class-``c`` images."""
    _generator(generator)
    K, C = images.shape[:2]
    draws = torch.randint(len(pool), (K, C), generator=generator, device=generator.device).cpu()
    return min_mse(signed_unit(pool[draws].flatten(0, 1)), images.flatten(0, 1)).double().reshape(K, C)


@torch.no_grad()
def nearest_neighbour_threshold(validation_images: torch.Tensor, train_images: torch.Tensor, *,
                                chunk: int = 1024, train_chunk: int = 65_536, device: str = "cpu") -> float:
    """``tau_NN`` of Section 2: the mean over validation images of the MSE to their nearest training image, in
    float64 on ``device``, ``chunk`` validation against ``train_chunk`` training images at a time (MNIST's
    10,000 x 60,000 distances would be 4.8 GB at once), each training chunk converted once (CelebA's 182,637 faces
    are 18 GB as float64).  Either pool may be uint8 pixels (:func:`signed_unit`)."""
    if not len(validation_images) or not len(train_images):
        raise ValueError(f"{len(validation_images)} validation and {len(train_images)} training images; allowed: "
                         "at least one of each")
    device = resolve_device(device)
    val = [signed_unit(v.to(device)).flatten(1).double() for v in validation_images.split(chunk)]
    nearest = [torch.full((len(v),), math.inf, dtype=torch.float64, device=device) for v in val]
    for t in train_images.split(train_chunk):
        t = signed_unit(t.to(device)).flatten(1).double()
        nearest = [torch.minimum(n, torch.cdist(v, t).min(1).values) for n, v in zip(nearest, val)]
    return float((torch.cat(nearest).cpu() ** 2 / val[0].shape[1]).mean())


def rates(h0: torch.Tensor, h1: torch.Tensor, tau: float) -> tuple[float, float]:
    """Definition 1 by Monte Carlo: ``(TPR, FPR) = (mean(H0 <= tau), mean(H1 <= tau))`` over all entries."""
    return float((h0 <= tau).double().mean()), float((h1 <= tau).double().mean())


def fpr_threshold(h1: torch.Tensor, fpr: float = 0.01) -> float:
    """The threshold at which the empirical FPR is ``fpr``: the ``fpr`` quantile of the pooled ``H1`` values."""
    validation.probability("fpr", fpr)
    return float(np.quantile(h1.double().numpy().ravel(), fpr))


def tpr_at_fpr(h0: torch.Tensor, h1: torch.Tensor, fpr: float = 0.01) -> float:
    """Table 1's "TPR at FPR = 0.01": the fraction of ``H0`` values at most :func:`fpr_threshold`."""
    return float((h0 <= fpr_threshold(h1, fpr)).double().mean())


def empirical_roc(h0: torch.Tensor, h1: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """The cumulative ROC of Appendix A.1, (FPR, TPR) of the rule ``min-MSE <= tau`` at every observed threshold."""
    thresholds = np.unique(np.concatenate([h0.numpy().ravel(), h1.numpy().ravel()]))
    h0s, h1s = np.sort(h0.numpy().ravel()), np.sort(h1.numpy().ravel())
    tpr = np.searchsorted(h0s, thresholds, side="right") / h0s.size
    fpr = np.searchsorted(h1s, thresholds, side="right") / h1s.size
    return np.concatenate([[0.0], fpr]), np.concatenate([[0.0], tpr])
