"""Issue 27, a researcher's last trips (review/researcher7_report.md, brief fix27h): each test
failed before its fix.

1. compare() had no column for the noiseless prediction's own top token; a run outside
   Assumption 1(c) whose top token the noiseless flow ranks first too was blamed on the run.
2. With all of a class's attention on the common tokens, top_token, top_as_predicted and
   rank_correlation were computed from float noise (the entropy was already NaN).
3. Warnings from predict (through result.predict()), compare, TrainResult.load and
   class_entropy pointed at package lines, not at the caller's.
4. predict() on an Adam run refused without saying why there is no prediction.
"""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from scansnap import TrainResult, sequence_classes, train
from scansnap import theory as th
from scansnap.data import ClassLayoutWarning, SequenceClasses
from scansnap.metrics import UndefinedEntropyWarning
from callers import points_at


@pytest.fixture(scope="module")
def classes():
    # the researcher's classes: a tied top pair (8=9 in class 0)
    return sequence_classes(K=4, M=40, queries=2, num_common=4, num_distinct=6, common_weight=2,
                            distinct_weights=[.2, .4, .6, .8, 1, 1])


@pytest.fixture(scope="module")
def reversed_run(classes):
    """eta_Y = 2 with eta_Z = 0.5 (inside Assumption 1(c)) and eta_Z = 8 (outside: the noiseless flow
    itself reverses Theorem 3's order)."""
    res = train(classes, eta_y=[2.0, 2.0], eta_z=[0.5, 8.0], seeds=[1, 1], steps=100)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return res, res.predict().compare(res)


# ---------------------------------------------------------------------------------------
# 1. noiseless_top beside top_token; a negative margin and the regime named in why
# ---------------------------------------------------------------------------------------

def test_compare_shows_the_noiseless_top_beside_the_runs_top(reversed_run):
    _, df = reversed_run
    cols = df.columns.tolist()
    assert cols[cols.index("top_token") + 1] == "noiseless_top"
    inside, outside = df[df.run == 0], df[df.run == 1]
    assert all(t in w for t, w in zip(inside.noiseless_top, inside.predicted_winners))
    assert (inside.margin > 0).all() and inside.agrees.all() and (inside.why == "").all()
    # outside: the noiseless flow ranks another token first, so Theorem 3's winner has a negative margin
    assert all(t not in w for t, w in zip(outside.noiseless_top, outside.predicted_winners))
    assert (outside.margin < 0).all()


def test_why_blames_the_regime_when_the_noiseless_flow_reverses_theorem_3(reversed_run):
    _, df = reversed_run
    outside = df[df.run == 1]
    assert not outside.top_as_predicted.any()
    for _, row in outside.iterrows():
        assert "outside Assumption 1(c)" in row.why
        assert (f"the noiseless flow itself ranks token {row.top_token} above Theorem 3's "
                f"{'='.join(map(str, row.predicted_winners))} (its top: {row.noiseless_top}): the regime departs "
                "from Theorem 3, not the run") in row.why
    assert "noiseless flow" not in "".join(df[df.run == 0].why)


def test_compare_documents_a_negative_margin_and_noiseless_top():
    doc = " ".join(th.Prediction.compare.__doc__.split())
    assert "``noiseless_top``" in doc
    assert "A negative margin: the noiseless flow itself puts ``noiseless_top`` above Theorem 3's winners" in doc


# ---------------------------------------------------------------------------------------
# 2. under DISTINCT_MASS_MIN on the distinct tokens: no top token, no rank correlation
# ---------------------------------------------------------------------------------------

def test_no_distinct_attention_leaves_the_distinct_order_undefined(classes):
    res = train(classes, eta_y=[2.0, 2.0], eta_z=[300.0, 0.5], seeds=[1, 1], steps=100)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        df = res.predict().compare(res)
    gone, kept = df[df.run == 0], df[df.run == 1]
    assert gone.distinct_entropy.isna().all()
    assert gone.top_token.isna().all() and gone.top_as_predicted.isna().all()
    assert gone.rank_correlation.isna().all() and not gone.agrees.any()
    assert str(df.top_token.dtype) == "Int64" and str(df.top_as_predicted.dtype) == "boolean"
    assert kept.top_token.notna().all() and kept.top_as_predicted.all() and kept.rank_correlation.notna().all()
    assert df.loc[df.run == 1, "top_token"].tolist() == [int(t) for t in kept.top_token]


# ---------------------------------------------------------------------------------------
# 3. warnings point at the caller's line; load warns the layout once per call
# ---------------------------------------------------------------------------------------

def _record(fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = fn()
    return out, w


@pytest.fixture(scope="module")
def off_layout():
    P = np.zeros((2, 8))
    P[:, 0] = P[0, 1] = P[1, 2] = P[1, 5] = 0.5           # class 1's context holds token 5, class 0's query
    P /= P.sum(1, keepdims=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c = SequenceClasses(P, query=[5, 5], next_token=[6, 7])
        return train(c, eta_y=2.0, steps=3)


def test_predict_and_compare_warnings_point_at_the_callers_line(off_layout):
    pred, w = _record(lambda: off_layout.predict())
    assert [x.category for x in w] == [ClassLayoutWarning] and all(points_at(x.filename, __file__, walked=True) for x in w)
    _, w = _record(lambda: pred.compare(off_layout))
    assert ClassLayoutWarning in [x.category for x in w] and all(points_at(x.filename, __file__, walked=True) for x in w)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fast = train(sequence_classes(K=2), eta_y=1e4, eta_z=1e3, steps=3)    # t0_steps < 1: RegimeWarning
    _, w = _record(lambda: fast.predict())
    assert th.RegimeWarning in [x.category for x in w] and all(points_at(x.filename, __file__, walked=True) for x in w)


def test_class_entropy_warnings_point_at_the_callers_line(classes):
    res = train(classes, eta_y=2.0, eta_z=300.0, seeds=1, steps=100)
    for call in (lambda: res.class_entropy(), lambda: res.distinct_entropy(),
                 lambda: res.predict().compare(res), lambda: res.to_frame("class")):
        _, w = _record(call)
        assert UndefinedEntropyWarning in [x.category for x in w]
        assert all(points_at(x.filename, __file__, walked=True) for x in w), [(x.filename, x.lineno) for x in w]


def test_load_warns_the_layout_once_per_call_at_the_callers_line(off_layout, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        off_layout.save(tmp_path)
    for _ in range(2):          # once per call, every call (the layout is the saved classes', not the caller's)
        back, w = _record(lambda: TrainResult.load(tmp_path))
        assert [x.category for x in w] == [ClassLayoutWarning] and points_at(w[0].filename, __file__, walked=True)
        assert str(w[0].message).startswith("TrainResult.load: the saved classes are outside the theory's layout: "
                                            "the query token 5 (of classes 0, 1)")
    assert np.array_equal(back.Z.numpy(), off_layout.Z.numpy())


# ---------------------------------------------------------------------------------------
# 4. predict() on an Adam run: still refused, now with the reason and the way to the SGD prediction
# ---------------------------------------------------------------------------------------

def test_predict_on_an_adam_run_says_why_and_what_to_do(classes):
    res = train(classes, eta_y=0.1, eta_z=0.1, steps=3, optimizer="adam")
    with pytest.raises(ValueError, match=r"Adam rescales each step: eta_y, eta_z are not the theory's rates\); "
                                         r"for the SGD one at these rates, scansnap\.theory\.predict\("):
        res.predict()


def test_a_shared_query_inside_a_context_names_every_class():
    """Researcher 7, trip 4: a query shared by all classes and in class 2's context was named as
    "class 0's query token 12", as if only class 0 used it."""
    import numpy as np
    import pytest
    from scansnap.data import ClassLayoutWarning, SequenceClasses

    P = np.zeros((3, 14))
    P[:, 0] = 0.5
    P[0, 1] = P[1, 2] = 0.5
    P[2, 3] = P[2, 12] = 0.25
    with pytest.warns(ClassLayoutWarning, match=r"the query token 12 \(of classes 0, 1, 2\) is also a "
                                                r"contextual token of class 2 \(P\(12 \| class 2\) = 0\.25\)"):
        SequenceClasses(P, [12, 12, 12], [4, 5, 6])
    P[1, 2], P[1, 12] = 0.25, 0.25                       # in two contexts now
    with pytest.warns(ClassLayoutWarning, match=r"contextual token of classes 1, 2 "):
        SequenceClasses(P, [12, 12, 12], [4, 5, 6])
