"""Denoisers for the diffusion chapter's prior: networks ``eps_theta(x_t, t)`` that predict the noise of a noised
image (Ho et al. 2020, the epsilon parametrisation the paper's DPS checkpoint uses).

:class:`MLPDenoiser` is the book scale's small denoiser for 8x8 images: the flattened image concatenated with a
sinusoidal embedding of the timestep (``diffusers``' own ``get_timestep_embedding``), ``Linear -> SiLU``, two
residual ``Linear -> SiLU`` blocks and a linear output; 624,192 parameters at 8x8 with width 512.  It takes
``(x, t)`` as ``diffusers.UNet2DModel`` does; :func:`predict_noise` calls either and returns the noise prediction, so
the samplers work with a trained ``UNet2DModel`` (or ``UNet2DModel.from_pretrained``) unchanged.
"""
from __future__ import annotations

import math

import torch
from torch import nn

from compendium import validation
from compendium.models.classifiers import init_parameters


class MLPDenoiser(nn.Module):
    """``eps_theta(x, t)`` for images of ``image_shape`` (C, H, W): input ``[flatten(x), emb(t)]`` with a
    ``time_dim``-dimensional sinusoidal embedding, width ``hidden``."""

    def __init__(self, image_shape: tuple[int, int, int], hidden: int = 512, time_dim: int = 64,
                 generator: torch.Generator | None = None):
        super().__init__()
        validation.integer("hidden", hidden)
        validation.integer("time_dim", time_dim, minimum=2)
        self.image_shape = tuple(int(s) for s in image_shape)
        self.time_dim = time_dim
        pixels = math.prod(self.image_shape)
        self.inp = nn.Linear(pixels + time_dim, hidden)
        self.blocks = nn.ModuleList([nn.Linear(hidden, hidden) for _ in range(2)])
        self.out = nn.Linear(hidden, pixels)
        if generator is not None:  # PyTorch's default initialisation, drawn from the given generator
            init_parameters(self, generator)

    def forward(self, x: torch.Tensor, t: torch.Tensor | int) -> torch.Tensor:
        from diffusers.models.embeddings import get_timestep_embedding  # imported once; diffusers is slow to import

        t = torch.as_tensor(t, device=x.device).reshape(-1).expand(len(x))
        emb = get_timestep_embedding(t, self.time_dim).to(x.dtype)
        h = nn.functional.silu(self.inp(torch.cat([x.flatten(1), emb], dim=1)))
        for block in self.blocks:
            h = h + nn.functional.silu(block(h))
        return self.out(h).reshape(len(x), *self.image_shape)


def predict_noise(model: nn.Module, x: torch.Tensor, t: torch.Tensor | int) -> torch.Tensor:
    """``eps_theta(x, t)`` of an :class:`MLPDenoiser` or a ``diffusers.UNet2DModel`` (whose output is ``.sample``)."""
    out = model(x, t)
    return out.sample if hasattr(out, "sample") else out


class PriorUnavailable(FileNotFoundError):
    """A pretrained diffusion checkpoint is neither a local folder nor in the Hugging Face cache, and cannot be
    downloaded here."""


def pretrained_denoiser(checkpoint: str) -> nn.Module:
    """``diffusers.UNet2DModel.from_pretrained(checkpoint)`` in ``eval()`` mode without gradients: a local folder
    written by ``save_pretrained`` or a Hugging Face hub id (e.g. ``google/ddpm-celebahq-256``, 256x256 faces, about
    450 MB, downloaded once into the Hugging Face cache).  Offline and not cached: :class:`PriorUnavailable` saying
    what to fetch and where."""
    from diffusers import UNet2DModel

    if not isinstance(checkpoint, str) or not checkpoint:
        raise ValueError(f"checkpoint={checkpoint!r}; allowed: a hub id such as 'google/ddpm-celebahq-256' or a folder")
    try:
        model = UNet2DModel.from_pretrained(checkpoint)
    except (OSError, ValueError) as err:  # diffusers raises OSError (EnvironmentError) when offline or not found
        raise PriorUnavailable(
            f"the diffusion prior {checkpoint!r} could not be loaded ({type(err).__name__}). Paper scale needs a "
            "pretrained UNet2DModel: on a machine with internet run `python -c \"from diffusers import UNet2DModel; "
            f"UNet2DModel.from_pretrained('{checkpoint}')\"` once (it fills the Hugging Face cache, HF_HOME), or "
            "save one with save_pretrained and pass its folder as prior_checkpoint") from err
    return model.eval().requires_grad_(False)
