"""The networks whose weight gradients the diffusion chapter attacks (Huang, Meng et al. 2024, Sections 4.1 and
4.2.3): three MLPs, a CNN and a ResNet9-like network with two outputs, at any square image size.  The paper uses
them at 3x256x256 with "random fixed weights"; the book at 1x8x8.  Parameter counts at 1x8x8: MLP_1 99,202,
MLP_2 181,186, MLP_3 741,574, CNN 206,338, ResMini 462,562.

The weights are drawn by :func:`compendium.models.init_parameters` from the given generator (PyTorch's default
uniform initialisation); BatchNorm keeps its default affine parameters and running statistics, and
:func:`gradient_target` returns every network in ``eval()`` mode, so a gradient is a function of one image alone.
"""
from __future__ import annotations

import torch
from torch import nn

from compendium import validation
from compendium.models.classifiers import init_parameters

MLP_WIDTHS = {"MLP_1": (512, 128), "MLP_2": (512, 256, 64), "MLP_3": (1028, 512, 256, 64)}
NAMES = (*MLP_WIDTHS, "CNN", "ResMini")


def _mlp(d: int, widths: tuple[int, ...], num_classes: int) -> nn.Sequential:
    layers, width = [nn.Flatten()], d
    for w in widths:
        layers += [nn.Linear(width, w), nn.ReLU()]
        width = w
    return nn.Sequential(*layers, nn.Linear(width, num_classes))


def _conv_bn(c_in: int, c_out: int, pool: bool = False) -> nn.Sequential:
    layers = [nn.Conv2d(c_in, c_out, 3, padding=1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU()]
    return nn.Sequential(*layers, nn.MaxPool2d(2)) if pool else nn.Sequential(*layers)


class _Residual(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.body = nn.Sequential(_conv_bn(channels, channels), _conv_bn(channels, channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.body(x)


def gradient_target(name: str, *, in_channels: int = 1, image_size: int = 8, num_classes: int = 2,
                    generator: torch.Generator | None = None) -> nn.Module:
    """One of :data:`NAMES` for ``in_channels x image_size x image_size`` inputs (``image_size`` a multiple of 4 for
    the convolutional ones), in ``eval()`` mode:

    * ``MLP_1`` d-512-128-k, ``MLP_2`` d-512-256-64-k, ``MLP_3`` d-1028-512-256-64-k (ReLU), ``d = C H W``;
    * ``CNN``: Conv(C, 64, 3x3) - ReLU - MaxPool2 - Conv(64, 128, 3x3) - ReLU - MaxPool2 - Linear(128 (H/4)^2, 256) -
      ReLU - Linear(256, k);
    * ``ResMini`` (ResNet9-like): conv-BN-ReLU stems of 32 and 64 channels (+ pool), a residual block of 64, 128
      channels (+ pool), a residual block of 128, global average pooling, Linear(128, k); convolutions without bias.
    """
    validation.choice("name", name, NAMES)
    validation.integer("in_channels", in_channels)
    validation.integer("image_size", image_size, minimum=4)
    validation.integer("num_classes", num_classes, minimum=2)
    if name in MLP_WIDTHS:
        model = _mlp(in_channels * image_size ** 2, MLP_WIDTHS[name], num_classes)
    else:
        if image_size % 4:
            raise ValueError(f"image_size={image_size!r}; allowed: a multiple of 4 (two 2x2 poolings) for {name}")
        if name == "CNN":
            model = nn.Sequential(nn.Conv2d(in_channels, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                  nn.Conv2d(64, 128, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                                  nn.Linear(128 * (image_size // 4) ** 2, 256), nn.ReLU(), nn.Linear(256, num_classes))
        else:
            model = nn.Sequential(_conv_bn(in_channels, 32), _conv_bn(32, 64, pool=True), _Residual(64),
                                  _conv_bn(64, 128, pool=True), _Residual(128), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                  nn.Linear(128, num_classes))
    return init_parameters(model, generator).eval()
