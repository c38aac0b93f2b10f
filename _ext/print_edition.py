"""The printed edition (``--builder pdflatex``): what the LaTeX builder needs that the HTML
builder does not. Every hook here acts only when the builder's format is ``latex``, so the
HTML pages are untouched.

- ``bbm.sty``: jupyterBook.cls requires it (only texlive-fonts-extra ships it, 509 MB); a
  stand-in in ``_ext/latex/`` maps ``\\mathbbm`` to ``\\mathbb``.
- Interactive outputs (a live panel, a slider panel) print as the image their output carries
  (:mod:`scansnap.printed`); the note in that PNG (what the online edition does) is printed
  under it, after the words :data:`NOTE_PREFIX`, which tools/pdf_check.py counts.
- A folded ``<details>`` output prints open: its summary, then its text.
- pandas tables (``text/html`` outputs, chosen over their text repr by the LaTeX mime priority
  in _config.yml) become real tables: booktabs rules, numbers right-aligned with true minus
  signs, ``$...$`` in a header typeset. Any other HTML output is an error: on paper it would
  silently vanish.
- A book's shape: a title page with the edition (the package version and git commit) and the
  online address; the root page as an unnumbered "Introduction" chapter (jupyter-book prints
  it as untitled front matter); chapter titles without the number the HTML titles carry
  (LaTeX numbers chapters itself); each chapter's exercise solutions gathered at its end; no
  execution-status page (it describes the HTML build); figures at most 3/4 of the page tall.
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


def tag_outside_split(text: str, label: str | None = None) -> str | None:
    """The LaTeX of a display carrying ``\\tag{N}``, with the tag outside ``split`` (where amsmath
    allows it); None when the display has no tag. Blank-line-separated parts become rows."""
    tags = TAG.findall(text)
    if not tags:
        return None
    if len(tags) > 1:
        raise ValueError(f"a display carries {len(tags)} \\tag commands: {text[:80]!r}")
    body = " \\\\\n".join(p.strip() for p in TAG.sub("", text).split("\n\n") if p.strip())
    lab = f"\\label{{{label}}}" if label else ""
    return f"\\begin{{equation*}}{lab}\\begin{{split}}{body}\\end{{split}}\\tag{{{tags[0]}}}\\end{{equation*}}"


class TagOutsideSplit(SphinxPostTransform):
    """``$$ ... \\tag{13} $$``: see :func:`tag_outside_split`."""
    default_priority = 200
    formats = ("latex",)

    def run(self, **kwargs) -> None:
        for node in list(self.document.findall(nodes.math_block)):
            if node.get("nowrap"):
                continue
            latex = tag_outside_split(node.astext(), node.get("label"))
            if latex is None:
                continue
            new = nodes.math_block("", latex, nowrap=True, docname=node.get("docname"), number=None, label=None)
            new.source, new.line = node.source, node.line
            node.replace_self(new)


NOTE_PREFIX = "Printed panel:"


SUB = re.compile(r"_\{([^{}]*)\}|_([A-Za-z0-9])")


def note_nodes(note: str) -> list:
    """A note's text as nodes, ``x_{Y}`` and ``x_Y`` as a subscript."""
    out, at = [], 0
    for m in SUB.finditer(note):
        out.append(nodes.Text(note[at:m.start()]))
        out.append(nodes.subscript("", m.group(1) if m.group(1) is not None else m.group(2)))
        at = m.end()
    out.append(nodes.Text(note[at:]))
    return [n for n in out if n.astext()]


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
            para = nodes.paragraph("", "", nodes.emphasis("", NOTE_PREFIX + " "), *note_nodes(note),
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


DETAILS = re.compile(r"^\s*<details[^>]*>\s*<summary>(.*?)</summary>\s*<pre>(.*?)</pre>\s*</details>\s*$", re.S)


def details_nodes(html: str):
    """A folded ``<details><summary>S</summary><pre>P</pre></details>`` output (e.g. chapter 6's
    provenance lines) as printed nodes: S in italics, then P as a literal block; None otherwise."""
    import html as _html

    m = DETAILS.match(html)
    if m is None:
        return None
    summary = _html.unescape(re.sub(r"<[^>]+>", "", m.group(1))).strip()
    body = _html.unescape(m.group(2))
    return [nodes.paragraph("", "", nodes.emphasis("", summary)), nodes.literal_block(body, body)]


class HtmlOutputs(SphinxPostTransform):
    """A cell's HTML output on paper: a pandas table becomes a table; anything else is an error."""
    default_priority = 200
    formats = ("latex",)

    def run(self, **kwargs) -> None:
        for raw in list(self.document.findall(nodes.raw)):
            if "html" not in raw.get("format", "").split() or "text_html" not in raw.get("classes", []):
                continue
            folded = details_nodes(raw.astext())
            if folded is not None:                 # a folded block: on paper, open
                raw.replace_self(folded)
                continue
            made = dataframe_table(raw.astext()) if 'class="dataframe' in raw.astext() else None
            if made is None:
                logger.warning("an HTML output with no printed form (not a pandas table, no image): "
                               f"{raw.astext()[:120]!r}", location=raw)
                continue
            spec, table = made
            # a wide table in a smaller type, so its numbers fit the text width unbroken
            n = len(spec)
            size = "\\scriptsize" if n >= 10 else "\\footnotesize" if n >= 7 else "\\small"
            raw.replace_self([nodes.raw("", "\\begingroup" + size + "\\setlength{\\tabcolsep}{4pt}", format="latex"),
                              addnodes.tabular_col_spec(spec=spec), table,
                              nodes.raw("", "\\endgroup", format="latex")])


NUMBERED = re.compile(r"^\d+[A-Z]?\.\s+")


class BookShape(SphinxPostTransform):
    """Introduction, chapter titles, solutions and pages of the printed book (see the module doc)."""
    default_priority = 800       # after sphinx-jupyterbook-latex's root-document transform (700)
    formats = ("latex",)

    def run(self, **kwargs) -> None:
        from sphinx.util.texescape import escape
        from sphinx_jupyterbook_latex.nodes import RootHeader

        root = self.app.config.root_doc
        for doc in list(self.document.findall(addnodes.start_of_file)):
            if doc["docname"] in DROPPED:
                doc.parent.remove(doc)
        # the root page: an unnumbered chapter, its sub-headings unnumbered sections
        for header in list(self.document.findall(RootHeader)):
            header.replace_self(nodes.raw("", f"\\section*{{{escape(header.astext())}}}\n", format="latex"))
        top = next((s for s in self.document.findall(nodes.section) if s.get("docname") == root), None)
        if top is not None:
            at = 1 if top.children and isinstance(top.children[0], nodes.title) else 0
            top.insert(at, nodes.raw("", "\\chapter*{Introduction}\\addcontentsline{toc}{chapter}{Introduction}"
                                          "\\markboth{Introduction}{Introduction}\n", format="latex"))
        for doc in list(self.document.findall(addnodes.start_of_file)):
            section = next((c for c in doc.children if isinstance(c, nodes.section)), None)
            if section is None:
                continue
            title = section.next_node(nodes.title)
            if title is not None and title.children and isinstance(title.children[0], nodes.Text):
                text = str(title.children[0])
                if NUMBERED.match(text):
                    title.replace(title.children[0], nodes.Text(NUMBERED.sub("", text)))
            self._solutions_to_end(doc, section)

    @staticmethod
    def _solutions_to_end(doc, section) -> None:
        """Move the solutions of this document (not of a sub-page) to the end of its top section.
        Walks down from ``doc`` with each child's actual parent in hand: after
        sphinx-jupyterbook-latex rearranges the tree, ``node.parent`` is not always right."""
        from sphinx_exercise.nodes import solution_node

        found = []

        def walk(node):
            for child in list(node.children):
                if isinstance(child, solution_node):
                    found.append((node, child))
                elif isinstance(child, nodes.Element) and not isinstance(child, addnodes.start_of_file):
                    walk(child)

        walk(doc)
        if not found:
            return
        for parent, sol in found:
            parent.children.remove(sol)
        section += nodes.raw("", "\\section*{Solutions}\n", format="latex")
        section.extend(sol for _, sol in found)


DROPPED = {"book/status"}   # describes the HTML build's execution; empty when printing


def _edition() -> str:
    import subprocess

    import scansnap

    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True,
                                text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = ""
    return f"{scansnap.__version__}" + (f", commit {commit}" if commit else "")


def _maketitle(app) -> str:
    from sphinx.util.texescape import escape

    url = (app.config.html_theme_options or {}).get("repository_url", "")
    online = (f"The online edition, with the live panels, the sliders and the Colab and Binder "
              f"buttons: \\url{{{url}}}" if url else "")
    return rf"""\begin{{titlepage}}\centering
\vspace*{{3cm}}{{\Huge\bfseries {escape(app.config.html_title or app.config.project)}\par}}
\vspace{{1.2em}}{{\large An executable companion to \emph{{Scan and Snap: Understanding Training Dynamics and
Token Composition in 1-layer Transformer}} (Yuandong Tian, Yiping Wang, Beidi Chen, Simon S.\ Du;
NeurIPS 2023; arXiv:2305.16380v4)\par}}
\vspace{{2.5cm}}{{\Large {escape(app.config.author)}\par}}
\vfill
{{Printed edition {escape(_edition())}, \today\par}}
\vspace{{0.6em}}{{\small {online}\par}}
\end{{titlepage}}"""


def _config_inited(app, config) -> None:
    # latex_* settings are read when the LaTeX builder starts, before "builder-inited"; they
    # mean nothing to other builders, so they are set for every build
    config.latex_elements = dict(config.latex_elements or {}, maketitle=_maketitle(app))
    config.latex_additional_files = list(config.latex_additional_files or []) + [str(HERE / "latex" / "bbm.sty")]


def setup(app):
    app.add_post_transform(TagOutsideSplit)
    app.add_post_transform(PanelNotes)
    app.add_post_transform(HtmlOutputs)
    app.add_post_transform(BookShape)
    app.connect("config-inited", _config_inited)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
