"""Numbered result tables: ``{result-table}``, a caption and a glued table that Sphinx numbers as a table.

A chapter's result tables are computed in its code cells and styled by :func:`compendium.plotting.table` (HTML).
Sphinx numbers only its own ``table`` nodes (a Markdown table inside ``{table}``), so a glued HTML table would stay
unnumbered and could not be cited.  This directive wraps the glued output and its caption in a node registered as
enumerable of type ``table``: it is numbered with the chapter's tables ("Table 4.2") and ``{numref}`` cites it::

    :::{result-table} What the table shows, and which table of the paper it reproduces.
    :name: tl-table-factors

    ```{glue} tl-table-factors
    ```
    :::
"""
from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util.docutils import SphinxDirective


class result_table(nodes.General, nodes.Element):
    """A numbered table: its caption first, then the glued table."""


class ResultTable(SphinxDirective):
    has_content = True
    optional_arguments = 1
    final_argument_whitespace = True
    option_spec = {"name": directives.unchanged}

    def run(self):
        node = result_table()
        self.set_source_info(node)
        text = self.arguments[0] if self.arguments else ""
        parsed, messages = self.state.inline_text(text, self.lineno)
        node += nodes.caption(text, "", *parsed)
        self.state.nested_parse(self.content, self.content_offset, node)
        self.add_name(node)
        return [node, *messages]


def _visit(self, node):
    self.body.append(self.starttag(node, "div", CLASS="result-table"))


def _depart(self, node):
    self.body.append("</div>\n")


def setup(app):
    app.add_enumerable_node(result_table, "table", lambda node: node[0].astext(), html=(_visit, _depart))
    app.add_directive("result-table", ResultTable)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
