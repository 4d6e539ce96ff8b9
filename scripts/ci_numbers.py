"""The numbers a ``ci`` run glues, kept in ``tests/ci_numbers.json`` so that the suite sees any change of them.

    python scripts/ci_numbers.py [FOLDER]

writes the file from the executed notebooks in ``FOLDER`` (default: ``_build/executed/notebooks``, after
``make book SCALE=ci``). Rewrite it only for a change that is meant to move the book's numbers, and say why in the
commit; a refactoring leaves it as it is (``tests/test_ci_numbers.py``).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import nbformat

from compendium import chapters
from compendium.base import glued_texts, repository_root

SNAPSHOT = repository_root() / "tests" / "ci_numbers.json"


def glued_numbers(executed: Path) -> dict[str, str]:
    """Name -> ``text/plain`` of every scalar or string an executed notebook glues (its figures and tables, whose
    outputs carry more than plain text, left out; the scorecard's record too, which its own tests check; and the
    wall-clock times a chapter measures, whose names end in ``_seconds``)."""
    cells = nbformat.read(executed, as_version=4).cells
    plain = {}
    for cell in cells:
        for output in cell.get("outputs", []):
            record = output.get("metadata", {}).get("scrapbook", {})
            name = record.get("name", "")
            if name and len(output["data"]) == 1 and name != "scorecard" and not name.endswith("_seconds"):
                plain[name] = glued_texts([cell])[name][1]
    return plain


def snapshot(folder: Path) -> dict[str, dict[str, str]]:
    """Chapter key -> :func:`glued_numbers` of its executed notebook in ``folder``."""
    return {key: glued_numbers(Path(folder) / Path(chapter.notebook).name)
            for key, chapter in chapters.registry().items()}


if __name__ == "__main__":
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else repository_root() / "_build" / "executed" / "notebooks"
    SNAPSHOT.write_text(json.dumps(snapshot(folder), indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    print(f"wrote {SNAPSHOT}")
