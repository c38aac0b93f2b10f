"""The built book, read in a real browser (headless Debian Chromium driven by Playwright).

The book is built first (jupyter-book, from the chapters' committed outputs: strict nbval
checks that those are what executing the chapters gives; see the `book` fixture), then every page is opened from file:// with every non-file request refused, as a
reader with no network would open it, and read at each of three widths: 390 px (a phone), 1280
and 1920 px. A page is loaded once, at 1280 px, and the window then resized to the other widths:
loading is most of the cost, and a resized page lays out as one loaded at that width (checked
for every page when this was introduced: the same layout measurements, only the widgets' blob
URLs differ). On each we assert:

- no JavaScript error beyond the allow-list below, every math element typeset (no raw TeX
  left), every image loaded, figures shown as images (not their text repr), widgets rendered;
- no display equation clipped: its rendered box starts no left of the box that shows it (a
  left overflow cannot be scrolled back), and an equation or output block wider than the
  column sits in a box the reader can scroll horizontally, itself within the column;
- at 1280 px, no printed output block wider than its column (a reader should not have to
  scroll to read a result), except the named exceptions below, each with its reason;
- every image of the chapter body shown at no less than half its pixel width (2x PNGs are
  shown at exactly half; a 1,291 px figure squeezed into 688 px fails) or vector; at 390 px
  the images are instead scaled to fit the column (and must fit it);
- slider panels: at 390 px every slider's track keeps a usable length and its readout shows;
  labels show real subscripts (no literal "_Y"); no build-log status line is visible.

Slider pages are also opened in dark mode (at 1280 px, then resized to 390 px): the panel must
not be a light box on the dark page. On each slider page, moving the first slider shows another
precomputed figure (no kernel). Screenshots for review (full pages, they cost as much as the
checks): set SCANSNAP_SCREENSHOTS=1, and they go to _build/screenshots/<width>/<page>.png and
_build/screenshots/dark-<width>/<page>.png.

Needs /usr/bin/chromium (Debian's `chromium`; `make test` installs it) or SCANSNAP_CHROMIUM.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from chromium import launched

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"
SHOTS = ROOT / "_build" / "screenshots"
WIDTHS = (390, 1280, 1920)
# How long a page may take to load, typeset and render its widgets before the test calls it
# hung (not a speed budget: `make test` runs strict nbval beside this test on two cores).
PAGE_TIMEOUT_MS = 120_000
DARK_WIDTHS = (390, 1280)

# Console messages known to be harmless, each with why. Anything else fails the test.
ALLOWED_CONSOLE = [
    # sphinx-thebe's script is included by every page and declares this constant twice.
    (re.compile(r"THEBE_JS_URL.*already been declared"), "sphinx-thebe declares THEBE_JS_URL twice"),
    # html-manager 1.x calls the MathJax 2 API (MathJax.Hub) when typesetting widget labels;
    # the page uses MathJax 3, which typesets the page itself.
    (re.compile(r"MathJax\.Hub|Cannot read properties of undefined \(reading 'Queue'\)"),
     "html-manager 1.x calls the MathJax 2 API"),
    # pydata-sphinx-theme reads the light/dark choice from localStorage, empty in a fresh profile.
    (re.compile(r"Got invalid theme mode: \. Resetting to auto"), "no saved theme mode in a fresh profile"),
]

# Printed output blocks allowed to be wider than the column at 1280 px: {(page, start of the
# block's text): why}. Keep it short; a result should be readable without scrolling.
WIDE_OUTPUT_EXCEPTIONS: dict[tuple[str, str], str] = {}


def _pages() -> list[str]:
    """Every page of the table of contents (read from _toc.yml, so known before the build)."""
    import yaml

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    pages = [toc["root"]]

    def walk(entries):
        for e in entries:
            if "file" in e:
                pages.append(e["file"])
            walk(e.get("sections", []))
            for part in e.get("parts", []):
                walk(part.get("chapters", []))

    walk(toc.get("chapters", []))
    for part in toc.get("parts", []):
        walk(part.get("chapters", []))
    return [str(Path(p).with_suffix("")) for p in pages]


def _widget_pages() -> list[str]:
    """The chapters whose committed outputs hold a widget (a slider panel), read from the notebooks."""
    out = []
    for page in _pages():
        nb = ROOT / f"{page}.ipynb"
        if nb.exists() and any("application/vnd.jupyter.widget-view+json" in o.get("data", {})
                               for c in json.loads(nb.read_text())["cells"] for o in c.get("outputs", [])):
            out.append(page)
    return out


def _has_precomputed_grid(page: str) -> bool:
    """The page's saved widget state holds a Stack (a precomputed slider grid), read from the
    notebook: the page itself may render only the selected figure of a Stack."""
    state = json.loads((ROOT / f"{page}.ipynb").read_text())["metadata"].get("widgets", {})
    models = state.get("application/vnd.jupyter.widget-state+json", {}).get("state", {})
    return any(m.get("model_name") == "StackModel" for m in models.values())


SLIDER_PAGES = _widget_pages()
FIGURE_PAGES = SLIDER_PAGES


@pytest.fixture(scope="module")
def book(tmp_path_factory):
    """Build the book from the chapters' committed outputs, as a reader gets them.

    `make book` executes the chapters (jupyter-book's cache); this build does not: strict nbval
    (the second half of `make test`) re-executes every chapter and fails on any output that
    differs from the committed one, so the committed outputs are what a fresh build shows, and
    executing them a second time here would only cost minutes. Same _config.yml otherwise
    (``execute_notebooks: "off"``, local extension paths made absolute), and -n -W: a
    warning fails the test.
    """
    import yaml

    if not (ROOT / "_assets" / "mathjax" / "tex-chtml.js").exists():
        pytest.fail("_assets/ is missing: run `make assets` (the offline MathJax and widget manager)")
    cfg = yaml.safe_load((ROOT / "_config.yml").read_text())
    cfg["execute"]["execute_notebooks"] = "off"
    for name, path in cfg["sphinx"].get("local_extensions", {}).items():
        cfg["sphinx"]["local_extensions"][name] = str(ROOT / path)
    conf = tmp_path_factory.mktemp("jb") / "_config.yml"
    conf.write_text(yaml.safe_dump(cfg, sort_keys=False))
    jb = Path(sys.executable).parent / "jupyter-book"
    proc = subprocess.run([str(jb), "build", str(ROOT), "-n", "-W", "--keep-going", "--config", str(conf)],
                          capture_output=True, text=True, timeout=3000)
    assert proc.returncode == 0, "jupyter-book build failed:\n" + proc.stdout[-4000:] + proc.stderr[-4000:]
    return HTML


@pytest.fixture(scope="module")
def browser(book):
    with launched() as b:
        yield b


def _open(browser, page_name: str, width: int = 1280, dark: bool = False):
    """Open a page from file:// with the network cut; returns (context, page, problems list)."""
    ctx = browser.new_context(viewport={"width": width, "height": 900},
                              color_scheme="dark" if dark else "light")
    ctx.set_default_timeout(PAGE_TIMEOUT_MS)
    page = ctx.new_page()
    problems: list[str] = []
    ctx.route(re.compile(r"^(?!file:|data:|blob:).*"),
              lambda route: (problems.append(f"network request: {route.request.url}"), route.abort()))

    def allowed(text):
        return any(rx.search(text) for rx, _ in ALLOWED_CONSOLE)

    def on_console(msg):
        if msg.type == "error" and not allowed(msg.text):
            problems.append(f"console error: {msg.text}")

    def on_pageerror(exc):
        if not allowed(str(exc)):
            problems.append(f"page error: {exc}")

    page.on("console", on_console)
    page.on("pageerror", on_pageerror)
    page.goto((HTML / f"{page_name}.html").as_uri(), wait_until="load")
    # MathJax 3 typesets asynchronously: wait for it on the pages that load it (those with math).
    if page.evaluate("() => !!document.querySelector('script[src*=\"mathjax\"]')"):
        page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise", timeout=PAGE_TIMEOUT_MS)
        page.evaluate("() => MathJax.startup.promise")
    if page_name in SLIDER_PAGES:  # widgets render asynchronously after load
        page.wait_for_selector(".widget-slider", timeout=PAGE_TIMEOUT_MS)
    page.wait_for_timeout(300)
    return ctx, page, problems


def _resize(page, width: int) -> None:
    """Lay the loaded page out again at another width (media queries, widgets' flex boxes)."""
    if page.viewport_size["width"] != width:
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_timeout(300)


def _shot(page, folder: str, page_name: str) -> None:
    if os.environ.get("SCANSNAP_SCREENSHOTS", "") in ("", "0"):
        return
    (SHOTS / folder).mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / folder / (page_name.replace("/", "__") + ".png")), full_page=True)


# raw TeX in the text: delimiters, a $...$ pair, a lone "$\cmd" (e.g. a table cell that a "|" inside
# math split in two), or a common macro
RAW_TEX = re.compile(r"\\\(|\\\)|\\\[|\\\]|\$\$|\$[^$\s][^$]{0,200}?\$|\$\\[A-Za-z]"
                     r"|\\(?:frac|eta|sum|mathbf|top|max|theta|lambda|alpha|beta|gamma|mathbb|lvert|rvert)\b")

CHECK_JS = """() => {
  const math = [...document.querySelectorAll('.math')];
  const untypeset = math.filter(m => !m.querySelector('mjx-container')).map(m => m.textContent.slice(0, 80));
  const errors = [...document.querySelectorAll('mjx-merror')].map(m => m.getAttribute('data-mjx-error') || m.textContent);
  const imgs = [...document.querySelectorAll('img')];
  const broken = imgs.filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src.slice(0, 120));
  const main = document.querySelector('main') || document.body;
  const clone = main.cloneNode(true);
  clone.querySelectorAll('pre, code, script, style, mjx-container, .math, .cell_input, textarea, .MathJax_Preview')
       .forEach(e => e.remove());
  const repr = (document.body.innerText.match(/<Figure size [^>]*>/g) || []);
  return {repr, n_math: math.length, untypeset, errors, n_img: imgs.length, broken, text: clone.innerText,
          n_widgets: document.querySelectorAll('.jupyter-widgets').length,
          widget_errors: [...document.querySelectorAll('.jupyter-widgets')].filter(
              w => /Error|cannot be displayed/i.test(w.textContent)).length};
}"""

# Layout at the current width. The column is the article's content box. A box "clips" when its
# overflow is not visible; a scroll box (overflow auto/scroll) shows what overflows to its right
# but never what starts left of it (scrollLeft cannot go below 0).
LAYOUT_JS = """(width) => {
  const art = document.querySelector('article.bd-article') || document.querySelector('main') || document.body;
  const acs = getComputedStyle(art), ar = art.getBoundingClientRect();
  const colL = ar.left + parseFloat(acs.paddingLeft), colR = ar.right - parseFloat(acs.paddingRight);
  const colW = colR - colL;
  const snip = e => (e.textContent || '').replace(/\\s+/g, ' ').trim().slice(0, 70);
  const r0 = x => Math.round(x);
  // what a reader can see of content spanning [l, r] inside element el
  function visibility(el, l, r) {
    for (let a = el; a && a !== document.body && a !== document.documentElement; a = a.parentElement) {
      const ov = getComputedStyle(a).overflowX, b = a.getBoundingClientRect();
      if (ov === 'auto' || ov === 'scroll') {
        if (l < b.left - 1) return `its left ${r0(b.left - l)} px are cut (they start left of the scroll box)`;
        if (b.left < colL - 1 || b.right > colR + 1)
          return `its scroll box (${r0(b.width)} px) is wider than the column (${r0(colW)} px)`;
        return null;
      }
      if ((ov === 'hidden' || ov === 'clip') && (l < b.left - 1 || r > b.right + 1))
        return `cut by the overflow:${ov} of <${a.tagName.toLowerCase()} class="${a.className}">` +
               ` (${r0(b.left - l)} px left, ${r0(r - b.right)} px right)`;
    }
    if (l < colL - 1 || r > colR + 1)
      return `it runs outside the column (${r0(colL - l)} px left, ${r0(r - colR)} px right) with no scroll box`;
    if (l < 0) return `it starts ${r0(-l)} px left of the window`;
    return null;
  }
  const out = {col: r0(colW), math: [], outputs: [], wide: [], imgs: [], sliders: [], labels: [], status: []};
  for (const mc of document.querySelectorAll('mjx-container[display="true"]')) {
    if (mc.offsetParent === null) continue;                       // folded (a closed dropdown)
    const m = mc.querySelector('mjx-math'); if (!m) continue;
    let l = Infinity, r = -Infinity;
    for (const e of [m, ...m.querySelectorAll('mjx-mtable, mjx-table, mjx-labels, mjx-itable, mjx-mrow')]) {
      const b = e.getBoundingClientRect(); if (b.width === 0) continue;
      l = Math.min(l, b.left); r = Math.max(r, b.right);
    }
    const why = visibility(mc, l, r);
    if (why) out.math.push(`equation "${snip(mc.parentElement)}" (${r0(r - l)} px): ${why}`);
  }
  const blocks = document.querySelectorAll(
      'div.cell_output pre, div.cell_output .output.text_html, div.cell_output .output.text_markdown');
  for (const o of blocks) {
    if (o.offsetParent === null) continue;
    const b = o.getBoundingClientRect();
    const l = b.left, r = b.left + o.scrollWidth;
    const scrolls = ['auto', 'scroll'].includes(getComputedStyle(o).overflowX);
    const why = scrolls && o.scrollWidth > o.clientWidth + 1 ? visibility(o, b.left, b.right) : visibility(o, l, r);
    if (why) out.outputs.push(`output "${snip(o)}": ${why}`);
    if (o.scrollWidth > o.clientWidth + 1 || r > colR + 1)
      out.wide.push({text: snip(o), width: o.scrollWidth, box: r0(Math.min(b.width, colW))});
  }
  for (const i of art.querySelectorAll('img')) {
    if (i.offsetParent === null || !i.naturalWidth) continue;
    const b = i.getBoundingClientRect();
    const vector = /\\.svg(\\?|$)|^data:image\\/svg/.test(i.currentSrc || i.src);
    out.imgs.push({src: (i.currentSrc || i.src).split('/').pop().slice(0, 40), natural: i.naturalWidth,
                   shown: Math.round(b.width * 10) / 10, vector, fits: b.left >= colL - 1 && b.right <= colR + 1});
  }
  for (const s of document.querySelectorAll('.widget-slider')) {
    if (s.offsetParent === null) continue;
    const track = s.querySelector('.slider-container, .noUi-target');
    const readout = s.querySelector('.widget-readout');
    const label = s.querySelector('.widget-label');
    const rb = readout ? readout.getBoundingClientRect() : null;
    out.sliders.push({label: label ? label.textContent : '', track: track ? r0(track.getBoundingClientRect().width) : 0,
                      readout: !!rb && rb.width > 0 && rb.left >= -1 && rb.right <= width + 1 &&
                               readout.scrollWidth <= readout.clientWidth + 1 && readout.textContent.trim() !== ''});
  }
  for (const l of document.querySelectorAll('.jupyter-widgets .widget-label, .jupyter-widgets .widget-html-content'))
    if (l.offsetParent !== null && /_[A-Za-z{]/.test(l.textContent)) out.labels.push(l.textContent);
  for (const e of document.querySelectorAll('.jupyter-widgets'))
    if (e.offsetParent !== null && /figures? computed in/.test(e.textContent)) out.status.push(snip(e));
  return out;
}"""

# In dark mode: each slider panel's effective background (the first opaque one from the panel up)
# and its text colour.
DARK_JS = """() => {
  const rgb = s => (s.match(/[\\d.]+/g) || []).map(Number);
  const lum = c => (0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2]) / 255;
  const res = {theme: document.documentElement.dataset.theme, panels: []};
  for (const p of document.querySelectorAll('.jupyter-widgets.widget-vbox, .scansnap-panel')) {
    if (p.offsetParent === null || p.parentElement.closest('.widget-vbox, .scansnap-panel')) continue;
    let bg = null, who = '';
    for (let e = p; e; e = e.parentElement) {
      const c = rgb(getComputedStyle(e).backgroundColor);
      if (c.length >= 3 && (c.length < 4 || c[3] > 0.5)) { bg = c; who = e.tagName + '.' + [...e.classList].join('.'); break; }
    }
    const label = p.querySelector('.widget-label, .widget-readout') || p;
    res.panels.push({bg: bg ? lum(bg) : null, who, text: lum(rgb(getComputedStyle(label).color))});
  }
  return res;
}"""


def _layout_failures(lay, page_name: str, width: int) -> list[str]:
    failures = []
    failures += [f"clipped math: {m}" for m in lay["math"]]
    failures += [f"output cannot be read: {m}" for m in lay["outputs"]]
    if width == 1280:
        for w in lay["wide"]:
            if not any(page_name == p and w["text"].startswith(s) for p, s in WIDE_OUTPUT_EXCEPTIONS):
                failures.append(f"output wider than the column ({w['width']} px in {w['box']} px): \"{w['text']}\"")
    for i in lay["imgs"]:
        if width >= 1280 and not i["vector"] and i["natural"] > 2 * i["shown"] + 2:
            failures.append(f"image {i['src']} ({i['natural']} px) shown at {i['shown']} px: less than half "
                            "its size, its text shrinks (draw it at most 6.8 in wide; scansnap.plots.COLUMN_WIDTH)")
        if not i["fits"]:
            failures.append(f"image {i['src']} ({i['shown']} px) does not fit the {lay['col']} px column")
    for s in lay["sliders"]:
        if s["track"] < 100:
            failures.append(f"slider {s['label']!r}: track only {s['track']} px long")
        if not s["readout"]:
            failures.append(f"slider {s['label']!r}: its readout is hidden or cut")
    failures += [f"widget label with a literal subscript: {t!r}" for t in lay["labels"]]
    failures += [f"build-log status line shown to the reader: {t!r}" for t in lay["status"]]
    return [f"at {width} px (column {lay['col']} px): {f}" for f in failures]


@pytest.mark.parametrize("page_name", _pages())
def test_page_reads_well(browser, page_name):
    """One visit per page: offline reading, then the layout checks of the module docstring at
    each width of WIDTHS (the page resized, not reloaded)."""
    ctx, page, problems = _open(browser, page_name, 1280)
    failures = []
    try:
        r = page.evaluate(CHECK_JS)
        for width in sorted(WIDTHS, key=lambda w: w != 1280):      # 1280 first: it is loaded there
            _resize(page, width)
            lay = page.evaluate(LAYOUT_JS, width)
            _shot(page, str(width), page_name)
            failures += _layout_failures(lay, page_name, width)
    finally:
        ctx.close()
    assert not problems, "\n".join(problems)
    assert not r["untypeset"], f"{len(r['untypeset'])} of {r['n_math']} math elements not typeset: {r['untypeset'][:5]}"
    assert not r["errors"], f"MathJax errors: {r['errors'][:5]}"
    raw = RAW_TEX.findall(r["text"])
    assert not raw, f"raw TeX left in the page text: {raw[:10]}"
    assert not r["broken"], f"{len(r['broken'])} of {r['n_img']} images not loaded: {r['broken'][:5]}"
    assert not r["repr"], f"figures shown as their text repr instead of an image: {r['repr'][:3]}"
    if page_name in FIGURE_PAGES:
        assert r["n_img"] > 0, "a chapter with figures shows no image"
    if page_name in SLIDER_PAGES:
        assert r["n_widgets"] > 0 and r["widget_errors"] == 0, {k: r[k] for k in ("n_widgets", "widget_errors")}
    assert not failures, f"{page_name}:\n" + "\n".join(failures)


def test_layout_checks_fail_on_bad_layouts():
    """The layout rules flag what they should (a planted measurement for each), at the right widths."""
    lay = {"col": 688, "math": ["equation x"], "outputs": [], "status": [], "labels": ["eta_Y"],
           "wide": [{"text": "a long line", "width": 900, "box": 688}],
           "imgs": [{"src": "a.png", "natural": 1400, "shown": 600.0, "vector": False, "fits": True},
                    {"src": "b.png", "natural": 600, "shown": 700.0, "vector": False, "fits": False}],
           "sliders": [{"label": "η", "track": 40, "readout": False}]}
    at1280 = "\n".join(_layout_failures(lay, "book/x", 1280))
    for bit in ("clipped math", "wider than the column", "a.png (1400 px) shown at 600.0 px",
                "b.png (700.0 px) does not fit", "track only 40 px", "readout is hidden", "literal subscript"):
        assert bit in at1280, bit
    at390 = "\n".join(_layout_failures(lay, "book/x", 390))
    assert "wider than the column" not in at390 and "a.png" not in at390 and "b.png" in at390
    assert _layout_failures({**lay, "math": [], "wide": [], "imgs": [], "sliders": [], "labels": []},
                            "book/x", 1280) == []


@pytest.mark.parametrize("page_name", SLIDER_PAGES)
def test_slider_page_in_dark_mode(browser, page_name):
    """The slider panel follows the dark page: a dark background under it, light text on it
    (at each width of DARK_WIDTHS; loaded at the widest, then resized)."""
    ctx, page, problems = _open(browser, page_name, max(DARK_WIDTHS), dark=True)
    seen = {}
    try:
        for width in sorted(DARK_WIDTHS, reverse=True):
            _resize(page, width)
            seen[width] = page.evaluate(DARK_JS)
            _shot(page, f"dark-{width}", page_name)
    finally:
        ctx.close()
    assert not problems, "\n".join(problems)
    for width, d in seen.items():
        assert d["theme"] == "dark", (width, d)
        assert d["panels"], f"no slider panel found at {width} px"
        for p in d["panels"]:
            assert p["bg"] is not None and p["bg"] < 0.35, f"at {width} px a light box on the dark page (background from {p['who']}): {p}"
            assert p["text"] > 0.6, f"at {width} px dark text on the dark panel: {p}"


VISIBLE_FIGURE_JS = """() => {
  const imgs = [...document.querySelectorAll('.jupyter-widgets img')].filter(i => i.offsetParent !== null);
  return imgs.map(i => i.src);
}"""


@pytest.mark.parametrize("page_name", SLIDER_PAGES)
def test_slider_changes_figure_without_kernel(browser, page_name):
    """Moving the first slider of the page shows another precomputed figure (no kernel)."""
    ctx, page, problems = _open(browser, page_name)
    try:
        page.wait_for_selector(".widget-slider .noUi-handle", timeout=PAGE_TIMEOUT_MS)
        before = page.evaluate(VISIBLE_FIGURE_JS)
        if not _has_precomputed_grid(page_name):
            pytest.skip("kernel-only panels (slider_panel(precompute=False)): the static page holds one figure")
        assert len(before) == 1, f"expected one visible slider figure, found {len(before)}"
        readout = page.locator(".widget-slider .widget-readout").first
        value_before = readout.inner_text()
        page.locator(".widget-slider .noUi-handle").first.focus()
        page.keyboard.press("ArrowRight")
        page.wait_for_function(f"() => ({VISIBLE_FIGURE_JS})()[0] !== {before[0]!r}", timeout=PAGE_TIMEOUT_MS)
        after = page.evaluate(VISIBLE_FIGURE_JS)
        value_after = readout.inner_text()
    finally:
        ctx.close()
    assert not problems, "\n".join(problems)
    assert value_after != value_before, (value_before, value_after)
    assert len(after) == 1 and after[0] != before[0]
