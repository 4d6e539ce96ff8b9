"""Jacobians of feature maps, one per example: the ``J`` of the HCR chapter's bounds (eqs. 13-18 of Chaudhuri et al.
2024) and of the Gauss-Newton attacker that the chapter sets against them.  A module of its own below both the
bounds and the attacks, so that neither imports the other."""
from __future__ import annotations

import torch


def feature_jacobians(feature_map, points: torch.Tensor, *, rows: int | None = None) -> torch.Tensor:
    """Per-example Jacobians ``(b, n, p)`` of the flattened feature map at each row of ``points`` (shape
    ``(b, *input_shape)``), through ``torch.func.vmap(torch.func.jacrev)``, on the device and in the dtype of
    ``points``: the ``J`` of eqs. (13)-(18).  ``rows`` (``None``: all at once) is how many of the ``n`` output rows
    one backward pass forms, so that the cotangents take ``b * rows`` activations' memory instead of ``b * n``."""

    def single(t: torch.Tensor) -> torch.Tensor:
        return feature_map(t.unsqueeze(0)).reshape(-1)

    jac = torch.func.vmap(torch.func.jacrev(single, chunk_size=rows))(points)
    return jac.reshape(points.shape[0], -1, points[0].numel())
