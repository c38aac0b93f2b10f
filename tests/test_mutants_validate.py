"""_validate.py's mutation survivors (issue 28): ``times`` and ``distribution_rows`` name the
input and the bad row, accept a one-entry row, and reject negatives and NaN alike."""
import numpy as np
import pytest

from scansnap._validate import distribution_rows, times


def test_times_rejects_a_negative_and_a_nan_each_named():
    """Kills times mutant 13 (``~isfinite(t) & (t < 0)`` flags neither; a timeout in mutmut's run)."""
    with pytest.raises(ValueError, match=r"^t must be finite and >= 0, got -1\.0$"):
        times("t", [1.0, -1.0])
    with pytest.raises(ValueError, match=r"^t must be finite and >= 0, got nan$"):
        times("t", [float("nan")])


def test_times_names_ragged_input():
    """Kills times mutant 3 (``array(None, ...)``)."""
    with pytest.raises(ValueError, match=r"^t must be a rectangular array"):
        times("t", [[1.0], [1.0, 2.0]])


def test_distribution_rows_names_ragged_input():
    """Kills distribution_rows mutant 2 (``array(None, ...)``)."""
    with pytest.raises(ValueError, match=r"^p must be a rectangular array"):
        distribution_rows("p", [[1.0], [1.0, 2.0]])


def test_distribution_rows_rejects_a_scalar_and_an_empty_row_by_shape():
    """Kills distribution_rows mutants 6 (``and``: a scalar raises IndexError, an empty row
    reads as "no mass") and 13 (message None)."""
    with pytest.raises(ValueError, match=r"^p must be a row of probabilities, got shape \(\)$"):
        distribution_rows("p", 0.5)
    with pytest.raises(ValueError, match=r"^p must be a row of probabilities, got shape \(0,\)$"):
        distribution_rows("p", [])


def test_distribution_rows_accepts_a_one_entry_row():
    """Kills distribution_rows mutant 12 (``shape[-1] == 1`` rejected)."""
    np.testing.assert_array_equal(distribution_rows("p", [[2.0], [0.5]]), [[2.0], [0.5]])


def test_distribution_rows_names_the_one_row_without_mass():
    """Kills distribution_rows mutants 29 (mass summed over the whole table), 35, 36, 38-42,
    44, 46 (the row's index lost, or an IndexError/TypeError instead)."""
    with pytest.raises(ValueError, match=r"^p: row \(1,\) has no probability mass \(every entry is 0\)$"):
        distribution_rows("p", [[1.0, 0.0], [0.0, 0.0]])
    with pytest.raises(ValueError, match=r"^p has no probability mass \(every entry is 0\)$"):
        distribution_rows("p", [0.0, 0.0])
