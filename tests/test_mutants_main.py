"""The command line's figures, number for number against the reference path (issue 28).

Each ``reproduce_figN`` of ``scansnap.__main__`` is called in this process into a temporary
folder, and its CSV read back and compared with what the package's reference functions
(``scansnap.theory``, ``scansnap.experiments``) give for the same settings, with the CSV's own
rounding as the tolerance. The plotting functions are replaced by recorders: what each figure
is drawn from is checked here, how it is drawn in tests/test_layout.py and the plots' tests.
Fast (tiny step counts), in-process: mutation testing (``make mutants``) runs it."""
import csv
import math

import numpy as np
import pytest

from scansnap import __main__ as cli
from scansnap import experiments as ex
from scansnap import plots
from scansnap import theory as th
from scansnap.data import syn_small


@pytest.fixture(autouse=True)
def _bars_on(monkeypatch):
    """The command's bars forced on: these tests check ``progress=True`` is passed on (without
    the variable the command draws bars only when stderr is a terminal, and pytest's is not)."""
    monkeypatch.setenv("SCANSNAP_PROGRESS", "1")


class _Drawn:
    def __init__(self, log, name, args, kwargs):
        self.log, self.name, self.args, self.kwargs = log, name, args, kwargs

    def savefig(self, path, dpi=None):
        self.log.append((self.name, self.args, self.kwargs, path.name, dpi))
        path.write_bytes(b"png of " + self.name.encode())


@pytest.fixture
def drawn(monkeypatch):
    """The plot calls of a figure: [(plot function, args, kwargs, file name, dpi)]."""
    log = []
    for name in ("growth_factor", "cn_over_training", "cn_final", "entropy_sweep", "recall_curves",
                 "attention_maps", "freezing", "entropy_vs_lr", "h_vs_hstar", "B_fixed_ratio"):
        monkeypatch.setattr(plots, name, lambda *a, _n=name, **k: _Drawn(log, _n, a, k))
    return log


def _read(path):
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    return rows[0], rows[1:]


def _col(rows, i):
    return np.array([float(r[i]) for r in rows])


def _B(t, M, K, ey, ez, C0=1.0):
    """Theorem 4's B_n(t) = (1/4) ln(1 + 4 Gamma / C0), Gamma = eta_Z K (M-1)^2 h(t/K)^2 / (2 eta_Y)."""
    h = th.h_closed(np.asarray(t) / K, M, ey)
    return 0.25 * np.log1p(4 * ez * K * (M - 1) ** 2 * h ** 2 / (2 * ey) / C0)


def test_fig3_is_eq12s_bound_of_theorem_4(tmp_path, drawn):
    assert cli.reproduce_fig3(tmp_path) == ["fig3.csv", "fig3.png"]
    head, rows = _read(tmp_path / "fig3.csv")
    assert head == ["eta_y", "t", "growth_bound", "t0"] and len(rows) == 4 * 200
    t = np.geomspace(1, 1e5, 200)
    for k, ey in enumerate((0.5, 1, 2, 5)):
        part = rows[200 * k:200 * (k + 1)]
        assert {r[0] for r in part} == {f"{ey:g}"}
        np.testing.assert_allclose(_col(part, 1), t, rtol=5e-6)
        assert [r[1] for r in part] == [f"{x:.6g}" for x in t]
        np.testing.assert_allclose(_col(part, 2), np.exp(2 * _B(t, 1000, 10, ey, 0.5)), rtol=1e-9)
        np.testing.assert_allclose(_col(part, 3), th.transition_time(1000, 10, ey), rtol=1e-9)   # Eq. 11's t0
    (name, args, kw, fname, dpi), = drawn
    assert (name, args, fname, dpi) == ("growth_factor", (1000, 10, 0.5, (0.5, 1, 2, 5)), "fig3.png", 120)
    np.testing.assert_array_equal(kw.pop("t"), t)
    assert not kw


def test_fig8_is_h_star_beside_h(tmp_path, drawn):
    assert cli.reproduce_fig8(tmp_path) == ["fig8.csv", "fig8.png"]
    head, rows = _read(tmp_path / "fig8.csv")
    assert head == ["M", "eta_y", "step", "h_star", "h"]
    want = [(50, e) for e in (0.1, 0.2, 0.5, 1, 2)] + [(1000, e) for e in (0.2, 0.5, 1, 2, 4)]
    assert len(rows) == len(want) * 101
    for k, (M, ey) in enumerate(want):
        part = rows[101 * k:101 * (k + 1)]
        assert {(r[0], r[1]) for r in part} == {(str(M), f"{ey:g}")}
        assert [int(r[2]) for r in part] == list(range(101))
        hs = [0.0]
        for _ in range(100):                                   # Eq. 33, written out
            hs.append(hs[-1] + ey / ((M - 1) + math.exp(M * hs[-1])))
        np.testing.assert_allclose(_col(part, 3), hs, rtol=1e-9, atol=1e-300)
        np.testing.assert_allclose(_col(part, 4), th.h_closed(np.arange(101), M, ey), rtol=1e-9)
    assert drawn[0][0] == "h_vs_hstar" and drawn[0][3:] == ("fig8.png", 120)
    assert drawn[0][1][0] == [(50, 100, (0.1, 0.2, 0.5, 1, 2)), (1000, 100, (0.2, 0.5, 1, 2, 4))]


def test_fig9_is_B_n_at_fixed_ratios(tmp_path, drawn):
    assert cli.reproduce_fig9(tmp_path) == ["fig9.csv", "fig9.png"]
    head, rows = _read(tmp_path / "fig9.csv")
    assert head == ["M", "eta_z", "eta_y", "t", "B_n", "t0"]
    panels = [(100, [(0.5, 5), (1, 10), (2, 20), (4, 40), (8, 80)]),
              (10000, [(0.5, 0.5), (1, 1), (2, 2), (4, 4), (8, 8)])]
    t = np.geomspace(1, 1e6, 200)
    k = 0
    for M, pairs in panels:
        for ez, ey in pairs:
            part = rows[200 * k:200 * (k + 1)]
            k += 1
            assert {(r[0], r[1], r[2]) for r in part} == {(str(M), f"{ez:g}", f"{ey:g}")}
            np.testing.assert_allclose(_col(part, 3), t, rtol=5e-6)
            np.testing.assert_allclose(_col(part, 4), _B(t, M, 10, ey, ez), rtol=1e-9, atol=1e-12)
            np.testing.assert_allclose(_col(part, 5), th.transition_time(M, 10, ey), rtol=1e-9)
    assert len(rows) == 200 * k
    (name, args, kw, fname, dpi), = drawn
    assert (name, args, fname, dpi) == ("B_fixed_ratio", (panels,), "fig9.png", 120)
    np.testing.assert_array_equal(kw.pop("t"), t)
    assert not kw


def test_fig4_is_the_syn_small_losses(tmp_path, drawn):
    assert cli.reproduce_fig4(tmp_path, device="cpu", steps=5) == ["fig4.csv", "fig4_cn.csv", "fig4.png",
                                                                    "fig4_right.csv", "fig4_right_cn.csv",
                                                                    "fig4_right.png"]
    for name, ey in (("fig4", 1.0), ("fig4_right", 10.0)):
        head, rows = _read(tmp_path / f"{name}.csv")
        assert head == ["step", "loss"] and [int(r[0]) for r in rows] == list(range(5))
        ref = ex.fig4(eta_y=ey, device="cpu", steps=5, snapshot_steps=[0, 5])[1]
        np.testing.assert_allclose(_col(rows, 1), ref.loss[0], rtol=1e-9)
        head, rows = _read(tmp_path / f"{name}_cn.csv")     # c_n per snapshot, class and support token
        assert head == ["step", "class", "token", "c"]
        for s in (0, 5):
            for n in range(syn_small().K):
                sup = syn_small().support(n)
                part = [r for r in rows if int(r[0]) == s and int(r[1]) == n]
                assert [int(r[2]) for r in part] == sup.tolist()
                np.testing.assert_allclose(_col(part, 3), ref.attention(s)[0][n][sup], rtol=1e-9)
    assert [d[0] for d in drawn] == ["cn_over_training"] * 2 and [d[3] for d in drawn] == ["fig4.png", "fig4_right.png"]
    classes, snaps = drawn[1][1]
    assert classes.M == syn_small().M and sorted(snaps) == [0, 5]          # the snapshots up to --steps
    ref = ex.fig4(eta_y=10.0, device="cpu", steps=5, snapshot_steps=[0, 5])[1]
    np.testing.assert_array_equal(snaps[5], ref.snapshots[5][0].numpy())
    assert drawn[1][2]["n"] == 0
    np.testing.assert_array_equal(drawn[1][2]["loss"], ref.loss[0])
    cli.reproduce_fig4(tmp_path, device="cpu", steps=None)                 # the paper's 100 steps
    assert len(_read(tmp_path / "fig4.csv")[1]) == 100 and sorted(drawn[2][1][1]) == list(ex.FIG4_SNAPSHOTS)


def test_fig5_is_the_limit_of_adams_runs(tmp_path, drawn):
    assert cli.reproduce_fig5(tmp_path, device="cpu", steps=3) == ["fig5.csv", "fig5.png"]
    head, rows = _read(tmp_path / "fig5.csv")
    classes, res = ex.fig5(device="cpu", steps=3)
    sup = classes.support(0)
    assert head == ["eta", "token", "c"] and len(rows) == 3 * len(sup)
    for r, eta in enumerate((0.1, 0.5, 1.0)):
        part = rows[len(sup) * r:len(sup) * (r + 1)]
        assert {p[0] for p in part} == {f"{eta:g}"} and [int(p[1]) for p in part] == sup.tolist()
        np.testing.assert_allclose(_col(part, 2), th.attention_limit_all(classes, res.Z[r].numpy())[0][sup],
                                   rtol=1e-9)
    (name, args, kw, fname, dpi), = drawn
    assert name == "cn_final" and fname == "fig5.png" and kw == {"title": "Syn-Small, Adam, after 3 steps"}
    assert list(args[1]) == [r"Adam, $\eta$=0.1", r"Adam, $\eta$=0.5", r"Adam, $\eta$=1"]


def test_figs_6_11_12_share_one_sweep_and_are_its_numbers(tmp_path, drawn):
    cache = {}
    kw = dict(device="cpu", steps=2, seeds=(3,), cache=cache)
    assert cli.reproduce_fig6(tmp_path, **kw) == ["fig6.csv", "fig6.png"]
    sweep = cache["sweep"]
    assert cli.reproduce_fig11(tmp_path, **kw) == ["fig11.csv", "fig11.png"]
    assert cli.reproduce_fig12(tmp_path, **kw) == ["fig12.csv", "fig12.png"]
    assert cache["sweep"] is sweep                                          # trained once
    ref = ex.fig6(seeds=(3,), steps=2, device="cpu")
    head, rows = _read(tmp_path / "fig6.csv")
    assert head == ["num_last", "eta_z", "ratio", "seed", "entropy"] and len(rows) == 64
    for i, k in enumerate(head):
        np.testing.assert_allclose(_col(rows, i), ref[k], rtol=1e-9)
    rec = ex.fig11_12(sweep)
    for name in ("fig11", "fig12"):
        head, rows = _read(tmp_path / f"{name}.csv")
        assert head == ["num_last", "eta_z", "ratio", "threshold", "recall"] and len(rows) == 4 * 16 * 17
        for i, k in enumerate(head):
            np.testing.assert_allclose(_col(rows, i), rec[k], rtol=1e-5, atol=1e-12)
    by = {d[3]: d[2].get("by") for d in drawn}
    assert by == {"fig6.png": None, "fig11.png": "ratio", "fig12.png": "eta_z"}
    np.testing.assert_array_equal(drawn[0][1][3], ref["entropy"])
    np.testing.assert_array_equal(drawn[1][1][4], rec["recall"])


def test_the_sweep_takes_the_paper_steps_and_the_given_seeds(monkeypatch):
    got = {}
    monkeypatch.setattr(ex, "syn_medium_sweep", lambda **kw: got.update(kw) or "sweep")
    assert cli._sweep({}, "cpu", None, (1, 2)) == "sweep"
    assert got == dict(seeds=(1, 2), device="cpu", progress=True, steps=100, num_last=ex.FIG6["num_last"],
                       eta_z=ex.FIG6["eta_z"], ratio=ex.FIG6["ratio"])
    cache = {"sweep": "kept"}
    assert cli._sweep(cache, "cpu", 3, (1,)) == "kept"


@pytest.fixture(scope="module")
def fig7_ref():
    results, probe, vocab = ex.fig7(steps=2, device="cpu")
    return results


def test_fig7_is_the_lowest_layers_attention(tmp_path, drawn, fig7_ref):
    assert cli.reproduce_fig7(tmp_path, device="cpu", steps=2) == ["fig7.csv", "fig7.png"]
    head, rows = _read(tmp_path / "fig7.csv")
    assert head == ["layers", "iteration", "query", "key", "attention"]
    T = ex.FIG7["window"]
    assert len(rows) == 2 * 3 * T * (T + 1) // 2                   # layers x snapshots 0, 1, 2 x lower triangle
    maps = ex.fig7_maps({k: _col(rows, i) for i, k in enumerate(head)})
    for L in (1, 3):
        for s in (0, 1, 2):
            np.testing.assert_allclose(maps[L][s], fig7_ref[L].snapshots[s][0][0].numpy(), rtol=1e-5, atol=1e-7)
    (name, args, kw, fname, dpi), = drawn
    assert name == "attention_maps" and list(args[0]) == ["1-layer, lowest layer", "3-layer, lowest layer"]
    assert sorted(args[0]["3-layer, lowest layer"]) == [0, 1, 2]


def test_fig10_rows_are_the_runs(tmp_path, drawn, monkeypatch):
    rows_in = [(1.0, 1, 0.5123456, 6.25), (2.5, 4, 1.25, 7.0)]
    seen = {}
    monkeypatch.setattr(ex, "fig10", lambda **kw: seen.update(kw) or rows_in)
    assert cli.reproduce_fig10(tmp_path, device="cpu", steps=None, data="full") == ["fig10.csv", "fig10.png"]
    assert seen == dict(steps=300, device="cpu", progress=True, source="full", lrs=ex.FIG10["lrs"],
                        seeds=ex.FIG10["seeds"])
    head, rows = _read(tmp_path / "fig10.csv")
    assert head == ["lr", "seed", "entropy", "final_loss"] and rows == [["1", "1", "0.512346", "6.25"],
                                                                        ["2.5", "4", "1.25", "7"]]
    assert drawn == [("entropy_vs_lr", ([1.0, 2.5], [0.5123456, 1.25]), {}, "fig10.png", 120)]
    cli.reproduce_fig10(tmp_path, device="cpu", steps=7)
    assert seen["steps"] == 7 and seen["source"] == "shipped"


def test_freeze_rows_are_lm_freezing(tmp_path, drawn, monkeypatch):
    rows_in = [(0, 2.4, float("nan"), float("nan")), (250, 1.5, 35.02241, 6.672809)]
    seen = {}
    monkeypatch.setattr(ex, "lm_freezing", lambda **kw: seen.update(kw) or rows_in)
    assert cli.reproduce_freeze(tmp_path, device="cpu", steps=None) == ["freeze.csv", "freeze.png"]
    assert seen == dict(steps=6000, device="cpu", progress=True, source="shipped")
    head, rows = _read(tmp_path / "freeze.csv")
    assert head == ["iteration", "entropy", "change", "loss"]
    assert rows == [["0", "2.4", "nan", "nan"], ["250", "1.5", "35.0224", "6.67281"]]
    assert drawn[0][0] == "freezing" and drawn[0][1][0] == (0, 250) and drawn[0][3] == "freeze.png"
    got = ex.load_csv(tmp_path / "freeze.csv")                    # and it reads back
    assert np.isnan(got["change"][0]) and got["loss"][1] == pytest.approx(6.67281)


def test_freeze_for_real_at_two_steps(tmp_path, drawn):
    """The real lm_freezing behind it (every = min(250, steps)): rows at 0 and 2."""
    cli.reproduce_freeze(tmp_path, device="cpu", steps=2)
    ref = ex.lm_freezing(steps=2, device="cpu")
    head, rows = _read(tmp_path / "freeze.csv")
    assert [int(r[0]) for r in rows] == [0, 2]
    np.testing.assert_allclose(_col(rows, 1), [r[1] for r in ref], rtol=1e-5)
    assert rows[0][2] == "nan" and float(rows[1][2]) == pytest.approx(ref[1][2], rel=1e-5)


def test_the_figures_data_is_resolved_once_and_named(monkeypatch):
    assert cli._data("full", ["fig3", "fig6"]) == (None, None, [])          # no text read: nothing fetched
    from scansnap import wikitext
    seen = []

    class C:
        source, detail = "shipped", "the shipped text"

    def load(source):
        seen.append(source)
        import warnings
        warnings.warn("fell back")
        return C

    monkeypatch.setattr(wikitext, "load", load)
    assert cli._data("auto", ["fig3", "fig10"]) == ("shipped", {"asked": "auto", "source": "shipped",
                                                                "detail": "the shipped text"}, ["fell back"])
    assert seen == ["auto"]
