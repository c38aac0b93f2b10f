"""Pure plotting functions: data in, a matplotlib Figure out (nothing is shown or saved here).

One figure style for the whole book (:data:`STYLE`): the page column is about 690 CSS px wide
and a figure is shown at 100 px per inch, so a figure at most :data:`COLUMN_WIDTH` = 6.8 in
wide is shown at its own size, never shrunk, and its 9-10 pt fonts read as 12-14 px.
:func:`scansnap.book.setup` applies the style to every chapter (``apply_style``) and makes the
inline figures 2x PNGs shown at half size (sharp on high-density screens); every function
here draws under the same style (``@_styled``), so the command line's PNGs match the book's.
"""
from __future__ import annotations

import functools
import math

import matplotlib
import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import NullFormatter

from .data import SequenceClasses
from .theory import attention_limit_all

COLUMN_WIDTH = 6.8   # inches: the widest figure the ~690 px column shows at full size (100 px/in)
# A cell's output area is 672 CSS px at 1280 px (the column less its output indent): an image is
# drawn at most that wide, at 2x pixels, so the page never shrinks it below half its pixel size.
OUTPUT_PX = 672


def display_dpi(width_in: float, base_dpi: float = 100.0) -> float:
    """CSS px per inch for a figure ``width_in`` wide: ``base_dpi``, or less for a figure that
    would be wider than :data:`OUTPUT_PX` (a 6.8 in figure cropped to 6.9 in: 97.4 px/in, its
    9 pt text at 8.8 pt, as the browser would have shrunk it; now in the PNG's own pixels)."""
    if not width_in > 0:
        raise ValueError(f"figure width must be positive, got {width_in!r} in")
    return min(float(base_dpi), OUTPUT_PX / width_in)
MIN_FONT_PT = 9      # smallest text in a figure, in points at display size

STYLE = {
    "figure.dpi": 100,              # 1 in = 100 CSS px on the page; 2x PNGs are saved at 200
    "figure.figsize": (COLUMN_WIDTH, 3.4),
    "figure.facecolor": "white",
    "savefig.dpi": 200,             # files written by fig.savefig without a dpi (sharp on 2x screens)
    "font.size": 10,
    "axes.titlesize": 10,
    "axes.labelsize": 10,
    "xtick.labelsize": 9,
    "ytick.labelsize": 9,
    "legend.fontsize": 9,
    "legend.title_fontsize": 9,
    "figure.titlesize": 11,
    "figure.labelsize": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.titlelocation": "center",
    "lines.linewidth": 1.5,
    "lines.markersize": 4,
    "legend.frameon": False,
    "image.cmap": "viridis",
}


def apply_style() -> None:
    """Make :data:`STYLE` the process-wide matplotlib style (what ``book.setup()`` calls)."""
    matplotlib.rcParams.update(STYLE)


def inline_figures(ip) -> None:
    """In the IPython shell ``ip``: figures inline under :data:`STYLE` (also after any later
    ``%matplotlib inline``: it re-applies the inline backend's rc, which becomes the style),
    as 2x ("retina") PNGs that the page shows at half their pixel size."""
    from IPython.core.pylabtools import select_figure_formats
    from matplotlib_inline.config import InlineBackend

    cfg = InlineBackend.instance(parent=ip)
    cfg.rc = dict(STYLE)
    # a 6.8 in figure cropped to its ink plus 0.05 in each side stays within the 688 px column
    cfg.print_figure_kwargs = {"bbox_inches": "tight", "pad_inches": 0.05}
    ip.run_line_magic("matplotlib", "inline")
    apply_style()
    cfg.figure_formats = {"retina"}
    select_figure_formats(ip, {"retina"}, **cfg.print_figure_kwargs)
    ip.display_formatter.formatters["image/png"].for_type(Figure, _retina_png)
    share_mathtext_cache()


def share_mathtext_cache() -> bool:
    """One process-wide cache of parsed mathtext ($...$ labels, log-axis tick labels) instead
    of matplotlib's per-renderer one. Matplotlib keeps 50 parses per ``MathTextParser``, and
    every draw makes a new renderer with a new parser: a figure whose labels at two dpis (the
    layout draw and the 2x PNG) number more than 50 evicts each before its next use, so every
    label is parsed again at every draw, ~8 ms each through pyparsing. The parse depends only
    on the arguments matplotlib keys its own cache with, the output type, and the mathtext
    rcParams (added to the key here): the images are the same bytes
    (``tests/test_layout.py``), a figure takes about a third less time
    (``bench/bench_mathtext.py``). Returns whether the cache is in place (False, and nothing
    changed, for a matplotlib whose parser is not built the way this expects)."""
    from matplotlib import mathtext

    current = mathtext.MathTextParser.__dict__.get("_parse_cached")
    if getattr(current, "_scansnap_shared", False):
        return True
    raw = getattr(current, "__wrapped__", None)
    if raw is None:
        return False
    one_of_each: dict = {}
    rc_keys = sorted(k for k in matplotlib.rcParams if k.startswith("mathtext."))

    @functools.lru_cache(4096)
    def cached(output_type, s, dpi, prop, antialiased, flags, rc):
        return raw(one_of_each[output_type], s, dpi, prop, antialiased, flags)

    def _parse_cached(self, s, dpi, prop, antialiased, load_glyph_flags):
        one_of_each.setdefault(self._output_type, self)
        rc = tuple(str(matplotlib.rcParams[k]) for k in rc_keys)
        return cached(self._output_type, s, dpi, prop, antialiased, load_glyph_flags, rc)

    _parse_cached._scansnap_shared = True
    _parse_cached.cache_info = cached.cache_info
    _parse_cached.original = current
    mathtext.MathTextParser._parse_cached = _parse_cached
    return True


# The figure's text size travels with its PNG (a tEXt chunk under this key, JSON): the smallest
# font it was drawn with, in CSS px at the figure's own display size, and that size. The book's
# pages read it to show a figure no smaller than its text allows (``_ext/scansnap_pages.py``),
# and the browser test to measure the text as displayed (``tests/test_browser.py``).
PNG_META_KEY = "scansnap-figure"
MIN_TEXT_PX = 9.0    # the smallest text a page may show, in CSS px as displayed (phone and desktop)


def smallest_text_pt(fig: Figure) -> float | None:
    """The smallest font size (points) of the visible, non-empty text of a drawn ``fig`` (tick
    labels included; sub- and superscripts count at their text's nominal size), or None."""
    sizes = [t.get_fontsize() for t in fig.findobj(matplotlib.text.Text)
             if t.get_visible() and t.get_text().strip() and t.figure is not None
             and (t.axes is None or t.axes.get_visible())]
    return min(sizes) if sizes else None


def png_meta(fig: Figure, css_px_per_inch: float, css_width: int) -> dict:
    """What the figure's PNG carries under :data:`PNG_META_KEY` (``fig`` drawn already):
    ``min_font_px`` (CSS px at the figure's display size, None without text) and ``css_width``."""
    pt = smallest_text_pt(fig)
    return {"min_font_px": None if pt is None else round(pt * css_px_per_inch / 72, 2),
            "css_width": int(css_width)}


def save_png(img, meta: dict) -> bytes:
    """A PIL image as a 256-colour PNG carrying ``meta`` (a tEXt chunk, :data:`PNG_META_KEY`)."""
    import io
    import json

    from PIL import Image, PngImagePlugin

    info = PngImagePlugin.PngInfo()
    info.add_text(PNG_META_KEY, json.dumps(meta, sort_keys=True))
    buf = io.BytesIO()
    img.convert("RGB").quantize(colors=256, method=Image.Quantize.FASTOCTREE).save(buf, "png", pnginfo=info)
    return buf.getvalue()


def read_png_meta(data: bytes) -> dict | None:
    """The :data:`PNG_META_KEY` record of a PNG's bytes (None if it has none, or is no PNG).
    Reads the chunks directly: no image decoding."""
    import json
    import struct

    data = bytes(data)            # an ipywidgets Image's value may be a memoryview
    if not data.startswith(b"\x89PNG\r\n\x1a\n"):
        return None
    pos, key = 8, PNG_META_KEY.encode() + b"\0"
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"tEXt" and body.startswith(key):
            try:
                return json.loads(body[len(key):].decode("latin-1"))
            except ValueError:
                return None
        if kind in (b"IDAT", b"IEND"):
            return None
        pos += 12 + length
    return None


def legible_width(meta: dict | None, min_px: float = MIN_TEXT_PX) -> float | None:
    """The narrowest CSS width at which a figure's smallest text reads ``min_px``: its display
    width times ``min_px / min_font_px`` (at most that width). None without a record or text."""
    if not meta or not meta.get("min_font_px") or not meta.get("css_width"):
        return None
    return min(float(meta["css_width"]), meta["css_width"] * min_px / meta["min_font_px"])


def _retina_png(fig):
    """A 2x PNG cropped to the ink (IPython's "retina" figure, with its half-size width/height),
    at most 2 x :data:`OUTPUT_PX` pixels wide (:func:`display_dpi`), quantized to 256 colours: a
    third of the bytes, nothing visible lost on line plots and viridis maps (a 256-colour map).
    The PNG carries its smallest text size (:func:`png_meta`, :data:`PNG_META_KEY`)."""
    import io

    from IPython.core.pylabtools import print_figure
    from PIL import Image

    if not fig.axes and not fig.lines:    # an empty figure: no image, as IPython does
        return None
    # Two draws, not four: lay the figure out once (its layout engine runs at draw time), take
    # the ink's box there, and render that box at 2x (bbox_inches="tight" would draw once more
    # to find the box at the PNG's dpi, and a crop that came out a pixel too wide, a third time).
    # The layout is kept for the render (constrained layout costs as much as a draw again).
    fig.draw_without_rendering()
    box = fig.get_tightbbox().padded(0.05)                 # inches, with 0.05 in pads
    dpi = display_dpi(box.width, fig.dpi)
    dpi = min(dpi, (OUTPUT_PX - 0.5) / box.width)          # round(width x 2 dpi) <= 2 x OUTPUT_PX
    engine = fig.get_layout_engine()
    if engine is not None:
        fig.set_layout_engine("none")
    try:
        png = print_figure(fig, "png", bbox_inches=box, dpi=2 * dpi)
    finally:
        if engine is not None:
            fig.set_layout_engine(engine)
    if png is None:
        return None
    w, h = Image.open(io.BytesIO(png)).size
    if w > 2 * OUTPUT_PX:
        raise RuntimeError(f"figure rendered {w} px wide, over {2 * OUTPUT_PX}: scansnap.plots._retina_png")
    meta = {"width": w // 2, "height": h // 2}
    # the text size rides in the PNG: the page shows the figure no smaller than it allows
    return save_png(Image.open(io.BytesIO(png)), png_meta(fig, dpi, w // 2)), meta


def _styled(fn):
    """Draw under :data:`STYLE` whatever the caller's rcParams, and keep tick labels at the
    style's size (ticks are made lazily, at draw time, outside the ``rc_context``)."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with matplotlib.rc_context(STYLE):
            fig = fn(*args, **kwargs)
            for ax in fig.axes:
                ax.tick_params(axis="x", which="both", labelsize=STYLE["xtick.labelsize"])
                ax.tick_params(axis="y", which="both", labelsize=STYLE["ytick.labelsize"])
        return fig
    return wrapper


def legibility_problems(fig: Figure, max_width: float = COLUMN_WIDTH, min_font: float = MIN_FONT_PT) -> list[str]:
    """What would make ``fig`` hard to read in the book's column: a figure wider than
    ``max_width`` inches (it would be shrunk, and its fonts with it), or visible text smaller
    than ``min_font`` points. An empty list means neither. Draws the figure once."""
    problems = []
    w, h = fig.get_size_inches()
    if w > max_width + 1e-9:
        problems.append(f"figure is {w:.2f} in wide (> {max_width} in): the page would shrink it")
    fig.canvas.draw()                 # creates the tick labels, with their final sizes
    for t in fig.findobj(matplotlib.text.Text):
        if t.get_visible() and t.get_text().strip() and t.get_fontsize() < min_font - 1e-9:
            problems.append(f"text {t.get_text()[:30]!r} at {t.get_fontsize():g} pt (< {min_font} pt)")
    return problems


def _grid(n: int, ncols: int = 2):
    """Rows and columns for ``n`` panels: one row up to ``ncols`` panels, else ``ncols`` columns."""
    ncols = min(n, ncols)
    return math.ceil(n / ncols), ncols


def _thin_labels(ax, positions, labels, axis: str = "x", fontsize: float = 9, rotation: float = 0):
    """Ticks at every position, labels on as many as fit without overlapping (every k-th)."""
    fig = ax.figure
    bbox = ax.get_position()
    length_in = (bbox.width * fig.get_figwidth()) if axis == "x" else (bbox.height * fig.get_figheight())
    n = max(1, len(labels))
    if axis == "x" and rotation == 0:
        need = max(len(str(s)) for s in labels) * 0.62 * fontsize + 0.6 * fontsize   # points per label
    else:
        need = 1.25 * fontsize
    k = max(1, math.ceil(n * need / (72 * length_in)))
    shown = [str(s) if i % k == 0 else "" for i, s in enumerate(labels)]
    if axis == "x":
        ax.set_xticks(positions, shown, rotation=rotation, fontsize=fontsize)
    else:
        ax.set_yticks(positions, shown, fontsize=fontsize)
    return k


@_styled
def cn_over_training(classes: SequenceClasses, snapshots: dict, n: int = 0, loss=None, ylim=None) -> Figure:
    """The paper's Fig. 4: c_n (Eq. 5) of class n over its tokens (common, then distinct) at several steps.

    ``snapshots`` maps step -> Z of shape (M, M). With ``loss`` (per step), a second panel
    below shows the training loss on a log axis; steps where it is exactly 0 (float32 underflow
    once the decoder is sure: -log 1) are drawn on a floor, float32's eps (1.2e-7) or the
    smallest positive loss if lower, marked by a dotted line and a legend entry.
    ``ylim`` fixes the c_n axis (a slider compares like with like).
    """
    support = classes.support(n)
    common = np.intersect1d(support, classes.common_tokens)
    distinct = classes.distinct_tokens(n)
    order = np.concatenate([common, distinct])
    # fixed margins, no layout engine: this figure is redrawn by sliders (about 0.1 s saved)
    if loss is not None:
        fig = Figure(figsize=(COLUMN_WIDTH, 5.0))
        ax, ax2 = fig.subplots(2, 1, gridspec_kw=dict(height_ratios=[3, 2]))
        fig.subplots_adjust(left=0.14, right=0.8, bottom=0.1, top=0.97, hspace=0.45)   # room for the log axis
    else:
        fig = Figure(figsize=(COLUMN_WIDTH, 3.4))
        ax = fig.subplots()
        fig.subplots_adjust(left=0.1, right=0.8, bottom=0.16, top=0.95)
    steps = sorted(snapshots)
    cmap = matplotlib.colormaps["viridis"]
    for i, s in enumerate(steps):
        c = attention_limit_all(classes, np.asarray(snapshots[s], float))[n]
        ax.plot(np.arange(len(order)), c[order], "o-", ms=3, color=cmap(i / max(1, len(steps) - 1)),
                label=f"step {s}")
    if ylim is not None:
        ax.set_ylim(*ylim)
    ax.axvspan(-0.5, len(common) - 0.5, color="0.9", zorder=0)
    top = ax.get_ylim()[1]
    ax.text(len(common) / 2 - 0.5, top * 0.97, "common", ha="center", va="top")
    ax.text(len(common) + len(distinct) / 2 - 0.5, top * 0.97,
            "distinct (P increasing →)", ha="center", va="top")
    _thin_labels(ax, np.arange(len(order)), [str(t) for t in order], "x")
    ax.set_xlabel(f"contextual token of class {n} (next token {classes.next_token[n]})")
    ax.set_ylabel(r"attention $c_{l|n}$ (Eq. 5)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
    if loss is not None:
        loss = np.asarray(loss, float)
        zero = loss == 0
        if zero.any():      # log axis: a loss of exactly 0 (float32 underflow) is drawn on a floor, said so
            positive = loss[~zero]
            floor = min(np.finfo(np.float32).eps, positive.min() if positive.size else 1.0)
            ax2.semilogy(np.arange(len(loss)), np.where(zero, floor, loss))
            ax2.axhline(floor, color="0.5", ls=":", lw=0.8, label=f"loss exactly 0 (float32),\ndrawn at {floor:.1g}")
            ax2.legend(loc="upper right")
        else:
            ax2.semilogy(np.arange(len(loss)), loss)
        ax2.set_xlabel("step")
        ax2.set_ylabel("training loss\n(batch mean)")
    return fig


def _panel_grid(n: int, height_per_row: float = 2.6, ncols: int = 2):
    """A figure one column wide with ``n`` panels, two per row (Figs. 6, 11, 12: 2x2)."""
    rows, cols = _grid(n, ncols)
    fig = Figure(figsize=(COLUMN_WIDTH, 0.9 + height_per_row * rows), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False, sharex=True)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, axes


@_styled
def entropy_sweep(num_last, eta_z, ratio, entropy) -> Figure:
    """The paper's Fig. 6: mean +- standard error (over seeds) of the distinct-token entropy vs eta_Y/eta_Z,
    one panel per vocabulary (#last/next tokens), two panels per row, one shared legend.

    Arguments are flat arrays, one entry per run (seeds are the repeats of a setting). The
    legend's title says what the points and bars are: the mean over the seeds of a setting
    and one standard error of that mean (sample sd / sqrt(seeds)), not the seeds' spread.
    """
    args = {"num_last": num_last, "eta_z": eta_z, "ratio": ratio, "entropy": entropy}
    for k, a in args.items():
        if callable(a):
            raise TypeError(f"entropy_sweep: {k} is a function ({getattr(a, '__name__', a)!r}), not numbers: "
                            "call it (e.g. res.distinct_entropy() or res.class_entropy().mean(1))")
    num_last, eta_z, ratio, entropy = (np.asarray(a) for a in args.values())
    if any(a.ndim != 1 or a.shape != num_last.shape for a in (num_last, eta_z, ratio, entropy)):
        raise ValueError("entropy_sweep: num_last, eta_z, ratio and entropy must be flat arrays of one length (one "
                         f"entry per run), got shapes {', '.join(f'{k} {np.shape(a)}' for k, a in args.items())}")
    panels = sorted(set(num_last.tolist()))
    _, repeats = np.unique(np.stack([num_last, eta_z, ratio]), axis=1, return_counts=True)
    fig, axes = _panel_grid(len(panels))
    for ax, nl in zip(axes.flat, panels):
        for i, ez in enumerate(sorted(set(eta_z.tolist()))):
            xs, ms, es = [], [], []
            for r in sorted(set(ratio.tolist())):
                sel = (num_last == nl) & (eta_z == ez) & (ratio == r)
                if sel.any():
                    v = entropy[sel]
                    xs.append(r)
                    ms.append(v.mean())
                    es.append(v.std(ddof=1) / np.sqrt(v.size) if v.size > 1 else 0.0)
            ax.errorbar(xs, ms, es, marker="o", ms=3, capsize=2, color=f"C{i}", label=rf"$\eta_Z={ez:g}$")
        ax.axvline(1, color="k", ls="--", lw=0.5)
        ax.set_title(f"#last/next tokens = {nl:g}/{2 * nl:g}")
    fig.supxlabel(r"$\eta_Y/\eta_Z$")
    fig.supylabel(r"average entropy of $c_n$ on distinct tokens")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    from matplotlib.lines import Line2D
    handles, labels = handles + [Line2D([], [], color="k", ls="--", lw=0.5)], labels + [r"$\eta_Y=\eta_Z$"]
    n = int(repeats.min()) if repeats.size else 0
    seeds = (f"{n} seeds" if repeats.min() == repeats.max() else f"{repeats.min()}-{repeats.max()} seeds")
    fig.legend(handles, labels, loc="outside upper center", ncols=len(labels),
               title=SWEEP_BARS.format(seeds=seeds) if repeats.max() > 1 else "one seed (no error bars)")
    return fig


# What Fig. 6's points and bars are, in the figure, the command line's help and the record
SWEEP_BARS = "mean ± standard error over {seeds}"


@_styled
def h_vs_hstar(panels) -> Figure:
    """The paper's Fig. 8: h*(s) (Eq. 33, discrete) against h(t) (Eq. 45, continuous) for several eta_Y.

    ``panels`` is a list of (M, steps, [eta_Y, ...]).
    """
    from .theory import h_closed, h_star
    rows, cols = _grid(len(panels))
    fig = Figure(figsize=(COLUMN_WIDTH, 0.6 + 3.0 * rows), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False)
    for ax, (M, steps, etas) in zip(axes.flat, panels):
        s = np.arange(steps + 1)
        for i, eta in enumerate(etas):
            color = f"C{i}"
            ax.plot(s, h_star(steps, M, eta), color=color, lw=1.2, label=rf"$\eta_Y={eta:g}$")
            ax.plot(s, h_closed(s, M, eta), color=color, ls="--", lw=1.0)
        ax.set_title(f"M = {M}")
        ax.set_xlabel("step s")
        ax.set_ylabel("h")
        ax.legend()
    fig.suptitle(r"solid: $h^*(\mu)$ (Eq. 33); dashed: $h(t)$ (Eq. 45)", fontsize=STYLE["axes.titlesize"])
    return fig


@_styled
def growth_factor(M: int, K: int, eta_z: float, eta_ys, C0: float = 1.0, t_max: float = 1e5, t=None) -> Figure:
    """The paper's Fig. 3: the growth factor e^{2 B_n(t)} (Eq. 12, Theorem 4) for several eta_Y; dotted t_0.
    theory.B_n is chapter 5's \bar B_n (K times chapter 4's B_n: the paper's eta_Z is per class), so as a
    bound on chi_{l_0} with eta_Z the run's own rate this reads e^{2 \bar B_n(t)/K} (appendix 5A, "the factor K").
    ``t``: the times drawn (default 400 points from 1 to ``t_max``)."""
    from .theory import B_n, transition_time
    t = np.geomspace(1, t_max, 400) if t is None else np.asarray(t, float)
    fig = Figure(figsize=(6.0, 3.4), layout="constrained")
    ax = fig.subplots()
    for i, ey in enumerate(eta_ys):
        ax.loglog(t, np.exp(2 * B_n(t, M, K, ey, eta_z, C0)), color=f"C{i}", label=rf"$\eta_Y={ey:g}$")
        ax.axvline(transition_time(M, K, ey), color=f"C{i}", ls=":", lw=0.8)
    ax.set_xlabel(r"gradient-flow time $t$ (dotted: $t_0$, the same clock)")
    ax.set_ylabel(r"$e^{2B_n(t)}$, the paper's growth factor")
    ax.set_title(rf"$M={M}$, $K={K}$, $\eta_Z={eta_z:g}$, $C_0={C0:g}$; dotted: $t_0$")
    ax.legend()
    return fig


@_styled
def B_fixed_ratio(panels, K: int = 10, C0: float = 1.0, t_max: float = 1e6, t=None) -> Figure:
    """The paper's Fig. 9: B_n(t) at fixed nu = eta_Y/eta_Z; ``panels`` = [(M, [(eta_Z, eta_Y), ...]), ...].
    ``t``: the times drawn (default 400 points from 1 to ``t_max``)."""
    from .theory import B_n, transition_time
    t = np.geomspace(1, t_max, 400) if t is None else np.asarray(t, float)
    rows, cols = _grid(len(panels))
    fig = Figure(figsize=(COLUMN_WIDTH, 0.4 + 3.4 * rows), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False)
    for ax, (M, pairs) in zip(axes.flat, panels):
        for i, (ez, ey) in enumerate(pairs):
            ax.semilogx(t, B_n(t, M, K, ey, ez, C0), color=f"C{i}", label=rf"$\eta_Z={ez:g},\ \eta_Y={ey:g}$")
            ax.axvline(transition_time(M, K, ey), color=f"C{i}", ls=":", lw=0.8)
        ax.set_title(rf"$M={M}$, $\nu=\eta_Y/\eta_Z={pairs[0][1] / pairs[0][0]:g}$")
        ax.set_xlabel(r"gradient-flow time $t$ (dotted: $t_0$)")
        ax.set_ylabel(r"$B_n(t)$ (corrected Eq. 129)")
        ax.legend()
    return fig


@_styled
def cn_final(classes: SequenceClasses, Zs: dict, n: int = 0, title: str = "") -> Figure:
    """The paper's Fig. 5: the final attention c_n of class n over its tokens, one line per setting (label -> Z)."""
    support = classes.support(n)
    order = np.concatenate([np.intersect1d(support, classes.common_tokens), classes.distinct_tokens(n)])
    fig = Figure(figsize=(COLUMN_WIDTH, 3.4), layout="constrained")
    ax = fig.subplots()
    for label, Z in Zs.items():
        c = attention_limit_all(classes, np.asarray(Z, float))[n]
        ax.plot(np.arange(len(order)), c[order], "o-", ms=3, label=label)
    ax.set_xlabel(f"contextual token of class {n}: common, then distinct by increasing P")
    ax.set_ylabel(r"final attention $c_{l|n}$")
    ax.set_title(title)
    ax.legend()
    fig.get_layout_engine().execute(fig)      # final axes size, so the token labels can be thinned
    _thin_labels(ax, np.arange(len(order)), [str(t) for t in order], "x")
    return fig


@_styled
def recall_curves(num_last, eta_z, ratio, threshold, recall, by: str, at=1.0) -> Figure:
    """Figs. 11-12: recall vs threshold, one curve per value of ``by`` ('ratio': eta_Y/eta_Z,
    Fig. 11; 'eta_z': Fig. 12) at a held value of the other rate, ``at`` (eta_Z for
    ``by='ratio'``, eta_Y/eta_Z for ``by='eta_z'``; the paper's: 1), one panel per num_last (two
    per row, one shared legend). ``at``: one value (its legend's title says it) or several (a
    panel per held value and num_last, each titled with both). A held value the data lacks is
    a ValueError naming it."""
    if by not in ("ratio", "eta_z"):
        raise ValueError(f"by must be 'ratio' or 'eta_z', got {by!r}")
    num_last, eta_z, ratio, threshold, recall = (np.asarray(a) for a in (num_last, eta_z, ratio, threshold, recall))
    held, key = (eta_z, ratio) if by == "ratio" else (ratio, eta_z)
    word, sym = ("eta_Z", r"$\eta_Z$") if by == "ratio" else ("eta_Y/eta_Z", r"$\eta_Y/\eta_Z$")
    ats = sorted({float(v) for v in np.atleast_1d(np.asarray(at, dtype=float))})
    have = sorted(set(held.tolist()))
    missing = [v for v in ats if v not in have]
    if not ats or missing:
        raise ValueError(f"no rows with {word} = {', '.join(f'{v:g}' for v in (missing or ats))} (the data has "
                         f"{word} = {', '.join(f'{v:g}' for v in have)})")
    panels = [(h, nl) for h in ats for nl in sorted(set(num_last.tolist()))]
    fig, axes = _panel_grid(len(panels))
    for ax, (h, nl) in zip(axes.flat, panels):
        fixed = held == h
        for i, v in enumerate(sorted(set(key[fixed].tolist()))):
            sel = fixed & (num_last == nl) & (key == v)
            ax.semilogx(threshold[sel], recall[sel], marker="o", ms=2, color=f"C{i}",
                        label=(rf"$\eta_Y/\eta_Z={v:g}$" if by == "ratio" else rf"$\eta_Z={v:g}$"))
        ax.set_title(f"#last/next tokens = {nl:g}/{2 * nl:g}" + (f", {sym} = {h:g}" if len(ats) > 1 else ""))
        ax.xaxis.set_minor_formatter(NullFormatter())
    fig.supxlabel("threshold on softmax($z_m$)")
    fig.supylabel("recall of distinct tokens")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside upper center", ncols=len(labels),
               title=f"at {sym} = {ats[0]:g}" if len(ats) == 1 else None)
    return fig


@_styled
def attention_maps(maps: dict, tokens=None, columns: str | None = None, label_size: float = MIN_FONT_PT) -> Figure:
    """The paper's Fig. 7: attention heat maps, ``maps`` = {label: {step: (T, T) array}}, one colour bar (0-1).

    ``columns="steps"`` lays them out as the paper does (one row per label, one column per
    step); ``columns="labels"`` transposes (one column per label, one row per step: larger
    panels, so every word fits). ``tokens``: the T words of the window. Query words label
    the rows (even positions on the left of the first column, odd ones on the right of the
    last), attended words the columns (even at the bottom, odd at the top), each at
    ``label_size`` points; where the panels are too small for all of them, every k-th word is
    shown. Default: ``"labels"`` with tokens, ``"steps"`` without.
    """
    labels = list(maps)
    steps = sorted(maps[labels[0]])
    T = np.asarray(maps[labels[0]][steps[0]]).shape[0]
    if tokens is not None:
        tokens = [str(t) for t in tokens]
        if len(tokens) != T:
            raise ValueError(f"tokens has {len(tokens)} words, the maps are {T} x {T}")
    columns = columns or ("labels" if tokens is not None else "steps")
    if columns not in ("steps", "labels"):
        raise ValueError(f"columns must be 'steps' or 'labels', got {columns!r}")
    if columns == "steps":
        grid = [[(lab, s) for s in steps] for lab in labels]
    else:
        grid = [[(lab, s) for lab in labels] for s in steps]
    nrows, ncols = len(grid), len(grid[0])
    word_in = 0.0 if tokens is None else 0.075 * max(len(t) for t in tokens) * label_size / 9 + 0.15
    two_sided = tokens is not None and ncols > 1
    # the width left for the maps once the words (and, in the paper's layout, the labels) are placed
    side = (COLUMN_WIDTH - 0.3 - word_in * (2 if two_sided else 1) - (0.3 if columns == "steps" else 0)
            - 0.1 * (ncols - 1)) / ncols
    fig = Figure(figsize=(COLUMN_WIDTH, nrows * (side + 0.35) + 2 * word_in + 0.6), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    pos = np.arange(T)
    top = tokens is not None and nrows > 1 and columns == "labels"     # odd words above the top row
    k = 1 if tokens is None else _label_step(T, side, label_size, halves=two_sided)
    kx = 1 if tokens is None else _label_step(T, side, label_size, halves=top)
    im = None
    for i, row in enumerate(grid):
        for j, (lab, s) in enumerate(row):
            ax = axes[i, j]
            im = ax.imshow(np.asarray(maps[lab][s]), cmap="viridis", vmin=0, vmax=1, interpolation="nearest")
            ax.spines[:].set_visible(True)          # a map is a closed square (the style drops two spines)
            if columns == "steps":
                ax.set_title(f"iteration {s}")
                if j == 0:
                    ax.set_ylabel(lab, fontsize=STYLE["axes.labelsize"])
            else:
                ax.set_title(f"{lab}, iteration {s}" if i == 0 else f"iteration {s}")
            if tokens is None:
                ax.set_xticks([]); ax.set_yticks([])
                continue
            ax.tick_params(length=2, labelsize=label_size)
            ylab, xlab = [""] * T, [""] * T
            if j == 0:
                ylab = _every(tokens, k, 0, 2 if two_sided else 1)
            elif two_sided and j == ncols - 1:
                ylab = _every(tokens, k, 1, 2)
                ax.tick_params(axis="y", labelleft=False, labelright=True)
            if i == nrows - 1:
                xlab = _every(tokens, kx, 0, 2 if top else 1)
            elif top and i == 0:
                xlab = _every(tokens, kx, 1, 2)
                ax.tick_params(axis="x", labelbottom=False, labeltop=True)
            ax.set_yticks(pos, ylab)
            ax.set_xticks(pos, xlab, rotation=90)
    if tokens is not None:
        fig.suptitle("rows: the query word; columns: the word it attends to", fontsize=STYLE["axes.titlesize"])
    # below the maps, horizontal: the column's width goes to the maps
    fig.colorbar(im, ax=axes, location="bottom", shrink=0.5, aspect=30, label="attention")
    return fig


def _label_step(n: int, side_in: float, size: float, halves: bool) -> int:
    """k such that every k-th label of ``n`` (of every other one if ``halves``) fits on an axis
    ``side_in`` inches long at ``size`` points (1.1 line spacing)."""
    per = 2 if halves else 1
    return max(1, math.ceil((n / per) * 1.1 * size / (72 * side_in)))


def _every(tokens, k: int, start: int, stride: int):
    """Labels at positions start, start + stride, ... (every k-th of those); others blank."""
    return [t if i >= start and (i - start) % stride == 0 and ((i - start) // stride) % k == 0 else ""
            for i, t in enumerate(tokens)]


@_styled
def entropy_vs_lr(lr, entropy) -> Figure:
    """The paper's Fig. 10: mean +- std (over seeds) of the validation attention entropy vs learning rate."""
    lr, entropy = np.asarray(lr), np.asarray(entropy)
    xs = sorted(set(lr.tolist()))
    fig = Figure(figsize=(4.8, 3.2), layout="constrained")
    ax = fig.subplots()
    ax.errorbar(xs, [entropy[lr == x].mean() for x in xs], [entropy[lr == x].std() for x in xs],
                marker="o", capsize=3)
    ax.set_xlabel("SGD learning rate")
    ax.set_ylabel("attention entropy (validation)")
    return fig


@_styled
def freezing(iteration, entropy, change, loss=None) -> Figure:
    """The longer run of the paper's Fig. 7: row entropy of the lowest layer's attention and its change between
    snapshots (NaN for the first), against the iteration; the learning rate is constant."""
    it, ent, ch = (np.asarray(a, dtype=float) for a in (iteration, entropy, change))
    fig = Figure(figsize=(COLUMN_WIDTH, 3.0), layout="constrained")
    a1, a2 = fig.subplots(1, 2)
    a1.plot(it, ent, "o-", ms=3)
    a1.set_xlabel("iteration"); a1.set_ylabel("mean row entropy\nof the attention")
    a2.plot(it[1:], ch[1:], "o-", ms=3)
    a2.set_xlabel("iteration"); a2.set_ylabel(f"change per {it[1] - it[0]:g} steps")
    a2.set_ylim(0, None)
    return fig


def sequence_classes(classes: SequenceClasses, show=None, sequence=None) -> Figure:
    """Sequence classes drawn (the idea of the paper's Fig. 1(b), Sec. 3.2): one panel per class n.

    Each panel shows P(l|n) over the whole vocabulary: common tokens grey, the class's distinct
    tokens in its colour, its query token psi(n) (hatched) and its next token n (outlined)
    marked; both have P(l|n) = 0, they never occur among the contextual tokens. ``show`` lists
    the classes to draw (default all; at most 6). ``sequence = (tokens, n)`` adds a strip
    below: one sequence of class n, x_1..x_{T-1}, then the query x_T (the last of ``tokens``),
    then the next token x_{T+1} = next_token[n] that the model must predict.
    """
    from matplotlib.patches import Patch, Rectangle

    show = list(range(classes.K)) if show is None else [int(n) for n in np.atleast_1d(show)]
    if not 1 <= len(show) <= 6:
        raise ValueError(f"show must list 1 to 6 classes; got {len(show)}")
    for n in show:
        classes._check_class(n)
    if sequence is not None:
        tokens, n_seq = sequence
        tokens = np.asarray(tokens)
        classes._check_class(n_seq)
        if tokens.ndim != 1 or tokens.size < 2 or not np.issubdtype(tokens.dtype, np.integer):
            raise ValueError(f"sequence tokens must be a 1-d integer array of length >= 2; got {tokens!r}")
        if tokens.min() < 0 or tokens.max() >= classes.M:
            raise ValueError(f"sequence has a token id out of range [0, {classes.M}): {tokens.tolist()}")
        if tokens[-1] != classes.query[n_seq]:
            raise ValueError(f"a sequence of class {n_seq} ends with its query {classes.query[n_seq]}, "
                             f"got {int(tokens[-1])}")
        bad = sorted({int(t) for t in tokens[:-1] if classes.probs[n_seq, t] == 0})
        if bad:
            raise ValueError(f"tokens {bad} cannot occur in a sequence of class {n_seq} (P(l|n) = 0)")
    M, grey = classes.M, "0.62"
    colour = {n: f"C{i}" for i, n in enumerate(show)}

    def kind_colour(l, n):
        return colour.get(n, "C7") if classes.distinct_mask[n, l] else grey

    heights = [1.0] * len(show) + ([0.5] if sequence is not None else [])
    fig = Figure(figsize=(6.8, 1.5 * len(show) + (0.9 if sequence is not None else 0) + 0.35),
                 layout="constrained")
    axes = fig.subplots(len(heights), 1, gridspec_kw={"height_ratios": heights}, squeeze=False)[:, 0]
    top = classes.probs[show].max() * 1.9
    step = 5 if M <= 200 else 20
    for ax, n in zip(axes, show):
        p = classes.probs[n]
        support = np.flatnonzero(p > 0)
        ax.bar(support, p[support], width=0.8, color=[kind_colour(l, n) for l in support])
        # query and next token: P(l|n) = 0 for both, so a marker on the axis, not a bar
        q, nx = classes.query[n], classes.next_token[n]
        ax.plot([q], [0], marker="^", ms=9, color="k", clip_on=False, zorder=5)
        ax.plot([nx], [0], marker="*", ms=11, color=colour[n], clip_on=False, zorder=5)
        ax.annotate(f"query {q}", (q, 0), xytext=(q - 0.3, top * 0.8), ha="right", va="center",
                    fontsize=9, arrowprops=dict(arrowstyle="-", lw=0.8, color="k"))
        ax.annotate(f"next token {nx}", (nx, 0), xytext=(nx + 0.3, top * 0.8), ha="left", va="center",
                    fontsize=9, color=colour[n], arrowprops=dict(arrowstyle="-", lw=0.8, color=colour[n]))
        ax.set_xlim(-0.7, M - 0.3)
        ax.set_ylim(0, top)
        ax.set_ylabel(f"P(l | class {n})", fontsize=9)
        ticks = np.arange(0, M, step)
        ax.set_xticks(ticks, [str(t) for t in ticks])
        ax.set_xticks(np.arange(M), minor=True)
        ax.tick_params(labelsize=9)
        ax.spines[["top", "right"]].set_visible(False)
    axes[len(show) - 1].set_xlabel("token id l (the vocabulary)", fontsize=9)
    handles = [Patch(color=grey, label="common")]
    handles += [Patch(color=colour[n], label=f"distinct, class {n}") for n in show]
    fig.legend(handles=handles, fontsize=9, ncol=min(len(handles), 4), loc="outside upper center",
               frameon=False)
    if sequence is not None:
        ax = axes[-1]
        T = len(tokens)
        for t, l in enumerate(tokens[:-1]):
            ax.add_patch(Rectangle((t, 0), 0.92, 1, color=kind_colour(l, n_seq)))
            ax.text(t + 0.46, 0.5, str(int(l)), ha="center", va="center", fontsize=9,
                    color="white" if classes.distinct_mask[n_seq, l] else "k")
        ax.add_patch(Rectangle((T - 1, 0), 0.92, 1, facecolor="white", edgecolor="k", hatch="///", lw=0.8))
        ax.text(T - 0.54, 0.5, str(int(tokens[-1])), ha="center", va="center", fontsize=9,
                bbox=dict(facecolor="white", edgecolor="none", pad=0.5))
        ax.add_patch(Rectangle((T + 0.6, 0), 0.92, 1, facecolor="white", edgecolor=colour.get(n_seq, "C7"),
                               lw=1.5, ls="--"))
        ax.text(T + 1.06, 0.5, str(int(classes.next_token[n_seq])), ha="center", va="center", fontsize=9)
        ax.annotate("", (T + 0.6, 0.5), (T - 0.06, 0.5), arrowprops=dict(arrowstyle="->", lw=1))
        ax.text((T - 1) / 2, 1.12, f"contextual tokens $x_1, \\dots, x_{{{T - 1}}}$, drawn i.i.d. from "
                f"P(l | class {n_seq})", ha="center", va="bottom", fontsize=9)
        ax.text(T - 0.54, 1.12, "query", ha="center", va="bottom", fontsize=9)
        ax.text(T + 1.06, 1.12, "next?", ha="center", va="bottom", fontsize=9)
        ax.set_xlim(-0.2, T + 1.8)
        ax.set_ylim(-0.05, 1.6)
        ax.set_xticks([])
        ax.set_yticks([])
        ax.spines[:].set_visible(False)
    return fig


# ---------------------------------------------------------------------------------------
# The intro's hero figure and chapter 1's model diagram
# ---------------------------------------------------------------------------------------

def _box(ax, x, y, text, face, w=0.9, h=0.9, fontsize=9, bold=False):
    """A rounded box centred at (x, y) with ``text`` in it (data coordinates)."""
    from matplotlib.patches import FancyBboxPatch
    ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0,rounding_size=0.1",
                                facecolor=face, edgecolor="0.3", lw=0.8))
    ax.text(x, y, text, ha="center", va="center", fontsize=fontsize,
            fontweight="bold" if bold else "normal")


def _arrow(ax, x0, y0, x1, y1, color="0.3", lw=1.2):
    ax.annotate("", xy=(x1, y1), xytext=(x0, y0),
                arrowprops=dict(arrowstyle="-|>", color=color, lw=lw, shrinkA=0, shrinkB=0))


def model_diagram(context, query: str, next_token: str, attention, probs: dict) -> Figure:
    """Chapter 1: the one-layer model of Eq. 1-2 on one example, drawn as the data flows.

    ``context`` holds the names of the contextual tokens x_1..x_{T-1}, ``query`` the name of
    x_T, ``attention`` the weights b_T (Eq. 1) the query pays each contextual position, and
    ``probs`` maps a few candidate next tokens to the model's probability alpha (Eq. 2);
    ``next_token`` is the target x_{T+1}. Every number drawn is passed in.
    """
    from matplotlib.patches import Rectangle

    attention = np.asarray(attention, float)
    n = len(context)
    if attention.shape != (n,):
        raise ValueError(f"attention must have one weight per contextual token ({n}); got shape {attention.shape}")
    if np.any(attention < 0) or abs(attention.sum() - 1) > 1e-6:
        raise ValueError(f"attention must be a distribution over the context; it sums to {attention.sum()!r}")
    fig = Figure(figsize=(6.8, 3.6))
    ax = fig.add_axes([0.005, 0.005, 0.99, 0.99])
    ax.set_xlim(-0.75, 13.0)
    ax.set_ylim(0.0, 7.3)
    ax.axis("off")
    # top: the sequence and the attention the query pays each position (step 1)
    xs = np.arange(n) * 1.25
    y_tok, y_bar, bar_h = 3.95, 4.35, 1.75
    for x, tok, b in zip(xs, context, attention):
        _box(ax, x, y_tok, tok, "#e8eef7", w=1.12, h=0.62)
        hgt = bar_h * b / attention.max()
        ax.add_patch(Rectangle((x - 0.32, y_bar), 0.64, hgt, facecolor="C0", alpha=0.85))
        ax.text(x, y_bar + hgt + 0.08, f"{b:.2f}", ha="center", va="bottom", fontsize=9)
    xq = xs[-1] + 1.75
    _box(ax, xq, y_tok, query, "#ecd5f3", w=1.15, h=0.62, bold=True)
    ax.text(xq, y_tok - 0.45, r"query $x_T$", ha="center", va="top", fontsize=9)
    ax.text(xs.mean(), y_tok - 0.45, r"contextual tokens $x_1,\dots,x_{T-1}$", ha="center", va="top", fontsize=9)
    ax.text(-0.7, 7.25, "1. attention: the query scores every contextual token,", ha="left", va="top", fontsize=9)
    ax.text(-0.7, 6.8, r"   $b_{tT}\propto\exp(z_{x_T x_t})$ (Eq. 1); bars: $b_{tT}$", ha="left", va="top", fontsize=9)
    # bottom: the rest of the forward pass (steps 2-5) and the prediction
    stages = [(r"2. mix" "\n" r"$X^\top b_T$", 0.55),
              (r"3. normalise" "\n" r"$f=X^\top b_T/\|X^\top b_T\|$", 3.55),
              (r"4. decoder" "\n" r"logits $Y^\top f$", 6.65),
              (r"5. softmax" "\n" r"$\alpha$ (Eq. 2)", 9.05)]
    widths = [1.9, 3.1, 2.1, 1.7]
    y = 1.45
    for i, ((text, x), w) in enumerate(zip(stages, widths)):
        _box(ax, x, y, text, "#f2f2f2", w=w, h=1.3)
        if i:
            _arrow(ax, stages[i - 1][1] + widths[i - 1] / 2, y, x - w / 2, y)
    _arrow(ax, xs.mean(), y_tok - 0.95, stages[0][1] + 0.3, y + 0.67)
    ranked = sorted(probs.items(), key=lambda kv: -kv[1])
    _arrow(ax, stages[-1][1] + widths[-1] / 2, y, 10.3, y)
    for i, (k, v) in enumerate(ranked):
        ax.text(10.4, y + 0.45 - 0.45 * i, f"{k}: {v:.2f}", ha="left", va="center", fontsize=9,
                fontweight="bold" if k == next_token else "normal")
    ax.text(10.4, y - 0.95, rf"(target $x_{{T+1}}$: {next_token})", ha="left", va="center", fontsize=9)
    return fig


def _darker(colour, keep: float = 0.55):
    """``colour`` mixed with black (``keep`` of it left): text that reads on white (>= 4.5:1 for the
    pale end of a sequential map)."""
    from matplotlib.colors import to_rgb
    return tuple(keep * x for x in to_rgb(colour))


def hero(classes: SequenceClasses, steps, c, gamma, speed, t0: float, sequences, n: int = 0,
         frozen: float | None = None, frozen_label: str = "snapped: most of the change done") -> Figure:
    """The intro's figure: the data, the scan of one training run, and what stops it.

    (a) one sampled sequence per class (common tokens grey, distinct tokens coloured by class,
    darker = more frequent), the query and the next token, and over each contextual token the
    attention its query pays it after training (bar) and at step 0 (dashed: uniform).
    ``sequences`` is a list of (contextual tokens (T-1,), class index, attention (T-1,)).
    (b) c_{l|n} (Eq. 5) of class ``n`` for each of its tokens over training: ``c`` is
    (S, M), one row per entry of ``steps`` (S,). (c) gamma(t) of Eq. 85 and the measured
    attention speed ||c_n(s) - c_n(s-1)||_1, each divided by its peak (``gamma``, ``speed``:
    (S,)). ``t0`` (in steps: Theorem 4's t0 converted to the run's clock by the caller) is
    marked in (b) and (c); from step ``frozen`` on (if given) both are shaded as the snapped
    phase, labelled ``frozen_label`` (say what was measured: the snap slows the attention, it
    does not stop it, chapter 5).
    """
    import matplotlib
    from matplotlib.patches import Rectangle

    steps, c, gamma, speed = (np.asarray(a, float) for a in (steps, c, gamma, speed))
    S = steps.size
    if c.shape != (S, classes.M) or gamma.shape != (S,) or speed.shape != (S,):
        raise ValueError(f"c must be (steps, M) = ({S}, {classes.M}), gamma and speed ({S},); "
                         f"got {c.shape}, {gamma.shape}, {speed.shape}")
    for name, v in (("t0", t0), ("frozen", frozen)):
        if v is not None and not steps[0] <= v <= steps[-1]:
            raise ValueError(f"{name} = {v!r} lies outside the steps [{steps[0]:g}, {steps[-1]:g}]")
    cmaps = [matplotlib.colormaps[m] for m in ("Blues", "Oranges", "Greens", "Purples")]

    def colour(tok):
        if tok in classes.common_tokens:
            return "0.62"
        owner = int(np.flatnonzero(classes.probs[:, tok] > 0)[0])
        d = classes.distinct_tokens(owner)
        rank = int(np.sum(classes.probs[owner, d] < classes.probs[owner, tok])) / max(1, len(d) - 1)
        return cmaps[owner % len(cmaps)](0.35 + 0.6 * rank)

    fig = Figure(figsize=(6.8, 7.2))
    gs = fig.add_gridspec(3, 1, height_ratios=[1.45, 1.55, 0.85], left=0.105, right=0.76, top=0.99,
                          bottom=0.065, hspace=0.22)
    # (a) the data, and the attention after training
    ax = fig.add_subplot(gs[0])
    ax.axis("off")
    rows, L = len(sequences), max(len(s[0]) for s in sequences)
    row_h = 2.1
    ax.set_xlim(-0.6, L + 2.9)
    ax.set_ylim(-0.6, row_h * rows + 0.2)
    ax.set_position([0.01, ax.get_position().y0, 0.98, ax.get_position().height])
    for r, (ctx, k, b) in enumerate(sequences):
        ctx, b = np.asarray(ctx), np.asarray(b, float)
        y = row_h * (rows - 1 - r) + 0.3
        uniform = 1.0 / len(ctx)
        scale = 1.3 / max(float(b.max()), uniform)
        for x, (tok, bt) in enumerate(zip(ctx, b)):
            _box(ax, x, y, str(int(tok)), colour(int(tok)), w=0.86, h=0.6)
            ax.add_patch(Rectangle((x - 0.3, y + 0.36), 0.6, bt * scale, facecolor="C0", alpha=0.8))
            ax.plot([x - 0.4, x + 0.4], [y + 0.36 + uniform * scale] * 2, color="k", ls="--", lw=0.8)
        xq = len(ctx) + 0.25
        _box(ax, xq, y, str(int(classes.query[k])), "#ecd5f3", w=0.95, h=0.6, bold=True)
        _arrow(ax, xq + 0.5, y, xq + 1.05, y)
        _box(ax, xq + 1.6, y, str(int(classes.next_token[k])), "#cdebcb", w=0.95, h=0.6, bold=True)
        ax.text(xq + 0.8, y + 0.5, f"class {k}", ha="center", va="bottom", fontsize=9)
    ax.text(L + 0.25, -0.1, "query", ha="center", va="top", fontsize=9)
    ax.text(L + 1.85, -0.1, "next", ha="center", va="top", fontsize=9)
    ax.text(-0.55, row_h * rows + 0.15, "(a) two sequence classes: grey tokens occur in both (common), "
            "coloured ones in one (distinct)", fontsize=9, va="top")
    # (b) the scan: c_{l|n} over training
    ax = fig.add_subplot(gs[1])
    support = classes.support(n)
    common = np.intersect1d(support, classes.common_tokens)
    distinct = classes.distinct_tokens(n)
    for tok in common:
        ax.plot(steps, c[:, tok], color="0.62", lw=1.0)
    for tok in distinct:
        ax.plot(steps, c[:, tok], color=colour(int(tok)), lw=1.6)
    top = distinct[np.argmax(classes.probs[n, distinct])]
    rare = distinct[np.argmin(classes.probs[n, distinct])]
    right = dict(xycoords=("axes fraction", "data"), textcoords="offset points", ha="left", va="center",
                 fontsize=9, annotation_clip=False)
    ax.annotate(f"most frequent\ndistinct token ({top})", xy=(1.0, c[-1, top]), xytext=(4, 0),
                color=colour(int(top)), **right)
    ax.annotate(f"common tokens\n({common[0]}-{common[-1]})", xy=(1.0, c[-1, common].mean()), xytext=(4, 4),
                color="0.4", **right)
    # the rarest token's line is pale (its class's lightest shade): its label in a darker one, to be read
    ax.annotate(f"rarest distinct\ntoken ({rare})", xy=(1.0, c[-1, rare]), xytext=(4, -2),
                color=_darker(colour(int(rare))), **right)
    ax.axvline(t0, color="k", ls=":", lw=1.2)
    if frozen is not None:
        ax.axvspan(frozen, steps[-1], color="C0", alpha=0.07, lw=0)
        ax.text((frozen + steps[-1]) / 2, 0.98, frozen_label, transform=ax.get_xaxis_transform(),
                ha="center", va="top", fontsize=9, color="0.3")
    ax.set_ylabel(rf"attention $c_{{l|n}}$ in class {n}", fontsize=10)
    ax.set_xlim(steps[0], steps[-1])
    ax.set_ylim(0, 1.15 * float(c[:, support].max()))
    ax.tick_params(labelsize=9, labelbottom=False)
    ax.set_title(f"(b) the scan: class {n}'s attention on each of its tokens", fontsize=9, loc="left")
    # (c) why it stops: gamma(t) rises, then dies
    ax2 = fig.add_subplot(gs[2], sharex=ax)
    ax2.plot(steps, gamma / gamma.max(), color="k", lw=1.6, label=r"$\gamma(t)$ (Eq. 85)")
    ax2.plot(steps, speed / speed.max(), color="C0", lw=1.6, ls="--", label="attention\nspeed (run)")
    ax2.axvline(t0, color="k", ls=":", lw=1.2)
    if frozen is not None:
        ax2.axvspan(frozen, steps[-1], color="C0", alpha=0.07, lw=0)
    ax2.text(t0, 1.03, r" $t_0$", ha="left", va="bottom", fontsize=10)
    ax2.set_ylim(0, 1.2)
    ax2.set_xlabel(r"SGD step (dotted: $t_0$ in steps)", fontsize=10)
    ax2.set_ylabel("÷ its peak", fontsize=10)
    ax2.tick_params(labelsize=9)
    ax2.legend(fontsize=9, loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False)
    ax2.set_title("(c) what drives it, and what slows it", fontsize=9, loc="left")
    return fig
