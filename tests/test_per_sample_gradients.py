"""compendium.per_sample_gradients against the weight gradient taken image by image (float64, so the comparison is
exact to rounding): both products, their derivatives in the input, each layer type and both conv branches."""
from __future__ import annotations

import pytest
import torch
from torch import nn

from compendium.attacks import diffusion_guided as dg
from compendium.models import gradient_target
from compendium.per_sample_gradients import GradientProducts


def _by_loop(model, x, labels, targets):
    grads = torch.stack([dg.weight_gradient(model, xb[None], yb[None], create_graph=True)
                         for xb, yb in zip(x, labels)])
    return grads.square().sum(1), (grads * targets).sum(1)


def _strided(size=8):  # a convolution whose positions outnumber its weights (the formed branch), stride and bias
    return nn.Sequential(nn.Conv2d(1, 2, 3, stride=2, padding=1), nn.ReLU(), nn.Flatten(),
                         nn.Linear(2 * (size // 2) ** 2, 3), nn.Tanh(), nn.Linear(3, 2, bias=False))


@pytest.mark.parametrize("name", ["MLP_1", "CNN", "ResMini", "strided"])
def test_products_and_their_input_derivatives_match_the_loop(name):
    torch.manual_seed(0)
    model = (_strided() if name == "strided"
             else gradient_target(name, generator=torch.Generator().manual_seed(1))).double()
    if name == "ResMini":  # running statistics away from their defaults, so x_hat is not x
        for module in model.modules():
            if isinstance(module, nn.BatchNorm2d):
                module.running_mean.uniform_(-0.5, 0.5)
                module.running_var.uniform_(0.5, 2.0)
    x = torch.rand(3, 1, 8, 8, dtype=torch.float64, requires_grad=True)
    labels = torch.tensor([0, 1, 1])
    m = sum(p.numel() for p in model.parameters())
    targets = torch.randn(3, m, dtype=torch.float64)
    square, dot = GradientProducts(model, targets)(x, labels)
    want_square, want_dot = _by_loop(model, x, labels, targets)
    torch.testing.assert_close(square, want_square, rtol=1e-10, atol=0)
    torch.testing.assert_close(dot, want_dot, rtol=1e-10, atol=1e-12)
    weights = torch.tensor([0.3, -1.0, 2.0], dtype=torch.float64)
    got = torch.autograd.grad((weights * (square - 2 * dot)).sum(), x)[0]
    want = torch.autograd.grad((weights * (want_square - 2 * want_dot)).sum(), x)[0]
    torch.testing.assert_close(got, want, rtol=1e-8, atol=1e-12)


def test_matching_distance_is_the_norm_of_the_difference():
    model = gradient_target("CNN", generator=torch.Generator().manual_seed(1)).double()
    x = torch.rand(2, 1, 8, 8, dtype=torch.float64)
    labels = torch.tensor([1, 0])
    grads = torch.stack([dg.weight_gradient(model, xb[None], yb[None]) for xb, yb in zip(x, labels)])
    released = grads + 0.01 * torch.randn(grads.shape, dtype=torch.float64)
    torch.testing.assert_close(dg.MatchingDistance(model, labels, released, normalise=False)(x),
                               (released - grads).norm(dim=1))
    unit = grads / grads.norm(dim=1, keepdim=True)
    torch.testing.assert_close(dg.MatchingDistance(model, labels, unit + 0.01, normalise=True)(x),
                               (unit + 0.01 - unit).norm(dim=1))


def test_layers_it_cannot_differentiate_per_sample_are_refused():
    x, labels = torch.rand(2, 1, 4, 4), torch.tensor([0, 1])
    norm = nn.Sequential(nn.Flatten(), nn.LayerNorm(16), nn.Linear(16, 2))
    with pytest.raises(ValueError, match="LayerNorm"):
        GradientProducts(norm, torch.zeros(2, 66))(x, labels)
    training = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.Flatten(), nn.Linear(8, 2)).train()
    with pytest.raises(ValueError, match="training mode"):
        GradientProducts(training, torch.zeros(2, 42))(x, labels)
    shared = nn.Linear(16, 16)
    twice = nn.Sequential(nn.Flatten(), shared, nn.Tanh(), shared, nn.Linear(16, 2))
    with pytest.raises(ValueError, match="called twice"):
        GradientProducts(twice, torch.zeros(2, 306))(x, labels)
    linear = nn.Sequential(nn.Flatten(), nn.Linear(16, 2))
    with pytest.raises(ValueError, match=r"allowed: \(B, 34\)"):
        GradientProducts(linear, torch.zeros(2, 33))(x, labels)
    with pytest.raises(ValueError, match="one label and one target per sample"):
        GradientProducts(linear, torch.zeros(2, 34))(x, labels[:1])
