"""Build pipeline of the book: execute the chapters with papermill, stage the sources, render with Jupyter Book.

1. :func:`execute_chapter` runs a chapter notebook at a named scale into ``_build/executed/<notebook path>``.
   Results are cached: the executed notebook records a key made from the notebook's bytes, the parameters, the
   package version and a digest of the package's source, and a run with the same key is skipped.
2. :func:`stage_book` copies ``_config.yml``, ``_toc.yml``, ``book/`` and the executed notebooks into a staging
   folder laid out like the repository.
3. :func:`build_book` does both for every chapter, renders the staged copy with ``jupyter-book build`` (execution
   off, warnings as errors) and puts the site in ``_build/html``.

Relative paths given to these functions are taken from the repository root.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import papermill

import compendium
from compendium import chapters
from compendium.base import in_repository, repository_root, resolve_device

KERNEL = "python3"
METADATA_KEY = "compendium"  # executed notebooks carry {"cache_key", "parameters", "version"} under this key


class ChapterExecutionError(RuntimeError):
    """A chapter notebook failed to execute."""


class BookBuildError(RuntimeError):
    """``jupyter-book build`` failed (a warning counts as a failure)."""


def package_digest() -> str:
    """sha256 over every ``.py`` file of the package (relative path and bytes), so a code change recomputes."""
    package = Path(compendium.__file__).resolve().parent
    digest = hashlib.sha256()
    for file in sorted(package.rglob("*.py")):
        digest.update(file.relative_to(package).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(file.read_bytes()).digest())
    return digest.hexdigest()


def cache_key(notebook: Path, parameters: dict) -> str:
    """The key of one execution: sha256 of the notebook's bytes, the parameters as canonical JSON, the package
    version and :func:`package_digest`."""
    parts = [
        Path(notebook).read_bytes(),
        json.dumps(parameters, sort_keys=True, separators=(",", ":")).encode(),
        compendium.__version__.encode(),
        package_digest().encode(),
    ]
    digest = hashlib.sha256()
    for part in parts:  # length-prefixed, so no two different tuples of parts hash alike
        digest.update(len(part).to_bytes(8, "big") + part)
    return digest.hexdigest()


def stored_key(executed: Path) -> str | None:
    """The cache key recorded in an executed notebook, or ``None`` when there is none (or no readable notebook)."""
    try:
        metadata = json.loads(Path(executed).read_text())["metadata"]
    except (OSError, ValueError, KeyError):
        return None
    return metadata.get(METADATA_KEY, {}).get("cache_key")


def execute_notebook(
    source: Path, target: Path, parameters: dict, force: bool = False, label: str | None = None
) -> bool:
    """Execute ``source`` with papermill into ``target`` unless ``target`` already holds the same cache key.

    The kernel is ``python3`` and its working folder the notebook's folder.  The result is written to a temporary
    file in ``target``'s folder and renamed on success, so ``target`` is never half-written.  On failure the
    partially executed notebook (with the traceback) is kept as ``<target stem>.failed.ipynb`` and a
    :class:`ChapterExecutionError` names the chapter and that file.  Returns whether the notebook was executed.
    """
    source, target = in_repository(source), in_repository(target)
    label = label or source.stem
    key = cache_key(source, parameters)
    if not force and stored_key(target) == key:
        print(f"[{label}] up to date, not re-executed: {target}", flush=True)
        return False

    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.stem}.partial.ipynb")
    failed = target.with_name(f"{target.stem}.failed.ipynb")
    print(f"[{label}] executing {source} with {parameters}", flush=True)
    try:
        papermill.execute_notebook(
            str(source), str(partial), parameters=parameters, kernel_name=KERNEL, cwd=str(source.parent),
            progress_bar=True,
        )
    except Exception as err:
        if partial.exists():
            os.replace(partial, failed)
            where = f"the notebook as executed up to the failing cell, with its traceback, is {failed}"
        else:
            where = "papermill wrote no output notebook; see the papermill messages above"
        detail = f"{err.ename}: {err.evalue}" if isinstance(err, papermill.PapermillExecutionError) else repr(err)
        raise ChapterExecutionError(f"chapter {label!r} failed with {detail}; {where}") from err

    executed = nbformat.read(partial, as_version=4)
    for cell in executed.cells:  # papermill's copy of the parameters: the chapter's own cell already shows them
        tags = cell.metadata.get("tags", [])
        if "injected-parameters" in tags and "remove-cell" not in tags:
            cell.metadata["tags"] = [*tags, "remove-cell"]
    executed.metadata[METADATA_KEY] = {"cache_key": key, "parameters": parameters, "version": compendium.__version__}
    nbformat.write(executed, partial)
    os.replace(partial, target)
    failed.unlink(missing_ok=True)
    print(f"[{label}] executed: {target}", flush=True)
    return True


def _check_run(scale: str, device: str, seed: int) -> None:
    chapters.check_scale(scale)
    resolve_device(device)
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0; got {seed!r}")


def execute_chapter(
    key: str,
    scale: str = "book",
    device: str = "auto",
    seed: int = 0,
    out_dir: Path = Path("_build/executed"),
    force: bool = False,
    extra_parameters: dict | None = None,
    output: Path | None = None,
) -> Path:
    """Execute chapter ``key`` at ``scale`` into ``output`` (default ``out_dir/<notebook path>``) and return that path.

    ``extra_parameters`` are further papermill parameters (chapter knobs); they may not repeat scale, device or seed.
    Skips the execution when the output already holds the result for the same notebook, parameters and package
    (see :func:`cache_key`), unless ``force``.
    """
    chapter = chapters.chapter(key)
    _check_run(scale, device, seed)
    extra = dict(extra_parameters or {})
    clash = sorted({"scale", "device", "seed"} & set(extra))
    if clash:
        raise ValueError(f"extra_parameters may not set {clash}; use the scale, device and seed arguments")
    parameters = {"scale": scale, "device": device, "seed": seed, **extra}
    target = in_repository(output) if output is not None else in_repository(out_dir) / chapter.notebook
    execute_notebook(chapter.notebook, target, parameters, force=force, label=key)
    return target


def stage_book(executed_dir: Path, stage_dir: Path) -> Path:
    """Lay out the book for ``jupyter-book build`` in ``stage_dir``: ``_config.yml``, ``_toc.yml``, ``book/`` from
    the repository and every chapter's executed notebook from ``executed_dir``, at their repository paths.

    ``stage_dir`` is emptied first.  Returns it.
    """
    root = repository_root()
    executed_dir, stage_dir = in_repository(executed_dir), in_repository(stage_dir)
    if stage_dir == root or stage_dir in root.parents:
        raise ValueError(f"stage_dir={str(stage_dir)!r} would hold the repository; use a folder such as _build/stage")
    missing = [c.notebook for c in chapters.registry().values() if not (executed_dir / c.notebook).is_file()]
    if missing:
        raise FileNotFoundError(f"no executed notebook in {executed_dir} for {missing}; run execute_chapter first")

    shutil.rmtree(stage_dir, ignore_errors=True)
    stage_dir.mkdir(parents=True)
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy2(root / name, stage_dir / name)
    shutil.copytree(root / "book", stage_dir / "book", ignore=shutil.ignore_patterns(".ipynb_checkpoints", "_build"))
    for c in chapters.registry().values():
        (stage_dir / c.notebook).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(executed_dir / c.notebook, stage_dir / c.notebook)
    return stage_dir


def build_book(
    scale: str = "book", device: str = "auto", seed: int = 0, force: bool = False, out: Path = Path("_build")
) -> Path:
    """Execute every chapter (cached) into ``out/executed``, stage into ``out/stage``, render with
    ``jupyter-book build -W -n --keep-going`` (into ``out/stage/_build/html``) and copy the site to ``out/html``.
    Returns that folder."""
    _check_run(scale, device, seed)
    out = in_repository(out)
    for key in chapters.registry():
        execute_chapter(key, scale=scale, device=device, seed=seed, out_dir=out / "executed", force=force)
    stage = stage_book(out / "executed", out / "stage")

    # jupyter-book writes to <source>/_build/html; the stage is fresh, so this is always a full Sphinx build.
    command = [sys.executable, "-c", "from jupyter_book.cli.main import main; main()",
               "build", str(stage), "-W", "-n", "--keep-going"]
    result = subprocess.run(command, cwd=stage, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(result.stdout, flush=True)
    if result.returncode != 0:
        problems = [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in result.stdout.splitlines()
                    if "WARNING" in line or "ERROR" in line]
        raise BookBuildError(f"jupyter-book build of {stage} failed (exit code {result.returncode}; warnings count "
                             "as errors):\n" + "\n".join(problems))
    html = out / "html"
    shutil.rmtree(html, ignore_errors=True)
    shutil.copytree(stage / "_build" / "html", html)
    print(f"The book is at {html / 'index.html'}", flush=True)
    return html
