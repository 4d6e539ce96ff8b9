"""Unit tests of compendium.attacks.linear_layer: the linear-layer attack run through opacus recovers the input
exactly without noise, and its privatised releases follow the closed-form observation model (eq. 3, Prop. 4)."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import stats

from compendium import data
from compendium.attacks import linear_layer as ll


@pytest.fixture(scope="module")
def images() -> torch.Tensor:
    return data.photo_crops(4, 8, seed=2)  # N = 192, norms of order 5


@pytest.fixture(scope="module")
def image16() -> torch.Tensor:
    return data.photo_crops(1, 16, seed=0)  # one 16x16 RGB image, N = 768, norm ~ 13.7


def _norms(x: torch.Tensor) -> torch.Tensor:
    return x.flatten(1).norm(dim=1)


def test_linear_layer_model():
    m = ll.linear_layer_model(10)
    assert m.weight.shape == (1, 10) and m.bias is None
    assert torch.all(m.weight == 0)
    # the loss is the output; its gradient is the input whatever W is
    with torch.no_grad():
        m.weight.normal_()
    x = torch.arange(10.0)[None]
    m(x).sum().backward()
    assert torch.equal(m.weight.grad[0], x[0])


def test_noise_free_unclipped_recovers_input_exactly(images):
    C = 2 * _norms(images).max().item()
    rec = ll.reconstruct(images, C, 0.0)
    assert rec.shape == images.shape and rec.dtype == images.dtype
    assert (rec - images).abs().max().item() == 0.0


def test_noise_free_unclipped_several_steps_and_lr(images):
    C = 2 * _norms(images).max().item()
    rec = ll.reconstruct(images, C, 0.0, steps=3, lr=0.1)
    assert (rec - images).abs().max().item() < 1e-7


def test_noise_free_clipped_matches_opacus_clip_factor(images):
    C = 0.5 * _norms(images).min().item()
    rec = ll.reconstruct(images, C, 0.0)
    expected = images * (C / (_norms(images) + 1e-6)).reshape(-1, 1, 1, 1)
    assert (rec - images).abs().max().item() > 0.1  # really clipped
    assert torch.allclose(rec, expected, rtol=0, atol=1e-6)
    assert torch.allclose(_norms(rec), torch.full((4,), C), rtol=1e-6)


@pytest.mark.parametrize("C", [1.0, 40.0], ids=["clipped", "unclipped"])
def test_opacus_releases_follow_the_observation_model(image16, C):
    """300 privatised releases of one image through opacus vs eq. (3) (as in sample_release)."""
    sigma, n = 0.5, 300
    X = image16
    rec = ll.reconstruct(X.expand(n, -1, -1, -1).contiguous(), C, sigma, generator=torch.Generator().manual_seed(1))
    beta = min(1.0, C / _norms(X).item())
    assert (beta < 1) == (C == 1.0)
    resid = ((rec - beta * X) / (C * sigma)).double().flatten(1)  # (n, N)
    N = resid.shape[1]
    # standardized residuals are N(0, 1)
    assert stats.kstest(resid.flatten().numpy(), "norm").pvalue > 1e-3
    # the mean release is centred on beta X: n ||mean - beta X||^2 / (C sigma)^2 ~ chi^2_N
    q = n * resid.mean(0).pow(2).sum().item()
    lo, hi = stats.chi2(N).ppf([0.001, 0.999])
    assert lo < q < hi
    # and the same law as sample_release's draws
    ref = ll.sample_release(X, C, sigma, n_draws=n, generator=torch.Generator().manual_seed(2))
    ref_resid = ((ref - beta * X) / (C * sigma)).double().flatten()
    assert stats.ks_2samp(resid.flatten().numpy(), ref_resid.numpy()).pvalue > 1e-3


def test_opacus_averaging_over_steps(image16):
    """Prop. 4: T steps on the same sample; (W_0 - W_T)/(lr T) has noise variance C^2 sigma^2 / T."""
    C, sigma, T, n = 2.0, 0.5, 10, 100
    X = image16
    rec = ll.reconstruct(X.expand(n, -1, -1, -1).contiguous(), C, sigma, steps=T, lr=0.3,
                         generator=torch.Generator().manual_seed(3))
    beta = C / (_norms(X).item() + 1e-6)
    resid = (rec - beta * X).double().flatten()
    m = resid.numel()
    v = resid.pow(2).mean().item()  # the mean is known (0), so this is unbiased
    target = C**2 * sigma**2 / T
    assert abs(v - target) < 6 * target * np.sqrt(2 / m)
    assert abs(resid.mean().item()) < 6 * np.sqrt(target / m)


def test_reconstruct_deterministic_with_generator(images):
    a = ll.reconstruct(images, 1.0, 0.3, steps=2, generator=torch.Generator().manual_seed(7))
    b = ll.reconstruct(images, 1.0, 0.3, steps=2, generator=torch.Generator().manual_seed(7))
    c = ll.reconstruct(images, 1.0, 0.3, steps=2, generator=torch.Generator().manual_seed(8))
    assert torch.equal(a, b)
    assert (a - c).abs().max() > 0.01


@pytest.mark.parametrize("kwargs, name", [
    (dict(max_grad_norm=1.0, noise_multiplier=-0.1), "noise_multiplier"),
    (dict(max_grad_norm=0.0, noise_multiplier=1.0), "max_grad_norm"),
    (dict(max_grad_norm=-2.0, noise_multiplier=1.0), "max_grad_norm"),
    (dict(max_grad_norm=1.0, noise_multiplier=1.0, steps=0), "steps"),
    (dict(max_grad_norm=1.0, noise_multiplier=1.0, steps=1.5), "steps"),
    (dict(max_grad_norm=1.0, noise_multiplier=1.0, lr=0.0), "lr"),
    (dict(max_grad_norm=1.0, noise_multiplier=1.0, lr=-1.0), "lr"),
])
def test_reconstruct_rejects_bad_inputs_before_work(images, monkeypatch, kwargs, name):
    def no_work(*args, **kw):
        raise AssertionError("the DP-SGD optimiser was built before the arguments were checked")

    monkeypatch.setattr(ll, "make_dp_sgd", no_work)
    with pytest.raises(ValueError, match=name):
        ll.reconstruct(images, **kwargs)


def test_reconstruct_grid_yields_every_cell_in_order(images):
    Cs = [0.5 * _norms(images).min().item(), 2 * _norms(images).max().item()]
    cells = list(ll.reconstruct_grid(images, Cs, [0.0, 0.1], generator=torch.Generator().manual_seed(0), progress=False))
    assert [(c, s) for c, s, _ in cells] == [(Cs[0], 0.0), (Cs[0], 0.1), (Cs[1], 0.0), (Cs[1], 0.1)]
    grid = {(c, s): rec for c, s, rec in cells}
    assert all(rec.shape == images.shape for rec in grid.values())
    assert torch.equal(grid[(Cs[1], 0.0)], images)
    assert torch.allclose(grid[(Cs[0], 0.0)], ll.reconstruct(images, Cs[0], 0.0), atol=0)
    assert (grid[(Cs[1], 0.1)] - images).abs().max() > 0.01


# ---------------------------------------------------------------------------------------------------------------
# sample_release (closed-form model)
# ---------------------------------------------------------------------------------------------------------------
def test_sample_release_shapes(images):
    g = torch.Generator().manual_seed(0)
    assert ll.sample_release(images, 1.0, 0.1, generator=g).shape == images.shape
    assert ll.sample_release(images, 1.0, 0.1, n_draws=5, generator=g).shape == (5, *images.shape)
    flat = images.flatten(1)
    assert ll.sample_release(flat, 1.0, 0.1, n_draws=3, generator=g).shape == (3, *flat.shape)


def test_sample_release_noise_free_is_beta_x(images):
    C = float(_norms(images)[1:3].mean())  # clips some images, not others
    out = ll.sample_release(images, C, 0.0)
    beta = torch.clamp(C / _norms(images), max=1.0)
    assert (beta < 1).any() and (beta == 1).any()
    assert torch.allclose(out, beta.reshape(-1, 1, 1, 1) * images, rtol=1e-6, atol=0)


@pytest.mark.parametrize("T", [1, 10])
def test_sample_release_mean_and_variance(images, T):
    C, sigma, n = float(_norms(images)[1:3].mean()), 0.7, 2000
    out = ll.sample_release(images, C, sigma, steps=T, n_draws=n, generator=torch.Generator().manual_seed(T))
    beta = torch.clamp(C / _norms(images), max=1.0).reshape(-1, 1, 1, 1)
    resid = (out - beta * images).double()  # (n, B, 3, 8, 8)
    sd = C * sigma / np.sqrt(T)
    z = np.sqrt(n) * resid.mean(0) / sd  # per coordinate ~ N(0, 1); 768 of them
    assert z.abs().max().item() < 5
    v = resid.pow(2).mean().item()
    assert abs(v - sd**2) < 6 * sd**2 * np.sqrt(2 / resid.numel())


def test_sample_release_rejects_bad_dp_parameters(images):
    with pytest.raises(ValueError, match="noise_multiplier"):
        ll.sample_release(images, 1.0, -1.0)
    with pytest.raises(ValueError, match="max_grad_norm"):
        ll.sample_release(images, 0.0, 1.0)


@pytest.mark.parametrize("steps", [0, -1])
def test_sample_release_rejects_bad_steps(images, steps):
    with pytest.raises(ValueError, match="steps"):
        ll.sample_release(images, 1.0, 1.0, steps=steps)
