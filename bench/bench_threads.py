"""Benchmark: torch's two OpenMP threads on a shared machine, with and without spinning.

The same small training (4 Syn-Medium runs x 100 steps, the size of a chapter's cell) runs in
fresh processes with OMP_WAIT_POLICY unset (libgomp's default: a thread that waits at the end
of a parallel region spins for a while before sleeping), set to PASSIVE (it sleeps at once),
and with one thread. On an idle machine the three are close; when other jobs hold the cores,
a spinning thread burns the time slice its partner needs to finish the region.

    python bench/bench_threads.py [--repeats 2] [--write FILE]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

CHILD = """
import json, time, torch
from scansnap import syn_medium, train
torch.set_num_threads({threads})
c = syn_medium(5)
kw = dict(eta_y=[1, 5, 10, 20], eta_z=[1, 1, 2, 2], seeds=[1, 2, 3, 4], steps=100, init="default")
train(c, **dict(kw, steps=2))
t, p = time.perf_counter(), time.process_time()
train(c, **kw)
print(json.dumps([time.perf_counter() - t, time.process_time() - p]))
"""


def run(policy, threads):
    env = dict(os.environ)
    env.pop("OMP_WAIT_POLICY", None)
    if policy:
        env["OMP_WAIT_POLICY"] = policy
    out = subprocess.run([sys.executable, "-c", CHILD.format(threads=threads)], env=env, capture_output=True,
                         text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def uptime():
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--write")
    a = ap.parse_args()
    lines = ["## torch's threads on a shared machine: OMP_WAIT_POLICY", "",
             f"Command: `python bench/bench_threads.py --repeats {a.repeats}` (4 runs x 100 steps, "
             f"`train(syn_medium(5), ...)`, each in a fresh process)  ", f"Load before: `{uptime()}`", "",
             "| OMP_WAIT_POLICY | torch threads | wall | CPU |", "|---|---|---|---|"]
    for k in range(a.repeats):
        for policy, threads in (("", 2), ("PASSIVE", 2), ("", 1)):
            wall, cpu = run(policy, threads)
            lines.append(f"| {policy or 'unset'} | {threads} | {wall:.2f} s | {cpu:.2f} s |")
            print(lines[-1], flush=True)
    lines += ["", f"Load after: `{uptime()}`", ""]
    text = "\n".join(lines)
    print(text)
    if a.write:
        with open(a.write, "w") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
