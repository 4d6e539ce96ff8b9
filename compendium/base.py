"""Base helpers that every layer of the package may import: the torch device, the repository root, and the
checkpoints of long runs (:func:`save_atomically`, :func:`digest`).

Nothing here imports another module of the package, so that ``data``, ``train``, ``attacks`` and ``bounds`` never
depend on a chapter's configuration (the import order is notebooks -> chapters -> attacks/bounds ->
metrics/dp/data/models/train -> base).
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import torch

#: The environment variable the book's build sets while it executes a chapter
#: (:func:`compendium.book.execute_notebook`): a figure is then only glued for the page's numbered figure, not also
#: shown inline (:func:`compendium.plotting.show_figure`).
BOOK_BUILD = "COMPENDIUM_BOOK_BUILD"


def resolve_device(device: str = "auto") -> torch.device:
    """``"auto"`` means CUDA when available, else CPU; anything else must name a usable torch device.

    Choosing CUDA also turns off TF32 in cuDNN's convolutions (``torch.backends.cudnn.allow_tf32``; PyTorch allows
    it by default, while float32 matrix products are exact by default): TF32 keeps 10 bits of mantissa and moves
    float32 results by about 1e-3, which the book's checks of float32 computations at 1e-5 would see, and it would
    make a GPU run's numbers differ from the CPU's for no reason but speed.
    """
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as err:
        raise ValueError(f"device={device!r}; allowed: 'auto', 'cpu' or 'cuda[:k]'") from err
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"device={device!r}; allowed: 'auto' or 'cpu' (CUDA is not available here)")
        torch.backends.cudnn.allow_tf32 = False
    return dev


def repository_root() -> Path:
    """The repository root (the folder holding ``_config.yml`` and ``_toc.yml``) when the package runs from a
    checkout; for an installed package (a notebook's install cell on Colab puts it in site-packages) the current
    working directory, so that ``data/`` lies beside the notebook rather than inside the Python installation."""
    checkout = Path(__file__).resolve().parent.parent
    return checkout if (checkout / "_toc.yml").is_file() else Path.cwd()


def in_repository(path: str | Path) -> Path:
    """``path``, a relative one taken from the repository root rather than from the working directory (a notebook
    runs in ``notebooks/``, the tests in the root): the one rule for every data, weight and output folder."""
    path = Path(path)
    return path if path.is_absolute() else repository_root() / path


def save_atomically(payload, path: str | Path) -> None:
    """``torch.save(payload)`` to ``<path>.part``, then renamed over ``path`` (``os.replace``, atomic on one file
    system): a run killed while writing leaves the old file or the new one, never half of one.  The parent folders
    are created.  The checkpoints of long runs are written with it and read back with ``torch.load(path,
    weights_only=True)``, so a payload holds tensors, numbers, strings and containers of them only."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".part")
    torch.save(payload, partial)
    os.replace(partial, path)


def digest(identity: dict, *arrays, length: int = 16) -> str:
    """The first ``length`` hex digits of the SHA-256 digest of ``identity`` as JSON (sorted keys; an object JSON
    cannot write is written as its ``str``), followed, for each of ``arrays`` (torch tensors, on any device, or numpy
    arrays), by its dtype (numpy's name) and shape as JSON and its bytes in C order (a tensor and its numpy copy give
    one digest).  It names a checkpoint file by everything that determines its content, so that a rerun with other
    inputs never reads it; without ``arrays`` it is the digest of the JSON alone."""
    hasher = hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode())
    for array in arrays:
        if isinstance(array, torch.Tensor):
            header = (str(array.dtype).removeprefix("torch."), list(array.shape))  # numpy's names
            raw = array.detach().cpu().contiguous().reshape(-1)
            raw = raw.view(torch.uint8).numpy()                  # any dtype's bytes, bfloat16 included
        else:
            array = np.asarray(array)
            header, raw = (str(array.dtype), list(array.shape)), np.ascontiguousarray(array).reshape(-1).view(np.uint8)
        hasher.update(json.dumps(header).encode())
        hasher.update(raw)
    return hasher.hexdigest()[:length]


def plural(count: int, noun: str) -> str:
    """``1 run``, ``2 runs``: a count with its noun (a regular plural)."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def glued_texts(cells) -> dict[str, tuple[int, str]]:
    """Name -> (index of the cell that glued it, its ``text/plain``) for every value that the cells of an executed
    notebook glued with myst-nb's ``glue`` (an output whose metadata holds a ``scrapbook`` record)."""
    values = {}
    for index, cell in enumerate(cells):
        for output in cell.get("outputs", []):
            record = output.get("metadata", {}).get("scrapbook", {})
            if "name" in record:
                values[record["name"]] = (index, output["data"].get(record.get("mime_prefix", "") + "text/plain", ""))
    return values


#: A generated table's opening on a book page (closed by ``:::``): on a phone each row is a card, every cell under
#: its column's name (book/_static/custom.css), so that no column of a wide table is off the screen.
CARDS_ON_PHONE = ":::{table}\n:class: cards-on-phone\n"
