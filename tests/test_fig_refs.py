"""No ambiguous "Fig. N" anywhere a reader looks (issue 25).

The book has its own figures, numbered per chapter by Sphinx ("Fig. 3.2", see
_ext/figure_numbers.py), and it discusses the paper's figures, which the paper numbers 1-12.
A bare "Fig. 4" could be either, so the rule is:

- the paper's figures are always written "the paper's Fig. N" (or "Figs. N and M", "Figs. N-M"),
  in prose, captions, headings, table cells, printed outputs and the titles drawn on figures;
- the book's figures are referred to with {numref} (and so always read "Fig. 3.2"): a book
  number in a caption or a {numref} link must carry its chapter, and a chapter-qualified
  number typed by hand ("see Fig. 3.2") is an error too, since it goes stale when a figure moves;
- Sphinx numbers the chapters, so a chapter title must not carry its own number ("3. 3. How
  the decoder learns").

Two readings, both cheap. The sources are always read: every page of _toc.yml (notebook
markdown, figure captions, stored outputs, the string literals of code cells) and the titles
scansnap/plots.py draws (its string literals, docstrings aside). The built HTML is read too
when it is there and newer than its sources (tests/test_browser.py builds it earlier in the
same `make test`): it shows what the sources cannot, the numbers Sphinx gives captions and
{numref} links, and the headings as numbered.
"""
from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"

# "Fig. 4", "Figs. 4-6", "Figure 4", "Figures 11 and 12", "Fig. 3.2" (group 2: the chapter form)
FIG = re.compile(r"\b(?:Figs?\.|Figures?)[\s\u00a0]*(\d+)(\.\d+)?(?!\d)")
# what must stand right before a paper's figure: "the paper's Fig. 4", "the paper’s own Figs. 3-5"
PAPERS = re.compile(r"paper['’]s[\s\u00a0]+(?:own[\s\u00a0]+)?$")
# a book figure's number as Sphinx prints it in a caption or a {numref} link: "Fig. 3.2"
BOOK_NUMBER = re.compile(r"^(?:Fig\.|Figure)[\s\u00a0]+\d+\.\d+[\s\u00a0]*$")
# a chapter title that repeats the number Sphinx already gives it: "3. How ..." (3A. is an appendix's)
NUMBERED_TITLE = re.compile(r"^\d+\.\s")


def _pages() -> list[Path]:
    """The source of every page of the table of contents, in order."""
    import yaml

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    names = [toc["root"]]

    def walk(entries):
        for e in entries:
            if "file" in e:
                names.append(e["file"])
            walk(e.get("sections", []))

    walk(toc.get("chapters", []))
    for part in toc.get("parts", []):
        walk(part.get("chapters", []))
    out = []
    for name in names:
        for suffix in (".ipynb", ".md"):
            if (ROOT / f"{name}{suffix}").exists():
                out.append(ROOT / f"{name}{suffix}")
                break
        else:
            raise AssertionError(f"_toc.yml names {name}, which has no .ipynb or .md")
    return out


def ambiguous(text: str) -> list[str]:
    """The "Fig. N" in ``text`` that are neither "the paper's Fig. N" nor anything else allowed.

    A chapter-qualified number ("Fig. 3.2") counts as ambiguous here: in a source it was typed
    by hand (a {numref} is written as a label), and in the HTML the caller has already taken
    out the captions' and links' numbers, which are the only places one may stand.
    """
    found = []
    for m in FIG.finditer(text):
        if m.group(2) is None and PAPERS.search(text[max(0, m.start() - 40):m.start()]):
            continue
        lo, hi = max(0, m.start() - 50), min(len(text), m.end() + 30)
        found.append(" ".join(text[lo:hi].split()))
    return found


def _strings(tree: ast.AST, skip_docstrings: bool) -> list[str]:
    docstrings = set()
    if skip_docstrings:
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
                if node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant):
                    docstrings.add(id(node.body[0].value))
    return [n.value for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings]


def _code_strings(src: str) -> list[str]:
    # IPython magics are not Python: blank them before parsing
    src = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in src.splitlines())
    try:
        return _strings(ast.parse(src), skip_docstrings=False)
    except SyntaxError:
        return [src]


def source_texts(path: Path) -> list[tuple[str, str]]:
    """(where, text) for everything of a page that reaches a reader, read from its source."""
    if path.suffix == ".md":
        return [(path.name, path.read_text())]
    nb = json.loads(path.read_text())
    out = []
    for i, cell in enumerate(nb["cells"]):
        src = "".join(cell["source"])
        where = f"{path.name}, cell {i} ({cell.get('id', '?')})"
        if cell["cell_type"] == "markdown":
            out.append((f"{where}, markdown", src))
            continue
        if cell["cell_type"] != "code":
            continue
        fig = cell.get("metadata", {}).get("mystnb", {}).get("figure", {})
        if "caption" in fig:
            out.append((f"{where}, caption", fig["caption"]))
        out += [(f"{where}, a string in the code", s) for s in _code_strings(src)]
        for o in cell.get("outputs", []):
            if "text" in o:
                out.append((f"{where}, printed", "".join(o["text"])))
            data = o.get("data", {})
            for mime in ("text/markdown", "text/html", "text/latex"):
                if mime in data:
                    out.append((f"{where}, {mime} output", "".join(data[mime])))
    return out


def test_the_detector():
    """The rule itself, on the forms the book uses (a test that cannot fail is no test)."""
    ok = ["the paper's Fig. 4", "the paper’s Figs. 11 and 12", "the paper's own Fig. 1(b)",
          "(the paper's\nFigs. 3-5)", "Figure-eight", "Fig.-ure", "Eq. 4"]
    bad = ["Fig. 3", "a heading Fig. 8: the decoder's scalar", "One point of Fig. 6",
           "see Fig. 3.2", "paper Fig. 4", "in the paper (Fig. 4)", "Figure 7", "Figs. 11-12",
           "the paper's Fig. 4 and Fig. 5"]
    assert [t for t in ok if ambiguous(t)] == []
    assert [t for t in bad if not ambiguous(t)] == []
    assert len(ambiguous("the paper's Fig. 4 and Fig. 5")) == 1
    assert BOOK_NUMBER.match("Fig. 3.2 ") and not BOOK_NUMBER.match("Fig. 24 ")
    assert NUMBERED_TITLE.match("3. How the decoder learns") and not NUMBERED_TITLE.match("3A. The decoder")


def test_sources_name_the_papers_figures():
    found = []
    for path in _pages():
        for where, text in source_texts(path):
            found += [f"{where}: ...{s}..." for s in ambiguous(text)]
    tree = ast.parse((ROOT / "scansnap" / "plots.py").read_text())
    for s in _strings(tree, skip_docstrings=True):
        found += [f"scansnap/plots.py, a string: ...{x}..." for x in ambiguous(s)]
    assert not found, (f"{len(found)} ambiguous figure references (write \"the paper's Fig. N\" for the "
                       "paper's, {numref} for the book's):\n" + "\n".join(found))


def test_chapter_titles_do_not_carry_their_number():
    """Sphinx numbers the chapters (_toc.yml): a title "3. How ..." would read "3. 3. How ..."."""
    found = []
    for path in _pages():
        if path.suffix != ".ipynb":
            continue
        for cell in json.loads(path.read_text())["cells"]:
            if cell["cell_type"] == "markdown":
                for line in "".join(cell["source"]).splitlines():
                    if line.startswith("# ") and NUMBERED_TITLE.match(line[2:]):
                        found.append(f"{path.name}: {line}")
    assert not found, "chapter titles that carry their number:\n" + "\n".join(found)


def _built_pages() -> list[tuple[Path, Path]]:
    """(source, html) of every page, when the built book is there and newer than every source."""
    if not HTML.is_dir():
        pytest.skip("no built book in _build/html (tests/test_browser.py or `make book` builds it)")
    pairs = []
    for src in _pages():
        html = HTML / src.relative_to(ROOT).with_suffix(".html")
        if not html.exists() or html.stat().st_mtime < src.stat().st_mtime:
            pytest.skip(f"the built book is older than {src.relative_to(ROOT)}: rebuild it to check the HTML")
        pairs.append((src, html))
    return pairs


def test_built_pages_name_the_papers_figures():
    from bs4 import BeautifulSoup

    found, numbers = [], []
    for src, html in _built_pages():
        soup = BeautifulSoup(html.read_text(), "html.parser")
        body = soup.select_one("article") or soup
        for tag in body.select("script, style, div.cell_input, .headerlink"):
            tag.decompose()
        # the two places a book number may stand: a caption's number, a {numref} link
        for tag in body.select("span.caption-number"):
            if tag.get_text().startswith(("Fig", "Table")):
                numbers.append((src.name, tag.get_text()))
            tag.replace_with(" ")
        for tag in body.select("a.reference span.std-numref"):
            numbers.append((src.name, tag.get_text()))
            tag.replace_with(" ")
        text = body.get_text(" ")
        found += [f"{src.name}: ...{s}..." for s in ambiguous(text)]
        # a chapter's title: Sphinx's number, then the title without one
        for h1 in body.select("h1"):
            num = h1.select_one("span.section-number")
            rest = h1.get_text().replace(num.get_text(), "", 1).strip() if num else ""
            if num and NUMBERED_TITLE.match(rest):
                found.append(f"{src.name}: a title numbered twice: {h1.get_text().strip()!r}")
    bad_numbers = [f"{page}: {n!r}" for page, n in numbers
                   if n.startswith("Fig") and not BOOK_NUMBER.match(n)]
    assert numbers, "no figure numbers found in the built book: is numfig on?"
    assert not found and not bad_numbers, (
        "in the built book:\n" + "\n".join(found + [f"a book figure number without its chapter: {b}"
                                                   for b in bad_numbers]))


# a TeX command outside MathJax's \( \) in a link's text: {ref} to a heading with math gives the
# heading's source ("Which \eta_Z: ...") unless the heading's math is $-delimited or the link has text
RAW_TEX = re.compile(r"\\[A-Za-z]+")


def test_built_links_show_no_raw_tex():
    from bs4 import BeautifulSoup

    found = []
    for src, html in _built_pages():
        body = BeautifulSoup(html.read_text(), "html.parser")
        body = body.select_one("article") or body
        for a in body.select("a.reference"):
            text = re.sub(r"\\\(.*?\\\)", " ", a.get_text(), flags=re.S)
            if RAW_TEX.search(text):
                found.append(f"{src.name}: {a.get_text()!r}")
    assert not found, "links whose text shows raw TeX:\n" + "\n".join(sorted(set(found)))
