"""Data: real images that installed packages ship (offline), and paper-scale loaders that point at a folder.

Offline (``ci`` and ``book`` scale): crops of the public-domain / CC0 photographs bundled in the scikit-image wheel.
Paper scale: a folder of ImageNet validation images that the user downloads (ImageNet needs a registration, so
nothing here downloads it); :func:`imagenet_folder` fails with a message that says what to put where.

Images are float32 tensors in [0, 1] of shape (batch, channels, height, width).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

# Bundled in the scikit-image wheel (no download): NASA public domain or CC0.
PHOTO_NAMES = ("astronaut", "chelsea", "coffee", "rocket", "hubble_deep_field", "immunohistochemistry", "retina")
IMAGE_SUFFIXES = (".jpeg", ".jpg", ".png", ".JPEG", ".JPG", ".PNG")


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


def imagenet_folder(path: str | Path, n: int = 100, resolution: int = 224) -> torch.Tensor:
    """The first ``n`` images (sorted by file name) of a folder of ImageNet validation images.

    Standard evaluation preprocessing: resize the shorter side to ``256/224 * resolution`` (bilinear, antialiased),
    centre-crop ``resolution`` x ``resolution``, RGB in [0, 1].  ImageNet cannot be downloaded automatically (it
    needs a registration at image-net.org): put at least ``n`` JPEGs of ILSVRC2012 ``val`` into ``path``.
    """
    from PIL import Image

    folder = Path(path)
    files = sorted(p for p in folder.iterdir() if p.suffix in IMAGE_SUFFIXES) if folder.is_dir() else []
    if len(files) < n:
        raise FileNotFoundError(
            f"paper scale needs {n} ImageNet validation images in {folder.resolve()} but found {len(files)}. "
            "Register at https://image-net.org, download the ILSVRC2012 validation images "
            "(ILSVRC2012_img_val.tar), and extract at least "
            f"{n} of them into that folder (or pass imagenet_dir=/path/to/folder)."
        )
    short = round(resolution * 256 / 224)
    out = []
    for f in files[:n]:
        with Image.open(f) as im:
            im = im.convert("RGB")
            w, h = im.size
            scale = short / min(w, h)
            im = im.resize((max(short, round(w * scale)), max(short, round(h * scale))), Image.BILINEAR)
            w, h = im.size
            left, top = (w - resolution) // 2, (h - resolution) // 2
            im = im.crop((left, top, left + resolution, top + resolution))
            out.append(torch.from_numpy(np.asarray(im, dtype=np.float32) / 255.0).permute(2, 0, 1))
    return torch.stack(out)


def chapter_images(source: str, n: int, resolution: int, seed: int = 0,
                   imagenet_dir: str | Path | None = None) -> torch.Tensor:
    """The images a chapter runs on: ``"photos"`` (crops of the bundled photographs, offline) or ``"imagenet"``
    (the first ``n`` images of a user-supplied folder, see :func:`imagenet_folder`; a relative folder is taken from
    the repository root).  Raises before any work when the folder is missing."""
    if source == "photos":
        return photo_crops(n, resolution, seed)
    if source == "imagenet":
        from compendium.scales import repository_root

        folder = Path(imagenet_dir if imagenet_dir is not None else "data/imagenet-val")
        return imagenet_folder(folder if folder.is_absolute() else repository_root() / folder, n, resolution)
    raise ValueError(f"source={source!r}; allowed: 'photos', 'imagenet'")
