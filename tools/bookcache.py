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

With ``--jobs N`` the tool then executes, N at a time, every chapter that has no
cached run, and stores each run in the cache under the key myst-nb looks up (the
chapter read by myst-nb's own MyST reader), so that ``jupyter-book build`` finds them
all cached.  myst-nb executes the chapters one after another; on a 2-core machine two
at a time halve the time of a first build.  A chapter that fails is reported with its
traceback and the tool exits with status 1 after the others have run.

Usage::

    python tools/bookcache.py [--cache _build/.jupyter_cache] [--dry-run] [--jobs N]
"""

from __future__ import annotations

import argparse
import ast
import functools
import hashlib
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
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


def yaml_config(root: Path = ROOT) -> dict:
    """The book's ``_config.yml``."""
    import yaml

    return yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=None)
def _md_config(root: str):
    """myst-parser's configuration with the Markdown extensions of ``_config.yml``."""
    import dataclasses

    from myst_parser.config.main import MdParserConfig

    extensions = (yaml_config(Path(root)).get("parse") or {}).get(
        "myst_enable_extensions"
    )
    return dataclasses.replace(
        MdParserConfig(), enable_extensions=set(extensions or [])
    )


def read_as_mystnb(chapter: Path, root: Path = ROOT):
    """``chapter`` as the notebook myst-nb reads, whose code cells key its cached run.

    myst-nb reads a MyST chapter with its own reader and the Markdown extensions of
    ``_config.yml``; reading it the same way gives the same cache key.
    """
    from myst_nb.core.read import read_myst_markdown_notebook

    return read_myst_markdown_notebook(
        chapter.read_text(encoding="utf-8"),
        config=_md_config(str(root)),
        add_source_map=True,
        path=str(chapter),
    )


def _execute_one(chapter: str, timeout: int, root: str):
    """Run one chapter in a fresh kernel in its folder (in a worker process)."""
    from jupyter_cache.executors.utils import single_nb_execution

    path = Path(chapter)
    nb = read_as_mystnb(path, Path(root))
    result = single_nb_execution(
        nb, cwd=str(path.parent), timeout=timeout, allow_errors=False
    )
    return chapter, nb, result.time, result.exc_string if result.err else None


def execute_uncached(
    chapters: list[Path], cache_dir: Path, jobs: int, root: Path = ROOT
) -> list[str]:
    """Execute the chapters without a cached run, ``jobs`` at a time; cache each run.

    Returns the names of the chapters whose execution failed (their tracebacks are
    printed); those are left uncached.
    """
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    config = yaml_config(root)
    timeout = int((config.get("execute") or {}).get("timeout", 3600))
    cache = get_cache(str(cache_dir))
    todo = []
    for chapter in chapters:
        try:
            cache.match_cache_notebook(read_as_mystnb(chapter, root))
        except KeyError:
            todo.append(chapter)
    if not todo:
        return []
    print(f"executing {len(todo)} chapter(s), {jobs} at a time", flush=True)
    failed = []
    start = time.perf_counter()
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(_execute_one, str(c), timeout, str(root)) for c in todo]
        for future in as_completed(futures):
            chapter, nb, seconds, error = future.result()
            name = str(Path(chapter).relative_to(root))
            if error is not None:
                failed.append(name)
                print(f"{name}: execution failed\n{error}", flush=True)
                continue
            cache.cache_notebook_bundle(
                CacheBundleIn(nb, chapter, data={"execution_seconds": seconds}),
                check_validity=False,
                overwrite=True,
            )
            print(f"{name}: executed in {seconds:.1f} s", flush=True)
    print(f"executed in {time.perf_counter() - start:.0f} s", flush=True)
    return failed


def main(argv: list[str] | None = None) -> int:
    import notebooks

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", default=str(ROOT / "_build" / ".jupyter_cache"))
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="only list the chapters that would re-execute",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=0,
        help="then execute the chapters without a cached run, this many at a time "
        "(0: leave them to jupyter-book, which executes them one by one)",
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
    if args.jobs > 0 and not args.dry_run:
        failed = execute_uncached(chapters, cache_dir, args.jobs)
        if failed:
            print("chapters that failed: " + ", ".join(failed), file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
