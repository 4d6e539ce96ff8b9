"""The pretrained ImageNet classifiers of the HCR chapter at ``paper`` scale (TorchVision ResNet-18 and Swin-T; see
Sec. 3.3 of the paper and the authors' code, github.com/facebookresearch/hcrbounds).

Everything here follows the authors' code (``facebookresearch/hcrbounds``, ``codes/testers.py``):

* **Images.**  ImageNet validation images, preprocessed by TorchVision's evaluation transforms with every size scaled
  by 13/32 (:func:`imagenet_transform`): resize the shorter side to ``13 * 256 // 32 = 104`` (ResNet-18, bilinear) or
  ``13 * 232 // 32 = 94`` (Swin-T, bicubic), centre-crop ``13 * 224 // 32 = 91``, scale to [0, 1] and normalise
  with :data:`IMAGENET_NORMALIZATION`; :func:`compendium.data.imagenet_val_images` reads them through it.  The input
  :math:`\\theta` of the HCR bound therefore lives in the normalised 3x91x91 space, :math:`p = 24{,}843` (fewer than the
  :math:`n` features, which is why the paper downsamples; the bounds are on the 91x91 image, not on the original
  photograph).
* **Models.**  :func:`imagenet_split_model` returns a :class:`~compendium.models.classifiers.SplitClassifier` whose
  ``features`` start with ``nn.Upsample(size=[224, 224], mode='bilinear')`` (91 -> 224, a factor 32/13) and end
  *before* average pooling, flattened to ``(B, n)``:

  - ResNet-18: upsample -> conv1, bn1, relu, maxpool, layer1-4 (``children[:-2]``) -> 512x7x7, :math:`n = 25{,}088`;
    head: unflatten -> avgpool -> flatten -> fc.
  - Swin-T: upsample -> ``features`` (``children[:-5]``) -> 7x7x768 channels-last, :math:`n = 37{,}632`;
    head: unflatten -> norm -> permute -> avgpool -> flatten -> head (TorchVision's ``SwinTransformer.forward``).

  With ``bn_batch_stats=True`` (the default, as in the authors' code, which calls
  ``torch.func.replace_all_batch_norm_modules_``) ``torch.func.replace_all_batch_norm_modules_`` removes the running
  statistics, so ResNet-18's BatchNorm layers normalise with the statistics *of the batch* even in ``eval()``: the
  features of one image depend on the other images of the batch (the paper's 16), and the joint Jacobian couples them.
  Swin-T has no BatchNorm.

Nothing downloads at import.  TorchVision is imported only when a model is built: without it
:func:`imagenet_split_model` raises :class:`TorchvisionMissing`; pretrained weights that are neither in the cache
(``$TORCH_HOME/hub/checkpoints``) nor downloadable raise :class:`PretrainedUnavailable`.  The transform needs only
PIL, numpy and torch.

The transfer-learning chapter's paper scale (Maciazek & Allison 2025, App. D.1) extracts deep features with
TorchVision's EfficientNet-B0 (CIFAR) and WideResNet-50-2 (CelebA) minus their classification layer
(:func:`transfer_extractor`, ImageNet weights or the authors' fine-tuned checkpoints) from inputs transformed by
:func:`transfer_transform` (float tensors, no TorchVision); its MNIST extractor is
:class:`~compendium.models.classifiers.VGGTiny`.
"""
from __future__ import annotations

import math
import os
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from compendium.base import resolve_device
from compendium.data import IMAGENET_CLASSES
from compendium.models.classifiers import SplitClassifier

#: The two architectures of the paper's ImageNet experiments (Sec. 3.3.1 and 3.3.2).
MODEL_NAMES = ("resnet18", "swin_t")
#: (mean, std) per RGB channel of TorchVision's ImageNet weights (``Normalize`` in their ``transforms()``).
IMAGENET_NORMALIZATION = ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))
#: The paper scales TorchVision's evaluation sizes by 13/32 (crop 224 -> 91) and upsamples back inside the model.
SCALE_NUM, SCALE_DEN = 13, 32
#: Side of the model's input after its ``nn.Upsample`` (TorchVision's crop size for both weights).
UPSAMPLE_SIZE = 224
#: Side of the images the HCR bound is about: ``13 * 224 // 32 = 91``.
CROP_SIZE = SCALE_NUM * UPSAMPLE_SIZE // SCALE_DEN
#: Shorter side after resizing: ``13 * 256 // 32 = 104`` (ResNet-18), ``13 * 232 // 32 = 94`` (Swin-T).
RESIZE_SIZE = {"resnet18": SCALE_NUM * 256 // SCALE_DEN, "swin_t": SCALE_NUM * 232 // SCALE_DEN}
#: PIL resampling filter of TorchVision's weights transforms (antialiased, as PIL always is when downsampling).
INTERPOLATION = {"resnet18": "bilinear", "swin_t": "bicubic"}
#: Shape of the features before flattening: 512x7x7 (ResNet-18 layer4), 7x7x768 channels-last (Swin-T features).
FEATURE_SHAPES = {"resnet18": (512, 7, 7), "swin_t": (7, 7, 768)}
#: Width :math:`n` of the flattened features: 25,088 (ResNet-18) and 37,632 (Swin-T).
FEATURE_DIMS = {name: math.prod(shape) for name, shape in FEATURE_SHAPES.items()}
#: Number of ImageNet-1k classes (the logits).
#: name -> (TorchVision builder, weights enum).
TORCHVISION_NAMES = {"resnet18": ("resnet18", "ResNet18_Weights"), "swin_t": ("swin_t", "Swin_T_Weights")}
# The children TorchVision's models have, in order; the split below relies on them.
_CHILDREN = {
    "resnet18": ("conv1", "bn1", "relu", "maxpool", "layer1", "layer2", "layer3", "layer4", "avgpool", "fc"),
    "swin_t": ("features", "norm", "permute", "avgpool", "flatten", "head"),
}


class PretrainedUnavailable(RuntimeError):
    """A pretrained ImageNet model cannot be built here: TorchVision or its downloaded weights are missing."""


class TorchvisionMissing(PretrainedUnavailable, ModuleNotFoundError):
    """TorchVision cannot be imported (also an ``ImportError``, so ``except ImportError`` catches it)."""


def _check_name(name) -> None:
    if name not in MODEL_NAMES:
        raise ValueError(f"name={name!r}; allowed: {', '.join(map(repr, MODEL_NAMES))}")


# ---------------------------------------------------------------------------------------------------------------
# Preprocessing (no torchvision): TorchVision's ImageClassification transform on PIL images, sizes scaled by 13/32.
# ---------------------------------------------------------------------------------------------------------------
def _resized_size(width: int, height: int, shorter: int) -> tuple[int, int]:
    """(width, height) after resizing the shorter side to ``shorter``, the longer one floored in proportion
    (TorchVision's ``_compute_resized_output_size`` for ``size=[shorter]``)."""
    short, long = (width, height) if width <= height else (height, width)
    new_short, new_long = shorter, int(shorter * long / short)
    return (new_short, new_long) if width <= height else (new_long, new_short)


@dataclass(frozen=True)
class ImageNetTransform:
    """PIL image -> normalised float32 tensor (3, crop_size, crop_size), exactly as TorchVision's
    ``ImageClassification`` preset does on a PIL image (the ``transforms()`` of its ImageNet weights):

    1. convert to RGB (TorchVision's image loader does this; ImageNet holds a few grayscale and CMYK JPEGs);
    2. resize the shorter side to ``resize_size`` and the longer one to ``int(resize_size * long / short)`` with
       PIL's ``interpolation`` filter (antialiased; skipped when the size already matches);
    3. centre-crop ``crop_size`` at ``top = int(round((h - crop_size) / 2))``, ``left`` likewise (Python's round:
       half to even);
    4. ``uint8 / 255`` in float32, then ``(x - mean) / std`` per channel.
    """

    resize_size: int
    crop_size: int
    interpolation: str
    mean: tuple[float, float, float]
    std: tuple[float, float, float]

    def __post_init__(self):
        for field in ("resize_size", "crop_size"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{field}={value!r}; allowed: an integer >= 1")
        if self.crop_size > self.resize_size:
            raise ValueError(f"crop_size={self.crop_size!r}; allowed: at most resize_size={self.resize_size}")
        if self.interpolation not in ("bilinear", "bicubic"):
            raise ValueError(f"interpolation={self.interpolation!r}; allowed: 'bilinear', 'bicubic'")
        if len(self.mean) != 3 or len(self.std) != 3 or min(self.std) <= 0:
            raise ValueError(f"mean={self.mean!r}, std={self.std!r}; allowed: three values each, std > 0")

    def __call__(self, img) -> torch.Tensor:
        from PIL import Image

        img = img.convert("RGB")
        size = _resized_size(*img.size, self.resize_size)
        if size != img.size:
            resample = Image.Resampling.BILINEAR if self.interpolation == "bilinear" else Image.Resampling.BICUBIC
            img = img.resize(size, resample)
        w, h = img.size
        c = self.crop_size
        top, left = int(round((h - c) / 2.0)), int(round((w - c) / 2.0))
        img = img.crop((left, top, left + c, top + c))
        x = torch.from_numpy(np.array(img, dtype=np.uint8)).permute(2, 0, 1).to(torch.float32).div(255)
        mean = torch.tensor(self.mean, dtype=torch.float32).view(3, 1, 1)
        std = torch.tensor(self.std, dtype=torch.float32).view(3, 1, 1)
        return x.sub(mean).div(std)


def imagenet_transform(name: str = "resnet18") -> ImageNetTransform:
    """The paper's preprocessing for model ``name`` (``"resnet18"`` or ``"swin_t"``), TorchVision's
    ``<Model>_Weights.DEFAULT.transforms()`` with every size scaled by 13/32 as in the authors' code:

    * ResNet-18: Resize(104 = 13*256//32, bilinear, antialias) -> CenterCrop(91 = 13*224//32) -> ToTensor ->
      Normalize(:data:`IMAGENET_NORMALIZATION`);
    * Swin-T: Resize(94 = 13*232//32, bicubic, antialias) -> CenterCrop(91) -> ToTensor -> Normalize.

    Returns an :class:`ImageNetTransform`: a callable from a PIL image to a (3, 91, 91) float32 tensor.  Needs no
    TorchVision.
    """
    _check_name(name)
    mean, std = IMAGENET_NORMALIZATION
    return ImageNetTransform(RESIZE_SIZE[name], CROP_SIZE, INTERPOLATION[name], mean, std)


# ---------------------------------------------------------------------------------------------------------------
# The models (torchvision imported here, never at import time).
# ---------------------------------------------------------------------------------------------------------------
_HCR_USE = ("The HCR chapter's paper-scale ImageNet experiments run TorchVision's pretrained ResNet-18 and Swin-T "
            "(paper Sec. 3.3).")


def _torchvision_models(name: str, caller: str = "imagenet_split_model", use: str = _HCR_USE):
    try:
        import torchvision.models as tvm
    except (ImportError, RuntimeError) as err:  # RuntimeError: a torchvision built for another torch
        error = TorchvisionMissing(
            f"{caller}({name!r}) needs torchvision, which cannot be imported here ({err}). {use} Install it with "
            "`pip install torchvision` (the build that matches your torch; environment.yml "
            "installs it); the ci and book scales do not need it.")
        error.name = "torchvision"
        raise error from err
    return tvm


def _resolve_weights(enum_cls, weights):
    """``None``, a member of ``enum_cls``, or one of its names (``"DEFAULT"``, ``"IMAGENET1K_V1"``, optionally
    prefixed ``"<Enum>."``) -> the member or ``None``."""
    if weights is None or isinstance(weights, enum_cls):
        return weights
    if isinstance(weights, str):
        key = weights[len(enum_cls.__name__) + 1:] if weights.startswith(enum_cls.__name__ + ".") else weights
        if key in enum_cls.__members__:
            return enum_cls[key]
    raise ValueError(f"weights={weights!r}; allowed: None (random weights), a {enum_cls.__name__} member or one of "
                     f"its names {', '.join(map(repr, enum_cls.__members__))}")


def _pretrained_state_dict(weights, builder: str, download: bool, progress: bool) -> dict:
    """The state dict of ``weights`` from TorchVision's cache ``torch.hub.get_dir()/checkpoints`` (that is
    ``$TORCH_HOME/hub/checkpoints``), downloaded there first when missing and ``download``."""
    from urllib.parse import urlparse

    label = f"torchvision.models.{type(weights).__name__}.{weights.name}"
    url = weights.url
    cached = Path(torch.hub.get_dir()) / "checkpoints" / os.path.basename(urlparse(url).path)
    torch_home = os.environ.get("TORCH_HOME")
    where = f"TORCH_HOME={torch_home}" if torch_home else "TORCH_HOME unset, so ~/.cache/torch"
    how = (f"The weights {label} ({url}) are looked for in {cached} ({where}). On a machine with internet access "
           f"run `python -c \"import torchvision; torchvision.models.{builder}(weights='{weights.name}')\"` and copy "
           f"{cached.name} from its $TORCH_HOME/hub/checkpoints/ into {cached.parent}/ here, or set TORCH_HOME to a "
           "folder whose hub/checkpoints/ holds it.")
    if not cached.is_file() and not download:
        raise PretrainedUnavailable(f"the pretrained weights {label} are not in the cache and download=False. {how}")
    try:
        return torch.hub.load_state_dict_from_url(url, progress=progress, check_hash=True, map_location="cpu")
    except Exception as err:  # noqa: BLE001 - offline (URLError/OSError), bad hash, truncated file: same advice
        raise PretrainedUnavailable(f"could not load the pretrained weights {label} (the machine may be offline): "
                                    f"{type(err).__name__}: {err}. {how}") from err


def _split(name: str, full: nn.Module) -> tuple[nn.Sequential, nn.Sequential]:
    children = list(full.named_children())
    names = tuple(n for n, _ in children)
    if names != _CHILDREN[name]:
        raise RuntimeError(f"torchvision's {name} has the children {names}, not {_CHILDREN[name]}; this split "
                           "(the paper's Sec. 3.3) needs updating for this torchvision version")
    upsample = ("interp", nn.Upsample(size=[UPSAMPLE_SIZE, UPSAMPLE_SIZE], mode="bilinear"))
    unflatten = ("unflatten", nn.Unflatten(1, FEATURE_SHAPES[name]))
    if name == "resnet18":  # features: children[:-2]; head: avgpool -> flatten -> fc
        features = [upsample, *children[:-2], ("flatten", nn.Flatten(1))]
        head = [unflatten, children[-2], ("flatten", nn.Flatten(1)), children[-1]]
    else:  # swin_t: features: children[:-5]; head: norm -> permute -> avgpool -> flatten -> head
        features = [upsample, *children[:-5], ("flatten", nn.Flatten(1))]
        head = [unflatten, *children[-5:]]
    return nn.Sequential(OrderedDict(features)), nn.Sequential(OrderedDict(head))


def imagenet_split_model(name: str, weights="DEFAULT", bn_batch_stats: bool = True, *, download: bool = True,
                         progress: bool = False) -> SplitClassifier:
    """A pretrained TorchVision ImageNet classifier split as in the paper (Sec. 3.3; see the module docstring).

    ``name``: ``"resnet18"`` (features :math:`n = 25{,}088`) or ``"swin_t"`` (:math:`n = 37{,}632`).  Inputs are
    normalised (B, 3, 91, 91) images (:func:`imagenet_transform`; any size works, the model upsamples to 224);
    ``model.features(x)`` is (B, n), ``model.head(z)`` the (B, 1000) logits.

    ``weights``: ``"DEFAULT"`` (= ``IMAGENET1K_V1`` for both, the paper's), another name or member of TorchVision's
    ``ResNet18_Weights`` / ``Swin_T_Weights``, or ``None`` for random weights (smoke tests only).  Pretrained
    weights come from TorchVision's cache ``$TORCH_HOME/hub/checkpoints`` and are downloaded there when missing
    (unless ``download=False``); when that fails :class:`PretrainedUnavailable` says which file to put where.

    ``bn_batch_stats``: apply ``torch.func.replace_all_batch_norm_modules_`` (the authors' code does),
    so BatchNorm uses the batch's statistics even in ``eval()`` and the features of an image depend on
    the rest of its batch.  ``False`` keeps standard eval-mode BatchNorm (running statistics).  No effect on Swin-T.

    Returns the model in ``eval()`` mode (Swin-T's stochastic depth and dropout off) with its parameters frozen
    (``requires_grad=False``; the HCR computation differentiates with respect to the input only), on the CPU.
    Attributes ``arch``, ``weights`` (e.g. ``"Swin_T_Weights.IMAGENET1K_V1"`` or ``None``) and ``bn_batch_stats``
    record how it was built.  Raises :class:`TorchvisionMissing` (an ``ImportError``) without TorchVision.
    """
    _check_name(name)
    if not isinstance(bn_batch_stats, bool):
        raise ValueError(f"bn_batch_stats={bn_batch_stats!r}; allowed: True or False")
    tvm = _torchvision_models(name)
    builder, enum_name = TORCHVISION_NAMES[name]
    member = _resolve_weights(getattr(tvm, enum_name), weights)
    full = getattr(tvm, builder)(weights=None)
    if member is not None:
        full.load_state_dict(_pretrained_state_dict(member, builder, download, progress))
    features, head = _split(name, full)
    model = SplitClassifier(features, head, FEATURE_DIMS[name], IMAGENET_CLASSES, in_channels=3, image_size=CROP_SIZE)
    if bn_batch_stats:
        torch.func.replace_all_batch_norm_modules_(model)
    model.arch = name
    model.weights = None if member is None else f"{type(member).__name__}.{member.name}"
    model.bn_batch_stats = bn_batch_stats
    model.requires_grad_(False)
    return model.eval()


# ---------------------------------------------------------------------------------------------------------------
# The transfer-learning chapter's paper-scale feature extractors (Maciazek & Allison 2025, App. D.1).
# ---------------------------------------------------------------------------------------------------------------
#: The two TorchVision extractors of the transfer-learning paper: EfficientNet-B0 (CIFAR rows) and
#: WideResNet-50-2 (CelebA rows); the MNIST rows use :class:`~compendium.models.classifiers.VGGTiny`.
TRANSFER_NAMES = ("efficientnet_b0", "wide_resnet50_2")
#: name -> (TorchVision builder, weights enum, the ImageNet weights the authors start from, classification layer).
TRANSFER_TORCHVISION = {
    "efficientnet_b0": ("efficientnet_b0", "EfficientNet_B0_Weights", "IMAGENET1K_V1", "classifier"),
    "wide_resnet50_2": ("wide_resnet50_2", "Wide_ResNet50_2_Weights", "IMAGENET1K_V2", "fc"),
}
#: Width of the deep features (the input width of the replaced classification layer).
TRANSFER_FEATURE_DIMS = {"efficientnet_b0": 1280, "wide_resnet50_2": 2048}
#: The authors' fine-tuned classifiers (state dicts of the whole network, in ``models_pretrained/`` of
#: :data:`AUTHORS_REPOSITORY`): EfficientNet-B0 on CIFAR-100 (200 epochs), WideResNet-50-2 on CelebA attributes.
TRANSFER_CHECKPOINTS = {"efficientnet_b0": "EfficientNetB0_CIFAR100_200EP.pth",
                        "wide_resnet50_2": "WideResNet50_CelebA_Attributes_20EP.pth"}
#: The transfer-learning paper's code, which ships the fine-tuned checkpoints.
AUTHORS_REPOSITORY = "https://github.com/tmaciazek/training-data-reconstruction"
#: Side of the extractors' input (App. D.1: both transforms end at 224x224).
TRANSFER_INPUT_SIZE = 224
#: The CelebA transform resizes the shorter side to 232 before the centre crop.
TRANSFER_CELEBA_RESIZE = 232
_TRANSFER_USE = ("The transfer-learning chapter's paper scale extracts deep features with TorchVision's "
                 "EfficientNet-B0 (CIFAR) and WideResNet-50-2 (CelebA) (paper App. D.1).")
_TRANSFER_PRETRAIN = {"efficientnet_b0": "CIFAR", "wide_resnet50_2": "CelebA"}


def _check_transfer_name(name) -> None:
    if name not in TRANSFER_NAMES:
        raise ValueError(f"name={name!r}; allowed: {', '.join(map(repr, TRANSFER_NAMES))}")


@dataclass(frozen=True)
class TransferTransform:
    """Float image batch (B, 3, H, W) with values in [0, 1] -> normalised (B, 3, 224, 224) batch of the same dtype
    and device: the evaluation transforms of the authors' ``generate_deep_features.py`` (TorchVision's ``Resize`` on
    PIL images, then ``ToTensor`` and ``Normalize``) on tensors, without TorchVision.

    1. Resize with PIL's antialiased BICUBIC filter, as PIL does it: two passes, the width first, then the height
       (``torch.nn.functional.interpolate(..., mode="bicubic", antialias=True)`` along one axis at a time, which
       uses PIL's kernel), each clamped to [0, 1] (PIL's passes write 8-bit images) and, when ``round_to_8bit``,
       rounded to multiples of 1/255 as well; a pass is skipped when its side already matches.  The size is
       ``size`` x ``size`` when ``shorter_side`` is ``False``; otherwise the shorter side becomes ``size`` and the
       longer one ``int(size * long / short)`` (TorchVision's ``Resize([size])``).  On 8-bit images (``uint8 / 255``)
       the result is within 1/255 of PIL's everywhere, and equal to it up to rare rounding ties when
       ``round_to_8bit`` (which stops gradients; a single pass without the intermediate clamp would differ from PIL
       by up to ~20/255 at sharp edges, where bicubic overshoots);
    2. centre-crop ``crop_size`` (``None``: no crop) at ``top = int(round((h - crop_size) / 2))``, ``left`` likewise;
    3. ``(x - mean) / std`` per channel.
    """

    size: int
    shorter_side: bool
    crop_size: int | None
    mean: tuple[float, float, float]
    std: tuple[float, float, float]
    round_to_8bit: bool = False

    def _pass(self, x: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
        x = nn.functional.interpolate(x, size=size, mode="bicubic", align_corners=False, antialias=True)
        x = x.clamp(0.0, 1.0)
        return x.mul(255).round().div(255) if self.round_to_8bit else x

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if not (isinstance(x, torch.Tensor) and x.ndim == 4 and x.shape[1] == 3 and x.dtype.is_floating_point
                and x.shape[0] > 0):
            raise ValueError(f"x={getattr(x, 'shape', x)!r}; allowed: a float tensor (B, 3, H, W), values in [0, 1]")
        h, w = x.shape[-2:]
        if self.shorter_side:
            new_w, new_h = _resized_size(w, h, self.size)
        else:
            new_h = new_w = self.size
        if new_w != w:  # PIL's horizontal pass comes first
            x = self._pass(x, (h, new_w))
        if new_h != h:
            x = self._pass(x, (new_h, new_w))
        if self.crop_size is not None:
            c = self.crop_size
            if c > min(new_h, new_w):
                raise ValueError(f"x={tuple(x.shape)!r}; allowed: images that resize to at least {c}x{c}")
            top, left = round((new_h - c) / 2.0), round((new_w - c) / 2.0)
            x = x[..., top:top + c, left:left + c]
        mean = torch.tensor(self.mean, dtype=x.dtype, device=x.device).view(1, 3, 1, 1)
        std = torch.tensor(self.std, dtype=x.dtype, device=x.device).view(1, 3, 1, 1)
        return (x - mean) / std


def transfer_transform(name: str, *, round_to_8bit: bool = False) -> TransferTransform:
    """The input transform of extractor ``name`` (transfer-learning paper, App. D.1), for float batches in [0, 1]:

    * ``"efficientnet_b0"`` (CIFAR): resize to 224x224 (bicubic) -> normalise with :data:`IMAGENET_NORMALIZATION`;
    * ``"wide_resnet50_2"`` (CelebA): resize the shorter side to 232 (bicubic; the paper writes "232x232", the
      authors' code ``Resize([232])`` keeps the aspect ratio) -> centre-crop 224 -> normalise.

    Returns a :class:`TransferTransform` ((B, 3, H, W) -> (B, 3, 224, 224)); ``round_to_8bit=True`` also rounds
    the resized pixels to 8 bits as PIL does (see there).  Needs no TorchVision.
    """
    _check_transfer_name(name)
    if not isinstance(round_to_8bit, bool):
        raise ValueError(f"round_to_8bit={round_to_8bit!r}; allowed: True or False")
    mean, std = IMAGENET_NORMALIZATION
    if name == "efficientnet_b0":
        return TransferTransform(TRANSFER_INPUT_SIZE, False, None, mean, std, round_to_8bit)
    return TransferTransform(TRANSFER_CELEBA_RESIZE, True, TRANSFER_INPUT_SIZE, mean, std, round_to_8bit)


def _checkpoint_path(name: str, checkpoint) -> Path:
    file = TRANSFER_CHECKPOINTS[name]
    if not isinstance(checkpoint, (str, os.PathLike)):
        raise ValueError(f"checkpoint={checkpoint!r}; allowed: None or the path of {file}")
    path = Path(checkpoint).expanduser()
    where = (f"The authors' fine-tuned {name} is {file} in models_pretrained/ of {AUTHORS_REPOSITORY} (download it "
             f"from there, or re-create it with their `python pre_training.py --experiment_id="
             f"{_TRANSFER_PRETRAIN[name]}`); checkpoint=None uses TorchVision's ImageNet weights instead (the start "
             "of their fine-tuning, not the paper's extractor).")
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint={str(path)!r} is not a file. {where}")
    with open(path, "rb") as f:
        if f.read(64).startswith(b"version https://git-lfs"):
            raise ValueError(f"checkpoint={str(path)!r} is a Git LFS pointer, not the weights. {where}")
    return path


def transfer_extractor(name: str, *, checkpoint: str | os.PathLike | None = None, device: str = "cpu",
                       download: bool = True) -> nn.Module:
    """A TorchVision network whose classification layer is ``nn.Identity``: the deep-feature extractor of the
    transfer-learning paper (App. D.1-D.2; the authors' ``generate_deep_features.py``).  ``model(x)`` maps a batch
    transformed by :func:`transfer_transform` to its features (B, :data:`TRANSFER_FEATURE_DIMS`):

    * ``"efficientnet_b0"``: ``classifier`` replaced, 1280 features (after average pooling; the dropout goes with the
      classifier);
    * ``"wide_resnet50_2"``: ``fc`` replaced, 2048 features.

    ``checkpoint=None``: TorchVision's ImageNet weights (``EfficientNet_B0_Weights.IMAGENET1K_V1``,
    ``Wide_ResNet50_2_Weights.IMAGENET1K_V2``: where the authors' fine-tuning starts), read from TorchVision's cache
    ``$TORCH_HOME/hub/checkpoints`` and downloaded there when missing (unless ``download=False``); when neither works
    :class:`PretrainedUnavailable` says which file to put where.  ``checkpoint`` a path: the authors' fine-tuned
    classifier (:data:`TRANSFER_CHECKPOINTS`, the paper's extractors; a state dict of the whole network with their
    100- or 40-output head), whose classification-layer keys (``classifier.*`` / ``fc.*``) are dropped and the rest
    loaded strictly; a missing file raises ``FileNotFoundError`` naming where to get it.

    Returns the model on ``device`` in ``eval()`` mode (BatchNorm with running statistics, dropout off) with
    ``requires_grad=False``; attributes ``arch``, ``weights`` (the weights' name or the checkpoint's path) and
    ``feature_dim``.  Raises ``ValueError`` for a bad ``name`` before importing anything, and
    :class:`TorchvisionMissing` (an ``ImportError``) without TorchVision.
    """
    _check_transfer_name(name)
    if not isinstance(download, bool):
        raise ValueError(f"download={download!r}; allowed: True or False")
    dev = resolve_device(device)
    path = None if checkpoint is None else _checkpoint_path(name, checkpoint)
    tvm = _torchvision_models(name, "transfer_extractor", _TRANSFER_USE)
    builder, enum_name, weights_name, top = TRANSFER_TORCHVISION[name]
    model = getattr(tvm, builder)(weights=None)
    if path is None:
        member = getattr(tvm, enum_name)[weights_name]
        model.load_state_dict(_pretrained_state_dict(member, builder, download, progress=False))
        label = f"{enum_name}.{weights_name}"
    else:
        state = torch.load(path, map_location="cpu", weights_only=True)
        kept = {k: v for k, v in state.items() if not k.startswith(top + ".")}
        setattr(model, top, nn.Identity())
        try:
            model.load_state_dict(kept)
        except RuntimeError as err:
            raise RuntimeError(f"checkpoint={str(path)!r} does not fit TorchVision's {builder} once its "
                               f"classification layer ({top}.*) is dropped; expected {TRANSFER_CHECKPOINTS[name]} "
                               f"from {AUTHORS_REPOSITORY}. {err}") from err
        label = str(path)
    setattr(model, top, nn.Identity())
    model.arch = name
    model.weights = label
    model.feature_dim = TRANSFER_FEATURE_DIMS[name]
    model.requires_grad_(False)
    return model.eval().to(dev)
