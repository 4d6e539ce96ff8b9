"""CelebA's paper-scale loaders: the identities of the aligned faces by split, their crops, and batches of them for
a feature extractor (the transfer-learning chapter's one-person task).  Read from the official files the user
downloads; nothing here downloads."""
from __future__ import annotations

from pathlib import Path

import torch

from compendium import validation
from compendium.data import _centre_crop, _pil_pixels, _resize_shorter

__all__ = ["CELEBA_CROP", "CELEBA_ITEMS", "CELEBA_SHORT_SIDE", "CELEBA_SPLITS", "CELEBA_URL", "celeba_batches",
           "celeba_crops", "celeba_faces", "celeba_identities"]

CELEBA_URL = "https://mmlab.ie.cuhk.edu.hk/projects/CelebA.html"
# list_eval_partition.txt codes: 0 = train (162,770 images), 1 = valid (19,867), 2 = test (19,962).
CELEBA_SPLITS = {"train": (0,), "valid": (1,), "test": (2,), "train+valid": (0, 1), "all": (0, 1, 2)}
# What celeba_identities reads, each with the folder of the official Google Drive that holds it.
CELEBA_ITEMS = (("img_align_celeba", "Img"), ("identity_CelebA.txt", "Anno"), ("list_eval_partition.txt", "Eval"))
CELEBA_SHORT_SIDE, CELEBA_CROP = 232, 224


def _celeba_table(path: Path) -> dict[str, int]:
    """A CelebA annotation file of lines ``<image file> <integer>`` as a dict."""
    table = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 2 or not fields[1].isdigit():
            raise ValueError(f"{path}, line {number}: {line!r}; allowed: '<image file> <integer>'")
        table[fields[0]] = int(fields[1])
    return table


def celeba_identities(root: str | Path = "data/celeba", split: str = "train") -> tuple[list[Path], torch.Tensor]:
    """The aligned CelebA images of ``split`` and their identities: ``(files, identities)``, the files sorted by
    name and the identities int64 as in ``identity_CelebA.txt`` (1..10,177).

    ``split`` picks by ``list_eval_partition.txt``: ``"train"``, ``"valid"``, ``"test"``, ``"train+valid"`` (the
    paper's shadow-training pool; its validation pool is ``"test"``) or ``"all"``.  ``img_align_celeba/`` (the
    178x218 JPEGs), ``identity_CelebA.txt`` and ``list_eval_partition.txt`` are looked for in ``root``,
    ``root/celeba`` (torchvision's layout) and ``root/Img``, ``root/Anno``, ``root/Eval`` (the Google Drive's
    folders).  Nothing is downloaded (:data:`CELEBA_URL`); a missing file raises ``FileNotFoundError`` saying what
    to put where.  Read the pixels with :func:`celeba_faces`.
    """
    import os

    validation.choice("split", split, tuple(CELEBA_SPLITS))
    root = Path(root)
    found, missing = {}, []
    for name, drive_folder in CELEBA_ITEMS:
        path = next((f / name for f in (root, root / "celeba", root / drive_folder) if (f / name).exists()), None)
        if path is None:
            missing.append(name)
        found[name] = path
    if missing:
        raise FileNotFoundError(
            f"CelebA {', '.join(missing)} not found in {root.resolve()} (nor in its celeba, Img, Anno or Eval "
            f"folders). Download from {CELEBA_URL} (its Google Drive: Img/img_align_celeba.zip, Anno/"
            f"identity_CelebA.txt, Eval/list_eval_partition.txt) and put img_align_celeba/ (the zip extracted), "
            f"identity_CelebA.txt and list_eval_partition.txt into {root.resolve()}.")
    partition = _celeba_table(found["list_eval_partition.txt"])
    identity = _celeba_table(found["identity_CelebA.txt"])
    names = sorted(n for n, code in partition.items() if code in CELEBA_SPLITS[split])
    folder = found["img_align_celeba"]
    present = set(os.listdir(folder))
    absent = [n for n in names if n not in present]
    if absent:
        raise FileNotFoundError(
            f"{len(absent)} of the {len(names)} CelebA {split!r} images are missing from {folder.resolve()} (first: "
            f"{absent[0]}). Extract all of img_align_celeba.zip (202,599 JPEGs, from {CELEBA_URL}) into "
            f"{folder.parent.resolve()}.")
    unknown = [n for n in names if n not in identity]
    if unknown:
        raise ValueError(f"{found['identity_CelebA.txt']} has no identity for {len(unknown)} images (first: "
                         f"{unknown[0]})")
    return [folder / n for n in names], torch.tensor([identity[n] for n in names], dtype=torch.int64)


def celeba_crops(files, resolution: int = 64) -> tuple[torch.Tensor, torch.Tensor]:
    """CelebA images (e.g. from :func:`celeba_identities`), each read once, through the transfer-learning paper's
    transform (App. D): shorter side resized to 232 (bicubic, PIL), centre crop 224 x 224 -- the feature extractor's
    input before ``ToTensor`` and ``Normalize`` -- and that crop resized to ``resolution`` x ``resolution`` (bicubic)
    -- the reconstruction target.  Returns both as PIL leaves them, uint8 RGB: (len(files), 3, 224, 224) and
    (len(files), 3, resolution, resolution)."""
    from PIL import Image

    resolution = validation.integer("resolution", resolution)
    crops, faces = [], []
    for f in files:
        with Image.open(f) as im:
            crop = _centre_crop(_resize_shorter(im.convert("RGB"), CELEBA_SHORT_SIDE, Image.BICUBIC), CELEBA_CROP)
        crops.append(_pil_pixels(crop))
        faces.append(_pil_pixels(crop.resize((resolution, resolution), Image.BICUBIC)))
    if not crops:
        return (torch.empty(0, 3, CELEBA_CROP, CELEBA_CROP, dtype=torch.uint8),
                torch.empty(0, 3, resolution, resolution, dtype=torch.uint8))
    return torch.stack(crops), torch.stack(faces)


class _CelebaBatches(torch.utils.data.Dataset):
    """Batch ``i`` of a list of CelebA files through :func:`celeba_crops` (a data set of batches, for a
    ``DataLoader`` whose workers read the photos)."""

    def __init__(self, files, resolution: int, batch_size: int):
        self.files, self.resolution, self.batch_size = list(files), resolution, batch_size

    def __len__(self) -> int:
        return -(-len(self.files) // self.batch_size)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        return celeba_crops(self.files[i * self.batch_size:(i + 1) * self.batch_size], self.resolution)


def celeba_batches(files, *, resolution: int = 64, batch_size: int = 256, workers: int = 0):
    """:func:`celeba_crops` of ``files`` ``batch_size`` at a time, in order, read by ``workers`` processes (0: in
    this one) a few batches ahead, so that 200,000 photos are decoded in parallel without being held at once."""
    validation.integer("batch_size", batch_size)
    validation.integer("workers", workers, minimum=0)
    batches = _CelebaBatches(files, validation.integer("resolution", resolution), batch_size)
    return torch.utils.data.DataLoader(batches, batch_size=None, num_workers=workers)


def celeba_faces(files, resolution: int = 64) -> torch.Tensor:
    """The reconstruction targets of :func:`celeba_crops` as RGB in [0, 1], shape (len(files), 3, resolution,
    resolution)."""
    return celeba_crops(files, resolution)[1].float() / 255
