"""Source-level checks of the chapters for markup that renders as raw TeX.

``make check-source`` runs this on ``book/*.md`` (no build, no browser) and fails on:

* ``list-in-math``: a prose line that begins with a list marker (``+ ``, ``- ``, ``* ``,
  ``1. ``, ``1) ``) while an inline ``$...$`` opened on an earlier line of the same
  paragraph is still open.  Markdown finds the blocks of a page before it looks inside
  them, so the line starts a list, the paragraph ends there, the formula is cut in two
  and both halves show their TeX.  A line that starts a block quote (``> ``) or a heading
  (``# ``) does the same and is reported too.  The fix is to move the operator to the end
  of the previous line, or to rewrap;
* ``math-heading-ref``: a cross-reference with no text of its own (``{ref}`label` ``,
  ``[](#label)``) to a heading that contains math.  Sphinx writes the heading's text as
  the link text, and the text of a formula is its TeX source, so the reader sees
  ``inverting \\mathbf K``.  The fix is an explicit text: ``{ref}`text <label>` ``;
* ``math-env``: a display formula (``$$ ... $$`` or a ``{math}`` block) whose
  ``\\begin{...}`` and ``\\end{...}`` do not pair up.  MathJax then shows an error in
  place of the formula (``\\begin{gathered} ended with \\end{split}``: Sphinx wraps a
  formula with line breaks in ``split``, and an unclosed environment meets that ``end``);
* ``code-wide``: a line longer than 88 characters in a fenced code block of the prose
  (```` ```python ````, ```` ```text ````: the examples and commands; code cells are laid
  out by ``tools/format_chapters.py``).  The column holds 88 characters at 1280 px, so a
  longer line needs horizontal scrolling.

Prose is every line outside the front matter, fenced code (``{code-cell}``, ``{math}``,
any fence that is not a directive with a Markdown body), display math (``$$ ... $$``,
``\\begin{...} ... \\end{...}``) and MyST comments (``% ...``).  Inside a paragraph, code
spans (backticks, which also hold roles such as ``{math}`...` ``) and escaped dollars
(``\\$``) are skipped.

Usage::

    python tools/check_source.py [book/*.md ...]
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

FENCE = re.compile(r"^(\s*)(`{3,}|~{3,}|:{3,})\s*(.*)$")
# directives whose body is not Markdown; the body of any other directive is prose
CODE_DIRECTIVES = {
    "code-cell",
    "code-block",
    "code",
    "sourcecode",
    "math",
    "eval-rst",
    "raw",
    "literalinclude",
    "bibliography",
    "toctree",
    "mermaid",
    "graphviz",
    "csv-table",
    "include",
    "jupyter-execute",
}
LABEL = re.compile(r"^\s*\(([^()\s]+)\)=\s*$")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
# block starts that interrupt a paragraph (CommonMark: a bullet item with content, an
# ordered item only if it starts at 1, a block quote, an ATX heading)
INTERRUPT = [
    ("list marker", re.compile(r"^([ \t]*)([-+*]|1[.)])[ \t]+\S")),
    ("block quote", re.compile(r"^([ \t]{0,3})>")),
    ("heading", re.compile(r"^([ \t]{0,3})#{1,6}(?:[ \t]|$)")),
]
LIST_ITEM = re.compile(r"^([ \t]*)([-+*]|\d{1,9}[.)])([ \t]+)")
REF_ROLE = re.compile(r"\{ref\}`([^`<>]+)`")
EMPTY_LINK = re.compile(r"\[\]\(([^)\s]*)#([^)\s]+)\)")


@dataclass
class Finding:
    path: Path
    line: int
    kind: str
    message: str

    def __str__(self) -> str:
        try:
            shown = self.path.relative_to(ROOT)
        except ValueError:
            shown = self.path
        return f"{shown}:{self.line}: [{self.kind}] {self.message}"


def _indent(text: str) -> int:
    return len(text.expandtabs(4)) - len(text.expandtabs(4).lstrip(" "))


def _closes(line: str, char: str, length: int) -> bool:
    """Whether ``line`` closes a fence opened with ``length`` times ``char`` (CommonMark: the
    same character, at least as many, and nothing after them)."""
    m = FENCE.match(line)
    return (
        bool(m)
        and m.group(2)[0] == char
        and len(m.group(2)) >= length
        and not m.group(3)
    )


def prose_lines(lines: list[str]):
    """Yield (index, line) for every line of Markdown prose, and (index, None) for a line
    that ends a paragraph (blank, a fence, display math, a cell break)."""
    i = 0
    n = len(lines)
    if lines and lines[0].strip() == "---":  # front matter
        i = 1
        while i < n and lines[i].strip() != "---":
            i += 1
        i += 1
    fences: list[tuple[str, int, bool]] = []  # (char, length, body is prose)
    while i < n:
        line = lines[i]
        stripped = line.strip()
        fence = FENCE.match(line)
        inside_code = bool(fences) and not fences[-1][2]
        if fences and _closes(line, fences[-1][0], fences[-1][1]):
            fences.pop()
            yield i, None
            i += 1
            continue
        if inside_code:
            i += 1
            continue
        if fence and not (fence.group(2)[0] == "`" and "`" in fence.group(3)):
            info = fence.group(3)
            directive = re.match(r"\{([\w:.-]+)\}", info)
            prose = bool(directive) and directive.group(1) not in CODE_DIRECTIVES
            fences.append((fence.group(2)[0], len(fence.group(2)), prose))
            yield i, None
            i += 1
            if prose:  # the directive's options: ``:key: value`` lines or a YAML block
                if i < n and lines[i].strip() == "---":
                    i += 1
                    while i < n and lines[i].strip() != "---":
                        i += 1
                    i += 1
                while i < n and re.match(r"^\s*:[\w-]+:", lines[i]):
                    i += 1
            continue
        if stripped.startswith("$$"):  # a display-math block
            rest = stripped[2:]
            if "$$" not in rest:
                i += 1
                while i < n and "$$" not in lines[i]:
                    i += 1
            yield i, None
            i += 1
            continue
        begin = re.match(r"^\s*\\begin\{([^}]+)\}", line)
        if begin:  # an amsmath environment at the top level
            end = f"\\end{{{begin.group(1)}}}"
            while i < n and end not in lines[i]:
                i += 1
            yield i, None
            i += 1
            continue
        if not stripped or stripped.startswith("+++"):
            yield i, None
        elif stripped.startswith("%") or LABEL.match(line):
            pass  # a comment or a target: not part of the paragraph, and does not end it
        else:
            yield i, line
        i += 1


def _scan_inline(line: str, state: dict) -> None:
    """Advance the inline state (open ``$``, open code span) over one line."""
    j = 0
    while j < len(line):
        c = line[j]
        if state["code"]:
            if c == "`":
                k = j
                while k < len(line) and line[k] == "`":
                    k += 1
                if k - j == state["code"]:
                    state["code"] = 0
                j = k
                continue
            j += 1
            continue
        if c == "\\":
            j += 2
            continue
        if c == "`" and not state["math"]:
            k = j
            while k < len(line) and line[k] == "`":
                k += 1
            state["code"] = k - j
            j = k
            continue
        if c == "$":
            k = j
            while k < len(line) and line[k] == "$":
                k += 1
            run = k - j
            if not state["math"]:
                state["math"] = "$" * min(run, 2)
                state["opened"] = True
            elif run >= len(state["math"]):
                state["math"] = ""
            j = k
            continue
        j += 1


def check_list_in_math(path: Path, lines: list[str]) -> list[Finding]:
    findings = []
    state = {"math": "", "code": 0}
    base = None  # indent of the paragraph's content
    opened = 0
    for i, line in prose_lines(lines):
        if line is None:
            state = {"math": "", "code": 0}
            base = None
            continue
        if base is None:  # the first line of a paragraph
            item = LIST_ITEM.match(line)
            base = len(item.group(0).expandtabs(4)) if item else _indent(line)
        elif state["math"] and not state["code"]:
            for kind, pattern in INTERRUPT:
                m = pattern.match(line)
                if m and _indent(m.group(1)) < base + 4:
                    findings.append(
                        Finding(
                            path,
                            i + 1,
                            "list-in-math",
                            f"line starts a {kind} inside the inline math opened on line "
                            f"{opened + 1}: {line.strip()[:60]!r}",
                        )
                    )
                    # Markdown closes the paragraph here: start afresh, as it does
                    state = {"math": "", "code": 0}
                    item = LIST_ITEM.match(line)
                    base = len(item.group(0).expandtabs(4)) if item else _indent(line)
                    break
        state["opened"] = False
        _scan_inline(line, state)
        if state["math"] and state["opened"]:
            opened = i
    return findings


def heading_labels(lines: list[str]) -> dict[str, str]:
    """label -> heading text, for every ``(label)=`` directly above a heading."""
    found = {}
    pending = None
    for line in lines:
        label = LABEL.match(line)
        if label:
            pending = label.group(1)
            continue
        if not line.strip():
            continue
        heading = HEADING.match(line)
        if pending and heading:
            found[pending] = heading.group(2)
        pending = None
    return found


def has_math(text: str) -> bool:
    return bool(re.search(r"\$[^$]+\$|\{math\}`|\\\(", text))


def check_refs(
    path: Path, lines: list[str], labels: dict[str, tuple[Path, str]]
) -> list[Finding]:
    findings = []
    for i, line in prose_lines(lines):
        if line is None:
            continue
        targets = [m.group(1).strip() for m in REF_ROLE.finditer(line)]
        targets += [m.group(2) for m in EMPTY_LINK.finditer(line)]
        for target in targets:
            if target in labels and has_math(labels[target][1]):
                where, heading = labels[target]
                findings.append(
                    Finding(
                        path,
                        i + 1,
                        "math-heading-ref",
                        f"link to {target!r} has no text of its own and its heading has math, "
                        f"so the link shows TeX: {heading!r} ({where.name}); write "
                        f"{{ref}}`text <{target}>`",
                    )
                )
    return findings


ENV = re.compile(r"\\(begin|end)\{([^}]+)\}")


def display_math_blocks(lines: list[str]):
    """Yield (first line index, text) of every display formula: ``$$ ... $$`` blocks and
    the bodies of ``{math}`` fences."""
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        fence = FENCE.match(line)
        if fence and fence.group(3).startswith(("{math}", "{code-cell}")):
            char, length = fence.group(2)[0], len(fence.group(2))
            j = i + 1
            while j < n and not _closes(lines[j], char, length):
                j += 1
            if fence.group(3).startswith("{math}"):
                body = [
                    ln for ln in lines[i + 1 : j] if not re.match(r"^\s*:[\w-]+:", ln)
                ]
                yield i, "\n".join(body)
            i = j + 1
            continue
        stripped = line.strip()
        if stripped.startswith("$$"):
            rest = stripped[2:]
            if "$$" in rest:
                yield i, rest.split("$$")[0]
                i += 1
                continue
            j = i + 1
            while j < n and "$$" not in lines[j]:
                j += 1
            last = [lines[j].split("$$")[0]] if j < n else []
            yield i, "\n".join([rest] + lines[i + 1 : j] + last)
            i = j + 1
            continue
        i += 1


def check_math_envs(path: Path, lines: list[str]) -> list[Finding]:
    findings = []
    for i, text in display_math_blocks(lines):
        stack: list[str] = []
        problem = None
        for m in ENV.finditer(text):
            if m.group(1) == "begin":
                stack.append(m.group(2))
            elif not stack:
                problem = f"\\end{{{m.group(2)}}} with no \\begin"
                break
            elif stack[-1] != m.group(2):
                problem = f"\\begin{{{stack[-1]}}} ended by \\end{{{m.group(2)}}}"
                break
            else:
                stack.pop()
        if problem is None and stack:
            problem = f"\\begin{{{stack[-1]}}} is never ended"
        if problem:
            findings.append(
                Finding(
                    path,
                    i + 1,
                    "math-env",
                    f"display formula: {problem}; MathJax shows an error",
                )
            )
    return findings


CODE_WIDTH = 88


def check_code_blocks(path: Path, lines: list[str]) -> list[Finding]:
    findings = []
    fence = None  # (char, length) of the open code block that is checked
    skip = None  # (char, length) of an open fence that is not (a cell, math, ...)
    for i, line in enumerate(lines):
        m = FENCE.match(line)
        if fence or skip:
            if _closes(line, *(fence or skip)):
                fence = skip = None
            elif fence and len(line) > CODE_WIDTH:
                findings.append(
                    Finding(
                        path,
                        i + 1,
                        "code-wide",
                        f"a code line of {len(line)} characters (the column holds "
                        f"{CODE_WIDTH}): {line.strip()[:60]!r}",
                    )
                )
            continue
        if m and m.group(2)[0] in "`~":
            info = m.group(3)
            if info.startswith("{"):
                directive = re.match(r"\{([\w:.-]+)\}", info)
                if directive and directive.group(1) in (
                    "code-block",
                    "code",
                    "sourcecode",
                ):
                    fence = (m.group(2)[0], len(m.group(2)))
                elif directive and directive.group(1) in CODE_DIRECTIVES:
                    skip = (m.group(2)[0], len(m.group(2)))
            else:
                fence = (m.group(2)[0], len(m.group(2)))
    return findings


def check_files(paths: list[Path]) -> list[Finding]:
    texts = {p: p.read_text(encoding="utf-8").splitlines() for p in paths}
    labels: dict[str, tuple[Path, str]] = {}
    for p, lines in texts.items():
        labels.update({k: (p, v) for k, v in heading_labels(lines).items()})
    findings = []
    for p, lines in texts.items():
        findings += check_list_in_math(p, lines)
        findings += check_refs(p, lines, labels)
        findings += check_math_envs(p, lines)
        findings += check_code_blocks(p, lines)
    return findings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path)
    args = parser.parse_args(argv)
    files = args.files or sorted((ROOT / "book").glob("*.md"))
    findings = check_files([f.resolve() for f in files])
    for f in findings:
        print(f)
    kinds = {}
    for f in findings:
        kinds[f.kind] = kinds.get(f.kind, 0) + 1
    detail = "".join(f", {k} {v}" for k, v in sorted(kinds.items()))
    print(f"source check: {len(files)} files, {len(findings)} finding(s){detail}")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
