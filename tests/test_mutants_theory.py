"""theory.py: behaviours the mutation run showed no test pinned down (bench/MUTATION.md).

Each test checks the function against an independent computation (torch autograd, Lambert W,
a direct loop over the paper's sums, the same numbers in float64), a documented default, or
the error a bad argument must give (naming the argument and the rule).
"""
import numpy as np
import pytest
import torch

from scansnap import theory as th


def _unit_columns(M, K, seed):
    F = np.random.default_rng(seed).normal(size=(M, K))
    return F / np.linalg.norm(F, axis=0)


# ---------------------------------------------------------------------------------------
# Lemma 1 (Eq. 3): the default is the paper's model, with the layer norm
# ---------------------------------------------------------------------------------------

def test_lemma1_default_is_the_layer_normed_model_of_eq3():
    """lemma1_gradients(Y, Z, tokens, next) without ``normalize`` = the gradient of
    J = log softmax(Y^T LN(X^T b))[x_{T+1}], b = softmax(X Z^T x_T), by torch autograd."""
    rng = np.random.default_rng(3)
    M, T = 7, 6
    Y0, Z0 = rng.normal(size=(M, M)), rng.normal(size=(M, M))
    tokens = np.array([1, 4, 4, 0, 6, 2])
    nxt = 5
    Y = torch.tensor(Y0, requires_grad=True)
    Z = torch.tensor(Z0, requires_grad=True)
    X = torch.eye(M, dtype=torch.float64)[torch.from_numpy(tokens[:-1])]
    xT = torch.eye(M, dtype=torch.float64)[tokens[-1]]
    b = torch.softmax(X @ Z.T @ xT, 0)
    v = X.T @ b
    J = torch.log_softmax(Y.T @ (v / v.norm()), 0)[nxt]
    J.backward()
    dY, dZ = th.lemma1_gradients(Y0, Z0, tokens, nxt)
    np.testing.assert_allclose(dY, Y.grad.numpy(), atol=1e-12, rtol=0)
    np.testing.assert_allclose(dZ, Z.grad.numpy(), atol=1e-12, rtol=0)


# ---------------------------------------------------------------------------------------
# Lemma 18 (Eq. 136): the Hoeffding radius and its domain
# ---------------------------------------------------------------------------------------

def test_hoeffding_radius_domain_and_smallest_T():
    # T = 2 is the smallest sequence (one contextual token): radius sqrt(ln(2/delta) / 2)
    assert th.hoeffding_radius(2, 0.05) == pytest.approx(np.sqrt(np.log(40) / 2), rel=1e-14)
    with pytest.raises(ValueError, match=r"^T \(sequence length\) must be an integer >= 2, got 1$"):
        th.hoeffding_radius(1, 0.05)
    with pytest.raises(ValueError, match=r"^delta must be in \(0, 1\), got 0"):
        th.hoeffding_radius(10, 0.0)


# ---------------------------------------------------------------------------------------
# Lemma 6 (Eq. 44-45): h by ODE and by inversion; inputs in float32 are computed in float64
# ---------------------------------------------------------------------------------------

def test_h_ode_for_M_2_and_float32_times():
    t = np.array([0.0, 0.5, 3.0, 40.0])
    np.testing.assert_allclose(th.h_ode(t, 2, 0.8), th.h_closed(t, 2, 0.8), rtol=1e-8, atol=1e-14)
    # times handed over in float32 (e.g. from a torch tensor): the same accuracy as in float64
    t32 = np.array([0.1, 1.3, 7.7, 100.3], np.float32)
    np.testing.assert_allclose(th.h_ode(t32, 5, 0.7), th.h_closed(t32.astype(float), 5, 0.7),
                               rtol=1e-9, atol=0)


@pytest.mark.parametrize("fn", [lambda M: th.h_ode([1.0], M, 0.5), lambda M: th.time_of_h([0.1], M, 0.5)])
def test_M_below_2_is_refused_by_name(fn):
    with pytest.raises(ValueError, match=r"^M must be an integer >= 2, got 1$"):
        fn(1)


def test_h_ode_names_a_bad_rate():
    with pytest.raises(ValueError, match=r"^eta_y must be a positive number, got -1"):
        th.h_ode([1.0], 5, -1.0)


def test_time_of_h_for_M_2_float32_and_the_value_named():
    t = np.array([0.0, 0.7, 9.0, 300.0])
    np.testing.assert_allclose(th.time_of_h(th.h_closed(t, 2, 1.5), 2, 1.5), t, rtol=1e-10, atol=1e-12)
    # h in float32: Eq. 45 evaluated in float64 on those exact values
    h32 = np.array([0.01, 0.2, 0.9], np.float32)
    h = h32.astype(float)
    M, eta = 20, 0.3
    want = (np.exp(M * h) - 1 + (M - 1) * M * h) / (M * eta)
    got = th.time_of_h(h32, M, eta)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=0)
    with pytest.raises(ValueError, match=r"^h must be finite and >= 0, got -0\.25 at index \(1,\)$"):
        th.time_of_h([0.3, -0.25], 10, 1.0)
    with pytest.raises(ValueError, match=r"^h must be finite and >= 0, got nan at index \(0, 1\)$"):
        th.time_of_h([[0.3, np.nan]], 10, 1.0)


# ---------------------------------------------------------------------------------------
# Lemma 8: the zeros of exp(Mh) - (M-1) M h against Lambert W
# ---------------------------------------------------------------------------------------

def test_lemma8_zeros_are_lambert_w_and_need_M_4():
    """e^{Mh} = (M-1) M h  <=>  -Mh e^{-Mh} = -1/(M-1): Mh = -W_0(-1/(M-1)) (lower zero) and
    -W_{-1}(-1/(M-1)) (upper zero)."""
    from scipy.special import lambertw
    for M in (4, 7, 100, 5000):
        lo, up = th.lemma8_zeros(M)
        assert lo == pytest.approx(-lambertw(-1 / (M - 1), 0).real / M, rel=1e-13)
        assert up == pytest.approx(-lambertw(-1 / (M - 1), -1).real / M, rel=1e-10)
    for M in (4, 100, 10**6):  # the upper zero to rounding too, not to brentq's default xtol (2e-12)
        up_w = -lambertw(-1 / (M - 1), -1).real / M
        assert th.lemma8_zeros(M)[1] == pytest.approx(up_w, rel=4e-15, abs=0)
        assert (1 + th.omega1(M)) * np.log(M) / M == pytest.approx(up_w, rel=4e-15, abs=0)
    with pytest.raises(ValueError, match=r"^M must be an integer >= 4, got 3$"):
        th.lemma8_zeros(3)
    with pytest.raises(ValueError, match=r"^M must be an integer >= 4, got 1$"):
        th.lemma8_zeros(1)


# ---------------------------------------------------------------------------------------
# Theorem 3 (Eq. 12): the bounds in float64 whatever the input's precision
# ---------------------------------------------------------------------------------------

def test_growth_factor_bounds_in_float64_for_float32_B():
    B32 = np.array([0.3, 1.7, 6.1], np.float32)
    B = B32.astype(float)
    lo, hi = th.growth_factor_bounds(B32, 0.2)
    np.testing.assert_allclose(lo, np.exp(0.4 * B), rtol=1e-15, atol=0)
    np.testing.assert_allclose(hi, np.exp(2 * B), rtol=1e-15, atol=0)


# ---------------------------------------------------------------------------------------
# Lemma 4 (Eq. 10): the sum over n and n' written out term by term
# ---------------------------------------------------------------------------------------

def test_lemma4_zdot_is_eq10_term_by_term_with_gamma_1_by_default():
    M, K = 30, 4
    F = _unit_columns(M, K, 11)
    members = [0, 2, 3]
    want = np.zeros(M)
    for n in members:
        _, beta = th.theorem1_coefficients(F, n, M)
        f = F[:, n]
        for n2 in range(K):
            if n2 != n:
                want += np.diag(f) @ (beta[n2] * (np.outer(f, f) - np.eye(M)) @ F[:, n2])
    np.testing.assert_allclose(th.lemma4_zdot(F, members, M), want, atol=1e-14, rtol=1e-12)
    np.testing.assert_allclose(th.lemma4_zdot(F, members, M, 0.25), 0.25 * want, atol=1e-14, rtol=1e-12)


# ---------------------------------------------------------------------------------------
# decoder_rounds: the A-space loop against the plain Y-space loop it stands for
# ---------------------------------------------------------------------------------------

def _rounds_reference(F, eta, rounds, modified, labels):
    """Eq. 26 (modified) or Eq. 7 averaged over the K classes, iterated on Y (M x M) directly."""
    M, K = F.shape
    E, Ep = th.E_matrices(F)
    U = F - F @ Ep if modified else F                       # column n: u_n
    Y = np.zeros((M, M))
    loss, gn, xi = [], [], []
    for r in range(rounds + 1):
        resid = np.zeros((K, M))
        for n in range(K):
            a = np.exp(Y.T @ F[:, n] - (Y.T @ F[:, n]).max())
            a /= a.sum()
            resid[n] = np.eye(M)[labels[n]] - a
        loss.append(-np.mean([np.log(1 - resid[n, labels[n]]) for n in range(K)]))
        g = Y @ resid.T                                     # column n: g_n = Y (e_n - alpha_n)
        gn.append(np.linalg.norm(g, axis=0))
        c = np.linalg.solve(F.T @ F, F.T @ g)               # g_n = F c_n
        xi.append([-sum(c[k, n] * E[n, k] for k in range(K) if k != n) for n in range(K)])
        if r < rounds:
            Y = Y + eta / K * U @ resid
    return np.array(loss), np.array(gn), np.array(xi), F.T @ Y


@pytest.mark.parametrize("labels", [None, [6, 0, 3]])
def test_decoder_rounds_equals_the_y_space_loop(labels):
    M, K, eta, R = 9, 3, 1.7, 12
    F = _unit_columns(M, K, 5)
    lab = np.arange(K) if labels is None else np.array(labels)
    for kw, modified in (({}, True), ({"modified": False}, False)):      # the default is Eq. 26
        out = th.decoder_rounds(F, eta, R, labels=labels, **kw)
        loss, gn, xi, W = _rounds_reference(F, eta, R, modified, lab)
        assert out.loss.shape == (R + 1,) and out.grad_norm.shape == out.xi.shape == (R + 1, K)
        np.testing.assert_allclose(out.loss, loss, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(out.grad_norm, gn, rtol=1e-10, atol=1e-13)
        np.testing.assert_allclose(out.xi, xi, rtol=1e-10, atol=1e-13)
        np.testing.assert_allclose(out.W, W, rtol=1e-12, atol=1e-13)
    # F in float32 (unit columns to float32 rounding): computed in float64 on those values
    F32 = F.astype(np.float32)
    F32d = F32.astype(float)
    if np.allclose(np.linalg.norm(F32d, axis=0), 1.0, atol=1e-9):
        a, b = th.decoder_rounds(F32, eta, R, labels=labels), th.decoder_rounds(F32d, eta, R, labels=labels)
        np.testing.assert_array_equal(a.W, b.W)
        np.testing.assert_array_equal(a.xi, b.xi)


def test_decoder_rounds_zero_rounds_is_the_start():
    M, K = 6, 2
    out = th.decoder_rounds(_unit_columns(M, K, 1), 1.0, 0)
    np.testing.assert_allclose(out.loss, [np.log(M)], rtol=1e-15)
    assert out.grad_norm.shape == (1, K) and not out.grad_norm.any() and not out.W.any()


def test_decoder_rounds_refusals_name_the_rule():
    F = np.eye(5)[:, :2]
    # the unit-norm check is absolute, 1e-6: just inside passes, just outside is named
    th.decoder_rounds(np.diag([1.0, 1 + 0.9e-6, 1.0])[:, :2], 1.0, 1)
    with pytest.raises(ValueError, match=r"must have unit norm .*: column 1 has norm 1\.0000011"):
        th.decoder_rounds(np.diag([1.0, 1 + 1.1e-6, 1.0])[:, :2], 1.0, 1)
    with pytest.raises(ValueError, match=r"^the columns f_n of F must have unit norm"):
        th.decoder_rounds(np.diag([1.0, 1.01, 1.0])[:, :2], 1.0, 3)
    with pytest.raises(ValueError, match=r"^the columns f_n of F must have unit norm"):
        th.decoder_rounds(np.zeros((3, 2)), 1.0, 3)
    with pytest.raises(ValueError, match=r"labels must be K = 2 token ids in \[0, 5\)"):
        th.decoder_rounds(F, 1.0, 3, labels=[0, 5])                     # M itself is out of range
    with pytest.raises(ValueError, match=r"labels must be K = 2 token ids"):
        th.decoder_rounds(F, 1.0, 3, labels=[1])                        # one label for two classes
    with pytest.raises(ValueError, match=r"labels must be K = 2 token ids"):
        th.decoder_rounds(F, 1.0, 3, labels=[0, 1, 2])
    with pytest.raises(ValueError, match=r"^rounds must be an integer >= 0, got -1$"):
        th.decoder_rounds(F, 1.0, -1)


# ---------------------------------------------------------------------------------------
# Eq. 85: gamma(t) on float32 times is gamma on the same times in float64
# ---------------------------------------------------------------------------------------

def test_gamma_on_float32_times():
    M, K, eta = 40, 3, 0.6
    t32 = np.array([0.5, 7.7, 31.3, 200.9], np.float32)
    t = t32.astype(float)
    for discrete in (True, False):
        s = np.ceil(t / K) if discrete else t / K
        want = th.gamma_of_h(th.h_closed(s, M, eta), M)
        np.testing.assert_allclose(th.gamma(t32, M, K, eta, discrete=discrete), want, rtol=1e-13, atol=0)


# ---------------------------------------------------------------------------------------
# population_dynamics: the times asked for, the shapes, a given start, the names of bad rates
# ---------------------------------------------------------------------------------------

def test_population_dynamics_returns_the_requested_times_and_start():
    from scansnap import make_classes
    c = make_classes(num_last=1, num_next_per_last=2, num_common=1, num_distinct=2)
    M = c.M
    rng = np.random.default_rng(8)
    Y0, Z0 = 0.1 * rng.normal(size=(M, M)), 0.1 * rng.normal(size=(M, M))
    sol = th.population_dynamics(c, 2.0, 0.5, t_end=1.5, t_eval=[0.0, 0.25, 1.5], Y0=Y0, Z0=Z0)
    np.testing.assert_array_equal(sol.t, [0.0, 0.25, 1.5])
    assert sol.Y.shape == sol.Z.shape == (3, M, M)
    np.testing.assert_array_equal(sol.Y[0], Y0)
    np.testing.assert_array_equal(sol.Z[0], Z0)
    # a short Euler check of the first instant: dY/dt = eta_Y E[dJ/dY], dZ/dt = eta_Z E[dJ/dZ]
    short = th.population_dynamics(c, 2.0, 0.5, t_end=1e-4, t_eval=[1e-4], Y0=Y0, Z0=Z0,
                                   rtol=1e-10, atol=1e-13)
    dY, dZ = th.expected_gradients(c, Y0, Z0)
    np.testing.assert_allclose((short.Y[0] - Y0) / 1e-4, 2.0 * dY, atol=1e-4)
    np.testing.assert_allclose((short.Z[0] - Z0) / 1e-4, 0.5 * dZ, atol=1e-4)
    default = th.population_dynamics(c, 2.0, 0.5, t_end=1.0)
    np.testing.assert_allclose(default.t, np.linspace(0, 1.0, 101), rtol=0, atol=0)


@pytest.mark.parametrize("kw, name", [({"eta_y": 0.0}, "eta_y"), ({"eta_z": -1.0}, "eta_z"),
                                      ({"t_end": 0.0}, "t_end")])
def test_population_dynamics_names_a_bad_argument(kw, name):
    from scansnap import syn_small
    args = dict(eta_y=1.0, eta_z=1.0, t_end=1.0) | kw
    with pytest.raises(ValueError, match=rf"^{name} must be a positive number"):
        th.population_dynamics(syn_small(), **args)


# ---------------------------------------------------------------------------------------
# Eq. 33: h*(s) for M = 2 and s = 0, and its arguments named
# ---------------------------------------------------------------------------------------

def test_h_star_edges_and_names():
    np.testing.assert_array_equal(th.h_star(0, 5, 1.0), [0.0])
    # M = 2: h*(1) = eta / (1 + e^0) = eta / 2, h*(2) = h*(1) + eta / (1 + e^{2 h*(1)})
    h = th.h_star(2, 2, 0.8)
    assert h[1] == pytest.approx(0.4, rel=1e-15) and h[2] == pytest.approx(0.4 + 0.8 / (1 + np.exp(0.8)), rel=1e-15)
    with pytest.raises(ValueError, match=r"^steps must be an integer >= 0, got -1$"):
        th.h_star(-1, 5, 1.0)
    with pytest.raises(ValueError, match=r"^M must be an integer >= 2, got 1$"):
        th.h_star(3, 1, 1.0)
    with pytest.raises(ValueError, match=r"^eta_y must be a positive number, got 0"):
        th.h_star(3, 5, 0.0)


def test_omega1_refuses_every_M_below_4_by_name():
    for M in (1, 2, 3):
        with pytest.raises(ValueError, match=rf"^M must be an integer >= [24], got {M}"):
            th.omega1(M)
    for M in (2, 3):                       # valid M elsewhere, but Lemma 8's zero needs M >= 4
        with pytest.raises(ValueError, match=rf"^M must be an integer >= 4, got {M}: exp\(Mh\) - \(M-1\)Mh has no "
                                             r"zero for M < 4, so Lemma 8's omega_1 does not exist$"):
            th.omega1(M)


def test_transition_time_names_K_and_eta_y():
    with pytest.raises(ValueError, match=r"^K must be an integer >= 1, got 0$"):
        th.transition_time(10, 0, 1.0)
    with pytest.raises(ValueError, match=r"^eta_y must be a positive number, got -2"):
        th.transition_time(10, 3, -2.0)


def test_E_matrices_in_float64_for_a_float32_F():
    """E = F^T F - I and E' = I - (I + E)^-1 (the book's erratum 1) from a float32 F are computed on
    its values in float64 (the precision Theorem 1's coefficients need), as for a float64 F."""
    F32 = _unit_columns(40, 4, 2).astype(np.float32)
    F = F32.astype(float)
    E32, Ep32 = th.E_matrices(F32)
    E, Ep = th.E_matrices(F)
    assert E32.dtype == Ep32.dtype == np.float64
    np.testing.assert_allclose(E32, F.T @ F - np.eye(4), rtol=0, atol=1e-15)
    np.testing.assert_allclose(Ep32, Ep, rtol=0, atol=1e-14)


def test_modified_decoder_dynamics_names_a_bad_rate():
    with pytest.raises(ValueError, match=r"^eta_y must be a positive number, got 0"):
        th.modified_decoder_dynamics(_unit_columns(6, 2, 0), [0, 1], 0.0)


def test_theorem1_coefficients_both_forms_term_by_term_and_xi_default():
    """iota_n = q1 (1 - E'_nn) - q0 sum_{k != n} E'_kn; beta_nn' = q1 E'_nn' - q0 (1 - sum_{k != n} E'_kn')
    (derived) or q1 E'_nn' + q0 (1 + sum_{k != n} E'_kn') (as printed, the book's erratum 2), with
    q1 = zeta_i . zeta_i and q0 = zeta_j . zeta_i; xi_n = sum_{n'} beta_nn' f_n . f_n' (gamma 1)."""
    M, K = 25, 4
    F = _unit_columns(M, K, 9)
    _, Ep = th.E_matrices(F)
    q1, q0 = th.zeta(M, 0) @ th.zeta(M, 0), th.zeta(M, 1) @ th.zeta(M, 0)
    for n in range(K):
        others = [k for k in range(K) if k != n]
        iota, beta = th.theorem1_coefficients(F, n, M)
        iota_p, beta_p = th.theorem1_coefficients(F, n, M, printed=True)
        assert iota == pytest.approx(q1 * (1 - Ep[n, n]) - q0 * sum(Ep[k, n] for k in others), rel=1e-12)
        assert iota_p == iota
        for m in range(K):
            s = sum(Ep[k, m] for k in others)
            want = 0.0 if m == n else q1 * Ep[n, m] - q0 * (1 - s)
            want_p = 0.0 if m == n else q1 * Ep[n, m] + q0 * (1 + s)
            assert beta[m] == pytest.approx(want, rel=1e-12, abs=1e-15)
            assert beta_p[m] == pytest.approx(want_p, rel=1e-12, abs=1e-15)
        assert th.xi(F, n, M) == pytest.approx(sum(beta[m] * F[:, n] @ F[:, m] for m in others), rel=1e-12)


# =======================================================================================
# Population dynamics, Chapter 5's batched SGD, the optimizer-stepped version, and input
# types (the survivors of the full mutation run in bench/MUTATION.md, part A)
# =======================================================================================

def _tiny_classes():
    """M = 10 tokens, K = 2 classes with their own query tokens (6, 7) and next tokens (8, 9)."""
    from scansnap import make_classes
    return make_classes(num_last=2, num_next_per_last=1, num_common=2, num_distinct=2)


def _flow_reference(classes, eta_y, eta_z, t_eval, Y0, Z0, normalize=True, residual=False):
    """dY/dt = eta_Y E[dJ/dY], dZ/dt = eta_Z E[dJ/dZ] (the flow population_dynamics documents),
    integrated by scipy's 8th-order DOP853 at rtol 1e-13: far tighter than any tolerance below."""
    from scipy.integrate import solve_ivp
    M = classes.M

    def rhs(t, y):
        dY, dZ = th.expected_gradients(classes, y[:M * M].reshape(M, M), y[M * M:].reshape(M, M),
                                       normalize, residual)
        return np.concatenate([eta_y * dY.ravel(), eta_z * dZ.ravel()])

    sol = solve_ivp(rhs, (0, t_eval[-1]), np.concatenate([Y0.ravel(), Z0.ravel()]), t_eval=t_eval,
                    method="DOP853", rtol=1e-13, atol=1e-14)
    y = sol.y.T
    return y[:, :M * M].reshape(-1, M, M), y[:, M * M:].reshape(-1, M, M)


@pytest.mark.parametrize("normalize, residual", [(True, True), (False, True), (False, False)])
def test_population_dynamics_integrates_the_flow_it_is_asked_for(normalize, residual):
    """With rtol 1e-10, atol 1e-12 the solution is the flow of the expected gradient with the
    given layer norm / residual options (Lemma 2's limit) to 1e-9, checked against DOP853."""
    c = _tiny_classes()
    M = c.M
    rng = np.random.default_rng(21)
    Y0, Z0 = 0.3 * rng.normal(size=(M, M)), 0.3 * rng.normal(size=(M, M))
    t = np.array([0.0, 0.5, 2.0])
    sol = th.population_dynamics(c, 1.5, 0.7, t_end=2.0, t_eval=t, Y0=Y0, Z0=Z0, normalize=normalize,
                                 residual=residual, rtol=1e-10, atol=1e-12)
    Y, Z = _flow_reference(c, 1.5, 0.7, t, Y0, Z0, normalize, residual)
    np.testing.assert_allclose(sol.Y, Y, rtol=0, atol=1e-9)
    np.testing.assert_allclose(sol.Z, Z, rtol=0, atol=1e-9)


def test_population_dynamics_default_tolerances_are_rtol_1e6_atol_1e9():
    """The defaults rtol = 1e-6, atol = 1e-9 give the flow from Y = Z = 0 to 1e-6 (|Y| ~ 1.5 at
    t = 3; observed 1.2e-7). A tolerance of 1e-3, or an atol of 1, misses it by 2e-5 or more."""
    from scansnap import make_classes
    c = make_classes(num_last=1, num_next_per_last=2, num_common=1, num_distinct=2)
    M = c.M
    t = np.array([0.0, 1.0, 3.0])
    sol = th.population_dynamics(c, 2.0, 0.5, 3.0, t_eval=t)
    Y, Z = _flow_reference(c, 2.0, 0.5, t, np.zeros((M, M)), np.zeros((M, M)))
    assert np.abs(Y).max() > 1.0 and np.abs(Z).max() > 0.05          # a flow that has moved
    np.testing.assert_allclose(sol.Y, Y, rtol=0, atol=1e-6)
    np.testing.assert_allclose(sol.Z, Z, rtol=0, atol=1e-6)


def test_population_dynamics_times_are_float64_whatever_their_input_type():
    """t_eval given as integers or float32 comes back as those times in float64 (solve_ivp would
    otherwise hand back the input's dtype), with the same solution as float64 times."""
    c = _tiny_classes()
    ints = th.population_dynamics(c, 1.0, 1.0, t_end=2.0, t_eval=[0, 1, 2])
    assert ints.t.dtype == np.float64
    np.testing.assert_array_equal(ints.t, [0.0, 1.0, 2.0])
    t32 = np.array([0.25, 1.5], np.float32)                       # exact in float32
    a = th.population_dynamics(c, 1.0, 1.0, t_end=2.0, t_eval=t32)
    b = th.population_dynamics(c, 1.0, 1.0, t_end=2.0, t_eval=[0.25, 1.5])
    assert a.t.dtype == np.float64
    np.testing.assert_array_equal(a.t, [0.25, 1.5])
    np.testing.assert_array_equal(a.Y, b.Y)


def test_population_dynamics_names_a_bad_start_shape():
    """Either start of the wrong shape is refused, with both shapes named."""
    c = _tiny_classes()
    ok, bad = np.zeros((10, 10)), np.zeros((3, 3))
    with pytest.raises(ValueError, match=r"^Y0 and Z0 must be \(10, 10\); got \(10, 10\) and \(3, 3\)$"):
        th.population_dynamics(c, 1.0, 1.0, 1.0, Y0=ok, Z0=bad)
    with pytest.raises(ValueError, match=r"^Y0 and Z0 must be \(10, 10\); got \(3, 3\) and \(10, 10\)$"):
        th.population_dynamics(c, 1.0, 1.0, 1.0, Y0=bad, Z0=ok)


def test_population_dynamics_reports_a_failed_integration():
    """A start so large (Y0 = 1e308 I) that the flow overflows: solve_ivp gives up, and the error
    says so with the solver's reason."""
    c = _tiny_classes()
    with np.errstate(over="ignore", invalid="ignore"):
        with pytest.raises(RuntimeError, match=r"^solve_ivp failed: Required step size is less than "
                                                r"spacing between numbers\.$"):
            th.population_dynamics(c, 1.0, 1.0, 1.0, Y0=1e308 * np.eye(c.M))


# ---------------------------------------------------------------------------------------
# The decoder functions read F as float64 values, whatever the array type holding them
# ---------------------------------------------------------------------------------------

def _exact_F():
    """Three unit columns written as exact fractions (3-4-5, 5-12-13 and 1-2-2 triangles), M = 4."""
    from fractions import Fraction as Fr
    cols = [(Fr(3, 5), Fr(4, 5), 0, 0), (0, 0, Fr(5, 13), Fr(12, 13)), (Fr(2, 3), Fr(1, 3), Fr(2, 3), 0)]
    F = [[Fr(col[i]) for col in cols] for i in range(4)]
    return F, np.array([[float(x) for x in row] for row in F])


def test_decoder_functions_take_F_as_exact_fractions():
    """F as a nested list of fractions.Fraction (a hand computation's exact unit columns) gives
    the float64 result of the same values, bit for bit: Eq. 26 / Eq. 7 iterated, Theorem 5's Y
    (Eq. 70), and the class-averaged rounds."""
    F, F64 = _exact_F()
    sched = [0, 1, 2, 2, 0]
    for modified in (True, False):
        Y, counts = th.modified_decoder_dynamics(F, sched, 0.5, modified=modified)
        Y64, counts64 = th.modified_decoder_dynamics(F64, sched, 0.5, modified=modified)
        assert Y.dtype == np.float64
        np.testing.assert_array_equal(Y, Y64)
        np.testing.assert_array_equal(counts, [2, 1, 2])
    Y5 = th.theorem5_Y(F, [2, 1, 3], 4, 0.5)
    assert Y5.dtype == np.float64
    np.testing.assert_array_equal(Y5, th.theorem5_Y(F64, [2, 1, 3], 4, 0.5))
    a, b = th.decoder_rounds(F, 0.5, 3), th.decoder_rounds(F64, 0.5, 3)
    assert a.W.dtype == np.float64
    for x, y in ((a.loss, b.loss), (a.grad_norm, b.grad_norm), (a.xi, b.xi), (a.W, b.W)):
        np.testing.assert_array_equal(x, y)


# ---------------------------------------------------------------------------------------
# population_sgd (Chapter 5): each batched run is SGD with momentum on the expected gradient
# ---------------------------------------------------------------------------------------

def _sgd_reference(classes, eta_y, eta_z, steps, momentum):
    """One run written out: the loss -E_n[log softmax(Y^T f_n)[next]] (scipy's log_softmax) before
    each step, then v <- momentum v + E[dJ], parameter += rate v (PyTorch's SGD rule)."""
    from scipy.special import log_softmax
    M, K = classes.M, classes.K
    Y, Z, vY, vZ = (np.zeros((M, M)) for _ in range(4))
    loss = []
    for _ in range(steps):
        c = th.attention_limit_all(classes, Z)
        f = c / np.linalg.norm(c, axis=1, keepdims=True)
        loss.append(-np.mean(log_softmax(f @ Y, axis=1)[np.arange(K), classes.next_token]))
        dY, dZ = th.expected_gradients(classes, Y, Z)
        vY, vZ = momentum * vY + dY, momentum * vZ + dZ
        Y, Z = Y + eta_y * vY, Z + eta_z * vZ
    return np.array(loss), Y, Z


def test_population_sgd_runs_of_very_different_scales_in_one_batch():
    """Three runs batched: one whose Y reaches ~1e4 (eta_Y = 1e4), one whose Z reaches ~3e3
    (eta_Z = 1e5), one small. Each is its own run, written out one at a time, to 1e-12 relative:
    the softmaxes shift by each row's own maximum, so no run's scale spills into another's."""
    c = _tiny_classes()
    ey, ez, steps = [1e4, 1.0, 0.1], [1.0, 1e5, 0.1], 6
    run = th.population_sgd(c, ey, ez, steps)
    for r in range(3):
        loss, Y, Z = _sgd_reference(c, ey[r], ez[r], steps, 0.9)
        np.testing.assert_allclose(run.loss[r], loss, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(run.Y[r], Y, rtol=1e-12, atol=1e-12 * np.abs(Y).max())
        np.testing.assert_allclose(run.Z[r], Z, rtol=1e-12, atol=1e-12 * np.abs(Z).max())
    assert np.abs(run.Y[0]).max() > 1e3 and np.abs(run.Z[1]).max() > 1e3   # the scales claimed


def test_population_sgd_small_rates_follow_the_expected_gradient():
    """Moderate rates and momentum 0.5, 12 steps: Y, Z and the loss are the written-out run to
    1e-12 (Eq. 5-6 for the attention's gradient, Eq. 3 for the decoder's)."""
    c = _tiny_classes()
    run = th.population_sgd(c, [0.7, 2.0], [1.3, 0.4], 12, momentum=0.5)
    for r, (ey, ez) in enumerate([(0.7, 1.3), (2.0, 0.4)]):
        loss, Y, Z = _sgd_reference(c, ey, ez, 12, 0.5)
        np.testing.assert_allclose(run.loss[r], loss, rtol=1e-12, atol=0)
        np.testing.assert_allclose(run.Y[r], Y, rtol=0, atol=1e-12)
        np.testing.assert_allclose(run.Z[r], Z, rtol=0, atol=1e-12)
    assert np.abs(run.Z).max() > 0.1                                   # the attention has moved


def test_population_sgd_returns_the_rates_of_every_run_in_float64():
    """A scalar rate is broadcast to every run; integer rates come back as float64."""
    run = th.population_sgd(_tiny_classes(), 2, [1, 3], 2)
    assert run.eta_y.dtype == run.eta_z.dtype == np.float64
    np.testing.assert_array_equal(run.eta_y, [2.0, 2.0])
    np.testing.assert_array_equal(run.eta_z, [1.0, 3.0])


def test_population_sgd_names_the_bad_argument():
    c = _tiny_classes()
    with pytest.raises(ValueError, match=r"^steps must be an integer >= 1, got 0$"):
        th.population_sgd(c, 1.0, 1.0, 0)
    with pytest.raises(ValueError, match=r"^eta_y must be a scalar or have one value per run \(3\); got \(2,\)$"):
        th.population_sgd(c, [1.0, 2.0], [1.0, 2.0, 3.0], 2)
    with pytest.raises(ValueError, match=r"^eta_z must be a scalar or have one value per run \(3\); got \(1, 3\)$"):
        th.population_sgd(c, [1.0, 2.0, 3.0], [[1.0, 2.0, 3.0]], 2)
    with pytest.raises(ValueError, match=r"^eta_y must be a positive number, got -1\.0$"):
        th.population_sgd(c, [1.0, -1.0], 1.0, 2)
    with pytest.raises(ValueError, match=r"^eta_z must be a positive number, got 0\.0$"):
        th.population_sgd(c, 1.0, [1.0, 0.0], 2)


def test_population_sgd_names_the_first_step_that_is_not_finite():
    """Two classes that each see one token only (f_n = e_n, so Z's gradient is 0) and eta_Y = 1e308:
    after the first step alpha_n is one-hot, e_n - alpha_n = 0, and momentum 0.9 alone moves Y:
    Y_s[0, 4] = eta_Y (1 - 1/M)/K (1 - 0.9^s)/(1 - 0.9). That is 1.71e308 at s = 5 and 1.95e308
    (past the largest float64) at s = 6, while Z is still 0: five steps run; six raise, naming
    step 6, though only Y is non-finite."""
    from scansnap.data import SequenceClasses
    P = np.zeros((2, 6))
    P[0, 0] = P[1, 1] = 1.0
    c = SequenceClasses(P, [2, 3], [4, 5])
    with np.errstate(over="ignore", invalid="ignore"):
        run = th.population_sgd(c, 1e308, 1.0, 5)
        assert run.Y[0, 0, 4] == pytest.approx(1e308 * (5 / 6) / 2 * (1 - 0.9 ** 5) / 0.1, rel=1e-14)
        assert np.all(np.isfinite(run.Y)) and not run.Z.any()
        with pytest.raises(FloatingPointError, match=r"^population_sgd diverged at step 6 \(non-finite Y or Z\)$"):
            th.population_sgd(c, 1e308, 1.0, 6)


# ---------------------------------------------------------------------------------------
# population_steps: the expected gradient fed to PyTorch's own optimizers
# ---------------------------------------------------------------------------------------

def _optimizer_reference(classes, eta_y, eta_z, steps, rule, Y0, Z0):
    """PyTorch's update rules written out in numpy (``torch.optim`` itself takes ~8 s to import),
    fed -E_n[dJ/dY], -E_n[dJ/dZ]; the loss before each step by scipy's log_softmax.
    rule ("sgd", momentum): v <- momentum v + g, p -= lr v.  rule ("adam", eps) with betas
    (0.9, 0.999): m, v the moving averages of g and g^2, p -= lr m/(1-b1^t) / (sqrt(v/(1-b2^t)) + eps)."""
    from scipy.special import log_softmax
    K = classes.K
    P = [np.array(Y0, float), np.array(Z0, float)]
    m, v = [np.zeros_like(P[0]), np.zeros_like(P[1])], [np.zeros_like(P[0]), np.zeros_like(P[1])]
    loss = []
    for t in range(1, steps + 1):
        c = th.attention_limit_all(classes, P[1])
        f = c / np.linalg.norm(c, axis=1, keepdims=True)
        loss.append(-np.mean(log_softmax(f @ P[0], axis=1)[np.arange(K), classes.next_token]))
        grads = [-g for g in th.expected_gradients(classes, P[0], P[1])]
        for i, (g, lr) in enumerate(zip(grads, (eta_y, eta_z))):
            if rule[0] == "sgd":
                m[i] = rule[1] * m[i] + g
                P[i] = P[i] - lr * m[i]
            else:
                m[i] = 0.9 * m[i] + 0.1 * g
                v[i] = 0.999 * v[i] + 0.001 * g * g
                P[i] = P[i] - lr * (m[i] / (1 - 0.9 ** t)) / (np.sqrt(v[i] / (1 - 0.999 ** t)) + rule[1])
    return np.array(loss), P[0], P[1]


def test_population_steps_defaults_are_sgd_with_momentum_0_9():
    """population_steps(classes, eta_y, eta_z, steps) is SGD with momentum 0.9 (PyTorch's rule)
    on the expected gradient, from Y = Z = 0, to 1e-12."""
    c = _tiny_classes()
    M = c.M
    losses, Y, Z = th.population_steps(c, 0.5, 2.0, 10)
    ref = _optimizer_reference(c, 0.5, 2.0, 10, ("sgd", 0.9), np.zeros((M, M)), np.zeros((M, M)))
    np.testing.assert_allclose(losses, ref[0], rtol=1e-12, atol=0)
    np.testing.assert_allclose(Y, ref[1], rtol=0, atol=1e-12)
    np.testing.assert_allclose(Z, ref[2], rtol=0, atol=1e-12)
    assert np.abs(Z).max() > 0.1


def test_population_steps_adam_uses_the_eps_given():
    """Adam with eps = 0.3 (large enough to change every step) is PyTorch's Adam rule with eps 0.3."""
    c = _tiny_classes()
    M = c.M
    rng = np.random.default_rng(4)
    Y0, Z0 = 0.2 * rng.normal(size=(M, M)), 0.2 * rng.normal(size=(M, M))
    losses, Y, Z = th.population_steps(c, 0.05, 0.1, 8, optimizer="adam", eps=0.3, Y0=Y0, Z0=Z0)
    ref = _optimizer_reference(c, 0.05, 0.1, 8, ("adam", 0.3), Y0, Z0)
    np.testing.assert_allclose(losses, ref[0], rtol=1e-12, atol=0)
    np.testing.assert_allclose(Y, ref[1], rtol=0, atol=1e-12)
    np.testing.assert_allclose(Z, ref[2], rtol=0, atol=1e-12)


def test_population_steps_starts_given_as_integers_or_float32():
    """Y0 as a list of ints and Z0 in float32 are their values in float64: the same run, bit for
    bit, as float64 starts, and float64 results."""
    c = _tiny_classes()
    M = c.M
    Y0 = np.eye(M, dtype=int).tolist()
    Z0 = (0.25 * np.random.default_rng(6).normal(size=(M, M))).astype(np.float32)
    a = th.population_steps(c, 0.5, 1.0, 3, Y0=Y0, Z0=Z0)
    b = th.population_steps(c, 0.5, 1.0, 3, Y0=np.eye(M), Z0=Z0.astype(float))
    assert a[1].dtype == a[2].dtype == np.float64
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


def test_population_steps_names_the_bad_argument():
    c = _tiny_classes()
    ok, bad = np.zeros((10, 10)), np.zeros((3, 3))
    with pytest.raises(ValueError, match=r"^eta_y must be a positive number, got 0\.0$"):
        th.population_steps(c, 0.0, 1.0, 2)
    with pytest.raises(ValueError, match=r"^eta_z must be a positive number, got -1\.0$"):
        th.population_steps(c, 1.0, -1.0, 2)
    with pytest.raises(ValueError, match=r"^steps must be an integer >= 1, got 0$"):
        th.population_steps(c, 1.0, 1.0, 0)
    with pytest.raises(ValueError, match=r"^Y0 and Z0 must be \(10, 10\); got \(10, 10\) and \(3, 3\)$"):
        th.population_steps(c, 1.0, 1.0, 2, Y0=ok, Z0=bad)
    with pytest.raises(ValueError, match=r"^Y0 and Z0 must be \(10, 10\); got \(3, 3\) and \(10, 10\)$"):
        th.population_steps(c, 1.0, 1.0, 2, Y0=bad, Z0=ok)


def test_population_dynamics_refuses_a_complex_or_nan_start():
    """A start is a finite real matrix: NumPy would drop a complex part with only a warning,
    and a NaN start would integrate to NaN everywhere."""
    from scansnap.data import syn_small
    c = syn_small()
    Y0 = np.zeros((c.M, c.M))
    with pytest.raises(ValueError, match=r"^Y0 must be real, got a complex array$"):
        th.population_dynamics(c, 1.0, 1.0, 1.0, Y0=Y0 + 1j)
    Z0 = Y0.copy()
    Z0[2, 3] = np.nan
    with pytest.raises(ValueError, match=r"^Z0 is not finite at index \(2, 3\)"):
        th.population_dynamics(c, 1.0, 1.0, 1.0, Z0=Z0)
    from scansnap._validate import finite
    with pytest.raises(ValueError, match=r"^x must be real, got a complex array$"):
        finite("x", torch.zeros(2, dtype=torch.complex64))
