"""Unit tests of compendium.data: the offline photo crops and the ImageNet folder loader (on synthetic files)."""
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
    """Reference values (seed 0): 100 crops, N = 3072, norms min / median / max = 4.16 / 25.75 / 41.43 (numpy median; torch's
    median, the lower middle value, is 25.60)."""
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


def test_imagenet_folder_shape_range_order(folder):
    x = data.imagenet_folder(folder, n=4)
    assert x.shape == (4, 3, 224, 224) and x.dtype == torch.float32
    assert x.min() >= 0.0 and x.max() <= 1.0
    # sorted by file name: a (red), b (green), c (blue), d (grey)
    assert [int(x[i].mean((1, 2)).argmax()) for i in range(3)] == [0, 1, 2]
    assert torch.allclose(x[0].mean((1, 2)), torch.tensor([1.0, 0.0, 0.0]), atol=0.02)
    assert torch.allclose(x[1].mean((1, 2)), torch.tensor([0.0, 1.0, 0.0]), atol=1e-6)
    assert torch.allclose(x[3], torch.full_like(x[3], 128 / 255), atol=0.01)


def test_imagenet_folder_first_n_and_smaller_resolution(folder):
    x = data.imagenet_folder(folder, n=2, resolution=32)
    assert x.shape == (2, 3, 32, 32)
    assert int(x[0].mean((1, 2)).argmax()) == 0 and int(x[1].mean((1, 2)).argmax()) == 1


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


@pytest.fixture
def no_network(monkeypatch):
    calls = []

    def refuse(url, dest):
        calls.append(url)
        raise OSError("network disabled in tests")

    monkeypatch.setattr(data, "_download", refuse)
    return calls


def test_mnist_reads_idx_files(tmp_path, no_network):
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(5, 28, 28), dtype=np.uint8)
    labels = np.array([3, 1, 4, 1, 5], dtype=np.uint8)
    _write_idx(tmp_path / "t10k-images-idx3-ubyte.gz", images)
    _write_idx(tmp_path / "t10k-labels-idx1-ubyte.gz", labels)
    x, y = data.mnist(tmp_path, "test")
    assert x.shape == (5, 1, 28, 28) and x.dtype == torch.float32
    assert np.array_equal((x[:, 0] * 255).round().numpy().astype(np.uint8), images)
    assert y.tolist() == [3, 1, 4, 1, 5] and y.dtype == torch.int64
    assert no_network == []
    # torchvision's layout (MNIST/raw, uncompressed) is found too
    raw = tmp_path / "tv" / "MNIST" / "raw"
    raw.mkdir(parents=True)
    import gzip
    for name in ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"):
        (raw / name).write_bytes(gzip.decompress((tmp_path / f"{name}.gz").read_bytes()))
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


def test_cifar10_missing_files_message(tmp_path, no_network):
    with pytest.raises(FileNotFoundError, match=r"test_batch.*cifar-10-python\.tar\.gz.*download=True"):
        data.cifar10(tmp_path, "test")
    assert no_network == []
    with pytest.raises(FileNotFoundError, match=r"could not be downloaded.*network disabled.*www\.cs\.toronto\.edu"):
        data.cifar10(tmp_path, "test", download=True)
    assert no_network == ["https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"]
    with pytest.raises(ValueError, match="split"):
        data.cifar10(tmp_path, "valid")


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
