"""Base helpers that every layer of the package may import: the torch device and the repository root.

Nothing here imports another module of the package, so that ``data``, ``train``, ``attacks`` and ``bounds`` never
depend on a chapter's configuration (the import order is notebooks -> chapters -> attacks/bounds ->
metrics/dp/data/models/train -> base).
"""
from __future__ import annotations

from pathlib import Path

import torch


def resolve_device(device: str = "auto") -> torch.device:
    """``"auto"`` means CUDA when available, else CPU; anything else must name a usable torch device."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as err:
        raise ValueError(f"device={device!r}; allowed: 'auto', 'cpu' or 'cuda[:k]'") from err
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device={device!r}; allowed: 'auto' or 'cpu' (CUDA is not available here)")
    return dev


def repository_root() -> Path:
    """The repository root (the folder holding ``_config.yml`` and ``_toc.yml``)."""
    return Path(__file__).resolve().parent.parent


def in_repository(path: str | Path) -> Path:
    """``path``, a relative one taken from the repository root rather than from the working directory (a notebook
    runs in ``notebooks/``, the tests in the root): the one rule for every data, weight and output folder."""
    path = Path(path)
    return path if path.is_absolute() else repository_root() / path
