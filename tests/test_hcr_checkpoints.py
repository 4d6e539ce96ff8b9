"""Checkpoints of :func:`compendium.bounds.hcr.hcr_bound` (issue 42, "Long work survives a lost session"): a run killed
midway resumes from its finished chunks with the uninterrupted run's results bit for bit, and computes only the
missing chunks; another input (images, noise level, weights, generator) never reads a file of this one."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from torch import nn

from compendium import base
from compendium.bounds import hcr

CHUNKS = 3  # 5 images in chunks of 2, 2 and 1


class TinyNet(nn.Module):
    """A two-layer ReLU MLP on 4x4 images with a ``features`` method, as the chapter's classifiers have."""

    def __init__(self, seed: int = 0):
        super().__init__()
        self.body = nn.Sequential(nn.Flatten(), nn.Linear(16, 12), nn.ReLU(), nn.Linear(12, 10))
        with torch.no_grad():
            generator = torch.Generator().manual_seed(seed)
            for weight in self.parameters():
                weight.copy_(torch.randn(weight.shape, generator=generator) * 0.5)

    def features(self, x):
        return self.body(x)


def _run(net, x, checkpoint=None, sigma=0.3, seed=0):
    return hcr.hcr_bound(net.features, x, sigma, num_restarts=2, num_power_iterations=2, diffdiv=50.0,
                         generator=torch.Generator().manual_seed(seed), chunk_size=2, keep="first",
                         exact_map=hcr.float64_copy(net).features, checkpoint=checkpoint)


@pytest.fixture()
def counted(monkeypatch):
    """Counts the chunks that :func:`hcr._algorithm1` computes; ``counted["fail_at"] = k`` makes its k-th call of a
    session raise, as a lost session stops."""
    state = {"calls": 0, "fail_at": None}
    real = hcr._algorithm1

    def algorithm1(*args, **kwargs):
        state["calls"] += 1
        if state["calls"] == state["fail_at"]:
            raise KeyboardInterrupt("the session is lost")
        return real(*args, **kwargs)

    monkeypatch.setattr(hcr, "_algorithm1", algorithm1)
    return state


def _assert_equal(a: hcr.HCRResult, b: hcr.HCRResult) -> None:
    for field in dataclasses.fields(hcr.HCRResult):
        left, right = getattr(a, field.name), getattr(b, field.name)
        assert np.array_equal(left, right), field.name


def test_a_run_killed_midway_resumes_with_the_same_results(tmp_path, counted):
    net = TinyNet().double().eval()
    x = torch.randn((5, 4, 4), generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    whole = _run(net, x)                                              # uninterrupted, no checkpoints
    assert counted["calls"] == CHUNKS
    folder = tmp_path / "bounds"
    counted.update(calls=0, fail_at=2)                                # killed while computing the 2nd chunk
    with pytest.raises(KeyboardInterrupt):
        _run(net, x, folder)
    files = sorted(folder.glob("*.pt"))
    assert [f.name.split("-")[1] for f in files] == ["0"] and not list(folder.glob("*.part"))
    counted.update(calls=0, fail_at=None)
    resumed = _run(net, x, folder)
    assert counted["calls"] == CHUNKS - 1                             # the missing chunks only
    _assert_equal(resumed, whole)
    assert len(list(folder.glob("*.pt"))) == CHUNKS
    counted.update(calls=0)
    again = _run(net, x, folder)                                      # everything saved: nothing computed
    assert counted["calls"] == 0
    _assert_equal(again, whole)


def test_another_input_reuses_no_file(tmp_path, counted):
    net = TinyNet().double().eval()
    x = torch.randn((5, 4, 4), generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    folder = tmp_path / "bounds"
    _run(net, x, folder)
    other_net = TinyNet().double().eval()
    with torch.no_grad():
        other_net.body[1].bias[0] += 1e-12                           # one weight, moved by a rounding error
    other_x = x.clone()
    other_x[4, 3, 3] += 1e-12                                         # one pixel of the last chunk's image
    for kwargs in ({"sigma": 0.31}, {"seed": 1}):
        counted["calls"] = 0
        _run(net, x, folder, **kwargs)
        assert counted["calls"] == CHUNKS, kwargs
    counted["calls"] = 0
    _run(other_net, x, folder)
    assert counted["calls"] == CHUNKS
    counted["calls"] = 0
    _run(net, other_x, folder)
    assert counted["calls"] == CHUNKS                                 # the digest covers all of x, not the chunk's
    assert len(list(folder.glob("*.pt"))) == 5 * CHUNKS


def test_checkpoint_digest_names_the_module_and_refuses_a_plain_function(tmp_path):
    net, generator = TinyNet(), torch.Generator().manual_seed(0)
    x = torch.zeros((1, 4, 4))
    digest = hcr.checkpoint_digest(net.features, x, generator=generator, sigma=0.3)
    assert len(digest) == 64 and digest == hcr.checkpoint_digest(net.features, x, generator=generator, sigma=0.3)
    assert digest != hcr.checkpoint_digest(net.body, x, generator=generator, sigma=0.3)      # another map
    assert digest != hcr.checkpoint_digest(net.train(False).features, x, generator=generator, sigma=0.3)
    with pytest.raises(ValueError, match="feature_map=.*allowed with checkpoint"):
        hcr.hcr_bound(lambda t: t.reshape(len(t), -1), x, 0.3, checkpoint=tmp_path)
    assert not list(tmp_path.iterdir())


def test_digest_covers_dtype_shape_and_bytes():
    identity = {"a": 1}
    base_digest = base.digest(identity)
    assert base_digest == base.digest({"a": 1}) and len(base_digest) == 16
    ones = torch.ones(4)
    assert len({base_digest, base.digest(identity, ones), base.digest(identity, ones.double()),
                base.digest(identity, ones.reshape(2, 2)), base.digest(identity, ones.to(torch.bfloat16))}) == 5
    assert base.digest(identity, ones) == base.digest(identity, ones.numpy())


def test_save_atomically_leaves_no_partial_file(tmp_path):
    path = tmp_path / "sub" / "payload.pt"
    base.save_atomically({"x": torch.arange(3)}, path)
    assert torch.equal(torch.load(path, weights_only=True)["x"], torch.arange(3))
    assert [p.name for p in path.parent.iterdir()] == ["payload.pt"]
