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


def sequence_classes(classes: SequenceClasses, show=None, sequence=None) -> Figure:
    """Sequence classes drawn (the idea of the paper's Fig. 1(b), Sec. 3.2): one panel per class n.

    Each panel shows P(l|n) over the whole vocabulary: common tokens grey, the class's distinct
    tokens in its colour, its query token psi(n) (hatched) and its next token n (outlined)
    marked; both have P(l|n) = 0, they never occur among the contextual tokens. ``show`` lists
    the classes to draw (default all; at most 6). ``sequence = (tokens, n)`` adds a strip
    below: one sequence of class n, x_1..x_{T-1}, then the query x_T (the last of ``tokens``),
    then the next token x_{T+1} = next_token[n] that the model must predict.
    """
    from matplotlib.patches import Patch, Rectangle

    show = list(range(classes.K)) if show is None else [int(n) for n in np.atleast_1d(show)]
    if not 1 <= len(show) <= 6:
        raise ValueError(f"show must list 1 to 6 classes; got {len(show)}")
    for n in show:
        classes._check_class(n)
    if sequence is not None:
        tokens, n_seq = sequence
        tokens = np.asarray(tokens)
        classes._check_class(n_seq)
        if tokens.ndim != 1 or tokens.size < 2 or not np.issubdtype(tokens.dtype, np.integer):
            raise ValueError(f"sequence tokens must be a 1-d integer array of length >= 2; got {tokens!r}")
        if tokens.min() < 0 or tokens.max() >= classes.M:
            raise ValueError(f"sequence has a token id out of range [0, {classes.M}): {tokens.tolist()}")
        if tokens[-1] != classes.query[n_seq]:
            raise ValueError(f"a sequence of class {n_seq} ends with its query {classes.query[n_seq]}, "
                             f"got {int(tokens[-1])}")
        bad = sorted({int(t) for t in tokens[:-1] if classes.probs[n_seq, t] == 0})
        if bad:
            raise ValueError(f"tokens {bad} cannot occur in a sequence of class {n_seq} (P(l|n) = 0)")
    M, grey = classes.M, "0.62"
    colour = {n: f"C{i}" for i, n in enumerate(show)}

    def kind_colour(l, n):
        return colour.get(n, "C7") if classes.distinct_mask[n, l] else grey

    heights = [1.0] * len(show) + ([0.5] if sequence is not None else [])
    fig = Figure(figsize=(6.8, 1.5 * len(show) + (0.9 if sequence is not None else 0) + 0.35),
                 layout="constrained")
    axes = fig.subplots(len(heights), 1, gridspec_kw={"height_ratios": heights}, squeeze=False)[:, 0]
    top = classes.probs[show].max() * 1.9
    step = 5 if M <= 200 else 20
    for ax, n in zip(axes, show):
        p = classes.probs[n]
        support = np.flatnonzero(p > 0)
        ax.bar(support, p[support], width=0.8, color=[kind_colour(l, n) for l in support])
        # query and next token: P(l|n) = 0 for both, so a marker on the axis, not a bar
        q, nx = classes.query[n], classes.next_token[n]
        ax.plot([q], [0], marker="^", ms=9, color="k", clip_on=False, zorder=5)
        ax.plot([nx], [0], marker="*", ms=11, color=colour[n], clip_on=False, zorder=5)
        ax.annotate(f"query {q}", (q, 0), xytext=(q - 0.3, top * 0.8), ha="right", va="center",
                    fontsize=9, arrowprops=dict(arrowstyle="-", lw=0.8, color="k"))
        ax.annotate(f"next token {nx}", (nx, 0), xytext=(nx + 0.3, top * 0.8), ha="left", va="center",
                    fontsize=9, color=colour[n], arrowprops=dict(arrowstyle="-", lw=0.8, color=colour[n]))
        ax.set_xlim(-0.7, M - 0.3)
        ax.set_ylim(0, top)
        ax.set_ylabel(f"P(l | class {n})", fontsize=9)
        ticks = np.arange(0, M, step)
        ax.set_xticks(ticks, [str(t) for t in ticks])
        ax.set_xticks(np.arange(M), minor=True)
        ax.tick_params(labelsize=9)
        ax.spines[["top", "right"]].set_visible(False)
    axes[len(show) - 1].set_xlabel("token id l (the vocabulary)", fontsize=9)
    handles = [Patch(color=grey, label="common")]
    handles += [Patch(color=colour[n], label=f"distinct, class {n}") for n in show]
    fig.legend(handles=handles, fontsize=9, ncol=min(len(handles), 4), loc="outside upper center",
               frameon=False)
    if sequence is not None:
        ax = axes[-1]
        T = len(tokens)
        for t, l in enumerate(tokens[:-1]):
            ax.add_patch(Rectangle((t, 0), 0.92, 1, color=kind_colour(l, n_seq)))
            ax.text(t + 0.46, 0.5, str(int(l)), ha="center", va="center", fontsize=9,
                    color="white" if classes.distinct_mask[n_seq, l] else "k")
        ax.add_patch(Rectangle((T - 1, 0), 0.92, 1, facecolor="white", edgecolor="k", hatch="///", lw=0.8))
        ax.text(T - 0.54, 0.5, str(int(tokens[-1])), ha="center", va="center", fontsize=9,
                bbox=dict(facecolor="white", edgecolor="none", pad=0.5))
        ax.add_patch(Rectangle((T + 0.6, 0), 0.92, 1, facecolor="white", edgecolor=colour.get(n_seq, "C7"),
                               lw=1.5, ls="--"))
        ax.text(T + 1.06, 0.5, str(int(classes.next_token[n_seq])), ha="center", va="center", fontsize=9)
        ax.annotate("", (T + 0.6, 0.5), (T - 0.06, 0.5), arrowprops=dict(arrowstyle="->", lw=1))
        ax.text((T - 1) / 2, 1.12, f"contextual tokens $x_1, \\dots, x_{{{T - 1}}}$, drawn i.i.d. from "
                f"P(l | class {n_seq})", ha="center", va="bottom", fontsize=9)
        ax.text(T - 0.54, 1.12, "query", ha="center", va="bottom", fontsize=9)
        ax.text(T + 1.06, 1.12, "next?", ha="center", va="bottom", fontsize=9)
        ax.set_xlim(-0.2, T + 1.8)
        ax.set_ylim(-0.05, 1.6)
        ax.set_xticks([])
        ax.set_yticks([])
        ax.spines[:].set_visible(False)
    return fig
