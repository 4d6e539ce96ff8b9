"""No new typed number in the book's prose: a result is pasted from the run (myst-nb ``glue``), not typed.

The rule.  The prose is every markdown cell of every chapter notebook and every page of ``book/`` except the
bibliography.  Code spans, fenced code, directive options (``:label: ...``), glue roles, cross-references,
links and HTML comments are removed first.  What remains is searched for *typed numbers*: a number with a decimal
point or a percent sign, a number in scientific notation (``1e-3``, ``10^{-5}``), or an integer of three digits or
more (``1,000``).  These are allowed to be typed:

* a reference: a number right after Table, Figure, Fig., Section, Sec., Eq., Eqs., Appendix, App., Algorithm,
  Theorem, Lemma, Proposition, Corollary, Definition, Example, point, item, Step, exercise, Chapter or arXiv;
* the operating point of a rate, ``FPR = 0.01``: part of the rate's name (Table 1's "TPR at FPR = 0.01");
* a year (1900-2099);
* small integers (below 100): counts, set sizes, exercise numbers.

Everything else typed is debt.  ``typed_numbers_baseline.json`` lists, per file, how often each typed number occurs
today; the test fails when a file holds a typed number more often than the list allows (a new typed result: paste it
with ``glue`` and ``{glue:text}``, or give a paper value from the chapter's ``PAPER_*`` constants) and when the list
allows more than the file holds (a number was pasted or removed: shrink the list with
``python tests/test_typed_numbers.py``).  The list only shrinks.
"""
from __future__ import annotations

import collections
import json
import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
BASELINE = Path(__file__).with_name("typed_numbers_baseline.json")
SKIPPED_PAGES = {"book/bibliography.md"}

_REMOVED = [
    # fenced code (a language or nothing after the fence, or a code directive); other directives' bodies are prose
    re.compile(r"^(```+|~~~+)(?!\{)[^\n]*\n.*?^\1\s*$|^(```+)\{code[^}]*\}.*?^\2\s*$", re.S | re.M),
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
_NUMBER = re.compile(r"(?<![\w.])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:\s*%|[eE][-+]?\d+)?(?![\w])"
                     r"|10\^\{?-?\d+\}?")


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


_OPERATING_POINT = re.compile(r"\bFPR\s*=\s*\d*\.\d+")


def typed_numbers(text: str) -> list[str]:
    """The typed numbers of a markdown text by the module's rule, in order."""
    for pattern in _REMOVED:
        text = pattern.sub(" ", text)
    text = _OPERATING_POINT.sub(" ", _REFERENCES.sub(" ", text))
    found = []
    for match in _NUMBER.finditer(text):
        token = re.sub(r"\s+", "", match.group())
        digits = token.replace(",", "")
        if digits.isdigit() and (int(digits) < 100 or 1900 <= int(digits) <= 2099):
            continue
        found.append(token)
    return found


def count_all() -> dict[str, dict[str, int]]:
    counts = {}
    for name, pieces in prose_files().items():
        found = collections.Counter(n for piece in pieces for n in typed_numbers(piece))
        if found:
            counts[name] = dict(sorted(found.items()))
    return counts


def test_the_rule_on_examples():
    text = ("Table 3's recipe (Sec. 3.2, Eq. (6), Figures 8–9, 2024) gives 0.813 at $N=10$, 86 % of 1,000 heads and "
            "a TPR of 2.5e-3 at FPR = 0.01; ε rises from 7 to 12. {glue:text}`tl-tpr:.3f` and `0.5` and "
            "[the page](x1.5.md) are pasted or code.\n:label: tl-0.5\n```python\nx = 3.14\n```")
    assert typed_numbers(text) == ["0.813", "86%", "1,000", "2.5e-3"]


def test_no_new_typed_number_in_the_prose():
    baseline = json.loads(BASELINE.read_text())
    now = count_all()
    new = {f: {n: c - baseline.get(f, {}).get(n, 0) for n, c in found.items() if c > baseline.get(f, {}).get(n, 0)}
           for f, found in now.items()}
    new = {f: found for f, found in new.items() if found}
    assert not new, ("typed numbers in the prose (paste them with glue, or take a paper value from the chapter's "
                     f"PAPER_* constants): {new}")
    stale = {f: {n: c - now.get(f, {}).get(n, 0) for n, c in allowed.items() if c > now.get(f, {}).get(n, 0)}
             for f, allowed in baseline.items()}
    stale = {f: found for f, found in stale.items() if found}
    assert not stale, f"the baseline allows numbers the prose no longer types; run {__file__} to shrink it: {stale}"


if __name__ == "__main__":  # shrink (or, with --write, first write) the baseline
    current, old = count_all(), json.loads(BASELINE.read_text()) if BASELINE.exists() else None
    if old is not None and "--write" not in sys.argv:
        current = {f: {n: min(c, old.get(f, {}).get(n, 0)) for n, c in found.items()} for f, found in current.items()}
        current = {f: {n: c for n, c in found.items() if c} for f, found in current.items()}
        current = {f: found for f, found in current.items() if found}
    BASELINE.write_text(json.dumps(current, indent=1, ensure_ascii=False) + "\n")
    print(f"{sum(sum(v.values()) for v in current.values())} typed numbers allowed in {len(current)} files")
