"""What the figure snapshots (tests/test_plots_snapshot.py) cannot see: the book's inline-figure
set-up, the legibility check's thresholds, and the messages of the drawing functions' input checks.
Each test pins a detail a mutation run (bench/MUTATION.md) found unchecked."""
import matplotlib
import numpy as np
import pytest
from matplotlib.figure import Figure

from scansnap import plots, syn_small


# ------------------------------------------------------------------------- inline_figures

def test_inline_figures_set_up_the_shell_for_cropped_retina_pngs_carrying_their_text_size():
    from IPython.terminal.interactiveshell import TerminalInteractiveShell as Shell
    from matplotlib_inline.config import InlineBackend

    InlineBackend.clear_instance()
    ip = Shell.instance()
    old, backend = dict(matplotlib.rcParams), matplotlib.get_backend()
    try:
        plots.inline_figures(ip)
        cfg = InlineBackend.instance()
        assert cfg.parent is ip                       # the shell's configuration reaches the backend
        # a later %matplotlib inline crops figures to the ink plus 0.05 in, as the book's own PNGs
        assert cfg.print_figure_kwargs == {"bbox_inches": "tight", "pad_inches": 0.05}
        assert cfg.figure_formats == {"retina"}
        assert "inline" in matplotlib.get_backend()
        fig = Figure(figsize=(3, 2))
        fig.subplots().set_title("nine points", fontsize=9)
        png, meta = ip.display_formatter.formatters["image/png"].lookup(fig)(fig)
        # the package's own PNG (plots._retina_png), not IPython's: it carries the text size
        assert plots.read_png_meta(png) == {"css_width": meta["width"], "min_font_px": 9 * 100 / 72}
    finally:
        import matplotlib.pyplot as plt
        plt.switch_backend(backend)
        matplotlib.rcParams.update(old)
        Shell.clear_instance()
        InlineBackend.clear_instance()


# --------------------------------------------------------------------- legibility_problems

def test_legibility_problems_thresholds_are_the_column_and_the_font_exactly():
    edge = plots.COLUMN_WIDTH + 1e-9
    assert plots.legibility_problems(Figure(figsize=(edge, 2))) == []          # within the tolerance
    assert plots.legibility_problems(Figure(figsize=(7.0, 2))) == [
        "figure is 7.00 in wide (> 6.8 in): the page would shrink it"]
    fig = Figure(figsize=(4, 2))
    fig.text(0.1, 0.5, "at the floor", fontsize=plots.MIN_FONT_PT - 1e-9)
    fig.text(0.1, 0.2, "half a point under the floor, and longer than thirty characters", fontsize=8.5)
    assert plots.legibility_problems(fig) == [
        "text 'half a point under the floor, ' at 8.5 pt (< 9 pt)"]
