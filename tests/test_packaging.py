"""environment.yml and pyproject.toml list the same dependencies; the README's commands exist."""

import re
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


def normalise(spec: str) -> tuple[str, str]:
    """Split 'name>=1.0,<2' into ('name', '>=1.0,<2') with the name normalised."""
    spec = spec.replace(" ", "")
    match = re.match(r"([A-Za-z0-9_.\-]+)(.*)", spec)
    name, version = match.group(1), match.group(2)
    return re.sub(r"[-_.]+", "-", name).lower(), version


def test_environment_and_pyproject_list_the_same_dependencies():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    from_pyproject = [
        *project["dependencies"],
        *project["optional-dependencies"]["dev"],
    ]
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    from_env = []
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            from_env += [d for d in dep["pip"] if not d.startswith("-e")]
        elif not re.match(r"(python|pip)\b", dep):
            from_env.append(dep)
    assert sorted(map(normalise, from_pyproject)) == sorted(map(normalise, from_env))


def test_jupyter_book_is_pinned_below_2():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = [
        d
        for d in project["optional-dependencies"]["dev"]
        if d.startswith("jupyter-book")
    ]
    assert pins and "<2" in pins[0]


def test_readme_quick_start_commands_are_make_targets():
    readme = (ROOT / "README.md").read_text()
    makefile = (ROOT / "Makefile").read_text()
    for target in ["book", "test"]:
        assert f"make {target}" in readme
        assert re.search(rf"^{target}:", makefile, re.M)
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_bibliography_parses_and_has_every_cited_key():
    import re

    pybtex = pytest.importorskip("pybtex.database")
    bib = pybtex.parse_file(str(ROOT / "references.bib"), bib_format="bibtex")
    cited = set()
    for chapter in (ROOT / "book").glob("*.md"):
        for keys in re.findall(r"\{cite(?::[a-z]+)?\}`([^`]+)`", chapter.read_text()):
            cited.update(k.strip() for k in keys.split(","))
    assert cited and cited <= set(bib.entries), sorted(cited - set(bib.entries))
