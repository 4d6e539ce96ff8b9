"""The paper-scale plan: every chapter plans at every scale, the counts follow the settings, a run that cannot fit is
refused before any work, and the reproduce page's table is the one the plan computes."""
from __future__ import annotations

import dataclasses
import json
import math
import time
from pathlib import Path

import pytest

from compendium import chapters, plan
from compendium.plan import costs, machines

ROOT = Path(__file__).resolve().parents[1]
GPU_CHECK = ROOT / "benchmarks" / "results" / "gpu_check.json"


@pytest.mark.parametrize("scale", chapters.SCALES)
@pytest.mark.parametrize("key", list(chapters.registry()))
def test_every_chapter_plans_at_every_scale(key: str, scale: str) -> None:
    found = plan.plan(key, scale, device="cpu")
    assert found.steps, key
    for step in found.steps:
        assert step.count >= 0 and step.seconds >= 0 and math.isfinite(step.hours), step
        assert step.basis.startswith(("measured", "estimate")), step.basis
    for need in (found.gpu, found.ram, found.disk):
        assert need.bytes >= 0 and math.isfinite(need.bytes)
    frame = found.table()
    assert list(frame["step"]) == [s.name for s in found.steps] + ["total"]
    assert frame.iloc[-1]["hours, H200 141 GB"] == pytest.approx(found.hours)
    text = found.text()
    assert all(s.name in text for s in found.steps) and "GPU memory" in text and "disk" in text
    json.dumps(found.to_dict(), allow_nan=False)


def test_measured_costs_are_the_gpu_checks() -> None:
    """MEASURED holds benchmarks/results/gpu_check.json's paper sizes (an installed package has no benchmarks/)."""
    items = {row["item"]: row["per_step_s"] for row in json.loads(GPU_CHECK.read_text())["paper_sizes"]}
    assert set(machines.MEASURED) <= set(items)
    for item, seconds in machines.MEASURED.items():
        assert seconds == pytest.approx(items[item], rel=5e-3), item


def _adam_hours(found: plan.Plan) -> float:
    return sum(s.hours for s in found.steps if s.unit == "Adam steps")


def test_doubling_the_reconstructor_steps_doubles_the_reconstructor_hours() -> None:
    """Whole passes over the 2.56e6 heads (80,000 steps each), so that run_attack's rounding keeps the ratio."""
    names = ("reconstructor_steps", "unconditional_steps", "variant_reconstructor_steps", "identity_steps",
             "dp_reconstructor_steps")
    one = plan.plan("transfer_learned", device="cpu", **{name: 800_000 for name in names})
    two = plan.plan("transfer_learned", device="cpu", **{name: 1_600_000 for name in names})
    assert _adam_hours(two) == pytest.approx(2 * _adam_hours(one), rel=1e-3)
    assert [s for s in two.steps if s.unit == "heads"] == [s for s in one.steps if s.unit == "heads"]


def test_the_counts_follow_the_settings() -> None:
    paper = plan.plan("transfer_learned", device="cpu")
    fewer = plan.plan("transfer_learned", device="cpu", set_sizes=(10,))
    assert _adam_hours(fewer) < _adam_hours(paper)
    ziller = plan.plan("ziller2024", device="cpu")
    grid = ziller.steps[0]
    cfg = chapters.chapter("ziller2024").module.settings("paper", device="cpu")
    assert grid.count == cfg.n_images * len(cfg.sigmas) * len(cfg.clip_norms)
    assert grid.seconds == machines.MEASURED["Ziller: 15,000 DP-SGD steps on 224x224 images"]
    hcr = plan.plan("hcr", device="cpu")
    more = plan.plan("hcr", device="cpu", gray_examples=20_000)
    assert more.steps[0].count == 2 * hcr.steps[0].count
    assert more.ram.bytes > hcr.ram.bytes


def test_the_transfer_chapter_shares_stored_heads_and_counts_its_disk() -> None:
    """The unconditional attack and the unchanged recipe of the variant sweep train on the heads of N = 10 (the same
    store), and the stores take heads x (weights + N) x 4 bytes each: 15 MNIST stores of 2.56e6 heads of 2,570
    weights, the factor sweep's smaller ones and the binary heads'."""
    cfg = chapters.chapter("transfer_learned").module.settings("paper", device="cpu")
    runs = plan.transfer_runs(cfg)
    assert len(runs) == 24 and len({r.store for r in runs}) == 22
    assert sum(r.kind != "identity" for r in runs) == 22  # the MNIST reconstructors
    stores = plan.head_stores()
    assert stores["mnist"] == sum(4 * r.heads * (r.dim + r.set_size) for r in {r.store: r for r in runs}.values()
                                  if r.store[0] == "mnist")
    assert stores["mnist"] > 400e9 and stores["celeba"] == 2 * 4 * 2_560_000 * 8201 + 4 * 2_560_000 * 50
    found = plan.plan("transfer_learned", device="cpu")
    assert found.disk.bytes >= stores["mnist"] + stores["celeba"]


def test_a_run_that_does_not_fit_is_refused_naming_the_setting() -> None:
    found = dataclasses.replace(plan.plan("transfer_learned", device="cpu"), on_gpu=True)
    roomy = dict(ram_bytes=1e12, disk_bytes=1e13, gpu_bytes=1e12)
    found.check_fits(**roomy)
    with pytest.raises(ValueError, match=r"free disk.*shadow_train=2,560,000: reduce it, or point shadow_dir"):
        found.check_fits(**roomy | {"disk_bytes": 100e9})
    with pytest.raises(ValueError, match=r"host RAM.*dataset='mnist'"):
        found.check_fits(**roomy | {"ram_bytes": 1e9})
    with pytest.raises(ValueError, match=r"GPU memory.*hidden=256"):
        found.check_fits(**roomy | {"gpu_bytes": 1e9})
    on_cpu = plan.plan("diffusion", device="cpu")  # a run on the CPU holds its tensors in RAM
    assert not on_cpu.on_gpu
    with pytest.raises(ValueError, match="host RAM.*targets="):
        on_cpu.check_fits(ram_bytes=on_cpu.ram.bytes + 1, disk_bytes=1e13)


def test_bad_input_is_refused_before_any_work() -> None:
    with pytest.raises(ValueError, match="valid chapters"):
        plan.plan("no-such-chapter")
    with pytest.raises(ValueError, match="valid scales"):
        plan.plan("hcr", "huge")
    with pytest.raises(ValueError, match="unknown parameter"):
        plan.plan("hcr", no_such_setting=1)


def test_show_prints_the_plan_and_is_quick(capsys) -> None:
    cfg = chapters.chapter("transfer_learned").module.settings("ci", device="cpu")
    plan.show("transfer_learned", cfg)  # warm: the notebook has imported the chapter's modules already
    start = time.perf_counter()
    for key in chapters.registry():
        plan.show(key, chapters.chapter(key).module.settings("ci", device="cpu"))
    assert time.perf_counter() - start < 6 * 0.5
    assert "transfer_learned at 'ci' scale" in capsys.readouterr().out


def test_cards_and_speeds() -> None:
    assert plan.card_named("NVIDIA A100-SXM4-40GB").memory_gb == 40
    assert plan.card_named("NVIDIA A100 80GB PCIe").memory_gb == 80
    assert plan.card_named("Tesla T4").name.startswith("T4")
    assert plan.card_named("NVIDIA H200").speed == 1.0
    assert plan.card_named("Quadro K600") is None
    speeds = [plan.card_named(name).speed for name in ("T4", "A100-40GB", "H100", "H200")]
    assert speeds == sorted(speeds)


def test_the_reproduce_page_shows_the_computed_plan() -> None:
    """The page's table is the plan's: after a change of a chapter's settings or SECONDS, regenerate it with
    ``python -m compendium plan all --markdown --page book/reproduce.md``."""
    assert plan.markdown() in (ROOT / "book" / "reproduce.md").read_text()


def test_the_measured_generator_is_table_2s() -> None:
    import torch

    from compendium import models

    with torch.device("meta"):
        model = models.ResidualReconstructor(2580, width=256, out_channels=1, size=32)
    assert costs.weights_of(model) == costs.MEASURED_GENERATOR_WEIGHTS


def test_hcr_ram_is_the_chapters_own_estimate() -> None:
    """One estimate of the HCR chapter's host RAM: the chapter's, within an A100 runtime at paper scale."""
    found = plan.plan("hcr", device="cpu")
    cfg = chapters.chapter("hcr").module.settings("paper", device="cpu")
    assert found.ram.bytes == chapters.chapter("hcr").module.host_ram_bytes(cfg) < 40e9


def test_fill_page_writes_the_generated_plan(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(f"before\n{plan.MARKDOWN_START}\nstale\n{plan.MARKDOWN_END}\nafter\n")
    plan.fill_page(page)
    assert page.read_text() == f"before\n{plan.markdown()}\nafter\n"
    page.write_text("no markers\n")
    with pytest.raises(ValueError, match="no generated plan"):
        plan.fill_page(page)


def test_hcr_imagenet_bounds_are_costed_at_the_measured_solve() -> None:
    found = plan.plan("hcr", device="cpu", imagenet_dir="data/imagenet-val")
    resnet = next(s for s in found.steps if s.name == "HCR bounds, ImageNet ResNet-18")
    cfg = chapters.chapter("hcr").module.settings("paper", device="cpu")
    assert resnet.count == cfg.imagenet_examples * 2 * cfg.num_restarts * 10
    assert resnet.seconds == machines.MEASURED["HCR: one ImageNet bound, ResNet-18 (R = 25, i = 10)"]
    assert found.hours > plan.plan("hcr", device="cpu").hours
