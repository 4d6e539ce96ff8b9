"""Unit tests of compendium.train: learning on the 8x8 digits, determinism, dithered accuracy, validation."""
from __future__ import annotations

import pytest
import torch
from torch import nn

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


def test_on_epoch_records_values_without_changing_the_run(digits):
    """fit's on_epoch callback: its values join the history once per epoch, it sees the model in eval mode without
    gradients, and the trained weights are those of the same run without it."""
    (xtr, ytr), (xte, yte) = digits
    seen = []

    def held_out(model):
        seen.append((model.training, torch.is_grad_enabled()))
        return {"test accuracy": train.accuracy(model, xte, yte, device="cpu")}

    def run(on_epoch):
        m = MnistMLP(1, 8, 10, hidden=16, generator=torch.Generator().manual_seed(0))
        h = train.fit(m, lambda net, b: nn.functional.cross_entropy(net(b[0]), b[1]), (xtr[:300], ytr[:300]),
                      epochs=3, optimizer="adam", generator=torch.Generator().manual_seed(1), device="cpu",
                      progress=False, on_epoch=on_epoch)
        return m, h

    (a, ha), (b, hb) = run(held_out), run(None)
    assert seen == [(False, False)] * 3 and a.training
    assert len(ha["test accuracy"]) == 3 and ha["test accuracy"][-1] > ha["test accuracy"][0]
    assert ha["loss"] == hb["loss"] and all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))


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


# ---------------------------------------------------------------------------------------------------------------
# fit_linear_heads: the batched variant for many small heads
# ---------------------------------------------------------------------------------------------------------------
def _head_problem(K=3, N=6, F=5, C=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(K, N, F, generator=g)
    y = torch.randint(C, (K, N), generator=g)
    return x, y


@pytest.mark.parametrize("min_heads", [1, 10 ** 9], ids=["heads-last", "heads-first"])
def test_linear_heads_equal_one_torch_sgd_per_head(monkeypatch, min_heads):
    """Full-batch GD of K heads at once, in either layout of the Gram-matrix descent, equals K separate nn.Linear
    heads trained by torch.optim.SGD(weight_decay) on cross-entropy, started from the same initial weights."""
    monkeypatch.setattr(train, "ELEMENTWISE_GRAM_MIN_HEADS", min_heads)
    x, y = _head_problem()
    heads = train.fit_linear_heads(x, y, num_classes=3, steps=7, lr=0.3, weight_decay=1e-2, init_std=0.5,
                                   generator=torch.Generator().manual_seed(1), device="cpu")
    init = torch.randn(3, 3, 5, generator=torch.Generator().manual_seed(1)) * 0.5
    for k in range(3):
        layer = torch.nn.Linear(5, 3)
        with torch.no_grad():
            layer.weight.copy_(init[k])
            layer.bias.zero_()
        opt = torch.optim.SGD(layer.parameters(), lr=0.3, weight_decay=1e-2)
        for _ in range(7):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(layer(x[k]), y[k]).backward()
            opt.step()
        torch.testing.assert_close(heads.weight[k], layer.weight.detach(), rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(heads.bias[k], layer.bias.detach(), rtol=1e-5, atol=1e-6)
    flat = heads.flat()
    assert flat.shape == (3, 3 * 5 + 3)
    torch.testing.assert_close(flat[1], torch.cat([heads.weight[1].flatten(), heads.bias[1]]))
    back = train.LinearHeads.unflatten(flat, 5)
    assert torch.equal(back.weight, heads.weight) and torch.equal(back.bias, heads.bias)
    with pytest.raises(ValueError, match=r"allowed: \(K, classes \* \(4 \+ 1\)\)"):
        train.LinearHeads.unflatten(flat, 4)


def test_linear_heads_layouts_agree_on_large_logits(monkeypatch):
    """Logits in the hundreds (exp overflows float32 from 89 on), with weight decay (the heads-last layout scales the
    logits by decay^t after the product): both layouts subtract the maximum before the exponential, stay finite and
    agree."""
    x, y = _head_problem(K=5, N=8, F=4, C=4, seed=2)
    options = dict(num_classes=4, steps=5, lr=1.0, weight_decay=0.05, init_std=30.0, device="cpu")
    layouts = []
    for min_heads in (1, 10 ** 9):
        monkeypatch.setattr(train, "ELEMENTWISE_GRAM_MIN_HEADS", min_heads)
        layouts.append(train.fit_linear_heads(20 * x, y, generator=torch.Generator().manual_seed(0), **options))
    assert float(layouts[0].logits(20 * x[0]).abs().max()) > 200
    assert torch.isfinite(layouts[0].weight).all()
    torch.testing.assert_close(layouts[0].weight, layouts[1].weight, rtol=1e-5, atol=1e-3)


def _torch_heads(x, y, init, make_optimizer, steps, batches=None):
    """Each head k as an nn.Linear from init[k] (zero bias), trained on cross-entropy by ``make_optimizer(params)``
    for ``steps`` steps, step t on the examples ``batches[k][t]`` (all of them by default)."""
    layers = []
    for k in range(len(init)):
        layer = torch.nn.Linear(init.shape[2], init.shape[1])
        with torch.no_grad():
            layer.weight.copy_(init[k])
            layer.bias.zero_()
        opt = make_optimizer(layer.parameters())
        for t in range(steps):
            rows = slice(None) if batches is None else batches[k][t]
            opt.zero_grad()
            torch.nn.functional.cross_entropy(layer(x[k][rows]), y[k][rows]).backward()
            opt.step()
        layers.append(layer)
    return layers


def test_linear_heads_with_adam_equal_torch_adam_per_head():
    """optimizer="adam" (full batch) equals torch.optim.Adam(weight_decay) on one nn.Linear per head."""
    x, y = _head_problem()
    heads = train.fit_linear_heads(x, y, num_classes=3, steps=6, lr=0.05, weight_decay=1e-2, init_std=0.5,
                                   optimizer="adam", generator=torch.Generator().manual_seed(1), device="cpu")
    init = torch.randn(3, 3, 5, generator=torch.Generator().manual_seed(1)) * 0.5
    layers = _torch_heads(x, y, init, lambda p: torch.optim.Adam(p, lr=0.05, weight_decay=1e-2), steps=6)
    for k, layer in enumerate(layers):
        torch.testing.assert_close(heads.weight[k], layer.weight.detach(), rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(heads.bias[k], layer.bias.detach(), rtol=1e-5, atol=1e-6)


def test_linear_heads_with_mini_batches_equal_torch_sgd_on_the_same_permutations():
    """batch_size=B: every N / B steps a permutation drawn after the initial weights (argsort of uniform keys), cut
    into consecutive batches of B; each step SGD on its batch's mean loss."""
    x, y = _head_problem(N=6)
    B, steps = 3, 5
    heads = train.fit_linear_heads(x, y, num_classes=3, steps=steps, lr=0.3, weight_decay=1e-2, init_std=0.5,
                                   batch_size=B, generator=torch.Generator().manual_seed(1), device="cpu")
    g = torch.Generator().manual_seed(1)
    init = torch.randn(3, 3, 5, generator=g) * 0.5
    batches = [[] for _ in range(3)]
    for t in range(steps):
        if t % 2 == 0:
            order = torch.rand(3, 6, generator=g).argsort(1)
        for k in range(3):
            batches[k].append(order[k, (t % 2) * B:(t % 2 + 1) * B])
    layers = _torch_heads(x, y, init, lambda p: torch.optim.SGD(p, lr=0.3, weight_decay=1e-2), steps, batches)
    for k, layer in enumerate(layers):
        torch.testing.assert_close(heads.weight[k], layer.weight.detach(), rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(heads.bias[k], layer.bias.detach(), rtol=1e-5, atol=1e-6)


def test_linear_heads_without_shuffling_take_the_batches_in_order():
    """shuffle=False: the examples in their given order every epoch (a DataLoader without shuffling), no draws."""
    x, y = _head_problem(N=6)
    B, steps = 3, 5
    heads = train.fit_linear_heads(x, y, num_classes=3, steps=steps, lr=0.3, weight_decay=1e-2, init_std=0.5,
                                   batch_size=B, shuffle=False, generator=torch.Generator().manual_seed(1),
                                   device="cpu")
    init = torch.randn(3, 3, 5, generator=torch.Generator().manual_seed(1)) * 0.5
    batches = [[torch.arange(t % 2 * B, (t % 2 + 1) * B) for t in range(steps)] for _ in range(3)]
    layers = _torch_heads(x, y, init, lambda p: torch.optim.SGD(p, lr=0.3, weight_decay=1e-2), steps, batches)
    for k, layer in enumerate(layers):
        torch.testing.assert_close(heads.weight[k], layer.weight.detach(), rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(heads.bias[k], layer.bias.detach(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_dp_linear_head_step_equals_opacus(seed):
    """One DP-SGD step of a head equals opacus' (GradSampleModule + DPOptimizer, expected batch q N, mean loss) on the
    same Poisson batch and the same noise draw: opacus draws its noise from a generator at the state ours has after
    the initial weights and the batch mask."""
    from opacus import GradSampleModule
    from opacus.optimizers import DPOptimizer

    N, F, C, q, clip, sigma, lr, wd = 8, 5, 3, 0.5, 0.7, 1.3, 0.2, 1e-3
    x, y = _head_problem(K=1, N=N, F=F, C=C, seed=seed)
    heads = train.fit_linear_heads(x, y, num_classes=C, steps=1, lr=lr, weight_decay=wd, init_std=0.3,
                                   generator=torch.Generator().manual_seed(seed), noise_multiplier=sigma,
                                   max_grad_norm=clip, sample_rate=q, device="cpu")
    g = torch.Generator().manual_seed(seed)
    init = torch.randn(1, C, F, generator=g) * 0.3
    mask = torch.rand(1, N, generator=g)[0] < q
    layer = torch.nn.Linear(F, C)
    with torch.no_grad():
        layer.weight.copy_(init[0])
        layer.bias.zero_()
    model = GradSampleModule(layer)
    opt = DPOptimizer(torch.optim.SGD(model.parameters(), lr=lr, weight_decay=wd), noise_multiplier=sigma,
                      max_grad_norm=clip, expected_batch_size=int(q * N), generator=g)
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x[0][mask]), y[0][mask], reduction="sum") / mask.sum()
    loss.backward()
    opt.step()
    torch.testing.assert_close(heads.weight[0], layer.weight.detach(), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(heads.bias[0], layer.bias.detach(), rtol=1e-5, atol=1e-6)


def test_dp_heads_reduce_to_gd_without_noise_clipping_or_sampling():
    x, y = _head_problem()
    kwargs = dict(num_classes=3, steps=4, lr=0.1, weight_decay=0.0, init_std=0.1, device="cpu")
    plain = train.fit_linear_heads(x, y, generator=torch.Generator().manual_seed(3), **kwargs)
    # q = 1 draws a mask that keeps everything; a huge clipping norm never clips; sigma = 0 adds nothing
    private = train.fit_linear_heads(x, y, generator=torch.Generator().manual_seed(3), noise_multiplier=0.0,
                                     max_grad_norm=1e9, sample_rate=1.0, **kwargs)
    torch.testing.assert_close(plain.weight, private.weight, rtol=1e-5, atol=1e-7)


def test_linear_heads_are_deterministic_and_learn():
    x, y = _head_problem(K=4, N=20, F=6, C=2, seed=5)
    x = x + 2.0 * torch.nn.functional.one_hot(y, 6).float()  # separable: class c raises feature c
    kwargs = dict(num_classes=2, steps=200, lr=0.5, weight_decay=0.0, init_std=0.01, device="cpu")
    a = train.fit_linear_heads(x, y, generator=torch.Generator().manual_seed(0), **kwargs)
    b = train.fit_linear_heads(x, y, generator=torch.Generator().manual_seed(0), **kwargs)
    assert torch.equal(a.weight, b.weight)
    assert float(a.accuracy(x[0], y[0])[0]) == 1.0


@pytest.mark.parametrize("kwargs, message", [
    (dict(steps=0), "steps=0"),
    (dict(lr=-1.0), "lr=-1.0"),
    (dict(noise_multiplier=-0.5, max_grad_norm=1.0), "noise_multiplier=-0.5"),
    (dict(noise_multiplier=1.0, max_grad_norm=1.0, sample_rate=1.5), "sample_rate=1.5"),
    (dict(max_grad_norm=1.0), "allowed only with a noise_multiplier"),
    (dict(num_classes=2), "labels in"),
    (dict(optimizer="rmsprop"), "optimizer"),
    (dict(lr=2.0, weight_decay=0.5), "lr \\* weight_decay < 1"),
    (dict(batch_size=4), "batch_size=4"),
    (dict(batch_size=3, noise_multiplier=1.0, max_grad_norm=1.0), "batch_size=3"),
    (dict(shuffle=False), "shuffle=False"),
])
def test_linear_heads_refuse_bad_input(kwargs, message):
    x, y = _head_problem()
    options = dict(num_classes=3, steps=2, lr=0.1, weight_decay=0.0, init_std=0.1,
                   generator=torch.Generator().manual_seed(0), device="cpu") | kwargs
    with pytest.raises(ValueError, match=message):
        train.fit_linear_heads(x, y, **options)


# ---------------------------------------------------------------------------------------------------------------
# fit_binary_heads: Table 6's two-layer binary heads, batched
# ---------------------------------------------------------------------------------------------------------------
def test_binary_heads_equal_one_torch_sgd_per_head():
    """K two-layer heads at once equal K nn.Sequential(Linear, ReLU, Linear) heads trained by
    torch.optim.SGD(weight_decay) on BCEWithLogitsLoss(pos_weight), from the same initial weights (W1, then w2)."""
    K, N, F, H = 3, 10, 6, 4
    g = torch.Generator().manual_seed(0)
    x = torch.randn(K, N, F, generator=g)
    y = (torch.rand(K, N, generator=g) < 0.4).float()
    heads = train.fit_binary_heads(x, y, hidden=H, steps=7, lr=0.3, weight_decay=1e-2, init_std=0.5,
                                   generator=torch.Generator().manual_seed(1), pos_weight=3.0, device="cpu")
    init = torch.Generator().manual_seed(1)
    w1, w2 = torch.randn(K, H, F, generator=init) * 0.5, torch.randn(K, H, generator=init) * 0.5
    for k in range(K):
        net = nn.Sequential(nn.Linear(F, H), nn.ReLU(), nn.Linear(H, 1))
        with torch.no_grad():
            net[0].weight.copy_(w1[k])
            net[2].weight.copy_(w2[k][None])
            net[0].bias.zero_()
            net[2].bias.zero_()
        opt = torch.optim.SGD(net.parameters(), lr=0.3, weight_decay=1e-2)
        loss = nn.BCEWithLogitsLoss(pos_weight=torch.tensor(3.0))
        for _ in range(7):
            opt.zero_grad()
            loss(net(x[k])[:, 0], y[k]).backward()
            opt.step()
        expected = torch.cat([p.detach().flatten() for p in net.parameters()])
        torch.testing.assert_close(heads.flat()[k], expected, rtol=1e-5, atol=1e-6)


def test_binary_heads_flatten_order_and_canonical_form():
    g = torch.Generator().manual_seed(2)
    x = torch.randn(4, 12, 5, generator=g)
    y = (x[..., 0] > 0).float()
    heads = train.fit_binary_heads(x, y, hidden=6, steps=300, lr=0.5, weight_decay=0.0, init_std=0.3,
                                   generator=torch.Generator().manual_seed(0), device="cpu")
    flat = heads.flat()
    assert flat.shape == (4, 6 * 5 + 2 * 6 + 1)
    assert torch.equal(train.BinaryHeads.unflatten(flat, 5).flat(), flat)
    own = torch.stack([heads.accuracy(x[k], y[k])[k] for k in range(4)])
    assert (own >= 0.9).all(), own  # every head learns its own set
    canonical = heads.canonical()
    assert (canonical.w2.diff(dim=1) >= 0).all()  # hidden units in increasing output weight
    torch.testing.assert_close(canonical.logits(x[0]), heads.logits(x[0]))  # the same function
    with pytest.raises(ValueError, match="H \\* 5"):
        train.BinaryHeads.unflatten(flat[:, :-1], 5)


def test_binary_heads_loss_is_the_weighted_bce_of_each_head():
    g = torch.Generator().manual_seed(3)
    x = torch.randn(3, 8, 5, generator=g)
    y = (torch.rand(3, 8, generator=g) < 0.3).float()
    heads = train.fit_binary_heads(x, y, hidden=4, steps=5, lr=0.2, weight_decay=0.0, init_std=0.5,
                                   generator=torch.Generator().manual_seed(0), device="cpu")
    z = torch.stack([heads.logits(x[k])[k] for k in range(3)])
    by_hand = -(10 * y * torch.log(torch.sigmoid(z)) + (1 - y) * torch.log(1 - torch.sigmoid(z))).mean(1)
    torch.testing.assert_close(heads.loss(x, y, pos_weight=10.0), by_hand)


def test_binary_heads_restart_rule_retrains_only_the_heads_above_the_loss():
    """The authors' CelebA restart rule: heads whose training loss stays at restart_loss or more are trained again
    from a fresh draw; the others keep their first training, and more heads end below the loss."""
    g = torch.Generator().manual_seed(4)
    x = torch.randn(200, 10, 6, generator=g)
    y = torch.zeros(200, 10)
    y[:, 0] = 1.0
    options = dict(hidden=4, steps=100, lr=0.3, weight_decay=0.0, init_std=0.05, pos_weight=10.0, device="cpu")
    once = train.fit_binary_heads(x, y, generator=torch.Generator().manual_seed(0), **options)
    first = once.loss(x, y, 10.0)
    failed = first >= 0.05
    assert 0.1 < failed.double().mean() < 0.9  # the rule has heads to restart and heads to keep
    one_attempt = train.fit_binary_heads(x, y, generator=torch.Generator().manual_seed(0), restart_loss=0.05,
                                         **options)
    assert torch.equal(one_attempt.flat(), once.flat())  # max_attempts=1: the plain training
    restarted = train.fit_binary_heads(x, y, generator=torch.Generator().manual_seed(0), restart_loss=0.05,
                                       max_attempts=10, **options)
    assert torch.equal(restarted.flat()[~failed], once.flat()[~failed])
    assert not torch.equal(restarted.flat()[failed], once.flat()[failed])
    assert (restarted.loss(x, y, 10.0) < 0.05).sum() > (first < 0.05).sum()
    with pytest.raises(ValueError, match="max_attempts=3 without restart_loss"):
        train.fit_binary_heads(x, y, generator=torch.Generator().manual_seed(0), max_attempts=3, **options)


@pytest.mark.parametrize("change, message", [
    (dict(targets=torch.full((2, 3), 2.0)), "0/1 values"),
    (dict(hidden=0), "hidden=0"),
    (dict(pos_weight=0.0), "pos_weight=0.0"),
])
def test_binary_heads_refuse_bad_input(change, message):
    options = dict(features=torch.zeros(2, 3, 4), targets=torch.zeros(2, 3), hidden=2, steps=1, lr=0.1,
                   weight_decay=0.0, init_std=0.1, generator=torch.Generator().manual_seed(0), device="cpu") | change
    with pytest.raises(ValueError, match=message):
        train.fit_binary_heads(**options)


def test_fused_adam_refused_for_sgd():
    with pytest.raises(ValueError, match="fused=True"):
        train.fit(nn.Linear(2, 1), lambda net, b: net(b[0]).sum(), (torch.zeros(4, 2),), epochs=1, optimizer="sgd",
                  fused=True, progress=False)


class _Interrupted(RuntimeError):
    pass


def _noisy_run(x, y, checkpoint=None, stop_after=None, **options):
    """A fit whose loss draws from the generator every batch (as the reconstructor's does), with counts and an
    on_epoch curve; it raises after ``stop_after`` steps, as a lost session would stop it."""
    model = MnistMLP(1, 8, 10, hidden=16, generator=torch.Generator().manual_seed(0))
    generator = torch.Generator().manual_seed(1)
    calls = []

    def loss_fn(net, batch):
        if stop_after is not None and len(calls) == stop_after:
            raise _Interrupted
        calls.append(1)
        noise = torch.randn(batch[0].shape, generator=generator)
        logits = net(batch[0] + 0.1 * noise)
        return nn.functional.cross_entropy(logits, batch[1]), {"accuracy": int((logits.argmax(1) == batch[1]).sum())}

    history = train.fit(model, loss_fn, (x, y), epochs=3, optimizer="adam", batch_size=32, generator=generator,
                        device="cpu", progress=False, fused=True, checkpoint=checkpoint,
                        on_epoch=lambda net: {"mean weight": float(net.head[0].weight.mean())}, **options)
    return model, history, len(calls)


@pytest.mark.parametrize("stop_after", [5, 7, 10, 17])  # mid-epoch, at an epoch's end (7 batches), later epochs
def test_fit_resumes_from_its_checkpoint_bit_identically(digits, tmp_path, stop_after):
    """A run interrupted after ``stop_after`` steps and called again resumes from its last checkpoint (every 3 steps)
    and ends with the uninterrupted run's weights and history, bit for bit; a finished run is loaded, not re-run."""
    (xtr, ytr), _ = digits
    x, y = xtr[:200], ytr[:200]
    plain, plain_history, _ = _noisy_run(x, y)
    path = tmp_path / "run.pt"
    with pytest.raises(_Interrupted):
        _noisy_run(x, y, checkpoint=path, stop_after=stop_after, checkpoint_steps=3)
    assert path.is_file() and not (tmp_path / "run.pt.part").exists()
    resumed, history, steps = _noisy_run(x, y, checkpoint=path, checkpoint_steps=3)
    assert steps == 21 - stop_after // 3 * 3  # only the steps after the last checkpoint are repeated
    assert history == plain_history
    assert all(torch.equal(p, q) for p, q in zip(plain.parameters(), resumed.parameters()))
    again, history, steps = _noisy_run(x, y, checkpoint=path, checkpoint_steps=3)
    assert steps == 0 and history == plain_history
    assert all(torch.equal(p, q) for p, q in zip(plain.parameters(), again.parameters()))


def test_fit_refuses_a_checkpoint_of_other_settings(digits, tmp_path):
    (xtr, ytr), _ = digits
    path = tmp_path / "run.pt"
    _noisy_run(xtr[:64], ytr[:64], checkpoint=path)
    with pytest.raises(ValueError, match="other settings"):
        _noisy_run(xtr[:96], ytr[:96], checkpoint=path)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(xtr[:64], ytr[:64]), batch_size=16)
    with pytest.raises(ValueError, match="checkpoint only"):
        train.fit(nn.Linear(64, 10), lambda net, b: net(b[0].flatten(1)).sum(), loader, epochs=1, checkpoint=path)
