"""Unit tests of compendium.metrics: every metric equals scikit-image's definition per sample (1e-10) on real photo
crops and noisy reconstructions, the batched call equals the per-sample loop, and the LPIPS plumbing."""
from __future__ import annotations

import sys

import numpy as np
import pytest
import torch
from skimage import metrics as skm

from compendium import data, metrics


@pytest.fixture(scope="module")
def pairs() -> tuple[torch.Tensor, torch.Tensor]:
    """8 real 24x24 RGB crops and reconstructions at several noise levels (one clipped to [0, 1], one rescaled)."""
    x = data.photo_crops(8, 24, seed=3)
    g = torch.Generator().manual_seed(11)
    sig = torch.tensor([0.0, 1e-3, 0.01, 0.05, 0.1, 0.3, 1.0, 3.0]).reshape(-1, 1, 1, 1)
    y = x + sig * torch.randn(x.shape, generator=g)
    y[2] = y[2].clamp(0, 1)
    y[5] = 0.5 * y[5]
    y[0] = x[0].clone()  # a perfect reconstruction
    return x, y


def _np(t: torch.Tensor, i: int) -> np.ndarray:
    return t[i].double().numpy()


def test_mse_matches_skimage(pairs):
    x, y = pairs
    got = metrics.mse(x[1:], y[1:])
    assert got.dtype == torch.float64 and got.shape == (7,)
    ref = [skm.mean_squared_error(_np(x, i), _np(y, i)) for i in range(1, 8)]
    assert np.allclose(got.numpy(), ref, rtol=1e-10, atol=1e-14)


def test_psnr_matches_skimage_with_ground_truth_range(pairs):
    x, y = pairs
    got = metrics.psnr(x[1:], y[1:])
    ref = []
    for i in range(1, 8):
        a, b = _np(x, i), _np(y, i)
        ref.append(skm.peak_signal_noise_ratio(a, b, data_range=a.max() - a.min()))
    assert np.allclose(got.numpy(), ref, rtol=0, atol=1e-10)
    # the peak is the ground truth's range, not 1: scaling both by 2 keeps the PSNR
    assert np.allclose(metrics.psnr(2 * x[1:], 2 * y[1:]).numpy(), got.numpy(), atol=1e-10)


def test_ncc_matches_corrcoef(pairs):
    x, y = pairs
    got = metrics.ncc(x, y)
    ref = [np.corrcoef(_np(x, i).ravel(), _np(y, i).ravel())[0, 1] for i in range(8)]
    assert np.allclose(got.numpy(), ref, rtol=0, atol=1e-10)
    assert got[0].item() == pytest.approx(1.0, abs=1e-12)
    # invariant to an affine change of the reconstruction, sign flips with a negative factor
    assert np.allclose(metrics.ncc(x, 3 * y + 7).numpy(), got.numpy(), atol=1e-10)
    assert np.allclose(metrics.ncc(x, -y).numpy(), -got.numpy(), atol=1e-10)


def test_nmi_matches_skimage(pairs):
    x, y = pairs
    got = metrics.nmi(x, y, bins=100)
    ref = [skm.normalized_mutual_information(_np(x, i), _np(y, i), bins=100) for i in range(8)]
    assert np.allclose(got.numpy(), ref, rtol=0, atol=1e-10)


def test_nmi_other_bins_matches_skimage(pairs):
    x, y = pairs
    got = metrics.nmi(x, y, bins=17)
    ref = [skm.normalized_mutual_information(_np(x, i), _np(y, i), bins=17) for i in range(8)]
    assert np.allclose(got.numpy(), ref, rtol=0, atol=1e-10)


def test_nmi_quantised_and_constant_images_match_skimage(pairs):
    """Ties on bin edges (8-bit and coarse quantisation) and a constant reconstruction (NMI = 1)."""
    x, _ = pairs
    u8 = (x * 255).round().double()
    coarse = (x * 10).round() / 10
    const = torch.full_like(x, 0.3)
    for a, b in ((u8, coarse), (x, coarse), (x, const)):
        got = metrics.nmi(a, b)
        ref = [skm.normalized_mutual_information(_np(a, i), _np(b, i), bins=100) for i in range(8)]
        assert np.allclose(got.numpy(), ref, rtol=0, atol=1e-10)
    assert torch.allclose(metrics.nmi(x, const), torch.ones(8, dtype=torch.float64), atol=1e-12)


def test_nmi_identical_is_two_and_decreases_with_noise(pairs):
    x, _ = pairs
    assert torch.allclose(metrics.nmi(x, x), torch.full((8,), 2.0, dtype=torch.float64), atol=1e-12)
    g = torch.Generator().manual_seed(0)
    img = x[:1].expand(6, -1, -1, -1)
    noisy = img + torch.tensor([1e-3, 1e-2, 0.03, 0.1, 0.3, 3.0]).reshape(-1, 1, 1, 1) * torch.randn(
        img.shape, generator=g)
    v = metrics.nmi(img, noisy)
    assert torch.all(v[1:] < v[:-1])
    assert torch.all((v >= 1.0) & (v <= 2.0))


def test_ssim_matches_skimage(pairs):
    x, y = pairs
    got = metrics.ssim(x, y)
    ref = [skm.structural_similarity(_np(x, i), _np(y, i), data_range=1.0, channel_axis=0) for i in range(8)]
    assert np.allclose(got.numpy(), ref, rtol=0, atol=1e-10)
    assert got[0].item() == pytest.approx(1.0, abs=1e-12)


def test_ssim_nonsquare_and_other_window_matches_skimage():
    x = data.photo_crops(3, 20, seed=1)[:, :, :, :15]
    g = torch.Generator().manual_seed(1)
    y = x + 0.1 * torch.randn(x.shape, generator=g)
    got = metrics.ssim(x, y, data_range=2.0, win_size=5)
    ref = [skm.structural_similarity(_np(x, i), _np(y, i), data_range=2.0, win_size=5, channel_axis=0)
           for i in range(3)]
    assert np.allclose(got.numpy(), ref, rtol=0, atol=1e-10)


@pytest.mark.parametrize("name", ["MSE", "PSNR", "NCC", "NMI", "SSIM"])
def test_batched_equals_per_sample_loop(pairs, name):
    x, y = pairs
    f = metrics.ALL[name]
    batched = f(x[1:], y[1:])
    loop = torch.cat([f(x[i:i + 1], y[i:i + 1]) for i in range(1, 8)])
    assert batched.shape == (7,)
    assert torch.allclose(batched, loop, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["MSE", "PSNR", "NCC", "NMI"])
def test_flat_vectors_accepted(pairs, name):
    """(batch, N) vectors give the same value as the images they flatten."""
    x, y = pairs
    f = metrics.ALL[name]
    assert torch.allclose(f(x[1:].flatten(1), y[1:].flatten(1)), f(x[1:], y[1:]), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["MSE", "PSNR", "NCC", "NMI", "SSIM"])
def test_shape_mismatch_and_unbatched_raise(pairs, name):
    x, y = pairs
    f = metrics.ALL[name]
    with pytest.raises(ValueError, match="same shape"):
        f(x, y[:, :, :-1])
    with pytest.raises(ValueError, match="batched"):
        f(x[0, 0, 0], y[0, 0, 0])


def test_ssim_rejects_small_or_non_image_input(pairs):
    x, y = pairs
    with pytest.raises(ValueError, match="win_size"):
        metrics.ssim(x[:, :, :5, :5], y[:, :, :5, :5])
    with pytest.raises(ValueError, match="height, width"):
        metrics.ssim(x.flatten(1), y.flatten(1))


# ---------------------------------------------------------------------------------------------------------------
# LPIPS (optional extra)
# ---------------------------------------------------------------------------------------------------------------
def test_lpips_plumbing():
    try:
        import lpips  # noqa: F401
    except ImportError as err:
        pytest.skip(f"the lpips extra is not installed (it needs torchvision, a CUDA torch build): {err}")
    x, y = data.photo_crops(3, 64, seed=0), data.photo_crops(3, 64, seed=1)
    try:
        d = metrics.lpips(x, y, pretrained_backbone=False)
        same = metrics.lpips(x, x, pretrained_backbone=False)
    except metrics.LPIPSUnavailable as err:  # the linear heads ship with lpips; anything else is a failure
        pytest.fail(f"LPIPS with a random backbone should not need downloads: {err}")
    assert d.shape == (3,) and d.dtype == torch.float64
    assert torch.all(torch.isfinite(d)) and torch.all(d >= 0)
    assert torch.allclose(same, torch.zeros(3, dtype=torch.float64), atol=1e-6)


def test_lpips_unavailable_without_the_extra(pairs, monkeypatch):
    x, y = pairs
    monkeypatch.setitem(sys.modules, "lpips", None)  # makes `import lpips` raise ImportError
    metrics._lpips_model.cache_clear()
    try:
        with pytest.raises(metrics.LPIPSUnavailable, match=r"LPIPS is not installed here.*optional extra"):
            metrics.lpips(x, y)
        ok, reason = metrics.lpips_status()
        assert ok is False
        assert reason.startswith("LPIPS is not installed here") and "pip install" not in reason  # a sentence
    finally:
        metrics._lpips_model.cache_clear()


def test_lpips_rejects_non_rgb(pairs):
    x, y = pairs
    with pytest.raises(ValueError, match="RGB"):
        metrics.lpips(x[:, :1], y[:, :1])
    with pytest.raises(ValueError, match="same shape"):
        metrics.lpips(x, y[:, :, :-1])


def test_large_batches_are_scored_in_slices_with_the_same_result(monkeypatch):
    from compendium import metrics as m

    g = torch.Generator().manual_seed(3)
    x = torch.rand((7, 3, 16, 16), generator=g)
    y = x + 0.1 * torch.randn(x.shape, generator=g)
    whole = {name: f(x, y) for name, f in m.ALL.items()}
    monkeypatch.setattr(m, "MAX_VALUES_PER_CALL", 2 * x[0].numel())  # slices of 2 samples
    for name, f in m.ALL.items():
        torch.testing.assert_close(f(x, y), whole[name], rtol=0, atol=0, msg=name)


def test_psnr_with_a_nominal_data_range_matches_skimage():
    g = torch.Generator().manual_seed(5)
    x = torch.rand((3, 3, 12, 12), generator=g, dtype=torch.float64) * 0.5
    y = x + 0.05 * torch.randn(x.shape, generator=g, dtype=torch.float64)
    ours = metrics.psnr(x, y, data_range=1.0).numpy()
    ref = [skm.peak_signal_noise_ratio(a.numpy(), b.numpy(), data_range=1.0) for a, b in zip(x, y)]
    np.testing.assert_allclose(ours, ref, rtol=1e-12)
    with pytest.raises(ValueError, match="data_range"):
        metrics.psnr(x, y, data_range=0.0)


class _StandInDistance(torch.nn.Module):
    """A perceptual-distance stand-in with LPIPS's interface (two batches in [-1, 1] -> (B, 1, 1, 1)): a random
    convolution's feature distance, averaged over positions; it records the batch size of every call."""

    def __init__(self):
        super().__init__()
        self.features = torch.nn.Conv2d(3, 8, 5, stride=2)
        self.calls = []

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        self.calls.append(len(a))
        return (self.features(a) - self.features(b)).pow(2).mean((1, 2, 3), keepdim=True)


def test_lpips_is_scored_in_chunks_with_the_values_of_one_batch(monkeypatch):
    torch.manual_seed(0)
    net = _StandInDistance()
    monkeypatch.setattr(metrics, "_lpips_model", lambda name, pretrained: net)
    g = torch.Generator().manual_seed(4)
    x = torch.rand((11, 3, 32, 32), generator=g)
    y = (x + 0.1 * torch.randn(x.shape, generator=g)).clamp(0, 1)
    whole = metrics.lpips(x, y, net="vgg", pairs_per_call=len(x))
    chunked = metrics.lpips(x, y, net="vgg", pairs_per_call=3)
    assert net.calls == [11, 3, 3, 3, 2]
    torch.testing.assert_close(chunked, whole, rtol=1e-6, atol=1e-9)
    assert chunked.shape == (11,) and chunked.dtype == torch.float64
    net.calls.clear()
    auto = metrics.lpips(x, y, net="vgg")  # on the CPU: a fixed small chunk
    assert net.calls == [8, 3] and metrics.LPIPS_CPU_PAIRS == 8
    torch.testing.assert_close(auto, whole, rtol=1e-6, atol=1e-9)
    with pytest.raises(ValueError, match="pairs_per_call"):
        metrics.lpips(x, y, pairs_per_call=0)


def test_lpips_pairs_per_call_from_free_gpu_memory():
    n = 3 * 224 * 224  # the papers' ImageNet size: about 154 MB a pair
    assert metrics.lpips_pairs_per_call(n, None) == metrics.LPIPS_CPU_PAIRS
    assert metrics.lpips_pairs_per_call(n, 15 * 2**30) == 52  # a T4's 15 GB: half of it
    assert metrics.lpips_pairs_per_call(n, 2**20) == 1  # never fewer than one pair
    assert metrics.lpips_pairs_per_call(3 * 32 * 32, 15 * 2**30) > 100  # small images: all at once
