"""Pure plotting functions: data in, a matplotlib Figure out (nothing is shown or saved here)."""
from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from .data import SequenceClasses
from .theory import attention_limit_all


def cn_over_training(classes: SequenceClasses, snapshots: dict, n: int = 0, loss=None) -> Figure:
    """Fig. 4: c_n (Eq. 5) of class n over its tokens (common, then distinct) at several steps.

    ``snapshots`` maps step -> Z of shape (M, M). With ``loss`` (per step), a second panel
    shows the training loss.
    """
    support = classes.support(n)
    common = np.intersect1d(support, classes.common_tokens)
    distinct = classes.distinct_tokens(n)
    order = np.concatenate([common, distinct])
    fig = Figure(figsize=(10 if loss is not None else 6.5, 3.4), layout="constrained")
    axes = fig.subplots(1, 2 if loss is not None else 1, squeeze=False)[0]
    ax = axes[0]
    steps = sorted(snapshots)
    cmap = __import__("matplotlib").colormaps["viridis"]
    for i, s in enumerate(steps):
        c = attention_limit_all(classes, np.asarray(snapshots[s], float))[n]
        ax.plot(np.arange(len(order)), c[order], "o-", ms=3, color=cmap(i / max(1, len(steps) - 1)),
                label=f"step {s}")
    ax.axvspan(-0.5, len(common) - 0.5, color="0.9", zorder=0)
    ax.text(len(common) / 2 - 0.5, ax.get_ylim()[1] * 0.95, "common", ha="center", va="top", fontsize=8)
    ax.text(len(common) + len(distinct) / 2 - 0.5, ax.get_ylim()[1] * 0.95,
            "distinct (P increasing →)", ha="center", va="top", fontsize=8)
    ax.set_xticks(np.arange(len(order)), [str(t) for t in order], fontsize=6)
    ax.set_xlabel(f"contextual token of class {n} (next token {classes.next_token[n]})")
    ax.set_ylabel(r"attention $c_{l|n}$ (Eq. 5)")
    ax.legend(fontsize=7)
    if loss is not None:
        ax2 = axes[1]
        ax2.semilogy(np.arange(len(loss)), loss)
        ax2.set_xlabel("step")
        ax2.set_ylabel("training loss (batch mean)")
    return fig


def entropy_sweep(num_last, eta_z, ratio, entropy) -> Figure:
    """Fig. 6: mean +- standard error (over seeds) of the distinct-token entropy vs eta_Y/eta_Z.

    Arguments are flat arrays, one entry per run (seeds are the repeats of a setting).
    """
    num_last, eta_z, ratio, entropy = (np.asarray(a) for a in (num_last, eta_z, ratio, entropy))
    panels = sorted(set(num_last.tolist()))
    fig = Figure(figsize=(3.2 * len(panels), 3.0), layout="constrained")
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for ax, nl in zip(axes, panels):
        for ez in sorted(set(eta_z.tolist())):
            xs, ms, es = [], [], []
            for r in sorted(set(ratio.tolist())):
                sel = (num_last == nl) & (eta_z == ez) & (ratio == r)
                if sel.any():
                    v = entropy[sel]
                    xs.append(r)
                    ms.append(v.mean())
                    es.append(v.std(ddof=1) / np.sqrt(v.size) if v.size > 1 else 0.0)
            ax.errorbar(xs, ms, es, marker="o", ms=3, capsize=2, label=rf"$\eta_Z={ez:g}$")
        ax.axvline(1, color="k", ls="--", lw=0.5)
        ax.set_title(f"#last/next tokens = {nl}/{2 * nl}", fontsize=9)
        ax.set_xlabel(r"$\eta_Y/\eta_Z$")
    axes[0].set_ylabel(r"average entropy of $c_n$ on distinct tokens")
    axes[0].legend(fontsize=7)
    return fig


def h_vs_hstar(panels) -> Figure:
    """Fig. 8: h*(s) (Eq. 33, discrete) against h(t) (Eq. 45, continuous) for several eta_Y.

    ``panels`` is a list of (M, steps, [eta_Y, ...]).
    """
    from .theory import h_closed, h_star
    fig = Figure(figsize=(4.2 * len(panels), 3.2), layout="constrained")
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for ax, (M, steps, etas) in zip(axes, panels):
        s = np.arange(steps + 1)
        for i, eta in enumerate(etas):
            color = f"C{i}"
            ax.plot(s, h_star(steps, M, eta), color=color, lw=1.2, label=rf"$\eta_Y={eta:g}$")
            ax.plot(s, h_closed(s, M, eta), color=color, ls="--", lw=1.0)
        ax.set_title(f"M = {M}: solid h* (Eq. 33), dashed h (Eq. 45)", fontsize=9)
        ax.set_xlabel("step s")
        ax.set_ylabel("h")
        ax.legend(fontsize=7)
    return fig
