"""The embedding transformer and its trainers pinned by value (issue 28's mutation testing).

The positional encoding, the attention, a block and the whole forward pass are recomputed here
in float64 numpy from the model's own weights, by the formulas of Vaswani et al. and the
PyTorch LM tutorial the model follows; one SGD step of ``train_lm`` (window, clipping, rate)
and the batched program of ``train_lms`` are recomputed by hand. Small models, a few steps:
fast enough to run against every mutant."""
import math

import numpy as np
import pytest
import torch

from scansnap import lm
from scansnap.model import Block, EmbeddingTransformer, SelfAttention, sinusoidal_encoding


def _np(t):
    return t.detach().double().numpy()


def _softmax(x):
    x = x - x.max(-1, keepdims=True)
    e = np.exp(x)
    return e / e.sum(-1, keepdims=True)


def _ln(x, w, b, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


# ---------------------------------------------------------------------------------------
# The model, by value
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("T, d", [(5, 6), (4, 7), (1, 2)])
def test_sinusoidal_encoding_by_value(T, d):
    """PE(p, 2i) = sin(p / 10000^(2i/d)), PE(p, 2i+1) = cos(p / 10000^(2i/d)); an odd d ends on a sine."""
    want = np.zeros((T, d))
    for p in range(T):
        for j in range(d):
            angle = p / 10000 ** ((j - j % 2) / d)
            want[p, j] = math.sin(angle) if j % 2 == 0 else math.cos(angle)
    got = sinusoidal_encoding(T, d)
    assert got.shape == (T, d) and got.dtype == torch.float32
    np.testing.assert_allclose(_np(got), want, rtol=0, atol=2e-6)


def _attention(x, Wq, Wk, Wv, Wo, heads):
    """Causal multi-head attention in numpy: (B, T, d) -> output (B, T, d), maps (B, heads, T, T)."""
    B, T, d = x.shape
    dh = d // heads
    q, k, v = (x @ W.T for W in (Wq, Wk, Wv))
    maps = np.zeros((B, heads, T, T))
    y = np.zeros((B, T, d))
    for h in range(heads):
        s = slice(h * dh, (h + 1) * dh)
        scores = q[..., s] @ k[..., s].transpose(0, 2, 1) / math.sqrt(dh)
        scores = np.where(np.triu(np.ones((T, T), bool), 1), -np.inf, scores)
        maps[:, h] = _softmax(scores)
        y[..., s] = maps[:, h] @ v[..., s]
    return y @ Wo.T, maps


@pytest.mark.parametrize("heads", [1, 2, 3])
def test_self_attention_by_value(heads):
    torch.manual_seed(0)
    att = SelfAttention(6, heads).double()
    x = torch.randn(2, 5, 6, dtype=torch.float64)
    mask = torch.ones(5, 5, dtype=torch.bool).triu(1)
    out, maps = att(x, mask)
    W = [_np(getattr(att, f"W_{n}").weight) for n in "QKVO"]
    want_out, want_maps = _attention(_np(x), *W, heads)
    assert maps.shape == (2, heads, 5, 5)
    np.testing.assert_allclose(_np(maps), want_maps, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(_np(out), want_out, rtol=1e-12, atol=1e-14)
    assert att.heads == heads and att.dh == 6 // heads
    with pytest.raises(ValueError, match=r"model width d=6 is not divisible by heads=4"):
        SelfAttention(6, 4)


def _block(x, blk, heads):
    a, maps = _attention(x, *[_np(getattr(blk.attn, f"W_{n}").weight) for n in "QKVO"], heads)
    x = _ln(x + a, _np(blk.ln1.weight), _np(blk.ln1.bias))
    f = np.maximum(x @ _np(blk.ff[0].weight).T + _np(blk.ff[0].bias), 0) @ _np(blk.ff[2].weight).T + _np(blk.ff[2].bias)
    return _ln(x + f, _np(blk.ln2.weight), _np(blk.ln2.bias)), maps


def _perturbed(module, seed=1):
    """LayerNorms and biases away from their 1/0 initialisation, so a swapped weight shows."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.add_(0.3 * torch.randn(p.shape, generator=g, dtype=p.dtype))
    return module


def test_block_is_post_norm_by_value():
    torch.manual_seed(0)
    blk = _perturbed(Block(4, 2, 5, 0.0).double())
    x = torch.randn(3, 4, 4, dtype=torch.float64)
    out, maps = blk(x, torch.ones(4, 4, dtype=torch.bool).triu(1))
    want, want_maps = _block(_np(x), blk, 2)
    np.testing.assert_allclose(_np(out), want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(_np(maps), want_maps, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("positional", ["sinusoidal", None])
def test_embedding_transformer_forward_by_value(positional):
    torch.manual_seed(0)
    m = _perturbed(EmbeddingTransformer(11, d=6, heads=2, layers=2, d_hidden=5, dropout=0.3,
                                        positional=positional, max_len=9).double()).eval()
    x = torch.tensor([[3, 1, 4, 1, 5, 9, 2], [6, 5, 3, 5, 8, 9, 7]])
    logits, maps = m(x)
    h = _np(m.U.weight)[x.numpy()] * math.sqrt(6)
    if positional:
        h = h + _np(sinusoidal_encoding(9, 6))[:7]
    want_maps = []
    for blk in m.blocks:
        h, mp = _block(h, blk, 2)
        want_maps.append(mp)
    want = h @ _np(m.decoder.weight).T + _np(m.decoder.bias)
    np.testing.assert_allclose(_np(logits), want, rtol=1e-9, atol=1e-11)
    assert len(maps) == 2
    for a, b in zip(maps, want_maps):
        np.testing.assert_allclose(_np(a), b, rtol=1e-10, atol=1e-13)
    assert (m.pe is None) == (positional is None) and m.d == 6


def test_embedding_transformer_initialisation_and_limits():
    torch.manual_seed(0)
    m = EmbeddingTransformer(50, d=8, d_hidden=4, max_len=6)
    assert float(m.U.weight.abs().max()) <= 0.1 and float(m.U.weight.abs().max()) > 0.09   # U(-0.1, 0.1)
    assert float(m.decoder.weight.abs().max()) <= 0.1 and float(m.decoder.weight.abs().max()) > 0.09
    assert float(m.decoder.bias.abs().max()) == 0.0
    assert m.pe.shape == (6, 8) and len(m.blocks) == 1 and m.blocks[0].attn.heads == 1
    assert m.drop.p == 0.2 and m.blocks[0].drop.p == 0.2
    with pytest.raises(ValueError, match=r"sequence length 7 exceeds max_len 6"):
        m(torch.zeros(1, 7, dtype=torch.long))
    m(torch.zeros(1, 6, dtype=torch.long))                          # max_len itself is fine


# ---------------------------------------------------------------------------------------
# train_lm: one step by hand
# ---------------------------------------------------------------------------------------

def _text(n=400, V=13, seed=0):
    return torch.randint(0, V, (n,), generator=torch.Generator().manual_seed(seed))


def test_train_lm_is_clipped_sgd_on_consecutive_windows():
    """Two steps of train_lm (dropout off) against the same model stepped by hand: window s of
    bptt tokens (columns of batchify), cross-entropy, gradient clipped to norm `clip`, SGD."""
    ids, V = _text(), 13
    kw = dict(d=8, heads=2, d_hidden=6, dropout=0.0, batch=4, bptt=5, clip=0.05, seed=3)
    res = lm.train_lm(ids, V, lr=0.7, steps=2, **kw)
    torch.manual_seed(3)
    ref = EmbeddingTransformer(V, d=8, heads=2, d_hidden=6, dropout=0.0)
    data = ids[:400 // 4 * 4].view(4, -1).t()
    losses = []
    for s in range(2):
        x, y = data[s * 5:s * 5 + 5].t(), data[s * 5 + 1:s * 5 + 6].t()
        logits, _ = ref(x)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, V), y.reshape(-1))
        losses.append(loss.item())
        ref.zero_grad()
        loss.backward()
        g = torch.cat([p.grad.reshape(-1) for p in ref.parameters()]).norm()
        assert g > 0.05                                            # the clip acts
        with torch.no_grad():
            for p in ref.parameters():
                p -= 0.7 * p.grad * (0.05 / (g + 1e-6))
    np.testing.assert_allclose(res.loss, losses, rtol=1e-6)
    for (n, p), q in zip(res.model.named_parameters(), ref.parameters()):
        np.testing.assert_allclose(_np(p), _np(q), rtol=1e-5, atol=1e-6, err_msg=n)
    assert res.config == dict(layers=1, heads=2, lr=0.7, steps=2, seed=3, batch=4, bptt=5, clip=0.05, dropout=0.0,
                              d=8, d_hidden=6, positional="sinusoidal", dtype="float32", optimizer="sgd", vocab_size=V,
                              train_ids=lm.ids_digest(ids), probe=None)


def test_train_lm_windows_wrap_around_the_text():
    """With 3 windows of text, step 3 reads window 0 again: its loss after the updates is what the
    model at step 3 gives on window 0."""
    ids, V = _text(64), 13
    kw = dict(d=8, d_hidden=6, dropout=0.0, batch=4, bptt=4, seed=0, lr=0.1)
    res = lm.train_lm(ids, V, steps=4, **kw)
    data = ids.view(4, -1).t()                                     # 16 rows: (16 - 1) // 4 = 3 windows
    at3 = lm.train_lm(ids, V, steps=3, **kw).model.eval()
    logits, _ = at3(data[0:4].t())
    want = torch.nn.functional.cross_entropy(logits.reshape(-1, V), data[1:5].t().reshape(-1)).item()
    assert res.loss[3] == pytest.approx(want, rel=1e-6)


def test_train_lm_snapshots_are_the_probe_maps_after_that_many_updates():
    ids, V = _text(), 13
    probe = ids[:7]
    kw = dict(d=8, d_hidden=6, dropout=0.3, batch=4, bptt=5, seed=1, lr=0.5)
    res = lm.train_lm(ids, V, steps=3, probe=probe, snapshot_steps=[0, 2, 3], layers=2, **kw)
    assert sorted(res.snapshots) == [0, 2, 3] and len(res.snapshots[2]) == 2
    for s in (2, 3):
        m = lm.train_lm(ids, V, steps=s, layers=2, **kw).model.eval()
        _, maps = m(probe[None])
        for a, b in zip(res.snapshots[s], maps):
            np.testing.assert_allclose(_np(a), _np(b[0]), rtol=1e-5, atol=1e-7)
    assert res.snapshots[0][0].shape == (1, 7, 7)
    assert res.model.training                                      # handed back in training mode


def test_train_lm_checks_its_arguments():
    ids = _text()
    with pytest.raises(ValueError, match=r"snapshot steps \[1\] need a probe"):
        lm.train_lm(ids, 13, steps=2, snapshot_steps=[1], d=4, d_hidden=4)
    with pytest.raises(ValueError, match=r"snapshot step 3 out of range \[0, 2\]"):
        lm.train_lm(ids, 13, steps=2, snapshot_steps=[3], probe=ids[:3], d=4, d_hidden=4)
    with pytest.raises(ValueError, match=r"token id 13 out of range \[0, 13\)"):
        lm.train_lm(torch.cat([ids, torch.tensor([13])]), 13, steps=1, d=4, d_hidden=4)
    with pytest.raises(ValueError, match=r"token id -1 out of range"):
        lm.train_lm(torch.cat([ids, torch.tensor([-1])]), 13, steps=1, d=4, d_hidden=4)
    with pytest.raises(ValueError, match=r"probe must be a non-empty \(T,\) sequence of token ids in \[0, 13\)"):
        lm.train_lm(ids, 13, steps=1, snapshot_steps=[0], probe=torch.tensor([13]), d=4, d_hidden=4)
    with pytest.raises(ValueError, match=r"training text too short for bptt=35: 20 rows"):
        lm.train_lm(ids, 13, steps=1, batch=20, d=4, d_hidden=4)
    with pytest.raises(ValueError, match=r"train_ids must be a 1-D tensor of token ids, got torch.float32"):
        lm.train_lm(ids.float(), 13, steps=1, d=4, d_hidden=4)
    with pytest.raises(ValueError, match=r"vocab_size must be an integer >= 2, got 1"):
        lm.train_lm(ids * 0, 1, steps=1, d=4, d_hidden=4)
    with pytest.raises(ValueError, match=r"clip \(the gradient-norm bound\) must be a positive number, got 0"):
        lm.train_lm(ids, 13, steps=1, clip=0, d=4, d_hidden=4)


# ---------------------------------------------------------------------------------------
# train_lms: R runs as one program
# ---------------------------------------------------------------------------------------

def test_train_lms_runs_are_train_lm_runs():
    ids, V = _text(), 13
    kw = dict(d=8, heads=2, d_hidden=6, dropout=0.25, batch=4, bptt=5, steps=3, probe=ids[:6],
              snapshot_steps=[1, 3], layers=2, dtype=torch.float64)
    runs = lm.train_lms(ids, V, [0.5, 2.0, 0.5], [1, 1, 4], **kw)
    for res, (lr, seed) in zip(runs, [(0.5, 1), (2.0, 1), (0.5, 4)]):
        one = lm.train_lm(ids, V, lr=lr, seed=seed, **kw)
        np.testing.assert_allclose(res.loss, one.loss, rtol=1e-10)
        for s in (1, 3):
            for a, b in zip(res.snapshots[s], one.snapshots[s]):
                np.testing.assert_allclose(_np(a), _np(b), rtol=1e-9, atol=1e-12)
        for p, q in zip(res.model.parameters(), one.model.parameters()):
            np.testing.assert_allclose(_np(p), _np(q), rtol=1e-9, atol=1e-12)
        assert res.config == dict(layers=2, heads=2, lr=lr, steps=3, seed=seed, batch=4, bptt=5, clip=0.5,
                                  dropout=0.25, d=8, d_hidden=6, positional="sinusoidal", dtype="float64",
                                  optimizer="sgd", vocab_size=V, train_ids=lm.ids_digest(ids),
                                  probe=lm.ids_digest(ids[:6]))


def test_train_lms_pairs_rates_and_seeds():
    assert lm._runs([1.0, 2.0], 7) == ([1.0, 2.0], [7, 7])
    assert lm._runs(3.0, [1, 2]) == ([3.0, 3.0], [1, 2])
    assert lm._runs(np.array([1.0]), np.array([5])) == ([1.0], [5])
    for bad, match in [(([1.0, 2.0], [1, 2, 3]), r"2 learning rates for 3 seeds"),
                       (([], [1]), r"no learning rates given"), (([1.0], []), r"no seeds given"),
                       (([1.0], [1.5]), r"seeds must be integers, got 1\.5"),
                       (([1.0], [True]), r"seeds must be integers, got True"),
                       (([1.0, 1.0], [2, 2]), r"run \(lr=1, seed=2\) is listed twice"),
                       (([0.0], [1]), r"lr must be a positive number, got 0")]:
        with pytest.raises(ValueError, match=match):
            lm._runs(*bad)


def test_stacked_dropout_draws_each_runs_generator():
    ids, V = _text(), 13
    torch.manual_seed(0)
    models = [EmbeddingTransformer(V, d=4, d_hidden=4) for _ in range(2)]
    net = lm._Stacked(models, 0.5)
    x = torch.ones(2, 3, 4)
    gens = [torch.Generator().manual_seed(s) for s in (1, 2)]
    got = net._drop(x, gens)
    for r, s in enumerate((1, 2)):
        mask = torch.empty(3, 4).bernoulli_(0.5, generator=torch.Generator().manual_seed(s))
        assert torch.equal(got[r], mask / 0.5)
    assert net._drop(x, None) is x
    assert lm._Stacked(models, 0.0)._drop(x, gens) is x
