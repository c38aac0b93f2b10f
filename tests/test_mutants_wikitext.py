"""Mutation testing of scansnap/wikitext.py (issue 28): what the survivors of `make mutants
MUTANTS='scansnap.wikitext.*'` showed no test pinned. The cache of a download is written
atomically: a hidden partial file beside the archive, renamed into place; a failed write leaves
nothing behind and reports its own error."""
import errno
import os
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
