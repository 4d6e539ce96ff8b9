"""The command line refuses bad arguments up front; the execution cache skips, recomputes and fails cleanly."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from compendium import book, chapters, cli

CHAPTER = next(iter(chapters.registry()))


@pytest.mark.parametrize(
    "args, listed",
    [
        (["run", "no-such-chapter"], list(chapters.registry())),
        (["build", "--scale", "huge"], list(chapters.SCALES)),
        (["run", CHAPTER, "--scale", "huge"], list(chapters.SCALES)),
        (["run", CHAPTER, "--seed", "-1"], [">= 0"]),
        (["build", "--device", "tpu"], ["auto", "cpu", "cuda"]),
    ],
    ids=["chapter", "build-scale", "run-scale", "seed", "device"],
)
def test_bad_arguments_exit_2_and_list_valid_values(args: list[str], listed: list[str], capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.main(args)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    for value in listed:
        assert value in err, f"{value!r} missing from: {err}"
    assert "Executing" not in err


def test_python_dash_m_compendium_parses_its_arguments(tmp_path: Path) -> None:
    """The module entry point (``python -m compendium``) is the command line above."""
    result = subprocess.run([sys.executable, "-m", "compendium", "run", "no-such-chapter"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and CHAPTER in result.stderr, result.stderr


def test_execute_chapter_validates_before_work(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=CHAPTER):
        book.execute_chapter("no-such-chapter", out_dir=tmp_path)
    with pytest.raises(ValueError, match="valid scales"):
        book.execute_chapter(CHAPTER, scale="huge", out_dir=tmp_path)
    with pytest.raises(ValueError, match="seed"):
        book.execute_chapter(CHAPTER, seed=-3, out_dir=tmp_path)
    with pytest.raises(ValueError, match="jobs=0"):
        book.build_book(scale="ci", jobs=0, out=tmp_path)
    with pytest.raises(ValueError, match="processes=0"):
        book.execute_chapters([CHAPTER], scale="ci", jobs=2, processes=0, out_dir=tmp_path)
    with pytest.raises(ValueError, match="extra_parameters"):
        book.execute_chapter(CHAPTER, extra_parameters={"scale": "ci"}, out_dir=tmp_path)
    assert not any(tmp_path.iterdir())


def test_parallel_runs_share_the_cores() -> None:
    """jobs chapters at once get an equal share of the cores' threads each, at least one."""
    cores = book.usable_cores()
    assert book.thread_environment(1)["OMP_NUM_THREADS"] == str(cores)
    assert book.thread_environment(2 * cores)["MKL_NUM_THREADS"] == "1"


@pytest.mark.parametrize(("cores", "jobs"), [(1, 2), (2, 3), (3, 4), (4, 4), (16, 16)])
def test_default_jobs_add_a_process_where_the_cores_are_fewer_than_half_the_chapters(monkeypatch, cores, jobs):
    """Six chapters: on 2 cores 3 at once keep both cores busy to the end; on 4 the longest chapters set the time."""
    monkeypatch.setattr(book, "usable_cores", lambda: cores)
    assert len(chapters.registry()) == 6
    assert book.default_jobs() == jobs


def _tiny_notebook(path: Path, body: str) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 0", metadata={"tags": ["parameters"]}), nbformat.v4.new_code_cell(body)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path


def _printed(notebook: Path) -> str:
    cells = json.loads(notebook.read_text())["cells"]
    return "".join("".join(out.get("text", "")) for cell in cells for out in cell.get("outputs", []))


def test_cache_skips_unchanged_and_recomputes_changed(tmp_path: Path) -> None:
    source = _tiny_notebook(tmp_path / "tiny.ipynb", "print(x * 10)")
    target = tmp_path / "out" / "tiny.ipynb"
    assert book.execute_notebook(source, target, {"x": 1})
    assert _printed(target) == "10\n"
    assert book.stored_key(target) == book.cache_key(source, {"x": 1})
    assert not book.execute_notebook(source, target, {"x": 1}), "an unchanged run was re-executed"
    assert book.execute_notebook(source, target, {"x": 2}), "a changed parameter did not recompute"
    assert _printed(target) == "20\n"
    assert book.execute_notebook(source, target, {"x": 2}, force=True), "force did not recompute"


def test_cache_key_covers_notebook_parameters_and_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = _tiny_notebook(tmp_path / "tiny.ipynb", "print(x)")
    key = book.cache_key(source, {"x": 1, "y": [1, 2]})
    assert key == book.cache_key(source, {"y": [1, 2], "x": 1}), "the key depends on the parameters' order"
    assert key != book.cache_key(source, {"x": 1, "y": [1, 3]})
    _tiny_notebook(source, "print(x + 1)")
    assert key != book.cache_key(source, {"x": 1, "y": [1, 2]})
    changed = book.cache_key(source, {"x": 1})
    monkeypatch.setattr(book, "package_digest", lambda: "a changed package")
    assert changed != book.cache_key(source, {"x": 1})


def test_failed_execution_names_the_chapter_and_keeps_no_result(tmp_path: Path) -> None:
    source = _tiny_notebook(tmp_path / "broken.ipynb", "raise RuntimeError('boom')")
    target = tmp_path / "out" / "broken.ipynb"
    with pytest.raises(book.ChapterExecutionError, match=r"chapter 'broken'.*boom.*broken\.failed\.ipynb"):
        book.execute_notebook(source, target, {"x": 1}, label="broken")
    assert not target.exists()
    assert (tmp_path / "out" / "broken.failed.ipynb").exists()
    assert [p.name for p in target.parent.iterdir()] == ["broken.failed.ipynb"]


def test_plan_prints_a_table_and_json(capsys) -> None:
    """``plan`` prints a chapter's costly steps with their hours per card; ``--json`` parses, ``all`` gives every
    chapter."""
    from compendium import cli

    assert cli.main(["plan", "hcr", "--scale", "ci", "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "hcr at 'ci' scale" in out and "LSQR solves" in out and "host RAM" in out
    assert "T4 16 GB" not in out and "not costed at this scale" in out  # the cards' hours: at paper scale
    assert cli.main(["plan", "hcr", "--scale", "paper", "--device", "cpu"]) == 0
    assert "T4 16 GB" in capsys.readouterr().out
    assert cli.main(["plan", "all", "--scale", "ci", "--device", "cpu", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert list(found) == list(chapters.registry())
    assert all(row["steps"] and row["hours"]["H200 141 GB"] >= 0 for row in found.values())
    assert cli.main(["plan", "transfer_learned", "--json", "--device", "cpu"]) == 0
    assert json.loads(capsys.readouterr().out)["disk"]["bytes"] > 1e11


def test_plan_refuses_bad_arguments(capsys) -> None:
    from compendium import cli

    with pytest.raises(SystemExit) as exit_:
        cli.main(["plan", "no-such-chapter"])
    assert exit_.value.code == 2 and "valid chapters" in capsys.readouterr().err
    assert cli.main(["plan", "hcr", "--markdown"]) == 2
    assert "allowed: all" in capsys.readouterr().err


def test_only_the_longest_chapter_runs_at_full_priority_beside_others() -> None:
    """The chapter expected to take longest sets the build's time: it runs at the normal priority, the rest lower."""
    assert book.priority_prefix(0) == []
    if shutil.which("nice"):
        assert book.priority_prefix(1)[1:] == book.priority_prefix(4)[1:] == ["-n", "10"]
    with pytest.raises(ValueError, match="rank"):
        book.priority_prefix(-1)


def test_jobs_lists_a_chapters_trainings_and_runs_one(tmp_path: Path, capsys) -> None:
    """`python -m compendium jobs transfer_learned`: one line per job (index, what it trains, done or not, its
    checkpoint), what the jobs share, and the shell lines for the cards (by hand, GNU parallel, a SLURM array);
    `--run K` trains job K to its checkpoint, listed as done afterwards; bad requests exit 2 before any work."""
    counts = {"shadow_train": 64, "shadow_val": 8, "reconstructor_steps": 4, "unconditional_steps": 4,
              "identity_shadow_train": 64, "identity_steps": 4, "dp_shadow_train": 64, "dp_reconstructor_steps": 4}
    settings = ["--set", f"shadow_dir={tmp_path / 'heads'}"]
    for key, value in counts.items():
        settings += ["--set", f"{key}={value}"]
    command = ["jobs", "transfer_learned", "--scale", "ci", *settings]
    assert cli.main([*command, "--cards", "2"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("5 jobs of transfer_learned at ci scale")
    assert "  2  unconditional: N = 10  to run" in out and "reconstructor-mlp512-unconditional-steps4-val8.pt" in out
    assert "Shared steps:" in out and "file lock" in out
    by_hand = [line for line in out.splitlines() if line.startswith("CUDA_VISIBLE_DEVICES=")]
    assert [line.split()[0] for line in by_hand] == ["CUDA_VISIBLE_DEVICES=0", "CUDA_VISIBLE_DEVICES=1"]
    assert by_hand[1].endswith("--run 1 &") and "python -m compendium jobs transfer_learned --scale ci --set" in out
    assert "parallel -j 2" in out and "sbatch --array=0,1,2,3,4 --gpus=1" in out
    assert cli.main([*command, "--run", "2", "--device", "cpu"]) == 0
    assert "job 2 (unconditional: N = 10) finished" in capsys.readouterr().out
    assert cli.main([*command, "--cards", "1"]) == 0
    out = capsys.readouterr().out
    assert "  2  unconditional: N = 10  done" in out and "sbatch --array=0,1,3,4 " in out
    for bad, message in (([*command, "--run", "5"], "index=5; allowed: 0 to 4"),
                         (["jobs", "transfer_learned", "--scale", "ci", "--run", "0"], "shadow_dir=None"),
                         (["jobs", "transfer_learned", "--scale", "ci", "--set", "shadow_heads=3"], "shadow_heads"),
                         (["jobs", "hcr", "--scale", "ci"], "has no separate jobs")):
        assert cli.main(bad) == 2
        assert message in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["jobs", "transfer_learned", "--set", "no value"])


@pytest.mark.skipif(not Path("/proc/self/autogroup").exists(), reason="no Linux autogroup here")
def test_a_kernel_beside_the_longest_chapter_takes_the_lower_priority_for_its_session() -> None:
    """A Jupyter kernel runs in a session of its own; importing the package with the build's variable set gives that
    session's scheduling group the nice value (it is started here in a new session, as jupyter_client starts it)."""
    import compendium

    code = "import compendium; print(open('/proc/self/autogroup').read())"
    env = {**os.environ, compendium.NICENESS_VARIABLE: "10"}
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120,
                            start_new_session=True)
    assert result.returncode == 0 and result.stdout.strip().endswith("nice 10"), result
