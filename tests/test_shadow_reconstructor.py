"""Unit tests of compendium.attacks.shadow_reconstructor (Maciazek & Allison 2025): balanced sets, weight statistics
and the surrogate, the soft-min loss Eq. (3), Algorithm 3's tables, the thresholds and rates."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from compendium.attacks import shadow_reconstructor as attack
from compendium.models import MLPReconstructor, ResidualReconstructor


def test_balanced_sets_are_balanced_distinct_and_uniform():
    labels = torch.arange(40) % 4  # 10 images of each of 4 classes
    sets = attack.balanced_sets(labels, per_class=3, count=4000, num_classes=4,
                                generator=torch.Generator().manual_seed(0))
    assert sets.shape == (4000, 4, 3)
    assert torch.equal(labels[sets], torch.arange(4)[None, :, None].expand(4000, 4, 3))
    assert all(len(set(s.tolist())) == 3 for s in sets[:200, 2])  # without replacement
    counts = torch.bincount(sets[:, 1].flatten(), minlength=40)[labels == 1].double()
    expected = 4000 * 3 / 10  # each class-1 image is in a set with probability 3/10
    assert torch.all((counts - expected).abs() < 5 * np.sqrt(expected * 0.7))
    with pytest.raises(ValueError, match="class 0 has 10 images"):
        attack.balanced_sets(labels, per_class=11, count=1, num_classes=4, generator=torch.Generator())
    with pytest.raises(ValueError, match="generator=None"):
        attack.balanced_sets(labels, per_class=1, count=1, num_classes=4, generator=None)


def test_disjoint_sets_are_balanced_and_share_no_image():
    """The authors' validation sets: the smallest class (7 images) over M = 2 gives 3 sets, no image twice."""
    labels = torch.tensor([0] * 8 + [1] * 9 + [2] * 8 + [3] * 7)[torch.randperm(32, generator=torch.Generator())]
    assert attack.disjoint_set_count(labels, per_class=2, num_classes=4) == 3
    sets = attack.disjoint_balanced_sets(labels, per_class=2, count=3, num_classes=4,
                                         generator=torch.Generator().manual_seed(0))
    assert sets.shape == (3, 4, 2) and len(set(sets.flatten().tolist())) == 24
    assert torch.equal(labels[sets], torch.arange(4)[None, :, None].expand(3, 4, 2))
    with pytest.raises(ValueError, match="at most 3 sets"):
        attack.disjoint_balanced_sets(labels, per_class=2, count=4, num_classes=4, generator=torch.Generator())


def test_one_vs_rest_sets_draw_one_identity_against_the_others():
    """The CelebA sets: M distinct images of one identity with more than M images (uniform over those identities),
    and 9M images of the other identities drawn uniformly with replacement."""
    labels = torch.tensor([7] * 2 + [3] * 30 + [5] * 9 + [11] * 4)[torch.randperm(45, generator=torch.Generator()
                                                                              .manual_seed(0))]
    sets = attack.one_vs_rest_sets(labels, positives=2, count=6000, generator=torch.Generator().manual_seed(1))
    assert sets.shape == (6000, 10, 2)
    identity = labels[sets[:, 0, 0]]
    assert (labels[sets[:, 0]] == identity[:, None]).all() and (sets[:, 0, 0] != sets[:, 0, 1]).all()
    assert (labels[sets[:, 1:]] != identity[:, None, None]).all()
    counts = torch.bincount(identity, minlength=12)
    assert counts[7] == 0 and all(abs(counts[i] - 2000) < 5 * 40 for i in (3, 5, 11))  # 7 has only M = 2 images
    # identity 3's negatives are uniform over the 15 other images (with replacement: repeats within a set occur)
    negatives = sets[identity == 3, 1:].flatten()
    share = torch.bincount(negatives, minlength=45)[labels != 3].double() / len(negatives)
    assert torch.all((share - 1 / 15).abs() < 5 * (1 / 15 / len(negatives)) ** 0.5)
    assert (sets[identity == 3, 1:].flatten(1).sort(1).values.diff(1) == 0).any()
    again = attack.one_vs_rest_sets(labels, positives=2, count=6000, generator=torch.Generator().manual_seed(1))
    assert torch.equal(sets, again)
    with pytest.raises(ValueError, match="no identity has more than positives=30"):
        attack.one_vs_rest_sets(labels, positives=30, count=1, generator=torch.Generator())
    with pytest.raises(ValueError, match="the pool holds one identity"):
        attack.one_vs_rest_sets(torch.zeros(5, dtype=torch.long), positives=2, count=1, generator=torch.Generator())


def test_weight_statistics_standardise_and_surrogate_moments():
    g = torch.Generator().manual_seed(0)
    mix = torch.tensor([[1.0, 0.0, 0.0], [0.8, 0.6, 0.0], [0.0, 0.0, 2.0]])
    weights = torch.randn(20_000, 3, generator=g, dtype=torch.float64) @ mix.double().T + 5.0
    stats = attack.WeightStatistics.fit(weights)
    z = stats.standardise(weights).double()
    torch.testing.assert_close(z.mean(0), torch.zeros(3, dtype=torch.float64), atol=1e-5, rtol=0)
    torch.testing.assert_close(z.std(0, unbiased=False), torch.ones(3, dtype=torch.float64), atol=1e-5, rtol=0)
    torch.testing.assert_close(stats.correlation.diagonal(), torch.ones(3, dtype=torch.float64))
    assert abs(float(stats.correlation[0, 1]) - 0.8) < 0.02  # corr of (a, 0.8 a + 0.6 b)
    draws = stats.surrogate(50_000, torch.Generator().manual_seed(1)).double()
    sample_corr = torch.corrcoef(draws.T)
    torch.testing.assert_close(sample_corr, stats.correlation, atol=0.02, rtol=0)


def test_softmin_reference_value_limits_and_bracket():
    errors = torch.tensor([0.1, 0.2], dtype=torch.float64)
    assert float(attack.softmin_loss(errors, 100.0)) == pytest.approx(0.1000045, abs=1e-7)
    assert float(attack.softmin_loss(errors, 1e-9)) == pytest.approx(0.15, abs=1e-9)
    assert float(attack.softmin_loss(errors, 1e6)) == pytest.approx(0.1, abs=1e-9)
    g = torch.Generator().manual_seed(0)
    many = torch.rand(500, 7, generator=g)
    loss = attack.softmin_loss(many, 10.0)
    assert torch.all(loss >= many.min(1).values - 1e-7) and torch.all(loss <= many.mean(1) + 1e-7)
    perm = torch.randperm(7, generator=g)
    torch.testing.assert_close(attack.softmin_loss(many[:, perm], 10.0), loss)
    with pytest.raises(ValueError, match="alpha=-1"):
        attack.softmin_loss(errors, -1.0)


def test_softmin_gradient_identity_against_finite_differences():
    """dL/dl_j = w_j (1 - alpha (l_j - L)) with w = softmax(-alpha l): autograd, the identity and central differences
    agree."""
    alpha = 7.0
    errors = torch.tensor([0.31, 0.12, 0.55, 0.13], dtype=torch.float64, requires_grad=True)
    loss = attack.softmin_loss(errors, alpha)
    (grad,) = torch.autograd.grad(loss, errors)
    w = torch.softmax(-alpha * errors.detach(), 0)
    identity = w * (1 - alpha * (errors.detach() - loss.detach()))
    torch.testing.assert_close(grad, identity, rtol=1e-12, atol=1e-14)
    h = 1e-6
    for j in range(4):
        step = torch.zeros(4, dtype=torch.float64)
        step[j] = h
        fd = (attack.softmin_loss(errors.detach() + step, alpha) - attack.softmin_loss(errors.detach() - step, alpha))
        assert float(fd / (2 * h)) == pytest.approx(float(identity[j]), rel=1e-7)


def test_min_mse_table_uses_each_class_and_its_own_images():
    """A 'reconstructor' that outputs the class index as a constant image: H[k, c] is the min-MSE of the value c
    against set k's class-c images, computed by hand."""
    class ClassValue(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.dummy = torch.nn.Parameter(torch.zeros(()))

        def forward(self, x):
            return x[:, -3:].argmax(1).double()[:, None, None, None].expand(len(x), 1, 2, 2) + 0 * self.dummy

    g = torch.Generator().manual_seed(0)
    images = torch.rand(5, 3, 2, 1, 2, 2, generator=g, dtype=torch.float64)
    table = attack.min_mse_table(ClassValue(), torch.zeros(5, 4), images)
    for k in range(5):
        for c in range(3):
            expected = min(float(((images[k, c, m] - c) ** 2).mean()) for m in range(2))
            assert float(table[k, c]) == pytest.approx(expected)


def test_unconditional_table_takes_the_minimum_over_the_whole_set():
    """Algorithm 2: a 'reconstructor' that outputs its first weight as a constant image is compared with all
    C x M images of its set, one column."""
    class FirstWeight(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.dummy = torch.nn.Parameter(torch.zeros(()))

        def forward(self, x):
            assert x.shape[1] == 4  # no one-hot class appended
            return x[:, :1, None, None].double().expand(len(x), 1, 2, 2) + 0 * self.dummy

    g = torch.Generator().manual_seed(0)
    images = torch.rand(5, 3, 2, 1, 2, 2, generator=g, dtype=torch.float64)
    weights = torch.rand(5, 4, generator=g)
    table = attack.min_mse_table(FirstWeight(), weights, images, conditional=False)
    assert table.shape == (5, 1)
    for k in range(5):
        expected = min(float(((images[k, c, m] - weights[k, 0].double()) ** 2).mean()) for c in range(3)
                       for m in range(2))
        assert float(table[k, 0]) == pytest.approx(expected)


def test_validation_loss_is_eq3_over_every_class_of_every_set():
    """The ClassValue 'reconstructor' (class index as a constant image): the validation loss is the mean over sets and
    classes of Eq. (3) of (MSE + MAE) / 2 against the class's images, computed by hand, in batches of any size."""
    class ClassValue(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.dummy = torch.nn.Parameter(torch.zeros(()))

        def forward(self, x):
            return x[:, -3:].argmax(1).float()[:, None, None, None].expand(len(x), 1, 2, 2) * 0.5 + 0 * self.dummy

    g = torch.Generator().manual_seed(1)
    images = torch.rand(5, 3, 2, 1, 2, 2, generator=g)
    by_hand = []
    for k in range(5):
        for c in range(3):
            diff = images[k, c] - 0.5 * c
            errors = 0.5 * ((diff ** 2).flatten(1).mean(1) + diff.abs().flatten(1).mean(1))
            weights = torch.softmax(-100.0 * errors, 0)
            by_hand.append(float((weights * errors).sum()))
    for batch_size in (2, 4096):
        loss = attack.validation_loss(ClassValue(), torch.zeros(5, 4), images, batch_size=batch_size)
        assert loss == pytest.approx(np.mean(by_hand), rel=1e-6)


def test_reconstruction_errors_add_the_perceptual_distance_pair_by_pair(monkeypatch):
    """With a perceptual network (here the mean absolute difference of each pair, standing in for LPIPS) each error is
    (MSE + MAE) / 2 plus its distance, the same when the pairs go through it 3 at a time."""
    g = torch.Generator().manual_seed(3)
    out, targets = torch.rand(4, 3, 2, 2, generator=g), torch.rand(4, 2, 3, 2, 2, generator=g)

    def distance(a, b):
        return (a - b).abs().flatten(1).mean(1)[:, None, None, None]  # LPIPS' (B, 1, 1, 1)

    diff = (out[:, None] - targets).flatten(2)
    by_hand = 0.5 * ((diff ** 2).mean(-1) + diff.abs().mean(-1)) + diff.abs().mean(-1)
    torch.testing.assert_close(attack.reconstruction_errors(out, targets, distance), by_hand)
    monkeypatch.setattr(attack, "PERCEPTUAL_PAIRS", 3)
    torch.testing.assert_close(attack.reconstruction_errors(out, targets, distance), by_hand)


def test_pools_of_pixels_count_as_their_signed_images():
    """A uint8 pool (CelebA's training faces) gives the prior table and the reconstructor's training of its
    signed_unit images, number for number; without the conversion the errors would be in the thousands."""
    g = torch.Generator().manual_seed(4)
    pixels = torch.randint(0, 256, (30, 1, 2, 2), generator=g, dtype=torch.uint8)
    images = torch.rand(6, 2, 3, 1, 2, 2, generator=g) * 2 - 1
    tables = [attack.prior_table(pool, images, torch.Generator().manual_seed(5))
              for pool in (pixels, attack.signed_unit(pixels))]
    assert torch.equal(tables[0], tables[1]) and float(tables[0].max()) <= 4
    sets = torch.arange(30).reshape(15, 2, 1)
    weights = torch.randn(15, 6, generator=g)
    trained = []
    for pool in (pixels, attack.signed_unit(pixels)):
        model = MLPReconstructor(8, (1, 2, 2), hidden=8, generator=torch.Generator().manual_seed(6))
        history = attack.train_reconstructor(model, weights, sets, pool, epochs=2, device="cpu", progress=False,
                                             generator=torch.Generator().manual_seed(7))
        trained.append((history["loss"], [p.detach().clone() for p in model.parameters()]))
    assert trained[0][0] == trained[1][0] and max(trained[0][0]) <= 4
    assert all(torch.equal(a, b) for a, b in zip(trained[0][1], trained[1][1]))


def test_rates_thresholds_and_roc():
    h0 = torch.tensor([0.1, 0.2, 0.3, 0.4])
    h1 = torch.linspace(0.25, 1.25, 101)
    assert attack.rates(h0, h1, 0.305) == (0.75, pytest.approx(6 / 101))
    tau = attack.fpr_threshold(h1, 0.01)
    assert tau == pytest.approx(0.26)
    assert attack.tpr_at_fpr(h0, h1, 0.01) == 0.5
    fpr, tpr = attack.empirical_roc(h0, h1)
    assert fpr[0] == tpr[0] == 0 and fpr[-1] == tpr[-1] == 1
    assert np.all(np.diff(fpr) >= 0) and np.all(np.diff(tpr) >= 0)


def test_nearest_neighbour_threshold_by_hand():
    train = torch.tensor([[0.0, 0.0], [1.0, 1.0]])
    val = torch.tensor([[0.0, 1.0], [1.0, 1.0], [3.0, 1.0]])
    # nearest MSEs: 0.5 (either), 0, (4 + 0)/2 = 2
    assert attack.nearest_neighbour_threshold(val, train) == pytest.approx((0.5 + 0.0 + 2.0) / 3)


def test_nearest_neighbour_threshold_in_chunks_and_from_pixels():
    """Chunked over both pools it is the same number; uint8 pixels count as X / 127.5 - 1 (signed_unit)."""
    g = torch.Generator().manual_seed(0)
    train = torch.randint(0, 256, (37, 3, 4, 4), generator=g, dtype=torch.uint8)
    val = torch.rand(11, 3, 4, 4, generator=g) * 2 - 1
    as_float = attack.signed_unit(train)
    assert as_float.dtype == torch.float32 and as_float.min() == -1 and as_float.max() <= 1
    assert torch.equal(attack.signed_unit(val), val)  # float images pass unchanged
    whole = attack.nearest_neighbour_threshold(val, as_float)
    expected = ((val.flatten(1)[:, None].double() - as_float.flatten(1).double()) ** 2).mean(-1).min(1).values.mean()
    assert whole == pytest.approx(float(expected), rel=1e-12)
    assert attack.nearest_neighbour_threshold(val, train, chunk=4, train_chunk=5) == pytest.approx(whole, rel=1e-12)


def test_reconstructor_learns_a_set_image_and_shapes():
    """Trained on 'heads' whose weights are a noisy code of their images, the conditional reconstructor's H0 min-MSE
    falls well below that of random weights (an attack that works), deterministically."""
    g = torch.Generator().manual_seed(0)
    K, C, M = 512, 2, 1
    pool = torch.rand(K * C * M, 1, 2, 2, generator=g) * 2 - 1
    sets = torch.arange(K * C * M).reshape(K, C, M)
    images = pool[sets]
    weights = images.flatten(1) + 0.05 * torch.randn(K, C * M * 4, generator=g)

    def run():
        model = MLPReconstructor(weights.shape[1] + C, (1, 2, 2), hidden=64,
                                 generator=torch.Generator().manual_seed(1))
        attack.train_reconstructor(model, weights, sets, pool, epochs=30, generator=torch.Generator().manual_seed(2),
                                   lr=3e-3, device="cpu", progress=False)
        return attack.min_mse_table(model, weights, images), attack.min_mse_table(model, torch.randn(K, 8), images)

    h0, h1 = run()
    assert float(h0.mean()) < 0.2 * float(h1.mean())
    assert torch.equal(run()[0], h0)


def test_residual_reconstructor_table2_shapes():
    small = ResidualReconstructor(30, width=8, out_channels=3, size=64)
    assert small(torch.randn(2, 30)).shape == (2, 3, 64, 64)
    mnist = ResidualReconstructor(2580, width=256, out_channels=1, size=32)
    assert sum(p.numel() for p in mnist.stem.parameters()) == 4 * 256 * (16 * 2580 + 1) == 42_271_744
    assert sum(p.numel() for p in mnist.parameters()) == 52_965_377


def test_reconstructor_training_resumes_bit_identically_after_an_interruption(tmp_path, monkeypatch):
    """A reconstructor training killed mid-run (an exception from its model after 23 of 40 steps, as a lost session
    would stop it) and started again with its checkpoint resumes from the last save (every 5 steps) and ends with the
    weights and history of the uninterrupted run; a finished training is loaded, not repeated."""
    g = torch.Generator().manual_seed(0)
    K, C, M = 64, 3, 2
    pool = torch.rand(60, 1, 2, 2, generator=g) * 2 - 1
    sets = torch.randint(60, (K, C, M), generator=g)
    weights = torch.randn(K, 6, generator=g)
    statistics = attack.WeightStatistics.fit(weights)

    def run(checkpoint=None, stop_after=None):
        model = MLPReconstructor(6 + C, (1, 2, 2), hidden=16, generator=torch.Generator().manual_seed(1))
        calls = []
        forward = model.forward

        def counted(x):  # counts the training steps (the curve's passes run in eval mode)
            if model.training and stop_after is not None and len(calls) == stop_after:
                raise KeyboardInterrupt
            calls.extend([1] if model.training else [])
            return forward(x)

        monkeypatch.setattr(model, "forward", counted)
        history = attack.train_reconstructor(
            model, weights, sets, pool, epochs=20, statistics=statistics, generator=torch.Generator().manual_seed(2),
            device="cpu", progress=False, checkpoint=checkpoint, checkpoint_steps=5,
            on_epoch=lambda net: {"validation loss": attack.validation_loss(
                net, statistics.standardise(weights[:8]), pool[sets[:8]])})
        return [p.detach().clone() for p in model.parameters()], history, len(calls)

    plain, plain_history, _ = run()
    path = tmp_path / "reconstructor.pt"
    with pytest.raises(KeyboardInterrupt):
        run(path, stop_after=23)
    resumed, history, calls = run(path)
    assert calls == 40 - 20  # the steps after the last save
    assert history == plain_history and all(torch.equal(a, b) for a, b in zip(plain, resumed))
    again, history, calls = run(path)
    assert calls == 0 and history == plain_history and all(torch.equal(a, b) for a, b in zip(plain, again))


def _trainings(kind: str, *, count: int = 3, K: int = 64, epochs: int = 2, checkpoints=None, seed: int = 0):
    """``count`` reconstructor trainings of one architecture (``kind``: the book's MLP or Table 2's generator, small),
    each with its own heads, sets (of 1, 2, 1, ... images per class), draws and initial weights."""
    g = torch.Generator().manual_seed(seed)
    side = 32 if kind == "residual" else 2
    pool = torch.rand(60, 1, side, side, generator=g) * 2 - 1
    found = []
    for k in range(count):
        weights = torch.randn(K, 6, generator=g)
        sets = torch.randint(60, (K, 3, 1 + k % 2), generator=g)
        init = torch.Generator().manual_seed(10 + k)
        model = (ResidualReconstructor(9, width=2, size=32, generator=init) if kind == "residual"
                 else MLPReconstructor(9, (1, side, side), hidden=16, generator=init))
        found.append(attack.ReconstructorTraining(
            model, weights, sets, pool, epochs, torch.Generator().manual_seed(20 + k),
            statistics=attack.WeightStatistics.fit(weights), on_epoch=lambda net: {"norm": float(net(
                torch.zeros(1, 9)).abs().mean())}, checkpoint=None if checkpoints is None else checkpoints[k]))
    return found


@pytest.mark.parametrize("kind", ["mlp", "residual"])
def test_stacked_reconstructors_equal_the_separate_trainings(kind):
    """Three reconstructors (sets of different sizes) trained as one stacked model (vmap over stacked parameters,
    BatchNorm's running statistics included, one Adam) end where their separate trainings end, up to float rounding:
    the same histories (with the per-epoch callback), generator states (the draws after) and weights; for Table 2's
    generator the same function in training mode.  (Its convolutions' biases before a BatchNorm have no gradient
    but rounding, which Adam scales to steps of lr in both runs alike, and the running means follow them: those
    weights are not compared, and its outputs in eval mode, which read the running means, agree to 1e-2.)"""
    alone, together = _trainings(kind), _trainings(kind)
    separate = [t.run(device="cpu", progress=False) for t in alone]
    stacked = attack.train_reconstructors(together, device="cpu", progress=False)
    z = torch.randn(8, 9, generator=torch.Generator().manual_seed(3))
    for a, b, h, s in zip(alone, together, separate, stacked):
        assert h.keys() == s.keys() == {"loss", "norm"} and len(s["loss"]) == 2
        np.testing.assert_allclose(s["loss"], h["loss"], rtol=1e-5)
        np.testing.assert_allclose(s["norm"], h["norm"], rtol=1e-5 if kind == "mlp" else 1e-2)  # eval mode
        assert torch.equal(a.generator.get_state(), b.generator.get_state())
        if kind == "mlp":
            for (name, x), y in zip(a.model.state_dict().items(), b.model.state_dict().values()):
                torch.testing.assert_close(y, x, rtol=1e-5, atol=1e-6, msg=name)
        else:  # batch statistics: the biases before each BatchNorm drop out
            torch.testing.assert_close(b.model.train()(z), a.model.train()(z), rtol=1e-4, atol=1e-5)
            torch.testing.assert_close(b.model.out[2].weight, a.model.out[2].weight, rtol=1e-5, atol=1e-6)
    wider = _trainings(kind, count=1, K=32)
    with pytest.raises(ValueError, match="different architectures, heads"):
        attack.train_reconstructors([*together[:1], *wider], device="cpu", progress=False)


def test_stacked_training_resumes_and_leaves_each_models_checkpoint(tmp_path, monkeypatch):
    """A stacked training interrupted mid-run resumes from its own checkpoint bit-identically; at its end each model's
    finished run is written in train.fit's format, which the model's own training then loads instead of training,
    and the stacked checkpoint is removed."""
    from compendium import train

    paths = [tmp_path / f"model{k}.pt" for k in range(3)]
    plain = _trainings("mlp", K=128)  # 4 steps an epoch, 8 in all
    attack.train_reconstructors(plain, device="cpu", progress=False)
    group = tmp_path / "stacked.pt"
    calls = []
    real = torch.optim.Adam.step

    def interrupted(self, *args, **kwargs):
        if len(calls) == 5:
            raise KeyboardInterrupt
        calls.append(1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(torch.optim.Adam, "step", interrupted)
    with pytest.raises(KeyboardInterrupt):
        attack.train_reconstructors(_trainings("mlp", K=128, checkpoints=paths), device="cpu", progress=False,
                                    checkpoint=group, checkpoint_steps=2)
    monkeypatch.setattr(torch.optim.Adam, "step", real)
    assert group.is_file() and not any(p.exists() for p in paths)
    resumed = _trainings("mlp", K=128, checkpoints=paths)
    histories = attack.train_reconstructors(resumed, device="cpu", progress=False, checkpoint=group)
    assert not group.exists() and [train.checkpoint_progress(p) for p in paths] == [(2, 2)] * 3
    for a, b in zip(plain, resumed):
        assert all(torch.equal(x, y) for x, y in zip(a.model.parameters(), b.model.parameters()))
    loaded = _trainings("mlp", K=128, checkpoints=paths)
    for t, history in zip(loaded, histories):
        monkeypatch.setattr(torch.optim.Adam, "step", lambda *a, **k: pytest.fail("a finished run trained"))
        assert t.run(device="cpu", progress=False) == history
    for a, b in zip(resumed, loaded):
        assert all(torch.equal(x, y) for x, y in zip(a.model.parameters(), b.model.parameters()))
        assert torch.equal(a.generator.get_state(), b.generator.get_state())


def test_steps_run_in_whole_passes_over_the_heads():
    """The book's main run asks for 4,500 steps over 20,000 heads (625 batches of 32 a pass): 8 passes, 5,000 steps;
    a count that fills whole passes is run as asked."""
    assert attack.whole_passes(4500, heads=20_000) == (8, 5000)
    assert attack.whole_passes(3000, heads=4000) == (24, 3000)
    assert attack.whole_passes(1, heads=10) == (4, 4)  # fewer heads than a batch: one step a pass
    with pytest.raises(ValueError, match="heads"):
        attack.whole_passes(10, heads=0)
