"""The live panels' JavaScript engine against the package, run in Node (float64 both sides).

Parity: given the same count batches (drawn by scansnap.sample_counts and exported as JSON),
the engine's losses, Lemma 1 gradients and SGD / Adam updates equal YZModel.lemma1_grads +
train.BatchedOptimizer to 1e-9; its T -> infinity dynamics equal theory.population_steps; its
gamma, h, omega_1, t_0 equal theory's; its presets equal data.make_classes; its "default" init
equals init_yz in float64. Its own sampler: class and token frequencies inside binomial bands.
And whole runs agree with the Python trainer in distribution (seed-to-seed spread).
Also: scansnap.live.panel's argument checks and the determinism of its HTML.
"""
from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

from scansnap import live, syn_medium, syn_small
from scansnap import theory as th
from scansnap.data import make_classes, sample_counts
from scansnap.metrics import distinct_entropy
from scansnap.model import YZModel, init_yz
from scansnap.train import BatchedOptimizer, train

ROOT = Path(__file__).resolve().parents[1]
CLI = ROOT / "tests" / "js" / "yzlive_cli.js"
NODE = shutil.which("node") or "/usr/bin/node"
TOL = 1e-9


@pytest.fixture(autouse=True)
def one_torch_thread():
    """The torch side of these tests is small: one thread (two spin against each other when
    the machine is shared, up to ten times slower)."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def node(request: dict, tmp_path, engine: Path | None = None) -> dict:
    if not Path(NODE).exists():
        pytest.fail("Node.js is needed to test the live panels' engine (Debian: apt-get install nodejs)")
    req = tmp_path / "request.json"
    req.write_text(json.dumps(request))
    args = [NODE, str(CLI), str(req)] + ([str(engine)] if engine else [])
    proc = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def spec_of(num_last, num_next_per_last, **kw):
    return dict(numLast=num_last, numNextPerLast=num_next_per_last, **kw)


def export_batches(classes, steps, batch, T, seed):
    """Count batches drawn by the package, as the engine's CSR dicts and as torch tensors."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(steps):
        cb = sample_counts(classes, batch, T, g, dtype=torch.float64)
        c = cb.counts.numpy()
        tok, cnt, off = [], [], [0]
        for row in c:
            nz = np.flatnonzero(row)
            tok += nz.tolist()
            cnt += row[nz].tolist()
            off.append(len(tok))
        out.append((dict(query=cb.query.tolist(), label=cb.labels.tolist(), off=off, tok=tok, cnt=cnt), cb))
    return out


def python_run(classes, batches, eta_y, eta_z, optimizer, momentum, init, seed, record):
    """The package's path: YZModel.lemma1_grads + BatchedOptimizer, float64, one run."""
    M = classes.M
    model = YZModel(M, 1, init=init, seeds=[seed], dtype=torch.float64)
    Y0, Z0 = model.Y.detach()[0].numpy().copy(), model.Z.detach()[0].numpy().copy()
    opt = BatchedOptimizer([(model.Y, torch.tensor([eta_y], dtype=torch.float64)),
                            (model.Z, torch.tensor([eta_z], dtype=torch.float64))], optimizer, momentum)
    losses, rec, buf = [], {}, {}
    for s, (_, cb) in enumerate(batches):
        with torch.no_grad():
            logc = cb.counts.log()[None]
        loss = model.lemma1_grads(logc, cb.query[None], cb.labels[None], buf)
        losses.append(float(loss[0]))
        r = dict(gY=model.Y.grad[0].clone().numpy(), gZ=model.Z.grad[0].clone().numpy()) if s in record else None
        opt.step()
        if r is not None:
            r.update(Y=model.Y.detach()[0].numpy().copy(), Z=model.Z.detach()[0].numpy().copy())
            rec[s] = r
    return np.array(losses), rec, Y0, Z0


CASES = [  # (name, classes, eta_y, eta_z, optimizer, momentum, init, batch, T, steps)
    ("syn_small sgd 0.9 zero", syn_small(), 1.0, 1.0, "sgd", 0.9, "zero", 128, 128, 30),
    ("syn_small sgd 0 default", syn_small(), 0.7, 3.0, "sgd", 0.0, "default", 64, 40, 25),
    ("syn_small adam zero", syn_small(), 0.05, 0.02, "adam", 0.9, "zero", 128, 128, 30),
    ("syn_medium(3) sgd default", syn_medium(3), 2.0, 1.0, "sgd", 0.9, "default", 96, 128, 20),
    ("syn_medium(10) adam default", syn_medium(10), 0.01, 0.03, "adam", 0.9, "default", 128, 128, 12),
    ("syn_medium(10) sgd T=16", syn_medium(10), 5.0, 0.5, "sgd", 0.5, "zero", 50, 16, 12),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_gradients_and_updates_match_the_package(case, tmp_path):
    name, classes, ey, ez, optim, mom, init, B, T, steps = case
    batches = export_batches(classes, steps, B, T, seed=11)
    record = [0, 1, steps // 2, steps - 1]
    loss_py, rec_py, Y0, Z0 = python_run(classes, batches, ey, ez, optim, mom, init, 5, record)
    out = node(dict(mode="train_batches", M=classes.M, Y0=Y0.ravel().tolist(), Z0=Z0.ravel().tolist(),
                    optimizer=optim, momentum=mom, etaY=ey, etaZ=ez, batches=[b for b, _ in batches],
                    record=record), tmp_path)
    np.testing.assert_allclose(out["loss"], loss_py, rtol=0, atol=TOL)
    for s in record:
        r = out["rec"][str(s)]
        for k in ("gY", "gZ", "Y", "Z"):
            js = np.array(r[k]).reshape(classes.M, classes.M)
            err = np.abs(js - rec_py[s][k]).max()
            assert err <= TOL, f"{name}: {k} after step {s} differs by {err:.2e}"
    # the run did learn: not a trivial match of two frozen models
    assert loss_py[-1] < loss_py[0] - 0.1


def test_default_init_is_torch_float64_init(tmp_path):
    for M, seed in ((34, 0), (79, 12345), (240, 2**32 - 1)):
        Y, Z = init_yz(M, 1, "default", [seed], dtype=torch.float64)
        out = node(dict(mode="init", M=M, init="default", seed=seed), tmp_path)
        assert np.array_equal(np.array(out["Y"]).reshape(M, M), Y[0].numpy()), (M, seed)
        assert np.array_equal(np.array(out["Z"]).reshape(M, M), Z[0].numpy()), (M, seed)


@pytest.mark.parametrize("args", [(2, 1, {}), (1, 2, {}), (10, 2, {}), (3, 2, dict(numDistinct=25)),
                                  (2, 3, dict(numCommon=0, numDistinct=4)),
                                  (1, 1, dict(numCommon=3, commonWeight=4.8, distinctMin=1.0, numDistinct=7))])
def test_presets_match_make_classes(args, tmp_path):
    nl, nn, kw = args
    py = make_classes(nl, nn, num_common=kw.get("numCommon", 10), num_distinct=kw.get("numDistinct", 10),
                      common_weight=kw.get("commonWeight", 1.0), distinct_min=kw.get("distinctMin", 0.1))
    out = node(dict(mode="classes", data=spec_of(nl, nn, **kw)), tmp_path)
    assert (out["K"], out["M"]) == (py.K, py.M)
    np.testing.assert_allclose(np.array(out["probs"]).reshape(py.K, py.M), py.probs, rtol=1e-15, atol=0)
    assert out["query"] == py.query.tolist() and out["next"] == py.next_token.tolist()
    for n in range(py.K):
        common = np.intersect1d(py.support(n), py.common_tokens)
        dist = py.distinct_tokens(n)
        dist = dist[np.argsort(py.probs[n, dist], kind="stable")]
        assert out["order"][n] == np.concatenate([common, dist]).tolist()
        assert out["nCommon"][n] == len(common)


@pytest.mark.parametrize("classes, init", [(syn_small(), "default"), (syn_medium(3), "default"),
                                           (syn_medium(10), "default")])
def test_expected_gradients_match_theory(classes, init, tmp_path):
    M = classes.M
    g = torch.Generator().manual_seed(3)
    Y = torch.randn(M, M, generator=g, dtype=torch.float64).numpy()
    Z = 2 * torch.randn(M, M, generator=g, dtype=torch.float64).numpy()
    spec = spec_of(len(np.unique(classes.query)), classes.K // len(np.unique(classes.query)))
    out = node(dict(mode="expected", data=spec, Y=Y.ravel().tolist(), Z=Z.ravel().tolist()), tmp_path)
    dY, dZ = th.expected_gradients(classes, Y, Z)
    assert np.abs(np.array(out["dY"]).reshape(M, M) - dY).max() < 1e-12
    assert np.abs(np.array(out["dZ"]).reshape(M, M) - dZ).max() < 1e-12
    assert np.abs(dZ).max() > 1e-3 and np.abs(dY).max() > 1e-3       # not two zero matrices


@pytest.mark.parametrize("classes, spec, optim, mom, ey, ez, steps", [
    (syn_small(), spec_of(2, 1), "sgd", 0.9, 1.0, 1.0, 100),
    (syn_small(), spec_of(2, 1), "adam", 0.9, 0.1, 0.3, 60),
    (syn_medium(3), spec_of(3, 2), "sgd", 0.0, 3.0, 1.0, 60),
    (syn_medium(10), spec_of(10, 2), "sgd", 0.9, 2.0, 1.0, 30),
])
def test_long_sequence_dynamics_match_population_steps(classes, spec, optim, mom, ey, ez, steps, tmp_path):
    Y0, Z0 = (t[0].numpy() for t in init_yz(classes.M, 1, "default", [4], dtype=torch.float64))
    loss_py, Y, Z = th.population_steps(classes, ey, ez, steps, optim, mom, Y0=Y0, Z0=Z0)
    out = node(dict(mode="population", data=spec, etaY=ey, etaZ=ez, steps=steps, optimizer=optim,
                    momentum=mom, Y0=Y0.ravel().tolist(), Z0=Z0.ravel().tolist()), tmp_path)
    M = classes.M
    np.testing.assert_allclose(out["loss"], loss_py, rtol=0, atol=TOL)
    assert np.abs(np.array(out["Y"]).reshape(M, M) - Y).max() < TOL
    assert np.abs(np.array(out["Z"]).reshape(M, M) - Z).max() < TOL
    assert loss_py[-1] < 0.5 * loss_py[0]


def test_population_steps_is_the_trainer_at_the_limit():
    """theory.population_steps (the reference above) against train() with long sequences, big batches."""
    c = syn_small()
    loss_pop, _, Z_pop = th.population_steps(c, 0.5, 0.5, 20, "sgd", 0.9)
    res = train(c, eta_y=0.5, eta_z=0.5, seeds=[0, 1], steps=20, batch=512, T=1024, dtype=torch.float64,
                device="cpu")
    m = c.query[0]
    assert loss_pop[-1] < 0.5 * loss_pop[0]
    for r in range(2):
        assert np.abs(res.loss[r] - loss_pop).max() < 0.05 * loss_pop[0]
        assert np.abs(res.Z[r].numpy()[m] - Z_pop[m]).max() < 0.15 * np.abs(Z_pop[m]).max()


def test_entropy_and_cn_match_metrics(tmp_path):
    c = syn_medium(3)
    Z = 3 * torch.randn(c.M, c.M, generator=torch.Generator().manual_seed(1), dtype=torch.float64).numpy()
    out = node(dict(mode="entropy", data=spec_of(3, 2), Z=Z.ravel().tolist(), cls=1), tmp_path)
    assert abs(out["entropy"] - distinct_entropy(c, Z)) < 1e-12
    order = np.concatenate([np.intersect1d(c.support(1), c.common_tokens), c.distinct_tokens(1)])
    np.testing.assert_allclose(out["cn"], th.attention_limit_all(c, Z)[1, order], rtol=0, atol=1e-14)


def test_theory_matches_the_package(tmp_path):
    """h (Eq. 45), gamma (Eq. 85), omega_1 (Eq. 51), t_0, momentum's clock. The engine solves Eq. 45 by Newton to
    full precision (checked against 50-digit mpmath); the package's Wright-omega form loses digits
    to cancellation at large t (2e-9 relative at t = 1e5, 3e-8 at 1e8), so it is compared tightly
    up to t = 100 and loosely beyond."""
    import mpmath as mp

    mp.mp.dps = 50
    ts = np.array([0, 1, 2, 3, 7.5, 10, 33, 100, 1e3, 1e5, 1e8])
    small = ts <= 100
    for M, K, eta in ((34, 2, 10.0), (240, 20, 1.0), (1000, 10, 0.5), (4, 1, 100.0)):
        out = node(dict(mode="theory", M=M, K=K, etaY=eta, ts=ts.tolist()), tmp_path)
        h_js = np.array(out["h"])
        exact = [float(mp.findroot(lambda u: mp.e ** u + (M - 1) * u - (mp.mpf(M) * eta * t + 1),
                                   mp.log(M * eta * t + 1))) / M for t in ts]
        np.testing.assert_allclose(h_js, exact, rtol=1e-14, atol=1e-300)
        np.testing.assert_allclose(h_js[small], th.h_closed(ts[small], M, eta), rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(h_js, th.h_closed(ts, M, eta), rtol=1e-7, atol=1e-15)
        for key, discrete in (("gamma", True), ("gammaCont", False)):
            g_py = th.gamma(ts, M, K, eta, discrete=discrete)
            np.testing.assert_allclose(np.array(out[key])[small], g_py[small], rtol=1e-10, atol=1e-15)
            np.testing.assert_allclose(out[key], g_py, rtol=1e-6, atol=1e-15)
        assert abs(out["omega1"] - th.omega1(M)) < 1e-9
        assert abs(out["t0"] - th.transition_time(M, K, eta)) < 1e-9 * th.transition_time(M, K, eta)
    for beta in (0.0, 0.5, 0.9):      # momentum's clock, where the panels mark t_0 and draw gamma
        out = node(dict(mode="theory", M=34, K=2, etaY=1.0, ts=ts.tolist(), beta=beta), tmp_path)
        np.testing.assert_allclose(out["tau"], th.momentum_clock(ts, beta), rtol=1e-12)
        np.testing.assert_allclose(out["clockSteps"], th.momentum_clock_steps(ts, beta), rtol=1e-12)


def _z(count, n, p):
    return (count - n * p) / math.sqrt(n * p * (1 - p)) if 0 < p < 1 else (0.0 if count == n * p else math.inf)


@pytest.mark.parametrize("data, classes, B, T", [(spec_of(2, 1), syn_small(), 128, 128),
                                                 (spec_of(3, 2), syn_medium(3), 64, 9),
                                                 (spec_of(10, 2, numDistinct=3), make_classes(10, 2, num_distinct=3), 100, 2)])
def test_sampler_frequencies_in_binomial_bands(data, classes, B, T, tmp_path):
    """Classes uniform, tokens i.i.d. from P(.|n): every frequency within 5 sigma of its binomial mean."""
    from scipy.stats import chi2

    nb = 400
    out = node(dict(mode="sampler", data=data, seed=7, B=B, T=T, batches=nb), tmp_path)
    assert out["bad"] == 0, "a sequence with the wrong length, query or label"
    N, K = nb * B, classes.K
    cls = np.array(out["cls"])
    assert cls.sum() == N
    zs = [_z(c, N, 1 / K) for c in cls]
    stat, dof = sum(z ** 2 * (1 - 1 / K) for z in zs), K - 1
    for n in range(K):
        tok = np.array(out["tok"][n])
        n_tok = cls[n] * (T - 1)
        assert tok.sum() == n_tok
        assert np.all(tok[classes.probs[n] == 0] == 0), f"class {n} drew a token outside its support"
        for l in classes.support(n):
            zs.append(_z(tok[l], n_tok, classes.probs[n, l]))
        sup = classes.support(n)
        if n_tok:
            e = n_tok * classes.probs[n, sup]
            stat += float(((tok[sup] - e) ** 2 / e).sum())
            dof += len(sup) - 1
    worst = max(abs(z) for z in zs)
    assert worst < 5, f"a frequency {worst:.1f} sigma from its binomial mean"
    assert stat < chi2.isf(1e-6, dof), (stat, dof)     # and all of them together (Pearson)


def test_whole_runs_agree_with_the_trainer_in_distribution(tmp_path):
    """Syn-Small, the paper's settings: the engine's loss and entropy over 8 seeds against the
    Python trainer's over 8 seeds (different random streams; the same distribution)."""
    seeds = list(range(8))
    res = train(syn_small(), eta_y=1.0, eta_z=1.0, seeds=seeds, steps=100, dtype=torch.float64, device="cpu")
    job = dict(data=spec_of(2, 1), etaY=1.0, etaZ=1.0, steps=100, batch=128, T=128, optimizer="sgd",
               momentum=0.9, init="zero", reference=False)
    js = node(dict(mode="run", job=job, seeds=seeds), tmp_path)
    loss_js = np.array([r["loss"] for r in js])
    assert abs(loss_js[0, 0] - math.log(34)) < 1e-12          # uniform prediction at step 0
    for s in (1, 2, 3, 4, 10):
        a, b = loss_js[:, s], res.loss[:, s]
        se = math.sqrt(a.var(ddof=1) / len(a) + b.var(ddof=1) / len(b))
        assert abs(a.mean() - b.mean()) < 5 * se + 0.01, (s, a.mean(), b.mean(), se)
    ent_py = distinct_entropy(syn_small(), res.Z)
    ent_js = np.array([r["entropy"][-1] for r in js])
    se = math.sqrt(ent_js.var(ddof=1) / 8 + ent_py.var(ddof=1) / 8)
    assert abs(ent_js.mean() - ent_py.mean()) < 5 * se + 0.01, (ent_js.mean(), ent_py.mean())


def test_engine_rejects_bad_jobs(tmp_path):
    base = dict(data=spec_of(2, 1), etaY=1.0, etaZ=1.0, steps=10, batch=8, T=8)
    bad = [dict(base, etaY=-1), dict(base, etaZ=0), dict(base, steps=0), dict(base, T=1), dict(base, batch=1.5),
           dict(base, optimizer="rmsprop"), dict(base, init="xavier"), dict(base, cls=5), dict(base, momentum=1.0),
           dict(base, data=spec_of(0, 1))]
    out = node(dict(mode="errors", jobs=bad), tmp_path)
    words = ["eta_y", "eta_z", "steps", "T (sequence length)", "batch size", "rmsprop", "xavier", "class",
             "momentum", "numLast"]
    for msg, word in zip(out, words):
        assert msg is not None and word in msg, (word, msg)


def test_diverged_run_says_so(tmp_path):
    # LN and max-shifted softmaxes keep even huge rates finite: only an overflow diverges
    job = dict(data=spec_of(2, 1), etaY=1e300, etaZ=1e300, steps=50, batch=16, T=16, optimizer="sgd", momentum=0.9)
    (r,) = node(dict(mode="run", job=job, seeds=[0]), tmp_path)
    assert r["diverged"] is not None and r["diverged"] < 50


# ---------------------------------------------------------------------------------------
# scansnap.live.panel: the Python helper
# ---------------------------------------------------------------------------------------

def test_panel_html_is_deterministic_and_self_contained():
    from matplotlib.figure import Figure

    def fig():
        f = Figure(figsize=(3, 2))
        f.subplots().plot([0, 1], [1, 0])
        return f

    a = live.panel(["scan", "loss"], controls=["eta_y", "eta_z", "seed"], static=fig()).html()
    b = live.panel(["scan", "loss"], controls=["eta_y", "eta_z", "seed"], static=fig()).html()
    assert a == b
    assert "http://" not in a and "https://" not in a and "src=\"" not in a.replace('src="data:image/png', "")
    assert a.count("<script") == 2 and a.count("</script>") == 2
    assert "data:image/png;base64," in a
    cfg = json.loads(a.split('class="yzlive-config">')[1].split("</script>")[0].replace("<\\/", "</"))
    assert cfg["views"] == ["scan", "loss"] and cfg["values"]["eta_y"] == 1.0
    assert repr(live.panel("cn")).startswith("LivePanel(views=('cn',)")


@pytest.mark.parametrize("kwargs, message", [
    (dict(views=["heat"]), "unknown view 'heat'"),
    (dict(views=[]), "at least one view"),
    (dict(views=["cn", "cn"]), "listed twice"),
    (dict(controls=["lr"]), "unknown control 'lr'"),
    (dict(eta_y=0), "eta_y must be a positive number"),
    (dict(eta_z=-1.0), "eta_z must be a positive number"),
    (dict(eta_y=float("nan")), "eta_y must be a positive number"),
    (dict(steps=0), "steps must be an integer >= 1"),
    (dict(steps=100000), "steps=100000 is outside"),
    (dict(steps=5000, controls=["steps"], ranges={"steps": (10, 4000)}), "outside its slider's range"),
    (dict(T=1), "T (sequence length) must be an integer >= 2"),
    (dict(T=2.5), "T (sequence length) must be an integer"),
    (dict(batch=0), "batch size must be an integer >= 1"),
    (dict(optimizer="rmsprop"), "unknown optimizer 'rmsprop'"),
    (dict(init="xavier"), "unknown init 'xavier'"),
    (dict(momentum=1.0), "momentum must be in [0, 1)"),
    (dict(data="syn_large"), "unknown data 'syn_large'"),
    (dict(cls=2), "cls=2 out of range"),
    (dict(ranges={"eta_y": (1, 0.1)}), "low < high"),
    (dict(ranges={"eta_y": (1e-5, 1)}), "exceeds what a panel allows"),
    (dict(ranges={"optimizer": (0, 1)}), "has no range"),
    (dict(static=b"GIF89a"), "not a PNG image"),
    (dict(static=3), "static must be a matplotlib Figure"),
    (dict(num_last=11, controls=["num_last"]), "num_last=11 is outside"),
])
def test_panel_rejects_bad_arguments(kwargs, message):
    with pytest.raises(ValueError) as e:
        live.panel(**kwargs)
    assert message in str(e.value), str(e.value)


def test_panel_views_and_controls_are_the_engines():
    js = (ROOT / "scansnap" / "js" / "panel.js").read_text()
    for v in live.VIEWS:
        assert f"VIEWS.{v} = {{" in js, v
    for c in live.CONTROLS:
        assert f"\n    {c}: {{" in js, c


def test_inlined_engine_is_the_tested_engine(tmp_path):
    """The page carries the engine with comments stripped: the same parity on that text."""
    compact = tmp_path / "yzlive_compact.js"
    compact.write_text(live._compact((ROOT / "scansnap" / "js" / "yzlive.js").read_text()))
    classes = syn_medium(3)
    batches = export_batches(classes, 5, 32, 64, seed=2)
    loss_py, rec_py, Y0, Z0 = python_run(classes, batches, 1.0, 2.0, "adam", 0.9, "default", 1, [4])
    out = node(dict(mode="train_batches", M=classes.M, Y0=Y0.ravel().tolist(), Z0=Z0.ravel().tolist(),
                    optimizer="adam", momentum=0.9, etaY=1.0, etaZ=2.0, batches=[b for b, _ in batches],
                    record=[4]), tmp_path, engine=compact)
    np.testing.assert_allclose(out["loss"], loss_py, rtol=0, atol=TOL)
    assert np.abs(np.array(out["rec"]["4"]["Z"]).reshape(classes.M, -1) - rec_py[4]["Z"]).max() < TOL


def test_docstring_examples_run():
    """Every live.panel(...) example of the module docstring is a valid call (one per view)."""
    import textwrap

    doc = live.__doc__
    calls = re.findall(r"^( *live\.panel\(.*?\))\n\n", doc, flags=re.S | re.M)
    assert len(calls) == 12, len(calls)          # the opening one, one per view, one per page of the book
    shown = set()
    for call in calls:
        p = eval(textwrap.dedent(call).replace("static=fig", "static=None"), {"live": live})
        shown.update(json.loads(p.config)["views"])
    assert shown == set(live.VIEWS), shown


def test_nbval_sanitizers_cover_the_engine_not_the_settings():
    """tests/sanitize.cfg hides the inlined engine, style and PNG bytes from nbval's comparison,
    and leaves the panel's settings (its JSON) and sentence to be compared."""
    import configparser

    cp = configparser.ConfigParser()
    cp.read(ROOT / "tests" / "sanitize.cfg")
    png = (b"\x89PNG\r\n\x1a\n" + bytes(range(256))) * 4
    html = live.panel(["scan"], eta_y=0.7, static=png).html()
    for sec in cp.sections():
        html = re.sub(cp[sec]["regex"], cp[sec]["replace"], html)
    assert "function" not in html and "--yz-fg" not in html and "base64,PNG" in html
    assert '"eta_y":0.7' in html and "re-trains the model" in html
    assert len(html) < 2000
