"""The student edition (compendium.student): solutions removed, everything else kept."""
from __future__ import annotations

import nbformat
import pytest

from compendium import chapters, cli, student
from compendium.base import repository_root

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


def test_student_edition_keeps_every_exercise_and_code_cell(tmp_path, capsys):
    assert cli.main(["student-edition", str(tmp_path)]) == 0
    written = capsys.readouterr().out.split()
    assert len(written) == len(chapters.registry())
    for chapter in chapters.registry().values():
        source = nbformat.read(repository_root() / chapter.notebook, as_version=4)
        edition = nbformat.read(tmp_path / (repository_root() / chapter.notebook).name, as_version=4)
        text = "\n".join(c.source for c in edition.cells if c.cell_type == "markdown")
        original = "\n".join(c.source for c in source.cells if c.cell_type == "markdown")
        assert "{solution}" not in text
        assert text.count("{exercise}") == original.count("{exercise}")
        kept = [c.source for c in source.cells
                if c.cell_type == "code" and "solution" not in c.metadata.get("tags", [])]
        assert [c.source for c in edition.cells if c.cell_type == "code"] == kept
