"""The chapters' code cells as a reader meets them: short, the method apart from the publishing, and every chapter's
coding exercises in the gated form (a starter cell, a solution that runs and asserts its answer)."""
from __future__ import annotations

import re

import nbformat
import pytest

from compendium import chapters
from compendium.base import repository_root

MAX_LINES = 30  # QuantEcon's lectures have a median of about 23 lines a cell
#: the calls that publish a result (myst-nb's glue, the scorecard's card), kept out of the reader's way
PUBLISHING = re.compile(r"(?<![\w.])(glue\(|card\.\w+\()")
HIDDEN = {"hide-input", "remove-input", "remove-cell"}
DIFFICULTY = re.compile(r"\((warm-up|standard|project)\)\s*$")
NOTEBOOKS = {key: repository_root() / chapter.notebook for key, chapter in chapters.registry().items()}


def _cells(key: str):
    return nbformat.read(NOTEBOOKS[key], as_version=4).cells


@pytest.mark.parametrize("key", NOTEBOOKS)
def test_no_code_cell_is_longer_than_a_glance(key: str) -> None:
    long = [(i, len(c.source.split("\n"))) for i, c in enumerate(_cells(key))
            if c.cell_type == "code" and len(c.source.split("\n")) > MAX_LINES]
    assert not long, f"{key}: code cells over {MAX_LINES} lines (cell index, lines): {long}"


@pytest.mark.parametrize("key", NOTEBOOKS)
def test_publishing_sits_in_hidden_cells(key: str) -> None:
    """A cell that glues a value or records a verdict is hidden from the reader (its input folded or removed); the
    computation it publishes sits in the visible cell before it."""
    shown = [i for i, c in enumerate(_cells(key)) if c.cell_type == "code" and PUBLISHING.search(c.source)
             and not HIDDEN & set(c.metadata.get("tags", []))]
    assert not shown, f"{key}: visible cells that glue or record a verdict (cell indices): {shown}"


def _gated_exercises(cells) -> list[dict]:
    """Each gated exercise of a chapter: its label, title, starter cells and solution code cells."""
    exercises, current, part = [], None, None
    for cell in cells:
        text = cell.source
        start = re.search(r"```\{exercise-start\}\s*(.*)\n:label:\s*(\S+)", text)
        if start:
            current, part = {"title": start.group(1), "label": start.group(2), "starter": [], "solution": []}, "ex"
            exercises.append(current)
        elif re.search(r"```\{solution-start\}\s*(\S+)", text):
            label = re.search(r"```\{solution-start\}\s*(\S+)", text).group(1)
            current = next((e for e in exercises if e["label"] == label), None)
            part = "solution"
        elif "{exercise-end}" in text or "{solution-end}" in text:
            part = None
        elif cell.cell_type == "code" and current is not None and part:
            tags = set(cell.metadata.get("tags", []))
            if part == "ex" and "starter" in tags:
                current["starter"].append(text)
            if part == "solution" and "solution" in tags:
                current["solution"].append(text)
    return exercises


@pytest.mark.parametrize("key", NOTEBOOKS)
def test_two_coding_exercises_with_starter_and_asserted_solution(key: str) -> None:
    exercises = _gated_exercises(_cells(key))
    assert len(exercises) >= 2, f"{key}: {len(exercises)} gated coding exercises, at least 2 wanted"
    for exercise in exercises:
        assert DIFFICULTY.search(exercise["title"]), f"{key} {exercise['label']}: no difficulty in its title"
        assert exercise["starter"], f"{key} {exercise['label']}: no code cell tagged starter"
        assert any("assert" in s for s in exercise["solution"]), \
            f"{key} {exercise['label']}: no solution code cell tagged solution that asserts its answer"
