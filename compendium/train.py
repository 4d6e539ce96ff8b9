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

import copy
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
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


def _make_optimizer(optimizer: str, params, lr: float, weight_decay: float | None, momentum: float,
                    fused: bool | None = None):
    if optimizer == "adamw":
        return torch.optim.AdamW(params, lr=lr, weight_decay=0.01 if weight_decay is None else weight_decay,
                                 fused=fused)
    if optimizer == "adam":
        return torch.optim.Adam(params, lr=lr, weight_decay=0.0 if weight_decay is None else weight_decay,
                                fused=fused)
    return torch.optim.SGD(params, lr=lr, momentum=momentum, weight_decay=0.0 if weight_decay is None else weight_decay)


#: What a loss function given to :func:`fit` returns for one batch: the loss (a scalar tensor, the batch mean), or
#: the loss and a dict of per-batch counts (e.g. ``{"accuracy": number correct}``) that :func:`fit` sums over the
#: epoch and divides by the number of examples seen.
LossFunction = Callable[[nn.Module, tuple], "torch.Tensor | tuple[torch.Tensor, dict[str, float]]"]


def fit(model: nn.Module, loss_fn: LossFunction, data, *, epochs: int, optimizer: str = "adamw", lr: float = 1e-3,
        weight_decay: float | None = None, momentum: float = 0.9, batch_size: int = 32,
        generator: torch.Generator | None = None, device: str = "auto", progress: bool = True,
        desc: str = "training", on_epoch: Callable[[nn.Module], dict[str, float]] | None = None,
        fused: bool = False, checkpoint: str | Path | None = None, checkpoint_steps: int = 10_000,
        checkpoint_seconds: float = 600.0) -> dict[str, list[float]]:
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
    the weights changed), and every count of the loss function per example.  ``on_epoch(model)``, when given, is
    called after every epoch with the model in ``eval()`` mode and gradients off; the values it returns join the
    history under their names (validation curves).  It must not draw from ``generator``, or it changes the run.
    ``fused=True`` takes PyTorch's fused Adam / AdamW kernel: the same update up to rounding (about 1e-8 apart after
    50 steps), three times faster per step for the book's small CPU models (``benchmarks/bench.py``), where the
    default multi-tensor update took a third of a step or more.  Only the chapters whose numbers were re-checked with
    it use it (the transfer-learning chapter's reconstructor); the others keep the default, on which their stated
    numbers rest.

    ``checkpoint`` (a file path; tensor ``data`` only) makes a long run survive a lost session: every
    ``checkpoint_steps`` optimiser steps or ``checkpoint_seconds`` seconds, whichever comes first, and after the last
    step, the run's state is written to a temporary file that then replaces ``checkpoint`` (atomic: a crash leaves
    the old checkpoint or the new one): the model's and the optimiser's state, the epoch's permutation and position
    in it, the generator's state, the torch CPU (and CUDA) random states, the epoch's running sums and the history.
    A call that finds the file resumes from it and returns exactly what an uninterrupted run returns, the same
    weights bit for bit.  A finished run is loaded, not repeated; its file keeps no optimiser state, a third of the
    size (Table 2's MNIST generator, 53 million parameters, checkpoints in 656 MB and finishes in 212 MB).  A file
    written by a run of other settings (epochs, batch size, optimiser, data size, parameter shapes) is refused.
    """
    if fused and optimizer == "sgd":
        raise ValueError("fused=True; allowed only with optimizer 'adam' or 'adamw'")
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
    validation.integer("checkpoint_steps", checkpoint_steps)
    checkpoint_seconds = validation.positive("checkpoint_seconds", checkpoint_seconds)
    tensors = isinstance(data, (tuple, list)) and len(data) > 0 and all(isinstance(t, torch.Tensor) for t in data)
    if tensors:
        size = data[0].shape[0] if data[0].ndim else 0
        if size == 0 or any(t.ndim == 0 or t.shape[0] != size for t in data):
            raise ValueError(f"data has leading sizes {[tuple(t.shape[:1]) for t in data]}; allowed: tensors with "
                             "the same leading size B >= 1")
    elif not hasattr(data, "__iter__"):
        raise ValueError(f"data={type(data).__name__}; allowed: a tuple of tensors or an iterable of such batches")
    if checkpoint is not None and not tensors:
        raise ValueError(f"checkpoint={str(checkpoint)!r} with data={type(data).__name__}; allowed: a checkpoint only "
                         "with a tuple of tensors (a resumed run must redraw the same batches)")
    dev = resolve_device(device)
    if tensors and generator is None:
        generator = torch.Generator()
        generator.seed()

    model.to(dev)
    model.train()
    opt = _make_optimizer(optimizer, model.parameters(), lr, weight_decay, momentum, fused=fused or None)

    def batches(perm, first: int):
        if not tensors:
            yield from data
            return
        for start in range(first * batch_size, size, batch_size):
            idx = perm[start:start + batch_size].to(data[0].device)
            yield tuple(t[idx] for t in data)

    n_batches = math.ceil(size / batch_size) if tensors else (len(data) if hasattr(data, "__len__") else None)
    history: dict[str, list[float]] = {"loss": []}
    # where the run stands: the epoch, the batches of it done, its permutation and running sums
    state = {"epoch": 0, "batch": 0, "perm": None, "total_loss": 0.0, "counts": {}, "seen": 0}
    identity = None
    if checkpoint is not None:
        checkpoint = Path(checkpoint)
        identity = {"epochs": epochs, "batch_size": batch_size, "size": size, "optimizer": optimizer, "lr": lr,
                    "parameters": [list(p.shape) for p in model.parameters()]}
        if checkpoint.is_file():
            state, history = _load_checkpoint(checkpoint, identity, model, opt, generator)
    last_save, steps_since = time.monotonic(), 0
    bar = tqdm(range(state["epoch"], epochs), desc=desc, unit="epoch", disable=not progress)
    for epoch in bar:
        if state["perm"] is None:
            state["perm"] = (torch.randperm(size, generator=generator, device=generator.device) if tensors
                             else None)
        for batch in tqdm(batches(state["perm"], state["batch"]), total=n_batches, initial=state["batch"],
                          desc=f"epoch {epoch + 1}/{epochs}", unit="batch", leave=False, disable=not progress):
            batch = tuple(t.to(dev, non_blocking=True) for t in batch)
            opt.zero_grad(set_to_none=True)
            out = loss_fn(model, batch)
            loss, batch_counts = out if isinstance(out, tuple) else (out, {})
            loss.backward()
            opt.step()
            n = batch[0].shape[0]
            state["total_loss"] += loss.item() * n
            for name, value in batch_counts.items():
                state["counts"][name] = state["counts"].get(name, 0) + value
            state["seen"] += n
            state["batch"] += 1
            steps_since += 1
            if checkpoint is not None and (steps_since >= checkpoint_steps
                                           or time.monotonic() - last_save >= checkpoint_seconds):
                _save_checkpoint(checkpoint, identity, state, history, model, opt, generator)
                last_save, steps_since = time.monotonic(), 0
        seen = state["seen"]
        if seen == 0:
            raise ValueError("data yielded no batches; it must hold at least one batch")
        history["loss"].append(state["total_loss"] / seen)
        for name, value in state["counts"].items():
            history.setdefault(name, []).append(value / seen)
        if on_epoch is not None:
            model.eval()
            with torch.no_grad():
                for name, value in on_epoch(model).items():
                    history.setdefault(name, []).append(float(value))
            model.train()
        state = {"epoch": epoch + 1, "batch": 0, "perm": None, "total_loss": 0.0, "counts": {}, "seen": 0}
        bar.set_postfix({name: f"{values[-1]:.4g}" for name, values in history.items()})
    if checkpoint is not None:
        _save_checkpoint(checkpoint, identity, state, history, model, opt, generator)
    return history


def _save_checkpoint(path: Path, identity: dict, state: dict, history: dict, model: nn.Module, opt,
                     generator: torch.Generator) -> None:
    """:func:`fit`'s checkpoint: written to ``<path>.part``, then renamed over ``path`` (atomic)."""
    finished = state["epoch"] == identity["epochs"]  # the optimiser's moments (twice the model) are not needed
    payload = {"identity": identity, "state": state, "history": history, "model": model.state_dict(),
               "optimizer": None if finished else opt.state_dict(), "generator": generator.get_state(),
               "torch_cpu": torch.random.get_rng_state(),
               "torch_cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None}
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".part")
    torch.save(payload, partial)
    os.replace(partial, path)


def _load_checkpoint(path: Path, identity: dict, model: nn.Module, opt, generator: torch.Generator
                     ) -> tuple[dict, dict]:
    """Restore :func:`fit`'s run from ``path`` into ``model``, ``opt`` and ``generator`` (and torch's global random
    states); returns the run's position and history."""
    payload = torch.load(path, map_location="cpu", weights_only=True)
    if payload["identity"] != identity:
        raise ValueError(f"checkpoint {path} holds a run of other settings ({payload['identity']}; this run: "
                         f"{identity}); remove it or choose another path")
    model.load_state_dict(payload["model"])
    if payload["optimizer"] is not None:
        opt.load_state_dict(payload["optimizer"])
    generator.set_state(payload["generator"])
    torch.random.set_rng_state(payload["torch_cpu"])
    if payload["torch_cuda"] is not None and torch.cuda.is_available():  # the cards this process sees, of those saved
        torch.cuda.set_rng_state_all(payload["torch_cuda"][:torch.cuda.device_count()])
    state = payload["state"]
    if state["perm"] is not None:
        state["perm"] = state["perm"].to(generator.device)
    return state, payload["history"]


#: What a loss function given to :func:`fit_stacked` gets and returns: ``forward``, which maps inputs stacked over
#: the K models (K, B, ...) to their outputs (K, B, ...), each model on its own slice, and ``batches``, each model's
#: batch (a tuple of tensors from its own data); it returns each model's loss (K,), its batch's mean.
StackedLossFunction = Callable[[Callable[[torch.Tensor], torch.Tensor], list], torch.Tensor]


def fit_stacked(models: list[nn.Module], loss_fn: StackedLossFunction, datas: list[tuple], *, epochs: int,
                generators: list[torch.Generator], optimizer: str = "adamw", lr: float = 1e-3,
                weight_decay: float | None = None, momentum: float = 0.9, batch_size: int = 32, device: str = "auto",
                progress: bool = True, desc: str = "stacked training", on_epoch: list | None = None,
                fused: bool = False, checkpoint: str | Path | None = None, checkpoints: list | None = None,
                checkpoint_steps: int = 10_000, checkpoint_seconds: float = 600.0) -> list[dict[str, list[float]]]:
    """K models of one architecture trained as one stacked model, the same as K calls of :func:`fit` up to float
    rounding: model ``k`` on its own data ``datas[k]`` (a tuple of tensors; every model's of the same leading size
    B), shuffled every epoch by its own ``generators[k]`` (its permutation, then every draw ``loss_fn`` makes for it,
    in :func:`fit`'s order), from its own initial weights.  One step is one computation for all K
    (:func:`torch.func.stack_module_state`, :func:`torch.func.functional_call` under :func:`torch.func.vmap`), so a
    GPU is busy with K batches of 32 at once instead of one; BatchNorm's running statistics are stacked too.  One
    optimiser updates the stacked parameters: Adam, AdamW and SGD act on every element alone with a step count that
    all K share, so it is K optimisers (``fused`` as :func:`fit`'s).

    ``on_epoch[k]`` (a list of callables or ``None``) is :func:`fit`'s ``on_epoch`` for model ``k``, called with that
    model holding the epoch's weights.  ``checkpoint`` (a file) saves the stacked run as :func:`fit` saves one (every
    ``checkpoint_steps`` steps or ``checkpoint_seconds`` seconds, atomically) and resumes it bit-identically.
    ``checkpoints[k]`` (files), when given, receive model ``k``'s finished run in :func:`fit`'s format after the last
    step, so that ``fit(..., checkpoint=checkpoints[k])`` loads it instead of training; the stacked checkpoint is
    then removed.  Returns each model's history; the models are left on ``device`` with their trained weights, in
    ``train()`` mode."""
    if not (isinstance(models, (list, tuple)) and models and all(isinstance(m, nn.Module) for m in models)):
        raise ValueError(f"models={models!r}; allowed: a non-empty list of torch.nn.Module")
    K = len(models)
    shapes = [[(name, tuple(t.shape)) for name, t in (*m.named_parameters(), *m.named_buffers())] for m in models]
    if any(type(m) is not type(models[0]) or s != shapes[0] for m, s in zip(models, shapes)):
        raise ValueError("models of different architectures; allowed: models with the same parameters and buffers")
    if not (isinstance(datas, (list, tuple)) and len(datas) == K and all(
            isinstance(d, (tuple, list)) and d and all(isinstance(t, torch.Tensor) and t.ndim for t in d)
            for d in datas)):
        raise ValueError(f"datas of {len(datas) if isinstance(datas, (list, tuple)) else datas!r}; allowed: one "
                         f"tuple of tensors for each of the {K} models")
    size = datas[0][0].shape[0]
    if size == 0 or any(t.shape[0] != size for d in datas for t in d):
        raise ValueError(f"data of leading sizes {[[t.shape[0] for t in d] for d in datas]}; allowed: one size B >= 1 "
                         "for every model's tensors (the models step together)")
    if not (isinstance(generators, (list, tuple)) and len(generators) == K):
        raise ValueError(f"generators={generators!r}; allowed: one torch.Generator for each of the {K} models")
    for g in generators:
        validation.generator("generators", g)
    if on_epoch is not None and len(on_epoch) != K:
        raise ValueError(f"on_epoch of length {len(on_epoch)}; allowed: None or one callable (or None) per model")
    if checkpoints is not None and len(checkpoints) != K:
        raise ValueError(f"checkpoints of length {len(checkpoints)}; allowed: None or one file per model")
    validation.integer("epochs", epochs)
    lr = validation.positive("lr", lr)
    validation.choice("optimizer", optimizer, OPTIMIZERS)
    validation.integer("batch_size", batch_size)
    validation.integer("checkpoint_steps", checkpoint_steps)
    checkpoint_seconds = validation.positive("checkpoint_seconds", checkpoint_seconds)
    if fused and optimizer == "sgd":
        raise ValueError("fused=True; allowed only with optimizer 'adam' or 'adamw'")
    dev = resolve_device(device)
    for model in models:
        model.to(dev).train()
    params, buffers = torch.func.stack_module_state(list(models))
    base = copy.deepcopy(models[0]).to("meta")
    stacked = torch.func.vmap(lambda p, b, x: torch.func.functional_call(base, (p, b), (x,)))

    def forward(x: torch.Tensor) -> torch.Tensor:
        return stacked(params, buffers, x)

    opt = _make_optimizer(optimizer, list(params.values()), lr, weight_decay, momentum, fused=fused or None)
    fresh = lambda epoch: {"epoch": epoch, "batch": 0, "perms": None, "totals": [0.0] * K, "seen": 0}
    state, histories = fresh(0), [{"loss": []} for _ in models]
    identity = {"epochs": epochs, "batch_size": batch_size, "size": size, "optimizer": optimizer, "lr": lr,
                "parameters": [list(p.shape) for p in models[0].parameters()], "models": K}
    if checkpoint is not None:
        checkpoint = Path(checkpoint)
        if checkpoint.is_file():
            state, histories = _load_stacked(checkpoint, identity, params, buffers, opt, generators)
    last_save, steps_since = time.monotonic(), 0
    for epoch in tqdm(range(state["epoch"], epochs), desc=desc, unit="epoch", disable=not progress):
        if state["perms"] is None:
            state["perms"] = [torch.randperm(size, generator=g, device=g.device) for g in generators]
        for start in tqdm(range(state["batch"] * batch_size, size, batch_size), total=math.ceil(size / batch_size),
                          initial=state["batch"], desc=f"epoch {epoch + 1}/{epochs}", unit="batch", leave=False,
                          disable=not progress):
            batches = [tuple(t[perm[start:start + batch_size].to(data[0].device)].to(dev, non_blocking=True)
                             for t in data) for perm, data in zip(state["perms"], datas)]
            opt.zero_grad(set_to_none=True)
            losses = loss_fn(forward, batches)
            losses.sum().backward()  # each model's parameters get its own loss's gradient
            opt.step()
            n = batches[0][0].shape[0]
            state["totals"] = [total + value * n for total, value in zip(state["totals"], losses.detach().tolist())]
            state["seen"] += n
            state["batch"] += 1
            steps_since += 1
            if checkpoint is not None and (steps_since >= checkpoint_steps
                                           or time.monotonic() - last_save >= checkpoint_seconds):
                _save_stacked(checkpoint, identity, state, histories, params, buffers, opt, generators)
                last_save, steps_since = time.monotonic(), 0
        for history, total in zip(histories, state["totals"]):
            history["loss"].append(total / state["seen"])
        if on_epoch is not None and any(on_epoch):
            _unstack(models, params, buffers)
            for model, history, callback in zip(models, histories, on_epoch):
                _record_epoch(model, callback, history)
        state = fresh(epoch + 1)
    _unstack(models, params, buffers)
    if checkpoint is not None:
        _save_stacked(checkpoint, identity, state, histories, params, buffers, opt, generators)
    if checkpoints is not None:  # each model's finished run, as fit writes it
        done = {"epoch": epochs, "batch": 0, "perm": None, "total_loss": 0.0, "counts": {}, "seen": 0}
        for path, model, history, g in zip(checkpoints, models, histories, generators):
            single = {key: value for key, value in identity.items() if key != "models"}
            _save_checkpoint(Path(path), single, done, history, model, None, g)
        if checkpoint is not None:
            checkpoint.unlink()
    return histories


def _record_epoch(model: nn.Module, callback, history: dict) -> None:
    """``callback(model)`` (``None``: nothing) with the model in ``eval()`` mode and gradients off, its values appended
    to ``history``, as :func:`fit` calls its ``on_epoch``."""
    if callback is None:
        return
    model.eval()
    with torch.no_grad():
        history.update({name: [*history.get(name, []), float(value)] for name, value in callback(model).items()})
    model.train()


def _unstack(models: list[nn.Module], params: dict, buffers: dict) -> None:
    """Copy the stacked parameters and buffers of :func:`fit_stacked` into each model."""
    stacked = params | buffers
    with torch.no_grad():
        for k, model in enumerate(models):
            for name, tensor in (*model.named_parameters(), *model.named_buffers()):
                tensor.copy_(stacked[name][k])


def _save_stacked(path: Path, identity: dict, state: dict, histories: list, params: dict, buffers: dict, opt,
                  generators: list) -> None:
    """:func:`fit_stacked`'s checkpoint, written as :func:`fit`'s is (:func:`_replace_atomically`)."""
    _replace_atomically(path, {"identity": identity, "state": state, "histories": histories,
                               "params": {k: v.detach() for k, v in params.items()}, "buffers": buffers,
                               "optimizer": opt.state_dict(), "generators": [g.get_state() for g in generators],
                               "torch_cpu": torch.random.get_rng_state()})


def _replace_atomically(path: Path, payload: dict) -> None:
    """``payload`` saved to ``<path>.part``, then renamed over ``path``: a crash leaves the old file or the new."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".part")
    torch.save(payload, partial)
    os.replace(partial, path)


def _load_stacked(path: Path, identity: dict, params: dict, buffers: dict, opt, generators: list
                  ) -> tuple[dict, list]:
    """Restore :func:`fit_stacked`'s run from ``path``; returns its position and histories."""
    payload = torch.load(path, map_location="cpu", weights_only=True)
    if payload["identity"] != identity:
        raise ValueError(f"checkpoint {path} holds a run of other settings ({payload['identity']}; this run: "
                         f"{identity}); remove it or choose another path")
    with torch.no_grad():
        for mine, saved in ((params, payload["params"]), (buffers, payload["buffers"])):
            for name, tensor in mine.items():
                tensor.copy_(saved[name])
    opt.load_state_dict(payload["optimizer"])
    for g, saved in zip(generators, payload["generators"]):
        g.set_state(saved)
    torch.random.set_rng_state(payload["torch_cpu"])
    state = payload["state"]
    if state["perms"] is not None:
        state["perms"] = [perm.to(g.device) for perm, g in zip(state["perms"], generators)]
    return state, payload["histories"]


def checkpoint_progress(path: str | Path) -> tuple[int, int] | None:
    """Where the run that :func:`fit` saved in ``path`` stands, read without loading its tensors (memory-mapped):
    ``(epochs done, epochs)``, equal for a finished run (which :func:`fit` loads instead of training); ``None`` where
    there is no file.  The checkpoint names no device: a run saved on one card resumes, or is loaded, on another
    card or on the CPU."""
    path = Path(path)
    if not path.is_file():
        return None
    payload = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    return int(payload["state"]["epoch"]), int(payload["identity"]["epochs"])


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
                     momentum: float = 0.9, checkpoint: str | Path | None = None) -> dict[str, list[float]]:
    """Train ``model`` in place with cross-entropy for ``epochs`` epochs through :func:`fit` and return its history.

    ``data`` is an ``(images, labels)`` pair of tensors or an iterable of such batches (see :func:`fit`, which also
    describes the optimiser, device and ``checkpoint`` arguments).  Returns ``{"loss": [...], "accuracy": [...]}``:
    per epoch, the mean training loss and the training accuracy over the batches as they were seen (while the weights
    changed).
    """
    if isinstance(data, (tuple, list)) and len(data) == 2 and isinstance(data[0], torch.Tensor):
        _check_xy(*data)
    cross_entropy = nn.CrossEntropyLoss()

    def loss_fn(net: nn.Module, batch: tuple) -> tuple[torch.Tensor, dict[str, int]]:
        xb, yb = batch
        logits = net(xb)
        return cross_entropy(logits, yb), {"accuracy": int((logits.argmax(1) == yb).sum())}

    history = fit(model, loss_fn, data, epochs=epochs, optimizer=optimizer, lr=lr, weight_decay=weight_decay,
                  momentum=momentum, batch_size=batch_size, generator=generator, device=device, progress=progress,
                  checkpoint=checkpoint)
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
    :math:`\\sqrt{\\frac{1}{N n}\\sum_b \\|a_{\\theta_b}\\|^2}` (the unit of the paper's noise level: the authors'
    code sets the noise's standard deviation to a multiple of it)."""
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


# ---------------------------------------------------------------------------------------------------------------
# The batched variant: many small linear heads trained at once
# ---------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LinearHeads:
    """``K`` linear classifier heads ``logits = W_k x + b_k``: ``weight`` of shape (K, classes, features), ``bias``
    (K, classes)."""

    weight: torch.Tensor
    bias: torch.Tensor

    def __len__(self) -> int:
        return self.weight.shape[0]

    def flat(self) -> torch.Tensor:
        """The parameters as the paper's attack sees them, (K, classes * features + classes): each head's weight
        row-major, then its bias (``torch.cat([p.flatten() for p in head.parameters()])`` of an ``nn.Linear``)."""
        return torch.cat([self.weight.flatten(1), self.bias], dim=1)

    @classmethod
    def unflatten(cls, flat: torch.Tensor, features: int) -> "LinearHeads":
        """The inverse of :meth:`flat` for heads on ``features`` inputs."""
        classes = flat.shape[-1] // (features + 1)
        if flat.ndim != 2 or classes < 1 or classes * (features + 1) != flat.shape[1]:
            raise ValueError(f"weights of shape {tuple(flat.shape)}; allowed: (K, classes * ({features} + 1))")
        weight, bias = flat.split([classes * features, classes], dim=1)
        return cls(weight.reshape(-1, classes, features), bias)

    def logits(self, x: torch.Tensor) -> torch.Tensor:
        """Logits (K, B, classes) of inputs ``x``: (B, features), the same for every head, or (K, B, features)."""
        pattern = "bf,kcf->kbc" if x.ndim == 2 else "kbf,kcf->kbc"
        return torch.einsum(pattern, x, self.weight) + self.bias[:, None, :]

    def accuracy(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Each head's accuracy (K,) on the shared inputs ``x`` (B, features) with labels ``y`` (B,)."""
        with torch.no_grad():
            return (self.logits(x.to(self.weight)).argmax(-1) == y.to(self.weight.device)).double().mean(1)


#: Up to this many examples per head, and from this many heads on, :func:`fit_linear_heads` multiplies by the Gram
#: matrices with N fused multiply-adds over all heads at once instead of a batched matmul, on a CPU (the crossovers
#: measured on 2 cores; see :func:`_gram_descent_heads_last`; a GPU keeps the batched matmul).
ELEMENTWISE_GRAM_MAX_N = 16
ELEMENTWISE_GRAM_MIN_HEADS = 2048


def fit_linear_heads(features: torch.Tensor, labels: torch.Tensor, *, num_classes: int, steps: int, lr: float,
                     weight_decay: float, init_std: float, generator: torch.Generator,
                     noise_multiplier: float | None = None, max_grad_norm: float | None = None,
                     sample_rate: float = 1.0, optimizer: str = "sgd", batch_size: int | None = None,
                     shuffle: bool = True, device: str = "auto", progress: bool = False) -> LinearHeads:
    """Train ``K`` linear softmax heads at once, head ``k`` on its own ``N`` examples ``features[k]`` (K, N, F) with
    labels ``labels[k]`` (K, N): the batched variant of :func:`fit` for the transfer-learning chapter's shadow models
    (Maciazek & Allison 2025, Algorithm 1 and Appendix D.2).

    Each head starts from weights i.i.d. ``N(0, init_std^2)`` and zero biases (the paper's Table 3) and takes
    ``steps`` gradient steps of cross-entropy with coupled weight decay, ``theta <- theta - lr (g + weight_decay
    theta)`` on weights and biases (PyTorch's ``SGD(weight_decay=...)``):

    * without ``noise_multiplier``: full-batch gradient descent, ``g`` the mean gradient over the ``N`` examples
      (one step per epoch, the paper's non-private recipe); with ``batch_size`` ``B`` (a divisor of ``N``),
      mini-batch SGD instead: every ``N / B`` steps a fresh random permutation of each head's examples (with
      ``shuffle=False`` the examples in their given order every epoch, as a ``DataLoader`` without shuffling: the
      authors' code), cut into batches of ``B``, ``g`` the batch's mean gradient (Section 3.2, point 5, uses
      ``B = N / 2``);
    * with ``noise_multiplier`` and ``max_grad_norm``: DP-SGD as opacus runs it (Appendix E): every example joins the
      step's batch with probability ``sample_rate`` (Poisson sampling), its gradient ``g_i`` is clipped to
      ``g_i min(1, C / (||g_i|| + 1e-6))``, Gaussian noise ``N(0, sigma^2 C^2)`` is added to their sum, and the sum is
      divided by the expected batch size ``sample_rate * N`` (opacus' ``loss_reduction="mean"``);
    * with ``optimizer="adam"``, any of these with PyTorch's ``Adam(weight_decay=...)`` update in place of SGD's:
      ``g + weight_decay theta`` into the moments (betas 0.9, 0.999; eps 1e-8), ``theta <- theta - lr m^/(sqrt(v^) +
      eps)`` with the bias-corrected moments (Section 3.2, point 5: "Adam instead of SGD", same lr and weight decay).

    All ``K`` heads run as one batched computation (batched over heads): the gradient of a linear softmax head
    is exact in closed form, ``dL/dW = (softmax(z) - onehot(y))^T x``, and a per-example gradient's norm is
    ``||softmax(z_i) - onehot(y_i)|| sqrt(||x_i||^2 + 1)``, so no per-example gradient is ever materialised (opacus'
    own Linear grad sampler forms them; the test suite checks the two updates agree).  Without DP the weights stay
    in the span of the initial weights and the examples, and full-batch SGD runs on the ``N x N`` Gram matrices, with
    the heads as the last dimension when there are many heads of few examples each on a CPU
    (:data:`ELEMENTWISE_GRAM_MAX_N`, :data:`ELEMENTWISE_GRAM_MIN_HEADS`).  The initial weights, the batch masks (or
    permutations) and the noise are drawn from ``generator`` (on its device) in that order, step by step.
    """
    if not (isinstance(features, torch.Tensor) and features.ndim == 3 and features.dtype.is_floating_point):
        raise ValueError(f"features={getattr(features, 'shape', features)!r}; allowed: a float tensor (K, N, F)")
    if not (isinstance(labels, torch.Tensor) and labels.shape == features.shape[:2]
            and not labels.dtype.is_floating_point):
        raise ValueError(f"labels of shape {tuple(getattr(labels, 'shape', ()))}; allowed: integer class indices of "
                         f"shape {tuple(features.shape[:2])} (K, N)")
    validation.integer("num_classes", num_classes, minimum=2)
    if labels.numel() and (labels.min() < 0 or labels.max() >= num_classes):
        raise ValueError(f"labels in [{int(labels.min())}, {int(labels.max())}]; allowed: 0..{num_classes - 1}")
    validation.integer("steps", steps)
    lr = validation.positive("lr", lr)
    validation.number("weight_decay", weight_decay, at_least=0.0)
    if lr * weight_decay >= 1.0:
        raise ValueError(f"lr={lr!r} and weight_decay={weight_decay!r}; allowed: lr * weight_decay < 1 (each step "
                         "multiplies the weights by 1 - lr * weight_decay)")
    validation.number("init_std", init_std, at_least=0.0)
    validation.generator("generator", generator)
    private = noise_multiplier is not None
    if private:
        validation.number("noise_multiplier", noise_multiplier, at_least=0.0)
        validation.positive("max_grad_norm", max_grad_norm)
        validation.number("sample_rate", sample_rate, above=0.0, at_most=1.0, what="Poisson sampling rate")
    elif max_grad_norm is not None or sample_rate != 1.0:
        raise ValueError("max_grad_norm and sample_rate are DP-SGD settings; allowed only with a noise_multiplier")
    validation.choice("optimizer", optimizer, ("sgd", "adam"))
    if not isinstance(shuffle, bool) or (not shuffle and batch_size is None):
        raise ValueError(f"shuffle={shuffle!r}; allowed: True, or False with a batch_size")
    if batch_size is not None:
        validation.integer("batch_size", batch_size)
        if private or features.shape[1] % batch_size:
            raise ValueError(f"batch_size={batch_size!r}; allowed: a divisor of the N = {features.shape[1]} examples, "
                             "without a noise_multiplier (DP-SGD draws Poisson batches at sample_rate)")
    dev = resolve_device(device)
    gen_dev = generator.device
    K, N, F = features.shape
    x, labels = features.to(dev), labels.to(dev)
    init = torch.randn(K, num_classes, F, generator=generator, device=gen_dev).to(dev, x.dtype).mul_(init_std)
    if not private and optimizer == "sgd" and batch_size is None:
        # Full-batch GD keeps (W_t, b_t) = decay^t (W_0, 0) + A_t (x, 1) (every gradient is a residual times the
        # examples with a constant 1 appended), so the logits are decay^t W_0 x^T + A_t (x x^T + 1): each step
        # multiplies by the N x N Gram matrix instead of the F-wide weights, F / N times fewer operations (the kernel
        # form of gradient descent; exact up to rounding).  A_t = decay^t C_t: the decay rides on the scalars, so
        # each step makes one pass over C_t.
        decay = 1.0 - lr * weight_decay
        gram = torch.baddbmm(torch.ones(1, 1, 1, device=dev, dtype=x.dtype), x, x.transpose(1, 2))
        start_logits = torch.bmm(init, x.transpose(1, 2))
        if dev.type == "cpu" and N <= ELEMENTWISE_GRAM_MAX_N and K >= ELEMENTWISE_GRAM_MIN_HEADS:
            coef = _gram_descent_heads_last(start_logits, gram, labels, steps=steps, lr=lr, decay=decay,
                                            progress=progress)
        else:
            coef = _gram_descent_heads_first(start_logits, gram, labels, steps=steps, lr=lr, decay=decay,
                                             progress=progress)
        coef.mul_(decay ** steps)
        weight = init.baddbmm_(coef, x, beta=decay ** steps)  # in place: a fresh (K, classes, F) costs page faults
        bias = coef.sum(2)
    else:
        weight, bias = _weight_space_descent(
            x, labels, init, steps=steps, lr=lr, weight_decay=weight_decay, generator=generator,
            noise_multiplier=noise_multiplier, max_grad_norm=max_grad_norm, sample_rate=sample_rate,
            optimizer=optimizer, batch_size=batch_size, shuffle=shuffle, progress=progress)
    return LinearHeads(weight, bias)


def _weight_space_descent(x: torch.Tensor, labels: torch.Tensor, init: torch.Tensor, *, steps: int, lr: float,
                          weight_decay: float, generator: torch.Generator, noise_multiplier: float | None,
                          max_grad_norm: float | None, sample_rate: float, optimizer: str, batch_size: int | None,
                          shuffle: bool, progress: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`fit_linear_heads` on the F-wide weights, for every recipe but full-batch SGD (which runs on the Gram
    matrices): DP-SGD, mini-batch SGD and Adam, the update by ``torch.optim`` (:func:`_make_optimizer`) on the
    stacked weights, since both optimisers act elementwise and so on every head separately.  Returns the weights
    (K, classes, F) and biases (K, classes)."""
    K, N, F = x.shape
    classes, gen_dev = init.shape[1], generator.device
    onehot = nn.functional.one_hot(labels, classes).to(x.dtype)
    x_t = x.transpose(1, 2).contiguous()
    weight = init.transpose(1, 2).contiguous()  # (K, F, classes): both products are plain batched matmuls
    bias = torch.zeros(K, 1, classes, device=x.device, dtype=x.dtype)
    private = noise_multiplier is not None
    if private:
        x_norm = torch.sqrt((x ** 2).sum(-1) + 1.0)  # ||(x_i, 1)||, the per-example gradient norm's data factor
        noise_scale, denominator = noise_multiplier * max_grad_norm, sample_rate * N
    else:
        denominator = N if batch_size is None else batch_size
    update = _make_optimizer(optimizer, [weight, bias], lr, weight_decay, momentum=0.0)  # elementwise: per head
    for step in tqdm(range(steps), desc="shadow heads", unit="step", disable=not progress):
        residual = torch.softmax(torch.baddbmm(bias, x, weight), -1).sub_(onehot)  # (K, N, classes)
        if private:
            batch = torch.rand(K, N, generator=generator, device=gen_dev).to(x.device) < sample_rate
            factor = (max_grad_norm / (residual.norm(dim=-1) * x_norm + 1e-6)).clamp(max=1.0) * batch
            residual.mul_(factor[..., None])
        elif batch_size is not None:
            if not shuffle and step == 0:
                position = torch.arange(N, device=x.device).expand(K, N)
            elif shuffle and step % (N // batch_size) == 0:  # a new epoch: each position in a fresh permutation
                position = torch.rand(K, N, generator=generator, device=gen_dev).argsort(1).argsort(1).to(x.device)
            residual.mul_((position // batch_size == step % (N // batch_size))[..., None])
        grad_w, grad_b = torch.bmm(x_t, residual), residual.sum(1, keepdim=True)
        if private:
            grad_w.add_(torch.randn(K, classes, F, generator=generator, device=gen_dev).to(x.device, x.dtype)
                        .transpose(1, 2), alpha=noise_scale)
            grad_b.add_(torch.randn(K, classes, generator=generator, device=gen_dev).to(x.device, x.dtype)[:, None],
                        alpha=noise_scale)
        weight.grad, bias.grad = grad_w.div_(denominator), grad_b.div_(denominator)
        update.step()
    return weight.transpose(1, 2).contiguous(), bias[:, 0]


def _gram_descent_heads_last(start_logits: torch.Tensor, gram: torch.Tensor, labels: torch.Tensor, *, steps: int,
                             lr: float, decay: float, progress: bool) -> torch.Tensor:
    """The coefficients C_T (K, classes, N) of :func:`fit_linear_heads`' kernel-form descent, with the heads as the
    last, contiguous dimension: tensors (classes, N, K), the product ``C_t G`` as N multiply-adds of (classes, 1, K)
    by (1, N, K) slices, the softmax over classes as max, exp and sum passes over the first dimension.

    For tiny matrices this beats MKL's batched matmul, which pays a fixed cost per 10 x 10 matrix, and
    ``torch.softmax`` over a leading dimension: measured on 2 cores at N = 10 and K = 5,000, a step costs 0.2 us per
    head against 0.3-0.6 us in the (K, classes, N) layout of :func:`_gram_descent_heads_first`.  Below about 2,000
    heads the N + 6 operations per step cost more in overhead than they save, and at N = 40 the N passes take twice
    as long as a batched matmul."""
    N = gram.shape[1]
    start = start_logits.permute(1, 2, 0).contiguous()
    gram = gram.permute(1, 2, 0).contiguous()
    minus_target = torch.zeros_like(start).scatter_(0, labels.T[None], -1.0)
    coef, logits = torch.zeros_like(start), torch.empty_like(start)
    for step in tqdm(range(steps), desc="shadow heads", unit="step", disable=not progress):
        shrink = decay ** step
        torch.addcmul(start, coef[:, 0, None], gram[None, 0], out=logits)  # start + C_t G, unscaled
        for n in range(1, N):
            logits.addcmul_(coef[:, n, None], gram[None, n])
        # residual softmax(shrink logits) - onehot, in three passes: shrink (logits - max), exp, p / sum - onehot
        probs = torch.add(logits.amax(0).mul_(-shrink), logits, alpha=shrink, out=logits).exp_()
        residual = torch.addcdiv(minus_target, probs, probs.sum(0), out=probs)
        coef.sub_(residual, alpha=lr / N / (shrink * decay))
    return coef.permute(2, 0, 1).contiguous()


def _gram_descent_heads_first(start_logits: torch.Tensor, gram: torch.Tensor, labels: torch.Tensor, *, steps: int,
                              lr: float, decay: float, progress: bool) -> torch.Tensor:
    """:func:`_gram_descent_heads_last` with the heads first, (K, classes, N), and the product as one batched matmul
    per step: faster from about N = 16 on (classes before examples, where the softmax over classes is twice as fast
    as over the last dimension)."""
    N = gram.shape[1]
    target = torch.zeros_like(start_logits).scatter_(1, labels[:, None, :], 1.0)
    coef = torch.zeros_like(start_logits)
    for step in tqdm(range(steps), desc="shadow heads", unit="step", disable=not progress):
        shrink = decay ** step
        logits = torch.baddbmm(start_logits, coef, gram, beta=shrink, alpha=shrink)
        coef.sub_(torch.softmax(logits, 1).sub_(target), alpha=lr / N / (shrink * decay))
    return coef


@dataclass(frozen=True)
class BinaryHeads:
    """``K`` single-output heads ``logit = w2_k . relu(W1_k x + b1_k) + b2_k`` (Table 6's and CelebA's
    ``FC(H) -> ReLU -> FC(1)``): ``w1`` (K, H, features), ``b1`` (K, H), ``w2`` (K, H), ``b2`` (K,)."""

    w1: torch.Tensor
    b1: torch.Tensor
    w2: torch.Tensor
    b2: torch.Tensor

    def __len__(self) -> int:
        return self.w1.shape[0]

    def flat(self) -> torch.Tensor:
        """(K, H * features + 2 H + 1): ``W1`` row-major, ``b1``, ``w2``, ``b2``, the order of ``torch.cat([p.flatten()
        for p in head.parameters()])`` of the two ``nn.Linear`` layers."""
        return torch.cat([self.w1.flatten(1), self.b1, self.w2, self.b2[:, None]], dim=1)

    @classmethod
    def unflatten(cls, flat: torch.Tensor, features: int) -> "BinaryHeads":
        """The inverse of :meth:`flat` for heads on ``features`` inputs."""
        hidden = (flat.shape[-1] - 1) // (features + 2)
        if flat.ndim != 2 or hidden < 1 or hidden * (features + 2) + 1 != flat.shape[1]:
            raise ValueError(f"weights of shape {tuple(flat.shape)}; allowed: (K, H * {features} + 2 H + 1)")
        w1, b1, w2, b2 = flat.split([hidden * features, hidden, hidden, 1], dim=1)
        return cls(w1.reshape(-1, hidden, features), b1, w2, b2[:, 0])

    def canonical(self) -> "BinaryHeads":
        """The same heads with each head's hidden units in increasing order of their output weight ``w2``: one
        representative of the ``H!`` orderings of the hidden units, which all compute the same function."""
        order = self.w2.argsort(1)
        take = lambda t: t.gather(1, order if t.ndim == 2 else order[..., None].expand_as(t))
        return BinaryHeads(take(self.w1), take(self.b1), take(self.w2), self.b2)

    def logits(self, x: torch.Tensor) -> torch.Tensor:
        """Logits (K, B) of inputs ``x``: (B, features), the same for every head, or (K, B, features)."""
        pattern = "bf,khf->kbh" if x.ndim == 2 else "kbf,khf->kbh"
        hidden = torch.relu(torch.einsum(pattern, x, self.w1) + self.b1[:, None, :])
        return torch.einsum("kbh,kh->kb", hidden, self.w2) + self.b2[:, None]

    def accuracy(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Each head's accuracy (K,) on the shared inputs ``x`` (B, features) with 0/1 labels ``y`` (B,): class 1
        where the logit is positive."""
        with torch.no_grad():
            return ((self.logits(x.to(self.w1)) > 0) == y.to(self.w1.device).bool()).double().mean(1)

    def loss(self, x: torch.Tensor, y: torch.Tensor, pos_weight: float = 1.0) -> torch.Tensor:
        """Each head's mean ``BCEWithLogitsLoss(pos_weight)`` (K,) on its own examples ``x`` (K, N, features) with
        0/1 targets ``y`` (K, N): the training loss :func:`fit_binary_heads` minimises."""
        with torch.no_grad():
            z = self.logits(x.to(self.w1))
            return nn.functional.binary_cross_entropy_with_logits(
                z, y.to(z), pos_weight=torch.tensor(pos_weight, dtype=z.dtype, device=z.device),
                reduction="none").mean(1)

    def replace(self, rows: torch.Tensor, other: "BinaryHeads") -> None:
        """Overwrite the heads ``rows`` with ``other``'s (in place; ``len(other) == len(rows)``)."""
        for mine, theirs in zip((self.w1, self.b1, self.w2, self.b2), (other.w1, other.b1, other.w2, other.b2)):
            mine[rows] = theirs.to(mine)


def fit_binary_heads(features: torch.Tensor, targets: torch.Tensor, *, hidden: int, steps: int, lr: float,
                     weight_decay: float, init_std: float, generator: torch.Generator, pos_weight: float = 1.0,
                     restart_loss: float | None = None, max_attempts: int = 1, device: str = "auto") -> BinaryHeads:
    """Train ``K`` two-layer binary heads at once (:class:`BinaryHeads`, ``hidden`` units), head ``k`` on its own
    ``N`` examples ``features[k]`` (K, N, F) with 0/1 ``targets[k]`` (K, N): Table 6's recipe (Maciazek & Allison
    2025, Appendix D.3) and CelebA's (Table 3).  Weights i.i.d. ``N(0, init_std^2)``, biases 0 (drawn from
    ``generator``: ``W1`` then ``w2``); ``steps`` full-batch gradient steps of the mean ``BCEWithLogitsLoss`` with
    ``pos_weight`` (``-[p y log s(z) + (1 - y) log(1 - s(z))]``, the loss the authors' code uses), coupled weight decay
    on every parameter (``SGD(weight_decay=...)``).

    With ``restart_loss`` the authors' restart rule for CelebA (their ``shadow_model_training.py``; the paper does
    not state it): a head whose training loss after its last step (:meth:`BinaryHeads.loss`) is at least
    ``restart_loss`` is re-initialised and trained again, up to ``max_attempts`` trainings in all, the last attempt
    kept.  Each round re-trains all the heads still above the loss at once, their fresh initial weights drawn from
    ``generator`` in head order.  The authors' loop differs in two details: it tests the loss of the forward pass
    before the last step (without weight decay) and stops after ``attempts > 100``, i.e. at most 101 trainings.

    Batched by hand rather than with ``torch.func.vmap`` over autograd: the gradients are exact in closed form,
    ``dL/dz = (s(z) (p y + 1 - y) - p y) / N``, back-propagated through the ReLU with batched matmuls (the test suite
    checks them against ``torch.optim.SGD`` on one ``nn.Sequential`` per head)."""
    if not (isinstance(features, torch.Tensor) and features.ndim == 3 and features.dtype.is_floating_point):
        raise ValueError(f"features={getattr(features, 'shape', features)!r}; allowed: a float tensor (K, N, F)")
    if not (isinstance(targets, torch.Tensor) and targets.shape == features.shape[:2]
            and bool(((targets == 0) | (targets == 1)).all())):
        raise ValueError(f"targets of shape {tuple(getattr(targets, 'shape', ()))}; allowed: 0/1 values of shape "
                         f"{tuple(features.shape[:2])} (K, N)")
    validation.integer("hidden", hidden)
    validation.integer("steps", steps)
    lr = validation.positive("lr", lr)
    validation.number("weight_decay", weight_decay, at_least=0.0)
    validation.number("init_std", init_std, at_least=0.0)
    pos_weight = validation.positive("pos_weight", pos_weight)
    validation.generator("generator", generator)
    validation.integer("max_attempts", max_attempts)
    if restart_loss is None and max_attempts != 1:
        raise ValueError(f"max_attempts={max_attempts!r} without restart_loss; allowed: 1, or a restart_loss > 0")
    if restart_loss is not None:
        validation.positive("restart_loss", restart_loss)
        options = dict(hidden=hidden, steps=steps, lr=lr, weight_decay=weight_decay, init_std=init_std,
                       generator=generator, pos_weight=pos_weight, device=device)
        heads = fit_binary_heads(features, targets, **options)
        for _ in range(max_attempts - 1):
            failed = torch.nonzero(heads.loss(features, targets, pos_weight) >= restart_loss).flatten()
            if not len(failed):
                break
            heads.replace(failed, fit_binary_heads(features[failed.cpu()], targets[failed.cpu()], **options))
        return heads
    dev = resolve_device(device)
    K, N, F = features.shape
    x = features.to(dev)
    y = targets.to(dev, x.dtype)
    draw = lambda *shape: torch.randn(*shape, generator=generator, device=generator.device).to(dev, x.dtype)
    w1 = draw(K, hidden, F).mul_(init_std)
    w2 = draw(K, hidden).mul_(init_std)
    b1 = torch.zeros(K, hidden, device=dev, dtype=x.dtype)
    b2 = torch.zeros(K, device=dev, dtype=x.dtype)
    decay = 1.0 - lr * weight_decay
    weighted = pos_weight * y  # p y, and (p y + 1 - y) the factor of s(z)
    factor = weighted + 1.0 - y
    for _ in range(steps):
        h = torch.relu(torch.baddbmm(b1[:, None, :], x, w1.transpose(1, 2)))  # (K, N, H)
        z = torch.bmm(h, w2[:, :, None])[..., 0] + b2[:, None]  # (K, N)
        dz = (torch.sigmoid(z) * factor - weighted) / N
        dh = dz[..., None] * w2[:, None, :] * (h > 0)  # (K, N, H)
        grad_w2, grad_b2 = torch.bmm(h.transpose(1, 2), dz[..., None])[..., 0], dz.sum(1)
        grad_w1, grad_b1 = torch.bmm(dh.transpose(1, 2), x), dh.sum(1)
        w1.mul_(decay).sub_(grad_w1, alpha=lr)
        b1.mul_(decay).sub_(grad_b1, alpha=lr)
        w2.mul_(decay).sub_(grad_w2, alpha=lr)
        b2.mul_(decay).sub_(grad_b2, alpha=lr)
    return BinaryHeads(w1, b1, w2, b2)
