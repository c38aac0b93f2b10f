"""scansnap.printed (the print edition's PNGs and notes) and __main__._Signalled, pinned by value:
the survivors of the mutation run of issue 28 (bench/mutation_survivors.md, section "printed.py").

Everything is in process and small (tiles of 1 inch at low dpi where the test allows); the file
runs in a few seconds."""
from __future__ import annotations

import io
import signal

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.layout_engine import ConstrainedLayoutEngine, TightLayoutEngine  # noqa: E402
from PIL import Image, PngImagePlugin  # noqa: E402

from scansnap.printed import (NOTE_KEY, _fit_texts, _wrap, note_of, pick, plain,  # noqa: E402
                              small_multiples, with_note)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
EXPECTED_INK = (32, 51, 50, 149)    # small_multiples' title over a 1 in tile at 200 dpi (measured, DejaVu Sans)


def _png(text=None, size=(8, 6), noise=False) -> bytes:
    info = PngImagePlugin.PngInfo()
    for k, v in (text or {}).items():
        info.add_text(k, v)
    if noise:
        arr = np.random.default_rng(0).integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)
        img = Image.fromarray(arr)
    else:
        img = Image.new("RGB", size, (10, 20, 30))
    buf = io.BytesIO()
    img.save(buf, format="png", pnginfo=info)
    return buf.getvalue()


# ---------------------------------------------------------------- with_note / note_of

def test_with_note_keeps_the_other_text_chunks_and_replaces_an_old_note():
    out = with_note(_png({"Software": "matplotlib", "Title": "T", NOTE_KEY: "old note"}),
                    "new   <b>note</b> &amp; more")
    with Image.open(io.BytesIO(out)) as im:
        im.load()
        assert im.text == {"Software": "matplotlib", "Title": "T", NOTE_KEY: "new note & more"}
    assert out.count(NOTE_KEY.encode()) == 1            # the old note is not written a second time
    assert note_of(out) == "new note & more"


def test_with_note_takes_an_image_that_has_no_text_chunks_at_all():
    buf = io.BytesIO()
    Image.new("RGB", (4, 3), "red").save(buf, format="BMP")   # a BmpImageFile has no .text
    out = with_note(buf.getvalue(), "online: a slider")
    assert out.startswith(PNG_MAGIC) and note_of(out) == "online: a slider"
    with Image.open(io.BytesIO(out)) as im:
        assert im.size == (4, 3) and im.getpixel((0, 0)) == (255, 0, 0)


def test_with_note_reencodes_at_pillows_default_compression_not_optimize():
    src = _png(size=(64, 48), noise=True)
    out = with_note(src, "n")
    info = PngImagePlugin.PngInfo()
    info.add_itxt(NOTE_KEY, "n")
    ref = io.BytesIO()
    Image.open(io.BytesIO(src)).save(ref, format="png", pnginfo=info)
    assert out == ref.getvalue()


def test_note_of_reads_a_path_as_well_as_bytes(tmp_path):
    p = tmp_path / "panel.png"
    p.write_bytes(with_note(_png(), "on paper"))
    assert note_of(p) == "on paper" and note_of(str(p)) == "on paper"
    assert note_of(bytearray(p.read_bytes())) == "on paper"
    assert note_of(_png()) is None


# ---------------------------------------------------------------- plain / pick

def test_plain_of_nothing_is_empty():
    assert plain(None) == "" and plain("") == ""


def test_plain_turns_the_scansnap_sub_span_into_a_subscript():
    assert plain('&eta;<span class="scansnap-sub" style="x">Y</span> and c<sub>n</sub>') == "&eta;_{Y} and c_{n}"


def test_plain_unescapes_the_five_entities():
    assert plain("a &amp; b &lt;c&gt; d&hellip; e&nbsp;f") == "a & b <c> d... e f"
    assert plain("x&nbsp;&nbsp;y") == "x y"


def test_pick_keeps_all_when_there_are_exactly_k():
    assert pick(["only"], 1) == ["only"]
    assert pick(range(6)) == [0, 1, 2, 3, 4, 5]
    assert pick(range(7)) == [0, 1, 2, 4, 5, 6]


# ---------------------------------------------------------------- _wrap

def test_wrap_breaks_only_when_a_line_would_exceed_chars():
    assert _wrap("ab cd", 5) == "ab cd"                 # 2 + 1 + 2 = 5: fits
    assert _wrap("ab cde", 5) == "ab\ncde"              # 6 > 5
    assert _wrap("abcdefgh", 3) == "abcdefgh"           # a long word alone: no empty line before it


def test_wrap_splits_at_single_spaces_only():
    assert _wrap("a  b\tc", 100) == "a  b\tc"


def test_wrap_never_breaks_inside_mathtext():
    assert _wrap("$a b c$ d", 3) == "$a b c$\nd"
    assert _wrap("$x$ $a bbbbbbbb$", 6) == "$x$ $a bbbbbbbb$"   # third $ on the line: inside again


# ---------------------------------------------------------------- _fit_texts

def test_fit_texts_wraps_single_line_texts_longer_than_the_width():
    fig = Figure(figsize=(4, 3))                        # 288 pt / (0.55 * 10 pt) = 52 characters
    ax = fig.add_subplot()
    t53 = ("abcd " * 10)[:-1] + " xyz"
    assert len(t53) == 53
    t52 = ("abcd " * 10)[:-1] + " xy"
    multi = ("word " * 15) + "\nend"
    ax.set_title(t53, fontsize=10)
    ax.set_title(t52, loc="left", fontsize=10)
    ax.set_title(multi, loc="right", fontsize=10)
    ax.set_xlabel("a short label of forty characters, or so", fontsize=10)
    _fit_texts(fig)
    assert ax.get_title() == ("abcd " * 10)[:-1] + "\nxyz"
    assert ax.get_title(loc="left") == t52
    assert ax.get_title(loc="right") == multi
    assert ax.get_xlabel() == "a short label of forty characters, or so"


# ---------------------------------------------------------------- small_multiples

COLOURS = [(220, 30, 30), (30, 160, 30), (30, 30, 220), (230, 200, 20)]


def _solid(colour, w=1.0, h=0.5):
    return Figure(figsize=(w, h), facecolor=np.array(colour) / 255)


def _png_image(data: bytes) -> Image.Image:
    im = Image.open(io.BytesIO(data))
    im.load()
    return im


def test_small_multiples_needs_a_figure():
    with pytest.raises(ValueError, match=r"^small_multiples needs at least one figure$"):
        small_multiples([])


def test_small_multiples_defaults_two_columns_at_200_dpi():
    tiles = [(f"T={i}", _solid(c)) for i, c in enumerate(COLOURS[:3])]
    im = _png_image(small_multiples(tiles, tile_width=1.0))
    # tiles 200 x 100 px, a 60 px title band over each; 3 tiles in 2 columns: 2 rows
    assert im.size == (400, 320)
    assert im.mode == "P" and "transparency" not in im.info
    assert im.info["dpi"] == pytest.approx((200, 200), abs=0.01)


def test_small_multiples_places_tile_i_at_row_i_div_columns_column_i_mod_columns():
    tiles = [(f"T={i}", _solid(c, 2.0, 1.0)) for i, c in enumerate(COLOURS)]
    im = _png_image(small_multiples(tiles, columns=2, tile_width=2.0, dpi=50))
    assert im.size == (200, 2 * (50 + 15))
    rgb = np.asarray(im.convert("RGB")).astype(int)
    for i, colour in enumerate(COLOURS):
        x0, y0 = (i % 2) * 100, (i // 2) * 65 + 15       # the tile under its 15 px title band
        block = rgb[y0 + 2:y0 + 48, x0 + 2:x0 + 98]
        assert np.abs(block - colour).max() <= 12, (i, block.min(axis=(0, 1)), block.max(axis=(0, 1)))
        band = rgb[y0 - 15:y0, x0:x0 + 100]
        assert (band.sum(axis=2) < 300).any()             # the label's ink
        assert (band >= 240).all(axis=2).mean() > 0.5     # on white (quantized: not quite 255)


def _title_ink(label: str):
    """Rows and columns of the dark pixels above one tile, at 200 dpi."""
    im = _png_image(small_multiples([(label, _solid((255, 255, 255), 1.0, 0.5))], tile_width=1.0))
    assert im.size == (200, 160)
    grey = np.asarray(im.convert("L"))[:60]
    ys, xs = np.nonzero(grey < 128)
    return (ys.min(), ys.max(), xs.min(), xs.max()) if len(ys) else None


def test_small_multiples_titles_are_10_pt_3_pt_above_the_tile():
    top, bottom, left, right = _title_ink("HHHHH")
    # 10 pt at 200 dpi: a capital H ~20 px tall, 5 of them ~110 px wide; the baseline 3 pt (8 px) over the tile
    assert (top, bottom, left, right) == pytest.approx(EXPECTED_INK, abs=1)
    with matplotlib.rc_context({"font.size": 20}):     # 10 pt whatever the style's default size
        assert _title_ink("HHHHH") == pytest.approx(EXPECTED_INK, abs=1)

    assert _title_ink("") is None


def test_small_multiples_resizes_a_figure_to_the_tile_width_height_scaled_by_at_least_0_9():
    wide, narrow = _solid((200, 200, 200), 1.5, 1.0), _solid((200, 200, 200), 0.5, 1.0)
    small_multiples([("wide", wide), ("narrow", narrow)], tile_width=1.0, dpi=20)
    assert tuple(wide.get_size_inches()) == pytest.approx((1.0, 0.9))      # 1/1.5 < 0.9: 0.9
    assert tuple(narrow.get_size_inches()) == pytest.approx((1.0, 2.0))    # 1/0.5 = 2
    assert isinstance(wide.get_layout_engine(), ConstrainedLayoutEngine)
    assert isinstance(narrow.get_layout_engine(), ConstrainedLayoutEngine)


def test_small_multiples_keeps_a_resized_figures_own_layout_engine():
    fig = _solid((200, 200, 200), 1.5, 1.0)
    fig.set_layout_engine("tight")
    small_multiples([("t", fig)], tile_width=1.0, dpi=20)
    assert isinstance(fig.get_layout_engine(), TightLayoutEngine)


def test_small_multiples_leaves_a_figure_within_0_01_in_of_the_tile_width_alone():
    tile = 0.002
    w = tile + 0.01
    assert abs(w - tile) == 0.01                          # exactly 0.01 apart: not more, so untouched
    near = _solid((200, 200, 200), w, w)
    same = Figure(figsize=(1.0, 0.5))
    same.add_subplot().set_title("a title far wider than one inch of figure at ten points", fontsize=10)
    small_multiples([("near", near)], tile_width=tile, dpi=200)
    small_multiples([("same", same)], tile_width=1.0, dpi=20)
    assert tuple(near.get_size_inches()) == (w, w) and near.get_layout_engine() is None
    assert tuple(same.get_size_inches()) == (1.0, 0.5) and same.get_layout_engine() is None
    assert "\n" not in same.axes[0].get_title()             # not refitted either


def test_small_multiples_refits_a_resized_figures_titles():
    fig = Figure(figsize=(3.0, 3.0))
    fig.add_subplot().set_title("a title far wider than one inch of figure at ten points", fontsize=10)
    small_multiples([("t", fig)], tile_width=1.0, dpi=20)
    assert "\n" in fig.axes[0].get_title()


def test_signalled_carries_its_signal_number():
    from scansnap.__main__ import _Signalled

    e = _Signalled(signal.SIGTERM)
    assert e.signum == signal.SIGTERM and e.args == (signal.SIGTERM,)
    assert isinstance(e, BaseException) and not isinstance(e, Exception)


def test_plain_decodes_each_entity_once():
    """A literal "&lt;b&gt;" written in HTML as "&amp;lt;b&amp;gt;" stays "&lt;b&gt;" (mutp found
    it decoded twice, to "<b>", while "&amp;" was decoded first)."""
    assert plain("&amp;lt;b&amp;gt; &amp; &lt;i&gt;") == "&lt;b&gt; & <i>"
