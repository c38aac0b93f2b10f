"""Mutation testing of scansnap/wikitext.py (issue 28): what the survivors of `make mutants
MUTANTS='scansnap.wikitext.*'` showed no test pinned. The cache of a download is written
atomically: a hidden partial file beside the archive, renamed into place; a failed write leaves
nothing behind and reports its own error."""
import errno
import functools
import os
import re
from pathlib import Path

import pytest

from scansnap import wikitext


def _replaces(monkeypatch):
    """Record every os.replace of wikitext (source, destination), and do it."""
    seen, real = [], os.replace

    def replace(src, dst):
        seen.append((Path(src), Path(dst)))
        return real(src, dst)
    monkeypatch.setattr(wikitext.os, "replace", replace)
    return seen


def test_the_cache_is_written_beside_the_archive_under_a_hidden_partial_name(tmp_path, monkeypatch):
    """The partial file is in the archive's own folder (a rename across file systems is not
    atomic), hidden, and named as partial: ``.<archive>.<random>.part``. Folders are created."""
    seen = _replaces(monkeypatch)
    path = tmp_path / "a" / "b" / "wikitext-2-v1.zip"          # two folders that do not exist yet
    wikitext._write_atomic(path, b"PK zip bytes")
    assert path.read_bytes() == b"PK zip bytes"
    assert len(seen) == 1
    src, dst = seen[0]
    assert dst == path and src.parent == path.parent
    assert src.name.startswith(".wikitext-2-v1.zip.") and src.name.endswith(".part")
    assert sorted(p.name for p in path.parent.iterdir()) == ["wikitext-2-v1.zip"]   # no partial left


def test_a_write_that_fails_leaves_nothing_and_reports_its_own_error(tmp_path, monkeypatch):
    """A full disk half way: the partial file is removed, the archive never appears, and the
    error raised is the disk's (not one from the clean-up)."""
    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(wikitext.os, "fsync", full)
    path = tmp_path / "cache" / "wikitext-2-v1.zip"
    with pytest.raises(OSError) as e:
        wikitext._write_atomic(path, b"PK zip bytes")
    assert e.value.errno == errno.ENOSPC
    assert list(path.parent.iterdir()) == []


def test_a_clean_up_that_fails_too_still_reports_the_first_error(tmp_path, monkeypatch):
    """If the partial file cannot be removed either (a read-only folder by then), the error that
    stopped the write is the one raised."""
    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    def unlink(p):
        raise OSError(errno.EROFS, "Read-only file system")
    monkeypatch.setattr(wikitext.os, "fsync", full)
    monkeypatch.setattr(wikitext.os, "unlink", unlink)
    with pytest.raises(OSError) as e:
        wikitext._write_atomic(tmp_path / "wikitext-2-v1.zip", b"PK zip bytes")
    assert e.value.errno == errno.ENOSPC


# ---- full_corpus: what it passes to the download, what it says, what it remembers

@functools.lru_cache(maxsize=None)
def _zip(members=("train", "valid", "test"), train=" = A = \n the cat sat \n"):
    import io
    import zipfile
    text = {"train": train, "valid": wikitext.shipped_text("valid"), "test": wikitext.shipped_text("test")}
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for m in members:
            z.writestr(f"wikitext-2/wiki.{m}.tokens", text[m])
    return buf.getvalue()


@pytest.fixture
def fetched(monkeypatch, tmp_path):
    """Downloads answered from memory (a list of (url, timeout) asked); a fresh cache; no memo."""
    asked = []

    def download(src, timeout):
        asked.append((src, timeout))
        return _zip()
    monkeypatch.setattr(wikitext, "_download", download)
    monkeypatch.setattr(wikitext, "_verified", {})
    monkeypatch.setenv("SCANSNAP_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("SCANSNAP_DOWNLOAD_BASE", raising=False)
    return asked


def test_the_download_waits_the_timeout_asked_and_load_s_default_of_10_s(fetched, tmp_path):
    wikitext.full_corpus(timeout=3)
    wikitext._verified.clear()
    (tmp_path / "cache" / "wikitext-2-v1.zip").unlink()
    wikitext.full_corpus()
    assert fetched == [(wikitext.URLS["full"], 3.0), (wikitext.URLS["full"], 10.0)]
    assert all(type(t) is float for _, t in fetched)


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), None])
def test_a_timeout_that_is_not_a_positive_number_is_named(fetched, bad):
    with pytest.raises(ValueError) as e:
        wikitext.full_corpus(timeout=bad)
    assert str(e.value) == f"timeout must be a positive number, got {bad!r}"
    assert fetched == []


def test_the_detail_says_what_was_checked(fetched, tmp_path):
    c = wikitext.full_corpus()
    z = tmp_path / "cache" / "wikitext-2-v1.zip"
    assert c.detail == (f"full downloaded from {wikitext.URLS['full']} (zip CRCs and the valid/test sha256 "
                        f"checked), cached at {z}")
    c = wikitext.full_corpus("5", name="wikitext-103")           # no shipped checksums for WikiText-103
    z = tmp_path / "cache" / "wikitext-103-v1.zip"
    assert c.detail == f"wikitext-103 downloaded from {wikitext.URLS['wikitext-103']} (zip CRCs checked), cached at {z}"


def test_a_second_call_returns_the_same_corpus_from_memory(fetched):
    first = wikitext.full_corpus()
    second = wikitext.full_corpus()
    assert len(fetched) == 1
    assert (second.train, second.valid, second.test, second.source, second.detail) == \
        (first.train, first.valid, first.test, "full", first.detail)
    assert second.train[:6] == ["=", "A", "=", "<eos>", "the", "cat"]
    assert len(second.valid) == 217_646 and len(second.test) == 245_569        # the published counts


def test_a_broken_link_where_the_cache_should_be_is_named_so(fetched, tmp_path):
    z = tmp_path / "cache" / "wikitext-2-v1.zip"
    z.parent.mkdir(parents=True)
    z.symlink_to(tmp_path / "nowhere")
    with pytest.warns(UserWarning, match=r"cannot read the cached archive .* \(not a file: a broken link or device\); "
                                         r"leaving it as it is and downloading again \(not cached\)$"):
        c = wikitext.full_corpus()
    assert c.source == "full" and z.is_symlink() and not z.exists()          # left as it was


@pytest.mark.parametrize("missing", ["train", "valid", "test"])
def test_an_archive_without_a_split_is_a_corrupt_archive(missing):
    members = [m for m in ("train", "valid", "test") if m != missing]
    with pytest.raises(wikitext.CorruptArchive) as e:
        wikitext._read_archive(_zip(tuple(members)), "full", "the download")
    assert str(e.value) == f"the download: no wiki.{missing}.tokens inside"


def test_wikitext_data_passes_its_vocabulary_threshold_on(monkeypatch):
    import scansnap.experiments as ex
    asked = []
    monkeypatch.setattr(ex, "wikitext_data", lambda source, min_freq: asked.append((source, min_freq)) or "ids")
    assert wikitext.wikitext_data("shipped", min_freq=5) == "ids"
    assert wikitext.wikitext_data() == "ids"
    assert asked == [("shipped", 5), ("shipped", 3)]


def test_a_cached_archive_whose_valid_split_is_not_the_shipped_one_is_replaced(fetched, tmp_path):
    """Its CRCs are fine (a zip made from other text): the shipped checksums still catch it, the
    warning names the cached file, and the download replaces it."""
    import io
    import zipfile
    z = tmp_path / "cache" / "wikitext-2-v1.zip"
    z.parent.mkdir(parents=True)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as f:
        for m in ("train", "valid", "test"):
            f.writestr(f"wikitext-2/wiki.{m}.tokens", " = B = \n other text \n")
    z.write_bytes(buf.getvalue())
    with pytest.warns(UserWarning, match=rf"the cached archive is corrupt \({re.escape(str(z))}: its valid split does "
                                         r"not match the shipped checksum"):
        c = wikitext.full_corpus()
    assert len(fetched) == 1 and z.read_bytes() == _zip() and c.train[:3] == ["=", "A", "="]


# ---- the download itself

def test_a_mirror_base_keeps_its_own_path(monkeypatch):
    monkeypatch.setenv("SCANSNAP_DOWNLOAD_BASE", "http://mirror.example/X/")
    assert wikitext.url("full") == "http://mirror.example/X/wikitext-2-v1.zip"


def test_the_download_is_asked_with_its_timeout(monkeypatch):
    import io
    asked = []

    def urlopen(src, timeout=None):
        asked.append((src, timeout))
        return io.BytesIO(b"PK body")
    monkeypatch.setattr(wikitext.urllib.request, "urlopen", urlopen)
    assert wikitext._download("http://h/a.zip", 2.5) == b"PK body"
    assert asked == [("http://h/a.zip", 2.5)]                     # never without one: a hang


@pytest.mark.parametrize("reason, why", [(ConnectionRefusedError(111, "Connection refused"), "[Errno 111] Connection refused"),
                                         ("", "URLError")])
def test_no_network_is_named_by_its_reason(monkeypatch, reason, why):
    import urllib.error

    def urlopen(src, timeout=None):
        raise urllib.error.URLError(reason)
    monkeypatch.setattr(wikitext.urllib.request, "urlopen", urlopen)
    with pytest.raises(OSError) as e:
        wikitext._download("http://h/a.zip", 1.0)
    assert str(e.value) == f"could not download http://h/a.zip ({why}); the offline text is source='shipped'"
