"""Benchmark: the whole Fig. 6 sweep (640 runs x 100 steps), batched vs a plain per-run loop.

The baseline is the paper's setting read plainly (the authors' Model2): one model per run,
two nn.Linear(M, M) for Y and Z, one-hot batches of token sequences (B, T, M), batch-mean
cross-entropy, autograd and two torch.optim.SGD optimisers (momentum 0.9). Its batches are
drawn with one vectorised torch.multinomial call per step (kinder than the authors'
per-sequence Python loop). It is timed on a few runs per num_last and scaled to 160 runs.

    python bench/bench_fig6.py [--baseline-runs 2] [--write bench/RESULTS.md]
"""
from __future__ import annotations

import argparse
import platform
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from scansnap.data import sample_tokens, syn_medium
from scansnap.experiments import COMMON, FIG6, fig6
from scansnap.train import lr_grid


class PlainModel(nn.Module):
    """Eq. 1-2 in the (Y, Z) variables, one run, on one-hot sequences."""

    def __init__(self, M):
        super().__init__()
        self.M = M
        self.K1 = nn.Linear(M, M, bias=False)   # Y^T
        self.K2 = nn.Linear(M, M, bias=False)   # Z

    def forward(self, x, label):
        X = F.one_hot(x, self.M).float()
        Xk = X[:, :-1]
        scores = torch.bmm(self.K2(Xk), X[:, -1, :, None]).squeeze(2)
        b = torch.softmax(scores, 1)
        v = torch.bmm(b[:, None], Xk).squeeze(1)
        return F.cross_entropy(self.K1(v / v.norm(dim=1, keepdim=True)), label)


def baseline_run(classes, eta_y, eta_z, seed, steps, batch, T):
    torch.manual_seed(seed)
    model = PlainModel(classes.M)
    oy = torch.optim.SGD(model.K1.parameters(), lr=eta_y, momentum=0.9)
    oz = torch.optim.SGD(model.K2.parameters(), lr=eta_z, momentum=0.9)
    g = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        tb = sample_tokens(classes, batch, T, g)
        oy.zero_grad(); oz.zero_grad()
        loss = model(tb.tokens, tb.labels)
        loss.backward()
        oy.step(); oz.step()
    return float(loss)


def check_same_computation():
    """The baseline computes what YZModel computes: same weights, same batch, same loss."""
    from scansnap.model import YZModel
    c = syn_medium(3)
    torch.manual_seed(0)
    plain = PlainModel(c.M)
    yz = YZModel(c.M, 1)
    with torch.no_grad():
        yz.Y[0] = plain.K1.weight.T
        yz.Z[0] = plain.K2.weight
    tb = sample_tokens(c, 64, 128, torch.Generator().manual_seed(1))
    a = float(plain(tb.tokens, tb.labels))
    b = float(YZModel.loss(yz.forward_tokens(tb.tokens), tb.labels)[0])
    assert abs(a - b) < 1e-5, (a, b)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline-runs", type=int, default=2, help="baseline runs timed per num_last")
    ap.add_argument("--write", help="write a Markdown report here")
    a = ap.parse_args()
    check_same_computation()

    t0 = time.perf_counter()
    res = fig6()
    t_batched = time.perf_counter() - t0
    n_runs = len(res["entropy"])

    ey, ez, sd = lr_grid(FIG6["eta_z"], FIG6["ratio"], FIG6["seeds"])
    per_group = len(ey)
    t_base, lines = 0.0, []
    for nl in FIG6["num_last"]:
        c = syn_medium(nl)
        t1 = time.perf_counter()
        for r in range(a.baseline_runs):
            i = (r * 37) % per_group                 # a spread of settings
            baseline_run(c, ey[i], ez[i], int(sd[i]), COMMON["steps"], COMMON["batch"], COMMON["T"])
        dt = (time.perf_counter() - t1) / a.baseline_runs
        t_base += dt * per_group
        lines.append(f"| {nl} | {c.M} | {dt:.3f} s | {dt * per_group:.1f} s |")
    ratio = t_base / t_batched
    report = "\n".join([
        "## Fig. 6 sweep: batched trainer vs a per-run loop",
        "",
        f"Command: `python bench/bench_fig6.py --baseline-runs {a.baseline_runs}`  ",
        f"Machine: {platform.processor() or platform.machine()}, {torch.get_num_threads()} torch threads, "
        f"torch {torch.__version__}, CPU.",
        "",
        f"- batched (`scansnap.experiments.fig6`, {n_runs} runs x {COMMON['steps']} steps, all of it): "
        f"**{t_batched:.1f} s**",
        f"- per-run baseline ({a.baseline_runs} runs timed per num_last, scaled to {per_group} each): "
        f"**{t_base:.0f} s**",
        f"- speed-up: **{ratio:.0f}x**",
        "",
        "| num_last | M | baseline per run | baseline x 160 |",
        "|---|---|---|---|",
        *lines,
        "",
    ])
    print(report)
    if a.write:
        with open(a.write, "w") as fh:
            fh.write("# Benchmarks\n\nFigures measured by the commands shown; re-run `make bench` to refresh.\n\n")
            fh.write(report)


if __name__ == "__main__":
    main()
