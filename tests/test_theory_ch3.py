"""Chapter 3's additions to theory.py: Eq. 45 inverted, and Eq. 7 / Eq. 26 over whole rounds."""
import numpy as np
import pytest

from scansnap import theory as th


def _equal_overlap_F(M, K, rho, seed=0):
    """Unit columns with f_n^T f_n' = rho for every n != n' (Remark 1's setting)."""
    Q, _ = np.linalg.qr(np.random.default_rng(seed).normal(size=(M, K)))
    w, V = np.linalg.eigh((1 - rho) * np.eye(K) + rho * np.ones((K, K)))
    return Q @ V @ np.diag(np.sqrt(w)) @ V.T


@pytest.mark.parametrize("M,eta", [(50, 0.5), (1000, 2.0)])
def test_time_of_h_inverts_h_closed(M, eta):
    t = np.array([0.0, 0.3, 1.0, 17.0, 400.0, 1e5])
    np.testing.assert_allclose(th.time_of_h(th.h_closed(t, M, eta), M, eta), t, rtol=1e-9, atol=1e-9)


def test_time_of_h_rejects_bad_input():
    with pytest.raises(ValueError, match="h must be finite and >= 0"):
        th.time_of_h([-0.1], 10, 1.0)
    with pytest.raises(ValueError, match="eta_y must be a positive number"):
        th.time_of_h([0.1], 10, -1.0)


@pytest.mark.parametrize("rho", [0.0, 0.1])
def test_modified_rounds_decouple(rho):
    """Eq. 26 averaged over classes: every row of F^T Y is (M-1) h*(r; eta/K) zeta_n (Lemmas 3, 5),
    and xi_n read off g_n equals Theorem 1's xi with Theta = sigma = 0."""
    M, K, eta, R = 40, 4, 1.3, 60
    F = _equal_overlap_F(M, K, rho)
    out = th.decoder_rounds(F, eta, R, modified=True)
    hs = th.h_star(R, M, eta / K)
    expected = np.stack([(M - 1) * hs[R] * th.zeta(M, n) for n in range(K)])
    np.testing.assert_allclose(out.W, expected, atol=1e-12)
    for r in (5, R):
        gam = th.gamma_of_h(hs[r], M)
        np.testing.assert_allclose(out.xi[r], [th.xi(F, n, M, gam) for n in range(K)], atol=1e-12)
    assert np.all(np.diff(out.loss) < 0)


def test_plain_rounds_remark1_exact_when_K_equals_M():
    """Eq. 7 with equal overlaps rho and K = M: the effective rate is (1 - rho) eta_Y (Eq. 43)."""
    M = K = 6
    rho, eta, R = 0.4, 0.9, 50
    F = _equal_overlap_F(M, K, rho)
    out = th.decoder_rounds(F, eta, R, modified=False)
    hs = th.h_star(R, M, (1 - rho) * eta / K)
    np.testing.assert_allclose(out.W, [(M - 1) * hs[R] * th.zeta(M, n) for n in range(K)], atol=1e-12)
    # and not with the nominal rate
    assert np.abs(out.W[0, 0] - (M - 1) * th.h_star(R, M, eta / K)[R]) > 0.1


def test_plain_equals_modified_for_orthogonal_inputs():
    M, K = 30, 3
    F = np.eye(M)[:, :K]
    a = th.decoder_rounds(F, 2.0, 20, modified=True)
    b = th.decoder_rounds(F, 2.0, 20, modified=False)
    np.testing.assert_allclose(a.loss, b.loss, atol=1e-14)
    np.testing.assert_allclose(a.grad_norm, b.grad_norm, atol=1e-14)


@pytest.mark.parametrize("F, match", [
    (np.ones((3, 5)) / np.sqrt(3), "M >= K"),
    (np.ones((6, 2)), "unit norm"),
    (np.full((4, 2), np.nan), "finite"),
])
def test_decoder_rounds_rejects_bad_F(F, match):
    with pytest.raises(ValueError, match=match):
        th.decoder_rounds(F, 1.0, 3)


def test_decoder_rounds_rejects_bad_labels_and_rates():
    F = np.eye(5)[:, :2]
    with pytest.raises(ValueError, match="labels must be K = 2 token ids"):
        th.decoder_rounds(F, 1.0, 3, labels=[0, 9])
    with pytest.raises(ValueError, match="eta_y must be a positive number"):
        th.decoder_rounds(F, 0.0, 3)
    with pytest.raises(ValueError, match="rounds must be an integer"):
        th.decoder_rounds(F, 1.0, 2.5)
