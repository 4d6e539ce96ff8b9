"""Unit tests of compendium.attacks.diffusion_guided and compendium.models.denoisers (Huang, Meng et al. 2024):
the diffusers schedules and Tweedie's estimate, the release, both samplers' steps, the prior-free baseline and
Reconstruction Vulnerability (exact Jacobian norm against Eq. 17)."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

from compendium.attacks import diffusion_guided as dg
from compendium.models.denoisers import MLPDenoiser, predict_noise


def _attacked(seed=1):
    torch.manual_seed(seed)  # PyTorch's default initialisation, as the paper's "random fixed weights"
    return nn.Sequential(nn.Flatten(), nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))


class ZeroDenoiser(nn.Module):
    """A prior that predicts no noise: Tweedie's estimate is x_t / sqrt(abar_t), so it moves with x_t."""

    def forward(self, x, t):
        return torch.zeros_like(x)


class OracleDenoiser(nn.Module):
    """The exact noise predictor for a point-mass prior at ``x0``: eps = (x_t - sqrt(abar) x0) / sqrt(1 - abar)."""

    def __init__(self, x0):
        super().__init__()
        self.x0 = x0
        self.abar = dg.ddpm_scheduler().alphas_cumprod

    def forward(self, x, t):
        a = self.abar[int(t)]
        return (x - a.sqrt() * self.x0) / (1 - a).sqrt()


def test_schedule_is_the_papers_and_tweedie_recovers_x0():
    s = dg.ddpm_scheduler()
    abar = s.alphas_cumprod.double()
    assert float(abar[0]) == pytest.approx(0.9999, abs=1e-7)  # float32, as diffusers stores it
    assert float(abar[499]) == pytest.approx(0.07859, rel=1e-3)
    assert float(abar[999]) == pytest.approx(4.036e-5, rel=1e-3)
    x0 = torch.rand(1, 1, 2, 2) * 1.6 - 0.8
    noise = torch.randn(1, 1, 2, 2, generator=torch.Generator().manual_seed(0))
    t = torch.tensor([300])
    xt = s.add_noise(x0, noise, t)
    s.set_timesteps(1000)
    out = s.step(noise, 300, xt, generator=torch.Generator().manual_seed(1))
    torch.testing.assert_close(out.pred_original_sample, x0, atol=1e-5, rtol=0)


def test_ddim_sigma_matches_the_noise_diffusers_adds():
    s = dg.ddim_scheduler(100)
    x = torch.randn(1, 1, 2, 2)
    eps = torch.randn(1, 1, 2, 2)
    z = torch.randn(1, 1, 2, 2)
    for t in (int(s.timesteps[0]), int(s.timesteps[50]), int(s.timesteps[-1])):
        with_noise = s.step(eps, t, x, eta=1.0, variance_noise=z).prev_sample
        mean = s.step(eps, t, x, eta=1.0, variance_noise=torch.zeros_like(z)).prev_sample
        torch.testing.assert_close(with_noise - mean, dg.ddim_sigma(s, t) * z, atol=1e-6, rtol=1e-5)
    assert dg.ddim_sigma(s, int(s.timesteps[-1])) == 0.0  # the last step lands on abar = 1 without noise


def test_release_raw_and_normalised():
    g = torch.tensor([3.0, 4.0])
    assert torch.equal(dg.release(g, sigma=0.0, normalise=False, generator=torch.Generator()), g)
    torch.testing.assert_close(dg.release(g, sigma=0.0, normalise=True, generator=torch.Generator()),
                               torch.tensor([0.6, 0.8]))
    draws = torch.stack([dg.release(torch.zeros(1000), sigma=0.3, normalise=False,
                                    generator=torch.Generator().manual_seed(k)) for k in range(5)])
    assert abs(float(draws.std()) - 0.3) < 0.01
    with pytest.raises(ValueError, match="sigma=-1"):
        dg.release(g, sigma=-1.0, normalise=False, generator=torch.Generator())


def test_weight_gradient_is_differentiable_in_the_input():
    model = _attacked()
    x = torch.randn(1, 1, 2, 2, requires_grad=True)
    g = dg.weight_gradient(model, x, torch.tensor([1]), create_graph=True)
    assert g.shape == (sum(p.numel() for p in model.parameters()),)
    (dx,) = torch.autograd.grad(g.square().sum(), x)
    assert float(dx.abs().sum()) > 0


def test_dps_with_an_exact_prior_and_the_prior_alone():
    """With the exact denoiser of a point mass the prior alone already returns it; guidance keeps it there; the
    oracle peak is the best step and the trajectory has one entry per step."""
    x0 = torch.tensor([[[[0.5, -0.5], [0.25, 0.0]]]])
    model = _attacked()
    label = torch.tensor([0])
    g = dg.weight_gradient(model, x0, label).detach()[None]
    (run,) = dg.dps_reconstruct(OracleDenoiser(x0), model, label, g, shape=(1, 1, 2, 2), zeta=0.5, steps=50,
                             generators=torch.Generator().manual_seed(0), targets=x0)
    assert len(run.loss) == len(run.psnr) == 50 and run.final_psnr > 60
    assert run.peak_psnr == pytest.approx(float(np.max(run.psnr)))
    (prior,) = dg.dps_reconstruct(OracleDenoiser(x0), model, label, g, shape=(1, 1, 2, 2), zeta=0.0, steps=50,
                               generators=torch.Generator().manual_seed(0))
    assert prior.psnr is None and prior.peak_step is None
    torch.testing.assert_close(prior.final, x0, atol=1e-4, rtol=0)


def test_guidance_pulls_an_uninformative_prior_towards_the_target():
    """A prior that knows nothing about the images: the DPS guidance alone lowers the matching loss and moves the
    estimate towards the private image, deterministically for a seed; DSG runs one entry per step."""
    target = torch.tensor([[[[0.6, -0.4], [0.3, -0.7]]]])
    model = _attacked()
    label = torch.tensor([1])
    g = dg.weight_gradient(model, target, label).detach()[None]
    kwargs = dict(shape=(1, 1, 2, 2), steps=200, generators=torch.Generator().manual_seed(0), targets=target)
    (prior,) = dg.dps_reconstruct(ZeroDenoiser(), model, label, g, zeta=0.0, **kwargs)
    kwargs["generators"] = torch.Generator().manual_seed(0)
    (guided,) = dg.dps_reconstruct(ZeroDenoiser(), model, label, g, zeta=0.5, **kwargs)
    assert guided.loss[-1] < 0.5 * prior.loss[-1]
    assert guided.mse[-1] < prior.mse[-1]
    (again,) = dg.dps_reconstruct(ZeroDenoiser(), model, label, g, zeta=0.5,
                               **(kwargs | {"generators": torch.Generator().manual_seed(0)}))
    assert torch.equal(again.final, guided.final)
    (dsg,) = dg.dsg_reconstruct(ZeroDenoiser(), model, label, g, shape=(1, 1, 2, 2),
                             guidance_rate=0.5, steps=20, generators=torch.Generator().manual_seed(0), targets=target)
    assert len(dsg.loss) == 20 and np.isfinite(dsg.psnr).all()


class SaturatingDenoiser(nn.Module):
    """A prior whose Tweedie estimate lies far outside [-1, 1], so the clipped estimate has no gradient in x_t."""

    def forward(self, x, t):
        return torch.full_like(x, -1e4)


def test_dsg_at_full_guidance_with_a_zero_gradient_steps_to_the_mean(monkeypatch):
    """m_r = 1 and a zero loss gradient make d_m = 0; DSG then steps to the DDIM mean u, as the DSG reference does
    (it was NaN): the iterate is the noise-free DDIM chain from the same start."""
    model = _attacked()
    label = torch.tensor([1])
    g = dg.weight_gradient(model, torch.zeros(1, 1, 2, 2), label).detach()[None]
    scheduler = dg.ddim_scheduler(10)
    x = torch.randn(1, 1, 2, 2, generator=torch.Generator().manual_seed(0))
    means = []
    for t in scheduler.timesteps:
        x = scheduler.step(SaturatingDenoiser()(x, t), t, x, eta=1.0, use_clipped_model_output=True,
                           variance_noise=torch.zeros_like(x)).prev_sample
        means.append(x)
    seen, original = [], dg.predict_noise  # the iterates x_t the sampler visits
    monkeypatch.setattr(dg, "predict_noise", lambda denoiser, x, t: (seen.append(x.detach().clone()),
                                                                     original(denoiser, x, t))[1])
    (run,) = dg.dsg_reconstruct(SaturatingDenoiser(), model, label, g, shape=(1, 1, 2, 2), guidance_rate=1.0,
                             steps=10, generators=torch.Generator().manual_seed(0))
    assert torch.isfinite(run.final).all()
    torch.testing.assert_close(torch.stack(seen[1:]), torch.stack(means[:-1]))


def test_gradient_matching_baseline_lowers_the_matching_loss():
    target = torch.tensor([[[[0.6, -0.4], [0.3, -0.7]]]])
    model = _attacked()
    label = torch.tensor([1])
    g = dg.weight_gradient(model, target, label).detach()[None]
    (run,) = dg.gradient_matching(model, label, g, shape=(1, 1, 2, 2), iterations=300,
                               generators=torch.Generator().manual_seed(0), targets=target)
    assert run.loss[-1] < 1e-2 * run.loss[0]


def test_inverting_gradients_matches_the_gradients_direction():
    """Inverting Gradients lowers the cosine loss from its start, keeps the iterate in [-1, 1], returns the restart
    with the lowest final loss, and ignores the release's scale (cosine)."""
    target = torch.tensor([[[[0.6, -0.4], [0.3, -0.7]]]])
    model = _attacked()
    label = torch.tensor([1])
    g = dg.weight_gradient(model, target, label).detach()[None]
    kwargs = dict(shape=(1, 1, 2, 2), iterations=200, tv_weight=0.0, targets=target)
    (run,) = dg.inverting_gradients(model, label, g, generators=torch.Generator().manual_seed(0), restarts=3, **kwargs)
    assert run.loss[-1] < 0.1 * run.loss[0] and run.final.abs().max() <= 1
    (first,) = dg.inverting_gradients(model, label, g, generators=torch.Generator().manual_seed(0), restarts=1,
                                      **kwargs)
    assert run.loss[-1] <= first.loss[-1]  # the first start is one of the three
    (scaled,) = dg.inverting_gradients(model, label, 5 * g, generators=torch.Generator().manual_seed(0), restarts=3,
                                    **kwargs)
    torch.testing.assert_close(scaled.final, run.final, atol=1e-3, rtol=0)  # up to the signs of tiny gradients
    assert float(dg.total_variation(torch.tensor([[[[0.0, 1.0], [0.0, 1.0]]]]))) == 1.0


def test_a_batch_runs_each_image_as_it_would_run_alone():
    """Each image of a batch draws from its own generator and gets its own gradient, so every attack returns what
    it returns for that image alone (up to the rounding of batched products)."""
    images = torch.tensor([[[[0.6, -0.4], [0.3, -0.7]]], [[[-0.2, 0.5], [0.9, 0.1]]]])
    model, labels = _attacked(), torch.tensor([1, 0])
    g = torch.stack([dg.weight_gradient(model, x[None], y[None]) for x, y in zip(images, labels)])
    attacks = {"DPS": lambda **k: dg.dps_reconstruct(ZeroDenoiser(), model, zeta=0.5, steps=30, **k),
               "DSG": lambda **k: dg.dsg_reconstruct(ZeroDenoiser(), model, guidance_rate=0.5, steps=10, **k),
               "DLG": lambda **k: dg.gradient_matching(model, iterations=30, **k),
               "IG": lambda **k: dg.inverting_gradients(model, iterations=30, restarts=2, **k)}
    for name, run in attacks.items():
        both = run(labels=labels, target_gradients=g, shape=(2, 1, 2, 2), targets=images,
                   generators=[torch.Generator().manual_seed(5), torch.Generator().manual_seed(6)])
        for b, seed in enumerate((5, 6)):
            (alone,) = run(labels=labels[b:b + 1], target_gradients=g[b:b + 1], shape=(1, 1, 2, 2),
                           targets=images[b:b + 1], generators=torch.Generator().manual_seed(seed))
            torch.testing.assert_close(both[b].final, alone.final, atol=1e-5, rtol=0, msg=name)
            np.testing.assert_allclose(both[b].loss, alone.loss, rtol=1e-4, atol=1e-7, err_msg=name)
    with pytest.raises(ValueError, match="a list of 2 torch.Generator"):
        dg.gradient_matching(model, labels, g, shape=(2, 1, 2, 2), iterations=3, generators=torch.Generator())


def test_a_batch_of_step_sizes_runs_each_as_alone():
    """One step size (DPS) or guidance rate (DSG) per image: a sweep in one batch returns each image's own run,
    m_r = 0 (the plain DDIM step) included beside a guided image."""
    images = torch.tensor([[[[0.6, -0.4], [0.3, -0.7]]], [[[-0.2, 0.5], [0.9, 0.1]]]])
    model, labels = _attacked(), torch.tensor([1, 0])
    g = torch.stack([dg.weight_gradient(model, x[None], y[None]) for x, y in zip(images, labels)])
    samplers = {"DPS": (lambda v, **k: dg.dps_reconstruct(ZeroDenoiser(), model, zeta=v, steps=30, **k), (0.0, 0.7)),
                "DSG": (lambda v, **k: dg.dsg_reconstruct(ZeroDenoiser(), model, guidance_rate=v, steps=10, **k),
                        (0.0, 0.5))}
    for name, (run, values) in samplers.items():
        both = run(list(values), labels=labels, target_gradients=g, shape=(2, 1, 2, 2), targets=images,
                   generators=[torch.Generator().manual_seed(5), torch.Generator().manual_seed(6)])
        for b, (seed, value) in enumerate(zip((5, 6), values)):
            (alone,) = run(value, labels=labels[b:b + 1], target_gradients=g[b:b + 1], shape=(1, 1, 2, 2),
                           targets=images[b:b + 1], generators=torch.Generator().manual_seed(seed))
            torch.testing.assert_close(both[b].final, alone.final, atol=1e-5, rtol=0, msg=name)
        with pytest.raises(ValueError, match="3 values for 2 images"):
            run([0.1, 0.2, 0.3], labels=labels, target_gradients=g, shape=(2, 1, 2, 2),
                generators=[torch.Generator(), torch.Generator()])
    with pytest.raises(ValueError, match="m_r"):
        dg.dsg_reconstruct(ZeroDenoiser(), model, labels, g, shape=(2, 1, 2, 2), guidance_rate=[0.5, 1.5],
                           generators=[torch.Generator(), torch.Generator()])


def test_rv_exact_against_finite_differences_and_eq17():
    model = _attacked()
    images = torch.randn(3, 1, 2, 2, generator=torch.Generator().manual_seed(0))
    labels = torch.tensor([0, 1, 1])
    exact = dg.gradient_jacobian_norm(model, images, labels)
    h = 1e-3
    x, y = images[0].double(), labels[:1]
    model64 = _attacked().double()
    cols = []
    for i in range(4):
        e = torch.zeros(4, dtype=torch.float64)
        e[i] = h
        plus = dg.weight_gradient(model64, (x.flatten() + e).reshape(1, 1, 2, 2), y)
        minus = dg.weight_gradient(model64, (x.flatten() - e).reshape(1, 1, 2, 2), y)
        cols.append((plus - minus) / (2 * h))
    assert float(exact[0]) == pytest.approx(float(torch.stack(cols).norm()), rel=1e-4)
    # Eq. (17) with Gaussian directions: a mean of norms, below ||J||_F (Jensen) but of its order
    gaussian = dg.gradient_jacobian_norm_eq17(model, images, labels, directions=4000,
                                              generator=torch.Generator().manual_seed(1))
    assert torch.all(gaussian <= exact * 1.02) and torch.all(gaussian >= 0.6 * exact), (gaussian, exact)
    # unit directions: the Gaussian value over sqrt(m) (E||v|| = sqrt(m) up to O(1/m), independent of v / ||v||)
    m = sum(p.numel() for p in model.parameters())
    unit = dg.gradient_jacobian_norm_eq17(model, images, labels, directions=4000, law="unit",
                                          generator=torch.Generator().manual_seed(1))
    np.testing.assert_allclose(unit.numpy(), gaussian.numpy() / math.sqrt(m - 0.5), rtol=0.03)
    # the same draws through the full Jacobian: the estimator is exactly mean_j ||J^T v_j||
    x, y = images[1:2], labels[1:2]
    jac = dg.gradient_jacobian(model, x[0], y[0])  # (m, pixels)
    v = torch.randn(5, m, generator=torch.Generator().manual_seed(2))
    by_hand = (v @ jac).norm(dim=1).mean()
    again = dg.gradient_jacobian_norm_eq17(model, x, y, directions=5, generator=torch.Generator().manual_seed(2))
    assert float(again[0]) == pytest.approx(float(by_hand), rel=1e-5)
    with pytest.raises(ValueError, match="law='orthogonal'"):
        dg.gradient_jacobian_norm_eq17(model, x, y, directions=5, law="orthogonal", generator=torch.Generator())


def test_mlp_denoiser_learns_a_two_point_prior():
    """Trained on two images, the denoiser's Tweedie estimate at a moderate noise level points at the nearer one."""
    images = torch.tensor([[[[0.8, 0.8], [0.8, 0.8]]], [[[-0.8, -0.8], [-0.8, -0.8]]]]).repeat(256, 1, 1, 1)
    model = MLPDenoiser((1, 2, 2), hidden=64, time_dim=16, generator=torch.Generator().manual_seed(0))
    history = dg.train_denoiser(model, images, epochs=20, generator=torch.Generator().manual_seed(1), lr=3e-3,
                                batch_size=128, device="cpu", progress=False)
    assert history["loss"][-1] < 0.5 * history["loss"][0]
    s = dg.ddpm_scheduler()
    t = 200
    xt = s.add_noise(images[:2], torch.randn(2, 1, 2, 2, generator=torch.Generator().manual_seed(2)),
                     torch.tensor([t, t]))
    with torch.no_grad():
        eps = predict_noise(model, xt, torch.tensor([t, t]))
    a = s.alphas_cumprod[t]
    x0 = (xt - (1 - a).sqrt() * eps) / a.sqrt()
    assert float(x0[0].mean()) > 0.2 and float(x0[1].mean()) < -0.2


def test_samplers_refuse_bad_input():
    model = _attacked()
    g = torch.zeros(1, 58)
    with pytest.raises(ValueError, match="zeta=-1"):
        dg.dps_reconstruct(OracleDenoiser(torch.zeros(1, 1, 2, 2)), model, torch.tensor([0]), g,
                           shape=(1, 1, 2, 2), zeta=-1.0, generators=torch.Generator())
    with pytest.raises(ValueError, match="guidance_rate=1.5"):
        dg.dsg_reconstruct(OracleDenoiser(torch.zeros(1, 1, 2, 2)), model, torch.tensor([0]), g,
                           shape=(1, 1, 2, 2), guidance_rate=1.5, generators=torch.Generator())
    with pytest.raises(ValueError, match="one per image"):
        dg.dps_reconstruct(OracleDenoiser(torch.zeros(1, 1, 2, 2)), model, torch.tensor([0]), g,
                           shape=(2, 1, 2, 2), zeta=1.0, generators=torch.Generator())
    with pytest.raises(ValueError, match="generators=None"):
        dg.dps_reconstruct(OracleDenoiser(torch.zeros(1, 1, 2, 2)), model, torch.tensor([0]), g,
                           shape=(1, 1, 2, 2), zeta=1.0, generators=None)


@pytest.mark.parametrize("name, params", [("MLP_1", 99_202), ("MLP_2", 181_186), ("MLP_3", 741_574),
                                          ("CNN", 206_338), ("ResMini", 462_562)])
def test_gradient_targets_have_the_books_sizes_and_are_seeded(name, params):
    from compendium.models import gradient_target

    model = gradient_target(name, generator=torch.Generator().manual_seed(1))
    assert sum(p.numel() for p in model.parameters()) == params and not model.training
    twin = gradient_target(name, generator=torch.Generator().manual_seed(1))
    x = torch.rand(1, 1, 8, 8) * 2 - 1
    torch.testing.assert_close(dg.weight_gradient(model, x, torch.tensor([1])),
                               dg.weight_gradient(twin, x, torch.tensor([1])))
    assert model(x).shape == (1, 2)


def test_gradient_targets_refuse_bad_input():
    from compendium.models import gradient_target

    with pytest.raises(ValueError, match="name='VGG'"):
        gradient_target("VGG")
    with pytest.raises(ValueError, match="image_size=10; allowed: a multiple of 4"):
        gradient_target("CNN", image_size=10)
