"""Sequence classes: presets, counts path == sequence path, Lemma 2 / Lemma 18, invariants."""
import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

from scansnap import (YZModel, counts_from_tokens, make_classes, sample_counts,
                      sample_tokens, syn_medium, syn_small)
from scansnap.theory import hoeffding_radius


def test_syn_small_layout():
    c = syn_small()
    assert (c.K, c.M) == (2, 34)
    np.testing.assert_array_equal(c.common_tokens, np.arange(10))
    np.testing.assert_array_equal(c.distinct_tokens(0), np.arange(10, 20))
    np.testing.assert_array_equal(c.distinct_tokens(1), np.arange(20, 30))
    np.testing.assert_array_equal(c.query, [30, 31])
    np.testing.assert_array_equal(c.next_token, [32, 33])
    # authors' weights: common 1, distinct linspace(0.1, 1, 10), normalised by 15.5
    np.testing.assert_allclose(c.probs[0, :10], 1 / 15.5, rtol=1e-12)
    np.testing.assert_allclose(c.probs[0, 10:20], np.arange(1, 11) * 0.1 / 15.5, rtol=1e-12)


def test_syn_medium_layout():
    c = syn_medium(3)
    assert (c.K, c.M) == (6, 10 + 60 + 3 + 6)
    np.testing.assert_array_equal(c.query, [70, 70, 71, 71, 72, 72])
    assert list(c.psi_inverse(71)) == [2, 3]


@pytest.mark.parametrize("normalize,residual", [(True, False), (False, True)])
def test_counts_path_equals_sequence_path(normalize, residual):
    """No positional encoding: outputs and gradients depend only on counts (to 1e-10, float64)."""
    classes = syn_medium(3)
    m = YZModel(classes.M, 3, init="default", seeds=[1, 2, 3], normalize=normalize,
                residual=residual, dtype=torch.float64)
    g = torch.Generator().manual_seed(7)
    tb = sample_tokens(classes, 32, 50, g)
    grads = []
    for path in ("tokens", "counts"):
        m.zero_grad()
        if path == "tokens":
            out = m.forward_tokens(tb.tokens)
        else:
            out = m.forward_counts(counts_from_tokens(tb.tokens, classes.M, torch.float64), tb.tokens[:, -1])
        loss = m.loss(out, tb.labels)
        loss.sum().backward()
        grads.append((out.logits.detach(), loss.detach(), m.Y.grad.clone(), m.Z.grad.clone()))
    for a, b in zip(*grads):
        torch.testing.assert_close(a, b, atol=1e-10, rtol=0)


def test_sample_counts_is_the_same_batch():
    """Counts checked against a count made here (np.bincount), not against the function they call."""
    classes = syn_small()
    a = sample_tokens(classes, 8, 30, torch.Generator().manual_seed(3))
    b = sample_counts(classes, 8, 30, torch.Generator().manual_seed(3))
    ref = np.stack([np.bincount(row[:-1], minlength=classes.M) for row in a.tokens.numpy()])
    np.testing.assert_array_equal(b.counts.numpy(), ref)
    np.testing.assert_array_equal(counts_from_tokens(a.tokens, classes.M).numpy(), ref)
    assert torch.equal(a.labels, b.labels) and torch.equal(a.tokens[:, -1], b.query)
    assert torch.equal(a.classes, b.classes) and b.counts.dtype == torch.float32
    assert torch.all(b.counts.sum(1) == 29)
    c64 = sample_counts(classes, 8, 30, torch.Generator().manual_seed(3), dtype=torch.float64)
    assert c64.counts.dtype == torch.float64 and np.array_equal(c64.counts.numpy(), ref)


def test_counts_from_tokens_batched_and_exact():
    toks = torch.tensor([[[0, 0, 2, 1], [3, 3, 3, 0]], [[1, 2, 3, 2], [0, 1, 0, 3]]])   # (2, 2, T=4)
    c = counts_from_tokens(toks, 4)
    np.testing.assert_array_equal(c.numpy(), [[[2, 0, 1, 0], [0, 0, 0, 3]], [[0, 1, 1, 1], [2, 1, 0, 0]]])
    with pytest.raises(ValueError, match=r"token id 4 out of range \[0, 4\)"):
        counts_from_tokens(torch.tensor([[4, 0, 1]]), 4)
    assert counts_from_tokens(torch.tensor([[4, 0, 1]])[:, 1:], 4).tolist() == [[1, 0, 0, 0]]   # the query is not counted


def test_class_sampler_is_uniform_and_contexts_follow_P():
    """Classes uniform over K (the authors' sampler), contextual tokens i.i.d. from P(.|n)."""
    classes = syn_medium(3)                          # K = 6
    b = sample_tokens(classes, 12_000, 21, torch.Generator().manual_seed(5))
    freq = np.bincount(b.classes.numpy(), minlength=classes.K) / 12_000
    np.testing.assert_allclose(freq, 1 / 6, atol=0.015)                 # 4 sigma of a binomial
    chi2 = ((freq - 1 / 6) ** 2 / (1 / 6)).sum() * 12_000
    assert chi2 < 25                                                       # df 5: p ~ 1e-4
    for n in (0, 5):
        ctx = b.tokens[b.classes == n, :-1].numpy().ravel()
        emp = np.bincount(ctx, minlength=classes.M) / ctx.size
        np.testing.assert_allclose(emp, classes.probs[n], atol=0.01)
    np.testing.assert_array_equal(b.labels.numpy(), classes.next_token[b.classes.numpy()])


def test_frequencies_converge_within_hoeffding_band():
    """Lemma 2 / Lemma 18 (Eq. 136): q_l = count_l/(T-1) stays within sqrt(ln(2/delta)/(2(T-1)))."""
    classes = syn_small()
    g = torch.Generator().manual_seed(11)
    delta = 1e-6
    prev = None
    for T in (101, 1001, 10001):
        b = sample_counts(classes, 64, T, g, dtype=torch.float64)
        q = b.counts.numpy() / (T - 1)
        p = classes.probs[b.classes.numpy()]
        err = np.abs(q - p).max()
        assert err <= hoeffding_radius(T, delta), (T, err)
        if prev is not None:
            assert err < prev       # it shrinks as T grows (about 1/sqrt(T))
        prev = err


@st.composite
def class_tables(draw):
    return make_classes(num_last=draw(st.integers(1, 4)), num_next_per_last=draw(st.integers(1, 3)),
                        num_common=draw(st.integers(0, 5)), num_distinct=draw(st.integers(1, 6)),
                        common_weight=draw(st.floats(0.1, 5)),
                        distinct_min=draw(st.floats(0.01, 1)))


@settings(max_examples=40, deadline=None)
@given(class_tables(), st.integers(0, 2**31 - 1))
def test_sequence_class_invariants(c, seed):
    np.testing.assert_allclose(c.probs.sum(1), 1, atol=1e-12)
    # every token in a support is either common or distinct for exactly one class
    in_support = c.probs > 0
    distinct_owner = c.distinct_mask.sum(0)
    assert np.all(distinct_owner <= 1)
    common = np.zeros(c.M, bool)
    common[c.common_tokens] = True
    np.testing.assert_array_equal(in_support.any(0), common | (distinct_owner == 1))
    assert not np.any(common & (distinct_owner == 1))
    # psi is a function: one query per next token, and psi^{-1} partitions the classes
    parts = np.concatenate([c.psi_inverse(m) for m in np.unique(c.query)])
    np.testing.assert_array_equal(np.sort(parts), np.arange(c.K))
    # samples: contextual tokens in their class's support, query and label consistent
    b = sample_tokens(c, 16, 12, torch.Generator().manual_seed(seed))
    cls = b.classes.numpy()
    ctx = b.tokens[:, :-1].numpy()
    assert np.all(c.probs[cls[:, None], ctx] > 0)
    np.testing.assert_array_equal(b.tokens[:, -1].numpy(), c.query[cls])
    np.testing.assert_array_equal(b.labels.numpy(), c.next_token[cls])
