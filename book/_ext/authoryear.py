"""The bibliography's labels in the author-year style that the text cites in (``bibtex_reference_style:
author_year``): "Ziller et al., 2024" instead of pybtex's alphanumeric "[ZRS+24]", entries sorted by author and year.

pybtex ships only alphanumeric and numeric labels, so the book registers this small label style as a Sphinx
extension (``_config.yml``: ``local_extensions``, ``bibtex_default_style: authoryear``).
"""
from pybtex.plugin import register_plugin
from pybtex.richtext import Text
from pybtex.style.formatting.unsrt import Style as UnsrtStyle
from pybtex.style.labels import BaseLabelStyle


def _last_name(person) -> str:
    return Text.from_latex(" ".join(person.prelast_names + person.last_names)).render_as("text")


class AuthorYearLabelStyle(BaseLabelStyle):
    """``Last, Year`` for one author, ``Last and Other, Year`` for two, ``Last et al., Year`` for more; labels that
    would repeat get ``a``, ``b``, ... after the year, in the bibliography's order."""

    def format_labels(self, sorted_entries):
        labels = list(self._plain_labels(sorted_entries))
        seen = {}
        for label in labels:
            if labels.count(label) > 1:
                seen[label] = seen.get(label, -1) + 1
                yield label + "abcdefghijklmnopqrstuvwxyz"[seen[label]]
            else:
                yield label

    @staticmethod
    def _plain_labels(sorted_entries):
        for entry in sorted_entries:
            authors = entry.persons.get("author", [])
            if not authors:
                names = entry.key
            elif len(authors) == 1:
                names = _last_name(authors[0])
            elif len(authors) == 2:
                names = f"{_last_name(authors[0])} and {_last_name(authors[1])}"
            else:
                names = f"{_last_name(authors[0])} et al."
            yield f"{names}, {entry.fields.get('year', 'n.d.')}"


class AuthorYearStyle(UnsrtStyle):
    default_label_style = "authoryear"
    default_sorting_style = "author_year_title"


def setup(app):
    register_plugin("pybtex.style.labels", "authoryear", AuthorYearLabelStyle)
    register_plugin("pybtex.style.formatting", "authoryear", AuthorYearStyle)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
