"""The code is lint-clean: ruff (pycodestyle and pyflakes, configured in pyproject.toml) finds nothing in the package,
the tests and the benchmarks."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from compendium.base import repository_root


def test_ruff_finds_nothing() -> None:
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    assert ruff, "ruff is not installed: `make venv` installs it with the test extra"
    result = subprocess.run([ruff, "check", "compendium", "tests", "benchmarks"], cwd=repository_root(),
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
