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
    """Spec R6: 100 crops, N = 3072, norms min / median / max = 4.16 / 25.75 / 41.43 (numpy median; torch's
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
