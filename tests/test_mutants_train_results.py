"""Tests for mutants of TrainResult's __repr__, select, concat and distinct_entropy
(scansnap/train.py) that the suite let survive (issue 28; mutmut run at d368bf7, names
``scansnap.train.xǁTrainResultǁ<method>__mutmut_<n>``).

The results are built by hand (no training), so every number below is known.
"""
import numpy as np
import pytest
import torch

from scansnap.data import make_classes
from scansnap.train import TrainResult

# five runs, M = 4 (ln 4 = 1.39), so each run's divergence line is 10 x 2.0 = 20:
LOSS = np.array([[2.0, 30.0, 1.0, 1.0],    # above the line, not saturated
                 [2.0, 0.0, 0.0, 0.0],     # saturated, not above
                 [2.0, 1.5, 1.0, 0.5],     # neither
                 [2.0, 20.0, 0.0, 0.0],    # exactly on the line (not above), saturated
                 [2.0, 50.0, 0.0, 0.0]])   # above the line and saturated
DIVERGED = np.array([True, True, False, True, True])


def _result(R=5, M=4, diverged=DIVERGED, config=None, classes=None, seconds=1.5, snapshots=(0,), seed0=0):
    g = torch.Generator().manual_seed(seed0)
    Z = torch.randn(R, M, M, generator=g, dtype=torch.float64)
    return TrainResult(np.linspace(0.1, 0.5, R), np.linspace(1.0, 5.0, R), np.arange(seed0, seed0 + R),
                       LOSS[:R].copy(), Z + 1, Z, {s: Z * s for s in snapshots},
                       {"optimizer": "sgd", "momentum": 0.9, "init": "zero"} if config is None else config,
                       None if diverged is None else diverged[:R].copy(), classes, seconds)


def test_repr_separates_diverged_from_saturated_runs():
    """Two of the four flagged runs saturated without rising above the line (one of them sits
    exactly on it). Kills __repr__ 30, 31, 38, 43, 47, 50, 52, 56, 58, 60, 61, 65, 67, 69, 72-74."""
    lines = repr(_result()).splitlines()
    assert lines[0] == "TrainResult: 5 runs x 4 steps of sgd (momentum 0.9), init 'zero', M=4"
    assert lines[2] == "  median loss 2 -> 0; 4 flagged (diverged or saturated, see .diverged)"
    assert lines[3] == ("  of them 2 diverged (loss ever above 10x its start), 2 saturated "
                        "(loss exactly 0 within 2 steps)")


def test_repr_of_one_run_without_a_divergence_flag_or_settings():
    """No `diverged` (made by hand) counts 0, no optimizer or init prints '?', one run is
    'run'. Kills __repr__ 13, 15, 18, 20, 29, 32, 35, 36, 54, 71 (and 7 via classes=None)."""
    lines = repr(_result(R=1, diverged=None, config={})).splitlines()
    assert lines[0] == "TrainResult: 1 run x 4 steps of ?, init '?', M=4"
    assert lines[2] == "  median loss 2 -> 1; 0 diverged (loss ever above 10x its start)"
    assert repr(_result(R=2, diverged=None)).splitlines()[0].startswith("TrainResult: 2 runs x 4 steps")


def test_repr_names_the_classes_shape_when_it_has_them():
    """K and M with classes, M alone without. Kills __repr__ 7 (`or True`: fails on None)."""
    c = make_classes(2, num_common=1, num_distinct=1)
    r = _result(R=1, M=c.M, diverged=None, config={}, classes=c)
    assert repr(r).splitlines()[0].endswith(f", K=2, M={c.M}")
    r.classes = None
    assert repr(r).splitlines()[0].endswith(f", init '?', M={c.M}")


def test_select_keeps_each_runs_divergence_flag():
    """Kills select 17 (flags dropped), 32 (fails on None), 33 (always None), 34 (inverted)."""
    r = _result()
    s = r.select([4, 2])
    np.testing.assert_array_equal(s.diverged, [True, False])
    np.testing.assert_array_equal(s.seed, [4, 2])
    assert torch.equal(s.Z, r.Z[[4, 2]])
    assert _result(diverged=None).select([0]).diverged is None


def test_concat_of_nothing_says_what_it_needs():
    """Kills concat 4-7 (the message)."""
    with pytest.raises(ValueError, match=r"^concat needs at least one TrainResult$"):
        TrainResult.concat([])


@pytest.mark.parametrize("other", [
    dict(config={"optimizer": "adam", "init": "zero"}),   # settings differ only
    dict(snapshots=(0, 2)),                                # snapshots differ only
])
def test_concat_refuses_results_that_differ_in_one_thing(other):
    """Kills concat 19 (`and` between snapshots and shape), 20 (`and` after `not same`) and 29
    (the message)."""
    with pytest.raises(ValueError, match=r"^concat: the results differ in their settings, snapshots or vocabulary$"):
        TrainResult.concat([_result(R=2), _result(R=2, **other)])


def test_concat_stacks_every_field_in_order():
    """Kills concat 34-38 (the divergence flags), 41 (seconds with a None), 47, 48, 51, 52, 54,
    55 (fields replaced by None)."""
    a, b = _result(R=2), _result(R=3, seed0=2)
    c = TrainResult.concat([a, b])
    np.testing.assert_array_equal(c.eta_y, np.r_[a.eta_y, b.eta_y])
    np.testing.assert_array_equal(c.eta_z, np.r_[a.eta_z, b.eta_z])
    np.testing.assert_array_equal(c.seed, [0, 1, 2, 3, 4])
    assert torch.equal(c.Y, torch.cat([a.Y, b.Y])) and torch.equal(c.Z, torch.cat([a.Z, b.Z]))
    assert c.config == a.config and c.config is not a.config
    np.testing.assert_array_equal(c.diverged, [True, True, True, True, False])
    assert c.seconds == 3.0
    a.diverged = None
    assert TrainResult.concat([a, b]).diverged is None
    b.seconds = None
    assert TrainResult.concat([a, b]).seconds is None


def test_distinct_entropy_reads_the_snapshot_asked_for():
    """Z = 0 at step 0 (attention follows the token weights, linspace(0.1, 1)) against the
    random end Z. Kills
    distinct_entropy 5 (`step` ignored: always the end)."""
    c = make_classes(2, num_common=1, num_distinct=3)
    r = _result(R=1, M=c.M, diverged=None, classes=c, snapshots=(0,))
    np.testing.assert_allclose(r.distinct_entropy(step=0), [0.839605], rtol=1e-5)
    assert abs(r.distinct_entropy()[0] - 0.839605) > 1e-3
