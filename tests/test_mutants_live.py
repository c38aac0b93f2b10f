"""live.py's mutation survivors (issue 28): a slider range's checks (``_check_range``) and the
standalone page (``page``, ``LivePanel.save``), in-process."""
import html

import pytest

from scansnap import live
from scansnap.live import _check_range


def test_a_range_is_two_numbers_not_bools_or_text():
    for lo, hi in [("a", 1.0), (0.1, "x"), (True, 5), (None, 2.0)]:
        with pytest.raises(ValueError, match=rf"^range of eta_y must be two numbers, got {(lo, hi)!r}$".replace("(", r"\(").replace(")", r"\)")):
            _check_range("eta_y", lo, hi)


def test_an_integer_controls_range_is_two_integers():
    for lo, hi in [(1.5, 10), (1, 10.5)]:
        with pytest.raises(ValueError, match=r"^range of steps must be two integers, got \(" + f"{lo}, {hi}" + r"\)$"):
            _check_range("steps", lo, hi)
    got = _check_range("steps", 10.0, 20.0)            # whole floats are taken, as ints
    assert got == (10, 20) and all(type(v) is int for v in got)


def test_a_range_needs_low_below_high_and_may_reach_the_panels_limits():
    with pytest.raises(ValueError, match=r"^range of eta_y must have low < high, got \(1, 1\)$"):
        _check_range("eta_y", 1, 1)
    got = _check_range("eta_y", 0.01, 100)            # exactly RANGES["eta_y"]
    assert got == (0.01, 100.0) and all(type(v) is float for v in got)
    assert _check_range("steps", 1, 4096) == (1, 4096)
    with pytest.raises(ValueError, match=r"^range of steps \(1, 4097\) exceeds what a panel allows, \(1, 4096\)$"):
        _check_range("steps", 1, 4097)


def test_a_real_controls_range_comes_back_as_floats():
    got = _check_range("momentum", 0, 0.5)
    assert got == (0.0, 0.5) and all(type(v) is float for v in got)


@pytest.fixture(scope="module")
def a_panel():
    return live.panel("cn", controls=["eta_y"])


def test_a_page_holds_its_panels_under_an_escaped_title(a_panel, tmp_path):
    path = live.page([a_panel, a_panel], str(tmp_path / "p.html"), title="A < B", intro="<p>intro</p>")
    assert path == tmp_path / "p.html"
    doc = path.read_bytes().decode("utf-8")
    head = ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1"><title>A &lt; B</title>'
            "<style>body{margin:0 auto;padding:12px;max-width:760px;font-family:system-ui,sans-serif}"
            "@media (prefers-color-scheme: dark){body{background:#0d1117;color:#e6edf3}}</style>"
            "</head><body><h1>A &lt; B</h1><p>intro</p>\n")
    assert doc == head + a_panel.html() + "\n" + a_panel.html() + "\n</body></html>\n"


def test_a_page_is_utf8_whatever_the_locale(a_panel, tmp_path, monkeypatch):
    """The panels' labels are not ASCII (η_Y): the page is written as UTF-8 explicitly, not in the
    locale's encoding (here made ASCII, as on a machine whose locale is not UTF-8)."""
    import io
    real = io.text_encoding
    monkeypatch.setattr(io, "text_encoding", lambda encoding, stacklevel=2: "ascii" if encoding is None else real(encoding))
    path = live.page([a_panel], tmp_path / "u.html", title="η")
    assert "<title>η</title>" in path.read_bytes().decode("utf-8")


def test_save_writes_a_page_of_one_panel_with_its_default_title(a_panel, tmp_path):
    path = a_panel.save(tmp_path / "one.html")
    assert path == tmp_path / "one.html"
    doc = path.read_text(encoding="utf-8")
    assert "<title>scansnap live panel</title>" in doc and "<h1>scansnap live panel</h1>" in doc
    assert doc.count('<div class="yzlive-panel">') == 1 and a_panel.html() in doc
    doc = live.page([a_panel], tmp_path / "d.html").read_text(encoding="utf-8")
    assert doc.count("<title>scansnap live panels</title><style>") == 1
    assert doc.count('<h1>scansnap live panels</h1>\n<div class="yzlive-panel">') == 1     # no intro by default
    assert a_panel.save(tmp_path / "t.html", "Mine").read_text(encoding="utf-8").count("<title>Mine</title>") == 1


def test_a_panel_without_a_figure_has_an_empty_fallback_before_its_note():
    p = live.panel("cn", note="Move the slider.")
    assert '<div class="yzlive-fallback"><p>Move the slider.</p></div>' in p.html()


def test_the_fallback_figure_is_the_pngs_bytes_in_a_box_that_keeps_its_text_legible():
    import base64
    import math

    from matplotlib.figure import Figure

    from scansnap.plots import legible_width, read_png_meta
    f = Figure(figsize=(3, 2))
    f.subplots().plot([0, 1], [1, 0])
    p = live.panel("cn", static=f, alt="a line")
    legible = legible_width(read_png_meta(p.png))
    assert legible and legible < 300                  # the PNG carries its smallest text size
    img = f'<img src="data:image/png;base64,{base64.b64encode(p.png).decode()}" alt="a line">'
    assert (f'<div class="yzlive-fallback"><div class="yz-figbox" style="--fig-legible: {math.ceil(legible)}px">'
            f"{img}</div><p>") in p.html()


def test_the_config_cannot_close_its_script_element():
    """A question with "</script>" in it must not end the JSON's <script> early: "</" becomes "<\\/"
    (the same string to JSON)."""
    import json
    p = live.panel("cn", question="why </script> here?")
    doc = p.html()
    cfg = doc.split('class="yzlive-config">')[1].split("</script>")[0]
    assert "</" not in cfg and json.loads(cfg)["question"] == "why </script> here?"
