"""Unit tests of compendium.models: the HCR chapter's split classifiers (shapes, split, paper sizes, init)."""
from __future__ import annotations

import pytest
import torch

from compendium.models import CifarCNN, MnistMLP, SplitClassifier


def _n_params(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def test_paper_sizes_parameter_counts():
    """HCR paper Sec. 3.1/3.2: 1,238,730 (MNIST MLP) and 38,606,730 (CIFAR CNN) parameters; built on the meta device."""
    with torch.device("meta"):
        mlp, cnn = MnistMLP(), CifarCNN()
    assert _n_params(mlp) == 1_238_730 and mlp.feature_dim == 784
    assert _n_params(cnn) == 38_606_730 and cnn.feature_dim == 3072 and cnn.padding == 0


@pytest.mark.parametrize("make, shape", [
    (lambda g: MnistMLP(1, 8, 10, generator=g), (5, 1, 8, 8)),
    (lambda g: MnistMLP(3, 16, 7, hidden=32, generator=g), (5, 3, 16, 16)),
    (lambda g: CifarCNN(1, 8, 10, widths=(8, 16, 32), hidden=24, generator=g), (5, 1, 8, 8)),
    (lambda g: CifarCNN(3, 16, 7, widths=(8, 16, 32), hidden=24, generator=g), (5, 3, 16, 16)),
    (lambda g: CifarCNN(3, 32, 10, widths=(4, 8, 16), hidden=24, generator=g), (5, 3, 32, 32)),
])
def test_shapes_and_feature_head_split(make, shape):
    model = make(torch.Generator().manual_seed(0))
    assert isinstance(model, SplitClassifier)
    x = torch.rand(shape, generator=torch.Generator().manual_seed(1))
    z = model.features(x)
    assert z.shape == (shape[0], model.feature_dim)
    assert (z >= 0).all()  # the features end in a ReLU
    logits = model(x)
    assert logits.shape == (shape[0], model.num_classes)
    torch.testing.assert_close(logits, model.head(z), rtol=0, atol=0)
    assert len(model.head) == 1 and isinstance(model.head[0], torch.nn.Linear)


def test_paper_cnn_spatial_shapes_without_padding():
    """HCR paper Sec. 3.2: 32x30x30 -> 32x15x15 -> (conv k5) 11x11 -> (pool 3) 3x3 -> (conv k3) 1x1, no padding."""
    model = CifarCNN(3, 32, 10, widths=(4, 8, 16), hidden=8, padding=0)
    x = torch.rand(2, 3, 32, 32)
    shapes = []
    for layer in model.features:
        x = layer(x)
        shapes.append(tuple(x.shape[1:]))
    assert shapes[:9] == [(4, 30, 30), (4, 30, 30), (4, 15, 15), (8, 11, 11), (8, 11, 11), (8, 3, 3),
                          (16, 1, 1), (16, 1, 1), (16,)]


def test_generator_init_is_deterministic_and_default_like():
    a = MnistMLP(1, 8, 10, generator=torch.Generator().manual_seed(3))
    b = MnistMLP(1, 8, 10, generator=torch.Generator().manual_seed(3))
    c = MnistMLP(1, 8, 10, generator=torch.Generator().manual_seed(4))
    for pa, pb in zip(a.parameters(), b.parameters()):
        assert torch.equal(pa, pb)
    assert not torch.equal(a.features[1].weight, c.features[1].weight)
    w = a.features[1].weight
    assert w.abs().max() <= 1 / 8 and w.abs().max() > 0.9 / 8  # uniform in +-1/sqrt(64)


@pytest.mark.parametrize("kwargs", [
    {"image_size": 0}, {"in_channels": -1}, {"num_classes": 1}, {"hidden": 0}, {"image_size": 2.5},
])
def test_mlp_rejects_bad_sizes(kwargs):
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        MnistMLP(**kwargs)


@pytest.mark.parametrize("kwargs, name", [
    ({"image_size": 20, "padding": 0}, "image_size"), ({"image_size": 5}, "image_size"),
    ({"widths": (4, 8)}, "widths"), ({"widths": (4, 0, 8)}, "widths"), ({"padding": 1}, "padding"),
    ({"num_classes": 1}, "num_classes"),
])
def test_cnn_rejects_bad_sizes(kwargs, name):
    with pytest.raises(ValueError, match=name):
        CifarCNN(**kwargs)
