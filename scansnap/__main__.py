"""Command line: ``python -m scansnap reproduce figN --out DIR`` for the paper's Figs. 3-12, or ``all`` (see ``--help``)."""
from __future__ import annotations

import argparse
import collections
import csv
import os
import signal
import sys
import threading
import time
from pathlib import Path

import warnings

import numpy as np

from . import provenance
from .experiments import COMMON
from .provenance import CLOSED_FORM, LM_FIGURES, PAPER_SEEDS, SWEEP_FIGURES
from .wikitext import SOURCES, CorruptArchive

FIGURES = ("fig3", "fig4", "fig5", "fig6", "fig7", "fig8", "fig9", "fig10", "fig11", "fig12")
EXTRAS = ("freeze",)   # beyond the paper's figures; not part of 'all'
# Bounds on what a run may ask, checked while parsing: past them a run would not finish in a
# day on a CPU or would not fit in memory (each seed adds 64 Syn-Medium runs, ~80 MB of kept
# weights), and a seed must fit the int64 grid of runs and torch's generators.
MAX_SEEDS = 100
MAX_STEPS = 100_000
SEED_MAX = 2 ** 63 - 1
PROGRESS_ENV = "SCANSNAP_PROGRESS"   # 1: progress bars always, 0: never; unset: only when stderr is a terminal


def _bar() -> bool:
    """Whether the command draws progress bars: ``SCANSNAP_PROGRESS=1`` always, ``=0`` never;
    unset (or anything else), only when stderr is a terminal, so a log or a pipe gets no
    carriage-return frames (tqdm's ``disable=None`` rule)."""
    v = os.environ.get(PROGRESS_ENV, "").strip()
    if v in ("0", "1"):
        return v == "1"
    try:
        return bool(sys.stderr.isatty())
    except (AttributeError, ValueError):              # a closed or replaced stderr
        return False


def _seeds(text: str):
    """'1-10' or '1,2,5' -> a tuple of distinct ints in [0, 2**63 - 1], at most MAX_SEEDS of them
    (a range is counted before it is built; duplicates found in linear time)."""
    try:
        if "-" in text:
            a, b = (int(x) for x in text.split("-"))
            count, vals = b - a + 1, None
        else:
            vals = [int(s) for s in text.split(",")]
            count = len(vals)
    except ValueError:
        raise argparse.ArgumentTypeError(f"seeds must look like '1-10' or '1,2,5', got {text!r}")
    if count <= 0:
        raise argparse.ArgumentTypeError(f"no seeds in {text!r}")
    if count > MAX_SEEDS:
        raise argparse.ArgumentTypeError(f"{count} seeds in {text!r}: at most {MAX_SEEDS} (each adds 64 runs to "
                                         "the Syn-Medium sweep; the paper uses 10)")
    out = tuple(range(a, b + 1)) if vals is None else tuple(vals)
    bad = [x for x in out if not 0 <= x <= SEED_MAX]
    if bad:
        raise argparse.ArgumentTypeError(f"seed {bad[0]} in {text!r} is out of range: a seed is an integer in "
                                         "[0, 2**63 - 1]")
    dup = sorted(x for x, c in collections.Counter(out).items() if c > 1)
    if dup:
        raise argparse.ArgumentTypeError(f"seed {dup[0]} is listed twice in {text!r}: a repeated seed "
                                         "repeats a run and shrinks the error bars")
    return out


def _rates(text: str):
    """'0.5,1,2' -> (0.5, 1.0, 2.0): distinct positive numbers (a grid axis)."""
    try:
        out = tuple(float(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be numbers separated by commas, e.g. '0.5,1,2'; got {text!r}")
    bad = [x for x in out if not (np.isfinite(x) and x > 0)]
    if bad:
        raise argparse.ArgumentTypeError(f"must be positive numbers; got {bad[0]:g} in {text!r}")
    if len(set(out)) < len(out):
        raise argparse.ArgumentTypeError(f"{text!r} lists a value twice: a repeated value repeats runs")
    return out


def _counts(text: str):
    """'1,3,5' -> (1, 3, 5): distinct positive integers (a grid axis)."""
    try:
        out = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be whole numbers separated by commas, e.g. '1,3'; got {text!r}")
    if any(x < 1 for x in out):
        raise argparse.ArgumentTypeError(f"must be integers >= 1; got {min(out)} in {text!r}")
    if any(x > 1000 for x in out):
        raise argparse.ArgumentTypeError(f"{max(out)} query tokens is more than 1000 (a vocabulary of over "
                                         f"23,000 tokens and a grid that does not fit in memory); got {text!r}")
    if len(set(out)) < len(out):
        raise argparse.ArgumentTypeError(f"{text!r} lists a value twice: a repeated value repeats runs")
    return out


def _int_at_least(minimum: int, what: str):
    def parse(text: str):
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} must be an integer >= {minimum}, got {text!r}")
        if v < minimum:
            raise argparse.ArgumentTypeError(f"{what} must be an integer >= {minimum}, got {v}")
        return v
    return parse


# Which figures take which grid flag (the Syn-Medium sweep's axes; batch and T for every Y/Z training)
_SWEEP = ("fig6", "fig11", "fig12")
GRID_FIGURES = {"eta_z": _SWEEP, "ratio": _SWEEP, "num_last": _SWEEP,
                "batch": ("fig4", "fig5") + _SWEEP, "T": ("fig4", "fig5") + _SWEEP}
DISTRIBUTED = ("fig6", "fig7", "fig10", "fig11", "fig12")   # split over torchrun's ranks (scansnap.distributed)
# What a figure's PNG shows when it is not its CSV's rows as they are (its record's "plotted");
# fig11 and fig12 say it per grid (_recall_plan: which held rates they draw)
PLOTTED = {"fig6": "fig6.png: each point is the mean entropy over the seeds of its setting (num_last, eta_z, "
                   "ratio), its bar one standard error of that mean (sample sd / sqrt(seeds)), not the seeds' "
                   "spread; fig6.csv: one row per run, the numbers the means and errors are taken from"}


def _grid_for(fig: str, grid: dict) -> dict:
    """The grid flags that apply to ``fig`` (the others are left out of its settings)."""
    return {k: v for k, v in grid.items() if v is not None and fig in GRID_FIGURES[k]}


def _write_csv(path, header, rows):
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)


def reproduce_fig3(out: Path, **_):
    """Fig. 3: e^{2 B_n(t)} for M=1000, K=10, eta_Z=0.5, eta_Y in {0.5, 1, 2, 5} (closed form)."""
    from .plots import growth_factor
    from .theory import B_n
    from .theory import transition_time
    t = np.geomspace(1, 1e5, 200)
    rows = [(f"{ey:g}", f"{tt:.6g}", f"{np.exp(2 * b):.10g}", f"{transition_time(1000, 10, ey):.10g}")
            for ey in (0.5, 1, 2, 5) for tt, b in zip(t, B_n(t, 1000, 10, ey, 0.5, 1.0))]
    _write_csv(out / "fig3.csv", ["eta_y", "t", "growth_bound", "t0"], rows)
    growth_factor(1000, 10, 0.5, (0.5, 1, 2, 5), t=t).savefig(out / "fig3.png", dpi=120)
    return ["fig3.csv", "fig3.png"]


def reproduce_fig4(out: Path, device: str, steps: int, grid=None, **_):
    """Fig. 4: Syn-Small, left eta_Y = eta_Z = 1 (fig4.*), right eta_Y = 10, eta_Z = 1 (fig4_right.*).
    ``figN.csv``: the loss per step (the lower panel); ``figN_cn.csv``: c_n per snapshot step,
    class and token of its support (the upper panel shows class 0)."""
    from .experiments import FIG4_SNAPSHOTS, fig4
    from .plots import cn_over_training
    steps = steps or COMMON["steps"]
    files = []
    for name, ey in (("fig4", 1.0), ("fig4_right", 10.0)):
        classes, res = fig4(eta_y=ey, device=device, steps=steps,
                            snapshot_steps=[s for s in FIG4_SNAPSHOTS if s <= steps], **(grid or {}))
        _write_csv(out / f"{name}.csv", ["step", "loss"],
                   [(s, f"{l:.10g}") for s, l in enumerate(res.loss[0])])
        _write_csv(out / f"{name}_cn.csv", ["step", "class", "token", "c"],
                   [(s, n, int(l), f"{c:.10g}") for s in sorted(res.snapshots)
                    for n, cn in enumerate(res.attention(s)[0]) for l, c in zip(classes.support(n), cn[classes.support(n)])])
        snaps = {s: z[0].numpy() for s, z in res.snapshots.items()}
        cn_over_training(classes, snaps, n=0, loss=res.loss[0]).savefig(out / f"{name}.png", dpi=120)
        files += [f"{name}.csv", f"{name}_cn.csv", f"{name}.png"]
    return files


def reproduce_fig5(out: Path, device: str, steps: int, grid=None, **_):
    """Fig. 5: Syn-Small with Adam, eta_Y = eta_Z in {0.1, 0.5, 1}: final c_n of class 0."""
    from .experiments import fig5
    from .plots import cn_final
    from .theory import attention_limit_all
    steps = steps or COMMON["steps"]
    classes, res = fig5(device=device, steps=steps, **(grid or {}))
    rows = []
    for r, eta in enumerate(res.eta_y):
        c = attention_limit_all(classes, res.Z[r].numpy())[0]
        rows += [(f"{eta:g}", int(l), f"{c[l]:.10g}") for l in classes.support(0)]
    _write_csv(out / "fig5.csv", ["eta", "token", "c"], rows)
    cn_final(classes, {rf"Adam, $\eta$={e:g}": res.Z[r].numpy() for r, e in enumerate(res.eta_y)},
             title="Syn-Small, Adam, after %d steps" % steps).savefig(out / "fig5.png", dpi=120)
    return ["fig5.csv", "fig5.png"]


def _sweep(cache, device, steps, seeds, grid=None, world=None):
    """The Syn-Medium sweep of Figs. 6, 11, 12, once per command. Under torchrun every rank trains
    the runs of its seeds (they share batches: a unit of work) and rank 0 gets them all, in the
    order one process gives (``None`` on the other ranks)."""
    if "sweep" not in cache:
        from .experiments import FIG6, syn_medium_sweep
        g = dict(grid or {})
        axes = {k: g.pop(k, None) or FIG6[k] for k in ("num_last", "eta_z", "ratio")}
        kw = dict(device=device, steps=steps or COMMON["steps"], **axes, **g)
        if world is None:
            cache["sweep"] = syn_medium_sweep(seeds=seeds, progress=_bar(), **kw)
        else:
            from . import distributed
            from .train import TrainResult, lr_grid

            def compute(mine):
                if not mine:
                    return []
                sw = syn_medium_sweep(seeds=tuple(mine), progress=world.main and _bar(), **kw)
                return [{nl: res.select(res.seed == s) for nl, (_, res) in sw.items()} for s in mine]
            parts = distributed.gather(world, list(seeds), compute, "the Syn-Medium sweep")
            if parts is None:
                cache["sweep"] = None
            else:
                from .data import syn_medium
                ey, ez, sd = lr_grid(axes["eta_z"], axes["ratio"], seeds)
                sweep = {}
                for nl in axes["num_last"]:
                    merged = TrainResult.concat([p[nl] for p in parts])
                    where = {k: i for i, k in enumerate(zip(merged.eta_y.tolist(), merged.eta_z.tolist(),
                                                            merged.seed.tolist()))}
                    res = merged.select([where[k] for k in zip(ey.tolist(), ez.tolist(), sd.tolist())])
                    sweep[nl] = (syn_medium(nl), res)
                cache["sweep"] = sweep
    if isinstance(cache["sweep"], dict):            # {num_last: (classes, TrainResult)}; None on other ranks
        _refuse_diverged(cache["sweep"])
    return cache["sweep"]


def _refuse_diverged(sweep) -> None:
    """FloatingPointError naming the runs of the sweep that diverged or saturated (train()'s one rule,
    ``TrainResult.diverged``): their entropies are numbers (a blown-up softmax reads 0, the sparsest
    value) but not results, so no figure is made of them."""
    bad = []
    for nl, (_, res) in sweep.items():
        if res.diverged is not None and np.any(res.diverged):
            for r in np.flatnonzero(res.diverged):
                bad.append(f"num_last {nl}, eta_z {res.eta_z[r]:g}, ratio {res.eta_y[r] / res.eta_z[r]:g}, "
                           f"seed {res.seed[r]}")
    if bad:
        raise FloatingPointError(f"{len(bad)} run(s) of the sweep diverged or saturated ({'; '.join(bad[:3])}"
                                 f"{'; ...' if len(bad) > 3 else ''}): lower the rates")


def reproduce_fig6(out: Path, device: str, steps: int, seeds, cache, grid=None, world=None, **_):
    from .experiments import fig6
    from .plots import entropy_sweep
    r = fig6(sweep=_sweep(cache, device, steps, seeds, grid, world))
    _write_csv(out / "fig6.csv", ["num_last", "eta_z", "ratio", "seed", "entropy"],
               [(int(a), f"{b:g}", f"{c:g}", int(d), f"{e:.10g}")
                for a, b, c, d, e in zip(r["num_last"], r["eta_z"], r["ratio"], r["seed"], r["entropy"])])
    entropy_sweep(r["num_last"], r["eta_z"], r["ratio"], r["entropy"]).savefig(out / "fig6.png", dpi=120)
    return ["fig6.csv", "fig6.png"]


def _recall_plan(r, by: str, grid) -> tuple[list, str]:
    """Which held values a recall figure plots, and its record's "plotted" in words. The held
    rate (eta_Z in Fig. 11, eta_Y/eta_Z in Fig. 12) is the paper's 1 unless its flag (--eta-z,
    --ratio) asks for values: then every value asked for, a panel each (so too for a grid
    without 1)."""
    held_key, curve_key = ("eta_z", "ratio") if by == "ratio" else ("ratio", "eta_z")
    word, curve_word = ("eta_Z", "eta_Y/eta_Z") if by == "ratio" else ("eta_Y/eta_Z", "eta_Z")
    name = "fig11" if by == "ratio" else "fig12"
    have = sorted(set(np.asarray(r[held_key], float).tolist()))
    values = lambda vs: ", ".join(f"{v:g}" for v in vs)                          # noqa: E731
    curves = values(sorted(set(np.asarray(r[curve_key], float).tolist())))
    vocabularies = values(sorted(set(np.asarray(r["num_last"]).tolist())))
    mean = (f"each point is the mean recall over the seeds of its setting at one threshold ({name}.csv: those "
            "means, a row per setting and threshold)")
    if (grid or {}).get(held_key) is not None or 1.0 not in have:
        return have, (f"{name}.png: recall of distinct tokens against the threshold, one curve per {curve_word} "
                      f"({curves}), one panel per {word} and num_last ({word} = {values(have)}; num_last = "
                      f"{vocabularies}); {mean}")
    others = [v for v in have if v != 1.0]       # the paper's axis (the flag not given) holds 1
    return [1.0], (f"{name}.png: recall of distinct tokens against the threshold, one curve per {curve_word} "
                   f"({curves}) at {word} = 1 (the paper's Fig. {name[3:]}), one panel per num_last ({vocabularies})"
                   + (f"; {name}.csv also has {word} = {values(others)}, not plotted (--{held_key.replace('_', '-')} "
                      f"plots every value it lists)" if others else "") + f"; {mean}")


def _recall(out, device, steps, seeds, cache, name, by, grid=None, world=None):
    from .experiments import fig11_12
    from .plots import recall_curves
    if "recall" not in cache:
        cache["recall"] = fig11_12(_sweep(cache, device, steps, seeds, grid, world))
    r = cache["recall"]
    _write_csv(out / f"{name}.csv", ["num_last", "eta_z", "ratio", "threshold", "recall"],
               [(int(a), f"{b:g}", f"{c:g}", f"{d:.6g}", f"{e:.6g}")
                for a, b, c, d, e in zip(r["num_last"], r["eta_z"], r["ratio"], r["threshold"], r["recall"])])
    at, cache[("plotted", name)] = _recall_plan(r, by, grid)
    recall_curves(r["num_last"], r["eta_z"], r["ratio"], r["threshold"], r["recall"], by=by, at=at).savefig(
        out / f"{name}.png", dpi=120)
    return [f"{name}.csv", f"{name}.png"]


def reproduce_fig11(out: Path, **kw):
    """Fig. 11: recall-threshold curves by eta_Y/eta_Z (eta_Z = 1), mean over seeds."""
    return _recall(out, name="fig11", by="ratio",
                   **{k: kw.get(k) for k in ("device", "steps", "seeds", "cache", "grid", "world")})


def reproduce_fig12(out: Path, **kw):
    """Fig. 12: recall-threshold curves by eta_Z (eta_Y = eta_Z), mean over seeds."""
    return _recall(out, name="fig12", by="eta_z",
                   **{k: kw.get(k) for k in ("device", "steps", "seeds", "cache", "grid", "world")})


def _fig7_results(device, steps, data, world=None):
    """Fig. 7's two models ({layers: LMResult}); under torchrun one model a rank (a unit of work),
    gathered on rank 0 (None on the others)."""
    from .experiments import FIG7, fig7
    steps = steps or FIG7["steps"]
    if world is None:
        return fig7(steps=steps, device=device, progress=_bar(), source=data)[0]
    from . import distributed

    def compute(mine):
        if not mine:
            return []
        res = fig7(steps=steps, layers=mine, device=device, progress=world.main and _bar(), source=data)[0]
        for r in res.values():
            r.model = None                       # the maps travel, not the weights
        return [res[L] for L in mine]
    layers = [1, 3]
    parts = distributed.gather(world, layers, compute, "fig7")
    return None if parts is None else dict(zip(layers, parts))


def reproduce_fig7(out: Path, device: str, steps, data="shipped", world=None, **_):
    """Fig. 7: lowest-layer attention of 1- and 3-layer models on WikiText-2 (SGD, lr 5)."""
    from .plots import attention_maps
    results = _fig7_results(device, steps, data, world)
    rows, maps = [], {}
    for L, res in results.items():
        maps[f"{L}-layer, lowest layer"] = {}
        for s, layer_maps in sorted(res.snapshots.items()):
            a = layer_maps[0][0].numpy()                      # lowest layer, head 0
            maps[f"{L}-layer, lowest layer"][s] = a
            rows += [(L, s, i, j, f"{a[i, j]:.6g}") for i in range(a.shape[0]) for j in range(i + 1)]
    _write_csv(out / "fig7.csv", ["layers", "iteration", "query", "key", "attention"], rows)
    attention_maps(maps).savefig(out / "fig7.png", dpi=120)
    return ["fig7.csv", "fig7.png"]


def reproduce_freeze(out: Path, device: str, steps, data="shipped", **_):
    """Beyond Fig. 7: one 1-layer run 4x longer, lowest-layer attention every 250 steps (does it freeze?)."""
    from .experiments import FREEZE, lm_freezing
    rows = lm_freezing(steps=steps or FREEZE["steps"], device=device, progress=_bar(), source=data)
    _write_csv(out / "freeze.csv", ["iteration", "entropy", "change", "loss"],
               [(s, f"{e:.6g}", f"{c:.6g}", f"{l:.6g}") for s, e, c, l in rows])
    from .plots import freezing
    freezing(*zip(*rows)).savefig(out / "freeze.png", dpi=120)
    return ["freeze.csv", "freeze.png"]


def _fig10_rows(device, steps, data, world=None):
    """Fig. 10's rows; under torchrun each rank trains whole groups of runs (one run on a CPU,
    one seed's rates on a GPU: :func:`scansnap.experiments.fig10_groups`), gathered on rank 0
    in the order of one process (None on the other ranks)."""
    from .experiments import FIG10, fig10, fig10_groups, fig10_rows, wikitext_data
    steps = steps or FIG10["steps"]
    if world is None:
        return fig10(lrs=FIG10["lrs"], seeds=FIG10["seeds"], steps=steps, device=device, progress=_bar(), source=data)
    from . import distributed
    groups = fig10_groups([(lr, s) for lr in FIG10["lrs"] for s in FIG10["seeds"]], device)

    def compute(mine):
        if not mine:
            return []
        rows = fig10_rows([r for g in mine for r in g], steps=steps, device=device, progress=world.main and _bar(),
                          data=wikitext_data(data))
        out, i = [], 0
        for g in mine:
            out.append(rows[i:i + len(g)])
            i += len(g)
        return out
    parts = distributed.gather(world, groups, compute, "fig10")
    if parts is None:
        return None
    by_run = {(r[0], r[1]): r for part in parts for r in part}
    return [by_run[(lr, s)] for lr in FIG10["lrs"] for s in FIG10["seeds"]]


def reproduce_fig10(out: Path, device: str, steps, data="shipped", world=None, **_):
    """Fig. 10: validation attention entropy vs SGD learning rate 1-5, 5 seeds (1-layer, WikiText-2)."""
    from .plots import entropy_vs_lr
    rows = _fig10_rows(device, steps, data, world)
    _write_csv(out / "fig10.csv", ["lr", "seed", "entropy", "final_loss"],
               [(f"{a:g}", b, f"{c:.6g}", f"{d:.6g}") for a, b, c, d in rows])
    entropy_vs_lr([r[0] for r in rows], [r[2] for r in rows]).savefig(out / "fig10.png", dpi=120)
    return ["fig10.csv", "fig10.png"]


def reproduce_fig8(out: Path, **_):
    """Fig. 8: h* (Eq. 33) vs h (Eq. 45); left M=50, right M=1000."""
    from .plots import h_vs_hstar
    from .theory import h_closed, h_star
    panels = [(50, 100, (0.1, 0.2, 0.5, 1, 2)), (1000, 100, (0.2, 0.5, 1, 2, 4))]
    rows = []
    for M, steps, etas in panels:
        for ey in etas:
            hs, h = h_star(steps, M, ey), h_closed(np.arange(steps + 1), M, ey)
            rows += [(M, f"{ey:g}", s, f"{a:.10g}", f"{b:.10g}") for s, (a, b) in enumerate(zip(hs, h))]
    _write_csv(out / "fig8.csv", ["M", "eta_y", "step", "h_star", "h"], rows)
    h_vs_hstar(panels).savefig(out / "fig8.png", dpi=120)
    return ["fig8.csv", "fig8.png"]


def reproduce_fig9(out: Path, **_):
    """Fig. 9: B_n(t) at fixed nu = eta_Y/eta_Z (corrected Eq. 129, C0 = 1, K = 10)."""
    from .plots import B_fixed_ratio
    from .theory import B_n
    panels = [(100, [(0.5, 5), (1, 10), (2, 20), (4, 40), (8, 80)]),
              (10000, [(0.5, 0.5), (1, 1), (2, 2), (4, 4), (8, 8)])]
    from .theory import transition_time
    t = np.geomspace(1, 1e6, 200)
    rows = [(M, f"{ez:g}", f"{ey:g}", f"{tt:.6g}", f"{b:.10g}", f"{transition_time(M, 10, ey):.10g}")
            for M, pairs in panels for ez, ey in pairs for tt, b in zip(t, B_n(t, M, 10, ey, ez, 1.0))]
    _write_csv(out / "fig9.csv", ["M", "eta_z", "eta_y", "t", "B_n", "t0"], rows)
    B_fixed_ratio(panels, t=t).savefig(out / "fig9.png", dpi=120)
    return ["fig9.csv", "fig9.png"]


def _data(source: str, figures) -> tuple[str | None, dict | None, list]:
    """Resolve ``--data`` before any computation: (source used, its record, notes), or
    (None, None, []) when no figure reads text. A failed download raises OSError here."""
    if not any(f in LM_FIGURES for f in figures):
        return None, None, []
    from . import wikitext
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        corpus = wikitext.load(source)
    notes = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]   # not a GC's ResourceWarning
    return corpus.source, {"asked": source, "source": corpus.source, "detail": corpus.detail}, notes


def _out_dir(text: str) -> Path:
    if not text:                       # Path('') is '.': an empty --out would mean the working folder
        raise argparse.ArgumentTypeError("--out is empty: name a folder ('.' for the working folder)")
    return Path(text)


class _Parser(argparse.ArgumentParser):
    """argparse, with a mistake reported in one line (no usage block above it) and exit 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


class _Signalled(BaseException):
    """SIGTERM or SIGHUP, raised in the main thread like Ctrl-C's KeyboardInterrupt: the figure in
    progress is abandoned (its staging folder removed), the sets already written stay."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


def _raise_signalled(signum, frame):
    raise _Signalled(signum)


def _install_signal_handlers():
    """SIGTERM and SIGHUP end the run as Ctrl-C does, one line and no traceback; a signal that
    was ignored when we started (``nohup``: SIGHUP) stays ignored."""
    if threading.current_thread() is not threading.main_thread():
        return
    from ._startup import release
    release()                               # Ctrl-C: KeyboardInterrupt again (scansnap._startup)
    for name in ("SIGTERM", "SIGHUP"):
        sig = getattr(signal, name, None)
        if sig is not None and signal.getsignal(sig) != signal.SIG_IGN:
            signal.signal(sig, _raise_signalled)


def _streams_open():
    """A closed stdout or stderr (``>&-``) becomes /dev/null: otherwise the next file opened
    would take its descriptor, and a library's print would land in a result file."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            os.open(os.devnull, os.O_RDWR)          # the lowest free descriptor: this one
    if sys.stdout is None:
        sys.stdout = open(os.devnull, "w")


def _say(msg: str) -> None:
    """A line on stdout. If stdout is gone (``| head`` has exited), the messages stop and the run
    goes on: the result files are what the command is for."""
    try:
        print(msg, flush=True)
    except (OSError, ValueError):
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())    # so the pending buffer flushes somewhere
            os.close(devnull)
        except (OSError, ValueError, AttributeError):
            sys.stdout = open(os.devnull, "w")


def _check_flags(a, figures) -> None:
    """ValueError for a flag that no figure asked for uses, or a value past its bound: a
    setting the run would silently ignore is a mistake worth one line."""
    if a.steps is not None:
        from ._validate import positive_int
        positive_int("steps", a.steps)
        if a.steps > MAX_STEPS:
            raise ValueError(f"steps must be at most {MAX_STEPS:,} (the paper's are 100 to 1,500), got {a.steps}")
    uses = {"--steps": [f for f in figures if f not in CLOSED_FORM],
            "--seeds": [f for f in figures if f in SWEEP_FIGURES],
            "--data": [f for f in figures if f in LM_FIGURES]}
    which = {"--steps": "the trained figures (not fig3, fig8, fig9: closed forms)",
             "--seeds": "fig6, fig11 and fig12 (the Syn-Medium sweep)",
             "--data": "fig7, fig10 and freeze (WikiText-2)"}
    given = {"--steps": a.steps, "--seeds": a.seeds, "--data": a.data}
    for flag, value in given.items():
        if value is not None and not uses[flag]:
            raise ValueError(f"{flag} applies to {which[flag]}; {', '.join(figures)} would ignore it")
    for k, figs in GRID_FIGURES.items():
        if getattr(a, k, None) is not None and not any(f in figs for f in figures):
            raise ValueError(f"--{k.replace('_', '-')} applies to {', '.join(figs)}; none of them is asked for "
                             f"({' '.join(a.figure)})")


def _book_results_folder() -> Path:
    """scansnap/results: what chapter 6 reads (``experiments.book_results``)."""
    from importlib.resources import files
    return Path(str(files("scansnap") / "results"))


def _book_results_guard(out: Path, figures, steps, seeds, data, force: bool, grid=None) -> None:
    """The book's own results (scansnap/results) are the paper's settings: a run with other
    settings into that folder is refused unless --force, before anything is computed."""
    book = _book_results_folder()
    if force or not book.is_dir() or not out.resolve().samefile(book.resolve()):
        return
    other = [f for f in figures if provenance.settings_for(f, steps, seeds, data, _grid_for(f, grid or {}))
             != provenance.settings_for(f)]
    if other:
        raise ValueError(f"--out {out} holds the book's own results, made with the paper's settings: "
                         f"{', '.join(other)} would be replaced by a run with other settings (--steps, --seeds, "
                         "--data or a grid flag); write them into another folder, or add --force")


def _close_bars() -> None:
    """Close the progress bars still open (an interrupted sweep's, a run's): one left open is
    drawn again when the process exits, below the line that says why the run stopped."""
    from tqdm import tqdm
    for bar in list(getattr(tqdm, "_instances", ())):
        bar.close()


def _stop(p, figures, done, why: str, status: int) -> int:
    """One line: why the run stopped, what it wrote, what it did not (whose previous sets stand),
    on a line of its own (the progress bars closed first)."""
    _close_bars()
    wrote = f"written: {', '.join(done)}" if done else "nothing written"
    rest = [f for f in figures if f not in done]
    print(f"{p.prog}: {why}; {wrote}; not written (previous sets, if any, kept): {', '.join(rest)}",
          file=sys.stderr, flush=True)
    return status


# The command line's help, in words (module level: prose, not code for mutation testing to plant bugs in)
HELP = {
    "prog": "Re-run the experiments of 'Scan and Snap' (Tian et al., NeurIPS 2023).",
    "reproduce": "re-run one figure of the paper and write its PNG and CSV",
    "figure": "which figures ('all': every figure of the paper; 'freeze': the longer Fig. 7 run); "
              "several share the Syn-Medium sweep. fig6.png shows the mean over seeds "
              "± one standard error of the mean (fig6.csv: a row per run)",
    "--out": "output folder (created if missing); each figure's CSV, PNG and provenance "
             "record (<figure>.provenance.json) are replaced together",
    "--device": "'auto' (CUDA when present), 'cpu', 'cuda', 'cuda:N'",
    "--steps": "training steps per run (default: the paper's, 100 for the synthetic data, "
               f"1500 for fig7; 300 for fig10); at most {MAX_STEPS:,}",
    "--seeds": "seeds of the Syn-Medium sweep (figs 6, 11, 12), e.g. '1-10' (paper, the default) or "
               f"'1,2'; distinct, in [0, 2**63 - 1], at most {MAX_SEEDS}",
    "--data": "text for figs 7, 10 and 'freeze': the shipped WikiText-2 valid+test split by "
              "article (offline, default), the full WikiText-2 or WikiText-103 (downloaded once), "
              "or 'auto' (full WikiText-2 when reachable, else shipped, saying so)",
    "--force": "let a run with other settings than the paper's replace the book's own results "
               "(--out scansnap/results); refused without it",
    "grid": "your own grid (figs 6, 11, 12: the Syn-Medium sweep; --batch and --T also figs 4, 5)",
    "grid-note": "Results made with any of these differ from the paper's settings: the provenance "
                 "record says so, and the book refuses to read them as the paper's.",
    "--eta-z": "attention learning rates eta_Z, e.g. '0.5,1,2,3' (the paper's)",
    "--ratio": "eta_Y/eta_Z ratios, e.g. '1,2,5,10' (the paper's)",
    "--num-last": "numbers of query tokens, e.g. '1,3,5,10' (the paper's): one vocabulary each, its queries "
                  "('last' tokens) with 2 next tokens each, so the panel titled '#last/next tokens = 3/6' "
                  "(the paper's wording) is num_last = 3: 3 queries, 6 next tokens (classes)",
    "--batch": "sequences per step (the paper's: 128)",
    "--T": "sequence length, contextual tokens and the query (the paper's: 128)",
    "epilog": "Past one machine: torchrun --nproc_per_node N -m scansnap reproduce fig10 --out DIR "
              "(figs 6, 7, 10, 11, 12 split their runs over the ranks; rank 0 writes; see bench/RESULTS.md). "
              "Progress bars are drawn on stderr only when it is a terminal (none in a log or a pipe); "
              "SCANSNAP_PROGRESS=1 draws them anyway, SCANSNAP_PROGRESS=0 never.",
}


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m scansnap", description=HELP["prog"])
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("reproduce", prog="python -m scansnap reproduce", help=HELP["reproduce"],
                       epilog=HELP["epilog"])
    r.add_argument("figure", nargs="+", choices=FIGURES + EXTRAS + ("all",), help=HELP["figure"])
    r.add_argument("--out", type=_out_dir, required=True, help=HELP["--out"])
    r.add_argument("--device", default="auto", help=HELP["--device"])
    r.add_argument("--steps", type=int, default=None, help=HELP["--steps"])
    r.add_argument("--seeds", type=_seeds, default=None, help=HELP["--seeds"])
    r.add_argument("--data", default=None, choices=SOURCES, help=HELP["--data"])
    r.add_argument("--force", action="store_true", help=HELP["--force"])
    g = r.add_argument_group(HELP["grid"], HELP["grid-note"])
    g.add_argument("--eta-z", type=_rates, default=None, metavar="LIST", help=HELP["--eta-z"])
    g.add_argument("--ratio", type=_rates, default=None, metavar="LIST", help=HELP["--ratio"])
    g.add_argument("--num-last", type=_counts, default=None, metavar="LIST", help=HELP["--num-last"])
    g.add_argument("--batch", type=_int_at_least(1, "--batch"), default=None, metavar="B", help=HELP["--batch"])
    g.add_argument("--T", type=_int_at_least(2, "--T"), default=None, metavar="T", help=HELP["--T"])
    return p


def main(argv=None):
    p = parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    a = p.parse_args(argv)
    _install_signal_handlers()              # from here on a signal ends the run with the one line
    _streams_open()
    from ._validate import resolve_device
    from . import distributed
    figures = []
    for f in a.figure:
        for g in (FIGURES if f == "all" else (f,)):
            if g not in figures:
                figures.append(g)
    seeds = a.seeds or PAPER_SEEDS
    grid = {"eta_z": a.eta_z, "ratio": a.ratio, "num_last": a.num_last, "batch": a.batch, "T": a.T}
    world, out = None, a.out
    writer = True                                          # this process writes (rank 0 under torchrun)
    try:
        _check_flags(a, figures)
        world, device_arg = distributed.init(a.device)     # under torchrun: one device a rank
        writer = world is None or world.main
        device = provenance.device_name(resolve_device(device_arg))
        error = None
        if writer:                                         # only the writer needs --out
            try:
                out = provenance.check_out_dir(a.out)
                with provenance._signals_held(), provenance.locked(out):
                    finished = provenance.recover(out)     # a commit a killed run left half done
                for note in finished:
                    print(f"note: {note}", file=sys.stderr, flush=True)
            except (ValueError, OSError) as e:
                error = str(e)
        error = distributed.agree(world, error)
        if error is not None:
            raise ValueError(error)
        data, data_record, data_notes = _data(a.data or "shipped", figures)
        error = None
        if writer:
            try:
                _book_results_guard(out, figures, a.steps, seeds, data, a.force, grid)
            except ValueError as e:
                error = str(e)
        error = distributed.agree(world, error)
        if error is not None:
            raise ValueError(error)
    except (ValueError, OSError, CorruptArchive) as e:
        # under torchrun: rank 0 says it, then every rank leaves together (a rank that left first
        # would have torchrun stop rank 0 before it printed)
        if writer:
            print(f"{p.prog}: error: {e}", file=sys.stderr, flush=True)
        distributed.finish(world, barrier=True)
        sys.exit(2)
    except (KeyboardInterrupt, _Signalled) as e:       # while checking the folder, loading the text, ...
        distributed.finish(world)
        signum = e.signum if isinstance(e, _Signalled) else signal.SIGINT
        why = "interrupted (Ctrl-C)" if signum == signal.SIGINT else f"stopped by {signal.Signals(signum).name}"
        return _stop(p, figures, [], why, 128 + signum) if writer else 128 + signum
    cache: dict = {}
    done, fig = [], None

    def stop(why: str, status: int) -> int:
        return _stop(p, figures, done, why, status) if writer else status

    try:
        if data_record is not None:
            for note in data_notes:
                distributed.say(world, f"note: {note}", file=sys.stderr)
            if writer:
                _say(f"data: {data_record['detail']}")
        env = provenance.environment(device)
        env.update(world.record() if world is not None else {"world_size": 1})
        for fig in figures:
            t0 = time.perf_counter()
            kw = dict(device=device, steps=a.steps, seeds=seeds, cache=cache, data=data,
                      grid=_grid_for(fig, grid), world=world)
            if not writer:
                if fig in DISTRIBUTED:                     # this rank's share; rank 0 gathers and writes
                    _share(fig, **kw)
                continue
            with provenance.staged(out, fig) as stage:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    files = globals()[f"reproduce_{fig}"](stage, **kw)
                notes = [f"{w.category.__name__}: {w.message}" for w in caught if issubclass(w.category, UserWarning)]
                for note in notes:
                    print(f"{fig}: {note}", file=sys.stderr, flush=True)
                settings = provenance.settings_for(fig, a.steps, seeds, data, _grid_for(fig, grid))
                # under torchrun, say whether this figure's work was shared (else rank 0 did it alone)
                fig_env = env if world is None else {**env, "split": fig in DISTRIBUTED}
                rec = provenance.record(fig, stage, files, settings,
                                        data_record if fig in LM_FIGURES else None, fig_env,
                                        time.perf_counter() - t0, notes + provenance.paper_notes(fig, settings), argv)
                plotted = cache.get(("plotted", fig), PLOTTED.get(fig))   # fig11, fig12: what this grid drew
                rec.update({"plotted": plotted} if plotted else {})
                with provenance._signals_held():   # a signal held through the commit acts once fig is counted
                    names = provenance.commit(stage, out, fig, rec)
                    done.append(fig)
            where = ("" if world is None else f" ({world.size} ranks, {world.backend})" if fig in DISTRIBUTED
                     else f" (rank 0 alone: {fig} is not split over the {world.size} ranks)")
            _say(f"{fig}: wrote {', '.join(str(out / f) for f in names)} in {time.perf_counter() - t0:.1f} s "
                 f"on {device}{where}")
    except KeyboardInterrupt:
        return stop("interrupted (Ctrl-C)", 128 + signal.SIGINT)
    except _Signalled as e:
        return stop(f"stopped by {signal.Signals(e.signum).name}", 128 + e.signum)
    except OSError as e:                                # a full disk, a folder gone read-only
        return stop(f"error: could not write {fig} in {out} ({e.strerror or e})", 1)
    except FloatingPointError as e:                     # a diverged run says so, in one line
        return stop(f"error: {fig}: {e}", 1)
    except distributed.RankFailed as e:
        if writer:
            print(f"{p.prog}: error: {e}; nothing written for it", file=sys.stderr, flush=True)
        distributed.finish(world, barrier=True)       # rank 0 has said it before any rank leaves
        return 1
    finally:
        distributed.finish(world)
    return 0


def _share(fig, device, steps, seeds, cache, data, grid, world):
    """A rank other than 0: compute its share of a distributed figure (the same collective calls
    as rank 0's ``reproduce_<fig>``), write nothing."""
    if fig in _SWEEP:
        _sweep(cache, device, steps, seeds, grid, world)
    elif fig == "fig7":
        _fig7_results(device, steps, data, world)
    elif fig == "fig10":
        _fig10_rows(device, steps, data, world)


if __name__ == "__main__":
    sys.exit(main())
