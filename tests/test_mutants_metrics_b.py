"""metrics.py, part B of the mutation survivors (issue 28): the names in messages (``what``,
the run and class of an undefined entropy), which check each ``over`` runs, the
DISTINCT_MASS_MIN and _SUM_TOL boundaries, and the per-row max that keeps widely different
classes from underflowing. In-process, tiny hand-made classes, no training."""
import warnings

import numpy as np
import pytest

from scansnap import make_classes, metrics
from scansnap.data import SequenceClasses
from scansnap.metrics import (UndefinedEntropyWarning, attention_entropy, class_entropy, common_mass,
                              distinct_entropy, recall_threshold)


def _two():
    """Two classes with their own queries, 1 common token, 4 equally likely distinct tokens each."""
    return make_classes(num_last=2, num_next_per_last=1, num_common=1, num_distinct=4,
                        distinct_min=1.0, distinct_max=1.0)


def _no_distinct():
    """Class 0's tokens {0, 1} are all shared with class 1 ({0, 1, 2}): class 0 has no distinct token."""
    return SequenceClasses(probs=np.array([[0.5, 0.5, 0, 0, 0, 0], [0.4, 0.4, 0.2, 0, 0, 0]]),
                           query=np.array([3, 3]), next_token=np.array([4, 5]))


def _low(c, Z, n):
    """Z with class n's attention all on the common token (its distinct mass ~e^-60 < 1e-6)."""
    Z = Z.copy()
    Z[..., c.query[n], c.common_tokens[0]] = 60.0
    return Z


def test_distinct_over_needs_distinct_tokens_support_does_not():
    """Kills class_entropy mutants 8, 9, 16, 17, 18 (``_check_Z`` and ``_check_Z_any`` swapped or
    one used for both values of ``over``)."""
    c = _no_distinct()
    Z = np.zeros((c.M, c.M))
    with pytest.raises(ValueError, match=r"^class 0 has no distinct tokens"):
        class_entropy(c, Z, over="distinct")
    np.testing.assert_allclose(class_entropy(c, Z, over="support"),
                               [np.log(2), -(2 * 0.4 * np.log(0.4) + 0.2 * np.log(0.2))], rtol=1e-12)


def test_shape_errors_name_Z_by_default_and_what_when_given():
    """Kills class_entropy mutants 3, 4, 12, 21, common_mass 1, 2, 6, _check_Z_any 14 (``and``:
    a square Z of the wrong M passes) and 21 (message None)."""
    c = _two()
    bad = np.zeros((c.M + 1, c.M + 1))
    shape = rf"must be \(M, M\) or \(R, M, M\) with M={c.M}; got shape \({c.M + 1}, {c.M + 1}\)$"
    for f in (lambda **k: class_entropy(c, bad, **k), lambda **k: class_entropy(c, bad, over="support", **k),
              lambda **k: common_mass(c, bad, **k)):
        with pytest.raises(ValueError, match="^Z " + shape):
            f()
        with pytest.raises(ValueError, match="^W " + shape):
            f(what="W")


def test_common_mass_names_a_non_classes_argument_and_a_nan_Z():
    """Kills _check_Z_any mutants 2, 3 (``classes`` message) and 5 (``finite(None, ...)``)."""
    c = _two()
    with pytest.raises(ValueError, match=r"^classes must be a SequenceClasses, got dict$"):
        common_mass({}, np.zeros((c.M, c.M)))
    Z = np.zeros((c.M, c.M))
    Z[0, 0] = np.nan
    with pytest.raises(ValueError, match=r"^W is not finite at index \(0, 0\)"):
        common_mass(c, Z, what="W")


def test_undefined_entropy_warning_names_the_class_of_a_single_Z():
    """Kills _undefined_where_negligible mutants 29 (run and class for an (M, M) Z: IndexError),
    34 (``idx[1]``), 42, 43 (the message's last sentence), distinct_entropy 47 and class_entropy
    47 (``what`` None)."""
    c = _two()
    Z = _low(c, np.zeros((c.M, c.M)), 1)
    msg = (r"^W: 1 class\(es\) have distinct-token entropy NaN \(e\.g\. class 1: its attention on its distinct "
           r"tokens is \S+ of the whole, below 1e-06; all of it is on the common tokens, so there is no sparsity "
           r"to measure, not perfect sparsity\)$")
    with pytest.warns(UndefinedEntropyWarning, match=msg):
        e = class_entropy(c, Z, what="W")
    assert e[0] == pytest.approx(np.log(4), abs=1e-12) and np.isnan(e[1])
    with pytest.warns(UndefinedEntropyWarning, match=msg):
        assert np.isnan(distinct_entropy(c, Z, what="W"))


def test_undefined_entropy_warning_names_the_run_and_class_of_a_stack():
    """Kills _undefined_where_negligible mutant 30 (``run {idx[1]}``)."""
    c = _two()
    Z = np.zeros((2, c.M, c.M))
    Z[1] = _low(c, Z[1], 0)
    with pytest.warns(UndefinedEntropyWarning, match=r"\(e\.g\. run 1, class 0: "):
        e = class_entropy(c, Z)
    assert np.isnan(e[1, 0]) and not np.isnan(e).ravel()[[0, 1, 3]].any()


def test_support_entropy_has_no_undefined_classes():
    """Kills class_entropy mutant 43 (``over="support"`` NaN-ed and warned like ``"distinct"``)."""
    c = _two()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        e = class_entropy(c, _low(c, np.zeros((c.M, c.M)), 1), over="support")
    assert np.isfinite(e).all() and e[0] == pytest.approx(np.log(5), abs=1e-12)


def test_distinct_mass_exactly_at_the_minimum_is_defined(monkeypatch):
    """Kills _undefined_where_negligible mutant 21 (``<=``): NaN only strictly below DISTINCT_MASS_MIN."""
    c = _two()
    Z = np.zeros((c.M, c.M))
    Z[c.query[1], c.common_tokens[0]] = 12.0
    mass = metrics._distinct_mass(c, Z)
    monkeypatch.setattr(metrics, "DISTINCT_MASS_MIN", float(mass[1]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        e = class_entropy(c, Z)
    assert e[1] == pytest.approx(np.log(4), abs=1e-9)


def test_classes_far_apart_in_scale_keep_their_own_entropies():
    """Kills distinct_entropy mutants 26 (``logit + max``: exp overflows), 27, 29 (max over every
    class: the other class underflows to 0/0) and _restricted_entropy mutants 10, 12 (the same in
    class_entropy: an undefined class divides 0 by 0, a stray numpy RuntimeWarning)."""
    c = _two()
    Z = np.zeros((c.M, c.M))
    Z[c.query[0], c.distinct_tokens(0)[2]] = 800.0         # class 0 sparse; class 1 uniform (ln 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert distinct_entropy(c, Z) == pytest.approx(np.log(4) / 2, abs=1e-12)
    Z2 = _low(c, np.zeros((c.M, c.M)), 1)
    Z2[c.query[1], c.common_tokens[0]] = 800.0              # class 1's distinct weights ~e^-800
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        e = class_entropy(c, Z2)
    assert [w.category for w in got] == [UndefinedEntropyWarning]
    assert e[0] == pytest.approx(np.log(4), abs=1e-12) and np.isnan(e[1])


def test_attention_rows_summing_to_one_plus_the_tolerance_pass(monkeypatch):
    """Kills attention_entropy mutant 39 (``>=``): the tolerance on a row's sum is inclusive."""
    d = 2.0 ** -10                                          # exact in binary: the row sums to 1 + d exactly
    monkeypatch.setattr(metrics, "_SUM_TOL", d)
    a = np.array([[0.5, 0.5], [0.5, 0.5 + d]])
    row1 = -(0.5 * np.log(0.5) + (0.5 + d) * np.log(0.5 + d))
    assert attention_entropy(a, causal=False) == pytest.approx((np.log(2) + row1) / 2, abs=1e-15)


@pytest.mark.xfail(strict=True, reason="metrics.recall_threshold casts thresholds with np.asarray(..., float) "
                   "before finite() sees them: a complex list is numpy's TypeError, a complex array drops its "
                   "imaginary part with a ComplexWarning; finite() would say 'thresholds must be real'")
def test_recall_threshold_rejects_complex_thresholds_by_name():
    """Documents a bug (the mutants recall_threshold 19, 21 drop the cast and behave as wanted):
    remove the mark once the cast goes (XPASS then fails, strict)."""
    c = _two()
    with pytest.raises(ValueError, match=r"^thresholds must be real"):
        recall_threshold(c, np.zeros((c.M, c.M)), [0.1 + 1j])
