"""The API reference (book/api/): the package's docstrings through Sphinx's autodoc.

tools/apidoc.py writes the pages, one autodoc directive per public name; this extension
sets autodoc up for them:

* every docstring of the package goes through ``tools/apidoc.py``'s ``docstring_rst`` before
  napoleon reads its numpydoc sections: the prose is shown as written (stray ``*``, ``|`` and
  trailing ``_`` escaped), the book's equation and section labels it names become links
  (``eq-tap-alpha`` -> (10.3), ``sec-gpc-learning`` -> the section's title), "chapter N" links
  to the chapter, and public names link to their entries. A docstring that would still not
  parse is shown as a literal block (tests/test_api.py fails on it; the book still builds);
* the role ``:eqno:`label``` is ``:eq:`` without the parentheses, for an equation named inside
  parentheses: "(eqs 10.3, 10.4)" rather than "((10.3), (10.4))";
* a class's members are listed in a reader's order: for an estimator, scikit-learn's interface
  first (``fit``, ``predict``, ``predict_proba``, ``decision_function``), then its own methods
  and properties in the order they are defined, then ``score``, ``get_params`` and
  ``set_params``; scikit-learn's metadata-routing methods (``set_fit_request``...) are left out;
* a class's bases leave out the package's private mixins (``_TAPFit``...);
* a name a module re-exports from elsewhere (``gpc_literate.base.NotFittedError`` is
  scikit-learn's) says so instead of repeating the docstring of its home.
"""

from __future__ import annotations

import inspect
import re
import sys
from pathlib import Path

from docutils import nodes
from sphinx.addnodes import pending_xref
from sphinx.ext.autodoc import ClassDocumenter
from sphinx.util import logging

from eqcode import _apidoc  # tools/apidoc.py, loaded once per build (a local extension)

ROOT = Path(__file__).resolve().parents[1]
# the book documents the package of its own tree, whatever else is installed
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

logger = logging.getLogger(__name__)

FIRST = ("fit", "predict", "predict_proba", "decision_function")
LAST = ("score", "get_params", "set_params")
ROUTING = re.compile(r"^(set_\w+_request|get_metadata_routing)$")


def _ours(name: str) -> bool:
    return name == "gpc_literate" or name.startswith("gpc_literate.")


def _home(what: str, name: str, obj) -> str | None:
    """Where a documented name is defined, if it is documented under another module."""
    if what not in ("class", "exception", "function"):
        return None
    home = getattr(obj, "__module__", None)
    module = name.rsplit(".", 1)[0]
    return home if home and home != module else None


def _process_docstring(app, what, name, obj, options, lines):
    if not _ours(name):
        return
    if what == "data" and not _has_doc_comment(name):
        lines[:] = []  # a constant without a doc comment: not its type's docstring
        return
    if (
        (inspect.isroutine(obj) or inspect.isclass(obj))
        and what not in ("class", "exception")
        and not _ours(getattr(obj, "__module__", None) or "")
    ):
        # scikit-learn's methods: their docstrings are rST, but their links to scikit-learn's
        # user guide and glossary have no target here: their text only
        text = re.sub(
            r":(?:ref|term|doc):`([^`<]*?)\s*<[^`>]*>`", r"\1", "\n".join(lines)
        )
        text = re.sub(r":(?:ref|term|doc):`([^`]*)`", r"\1", text)
        lines[:] = text.splitlines()
        return
    home = _home(what, name, obj)
    if home is not None:
        if _ours(home):
            lines[:] = [
                f"Re-exported from :py:mod:`{home}`: see :py:obj:`{home}.{obj.__name__}`.",
                "",
            ]
        else:
            lines[:] = [f"Re-exported from ``{home}`` (``{home}.{obj.__name__}``).", ""]
        return
    module = name if what == "module" else _module_of(name)
    apidoc = _apidoc()
    text = "\n".join(lines)
    rst = apidoc.docstring_rst(text, module)
    problems = apidoc.rst_problems(_napoleon(app, rst, what, name, obj))
    if problems:
        logger.info("apiref: %s: docstring shown as written (%s)", name, problems[0])
        lines[:] = ["::", ""] + ["    " + line for line in lines] + [""]
        return
    lines[:] = rst.splitlines() + [""]


def _has_doc_comment(name: str) -> bool:
    """Whether a module constant has a doc comment (``#:`` or a string after it)."""
    from sphinx.pycode import ModuleAnalyzer

    module, _, attr = name.rpartition(".")
    try:
        return ("", attr) in ModuleAnalyzer.for_module(module).find_attr_docs()
    except Exception:  # noqa: BLE001 - no source
        return False


def _module_of(name: str) -> str:
    """The module of a dotted name: its longest prefix that is a package module."""
    parts = name.split(".")
    for k in range(len(parts) - 1, 0, -1):
        candidate = ".".join(parts[:k])
        if candidate in sys.modules:
            return candidate
    return parts[0]


def _napoleon(app, rst: str, what, name, obj) -> str:
    from sphinx.ext.napoleon.docstring import NumpyDocstring

    return str(NumpyDocstring(rst.splitlines(), app.config, app, what, name, obj))


def _skip_member(app, what, name, obj, skip, options):
    if ROUTING.match(name):
        return True
    doc = getattr(obj, "__doc__", None) or ""
    if isinstance(doc, str) and doc.startswith("Alias for field number"):
        return True  # a NamedTuple's field without a docstring
    return None


def _process_bases(app, name, obj, options, bases):
    """A class's bases without the package's private mixins (``_TAPFit``...)."""
    if _ours(name) and _ours(getattr(obj, "__module__", "")):
        bases[:] = _apidoc().public_bases(obj)


class _ClassDocumenter(ClassDocumenter):
    """autoclass, with a class's members in a reader's order (see the module docstring)."""

    def sort_members(self, documenters, order):
        cls = self.object
        if not (inspect.isclass(cls) and _ours(getattr(cls, "__module__", ""))):
            return super().sort_members(documenters, order)
        position = {}
        for rank, owner in enumerate(cls.__mro__):
            for k, member in enumerate(vars(owner)):
                position.setdefault(member, (rank, k))

        def key(entry):
            member = entry[0].name.split(".")[-1]
            if member in FIRST:
                return (0, FIRST.index(member), 0)
            if member in LAST:
                return (2, LAST.index(member), 0)
            return (1,) + position.get(member, (len(cls.__mro__), 0))

        return sorted(documenters, key=key)


def _eqno_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    """``:eqno:`label```: a link to an equation that shows its number without parentheses."""
    env = inliner.document.settings.env
    ref = pending_xref(
        rawtext,
        refdomain="math",
        reftype="eq",
        reftarget=text.strip(),
        refwarn=True,
        refdoc=env.docname,
        refexplicit=False,
    )
    ref += nodes.literal(rawtext, text.strip())
    return [nodes.inline("", "", ref, classes=["eqnum"])], []


def _strip_eqno(app, doctree, docname):
    for inline in doctree.findall(nodes.inline):
        if "eqnum" not in inline["classes"]:
            continue
        for text in list(inline.findall(nodes.Text)):
            stripped = str(text)
            if stripped.startswith("(") and stripped.endswith(")"):
                text.parent.replace(text, nodes.Text(stripped[1:-1]))


def setup(app):
    app.setup_extension("sphinx.ext.autodoc")
    app.setup_extension("sphinx.ext.napoleon")
    app.add_autodocumenter(_ClassDocumenter, override=True)
    app.add_role("eqno", _eqno_role)
    # before napoleon (priority 500): napoleon reads the numpydoc sections of the result
    app.connect("autodoc-process-docstring", _process_docstring, priority=400)
    app.connect("autodoc-skip-member", _skip_member)
    app.connect("autodoc-process-bases", _process_bases)
    app.connect("doctree-resolved", _strip_eqno)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "env_version": 1}
