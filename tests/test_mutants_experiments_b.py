"""Tests for mutants of scansnap/experiments.py that the suite let survive or reached in no
test (issue 28; mutmut run at d368bf7, ``scansnap.experiments.x_<function>__mutmut_<n>``):
fig10_groups, book_results' call, snap_train_args' snapshot grid, change_per_doubling,
population_loss, SnapSweep.peak / late_fraction and snap_sweep's wiring."""
import numpy as np
import pytest
import torch

import scansnap._validate as validate
import scansnap.experiments as ex
from scansnap import make_classes, syn_medium, train
from scansnap.experiments import SnapSweep, change_per_doubling, population_loss, snap_sweep, snap_train_args

RUNS = [(1e-3, 0), (1e-3, 1), (2e-3, 0), (3e-3, 2), (2e-3, 1)]


@pytest.fixture
def fake_device(monkeypatch):
    """resolve_device without a GPU check: "cuda" names a CUDA device, None the CPU."""
    monkeypatch.setattr(validate, "resolve_device", lambda d: torch.device(d or "cpu"))


def test_fig10_groups_one_run_a_group_on_a_cpu(fake_device):
    """Kills fig10_groups 1 (no device), 3 (condition inverted), 5 (`or True` ignores batched)."""
    assert ex.fig10_groups(RUNS, "cpu") == [[r] for r in RUNS]
    assert ex.fig10_groups(RUNS, "cpu", batched=False) == [[r] for r in RUNS]


def test_fig10_groups_on_a_gpu_groups_the_runs_of_a_seed_in_order_of_first_appearance(fake_device):
    """Kills fig10_groups 2 (device ignored), 4, 6-9 (the GPU test), 10-17 (the grouping)."""
    by_seed = [[(1e-3, 0), (2e-3, 0)], [(1e-3, 1), (2e-3, 1)], [(3e-3, 2)]]
    assert ex.fig10_groups(RUNS, "cuda") == by_seed
    assert ex.fig10_groups(RUNS, "cpu", batched=True) == by_seed
    assert ex.fig10_groups(RUNS, "cuda", batched=False) == [[r] for r in RUNS]


def test_book_results_reads_the_csvs_with_the_papers_settings(monkeypatch):
    """Kills book_results 9, 10, 14, 15 (paper / every_file changed)."""
    asked = []
    monkeypatch.setattr(ex, "_read_results", lambda folder, paper, every_file: asked.append((paper, every_file)) or {})
    assert ex.book_results() == {}
    assert asked == [(True, False)] and type(asked[0][0]) is bool and type(asked[0][1]) is bool


def test_book_results_without_results_says_how_to_make_them(monkeypatch):
    """Kills book_results 16-18 (the message)."""
    def missing(folder, paper, every_file):
        raise FileNotFoundError("nothing")
    monkeypatch.setattr(ex, "_read_results", missing)
    with pytest.raises(FileNotFoundError) as e:
        ex.book_results()
    assert str(e.value).startswith("no results in ")
    assert str(e.value).endswith(" (the book's own): make them with `python -m scansnap reproduce all --out "
                                 "scansnap/results`")


def test_snap_train_args_names_its_bad_arguments():
    """Kills snap_train_args 2, 6, 7 (the name of steps) and 13 (the empty-etas message)."""
    with pytest.raises(ValueError) as e:
        snap_train_args(steps=0)
    assert str(e.value) == "steps must be an integer >= 1, got 0"
    with pytest.raises(ValueError) as e:
        snap_train_args(etas=())
    assert str(e.value) == "snap_train_args: etas is empty"


def test_snap_train_args_saves_every_step_to_64_the_doublings_and_a_log_grid():
    """Kills snap_train_args 16, 17, 19, 22 (the doublings), 25 (floats), 29-33 (the log grid),
    36 (`&`), 40 (65 kept) and 62 (the optimizer dropped)."""
    args = snap_train_args(etas=(0.5, 1.0), steps=256)
    snaps = args["snapshot_steps"]
    assert all(type(s) is int for s in snaps)
    assert snaps[:65] == list(range(65))
    assert snaps[65:] == [69, 75, 83, 91, 100, 110, 121, 128, 133, 146, 160, 176, 193, 212, 233, 256]
    assert args["optimizer"] == "sgd" and args["momentum"] == 0.9 and args["steps"] == 256
    assert args["eta_y"] == [0.5, 0.5, 1.0, 1.0] and args["eta_z"] == [0.5, 1.0, 0.5, 1.0]
    assert args["seeds"] == [1] * 4
    s4096 = snap_train_args(etas=(1.0,), steps=4096)["snapshot_steps"]
    assert {2 ** k for k in range(13)} <= set(s4096) and 65 not in s4096 and 66 not in s4096


def test_change_per_doubling_computes_in_floats():
    """Small unsigned ints would wrap in their own type. Kills change_per_doubling 3, 5."""
    c = np.array([[3, 0], [1, 2]], dtype=np.uint8)
    out = change_per_doubling(c)
    np.testing.assert_array_equal(out, [4.0])
    assert out.dtype == np.float64


POP_LOSS = 2.804954269675081     # computed once, with the unmutated code


def _classes_and_weights(scale=1.0):
    cls = make_classes(2, num_common=1, num_distinct=2)
    g = np.random.default_rng(0)
    return cls, scale * g.standard_normal((cls.M, cls.M)), g.standard_normal((cls.M, cls.M))


def test_population_loss_by_value():
    """Kills population_loss 7, 9, 12 (another normalisation of c) and 29 (the max over classes)."""
    cls, Y, Z = _classes_and_weights()
    assert population_loss(cls, Y, Z) == pytest.approx(POP_LOSS, rel=1e-12)


def test_population_loss_stays_finite_for_large_logits():
    """The per-row max is subtracted before the exp. Kills population_loss 23 (`+ max`: exp
    overflows) and 24, 26 (one max over everything: the smaller row underflows)."""
    from scipy.special import log_softmax
    from scansnap.theory import attention_limit_all
    cls, Y, Z = _classes_and_weights(scale=3000.0)
    c = attention_limit_all(cls, Z)
    f = c / np.linalg.norm(c, axis=-1, keepdims=True)
    expected = -np.mean(log_softmax(f @ Y, axis=-1)[np.arange(cls.K), cls.next_token])
    got = population_loss(cls, Y, Z)
    assert np.isfinite(got) and got == pytest.approx(expected, rel=1e-9)


def _sweep(flow_early_change):
    change = {"sgd": np.array([[1.0, 3.0, 0.1], [2.0, 0.5, 1.0]]),
              "population": np.array([[0.2, 0.4, 0.3], [0.1, 0.1, 0.05]]),
              "flow": np.array([[1.0, 2.0, 0.5], [4.0, 1.0, 0.2]])}
    return SnapSweep(None, [(1.0, 1.0), (2.0, 2.0)], np.array([1, 2, 4, 8]), [1, 2, 4, 8], None, None, None,
                     change, None, None, 0.9, np.array([0.25, 0.5]), flow_early_change)


def test_peak_is_each_runs_largest_change_and_the_flows_counts_its_early_doublings():
    """Kills SnapSweep.peak 1-17 (reached by no test in-process before) and late_fraction 1-5."""
    sw = _sweep(np.array([[5.0, 0.1], [0.3, 0.2]]))
    np.testing.assert_array_equal(sw.peak("sgd"), [3.0, 2.0])
    np.testing.assert_array_equal(sw.peak("population"), [0.4, 0.1])
    np.testing.assert_array_equal(sw.peak("flow"), [5.0, 4.0])
    np.testing.assert_array_equal(sw.late_fraction("sgd"), [0.1 / 3.0, 1.0 / 2.0])
    np.testing.assert_array_equal(sw.late_fraction("flow"), [0.5 / 5.0, 0.2 / 4.0])
    np.testing.assert_array_equal(_sweep(None).peak("flow"), [2.0, 4.0])
    with pytest.raises(ValueError) as e:
        sw.late_fraction("adam")
    assert str(e.value) == "kind must be one of ['flow', 'population', 'sgd'], got 'adam'"


def test_snap_sweep_of_two_unlike_classes_by_value():
    """Class 0's attention (class 1 differs here: its common token weighs less), momentum 0.5
    passed on to the population run and kept, the default 40-point log grid of flow times, the
    objects it was given. Kills snap_sweep 1 (41 points), 62 (momentum dropped), 77, 147, 155
    (class 1's attention), 95-98 (the flow's time grid), 180, 184, 188, 190 (fields None)."""
    from scansnap.data import two_classes
    cls = two_classes(common=(5.0,), distinct=(1, 2, 3, 4), M=16, common_1=(1.0,))
    sgd = train(cls, eta_y=[1.0], eta_z=[2.0], steps=8, snapshot_steps=[1, 2, 4, 8], optimizer="sgd", momentum=0.5)
    sw = snap_sweep(cls, sgd, momentum=0.5, flow_early=2)
    assert sw.classes is cls and sw.sgd is sgd and sw.momentum == 0.5
    assert len(sw.flow_t) == 42 and sw.flow_t[0] == 1.0 and sw.flow_t[-1] == 8.0
    np.testing.assert_allclose(sw.flow_t[1:4], [1.0547660764816467, 1.1125314760964868, 1.1734604600046263],
                               rtol=1e-12)
    np.testing.assert_allclose(sw.change["population"],
                               [[0.0028965995033455316, 0.016698828044314176, 0.01386862902033359]], rtol=1e-9)
    np.testing.assert_allclose(sw.change["flow"],
                               [[0.010406974735199609, 0.014888794953849455, 0.01081860087121754]], rtol=1e-6)
    np.testing.assert_allclose(sw.flow_early_change, [[0.00105078395505942, 0.003815163770482133]], rtol=1e-6)
    np.testing.assert_allclose(sw.change["sgd"], [[0.000772718486418647, 0.01043213413167729, 0.015480889762381045]],
                               rtol=1e-5)


def test_snap_sweep_takes_momentum_zero():
    """Plain SGD (momentum 0) is in [0, 1). Kills snap_sweep 5 (`0 < momentum`)."""
    cls = syn_medium(1)
    sgd = train(cls, eta_y=[1.0], eta_z=[1.0], steps=2, snapshot_steps=[1, 2], optimizer="sgd", momentum=0.0)
    sw = snap_sweep(cls, sgd, momentum=0.0, flow_points=2, flow_early=0)
    assert sw.momentum == 0.0 and sw.change["flow"].shape == (1, 1)
