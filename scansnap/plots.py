"""Pure plotting functions: data in, a matplotlib Figure out (nothing is shown or saved here)."""
from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import NullFormatter

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
    # fixed margins, no layout engine: this figure is redrawn by sliders (about 0.1 s saved)
    fig = Figure(figsize=(10 if loss is not None else 6.5, 3.4))
    axes = fig.subplots(1, 2 if loss is not None else 1, squeeze=False)[0]
    fig.subplots_adjust(left=0.08 if loss is not None else 0.11, right=0.98, bottom=0.16, top=0.95,
                        wspace=0.25)
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
    ax.legend(fontsize=7, loc="center left")
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


def growth_factor(M: int, K: int, eta_z: float, eta_ys, C0: float = 1.0, t_max: float = 1e5) -> Figure:
    """Fig. 3: the growth-factor bound e^{2 B_n(t)} (Eq. 12, Theorem 4) for several eta_Y; dotted t_0."""
    from .theory import B_n, transition_time
    t = np.geomspace(1, t_max, 400)
    fig = Figure(figsize=(5.5, 3.3), layout="constrained")
    ax = fig.subplots()
    for i, ey in enumerate(eta_ys):
        ax.loglog(t, np.exp(2 * B_n(t, M, K, ey, eta_z, C0)), color=f"C{i}", label=rf"$\eta_Y={ey:g}$")
        ax.axvline(transition_time(M, K, ey), color=f"C{i}", ls=":", lw=0.8)
    ax.set_xlabel("step t")
    ax.set_ylabel(r"$e^{2B_n(t)}$ (bound on $\chi_{l_0}$)")
    ax.set_title(rf"M={M}, K={K}, $\eta_Z$={eta_z:g}, $C_0$={C0:g}; dotted: $t_0$", fontsize=9)
    ax.legend(fontsize=8)
    return fig


def B_fixed_ratio(panels, K: int = 10, C0: float = 1.0, t_max: float = 1e6) -> Figure:
    """Fig. 9: B_n(t) at fixed nu = eta_Y/eta_Z; ``panels`` = [(M, [(eta_Z, eta_Y), ...]), ...]."""
    from .theory import B_n, transition_time
    t = np.geomspace(1, t_max, 400)
    fig = Figure(figsize=(4.3 * len(panels), 3.2), layout="constrained")
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for ax, (M, pairs) in zip(axes, panels):
        for i, (ez, ey) in enumerate(pairs):
            ax.semilogx(t, B_n(t, M, K, ey, ez, C0), color=f"C{i}", label=rf"$\eta_Z={ez:g},\ \eta_Y={ey:g}$")
            ax.axvline(transition_time(M, K, ey), color=f"C{i}", ls=":", lw=0.8)
        ax.set_title(rf"M={M}, $\nu=\eta_Y/\eta_Z$={pairs[0][1] / pairs[0][0]:g}", fontsize=9)
        ax.set_xlabel("step t")
        ax.set_ylabel(r"$B_n(t)$ (corrected Eq. 129)")
        ax.legend(fontsize=7)
    return fig


def cn_final(classes: SequenceClasses, Zs: dict, n: int = 0, title: str = "") -> Figure:
    """Fig. 5: the final attention c_n of class n over its tokens, one line per setting (label -> Z)."""
    support = classes.support(n)
    order = np.concatenate([np.intersect1d(support, classes.common_tokens), classes.distinct_tokens(n)])
    fig = Figure(figsize=(6.5, 3.3), layout="constrained")
    ax = fig.subplots()
    for label, Z in Zs.items():
        c = attention_limit_all(classes, np.asarray(Z, float))[n]
        ax.plot(np.arange(len(order)), c[order], "o-", ms=3, label=label)
    ax.set_xticks(np.arange(len(order)), [str(t) for t in order], fontsize=6)
    ax.set_xlabel(f"contextual token of class {n}: common, then distinct by increasing P")
    ax.set_ylabel(r"final attention $c_{l|n}$")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    return fig


def recall_curves(num_last, eta_z, ratio, threshold, recall, by: str) -> Figure:
    """Figs. 11-12: recall vs threshold, one panel per num_last; ``by`` = 'ratio' (at eta_Z = 1)
    or 'eta_z' (at eta_Y/eta_Z = 1)."""
    num_last, eta_z, ratio, threshold, recall = (np.asarray(a) for a in (num_last, eta_z, ratio, threshold, recall))
    fixed = (eta_z == 1.0) if by == "ratio" else (ratio == 1.0)
    key = ratio if by == "ratio" else eta_z
    panels = sorted(set(num_last.tolist()))
    fig = Figure(figsize=(3.2 * len(panels), 3.0), layout="constrained")
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for ax, nl in zip(axes, panels):
        for v in sorted(set(key[fixed & (num_last == nl)].tolist())):
            sel = fixed & (num_last == nl) & (key == v)
            ax.semilogx(threshold[sel], recall[sel], marker="o", ms=2,
                        label=(rf"$\eta_Y/\eta_Z={v:g}$" if by == "ratio" else rf"$\eta_Z={v:g}$"))
        ax.set_title(f"#last/next = {nl}/{2 * nl}", fontsize=9)
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("threshold on softmax($z_m$)")
    axes[0].set_ylabel("recall of distinct tokens")
    axes[0].legend(fontsize=7)
    return fig


def attention_maps(maps: dict, tokens=None) -> Figure:
    """Fig. 7: attention heat maps; ``maps`` = {row label: {step: (T, T) array}}."""
    rows = list(maps)
    steps = sorted(maps[rows[0]])
    fig = Figure(figsize=(2.6 * len(steps), 2.6 * len(rows)), layout="constrained")
    axes = fig.subplots(len(rows), len(steps), squeeze=False)
    for i, r in enumerate(rows):
        for j, s in enumerate(steps):
            ax = axes[i, j]
            ax.imshow(np.asarray(maps[r][s]), cmap="viridis", vmin=0, vmax=1)
            ax.set_xticks([]); ax.set_yticks([])
            if i == 0:
                ax.set_title(f"iteration {s}", fontsize=9)
            if j == 0:
                ax.set_ylabel(r, fontsize=9)
    return fig


def entropy_vs_lr(lr, entropy) -> Figure:
    """Fig. 10: mean +- std (over seeds) of the validation attention entropy vs learning rate."""
    lr, entropy = np.asarray(lr), np.asarray(entropy)
    xs = sorted(set(lr.tolist()))
    fig = Figure(figsize=(4.5, 3.2), layout="constrained")
    ax = fig.subplots()
    ax.errorbar(xs, [entropy[lr == x].mean() for x in xs], [entropy[lr == x].std() for x in xs],
                marker="o", capsize=3)
    ax.set_xlabel("SGD learning rate")
    ax.set_ylabel("attention entropy (validation)")
    return fig


def freezing(iteration, entropy, change, loss=None) -> Figure:
    """The longer Fig. 7 run: row entropy of the lowest layer's attention and its change between
    snapshots (NaN for the first), against the iteration; the learning rate is constant."""
    it, ent, ch = (np.asarray(a, dtype=float) for a in (iteration, entropy, change))
    fig = Figure(figsize=(7, 2.8), layout="constrained")
    a1, a2 = fig.subplots(1, 2)
    a1.plot(it, ent, "o-", ms=3)
    a1.set_xlabel("iteration"); a1.set_ylabel("mean row entropy of the attention")
    a2.plot(it[1:], ch[1:], "o-", ms=3)
    a2.set_xlabel("iteration"); a2.set_ylabel(f"change per {it[1] - it[0]:g} steps")
    a2.set_ylim(0, None)
    return fig
