"""scansnap.beyond, second part (issue 28's mutation testing): what test_mutants_beyond.py left
open after the evening's mutmut run. Defaults pinned by what the functions do with them (not by
``inspect.signature``: under mutmut a trampoline carries the original signature), the linear bias
in float64 to the last bit, the out-of-range token the error names, the length of the noisy
prefix, exact error messages. Each test runs in well under a second."""
import numpy as np
import pytest
import torch

from scansnap import beyond, syn_small
from scansnap.beyond import ExtendedYZ, fit, fit_group, sample
from scansnap.data import make_classes, sample_tokens


def test_default_seed_is_zero():
    M = 6
    want = torch.randn(1, M, M, generator=torch.Generator().manual_seed(0))
    assert torch.equal(ExtendedYZ(M, init_std=1.0).Z.detach(), want)


def test_out_of_range_token_named_even_with_a_zero_before_it():
    m = ExtendedYZ(5)
    with pytest.raises(ValueError, match=r"^token id 7 out of range \[0, 5\)$"):
        m(torch.tensor([[0, 7, 1]]))
    with pytest.raises(ValueError, match=r"^token id -2 out of range \[0, 5\)$"):
        m(torch.tensor([[0, 3, -2]]))


def test_linear_bias_in_float64_to_rounding():
    """(t - T)/T computed in the logits' dtype: float64 models get float64 offsets (a float32
    offset, from an integer arange, is off by ~1e-8 relative, times the slope)."""
    M, T = 5, 8
    T1 = T - 1
    m = ExtendedYZ(M, pos="linear").double()
    with torch.no_grad():
        m.slope.fill_(1000.0)                       # large slope: float32 offsets show at 1e-5
    toks = torch.tensor([[0, 1, 2, 3, 4, 0, 1, 2]])
    b = m.attention(toks)[0, 0].detach().numpy()
    z = 1000.0 * (np.arange(T1, dtype=np.float64) - T1) / T1
    e = np.exp(z - z.max())
    np.testing.assert_allclose(b, e / e.sum(), rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("noise_prefix,T,k", [(0.5, 9, 4), (0.3, 11, 3), (0.9, 12, 9)])
def test_noisy_prefix_length_is_a_fraction_of_the_context(noise_prefix, T, k):
    cl = syn_small()
    got = sample(cl, 6, T, torch.Generator().manual_seed(2), noise_prefix)
    g2 = torch.Generator().manual_seed(2)
    want = sample_tokens(cl, 6, T, generator=g2)
    common = torch.as_tensor(cl.common_tokens)
    prefix = common[torch.randint(len(common), (6, k), generator=g2)]
    assert torch.equal(got.tokens[:, :k], prefix)
    assert torch.equal(got.tokens[:, k:], want.tokens[:, k:])


def test_sample_messages_exact():
    lonely = make_classes(2, num_common=0)
    with pytest.raises(ValueError, match=r"^noise_prefix needs common tokens \(tokens shared by several classes\)$"):
        sample(lonely, 2, 11, torch.Generator().manual_seed(0), noise_prefix=0.5)


def test_fit_passes_its_defaults_to_fit_group(monkeypatch):
    seen = {}

    def fake(classes, variants, **kw):
        seen.update(kw, variants=variants)
        return ["result"]
    monkeypatch.setattr(beyond, "fit_group", fake)
    assert fit(syn_small()) == "result"
    assert seen == dict(steps=100, batch=128, T=128, seed=0, snapshot_steps=(), noise_prefix=0.0,
                        variants=[dict(heads=1, pos=None, residual=False, init_std=0.0, optimizer="sgd",
                                       eta_y=1.0, eta_z=1.0)])


def test_fit_group_defaults_by_what_it_does(monkeypatch):
    """100 steps of batches of 128 sequences of length 128, noise_prefix 0, seed 0 (the model's
    Z) and 1 (the batches): the sampler is replaced by one that records its arguments and
    returns a tiny batch, the model's forward is a cheap stand-in (and one torch thread: two
    spin on a busy machine), so the 100 steps take a fraction of a second."""
    cl = make_classes(2, num_common=2, num_distinct=2)              # M = 10
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        _fit_group_defaults(cl, monkeypatch)
    finally:
        torch.set_num_threads(threads)


def _fit_group_defaults(cl, monkeypatch):
    calls = []
    tiny = sample_tokens(cl, 2, 3, generator=torch.Generator().manual_seed(0))

    def fake(classes, batch, T, generator, noise_prefix=0.0):
        calls.append((batch, T, generator.initial_seed(), noise_prefix))
        return tiny
    seeds = []

    class Recorded(ExtendedYZ):
        def __init__(self, *a, **kw):
            seeds.append(kw["seed"])
            super().__init__(*a, **kw)

        def forward(self, tokens):                                 # a cheap step: only the count matters here
            return self.Y[0].expand(len(tokens), -1), None, None
    monkeypatch.setattr(beyond, "sample", fake)
    monkeypatch.setattr(beyond, "ExtendedYZ", Recorded)
    (res,) = fit_group(cl, [dict(init_std=1.0)])
    assert len(calls) == 100 and set(calls) == {(128, 128, 1, 0.0)}
    assert len(res.losses) == 100
    assert seeds == [0]
    assert res.snapshots == {} and res.positions == {}


def test_fit_group_messages_and_residual():
    cl = syn_small()
    with pytest.raises(ValueError, match=r"^fit_group needs at least one variant$"):
        fit_group(cl, [], steps=1)
    with pytest.raises(ValueError, match=r"^eta_z must be a positive number, got 0$"):
        fit_group(cl, [dict(eta_z=0)], steps=1)
    a, b = fit_group(cl, [dict(residual=True), dict()], steps=0, T=4)
    assert a.model.residual is True and b.model.residual is False
