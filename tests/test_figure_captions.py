"""Every figure a reader sees has a caption and a label (issue 25, "Captions that point").

A figure reaches the reader of the built book as an image output of a code cell: a plain
matplotlib figure, the static figure inside a live panel (``scansnap.live.panel``, whose
``text/html`` holds the figure a reader without JavaScript sees) or the stored image behind a
slider panel (``scansnap.ui.slider_panel``, an ipywidgets view with an ``image/png``
fallback). MyST-NB puts such an output in a numbered ``<figure>`` ("Fig. 3.2") only when its
cell carries ``metadata.mystnb.figure`` with a ``caption`` (and a ``name`` to {numref} it by),
so a panel without one is the one figure of its chapter that has no number and no caption.

Two readings, as in tests/test_fig_refs.py: the notebooks' metadata (always), and the built
HTML when it is there and newer than its sources (every image, live panel and widget view of
an output inside a ``<figure>`` with a ``<figcaption>``).

``AWAITING_LEAD`` holds the cells whose captions the lead adds after merging (their notebooks
belong to other helpers); the test fails once one of them is captioned, so the list empties.
``NOT_A_FIGURE`` holds image outputs that are deliberately not figures, each with its reason.
"""
from __future__ import annotations

import json
from pathlib import Path

from test_fig_refs import ROOT, _built_pages, _pages

# cell ids (a cell keeps its id when it moves to an appendix page): captioned by the lead after
# merge, the notebooks being other helpers'
AWAITING_LEAD: dict[str, str] = {}
# cell id: an image output that is not a figure, and why
NOT_A_FIGURE: dict[str, str] = {}

IMAGE_MIMES = ("image/png", "image/jpeg", "image/svg+xml")
# the pages whose captions test_captions_are_short_and_point holds to the rule so far (the
# other chapters' captions are being rewritten on other branches; the lead widens this list)
SHORT_CAPTION_PAGES = ("intro.ipynb", "02-data.ipynb", "06-figures.ipynb", "07-beyond.ipynb")


def image_cells(path: Path) -> list[tuple[str, dict]]:
    """(cell id, mystnb figure options) of every code cell of ``path`` with an image output."""
    nb = json.loads(path.read_text())
    out = []
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        if any(mime in o.get("data", {}) for o in cell.get("outputs", []) for mime in IMAGE_MIMES):
            fig = cell.get("metadata", {}).get("mystnb", {}).get("figure", {})
            out.append((cell.get("id", "?"), fig))
    return out


def uncaptioned() -> list[tuple[str, str]]:
    """(notebook, cell id) of every image output without a caption and a name, in book order."""
    return [(path.name, cid) for path in _pages() if path.suffix == ".ipynb"
            for cid, fig in image_cells(path)
            if not (str(fig.get("caption", "")).strip() and str(fig.get("name", "")).strip())]


def test_every_image_output_is_a_captioned_figure():
    missing = [(nb, cid) for nb, cid in uncaptioned() if cid not in AWAITING_LEAD and cid not in NOT_A_FIGURE]
    assert not missing, (
        "code cells with an image output but no metadata.mystnb.figure caption and name "
        "(add them, or list the cell in NOT_A_FIGURE with a reason):\n"
        + "\n".join(f"{nb}, cell {cid}" for nb, cid in missing))


def test_the_lists_are_current():
    """A cell of AWAITING_LEAD that has its caption leaves the list (and one that is gone, too)."""
    now = {cid for _, cid in uncaptioned()}
    stale = sorted(cid for cid in set(AWAITING_LEAD) | set(NOT_A_FIGURE) if cid not in now)
    assert not stale, ("captioned now, or no longer an image output: take these out of "
                       "AWAITING_LEAD / NOT_A_FIGURE:\n" + "\n".join(map(str, stale)))
    assert all(reason.strip() for reason in NOT_A_FIGURE.values())


def test_captions_are_short_and_point():
    """What is plotted plus one "look at ..." sentence, at most ~3 lines at 1280 px (270 source characters)."""
    long, pointless = [], []
    for path in _pages():
        if path.name not in SHORT_CAPTION_PAGES:
            continue
        for cid, fig in image_cells(path):
            caption = str(fig.get("caption", ""))
            if not caption or cid in NOT_A_FIGURE:
                continue
            if len(caption) > 270:
                long.append(f"{path.name}, cell {cid}: {len(caption)} characters")
            if "look at" not in caption.lower():
                pointless.append(f"{path.name}, cell {cid}: {caption[:80]}...")
    assert not long and not pointless, (
        "captions longer than ~3 lines:\n" + "\n".join(long)
        + "\ncaptions without a 'Look at ...' sentence:\n" + "\n".join(pointless))


def html_uncaptioned(html: str) -> list[str]:
    """A short description of every output figure of a built page outside a captioned <figure>."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "html.parser")
    body = soup.select_one("article") or soup
    found = []
    outputs = body.select("div.cell_output")
    for out in outputs:
        # a live panel (its static figure is inside it), a widget view, or a plain image output
        for el in out.select("div.yzlive-panel, script[type='application/vnd.jupyter.widget-view+json'], img"):
            if el.name == "img" and el.find_parent("div", class_="yzlive-panel"):
                continue              # the live panel's own static figure: the panel is checked
            fig = el.find_parent("figure")
            if fig is None or fig.find("figcaption") is None:
                what = (el.get("class") or [el.get("type") or el.name])[0]
                found.append(what)
    return found


def test_built_pages_show_every_output_figure_captioned():
    pending: dict[str, int] = {}
    for nb, cid in uncaptioned():
        if cid in AWAITING_LEAD or cid in NOT_A_FIGURE:
            pending[nb] = pending.get(nb, 0) + 1
    found = []
    for src, html in _built_pages():
        bare = html_uncaptioned(html.read_text())
        if len(bare) > pending.get(src.name, 0):
            found.append(f"{src.name}: {len(bare)} output figures without a caption "
                         f"({', '.join(bare)}), {pending.get(src.name, 0)} listed")
    assert not found, "in the built book:\n" + "\n".join(found)


def test_the_html_detector():
    """The HTML reading on the three forms an output figure takes (a test that cannot fail is no test)."""
    img = '<img src="x.png"/>'
    panel = '<div class="yzlive-panel"><img src="data:image/png;base64,AA"/></div>'
    widget = '<script type="application/vnd.jupyter.widget-view+json">{}</script>'

    def page(inner, caption=True):
        cap = "<figcaption><p>Fig. 2.1 A caption.</p></figcaption>" if caption else ""
        return (f'<article><div class="cell_output"><figure>{inner}{cap}</figure></div>'
                f'<div class="cell_output">{inner}</div></article>')

    for inner in (img, panel, widget):
        assert len(html_uncaptioned(page(inner))) == 1
        assert len(html_uncaptioned(page(inner, caption=False))) == 2
    assert html_uncaptioned(f"<article><p>{img}</p></article>") == []   # not an output
