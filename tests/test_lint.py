"""The code is lint-clean: ruff (pycodestyle and pyflakes, configured in pyproject.toml) finds nothing in the package,
the tests and the benchmarks, and import-linter's layers contract (pyproject.toml) holds: imports point one way."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from compendium.base import repository_root


def _tool(name: str) -> str:
    path = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    assert path, f"{name} is not installed: `make venv` installs it with the test extra"
    return path


def test_ruff_finds_nothing() -> None:
    result = subprocess.run([_tool("ruff"), "check", "compendium", "tests", "benchmarks"], cwd=repository_root(),
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_imports_point_one_way() -> None:
    """cli -> book, student -> chapters -> risk -> attacks | bounds -> metrics, dp, data, models, train, ... ->
    validation | base; attacks and bounds never import each other."""
    result = subprocess.run([_tool("lint-imports"), "--no-cache"], cwd=repository_root(), capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stdout + result.stderr
