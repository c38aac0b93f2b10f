"""The paper's experiments as functions: settings in, numbers out (the CLI and the book call these)."""
from __future__ import annotations

import numpy as np
import torch
from tqdm.auto import tqdm

from .data import syn_medium, syn_small
from .metrics import distinct_entropy
from .train import lr_grid, train

# Syn-Small and Syn-Medium training settings (MATH.md §7.1-7.2, the authors' command lines)
COMMON = dict(steps=100, batch=128, T=128, optimizer="sgd", momentum=0.9)
FIG4_SNAPSHOTS = (0, 5, 10, 20, 50, 100)
FIG6 = dict(num_last=(1, 3, 5, 10), eta_z=(0.5, 1, 2, 3), ratio=(1, 2, 5, 10), seeds=tuple(range(1, 11)))


def fig4(eta_y=1.0, eta_z=1.0, seed=2, device="auto", **overrides):
    """Paper Fig. 4 (Syn-Small): one run from Y = Z = 0; returns (classes, TrainResult)."""
    classes = syn_small()
    kw = dict(COMMON, init="zero", snapshot_steps=FIG4_SNAPSHOTS)
    kw.update(overrides)
    return classes, train(classes, eta_y=eta_y, eta_z=eta_z, seeds=seed, device=device, **kw)


def fig6(num_last=FIG6["num_last"], eta_z=FIG6["eta_z"], ratio=FIG6["ratio"], seeds=FIG6["seeds"],
         device="auto", progress=False, **overrides):
    """Paper Fig. 6 (Syn-Medium): the entropy sweep, batched per num_last (one vocabulary each).

    Returns a dict of flat arrays num_last, eta_z, ratio, seed, entropy (one row per run).
    """
    kw = dict(COMMON, init="default")
    kw.update(overrides)
    ey, ez, sd = lr_grid(eta_z, ratio, seeds)
    rows = {k: [] for k in ("num_last", "eta_z", "ratio", "seed", "entropy")}
    bar = tqdm(total=len(num_last) * kw["steps"], disable=not progress, desc="fig6 sweep",
               unit="step")
    for nl in num_last:
        classes = syn_medium(nl)
        res = train(classes, eta_y=ey, eta_z=ez, seeds=sd, device=device, progress=bar, **kw)
        rows["num_last"].append(np.full(len(sd), nl))
        rows["eta_z"].append(ez)
        rows["ratio"].append(ey / ez)
        rows["seed"].append(sd)
        rows["entropy"].append(distinct_entropy(classes, res.Z))
    bar.close()
    return {k: np.concatenate(v) for k, v in rows.items()}
