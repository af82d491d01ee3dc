"""Static checks of the built book: what a reader would see broken, found before they do.

``make book`` runs this on ``_build/html`` after Jupyter Book has built it and fails on
any finding:

* a Markdown table left in a cell output (``| a | b |`` lines that did not render);
* a line of printed cell output longer than 100 characters (cut off at the page edge);
* a numpy scalar repr in printed output (``np.float64(1.75)``);
* an image whose file does not exist;
* an internal link to a page that does not exist, or to an anchor the page lacks;
* a script or stylesheet loaded from another host (the book must work offline).

Usage::

    python tools/check_html.py [_build/html] [--max-width 100]
"""

from __future__ import annotations

import argparse
import html
import re
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

from bs4 import BeautifulSoup

ROOT = Path(__file__).resolve().parents[1]
TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")
TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
NUMPY_REPR = re.compile(r"\bnp\.(float|int|uint|bool|complex|str)\w*\(")
# pages Sphinx writes for itself, not part of the book's content
SKIP = {"genindex.html", "search.html", "py-modindex.html"}


def _outputs(soup):
    """The printed outputs of code cells (myst-nb's output areas)."""
    return soup.select("div.cell_output pre, div.output pre")


ID_ATTR = re.compile(r"<[a-zA-Z][^>]*?\sid=\"([^\"]*)\"")
NAME_ATTR = re.compile(r"<a\s[^>]*?\bname=\"([^\"]*)\"")


def _ids(path: Path, cache: dict) -> set[str]:
    """The anchors of a page: its id attributes and <a name=...>, read from the HTML text
    (Sphinx quotes attributes with double quotes) rather than by a second full parse of
    the page, which made this check the slowest step of a prose edit's rebuild."""
    if path not in cache:
        text = path.read_text(encoding="utf-8")
        cache[path] = {html.unescape(v) for v in ID_ATTR.findall(text)} | {
            html.unescape(v) for v in NAME_ATTR.findall(text)
        }
    return cache[path]


def check_page(page: Path, site: Path, max_width: int, id_cache: dict) -> list[str]:
    findings = []
    rel = page.relative_to(site)
    soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
    for pre in _outputs(soup):
        lines = pre.get_text().splitlines()
        if any(
            TABLE_RULE.match(a) and TABLE_ROW.match(b) for a, b in zip(lines[1:], lines)
        ):
            findings.append(
                f"{rel}: a Markdown table in a cell output did not render: "
                f"{lines[0][:60]!r}"
            )
        for line in lines:
            if len(line) > max_width:
                findings.append(
                    f"{rel}: output line of {len(line)} characters: {line[:60]!r}..."
                )
            if NUMPY_REPR.search(line):
                findings.append(
                    f"{rel}: numpy scalar repr in output: {line.strip()[:80]!r}"
                )
    for img in soup.find_all("img"):
        src = img.get("src", "")
        if not src or src.startswith("data:"):
            continue
        parts = urlsplit(src)
        if parts.scheme or parts.netloc:
            findings.append(f"{rel}: image loaded from another host: {src}")
        elif not (page.parent / unquote(parts.path)).resolve().exists():
            findings.append(f"{rel}: missing image {src}")
    for tag, attr in (("script", "src"), ("link", "href")):
        for node in soup.find_all(tag):
            url = node.get(attr)
            if not url or (
                tag == "link"
                and "stylesheet" not in (node.get("rel") or [])
                and node.get("as") not in ("script", "style", "font")
            ):
                continue
            parts = urlsplit(url)
            if parts.scheme in ("http", "https") or url.startswith("//"):
                findings.append(f"{rel}: {tag} loaded from another host: {url}")
            elif (
                not parts.scheme
                and parts.path
                and not (page.parent / unquote(parts.path)).resolve().exists()
            ):
                findings.append(f"{rel}: missing {tag} file {url}")
    for a in soup.find_all("a", href=True):
        href = a["href"]
        parts = urlsplit(href)
        if parts.scheme or parts.netloc or href.startswith(("mailto:", "javascript:")):
            continue
        target = (
            page if not parts.path else (page.parent / unquote(parts.path)).resolve()
        )
        if target.is_dir():
            target = target / "index.html"
        if not target.exists():
            findings.append(f"{rel}: broken link {href}")
            continue
        if (
            parts.fragment
            and target.suffix == ".html"
            and unquote(parts.fragment) not in _ids(target, id_cache)
        ):
            findings.append(f"{rel}: link to a missing anchor {href}")
    return findings


def check_site(site: Path, max_width: int = 100) -> list[str]:
    findings: list[str] = []
    id_cache: dict = {}
    for page in sorted(site.rglob("*.html")):
        if page.name in SKIP or "_static" in page.parts or "_sources" in page.parts:
            continue
        findings += check_page(page, site, max_width, id_cache)
    return findings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", nargs="?", default=str(ROOT / "_build" / "html"))
    parser.add_argument("--max-width", type=int, default=100)
    args = parser.parse_args(argv)
    site = Path(args.site)
    if not (site / "index.html").exists():
        print(f"{site} holds no built book (no index.html); run `make book` first")
        return 2
    findings = check_site(site, args.max_width)
    pages = sum(1 for p in site.rglob("*.html") if "_static" not in p.parts)
    for line in findings:
        print(line)
    print(f"HTML check: {pages} pages, {len(findings)} finding(s)")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
