"""The fast paths against their references: the support sampler against torch.multinomial
(bit for bit), the support path's Lemma 1 gradients and training against the dense counts
path (float64, to rounding), and the batched WikiText trainer against one run at a time."""
import numpy as np
import pytest
import torch

from scansnap import (SequenceClasses, YZModel, counts_from_tokens, make_classes, sample_tokens,
                      syn_medium, syn_small, train)
from scansnap.data import one_query, sample_support, support_table
from scansnap.model import SupportYZ

TOL = 1e-12   # float64; the paths differ only in the order of summation


def _random_classes(rng, K, M, zero_first=False):
    """A class table with arbitrary supports (shared and own tokens interleaved, unequal sizes)."""
    p = rng.random((K, M)) * (rng.random((K, M)) < 0.4)
    p[np.arange(K), rng.integers(0, M, K)] += rng.random(K) + 1e-3
    if zero_first:
        p[:, 0] = 0
        p[np.arange(K), rng.integers(1, M, K)] += 0.5
    p /= p.sum(1, keepdims=True)
    return SequenceClasses(p, rng.integers(0, M, K), rng.permutation(M)[:K])


def _tables():
    rng = np.random.default_rng(5)
    return ([syn_small(), syn_medium(1), syn_medium(10), one_query(), make_classes(3, 2, num_common=0),
             make_classes(2, 1, num_distinct=0)]
            + [_random_classes(rng, int(rng.integers(1, 6)), int(rng.integers(3, 30)), i % 2 == 0)
               for i in range(8)])


def _full_counts(table, sb, M):
    """Slot counts (S, B, s) back to counts over the M tokens (S, B, M)."""
    cols = table.cols[sb.classes]
    return torch.zeros(*sb.classes.shape, M, dtype=sb.counts.dtype).scatter_add_(2, cols, sb.counts)


@pytest.mark.parametrize("c", _tables(), ids=repr)
@pytest.mark.parametrize("T", [2, 3, 40])
def test_support_sampler_draws_multinomials_tokens(c, T):
    """Same generator state -> the same tokens as sample_tokens (torch.multinomial), the
    same labels and classes, and the generator left in the same state."""
    table = support_table(c)
    for seed in (0, 1, 2):
        g1, g2 = torch.Generator().manual_seed(seed), torch.Generator().manual_seed(seed)
        tb = sample_tokens(c, 24, T, g1)
        sb = sample_support(c, 24, T, [g2], table, dtype=torch.float64)
        assert torch.equal(_full_counts(table, sb, c.M)[0], counts_from_tokens(tb.tokens, c.M, torch.float64))
        assert torch.equal(sb.classes[0], tb.classes) and torch.equal(sb.labels[0], tb.labels)
        assert torch.equal(sb.query[0], tb.tokens[:, -1])
        assert torch.equal(torch.rand(4, generator=g1), torch.rand(4, generator=g2))
        assert torch.all(sb.counts.sum(-1) == T - 1)


def test_support_sampler_several_seeds_at_once():
    c = syn_medium(5)
    table = support_table(c)
    gens = [torch.Generator().manual_seed(s) for s in (3, 4, 5)]
    sb = sample_support(c, 16, 50, gens, table)
    for i, s in enumerate((3, 4, 5)):
        tb = sample_tokens(c, 16, 50, torch.Generator().manual_seed(s))
        assert torch.equal(_full_counts(table, sb, c.M)[i], counts_from_tokens(tb.tokens, c.M))


def test_support_table_slots():
    c = syn_medium(3)
    t = support_table(c)
    assert (t.n_shared, t.own_width) == (10, 10) and t.plain
    for n in range(c.K):   # slots: the common tokens, then the class's distinct tokens
        np.testing.assert_array_equal(t.cols[n].numpy(), np.r_[c.common_tokens, c.distinct_tokens(n)])
    tq = support_table(c, with_query=True)
    assert all(int(tq.cols[n, tq.query_slot[n]]) == c.query[n] for n in range(c.K))


@pytest.mark.parametrize("c", _tables()[:6] + _tables()[7:11], ids=repr)
@pytest.mark.parametrize("normalize", [True, False])
def test_support_gradients_equal_lemma1_dense(c, normalize):
    """SupportYZ.grads == YZModel.lemma1_grads on the same batches (float64): loss, dJ/dY, dJ/dZ."""
    R, S, B, T = 5, 2, 24, 30
    m = YZModel(c.M, R, init="default", seeds=[1, 2, 3, 4, 5], normalize=normalize, dtype=torch.float64)
    with torch.no_grad():   # away from the near-uniform start, so that every term matters
        m.Y.mul_(5)
        m.Z.mul_(5)
    table = support_table(c)
    group = torch.tensor([0, 1, 0, 1, 1])
    sb = sample_support(c, B, T, [torch.Generator().manual_seed(s) for s in range(S)], table, dtype=torch.float64)
    sup = SupportYZ(m, c, table)
    loss = sup.grads(sb.counts.log(), sb.classes, group)
    tokens = torch.stack([sample_tokens(c, B, T, torch.Generator().manual_seed(s)).tokens for s in range(S)])
    ref = m.lemma1_grads(counts_from_tokens(tokens, c.M, torch.float64).log()[group], tokens[group][..., -1],
                         torch.as_tensor(c.next_token.copy())[sb.classes[group]])
    torch.testing.assert_close(loss, ref, atol=TOL, rtol=0)
    gY, gZ = torch.zeros_like(m.Y), torch.zeros_like(m.Z)
    with torch.no_grad():   # the packed gradients, written back in place of Y and Z
        sup.Ys.copy_(sup.Ys.grad)
        sup.Yo.copy_(sup.Yo.grad if sup.o else sup.Yo)
        sup.Za.copy_(sup.Za.grad)
    sup.store(gY, gZ)
    torch.testing.assert_close(gY, m.Y.grad, atol=TOL, rtol=0)
    torch.testing.assert_close(gZ, m.Z.grad, atol=TOL, rtol=0)


@pytest.mark.parametrize("optimizer,init,normalize", [("sgd", "default", True), ("adam", "zero", True),
                                                      ("sgd", "zero", False)])
def test_support_training_equals_counts_training(optimizer, init, normalize):
    """Whole runs: losses, final Y and Z and snapshots of the support path == the counts path."""
    c = syn_medium(3)
    kw = dict(eta_y=[0.5, 2, 5, 1], eta_z=[0.5, 1, 1, 3], seeds=[1, 2, 1, 3], steps=40, batch=32, T=64,
              optimizer=optimizer, init=init, normalize=normalize, snapshot_steps=[0, 13, 40], dtype=torch.float64)
    a, b = train(c, path="counts", **kw), train(c, path="support", **kw)
    assert a.config["path"] == "counts" and b.config["path"] == "support"
    # Adam divides by sqrt(v): float64 rounding of the two summation orders reached 4e-10 on one
    # element of Z on another CPU (16 cores, torch 2.11); SGD stays under 1e-10. A wrong term is >1e-3.
    tol = 1e-8 if optimizer == "adam" else 1e-10
    np.testing.assert_allclose(b.loss, a.loss, atol=tol, rtol=0)
    torch.testing.assert_close(b.Y, a.Y, atol=tol, rtol=tol)   # Adam's Y grows to ~20
    torch.testing.assert_close(b.Z, a.Z, atol=tol, rtol=tol)
    for s in (0, 13, 40):
        torch.testing.assert_close(b.snapshots[s], a.snapshots[s], atol=tol, rtol=tol)


def test_paths_and_their_limits():
    """The dense counts path stays the default (the book's numbers); the Fig. 6 sweep uses support."""
    from scansnap.experiments import syn_medium_sweep
    c = syn_small()
    assert train(c, steps=2).config["path"] == "counts"
    assert train(c, steps=2, path="support").config["path"] == "support"
    sweep = syn_medium_sweep(num_last=(1, 3), eta_z=(1,), ratio=(1,), seeds=(1,), steps=2)
    assert sweep[1][1].config["path"] == "counts" and sweep[3][1].config["path"] == "support"
    with pytest.raises(ValueError, match="path='support'"):
        train(c, steps=2, path="support", residual=True)
    with pytest.raises(ValueError, match="path='support'"):
        train(c, steps=2, path="support", grad="autograd")
    with pytest.raises(ValueError, match="unknown path 'auto'"):
        train(c, steps=2, path="auto")


def test_support_float32_close_to_counts():
    """The default float32: the two paths' summation orders give the same Fig. 6 entropies to 1e-5."""
    from scansnap.metrics import distinct_entropy
    c = syn_medium(5)
    kw = dict(eta_y=[1, 5, 10, 20], eta_z=[1, 1, 2, 2], seeds=[1, 2, 3, 4], steps=100, init="default")
    a, b = train(c, path="counts", **kw), train(c, path="support", **kw)
    np.testing.assert_allclose(distinct_entropy(c, b.Z), distinct_entropy(c, a.Z), atol=1e-5, rtol=0)
    np.testing.assert_allclose(b.loss, a.loss, atol=1e-4, rtol=0)
