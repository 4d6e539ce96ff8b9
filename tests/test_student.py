"""The student edition (compendium.student): solutions removed, everything else kept."""
from __future__ import annotations

import re

import nbformat
import pytest

from compendium import chapters, cli, student
from compendium.base import glued_texts

EXAMPLE = """Before.

```{exercise} A question
:label: ex1
Compute $x$.
```

````{solution} ex1
:class: dropdown
The answer:
```python
x = 42
```
$$x^2$$
````

:::{solution} ex2
Colon fences go too.
:::

After."""


def test_without_solutions_removes_whole_directives_only():
    text = student.without_solutions(EXAMPLE)
    assert "{solution}" not in text and "x = 42" not in text and "Colon fences" not in text
    assert text.startswith("Before.") and text.endswith("After.") and "```{exercise} A question" in text
    assert "Compute $x$." in text
    with pytest.raises(ValueError, match="not closed"):
        student.without_solutions("```{solution} ex\nopen")


def _notebook(*cells):
    make = {"md": nbformat.v4.new_markdown_cell, "code": nbformat.v4.new_code_cell}
    nb = nbformat.v4.new_notebook()
    for kind, source, *tags in cells:
        cell = make[kind](source)
        if tags:
            cell.metadata["tags"] = list(tags)
        nb.cells.append(cell)
    return nb


GATED = _notebook(
    ("md", "(sec-a)=\n## Section\n\n$$y=x$$ (eq-y)\n\nSee {eq}`eq-y` and {numref}`Table %s <tab-a>`."),
    ("md", ":::{result-table} The caption. More.\n:name: tab-a\n\n```{glue} tab-a\n```\n:::"),
    ("md", "```{exercise-start} Compute it (warm-up)\n:label: x-ex1\n```\nWith {glue:text}`given:.1f`."),
    ("code", "x = None  # your code here", "starter"),
    ("md", "```{exercise-end}\n```"),
    ("md", "```{solution-start} x-ex1\n:class: dropdown\n```\nThe answer is {glue:text}`answer:.3f`."),
    ("code", "x = compute_the_answer_carefully()\nassert x > 0", "solution"),
    ("md", "```{solution-end}\n```"),
    ("code", "glue('answer', 1.2345)", "answers"),
    ("md", "After, {ref}`sec-a`."),
)


def test_gated_solutions_and_answer_cells_go_and_myst_reads_as_markdown():
    edition = student.student_notebook(GATED, {"given": "np.float64(2.25)", "answer": "1.2345"})
    sources = [c.source for c in edition.cells]
    assert student.answer_cells(GATED.cells) == {5, 6, 7, 8}
    assert sources[3] == "x = None  # your code here" and len(sources) == 5
    text = "\n".join(sources)
    assert "compute_the_answer_carefully" not in text and "1.234" not in text
    assert "**Exercise x-ex1: Compute it (warm-up)**\n\nWith 2.2." in text  # the statement's number written out
    assert "(eq-y)" in text and "Table ‘The caption’" in text and "After, ‘Section’." in text
    assert not re.search(r"\{[\w:-]+\}`|```\{|:::\{|^\(sec-a\)=", text, re.M), text
    with pytest.raises(ValueError, match="no {solution-end}"):
        student.answer_cells(GATED.cells[:7])


def _numbers(text: str) -> set[str]:
    """The decimal numbers of ``text`` with at least three significant digits (a solution's printed results)."""
    return {n for n in re.findall(r"(?<![\w.])\d+\.\d+(?:e-?\d+)?", text)
            if len(n.replace(".", "").lstrip("0").split("e")[0]) >= 3}


def test_student_edition_gives_nothing_away(executed_notebooks, tmp_path, capsys):
    """The edition written from the suite's ``ci`` run: no solution, no answer cell, no markup; no line of a
    solution's code, no number a solution printed and no value a solution or answer cell glued appears anywhere in
    it (prose with its numbers written out, starter and other code)."""
    folder = next(iter(executed_notebooks.values())).parent
    assert cli.main(["student-edition", str(tmp_path), "--executed", str(folder)]) == 0
    assert len(capsys.readouterr().out.split()) == len(chapters.registry())
    for key, executed in executed_notebooks.items():
        source = nbformat.read(executed, as_version=4)
        edition = nbformat.read(tmp_path / executed.name, as_version=4)
        text = "\n".join(c.source for c in edition.cells)
        answers = student.answer_cells(source.cells)
        kept_code = {line.strip() for i, c in enumerate(source.cells) if c.cell_type == "code" and i not in answers
                     for line in c.source.split("\n")}
        leaks = []
        for index in sorted(answers):
            cell = source.cells[index]
            if cell.cell_type != "code":
                continue
            leaks += [line.strip() for line in cell.source.split("\n") if len(line.strip()) >= 25
                      and line.strip() not in kept_code and line.strip() in text]
            printed = "\n".join(o.get("text", "") + str(o.get("data", {}).get("text/plain", ""))
                                 for o in cell.get("outputs", []))
            leaks += sorted(_numbers(printed) & _numbers(text))
        glued_in_answers = {name for name, (index, _) in glued_texts(source.cells).items() if index in answers}
        prose = "\n".join(student.without_solutions(c.source) for i, c in enumerate(source.cells)
                           if c.cell_type == "markdown" and i not in answers)
        leaks += [name for name in glued_in_answers
                  if re.search(r"\{glue(:text)?\}`" + re.escape(name) + r"[`:]", prose)]
        assert not leaks, f"{key}: the student edition shows answers: {leaks}"
        assert not re.search(r"\{[\w:-]+\}`|^\s*(```|:::)\{", text, re.M), key
        assert not any(c.get("outputs") for c in edition.cells if c.cell_type == "code")
        starters = [c.source for c in source.cells if "starter" in c.metadata.get("tags", [])]
        assert starters == [c.source for c in edition.cells if "starter" in c.metadata.get("tags", [])]
