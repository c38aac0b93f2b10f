"""Sliders for the chapters: move one, the figure is re-computed and redrawn.

Nothing is drawn when the panel is created: the chapter shows the figure at the default
values in the cell before, so the static page and strict nbval see a deterministic
figure, and executing the notebook never captures output into a widget (which can stall
nbclient until its timeout: jupyter/nbclient#312).
"""
from __future__ import annotations

import time


def slider_panel(draw, **controls):
    """A panel of ``controls`` (ipywidgets, by keyword) above an output area.

    ``draw(**values)`` returns a matplotlib Figure; it is called when a control changes and
    its figure replaces the previous one, with the time it took.
    """
    import ipywidgets as widgets
    from IPython.display import display

    out = widgets.Output()
    status = widgets.Label()

    def redraw(change=None):
        t = time.perf_counter()
        fig = draw(**{k: c.value for k, c in controls.items()})
        with out:
            out.clear_output(wait=True)
            display(fig)
        status.value = f"redrawn in {time.perf_counter() - t:.2f} s"

    for c in controls.values():
        c.observe(redraw, "value")
    return widgets.VBox([widgets.HBox(list(controls.values())), status, out])
