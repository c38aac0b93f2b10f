import numpy as np
import pytest
import torch

from scansnap import syn_medium, syn_small, make_classes
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
    assert e.shape == (3,) and e[0] == pytest.approx(e[2], abs=1e-12) and e[1] < 1e-20


def test_distinct_entropy_averages_over_classes():
    """Two classes, one sparse (entropy ~0) and one uniform over 4 tokens (ln 4): the mean is ln 4 / 2."""
    c = make_classes(num_last=2, num_next_per_last=1, num_common=1, num_distinct=4,
                     distinct_min=1.0, distinct_max=1.0)
    Z = np.zeros((c.M, c.M))
    Z[c.query[0], c.distinct_tokens(0)[2]] = 80.0
    assert distinct_entropy(c, Z) == pytest.approx(np.log(4) / 2, abs=1e-12)
    # the common token does not count: moving attention to it leaves the distinct entropy alone
    Z2 = Z.copy()
    Z2[c.query[1], c.common_tokens[0]] = 5.0
    assert distinct_entropy(c, Z2) == pytest.approx(np.log(4) / 2, abs=1e-12)


def test_attention_entropy_values():
    a = torch.full((2, 5, 5), 0.2)
    assert attention_entropy(a, causal=False) == pytest.approx(np.log(5), abs=1e-6)
    causal = torch.tril(torch.ones(4, 4))
    causal = causal / causal.sum(-1, keepdim=True)     # row i uniform over i+1 keys
    want = np.mean([np.log(i + 1) for i in range(4)])
    assert attention_entropy(causal) == pytest.approx(want, abs=1e-6)
    assert attention_entropy(np.eye(3)) == 0.0
    with pytest.raises(ValueError, match="must be \\(..., T, T\\)"):
        attention_entropy(np.ones((3, 4)) / 4)


@pytest.mark.parametrize("bad, match", [
    (np.array([[1.0, 0], [np.nan, 0.5]]), r"attention maps is not finite at index \(1, 0\)"),
    (np.array([[1.0, 0], [np.inf, 0.5]]), r"not finite"),
    (np.array([[1.0, 0], [0.3, 0.3]]), r"row \(1,\) sums to 0\.6"),
    (np.array([[1.0, 0], [0.8, 0.4]]), r"row \(1,\) sums to 1\.2"),
    (np.array([[1.0, 0], [-0.5, 1.5]]), r"probabilities in \[0, 1\]"),
    (np.array([[0.5, 0.5], [0.5, 0.5]]), r"above the diagonal: not causal"),
])
def test_attention_entropy_refuses_what_is_not_attention(bad, match):
    with pytest.raises(ValueError, match=match):
        attention_entropy(bad)


def test_a_diverged_run_is_no_entropy():
    """NaN in one run's Z: a ValueError naming that run, never an entropy of 0 (the best value)."""
    c = syn_medium(1)
    Z = np.zeros((4, c.M, c.M))
    Z[2, c.query[0], 5] = np.nan
    with pytest.raises(ValueError, match=r"Z is not finite at run 2 "):
        distinct_entropy(c, Z)
    with pytest.raises(ValueError, match=r"Z is not finite at run 2 "):
        recall_threshold(c, Z, [0.01])
    Z[2, c.query[0], 5] = np.inf
    with pytest.raises(ValueError, match=r"run 2"):
        distinct_entropy(c, torch.tensor(Z))
    with pytest.raises(ValueError, match=r"Z of lr 5 is not finite at index"):
        distinct_entropy(c, Z[2], what="Z of lr 5")
    with pytest.raises(ValueError, match=r"must be \(M, M\) or \(R, M, M\) with M=33"):
        distinct_entropy(c, np.zeros((c.M, c.M + 1)))


def test_recall_threshold_values():
    """Hand-made Z: class n's query row puts weight on its first 3 distinct tokens only."""
    c = syn_medium(1)                             # K = 2, M = 33, 10 distinct tokens per class
    Z = np.zeros((c.M, c.M))
    for n in range(c.K):
        Z[c.query[n], c.distinct_tokens(n)[:3]] = 5.0
    th = [0.0, 0.5 / c.M, 1.0 / c.M, 2.0 / c.M, 0.99]
    r = recall_threshold(c, Z, th)
    # each row: 3 tokens at e^5/S, 30 at 1/S with S = 3 e^5 + 30; 1/S < 0.5/M < e^5/S < 0.99
    assert np.exp(5) / (3 * np.exp(5) + 30) > 2.0 / c.M and 1 / (3 * np.exp(5) + 30) < 0.5 / c.M
    np.testing.assert_allclose(r, [1.0, 0.3, 0.3, 0.3, 0.0], atol=1e-12)
    rb = recall_threshold(c, np.stack([Z, np.zeros_like(Z)]), th)
    assert rb.shape == (2, 5)
    np.testing.assert_allclose(rb[1], [1.0, 1.0, 0.0, 0.0, 0.0], atol=1e-12)   # uniform 1/M: not > 1/M


def test_recall_threshold_is_a_mean_over_classes():
    """Classes with 2 and 4 distinct tokens: recall is the mean of the per-class fractions
    (1/2 and 3/4: 0.625), not the fraction of all distinct tokens pooled (4/6)."""
    from scansnap import SequenceClasses
    probs = np.zeros((2, 11))
    probs[0, [0, 1, 2]] = [0.5, 0.25, 0.25]
    probs[1, [0, 3, 4, 5, 6]] = [0.2, 0.2, 0.2, 0.2, 0.2]
    c = SequenceClasses(probs, query=[7, 8], next_token=[9, 10])
    Z = np.zeros((11, 11))
    Z[7, 1] = 5.0
    Z[8, [3, 4, 5]] = 5.0
    np.testing.assert_allclose(recall_threshold(c, Z, [0.05, 0.5, 0.9]), [0.625, 0.25, 0.5 * 0.5], atol=1e-12)


def test_recall_threshold_monotone():
    c = syn_small()
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(c.M, c.M))
    th = np.linspace(0, 0.2, 30)
    r = recall_threshold(c, Z, th)
    assert r[0] == 1.0 and r[-1] < 1.0 and np.all(np.diff(r) <= 0)


def test_metrics_refuse_bad_classes_and_thresholds():
    from scansnap import SequenceClasses
    c = syn_small()
    Z = np.zeros((c.M, c.M))
    for f in (lambda: distinct_entropy("syn_small", Z), lambda: recall_threshold([], Z, [0.1])):
        with pytest.raises(ValueError, match=r"classes must be a SequenceClasses, got (str|list)"):
            f()
    # class 1 has only the common token: no distinct tokens, so no distinct-token metric
    probs = np.zeros((2, 6))
    probs[0, [0, 1]] = 0.5
    probs[1, 0] = 1.0
    only_common = SequenceClasses(probs, query=[2, 3], next_token=[4, 5])
    for f in (distinct_entropy, lambda cl, z: recall_threshold(cl, z, [0.1])):
        with pytest.raises(ValueError, match=r"^class 1 has no distinct tokens"):
            f(only_common, np.zeros((6, 6)))
    with pytest.raises(ValueError, match=r"thresholds is not finite at index \(1,\)"):
        recall_threshold(c, Z, [0.1, np.nan])
    with pytest.raises(ValueError, match=r"thresholds must be a 1-d list of numbers, got shape \(2, 2\)"):
        recall_threshold(c, Z, [[0.1, 0.2], [0.3, 0.4]])


def test_recall_threshold_with_huge_logits():
    """A logit of 1000 in one class's row and none in the other: each row is its own softmax
    (no overflow, no underflow of the other row to 0/0)."""
    c = syn_small()                             # two classes, two query tokens
    Z = np.zeros((c.M, c.M))
    Z[c.query[0], c.distinct_tokens(0)[0]] = 1000.0
    r = recall_threshold(c, Z, [0.5 / c.M, 0.5])
    np.testing.assert_allclose(r, [(0.1 + 1.0) / 2, 0.1 / 2], atol=1e-12)
    rs = recall_threshold(c, np.stack([Z, Z]), [0.5 / c.M, 0.5])              # a stack of runs: the same
    np.testing.assert_allclose(rs, [r, r], atol=1e-12)


def test_attention_entropy_edges():
    assert attention_entropy(np.ones((1, 1))) == 0.0                          # one key: certain
    with pytest.raises(ValueError, match=r"attention maps are empty: shape \(0, 3, 3\)"):
        attention_entropy(np.zeros((0, 3, 3)))
    with pytest.raises(ValueError, match=r"probabilities in \[0, 1\]; found (np\.float64\()?1\.5\)?$"):
        attention_entropy(np.array([[1.5, 0.0], [0.5, 0.5]]))                   # too large, none negative
    with pytest.raises(ValueError, match=r"probabilities in \[0, 1\]; found (np\.float64\()?-0\.5\)?$"):
        attention_entropy(np.array([[1.0, 0.0], [-0.5, 1.5]]))
    # inside the tolerance (a map read back from a CSV with 6 digits): accepted
    assert np.isfinite(attention_entropy(np.array([[1.001, 0.0], [0.5, 0.5]])))
