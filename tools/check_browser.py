"""Open every page of the built book in headless Chromium with the network cut off.

``make check-browser`` runs this on ``_build/html``.  Every request that leaves the build
folder is refused, which is what a reader without an internet connection gets.  A page
fails on:

* a formula that MathJax did not render, or rendered as an error (``mjx-merror``);
* an image that did not load (``naturalWidth == 0``);
* a JavaScript error (an uncaught exception or a ``console.error`` message);

and, laid out at each ``--width`` (1280 px by default; the viewport is 900 px high), on
what a reader sees go wrong:

* ``code-scroll``: code (a cell's source, or any other code block) that needs horizontal
  scrolling (``pre.scrollWidth > pre.clientWidth + 1``); collapsed cells (``hide-input``)
  are opened for this, since a reader who opens one sees the same;
* ``output-scroll``: a cell output that needs horizontal scrolling;
* ``math-wide``: a display equation wider than its column (``div.math`` or its MathJax
  container scrolls);
* ``table-wide``: a table wider than the block that holds it;
* ``raw-tex``: TeX left in visible text: a ``\\command`` or a ``$...$`` span in the text of
  a paragraph, list item, heading, table cell or link, outside formulas, code and scripts
  (the text nodes of a block are joined first, so that ``$a_i$`` whose ``_i`` Markdown
  took for emphasis is still found);
* ``stderr``: a visible stderr box (myst-nb's ``div.output.stderr``: a warning or progress
  message the chapter let through);
* ``figure-text``: text in a figure smaller than 9 CSS px as the figure is shown.

The HTML does not know the size of the text in a figure's PNG, so ``figure-text`` derives
it, for the PNGs that matplotlib wrote (a ``Software: Matplotlib`` text chunk; other
images are not checked):

* the dpi is the PNG's own (its ``pHYs`` chunk, which matplotlib writes from the ``dpi``
  it saved at); without one, matplotlib-inline's default, which is matplotlib's
  ``figure.dpi`` (100), since matplotlib-inline (>= 0.1.4) overrides no rc setting;
* the smallest text, in points, is the smallest of matplotlib's default text size (10 pt
  ``font.size``, which tick labels, legends and axis labels use unless told otherwise:
  the book sets no rc parameters) and every size the cell that drew the figure sets
  literally (``fontsize=7``, ``labelsize="small"``, ``title_fontsize=8``; a named size is
  scaled as matplotlib scales it).  A size computed in the code, or set in a module the
  cell calls, is not seen;
* text of ``pt`` points is ``pt * dpi / 72`` pixels in the PNG, and shown at
  ``displayed width / naturalWidth`` of that; the check fails below 9 px, i.e. a figure
  must be shown at a scale of at least ``9 / (pt * dpi / 72)``.

Chromium is Debian's package (``apt-get install -y chromium``); the browser is driven
through Playwright's Python package, told to use that executable rather than download
its own.  One browser and one context serve every page, opened in sequence.

Usage::

    python tools/check_browser.py [_build/html] [--chromium /usr/bin/chromium]
        [--width 1280 [--width 1920 ...]] [--page book/13_ep.html ...] [--skip-if-unavailable]
        [--changed-only]

``--changed-only`` (what ``make book`` uses) opens only the pages that changed since they
last passed: a page that passes is recorded in ``_build/html/.browser-checked.json`` with
the hash of its content, the widths, and a fingerprint of the contents of the site's
``_static`` folder (a changed style sheet changes every page); a page with findings is not
recorded, so it is checked again next time.  Hashes, not modification times: Sphinx
rewrites pages and copies ``_static`` on every build.
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import re
import struct
import sys
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit

ROOT = Path(__file__).resolve().parents[1]
SKIP = {"genindex.html", "search.html", "py-modindex.html"}
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
WIDTHS = [1280]
HEIGHT = 900  # one "screen"
MIN_FIGURE_TEXT_PX = 9.0

# matplotlib's defaults (matplotlib.rcParams["font.size"] and font_manager.font_scalings)
MPL_FONT_PT = 10.0
MPL_DPI = 100.0
MPL_SCALINGS = {
    "xx-small": 0.579,
    "x-small": 0.694,
    "small": 0.833,
    "medium": 1.0,
    "large": 1.200,
    "x-large": 1.440,
    "xx-large": 1.728,
    "larger": 1.2,
    "smaller": 0.833,
}
# a text size set literally: fontsize=8, labelsize="small", title_fontsize=7, {"size": 8}
# (a bare ``size=`` is numpy's far more often than matplotlib's, so it is not read)
FONT_SIZE_ARG = re.compile(
    r"""(?:\b(?:fontsize|labelsize|title_fontsize)\s*=|["'](?:size|fontsize)["']\s*:)\s*"""
    r"""(?:(\d+(?:\.\d+)?)|["']([a-z-]+)["'])"""
)

KINDS = [
    "mathjax",
    "image",
    "javascript",
    "offline",
    "code-scroll",
    "output-scroll",
    "math-wide",
    "table-wide",
    "raw-tex",
    "stderr",
    "figure-text",
]

# After MathJax's startup promise settles: how many formulas the page has in its source
# (Sphinx wraps them in span.math / div.math), how many MathJax rendered, how many of
# those are errors, and which images have no pixels.
PROBE = """async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    await MathJax.startup.promise;
  }
  const source = document.querySelectorAll('span.math, div.math').length;
  const rendered = document.querySelectorAll('mjx-container').length;
  const errors = [...document.querySelectorAll('mjx-merror')].map(e => e.textContent);
  const broken = [...document.images].filter(i => i.complete && i.naturalWidth === 0)
                                      .map(i => i.getAttribute('src'));
  const raw = [...document.querySelectorAll('span.math, div.math')]
      .filter(e => !e.querySelector('mjx-container')).length;
  return {source, rendered, errors, broken, raw, mathjax: !!window.MathJax};
}"""

# What the reader sees at the current viewport (call after PROBE, so MathJax is done).
# Collapsed <details> (hide-input cells) are opened for the scroll checks and closed again.
LAYOUT = r"""() => {
  const root = document.querySelector('main') || document.body;
  const visible = e => e.checkVisibility
      ? e.checkVisibility({visibilityProperty: true, opacityProperty: true})
      : e.getClientRects().length > 0;
  const line = e => ((e.textContent || '').split('\n').find(l => l.trim()) || '')
      .trim().slice(0, 70);
  const over = e => e.scrollWidth > e.clientWidth + 1;
  const r = {code: [], output: [], math: [], table: [], tex: [], stderr: [], images: []};

  const closed = [...root.querySelectorAll('details:not([open])')];
  closed.forEach(d => { d.open = true; });
  // a details just opened fades its content in (sphinx-togglebutton's animation starts at
  // opacity 0), so inside one only whether the element is laid out counts
  const opened = e => closed.some(d => d.contains(e));
  root.querySelectorAll('article pre').forEach(p => {
    const shown = opened(p) ? p.getClientRects().length > 0 : visible(p);
    if (!shown || !over(p)) return;
    const item = {text: line(p), scroll: p.scrollWidth, client: p.clientWidth,
                  cell: !!p.closest('.cell_input')};
    (p.closest('.cell_output, .output') ? r.output : r.code).push(item);
  });
  closed.forEach(d => { d.open = false; });

  // each formula's TeX, for the report (MathJax keeps it on its math items)
  const texOf = new Map();
  const doc = window.MathJax && MathJax.startup && MathJax.startup.document;
  if (doc && doc.math) for (const item of doc.math) texOf.set(item.typesetRoot, item.math);
  root.querySelectorAll('article div.math').forEach(d => {
    if (!visible(d)) return;
    // MathJax's container scrolls inside the div (its clientWidth leaves room for the
    // equation number); either scrolling, or the formula wider than its box, is a defect
    const c = d.querySelector('mjx-container');
    const m = c && c.querySelector('mjx-math');
    const box = c || d;
    const content = Math.max(box.scrollWidth, m ? m.getBoundingClientRect().width : 0);
    const column = box.clientWidth;
    if (over(d) || content > column + 1) {
      const tex = (texOf.get(c) || '').replace(/\s+/g, ' ').trim().slice(0, 60);
      r.math.push({text: (d.id ? d.id + ': ' : '') + tex, scroll: Math.round(content),
                   client: column});
    }
  });

  root.querySelectorAll('article table').forEach(t => {
    if (!visible(t)) return;
    const box = t.parentElement;
    const width = Math.max(t.scrollWidth, t.getBoundingClientRect().width);
    if (width > box.clientWidth + 1) {
      const row = t.querySelector('tr');
      const text = row ? [...row.cells].map(c => c.textContent.trim()).join(' | ') : line(t);
      r.table.push({text: text.slice(0, 70), scroll: Math.round(width),
                    client: box.clientWidth});
    }
  });

  const skip = 'mjx-container, pre, code, kbd, samp, script, style, .math, .highlight, ' +
               '.headerlink, textarea';
  const block = 'p, li, dt, dd, td, th, h1, h2, h3, h4, h5, h6, caption, figcaption, ' +
                'blockquote, div, section, article, nav, main';
  const texts = new Map();
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let n; (n = walker.nextNode());) {
    const el = n.parentElement;
    if (!el || el.closest(skip) || !visible(el)) continue;
    const b = el.closest(block) || root;
    texts.set(b, (texts.get(b) || '') + n.textContent);
  }
  const tex = /\\[A-Za-z]{2,}|\$[^\s$](?:[^$]*[^\s$])?\$/;
  for (const [b, s] of texts) {
    const m = s.match(tex);
    if (m) {
      const at = Math.max(0, m.index - 25);
      r.tex.push({text: s.slice(at, m.index + m[0].length + 25).replace(/\s+/g, ' ').trim()});
    }
  }

  root.querySelectorAll('.output.stderr').forEach(e => {
    if (visible(e)) r.stderr.push({text: line(e)});
  });

  root.querySelectorAll('article img').forEach(i => {
    if (!i.complete || !i.naturalWidth || !visible(i)) return;
    const cell = i.closest('.cell');
    const src = cell && cell.querySelector('.cell_input');
    r.images.push({src: i.currentSrc || i.src, attr: i.getAttribute('src'),
                   natural: i.naturalWidth, shown: i.getBoundingClientRect().width,
                   code: src ? src.textContent : ''});
  });
  return r;
}"""


def png_info(path: Path) -> dict | None:
    """Width, dpi (from ``pHYs``; None without one) and software of a PNG, or None."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    info = {"dpi": None, "software": ""}
    i = 8
    while i + 8 <= len(data):
        (n,) = struct.unpack(">I", data[i : i + 4])
        kind, body = data[i + 4 : i + 8], data[i + 8 : i + 8 + n]
        if kind == b"IHDR":
            info["width"], info["height"] = struct.unpack(">II", body[:8])
        elif kind == b"pHYs" and len(body) == 9:
            x, _, unit = struct.unpack(">IIB", body)
            if unit == 1 and x:  # pixels per metre
                info["dpi"] = x * 0.0254
        elif kind == b"tEXt":
            key, _, value = body.partition(b"\0")
            if key == b"Software":
                info["software"] = value.decode("latin-1")
        elif kind in (b"IDAT", b"IEND"):
            break
        i += 12 + n
    return info


def smallest_font_pt(code: str) -> float:
    """The smallest text size, in points, a matplotlib figure drawn by ``code`` has: the
    default (10 pt) or a smaller size the code sets literally."""
    sizes = [MPL_FONT_PT]
    for number, name in FONT_SIZE_ARG.findall(code):
        if number:
            sizes.append(float(number))
        elif name in MPL_SCALINGS:
            sizes.append(MPL_FONT_PT * MPL_SCALINGS[name])
    return min(sizes)


def figure_text(image: dict, page: Path) -> str | None:
    """A finding if the smallest text of a matplotlib figure is shown below 9 px."""
    parts = urlsplit(image["src"])
    path = (
        Path(unquote(parts.path))
        if parts.scheme == "file"
        else (page.parent / unquote(urlsplit(image["attr"]).path))
    )
    info = png_info(path)
    if info is None or not info["software"].startswith("Matplotlib"):
        return None
    dpi = info["dpi"] or MPL_DPI
    pt = smallest_font_pt(image["code"])
    scale = image["shown"] / image["natural"]
    px = pt * dpi / 72 * scale
    if px >= MIN_FIGURE_TEXT_PX:
        return None
    need = MIN_FIGURE_TEXT_PX / (pt * dpi / 72)
    widest = pt * image["shown"] / (72 * MIN_FIGURE_TEXT_PX)
    return (
        f"figure text {px:.2f} px < {MIN_FIGURE_TEXT_PX:g} px: {path.name[:16]}... "
        f"({image['natural']} px at {dpi:.0f} dpi, smallest text {pt:g} pt) shown "
        f"{image['shown']:.0f} px wide, scale {scale:.2f} < {need:.2f}: save it at most "
        f"{widest:.1f} in wide"
    )


def layout_findings(result: dict, page: Path) -> list[tuple[str, str]]:
    """(kind, message) for what LAYOUT found on a page."""
    out = []
    for key, kind, what in (
        ("code", "code-scroll", "code needs horizontal scrolling"),
        ("output", "output-scroll", "output needs horizontal scrolling"),
        ("math", "math-wide", "display equation wider than its column"),
        ("table", "table-wide", "table wider than its column"),
    ):
        out += [
            (kind, f"{what} ({e['scroll']} > {e['client']} px): {e['text']!r}")
            for e in result[key]
        ]
    out += [
        ("raw-tex", f"raw TeX in visible text: {e['text']!r}") for e in result["tex"]
    ]
    out += [
        ("stderr", f"visible stderr output: {e['text']!r}") for e in result["stderr"]
    ]
    for image in result["images"]:
        message = figure_text(image, page)
        if message:
            out.append(("figure-text", message))
    return out


def _is_redirect(path: Path) -> bool:
    """A page that only forwards to another (the root index.html Jupyter Book writes)."""
    return (
        re.search(r'http-equiv="refresh"', path.read_text(encoding="utf-8"), re.I)
        is not None
    )


def book_pages(site: Path) -> list[Path]:
    return sorted(
        p
        for p in site.rglob("*.html")
        if p.name not in SKIP
        and "_static" not in p.parts
        and "_sources" not in p.parts
        and not _is_redirect(p)
    )


def check(
    site: Path,
    chromium: str,
    timeout: float,
    widths: list[int] | None = None,
    pages: list[Path] | None = None,
) -> tuple[int, int, list[tuple[str, str, str]]]:
    """Open the pages; returns (pages, formulas rendered, [(page, kind, message)])."""
    from playwright.sync_api import sync_playwright

    widths = widths or WIDTHS
    pages = pages if pages is not None else book_pages(site)
    findings: list[tuple[str, str, str]] = []
    formulas = 0
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=chromium, args=FLAGS, headless=True
        )
        context = browser.new_context(viewport={"width": widths[0], "height": HEIGHT})
        blocked: list[str] = []

        def route(r):
            if r.request.url.startswith("file://"):
                r.continue_()
            else:
                blocked.append(r.request.url)
                r.abort()

        context.route("**/*", route)
        for path in pages:
            rel = (
                str(path.relative_to(site)) if path.is_relative_to(site) else path.name
            )
            page = context.new_page()
            errors: list[str] = []
            page.on(
                "pageerror",
                lambda exc, errors=errors: errors.append(f"exception: {exc}"),
            )
            page.on(
                "console",
                lambda msg, errors=errors: (
                    errors.append(f"console: {msg.text}")
                    if msg.type == "error"
                    else None
                ),
            )
            blocked.clear()
            page.goto(path.as_uri(), wait_until="load", timeout=timeout * 1000)
            result = page.evaluate(PROBE)
            formulas += result["rendered"]
            if result["source"] and not result["mathjax"]:
                findings.append(
                    (
                        rel,
                        "mathjax",
                        f"{result['source']} formulas but MathJax did not load",
                    )
                )
            if result["raw"]:
                findings.append(
                    (
                        rel,
                        "mathjax",
                        f"{result['raw']} of {result['source']} formulas not rendered",
                    )
                )
            findings += [
                (rel, "mathjax", f"MathJax error: {e[:100]}") for e in result["errors"]
            ]
            findings += [
                (rel, "image", f"image did not load: {src}") for src in result["broken"]
            ]
            for width in widths:
                if width != page.viewport_size["width"]:
                    page.set_viewport_size({"width": width, "height": HEIGHT})
                tag = f"{rel} @{width}" if len(widths) > 1 else rel
                findings += [
                    (tag, kind, message)
                    for kind, message in layout_findings(page.evaluate(LAYOUT), path)
                ]
            # a refused request to another host is reported by Chromium as a console
            # error; those are what an offline reader would see fail, so they count
            findings += [(rel, "javascript", e[:160]) for e in errors]
            findings += [
                (rel, "offline", f"request to another host: {u[:120]}") for u in blocked
            ]
            page.close()
        browser.close()
    return len(pages), formulas, findings


RECORD = ".browser-checked.json"


def _stamp(path: Path) -> str:
    """The page's content hash: Sphinx rewrites pages (and copies _static) on every
    build, so a modification time says nothing about what changed."""
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def _static_fingerprint(site: Path) -> str:
    import hashlib

    h = hashlib.sha256()
    static = site / "_static"
    if static.is_dir():
        for f in sorted(static.rglob("*")):
            if f.is_file():
                h.update(f"{f.relative_to(static)}:{_stamp(f)}".encode())
    return h.hexdigest()


def read_record(site: Path, widths: list[int], static: str) -> dict:
    """The pages that passed, {rel: stamp}, if recorded with these widths and this
    fingerprint of _static."""
    import json

    try:
        data = json.loads((site / RECORD).read_text())
    except (OSError, ValueError):
        return {}
    if data.get("widths") != widths or data.get("static") != static:
        return {}
    return data.get("pages", {})


def write_record(site: Path, widths: list[int], static: str, passed: dict) -> None:
    import json

    (site / RECORD).write_text(
        json.dumps({"widths": widths, "static": static, "pages": passed}, indent=0)
    )


def unavailable(chromium: str) -> str | None:
    """Why the browser check cannot run here, or None."""
    if not Path(chromium).exists():
        return f"{chromium} not found (Debian: apt-get install -y chromium)"
    if importlib.util.find_spec("playwright") is None:
        return "Playwright is not installed (pip install -e '.[browser]')"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", nargs="?", default=str(ROOT / "_build" / "html"))
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per page")
    parser.add_argument(
        "--width",
        type=int,
        action="append",
        help=f"viewport width in px; repeat for several (default {WIDTHS[0]})",
    )
    parser.add_argument(
        "--page",
        action="append",
        default=[],
        help="check only this page (relative to the site); repeatable",
    )
    parser.add_argument(
        "--skip-if-unavailable",
        action="store_true",
        help="exit 0 with a message when Chromium, Playwright or the "
        "built book is missing",
    )
    parser.add_argument(
        "--changed-only",
        action="store_true",
        help=f"open only pages changed since they last passed ({RECORD})",
    )
    args = parser.parse_args(argv)
    site = Path(args.site).resolve()
    missing = unavailable(args.chromium)
    if missing is None and not (site / "index.html").exists():
        missing = f"{site} holds no built book (no index.html); run `make book` first"
    if missing:
        print(
            f"browser check {'skipped' if args.skip_if_unavailable else 'cannot run'}: "
            f"{missing}"
        )
        return 0 if args.skip_if_unavailable else 2
    start = time.perf_counter()
    pages = [site / p for p in args.page] if args.page else None
    widths = args.width or WIDTHS
    unchanged = 0
    if args.changed_only:
        static = _static_fingerprint(site)
        record = read_record(site, widths, static)
        stamps = {
            str(p.relative_to(site)): _stamp(p)
            for p in (pages if pages is not None else book_pages(site))
        }
        pages = [
            site / rel for rel, stamp in stamps.items() if record.get(rel) != stamp
        ]
        unchanged = len(stamps) - len(pages)
    n_pages, formulas, findings = check(
        site, args.chromium, args.timeout, widths, pages
    )
    if args.changed_only:
        failed = {rel for rel, _, _ in findings}
        for p in pages:
            rel = str(p.relative_to(site))
            if rel in failed:
                record.pop(rel, None)
            else:
                record[rel] = stamps[rel]
        write_record(site, widths, static, record)
    for rel, kind, message in findings:
        print(f"{rel}: [{kind}] {message}")
    counts = collections.Counter(kind for _, kind, _ in findings)
    if counts:
        print(
            "findings by kind: "
            + ", ".join(f"{k} {counts[k]}" for k in KINDS if counts[k])
        )
    skipped = f" ({unchanged} unchanged pages not opened again)" if unchanged else ""
    print(
        f"browser check: {n_pages} pages at {', '.join(map(str, widths))} px{skipped}, "
        f"{formulas} formulas rendered, {len(findings)} finding(s), "
        f"{time.perf_counter() - start:.0f} s"
    )
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
