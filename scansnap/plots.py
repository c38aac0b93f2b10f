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


# ---------------------------------------------------------------------------------------
# The intro's hero figure and chapter 1's model diagram
# ---------------------------------------------------------------------------------------

def _box(ax, x, y, text, face, w=0.9, h=0.9, fontsize=9, bold=False):
    """A rounded box centred at (x, y) with ``text`` in it (data coordinates)."""
    from matplotlib.patches import FancyBboxPatch
    ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0,rounding_size=0.1",
                                facecolor=face, edgecolor="0.3", lw=0.8))
    ax.text(x, y, text, ha="center", va="center", fontsize=fontsize,
            fontweight="bold" if bold else "normal")


def _arrow(ax, x0, y0, x1, y1, color="0.3", lw=1.2):
    ax.annotate("", xy=(x1, y1), xytext=(x0, y0),
                arrowprops=dict(arrowstyle="-|>", color=color, lw=lw, shrinkA=0, shrinkB=0))


def model_diagram(context, query: str, next_token: str, attention, probs: dict) -> Figure:
    """Chapter 1: the one-layer model of Eq. 1-2 on one example, drawn as the data flows.

    ``context`` holds the names of the contextual tokens x_1..x_{T-1}, ``query`` the name of
    x_T, ``attention`` the weights b_T (Eq. 1) the query pays each contextual position, and
    ``probs`` maps a few candidate next tokens to the model's probability alpha (Eq. 2);
    ``next_token`` is the target x_{T+1}. Every number drawn is passed in.
    """
    from matplotlib.patches import Rectangle

    attention = np.asarray(attention, float)
    n = len(context)
    if attention.shape != (n,):
        raise ValueError(f"attention must have one weight per contextual token ({n}); got shape {attention.shape}")
    if np.any(attention < 0) or abs(attention.sum() - 1) > 1e-6:
        raise ValueError(f"attention must be a distribution over the context; it sums to {attention.sum()!r}")
    fig = Figure(figsize=(6.8, 3.6))
    ax = fig.add_axes([0.005, 0.005, 0.99, 0.99])
    ax.set_xlim(-0.75, 13.0)
    ax.set_ylim(0.0, 7.3)
    ax.axis("off")
    # top: the sequence and the attention the query pays each position (step 1)
    xs = np.arange(n) * 1.25
    y_tok, y_bar, bar_h = 3.95, 4.35, 1.75
    for x, tok, b in zip(xs, context, attention):
        _box(ax, x, y_tok, tok, "#e8eef7", w=1.12, h=0.62)
        hgt = bar_h * b / attention.max()
        ax.add_patch(Rectangle((x - 0.32, y_bar), 0.64, hgt, facecolor="C0", alpha=0.85))
        ax.text(x, y_bar + hgt + 0.08, f"{b:.2f}", ha="center", va="bottom", fontsize=9)
    xq = xs[-1] + 1.75
    _box(ax, xq, y_tok, query, "#ecd5f3", w=1.15, h=0.62, bold=True)
    ax.text(xq, y_tok - 0.45, r"query $x_T$", ha="center", va="top", fontsize=9)
    ax.text(xs.mean(), y_tok - 0.45, r"contextual tokens $x_1,\dots,x_{T-1}$", ha="center", va="top", fontsize=9)
    ax.text(-0.7, 7.25, "1. attention: the query scores every contextual token,", ha="left", va="top", fontsize=9)
    ax.text(-0.7, 6.8, r"   $b_{tT}\propto\exp(z_{x_T x_t})$ (Eq. 1); bars: $b_{tT}$", ha="left", va="top", fontsize=9)
    # bottom: the rest of the forward pass (steps 2-5) and the prediction
    stages = [(r"2. mix" "\n" r"$X^\top b_T$", 0.55),
              (r"3. normalise" "\n" r"$f=X^\top b_T/\|X^\top b_T\|$", 3.55),
              (r"4. decoder" "\n" r"logits $Y^\top f$", 6.65),
              (r"5. softmax" "\n" r"$\alpha$ (Eq. 2)", 9.05)]
    widths = [1.9, 3.1, 2.1, 1.7]
    y = 1.45
    for i, ((text, x), w) in enumerate(zip(stages, widths)):
        _box(ax, x, y, text, "#f2f2f2", w=w, h=1.3)
        if i:
            _arrow(ax, stages[i - 1][1] + widths[i - 1] / 2, y, x - w / 2, y)
    _arrow(ax, xs.mean(), y_tok - 0.95, stages[0][1] + 0.3, y + 0.67)
    ranked = sorted(probs.items(), key=lambda kv: -kv[1])
    _arrow(ax, stages[-1][1] + widths[-1] / 2, y, 10.3, y)
    for i, (k, v) in enumerate(ranked):
        ax.text(10.4, y + 0.45 - 0.45 * i, f"{k}: {v:.2f}", ha="left", va="center", fontsize=9,
                fontweight="bold" if k == next_token else "normal")
    ax.text(10.4, y - 0.95, rf"(target $x_{{T+1}}$: {next_token})", ha="left", va="center", fontsize=9)
    return fig


def hero(classes: SequenceClasses, steps, c, gamma, speed, t0: float, sequences, n: int = 0,
         frozen: float | None = None) -> Figure:
    """The intro's figure: the data, the scan of one training run, and what stops it.

    (a) one sampled sequence per class (common tokens grey, distinct tokens coloured by class,
    darker = more frequent), the query and the next token, and over each contextual token the
    attention its query pays it after training (bar) and at step 0 (dashed: uniform).
    ``sequences`` is a list of (contextual tokens (T-1,), class index, attention (T-1,)).
    (b) c_{l|n} (Eq. 5) of class ``n`` for each of its tokens over training: ``c`` is
    (S, M), one row per entry of ``steps`` (S,). (c) gamma(t) of Eq. 85 and the measured
    attention speed ||c_n(s) - c_n(s-1)||_1, each divided by its peak (``gamma``, ``speed``:
    (S,)). ``t0`` (in steps) is marked in (b) and (c); from step ``frozen`` on (if given) both
    are shaded as the snapped phase.
    """
    import matplotlib
    from matplotlib.patches import Rectangle

    steps, c, gamma, speed = (np.asarray(a, float) for a in (steps, c, gamma, speed))
    S = steps.size
    if c.shape != (S, classes.M) or gamma.shape != (S,) or speed.shape != (S,):
        raise ValueError(f"c must be (steps, M) = ({S}, {classes.M}), gamma and speed ({S},); "
                         f"got {c.shape}, {gamma.shape}, {speed.shape}")
    for name, v in (("t0", t0), ("frozen", frozen)):
        if v is not None and not steps[0] <= v <= steps[-1]:
            raise ValueError(f"{name} = {v!r} lies outside the steps [{steps[0]:g}, {steps[-1]:g}]")
    cmaps = [matplotlib.colormaps[m] for m in ("Blues", "Oranges", "Greens", "Purples")]

    def colour(tok):
        if tok in classes.common_tokens:
            return "0.62"
        owner = int(np.flatnonzero(classes.probs[:, tok] > 0)[0])
        d = classes.distinct_tokens(owner)
        rank = int(np.sum(classes.probs[owner, d] < classes.probs[owner, tok])) / max(1, len(d) - 1)
        return cmaps[owner % len(cmaps)](0.35 + 0.6 * rank)

    fig = Figure(figsize=(6.8, 7.2))
    gs = fig.add_gridspec(3, 1, height_ratios=[1.45, 1.55, 0.85], left=0.105, right=0.76, top=0.99,
                          bottom=0.065, hspace=0.22)
    # (a) the data, and the attention after training
    ax = fig.add_subplot(gs[0])
    ax.axis("off")
    rows, L = len(sequences), max(len(s[0]) for s in sequences)
    row_h = 2.1
    ax.set_xlim(-0.6, L + 2.9)
    ax.set_ylim(-0.6, row_h * rows + 0.2)
    ax.set_position([0.01, ax.get_position().y0, 0.98, ax.get_position().height])
    for r, (ctx, k, b) in enumerate(sequences):
        ctx, b = np.asarray(ctx), np.asarray(b, float)
        y = row_h * (rows - 1 - r) + 0.3
        uniform = 1.0 / len(ctx)
        scale = 1.3 / max(float(b.max()), uniform)
        for x, (tok, bt) in enumerate(zip(ctx, b)):
            _box(ax, x, y, str(int(tok)), colour(int(tok)), w=0.86, h=0.6)
            ax.add_patch(Rectangle((x - 0.3, y + 0.36), 0.6, bt * scale, facecolor="C0", alpha=0.8))
            ax.plot([x - 0.4, x + 0.4], [y + 0.36 + uniform * scale] * 2, color="k", ls="--", lw=0.8)
        xq = len(ctx) + 0.25
        _box(ax, xq, y, str(int(classes.query[k])), "#ecd5f3", w=0.95, h=0.6, bold=True)
        _arrow(ax, xq + 0.5, y, xq + 1.05, y)
        _box(ax, xq + 1.6, y, str(int(classes.next_token[k])), "#cdebcb", w=0.95, h=0.6, bold=True)
        ax.text(xq + 0.8, y + 0.5, f"class {k}", ha="center", va="bottom", fontsize=9)
    ax.text(L + 0.25, -0.1, "query", ha="center", va="top", fontsize=9)
    ax.text(L + 1.85, -0.1, "next", ha="center", va="top", fontsize=9)
    ax.text(-0.55, row_h * rows + 0.15, "(a) two sequence classes: grey tokens occur in both (common), "
            "coloured ones in one (distinct)", fontsize=9, va="top")
    # (b) the scan: c_{l|n} over training
    ax = fig.add_subplot(gs[1])
    support = classes.support(n)
    common = np.intersect1d(support, classes.common_tokens)
    distinct = classes.distinct_tokens(n)
    for tok in common:
        ax.plot(steps, c[:, tok], color="0.62", lw=1.0)
    for tok in distinct:
        ax.plot(steps, c[:, tok], color=colour(int(tok)), lw=1.6)
    top = distinct[np.argmax(classes.probs[n, distinct])]
    rare = distinct[np.argmin(classes.probs[n, distinct])]
    right = dict(xycoords=("axes fraction", "data"), textcoords="offset points", ha="left", va="center",
                 fontsize=9, annotation_clip=False)
    ax.annotate(f"most frequent\ndistinct token ({top})", xy=(1.0, c[-1, top]), xytext=(4, 0),
                color=colour(int(top)), **right)
    ax.annotate(f"common tokens\n({common[0]}-{common[-1]})", xy=(1.0, c[-1, common].mean()), xytext=(4, 4),
                color="0.4", **right)
    ax.annotate(f"rarest distinct\ntoken ({rare})", xy=(1.0, c[-1, rare]), xytext=(4, -2),
                color=colour(int(rare)), **right)
    ax.axvline(t0, color="k", ls=":", lw=1.2)
    if frozen is not None:
        ax.axvspan(frozen, steps[-1], color="C0", alpha=0.07, lw=0)
        ax.text((frozen + steps[-1]) / 2, 0.98, "snapped: the pattern is frozen", transform=ax.get_xaxis_transform(),
                ha="center", va="top", fontsize=9, color="0.3")
    ax.set_ylabel(rf"attention $c_{{l|n}}$ in class {n}", fontsize=10)
    ax.set_xlim(steps[0], steps[-1])
    ax.set_ylim(0, 1.15 * float(c[:, support].max()))
    ax.tick_params(labelsize=9, labelbottom=False)
    ax.set_title(f"(b) the scan: class {n}'s attention on each of its tokens", fontsize=9, loc="left")
    # (c) why it stops: gamma(t) rises, then dies
    ax2 = fig.add_subplot(gs[2], sharex=ax)
    ax2.plot(steps, gamma / gamma.max(), color="k", lw=1.6, label=r"$\gamma(t)$ (Eq. 85)")
    ax2.plot(steps, speed / speed.max(), color="C0", lw=1.6, ls="--", label="attention\nspeed (run)")
    ax2.axvline(t0, color="k", ls=":", lw=1.2)
    if frozen is not None:
        ax2.axvspan(frozen, steps[-1], color="C0", alpha=0.07, lw=0)
    ax2.text(t0, 1.03, r" $t_0$", ha="left", va="bottom", fontsize=10)
    ax2.set_ylim(0, 1.2)
    ax2.set_xlabel("training step", fontsize=10)
    ax2.set_ylabel("÷ its peak", fontsize=10)
    ax2.tick_params(labelsize=9)
    ax2.legend(fontsize=9, loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False)
    ax2.set_title("(c) what drives it, and what stops it", fontsize=9, loc="left")
    return fig
