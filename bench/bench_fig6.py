"""Benchmark: the whole Fig. 6 sweep (640 runs x 100 steps), side by side in one process:

- ``before`` (with ``--before DIR``): the sweep of an earlier commit checked out in DIR, in a
  subprocess of the same run;
- ``fast``: the default sweep, ``train(path="support")``: Lemma 1 on each class's ~20 support
  tokens, batches counted over the support (the tokens torch.multinomial draws), the runs
  split over the cores (``train(workers=...)``); ``one thread``: the same in one Python thread;
- ``dense``: the batched trainer before it, ``train(path="counts")``: counts and products
  over all M tokens (kept as the reference the support path is tested against);
- ``per-run``: the paper's setting read plainly (the authors' Model2): one model per run,
  two nn.Linear(M, M) for Y and Z, one-hot batches of token sequences (B, T, M), batch-mean
  cross-entropy, autograd and two torch.optim.SGD optimisers (momentum 0.9). Its batches
  are drawn with one vectorised torch.multinomial call per step (kinder than the authors'
  per-sequence Python loop). It is timed on a few runs per num_last and scaled to 160 runs.

Times are wall-clock and CPU seconds of the training calls (imports and plots excluded);
``uptime`` is printed beside them: on a shared machine, compare ratios, not seconds.

    python bench/bench_fig6.py [--baseline-runs 2] [--steps 100] [--profile] [--before DIR] [--write FILE]
"""
from __future__ import annotations

import argparse
import os
import platform
import subprocess
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from _checkout import run_at   # bench/_checkout.py: this script's folder is on sys.path
from scansnap.data import sample_tokens, syn_medium
from scansnap.experiments import COMMON, FIG6, fig6, syn_medium_sweep
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
        oy.zero_grad()
        oz.zero_grad()
        loss = model(tb.tokens, tb.labels)
        loss.backward()
        oy.step()
        oz.step()
    return loss.item()


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
    a = plain(tb.tokens, tb.labels).item()
    b = YZModel.loss(yz.forward_tokens(tb.tokens), tb.labels)[0].item()
    assert abs(a - b) < 1e-5, (a, b)


def uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return "uptime: n/a"


def timed(fn):
    t, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - t, time.process_time() - c


def profile_table(path, nl=10, steps=10, rows=12):
    """Where one num_last's training time goes: torch.profiler's top operators (self time)."""
    from torch.profiler import ProfilerActivity, profile
    from scansnap.train import train
    ey, ez, sd = lr_grid(FIG6["eta_z"], FIG6["ratio"], FIG6["seeds"])
    c = syn_medium(nl)
    kw = dict(COMMON, init="default", steps=steps, path=path, workers=1)   # the profiler sees this thread
    train(c, eta_y=ey, eta_z=ez, seeds=sd, **dict(kw, steps=2))
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        train(c, eta_y=ey, eta_z=ez, seeds=sd, **kw)
    ev = sorted(prof.key_averages(), key=lambda e: -e.self_cpu_time_total)
    total = sum(e.self_cpu_time_total for e in ev)
    lines = [f"| {e.key} | {e.count // steps} | {100 * e.self_cpu_time_total / total:.0f}% |" for e in ev[:rows]]
    return ["| operator | calls a step | share of self time |", "|---|---|---|", *lines]


def time_before(checkout, steps):
    """(wall, CPU, commit) of the whole sweep at an earlier commit, imports excluded."""
    code = ("import time, torch; from scansnap.experiments import syn_medium_sweep; "
            "t, c = time.perf_counter(), time.process_time(); "
            f"syn_medium_sweep(steps={steps}); "
            "print(time.perf_counter() - t, time.process_time() - c)")
    (wall, cpu), rev = run_at(checkout, code)
    print(f"before ({rev}): {wall:.1f} s wall, {cpu:.1f} s CPU", flush=True)
    return wall, cpu, rev


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline-runs", type=int, default=2, help="per-run baseline runs timed per num_last")
    ap.add_argument("--steps", type=int, default=COMMON["steps"], help="steps per run (paper: 100)")
    ap.add_argument("--profile", action="store_true", help="add where the time goes (torch.profiler, num_last 10)")
    ap.add_argument("--write", help="write the Markdown report to this file")
    ap.add_argument("--before", help="a checkout of an earlier commit (git worktree): its sweep is timed "
                                     "in a subprocess in the same run, as the 'before' row")
    a = ap.parse_args()
    check_same_computation()
    steps = a.steps
    up0 = uptime()

    # "fast": the sweep as `reproduce fig6` runs it (support path, runs split over the cores);
    # "one thread": the same in one Python thread (torch's own intra-op threads only);
    # "dense": every num_last on the counts path. Timed per num_last; "fast" twice.
    sweeps, times = {}, {}
    before = time_before(a.before, steps) if a.before else None
    for label, kw in (("fast", {}), ("one thread", dict(workers=1)), ("dense", dict(path="counts")), ("fast", {})):
        sw, per_nl = {}, []
        for nl in FIG6["num_last"]:
            part, wall, cpu = timed(lambda: syn_medium_sweep(num_last=(nl,), steps=steps, **kw))
            sw.update(part)
            per_nl.append((wall, cpu))
        sweeps[label] = sw
        times.setdefault(label, []).append(per_nl)
        print(f"{label}: {sum(w for w, _ in per_nl):.1f} s wall, {sum(c for _, c in per_nl):.1f} s CPU  "
              f"[{uptime()}]", flush=True)
    ent = {p: fig6(sweep=sweeps[p])["entropy"] for p in sweeps}
    d_ent = float(np.abs(ent["fast"] - ent["dense"]).max())
    n_runs = len(ent["fast"])

    ey, ez, sd = lr_grid(FIG6["eta_z"], FIG6["ratio"], FIG6["seeds"])
    per_group = len(ey)
    t_base, lines = 0.0, []
    baseline_run(syn_medium(1), 1.0, 1.0, 1, 2, 8, 8)        # warm-up: first calls are slow
    for nl in FIG6["num_last"]:
        c = syn_medium(nl)
        t1 = time.perf_counter()
        for r in range(a.baseline_runs):
            i = (r * 37) % per_group                 # a spread of settings
            baseline_run(c, ey[i], ez[i], int(sd[i]), steps, COMMON["batch"], COMMON["T"])
        dt = (time.perf_counter() - t1) / a.baseline_runs
        t_base += dt * per_group
        lines.append(f"| {nl} | {c.M} | {dt:.3f} s | {dt * per_group:.1f} s |")
    up1 = uptime()
    tot = {k: [(sum(w for w, _ in r), sum(c for _, c in r)) for r in v] for k, v in times.items()}
    best = min(range(len(tot["fast"])), key=lambda k: tot["fast"][k][0])
    fast, dense = tot["fast"][best], tot["dense"][0]
    per_nl = [f"| {nl} | {syn_medium(nl).M} | {sweeps['fast'][nl][1].config['path']} | "
              f"{d[0]:.1f} s / {d[1]:.1f} s | {f[0]:.1f} s / {f[1]:.1f} s | {d[1] / f[1]:.1f}x |"
              for nl, d, f in zip(FIG6["num_last"], times["dense"][0], times["fast"][best])]
    report = [
        "## Fig. 6 sweep: support path vs dense batched trainer vs a per-run loop",
        "",
        f"Command: `python bench/bench_fig6.py --baseline-runs {a.baseline_runs}"
        + (f" --steps {steps}" if steps != COMMON["steps"] else "") + (" --profile" if a.profile else "") + "`  ",
        f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, {torch.get_num_threads()} torch threads, "
        f"torch {torch.__version__}, OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', 'unset')}.  ",
        f"Load before: `{up0}`  ",
        f"Load after: `{up1}`",
        "",
        f"| trainer ({n_runs} runs x {steps} steps) | wall | CPU | speed-up vs per-run loop (wall) |",
        "|---|---|---|---|",
        *([f"| before: `syn_medium_sweep()` at `{before[2]}` (a subprocess, same run) | {before[0]:.1f} s | "
           f"{before[1]:.1f} s | {t_base / before[0]:.0f}x |"] if before else []),
        *[f"| `syn_medium_sweep()`: support path, runs split over the cores (run {k + 1}) | {w:.1f} s | {c:.1f} s | "
          f"{t_base / w:.0f}x |" for k, (w, c) in enumerate(tot["fast"])],
        f"| `syn_medium_sweep(workers=1)`: the same in one thread | {tot['one thread'][0][0]:.1f} s | "
        f"{tot['one thread'][0][1]:.1f} s | {t_base / tot['one thread'][0][0]:.0f}x |",
        f"| `syn_medium_sweep(path=\"counts\")`: dense counts path | {dense[0]:.1f} s | {dense[1]:.1f} s | "
        f"{t_base / dense[0]:.0f}x |",
        f"| per-run loop ({a.baseline_runs} runs per num_last, scaled to {per_group}) | {t_base:.0f} s | | 1x |",
        "",
        f"Fast vs dense: **{dense[0] / fast[0]:.1f}x** wall, **{dense[1] / fast[1]:.1f}x** CPU (best fast run); "
        f"fast vs the per-run loop: **{t_base / fast[0]:.0f}x** wall. Largest difference of the 640 Fig. 6 "
        f"entropies between the two (float32; the order of summation differs): {d_ent:.1e}. "
        f"Split over the cores vs one thread: **{tot['one thread'][0][0] / fast[0]:.2f}x** wall; the entropies "
        f"are bit-for-bit the same: {bool(np.array_equal(ent['fast'], ent['one thread']))}."
        + (f" Fast vs before: **{before[0] / fast[0]:.2f}x** wall, {before[1] / fast[1]:.2f}x CPU." if before else ""),
        "",
        "| num_last | M | fast path | dense: wall / CPU | fast: wall / CPU | CPU ratio |",
        "|---|---|---|---|---|---|",
        *per_nl,
        "",
        "| num_last | M | per-run loop, one run | x 160 |",
        "|---|---|---|---|",
        *lines,
        "",
    ]
    if a.profile:
        for path in ("counts", "support"):
            report += [f"Where the time goes, `path=\"{path}\"`, num_last 10 (torch.profiler, self time):", "",
                       *profile_table(path), ""]
    text = "\n".join(report)
    print(text)
    if a.write:
        with open(a.write, "w") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
