"""tools/check_source.py finds, in synthetic chapters, each defect it is for, and nothing in
the same text without the defect."""

import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import check_source  # noqa: E402

FRONT = """\
---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
---

"""


def findings(tmp_path, *texts):
    paths = []
    for n, text in enumerate(texts):
        path = tmp_path / f"{n:02d}_chapter.md"
        path.write_text(FRONT + textwrap.dedent(text), encoding="utf-8")
        paths.append(path)
    return check_source.check_files(paths)


@pytest.mark.parametrize("marker", ["+ ", "- ", "* ", "1. ", "1) ", "> "])
def test_a_block_marker_inside_open_inline_math_is_found(tmp_path, marker):
    found = findings(
        tmp_path,
        f"""\
        The posterior covariance is $\\boldsymbol\\Sigma = (\\mathbf K^{{-1}}
        {marker}\\mathbf T)^{{-1}}$, and its derivative follows.
        """,
    )
    assert [(f.kind, f.line) for f in found] == [("list-in-math", 9)]
    assert "opened on line 8" in found[0].message


def test_a_marker_inside_a_list_item_paragraph_is_found(tmp_path):
    found = findings(
        tmp_path,
        """\
        * the variance is $a
          + b$ in the item
        """,
    )
    assert [f.kind for f in found] == ["list-in-math"]


@pytest.mark.parametrize(
    "text",
    [
        # the operator at the end of the line: nothing starts a line
        "The covariance is $(\\mathbf K^{-1} +\n\\mathbf T)^{-1}$ here.\n",
        # math closed before the line
        "We have $a = b$ and\n- a list after the paragraph\n",
        # a new paragraph: the blank line ends the paragraph and any open math with it
        "An unclosed $a\n\n- a list\n",
        # an ordered list that does not start at 1 cannot interrupt a paragraph
        "The count $n = 3\n2. x$ stays.\n",
        # an escaped dollar opens nothing; nor does one in a code span or a role
        "It costs \\$5 and\n- a list\n",
        "Code `x = $a` then\n- a list\n",
        "A role {math}`a` and ``a ` $`` then\n- a list\n",
        # deeper than a list can start: a continuation line
        "A sum $a\n    + b$ indented.\n",
        # display math and code cells are not prose
        "$$\na\n+ b\n$$ (eq-x)\n",
        "```{code-cell} ipython3\ns = '$a'\n- 1\n```\n",
        "```{math}\n:label: eq-y\na $b\n+ c\n```\n",
    ],
)
def test_no_finding_without_the_defect(tmp_path, text):
    assert findings(tmp_path, text) == []


def test_a_dollar_in_a_code_cell_leaves_no_math_open(tmp_path):
    found = findings(
        tmp_path,
        """\
        ```{code-cell} ipython3
        print("$x")
        ```

        Then a line
        - list
        """,
    )
    assert found == []


def test_a_textless_ref_to_a_heading_with_math_is_found(tmp_path):
    found = findings(
        tmp_path,
        """\
        (sec-invert)=
        ## Computing the Gaussian without inverting $\\mathbf K$

        (sec-plain)=
        ## A plain heading
        """,
        """\
        As in {ref}`sec-invert`, and in [](#sec-invert).
        Fine: {ref}`the Gaussian <sec-invert>`, [the Gaussian](#sec-invert),
        and {ref}`sec-plain`, [](#sec-plain).
        """,
    )
    assert [(f.kind, f.path.name, f.line) for f in found] == [
        ("math-heading-ref", "01_chapter.md", 8)
    ] * 2
    assert "\\mathbf K" in found[0].message


def test_a_ref_in_a_code_cell_is_not_prose(tmp_path):
    found = findings(
        tmp_path,
        """\
        (sec-m)=
        # Heading with $M$

        ```{code-cell} ipython3
        # see {ref}`sec-m`
        ```
        """,
    )
    assert found == []


def test_main_lists_findings_and_fails(tmp_path, capsys):
    path = tmp_path / "bad.md"
    path.write_text("The sum $a\n+ b$.\n", encoding="utf-8")
    assert check_source.main([str(path)]) == 1
    out = capsys.readouterr().out
    assert "bad.md:2: [list-in-math]" in out
    assert "1 finding(s), list-in-math 1" in out
    path.write_text("The sum $a +\nb$.\n", encoding="utf-8")
    assert check_source.main([str(path)]) == 0


@pytest.mark.parametrize(
    "body, problem",
    [
        ("$$\n\\begin{gathered}\na \\\\\nb\n$$", "never ended"),
        ("$$\na \\\\\nb\n\\end{gathered}\n$$ (eq-x)", "with no \\begin"),
        (
            "```{math}\n:label: eq-y\n\\begin{aligned}\na &= b\n\\end{gathered}\n```",
            "ended by \\end{gathered}",
        ),
    ],
)
def test_an_unpaired_environment_in_display_math_is_found(tmp_path, body, problem):
    found = findings(tmp_path, "Text before.\n\n" + body + "\n\nText after.\n")
    assert [(f.kind, f.line) for f in found] == [("math-env", 10)]
    assert problem in found[0].message


@pytest.mark.parametrize(
    "body",
    [
        "$$\n\\begin{gathered}\na \\\\\nb\n\\end{gathered}\n$$ (eq-x)",
        "$$ \\begin{aligned} a &= b \\end{aligned} $$",
        "```{math}\n:label: eq-y\n\\begin{aligned}\na &= b\n\\end{aligned}\n```",
        # an environment named in a code cell is not a formula
        "```{code-cell} ipython3\ns = r'\\begin{gathered}'\n```",
    ],
)
def test_paired_environments_pass(tmp_path, body):
    assert findings(tmp_path, "Text before.\n\n" + body + "\n\nText after.\n") == []


def test_a_long_line_in_a_prose_code_block_is_found(tmp_path):
    long = "x = 1  # " + "a" * 85
    found = findings(
        tmp_path, f"Text.\n\n```python\n{long}\n```\n\n```text\nshort\n```\n"
    )
    assert [(f.kind, f.line) for f in found] == [("code-wide", 11)]


@pytest.mark.parametrize("fence", ["```{code-cell} ipython3", "```{math}"])
def test_code_cells_and_math_are_not_prose_code_blocks(tmp_path, fence):
    long = "x = 1  # " + "a" * 85
    assert findings(tmp_path, f"Text.\n\n{fence}\n{long}\n```\n") == []
