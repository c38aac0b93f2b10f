"""What one slider move costs in a live kernel, per chapter, against a bare-figure baseline.

For each chapter whose notebook calls ``slider_panel(`` (grep of ``book/*.ipynb``):

1. a fresh kernel (nbclient, the same kernel and working directory as
   ``tools/execute_notebooks.py``) executes, in order, the code cells before the slider cell
   that the slider cell needs (``needed_cells``: walking back from the slider cell, a cell is
   kept when it binds or may change a name that the slider cell or a kept cell reads; the
   install cell, which calls ``scansnap.book.setup()``, 2 torch threads, always);
2. the slider cell itself is executed with ``scansnap.ui.slider_panel`` replaced by a stub that
   records ``draw`` and the controls (so the cell's own grid precomputation for the static page
   does not run, everything else in the cell does);
3. the real ``slider_panel(draw, precompute=False, **controls)`` is built in that kernel and the
   sliders are moved by assigning ``control.value`` (what the widget comm does when a reader
   drags a slider): the panel's ``redraw`` runs synchronously through the traitlets observer,
   i.e. the chapter's ``draw`` for the new value, the shared axes limits, and ``scansnap.ui._png``
   (the 2x, 256-colour PNG). The moves walk the whole grid one notch at a time (boustrophedon),
   so every grid point is drawn once and every move changes one slider by one step.
4. Before every move, a baseline in the same kernel: a bare ``matplotlib.figure.Figure`` of the
   figure's size with one empty axes, saved as PNG at the panel's resolution (2 x 100 dpi).

Not counted: the widget messages between browser and kernel (a few ms on localhost).

Usage::

    nice -n 10 python bench/bench_sliders.py [--chapters 06-figures ...] [--max-moves 40]
        [--profile] [--write bench/sliders.md]

``--profile`` runs cProfile on the slowest move of every chapter whose median is over the goal
(0.2 s) and prints the top functions by cumulative time.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOAL = 0.2
MARK = "@@BENCH@@"

CAPTURE = """
import scansnap.ui as _bui
_bench_orig_panel = _bui.slider_panel
_bench = {}
def _bench_capture(draw, **kw):
    _bench['draw'] = draw
    _bench['controls'] = {k: v for k, v in kw.items() if k not in ('precompute', 'progress', 'scale')}
_bui.slider_panel = _bench_capture
"""

MEASURE = r"""
import cProfile as _cp, io as _io, json as _json, pstats as _ps, time as _time
from matplotlib.figure import Figure as _Fig
_bui.slider_panel = _bench_orig_panel
_draw, _controls = _bench['draw'], _bench['controls']
_t = {}
def _clock():
    return _time.perf_counter(), _time.process_time()
def _since(t):
    w, c = _clock()
    return w - t[0], c - t[1]
def _timed_draw(**kw):
    t = _clock(); fig = _draw(**kw); _t['draw'] = _since(t)
    _t['size'] = tuple(fig.get_size_inches()); _t['dpi'] = fig.dpi
    return fig
_orig_png = _bui._png
def _timed_png(fig, scale=_bui.SCALE):
    t = _clock(); out = _orig_png(fig, scale); _t['png'] = _since(t); _t['bytes'] = len(out[0])
    return out
_bui._png = _timed_png
def _baseline():
    t = _clock()
    fig = _Fig(figsize=_bench['size'], dpi=_bench['dpi']); fig.subplots()
    buf = _io.BytesIO(); fig.savefig(buf, format='png', dpi=_bench['dpi'] * _bui.SCALE)
    return _since(t)
_names = list(_controls)
def _walk(level):
    if level == len(_names):
        return [()]
    rest = _walk(level + 1)
    out = []
    for i, v in enumerate(_controls[_names[level]].options):
        out += [(v,) + r for r in (rest if i % 2 == 0 else rest[::-1])]
    return out
_points = _walk(0)[::-1] if REVERSE else _walk(0)
for _n, _v in zip(_names, _points[0]):
    _controls[_n].value = _v           # untimed: the walk's start (also warms up)
_panel = _bench_orig_panel(_timed_draw, precompute=False, progress=False, **_controls)
_bench['size'], _bench['dpi'] = _t['size'], _t['dpi']
_moves = []
_prev = _points[0]
for _p in _points[1:MAX_MOVES + 1]:
    _base = _baseline()
    (_n, _v), = [(n, v) for n, v, u in zip(_names, _p, _prev) if v != u]
    _t.clear()
    _tm = _clock(); _controls[_n].value = _v; _tot = _since(_tm)
    _moves.append(dict(key=[str(x) for x in _p], point=_points.index(_p), total=_tot, draw=_t['draw'], png=_t['png'],
                       bytes=_t['bytes'], baseline=_base, size=list(_t['size'])))
    _prev = _p
_prof = None
if PROFILE and sorted(m['total'][0] for m in _moves)[len(_moves) // 2] > GOAL:
    _slow = max(_moves, key=lambda m: m['total'][0])
    _kw = dict(zip(_names, _points[_slow['point']]))
    _pr = _cp.Profile(); _pr.enable(); _orig_png(_draw(**_kw)); _pr.disable()
    _s = _io.StringIO(); _ps.Stats(_pr, stream=_s).sort_stats('cumulative').print_stats(25)
    _prof = dict(key=_slow['key'], text=_s.getvalue())
print(MARK + _json.dumps(dict(names=_names, moves=_moves, profile=_prof)))
"""


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def slider_chapters() -> list[str]:
    return sorted(p.stem for p in (ROOT / "book").glob("*.ipynb") if "slider_panel(" in p.read_text())


_MUTATE = {"append", "extend", "update", "add", "insert", "pop", "setdefault", "clear", "remove", "sort"}


def _names(source: str):
    """(names a cell binds or mutates, names it reads), from its code (IPython syntax allowed)."""
    import ast

    from IPython.core.inputtransformer2 import TransformerManager
    try:
        tree = ast.parse(TransformerManager().transform_cell(source))
    except SyntaxError:
        return None
    bound, read = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (bound if isinstance(node.ctx, (ast.Store, ast.Del)) else read).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(node.ctx, ast.Store):
            base = node
            while isinstance(base, (ast.Attribute, ast.Subscript)):
                base = base.value
            if isinstance(base, ast.Name):
                bound.add(base.id)          # x.a = ... / x[k] = ...: the cell changes x
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _MUTATE:
            base = node.func.value          # x.update(...), x.append(...): changes x
            if isinstance(base, ast.Name):
                bound.add(base.id)
    return bound, read - bound              # a name the cell binds itself is its own


def needed_cells(cells, k):
    """Indices of the code cells before cell k that the slider cell needs: walking back, a cell
    is kept when it binds (or may change) a name that the slider cell or a kept cell reads. The
    first code cell (install + setup) is always kept; a cell that cannot be parsed is kept."""
    code = [i for i in range(k) if cells[i].cell_type == "code"]
    need = set(_names(cells[k].source)[1])
    keep = {code[0]}
    for i in reversed(code):
        nr = _names(cells[i].source)
        if nr is None or nr[0] & need:
            keep.add(i)
            if nr is not None:
                need |= nr[1]
    return sorted(keep)


def run_chapter(name: str, max_moves: int, profile: bool, reverse: bool = False) -> dict:
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(ROOT / "book" / f"{name}.ipynb", as_version=4)
    idx = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and "slider_panel(" in c.source]
    if len(idx) != 1:
        raise SystemExit(f"{name}: expected one cell calling slider_panel(, found {len(idx)}")
    k = idx[0]
    code = (MEASURE.replace("MAX_MOVES", str(max_moves)).replace("PROFILE", str(profile))
            .replace("GOAL", str(GOAL)).replace("REVERSE", str(reverse)).replace("MARK", repr(MARK)))
    # nbclient keys outputs by index: the two extra cells go into the notebook, around the slider cell
    cell = nbformat.v4.new_code_cell(code)
    nb.cells[k:k + 1] = [nbformat.v4.new_code_cell(CAPTURE), nb.cells[k], cell]
    client = NotebookClient(nb, timeout=1800, kernel_name="python3",
                            resources={"metadata": {"path": str(ROOT / "book")}})
    out: dict = dict(chapter=name, uptime_before=uptime())
    with client.setup_kernel():
        t = time.perf_counter()
        n_exec = 0
        errors = []
        for i in needed_cells(nb.cells, k + 1) + [k, k + 1]:
            client.allow_errors = i < k     # a failing setup cell is reported, not fatal (what the
            client.execute_cell(nb.cells[i], i)   # draw needs is then missing and the measure fails)
            errors += [f"cell {i}: {o['ename']}: {o['evalue'][:160]}" for o in nb.cells[i].get("outputs", [])
                       if o.get("output_type") == "error"]
            n_exec += 1
        out["setup_errors"] = errors
        client.allow_errors = False
        out["setup_s"] = time.perf_counter() - t
        out["cells_executed"] = n_exec - 1
        out["cells_of"] = sum(c.cell_type == "code" for c in nb.cells[:k + 2]) - 1
        client.execute_cell(cell, k + 2)
    text = "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream")
    line = next(l for l in text.splitlines() if l.startswith(MARK))
    out.update(json.loads(line[len(MARK):]))
    out["uptime_after"] = uptime()
    return out


def summarize(r: dict) -> dict:
    tot = [m["total"][0] for m in r["moves"]]
    cpu = [m["total"][1] for m in r["moves"]]
    base = [m["baseline"][0] for m in r["moves"]]
    draw = [m["draw"][0] for m in r["moves"]]
    png = [m["png"][0] for m in r["moves"]]
    slow = max(r["moves"], key=lambda m: m["total"][0])
    med = statistics.median
    bcpu = [m["baseline"][1] for m in r["moves"]]
    return dict(n=len(tot), median=med(tot), slowest=max(tot), cpu_median=med(cpu), cpu_max=max(cpu),
                base=med(base), ratio=med(tot) / med(base), draw=med(draw), png=med(png),
                base_cpu=med(bcpu), ratio_cpu=med(cpu) / med(bcpu),
                draw_cpu=med(m["draw"][1] for m in r["moves"]), png_cpu=med(m["png"][1] for m in r["moves"]),
                slow_key=dict(zip(r["names"], slow["key"])), kb=med(m["bytes"] for m in r["moves"]) / 1e3,
                size=r["moves"][0]["size"])


def markdown(results: list[dict], cmd: str) -> str:
    import torch
    lines = ["# Slider redraw in a live kernel", "",
             f"Command: `{cmd}`  ",
             f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, torch {torch.__version__}, "
             "2 torch threads (the chapters' `scansnap.book.setup()`), CPU.", "",
             "Method: " + " ".join(l.strip() for l in __doc__.split("Not counted")[0].splitlines()[2:]), "",
             "Not counted: the widget messages between browser and kernel (a few ms on localhost).", "",
             "Wall seconds (the reader's wait, stretched by the machine's load) and, in brackets, the "
             "kernel's CPU seconds (what the move costs with a core to itself: the better guide on a "
             "shared machine). Medians over the moves; the slowest is the largest wall time.", "",
             "| chapter | moves | move: median | slowest (at) | draw | `_png` | bare figure -> PNG "
             "(baseline) | move / baseline | <= 0.2 s? |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        s = r["summary"]
        at = ", ".join(f"{k} {v}" for k, v in s["slow_key"].items())
        ok = "yes" if s["cpu_median"] <= GOAL and s["cpu_max"] <= GOAL else ("median" if s["cpu_median"] <= GOAL else "**no**")
        lines.append(f"| {r['chapter']} | {s['n']} | **{s['median']:.3f} s** ({s['cpu_median']:.3f}) | "
                     f"{s['slowest']:.3f} s ({at}; CPU max {s['cpu_max']:.3f}) | {s['draw']:.3f} ({s['draw_cpu']:.3f}) | "
                     f"{s['png']:.3f} ({s['png_cpu']:.3f}) | {s['base']:.3f} ({s['base_cpu']:.3f}) | "
                     f"{s['ratio']:.1f} ({s['ratio_cpu']:.1f}) | {ok} |")
    lines += ["", "<= 0.2 s? judged on the kernel's CPU seconds (yes: every move; median: the median move "
              "only; no: the median move is over).", "", "Load beside each chapter's timing (`uptime`) and the cost of getting the kernel to the "
              "slider (the cells before it, and the slider cell without its grid):", ""]
    for r in results:
        lines.append(f"- {r['chapter']}: before `{r['uptime_before']}`; after `{r['uptime_after']}`; "
                     f"{r['cells_executed']} of the {r.get('cells_of', '?')} code cells up to the slider cell in {r['setup_s']:.1f} s")
    for r in results:
        for e in r.get("setup_errors", []):
            lines.append(f"- {r['chapter']}: a setup cell failed (the slider's draw does not need what it "
                         f"makes; measured anyway): {e}")
    for r in results:
        if r.get("profile"):
            lines += ["", f"### Profile: {r['chapter']}, the slowest move ({', '.join(r['profile']['key'])})", "",
                      "cProfile of `draw(**values)` + `scansnap.ui._png` once, top functions by cumulative time:", "",
                      "```", trim_profile(r["profile"]["text"]), "```"]
    return "\n".join(lines) + "\n"


def trim_profile(text: str) -> str:
    keep, on = [], False
    for l in text.splitlines():
        if "function calls" in l or l.strip().startswith("ncalls"):
            on = True
        if on and l.strip():
            keep.append(re.sub(r"/\S*/site-packages/", "", re.sub(str(ROOT) + "/", "", l))[:150])
    return "\n".join(keep)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--chapters", nargs="*", default=None, help="default: every chapter calling slider_panel(")
    ap.add_argument("--max-moves", type=int, default=40)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--reverse", action="store_true",
                    help="walk the grid from its last point (the largest values first: with --max-moves, the costly end)")
    ap.add_argument("--write", default=None, help="write the Markdown report to this file (and its .json)")
    ap.add_argument("--from-json", nargs="*", default=None,
                    help="no measuring: the report from saved per-chapter results (files written by --write)")
    a = ap.parse_args(argv)
    chapters = a.chapters or slider_chapters()
    results = []
    saved = [r for f in a.from_json or [] for r in json.loads(Path(f).read_text())]
    for ch in ([] if a.from_json is not None else chapters):
        r = run_chapter(ch, a.max_moves, a.profile, a.reverse)
        if a.write:      # after every chapter: a long run cut short keeps what it measured
            part = Path(a.write).with_suffix(".json")
            part.write_text(json.dumps(results + [r], indent=1) + "\n")
        r["summary"] = s = summarize(r)
        print(f"{ch}: {s['n']} moves, median {s['median']:.3f} s, slowest {s['slowest']:.3f} s "
              f"(draw {s['draw']:.3f}, png {s['png']:.3f}, baseline {s['base']:.3f}, "
              f"ratio {s['ratio']:.1f}) | {r['uptime_after']}", flush=True)
        results.append(r)
    for r in saved:
        r["summary"] = summarize(r)
        results.append(r)
    cmd = "python bench/" + Path(__file__).name + (" " + " ".join(argv if argv is not None else sys.argv[1:])).rstrip()
    md = markdown(results, cmd)
    print(md)
    if a.write:
        Path(a.write).write_text(md)
        if a.from_json is None:
            Path(a.write).with_suffix(".json").write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
