"""Issue 11: no silent wrong numbers. Each bad input is a clear error naming the value, each
diverged run says so, and the device rule holds (chapters compute on the CPU)."""
import math
import warnings

import numpy as np
import pytest
import torch

import scansnap
from scansnap import YZModel, lr_grid, syn_medium, syn_small, train
from scansnap import _validate as V
from scansnap import theory as th
from scansnap.model import sinusoidal_encoding
from scansnap.train import BatchedOptimizer, DivergenceWarning


@pytest.fixture(autouse=True)
def _restore_default_device():
    old = V.get_default_device()
    yield
    V.set_default_device(old)


# ---------------------------------------------------------------------------------------
# The device rule
# ---------------------------------------------------------------------------------------

@pytest.mark.device_rule
def test_default_device_is_auto_and_none_follows_it(monkeypatch):
    assert V.get_default_device() == "auto"
    assert V.resolve_device(None) == V.resolve_device("auto")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert V.resolve_device(None) == torch.device("cuda")       # auto: the GPU when present
    V.set_default_device("cpu")
    assert V.resolve_device(None) == torch.device("cpu")


@pytest.mark.device_rule
def test_book_setup_puts_the_chapters_on_the_cpu_even_with_a_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    threads = torch.get_num_threads()
    try:
        scansnap.book.setup()
    finally:
        torch.set_num_threads(threads)
    assert V.get_default_device() == "cpu" and V.resolve_device(None) == torch.device("cpu")
    with scansnap.book.interactive_device() as dev:              # sliders: the GPU when present
        assert dev == torch.device("cuda") and V.resolve_device(None) == torch.device("cuda")
    assert V.resolve_device(None) == torch.device("cpu")
    with pytest.raises(RuntimeError, match="boom"):
        with scansnap.book.interactive_device():
            raise RuntimeError("boom")
    assert V.get_default_device() == "cpu"                       # restored after an error too


@pytest.mark.device_rule
def test_interactive_device_without_cuda_is_the_cpu_and_trains_there():
    V.set_default_device("cpu")
    if torch.cuda.is_available():
        pytest.skip("CUDA is present")
    with scansnap.book.interactive_device() as dev:
        assert dev == torch.device("cpu")
        res = train(syn_small(), steps=1, batch=2, T=4)
    assert res.config["device"] == "cpu"


@pytest.mark.device_rule
def test_bad_default_devices():
    with pytest.raises(ValueError, match="unknown device 'tpu'"):
        V.set_default_device("tpu")
    with pytest.raises(ValueError, match="cannot be None"):
        V.set_default_device(None)
    assert V.get_default_device() == "auto"
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA is not available"):
            scansnap.book.interactive_device("cuda").__enter__()
        assert V.get_default_device() == "auto"


# ---------------------------------------------------------------------------------------
# Training: arguments, duplicates, divergence
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("kw, match", [
    (dict(betas=(0.9, 1.0)), r"Adam beta2 must be in \[0, 1\), got 1\.0"),
    (dict(betas=(-0.1, 0.999)), r"Adam beta1 must be in \[0, 1\), got -0\.1"),
    (dict(betas=(0.9,)), r"Adam betas must be a pair"),
    (dict(momentum=1.0), r"momentum must be in \[0, 1\), got 1\.0"),
    (dict(momentum=float("nan")), r"momentum must be in \[0, 1\)"),
    (dict(seeds=[1, 1], eta_y=[2, 2]), r"runs 0 and 1 are the same run \(eta_y=2, eta_z=1, seed=1\)"),
    (dict(seeds=[1.5]), r"seeds must be integers"),
    (dict(snapshot_steps=[1.5]), r"snapshot step must be an integer"),
    (dict(snapshot_steps=[-1]), r"snapshot step must be an integer >= 0, got -1"),
    (dict(dtype=torch.int64), r"dtype must be a floating torch dtype"),
    (dict(grad="finite"), r"unknown grad 'finite'"),
    (dict(grad="lemma1", path="tokens"), r"grad='lemma1' works on the counts path"),
    (dict(eta_y=[1, 2], eta_z=[1, 2, 3]), r"the per-run lengths disagree: eta_y has 2, eta_z has 3"),
])
def test_bad_training_arguments_named(kw, match):
    args = dict(steps=3, batch=4, T=8, optimizer="adam")
    args.update(kw)
    with pytest.raises(ValueError, match=match):
        train(syn_small(), **args)


def test_bad_classes_argument():
    with pytest.raises(ValueError, match="classes must be a SequenceClasses, got dict"):
        train({}, steps=1)


def test_runs_that_differ_only_in_seed_or_rate_are_not_duplicates():
    res = train(syn_small(), eta_y=[1, 1, 2], eta_z=1, seeds=[1, 2, 1], steps=2, batch=4, T=8)
    assert res.loss.shape == (3, 2) and not res.diverged.any()


def test_absurd_rates_are_reported_as_diverged():
    """Y/Z at eta = 1e6 (Syn-Medium, default init): losses of ~1e5 and more, finite: a warning names the run."""
    with pytest.warns(DivergenceWarning) as w:
        res = train(syn_medium(3), eta_y=[1.0, 1e6], eta_z=[1.0, 1e6], seeds=1, steps=30, init="default")
    msg = str(w[0].message)
    assert "1 of 2 runs diverged" in msg and "run 1 (eta_y=1e+06, eta_z=1e+06, seed=1) from step 1" in msg
    assert "run 0 " not in msg
    np.testing.assert_array_equal(res.diverged, [False, True])
    assert np.all(np.isfinite(res.loss)) and res.loss[1, -1] > 1e3 and res.loss[0, -1] < res.loss[0, 0]


def test_divergence_line_is_ten_times_the_start():
    """The report's rule on hand-made histories: above 10 x max(first loss, ln M) at some step."""
    from scansnap.train import DIVERGED_FACTOR, _divergence_report
    assert DIVERGED_FACTOR == 10.0
    M = 34
    L = np.full((4, 20), 1.0)
    L[:, 0] = 5.0                       # line = 10 * max(5, ln 34 = 3.53) = 50
    L[1, -2:] = 80.0                    # tail (last 2 steps) mean 80 > 50: diverged
    L[2, -2:] = [49.0, 49.0]            # 49 < 50: not
    L[3, 5:] = 51.0                     # from step 5 on
    with pytest.warns(DivergenceWarning, match=r"2 of 4 runs diverged") as w:
        d = _divergence_report(L, M, np.ones(4), np.ones(4), np.arange(4))
    np.testing.assert_array_equal(d, [False, True, False, True])
    assert "run 1 (eta_y=1, eta_z=1, seed=1) from step 18" in str(w[0].message)
    assert "run 3 (eta_y=1, eta_z=1, seed=3) from step 5" in str(w[0].message)
    L0 = np.full((1, 10), 2.0)
    L0[0, 0] = 1.0                       # line = 10 * ln 34 = 35.3 (ln M, not the first loss)
    L0[0, -1] = 30.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not _divergence_report(L0, M, np.ones(1), np.ones(1), np.zeros(1, int)).any()


def test_normal_training_raises_no_divergence_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error", DivergenceWarning)
        res = train(syn_medium(1), eta_y=[1, 10, 30], eta_z=[1, 3, 3], seeds=1, steps=40, init="default")
    assert not res.diverged.any()


def test_non_finite_loss_is_a_floating_point_error_naming_the_run_and_step():
    with pytest.raises(FloatingPointError, match=r"run 1 \(eta_y=1e\+38, eta_z=1e\+38, seed=0\) diverged: "
                                                 r"non-finite loss at step 2"):
        train(syn_medium(3), eta_y=[1, 1e38], eta_z=[1, 1e38], seeds=0, steps=20, init="default")


def test_lr_grid_values_and_order():
    ey, ez, sd = lr_grid([0.5, 2], [1, 10], [3, 4])
    np.testing.assert_array_equal(ez, [0.5, 0.5, 0.5, 0.5, 2, 2, 2, 2])
    np.testing.assert_array_equal(ey, [0.5, 0.5, 5, 5, 2, 2, 20, 20])
    np.testing.assert_array_equal(sd, [3, 4, 3, 4, 3, 4, 3, 4])
    assert ey.dtype == float and ez.dtype == float and np.issubdtype(sd.dtype, np.integer)
    ey, ez, sd = lr_grid(1.0, [2], 7)                            # scalars work as one-point axes
    assert (ey.tolist(), ez.tolist(), sd.tolist()) == ([2.0], [1.0], [7])


@pytest.mark.parametrize("args, match", [
    (([], [1], [1]), r"lr_grid: eta_z is empty"),
    (([1], [], [1]), r"lr_grid: ratio is empty"),
    (([1], [1], []), r"lr_grid: seeds is empty"),
    (([1], [1], [1, 2, 1]), r"lr_grid: seeds has duplicates \[1\]"),
    (([1, 1.0], [1], [1]), r"lr_grid: eta_z has duplicates \[1\.0\]"),
    (([1], [0, 1], [1]), r"lr_grid: ratio must be a positive number, got 0"),
    (([-1], [1], [1]), r"lr_grid: eta_z must be a positive number"),
    (([1], [1], [1.5]), r"lr_grid: seeds must be an integer, got 1\.5"),
])
def test_bad_lr_grids(args, match):
    with pytest.raises(ValueError, match=match):
        lr_grid(*args)


def test_batched_optimizer_rejects_bad_settings():
    p = torch.zeros(2, 3, 3)
    lr = torch.tensor([0.1, 0.2])
    with pytest.raises(ValueError, match=r"Adam beta2 must be in \[0, 1\), got 1\.5"):
        BatchedOptimizer([(p, lr)], "adam", betas=(0.9, 1.5))
    with pytest.raises(ValueError, match=r"eps must be a positive number, got 0"):
        BatchedOptimizer([(p, lr)], "adam", eps=0)
    with pytest.raises(ValueError, match=r"momentum must be in \[0, 1\), got -0\.5"):
        BatchedOptimizer([(p, lr)], "sgd", momentum=-0.5)
    with pytest.raises(ValueError, match=r"learning rate of run 1 must be a positive number"):
        BatchedOptimizer([(p, torch.tensor([0.1, -0.2]))])
    with pytest.raises(ValueError, match=r"one learning rate per run \(2\), got shape \(3,\)"):
        BatchedOptimizer([(p, torch.tensor([0.1, 0.2, 0.3]))])
    with pytest.raises(ValueError, match="unknown optimizer 'lbfgs'"):
        BatchedOptimizer([(p, lr)], "lbfgs")


# ---------------------------------------------------------------------------------------
# The model's counts path
# ---------------------------------------------------------------------------------------

def test_forward_counts_rejects_what_would_be_nan_or_wrong():
    m = YZModel(5, 2)
    counts = torch.tensor([[1.0, 2, 0, 0, 1], [0, 1, 1, 0, 0]])
    q = torch.tensor([3, 4])
    out = m.forward_counts(counts, q)                            # fine
    assert torch.allclose(out.c.sum(-1), torch.ones(2, 2))
    with pytest.raises(ValueError, match=r"query must have one token per sequence: counts are \(2, 2, 5\), "
                                         r"query is \(2, 3\)"):
        m.forward_counts(counts, torch.tensor([3, 4, 4]))
    with pytest.raises(ValueError, match=r"query token id 5 out of range \[0, 5\)"):
        m.forward_counts(counts, torch.tensor([3, 5]))
    with pytest.raises(ValueError, match=r"query token id -1 out of range"):
        m.forward_counts(counts, torch.tensor([-1, 0]))
    with pytest.raises(ValueError, match=r"sequence 1 \(run 0\) has all-zero counts"):
        m.forward_counts(torch.tensor([[1.0, 0, 0, 0, 0], [0, 0, 0, 0, 0]]), q)
    with pytest.raises(ValueError, match=r"counts must be finite and non-negative, got -1\.0"):
        m.forward_counts(torch.tensor([[1.0, -1, 0, 0, 1], [0, 1, 1, 0, 0]]), q)
    with pytest.raises(ValueError, match=r"counts must be finite and non-negative, got nan"):
        m.forward_counts(torch.tensor([[1.0, float("nan"), 0, 0, 1], [0, 1, 1, 0, 0]]), q)
    with pytest.raises(ValueError, match=r"query must be a tensor of integer token ids"):
        m.forward_counts(counts, torch.tensor([3.0, 4.0]))
    with pytest.raises(ValueError, match=r"counts have 4 tokens, model has M=5"):
        m.forward_counts(counts[:, :4], q)
    with pytest.raises(ValueError, match=r"counts has 3 runs, model has 2"):
        m.forward_counts(counts.expand(3, 2, 5), q)


def test_counts_from_tokens_and_sampler_argument_checks():
    from scansnap import counts_from_tokens, sample_tokens
    with pytest.raises(ValueError, match=r"tokens must be a tensor of integer token ids"):
        counts_from_tokens(torch.tensor([[0.0, 1.0, 2.0]]), 5)
    with pytest.raises(ValueError, match=r"M \(vocabulary size\) must be an integer >= 1, got 0"):
        counts_from_tokens(torch.tensor([[0, 1, 2]]), 0)
    with pytest.raises(ValueError, match=r"generator must be a torch.Generator"):
        sample_tokens(syn_small(), 4, 8, 0)
    with pytest.raises(ValueError, match=r"classes must be a SequenceClasses"):
        sample_tokens("syn_small", 4, 8, torch.Generator())
    with pytest.raises(ValueError, match=r"probs must be the \(2, 34\) table"):
        sample_tokens(syn_small(), 4, 8, torch.Generator(), probs=torch.ones(3, 34))


# ---------------------------------------------------------------------------------------
# Theory: validation and numbers at the edges
# ---------------------------------------------------------------------------------------

def test_omega1_and_transition_time_need_M_at_least_4():
    """exp(Mh) - (M-1)Mh has no zero for M = 3 (its minimum is 2(1 - ln 2) > 0): a clear error."""
    for f in (lambda: th.omega1(3), lambda: th.transition_time(3, 2, 1.0)):
        with pytest.raises(ValueError, match=r"M must be an integer >= 4, got 3"):
            f()
    # at M = 4 the zero exists: (1 + w) ln 4 / 4 is a root
    w = th.omega1(4)
    h = (1 + w) * np.log(4) / 4
    assert abs(np.exp(4 * h) - 12 * h) < 1e-9 and 0 < w < 1


def test_h_closed_exact_for_huge_t():
    """Eq. 45 at t up to 1e300, against 50-digit arithmetic (mpmath), to 1e-12 relative."""
    import mpmath as mp
    mp.mp.dps = 50
    M, eta = 50, 0.5
    for t in (1e13, 1e17, 1e100, 1e300):
        h = float(th.h_closed(t, M, eta))
        A = mp.mpf(M) * eta * mp.mpf(t) + 1
        u = mp.log(A)                        # e^u + (M-1) u = A as u = ln(A - (M-1) u): a contraction
        for _ in range(60):
            u = mp.log(A - (M - 1) * u)
        assert mp.e ** u + (M - 1) * u == pytest.approx(A, rel=1e-40)
        assert h == pytest.approx(float(u / M), rel=1e-12), t
    assert th.h_closed(0.0, M, eta) == 0.0


def test_h_closed_bad_times():
    with pytest.raises(ValueError, match=r"time t must be finite, got .*inf"):
        th.h_closed([1.0, np.inf], 50, 0.5)
    with pytest.raises(ValueError, match=r"time t must be finite, got .*nan"):
        th.h_closed(np.nan, 50, 0.5)
    with pytest.raises(ValueError, match=r"time t must be >= 0, got -1\.0"):
        th.h_closed([-1.0, 2.0], 50, 0.5)
    with pytest.raises(ValueError, match=r"too large: M eta_Y t overflows"):
        th.h_closed(1e307, 1000, 5.0)


def test_sinusoidal_encoding_values():
    """Vaswani et al.: PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(p / 10000^(2i/d))."""
    T, d = 7, 6
    pe = sinusoidal_encoding(T, d).double().numpy()
    ref = np.zeros((T, d))
    for p in range(T):
        for i in range(d // 2):
            ref[p, 2 * i] = math.sin(p / 10000 ** (2 * i / d))
            ref[p, 2 * i + 1] = math.cos(p / 10000 ** (2 * i / d))
    np.testing.assert_allclose(pe, ref, atol=1e-6, rtol=0)
    assert sinusoidal_encoding(3, 5).shape == (3, 5)             # odd width: the last column is a sine
    np.testing.assert_allclose(sinusoidal_encoding(3, 5)[:, 4].numpy(),
                               np.sin(np.arange(3) / 10000 ** (4 / 5)), atol=1e-6)
