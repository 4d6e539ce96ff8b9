"""The frozen feature extractor of the transfer-learning chapter (its pre-trained base model, Appendix D.1 of Maciazek &
Allison 2025) as the attack uses it: deep features of images, computed in batches and once per pool, and the
authors' VGGtiny weights read from their file."""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

from compendium.base import in_repository
from compendium.data import Pools
from compendium.models import pretrained


@dataclass
class Extractor:
    """The frozen feature extractor: ``features(x)`` (B, F) of images in [-1, 1], computed in batches on its device
    (``transform`` maps the pool's images to the model's input); its accuracy on the validation pool (``nan`` where
    the pre-training task differs from the heads') and its training time."""

    model: torch.nn.Module
    accuracy: float
    seconds: float
    transform: object = None
    batch_size: int = 1024
    whole_model: bool = False  # the features are model(x) (TorchVision's, head removed), not model.features(x)

    _cached: dict = field(default_factory=dict, repr=False)

    def pool_features(self, pool: Pools) -> tuple[torch.Tensor, torch.Tensor]:
        """The features of the training and the validation pool, computed once per pool (the pool's own when it
        carries them)."""
        if pool.features is not None:
            return pool.features
        key = id(pool)
        if key not in self._cached or self._cached[key][0] is not pool:
            self._cached[key] = (pool, self.features(pool.train[0]), self.features(pool.validation[0]))
        return self._cached[key][1:]

    @torch.no_grad()
    def features(self, x: torch.Tensor) -> torch.Tensor:
        device = next(self.model.parameters()).device
        out = []
        for batch in x.split(self.batch_size):
            batch = batch.to(device)
            batch = batch if self.transform is None else self.transform(batch)
            out.append((self.model(batch) if self.whole_model else self.model.features(batch)).cpu())
        return torch.cat(out)


def vggtiny_checkpoint(path: str) -> dict:
    """The authors' VGGtiny weights (``VGGtiny_classifier_EMNIST_50EP.pth``, their repository's
    ``models_pretrained/``), read on the CPU as tensors only (``weights_only=True``: a file that would run code when
    unpickled is refused with ``pickle.UnpicklingError``)."""
    file = in_repository(path)
    if not file.is_file():
        raise FileNotFoundError(f"extractor_checkpoint {file} not found: get VGGtiny_classifier_EMNIST_50EP.pth from "
                                f"{pretrained.AUTHORS_REPOSITORY} (models_pretrained/), or leave "
                                "extractor_checkpoint=None to train VGGtiny here")
    return torch.load(file, map_location="cpu", weights_only=True)
