"""Chapter 5's additions to theory.py: the population dynamics stepped by SGD with momentum."""
import numpy as np
import pytest
import torch

from scansnap import make_classes, syn_medium, syn_small, train
from scansnap import theory as th


def _reference(classes, eta_y, eta_z, steps, momentum):
    """The same update written with theory.expected_gradients, one run at a time."""
    M = classes.M
    Y, Z, vY, vZ = (np.zeros((M, M)) for _ in range(4))
    for _ in range(steps):
        dY, dZ = th.expected_gradients(classes, Y, Z)
        vY, vZ = momentum * vY + dY, momentum * vZ + dZ
        Y, Z = Y + eta_y * vY, Z + eta_z * vZ
    return Y, Z


@pytest.mark.parametrize("classes", [syn_medium(1), syn_small(), syn_medium(2, 3)])
@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_population_sgd_is_expected_gradient_with_momentum(classes, momentum):
    etas_y, etas_z = [0.5, 2.0], [1.0, 0.3]
    run = th.population_sgd(classes, etas_y, etas_z, 25, momentum=momentum, snapshot_steps=[0, 25])
    for r, (ey, ez) in enumerate(zip(etas_y, etas_z)):
        Y, Z = _reference(classes, ey, ez, 25, momentum)
        np.testing.assert_allclose(run.Y[r], Y, atol=1e-12)
        np.testing.assert_allclose(run.Z[r], Z, atol=1e-12)
        np.testing.assert_allclose(run.snapshots[25][r], Z, atol=1e-12)
    assert not run.snapshots[0].any()
    # the loss before the first step: alpha is uniform over the M tokens, loss ln M
    np.testing.assert_allclose(run.loss[:, 0], np.log(classes.M), rtol=1e-12)


def test_population_sgd_without_momentum_follows_the_gradient_flow():
    """Small steps, no momentum: Euler steps of the flow that population_dynamics integrates."""
    cls = syn_medium(1)
    eta, steps = 0.02, 200                                   # flow time eta * steps = 4 (rates 1)
    run = th.population_sgd(cls, eta, eta, steps, momentum=0.0)
    flow = th.population_dynamics(cls, 1.0, 1.0, eta * steps, t_eval=[eta * steps], rtol=1e-9, atol=1e-12)
    err = np.abs(run.Z[0] - flow.Z[-1]).max() / np.abs(flow.Z[-1]).max()
    assert err < 0.02, err
    run2 = th.population_sgd(cls, eta / 2, eta / 2, 2 * steps, momentum=0.0)
    err2 = np.abs(run2.Z[0] - flow.Z[-1]).max() / np.abs(flow.Z[-1]).max()
    assert err2 < 0.6 * err                                  # first order in the step size


def test_population_sgd_is_the_large_T_large_batch_limit_of_train():
    """SGD's Z approaches the population run as batch and T grow (sampling error ~ 1/sqrt(BT))."""
    cls = syn_small()
    pop = th.population_sgd(cls, 1.0, 1.0, 4)
    err = {}
    for batch, T in [(128, 256), (512, 1024)]:
        sgd = train(cls, eta_y=1.0, eta_z=1.0, seeds=[0, 1], steps=4, batch=batch, T=T,
                    dtype=torch.float64, device="cpu")
        err[T] = np.mean([np.abs(sgd.Z[r].numpy() - pop.Z[0]).max() for r in range(2)])
        err[T] /= np.abs(pop.Z[0]).max()
    assert err[1024] < 0.3 and err[1024] < 0.75 * err[256], err
    np.testing.assert_allclose(sgd.loss.mean(0), pop.loss[0], rtol=0.05)


@pytest.mark.parametrize("kwargs,match", [
    (dict(eta_y=-1.0), "eta_y"), (dict(eta_z=0.0), "eta_z"), (dict(eta_y=float("nan")), "eta_y"),
    (dict(momentum=1.0), "momentum"), (dict(momentum=-0.1), "momentum"),
    (dict(steps=0), "steps"), (dict(snapshot_steps=[11]), "snapshot"),
    (dict(eta_y=[1.0, 2.0], eta_z=[1.0, 2.0, 3.0]), "one value per run"),
])
def test_population_sgd_rejects_bad_input(kwargs, match):
    args = dict(eta_y=1.0, eta_z=1.0, steps=10)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        th.population_sgd(make_classes(2), **args)


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_population_sgd_agrees_with_population_steps(momentum):
    """The batched chapter-5 version and the single-run version through BatchedOptimizer."""
    cls = syn_medium(1)
    run = th.population_sgd(cls, [0.5, 2.0], [1.0, 0.3], 30, momentum=momentum)
    for r, (ey, ez) in enumerate([(0.5, 1.0), (2.0, 0.3)]):
        losses, Y, Z = th.population_steps(cls, ey, ez, 30, momentum=momentum)
        np.testing.assert_allclose(run.loss[r], losses, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(run.Y[r], Y, atol=1e-10)
        np.testing.assert_allclose(run.Z[r], Z, atol=1e-10)


# ---------------------------------------------------------------------------------------
# experiments.snap_sweep: chapter 5's three dynamics (both of its pages build on it)
# ---------------------------------------------------------------------------------------

def test_snap_train_args_cover_the_grid_and_the_doublings():
    from scansnap.experiments import snap_train_args
    args = snap_train_args(etas=(0.5, 2.0), seed=3, steps=100)
    assert list(zip(args["eta_y"], args["eta_z"])) == [(0.5, 0.5), (0.5, 2.0), (2.0, 0.5), (2.0, 2.0)]
    assert args["seeds"] == [3] * 4 and args["steps"] == 100 and args["momentum"] == 0.9
    snaps = args["snapshot_steps"]
    assert snaps == sorted(set(snaps)) and max(snaps) <= 100
    assert set(range(65)) | {1, 2, 4, 8, 16, 32, 64} <= set(snaps)
    with pytest.raises(ValueError, match="etas is empty"):
        snap_train_args(etas=())


def test_change_per_doubling_and_population_loss():
    from scansnap.experiments import change_per_doubling, population_loss
    c = np.array([[1.0, 0.0], [0.5, 0.5], [0.5, 0.5], [0.0, 1.0]])
    np.testing.assert_allclose(change_per_doubling(c), [1.0, 0.0, 1.0])
    np.testing.assert_allclose(change_per_doubling(np.stack([c, c])), [[1.0, 0.0, 1.0]] * 2)
    cls = syn_medium(1)
    zero = np.zeros((cls.M, cls.M))
    np.testing.assert_allclose(population_loss(cls, zero, zero), np.log(cls.M), rtol=1e-12)


def test_snap_sweep_matches_its_parts():
    """The sweep's population and flow are population_sgd and population_dynamics themselves."""
    from scansnap.experiments import snap_sweep, snap_train_args, population_loss
    cls = syn_medium(1)
    args = snap_train_args(etas=(1.0, 2.0), steps=32)
    sgd = train(cls, **args)
    sw = snap_sweep(cls, sgd, flow_points=5)
    assert sw.grid == [(1.0, 1.0), (1.0, 2.0), (2.0, 1.0), (2.0, 2.0)] and sw.run(2.0, 1.0) == 2
    np.testing.assert_array_equal(sw.doublings, [1, 2, 4, 8, 16, 32])
    for kind in ("sgd", "population", "flow"):
        assert sw.change[kind].shape == (4, 5) and np.all(np.isfinite(sw.change[kind]))
    pop = th.population_sgd(cls, 2.0, 1.0, 32, snapshot_steps=[4, 8])
    np.testing.assert_allclose(sw.population.loss[2], pop.loss[0], rtol=1e-12)
    c4, c8 = (th.attention_limit_all(cls, pop.snapshots[s])[0, 0] for s in (4, 8))
    np.testing.assert_allclose(sw.change["population"][2, 2], np.abs(c8 - c4).sum(), rtol=1e-10)
    c = th.attention_limit_all(cls, sgd.snapshots[16].numpy())[:, 0]
    np.testing.assert_allclose(sw.c_at([16])[:, 0], c, rtol=1e-12)
    flow = th.population_dynamics(cls, 2.0 / 0.1, 1.0 / 0.1, 32.0, t_eval=sw.flow_t, rtol=1e-4, atol=1e-7)
    np.testing.assert_allclose(sw.flow_loss[2, -1], population_loss(cls, flow.Y[-1], flow.Z[-1]), rtol=1e-9)
    cd = sw.change["flow"]
    early = th.population_dynamics(cls, 2.0 / 0.1, 1.0 / 0.1, 32.0, t_eval=[1 / 8, 1 / 4, 1 / 2, 1],
                                   rtol=1e-4, atol=1e-7)
    c_early = th.attention_limit_all(cls, early.Z)[:, 0]
    np.testing.assert_array_equal(sw.flow_early_t, 2.0 ** np.arange(-10, 0))
    np.testing.assert_allclose(sw.flow_early_change[2, -3:], np.abs(np.diff(c_early, axis=0)).sum(-1),
                               rtol=1e-6)
    peak = np.maximum(cd.max(1), sw.flow_early_change.max(1))
    np.testing.assert_array_equal(sw.peak("flow"), peak)
    np.testing.assert_array_equal(sw.late_fraction("flow"), cd[:, -1] / peak)
    np.testing.assert_array_equal(sw.frozen("flow"), cd[:, -1] < 0.05 * peak)
    assert (sw.flow_early_change.max(1) > cd.max(1)).any()      # the flow does peak before t = 1 here
    np.testing.assert_array_equal(sw.peak("sgd"), sw.change["sgd"].max(1))
    assert sw.frozen("sgd", fraction=2.0).all() and not sw.frozen("sgd", fraction=0.0).any()
    with pytest.raises(ValueError, match="kind must be one of"):
        sw.frozen("adam")
    with pytest.raises(ValueError, match="eta_y=3.0"):
        sw.run(3.0, 1.0)
    with pytest.raises(ValueError, match="no snapshot at steps \\[33\\]"):
        sw.c_at([33])


def test_snap_sweep_needs_the_doublings():
    from scansnap.experiments import snap_sweep
    cls = syn_medium(1)
    sgd = train(cls, eta_y=1.0, eta_z=1.0, steps=8, snapshot_steps=[1, 2, 8])
    with pytest.raises(ValueError, match="missing \\[4\\]"):
        snap_sweep(cls, sgd)
    with pytest.raises(ValueError, match="momentum"):
        snap_sweep(cls, sgd, momentum=1.0)
    with pytest.raises(ValueError, match="flow_early must be an integer >= 0, got -1"):
        snap_sweep(cls, train(cls, eta_y=1.0, eta_z=1.0, steps=8, snapshot_steps=[1, 2, 4, 8]),
                   flow_early=-1)


def test_frozen_means_strictly_below_the_fraction(monkeypatch):
    """Chapter 5's freeze test: the last doubling's change *below* 5% of the peak; a run exactly at
    the line is not frozen (a planted '<=' was not caught before)."""
    from scansnap.experiments import FREEZE_FRACTION, SnapSweep
    sweep = object.__new__(SnapSweep)
    monkeypatch.setattr(SnapSweep, "late_fraction", lambda self, kind: np.array([0.049, FREEZE_FRACTION, 0.051]))
    assert sweep.frozen("sgd").tolist() == [True, False, False]
    assert sweep.frozen("sgd", fraction=0.051).tolist() == [True, True, False]
