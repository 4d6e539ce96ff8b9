"""Unit tests of compendium.chapters.diffusion (Huang, Meng et al. 2024): settings and their errors, the digits
split, the paper-scale loaders (CelebA-HQ folder, pretrained UNet2DModel) with their offline errors, one attack end to
end on a tiny prior, the experiment's cache and the tables' bookkeeping."""
from __future__ import annotations

import math

import nbformat
import numpy as np
import pandas as pd
import pytest
import torch

from compendium import data as datasets
from compendium.attacks import diffusion_guided as dg
from compendium.base import repository_root
from compendium.bounds import diffusion as theory
from compendium.chapters import diffusion as chapter
from compendium.models import denoisers


@pytest.fixture(scope="module")
def tiny():
    """The ci scale with a prior of 3 epochs and short samplers: seconds."""
    cfg = chapter.settings("ci", device="cpu", prior_epochs=3, dps_steps=20, dsg_steps=10, dlg_iterations=20,
                           targets=2, rv_images=2)
    data = chapter.load_data(cfg)
    return cfg, data, chapter.prior(cfg, data, progress=False)


@pytest.mark.parametrize("scale", ["ci", "book", "paper"])
def test_scales_resolve(scale):
    cfg = chapter.settings(scale, device="cpu")
    assert cfg.scale == scale and cfg.digits == (scale != "paper")
    assert cfg.shape == ((1, 1, 8, 8) if cfg.digits else (1, 3, 256, 256))
    assert "CNN" in cfg.attacked_models


@pytest.mark.parametrize("overrides, match", [
    (dict(image_size=10), "image_size=10"),
    (dict(in_channels=2), "in_channels"),
    (dict(variances=(0.0, -1e-3)), "variances"),
    (dict(variances=()), "variances"),
    (dict(normalised_variances=(0.0,)), "normalised_variances"),
    (dict(dsg_rate=1.5), "dsg_rate"),
    (dict(dps_zeta=-1.0), "dps_zeta"),
    (dict(sweep_rates=(0.2, 2.0)), "sweep_rates"),
    (dict(attacked_models=("VGG",)), "attacked_models"),
    (dict(targets=400), "targets=400"),
    (dict(dps_steps=1), "dps_steps"),
    (dict(dsg_steps=1), "dsg_steps"),
    (dict(baselines="yes"), "baselines='yes'"),
    (dict(prior_checkpoint="google/ddpm-celebahq-256"), "prior_checkpoint"),
    (dict(image_size=16), "prior_checkpoint"),
    (dict(guidance=3), "unknown parameter"),
])
def test_bad_settings_fail_with_the_parameter_named(overrides, match):
    with pytest.raises(ValueError, match=match):
        chapter.settings("ci", device="cpu", **overrides)
    with pytest.raises(ValueError, match="scale='huge'"):
        chapter.settings("huge")


def test_paper_shape_skips_the_normalised_rows_and_the_baselines_and_plans_without_them():
    from compendium.plan.costs import diffusion_runs

    overrides = chapter.PAPER_SHAPE_OVERRIDES
    assert overrides["normalised_variances"] == [] and overrides["baselines"] is False
    full = chapter.settings("ci", device="cpu")
    cut = chapter.settings("ci", device="cpu", normalised_variances=(), baselines=False)
    runs, fewer = diffusion_runs(full), diffusion_runs(cut)
    assert {"DLG", "IG"} <= set(runs) and not {"DLG", "IG"} & set(fewer)
    assert not any(key.startswith("prior") for key in fewer)
    assert fewer[f"DPS {cut.dps_steps}"] < runs[f"DPS {full.dps_steps}"]


def test_digits_split_keeps_the_targets_out_of_the_prior():
    cfg = chapter.settings("book", device="cpu")
    d = chapter.load_data(cfg)
    x, y = datasets.digits("all")
    assert d.prior.shape == (1500, 1, 8, 8) and len(d.images) == cfg.rv_images and d.targets == cfg.targets
    torch.testing.assert_close(d.prior, 2 * x[:1500] - 1)
    torch.testing.assert_close(d.images, 2 * x[1500:1500 + cfg.rv_images] - 1)
    assert torch.equal(d.labels, y[1500:1500 + cfg.rv_images] % 2)
    assert d.images.min() >= -1 and d.images.max() <= 1
    image, label = d.target(1)
    assert image.shape == (1, 1, 8, 8) and label.tolist() == [int(y[1501]) % 2]
    # on another device, as the notebook asks for the attacked model's ("meta" stands in for CUDA on the CPU)
    image, label = d.target(1, "meta")
    assert image.device.type == label.device.type == "meta" and image.shape == (1, 1, 8, 8)


def test_prior_samples_lie_on_the_denoisers_device():
    """The notebook passed the data's (CPU) device while the prior had moved to the GPU; sample_prior now follows
    the denoiser ("meta" stands in for CUDA on the CPU)."""
    from compendium.attacks import diffusion_guided as dg
    from compendium.models import denoisers

    model = denoisers.MLPDenoiser((1, 8, 8), hidden=16, generator=torch.Generator().manual_seed(0)).to("meta")
    samples = dg.sample_prior(model, (2, 1, 8, 8), generator=torch.Generator().manual_seed(0), steps=3)
    assert samples.device.type == "meta" and samples.shape == (2, 1, 8, 8)


def test_paper_scale_reads_celeba_from_a_folder_and_says_what_is_missing(tmp_path):
    from PIL import Image

    cfg = chapter.settings("paper", device="cpu", celeba_dir=str(tmp_path), image_size=16, targets=2, rv_images=3)
    with pytest.raises(FileNotFoundError, match=r"3 CelebA-HQ images .* found 0.*celeba_dir"):
        chapter.load_data(cfg)
    rng = np.random.default_rng(0)
    for i in range(3):  # non-square, to exercise the centre crop
        Image.fromarray(rng.integers(0, 256, (40, 30, 3), dtype=np.uint8)).save(tmp_path / f"{i:05d}.png")
    d = chapter.load_data(cfg)
    assert d.prior is None and d.images.shape == (3, 3, 16, 16) and d.labels.tolist() == [0, 1, 0]
    assert d.images.min() >= -1 and d.images.max() <= 1


def test_pretrained_prior_loads_a_saved_unet_and_fails_clearly(tmp_path):
    from diffusers import UNet2DModel

    unet = UNet2DModel(sample_size=8, in_channels=1, out_channels=1, block_out_channels=(8, 16), layers_per_block=1,
                       norm_num_groups=4, down_block_types=("DownBlock2D", "DownBlock2D"),
                       up_block_types=("UpBlock2D", "UpBlock2D"))
    unet.save_pretrained(tmp_path / "prior")
    loaded = denoisers.pretrained_denoiser(str(tmp_path / "prior"))
    x = torch.randn(2, 1, 8, 8, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(denoisers.predict_noise(loaded, x, 10), unet(x, 10).sample)
    assert not any(p.requires_grad for p in loaded.parameters())
    with pytest.raises(denoisers.PriorUnavailable, match="could not be loaded.*from_pretrained"):
        denoisers.pretrained_denoiser(str(tmp_path / "missing"))


def test_one_attack_end_to_end_is_deterministic_and_cached(tiny):
    cfg, data, prior = tiny
    assert prior.history[-1] < prior.history[0] and "624,192 parameters" in prior.describe()
    exp = chapter.Experiment(cfg, prior, data)
    run = exp.run(method="DPS", target=1, variance=1e-3)
    assert exp.run(method="DPS", target=1, variance=1e-3, parameter=cfg.dps_zeta) is run  # cached
    assert len(exp._runs) == data.targets  # every target in one batch: a run never depends on the call order
    again = chapter.Experiment(cfg, prior, data).run(method="DPS", target=1, variance=1e-3)
    torch.testing.assert_close(again.trajectory.final, run.trajectory.final, rtol=0, atol=0)
    tr = run.trajectory
    assert len(tr.timesteps) == cfg.dps_steps and tr.timesteps[0] > tr.timesteps[-1]
    assert tr.snapshots.shape == (dg.SNAPSHOTS, 1, 8, 8) and tr.snapshot_steps.tolist()[::6] == [0, 19]
    torch.testing.assert_close(tr.snapshots[-1], tr.final[0])
    row = run.row(data.images[1])
    image = (data.images[1:2] + 1) / 2
    final = (tr.final + 1) / 2
    assert row["final PSNR"] == pytest.approx(-10 * math.log10(float(((final - image) ** 2).mean())), rel=1e-5)
    assert row["peak PSNR"] >= row["final PSNR"] and row["gradient"] == "raw" and row["σ²"] == 1e-3
    # the prior alone is DPS with zeta = 0 from the same seed
    floor = exp.run(method="prior", target=1)
    zero = exp.run(method="DPS", target=1, parameter=0.0)
    torch.testing.assert_close(floor.trajectory.final, zero.trajectory.final, rtol=0, atol=0)
    with pytest.raises(ValueError, match="method='GGL'"):
        exp.run(method="GGL", target=0)
    with pytest.raises(ValueError, match="target=5"):
        chapter.attack(cfg, prior, exp.model(), data, method="DPS", targets=[5])
    with pytest.raises(ValueError, match="variance=-0.1"):
        chapter.attack(cfg, prior, exp.model(), data, method="DPS", targets=[0], variance=-0.1)
    with pytest.raises(ValueError, match="targets=\\[\\]"):
        chapter.attack(cfg, prior, exp.model(), data, method="DPS", targets=[])
    with pytest.raises(ValueError, match="parameter holds 3 values for 2 targets"):
        chapter.attack(cfg, prior, exp.model(), data, method="DPS", targets=[0, 1], parameter=[1.0, 2.0, 3.0])


def test_a_grid_of_settings_runs_in_one_batch_as_each_alone(tiny):
    """The noise variances and step sizes of one sampler share a batch (Experiment.runs), and each run is the one
    its setting gives alone: compared over the first steps, since a guided sampler amplifies the rounding of
    batched products over many (already between a batch of two targets and one alone)."""
    cfg, data, prior = tiny
    exp = chapter.Experiment(cfg, prior, data)
    settings = [dict(method="DPS", variance=v, parameter=z) for v in (0.0, 1e-3) for z in (1.0, 3.0)]
    grid = exp.runs(settings, False, "")
    assert len(grid) == 4 * data.targets and len({r.seconds for r in exp._runs.values()}) == 1  # one batch
    for setting in settings[::3]:
        (alone,) = chapter.attack(cfg, prior, exp.model(), data, targets=[1], **setting)
        batched = exp.run(target=1, **setting)
        assert (batched.variance, batched.parameter) == (setting["variance"], setting["parameter"])
        np.testing.assert_allclose(batched.trajectory.loss[:3], alone.trajectory.loss[:3], rtol=1e-4)
    ones = [r.trajectory.loss[1] for r in (exp.run(target=1, **s) for s in settings)]
    assert len(set(ones)) == len(settings)  # the four settings do differ by the second step


def test_tables_bookkeeping(tiny):
    cfg, data, prior = tiny
    exp = chapter.Experiment(cfg, prior, data)
    grid = chapter.noise_grid(exp, progress=False)
    jobs = (len(cfg.variances) + len(cfg.normalised_variances)) * 2 * data.targets
    assert len(grid) == jobs and len(exp._runs) == jobs
    t1 = chapter.table1(grid)
    assert len(t1) == jobs // data.targets
    norm = t1[t1["gradient"] == "normalised"].iloc[0]
    assert norm["ε (Lemma 1)"] == pytest.approx(theory.gaussian_mechanism_epsilon(0.1, delta=1e-5))
    assert norm["ε (exact)"] == pytest.approx(theory.gaussian_mechanism_epsilon_exact(0.1, delta=1e-5))
    assert norm["paper PSNR"] == chapter.PAPER_TABLE1[(norm["method"], True, 1e-2)][0]
    assert t1[t1["gradient"] == "raw"]["ε (Lemma 1)"].isna().all()
    mean = grid[(grid["method"] == "DPS") & (grid["σ²"] == 0.0)]["final PSNR"].mean()
    assert t1.iloc[0]["final PSNR"] == pytest.approx(mean)
    rv = chapter.rv_table(exp, progress=False)
    assert rv["model"].tolist() == list(cfg.attacked_models)
    assert np.all(rv["mean ‖J‖_F"] <= rv["RV (Def. 3, max)"])
    cnn = rv.set_index("model").loc["CNN"]
    assert cnn["DPS PSNR"] == pytest.approx(mean)  # the grid's runs, reused
    base = chapter.baselines(exp, progress=False)
    assert base["method"].tolist() == ["DLG", "IG", "DPS", "DSG", "DLG", "IG", "DPS", "DSG", "prior only"]
    assert base.set_index(["method", "σ²"]).loc[("IG", 0.0), "paper PSNR"] == chapter.PAPER_TABLE5["IG"]
    assert base.set_index(["method", "σ²"]).loc[("DPS", 0.0), "paper PSNR"] == chapter.PAPER_TABLE5["DPS"]
    steps = chapter.step_comparison(exp, progress=False).set_index(["method", "steps"])
    assert sorted(steps.index) == sorted((m, n) for m in chapter.METHODS for n in {cfg.dps_steps, cfg.dsg_steps})
    assert steps.loc[("DPS", cfg.dps_steps), "final PSNR"] == pytest.approx(mean)  # the grid's runs, reused
    assert len(exp.run(method="DSG", target=0, steps=cfg.dps_steps).trajectory.loss) == cfg.dps_steps
    long = chapter.sweep(exp, method="DSG", steps=cfg.dps_steps, progress=False)
    assert set(long["steps"]) == {cfg.dps_steps} and len(long) == len(cfg.sweep_rates) * data.targets
    table = chapter.sweep_table(long, "m_r")
    first = long[long["parameter"] == cfg.sweep_rates[0]]["final PSNR"]
    assert table["m_r"].tolist() == list(cfg.sweep_rates)
    assert table["final PSNR SE"].iloc[0] == pytest.approx(first.std(ddof=1) / math.sqrt(len(first)))
    gaps = chapter.sampler_gaps(exp, progress=False)
    assert gaps[["DPS steps", "DSG steps"]].values.tolist() == [[cfg.dps_steps, cfg.dsg_steps], [cfg.dsg_steps] * 2,
                                                                [cfg.dps_steps] * 2]
    clean = grid[(grid["σ²"] == 0.0) & (grid["gradient"] == "raw")].set_index("method")["final PSNR"]
    paired = clean.loc["DPS"].to_numpy() - clean.loc["DSG"].to_numpy()
    assert gaps["DPS − DSG (dB)"].iloc[0] == pytest.approx(paired.mean())
    assert gaps["SE"].iloc[0] == pytest.approx(paired.std(ddof=1) / math.sqrt(len(paired)))
    by_step = chapter.rv_step_sizes(exp, rv)
    assert by_step["each model's step"].tolist() == ["ζ"] * len({*cfg.rv_zetas, cfg.dps_zeta}) + ["ζ · RV_CNN / RV"]
    assert by_step["ρ (final PSNR)"].abs().max() <= 1 and (by_step["lowest PSNR"] <= by_step["highest PSNR"]).all()


def test_a_lost_session_resumes_from_its_checkpoints(tiny, tmp_path, monkeypatch):
    """Checkpoints (issue 42): a sweep saves each finished run and RV row under cfg.checkpoint_dir; with half of them
    deleted (as a session lost midway leaves them) a rerun gives the same tables, and with all present it attacks
    nothing and computes no Jacobian."""
    import dataclasses

    from compendium.chapters.diffusion import experiments

    cfg, data, prior = tiny
    cfg = dataclasses.replace(cfg, checkpoint_dir=str(tmp_path / "checkpoints"))
    calls = {"attack": 0, "jacobian": 0}

    def counted(name, real):
        def call(*args, **kwargs):
            calls[name] += 1
            return real(*args, **kwargs)
        return call

    monkeypatch.setattr(experiments, "attack", counted("attack", experiments.attack))
    monkeypatch.setattr(dg, "gradient_jacobian_norm", counted("jacobian", dg.gradient_jacobian_norm))

    def session():
        calls.update(attack=0, jacobian=0)
        exp = chapter.Experiment(cfg, prior, data)
        grid = chapter.noise_grid(exp, progress=False).drop(columns="seconds")
        return grid, chapter.rv_table(exp, progress=False)

    grid, rv = session()
    first = dict(calls)
    files = sorted((tmp_path / "checkpoints").glob("*.pt"))
    assert len(files) == len({*files}) and not list((tmp_path / "checkpoints").glob("*.part"))
    dsg = [f for f in files if f.name.startswith("DSG-")]
    assert len([f for f in dsg if "-CNN-" in f.name]) == len(grid) // 2  # one file per run: DSG's half of the grid
    for f in dsg + [f for f in files if f.name.startswith("CNN-")]:  # half the runs and the CNN's RV row
        f.unlink()
    again, rv_again = session()
    pd.testing.assert_frame_equal(again, grid)
    pd.testing.assert_frame_equal(rv_again, rv)
    assert 0 < calls["attack"] < first["attack"] and calls["jacobian"] == 1
    third, rv_third = session()
    assert calls == {"attack": 0, "jacobian": 0}
    pd.testing.assert_frame_equal(third, grid)
    pd.testing.assert_frame_equal(rv_third, rv)
    other = chapter.checkpoint_key(dataclasses.replace(cfg, seed=1), {"method": "DPS", "model": "CNN", "target": 0})
    assert other != chapter.checkpoint_key(cfg, {"method": "DPS", "model": "CNN", "target": 0})


def test_epsilon_table_reproduces_printed_and_exact_values():
    t = chapter.epsilon_table()
    assert list(t["variance"]) == [1e-4, 1e-3, 1e-2, 1e-1]
    # Table 1's labels from Lemma 1, to the printed two decimals
    assert np.all(np.abs(t["eps_lemma1"] - t["eps_printed"]) < 0.005)
    assert np.allclose(t["eps_lemma1"], np.sqrt(2 * np.log(1.25e5)) / np.sqrt(t["variance"]), rtol=1e-12)
    # the exact epsilon of the same release: 1.17 to 11.2 times the printed one
    assert np.all(np.abs(t["eps_exact"] - [5425.51, 633.93, 91.82, 17.86]) < 0.005)
    assert np.allclose(t["exact_over_lemma1"], [11.1986, 4.1378, 1.8952, 1.1655], atol=1e-4)
    assert not t["lemma1_applies"].any()
    with pytest.raises(ValueError, match="variances"):
        chapter.epsilon_table([1e-4, -1.0])


def test_paper_table1_has_one_inconsistent_row():
    table = chapter.paper_table1_consistency()
    off = table[table["difference (dB)"].abs() > 0.01]
    assert off[["method", "gradient", "σ²"]].values.tolist() == [["DSG", "raw", 0.01]]
    assert off["difference (dB)"].iloc[0] == pytest.approx(0.600, abs=1e-3)


def test_notebook_loads_the_data_before_any_training():
    """At paper scale a missing CelebA-HQ folder must stop the chapter before the prior or any attack runs."""
    nb = nbformat.read(repository_root() / "notebooks" / "diffusion.ipynb", as_version=4)
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    first_load = next(i for i, s in enumerate(code) if "chapter.load_data(" in s)
    first_work = next(i for i, s in enumerate(code) if "chapter.prior(" in s or "Experiment(" in s)
    assert first_load < first_work


def test_paper_table2_rank_correlations_rest_on_resnet9():
    """Spearman's rho of the paper's own Table 2: 1.0 for DPS, 0.5 for DSG, and 0.0 for DSG without ResNet9."""
    assert chapter.paper_rank_correlations() == pytest.approx({"DPS": 1.0, "DSG": 0.5})
    without = chapter.paper_rank_correlations(tuple(m for m in chapter.PAPER_TABLE2 if m != "ResMini"))
    assert without == pytest.approx({"DPS": 1.0, "DSG": 0.0}, abs=1e-12)


def test_paper_parameter_counts_match_the_architectures_by_hand():
    counts = chapter.paper_parameter_counts()
    # the CNN at 3x256x256, 2 classes: two 3x3 convolutions, Linear(128 * 64 * 64, 256), Linear(256, 2)
    by_hand = (3 * 64 * 9 + 64) + (64 * 128 * 9 + 128) + (128 * 64 * 64 * 256 + 256) + (256 * 2 + 2)
    assert counts["CNN"] == by_hand
    assert counts["MLP_1"] == (3 * 256 * 256 * 512 + 512) + (512 * 128 + 128) + (128 * 2 + 2)
    numbers = chapter.quoted_numbers()
    assert numbers["df_paper_weights_max"] == max(n for name, n in counts.items() if name != "ResMini")
    assert numbers["df_ex1_exact_2"] > numbers["df_ex1_exact_1"] > numbers["df_ex1_printed"]
    assert numbers["df_paper_gradient_gb_max"] == pytest.approx(4 * max(
        n for name, n in counts.items() if name != "ResMini") / 1e9)


def test_memory_batch_cuts_to_the_free_memory_and_fails_clearly():
    gib = 2 ** 30
    assert chapter.memory_batch(4, free=100 * gib, footprint=gib) == 4  # the chapter's batch fits
    assert chapter.memory_batch(40, free=10 * gib, footprint=gib) == 8  # 80 % of the free memory
    assert chapter.memory_batch(4, free=gib, footprint=gib // 2) == 1
    with pytest.raises(chapter.GPUMemoryTooSmall, match=r"needs about 20\.0 GiB .* 15\.0 GiB are free"):
        chapter.memory_batch(4, free=15 * gib, footprint=20 * gib)
    with pytest.raises(ValueError, match="footprint"):
        chapter.memory_batch(4, free=gib, footprint=0)


def test_batches_of_one_give_the_runs_of_the_default_batches(tiny, monkeypatch):
    """What a GPU with little free memory does (Experiment.batch_size cut to 1) gives each image the run it has in
    the chapter's batch, to float tolerance; on a CPU the batch is the chapter's."""
    cfg, data, prior = tiny
    exp = chapter.Experiment(cfg, prior, data)
    assert exp.batch_size("DPS", "CNN", False) == max(data.targets, chapter.BATCH_ENTRIES // sum(
        p.numel() for p in exp.model().parameters()))
    settings = [dict(method=m, steps=4) for m in chapter.METHODS]
    batched = exp.runs(settings, False, "")
    one = chapter.Experiment(cfg, prior, data)
    monkeypatch.setattr(one, "batch_size", lambda *args: 1)
    alone = one.runs(settings, False, "")
    np.testing.assert_allclose(alone["final PSNR"], batched["final PSNR"], rtol=1e-4)


def test_rv_directions_are_drawn_on_the_device_and_seeded(tiny):
    cfg, data, _ = tiny
    generator = chapter.direction_generator(cfg)
    assert generator.device == torch.device("cpu") and generator.initial_seed() == cfg.seed
    model = chapter.attacked_model(cfg)
    images, labels = data.images[:2], data.labels[:2]
    runs = [dg.gradient_jacobian_norm_eq17(model, images, labels, directions=3,
                                           generator=chapter.direction_generator(cfg)) for _ in range(2)]
    torch.testing.assert_close(runs[0], runs[1], rtol=0, atol=0)  # the same seed, the same directions
    # on the CPU the directions are the ones the chapter always drew (a CPU generator seeded with cfg.seed)
    before = dg.gradient_jacobian_norm_eq17(model, images, labels, directions=3,
                                            generator=torch.Generator().manual_seed(cfg.seed))
    torch.testing.assert_close(runs[0], before, rtol=0, atol=0)


def test_spectral_norm_by_power_iteration_bounds_the_loss_gradient(tiny):
    cfg, data, _ = tiny
    model = chapter.attacked_model(cfg)
    image, label = data.target(0)
    residual = torch.randn(sum(p.numel() for p in model.parameters()), generator=torch.Generator().manual_seed(0))
    exact = float(torch.linalg.matrix_norm(dg.gradient_jacobian(model, image[0], label[0]), ord=2))
    start = float(dg.gradient_jacobian_spectral_norm(model, image[0], label[0], start=residual, iterations=0))
    power = dg.gradient_jacobian_spectral_norm(model, image[0], label[0], start=residual, iterations=30)
    _, vjp = torch.func.vjp(dg._gradient_map(model, label[0]), image[0])
    assert start == pytest.approx(float(vjp(residual / residual.norm())[0].norm()), rel=1e-5)
    assert start <= power <= exact * (1 + 1e-4) and power == pytest.approx(exact, rel=0.05)
    assert chapter.jacobian_spectral_norm(cfg, model, image, label, residual=residual) == (
        pytest.approx(exact, rel=1e-6), "exact")


def test_findings_record_without_stopping():
    findings = chapter.Findings(targets=8)
    assert findings.greater("a above b", 3.0, 1.0, 0.5) and not findings.greater("b above a", 1.0, 3.0, 0.5)
    assert findings.at_most("a within 2 SE", 1.5, 1.0, 0.3, k=2) and not findings.check("x", holds=False, found="")
    assert findings.table()["holds"].tolist() == ["yes", "no", "yes", "no"]
    assert findings.outcome(0) == chapter.outcome(True) == "held" and findings.outcome() == chapter.outcome(False)
    assert findings.not_run("c above d", why="the scale skips it") == "was not run (the scale skips it)"
    assert findings.table().iloc[-1].tolist() == ["c above d", "not run", "the scale skips it"]
    few = chapter.Findings(targets=chapter.SE_TARGETS - 1)
    assert not few.greater("a above b", 3.0, 1.0, 0.5) and few.table()["holds"].tolist() == ["not run"]
    assert few.outcome() == "was not run (too few targets for a standard error)"
    margin = chapter.Findings(targets=8)
    assert not margin.greater("a 10 dB above b", 12.0, 1.0, 0.5, margin=10)  # 12 - 11 < 1.5
    assert margin.table()["found"].iloc[0] == "12.00 against 1.00 + 10 = 11.00 dB, 3 SE = 1.50 dB"
    assert "8×8 digits" in chapter.scope(chapter.settings("book", device="cpu"))
    assert "3×256×256" in chapter.scope(chapter.settings("paper", device="cpu"))


def test_paper_pipeline_runs_at_paper_shapes(paper_shape_notebooks):
    """The paper scale's pipeline at its shapes on stand-in files (256² RGB targets, a random-weight UNet2DModel of
    the hub checkpoint's topology, the CNN at 3×256×256), counts cut to seconds (run by the suite's book work,
    tests/test_paper_shapes.py): every claim gets a row."""
    from compendium import scorecard

    executed = paper_shape_notebooks["diffusion"]
    if isinstance(executed, Exception):
        raise executed
    card = scorecard.read_card(executed)
    assert card is not None and {row["key"] for row in card["rows"]} == {c.key for c in chapter.CLAIMS}
    checked = [row for row in card["rows"] if row["expect"] in scorecard.CHECKED]
    assert all(row["checked"] and "3×256×256" in row["found"] for row in checked
               if row["key"] in ("df-table1", "df-table3", "df-rv"))
    nb = nbformat.read(executed, as_version=4)
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "of shape (3, 256, 256)" in text and "power-iteration" in text
