"""Sliders for the chapters that work in the static HTML book *and* in a live kernel.

``slider_panel(draw, **controls)`` puts the controls (ipywidgets sliders, by keyword) above
the figure that ``draw(**values)`` returns. Two modes:

- **precomputed** (default): ``draw`` runs at every point of the sliders' grid when the cell
  runs; the PNGs sit in nested ``ipywidgets.Stack`` widgets and each slider's ``index`` is
  linked to its level of stacks with ``jslink``, a link that lives in the page, not in the
  kernel. In the static HTML (no kernel), moving a slider shows the figure computed for that
  value at build time; in a live kernel too: the stored figure *is* ``draw`` at that value, so
  a move re-computes nothing and answers at once (a reader who edits ``draw`` re-runs the
  cell). Controls must be ``SelectionSlider``s over a finite grid (at most
  :data:`MAX_FIGURES` points).
- **kernel-only** (``precompute=False``): ``draw`` runs for the current values only, and again
  whenever a slider moves. For a chapter whose static page gets a JavaScript live panel
  instead of a grid; any value widget works (``FloatLogSlider``, ``IntSlider``, ...). The static
  page shows the first figure; its sliders do nothing there.

Across slider states a figure keeps **the same axes limits and colour scale**: the panel
sets every figure's axes (matched by position in ``fig.axes``) to the union of the limits of
all the figures drawn (in precomputed mode, the whole grid before any PNG is made; in
kernel-only mode, all the figures drawn so far), and likewise the colour limits of images.
So moving a slider compares like with like. ``draw`` must use the same colours for the same
things at every setting (e.g. ``color="C0"`` by role, not by the order lines happen to be
drawn) and the same number of axes; limits it sets itself are kept when they are equal
everywhere.

The panel looks like the live panels (``scansnap.live``): ``title=`` and ``question=`` (HTML
allowed: what should the reader try?) head it, the sliders' knobs are the accent colour
(:data:`ACCENT`; the book's CSS tints their tracks too), and on a phone the figure keeps the
width at which its smallest text reads ``scansnap.plots.MIN_TEXT_PX`` CSS px, in a box that
scrolls sideways (the width rides in each PNG: ``scansnap.plots.png_meta``).

Labels: a chapter writes plain descriptions (``description="η_Y"``, ``"η_Y/η_Z"``) and the
panel shows real subscripts (η with a small lowered Y) in ipywidgets 8 (``description_allow_html``) and
in ipywidgets 7 (an HTML label beside the slider). Figures are 2x PNGs shown at half size
(sharp on high-density screens), as wide as the figure is at 100 px per inch, scaled down on
narrow screens.

**ipywidgets 7.7** (Colab's long-standing version): there is no ``Stack``, so the panel shows
one ``Image`` whose value the kernel swaps: it precomputes the grid the same way (same limits)
and, when a slider moves, shows the stored figure. The static book is
always built with ipywidgets 8.

Nothing is printed or captured into an output widget while the cell executes (capturing
output during execution can stall nbclient until its timeout: jupyter/nbclient#312); the
precomputation's progress bar goes to stderr (the chapters tag the cell ``remove-stderr``).
"""
from __future__ import annotations

import contextlib
import html
import io
import math
import re
import time

from . import printed

MAX_FIGURES = 150  # a grid larger than this would bloat the page; raise early instead
ACCENT = "#0969da"  # the sliders' knobs: the live panels' accent (scansnap/js/panel.css)
# ipywidgets 7 (Colab) has no handle_color for a SelectionSlider, and Colab has not the book's CSS:
# the panel carries these rules itself (in each slider's label, an HTML widget there)
ACCENT_CSS_7 = (f"<style>.scansnap-panel .ui-slider-handle{{background:{ACCENT}!important;"
                f"border-color:{ACCENT}!important}}.scansnap-panel .ui-slider{{background:rgba(9,105,218,.22)!important;"
                "border:0!important}</style>")
SCALE = 2          # PNG pixels per CSS pixel: sharp on high-density ("retina") screens
_GREEK = {"eta": "η", "gamma": "γ", "nu": "ν", "alpha": "α", "beta": "β", "lambda": "λ", "sigma": "σ"}


def _widgets_major() -> int:
    import ipywidgets
    return int(ipywidgets.__version__.split(".")[0])


def _gpu_when_present():
    """THE single call site of the package's "use the GPU when present" context manager
    (``scansnap.book.interactive_device``: slider figures are not compared by nbval, so they
    may train on a GPU). Until that lands on this branch, drawing runs on the default device."""
    try:
        from .book import interactive_device
    except ImportError:
        return contextlib.nullcontext()
    return interactive_device()


# A subscript as a styled span, not <sub>: the widget manager of the static page sanitizes
# descriptions down to a, abbr, b, code, em, i, img, li, ol, span, strong, ul (with style).
SUB = '<span class="scansnap-sub" style="font-size:80%;vertical-align:sub;line-height:0">{}</span>'


def label_html(text: str) -> str:
    r"""A plain description as HTML with real subscripts: ``"η_Y/η_Z"`` -> η\ :sub:`Y`/η\ :sub:`Z`,
    ``"eta_{Y}"`` -> η\ :sub:`Y` (each subscript a :data:`SUB` span); the rest is escaped."""
    out, pos = [], 0
    for m in re.finditer(r"_(\{([^{}]*)\}|([A-Za-z0-9]+))", text):
        out.append(_greek(html.escape(text[pos:m.start()])))
        out.append(SUB.format(html.escape(m.group(2) if m.group(2) is not None else m.group(3))))
        pos = m.end()
    out.append(_greek(html.escape(text[pos:])))
    return "".join(out)


def _greek(s: str) -> str:
    return re.sub(r"(?<![A-Za-z])(" + "|".join(_GREEK) + r")(?![A-Za-z])", lambda m: _GREEK[m.group(1)], s)


def _plain(text: str) -> str:
    """The label as plain text (its width, and the tooltip)."""
    return re.sub(r"<[^>]+>", "", label_html(text)).replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")


def _png(fig, scale: int = SCALE) -> tuple[bytes, int]:
    """The figure as a 256-colour PNG at ``scale`` x its size at its own dpi (100 px/in in the
    book's style), and its display width in CSS px. Line plots lose nothing visible and the
    page stays small; rendered to raw RGBA and quantized (fast octree): about 0.1 s a figure."""
    from PIL import Image

    from .plots import display_dpi, png_meta, save_png

    dpi = display_dpi(fig.get_figwidth(), fig.dpi) * scale   # at most the output area's width
    buf = io.BytesIO()
    fig.savefig(buf, format="rgba", dpi=dpi)   # fixed size (no tight bbox): every state the same
    if fig.canvas.manager is not None:  # a pyplot figure would stay open and be shown again
        import matplotlib.pyplot as plt
        plt.close(fig)
    raw = buf.getvalue()
    fw, fh = fig.get_figwidth() * dpi, fig.get_figheight() * dpi
    size = next((w, h) for w in (int(fw), round(fw)) for h in (int(fh), round(fh)) if 4 * w * h == len(raw))
    img = Image.frombuffer("RGBA", size, raw, "raw", "RGBA", 0, 1)
    css_width = round(size[0] / scale)
    # the smallest text size rides in the PNG (scansnap.plots.png_meta), as the chapters' figures'
    return save_png(img, png_meta(fig, dpi / scale, css_width)), css_width


class _Limits:
    """The union of axes limits (and image colour limits) over figures, by axes position."""

    def __init__(self):
        self.axes: dict[int, list] = {}
        self.clims: dict[tuple, list] = {}

    def add(self, fig) -> None:
        for i, ax in enumerate(fig.axes):
            x, y = ax.get_xlim(), ax.get_ylim()
            cur = self.axes.get(i)
            if cur is None:
                self.axes[i] = [list(x), list(y)]
            else:
                for k, (lo, hi) in enumerate((x, y)):
                    a, b = cur[k]
                    flip = a > b                 # an inverted axis (imshow's y) stays inverted
                    cur[k] = [max(a, lo), min(b, hi)] if flip else [min(a, lo), max(b, hi)]
            for j, im in enumerate(ax.get_images() + [c for c in ax.collections if c.get_array() is not None]):
                lo, hi = im.get_clim()
                if lo is None or hi is None:
                    continue
                c = self.clims.setdefault((i, j), [lo, hi])
                c[0], c[1] = min(c[0], lo), max(c[1], hi)

    def apply(self, fig) -> None:
        for i, ax in enumerate(fig.axes):
            if i in self.axes:
                (x0, x1), (y0, y1) = self.axes[i]
                ax.set_xlim(x0, x1)
                ax.set_ylim(y0, y1)
            for j, im in enumerate(ax.get_images() + [c for c in ax.collections if c.get_array() is not None]):
                if (i, j) in self.clims:
                    im.set_clim(*self.clims[(i, j)])


def _label_width(names_labels) -> str:
    n = max(len(_plain(lbl)) for lbl in names_labels) if names_labels else 4
    return f"{0.62 * n + 0.8:.1f}em"


def _dress(control, label: str, width: str, major: int):
    """The control with a real-subscript label, sized to wrap on a phone; returns the widget to show."""
    import ipywidgets as widgets

    control.layout.flex = "1 1 20em"
    control.layout.min_width = "15em"
    control.layout.max_width = "34em"
    control.layout.width = "auto"
    if hasattr(control, "readout"):
        control.readout = True
    if "handle_color" in getattr(control.style, "keys", ()):
        control.style.handle_color = ACCENT      # not a hollow grey knob that looks disabled
    if major >= 8:
        control.description = label_html(label)
        control.description_allow_html = True
        control.tooltip = _plain(label)
        control.style.description_width = width
        return control
    # ipywidgets 7: descriptions are plain text; an HTML label beside the slider instead
    control.description = ""
    control.description_tooltip = _plain(label)
    return widgets.HBox([widgets.HTML(ACCENT_CSS_7 + label_html(label), layout=widgets.Layout(width=width, min_width=width)),
                         control], layout=widgets.Layout(flex="1 1 20em", min_width="15em", max_width="34em"))


def _header(title, question):
    """The panel's title and question as one HTML widget (inline styles: Colab has not the book's CSS)."""
    import ipywidgets as widgets

    parts = []
    if title:
        parts.append(f'<div class="scansnap-title" style="font-weight:600;margin:0 0 2px">{title}</div>')
    if question:
        parts.append(f'<div class="scansnap-question" style="margin:0 0 6px;white-space:normal">{question}</div>')
    # no margin: an HTML widget's default 2 px each side would make a 100% wide head overflow the panel
    head = widgets.HTML("".join(parts), layout=widgets.Layout(width="100%", margin="0"))
    head.add_class("scansnap-head")
    return head


def slider_panel(draw, *, precompute: bool = True, progress: bool = True, scale: int = SCALE,
                 title: str | None = None, question: str | None = None, **controls):
    """A panel of ``controls`` (ipywidgets sliders, by keyword) above the figure ``draw(**values)``
    returns (a matplotlib Figure). See the module's docstring for the two modes. ``title`` and
    ``question`` (HTML) head the panel, as on the live panels: every slider asks a question.

    The returned ``VBox`` has ``.controls``, ``.figure`` and ``.status`` (its children, after the
    header when there is a title or question) and ``.redraw()``.

    ``precompute=True``: controls are ``SelectionSlider``s; ``draw`` runs once per grid point now
    (the page's figures); a slider move shows the stored figure (no kernel needed, none re-drawn).
    ``precompute=False``: any value widgets; ``draw`` runs for the current values, and on each move.
    """
    import ipywidgets as widgets

    if not controls:
        raise ValueError("slider_panel needs at least one control")
    if not callable(draw):
        raise TypeError(f"draw must be a function returning a matplotlib Figure, got {type(draw).__name__}")
    for name, text in (("title", title), ("question", question)):
        if text is not None and not isinstance(text, str):
            raise TypeError(f"{name} must be a string (HTML allowed), got {type(text).__name__}")
    if scale not in (1, 2, 3):
        raise ValueError(f"scale must be 1, 2 or 3 (PNG pixels per CSS pixel), got {scale!r}")
    major = _widgets_major()
    for name, c in controls.items():
        if precompute:
            if not isinstance(c, widgets.SelectionSlider):
                raise TypeError(f"control {name!r} must be an ipywidgets.SelectionSlider over a finite grid "
                                f"(the static page can only show precomputed values), got {type(c).__name__}; "
                                "or pass precompute=False for a kernel-only panel")
            if not all(isinstance(o, (int, float, str)) for o in c.options):
                raise TypeError(f"control {name!r}: options must be plain values, got {c.options!r}")
        elif not isinstance(c, widgets.ValueWidget):
            raise TypeError(f"control {name!r} must be an ipywidgets value widget (a slider, a dropdown), "
                            f"got {type(c).__name__}")
    names = list(controls)
    if precompute:
        n_points = math.prod(len(c.options) for c in controls.values())
        if n_points > MAX_FIGURES:
            raise ValueError(f"the sliders' grid has {n_points} points; at most {MAX_FIGURES} figures "
                             "are precomputed for the static page: use fewer options")
    limits = _Limits()

    def figure_at(key):
        fig = draw(**dict(zip(names, key)))
        if not hasattr(fig, "savefig"):
            raise TypeError(f"draw({dict(zip(names, key))}) returned {type(fig).__name__}, not a matplotlib Figure")
        return fig

    # ---- the figures shown before any slider moves
    if precompute:
        import itertools

        keys = list(itertools.product(*(c.options for c in controls.values())))
        bar = None
        if progress:
            from tqdm import tqdm  # text bar on stderr: no widget left behind in the saved page
            bar = tqdm(total=len(keys), desc="precomputing the slider figures", leave=False)
        figs = {}
        with _gpu_when_present():
            for key in keys:
                figs[key] = figure_at(key)
                limits.add(figs[key])
                if bar is not None:
                    bar.update()
        if bar is not None:
            bar.close()
        pngs = {}
        for key, fig in figs.items():
            limits.apply(fig)
            pngs[key] = _png(fig, scale)
        print_png = _printed(figs, names, controls)
        del figs
    else:
        key = tuple(c.value for c in controls.values())
        with _gpu_when_present():
            fig = figure_at(key)
        limits.add(fig)
        pngs = {key: _png(fig, scale)}
        print_png = printed.with_note(
            printed.small_multiples([("", fig)], tile_width=fig.get_figwidth()),
            "Online, the notebook's kernel redraws this figure as the sliders move; printed: the figure "
            "at the sliders' starting values.")

    from .plots import legible_width, read_png_meta

    # the narrowest width at which every state's smallest text reads MIN_TEXT_PX: one for all, so
    # a slider move never changes the figure's size
    legible = max((legible_width(read_png_meta(p)) or 0) for p, _ in pngs.values())

    def image(png_width):
        png, width = png_width
        return widgets.Image(value=png, format="png", width=str(width),
                             layout=widgets.Layout(max_width="100%", height="auto",
                                                   min_width=f"{math.ceil(min(legible, width))}px" if legible else None))

    current = tuple(c.value for c in controls.values())
    leaves: dict[tuple, object] = {}
    if precompute and major >= 8:
        def build(level: int, prefix: tuple):
            if level == len(names):
                leaves[prefix] = image(pngs[prefix])
                return leaves[prefix]
            c = controls[names[level]]
            stack = widgets.Stack([build(level + 1, prefix + (v,)) for v in c.options], selected_index=c.index)
            widgets.jslink((c, "index"), (stack, "selected_index"))
            return stack
        figure = build(0, ())
    else:
        # one Image whose value the kernel swaps (kernel-only mode, and ipywidgets 7: no Stack)
        figure = image(pngs[current])

    status = widgets.HTML("", layout=widgets.Layout(display="none"))
    status.add_class("scansnap-status")

    def redraw(change=None):
        """A slider moved in a live kernel: show the stored figure (precomputed mode: nothing is
        re-drawn; with ipywidgets 8 the page's jslink has already switched it), else redraw."""
        key = tuple(c.value for c in controls.values())
        target = leaves.get(key, figure)
        if precompute and key in pngs:
            if target is figure:
                figure.value = pngs[key][0]
            return
        status.layout.display = ""
        status.value = "redrawing&hellip;"
        t = time.perf_counter()
        try:
            with _gpu_when_present():
                fig = figure_at(key)
        except Exception as exc:          # say so on the panel too, not only in the kernel's log
            status.value = html.escape(f"redraw failed: {type(exc).__name__}: {exc}")
            raise
        limits.add(fig)
        limits.apply(fig)
        png, _ = _png(fig, scale)
        target.value = png
        status.value = f"redrawn in the kernel in {time.perf_counter() - t:.2f} s"

    for c in controls.values():
        c.observe(redraw, "value")
    width = _label_width([c.description for c in controls.values()])
    shown = [_dress(c, c.description or name, width, major) for name, c in controls.items()]
    bar_box = widgets.Box(shown, layout=widgets.Layout(display="flex", flex_flow="row wrap", width="100%",
                                                       justify_content="flex-start"))
    bar_box.add_class("scansnap-controls")
    # the figure's own box scrolls sideways where the screen is narrower than the figure's text allows
    fig_box = widgets.Box([figure], layout=widgets.Layout(max_width="100%", overflow="auto hidden"))
    fig_box.add_class("scansnap-figure")
    head = [_header(title, question)] if (title or question) else []
    panel = widgets.VBox(head + [bar_box, fig_box, status], layout=widgets.Layout(width="100%", max_width="100%"))
    panel.add_class("scansnap-panel")
    panel.controls, panel.figure, panel.status = bar_box, figure, status
    panel.redraw = redraw          # for tests and for a chapter that wants to force a redraw
    panel._repr_png_ = lambda: print_png   # the printed edition's figure (the HTML shows the widget)
    return panel


def _printed(figs, names, controls) -> bytes:
    """The panel on paper: its first slider at up to six of its values side by side (the others
    at their starting values), with the note saying what the online edition does."""
    first = names[0]
    start = {n: c.value for n, c in controls.items()}
    label = _plain(controls[first].description or first)
    # a figure of side-by-side axes keeps its labels only at its own width: then one column, fewer tiles
    wide = len(next(iter(figs.values())).axes) > 1
    shown = printed.pick(controls[first].options, 3 if wide else printed.MAX_TILES)
    tiles = [(f"{label} = {v}", figs[tuple(v if n == first else start[n] for n in names)]) for v in shown]
    n_states = len(figs)
    note = (f"Online, the sliders ({', '.join(_plain(c.description or n) for n, c in controls.items())}) "
            f"switch between this figure's {n_states} precomputed states; printed: {label} at "
            f"{len(shown)} of its {len(controls[first].options)} values"
            + (", the other sliders at their starting values." if len(names) > 1 else "."))
    layout = dict(columns=1, tile_width=tiles[0][1].get_figwidth()) if wide else {}
    return printed.with_note(printed.small_multiples(tiles, **layout), note)
