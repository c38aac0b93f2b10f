"""More mutants of scansnap/wikitext.py's full_corpus (issue 28; mutmut run at d368bf7,
``scansnap.wikitext.x_full_corpus__mutmut_<n>``), and provenance.make_some: the messages of a
download that fails its check, a cache that cannot be written or deleted, and where each
warning points (the caller's line, ``stacklevel=2``)."""
import errno
import io
import re
import zipfile
from pathlib import Path

import pytest

from scansnap import provenance, wikitext
from callers import points_at


def _zip(members=("train", "valid", "test"), text=None):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for m in members:
            z.writestr(f"wikitext-2/wiki.{m}.tokens", text or (" = A = \n the cat sat \n" if m == "train"
                                                                  else wikitext.shipped_text(m)))
    return buf.getvalue()


@pytest.fixture
def cache(monkeypatch, tmp_path):
    """A fresh cache folder, no memo; downloads answered with ``cache.blob``."""
    class Cache:
        blob = _zip()
        zpath = tmp_path / "cache" / "wikitext-2-v1.zip"
    monkeypatch.setattr(wikitext, "_download", lambda src, timeout: Cache.blob)
    monkeypatch.setattr(wikitext, "_verified", {})
    monkeypatch.setenv("SCANSNAP_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("SCANSNAP_DOWNLOAD_BASE", raising=False)
    return Cache


def test_a_download_that_fails_its_check_is_named_by_its_url(cache):
    """Kills full_corpus 99 (`where` None)."""
    cache.blob = _zip(("train", "test"))
    with pytest.raises(wikitext.CorruptArchive) as e:
        wikitext.full_corpus()
    assert str(e.value) == f"the download of {wikitext.URLS['full']}: no wiki.valid.tokens inside"
    assert not cache.zpath.exists()


def _no_space(*a, **k):
    raise OSError(errno.ENOSPC, "No space left on device", "somewhere")


def test_a_cache_that_cannot_be_written_is_described_by_its_reason_at_the_callers_line(cache, monkeypatch):
    """The warning and the corpus's detail give the system's reason, not the whole exception,
    and the warning points at the line that called full_corpus. Kills full_corpus 113, 117
    (stacklevel), 114 and 119 (`e.strerror and e`)."""
    monkeypatch.setattr(wikitext, "_write_atomic", _no_space)
    with pytest.warns(UserWarning) as w:
        c = wikitext.full_corpus()
    assert [str(x.message) for x in w] == [
        f"could not cache the download at {cache.zpath} (No space left on device); using it from memory "
        "(it will be downloaded again next time)"]
    assert points_at(w[0].filename, __file__)
    assert c.detail == (f"full downloaded from {wikitext.URLS['full']} (zip CRCs and the valid/test sha256 checked), "
                        "not cached (No space left on device)")


def test_an_unreadable_cache_warns_at_the_callers_line(cache):
    """Kills full_corpus 65 (no message), 66 and 70 (stacklevel 1 or 3)."""
    cache.zpath.mkdir(parents=True)                       # a folder where the archive should be
    with pytest.warns(UserWarning) as w:
        c = wikitext.full_corpus()
    assert [str(x.message) for x in w] == [
        f"cannot read the cached archive {cache.zpath} (not a file: a folder); leaving it as it is and "
        "downloading again (not cached)"]
    assert points_at(w[0].filename, __file__)
    assert c.detail.endswith("not cached (the cache path is unreadable)")


def _corrupt_cache(cache):
    cache.zpath.parent.mkdir(parents=True)
    cache.zpath.write_bytes(_zip(text=" = B = \n other \n"))


def test_a_corrupt_cache_warns_at_the_callers_line(cache):
    """Kills full_corpus 84, 85 (stacklevel 1 or 3)."""
    _corrupt_cache(cache)
    with pytest.warns(UserWarning, match=r"^the cached archive is corrupt \(") as w:
        wikitext.full_corpus()
    assert points_at(w[0].filename, __file__)


def test_a_corrupt_cache_that_cannot_be_deleted_says_so_by_its_reason(cache, monkeypatch):
    """Kills full_corpus 87 (`e2.strerror and e2`) and 88 (the message's tail)."""
    _corrupt_cache(cache)

    def unlink(self, missing_ok=False):
        raise PermissionError(errno.EACCES, "Permission denied", str(self))
    monkeypatch.setattr(Path, "unlink", unlink)
    with pytest.warns(UserWarning, match="the cached archive is corrupt"):
        with pytest.raises(wikitext.CorruptArchive) as e:
            wikitext.full_corpus()
    assert str(e.value) == (f"{cache.zpath} is corrupt and could not be deleted (Permission denied): "
                            "delete it by hand and run again")


def test_make_some_names_the_folder_asked_for(tmp_path):
    """Kills provenance.make_some 1 (`str(None)`)."""
    assert provenance.make_some(tmp_path / "res") == (
        f"make one with `python -m scansnap reproduce <figure> --out {tmp_path / 'res'}` or a result's "
        f".save({str(tmp_path / 'res')!r})")
