"""The intro's hero figure and chapter 1's model diagram (scansnap.plots.hero, model_diagram)."""
import numpy as np
import pytest
from matplotlib.figure import Figure

from scansnap import syn_small
from scansnap.plots import hero, model_diagram


def _hero_inputs(S=11):
    classes = syn_small()
    steps = np.arange(S)
    c = np.tile(classes.probs[0], (S, 1))
    gamma = np.linspace(0, 1, S)
    speed = np.linspace(1, 0, S)
    ctx = np.array([0, 10, 19, 5])
    seqs = [(ctx, 0, np.full(4, 0.25)), (np.array([1, 20, 29]), 1, np.full(3, 1 / 3))]
    return classes, steps, c, gamma, speed, seqs


def test_hero_draws_three_panels_and_marks_t0():
    classes, steps, c, gamma, speed, seqs = _hero_inputs()
    fig = hero(classes, steps, c, gamma, speed, 3.5, seqs, frozen=8)
    assert isinstance(fig, Figure)
    assert len(fig.axes) == 3
    assert fig.get_figwidth() <= 6.8
    # t0 is drawn as a vertical line at 3.5 in the two lower panels
    for ax in fig.axes[1:]:
        xs = [line.get_xdata()[0] for line in ax.get_lines() if len(set(line.get_xdata())) == 1]
        assert 3.5 in xs
    # (b) has one line per token of class 0 (10 common + 10 distinct) besides t0
    assert len(fig.axes[1].get_lines()) == len(classes.support(0)) + 1
    # the shaded stretch says what was measured (the snap slows the attention; chapter 5)
    fig = hero(classes, steps, c, gamma, speed, 3.5, seqs, frozen=8, frozen_label="95% done")
    assert "95% done" in [t.get_text() for t in fig.axes[1].texts]
    assert "t_0" in fig.axes[2].get_xlabel()          # the axis says the mark is in steps


@pytest.mark.parametrize("bad, match", [
    (dict(c=np.zeros((5, 34))), "c must be"),
    (dict(gamma=np.zeros(3)), "gamma"),
    (dict(t0=99.0), "t0 = 99.0 lies outside"),
    (dict(frozen=-1), "frozen = -1 lies outside"),
])
def test_hero_rejects_bad_input(bad, match):
    classes, steps, c, gamma, speed, seqs = _hero_inputs()
    kw = dict(c=c, gamma=gamma, speed=speed, t0=3.0, frozen=None)
    kw.update(bad)
    with pytest.raises(ValueError, match=match):
        hero(classes, steps, kw["c"], kw["gamma"], kw["speed"], kw["t0"], seqs, frozen=kw["frozen"])


def test_model_diagram_shows_the_numbers_it_is_given():
    b = np.array([0.2, 0.5, 0.3])
    fig = model_diagram(["the", "bark", "a"], "pet:", "dog", b, {"dog": 0.59, "cat": 0.05})
    assert isinstance(fig, Figure) and fig.get_figwidth() <= 6.8
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert {"0.20", "0.50", "0.30", "dog: 0.59", "cat: 0.05", "bark", "pet:"} <= set(texts)


@pytest.mark.parametrize("b, match", [
    (np.array([0.5, 0.5]), "one weight per contextual token"),
    (np.array([0.5, 0.6, 0.1]), "sums to"),
    (np.array([1.2, -0.1, -0.1]), "distribution"),
])
def test_model_diagram_rejects_bad_attention(b, match):
    with pytest.raises(ValueError, match=match):
        model_diagram(["the", "bark", "a"], "pet:", "dog", b, {"dog": 0.5})
