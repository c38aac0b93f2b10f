"""Closed forms and ODEs of the paper, for the chapters and tests to check against.

Every function cites its equation by the paper's number (arXiv 2305.16380v4); where the
printed equation is wrong, the book's errata page (book/errata) proves the correction.
Learning rates follow the paper: the objective J is maximised, so a rate eta moves a
parameter by +eta dJ/dtheta.
"""
from __future__ import annotations

import textwrap
import warnings
from dataclasses import dataclass, field

import numpy as np
from scipy.integrate import solve_ivp
from scipy.optimize import brentq
from scipy.special import wrightomega as _wrightomega   # private: help(scansnap.theory) would print scipy's docstring

from ._validate import array, distribution_rows, finite, integer, positive, positive_int, times, unit_interval
from .data import ClassLayoutWarning, SequenceClasses
from .metrics import _stacklevel


def _softmax(x, axis=-1):
    x = x - np.max(x, axis=axis, keepdims=True)
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)


# ---------------------------------------------------------------------------------------
# Lemma 1 (Eq. 3): the gradient of J for one sequence, in the paper's matrix form
# ---------------------------------------------------------------------------------------

def lemma1_gradients(Y, Z, tokens, next_token, normalize=True):
    """dJ/dY and dJ/dZ of Eq. 3 for a single sequence (batch size 1), in float64 numpy.

    ``tokens`` is x_1..x_T (the last one the query); ``next_token`` is x_{T+1}.
    dJ/dY = LN(X^T b)(x_{T+1} - alpha)^T,
    dJ/dZ = x_T (x_{T+1} - alpha)^T Y^T P_perp(X^T b)/||X^T b|| X^T diag(b) X.
    With ``normalize=False`` the LN is dropped and the Jacobian of X^T b is X^T L X with
    L = diag(b) - b b^T (Eq. 18); with LN the b b^T part vanishes (P_perp v = 0).
    """
    Y, Z = np.asarray(Y, float), np.asarray(Z, float)
    M = Y.shape[0]
    tokens = np.asarray(tokens)
    X = np.eye(M)[tokens[:-1]]            # (T-1, M) one-hot rows
    xT, xT1 = np.eye(M)[tokens[-1]], np.eye(M)[next_token]
    b = _softmax(X @ Z.T @ xT)            # b_T = softmax(X Z^T x_T)
    v = X.T @ b
    if normalize:
        nv = np.linalg.norm(v)
        f = v / nv
        P = np.eye(M) - np.outer(v, v) / nv ** 2
        J_v = (P / nv) @ X.T @ np.diag(b) @ X
    else:
        f = v
        J_v = X.T @ (np.diag(b) - np.outer(b, b)) @ X
    alpha = _softmax(Y.T @ f)
    dY = np.outer(f, xT1 - alpha)
    dZ = np.outer(xT, (xT1 - alpha) @ Y.T @ J_v)
    return dY, dZ


# ---------------------------------------------------------------------------------------
# Lemma 2 (Eq. 5-6): the long-sequence limit, and Lemma 18's Hoeffding band (Eq. 136)
# ---------------------------------------------------------------------------------------

def attention_limit(probs_row, z_row):
    """c_n of Eq. 5: c_l = P(l|n) exp(z_{ml}) / sum_l' P(l'|n) exp(z_{ml'}) (the limit of X^T b_T).

    ``probs_row`` must be probabilities with some mass (a row of zeros has no limit: 0/0) and
    ``z_row`` finite, with as many entries; otherwise a ValueError names the bad one."""
    p, z = _row_and_logits(probs_row, z_row)
    with np.errstate(divide="ignore"):
        return _softmax(np.log(p) + z)


def _row_and_logits(probs_row, z_row):
    p = distribution_rows("probs_row (P(l|n))", probs_row)
    z = finite("z_row", array("z_row", z_row))
    if z.ndim == 0 or z.shape[-1] != p.shape[-1]:
        raise ValueError(f"z_row must have one logit per token ({p.shape[-1]}), got shape {z.shape}")
    return p, z


def f_limit(probs_row, z_row):
    """f_n = c_n / ||c_n||_2 (Sec. 4.1; the l2-normalised limit)."""
    c = attention_limit(probs_row, z_row)
    return c / np.linalg.norm(c)


def attention_limit_all(classes: SequenceClasses, Z):
    """c_n for every class and run: Z (..., M, M) -> (..., K, M), using row psi(n) of Z."""
    Z = np.asarray(Z, float)
    with np.errstate(divide="ignore"):
        logp = np.log(classes.probs)
    return _softmax(logp + Z[..., classes.query, :])


def hoeffding_radius(T: int, delta: float) -> float:
    """Eq. 136: |q_l - P(l|n)| <= sqrt(ln(2/delta) / (2(T-1))) with prob. >= 1 - delta."""
    T = positive_int("T (sequence length)", T, minimum=2)
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")
    return float(np.sqrt(np.log(2 / delta) / (2 * (T - 1))))


# ---------------------------------------------------------------------------------------
# Lemmas 5-6 (Eq. 33, 44-45): h* and h; Eq. 85 the speed control coefficient gamma
# ---------------------------------------------------------------------------------------

def loss_of_h(h, M: int):
    """Eq. 32: the loss -ln alpha_nn of a class whose decoder scalar is ``h`` (array-like),
    ln(1 + (M-1) e^{-M h})."""
    M = positive_int("M", M, minimum=2)
    h = np.asarray(h, dtype=float)
    if not np.all(np.isfinite(h)):
        raise ValueError(f"h must be finite, got {h!r}")
    return np.log1p((M - 1) * np.exp(-M * h))


def inputs_with_overlap(M: int, K: int, rho: float, rng) -> np.ndarray:
    """K unit class inputs in R^M (the columns of F, (M, K)) with every pairwise overlap
    f_n^T f_n' = rho, as Remark 1 assumes: f_n = sqrt(rho) u_0 + sqrt(1 - rho) u_n for random
    orthonormal u_0, ..., u_K (``rng``: a numpy Generator)."""
    M, K = positive_int("M", M, minimum=2), positive_int("K", K, minimum=1)
    if K + 1 > M:
        raise ValueError(f"K + 1 = {K + 1} orthonormal directions do not fit in M = {M} dimensions")
    rho = unit_interval("rho", rho)
    U, _ = np.linalg.qr(rng.normal(size=(M, K + 1)))
    return np.sqrt(rho) * U[:, [0]] + np.sqrt(1 - rho) * U[:, 1:]


def h_star(steps: int, M: int, eta_y: float) -> np.ndarray:
    """Eq. 33: h*(0) = 0, h*(s) = h*(s-1) + eta_Y / ((M-1) + exp(M h*(s-1))); s = 0..steps."""
    steps = positive_int("steps", steps, minimum=0)
    M = positive_int("M", M, minimum=2)
    eta_y = positive("eta_y", eta_y)
    h = np.zeros(steps + 1)
    for s in range(1, steps + 1):
        h[s] = h[s - 1] + eta_y / ((M - 1) + np.exp(M * h[s - 1]))
    return h


def h_closed(t, M: int, eta_y: float):
    """Lemma 6, Eq. 45 solved for h: exp(Mh) + (M-1) M h = M eta_Y t + 1.

    With u = Mh, A = M eta_Y t + 1 and x = A/(M-1): u = x - W(e^x/(M-1)) = x - omega(y),
    y = x - ln(M-1), omega the Wright omega function (omega + ln omega = y). Written as
    u = ln((M-1) omega(y)), the same number without the cancellation of two huge terms,
    so h stays exact to rounding for any finite t (h -> ln(M eta_Y t)/M for large t).
    """
    M = positive_int("M", M, minimum=2)
    eta_y = positive("eta_y", eta_y)
    t = np.asarray(t, float)
    if not np.all(np.isfinite(t)):
        raise ValueError(f"time t must be finite, got {float(t[~np.isfinite(t)].ravel()[0])!r}")
    if np.any(t < 0):
        raise ValueError(f"time t must be >= 0, got {float(t.min())!r}")
    with np.errstate(over="ignore"):
        A = M * eta_y * t + 1.0
    if not np.all(np.isfinite(A)):
        raise ValueError(f"time t = {float(t.max())!r} too large: M eta_Y t overflows a float")
    y = A / (M - 1) - np.log(M - 1)
    u = np.log((M - 1) * np.real(_wrightomega(y)))
    return np.maximum(u, 0.0) / M  # clip the -1e-17 round-off at t = 0


def h_ode(t_eval, M: int, eta_y: float, rtol=1e-10, atol=1e-14):
    """Lemma 6, Eq. 44 integrated numerically: dh/dt = eta_Y / ((M-1) + exp(Mh)), h(0)=0."""
    M = positive_int("M", M, minimum=2)
    eta_y = positive("eta_y", eta_y)
    t_eval = times("t_eval", t_eval)                  # never backwards in time, never NaN (a hang)
    ts = np.unique(t_eval)                            # solve_ivp asks for sorted times
    if ts[-1] == 0:
        return np.zeros_like(t_eval)
    sol = solve_ivp(lambda t, h: eta_y / ((M - 1) + np.exp(M * h)), (0, float(ts[-1])),
                    [0.0], t_eval=ts, rtol=rtol, atol=atol, method="LSODA")
    if not sol.success:
        raise RuntimeError(f"h_ode: the integrator failed ({sol.message})")
    return sol.y[0][np.searchsorted(ts, t_eval)]


def gamma_of_h(h, M: int):
    """Eq. 85 as a function of h: (M-1)^2 h / ((M-1) + exp(M h)) (use h*(N) for the discrete count).

    h >= 0 (finite) and M >= 2, else a ValueError naming them; for large h, exp(Mh) overflows
    to inf and gamma is its limit, 0."""
    M = positive_int("M", M, minimum=2)
    h = times("h", h, empty_ok=True)
    with np.errstate(over="ignore"):
        return (M - 1) ** 2 * h / ((M - 1) + np.exp(M * h))


def gamma(t, M: int, K: int, eta_y: float, discrete: bool = True):
    """Eq. 85: gamma(t) = (M-1)^2 h(s) / ((M-1) + exp(M h(s))), s = ceil(t/K) (or t/K)."""
    t = times("time t", t, empty_ok=True)               # named as given, before dividing by K
    K = positive_int("K", K)
    s = np.ceil(t / K) if discrete else t / K
    return gamma_of_h(h_closed(s, M, eta_y), M)


def omega1(M: int) -> float:
    """Lemma 8, Eq. 51: the upper zero (1+omega_1) ln M / M of exp(Mh) - (M-1)Mh.

    The function has zeros only for M >= 4 (its minimum, at e^{Mh} = M-1, is
    (M-1)(1 - ln(M-1)), negative iff M - 1 > e): M < 4 is a ValueError.
    """
    M = integer("M", M)
    if M < 4:
        raise ValueError(f"M must be an integer >= 4, got {M}: exp(Mh) - (M-1)Mh has no zero for "
                         "M < 4, so Lemma 8's omega_1 does not exist")
    try:
        M = float(M)                     # numpy's log of a Python int past 2**64 is an object error
    except OverflowError:
        raise ValueError(f"M = {str(M)[:4]}...e+{len(str(M)) - 1} is too large for a float") from None
    g = lambda w: w * np.log(M) - np.log((1 + w) * (M - 1) * np.log(M) / M)
    return brentq(g, 1e-12, 10.0, xtol=1e-300, rtol=1e-15)


def lemma8_zeros(M: int):
    """Lemma 8: the two zeros of exp(Mh) - (M-1)Mh on h > 0, as (M^-(2-omega_0), (1+omega_1) ln M / M)."""
    M = positive_int("M", M, minimum=4)
    g = lambda h: np.exp(M * h) - (M - 1) * M * h
    lower = brentq(g, 0.0, 1.0 / M, xtol=1e-300, rtol=1e-15)
    upper = brentq(g, np.log(M) / M, 2 * np.log(M) / M, xtol=1e-300, rtol=1e-15)  # xtol: brentq's 2e-12 default would cap it
    return lower, upper


def omega0(M: int) -> float:
    """Lemma 8, Eq. 50: the lower zero is M^-(2 - omega_0)."""
    return 2 + np.log(lemma8_zeros(M)[0]) / np.log(M)


def transition_time(M: int, K: int, eta_y: float, momentum: float | None = None) -> float:
    """t_0 = 2 (1 + omega_1) K ln M / eta_Y: the start of stage 2 (Lemma 9, Theorem 4); M >= 4.

    **Which clock.** Without ``momentum`` this is the theory's time t: gradient-flow time, that
    is, steps of *plain* SGD (momentum 0). ``scansnap.train`` defaults to SGD with momentum 0.9,
    which covers about 1/(1 - 0.9) = 10 plain steps per step once it is moving, so its t_0 comes
    after far fewer steps: pass the run's ``momentum`` to get t_0 in that optimiser's steps,
    s with tau(s) = t_0 (:func:`momentum_clock_steps`; ``momentum=0`` gives t_0 itself).
    :func:`predict` returns both clocks at once. E.g. Syn-Small (M=34, K=2), eta_Y=1: t_0 = 20.5
    plain steps, 6.52 steps of SGD with momentum 0.9.
    """
    K = positive_int("K", K)
    if momentum is not None:
        return float(momentum_clock_steps(transition_time(M, K, eta_y), momentum))
    return 2 * (1 + omega1(M)) * K * np.log(M) / positive("eta_y", eta_y)


def momentum_clock(steps, beta: float) -> np.ndarray:
    """tau(s): how many plain-SGD steps s steps of SGD with momentum beta cover under a steady
    gradient, sum_{j=1}^{s} (1 - beta^j)/(1 - beta) = s/(1-beta) - beta (1-beta^s)/(1-beta)^2
    (the book's three clocks: chapter 3, section sec-clocks; derived in chapter 5). The theory's
    time t (Theorem 4's t_0) is plain steps."""
    beta = unit_interval("beta (momentum)", beta)
    s = finite("steps", steps)
    if np.any(s < 0):
        raise ValueError(f"steps must be >= 0, got {steps!r}")
    return s / (1 - beta) - beta * (1 - beta ** s) / (1 - beta) ** 2


def momentum_clock_steps(t, beta: float) -> np.ndarray:
    """The inverse of :func:`momentum_clock`: the step s at which tau(s) = t, linear between whole
    steps (where a run's snapshots are). Reads the theory's t_0 on a run with momentum."""
    beta = unit_interval("beta (momentum)", beta)
    given, t = t, finite("t", t)
    if np.any(t < 0):
        raise ValueError(f"t must be >= 0, got {given!r}")
    # the first whole step hi with tau(hi) >= t, by bisection on [0, ceil(t)] (tau(s) >= s)
    lo, hi = np.zeros_like(t), np.ceil(t)
    for _ in range(64):
        mid = np.floor((lo + hi) / 2)
        up = momentum_clock(mid, beta) >= t
        lo, hi = np.where(up, lo, mid), np.where(up, mid, hi)
    hi = np.maximum(hi, 1.0)
    a, b = momentum_clock(hi - 1, beta), momentum_clock(hi, beta)
    return np.where(t > 0, hi - 1 + (t - a) / (b - a), 0.0)


# ---------------------------------------------------------------------------------------
# Theorem 3 (Eq. 11-12): relative gain and its bounds
# ---------------------------------------------------------------------------------------

def relative_gain(probs_row, z_row, l: int, l2: int):
    """r_{l/l'|n} = f_{nl}^2 / f_{nl'}^2 - 1 = c~_l^2 / c~_l'^2 - 1 (Theorem 3).

    Undefined (a division by 0) when P(l'|n) = 0: a ValueError says so."""
    p, z = _row_and_logits(probs_row, z_row)
    if p.ndim != 1:
        raise ValueError(f"probs_row must be one row of probabilities, got shape {p.shape}")
    M = p.shape[0]
    for name, v in (("l", l), ("l2", l2)):
        if not 0 <= integer(name, v) < M:
            raise ValueError(f"{name} must be a token id in [0, {M}), got {v!r}")
    if p[l2] == 0:
        raise ValueError(f"P(l'={l2} | n) = 0: the relative gain over a token that never appears is "
                         "undefined (a division by 0)")
    return (p[l] * np.exp(z[..., l])) ** 2 / (p[l2] * np.exp(z[..., l2])) ** 2 - 1


def growth_factor_bounds(B, f0_sq):
    """Eq. 12: exp(2 f_{nl0}(0)^2 B_n) <= chi_{l0} <= exp(2 B_n)."""
    B = np.asarray(B, float)
    return np.exp(2 * f0_sq * B), np.exp(2 * B)


# ---------------------------------------------------------------------------------------
# Theorem 4 (Eq. 14, 118-133): B_n(t), with the missing -ln(C_0)/4 restored
# ---------------------------------------------------------------------------------------

def Gamma(t, M: int, K: int, eta_y: float, eta_z: float):
    """Eq. 128: Gamma(t) = eta_Z int_0^t gamma = eta_Z K (M-1)^2 h(t/K)^2 / (2 eta_Y)."""
    eta_z = positive("eta_z", eta_z)
    t = times("time t", t, empty_ok=True)               # named as given, before dividing by K
    h = h_closed(t / positive_int("K", K), M, eta_y)
    return eta_z * K * (M - 1) ** 2 * h ** 2 / (2 * eta_y)


def B_n(t, M: int, K: int, eta_y: float, eta_z: float, C0: float, printed: bool = False):
    """Theorem 4's B_n(t) = int_0^t dGamma / (C0 + 4 Gamma) (Eq. 124, 129).

    Exact: (1/4) ln(1 + 4 Gamma/C0), so B_n(0) = 0. ``printed=True`` gives the paper's
    printed form (1/4) ln(C0 + 4 Gamma), which differs by the constant (1/4) ln C0
    (the book's erratum 3). With eta_Z the paper's per-class rate this is chapter 5's \bar B_n,
    K times chapter 4's B_n (appendix 5A, "the factor K"); it equals how far the common logit
    has sunk, -z_ml.
    """
    C0 = positive("C0", C0)
    G = Gamma(t, M, K, eta_y, eta_z)
    return 0.25 * np.log(C0 + 4 * G) if printed else 0.25 * np.log1p(4 * G / C0)


def B_n_late(t, M: int, K: int, eta_y: float, eta_z: float, C0: float, printed: bool = False):
    """Eq. 132, Theorem 4's late form: B_n ~ (1/2) ln L + (1/4) ln(2K(M-1)^2 / (M^2 nu C0)),
    with L = ln(M eta_Y t / K) and nu = eta_Y / eta_Z.

    It is the exact B_n (Eq. 129) with h(t/K) = L/M and the 1 beside 4 Gamma / C0 dropped, so it
    holds only once :func:`late_regime_margin` is >> 1 (the book's erratum 15; before that it can
    even be negative). ``printed=True`` is the paper's Eq. 132, which lacks the -(1/4) ln C0 of
    erratum 3.
    """
    M = positive_int("M", M, minimum=2)
    K = positive_int("K", K)
    eta_y, eta_z = positive("eta_y", eta_y), positive("eta_z", eta_z)
    C0 = positive("C0", C0)
    L = _late_log(t, M, K, eta_y)
    nu = eta_y / eta_z
    late = 0.5 * np.log(L) + 0.25 * np.log(2 * K * (M - 1) ** 2 / (M**2 * nu))
    return late if printed else late - 0.25 * np.log(C0)


def late_regime_margin(t, M: int, K: int, eta_y: float, eta_z: float, C0: float,
                       printed: bool = False):
    """How far t is into Eq. 132's regime, as a ratio that must be >> 1.

    Eq. 132 drops the 1 beside 4 Gamma / C0 = 2K(M-1)^2 L^2 / (M^2 nu C0), which needs
    L = ln(M eta_Y t/K) >> (M/(M-1)) sqrt(C0 nu / (2K)); the margin is L over that threshold
    (the book's erratum 15). ``printed=True`` gives the paper's condition instead,
    t >> (M eta_Y)^-1 exp(1/sqrt(2 nu)), as the ratio t M eta_Y exp(-1/sqrt(2 nu)).
    """
    M = positive_int("M", M, minimum=2)
    K = positive_int("K", K)
    eta_y, eta_z = positive("eta_y", eta_y), positive("eta_z", eta_z)
    C0 = positive("C0", C0)
    nu = eta_y / eta_z
    if printed:
        t = np.asarray(finite("t", t), float)
        if np.any(t < 0):
            raise ValueError(f"time t must be >= 0, got {float(t.min())!r}")
        return t * M * eta_y * np.exp(-1 / np.sqrt(2 * nu))
    return _late_log(t, M, K, eta_y) / (M / (M - 1) * np.sqrt(C0 * nu / (2 * K)))


def _late_log(t, M, K, eta_y):
    """L = ln(M eta_Y t / K) for Eq. 132, which needs L > 0."""
    t = np.asarray(finite("t", t), float)
    floor = K / (M * eta_y)
    if np.any(~(t > floor)):
        raise ValueError(f"time t must exceed K/(M eta_Y) = {floor:.3g} for Eq. 132 "
                         f"(ln(M eta_Y t/K) > 0), got {float(t.min())!r}")
    return np.log(M * eta_y * t / K)


def B_n_ode(t_eval, M: int, K: int, eta_y: float, eta_z: float, C0: float, rtol=1e-10):
    """Integrate Eq. 118-119 numerically: dz/dt = -eta_Z gamma e^{4z}/C0, dB/dt = eta_Z gamma e^{4z}/C0.

    Returns (z(t), B(t)) with gamma from the exact h of Eq. 45 (continuous t/K).
    """
    C0 = positive("C0", C0)
    eta_z = positive("eta_z", eta_z)
    t_eval = np.asarray(t_eval, float)

    def rhs(t, y):
        g = gamma(t, M, K, eta_y, discrete=False)
        xi = g * np.exp(4 * y[0]) / C0
        return [-eta_z * xi, eta_z * xi]

    sol = solve_ivp(rhs, (0, float(t_eval.max())), [0.0, 0.0], t_eval=t_eval, rtol=rtol,
                    atol=1e-12, method="LSODA")
    return sol.y[0], sol.y[1]


# ---------------------------------------------------------------------------------------
# Population dynamics: T -> infinity (Lemma 2) and the expectation over classes
# ---------------------------------------------------------------------------------------

def expected_gradients(classes: SequenceClasses, Y, Z, normalize=True, residual=False):
    """E_n[dJ/dY], E_n[dJ/dZ] in the long-sequence limit, classes uniform (Lemma 1 + Lemma 2).

    For class n with query m: c_n from Eq. 5, v = c_n (+ e_m), f = LN(v), alpha =
    softmax(Y^T f), delta = e_n - alpha; dJ/dY = f delta^T and row m of dJ/dZ is
    delta^T Y^T J_f(v) (diag(c_n) - c_n c_n^T), the limit of Eq. 3 (Eq. 6).
    """
    Y, Z = np.asarray(Y, float), np.asarray(Z, float)
    K, M = classes.K, classes.M
    c = attention_limit_all(classes, Z)                        # (K, M)
    v = c.copy()
    if residual:
        v[np.arange(K), classes.query] += 1.0
    if normalize:
        nv = np.linalg.norm(v, axis=1, keepdims=True)
        f = v / nv
    else:
        f = v
    alpha = _softmax(f @ Y)                                    # rows: softmax(Y^T f_n)
    delta = -alpha
    delta[np.arange(K), classes.next_token] += 1.0
    dY = f.T @ delta / K
    g = delta @ Y.T                                            # Y delta_n
    if normalize:
        g = (g - f * np.sum(f * g, axis=1, keepdims=True)) / nv
    gz = c * (g - np.sum(c * g, axis=1, keepdims=True))        # (diag(c) - c c^T) g
    dZ = np.zeros((M, M))
    np.add.at(dZ, classes.query, gz / K)
    return dY, dZ


@dataclass
class PopulationSolution:
    t: np.ndarray     # (n_t,)
    Y: np.ndarray     # (n_t, M, M)
    Z: np.ndarray     # (n_t, M, M)


def population_dynamics(classes: SequenceClasses, eta_y: float, eta_z: float, t_end: float,
                        t_eval=None, Y0=None, Z0=None, normalize=True, residual=False,
                        rtol=1e-6, atol=1e-9) -> PopulationSolution:
    """Integrate dY/dt = eta_Y E[dJ/dY], dZ/dt = eta_Z E[dJ/dZ] with scipy's solve_ivp.

    The gradient flow of the population objective (T -> infinity, every class with
    probability 1/K): what SGD with small rates and large batches follows.
    """
    eta_y, eta_z = positive("eta_y", eta_y), positive("eta_z", eta_z)
    t_end = positive("t_end", t_end)
    M = classes.M
    Y0 = np.zeros((M, M)) if Y0 is None else finite("Y0", Y0)
    Z0 = np.zeros((M, M)) if Z0 is None else finite("Z0", Z0)
    if Y0.shape != (M, M) or Z0.shape != (M, M):
        raise ValueError(f"Y0 and Z0 must be ({M}, {M}); got {Y0.shape} and {Z0.shape}")

    def rhs(t, y):
        dY, dZ = expected_gradients(classes, y[:M * M].reshape(M, M), y[M * M:].reshape(M, M),
                                    normalize, residual)
        return np.concatenate([eta_y * dY.ravel(), eta_z * dZ.ravel()])

    t_eval = np.linspace(0, t_end, 101) if t_eval is None else np.asarray(t_eval, float)
    sol = solve_ivp(rhs, (0, t_end), np.concatenate([Y0.ravel(), Z0.ravel()]), t_eval=t_eval,
                    rtol=rtol, atol=atol, method="RK45")
    if not sol.success:
        raise RuntimeError(f"solve_ivp failed: {sol.message}")
    y = sol.y.T
    return PopulationSolution(sol.t, y[:, :M * M].reshape(-1, M, M), y[:, M * M:].reshape(-1, M, M))


# ---------------------------------------------------------------------------------------
# The decoder (Sec. 4, App. D): Lemma 3, Theorem 5, Theorem 1, Lemmas 13-17
# ---------------------------------------------------------------------------------------

def satisfies_assumption2(F) -> bool:
    """Assumption 2 for F = [f_1..f_K] (M x K): |lambda_1(E)| < 1/K and min |lambda_i(E)| >= sqrt(6/M)."""
    F = np.asarray(F, float)
    lam = np.abs(np.linalg.eigvalsh(F.T @ F - np.eye(F.shape[1])))
    return bool(lam.max() < 1 / F.shape[1] and lam.min() >= np.sqrt(6 / F.shape[0]))


def zeta(M: int, n: int) -> np.ndarray:
    """zeta_n = M/(M-1) (e_n - 1/M): 1 at n, -1/(M-1) elsewhere (App. D.1)."""
    M = positive_int("M", M, minimum=2)
    if not 0 <= integer("n", n) < M:
        raise ValueError(f"n must be a token id in [0, {M}), got {n!r}")
    return M / (M - 1) * (np.eye(M)[n] - 1.0 / M)


def q_constants(M: int):
    """q1 = zeta_i^T zeta_i = 1 + 1/(M-1), q0 = zeta_j^T zeta_i = -M/(M-1)^2 (App. D.1)."""
    M = positive_int("M", M, minimum=2)
    return 1 + 1 / (M - 1), -M / (M - 1) ** 2


def E_matrices(F):
    """E = F^T F - I and E' = I - (I+E)^{-1} (the sign Lemma 14 needs; erratum 1)."""
    F = np.asarray(F, float)
    K = F.shape[1]
    E = F.T @ F - np.eye(K)
    return E, np.eye(K) - np.linalg.inv(np.eye(K) + E)


def modified_decoder_dynamics(F, schedule, eta_y: float, modified: bool = True, labels=None):
    """Iterate the Y update for the events ``schedule`` (a sequence of classes n), Y(0) = 0.

    ``modified``: Eq. 26, Y += eta_Y (f_n - F E' e_n)(e_n - alpha_n)^T (Lemma 3); otherwise
    Eq. 7, Y += eta_Y f_n (e_n - alpha_n)^T. alpha_n = softmax(Y^T f_n). The next token of
    class n is token ``labels[n]`` (default n). Returns Y and the counts.
    """
    F = np.asarray(F, float)
    M, K = F.shape
    labels = np.arange(K) if labels is None else np.asarray(labels)
    eta_y = positive("eta_y", eta_y)
    _, Ep = E_matrices(F)
    Y = np.zeros((M, M))
    counts = np.zeros(K, int)
    for n in schedule:
        f = F[:, n]
        alpha = _softmax(Y.T @ f)
        d = -alpha
        d[labels[n]] += 1.0
        u = f - F @ Ep[:, n] if modified else f
        Y += eta_y * np.outer(u, d)
        counts[n] += 1
    return Y, counts


def theorem5_Y(F, counts, M: int, eta_y: float, labels=None):
    """Eq. 70 with Theta from the actual counts: Y = F (I - E') W, w_n = (M-1) h*(N_n) zeta_n."""
    F = np.asarray(F, float)
    K = F.shape[1]
    labels = np.arange(K) if labels is None else np.asarray(labels)
    _, Ep = E_matrices(F)
    hs = h_star(int(max(counts)), M, eta_y)
    W = np.stack([(M - 1) * hs[c] * zeta(M, labels[n]) for n, c in enumerate(counts)])
    return F @ (np.eye(K) - Ep) @ W


def theorem1_coefficients(F, n: int, M: int, printed: bool = False):
    """iota_n and beta_{nn'} of Eq. 86-89 with Theta = sigma = 0 (returns iota, beta over n').

    The derived beta is q1 E'_{nn'} - q0 (1 - sum_{k != n} E'_{kn'}). ``printed=True`` gives
    the paper's printed signs, q1 E'_{nn'} + q0 (1 + sum_{k != n} E'_{kn'}) (erratum 2).
    """
    _, Ep = E_matrices(F)
    K = Ep.shape[0]
    q1, q0 = q_constants(M)
    others = [k for k in range(K) if k != n]
    iota = q1 * (1 - Ep[n, n]) - q0 * sum(Ep[k, n] for k in others)
    beta = np.zeros(K)
    for m in others:
        s = sum(Ep[k, m] for k in others)
        beta[m] = q1 * Ep[n, m] + q0 * (1 + s) if printed else q1 * Ep[n, m] - q0 * (1 - s)
    return iota, beta


def xi(F, n: int, M: int, gamma_value: float = 1.0):
    """xi_n = gamma sum_{n' != n} beta_{nn'} f_n^T f_{n'} (Theorem 1(a): positive)."""
    _, beta = theorem1_coefficients(F, n, M)
    E, _ = E_matrices(F)
    return gamma_value * float(beta @ E[n])


# ---------------------------------------------------------------------------------------
# Self-attention (Sec. 5, App. E): Lemma 4, Eq. 10
# ---------------------------------------------------------------------------------------

def lemma4_zdot(F, members, M: int, gamma_value: float = 1.0):
    """Eq. 10: z_m' = gamma sum_{n in members} diag(f_n) sum_{n' != n} beta_{nn'} (f_n f_n^T - I) f_n'.

    ``members`` = psi^{-1}(m), as column indices of F; the rate eta_Z (and the 1/K of the
    class probabilities, erratum 10) are left out.
    """
    F = np.asarray(F, float)
    out = np.zeros(F.shape[0])
    for n in members:
        _, beta = theorem1_coefficients(F, n, M)
        f = F[:, n]
        v = F @ beta                                  # sum_{n'} beta_{nn'} f_{n'} (beta_nn = 0)
        out += f * (f * (f @ v) - v)
    return gamma_value * out


def f_matrix(classes: SequenceClasses, Z):
    """F = [f_1, ..., f_K] (M x K): the l2-normalised long-sequence attention of every class."""
    c = attention_limit_all(classes, np.asarray(Z, float))
    return (c / np.linalg.norm(c, axis=1, keepdims=True)).T


# ---------------------------------------------------------------------------------------
# Chapter 5: the population dynamics stepped by the paper's optimizer (SGD with momentum)
# ---------------------------------------------------------------------------------------

@dataclass
class PopulationRun:
    eta_y: np.ndarray    # (R,)
    eta_z: np.ndarray    # (R,)
    loss: np.ndarray     # (R, steps): population loss E_n[-log alpha_n(n)] before update s
    Y: np.ndarray        # (R, M, M) at the end
    Z: np.ndarray        # (R, M, M) at the end
    snapshots: dict      # step -> Z (R, M, M) after `step` updates


def population_sgd(classes: SequenceClasses, eta_y, eta_z, steps: int, momentum: float = 0.9,
                   snapshot_steps=()) -> PopulationRun:
    """SGD with momentum on the population objective: T -> infinity and an infinite batch.

    Each step takes the exact expected gradient of Lemma 1 (Eq. 3) in the long-sequence
    limit (Lemma 2, Eq. 5-6), every class with probability 1/K (the same quantity as
    :func:`expected_gradients`), and applies the trainer's update (PyTorch's SGD: velocity
    v <- momentum * v + g, parameter += rate * v, from Y = Z = 0). It is the deterministic
    counterpart of ``scansnap.train`` with the same optimizer: what remains when sampling
    noise (finite T, finite batch) is taken away. ``eta_y``, ``eta_z`` are scalars or one
    value per run; runs are batched (float64 numpy), and Z is saved at ``snapshot_steps``.
    :func:`population_steps` is the same dynamics for one run through the trainer's own
    optimizer class (and Adam); ``tests/test_ch5.py`` checks that the two agree.
    """
    steps = positive_int("steps", steps)
    if not 0 <= momentum < 1:
        raise ValueError(f"momentum must be in [0, 1), got {momentum!r}")
    ey, ez = np.atleast_1d(np.asarray(eta_y, float)), np.atleast_1d(np.asarray(eta_z, float))
    R = max(ey.size, ez.size)
    for name, a in (("eta_y", ey), ("eta_z", ez)):
        if a.ndim != 1 or a.size not in (1, R):
            raise ValueError(f"{name} must be a scalar or have one value per run ({R}); got {a.shape}")
        for v in a:
            positive(name, v)
    ey, ez = np.broadcast_to(ey, (R,)).copy(), np.broadcast_to(ez, (R,)).copy()
    snaps = sorted({int(s) for s in snapshot_steps})
    for s in snaps:
        if not 0 <= s <= steps:
            raise ValueError(f"snapshot step {s} out of range [0, {steps}]")
    K, M = classes.K, classes.M
    with np.errstate(divide="ignore"):
        logp = np.log(classes.probs)                                # (K, M), -inf off support
    q, nxt = classes.query, classes.next_token
    onehot = np.eye(M)[nxt]                                         # (K, M)
    Y, Z = np.zeros((R, M, M)), np.zeros((R, M, M))
    vY, vZ = np.zeros_like(Y), np.zeros_like(Z)
    loss = np.empty((R, steps))
    out = {}
    for s in range(steps):
        if s in snaps:
            out[s] = Z.copy()
        a = logp[None] + Z[:, q, :]                                 # Eq. 5 in log form
        c = np.exp(a - a.max(-1, keepdims=True))
        c /= c.sum(-1, keepdims=True)                               # c_n, (R, K, M)
        nv = np.linalg.norm(c, axis=-1, keepdims=True)
        f = c / nv                                                  # f_n = LN(c_n)
        lg = f @ Y                                                  # logits Y^T f_n
        lg -= lg.max(-1, keepdims=True)
        logalpha = lg - np.log(np.exp(lg).sum(-1, keepdims=True))
        loss[:, s] = -np.mean(logalpha[:, np.arange(K), nxt], axis=-1)
        delta = onehot[None] - np.exp(logalpha)                     # e_n - alpha_n
        gY = f.transpose(0, 2, 1) @ delta / K                       # E_n[f_n delta_n^T]
        g = delta @ Y.transpose(0, 2, 1)                            # Y delta_n
        g = (g - f * np.sum(f * g, -1, keepdims=True)) / nv         # P_perp / ||c_n|| (Eq. 17)
        gz = c * (g - np.sum(c * g, -1, keepdims=True)) / K         # (diag(c) - c c^T) g (Eq. 6)
        gZ = np.zeros_like(Z)
        for n in range(K):                                          # only rows psi(n) move (Eq. 4)
            gZ[:, q[n], :] += gz[:, n, :]
        vY *= momentum
        vY += gY
        vZ *= momentum
        vZ += gZ
        Y += ey[:, None, None] * vY
        Z += ez[:, None, None] * vZ
        if not (np.all(np.isfinite(Y)) and np.all(np.isfinite(Z))):
            raise FloatingPointError(f"population_sgd diverged at step {s + 1} (non-finite Y or Z)")
    if steps in snaps:
        out[steps] = Z.copy()
    return PopulationRun(ey, ez, loss, Y, Z, out)


# ---------------------------------------------------------------------------------------
# The T -> infinity dynamics in discrete steps (what the live panels' engine iterates)
# ---------------------------------------------------------------------------------------

def population_steps(classes: SequenceClasses, eta_y: float, eta_z: float, steps: int,
                     optimizer: str = "sgd", momentum: float = 0.9, betas=(0.9, 0.999),
                     eps: float = 1e-8, Y0=None, Z0=None):
    """Iterate the expected gradient (Lemma 2's limit, Eq. 5-6, classes uniform) with an optimiser.

    The discrete counterpart of :func:`population_dynamics`: each step feeds -E_n[dJ/dY],
    -E_n[dJ/dZ] (:func:`expected_gradients`, the gradient of the expected loss) to
    ``scansnap.train.BatchedOptimizer`` (PyTorch's SGD-with-momentum or Adam rule), so it is
    the trainer at T -> infinity and batch -> infinity. Returns (losses, Y, Z): the expected
    loss -E_n[log alpha_n(next token)] before each step, and the final Y, Z (float64).
    """
    import torch

    from .train import BatchedOptimizer

    eta_y, eta_z = positive("eta_y", eta_y), positive("eta_z", eta_z)
    steps = positive_int("steps", steps)
    M, K = classes.M, classes.K
    Y = torch.zeros(1, M, M, dtype=torch.float64) if Y0 is None else torch.tensor(np.asarray(Y0, float))[None]
    Z = torch.zeros(1, M, M, dtype=torch.float64) if Z0 is None else torch.tensor(np.asarray(Z0, float))[None]
    if Y.shape != (1, M, M) or Z.shape != (1, M, M):
        raise ValueError(f"Y0 and Z0 must be ({M}, {M}); got {tuple(Y.shape[1:])} and {tuple(Z.shape[1:])}")
    opt = BatchedOptimizer([(Y, torch.tensor([eta_y], dtype=torch.float64)),
                            (Z, torch.tensor([eta_z], dtype=torch.float64))], optimizer, momentum,
                           betas, eps)
    losses = np.empty(steps)
    rows = np.arange(K)
    for s in range(steps):
        y, z = Y[0].numpy(), Z[0].numpy()
        c = attention_limit_all(classes, z)
        f = c / np.linalg.norm(c, axis=1, keepdims=True)
        logits = f @ y
        lse = np.log(np.exp(logits - logits.max(1, keepdims=True)).sum(1)) + logits.max(1)
        losses[s] = np.mean(lse - logits[rows, classes.next_token])
        dY, dZ = expected_gradients(classes, y, z)
        Y.grad, Z.grad = torch.tensor(-dY)[None], torch.tensor(-dZ)[None]
        opt.step()
    return losses, Y[0].numpy().copy(), Z[0].numpy().copy()


# ---------------------------------------------------------------------------------------
# Chapter 3 (Sec. 4, App. D): Eq. 45 inverted, and Eq. 7 / Eq. 26 averaged over the classes
# ---------------------------------------------------------------------------------------

def time_of_h(h, M: int, eta_y: float):
    """Eq. 45 read the other way: the time t at which the continuous h reaches ``h``,
    t = (exp(Mh) + (M-1) M h - 1) / (M eta_Y). Used for Lemma 7's shift c with h(s+c) = h*(s)."""
    M = positive_int("M", M, minimum=2)
    eta_y = positive("eta_y", eta_y)
    h = np.asarray(h, float)
    bad = ~(np.isfinite(h) & (h >= 0))
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(f"h must be finite and >= 0, got {float(h[idx])} at index {idx}")
    return (np.expm1(M * h) + (M - 1) * M * h) / (M * eta_y)


@dataclass
class DecoderRounds:
    """The history of :func:`decoder_rounds`, one entry per round r = 0..rounds (before update r)."""
    loss: np.ndarray        # (rounds+1,) mean over classes of -ln alpha_n[label_n]
    grad_norm: np.ndarray   # (rounds+1, K) ||g_n||, g_n = Y (e_n - alpha_n) (Theorem 1's g)
    xi: np.ndarray          # (rounds+1, K) xi_n = gamma sum_{n'!=n} beta_{nn'} f_n^T f_{n'}, read off g_n
    W: np.ndarray           # (K, M) F^T Y at the end


def decoder_rounds(F, eta_y: float, rounds: int, modified: bool = True, labels=None) -> DecoderRounds:
    """The decoder with the attention frozen, every class once per round, simultaneously.

    This is the expected step of a batch whose classes are uniform (what SGD on a large
    batch does on average): Y += (eta_Y / K) sum_n u_n (e_n - alpha_n)^T with
    alpha_n = softmax(Y^T f_n) and u_n = f_n (Eq. 7, plain) or u_n = f_n - F E' e_n
    (Eq. 26, modified; Lemma 3). Each round is K class events, so round r is step t = r of
    a batch trainer and event count r per class (h(t/K) with rate eta_Y in Lemmas 5-6).
    Every u_n lies in span(F), so Y = F A with a K x M matrix A, and the loop runs on A
    (O(K^2 M) per round instead of O(K M^2)): F^T Y = (I+E) A, and g_n = Y (e_n - alpha_n)
    = F c_n with c_n = A (e_n - alpha_n), so xi_n = -sum_{n' != n} c_{n'n} f_n^T f_{n'}
    (Theorem 1(a)) and ||g_n||^2 = c_n^T (I+E) c_n.
    """
    F = np.asarray(F, float)
    if F.ndim != 2 or F.shape[0] < F.shape[1] or not np.all(np.isfinite(F)):
        raise ValueError(f"F must be a finite M x K matrix with M >= K, got shape {F.shape}")
    norms = np.linalg.norm(F, axis=0)
    off = np.abs(norms - 1.0)
    if np.any(off > 1e-6):  # absolute: a float32-rounded F (~1e-8) passes, a mis-normalised one does not
        n = int(np.argmax(off))
        raise ValueError(f"the columns f_n of F must have unit norm (f_n = c_n / ||c_n||_2): column {n} "
                         f"has norm {float(norms[n])}")
    M, K = F.shape
    eta_y = positive("eta_y", eta_y)
    rounds = positive_int("rounds", rounds, minimum=0)
    labels = np.arange(K) if labels is None else np.asarray(labels)
    if labels.shape != (K,) or labels.min() < 0 or labels.max() >= M:
        raise ValueError(f"labels must be K = {K} token ids in [0, {M}), got {labels!r}")
    E, Ep = E_matrices(F)
    G = np.eye(K) + E                                     # F^T F
    C_u = np.eye(K) - Ep if modified else np.eye(K)       # u_n = F C_u e_n
    A = np.zeros((K, M))                                  # Y = F A
    loss = np.zeros(rounds + 1)
    gn = np.zeros((rounds + 1, K))
    xi_ = np.zeros((rounds + 1, K))
    off = ~np.eye(K, dtype=bool)
    for r in range(rounds + 1):
        alpha = _softmax(G @ A, axis=1)                     # row n: alpha_n = softmax(Y^T f_n)
        resid = -alpha
        resid[np.arange(K), labels] += 1.0                  # e_n - alpha_n
        C = A @ resid.T                                      # column n: g_n = F C[:, n]
        loss[r] = -np.mean(np.log(alpha[np.arange(K), labels]))
        gn[r] = np.sqrt(np.maximum(np.einsum("in,ij,jn->n", C, G, C), 0.0))
        xi_[r] = -np.sum(np.where(off, C.T * E, 0.0), axis=1)
        if r < rounds:
            A = A + eta_y / K * C_u @ resid
    return DecoderRounds(loss, gn, xi_, G @ A)


# ---------------------------------------------------------------------------------------
# One call: what the theory predicts for a training run, on the optimiser's clock
# ---------------------------------------------------------------------------------------

# Prediction.compare's verdict: observed and predicted values agree within these (absolute).
# The book's runs (Fig. 4's, chapter 5's 25 rate pairs over 512 steps, the quickstart's) stay
# within 0.15 nats and 0.11 of common mass; a run far off its prediction (eta_Y = 30,
# eta_Z = 0.7: common mass 0.002 against 0.342) is 0.34 away.
ENTROPY_TOLERANCE = 0.2       # nats, distinct-token entropy (Fig. 6's metric, per class)
COMMON_MASS_TOLERANCE = 0.15  # share of c_n on the common tokens, in [0, 1]


class InitWarning(UserWarning):
    """A run trained from ``init="default"`` (a random Y, Z) compared with the theory, whose
    dynamics start at Y = Z = 0 (Sec. 4, Theorem 3): the prediction need not hold."""


class RegimeWarning(UserWarning):
    """Rates outside the theory's regime: Theorem 4's t_0 comes before the optimiser's first step
    ends (``t0_steps < 1``), so the decoder saturates within one step and there is no first
    stage to predict (:func:`predict`, :meth:`Prediction.compare`)."""


def _warn_regime(where: str, ey, ez, t0_steps):
    """A RegimeWarning naming the runs whose t0_steps < 1 (none: nothing)."""
    fast = np.flatnonzero(np.asarray(t0_steps) < 1)
    if fast.size:
        r = fast[0]
        warnings.warn(f"{where}: {fast.size} run(s) have t0_steps < 1 (e.g. run {r}, eta_y={ey[r]:g}, eta_z={ez[r]:g}: "
                      f"t0_steps = {t0_steps[r]:.2g}): Theorem 4's first stage would end within the first step, so "
                      "the decoder saturates at once (its softmax one-hot, no gradient left for the attention); "
                      "that is outside the theory, and the prediction need not hold: lower eta_y",
                      RegimeWarning, stacklevel=_stacklevel())


@dataclass(repr=False)
class Prediction:
    """What the theory predicts for R runs of ``scansnap.train`` (SGD, LN, no residual, from
    Y = Z = 0), to compare a run with. Made by :func:`predict` (or ``TrainResult.predict()``).

    Fields (R runs, K classes, M tokens):

    - ``eta_y``, ``eta_z``: (R,) the rates; ``momentum``: the SGD momentum; ``steps``: int.
    - ``t0``: (R,) Theorem 4's t_0 = 2 (1 + omega_1) K ln M / eta_Y (Lemma 9), the end of the
      scan's first stage, in the theory's time (plain-SGD steps, :func:`transition_time`).
    - ``t0_steps``: (R,) the same moment in the optimiser's steps: s with tau(s) = t_0
      (:func:`momentum_clock_steps`); equal to ``t0`` for momentum 0. Compare runs with this one.
    - ``ranking``: list of K arrays: class n's distinct tokens G_DT(n), the one predicted to get
      the most attention first. Theorem 3: the relative gain r_{l/l'|n} grows when
      f_nl(0) > f_nl'(0), so from Z = 0 the order is that of P(l|n). Tokens of equal P(l|n)
      are tied: the theory does not order them (listed by token id). ``ties[n]``: whether
      class n has any tie; ``winners[n]``: the tokens tied for first (one token, or several);
      ``ranking_text[n]``: the ranking with its ties shown, as the winners print
      (``"8=9 > 7 > 6 > 4=5"``: ``=`` joins tokens of equal P(l|n)).
      A prediction, not a guarantee about a run (see :meth:`compare`): a run's top token can
      differ from ``winners[n]`` without any tie.
    - ``attention``: (R, K, M) c_n (Eq. 5) after ``steps`` steps of the noiseless dynamics
      (:func:`population_sgd`: T -> infinity, infinite batch, the same optimiser).
    - ``loss``: (R, steps) that dynamics' expected loss before each step (``loss[:, 0]`` = ln M).
    - ``snapshots``: {step: (R, K, M)} c_n at the steps asked for; ``Z``, ``Z_snapshots``: the
      noiseless Z, (R, M, M), at the end and at those steps.
    - ``layout``: None when the classes keep the query and next tokens out of every context, as
      the theory assumes (Sec. 3.2); else, in words, the token that breaks it (:func:`predict`
      then warns, and so does :meth:`compare`: the prediction is outside the theory).

    Methods: :meth:`class_entropy`, :meth:`common_mass` (as ``scansnap.metrics``, per class),
    :meth:`to_frame` (a pandas DataFrame, one row per run and class), :meth:`compare` (a run
    against the prediction, one row per run and class).
    """
    classes: SequenceClasses
    eta_y: np.ndarray
    eta_z: np.ndarray
    momentum: float
    steps: int
    t0: np.ndarray
    t0_steps: np.ndarray
    ranking: list
    ties: list
    attention: np.ndarray
    loss: np.ndarray
    snapshots: dict
    Z: np.ndarray
    Z_snapshots: dict
    winners: list = field(default_factory=list)
    layout: str | None = None

    def __repr__(self):
        from .train import _short
        R, K, M = self.attention.shape
        wins = ", ".join(f"{n}: {_tokens(w)}" for n, w in enumerate(self.winners[:6])) + (", ..." if K > 6 else "")
        outside = ([] if self.layout is None else
                   textwrap.wrap("outside the theory: " + self.layout, 78, initial_indent="  ", subsequent_indent="    "))
        return "\n".join([
            f"Prediction: {R} run{'s' * (R != 1)}, K={K}, M={M}, {self.steps} steps of SGD with momentum {self.momentum:g}",
            f"  t0 in its steps {_short(np.unique(np.round(self.t0_steps, 2)))}; "
            f"in plain-SGD steps {_short(np.unique(np.round(self.t0, 2)))}",
            f"  winners (class: token) {wins}",
            f"  attention {tuple(self.attention.shape)}; loss {tuple(self.loss.shape)}",
            f"  snapshots {{step: c_n}} at {_short(sorted(self.snapshots), 'steps')}"] + outside)

    @property
    def ranking_text(self) -> list:
        """K strings: each class's ranking with its ties shown, ``"8=9 > 7 > 6 > 4=5"`` (tokens of
        equal P(l|n) joined by ``=``, groups by falling P(l|n))."""
        out = []
        for n, toks in enumerate(self.ranking):
            p = self.classes.probs[n, toks]
            groups = []
            for t, v in zip(toks, p):
                if groups and v == groups[-1][0]:
                    groups[-1][1].append(int(t))
                else:
                    groups.append((v, [int(t)]))
            out.append(" > ".join(_tokens(g) for _, g in groups))
        return out

    def Z_at(self, step=None) -> np.ndarray:
        """(R, M, M): the noiseless Z after ``step`` steps (None: ``steps``; else a snapshot step)."""
        if step is None or step == self.steps and step not in self.Z_snapshots:
            return self.Z
        if step not in self.Z_snapshots:
            raise ValueError(f"no predicted snapshot at step {step!r}: this prediction has {sorted(self.Z_snapshots)} "
                             "(predict(..., snapshot_steps=[...]) keeps more)")
        return self.Z_snapshots[step]

    def class_entropy(self, over: str = "distinct", step=None) -> np.ndarray:
        """(R, K): entropy of the predicted c_n over G_DT(n) or supp(n) (``scansnap.metrics.class_entropy``),
        after ``step`` steps (default: the end)."""
        from .metrics import class_entropy
        return class_entropy(self.classes, self.Z_at(step), over)

    def common_mass(self, step=None) -> np.ndarray:
        """(R, K): the predicted share of c_n on the common tokens (``scansnap.metrics.common_mass``),
        after ``step`` steps (default: the end)."""
        from .metrics import common_mass
        return common_mass(self.classes, self.Z_at(step))

    def to_frame(self):
        """A pandas DataFrame, one row per (run, class): rates, t0 on both clocks, the predicted
        top distinct token (``top_token``: the first of ``ranking``; ``winners``: every token
        tied for first, ``tied``: more than one), the entropies and the common-token mass after
        ``steps`` steps."""
        import pandas as pd
        R, K = len(self.eta_y), self.classes.K
        ent, sup, com = self.class_entropy(), self.class_entropy("support"), self.common_mass()
        return pd.DataFrame({
            "run": np.repeat(np.arange(R), K), "class": np.tile(np.arange(K), R),
            "eta_y": np.repeat(self.eta_y, K), "eta_z": np.repeat(self.eta_z, K),
            "t0": np.repeat(self.t0, K), "t0_steps": np.repeat(self.t0_steps, K),
            "top_token": np.tile([int(r[0]) for r in self.ranking], R),
            "winners": [tuple(int(t) for t in self.winners[n]) for _ in range(R) for n in range(K)],
            "tied": np.tile([len(w) > 1 for w in self.winners], R),
            "distinct_entropy": ent.ravel() + 0.0, "support_entropy": sup.ravel() + 0.0, "common_mass": com.ravel()})

    def compare(self, result, step=None, entropy_tol=ENTROPY_TOLERANCE, common_mass_tol=COMMON_MASS_TOLERANCE):
        """A run against the prediction: a pandas DataFrame, one row per (run, class).

        ``result``: the ``TrainResult`` the prediction was made for: the same runs (rates), the
        same momentum (the prediction's clock), SGD with LN and no residual (the theory's
        model); another is a ValueError naming both. ``step``:
        where to compare, None for the end (the result's and the prediction's last step must be
        the same) or a step both have: one of the prediction's snapshot steps (or its ``steps``)
        and one of the result's (or its last step).

        Columns: the run's rates and seed, ``step``, ``t0_steps`` (predicted) and
        ``transition_step`` (observed on the run, :func:`scansnap.metrics.transition_step`: the
        step where its common-token mass falls fastest, to the resolution of its snapshots; NaN
        without a fall; see the end of this docstring); ``top_token``, the distinct
        token with the most observed attention, and ``noiseless_top``, the one with the most
        predicted (noiseless) attention at that step (ties: by Theorem 3's order); ``predicted_winners``, the tokens Theorem 3 ties
        for first (equal P(l|n)), ``tied`` (more than one), ``top_as_predicted`` (``top_token``
        is one of them) and ``predicted_top`` (the first of them); ``rank_correlation``,
        Spearman's rank correlation between the observed c_n on G_DT(n) and Theorem 3's ranking,
        counting only the order the theory makes: the observed ranks are averaged within each
        group of tied tokens, so 1 means every predicted order holds (NaN where the theory
        orders nothing: fewer than two distinct tokens, or all tied); the observed and predicted
        distinct-token entropy and common-token mass; and a verdict on the magnitudes:
        ``entropy_ok`` (observed and predicted distinct-token entropy within ``entropy_tol``
        nats, default 0.2), ``common_mass_ok`` (common mass within ``common_mass_tol``, an
        absolute share, default 0.15; NaN beside NaN counts as agreement), and ``agrees``: the
        top token as predicted *and* ``rank_correlation`` at least ``RANK_CORRELATION_MIN`` = 0.5
        (or NaN, nothing to order) *and* both magnitudes within tolerance. ``margin``: how clear
        the predicted winner is, in the theory's limit: (winner's - runner-up's) / winner's
        predicted c_n on G_DT(n) at that step, the runner-up being the best token not tied with it
        (NaN when all are tied); with a small margin (a near-tie, say below 0.05) the run's winner
        can differ by batch noise alone, so a miss there says little, and neither does a hit. A
        negative margin: the noiseless flow itself puts ``noiseless_top`` above Theorem 3's winners
        (e.g. at eta_Z > eta_Y); where a run's top token misses them but the noiseless flow ranks it
        above them too, ``why`` says so (the regime departs from Theorem 3, not the run). Read ``agrees``, not
        ``top_as_predicted`` or ``rank_correlation`` alone: a run can order its tokens as
        predicted while its magnitudes are far off (at eta_Y = 30, eta_Z = 0.7 a run's common
        mass is 0.002 against a predicted 0.342, with rank correlation 1). The defaults hold the
        book's own runs with room (see ``ENTROPY_TOLERANCE``); tighten them for long runs.
        ``why``: the theory's assumptions the row is outside of, in words ("" for none): short
        sequences (the run's T < M: c_n is the T -> infinity limit of Eq. 5), batch 1 (noisy SGD;
        the theory follows the expected gradient), eta_Z > eta_Y (outside Assumption 1(c) as
        chapter 5 reads it, eta_Y >= eta_Z), t0_steps < 1, init="default", a class layout
        outside Sec. 3.2, and saturated attention (one token, or the common tokens together,
        holding at least ``SATURATED_ATTENTION`` = 0.999 of the observed c_n). It explains a
        disagreement, it does not decide one: a row outside an assumption can still agree. A
        class with less than 1e-6 of its attention on its distinct tokens
        (``scansnap.metrics.DISTINCT_MASS_MIN``) has no order among them, only float noise: its
        ``distinct_entropy`` and ``rank_correlation`` are NaN (a warning names it), ``top_token``
        and ``top_as_predicted`` pandas' NA (dtypes ``Int64``, ``boolean``); ``noiseless_top`` and
        ``margin`` likewise where the prediction has that little. Such a row agrees only where the
        prediction has that little too.

        A result with diverged runs (``result.diverged``, see ``scansnap.train``) is a
        ValueError naming them: their numbers are no result (compare the others:
        ``result.select(~result.diverged)``). A result trained with ``init="default"`` is
        compared with an :class:`InitWarning`: the theory starts at Y = Z = 0.

        When a run's top token is not among the predicted winners (``top_as_predicted`` False),
        that is not only at exact ties: Theorem 3 orders the tokens by P(l|n) from Z = 0 in the
        noiseless dynamics, and a run can disagree with it (1) before it has converged: early on
        the gaps between the distinct tokens' attention are small and the batch noise can order
        them otherwise (compare again at a later step); (2) from a
        random start (``init="default"``): the initial Z already orders the tokens, and the
        theory's start, Z = 0, does not hold; (3) when the probabilities of the leading tokens
        are close (not equal): their predicted gains differ little, so the sampled batches decide
        as much as P(l|n) does. Read ``rank_correlation`` and the entropies beside it, and judge a
        disagreement by the gap in P(l|n) between the tokens (``classes.probs``).

        Classes outside the theory's layout (``layout``) are compared too, with a
        ClassLayoutWarning; rates with ``t0_steps < 1`` (the decoder saturates within one step,
        outside the theory) with a :class:`RegimeWarning`, and so are rows with saturated
        attention or eta_Z > ``FAR_ETA_RATIO`` = 10 eta_Y (the warning counts them).

        ``t0_steps`` is the theory's (Theorem 4, Lemma 9), not measured on the run: t_0 is defined
        on the noiseless decoder dynamics, which a run with batches has no exact counterpart of.
        Its measured counterpart is the ``transition_step`` column, where the common-token mass
        falls fastest, ``1 + np.argmin(np.diff([result.common_mass(s).mean() for s in
        range(steps + 1)]))`` with every step kept (``train(..., snapshot_steps=range(steps +
        1))``); with fewer snapshots it is the end of the snapshot interval of the steepest fall
        (an upper bound): the scan's first stage ends as the attention starts leaving the common
        tokens (Theorem 3). On K=4, M=40 classes at eta_Z=2, that step is within a factor of 2 of
        ``t0_steps`` (eta_Y = 2 and 10; ``tests/test_research_saturation.py``), and so it is at
        Fig. 4's Syn-Small setting (eta_Y = eta_Z = 1: step 10 against 6.5) and over the paper's
        Syn-Medium rates at num_last = 5 (0.8 to 1.9 times ``t0_steps``). Where ``t0_steps`` is
        a step or two (large rates: Fig. 4's eta_Y = 10, step 4 against 1.6) the observed fall
        comes up to ~4x later: whole steps, and momentum's velocity still building up
        (``tests/test_research7.py``)."""
        import pandas as pd
        from scipy.stats import rankdata

        from .metrics import DISTINCT_MASS_MIN, _distinct_mass, class_entropy, common_mass, transition_step
        if result.classes is not self.classes and not np.array_equal(result.classes.probs, self.classes.probs):
            raise ValueError("the result was trained on other sequence classes than the prediction's")
        if len(result.eta_y) != len(self.eta_y) or not (np.allclose(result.eta_y, self.eta_y)
                                                         and np.allclose(result.eta_z, self.eta_z)):
            raise ValueError("the result's runs (eta_y, eta_z) are not the prediction's: "
                             "predict with result.predict() or the same rates")
        if getattr(result, "diverged", None) is not None and np.any(result.diverged):
            bad = np.flatnonzero(result.diverged)
            raise ValueError(f"run(s) {', '.join(map(str, bad[:10]))}{', ...' if len(bad) > 10 else ''} of the result "
                             f"diverged (e.g. eta_y={result.eta_y[bad[0]]:g}, eta_z={result.eta_z[bad[0]]:g}): their "
                             "numbers are no result to compare; compare the others with "
                             "result.select(~result.diverged) and the prediction for them")
        cfg = result.config
        if cfg.get("optimizer") != "sgd" or cfg.get("residual") or not cfg.get("normalize", True):
            raise ValueError(f"the prediction is for SGD with LN and no residual; the result used "
                             f"optimizer={cfg.get('optimizer')!r}, normalize={cfg.get('normalize')}, "
                             f"residual={cfg.get('residual')}: there is no prediction to compare it with")
        if cfg.get("momentum") is None:
            raise ValueError("the result does not record its momentum (config['momentum']): the prediction's "
                             f"clock (momentum {self.momentum:g}) cannot be checked against it")
        if abs(float(cfg["momentum"]) - float(self.momentum)) > 1e-12:
            raise ValueError(f"the prediction is for momentum {self.momentum:g}, the result was trained with momentum "
                             f"{float(cfg['momentum']):g}: predict with result.predict() or momentum="
                             f"{float(cfg['momentum']):g}")
        last = result.config["steps"]
        have = sorted(set(self.Z_snapshots) | {self.steps})
        if step is None:
            if last != self.steps:
                raise ValueError(f"the result ends at step {last}, the prediction at step {self.steps}: predict "
                                 f"for the same number of steps, or compare at a step both have (step=; the "
                                 f"prediction has {have})")
            Z, predicted = result.Z, self.Z
        else:
            if step not in have:
                raise ValueError(f"the prediction has no step {step!r}: it has {have} "
                                 "(predict(..., snapshot_steps=[...]) or result.predict() keeps more)")
            Z = result.Z if step == last and step not in result.snapshots else result.Z_at(step)
            predicted = self.Z_at(step)
        if self.layout is not None:
            warnings.warn(f"compare: {self.layout}; the prediction is outside the theory's assumptions",
                          ClassLayoutWarning, stacklevel=_stacklevel())
        _warn_regime("compare", self.eta_y, self.eta_z, self.t0_steps)
        if cfg.get("init", "zero") != "zero":
            warnings.warn(f"compare: the result was trained with init={cfg.get('init')!r}; the theory starts at "
                          "Y = Z = 0 (train's init='zero'), so its winners and magnitudes need not hold",
                          InitWarning, stacklevel=_stacklevel())
        entropy_tol, common_mass_tol = positive("entropy_tol", entropy_tol), positive("common_mass_tol", common_mass_tol)
        Z = Z.double().numpy()
        c = attention_limit_all(self.classes, Z)
        R, K = len(self.eta_y), self.classes.K
        rho = np.empty((R, K))
        observed_top = np.empty((R, K), int)
        for n in range(K):
            toks = self.ranking[n]
            p = self.classes.probs[n, toks]
            pred_rank = rankdata(-p)                                            # 1 = most attention; ties averaged
            obs = c[:, n, toks]
            observed_top[:, n] = toks[np.argmax(obs, axis=1)]
            obs_rank = rankdata(-obs, axis=1)
            for v in np.unique(p):                 # inside a tied group the theory says nothing: average it out
                g = p == v
                if g.sum() > 1:
                    obs_rank[:, g] = obs_rank[:, g].mean(axis=1, keepdims=True)
            a = obs_rank - obs_rank.mean(1, keepdims=True)
            b = pred_rank - pred_rank.mean()
            denom = np.sqrt((a ** 2).sum(1) * (b ** 2).sum())
            rho[:, n] = np.where(denom > 0, (a * b).sum(1) / np.where(denom > 0, denom, 1), np.nan)
        winners = [tuple(int(t) for t in w) for w in self.winners]
        top_ok = np.array([[observed_top[r, n] in winners[n] for n in range(K)] for r in range(R)])
        at = self.steps if step is None else step
        ent = class_entropy(self.classes, Z, what="compare: the run's Z").ravel() + 0.0
        ent_p = class_entropy(self.classes, predicted, what="compare: the predicted Z").ravel() + 0.0
        com, com_p = common_mass(self.classes, Z).ravel(), common_mass(self.classes, predicted).ravel()
        ent_ok, com_ok = _within(ent, ent_p, entropy_tol), _within(com, com_p, common_mass_tol)
        why = _outside(self, cfg, c, R, K)
        Zp = predicted.double().numpy() if hasattr(predicted, "double") else np.asarray(predicted, float)
        c_p = attention_limit_all(self.classes, Zp)
        # under DISTINCT_MASS_MIN on G_DT(n) the distinct tokens' order is float noise: undefined (NA)
        none, none_p = _distinct_mass(self.classes, Z) < DISTINCT_MASS_MIN, _distinct_mass(self.classes, Zp) < DISTINCT_MASS_MIN
        rho[none] = np.nan
        noiseless_top = np.zeros((R, K), int)
        above = np.zeros((R, K), bool)     # the noiseless flow puts the run's top token above Theorem 3's winners
        for n in range(K):
            toks = self.ranking[n]
            cp = c_p[:, n, toks]
            best = cp >= cp.max(axis=1, keepdims=True) * (1 - 1e-9)
            noiseless_top[:, n] = toks[np.argmax(best, axis=1)]    # ties: Theorem 3's order, then token id
            win = c_p[:, n, list(winners[n])].max(axis=1)
            above[:, n] = c_p[np.arange(R), n, observed_top[:, n]] > win
        margin = np.full((R, K), np.nan)
        for n in range(K):
            rest = [t for t in self.ranking[n] if t not in winners[n]]
            if rest:                       # the winner's predicted attention over the best of the others
                top = c_p[:, n, list(winners[n])].min(axis=1)
                nxt = c_p[:, n, rest].max(axis=1)
                with np.errstate(invalid="ignore", divide="ignore"):
                    margin[:, n] = (top - nxt) / top
        margin[none_p] = np.nan
        for i in np.flatnonzero((~top_ok & above & ~none & ~none_p).ravel()):
            r, n = divmod(i, K)
            why[i] = "; ".join([w for w in [why[i]] if w] + [
                f"the noiseless flow itself ranks token {observed_top[r, n]} above Theorem 3's {_tokens(winners[n])} "
                f"(its top: {noiseless_top[r, n]}): the regime departs from Theorem 3, not the run"])
        rank_ok = ~(rho.ravel() < RANK_CORRELATION_MIN)                      # NaN: the theory orders nothing
        _warn_outside("compare", why, self.eta_y, self.eta_z, K)
        undefined = none.ravel()
        top_col = pd.array(np.where(undefined, 0, observed_top.ravel()), dtype="Int64")
        top_col[undefined] = pd.NA
        top_as = pd.array(top_ok.ravel(), dtype="boolean")
        top_as[undefined] = pd.NA
        nl_top = pd.array(noiseless_top.ravel(), dtype="Int64")
        nl_top[none_p.ravel()] = pd.NA
        # agrees: an undefined top counts as agreement only beside an undefined prediction (as NaN entropies)
        top_agrees = np.where(undefined, none_p.ravel(), top_ok.ravel())
        return pd.DataFrame({
            "run": np.repeat(np.arange(R), K), "class": np.tile(np.arange(K), R),
            "eta_y": np.repeat(self.eta_y, K), "eta_z": np.repeat(self.eta_z, K),
            "seed": np.repeat(np.asarray(result.seed), K), "step": np.full(R * K, at),
            "t0_steps": np.repeat(self.t0_steps, K), "transition_step": np.repeat(transition_step(result), K),
            "top_token": top_col, "noiseless_top": nl_top,
            "predicted_winners": [winners[n] for _ in range(R) for n in range(K)],
            "tied": np.tile([len(w) > 1 for w in winners], R), "top_as_predicted": top_as,
            "predicted_top": np.tile([w[0] for w in winners], R),
            "rank_correlation": rho.ravel(), "margin": margin.ravel(),
            "distinct_entropy": ent, "predicted_distinct_entropy": ent_p,
            "common_mass": com, "predicted_common_mass": com_p,
            "entropy_ok": ent_ok, "common_mass_ok": com_ok, "agrees": top_agrees & rank_ok & ent_ok & com_ok,
            "why": why})


SATURATED_ATTENTION = 1 - 1e-3   # c_n this close to one-hot (on one token, or all on the common ones): saturated
RANK_CORRELATION_MIN = 0.5       # compare's ``agrees`` also asks rank_correlation >= this (NaN: nothing to order)
FAR_ETA_RATIO = 10.0             # eta_Z / eta_Y above this: far outside Assumption 1(c); compare warns


def _warn_outside(what, why, eta_y, eta_z, K) -> None:
    """A RegimeWarning when compare's rows are saturated or far outside eta_Y >= eta_Z, counting them."""
    sat = sum("saturated attention" in w for w in why)
    far = int(np.sum(np.asarray(eta_z, float) > FAR_ETA_RATIO * np.asarray(eta_y, float))) * K
    if sat or far:
        parts = ([f"{sat} of {len(why)} rows have saturated attention (see their why)"] if sat else []) + \
                ([f"{far} of {len(why)} rows have eta_Z > {FAR_ETA_RATIO:g} eta_Y, far outside Assumption 1(c)"]
                 if far else [])
        warnings.warn(f"{what}: {'; '.join(parts)}: there the theory's winners and magnitudes need not hold, "
                      "and an agreeing row is no confirmation", RegimeWarning, stacklevel=_stacklevel())


def _outside(pred: "Prediction", cfg: dict, c: np.ndarray, R: int, K: int) -> list:
    """compare's ``why``: for each (run, class), the theory's assumptions the run is outside of,
    in words joined by "; " ("" inside all of them). A reason explains a disagreement; it does not
    make one (a run outside an assumption can still agree)."""
    M = pred.classes.M
    T, batch = cfg.get("T"), cfg.get("batch")
    run_why = [[] for _ in range(R)]
    for r in range(R):
        if isinstance(T, (int, np.integer)) and T < M:
            run_why[r].append(f"short sequences (T={T} < M={M}; the theory's c_n is the T -> infinity limit, Eq. 5)")
        if isinstance(batch, (int, np.integer)) and batch == 1:
            run_why[r].append("batch 1 (noisy SGD; the theory follows the expected gradient)")
        if pred.eta_z[r] > pred.eta_y[r]:
            run_why[r].append(f"eta_Z = {pred.eta_z[r]:g} > eta_Y = {pred.eta_y[r]:g} (outside Assumption 1(c), "
                              "eta_Y >= eta_Z)")
        if pred.t0_steps[r] < 1:
            run_why[r].append(f"t0_steps = {pred.t0_steps[r]:.2g} < 1 (the decoder saturates within one step)")
        if cfg.get("init", "zero") != "zero":
            run_why[r].append(f"init={cfg.get('init')!r} (the theory starts at Y = Z = 0)")
        if pred.layout is not None:
            run_why[r].append("class layout: " + pred.layout)
    common = np.zeros(M, bool)
    common[pred.classes.common_tokens] = True
    out = []
    for r in range(R):
        for n in range(K):
            w = list(run_why[r])
            top, cm = float(c[r, n].max()), float(c[r, n][common].sum())
            if top >= SATURATED_ATTENTION:
                w.append(f"saturated attention (one token holds {top:.4f} of c_n)")
            elif cm >= SATURATED_ATTENTION:
                w.append(f"saturated attention (common mass {cm:.4f})")
            out.append("; ".join(w))
    return out


def _within(observed, predicted, tol) -> np.ndarray:
    """|observed - predicted| <= tol, elementwise; NaN beside NaN (nothing to measure) agrees."""
    both_nan = np.isnan(observed) & np.isnan(predicted)
    with np.errstate(invalid="ignore"):
        return (np.abs(observed - predicted) <= tol) | both_nan


def _tokens(w) -> str:
    """A winner set as text: ``19``, or ``11=12`` for tokens the theory ties."""
    return "=".join(str(int(t)) for t in w)


def predict(classes: SequenceClasses, eta_y=1.0, eta_z=1.0, steps: int = 100, momentum: float = 0.9,
            snapshot_steps=()) -> Prediction:
    """Everything the theory predicts for runs of ``scansnap.train`` with SGD at these rates, in one
    call (see :class:`Prediction` for the fields and their shapes):

    - when the scan's first stage ends: Theorem 4's t_0 in the theory's time *and* in this
      optimiser's steps (``momentum``: 0.9 is ``train()``'s default, 0 plain SGD);
    - which distinct token of each class wins (Theorem 3's ranking, by P(l|n) from Z = 0). A
      run can differ from it not only where P(l|n) ties: before it has converged, from a random
      start (``train(..., init="default")``), or where the leading probabilities are close, the
      batch noise or the initial Z can order the tokens otherwise (:meth:`Prediction.compare`);
    - the noiseless attention c_n after ``steps`` steps (:func:`population_sgd`, the trainer's
      optimiser on the T -> infinity, infinite-batch gradient), and at ``snapshot_steps``.

    ``eta_y``, ``eta_z``: scalars or one value per run (R); runs with the same pair are computed
    once. t_0 needs M >= 4 (Lemma 8). Rates whose t_0 falls within the first step
    (``t0_steps < 1``: the decoder saturates at once) are outside the theory: a
    :class:`RegimeWarning` names them. Compare with a run: ``predict(...).compare(result)``, or
    ``result.predict()`` which takes the run's own rates, steps and momentum.
    """
    if not isinstance(classes, SequenceClasses):
        raise ValueError(f"classes must be a SequenceClasses, got {type(classes).__name__}")
    steps = positive_int("steps", steps)
    momentum = unit_interval("momentum", momentum)
    ey, ez = np.atleast_1d(np.asarray(eta_y, float)), np.atleast_1d(np.asarray(eta_z, float))
    R = max(ey.size, ez.size)
    if ey.size > 1 and ez.size > 1 and ey.size != ez.size:
        raise ValueError(f"the per-run lengths disagree: eta_y has {ey.size}, eta_z has {ez.size}; give each one "
                         "value per run (the same length) or a single value for every run")
    for name, a in (("eta_y", ey), ("eta_z", ez)):
        if a.ndim != 1 or a.size not in (1, R):
            raise ValueError(f"{name} must be a scalar or have one value per run ({R}); got shape {a.shape}")
        for v in a:
            positive(name, v)
    ey, ez = np.broadcast_to(ey, (R,)).copy(), np.broadcast_to(ez, (R,)).copy()
    pairs, which = np.unique(np.stack([ey, ez], 1), axis=0, return_inverse=True)
    which = which.reshape(-1)
    run = population_sgd(classes, pairs[:, 0], pairs[:, 1], steps, momentum, snapshot_steps)
    t0 = np.array([transition_time(classes.M, classes.K, e) for e in ey])
    t0_steps = np.asarray(momentum_clock_steps(t0, momentum), float) if momentum else t0.copy()
    ranking, ties, winners = [], [], []
    for n in range(classes.K):
        toks = classes.distinct_tokens(n)
        p = classes.probs[n, toks]
        order = np.argsort(-p, kind="stable")
        ranking.append(toks[order])
        ties.append(bool(len(np.unique(p)) < len(p)))
        winners.append(toks[p == p.max()] if len(p) else toks)
    _warn_regime("predict", ey, ez, t0_steps)
    layout = classes.layout_issue()
    if layout is not None:
        warnings.warn(f"predict: {layout}; the prediction is outside the theory's assumptions",
                      ClassLayoutWarning, stacklevel=_stacklevel())
    return Prediction(classes, ey, ez, momentum, steps, t0, t0_steps, ranking, ties,
                      attention_limit_all(classes, run.Z[which]), run.loss[which],
                      {s: attention_limit_all(classes, z[which]) for s, z in run.snapshots.items()},
                      run.Z[which], {s: z[which] for s, z in run.snapshots.items()}, winners, layout)
