"""train.py: behaviours the mutation run showed no test pinned down (bench/MUTATION.md)."""
import pathlib
import re
import warnings

import numpy as np
import pytest

import scansnap
from scansnap import syn_small, train
from scansnap.train import DivergenceWarning, _divergence_report


def _report(L, M=34):
    R = L.shape[0]
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        d = _divergence_report(L, M, np.ones(R), np.full(R, 2.0), np.arange(R))
    return d, [str(x.message) for x in w if issubclass(x.category, DivergenceWarning)]


def test_divergence_tail_of_a_short_run_is_its_last_step():
    """The tail is the last tenth of the steps, at least one step: with 10 steps, the last one."""
    L = np.full((2, 10), 5.0)               # line = 10 * max(5, ln 34) = 50
    L[0, -1] = 120.0                        # last step far above: diverged (the step before is 5)
    L[1, -2] = 120.0                        # one step above, but not the last: not diverged
    d, msgs = _report(L)
    np.testing.assert_array_equal(d, [True, False])
    assert len(msgs) == 1 and "1 of 2 runs diverged" in msgs[0] and "from step 9" in msgs[0]


@pytest.mark.parametrize("n", [10, 11, 12])
def test_divergence_warning_names_ten_runs_then_counts_the_rest(n):
    L = np.full((n, 20), 5.0)
    L[:, 15:] = 100.0
    d, msgs = _report(L)
    assert d.all() and len(msgs) == 1
    named = [r for r in range(n) if f"run {r} (eta_y=1, eta_z=2, seed={r}) from step 15" in msgs[0]]
    assert named == list(range(10))
    assert msgs[0].endswith(". Their numbers are no result; lower the learning rates.")
    if n > 10:
        assert f"; and {n - 10} more." in msgs[0]
    else:
        assert "more" not in msgs[0]


def test_divergence_warning_points_at_the_caller_of_train():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        res = train(syn_small(), eta_y=[1.0, 1e6], eta_z=[1.0, 1e6], seeds=1, steps=10, batch=8, T=16,
                    init="default")
    div = [x for x in w if issubclass(x.category, DivergenceWarning)]
    np.testing.assert_array_equal(res.diverged, [False, True])
    # attributed to the code that called train, not to a line of the package (mutmut's copy
    # wraps every function in extra frames, so the test asks "outside the package", not "this file")
    pkg = pathlib.Path(scansnap.__file__).resolve().parent
    assert len(div) == 1 and not pathlib.Path(div[0].filename).resolve().is_relative_to(pkg)


def test_duplicate_runs_message_names_each_rate_and_the_seed():
    with pytest.raises(ValueError, match=r"^runs 0 and 2 are the same run \(eta_y=1\.5, eta_z=0\.25, seed=7\)"):
        train(syn_small(), eta_y=[1.5, 1.5, 1.5], eta_z=[0.25, 0.5, 0.25], seeds=7, steps=1)


def test_runs_counted_from_eta_y_alone_and_rates_recorded_as_floats():
    res = train(syn_small(), eta_y=[1, 2, 3], eta_z=1, seeds=0, steps=2, batch=4, T=8)
    assert res.loss.shape == (3, 2)
    assert res.eta_y.dtype == res.eta_z.dtype == np.float64
    np.testing.assert_array_equal(res.eta_y, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(res.eta_z, [1.0, 1.0, 1.0])


def test_default_seed_is_the_signatures_0():
    a = train(syn_small(), steps=3, batch=4, T=8)
    b = train(syn_small(), seeds=0, steps=3, batch=4, T=8)
    assert a.seed.tolist() == [0]
    np.testing.assert_array_equal(a.loss, b.loss)


def test_progress_bar_counts_the_steps_out_of_the_total(capsys):
    train(syn_small(), eta_y=[1.0, 2.0], seeds=0, steps=7, batch=4, T=8, progress=True)
    err = capsys.readouterr().err
    assert re.search(r"training 2 runs: +\d+%\|.*\| \d/7 ", err), err   # n/total: the total is the steps


class _Ticks:
    def __init__(self):
        self.n = 0

    def update(self, k):
        self.n += k


@pytest.mark.parametrize("path", ["counts", "support", "tokens"])
def test_a_given_progress_bar_advances_one_tick_per_step(path):
    ticks = _Ticks()
    grad = "autograd" if path == "tokens" else "lemma1"
    train(syn_small(), steps=6, batch=4, T=8, path=path, grad=grad, progress=ticks)
    assert ticks.n == 6


def test_grad_option_picks_lemma1_or_autograd(monkeypatch):
    """grad='lemma1' computes the gradients by Lemma 1's closed form (YZModel.lemma1_grads),
    grad='autograd' by backpropagation; both give the same training to rounding (float64)."""
    from scansnap.model import YZModel
    calls = []
    orig = YZModel.lemma1_grads

    def spy(self, *a, **k):
        calls.append(1)
        return orig(self, *a, **k)
    monkeypatch.setattr(YZModel, "lemma1_grads", spy)
    import torch
    kw = dict(eta_y=[0.5, 2.0], seeds=3, steps=4, batch=8, T=16, init="default", dtype=torch.float64)
    a = train(syn_small(), grad="lemma1", **kw)
    assert len(calls) == 4
    b = train(syn_small(), grad="autograd", **kw)
    assert len(calls) == 4
    np.testing.assert_allclose(a.loss, b.loss, rtol=1e-12, atol=0)
    torch.testing.assert_close(a.Z, b.Z, rtol=1e-10, atol=1e-12)


def test_batched_optimizer_refuses_a_zero_or_nan_rate_naming_the_run():
    import torch
    from scansnap.train import BatchedOptimizer
    p = torch.zeros(3, 2, 2)
    with pytest.raises(ValueError, match=r"^parameter 0: learning rate of run 1 must be a positive number, got 0\.0$"):
        BatchedOptimizer([(p, torch.tensor([0.1, 0.0, 0.2]))])
    with pytest.raises(ValueError, match=r"^parameter 1: learning rate of run 2 must be a positive number, got nan$"):
        BatchedOptimizer([(p, torch.tensor([0.1, 0.1, 0.2])), (p, torch.tensor([0.1, 0.1, float("nan")]))])
