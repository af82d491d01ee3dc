"""The book's execution cache re-runs exactly the chapters whose results could have changed.

jupyter-cache keys a chapter on its own code cells; tools/bookcache.py adds what the
chapter imports from the package (transitively), the data and the results files it reads.
"""

import ast
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import bookcache  # noqa: E402
import notebooks  # noqa: E402

CHAPTERS = [
    p.relative_to(ROOT) for p in notebooks.toc_files() if notebooks.is_notebook(p)
]


@pytest.fixture
def scratch_repo(tmp_path):
    for name in ["book", "gpc_literate", "tools", "results", "benchmarks"]:
        shutil.copytree(
            ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__")
        )
    for name in ["pyproject.toml", "_toc.yml"]:
        shutil.copy(ROOT / name, tmp_path / name)
    return tmp_path


def code_cells(path):
    return bookcache.chapter_code(path)


def importers_of(module):
    """Chapters that load ``gpc_literate.<module>`` when their import statements run.

    Found by executing each chapter's package imports, not by the tool's own reading of
    the import statements: an independent check of it. One interpreter runs them all,
    dropping every ``gpc_literate`` module from ``sys.modules`` before each chapter, so
    that each chapter's imports load the package afresh.
    """
    scripts = {}
    for rel in CHAPTERS:
        tree = ast.parse(code_cells(ROOT / rel))
        scripts[str(rel)] = "\n".join(
            ast.unparse(node)
            for node in ast.walk(tree)
            if isinstance(node, (ast.Import, ast.ImportFrom))
            and getattr(node, "level", 0) == 0
            and any(
                name.startswith("gpc_literate")
                for name in [getattr(node, "module", None) or ""]
                + [a.name for a in node.names]
            )
        )
    runner = (
        "import json, sys\n"
        f"scripts = json.loads({json.dumps(json.dumps(scripts))})\n"
        "found = []\n"
        "for rel, script in scripts.items():\n"
        "    for name in [m for m in sys.modules if m.split('.')[0] == 'gpc_literate']:\n"
        "        del sys.modules[name]\n"
        "    exec(compile(script, rel, 'exec'), {})\n"
        f"    if 'gpc_literate.{module}' in sys.modules:\n"
        "        found.append(rel)\n"
        "print(json.dumps(found))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", runner], capture_output=True, text=True, cwd=ROOT
    )
    assert out.returncode == 0, out.stderr
    return {Path(rel) for rel in json.loads(out.stdout.strip().splitlines()[-1])}


def test_editing_an_exported_cell_of_chapter_2_reruns_it_and_its_importers(
    scratch_repo,
):
    chapters = [scratch_repo / rel for rel in CHAPTERS]
    stamps = {
        str(c.relative_to(scratch_repo)): bookcache.fingerprint(c, scratch_repo)
        for c in chapters
    }
    before = {c: code_cells(c) for c in chapters}
    assert not bookcache.stale_chapters(chapters, stamps, scratch_repo)

    chapter2 = scratch_repo / "book" / "02_noise_models.md"
    text = chapter2.read_text()
    marker = ":tags: [export]\n"
    start = text.index(marker) + len(marker)
    end = text.index("\n```", start)
    chapter2.write_text(text[:end] + "\n# an edit of an exported cell" + text[end:])
    tangle = subprocess.run(
        [sys.executable, "tools/tangle.py"],
        cwd=scratch_repo,
        capture_output=True,
        text=True,
    )
    assert tangle.returncode == 0, tangle.stderr

    code_changed = {c for c in chapters if code_cells(c) != before[c]}
    rerun = set(bookcache.stale_chapters(chapters, stamps, scratch_repo)) | code_changed
    expected = {scratch_repo / "book" / "02_noise_models.md"} | {
        scratch_repo / rel for rel in importers_of("likelihoods")
    }
    assert code_changed == {chapter2}
    assert rerun == expected
    # chapters before 02 and those that never load likelihoods (e.g. the kernels and the
    # SVM chapters) keep their cached run
    assert scratch_repo / "book" / "03_covariance_functions.md" not in rerun
    assert scratch_repo / "book" / "05_svm.md" not in rerun


def test_a_results_file_reruns_only_the_chapter_that_reads_it(scratch_repo):
    chapters = [scratch_repo / rel for rel in CHAPTERS]
    stamps = {
        str(c.relative_to(scratch_repo)): bookcache.fingerprint(c, scratch_repo)
        for c in chapters
    }
    path = scratch_repo / "results" / "seeger_table1.json"
    data = json.loads(path.read_text())
    data["records"] = data["records"][:-1]
    path.write_text(json.dumps(data))
    stale = bookcache.stale_chapters(chapters, stamps, scratch_repo)
    assert [c.name for c in stale] == ["21_variational_experiments.md"]


def test_a_benchmark_script_reruns_only_the_chapter_that_runs_it(scratch_repo):
    chapters = [scratch_repo / rel for rel in CHAPTERS]
    stamps = {
        str(c.relative_to(scratch_repo)): bookcache.fingerprint(c, scratch_repo)
        for c in chapters
    }
    path = scratch_repo / "benchmarks" / "bench_large_n.py"
    path.write_text(path.read_text() + "\n# an edit\n")
    stale = bookcache.stale_chapters(chapters, stamps, scratch_repo)
    assert [c.name for c in stale] == ["26_stochastic_ep.md"]
    (scratch_repo / "benchmarks" / "bench_ep.py").write_text(
        "# mentioned only in prose\n"
    )
    assert bookcache.stale_chapters(chapters, stamps, scratch_repo) == stale


def test_main_records_fingerprints_and_drops_nothing_on_a_fresh_cache(tmp_path, capsys):
    cache = tmp_path / "cache"
    assert bookcache.main(["--cache", str(cache)]) == 0
    stamps = json.loads((cache / bookcache.STAMPS).read_text())
    assert set(stamps) == {str(rel) for rel in CHAPTERS}
    assert capsys.readouterr().out == ""  # a first build says nothing
    assert bookcache.main(["--cache", str(cache), "--dry-run"]) == 0
    assert capsys.readouterr().out == ""  # and nothing is stale after it


def test_a_stale_chapter_loses_its_cached_run_and_is_touched(tmp_path):
    """The real jupyter-cache path: the record of a stale chapter is removed, others kept."""
    import nbformat
    from jupyter_cache import get_cache

    cache_dir = tmp_path / "cache"
    cache = get_cache(str(cache_dir))
    chapters = [ROOT / rel for rel in CHAPTERS[:2]]
    for i, chapter in enumerate(chapters):
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(f"x = {i}")])
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
        path = tmp_path / f"nb{i}.ipynb"
        nbformat.write(nb, path)
        cache.cache_notebook_file(str(path), uri=str(chapter), check_validity=False)
    assert bookcache._drop_cached(cache_dir, chapters[0]) == 1
    assert [r.uri for r in cache.list_cache_records()] == [str(chapters[1])]
    assert bookcache._drop_cached(cache_dir, chapters[0]) == 0


def test_read_as_mystnb_keys_a_chapter_as_myst_nb_does():
    """The cache key of the parallel pre-execution is the one myst-nb looks up."""
    from jupyter_cache import get_cache
    from myst_nb.core.config import NbParserConfig
    from myst_nb.core.read import create_nb_reader
    from myst_parser.config.main import MdParserConfig

    extensions = bookcache.yaml_config()["parse"]["myst_enable_extensions"]
    md_config = MdParserConfig(enable_extensions=set(extensions))
    cache = get_cache(str(ROOT / "_build" / "no-such-cache"))  # hashes only
    for rel in CHAPTERS[:3] + CHAPTERS[-2:]:
        text = (ROOT / rel).read_text(encoding="utf-8")
        reader = create_nb_reader(str(ROOT / rel), md_config, NbParserConfig(), text)
        theirs = cache.create_hashed_notebook(reader.read(text))[1]
        ours = cache.create_hashed_notebook(bookcache.read_as_mystnb(ROOT / rel))[1]
        assert ours == theirs


MINI_CHAPTER = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3 (ipykernel)
  language: python
  name: python3
---

# A chapter

```{{code-cell}} ipython3
print({value})
```
"""


def test_execute_uncached_runs_and_caches_each_chapter_once(tmp_path, capsys):
    from jupyter_cache import get_cache

    root = tmp_path / "repo"
    (root / "book").mkdir(parents=True)
    shutil.copy(ROOT / "_config.yml", root / "_config.yml")
    good = root / "book" / "good.md"
    good.write_text(MINI_CHAPTER.format(value="6 * 7"))
    bad = root / "book" / "bad.md"
    bad.write_text(MINI_CHAPTER.format(value="1 / 0"))
    cache_dir = tmp_path / "cache"
    failed = bookcache.execute_uncached([good, bad], cache_dir, jobs=2, root=root)
    out = capsys.readouterr().out
    assert failed == ["book/bad.md"] and "ZeroDivisionError" in out
    record = get_cache(str(cache_dir)).match_cache_notebook(
        bookcache.read_as_mystnb(good, root)
    )
    assert record.uri == str(good)
    nb = get_cache(str(cache_dir)).get_cache_bundle(record.pk).nb
    assert nb.cells[-1].outputs[0]["text"] == "42\n"
    # the cached chapter is not run again; the failed one is
    assert bookcache.execute_uncached([good, bad], cache_dir, 1, root) == [
        "book/bad.md"
    ]
    assert "executing 1 chapter(s)" in capsys.readouterr().out
