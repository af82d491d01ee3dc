"""Opening a chapter in JupyterLab and saving it without edits leaves its .md byte-identical.

JupyterLab reads and writes the chapters through jupytext's contents manager (the server
extension of jupytext).  Each test gets a page of ``book/`` from that contents manager as a
notebook, changes the notebook as JupyterLab does when it opens one (the model travels as
JSON, the kernel's ``language_info`` is added, the ``kernelspec`` is reset when it differs
from the running kernel's), saves it back and compares the bytes.  The pages are copied,
with the project's ``jupytext.toml``, into a temporary directory, so nothing in the
repository is written.  If a page fails, ``make export`` (``tools/normalise_chapters.py``)
puts it in the form jupytext writes.
"""

import asyncio
import json
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted(p.name for p in (ROOT / "book").glob("*.md"))

pytest.importorskip("jupyter_server")
jupytext_cm = pytest.importorskip("jupytext.async_contentsmanager")
from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager  # noqa: E402

sys.path.insert(0, str(ROOT / "tools"))
from normalise_chapters import KERNEL_DISPLAY_NAME, is_notebook  # noqa: E402

# what ipykernel's "python3" kernel reports when JupyterLab starts it
LANGUAGE_INFO = {
    "codemirror_mode": {"name": "ipython", "version": 3},
    "file_extension": ".py",
    "mimetype": "text/x-python",
    "name": "python",
    "nbconvert_exporter": "python",
    "pygments_lexer": "ipython3",
    "version": "3.11.7",
}
LAB_KERNELSPEC = {
    "name": "python3",
    "display_name": KERNEL_DISPLAY_NAME,
    "language": "python",
}


@pytest.fixture(scope="module")
def contents_manager(tmp_path_factory):
    """jupytext's contents manager, as the server runs it, on a copy of book/."""
    root = tmp_path_factory.mktemp("lab")
    shutil.copytree(
        ROOT / "book", root / "book", ignore=shutil.ignore_patterns("*.ipynb", "_*")
    )
    shutil.copy(ROOT / "jupytext.toml", root / "jupytext.toml")
    cls = jupytext_cm.build_async_jupytext_contents_manager_class(AsyncLargeFileManager)
    return cls(root_dir=str(root)), root


def open_in_lab(notebook: dict) -> dict:
    """The notebook as JupyterLab sends it back on save, after opening it and starting a kernel."""
    notebook = json.loads(json.dumps(notebook))
    metadata = notebook["metadata"]
    metadata["language_info"] = LANGUAGE_INFO
    # JupyterLab sets the kernelspec (keys in this order) unless it equals the kernel's; a
    # page without one (no front matter) gets it when the user picks a kernel on opening it
    if metadata.get("kernelspec") != LAB_KERNELSPEC:
        metadata["kernelspec"] = dict(LAB_KERNELSPEC)
    return notebook


@pytest.mark.parametrize("page", PAGES)
def test_save_without_edits_leaves_the_page_byte_identical(contents_manager, page):
    cm, root = contents_manager
    path = f"book/{page}"
    before = (root / path).read_bytes()

    async def get_and_save():
        model = await cm.get(path, content=True, type="notebook")
        await cm.save(
            {
                "type": "notebook",
                "format": "json",
                "content": open_in_lab(model["content"]),
            },
            path,
        )

    asyncio.run(get_and_save())
    after = (root / path).read_bytes()
    if after != before:
        import difflib

        diff = "".join(
            difflib.unified_diff(
                before.decode().splitlines(True),
                after.decode().splitlines(True),
                path,
                f"{path} saved from JupyterLab",
                n=1,
            )
        )
        pytest.fail(
            f"saving {path} from JupyterLab rewrites it (`make export` runs "
            f"tools/normalise_chapters.py, which fixes that):\n{diff}"
        )


def test_chapters_name_the_kernel_as_ipykernel_installs_it():
    """JupyterLab rewrites the kernelspec of a chapter whose display name differs."""
    kernel = pytest.importorskip("ipykernel.kernelspec").get_kernel_dict()
    assert kernel["display_name"] == KERNEL_DISPLAY_NAME
    assert kernel["language"] == LAB_KERNELSPEC["language"]
    wrong = [
        page
        for page in PAGES
        if is_notebook(text := (ROOT / "book" / page).read_text())
        and f"\n  display_name: {KERNEL_DISPLAY_NAME}\n"
        not in text.split("\n---", 1)[0]
    ]
    assert not wrong, (
        f"kernelspec.display_name is not {KERNEL_DISPLAY_NAME!r} in {wrong}"
    )
