r"""The book numbers its own display equations: no paper's number typed into the math, every ``{eq}`` resolves.

A display equation that the text cites, or that is a paper's numbered equation, is a labelled MyST dollar-math block,
``$$ ... $$ (<prefix>-name)`` (the closing ``$$`` and the label on one line), which Sphinx numbers per chapter
("(4.2)"); the prose cites it with ``{eq}`<prefix>-name```.  The paper's own number is said in words next to it
("the paper's Eq. (3)"), never typed into the formula: ``\qquad(18)``, ``&&(7)`` or ``\tag{3}`` at the end of a
display or of one of its aligned lines would read as the book's number.  Reads the notebooks' JSON and the pages of
``book/`` only (the prose of :func:`test_typed_numbers.prose_files`); nothing is executed.
"""
from __future__ import annotations

import re

from test_typed_numbers import _without_code, prose_files

#: a display equation, with the label that may follow its closing ``$$`` on the same line
_DISPLAY = re.compile(r"\$\$(.+?)\$\$(?:[ \t]*\(([^()\s$]+)\))?", re.S)
#: a label of a ``{math}`` directive
_MATH_DIRECTIVE_LABEL = re.compile(r"^(?:`{3,}|:{3,})\{math\}.*\n(?:[ \t]*:[\w-]+:.*\n)*?[ \t]*:label:[ \t]*(\S+)",
                                   re.M)
#: a number typed at the end of a display or of an aligned line: ``\qquad(7)``, ``\quad (16\text{–}17)``, ``&&(8)``
_TYPED_NUMBER = re.compile(r"(?:\\q?quad|&&|\\;|~)\s*\(\s*\d[^()]*\)\s*[.,;]?\s*(?=\\\\|\\end\{|$)")
_TAG = re.compile(r"\\tag\*?\s*\{")
#: a cross-reference to an equation, ``{eq}`label``` or ``{eq}`text <label>```
_EQ_ROLE = re.compile(r"\{eq\}`(?:[^`<]*<)?([^`<>]+?)>?`")


def displays(text: str) -> list[tuple[str, str | None]]:
    """The display equations of a markdown text, outside code: (the math, its label or None)."""
    return [(m.group(1), m.group(2)) for m in _DISPLAY.finditer(_without_code(text))]


def typed_equation_numbers(math: str) -> list[str]:
    """The equation numbers typed into one display's math."""
    lines = [line.strip() for line in math.strip().split("\n")]
    found = [m.group().strip() for line in lines for m in _TYPED_NUMBER.finditer(line)]
    return found + [m.group() for m in _TAG.finditer(math)]


def equation_labels(files: dict[str, list[str]]) -> dict[str, list[str]]:
    """Each equation label of the book -> the files that define it."""
    labels: dict[str, list[str]] = {}
    for name, pieces in files.items():
        for piece in pieces:
            defined = [label for _, label in displays(piece) if label]
            defined += _MATH_DIRECTIVE_LABEL.findall(piece)
            for label in defined:
                labels.setdefault(label, []).append(name)
    return labels


def equation_references(files: dict[str, list[str]]) -> list[tuple[str, str]]:
    """Every ``{eq}`` cross-reference of the book: (file, label)."""
    return [(name, label) for name, pieces in files.items() for piece in pieces for label in _EQ_ROLE.findall(piece)]


def test_the_rules_on_examples():
    text = ("The loss\n\n$$L=\\sum_i\\ell_i.\\qquad(3)$$\n\nand $$\n\\begin{aligned}a&\\le b&&(8)\\\\\n"
            "&\\le c&&(9).\n\\end{aligned}\n$$ (ex-chain)\n\n$$x=1\\tag{4}$$ and "
            "$$X=a+Z,\\qquad Z\\sim N(0,1)$$ and $$y=2.\\qquad(16\\text{–}17)$$\n\n"
            "```python\nx = \"$$z\\qquad(5)$$\"\n```\nCited as {eq}`ex-chain` and {eq}`Eq. %s <ex-loss>`.")
    found = [(label, typed_equation_numbers(math)) for math, label in displays(text)]
    assert found == [(None, ["\\qquad(3)"]), ("ex-chain", ["&&(8)", "&&(9)."]), (None, ["\\tag{"]), (None, []),
                     (None, ["\\qquad(16\\text{–}17)"])]
    assert equation_references({"page.md": [text]}) == [("page.md", "ex-chain"), ("page.md", "ex-loss")]
    assert equation_labels({"page.md": [text, "```{math}\n:label: ex-loss\nL\n```"]}) == {
        "ex-chain": ["page.md"], "ex-loss": ["page.md"]}


def test_no_display_carries_a_typed_equation_number():
    typed = {name: found for name, pieces in prose_files().items()
             for found in [[n for piece in pieces for math, _ in displays(piece) for n in typed_equation_numbers(math)]]
             if found}
    assert not typed, ("equation numbers typed into display math (label the display, $$ ... $$ (label), and say the "
                       f"paper's number in the prose): {typed}")


def test_every_equation_label_is_unique_and_every_reference_resolves():
    files = prose_files()
    labels = equation_labels(files)
    assert labels, "no labelled display equation in the book"
    duplicated = {label: names for label, names in labels.items() if len(names) > 1}
    assert not duplicated, f"equation labels defined more than once: {duplicated}"
    dangling = [(name, label) for name, label in equation_references(files) if label not in labels]
    assert not dangling, f"{{eq}} references to no labelled equation (file, label): {dangling}"


def test_a_planted_number_and_a_dangling_reference_fail():
    files = prose_files()
    files["notebooks/hcr.ipynb"] = [*files["notebooks/hcr.ipynb"],
                                    "So\n\n$$a\\le b.\\qquad(18)$$\n\nunlike {eq}`hcr-no-such-equation`."]
    assert [n for piece in files["notebooks/hcr.ipynb"] for math, _ in displays(piece)
            for n in typed_equation_numbers(math)] == ["\\qquad(18)"]
    labels = equation_labels(files)
    assert [label for _, label in equation_references(files) if label not in labels] == ["hcr-no-such-equation"]
