"""tools/check_html.py on synthetic pages: each defect is found, and nothing on the same
page without it."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import check_html  # noqa: E402

PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>
<section id="intro"><h1>Intro</h1><a name="old-anchor"></a>
<span id="eq-a&amp;b"></span>
{body}
</section></body></html>"""


def site_with(tmp_path, body, other=""):
    (tmp_path / "index.html").write_text(PAGE.format(body=body), encoding="utf-8")
    (tmp_path / "other.html").write_text(PAGE.format(body=other), encoding="utf-8")
    return check_html.check_site(tmp_path)


@pytest.mark.parametrize(
    "href", ["#intro", "#old-anchor", "#eq-a&b", "other.html#intro", "other.html"]
)
def test_links_to_existing_anchors_pass(tmp_path, href):
    assert site_with(tmp_path, f'<a href="{href}">x</a>') == []


@pytest.mark.parametrize(
    "href, message",
    [
        ("#nowhere", "missing anchor"),
        ("other.html#nowhere", "missing anchor"),
        ("missing.html", "broken link"),
    ],
)
def test_broken_links_and_anchors_are_found(tmp_path, href, message):
    found = site_with(tmp_path, f'<a href="{href}">x</a>')
    assert len(found) == 1 and message in found[0]


def test_long_output_line_and_unrendered_table_are_found(tmp_path):
    body = (
        '<div class="cell_output"><pre>' + "x" * 120 + "\n| a | b |\n|---|---|\n"
        "| 1 | 2 |</pre></div>"
    )
    found = site_with(tmp_path, body)
    assert any("output line of 120" in f for f in found)
    assert any("Markdown table" in f for f in found)
