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


def test_divergence_is_any_step_above_the_line():
    """Any step above 10 x max(first loss, ln M) is a divergence, the last or an earlier one (a
    loss that blew up and then read 0, a saturated softmax, included: issue 27)."""
    L = np.full((3, 10), 5.0)               # line = 10 * max(5, ln 34) = 50
    L[0, -1] = 120.0                        # last step far above: diverged from step 9
    L[1, -2] = 120.0                        # one step above, then back: diverged from step 8
    L[2, 4] = 50.0                          # on the line, not above: not diverged
    d, msgs = _report(L)
    np.testing.assert_array_equal(d, [True, True, False])
    assert len(msgs) == 1 and "2 of 3 runs diverged" in msgs[0] and "from step 9" in msgs[0] and "from step 8" in msgs[0]


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


# ---------------------------------------------------------------------------------------
# The signature's defaults and the progress bar
# ---------------------------------------------------------------------------------------

def test_defaults_are_100_steps_of_128_sequences_of_length_128_without_a_bar(capsys):
    """train(classes) alone is the documented default run: steps=100, batch=128, T=128 (the
    same history, bit for bit, as naming them), and progress=False draws nothing."""
    import torch
    a = train(syn_small())
    assert capsys.readouterr().err == ""
    b = train(syn_small(), steps=100, batch=128, T=128, progress=False, dtype=torch.float32)
    assert a.loss.shape == (1, 100)
    np.testing.assert_array_equal(a.loss, b.loss)
    assert torch.equal(a.Y, b.Y) and torch.equal(a.Z, b.Z)


def test_progress_bar_erases_itself_when_training_ends(capsys):
    """The bar is transient (leave=False): after train returns, its line is blanked out
    (``\\r`` + spaces + ``\\r``), not left on the screen with a newline."""
    train(syn_small(), steps=3, batch=4, T=8, progress=True)
    err = capsys.readouterr().err
    assert err.startswith("\rtraining 1 runs:"), repr(err)
    assert "\n" not in err and err.endswith("\r"), repr(err)
    assert err.rsplit("\r", 2)[-2].strip() == "", repr(err)


# ---------------------------------------------------------------------------------------
# Argument checks: the boundary and the whole message
# ---------------------------------------------------------------------------------------

def test_sequence_length_below_2_is_refused_before_any_work(capsys):
    """T = 1 has no contextual token: refused up front (no bar drawn, no model built) with the
    message naming T; T = 2 (one contextual token and the query) is the shortest that trains."""
    with pytest.raises(ValueError, match=r"^T \(sequence length\) must be an integer >= 2, got 1$"):
        train(syn_small(), steps=1, batch=4, T=1, progress=True)
    assert capsys.readouterr().err == ""
    res = train(syn_small(), steps=1, batch=4, T=2)
    assert res.config["T"] == 2 and res.loss.shape == (1, 1)


def test_lemma1_on_the_tokens_path_is_refused_with_the_whole_message():
    msg = "grad='lemma1' works on the counts path; use grad='autograd' with path='tokens'"
    with pytest.raises(ValueError, match="^" + re.escape(msg) + "$"):
        train(syn_small(), steps=1, path="tokens", grad="lemma1")


@pytest.mark.parametrize("kw", [dict(grad="autograd"), dict(residual=True)])
def test_support_path_refuses_autograd_and_the_residual_with_the_whole_message(kw):
    msg = ("path='support' computes Lemma 1's gradients without a residual: "
           "use path='counts' for grad='autograd' or residual=True")
    with pytest.raises(ValueError, match="^" + re.escape(msg) + "$"):
        train(syn_small(), steps=1, path="support", **kw)


def test_lr_grid_duplicate_message_says_why_duplicates_are_refused():
    from scansnap import lr_grid
    msg = ("lr_grid: seeds has duplicates [1]: a repeated value repeats runs "
           "(and a repeated seed silently shrinks the error bars)")
    with pytest.raises(ValueError, match="^" + re.escape(msg) + "$"):
        lr_grid([1.0], [1.0], [1, 2, 1])


# ---------------------------------------------------------------------------------------
# Options reach the model and the optimizer
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("residual", [False, True])
def test_normalize_and_residual_reach_the_model(residual):
    """One SGD step from Y = Z = 0 (Lemma 1, Eq. 3): alpha is uniform, so Y_1 = (eta/B) sum_b
    f_b (e_label(b) - 1/M)^T and, for a column j that is no sequence's label, the column sum is
    -(eta/M) mean_b ||f_b||_1. Without LN (normalize=False) f_b = c_b (+ e_query with the
    residual of Sec. 7), whose entries sum to 1 (+ 1): the column sum is exactly -eta/M (x 2).
    With LN it would be -(eta/M) mean 1/||c_b||_2 (> eta/M); without the residual, half."""
    import torch
    c = syn_small()
    eta = 0.5
    res = train(c, eta_y=eta, eta_z=1.0, seeds=3, steps=1, batch=16, T=12, normalize=False,
                residual=residual, dtype=torch.float64)
    not_labels = np.setdiff1d(np.arange(c.M), c.next_token)
    col = res.Y[0].sum(0).numpy()[not_labels]
    np.testing.assert_allclose(col, -eta / c.M * (1 + residual), rtol=0, atol=1e-15)


def test_support_path_adam_uses_the_given_betas():
    """Adam on the support path with non-default betas == Adam on the counts path with the
    same betas (float64; 1e-8 as in tests/test_fast_paths.py: Adam divides by sqrt(v)); the
    default betas move the weights by far more than that."""
    import torch
    kw = dict(eta_y=[0.05, 0.1], eta_z=[0.1, 0.05], seeds=[1, 2], steps=8, batch=16, T=16,
              optimizer="adam", dtype=torch.float64)
    a = train(syn_small(), path="counts", betas=(0.5, 0.8), **kw)
    b = train(syn_small(), path="support", betas=(0.5, 0.8), **kw)
    np.testing.assert_allclose(b.loss, a.loss, rtol=0, atol=1e-8)
    torch.testing.assert_close(b.Y, a.Y, rtol=0, atol=1e-8)
    torch.testing.assert_close(b.Z, a.Z, rtol=0, atol=1e-8)
    d = train(syn_small(), path="support", **kw)                 # betas (0.9, 0.999)
    assert (d.Z - a.Z).abs().max() > 1e-3


def test_path_option_picks_the_forward_pass_under_autograd(monkeypatch):
    """With grad='autograd', path='counts' runs the counts forward pass (Eq. 20) and
    path='tokens' the sequence forward pass (Eq. 1), once per step each; the two agree
    (float64, to rounding)."""
    import torch
    from scansnap.model import YZModel
    calls = []
    for name in ("forward_counts", "forward_tokens"):
        orig = getattr(YZModel, name)
        monkeypatch.setattr(YZModel, name, lambda self, *a, _o=orig, _n=name, **k: (calls.append(_n), _o(self, *a, **k))[1])
    kw = dict(eta_y=[0.5, 2.0], seeds=3, steps=3, batch=8, T=16, init="default", grad="autograd",
              dtype=torch.float64)
    a = train(syn_small(), path="counts", **kw)
    assert calls == ["forward_counts"] * 3
    calls.clear()
    b = train(syn_small(), path="tokens", **kw)
    assert calls == ["forward_tokens"] * 3
    np.testing.assert_allclose(a.loss, b.loss, rtol=1e-13, atol=0)
    torch.testing.assert_close(a.Z, b.Z, rtol=1e-12, atol=1e-14)


# ---------------------------------------------------------------------------------------
# Float32 runs compute in float32
# ---------------------------------------------------------------------------------------

def test_batched_optimizer_rounds_the_rate_to_the_parameters_dtype_like_torch_optim():
    """PyTorch's SGD on float32 parameters uses the rate as a float32 number. From p = 1 with
    g = 1 and rate 1/3 (float64): p = 1 - fl32(1/3) = 0.66666662693... in float32 (a tie
    rounded to even), not fl32(1 - 1/3) = 0.66666668653... (torch.optim.SGD gives the former;
    it is left out here because building the first torch optimizer costs ~2 s of imports)."""
    import torch
    from scansnap.train import BatchedOptimizer
    p = torch.ones(1, 1, 1, dtype=torch.float32)
    opt = BatchedOptimizer([(p, torch.tensor([1 / 3], dtype=torch.float64))], "sgd", momentum=0.9)
    p.grad = torch.ones_like(p)
    opt.step()
    want = np.float32(1) - np.float32(1 / 3)
    assert want == np.float32(11184810 * 2.0 ** -24)
    assert p.item() == want


@pytest.mark.parametrize("path,optimizer", [("counts", "sgd"), ("counts", "adam"), ("support", "sgd")])
def test_float32_run_trains_with_float32_rates(path, optimizer):
    """A float32 run does its arithmetic in float32, rates included: eta and its float32
    rounding fl32(eta) are the same float32 number, so they train the same run, bit for bit
    (a rate kept in float64 would promote the updates and round differently)."""
    import torch
    eta_y, eta_z = [0.1, 0.7], [0.3, 0.9]
    f32 = lambda v: [float(np.float32(x)) for x in v]
    assert f32(eta_y) != eta_y and f32(eta_z) != eta_z
    kw = dict(seeds=[1, 2], steps=4, batch=16, T=16, init="default", path=path, optimizer=optimizer,
              dtype=torch.float32)
    a = train(syn_small(), eta_y=eta_y, eta_z=eta_z, **kw)
    b = train(syn_small(), eta_y=f32(eta_y), eta_z=f32(eta_z), **kw)
    np.testing.assert_array_equal(a.loss, b.loss)
    assert torch.equal(a.Y, b.Y) and torch.equal(a.Z, b.Z)


# ---------------------------------------------------------------------------------------
# The divergence report: the tail, the line, the first crossing, the message
# ---------------------------------------------------------------------------------------

def test_divergence_tail_line_first_crossing_and_message():
    """20 steps; the line 10 x max(5, ln 34) = 50. Run 0 ends exactly on the line: not above
    it, not diverged. Run 1's last step is 90: diverged from step 19. Run 2 touches the line at
    step 3 (50, not above) and crosses it at step 18: diverged from step 18. Run 3's last step
    is 96: from step 19. The message lists the runs joined by '; ' and nothing after the last one."""
    L = np.full((4, 20), 5.0)
    L[0, -2:] = 50.0
    L[1, -1] = 90.0
    L[2, 3], L[2, -2:] = 50.0, 120.0
    L[3, -1] = 96.0
    d, msgs = _report(L)
    np.testing.assert_array_equal(d, [False, True, True, True])
    assert msgs == ["3 of 4 runs diverged (loss above 10 x max(initial loss, ln M) at some step; worst 120): "
                    "run 1 (eta_y=1, eta_z=2, seed=1) from step 19; "
                    "run 2 (eta_y=1, eta_z=2, seed=2) from step 18; run 3 (eta_y=1, eta_z=2, seed=3) from step 19. "
                    "Their numbers are no result; lower the learning rates."]


# ---------------------------------------------------------------------------------------
# Reproducibility: what a seed draws is part of every stored result
# ---------------------------------------------------------------------------------------

def test_a_seeds_data_stream_is_pinned_so_stored_results_stay_reproducible():
    """The book's stored outputs and the committed results name their seeds, not their data:
    the batches seed s draws (a generator seeded s + 1_000_003, apart from the init draw) must
    not change between versions, or every stored number silently stops reproducing. From
    Y = Z = 0 the first loss is ln M for any data; the next two depend on the batches drawn.
    Recorded at 6aba345 (float64, the CPU); two seeds, so the streams are also told apart."""
    import torch
    res = train(syn_small(), eta_y=1.0, eta_z=1.0, seeds=[0, 7], steps=3, batch=8, T=16, init="zero",
                dtype=torch.float64, path="counts", device="cpu")
    np.testing.assert_allclose(res.loss, [[3.5263605246161616, 3.282080215104535, 2.905461327499304],
                                          [3.5263605246161616, 3.3095743461275773, 2.8491799718205804]],
                               rtol=1e-12, atol=0)
