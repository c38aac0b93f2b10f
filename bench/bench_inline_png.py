"""Inline figures (``scansnap.plots._retina_png``, every figure a chapter shows): the single
render of the ink's box against the former tight-bbox render, side by side on the book's own
figures, interleaved, CPU-time medians of ``--reps``.

    python bench/bench_inline_png.py [--reps 5] [--write bench/inline_png.md]

Before: ``bbox_inches="tight"`` (one draw to find the box at the PNG's dpi, one to render,
constrained layout re-run in each) and a second render when the crop came out a pixel wider
than the output area. After: the figure laid out once, its ink's box taken there and rendered
once with the layout kept. The two PNGs hold the same picture (``tests/test_layout.py`` checks
the crop keeps all the ink).
"""
from __future__ import annotations

import argparse
import io
import statistics
import subprocess
import time

import numpy as np
from matplotlib.figure import Figure

from scansnap import plots
from scansnap.experiments import book_results


def before(fig):
    """The former _retina_png, as it was (the same quantize at the end)."""
    from IPython.core.pylabtools import print_figure
    from PIL import Image

    bbox = fig.get_tightbbox()
    dpi = plots.display_dpi(bbox.width + 0.1, fig.dpi)
    png = print_figure(fig, "png", bbox_inches="tight", pad_inches=0.05, dpi=2 * dpi)
    w, _ = Image.open(io.BytesIO(png)).size
    if w > 2 * plots.OUTPUT_PX:
        dpi *= (2 * plots.OUTPUT_PX - 1) / w
        png = print_figure(fig, "png", bbox_inches="tight", pad_inches=0.05, dpi=2 * dpi)
    buf = io.BytesIO()
    Image.open(io.BytesIO(png)).convert("RGB").quantize(colors=256, method=Image.Quantize.FASTOCTREE).save(buf, "png")
    return buf.getvalue()


def figures():
    R = book_results()
    f6, f12 = R["fig6"], R["fig12"]

    def line():
        fig = Figure(figsize=(6.8, 2.9), layout="constrained")
        a1, a2 = fig.subplots(1, 2)
        t = np.arange(300)
        for k in range(3):
            a1.semilogy(t, np.exp(-t / (50 + 30 * k)), label=f"run {k}")
            a2.plot(t, np.sin(t / (20 + k)))
        a1.legend(fontsize=9); a1.set_xlabel("step t"); a2.set_xlabel("step t")
        return fig

    return {
        "two line panels (6.8 x 2.9 in, constrained)": line,
        "Fig. 6: entropy_sweep (2 x 2 panels)": lambda: plots.entropy_sweep(
            f6["num_last"], f6["eta_z"], f6["ratio"], f6["entropy"]),
        "Fig. 12: recall_curves (2 x 2 panels)": lambda: plots.recall_curves(
            f12["num_last"], f12["eta_z"], f12["ratio"], f12["threshold"], f12["recall"], by="eta_z"),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--write", default=None)
    a = ap.parse_args()
    up0 = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    rows = []
    for name, make in figures().items():
        before(make()), plots._retina_png(make())              # warm-up (fonts, caches)
        t = {"before": [], "after": []}
        for _ in range(a.reps):
            for key, fn in (("before", before), ("after", plots._retina_png)):
                fig = make()
                c = time.process_time()
                fn(fig)
                t[key].append(time.process_time() - c)
        b, f = statistics.median(t["before"]), statistics.median(t["after"])
        rows.append(f"| {name} | {b * 1000:.0f} ms | {f * 1000:.0f} ms | {b / f:.2f} |")
    up1 = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    out = "\n".join([
        "# Inline figures: one render of the ink's box vs the tight-bbox render",
        "",
        f"Command: `python bench/bench_inline_png.py --reps {a.reps}`  ",
        f"Load before: `{up0}`; after: `{up1}`",
        "",
        "CPU time per figure (median of the reps; the figure is built fresh for each and not timed):",
        "",
        "| figure | before (tight bbox) | after (one render) | before / after |",
        "|---|---|---|---|",
        *rows, ""])
    print(out)
    if a.write:
        from pathlib import Path
        tmp = Path(a.write).with_suffix(".tmp")
        tmp.write_text(out)
        tmp.replace(a.write)


if __name__ == "__main__":
    main()
