"""The book's figure style (scansnap.plots) and slider panels (scansnap.ui), without a browser."""
from __future__ import annotations

import math

import matplotlib
import numpy as np
import pytest
from matplotlib.figure import Figure

from scansnap import plots, syn_small
from scansnap import ui


def _sweep(num_last=(1, 3, 5, 10)):
    rows = [(nl, ez, r, s) for nl in num_last for ez in (0.5, 1.0) for r in (1.0, 2.0) for s in (1, 2)]
    nl, ez, r, s = (np.array(c, float) for c in zip(*rows))
    return nl, ez, r, 1.5 + 0.1 * s - 0.1 * ez


def _maps(T=12):
    rng = np.random.default_rng(0)
    a = np.tril(rng.random((T, T)))
    a /= a.sum(1, keepdims=True)
    return {"1-layer": {0: a, 500: a ** 2}, "3-layer": {0: a, 500: np.sqrt(a)}}


def _every_figure():
    nl, ez, r, ent = _sweep()
    thr = np.tile(np.geomspace(1e-3, 1e-1, 5), len(nl))
    rep = lambda a: np.repeat(a, 5)                                        # noqa: E731
    rec = np.clip(1 - np.log10(thr) / -3, 0, 1)
    cl = syn_small()
    Z = np.zeros((cl.M, cl.M))
    words = [f"w{i}" for i in range(12)]
    return {
        "cn_over_training": plots.cn_over_training(cl, {0: Z, 10: Z + 0.1}, loss=np.geomspace(1, 1e-3, 20)),
        "entropy_sweep": plots.entropy_sweep(nl, ez, r, ent),
        "h_vs_hstar": plots.h_vs_hstar([(50, 20, (0.5, 1)), (1000, 20, (1, 2))]),
        "growth_factor": plots.growth_factor(1000, 10, 0.5, (0.5, 1)),
        "B_fixed_ratio": plots.B_fixed_ratio([(100, [(0.5, 5), (1, 10)]), (10000, [(1, 1)])]),
        "cn_final": plots.cn_final(cl, {"a": Z, "b": Z + 0.2}, title="t"),
        "recall_curves": plots.recall_curves(rep(nl), rep(ez), rep(r), thr, rec, by="ratio"),
        "attention_maps": plots.attention_maps(_maps()),
        "attention_maps_words": plots.attention_maps(_maps(), tokens=words),
        "attention_maps_paper": plots.attention_maps(_maps(), tokens=words, columns="steps"),
        "entropy_vs_lr": plots.entropy_vs_lr([1, 1, 2, 2], [2.0, 2.1, 1.5, 1.6]),
        "freezing": plots.freezing([0, 250, 500], [2.4, 1.0, 0.5], [np.nan, 30, 20]),
    }


@pytest.fixture(scope="module")
def figures():
    with matplotlib.rc_context({"font.size": 6, "xtick.labelsize": 5, "figure.dpi": 72}):  # a hostile caller
        return _every_figure()


@pytest.mark.parametrize("name", [n for n in _every_figure()])
def test_every_figure_fits_the_column_with_legible_text(figures, name):
    """At most 6.8 in wide (shown at its own size in the ~690 px column) and no text below 9 pt,
    whatever the caller's rcParams; drawn at the style's 100 px per inch."""
    fig = figures[name]
    assert plots.legibility_problems(fig) == []
    assert fig.dpi == plots.STYLE["figure.dpi"]


def test_legibility_problems_catches_small_text_and_wide_figures():
    fig = Figure(figsize=(10, 3))
    ax = fig.subplots()
    ax.set_title("tiny", fontsize=7)
    found = plots.legibility_problems(fig)
    assert any("10.00 in wide" in p for p in found) and any("'tiny' at 7 pt" in p for p in found)


def test_panels_of_figs_6_11_12_are_2x2_with_one_legend(figures):
    for name in ("entropy_sweep", "recall_curves"):
        fig = figures[name]
        visible = [ax for ax in fig.axes if ax.get_visible()]
        assert len(visible) == 4 and len(fig.legends) == 1, name
        rows = {round(ax.get_position().y0, 2) for ax in visible}
        assert len(rows) == 2, f"{name}: panels in {len(rows)} rows, expected 2"


def test_attention_maps_label_every_word_and_have_a_colour_bar(figures):
    fig = figures["attention_maps_words"]
    fig.canvas.draw()
    shown = set()
    for ax in fig.axes:
        for t in ax.get_yticklabels() + ax.get_xticklabels():
            if t.get_visible() and t.get_text():
                shown.add(t.get_text())
    assert shown >= {f"w{i}" for i in range(12)}, f"words missing from the axes: {set(f'w{i}' for i in range(12)) - shown}"
    assert any(ax.get_label() == "<colorbar>" for ax in fig.axes)
    with pytest.raises(ValueError, match="tokens has 3 words, the maps are 12 x 12"):
        plots.attention_maps(_maps(), tokens=["a", "b", "c"])
    with pytest.raises(ValueError, match="columns must be"):
        plots.attention_maps(_maps(), columns="rows")


def test_inline_figures_are_retina_pngs_under_the_style():
    """What book.setup() does in a kernel: the style, and figures as 2x PNGs with half-size metadata."""
    from IPython.terminal.interactiveshell import TerminalInteractiveShell as Shell

    ip = Shell.instance()
    old, backend = dict(matplotlib.rcParams), matplotlib.get_backend()
    try:
        plots.inline_figures(ip)
        assert matplotlib.rcParams["font.size"] == plots.STYLE["font.size"]
        fig = Figure(figsize=(4, 2))
        fig.subplots().plot([0, 1])
        png, meta = ip.display_formatter.formatters["image/png"].lookup(fig)(fig)   # what a kernel sends
        png = png if isinstance(png, bytes) else __import__("base64").b64decode(png)
        from IPython.core.pylabtools import _pngxy
        w, h = _pngxy(png)
        assert abs(meta["width"] * 2 - w) <= 1 and w >= 2 * 4 * 100 * 0.8   # 2x of ~400 CSS px (less the tight crop), shown at half
    finally:
        import matplotlib.pyplot as plt
        plt.switch_backend(backend)
        matplotlib.rcParams.update(old)
        Shell.clear_instance()


# ---------------------------------------------------------------------------------------- ui

def test_labels_get_real_subscripts():
    sub = ui.SUB.format
    assert ui.label_html("η_Y") == "η" + sub("Y")
    assert ui.label_html("η_Y/η_Z") == "η" + sub("Y") + "/η" + sub("Z")
    assert ui.label_html("eta_{YZ}") == "η" + sub("YZ")
    assert ui.label_html("#last") == "#last"
    assert ui.label_html("a<b_1") == "a&lt;b" + sub("1")
    assert ui.label_html("beta") == "β" and ui.label_html("betaine") == "betaine"
    assert ui._plain("η_Y/η_Z") == "ηY/ηZ"


def _draw_factory(calls):
    def draw(a=1.0, kind="up"):
        calls.append((a, kind))
        fig = Figure(figsize=(4, 2.5))
        ax = fig.subplots()
        x = np.linspace(0, 1, 20)
        ax.plot(x, a * x if kind == "up" else -a * x, color="C0")
        return fig
    return draw


def test_precomputed_panel_shares_axes_limits_and_answers_without_redrawing():
    import ipywidgets as widgets

    calls = []
    panel = ui.slider_panel(_draw_factory(calls), progress=False,
                            a=widgets.SelectionSlider(options=(1.0, 3.0), value=1.0, description="η_Y"),
                            kind=widgets.SelectionSlider(options=("up", "down"), value="up", description="kind"))
    assert len(calls) == 4                                          # the whole grid, once
    controls, figure, status = panel.controls, panel.figure, panel.status
    assert panel.children[0] is controls and panel.children[2] is status     # no header without a title
    assert "scansnap-panel" in panel._dom_classes and status.layout.display == "none"
    if ui._widgets_major() >= 8:
        s = controls.children[0]
        assert s.description == ui.label_html("η_Y") and s.description_allow_html
    # every precomputed figure has the same size (no jump when a slider moves)
    pngs = set()

    def leaves(w):
        return [w] if isinstance(w, widgets.Image) else [x for c in w.children for x in leaves(c)]
    for leaf in leaves(figure):
        pngs.add(leaf.value)
        assert leaf.width == "400"
    assert len(pngs) == 4
    controls.children[0].value = 3.0          # in a live kernel: the stored figure, nothing re-drawn
    assert len(calls) == 4 and status.layout.display == "none"


def test_limits_are_the_union_over_states():
    lim = ui._Limits()
    figs = []
    for a in (1.0, 3.0, -2.0):
        fig = Figure()
        ax, ax2 = fig.subplots(1, 2)
        ax.plot([0, 1], [0, a])
        ax2.imshow(np.full((2, 2), a))
        lim.add(fig)
        figs.append(fig)
    for fig in figs:
        lim.apply(fig)
        ax = fig.axes[0]
        lo, hi = ax.get_ylim()
        assert lo <= -2.0 and hi >= 3.0
        assert fig.axes[1].get_images()[0].get_clim() == (-2.0, 3.0)
    assert len({f.axes[0].get_ylim() for f in figs}) == 1


def test_kernel_only_panel_draws_the_current_value_and_redraws():
    import ipywidgets as widgets

    calls = []
    panel = ui.slider_panel(_draw_factory(calls), precompute=False,
                            a=widgets.FloatLogSlider(value=1.0, min=-1, max=1, description="η_Z"))
    assert calls == [(1.0, "up")]
    image = panel.figure
    first = image.value
    panel.controls.children[0].value = 5.0
    assert calls[-1] == (5.0, "up") and image.value != first


def test_bad_panels_fail_early_with_the_reason():
    import ipywidgets as widgets

    draw = _draw_factory([])
    with pytest.raises(ValueError, match="at least one control"):
        ui.slider_panel(draw)
    with pytest.raises(TypeError, match="must be an ipywidgets.SelectionSlider"):
        ui.slider_panel(draw, a=widgets.FloatSlider())
    with pytest.raises(TypeError, match="value widget"):
        ui.slider_panel(draw, precompute=False, a=widgets.Button(description="x"))
    with pytest.raises(ValueError, match="at most 150 figures"):
        ui.slider_panel(draw, a=widgets.SelectionSlider(options=list(range(20))),
                        kind=widgets.SelectionSlider(options=list(range(10))))
    with pytest.raises(TypeError, match="not a matplotlib Figure"):
        ui.slider_panel(lambda a: "no figure", progress=False, a=widgets.SelectionSlider(options=(1, 2)))
    with pytest.raises(ValueError, match="scale must be"):
        ui.slider_panel(draw, scale=0, a=widgets.SelectionSlider(options=(1, 2)))


def test_a_failing_redraw_says_so_on_the_panel():
    import ipywidgets as widgets

    broken = []                             # the reader edits draw in a live kernel and breaks it

    def draw(a=1):
        if broken:
            raise ValueError("eta_Y must be positive, got -1")
        return _draw_factory([])(a=float(a))
    panel = ui.slider_panel(draw, precompute=False, a=widgets.SelectionSlider(options=(1, 2), value=1, description="a"))
    broken.append(True)
    with pytest.raises(ValueError, match="must be positive"):
        panel.controls.children[0].value = 2
    assert "redraw failed: ValueError: eta_Y must be positive" in panel.status.value


def test_inline_figures_are_never_wider_than_the_output_area_at_2x():
    """A cell's figure is cropped to its ink and drawn at most plots.OUTPUT_PX CSS px wide
    (2x pixels), whatever its size: the page never shows it below half its pixel size."""
    import io

    from PIL import Image

    for width in (4.0, 6.8, 7.1, 12.0):
        fig = Figure(figsize=(width, 3.0), layout="constrained")
        ax = fig.subplots()
        ax.plot([0, 1], [0, 1], label="a line")
        ax.set_title("a title " * 8)
        fig.legend(loc="outside right upper")
        png, meta = plots._retina_png(fig)
        w, h = Image.open(io.BytesIO(png)).size
        assert w <= 2 * plots.OUTPUT_PX and meta == {"width": w // 2, "height": h // 2}, (width, w, meta)
        if width == 4.0:
            assert w < 2 * plots.OUTPUT_PX - 100          # a narrow figure keeps its own size
    assert plots._retina_png(Figure()) is None
    assert plots.display_dpi(6.72) == 100.0 and plots.display_dpi(13.44) == 50.0
    with pytest.raises(ValueError, match="positive"):
        plots.display_dpi(0)


def test_inline_png_holds_all_the_ink_and_leaves_the_figure_as_it_was():
    """The PNG is the ink's box rendered once (no second tight-bbox pass): every edge keeps a
    white margin (nothing cut), the ink reaches close to each edge (the crop is tight), and the
    figure keeps its layout engine (a later display lays it out again)."""
    import io

    import numpy as np
    from PIL import Image

    for layout in ("constrained", None):
        fig = Figure(figsize=(6.8, 3.0), layout=layout)
        a1, a2 = fig.subplots(1, 2)
        a1.plot([1, 100], [0, 1e4], label="first")
        a2.imshow(np.arange(12.0).reshape(3, 4))
        a1.set_ylabel("a label on the left edge")
        fig.suptitle("a title on the top edge")
        fig.legend(loc="outside lower center" if layout else "lower right")
        engine = fig.get_layout_engine()
        png, meta = plots._retina_png(fig)
        assert fig.get_layout_engine() is engine, layout
        ink = np.asarray(Image.open(io.BytesIO(png)).convert("L")) < 250
        rows, cols = np.flatnonzero(ink.any(1)), np.flatnonzero(ink.any(0))
        h, w = ink.shape
        margins = rows[0], h - 1 - rows[-1], cols[0], w - 1 - cols[-1]
        assert all(2 <= m <= 14 for m in margins), (layout, margins)   # 0.05 in at 2x ~ 10 px


def test_shared_mathtext_cache_gives_the_same_images_and_is_used():
    """plots.share_mathtext_cache (one process-wide cache of parsed $...$ labels instead of
    matplotlib's 50 per renderer): the same PNG bytes, parses reused across draws and figures,
    and a change of a mathtext rcParam still takes effect (it is part of the key)."""
    from matplotlib import mathtext

    def fig():
        f = Figure(figsize=(6, 3))
        ax = f.subplots()
        for k in range(30):                       # more than 50 labels across the two dpis
            ax.loglog([1, 10 ** (k % 7 + 1)], [1, 2 + k], label=rf"$\eta_Y={k}$, $\nu_{{{k}}}$")
        ax.legend(ncols=3, fontsize=6)
        ax.set_xlabel(r"$t / \tau_0$")
        return f

    before = mathtext.MathTextParser.__dict__["_parse_cached"]
    original = getattr(before, "original", before)
    mathtext.MathTextParser._parse_cached = original
    try:
        plain = plots._retina_png(fig())[0]
        assert plots.share_mathtext_cache() and plots.share_mathtext_cache()   # idempotent
        shared = mathtext.MathTextParser.__dict__["_parse_cached"]
        assert plots._retina_png(fig())[0] == plain
        hits = shared.cache_info().hits
        assert plots._retina_png(fig())[0] == plain
        assert shared.cache_info().hits - hits > 60                # the second figure: all reused
        with matplotlib.rc_context({"mathtext.default": "regular"}):
            other = plots._retina_png(fig())[0]
        assert other != plain
        mathtext.MathTextParser._parse_cached = original
        with matplotlib.rc_context({"mathtext.default": "regular"}):
            assert plots._retina_png(fig())[0] == other
    finally:
        mathtext.MathTextParser._parse_cached = before


def test_figures_carry_their_smallest_text_size_in_the_png():
    """book.setup()'s PNGs (and the slider panels') carry the smallest font they were drawn with,
    in CSS px at their display size: the page keeps a figure wide enough to read it."""
    fig = Figure(figsize=(6.8, 3.0))
    ax = fig.subplots()
    ax.plot([0, 1], [0, 1])
    ax.tick_params(labelsize=9)
    ax.set_xlabel("x", fontsize=10)
    ax.set_title("a small note", fontsize=7)
    png, meta = plots._retina_png(fig)
    rec = plots.read_png_meta(png)
    assert rec["css_width"] == meta["width"]
    # 7 pt at the PNG's own CSS px per inch (at most 100: a 6.8 in figure cropped to its ink is shown at ~97)
    assert 7 * 90 / 72 < rec["min_font_px"] <= 7 * 100 / 72 + 1e-9, rec
    assert plots.legible_width(rec) == pytest.approx(rec["css_width"] * plots.MIN_TEXT_PX / rec["min_font_px"])
    ax.set_title("")                              # now the 9 pt tick labels are the smallest text
    rec9 = plots.read_png_meta(plots._retina_png(fig)[0])
    assert rec9["min_font_px"] > rec["min_font_px"] and plots.legible_width(rec9) < plots.legible_width(rec)
    png_ui, width = ui._png(fig)
    assert plots.read_png_meta(png_ui)["css_width"] == width
    assert plots.read_png_meta(b"\x89PNG\r\n\x1a\n") is None and plots.read_png_meta(b"GIF89a") is None
    assert plots.legible_width(None) is None and plots.legible_width({"min_font_px": None, "css_width": 9}) is None


def test_panel_has_a_title_a_question_accent_knobs_and_a_legible_figure():
    import ipywidgets as widgets

    panel = ui.slider_panel(_draw_factory([]), progress=False, title="Where does it go?",
                            question="Raise <i>a</i>: which way?",
                            a=widgets.SelectionSlider(options=(1.0, 3.0), value=1.0, description="η_Y"))
    head = panel.children[0]
    assert isinstance(head, widgets.HTML) and "Where does it go?" in head.value and "<i>a</i>" in head.value
    assert panel.children[1] is panel.controls and panel.children[3] is panel.status
    box = panel.children[2]
    assert "scansnap-figure" in box._dom_classes and box.children[0] is panel.figure
    slider = panel.controls.children[0]
    assert slider.style.handle_color == ui.ACCENT

    def leaves(w):
        return [w] if isinstance(w, widgets.Image) else [x for c in w.children for x in leaves(c)]
    for leaf in leaves(panel.figure):
        rec = plots.read_png_meta(leaf.value)
        want = min(rec["css_width"], rec["css_width"] * plots.MIN_TEXT_PX / rec["min_font_px"])
        assert leaf.layout.min_width == f"{math.ceil(want)}px", (leaf.layout.min_width, rec)
    with pytest.raises(TypeError, match="title must be a string"):
        ui.slider_panel(_draw_factory([]), progress=False, title=3, a=widgets.SelectionSlider(options=(1, 2)))
