"""What the paper measures (Sec. 8, App. G): entropies and the recall-threshold curve."""
from __future__ import annotations

import numpy as np
import torch

from .data import SequenceClasses
from .theory import attention_limit_all


def _entropy(p, axis=-1):
    p = np.asarray(p, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return -np.sum(np.where(p > 0, p * np.log(p), 0.0), axis=axis)


def _as_numpy(Z):
    return Z.detach().cpu().double().numpy() if isinstance(Z, torch.Tensor) else np.asarray(Z, float)


def distinct_entropy(classes: SequenceClasses, Z) -> np.ndarray:
    """Fig. 6: entropy of c_n restricted to G_DT(n) and renormalised, averaged over n.

    Z is (M, M) or (R, M, M); returns a float or (R,). c_n is the long-sequence attention
    of Eq. 5 (natural log). Lower entropy = sparser attention on the distinct tokens.
    """
    c = attention_limit_all(classes, _as_numpy(Z))            # (..., K, M)
    mask = classes.distinct_mask
    if not mask.any(axis=1).all():
        n = int(np.flatnonzero(~mask.any(axis=1))[0])
        raise ValueError(f"class {n} has no distinct tokens: its distinct entropy is undefined")
    d = np.where(mask, c, 0.0)
    d = d / d.sum(axis=-1, keepdims=True)
    return _entropy(d).mean(axis=-1)


def attention_entropy(attn, causal: bool = True) -> float:
    """-sum_j a_ij log a_ij averaged over queries i (and batch, heads) of attention maps (..., T, T)."""
    a = _as_numpy(attn)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"attention maps must be (..., T, T); got shape {a.shape}")
    return float(_entropy(a).mean())


def recall_threshold(classes: SequenceClasses, Z, thresholds) -> np.ndarray:
    """Figs. 11-12: mark each attention weight 1 if above a threshold; recall of distinct tokens.

    For query m = psi(n) the attention weights are softmax(z_m) over the M tokens (so the
    uniform level is 1/M); recall(th) = mean over n of |{l in G_DT(n): a_ml > th}| / |G_DT(n)|.
    Returns (len(thresholds),) or (R, len(thresholds)).
    """
    Z = _as_numpy(Z)
    rows = Z[..., classes.query, :]
    a = np.exp(rows - rows.max(-1, keepdims=True))
    a /= a.sum(-1, keepdims=True)                              # (..., K, M)
    th = np.asarray(thresholds, float)
    mask = classes.distinct_mask
    hit = (a[..., None, :, :] > th[:, None, None]) & mask      # (..., n_th, K, M)
    return (hit.sum(-1) / mask.sum(-1)).mean(-1)
