"""Under each numbered equation, name the code that computes it.

The package's docstrings name the equations they implement (``eq-...`` labels), and the API
page links each name to its equations. This extension adds the reverse link in the chapters:
after a labelled display that some docstring names, a line "Code: `name`, ..." with each name
linked to its entry on the API pages (a method to its own entry, under its class), or, for a
private helper, to the chapter that builds it.
The index comes from ``tools/apidoc.py`` (``equation_code``), so it cannot drift from the
docstrings; a page whose entries change is re-read on the next incremental build.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
from pathlib import Path

from docutils import nodes
from sphinx.addnodes import pending_xref

ROOT = Path(__file__).resolve().parents[1]


@functools.cache
def _apidoc():
    """tools/apidoc.py, loaded once per build."""
    spec = importlib.util.spec_from_file_location(
        "_gpc_apidoc", ROOT / "tools" / "apidoc.py"
    )
    apidoc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(apidoc)
    return apidoc


def _labels_of(docname: str) -> set[str]:
    path = ROOT / f"{docname}.md"
    return _apidoc().chapter_labels(path) if path.exists() else set()


def _fingerprint(index, docname: str) -> str:
    entries = {
        label: index[label] for label in sorted(_labels_of(docname)) if label in index
    }
    return hashlib.sha1(json.dumps(entries).encode()).hexdigest()


def _builder_inited(app):
    app.env.gpc_eqcode_index = _apidoc().equation_code(ROOT)


def _outdated(app, env, added, changed, removed):
    """Pages whose equations' code changed since they were read."""
    index = env.gpc_eqcode_index
    old = getattr(env, "gpc_eqcode_fingerprints", {})
    return [
        doc
        for doc, fp in old.items()
        if doc in env.found_docs
        and doc not in changed
        and _fingerprint(index, doc) != fp
    ]


@functools.cache
def _module_of_chapter() -> dict[str, str]:
    return dict(_apidoc().modules(ROOT))


def _reference(name: str, target: str | None, chapter: str, docname: str) -> nodes.Node:
    literal = nodes.literal(name, name)
    if target is not None:
        # the entry of the name itself on its API page (a method's, not its class's); if
        # autodoc did not document it, the entry of the name or its class (_missing)
        ref = pending_xref(
            "",
            refdomain="py",
            reftype="obj",
            reftarget=f"{_module_of_chapter()[chapter]}.{name}",
            refexplicit=True,
            refwarn=False,
            refdoc=docname,
            gpc_api_label=target,
        )
    else:
        ref = pending_xref(
            "",
            refdomain="std",
            reftype="doc",
            reftarget=f"/book/{chapter}",
            refexplicit=True,
            refwarn=True,
            refdoc=docname,
        )
    ref += literal
    return ref


def _doctree_read(app, doctree):
    env = app.env
    index = env.gpc_eqcode_index
    if not hasattr(env, "gpc_eqcode_fingerprints"):
        env.gpc_eqcode_fingerprints = {}
    env.gpc_eqcode_fingerprints[env.docname] = _fingerprint(index, env.docname)
    for block in list(doctree.findall(nodes.math_block)):
        label = block.get("label")
        if not label or label not in index:
            continue
        para = nodes.paragraph(classes=["eqcode"])
        para += nodes.Text("Code: ")
        for k, (name, target, chapter) in enumerate(index[label]):
            if k:
                para += nodes.Text(", ")
            para += _reference(name, target, chapter, env.docname)
        para += nodes.Text(".")
        block.parent.insert(block.parent.index(block) + 1, para)


def _missing(app, env, node, contnode):
    """A code name the API pages do not document as such: link to its API label."""
    label = node.get("gpc_api_label")
    if not label:
        return None
    return env.get_domain("std").resolve_xref(
        env, node["refdoc"], app.builder, "ref", label, node, contnode
    )


def _purge(app, env, docname):
    getattr(env, "gpc_eqcode_fingerprints", {}).pop(docname, None)


def _merge(app, env, docnames, other):
    env.gpc_eqcode_fingerprints = getattr(env, "gpc_eqcode_fingerprints", {})
    env.gpc_eqcode_fingerprints.update(
        {
            d: fp
            for d, fp in getattr(other, "gpc_eqcode_fingerprints", {}).items()
            if d in docnames
        }
    )


def setup(app):
    app.connect("builder-inited", _builder_inited)
    app.connect("env-get-outdated", _outdated)
    app.connect("doctree-read", _doctree_read)
    app.connect("missing-reference", _missing)
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "env_version": 2}
