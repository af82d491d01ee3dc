"""The literate pipeline: chapters -> modules, the sync check, the import contract."""

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import tangle  # noqa: E402
import notebooks  # noqa: E402


def run(args, cwd):
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, capture_output=True, text=True
    )


def test_modules_in_sync_with_chapters():
    result = run(["tools/tangle.py", "--check"], ROOT)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.fixture
def scratch_repo(tmp_path):
    """A copy of what the tangle tool reads, to break without touching the real tree."""
    for name in ["book", "gpc_literate", "tools"]:
        shutil.copytree(
            ROOT / name,
            tmp_path / name,
            ignore=shutil.ignore_patterns("__pycache__", "data"),
        )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def first_exported_chapter():
    chapter_rel = next(iter(tangle.registry()))
    return chapter_rel, tangle.registry()[chapter_rel]


def test_editing_an_exported_cell_without_export_fails_the_check(scratch_repo):
    chapter_rel, module_rel = first_exported_chapter()
    chapter = scratch_repo / chapter_rel
    text = chapter.read_text()
    marker = ":tags: [export]\n"
    assert marker in text
    # append a line to the body of the first exported cell
    start = text.index(marker) + len(marker)
    end = text.index("\n```", start)
    chapter.write_text(text[:end] + "\nEDITED_WITHOUT_EXPORT = 1" + text[end:])
    result = run(["tools/tangle.py", "--check"], scratch_repo)
    assert result.returncode == 1
    assert "+EDITED_WITHOUT_EXPORT = 1" in result.stdout  # a readable diff
    assert module_rel in result.stderr  # names the stale module
    # and `make export` (tangle without --check) brings them back in sync
    assert run(["tools/tangle.py"], scratch_repo).returncode == 0
    assert run(["tools/tangle.py", "--check"], scratch_repo).returncode == 0


def test_a_prose_edit_leaves_the_modules_unchanged(scratch_repo):
    """Module markers count code cells only: a new Markdown cell renumbers nothing."""
    chapter_rel, _ = first_exported_chapter()
    chapter = scratch_repo / chapter_rel
    text = chapter.read_text()
    first_cell = text.index("```{code-cell}")
    chapter.write_text(
        text[:first_cell]
        + "A new paragraph.\n\n+++\n\nAnother.\n\n"
        + text[first_cell:]
    )
    result = run(["tools/tangle.py", "--check"], scratch_repo)
    assert result.returncode == 0, (
        result.stdout + result.stderr
    )  # module text unchanged


def test_editing_a_generated_module_fails_the_check(scratch_repo):
    _, module_rel = first_exported_chapter()
    module = scratch_repo / module_rel
    module.write_text(module.read_text() + "\n# hand edit\n")
    result = run(["tools/tangle.py", "--check"], scratch_repo)
    assert result.returncode == 1
    assert "-# hand edit" in result.stdout


def test_unregistered_exporting_chapter_is_an_error(scratch_repo):
    extra = scratch_repo / "book" / "99_orphan.md"
    extra.write_text(
        "---\nkernelspec:\n  name: python3\n  display_name: Python 3\n"
        "jupytext:\n  text_representation:\n    format_name: myst\n---\n\n"
        "# Orphan\n\n```{code-cell} ipython3\n:tags: [export]\nX = 1\n```\n"
    )
    result = run(["tools/tangle.py", "--check"], scratch_repo)
    assert result.returncode == 1
    assert "99_orphan.md" in result.stderr


def test_generated_modules_name_their_chapter():
    for chapter_rel, module_rel in tangle.registry().items():
        head = (ROOT / module_rel).read_text().splitlines()[:2]
        assert tangle.MARKER in head[0] and chapter_rel in head[0]
        assert "make export" in head[1]


def test_every_registered_chapter_is_in_the_toc():
    in_toc = {p.relative_to(ROOT).as_posix() for p in notebooks.toc_files()}
    for chapter_rel in tangle.registry():
        assert chapter_rel in in_toc, (
            f"{chapter_rel} exports a module but is not in _toc.yml"
        )


def modules_used(chapter: Path) -> set[str]:
    """Submodules of gpc_literate that a chapter's code cells import or reach (read by ast,
    so a module named in a string or docstring does not count).

    An import inside a function body is not counted: it runs when the function is called,
    after every module has been loaded, so it creates no import cycle and running the chapter
    does not need it (SparseEP.fit imports chapter 27's cluster code only when given a client).
    """

    import gpc_literate
    import jupytext

    nb = jupytext.read(chapter, fmt="md:myst")
    used = set()
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        source = "\n".join(
            line
            for line in cell.source.splitlines()
            if not line.lstrip().startswith(("%", "!"))
        )
        tree = ast.parse(source)
        # an import inside a function of an exported cell is still the module's import
        exported = "export" in cell.metadata.get("tags", [])
        deferred = (
            set()
            if exported
            else {
                id(node)
                for fn in ast.walk(tree)
                if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
                for node in ast.walk(fn)
                if isinstance(node, (ast.Import, ast.ImportFrom))
            }
        )
        for node in ast.walk(tree):
            if id(node) in deferred:
                continue
            if isinstance(node, ast.Import):
                used |= {
                    a.name.split(".")[1]
                    for a in node.names
                    if a.name.startswith("gpc_literate.")
                }
            elif isinstance(node, ast.ImportFrom) and node.module:
                if node.module == "gpc_literate":
                    used |= {a.name for a in node.names}
                elif node.module.startswith("gpc_literate."):
                    used.add(node.module.split(".")[1])
            elif (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "gpc_literate"
            ):
                used.add(node.attr)
    return {gpc_literate._PUBLIC.get(name, name) for name in used}


def test_chapters_import_only_earlier_modules():
    """A chapter's cells are its module: it must not import itself or a later chapter."""
    order = [p.relative_to(ROOT).as_posix() for p in notebooks.toc_files()]
    module_of = {ch: Path(mod).stem for ch, mod in tangle.registry().items()}
    for chapter_rel in module_of:
        later = {
            module_of[c] for c in order[order.index(chapter_rel) :] if c in module_of
        }
        bad = modules_used(ROOT / chapter_rel) & later
        assert not bad, (
            f"{chapter_rel} imports {sorted(bad)} (its own or a later chapter's module)"
        )


def test_import_has_no_side_effects_and_no_matplotlib():
    code = (
        "import sys, gpc_literate\n"
        "assert 'matplotlib' not in sys.modules, 'matplotlib imported'\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('gpc_literate.'))\n"
        "assert loaded == [], loaded\n"
        "for name in gpc_literate.__all__:\n"
        "    getattr(gpc_literate, name)\n"
        "assert 'matplotlib' not in sys.modules, 'matplotlib imported by a submodule'\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd="/", capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr


def test_equation_labels_cited_in_the_package_exist_in_the_book():
    labels = set()
    for chapter in (ROOT / "book").glob("*.md"):
        labels |= set(re.findall(r"\$\$\s*\((eq-[\w-]+)\)", chapter.read_text()))
    cited = set()
    for module in (ROOT / "gpc_literate").glob("*.py"):
        cited |= set(re.findall(r"\b(eq-[a-z]+-[\w-]+)", module.read_text()))
    missing = sorted(cited - labels)
    assert not missing, (
        f"labels cited in gpc_literate/ but not defined in book/: {missing}"
    )


def test_every_cross_reference_in_the_book_has_a_target():
    """{ref}/{eq}/{numref} targets exist, so `make book` cannot fail on an undefined label."""
    texts = {p: p.read_text() for p in (ROOT / "book").glob("*.md")}
    defined = set()
    for text in texts.values():
        defined |= set(re.findall(r"^\(([\w-]+)\)=\s*$", text, re.M))  # (label)=
        defined |= set(re.findall(r"\$\$\s*\(([\w-]+)\)", text))  # $$ ... $$ (label)
        defined |= set(
            re.findall(r"^:label:\s*([\w-]+)", text, re.M)
        )  # directive labels
    missing = []
    for path, text in texts.items():
        for role, target in re.findall(r"\{(ref|eq|numref)\}`([^`]+)`", text):
            label = re.sub(
                r".*<([^>]+)>$", r"\1", target.strip(), flags=re.S
            )  # text <label>
            if label not in defined:
                missing.append(f"{path.name}: {{{role}}}`{target}`")
    assert not missing, "undefined cross-references:\n" + "\n".join(missing)


def test_every_public_name_resolves_and_every_module_is_exposed():
    import gpc_literate

    registered = {Path(mod).stem for mod in tangle.registry().values()}
    assert gpc_literate._SUBMODULES == registered
    for name, module in gpc_literate._PUBLIC.items():
        assert module in registered, name
        assert getattr(gpc_literate, name) is getattr(
            __import__(f"gpc_literate.{module}", fromlist=[name]), name
        )


def test_no_module_imports_another_modules_private_names():
    """Shared helpers are public in the module that owns them (one naming contract)."""
    offenders = []
    for module in sorted((ROOT / "gpc_literate").glob("*.py")):
        for node in ast.walk(ast.parse(module.read_text())):
            if (
                isinstance(node, ast.ImportFrom)
                and node.module
                and node.module.startswith("gpc_literate")
            ):
                offenders += [
                    f"{module.name}: {node.module}.{a.name}"
                    for a in node.names
                    if a.name.startswith("_") and a.name != "__version__"
                ]
    assert not offenders, "private names imported across modules: " + ", ".join(
        offenders
    )


def test_the_gaussian_site_layer_is_defined_once():
    """Site update, cavities, the Gaussian of the sites and the parallel site iteration have one
    definition each, and their formulas are written nowhere else in the package."""
    texts = {p.name: p.read_text() for p in (ROOT / "gpc_literate").glob("*.py")}
    for pattern, owner in [
        (r"^def site_from_derivatives\(", "sites.py"),
        (r"^def cavities\(", "sites.py"),
        (r"^def cavity_mean\(", "sites.py"),
        (r"^class SitePosterior\b", "sites.py"),
        (r"^def parallel_sites\(", "sites.py"),
        (r"^def adapt_damping\(", "sites.py"),
    ]:
        where = [name for name, text in texts.items() if re.search(pattern, text, re.M)]
        assert where == [owner], (pattern, where)
    formulas = {
        "cavity precision 1/var - tau": r"1(\.0)? / \w*var\w* - \w*tau",
        "cavity variance var / (1 - tau var)": r"var\w* / \(1(\.0)? - \w*tau\w* \* \w*var",
        "site precision -d2 / (1 + var d2)": r"-d2\w* / ",
        "site precision w / (1 - var w)": r"/ \(1(\.0)? - \w*var\w* \* (nu|w)\b",
        "cavity mean m - var_cav c": r"\b\w+ - \w*(var_cav|k_diag)\w* \* \w*(coef|alpha)",
    }
    for what, pattern in formulas.items():
        where = sorted(name for name, text in texts.items() if re.search(pattern, text))
        assert set(where) <= {"sites.py"}, (what, where)
