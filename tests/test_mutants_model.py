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
