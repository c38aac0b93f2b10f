"""Check the printed edition, _build/latex/book.pdf (made by tools/build_pdf.py).

    python tools/pdf_check.py [--latex-dir _build/latex]

Fails (exit 1, one line per problem) on:
- a LaTeX error, a glyph missing from the fonts (\\tracinglostchars=3 makes it an error), an
  undefined reference or citation, a float too large for the page;
- an overfull hbox wider than OVERFULL_PT outside tables (tables may run over by TABLE_PT);
- a page count outside PAGES;
- a font that is not embedded, or a Type 3 font;
- an image printed below MIN_PPI;
- a repr, markup or traceback leaked into the text (LEAKS), or prose meant for a screen (SCREEN_ONLY);
- a count of printed-panel notes different from the number of interactive panels in the chapters.
Sphinx warnings fail the build itself (-W). Prints what it measured.
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = (110, 260)
OVERFULL_PT = 3.0
TABLE_PT = 30.0
MIN_PPI = 150
NOTE_PREFIX = "Printed panel:"
LEAKS = ("LivePanel(", "VBox(children", "<script", "<div", "Traceback", "Proof Index",
         "widget-view", "application/vnd")
# words that only make sense on a screen (each page's printed variant says what the figure shows)
SCREEN_ONLY = re.compile(r"\b(move|drag) (the|a|its|each) sliders?\b|\bclick\b|\bhover\b|\bin your browser\b", re.I)


def _run(*cmd) -> str:
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout


def panels_in_chapters() -> int:
    """Interactive outputs in the book's notebooks: slider panels (a widget view) and live panels."""
    import yaml

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = []

    def walk(entries):
        for e in entries or []:
            if "file" in e:
                files.append(e["file"])
            walk(e.get("sections"))
            walk(e.get("chapters"))

    files.append(toc["root"])
    for part in toc.get("parts", []):
        walk(part.get("chapters"))
    walk(toc.get("chapters"))
    n = 0
    for f in files:
        p = ROOT / f"{f}.ipynb"
        if not p.exists():
            continue
        for cell in json.loads(p.read_text())["cells"]:
            for out in cell.get("outputs", []):
                data = out.get("data", {})
                plain = "".join(data.get("text/plain", ""))
                if "application/vnd.jupyter.widget-view+json" in data or plain.startswith("LivePanel("):
                    n += 1
    return n


def table_lines(tex: str) -> list[tuple[int, int]]:
    """Line ranges of the tables in the .tex (tabulary, tabular, longtable)."""
    spans, start = [], None
    for i, line in enumerate(tex.splitlines(), 1):
        if re.search(r"\\begin\{(tabulary|tabular|longtable)\}", line) and start is None:
            start = i
        if re.search(r"\\end\{(tabulary|tabular|longtable)\}", line) and start is not None:
            spans.append((start, i))
            start = None
    return spans


def check(latex_dir: Path) -> tuple[list[str], list[str]]:
    problems, facts = [], []
    pdf, log, tex = latex_dir / "book.pdf", latex_dir / "book.log", latex_dir / "book.tex"
    if not pdf.exists():
        return [f"{pdf} is missing: run tools/build_pdf.py"], facts
    logtext = log.read_text(errors="replace")
    for pat, what in ((r"^! .*", "LaTeX error"), (r"Missing character: .*", "missing glyph"),
                      (r"Reference `[^']*' on page \d+ undefined", "undefined reference"),
                      (r"Citation `[^']*' on page \d+ undefined", "undefined citation"),
                      (r"Float too large for page by [\d.]+pt", "float too large")):
        for m in re.finditer(pat, logtext, re.M):
            problems.append(f"{what}: {m.group(0)[:160]}")
    spans = table_lines(tex.read_text(errors="replace"))
    worst_text = worst_table = 0.0
    for m in re.finditer(r"Overfull \\hbox \(([\d.]+)pt too wide\) (?:in paragraph|in alignment|detected) at lines? (\d+)", logtext):
        pt, line = float(m.group(1)), int(m.group(2))
        in_table = any(a <= line <= b for a, b in spans)
        if in_table:
            worst_table = max(worst_table, pt)
            if pt > TABLE_PT:
                problems.append(f"a table runs {pt:.1f} pt past the text (book.tex line {line}; at most {TABLE_PT})")
        else:
            worst_text = max(worst_text, pt)
            if pt > OVERFULL_PT:
                problems.append(f"a line runs {pt:.1f} pt past the text (book.tex line {line}; at most {OVERFULL_PT})")
    facts.append(f"overfull boxes: widest {worst_text:.1f} pt outside tables, {worst_table:.1f} pt in tables")

    info = _run("pdfinfo", str(pdf))
    pages = int(re.search(r"^Pages:\s+(\d+)", info, re.M).group(1))
    facts.append(f"{pages} pages, {pdf.stat().st_size / 1e6:.1f} MB")
    if not PAGES[0] <= pages <= PAGES[1]:
        problems.append(f"{pages} pages, outside the expected {PAGES[0]}-{PAGES[1]}")

    fonts = _run("pdffonts", str(pdf)).splitlines()[2:]
    for row in fonts:
        cols = row.split()
        name = cols[0]
        emb = cols[-5]
        if "Type 3" in row:
            problems.append(f"a Type 3 font: {name}")
        if emb != "yes":
            problems.append(f"a font not embedded: {name}")
    facts.append(f"{len(fonts)} fonts, all embedded" if all(r.split()[-5] == "yes" for r in fonts) else "fonts: see above")

    images = _run("pdfimages", "-list", str(pdf)).splitlines()[2:]
    ppis = []
    for row in images:
        cols = row.split()
        page, x_ppi, y_ppi = int(cols[0]), int(cols[12]), int(cols[13])
        ppis.append(min(x_ppi, y_ppi))
        if min(x_ppi, y_ppi) < MIN_PPI:
            problems.append(f"an image printed at {min(x_ppi, y_ppi)} ppi on page {page} (at least {MIN_PPI})")
    if ppis:
        facts.append(f"{len(ppis)} images, {min(ppis)}-{max(ppis)} ppi")

    text = _run("pdftotext", "-enc", "UTF-8", str(pdf), "-")
    flat = " ".join(text.split())
    for leak in LEAKS:
        if leak in flat:
            i = flat.index(leak)
            problems.append(f"leaked into the printed text: {leak!r} (...{flat[max(0, i - 60):i + 60]}...)")
    for m in SCREEN_ONLY.finditer(flat):
        problems.append(f"screen-only words in print: ...{flat[max(0, m.start() - 60):m.end() + 40]}...")
    notes = flat.count(NOTE_PREFIX)
    panels = panels_in_chapters()
    facts.append(f"{notes} printed-panel notes for {panels} panels in the chapters")
    if notes != panels:
        problems.append(f"{notes} printed-panel notes, but the chapters have {panels} interactive panels")
    return problems, facts


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--latex-dir", type=Path, default=ROOT / "_build" / "latex")
    args = ap.parse_args(argv)
    problems, facts = check(args.latex_dir)
    for f in facts:
        print("pdf_check:", f)
    for p in problems:
        print("pdf_check: FAIL:", p)
    print(f"pdf_check: {'FAILED, ' + str(len(problems)) + ' problem(s)' if problems else 'passed'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
