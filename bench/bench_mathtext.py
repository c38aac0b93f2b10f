"""Benchmark: inline figures with matplotlib's own mathtext cache against the book's shared one
(``scansnap.plots.share_mathtext_cache``), side by side in one process, alternating.

The figures are the book's: Fig. 8's B_n curves and the growth factor (log axes, $...$
legends), and a slider-like run of seven figures of one plot function whose labels repeat
(what ``scansnap.ui.slider_panel`` renders). Each is rendered as the chapters render it
(``plots._retina_png``: the layout draw, then the 2x PNG). The PNG bytes are compared too.

    python bench/bench_mathtext.py [--reps 3] [--write FILE]
"""
from __future__ import annotations

import argparse
import subprocess
import time

import matplotlib

matplotlib.use("Agg")
from matplotlib import mathtext  # noqa: E402

from scansnap import plots  # noqa: E402

FIGURES = {
    "Fig. 8 (B_n, two panels)": lambda: plots.B_fixed_ratio(
        [(100, [(0.5, 5), (1, 10), (2, 20), (4, 40), (8, 80)]),
         (10000, [(0.5, 0.5), (1, 1), (2, 2), (4, 4), (8, 8)])]),
    "growth factor": lambda: plots.growth_factor(1000, 10, 0.5, (0.5, 1, 2, 5)),
    "7 growth factors (a slider's frames)": lambda: [plots.growth_factor(M, 10, 0.5, (0.5, 1, 2, 5))
                                                    for M in (100, 200, 500, 1000, 2000, 5000, 10000)],
}


def render(make):
    figs = make()
    figs = figs if isinstance(figs, list) else [figs]
    t = time.perf_counter()
    pngs = [plots._retina_png(f)[0] for f in figs]
    return time.perf_counter() - t, pngs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--write")
    a = ap.parse_args()
    original = mathtext.MathTextParser.__dict__["_parse_cached"]
    plots.share_mathtext_cache()
    shared = mathtext.MathTextParser.__dict__["_parse_cached"]
    up0 = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    times = {name: {"matplotlib": [], "shared": []} for name in FIGURES}
    same = True
    for _ in range(a.reps):
        for name, make in FIGURES.items():
            out = {}
            for label, fn in (("matplotlib", original), ("shared", shared)):
                mathtext.MathTextParser._parse_cached = fn
                dt, out[label] = render(make)
                times[name][label].append(dt)
            same &= out["matplotlib"] == out["shared"]
    mathtext.MathTextParser._parse_cached = original
    up1 = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    med = {n: {k: sorted(v)[len(v) // 2] for k, v in t.items()} for n, t in times.items()}
    tot = {k: sum(m[k] for m in med.values()) for k in ("matplotlib", "shared")}
    lines = ["## Inline figures: matplotlib's mathtext cache against one shared cache", "",
             f"Command: `python bench/bench_mathtext.py --reps {a.reps}` (median of {a.reps}, alternating).  ",
             f"Load before: `{up0}`  ", f"Load after: `{up1}`", "",
             "| figures | matplotlib's cache | shared cache | shared / matplotlib |", "|---|---|---|---|",
             *[f"| {n} | {m['matplotlib']:.2f} s | {m['shared']:.2f} s | {m['shared'] / m['matplotlib']:.2f} |"
               for n, m in med.items()],
             f"| all | {tot['matplotlib']:.2f} s | {tot['shared']:.2f} s | **{tot['shared'] / tot['matplotlib']:.2f}** |",
             "", f"The same PNG bytes with either cache: {'yes' if same else 'NO'}.", ""]
    text = "\n".join(lines)
    print(text)
    if a.write:
        with open(a.write, "w") as fh:
            fh.write(text)
    if not same:
        raise SystemExit("the shared cache changed an image")


if __name__ == "__main__":
    main()
