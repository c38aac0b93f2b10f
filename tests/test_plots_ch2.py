"""plots.sequence_classes: the drawing of sequence classes (paper Sec. 3.2, the idea of Fig. 1(b))."""
import numpy as np
import pytest
from matplotlib.colors import to_rgba

from scansnap import make_classes, syn_medium, syn_small
from scansnap.plots import sequence_classes


def _bars(ax):
    """{token: (height, facecolour)} of the probability bars of one class panel."""
    return {round(p.get_x() + p.get_width() / 2): (p.get_height(), p.get_facecolor()) for p in ax.patches}


def test_bars_are_the_class_probabilities_coloured_by_kind():
    c = syn_small()
    fig = sequence_classes(c)
    axes = fig.axes
    assert len(axes) == 2
    for n, ax in enumerate(axes):
        bars = _bars(ax)
        support = np.flatnonzero(c.probs[n] > 0)
        assert sorted(bars) == support.tolist()               # no bar for the query or next token
        for l in support:
            height, colour = bars[l]
            assert height == pytest.approx(c.probs[n, l], rel=1e-12)
            if l in c.common_tokens:
                assert colour == to_rgba("0.62")
            else:
                assert colour == to_rgba(f"C{n}")
        texts = " ".join(t.get_text() for t in ax.texts)
        assert f"query {c.query[n]}" in texts and f"next token {c.next_token[n]}" in texts


def test_sequence_strip_shows_tokens_query_and_next_token():
    c = syn_small()
    tokens = np.array([17, 3, 7, 19, 1, 30])
    fig = sequence_classes(c, sequence=(tokens, 0))
    strip = fig.axes[-1]
    shown = [t.get_text() for t in strip.texts]
    assert shown[:5] == ["17", "3", "7", "19", "1"]
    assert "30" in shown and "32" in shown                     # the query, then the next token
    assert len(fig.axes) == 3


def test_show_selects_classes_and_fits_the_column():
    c = syn_medium(3)
    fig = sequence_classes(c, show=[2, 3])
    assert len(fig.axes) == 2
    assert fig.get_figwidth() <= 6.8
    assert f"query {c.query[2]}" in " ".join(t.get_text() for t in fig.axes[0].texts)


@pytest.mark.parametrize("kwargs, message", [
    (dict(show=[5]), "class 5"),
    (dict(show=list(range(7))), "1 to 6 classes"),
    (dict(sequence=(np.array([17, 3, 31]), 0)), "ends with its query 30"),
    (dict(sequence=(np.array([25, 3, 30]), 0)), "tokens [25] cannot occur"),
    (dict(sequence=(np.array([40, 30]), 0)), "out of range"),
    (dict(sequence=(np.array([1.5, 30.0]), 0)), "integer"),
    (dict(sequence=(np.array([3, 30]), 2)), "class 2"),
])
def test_bad_input_is_named(kwargs, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        sequence_classes(syn_small(), **kwargs)


def test_large_vocabulary_labels_every_fifth_token():
    c = make_classes(num_last=1, num_next_per_last=2, num_distinct=40)   # M = 93
    ax = sequence_classes(c).axes[0]
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels[:3] == ["0", "5", "10"]
