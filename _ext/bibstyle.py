"""Author-year labels for the book's bibliography.

The text cites author and year (sphinxcontrib-bibtex's ``author_year`` reference style),
so the bibliography is labelled the same way, "[Opper and Winther, 2000a]", instead of
with numbers.  pybtex ships only numeric and alphabetic label styles; this small label
style is the whole of what is needed (a package that provides one, pybtex-author-year-
label, has had no release since 2020 and formats the labels differently from the text).
"""

import codecs

import latexcodec  # noqa: F401  (registers the "ulatex" codec; a dependency of pybtex)
from pybtex.plugin import register_plugin
from pybtex.style.formatting.plain import Style as PlainStyle
from pybtex.style.labels import BaseLabelStyle


def _surnames(entry):
    people = entry.persons.get("author") or entry.persons.get("editor") or []
    names = [" ".join(p.prelast_names + p.last_names) for p in people]
    names = [
        codecs.decode(n, "ulatex").replace("{", "").replace("}", "") for n in names
    ]
    if not names:
        return entry.fields.get("key", entry.key)
    if len(names) == 1:
        return names[0]
    if len(names) == 2:
        return f"{names[0]} and {names[1]}"
    return f"{names[0]} et al."


class AuthorYearLabelStyle(BaseLabelStyle):
    """Label each entry "Surname[ and Surname | et al.], year"."""

    def format_labels(self, sorted_entries):
        for entry in sorted_entries:
            yield f"{_surnames(entry)}, {entry.fields.get('year', 'n.d.')}"


class AuthorYearStyle(PlainStyle):
    """pybtex's plain style (entries sorted by author, year, title) with author-year labels."""

    default_label_style = "gpc_author_year"


register_plugin("pybtex.style.labels", "gpc_author_year", AuthorYearLabelStyle)
register_plugin("pybtex.style.formatting", "gpc_author_year", AuthorYearStyle)


def setup(app):
    return {"parallel_read_safe": True, "parallel_write_safe": True}
