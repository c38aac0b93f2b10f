"""Figure snapshots: every drawing detail of the book's hand-drawn figures, pinned.

``plots.hero`` (the intro's figure), ``plots.model_diagram`` (chapter 1) and
``plots.sequence_classes`` (chapter 2) are drawn with fixed small inputs, and a structural
*fingerprint* of each figure is compared with a committed JSON snapshot under
``tests/snapshots/plots/``. The fingerprint lists every artist the function made and the
properties that decide how it looks: figure size, dpi and layout engine; per axes its position,
limits, scales, aspect, ticks and tick labels, spines, titles and axis labels; per text its
string, position, coordinates, size, weight, colour, alignment, rotation, z-order, alpha and
box; per line its data, colour, width, style, markers, alpha and z-order; per patch its outline
(the path's vertices in its own coordinates), face/edge colour, line width and style, hatch,
alpha and z-order; per legend its entries, their handles, location and columns.

Not pixels: nothing is rendered (``fig.canvas.draw`` is never called), so no text extent, font
file or antialiasing enters the fingerprint, and it is the same on any machine with the
locked matplotlib. (Constrained layout, which needs text extents, only runs at draw time: the
axes positions recorded are the gridspec's, before layout.)

Floats are compared with a relative tolerance of 1e-6 (and an absolute one of 1e-9 for values
near 0), and written rounded to 10 significant digits. The drawn numbers come from a few float64
operations on fixed inputs: they differ between machines, if at all, in the last bits (~1e-16),
and any drawing change is far larger (a mutation moves a constant by 1 or more; a pixel of a
6.8 in figure at 200 dpi is 1/1360 of its width, ~1e-3 relative).

Colours are compared as RGBA after matplotlib's own normalisation (``"C0"`` and
``"#1f77b4"`` are one colour: what is drawn is the same).

When a drawing changes on purpose, rewrite the snapshots and review their diff::

    SCANSNAP_UPDATE_SNAPSHOTS=1 .venv/bin/python -m pytest tests/test_plots_snapshot.py

A missing snapshot fails the test (it is never written silently); a changed one fails with
the artist and property that changed, e.g.
``axes[1] '(b) the scan ...' lines[3]: color: snapshot [0.62, 0.62, 0.62, 1.0], drawn [...]``.
"""
from __future__ import annotations

import json
import math
import os
import pathlib

import contextlib

import matplotlib
import numpy as np
import pytest
from matplotlib.colors import to_rgba

from scansnap import plots, syn_small
from scansnap.data import sequence_classes as make_sequence_classes

SNAPSHOTS = pathlib.Path(__file__).parent / "snapshots" / "plots"
UPDATE_ENV = "SCANSNAP_UPDATE_SNAPSHOTS"
REL_TOL, ABS_TOL = 1e-6, 1e-9
DIGITS = 10


# ---------------------------------------------------------------------------------------
# the fingerprint
# ---------------------------------------------------------------------------------------

def _num(x):
    x = float(x)
    if math.isnan(x) or math.isinf(x):
        return repr(x)
    return float(f"{x:.{DIGITS}g}") if x != 0 else 0.0


def _val(v):
    """A JSON value for a property: numbers rounded, arrays as (nested) lists."""
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return _num(v)
    if isinstance(v, np.ndarray):
        if v.dtype.kind in "US":
            return [str(s) for s in v.tolist()]
        if v.dtype == object:
            return [_val(x) for x in v.tolist()]
        return _val(v.tolist())
    if isinstance(v, dict):
        return {str(k): _val(v[k]) for k in sorted(v, key=str)}
    if isinstance(v, (list, tuple)):
        return [_val(x) for x in v]
    if isinstance(v, np.bool_):
        return bool(v)
    return repr(v)


def _colour(c):
    if c is None:
        return None
    if isinstance(c, str) and c.lower() == "none":
        return "none"
    a = np.asarray(c, dtype=object) if not isinstance(c, str) else None
    if a is not None and a.ndim == 2:           # one colour per element (collections)
        return [_colour(x) for x in c]
    return [_num(x) for x in to_rgba(c)]


def _where(transform, artist):
    """Which coordinates an artist is placed in, by name where it is one of its axes' or
    figure's own transforms, else by where the transform sends (0, 0) and (1, 1) (display
    pixels at the figure's dpi: no draw needed, no fonts involved)."""
    ax, fig = artist.axes, artist.figure
    named = []
    if ax is not None:
        named += [("data", ax.transData), ("axes", ax.transAxes),
                  ("xaxis", ax.get_xaxis_transform()), ("yaxis", ax.get_yaxis_transform())]
    if fig is not None:
        named += [("figure", fig.transFigure), ("subfigure", fig.transSubfigure)]
    for name, t in named:
        if transform == t:
            return name
    try:
        return _val(np.asarray(transform.transform([[0.0, 0.0], [1.0, 1.0]])))
    except Exception:               # a transform that cannot be evaluated before a draw
        return type(transform).__name__


def _boxstyle(bs):
    return {"style": type(bs).__name__, **{k: _val(v) for k, v in sorted(vars(bs).items())}}


def _text(t) -> dict:
    from matplotlib.text import Annotation
    d = {
        "text": t.get_text(), "position": _val(t.get_position()), "fontsize": _val(t.get_fontsize()),
        "fontweight": _val(t.get_fontweight()), "fontstyle": t.get_fontstyle(),
        "fontfamily": _val(t.get_fontfamily()), "color": _colour(t.get_color()),
        "ha": t.get_horizontalalignment(), "va": t.get_verticalalignment(),
        "multialignment": _val(t.get_multialignment() if hasattr(t, "get_multialignment") else None),
        "rotation": _val(t.get_rotation()), "zorder": _val(t.get_zorder()), "alpha": _val(t.get_alpha()),
        "visible": t.get_visible(), "clip_on": t.get_clip_on(), "linespacing": _val(t._linespacing),
    }
    if isinstance(t, Annotation):
        d.update(xy=_val(t.xy), xycoords=_val(t.xycoords), textcoords=_val(t.anncoords),
                 annotation_clip=_val(t.get_annotation_clip()),
                 arrowprops=_val(t.arrowprops) if t.arrowprops is None else
                 {k: (_colour(v) if k == "color" else _val(v)) for k, v in sorted(t.arrowprops.items())})
    else:
        d["transform"] = _where(t.get_transform(), t)
    box = t.get_bbox_patch()
    if box is not None:
        d["bbox"] = {"facecolor": _colour(box.get_facecolor()), "edgecolor": _colour(box.get_edgecolor()),
                     "boxstyle": _boxstyle(box.get_boxstyle()), "linewidth": _val(box.get_linewidth()),
                     "alpha": _val(box.get_alpha())}
    return d


def _line(l) -> dict:
    return {
        "xdata": _val(np.asarray(l.get_xdata(orig=True), dtype=float)),
        "ydata": _val(np.asarray(l.get_ydata(orig=True), dtype=float)),
        "color": _colour(l.get_color()), "linewidth": _val(l.get_linewidth()),
        "linestyle": _val(l.get_linestyle()), "dashes": _val(l._unscaled_dash_pattern),
        "drawstyle": l.get_drawstyle(), "marker": _val(l.get_marker()), "markersize": _val(l.get_markersize()),
        "markerfacecolor": _colour(l.get_markerfacecolor()), "markeredgecolor": _colour(l.get_markeredgecolor()),
        "markeredgewidth": _val(l.get_markeredgewidth()), "alpha": _val(l.get_alpha()),
        "zorder": _val(l.get_zorder()), "label": l.get_label(), "visible": l.get_visible(),
        "clip_on": l.get_clip_on(), "transform": _where(l.get_transform(), l),
    }


def _patch(p) -> dict:
    verts = p.get_patch_transform().transform(p.get_path().vertices)
    d = {
        "type": type(p).__name__, "vertices": _val(np.asarray(verts, float)),
        "facecolor": _colour(p.get_facecolor()), "edgecolor": _colour(p.get_edgecolor()),
        "linewidth": _val(p.get_linewidth()), "linestyle": _val(p.get_linestyle()),
        "dashes": _val(p._unscaled_dash_pattern), "hatch": p.get_hatch(), "fill": p.get_fill(),
        "alpha": _val(p.get_alpha()), "zorder": _val(p.get_zorder()), "label": p.get_label(),
        "visible": p.get_visible(), "clip_on": p.get_clip_on(), "transform": _where(p.get_transform(), p),
    }
    if hasattr(p, "get_boxstyle"):
        d.update(boxstyle=_boxstyle(p.get_boxstyle()), mutation_scale=_val(p.get_mutation_scale()),
                 mutation_aspect=_val(p.get_mutation_aspect()))
    return d


def _collection(c) -> dict:
    return {
        "type": type(c).__name__, "offsets": _val(np.asarray(c.get_offsets(), float)),
        "paths": [_val(np.asarray(path.vertices, float)) for path in c.get_paths()],
        "facecolor": _colour(c.get_facecolor()), "edgecolor": _colour(c.get_edgecolor()),
        "linewidth": _val(c.get_linewidth()), "linestyle": _val(c.get_linestyle()),
        "hatch": c.get_hatch(), "alpha": _val(c.get_alpha()), "zorder": _val(c.get_zorder()),
        "label": c.get_label(), "visible": c.get_visible(), "transform": _where(c.get_transform(), c),
    }


def _legend(leg) -> dict:
    d = {"loc": _val(leg._loc), "outside_loc": _val(getattr(leg, "_outside_loc", None)),
         "ncols": _val(leg._ncols), "frameon": leg.get_frame_on(), "title": _text(leg.get_title()),
         "bbox_to_anchor": _val(leg.get_bbox_to_anchor().bounds), "visible": leg.get_visible()}
    for i, t in enumerate(leg.get_texts()):
        d[f"texts[{i}]"] = _text(t)
    for i, h in enumerate(leg.legend_handles):
        if h is None:
            d[f"handles[{i}]"] = None
        elif hasattr(h, "get_xdata"):
            d[f"handles[{i}]"] = {k: v for k, v in _line(h).items() if k not in ("xdata", "ydata", "transform")}
        else:
            d[f"handles[{i}]"] = {k: v for k, v in _patch(h).items() if k not in ("vertices", "transform")}
    return d


def _axis(axis) -> dict:
    d = {"scale": axis.get_scale(),
         "major_locs": _val(np.asarray(axis.get_majorticklocs(), float)),
         "minor_locs": _val(np.asarray(axis.get_minorticklocs(), float)),
         "label": _text(axis.label), "visible": axis.get_visible(),
         "major_params": _val(axis.get_tick_params(which="major")),
         "minor_params": _val(axis.get_tick_params(which="minor"))}
    labels = axis.get_majorticklabels()
    d["major_labels"] = [t.get_text() for t in labels]
    d["major_label_style"] = sorted({(_val(t.get_fontsize()), _val(t.get_rotation()), t.get_visible(),
                                      tuple(_colour(t.get_color()))) for t in labels})
    d["major_label_style"] = [list(s) for s in d["major_label_style"]]
    d["minor_labels"] = [t.get_text() for t in axis.get_minorticklabels()]
    return d


def _each(out: dict, prefix: str, kinds) -> None:
    """out["<prefix><kind>[i]"] = describe(artist) for each (kind, artists, describe)."""
    for kind, artists, describe in kinds:
        for i, a in enumerate(artists):
            out[f"{prefix}{kind}[{i}]"] = describe(a)


def _axes(ax, fig) -> dict:
    d = {
        "position": _val(ax.get_position().bounds), "xlim": _val(ax.get_xlim()), "ylim": _val(ax.get_ylim()),
        "aspect": _val(ax.get_aspect()), "axison": ax.axison, "visible": ax.get_visible(),
        "frame_on": ax.get_frame_on(), "facecolor": _colour(ax.get_facecolor()), "zorder": _val(ax.get_zorder()),
        "xaxis": _axis(ax.xaxis), "yaxis": _axis(ax.yaxis),
        "title_left": _text(ax._left_title), "title_center": _text(ax.title), "title_right": _text(ax._right_title),
        "spines": {name: {"visible": s.get_visible(), "linewidth": _val(s.get_linewidth()),
                          "color": _colour(s.get_edgecolor())} for name, s in ax.spines.items()},
        "sharex": sorted(fig.axes.index(a) for a in ax.get_shared_x_axes().get_siblings(ax)),
        "sharey": sorted(fig.axes.index(a) for a in ax.get_shared_y_axes().get_siblings(ax)),
    }
    _each(d, "", (("texts", ax.texts, _text), ("lines", ax.lines, _line), ("patches", ax.patches, _patch),
                  ("collections", ax.collections, _collection)))
    for i, im in enumerate(ax.images):
        d[f"images[{i}]"] = {"array": _val(np.asarray(im.get_array())), "extent": _val(im.get_extent()),
                             "cmap": im.get_cmap().name, "clim": _val(im.get_clim()), "zorder": _val(im.get_zorder())}
    for i, a in enumerate(ax.artists):
        d[f"artists[{i}]"] = repr(a)
    if ax.get_legend() is not None:
        d["legend"] = _legend(ax.get_legend())
    return d


def fingerprint(fig) -> dict:
    """The figure's structure as a flat {"axes[1].lines[3].color": value} dict (JSON values)."""
    engine = fig.get_layout_engine()
    tree = {
        "figure": {"size": _val(fig.get_size_inches()), "dpi": _val(fig.dpi),
                   "facecolor": _colour(fig.get_facecolor()), "edgecolor": _colour(fig.get_edgecolor()),
                   "layout": None if engine is None else type(engine).__name__,
                   "layout_params": None if engine is None else _val(engine.get()),
                   "n_axes": len(fig.axes)},
    }
    _each(tree, "figure.", (("texts", fig.texts, _text), ("lines", fig.lines, _line),
                            ("patches", fig.patches, _patch), ("legends", fig.legends, _legend)))
    for i, ax in enumerate(fig.axes):
        tree[f"axes[{i}]"] = _axes(ax, fig)
    flat = {}
    groups = {"figure", "xaxis", "yaxis", "legend", "label", "title", "title_left", "title_center", "title_right"}

    def walk(prefix, v):
        last = prefix.rsplit(".", 1)[-1]
        if isinstance(v, dict) and v and (not prefix or "[" in last or last in groups):
            for k, x in v.items():
                walk(f"{prefix}.{k}" if prefix else k, x)
        else:
            flat[prefix] = v
    walk("", tree)
    return json.loads(json.dumps(flat))       # tuples as lists, as the snapshot reads back


# ---------------------------------------------------------------------------------------
# comparing with the snapshot
# ---------------------------------------------------------------------------------------

def _close(a, b) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=ABS_TOL)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    return a == b


def _short(v, n=160) -> str:
    s = json.dumps(v)
    return s if len(s) <= n else s[:n] + f"... ({len(s)} chars)"


def _name(key: str, snap: dict) -> str:
    """``axes[1].lines[3].color`` -> ``axes[1] '(b) the scan...' lines[3]: color`` (the axes by
    its title or label, a text by its string)."""
    parts = key.split(".")
    out = []
    for i, p in enumerate(parts[:-1]):
        here = ".".join(parts[:i + 1])
        hint = ""
        if p.startswith("axes["):
            hint = next((snap[f"{here}.{t}.text"] for t in ("title_left", "title_center")
                         if snap.get(f"{here}.{t}.text")), "")
        elif p.startswith("texts["):
            hint = snap.get(f"{here}.text", "")
        out.append(f"{p} {hint[:40]!r}" if hint else p)
    return " ".join(out) + f": {parts[-1]}"


def check_snapshot(name: str, fig) -> None:
    got = fingerprint(fig)
    path = SNAPSHOTS / f"{name}.json"
    if os.environ.get(UPDATE_ENV) == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{\n" + ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in got.items())
                        + "\n}\n")
        return
    if not path.exists():
        pytest.fail(f"no snapshot {path}: draw it with {UPDATE_ENV}=1 (review the file, then commit it)")
    snap = json.loads(path.read_text())
    diffs = []
    for k in snap:
        if k not in got:
            diffs.append(f"{_name(k, snap)}: in the snapshot, not drawn (snapshot {_short(snap[k])})")
        elif not _close(snap[k], got[k]):
            diffs.append(f"{_name(k, snap)}: snapshot {_short(snap[k])}, drawn {_short(got[k])}")
    for k in got:
        if k not in snap:
            diffs.append(f"{_name(k, got)}: drawn, not in the snapshot ({_short(got[k])})")
    if diffs:
        more = f"\n... and {len(diffs) - 25} more" if len(diffs) > 25 else ""
        pytest.fail(f"figure {name!r} differs from {path.name} in {len(diffs)} properties "
                    f"({UPDATE_ENV}=1 rewrites it if the change is meant):\n" + "\n".join(diffs[:25]) + more,
                    pytrace=False)


# ---------------------------------------------------------------------------------------
# the figures, with fixed small inputs
# ---------------------------------------------------------------------------------------

def _hero_inputs(S=9, classes=None):
    """Syn-Small; c, gamma and speed vary over the steps (a constant c, or a gamma whose peak is
    1, would hide a wrong row or a product taken for a quotient)."""
    classes = syn_small() if classes is None else classes
    steps = np.arange(S) * 10.0 + 5.0
    ramp = np.linspace(0.5, 1.5, S)[:, None]
    # (class 1's ramp squared: the common tokens, shared by both classes, change over the steps too)
    c = classes.probs[[0] * S] * ramp + classes.probs[[1] * S] * ramp[::-1] ** 2 + 0.001 * np.arange(classes.M)
    gamma = 2.5 * np.sin(np.linspace(0.2, 3.0, S)) + 0.1
    speed = 0.4 + 3.0 * np.exp(-np.arange(S) / 3.0)
    d0, d1 = classes.distinct_tokens(0), classes.distinct_tokens(1)
    com = classes.common_tokens
    seqs = [(np.array([com[0], d0[-1], d0[0], com[-1]]), 0, np.array([0.1, 0.5, 0.3, 0.1])),
            (np.array([d1[0], com[0], d1[-1]]), 1, np.array([0.2, 0.2, 0.6]))]
    return classes, steps, c, gamma, speed, seqs


def _hero_frozen():
    classes, steps, c, gamma, speed, seqs = _hero_inputs()
    return plots.hero(classes, steps, c, gamma, speed, 32.0, seqs, frozen=65.0)


def _hero_class1():
    # class 1's scan, no snapped phase, a non-default label that must not appear, uniform attention
    classes, steps, c, gamma, speed, seqs = _hero_inputs()
    seqs = seqs + [(np.array([1, 2]), 0, np.array([0.5, 0.5]))]
    return plots.hero(classes, steps, c, gamma, speed, 45.0, seqs, n=1, frozen_label="unused")


def _hero_two_distinct():
    # two distinct tokens per class, the rarer one second: their shades are the two ends of the
    # class's colour map, and the "rarest" label names the second
    classes = make_sequence_classes(2, num_common=3, num_distinct=2, distinct_weights=[3, 1])
    classes_, steps, c, gamma, speed, seqs = _hero_inputs(classes=classes)
    return plots.hero(classes, steps, c, gamma, speed, 5.0, seqs, frozen=85.0)


def _model_diagram():
    # a zero weight is allowed; the candidates are listed by probability, not by name, and the
    # target (bold) is not the likeliest
    return plots.model_diagram(["the", "dog", "chased", "a"], "pet:", "cat", [0.0, 0.6, 0.3, 0.1],
                               {"dog": 0.55, "cat": 0.3, "rat": 0.15})


def _sequence_classes_all():
    classes = syn_small()
    rng = np.random.default_rng(7)
    ctx = rng.choice(classes.support(0), size=6)
    return plots.sequence_classes(classes, sequence=(np.append(ctx, classes.query[0]), 0))


def _sequence_classes_other():
    # one class shown, the strip's sequence from a class not shown (its distinct tokens in C7)
    classes = syn_small()
    return plots.sequence_classes(classes, show=[1], sequence=(np.array([0, 11, 3, 18, 30]), 0))


def _sequence_classes_M(M):
    # the tick step switches from 5 to 20 above M = 200
    def draw():
        return plots.sequence_classes(make_sequence_classes(2, M, num_common=2, num_distinct=2), show=[0])
    return draw


FIGURES = {
    "hero_frozen": _hero_frozen,
    "hero_class1": _hero_class1,
    "hero_two_distinct": _hero_two_distinct,
    "model_diagram": _model_diagram,
    "sequence_classes_all": _sequence_classes_all,
    "sequence_classes_other": _sequence_classes_other,
    "sequence_classes_M200": _sequence_classes_M(200),
    "sequence_classes_M201": _sequence_classes_M(201),
}


# The figures are drawn, and their fingerprints taken (tick labels are made lazily, under the
# rcParams of that moment), under matplotlib's own defaults whatever other tests or a
# matplotlibrc set (hero and model_diagram are not @_styled: they draw under the caller's rc),
# changed where the functions pass a value of their own (a patch's face colour, a text's size and
# colour): an explicit value dropped, or set to None, shows.
CALLER_RC = {"patch.facecolor": "red", "font.size": 12, "text.color": "0.2"}


@contextlib.contextmanager
def caller_rc():
    with matplotlib.rc_context():
        matplotlib.rcdefaults()
        matplotlib.rcParams.update(CALLER_RC)
        yield


@pytest.mark.parametrize("name", list(FIGURES))
def test_figure_matches_its_snapshot(name):
    with caller_rc():
        check_snapshot(name, FIGURES[name]())


def test_a_missing_snapshot_fails_and_a_changed_one_names_the_artist_and_property(tmp_path, monkeypatch):
    from matplotlib.figure import Figure

    def figure(colour):
        fig = Figure(figsize=(3, 2))
        ax = fig.subplots()
        ax.set_title("a panel", loc="left")
        ax.plot([0, 1], [1, 2], color=colour)
        return fig
    monkeypatch.setattr(__import__(__name__), "SNAPSHOTS", tmp_path)
    monkeypatch.delenv(UPDATE_ENV, raising=False)
    with pytest.raises(pytest.fail.Exception, match=f"no snapshot .*{UPDATE_ENV}=1"):
        check_snapshot("tiny", figure("tab:blue"))
    assert not (tmp_path / "tiny.json").exists()                  # never written silently
    monkeypatch.setenv(UPDATE_ENV, "1")
    check_snapshot("tiny", figure("tab:blue"))
    monkeypatch.delenv(UPDATE_ENV)
    check_snapshot("tiny", figure("#1f77b4"))                     # the same colour, written otherwise
    with pytest.raises(pytest.fail.Exception) as e:
        check_snapshot("tiny", figure("tab:orange"))
    assert "axes[0] 'a panel' lines[0]: color: snapshot [0.1215686275, 0.4666666667, 0.7058823529, 1.0]" in str(e.value)
