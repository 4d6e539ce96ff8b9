"""Unit tests of compendium.train: learning on the 8x8 digits, determinism, dithered accuracy, validation."""
from __future__ import annotations

import pytest
import torch

from compendium import data, train
from compendium.models import CifarCNN, MnistMLP


@pytest.fixture(scope="module")
def digits():
    return data.digits("train"), data.digits("test")


@pytest.fixture(scope="module")
def trained_mlp(digits):
    (xtr, ytr), _ = digits
    model = MnistMLP(1, 8, 10, generator=torch.Generator().manual_seed(0))
    history = train.train_classifier(model, (xtr, ytr), epochs=3, lr=3e-3, generator=torch.Generator().manual_seed(0),
                                     device="cpu", progress=False)
    return model, history


def test_mlp_learns_digits(trained_mlp, digits):
    """3 epochs of AdamW on 1,297 digits: measured 0.932 test accuracy; a broken loop stays near 0.1."""
    model, history = trained_mlp
    _, (xte, yte) = digits
    assert len(history["loss"]) == len(history["accuracy"]) == 3
    assert history["loss"][-1] < history["loss"][0]
    assert train.accuracy(model, xte, yte) > 0.85


def test_cnn_learns_digits(digits):
    (xtr, ytr), (xte, yte) = digits
    model = CifarCNN(1, 8, 10, widths=(16, 32, 64), hidden=64, generator=torch.Generator().manual_seed(0))
    train.train_classifier(model, (xtr, ytr), epochs=3, lr=3e-3, generator=torch.Generator().manual_seed(0),
                           device="cpu", progress=False)
    assert train.accuracy(model, xte, yte) > 0.7  # measured 0.838


def test_training_is_deterministic_given_generators(digits):
    (xtr, ytr), _ = digits
    x, y = xtr[:200], ytr[:200]

    def run(seed):
        m = MnistMLP(1, 8, 10, hidden=16, generator=torch.Generator().manual_seed(0))
        h = train.train_classifier(m, (x, y), epochs=2, generator=torch.Generator().manual_seed(seed), device="cpu",
                                   progress=False)
        return m, h

    (a, ha), (b, hb), (c, _) = run(1), run(1), run(2)
    assert ha == hb
    for pa, pb in zip(a.parameters(), b.parameters()):
        assert torch.equal(pa, pb)
    assert not torch.equal(a.head[0].weight, c.head[0].weight)  # the generator drives the shuffling


def test_dataloader_input_and_progress_bar(digits, capsys):
    (xtr, ytr), _ = digits
    ds = torch.utils.data.TensorDataset(xtr[:64], ytr[:64])
    loader = torch.utils.data.DataLoader(ds, batch_size=16, shuffle=True, generator=torch.Generator().manual_seed(0))
    model = MnistMLP(1, 8, 10, hidden=8, generator=torch.Generator().manual_seed(0))
    h = train.train_classifier(model, loader, epochs=2, optimizer="sgd", lr=0.05, progress=True)
    assert len(h["loss"]) == 2 and all(v > 0 for v in h["loss"])
    assert "training" in capsys.readouterr().err  # tqdm writes to stderr


def test_feature_noise_drops_accuracy_toward_chance(trained_mlp, digits):
    model, _ = trained_mlp
    _, (xte, yte) = digits
    rms = train.feature_rms(model, xte)
    assert rms > 0
    clean = train.accuracy(model, xte, yte)
    assert train.accuracy(model, xte, yte, feature_noise=0.0, generator=torch.Generator()) == clean
    small = train.accuracy(model, xte, yte, feature_noise=0.1 * rms, generator=torch.Generator().manual_seed(0))
    huge = train.accuracy(model, xte, yte, feature_noise=100 * rms, generator=torch.Generator().manual_seed(0))
    assert small > clean - 0.05
    assert huge < 0.2  # chance is 0.1
    again = train.accuracy(model, xte, yte, feature_noise=100 * rms, generator=torch.Generator().manual_seed(0))
    assert again == huge
    assert model.training  # accuracy restores the mode


@pytest.mark.parametrize("kwargs, name", [
    ({"epochs": 0}, "epochs"), ({"epochs": 1.5}, "epochs"), ({"lr": 0.0}, "lr"), ({"lr": float("nan")}, "lr"),
    ({"optimizer": "lbfgs"}, "optimizer"), ({"batch_size": 0}, "batch_size"), ({"weight_decay": -1.0}, "weight_decay"),
    ({"device": "tpu"}, "device"),
])
def test_train_rejects_bad_arguments(kwargs, name):
    model = MnistMLP(1, 8, 10, hidden=4)
    args = {"epochs": 1, **kwargs}
    with pytest.raises(ValueError, match=name):
        train.train_classifier(model, (torch.rand(4, 1, 8, 8), torch.zeros(4, dtype=torch.long)), progress=False,
                               **args)


def test_train_and_accuracy_reject_bad_data():
    model = MnistMLP(1, 8, 10, hidden=4)
    x = torch.rand(4, 1, 8, 8)
    with pytest.raises(ValueError, match="labels"):
        train.train_classifier(model, (x, torch.zeros(3, dtype=torch.long)), 1, progress=False)
    with pytest.raises(ValueError, match="integer"):
        train.train_classifier(model, (x, torch.zeros(4)), 1, progress=False)
    with pytest.raises(ValueError, match="feature_noise"):
        train.accuracy(model, x, torch.zeros(4, dtype=torch.long), feature_noise=-1.0)
    plain = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 10))
    with pytest.raises(ValueError, match="features"):
        train.accuracy(plain, x, torch.zeros(4, dtype=torch.long), feature_noise=1.0)
    assert 0.0 <= train.accuracy(plain, x, torch.zeros(4, dtype=torch.long)) <= 1.0
