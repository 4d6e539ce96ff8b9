"""Unit tests of compendium.attacks.feature_inversion: on a linear feature map ``a(x) = A x`` the inversion by
optimisation and the linearised estimator recover the input exactly without noise, the linearised estimator is the
OLS estimator (unbiased, covariance ``sigma^2 (A^T A)^{-1}`` = the Cramer-Rao bound) with noise, the Gaussian-prior
inversion is the closed-form ridge / MAP solution, and the decoder trained on other data beats the trivial
predictor and is reproducible given its generators."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from compendium.attacks import feature_inversion as fi
from compendium.bounds.hcr import cramer_rao_bound
from compendium.models import FeatureDecoder
from compendium.models.classifiers import MnistMLP

N_FEATURES, SHAPE = 30, (1, 4, 4)
P = math.prod(SHAPE)


@pytest.fixture(scope="module")
def A() -> torch.Tensor:
    return torch.randn(N_FEATURES, P, generator=torch.Generator().manual_seed(0), dtype=torch.float64)


def linear_map(A: torch.Tensor):
    return lambda x: x.flatten(1) @ A.T.to(x.dtype)


@pytest.fixture(scope="module")
def truth() -> torch.Tensor:
    return torch.rand(6, *SHAPE, generator=torch.Generator().manual_seed(1), dtype=torch.float64)


def _mean_start() -> torch.Tensor:
    return torch.full((1, *SHAPE), 0.5, dtype=torch.float64)


# ---------------------------------------------------------------------------------------------------------------
# noise-free recovery
# ---------------------------------------------------------------------------------------------------------------
def test_noise_free_linear_map_is_inverted_exactly(A, truth):
    fmap = linear_map(A)
    X = fmap(truth)
    rec, data_loss = fi.invert_by_optimisation(fmap, X, _mean_start(), steps=500, lr=0.05)
    assert rec.shape == truth.shape and data_loss.shape == (truth.shape[0],)
    assert not rec.requires_grad
    assert (rec - truth).abs().max() < 1e-7
    assert data_loss.max() < 1e-12
    for x0 in (_mean_start(), _mean_start().expand(truth.shape[0], *SHAPE)):   # shared and per-example start
        lin = fi.linearised_estimator(fmap, X, x0)
        assert lin.shape == truth.shape
        assert (lin - truth).abs().max() < 1e-10


def test_inversion_is_per_example_and_deterministic(A, truth):
    """Adam is elementwise and the loss a sum over examples: an example's result does not depend on its batch."""
    fmap = linear_map(A)
    X = fmap(truth) + 0.3 * torch.randn(truth.shape[0], N_FEATURES, generator=torch.Generator().manual_seed(2),
                                        dtype=torch.float64)
    batch, _ = fi.invert_by_optimisation(fmap, X, _mean_start(), steps=200, lr=0.05, prior_weight=1.0)
    alone, _ = fi.invert_by_optimisation(fmap, X[2:3], _mean_start(), steps=200, lr=0.05, prior_weight=1.0)
    again, _ = fi.invert_by_optimisation(fmap, X, _mean_start(), steps=200, lr=0.05, prior_weight=1.0)
    assert torch.equal(batch, again)
    assert torch.allclose(batch[2:3], alone, rtol=0, atol=1e-12)


# ---------------------------------------------------------------------------------------------------------------
# with noise: the linearised estimator is OLS, unbiased, and attains the Cramer-Rao bound
# ---------------------------------------------------------------------------------------------------------------
def test_linearised_estimator_is_unbiased_and_attains_cramer_rao(A):
    n_draws, sigma = 20_000, 0.1
    fmap = linear_map(A)
    x = torch.rand(1, *SHAPE, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    noise = torch.randn(n_draws, N_FEATURES, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    est = fi.linearised_estimator(fmap, fmap(x) + sigma * noise, _mean_start()).flatten(1).numpy()

    A_np = A.numpy()
    cov = sigma**2 * np.linalg.inv(A_np.T @ A_np)
    crb = cramer_rao_bound(A_np, sigma)
    np.testing.assert_allclose(np.diag(cov), crb, rtol=1e-10)

    # unbiased: every coordinate's mean within 5 standard errors of the truth
    z = (est.mean(0) - x.flatten().numpy()) / np.sqrt(crb / n_draws)
    assert np.abs(z).max() < 5, z
    # variances: the sample variance of a normal has relative standard error sqrt(2 / (N - 1)) (1 % here)
    var = est.var(0, ddof=1)
    assert np.abs(var / crb - 1).max() < 5 * math.sqrt(2 / (n_draws - 1)), var / crb
    # the whole covariance: whitened by the theoretical one it is I, entries with standard error
    # sqrt(2 / N) (diagonal) and sqrt(1 / N) (off-diagonal)
    w_vals, w_vecs = np.linalg.eigh(cov)
    whiten = w_vecs @ np.diag(w_vals**-0.5) @ w_vecs.T
    W = whiten @ np.cov(est, rowvar=False) @ whiten
    se = np.where(np.eye(P, dtype=bool), math.sqrt(2 / n_draws), math.sqrt(1 / n_draws))
    assert np.all(np.abs(W - np.eye(P)) < 5 * se), np.abs(W - np.eye(P)).max()


# ---------------------------------------------------------------------------------------------------------------
# Gaussian prior: the MAP / ridge solution
# ---------------------------------------------------------------------------------------------------------------
def test_prior_inversion_equals_closed_form_map(A, truth):
    lam = 3.0
    fmap = linear_map(A)
    X = fmap(truth) + 0.5 * torch.randn(truth.shape[0], N_FEATURES, generator=torch.Generator().manual_seed(5),
                                        dtype=torch.float64)
    x0 = torch.rand(truth.shape, generator=torch.Generator().manual_seed(6), dtype=torch.float64)  # per example
    rec, _ = fi.invert_by_optimisation(fmap, X, x0, steps=600, lr=0.05, prior_weight=lam)
    # argmin ||A x - X||^2 + lam ||x - x0||^2  =  x0 + (A^T A + lam I)^{-1} A^T (X - A x0)
    M = A.T @ A + lam * torch.eye(P, dtype=torch.float64)
    expected = x0.flatten(1) + torch.linalg.solve(M, A.T @ (X - fmap(x0)).T).T
    assert (rec.flatten(1) - expected).abs().max() < 1e-8
    # and the prior pulls towards x0: the MAP estimate is not the OLS one
    ols = fi.linearised_estimator(fmap, X, x0)
    assert (ols.flatten(1) - expected).abs().max() > 1e-2


def test_box_bounds_are_respected():
    """For the identity map the box-constrained least-squares solution is the observation clamped to the box."""
    observed = torch.linspace(-1.0, 2.0, 2 * P, dtype=torch.float64).reshape(2, P)
    rec, data_loss = fi.invert_by_optimisation(lambda x: x.flatten(1), observed, _mean_start(), steps=400, lr=0.05,
                                               bounds=(0.0, 1.0))
    assert rec.min() >= 0 and rec.max() <= 1
    assert (rec.flatten(1) - observed.clamp(0, 1)).abs().max() < 1e-8
    assert torch.allclose(data_loss, (observed - observed.clamp(0, 1)).pow(2).sum(1))


# ---------------------------------------------------------------------------------------------------------------
# through a real (ReLU) network
# ---------------------------------------------------------------------------------------------------------------
def test_attacks_through_a_relu_network():
    model = MnistMLP(1, 4, hidden=64, generator=torch.Generator().manual_seed(0)).double()
    x = torch.rand(5, *SHAPE, generator=torch.Generator().manual_seed(7), dtype=torch.float64)
    with torch.no_grad():
        X = model.features(x)
    # the map is piecewise linear: linearised near the truth (same activation pattern) it is exact
    near = x + 1e-6 * torch.randn(x.shape, generator=torch.Generator().manual_seed(8), dtype=torch.float64)
    assert (fi.linearised_estimator(model.features, X, near) - x).abs().max() < 1e-10
    # Gauss-Newton iterations from the mean image find it too
    assert (fi.linearised_estimator(model.features, X, _mean_start(), iterations=10) - x).abs().max() < 1e-10
    rec, data_loss = fi.invert_by_optimisation(model.features, X, _mean_start(), steps=500, lr=0.02)
    assert data_loss.max() < 1e-6
    assert (rec - x).abs().max() < 1e-2
    assert all(p.grad is None for p in model.parameters())   # the feature map is not trained


# ---------------------------------------------------------------------------------------------------------------
# the learned decoder
# ---------------------------------------------------------------------------------------------------------------
def _images(n: int, generator: torch.Generator) -> torch.Tensor:
    """The attacker's image distribution: a 4-dimensional Gaussian family of 4x4 images around grey."""
    loadings = torch.randn(P, 4, generator=torch.Generator().manual_seed(10)) * 0.3
    z = torch.randn(n, 4, generator=generator)
    return (0.5 + z @ loadings.T + 0.05 * torch.randn(n, P, generator=generator)).reshape(n, *SHAPE)


SIGMA = 1.0


def _train(A, seed: int = 2, epochs: int = 15):
    decoder = FeatureDecoder(N_FEATURES, SHAPE, hidden=(64, 64), generator=torch.Generator().manual_seed(1))
    history = fi.train_decoder(decoder, linear_map(A.float()), _images(1500, torch.Generator().manual_seed(11)),
                               SIGMA, epochs=epochs, generator=torch.Generator().manual_seed(seed), device="cpu",
                               progress=False)
    return decoder, history


@pytest.fixture(scope="module")
def trained(A):
    return _train(A)


def test_decoder_beats_trivial_predictor_and_ols(A, trained):
    decoder, history = trained
    assert len(history["loss"]) == 15 and history["loss"][-1] < 0.2 * history["loss"][0]
    fmap = linear_map(A.float())
    train_mean = _images(1500, torch.Generator().manual_seed(11)).mean(0, keepdim=True)
    held_out = _images(500, torch.Generator().manual_seed(12))                    # not seen in training
    X = fmap(held_out) + SIGMA * torch.randn(500, N_FEATURES, generator=torch.Generator().manual_seed(13))
    assert decoder.training
    rec = fi.decode(decoder, X)
    assert decoder.training                                                       # mode restored
    assert rec.shape == held_out.shape
    mse = (rec - held_out).pow(2).mean()
    trivial = (train_mean - held_out).pow(2).mean()
    ols = (fi.linearised_estimator(fmap, X, train_mean) - held_out).pow(2).mean()
    assert mse < 0.1 * trivial, (mse, trivial)
    # biased (it learns the prior), so it can beat the unbiased optimum at this noise level
    assert mse < 0.5 * ols, (mse, ols)


def test_decoder_training_is_deterministic(A):
    (first, h1), (second, h2) = _train(A, epochs=3), _train(A, epochs=3)
    for (name, p), q in zip(first.state_dict().items(), second.state_dict().values()):
        assert torch.equal(p, q), name
    assert h1 == h2
    other, _ = _train(A, seed=3, epochs=3)                                       # other noise and shuffling
    assert not torch.equal(other.net[0].weight, first.net[0].weight)


def test_decoder_shapes():
    dec = FeatureDecoder(7, (3, 2, 2), hidden=())
    assert len(dec.net) == 1
    assert dec(torch.zeros(5, 7)).shape == (5, 3, 2, 2)
    with pytest.raises(ValueError, match="features"):
        dec(torch.zeros(5, 8))


# ---------------------------------------------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------------------------------------------
def _ok():
    A = torch.randn(N_FEATURES, P, generator=torch.Generator().manual_seed(0))
    return linear_map(A), torch.zeros(3, N_FEATURES), torch.zeros(1, *SHAPE)


@pytest.mark.parametrize("kwargs, name", [
    (dict(steps=0), "steps"), (dict(steps=2.5), "steps"), (dict(lr=0.0), "lr"), (dict(lr=float("nan")), "lr"),
    (dict(prior_weight=-1.0), "prior_weight"), (dict(prior_weight=float("inf")), "prior_weight"),
    (dict(bounds=(1.0, 0.0)), "bounds"), (dict(bounds=(0.0,)), "bounds"), (dict(schedule="linear"), "schedule"),
    (dict(observed=torch.full((3, N_FEATURES), float("nan"))), "observed"),
    (dict(observed=torch.zeros(3, N_FEATURES + 1)), "observed"),
    (dict(x_init=torch.zeros(2, *SHAPE)), "x_init"), (dict(x_init=torch.zeros(1, *SHAPE).long()), "x_init"),
    (dict(feature_map=3), "feature_map"),
])
def test_invert_by_optimisation_validation(kwargs, name):
    fmap, observed, x0 = _ok()
    args = dict(feature_map=fmap, observed=observed, x_init=x0, steps=1) | kwargs
    with pytest.raises(ValueError, match=name):
        fi.invert_by_optimisation(**args)


@pytest.mark.parametrize("kwargs, name", [
    (dict(rcond=1.0), "rcond"), (dict(rcond=-0.1), "rcond"), (dict(iterations=0), "iterations"),
    (dict(chunk_size=0), "chunk_size"), (dict(x0=torch.zeros(2, *SHAPE)), "x0"),
    (dict(observed=torch.zeros(N_FEATURES)), "observed"), (dict(observed=torch.zeros(3, 5)), "observed"),
])
def test_linearised_estimator_validation(kwargs, name):
    fmap, observed, x0 = _ok()
    args = dict(feature_map=fmap, observed=observed, x0=x0) | kwargs
    with pytest.raises(ValueError, match=name):
        fi.linearised_estimator(**args)


@pytest.mark.parametrize("kwargs, name", [
    (dict(sigma=-0.1), "sigma"), (dict(sigma=float("inf")), "sigma"), (dict(epochs=0), "epochs"),
    (dict(batch_size=0), "batch_size"), (dict(lr=-1.0), "lr"), (dict(generator=0), "generator"),
    (dict(images=torch.zeros(0, *SHAPE)), "images"), (dict(images=torch.zeros(4, 1, 3, 3)), "images"),
    (dict(decoder="mlp"), "decoder"), (dict(device="tpu"), "device"),
])
def test_train_decoder_validation(kwargs, name):
    fmap, _, _ = _ok()
    args = dict(decoder=FeatureDecoder(N_FEATURES, SHAPE, hidden=(8,)), feature_map=fmap,
                images=torch.zeros(4, *SHAPE), sigma=0.1, epochs=1, progress=False, device="cpu") | kwargs
    with pytest.raises(ValueError, match=name):
        fi.train_decoder(**args)


@pytest.mark.parametrize("kwargs, name", [
    (dict(n_features=0), "n_features"), (dict(output_shape=()), "output_shape"),
    (dict(output_shape=(1, 0, 4)), "output_shape"), (dict(hidden=(8, 0)), "hidden"),
    (dict(generator="seed"), "generator"),
])
def test_feature_decoder_validation(kwargs, name):
    with pytest.raises(ValueError, match=name):
        FeatureDecoder(**(dict(n_features=N_FEATURES, output_shape=SHAPE) | kwargs))


def test_decode_validation():
    with pytest.raises(ValueError, match="observed"):
        fi.decode(FeatureDecoder(N_FEATURES, SHAPE, hidden=()), torch.zeros(0, N_FEATURES))
    with pytest.raises(ValueError, match="decoder"):
        fi.decode(None, torch.zeros(2, N_FEATURES))
