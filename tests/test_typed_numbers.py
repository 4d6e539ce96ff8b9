r"""No typed number in the book's prose: a result is pasted from the run (myst-nb ``glue``), not typed.

The rule.  The prose is every markdown cell of every chapter notebook and every page of ``book/`` except the
bibliography.  Code spans, fenced code, directive options (``:label: ...``), glue roles, cross-references,
links and HTML comments are removed first.  What remains is searched for *typed numbers*: a number with a decimal
point or a percent sign, a number in scientific notation (``1e-3``, ``10^{-5}``), or an integer of three digits or
more (``1,000``).  These are allowed to be typed:

* a reference: a number right after Table, Figure, Fig., Section, Sec., Eq., Eqs., Appendix, App., Algorithm,
  Theorem, Lemma, Proposition, Corollary, Definition, Example, point, item, Step, exercise, Chapter or arXiv;
* the operating point of a rate, ``FPR = 0.01``: part of the rate's name (Table 1's "TPR at FPR = 0.01");
* a year (1900-2099);
* small integers (below 100): counts, set sizes, exercise numbers, but not a duration (``53 s``, ``4 min``);
* a parameter value, written as one of:
  - a setting in math, ``$\sigma=0.5$``, ``$C\in\{1,10\}$``, ``$s=1/200$``, ``$\delta=N^{-1.1}$``,
    ``$\kappa\le 10^{-3}$``: a single symbol (a letter or a macro, with a subscript) then ``=``, ``\in``, ``\le``,
    ``\ge``, ``<`` or ``>`` then numbers (``5\cdot10^{-4}``, ``2\times10^6``, a fraction, a set, a power of a
    symbol).  ``\approx`` is not a setting: an approximate value is a result;
  - an exponent in math (``^{1/40}``, ``^{10}``) and the range of the data (``$[0,255]$``);
  - a setting in text, ``κ = 0.5``, ``κ = 1, 5``, or a number right after the name of a training setting
    (``learning rate $10^{-3}$``, ``weight decay 0.01``, ``batches of 32``);
  - a size: ``224×224``, ``784→784``, ``784-784-784``, ``8/32/64 + 64``, ``32 px``, ``768-pixel``, ``784-wide``;
  - an integer that counts something named right after it (``100 photographs``, ``$10^6$ draws``, ``512 epochs``;
    the nouns are listed in ``_COUNTED``), or a range of indices (``digits 0–1499``);
  - the size of a download or of files written (``450 MB``);
  - a name: ``CIFAR-100``, ``ResNet-18``, ``WideResNet-50-2``, ``RTX 3090``.
  - the tolerance of a check that the cell beside it asserts: ``within 0.5 dB``, ``within 2 %``, ``to $10^{-9}$``.

A typed number that is none of these fails the test: it is a result, a paper value or a derived constant.  Paste it
(``glue`` and ``{glue:text}``, from the run or from the chapter's ``PAPER_*`` constants and ``paper_numbers()``), or
write the formula instead of its value.
"""
from __future__ import annotations

import re
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
SKIPPED_PAGES = {"book/bibliography.md"}

_FENCE = re.compile(r"\s*(`{3,}|~{3,})\s*(\S.*)?$")


def _without_code(text: str) -> str:
    """The text without fenced code.  Fences are matched line by line (a bare fence closes the innermost open one), so
    that a directive's body ({exercise}, {solution}, {prf:...}) and its title stay prose; a {code...} directive and a
    fence with a language or nothing after it are code."""
    kept, open_fences = [], []
    for line in text.split("\n"):
        match = _FENCE.match(line)
        in_code = any(code for _, code in open_fences)
        if match and not match.group(2) and open_fences and match.group(1) == open_fences[-1][0]:
            open_fences.pop()
            kept.append("")
        elif match and not in_code:
            info = match.group(2) or ""
            is_code = not info.startswith("{") or info.startswith("{code")
            open_fences.append((match.group(1), is_code))
            kept.append("" if is_code else info.partition("}")[2])
        else:
            kept.append("" if in_code else line)
    return "\n".join(kept)


_REMOVED = [
    re.compile(r"<!-- generated .*?<!-- end of the generated tables -->", re.S),  # tables made from a report
    re.compile(r"<!--.*?-->", re.S),  # HTML comments
    re.compile(r"`[^`\n]*`"),  # code spans, and the content of roles such as {glue:text}`key:.3f`, {ref}`label`
    re.compile(r"\]\([^)]*\)"),  # link targets
    re.compile(r"https?://\S+"),  # bare URLs
    re.compile(r"^:[a-z-]+:.*$", re.M),  # directive options
    re.compile(r"^\([^)]*\)=\s*$", re.M),  # MyST labels
]
_REFERENCE = (r"(?:Tables?|Figures?|Figs?\.|Sections?|Secs?\.|Eqs?\.|Equations?|Appendix|App\.|Algorithms?|"
              r"Theorems?|Lemmas?|Propositions?|Prop\.|Corollary|Definitions?|Def\.|Examples?|points?|items?|Steps?|"
              r"exercises?|Chapters?|arXiv:?)")
_REFERENCES = re.compile(_REFERENCE + r"[\s~]*\(?[A-Z]?\d+(?:\.\d+)*(?:[a-z])?\)?(?:\s*(?:[-–,]|and|&)\s*"
                         r"\(?[A-Z]?\d+(?:\.\d+)*\)?)*")
_NUMBER = re.compile(r"10\^\{?-?\d+\}?|(?<![\w.])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:\s*%|[eE][-+]?\d+)?(?![\w])")


def prose_files() -> dict[str, list[str]]:
    """Every prose text of the book: relative path -> its markdown pieces."""
    files = {}
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        nb = nbformat.read(notebook, as_version=4)
        files[notebook.relative_to(ROOT).as_posix()] = [c.source for c in nb.cells if c.cell_type == "markdown"]
    for page in sorted((ROOT / "book").glob("*.md")):
        name = page.relative_to(ROOT).as_posix()
        if name not in SKIPPED_PAGES:
            files[name] = [page.read_text()]
    return files


_DURATION = re.compile(r"\s*(?:s|ms|µs|min|minutes|h|hours|seconds)\b")  # a time is measured, never typed
_OPERATING_POINT = re.compile(r"\bFPR\s*=\s*\d*\.\d+")
_NUM = r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
_POWER_OF_TEN = r"10\^\{?-?\d+\}?"
_VALUE = (rf"(?:\\\{{(?:[^{{}}]|\{{[^{{}}]*\}})*\\\}}(?:\s*\\cdot\s*{_POWER_OF_TEN})?|\([-\d.,\s]+\)|{_POWER_OF_TEN}"
          rf"|{_NUM}\s*/\s*{_NUM}|{_NUM}(?:\s*(?:\\cdot|\\times)\s*{_POWER_OF_TEN})?|[A-Za-z]\^\{{?-?[\d.]+\}}?)")
_SYMBOL = r"(?:\\[A-Za-z]+|[A-Za-z]|\|[A-Za-z]\||\([^()=]*\))(?:\s*_\{[^}]*\}|\s*_[A-Za-z0-9])?(?:\s*\^(?:\d|\*))?"
_RELATION = r"\s*(?:=|\\in|\\leq?|\\geq?|<|>)\s*"
_SETTING = re.compile(rf"{_SYMBOL}{_RELATION}{_VALUE}(?:\s*,\s*(?:{_VALUE}|\\dots))*|{_VALUE}{_RELATION}(?={_SYMBOL})")
_INTERVAL = re.compile(rf"\[\s*0\s*,\s*{_NUM}\s*\]")  # the range of the data: [0,1], [0,255]
_EXPONENT = re.compile(r"(?<!10)\^(?:\{[^}]*\}|-?\d+(?:\.\d+)?)")
_MACRO = re.compile(r"\\[A-Za-z]+")
_MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$", re.S)
_COUNTED = ("images|photographs|photos|digits|samples|rows|steps|releases|draws|bins|epochs|heads|weights|pixels|"
            "identities|persons|classes|features|units|trainings|test|training|validation|shadow|noise|DDPM|DDIM|"
            "ImageNet|MNIST|CIFAR|JPEGs|files|reconstructions|trials|repetitions|iterations|points|values|crops|"
            "attacks|screens")  # screens: the teaching page's reading load, whose sums test_course_pages holds
_PARAMETERS = [
    re.compile(rf"(?<![\w.])[α-ωΑ-Ω]\s*=\s*{_NUM}(?:\s*,\s*{_NUM})*"),  # a setting in text: κ = 0.5, κ = 1, 5
    # a number after the name of a training setting
    re.compile(rf"(?:learning\s+rate|weight\s+decay|lr|batch(?:es\s+of)?|momentum)\s+\$?(?:{_VALUE})"),
    re.compile(rf"{_NUM}(?:\s*[×→]\s*{_NUM})+|(?:\d+\s*)?(?:\\times\s*\d+(?![\d.^])\s*)+"  # sizes
               rf"|\d+(?:/\d+)+(?:\s*\+\s*\d+)?|\d+-wide|\d+(?:-\d+){{2,}}|{_NUM}(?:/{_NUM})*\s*px\b|\d+-pixel"),
    re.compile(rf"(?:(?<![\w.]){_NUM}|\$\s*(?:{_NUM}\s*\\(?:times|cdot)\s*)?{_POWER_OF_TEN}\s*\$)"
               rf"(?=\s+(?:{_COUNTED})\b)"),  # counts of something named
    re.compile(r"\b0\s*[–-]\s*\d+"),  # a range of indices
    re.compile(r"\b[A-Za-z][\w]*-\d+(?:-\d+)*|\b(?:RTX|GTX)\s+\d+"),  # a name: CIFAR-100, ResNet-18, RTX 3090
    re.compile(rf"{_NUM}\s*(?:MB|GB|TB)\b"),  # the size of a download or of files written
    # the tolerance of a check
    re.compile(rf"\bwithin\s+\$?\s*(?:(?:{_NUM}\s*\\cdot\s*)?{_POWER_OF_TEN}|{_NUM}(?:\s*%)?)"
               rf"|\bto\s+\$\s*{_POWER_OF_TEN}"),
]


def _without_parameters(text: str) -> str:
    """The text with the parameter values of the module's rule blanked out."""
    def blank_settings(math: re.Match) -> str:
        return _EXPONENT.sub(" ", _INTERVAL.sub(" ", _SETTING.sub(" ", _MACRO.sub(r" \g<0> ", math.group()))))

    text = _MATH.sub(blank_settings, text)
    for pattern in _PARAMETERS:
        text = pattern.sub(" ", text)
    return text


def typed_numbers(text: str) -> list[str]:
    """The typed numbers of a markdown text by the module's rule, in order."""
    text = _without_code(text)
    for pattern in _REMOVED:
        text = pattern.sub(" ", text)
    text = _without_parameters(_OPERATING_POINT.sub(" ", _REFERENCES.sub(" ", text)))
    found = []
    for match in _NUMBER.finditer(text):
        token = re.sub(r"\s+", "", match.group())
        digits = token.replace(",", "")
        small = digits.isdigit() and (int(digits) < 100 or 1900 <= int(digits) <= 2099)
        if small and not _DURATION.match(text, match.end()):
            continue
        found.append(token)
    return found


def typed_in(files: dict[str, list[str]]) -> dict[str, list[str]]:
    """The typed numbers of each prose file that has any."""
    found = {name: [n for piece in pieces for n in typed_numbers(piece)] for name, pieces in files.items()}
    return {name: numbers for name, numbers in found.items() if numbers}


def test_the_rule_on_examples():
    text = ("Table 3's recipe (Sec. 3.2, Eq. (6), Figures 8–9, 2024) gives 0.813 at $N=10$, 86 % of 1,000 and "
            "a TPR of 2.5e-3 at FPR = 0.01; ε rises from 7 to 12. {glue:text}`tl-tpr:.3f` and `0.5` and "
            "[the page](x1.5.md) are pasted or code.\n:label: tl-0.5\n```python\nx = 3.14\n```")
    assert typed_numbers(text) == ["0.813", "86%", "1,000", "2.5e-3"]
    settings = ("$\\sigma=5\\cdot10^{-4}$, $C\\in\\{1,10,100\\}$, $s=1/200$, $\\delta=N^{-1.1}$, "
                "$10^{-4}\\le\\sigma^2\\le10^{-1}$, $(\\mu,\\sigma_0)=(-2,0.5)$, $\\Delta_{10}=0.449$, "
                "$\\kappa\\le1-0.985^{1/40}$, $N=3\\times224\\times224$, $M^*=400$, "
                "$\\sigma\\in\\{10^{-2},10^{-1}\\}$, $x\\in[0,255]$, $\\sigma\\in\\{1,2.15\\}\\cdot10^{-3}$, "
                "$|D|=1000$, in $[0,255]$; 224×224 and "
                "32/224/1024 px, 784-784-784, 100 photographs, 20,000 draws, "
                "digits 0–1499, a 450 MB download, within 0.5 dB, equal to $10^{-9}$")
    assert typed_numbers(settings) == ["0.985"]
    assert typed_numbers("$s=1/200,1/500$, κ = 0.5, κ = 1, 5, learning rate $10^{-3}$, CNN 32/1024/3072, 784-wide, "
                          "CIFAR-100 on an RTX 3090") == []
    results = "$1-0.99^{10}=0.0956$, $\\sigma\\approx0.03$, below $10^{-21}$, $2.56\\times10^6$ of them"
    assert typed_numbers(results) == ["0.99", "0.0956", "0.03", "10^{-21}", "2.56", "10^6"]
    assert typed_numbers("$2.56\\times10^6$ heads and $10^6$ draws") == []
    assert typed_numbers("trains in 53 s, not 4 minutes") == ["53", "4"]


def test_no_typed_number_in_the_prose():
    assert not typed_in(prose_files()), ("typed numbers in the prose (paste them with glue, or take a paper value from "
                                         "the chapter's PAPER_* constants)")


def test_a_planted_result_fails():
    files = prose_files()
    files["notebooks/hcr.ipynb"].append("```{solution} hcr-ex9\n:class: dropdown\nThe bound is 0.42 here.\n```")
    assert typed_in(files) == {"notebooks/hcr.ipynb": ["0.42"]}
