"""The student edition: the chapter notebooks without the exercises' solutions, for a teacher to hand out.

``python -m compendium student-edition OUT`` writes every chapter notebook of the book into ``OUT`` with each
``{solution}`` directive removed from the markdown (a fenced ```` ```{solution} ```` block or a ``:::{solution}`` one,
whatever the length of its fence) and every code cell tagged ``solution`` removed.  The exercises, their starter
cells and everything else stay, so the notebook still runs from top to bottom.
"""
from __future__ import annotations

import re
from pathlib import Path

import nbformat

from compendium import chapters
from compendium.base import repository_root

_FENCE = re.compile(r"\s*(`{3,}|:{3,})\s*(\S.*)?$")


def without_solutions(markdown: str) -> str:
    """``markdown`` with every ``{solution}`` directive, from its opening fence to the fence that closes it, removed;
    fences are matched line by line, so a solution that holds code blocks or math goes whole."""
    kept, depth_in_solution, fences = [], None, []
    for line in markdown.split("\n"):
        match = _FENCE.match(line)
        if match and not match.group(2) and fences and match.group(1) == fences[-1]:
            fences.pop()
            if depth_in_solution is not None and len(fences) == depth_in_solution:
                depth_in_solution = None
                continue
        elif match and match.group(2):
            if depth_in_solution is None and match.group(2).startswith("{solution}"):
                depth_in_solution = len(fences)
            fences.append(match.group(1))
        if depth_in_solution is None:
            kept.append(line)
    if depth_in_solution is not None:
        raise ValueError("a {solution} directive is not closed")
    return re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).strip("\n")


def student_notebook(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy of ``notebook`` without solutions (:func:`without_solutions`) and without code cells tagged
    ``solution``; markdown cells left empty are dropped."""
    copy = nbformat.from_dict(notebook)
    cells = []
    for cell in copy.cells:
        if cell.cell_type == "code" and "solution" in cell.get("metadata", {}).get("tags", []):
            continue
        if cell.cell_type == "markdown":
            cell.source = without_solutions(cell.source)
            if not cell.source.strip():
                continue
        cells.append(cell)
    copy.cells = cells
    return copy


def student_edition(out_dir: Path) -> list[Path]:
    """Write every chapter's notebook (the sources in ``notebooks/``, without outputs) into ``out_dir`` without its
    solutions; returns the paths written."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for chapter in chapters.registry().values():
        source = repository_root() / chapter.notebook
        target = out_dir / source.name
        nbformat.write(student_notebook(nbformat.read(source, as_version=4)), target)
        written.append(target)
    return written
