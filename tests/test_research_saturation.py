"""Researcher 4's report (a first user asking their own questions): the fixes, each with its trip.
Trip 1: an absurd eta_Y saturated the decoder in one step and compare() said agrees=True."""
from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch

from scansnap import SequenceClasses, sequence_classes, syn_small, train
from scansnap.train import DivergenceWarning

import scansnap.theory as th


@pytest.fixture(scope="module")
def own():
    """The researcher's classes: K=4, M=40, 2 queries, 4 common tokens, a tie at the top."""
    return sequence_classes(K=4, M=40, queries=2, num_common=4, num_distinct=6, common_weight=0.5,
                            distinct_weights=[0.05, 0.1, 0.2, 0.4, 0.8, 0.8])


# ---------------------------------------------------------------------------------------
# Trip 1: saturation in one step is no result (train flags it; predict/compare warn)
# ---------------------------------------------------------------------------------------

def test_a_run_saturated_in_one_step_is_flagged(own):
    """Was: Y ~1.5e8 after one step, loss exactly 0 from step 1, Z exactly 0, "0 diverged"."""
    with pytest.warns(DivergenceWarning, match=r"2 of 3 runs saturated \(loss exactly 0 within 2 updates") as w:
        res = train(own, eta_y=[1e5, 1e8, 5.0], eta_z=1.0, seeds=1, steps=20)
    assert "run 0 (eta_y=100000, eta_z=1, seed=1) saturated, loss exactly 0 from step 1" in str(w[0].message)
    assert res.loss[0, 1] == 0 and float(res.Z[0].abs().max()) == 0.0     # what the researcher saw
    np.testing.assert_array_equal(res.diverged, [True, True, False])
    assert "2 flagged (diverged or saturated" in repr(res)            # one flag, then its two causes
    assert "of them 0 diverged (loss ever above 10x its start), 2 saturated (loss exactly 0 within 2 steps)" in repr(res)
    with pytest.raises(ValueError, match=r"run\(s\) 0, 1 of the result diverged"), \
            pytest.warns(th.RegimeWarning, match="t0_steps < 1"):
        res.predict().compare(res)                                        # was: agrees=True in every row
    assert not res.to_frame().diverged[2]


def test_ordinary_runs_reach_a_loss_of_zero_later_and_are_not_flagged(own):
    """Float32 underflow once the decoder is sure (eta_Y=5, eta_Z=2: trip 2's run) is convergence."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", DivergenceWarning)
        res = train(own, eta_y=[5.0, 30.0], eta_z=[2.0, 5.0], seeds=1, steps=30)
    first_zero = [int(np.flatnonzero(l == 0)[0]) for l in res.loss]
    assert all(s > 2 for s in first_zero) and not res.diverged.any()


def _no_saturation(classes, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error", DivergenceWarning)
        res = train(classes, **kw)
    assert not res.diverged.any() and not np.any(res.loss[:, 1:3] == 0)
    return res


def test_no_book_run_saturates():
    """The book's settings (their first 3 steps, all the rule reads): Fig. 6's grid at the paper's
    default (640 runs per vocabulary, init="default"), Fig. 4's, chapters 3 and 5's, chapter 8's."""
    from scansnap.experiments import FIG6, snap_train_args, syn_medium_sweep
    from scansnap.data import make_classes
    with warnings.catch_warnings():
        warnings.simplefilter("error", DivergenceWarning)
        sweep = syn_medium_sweep(steps=3)
    assert sorted(sweep) == list(FIG6["num_last"])
    for _, res in sweep.values():
        assert len(res.seed) == 160 and not res.diverged.any() and not np.any(res.loss[:, 1:3] == 0)
    small = syn_small()
    for dtype in (torch.float32, torch.float64):                          # chapter 4 (Fig. 4) and 4A
        _no_saturation(small, eta_y=np.repeat([1.0, 10.0, 1.0], 5), eta_z=np.repeat([1.0, 1.0, 10.0], 5),
                       seeds=np.tile(np.arange(5), 3), steps=3, dtype=dtype)
    args = snap_train_args(steps=4)                                       # chapter 5's 25 rate pairs
    _no_saturation(small, **args)
    dec = make_classes(num_last=4, num_next_per_last=1, num_common=0, num_distinct=10)   # chapter 3
    _no_saturation(dec, eta_y=[0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0], eta_z=1e-8, seeds=0, steps=3, batch=512,
                   T=256, momentum=0.0, path="support")
    ov = make_classes(num_last=4, num_next_per_last=1, num_common=10, num_distinct=10)
    _no_saturation(ov, eta_y=1.0, eta_z=[1e-8, 1.0], seeds=0, steps=3, batch=256, T=256, momentum=0.0)
    eight = sequence_classes(K=3, M=40, num_common=5, num_distinct=8)    # chapter 8
    _no_saturation(eight, eta_y=np.repeat([1.0, 5.0, 20.0], 6), eta_z=3.0, seeds=np.tile(np.arange(1, 7), 3), steps=3)


def test_predict_and_compare_warn_when_t0_is_within_the_first_step(own):
    """t0_steps = 4e-7 at eta_Y = 1e8 was printed without a word."""
    with pytest.warns(th.RegimeWarning, match=r"1 run\(s\) have t0_steps < 1 \(e\.g\. run 1, eta_y=1e\+08"):
        p = th.predict(own, eta_y=[5.0, 1e8], eta_z=1.0, steps=5)
    assert p.t0_steps[1] < 1e-6 < 1 < p.t0_steps[0]
    res = train(own, eta_y=[1.0, 5.0], eta_z=1.0, seeds=0, steps=10)
    with warnings.catch_warnings():
        warnings.simplefilter("error", th.RegimeWarning)               # the ordinary runs: no word
        res.predict().compare(res)
    fast = train(syn_small(), eta_y=30.0, eta_z=1.0, seeds=0, steps=5)   # t0_steps 0.68: a word, but a result
    with pytest.warns(th.RegimeWarning):
        pr = fast.predict()
    with pytest.warns(th.RegimeWarning, match="^compare: "):
        pr.compare(fast)


def test_observed_transition_is_within_a_factor_2_of_t0_steps(own):
    """Trip 7, as compare()'s docstring says: the step of the fastest fall in common mass."""
    for ey in (2.0, 10.0):
        r = train(own, eta_y=ey, eta_z=2.0, seeds=[1, 2, 3], steps=30, snapshot_steps=range(31))
        t0 = r.predict().t0_steps[0]
        for i in range(3):
            obs = 1 + np.argmin(np.diff([r.common_mass(s)[i].mean() for s in range(31)]))
            assert t0 / 2 <= obs <= 2 * t0


# ---------------------------------------------------------------------------------------
# Trip 2: the log loss panel stopped silently where the loss reads exactly 0
# ---------------------------------------------------------------------------------------

def test_the_loss_panel_draws_a_loss_of_zero_on_a_named_floor(own):
    from scansnap import plots
    from scansnap.plots import cn_over_training
    Z = np.zeros((own.M, own.M))
    loss = np.array([3.7, 1.0, 1e-3, 2e-9, 0.0, 0.0])
    fig = cn_over_training(own, {0: Z}, n=0, loss=loss)
    ax2 = fig.axes[1]
    y = ax2.lines[0].get_ydata()
    assert np.all(y > 0) and y[-1] == 2e-9 == y[3]                     # below eps: the smallest loss is the floor
    assert "exactly 0" in ax2.get_legend().get_texts()[0].get_text()
    assert plots.legibility_problems(fig) == []                      # the legend at the book's 9 pt or more
    y = cn_over_training(own, {0: Z}, n=0, loss=np.array([3.7, 1.0, 0.0])).axes[1].lines[0].get_ydata()
    assert y[-1] == np.finfo(np.float32).eps
    assert cn_over_training(own, {0: Z}, n=0, loss=loss[:3]).axes[1].get_legend() is None


# ---------------------------------------------------------------------------------------
# Trip 8: fig6.png's dashed line at eta_Y / eta_Z = 1 was not in the legend
# ---------------------------------------------------------------------------------------

def test_fig6_legend_names_the_dashed_line():
    from scansnap.plots import entropy_sweep
    nl, ez, r = np.meshgrid([1, 3], [0.5, 1.0], [1, 2, 5], indexing="ij")
    fig = entropy_sweep(nl.ravel(), ez.ravel(), r.ravel(), np.linspace(1, 2, nl.size))
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == [r"$\eta_Z=0.5$", r"$\eta_Z=1$", r"$\eta_Y=\eta_Z$"]


# ---------------------------------------------------------------------------------------
# Trip 3: a token in some but not all classes was silently "common"
# ---------------------------------------------------------------------------------------

def test_a_token_shared_by_some_classes_is_common_with_a_warning(own):
    from scansnap.data import ClassLayoutWarning, SharedTokenWarning
    from scansnap.metrics import common_mass
    P = np.array(own.probs)
    P[1, 4] = P[0, 4]                                     # class 0's distinct token 4, now in class 1 too
    part = SequenceClasses(P / P.sum(1, keepdims=True), query=own.query, next_token=own.next_token)
    assert part.partly_shared_tokens.tolist() == [4] and 4 in part.common_tokens
    with pytest.warns(SharedTokenWarning, match=r"roles\(\): 1 token\(s\) are in some but not all of the 4 classes' "
                                                r"contexts \(token 4 in classes 0, 1\): they count as common"):
        roles = part.roles()
    assert roles[4] == "common" and issubclass(SharedTokenWarning, ClassLayoutWarning)
    with pytest.warns(SharedTokenWarning, match="^common_mass: "):
        common_mass(part, np.zeros((part.M, part.M)))
    with warnings.catch_warnings():
        warnings.simplefilter("error", SharedTokenWarning)          # every class's common tokens: no word
        own.roles(), common_mass(own, np.zeros((own.M, own.M)))
    assert own.partly_shared_tokens.size == 0


# ---------------------------------------------------------------------------------------
# Trip 4: help(scansnap.theory.predict) after a plain `import scansnap`
# ---------------------------------------------------------------------------------------

def test_a_plain_import_reaches_the_submodules():
    code = ("import sys, scansnap; assert 'scansnap.plots' not in sys.modules; "
            "import pydoc; assert 'Everything the theory predicts' in pydoc.render_doc(scansnap.theory.predict); "
            "scansnap.experiments.read_results; scansnap.metrics.common_mass; scansnap.plots.entropy_sweep; "
            "assert 'theory' in dir(scansnap); print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
    import scansnap
    with pytest.raises(AttributeError, match="has no attribute 'nonesuch'"):
        scansnap.nonesuch


# ---------------------------------------------------------------------------------------
# Trips 5 and 6: a stray CSV in a results folder; a deleted record
# ---------------------------------------------------------------------------------------

def test_a_stray_csv_is_skipped_by_name_and_a_deleted_record_is_named(tmp_path, own):
    from scansnap.experiments import UnlistedFileWarning, read_results
    res = train(own, eta_y=[1.0, 5.0], eta_z=1.0, seeds=0, steps=5)
    res.save(tmp_path)
    (tmp_path / "stray.csv").write_text("a,b\n1,2\n")
    with pytest.warns(UnlistedFileWarning, match=r"stray\.csv is listed by no provenance record .*move it out"):
        back = read_results(tmp_path, paper=False)                    # was: the whole folder refused
    assert sorted(back) == ["train", "train_attention", "train_classes", "train_loss"]
    (tmp_path / "train.provenance.json").unlink()
    with pytest.raises(ValueError, match=r"train(_attention)?\.csv has no provenance record: its record "
                                         r"train\.provenance\.json is missing"):
        read_results(tmp_path, paper=False)                           # was: "not written by reproduce"
    (tmp_path / "stray.csv").unlink()
    for p in tmp_path.glob("train*.csv"):
        p.rename(tmp_path / p.name.replace("train", "fig6", 1))
    with pytest.raises(ValueError, match=r"its record fig6\.provenance\.json is missing"):
        read_results(tmp_path, paper=False)
