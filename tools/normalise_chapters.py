"""Rewrite the chapters in the form jupytext writes, so that saving one from JupyterLab is a no-op.

JupyterLab opens a chapter ``book/*.md`` as a notebook through jupytext's contents manager
and, on save, writes it back with jupytext's MyST writer.  That writer has one canonical
layout, which no setting changes:

- one blank line between cells and none at the end of the file;
- a blank line between a code cell's options (``:tags: [export]``) and its code;
- a ``+++`` cell break only between two Markdown cells (one after a code cell is dropped);
- the front matter as jupytext dumps it.

Once the chapters are in that layout, a save leaves them byte-identical
(``tests/test_lab_roundtrip.py`` checks it).  Besides the layout, this script sets two
lines of each notebook chapter's front matter:

- ``jupytext.notebook_metadata_filter``, which keeps jupytext's version stamps out of the
  front matter.  It lives in each chapter rather than in ``jupytext.toml``, because a filter
  set there would also give a jupytext header to the pages without front matter
  (``index.md``, ``api.md``, ...) when they are saved;
- ``kernelspec.display_name``, which JupyterLab resets to the kernel's own name,
  ``Python 3 (ipykernel)``, as soon as the kernel starts.

Pages without front matter (plain MyST pages, no code cells) are left alone: jupytext already
writes them back unchanged.

Usage::

    python tools/normalise_chapters.py           # rewrite book/*.md in place (``make export``)
    python tools/normalise_chapters.py --check   # exit 1, naming the chapters that would change
                                                 # (``make check-sync``)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import jupytext
from jupytext.config import load_jupytext_config

ROOT = Path(__file__).resolve().parents[1]
FORMAT = "md:myst"
# what the front matter keeps of jupytext's metadata: the format, not the versions
NOTEBOOK_METADATA_FILTER = (
    "-jupytext.text_representation.jupytext_version,"
    "-jupytext.text_representation.format_version"
)
# the display name of ipykernel's "python3" kernel (ipykernel >= 6), which JupyterLab
# writes into the notebook when it starts the kernel
KERNEL_DISPLAY_NAME = "Python 3 (ipykernel)"


def is_notebook(text: str) -> bool:
    """A chapter with jupytext front matter (the pages without one are plain MyST)."""
    return text.startswith("---\n") and "format_name: myst" in text.split("\n---", 1)[0]


def normalised(text: str, config) -> str:
    """The text of a notebook chapter as jupytext writes it, with the project's front matter."""
    nb = jupytext.reads(text, fmt=FORMAT, config=config)
    jt = nb.metadata.get("jupytext", {})
    jt["notebook_metadata_filter"] = NOTEBOOK_METADATA_FILTER
    nb.metadata["jupytext"] = dict(sorted(jt.items()))
    if "kernelspec" in nb.metadata:
        nb.metadata["kernelspec"]["display_name"] = KERNEL_DISPLAY_NAME
    return jupytext.writes(nb, fmt=FORMAT, config=config)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--check",
        action="store_true",
        help="change nothing; exit 1 if a chapter is not in canonical form",
    )
    parser.add_argument(
        "chapters",
        nargs="*",
        type=Path,
        help="chapters to normalise (default: book/*.md)",
    )
    args = parser.parse_args(argv)
    chapters = args.chapters or sorted((ROOT / "book").glob("*.md"))
    stale = []
    for path in chapters:
        config = load_jupytext_config(str(path.resolve().parent))
        text = path.read_text(encoding="utf-8")
        if not is_notebook(text):
            continue
        new = normalised(text, config)
        if new != text:
            stale.append(path)
            if not args.check:
                path.write_text(new, encoding="utf-8")
    verb = (
        "not as jupytext writes it (run `make export`)" if args.check else "rewritten"
    )
    for path in stale:
        print(f"{path}: {verb}")
    print(
        f"normalise-chapters: {len(chapters)} pages, {len(stale)} {verb.split(' (')[0]}"
    )
    return 1 if (args.check and stale) else 0


if __name__ == "__main__":
    sys.exit(main())
