"""Unit tests of compendium.models.pretrained: the paper-scale ImageNet pipeline of the HCR chapter
(the paper's Sec. 3.3) and the transfer-learning chapter's paper-scale extractors and transforms
(Maciazek & Allison 2025, App. D.1).

Run everywhere: the 13/32-scaled preprocessing (no torchvision), ``compendium.data.imagenet_val_images`` reading
tiny folders written here through it, the clear errors, and the model split / BatchNorm coupling / weight cache on a
stand-in ``torchvision.models`` with the same layer names (so they hold whether or not torchvision is installed).  Run
only where torchvision imports: the same checks on the real ResNet-18 and Swin-T (random weights, nothing downloaded)
and the transform's agreement with TorchVision's own preset.
"""
from __future__ import annotations

import enum
import sys
import types
import urllib.error

import numpy as np
import pytest
import torch
from PIL import Image
from torch import nn

from compendium import data
from compendium.models import SplitClassifier, pretrained
from compendium.models.pretrained import (
    IMAGENET_NORMALIZATION,
    PretrainedUnavailable,
    TorchvisionMissing,
    imagenet_split_model,
    imagenet_transform,
    transfer_extractor,
    transfer_transform,
)

MEAN = np.array(IMAGENET_NORMALIZATION[0])
STD = np.array(IMAGENET_NORMALIZATION[1])


def _normalised(rgb_uint8: np.ndarray) -> np.ndarray:
    """(H, W, 3) uint8 -> (3, H, W) (x / 255 - mean) / std in float64: the hand computation."""
    return ((rgb_uint8.astype(np.float64) / 255.0 - MEAN) / STD).transpose(2, 0, 1)


# ----------------------------------------------------------------------------------------------- the constants
def test_paper_sizes():
    """Paper Sec. 3.3 and its remark on degrees of freedom: 104 / 94 / 91 px, n = 25,088 and
    37,632 > p = 3 * 91**2 = 24,843."""
    assert pretrained.RESIZE_SIZE == {"resnet18": 104, "swin_t": 94}
    assert pretrained.CROP_SIZE == 91
    assert pretrained.FEATURE_DIMS == {"resnet18": 25_088, "swin_t": 37_632}
    p = 3 * pretrained.CROP_SIZE ** 2
    assert p == 24_843 and p < min(pretrained.FEATURE_DIMS.values())


# ------------------------------------------------------------------------------------------------ the transform
@pytest.mark.parametrize("name", ["resnet18", "swin_t"])
@pytest.mark.parametrize("size", [(150, 120), (91, 300), (640, 480)])
def test_transform_constant_colour_is_exact(name, size):
    """A constant image stays constant through resize and crop: every pixel is (c / 255 - mean) / std."""
    colour = (200, 30, 91)
    x = imagenet_transform(name)(Image.new("RGB", size, colour))
    assert x.shape == (3, 91, 91) and x.dtype == torch.float32
    expected = (np.array(colour) / 255.0 - MEAN) / STD
    np.testing.assert_allclose(x.numpy(), np.broadcast_to(expected[:, None, None], (3, 91, 91)), rtol=0, atol=1e-6)


def test_transform_grayscale_converts_to_rgb():
    x = imagenet_transform("resnet18")(Image.new("L", (120, 130), 77))
    np.testing.assert_allclose(x[:, 0, 0].numpy(), (77 / 255 - MEAN) / STD, rtol=0, atol=1e-6)


@pytest.mark.parametrize("name, width, height, top, left", [
    # already at the resize size (no resampling): only the centre crop, whose offsets round half to even
    ("resnet18", 104, 130, 20, 6),   # (130 - 91) / 2 = 19.5 -> 20, (104 - 91) / 2 = 6.5 -> 6
    ("swin_t", 94, 120, 14, 2),      # 14.5 -> 14, 1.5 -> 2
    ("resnet18", 131, 104, 6, 20),   # landscape: 40 / 2 = 20, 6.5 -> 6
])
def test_transform_centre_crop_geometry(name, width, height, top, left):
    rgb = np.random.default_rng(0).integers(0, 256, size=(height, width, 3), dtype=np.uint8)
    x = imagenet_transform(name)(Image.fromarray(rgb))
    np.testing.assert_allclose(x.numpy(), _normalised(rgb[top:top + 91, left:left + 91]), rtol=0, atol=1e-6)


@pytest.mark.parametrize("width, height, shorter, expected", [
    (500, 375, 104, (138, 104)),  # int(104 * 500 / 375) = int(138.67): floored, as TorchVision
    (375, 500, 104, (104, 138)),
    (500, 375, 94, (125, 94)),
    (91, 91, 104, (104, 104)),
])
def test_resized_size_floors_the_longer_side(width, height, shorter, expected):
    assert pretrained._resized_size(width, height, shorter) == expected


def test_transform_resamples_with_the_paper_filters():
    """A 2:1 downsampling of a random image: ResNet's bilinear and Swin's bicubic filters give different images,
    both matching PIL's antialiased resize of the same image."""
    rgb = np.random.default_rng(1).integers(0, 256, size=(188, 208, 3), dtype=np.uint8)
    img = Image.fromarray(rgb)
    x = imagenet_transform("swin_t")(img)  # 208x188 -> 104x94 -> crop at (top 2, left round(6.5) = 6)
    ref = np.asarray(img.resize((104, 94), Image.Resampling.BICUBIC))[2:93, 6:97]
    np.testing.assert_allclose(x.numpy(), _normalised(ref), rtol=0, atol=1e-6)
    y = imagenet_transform("resnet18")(img)  # 208x188 -> 115x104 -> crop at (top 6, left 12)
    ref = np.asarray(img.resize((115, 104), Image.Resampling.BILINEAR))[6:97, 12:103]
    np.testing.assert_allclose(y.numpy(), _normalised(ref), rtol=0, atol=1e-6)


def test_transform_bad_name():
    with pytest.raises(ValueError, match="name='vgg16'"):
        imagenet_transform("vgg16")


# --------------------------------------------------------------------------------------------- the folder reader
def _colour(label: int, k: int) -> tuple[int, int, int]:
    return (10 + 40 * label, 20 + 30 * k, 255 - 40 * label)


def _write(path, colour, size=(140, 110)):
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", size, colour).save(path)  # PNG: lossless, so the colour identifies the file


def _decode(images: torch.Tensor) -> list[tuple[int, int, int]]:
    """The constant colour of each normalised image, back in 0..255."""
    rgb = images[:, :, 45, 45].double().numpy() * STD + MEAN
    return [tuple(int(v) for v in np.rint(c * 255)) for c in rgb]


@pytest.fixture
def image_folder(tmp_path):
    """An ImageFolder: 3 class folders (sorted b_cls < c_cls < d_cls; a hidden folder and a non-image file that
    must be ignored) with 3, 2 and 4 images; returns (root, colour -> label)."""
    root = tmp_path / "val"
    truth = {}
    for label, (cls, count) in enumerate([("b_cls", 3), ("c_cls", 2), ("d_cls", 4)]):
        for k in range(count):
            sub = "nested/" if (label, k) == (2, 3) else ""  # ImageFolder walks the class folder recursively
            _write(root / cls / f"{sub}img{k}.png", _colour(label, k))
            truth[_colour(label, k)] = label
    _write(root / ".cache" / "junk.png", (0, 0, 0))
    (root / "c_cls" / "notes.txt").write_text("not an image")
    return root, truth


def test_folder_labels_are_sorted_class_indices(image_folder):
    root, truth = image_folder
    with pytest.warns(UserWarning, match="3 class folders, not 1000"):
        x, y = data.imagenet_val_images(root, 9, imagenet_transform("resnet18"), seed=0)
    assert x.shape == (9, 3, 91, 91) and x.dtype == torch.float32
    assert y.dtype == torch.int64 and y.shape == (9,)
    colours = _decode(x)
    assert sorted(colours) == sorted(truth)  # all 9, each once: without replacement, no hidden or text file
    assert [truth[c] for c in colours] == y.tolist()


def test_folder_draw_is_seeded(image_folder):
    root, _ = image_folder
    with pytest.warns(UserWarning):
        a, ya = data.imagenet_val_images(root, 5, imagenet_transform("swin_t"), seed=3)
        b, yb = data.imagenet_val_images(root, 5, imagenet_transform("swin_t"), seed=3)
        c, _ = data.imagenet_val_images(root, 5, imagenet_transform("swin_t"), seed=4)
    assert torch.equal(a, b) and torch.equal(ya, yb)
    assert len(set(_decode(a))) == 5
    assert _decode(a) != _decode(c)
    # the documented rule: numpy default_rng(seed).choice over the files in sorted path order
    files, _, _ = data._imagenet_files(root)
    picked = np.random.default_rng(3).choice(len(files), size=5, replace=False)
    expected = []
    for i in picked:
        with Image.open(files[i]) as img:
            expected.append(imagenet_transform("swin_t")(img))
    torch.testing.assert_close(a, torch.stack(expected), rtol=0, atol=0)


def test_flat_folder_has_no_labels(tmp_path):
    for k in range(4):
        _write(tmp_path / f"ILSVRC2012_val_{k:08d}.JPEG", (30 * k, 100, 200), size=(120, 100))
    x, y = data.imagenet_val_images(tmp_path, 3, imagenet_transform("resnet18"), seed=0)
    assert x.shape == (3, 3, 91, 91) and y is None


@pytest.mark.parametrize("make", ["missing", "empty", "too_few"])
def test_folder_errors_say_what_to_download(tmp_path, make):
    folder = tmp_path / "imagenet-val"
    if make != "missing":
        folder.mkdir()
    if make == "too_few":
        for k in range(2):
            _write(folder / f"{k}.jpg", (1, 2, 3))
    found = 2 if make == "too_few" else 0
    with pytest.raises(ValueError, match=f"needs n=3 ImageNet validation images .* found {found}") as info:
        data.imagenet_val_images(folder, 3, imagenet_transform("resnet18"))
    for words in ("image-net.org", "ILSVRC2012_img_val.tar", "n01440764", str(folder)):
        assert words in str(info.value)


def test_folder_with_images_and_class_folders_is_ambiguous(tmp_path):
    _write(tmp_path / "a.png", (1, 2, 3))
    _write(tmp_path / "cls" / "b.png", (1, 2, 3))
    with pytest.raises(ValueError, match="both images"):
        data.imagenet_val_images(tmp_path, 1, imagenet_transform("resnet18"))


@pytest.mark.parametrize("kwargs, match", [
    ({"n": 0}, "n=0"), ({"n": True}, "n=True"), ({"n": 2.0}, "n=2.0"), ({"transform": "resnet18"}, "transform"),
])
def test_folder_bad_arguments(tmp_path, kwargs, match):
    args = {"folder": tmp_path, "n": 1, "transform": imagenet_transform("resnet18"), **kwargs}
    with pytest.raises(ValueError, match=match):
        data.imagenet_val_images(**args)


# ------------------------------------------------------------------------------------------ the models: errors
@pytest.fixture
def no_torchvision(monkeypatch):
    """Make ``import torchvision`` fail, whether or not it is installed."""
    for module in [m for m in sys.modules if m == "torchvision" or m.startswith("torchvision.")]:
        monkeypatch.delitem(sys.modules, module)
    monkeypatch.setitem(sys.modules, "torchvision", None)
    monkeypatch.setitem(sys.modules, "torchvision.models", None)


@pytest.mark.parametrize("name", ["resnet18", "swin_t"])
def test_missing_torchvision_is_a_clear_error(no_torchvision, name):
    with pytest.raises(TorchvisionMissing, match="pip install torchvision") as info:
        imagenet_split_model(name, weights=None)
    assert isinstance(info.value, ImportError) and isinstance(info.value, PretrainedUnavailable)
    assert info.value.name == "torchvision" and name in str(info.value)


def test_bad_name_is_checked_before_importing_torchvision(no_torchvision):
    with pytest.raises(ValueError, match="name='resnet50'"):
        imagenet_split_model("resnet50")


# ----------------------------------------------------- a stand-in torchvision.models with TorchVision's layer names
class _FakeResNet(nn.Module):
    """ResNet-18's children (conv1 ... layer4, avgpool, fc) at a tiny width; 224 px -> 512x7x7 like the real one."""

    def __init__(self, weights=None):
        super().__init__()
        assert weights is None
        self.conv1 = nn.Conv2d(3, 4, 4, stride=4)  # 56
        self.bn1 = nn.BatchNorm2d(4)
        self.relu = nn.ReLU()
        self.maxpool = nn.MaxPool2d(2)  # 28
        self.layer1 = nn.Sequential(nn.Conv2d(4, 4, 1), nn.BatchNorm2d(4), nn.ReLU())
        self.layer2 = nn.Sequential(nn.Conv2d(4, 8, 2, stride=2), nn.BatchNorm2d(8), nn.ReLU())  # 14
        self.layer3 = nn.Sequential(nn.Conv2d(8, 8, 2, stride=2), nn.BatchNorm2d(8), nn.ReLU())  # 7
        self.layer4 = nn.Sequential(nn.Conv2d(8, 512, 1), nn.BatchNorm2d(512), nn.ReLU())
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(512, 1000)

    def forward(self, x):  # TorchVision's ResNet._forward_impl
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


class _Permute(nn.Module):
    def __init__(self, dims):
        super().__init__()
        self.dims = dims

    def forward(self, x):
        return torch.permute(x, self.dims)


class _FakeSwin(nn.Module):
    """Swin-T's children (features, norm, permute, avgpool, flatten, head); 224 px -> 7x7x768 channels-last."""

    def __init__(self, weights=None):
        super().__init__()
        assert weights is None
        self.features = nn.Sequential(nn.Conv2d(3, 768, 32, stride=32), _Permute([0, 2, 3, 1]), nn.GELU())
        self.norm = nn.LayerNorm(768)
        self.permute = _Permute([0, 3, 1, 2])
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.flatten = nn.Flatten(1)
        self.head = nn.Linear(768, 1000)

    def forward(self, x):  # TorchVision's SwinTransformer.forward
        x = self.permute(self.norm(self.features(x)))
        return self.head(self.flatten(self.avgpool(x)))


class _ResNet18Weights(enum.Enum):
    IMAGENET1K_V1 = "https://download.pytorch.org/models/resnet18-f37072fd.pth"
    DEFAULT = IMAGENET1K_V1

    @property
    def url(self):
        return self.value


class _SwinTWeights(enum.Enum):
    IMAGENET1K_V1 = "https://download.pytorch.org/models/swin_t-704ceda3.pth"
    DEFAULT = IMAGENET1K_V1

    @property
    def url(self):
        return self.value


_ResNet18Weights.__name__ = "ResNet18_Weights"
_SwinTWeights.__name__ = "Swin_T_Weights"


@pytest.fixture
def fake_torchvision(monkeypatch, tmp_path):
    """``torchvision.models`` replaced by the stand-ins; TORCH_HOME in tmp_path; the network refused."""
    models = types.ModuleType("torchvision.models")
    models.resnet18, models.swin_t = _FakeResNet, _FakeSwin
    models.ResNet18_Weights, models.Swin_T_Weights = _ResNet18Weights, _SwinTWeights
    package = types.ModuleType("torchvision")
    package.models = models
    for module in [m for m in sys.modules if m == "torchvision" or m.startswith("torchvision.")]:
        monkeypatch.delitem(sys.modules, module)
    monkeypatch.setitem(sys.modules, "torchvision", package)
    monkeypatch.setitem(sys.modules, "torchvision.models", models)
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch-home"))

    def offline(url, *args, **kwargs):
        cached = tmp_path / "torch-home" / "hub" / "checkpoints" / url.rsplit("/", 1)[1]
        if cached.is_file():
            return torch.load(cached, map_location="cpu")
        raise urllib.error.URLError("[Errno -3] Temporary failure in name resolution")

    monkeypatch.setattr(torch.hub, "load_state_dict_from_url", offline)
    return tmp_path / "torch-home"


def _images(b: int = 3, seed: int = 0) -> torch.Tensor:
    return torch.randn(b, 3, 91, 91, generator=torch.Generator().manual_seed(seed))


def _check_split_model(name: str, make_full) -> None:
    """Shapes, head(features) == model, and (standard BatchNorm) agreement with the unsplit model on the upsampled
    input, which checks that the head mirrors the model's forward."""
    n = {"resnet18": 25_088, "swin_t": 37_632}[name]
    model = imagenet_split_model(name, weights=None, bn_batch_stats=False)
    assert isinstance(model, SplitClassifier) and not model.training
    assert (model.feature_dim, model.num_classes, model.in_channels, model.image_size) == (n, 1000, 3, 91)
    assert model.arch == name and model.weights is None and model.bn_batch_stats is False
    assert not any(p.requires_grad for p in model.parameters())
    x = _images(2)
    with torch.no_grad():
        z = model.features(x)
        logits = model(x)
        assert z.shape == (2, n) and logits.shape == (2, 1000)
        torch.testing.assert_close(logits, model.head(z), rtol=0, atol=0)
        full = make_full()
        full.load_state_dict({**model.features.state_dict(), **model.head.state_dict()})
        up = nn.functional.interpolate(x, size=(224, 224), mode="bilinear", align_corners=False)
        torch.testing.assert_close(logits, full.eval()(up), rtol=1e-4, atol=1e-4)


def _check_batch_norm_coupling(name: str) -> None:
    """bn_batch_stats=True: image 0's features change when image 1 changes (and no running statistics remain);
    False: they do not (the authors' code replaces BatchNorm's running statistics)."""
    x = _images(3)
    x2 = x.clone()
    x2[1] = _images(1, seed=7)[0]
    for coupled in (True, False):
        model = imagenet_split_model(name, weights=None, bn_batch_stats=coupled)
        bns = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
        assert bns and all((m.running_mean is None) == coupled for m in bns)
        with torch.no_grad():
            change = (model.features(x)[0] - model.features(x2)[0]).abs().max().item()
        assert change > 1e-3 if coupled else change <= 1e-6


@pytest.mark.parametrize("name, make_full", [("resnet18", _FakeResNet), ("swin_t", _FakeSwin)])
def test_split_on_stand_in(fake_torchvision, name, make_full):
    _check_split_model(name, make_full)


def test_batch_norm_coupling_on_stand_in(fake_torchvision):
    _check_batch_norm_coupling("resnet18")


def test_swin_features_do_not_couple(fake_torchvision):
    model = imagenet_split_model("swin_t", weights=None)
    x = _images(3)
    with torch.no_grad():
        torch.testing.assert_close(model.features(x)[:1], model.features(x[:1]), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name, label, file", [
    ("resnet18", "torchvision.models.ResNet18_Weights.IMAGENET1K_V1", "resnet18-f37072fd.pth"),
    ("swin_t", "torchvision.models.Swin_T_Weights.IMAGENET1K_V1", "swin_t-704ceda3.pth"),
])
@pytest.mark.parametrize("download", [True, False])
def test_unavailable_weights_are_a_clear_error(fake_torchvision, name, label, file, download):
    with pytest.raises(PretrainedUnavailable) as info:
        imagenet_split_model(name, download=download)
    message = str(info.value)
    for words in (label, "TORCH_HOME", str(fake_torchvision / "hub" / "checkpoints" / file)):
        assert words in message
    assert ("offline" in message) if download else ("download=False" in message)


def test_cached_weights_are_loaded(fake_torchvision):
    torch.manual_seed(123)  # the stand-in's "pretrained" weights
    reference = _FakeResNet()
    path = fake_torchvision / "hub" / "checkpoints" / "resnet18-f37072fd.pth"
    path.parent.mkdir(parents=True)
    torch.save(reference.state_dict(), path)
    for weights in ("DEFAULT", "IMAGENET1K_V1", "ResNet18_Weights.IMAGENET1K_V1", _ResNet18Weights.DEFAULT):
        model = imagenet_split_model("resnet18", weights=weights, download=False)
        assert model.weights == "ResNet18_Weights.IMAGENET1K_V1"
        torch.testing.assert_close(model.head.fc.weight, reference.fc.weight, rtol=0, atol=0)
        torch.testing.assert_close(model.features.conv1.weight, reference.conv1.weight, rtol=0, atol=0)


@pytest.mark.parametrize("kwargs, match", [
    ({"weights": "IMAGENET1K_V2"}, "weights='IMAGENET1K_V2'; allowed: None .* 'DEFAULT'"),
    ({"weights": 3}, "weights=3"),
    ({"bn_batch_stats": 1}, "bn_batch_stats=1"),
])
def test_bad_model_arguments(fake_torchvision, kwargs, match):
    with pytest.raises(ValueError, match=match):
        imagenet_split_model("resnet18", **kwargs)


def test_unexpected_layer_names_are_reported(fake_torchvision, monkeypatch):
    class Renamed(_FakeResNet):
        def __init__(self, weights=None):
            super().__init__(weights)
            self.head = self.fc
            del self.fc

    monkeypatch.setattr(sys.modules["torchvision.models"], "resnet18", Renamed)
    with pytest.raises(RuntimeError, match="needs updating"):
        imagenet_split_model("resnet18", weights=None)


# ------------------------------------------------------------------ the real torchvision (skipped where it is absent)
def _torchvision_models():
    return pytest.importorskip("torchvision.models",
                               reason="torchvision is not installed (only the paper scale needs it)")


@pytest.mark.parametrize("name", ["resnet18", "swin_t"])
def test_split_on_torchvision(name):
    tvm = _torchvision_models()
    _check_split_model(name, getattr(tvm, name))


def test_batch_norm_coupling_on_torchvision_resnet18():
    _torchvision_models()
    _check_batch_norm_coupling("resnet18")


@pytest.mark.parametrize("name, enum_name", [("resnet18", "ResNet18_Weights"), ("swin_t", "Swin_T_Weights")])
def test_transform_matches_torchvision_preset(name, enum_name):
    """Our transform == the authors' ``<Weights>.DEFAULT.transforms()`` with crop_size / resize_size scaled by 13/32
    (codes/testers.py), on odd-sized random photographs in both orientations."""
    tvm = _torchvision_models()
    preset = getattr(tvm, enum_name).DEFAULT.transforms()
    crop = preset.crop_size[0]
    preset.crop_size = [13 * crop // 32]
    preset.resize_size = [13 * preset.resize_size[0] // 32]
    assert (preset.crop_size[0], preset.resize_size[0]) == (91, pretrained.RESIZE_SIZE[name])
    ours = imagenet_transform(name)
    rng = np.random.default_rng(5)
    for shape in [(121, 157, 3), (200, 133, 3), (104, 104, 3)]:
        img = Image.fromarray(rng.integers(0, 256, size=shape, dtype=np.uint8))
        torch.testing.assert_close(ours(img), preset(img), rtol=0, atol=1e-6)


def test_torchvision_weights_unavailable_offline(monkeypatch, tmp_path):
    """The real weights enums, with an empty TORCH_HOME and download=False: nothing touches the network."""
    _torchvision_models()
    monkeypatch.setenv("TORCH_HOME", str(tmp_path))
    with pytest.raises(PretrainedUnavailable, match=r"ResNet18_Weights\.IMAGENET1K_V1 .*TORCH_HOME"):
        imagenet_split_model("resnet18", download=False)


# ============================================ the transfer-learning chapter's extractors (Maciazek & Allison, App. D.1)
def test_transfer_constants():
    assert pretrained.TRANSFER_FEATURE_DIMS == {"efficientnet_b0": 1280, "wide_resnet50_2": 2048}
    assert {n: w[2] for n, w in pretrained.TRANSFER_TORCHVISION.items()} == {
        "efficientnet_b0": "IMAGENET1K_V1", "wide_resnet50_2": "IMAGENET1K_V2"}


@pytest.mark.parametrize("name, shape", [
    ("efficientnet_b0", (2, 3, 32, 32)),     # CIFAR: 32 -> 224 x 224
    ("wide_resnet50_2", (2, 3, 218, 178)),   # CelebA portrait: 178 x 218 -> 232 x 284 -> crop 224
    ("wide_resnet50_2", (1, 3, 100, 150)),   # landscape: 232 x 348 -> crop 224
])
def test_transfer_transform_constant_image_is_exact(name, shape):
    """A constant image stays constant through the bicubic resize and the crop: every pixel is (c - mean) / std
    (to rounding: 1e-12 in float64; float32 keeps its dtype, to 1e-5 after the division by std)."""
    colour = torch.tensor([0.8, 0.1, 0.35], dtype=torch.float64)
    expected = (colour.numpy() - MEAN) / STD
    for dtype, atol in ((torch.float64, 1e-12), (torch.float32, 1e-5)):
        x = colour.to(dtype).view(1, 3, 1, 1).expand(shape).clone()
        y = transfer_transform(name)(x)
        assert y.shape == (shape[0], 3, 224, 224) and y.dtype == dtype
        np.testing.assert_allclose(y.double().numpy(), np.broadcast_to(expected[None, :, None, None], y.shape),
                                   rtol=0, atol=atol)


@pytest.mark.parametrize("height, width, top, left", [
    (241, 232, 8, 4),   # already 232 on the shorter side: no resampling; (241 - 224) / 2 = 8.5 rounds to 8
    (232, 235, 4, 6),   # (235 - 224) / 2 = 5.5 rounds to 6
])
def test_transfer_transform_centre_crop_geometry(height, width, top, left):
    x = torch.rand(1, 3, height, width, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    y = transfer_transform("wide_resnet50_2")(x)
    expected = (x[0, :, top:top + 224, left:left + 224].numpy() - MEAN[:, None, None]) / STD[:, None, None]
    np.testing.assert_allclose(y[0].numpy(), expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("name, shape", [("efficientnet_b0", (32, 32, 3)), ("wide_resnet50_2", (218, 178, 3))])
def test_transfer_transform_matches_pil(name, shape):
    """The authors resize PIL images (TorchVision's Resize on PIL: Image.resize with BICUBIC); on an 8-bit random
    image ours is within 1/255 of it (within rounding), and equal up to rare ties with round_to_8bit."""
    rgb = np.random.default_rng(1).integers(0, 256, size=shape, dtype=np.uint8)
    img = Image.fromarray(rgb)
    if name == "efficientnet_b0":
        ref = np.array(img.resize((224, 224), Image.Resampling.BICUBIC))
    else:
        ref = np.array(img.resize((232, 284), Image.Resampling.BICUBIC))[30:254, 4:228]  # 178 x 218 -> 232 x 284
    x = torch.from_numpy(rgb).permute(2, 0, 1)[None].double() / 255
    for rounded, worst, mean in ((False, 1.5, 0.5), (True, 1.0 + 1e-6, 0.01)):
        y = transfer_transform(name, round_to_8bit=rounded)(x)[0].numpy()
        error = np.abs(y - _normalised(ref)) * STD[:, None, None] * 255  # in 8-bit levels
        assert error.max() <= worst and error.mean() <= mean


@pytest.mark.parametrize("call, match", [
    (lambda: transfer_transform("resnet18"), "name='resnet18'"),
    (lambda: transfer_transform("efficientnet_b0", round_to_8bit=1), "round_to_8bit=1"),
    (lambda: transfer_transform("efficientnet_b0")(torch.rand(2, 1, 32, 32)), r"x=torch.Size\(\[2, 1, 32, 32\]\)"),
    (lambda: transfer_transform("efficientnet_b0")(torch.rand(3, 32, 32)), "allowed: a float tensor"),
    (lambda: transfer_transform("efficientnet_b0")(torch.zeros(1, 3, 8, 8, dtype=torch.uint8)), "float tensor"),
])
def test_transfer_transform_bad_inputs(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.parametrize("name", ["efficientnet_b0", "wide_resnet50_2"])
def test_transfer_extractor_without_torchvision(no_torchvision, name):
    with pytest.raises(TorchvisionMissing, match="pip install torchvision") as info:
        transfer_extractor(name)
    assert isinstance(info.value, ImportError) and info.value.name == "torchvision"
    assert f"transfer_extractor({name!r})" in str(info.value) and "App. D.1" in str(info.value)


@pytest.mark.parametrize("kwargs, match", [
    ({"name": "resnet18"}, "name='resnet18'"), ({"name": "efficientnet_b0", "download": "no"}, "download='no'"),
    ({"name": "efficientnet_b0", "device": "tpu"}, "device='tpu'"),
    ({"name": "efficientnet_b0", "checkpoint": 3}, "checkpoint=3"),
])
def test_transfer_extractor_bad_arguments_before_importing_torchvision(no_torchvision, kwargs, match):
    with pytest.raises(ValueError, match=match):
        transfer_extractor(**kwargs)


@pytest.mark.parametrize("name, file", [("efficientnet_b0", "EfficientNetB0_CIFAR100_200EP.pth"),
                                        ("wide_resnet50_2", "WideResNet50_CelebA_Attributes_20EP.pth")])
def test_transfer_extractor_checkpoint_errors_say_where_to_get_it(no_torchvision, tmp_path, name, file):
    with pytest.raises(FileNotFoundError) as info:
        transfer_extractor(name, checkpoint=tmp_path / file)
    assert file in str(info.value) and "github.com/tmaciazek/training-data-reconstruction" in str(info.value)
    pointer = tmp_path / "pointer.pth"
    pointer.write_text("version https://git-lfs.github.com/spec/v1\noid sha256:0\nsize 1\n")
    with pytest.raises(ValueError, match="Git LFS pointer"):
        transfer_extractor(name, checkpoint=pointer)


# --------------------------------------------- stand-ins with TorchVision's top-level layout, tiny widths (32 px input)
class _FakeEfficientNet(nn.Module):
    """EfficientNet-B0's children: features, avgpool, classifier = Dropout + Linear (8 features, not 1280)."""

    def __init__(self, weights=None):
        super().__init__()
        assert weights is None
        self.features = nn.Sequential(nn.Conv2d(3, 8, 8, stride=8), nn.BatchNorm2d(8), nn.SiLU())
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(8, 1000))

    def forward(self, x):
        return self.classifier(torch.flatten(self.avgpool(self.features(x)), 1))


class _FakeWideResNet(nn.Module):
    """WideResNet-50-2's stem and top: conv1, bn1, relu, avgpool, fc (16 features, not 2048)."""

    def __init__(self, weights=None):
        super().__init__()
        assert weights is None
        self.conv1, self.bn1, self.relu = nn.Conv2d(3, 16, 8, stride=8), nn.BatchNorm2d(16), nn.ReLU()
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, 1000)

    def forward(self, x):
        return self.fc(torch.flatten(self.avgpool(self.relu(self.bn1(self.conv1(x)))), 1))


class _EfficientNetB0Weights(enum.Enum):
    IMAGENET1K_V1 = "https://download.pytorch.org/models/efficientnet_b0_rwightman-7f5810bc.pth"

    @property
    def url(self):
        return self.value


class _WideResNet50Weights(enum.Enum):
    IMAGENET1K_V1 = "https://download.pytorch.org/models/wide_resnet50_2-95faca4d.pth"
    IMAGENET1K_V2 = "https://download.pytorch.org/models/wide_resnet50_2-9ba9bcbe.pth"

    @property
    def url(self):
        return self.value


_EfficientNetB0Weights.__name__ = "EfficientNet_B0_Weights"
_WideResNet50Weights.__name__ = "Wide_ResNet50_2_Weights"
_FAKES = {"efficientnet_b0": _FakeEfficientNet, "wide_resnet50_2": _FakeWideResNet}


@pytest.fixture
def fake_transfer_torchvision(fake_torchvision):
    models = sys.modules["torchvision.models"]
    models.efficientnet_b0, models.wide_resnet50_2 = _FakeEfficientNet, _FakeWideResNet
    models.EfficientNet_B0_Weights, models.Wide_ResNet50_2_Weights = _EfficientNetB0Weights, _WideResNet50Weights
    return fake_torchvision


def _features(full: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """The stand-in's input to its classification layer (what the extractor must return)."""
    if isinstance(full, _FakeEfficientNet):
        return torch.flatten(full.avgpool(full.features(x)), 1)
    return torch.flatten(full.avgpool(full.relu(full.bn1(full.conv1(x)))), 1)


def _trained(name: str, seed: int) -> nn.Module:
    """A stand-in with non-default weights and BatchNorm statistics (so loading them is visible)."""
    torch.manual_seed(seed)
    full = _FAKES[name]()
    for m in full.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-1, 1)
            m.running_var.uniform_(0.5, 2)
    return full.eval()


@pytest.mark.parametrize("name, file", [("efficientnet_b0", "efficientnet_b0_rwightman-7f5810bc.pth"),
                                        ("wide_resnet50_2", "wide_resnet50_2-9ba9bcbe.pth")])
def test_transfer_extractor_imagenet_weights(fake_transfer_torchvision, name, file):
    """Unavailable weights: PretrainedUnavailable naming the file and TORCH_HOME; cached: loaded, head -> Identity."""
    with pytest.raises(PretrainedUnavailable) as info:
        transfer_extractor(name)
    label = ("torchvision.models." + pretrained.TRANSFER_TORCHVISION[name][1] + "."
             + pretrained.TRANSFER_TORCHVISION[name][2])
    assert label in str(info.value) and file in str(info.value) and "TORCH_HOME" in str(info.value)
    reference = _trained(name, 1)
    cache = fake_transfer_torchvision / "hub" / "checkpoints" / file
    cache.parent.mkdir(parents=True)
    torch.save(reference.state_dict(), cache)
    model = transfer_extractor(name, download=False)
    assert not model.training and not any(p.requires_grad for p in model.parameters())
    assert model.weights == label.removeprefix("torchvision.models.") and model.arch == name
    assert isinstance(getattr(model, pretrained.TRANSFER_TORCHVISION[name][3]), nn.Identity)
    x = torch.rand(3, 3, 32, 32)
    with torch.no_grad():
        torch.testing.assert_close(model(x), _features(reference, x), rtol=0, atol=0)


@pytest.mark.parametrize("name", ["efficientnet_b0", "wide_resnet50_2"])
def test_transfer_extractor_loads_the_authors_checkpoint(fake_transfer_torchvision, tmp_path, name):
    """The authors' classifiers: EfficientNet's classifier = Dropout + Linear(., 100), WideResNet's fc = Linear(., 40)
    + Sigmoid; their keys are dropped, the rest loaded strictly (another architecture's file is refused)."""
    reference = _trained(name, 2)
    if name == "efficientnet_b0":
        reference.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(8, 100))
    else:
        reference.fc = nn.Sequential(nn.Linear(16, 40), nn.Sigmoid())
    path = tmp_path / pretrained.TRANSFER_CHECKPOINTS[name]
    torch.save(reference.state_dict(), path)
    model = transfer_extractor(name, checkpoint=str(path))
    assert model.weights == str(path) and model.feature_dim == pretrained.TRANSFER_FEATURE_DIMS[name]
    assert not model.training and not any(p.requires_grad for p in model.parameters())
    x = torch.rand(2, 3, 32, 32)
    with torch.no_grad():
        torch.testing.assert_close(model(x), _features(reference, x), rtol=0, atol=0)
    other = "wide_resnet50_2" if name == "efficientnet_b0" else "efficientnet_b0"
    with pytest.raises(RuntimeError, match="does not fit"):
        transfer_extractor(other, checkpoint=path)
