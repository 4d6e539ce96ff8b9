"""Unit tests of compendium.chapters and compendium.base: named scales resolve and validate, overrides, the chapter
registry (read from _toc.yml), devices."""
from __future__ import annotations

import dataclasses

import pytest
import torch

from compendium import base, chapters
from compendium.chapters import hcr as hcr_chapter
from compendium.chapters import ziller2024


@pytest.mark.parametrize("scale", chapters.SCALES)
def test_each_scale_resolves(scale):
    cfg = ziller2024.settings(scale, device="cpu", seed=3)
    assert isinstance(cfg, ziller2024.Settings)
    assert (cfg.scale, cfg.device, cfg.seed) == (scale, "cpu", 3)
    for key, value in ziller2024.SCALES[scale].items():
        assert getattr(cfg, key) == value
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.n_images = 5  # frozen


def test_scales_grow_from_ci_to_paper():
    ci, book, paper = (ziller2024.settings(s, device="cpu") for s in ("ci", "book", "paper"))
    assert ci.n_images <= book.n_images <= paper.n_images
    assert ci.resolution < book.resolution < paper.resolution
    assert ci.n_mc < book.n_mc < paper.n_mc
    assert ci.image_source == book.image_source == "photos" and paper.image_source == "imagenet"


def test_default_is_book_scale():
    cfg = ziller2024.settings()
    assert cfg.scale == "book" and cfg.device == "auto" and cfg.seed == 0


def test_unknown_scale_lists_valid_ones():
    with pytest.raises(ValueError, match=r"scale='huge'.*'ci', 'book', 'paper'"):
        ziller2024.settings("huge")
    with pytest.raises(ValueError, match="'ci', 'book', 'paper'"):
        chapters.check_scale("CI")


def test_chapter_registry():
    ch = chapters.chapter("ziller2024")
    assert ch.key == "ziller2024" and ch.notebook == "notebooks/ziller2024.ipynb"
    with pytest.raises(ValueError, match=r"chapter='nope'.*ziller2024"):
        chapters.chapter("nope")


def test_overrides_replace_values_and_none_keeps():
    cfg = ziller2024.settings("ci", device="cpu", n_images=13, sigmas=[0.5, 2.0], resolution=None, clip_norms=None)
    assert cfg.n_images == 13
    assert cfg.sigmas == (0.5, 2.0)  # lists become tuples
    assert cfg.resolution == ziller2024.SCALES["ci"]["resolution"]
    assert cfg.clip_norms == ziller2024.SCALES["ci"]["clip_norms"]
    cfg2 = ziller2024.settings("paper", device="cpu", image_source="photos", use_lpips=False, imagenet_dir=None)
    assert cfg2.image_source == "photos" and cfg2.use_lpips is False
    assert cfg2.imagenet_dir == ziller2024.SCALES["paper"]["imagenet_dir"]  # None keeps the scale's
    cfg3 = ziller2024.settings("ci", device="cpu", image_source="imagenet", imagenet_dir="/data/val")
    assert (cfg3.image_source, cfg3.imagenet_dir) == ("imagenet", "/data/val")


@pytest.mark.parametrize("overrides, match", [
    (dict(n_images=9), "n_images"),
    (dict(n_images=2.5), "n_images"),
    (dict(n_images=True), "n_images"),
    (dict(resolution=4), "resolution"),
    (dict(sigmas=(0.1, -1.0)), "sigmas"),
    (dict(sigmas=(0.0,)), "sigmas"),
    (dict(clip_norms=(1.0, 0.0)), "clip_norms"),
    (dict(fig3_resolutions=(8, 16)), "fig3_resolutions"),
    (dict(n_mc=10), "n_mc"),
    (dict(n_opacus=10), "n_opacus"),
    (dict(fig3_draws=0), "fig3_draws"),
    (dict(image_source="mnist"), "image_source"),
    (dict(image_source="imagenet"), "imagenet_dir"),
    (dict(n_imgs=3), r"unknown parameter.*n_imgs.*n_images"),
])
def test_bad_overrides_raise(overrides, match):
    with pytest.raises(ValueError, match=match):
        ziller2024.settings("ci", device="cpu", **overrides)


@pytest.mark.parametrize("overrides, match", [
    (dict(sigmas=0.1), "sigmas"),
    (dict(clip_norms=1.0), "clip_norms"),
    (dict(sigmas=()), "sigmas"),
    (dict(clip_norms=[]), "clip_norms"),
])
def test_grid_overrides_must_be_non_empty_sequences(overrides, match):
    with pytest.raises(ValueError, match=match):
        ziller2024.settings("ci", device="cpu", **overrides)


def test_array_overrides_stored_as_tuples():
    import numpy as np

    cfg = ziller2024.settings("ci", device="cpu", sigmas=np.array([0.1, 1.0]))
    assert cfg.sigmas == (0.1, 1.0)
    hash(cfg)


def test_bad_device_raises():
    with pytest.raises(ValueError, match="device"):
        ziller2024.settings("ci", device="tpu-ish")


def test_resolve_device_auto():
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert base.resolve_device("auto").type == expected
    assert base.resolve_device("cpu") == torch.device("cpu")


def test_resolve_device_auto_is_cpu_here():
    if torch.cuda.is_available():
        pytest.skip("CUDA is available on this machine")
    assert base.resolve_device("auto") == torch.device("cpu")
    assert base.resolve_device() == torch.device("cpu")


def test_resolve_device_cuda_without_cuda_raises():
    if torch.cuda.is_available():
        assert base.resolve_device("cuda").type == "cuda"
        return
    with pytest.raises(ValueError, match="CUDA is not available"):
        base.resolve_device("cuda")
    with pytest.raises(ValueError, match="CUDA is not available"):
        base.resolve_device("cuda:0")


def test_resolve_device_nonsense_raises():
    with pytest.raises(ValueError, match="allowed: 'auto', 'cpu'"):
        base.resolve_device("gpu0")


def test_repository_root():
    root = base.repository_root()
    assert (root / "_config.yml").is_file() and (root / "_toc.yml").is_file()


def test_repository_root_of_an_installed_package_is_the_working_folder(tmp_path, monkeypatch):
    """pip on Colab puts the package in site-packages, where there is no _toc.yml: data/ goes beside the notebook."""
    monkeypatch.setattr(base, "__file__", str(tmp_path / "site-packages" / "compendium" / "base.py"))
    monkeypatch.chdir(tmp_path)
    assert base.repository_root() == tmp_path
    assert base.in_repository("data/mnist") == tmp_path / "data" / "mnist"


def test_choosing_cuda_turns_off_tf32_convolutions(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", True)
    assert base.resolve_device("cuda") == torch.device("cuda")
    assert torch.backends.cudnn.allow_tf32 is False
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", True)
    assert base.resolve_device("cpu") == torch.device("cpu") and torch.backends.cudnn.allow_tf32 is True


def test_in_repository_takes_relative_paths_from_the_root(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # not the root: a notebook runs in notebooks/
    assert base.in_repository("data/mnist") == base.repository_root() / "data" / "mnist"
    assert base.in_repository(tmp_path / "x") == tmp_path / "x"


@pytest.mark.parametrize("scale", chapters.SCALES)
def test_hcr_scales_resolve_offline_below_paper(scale):
    cfg = hcr_chapter.settings(scale, device="cpu")
    assert isinstance(cfg, hcr_chapter.Settings)
    offline = cfg.gray_data in ("digits", "mnist_digits") and cfg.colour_data == "photos"  # shipped data
    assert offline == (scale != "paper")
    assert cfg.gray_examples >= 2 and cfg.num_restarts >= 1 and cfg.power_iterations
    if scale == "paper":  # the paper's settings (HCR paper, Sec. 3)
        assert (cfg.gray_kappa, cfg.colour_kappa, cfg.gray_diffdivs, cfg.colour_diffdivs, cfg.num_restarts) == \
            (1.0, 5.0, (200.0, 1000.0), (500.0, 1000.0), 25)


@pytest.mark.parametrize("overrides, match", [
    (dict(gray_data="fashion"), "gray_data"), (dict(colour_data="svhn"), "colour_data"),
    (dict(gray_kappa=-1.0), "gray_kappa"), (dict(colour_kappa=0.0), "colour_kappa"),
    (dict(gray_cnn_kappa=float("nan")), "gray_cnn_kappa"), (dict(gray_cnn_examples=1), "gray_cnn_examples"),
    (dict(gray_examples=1), "gray_examples"), (dict(num_restarts=0), "num_restarts"),
    (dict(power_iterations=()), "power_iterations"), (dict(power_iterations=(0,)), "power_iterations"),
    (dict(gray_diffdivs=(-200.0,)), "gray_diffdivs"), (dict(gray_low_freq=9), "gray_low_freq"),
    (dict(colour_widths=(8, 16)), "colour_widths"), (dict(n_examples=5), "unknown parameter"),
])
def test_hcr_bad_settings_raise(overrides, match):
    with pytest.raises(ValueError, match=match):
        hcr_chapter.settings("ci", device="cpu", **overrides)


def test_registry_follows_the_table_of_contents_and_every_chapter_module_is_in_it():
    import pkgutil

    import yaml

    toc = (base.repository_root() / "_toc.yml").read_text()
    keys = list(chapters.registry())
    assert keys == [k for k in ("ziller2024", "mean_to_extreme", "hcr", "transfer_learned", "diffusion", "calculator")
                    if k in keys]
    assert [f"notebooks/{k}" for k in keys] == [line.split("file:")[1].strip() for line in toc.splitlines()
                                                if "file: notebooks/" in line]
    modules = {m.name for m in pkgutil.iter_modules(chapters.__path__)} - {"base"}
    assert modules == set(keys), f"chapter modules without a _toc.yml entry: {modules - set(keys)}"
    for chapter in chapters.registry().values():
        assert chapter.title == chapter.module.TITLE and set(chapter.module.SCALES) == set(chapters.SCALES)
        assert chapter.seconds == chapter.module.SECONDS and set(chapter.seconds) == {"ci", "book"}
        assert all(seconds > 0 for seconds in chapter.seconds.values())
    assert yaml.safe_load(toc)["format"] == "jb-book"


def test_unknown_chapter_module_gives_a_clear_error(monkeypatch, tmp_path):
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: book/intro\nchapters:\n  - file: notebooks/nope\n")
    monkeypatch.setattr("compendium.chapters.base.repository_root", lambda: tmp_path)
    chapters.registry.cache_clear()
    try:
        with pytest.raises(RuntimeError, match=r"compendium/chapters/nope.py does not exist"):
            chapters.registry()
    finally:
        chapters.registry.cache_clear()


def test_the_build_expects_a_chapters_recorded_time_at_the_scale_else_its_declared_one(tmp_path):
    """execute_chapters starts the longest chapter first: a fresh clone has no recorded runs, so the modules'
    SECONDS order them; a run recorded at another scale says nothing about this one; a recorded kernel CPU time
    counts before a wall-clock time."""
    import nbformat

    from compendium import book

    executed = tmp_path / "hcr.ipynb"
    assert book.expected_seconds("hcr", executed, "book") == chapters.chapter("hcr").seconds["book"]
    notebook = nbformat.v4.new_notebook()
    notebook.metadata[book.METADATA_KEY] = {"seconds": 7.5, "parameters": {"scale": "ci"}}
    nbformat.write(notebook, executed)
    assert book.expected_seconds("hcr", executed, "ci") == 7.5
    assert book.expected_seconds("hcr", executed, "book") == chapters.chapter("hcr").seconds["book"]
    notebook.metadata[book.METADATA_KEY]["cpu_seconds"] = 3.25  # the kernel's work, whatever its priority was
    nbformat.write(notebook, executed)
    assert book.expected_seconds("hcr", executed, "ci") == 3.25
