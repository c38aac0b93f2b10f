"""The real-text path: WikiText-2 ids, the LM trainer, validation attention entropy."""
import numpy as np
import pytest
import torch

from scansnap import experiments as ex
from scansnap.train import train_lm


@pytest.fixture(scope="module")
def data():
    return ex.wikitext_data()


def test_vocab_and_ids(data):
    tr, va, vocab = data
    assert 9_000 < len(vocab) < 12_000 and "<unk>" in vocab.stoi and "<eos>" in vocab.stoi
    assert int(tr.max()) < len(vocab) and int(va.max()) < len(vocab)


def test_train_lm_learns_and_snapshots(data):
    tr, va, vocab = data
    res = train_lm(tr, len(vocab), steps=30, lr=5.0, probe=va[:12], snapshot_steps=[0, 30], seed=1)
    assert res.loss[-5:].mean() < res.loss[0] - 1.0             # it learns
    assert set(res.snapshots) == {0, 30}
    a = res.snapshots[30][0]                                     # lowest layer, (heads, T, T)
    assert a.shape == (1, 12, 12) and torch.allclose(a.sum(-1), torch.ones(1, 12))
    again = train_lm(tr, len(vocab), steps=30, lr=5.0, seed=1)
    assert np.array_equal(res.loss, again.loss)                  # same seed, same history


def test_validation_entropy_falls_with_training(data):
    tr, va, vocab = data
    e0 = ex.validation_attention_entropy(train_lm(tr, len(vocab), steps=1, lr=5.0).model, va, batches=3)
    e1 = ex.validation_attention_entropy(train_lm(tr, len(vocab), steps=60, lr=5.0).model, va, batches=3)
    assert 2.0 < e0 < 3.5 and e1 < e0


def test_bad_lm_arguments(data):
    tr, _, vocab = data
    with pytest.raises(ValueError, match="lr must be a positive number, got -1"):
        train_lm(tr, len(vocab), lr=-1, steps=1)
    with pytest.raises(ValueError, match="too short for bptt=35"):
        train_lm(tr[:100], len(vocab), steps=1)
