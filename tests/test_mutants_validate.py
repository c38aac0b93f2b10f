"""_validate.py's mutation survivors (issue 28): ``times`` and ``distribution_rows`` name the
input and the bad row, accept a one-entry row, and reject negatives and NaN alike."""
import re
from fractions import Fraction

import numpy as np
import pytest
import torch

from scansnap._validate import (array, default_device, distribution_rows, finite, get_default_device, integer,
                                positive, positive_int, resolve_device, seed, set_default_device, times,
                                unit_interval)


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


# ---- the mutants the mutmut run had not reached at 16:55 (positive ... resolve_device) ----

def test_positive_returns_the_float_and_accepts_one():
    """Kills positive mutants 1, 2, 8 (``v <= 1``)."""
    assert positive("x", 1) == 1.0 and positive("x", "0.5") == 0.5 and type(positive("x", 2)) is float


@pytest.mark.parametrize("value, shown", [(0, "0"), (-1.5, "-1.5"), (float("nan"), "nan"), (float("inf"), "inf"),
                                          ("-1", "'-1'"), (np.float64(-2.0), "-2.0"), (np.str_("-1"), "-1.0"),
                                          (Fraction(-1, 2), "-0.5")])
def test_positive_names_a_bad_value_as_given_or_as_a_float(value, shown):
    """Kills positive mutants 4-7, 9-20: a Python int or str is shown as given, anything else
    (numpy scalars, a Fraction) as the float it became."""
    with pytest.raises(ValueError, match=rf"^x must be a positive number, got {re.escape(shown)}$"):
        positive("x", value)


def test_positive_names_what_is_no_number():
    """Kills positive mutant 3 (message None)."""
    with pytest.raises(ValueError, match=r"^x must be a positive number, got None$"):
        positive("x", None)


def test_positive_int_and_integer_take_ints_and_numpy_ints():
    """Kills positive_int mutants 11-13 (``v <= minimum``), integer's ``int(value)`` mutants."""
    assert positive_int("n", 1) == 1 and positive_int("n", 5, minimum=5) == 5
    assert type(positive_int("n", np.int64(3))) is int and positive_int("n", np.int64(3)) == 3
    assert type(integer("i", np.int32(-7))) is int and integer("i", np.int32(-7)) == -7 and integer("i", 0) == 0


@pytest.mark.parametrize("value", [True, 2.0, "3", None])
def test_positive_int_and_integer_refuse_bools_floats_text(value):
    """Kills positive_int mutants 1-10 and integer mutants 1-10 (the ``__index__`` test, bools)."""
    with pytest.raises(ValueError, match=rf"^n must be an integer >= 1, got {re.escape(repr(value))}$"):
        positive_int("n", value)
    with pytest.raises(ValueError, match=rf"^i must be an integer, got {re.escape(repr(value))}$"):
        integer("i", value)


def test_positive_int_names_its_minimum():
    """Kills positive_int mutant 14 (message None) and a changed default minimum."""
    with pytest.raises(ValueError, match=r"^n must be an integer >= 5, got 4$"):
        positive_int("n", 4, minimum=5)
    with pytest.raises(ValueError, match=r"^n must be an integer >= 1, got 0$"):
        positive_int("n", 0)


def test_seed_holds_exactly_a_signed_64_bit_integer():
    """Kills the seed mutants (the bounds, the comparison, the message)."""
    assert seed("s", 2 ** 63 - 1) == 2 ** 63 - 1 and seed("s", -2 ** 63) == -2 ** 63 and seed("s", np.int64(5)) == 5
    for v in (2 ** 63, -2 ** 63 - 1, 2 ** 64 - 1):
        with pytest.raises(ValueError, match=rf"^s must be an integer in \[-2\*\*63, 2\*\*63 - 1\] \(a signed 64-bit "
                                             rf"integer\), got {v}$"):
            seed("s", v)
    with pytest.raises(ValueError, match=r"^s must be an integer, got 1\.5$"):
        seed("s", 1.5)


def test_array_is_float64_and_names_what_is_not_numbers():
    """Kills the array mutants: the dtype, the ragged rows' shapes, the two messages."""
    a = array("a", [[1, 2], [3, 4]])
    assert a.dtype == np.float64 and a.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    with pytest.raises(ValueError, match=r"^a must be a rectangular array of numbers; its rows have different "
                                         r"lengths \(\[\(1,\), \(2,\)\]\)$"):
        array("a", [[1.0], [1.0, 2.0]])
    with pytest.raises(ValueError, match=r"^a must be an array of numbers, got 'abc'$"):
        array("a", "abc")
    with pytest.raises(ValueError, match=r"^a must be an array of numbers, got <object object"):
        array("a", object())


@pytest.mark.parametrize("value", [0, 0.5, 0.999, "0.25"])
def test_unit_interval_takes_zero_up_to_one(value):
    """Kills the unit_interval mutants on the lower bound and the conversion."""
    assert unit_interval("m", value) == float(value)


@pytest.mark.parametrize("value, match", [(1, r"^m must be in \[0, 1\), got 1$"), (-0.1, r"^m must be in \[0, 1\), got -0\.1$"),
                                          (float("nan"), r"^m must be in \[0, 1\), got nan$"),
                                          ("x", r"^m must be a number in \[0, 1\), got 'x'$"),
                                          (None, r"^m must be a number in \[0, 1\), got None$")])
def test_unit_interval_refuses_one_negatives_nan_and_text_by_name(value, match):
    """Kills the unit_interval mutants on the upper bound and the messages."""
    with pytest.raises(ValueError, match=match):
        unit_interval("m", value)


def test_finite_converts_to_float64_and_names_the_run_or_the_index():
    """Kills the finite mutants: the conversion (numpy and torch), the first bad place, the
    count, ``runs`` naming the leading axis only for arrays."""
    x = finite("x", torch.tensor([[0.1, 2.0]], dtype=torch.float32))
    assert x.dtype == np.float64 and x[0, 0] == np.float64(np.float32(0.1)) and finite("x", [1, 2]).tolist() == [1.0, 2.0]
    assert finite("x", [1, 2]).dtype == np.float64 and finite("x", np.array([3], np.int8)).dtype == np.float64
    bad = [[1.0, 2.0, 3.0], [4.0, np.nan, np.inf]]
    with pytest.raises(ValueError, match=r"^x is not finite at run 1 \((np\.float64\()?nan\)?; 2 of 6 values\): a "
                                         r"diverged run has no meaningful value$"):
        finite("x", bad, runs=True)
    with pytest.raises(ValueError, match=r"^x is not finite at index \(1, 1\) \((np\.float64\()?nan\)?; 2 of 6 values\)"):
        finite("x", bad)
    with pytest.raises(ValueError, match=r"^x is not finite at index \(1, 1\)"):
        finite("x", torch.tensor(bad))
    with pytest.raises(ValueError, match=r"^x is not finite at index \(\) \((np\.float64\()?inf\)?; 1 of 1 values\)"):
        finite("x", np.inf, runs=True)
    with pytest.raises(ValueError, match=r"^x is not finite at run 2 \("):      # one value a run: still the run
        finite("x", [1.0, 2.0, -np.inf], runs=True)


def test_finite_takes_a_tensor_that_requires_grad():
    """Kills finite mutants 7 and 11 (a tensor handed to numpy: ``np.iscomplexobj`` or
    ``np.asarray`` of a tensor that requires grad is a RuntimeError; a CUDA tensor a TypeError)."""
    w = torch.tensor([0.5, 2.0], requires_grad=True)
    assert finite("w", w).tolist() == [0.5, 2.0]


@pytest.mark.parametrize("a", [np.array([1 + 1j]), torch.tensor([1 + 1j])])
def test_finite_refuses_complex_arrays(a):
    """Kills the finite mutants of the complex test (numpy and torch)."""
    with pytest.raises(ValueError, match=r"^x must be real, got a complex array$"):
        finite("x", a)


@pytest.mark.device_rule
def test_default_device_is_set_checked_returned_and_restored():
    """Kills the set_default_device / default_device / resolve_device(None) mutants."""
    from scansnap import _validate
    assert get_default_device() == "auto"
    assert resolve_device(None) == torch.device("cuda" if torch.cuda.is_available() else "cpu")
    with default_device(torch.device("cpu")) as d:
        assert d == "cpu" and get_default_device() == "cpu" and resolve_device(None) == torch.device("cpu")
        assert set_default_device("auto") == "cpu" and _validate._default_device == "auto"
        set_default_device("cpu")
    assert get_default_device() == "auto"
    with pytest.raises(ValueError, match=r"^the default device cannot be None: use 'auto', 'cpu', 'cuda' or 'cuda:N'$"):
        set_default_device(None)
    with pytest.raises(ValueError, match=r"^unknown device 'tpu': use 'auto', 'cpu', 'cuda' or 'cuda:N'$"):
        set_default_device("tpu")
    assert get_default_device() == "auto"


@pytest.mark.parametrize("device, match", [("tpu", r"^unknown device 'tpu': use 'auto', 'cpu', 'cuda' or 'cuda:N'$"),
                                           ("meta", r"^unknown device 'meta': use 'auto', 'cpu', 'cuda' or 'cuda:N'$"),
                                           (torch.device("meta"), r"^unknown device device\(type='meta'\): use "),
                                           (3.5, r"^unknown device 3\.5: use 'auto', 'cpu', 'cuda' or 'cuda:N'$")])
def test_resolve_device_refuses_unknown_devices_by_name(device, match):
    """Kills the resolve_device mutants of the device types and the messages."""
    with pytest.raises(ValueError, match=match):
        resolve_device(device)


def test_resolve_device_takes_cpu_by_name_and_as_a_device():
    assert resolve_device("cpu") == torch.device("cpu") and resolve_device(torch.device("cpu")) == torch.device("cpu")
    assert resolve_device("auto") == torch.device("cuda" if torch.cuda.is_available() else "cpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_resolve_device_without_cuda_says_so():
    """Kills the resolve_device mutants of the CUDA check and its message."""
    for d in ("cuda", "cuda:1"):
        with pytest.raises(ValueError, match=rf"^device '{d}' asked for, but CUDA is not available here$"):
            resolve_device(d)


@pytest.mark.device_rule
def test_auto_means_cuda_where_cuda_is_present(monkeypatch):
    """Kills resolve_device mutants 8, 10, 11 ("auto" with CUDA present) and set_default_device
    mutant 12 (the default set to what the old default resolves to): CUDA faked present
    (a ``torch.device("cuda")`` needs no GPU to exist)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert resolve_device("auto") == torch.device("cuda")
    with default_device("auto"):
        assert set_default_device("cpu") == "auto" and get_default_device() == "cpu"
