"""Device-agnostic training and evaluation of the project's classifiers, with tqdm progress bars.

:func:`fit` is the project's one training loop (shuffled mini-batches, optimiser, progress bar, loss history);
every network the project trains goes through it.  :func:`train_classifier` uses it with cross-entropy and, by
default, the HCR paper's recipe (Chaudhuri et al. 2024, Sec. 3: AdamW, lr 1e-3, batches of 32; PyTorch's default
betas and weight decay 0.01; no augmentation); :func:`accuracy` evaluates a classifier, optionally
on dithered features (Gaussian noise of standard deviation ``feature_noise`` added to ``model.features(x)`` before
``model.head``), and :func:`feature_rms` gives the RMS feature entry that the paper's noise level is a multiple of
(:math:`\\sigma = \\kappa\\,\\mathrm{RMS}`).

Randomness comes only from the explicit ``torch.Generator`` (shuffling, noise); data and noise are drawn on the CPU
and moved to the device, so results do not depend on the device's random stream.
"""
from __future__ import annotations

import math
from typing import Callable, Iterable

import torch
from torch import nn
from tqdm import tqdm

from compendium import validation
from compendium.base import resolve_device

OPTIMIZERS = ("adamw", "adam", "sgd")


def _check_xy(x, y, name: str = "data") -> None:
    if not (isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor)):
        raise ValueError(f"{name} must be a (images, labels) pair of tensors; got {type(x).__name__}, "
                         f"{type(y).__name__}")
    if x.ndim < 2 or y.ndim != 1 or x.shape[0] != y.shape[0] or x.shape[0] == 0:
        raise ValueError(f"{name}: images of shape (B, ...) and labels of shape (B,) with B >= 1 are required; got "
                         f"images {tuple(x.shape)}, labels {tuple(y.shape)}")
    if y.dtype.is_floating_point or y.dtype == torch.bool or y.dtype.is_complex:
        raise ValueError(f"{name}: labels must be integer class indices; got dtype {y.dtype}")
    if not x.dtype.is_floating_point:
        raise ValueError(f"{name}: images must be floating point; got dtype {x.dtype}")
    if y.min() < 0:
        raise ValueError(f"{name}: labels must be >= 0; got minimum {int(y.min())}")


def _make_optimizer(optimizer: str, params, lr: float, weight_decay: float | None, momentum: float):
    if optimizer == "adamw":
        return torch.optim.AdamW(params, lr=lr, weight_decay=0.01 if weight_decay is None else weight_decay)
    if optimizer == "adam":
        return torch.optim.Adam(params, lr=lr, weight_decay=0.0 if weight_decay is None else weight_decay)
    return torch.optim.SGD(params, lr=lr, momentum=momentum, weight_decay=0.0 if weight_decay is None else weight_decay)


#: What a loss function given to :func:`fit` returns for one batch: the loss (a scalar tensor, the batch mean), or
#: the loss and a dict of per-batch counts (e.g. ``{"accuracy": number correct}``) that :func:`fit` sums over the
#: epoch and divides by the number of examples seen.
LossFunction = Callable[[nn.Module, tuple], "torch.Tensor | tuple[torch.Tensor, dict[str, float]]"]


def fit(model: nn.Module, loss_fn: LossFunction, data, *, epochs: int, optimizer: str = "adamw", lr: float = 1e-3,
        weight_decay: float | None = None, momentum: float = 0.9, batch_size: int = 32,
        generator: torch.Generator | None = None, device: str = "auto", progress: bool = True,
        desc: str = "training") -> dict[str, list[float]]:
    """The project's one training loop: train ``model`` in place for ``epochs`` epochs and return its history.

    ``data`` is either a tuple of tensors with the same leading size ``B`` (images and labels; features and target
    images; ...), shuffled every epoch with ``torch.randperm`` drawn from ``generator`` (on the generator's device)
    and cut into batches of ``batch_size`` (the last one may be smaller), or any iterable of such tuples, e.g. a
    ``DataLoader`` (which shuffles itself; ``batch_size`` and ``generator`` are then unused).  Each batch is moved to
    ``device`` (``"auto"``: CUDA when available), and ``loss_fn(model, batch)`` gives its loss (see
    :data:`LossFunction`); a loss function that needs randomness (fresh noise every batch) draws it from the same
    generator, after the epoch's permutation, so a run is reproducible from the generator alone.  ``optimizer`` is
    ``"adamw"`` (``weight_decay`` defaults to 0.01, as in PyTorch), ``"adam"`` or ``"sgd"`` (with ``momentum``; both
    with ``weight_decay`` defaulting to 0).  The model is left on ``device`` in ``train()`` mode.

    Returns ``{"loss": [...], <count>: [...]}``: per epoch, the mean loss over the examples as they were seen (while
    the weights changed), and every count of the loss function per example.
    """
    if not isinstance(model, nn.Module):
        raise ValueError(f"model={type(model).__name__}; allowed: a torch.nn.Module")
    validation.integer("epochs", epochs)
    lr = validation.positive("lr", lr)
    validation.choice("optimizer", optimizer, OPTIMIZERS)
    validation.integer("batch_size", batch_size)
    if weight_decay is not None:
        validation.number("weight_decay", weight_decay, at_least=0.0)
    validation.number("momentum", momentum, at_least=0.0, below=1.0)
    validation.generator("generator", generator)
    tensors = isinstance(data, (tuple, list)) and len(data) > 0 and all(isinstance(t, torch.Tensor) for t in data)
    if tensors:
        size = data[0].shape[0] if data[0].ndim else 0
        if size == 0 or any(t.ndim == 0 or t.shape[0] != size for t in data):
            raise ValueError(f"data has leading sizes {[tuple(t.shape[:1]) for t in data]}; allowed: tensors with "
                             "the same leading size B >= 1")
    elif not hasattr(data, "__iter__"):
        raise ValueError(f"data={type(data).__name__}; allowed: a tuple of tensors or an iterable of such batches")
    dev = resolve_device(device)
    if tensors and generator is None:
        generator = torch.Generator()
        generator.seed()

    model.to(dev)
    model.train()
    opt = _make_optimizer(optimizer, model.parameters(), lr, weight_decay, momentum)

    def batches():
        if not tensors:
            yield from data
            return
        perm = torch.randperm(size, generator=generator, device=generator.device)
        for start in range(0, size, batch_size):
            idx = perm[start:start + batch_size].to(data[0].device)
            yield tuple(t[idx] for t in data)

    n_batches = math.ceil(size / batch_size) if tensors else (len(data) if hasattr(data, "__len__") else None)
    history: dict[str, list[float]] = {"loss": []}
    bar = tqdm(range(epochs), desc=desc, unit="epoch", disable=not progress)
    for epoch in bar:
        total_loss, counts, seen = 0.0, {}, 0
        for batch in tqdm(batches(), total=n_batches, desc=f"epoch {epoch + 1}/{epochs}", unit="batch",
                          leave=False, disable=not progress):
            batch = tuple(t.to(dev, non_blocking=True) for t in batch)
            opt.zero_grad(set_to_none=True)
            out = loss_fn(model, batch)
            loss, batch_counts = out if isinstance(out, tuple) else (out, {})
            loss.backward()
            opt.step()
            n = batch[0].shape[0]
            total_loss += loss.item() * n
            for name, value in batch_counts.items():
                counts[name] = counts.get(name, 0) + value
            seen += n
        if seen == 0:
            raise ValueError("data yielded no batches; it must hold at least one batch")
        history["loss"].append(total_loss / seen)
        for name, value in counts.items():
            history.setdefault(name, []).append(value / seen)
        bar.set_postfix({name: f"{values[-1]:.4g}" for name, values in history.items()})
    return history


def train_classifier(model: nn.Module,
                     data: tuple[torch.Tensor, torch.Tensor] | Iterable,
                     epochs: int,
                     lr: float = 1e-3,
                     optimizer: str = "adamw",
                     generator: torch.Generator | None = None,
                     device: str = "auto",
                     progress: bool = True,
                     batch_size: int = 32,
                     weight_decay: float | None = None,
                     momentum: float = 0.9) -> dict[str, list[float]]:
    """Train ``model`` in place with cross-entropy for ``epochs`` epochs through :func:`fit` and return its history.

    ``data`` is an ``(images, labels)`` pair of tensors or an iterable of such batches (see :func:`fit`, which also
    describes the optimiser and device arguments).  Returns ``{"loss": [...], "accuracy": [...]}``: per epoch, the
    mean training loss and the training accuracy over the batches as they were seen (while the weights changed).
    """
    if isinstance(data, (tuple, list)) and len(data) == 2 and isinstance(data[0], torch.Tensor):
        _check_xy(*data)
    cross_entropy = nn.CrossEntropyLoss()

    def loss_fn(net: nn.Module, batch: tuple) -> tuple[torch.Tensor, dict[str, int]]:
        xb, yb = batch
        logits = net(xb)
        return cross_entropy(logits, yb), {"accuracy": int((logits.argmax(1) == yb).sum())}

    history = fit(model, loss_fn, data, epochs=epochs, optimizer=optimizer, lr=lr, weight_decay=weight_decay,
                  momentum=momentum, batch_size=batch_size, generator=generator, device=device, progress=progress)
    history.setdefault("accuracy", [])
    return history


def _eval_checks(model, x, y, batch_size) -> None:
    if not isinstance(model, nn.Module):
        raise ValueError(f"model must be a torch.nn.Module; got {type(model).__name__}")
    if y is not None:
        _check_xy(x, y)
    elif not isinstance(x, torch.Tensor) or x.ndim < 2 or x.shape[0] == 0:
        raise ValueError(f"x must be a tensor of shape (B, ...) with B >= 1; got {getattr(x, 'shape', x)!r}")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size={batch_size!r}; allowed: an integer >= 1")


def _model_device(model: nn.Module, device: str | None) -> torch.device:
    if device is not None:
        return resolve_device(device)
    p = next(model.parameters(), None)
    return p.device if p is not None else torch.device("cpu")


@torch.no_grad()
def accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor, feature_noise: float = 0.0,
             generator: torch.Generator | None = None, batch_size: int = 1024,
             device: str | None = None) -> float:
    """Fraction of ``x`` that ``model`` classifies as ``y``.

    With ``feature_noise > 0`` the HCR "dithering" is applied: the prediction is
    ``model.head(model.features(x) + feature_noise * Z)`` with ``Z`` standard Gaussian drawn on the CPU from
    ``generator`` (so the model must have ``features`` and ``head``; see
    :class:`compendium.models.SplitClassifier`).  The paper takes ``feature_noise = kappa * feature_rms(model, x)``
    with kappa 1 (MNIST) and 5 (CIFAR-10).  Runs in ``eval()`` mode (restoring the previous mode) on ``device``
    (``None``: where the model's parameters are; the model is not moved unless ``device`` is given).
    """
    _eval_checks(model, x, y, batch_size)
    if not (isinstance(feature_noise, (int, float)) and math.isfinite(feature_noise) and feature_noise >= 0):
        raise ValueError(f"feature_noise={feature_noise!r}; allowed: a finite number >= 0")
    if feature_noise > 0 and not (hasattr(model, "features") and hasattr(model, "head")):
        raise ValueError("feature_noise > 0 needs a model with .features and .head (a SplitClassifier); got "
                         f"{type(model).__name__}")
    if generator is not None and not isinstance(generator, torch.Generator):
        raise ValueError(f"generator must be a torch.Generator or None; got {type(generator).__name__}")
    dev = _model_device(model, device)
    model.to(dev)
    was_training = model.training
    model.eval()
    correct = 0
    try:
        for start in range(0, x.shape[0], batch_size):
            xb = x[start:start + batch_size].to(dev)
            yb = y[start:start + batch_size].to(dev)
            if feature_noise > 0:
                z = model.features(xb)
                noise = torch.randn(z.shape, generator=generator, dtype=z.dtype)
                logits = model.head(z + feature_noise * noise.to(dev))
            else:
                logits = model(xb)
            correct += int((logits.argmax(1) == yb).sum())
    finally:
        model.train(was_training)
    return correct / x.shape[0]


@torch.no_grad()
def feature_rms(model: nn.Module, x: torch.Tensor, batch_size: int = 1024, device: str | None = None) -> float:
    """Root-mean-square entry of ``model.features(x)`` over all examples and features,
    :math:`\\sqrt{\\frac{1}{N n}\\sum_b \\|a_{\\theta_b}\\|^2}` (the unit of the paper's noise level: the authors' code sets the noise's standard deviation to a multiple of it)."""
    _eval_checks(model, x, None, batch_size)
    if not hasattr(model, "features"):
        raise ValueError(f"model must have .features (a SplitClassifier); got {type(model).__name__}")
    dev = _model_device(model, device)
    model.to(dev)
    was_training = model.training
    model.eval()
    total, count = 0.0, 0
    try:
        for start in range(0, x.shape[0], batch_size):
            z = model.features(x[start:start + batch_size].to(dev)).double()
            total += float((z ** 2).sum())
            count += z.numel()
    finally:
        model.train(was_training)
    return math.sqrt(total / count)
