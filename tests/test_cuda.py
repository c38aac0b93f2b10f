"""On a GPU: the same arithmetic as on the CPU, and the book's device rule.

Skipped where torch sees no CUDA device (CI, the project's own machines): nothing in the
test suite needs a GPU. Run on a lent GPU machine with the rest of `pytest tests` (the
record of that run is in bench/RESULTS.md, "On a GPU").

What can be compared across devices and what cannot: the Y/Z trainers draw their batches with
a generator on the training device, and CUDA's random streams are not the CPU's, so a whole
run on CUDA is a different (equally valid) sample of the same experiment. The tests therefore
compare (1) the arithmetic on the same batches (Lemma 1's gradients, dense and support path),
(2) each trainer on CUDA against itself (batched against one at a time, run twice), and (3)
whole sweeps across devices in distribution only, with a stated tolerance.
"""
import numpy as np
import pytest
import torch

from scansnap import YZModel, counts_from_tokens, sample_tokens, syn_medium, syn_small, train
from scansnap.data import sample_support, support_table
from scansnap.model import SupportYZ

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
CUDA = torch.device("cuda")


def _batch(c, S=2, B=24, T=30):
    table = support_table(c)
    sb = sample_support(c, B, T, [torch.Generator().manual_seed(s) for s in range(S)], table, dtype=torch.float64)
    tokens = torch.stack([sample_tokens(c, B, T, torch.Generator().manual_seed(s)).tokens for s in range(S)])
    return table, sb, tokens


@pytest.mark.parametrize("c", [syn_small(), syn_medium(3), syn_medium(10)], ids=repr)
@pytest.mark.parametrize("normalize", [True, False])
def test_lemma1_gradients_on_cuda_equal_the_cpus(c, normalize):
    """Same weights and batches: loss, dJ/dY, dJ/dZ of Lemma 1 (dense, Eq. 17-19) and of the
    support path on CUDA == on the CPU, float64, to 1e-12 (only the order of summation differs)."""
    R = 5
    group = torch.tensor([0, 1, 0, 1, 1])
    table, sb, tokens = _batch(c)
    out = {}
    for dev in (torch.device("cpu"), CUDA):
        m = YZModel(c.M, R, init="default", seeds=[1, 2, 3, 4, 5], normalize=normalize, dtype=torch.float64,
                    device=dev)
        with torch.no_grad():
            m.Y.mul_(5)
            m.Z.mul_(5)
        logc = counts_from_tokens(tokens, c.M, torch.float64).log()[group].to(dev)
        loss = m.lemma1_grads(logc, tokens[group][..., -1].to(dev),
                              torch.as_tensor(c.next_token.copy())[sb.classes[group]].to(dev))
        out[dev.type] = (loss.cpu(), m.Y.grad.cpu(), m.Z.grad.cpu())
        assert m.Y.grad.device.type == dev.type
        m2 = YZModel(c.M, R, init="default", seeds=[1, 2, 3, 4, 5], normalize=normalize, dtype=torch.float64,
                     device=dev)
        with torch.no_grad():
            m2.Y.mul_(5)
            m2.Z.mul_(5)
        t = support_table(c, device=dev)
        sup = SupportYZ(m2, c, t)
        sloss = sup.grads(sb.counts.to(dev), sb.classes.to(dev), group.to(dev))
        out[dev.type + "-support"] = sloss.cpu()
    for a, b in zip(out["cuda"], out["cpu"]):
        torch.testing.assert_close(a, b, atol=1e-12, rtol=0)
    torch.testing.assert_close(out["cuda-support"], out["cpu-support"], atol=1e-12, rtol=0)
    torch.testing.assert_close(out["cuda-support"], out["cpu"][0], atol=1e-12, rtol=0)


@pytest.mark.parametrize("path", ["counts", "support"])
def test_cuda_training_is_repeatable_and_learns(path):
    """A CUDA run, made twice: the same history (to 1e-12 in float64; CUDA gives no promise of
    bit-for-bit sums), losses that fall, and the device recorded."""
    kw = dict(eta_y=[0.5, 2, 5, 1], eta_z=[0.5, 1, 1, 3], seeds=[1, 2, 1, 3], steps=60, batch=32, T=64,
              init="default", snapshot_steps=[0, 30], dtype=torch.float64, path=path, device="cuda")
    a, b = train(syn_medium(3), **kw), train(syn_medium(3), **kw)
    assert a.config["device"].startswith("cuda") and a.config["path"] == path
    np.testing.assert_allclose(a.loss, b.loss, atol=1e-12, rtol=0)
    torch.testing.assert_close(a.Z, b.Z, atol=1e-12, rtol=0)
    torch.testing.assert_close(a.snapshots[30], b.snapshots[30], atol=1e-12, rtol=0)
    assert a.Z.device.type == "cpu"                             # results come back to the CPU
    assert np.all(a.loss[:, -10:].mean(1) < a.loss[:, :10].mean(1) - 0.3)
    first = train(syn_medium(3), **dict(kw, device="cpu")).loss[:, 0]
    np.testing.assert_allclose(a.loss[:, 0], first, atol=0.5)   # same init, another first batch


def test_cuda_run_does_not_depend_on_its_batch_mates():
    """The batching rule holds on CUDA: a run inside a grid == the same run alone (float64)."""
    c = syn_medium(3)
    grid = train(c, eta_y=[0.5, 2, 1], eta_z=[1, 1, 2], seeds=[4, 5, 6], steps=20, init="default",
                 dtype=torch.float64, device="cuda")
    alone = train(c, eta_y=2, eta_z=1, seeds=5, steps=20, init="default", dtype=torch.float64, device="cuda")
    np.testing.assert_allclose(grid.loss[1], alone.loss[0], rtol=0, atol=1e-12)
    torch.testing.assert_close(grid.Z[1], alone.Z[0], rtol=0, atol=1e-12)


def test_fig6_sweep_on_cuda_agrees_with_the_cpu_in_distribution():
    """A slice of the Fig. 6 sweep (num_last 5, eta_Z 1, Y/Z ratio 5, 32 seeds, the paper's 100
    steps) on each device: different random batches, the same experiment. The mean
    distinct-token entropy agrees within 4 standard errors of the difference; a wrong gradient
    or a broken sampler on CUDA moves it by far more (0.2-1 nats)."""
    from scansnap.experiments import fig6, syn_medium_sweep
    kw = dict(num_last=(5,), eta_z=(1.0,), ratio=(5.0,), seeds=tuple(range(1, 33)))
    ent = {d: fig6(sweep=syn_medium_sweep(device=d, **kw), **kw)["entropy"] for d in ("cpu", "cuda")}
    a, b = np.asarray(ent["cpu"], float), np.asarray(ent["cuda"], float)
    assert np.all(np.isfinite(a)) and np.all(np.isfinite(b))
    se = np.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)
    assert abs(a.mean() - b.mean()) < 4 * se + 1e-3, (a.mean(), b.mean(), se)


def test_batched_lm_equals_one_at_a_time_on_cuda():
    """train_lms (the Fig. 10 runs as one program, the default on CUDA) == train_lm run by run
    on CUDA: losses, weights, snapshots (float64 at 1e-10, float32 at 1e-4). Before the
    package's own Dropout, CUDA's fused dropout drew other masks and this failed by 0.05-0.12."""
    from scansnap.experiments import wikitext_data
    from test_lm import check_batched_equals_one_at_a_time
    data = wikitext_data("shipped")
    for dtype, tol in ((torch.float64, 1e-10), (torch.float32, 1e-4)):
        check_batched_equals_one_at_a_time(data, dtype, tol, device="cuda")


def test_the_books_rule_with_a_gpu_present():
    """With CUDA present: after the book's setup(), device=None trains on the CPU (the numbers
    nbval compares); inside interactive_device() it trains on the GPU; the rule comes back after."""
    import scansnap.book as book
    from scansnap._validate import get_default_device, resolve_device, set_default_device
    before = get_default_device()
    try:
        book.setup(threads=torch.get_num_threads())
        assert resolve_device(None) == torch.device("cpu")
        assert train(syn_small(), steps=2).config["device"] == "cpu"
        with book.interactive_device() as dev:
            assert dev.type == "cuda"
            assert train(syn_small(), steps=2).config["device"].startswith("cuda")
        assert resolve_device(None) == torch.device("cpu")
    finally:
        set_default_device(before)
