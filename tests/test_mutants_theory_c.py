"""theory.py, part C of the mutation survivors (issue 28): Eq. 32's loss of h and Eq. 132's late
form (``B_n_late``, ``late_regime_margin``, ``_late_log``): the messages name the argument and
its rule from their start, the boundaries are where the docstrings put them, and a float32 h
is computed in float64 (the module's rule: see test_mutants_theory_b.py)."""
import numpy as np
import pytest

from scansnap import theory as th

ARGS = dict(M=100, K=2, eta_y=0.5, eta_z=1.0, C0=2.0)


def test_loss_of_h_needs_M_2_by_name_and_takes_M_2():
    for M in (1, 0):
        with pytest.raises(ValueError, match=rf"^M must be an integer >= 2, got {M}$"):
            th.loss_of_h([0.1], M)
    np.testing.assert_allclose(th.loss_of_h(0.0, 2), np.log(2.0), rtol=1e-15)     # two tokens, h = 0: ln 2


def test_loss_of_h_computes_a_float32_h_in_float64():
    M = 50
    h = np.array([0.013, 0.1, 0.37], dtype=np.float32)
    want = np.log1p((M - 1) * np.exp(-M * h.astype(np.float64)))
    got = th.loss_of_h(h, M)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=0)


@pytest.mark.parametrize("fn", [th.B_n_late, th.late_regime_margin])
def test_the_late_forms_name_each_bad_argument(fn):
    t = 50.0
    for bad, message in [(dict(M=1), r"^M must be an integer >= 2, got 1$"),
                         (dict(K=0), r"^K must be an integer >= 1, got 0$"),
                         (dict(eta_y=0.0), r"^eta_y must be a positive number, got 0.0$"),
                         (dict(eta_z=-1.0), r"^eta_z must be a positive number, got -1.0$"),
                         (dict(C0=0), r"^C0 must be a positive number, got 0$")]:
        with pytest.raises(ValueError, match=message):
            fn(t, **{**ARGS, **bad})


def test_the_late_forms_take_M_2():
    """M = 2 is allowed (the 'minimum=2'): the values are Eq. 132's, written out here."""
    M, K, ey, ez, C0, t = 2, 1, 0.5, 1.0, 2.0, 10.0
    L = np.log(M * ey * t / K)
    nu = ey / ez
    late = 0.5 * np.log(L) + 0.25 * np.log(2 * K * (M - 1) ** 2 / (M ** 2 * nu)) - 0.25 * np.log(C0)
    np.testing.assert_allclose(th.B_n_late(t, M, K, ey, ez, C0), late, rtol=1e-14)
    np.testing.assert_allclose(th.late_regime_margin(t, M, K, ey, ez, C0),
                               L / (M / (M - 1) * np.sqrt(C0 * nu / (2 * K))), rtol=1e-14)


def test_the_papers_margin_starts_at_t_0_and_names_a_bad_t():
    """printed=True: t M eta_Y exp(-1/sqrt(2 nu)), defined from t = 0 on (0 at t = 0)."""
    margin = th.late_regime_margin([0.0, 0.5, 2.0], printed=True, **ARGS)
    want = np.array([0.0, 0.5, 2.0]) * 100 * 0.5 * np.exp(-1 / np.sqrt(2 * 0.5))
    np.testing.assert_allclose(margin, want, rtol=1e-15, atol=0)
    with pytest.raises(ValueError, match=r"^t is not finite at index \(0,\)"):
        th.late_regime_margin([np.nan], printed=True, **ARGS)
    with pytest.raises(ValueError, match=r"^time t must be >= 0, got -0.5$"):
        th.late_regime_margin([1.0, -0.5], printed=True, **ARGS)


def test_eq_132_needs_t_strictly_past_K_over_M_eta_y():
    """At t = K/(M eta_Y) exactly, L = ln 1 = 0: Eq. 132 has no value there (ln L = -inf)."""
    M, K, ey = 4, 2, 0.5                   # the floor K/(M eta_Y) = 1.0 exactly
    with pytest.raises(ValueError, match=r"^time t must exceed K/\(M eta_Y\) = 1 for Eq. 132"):
        th.B_n_late(1.0, M, K, ey, 1.0, 1.0)
    assert np.isfinite(th.B_n_late(np.nextafter(1.0, 2.0), M, K, ey, 1.0, 1.0))


def test_inputs_with_overlap_names_its_arguments_and_fits_K_plus_1_directions():
    rng = np.random.default_rng(0)
    for args, message in [((1, 1, 0.3), r"^M must be an integer >= 2, got 1$"),
                          ((5, 0, 0.3), r"^K must be an integer >= 1, got 0$"),
                          ((3, 3, 0.3), r"^K \+ 1 = 4 orthonormal directions do not fit in M = 3 dimensions$"),
                          ((5, 2, 1.5), r"^rho must be")]:
        with pytest.raises(ValueError, match=message):
            th.inputs_with_overlap(*args, rng)
    for M, K in [(2, 1), (4, 3)]:                    # K + 1 = M directions fit exactly
        F = th.inputs_with_overlap(M, K, 0.25, np.random.default_rng(1))
        np.testing.assert_allclose(F.T @ F, 0.25 + 0.75 * np.eye(K), atol=1e-12)


def test_inputs_with_overlap_is_the_remarks_construction_from_the_generators_draw():
    """f_n = sqrt(rho) u_0 + sqrt(1 - rho) u_n with U the QR of one (M, K+1) normal draw: chapter 3
    prints numbers computed from a seeded F, so what a seed gives is pinned (the construction's
    other sign, - sqrt(1 - rho) u_n, has the same overlaps but other inputs)."""
    M, K, rho = 7, 3, 0.3
    U, _ = np.linalg.qr(np.random.default_rng(5).normal(size=(M, K + 1)))
    F = th.inputs_with_overlap(M, K, rho, np.random.default_rng(5))
    np.testing.assert_allclose(F, np.sqrt(rho) * U[:, [0]] + np.sqrt(1 - rho) * U[:, 1:], rtol=0, atol=1e-15)


def test_zeta_takes_token_ids_below_M_only():
    np.testing.assert_allclose(th.zeta(4, 3), [-1 / 3, -1 / 3, -1 / 3, 1.0], rtol=1e-15)
    with pytest.raises(ValueError, match=r"^n must be a token id in \[0, 4\), got 4$"):
        th.zeta(4, 4)
    with pytest.raises(ValueError, match=r"^n must be an integer, got 1.5$"):
        th.zeta(4, 1.5)


def test_h_ode_says_when_its_integrator_fails(monkeypatch):
    class Failed:
        success, message = False, "Required step size is less than spacing between numbers."
    monkeypatch.setattr(th, "solve_ivp", lambda *a, **k: Failed())
    with pytest.raises(RuntimeError, match=r"^h_ode: the integrator failed \(Required step size is less than "
                                           r"spacing between numbers.\)$"):
        th.h_ode([0.0, 1.0], 10, 0.5)
