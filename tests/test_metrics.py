import numpy as np
import pytest
import torch

from scansnap import syn_medium, syn_small
from scansnap.metrics import attention_entropy, distinct_entropy, recall_threshold


def test_distinct_entropy_at_zero_init():
    """Z = 0: c_n on distinct tokens is P(l|n) renormalised, i.e. linspace(0.1, 1, 10)/5.5."""
    c = syn_small()
    w = np.linspace(0.1, 1, 10); w /= w.sum()
    assert distinct_entropy(c, np.zeros((c.M, c.M))) == pytest.approx(-(w * np.log(w)).sum(), abs=1e-12)


def test_distinct_entropy_batched_and_sparse():
    c = syn_medium(1)
    Z = np.zeros((3, c.M, c.M))
    for n in range(c.K):                      # put all attention on one distinct token per class
        Z[1, c.query[n], c.distinct_tokens(n)[0]] = 60.0
    e = distinct_entropy(c, torch.tensor(Z))
    assert e.shape == (3,) and e[0] == pytest.approx(e[2]) and e[1] < 1e-20


def test_attention_entropy_uniform():
    a = torch.full((2, 5, 5), 0.2)
    assert attention_entropy(a) == pytest.approx(np.log(5))
    with pytest.raises(ValueError, match="must be \\(..., T, T\\)"):
        attention_entropy(np.ones((3, 4)))


def test_recall_threshold_monotone():
    c = syn_small()
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(c.M, c.M))
    th = np.linspace(0, 0.2, 30)
    r = recall_threshold(c, Z, th)
    assert r[0] == 1.0 and r[-1] < 1.0 and np.all(np.diff(r) <= 0)
