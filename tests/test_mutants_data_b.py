"""data.py, part B of the mutation survivors (issue 28): ``two_classes``' layout and its bounds,
and the text of ``SequenceClasses.roles``."""
import warnings

import numpy as np
import pytest

from scansnap.data import SequenceClasses, two_classes


def test_two_classes_lays_out_common_distinct_query_and_next_tokens():
    c = two_classes()                                     # C = 1 common, D = 4 distinct, M = 60
    assert c.M == 60
    assert list(c.query) == [9, 9] and list(c.next_token) == [10, 11]
    assert list(c.roles()[:12]) == ["common"] + ["distinct 0"] * 4 + ["distinct 1"] * 4 + ["query", "next 0", "next 1"]
    assert set(c.roles()[12:]) == {"unused"}


def test_two_classes_fits_exactly_C_plus_2D_plus_3_tokens():
    c = two_classes(common=(1, 2), distinct=(1, 1, 1), M=11)       # 2 + 6 + 3 = 11
    assert c.M == 11 and list(c.query) == [8, 8] and list(c.next_token) == [9, 10]
    with pytest.raises(ValueError, match=r"^2 common, 2 x 3 distinct tokens, a query and two next tokens "
                                         r"need M >= 11, got M = 10$"):
        two_classes(common=(1, 2), distinct=(1, 1, 1), M=10)


def test_two_classes_takes_class_1s_own_common_weights():
    c = two_classes(common=(1, 1), distinct=(1, 1), common_1=(3, 1), M=20)
    np.testing.assert_allclose(c.probs[0, :4], [0.25, 0.25, 0.25, 0.25], rtol=1e-15)
    np.testing.assert_allclose(c.probs[1, [0, 1, 4, 5]], [0.5, 1 / 6, 1 / 6, 1 / 6], rtol=1e-15)
    with pytest.raises(ValueError, match=r"^common_1 must have one weight per common token \(2\), got 3$"):
        two_classes(common=(1, 1), common_1=(1, 1, 1))


def test_roles_joins_two_roles_of_one_token_with_a_plus():
    P = np.zeros((2, 8))
    P[0, :3] = 1
    P[1, 1:4] = 1
    P /= P.sum(axis=1, keepdims=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")               # class 0's next token is class 1's context: warned
        c = SequenceClasses(P, [5, 5], [3, 6])
    assert list(c.roles()) == ["distinct 0", "common", "common", "distinct 1 + next 0", "unused", "query",
                               "next 1", "unused"]
