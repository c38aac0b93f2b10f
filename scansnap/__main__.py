"""Command line: ``python -m scansnap reproduce fig4 --out DIR`` (see ``--help``)."""
from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

import numpy as np

FIGURES = ("fig4", "fig6")


def _seeds(text: str):
    """'1-10' or '1,2,5' -> a tuple of ints."""
    try:
        if "-" in text:
            a, b = text.split("-")
            out = tuple(range(int(a), int(b) + 1))
        else:
            out = tuple(int(s) for s in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"seeds must look like '1-10' or '1,2,5', got {text!r}")
    if not out:
        raise argparse.ArgumentTypeError(f"no seeds in {text!r}")
    return out


def _write_csv(path, header, rows):
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)


def reproduce_fig4(out: Path, device: str, steps: int):
    from .experiments import fig4
    from .plots import cn_over_training
    classes, res = fig4(device=device, steps=steps,
                        snapshot_steps=[s for s in (0, 5, 10, 20, 50, 100) if s <= steps])
    _write_csv(out / "fig4.csv", ["step", "loss"],
               [(s, f"{l:.10g}") for s, l in enumerate(res.loss[0])])
    snaps = {s: z[0].numpy() for s, z in res.snapshots.items()}
    cn_over_training(classes, snaps, n=0, loss=res.loss[0]).savefig(out / "fig4.png", dpi=120)
    return f"final loss {res.loss[0, -1]:.3g}"


def reproduce_fig6(out: Path, device: str, steps: int, seeds):
    from .experiments import fig6
    from .plots import entropy_sweep
    r = fig6(seeds=seeds, device=device, progress=True, steps=steps)
    _write_csv(out / "fig6.csv", ["num_last", "eta_z", "ratio", "seed", "entropy"],
               [(int(a), f"{b:g}", f"{c:g}", int(d), f"{e:.10g}")
                for a, b, c, d, e in zip(r["num_last"], r["eta_z"], r["ratio"], r["seed"], r["entropy"])])
    entropy_sweep(r["num_last"], r["eta_z"], r["ratio"], r["entropy"]).savefig(out / "fig6.png", dpi=120)
    return f"{len(r['entropy'])} runs, entropy {r['entropy'].min():.3f}..{r['entropy'].max():.3f}"


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m scansnap",
                                description="Re-run the experiments of 'Scan and Snap' (Tian et al., NeurIPS 2023).")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("reproduce", help="re-run one figure of the paper and write its PNG and CSV")
    r.add_argument("figure", choices=FIGURES, help="which figure")
    r.add_argument("--out", type=Path, required=True, help="output folder (created if missing)")
    r.add_argument("--device", default="auto", help="'auto' (CUDA when present), 'cpu', 'cuda', 'cuda:N'")
    r.add_argument("--steps", type=int, default=100, help="SGD steps per run (paper: 100)")
    r.add_argument("--seeds", type=_seeds, default=tuple(range(1, 11)),
                   help="fig6 seeds, e.g. '1-10' (paper) or '1,2'")
    a = p.parse_args(argv)
    from ._validate import resolve_device, positive_int
    try:
        device = str(resolve_device(a.device))
        positive_int("steps", a.steps)
    except ValueError as e:
        p.error(str(e))
    a.out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    if a.figure == "fig4":
        msg = reproduce_fig4(a.out, device, a.steps)
    else:
        msg = reproduce_fig6(a.out, device, a.steps, a.seeds)
    print(f"{a.figure}: {msg}; wrote {a.out / (a.figure + '.csv')} and {a.out / (a.figure + '.png')} "
          f"in {time.perf_counter() - t0:.1f} s on {device}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
