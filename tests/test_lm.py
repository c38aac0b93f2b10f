"""The real-text path: WikiText-2 ids, the LM trainer, validation attention entropy."""
import numpy as np
import pytest
import torch

from scansnap import experiments as ex
from scansnap.lm import train_lms
from scansnap.train import train_lm


@pytest.fixture(scope="module")
def data():
    return ex.wikitext_data()


def test_vocab_and_ids(data):
    tr, va, vocab = data
    assert 9_000 < len(vocab) < 12_000 and "<unk>" in vocab.stoi and "<eos>" in vocab.stoi
    assert int(tr.max()) < len(vocab) and int(va.max()) < len(vocab)


def test_train_lm_learns_and_snapshots(data):
    tr, va, vocab = data
    res = train_lm(tr, len(vocab), steps=30, lr=5.0, probe=va[:12], snapshot_steps=[0, 30], seed=1)
    assert res.loss[-5:].mean() < res.loss[0] - 1.0             # it learns
    assert set(res.snapshots) == {0, 30}
    a = res.snapshots[30][0]                                     # lowest layer, (heads, T, T)
    assert a.shape == (1, 12, 12) and torch.allclose(a.sum(-1), torch.ones(1, 12))
    again = train_lm(tr, len(vocab), steps=30, lr=5.0, seed=1)
    assert np.array_equal(res.loss, again.loss)                  # same seed, same history


def test_validation_entropy_falls_with_training(data):
    tr, va, vocab = data
    e0 = ex.validation_attention_entropy(train_lm(tr, len(vocab), steps=1, lr=5.0).model, va, batches=3)
    e1 = ex.validation_attention_entropy(train_lm(tr, len(vocab), steps=60, lr=5.0).model, va, batches=3)
    assert 2.0 < e0 < 3.5 and e1 < e0


def test_bad_lm_arguments(data):
    tr, va, vocab = data
    V = len(vocab)
    with pytest.raises(ValueError, match="lr must be a positive number, got -1"):
        train_lm(tr, V, lr=-1, steps=1)
    with pytest.raises(ValueError, match="too short for bptt=35"):
        train_lm(tr[:100], V, steps=1)
    for clip in (0, -1, -0.5):
        with pytest.raises(ValueError, match=f"clip .* must be a positive number, got {clip}"):
            train_lm(tr, V, steps=1, clip=clip)
    for bptt in (0, -3):
        with pytest.raises(ValueError, match=f"bptt must be an integer >= 1, got {bptt}"):
            train_lm(tr, V, steps=1, bptt=bptt)
    with pytest.raises(ValueError, match=r"snapshot step 11 out of range \[0, 10\]"):
        train_lm(tr, V, steps=10, probe=va[:5], snapshot_steps=[0, 11])
    with pytest.raises(ValueError, match=r"snapshot steps \[0, 5\] need a probe"):
        train_lm(tr, V, steps=10, snapshot_steps=[0, 5])
    with pytest.raises(ValueError, match="token id 99999 out of range"):
        train_lm(torch.tensor([1, 2, 99999]), V, steps=1)
    for lm in (train_lms, ):
        with pytest.raises(ValueError, match="no learning rates given"):
            lm(tr, V, [], [1], steps=1)
        with pytest.raises(ValueError, match="no seeds given"):
            lm(tr, V, [1.0], [], steps=1)
        with pytest.raises(ValueError, match=r"run \(lr=2, seed=3\) is listed twice"):
            lm(tr, V, [1.0, 2.0, 2.0], [3, 3, 3], steps=1)
        with pytest.raises(ValueError, match="clip .* got 0"):
            lm(tr, V, [1.0], [1], steps=1, clip=0)
    with pytest.raises(ValueError, match=r"run \(lr=1, seed=2\) is listed twice"):
        ex.fig10(lrs=(1.0,), seeds=(2, 2), steps=1)
    with pytest.raises(ValueError, match="at least one learning rate"):
        ex.fig10(lrs=(), steps=1)


def test_diverged_lm_run_is_reported_not_carried_on(data):
    """A NaN loss stops training with an error naming the run and the step (never entropy 0)."""
    tr, _, vocab = data
    small = dict(d=16, d_hidden=16, steps=5)
    with pytest.raises(FloatingPointError, match=r"1-layer LM \(lr=1e\+30, seed=7\) diverged at step 1: loss nan"):
        train_lm(tr[:5000], len(vocab), lr=1e30, seed=7, **small)
    with pytest.raises(FloatingPointError, match=r"run 1 \(1-layer LM, lr=1e\+30, seed=4\) diverged at step 1"):
        train_lms(tr[:5000], len(vocab), [1.0, 1e30], [3, 4], **small)


def check_batched_equals_one_at_a_time(data, dtype, tol, layers=1, heads=1, device="cpu"):
    """train_lms (R runs as one program) == train_lm run by run: losses, weights, snapshots, at
    ``tol``. Also used by tests/test_cuda.py on CUDA."""
    tr, va, vocab = data
    kw = dict(steps=6, batch=4, bptt=9, d=16, d_hidden=24, layers=layers, heads=heads, probe=va[:7],
              snapshot_steps=[0, 6], dtype=dtype, device=device)
    runs = [(1.0, 1), (5.0, 2), (3.0, 2)]
    many = train_lms(tr[:3000], len(vocab), [r[0] for r in runs], [r[1] for r in runs], **kw)
    for (lr, seed), got in zip(runs, many):
        one = train_lm(tr[:3000], len(vocab), lr=lr, seed=seed, **kw)
        np.testing.assert_allclose(got.loss, one.loss, atol=tol, rtol=0)
        for p, q in zip(got.model.parameters(), one.model.parameters()):
            assert p.device.type == torch.device(device).type
            torch.testing.assert_close(p, q, atol=tol, rtol=0)
        for s in (0, 6):
            for a, b in zip(got.snapshots[s], one.snapshots[s]):
                torch.testing.assert_close(a, b, atol=tol, rtol=0)
        assert got.config == one.config


@pytest.mark.parametrize("dtype,tol", [(torch.float64, 1e-12), (torch.float32, 1e-4)])
@pytest.mark.parametrize("layers,heads", [(1, 1), (2, 2)])
def test_batched_runs_equal_one_at_a_time(data, dtype, tol, layers, heads):
    """train_lms (R runs as one program) == train_lm run by run: losses, weights, snapshots.
    Same initial weights and dropout masks (each run's seed), same clipping, same SGD steps."""
    check_batched_equals_one_at_a_time(data, dtype, tol, layers, heads)


def test_lowest_attention_is_the_models_first_map(data):
    tr, va, vocab = data
    x = va[:70].view(2, 35)
    for layers in (1, 3):
        m = train_lm(tr, len(vocab), steps=2, layers=layers, heads=2, d=32, d_hidden=32).model.eval()
        with torch.no_grad():
            assert torch.equal(ex.lowest_attention(m, x), m(x)[1][0])


def test_dropout_is_torchs_on_the_cpu_bit_for_bit():
    """scansnap.model.Dropout (the mask drawn by bernoulli_, as train_lms draws it on every device)
    == nn.functional.dropout on the CPU: the same mask from the same seed, the same gradient."""
    from scansnap.model import Dropout
    x = torch.randn(4, 9, 16, dtype=torch.float64, requires_grad=True)
    for p in (0.2, 0.5):
        torch.manual_seed(3)
        a = torch.nn.functional.dropout(x, p, training=True)
        (ga,) = torch.autograd.grad(a.square().sum(), x)
        torch.manual_seed(3)
        b = Dropout(p)(x)
        (gb,) = torch.autograd.grad(b.square().sum(), x)
        assert torch.equal(a, b) and torch.equal(ga, gb)
        assert 0 < (b == 0).float().mean() < 1
    assert torch.equal(Dropout(0.5).eval()(x), x) and torch.equal(Dropout(0.0)(x), x)


SMALL = dict(steps=4, batch=4, bptt=9, d=16, d_hidden=24)


def test_train_lm_draws_what_a_plain_seeded_script_draws(data):
    """train_lm's dropout generator continues the global stream after the init: its run is,
    bit for bit, the tutorial loop of a script that only calls torch.manual_seed(seed)."""
    import torch.nn.functional as F
    from scansnap.model import Dropout, EmbeddingTransformer
    from scansnap.wikitext import batchify
    tr, _, vocab = data
    V = len(vocab)
    torch.manual_seed(5)
    m = EmbeddingTransformer(V, d=16, d_hidden=24)
    opt = torch.optim.SGD(m.parameters(), lr=2.0)
    rows = batchify(tr[:3000], 4)
    losses = []
    for s in range(4):
        x, y = rows[s * 9:s * 9 + 9].t(), rows[s * 9 + 1:s * 9 + 10].t()
        loss = F.cross_entropy(m(x)[0].reshape(-1, V), y.reshape(-1))
        losses.append(loss.item())
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(m.parameters(), 0.5)
        opt.step()
    res = train_lm(tr[:3000], V, lr=2.0, seed=5, **SMALL)
    assert np.array_equal(res.loss, losses)
    assert all(torch.equal(p, q) for p, q in zip(res.model.parameters(), m.parameters()))
    assert all(mod.generator is None for mod in res.model.modules() if isinstance(mod, Dropout))


def test_runs_side_by_side_equal_runs_alone_bit_for_bit(data):
    """The WikiText figures' runs on two threads (one torch thread each, scansnap._cpu) ==
    each run alone on one torch thread: the same losses and weights, bit for bit; the caller
    keeps its torch thread count."""
    import threading
    tr, _, vocab = data
    runs = [(1.0, 1), (5.0, 2), (3.0, 2)]
    where, threads = set(), set()
    # the first two runs wait for each other: on a loaded machine the pool could otherwise finish
    # run 1 before run 2 is submitted and reuse its one thread (then nothing runs side by side)
    both = threading.Barrier(2, timeout=30)

    def fn(run, stop):
        if threading.current_thread().name.startswith("scansnap") and run in runs[:2]:
            both.wait()
        where.add(threading.current_thread().name)
        threads.add(torch.get_num_threads())
        return train_lm(tr[:3000], len(vocab), lr=run[0], seed=run[1], stop=stop, **SMALL)

    def new_thread_count():     # what a thread started now gets: torch's default, the caller's
        out = []
        t = threading.Thread(target=lambda: out.append(torch.get_num_threads()))
        t.start()
        t.join()
        return out[0]
    n = torch.get_num_threads()
    torch.set_num_threads(2)    # the caller on two threads (make mutants runs the tests on one)
    try:
        side = ex.lm_runs(fn, runs, workers=2)
        assert torch.get_num_threads() == 2 and new_thread_count() == 2
        assert len(where) == 2 and threads == {1}
        torch.set_num_threads(1)
        alone = [fn(r, None) for r in runs]
    finally:
        torch.set_num_threads(n)
    for a, b in zip(side, alone):
        assert np.array_equal(a.loss, b.loss)
        assert all(torch.equal(p, q) for p, q in zip(a.model.parameters(), b.model.parameters()))


def test_lm_workers_rule(monkeypatch):
    """One run per torch thread on a CPU (never more than the runs), one on a GPU."""
    monkeypatch.setattr(torch, "get_num_threads", lambda: 4)
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    assert ex.lm_workers(None, 25, cpu) == 4
    assert ex.lm_workers(None, 2, cpu) == 2 and ex.lm_workers(None, 1, cpu) == 1
    assert ex.lm_workers(None, 25, cuda) == 1
    assert ex.lm_workers(3, 25, cpu) == 3 and ex.lm_workers(1, 25, cpu) == 1
    for bad in (0, -2):
        with pytest.raises(ValueError, match=f"workers must be an integer >= 1, got {bad}"):
            ex.lm_workers(bad, 25, cpu)


def test_a_failed_run_stops_the_runs_beside_it(data):
    """An error in one run is raised; the run beside it stops at its next step (train_lm
    returns None when ``stop`` is set); runs not yet started never start."""
    import threading
    import time
    from scansnap._cpu import map_on_threads
    tr, _, vocab = data
    stopped = threading.Event()
    stopped.set()
    assert train_lm(tr[:3000], len(vocab), stop=stopped, **SMALL) is None
    started, seen = [], {}

    def fn(item, stop):
        started.append(item)
        if item == 1:
            raise RuntimeError("a planted failure")
        if item == 0:           # holds the caller (it waits on item 0 first) while the other
            seen[0] = stop.wait(timeout=60)     # thread is free to take the queued items
            time.sleep(0.5)
        return item
    n = torch.get_num_threads()
    with pytest.raises(RuntimeError, match="a planted failure"):
        map_on_threads(fn, range(6), 2)
    assert sorted(started) == [0, 1] and seen == {0: True}
    assert torch.get_num_threads() == n


def test_lm_runs_counts_only_finished_runs(monkeypatch):
    """The progress bar over the runs counts a run when it finishes, not when it stops
    because a run beside it failed; the results come back in the order of the runs."""
    updates = []

    class Bar:
        def __init__(self, *a, **k):
            pass

        def update(self, n=1):
            updates.append(n)

        def close(self):
            pass
    monkeypatch.setattr(ex, "tqdm", Bar)

    def fn(item, stop):
        if item == 1:
            raise RuntimeError("a planted failure")
        stop.wait(timeout=60)
        return None                    # stopped, as train_lm returns when ``stop`` is set
    with pytest.raises(RuntimeError, match="a planted failure"):
        ex.lm_runs(fn, [0, 1, 2, 3], workers=2, progress=True)
    assert updates == []
    assert ex.lm_runs(lambda item, stop: item * 10, [0, 1, 2], workers=2) == [0, 10, 20]
    assert updates == [1, 1, 1]
