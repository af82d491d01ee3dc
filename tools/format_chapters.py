"""Format the chapters' code cells to the book's column with ruff.

The rendered book shows 88 characters of code at 1280 px and wider (``_static/column.css``);
a longer line needs horizontal scrolling. ``ruff format`` (its settings in ``pyproject.toml``:
line length 88, quotes as written) lays out every code cell of every chapter, and a line it
cannot shorten (a long string or comment) is reported, for the author to split by hand.

Usage::

    python tools/format_chapters.py           # format the cells in place (``make export``)
    python tools/format_chapters.py --check   # exit 1 naming each cell that would change
                                              # and each line over the limit
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^```\{code-cell\}")


def line_length(root: Path = ROOT) -> int:
    with open(root / "pyproject.toml", "rb") as fh:
        return int(tomllib.load(fh)["tool"]["ruff"]["line-length"])


def code_cells(lines: list[str]):
    """Yield (first, end) line indices of each code cell's source (options excluded)."""
    i = 0
    while i < len(lines):
        if FENCE.match(lines[i]):
            j = i + 1
            if j < len(lines) and lines[j].strip() == "---":  # a YAML options block
                j = lines.index("---\n", j + 1) + 1
            while j < len(lines) and lines[j].startswith(":"):  # short options
                j += 1
            if j > i + 1 and j < len(lines) and not lines[j].strip():  # the blank line
                j += 1  # jupytext writes after options (not part of the source)
            end = j
            while not lines[end].startswith("```"):
                end += 1
            yield j, end
            i = end + 1
        else:
            i += 1


def ruff_format(source: str, ruff: str) -> str | None:
    """The source formatted by ruff, or None if ruff cannot parse it (IPython magics)."""
    if not source.strip() or re.search(r"^\s*[%!]", source, re.M):
        return None
    run = subprocess.run(
        [ruff, "format", "--quiet", "--stdin-filename", "cell.py", "-"],
        input=source,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    return run.stdout if run.returncode == 0 else None


def _name(chapter: Path) -> str:
    return (
        str(chapter.relative_to(ROOT)) if chapter.is_relative_to(ROOT) else str(chapter)
    )


def process(chapter: Path, ruff: str, limit: int, check: bool) -> list[str]:
    text = chapter.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    findings, out, last = [], [], 0
    for number, (first, end) in enumerate(code_cells(lines), start=1):
        source = "".join(lines[first:end])
        formatted = ruff_format(source, ruff)
        if formatted is not None and formatted.strip("\n") != source.strip("\n"):
            findings.append(
                f"{_name(chapter)}: code cell {number} is not formatted "
                "(run `make export`)"
            )
            new = formatted.strip("\n") + "\n"
        else:
            new = source
        for k, line in enumerate(new.splitlines(), start=1):
            if len(line) > limit:
                findings.append(
                    f"{_name(chapter)}: code cell {number}, line {k}: "
                    f"{len(line)} characters > {limit}: {line.strip()[:50]!r}"
                )
        out.append("".join(lines[last:first]) + new)
        last = end
    out.append("".join(lines[last:]))
    new_text = "".join(out)
    if not check and new_text != text:
        chapter.write_text(new_text, encoding="utf-8")
    return findings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="report, do not write")
    parser.add_argument("chapters", nargs="*", type=Path)
    args = parser.parse_args()
    ruff = str(Path(sys.executable).with_name("ruff"))
    limit = line_length()
    chapters = args.chapters or sorted((ROOT / "book").glob("*.md"))
    findings = []
    for chapter in chapters:
        findings += process(chapter.resolve(), ruff, limit, args.check)
    if not args.check:
        findings = [f for f in findings if "not formatted" not in f]
    for f in findings:
        print(f)
    print(f"format-chapters: {len(chapters)} chapters, {len(findings)} finding(s)")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
