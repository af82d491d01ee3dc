"""Keep the book's execution cache honest: re-run a chapter when anything it runs changed.

``make book`` executes chapters through jupyter-cache (``execute_notebooks: cache`` in
``_config.yml``), which keys a notebook on its code cells only.  A chapter here also
runs code it imports from the package -- the modules exported by the chapters before
it -- and some chapters read data or results files.  A cache keyed on the code cells
alone would keep showing the numbers of an old module after an exported cell of an
earlier chapter changed.

This tool runs before every ``jupyter-book build``.  For each chapter it computes a
fingerprint of everything outside the chapter that its execution depends on:

* the package modules it imports, with everything they import in turn (read from the
  ``import`` statements of the chapter's code cells and of the modules);
* ``gpc_literate/__init__.py`` (every import goes through it);
* the shipped data files, if the chapter reaches ``gpc_literate.datasets``;
* the files of ``results/`` whose name the chapter mentions;
* the scripts of ``benchmarks/`` whose name the chapter's code cells mention (a chapter
  that runs a benchmark to recompute records of a results file).

When a chapter's fingerprint differs from the one recorded at the previous build, its
cached execution is dropped and the chapter file's modification time is renewed, so
that Sphinx reads it again and myst-nb executes it afresh.  A chapter whose own code
cells changed needs nothing from this tool: its cache key has changed already.

Usage::

    python tools/bookcache.py [--cache _build/.jupyter_cache] [--dry-run]
"""

from __future__ import annotations

import argparse
import ast
import functools
import hashlib
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
PACKAGE = "gpc_literate"
STAMPS = "gpc_literate_fingerprints.json"


def _package_dir(root: Path) -> Path:
    return root / PACKAGE


def _stat_key(path: Path) -> tuple[str, int, int]:
    """A file's identity for the caches below: path, modification time and size."""
    stat = path.stat()
    return str(path), stat.st_mtime_ns, stat.st_size


@functools.lru_cache(maxsize=None)
def _parsed(key: tuple[str, int, int]) -> ast.Module:
    """The syntax tree of a Python file, parsed once per version of the file."""
    return ast.parse(Path(key[0]).read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=None)
def _digest(key: tuple[str, int, int]) -> bytes:
    """The SHA-256 of a file's bytes, computed once per version of the file."""
    return hashlib.sha256(Path(key[0]).read_bytes()).digest()


def _public_names(root: Path) -> dict[str, str]:
    """``gpc_literate``'s lazily imported public names -> the submodule defining each."""
    tree = _parsed(_stat_key(_package_dir(root) / "__init__.py"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "_PUBLIC" for t in node.targets
        ):
            return ast.literal_eval(node.value)
    return {}


def imported_modules(source: str | ast.Module, root: Path = ROOT) -> set[str]:
    """The package's submodules a piece of Python source (or its tree) imports directly."""
    modules: set[str] = set()
    package = _package_dir(root)
    public = _public_names(root)
    tree = ast.parse(source) if isinstance(source, str) else source
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == PACKAGE and len(parts) > 1:
                    modules.add(parts[1])
        elif isinstance(node, ast.ImportFrom):
            name = node.module or ""
            parts = name.split(".")
            if node.level == 1 and parts[0]:  # from .x import ...
                modules.add(parts[0])
            elif (
                parts[0] == PACKAGE and len(parts) > 1
            ):  # from gpc_literate.x import ...
                modules.add(parts[1])
            elif name == PACKAGE:  # from gpc_literate import x
                for alias in node.names:
                    if (package / f"{alias.name}.py").exists():
                        modules.add(alias.name)
                    elif alias.name in public:
                        modules.add(public[alias.name])
    return {m for m in modules if (package / f"{m}.py").exists()}


def _module_imports(path: Path, root: Path) -> frozenset[str]:
    """``imported_modules`` of a package file, once per version of it and of __init__."""
    return _module_imports_cached(
        _stat_key(path), _stat_key(_package_dir(root) / "__init__.py"), str(root)
    )


@functools.lru_cache(maxsize=None)
def _module_imports_cached(key, init_key, root: str) -> frozenset[str]:
    return frozenset(imported_modules(_parsed(key), Path(root)))


def module_closure(modules: set[str], root: Path = ROOT) -> set[str]:
    """``modules`` and every package module they import, transitively."""
    seen: set[str] = set()
    todo = list(modules)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(_module_imports(_package_dir(root) / f"{name}.py", root) - seen)
    return seen


def chapter_code(path: Path) -> str:
    """The code cells of a MyST-Markdown chapter, joined (IPython magics dropped)."""
    return _chapter_code(_stat_key(Path(path)))


@functools.lru_cache(maxsize=None)
def _chapter_code(key: tuple[str, int, int]) -> str:
    import jupytext

    nb = jupytext.read(key[0], fmt="md:myst")
    lines = [
        line
        for cell in nb.cells
        if cell.cell_type == "code"
        for line in cell.source.splitlines()
        if not line.lstrip().startswith(("%", "!"))
    ]
    return "\n".join(lines)


def dependencies(chapter: Path, root: Path = ROOT) -> list[Path]:
    """Files outside ``chapter`` whose content its execution depends on, sorted."""
    code = chapter_code(chapter)
    modules = module_closure(imported_modules(code, root), root)
    files = {_package_dir(root) / "__init__.py"}
    files |= {_package_dir(root) / f"{m}.py" for m in modules}
    if "datasets" in modules:
        files |= {p for p in (_package_dir(root) / "data").rglob("*") if p.is_file()}
    text = chapter.read_text(encoding="utf-8")
    results = root / "results"
    if results.is_dir():
        files |= {p for p in results.iterdir() if p.is_file() and p.name in text}
    benchmarks = root / "benchmarks"
    if benchmarks.is_dir():
        files |= {p for p in benchmarks.glob("*.py") if p.name in code}
    return sorted(files)


def fingerprint(chapter: Path, root: Path = ROOT) -> str:
    digest = hashlib.sha256()
    for path in dependencies(chapter, root):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(_digest(_stat_key(path)))
    return digest.hexdigest()


def stale_chapters(
    chapters: list[Path], stamps: dict[str, str], root: Path = ROOT
) -> list[Path]:
    """The chapters whose fingerprint differs from the recorded one (or has none)."""
    return [
        c
        for c in chapters
        if stamps.get(str(c.relative_to(root))) != fingerprint(c, root)
    ]


def _drop_cached(cache_dir: Path, chapter: Path) -> int:
    """Remove the cache records of ``chapter`` from jupyter-cache; return how many."""
    if not cache_dir.exists():
        return 0
    from jupyter_cache import get_cache

    cache = get_cache(str(cache_dir))
    dropped = 0
    for record in cache.list_cache_records():
        if record.uri and Path(record.uri).resolve() == chapter.resolve():
            cache.remove_cache(record.pk)
            dropped += 1
    return dropped


def main(argv: list[str] | None = None) -> int:
    import notebooks

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", default=str(ROOT / "_build" / ".jupyter_cache"))
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="only list the chapters that would re-execute",
    )
    args = parser.parse_args(argv)
    cache_dir = Path(args.cache)
    stamp_file = cache_dir / STAMPS
    stamps = json.loads(stamp_file.read_text()) if stamp_file.exists() else {}
    chapters = [p for p in notebooks.toc_files() if notebooks.is_notebook(p)]
    stale = stale_chapters(chapters, stamps)
    # no execution cache yet: everything executes, nothing needs dropping
    fresh_build = not (cache_dir / "global.db").exists()
    for chapter in stale:
        name = str(chapter.relative_to(ROOT))
        if args.dry_run:
            print(f"would re-execute {name}")
            continue
        if not fresh_build:  # (a fresh build executes everything anyway)
            dropped = _drop_cached(cache_dir, chapter)
            os.utime(chapter)  # make Sphinx read the chapter again
            print(
                f"{name}: a module or file it uses changed; {dropped} cached run(s) dropped"
            )
        stamps[name] = fingerprint(chapter)
    if not args.dry_run:
        cache_dir.mkdir(parents=True, exist_ok=True)
        stamp_file.write_text(json.dumps(stamps, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
