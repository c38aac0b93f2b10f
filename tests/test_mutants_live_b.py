"""live.py's mutation survivors, part 2 (issue 28): what :func:`scansnap.live.panel` builds for
fixed arguments (a committed snapshot of each panel's config JSON, note, alt text, summary and
printed note), its argument errors word for word, :func:`live.work`'s count, ``_compact`` and
``_png_bytes``. In-process: no browser, no Node.

The snapshot is ``tests/snapshots/live/panels.json``; after a change that is meant, rewrite it with

    SCANSNAP_UPDATE_SNAPSHOTS=1 .venv/bin/python -m pytest tests/test_mutants_live_b.py

and review its diff before committing it.
"""
from __future__ import annotations

import json
import math
import os
import pathlib
import re

import pytest

from scansnap import live
from test_plots_snapshot import UPDATE_ENV, _short

SNAPSHOT = pathlib.Path(__file__).parent / "snapshots" / "live" / "panels.json"
PNG = b"\x89PNG\r\n\x1a\n" + b"not drawn: only the signature is read"

# fixed calls: the book's (see live.py's docstring) and corners of the arguments
CASES = {
    "defaults": dict(),
    "intro_hero": dict(views=["scan"], controls=["eta_y", "eta_z", "momentum"],
                       title="Scan and snap, trained in your browser",
                       question="Raise η<sub>Y</sub>: does t<sub>0</sub> come sooner?"),
    "ch1_training": dict(views=["cn", "loss"], controls=["eta_y", "eta_z", "seed", "T", "batch"],
                         ranges={"T": (2, 512), "batch": (1, 512)}),
    "ch4_scan": dict(views=["cn", "scan"], controls=["eta_y", "eta_z", "seed"]),
    "ch5_snap": dict(views=["snap"], data="syn_medium", num_last=1, steps=2048, seed=1,
                     controls=["eta_y", "eta_z", "seed"]),
    "fig6_point": dict(views=["bars", "entropy"], data="syn_medium", num_last=1, eta_y=2.0, eta_z=1.0,
                       seed=1, init="default", controls=["eta_y", "eta_z", "num_last"]),
    # no sliders, T = infinity as a float, Adam, no momentum, seed 0, the top of eta_y's range,
    # one distinct token's minimum
    "no_sliders_limit": dict(views="entropy", controls=[], T=math.inf, optimizer="adam", momentum=0.0,
                             seed=0, eta_y=100.0, eta_z=0.01, steps=1, batch=1),
    # views and controls as one string, "inf" as text, unsorted and repeated cn_steps, no
    # reference, a main slider, a class other than 0, narrowed ranges, non-ASCII title, a figure
    "strings_and_main": dict(views="snap", controls="seed", T="inf", cn_steps=(50, 0, 50, 7),
                             reference=False, main="seed", data="syn_medium", num_last=2, cls=3,
                             ranges={"seed": (0, 9), "eta_y": (0.1, 10.0)}, title="η <b>",
                             static=PNG, alt="my alt", num_distinct=2),
    "figure_default_note": dict(views=["cn"], controls=["eta_z", "steps", "num_distinct", "optimizer", "init"],
                                static=PNG, main="eta_z", ranges={"steps": (1, 200)}),
}


def record(p: live.LivePanel) -> dict:
    return dict(config=json.loads(p.config), note=p.note, alt=p.alt, summary=p.summary,
                printed_note=p.printed_note(), png_bytes=len(p.png), repr=repr(p))


def _flat(v, key=""):
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            out.update(_flat(x, f"{key}.{k}" if key else k))
        return out
    return {key: v}


def _diffs(case, snap, got):
    out = []
    if snap["config"] != got["config"]:
        a, b = _flat(snap["config"]), _flat(got["config"])
        for k in sorted(set(a) | set(b)):
            if k not in b:
                out.append(f"{case}: config.{k}: in the snapshot ({_short(a[k])}), not made")
            elif k not in a:
                out.append(f"{case}: config.{k}: made ({_short(b[k])}), not in the snapshot")
            elif a[k] != b[k] or type(a[k]) is not type(b[k]):
                out.append(f"{case}: config.{k}: snapshot {_short(a[k])}, made {_short(b[k])}")
        if not out:
            out.append(f"{case}: config text: snapshot {_short(snap['config'])}, made {_short(got['config'])}")
    for k in snap:
        if k != "config" and snap[k] != got.get(k):
            out.append(f"{case}: {k}: snapshot {_short(snap[k])}, made {_short(got.get(k))}")
    return out


def test_the_panels_match_their_snapshot():
    panels = {name: live.panel(**kw) for name, kw in CASES.items()}
    for name, p in panels.items():       # the config's text: keys sorted, compact, ASCII only
        assert p.config == json.dumps(json.loads(p.config), sort_keys=True, separators=(",", ":"),
                                      ensure_ascii=True), name
    got = {name: record(p) for name, p in panels.items()}
    if os.environ.get(UPDATE_ENV) == "1":
        SNAPSHOT.parent.mkdir(parents=True, exist_ok=True)
        SNAPSHOT.write_text(json.dumps(got, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        return
    if not SNAPSHOT.exists():
        pytest.fail(f"no snapshot {SNAPSHOT}: write it with {UPDATE_ENV}=1 (review the file, then commit it)")
    snap = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    assert sorted(snap) == sorted(got), "the snapshot's cases are not CASES"
    diffs = [d for name in CASES for d in _diffs(name, snap[name], got[name])]
    if diffs:
        pytest.fail(f"{len(diffs)} differences from {SNAPSHOT.name} ({UPDATE_ENV}=1 rewrites it if the "
                    f"change is meant):\n" + "\n".join(diffs[:30]), pytrace=False)


def test_the_snapshot_is_what_the_book_needs():
    """A few of the snapshot's values read back, so that it cannot be rewritten to nonsense unseen."""
    snap = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    d = snap["defaults"]["config"]
    assert d["values"] == dict(eta_y=1.0, eta_z=1.0, steps=100, batch=128, T=128, seed=2, num_last=2,
                               num_distinct=10, optimizer="sgd", momentum=0.9, init="zero")
    assert d["cls"] == 0 and d["cn_steps"] == [0, 10, 20, 50, 100] and d["reference"] is True
    assert d["data"] == dict(numNextPerLast=1, numCommon=10, commonWeight=1.0, distinctMin=0.1, distinctMax=1.0)
    assert "main" not in d and d["v"] == 1 and d["allow_inf"] is True
    s = snap["strings_and_main"]["config"]
    assert s["values"]["T"] == "inf" and s["cn_steps"] == [0, 7, 50] and s["main"] == "seed"
    assert s["title"] == "η <b>" and s["cls"] == 3 and s["ranges"]["seed"] == [0, 9]
    n = snap["no_sliders_limit"]
    assert "(none)" in n["note"] and "(none)" in n["printed_note"]


def msg(text):
    return "^" + re.escape(text) + "$"


@pytest.mark.parametrize("kw, text", [
    (dict(controls=["seed", "seed"]), "a control is listed twice: ('seed', 'seed')"),
    (dict(controls=["eta_y", "optimizer"], main="optimizer"),
     "main='optimizer' must be one of the panel's sliders: ('eta_y',)"),
    (dict(controls=["eta_y", "init"], main="init"), "main='init' must be one of the panel's sliders: ('eta_y',)"),
    (dict(controls=["eta_y", "init"], main="eta_z"), "main='eta_z' must be one of the panel's sliders: ('eta_y',)"),
    (dict(ranges={"eta_y": 3}), "range of eta_y must be a pair (low, high), got 3"),
    (dict(seed=-1), "seed must be an integer >= 0, got -1"),
    (dict(num_last=0), "num_last must be an integer >= 1, got 0"),
    (dict(num_distinct=0), "num_distinct must be an integer >= 1, got 0"),
    (dict(num_distinct=1), "num_distinct=1 is outside what a panel allows, [2, 40]"),
    (dict(T="abc"), "T (sequence length) must be an integer >= 2, got 'abc'"),
    (dict(T="INF"), "T (sequence length) must be an integer >= 2, got 'INF'"),
    (dict(T=-math.inf), "T (sequence length) must be an integer >= 2, got -inf"),
    (dict(momentum=False), "momentum must be in [0, 1), got False"),
    (dict(momentum="0.5"), "momentum must be in [0, 1), got '0.5'"),
    (dict(steps=5000), "steps=5000 is outside what a panel allows, [1, 4096]"),
    (dict(controls=["steps"], ranges={"steps": (1, 50)}), "steps=100 is outside its slider's range, [1, 50]"),
    (dict(controls=["eta_y"], eta_y=100.0), None),
    (dict(controls=["eta_y"], ranges={"eta_y": (0.1, 2.0)}, eta_y=2.0), None),
    (dict(controls=[], ranges={"eta_y": (0.1, 2.0)}, eta_y=50.0), None),
    (dict(cls=-1), "cls (class shown) must be an integer >= 0, got -1"),
    (dict(cls=2), "cls=2 out of range: the data has 2 classes"),
    (dict(cn_steps=[0, -5]), "cn_steps entry must be an integer >= 0, got -5"),
    (dict(reference="yes"), "reference must be True or False, got 'yes'"),
])
def test_a_panels_argument_errors_word_for_word(kw, text):
    if text is None:
        live.panel(**kw)
        return
    with pytest.raises(ValueError, match=msg(text)):
        live.panel(**kw)


@pytest.mark.parametrize("kw, text", [
    (dict(controls=["steps", "batch"]), "(steps=4096, batch=1024, T=128, num_last=2, num_distinct=10) is 1.2e+10 "
     "operations, over a live panel's 2e+09: narrow ranges= of ['steps', 'batch']"),
    (dict(controls=[], steps=4096, batch=1024), "(steps=4096, batch=1024, T=128, num_last=2, num_distinct=10) is "
     "1.2e+10 operations, over a live panel's 2e+09: narrow steps, batch or T"),
    (dict(controls=["num_distinct", "num_last"], data="syn_medium"), "(steps=100, batch=128, T=128, num_last=10, "
     "num_distinct=40) is 3.3e+09 operations, over a live panel's 2e+09: narrow ranges= of ['num_last', 'num_distinct']"),
    (dict(controls=["T", "eta_y"], steps=2048, batch=1024), "(steps=2048, batch=1024, T=1024, num_last=2, num_distinct=10) "
     "is 7.9e+09 operations, over a live panel's 2e+09: narrow ranges= of ['T']"),
])
def test_a_panel_too_costly_for_a_browser_says_which_ranges_to_narrow(kw, text):
    with pytest.raises(ValueError, match=msg("the largest run these sliders reach " + text)):
        live.panel(**kw)


def test_the_T_slider_also_checks_the_limits_cost():
    """With T's slider shown, its last stop (T -> infinity: every class per step, no sampling)
    is costed too: here it alone is over the budget (batch 1 of T = 2 is cheap, 20 classes are not)."""
    kw = dict(data="syn_medium", num_last=10, num_distinct=40, batch=1, T=2, steps=400, reference=False)
    live.panel(controls=["seed"], **kw)
    with pytest.raises(ValueError, match=msg("the largest run these sliders reach (steps=400, batch=1, T=3, "
                                             "num_last=10, num_distinct=40) is 3e+09 operations, over a live "
                                             "panel's 2e+09: narrow ranges= of ['T']")):
        live.panel(controls=["T"], ranges={"T": (2, 3)}, **kw)


def test_work_counts_multiply_adds_as_the_engine_does():
    # per sequence 4 S M = 84; a step: batch (T - 1 + 84) + 6 M^2, the reference K 84 + 6 M^2
    assert live.work(10, 4, 5, 2, 7, 3) == 10 * (4 * (5 - 1 + 84) + 6 * 49 + 2 * 84 + 6 * 49) == 11080.0
    assert live.work(10, 4, 5, 2, 7, 3, reference=False) == 10 * (4 * 88 + 294) == 6460.0
    assert live.work(10, 4, "inf", 2, 7, 3) == 10 * (2 * 84 + 294) == 4620.0
    assert live.work(10, 4, "inf", 2, 7, 3, reference=False) == 4620.0
    assert type(live.work(1, 1, 2, 1, 1, 1)) is float


def test_compact_drops_comments_blank_lines_and_indentation_only():
    src = ("  let a = 1;  \n\n// a comment\n  /* a block\n  still the block */\n/* one line */\n"
           "/* not a comment */ let b = 2;\n    // indented comment\n  c();\n/**/\nd();")
    assert live._compact(src) == "let a = 1;\n/* not a comment */ let b = 2;\nc();\nd();"
    assert live._compact("first();\nsecond();") == "first();\nsecond();"


def test_png_bytes_takes_bytes_a_path_or_a_figure_and_nothing_else(tmp_path):
    assert live._png_bytes(None) == b""
    assert live._png_bytes(bytearray(PNG)) == PNG and type(live._png_bytes(bytearray(PNG))) is bytes
    f = tmp_path / "f.png"
    f.write_bytes(PNG)
    assert live._png_bytes(str(f)) == PNG and live._png_bytes(f) == PNG
    missing = tmp_path / "none.png"
    with pytest.raises(ValueError, match=msg(f"static figure {str(missing)!r}: no such file")):
        live._png_bytes(missing)
    with pytest.raises(ValueError, match=msg(f"static figure {str(tmp_path)!r}: no such file")):
        live._png_bytes(str(tmp_path))                       # a folder is not a file
    with pytest.raises(ValueError, match=msg("static must be a matplotlib Figure, PNG bytes or a PNG file path; got int")):
        live._png_bytes(3)
    (tmp_path / "g.gif").write_bytes(b"GIF89a")
    for bad in (b"GIF89a", tmp_path / "g.gif"):
        with pytest.raises(ValueError, match=msg("static is not a PNG image (its first bytes are not the PNG signature)")):
            live._png_bytes(bad)


def test_a_panel_with_a_figure_shows_it_base64_in_its_html():
    import base64
    p = live.panel("cn", static=PNG, alt="fig")
    doc = p.html()
    b64 = base64.b64encode(PNG).decode("ascii")
    assert f'<img src="data:image/png;base64,{b64}" alt="fig">' in doc
    assert doc.startswith('<div class="yzlive-panel"><style>') and doc.endswith("</script></div>")
    assert f'<script type="application/json" class="yzlive-config">{p.config}</script>' in doc


def test_a_run_of_exactly_the_budget_is_allowed_one_step_more_is_not():
    """Syn-Small with one query and two distinct tokens (K = 1, M = 14, S = 12): a step costs
    974 (127 + 672) + 6 * 14^2 + 672 + 6 * 14^2 = 781,250 multiply-adds, so 2,560 steps are
    exactly MAX_WORK = 2e9 (allowed) and 2,561 steps are over (the reference run's 1,848 a
    step is what tips it)."""
    kw = dict(controls=[], num_last=1, num_distinct=2, T=128, batch=974)
    assert live.work(2560, 974, 128, 1, 14, 12) == live.MAX_WORK
    live.panel(steps=2560, **kw)
    with pytest.raises(ValueError, match=msg("the largest run these sliders reach (steps=2561, batch=974, T=128, "
                                             "num_last=1, num_distinct=2) is 2e+09 operations, over a live "
                                             "panel's 2e+09: narrow steps, batch or T")):
        live.panel(steps=2561, **kw)
    live.panel(steps=2561, reference=False, **kw)
