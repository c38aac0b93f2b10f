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
    loss = sup.grads(sb.counts, sb.classes, group)
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
    """The dense counts path stays the default (the book's numbers); the Fig. 6 sweep uses support
    at every num_last (faster on 2 cores even at M = 33, bench/fig6.md)."""
    from scansnap.experiments import syn_medium_sweep
    c = syn_small()
    assert train(c, steps=2).config["path"] == "counts"
    assert train(c, steps=2, path="support").config["path"] == "support"
    sweep = syn_medium_sweep(num_last=(1, 3), eta_z=(1,), ratio=(1,), seeds=(1,), steps=2)
    assert sweep[1][1].config["path"] == "support" and sweep[3][1].config["path"] == "support"
    assert syn_medium_sweep(num_last=(1,), eta_z=(1,), ratio=(1,), seeds=(1,), steps=2,
                            path="counts")[1][1].config["path"] == "counts"
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


# --- the speed-ups of the Fig. 6 sweep (issue 12): each must change no number -----------------

def test_cdf_bucket_lookup_is_searchsorted():
    """The support sampler's O(1) lookup gives torch.searchsorted's position for every u,
    the boundaries themselves and their float64 neighbours included; a table whose class has
    two boundaries in one bucket has no lookup and falls back to searchsorted."""
    from scansnap.data import CDF_BUCKETS, _cdf_position
    looked = 0
    for c in _tables():
        t = support_table(c)
        if t.bucket is None:
            continue
        looked += 1
        K, p = t.cum.shape
        g = torch.Generator().manual_seed(0)
        cls = torch.randint(K, (3, 7), generator=g)
        u = torch.rand(3, 7, 500, dtype=torch.float64, generator=g)
        edges = t.cum[cls][..., :].clamp(max=1 - 2 ** -53)                 # (3, 7, p): every boundary
        edges = torch.where(torch.isfinite(edges), edges, 0.5)
        u = torch.cat([u, edges, torch.nextafter(edges, torch.zeros(())), torch.nextafter(edges, torch.ones(())),
                       torch.full((3, 7, 1), 0.0, dtype=torch.float64),
                       torch.full((3, 7, 1), 1 - 2 ** -53, dtype=torch.float64),
                       torch.full((3, 7, 1), 1.0, dtype=torch.float64),
                       (torch.arange(CDF_BUCKETS, dtype=torch.float64) / CDF_BUCKETS).expand(3, 7, -1)], -1)
        ref = torch.searchsorted(t.cum[cls], u)
        assert torch.equal(_cdf_position(t, cls, u), ref), repr(c)
    assert looked >= 8
    # boundaries in the last two buckets (4094 and 4095): u in the last bucket passes both
    t = support_table(SequenceClasses(np.array([[0.9996, 0.00025, 0.00015]]), np.array([0]), np.array([1])))
    assert t.bucket is not None
    u = torch.tensor([[[0.9997, 0.99984, 0.99986, 0.9999, 1 - 2 ** -53]]], dtype=torch.float64)
    cls = torch.zeros(1, 1, dtype=torch.long)
    assert torch.equal(_cdf_position(t, cls, u), torch.searchsorted(t.cum[cls], u))
    assert _cdf_position(t, cls, u).tolist() == [[[1, 1, 2, 2, 2]]]
    # a token of probability 1e-6 puts two boundaries into one bucket: no lookup, same draws
    p = np.array([[0.5, 1e-6, 0.5 - 1e-6, 0.0], [0.0, 0.25, 0.25, 0.5]])
    c = SequenceClasses(p, np.array([3, 0]), np.array([0, 3]))
    t = support_table(c)
    assert t.bucket is None
    g1, g2 = torch.Generator().manual_seed(1), torch.Generator().manual_seed(1)
    sb = sample_support(c, 64, 200, [g2], t, dtype=torch.float64)
    assert torch.equal(_full_counts(t, sb, c.M)[0],
                       counts_from_tokens(sample_tokens(c, 64, 200, g1).tokens, c.M, torch.float64))
    # the same with every class alike (a plain table): torch.searchsorted on the one row
    p = np.array([[0.5, 1e-6, 0.5 - 1e-6, 0.0], [0.5, 1e-6, 0.5 - 1e-6, 0.0]])
    c = SequenceClasses(p, np.array([3, 3]), np.array([0, 1]))
    t = support_table(c)
    assert t.bucket is None and t.plain
    g1, g2 = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    sb = sample_support(c, 64, 200, [g2], t, dtype=torch.float64)
    assert torch.equal(_full_counts(t, sb, c.M)[0],
                       counts_from_tokens(sample_tokens(c, 64, 200, g1).tokens, c.M, torch.float64))


@pytest.mark.parametrize("path,dtype", [("counts", torch.float32), ("support", torch.float32),
                                        ("support", torch.float64)])
def test_runs_split_over_threads_change_no_bit(path, dtype):
    """train(workers=k) trains the runs in k threads: with Lemma 1's gradients, every loss,
    Y, Z and snapshot is bit-for-bit that of one thread (a grid of rates and seeds)."""
    c = syn_medium(3)
    ey, ez = np.repeat([0.5, 2.0, 5.0, 1.0], 3), np.tile([0.5, 1.0, 3.0], 4)
    kw = dict(eta_y=np.r_[ey, ey], eta_z=np.r_[ez, ez], seeds=np.repeat([1, 2], 12), steps=12, batch=16,
              T=32, init="default", path=path, snapshot_steps=[0, 5, 12], dtype=dtype)
    one = train(c, workers=1, **kw)
    for k in (2, 3):
        many = train(c, workers=k, **kw)
        np.testing.assert_array_equal(many.loss, one.loss)
        assert torch.equal(many.Y, one.Y) and torch.equal(many.Z, one.Z)
        assert all(torch.equal(many.snapshots[s], one.snapshots[s]) for s in (0, 5, 12))
        np.testing.assert_array_equal(many.seed, one.seed)
        assert many.Y.dtype == many.Z.dtype == many.snapshots[5].dtype == dtype


@pytest.mark.parametrize("path,optimizer,momentum", [("support", "sgd", 0.9), ("support", "sgd", 0.0),
                                                   ("counts", "sgd", 0.9), ("support", "adam", 0.9)])
def test_a_runs_bits_do_not_depend_on_the_runs_beside_it(path, optimizer, momentum):
    """Any subset of a grid, trained alone, gives its runs' bits in the whole grid: what a torchrun
    rank computes (its seeds) or a thread (its set). At M = 33 a run's packed rows are no whole
    number of SIMD vectors, so the last run of a batch fell in the fused SGD kernel's scalar tail,
    which rounds m * momentum + g once (an FMA) where the vectors round twice (a researcher's
    uneven torchrun split differed from one process in the 9th digit)."""
    c = syn_medium(1)                                  # M = 33
    ey, ez = np.tile(np.repeat([1.0, 5.0], 2), 3), np.tile([0.5, 2.0], 6)
    seeds = np.repeat([1, 2, 3], 4)
    kw = dict(steps=4, batch=16, T=32, init="default", path=path, optimizer=optimizer, momentum=momentum,
              snapshot_steps=[2])
    whole = train(c, eta_y=ey, eta_z=ez, seeds=seeds, workers=1, **kw)
    for runs in (seeds == 2, seeds != 2, np.arange(12) < 5, np.arange(12) % 3 == 1):
        part = train(c, eta_y=ey[runs], eta_z=ez[runs], seeds=seeds[runs], workers=1, **kw)
        t = torch.as_tensor(runs)
        assert torch.equal(part.Z, whole.Z[t]) and torch.equal(part.Y, whole.Y[t]), np.flatnonzero(runs)
        assert torch.equal(part.snapshots[2], whole.snapshots[2][t])
        np.testing.assert_array_equal(part.loss, whole.loss[runs])
    for k in (2, 5):                                   # uneven sets of runs on threads
        split = train(c, eta_y=ey, eta_z=ez, seeds=seeds, workers=k, **kw)
        assert torch.equal(split.Z, whole.Z) and torch.equal(split.Y, whole.Y), k


def test_how_runs_are_split(monkeypatch):
    from scansnap.train import _chunks, _workers
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    monkeypatch.setattr(torch, "get_num_threads", lambda: 4)
    assert _workers(None, 160, cpu, "lemma1") == 4                  # one per torch thread
    assert _workers(None, 20, cpu, "lemma1") == 2                   # at most one per 8 runs
    assert _workers(None, 7, cpu, "lemma1") == 1                    # too few runs for a second thread
    assert _workers(None, 160, cpu, "autograd") == 1                # its last bits follow the thread count
    assert _workers(None, 160, cuda, "lemma1") == 1
    assert _workers(None, 160, cuda, "autograd") == 1
    assert _workers(3, 160, cpu, "autograd") == 3
    monkeypatch.undo()
    with pytest.raises(ValueError, match=r"^workers must be an integer >= 1, got 0"):
        train(syn_small(), steps=2, workers=0)
    seeds = np.repeat([4, 1, 3], [5, 4, 3])
    for k in (1, 2, 3, 5, 20):
        parts = _chunks(seeds, k)
        assert len(parts) == min(k, len(seeds))
        np.testing.assert_array_equal(np.sort(np.concatenate(parts)), np.arange(len(seeds)))
        sizes = [len(p) for p in parts]
        assert max(sizes) - min(sizes) <= 1
    assert [sorted(set(seeds[p])) for p in _chunks(seeds, 3)] == [[1], [3, 4], [4]]   # a seed's runs stay together where they can


def test_support_path_underflow_takes_the_log_domain():
    """c = count * exp(z) / sum is computed from exp(z - max z) per class row: when every slot a
    sequence holds is > 745 below the row's largest z (float64), all its products underflow,
    and the path must fall back to the softmax in the log domain, not return NaN."""
    c = syn_medium(1)
    R, B, T = 2, 16, 4       # 3 tokens a sequence: most slots of a sequence hold no token
    m = YZModel(c.M, R, init="default", seeds=[1, 2], dtype=torch.float64)
    table = support_table(c)
    with torch.no_grad():
        for n in range(c.K):   # one slot of every class row far above the rest
            m.Z[:, c.query[n], table.cols[n, 0]] = 1000.0
    sb = sample_support(c, B, T, [torch.Generator().manual_seed(0)], table, dtype=torch.float64)
    group = torch.tensor([0, 0])
    assert bool((sb.counts[..., 0] == 0).any())   # some sequence lacks that slot: its products underflow
    sup = SupportYZ(m, c, table)
    loss = sup.grads(sb.counts, sb.classes, group)
    tokens = sample_tokens(c, B, T, torch.Generator().manual_seed(0)).tokens[None]
    ref = m.lemma1_grads(counts_from_tokens(tokens, c.M, torch.float64).log()[group], tokens[group][..., -1],
                         torch.as_tensor(c.next_token.copy())[sb.classes[group]])
    assert torch.isfinite(loss).all()
    torch.testing.assert_close(loss, ref, atol=TOL, rtol=0)
    gZ = torch.zeros_like(m.Z)
    with torch.no_grad():
        sup.Za.copy_(sup.Za.grad)
    sup.store(torch.zeros_like(m.Y), gZ)
    torch.testing.assert_close(gZ, m.Z.grad, atol=TOL, rtol=0)


def test_keep_freed_memory_asks_glibc_once(monkeypatch):
    """The two mallopt(3) settings, on libc.so.6, once; without glibc, nothing and no error."""
    import scansnap._cpu as tr
    calls = []

    class FakeLibc:
        def mallopt(self, param, value):
            calls.append((param, value))
            return 1
    monkeypatch.setattr(tr, "_MALLOC_SET", [])
    monkeypatch.setattr(tr.ctypes, "CDLL", lambda name: calls.append(name) or FakeLibc())
    tr.keep_freed_memory()
    tr.keep_freed_memory()
    assert calls == ["libc.so.6", (-3, 32 * 2 ** 20), (-1, 2 ** 30)]   # M_MMAP_THRESHOLD, M_TRIM_THRESHOLD
    assert tr._MALLOC_SET == [True]

    def no_glibc(name):
        raise OSError(f"{name}: cannot open shared object file")
    monkeypatch.setattr(tr, "_MALLOC_SET", [])
    monkeypatch.setattr(tr.ctypes, "CDLL", no_glibc)
    tr.keep_freed_memory()
    assert tr._MALLOC_SET == [True]


def test_cpu_training_keeps_freed_memory_once():
    """train() on a CPU sets glibc's malloc to keep freed blocks (no page faults per step's
    temporaries), once per process; calling it again changes nothing."""
    import scansnap._cpu as tr
    train(syn_small(), steps=1)
    assert tr._MALLOC_SET == [True]
    tr.keep_freed_memory()
    assert tr._MALLOC_SET == [True]


def test_an_error_in_one_thread_stops_the_others(monkeypatch):
    """A failure in one set of runs is raised by train(), and the other set stops at its next
    step instead of training to the end (so does a Ctrl-C in the caller)."""
    import sys
    import threading
    tr = sys.modules["scansnap.train"]
    real, calls = tr.sample_support, {}
    failed = threading.Event()

    def flaky(classes, batch, T, gens, *a, **k):
        name = threading.current_thread().name
        calls[name] = calls.get(name, 0) + 1
        first = next(iter(calls))
        if name != first:            # the second set fails at its first step...
            failed.set()
            raise RuntimeError("a planted failure")
        if calls[name] == 2:         # ...while the first is still training
            assert failed.wait(timeout=60)
        return real(classes, batch, T, gens, *a, **k)
    monkeypatch.setattr(tr, "sample_support", flaky)
    ey, ez = np.repeat([0.5, 1.0, 2.0, 4.0], 4), np.tile([0.5, 1.0, 2.0, 3.0], 4)
    with pytest.raises(RuntimeError, match="a planted failure"):
        train(syn_medium(3), eta_y=ey, eta_z=ez, seeds=np.repeat([1, 2], 8), steps=400, batch=8, T=16,
              init="default", path="support", workers=2)
    assert len(calls) == 2 and max(calls.values()) < 400


def test_train_splits_by_default_and_advances_the_bar_once_a_step(monkeypatch):
    """train() with Lemma 1's gradients on a CPU of two torch threads splits 24 runs over two
    threads by default (with autograd it does not), and the progress bar it is given moves
    once per step, not once per thread's step."""
    import sys
    import threading
    tr = sys.modules["scansnap.train"]
    real, names = tr._train_runs, []
    # the two chunks wait for each other: on a loaded machine the pool could otherwise finish the
    # first before the second is submitted and reuse its one thread (then nothing runs side by side)
    both = threading.Barrier(2, timeout=30)

    def spy(*a, **k):
        names.append(threading.current_thread().name)
        if threading.current_thread().name.startswith("scansnap"):
            both.wait()
        return real(*a, **k)
    monkeypatch.setattr(tr, "_train_runs", spy)

    class Bar:
        n = 0

        def update(self, k=1):
            self.n += k
    kw = dict(eta_y=np.tile(np.repeat([0.5, 1.0, 2.0], 2), 4), eta_z=np.tile([0.5, 1.0], 12), seeds=np.repeat([1, 2, 3, 4], 6),
              steps=7, batch=8, T=16, init="default")
    n = torch.get_num_threads()
    torch.set_num_threads(2)    # make mutants runs the tests on one thread, where the rule gives 1
    try:
        bar = Bar()
        train(syn_medium(3), path="support", progress=bar, **kw)
        assert len(names) == 2 and len(set(names)) == 2 and bar.n == 7
        names.clear()
        train(syn_medium(3), path="counts", grad="autograd", **kw)
        assert names == [threading.current_thread().name]
    finally:
        torch.set_num_threads(n)
