"""Every chapter's paper pipeline at the papers' shapes and models, counts cut to seconds, on stand-in data
(compendium.standin, :func:`compendium.book.execute_paper_shape`): a shape that only works at 8×8, a tensor left on
the wrong device, or an assert that encodes a finding of the ``book`` scale fails here."""
from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from test_scorecard import PAPER_CHAPTERS, audit

from compendium import book, chapters, standin


@pytest.mark.parametrize("key", list(chapters.registry()))
def test_paper_pipeline_runs_at_paper_shapes(key: str, paper_shape_notebooks: dict[str, Path | Exception]):
    result = paper_shape_notebooks[key]
    if isinstance(result, Exception):
        raise result
    parameters = nbformat.read(result, as_version=4).metadata[book.METADATA_KEY]["parameters"]
    assert parameters["scale"] == "paper" and parameters["device"] == "cpu"
    if key in PAPER_CHAPTERS:
        audit(key, result)  # a complete card: every claim decided at the papers' shapes, none stopped the run


def test_execute_paper_shape_refuses_a_chapter_that_does_not_run_at_paper_scale(tmp_path, monkeypatch):
    module = chapters.chapter("calculator").module
    monkeypatch.setattr(module, "paper_shape", lambda folder: {"scale": "book"}, raising=False)
    with pytest.raises(ValueError, match="allowed: 'paper'"):
        book.execute_paper_shape("calculator", device="cpu", out_dir=tmp_path)


def test_standin_files_have_the_papers_shapes(tmp_path):
    from compendium import data

    x, y = data.mnist(standin.mnist(tmp_path / "mnist", train=20, test=10), "test")
    assert x.shape == (10, 1, 28, 28) and y.tolist() == list(range(10))
    x, y = data.cifar10(standin.cifar10(tmp_path / "cifar", per_batch=4, test=6), "train")
    assert x.shape == (20, 3, 32, 32) and y.tolist() == list(range(10)) * 2
    faces = data.celeba_hq(standin.celeba_hq(tmp_path / "hq", n=2), 2, 256)
    assert faces.shape == (2, 3, 256, 256)
    files, people = data.celeba_identities(standin.celeba(tmp_path / "c") / "celeba", "test")
    assert len(files) == 18 and len(set(people.tolist())) == 6
    assert len(list(standin.imagenet_val(tmp_path / "in", n=3).glob("ILSVRC2012_val_*.JPEG"))) == 3
