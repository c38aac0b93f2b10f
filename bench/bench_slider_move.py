"""A slider move in a live kernel, precomputed panel vs kernel-only panel, same draw function.

Since the precomputed panels show their stored figure on a move (nothing re-drawn), a move
costs a widget update; the kernel-only panel (the baseline, in the same run) re-runs draw and
makes its PNG. The draw function is a chapter-like figure: a 6.8 x 3 in bar chart of 34 bars
with a legend, constrained layout. Usage: python bench/bench_slider_move.py [--moves 20]
"""
import argparse
import os
import statistics
import time

import ipywidgets as widgets
import numpy as np
from matplotlib.figure import Figure

from scansnap.ui import slider_panel


def draw(eta=1.0):
    fig = Figure(figsize=(6.8, 3.0), layout="constrained")
    ax = fig.subplots()
    x = np.arange(34)
    ax.bar(x, np.exp(-eta * x / 10), color="C0", label="c_n")
    ax.set_xlabel("token")
    ax.set_ylabel("attention")
    ax.legend()
    return fig


def moves(panel, options, n):
    slider = panel.children[0].children[0]
    slider = getattr(slider, "children", [slider])[-1]      # ipywidgets 7 wraps it with a label
    out = []
    for i in range(n):
        t = time.perf_counter()
        slider.value = options[(i + 1) % len(options)]
        out.append(time.perf_counter() - t)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--moves", type=int, default=20)
    a = ap.parse_args()
    options = (0.5, 1.0, 2.0, 4.0, 8.0)
    pre = slider_panel(draw, progress=False, eta=widgets.SelectionSlider(options=options, value=0.5))
    live = slider_panel(draw, precompute=False, eta=widgets.SelectionSlider(options=options, value=0.5))
    p, k = moves(pre, options, a.moves), moves(live, options, a.moves)
    print(os.popen("uptime").read().strip())
    print(f"precomputed panel: median {1e3 * statistics.median(p):.2f} ms a move (max {1e3 * max(p):.2f})")
    print(f"kernel-only panel (baseline, redraws): median {1e3 * statistics.median(k):.0f} ms a move")
    print(f"baseline / precomputed: {statistics.median(k) / statistics.median(p):.0f}x")


if __name__ == "__main__":
    main()
