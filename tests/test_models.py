"""Unit tests of compendium.models: the HCR chapter's split classifiers (shapes, split, paper sizes, init) and the
transfer-learning chapter's VGGTiny."""
from __future__ import annotations

import pytest
import torch

from compendium import train
from compendium.models import CifarCNN, MnistMLP, SplitClassifier, VGGTiny


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


# ------------------------------------------------------------------------- VGGTiny (transfer-learning paper App. D.1)
def test_vggtiny_paper_size_and_layers():
    """App. D.1: VGG-11 with channels / 16 (4, 8, 16, 16, 32, 32, 32, 32), FC 256-256-26: 240,010 parameters; the
    convolutions at the indices of the authors' VGGNet.features, 32 -> 16 -> 8 -> 4 px before the 512-wide flatten."""
    model = VGGTiny()
    assert isinstance(model, SplitClassifier) and _n_params(model) == 240_010
    assert (model.feature_dim, model.num_classes, model.in_channels, model.image_size) == (256, 26, 1, 32)
    convs = {i: m.out_channels for i, m in enumerate(model.features) if isinstance(m, torch.nn.Conv2d)}
    assert convs == {0: 4, 2: 8, 5: 16, 7: 16, 9: 32, 11: 32, 14: 32, 16: 32}
    assert [i for i, m in enumerate(model.features) if isinstance(m, torch.nn.MaxPool2d)] == [4, 13, 18]
    assert model.features[20].in_features == 512 and len(model.head) == 1


def test_vggtiny_features_and_logits():
    model = VGGTiny(generator=torch.Generator().manual_seed(0))
    x = torch.rand(4, 1, 32, 32, generator=torch.Generator().manual_seed(1)) * 2 - 1
    z = model.features(x)
    assert z.shape == (4, 256) and (z >= 0).all() and (z > 0).any()  # post-ReLU of the second hidden layer
    logits = model(x)
    assert logits.shape == (4, 26)
    torch.testing.assert_close(logits, model.head(z), rtol=0, atol=0)


def test_vggtiny_init_is_the_authors_and_deterministic():
    """Convolutions kaiming_normal_(fan_out, relu): std sqrt(2 / (9 c_out)); linear weights N(0, 0.01^2); biases 0."""
    a, b, c = (VGGTiny(generator=torch.Generator().manual_seed(s)) for s in (3, 3, 4))
    for pa, pb in zip(a.parameters(), b.parameters()):
        assert torch.equal(pa, pb)
    assert not torch.equal(a.features[0].weight, c.features[0].weight)
    conv, fc = a.features[16].weight, a.features[20].weight  # 32 x 32 x 3 x 3 and 256 x 512
    assert abs(conv.std().item() / (2 / (9 * 32)) ** 0.5 - 1) < 0.05
    assert abs(fc.std().item() / 0.01 - 1) < 0.02 and abs(fc.mean().item()) < 1e-3
    assert all((m.bias == 0).all() for m in a.modules() if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear)))


def test_vggtiny_fits_the_project_loop():
    """What train.train_classifier and train.accuracy need, at the 8x8 book-scale size: logits from model(x) with a
    gradient on every parameter, and features / head for the dithered accuracy.  (No optimiser here: its first use
    imports torch._dynamo, about a second.)"""
    g = torch.Generator().manual_seed(0)
    model = VGGTiny(1, 8, 10, generator=g)
    x, y = torch.rand(16, 1, 8, 8, generator=g), torch.arange(16) % 10
    torch.nn.functional.cross_entropy(model(x), y).backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters())
    assert model.features[20].in_features == 32  # 8 -> 4 -> 2 -> 1 px
    assert 0 <= train.accuracy(model, x, y, feature_noise=0.1, generator=g) <= 1


def test_vggtiny_loads_the_authors_state_dict():
    """Their VGGNet's keys: features.* as ours, fc1.0 / fc2.0 / fc_top renamed."""
    source = VGGTiny(generator=torch.Generator().manual_seed(5))
    theirs = {}
    for key, value in source.state_dict().items():
        for ours, authors in (("features.20.", "fc1.0."), ("features.22.", "fc2.0."), ("head.0.", "fc_top.")):
            key = authors + key[len(ours):] if key.startswith(ours) else key
        theirs[key] = value
    assert "fc_top.weight" in theirs and "features.16.bias" in theirs
    model = VGGTiny()
    model.load_authors_state_dict(theirs)
    for pa, pb in zip(model.parameters(), source.parameters()):
        assert torch.equal(pa, pb)
    with pytest.raises(RuntimeError, match="head.0.extra"):
        model.load_authors_state_dict({**theirs, "fc_top.extra": torch.zeros(1)})


@pytest.mark.parametrize("kwargs, name", [
    ({"image_size": 7}, "image_size"), ({"num_classes": 1}, "num_classes"), ({"in_channels": 0}, "in_channels"),
    ({"generator": 0}, "generator"),
])
def test_vggtiny_rejects_bad_arguments(kwargs, name):
    with pytest.raises(ValueError, match=name):
        VGGTiny(**kwargs)


def _authors_reconstructor_state(in_features: int, s: int, channels: int) -> dict[str, torch.Tensor]:
    """A state dict with the names and shapes of the authors' ``models.Reconstructor`` at 32x32 (written from their
    module layout: ``convT``, ``model.<i>`` ResBlocks with ``conv1`` / ``conv2`` / ``conv_bypass``, each conv also
    listed under its place in the block's ``model`` Sequential, ``model.3`` BatchNorm, ``final`` also ``model.5``)."""
    g = torch.Generator().manual_seed(0)
    state = {}

    def conv(names, c_in, c_out, k, transposed=False):
        shape = (c_in, c_out, k, k) if transposed else (c_out, c_in, k, k)
        weight, bias = torch.randn(shape, generator=g), torch.randn(c_out, generator=g)
        for name in names:
            state.update({f"{name}.weight": weight, f"{name}.bias": bias})

    def norm(name, c):
        state.update({f"{name}.weight": torch.randn(c, generator=g), f"{name}.bias": torch.randn(c, generator=g),
                      f"{name}.running_mean": torch.randn(c, generator=g),
                      f"{name}.running_var": torch.rand(c, generator=g) + 0.5,
                      f"{name}.num_batches_tracked": torch.tensor(7)})

    conv(["convT"], in_features, 4 * s, 4, transposed=True)
    for i, (c_in, c_out) in enumerate([(4 * s, 2 * s), (2 * s, s), (s, s)]):
        norm(f"model.{i}.model.0", c_in)
        conv([f"model.{i}.conv1", f"model.{i}.model.3"], c_in, c_out, 3)
        norm(f"model.{i}.model.4", c_out)
        conv([f"model.{i}.conv2", f"model.{i}.model.6"], c_out, c_out, 3)
        conv([f"model.{i}.conv_bypass"] + ([f"model.{i}.bypass.1"] if c_in != c_out else []), c_in, c_out, 1)
    norm("model.3", s)
    conv(["final", "model.5"], s, channels, 3)
    return state


def test_residual_reconstructor_loads_the_authors_state_dict():
    """Every tensor lands where the authors' forward pass uses it; their unused S -> S 1x1 bypass is left out."""
    from compendium.models import ResidualReconstructor
    state = _authors_reconstructor_state(in_features=7, s=2, channels=1)
    model = ResidualReconstructor(7, width=2, out_channels=1, size=32)
    model.load_authors_state_dict(state)
    ours = model.state_dict()
    assert torch.equal(ours["stem.weight"], state["convT.weight"])
    assert torch.equal(ours["blocks.0.main.3.weight"], state["model.0.conv1.weight"])
    assert torch.equal(ours["blocks.1.main.4.running_var"], state["model.1.model.4.running_var"])
    assert torch.equal(ours["blocks.1.bypass.1.weight"], state["model.1.conv_bypass.weight"])
    assert len(model.blocks[2].bypass) == 1  # S -> S: upsampling only, as their forward pass
    assert torch.equal(ours["out.0.running_mean"], state["model.3.running_mean"])
    assert torch.equal(ours["out.2.weight"], state["final.weight"])
    model.eval()
    z = torch.randn(3, 7, generator=torch.Generator().manual_seed(1))
    x = torch.nn.functional.conv_transpose2d(z[:, :, None, None], state["convT.weight"], state["convT.bias"])
    torch.testing.assert_close(model.stem(z[:, :, None, None]), x)
    del state["final.weight"]
    with pytest.raises(KeyError, match="final.weight"):
        model.load_authors_state_dict(state)
