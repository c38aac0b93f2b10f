"""Issue 28, the Python API: bad input to the theory helpers, the metrics, the trainers and the
CSV reader is a ValueError naming the value, never a NaN, an out-of-domain number or a hang.

Each test here failed before its fix (the issue's list: what each returned then is in a comment).
"""
import math
import warnings

import numpy as np
import pytest
from scansnap.metrics import UndefinedEntropyWarning
import torch

from scansnap import experiments as ex
from scansnap import theory as th
from scansnap.data import SequenceClasses, syn_small
from scansnap.lm import train_lm, train_lms
from scansnap.metrics import distinct_entropy
from scansnap.train import lr_grid, train


@pytest.fixture(autouse=True)
def _warnings_are_errors():
    """A RuntimeWarning (0/0, log of a negative) is how the old code answered: not allowed here."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


# ---------------------------------------------------------------------------------------
# Theory helpers: out of their domain is an error, inside it a number
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("probs, match", [
    ([0.0, 0.0, 0.0], r"probs_row \(P\(l\|n\)\) has no probability mass"),            # was all-NaN
    ([0.5, -0.5, 1.0], r"must hold probabilities \(finite, >= 0\): -0\.5 at index \(1,\)"),   # was NaN
    ([0.5, np.nan, 0.5], r"must hold probabilities .*nan at index \(1,\)"),
    ([[0.5, 0.5], [1.0]], r"rows have different lengths"),                               # numpy's words
])
@pytest.mark.parametrize("fn", [th.attention_limit, th.f_limit])
def test_attention_limit_refuses_what_is_not_a_distribution(fn, probs, match):
    with pytest.raises(ValueError, match=match):
        fn(probs, np.zeros(3))


def test_attention_limit_takes_zeros_and_refuses_bad_logits():
    c = th.attention_limit([0.5, 0.0, 0.5], [0.0, 5.0, math.log(3)])
    np.testing.assert_allclose(c, [0.25, 0.0, 0.75], rtol=1e-15)                 # a 0 is a token never seen
    with pytest.raises(ValueError, match=r"z_row is not finite at index \(1,\)"):
        th.attention_limit([0.5, 0.5], [0.0, np.inf])
    with pytest.raises(ValueError, match=r"z_row must have one logit per token \(3\), got shape \(2,\)"):
        th.attention_limit([0.2, 0.3, 0.5], [0.0, 1.0])


@pytest.mark.parametrize("h, M, match", [
    (-1, 10, r"^h must be finite and >= 0, got -1\.0$"),                 # was -9.0
    (np.nan, 10, r"^h must be finite and >= 0, got nan$"),               # was nan
    (0.5, 0, r"^M must be an integer >= 2, got 0$"),                     # was inf
    (0.5, 1.5, r"^M must be an integer >= 2, got 1\.5$"),
])
def test_gamma_of_h_domain(h, M, match):
    with pytest.raises(ValueError, match=match):
        th.gamma_of_h(h, M)


def test_gamma_of_h_tends_to_its_limit_without_overflow_warnings():
    assert th.gamma_of_h(1e5, 10) == 0.0                                  # exp overflows to inf: the limit, 0
    assert th.gamma_of_h(0.0, 10) == 0.0
    assert th.gamma_of_h(0.1, 10) == pytest.approx(81 * 0.1 / (9 + math.e), rel=1e-15)


@pytest.mark.parametrize("t, match", [
    ([-1.0], r"^t_eval must be finite and >= 0, got -1\.0$"),            # integrated backwards: -0.0100
    ([np.nan], r"^t_eval must be finite and >= 0, got nan$"),            # never returned
    ([1.0, np.inf], r"^t_eval must be finite and >= 0, got inf$"),
    ([], r"^t_eval is empty"),                                            # numpy's zero-size reduction
    ([[1, 2], [3]], r"rows have different lengths"),
])
def test_h_ode_domain(t, match):
    with pytest.raises(ValueError, match=match):
        th.h_ode(t, 10, 1.0)


def test_h_ode_at_zero_and_in_any_order_is_h_closed():
    assert th.h_ode([0.0], 10, 1.0).tolist() == [0.0]                        # was an IndexError
    t = np.array([30.0, 0.0, 2.0, 30.0, 7.5])                                 # unsorted, repeated: solve_ivp refused
    np.testing.assert_allclose(th.h_ode(t, 10, 1.0), th.h_closed(t, 10, 1.0), rtol=1e-8, atol=1e-14)


@pytest.mark.parametrize("call", [
    lambda: th.B_n(-5, 10, 10, 1.0, 1.0, 1.0),       # said "got -0.5" (t/K)
    lambda: th.Gamma(-5, 10, 10, 1.0, 1.0),
    lambda: th.gamma(-5, 10, 2, 1.0),                # said "got -2.0" (t/K, rounded up)
])
def test_a_negative_time_is_named_as_given(call):
    with pytest.raises(ValueError, match=r"^time t must be finite and >= 0, got -5\.0$"):
        call()


@pytest.mark.parametrize("call, match", [
    (lambda: th.zeta(1, 0), r"^M must be an integer >= 2, got 1$"),          # ZeroDivisionError
    (lambda: th.zeta(5, 7), r"^n must be a token id in \[0, 5\), got 7$"),    # IndexError
    (lambda: th.zeta(5, -1), r"^n must be a token id in \[0, 5\), got -1$"),  # silently the last token
    (lambda: th.q_constants(1), r"^M must be an integer >= 2, got 1$"),
    (lambda: th.relative_gain([0.5, 0.5, 0.0], [0.0, 0.0, 0.0], 0, 2),
     r"P\(l'=2 \| n\) = 0: the relative gain over a token that never appears is undefined"),   # inf
    (lambda: th.relative_gain([0.5, 0.5], [0.0, 0.0], 0, 2), r"^l2 must be a token id in \[0, 2\), got 2$"),
])
def test_theory_helpers_name_what_is_out_of_their_domain(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_omega1_for_a_huge_vocabulary():
    """omega1(10**300) leaked numpy's 'no callable log method' (a Python int past int64): it is a number."""
    w = th.omega1(10 ** 300)
    M = 1e300
    assert 0 < w < 1 and abs(w * math.log(M) - math.log((1 + w) * (1 - 1 / M) * math.log(M))) < 1e-9
    assert th.omega1(10 ** 20) == pytest.approx(th.omega1(np.int64(10 ** 18)), rel=0.2)
    with pytest.raises(ValueError, match=r"M = 1000\.\.\.e\+400 is too large for a float"):
        th.omega1(10 ** 400)


# ---------------------------------------------------------------------------------------
# Metrics: 0/0 is never the best value
# ---------------------------------------------------------------------------------------

def test_distinct_entropy_when_the_distinct_share_underflows():
    """Common tokens at logit +1000: each class's attention on its distinct tokens underflows to
    exactly 0, and renormalising it was 0/0 = NaN, read as entropy 0 (the best value). Issue 28
    named the conditional entropy (2.151) as the true value; researcher 5 then met the same case
    at eta_Z = 300, where that conditional entropy of a negligible share read 3.5e-10, "perfectly
    sparse", for a class whose attention sat wholly on a common token. The design choice: below
    metrics.DISTINCT_MASS_MIN (1e-6) of the attention on G_DT(n) the distinct-token entropy is
    NaN with an UndefinedEntropyWarning naming the class - never the best value, never a number
    for a share the class does not use. Just above it, the conditional entropy is computed from
    the logits (Eq. 5 restricted), so it never divides 0 by 0."""
    c = syn_small()
    Z = np.zeros((c.M, c.M))
    Z[:, c.common_tokens] = 1000.0
    with pytest.warns(UndefinedEntropyWarning, match="attention on its distinct tokens"):
        got = distinct_entropy(c, Z)
    assert np.isnan(got)                                  # not 0.0, the best value
    # a share of ~1e-5 (common logits at +10): still measured, and equal to the conditional entropy
    Z[:, c.common_tokens] = 10.0
    ents = []
    for n in range(c.K):
        q = c.probs[n, c.distinct_tokens(n)]
        q = q / q.sum()
        ents.append(-(q * np.log(q)).sum())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert distinct_entropy(c, Z) == pytest.approx(np.mean(ents), rel=1e-12)
    assert np.mean(ents) == pytest.approx(2.151281720651836, rel=1e-12)
    # and where nothing underflows, it is still the renormalised c_n (Eq. 5) of before
    Zr = np.random.default_rng(0).normal(size=(3, c.M, c.M))
    cn = th.attention_limit_all(c, Zr)
    d = np.where(c.distinct_mask, cn, 0.0)
    d /= d.sum(-1, keepdims=True)
    ent = -np.sum(np.where(d > 0, d * np.log(np.where(d > 0, d, 1)), 0), -1).mean(-1)
    np.testing.assert_allclose(distinct_entropy(c, Zr), ent, rtol=1e-12)


# ---------------------------------------------------------------------------------------
# Tables and seeds
# ---------------------------------------------------------------------------------------

def test_ragged_probability_rows_are_named():
    with pytest.raises(ValueError, match=r"^probs must be a rectangular array of numbers; its rows have "
                                         r"different lengths \(\[\(1,\), \(2,\)\]\)$"):
        SequenceClasses([[0.5, 0.5], [1.0]], [0, 1], [1, 0])


@pytest.mark.parametrize("bad", [2 ** 64 - 1, 2 ** 63, -2 ** 63 - 1, 2 ** 70])
def test_a_seed_past_int64_is_named_not_wrapped(bad):
    c = syn_small()
    msg = rf"seed must be an integer in \[-2\*\*63, 2\*\*63 - 1\] \(a signed 64-bit integer\), got {bad}"
    with pytest.raises(ValueError, match=msg):                # was torch's "Overflow when unpacking long long"
        train(c, seeds=[bad], steps=1, batch=2, T=4)
    with pytest.raises(ValueError, match=r"lr_grid: seeds must be an integer in \[-2\*\*63"):
        lr_grid([1.0], [1.0], [1, bad])                       # 2**64 - 1 became seed -1 in the grid
    with pytest.raises(ValueError, match=msg):
        train_lms(torch.arange(200) % 7, 7, [1.0], [bad], steps=1, batch=2, bptt=3, d=4, d_hidden=4)
    with pytest.raises(ValueError, match=msg):
        train_lm(torch.arange(200) % 7, 7, seed=bad, steps=1, batch=2, bptt=3, d=4, d_hidden=4)


def test_the_largest_int64_seed_trains():
    c = syn_small()
    r = train(c, seeds=[2 ** 63 - 1, 0], steps=1, batch=2, T=4)
    assert r.seed.tolist() == [2 ** 63 - 1, 0]
    assert lr_grid([1.0], [1.0], [2 ** 63 - 1])[2].tolist() == [2 ** 63 - 1]


def test_duplicate_checks_are_linear():
    """80,000 seeds took 47 s in the command line's duplicate check (list.count per seed); the
    grid's and the LM's checks had the same shape."""
    import time
    t0 = time.perf_counter()
    ey, ez, sd = lr_grid([1.0], [1.0], list(range(200_000)))
    from scansnap.lm import _runs
    _runs([1.0], list(range(200_000)))
    assert len(sd) == 200_000 and time.perf_counter() - t0 < 20          # generous: seconds, not minutes
    with pytest.raises(ValueError, match=r"lr_grid: seeds has duplicates \[7\]"):
        lr_grid([1.0], [1.0], list(range(50_000)) + [7])


# ---------------------------------------------------------------------------------------
# The WikiText trainer: a last update that diverges is a divergence, not a result
# ---------------------------------------------------------------------------------------

def _ids():
    return torch.randint(0, 50, (3000,), generator=torch.Generator().manual_seed(0))


def test_a_diverged_last_update_is_reported_not_returned():
    ids = _ids()
    kw = dict(d=16, d_hidden=16, steps=1, batch=4, bptt=8, probe=ids[:8], snapshot_steps=[0, 1])
    # lr 1e30: the loss of step 0 is finite, its update is not; the old code returned NaN maps
    with pytest.raises(FloatingPointError, match=r"1-layer LM \(lr=1e\+30, seed=0\) diverged at its last "
                                                 r"update \(step 0\): its output after it is not finite"):
        train_lm(ids, 50, lr=1e30, **kw)
    with pytest.raises(FloatingPointError, match=r"run 1 \(1-layer LM, lr=1e\+30, seed=0\) diverged at its last"):
        train_lms(ids, 50, [1.0, 1e30], [0, 0], **kw)
    with pytest.raises(FloatingPointError, match=r"diverged at its last update"):   # no snapshot asked
        train_lm(ids, 50, lr=1e30, d=16, d_hidden=16, steps=1, batch=4, bptt=8)
    r = train_lm(ids, 50, lr=1.0, **kw)                                                 # a sane rate passes
    assert all(bool(torch.isfinite(a).all()) for a in r.snapshots[1])


def test_a_rate_the_weights_dtype_cannot_hold_is_named():
    with pytest.raises(ValueError, match=r"lr = 1e\+39 is larger than the largest torch.float32"):
        train_lm(_ids(), 50, lr=1e39, d=16, d_hidden=16, steps=1, batch=4, bptt=8)   # torch's overflow error


# ---------------------------------------------------------------------------------------
# Reading results back: no NaN without comment
# ---------------------------------------------------------------------------------------

def test_load_csv_refuses_non_finite_numbers_except_where_undefined(tmp_path):
    p = tmp_path / "fig6.csv"
    p.write_text("seed,entropy\n1,0.5\n2,inf\n")
    with pytest.raises(ValueError, match=r"fig6\.csv, line 3: entropy = 'inf' is not a finite number"):
        ex.load_csv(p)
    p.write_text("seed,entropy\n1,nan\n")
    with pytest.raises(ValueError, match=r"line 2: entropy = 'nan' is not a finite number \(a diverged run"):
        ex.load_csv(p)
    q = tmp_path / "freeze.csv"                           # its first row has no change and no loss yet
    q.write_text("iteration,entropy,change,loss\n0,2.4,nan,nan\n250,1.5,35,6.7\n")
    got = ex.load_csv(q)
    assert np.isnan(got["change"][0]) and got["loss"][1] == 6.7
    q.write_text("iteration,entropy,change,loss\n0,nan,nan,nan\n")
    with pytest.raises(ValueError, match=r"entropy = 'nan' is not a finite number"):
        ex.load_csv(q)
