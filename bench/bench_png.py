"""Where a slider redraw's PNG time goes: ``scansnap.ui._png`` split into its steps, and the
alternatives a live redraw could use, side by side on the same figure (chapter 2's bar chart
shape: 6.8 x 3.0 in, 14 bars, a line, a legend), interleaved, median of ``--reps``.

    python bench/bench_png.py [--reps 15]
"""
from __future__ import annotations

import argparse
import io
import statistics
import subprocess
import time

import numpy as np
from matplotlib.figure import Figure
from PIL import Image


def figure():
    fig = Figure(figsize=(6.8, 3.0))
    fig.subplots_adjust(left=0.1, right=0.98, bottom=0.16, top=0.9)
    ax = fig.subplots()
    x = np.arange(14)
    ax.bar(x, np.linspace(0.02, 0.2, 14), color=["0.62"] * 4 + ["C0"] * 10, width=0.8, label="one sequence")
    ax.plot(x, np.linspace(0.03, 0.18, 14), "k_", ms=14, mew=2, label="limit")
    ax.set_xticks(x, [str(i) for i in x])
    ax.set_xlabel("contextual token"); ax.set_ylabel("attention"); ax.set_title("T = 16", fontsize=10)
    ax.legend(fontsize=9, loc="upper left")
    return fig


def rgba(fig, dpi):
    buf = io.BytesIO()
    fig.savefig(buf, format="rgba", dpi=dpi)
    w, h = round(fig.get_figwidth() * dpi), round(fig.get_figheight() * dpi)
    return Image.frombuffer("RGBA", (w, h), buf.getvalue(), "raw", "RGBA", 0, 1)


def quantized(img):
    out = io.BytesIO()
    img.convert("RGB").quantize(colors=256, method=Image.Quantize.FASTOCTREE).save(out, format="png")
    return out.getvalue()


VARIANTS = {
    "ui._png today: RGBA at 200 dpi + 256-colour quantize + PNG": lambda: quantized(rgba(figure(), 200)),
    "  of which: draw + RGBA at 200 dpi": lambda: rgba(figure(), 200),
    "  of which: figure built, not drawn": figure,
    "savefig PNG at 200 dpi (matplotlib's own PNG, no quantize)": lambda: figure().savefig(io.BytesIO(), format="png", dpi=200),
    "RGBA at 200 dpi + PNG compress_level 1, no quantize": lambda: rgba(figure(), 200).save(io.BytesIO(), format="png", compress_level=1),
    "ui._png at scale 1 (100 dpi, quantized)": lambda: quantized(rgba(figure(), 100)),
    "baseline: bare figure (one empty axes) -> PNG at 200 dpi": lambda: _bare(),
}


def _bare():
    fig = Figure(figsize=(6.8, 3.0)); fig.subplots(); fig.savefig(io.BytesIO(), format="png", dpi=200)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=15)
    a = ap.parse_args()
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    times = {k: [] for k in VARIANTS}
    cpu = {k: [] for k in VARIANTS}
    for f in VARIANTS.values():
        f()                                   # warm-up (fonts, caches)
    for _ in range(a.reps):
        for k, f in VARIANTS.items():
            t, c = time.perf_counter(), time.process_time()
            f()
            times[k].append(time.perf_counter() - t)
            cpu[k].append(time.process_time() - c)
    base = statistics.median(times["baseline: bare figure (one empty axes) -> PNG at 200 dpi"])
    print("| step / variant | wall median | CPU median | / baseline |")
    print("|---|---|---|---|")
    for k in VARIANTS:
        m = statistics.median(times[k])
        print(f"| {k} | {m * 1000:.0f} ms | {statistics.median(cpu[k]) * 1000:.0f} ms | {m / base:.1f} |")
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())


if __name__ == "__main__":
    main()
