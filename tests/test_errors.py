"""Bad input raises ValueError early, naming the bad value."""
import numpy as np
import pytest
import torch

from scansnap import SequenceClasses, YZModel, counts_from_tokens, sample_tokens, syn_small, train


def _table(**kw):
    d = dict(probs=[[0.5, 0.5, 0, 0], [0, 0.5, 0.5, 0]], query=[3, 3], next_token=[0, 1])
    d.update(kw)
    return d


def test_valid_table_is_accepted():
    c = SequenceClasses(**_table())
    assert list(c.common_tokens) == [1]


@pytest.mark.parametrize("kw,match", [
    (dict(probs=[[0.7, 0.5, -0.2, 0], [0, 0.5, 0.5, 0]]), r"negative: -0\.2"),
    (dict(probs=[[0.5, 0.4, 0, 0], [0, 0.5, 0.5, 0]]), r"sums to 0\.9"),
    (dict(probs=[[np.nan, 1, 0, 0], [0, 0.5, 0.5, 0]]), r"not finite"),
    (dict(query=[3, 7]), r"query token 7 .* out of range"),
    (dict(next_token=[0, -1]), r"next token -1 .* out of range"),
    (dict(query=[2, 3], next_token=[1, 1]), r"next token 1 has two query tokens, 2 .* and 3"),
])
def test_bad_tables(kw, match):
    with pytest.raises(ValueError, match=match):
        SequenceClasses(**_table(**kw))


def test_token_id_out_of_range():
    m = YZModel(5)
    with pytest.raises(ValueError, match="token id 9 out of range"):
        m.forward_tokens(torch.tensor([[0, 9, 1]]))
    with pytest.raises(ValueError, match="token id -2 out of range"):
        counts_from_tokens(torch.tensor([[0, -2, 1]]), 5)


@pytest.mark.parametrize("kw,match", [
    (dict(eta_y=0), r"eta_y must be a positive number, got 0"),
    (dict(eta_z=-1.0), r"eta_z must be a positive number, got -1\.0"),
    (dict(eta_y=float("nan")), r"eta_y must be a positive number"),
    (dict(batch=0), r"batch size must be an integer >= 1, got 0"),
    (dict(T=1), r"T \(sequence length\) must be an integer >= 2, got 1"),
    (dict(steps=0), r"steps must be an integer >= 1, got 0"),
    (dict(optimizer="rmsprop"), r"unknown optimizer 'rmsprop'"),
    (dict(device="tpu"), r"unknown device 'tpu'"),
    (dict(init="xavier"), r"unknown init 'xavier'"),
    (dict(path="both"), r"unknown path 'both'"),
    (dict(snapshot_steps=[5]), r"snapshot step 5 out of range \[0, 3\]"),
    (dict(eta_y=[1, 2], seeds=[1, 2, 3]), r"the per-run lengths disagree: seeds has 3, eta_y has 2"),
])
def test_bad_training_arguments(kw, match):
    args = dict(steps=3, batch=4, T=8)
    args.update(kw)
    with pytest.raises(ValueError, match=match):
        train(syn_small(), **args)


def test_bad_sampling_arguments():
    g = torch.Generator().manual_seed(0)
    with pytest.raises(ValueError, match="T \\(sequence length\\) must be an integer >= 2, got 1"):
        sample_tokens(syn_small(), 4, 1, g)
    with pytest.raises(ValueError, match="batch size must be an integer >= 1, got -3"):
        sample_tokens(syn_small(), -3, 10, g)


def test_cuda_without_cuda():
    if torch.cuda.is_available():
        pytest.skip("CUDA is present")
    with pytest.raises(ValueError, match="device 'cuda' asked for, but CUDA is not available"):
        train(syn_small(), steps=1, batch=2, T=4, device="cuda")
