"""What the paper measures (Sec. 8, App. G): entropies and the recall-threshold curve.

A metric never turns a diverged run into a number: NaN or inf anywhere in its input is a
ValueError naming the run (for a stack of runs) or the place, since an entropy computed
from NaN would read as 0, perfectly sparse attention, the best possible value.
"""
from __future__ import annotations

import numpy as np

from ._validate import array, finite
from .data import SequenceClasses

_SUM_TOL = 1e-3   # attention rows sum to 1; maps read back from a CSV carry 6 digits

# Below this share of a class's attention c_n on its distinct tokens G_DT(n), the distinct-token
# entropy is undefined (NaN, with an UndefinedEntropyWarning naming the class): renormalising a
# share of, say, 1e-30 measures rounding, and its near-0 entropy would read as perfectly sparse
# attention while all of it sits on the common tokens (eta_Z = 300: common mass 1.000, entropy
# 3.5e-10). The book's runs keep far more than this on their distinct tokens.
DISTINCT_MASS_MIN = 1e-6


class UndefinedEntropyWarning(RuntimeWarning):
    """A class's distinct-token entropy is NaN: its attention on its distinct tokens is below
    ``DISTINCT_MASS_MIN`` of the whole (all of it on the common tokens), so it has no sparsity."""


def _stacklevel() -> int:
    """The ``stacklevel`` that makes a ``warnings.warn`` in the calling function point at the first
    line outside this package (the user's call, through ``TrainResult`` or ``Prediction`` methods)."""
    import os
    import sys
    pkg = os.path.dirname(os.path.abspath(__file__)) + os.sep
    f, level = sys._getframe(1), 1
    while f.f_back is not None and os.path.abspath(f.f_code.co_filename).startswith(pkg):
        f, level = f.f_back, level + 1
    return level


def _distinct_mass(classes: SequenceClasses, Z) -> np.ndarray:
    """(..., K): the share of each class's c_n on its distinct tokens G_DT(n)."""
    return np.sum(np.where(classes.distinct_mask, np.exp(_log_attention(classes, Z)), 0.0), axis=-1)


def _undefined_where_negligible(classes: SequenceClasses, Z, ent: np.ndarray, what: str) -> np.ndarray:
    """``ent`` (..., K) with NaN where the class's attention mass on G_DT(n) < DISTINCT_MASS_MIN,
    and an UndefinedEntropyWarning naming the (run and) class."""
    import warnings
    mass = _distinct_mass(classes, Z)
    low = mass < DISTINCT_MASS_MIN
    if low.any():
        idx = tuple(int(i) for i in np.argwhere(low)[0])
        where = f"run {idx[0]}, class {idx[1]}" if len(idx) == 2 else f"class {idx[0]}"
        warnings.warn(f"{what}: {int(low.sum())} class(es) have distinct-token entropy NaN (e.g. {where}: its "
                      f"attention on its distinct tokens is {mass[idx]:.2g} of the whole, below {DISTINCT_MASS_MIN:g}; "
                      "all of it is on the common tokens, so there is no sparsity to measure, not perfect sparsity)",
                      UndefinedEntropyWarning, stacklevel=_stacklevel())
        ent = np.where(low, np.nan, ent)
    return ent


def _entropy(p, axis=-1):
    p = np.asarray(p, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return 0.0 - np.sum(np.where(p > 0, p * np.log(p), 0.0), axis=axis)   # 0 - 0 is +0, never "-0"


def _check_Z(classes: SequenceClasses, Z, what: str) -> np.ndarray:
    if not isinstance(classes, SequenceClasses):
        raise ValueError(f"classes must be a SequenceClasses, got {type(classes).__name__}")
    Z = finite(what, Z, runs=np.ndim(Z) == 3)
    if Z.ndim not in (2, 3) or Z.shape[-2:] != (classes.M, classes.M):
        raise ValueError(f"{what} must be (M, M) or (R, M, M) with M={classes.M}; got shape {Z.shape}")
    if not classes.distinct_mask.any(axis=1).all():
        n = int(np.flatnonzero(~classes.distinct_mask.any(axis=1))[0])
        raise ValueError(f"class {n} has no distinct tokens: its distinct-token metrics are undefined")
    return Z


def distinct_entropy(classes: SequenceClasses, Z, what: str = "Z") -> np.ndarray:
    """Fig. 6: entropy of c_n restricted to G_DT(n) and renormalised, averaged over n.

    Z is (M, M) or (R, M, M); returns a float or (R,). c_n is the long-sequence attention
    of Eq. 5 (natural log). Lower entropy = sparser attention on the distinct tokens.
    ``what`` names Z in error messages. A class with less than ``DISTINCT_MASS_MIN`` (1e-6) of
    its attention on G_DT(n) has no distinct-token entropy (see :func:`class_entropy`): the mean
    is then NaN, with an :class:`UndefinedEntropyWarning` naming the class.
    """
    Z = _check_Z(classes, Z, what)
    # c_n restricted to G_DT(n) and renormalised is a softmax of log P(l|n) + z_{psi(n) l} over
    # G_DT(n) alone: taken in that form (the max subtracted inside G_DT(n)) it never divides 0
    # by 0, as renormalising c_n would where the common tokens' logits are so large that the
    # distinct tokens' share underflows to exactly 0 (an entropy of 0, the best value, from 0/0).
    with np.errstate(divide="ignore"):
        logit = np.log(classes.probs) + Z[..., classes.query, :]
    logit = np.where(classes.distinct_mask, logit, -np.inf)
    d = np.exp(logit - logit.max(axis=-1, keepdims=True))
    d = d / d.sum(axis=-1, keepdims=True)
    return _undefined_where_negligible(classes, Z, _entropy(d), what).mean(axis=-1)


def attention_entropy(attn, causal: bool = True, what: str = "attention maps") -> float:
    """-sum_j a_ij log a_ij averaged over queries i (and batch, heads) of attention maps (..., T, T).

    Every row must be a distribution (entries in [0, 1], summing to 1); with ``causal``
    nothing may lie above the diagonal. NaN or inf is a ValueError naming ``what`` and
    where (pass the run's name as ``what``).
    """
    a = finite(what, attn)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"{what} must be (..., T, T); got shape {a.shape}")
    if a.size == 0:
        raise ValueError(f"{what} are empty: shape {a.shape}")
    if a.min() < 0 or a.max() > 1 + _SUM_TOL:
        raise ValueError(f"{what} must hold probabilities in [0, 1]; found {a.min() if a.min() < 0 else a.max()!r}")
    sums = a.sum(-1)
    if np.abs(sums - 1).max() > _SUM_TOL:
        idx = tuple(int(i) for i in np.unravel_index(np.argmax(np.abs(sums - 1)), sums.shape))
        raise ValueError(f"{what}: row {idx} sums to {sums[idx]:.6g}, not 1: not an attention map")
    if causal and np.triu(a, 1).any():
        raise ValueError(f"{what} have weight above the diagonal: not causal (pass causal=False)")
    return float(_entropy(a).mean())


def recall_threshold(classes: SequenceClasses, Z, thresholds, what: str = "Z") -> np.ndarray:
    """Figs. 11-12: mark each attention weight 1 if above a threshold; recall of distinct tokens.

    For query m = psi(n) the attention weights are softmax(z_m) over the M tokens (so the
    uniform level is 1/M); recall(th) = mean over n of |{l in G_DT(n): a_ml > th}| / |G_DT(n)|.
    Returns (len(thresholds),) or (R, len(thresholds)).
    """
    Z = _check_Z(classes, Z, what)
    # finite() first sees the thresholds as given: a complex one is refused by name, not cast
    th = np.atleast_1d(finite("thresholds", thresholds if np.iscomplexobj(thresholds)
                              else array("thresholds", thresholds)))
    if th.ndim != 1:
        raise ValueError(f"thresholds must be a 1-d list of numbers, got shape {th.shape}")
    rows = Z[..., classes.query, :]
    a = np.exp(rows - rows.max(-1, keepdims=True))
    a /= a.sum(-1, keepdims=True)                              # (..., K, M)
    mask = classes.distinct_mask
    hit = (a[..., None, :, :] > th[:, None, None]) & mask      # (..., n_th, K, M)
    return (hit.sum(-1) / mask.sum(-1)).mean(-1)


# ---------------------------------------------------------------------------------------
# Per class: the entropy of c_n over a set of its tokens, and the mass on the common tokens
# ---------------------------------------------------------------------------------------

OVER = ("distinct", "support")


def _log_attention(classes: SequenceClasses, Z) -> np.ndarray:
    """log c_n (Eq. 5) for every class, (..., K, M), -inf off the support: computed in log
    space, so a token whose weight underflows in c_n keeps its true (finite) log weight."""
    with np.errstate(divide="ignore"):
        a = np.log(classes.probs) + Z[..., classes.query, :]
    m = a.max(axis=-1, keepdims=True)
    return a - (m + np.log(np.exp(a - m).sum(axis=-1, keepdims=True)))


def _restricted_entropy(loga: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Entropy of softmax(loga) restricted to ``mask`` (..., K, M) and renormalised, from log
    weights (no 0/0 when the whole set underflows in c_n)."""
    a = np.where(mask, loga, -np.inf)
    m = a.max(axis=-1, keepdims=True)
    w = np.exp(a - m)
    p = w / w.sum(axis=-1, keepdims=True)
    logp = a - m - np.log(w.sum(axis=-1, keepdims=True))
    return 0.0 - np.sum(np.where(mask, p * np.where(mask, logp, 0.0), 0.0), axis=-1)   # +0, never -0


def class_entropy(classes: SequenceClasses, Z, over: str = "distinct", what: str = "Z") -> np.ndarray:
    """The entropy (nats) of each class's attention c_n (Eq. 5), restricted to a set of its
    tokens and renormalised: (M, M) -> (K,), (R, M, M) -> (R, K).

    ``over="distinct"``: G_DT(n), the tokens of class n alone (the per-class terms whose mean
    is Fig. 6's :func:`distinct_entropy`; at most ln |G_DT(n)|). ``over="support"``: supp(n),
    every token class n can show (common and distinct; at most ln |supp(n)|). Lower = sparser.
    Computed from log weights: a set whose attention underflows to 0 in float64 still gets its
    true entropy, never 0 from 0/0. With ``over="distinct"``, a class whose attention on G_DT(n)
    is below ``DISTINCT_MASS_MIN`` (1e-6) of the whole gets NaN, with an
    :class:`UndefinedEntropyWarning` naming it: all its attention is on the common tokens, which
    is no sparsity, though the renormalised rounding would read as an entropy near 0.
    """
    if over not in OVER:
        raise ValueError(f"over must be one of {OVER}, got {over!r}")
    Z = _check_Z(classes, Z, what) if over == "distinct" else _check_Z_any(classes, Z, what)
    mask = classes.distinct_mask if over == "distinct" else classes.probs > 0
    ent = _restricted_entropy(_log_attention(classes, Z), mask)
    return _undefined_where_negligible(classes, Z, ent, what) if over == "distinct" else ent


def common_mass(classes: SequenceClasses, Z, what: str = "Z") -> np.ndarray:
    """The share of each class's attention c_n (Eq. 5) on the common tokens G_CT (tokens of more
    than one class): (M, M) -> (K,), (R, M, M) -> (R, K), each in [0, 1]. It starts at the
    common tokens' share of P(.|n) (Z = 0) and falls as the attention scans onto the distinct
    tokens (Theorem 3); the distinct tokens get 1 - common_mass. A token in some but not all
    classes' contexts (hand-made classes) counts as common, with a ``SharedTokenWarning``."""
    Z = _check_Z_any(classes, Z, what)
    classes._warn_partly_shared("common_mass", stacklevel=_stacklevel() + 1)
    common = np.zeros(classes.M, bool)
    common[classes.common_tokens] = True
    c = np.exp(_log_attention(classes, Z))
    return np.sum(np.where(common, c, 0.0), axis=-1)


def _check_Z_any(classes: SequenceClasses, Z, what: str) -> np.ndarray:
    """As :func:`_check_Z`, for metrics that need no distinct tokens."""
    if not isinstance(classes, SequenceClasses):
        raise ValueError(f"classes must be a SequenceClasses, got {type(classes).__name__}")
    Z = finite(what, Z, runs=np.ndim(Z) == 3)
    if Z.ndim not in (2, 3) or Z.shape[-2:] != (classes.M, classes.M):
        raise ValueError(f"{what} must be (M, M) or (R, M, M) with M={classes.M}; got shape {Z.shape}")
    return Z


def transition_step(result) -> np.ndarray:
    """(R,) float: each run's observed end of the scan's first stage, the step where the
    common-token mass (:func:`common_mass`, averaged over the classes) falls fastest: with Z at
    steps s_0 < s_1 < ... (the result's snapshots, its end, and step 0 for ``init="zero"``, where
    Z = 0), the s_{i+1} of the steepest fall per step, (m(s_{i+1}) - m(s_i)) / (s_{i+1} - s_i).
    With every step kept (``train(..., snapshot_steps=range(steps + 1))``) that is
    ``1 + argmin(diff(m))``, exact to the step; with fewer snapshots it is known only to the
    interval (s_i, s_{i+1}] and reported as its end (an upper bound). NaN for a run whose common
    mass never falls (no common tokens), and for every run when there are fewer than three steps
    to compare (no snapshots: only step 0 and the end, one interval, no "fastest"). It is the measured
    counterpart of Theorem 4's t_0 on the optimiser's clock (``Prediction.t0_steps``), which
    :meth:`scansnap.theory.Prediction.compare` sets beside it (``transition_step``)."""
    classes = result._classes()
    Zs = dict(result.snapshots)
    last = int(result.loss.shape[1])
    Zs.setdefault(last, result.Z)
    if 0 not in Zs and result.config.get("init", "zero") == "zero":
        Zs[0] = np.zeros(tuple(result.Z.shape))
    steps = np.array(sorted(Zs), float)
    out = np.full(result.R, np.nan)
    if len(steps) < 3:
        return out
    m = np.stack([common_mass(classes, np.asarray(Zs[int(s)], float)).mean(axis=-1) for s in steps], axis=-1)
    rate = np.diff(m, axis=-1) / np.diff(steps)
    i = np.argmin(rate, axis=-1)
    falls = rate[np.arange(result.R), i] < 0
    out[falls] = steps[1:][i[falls]]
    return out
