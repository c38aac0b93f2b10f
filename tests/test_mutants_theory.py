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
    with pytest.raises(ValueError, match=r"h must be finite and >= 0, got min \S*-0\.25"):
        th.time_of_h([0.3, -0.25], 10, 1.0)


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
