"""The printed edition: its pieces (scansnap.printed, _ext/print_edition.py, tools/pdf_check.py)
and, where TeX is installed, the whole PDF built from the committed chapters and checked.

`make test` installs TeX (the Makefile's `tex` target) and sets SCANSNAP_REQUIRE_TEX=1, so there
the build cannot be skipped; elsewhere the build test skips without XeLaTeX.
"""
from __future__ import annotations

import importlib.util
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


pe = _load("print_edition", ROOT / "_ext" / "print_edition.py")
pdf_check = _load("pdf_check", ROOT / "tools" / "pdf_check.py")


def _png(w=40, h=30):
    from PIL import Image
    out = io.BytesIO()
    Image.new("RGB", (w, h), "white").save(out, format="png")
    return out.getvalue()


# ---- scansnap.printed

def test_note_round_trip_keeps_pixels():
    from PIL import Image

    from scansnap import printed
    png = _png()
    noted = printed.with_note(png, "Online, <b>this</b> panel   moves; η<sub>Y</sub> too.")
    assert printed.note_of(noted) == "Online, this panel moves; η_{Y} too."
    assert printed.note_of(png) is None
    a, b = Image.open(io.BytesIO(png)), Image.open(io.BytesIO(noted))
    assert a.size == b.size and (np.asarray(a.convert("RGB")) == np.asarray(b.convert("RGB"))).all()
    with pytest.raises(ValueError, match="needs a note"):
        printed.with_note(png, "  ")


def test_pick_spreads_and_keeps_ends():
    from scansnap.printed import pick
    assert pick([1, 2, 3]) == [1, 2, 3]
    got = pick(list(range(11)), 6)
    assert got[0] == 0 and got[-1] == 10 and len(got) == 6 and got == sorted(got)


def test_small_multiples_grid_and_print_size():
    from matplotlib.figure import Figure
    from PIL import Image

    from scansnap.printed import small_multiples
    figs = []
    for k in range(5):
        f = Figure(figsize=(6.8, 3.0))
        f.subplots().plot(np.arange(5) * k)
        figs.append((f"T = {k}", f))
    img = Image.open(io.BytesIO(small_multiples(figs, columns=2, tile_width=3.9, dpi=200)))
    assert img.width == 2 * 780                        # two tiles of 3.9 in at 200 dpi
    assert img.height > 3 * 0.9 * 3.0 * 780 / 6.8      # three rows, each at least 0.9 of the height
    assert img.mode == "P"                             # 256 colours, as the page's own PNGs
    with pytest.raises(ValueError):
        small_multiples([])


def test_live_panel_prints_its_static_figure_with_a_note():
    from scansnap import live, printed
    bare = live.panel(("cn",), controls=("eta_y",), steps=5)
    assert bare._repr_png_() is None                   # no static figure: nothing to print
    p = live.panel(("cn",), controls=("eta_y", "momentum"), steps=5, static=_png(),
                   question="Raise η<sub>Y</sub>: sooner?")
    note = printed.note_of(p._repr_png_())
    assert note.startswith("Online, this panel re-trains the model (Syn-Small)")
    assert "η_Y, momentum" in note and note.endswith("The panel asks: Raise η_{Y}: sooner?")


def test_slider_panel_prints_small_multiples_with_a_note():
    import ipywidgets as widgets
    from matplotlib.figure import Figure

    from scansnap import printed
    from scansnap.ui import slider_panel

    def draw(T=16, seed=1):
        f = Figure(figsize=(6.8, 3.0))
        f.subplots().plot(np.arange(4) * T * seed)
        return f

    p = slider_panel(draw, progress=False,
                     T=widgets.SelectionSlider(options=(16, 64, 128, 512, 2048, 8192, 32768), value=64),
                     seed=widgets.SelectionSlider(options=(1, 2), value=2))
    png = p._repr_png_()
    assert printed.note_of(png) == ("Online, the sliders (T, seed) switch between this figure's 14 precomputed "
                                    "states; printed: T at 6 of its 7 values, the other sliders at their "
                                    "starting values.")
    from IPython.core.formatters import DisplayFormatter
    bundle, _ = DisplayFormatter().format(p)
    assert {"image/png", "application/vnd.jupyter.widget-view+json"} <= set(bundle)


def test_a_panel_of_side_by_side_axes_prints_at_its_own_width():
    """Two axes side by side lose their labels and legends at half width (chapter 3's printed panel
    collapsed): such a panel prints three states in one column, each at the figure's own width."""
    import io
    import warnings

    import ipywidgets as widgets
    from matplotlib.figure import Figure
    from PIL import Image

    from scansnap import printed
    from scansnap.ui import slider_panel

    def draw(eta=1.0):
        f = Figure(figsize=(6.8, 3.2))
        f.subplots_adjust(left=0.09, right=0.98, bottom=0.14, top=0.75, wspace=0.3)
        a, b = f.subplots(1, 2)
        a.plot(np.arange(4) * eta, label="a long legend entry")
        b.plot(np.arange(4) / eta, label="another long legend entry")
        for ax in (a, b):
            ax.legend(loc="lower left", bbox_to_anchor=(0, 1.02), ncol=2)
            ax.set_xlabel("plain SGD steps $t$")
        return f

    p = slider_panel(draw, progress=False,
                     eta=widgets.SelectionSlider(options=(0.1, 0.2, 0.5, 2.0, 5.0, 10.0), value=0.5))
    with warnings.catch_warnings():
        warnings.simplefilter("error")                  # no "constrained_layout not applied"
        png = p._repr_png_()
    assert printed.note_of(png).endswith("printed: η at 3 of its 6 values.")
    im = Image.open(io.BytesIO(png))
    assert im.height > 1.5 * im.width                   # three tiles, one above the other
    assert abs(im.width / 200 - 6.8) < 0.1              # each at 6.8 in (200 dpi)


# ---- _ext/print_edition.py

def test_tag_moves_outside_split():
    assert pe.tag_outside_split("a = b") is None
    assert pe.tag_outside_split(r"a = b \tag{13}") == \
        r"\begin{equation*}\begin{split}a = b\end{split}\tag{13}\end{equation*}"
    two = pe.tag_outside_split("a = b\n\nc = d \\tag{2}", "eq-x")
    assert two.startswith(r"\begin{equation*}\label{eq-x}\begin{split}a = b \\") and two.endswith(r"\tag{2}\end{equation*}")
    with pytest.raises(ValueError, match="2 \\\\tag"):
        pe.tag_outside_split(r"a \tag{1} b \tag{2}")


def test_dataframe_becomes_a_table():
    import pandas as pd
    from docutils import nodes
    df = pd.DataFrame({"$\\eta_Y$": [-0.5, 2.25], "name": ["a", "b"], "loss": [2e-7, -3e-7]},
                      index=pd.MultiIndex.from_tuples([(50, 0.1), (50, 0.2)], names=["M", "rate"]))
    spec, table = pe.dataframe_table(df.to_html())
    assert spec == "llrlr"                              # index columns and text left, numbers right
    rows = [[e.astext() for e in r.findall(nodes.entry)] for r in table.findall(nodes.row)]
    assert rows[0] == ["M", "rate", "\\eta_Y", "name", "loss"]      # pandas' two header rows, merged
    assert rows[1][2] == "\u22120.50" and rows[2][3] == "\u22123.000000e\u221207"   # true minus signs
    assert next(iter(table.findall(nodes.math))).astext() == "\\eta_Y"
    assert next(iter(table.findall(nodes.entry)))  # the rowspan of the index is kept as morerows
    assert any(e.get("morerows") == 1 for e in table.findall(nodes.entry))
    assert pe.dataframe_table("<p>not a table</p>") is None


def test_a_folded_block_prints_open():
    from docutils import nodes
    got = pe.details_nodes('<details class="provenance"><summary>How <b>fig3.csv</b> was made</summary>'
                           '<pre>fig3.csv: made &lt;today&gt;\n  $ python -m scansnap</pre></details>')
    assert isinstance(got[0], nodes.paragraph) and got[0].astext() == "How fig3.csv was made"
    assert isinstance(got[1], nodes.literal_block) and got[1].astext() == "fig3.csv: made <today>\n  $ python -m scansnap"
    assert pe.details_nodes("<div>x</div>") is None


# ---- tools/pdf_check.py, each defect planted in a made-up build

def _fake_build(tmp_path, monkeypatch, log="", text="", pages=150, fonts_rows=None, images_rows=None):
    d = tmp_path / "latex"
    d.mkdir()
    (d / "book.pdf").write_bytes(b"%PDF-1.5\n")
    (d / "book.log").write_text(log)
    (d / "book.tex").write_text("\n".join(["x"] * 5 + [r"\begin{tabulary}{\linewidth}{ll}"] + ["a & b"] * 4
                                          + [r"\end{tabulary}"] + ["y"] * 5))
    fonts = fonts_rows or ["ABCDEF+TeXGyrePagella-Regular CID Type 0C Identity-H yes yes yes 5 0"]
    images = images_rows or ["   3     0 image    1560  1800  index   1   8  image  no        12  0   226   226 50.3K 1.8%"]

    def run(*cmd):
        if cmd[0] == "pdfinfo":
            return f"Pages:          {pages}\n"
        if cmd[0] == "pdffonts":
            return "name type\n----\n" + "\n".join(fonts) + "\n"
        if cmd[0] == "pdfimages":
            return "page num\n----\n" + "\n".join(images) + "\n"
        if cmd[0] == "pdftotext":
            return text
        raise AssertionError(cmd)

    monkeypatch.setattr(pdf_check, "_run", run)
    monkeypatch.setattr(pdf_check, "panels_in_chapters", lambda: 2)
    return d


GOOD_TEXT = "Printed panel: Online, one. Printed panel: Online, two."


def test_check_passes_a_clean_build(tmp_path, monkeypatch):
    problems, facts = pdf_check.check(_fake_build(tmp_path, monkeypatch, text=GOOD_TEXT))
    assert problems == [] and "150 pages" in facts[1]


@pytest.mark.parametrize("plant, expect", [
    (dict(log="! Undefined control sequence.\n"), "LaTeX error"),
    (dict(log="Missing character: There is no ∡ in font TeXGyrePagella!\n"), "missing glyph"),
    (dict(log="LaTeX Warning: Reference `book/x:y' on page 3 undefined on input line 9.\n"), "undefined reference"),
    (dict(log="LaTeX Warning: Float too large for page by 84.8pt on input line 82.\n"), "float too large"),
    (dict(log="Overfull \\hbox (5.2pt too wide) in paragraph at lines 2--3\n"), "a line runs 5.2 pt"),
    (dict(log="Overfull \\hbox (31.0pt too wide) in alignment at lines 7--9\n"), "a table runs 31.0 pt"),
    (dict(pages=12), "outside the expected"),
    (dict(fonts_rows=["DejaVuSans Type 3 Custom yes yes no 9 0"]), "Type 3"),
    (dict(fonts_rows=["Helvetica Type 1 Standard no no no 9 0"]), "not embedded"),
    (dict(images_rows=["   4     0 image    300  200  rgb 3 8 image no 12 0 96 96 9K 1%"]), "96 ppi on page 4"),
    (dict(text=GOOD_TEXT + " LivePanel(views=('cn',))"), "leaked"),
    (dict(text=GOOD_TEXT + " Traceback (most recent call last)"), "leaked"),
    (dict(text=GOOD_TEXT + " Predict, then move the slider."), "screen-only"),
    (dict(text=GOOD_TEXT + " The panel trains it in your browser."), "screen-only"),
    (dict(text="Printed panel: Online, one."), "1 printed-panel notes"),
])
def test_check_catches_each_planted_defect(tmp_path, monkeypatch, plant, expect):
    plant = dict(plant)
    plant.setdefault("text", GOOD_TEXT)
    problems, _ = pdf_check.check(_fake_build(tmp_path, monkeypatch, **plant))
    assert len(problems) == 1 and expect in problems[0], problems


def test_a_small_overfull_box_in_a_table_is_allowed(tmp_path, monkeypatch):
    log = "Overfull \\hbox (12.0pt too wide) in alignment at lines 7--9\n"
    problems, facts = pdf_check.check(_fake_build(tmp_path, monkeypatch, log=log, text=GOOD_TEXT))
    assert problems == [] and "12.0 pt in tables" in facts[0]


# ---- the whole printed edition

def _tex_present() -> bool:
    return all(shutil.which(t) for t in ("xelatex", "latexmk", "pdftotext", "pdffonts", "pdfimages"))


@pytest.mark.skipif(not _tex_present() and os.environ.get("SCANSNAP_REQUIRE_TEX") != "1",
                    reason="XeLaTeX and poppler-utils are not installed (`make tex`)")
@pytest.mark.skipif("MUTANT_UNDER_TEST" in os.environ,
                    reason="under mutmut: a 10-minute build per mutant; the pieces' tests above run there")
def test_the_printed_edition_builds_and_passes_its_checks():
    assert _tex_present(), "SCANSNAP_REQUIRE_TEX=1 but XeLaTeX/poppler are missing: run `make tex`"
    build = subprocess.run([sys.executable, str(ROOT / "tools" / "build_pdf.py")], capture_output=True,
                           text=True, timeout=1200, stdin=subprocess.DEVNULL)
    assert build.returncode == 0, "PDF build failed:\n" + build.stdout[-3000:] + build.stderr[-3000:]
    problems, facts = pdf_check.check(ROOT / "_build" / "latex")
    print("\n".join(facts))
    assert problems == [], "\n".join(problems)


def test_note_subscripts_typeset():
    from docutils import nodes
    got = pe.note_nodes("sliders (η_Y, η_{Z}) move; t_{0}.")
    assert [type(n).__name__ for n in got] == ["Text", "subscript", "Text", "subscript", "Text", "subscript", "Text"]
    assert "".join(n.astext() for n in got) == "sliders (ηY, ηZ) move; t0."
    assert all(isinstance(n, nodes.Node) for n in got)


def test_small_multiples_wrap_titles_a_narrow_tile_would_cut():
    from matplotlib.figure import Figure

    from scansnap import printed

    f = Figure(figsize=(6.8, 3.0))
    ax = f.subplots()
    ax.plot([0, 1])
    ax.set_title("linear, first 50% uninformative: 0.90 of the attention right, $\\eta_Y = 1$ kept whole")
    ax.set_xlabel("contextual token of class 0 (grey: common, blue: distinct)")
    printed.small_multiples([("a", f)])
    title, xlabel = ax.get_title(), ax.get_xlabel()
    assert "\n" in title and "\n" in xlabel
    assert "$\\eta_Y = 1$" in title                      # mathtext never split
    assert title.replace("\n", " ") == "linear, first 50% uninformative: 0.90 of the attention right, $\\eta_Y = 1$ kept whole"
