"""Closed forms and ODEs of theory.py against numerics."""
import numpy as np
import pytest
import torch

from scansnap import YZModel, make_classes, syn_medium, syn_small
from scansnap import theory as th


@pytest.mark.parametrize("M,eta", [(50, 0.5), (1000, 2.0), (30, 0.05)])
def test_lemma6_closed_form(M, eta):
    t = np.linspace(0, 3000, 31)
    h = th.h_closed(t, M, eta)
    A = M * eta * t + 1
    np.testing.assert_allclose(np.exp(M * h) + (M - 1) * M * h, A, rtol=1e-11)   # Eq. 45
    np.testing.assert_allclose(th.h_ode(t, M, eta), h, rtol=1e-7, atol=1e-12)     # Eq. 44


@pytest.mark.parametrize("M,eta", [(50, 0.5), (1000, 0.9)])
def test_lemma7_h_star_close_to_h(M, eta):
    s = np.arange(0, 5001)
    hs, h = th.h_star(5000, M, eta), th.h_closed(s, M, eta)
    d = hs - h
    assert d.min() >= -1e-15 and d.max() <= 2 * eta / M                          # Lemma 7(a)
    assert d[-1] < d.max() / 10                                                    # Lemma 7(b)


def test_lemma5_discrete_iteration():
    """Eq. 8 with the event x_{T+1} = n every step gives w_n(s) = (M-1) h*(s) zeta_n (Eq. 31)."""
    M, eta, n, S = 20, 0.7, 3, 200
    w = np.zeros(M)
    zeta = M / (M - 1) * (np.eye(M)[n] - 1 / M)
    hs = th.h_star(S, M, eta)
    for s in range(1, S + 1):
        alpha = np.exp(w - w.max()); alpha /= alpha.sum()
        w = w + eta * (np.eye(M)[n] - alpha)
        np.testing.assert_allclose(w, (M - 1) * hs[s] * zeta, atol=1e-12)


def test_theorem4_B_n_corrected():
    """Eq. 118-119 integrated equals (1/4) ln(1 + 4 Gamma/C0); the printed form is off by ln(C0)/4."""
    t = np.linspace(0, 3000, 61)
    M, K, ey, ez, C0 = 100, 10, 5.0, 0.5, 0.3
    z, B = th.B_n_ode(t, M, K, ey, ez, C0)
    np.testing.assert_allclose(B, th.B_n(t, M, K, ey, ez, C0), atol=1e-6)
    np.testing.assert_allclose(th.B_n(t, M, K, ey, ez, C0, printed=True) - B, 0.25 * np.log(C0), atol=1e-6)
    np.testing.assert_allclose(np.exp(-4 * z), 1 + 4 * th.Gamma(t, M, K, ey, ez) / C0, rtol=1e-6)  # Eq. 122


def test_gamma_two_stages():
    """Lemma 9: gamma rises (stage 1) and then decays like ln(t)/t (stage 2)."""
    M, K, eta = 1000, 10, 1.0
    t0 = th.transition_time(M, K, eta)
    t = np.array([K * np.log(M) / eta / 4, t0 * 10, t0 * 100])
    g = th.gamma(t, M, K, eta, discrete=False)
    assert g[1] > g[2] and g[1] * (t[1] / np.log(t[1])) == pytest.approx(g[2] * t[2] / np.log(t[2]), rel=0.5)


def test_attention_limit_is_monte_carlo_limit():
    """Lemma 2: X^T b_T -> c_n as T grows."""
    c = syn_small()
    rng = np.random.default_rng(0)
    z = rng.normal(size=c.M)
    target = th.attention_limit(c.probs[0], z)
    m = YZModel(c.M, 1, dtype=torch.float64)
    with torch.no_grad():
        m.Z[0, c.query[0]] = torch.from_numpy(z)
    errs = []
    for T in (100, 40000):
        toks = rng.choice(c.M, size=(8, T - 1), p=c.probs[0])
        toks = np.concatenate([toks, np.full((8, 1), c.query[0])], 1)
        xb = m.forward_tokens(torch.from_numpy(toks)).c[0].detach().numpy()
        errs.append(np.abs(xb - target).max())
    assert errs[1] < 0.01 and errs[1] < errs[0] / 5     # error ~ 1/sqrt(T): 20x smaller here


@pytest.mark.parametrize("normalize,residual", [(True, False), (False, False), (True, True)])
def test_expected_gradients_equal_autograd_at_the_limit(normalize, residual):
    """Counts = P(.|n) (the T -> infinity composition) in the model give E_n of the gradient exactly."""
    c = syn_medium(2)
    rng = np.random.default_rng(1)
    Y, Z = rng.normal(size=(c.M, c.M)) * 0.3, rng.normal(size=(c.M, c.M)) * 0.3
    m = YZModel(c.M, 1, normalize=normalize, residual=residual, dtype=torch.float64)
    with torch.no_grad():
        m.Y[0] = torch.from_numpy(Y); m.Z[0] = torch.from_numpy(Z)
    out = m.forward_counts(torch.tensor(c.probs), torch.tensor(c.query))
    m.loss(out, torch.tensor(c.next_token)).sum().backward()
    dY, dZ = th.expected_gradients(c, Y, Z, normalize, residual)
    np.testing.assert_allclose(dY, -m.Y.grad[0].numpy(), atol=1e-12)
    np.testing.assert_allclose(dZ, -m.Z.grad[0].numpy(), atol=1e-12)


def test_population_dynamics_theorem2_signs():
    """Theorem 2 in the population flow: one query, one common token -> distinct up, common down."""
    c = make_classes(num_last=1, num_next_per_last=3, num_common=1, num_distinct=4)
    sol = th.population_dynamics(c, eta_y=5.0, eta_z=0.5, t_end=20, t_eval=[0, 20])
    z = sol.Z[-1][c.query[0]]
    assert z[c.common_tokens[0]] < -1e-3
    for n in range(c.K):
        assert np.all(z[c.distinct_tokens(n)] > 1e-4)
    np.testing.assert_allclose(sol.Z[-1].sum(1), 0, atol=1e-8)     # row sums stay 0


def test_theorem3_relative_gain_identity():
    """Eq. 11: r(t) = r(0) exp(2 (z_l(t) - z_l(0))) when z_l, z_l' follow Eq. 98 (dz ∝ f_l^2 xi)."""
    p = np.array([0.1, 0.2, 0.3, 0.4])
    z = np.zeros(4)
    r0 = th.relative_gain(p, z, 3, 0)
    dt = 1e-4
    for _ in range(20000):
        f2 = th.f_limit(p, z) ** 2
        z = z + dt * f2                  # xi = 1
    r = th.relative_gain(p, z, 3, 0)
    # exact along the flow up to Euler error; the identity holds when z_{l'} stays put to
    # first order, so compare the solved form (Eq. 110) instead
    a, b = np.exp(-2 * z[3]), np.exp(-2 * z[0])
    np.testing.assert_allclose(a - 1, (r0 + 1) * (b - 1), rtol=1e-3)
    assert r > r0


def test_one_query_preset_satisfies_assumption2():
    from scansnap.data import one_query
    c = one_query()
    F = th.f_matrix(c, np.zeros((c.M, c.M)))
    assert c.M == 605 and len(c.common_tokens) == 1 and len(c.psi_inverse(c.query[0])) == 3
    assert th.satisfies_assumption2(F)
    assert not th.satisfies_assumption2(th.f_matrix(syn_medium(1), np.zeros((33, 33))))   # overlap 0.72


# ---------------------------------------------------------------------------------------
# Unit checks of the theory functions the chapters use (issue 11: not only chapter asserts)
# ---------------------------------------------------------------------------------------

def _random_F(M, K, rho, rng):
    """Unit columns f_n = sqrt(rho) u_0 + sqrt(1 - rho) u_n (orthonormal u): f_n^T f_n' = rho."""
    U, _ = np.linalg.qr(rng.normal(size=(M, K + 1)))
    return np.sqrt(rho) * U[:, [0]] + np.sqrt(1 - rho) * U[:, 1:]


def test_eq12_growth_factor_bounds_values():
    B = np.array([0.0, 0.5, 2.0])
    lo, hi = th.growth_factor_bounds(B, 0.25)
    np.testing.assert_allclose(lo, np.exp(0.5 * B), rtol=1e-15)
    np.testing.assert_allclose(hi, np.exp(2 * B), rtol=1e-15)
    assert lo[0] == hi[0] == 1.0


def test_transition_time_from_the_upper_zero():
    """t_0 = 2 (1 + omega_1) K ln M / eta_Y = 2 K M h_up / eta_Y, h_up the upper zero found by brentq."""
    for M, K, eta in ((100, 3, 0.5), (1000, 10, 2.0), (4, 1, 1.0)):
        upper = th.lemma8_zeros(M)[1]
        assert th.transition_time(M, K, eta) == pytest.approx(2 * K * M * upper / eta, rel=1e-9)
        assert upper == pytest.approx((1 + th.omega1(M)) * np.log(M) / M, rel=1e-9)


def test_lemma8_zeros_and_omegas():
    for M in (10, 1000, 10 ** 6):
        lo, up = th.lemma8_zeros(M)
        g = lambda h: np.exp(M * h) - (M - 1) * M * h
        assert 0 < lo < 1 / M < np.log(M) / M < up
        assert abs(g(lo)) < 1e-9 and abs(g(up)) < 1e-6 * (M - 1) * M * up
        assert g((lo + up) / 2) < 0 and g(up * 1.01) > 0
        assert th.omega0(M) == pytest.approx(2 + np.log(lo) / np.log(M), rel=1e-12)
        assert 0 < th.omega0(M) < 0.5 and 0 < th.omega1(M) < 1


def test_gamma_eq85_values():
    M, K, eta = 50, 4, 0.5
    h = th.h_closed(3.0, M, eta)
    assert th.gamma_of_h(h, M) == pytest.approx((M - 1) ** 2 * h / ((M - 1) + np.exp(M * h)), rel=1e-14)
    # discrete: s = ceil(t/K); continuous: s = t/K
    assert th.gamma(9.0, M, K, eta) == pytest.approx(th.gamma_of_h(th.h_closed(3.0, M, eta), M), rel=1e-14)
    assert th.gamma(9.0, M, K, eta, discrete=False) == pytest.approx(
        th.gamma_of_h(th.h_closed(2.25, M, eta), M), rel=1e-14)
    assert th.gamma(0.0, M, K, eta) == 0.0


def test_gamma_capital_is_the_integral_of_gamma():
    """Eq. 128: Gamma(t) = eta_Z int_0^t gamma(t') dt' (continuous gamma), by quadrature."""
    from scipy.integrate import quad
    M, K, ey, ez = 100, 5, 2.0, 0.7
    for t in (10.0, 400.0):
        integral = quad(lambda s: th.gamma(s, M, K, ey, discrete=False), 0, t, limit=200)[0]
        assert th.Gamma(t, M, K, ey, ez) == pytest.approx(ez * integral, rel=1e-7)


def test_zeta_and_q_constants():
    M = 7
    z = th.zeta(M, 2)
    assert z[2] == pytest.approx(1.0) and np.allclose(np.delete(z, 2), -1 / (M - 1)) and abs(z.sum()) < 1e-15
    q1, q0 = th.q_constants(M)
    assert q1 == pytest.approx(z @ z, rel=1e-14) and q0 == pytest.approx(th.zeta(M, 3) @ z, rel=1e-14)


def test_relative_gain_and_hoeffding_values():
    p = np.array([0.1, 0.2, 0.7])
    z = np.array([0.0, 0.5, -1.0])
    want = (0.7 * np.exp(-1.0)) ** 2 / (0.2 * np.exp(0.5)) ** 2 - 1
    assert th.relative_gain(p, z, 2, 1) == pytest.approx(want, rel=1e-14)
    assert th.relative_gain(p, np.zeros(3), 1, 1) == 0.0
    assert th.hoeffding_radius(101, 0.01) == pytest.approx(np.sqrt(np.log(200) / 200), rel=1e-14)
    with pytest.raises(ValueError, match=r"delta must be in \(0, 1\), got 1"):
        th.hoeffding_radius(10, 1)


def test_lemma3_modified_dynamics_give_the_scalar_form():
    """Eq. 26 (modified) keeps F^T Y = [(M-1) h*(N_n) zeta_n]_n exactly (Lemma 3, Eq. 31); Eq. 7 does not."""
    rng = np.random.default_rng(0)
    M, K, eta = 40, 4, 0.7
    F = _random_F(M, K, 0.2, rng)
    schedule = rng.integers(0, K, size=80)
    for modified in (True, False):
        Y, counts = th.modified_decoder_dynamics(F, schedule, eta, modified=modified)
        np.testing.assert_array_equal(counts, np.bincount(schedule, minlength=K))
        hs = th.h_star(int(counts.max()), M, eta)
        pred = np.stack([(M - 1) * hs[c] * th.zeta(M, n) for n, c in enumerate(counts)])
        err = np.abs(F.T @ Y - pred).max()
        assert (err < 1e-12) if modified else (err > 1e-3)


def test_theorem5_closed_form_and_corollary1():
    rng = np.random.default_rng(4)
    M, K, eta = 60, 5, 0.9
    F = _random_F(M, K, 0.1, rng)
    schedule = rng.integers(0, K, size=300)
    Y, counts = th.modified_decoder_dynamics(F, schedule, eta)
    np.testing.assert_allclose(th.theorem5_Y(F, counts, M, eta), Y, atol=1e-12, rtol=0)
    hs = th.h_star(int(counts.max()), M, eta)
    for n in range(K):                                   # Eq. 71: x_{T+1} - alpha = (M-1)/((M-1)+e^{M h*}) zeta_n
        alpha = np.exp(Y.T @ F[:, n]); alpha /= alpha.sum()
        pred = (M - 1) / ((M - 1) + np.exp(M * hs[counts[n]])) * th.zeta(M, n)
        np.testing.assert_allclose(np.eye(M)[n] - alpha, pred, atol=1e-12, rtol=0)
    # labels: class n's next token is token labels[n]
    labels = np.array([7, 3, 9, 1, 0])
    Yl, _ = th.modified_decoder_dynamics(F, schedule, eta, labels=labels)
    np.testing.assert_allclose(th.theorem5_Y(F, counts, M, eta, labels=labels), Yl, atol=1e-12, rtol=0)


def test_theorem1_coefficients_and_xi():
    """Eq. 9: Y(x_{T+1} - alpha_n) = gamma (iota_n f_n - sum beta_nn' f_n'), derived signs; xi_n > 0."""
    rng = np.random.default_rng(6)
    M, K, eta, N = 800, 3, 0.9, 25
    F = _random_F(M, K, 0.1, rng)
    assert th.satisfies_assumption2(F)
    Y, _ = th.modified_decoder_dynamics(F, np.tile(np.arange(K), N), eta)
    gam = th.gamma_of_h(th.h_star(N, M, eta)[N], M)
    E, Ep = th.E_matrices(F)
    np.testing.assert_allclose(E, F.T @ F - np.eye(K), atol=1e-15)
    np.testing.assert_allclose(Ep, np.eye(K) - np.linalg.inv(F.T @ F), atol=1e-12)
    for n in range(K):
        alpha = np.exp(Y.T @ F[:, n]); alpha /= alpha.sum()
        g = Y @ (np.eye(M)[n] - alpha)
        iota, beta = th.theorem1_coefficients(F, n, M)
        assert beta[n] == 0
        np.testing.assert_allclose(g, gam * (iota * F[:, n] - F @ beta), atol=1e-12, rtol=0)
        iota_p, beta_p = th.theorem1_coefficients(F, n, M, printed=True)
        assert iota_p == iota and np.abs(g - gam * (iota * F[:, n] - F @ beta_p)).max() > 1e-6
        xi_n = th.xi(F, n, M, gam)
        assert xi_n > 0 and xi_n == pytest.approx(gam * sum(beta[k] * E[n, k] for k in range(K)), rel=1e-12)
        assert th.xi(F, n, M, 2 * gam) == pytest.approx(2 * xi_n, rel=1e-12)


def test_lemma4_zdot_is_the_expected_gradient():
    """Eq. 10 equals K E_n[dJ/dz_m] (population gradient, Lemma 2) at the Theorem 5 decoder."""
    from scansnap.data import one_query
    classes = one_query()
    M, K = classes.M, classes.K
    F = th.f_matrix(classes, np.zeros((M, M)))
    N = 20
    Y, _ = th.modified_decoder_dynamics(F, np.tile(np.arange(K), N), 1.0, labels=classes.next_token)
    gam = th.gamma_of_h(th.h_star(N, M, 1.0)[N], M)
    _, dZ = th.expected_gradients(classes, Y, np.zeros((M, M)))
    eq10 = th.lemma4_zdot(F, classes.psi_inverse(classes.query[0]), M, gam)
    np.testing.assert_allclose(K * dZ[classes.query[0]], eq10, atol=1e-12 * np.abs(eq10).max(), rtol=0)
    # Theorem 2: distinct tokens up (Eq. 98: f_l^2 xi_n), the common token down (Eq. 100)
    xis = [th.xi(F, n, M, gam) for n in range(K)]
    for n in range(K):
        d = classes.distinct_tokens(n)
        np.testing.assert_allclose(eq10[d], F[d, n] ** 2 * xis[n], rtol=1e-9)
    lc = classes.common_tokens[0]
    assert eq10[lc] == pytest.approx(-sum((1 - F[lc, n] ** 2) * xis[n] for n in range(K)), rel=1e-9)


def test_f_matrix_columns():
    c = syn_medium(2)
    rng = np.random.default_rng(2)
    Z = rng.normal(size=(c.M, c.M))
    F = th.f_matrix(c, Z)
    assert F.shape == (c.M, c.K)
    np.testing.assert_allclose(np.linalg.norm(F, axis=0), 1, atol=1e-14)
    for n in range(c.K):
        np.testing.assert_allclose(F[:, n], th.f_limit(c.probs[n], Z[c.query[n]]), atol=1e-14)


def test_momentum_clock_is_the_sum_and_its_inverse_reads_t0():
    """tau(s) = sum_{j<=s} (1 - beta^j)/(1 - beta) (the intro's clock); its inverse is exact at
    whole steps and linear between them; beta = 0 is the plain count."""
    for beta in (0.0, 0.5, 0.9, 0.99):
        s = np.arange(0, 301)
        tau = np.cumsum(np.r_[0.0, (1 - beta ** s[1:]) / (1 - beta)])
        np.testing.assert_allclose(th.momentum_clock(s, beta), tau, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(th.momentum_clock_steps(tau, beta), s, rtol=1e-12, atol=1e-9)
        mid = (tau[:-1] + tau[1:]) / 2                                    # halfway in tau: halfway in s
        np.testing.assert_allclose(th.momentum_clock_steps(mid, beta), s[:-1] + 0.5, atol=1e-9)
    np.testing.assert_allclose(th.momentum_clock_steps([0.0, 2.5, 1e8], 0.0), [0.0, 2.5, 1e8])
    big = th.momentum_clock_steps(1e8, 0.9)                               # no grid of 1e8 steps
    assert abs(th.momentum_clock(np.floor(big), 0.9) - 1e8) < 10
    # the intro's Syn-Small run: t0 = 20.5 plain steps is 6.5 steps with momentum 0.9
    assert abs(th.momentum_clock_steps(th.transition_time(34, 2, 1.0), 0.9) - 6.517) < 1e-3


@pytest.mark.parametrize("call, message", [
    (lambda: th.momentum_clock(3, 1.0), r"^beta \(momentum\) must be in \[0, 1\), got 1.0$"),
    (lambda: th.momentum_clock(3, -0.1), r"^beta \(momentum\) must be in"),
    (lambda: th.momentum_clock(-1, 0.9), r"^steps must be >= 0, got -1$"),
    (lambda: th.momentum_clock(float("nan"), 0.9), r"^steps is not finite"),
    (lambda: th.momentum_clock_steps(-2.0, 0.9), r"^t must be >= 0, got -2.0$"),
    (lambda: th.momentum_clock_steps(float("inf"), 0.9), r"^t is not finite"),
    (lambda: th.momentum_clock_steps(5.0, 1.5), r"^beta \(momentum\) must be in \[0, 1\), got 1.5$")])
def test_momentum_clock_rejects_bad_input(call, message):
    with pytest.raises(ValueError, match=message):
        call()
