"""Chapter notebooks: the sources are clean and parametrised, and every value the prose pastes is glued by the
executed ``ci`` copies in a format that applies (their numbers are held by ``tests/test_ci_numbers.py``)."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import nbformat
import pytest

from compendium import chapters
from compendium.base import glued_texts, repository_root

ROOT = repository_root()
SOURCES = sorted(p for p in (ROOT / "notebooks").rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
DEFAULTS = {"scale": "book", "device": "auto", "seed": 0}


def _assigned_values(source: str) -> dict[str, object]:
    """Names assigned literal values at the top level of a cell (``x = 1`` or ``x: int = 1``)."""
    values = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            values[node.targets[0].id] = ast.literal_eval(node.value)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            values[node.target.id] = ast.literal_eval(node.value)
    return values


def test_chapters_are_registered_sources() -> None:
    assert SOURCES, "no notebooks under notebooks/"
    for chapter in chapters.registry().values():
        assert ROOT / chapter.notebook in SOURCES, f"chapter {chapter.key}: {chapter.notebook} does not exist"


@pytest.mark.parametrize("path", SOURCES, ids=[p.relative_to(ROOT).as_posix() for p in SOURCES])
def test_source_notebook_is_clean_and_parametrised(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    assert nb.metadata.get("kernelspec", {}).get("name") == "python3", "kernelspec name must be python3"
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    for i, cell in enumerate(code):
        assert not cell.outputs, f"code cell {i} has stored outputs; clear them before committing"
        assert cell.execution_count is None, f"code cell {i} has an execution count; clear it before committing"

    for cell in nb.cells:  # e.g. a tab where "\\tau" lost its backslash to a JSON escape
        stray = sorted({hex(ord(ch)) for ch in cell.source if ord(ch) < 32 and ch != "\n"})
        assert not stray, f"cell {cell.get('id')} holds control characters {stray}"

    tagged = [i for i, cell in enumerate(code) if "parameters" in cell.metadata.get("tags", [])]
    assert tagged == [0], f"exactly one code cell, the first, must be tagged 'parameters'; tagged: {tagged}"
    values = _assigned_values(code[0].source)
    for name, default in DEFAULTS.items():
        assert values.get(name, "<missing>") == default, f"the parameters cell must define {name} = {default!r}"


@pytest.mark.parametrize("key", ["ziller2024", "mean_to_extreme"])
def test_paper_scale_without_imagenet_stops_at_the_data_with_instructions(key: str, tmp_path: Path) -> None:
    """At paper scale the image chapters need ImageNet images; without them they must stop in their set-up cell
    (before any experiment) and say what to download and where to put it."""
    from compendium import book

    missing = tmp_path / "no-imagenet-here"
    params = {"scale": "paper", "device": "cpu", "seed": 0, "imagenet_dir": str(missing)}
    with pytest.raises(book.ChapterExecutionError) as err:
        book.execute_notebook(ROOT / chapters.registry()[key].notebook, tmp_path / "out.ipynb", params,
                              force=True, label=key)
    message = str(err.value)
    assert "FileNotFoundError" in message and str(missing) in message and "image-net.org" in message
    failed = nbformat.read(tmp_path / "out.failed.ipynb", as_version=4)
    ran = [c for c in failed.cells if c.cell_type == "code" and c.get("execution_count")]
    assert "chapter_images" in ran[-1].source and len(ran) <= 4, "the chapter did work before loading the data"


def test_hcr_paper_scale_offline_stops_at_the_data_with_instructions(tmp_path: Path, monkeypatch) -> None:
    """At paper scale the HCR chapter downloads MNIST and CIFAR-10; offline (``COMPENDIUM_OFFLINE``, inherited by the
    kernel) it must stop in its set-up cell, before any training, naming the files and where to get them."""
    from compendium import book

    monkeypatch.setenv("COMPENDIUM_OFFLINE", "1")
    missing = tmp_path / "no-data-here"
    params = {"scale": "paper", "device": "cpu", "seed": 0, "data_dir": str(missing)}
    with pytest.raises(book.ChapterExecutionError) as err:
        book.execute_notebook(ROOT / chapters.registry()["hcr"].notebook, tmp_path / "out.ipynb", params,
                              force=True, label="hcr")
    message = str(err.value)
    assert "FileNotFoundError" in message and "COMPENDIUM_OFFLINE" in message, message
    failed = nbformat.read(tmp_path / "out.failed.ipynb", as_version=4)
    ran = [c for c in failed.cells if c.cell_type == "code" and c.get("execution_count")]
    # parameters, papermill's, the install cell, the set-up (settings and the run's plan), then the data
    assert "load_data" in ran[-1].source and len(ran) <= 5, "the chapter did work before loading the data"
    error = next(o for o in ran[-1].outputs if o.output_type == "error")
    assert "train-images-idx3-ubyte.gz" in error.evalue and str(missing / "mnist") in error.evalue, error.evalue
    assert not any(p.is_file() for p in missing.rglob("*"))  # nothing half-written


_PASTED = re.compile(r"\{glue:text\}`(?:/?(notebooks/\w+\.ipynb)::)?([^`:]+)(?::([^`]*))?`")


def _glued(notebook: Path) -> dict[str, str]:
    """Name -> text/plain of every value an executed notebook glues."""
    return {name: text for name, (_, text) in glued_texts(nbformat.read(notebook, as_version=4).cells).items()}


def test_every_pasted_value_is_glued_and_takes_its_format(executed_notebooks: dict[str, Path]) -> None:
    """Each ``{glue:text}`` role of the prose (chapters and book pages) names a value that its notebook's ``ci`` run
    glues, and the role's format spec applies to that value, so no sentence renders a missing or garbled number."""
    glued = {f"notebooks/{Path(chapters.registry()[key].notebook).name}": _glued(path)
             for key, path in executed_notebooks.items()}
    prose = {f"notebooks/{p.name}": "\n".join(c.source for c in nbformat.read(p, as_version=4).cells
                                            if c.cell_type == "markdown") for p in SOURCES}
    prose |= {f"book/{p.name}": p.read_text() for p in (ROOT / "book").glob("*.md")}
    problems = []
    for name, text in prose.items():
        for notebook, key, spec in _PASTED.findall(text):
            values = glued.get(notebook or name, {})
            if key not in values:
                problems.append(f"{name}: {key} is not glued by {notebook or name}")
            elif values[key] in ("nan", "inf", "-inf"):
                problems.append(f"{name}: {key} is {values[key]} at ci scale")
            elif spec:
                try:
                    format(ast.literal_eval(values[key]), spec)
                except (ValueError, TypeError, SyntaxError) as error:
                    problems.append(f"{name}: {key} = {values[key]} does not take the format {spec!r} ({error})")
            elif notebook:
                problems.append(f"{name}: {key} is pasted across documents without a format spec")
    assert not problems, "\n".join(problems)


#: the longest code line that the book's column shows whole in a 1280 px window (the browser test measures it)
CODE_WIDTH = 85


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.stem)
def test_code_lines_fit_the_page(path: Path) -> None:
    long = [(i, line) for i, cell in enumerate(nbformat.read(path, as_version=4).cells) if cell.cell_type == "code"
            for line in cell.source.split("\n") if len(line) > CODE_WIDTH]
    assert not long, f"{path.name}: code lines over {CODE_WIDTH} characters (cell, line): {long[:5]}"


#: a figure's glue key, ``<prefix>-fig-<name>``, as a string in a code cell: the first argument of ``glue``, or an
#: item of a list of keys that a loop glues
_FIGURE_KEY = re.compile(r"""["']([a-z0-9]+-fig-[\w-]+)["']""")
_FIGURE_DIRECTIVE = re.compile(r"^(?:`{3,}|:{3,})\{glue:figure\}[ \t]+(\S+)[ \t]*\n((?:[ \t]*:[\w-]+:.*\n)*)", re.M)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.stem)
def test_every_figure_is_glued_and_captioned(path: Path) -> None:
    """No figure is a bare ``plt.show()`` output: a cell hands each figure it makes to
    ``plotting.show_figure("<prefix>-fig-<name>", fig)`` (glued for the page, shown inline in a live kernel), and
    exactly one ``{glue:figure}`` directive of the same notebook shows it, numbered, with
    a caption and ``:name:`` equal to the key, so that the prose can ``{numref}`` it; no directive shows a figure that
    no cell glues.  (That each key really is glued with an image is seen in the executed notebook: a missing key
    fails the build.)"""
    cells = nbformat.read(path, as_version=4).cells
    problems = [f"code cell {cell.get('id')} calls plt.show()" for cell in cells
                if cell.cell_type == "code" and re.search(r"\bplt\.show\(", cell.source)]
    glued = [key for cell in cells if cell.cell_type == "code" for key in _FIGURE_KEY.findall(cell.source)]
    problems += [f"{key} is glued {glued.count(key)} times" for key in sorted(set(glued)) if glued.count(key) > 1]
    directives = [(key, dict(re.findall(r"^[ \t]*:([\w-]+):[ \t]*(.*?)[ \t]*$", options, re.M)))
                  for cell in cells if cell.cell_type == "markdown"
                  for key, options in _FIGURE_DIRECTIVE.findall(cell.source)]
    shown = [key for key, _ in directives if "-fig-" in key]
    for key in sorted(set(glued)):
        if shown.count(key) != 1:
            problems.append(f"{key} is glued but shown by {shown.count(key)} {{glue:figure}} directives, not one")
    for key, options in directives:
        if "-fig-" not in key:
            continue
        if key not in glued:
            problems.append(f"a {{glue:figure}} directive shows {key}, which no code cell glues")
        if options.get("name") != key:
            problems.append(f"the {{glue:figure}} directive of {key} has :name: {options.get('name')!r}, not the key")
    assert not problems, f"{path.name}:\n" + "\n".join(problems)


_RESULT_TABLE = re.compile(r"^:{3,}\{result-table\}.*\n[ \t]*:name:[ \t]*(\S+)[ \t]*\n\s*`{3,}\{glue\}[ \t]+(\S+)",
                           re.M)
_NUMREF = re.compile(r"\{numref\}`(?:[^`<]*<)?([\w-]+)>?`")


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.stem)
def test_every_numbered_figure_and_table_is_cited(path: Path) -> None:
    """Every numbered figure (``{glue:figure}``) and result table (``{result-table}``, book/_ext/resulttable.py) of a
    chapter is cited by its label in the prose (``{numref}``), so that a reader finds "Figure 4.3" in the text; a
    result table shows the glued table of its own label."""
    markdown = [cell.source for cell in nbformat.read(path, as_version=4).cells if cell.cell_type == "markdown"]
    labels = [key for source in markdown for key, _ in _FIGURE_DIRECTIVE.findall(source)]
    tables = [pair for source in markdown for pair in _RESULT_TABLE.findall(source)]
    problems = [f"the result table {name} shows {key}" for name, key in tables if name != key]
    cited = {label for source in markdown for label in _NUMREF.findall(source)}
    problems += [f"{label} is never cited with {{numref}}" for label in [*labels, *(name for name, _ in tables)]
                 if label not in cited]
    assert not problems, f"{path.name}:\n" + "\n".join(problems)
