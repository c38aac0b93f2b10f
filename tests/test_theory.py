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
