"""Measure what a reader sees on each chapter page of the built book (a report, not a test).

Opens every chapter page (``book/NN_*.html``; ``--all`` for every page under ``book/``)
in headless Chromium, offline, at ``--width`` (1280 px) with a viewport 900 px high, one
"screen", and prints one line per page and a TOTAL line:

* ``code``: code cells whose source needs horizontal scrolling / code cells (collapsed
  ``hide-input`` cells are opened to be measured, as for the browser check);
* ``out``: cell outputs that need horizontal scrolling;
* ``math``: display equations wider than their column;
* ``table``: tables wider than their column;
* ``tex``: blocks of visible text (paragraph, list item, heading, link...) with raw TeX;
* ``screens``: the page's height in screens (scrollHeight / 900);
* ``code%``: the share of the page's height taken by code cells' sources (the sum of the
  heights of ``.cell_input``, collapsed ones counting 0, over the page's height);
* ``long``: code cells shown open (not ``hide-input``) whose source has more than 40
  lines;
* ``1st out``: where the first cell output starts, in screens (its top / 900; 0.0-1.0 is
  the first screen).

The first five are the browser check's own definitions (``tools/check_browser.py``
``LAYOUT``), so the numbers here are the check's counts.  Heights are those of the page as
it opens (collapsed cells collapsed).

Usage::

    python tools/measure_pages.py [_build/html] [--width 1280] [--all] [PAGE.html ...]
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check_browser import FLAGS, HEIGHT, LAYOUT, PROBE  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

HEIGHTS = """(screen) => {
  const page = document.documentElement.scrollHeight;
  // a collapsed cell's source keeps its layout size inside the closed <details>
  // (Chromium), though the reader does not see it: it counts 0
  const code = [...document.querySelectorAll('.cell_input')]
      .filter(e => !e.closest('details:not([open])'))
      .reduce((s, e) => s + e.getBoundingClientRect().height, 0);
  const first = [...document.querySelectorAll('.cell_output')]
      .find(e => e.getBoundingClientRect().height > 0);
  const top = first ? first.getBoundingClientRect().top + window.scrollY : null;
  const long = [...document.querySelectorAll('.cell:not(.tag_hide-input) .cell_input pre')]
      .filter(e => e.textContent.trimEnd().split(String.fromCharCode(10)).length > 40).length;
  return {cells: document.querySelectorAll('.cell_input').length, page, code, long,
          first: top === null ? null : top / screen};
}"""


def measure(site: Path, pages: list[Path], width: int, chromium: str) -> list[dict]:
    from playwright.sync_api import sync_playwright

    rows = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=chromium, args=FLAGS, headless=True
        )
        context = browser.new_context(viewport={"width": width, "height": HEIGHT})
        context.route(
            "**/*",
            lambda r: (
                r.continue_() if r.request.url.startswith("file://") else r.abort()
            ),
        )
        for path in pages:
            page = context.new_page()
            page.goto(path.as_uri(), wait_until="load")
            page.evaluate(PROBE)  # waits for MathJax
            layout = page.evaluate(LAYOUT)
            heights = page.evaluate(HEIGHTS, HEIGHT)
            page.close()
            rows.append(
                {
                    "page": path.name,
                    "code": sum(e["cell"] for e in layout["code"]),
                    "cells": heights["cells"],
                    "out": len(layout["output"]),
                    "math": len(layout["math"]),
                    "table": len(layout["table"]),
                    "tex": len(layout["tex"]),
                    "height": heights["page"],
                    "code_height": heights["code"],
                    "long": heights["long"],
                    "first": heights["first"],
                }
            )
        browser.close()
    return rows


def report(rows: list[dict], width: int) -> str:
    head = (
        f"{'page (' + str(width) + ' px)':32s} {'code':>9s} {'out':>4s} {'math':>4s} "
        f"{'table':>5s} {'tex':>4s} {'screens':>7s} {'code%':>6s} {'long':>4s} "
        f"{'1st out':>7s}"
    )
    lines = [head]

    def line(name, r, first):
        return (
            f"{name:32s} {str(r['code']) + '/' + str(r['cells']):>9s} {r['out']:4d} "
            f"{r['math']:4d} {r['table']:5d} {r['tex']:4d} {r['height'] / HEIGHT:7.1f} "
            f"{100 * r['code_height'] / max(r['height'], 1):5.1f}% {r['long']:4d} "
            f"{first:>7s}"
        )

    for r in rows:
        lines.append(
            line(r["page"], r, "-" if r["first"] is None else f"{r['first']:.1f}")
        )
    total = {
        k: sum(r[k] for r in rows)
        for k in (
            "code",
            "cells",
            "out",
            "math",
            "table",
            "tex",
            "height",
            "code_height",
            "long",
        )
    }
    firsts = sorted(r["first"] for r in rows if r["first"] is not None)
    mean = f"{sum(firsts) / len(firsts):.1f}" if firsts else "-"
    summary = (
        f"  (1st out: mean; median {firsts[len(firsts) // 2]:.1f}, "
        f"max {firsts[-1]:.1f})"
        if firsts
        else ""
    )
    lines.append(line(f"TOTAL ({len(rows)} pages)", total, mean) + summary)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", nargs="?", default=str(ROOT / "_build" / "html"))
    parser.add_argument(
        "pages", nargs="*", help="page names under book/ (default: chapters)"
    )
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--all", action="store_true", help="every page under book/")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args(argv)
    site = Path(args.site).resolve()
    if args.pages:
        pages = [site / "book" / p for p in args.pages]
    else:
        pages = sorted(
            p
            for p in (site / "book").glob("*.html")
            if args.all or re.match(r"\d\d_", p.name)
        )
    start = time.perf_counter()
    rows = measure(site, pages, args.width, args.chromium)
    print(report(rows, args.width))
    print(f"({time.perf_counter() - start:.0f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
