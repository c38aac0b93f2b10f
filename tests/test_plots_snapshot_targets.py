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


# ------------------------------------------------------------------------------------ hero

def _hero_args():
    classes = syn_small()
    steps = np.arange(5) * 10.0 + 5.0                      # 5 .. 45
    c = np.tile(classes.probs[0], (5, 1))
    seqs = [(np.array([0, 12]), 0, np.array([0.5, 0.5]))]
    return classes, steps, c, np.linspace(0.1, 1, 5), np.linspace(1, 0.1, 5), seqs


def test_hero_accepts_t0_and_frozen_at_either_end_of_the_steps():
    classes, steps, c, gamma, speed, seqs = _hero_args()
    for t0, frozen in ((5.0, 45.0), (45.0, 5.0)):
        fig = plots.hero(classes, steps, c, gamma, speed, t0, seqs, frozen=frozen)
        assert fig.axes[1].lines[-1].get_xdata()[0] == t0


@pytest.mark.parametrize("kw, message", [
    (dict(t0=4.0), "t0 = 4.0 lies outside the steps [5, 45]"),
    (dict(t0=46.0), "t0 = 46.0 lies outside the steps [5, 45]"),
    (dict(t0=10.0, frozen=45.5), "frozen = 45.5 lies outside the steps [5, 45]"),
])
def test_hero_names_the_step_range_it_was_given(kw, message):
    classes, steps, c, gamma, speed, seqs = _hero_args()
    import re
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        plots.hero(classes, steps, c, gamma, speed, kw["t0"], seqs, frozen=kw.get("frozen"))


# ------------------------------------------------------------------------ sequence_classes

def test_sequence_classes_draws_up_to_six_classes_with_a_four_column_legend():
    from scansnap.data import sequence_classes as make
    six = make(6, num_common=1, num_distinct=1)
    fig = plots.sequence_classes(six, show=range(6))
    assert len(fig.axes) == 6
    assert fig.legends[0]._ncols == 4                     # 7 entries: common + 6 classes, in 2 rows
    with pytest.raises(ValueError, match="^show must list 1 to 6 classes; got 7$"):
        plots.sequence_classes(make(7, num_common=1, num_distinct=1), show=range(7))


@pytest.mark.parametrize("tokens, message", [
    (np.array([[0, 30]]), "sequence tokens must be a 1-d integer array of length >= 2"),
    (np.array([30]), "sequence tokens must be a 1-d integer array of length >= 2"),
    (np.array([0, 34, 30]), r"sequence has a token id out of range [0, 34): [0, 34, 30]"),
    (np.array([0, 5, 3, 31]), "a sequence of class 0 ends with its query 30, got 31"),
    (np.array([0, 3, 25, 30]), "tokens [25] cannot occur in a sequence of class 0 (P(l|n) = 0)"),
    (np.array([0, 21, 3, 30]), "tokens [21] cannot occur in a sequence of class 0 (P(l|n) = 0)"),
])
def test_sequence_classes_names_what_is_wrong_with_a_sequence(tokens, message):
    import re
    with pytest.raises(ValueError, match=f"^{re.escape(message)}"):
        plots.sequence_classes(syn_small(), sequence=(tokens, 0))


# ------------------------------------------------------------------------------------ _box

def test_box_default_is_a_0_9_square_with_normal_text():
    ax = Figure().subplots()
    plots._box(ax, 2.0, 1.0, "t", "white")
    box, = ax.patches
    assert (box.get_x(), box.get_y(), box.get_width(), box.get_height()) == pytest.approx((1.55, 0.55, 0.9, 0.9))
    assert ax.texts[0].get_fontsize() == 9 and ax.texts[0].get_fontweight() == "normal"
