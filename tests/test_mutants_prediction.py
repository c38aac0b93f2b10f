"""Tests for mutants of theory.Prediction's Z_at, class_entropy, common_mass and to_frame
(issue 28; mutmut run at d368bf7, ``scansnap.theory.xǁPredictionǁ<method>__mutmut_<n>``;
to_frame and common_mass were reached by no test in-process)."""
import numpy as np
import pytest

from scansnap import make_classes
from scansnap.data import two_classes
from scansnap.metrics import class_entropy, common_mass
from scansnap.theory import predict


@pytest.fixture(scope="module")
def tied():
    """Two runs (rates differ), two classes whose two heaviest distinct tokens tie."""
    c = two_classes(common=(3.0,), distinct=(2, 2, 1), M=14, common_1=(1.0,))
    return predict(c, eta_y=[1.0, 2.0], eta_z=[1.0, 3.0], steps=8, snapshot_steps=[4])


def test_z_at_a_step_that_is_no_snapshot_is_refused_by_name(tied):
    """Kills Z_at 3 (`or`: the end's Z returned instead) and 7-10 (the message)."""
    assert tied.Z_at(8) is tied.Z and tied.Z_at(4) is tied.Z_snapshots[4]
    with pytest.raises(ValueError) as e:
        tied.Z_at(3)
    assert str(e.value) == ("no predicted snapshot at step 3: this prediction has [4] "
                            "(predict(..., snapshot_steps=[...]) keeps more)")


def test_prediction_entropies_and_common_mass_are_the_metrics_of_its_z(tied):
    """Kills class_entropy 2-6, 8 and common_mass 1-5 (classes, Z, `over` or the step dropped)."""
    c = tied.classes
    np.testing.assert_array_equal(tied.class_entropy(), class_entropy(c, tied.Z, "distinct"))
    np.testing.assert_array_equal(tied.class_entropy("support", step=4), class_entropy(c, tied.Z_snapshots[4], "support"))
    np.testing.assert_array_equal(tied.common_mass(), common_mass(c, tied.Z))
    np.testing.assert_array_equal(tied.common_mass(step=4), common_mass(c, tied.Z_snapshots[4]))
    assert not np.allclose(tied.common_mass(step=4), tied.common_mass())


def test_to_frame_one_row_per_run_and_class(tied):
    """Kills to_frame 1-68, 70-72, 74-76 (every column's name, order and values); 69 and 73
    (`- 0.0`) are equivalent (see bench/mutation_survivors.md)."""
    df = tied.to_frame()
    assert df.columns.tolist() == ["run", "class", "eta_y", "eta_z", "t0", "t0_steps", "top_token", "winners",
                                   "tied", "distinct_entropy", "support_entropy", "common_mass"]
    assert df["run"].tolist() == [0, 0, 1, 1] and df["class"].tolist() == [0, 1, 0, 1]
    assert df["eta_y"].tolist() == [1.0, 1.0, 2.0, 2.0] and df["eta_z"].tolist() == [1.0, 1.0, 3.0, 3.0]
    np.testing.assert_array_equal(df["t0"], np.repeat(tied.t0, 2))
    np.testing.assert_array_equal(df["t0_steps"], np.repeat(tied.t0_steps, 2))
    assert tied.t0[0] != tied.t0[1] and tied.t0_steps[0] != tied.t0_steps[1]
    assert df["top_token"].tolist() == [1, 4, 1, 4]
    assert df["winners"].tolist() == [(1, 2), (4, 5), (1, 2), (4, 5)]
    assert df["tied"].tolist() == [True] * 4
    np.testing.assert_array_equal(df["distinct_entropy"], tied.class_entropy().ravel())
    np.testing.assert_array_equal(df["support_entropy"], tied.class_entropy("support").ravel())
    np.testing.assert_array_equal(df["common_mass"], tied.common_mass().ravel())


def test_to_frame_without_ties_says_untied():
    """One winner a class is not a tie. Kills to_frame 65 (`len(w) >= 1`)."""
    p = predict(make_classes(2, num_common=2, num_distinct=3), eta_y=1.0, eta_z=1.0, steps=4)
    df = p.to_frame()
    assert df["tied"].tolist() == [False, False]
    assert [len(w) for w in df["winners"]] == [1, 1]
