"""The book's API reference (book/api.md, written by tools/apidoc.py) is current and complete."""
import importlib
import re
import sys
from pathlib import Path

import gpc_literate

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import apidoc  # noqa: E402
import tangle  # noqa: E402

PAGE = (ROOT / "book" / "api.md").read_text()


def test_page_is_what_the_generator_writes():
    assert apidoc.render()[0] == PAGE, "run `make export` (tools/apidoc.py)"


def test_every_public_name_has_an_entry_under_its_module():
    sections = re.split(r"^## ", PAGE, flags=re.M)[1:]
    by_module = {s.split("`")[1]: s for s in sections}
    for module_path in tangle.registry(ROOT).values():
        name = Path(module_path).with_suffix("").as_posix().replace("/", ".")
        module = importlib.import_module(name)
        for public in module.__all__:
            assert f"\n### `{public}`\n" in by_module[name], f"{name}.{public}"
    for public, module in gpc_literate._PUBLIC.items():
        assert f"\n### `{public}`\n" in by_module[f"gpc_literate.{module}"], public


def test_every_equation_link_has_a_target_and_the_classifiers_have_theirs():
    labels = apidoc.book_labels()
    linked = set(re.findall(r"\{eq\}`(eq-[a-z0-9-]+)`", PAGE))
    assert linked and linked <= labels
    _, index = apidoc.render()
    for name in ("ep_classifier.EP", "laplace.Laplace", "tap.TAP", "meanfield.NaiveMeanField",
                 "svm.KernelAdatron", "kernels.default_kernel", "tap.tap_evidence_gradient"):
        assert index[f"gpc_literate.{name}"], name


def test_check_mode_detects_a_stale_page(tmp_path, monkeypatch):
    stale = tmp_path / "api.md"
    stale.write_text(PAGE + "\nstale\n")
    monkeypatch.setattr(apidoc, "OUT", stale)
    assert apidoc.main(["--check"]) == 1
    stale.write_text(PAGE)
    assert apidoc.main(["--check"]) == 0


def test_equation_code_index_names_the_implementers_and_links_to_their_entries():
    """The index _ext/eqcode.py writes under each equation: every API label it links to is on
    the page, every chapter exists, and equations the package computes are in it."""
    index = apidoc.equation_code()
    page_labels = set(re.findall(r"^\((api-[a-z0-9_-]+)\)=$", PAGE, re.M))
    chapters = {Path(c).stem for c in tangle.registry(ROOT)}
    assert index
    for label, entries in index.items():
        assert label in apidoc.book_labels(), label
        assert entries, label
        for shown, target, chapter in entries:
            assert target is None or target in page_labels, (label, shown, target)
            assert chapter in chapters, (label, chapter)
    names = {label: [shown for shown, _, _ in entries] for label, entries in index.items()}
    assert "normal_ratio" in names["eq-noise-ratio"]
    assert "SitePosterior" in names["eq-sites-posterior"]
    assert "SitePosterior.inverse_sum" in names["eq-sites-inverse-sum"]   # a method, by class
    assert names["eq-noise-cf-a"] == ["_ratio_parts"]            # private only when alone


def test_labels_in_list_items_and_with_capitals_are_found(tmp_path):
    chapter = tmp_path / "x.md"
    chapter.write_text("1. item\n\n   $$\n   a = b\n   $$ (eq-indented)\n\n"
                       "$$\nP = Q\n$$ (eq-sel-P)\n\n$$\nc\n$$ (eq-plain)\n\n"
                       "Text citing {eq}`eq-cited` is not a definition.\n")
    assert apidoc.chapter_labels(chapter) == {"eq-indented", "eq-sel-P", "eq-plain"}


def test_a_range_of_equations_names_every_equation_in_it():
    order = apidoc._label_order()
    named = apidoc._named_labels("Eqs (eq-noise-gauss-avg)-(eq-noise-d2logz): log Z", order)
    assert named == ["eq-noise-gauss-avg", "eq-noise-logz", "eq-noise-dlogz", "eq-noise-d2logz"]
    assert apidoc._named_labels("eq-noise-d2logz-eq-noise-logz", order) == [
        "eq-noise-d2logz-eq-noise-logz"]                  # reversed: not a range
