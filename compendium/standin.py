"""Stand-in data at the papers' shapes: files in the formats the paper-scale loaders of :mod:`compendium.data` and
:mod:`compendium.models.pretrained` read, filled with seeded random pixels, for a run of a chapter's paper pipeline
whose counts are cut to seconds (:func:`compendium.book.execute_paper_shape`).

Such a run checks that the paper's shapes, models and devices work end to end (28×28 MNIST, 32×32×3 CIFAR-10,
CelebA's 178×218 photos, ImageNet-sized JPEGs, 256² faces) without downloading anything; its numbers mean nothing.
Every writer takes the folder to write into and a seed, writes only there, and returns the folder the chapter's
loader is pointed at.
"""
from __future__ import annotations

import gzip
import pickle
import struct
from pathlib import Path

import numpy as np

#: The class counts of the stand-ins: MNIST's digits, EMNIST's letters (labelled 1..26 as the real files are),
#: CIFAR-10's classes.
MNIST_CLASSES, LETTERS, CIFAR10_CLASSES = 10, 26, 10


def write_idx(path: str | Path, array: np.ndarray) -> Path:
    """``array`` (unsigned bytes) as a gzipped IDX file: the magic ``0 0 8 ndim``, the big-endian shape, the bytes."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    header = struct.pack(">BBBB", 0, 0, 0x08, array.ndim) + struct.pack(f">{array.ndim}i", *array.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + np.asarray(array).astype(np.uint8).tobytes())
    return path


#: The share of lit pixels in a stand-in digit or letter: lit pixels are uniform on 1..255 (mean 128 / 255), so the
#: mean pixel is MNIST's 0.1307 and :func:`compendium.data.mnist`'s check takes the files for MNIST's format.
LIT = 0.1307 / (128 / 255)


def _idx_pair(folder: Path, prefix: str, n: int, classes: int, first: int, rng: np.random.Generator) -> None:
    pixels = rng.integers(1, 256, (n, 28, 28)) * (rng.random((n, 28, 28)) < LIT)
    write_idx(folder / f"{prefix}-images-idx3-ubyte.gz", pixels)
    write_idx(folder / f"{prefix}-labels-idx1-ubyte.gz", np.arange(n) % classes + first)


def mnist(folder: str | Path, *, train: int = 200, test: int = 100, seed: int = 0) -> Path:
    """MNIST's four IDX files (``train-*`` and ``t10k-*``, 28×28, labels 0..9 in turn, MNIST's mean pixel) in
    ``folder``."""
    folder, rng = Path(folder), np.random.default_rng(seed)
    _idx_pair(folder, "train", train, MNIST_CLASSES, 0, rng)
    _idx_pair(folder, "t10k", test, MNIST_CLASSES, 0, rng)
    return folder


def emnist_letters(folder: str | Path, *, train: int = 52, test: int = 26, seed: int = 0) -> Path:
    """EMNIST letters' four IDX files (``emnist-letters-{train,test}-*``, 28×28, labels 1..26) in ``folder``."""
    folder, rng = Path(folder), np.random.default_rng(seed)
    _idx_pair(folder, "emnist-letters-train", train, LETTERS, 1, rng)
    _idx_pair(folder, "emnist-letters-test", test, LETTERS, 1, rng)
    return folder


def _cifar_batch(path: Path, n: int, first: int, rng: np.random.Generator) -> None:
    labels = [(first + i) % CIFAR10_CLASSES for i in range(n)]
    batch = {b"batch_label": b"stand-in", b"data": rng.integers(0, 256, (n, 3072), dtype=np.uint8),
             b"labels": labels, b"filenames": [f"{i}.png".encode() for i in range(n)]}
    with open(path, "wb") as f:
        pickle.dump(batch, f)


def cifar10(folder: str | Path, *, per_batch: int = 20, test: int = 20, seed: int = 0) -> Path:
    """CIFAR-10's python release in ``folder/cifar-10-batches-py``: five training batches of ``per_batch`` images
    and a test batch, 32×32×3 as 3,072 bytes a row (the red plane first), labels 0..9 in turn through the batches."""
    folder, rng = Path(folder), np.random.default_rng(seed)
    batches = folder / "cifar-10-batches-py"
    batches.mkdir(parents=True, exist_ok=True)
    for i in range(1, 6):
        _cifar_batch(batches / f"data_batch_{i}", per_batch, (i - 1) * per_batch, rng)
    _cifar_batch(batches / "test_batch", test, 0, rng)
    return folder


def _jpeg(path: Path, width: int, height: int, rng: np.random.Generator) -> None:
    """A JPEG of a random colour with noise: a photo's size and format, none of its content."""
    from PIL import Image

    pixels = rng.integers(0, 256, 3) + rng.normal(0, 30, (height, width, 3))
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8)).save(path, quality=90)


def imagenet_val(folder: str | Path, *, n: int = 8, seed: int = 0) -> Path:
    """``n`` JPEGs named as ImageNet's validation images (``ILSVRC2012_val_00000001.JPEG``, ...) in ``folder``, of
    the sizes such photos have (500×375 and 375×500 in turn)."""
    folder, rng = Path(folder), np.random.default_rng(seed)
    for i in range(1, n + 1):
        width, height = (500, 375) if i % 2 else (375, 500)
        _jpeg(folder / f"ILSVRC2012_val_{i:08d}.JPEG", width, height, rng)
    return folder


def celeba(folder: str | Path, *, identities: int = 6, photos: int = 4, test_identities: int = 6,
           test_photos: int = 3, seed: int = 0) -> Path:
    """A CelebA tree in ``folder/celeba``: ``img_align_celeba/`` of 178×218 JPEGs, ``list_eval_partition.txt``
    (``identities`` people with ``photos`` photos each, split between "train" and "valid"; ``test_identities``
    others with ``test_photos`` each in "test") and ``identity_CelebA.txt``.  Returns ``folder`` (the data folder
    that holds ``celeba/``)."""
    folder, rng = Path(folder), np.random.default_rng(seed)
    root = folder / "celeba"
    people = [(p % 2, p) for p in range(1, identities + 1) for _ in range(photos)]
    people += [(2, p) for p in range(identities + 1, identities + test_identities + 1) for _ in range(test_photos)]
    partition, identity = [], []
    for photo, (split, person) in enumerate(people, 1):
        name = f"{photo:06d}.jpg"
        _jpeg(root / "img_align_celeba" / name, 178, 218, rng)
        partition.append(f"{name} {split}")
        identity.append(f"{name} {person}")
    (root / "list_eval_partition.txt").write_text("\n".join(partition) + "\n")
    (root / "identity_CelebA.txt").write_text("\n".join(identity) + "\n")
    return folder


def celeba_hq(folder: str | Path, *, n: int = 4, side: int = 256, seed: int = 0) -> Path:
    """``n`` square JPEGs of ``side`` pixels (CelebA-HQ's faces at the diffusion paper's 256²) in ``folder``."""
    folder, rng = Path(folder), np.random.default_rng(seed)
    for i in range(n):
        _jpeg(folder / f"{i:05d}.jpg", side, side, rng)
    return folder


#: The topology of ``google/ddpm-celebahq-256`` (the diffusion chapter's paper-scale prior, a ``diffusers``
#: ``UNet2DModel`` of 114 M parameters): six resolution levels of two ResNet blocks each, self-attention at the fifth
#: (16×16 at a 256² input); its channel widths are (128, 128, 256, 256, 512, 512).
CELEBAHQ_UNET = dict(layers_per_block=2, down_block_types=("DownBlock2D",) * 4 + ("AttnDownBlock2D", "DownBlock2D"),
                     up_block_types=("UpBlock2D", "AttnUpBlock2D") + ("UpBlock2D",) * 4)


def diffusion_unet(folder: str | Path, *, sample_size: int = 256, channels: int = 3,
                   widths: tuple[int, ...] = (16, 16, 32, 32, 64, 64), groups: int = 8, seed: int = 0) -> Path:
    """A ``diffusers.UNet2DModel`` with random weights (drawn under ``torch.manual_seed(seed)`` inside
    ``torch.random.fork_rng``, so the caller's random state is untouched) written to ``folder`` by ``save_pretrained``,
    where ``UNet2DModel.from_pretrained(folder)`` (the diffusion chapter's ``prior_checkpoint``) reads it: the
    checkpoint's topology :data:`CELEBAHQ_UNET` at ``sample_size``² with ``channels`` colour channels, the channel
    ``widths`` per level (the checkpoint's are 8 times the default's, too slow for one CPU core) and ``groups``
    GroupNorm groups (the checkpoint's 32 need widths of at least 32)."""
    import torch
    from diffusers import UNet2DModel

    if len(widths) != len(CELEBAHQ_UNET["down_block_types"]) or any(w % groups for w in widths):
        raise ValueError(f"widths={widths!r}, groups={groups!r}; allowed: one width per level "
                         f"({len(CELEBAHQ_UNET['down_block_types'])}), each a multiple of groups")
    folder = Path(folder)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        unet = UNet2DModel(sample_size=sample_size, in_channels=channels, out_channels=channels,
                           block_out_channels=tuple(widths), norm_num_groups=groups, **CELEBAHQ_UNET)
    unet.save_pretrained(folder)
    return folder
