"""Decoders: networks that map features back to images (the learned attacks of the HCR chapter)."""
from __future__ import annotations

import math
from typing import Sequence

import torch
from torch import nn

from compendium import validation
from compendium.models.classifiers import init_parameters


class FeatureDecoder(nn.Module):
    """An MLP ``g`` from ``n`` features to an image: ``Linear(n, h_1) -> ReLU -> ... -> Linear(h_k, C H W)``,
    reshaped to ``(B, *output_shape)``.  ``hidden=()`` gives an affine decoder (trained with MSE it approximates the
    linear minimum-mean-squared-error estimator).  The output layer is linear (no squashing), so the decoder works
    for images in [0, 1] and for normalised inputs alike.  Weights are initialised like PyTorch's defaults, from
    ``generator`` when one is given (:func:`compendium.models.classifiers.init_parameters`)."""

    def __init__(self, n_features: int, output_shape: Sequence[int], hidden: Sequence[int] = (512, 512),
                 generator: torch.Generator | None = None):
        super().__init__()
        validation.integer("n_features", n_features)
        if isinstance(output_shape, int) or len(tuple(output_shape)) == 0:
            raise ValueError(f"output_shape={output_shape!r}; allowed: a sequence of positive integers, "
                             "e.g. (C, H, W)")
        for i, s in enumerate(output_shape):
            validation.integer(f"output_shape[{i}]", s)
        for i, h in enumerate(hidden):
            validation.integer(f"hidden[{i}]", h)
        validation.generator("generator", generator)
        self.n_features = n_features
        self.output_shape = tuple(int(s) for s in output_shape)
        self.hidden = tuple(int(h) for h in hidden)
        widths = (n_features, *self.hidden)
        layers: list[nn.Module] = []
        for a, b in zip(widths[:-1], widths[1:]):
            layers += [nn.Linear(a, b), nn.ReLU()]
        layers.append(nn.Linear(widths[-1], math.prod(self.output_shape)))
        self.net = nn.Sequential(*layers)
        init_parameters(self, generator)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        z = features.reshape(features.shape[0], -1)
        if z.shape[1] != self.n_features:
            raise ValueError(f"features must have {self.n_features} values per example; got shape "
                             f"{tuple(features.shape)}")
        return self.net(z).reshape(z.shape[0], *self.output_shape)
