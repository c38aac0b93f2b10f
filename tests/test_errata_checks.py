"""The checks behind the errata page's items 13-16 (book/errata.ipynb), against the package.

Each test pins a verdict the page states: a bug in theory.B_n_late / late_regime_margin, or in the
functions the page's Lemma 9 and Theorem 4 checks rest on, must flip one of them here.
"""
import re

import numpy as np
import pytest

from scansnap import theory as th

# Erratum 15's setting: a decoder 10^4 times faster than the attention.
M, K, C0, NU, ETA_Y = 1000, 2, 1.0, 1e4, 100.0
ARGS = (M, K, ETA_Y, ETA_Y / NU, C0)


def threshold(M, K, C0, nu):
    """Eq. 132 needs ln(M eta_Y t/K) >> (M/(M-1)) sqrt(C0 nu/(2K))."""
    return M / (M - 1) * np.sqrt(C0 * nu / (2 * K))


def t_at(L, M=M, K=K, eta_y=ETA_Y):
    """The time at which ln(M eta_Y t/K) = L."""
    return np.exp(L) * K / (M * eta_y)


def test_eq132_at_the_printed_conditions_point_has_the_wrong_sign():
    t = 1e12
    assert th.late_regime_margin(t, *ARGS, printed=True) == pytest.approx(
        t * M * ETA_Y * np.exp(-1 / np.sqrt(2 * NU)), rel=1e-12)
    assert th.late_regime_margin(t, *ARGS, printed=True) > 1e16           # the paper: valid
    assert th.late_regime_margin(t, *ARGS) == pytest.approx(
        np.log(M * ETA_Y * t / K) / threshold(M, K, C0, NU), rel=1e-12)
    assert th.late_regime_margin(t, *ARGS) == pytest.approx(0.768, abs=1e-3)  # corrected: not yet
    assert th.B_n_late(t, *ARGS) == pytest.approx(-0.1318, abs=1e-4)
    assert th.B_n(t, *ARGS) == pytest.approx(0.1160, abs=1e-4)


@pytest.mark.parametrize("C0", [0.3, 1.0, 1.5])
@pytest.mark.parametrize("nu", [1e2, 1e4])
def test_eq132_agrees_with_the_exact_B_n_once_the_corrected_margin_is_large(C0, nu):
    args = (M, K, ETA_Y, ETA_Y / nu, C0)
    thr = threshold(M, K, C0, nu)
    for times in (8, 10):
        t = t_at(times * thr)
        assert th.late_regime_margin(t, *args) == pytest.approx(times, rel=1e-9)
        exact, late = th.B_n(t, *args), th.B_n_late(t, *args)
        assert abs(late / exact - 1) < 0.01
        # the printed Eq. 132 lacks erratum 3's constant: off by exactly (1/4) ln C0
        assert th.B_n_late(t, *args, printed=True) - late == pytest.approx(0.25 * np.log(C0), abs=1e-12)
    # below the threshold Eq. 132 is off by far more than 1%
    t = t_at(0.5 * thr)
    assert abs(th.B_n_late(t, *args) - th.B_n(t, *args)) > 0.2


def test_eq132_is_half_ln_L_plus_the_constant():
    L = 40.0
    nu = ARGS[2] / ARGS[3]
    expected = 0.5 * np.log(L) + 0.25 * np.log(2 * K * (M - 1) ** 2 / (M**2 * nu * C0))
    assert th.B_n_late(t_at(L), *ARGS) == pytest.approx(expected, rel=1e-12)
    np.testing.assert_allclose(th.B_n_late(t_at(np.array([30.0, 60.0])), *ARGS),
                               0.5 * np.log([30.0, 60.0]) + expected - 0.5 * np.log(L), rtol=1e-12)


@pytest.mark.parametrize("call, message", [
    (lambda: th.B_n_late(1e-9, *ARGS), re.escape("time t must exceed K/(M eta_Y)")),
    (lambda: th.late_regime_margin(0.0, *ARGS), re.escape("time t must exceed K/(M eta_Y)")),
    (lambda: th.B_n_late(np.nan, *ARGS), "t is not finite"),
    (lambda: th.B_n_late(1e3, M, K, ETA_Y, 0.0, C0), "eta_z must be a positive number"),
    (lambda: th.late_regime_margin(1e3, M, K, ETA_Y, 0.01, -1.0), "C0 must be a positive number"),
    (lambda: th.late_regime_margin(-1.0, *ARGS, printed=True), "time t must be >= 0"),
    (lambda: th.B_n_late(1e3, 1, K, ETA_Y, 0.01, C0), "M must be an integer >= 2"),
])
def test_eq132_rejects_bad_input(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_eq133_bracket_is_negative_where_B_n_is_positive_and_the_weights_half_quarter_fit():
    signs, fits = [], []
    for nu in (1e2, 1e3, 1e4):
        args = (M, K, ETA_Y, ETA_Y / nu, C0)
        for times in (4, 8, 12):
            L = times * threshold(M, K, C0, nu)
            B = th.B_n(t_at(L), *args)
            assert B > 0
            signs.append(np.sign(np.log(L) - np.log(nu / K)))          # Eq. 133's bracket
            weighted = 0.5 * np.log(L) - 0.25 * np.log(nu / K) + 0.25 * np.log(2 * (M - 1) ** 2 / M**2)
            fits.append(B / weighted)
    assert -1 in signs and 1 in signs
    assert max(abs(f - 1) for f in fits) < 0.03


@pytest.mark.parametrize("M, K, eta", [(1000, 10, 1.0), (100, 5, 0.1), (30, 2, 1.0)])
def test_lemma9_stage1_inequality_fails_exactly_before_lemma8s_lower_zero(M, K, eta):
    h_lo, _ = th.lemma8_zeros(M)
    t_lo = K * th.time_of_h(h_lo, M, eta)
    assert t_lo == pytest.approx(K / (M * eta), rel=0.1)
    t_end = K * np.log(M) / eta
    ts = np.concatenate([[0.0], np.geomspace(1e-3 * t_lo, t_end, 2001)])
    h = th.h_closed(ts / K, M, eta)
    holds = np.exp(M * h) <= np.minimum(M - 1, (M - 1) * M * h) * (1 + 1e-12)
    after = ts >= t_lo * (1 + 1e-9)
    assert not holds[0]                                         # t = 0: 1 against 0
    assert not holds[~after].any() and holds[after].all()
    assert np.all(h <= (M * eta * ts / K + 1) / (M * (M - 1)) * (1 + 1e-12))


def test_theorem4_snapping_log_without_M_is_not_uniform_in_M():
    K, eta = 10, 1.0
    worst = {"printed": [], "corrected": []}
    for M in (10**2, 10**6, 10**12):
        t = th.transition_time(M, K, eta) * np.geomspace(1, 100, 21)
        g = th.gamma(t, M, K, eta, discrete=False)
        worst["printed"].append((g / (K * np.log(eta * t / K) / (eta * t))).max())
        r = g / (K * np.log(M * eta * t / K) / (eta * t))
        assert 0.9 < r.min() and r.max() < 2
        worst["corrected"].append(r.max())
    assert worst["printed"][0] < worst["printed"][1] < worst["printed"][2]
    assert worst["printed"][2] > 3 * worst["printed"][0]
