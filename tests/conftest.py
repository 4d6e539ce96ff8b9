"""Session fixtures shared by the notebook and site tests.

Every chapter is executed once per test session, at ``ci`` scale, and the site is built once from those executed
notebooks (the build finds them in its cache), so no chapter runs twice except for nbval's re-execution.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from compendium import book, chapters


@pytest.fixture(scope="session")
def build_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session's build folder: ``executed/``, ``stage/`` and ``html/``, as in ``_build``."""
    return tmp_path_factory.mktemp("build")


@pytest.fixture(scope="session")
def executed_notebooks(build_dir: Path) -> dict[str, Path]:
    """Chapter key -> its notebook executed at ``ci`` scale."""
    return {key: book.execute_chapter(key, scale="ci", out_dir=build_dir / "executed") for key in chapters.registry()}


@pytest.fixture(scope="session")
def site(build_dir: Path, executed_notebooks: dict[str, Path]) -> Path:
    """The html folder of the book built at ``ci`` scale (reusing :func:`executed_notebooks`)."""
    return book.build_book(scale="ci", out=build_dir)
