"""Session fixtures shared by the notebook and site tests.

Every chapter is executed once per test session, at ``ci`` scale, one process per core
(:func:`compendium.book.execute_chapters`), and the site is built once from those executed notebooks (the build
finds them in its cache), so no chapter runs twice except for nbval's re-execution, which runs as many at once.
"""
from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from compendium import book, chapters

#: chapters executed at once: one per core (2 in CI), each with an equal share of the cores' threads
JOBS = max(1, min(os.cpu_count() or 1, len(chapters.registry())))


@pytest.fixture(scope="session")
def build_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session's build folder: ``executed/``, ``stage/`` and ``html/``, as in ``_build``."""
    return tmp_path_factory.mktemp("build")


@pytest.fixture(scope="session")
def executed_notebooks(build_dir: Path) -> dict[str, Path]:
    """Chapter key -> its notebook executed at ``ci`` scale."""
    return book.execute_chapters(list(chapters.registry()), scale="ci", out_dir=build_dir / "executed", jobs=JOBS)


@pytest.fixture(scope="session")
def nbval_reports(executed_notebooks: dict[str, Path]) -> dict[str, tuple[int, str]]:
    """Chapter key -> (exit code, report) of nbval re-executing its executed notebook (lax mode), run as the
    chapters were: :data:`JOBS` at once, with the same share of threads, so that the outputs can agree exactly."""
    env = book.thread_environment(JOBS)

    def nbval(notebook: Path) -> tuple[int, str]:
        result = subprocess.run(
            [sys.executable, "-m", "pytest", "--nbval-lax", "--nbval-kernel-name", "python3", "-p",
             "no:cacheprovider", str(notebook)],
            cwd=notebook.parent, capture_output=True, text=True, env=env,
        )
        return result.returncode, result.stdout + result.stderr

    with ThreadPoolExecutor(max_workers=JOBS) as pool:
        reports = dict(zip(executed_notebooks, pool.map(nbval, executed_notebooks.values())))
    return reports


@pytest.fixture(scope="session")
def site(build_dir: Path, executed_notebooks: dict[str, Path]) -> Path:
    """The html folder of the book built at ``ci`` scale (reusing :func:`executed_notebooks`)."""
    return book.build_book(scale="ci", out=build_dir, jobs=JOBS)
