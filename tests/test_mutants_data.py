"""data.py: behaviours the mutation run showed no test pinned down (bench/MUTATION.md)."""
import numpy as np
import pytest

from scansnap import syn_medium
from scansnap.data import one_query


def test_one_query_preset_weights_and_overlap():
    """The Theorem 2(b) preset: common token weight 4.8 against 200 distinct tokens of weight 1,
    so f_n^T f_n' = 4.8^2 / (4.8^2 + 200) ~ 0.1 and |lambda_1(E)| = 2 f_n^T f_n' ~ 0.2 (K = 3)."""
    c = one_query()
    assert (c.K, c.M) == (3, 605)
    np.testing.assert_allclose(c.probs[:, c.common_tokens[0]], 4.8 / 204.8, rtol=1e-14)
    for n in range(3):
        np.testing.assert_allclose(c.probs[n, c.distinct_tokens(n)], 1 / 204.8, rtol=1e-14)
    f = c.probs / np.linalg.norm(c.probs, axis=1, keepdims=True)      # f_n at Z = 0
    overlap = f[0] @ f[1]
    assert overlap == pytest.approx(4.8 ** 2 / (4.8 ** 2 + 200), rel=1e-14)
    assert overlap == pytest.approx(0.1, abs=0.005)


def test_psi_inverse_of_every_token_and_out_of_range():
    c = syn_medium(3)
    # token 0 (a common token) is a valid id and no class's query: no classes
    assert c.psi_inverse(0).size == 0
    assert sum(c.psi_inverse(m).size for m in range(c.M)) == c.K
    with pytest.raises(ValueError, match=r"^query token 79 out of range \[0, 79\)$"):
        c.psi_inverse(c.M)
    with pytest.raises(ValueError, match=r"^query token -1 out of range \[0, 79\)$"):
        c.psi_inverse(-1)


def test_support_table_pads_with_a_token_of_the_class():
    """Slots past a class's own tokens are copies of a real token of that class (SupportTable's
    promise), never a token outside its support, and they never get a count."""
    import torch
    from scansnap import SequenceClasses
    from scansnap.data import sample_support, support_table
    probs = np.zeros((2, 6))
    probs[0, [1, 2, 3]] = [0.2, 0.3, 0.5]
    probs[1, 4] = 1.0                                  # no shared tokens; class 1 has one token
    c = SequenceClasses(probs, np.array([5, 5]), np.array([0, 2]))
    t = support_table(c)
    assert (t.n_shared, t.own_width) == (0, 3)
    for n in range(2):
        supp = set(np.flatnonzero(probs[n] > 0).tolist())
        assert set(t.cols[n].tolist()) <= supp
    sb = sample_support(c, 8, 5, [torch.Generator().manual_seed(0)], t)
    assert torch.all(sb.counts[0][sb.classes[0] == 1][:, 1:] == 0)


def test_counts_from_tokens_names_what_it_got():
    import torch
    from scansnap import counts_from_tokens
    with pytest.raises(ValueError, match=r"^tokens must be a tensor of integer token ids \(\.\.\., T\), "
                                         r"got torch\.float32$"):
        counts_from_tokens(torch.zeros(2, 3), 5)
    with pytest.raises(ValueError, match=r"^tokens must be a tensor of integer token ids \(\.\.\., T\), got list$"):
        counts_from_tokens([[0, 1, 2]], 5)


def test_class_table_shape_and_id_checks():
    from scansnap import SequenceClasses, make_classes
    with pytest.raises(ValueError, match=r"^probs must be a \(K, M\) table with K >= 1, M >= 2; got shape \(1, 1\)$"):
        SequenceClasses([[1.0]], [0], [0])
    with pytest.raises(ValueError, match=r"^probs must be a \(K, M\) table with K >= 1, M >= 2; got shape \(0, 4\)$"):
        SequenceClasses(np.zeros((0, 4)), [], [])
    # ids given as integral floats are token ids; a fraction is refused
    c = SequenceClasses([[0.5, 0.5, 0, 0], [0, 0.5, 0.5, 0]], [3.0, 3.0], [0.0, 1.0])
    assert c.query.dtype == np.int64 and c.query.tolist() == [3, 3] and c.next_token.tolist() == [0, 1]
    with pytest.raises(ValueError, match=r"^query token ids must be integers; got \[3\.5, 3\.0\]$"):
        SequenceClasses([[0.5, 0.5, 0, 0], [0, 0.5, 0.5, 0]], [3.5, 3.0], [0, 1])
    with pytest.raises(ValueError, match=r"^num_last must be an integer >= 1, got 0$"):
        make_classes(0)
    with pytest.raises(ValueError, match=r"^num_next_per_last must be an integer >= 1, got 0$"):
        make_classes(2, 0)


def test_class_table_is_read_only_int_ids_and_names_bad_entries():
    from scansnap import SequenceClasses
    c = SequenceClasses([[0.5, 0.5, 0, 0], [0, 0.5, 0.5, 0]], [3, 3], [0, 1])
    for a in (c.probs, c.query, c.next_token):
        assert isinstance(a, np.ndarray) and not a.flags.writeable
        with pytest.raises(ValueError, match="read-only"):
            a[0] = 0
    assert c.next_token.dtype == np.int64
    with pytest.raises(ValueError, match=r"^P\(l=1 \| class 0\) is not finite: nan$"):
        SequenceClasses([[0.5, np.nan, 0, 0], [0, 0.5, 0.5, 0]], [3, 3], [0, 1])
    with pytest.raises(ValueError, match=r"^next token 0 is listed twice \(classes 0 and 1\)$"):
        SequenceClasses([[0.5, 0.5, 0, 0], [0, 0.5, 0.5, 0]], [3, 3], [0, 0])
