"""Keep every page of the book working without a network connection.

Jupyter Book always loads sphinx-thebe, whose configuration script names the thebe bundle
on a CDN and is, with this version of the stack, written into each page twice (the
second declaration is a JavaScript error).  The book has no live-code button
(``launch_buttons.thebe: false``), so this extension drops sphinx-thebe's scripts from
every page.
"""


def _drop_thebe(app, pagename, templatename, context, doctree):
    def is_thebe(script):
        name = str(getattr(script, "filename", None) or script or "")
        body = str(getattr(script, "attributes", {}).get("body", ""))
        return "sphinx-thebe" in name or "THEBE_JS_URL" in body

    if "script_files" in context:
        context["script_files"] = [
            s for s in context["script_files"] if not is_thebe(s)
        ]


def setup(app):
    app.connect("html-page-context", _drop_thebe, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
