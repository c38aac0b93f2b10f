"""Issue 28, downloads and caches: a local HTTP server on 127.0.0.1 (http.server) sends a good zip,
an HTML page, a cut-off body, a damaged zip, a 404; caches are damaged, unreadable, a folder, or
unwritable. ``SCANSNAP_DOWNLOAD_BASE`` points the downloader at the server.

Every failure is one line (exit 2 from the command line, before anything is computed) under
``--data full``; ``--data auto`` falls back to the shipped text and says why; a damaged cached
archive is deleted and fetched again; a good one that merely cannot be read is never deleted."""
import http.server
import io
import threading
import zipfile
from pathlib import Path

import pytest

from scansnap import __main__ as cli
from scansnap import wikitext

ZIP = "wikitext-2-v1.zip"


def _zip(train=" = A = \n the cat sat on the mat \n"):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("wikitext-2/wiki.train.tokens", train)
        z.writestr("wikitext-2/wiki.valid.tokens", wikitext.shipped_text("valid"))
        z.writestr("wikitext-2/wiki.test.tokens", wikitext.shipped_text("test"))
    return buf.getvalue()


GOOD = _zip()


def _damaged(blob: bytes) -> bytes:
    """The zip's structure intact, bytes of the first member's deflate stream flipped: opening and
    listing it work, reading it fails inside zlib (or its CRC)."""
    b = bytearray(blob)
    start = 30 + len("wikitext-2/wiki.train.tokens")          # the first local header, then its data
    for i in range(start + 2, start + 12):
        b[i] ^= 0xFF
    return bytes(b)


class _Handler(http.server.BaseHTTPRequestHandler):
    """/<kind>/wikitext-2-v1.zip: good, html, cut (Content-Length more than sent), damaged, 404."""
    hits: list = []

    def do_GET(self):
        kind = self.path.strip("/").split("/")[0]
        _Handler.hits.append(kind)
        if kind == "missing" or not self.path.endswith(ZIP):
            self.send_error(404, "Not Found")
            return
        body = {"good": GOOD, "html": b"<!DOCTYPE html><html><body>Please log in</body></html>",
                "cut": GOOD, "damaged": _damaged(GOOD)}[kind]
        self.send_response(200)
        self.send_header("Content-Type", "text/html" if kind == "html" else "application/zip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body[: len(body) // 3] if kind == "cut" else body)
        if kind == "cut":
            self.close_connection = True

    def log_message(self, *a):
        pass


@pytest.fixture(scope="module")
def server():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


@pytest.fixture
def serve(server, monkeypatch, tmp_path):
    """serve(kind): downloads come from the local server's /kind/; a fresh cache; no memo."""
    monkeypatch.setattr(wikitext, "_verified", {})
    monkeypatch.setenv("SCANSNAP_CACHE", str(tmp_path / "cache"))
    _Handler.hits.clear()

    def to(kind):
        monkeypatch.setenv("SCANSNAP_DOWNLOAD_BASE", f"{server}/{kind}/")
        monkeypatch.setattr(wikitext, "_verified", {})
    return to


def test_a_good_download_is_verified_cached_and_reused(serve, tmp_path):
    serve("good")
    c = wikitext.load("full")
    assert c.source == "full" and c.train[:3] == ["=", "A", "="] and "cached at" in c.detail
    assert (tmp_path / "cache" / ZIP).read_bytes() == GOOD
    serve("missing")                                  # the server is no longer asked: the cache is read
    c = wikitext.load("full")
    assert c.detail.startswith("full from the cached") and _Handler.hits == ["good"]


BAD = {
    "html": "an HTML page, not a zip (a login, proxy or error page?)",
    "cut": "the connection closed after",                                       # IncompleteRead before
    "damaged": "not a readable WikiText zip",                                   # zlib.error before
    "missing": "HTTP Error 404: Not Found",
}


@pytest.mark.parametrize("kind", list(BAD))
def test_a_bad_download_is_refused_and_never_cached(serve, tmp_path, kind):
    serve(kind)
    with pytest.raises((OSError, wikitext.CorruptArchive), match=BAD[kind].replace("(", r"\(").replace(")", r"\)")
                       .replace("?", r"\?")):
        wikitext.load("full")
    assert not (tmp_path / "cache" / ZIP).exists()
    assert not list((tmp_path / "cache").glob("*")) if (tmp_path / "cache").exists() else True
    with pytest.warns(UserWarning, match=r"--data auto: using the shipped text, not the full WikiText-2"):
        c = wikitext.load("auto")                     # zlib.error and IncompleteRead did not fall back
    assert c.source == "shipped" and "because the full WikiText-2 failed" in c.detail


def _main(capsys, *args):
    try:
        status = cli.main(list(args))
    except SystemExit as e:
        status = e.code
    out = capsys.readouterr()
    return status, out.out, out.err


@pytest.mark.parametrize("kind", list(BAD))
def test_the_command_line_says_it_in_one_line(serve, tmp_path, capsys, monkeypatch, kind):
    """--data full: one line and exit 2, before any figure; --data auto: a note, the shipped
    text, and the record says so."""
    serve(kind)
    ran = []

    def fake_fig7(out, data, **kw):
        ran.append(data)
        for n in ("fig7.csv", "fig7.png"):
            (out / n).write_text("x\n1\n")
        return ["fig7.csv", "fig7.png"]

    monkeypatch.setattr(cli, "reproduce_fig7", fake_fig7)
    status, out, err = _main(capsys, "reproduce", "fig7", "--data", "full", "--out", str(tmp_path / "o"))
    assert status == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith("python -m scansnap: error: ") and BAD[kind] in err and not ran
    status, out, err = _main(capsys, "reproduce", "fig7", "--data", "auto", "--out", str(tmp_path / "o"))
    assert status == 0, err
    assert err.startswith("note: --data auto: using the shipped text") and BAD[kind] in err
    assert ran == ["shipped"] and "data: auto fell back to the shipped WikiText-2" in out
    import json
    rec = json.loads((tmp_path / "o" / "fig7.provenance.json").read_text())
    assert rec["data"]["asked"] == "auto" and rec["data"]["source"] == "shipped" and BAD[kind] in rec["data"]["detail"]


def test_a_damaged_cache_is_deleted_and_fetched_again(serve, tmp_path):
    """A cached zip with damaged deflate data raised zlib.error: kept, so every later run failed."""
    serve("good")
    cache = tmp_path / "cache" / ZIP
    cache.parent.mkdir()
    cache.write_bytes(_damaged(GOOD))
    with pytest.warns(UserWarning, match=r"the cached archive is corrupt .*not a readable WikiText zip.*deleting it"):
        c = wikitext.load("full")
    assert c.source == "full" and cache.read_bytes() == GOOD and _Handler.hits == ["good"]


def test_a_cache_that_cannot_be_read_is_left_alone(serve, tmp_path, monkeypatch):
    """A good cached archive that could not be read (permissions) was deleted as corrupt, and the
    user told only 'could not download'. Now: a warning naming the file and why, the download
    used from memory, the file untouched."""
    serve("good")
    cache = tmp_path / "cache" / ZIP
    cache.parent.mkdir()
    cache.write_bytes(GOOD)
    real = Path.read_bytes

    def denied(self):
        if self == cache:
            raise PermissionError(13, "Permission denied", str(self))
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", denied)
    with pytest.warns(UserWarning, match=rf"cannot read the cached archive {cache} \(Permission denied\); leaving it"):
        c = wikitext.load("full")
    assert c.source == "full" and "not cached (the cache path is unreadable)" in c.detail
    monkeypatch.setattr(Path, "read_bytes", real)
    assert cache.read_bytes() == GOOD                  # not deleted, not replaced


def test_a_folder_where_the_cache_should_be(serve, tmp_path):
    serve("good")
    cache = tmp_path / "cache" / ZIP
    cache.mkdir(parents=True)
    (cache / "mine.txt").write_text("keep")
    with pytest.warns(UserWarning, match=r"cannot read the cached archive .*\(not a file: a folder\)"):
        c = wikitext.load("full")                    # was a traceback (IsADirectoryError)
    assert c.source == "full" and (cache / "mine.txt").read_text() == "keep"


def test_a_cache_that_cannot_be_written_costs_only_the_caching(serve, tmp_path, monkeypatch):
    serve("good")
    (tmp_path / "blocker").write_text("a file where the cache folder should be")
    monkeypatch.setenv("SCANSNAP_CACHE", str(tmp_path / "blocker"))
    with pytest.warns(UserWarning, match=r"could not cache the download at .*using it from memory"):
        c = wikitext.load("full")
    assert c.source == "full" and "not cached" in c.detail


def test_an_empty_cache_variable_is_the_default_cache(monkeypatch):
    """SCANSNAP_CACHE='' cached in the working folder; empty means unset, as the XDG variables."""
    monkeypatch.setenv("SCANSNAP_CACHE", "")
    assert wikitext.cache_dir() == Path.home() / ".cache" / "scansnap"
    monkeypatch.delenv("SCANSNAP_CACHE")
    assert wikitext.cache_dir() == Path.home() / ".cache" / "scansnap"


def test_the_download_base_is_the_published_one_unless_set(monkeypatch):
    monkeypatch.delenv("SCANSNAP_DOWNLOAD_BASE", raising=False)
    assert wikitext.url("full") == "https://wikitext.smerity.com/wikitext-2-v1.zip" == wikitext.URLS["full"]
    monkeypatch.setenv("SCANSNAP_DOWNLOAD_BASE", "http://mirror.example/w/")
    assert wikitext.url("wikitext-103") == "http://mirror.example/w/wikitext-103-v1.zip"


def test_damaged_deflate_data_is_a_corrupt_archive():
    """The case behind 'damaged': zlib.error escaped every except clause before."""
    with pytest.raises(wikitext.CorruptArchive, match=r"^x: not a readable WikiText zip \((error|BadZipFile)"):
        wikitext._read_archive(_damaged(GOOD), "full", "x")


def test_a_404_leaves_no_socket_open(serve):
    """The HTTPError's body is closed: no ResourceWarning later (it showed as a stray 'note:')."""
    import gc
    import warnings
    serve("missing")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(OSError, match="HTTP Error 404"):
            wikitext.load("full")
        gc.collect()
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)]
