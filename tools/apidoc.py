"""Write the book's API reference, the pages under book/api/, from the package's modules.

    python tools/apidoc.py           write book/api/*.md and the API section of _toc.yml
    python tools/apidoc.py --check   fail (exit 1) if they are not what this would write

The pages are read by Sphinx's autodoc (with napoleon for the numpydoc sections of the
docstrings), so the documentation itself comes from the docstrings when the book is built.
What this tool writes is the frame: one page per module built by a chapter (the registry of
tools/tangle.py, in reading order), holding a summary table and one autodoc directive for
every name in the module's ``__all__`` (estimators first, then classes, functions, exceptions
and constants), each preceded by the label ``api-<module>-<name>`` that the code lines under
the chapters' equations (_ext/eqcode.py) link to; and an index page, book/api/index.md, with
the user-facing names of ``gpc_literate.__all__`` and the modules by part of the book.

Most docstrings of the package are prose written beside the chapters' derivations: ``|d
tau|``, ``y * alpha_`` and ``eq-...`` labels in running text, which reStructuredText would
read as markup. ``docstring_rst`` turns such a docstring into reStructuredText that shows it
as written: it keeps the ``literal`` spans, roles and ``*emphasis*``, escapes every other
markup character, and turns the book's labels into links: an equation label (``eq-...``)
into its number, a section label (``sec-...``) into its title, "chapter N" into a link to
the chapter, and the package's public names into links to their entries. _ext/apiref.py
applies it to every docstring autodoc reads (and, if a docstring still would not parse,
shows that one as a literal block rather than fail the book's build).
"""

from __future__ import annotations

import argparse
import functools
import importlib
import inspect
import io
import re
import sys
import unicodedata
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT))

import tangle  # noqa: E402

OUT = ROOT / "book" / "api"
TOC = ROOT / "_toc.yml"
TOC_BEGIN = "        # BEGIN API pages: written by tools/apidoc.py (make export)\n"
TOC_END = "        # END API pages\n"
EQ = re.compile(r"\beq-[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*")
# a constant whose repr is longer than this shows a summary of its value ({...} (6 entries))
VALUE_WIDTH = 60


# ---------------------------------------------------------------------------------------------
# The book's labels
# ---------------------------------------------------------------------------------------------

LABEL = re.compile(r"^[ \t]*\$\$\s*\((eq-[A-Za-z0-9-]+)\)\s*$", re.M)
TARGET = re.compile(r"^\(([A-Za-z][\w-]*)\)=[ \t]*\n+(#+)[ \t]+(.+)$", re.M)


def chapter_labels(chapter: Path) -> set[str]:
    """Equation labels a chapter defines: the ``(eq-...)`` after a display's closing $$
    (indented when the display sits in a list item)."""
    return set(LABEL.findall(chapter.read_text()))


def _label_order(root: Path = ROOT) -> list[str]:
    """Every equation label in the order the chapters define them."""
    return [
        label
        for chapter in sorted((root / "book").glob("*.md"))
        for label in LABEL.findall(chapter.read_text())
    ]


def book_labels(root: Path = ROOT) -> set[str]:
    """Equation labels defined in the chapters."""
    return set(_label_order(root))


def section_labels(root: Path = ROOT) -> dict[str, str]:
    """Labels of the chapters' headings (``(sec-...)=`` before a ``#`` line): label -> title."""
    return {
        label: title.strip()
        for chapter in sorted((root / "book").glob("*.md"))
        for label, _, title in TARGET.findall(chapter.read_text())
    }


def chapter_docs(root: Path = ROOT) -> dict[int, str]:
    """Chapter number -> its page (``book/13_ep``): the file ``book/NN_*.md`` a registry entry
    names, or else the first of that number."""
    docs: dict[int, str] = {}
    registered = {Path(c).stem for c in tangle.registry(root)}
    for chapter in sorted((root / "book").glob("[0-9][0-9]_*.md")):
        number = int(chapter.name[:2])
        if number not in docs or chapter.stem in registered:
            docs[number] = f"book/{chapter.stem}"
    return docs


# ---------------------------------------------------------------------------------------------
# The package's public names
# ---------------------------------------------------------------------------------------------


def modules(root: Path = ROOT) -> list[tuple[str, str]]:
    """``(chapter stem, module name)`` of every module built by a chapter, in reading order."""
    return [
        (Path(chapter).stem, Path(path).with_suffix("").as_posix().replace("/", "."))
        for chapter, path in tangle.registry(root).items()
    ]


def short(module_name: str) -> str:
    return module_name.rsplit(".", 1)[-1]


def api_label(module_name: str, name: str) -> str:
    """The label of a public name's entry on its API page, e.g. ``api-tap-tap_equations``."""
    return f"api-{short(module_name)}-{name}".lower()


@functools.cache
def public_names(root: Path = ROOT) -> dict[str, list[str]]:
    """Public name -> the dotted paths under which the API pages document it: every name of a
    module's ``__all__``, module by module in reading order."""
    index: dict[str, list[str]] = {}
    for _, module_name in modules(root):
        module = importlib.import_module(module_name)
        for name in getattr(module, "__all__", []):
            index.setdefault(name, []).append(f"{module_name}.{name}")
    return index


def _defined_here(obj, module_name: str) -> bool:
    return getattr(obj, "__module__", module_name) == module_name


def is_estimator(obj) -> bool:
    try:
        from sklearn.base import BaseEstimator
    except ImportError:  # pragma: no cover
        return False
    return inspect.isclass(obj) and issubclass(obj, BaseEstimator)


def kind(obj) -> str:
    """The group a public name is listed under on its module's page."""
    if inspect.isclass(obj):
        if issubclass(obj, BaseException):
            return "Exceptions and warnings"
        return "Estimators" if is_estimator(obj) else "Classes"
    if inspect.isroutine(obj):
        return "Functions"
    return "Constants"


GROUPS = ("Estimators", "Classes", "Functions", "Exceptions and warnings", "Constants")


# ---------------------------------------------------------------------------------------------
# Docstrings as reStructuredText
# ---------------------------------------------------------------------------------------------


class _Book(NamedTuple):
    """What docstring_rst links to: the book's labels and chapters, the package's names."""

    equations: frozenset
    order: tuple
    sections: dict
    chapters: dict
    names: dict


@functools.cache
def _book(root: Path = ROOT) -> _Book:
    order = _label_order(root)
    return _Book(
        frozenset(order),
        tuple(order),
        section_labels(root),
        chapter_docs(root),
        public_names(root),
    )


# spans kept as written: ``literal``, :role:`text`, *emphasis* and **strong** whose start and
# end rST reads as markup (a lone * in a formula such as y * alpha_ is escaped instead)
_KEEP = re.compile(
    r"(?m:^(?P<field>[A-Za-z_*][\w*]*(?:, *[A-Za-z_*][\w*]*)*)(?= : ))"
    r"|``[^`\n]+(?:\n[^`\n]+)*?``"
    r"|:[A-Za-z][\w:+.-]*:`[^`]+`"
    r"|(?<![\w*\\])\*\*?(?=[A-Za-z(\"])[^*\n]*?[A-Za-z.)\"]\*\*?(?![\w*])"
)
_RANGE = re.compile(
    r"\(?\b(eq-[A-Za-z0-9-]+?)\)?\s*(?:-|–|to)\s*\(?(eq-[A-Za-z0-9-]+)\b\)?"
)
_PAREN_EQ = re.compile(r"\((eq-[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*)\)")
_BARE_EQ = re.compile(r"(?<![\w-])(eq-[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*)")
_SECTION = re.compile(r"(?<![\w-])((?:sec|ch|app)-[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*)")
_CHAPTER = re.compile(r"\b([Cc]hapter) (\d{1,2})\b(?![.\d])")
_MODULE = re.compile(r"(?<![\w.])(gpc_literate(?:\.[a-z_]+)?)(?![\w])")
_SNAKE = re.compile(r"(?<![\w.])([a-z][a-z0-9]*(?:_[a-z0-9]+)+)(?!\w)")
# a class name with two capitals or more (SitePosterior, BiasedEP; not "Gaussian" or "EP")
_CAMEL = re.compile(r"(?<![\w.])([A-Z][a-z0-9]*[A-Z][A-Za-z0-9]*)(?!\w)")
_CODE_NAME = re.compile(r"``([A-Za-z_][\w.]*?)(\(\))?``")
_ESCAPE = re.compile(r"([\\*|`_])")


def _latex_free(title: str) -> str:
    """A heading's text without $...$ and backquotes, for a link's text."""
    title = re.sub(
        r"\$([^$]*)\$",
        lambda m: re.sub(r"\\(?:boldsymbol|mathbf|mathrm|bm)", "", m.group(1)).replace(
            "\\", ""
        ),
        title,
    )
    return title.replace("`", "")


def _target(name: str, module: str | None, book: _Book) -> str | None:
    """The documented dotted path of a public name, or None if it has none or several."""
    if name.startswith("gpc_literate"):
        return None
    paths = book.names.get(name)
    if not paths:
        return None
    if module is not None and f"{module}.{name}" in paths:
        return f"{module}.{name}"
    if len(paths) == 1:
        return paths[0]
    return None


def _link_code(match: re.Match, module: str | None, book: _Book) -> str:
    """``name`` or ``name()`` of a public name -> a link to its entry, shown as code."""
    name, call = match.group(1), match.group(2) or ""
    if (
        name in {f"gpc_literate.{m}" for m in _modules_short(book)}
        or name == "gpc_literate"
    ):
        return f":py:mod:`{name}`"
    target = _target(name, module, book)
    if target is None:
        return match.group(0)
    return f":py:obj:`{name}{call} <{target}>`"


def _modules_short(book: _Book) -> set[str]:
    return {p.split(".")[1] for paths in book.names.values() for p in paths}


def _role(text: str, before: str, after: str) -> str:
    """A role inserted into prose, with escaped spaces where the characters around it would
    hide it: rST reads inline markup only after whitespace or an opening punctuation mark and
    before whitespace or a closing one."""
    if before and not (
        before.isspace()
        or before in "-:/'\"<([{"
        or unicodedata.category(before) in ("Pd", "Ps", "Pi", "Pf", "Po")
    ):
        text = "\\ " + text
    if after and not (
        after.isspace()
        or after in "-.,:;!?\\/'\")]}>"
        or unicodedata.category(after) in ("Pd", "Pe", "Pi", "Pf", "Po")
    ):
        text = text + "\\ "
    return text


def _prose(
    text: str, depth: int, module: str | None, book: _Book, listing: bool = False
) -> tuple[str, int]:
    """Unprotected prose: the book's labels and public names as links, every other markup
    character escaped. ``depth``: parentheses open before this text (an equation inside
    parentheses shows its number without its own, "(see 10.2)" not "(see (10.2))")."""
    roles: list[str] = []

    def hold(role: str) -> str:
        roles.append(role)
        return f"\x00{len(roles) - 1}\x00"

    def eq_range(m):
        first, last = m.groups()
        if first in book.equations and last in book.equations:
            return hold(f":eq:`{first}`–:eq:`{last}`")
        return m.group(0)

    text = _RANGE.sub(eq_range, text)
    text = _PAREN_EQ.sub(
        lambda m: (
            hold(f":eq:`{m.group(1)}`") if m.group(1) in book.equations else m.group(0)
        ),
        text,
    )

    # bare labels: with parentheses of their own unless already inside parentheses
    out, pos = [], 0
    for m in _BARE_EQ.finditer(text):
        segment = text[pos : m.start()]
        depth += segment.count("(") - segment.count(")")
        label = m.group(1)
        out.append(segment)
        if label in book.equations:
            out.append(hold(f":eqno:`{label}`" if depth > 0 else f":eq:`{label}`"))
        else:
            out.append(label)
        pos = m.end()
    segment = text[pos:]
    depth += segment.count("(") - segment.count(")")
    text = "".join(out) + segment

    def section(m):
        label = m.group(1)
        if label not in book.sections:
            return label
        title = book.sections[label]
        plain = _latex_free(title)
        return hold(
            f":ref:`{label}`"
            if plain == title
            else f":ref:`{_escape(plain)} <{label}>`"
        )

    text = _SECTION.sub(section, text)

    def chapter(m):
        word, number = m.group(1), int(m.group(2))
        doc = book.chapters.get(number)
        return hold(f":doc:`{word} {number} </{doc}>`") if doc else m.group(0)

    text = _CHAPTER.sub(chapter, text)

    def module_name(m):
        name = m.group(1)
        if name == "gpc_literate" or name.split(".")[1] in _modules_short(book):
            return hold(f":py:mod:`{name}`")
        return name

    text = _MODULE.sub(module_name, text)

    def snake(m):
        target = _target(m.group(1), module, book)
        return hold(f":py:obj:`{m.group(1)} <{target}>`") if target else m.group(1)

    text = _SNAKE.sub(snake, text)

    def camel(m):
        name = m.group(1)
        if not re.search("[a-z]", name):
            return name
        target = _target(name, module, book)
        return hold(f":py:obj:`{name} <{target}>`") if target else name

    text = _CAMEL.sub(camel, text)
    text = _escape(text)
    # a line that would start a list (unless the paragraph is one), a comment or a directive
    start = r"\.\." if listing else r"\.\.|[-+](?= )|#\.|\d+[.)](?= )|\(\d+\)(?= )"
    text = re.sub(rf"(?m)^(\s*)({start})", r"\1\\\2", text)

    def put(m):
        k = int(m.group(1))
        start, end = m.start(), m.end()
        before = text[start - 1] if start else ""
        after = text[end] if end < len(text) else ""
        return _role(roles[k], before, after)

    return re.sub("\x00(\\d+)\x00", put, text), depth


_FIELD_SECTION = re.compile(
    r"(?m)^(?:Parameters|Other Parameters|Returns|Yields|Receives|Raises|Warns|Attributes|"
    r"Keyword Arguments)\n-{3,}[ \t]*$"
)
_FIELD_LINE = re.compile(
    r"[A-Za-z_*][\w*]*(?:, *[A-Za-z_*][\w*]*)*(?: : |[ \t]*(?:\n|$))"
)
_UNINDENT = re.compile(r"(?m)^([ \t]+\S.*\n)(?=(\S))")
_FORMULA = re.compile(r"[^\s`][^\n`]* = [^\n`]*[^.\s`]$")
_MARKER = re.compile(r"^([ \t]*)([-*+]|\d+\.|#\.) +")


def _is_list(paragraph: str) -> bool:
    """Whether a paragraph is a well-formed reStructuredText list: each line an item's first
    line, or indented under the item's text."""
    lines = paragraph.strip("\n").splitlines()
    first = _MARKER.match(lines[0])
    if not first:
        return False
    indent = len(first.group(1))
    width = len(first.group(0)) - indent
    for line in lines[1:]:
        marker = _MARKER.match(line)
        if marker and len(marker.group(1)) == indent:
            continue
        if len(line) - len(line.lstrip()) < indent + width:
            return False
    return True


def _escape(text: str) -> str:
    return _ESCAPE.sub(r"\\\1", text)


def docstring_rst(doc: str, module: str | None = None, root: Path = ROOT) -> str:
    """A docstring as reStructuredText that shows it as written, with links (see the module's
    docstring). ``module``: the module whose names a bare name means first."""
    book = _book(root)
    paragraphs = re.split(r"(\n[ \t]*\n)", doc)
    out = []
    literal_indent = None  # inside a literal block after "::": its paragraph's indent
    fields = False  # inside a numpydoc section of "name : type" entries
    for paragraph in paragraphs:
        if not paragraph.strip():
            out.append(paragraph)
            continue
        indent = len(paragraph) - len(paragraph.lstrip(" "))
        if _FIELD_SECTION.search(paragraph):
            fields = True
        elif fields and indent == 0 and not _FIELD_LINE.match(paragraph):
            # prose after the entries: napoleon ends a section at two blank lines
            fields = False
            out.append("\n")
        if not fields and not _is_list(paragraph):
            # a line indented less than the one before ends a definition list or a block
            # quote: rST wants a blank line there
            paragraph = _UNINDENT.sub(r"\1\n", paragraph)
        if literal_indent is not None and indent > literal_indent:
            out.append(paragraph)
            continue
        literal_indent = None
        if paragraph.lstrip().startswith(">>>"):
            out.append(paragraph)
            continue
        if _FORMULA.match(paragraph) and out and not fields:
            out.append(f"``{paragraph}``")  # a formula on a line of its own: as code
            continue
        listing = _is_list(paragraph)
        pieces, pos, depth = [], 0, 0
        for m in _KEEP.finditer(paragraph):
            prose, depth = _prose(
                paragraph[pos : m.start()], depth, module, book, listing
            )
            pieces.append(prose)
            kept = m.group(0)
            if m.group("field"):  # a numpydoc "name : type" line's names
                kept = _escape(kept)
            elif kept.startswith("``"):
                kept = _CODE_NAME.sub(lambda c: _link_code(c, module, book), kept)
            pieces.append(kept)
            pos = m.end()
        prose, depth = _prose(paragraph[pos:], depth, module, book, listing)
        pieces.append(prose)
        text = "".join(pieces)
        if re.search(r"(?<!:)::\s*$", paragraph) or paragraph.rstrip().endswith("::"):
            literal_indent = indent
            text = re.sub(r"\\?:\\?:\s*$", "::", text)
        out.append(text)
    return "".join(out)


def rst_problems(rst: str) -> list[str]:
    """Warnings docutils gives on a docstring as reStructuredText (after napoleon).

    Only the structure is checked: every role reads as a literal and every directive as a
    container of its content, through lookups swapped in for the parse and swapped back
    after (inside a Sphinx build, Sphinx's own lookups are the ones restored)."""
    from docutils.core import publish_doctree
    from docutils.parsers.rst import directives, roles

    saved = roles.role, directives.directive
    roles.role = lambda name, language, lineno, reporter: (_literal_role, [])
    directives.directive = lambda name, language, document: (_container_directive(), [])
    stream = io.StringIO()
    try:
        publish_doctree(
            rst,
            settings_overrides={
                "report_level": 2,
                "halt_level": 5,
                "warning_stream": stream,
                "file_insertion_enabled": False,
                "raw_enabled": False,
            },
        )
    finally:
        roles.role, directives.directive = saved
    return [line for line in stream.getvalue().splitlines() if line.strip()]


def _literal_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    from docutils import nodes

    return [nodes.literal(rawtext, text)], []


@functools.cache
def _container_directive():
    from docutils import nodes
    from docutils.parsers.rst import Directive, directives

    class Options(dict):
        def __getitem__(self, key):
            return directives.unchanged

        def __contains__(self, key):
            return True

    class Container(Directive):
        has_content = True
        optional_arguments = 1
        final_argument_whitespace = True
        option_spec = Options()

        def run(self):
            node = nodes.container()
            self.state.nested_parse(self.content, self.content_offset, node)
            return [node]

    return Container


def _first_sentence(doc: str) -> str:
    """A docstring's summary line: its first paragraph up to the first full stop that ends a
    sentence (not "Eq." or "e.g.")."""
    paragraph = (
        re.split(r"\n[ \t]*\n", doc.strip(), maxsplit=1)[0] if doc.strip() else ""
    )
    paragraph = " ".join(paragraph.split())
    for m in re.finditer(r"\.(?=\s|$)", paragraph):
        before = paragraph[: m.start()]
        if re.search(r"(?:\b(?:[Ee]qs?|e\.g|i\.e|et al|cf|vs|resp|[A-Z])|\d)$", before):
            continue
        if paragraph.count("``", 0, m.start()) % 2 or before.count("(") > before.count(
            ")"
        ):
            continue
        return paragraph[: m.end()]
    return paragraph


def summary(obj, module: str | None, root: Path = ROOT) -> str:
    """The summary of a public name for a table: its docstring's first sentence, as rST."""
    if not (inspect.isclass(obj) or inspect.isroutine(obj)):
        return ""
    return docstring_rst(_first_sentence(inspect.getdoc(obj) or ""), module, root)


# ---------------------------------------------------------------------------------------------
# The pages
# ---------------------------------------------------------------------------------------------


def _value(obj) -> str:
    if hasattr(obj, "item") and getattr(obj, "shape", None) == ():
        obj = obj.item()  # a numpy scalar, as the number it is
    text = repr(obj)
    if len(text) > VALUE_WIDTH:
        if isinstance(obj, dict):
            text = f"{{...}} ({len(obj)} entries)"
        elif isinstance(obj, (tuple, list)):
            text = f"{type(obj).__name__} of {len(obj)}"
        else:
            text = type(obj).__name__
    return text


def _inherited(obj) -> str | None:
    """The ``:inherited-members:`` option of a class: an estimator lists every method it
    inherits (its own base classes' ``fit``, ``predict``..., scikit-learn's ``score``,
    ``get_params``, ``set_params``); any other class the methods of its private mixins, up to
    its first public base class (whose own entry lists them)."""
    if is_estimator(obj):
        return ""
    for base in obj.__mro__[1:]:
        if not _private(base):
            break
    if base is obj.__mro__[1]:
        return None  # no private mixin: its own members only
    return base.__name__ if base is not object else ""


def _private(cls) -> bool:
    return cls.__name__.startswith("_") and cls.__module__.startswith("gpc_literate")


def public_bases(cls) -> list:
    """The base classes a class's entry names: its bases without the package's private mixins
    (or, if it has only those, the first public class they lead to), without object and
    tuple (a named tuple's)."""

    def shown(base):
        return not _private(base) and base not in (object, tuple)

    bases = [base for base in cls.__bases__ if shown(base)]
    if not bases and any(_private(base) for base in cls.__bases__):
        bases = [base for base in cls.__mro__[1:] if shown(base)][:1]
    return bases


def _directive(module_name: str, name: str, obj) -> str:
    path = f"{module_name}.{name}"
    foreign = (inspect.isclass(obj) or inspect.isroutine(obj)) and not _defined_here(
        obj, module_name
    )
    if inspect.isclass(obj):
        directive = "autoexception" if issubclass(obj, BaseException) else "autoclass"
        lines = [f".. {directive}:: {path}"]
        if not foreign:
            lines.append("   :members:")
            inherited = _inherited(obj)
            if inherited is not None:
                lines.append(f"   :inherited-members: {inherited}".rstrip())
        if public_bases(obj):
            lines.append("   :show-inheritance:")
    elif inspect.isroutine(obj):
        lines = [f".. autofunction:: {path}"]
    else:
        lines = [f".. autodata:: {path}", f"   :annotation: = {_value(obj)}"]
        comment = constant_comment(module_name, name)
        if comment:
            lines += [""] + [
                "   " + line if line else ""
                for line in docstring_rst(comment, module_name).splitlines()
            ]
    return "\n".join(lines)


def constant_comment(module_name: str, name: str) -> str:
    """What the source says of a module constant: the comment lines right above its
    assignment and the comment at the end of the assignment's line, as one paragraph."""
    source = inspect.getsource(importlib.import_module(module_name)).splitlines()
    for k, line in enumerate(source):
        if re.match(rf"{re.escape(name)}\s*(?::[^=]*)?=", line):
            above = []
            for previous in reversed(source[:k]):
                if not previous.startswith("#") or previous.startswith("# %%"):
                    break
                above.insert(0, previous.lstrip("#").strip())
            trailing = re.search(r"#\s*(.*)$", line) if "#" in line else None
            if trailing and _outside_strings(line, trailing.start()):
                above.append(trailing.group(1).strip())
            return " ".join(part for part in above if part)
    return ""


def _outside_strings(line: str, position: int) -> bool:
    """Whether a character of a line of Python is outside its string literals."""
    quote = None
    for ch in line[:position]:
        if quote is None and ch in "'\"":
            quote = ch
        elif ch == quote:
            quote = None
    return quote is None


def _table(
    rows: list[tuple[str, ...]], widths: str, header: tuple[str, ...] = ()
) -> str:
    lines = (
        [".. list-table::"]
        + (["   :header-rows: 1"] if header else [])
        + [f"   :widths: {widths}", "   :class: api-summary", ""]
    )
    for row in ([header] if header else []) + rows:
        first, *rest = row
        lines.append(f"   * - {first}")
        for cell in rest:
            cell_lines = (cell or "\\ ").splitlines()
            lines.append(f"     - {cell_lines[0]}")
            lines += [
                f"       {line}" if line.strip() else "" for line in cell_lines[1:]
            ]
    return "\n".join(lines)


def _eval_rst(body: str) -> str:
    return f"```{{eval-rst}}\n{body}\n```\n"


def module_page(chapter: str, module_name: str, root: Path = ROOT) -> str:
    module = importlib.import_module(module_name)
    names = list(getattr(module, "__all__", []))
    number = int(chapter[:2])
    groups: dict[str, list[str]] = {g: [] for g in GROUPS}
    for name in names:
        groups[kind(getattr(module, name))].append(name)
    parts = [
        f"(api-{short(module_name)})=\n# {module_name}\n\n",
        f"Derived and built in chapter {number}, {{doc}}`/book/{chapter}`.\n\n",
        _eval_rst(f".. automodule:: {module_name}\n   :no-members:"),
        "\nIts public names, in the order of the entries below:\n\n",
    ]
    rows = []
    for group in GROUPS:
        for name in groups[group]:
            obj = getattr(module, name)
            role = "py:data" if group == "Constants" else "py:obj"
            if group == "Constants":
                comment = constant_comment(module_name, name)
                text = (
                    docstring_rst(_first_sentence(comment), module_name, root)
                    if comment
                    else f"``{_value(obj)}``"
                )
            else:
                text = summary(obj, module_name, root)
            rows.append((f":{role}:`~{module_name}.{name}`", text))
    parts.append(_eval_rst(_table(rows, "30 70")))
    for group in GROUPS:
        if not groups[group]:
            continue
        parts.append(f"\n## {group}\n")
        for name in groups[group]:
            parts.append(f"\n({api_label(module_name, name)})=\n")
            parts.append(
                _eval_rst(_directive(module_name, name, getattr(module, name)))
            )
    return "".join(parts)


# the user-facing names (gpc_literate.__all__) on the index page, by topic: a name goes under
# the first group whose test it passes
def _topics():
    import gpc_literate
    from gpc_literate.base import GPClassifierBase
    from gpc_literate.likelihoods import Likelihood

    def sub(cls):
        return lambda o, m: inspect.isclass(o) and issubclass(o, cls) and o is not cls

    return gpc_literate, [
        (
            "Classifiers",
            (
                "scikit-learn estimators (chapter 1's interface, "
                "{ref}`sec-gpc-api`); those with an ``optimizer`` learn their kernel "
                "in ``fit`` ({ref}`sec-gpc-learning`)."
            ),
            sub(GPClassifierBase),
        ),
        ("Covariance functions", "", lambda o, m: m == "kernels"),
        ("Likelihoods", "", lambda o, m: m == "likelihoods" or sub(Likelihood)(o, m)),
        ("Data sets", "", lambda o, m: m == "datasets"),
        (
            "Leave-one-out and model selection",
            "",
            lambda o, m: m in ("loo", "selection"),
        ),
        (
            "Sampling: the gold standard",
            "",
            lambda o, m: m in ("mcmc", "gold", "gold_multiclass"),
        ),
        ("The base class, warnings and errors", "", lambda o, m: m == "base"),
        ("Other", "", lambda o, m: True),
    ]


def index_page(root: Path = ROOT) -> str:
    gpc_literate, topics = _topics()
    order = {m: k for k, (_, m) in enumerate(modules(root))}
    chapter_of = {m: c for c, m in modules(root)}
    placed: dict[str, list[tuple[str, str]]] = {title: [] for title, _, _ in topics}

    def reading_order(item):
        name, mod = item
        module = importlib.import_module(f"gpc_literate.{mod}")
        return order[module.__name__], module.__all__.index(name)

    public = sorted(gpc_literate._PUBLIC.items(), key=reading_order)
    for name, mod in public:
        obj = getattr(importlib.import_module(f"gpc_literate.{mod}"), name)
        for title, _, test in topics:
            if test(obj, mod):
                placed[title].append((name, mod))
                break
    parts = [
        "(app-api)=\n# API reference\n\n",
        (
            "The package's public names, one page per module in the order of the chapters "
            "that build them. Each page opens with a table of the module's names and then "
            "documents each one: its signature, its docstring (with links to the equations "
            "and sections of the book it names) and, for a class, its methods, including "
            "those it inherits. The names below are the user-facing ones, importable from the "
            "package itself (`from gpc_literate import EP`); every page is generated from the "
            "docstrings by `tools/apidoc.py`, which `make export` runs.\n"
        ),
    ]
    for title, intro, _ in topics:
        if not placed[title]:
            continue
        parts.append(f"\n## {title}\n\n")
        if intro:
            parts.append(intro + "\n\n")
        rows = []
        for name, mod in placed[title]:
            module_name = f"gpc_literate.{mod}"
            obj = getattr(importlib.import_module(module_name), name)
            if not _defined_here(obj, module_name):
                text = f"Re-exported from ``{obj.__module__}``."
            else:
                text = summary(obj, module_name, root)
            chapter = chapter_of[module_name]
            rows.append(
                (
                    f":py:obj:`~{module_name}.{name}`",
                    text,
                    f":doc:`{int(chapter[:2])} </book/{chapter}>`",
                )
            )
        parts.append(
            _eval_rst(_table(rows, "25 65 10", header=("Name", "Summary", "Chapter")))
        )
    parts.append(
        "\n## Modules\n\nEvery module the chapters build, by part of the book.\n"
    )
    for caption, chapters in _parts(root):
        rows = []
        for chapter, module_name in modules(root):
            if chapter not in chapters:
                continue
            module = importlib.import_module(module_name)
            rows.append(
                (
                    f":doc:`{module_name} <{short(module_name)}>`",
                    docstring_rst(
                        _first_sentence(module.__doc__ or ""), module_name, root
                    ),
                    f":doc:`{int(chapter[:2])} </book/{chapter}>`",
                )
            )
        if rows:
            parts.append(f"\n### {caption}\n\n")
            parts.append(_eval_rst(_table(rows, "25 65 10")))
    return "".join(parts)


def _parts(root: Path = ROOT) -> list[tuple[str, set[str]]]:
    """The parts of the book (_toc.yml): caption and the stems of their chapters."""
    import yaml

    toc = yaml.safe_load((root / "_toc.yml").read_text())
    out = []

    def stems(entries):
        for entry in entries or []:
            yield Path(entry["file"]).stem
            yield from stems(entry.get("sections"))

    for part in toc.get("parts", []):
        out.append((part.get("caption", ""), set(stems(part.get("chapters")))))
    return out


def render(root: Path = ROOT) -> dict[Path, str]:
    """Every API page: path -> text."""
    pages = {root / "book" / "api" / "index.md": index_page(root)}
    for chapter, module_name in modules(root):
        pages[root / "book" / "api" / f"{short(module_name)}.md"] = module_page(
            chapter, module_name, root
        )
    return pages


def toc_text(root: Path = ROOT) -> str:
    """_toc.yml with the API pages listed between its BEGIN and END lines."""
    text = (root / "_toc.yml").read_text()
    begin, end = text.index(TOC_BEGIN), text.index(TOC_END)
    entries = "".join(
        f"          - file: book/api/{short(m)}\n" for _, m in modules(root)
    )
    return text[: begin + len(TOC_BEGIN)] + entries + text[end:]


# ---------------------------------------------------------------------------------------------
# Equation -> code (for _ext/eqcode.py)
# ---------------------------------------------------------------------------------------------

RANGE = re.compile(r"\(?(eq-[A-Za-z0-9-]+?)\)?\s*[-–]\s*\(?(eq-[A-Za-z0-9-]+)\)?")


def _named_labels(text: str, order: list[str]) -> list[str]:
    """The labels a docstring names, a range "(eq-a)-(eq-b)" standing for every equation from a
    to b in the book's order."""
    found = []
    for match in RANGE.finditer(text):
        first, last = match.groups()
        if first in order and last in order and order.index(first) < order.index(last):
            found += order[order.index(first) : order.index(last) + 1]
    found += EQ.findall(text)
    return list(dict.fromkeys(found))


def _implementers(module, module_name: str, order: list[str]):
    """Yield ``(label, shown name, API label or None)`` for every object of ``module`` (public or
    private, methods included) whose docstring names an equation label.

    Methods are shown under the public class that offers them, including the methods a class
    takes from its private same-module mixins; private module-level functions and classes have
    no API entry (None).
    """
    public = list(getattr(module, "__all__", []))
    owners = {}
    for name in public:
        obj = getattr(module, name)
        if inspect.isclass(obj):
            for base in [obj] + [
                b
                for b in obj.__mro__[1:]
                if b.__name__.startswith("_") and b.__module__ == module_name
            ]:
                owners.setdefault(base, name)
    for name, obj in vars(module).items():
        if getattr(obj, "__module__", None) != module_name:
            continue
        if not (inspect.isclass(obj) or inspect.isfunction(obj)):
            continue
        shown = owners.get(obj, name) if inspect.isclass(obj) else name
        target = api_label(module_name, shown) if shown in public else None
        for label in _named_labels(inspect.getdoc(obj) or "", order):
            yield label, shown, target
        if not inspect.isclass(obj):
            continue
        for mname, member in vars(obj).items():
            member = member.fget if isinstance(member, property) else member
            member = getattr(member, "__func__", member)
            if inspect.isfunction(member):
                for label in _named_labels(inspect.getdoc(member) or "", order):
                    yield label, f"{shown}.{mname}", target


def equation_code(root: Path = ROOT) -> dict[str, list[tuple[str, str | None, str]]]:
    """For each equation label the book defines: the code whose docstrings name it.

    Each entry is ``(shown name, API label or None, chapter that builds it)``, public names
    first, in reading order; ``_ext/eqcode.py`` writes them under the equation.
    """
    order = _label_order(root)
    labels = set(order)
    found: dict[str, list[tuple[str, str | None, str]]] = {}
    for chapter, module_name in modules(root):
        module = importlib.import_module(module_name)
        for label, shown, target in _implementers(module, module_name, order):
            entry = (shown, target, chapter)
            if label in labels and entry not in found.setdefault(label, []):
                found[label].append(entry)
    for label, entries in found.items():

        def private(entry):
            return any(part.startswith("_") for part in entry[0].split("."))

        if not all(map(private, entries)):  # private helpers only when nothing else
            entries = [e for e in entries if not private(e)]
        owners = {
            e[0] for e in entries if "." not in e[0]
        }  # a class, not also its methods
        found[label] = [
            e for e in entries if e[0].split(".")[0] not in owners or "." not in e[0]
        ]
    return found


# ---------------------------------------------------------------------------------------------


def stale(root: Path = ROOT) -> list[str]:
    """What differs from what this tool writes: pages, leftover pages, _toc.yml."""
    problems = []
    pages = render(root)
    for path, text in pages.items():
        if not path.exists() or path.read_text() != text:
            problems.append(f"{path.relative_to(root)} is out of date")
    for path in sorted((root / "book" / "api").glob("*.md")):
        if path not in pages:
            problems.append(f"{path.relative_to(root)} documents no module: remove it")
    if (root / "book" / "api.md").exists():
        problems.append("book/api.md is replaced by book/api/: remove it")
    if toc_text(root) != (root / "_toc.yml").read_text():
        problems.append("_toc.yml does not list the API pages")
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check",
        action="store_true",
        help="fail if the API pages differ from what would be written",
    )
    args = parser.parse_args(argv)
    if args.check:
        problems = stale(ROOT)
        for line in problems:
            print(line)
        if problems:
            print("run `python tools/apidoc.py` (make export does)")
        return 1 if problems else 0
    OUT.mkdir(exist_ok=True)
    pages = render(ROOT)
    for path, text in pages.items():
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            print(f"wrote {path.relative_to(ROOT)}")
    for path in sorted(OUT.glob("*.md")):
        if path not in pages:
            path.unlink()
            print(f"removed {path.relative_to(ROOT)}")
    toc = toc_text(ROOT)
    if toc != TOC.read_text():
        TOC.write_text(toc)
        print("wrote _toc.yml")
    return 0


if __name__ == "__main__":
    sys.exit(main())
