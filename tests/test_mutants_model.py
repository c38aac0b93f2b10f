"""model.py: behaviours the mutation run showed no test pinned down (bench/MUTATION.md)."""
import math

import numpy as np
import pytest
import torch

from scansnap import YZModel


# ---------------------------------------------------------------------------------------
# forward_counts: what is not a (B, M) / (R, B, M) tensor is a ValueError saying what it got
# ---------------------------------------------------------------------------------------

def test_forward_counts_names_what_it_got_instead_of_counts():
    m = YZModel(4, 1)
    q = torch.tensor([0])
    with pytest.raises(ValueError, match=r"^counts must be a \(B, M\) or \(R, B, M\) tensor, got "
                                         r"torch\.Size\(\[4\]\)$"):
        m.forward_counts(torch.ones(4), q)                            # a tensor of the wrong rank
    with pytest.raises(ValueError, match=r"^counts must be a \(B, M\) or \(R, B, M\) tensor, got "
                                         r"\(1, 4\)$"):
        m.forward_counts(np.ones((1, 4)), q)                          # numpy, not torch: its shape
    with pytest.raises(ValueError, match=r"^counts must be a \(B, M\) or \(R, B, M\) tensor, got list$"):
        m.forward_counts([[1.0, 0, 0, 0]], q)                         # no shape: its type


def test_forward_counts_names_the_dtype_of_a_bad_query():
    m = YZModel(4, 1)
    with pytest.raises(ValueError, match=r"^query must be a tensor of integer token ids, got torch\.float64$"):
        m.forward_counts(torch.ones(1, 4), torch.tensor([1.0], dtype=torch.float64))
    with pytest.raises(ValueError, match=r"^query must be a tensor of integer token ids, got torch\.bool$"):
        m.forward_counts(torch.ones(1, 4), torch.tensor([True]))
    with pytest.raises(ValueError, match=r"^query must be a tensor of integer token ids, got list$"):
        m.forward_counts(torch.ones(1, 4), [1])


# ---------------------------------------------------------------------------------------
# SupportYZ: a loss whose alpha[label] underflows stays the number the dense path gives
# ---------------------------------------------------------------------------------------

def test_support_loss_with_underflowing_alpha_equals_the_dense_path():
    """With a large decoder, alpha[label] < 1e-30 for many sequences: the loss is recomputed
    from the logits (logsumexp - logit), row by row, and equals YZModel.lemma1_grads' loss."""
    from scansnap import counts_from_tokens, sample_tokens, syn_medium
    from scansnap.data import sample_support, support_table
    from scansnap.model import SupportYZ
    c = syn_medium(2)
    R, S, B, T = 2, 1, 16, 20
    m = YZModel(c.M, R, init="default", seeds=[1, 2], dtype=torch.float64)
    with torch.no_grad():
        m.Y.mul_(-4000.0)
    table = support_table(c)
    group = torch.tensor([0, 0])
    sb = sample_support(c, B, T, [torch.Generator().manual_seed(0)], table, dtype=torch.float64)
    loss = SupportYZ(m, c, table).grads(sb.counts, sb.classes, group)
    tokens = sample_tokens(c, B, T, torch.Generator().manual_seed(0)).tokens[None]
    labels = torch.as_tensor(c.next_token.copy())[sb.classes[group]]
    logcounts = counts_from_tokens(tokens, c.M, torch.float64).log()[group]
    ref = m.lemma1_grads(logcounts, tokens[group][..., -1], labels)
    # the per-sequence losses of the dense path: many far beyond -log(1e-30) = 69
    out = m.forward_counts(logcounts.exp(), tokens[group][..., -1])
    per_seq = torch.logsumexp(out.logits, -1) - out.logits.gather(-1, labels[..., None]).squeeze(-1)
    assert int((per_seq > 100).sum(-1).min()) >= 2
    assert torch.isfinite(loss).all()
    torch.testing.assert_close(loss, ref, atol=0, rtol=1e-12)
    torch.testing.assert_close(loss, per_seq.mean(-1), atol=0, rtol=1e-12)


def test_support_path_refuses_a_residual_model_by_name():
    from scansnap import syn_small
    from scansnap.data import support_table
    from scansnap.model import SupportYZ
    c = syn_small()
    with pytest.raises(ValueError, match=r"^the support path has no residual connection: use path='counts'$"):
        SupportYZ(YZModel(c.M, 1, residual=True), c, support_table(c))


def test_yzmodel_names_a_bad_run_count_and_vocabulary():
    with pytest.raises(ValueError, match=r"^runs must be an integer >= 1, got 0$"):
        YZModel(5, 0)
    with pytest.raises(ValueError, match=r"^M \(vocabulary size\) must be an integer >= 2, got 1$"):
        YZModel(1, 1)


def test_embedding_transformer_names_a_bad_vocabulary_and_dropout():
    from scansnap.model import EmbeddingTransformer
    with pytest.raises(ValueError, match=r"^vocab must be an integer >= 2, got 1$"):
        EmbeddingTransformer(1, d=8, d_hidden=8)
    with pytest.raises(ValueError, match=r"^dropout must be in \[0, 1\), got 1\.0$"):
        EmbeddingTransformer(10, d=8, d_hidden=8, dropout=1.0)


# ---------------------------------------------------------------------------------------
# init_yz / YZModel defaults and argument messages
# ---------------------------------------------------------------------------------------

def test_init_yz_names_a_seed_count_that_does_not_match_the_runs():
    from scansnap.model import init_yz
    with pytest.raises(ValueError, match=r"^need one seed per run: 2 runs, 1 seeds$"):
        init_yz(3, 2, "default", [0])


def test_yzmodel_has_one_run_by_default():
    """YZModel(M) is a single run: Y, Z of shape (1, M, M), zero (Syn-Small's init)."""
    m = YZModel(3)
    assert m.runs == 1
    assert m.Y.shape == (1, 3, 3) and m.Z.shape == (1, 3, 3)


# ---------------------------------------------------------------------------------------
# forward_counts: query and counts validation name the first bad entry; boundaries pass
# ---------------------------------------------------------------------------------------

def test_forward_counts_accepts_query_token_zero_and_names_the_first_bad_id():
    """Token ids are in [0, M): 0 and M-1 are valid; the message names the first bad id."""
    m = YZModel(4, 1, dtype=torch.float64)
    counts = torch.ones(3, 4, dtype=torch.float64)
    out = m.forward_counts(counts, torch.tensor([0, 3, 0]))        # boundary ids are fine
    # Z = 0: attention is uniform over the 4 tokens (Eq. 20), f = c / ||c|| = 1/2 each
    torch.testing.assert_close(out.c, torch.full((1, 3, 4), 0.25, dtype=torch.float64), atol=0, rtol=0)
    with pytest.raises(ValueError, match=r"^query token id 7 out of range \[0, 4\)$"):
        m.forward_counts(counts, torch.tensor([0, 7, 9]))
    with pytest.raises(ValueError, match=r"^query token id -1 out of range \[0, 4\)$"):
        m.forward_counts(counts, torch.tensor([1, -1, 0]))


def test_forward_counts_names_the_first_negative_or_nonfinite_count():
    """Zero and fractional counts are valid weights; the message names the first bad one."""
    m = YZModel(4, 1, dtype=torch.float64)
    q = torch.tensor([0])
    with pytest.raises(ValueError, match=r"^counts must be finite and non-negative, got -2\.0$"):
        m.forward_counts(torch.tensor([[0.5, 0.0, -2.0, 1.0]], dtype=torch.float64), q)
    with pytest.raises(ValueError, match=r"^counts must be finite and non-negative, got inf$"):
        m.forward_counts(torch.tensor([[0.5, 0.0, float("inf"), 1.0]], dtype=torch.float64), q)


def test_forward_counts_names_an_all_zero_row():
    m = YZModel(3, 2, dtype=torch.float64)
    counts = torch.tensor([[[1.0, 0, 0]], [[0.0, 0, 0]]], dtype=torch.float64)
    with pytest.raises(ValueError, match=r"^sequence 0 \(run 1\) has all-zero counts: its attention, and every "
                                         r"logit, would be NaN \(a sequence needs at least one contextual token\)$"):
        m.forward_counts(counts, torch.tensor([[0], [0]]))


def test_forward_counts_keeps_the_model_dtype_for_float64_counts():
    """Counts of another dtype are weights only: a float32 model computes in float32."""
    m = YZModel(3, 1, dtype=torch.float32)
    with torch.no_grad():
        m.Y.copy_(torch.eye(3)[None])
    out = m.forward_counts(torch.tensor([[2.0, 1.0, 1.0]], dtype=torch.float64), torch.tensor([1]))
    assert out.c.dtype == out.f.dtype == out.logits.dtype == torch.float32
    # Z = 0: c = counts / sum = (1/2, 1/4, 1/4); f = c/||c|| = (2, 1, 1)/sqrt(6); Y = I: logits = f
    f = torch.tensor([[[2.0, 1.0, 1.0]]]) / math.sqrt(6.0)
    torch.testing.assert_close(out.c, torch.tensor([[[0.5, 0.25, 0.25]]]), atol=0, rtol=1e-6)
    torch.testing.assert_close(out.f, f, atol=0, rtol=1e-6)
    torch.testing.assert_close(out.logits, f, atol=0, rtol=1e-6)


# ---------------------------------------------------------------------------------------
# forward_tokens: the attention b over positions (Eq. 1) and LN(X^T b) are returned
# ---------------------------------------------------------------------------------------

def test_forward_tokens_returns_attention_over_positions_and_the_normalised_output():
    """Eq. 1: b_t = softmax_t(z_{x_T, x_t}) over t < T; c = X^T b; f = c/||c|| (Sec. 3.1)."""
    m = YZModel(3, 1, dtype=torch.float64)
    with torch.no_grad():
        m.Z[0, 2] = torch.tensor([math.log(2.0), 0.0, 5.0], dtype=torch.float64)        # row of the query token 2
    out = m.forward_tokens(torch.tensor([[0, 1, 0, 2]]))
    # weights exp(z): token 0 -> 2, token 1 -> 1: b over positions = (2, 1, 2)/5
    torch.testing.assert_close(out.b, torch.tensor([[[0.4, 0.2, 0.4]]], dtype=torch.float64),
                               atol=0, rtol=1e-15)
    torch.testing.assert_close(out.c, torch.tensor([[[0.8, 0.2, 0.0]]], dtype=torch.float64),
                               atol=0, rtol=1e-15)
    f = torch.tensor([[[4.0, 1.0, 0.0]]], dtype=torch.float64) / math.sqrt(17.0)
    torch.testing.assert_close(out.f, f, atol=0, rtol=1e-15)


def test_forward_tokens_accepts_length_two_and_names_length_one():
    """T = 2 (one contextual token and the query) is the shortest sequence: c is that token's one-hot."""
    m = YZModel(3, 1, dtype=torch.float64)
    out = m.forward_tokens(torch.tensor([[1, 2], [2, 0]]))
    torch.testing.assert_close(out.c[0], torch.eye(3, dtype=torch.float64)[[1, 2]], atol=0, rtol=0)
    with pytest.raises(ValueError, match=r"^T \(sequence length\) must be >= 2, got 1$"):
        m.forward_tokens(torch.tensor([[1]]))


def test_forward_tokens_names_a_token_id_equal_to_m_and_a_run_count_mismatch():
    m = YZModel(3, 2, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"^token id 3 out of range \[0, 3\)$"):
        m.forward_tokens(torch.tensor([[0, 3, 1]]))
    with pytest.raises(ValueError, match=r"^tokens has 3 runs, model has 2$"):
        m.forward_tokens(torch.zeros(3, 1, 2, dtype=torch.long))


# ---------------------------------------------------------------------------------------
# Dropout: p = 0 is the identity and draws no random numbers
# ---------------------------------------------------------------------------------------

def test_dropout_with_p_zero_returns_its_input_and_draws_nothing():
    """In training mode with p = 0 the layer is the identity and leaves the RNG stream untouched
    (so a dropout-free model draws the same random numbers batched and one at a time)."""
    from scansnap.model import Dropout
    d = Dropout(0.0).train()
    x = torch.arange(6, dtype=torch.float64)
    torch.manual_seed(3)
    state = torch.get_rng_state()
    assert d(x) is x
    assert torch.equal(torch.get_rng_state(), state)


def test_dropout_with_p_one_drops_everything_as_nn_dropout():
    """p = 1 in training mode gives zeros, as ``nn.Dropout(1.0)`` does, not 0 / 0 = NaN."""
    from scansnap.model import Dropout
    x = torch.arange(1.0, 7.0, dtype=torch.float64)
    got = Dropout(1.0).train()(x)
    assert torch.equal(got, torch.nn.Dropout(1.0).train()(x)) and torch.equal(got, torch.zeros(6, dtype=torch.float64))


# ---------------------------------------------------------------------------------------
# sinusoidal_encoding: Vaswani et al.'s closed form
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("d", [6, 5])
def test_sinusoidal_encoding_is_the_closed_form(d):
    """PE(p, 2i) = sin(p / 10000^(2i/d)), PE(p, 2i+1) = cos(p / 10000^(2i/d)); odd d drops the last cos."""
    from scansnap.model import sinusoidal_encoding
    T = 7
    want = np.zeros((T, d))
    for p in range(T):
        for k in range(d):
            i2 = k - k % 2
            angle = p / 10000.0 ** (i2 / d)
            want[p, k] = math.sin(angle) if k % 2 == 0 else math.cos(angle)
    pe = sinusoidal_encoding(T, d)
    assert pe.shape == (T, d) and pe.dtype == torch.float32
    np.testing.assert_allclose(pe.numpy(), want, rtol=0, atol=2e-6)   # float32 angles up to 6 rad


# ---------------------------------------------------------------------------------------
# EmbeddingTransformer: defaults, argument names, positional=None, the tutorial's init
# ---------------------------------------------------------------------------------------

def test_embedding_transformer_defaults():
    """Defaults (the PyTorch LM tutorial's sizes): d = d_hidden = 200, 1 head, 1 layer, max_len 512."""
    from scansnap.model import EmbeddingTransformer
    m = EmbeddingTransformer(5)
    assert m.d == 200 and m.U.weight.shape == (5, 200)
    assert len(m.blocks) == 1
    assert m.blocks[0].attn.heads == 1 and m.blocks[0].attn.dh == 200
    assert m.blocks[0].ff[0].out_features == 200
    assert m.pe.shape == (512, 200)
    assert m.drop.p == 0.2


def test_embedding_transformer_names_bad_heads_and_layers():
    from scansnap.model import EmbeddingTransformer
    with pytest.raises(ValueError, match=r"^heads must be an integer >= 1, got 0$"):
        EmbeddingTransformer(5, d=8, d_hidden=8, heads=0)
    with pytest.raises(ValueError, match=r"^layers must be an integer >= 1, got 0$"):
        EmbeddingTransformer(5, d=8, d_hidden=8, layers=0)


def test_embedding_transformer_accepts_dropout_zero():
    from scansnap.model import EmbeddingTransformer
    assert EmbeddingTransformer(5, d=8, d_hidden=8, dropout=0.0).drop.p == 0.0


def test_embedding_transformer_without_positional_encoding_ignores_position():
    """positional=None: no encoding buffer, and with causal attention a run of one repeated token
    gives the same logits at every position (nothing tells the positions apart)."""
    from scansnap.model import EmbeddingTransformer
    torch.manual_seed(0)
    m = EmbeddingTransformer(5, d=8, d_hidden=8, dropout=0.0, positional=None).double().eval()
    assert m.pe is None
    logits, _ = m(torch.full((1, 4), 3, dtype=torch.long))
    torch.testing.assert_close(logits[0], logits[0, :1].expand(4, 5), atol=1e-13, rtol=0)
    # with the encoding the positions differ
    torch.manual_seed(0)
    m = EmbeddingTransformer(5, d=8, d_hidden=8, dropout=0.0).double().eval()
    logits, _ = m(torch.full((1, 4), 3, dtype=torch.long))
    assert float((logits[0, 1:] - logits[0, :1]).abs().max().detach()) > 1e-3


def test_embedding_transformer_init_is_uniform_in_plus_minus_a_tenth():
    """U and the decoder weights ~ U(-0.1, 0.1) (the PyTorch LM tutorial), decoder bias 0:
    all entries inside the interval, both ends nearly reached (2,000 draws each)."""
    from scansnap.model import EmbeddingTransformer
    torch.manual_seed(0)
    m = EmbeddingTransformer(10, d=200, d_hidden=8)
    for w in (m.U.weight.detach(), m.decoder.weight.detach()):
        assert float(w.min()) >= -0.1 and float(w.max()) <= 0.1
        assert float(w.min()) < -0.099 and float(w.max()) > 0.099
    assert torch.equal(m.decoder.bias, torch.zeros(10))


def test_embedding_transformer_accepts_max_len_and_names_a_longer_sequence():
    from scansnap.model import EmbeddingTransformer
    m = EmbeddingTransformer(5, d=8, d_hidden=8, max_len=4).eval()
    logits, maps = m(torch.zeros(1, 4, dtype=torch.long))
    assert logits.shape == (1, 4, 5)
    with pytest.raises(ValueError, match=r"^sequence length 5 exceeds max_len 4$"):
        m(torch.zeros(1, 5, dtype=torch.long))


# ---------------------------------------------------------------------------------------
# _class_bags: entries ordered by (class, slot, sequence), as its docstring says
# ---------------------------------------------------------------------------------------

def test_class_bags_lists_each_class_sequences_in_order_once_per_slot():
    from scansnap.model import _class_bags
    g = torch.Generator().manual_seed(0)
    S, B, K, o = 2, 64, 3, 2
    classes = torch.randint(0, K, (S, B), generator=g)
    row, bag0, sizes = _class_bags(classes, K, o)
    for s in range(S):
        members = [[b for b in range(B) if int(classes[s, b]) == n] for n in range(K)]
        want_row = [b for n in range(K) for _ in range(o) for b in members[n]]
        want_sizes = [len(members[n]) for n in range(K) for _ in range(o)]
        want_bag0 = list(np.cumsum([0] + want_sizes[:-1]))
        assert row[s].tolist() == want_row
        assert sizes[s].tolist() == want_sizes
        assert bag0[s].tolist() == want_bag0


# ---------------------------------------------------------------------------------------
# Devices: every tensor is created on the device asked for. PyTorch's "meta" device (shapes
# and dtypes, no data) stands in for a GPU on a CPU-only machine: a tensor left on the CPU
# shows up as device "cpu" (tests/test_cuda.py checks the arithmetic on a real GPU).
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("init", ["zero", "default"])
def test_yzmodel_puts_y_and_z_on_the_device_it_is_given(init):
    m = YZModel(3, 2, init=init, device="meta")
    assert m.Y.device.type == "meta" and m.Z.device.type == "meta"
    assert m.Y.shape == m.Z.shape == (2, 3, 3)


def test_support_path_keeps_its_packed_rows_and_indices_on_the_models_device():
    from scansnap import syn_medium
    from scansnap.data import support_table
    from scansnap.model import SupportYZ
    c = syn_medium(2)
    s = SupportYZ(YZModel(c.M, 2, device="meta", dtype=torch.float64), c, support_table(c))
    for name in ("Ys", "Yo", "Za", "own_row", "z_index", "labels"):
        assert getattr(s, name).device.type == "meta", name
    assert s.Ys.dtype == s.Yo.dtype == s.Za.dtype == torch.float64


# ---------------------------------------------------------------------------------------
# _nll_from_softmax: -log alpha[label] keeps its relative accuracy for a nearly certain label
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("gap", [10.0, 20.0])
def test_nll_of_a_nearly_certain_label_is_accurate_relative_to_its_size(gap):
    """The loss near convergence (plotted on a log scale) is tiny: with logits (gap, 0, 0) it is
    log(1 + 2 e^-gap) exactly. -log alpha is accurate to a few ulp(1) / (1 - alpha) relative;
    logsumexp - logit would cancel against the gap and lose ~gap times more."""
    from scansnap.model import _nll_from_softmax
    logits = torch.tensor([[[gap, 0.0, 0.0]]], dtype=torch.float64)
    alpha = torch.softmax(logits, -1)
    exact = math.log1p(2.0 * math.exp(-gap))
    got = _nll_from_softmax(alpha, logits, torch.tensor([[[0]]])).item()
    one_minus_alpha = 2.0 * math.exp(-gap) / (1.0 + 2.0 * math.exp(-gap))
    assert got == pytest.approx(exact, rel=8 * 2.0 ** -53 / one_minus_alpha, abs=0)
