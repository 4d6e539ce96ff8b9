"""Numbers in the book's text as a reader writes them: a value pasted by ``{glue:text}`key:.1e```, a check's finding
on the scorecard, a generated table says ``1.6e-16``; the page shows ``1.6 × 10⁻¹⁶``
(:func:`compendium.plotting.written_numbers`, the form :func:`compendium.plotting.sci` gives a result table), and
a negative number ``-0.04`` in a paper's quoted value or a finding shows a minus sign, ``−0.04``.
Code, printed output, math and raw HTML keep their own spelling.

A ``doctree-resolved`` handler (``_config.yml``: ``local_extensions``), so glued values are already in place.
"""
from __future__ import annotations

from docutils import nodes

from compendium.plotting import EXPONENT_NOTATION, HYPHEN_MINUS, written_numbers

#: Where a number is left as it is written: code, output, formulas, raw HTML.
KEPT = (nodes.literal, nodes.literal_block, nodes.math, nodes.math_block, nodes.raw, nodes.comment)


def write_numbers(app, doctree, docname) -> None:
    for text in list(doctree.findall(nodes.Text)):
        if not (EXPONENT_NOTATION.search(text.astext()) or HYPHEN_MINUS.search(text.astext())):
            continue
        parent, kept = text.parent, False
        while parent is not None and not kept:
            kept, parent = isinstance(parent, KEPT), parent.parent
        if not kept:
            text.parent.replace(text, nodes.Text(written_numbers(text.astext())))


def setup(app):
    app.connect("doctree-resolved", write_numbers)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
