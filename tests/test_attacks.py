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
    cells = list(ll.reconstruct_grid(images, Cs, [0.0, 0.1], generator=torch.Generator().manual_seed(0),
                                     progress=False))
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


# ---------------------------------------------------------------------------------------------------------------
# "From Mean to Extreme": reconstruct_rows (Corollary 1 through opacus), sample_rows_release, ratio_attack
# ---------------------------------------------------------------------------------------------------------------
def test_linear_rows_model_is_zero_and_its_rows_are_the_input():
    m = ll.linear_rows_model(6, 4)
    assert m.weight.shape == (4, 6) and m.bias is None and torch.all(m.weight == 0)
    mb = ll.linear_rows_model(6, 3, bias=True)
    assert mb.bias.shape == (3,) and torch.all(mb.bias == 0)
    x = torch.arange(6.0)[None]
    (2.5 * mb(x).sum()).backward()  # loss c 1^T (W X + b): rows c X, bias gradients c
    assert torch.equal(mb.weight.grad, 2.5 * x.expand(3, -1)) and torch.equal(mb.bias.grad, torch.full((3,), 2.5))


@pytest.mark.parametrize("C_factor, loss_scale", [(2.0, 1.0), (5.0, 1.0), (5.0, 5.0), (5.0, -2.0)])
def test_rows_noise_free_recovers_input_for_one_row_and_optimal_rows(images, C_factor, loss_scale):
    """sigma = 0: X up to float rounding with M = 1 and with M = M* (clipped, rescaled by the known beta c)."""
    from compendium.bounds import mean_to_extreme as mte

    C = C_factor * _norms(images).max().item()
    m_star = mte.optimal_rows(C / abs(loss_scale), min_norm=_norms(images).min().item())
    for M in (1, m_star):
        rec = ll.reconstruct_rows(images, C, 0.0, M, loss_scale=loss_scale)
        assert rec.shape == images.shape and rec.dtype == images.dtype
        assert torch.allclose(rec, images, rtol=1e-5, atol=1e-6), (M, (rec - images).abs().max())


def test_rows_one_row_unclipped_is_reconstruct_and_clipped_is_reconstruct_over_beta(images):
    """M = 1, c = 1: the same model and noise stream as the chapter-1 attack; only the known-beta rescaling differs."""
    for C in (2 * _norms(images).max().item(), 0.5 * _norms(images).min().item()):
        a = ll.reconstruct_rows(images, C, 0.3, 1, generator=torch.Generator().manual_seed(5))
        b = ll.reconstruct(images, C, 0.3, generator=torch.Generator().manual_seed(5))
        beta = (C / (_norms(images).double() + ll.OPACUS_CLIP_EPS)).clamp(max=1.0).float().reshape(-1, 1, 1, 1)
        assert torch.allclose(a, b / beta, rtol=1e-6, atol=1e-6)
        if C > _norms(images).max():
            assert torch.equal(a, b)


@pytest.fixture(scope="module")
def rows_releases(image16):
    """300 opacus reconstructions of one image at C = 5 ||X|| (M* = 25, printed eq. 18: M = 5) for M in 1, 5, 25."""
    from compendium.bounds import mean_to_extreme as mte

    X, sigma, n = image16, 0.5, 300
    norm = _norms(X).item()
    C = 5 * norm
    assert (mte.optimal_rows(C, min_norm=norm), mte.optimal_rows_as_printed(C, min_norm=norm)) == (25, 5)
    batch = X.expand(n, -1, -1, -1).contiguous()
    recs = {M: ll.reconstruct_rows(batch, C, sigma, M, generator=torch.Generator().manual_seed(10 + M))
            for M in (1, 5, 25)}
    return X, sigma, C, norm, recs


@pytest.mark.parametrize("M", [1, 5, 25], ids=["M=1", "M=ceil(C/m)", "M=M*"])
def test_rows_opacus_reconstructions_follow_the_closed_form_law(rows_releases, M):
    """KS: (X_hat - X) / sd ~ N(0, 1) with sd^2 = sigma^2 max(||X||^2, C^2 / M) (eq. 17 of From Mean to Extreme), below
    and at M*."""
    from compendium.bounds import mean_to_extreme as mte

    X, sigma, C, norm, recs = rows_releases
    var = mte.reconstruction_variance(sigma, norm=norm, C=C, M=M)
    assert var == pytest.approx(sigma**2 * max(norm**2, C**2 / M), rel=1e-12)
    resid = ((recs[M] - X) / np.sqrt(var)).double().flatten(1)  # (300, N)
    assert stats.kstest(resid.flatten().numpy(), "norm").pvalue > 1e-3
    # unbiased: 300 ||mean residual||^2 ~ chi^2_N
    q = resid.shape[0] * resid.mean(0).pow(2).sum().item()
    lo, hi = stats.chi2(resid.shape[1]).ppf([0.001, 0.999])
    assert lo < q < hi


def test_rows_missing_square_costs_the_factor_c_over_m(rows_releases):
    """Printed eq. (18), M = ceil(C/m) = 5: variance C/m = 5 times the optimum sigma^2 ||X||^2 that M* = 25 attains."""
    X, sigma, C, norm, recs = rows_releases
    opt = sigma**2 * norm**2
    v = {M: (recs[M] - X).double().pow(2).mean().item() for M in recs}
    se = opt * np.sqrt(2 / (recs[25].numel()))  # relative SE of a variance estimate from n N normals
    assert abs(v[25] - opt) < 6 * se
    assert abs(v[5] - 5 * opt) < 6 * 5 * se
    assert abs(v[1] - 25 * opt) < 6 * 25 * se
    # the paper's claimed law N(X, sigma^2 ||X||^2) is rejected for the printed M
    resid = ((recs[5] - X) / np.sqrt(opt)).double().flatten().numpy()
    assert stats.kstest(resid, "norm").pvalue < 1e-6


def test_rows_opacus_matches_sample_rows_release(rows_releases):
    X, sigma, C, norm, recs = rows_releases
    for M in (5, 25):
        ref = ll.sample_rows_release(X, C, sigma, M, n_draws=300, generator=torch.Generator().manual_seed(M))
        assert ref.shape == (300, *X.shape)
        a = (recs[M] - X).double().flatten().numpy()
        b = (ref - X).double().flatten().numpy()
        assert stats.ks_2samp(a, b).pvalue > 1e-3


def test_rows_loss_scale_replaces_rows(image16):
    """Only M c^2 matters: one row with c = C / ||X|| reaches the optimum variance sigma^2 ||X||^2."""
    X, sigma, n = image16, 0.5, 200
    norm = _norms(X).item()
    C = 5 * norm
    rec = ll.reconstruct_rows(X.expand(n, -1, -1, -1).contiguous(), C, sigma, 1, loss_scale=5.0,
                              generator=torch.Generator().manual_seed(4))
    v = (rec - X).double().pow(2).mean().item()
    opt = sigma**2 * norm**2
    assert abs(v - opt) < 6 * opt * np.sqrt(2 / rec.numel())


def test_sample_rows_release_noise_free_shapes_and_variance(images):
    g = torch.Generator().manual_seed(0)
    assert torch.equal(ll.sample_rows_release(images, 1.0, 0.0, 4), images)
    assert ll.sample_rows_release(images, 1.0, 0.1, 4, n_draws=3, generator=g).shape == (3, *images.shape)
    norms = _norms(images).double()
    sigma, M, n = 0.7, 2, 2000
    C = np.sqrt(M) * float(norms[:2].mean())  # C / sqrt(M) between the norms: both regimes
    out = ll.sample_rows_release(images, C, sigma, M, n_draws=n, generator=g)
    sd = sigma * torch.clamp(norms, min=C / np.sqrt(M))
    assert (norms < C / np.sqrt(M)).any() and (norms > C / np.sqrt(M)).any()
    v = (out - images).double().pow(2).mean(dim=(0, 2, 3, 4))  # per image
    assert torch.all((v / sd**2 - 1).abs() < 6 * np.sqrt(2 / (n * images[0].numel())))


def test_ratio_attack_noise_free_exact_and_heavy_tailed(image16):
    X = image16
    C = 0.5 * _norms(X).item()  # clipped: the ratio needs no beta
    rec = ll.ratio_attack(X, C, 0.0, rows=3)
    assert rec.shape == (3, *X.shape)
    assert torch.allclose(rec, X.expand(3, -1, -1, -1), rtol=1e-5, atol=1e-6)
    # with noise: ratios of normals, no moments.  Each row shares one noisy denominator beta c + xi' (here mostly
    # noise: mean / sd = 0.26), so the per-row MSE is ~ 1 / denominator^2: Cauchy-like tails.  About 5 % of the rows
    # have an MSE above 100 x the median; for a Gaussian reconstruction (MSE ~ chi^2_768 / 768) that never happens.
    rec = ll.ratio_attack(X.expand(40, -1, -1, -1).contiguous(), C, 0.2, rows=25,
                          generator=torch.Generator().manual_seed(3))
    mse = (rec - X).double().pow(2).flatten(2).mean(-1).flatten()  # 1000 rows
    assert (mse > 100 * mse.median()).double().mean().item() > 0.02


def test_rows_deterministic_with_generator(images):
    a = ll.reconstruct_rows(images, 1.0, 0.3, 3, generator=torch.Generator().manual_seed(7))
    b = ll.reconstruct_rows(images, 1.0, 0.3, 3, generator=torch.Generator().manual_seed(7))
    c = ll.reconstruct_rows(images, 1.0, 0.3, 3, generator=torch.Generator().manual_seed(8))
    assert torch.equal(a, b) and (a - c).abs().max() > 0.01


@pytest.mark.parametrize("kwargs, name", [
    (dict(max_grad_norm=1.0, noise_multiplier=-0.1, rows=2), "noise_multiplier"),
    (dict(max_grad_norm=0.0, noise_multiplier=1.0, rows=2), "max_grad_norm"),
    (dict(max_grad_norm=1.0, noise_multiplier=1.0, rows=0), "rows"),
    (dict(max_grad_norm=1.0, noise_multiplier=1.0, rows=2.5), "rows"),
    (dict(max_grad_norm=1.0, noise_multiplier=1.0, rows=2, loss_scale=0.0), "loss_scale"),
    (dict(max_grad_norm=1.0, noise_multiplier=1.0, rows=2, loss_scale=float("nan")), "loss_scale"),
])
@pytest.mark.parametrize("fn", ["reconstruct_rows", "sample_rows_release", "ratio_attack"])
def test_rows_attacks_reject_bad_inputs_before_work(images, monkeypatch, kwargs, name, fn):
    def no_work(*args, **kw):
        raise AssertionError("the DP-SGD optimiser was built before the arguments were checked")

    monkeypatch.setattr(ll, "make_dp_sgd", no_work)
    with pytest.raises(ValueError, match=name):
        getattr(ll, fn)(images, **kwargs)
