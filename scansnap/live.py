"""Live panels: sliders that re-train the Y/Z model in the reader's browser, with no kernel.

:func:`panel` returns an object whose ``_repr_html_`` is a self-contained panel: native sliders
(log-scale for the rates) and canvas views, driven by a JavaScript port of the model
(``scansnap/js/yzlive.js``: the counts forward pass of Eq. 20, Lemma 1's gradients, SGD with
momentum and Adam with PyTorch's rules, a seeded sampler, the T -> infinity dynamics) running
in a Web Worker made from the inlined source. Nothing is fetched: it works in the static HTML
book (also from ``file://``), in Jupyter and in Colab, offline. A chapter makes it the last
expression of a cell::

    from scansnap import live
    live.panel(["scan"], controls=["eta_y", "eta_z", "seed"], static=fig)

The JavaScript run is the same model and the same update rules as :func:`scansnap.train`
(``tests/test_live.py`` checks its gradients, updates and T -> infinity dynamics against the
package to 1e-9 in float64), but its own random stream: a JavaScript run at seed 2 is a run
*like* the Python trainer's at seed 2, not the same draws. The ``"default"`` init is drawn
exactly as ``init_yz(..., dtype=torch.float64)`` draws it (torch's MT19937), so with
``init="default"`` both start from the same (Y, Z) as a float64 Python run.

The HTML depends only on the arguments (no time stamp, no random id), so strict nbval can
compare it. A reader without JavaScript (or an untrusted notebook) sees the static figure
passed as ``static`` and one sentence saying what the panel does: the live UI replaces them
when the script runs.

Views (``views=[...]``, drawn in this order; each example is the whole call)
----------------------------------------------------------------------------
``"cn"``
    c_n (Eq. 5) over class 0's tokens, common then distinct by increasing P(l|n), at the
    steps ``cn_steps`` (and the last step), as :func:`scansnap.plots.cn_over_training`::

        live.panel(["cn", "loss"], controls=["eta_y", "eta_z", "seed"])

``"loss"``
    the batch loss at every step (log scale), with the T -> infinity run from the same
    init dashed beside it (``reference=True``)::

        live.panel(["loss"], controls=["T", "batch", "seed"])

``"entropy"``
    the distinct-token entropy (:func:`scansnap.metrics.distinct_entropy`) over the steps::

        live.panel(["entropy"], data="syn_medium", num_last=3, init="default", controls=["eta_y", "eta_z"])

``"scan"``
    c_n of each of class 0's tokens over time (common tokens as a grey band, distinct tokens
    coloured by P) with gamma(t) of Eq. 85 beneath it and t_0 = 2(1+omega_1) K ln M / eta_Y
    marked. With momentum beta both are read on momentum's clock (the intro's box): step s is
    tau(s) = sum_{j<=s} (1 - beta^j)/(1 - beta) units of the theory's time, gamma is drawn at
    tau(s) and t_0 marked where tau reaches it (the axis label gives its value)::

        live.panel(["scan"], controls=["eta_y", "eta_z", "momentum"])

``"snap"``
    ||c_n(2s) - c_n(s)||_1 at steps s = 1, 2, 4, ... on log-log axes, t_0 marked on the steps' clock (chapter 5)::

        live.panel(["snap"], data="syn_medium", num_last=1, steps=2048, controls=["eta_y", "eta_z", "seed"])

``"bars"``
    class 0's share of c_n over its distinct tokens at the last step (Fig. 6's point), the
    share at step 0 as dots, the entropy in the title::

        live.panel(["bars"], data="syn_medium", num_last=1, eta_y=2.0, init="default", seed=1,
                   controls=["eta_y", "eta_z", "num_last"])

The book's pages (the calls the chapters make; ``fig`` is the chapter's matplotlib figure of the
same setting, shown to readers without JavaScript)
-----------------------------------------------------------------------------------------------
The intro's hero (the scan with gamma(t) and t_0)::

    live.panel(["scan"], controls=["eta_y", "eta_z", "momentum"], static=fig,
               title="Scan and snap, trained in your browser",
               question="Raise η<sub>Y</sub>: does t<sub>0</sub> come sooner?")

Chapter 1's training figure (Fig. 4: c_n at steps 0-100 and the loss, Syn-Small, seed 2)::

    live.panel(["cn", "loss"], controls=["eta_y", "eta_z", "seed", "T", "batch"],
               ranges={"T": (2, 512), "batch": (1, 512)}, static=fig)

Chapter 4's scan (c_n at five steps and every token over time)::

    live.panel(["cn", "scan"], controls=["eta_y", "eta_z", "seed"], static=fig)

Chapter 5's snap (Syn-Medium with one query, 2,048 steps, seed 1)::

    live.panel(["snap"], data="syn_medium", num_last=1, steps=2048, seed=1,
               controls=["eta_y", "eta_z", "seed"], static=fig)

One point of Fig. 6 (Syn-Medium, eta_Y/eta_Z = 2, the authors' uniform init, seed 1)::

    live.panel(["bars", "entropy"], data="syn_medium", num_last=1, eta_y=2.0, eta_z=1.0, seed=1,
               init="default", controls=["eta_y", "eta_z", "num_last"], static=fig)

Controls (``controls=[...]``): ``eta_y``, ``eta_z`` (log-scale, continuous), ``steps``, ``T``
(its last stop is infinity: the expected-gradient dynamics), ``batch`` (integer stops, about
20 per decade), ``seed``, ``num_last`` (number of queries), ``num_distinct`` (distinct tokens
per class), ``momentum``, ``optimizer`` (SGD / Adam), ``init`` (zero / default). Their ranges
are :data:`RANGES` unless ``ranges={"eta_y": (0.1, 10), ...}`` narrows them.
"""
from __future__ import annotations

import base64
import functools
import html
import json
import math
from dataclasses import dataclass
from pathlib import Path

from ._validate import positive, positive_int
from . import printed

JS_DIR = Path(__file__).resolve().parent / "js"

VIEWS = ("cn", "loss", "entropy", "scan", "snap", "bars")
CONTROLS = ("eta_y", "eta_z", "steps", "T", "batch", "seed", "num_last", "num_distinct", "momentum",
            "optimizer", "init")
OPTIMIZERS = ("sgd", "adam")
INITS = ("zero", "default")
# Presets: the authors' generator (scansnap.data.make_classes) with these arguments.
DATA = {
    "syn_small": dict(num_last=2, num_next_per_last=1, label="Syn-Small"),   # scansnap.syn_small()
    "syn_medium": dict(num_last=1, num_next_per_last=2, label="Syn-Medium"),  # scansnap.syn_medium(k, 2)
}
# What a slider may reach (the engine's own hard limits are wider). A panel's control must
# start inside its range; ranges= may narrow these, never widen them.
RANGES = {
    "eta_y": (0.01, 100.0), "eta_z": (0.01, 100.0), "steps": (1, 4096), "T": (2, 1024),
    "batch": (1, 1024), "seed": (0, 99), "num_last": (1, 10), "num_distinct": (2, 40),
    "momentum": (0.0, 0.99),
}
# The most work one slider move may ask for (multiply-adds, as yzlive.js's workOf counts them;
# the engine refuses more): about 2e9, some seconds in a browser on a 2-core laptop.
MAX_WORK = 2e9
INT_CONTROLS = ("steps", "T", "batch", "seed", "num_last", "num_distinct")
LABELS = {"eta_y": "η_Y", "eta_z": "η_Z", "steps": "steps", "T": "T", "batch": "batch size",
          "seed": "seed", "num_last": "queries", "num_distinct": "distinct tokens",
          "momentum": "momentum", "optimizer": "optimiser", "init": "initialisation"}
VIEW_WORDS = {"cn": "the attention c_n over the tokens", "loss": "the loss curve",
              "entropy": "the distinct-token entropy", "scan": "the attention of each token over time",
              "snap": "the change of the attention per doubling of the steps",
              "bars": "the share of attention on each distinct token"}


@functools.lru_cache(maxsize=None)
def _asset(name: str) -> str:
    return (JS_DIR / name).read_text(encoding="utf-8")


def _compact(js: str) -> str:
    """Drop whole-line comments and indentation (the sources keep them; the page need not)."""
    out, in_block = [], False
    for line in js.splitlines():
        s = line.strip()
        if in_block:
            in_block = "*/" not in s
            continue
        if s.startswith("/*") and ("*/" not in s or s.endswith("*/")):
            in_block = "*/" not in s
            continue
        if not s or s.startswith("//"):
            continue
        out.append(s)
    return "\n".join(out)


@functools.lru_cache(maxsize=None)
def script() -> str:
    """The engine and the panel code as one script (what every panel inlines)."""
    js = _compact(_asset("yzlive.js")) + "\n" + _compact(_asset("panel.js")) + "\nYZLivePanel.initAll();"
    for bad in ("</script", "<!--"):
        if bad in js.lower():
            raise RuntimeError(f"the panel's JavaScript contains {bad!r}: it would end the inline <script>")
    return js


@functools.lru_cache(maxsize=None)
def style() -> str:
    return _compact(_asset("panel.css"))


def _png_bytes(static) -> bytes:
    if static is None:
        return b""
    if isinstance(static, (bytes, bytearray)):
        data = bytes(static)
    elif isinstance(static, (str, Path)):
        p = Path(static)
        if not p.is_file():
            raise ValueError(f"static figure {str(static)!r}: no such file")
        data = p.read_bytes()
    elif hasattr(static, "savefig"):
        from .ui import _png  # a 256-colour 2x PNG, as the slider panels make them
        data, _ = _png(static)
    else:
        raise ValueError(f"static must be a matplotlib Figure, PNG bytes or a PNG file path; "
                         f"got {type(static).__name__}")
    if not data.startswith(b"\x89PNG\r\n\x1a\n"):
        raise ValueError("static is not a PNG image (its first bytes are not the PNG signature)")
    return data


def work(steps, batch, T, K, M, S, reference=True) -> float:
    """A run's cost in multiply-adds: yzlive.js's ``workOf`` (T-1 draws and ~4 S M per sequence,
    6 M^2 for the optimiser per step; the T -> infinity reference adds K pseudo-sequences)."""
    per_seq = 4 * S * M
    limit = T == "inf"
    step = (K * per_seq if limit else batch * (T - 1 + per_seq)) + 6 * M * M
    if reference and not limit:
        step += K * per_seq + 6 * M * M
    return float(steps * step)


def _check_range(name, lo, hi):
    base = RANGES[name]
    if not (isinstance(lo, (int, float)) and isinstance(hi, (int, float))) or isinstance(lo, bool):
        raise ValueError(f"range of {name} must be two numbers, got {(lo, hi)!r}")
    if name in INT_CONTROLS and (int(lo) != lo or int(hi) != hi):
        raise ValueError(f"range of {name} must be two integers, got {(lo, hi)!r}")
    if not lo < hi:
        raise ValueError(f"range of {name} must have low < high, got {(lo, hi)!r}")
    if lo < base[0] or hi > base[1]:
        raise ValueError(f"range of {name} {(lo, hi)!r} exceeds what a panel allows, {base!r}")
    return (int(lo), int(hi)) if name in INT_CONTROLS else (float(lo), float(hi))


@dataclass(frozen=True)
class LivePanel:
    """A live panel; display it (``_repr_html_``), or write it into a page with :meth:`save`."""

    config: str        # the JSON the page reads (sorted keys: deterministic)
    png: bytes         # the static figure for readers without JavaScript (may be empty)
    alt: str
    note: str
    summary: str

    def _repr_html_(self) -> str:
        return self.html()

    def _repr_png_(self) -> bytes | None:
        """The static figure, for the printed edition (the HTML pages show the panel instead)."""
        return printed.with_note(self.png, self.printed_note()) if self.png else None

    def printed_note(self) -> str:
        """What the online edition does with this panel, in one line under the printed figure."""
        cfg = json.loads(self.config)
        shown = ", ".join(LABELS[c] for c in cfg["controls"]) or "none"
        note = (f"Online, this panel re-trains the model ({cfg['data_label']}) in the reader's browser "
                f"as its sliders ({shown}) move; printed: the figure computed when the book was built.")
        if cfg.get("question"):
            note += f" The panel asks: {printed.plain(cfg['question'])}"
        return note

    def __repr__(self) -> str:
        return f"LivePanel({self.summary})"

    def html(self) -> str:
        """The panel's HTML: static fallback, config, style and the inlined engine."""
        img = ""
        if self.png:
            from .plots import legible_width, read_png_meta

            b64 = base64.b64encode(self.png).decode("ascii")
            img = f'<img src="data:image/png;base64,{b64}" alt="{html.escape(self.alt)}">'
            legible = legible_width(read_png_meta(self.png))
            if legible:        # on a phone the figure keeps its text legible and its box scrolls
                img = f'<div class="yz-figbox" style="--fig-legible: {math.ceil(legible)}px">{img}</div>'
        cfg = self.config.replace("</", "<\\/")
        return (f'<div class="yzlive-panel">'
                f"<style>{style()}</style>"
                f'<div class="yzlive-fallback">{img}<p>{html.escape(self.note)}</p></div>'
                f'<script type="application/json" class="yzlive-config">{cfg}</script>'
                f"<script>{script()}</script></div>")

    def save(self, path, title: str = "scansnap live panel") -> Path:
        """Write a standalone page holding this panel (see :func:`page` for several)."""
        return page([self], path, title)


def page(panels, path, title: str = "scansnap live panels", intro: str = "") -> Path:
    """Write a minimal standalone HTML page with ``panels`` (a demo, or a test's page)."""
    body = "\n".join(p.html() for p in panels)
    doc = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
           "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
           f"<title>{html.escape(title)}</title>"
           "<style>body{margin:0 auto;padding:12px;max-width:760px;font-family:system-ui,sans-serif}"
           "@media (prefers-color-scheme: dark){body{background:#0d1117;color:#e6edf3}}</style>"
           f"</head><body><h1>{html.escape(title)}</h1>{intro}\n{body}\n</body></html>\n")
    path = Path(path)
    path.write_text(doc, encoding="utf-8")
    return path


def panel(views=("cn", "loss"), *, controls=("eta_y", "eta_z"), data: str = "syn_small",
          num_last: int | None = None, num_distinct: int = 10, eta_y: float = 1.0, eta_z: float = 1.0,
          steps: int = 100, batch: int = 128, T=128, seed: int = 2, optimizer: str = "sgd",
          momentum: float = 0.9, init: str = "zero", cls: int = 0, cn_steps=(0, 10, 20, 50, 100),
          ranges: dict | None = None, reference: bool = True, static=None, alt: str | None = None,
          note: str | None = None, title: str | None = None, question: str | None = None,
          main: str | None = None) -> LivePanel:
    """A live panel training the Y/Z model in the browser; see the module docstring for each view.

    ``data`` is ``"syn_small"`` (Syn-Small: ``make_classes(num_last=2, 1)``) or ``"syn_medium"``
    (Syn-Medium: ``make_classes(num_last, 2)``, num_last 1 unless given), with ``num_distinct``
    distinct tokens per class. The training settings default to the paper's Syn-Small ones
    (batch 128, T = 128, 100 steps of SGD with momentum 0.9, zero init); ``T=math.inf`` (or
    ``"inf"``) trains on the expected gradient (T -> infinity, every class, no sampling).
    ``controls`` picks the sliders shown, ``ranges`` narrows their ranges. ``cls`` is the
    class whose c_n the views draw. ``reference`` draws the T -> infinity run beside the
    sampled one in the loss and entropy views. ``static`` (a matplotlib Figure, PNG bytes or a
    PNG path) and ``note`` are what a reader without JavaScript sees; ``alt`` is the image's
    text. ``title`` and ``question`` (HTML allowed: what should the reader try?) head the panel.

    Panels compare: the axes are fixed when the page loads, to hold the default run and the runs
    with the ``main`` slider (default: the first slider of ``controls``) at each end of its range,
    and grow only if a later run leaves them; once a slider has moved, the default run stays drawn
    behind the new one as a faint grey ghost, and a line says what changed ("top token 0.19 ->
    0.10; t0 6.5 -> 1.6").
    """
    if isinstance(views, str):
        views = (views,)
    views = tuple(views)
    if not views:
        raise ValueError(f"a panel needs at least one view: choose from {VIEWS}")
    for v in views:
        if v not in VIEWS:
            raise ValueError(f"unknown view {v!r}: use one of {VIEWS}")
    if len(set(views)) != len(views):
        raise ValueError(f"a view is listed twice: {views!r}")
    if isinstance(controls, str):
        controls = (controls,)
    controls = tuple(controls)
    for c in controls:
        if c not in CONTROLS:
            raise ValueError(f"unknown control {c!r}: use one of {CONTROLS}")
    if len(set(controls)) != len(controls):
        raise ValueError(f"a control is listed twice: {controls!r}")
    if main is not None and (main not in controls or main in ("optimizer", "init")):
        raise ValueError(f"main={main!r} must be one of the panel's sliders: "
                         f"{tuple(c for c in controls if c not in ('optimizer', 'init'))}")
    if data not in DATA:
        raise ValueError(f"unknown data {data!r}: use one of {tuple(DATA)}")
    rng = dict(RANGES)
    for name, r in (ranges or {}).items():
        if name not in RANGES:
            raise ValueError(f"ranges: {name!r} has no range; ranged controls are {tuple(RANGES)}")
        try:
            lo, hi = r
        except (TypeError, ValueError):
            raise ValueError(f"range of {name} must be a pair (low, high), got {r!r}") from None
        rng[name] = _check_range(name, lo, hi)

    preset = DATA[data]
    num_last = preset["num_last"] if num_last is None else num_last
    values = dict(
        eta_y=positive("eta_y", eta_y), eta_z=positive("eta_z", eta_z),
        steps=positive_int("steps", steps), batch=positive_int("batch size", batch),
        seed=positive_int("seed", seed, minimum=0), num_last=positive_int("num_last", num_last),
        num_distinct=positive_int("num_distinct", num_distinct, minimum=1),
    )
    if isinstance(T, str) and T == "inf" or (isinstance(T, float) and math.isinf(T) and T > 0):
        values["T"] = "inf"
    else:
        values["T"] = positive_int("T (sequence length)", T, minimum=2)
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"unknown optimizer {optimizer!r}: use one of {OPTIMIZERS}")
    if init not in INITS:
        raise ValueError(f"unknown init {init!r}: use one of {INITS}")
    if isinstance(momentum, bool) or not isinstance(momentum, (int, float)) or not 0 <= momentum < 1:
        raise ValueError(f"momentum must be in [0, 1), got {momentum!r}")
    values.update(optimizer=optimizer, init=init, momentum=float(momentum))
    # every value inside the panel's hard limits, and inside its slider's range when shown
    for name in ("eta_y", "eta_z", "steps", "batch", "seed", "num_last", "num_distinct", "momentum", "T"):
        v = values[name]
        lo, hi = rng[name] if name in controls else RANGES[name]
        if v == "inf":
            continue
        if not lo <= v <= hi:
            where = "its slider's range" if name in controls else "what a panel allows"
            raise ValueError(f"{name}={v!r} is outside {where}, [{lo}, {hi}]")
    K = values["num_last"] * preset["num_next_per_last"]
    cls = positive_int("cls (class shown)", cls, minimum=0)
    if cls >= K:
        raise ValueError(f"cls={cls} out of range: the data has {K} classes")
    cn = sorted({positive_int("cn_steps entry", s, minimum=0) for s in cn_steps})
    # the largest run the sliders can reach must stay within MAX_WORK: say which to narrow
    corner = {k: (rng[k][1] if k in controls else values[k]) for k in
              ("steps", "batch", "T", "num_last", "num_distinct")}
    for tv in ([corner["T"]] + (["inf"] if "T" in controls else [])):
        nl, nd = corner["num_last"], corner["num_distinct"]
        Kc = nl * preset["num_next_per_last"]
        Mc = 10 + nd * Kc + nl + Kc
        w = work(corner["steps"], corner["batch"], tv, Kc, Mc, 10 + nd, reference)
        if w > MAX_WORK:
            sized = [k for k in ("steps", "batch", "T", "num_last", "num_distinct") if k in controls]
            raise ValueError(
                f"the largest run these sliders reach ({', '.join(f'{k}={corner[k]}' for k in corner)}) "
                f"is {w:.2g} operations, over a live panel's {MAX_WORK:.0e}: narrow "
                + (f"ranges= of {sized}" if sized else "steps, batch or T"))
    if not isinstance(reference, bool):
        raise ValueError(f"reference must be True or False, got {reference!r}")
    png = _png_bytes(static)

    cfg = dict(
        v=1, views=list(views), controls=list(controls), values=values, cls=cls, cn_steps=cn,
        data=dict(numNextPerLast=preset["num_next_per_last"], numCommon=10, commonWeight=1.0,
                  distinctMin=0.1, distinctMax=1.0),
        ranges={k: list(v) for k, v in rng.items()}, allow_inf=True, reference=reference,
        title=title or "", question=question or "", data_label=preset["label"],
    )
    if main is not None:
        cfg["main"] = main
    config = json.dumps(cfg, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
    shown = ", ".join(LABELS[c] for c in controls) or "none"
    what = ", ".join(VIEW_WORDS[v] for v in views)
    if note is None:
        note = (f"With JavaScript on, this panel re-trains the model ({preset['label']}) in your browser "
                f"whenever you move a slider ({shown}) and redraws {what}.")
        if png:
            note += " Shown instead: the figure computed when this page was built."
    if alt is None:
        alt = f"Static figure of the live panel: {what}."
    summary = (f"views={views!r}, controls={controls!r}, data={data!r}, "
               + ", ".join(f"{k}={values[k]!r}" for k in sorted(values)))
    return LivePanel(config, png, alt, note, summary)
