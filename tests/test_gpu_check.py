"""The prepared GPU check (``benchmarks/gpu_check.py``): its pieces, the resolver check of the package's ranges,
and the whole check end to end on the CPU at ``ci`` scale against the session's own ``ci`` run."""
from __future__ import annotations

import importlib.util
import json
import subprocess
from pathlib import Path

import pytest

from compendium import chapters
from compendium.base import repository_root

ROOT = repository_root()
spec = importlib.util.spec_from_file_location("gpu_check", ROOT / "benchmarks" / "gpu_check.py")
gpu_check = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gpu_check)


def _report(*names_versions):
    return {"install": [{"metadata": {"name": n, "version": v}} for n, v in names_versions]}


def test_replaced_packages_names_the_gpu_stack_only():
    report = _report(("torch", "2.13.0"), ("nvidia-cublas", "13.1"), ("Triton", "3.6"), ("numpy", "2.4.6"),
                     ("opacus", "1.6.0"), ("torchmetrics", "1.9"))
    assert gpu_check.replaced_packages(report) == ["torch 2.13.0", "nvidia-cublas 13.1", "triton 3.6"]
    assert gpu_check.replaced_packages(_report(("compendium", "0.1.0"))) == []


def test_install_refuses_before_installing_when_torch_would_be_replaced(monkeypatch):
    calls = []

    def fake_pip(wheels, *, dry_run, build_isolation=True):
        calls.append(dry_run)
        return _report(("torch", "2.99.0"), ("compendium", "0.1.0"))

    monkeypatch.setattr(gpu_check, "pip_install", fake_pip)
    monkeypatch.setattr(gpu_check, "torch_version", lambda: "2.11.0+cu130")
    with pytest.raises(RuntimeError, match="pip would install torch 2.99.0 beside torch 2.11.0"):
        gpu_check.install(Path("wheels"))
    assert calls == [True]  # the dry run only


def test_the_package_ranges_keep_the_installed_torch():
    """pip's resolver, offline, on this environment: installing the package needs nothing but the package itself,
    so the ranges admit the torch (and everything else) already installed, as on a GPU runtime."""
    report = gpu_check.pip_install(None, dry_run=True, build_isolation=False)
    assert [i["metadata"]["name"] for i in report["install"]] == ["compendium"]
    assert gpu_check.replaced_packages(report) == []


def _cell(outputs, tags=(), cell_id="c"):
    return {"cell_type": "code", "id": cell_id, "metadata": {"tags": list(tags)}, "outputs": outputs, "source": ""}


def test_headline_numbers_reads_glued_values_and_checked_cells_only():
    glued = {"output_type": "display_data", "metadata": {"scrapbook": {"name": "tpr", "mime_prefix": ""}},
             "data": {"text/plain": "0.813"}}
    hidden = {"output_type": "display_data", "metadata": {"scrapbook": {"name": "eps", "mime_prefix": "x/"}},
              "data": {"x/text/plain": "'1.5e-03'"}}
    stream = {"output_type": "stream", "name": "stdout", "text": "MSE 1.25, PSNR -3 dB over 10 images\n"}
    warning = {"output_type": "stream", "name": "stderr", "text": "graph.py:869: UserWarning\n"}
    table = {"output_type": "execute_result", "metadata": {}, "data": {"text/plain": "   a  b\n0  7  .5"}}
    checked = _cell([warning, stream, table], tags=["nbval-check-output"], cell_id="t")
    notebook = {"cells": [_cell([glued, hidden]), checked,
                          _cell([stream], cell_id="timing"), {"cell_type": "markdown", "source": "9"}]}
    assert gpu_check.headline_numbers(notebook) == {
        "glue:tpr": [0.813], "glue:eps": [1.5e-3], "cell:t": [1.25, -3.0, 10.0, 0.0, 7.0, 0.5]}


def test_compare_sorts_numbers_into_tiers():
    reference = {"a": [1.0, 2.0, 100.0, 0.0, 7.8e-16], "b": [1.0], "c": [3.0], "only-cpu": [1.0]}
    new = {"a": [1.0 + 1e-4, 2.05, 150.0, 0.0, 8.9e-16], "b": [1.0, 2.0], "c": [3.0], "only-gpu": [1.0]}
    result = gpu_check.compare(reference, new)
    assert result["counts"] == {"same": 4, "close": 1, "differs": 1, "unmatched": 1, "missing": 2}
    assert result["max_rel"] == pytest.approx(50 / 150)
    assert result["worst"].startswith("a[2]: 100 (CPU) vs 150")
    assert result["differing"] == ["a", "b"]


def test_check_refuses_an_output_folder_inside_the_repository(capsys):
    with pytest.raises(SystemExit):
        gpu_check.main(["--out", str(ROOT / "gpu-out"), "--device", "cpu"])
    assert "inside the repository" in capsys.readouterr().err
    assert not (ROOT / "gpu-out").exists()


def test_check_runs_end_to_end_on_the_cpu_at_ci_scale(tmp_path, executed_notebooks, monkeypatch):
    """The whole check at ``ci`` scale on the CPU (toy sizes of the paper-size items, one chapter) against this
    session's own ``ci`` execution: every headline number the same, the report and the notebooks written to --out
    and nothing else; the offline re-comparison gives the same result.  The chapter's process copies this session's
    execution instead of executing it again (half a minute): that a rerun gives the same numbers is what
    ``tests/test_ci_numbers.py`` holds; here the launch, the wait and the comparison run as they do on a GPU."""
    reference = executed_notebooks["mean_to_extreme"].parents[1]
    out = tmp_path / "out"

    def copy_of_the_reference(key, scale, device, out_dir, threads):
        notebook = Path(chapters.chapter(key).notebook)
        (out_dir / notebook.parent).mkdir(parents=True, exist_ok=True)
        return subprocess.Popen(["cp", str(reference / notebook), str(out_dir / notebook)])

    monkeypatch.setattr(gpu_check, "_launch", copy_of_the_reference)
    code = gpu_check.main(["--out", str(out), "--device", "cpu", "--scale", "ci", "--jobs", "1",
                           "--chapters", "mean_to_extreme", "--reference", str(reference)])
    assert code == 0
    assert sorted(p.name for p in out.iterdir()) == ["executed.tar.gz", "gpu_check.json"]
    report = json.loads((out / "gpu_check.json").read_text())
    assert report["scale"] == "ci" and report["device"].startswith("CPU")
    items = report["paper_sizes"]
    assert len(items) == 8 and all("error" not in row and row["per_step_s"] > 0 for row in items)
    assert all(row["hours"] == pytest.approx(row["per_step_s"] * row["count"] / 3600) for row in items)
    (row,) = report["chapters"]
    assert row["error"] is None and row["seconds"] > 0 and row["reference_parameters"]["scale"] == "ci"
    counts = row["comparison"]["counts"]
    assert counts["same"] > 10 and counts["close"] == counts["differs"] == counts["unmatched"] == 0
    assert counts["missing"] == 0
    assert row["comparison"]["verdicts_flipped"] == [] and row["comparison"]["verdicts_same"] == 31
    again = gpu_check.recompare([out], reference)
    assert again["chapters"][0]["comparison"] == row["comparison"]
    table = gpu_check.table(report)
    assert "mean_to_extreme" in table and "HCR: one ImageNet bound" in table


def test_markdown_shows_a_chapter_ended_at_the_deadline_as_a_lower_bound():
    report = {"device": "GPU", "torch": "2", "python": "3", "scale": "book", "paper_sizes": [], "chapters": [
        {"chapter": "hcr", "error": gpu_check.DEADLINE_ERROR, "wall_s": 312.0, "reference_seconds": 541.0},
        {"chapter": "calculator", "error": None, "seconds": 91.0, "reference_seconds": 49.0,
         "comparison": {"counts": {"same": 157, "close": 0, "differs": 0, "unmatched": 0}}}]}
    text = gpu_check.markdown(report)
    assert "| `hcr` | 9.0 min | > 5.2 min | | not finished: ended at the check's deadline | |" in text
    assert "| `calculator` | 49 s | 91 s | ×0.5 | 157 / 0 / 0 | no scorecard |" in text


def test_reproduce_page_shows_the_committed_gpu_run_and_what_it_says_holds():
    """The reproduce page's GPU tables are generated from benchmarks/results/gpu_check.json, and the page's reading of
    them (every chapter but transfer learning finished, which reached the deadline; no scorecard verdict flipped; the
    calculator agrees number for number; the heads take seconds against the authors' hours; the reconstructor beats
    the V100; the HCR total is a lower bound) holds for that run."""
    from compendium import chapters, scorecard

    report = json.loads((ROOT / "benchmarks" / "results" / "gpu_check.json").read_text())
    assert gpu_check.markdown(report) in (ROOT / "book" / "reproduce.md").read_text()
    rows = {row["chapter"]: row for row in report["chapters"]}
    assert set(rows) == set(chapters.registry())
    assert {key: row["error"] for key, row in rows.items() if row["error"]} == {
        "transfer_learned": gpu_check.DEADLINE_ERROR}
    finished = [row["comparison"] for row in rows.values() if not row["error"]]
    assert all(comp["verdicts_flipped"] == [] for comp in finished if "verdicts_same" in comp)
    assert sum("verdicts_same" in comp for comp in finished) == 4
    moved = {key for key in rows["diffusion"]["comparison"]["differing"]
             if not key.startswith(("glue:df_gap_", "glue:df_rate_top_gain"))}
    assert moved <= {"glue:df_rv_rho_scaled", "glue:df_prior_seconds", f"glue:{scorecard.GLUE_KEY}"}, moved
    counts = rows["calculator"]["comparison"]["counts"]
    assert counts["differs"] == counts["unmatched"] == counts["missing"] == counts["close"] == 0 < counts["same"]
    items = {row["item"]: row for row in report["paper_sizes"]}
    heads = [row for item, row in items.items() if "training heads" in item]
    assert len(heads) == 2 and all(row["hours"] * 3600 < 60 and row["paper_hours"] >= 1 for row in heads)
    (recon,) = [row for item, row in items.items() if "reconstructor" in item]
    assert recon["hours"] < recon["paper_hours"]
    (bound,) = [row for item, row in items.items() if item.startswith("HCR")]
    assert "lower bound" in bound["paper_note"]
