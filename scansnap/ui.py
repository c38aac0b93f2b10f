"""Sliders for the chapters that work in the static HTML book *and* in a live kernel.

A slider panel draws its figure at every point of the sliders' grid when the cell runs and
stacks the PNGs in nested ``ipywidgets.Stack`` widgets; each slider's ``index`` is linked to
its level of stacks with ``jslink``, a link that lives in the page, not in the kernel. So:

- in the static HTML (no kernel), moving a slider shows the figure computed for that value
  at build time: the widget state saved in the notebook carries the images and the links;
- in a live kernel (Jupyter, Colab, Binder), moving a slider also re-runs ``draw`` for the
  new values and replaces the figure with the one just computed (the status line says how
  long it took), so a reader who edits the chapter's code sees the edit take effect.

Nothing is printed or captured into an output widget while the cell executes (capturing
output during execution can stall nbclient until its timeout: jupyter/nbclient#312).
"""
from __future__ import annotations

import io
import math
import time

MAX_FIGURES = 150  # a grid larger than this would bloat the page; raise early instead


def _png(fig, dpi: int) -> bytes:
    """The figure as a 256-colour PNG (line plots lose nothing visible; the page stays small)."""
    from PIL import Image

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    if fig.canvas.manager is not None:  # a pyplot figure would stay open and be shown again
        import matplotlib.pyplot as plt
        plt.close(fig)
    buf.seek(0)
    out = io.BytesIO()
    Image.open(buf).convert("RGB").quantize(colors=256).save(out, format="png", optimize=True)
    return out.getvalue()


def slider_panel(draw, *, dpi: int = 72, progress: bool = True, **controls):
    """A panel of ``controls`` (``ipywidgets.SelectionSlider``, by keyword) above a figure.

    ``draw(**values)`` returns a matplotlib Figure. It is called once per grid point now
    (the page's precomputed figures) and, in a live kernel, again whenever a slider moves.
    """
    import ipywidgets as widgets

    if not controls:
        raise ValueError("slider_panel needs at least one control")
    for name, c in controls.items():
        if not isinstance(c, widgets.SelectionSlider):
            raise TypeError(f"control {name!r} must be an ipywidgets.SelectionSlider over a finite grid "
                            f"(the static page can only show precomputed values), got {type(c).__name__}")
        if not all(isinstance(o, (int, float, str)) for o in c.options):
            raise TypeError(f"control {name!r}: options must be plain values, got {c.options!r}")
    n_points = math.prod(len(c.options) for c in controls.values())
    if n_points > MAX_FIGURES:
        raise ValueError(f"the sliders' grid has {n_points} points; at most {MAX_FIGURES} figures "
                         "are precomputed for the static page: use fewer options")

    names = list(controls)
    leaves: dict[tuple, widgets.Image] = {}
    bar = None
    if progress:
        from tqdm import tqdm  # text bar on stderr: no widget left behind in the saved page
        bar = tqdm(total=n_points, desc="precomputing the slider figures", leave=False)

    def build(level: int, prefix: tuple):
        if level == len(names):
            leaf = widgets.Image(value=_png(draw(**dict(zip(names, prefix))), dpi), format="png")
            leaves[prefix] = leaf
            if bar is not None:
                bar.update()
            return leaf
        c = controls[names[level]]
        stack = widgets.Stack([build(level + 1, prefix + (v,)) for v in c.options], selected_index=c.index)
        widgets.jslink((c, "index"), (stack, "selected_index"))
        return stack

    t = time.perf_counter()
    figure = build(0, ())
    if bar is not None:
        bar.close()
    status = widgets.Label(f"{n_points} figures computed in {time.perf_counter() - t:.0f} s; "
                           "moving a slider in a live kernel re-computes the figure")

    def redraw(change=None):
        t = time.perf_counter()
        key = tuple(controls[n].value for n in names)
        leaves[key].value = _png(draw(**dict(zip(names, key))), dpi)
        status.value = f"re-computed live in {time.perf_counter() - t:.2f} s"

    for c in controls.values():
        c.observe(redraw, "value")
    return widgets.VBox([widgets.HBox(list(controls.values())), figure, status])
