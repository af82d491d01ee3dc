"""The book's API reference (book/api/, written by tools/apidoc.py, read by Sphinx's autodoc
through _ext/apiref.py) is current and complete, and every docstring reads as
reStructuredText."""

import importlib
import inspect
import re
import sys
from pathlib import Path

import pytest

import gpc_literate

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import apidoc  # noqa: E402

PAGES = {
    path.stem: path.read_text() for path in sorted((ROOT / "book" / "api").glob("*.md"))
}
MODULES = apidoc.modules(ROOT)


def test_pages_are_what_the_generator_writes():
    assert apidoc.stale(ROOT) == [], "run `make export` (tools/apidoc.py)"


def test_every_public_name_has_an_entry_on_its_module_page():
    for _, module_name in MODULES:
        page = PAGES[apidoc.short(module_name)]
        module = importlib.import_module(module_name)
        for name in module.__all__:
            entry = (
                f"({apidoc.api_label(module_name, name)})=\n```{{eval-rst}}\n.. auto"
            )
            assert entry in page, f"{module_name}.{name}"
            assert re.search(
                rf"^\.\. auto\w+:: {re.escape(module_name)}\.{name}$", page, re.M
            )
        documented = re.findall(r"^\.\. auto(?!module)\w+:: [\w.]+\.(\w+)$", page, re.M)
        assert documented == [
            n
            for g in apidoc.GROUPS
            for n in module.__all__
            if apidoc.kind(getattr(module, n)) == g
        ]  # and nothing else


def test_the_index_lists_every_name_of_the_package_and_every_module():
    index = PAGES["index"]
    for name, module in gpc_literate._PUBLIC.items():
        assert f":py:obj:`~gpc_literate.{module}.{name}`" in index, name
    for _, module_name in MODULES:
        assert f":doc:`{module_name} <{apidoc.short(module_name)}>`" in index
    # the classifiers come first, scikit-learn's NotFittedError is no summary of its own
    assert index.index("gpc_literate.ep_classifier.EP") < index.index("NotFittedError")
    assert "Re-exported from ``sklearn.exceptions``" in index


def test_toc_lists_the_pages():
    toc = (ROOT / "_toc.yml").read_text()
    listed = re.findall(r"- file: book/api/(\w+)", toc)
    assert listed == ["index"] + [apidoc.short(m) for _, m in MODULES]


def _docstrings():
    """Every docstring of the package that autodoc shows: public names and the methods and
    properties of public classes, their own and those they inherit from the package."""
    for _, module_name in MODULES:
        module = importlib.import_module(module_name)
        yield module_name, module_name, module.__doc__ or ""
        for name in module.__all__:
            obj = getattr(module, name)
            if not (
                inspect.isclass(obj) or inspect.isroutine(obj)
            ) or not obj.__module__.startswith("gpc_literate"):
                continue
            yield f"{module_name}.{name}", module_name, inspect.getdoc(obj) or ""
            if inspect.isclass(obj):
                for owner in obj.__mro__:
                    if not owner.__module__.startswith("gpc_literate"):
                        continue
                    for member, value in vars(owner).items():
                        value = value.fget if isinstance(value, property) else value
                        value = getattr(value, "__func__", value)
                        if not member.startswith("_") and inspect.isfunction(value):
                            yield (
                                f"{module_name}.{name}.{member}",
                                module_name,
                                inspect.getdoc(value) or "",
                            )


def test_every_docstring_reads_as_restructured_text():
    """_ext/apiref.py would show a docstring that does not as a literal block."""
    from sphinx.ext.napoleon import Config
    from sphinx.ext.napoleon.docstring import NumpyDocstring

    config = Config(napoleon_google_docstring=False)
    failures = {}
    for name, module_name, doc in _docstrings():
        rst = apidoc.docstring_rst(doc, module_name)
        problems = apidoc.rst_problems(str(NumpyDocstring(rst.splitlines(), config)))
        if problems:
            failures[name] = problems
    assert not failures


def test_labels_become_links_and_markup_is_escaped():
    rst = apidoc.docstring_rst
    assert (
        rst("Eq. (eq-tap-alpha): the update.") == "Eq. :eq:`eq-tap-alpha`: the update."
    )
    assert (
        rst("maximising eq-ep-logz-stable (with eq-ep-gradient)")
        == "maximising :eq:`eq-ep-logz-stable` (with :eqno:`eq-ep-gradient`)"
    )
    assert (
        rst("eqs (eq-noise-gauss-avg)-(eq-noise-d2logz)")
        == "eqs :eq:`eq-noise-gauss-avg`–:eq:`eq-noise-d2logz`"
    )
    assert rst("see eq-no-such-label") == "see eq-no-such-label"
    assert (
        rst("(chapter 1, sec-gpc-learning)")
        == "(:doc:`chapter 1 </book/01_gp_classification>`, :ref:`Learning the hyperparameters"
        " in fit <sec-gpc-learning>`)"
    )
    assert rst("K (y * alpha_), |d tau|") == r"K (y \* alpha\_), \|d tau\|"
    assert (
        rst("the *undamped* change of ``site_nu_``")
        == "the *undamped* change of ``site_nu_``"
    )
    assert (
        rst("see ``tap_fixed_point``", "gpc_literate.tap")
        == "see :py:obj:`tap_fixed_point <gpc_literate.tap.tap_fixed_point>`"
    )
    assert rst("a SitePosterior of gpc_literate.sites") == (
        "a :py:obj:`SitePosterior <gpc_literate.sites.SitePosterior>` of "
        ":py:mod:`gpc_literate.sites`"
    )
    # a line that would start a list or a comment, unless the paragraph is a list
    assert rst("text\n- 1 is minus one") == "text\n\\- 1 is minus one"
    assert rst("- a\n  b\n- c") == "- a\n  b\n- c"


def test_napoleon_sections_end_before_prose_and_definition_lists_before_unindents():
    doc = "Summary.\n\nParameters\n----------\nx : int\n    The x.\n\nFitted attributes: ``a_``."
    assert "\n\n\nFitted attributes" in apidoc.docstring_rst(doc)
    assert apidoc.docstring_rst("a : b\n    c\nd") == "a : b\n    c\n\nd"


@pytest.mark.parametrize(
    "doc, first",
    [
        ("Eq. (eq-tap-alpha): the update. More.", "Eq. (eq-tap-alpha): the update."),
        ("Fit (see e.g. chapter 1). Then.", "Fit (see e.g. chapter 1)."),
        ("One line\nover two. Next.\n\nOther paragraph.", "One line over two."),
        ("No full stop", "No full stop"),
    ],
)
def test_summary_is_the_first_sentence(doc, first):
    assert apidoc._first_sentence(doc) == first


def test_every_equation_link_has_a_target():
    labels = apidoc.book_labels()
    linked = {
        label
        for page in PAGES.values()
        for label in re.findall(r":eq(?:no)?:`(eq-[A-Za-z0-9-]+)`", page)
    }
    assert linked and linked <= labels
    for _, module_name, doc in _docstrings():
        rst = apidoc.docstring_rst(doc, module_name)
        assert set(re.findall(r":eq(?:no)?:`([^`]+)`", rst)) <= labels, module_name


def test_check_mode_detects_a_stale_page(monkeypatch):
    pages = apidoc.render(ROOT)
    path = next(iter(pages))
    monkeypatch.setattr(
        apidoc, "render", lambda root: {**pages, path: pages[path] + "stale"}
    )
    assert apidoc.stale(ROOT) == [f"{path.relative_to(ROOT)} is out of date"]
    assert apidoc.main(["--check"]) == 1


def test_equation_code_index_names_the_implementers_and_links_to_their_entries():
    """The index _ext/eqcode.py writes under each equation: every API label it links to is on
    the pages, every chapter exists, and equations the package computes are in it."""
    index = apidoc.equation_code()
    page_labels = {
        label
        for page in PAGES.values()
        for label in re.findall(r"^\((api-[a-z0-9_-]+)\)=$", page, re.M)
    }
    chapters = {c for c, _ in MODULES}
    assert index
    for label, entries in index.items():
        assert label in apidoc.book_labels(), label
        assert entries, label
        for shown, target, chapter in entries:
            assert target is None or target in page_labels, (label, shown, target)
            assert chapter in chapters, (label, chapter)
    names = {
        label: [shown for shown, _, _ in entries] for label, entries in index.items()
    }
    assert "normal_ratio" in names["eq-noise-ratio"]
    assert "SitePosterior" in names["eq-sites-posterior"]
    assert (
        "SitePosterior.inverse_sum" in names["eq-sites-inverse-sum"]
    )  # a method, by class
    assert names["eq-noise-cf-a"] == ["_ratio_parts"]  # private only when alone
    for _, module_name in MODULES:
        assert f"(api-{apidoc.short(module_name)}-" in PAGES[apidoc.short(module_name)]


def test_labels_in_list_items_and_with_capitals_are_found(tmp_path):
    chapter = tmp_path / "x.md"
    chapter.write_text(
        "1. item\n\n   $$\n   a = b\n   $$ (eq-indented)\n\n"
        "$$\nP = Q\n$$ (eq-sel-P)\n\n$$\nc\n$$ (eq-plain)\n\n"
        "Text citing {eq}`eq-cited` is not a definition.\n"
    )
    assert apidoc.chapter_labels(chapter) == {"eq-indented", "eq-sel-P", "eq-plain"}


def test_a_range_of_equations_names_every_equation_in_it():
    order = apidoc._label_order()
    named = apidoc._named_labels(
        "Eqs (eq-noise-gauss-avg)-(eq-noise-d2logz): log Z", order
    )
    assert named == [
        "eq-noise-gauss-avg",
        "eq-noise-logz",
        "eq-noise-dlogz",
        "eq-noise-d2logz",
    ]
    assert apidoc._named_labels("eq-noise-d2logz-eq-noise-logz", order) == [
        "eq-noise-d2logz-eq-noise-logz"
    ]  # reversed: not a range


def test_importing_the_package_for_autodoc_needs_no_matplotlib():
    code = (
        "import importlib, sys, tomllib\n"
        "toml = tomllib.load(open('pyproject.toml', 'rb'))\n"
        "reg = toml['tool']['gpc_literate']['chapters']\n"
        "for m in reg.values(): importlib.import_module(m[:-3].replace('/', '.'))\n"
        "assert 'matplotlib' not in sys.modules\n"
    )
    import subprocess

    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)
