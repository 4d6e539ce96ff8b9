"""The student edition: the chapter notebooks without the exercises' solutions, for a teacher to hand out.

``python -m compendium student-edition OUT`` writes every chapter notebook of the book into ``OUT``:

* without solutions: every ``{solution}`` directive of the markdown (:func:`without_solutions`), every cell from a
  ``{solution-start}`` to its ``{solution-end}`` (sphinx-exercise's gated form, whose solution code cells run in the
  book's build), and every code cell tagged ``solution`` or ``answers`` (a cell that glues the numbers the prose
  solutions quote);
* readable in plain Jupyter: the MyST markup that only the book renders is rewritten as Markdown
  (:func:`plain_markdown`): directives become bold headings, cross-references their targets' titles, and every
  pasted number (``{glue:text}``) the value the book's executed notebook glued;
* without outputs: the notebooks run from top to bottom as the book's do, the starter cells included.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import nbformat

from compendium import chapters
from compendium.base import glued_texts, repository_root

#: code cells dropped from the edition: solutions, and cells that glue the values the prose solutions quote
ANSWER_TAGS = frozenset({"solution", "answers"})
#: code cells of an executed notebook that the edition drops too: papermill's cell of the run's parameters
RUN_TAGS = frozenset({"injected-parameters"})
_FENCE = re.compile(r"\s*(`{3,}|:{3,})\s*(\S.*)?$")
_DIRECTIVE = re.compile(r"\{([\w:-]+)\}\s*(.*)$")
_OPTION = re.compile(r"\s*:([\w-]+):\s*(.*)$")
_ROLE = re.compile(r"\{([\w:-]+)\}`([^`]*)`")
_TARGET = re.compile(r"^(.*?)\s*<([^<>]+)>$")
_LABEL_LINE = re.compile(r"^\(([\w:-]+)\)=[ \t]*\n?", re.M)
_EQUATION_LABEL = re.compile(r"\$\$[ \t]*\(([\w:-]+)\)[ \t]*$", re.M)
_HEADING = re.compile(r"^\(([\w:-]+)\)=\s*\n#+\s+(.+)$", re.M)
_NUMPY_SCALAR = re.compile(r"^np\.\w+\((.*)\)$")


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


def glued_value(text: str):
    """The Python value of a glued ``text/plain`` (a number, a string), as ``{glue:text}`` formats it; a NumPy
    scalar's repr (``np.float64(0.5)``) gives its number."""
    scalar = _NUMPY_SCALAR.match(text.strip())
    try:
        return ast.literal_eval(scalar.group(1) if scalar else text)
    except (ValueError, SyntaxError):
        return text


def _paste(key: str, glued: dict[str, str]) -> str:
    name, _, spec = key.partition(":")
    name = name.split("::")[-1]
    if name not in glued:
        raise KeyError(f"{{glue:text}} pastes {name!r}, which the executed notebook does not glue")
    value = glued_value(glued[name])
    return format(value, spec) if spec else str(value)


def _short(title: str, width: int = 60) -> str:
    """A title cut at its first sentence or ``width`` characters."""
    title = re.split(r"(?<=[a-z)])\. (?=[A-Z])", title.strip())[0].rstrip(".")  # not at "Prop. 6"
    return title if len(title) <= width else title[:width].rsplit(" ", 1)[0] + " …"


def labels(markdown: str) -> dict[str, tuple[str, str]]:
    """Label -> (its kind, a short readable title) for every target of a chapter's markdown: headings
    (``(label)=`` above them), boxes and exercises (``:label:``, their title), figures and tables (``:name:``)."""
    titles = {label: ("", heading.strip()) for label, heading in _HEADING.findall(markdown)}
    lines = markdown.split("\n")
    for i, line in enumerate(lines):
        fence = _FENCE.match(line)
        directive = fence and fence.group(2) and _DIRECTIVE.match(fence.group(2))
        if not directive:
            continue
        kind, title = directive.group(1), directive.group(2)
        kind = kind if kind in ("glue:figure", "result-table") else kind.split(":")[-1].replace("-start", "")
        for option in lines[i + 1:]:
            found = _OPTION.match(option)
            if not found:
                break
            if found.group(1) in ("label", "name"):
                kind = {"glue:figure": "Figure", "result-table": "Table"}.get(kind, kind.capitalize())
                titles[found.group(2).strip()] = (kind, _short(title or lines[i + 1:i + 4][-1]))
    return titles


def _role(match: re.Match, glued: dict[str, str], titles: dict[str, tuple[str, str]]) -> str:
    role, content = match.groups()
    target = _TARGET.match(content)
    text, label = (target.group(1), target.group(2)) if target else ("", content)
    if role.startswith("glue"):
        return _paste(content, glued)
    if role in ("ref", "numref", "prf:ref", "doc"):
        kind, title = titles.get(label, ("", label.rsplit("/", 1)[-1]))
        if text:
            return text.replace("%s", f"‘{title}’")
        return f"{kind} ‘{title}’".strip()
    if role == "eq":
        return f"({label})"
    if role.startswith("cite"):
        return f"[{label}]"
    if role.startswith("py:"):
        return f"`{text or label.lstrip('~')}`"
    return content


def _directive_heading(name: str, title: str, options: dict[str, str]) -> str | None:
    """The Markdown that stands for a directive's opening fence (``None``: the directive goes, body and all)."""
    kind = name.split(":")[-1]
    if name in ("exercise", "exercise-start"):
        return f"**Exercise {options.get('label', '')}: {title}**".replace("  ", " ")
    if name in ("glue", "exercise-end", "solution-end"):
        return None
    if name in ("glue:figure", "result-table"):
        what = "Figure" if name == "glue:figure" else "Table"
        heading = f"*{what} `{options.get('name', title)}`, made by a cell above"
        return heading + (f": {title}*" if name == "result-table" and title else ":*")
    if name == "math":
        return "$$"
    return f"**{kind.capitalize()}{': ' + title if title else ''}.**"


def plain_markdown(markdown: str, glued: dict[str, str], titles: dict[str, tuple[str, str]]) -> str:
    """``markdown`` with the book's MyST markup rewritten as plain Markdown: a directive's fence as a bold heading
    (its options dropped, its body kept), a gated exercise's end fence dropped, a glued table or figure as its
    caption, cross-references as their targets' titles (``titles``, from :func:`labels`), ``{glue:text}`` as the
    glued value in its format (``glued``: name -> ``text/plain``), and the labels above headings and after
    equations removed."""
    out, stack = [], []  # stack: (fence, "code" | "keep" | "math" | "drop") of the blocks open at a line
    lines = _EQUATION_LABEL.sub("$$", _LABEL_LINE.sub("", markdown)).split("\n")
    i = 0
    while i < len(lines):
        line, i = lines[i], i + 1
        visible = all(mode != "drop" for _, mode in stack)
        fence = _FENCE.match(line)
        if fence and not fence.group(2) and stack and stack[-1][0] == fence.group(1):
            _, mode = stack.pop()
            if visible and mode in ("code", "math"):
                out.append(line if mode == "code" else "$$")
            continue
        directive = fence and fence.group(2) and _DIRECTIVE.match(fence.group(2))
        if not directive:
            if fence and fence.group(2):  # a code block, kept as it is
                stack.append((fence.group(1), "code"))
            if visible:
                out.append(line)
            continue
        options = {}
        while i < len(lines) and (found := _OPTION.match(lines[i])):
            options[found.group(1)], i = found.group(2).strip(), i + 1
        name = directive.group(1)
        heading = _directive_heading(name, directive.group(2).strip(), options)
        stack.append((fence.group(1), "drop" if heading is None else "math" if name == "math" else "keep"))
        if visible and heading is not None:
            out += [heading, ""] if name != "math" else [heading]  # a heading is a paragraph of its own
    text = _ROLE.sub(lambda m: _role(m, glued, titles), "\n".join(out))
    return re.sub(r"\n{3,}", "\n\n", text).strip("\n")


def _starts(source: str, name: str) -> bool:
    """Whether ``source`` opens a ``{name}`` directive."""
    return any((f := _FENCE.match(line)) and f.group(2) and f.group(2).startswith("{" + name + "}")
               for line in source.split("\n"))


def answer_cells(cells) -> set[int]:
    """Indices of the cells that a student edition drops as answers: every cell from a ``{solution-start}`` to its
    ``{solution-end}``, and every code cell tagged ``solution`` or ``answers``."""
    dropped, in_solution = set(), False
    for index, cell in enumerate(cells):
        starts = cell.cell_type == "markdown" and _starts(cell.source, "solution-start")
        if starts or in_solution:
            dropped.add(index)
            in_solution = not (cell.cell_type == "markdown" and _starts(cell.source, "solution-end"))
        elif cell.cell_type == "code" and ANSWER_TAGS & set(cell.get("metadata", {}).get("tags", [])):
            dropped.add(index)
    if in_solution:
        raise ValueError("a {solution-start} has no {solution-end}")
    return dropped


def student_notebook(notebook: nbformat.NotebookNode,
                     glued: dict[str, str] | None = None) -> nbformat.NotebookNode:
    """A copy of ``notebook`` without its :func:`answer_cells` and papermill's parameters cell, its outputs cleared
    and its markdown rewritten as plain Markdown (:func:`plain_markdown`) with the numbers of ``glued`` (name ->
    ``text/plain``, from the same notebook executed; by default the values it holds itself)."""
    copy = nbformat.from_dict(notebook)
    if glued is None:
        glued = {name: text for name, (_, text) in glued_texts(notebook.cells).items()}
    titles = labels("\n".join(c.source for c in copy.cells if c.cell_type == "markdown"))
    dropped, cells = answer_cells(copy.cells), []
    for index, cell in enumerate(copy.cells):
        if index in dropped:
            continue
        if cell.cell_type == "code":
            if RUN_TAGS & set(cell.get("metadata", {}).get("tags", [])):
                continue
            cell.outputs, cell.execution_count = [], None
            cell.metadata.pop("papermill", None)
            cell.metadata.pop("execution", None)
        elif cell.cell_type == "markdown":
            cell.source = plain_markdown(without_solutions(cell.source), glued, titles)
            if not cell.source.strip():
                continue
        cells.append(cell)
    copy.cells = cells
    return copy


def student_edition(out_dir: Path, executed: dict[str, Path]) -> list[Path]:
    """Write every chapter's notebook into ``out_dir`` as :func:`student_notebook` makes it from its executed
    notebook ``executed[key]`` (whose glued values the edition writes out); returns the paths written."""
    missing = sorted(set(chapters.registry()) - set(executed))
    if missing:
        raise ValueError(f"no executed notebook for {', '.join(missing)}: the edition writes out the values a run "
                         "glued; run `python -m compendium build` (or `run KEY`) first")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for key, chapter in chapters.registry().items():
        target = out_dir / Path(chapter.notebook).name
        nbformat.write(student_notebook(nbformat.read(executed[key], as_version=4)), target)
        written.append(target)
    return written


def executed_in(folder: Path) -> dict[str, Path]:
    """Chapter key -> its executed notebook in ``folder`` (a build's ``_build/executed/notebooks``), for each chapter
    found there."""
    return {key: Path(folder) / Path(chapter.notebook).name for key, chapter in chapters.registry().items()
            if (Path(folder) / Path(chapter.notebook).name).is_file()}


def default_executed() -> Path:
    """Where ``python -m compendium build`` leaves the executed notebooks."""
    return repository_root() / "_build" / "executed" / "notebooks"
