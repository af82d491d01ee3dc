"""Convert the chapters listed in ``_toc.yml`` to ``.ipynb`` for nbval.

nbval only collects ``.ipynb`` files, and Jupyter Book must never find an
``.ipynb`` beside a chapter, so the notebooks go to a scratch folder
(``_build/nbval`` by default), which this tool empties first.  Only chapters
that are notebooks (their front matter has a ``kernelspec``) are converted.

Usage::

    python tools/notebooks.py [--out DIR] [--list]
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

import jupytext
import yaml

ROOT = Path(__file__).resolve().parents[1]


def toc_files(root: Path = ROOT) -> list[Path]:
    """Return the source files of ``_toc.yml`` in reading order."""
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    found: list[str] = [toc["root"]]

    def walk(node):
        if isinstance(node, dict):
            if "file" in node:
                found.append(node["file"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk({k: v for k, v in toc.items() if k != "root"})
    paths = []
    for name in found:
        path = root / name
        if path.suffix == "":
            path = path.with_suffix(".md")
        paths.append(path)
    return paths


def is_notebook(path: Path) -> bool:
    """A MyST page is a notebook when its front matter names a kernel."""
    text = path.read_text(encoding="utf-8")
    if not text.startswith("---"):
        return False
    front = text.split("---", 2)[1]
    return "kernelspec" in (yaml.safe_load(front) or {})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "_build" / "nbval"))
    parser.add_argument("--list", action="store_true", help="only list the chapters")
    args = parser.parse_args(argv)
    chapters = [p for p in toc_files() if is_notebook(p)]
    if args.list:
        print("\n".join(str(p.relative_to(ROOT)) for p in chapters))
        return 0
    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    for number, chapter in enumerate(chapters):
        nb = jupytext.read(chapter, fmt="md:myst")
        # keep reading order in the file names: pytest collects alphabetically
        target = out / f"{number:02d}_{chapter.stem}.ipynb"
        jupytext.write(nb, target, fmt="ipynb")
    print(f"converted {len(chapters)} chapters into {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
