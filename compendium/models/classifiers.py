"""The small classifiers of the HCR chapter (Guo, Karrer, Sablayrolles, Maeng and Chaudhuri; see
Sec. 3.1 and 3.2 of the paper, and the authors' code, github.com/facebookresearch/hcrbounds).

Each network is split into a feature extractor ``features`` (all layers up to and including the last hidden ReLU,
the :math:`a_\\theta` of the paper) and a ``head`` (one affine layer; the softmax is left to the loss), so that the
HCR chapter can reveal dithered features :math:`a_\\theta + Z` and apply the head to them::

    z = model.features(x)                  # (B, model.feature_dim)
    logits = model.head(z + sigma * noise)  # (B, num_classes)
    model(x) == model.head(model.features(x))

Both are sized by ``in_channels``, ``image_size`` and ``num_classes`` (and widths), so the same layer structure runs
on the paper's data (MNIST 1x28x28, CIFAR-10 3x32x32) and on the offline stand-ins (scikit-learn's 1x8x8 digits,
small colour crops of scikit-image's photographs).  Inputs are whatever the caller feeds (the paper feeds normalised
images: MNIST ``(x - 0.1307) / 0.3081``, CIFAR ``2x - 1``; see :data:`MNIST_NORMALIZATION`,
:data:`CIFAR_NORMALIZATION`); the models themselves contain no normalisation and no BatchNorm.

Weights are initialised like PyTorch's defaults (uniform in :math:`\\pm 1/\\sqrt{\\text{fan-in}}` for weights and
biases) but from an explicit ``torch.Generator`` when one is given, so a model is reproducible without global seeding.

:class:`VGGTiny` is the transfer-learning chapter's paper-scale MNIST feature extractor (Maciazek & Allison 2025,
App. D.1), split the same way and initialised as the authors' code does (see its docstring).
"""
from __future__ import annotations

import math
from typing import ClassVar

import torch
from torch import nn

from compendium import validation

#: (mean, std) of the paper's MNIST normalisation ``(x - 0.1307) / 0.3081`` (the paper prints "0.1037", a typo).
MNIST_NORMALIZATION = (0.1307, 0.3081)
#: (mean, std) of the paper's CIFAR-10 normalisation ``(x - 0.5) / 0.5 = 2x - 1``.
CIFAR_NORMALIZATION = (0.5, 0.5)


def init_parameters(module: nn.Module, generator: torch.Generator | None = None) -> nn.Module:
    """Re-initialise every ``nn.Linear`` / ``nn.Conv2d`` of ``module`` like PyTorch's default (weight and bias uniform
    in :math:`[-1/\\sqrt{\\text{fan-in}}, 1/\\sqrt{\\text{fan-in}}]`, the bound ``kaiming_uniform_(a=sqrt(5))``
    gives), drawing from ``generator`` (the default torch stream when ``None``).  Returns ``module``."""
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, (nn.Linear, nn.Conv2d)):
                fan_in = m.weight[0].numel()
                bound = 1.0 / math.sqrt(fan_in)
                if m.weight.device.type == "meta":
                    continue
                m.weight.uniform_(-bound, bound, generator=generator)
                if m.bias is not None:
                    m.bias.uniform_(-bound, bound, generator=generator)
    return module


class SplitClassifier(nn.Module):
    """A classifier ``head(features(x))`` whose two parts are ``nn.Sequential`` attributes.

    ``feature_dim`` is the width :math:`n` of the features, ``num_classes`` the number of logits.
    """

    features: nn.Sequential
    head: nn.Sequential

    def __init__(self, features: nn.Sequential, head: nn.Sequential, feature_dim: int, num_classes: int,
                 in_channels: int, image_size: int):
        super().__init__()
        self.features = features
        self.head = head
        self.feature_dim = feature_dim
        self.num_classes = num_classes
        self.in_channels = in_channels
        self.image_size = image_size

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x))


class MnistMLP(SplitClassifier):
    """The paper's MNIST network (Sec. 3.1):
    Flatten -> Affine(d, h) -> ReLU -> Affine(h, h) -> ReLU  (features, n = h) -> Affine(h, num_classes)  (head),
    with ``d = in_channels * image_size**2`` and ``h = hidden`` (default ``d``: the paper's 784 on MNIST, 1,238,730
    parameters; 64 on scikit-learn's 8x8 digits, the book-scale stand-in).
    """

    def __init__(self, in_channels: int = 1, image_size: int = 28, num_classes: int = 10, hidden: int | None = None,
                 generator: torch.Generator | None = None):
        for name, value in (("in_channels", in_channels), ("image_size", image_size), ("num_classes", num_classes)):
            validation.integer(name, value)
        if num_classes < 2:
            raise ValueError(f"num_classes={num_classes!r}; allowed: an integer >= 2")
        d = in_channels * image_size * image_size
        hidden = d if hidden is None else hidden
        validation.integer("hidden", hidden)
        features = nn.Sequential(nn.Flatten(), nn.Linear(d, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
        head = nn.Sequential(nn.Linear(hidden, num_classes))
        super().__init__(features, head, hidden, num_classes, in_channels, image_size)
        init_parameters(self, generator)


def _conv_out(size: int, kernel: int, padding: int) -> int:
    return size + 2 * padding - kernel + 1


class CifarCNN(SplitClassifier):
    """The paper's CIFAR-10 network (Sec. 3.2, adapted by the paper from Shahrestani 2021):

    Conv(c, w1, k3) -> ReLU -> MaxPool2 -> Conv(w1, w2, k5) -> ReLU -> MaxPool3 -> Conv(w2, w3, k3) -> ReLU
    -> Flatten -> Affine(., hidden) -> ReLU  (features, n = hidden)  -> Affine(hidden, num_classes)  (head).

    The defaults ``widths=(32, 1024, 3072)``, ``hidden=3072``, 3x32x32 input and ``padding=0`` are the paper's
    (32x30x30 -> 32x15x15 -> 1024x11x11 -> 1024x3x3 -> 3072x1x1; 38,606,730 parameters).  Without padding the
    structure needs ``image_size >= 28``; ``padding="auto"`` (the default) therefore uses no padding from 28 pixels
    up and "same" padding (kernel // 2) below, which runs down to 6x6 inputs (8x8 digits: 8 -> 8 -> 4 -> 4 -> 1 -> 1).
    Pool strides equal their kernel sizes (floor), as in the paper.
    """

    def __init__(self, in_channels: int = 3, image_size: int = 32, num_classes: int = 10,
                 widths: tuple[int, int, int] = (32, 1024, 3072), hidden: int = 3072,
                 padding: int | str = "auto", generator: torch.Generator | None = None):
        for name, value in (("in_channels", in_channels), ("image_size", image_size), ("hidden", hidden)):
            validation.integer(name, value)
        validation.integer("num_classes", num_classes, minimum=2)
        if len(tuple(widths)) != 3:
            raise ValueError(f"widths={widths!r}; allowed: three positive integers (conv1, conv2, conv3 channels)")
        for i, w in enumerate(widths):
            validation.integer(f"widths[{i}]", w)
        if padding == "auto":
            padding = 0 if image_size >= 28 else "same"
        if padding not in (0, "same"):
            raise ValueError(f"padding={padding!r}; allowed: 'auto', 'same' or 0")
        pads = (1, 2, 1) if padding == "same" else (0, 0, 0)
        s = _conv_out(image_size, 3, pads[0]) // 2
        s = _conv_out(s, 5, pads[1]) // 3
        s = _conv_out(s, 3, pads[2])
        if s < 1:
            raise ValueError(f"image_size={image_size!r} is too small for padding={padding!r}; allowed: "
                             f"image_size >= {28 if padding == 0 else 6}")
        w1, w2, w3 = (int(w) for w in widths)
        features = nn.Sequential(
            nn.Conv2d(in_channels, w1, 3, padding=pads[0]), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(w1, w2, 5, padding=pads[1]), nn.ReLU(), nn.MaxPool2d(3),
            nn.Conv2d(w2, w3, 3, padding=pads[2]), nn.ReLU(), nn.Flatten(),
            nn.Linear(w3 * s * s, hidden), nn.ReLU(),
        )
        head = nn.Sequential(nn.Linear(hidden, num_classes))
        super().__init__(features, head, hidden, num_classes, in_channels, image_size)
        self.padding = padding
        init_parameters(self, generator)


#: Output channels of :class:`VGGTiny`'s eight 3x3 convolutions: VGG-11's 64, 128, 256, 256, 512, 512, 512, 512
#: divided by 16 (the transfer-learning paper's App. D.1; ``hidden_dim=4`` in the authors' ``VGGNet``).
VGG_TINY_CHANNELS = (4, 8, 16, 16, 32, 32, 32, 32)
#: The convolutions (counted from 1) that a 2x2 max-pooling follows in the authors' code (32 -> 16 -> 8 -> 4 px).
VGG_TINY_POOLS = (2, 6, 8)
#: Width of :class:`VGGTiny`'s two hidden fully connected layers (VGG-11's 4096 divided by 16).
VGG_TINY_HIDDEN = 256


class VGGTiny(SplitClassifier):
    """The scaled-down VGG-11 that the transfer-learning paper (Maciazek & Allison 2025, App. D.1, MNIST row)
    pre-trains on EMNIST letters (26 classes) and whose deep features its MNIST heads are trained on; the authors'
    code builds it as ``VGGNet(in_channels=1, num_classes=26, hidden_dim=4)`` and saves it as
    ``VGGtiny_classifier_EMNIST_50EP.pth`` (github.com/tmaciazek/training-data-reconstruction, ``models.py``):

    eight Conv(3x3, padding 1) -> ReLU with :data:`VGG_TINY_CHANNELS` = 4, 8, 16, 16, 32, 32, 32, 32 output channels,
    a MaxPool(2) after convolutions 2, 6 and 8 (:data:`VGG_TINY_POOLS`; 32 -> 16 -> 8 -> 4 px) -> Flatten (512)
    -> Affine(512, 256) -> ReLU -> Affine(256, 256) -> ReLU  (``features``, n = 256)  -> Affine(256, num_classes)
    (``head``).

    240,010 parameters with the paper's 1x32x32 input and 26 classes.  ``features(x)`` is the post-ReLU output of
    the second hidden layer, the "penultimate post-activation output" the paper's heads are trained on (App. D.2; the
    authors replace ``fc_top`` by ``nn.Identity``).  The paper feeds EMNIST/MNIST images resized to 32x32 and
    normalised as :math:`X/127.5 - 1` (that is :data:`CIFAR_NORMALIZATION`); the model contains no normalisation.
    Other ``image_size`` values (>= 8) run the same layers, the pools flooring (8x8 digits: 8 -> 4 -> 2 -> 1, 32
    flattened features).

    Initialisation as the authors' ``pre_training.py``: convolution weights
    ``kaiming_normal_(mode="fan_out", nonlinearity="relu")`` (std :math:`\\sqrt{2 / (9 c_{out})}`), linear weights
    :math:`N(0, 0.01^2)`, all biases 0, drawn from ``generator`` (the default torch stream when ``None``).

    The layers sit at the indices of the authors' ``VGGNet`` (``features.0`` ... ``features.18`` are their
    ``features``), so :meth:`load_authors_state_dict` loads their checkpoint after renaming ``fc1.0``, ``fc2.0`` and
    ``fc_top``.
    """

    def __init__(self, in_channels: int = 1, image_size: int = 32, num_classes: int = 26,
                 generator: torch.Generator | None = None):
        validation.integer("in_channels", in_channels)
        validation.integer("image_size", image_size, minimum=8, what="three 2x2 max-poolings")
        validation.integer("num_classes", num_classes, minimum=2)
        validation.generator("generator", generator)
        layers: list[nn.Module] = []
        c_in, s = in_channels, image_size
        for i, c_out in enumerate(VGG_TINY_CHANNELS, start=1):
            layers += [nn.Conv2d(c_in, c_out, 3, padding=1), nn.ReLU()]
            if i in VGG_TINY_POOLS:
                layers.append(nn.MaxPool2d(2))
                s //= 2
            c_in = c_out
        h = VGG_TINY_HIDDEN
        layers += [nn.Flatten(), nn.Linear(c_in * s * s, h), nn.ReLU(), nn.Linear(h, h), nn.ReLU()]
        super().__init__(nn.Sequential(*layers), nn.Sequential(nn.Linear(h, num_classes)), h, num_classes,
                         in_channels, image_size)
        with torch.no_grad():
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu", generator=generator)
                elif isinstance(m, nn.Linear):
                    nn.init.normal_(m.weight, 0.0, 0.01, generator=generator)
                if isinstance(m, (nn.Conv2d, nn.Linear)):
                    nn.init.zeros_(m.bias)

    #: The authors' ``VGGNet`` module names -> ours (their ``features.0`` ... ``features.18`` are ours as they are).
    AUTHORS_NAMES: ClassVar[tuple[tuple[str, str], ...]] = (
        ("fc1.0.", "features.20."), ("fc2.0.", "features.22."), ("fc_top.", "head.0."))

    def load_authors_state_dict(self, state_dict: dict) -> None:
        """Load a state dict of the authors' ``VGGNet(..., hidden_dim=4)`` (e.g. their
        ``VGGtiny_classifier_EMNIST_50EP.pth`` read by ``torch.load``) into this model, strictly, after renaming
        :attr:`AUTHORS_NAMES`."""
        renamed = {}
        for key, value in state_dict.items():
            for theirs, ours in self.AUTHORS_NAMES:
                if key.startswith(theirs):
                    key = ours + key[len(theirs):]
                    break
            renamed[key] = value
        self.load_state_dict(renamed)
