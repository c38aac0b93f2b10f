"""The printed edition (``--builder pdflatex``): what the LaTeX builder needs that the HTML
builder does not. Every hook here acts only when the builder's format is ``latex``, so the
HTML pages are untouched.

- ``bbm.sty``: jupyterBook.cls requires it (only texlive-fonts-extra ships it, 509 MB); a
  stand-in in ``_ext/latex/`` maps ``\\mathbbm`` to ``\\mathbb``.
- Interactive outputs (a live panel, a slider panel) print as the image their output carries
  (:mod:`scansnap.printed`); the note in that PNG (what the online edition does) is printed
  under it, after the words :data:`NOTE_PREFIX`, which tools/pdf_check.py counts.
- pandas tables (``text/html`` outputs, chosen over their text repr by the LaTeX mime priority
  in _config.yml) become real tables: booktabs rules, numbers right-aligned with true minus
  signs, ``$...$`` in a header typeset. Any other HTML output is an error: on paper it would
  silently vanish.
- Displays that carry the paper's equation number (``\\tag{N}``): Sphinx wraps a display in
  ``equation*`` + ``split``, where amsmath refuses ``\\tag``; the tag moves outside ``split``.
"""
from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

from docutils import nodes
from sphinx import addnodes
from sphinx.util import logging
from sphinx.transforms.post_transforms import SphinxPostTransform

HERE = Path(__file__).parent
logger = logging.getLogger(__name__)
NUMBER = re.compile(r"^[-+]?(\d[\d,]*\.?\d*|\.\d+)([eE][-+]?\d+)?%?$|^[-+]?(inf|nan)$")
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


NOTE_PREFIX = "Printed panel:"


class PanelNotes(SphinxPostTransform):
    """Under each image whose PNG carries :data:`scansnap.printed.NOTE_KEY`, its note."""
    default_priority = 200
    formats = ("latex",)

    def run(self, **kwargs) -> None:
        from scansnap.printed import note_of

        for img in list(self.document.findall(nodes.image)):
            rel = img.get("candidates", {}).get("*") or img["uri"]
            path = Path(self.app.srcdir) / rel
            if path.suffix.lower() != ".png" or not path.is_file():
                continue
            note = note_of(path)
            if not note:
                continue
            para = nodes.paragraph("", "", nodes.emphasis("", NOTE_PREFIX + " "), nodes.Text(note),
                                   classes=["printed-panel-note"])
            img.parent.insert(img.parent.index(img) + 1, para)


class _Table(HTMLParser):
    """A pandas ``to_html`` table: header and body rows of (text, is_header, rowspan, colspan)."""

    def __init__(self):
        super().__init__()
        self.head, self.body, self.part, self.cell, self.tables = [], [], None, None, 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self.tables += 1
        elif tag in ("thead", "tbody"):
            self.part = self.head if tag == "thead" else self.body
        elif tag == "tr" and self.part is not None:
            self.part.append([])
        elif tag in ("th", "td") and self.part is not None:
            self.cell = [tag == "th", int(a.get("rowspan", 1)), int(a.get("colspan", 1)), ""]

    def handle_endtag(self, tag):
        if tag in ("th", "td") and self.cell is not None:
            self.part[-1].append((" ".join(self.cell[3].split()), *self.cell[:3]))
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell[3] += data


def _merge_header(head, levels):
    """pandas' two header rows (column names; index names) as one, when they fit together."""
    if len(head) == 2 and len(head[0]) == len(head[1]) and all(c[0] == "" for c in head[0][:levels]) \
            and all(c[0] == "" for c in head[1][levels:]) and all(c[3] == 1 for c in head[0]):
        return [head[1][:levels] + head[0][levels:]]
    return head


def _cell_nodes(text):
    """A cell's text as inline nodes: $...$ typeset, a number's minus sign a true minus."""
    if NUMBER.match(text.replace("\u2212", "-")):
        return [nodes.Text(re.sub(r"(^|e|E)-", lambda m: m.group(1) + "\u2212", text))]
    out = []
    for i, part in enumerate(re.split(r"\$([^$]+)\$", text)):
        if part:
            out.append(nodes.math(part, part) if i % 2 else nodes.Text(part))
    return out


def dataframe_table(html: str):
    """(tabular column spec, docutils table) for a pandas HTML table, or None if it is not one."""
    p = _Table()
    p.feed(html)
    if p.tables != 1 or not p.body:
        return None
    levels = sum(1 for c in p.body[0] if c[1])          # index columns: the <th> of a body row
    head = _merge_header(p.head, levels)
    ncols = sum(c[3] for c in (head[0] if head else p.body[0]))
    numeric = []
    for j in range(ncols):
        col = [r[j][0] for r in p.body if len(r) == ncols and r[j][0]]
        numeric.append(j >= levels and bool(col) and all(NUMBER.match(x) for x in col))
    table = nodes.table(classes=["dataframe", "booktabs"])
    group = nodes.tgroup(cols=ncols)
    table += group
    for _ in range(ncols):
        group += nodes.colspec(colwidth=1)

    def rows(src, into):
        for r in src:
            row = nodes.row()
            for text, is_th, rowspan, colspan in r:
                entry = nodes.entry()
                if rowspan > 1:
                    entry["morerows"] = rowspan - 1
                if colspan > 1:
                    entry["morecols"] = colspan - 1
                para = nodes.paragraph()
                para.extend(_cell_nodes(text))
                entry += para
                row += entry
            into += row

    if head:
        thead = nodes.thead()
        rows(head, thead)
        group += thead
    tbody = nodes.tbody()
    rows(p.body, tbody)
    group += tbody
    spec = "".join("r" if n else "l" for n in numeric)
    return spec, table


class HtmlOutputs(SphinxPostTransform):
    """A cell's HTML output on paper: a pandas table becomes a table; anything else is an error."""
    default_priority = 200
    formats = ("latex",)

    def run(self, **kwargs) -> None:
        for raw in list(self.document.findall(nodes.raw)):
            if "html" not in raw.get("format", "").split() or "text_html" not in raw.get("classes", []):
                continue
            made = dataframe_table(raw.astext()) if 'class="dataframe' in raw.astext() else None
            if made is None:
                logger.warning("an HTML output with no printed form (not a pandas table, no image): "
                               f"{raw.astext()[:120]!r}", location=raw)
                continue
            spec, table = made
            raw.replace_self([addnodes.tabular_col_spec(spec=spec), table])


def _builder_inited(app) -> None:
    if not _is_latex(app):
        return
    extra = [str(HERE / "latex" / "bbm.sty")]
    app.config.latex_additional_files = list(app.config.latex_additional_files or []) + extra


def setup(app):
    app.add_post_transform(TagOutsideSplit)
    app.add_post_transform(PanelNotes)
    app.add_post_transform(HtmlOutputs)
    app.connect("builder-inited", _builder_inited)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
