"""The book's pages for every screen and a clean console (issue 26).

- **Figures sized by their text.** Every figure of a chapter is a PNG made by the chapters'
  setup (``scansnap.plots``), which writes its smallest font size into the PNG
  (``scansnap.plots.PNG_META_KEY``). Here each such ``<img>`` of a page is wrapped in a
  ``div.scansnap-fig`` with ``--fig-legible``: the narrowest width at which that text reads
  ``scansnap.plots.MIN_TEXT_PX`` CSS px. On a phone the figure keeps that width and its box
  scrolls sideways, with a fade at the cut edge (``book/_theme/scansnap.css``, ``scansnap.js``);
  a tap fits it to the screen and back. A desktop column holds every figure at its own size.
- **One thebe configuration script.** sphinx-thebe registers its inline script (``const
  THEBE_JS_URL = ...``) once per read of the environment; a page that carries it twice throws
  "Identifier 'THEBE_JS_URL' has already been declared". Each page keeps one of each script.
- **A theme mode on a first visit.** pydata-sphinx-theme reads the reader's light/dark choice
  from ``localStorage`` and falls back to ``html_context["default_mode"]``; unset, a fresh
  browser logs "Got invalid theme mode". It is ``"auto"`` here (follow the system).
- **The widget manager's schema compiler, quiet.** ``@jupyter-widgets/html-manager`` compiles
  its state schema with Ajv in strict mode, whose type check logs a warning about the schema's
  own union types on every widget page. The copied ``embed.js`` is built with
  ``strictTypes: false`` (the validation itself is unchanged).
- ``scansnap.js`` (deferred, after MathJax): the MathJax 2 ``Hub.Queue`` the widget manager calls,
  served by MathJax 3; the scroll cues; tap-to-fit figures; phone cards for wide tables.
"""
from __future__ import annotations

import html
import math
import re
from pathlib import Path

IMG = re.compile(r'<img\b[^>]*?\bsrc="(?P<src>[^"]+)"[^>]*>')
# html-manager 1.x's bundle: `gt=new(ft()),mt=gt.compile(pt)` (minified names vary by version)
AJV = re.compile(r"(?P<lhs>\b[\w$]+=new\((?P<cls>[\w$]+)\(\)\))(?P<rest>,[\w$]+=[\w$]+\.compile\()")


def _meta_of(app, src: str):
    """The scansnap figure record of the page image at ``src`` (a built ``_images/`` path)."""
    from scansnap.plots import read_png_meta

    if "_images/" not in src or not src.lower().endswith(".png"):
        return None
    name = src.rsplit("/", 1)[-1]
    by_name = getattr(app, "_scansnap_images", None)
    if by_name is None or name not in by_name:
        by_name = app._scansnap_images = {v: k for k, v in app.builder.images.items()}
    source = by_name.get(name)
    if source is None:
        return None
    path = Path(source)
    if not path.is_absolute():
        path = Path(app.srcdir) / path
    try:
        return read_png_meta(path.read_bytes())
    except OSError:
        return None


def wrap_figures(app, body: str) -> str:
    """Each figure ``<img>`` that carries a text-size record, in its ``div.scansnap-fig``."""
    from scansnap.plots import legible_width

    def one(m):
        meta = _meta_of(app, html.unescape(m.group("src")))
        width = legible_width(meta)
        if width is None:
            return m.group(0)
        return (f'<div class="scansnap-fig" style="--fig-legible: {math.ceil(width)}px" '
                f'data-min-font-px="{meta["min_font_px"]}" data-css-width="{meta["css_width"]}">'
                f"{m.group(0)}</div>")

    return IMG.sub(one, body)


def page_context(app, pagename, templatename, context, doctree):
    scripts = context.get("script_files")
    if scripts:
        seen, unique = set(), []
        for js in scripts:
            # the same file or inline body, whatever priority each registration gave it
            # ('' and None both mean an inline script: sphinx-thebe registers its script once each way)
            key = (str(getattr(js, "filename", js) or ""), repr(sorted(getattr(js, "attributes", {}).items())))
            if key not in seen:
                seen.add(key)
                unique.append(js)
        scripts[:] = unique
    if "body" in context:
        context["body"] = wrap_figures(app, context["body"])


def quiet_ajv(app, exception):
    """Build the widget manager's schema compiler with strictTypes off (see the module's docstring)."""
    if exception is not None or app.builder.format != "html":
        return
    js = Path(app.outdir) / "_static" / "jupyter-widgets" / "embed.js"
    if not js.exists():
        return
    text = js.read_text(encoding="utf-8")
    if "({strictTypes:!1})" in text:     # patched already (a build that did not copy it again)
        return
    new, n = AJV.subn(lambda m: m.group("lhs") + "({strictTypes:!1})" + m.group("rest"), text, count=1)
    if n != 1:
        from sphinx.util import logging
        logging.getLogger(__name__).warning(
            "scansnap_pages: the widget manager's Ajv constructor was not found in %s: its schema "
            "warning will show in the console (update _ext/scansnap_pages.py's AJV pattern)", js)
        return
    js.write_text(new, encoding="utf-8")


def config_inited(app, config):
    ctx = dict(config.html_context or {})
    ctx.setdefault("default_mode", "auto")
    config.html_context = ctx


# Bump when this extension changes what it writes into pages: a changed config value makes Sphinx
# write every page again (an incremental build would otherwise keep pages written before).
VERSION = 1


def figure_alt_text(app, doctree, docname):
    """A figure's image without alt text gets its caption as alt: a screen reader otherwise reads
    the image's file name (a hash, for the chapters' computed figures)."""
    from docutils import nodes

    for fig in doctree.findall(nodes.figure):
        caps = list(fig.findall(nodes.caption))
        if not caps:
            continue
        text = " ".join(caps[0].astext().split())
        for img in fig.findall(nodes.image):
            if not img.get("alt"):
                img["alt"] = text


def setup(app):
    app.connect("doctree-resolved", figure_alt_text)
    app.add_config_value("scansnap_pages_version", VERSION, "html")
    app.connect("config-inited", config_inited)
    # after MathJax (priority 500), deferred: it finds MathJax 3 loaded and gives it a Hub
    app.add_js_file("scansnap.js", priority=510, defer="defer")
    app.connect("html-page-context", page_context, priority=900)
    app.connect("build-finished", quiet_ajv)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
