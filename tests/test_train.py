"""The batched trainer: determinism, batching, optimisers against torch.optim, init."""
import numpy as np
import pytest
import torch
import torch.nn as nn

from scansnap import YZModel, lr_grid, syn_medium, syn_small, train
from scansnap.train import BatchedOptimizer


def test_same_seed_same_history_bit_for_bit():
    kw = dict(eta_y=[1, 2], eta_z=[1, 0.5], seeds=[3, 4], steps=15, batch=16, T=20,
              init="default", snapshot_steps=[0, 7, 15])
    a, b = train(syn_medium(1), **kw), train(syn_medium(1), **kw)
    assert np.array_equal(a.loss, b.loss)
    assert torch.equal(a.Z, b.Z) and torch.equal(a.Y, b.Y)
    for s in (0, 7, 15):
        assert torch.equal(a.snapshots[s], b.snapshots[s])


def test_a_run_does_not_depend_on_its_batch_mates():
    """Run (eta_y=2, eta_z=1, seed=5) inside a 16-run grid equals the same run alone."""
    c = syn_medium(3)
    ey, ez, sd = lr_grid([0.5, 1], [1, 2], [4, 5, 6, 7])
    grid = train(c, eta_y=ey, eta_z=ez, seeds=sd, steps=20, init="default", dtype=torch.float64)
    r = int(np.flatnonzero((ey == 2) & (ez == 1) & (sd == 5))[0])
    alone = train(c, eta_y=2, eta_z=1, seeds=5, steps=20, init="default", dtype=torch.float64)
    np.testing.assert_allclose(grid.loss[r], alone.loss[0], rtol=0, atol=1e-12)
    torch.testing.assert_close(grid.Z[r], alone.Z[0], rtol=0, atol=1e-12)


def test_same_seed_shares_data_and_init():
    """As in the authors' code, the seed fixes init and data: same seed, same first loss (same
    init, same first batch) whatever the rates; another seed, another first loss."""
    res = train(syn_small(), eta_y=[1, 2, 1], eta_z=[1, 1, 1], seeds=[9, 9, 8], steps=5,
                init="default")
    assert res.loss[0, 0] == res.loss[1, 0] and res.loss[0, 1] != res.loss[1, 1]
    assert res.loss[0, 0] != res.loss[2, 0]
    alone = train(syn_small(), eta_y=2, eta_z=1, seeds=9, steps=5, init="default")
    np.testing.assert_array_equal(alone.loss[0], res.loss[1])


def test_snapshots_are_taken_after_that_many_updates():
    """snapshot s = Z after s updates: equal to the final Z of a run of s steps, and to Z(0) at s = 0."""
    kw = dict(eta_y=[1.0, 3.0], eta_z=[2.0, 0.5], seeds=[1, 2], init="default", batch=8, T=16)
    res = train(syn_medium(1), steps=7, snapshot_steps=[0, 3, 7], **kw)
    assert sorted(res.snapshots) == [0, 3, 7]
    init = YZModel(syn_medium(1).M, 2, init="default", seeds=[1, 2])
    assert torch.equal(res.snapshots[0], init.Z.detach())
    short = train(syn_medium(1), steps=3, **kw)
    assert torch.equal(res.snapshots[3], short.Z)
    np.testing.assert_array_equal(res.loss[:, :3], short.loss)
    assert torch.equal(res.snapshots[7], res.Z)


def test_result_records_its_settings():
    res = train(syn_small(), eta_y=[1, 2], eta_z=0.5, seeds=[4, 5], steps=2, batch=3, T=9,
                optimizer="adam", betas=(0.8, 0.99), momentum=0.5, init="default")
    np.testing.assert_array_equal(res.eta_y, [1, 2]) and np.testing.assert_array_equal(res.eta_z, [0.5, 0.5])
    np.testing.assert_array_equal(res.seed, [4, 5])
    assert res.loss.shape == (2, 2) and res.Y.shape == res.Z.shape == (2, 34, 34)
    assert res.config == dict(steps=2, batch=3, T=9, optimizer="adam", path="counts", momentum=0.5, betas=(0.8, 0.99),
                              init="default", normalize=True, residual=False, grad="lemma1", dtype="float32",
                              device="cpu")
    np.testing.assert_array_equal(res.diverged, [False, False])


def test_adam_betas_reach_the_optimizer():
    """train's betas are Adam's: a run with betas (0.5, 0.9) differs from the default and from torch's
    Adam only by the rates it was given (checked on the first update of Z)."""
    a = train(syn_small(), eta_y=0.1, eta_z=0.1, seeds=2, steps=3, optimizer="adam")
    b = train(syn_small(), eta_y=0.1, eta_z=0.1, seeds=2, steps=3, optimizer="adam", betas=(0.5, 0.9))
    assert not torch.equal(a.Z, b.Z)


@pytest.mark.parametrize("method", ["sgd", "adam"])
def test_batched_optimizer_matches_torch_optim(method):
    g = torch.Generator().manual_seed(0)
    R, M = 3, 6
    lrs = torch.tensor([0.1, 0.5, 2.0], dtype=torch.float64)
    p = torch.randn(R, M, M, generator=g, dtype=torch.float64, requires_grad=True)
    refs = [p[r].detach().clone().requires_grad_(True) for r in range(R)]
    opt = BatchedOptimizer([(p, lrs)], method, momentum=0.9)
    topts = [torch.optim.SGD([q], lr=float(l), momentum=0.9) if method == "sgd"
             else torch.optim.Adam([q], lr=float(l)) for q, l in zip(refs, lrs)]
    for step in range(6):
        grads = torch.randn(R, M, M, generator=g, dtype=torch.float64)
        opt.zero_grad()
        p.grad = grads.clone()
        opt.step()
        for r, (q, o) in enumerate(zip(refs, topts)):
            o.zero_grad()
            q.grad = grads[r].clone()
            o.step()
    for r, q in enumerate(refs):
        torch.testing.assert_close(p[r].detach(), q.detach(), atol=1e-12, rtol=0)


def test_default_init_is_nn_linear():
    """init='default' draws K1 then K2 as nn.Linear(M, M, bias=False) does; Y = K1^T, Z = K2."""
    M, seed = 17, 5
    m = YZModel(M, 1, init="default", seeds=[seed])
    torch.manual_seed(seed)
    k1, k2 = nn.Linear(M, M, bias=False), nn.Linear(M, M, bias=False)
    assert torch.equal(m.Y[0], k1.weight.detach().T)
    assert torch.equal(m.Z[0], k2.weight.detach())


def test_zero_init_fig4_first_loss_is_log_M():
    res = train(syn_small(), steps=2, seeds=2)
    assert res.loss[0, 0] == pytest.approx(np.log(34), abs=1e-6)


def test_training_scans_distinct_tokens():
    """Syn-Small, Fig. 4 settings: the best distinct token gains attention, common tokens lose it."""
    from scansnap.theory import attention_limit_all
    c = syn_small()
    res = train(c, steps=100, seeds=2, snapshot_steps=[0, 100])
    c0 = attention_limit_all(c, res.snapshots[0][0].numpy())
    c1 = attention_limit_all(c, res.snapshots[100][0].numpy())
    for n in range(2):
        top = c.distinct_tokens(n)[-1]            # highest P(l|n)
        assert c1[n, top] > 2 * c0[n, top]
        assert np.all(c1[n, c.common_tokens] < c0[n, c.common_tokens])
    assert res.loss[0, -1] < 1e-3
