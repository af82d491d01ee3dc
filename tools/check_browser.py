"""Open every page of the built book in headless Chromium with the network cut off.

``make check-browser`` (not part of ``make test``) runs this on ``_build/html``.  Every
request that leaves the build folder is refused, which is what a reader without an
internet connection gets.  A page fails on:

* a formula that MathJax did not render, or rendered as an error (``mjx-merror``);
* an image that did not load (``naturalWidth == 0``);
* a JavaScript error (an uncaught exception or a ``console.error`` message).

Chromium is Debian's package (``apt-get install -y chromium``); the browser is driven
through Playwright's Python package, told to use that executable rather than download
its own.

Usage::

    python tools/check_browser.py [_build/html] [--chromium /usr/bin/chromium]
"""
from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SKIP = {"genindex.html", "search.html", "py-modindex.html"}
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]

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


def _is_redirect(path: Path) -> bool:
    """A page that only forwards to another (the root index.html Jupyter Book writes)."""
    return re.search(r'http-equiv="refresh"', path.read_text(encoding="utf-8"), re.I) is not None


def check(site: Path, chromium: str, timeout: float) -> tuple[int, int, list[str]]:
    from playwright.sync_api import sync_playwright

    pages = sorted(p for p in site.rglob("*.html")
                   if p.name not in SKIP and "_static" not in p.parts
                   and "_sources" not in p.parts and not _is_redirect(p))
    findings: list[str] = []
    formulas = 0
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=FLAGS, headless=True)
        context = browser.new_context()
        blocked: list[str] = []

        def route(r):
            if r.request.url.startswith("file://"):
                r.continue_()
            else:
                blocked.append(r.request.url)
                r.abort()

        context.route("**/*", route)
        for path in pages:
            rel = path.relative_to(site)
            page = context.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda exc, errors=errors: errors.append(f"exception: {exc}"))
            page.on("console", lambda msg, errors=errors: errors.append(f"console: {msg.text}")
                    if msg.type == "error" else None)
            blocked.clear()
            page.goto(path.as_uri(), wait_until="load", timeout=timeout * 1000)
            result = page.evaluate(PROBE)
            formulas += result["rendered"]
            if result["source"] and not result["mathjax"]:
                findings.append(f"{rel}: {result['source']} formulas but MathJax did not load")
            if result["raw"]:
                findings.append(f"{rel}: {result['raw']} of {result['source']} formulas "
                                f"not rendered")
            findings += [f"{rel}: MathJax error: {e[:100]}" for e in result["errors"]]
            findings += [f"{rel}: image did not load: {src}" for src in result["broken"]]
            # a refused request to another host is reported by Chromium as a console
            # error; those are what an offline reader would see fail, so they count
            findings += [f"{rel}: {e[:160]}" for e in errors]
            findings += [f"{rel}: request to another host: {u[:120]}" for u in blocked]
            page.close()
        browser.close()
    return len(pages), formulas, findings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", nargs="?", default=str(ROOT / "_build" / "html"))
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per page")
    args = parser.parse_args(argv)
    site = Path(args.site).resolve()
    if not (site / "index.html").exists():
        print(f"{site} holds no built book (no index.html); run `make book` first")
        return 2
    start = time.perf_counter()
    n_pages, formulas, findings = check(site, args.chromium, args.timeout)
    for line in findings:
        print(line)
    print(f"browser check: {n_pages} pages, {formulas} formulas rendered, "
          f"{len(findings)} error(s), {time.perf_counter() - start:.0f} s")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
