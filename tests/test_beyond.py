"""scansnap.beyond: the extended model reduces to the paper's, and rejects bad input."""
import numpy as np
import pytest
import torch

from scansnap import YZModel, syn_small, sample_tokens
from scansnap.beyond import ExtendedYZ, fit, sample


def _tokens(seed=0, B=16, T=20):
    return sample_tokens(syn_small(), B, T, generator=torch.Generator().manual_seed(seed)).tokens


def test_one_head_no_extras_is_the_yz_model():
    M = syn_small().M
    g = torch.Generator().manual_seed(1)
    Y, Z = torch.randn(M, M, generator=g, dtype=torch.float64), torch.randn(M, M, generator=g, dtype=torch.float64)
    ext = ExtendedYZ(M).double()
    ref = YZModel(M, dtype=torch.float64)
    with torch.no_grad():
        ext.Y.copy_(Y); ext.Z[0].copy_(Z); ref.Y[0].copy_(Y); ref.Z[0].copy_(Z)
    toks = _tokens()
    logits, c, _ = ext(toks)
    out = ref.forward_tokens(toks)
    torch.testing.assert_close(logits, out.logits[0], rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(c[:, 0], out.c[0], rtol=1e-12, atol=1e-12)


def test_heads_are_independent_and_positional_bias_starts_at_zero():
    m = ExtendedYZ(syn_small().M, heads=3, pos="linear", init_std=0.1, seed=0)
    assert not torch.allclose(m.Z[0], m.Z[1])
    assert torch.all(m.slope == 0)
    b = m.attention(_tokens())
    assert b.shape == (16, 3, 19)
    torch.testing.assert_close(b.sum(-1), torch.ones(16, 3))


def test_noise_prefix_hides_the_class_in_the_prefix():
    cl = syn_small()
    b = sample(cl, 64, 41, torch.Generator().manual_seed(0), noise_prefix=0.5)
    assert set(b.tokens[:, :20].unique().tolist()) <= set(cl.common_tokens.tolist())


def test_fit_is_deterministic():
    a = fit(syn_small(), steps=5, seed=3)
    b = fit(syn_small(), steps=5, seed=3)
    np.testing.assert_array_equal(a.losses, b.losses)


@pytest.mark.parametrize("kw, msg", [
    (dict(pos="alibi"), "unknown positional encoding"),
    (dict(heads=0), "heads"),
    (dict(init_std=-1.0), "init_std"),
])
def test_bad_model_arguments(kw, msg):
    with pytest.raises(ValueError, match=msg):
        ExtendedYZ(10, **kw)


def test_bad_tokens_and_fit_arguments():
    m = ExtendedYZ(5)
    with pytest.raises(ValueError, match="token id 7 out of range"):
        m(torch.tensor([[1, 7, 2]]))
    with pytest.raises(ValueError, match="eta_z"):
        fit(syn_small(), eta_z=-1.0, steps=1)
    with pytest.raises(ValueError, match="optimizer"):
        fit(syn_small(), optimizer="rmsprop", steps=1)
    with pytest.raises(ValueError, match="noise_prefix"):
        fit(syn_small(), noise_prefix=1.0, steps=1)


def test_fit_group_gives_the_numbers_of_separate_fits():
    """One batch per step shared by the variants: the same numbers as one fit() per variant."""
    from scansnap.beyond import fit_group
    cl = syn_small()
    variants = [dict(), dict(pos="linear"), dict(pos="sinusoidal", residual=True),
                dict(heads=2, init_std=0.1), dict(optimizer="adam", eta_y=0.1, eta_z=0.1)]
    kw = dict(steps=6, batch=16, T=24, seed=5, snapshot_steps=[0, 6], noise_prefix=0.5)
    group = fit_group(cl, variants, **kw)
    assert len(group) == len(variants)
    for v, g in zip(variants, group):
        one = fit(cl, **v, **kw)
        np.testing.assert_array_equal(g.losses, one.losses)
        for step in (0, 6):
            np.testing.assert_array_equal(g.snapshots[step], one.snapshots[step])
            np.testing.assert_array_equal(g.positions[step], one.positions[step])
        for (n, p), (_, q) in zip(g.model.named_parameters(), one.model.named_parameters()):
            assert torch.equal(p, q), n


@pytest.mark.parametrize("variants, msg", [
    ([], "at least one variant"),
    ([dict(lr=1.0)], "unknown variant option"),
    (["linear"], "must be a dict"),
    ([dict(optimizer="rmsprop")], "unknown optimizer"),
    ([dict(eta_z=0.0)], "eta_z"),
])
def test_fit_group_rejects_bad_variants(variants, msg):
    from scansnap.beyond import fit_group
    with pytest.raises(ValueError, match=msg):
        fit_group(syn_small(), variants, steps=1)
