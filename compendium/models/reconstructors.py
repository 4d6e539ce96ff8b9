"""The reconstructor networks of the transfer-learning chapter (Maciazek & Allison 2025): a map from a head's
standardised weights (and, for the conditional reconstructor, a one-hot class) to one image in [-1, 1].

* :class:`MLPReconstructor`, the book scale's: ``input -> Linear(hidden) -> ReLU -> Linear(hidden) -> ReLU ->
  Linear(pixels) -> tanh``, reshaped to the image (a small stand-in for Table 2 that trains in seconds on a CPU).
* :class:`ResidualReconstructor`, the paper's Table 2 generator (Appendix B, Fig. 10): a 4x4 transposed convolution
  of the input seen as a 1x1 image to ``4S`` channels, pre-activation residual blocks that upsample by 2 (4S -> 2S ->
  S -> S, and one more S -> S for 64x64 outputs), BatchNorm, ReLU, a 3x3 convolution to the image's channels and
  tanh.  Each block is ``BN -> ReLU -> Upsample -> Conv3x3 -> BN -> ReLU -> Conv3x3`` plus a bypass ``Upsample
  [-> Conv1x1 when the channels change]``.  The initialisation follows the authors' code: Kaiming-uniform (linear)
  for the transposed convolution, Kaiming-uniform (ReLU) for the block convolutions, Xavier-uniform with tanh gain for
  the last one.
"""
from __future__ import annotations

import math

import torch
from torch import nn

from compendium import validation
from compendium.models.classifiers import init_parameters


class MLPReconstructor(nn.Module):
    """``in_features -> hidden -> hidden -> prod(image_shape)``, ReLU between, tanh at the end; output (B,
    *image_shape) in (-1, 1)."""

    def __init__(self, in_features: int, image_shape: tuple[int, ...], hidden: int = 512,
                 generator: torch.Generator | None = None):
        super().__init__()
        validation.integer("in_features", in_features)
        validation.integer("hidden", hidden)
        self.image_shape = tuple(int(s) for s in image_shape)
        self.net = nn.Sequential(nn.Linear(in_features, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, math.prod(self.image_shape)), nn.Tanh())
        if generator is not None:  # PyTorch's default initialisation, drawn from the given generator
            init_parameters(self, generator)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).reshape(len(x), *self.image_shape)


class ResidualBlock(nn.Module):
    """Appendix B's up-sampling residual block ``RB(c_in -> c_out)`` (Fig. 10)."""

    def __init__(self, c_in: int, c_out: int):
        super().__init__()
        self.main = nn.Sequential(nn.BatchNorm2d(c_in), nn.ReLU(), nn.Upsample(scale_factor=2, mode="nearest"),
                                  nn.Conv2d(c_in, c_out, 3, padding=1), nn.BatchNorm2d(c_out), nn.ReLU(),
                                  nn.Conv2d(c_out, c_out, 3, padding=1))
        bypass = [nn.Upsample(scale_factor=2, mode="nearest")]
        if c_in != c_out:
            bypass.append(nn.Conv2d(c_in, c_out, 1))
        self.bypass = nn.Sequential(*bypass)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.main(x) + self.bypass(x)


class ResidualReconstructor(nn.Module):
    """Table 2's generator: input (B, in_features) -> image (B, out_channels, size, size), ``size`` 32 or 64 and
    width ``S`` (256 for MNIST, 512 for CIFAR and CelebA).  For MNIST (2,580 inputs: 2,570 head weights and 10
    classes; S = 256; 32x32x1) it has 52,965,377 parameters, 42,271,744 of them in the first layer (Appendix F
    prints ``4S(16 D_Theta + 1)`` for that layer, which omits the 10 class inputs).  The bypass has a 1x1 convolution
    only where the channels change, as Appendix B says; the model of the authors' repository has 65,792 = S^2 + S
    parameters more, the size of a 1x1 convolution in the S -> S block's bypass.  With ``generator`` every draw of
    the initialisation comes from it."""

    def __init__(self, in_features: int, width: int = 256, out_channels: int = 1, size: int = 32,
                 generator: torch.Generator | None = None):
        super().__init__()
        validation.integer("in_features", in_features)
        validation.integer("width", width)
        validation.integer("out_channels", out_channels)
        validation.choice("size", size, (32, 64))
        s = width
        blocks = [ResidualBlock(4 * s, 2 * s), ResidualBlock(2 * s, s), ResidualBlock(s, s)]
        if size == 64:
            blocks.append(ResidualBlock(s, s))
        self.stem = nn.ConvTranspose2d(in_features, 4 * s, 4)
        self.blocks = nn.Sequential(*blocks)
        self.out = nn.Sequential(nn.BatchNorm2d(s), nn.ReLU(), nn.Conv2d(s, out_channels, 3, padding=1), nn.Tanh())
        if generator is not None:  # the biases' default initialisation, drawn from the given generator
            init_parameters(self, generator)
            bound = 1.0 / math.sqrt(nn.init._calculate_fan_in_and_fan_out(self.stem.weight)[0])
            with torch.no_grad():
                self.stem.bias.uniform_(-bound, bound, generator=generator)  # as ConvTranspose2d.reset_parameters
        nn.init.kaiming_uniform_(self.stem.weight, mode="fan_in", nonlinearity="linear", generator=generator)
        for module in self.blocks.modules():
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_uniform_(module.weight, mode="fan_in", nonlinearity="relu", generator=generator)
        nn.init.xavier_uniform_(self.out[2].weight, gain=nn.init.calculate_gain("tanh"), generator=generator)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.blocks(self.stem(x[:, :, None, None])))

    def authors_names(self) -> dict[str, str]:
        """Our state-dict prefix -> the authors' (``models.Reconstructor`` of their repository): ``convT`` the stem,
        ``model.<i>`` block ``i`` (``conv1``, ``model.0`` / ``model.4`` its BatchNorms, ``conv2``, ``conv_bypass``
        the 1x1 bypass), ``model.<blocks>`` the last BatchNorm, ``final`` the last convolution."""
        names = {"stem.": "convT.", "out.0.": f"model.{len(self.blocks)}.", "out.2.": "final."}
        for i, block in enumerate(self.blocks):
            names |= {f"blocks.{i}.main.0.": f"model.{i}.model.0.", f"blocks.{i}.main.3.": f"model.{i}.conv1.",
                      f"blocks.{i}.main.4.": f"model.{i}.model.4.", f"blocks.{i}.main.6.": f"model.{i}.conv2."}
            if len(block.bypass) > 1:
                names[f"blocks.{i}.bypass.1."] = f"model.{i}.conv_bypass."
        return names

    def load_authors_state_dict(self, state_dict: dict) -> None:
        """Load a state dict of the authors' ``Reconstructor`` (e.g. their released
        ``cond_rec_MNIST_N40_trained_1000EP.pth`` read by ``torch.load``), renamed by :meth:`authors_names`.  Their
        state dict lists each block's convolutions twice (as ``conv1`` and as ``model.3``: one module under two
        names) and carries a 1x1 ``conv_bypass`` in the S -> S blocks that their forward pass never uses; both are
        left out.  Strict otherwise: a missing tensor or one of another shape raises."""
        renamed = {}
        for ours, theirs in self.authors_names().items():
            for key in self.state_dict():
                if key.startswith(ours):
                    source = theirs + key[len(ours):]
                    if source not in state_dict:
                        raise KeyError(f"{source!r} (for our {key!r}) is not in the state dict; expected the authors' "
                                       "models.Reconstructor of the same width, resolution and input size")
                    renamed[key] = state_dict[source]
        self.load_state_dict(renamed)
