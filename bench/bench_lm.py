"""Benchmark: the WikiText trainers (Figs. 7 and 10), measured against the machine's own
matrix-multiply peak, side by side in one process.

1. Peak: a large float32 GEMM (2048^3) and the decoder's three GEMMs (700 x 200 x V).
2. ``train_lm`` steps/s for 1 and 3 layers; FLOPs per step counted from the shapes (6 x
   multiply-adds: forward plus backward), so the achieved GFLOP/s and the floor of
   ``reproduce fig7`` + ``fig10`` follow.
3. Fig. 10's runs one at a time (``train_lm``) vs as one batched program (``train_lms``).
4. Steps/s against the vocabulary size V (random token ids; the cost does not depend on
   them), for the WikiText-103 extrapolation in RESULTS.md.
5. Optional (``--torch-ref``): tokens/s against torch.nn.TransformerEncoder, same setting.
6. Optional (``--before DIR``, a checkout of an earlier commit): ``experiments.fig7`` and
   ``fig10`` at a few steps, that commit's and this one's, each in a fresh subprocess,
   alternately (``--pairs`` times), in the same run.

    python bench/bench_lm.py [--steps 20] [--runs 5] [--vocab 10111 33278 267735] [--before DIR]
                             [--pairs 2] [--write FILE]
"""
from __future__ import annotations

import argparse
import math
import os
import subprocess
import time

import torch
import torch.nn as nn

from _checkout import run_at   # bench/_checkout.py: this script's folder is on sys.path
from scansnap.experiments import FIG7, FIG10, lm_runs, lm_workers, wikitext_data
from scansnap.lm import train_lm, train_lms
from scansnap.model import sinusoidal_encoding

D, DH, B, BPTT = 200, 200, 20, 35


def uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return "uptime: n/a"


def flops_per_step(V, layers, d=D, dh=DH, T=BPTT, N=B * BPTT):
    """6 x multiply-adds per step: projections 4d^2, scores and mixing 2Td, feed-forward 2 d dh
    per layer and token, the decoder dV per token; backward = 2 x forward."""
    return 6 * N * (layers * (4 * d * d + 2 * T * d + 2 * d * dh) + d * V)


class Clock:
    """Wall and CPU seconds (all threads) of a block. On a shared machine the wall time
    includes waiting for a core; CPU seconds count only the work (the other jobs still
    slow it through the shared caches and memory)."""

    def __enter__(self):
        self.w, self.c = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.wall, self.cpu = time.perf_counter() - self.w, time.process_time() - self.c


def gemm_rate(m, k, n, reps=5):
    """GFLOP per wall second and per CPU second of an (m x k) @ (k x n) float32 product."""
    a, b = torch.randn(m, k), torch.randn(k, n)
    torch.mm(a, b)
    with Clock() as c:
        for _ in range(reps):
            torch.mm(a, b)
    f = 2 * m * k * n * reps / 1e9
    return f / c.wall, f / c.cpu


def steps_per_second(ids, V, steps, layers=1):
    """Steps per wall second and per CPU second of train_lm (its setup, the init, cancels out)."""
    train_lm(ids, V, layers=layers, steps=2)                   # warm-up
    with Clock() as long:
        train_lm(ids, V, layers=layers, steps=steps + 2)
    with Clock() as short:
        train_lm(ids, V, layers=layers, steps=2)
    return steps / max(long.wall - short.wall, 1e-9), steps / max(long.cpu - short.cpu, 1e-9)


class TorchLM(nn.Module):
    """The PyTorch word-language-model tutorial's model: nn.TransformerEncoder inside."""

    def __init__(self, vocab, d=200, heads=1, layers=1, d_hidden=200, dropout=0.2):
        super().__init__()
        self.d = d
        self.U = nn.Embedding(vocab, d)
        self.register_buffer("pe", sinusoidal_encoding(512, d))
        layer = nn.TransformerEncoderLayer(d, heads, d_hidden, dropout, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.decoder = nn.Linear(d, vocab)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        T = x.shape[1]
        mask = nn.Transformer.generate_square_subsequent_mask(T, device=x.device)
        h = self.drop(self.U(x) * math.sqrt(self.d) + self.pe[:T])
        return self.decoder(self.encoder(h, mask=mask, is_causal=True)), None


def torch_ref_tokens_per_second(ids, V, steps, layers):
    from scansnap.model import EmbeddingTransformer
    from scansnap.wikitext import batchify
    data = batchify(ids, B)
    out = []
    for model in (EmbeddingTransformer(V, layers=layers), TorchLM(V, layers=layers)):
        opt = torch.optim.SGD(model.parameters(), lr=5.0)

        def step(i):
            j = (i % ((data.shape[0] - 1) // BPTT)) * BPTT
            logits, _ = model(data[j:j + BPTT].t())
            loss = nn.functional.cross_entropy(logits.reshape(-1, V), data[j + 1:j + 1 + BPTT].t().reshape(-1))
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            opt.step()
        for i in range(3):
            step(i)
        t = time.perf_counter()
        for i in range(steps):
            step(i)
        out.append(steps * B * BPTT / (time.perf_counter() - t))
    return out


def time_figures(checkout, steps, n_lrs):
    """(fig7 wall, fig10 wall, commit): ``fig7(steps=steps)`` (its 1- and 3-layer models) and
    ``fig10`` at its first ``n_lrs`` rates and first two seeds, ``steps`` each, at the commit
    checked out in ``checkout``, in a fresh process (imports and the data excluded)."""
    code = ("import time; from scansnap.experiments import FIG10, fig7, fig10, wikitext_data; wikitext_data(); "
            f"t = time.perf_counter(); fig7(steps={steps}); t7 = time.perf_counter() - t; "
            f"t = time.perf_counter(); fig10(lrs=FIG10['lrs'][:{n_lrs}], seeds=FIG10['seeds'][:2], steps={steps}); "
            "print(t7, time.perf_counter() - t)")
    (t7, t10), rev = run_at(checkout, code)
    print(f"{rev}: fig7 {t7:.1f} s, fig10 {t10:.1f} s", flush=True)
    return t7, t10, rev


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20, help="timed steps per measurement")
    ap.add_argument("--runs", type=int, default=5, help="runs in the batched-vs-one-at-a-time comparison")
    ap.add_argument("--vocab", type=int, nargs="*", default=[10111, 33278, 267735])
    ap.add_argument("--torch-ref", action="store_true", help="also compare with nn.TransformerEncoder")
    ap.add_argument("--before", help="a checkout of an earlier commit: its fig7 and fig10 timed beside this one's")
    ap.add_argument("--pairs", type=int, default=2, help="before/after pairs with --before")
    ap.add_argument("--fig-steps", type=int, default=40, help="steps a run in the --before comparison")
    ap.add_argument("--write", help="write the Markdown report to this file")
    a = ap.parse_args()
    tr, _, vocab = wikitext_data()
    V = len(vocab)
    lines = ["## WikiText trainers (Figs. 7, 10): against the machine's GEMM peak", "",
             f"Command: `python bench/bench_lm.py --steps {a.steps} --runs {a.runs}"
             + (f" --before {a.before} --pairs {a.pairs} --fig-steps {a.fig_steps}" if a.before else "") + "`  ",
             f"CPU, {os.cpu_count()} cores, {torch.get_num_threads()} torch threads, torch {torch.__version__}, "
             f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', 'unset')}; vocabulary {V} (shipped "
             f"WikiText-2, words seen >= 3 times), batch {B} x bptt {BPTT}, d = d_hidden = {D}.  ",
             f"Load before: `{uptime()}`", ""]

    peak = gemm_rate(2048, 2048, 2048)
    dec = [gemm_rate(B * BPTT, D, V), gemm_rate(B * BPTT, V, D), gemm_rate(V, B * BPTT, D)]
    lines += ["| GEMM (float32) | GFLOP per wall s | GFLOP per CPU s |", "|---|---|---|",
              f"| 2048 x 2048 x 2048 | {peak[0]:.0f} | {peak[1]:.0f} |",
              f"| decoder forward, 700 x 200 x {V} | {dec[0][0]:.0f} | {dec[0][1]:.0f} |",
              f"| decoder grad input, 700 x {V} x 200 | {dec[1][0]:.0f} | {dec[1][1]:.0f} |",
              f"| decoder grad weight, {V} x 700 x 200 | {dec[2][0]:.0f} | {dec[2][1]:.0f} |", ""]

    rows, sps = [], {}
    for L in (1, 3):
        sps[L] = steps_per_second(tr, V, a.steps, layers=L)
        f = flops_per_step(V, L) / 1e9
        rows.append(f"| {L} | {sps[L][0]:.2f} | {1 / sps[L][1]:.2f} | {f:.2f} | {sps[L][1] * f:.0f} | "
                    f"{100 * sps[L][1] * f / peak[1]:.0f}% |")
    lines += ["| layers | steps per wall s | CPU s a step | GFLOP a step | GFLOP per CPU s | of the 2048^3 rate |",
              "|---|---|---|---|---|---|", *rows, ""]
    n10 = len(FIG10["lrs"]) * len(FIG10["seeds"]) * FIG10["steps"]
    total_f = FIG7["steps"] * (flops_per_step(V, 1) + flops_per_step(V, 3)) + n10 * flops_per_step(V, 1)
    cpu_s = FIG7["steps"] * (1 / sps[1][1] + 1 / sps[3][1]) + n10 / sps[1][1]
    lines += [f"Figs. 7 + 10 (1,500 + 1,500 steps; 25 x 300 steps): {total_f / 1e12:.1f} TFLOP, "
              f"{cpu_s / 60:.0f} CPU-minutes at the CPU-second rates above: **{cpu_s / 120:.1f} min** on two "
              f"cores kept busy. At the 2048^3 rate for every FLOP: **{total_f / peak[1] / 1e9 / 120:.1f} min** "
              f"(the floor on this CPU).", ""]

    R = a.runs
    lrs, seeds = [float(x) for x in range(1, R + 1)], list(range(1, R + 1))
    train_lms(tr, V, lrs[:2], seeds[:2], steps=2)
    with Clock() as one:
        for lr, s in zip(lrs, seeds):
            train_lm(tr, V, lr=lr, seed=s, steps=a.steps)
    with Clock() as many:
        train_lms(tr, V, lrs, seeds, steps=a.steps)
    workers = lm_workers(None, R, torch.device("cpu"))
    with Clock() as side:
        lm_runs(lambda run, stop: train_lm(tr, V, lr=run[0], seed=run[1], steps=a.steps, stop=stop),
                list(zip(lrs, seeds)), workers)
    lines += [f"Fig. 10's runs, {R} runs x {a.steps} steps: one at a time (`train_lm`, {torch.get_num_threads()} "
              f"torch threads) {one.wall:.1f} s wall, {one.cpu:.1f} s CPU; as one batched program (`train_lms`) "
              f"{many.wall:.1f} s wall, {many.cpu:.1f} s CPU: batched / one at a time = "
              f"**{many.wall / one.wall:.2f}** wall, **{many.cpu / one.cpu:.2f}** CPU (above 1: slower); "
              f"side by side ({workers} runs at a time, one torch thread each: `experiments.lm_runs`, what "
              f"`fig7` and `fig10` do on a CPU) {side.wall:.1f} s wall, {side.cpu:.1f} s CPU: one at a time / side "
              f"by side = **{one.wall / side.wall:.2f}x** wall.", ""]

    rows = []
    for v in a.vocab:
        ids = torch.randint(0, v, (tr.numel(),), generator=torch.Generator().manual_seed(0))
        s = steps_per_second(ids, v, max(3, a.steps // 4))
        f = flops_per_step(v, 1) / 1e9
        rows.append(f"| {v:,} | {f:.1f} | {1 / s[1]:.2f} | {s[1] * f:.0f} |")
    lines += ["| vocabulary V (1 layer) | GFLOP a step | CPU s a step | GFLOP per CPU s |", "|---|---|---|---|",
              *rows, ""]

    if a.before:
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        t = {"before": [], "after": []}
        for _ in range(a.pairs):
            t["before"].append(time_figures(a.before, a.fig_steps, 3))
            t["after"].append(time_figures(here, a.fig_steps, 3))
        rows = []
        for k in ("before", "after"):
            for f7, f10, rev in t[k]:
                rows.append(f"| {k}, `{rev}` | {f7:.1f} s | {f10:.1f} s |")
        b7, b10 = (min(x[i] for x in t["before"]) for i in (0, 1))
        n7, n10 = (min(x[i] for x in t["after"]) for i in (0, 1))
        lines += [f"Figs. 7 and 10 as `reproduce` trains them, before and after, at {a.fig_steps} steps a run "
                  f"(`fig7(steps={a.fig_steps})`: its 1- and 3-layer models; `fig10` at rates 1-3 and seeds 1-2: "
                  f"6 runs), each a fresh process, alternately, {a.pairs} of each:", "",
                  "| commit | fig7 | fig10 (6 runs) |", "|---|---|---|", *rows, "",
                  f"Best of each: before / after = **{b7 / n7:.2f}x** (Fig. 7), **{b10 / n10:.2f}x** (Fig. 10).", ""]

    if a.torch_ref:
        rows = []
        for L in (1, 3):
            ours, ref = torch_ref_tokens_per_second(tr, V, a.steps, L)
            rows.append(f"| {L} | {ours:,.0f} | {ref:,.0f} | {ours / ref:.2f} |")
        lines += ["| layers | scansnap (tokens/s) | nn.TransformerEncoder (tokens/s) | ratio |", "|---|---|---|---|",
                  *rows, ""]
    lines += [f"Load after: `{uptime()}`", ""]
    text = "\n".join(lines)
    print(text)
    if a.write:
        with open(a.write, "w") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
