"""The built book, read in a real browser (headless Debian Chromium driven by Playwright).

The book is built first (jupyter-book, from the chapters' committed outputs: strict nbval
checks that those are what executing the chapters gives; see the `book` fixture), then every page is opened from file:// with every non-file request refused, as a
reader with no network would open it, and read at each of three widths: 390 px (a phone), 1280
and 1920 px. A page is loaded once, at 1280 px, and the window then resized to the other widths:
loading is most of the cost, and a resized page lays out as one loaded at that width (checked
for every page when this was introduced: the same layout measurements, only the widgets' blob
URLs differ). On each we assert:

- no console error or warning and no uncaught exception, light or dark, at any width (there is
  no allow-list), every math element typeset (no raw TeX left), every image loaded, figures
  shown as images (not their text repr), widgets rendered; no header row that holds only a
  second search box;
- no display equation clipped: its rendered box starts no left of the box that shows it (a
  left overflow cannot be scrolled back), and an equation or output block wider than the
  column sits in a box the reader can scroll horizontally, itself within the column;
- at 1280 px, no printed output block wider than its column (a reader should not have to
  scroll to read a result), except the named exceptions below, each with its reason;
- every image of the chapter body shown at no less than half its pixel width (2x PNGs are
  shown at exactly half; a 1,291 px figure squeezed into 688 px fails) or vector, and within
  the column or a scroll box in it;
- every figure's smallest text, as displayed, at least scansnap.plots.MIN_TEXT_PX (9 CSS px) at
  every width: the font size the figure was drawn with (carried in its PNG, written by the
  chapters' setup) times its displayed over its own width; a figure without that record fails;
- no inline formula wider than its line at 390 px (a long one must be a display); a box that
  scrolls sideways (a display equation, a figure kept legible on a phone, a wide output) shows
  that it does: it fades at the edge where more lies (scansnap.js, scansnap.css);
- no table wider than the column at 390 px (wide tables become cards on a phone);
- slider panels: at 390 px every slider's track keeps a usable length and its readout shows;
  labels show real subscripts (no literal "_Y"); no build-log status line is visible.

Every page is then switched to dark mode (the reader's system setting, on the loaded page) and
read again at 390 and 1280 px: the same checks, and a live panel must not sit on a light mat.
Slider pages are also loaded in dark mode (at 1280 px, then resized to 390 px): the panel must
not be a light box on the dark page. On each slider page, moving the first slider shows another
precomputed figure (no kernel). Screenshots for review: set SCANSNAP_SCREENSHOTS=1, and each
page's first screen, first figure and first panel go to
_build/screenshots/<width>-<light|dark>/<page>-<screen|figure|panel>.png.

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

# Every console message of these types fails the test: there is no allow-list (issue 26).
CONSOLE_TYPES = ("error", "warning")
MODES = ("light", "dark")

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

    def on_console(msg):
        if msg.type in CONSOLE_TYPES:
            problems.append(f"console {msg.type}: {msg.text}")

    def on_pageerror(exc):
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
    """With SCANSNAP_SCREENSHOTS=1: the page's first screen, its first figure and its first panel
    (a live panel trained, a slider panel rendered) into _build/screenshots/<folder>/."""
    if os.environ.get("SCANSNAP_SCREENSHOTS", "") in ("", "0"):
        return
    out = SHOTS / folder
    out.mkdir(parents=True, exist_ok=True)
    stem = page_name.replace("/", "__")
    page.evaluate("() => window.scrollTo(0, 0)")
    page.wait_for_timeout(150)
    page.screenshot(path=str(out / f"{stem}-screen.png"))
    for kind, sel in (("figure", "article .scansnap-fig, article div.cell_output img"),
                      ("panel", "article .yzlive-panel, article .scansnap-panel")):
        loc = page.locator(sel).locator("visible=true")
        if not loc.count():
            continue
        el = loc.first
        if kind == "panel" and page.locator("article .yzlive-panel").count():
            page.wait_for_function("() => [...document.querySelectorAll('.yzlive-panel')].every("
                                   "p => +(p.dataset.yzliveRuns || 0) >= 1)", timeout=PAGE_TIMEOUT_MS)
        if kind == "figure" and el.evaluate("e => e.tagName") == "IMG":
            el = el.locator("xpath=..")
        el.scroll_into_view_if_needed()
        page.wait_for_timeout(150)
        el.screenshot(path=str(out / f"{stem}-{kind}.png"))


# raw TeX in the text: delimiters, a $...$ pair, a lone "$\cmd" (e.g. a table cell that a "|" inside
# math split in two), or a common macro
RAW_TEX = re.compile(r"\\\(|\\\)|\\\[|\\\]|\$\$|\$[^$\s][^$]{0,200}?\$|\$\\[A-Za-z]"
                     r"|\\(?:frac|eta|sum|mathbf|top|max|theta|lambda|alpha|beta|gamma|mathbb|lvert|rvert)\b")

CHECK_JS = """() => {
  const math = [...document.querySelectorAll('.math')];
  const untypeset = math.filter(m => !m.querySelector('mjx-container')).map(m => m.textContent.slice(0, 80));
  const errors = [...document.querySelectorAll('mjx-merror')].map(m => m.getAttribute('data-mjx-error') || m.textContent);
  // an undefined macro (e.g. \\lesssimQ) is no merror: MathJax prints its name in red; read it back
  for (const m of document.querySelectorAll('mjx-container mjx-mtext[style*="red"]'))
    errors.push('undefined macro ' + [...m.querySelectorAll('mjx-c')].map(
      c => String.fromCharCode(parseInt((c.className.match(/mjx-c([0-9A-F]+)/) || [])[1] || '3F', 16))).join(''));
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
    // its number in sight without scrolling (MathJax sets it past the right edge of a wide display)
    const tag = mc.querySelector('mjx-labels mjx-mtd');
    if (tag) {
      const tb = tag.getBoundingClientRect(), cb = mc.getBoundingClientRect();
      if (tb.width > 0 && (tb.right > cb.right + 1 || tb.left < cb.left - 1))
        out.math.push(`equation "${snip(mc.parentElement)}": its number is out of sight until the reader scrolls`);
    }
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
    // a figure kept legible on a phone may run past the column inside its scroll box, which must fit
    const box = i.closest('.scansnap-fig, .scansnap-figure, .yz-figbox') || i, bb = box.getBoundingClientRect();
    out.imgs.push({src: (i.currentSrc || i.src).split('/').pop().slice(0, 40), natural: i.naturalWidth,
                   shown: Math.round(b.width * 10) / 10, vector, fits: bb.left >= colL - 1 && bb.right <= colR + 1});
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
  const px = (cs, k) => parseFloat(cs[k]) || 0;
  // inline formulas wider than their line (the content box of the nearest block around them)
  out.inline = [];
  for (const mc of art.querySelectorAll('mjx-container:not([display="true"])')) {
    if (mc.offsetParent === null || mc.closest('.jupyter-widgets, mjx-container[display="true"]')) continue;
    let b = mc.parentElement;
    while (b && b !== art && getComputedStyle(b).display.startsWith('inline')) b = b.parentElement;
    const cs = getComputedStyle(b);
    const line = b.getBoundingClientRect().width - px(cs, 'paddingLeft') - px(cs, 'paddingRight')
                 - px(cs, 'borderLeftWidth') - px(cs, 'borderRightWidth');
    const w = mc.getBoundingClientRect().width;
    if (w > line + 1) out.inline.push(`inline formula "${(mc.getAttribute('aria-label') || snip(mc)).slice(0, 60)}" ` +
                                      `is ${r0(w)} px wide in a ${r0(line)} px line`);
  }
  // a box that scrolls sideways must show it: a fade (mask) at the edge where more lies
  out.cues = [];
  for (const el of art.querySelectorAll('*:not(mjx-container *, svg *, canvas)')) {   // every box of the page
    if (el.scrollWidth - el.clientWidth <= 1 || el.offsetParent === null) continue;
    if (!el.checkVisibility({visibilityProperty: true})) continue;                   // folded code, hidden fallbacks
    const cs = getComputedStyle(el);
    if (!['auto', 'scroll'].includes(cs.overflowX) || el.scrollWidth - el.clientWidth <= 1) continue;
    const mask = cs.maskImage || cs.webkitMaskImage || 'none';
    if (!/gradient/.test(mask))
      out.cues.push(`"${snip(el.closest('div.math, figure, .cell_output, div') || el)}" scrolls ` +
                    `(${el.scrollWidth} px in ${el.clientWidth} px) with no fade at its cut edge`);
  }
  // figures: their displayed content width, with the text-size record of data:/blob: images read here
  out.figs = [];
  for (const i of art.querySelectorAll('img')) {
    if (i.offsetParent === null || !i.naturalWidth) continue;
    const cs = getComputedStyle(i), b = i.getBoundingClientRect();
    out.figs.push({src: i.currentSrc || i.src, shown: b.width - px(cs, 'paddingLeft') - px(cs, 'paddingRight')
                   - px(cs, 'borderLeftWidth') - px(cs, 'borderRightWidth'), filter: cs.filter});
  }
  // tables no wider than the column
  out.tables = [];
  for (const t of art.querySelectorAll('table')) {
    if (t.offsetParent === null) continue;
    const w = Math.max(t.scrollWidth, t.getBoundingClientRect().width);
    if (w > colW + 1) out.tables.push(`table "${snip(t).slice(0, 50)}" is ${r0(w)} px wide in the ${r0(colW)} px column`);
  }
  // a header row that holds nothing but a search box (the sidebar has one)
  const hd = document.querySelector('header.bd-header');
  out.header = !!hd && hd.offsetParent !== null && hd.getBoundingClientRect().height > 0 &&
    ![...hd.querySelectorAll('a, button')].some(e => e.offsetParent !== null && !e.closest('.search-button, .search-button-field, .search-button__button'));
  // dark mode: the background a live panel sits on (the first opaque one above it)
  out.mats = [];
  const rgb = s => (s.match(/[\\d.]+/g) || []).map(Number);
  for (const pnl of art.querySelectorAll('.yzlive-panel')) {
    if (pnl.offsetParent === null) continue;
    for (let e = pnl.parentElement; e && e !== art; e = e.parentElement) {
      const c = rgb(getComputedStyle(e).backgroundColor);
      if (c.length >= 3 && (c.length < 4 || c[3] > 0.5)) {
        out.mats.push({lum: (0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2]) / 255, who: e.className}); break;
      }
    }
  }
  return out;
}"""

BLOB_META_JS = """async (srcs) => {
  // the text-size record (PNG tEXt chunk 'scansnap-figure') of images this page holds as data: or blob: URLs
  const out = {};
  for (const src of srcs) {
    try {
      const buf = new Uint8Array(await (await fetch(src)).arrayBuffer());
      const key = 'scansnap-figure\\0';
      let pos = 8;
      while (pos + 8 <= buf.length) {
        const len = (buf[pos] << 24 | buf[pos + 1] << 16 | buf[pos + 2] << 8 | buf[pos + 3]) >>> 0;
        const kind = String.fromCharCode(...buf.slice(pos + 4, pos + 8));
        if (kind === 'IDAT' || kind === 'IEND') break;
        if (kind === 'tEXt') {
          const text = new TextDecoder('latin1').decode(buf.slice(pos + 8, pos + 8 + len));
          if (text.startsWith(key)) { out[src] = JSON.parse(text.slice(key.length)); break; }
        }
        pos += 12 + len;
      }
    } catch (e) { /* no record */ }
    if (!(src in out)) out[src] = null;
  }
  return out;
}"""


def _figure_meta(page, figs) -> dict:
    """{src: the figure's text-size record or None}: file: images read from disk, the others in the page."""
    from urllib.parse import unquote, urlparse

    from scansnap.plots import read_png_meta

    metas, remote = {}, []
    for f in figs:
        src = f["src"]
        if src in metas:
            continue
        if src.startswith("file:"):
            path = Path(unquote(urlparse(src).path))
            metas[src] = read_png_meta(path.read_bytes()) if path.is_file() else None
        else:
            remote.append(src)
    if remote:
        metas.update(page.evaluate(BLOB_META_JS, sorted(set(remote))))
    return metas


def _text_failures(figs, metas, width: int) -> list[str]:
    """Each figure's smallest text as displayed: the drawn size times displayed / own width."""
    from scansnap.plots import MIN_TEXT_PX

    out = []
    for f in figs:
        meta = metas.get(f["src"])
        name = f["src"].rsplit("/", 1)[-1][:40] if not f["src"].startswith("data:") else "an inline data: image"
        if not meta or not meta.get("css_width"):
            out.append(f"figure {name} carries no text-size record (made outside scansnap.plots' PNG hook?)")
            continue
        if meta.get("min_font_px") is None:
            continue                                     # a figure with no text
        shown_px = meta["min_font_px"] * f["shown"] / meta["css_width"]
        if shown_px < MIN_TEXT_PX - 0.02:
            out.append(f"figure {name}: its smallest text ({meta['min_font_px']} px at {meta['css_width']} px) "
                       f"is shown at {shown_px:.1f} px (figure {f['shown']:.0f} px wide), below {MIN_TEXT_PX} px")
    return out

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
    failures += [f"scroll box without its cue: {t}" for t in lay.get("cues", [])]
    failures += lay.get("text", [])
    if width <= 390:
        failures += [f"math wider than its line: {t}" for t in lay.get("inline", [])]
        failures += [f"table wider than the column: {t}" for t in lay.get("tables", [])]
    if lay.get("header"):
        failures.append("a header row that holds only a second search box")
    if lay.get("dark"):
        failures += [f"a live panel on a light mat ({m['who']}, luminance {m['lum']:.2f})" for m in lay.get("mats", [])
                     if m["lum"] > 0.35]
        failures += [f"figure {f['src'].rsplit('/', 1)[-1][:30]} dimmed in dark mode (filter {f['filter']})"
                     for f in lay.get("figs", []) if f.get("filter", "none") != "none"]
    return [f"at {width} px{' (dark)' if lay.get('dark') else ''} (column {lay['col']} px): {f}" for f in failures]


def _keyboard_failures(page) -> list[str]:
    """A keyboard reader: no formula is a Tab stop (a chapter has hundreds), and the first Tab
    stops (the skip link, the header's buttons) show where the focus is."""
    out = []
    stops = page.evaluate("() => [...document.querySelectorAll('mjx-container')].filter(m => m.tabIndex >= 0).length")
    if stops:
        out.append(f"{stops} formulas are Tab stops (MathJax's inTabOrder): a keyboard reader tabs through each")
    page.evaluate("() => { document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0); }")
    for _ in range(12):
        page.keyboard.press("Tab")
        f = page.evaluate("""() => { const e = document.activeElement; if (!e || e === document.body) return null;
          const cs = getComputedStyle(e);
          return {what: e.tagName + '.' + [...e.classList].join('.') + ' ' + (e.getAttribute('aria-label') || e.textContent.trim()).slice(0, 30),
                  outline: cs.outlineStyle !== 'none' && parseFloat(cs.outlineWidth) >= 1,
                  shadow: cs.boxShadow !== 'none'}; }""")
        if f and not (f["outline"] or f["shadow"]):
            out.append(f"Tab reaches {f['what']!r} with no visible focus (no outline, no shadow)")
    page.evaluate("() => { document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0); }")
    return out


@pytest.mark.parametrize("page_name", _pages())
def test_page_reads_well(browser, page_name):
    """One visit per page: offline reading, then the layout checks of the module docstring at
    each width of WIDTHS (the page resized, not reloaded)."""
    ctx, page, problems = _open(browser, page_name, 1280)
    failures = []
    try:
        r = page.evaluate(CHECK_JS)
        failures += _keyboard_failures(page)
        for mode in MODES:
            if mode == "dark":          # the reader's system turns dark: the theme follows (no reload)
                page.emulate_media(color_scheme="dark")
                page.wait_for_function("() => document.documentElement.dataset.theme === 'dark'")
            widths = sorted(WIDTHS, key=lambda w: w != 1280) if mode == "light" else sorted(DARK_WIDTHS, reverse=True)
            for width in widths:                                     # 1280 first: it is loaded there
                _resize(page, width)
                lay = page.evaluate(LAYOUT_JS, width)
                lay["dark"] = mode == "dark"
                lay["text"] = _text_failures(lay["figs"], _figure_meta(page, lay["figs"]), width)
                if width in (390, 1280):
                    _shot(page, f"{width}-{mode}", page_name)
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
    # issue 26's rules: inline math and tables at 390 px only; cues, the header, dark mats at any width
    more = {**lay, "math": [], "wide": [], "imgs": [], "sliders": [], "labels": [], "inline": ["inline formula x"],
            "tables": ["table t"], "cues": ["eq scrolls"], "header": True, "dark": True,
            "mats": [{"lum": 0.8, "who": "output text_html"}, {"lum": 0.05, "who": "fine"}],
            "figs": [{"src": "a.png", "filter": "brightness(0.8)"}], "text": ["figure a.png: small"]}
    at390 = "\n".join(_layout_failures(more, "book/x", 390))
    for bit in ("math wider than its line", "table wider than the column", "without its cue", "second search box",
                "light mat (output text_html", "dimmed in dark mode", "figure a.png: small", "(dark)"):
        assert bit in at390, bit
    assert "fine" not in at390
    at1280 = "\n".join(_layout_failures(more, "book/x", 1280))
    assert "math wider than its line" not in at1280 and "table wider" not in at1280 and "without its cue" in at1280


def test_figure_text_rule_measures_the_displayed_size():
    """The smallest text as displayed: its drawn size times shown / own width, against 9 px."""
    meta = {"a.png": {"min_font_px": 12.5, "css_width": 672}, "b.png": None,
            "c.png": {"min_font_px": None, "css_width": 300}}
    figs = lambda w: [{"src": "file:///x/a.png", "shown": w}]                    # noqa: E731
    metas = {"file:///x/a.png": meta["a.png"]}
    assert _text_failures(figs(672), metas, 1280) == []
    assert _text_failures(figs(484), metas, 390) == []                          # 12.5 x 484 / 672 = 9.0
    bad = _text_failures(figs(358), metas, 390)                                 # 6.7 px: the phone before issue 26
    assert len(bad) == 1 and "shown at 6.7 px" in bad[0]
    assert "no text-size record" in _text_failures([{"src": "file:///x/b.png", "shown": 9}], {}, 390)[0]
    assert _text_failures([{"src": "file:///x/c.png", "shown": 100}], {"file:///x/c.png": meta["c.png"]}, 390) == []


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
        # the widget manager typesets labels with MathJax 2's Hub.Queue: served by MathJax 3 (scansnap.js)
        typeset = page.evaluate("""async () => {
          const el = document.querySelector('.widget-label'); el.textContent = '\\\\(\\\\eta_Y^2\\\\)';
          await MathJax.Hub.Queue(['Typeset', MathJax.Hub, el]);
          await new Promise(r => setTimeout(r, 300));
          return !!el.querySelector('mjx-container'); }""")
    finally:
        ctx.close()
    assert typeset, "TeX in a widget label was not typeset (MathJax.Hub.Queue under MathJax 3)"
    assert not problems, "\n".join(problems)
    assert value_after != value_before, (value_before, value_after)
    assert len(after) == 1 and after[0] != before[0]
