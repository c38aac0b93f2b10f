"""Benchmark on a GPU machine: the Fig. 6 sweep, Fig. 10 and `reproduce all` with
``--device cuda``, timed against the same machine's CPU in the same run (issue 12).

1. Fig. 6 sweep (640 runs x 100 steps): ``syn_medium_sweep`` on the CPU (all its cores) and on
   CUDA (support path as `reproduce` runs it, and the dense counts path); the mean Fig. 6
   entropy per num_last on each device (different random streams: equal in distribution).
2. Fig. 10 at the paper's settings (25 runs x 300 steps, 1 layer, the shipped WikiText-2):
   on CUDA as one batched program (`train_lms`, the default there) and one run at a time;
   on the CPU one run's steps/s, extrapolated to the 25 runs (said so in the table).
3. One step of the 1-layer model against the vocabulary size (random ids; the cost does not
   depend on them) on CUDA, float32 and with TF32 matrix products, for the WikiText-103 grid
   in RESULTS.md.
4. ``python -m scansnap reproduce all --device cuda`` (unless ``--no-all``), timed whole, with
   each figure's own time from its output.

Every CUDA timing synchronises before the clock stops, after a warm-up (kernels compile and
the allocator fills on first use).

    python bench/bench_gpu.py [--write FILE] [--json FILE] [--no-all] [--all-out DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time

import numpy as np
import torch

DEV = os.environ.get("BENCH_GPU_DEVICE", "cuda")   # "cpu" only to dry-run this script's code (with --quick)
QUICK: dict = {}                                    # --quick: a few steps of everything, numbers meaningless


def sync():
    if DEV != "cpu":
        torch.cuda.synchronize()


def timed(fn):
    sync()
    t, c = time.perf_counter(), time.process_time()
    out = fn()
    sync()
    return out, time.perf_counter() - t, time.process_time() - c


def fig6_section(rec):
    from scansnap.experiments import FIG6, fig6, syn_medium_sweep
    syn_medium_sweep(num_last=(3,), eta_z=(1.0,), ratio=(1.0,), seeds=(1,), steps=2, device=DEV)  # warm-up
    syn_medium_sweep(num_last=(1,), eta_z=(1.0,), ratio=(1.0,), seeds=(1,), steps=2, device=DEV)
    rows, ent = [], {}
    for label, dev, kw in (("cuda, support path (as `reproduce fig6`)", "cuda", {}),
                           ("cuda, support path, again", "cuda", {}),
                           ("cuda, dense counts path", "cuda", dict(path="counts")),
                           (f"cpu ({torch.get_num_threads()} threads), support path", "cpu", {})):
        sw, wall, cpu = timed(lambda: syn_medium_sweep(device=DEV if dev == "cuda" else dev, **kw, **QUICK.get("fig6", {})))
        f = fig6(sweep=sw, **{k: v for k, v in QUICK.get("fig6", {}).items() if k == "seeds"})
        ent[label] = {int(nl): float(f["entropy"][f["num_last"] == nl].mean()) for nl in FIG6["num_last"]}
        assert np.all(np.isfinite(f["entropy"])), label
        rows.append((label, wall, cpu, len(f["entropy"])))
        print(f"fig6 {label}: {wall:.2f} s wall, {cpu:.2f} s CPU", flush=True)
    rec["fig6"] = {"rows": rows, "mean_entropy": ent}


def _steps_per_s(ids, V, steps, device, layers=1):
    from scansnap.lm import train_lm
    train_lm(ids, V, layers=layers, steps=2, device=device)                   # warm-up
    _, long, _ = timed(lambda: train_lm(ids, V, layers=layers, steps=steps + 2, device=device))
    _, short, _ = timed(lambda: train_lm(ids, V, layers=layers, steps=2, device=device))
    return steps / max(long - short, 1e-9)


def fig10_section(rec, cpu_steps):
    from scansnap.experiments import FIG10, fig10, wikitext_data
    tr, va, vocab = wikitext_data("shipped")
    V = len(vocab)
    fig10(lrs=FIG10["lrs"][:2], seeds=FIG10["seeds"][:1], steps=3, device=DEV)          # warm-up
    fig10(lrs=FIG10["lrs"][:2], seeds=FIG10["seeds"][:1], steps=3, device=DEV, batched=False)
    q = QUICK.get("fig10", {})
    b, wb, _ = timed(lambda: fig10(device=DEV, batched=True, **q))
    print(f"fig10 cuda batched: {wb:.1f} s", flush=True)
    o, wo, _ = timed(lambda: fig10(device=DEV, batched=False, **q))
    print(f"fig10 cuda one at a time: {wo:.1f} s", flush=True)
    d_ent = max(abs(x[2] - y[2]) for x, y in zip(b, o))
    d_loss = max(abs(x[3] - y[3]) for x, y in zip(b, o))
    cpu_sps = _steps_per_s(tr, V, cpu_steps, "cpu")
    cuda_sps = _steps_per_s(tr, V, 2 if q else 50, DEV)
    n_steps = len(b) * q.get("steps", FIG10["steps"])
    rec["fig10"] = {"V": V, "runs": len(b), "steps": q.get("steps", FIG10["steps"]), "cuda_batched_s": wb, "cuda_one_at_a_time_s": wo,
                    "max_entropy_diff": d_ent, "max_loss_diff": d_loss, "cpu_steps_per_s": cpu_sps,
                    "cpu_steps_timed": cpu_steps, "cuda_steps_per_s_one_run": cuda_sps,
                    "cpu_extrapolated_s": n_steps / cpu_sps, "rows_batched": b, "rows_one_at_a_time": o}
    print(f"fig10 cpu: {cpu_sps:.2f} steps/s -> {n_steps / cpu_sps:.0f} s for the 25 runs (extrapolated)", flush=True)


def fig10_precision_section(rec, runs=((5.0, 1), (5.0, 2), (1.0, 1))):
    """Batched vs one at a time at Fig. 10's full size on CUDA, float64 and float32: the same
    arithmetic (float64 agrees to rounding), while 300 float32 SGD steps amplify the two
    programs' different rounding (bmm vs mm kernels) into differences of the size of the
    seed-to-seed spread. Not a wrong number: two roundings of one chaotic computation."""
    from scansnap.experiments import FIG10, validation_attention_entropy, wikitext_data
    from scansnap.lm import train_lm, train_lms
    tr, va, vocab = wikitext_data("shipped")
    steps = QUICK.get("fig10", {}).get("steps", FIG10["steps"])
    out = {}
    for dtype in (torch.float64, torch.float32):
        many = train_lms(tr, len(vocab), [r[0] for r in runs], [r[1] for r in runs], layers=1, steps=steps,
                         device=DEV, dtype=dtype)
        d_loss = d_ent = d_w = 0.0
        for (lr, seed), got in zip(runs, many):
            one = train_lm(tr, len(vocab), layers=1, lr=lr, seed=seed, steps=steps, device=DEV, dtype=dtype)
            d_loss = max(d_loss, float(np.abs(got.loss - one.loss).max()))
            d_w = max(d_w, max(float((p - q).detach().abs().max()) for p, q in zip(got.model.parameters(), one.model.parameters())))
            d_ent = max(d_ent, abs(validation_attention_entropy(got.model.float(), va)
                                   - validation_attention_entropy(one.model.float(), va)))
        out[str(dtype).replace("torch.", "")] = {"loss": d_loss, "weights": d_w, "entropy": d_ent}
        print(f"fig10 batched vs one at a time, {dtype}: loss {d_loss:.1e}, weights {d_w:.1e}, entropy {d_ent:.1e}",
              flush=True)
    rec["fig10_precision"] = {"runs": [list(r) for r in runs], "steps": steps, "max_diff": out}


def fig10_divergence_section(rec, runs=((5.0, 1), (1.0, 2)), marks=(0, 1, 2, 5, 10, 20, 50, 100, 200, 299)):
    """Where batched and one-at-a-time part, step by step (float64, full size): with dropout and
    without. A jump at one step points at a different random draw; a steady growth from
    rounding points at chaos (nearby trajectories of SGD separating)."""
    from scansnap.experiments import FIG10, wikitext_data
    from scansnap.lm import train_lm, train_lms
    tr, _, vocab = wikitext_data("shipped")
    steps = QUICK.get("fig10", {}).get("steps", FIG10["steps"])
    out = {}
    for p in (0.2, 0.0):
        many = train_lms(tr, len(vocab), [r[0] for r in runs], [r[1] for r in runs], layers=1, steps=steps,
                         device=DEV, dtype=torch.float64, dropout=p)
        diffs = []
        for (lr, seed), got in zip(runs, many):
            one = train_lm(tr, len(vocab), layers=1, lr=lr, seed=seed, steps=steps, device=DEV,
                           dtype=torch.float64, dropout=p)
            diffs.append(np.abs(got.loss - one.loss))
        d = np.max(diffs, 0)
        first = int(np.argmax(d > 1e-9)) if np.any(d > 1e-9) else None
        out[str(p)] = {"first_step_over_1e-9": first, "at": {int(k): float(d[k]) for k in marks if k < steps}}
        print(f"dropout {p}: first step with |loss diff| > 1e-9: {first}; "
              + ", ".join(f"{k}: {d[k]:.0e}" for k in marks if k < steps), flush=True)
    rec["fig10_divergence"] = {"runs": [list(r) for r in runs], "by_dropout": out}


def vocab_section(rec, vocabs, steps=30):
    from scansnap.experiments import wikitext_data
    tr, _, _ = wikitext_data("shipped")
    out = []
    for tf32 in (False, True):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        if tf32 and QUICK:
            continue
        for v in vocabs:
            ids = torch.randint(0, v, (tr.numel(),), generator=torch.Generator().manual_seed(0))
            sps = _steps_per_s(ids, v, 2 if QUICK else steps, DEV)
            gflop = 6 * 700 * (4 * 200 * 200 + 2 * 35 * 200 + 2 * 200 * 200 + 200 * v) / 1e9
            out.append({"V": v, "tf32": tf32, "ms_per_step": 1e3 / sps, "gflop": gflop,
                        "tflop_per_s": gflop * sps / 1e3})
            print(f"V={v} tf32={tf32}: {1e3 / sps:.2f} ms a step, {gflop * sps / 1e3:.1f} TFLOP/s", flush=True)
    torch.backends.cuda.matmul.allow_tf32 = False
    rec["vocab"] = out


def all_section(rec, out_dir):
    cmd = [sys.executable, "-m", "scansnap", "reproduce", "all", "--device", "cuda", "--out", out_dir]
    t = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t
    text = p.stdout + p.stderr
    per = {m.group(1): float(m.group(2)) for m in re.finditer(r"^(\w+): wrote .* in ([0-9.]+) s", text, re.M)}
    rec["reproduce_all"] = {"cmd": " ".join(cmd[1:]), "rc": p.returncode, "wall_s": wall, "per_figure_s": per,
                            "tail": text[-3000:]}
    print(f"reproduce all --device cuda: rc {p.returncode}, {wall:.1f} s; {per}", flush=True)


def report(rec) -> str:
    m = rec["machine"]
    L = ["## On a GPU: `--device cuda` against the same machine's CPU", "",
         f"Command: `python bench/bench_gpu.py` on {m['gpu']} ({m['cpus']} CPU cores, torch {m['torch']}, "
         f"CUDA {m['cuda']}, {m['threads']} torch CPU threads), {m['date']}.", ""]
    if "fig6" in rec:
        f = rec["fig6"]
        cpu = [r for r in f["rows"] if r[0].startswith("cpu")][0]
        L += ["**Fig. 6 sweep** (640 runs x 100 steps; `syn_medium_sweep(device=...)`):", "",
              "| device, path | wall | CPU | vs this machine's CPU (wall) |", "|---|---|---|---|",
              *[f"| {r[0]} | {r[1]:.2f} s | {r[2]:.2f} s | {cpu[1] / r[1]:.1f}x |" for r in f["rows"]], "",
              "Mean Fig. 6 entropy per num_last on each device (different random streams; equal in distribution):", "",
              "| num_last | " + " | ".join(f["mean_entropy"]) + " |", "|---" * (1 + len(f["mean_entropy"])) + "|",
              *[f"| {nl} | " + " | ".join(f"{e[nl]:.3f}" for e in f["mean_entropy"].values()) + " |"
                for nl in next(iter(f["mean_entropy"].values()))], ""]
    if "fig10" in rec:
        g = rec["fig10"]
        L += [f"**Fig. 10** at the paper's settings ({g['runs']} runs x {g['steps']} steps, 1 layer, V = {g['V']}, "
              "validation entropy included):", "",
              "| how | time | vs CPU |", "|---|---|---|",
              f"| CPU, one run at a time ({g['cpu_steps_per_s']:.2f} steps/s over {g['cpu_steps_timed']} steps, "
              f"x {g['runs'] * g['steps']} steps: **extrapolated**, training only) | {g['cpu_extrapolated_s']:.0f} s | 1x |",
              f"| CUDA, one run at a time (`fig10(device='cuda', batched=False)`) | {g['cuda_one_at_a_time_s']:.1f} s | "
              f"{g['cpu_extrapolated_s'] / g['cuda_one_at_a_time_s']:.0f}x |",
              f"| CUDA, one batched program (`fig10(device='cuda')`, the default there) | {g['cuda_batched_s']:.1f} s | "
              f"{g['cpu_extrapolated_s'] / g['cuda_batched_s']:.0f}x |", "",
              f"Batched vs one at a time on CUDA: {g['cuda_one_at_a_time_s'] / g['cuda_batched_s']:.1f}x; the {g['runs']} rows "
              f"agree to {g['max_entropy_diff']:.1e} (entropy) and {g['max_loss_diff']:.1e} (loss). One run alone on "
              f"CUDA: {g['cuda_steps_per_s_one_run']:.0f} steps/s.", ""]
    if "fig10_precision" in rec:
        p = rec["fig10_precision"]
        L += [f"**Batched vs one at a time, why they differ** (runs {p['runs']} (lr, seed), {p['steps']} steps, "
              "full size, CUDA; largest difference over the runs):", "",
              "| dtype | loss (largest over the steps) | final weights | validation entropy |", "|---|---|---|---|",
              *[f"| {k} | {v['loss']:.1e} | {v['weights']:.1e} | {v['entropy']:.1e} |" for k, v in p["max_diff"].items()],
              ""]
    if "fig10_divergence" in rec:
        v = rec["fig10_divergence"]
        L += [f"Step by step (float64, runs {v['runs']}), largest |loss difference| of batched vs one at a time:", "",
              "| dropout | first step over 1e-9 | " + " | ".join(f"step {k}" for k in next(iter(v['by_dropout'].values()))['at'])
              + " |", "|---" * (2 + len(next(iter(v['by_dropout'].values()))['at'])) + "|",
              *[f"| {p} | {x['first_step_over_1e-9']} | " + " | ".join(f"{y:.0e}" for y in x["at"].values()) + " |"
                for p, x in v["by_dropout"].items()], ""]
    if "vocab" in rec:
        L += ["**One training step against the vocabulary** (1 layer, batch 20 x 35, CUDA):", "",
              "| V | matmul | ms a step | GFLOP a step | TFLOP/s |", "|---|---|---|---|---|",
              *[f"| {v['V']:,} | {'TF32' if v['tf32'] else 'float32'} | {v['ms_per_step']:.2f} | {v['gflop']:.1f} | "
                f"{v['tflop_per_s']:.1f} |" for v in rec["vocab"]], ""]
    if "reproduce_all" in rec:
        r = rec["reproduce_all"]
        L += [f"**`python {r['cmd']}`**: exit {r['rc']}, **{r['wall_s']:.0f} s** wall in all; per figure: "
              + ", ".join(f"{k} {v:.1f} s" for k, v in r["per_figure_s"].items()) + ".", ""]
    return "\n".join(L)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--write", help="write the Markdown report here")
    ap.add_argument("--json", help="write every number here")
    ap.add_argument("--no-all", action="store_true", help="skip `reproduce all --device cuda`")
    ap.add_argument("--all-out", default="/tmp/scansnap_all_cuda", help="--out of `reproduce all`")
    ap.add_argument("--cpu-steps", type=int, default=20, help="CPU steps timed for Fig. 10's extrapolation")
    ap.add_argument("--vocab", type=int, nargs="*", default=[10111, 33278, 267735])
    ap.add_argument("--only", nargs="*", default=["fig6", "fig10", "fig10_precision", "fig10_divergence", "vocab", "all"])
    ap.add_argument("--quick", action="store_true", help="a few steps of everything (to check the script)")
    a = ap.parse_args()
    if a.quick:
        QUICK.update(fig6=dict(steps=3, seeds=(1, 2)), fig10=dict(steps=3, lrs=(1.0, 5.0), seeds=(1, 2)))
        a.cpu_steps, a.vocab = 2, [2000]
    if DEV != "cpu" and not torch.cuda.is_available():
        sys.exit("bench_gpu.py needs a CUDA device (torch.cuda.is_available() is False)")
    torch.set_num_threads(os.cpu_count())
    rec = {"machine": {"gpu": torch.cuda.get_device_name(0) if DEV != "cpu" else "no GPU (dry run)", "cpus": os.cpu_count(), "torch": torch.__version__,
                       "cuda": torch.version.cuda, "threads": torch.get_num_threads(), "python": platform.python_version(),
                       "numpy": np.__version__, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}}
    steps = [("fig6", lambda: fig6_section(rec)), ("fig10", lambda: fig10_section(rec, a.cpu_steps)),
             ("fig10_precision", lambda: fig10_precision_section(rec)),
             ("fig10_divergence", lambda: fig10_divergence_section(rec)),
             ("vocab", lambda: vocab_section(rec, a.vocab)),
             ("all", lambda: None if a.no_all else all_section(rec, a.all_out))]
    for name, fn in steps:
        if name in a.only:
            fn()
            if a.json:                                   # after each section: a cut-off run keeps what it had
                with open(a.json, "w") as fh:
                    json.dump(rec, fh, indent=1, default=float)
    text = report(rec)
    print(text)
    if a.write:
        with open(a.write, "w") as fh:
            fh.write(text + "\n")


if __name__ == "__main__":
    main()
