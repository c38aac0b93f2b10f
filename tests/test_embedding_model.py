"""The standard-parameterisation transformer used on real text (Sec. 8)."""
import pytest
import torch

from scansnap.model import EmbeddingTransformer


@pytest.mark.parametrize("layers,heads,positional", [(1, 1, "sinusoidal"), (3, 2, None)])
def test_shapes_and_causal_attention(layers, heads, positional):
    torch.manual_seed(0)
    m = EmbeddingTransformer(50, d=16, heads=heads, layers=layers, d_hidden=32, positional=positional).eval()
    x = torch.randint(0, 50, (4, 12))
    logits, maps = m(x)
    assert logits.shape == (4, 12, 50) and len(maps) == layers
    for a in maps:
        assert a.shape == (4, heads, 12, 12)
        torch.testing.assert_close(a.sum(-1), torch.ones(4, heads, 12))
        assert torch.all(a.triu(1) == 0)                 # no peeking at the future
    # causal: changing the last token leaves earlier predictions unchanged
    x2 = x.clone(); x2[:, -1] = (x2[:, -1] + 1) % 50
    torch.testing.assert_close(m(x2)[0][:, :-1], logits[:, :-1])


def test_bad_arguments():
    with pytest.raises(ValueError, match="d=10 is not divisible by heads=3"):
        EmbeddingTransformer(20, d=10, heads=3)
    with pytest.raises(ValueError, match="unknown positional encoding 'learned'"):
        EmbeddingTransformer(20, positional="learned")
    with pytest.raises(ValueError, match="sequence length 9 exceeds max_len 8"):
        EmbeddingTransformer(20, d=8, max_len=8)(torch.zeros(1, 9, dtype=torch.long))
