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
