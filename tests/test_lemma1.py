"""Lemma 1 (Eq. 3): the closed-form gradients equal torch autograd, in float64."""
import numpy as np
import pytest
import torch

from scansnap import YZModel, sample_tokens, syn_medium, counts_from_tokens
from scansnap.theory import lemma1_gradients

TOL = 1e-10


def _model(M, rng, R=1, normalize=True, residual=False):
    m = YZModel(M, R, normalize=normalize, residual=residual, dtype=torch.float64)
    with torch.no_grad():
        m.Y.copy_(torch.from_numpy(rng.normal(size=(R, M, M))))
        m.Z.copy_(torch.from_numpy(rng.normal(size=(R, M, M))))
    return m


@pytest.mark.parametrize("normalize", [True, False])
@pytest.mark.parametrize("trial", range(5))
def test_eq3_matches_autograd(rng, normalize, trial):
    M, T = 12, 9
    m = _model(M, rng, normalize=normalize)
    tokens = rng.integers(0, M, size=T)
    nxt = int(rng.integers(0, M))
    out = m.forward_tokens(torch.from_numpy(tokens)[None])
    loss = m.loss(out, torch.tensor([nxt]))     # batch of one: loss = -J
    loss.sum().backward()
    dY, dZ = lemma1_gradients(m.Y[0].detach().numpy(), m.Z[0].detach().numpy(), tokens, nxt,
                              normalize=normalize)
    np.testing.assert_allclose(dY, -m.Y.grad[0].numpy(), atol=TOL, rtol=0)
    np.testing.assert_allclose(dZ, -m.Z.grad[0].numpy(), atol=TOL, rtol=0)
    # rows of the updates sum to zero (Eq. 3: both updates have zero row sums)
    np.testing.assert_allclose(dY.sum(axis=1), 0, atol=TOL)
    np.testing.assert_allclose(dZ.sum(axis=1), 0, atol=TOL)
    # only row x_T of Z moves (Eq. 4)
    others = np.delete(np.arange(M), tokens[-1])
    assert np.all(dZ[others] == 0)


@pytest.mark.parametrize("normalize,residual", [(True, False), (False, False), (True, True), (False, True)])
def test_batched_closed_form_matches_autograd(rng, normalize, residual):
    """YZModel.lemma1_grads (the trainer's fast path) against autograd, R runs at once."""
    classes = syn_medium(3)
    R, B = 4, 16
    m = _model(classes.M, rng, R, normalize, residual)
    g = torch.Generator().manual_seed(0)
    tb = sample_tokens(classes, B, 20, g)
    tokens = tb.tokens.expand(R, -1, -1)
    labels = tb.labels.expand(R, -1)
    counts = counts_from_tokens(tokens, classes.M, torch.float64)
    loss_cf = m.lemma1_grads(counts.log(), tokens[..., -1], labels)
    gY, gZ = m.Y.grad.clone(), m.Z.grad.clone()
    m.Y.grad = m.Z.grad = None
    loss = m.loss(m.forward_counts(counts, tokens[..., -1]), labels)
    loss.sum().backward()
    torch.testing.assert_close(loss_cf, loss.detach(), atol=TOL, rtol=0)
    torch.testing.assert_close(gY, m.Y.grad, atol=TOL, rtol=0)
    torch.testing.assert_close(gZ, m.Z.grad, atol=TOL, rtol=0)
