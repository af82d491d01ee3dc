"""Write the book's API reference, book/api.md, from the package's docstrings.

    python tools/apidoc.py           write book/api.md
    python tools/apidoc.py --check   fail (exit 1) if book/api.md is not what this would write

For every module built by a chapter (the registry of tools/tangle.py, in reading order) and
every name in its ``__all__``: the signature, links to the chapter that builds it and to each
equation its docstring names (``eq-...`` labels that exist in the book) and the docstring
itself, shown as written. Classes also list the public methods they define.

Why a generator of our own rather than Sphinx's autodoc: most docstrings of the package are
plain text written beside the chapters' derivations (``|d tau|``, ``*`` and ``eq-...`` labels
in running text), which reStructuredText would parse as markup and the book's build, with
warnings as errors, would reject; here they are shown verbatim, and the equation labels they
name become links to the equations.
"""
from __future__ import annotations

import argparse
import importlib
import inspect
import re
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT))

import tangle  # noqa: E402

OUT = ROOT / "book" / "api.md"
EQ = re.compile(r"\beq-[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*")
WIDTH = 96

HEADER = """\
(app-api)=
# API reference

Every public name of the package, module by module in the order of the chapters that build
them. For each: its signature, the chapter that derives and builds it, the equations its
docstring names (each a link to the equation), and the docstring as written in the chapter.
The classifiers are scikit-learn estimators ({ref}`sec-gpc-api`); those that learn their
kernel in `fit` are described in {ref}`sec-gpc-learning`. This page is generated from the
docstrings by `tools/apidoc.py`; `make test` checks that it is up to date.
"""


LABEL = re.compile(r"^[ \t]*\$\$\s*\((eq-[A-Za-z0-9-]+)\)\s*$", re.M)


def chapter_labels(chapter: Path) -> set[str]:
    """Equation labels a chapter defines: the ``(eq-...)`` after a display's closing $$
    (indented when the display sits in a list item)."""
    return set(LABEL.findall(chapter.read_text()))


def _label_order(root: Path = ROOT) -> list[str]:
    """Every equation label in the order the chapters define them."""
    return [label for chapter in sorted((root / "book").glob("*.md"))
            for label in LABEL.findall(chapter.read_text())]


def book_labels(root: Path = ROOT) -> set[str]:
    """Equation labels defined in the chapters."""
    return set(_label_order(root))


def _signature(name: str, obj) -> str:
    try:
        sig = str(inspect.signature(obj))
    except (TypeError, ValueError):
        sig = "(...)"
    text = f"{name}{sig}"
    if len(text) <= WIDTH:
        return text
    params = [p.strip() for p in _split_params(sig[1:sig.rindex(")")])]
    tail = sig[sig.rindex(")") + 1:]
    lines = textwrap.wrap(", ".join(params), WIDTH - 4, break_long_words=False,
                          break_on_hyphens=False)
    return f"{name}(\n" + "\n".join("    " + line for line in lines) + f"\n){tail}"


def _split_params(inner: str) -> list[str]:
    """Split a parameter list at top-level commas."""
    parts, depth, current = [], 0, ""
    for ch in inner:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    if current.strip():
        parts.append(current)
    return parts


def _docstring(obj) -> str:
    doc = inspect.getdoc(obj) or "(no docstring)"
    lines = []
    for line in doc.splitlines():
        lines.extend(textwrap.wrap(line, WIDTH, subsequent_indent=" " * (len(line) - len(line.lstrip())),
                                   break_long_words=False, break_on_hyphens=False) or [""])
    return "\n".join(lines)


RANGE = re.compile(r"\(?(eq-[A-Za-z0-9-]+?)\)?\s*[-–]\s*\(?(eq-[A-Za-z0-9-]+)\)?")


def _named_labels(text: str, order: list[str]) -> list[str]:
    """The labels a docstring names, a range "(eq-a)-(eq-b)" standing for every equation from a
    to b in the book's order."""
    found = []
    for match in RANGE.finditer(text):
        first, last = match.groups()
        if first in order and last in order and order.index(first) < order.index(last):
            found += order[order.index(first):order.index(last) + 1]
    found += EQ.findall(text)
    return list(dict.fromkeys(found))


def _equations(text: str, order: list[str]) -> list[str]:
    """The book's equations a docstring names (``order``: every label, in the book's order)."""
    return [label for label in _named_labels(text, order) if label in order]


def _methods(cls) -> list[tuple[str, object]]:
    """Public methods and properties defined by the class itself (not by scikit-learn).

    A class built over several cells takes some methods from private mixins of its own
    module (``class _EPPrediction``); those count as the class's own. The mixins of a public
    base class (``RBF`` takes ``theta`` from the mixins of ``Kernel``) belong to that base:
    the search stops at the first public class after ``cls`` in its method resolution order.
    """
    owners = [cls]
    for base in cls.__mro__[1:]:
        if not base.__name__.startswith("_"):
            break
        if base.__module__ == cls.__module__:
            owners.append(base)
    out, seen = [], set()
    for owner in owners:
        for name, member in vars(owner).items():
            if name.startswith("_") or name in seen:
                continue
            seen.add(name)
            if inspect.isfunction(member) or isinstance(member, (property, classmethod,
                                                                 staticmethod)):
                out.append((name, member))
    return out


def render(root: Path = ROOT) -> tuple[str, dict[str, list[str]]]:
    """The page, and for each public name (module.name) the equations its docstrings name."""
    order = _label_order(root)
    parts = [HEADER]
    index: dict[str, list[str]] = {}
    for chapter, module_path in tangle.registry(root).items():
        module_name = Path(module_path).with_suffix("").as_posix().replace("/", ".")
        module = importlib.import_module(module_name)
        doc_target = Path(chapter).stem
        parts.append(f"\n## `{module_name}`\n\nBuilt by {{doc}}`{doc_target}`.\n")
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name)
            texts = [inspect.getdoc(obj) or ""]
            blocks = [f"\n({api_label(module_name, name)})=\n### `{name}`\n"]
            constant = not (inspect.isclass(obj) or inspect.isroutine(obj))
            if constant:
                value = textwrap.shorten(repr(obj), WIDTH - len(name) - 3, placeholder=" ...")
                blocks.append(f"\n```python\n{name} = {value}\n```\n")
                texts = [""]
            elif not (inspect.isclass(obj) and issubclass(obj, BaseException)):
                blocks.append(f"\n```python\n{_signature(name, obj)}\n```\n")
            members = _methods(obj) if inspect.isclass(obj) else []
            for _, member in members:
                target = member.fget if isinstance(member, property) else member
                texts.append(inspect.getdoc(target) or "")
            eqs = _equations("\n".join(texts), order)
            index[f"{module_name}.{name}"] = eqs
            links = ", ".join(f"{{eq}}`{label}`" for label in eqs)
            blocks.append(f"\nBuilt in {{doc}}`{doc_target}`"
                          + (f"; equations {links}.\n" if eqs else ".\n"))
            if not constant:
                blocks.append(f"\n```text\n{_docstring(obj)}\n```\n")
            if members:
                rows = []
                for mname, member in members:
                    target = member.fget if isinstance(member, property) else member
                    first = (inspect.getdoc(target) or "").split("\n\n")[0].replace("\n", " ")
                    kind = "property" if isinstance(member, property) else "method"
                    rows.append(f"- `{mname}` ({kind}): {_escape(first)}")
                blocks.append("\nPublic methods:\n\n" + "\n".join(rows) + "\n")
            parts.append("".join(blocks))
    return "".join(parts), index


def api_label(module_name: str, name: str) -> str:
    """The label of a public name's entry on the API page, e.g. ``api-tap-tap_equations``."""
    return f"api-{module_name.rsplit('.', 1)[-1]}-{name}".lower()


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
            for base in [obj] + [b for b in obj.__mro__[1:]
                                 if b.__name__.startswith("_") and b.__module__ == module_name]:
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
    for chapter, module_path in tangle.registry(root).items():
        module_name = Path(module_path).with_suffix("").as_posix().replace("/", ".")
        module = importlib.import_module(module_name)
        for label, shown, target in _implementers(module, module_name, order):
            entry = (shown, target, Path(chapter).stem)
            if label in labels and entry not in found.setdefault(label, []):
                found[label].append(entry)
    for label, entries in found.items():
        def private(entry):
            return any(part.startswith("_") for part in entry[0].split("."))
        if not all(map(private, entries)):              # private helpers only when nothing else
            entries = [e for e in entries if not private(e)]
        owners = {e[0] for e in entries if "." not in e[0]}   # a class, not also its methods
        found[label] = [e for e in entries if e[0].split(".")[0] not in owners or "." not in e[0]]
    return found


def _escape(text: str) -> str:
    """A docstring's first paragraph as Markdown text: equation labels linked, markup escaped."""
    text = re.sub(r"([*_`|<>\[\]])", r"\\\1", text)
    return text


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="fail if book/api.md differs from what would be written")
    args = parser.parse_args(argv)
    page, _ = render()
    if args.check:
        if not OUT.exists() or OUT.read_text() != page:
            print("book/api.md is out of date: run `python tools/apidoc.py` (make export does)")
            return 1
        return 0
    OUT.write_text(page)
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
