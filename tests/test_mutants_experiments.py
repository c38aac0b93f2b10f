"""scansnap.experiments against independent references (issue 28's mutation testing): each
experiment function is the trainer called with the paper's settings, written out here, so a
wrong setting in the function (not only in the trainer) fails. Tiny step counts."""
import numpy as np
import pytest
import torch

from scansnap import experiments as ex
from scansnap.data import syn_medium, syn_small
from scansnap.lm import train_lm
from scansnap.metrics import attention_entropy, distinct_entropy, recall_threshold
from scansnap.train import lr_grid, train
from scansnap.wikitext import batchify


def _same(a, b):
    np.testing.assert_array_equal(a.loss, b.loss)
    assert torch.equal(a.Z, b.Z) and torch.equal(a.Y, b.Y)


def test_fig4_is_syn_small_from_zero_with_the_common_settings():
    classes, res = ex.fig4(eta_y=3.0, steps=3, snapshot_steps=[0, 3])
    ref = train(syn_small(), eta_y=3.0, eta_z=1.0, seeds=2, steps=3, batch=128, T=128, optimizer="sgd",
                momentum=0.9, init="zero", snapshot_steps=[0, 3])
    _same(res, ref)
    assert classes.M == syn_small().M and sorted(res.snapshots) == [0, 3]


def _captured(monkeypatch):
    seen = []
    monkeypatch.setattr(ex, "train", lambda classes, **kw: seen.append((classes, kw)) or "res")
    return seen


def test_the_figures_default_settings(monkeypatch):
    seen = _captured(monkeypatch)
    assert ex.fig4() == (seen[0][0], "res")
    assert seen[0][1] == dict(eta_y=1.0, eta_z=1.0, seeds=2, device=None, steps=100, batch=128, T=128,
                              optimizer="sgd", momentum=0.9, init="zero", snapshot_steps=(0, 5, 10, 20, 50, 100))
    ex.fig5()
    assert seen[1][1] == dict(eta_y=[0.1, 0.5, 1.0], eta_z=[0.1, 0.5, 1.0], seeds=2, device=None, steps=100,
                              batch=128, T=128, optimizer="adam", momentum=0.9, init="zero")
    ex.syn_medium_sweep(num_last=(5,))
    kw = seen[2][1]
    ey, ez, sd = lr_grid((0.5, 1, 2, 3), (1, 2, 5, 10), range(1, 11))
    assert seen[2][0].M == syn_medium(5).M and kw.pop("progress") is not None
    for k, v in (("eta_y", ey), ("eta_z", ez), ("seeds", sd)):
        np.testing.assert_array_equal(kw.pop(k), v)
    assert kw == dict(device=None, steps=100, batch=128, T=128, optimizer="sgd", momentum=0.9, init="default",
                      path="support")


def test_fig5_is_adam_from_zero_at_each_rate():
    classes, res = ex.fig5(steps=2)
    ref = train(syn_small(), eta_y=[0.1, 0.5, 1.0], eta_z=[0.1, 0.5, 1.0], seeds=2, steps=2, batch=128, T=128,
                optimizer="adam", momentum=0.9, init="zero")
    _same(res, ref)
    _, res = ex.fig5(etas=(0.3,), seed=5, steps=1)
    assert res.eta_y.tolist() == [0.3] and res.seed.tolist() == [5]


def test_the_syn_medium_sweep_is_one_grid_per_vocabulary():
    sweep = ex.syn_medium_sweep(num_last=(1, 3), eta_z=(1, 2), ratio=(1, 5), seeds=(3, 4), steps=2)
    assert list(sweep) == [1, 3]
    ey, ez, sd = lr_grid((1, 2), (1, 5), (3, 4))
    for nl, (classes, res) in sweep.items():
        assert classes.M == syn_medium(nl).M
        ref = train(syn_medium(nl), eta_y=ey, eta_z=ez, seeds=sd, steps=2, batch=128, T=128, optimizer="sgd",
                    momentum=0.9, init="default", path="support")
        _same(res, ref)
    forced = ex.syn_medium_sweep(num_last=(1,), eta_z=(1,), ratio=(1,), seeds=(3,), steps=1, path="counts")
    assert forced[1][1].config["path"] == "counts"


def test_fig6_rows_are_the_runs_entropies():
    sweep = ex.syn_medium_sweep(num_last=(1, 3), eta_z=(1, 2), ratio=(1, 5), seeds=(3,), steps=2)
    r = ex.fig6(sweep=sweep)
    assert r["num_last"].tolist() == [1] * 4 + [3] * 4
    want = np.concatenate([distinct_entropy(c, res.Z) for c, res in sweep.values()])
    np.testing.assert_array_equal(r["entropy"], want)
    np.testing.assert_array_equal(r["ratio"], np.concatenate([res.eta_y / res.eta_z for _, res in sweep.values()]))
    np.testing.assert_array_equal(r["eta_z"], np.concatenate([res.eta_z for _, res in sweep.values()]))
    np.testing.assert_array_equal(r["seed"], [3] * 8)
    direct = ex.fig6(num_last=(1, 3), eta_z=(1, 2), ratio=(1, 5), seeds=(3,), steps=2)
    np.testing.assert_array_equal(direct["entropy"], want)


def test_fig11_12_recall_is_the_mean_over_seeds_at_thresholds_around_1_over_M():
    sweep = ex.syn_medium_sweep(num_last=(3,), eta_z=(1, 2), ratio=(1, 5), seeds=(3, 4), steps=2)
    r = ex.fig11_12(sweep, n_thresholds=5)
    classes, res = sweep[3]
    th = np.geomspace(0.25 / classes.M, 4.0 / classes.M, 5)
    rec = recall_threshold(classes, res.Z, th)
    ratio = res.eta_y / res.eta_z
    keys = sorted({(a, b) for a, b in zip(res.eta_z, ratio)})
    assert len(r["recall"]) == 5 * len(keys) == 20
    for k, (ez, q) in enumerate(keys):
        part = slice(5 * k, 5 * (k + 1))
        np.testing.assert_array_equal(r["threshold"][part], th)
        assert set(r["eta_z"][part]) == {ez} and set(r["ratio"][part]) == {q} and set(r["num_last"][part]) == {3}
        sel = (res.eta_z == ez) & (ratio == q)
        np.testing.assert_allclose(r["recall"][part], rec[sel].mean(0), rtol=1e-15)
    assert len(ex.fig11_12(sweep)["threshold"]) == 17 * 4


def test_wikitext_data_keeps_words_seen_three_times():
    tr, va, vocab = ex.wikitext_data()
    assert "<unk>" in vocab.stoi
    from scansnap import wikitext
    corpus = wikitext.load("shipped")
    from collections import Counter
    counts = Counter(corpus.train + ["<unk>"])
    assert len(vocab) == sum(1 for c in counts.values() if c >= 3) + (counts["<unk>"] < 3)
    assert torch.equal(tr, vocab.encode(corpus.train)) and torch.equal(va, vocab.encode(corpus.valid))
    tr1, _, v1 = ex.wikitext_data(min_freq=1)
    assert len(v1) == len(counts)


def test_validation_attention_entropy_by_value():
    torch.manual_seed(0)
    ids = torch.randint(0, 20, (2000,), generator=torch.Generator().manual_seed(1))
    model = train_lm(ids, 20, steps=2, d=8, d_hidden=8, lr=1.0).model
    valid = torch.randint(0, 20, (900,), generator=torch.Generator().manual_seed(2))
    got = ex.validation_attention_entropy(model, valid, bptt=7, batches=4, batch=10)
    data = batchify(valid, 10)                                           # 90 rows: (90 - 1) // 7 = 12 windows
    model.eval()
    with torch.no_grad():
        want = np.mean([attention_entropy(model(data[k * 7:(k + 1) * 7].t())[1][0]) for k in range(4)])
    assert got == pytest.approx(want, rel=1e-12)
    model.train()
    everything = ex.validation_attention_entropy(model, valid, bptt=7, batches=100, batch=10)   # 12 windows
    with torch.no_grad():
        model.eval()
        want = np.mean([attention_entropy(model(data[k * 7:(k + 1) * 7].t())[1][0]) for k in range(12)])
    assert everything == pytest.approx(want, rel=1e-12)
    model.train()
    assert model.training                                                # the mode is restored
    model.eval()
    ex.validation_attention_entropy(model, valid, bptt=7, batches=1)
    assert not model.training
    with pytest.raises(ValueError, match=r"validation text too short for one window of bptt=35 tokens in 10 columns"):
        ex.validation_attention_entropy(model, valid[:300])
    model.train()
    assert ex.validation_attention_entropy(model, valid) == ex.validation_attention_entropy(model, valid, 35, 20, 10)
    assert ex.validation_attention_entropy(model, valid) != ex.validation_attention_entropy(model, valid, 34, 20, 10)
    assert ex.validation_attention_entropy(model, valid) != ex.validation_attention_entropy(model, valid, 35, 1, 10)
    assert ex.validation_attention_entropy(model, valid) != ex.validation_attention_entropy(model, valid, 35, 20, 9)


def test_fig7_trains_both_depths_at_rate_5_with_snapshots_on_the_window():
    results, probe, vocab = ex.fig7(steps=2, layers=(1,))
    tr, va, v = ex.wikitext_data()
    assert torch.equal(probe, va[:30]) and len(vocab) == len(v)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)                     # fig7 trains each model on one torch thread on a CPU
    try:
        ref = train_lm(tr, len(v), layers=1, lr=5.0, steps=2, probe=va[:30], snapshot_steps=[0, 1, 2])
    finally:
        torch.set_num_threads(threads)
    np.testing.assert_array_equal(results[1].loss, ref.loss)
    assert sorted(results[1].snapshots) == [0, 1, 2]
    for s in (0, 1, 2):
        assert torch.equal(results[1].snapshots[s][0], ref.snapshots[s][0])


def test_fig7_snapshots_are_four_evenly_spaced_steps(monkeypatch):
    seen = []
    monkeypatch.setattr(ex, "wikitext_data", lambda source: (torch.zeros(10, dtype=torch.long), torch.arange(40), [0] * 5))
    import scansnap.lm as lm
    monkeypatch.setattr(lm, "train_lm", lambda *a, **k: seen.append((a, k)) or "res")
    results, probe, vocab = ex.fig7(steps=1500, layers=(1, 3), device="cpu", workers=1)
    assert results == {1: "res", 3: "res"} and probe.tolist() == list(range(30))
    assert [k["snapshot_steps"] for _, k in seen] == [[0, 500, 1000, 1500]] * 2
    assert [k["layers"] for _, k in seen] == [1, 3] and {k["lr"] for _, k in seen} == {5.0}
    assert [k["progress"] for _, k in seen] == [False, False]
    ex.fig7(steps=10, layers=(1, 3), device="cpu", workers=1, progress=True)
    assert seen[-2][1]["snapshot_steps"] == [0, 3, 7, 10] and [k["progress"] for _, k in seen[-2:]] == [False, True]


def test_lm_freezing_rows(monkeypatch):
    class R:
        def __init__(self, snaps, steps):
            self.loss = np.arange(float(steps))
            self.snapshots = {s: [torch.full((1, 3, 3), float(s))] for s in snaps}
    seen = {}
    monkeypatch.setattr(ex, "wikitext_data", lambda source: (torch.zeros(5, dtype=torch.long), torch.arange(40), [0] * 5))
    import scansnap.lm as lm
    monkeypatch.setattr(lm, "train_lm", lambda *a, **k: seen.update(k) or R(k["snapshot_steps"], k["steps"]))
    monkeypatch.setattr("scansnap.metrics.attention_entropy", lambda a: float(a.sum()))
    rows = ex.lm_freezing(steps=8, every=4, lr=2.0, layers=2)
    assert seen["snapshot_steps"] == [0, 4, 8] and seen["lr"] == 2.0 and seen["layers"] == 2 and seen["steps"] == 8
    assert seen["probe"].tolist() == list(range(30))
    assert [r[0] for r in rows] == [0, 4, 8] and [r[1] for r in rows] == [0.0, 36.0, 72.0]
    assert np.isnan(rows[0][2]) and rows[1][2] == 36.0 and rows[2][2] == 36.0     # sum |A(s) - A(s - every)|
    assert np.isnan(rows[0][3]) and rows[1][3] == 1.5 and rows[2][3] == 5.5       # mean loss of the steps between
    rows = ex.lm_freezing(steps=3)                                                 # every = min(250, steps)
    assert seen["snapshot_steps"] == [0, 3]
    with pytest.raises(ValueError, match=r"every must be an integer >= 1, got 0"):
        ex.lm_freezing(steps=3, every=0)


def test_fig10_rows_by_run(monkeypatch):
    import scansnap.lm as lm
    monkeypatch.setattr(ex, "wikitext_data", lambda source: (torch.zeros(5, dtype=torch.long), "valid", [0] * 7))

    class R:
        def __init__(self, lr, seed):
            self.model, self.loss = (lr, seed), np.arange(30.0) * lr
    calls = []
    monkeypatch.setattr(lm, "train_lm", lambda tr, V, **k: calls.append(k) or R(k["lr"], k["seed"]))
    monkeypatch.setattr(lm, "train_lms", lambda tr, V, lrs, seeds, **k: calls.append(dict(k, lrs=lrs, seeds=seeds)) or
                        [R(a, b) for a, b in zip(lrs, seeds)])
    monkeypatch.setattr(ex, "validation_attention_entropy", lambda model, va: model[0] * 10 + model[1])
    rows = ex.fig10(lrs=(1.0, 2.0), seeds=(3, 4), steps=7, device="cpu", workers=1)
    assert rows == [(1.0, 3, 13.0, np.arange(10.0, 30.0).mean()), (1.0, 4, 14.0, np.arange(10.0, 30.0).mean()),
                    (2.0, 3, 23.0, 2 * np.arange(10.0, 30.0).mean()), (2.0, 4, 24.0, 2 * np.arange(10.0, 30.0).mean())]
    assert [(c["lr"], c["seed"], c["steps"], c["layers"]) for c in calls] == [(1.0, 3, 7, 1), (1.0, 4, 7, 1),
                                                                              (2.0, 3, 7, 1), (2.0, 4, 7, 1)]
    calls.clear()
    rows2 = ex.fig10(lrs=(1.0, 2.0), seeds=(3, 4), steps=7, device="cpu", batched=True)
    assert rows2 == rows and len(calls) == 2                     # batched: one program per seed (its rates)
    assert [(c["lrs"], c["seeds"], c["layers"]) for c in calls] == [([1.0, 2.0], [3, 3], 1), ([1.0, 2.0], [4, 4], 1)]
    for bad in (dict(lrs=()), dict(seeds=())):
        with pytest.raises(ValueError, match=r"fig10 needs at least one learning rate and one seed"):
            ex.fig10(**bad)
    with pytest.raises(ValueError, match=r"run \(lr=1, seed=3\) is listed twice"):
        ex.fig10(lrs=(1.0, 1.0), seeds=(3,))
    calls.clear()
    ex.fig10(device="cpu", workers=1)                                      # the paper's grid, 300 steps
    assert [(c["lr"], c["seed"]) for c in calls] == [(float(a), b) for a in range(1, 6) for b in range(1, 6)]
    assert {c["steps"] for c in calls} == {300}


def test_lm_runs_with_threads_returns_in_order():
    out = ex.lm_runs(lambda item, stop: item * 2, [1, 2, 3], workers=2)
    assert out == [2, 4, 6]
    assert ex.lm_runs(lambda item, stop: (item, stop), [5], workers=2) == [(5, None)]
