"""theory.py, part B of the mutation survivors: behaviours no test pinned down.

Each test checks a function against an independent truth: a closed form written out here
(math.exp, Lambert W, the implicit Eq. 45), torch autograd of the objective, an invariance
of the formula, an exact construction, or the error a bad argument must give (naming the
argument and the rule, with the boundary).

Precision: the module computes in float64 and returns float64 whatever float type comes in.
A float32 input (e.g. from a torch tensor) must not be computed in float32 (8 digits lost),
and a longdouble input must not come back as longdouble (torch cannot take such an array;
``np.linalg`` cannot either).
"""
import math

import numpy as np
import pytest
import torch
from scipy.special import lambertw

from scansnap import theory as th
from scansnap.data import SequenceClasses


def _h_lambertw(s, M, eta):
    """Eq. 45, exp(Mh) + (M-1) M h = M eta s + 1, solved with Lambert W (not Wright omega):
    Mh = x - W(e^x / (M-1)), x = (M eta s + 1) / (M-1). For moderate s (no overflow)."""
    x = (M * eta * np.asarray(s, float) + 1) / (M - 1)
    return (x - lambertw(np.exp(x) / (M - 1)).real) / M


def _classes():
    """K = 3 classes over M = 5 tokens, every P(l|n) > 0 (the query tokens included)."""
    probs = np.array([[0.10, 0.30, 0.20, 0.25, 0.15],
                      [0.05, 0.15, 0.40, 0.10, 0.30],
                      [0.20, 0.20, 0.10, 0.35, 0.15]])
    return SequenceClasses(probs, query=np.array([0, 1, 0]), next_token=np.array([2, 3, 4]))


# ---------------------------------------------------------------------------------------
# Eq. 5: the attention limit c_n = softmax(log p + z) for large and very unequal logits
# ---------------------------------------------------------------------------------------

def test_attention_limit_is_finite_for_large_logits():
    """c_l = p_l e^{z_l} / sum_l' p_l' e^{z_l'} does not change when a constant is added to z:
    z = 1000 + (0, ln 2) gives c = (1/3, 2/3) for p uniform, not an overflow."""
    c = th.attention_limit([0.5, 0.5], [1000.0, 1000.0 + math.log(2)])
    np.testing.assert_allclose(c, [1 / 3, 2 / 3], rtol=1e-13, atol=0)


def test_attention_limit_all_rows_of_very_different_size():
    """Each class is normalised on its own row of Z: a class whose query row of Z is ~1000
    (a trained row) and one whose row is 0 both get c_n = p_n, by the shift invariance."""
    cl = _classes()
    Z = np.zeros((5, 5))
    Z[1] = 1000.0                                  # class 1's query row; classes 0, 2 use row 0
    c = th.attention_limit_all(cl, Z)
    np.testing.assert_allclose(c, cl.probs, rtol=1e-13, atol=0)


# ---------------------------------------------------------------------------------------
# Eq. 5 and Theorem 3: float32 inputs computed in float64, longdouble inputs returned in float64
# ---------------------------------------------------------------------------------------

def test_attention_limit_float32_probs_and_longdouble_logits():
    """c_l = p_l e^{z_l} / sum_l' p_l' e^{z_l'} (Eq. 5) written out with math.exp, on the exact
    float64 values of the inputs; the result is float64."""
    p32 = np.array([0.1, 0.2, 0.3, 0.4], np.float32)
    z = [0.7, -1.2, 0.3, 2.1]
    p = p32.astype(float)
    w = [p[i] * math.exp(z[i]) for i in range(4)]
    want = np.array(w) / math.fsum(w)
    got = th.attention_limit(p32, z)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-14, atol=0)
    got = th.attention_limit(p, np.array(z, np.longdouble))
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-14, atol=0)


def test_attention_limit_all_longdouble_Z_returns_float64():
    """c_n = softmax(log P(.|n) + Z[psi(n)]) for every class, in float64 for a longdouble Z."""
    cl = _classes()
    Z = np.random.default_rng(4).normal(size=(5, 5))
    got = th.attention_limit_all(cl, Z.astype(np.longdouble))
    assert got.dtype == np.float64
    for n in range(3):
        w = cl.probs[n] * np.exp(Z[cl.query[n]])
        np.testing.assert_allclose(got[n], w / w.sum(), rtol=1e-14, atol=0)


def test_relative_gain_float32_logits_and_longdouble_probs():
    """Theorem 3: r_{l/l'} = (p_l e^{z_l})^2 / (p_l' e^{z_l'})^2 - 1 = (p_l/p_l')^2 e^{2(z_l - z_l')} - 1."""
    p = [0.2, 0.5, 0.3]
    z32 = np.array([1.3, -0.4, 0.8], np.float32)
    z = z32.astype(float)
    want = (p[0] / p[1]) ** 2 * math.exp(2 * (z[0] - z[1])) - 1
    got = th.relative_gain(p, z32, 0, 1)
    assert np.asarray(got).dtype == np.float64
    assert float(got) == pytest.approx(want, rel=1e-14, abs=0)
    got = th.relative_gain(np.array(p, np.longdouble), z, 0, 1)
    assert np.asarray(got).dtype == np.float64
    assert float(got) == pytest.approx(want, rel=1e-14, abs=0)


# ---------------------------------------------------------------------------------------
# Lemma 1 (Eq. 3) and the population gradient (Lemma 2): float64 out, the residual stream
# ---------------------------------------------------------------------------------------

def test_lemma1_gradients_in_float64_for_longdouble_Y_and_Z():
    """The docstring's promise "in float64 numpy": Y, Z given as longdouble give float64 dY, dZ,
    equal to torch autograd of J = log softmax(Y^T LN(X^T b))[x_{T+1}], b = softmax(X Z^T x_T)."""
    rng = np.random.default_rng(8)
    M = 5
    Y0, Z0 = rng.normal(size=(M, M)), rng.normal(size=(M, M))
    tokens, nxt = np.array([3, 1, 1, 4, 2]), 0
    Y = torch.tensor(Y0, requires_grad=True)
    Z = torch.tensor(Z0, requires_grad=True)
    X = torch.eye(M, dtype=torch.float64)[torch.from_numpy(tokens[:-1])]
    b = torch.softmax(X @ Z.T @ torch.eye(M, dtype=torch.float64)[tokens[-1]], 0)
    v = X.T @ b
    torch.log_softmax(Y.T @ (v / v.norm()), 0)[nxt].backward()
    for Yin, Zin in ((Y0.astype(np.longdouble), Z0), (Y0, Z0.astype(np.longdouble))):
        dY, dZ = th.lemma1_gradients(Yin, Zin, tokens, nxt)
        assert dY.dtype == np.float64 and dZ.dtype == np.float64
        np.testing.assert_allclose(dY, Y.grad.numpy(), rtol=0, atol=1e-13)
        np.testing.assert_allclose(dZ, Z.grad.numpy(), rtol=0, atol=1e-13)


def _population_objective_grads(cl, Y0, Z0, residual):
    """Autograd of J = (1/K) sum_n log softmax(Y^T LN(v_n))[next_n], v_n = c_n (+ e_{psi(n)}),
    c_n = softmax(log P(.|n) + Z[psi(n)]) (Lemma 1 in the limit of Lemma 2)."""
    Y = torch.tensor(Y0, requires_grad=True)
    Z = torch.tensor(Z0, requires_grad=True)
    q = torch.tensor(cl.query)
    c = torch.softmax(torch.log(torch.tensor(cl.probs)) + Z[q], 1)
    v = c + torch.eye(cl.M, dtype=torch.float64)[q] if residual else c
    f = v / v.norm(dim=1, keepdim=True)
    J = torch.log_softmax(f @ Y, 1)[torch.arange(cl.K), torch.tensor(cl.next_token)].mean()
    J.backward()
    return Y.grad.numpy(), Z.grad.numpy()


def test_expected_gradients_with_the_residual_is_the_gradient_of_the_objective():
    """residual=True: v_n = c_n + e_{psi(n)} (the query token added to the attention output);
    both gradients match autograd, with P(psi(n)|n) > 0 so c_n has mass on the query."""
    cl = _classes()
    rng = np.random.default_rng(5)
    Y0, Z0 = rng.normal(size=(5, 5)), rng.normal(size=(5, 5))
    gY, gZ = _population_objective_grads(cl, Y0, Z0, residual=True)
    dY, dZ = th.expected_gradients(cl, Y0, Z0, residual=True)
    np.testing.assert_allclose(dY, gY, rtol=0, atol=1e-13)
    np.testing.assert_allclose(dZ, gZ, rtol=0, atol=1e-13)


def test_expected_gradients_in_float64_for_a_longdouble_Y():
    cl = _classes()
    rng = np.random.default_rng(6)
    Y0, Z0 = rng.normal(size=(5, 5)), rng.normal(size=(5, 5))
    gY, gZ = _population_objective_grads(cl, Y0, Z0, residual=False)
    dY, dZ = th.expected_gradients(cl, Y0.astype(np.longdouble), Z0)
    assert dY.dtype == np.float64 and dZ.dtype == np.float64
    np.testing.assert_allclose(dY, gY, rtol=0, atol=1e-13)
    np.testing.assert_allclose(dZ, gZ, rtol=0, atol=1e-13)


# ---------------------------------------------------------------------------------------
# Lemmas 5-6 (Eq. 44-45) and Eq. 85, 128: h, gamma, Gamma on float32 times; names and bounds
# ---------------------------------------------------------------------------------------

def test_h_closed_float32_times_solve_eq45_in_float64():
    """h(t) solves exp(Mh) + (M-1) M h = M eta_Y t + 1 (Eq. 45) for the exact float64 value of
    a float32 t, to rounding (relative residual 1e-14)."""
    M, eta = 7, 0.3
    t32 = np.array([0.1, 2.7, 55.3, 900.1], np.float32)
    t = t32.astype(float)
    h = th.h_closed(t32, M, eta)
    assert h.dtype == np.float64
    lhs = np.exp(M * h) + (M - 1) * M * h
    np.testing.assert_allclose(lhs, M * eta * t + 1, rtol=1e-14, atol=0)


def test_h_closed_names_M_and_eta_y_at_the_boundary():
    """M = 2 is the smallest vocabulary (h solves Eq. 45, exp(2h) + 2h = 2 eta t + 1);
    M = 1 and eta_y <= 0 are refused by name."""
    t = np.array([0.5, 3.0])
    h = th.h_closed(t, 2, 0.8)
    np.testing.assert_allclose(np.exp(2 * h) + 2 * h, 2 * 0.8 * t + 1, rtol=1e-14, atol=0)
    with pytest.raises(ValueError, match=r"^M must be an integer >= 2, got 1$"):
        th.h_closed(t, 1, 0.8)
    with pytest.raises(ValueError, match=r"^eta_y must be a positive number, got -1\.0$"):
        th.h_closed(t, 5, -1.0)


def test_gamma_of_h_float32_h_is_eq85_in_float64():
    """Eq. 85: gamma = (M-1)^2 h / ((M-1) + exp(M h)), written out with math.exp."""
    M = 9
    h32 = np.array([0.01, 0.2, 0.7], np.float32)
    want = [(M - 1) ** 2 * float(h) / ((M - 1) + math.exp(M * float(h))) for h in h32]
    got = th.gamma_of_h(h32, M)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-14, atol=0)


def test_gamma_names_K_and_takes_K_1():
    """K = 1: s = ceil(t), gamma = Eq. 85 at h(s) (h by Lambert W); K = 0 is refused by name."""
    M, eta = 6, 0.5
    h = _h_lambertw(3.0, M, eta)                   # ceil(2.2) = 3
    want = (M - 1) ** 2 * h / ((M - 1) + math.exp(M * h))
    assert float(th.gamma(2.2, M, 1, eta)) == pytest.approx(want, rel=1e-13, abs=0)
    with pytest.raises(ValueError, match=r"^K must be an integer >= 1, got 0$"):
        th.gamma(2.2, M, 0, eta)


def test_Gamma_on_float32_times_is_eq128_in_float64():
    """Eq. 128: Gamma(t) = eta_Z K (M-1)^2 h(t/K)^2 / (2 eta_Y), t/K taken in float64 (K = 3 is
    not a power of two, so t/K in float32 would round), h by Lambert W."""
    M, K, ey, ez = 6, 3, 0.4, 0.9
    t32 = np.array([0.7, 5.3, 40.1], np.float32)
    h = _h_lambertw(t32.astype(float) / K, M, ey)
    want = ez * K * (M - 1) ** 2 * h ** 2 / (2 * ey)
    got = th.Gamma(t32, M, K, ey, ez)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)


def test_Gamma_and_B_n_name_their_arguments():
    """K >= 1, eta_Z > 0, C0 > 0, each refused by name; the smallest valid K = 1 works."""
    M, ey = 6, 0.4
    h = _h_lambertw(2.0, M, ey)
    assert float(th.Gamma(2.0, M, 1, ey, 0.9)) == pytest.approx(0.9 * (M - 1) ** 2 * h ** 2 / (2 * ey),
                                                               rel=1e-12, abs=0)
    with pytest.raises(ValueError, match=r"^K must be an integer >= 1, got 0$"):
        th.Gamma(2.0, M, 0, ey, 0.9)
    with pytest.raises(ValueError, match=r"^eta_z must be a positive number, got 0$"):
        th.Gamma(2.0, M, 3, ey, 0)
    with pytest.raises(ValueError, match=r"^C0 must be a positive number, got -2\.0$"):
        th.B_n(2.0, M, 3, ey, 0.9, -2.0)
    with pytest.raises(ValueError, match=r"^C0 must be a positive number, got 0$"):
        th.B_n_ode([1.0], M, 3, ey, 0.9, 0)
    with pytest.raises(ValueError, match=r"^eta_z must be a positive number, got -1\.0$"):
        th.B_n_ode([1.0], M, 3, ey, -1.0, 1.0)


def test_omega1_states_lemma8s_minimum_for_every_M_below_4():
    """M = 0, 1, 2, 3 (and a negative M) get one message: Lemma 8's minimum 4, with its reason."""
    for M in (-1, 0, 1, 2, 3):
        with pytest.raises(ValueError, match=rf"^M must be an integer >= 4, got {M}: exp\(Mh\) - \(M-1\)Mh has no zero"):
            th.omega1(M)
    with pytest.raises(ValueError, match=r"^M must be an integer, got 4\.0$"):
        th.omega1(4.0)


# ---------------------------------------------------------------------------------------
# Assumption 2: the boundaries, and an F in longdouble
# ---------------------------------------------------------------------------------------

def test_assumption2_strict_bound_on_the_largest_eigenvalue():
    """|lambda_1(E)| < 1/K is strict. K = 1, M = 6, f = (1, 1, 0, ...): E = [||f||^2 - 1] = [1]
    = 1/K exactly (and >= sqrt(6/6) = 1), so not satisfied; M = 24, f = (1, 0.75, 0, ...):
    E = [0.5625], below 1/K = 1 and above sqrt(6/24) = 0.5, so satisfied."""
    F = np.zeros((6, 1))
    F[:2, 0] = 1.0
    assert th.satisfies_assumption2(F) is False
    F = np.zeros((24, 1))
    F[:2, 0] = [1.0, 0.75]                         # E = 0.5625 < 1, and >= sqrt(6/24) = 0.5
    assert th.satisfies_assumption2(F) is True


def test_assumption2_bound_on_the_smallest_eigenvalue_is_inclusive():
    """min |lambda_i(E)| >= sqrt(6/M) includes equality: M = 24, K = 1, f = (0.5, 0.5, 0, ...):
    E = [0.5 - 1] = [-0.5], |lambda| = 0.5 = sqrt(6/24) exactly (and < 1/K = 1)."""
    F = np.zeros((24, 1))
    F[:2, 0] = 0.5
    assert th.satisfies_assumption2(F) is True
    F[:2, 0] = [0.5, 0.5 + 2 ** -20]               # |lambda| just below 0.5: not satisfied
    assert th.satisfies_assumption2(F) is False


def test_assumption2_decides_a_longdouble_F_in_float64():
    """F = e_1 (M = 24, K = 1) in longdouble: E = [0], |lambda| = 0 < 1 but < sqrt(6/24): False;
    f = (1, 0.75) as above: True. The check runs (np.linalg has no longdouble)."""
    F = np.zeros((24, 1), np.longdouble)
    F[0, 0] = 1
    assert th.satisfies_assumption2(F) is False
    F[1, 0] = 0.75
    assert th.satisfies_assumption2(F) is True


# ---------------------------------------------------------------------------------------
# Theorem 4 (Eq. 118-124): the ODE integrated on float32 times reaches the closed form
# ---------------------------------------------------------------------------------------

def test_B_n_ode_on_float32_times_is_the_closed_form():
    """dB/dt = -dz/dt = eta_Z gamma e^{4z}/C0 integrates to B = (1/4) ln(1 + 4 Gamma/C0) and z = -B
    (Eq. 124, 129), Gamma of Eq. 128 with h by Lambert W; the solver's rtol is 1e-10, its error
    here ~2e-10, so 1e-9. Times in float32 are taken at their float64 values (solved in float32
    they would be off by ~3e-8)."""
    M, K, ey, ez, C0 = 6, 3, 0.4, 0.9, 2.0
    t32 = np.array([0.7, 5.3, 40.1, 123.7], np.float32)
    h = _h_lambertw(t32.astype(float) / K, M, ey)
    B = 0.25 * np.log1p(4 * (ez * K * (M - 1) ** 2 * h ** 2 / (2 * ey)) / C0)
    z, b = th.B_n_ode(t32, M, K, ey, ez, C0)
    np.testing.assert_allclose(b, B, rtol=1e-9, atol=0)
    np.testing.assert_allclose(z, -B, rtol=1e-9, atol=0)
