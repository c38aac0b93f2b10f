"""Every series a figure's PNG plots is in the figure's CSV: for every figure of
``python -m scansnap reproduce``, each plotted line (and error-bar cap, and attention map) is
rebuilt from the CSV files the command wrote beside it, and the two sets must match one for one.

The figures are drawn small (2 training steps, 2 seeds, Fig. 10 at 2 rates x 2 seeds) by the
command line's own functions; ``Figure.savefig`` is watched to get each PNG's figure object.
"""
from pathlib import Path

import matplotlib.figure as mfig
import numpy as np
import pytest

import scansnap.__main__ as cli
from scansnap import experiments as ex
from scansnap.data import syn_small, syn_medium

RTOL, ATOL = 2e-5, 1e-9          # the CSVs keep 6-10 significant digits


@pytest.fixture
def drawn(monkeypatch, tmp_path):
    """Run ``reproduce_<fig>`` into tmp_path; returns (figures by PNG name, CSV tables by stem)."""
    figs = {}
    orig = mfig.Figure.savefig

    def watch(self, path, *a, **k):
        figs[Path(path).name] = self
        return orig(self, path, *a, **k)
    monkeypatch.setattr(mfig.Figure, "savefig", watch)
    monkeypatch.setitem(ex.FIG10, "lrs", (1.0, 5.0))
    monkeypatch.setitem(ex.FIG10, "seeds", (1, 2))

    def run(fig, **kw):
        kw = dict(dict(device="cpu", steps=2, seeds=(1, 2), cache={}, data="shipped"), **kw)
        files = getattr(cli, f"reproduce_{fig}")(tmp_path, **kw)
        return figs, {f[:-4]: ex.load_csv(tmp_path / f) for f in files if f.endswith(".csv")}
    return run


def plotted(fig):
    """Every data series of a figure: [(x, y)] of its lines in data coordinates (error-bar caps
    included), [x] of its vertical reference lines, [array] of its images."""
    lines, vlines, images = [], [], []
    for ax in fig.axes:
        for ln in ax.get_lines():
            x, y = np.asarray(ln.get_xdata(), float), np.asarray(ln.get_ydata(), float)
            if ln.get_transform() == ax.transData:
                lines.append((x, y))
            elif np.ptp(x) == 0 and tuple(y) == (0, 1):
                vlines.append(float(x[0]))
        images += [np.asarray(im.get_array()) for im in ax.get_images()]
    return lines, vlines, images


def same_series(got, want):
    """Each plotted series equals one expected series, one for one."""
    assert len(got) == len(want), f"{len(got)} series plotted, {len(want)} in the CSV"
    left = list(want)
    for x, y in got:
        for i, (wx, wy) in enumerate(left):
            if len(wx) == len(x) and np.allclose(x, wx, rtol=RTOL, atol=ATOL) and \
                    np.allclose(y, wy, rtol=RTOL, atol=ATOL):
                del left[i]
                break
        else:
            raise AssertionError(f"a plotted series is not in the CSV: x={x[:4]}..., y={y[:4]}...")


def errorbar_series(x, mean, err):
    return [(x, mean), (x, mean - err), (x, mean + err)]


def test_fig3_and_fig9_every_curve_and_t0(drawn):
    figs, t = drawn("fig3")
    f3 = t["fig3"]
    want = [(f3["t"][f3["eta_y"] == e], f3["growth_bound"][f3["eta_y"] == e]) for e in np.unique(f3["eta_y"])]
    lines, vlines, _ = plotted(figs["fig3.png"])
    same_series(lines, want)
    np.testing.assert_allclose(sorted(vlines), sorted(np.unique(f3["t0"])), rtol=1e-9)
    figs, t = drawn("fig9")
    f9 = t["fig9"]
    keys = sorted({(m, ez, ey) for m, ez, ey in zip(f9["M"], f9["eta_z"], f9["eta_y"])})
    sel = [(f9["M"] == m) & (f9["eta_z"] == ez) & (f9["eta_y"] == ey) for m, ez, ey in keys]
    lines, vlines, _ = plotted(figs["fig9.png"])
    same_series(lines, [(f9["t"][s], f9["B_n"][s]) for s in sel])
    np.testing.assert_allclose(sorted(vlines), sorted(f9["t0"][s][0] for s in sel), rtol=1e-9)


def test_fig4_attention_per_step_and_the_loss(drawn):
    figs, t = drawn("fig4")
    classes = syn_small()
    order = np.concatenate([np.intersect1d(classes.support(0), classes.common_tokens), classes.distinct_tokens(0)])
    for name in ("fig4", "fig4_right"):
        cn, loss = t[f"{name}_cn"], t[name]
        want = [(np.arange(len(loss["step"])), loss["loss"])]
        for s in np.unique(cn["step"]):
            rows = (cn["step"] == s) & (cn["class"] == 0)
            c = dict(zip(cn["token"][rows], cn["c"][rows]))
            want.append((np.arange(len(order)), np.array([c[l] for l in order])))
        lines, _, _ = plotted(figs[f"{name}.png"])
        same_series(lines, want)
        assert set(np.unique(cn["class"])) == {0, 1} and cn["token"].dtype.kind == "i"   # every class is saved


def test_fig5_final_attention(drawn):
    figs, t = drawn("fig5")
    f5 = t["fig5"]
    classes = syn_small()
    order = np.concatenate([np.intersect1d(classes.support(0), classes.common_tokens), classes.distinct_tokens(0)])
    want = []
    for e in np.unique(f5["eta"]):
        c = dict(zip(f5["token"][f5["eta"] == e], f5["c"][f5["eta"] == e]))
        want.append((np.arange(len(order)), np.array([c[l] for l in order])))
    same_series(plotted(figs["fig5.png"])[0], want)


def test_fig6_11_12_sweep_figures(drawn):
    figs, t = drawn("fig6")
    f6 = t["fig6"]
    want = []
    for nl in np.unique(f6["num_last"]):
        for ez in np.unique(f6["eta_z"]):
            xs = np.unique(f6["ratio"])
            v = [f6["entropy"][(f6["num_last"] == nl) & (f6["eta_z"] == ez) & (f6["ratio"] == r)] for r in xs]
            want += errorbar_series(xs, np.array([a.mean() for a in v]),
                                    np.array([a.std(ddof=1) / np.sqrt(a.size) for a in v]))
    same_series(plotted(figs["fig6.png"])[0], want)
    cache = {}
    for name, by in (("fig11", "ratio"), ("fig12", "eta_z")):
        figs, t = drawn(name, cache=cache)
        r = t[name]
        fixed = (r["eta_z"] == 1) if by == "ratio" else (r["ratio"] == 1)
        key = r["ratio"] if by == "ratio" else r["eta_z"]
        want = [(r["threshold"][s], r["recall"][s]) for nl in np.unique(r["num_last"]) for v in np.unique(key[fixed])
                for s in [fixed & (r["num_last"] == nl) & (key == v)]]
        same_series(plotted(figs[f"{name}.png"])[0], want)


def test_fig7_every_attention_map(drawn):
    figs, t = drawn("fig7")
    maps = ex.fig7_maps(t["fig7"])
    _, _, images = plotted(figs["fig7.png"])
    want = [maps[L][s] for L in sorted(maps) for s in sorted(maps[L])]
    assert len(images) == len(want) == 2 * 3
    for got, w in zip(images, want):
        np.testing.assert_allclose(got, w, rtol=1e-5, atol=1e-6)


def test_fig8_both_curves(drawn):
    figs, t = drawn("fig8")
    f8 = t["fig8"]
    want = []
    for M, ey in sorted({(m, e) for m, e in zip(f8["M"], f8["eta_y"])}):
        s = (f8["M"] == M) & (f8["eta_y"] == ey)
        want += [(f8["step"][s], f8["h_star"][s]), (f8["step"][s], f8["h"][s])]
    same_series(plotted(figs["fig8.png"])[0], want)


def test_fig10_means_and_spreads(drawn):
    figs, t = drawn("fig10")
    f10 = t["fig10"]
    xs = np.unique(f10["lr"])
    v = [f10["entropy"][f10["lr"] == x] for x in xs]
    same_series(plotted(figs["fig10.png"])[0],
                errorbar_series(xs, np.array([a.mean() for a in v]), np.array([a.std() for a in v])))


def test_freeze_entropy_and_change(drawn):
    figs, t = drawn("freeze", steps=4)
    fz = t["freeze"]
    same_series(plotted(figs["freeze.png"])[0],
                [(fz["iteration"], fz["entropy"]), (fz["iteration"][1:], fz["change"][1:])])


def test_every_figure_is_covered():
    """A new figure of the command line needs its check here."""
    covered = {"fig3", "fig4", "fig5", "fig6", "fig7", "fig8", "fig9", "fig10", "fig11", "fig12", "freeze"}
    assert set(cli.FIGURES + cli.EXTRAS) == covered
