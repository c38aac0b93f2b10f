"""The printed edition (``--builder pdflatex``): what the LaTeX builder needs that the HTML
builder does not. Every hook here acts only when the builder's format is ``latex``, so the
HTML pages are untouched.

- ``bbm.sty``: jupyterBook.cls requires it (only texlive-fonts-extra ships it, 509 MB); a
  stand-in in ``_ext/latex/`` maps ``\\mathbbm`` to ``\\mathbb``.
- Displays that carry the paper's equation number (``\\tag{N}``): Sphinx wraps a display in
  ``equation*`` + ``split``, where amsmath refuses ``\\tag``; the tag moves outside ``split``.
"""
from __future__ import annotations

import re
from pathlib import Path

from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform

HERE = Path(__file__).parent
TAG = re.compile(r"\\tag\*?\{([^{}]*)\}")


def _is_latex(app) -> bool:
    return getattr(app.builder, "format", None) == "latex"


class TagOutsideSplit(SphinxPostTransform):
    """``$$ ... \\tag{13} $$`` -> ``\\begin{equation*}\\begin{split}...\\end{split}\\tag{13}\\end{equation*}``."""
    default_priority = 200
    formats = ("latex",)

    def run(self, **kwargs) -> None:
        for node in list(self.document.findall(nodes.math_block)):
            text = node.astext()
            tags = TAG.findall(text)
            if not tags or node.get("nowrap"):
                continue
            if len(tags) > 1:
                raise ValueError(f"a display carries {len(tags)} \\tag commands: {text[:80]!r}")
            body = TAG.sub("", text).strip()
            parts = [p.strip() for p in body.split("\n\n") if p.strip()]
            body = " \\\\\n".join(parts)
            label = f"\\label{{{node['label']}}}" if node.get("label") else ""
            new = nodes.math_block(
                "", f"\\begin{{equation*}}{label}\\begin{{split}}{body}\\end{{split}}\\tag{{{tags[0]}}}\\end{{equation*}}",
                nowrap=True, docname=node.get("docname"), number=None, label=None)
            new.source, new.line = node.source, node.line
            node.replace_self(new)


def _builder_inited(app) -> None:
    if not _is_latex(app):
        return
    extra = [str(HERE / "latex" / "bbm.sty")]
    app.config.latex_additional_files = list(app.config.latex_additional_files or []) + extra


def setup(app):
    app.add_post_transform(TagOutsideSplit)
    app.connect("builder-inited", _builder_inited)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
