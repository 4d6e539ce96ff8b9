"""The course pages (book/teaching.md, book/notation.md) held to the book they describe.

Fast and offline: the chapters' markdown is read from the notebooks, the pages as text; nothing is built or run.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = ("book/teaching.md", "book/notation.md")
TOC = (ROOT / "_toc.yml").read_text(encoding="utf-8")
CHAPTERS = re.findall(r"^\s*- file: notebooks/(\w+)\s*$", TOC, re.M)

_ROLE = re.compile(r"\{(ref|prf:ref|doc|numref|cite:[pt]|cite)\}`([^`]*)`")
_SECTION_LABEL = re.compile(r"^\(([\w-]+)\)=\s*$", re.M)
_DIRECTIVE = re.compile(r"^```\{([\w:-]+)\}[^\n]*\n(.*?)^```\s*$", re.M | re.S)
_OPTION_LABEL = re.compile(r"^:label:\s*([\w-]+)\s*$", re.M)


def _markdown(key: str) -> list[str]:
    nb = json.loads((ROOT / "notebooks" / f"{key}.ipynb").read_text(encoding="utf-8"))
    return ["".join(cell["source"]) for cell in nb["cells"] if cell["cell_type"] == "markdown"]


MARKDOWN = {key: _markdown(key) for key in CHAPTERS}
BOOK_PAGES = {path: path.read_text(encoding="utf-8") for path in (ROOT / "book").glob("*.md")}


def _labels() -> tuple[set[str], set[str], dict[str, list[str]]]:
    """Labels of sections and exercises (for {ref}), of prf boxes (for {prf:ref}), and each chapter's exercises."""
    refs, prf, exercises = set(), set(), {}
    for key, cells in MARKDOWN.items():
        exercises[key] = []
        for text in cells:
            refs.update(_SECTION_LABEL.findall(text))
            for kind, body in _DIRECTIVE.findall(text):
                for label in _OPTION_LABEL.findall(body):
                    if kind.startswith("prf:"):
                        prf.add(label)
                    else:
                        refs.add(label)
                    if kind in ("exercise", "exercise-start"):
                        exercises[key].append(label)
    for text in BOOK_PAGES.values():
        refs.update(_SECTION_LABEL.findall(text))
    return refs, prf, exercises


REF_LABELS, PRF_LABELS, EXERCISES = _labels()


def _target(text: str) -> str:
    """The target of a role's text: `title <target>` or `target`."""
    match = re.search(r"<([^<>]+)>\s*$", text)
    return (match.group(1) if match else text).strip()


def _docs() -> set[str]:
    """Every document of the table of contents, as a path from the repository root without suffix."""
    return {"book/intro"} | set(re.findall(r"^\s*- file:\s*(\S+)\s*$", TOC, re.M))


def _section(text: str, heading: str) -> str:
    """The part of a page from a `## heading` to the next `## `."""
    match = re.search(rf"^## {re.escape(heading)}\s*$(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert match, f"no section '## {heading}'"
    return match.group(1)


def _syllabus_rows() -> list[list[str]]:
    """The rows of the syllabus table, as lists of cells; the first cell is the meeting's number."""
    section = _section((ROOT / "book/teaching.md").read_text(encoding="utf-8"), "A syllabus")
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")]
            for line in section.splitlines() if line.startswith("|")]
    header, rows = rows[0], [row for row in rows[2:]]
    return [header] + rows


@pytest.mark.parametrize("page", PAGES)
def test_every_cross_reference_has_a_target(page):
    text = (ROOT / page).read_text(encoding="utf-8")
    bib = (ROOT / "book/references.bib").read_text(encoding="utf-8")
    keys = set(re.findall(r"^@\w+\{([^,\s]+),", bib, re.M))
    docs = _docs()
    missing = []
    for role, body in _ROLE.findall(text):
        target = _target(body)
        if role == "ref":
            ok = target in REF_LABELS  # sections and exercises; a prf box takes {prf:ref}
        elif role == "prf:ref":
            ok = target in PRF_LABELS
        elif role == "doc":
            ok = os.path.normpath(Path(page).parent / target) in docs
        elif role == "numref":
            ok = target in REF_LABELS
        else:
            ok = all(key.strip() in keys for key in body.split(","))
        if not ok:
            missing.append(f"{{{role}}}`{body}`")
    assert not missing, f"{page}: targets that do not exist: {missing}"


def test_every_exercise_is_assigned_exactly_once():
    assert sum(map(len, EXERCISES.values())) >= len(CHAPTERS), "no exercises found in the notebooks"
    syllabus = "\n".join("|".join(row) for row in _syllabus_rows()[1:])
    counts = {label: len(re.findall(rf"\{{ref\}}`{re.escape(label)}`", syllabus))
              for labels in EXERCISES.values() for label in labels}
    wrong = {label: n for label, n in counts.items() if n != 1}
    assert not wrong, f"exercises not assigned exactly once in the syllabus: {wrong}"
    unknown = set(re.findall(r"\{ref\}`([\w-]*-ex\d+)`", syllabus)) - set(counts)
    assert not unknown, f"the syllabus assigns exercises that no chapter has: {unknown}"


def test_every_meeting_states_its_minutes_and_hours():
    header, *rows = _syllabus_rows()
    minutes = next(i for i, cell in enumerate(header) if "minutes" in cell.lower())
    hours = next(i for i, cell in enumerate(header) if "hours" in cell.lower())
    assert [row[0] for row in rows] == [str(i) for i in range(1, len(rows) + 1)], "meetings numbered 1, 2, ..."
    number = re.compile(r"^\d+(½)?$")
    for row in rows:
        assert number.match(row[minutes]) and int(row[minutes]) > 0, f"meeting {row[0]}: class minutes"
        assert number.match(row[hours]) and float(row[hours].replace("½", ".5")) > 0, f"meeting {row[0]}: hours"


def test_the_reading_load_sums_to_what_the_page_says():
    """The page's totals: the chapters' screens (thirty lines of their markdown and code cells, as its rule says),
    within 5 %, and the path's, the sum of the syllabus' reading column."""
    text = (ROOT / "book/teaching.md").read_text(encoding="utf-8")
    stated = re.search(r"The chapters are about (\d+) screens;\s+the full path reads (\d+) screens of them", text)
    assert stated, "the sentence on the book's screens is gone"
    cells = [cell for key in CHAPTERS
             for cell in json.loads((ROOT / "notebooks" / f"{key}.ipynb").read_text(encoding="utf-8"))["cells"]]
    lines = sum(len("".join(cell["source"]).split("\n")) for cell in cells if cell["cell_type"] in ("markdown", "code"))
    assert abs(lines / 30 - int(stated[1])) <= 0.05 * lines / 30, (lines / 30, stated[1])
    header, *rows = _syllabus_rows()
    reading = next(i for i, cell in enumerate(header) if "screens" in cell.lower())
    assert sum(int(row[reading]) for row in rows) == int(stated[2])


def _headings(key: str) -> dict[str, list[str]]:
    """For each prf box of a chapter, the headings it sits under (its `###` and its `##`) and their labels."""
    where, current, label = {}, {}, None
    for text in MARKDOWN[key]:
        for line in text.splitlines():
            if match := _SECTION_LABEL.match(line):
                label = match.group(1)
            elif match := re.match(r"^(##|###) (.+)$", line):
                level = len(match.group(1))
                current = {k: v for k, v in current.items() if k < level}
                current[level] = [match.group(2).split(" (")[0].strip()] + ([f"`{label}`"] if label else [])
                label = None
            elif match := _OPTION_LABEL.match(line):
                where[match.group(1)] = [name for names in current.values() for name in names]
    return where


def test_exercises_come_after_the_boxes_they_use():
    """An exercise's statement may cite boxes of its chapter ({prf:ref}); their section is taught in its meeting or
    before (the syllabus names the section by its heading or its label)."""
    header, *rows = _syllabus_rows()
    meeting_of = {}
    for row in rows:
        for label in re.findall(r"\{ref\}`([\w-]+)`", row[header.index(next(c for c in header if "Exercises" in c))]):
            meeting_of[label] = int(row[0])
    late = []
    for key, labels in EXERCISES.items():
        where = _headings(key)
        for text in MARKDOWN[key]:
            for label, body in re.findall(r"^```\{exercise\}[^\n]*\n:label:\s*([\w-]+)\n(.*?)^```", text,
                                           re.M | re.S):
                for used in re.findall(r"\{prf:ref\}`([\w-]+)`", body):
                    taught = [int(row[0]) for row in rows
                              if any(name in "|".join(row[:2]) for name in where.get(used, []))]
                    if not taught or min(taught) > meeting_of[label]:
                        late.append(f"{label} uses {used} (taught in {taught or 'no meeting'})")
    assert not late, late


CLASHES = {  # symbol as the page writes it: (a pattern for its cells in the tables, its meanings in the book at least)
    "$N$": (r"^\$N\$", 3),
    "$\\kappa$": (r"^\$\\kappa\$", 3),
    "$\\varepsilon$": (r"^\$\\(?:var)?epsilon\$", 3),
    "$m$": (r"^\$m\$", 2),
    "$\\beta$": (r"^\$\\beta", 2),
    "$d$": (r"^\$(?:d|\\mathbf d)\$", 2),
}


@pytest.mark.parametrize("symbol", CLASHES)
def test_the_notation_page_lists_each_clashing_symbol(symbol):
    """One table row per meaning, each marked as a clash, and a paragraph on the symbol in the clashes' section."""
    text = (ROOT / "book/notation.md").read_text(encoding="utf-8")
    pattern, meanings = CLASHES[symbol]
    rows = [line.strip().strip("|").split("|") for line in text.splitlines() if line.startswith("| $")]
    clashing = [row for row in rows if re.match(pattern, row[0].strip())]
    assert len(clashing) >= meanings, (symbol, clashing)
    assert all("clash" in row[0] for row in clashing), symbol
    several = _section(text, "Symbols with more than one meaning")
    leads = re.findall(r"^- \*\*(.+?)\*\*", several, re.M)
    assert any(symbol in lead for lead in leads), f"no paragraph on {symbol} in 'Symbols with more than one meaning'"


def test_the_pages_are_in_the_foundations_part():
    part = re.search(r"caption: Foundations\n(.*?)(?=\n  - caption:)", TOC, re.S).group(1)
    files = re.findall(r"- file: (\S+)", part)
    assert files.index("book/notation") == files.index("book/teaching") + 1
    assert "{doc}`notation`" in (ROOT / "book/teaching.md").read_text(encoding="utf-8")
