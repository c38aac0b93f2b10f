"""The chapters' display helpers and small constructions, now in the package (one copy)."""
import numpy as np
import pytest

from scansnap import book, theory
from scansnap.data import two_classes


def test_show_displays_markdown_whose_plain_text_is_the_source(monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj, raw=False: shown.append((obj, raw)))
    book.show("a $x$", "b")
    assert shown == [({"text/markdown": "a $x$\n\nb", "text/plain": "a $x$\n\nb"}, True)]
    with pytest.raises(TypeError, match="Markdown strings"):
        book.show(3)


def test_md_table():
    assert book.md_table(["a", "b"], [[1, "$x$"], [2.5, "y"]]) == "| a | b |\n|---|---|\n| 1 | $x$ |\n| 2.5 | y |"
    with pytest.raises(ValueError, match="row 1 has 1 cells, the header 2"):
        book.md_table(["a", "b"], [[1, 2], [3]])


def test_inputs_with_overlap():
    F = theory.inputs_with_overlap(30, 5, 0.3, np.random.default_rng(1))
    assert F.shape == (30, 5)
    np.testing.assert_allclose(F.T @ F, 0.3 + 0.7 * np.eye(5), atol=1e-12)
    with pytest.raises(ValueError, match="do not fit"):
        theory.inputs_with_overlap(5, 5, 0.3, np.random.default_rng(1))


def test_loss_of_h_is_eq_32():
    M = 50
    h = np.array([0.0, 0.1, 1.0])
    alpha = np.exp(M * h) / (np.exp(M * h) + M - 1)          # the right token's probability
    np.testing.assert_allclose(theory.loss_of_h(h, M), -np.log(alpha), rtol=1e-12, atol=1e-15)
    with pytest.raises(ValueError, match="finite"):
        theory.loss_of_h([np.nan], M)


def test_two_classes():
    c = two_classes(common=(5,), distinct=(1, 2, 3, 4), M=20)
    assert c.M == 20 and c.K == 2
    np.testing.assert_allclose(c.probs.sum(axis=1), 1)
    assert list(c.distinct_tokens(0)) == [1, 2, 3, 4] and list(c.distinct_tokens(1)) == [5, 6, 7, 8]
    np.testing.assert_allclose(c.probs[0, 1:5] / c.probs[0, 1], [1, 2, 3, 4])
    with pytest.raises(ValueError, match="need M >= 12"):
        two_classes(M=11)
