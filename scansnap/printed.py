"""Interactive figures on paper: what a live panel or a slider panel prints as.

A page's panels are JavaScript (:mod:`scansnap.live`) or widgets (:mod:`scansnap.ui`); the
printed edition (``make pdf``) has neither. So each panel's output also carries an
``image/png``: the live panel's static figure, or a slider panel's figures at several slider
values side by side (small multiples: on paper six values of T at once say more than one).
The HTML pages never show that image (their mime priority puts the panel first); the LaTeX
builder picks it, and ``_ext/print_edition.py`` prints under it the one-line note the PNG
carries (a ``tEXt`` chunk, :data:`NOTE_KEY`): what the online edition does with the panel.
"""
from __future__ import annotations

import io
import re

NOTE_KEY = "scansnap-printed-note"
MAX_TILES = 6


def with_note(png: bytes, note: str) -> bytes:
    """``png`` with ``note`` in a tEXt chunk (:data:`NOTE_KEY`); the pixels are unchanged."""
    from PIL import Image, PngImagePlugin

    if not isinstance(note, str) or not note.strip():
        raise ValueError(f"a printed panel needs a note saying what the online edition does, got {note!r}")
    img = Image.open(io.BytesIO(png))
    info = PngImagePlugin.PngInfo()
    for k, v in getattr(img, "text", {}).items():
        if k != NOTE_KEY:
            info.add_text(k, v)
    info.add_itxt(NOTE_KEY, " ".join(plain(note).split()))   # iTXt: UTF-8 (eta, arrows, ...)
    out = io.BytesIO()
    img.save(out, format="png", pnginfo=info, optimize=False)
    return out.getvalue()


def note_of(png) -> str | None:
    """The note a PNG (bytes or a path) carries, or None."""
    from PIL import Image

    src = io.BytesIO(png) if isinstance(png, (bytes, bytearray)) else png
    with Image.open(src) as img:
        if img.format != "PNG":
            return None
        img.load()
        return getattr(img, "text", {}).get(NOTE_KEY)


def plain(text: str) -> str:
    """HTML (a panel's question, a slider's label) as one line of plain text; a subscript
    becomes ``_{...}`` (the printed note typesets it)."""
    text = re.sub(r"<sub>(.*?)</sub>", r"_{\1}", text or "")            # subscripts survive as _{...}
    text = re.sub(r'<span class="scansnap-sub"[^>]*>(.*?)</span>', r"_{\1}", text)
    text = re.sub(r"<[^>]+>", "", text)
    # &amp; last: decoded first, "&amp;lt;" (a literal "&lt;") would be decoded twice, to "<"
    for a, b in (("&lt;", "<"), ("&gt;", ">"), ("&hellip;", "..."), ("&nbsp;", " "), ("&amp;", "&")):
        text = text.replace(a, b)
    return " ".join(text.split())


def pick(options, k: int = MAX_TILES) -> list:
    """At most ``k`` of a slider's options, evenly spread, both ends kept."""
    options = list(options)
    if len(options) <= k:
        return options
    idx = sorted({round(i * (len(options) - 1) / (k - 1)) for i in range(k)})
    return [options[i] for i in idx]


def _wrap(text: str, chars: int) -> str:
    """``text`` broken at spaces into lines of at most about ``chars`` characters, never inside
    $...$ (mathtext)."""
    lines, line = [], ""
    for word in text.split(" "):
        inside = (line.count("$") % 2) == 1
        if line and not inside and len(line) + 1 + len(word) > chars:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return "\n".join(lines + [line])


def _fit_texts(fig) -> None:
    """Axis titles and labels longer than the figure is wide, wrapped: a figure redrawn narrower
    keeps its words (constrained layout moves axes, it does not break lines)."""
    width_pt = fig.get_figwidth() * 72
    for ax in fig.axes:
        for t in (ax.title, ax._left_title, ax._right_title, ax.xaxis.label):
            text = t.get_text()
            chars = int(width_pt / (0.55 * t.get_fontsize()))   # ~0.55 em a character
            if text and "\n" not in text and len(text) > chars:
                t.set_text(_wrap(text, chars))


def small_multiples(tiles, columns: int = 2, tile_width: float = 3.9, dpi: int = 200) -> bytes:
    """One PNG of the figures ``tiles`` = [(label, matplotlib Figure), ...] in a grid, each titled
    by its label.

    Each figure is redrawn ``tile_width`` inches wide (its height scaled by at most 0.9) with its
    fonts kept in points, so two columns printed across an A4 text block (~6.9 in) keep text at
    ~8-9 pt; shrinking the on-screen PNGs instead would leave ~5 pt. The figures are resized in
    place: pass figures you are done with."""
    import numpy as np
    from matplotlib.figure import Figure
    from PIL import Image

    if not tiles:
        raise ValueError("small_multiples needs at least one figure")
    images = []
    for _, fig in tiles:
        w, h = fig.get_size_inches()
        if abs(w - tile_width) > 0.01:
            fig.set_size_inches(tile_width, h * max(tile_width / w, 0.9))
            if fig.get_layout_engine() is None:    # margins fixed for the screen size would clip labels
                fig.set_layout_engine("constrained")
            _fit_texts(fig)
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=dpi)
        images.append(Image.open(io.BytesIO(buf.getvalue())).convert("RGB"))
    n = len(images)
    columns = min(columns, n)
    rows = -(-n // columns)
    w = max(im.width for im in images)
    h = max(im.height for im in images)
    title_px = round(0.3 * dpi)
    grid = Figure(figsize=(columns * w / dpi, rows * (h + title_px) / dpi), dpi=dpi)
    for i, ((label, _), im) in enumerate(zip(tiles, images)):
        ax = grid.add_axes([(i % columns) / columns, 1 - (i // columns + 1) / rows,
                            im.width / w / columns, (im.height / (h + title_px)) / rows])
        ax.imshow(np.asarray(im), interpolation="none")
        ax.set_axis_off()
        ax.set_title(label, fontsize=10, pad=3)
    buf = io.BytesIO()
    grid.savefig(buf, format="png", dpi=dpi)
    # 256 colours, as the panels' own PNGs (scansnap.ui._png): a third of the bytes, nothing visible lost
    out = io.BytesIO()
    img = Image.open(io.BytesIO(buf.getvalue())).convert("RGB")
    img.quantize(colors=256, method=Image.Quantize.FASTOCTREE).save(out, format="png", dpi=(dpi, dpi))
    return out.getvalue()
