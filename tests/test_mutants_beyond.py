"""scansnap.beyond pinned by value (issue 28's mutation testing): the extended Y/Z model's
attention with each positional bias, its heads and residual, its initialisation, the position-
dependent sampler, the per-class attention and two steps of ``fit`` (SGD with momentum, Adam)
recomputed by hand. test_beyond.py checks the model against the paper's and fit against
fit_group; these check what both compute."""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from scansnap import beyond, sample_tokens, syn_small
from scansnap.beyond import ExtendedYZ, class_attention, fit, fit_group, sample
from scansnap.data import make_classes
from scansnap.model import sinusoidal_encoding


def _tokens(seed=0, B=6, T=9):
    return sample_tokens(syn_small(), B, T, generator=torch.Generator().manual_seed(seed)).tokens


def _model(pos, heads=2, residual=False, seed=0):
    m = ExtendedYZ(syn_small().M, heads=heads, pos=pos, residual=residual, init_std=0.7, seed=seed, pos_dim=4).double()
    g = torch.Generator().manual_seed(9)
    with torch.no_grad():
        m.Y.copy_(torch.randn(m.Y.shape, generator=g, dtype=torch.float64))
        if pos == "linear":
            m.slope.copy_(3 * torch.randn(m.slope.shape, generator=g, dtype=torch.float64))
        if pos == "sinusoidal":
            m.w_pos.copy_(3 * torch.randn(m.w_pos.shape, generator=g, dtype=torch.float64))
    return m


def _reference(m, toks):
    """Eq. 1 with the bias, per head, in numpy: b (B, H, T-1), c (B, H, M), logits (B, M)."""
    toks = toks.numpy()
    B, T = toks.shape
    T1 = T - 1
    Z, Y = m.Z.detach().numpy(), m.Y.detach().numpy()
    b = np.zeros((B, m.heads, T1))
    c = np.zeros((B, m.heads, m.M))
    for i in range(B):
        q, ctx = toks[i, -1], toks[i, :-1]
        for h in range(m.heads):
            z = Z[h, q, ctx].copy()
            if m.pos == "linear":
                z += m.slope.detach().numpy()[h, q] * (np.arange(T1) - T1) / T1
            elif m.pos == "sinusoidal":
                for t in range(T1):                     # features of the distance T - t (t = 0..T-2)
                    dist = T1 - t
                    feats = [math.sin(dist / 10000 ** ((j - j % 2) / m.pos_dim)) if j % 2 == 0 else
                             math.cos(dist / 10000 ** ((j - j % 2) / m.pos_dim)) for j in range(m.pos_dim)]
                    z[t] += m.w_pos.detach().numpy()[h, q] @ np.array(feats)
            e = np.exp(z - z.max())
            b[i, h] = e / e.sum()
            np.add.at(c[i, h], ctx, b[i, h])
    f = c / np.linalg.norm(c, axis=-1, keepdims=True)
    if m.residual:
        f = f + np.eye(m.M)[toks[:, -1]][:, None]
        f = f / np.linalg.norm(f, axis=-1, keepdims=True)
    return f.reshape(B, -1) @ Y, c, b


@pytest.mark.parametrize("pos", [None, "linear", "sinusoidal"])
@pytest.mark.parametrize("residual", [False, True])
def test_extended_model_by_value(pos, residual):
    m = _model(pos, residual=residual)
    toks = _tokens()
    logits, c, b = m(toks)
    want_logits, want_c, want_b = _reference(m, toks)
    np.testing.assert_allclose(b.detach().numpy(), want_b, rtol=1e-6, atol=1e-12)   # float32 features (sinusoidal)
    np.testing.assert_allclose(c.detach().numpy(), want_c, rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(logits.detach().numpy(), want_logits, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(m.attention(toks).detach().numpy(), want_b, rtol=1e-6, atol=1e-12)


def test_initialisation():
    M = 7
    m = ExtendedYZ(M, heads=3, init_std=0.5, seed=4)
    assert m.Y.shape == (3 * M, M) and torch.all(m.Y == 0)
    assert torch.equal(m.Z.detach(), 0.5 * torch.randn(3, M, M, generator=torch.Generator().manual_seed(4)))
    assert torch.all(ExtendedYZ(M).Z == 0) and ExtendedYZ(M).Z.shape == (1, M, M)
    assert ExtendedYZ(M, pos="linear", heads=2).slope.shape == (2, M)
    s = ExtendedYZ(M, pos="sinusoidal", heads=2)
    assert s.w_pos.shape == (2, M, 16) and torch.all(s.w_pos == 0) and s.pos_dim == 16
    assert not hasattr(ExtendedYZ(M), "slope") and not hasattr(ExtendedYZ(M), "w_pos")
    assert ExtendedYZ(M, residual=1).residual is True and ExtendedYZ(M).heads == 1 and ExtendedYZ(M).M == M
    for kw, msg in [(dict(M=1), r"M \(vocabulary size\) must be an integer >= 2, got 1"),
                    (dict(M=5, pos_dim=0), r"pos_dim must be an integer >= 1, got 0"),
                    (dict(M=5, heads=0), r"heads must be an integer >= 1, got 0"),
                    (dict(M=5, init_std=-0.1), r"init_std must be >= 0, got -0\.1"),
                    (dict(M=5, pos="alibi"), r"unknown positional encoding 'alibi': use one of \(None, 'linear', 'sinusoidal'\)")]:
        with pytest.raises(ValueError, match=msg):
            ExtendedYZ(**kw)
    ExtendedYZ(2, init_std=0.0)                                   # the bounds themselves


def test_attention_refuses_bad_tokens():
    m = ExtendedYZ(5)
    for toks, msg in [(torch.tensor([1, 2, 3]), r"tokens must be \(batch, T\) with T >= 2, got shape \(3,\)"),
                      (torch.tensor([[1]]), r"got shape \(1, 1\)"),
                      (torch.tensor([[1, -1, 2]]), r"token id -1 out of range \[0, 5\)"),
                      (torch.tensor([[1, 2, 5]]), r"token id 5 out of range \[0, 5\)")]:
        with pytest.raises(ValueError, match=msg):
            m(toks)
    assert m(torch.tensor([[0, 4]]))[2].shape == (1, 1, 1)          # T = 2: one contextual position


def test_sample_with_a_noisy_prefix_by_value():
    cl = syn_small()
    g = torch.Generator().manual_seed(3)
    got = sample(cl, 8, 21, g, noise_prefix=0.35)                   # k = int(0.35 * 20) = 7
    g2 = torch.Generator().manual_seed(3)
    want = sample_tokens(cl, 8, 21, generator=g2)
    common = torch.as_tensor(cl.common_tokens)
    prefix = common[torch.randint(len(common), (8, 7), generator=g2)]
    assert torch.equal(got.tokens[:, :7], prefix) and torch.equal(got.tokens[:, 7:], want.tokens[:, 7:])
    assert torch.equal(got.labels, want.labels) and torch.equal(got.classes, want.classes)
    plain = sample(cl, 8, 21, torch.Generator().manual_seed(3))
    assert torch.equal(plain.tokens, sample_tokens(cl, 8, 21, generator=torch.Generator().manual_seed(3)).tokens)
    for bad in (-0.1, 1.0):
        with pytest.raises(ValueError, match=rf"noise_prefix must be in \[0, 1\), got {bad}"):
            sample(cl, 2, 5, g, noise_prefix=bad)
    lonely = make_classes(2, num_common=0)
    with pytest.raises(ValueError, match=r"noise_prefix needs common tokens"):
        sample(lonely, 2, 11, g, noise_prefix=0.5)
    assert sample(lonely, 2, 11, g, noise_prefix=0.05).tokens.shape == (2, 11)   # k = 0: nothing redrawn


def test_class_attention_is_the_mean_per_class():
    cl = syn_small()
    m = _model("linear")
    c, b = class_attention(m, cl, T=12, per_class=5, seed=7, noise_prefix=0.3)
    batch = sample(cl, 5 * cl.K, 12, torch.Generator().manual_seed(7), 0.3)
    _, cc, bb = m(batch.tokens)
    assert c.shape == (cl.K, 2, cl.M) and b.shape == (cl.K, 2, 11)
    for n in range(cl.K):
        sel = batch.classes == n
        torch.testing.assert_close(c[n], cc[sel].mean(0).detach())
        torch.testing.assert_close(b[n], bb[sel].mean(0).detach())
    c0, _ = class_attention(m, cl)                                   # defaults: T 128, 64 per class, seed 10000
    batch = sample(cl, 64 * cl.K, 128, torch.Generator().manual_seed(10_000))
    torch.testing.assert_close(c0[0], m(batch.tokens)[1][batch.classes == 0].mean(0).detach())


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_fit_is_two_steps_of_its_optimizer(optimizer):
    cl = syn_small()
    kw = dict(heads=2, pos="linear", init_std=0.2, eta_y=0.3, eta_z=0.7)
    res = fit(cl, optimizer=optimizer, steps=2, batch=8, T=10, seed=5, snapshot_steps=[1, 2], noise_prefix=0.2, **kw)
    ref = ExtendedYZ(cl.M, heads=2, pos="linear", init_std=0.2, seed=5)
    groups = [{"params": [ref.Y], "lr": 0.3}, {"params": [ref.Z, ref.slope], "lr": 0.7}]
    opt = torch.optim.SGD(groups, momentum=0.9) if optimizer == "sgd" else torch.optim.Adam(groups)
    g = torch.Generator().manual_seed(6)
    losses, snaps = [], {}
    for step in range(3):
        if step in (1, 2):
            snaps[step] = class_attention(ref, cl, T=10, noise_prefix=0.2)[0].numpy()
        if step == 2:
            break
        b = sample(cl, 8, 10, g, 0.2)
        loss = F.cross_entropy(ref(b.tokens)[0], b.labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    np.testing.assert_array_equal(res.losses, losses)
    assert sorted(res.snapshots) == [1, 2] and sorted(res.positions) == [1, 2]
    for s in (1, 2):
        np.testing.assert_array_equal(res.snapshots[s], snaps[s])
    for (n, p), q in zip(res.model.named_parameters(), ref.parameters()):
        assert torch.equal(p, q), n
    assert losses[0] == pytest.approx(math.log(cl.M), rel=1e-6)       # Y = 0: uniform prediction


def test_fit_defaults_and_zero_steps():
    cl = syn_small()
    res = fit(cl, steps=0, snapshot_steps=[0], T=6)
    assert res.losses.shape == (0,) and list(res.snapshots) == [0] and res.snapshots[0].shape == (cl.K, 1, cl.M)
    one = fit(cl, steps=1, batch=4, T=6)
    assert one.model.heads == 1 and one.model.pos is None and not one.model.residual
    assert float(one.model.Y.abs().max()) > 0 and torch.all(one.model.Z == 0)   # Y = 0 at step 0: no gradient for Z yet
    with pytest.raises(ValueError, match=r"steps must be an integer >= 0, got -1"):
        fit(cl, steps=-1)
    with pytest.raises(ValueError, match=r"eta_y must be a positive number, got 0"):
        fit_group(cl, [dict(eta_y=0)], steps=1)
    with pytest.raises(ValueError, match=r"each variant must be a dict of fit's options, got str"):
        fit_group(cl, ["x"], steps=1)
    with pytest.raises(ValueError, match=r"unknown variant option\(s\) \['lr'\]: use \('heads'"):
        fit_group(cl, [dict(lr=1)], steps=1)
    with pytest.raises(ValueError, match=r"unknown optimizer 'rmsprop': use 'sgd' or 'adam'"):
        fit_group(cl, [dict(optimizer="rmsprop")], steps=1)
    assert beyond.MODEL_OPTIONS == ("heads", "pos", "residual", "init_std", "optimizer", "eta_y", "eta_z")
