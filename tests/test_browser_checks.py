"""Each check of tools/check_browser.py fails on a synthetic page with its defect and passes
on the same page without it.

The pages are laid out like the book's (``main > article``, myst-nb's ``.cell_input`` /
``.cell_output``, Sphinx's ``div.math``) in a 700 px column, with the book's MathJax (the
sphinx-mathjax-offline package) rendering their formulas, and opened by the same code as
``make check-browser`` at 1280 px: one browser for all of them, a few seconds.  Skipped,
with the reason, where Debian's Chromium or Playwright is missing.
"""

import html
import importlib.metadata
import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import check_browser  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
if not Path(CHROMIUM).exists():
    pytest.skip(
        f"browser checks not tested: {CHROMIUM} not found "
        "(Debian: apt-get install -y chromium)",
        allow_module_level=True,
    )
if importlib.util.find_spec("playwright") is None:
    pytest.skip(
        "browser checks not tested: Playwright is not installed "
        "(pip install -e '.[browser]')",
        allow_module_level=True,
    )


def _mathjax() -> Path | None:
    try:
        dist = importlib.metadata.distribution("sphinx-mathjax-offline")
    except importlib.metadata.PackageNotFoundError:
        return None
    for f in dist.files or []:
        if f.name == "tex-chtml.js":
            return Path(dist.locate_file(f))
    return None


TEMPLATE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>synthetic</title>
<style>
  body {{ margin: 0; font: 16px sans-serif; }}
  article {{ width: 700px; margin: 0 auto; }}
  pre {{ overflow-x: auto; font: 14px monospace; margin: 0; }}
  img {{ max-width: 100%; }}
  div.math {{ overflow: hidden; }}
  mjx-container[display="true"] {{ overflow-x: auto; }}
  .pst-scrollable-table-container {{ overflow-x: auto; }}
  /* the book's theme (sphinx-togglebutton) fades in what a details shows when opened */
  details[open] > :not(summary) {{ animation: fade-in 0.3s ease-out; }}
  @keyframes fade-in {{ from {{ opacity: 0; }} to {{ opacity: 1; }} }}
</style>
<script>window.MathJax = {{options: {{processHtmlClass: "math"}}}};</script>
{mathjax}
</head><body class="tex2jax_ignore"><main><article>
{body}
</article></main></body></html>
"""

LONG_CODE = "result = compute(" + ", ".join(f"argument_{i}" for i in range(12)) + ")"
WIDE_TEX = " + ".join(f"\\frac{{a_{{{i}}}}}{{b_{{{i}}}}}" for i in range(40))


def cell(source: str, output: str = "", stderr: str = "", hidden: bool = False) -> str:
    code = (
        f'<div class="cell_input docutils container"><div class="highlight"><pre>'
        f'{html.escape(source)}</pre></div></div>'
    )
    if hidden:
        code = (
            f'<details class="hide above-input"><summary>Show</summary>{code}</details>'
        )
    out = ""
    if output:
        out += (
            f'<div class="output stream highlight-myst-ansi"><div class="highlight"><pre>'
            f'{html.escape(output)}</pre></div></div>'
        )
    if stderr:
        out += (
            f'<div class="output stderr highlight-myst-ansi"><div class="highlight"><pre>'
            f'{html.escape(stderr)}</pre></div></div>'
        )
    if out:
        out = f'<div class="cell_output docutils container">{out}</div>'
    return f'<div class="cell docutils container">{code}{out}</div>'


def figure_cell(png: str, source: str = "fig, ax = plt.subplots()") -> str:
    return (
        f'<div class="cell docutils container"><div class="cell_input docutils container">'
        f'<pre>{html.escape(source)}</pre></div><div class="cell_output docutils '
        f'container"><img alt="" src="{png}"></div></div>'
    )


def table(columns: int, word: str) -> str:
    head = "".join(f"<th>{word}{i}</th>" for i in range(columns))
    row = "".join(f"<td>{word}</td>" for _ in range(columns))
    return (
        f'<div class="pst-scrollable-table-container"><table class="table">'
        f"<thead><tr>{head}</tr></thead><tbody><tr>{row}</tr></tbody></table></div>"
    )


def save_png(path: Path, width_in: float, dpi: float) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(width_in, 3), dpi=dpi)
    ax.plot([0, 1], [0, 1], label="line")
    ax.legend()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path.name


# (page, body with the defect, body without it, the kind the check reports)
def pages(site: Path) -> dict[str, tuple[str, str, str]]:
    pytest.importorskip("matplotlib")
    wide = save_png(site / "wide.png", 14, 100)  # 1400 px shown at 700: scale 0.5
    narrow = save_png(site / "narrow.png", 6, 100)  # 600 px shown at 600: scale 1
    mid = save_png(site / "mid.png", 8, 100)  # 800 px shown at 700: scale 0.875
    low_dpi = save_png(site / "lowdpi.png", 6, 50)  # 300 px at 50 dpi, shown at 300
    return {
        "code": (cell(LONG_CODE), cell("result = compute(a, b)"), "code-scroll"),
        "hidden_code": (
            cell(LONG_CODE, hidden=True),
            cell("x = 1", hidden=True),
            "code-scroll",
        ),
        "output": (
            cell("print(x)", output="value " * 30),
            cell("print(x)", output="value"),
            "output-scroll",
        ),
        "math": (
            f'<div class="math notranslate nohighlight">\\[{WIDE_TEX}\\]</div>',
            '<div class="math notranslate nohighlight">\\[a + b\\]</div>',
            "math-wide",
        ),
        "table": (table(12, "a_rather_long_heading_"), table(3, "short"), "table-wide"),
        # the defect as the book had it: a list marker cut the formula in two
        "tex": (
            (
                "<p>the label is $y = \\operatorname{sgn}(f + b</p><ul><li><p>\\xi)$, "
                "where $f$ is a GP</p></li></ul>"
            ),
            (
                '<p>the label is <span class="math notranslate nohighlight">\\(y = '
                '\\operatorname{sgn}(f + b + \\xi)\\)</span>, in code <code>\\alpha $x$'
                '</code></p>'
            ),
            "raw-tex",
        ),
        # Markdown took ``_i ... _j`` for emphasis: the text is split across elements
        "tex_emphasis": (
            "<p>for $a<em>i + b</em>j$ and</p>",
            "<p>for <em>emphasis</em></p>",
            "raw-tex",
        ),
        "stderr": (
            cell("run()", output="done", stderr="18 of 21 jobs are already done"),
            cell("run()", output="done"),
            "stderr",
        ),
        "figure": (figure_cell(wide), figure_cell(narrow), "figure-text"),
        # the same 8-inch figure passes with default text and fails with a 7 pt legend
        "figure_fontsize": (
            figure_cell(mid, "ax.legend(fontsize=7)"),
            figure_cell(mid, "ax.legend()"),
            "figure-text",
        ),
        # the dpi comes from the PNG: 10 pt at 50 dpi is 6.9 px at full size
        "figure_dpi": (figure_cell(low_dpi), figure_cell(narrow), "figure-text"),
    }


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    site = tmp_path_factory.mktemp("site")
    mathjax = _mathjax()
    script = (
        f'<script defer src="{mathjax.as_uri()}"></script>'
        if mathjax
        else "<script>window.MathJax = {startup: {promise: Promise.resolve()}};</script>"
    )
    cases = pages(site)
    files = []
    for name, (bad, good, _) in cases.items():
        for suffix, body in (("bad", bad), ("good", good)):
            path = site / f"{name}_{suffix}.html"
            # MathJax only where there is math: it takes most of a page's time
            path.write_text(
                TEMPLATE.format(
                    mathjax=script if 'class="math' in body else "", body=body
                ),
                encoding="utf-8",
            )
            files.append(path)
    _, _, found = check_browser.check(site, CHROMIUM, 30, [1280], files)
    by_page = {p.stem: [] for p in files}
    for page, kind, message in found:
        by_page[Path(page).stem].append((kind, message))
    return cases, by_page, mathjax is not None


CASES = [
    "code",
    "hidden_code",
    "output",
    "math",
    "table",
    "tex",
    "tex_emphasis",
    "stderr",
    "figure",
    "figure_fontsize",
    "figure_dpi",
]


@pytest.mark.parametrize("name", CASES)
def test_check_fails_on_the_defect(results, name):
    cases, by_page, mathjax = results
    if name == "math" and not mathjax:
        pytest.skip(
            "sphinx-mathjax-offline is not installed: no MathJax to render with"
        )
    kind = cases[name][2]
    assert {k for k, _ in by_page[f"{name}_bad"]} == {kind}, by_page[f"{name}_bad"]


@pytest.mark.parametrize("name", CASES)
def test_check_passes_without_the_defect(results, name):
    _, by_page, _ = results
    assert by_page[f"{name}_good"] == []


def test_figure_finding_says_how_wide_to_save_it(results):
    _, by_page, _ = results
    ((_, message),) = by_page["figure_bad"]
    # 10 pt at 100 dpi, shown at half size: 6.9 px; 700 px shown allows 10.8 in
    assert "figure text 6.94 px" in message and "scale 0.50" in message
    assert "at most 10.8 in wide" in message


def test_smallest_font_reads_literal_sizes():
    assert check_browser.smallest_font_pt("ax.plot(x)") == 10
    assert check_browser.smallest_font_pt("ax.legend(fontsize=7)") == 7
    assert check_browser.smallest_font_pt(
        'ax.tick_params(labelsize="x-small")'
    ) == pytest.approx(6.94)
    assert check_browser.smallest_font_pt("rng.normal(size=4)") == 10


def test_missing_chromium_is_skipped_with_a_message(capsys, tmp_path):
    args = [str(tmp_path), "--chromium", str(tmp_path / "no-chromium")]
    assert check_browser.main(args + ["--skip-if-unavailable"]) == 0
    assert "browser check skipped" in capsys.readouterr().out
    assert check_browser.main(args) == 2


def test_changed_only_opens_the_pages_written_since_they_passed(capsys, tmp_path):
    site = tmp_path / "html"
    (site / "_static").mkdir(parents=True)
    (site / "_static" / "style.css").write_text("p { color: black; }")

    def write(name, body):
        (site / name).write_text(
            TEMPLATE.format(mathjax="", body=body), encoding="utf-8"
        )

    write("index.html", cell("x = 1"))
    write("page.html", cell(LONG_CODE * 2))
    args = [str(site), "--chromium", CHROMIUM, "--changed-only"]

    def run():
        status = check_browser.main(args)
        out = capsys.readouterr().out
        return status, out.strip().splitlines()[-1]

    status, last = run()
    assert status == 1 and "2 pages" in last and "1 finding" in last
    status, last = run()  # the page that failed is opened again; the other is not
    assert status == 1 and "1 pages" in last and "1 unchanged pages" in last
    write("page.html", cell("y = 2"))
    status, last = run()
    assert status == 0 and "1 pages" in last
    status, last = run()
    assert status == 0 and "0 pages" in last and "2 unchanged pages" in last
    write(
        "index.html", cell("x = 1")
    )  # rewritten as it was, as Sphinx does: not reopened
    (site / "_static" / "style.css").write_text("p { color: black; }")
    status, last = run()
    assert status == 0 and "0 pages" in last
    (site / "_static" / "style.css").write_text("p { color: navy; }")
    status, last = run()  # a changed style sheet changes every page
    assert status == 0 and "2 pages" in last
