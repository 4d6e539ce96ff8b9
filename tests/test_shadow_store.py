"""Algorithm 1 streamed to disk (compendium.attacks.shadow_store, transfer_learned.shadow_heads(store=...)): the stored
heads equal the in-memory ones, an interrupted run resumes to the same heads, half-written and mismatched stores are
refused, and the statistics and the reconstructor's training read memory-mapped weights as they read tensors."""
import pytest
import torch

from compendium import models, train
from compendium.attacks import shadow_reconstructor as attack
from compendium.attacks.shadow_store import ShadowStore, ShadowWriter
from compendium.chapters import transfer_learned as chapter

RECIPE = chapter.HeadRecipe(10)


def _pool(size=60, features=6):
    g = torch.Generator().manual_seed(1)
    return torch.randn(size, features, generator=g), torch.arange(size) % 10


def _heads(store=None, count=23, shard_size=5, **kwargs):
    x, y = _pool()
    return chapter.shadow_heads(x, y, RECIPE, count=count, generator=torch.Generator().manual_seed(0),
                                device="cpu", shard_size=shard_size, store=store, **kwargs)


def test_stored_heads_equal_the_in_memory_heads(tmp_path):
    sets, weights = _heads()
    stored_sets, stored_weights = _heads(tmp_path / "heads")
    assert stored_sets.shape == (23, 10, 1) and stored_weights.shape == (23, 10 * 7)
    assert torch.equal(stored_sets.long(), sets) and torch.equal(stored_weights, weights)
    assert (tmp_path / "heads" / "weights.npy").stat().st_size >= 23 * 70 * 4


def test_an_interrupted_run_resumes_to_the_same_heads(tmp_path, monkeypatch):
    _, expected = _heads()
    real, calls = train.fit_linear_heads, []

    def crash_on_third_shard(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(train, "fit_linear_heads", crash_on_third_shard)
    with pytest.raises(KeyboardInterrupt):
        _heads(tmp_path)
    with pytest.raises(ValueError, match="incomplete \\(10 of 23 heads"):
        ShadowStore.open(tmp_path)
    monkeypatch.setattr(train, "fit_linear_heads", real)
    _, resumed = _heads(tmp_path)
    assert torch.equal(resumed, expected)


def test_a_store_of_another_run_or_no_store_is_refused(tmp_path):
    _heads(tmp_path)
    with pytest.raises(ValueError, match="different shadow-head run"):
        _heads(tmp_path, count=24)
    with pytest.raises(ValueError, match="different shadow-head run"):
        _heads(tmp_path, fingerprint={"pool": "mnist"})
    with pytest.raises(FileNotFoundError, match="no shadow-head store"):
        ShadowStore.open(tmp_path / "nothing")
    writer = ShadowWriter(tmp_path / "w", count=3, dim=2, set_shape=(10, 1), fingerprint={},
                          generator=torch.Generator())
    with pytest.raises(ValueError, match="at most 3 heads"):
        writer.write(torch.zeros(4, 10, 1, dtype=torch.long), torch.zeros(4, 2))


def test_statistics_read_in_chunks_equal_the_whole(tmp_path):
    _, weights = _heads(tmp_path)
    whole = attack.WeightStatistics.fit(weights.clone())
    chunked = attack.WeightStatistics.fit(weights, chunk=4)
    for a, b in ((whole.mean, chunked.mean), (whole.std, chunked.std), (whole.correlation, chunked.correlation)):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)


def test_reconstructor_standardises_batches_as_the_whole_copy(tmp_path):
    x, _ = _pool()
    images = torch.tanh(torch.randn(60, 1, 4, 4, generator=torch.Generator().manual_seed(2)))
    sets, weights = _heads(tmp_path)
    stats = attack.WeightStatistics.fit(weights)
    histories = []
    for w, s in ((stats.standardise(weights), None), (weights, stats)):
        model = models.MLPReconstructor(weights.shape[1] + 10, (1, 4, 4), 16,
                                        generator=torch.Generator().manual_seed(0))
        histories.append(attack.train_reconstructor(model, w, sets, images, statistics=s, epochs=2, device="cpu",
                                                    generator=torch.Generator().manual_seed(0), progress=False))
    assert histories[0]["loss"] == histories[1]["loss"]


def test_two_runs_asking_for_one_store_at_once_write_it_once(tmp_path, monkeypatch):
    """Two of the chapter's jobs that share a store, started together (threads here: the lock is the operating
    system's, taken on a file each opens, so it holds between threads as between processes): one trains and writes
    the heads shard by shard, the other waits for the lock, finds the store complete and reads the same heads."""
    import threading
    import time

    _, expected = _heads()
    real, active, calls = train.fit_linear_heads, [], []

    def slow(*args, **kwargs):
        active.append(1)
        calls.append(len(active))  # how many shards are being trained at this moment
        time.sleep(0.02)
        try:
            return real(*args, **kwargs)
        finally:
            active.pop()

    monkeypatch.setattr(train, "fit_linear_heads", slow)
    found = []
    runs = [threading.Thread(target=lambda: found.append(_heads(tmp_path / "heads")[1])) for _ in range(2)]
    for run in runs:
        run.start()
    for run in runs:
        run.join()
    assert len(found) == 2 and all(torch.equal(w, expected) for w in found)
    assert calls == [1] * 5  # 23 heads in shards of 5, trained once, one shard at a time
