"""The built book, read in a real browser (headless Debian Chromium driven by Playwright).

The book is built first (jupyter-book with its execution cache: quick once the chapters are
cached), then every page is opened from file:// with every non-file request refused, as a
reader with no network would open it, and we assert: no JavaScript error beyond the
allow-list below, every math element typeset (no raw TeX left), every image loaded, the
widgets rendered, and on the chapters with sliders, moving a slider changes the figure.
A full-page screenshot of each page goes to _build/screenshots/ for review.

Needs /usr/bin/chromium (Debian's `chromium`; `make test` installs it) or SCANSNAP_CHROMIUM.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"
SHOTS = ROOT / "_build" / "screenshots"
CHROMIUM = os.environ.get("SCANSNAP_CHROMIUM", "/usr/bin/chromium")
# Flags measured on these machines (Debian chromium, headless): without the background-networking
# ones Chromium keeps trying (and failing) to reach Google's hosts.
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]

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

SLIDER_PAGES = ["book/01-model", "book/02-data", "book/03-decoder", "book/04-scan", "book/05-snap",
                "book/06-figures", "book/07-beyond"]
FIGURE_PAGES = SLIDER_PAGES


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


@pytest.fixture(scope="module")
def book():
    """Build the book (as `make book` does) so the test reads what a reader would get."""
    if not (ROOT / "_assets" / "mathjax" / "tex-chtml.js").exists():
        pytest.fail("_assets/ is missing: run `make assets` (the offline MathJax and widget manager)")
    jb = Path(sys.executable).parent / "jupyter-book"
    proc = subprocess.run([str(jb), "build", str(ROOT), "-n", "-W", "--keep-going"],
                          capture_output=True, text=True, timeout=3000)
    assert proc.returncode == 0, "jupyter-book build failed:\n" + proc.stdout[-4000:] + proc.stderr[-4000:]
    return HTML


@pytest.fixture(scope="module")
def browser(book):
    if not Path(CHROMIUM).exists():
        pytest.fail(f"no browser at {CHROMIUM}: `make test` installs Debian's chromium "
                    "(apt-get install chromium), or set SCANSNAP_CHROMIUM")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield b
        b.close()


def _open(browser, page_name: str):
    """Open a page from file:// with the network cut; returns (page, problems list)."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
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
        page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise", timeout=30000)
        page.evaluate("() => MathJax.startup.promise")
    return ctx, page, problems


RAW_TEX = re.compile(r"\\\(|\\\)|\\\[|\\\]|\$\$|\$[^$\s][^$]{0,200}?\$|\\(?:frac|eta|sum|mathbf|top)\b")

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


@pytest.mark.parametrize("page_name", _pages())
def test_page_reads_offline(browser, page_name):
    ctx, page, problems = _open(browser, page_name)
    try:
        if page_name in SLIDER_PAGES:  # widgets render asynchronously after load
            page.wait_for_selector(".widget-slider", timeout=30000)
        page.wait_for_timeout(300)
        r = page.evaluate(CHECK_JS)
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / (page_name.replace("/", "__") + ".png")), full_page=True)
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
        assert r["n_widgets"] > 0 and r["widget_errors"] == 0, r


VISIBLE_FIGURE_JS = """() => {
  const imgs = [...document.querySelectorAll('.jupyter-widgets img')].filter(i => i.offsetParent !== null);
  return imgs.map(i => i.src);
}"""


@pytest.mark.parametrize("page_name", SLIDER_PAGES)
def test_slider_changes_figure_without_kernel(browser, page_name):
    """Moving the first slider of the page shows another precomputed figure."""
    ctx, page, problems = _open(browser, page_name)
    try:
        page.wait_for_selector(".widget-slider .noUi-handle", timeout=30000)
        before = page.evaluate(VISIBLE_FIGURE_JS)
        assert len(before) == 1, f"expected one visible slider figure, found {len(before)}"
        readout = page.locator(".widget-slider .widget-readout").first
        value_before = readout.inner_text()
        page.locator(".widget-slider .noUi-handle").first.focus()
        page.keyboard.press("ArrowRight")
        page.wait_for_function(f"() => ({VISIBLE_FIGURE_JS})()[0] !== {before[0]!r}", timeout=10000)
        after = page.evaluate(VISIBLE_FIGURE_JS)
        value_after = readout.inner_text()
    finally:
        ctx.close()
    assert not problems, "\n".join(problems)
    assert value_after != value_before, (value_before, value_after)
    assert len(after) == 1 and after[0] != before[0]

