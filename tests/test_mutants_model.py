"""model.py: behaviours the mutation run showed no test pinned down (bench/MUTATION.md)."""
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
    loss = SupportYZ(m, c, table).grads(sb.counts.log(), sb.classes, group)
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
