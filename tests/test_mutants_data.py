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
    """psi^{-1}(m) (Sec. 3.2) partitions the K classes over the M query tokens (a non-query
    token has none); m outside [0, M) is refused with its value named, at both ends."""
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
    """counts_from_tokens takes integer token ids only: a float tensor or a plain list is
    refused with its dtype or type named."""
    import torch
    from scansnap import counts_from_tokens
    with pytest.raises(ValueError, match=r"^tokens must be a tensor of integer token ids \(\.\.\., T\), "
                                         r"got torch\.float32$"):
        counts_from_tokens(torch.zeros(2, 3), 5)
    with pytest.raises(ValueError, match=r"^tokens must be a tensor of integer token ids \(\.\.\., T\), got list$"):
        counts_from_tokens([[0, 1, 2]], 5)


def test_class_table_shape_and_id_checks():
    """probs must be (K, M) with K >= 1, M >= 2; whole-number float ids are accepted as int64
    ids, a fractional one is refused with the ids named; make_classes names a count < 1."""
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
    """The stored table and ids are read-only, ids int64; a NaN entry is named by (l, n) and a
    next token listed for two classes by both classes."""
    from scansnap import SequenceClasses
    c = SequenceClasses([[0.5, 0.5, 0, 0], [0, 0.5, 0.5, 0]], [3, 3], [0, 1])
    for a in (c.probs, c.query, c.next_token):
        assert isinstance(a, np.ndarray) and not a.flags.writeable
        with pytest.raises(ValueError, match="read-only"):
            a[0] = 0
    assert c.next_token.dtype == np.int64
    mine = np.array([[0.5, 0.5, 0, 0], [0, 0.5, 0.5, 0]])  # the caller's array: copied, left writable
    c = SequenceClasses(mine, [3, 3], [0, 1])
    mine[0, 0] = 7.0
    assert mine.flags.writeable and c.probs[0, 0] == 0.5
    with pytest.raises(ValueError, match=r"^P\(l=1 \| class 0\) is not finite: nan$"):
        SequenceClasses([[0.5, np.nan, 0, 0], [0, 0.5, 0.5, 0]], [3, 3], [0, 1])
    with pytest.raises(ValueError, match=r"^next token 0 is listed twice \(classes 0 and 1\)$"):
        SequenceClasses([[0.5, 0.5, 0, 0], [0, 0.5, 0.5, 0]], [3, 3], [0, 0])


# ---------------------------------------------------------------------------------------
# SequenceClasses: the table it stores, its checks at their boundaries, its repr
# ---------------------------------------------------------------------------------------

def test_class_table_is_stored_as_float64_and_torch_probs_takes_a_dtype():
    """P(l|n) is kept as float64 whatever the input's type (an integer one-hot table too), and
    torch_probs gives the dtype asked for (float64 unless told)."""
    import torch
    from scansnap import SequenceClasses
    c = SequenceClasses([[1, 0, 0], [0, 1, 0]], [2, 2], [0, 1])
    assert c.probs.dtype == np.float64
    np.testing.assert_array_equal(c.probs, [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    assert c.torch_probs().dtype == torch.float64
    p32 = c.torch_probs(dtype=torch.float32)
    assert p32.dtype == torch.float32
    assert p32.tolist() == [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]


def test_class_table_vocabulary_boundary_and_the_negative_entry_named():
    """M = 2 is the smallest vocabulary allowed (M = 1 is refused elsewhere in this file); a
    negative probability is named by its own position even when a zero comes before it."""
    from scansnap import SequenceClasses
    c = SequenceClasses([[0.5, 0.5]], [0], [1])
    assert (c.K, c.M) == (1, 2)
    with pytest.raises(ValueError, match=r"^P\(l=1 \| class 0\) is negative: -0\.5$"):
        SequenceClasses([[0.0, -0.5, 1.5]], [0], [1])
    with pytest.raises(ValueError, match=r"^P\(l=2 \| class 1\) is negative: -0\.25$"):
        SequenceClasses([[0.5, 0.5, 0.0], [0.0, 1.25, -0.25]], [0, 0], [1, 2])


def test_class_repr_counts_common_and_distinct_tokens_per_class():
    """repr: K, M, |G_CT| and |G_DT(n)| per class (Sec. 3.2), counted by hand below."""
    from scansnap import SequenceClasses, syn_small
    # token 0 is in both classes (common); class 0 owns token 1, class 1 owns tokens 2, 3, 4
    c = SequenceClasses([[0.5, 0.5, 0, 0, 0, 0, 0], [0.25, 0, 0.25, 0.25, 0.25, 0, 0]], [5, 5], [6, 0])
    assert repr(c) == "SequenceClasses(K=2, M=7, common=1, distinct per class=[1, 3])"
    # Syn-Small: 10 common tokens, a block of 10 distinct tokens per class, M = 10 + 20 + 2 + 2
    assert repr(syn_small()) == "SequenceClasses(K=2, M=34, common=10, distinct per class=[10, 10])"


def test_token_id_checks_name_the_shape_and_the_range_boundary():
    """One id per class, each in [0, M): M - 1 is the last valid id, M the first refused."""
    from scansnap import SequenceClasses
    probs = [[0.5, 0.5, 0, 0], [0, 0.5, 0.5, 0]]
    with pytest.raises(ValueError, match=r"^query tokens must have one entry per class \(K=2\); got shape \(3,\)$"):
        SequenceClasses(probs, [3, 3, 3], [0, 1])
    with pytest.raises(ValueError, match=r"^next tokens must have one entry per class \(K=2\); got shape \(2, 1\)$"):
        SequenceClasses(probs, [3, 3], [[0], [1]])
    c = SequenceClasses(probs, [3, 3], [0, 3])
    assert c.query.tolist() == [3, 3] and c.next_token.tolist() == [0, 3]
    with pytest.raises(ValueError, match=r"^query token 4 \(class 1\) out of range \[0, 4\)$"):
        SequenceClasses(probs, [3, 4], [0, 1])
    with pytest.raises(ValueError, match=r"^next token 4 \(class 1\) out of range \[0, 4\)$"):
        SequenceClasses(probs, [3, 3], [0, 4])


def test_out_of_range_ids_are_named_as_given_not_wrapped():
    """A whole-number float id past 2**63, or a uint64 one, is named by its own value (the
    check once cast floats to int64 first and reported -9223372036854775808)."""
    from scansnap import SequenceClasses
    probs = [[0.5, 0.5, 0, 0], [0, 0.5, 0.5, 0]]
    with pytest.raises(ValueError, match=r"^query token 1000000000000000019884624838656 \(class 0\) "
                                         r"out of range \[0, 4\)$"):
        SequenceClasses(probs, [1e30, 3.0], [0, 1])
    with pytest.raises(ValueError, match=r"^next token 9223372036854775808 \(class 1\) out of range \[0, 4\)$"):
        SequenceClasses(probs, [3, 3], [0.0, 2.0 ** 63])
    with pytest.raises(ValueError, match=r"^query token 18446744073709551615 \(class 0\) out of range \[0, 4\)$"):
        SequenceClasses(probs, np.array([2 ** 64 - 1, 3], dtype=np.uint64), [0, 1])
    c = SequenceClasses(probs, np.array([3, 3], dtype=np.uint64), [0.0, 1.0])
    assert c.query.dtype == c.next_token.dtype == np.int64 and c.query.tolist() == [3, 3]


# ---------------------------------------------------------------------------------------
# make_classes: defaults, argument checks at their boundaries
# ---------------------------------------------------------------------------------------

def test_make_classes_default_is_one_next_token_per_query():
    """make_classes(2): K = 2 classes, M = 10 common + 2 * 10 distinct + 2 queries + 2 nexts = 34."""
    from scansnap import make_classes
    c = make_classes(2)
    assert (c.K, c.M) == (2, 34)
    assert c.query.tolist() == [30, 31] and c.next_token.tolist() == [32, 33]


def test_make_classes_token_counts_may_be_zero_but_not_both():
    """num_common and num_distinct are counts >= 0 (0 is valid) and a class needs at least one
    contextual token, so both 0 is refused."""
    from scansnap import make_classes
    c = make_classes(2, num_common=3, num_distinct=0)        # M = 3 + 0 + 2 + 2
    assert c.M == 7
    np.testing.assert_array_equal(c.probs[:, :3], np.full((2, 3), 1 / 3))
    assert c.probs[:, 3:].sum() == 0
    c = make_classes(2, num_common=0, num_distinct=2)        # M = 0 + 4 + 2 + 2
    assert c.M == 8 and c.common_tokens.size == 0
    with pytest.raises(ValueError, match=r"^num_common must be an integer >= 0, got -1$"):
        make_classes(2, num_common=-1)
    with pytest.raises(ValueError, match=r"^num_distinct must be an integer >= 0, got -1$"):
        make_classes(2, num_distinct=-1)
    with pytest.raises(ValueError, match=r"^a class needs at least one contextual token "
                                         r"\(num_common \+ num_distinct = 0\)$"):
        make_classes(2, num_common=0, num_distinct=0)


def test_make_classes_weights_must_be_positive_and_ordered():
    """common_weight > 0 and 0 < distinct_min <= distinct_max: each bound's last valid value
    builds, the first invalid one is refused with all three weights named."""
    from scansnap import make_classes
    msg = r"^weights must be positive with distinct_min <= distinct_max; got common_weight={}, " \
          r"distinct_min={}, distinct_max={}$"
    c = make_classes(1, num_common=1, num_distinct=2, common_weight=1e-300)
    np.testing.assert_allclose(c.probs[0, :3], [1e-300 / 1.1, 0.1 / 1.1, 1 / 1.1], rtol=1e-15)
    with pytest.raises(ValueError, match=msg.format(r"0\.0", r"0\.1", r"1\.0")):
        make_classes(1, common_weight=0.0)
    with pytest.raises(ValueError, match=msg.format(r"-1\.0", r"0\.1", r"1\.0")):
        make_classes(1, common_weight=-1.0)
    c = make_classes(1, num_common=1, num_distinct=2, distinct_min=0.5, distinct_max=0.5)
    np.testing.assert_allclose(c.probs[0, :3], [0.5, 0.25, 0.25], rtol=1e-15)
    with pytest.raises(ValueError, match=msg.format(r"1\.0", r"0\.0", r"1\.0")):
        make_classes(1, distinct_min=0.0)
    with pytest.raises(ValueError, match=msg.format(r"1\.0", r"0\.6", r"0\.5")):
        make_classes(1, distinct_min=0.6, distinct_max=0.5)


# ---------------------------------------------------------------------------------------
# Sampling: argument checks
# ---------------------------------------------------------------------------------------

def test_samplers_name_what_they_were_given():
    """Bad sampler arguments are refused with the offending type, shape or dtype named."""
    import torch
    from scansnap import counts_from_tokens, sample_counts, sample_tokens, syn_small
    c, g = syn_small(), torch.Generator().manual_seed(0)
    with pytest.raises(ValueError, match=r"^classes must be a SequenceClasses, got ndarray$"):
        sample_tokens(c.probs, 4, 3, g)
    with pytest.raises(ValueError, match=r"^generator must be a torch\.Generator \(seeded\), got int$"):
        sample_tokens(c, 4, 3, 0)
    # sample_counts hands its cached probs to sample_tokens, which checks them
    with pytest.raises(ValueError, match=r"^probs must be the \(2, 34\) table of the classes, got shape \(3, 34\)$"):
        sample_counts(c, 4, 3, g, probs=torch.zeros(3, 34, dtype=torch.float64))
    with pytest.raises(ValueError, match=r"^tokens must be a tensor of integer token ids \(\.\.\., T\), got torch\.bool$"):
        counts_from_tokens(torch.ones(2, 3, dtype=torch.bool), 5)
    with pytest.raises(ValueError, match=r"^tokens must be a tensor of integer token ids \(\.\.\., T\), got torch\.int64$"):
        counts_from_tokens(torch.tensor(3), 5)


def test_counts_from_a_single_sequence():
    """A 1-D tensor is one sequence (T,): the counts of its first T - 1 tokens, the query dropped."""
    import torch
    from scansnap import counts_from_tokens
    counts = counts_from_tokens(torch.tensor([2, 0, 2, 1]), 4)
    assert counts.shape == (4,) and counts.tolist() == [1.0, 0.0, 2.0, 0.0]
    assert counts_from_tokens(torch.tensor([3]), 4).tolist() == [0.0, 0.0, 0.0, 0.0]


def test_sample_support_checks_and_a_single_generator():
    """batch >= 1 and T >= 2 (T = 2: one contextual token, so each sequence counts exactly 1);
    a bare generator is one batch, S = 1, the same as a list holding it."""
    import torch
    from scansnap import syn_small
    from scansnap.data import sample_support, support_table
    c = syn_small()
    t = support_table(c)
    one = sample_support(c, 5, 4, torch.Generator().manual_seed(3), t)
    listed = sample_support(c, 5, 4, [torch.Generator().manual_seed(3)], t)
    assert one.counts.shape == (1, 5, t.cols.shape[1])
    assert one.counts.sum(-1).tolist() == [[3.0] * 5]
    for a, b in zip(one, listed):
        assert torch.equal(a, b)
    short = sample_support(c, 5, 2, [torch.Generator().manual_seed(3)], t)
    assert short.counts.sum(-1).tolist() == [[1.0] * 5]
    with pytest.raises(ValueError, match=r"^batch size must be an integer >= 1, got 0$"):
        sample_support(c, 0, 4, [torch.Generator()], t)
    with pytest.raises(ValueError, match=r"^T \(sequence length\) must be an integer >= 2, got 1$"):
        sample_support(c, 5, 1, [torch.Generator()], t)


# ---------------------------------------------------------------------------------------
# The support table: its documented contents
# ---------------------------------------------------------------------------------------

def test_support_table_cum_is_the_running_sum_over_the_total_last_bucket_one():
    """cum[n] at class n's support tokens = (running sum of P(.|n)) / (row total), the last
    bucket set to exactly 1 (SupportTable). A row may sum to 1 + 9e-10 (within the 1e-9
    tolerance): dividing by that total is then visible at 1e-9."""
    from scansnap import SequenceClasses
    from scansnap.data import support_table
    s = 1 + 9e-10
    c = SequenceClasses([[0.25, 0.0, 0.25, 0.5 + 9e-10]], [1], [0])
    t = support_table(c)
    cum = t.cum[0].tolist()
    np.testing.assert_allclose(cum[:2], [0.25 / s, 0.5 / s], rtol=1e-15)
    assert cum[2] == 1.0
    assert t.slot_of[0].tolist() == [0, 1, 2]


def test_support_table_marks_missing_slots_with_minus_one():
    """token_slot[n, l] = -1 for a token with no slot in class n's row, and query_slot[n] = -1
    when psi(n) has no slot (without with_query, a query token outside the support)."""
    from scansnap import SequenceClasses
    from scansnap.data import support_table
    probs = np.zeros((2, 6))
    probs[0, [1, 2, 3]] = [0.2, 0.3, 0.5]
    probs[1, 4] = 1.0
    c = SequenceClasses(probs, np.array([5, 5]), np.array([0, 2]))
    t = support_table(c)
    assert t.query_slot.tolist() == [-1, -1]
    assert t.token_slot.tolist() == [[-1, 0, 1, 2, -1, -1], [-1, -1, -1, -1, 0, -1]]
    tq = support_table(c, with_query=True)               # the query token 5 becomes a shared slot
    assert tq.cols.tolist() == [[5, 1, 2, 3], [5, 4, 5, 5]]
    assert tq.query_slot.tolist() == [0, 0]
    assert tq.token_slot.tolist() == [[-1, 1, 2, 3, -1, 0], [-1, -1, -1, -1, 1, 0]]


def test_support_table_same_support_different_probabilities_is_not_plain():
    """Two classes on the same tokens with different P(.|n): the slots are the support
    positions but the cumulative rows differ, so the table is not 'plain' and each class is
    drawn from its own distribution: on a CPU, the same tokens as sample_tokens."""
    import torch
    from scansnap import SequenceClasses, counts_from_tokens, sample_tokens
    from scansnap.data import sample_support, support_table
    c = SequenceClasses([[0.5, 0.5, 0.0], [0.1, 0.9, 0.0]], [2, 2], [0, 1])
    t = support_table(c)
    assert t.slot_of.tolist() == [[0, 1], [0, 1]] and t.plain is False
    B, T = 64, 9
    sb = sample_support(c, B, T, [torch.Generator().manual_seed(1)], t, dtype=torch.float64)
    tb = sample_tokens(c, B, T, torch.Generator().manual_seed(1))
    assert torch.equal(sb.classes[0], tb.classes)
    assert torch.equal(sb.counts[0], counts_from_tokens(tb.tokens, 3, torch.float64)[:, :2])


# ---------------------------------------------------------------------------------------
# Devices: results follow the generator / the device asked for, not torch's default device
# ---------------------------------------------------------------------------------------

def test_results_stay_on_the_asked_device_under_another_torch_default_device():
    """A notebook may call torch.set_default_device; the batches must still live on the
    generator's device (the table's for sample_support), and torch_probs / support_table /
    counts_from_tokens on the device asked for or the tokens'. On a CPU-only machine 'meta'
    stands in for the other device: every result must be a CPU tensor with the same values
    as without it."""
    import torch
    from scansnap import counts_from_tokens, sample_tokens, syn_small
    from scansnap.data import sample_support, support_table
    c = syn_small()
    ref_tb = sample_tokens(c, 6, 5, torch.Generator().manual_seed(2))
    ref_t = support_table(c)
    ref_sb = sample_support(c, 6, 5, [torch.Generator().manual_seed(2)], ref_t)
    with torch.device("meta"):
        probs = c.torch_probs("cpu")
        tb = sample_tokens(c, 6, 5, torch.Generator().manual_seed(2))
        counts = counts_from_tokens(ref_tb.tokens, c.M)
        t = support_table(c, device="cpu")
        sb = sample_support(c, 6, 5, [torch.Generator().manual_seed(2)], ref_t)
    assert probs.device.type == "cpu"
    np.testing.assert_array_equal(probs.numpy(), c.probs)
    for a, b in zip(tb, ref_tb):
        assert a.device.type == "cpu" and torch.equal(a, b)
    assert counts.device.type == "cpu"
    assert torch.equal(counts, counts_from_tokens(ref_tb.tokens, c.M))
    for a, b in zip(t, ref_t):
        if isinstance(a, torch.Tensor):
            assert a.device.type == "cpu" and torch.equal(a, b)
    for a, b in zip(sb, ref_sb):
        assert a.device.type == "cpu" and torch.equal(a, b)
