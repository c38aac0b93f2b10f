import pytest
import torch

from scansnap import wikitext


def test_shipped_splits_and_checksums():
    v = wikitext.shipped_text("valid")
    assert v.startswith(" \n = Homarus gammarus = \n")
    assert len(wikitext.tokenize(v)) == 217_646                   # the published counts
    assert len(wikitext.tokenize(wikitext.shipped_text("test"))) == 245_569
    with pytest.raises(ValueError, match="unknown shipped split 'train'"):
        wikitext.shipped_text("train")


def test_document_split_offline():
    docs = wikitext.documents(wikitext.shipped_text("valid"))
    assert len(docs) == 60 and all(d.lstrip(" \n").startswith("= ") for d in docs)
    c = wikitext.load("shipped")
    assert c.source == "shipped" and c.test is None
    assert 300_000 < len(c.train) < 500_000 and 20_000 < len(c.valid) < 100_000
    again = wikitext.load("shipped")
    assert c.valid == again.valid            # seeded split


def test_auto_falls_back_without_network(monkeypatch):
    def offline(timeout):
        raise OSError("no network")
    monkeypatch.setattr(wikitext, "full_corpus", offline)
    with pytest.warns(UserWarning, match=r"--data auto: using the shipped text, not the full WikiText-2 \(no network\)"):
        c = wikitext.load("auto")
    assert c.source == "shipped" and c.detail.endswith("because the full WikiText-2 failed: no network")
    with pytest.raises(ValueError, match="unknown WikiText source 'web'"):
        wikitext.load("web")


def test_vocab_and_batchify():
    c = wikitext.load("shipped")
    v = c.vocab()
    ids = v.encode(c.valid[:1000])
    assert ids.max() < len(v) and v.itos[ids[0]] == c.valid[0]
    b = wikitext.batchify(ids, 20)
    assert b.shape == (50, 20) and torch.equal(b[:, 0], ids[:50])


def test_downloads_fail_clearly_offline(monkeypatch, tmp_path):
    import urllib.request

    def no_network(*a, **k):
        raise urllib.error.URLError("no network")

    monkeypatch.setenv("SCANSNAP_CACHE", str(tmp_path))
    monkeypatch.setattr(urllib.request, "urlopen", no_network)
    for source, name in (("full", "wikitext-2-v1.zip"), ("wikitext-103", "wikitext-103-v1.zip")):
        with pytest.raises(OSError, match=f"could not download .*{name}.*source='shipped'"):
            wikitext.load(source)
    with pytest.warns(UserWarning, match="using the shipped text"):
        assert wikitext.load("auto").source == "shipped"
    with pytest.raises(ValueError, match="unknown WikiText download"):
        wikitext.full_corpus(name="wikitext-3")


# ---------------------------------------------------------------------------------------
# The download cache: verified, atomic, recoverable (issue 11)
# ---------------------------------------------------------------------------------------

import io
import zipfile
from pathlib import Path


def _zip(valid=None, test=None, train=" = A = \n the cat sat \n", stored=False):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED) as z:
        z.writestr("wikitext-2/wiki.train.tokens", train)
        z.writestr("wikitext-2/wiki.valid.tokens", wikitext.shipped_text("valid") if valid is None else valid)
        z.writestr("wikitext-2/wiki.test.tokens", wikitext.shipped_text("test") if test is None else test)
    return buf.getvalue()


class _Server:
    """Stands in for urllib.request.urlopen: serves one blob, counts the calls."""

    def __init__(self, blob=None):
        self.blob, self.calls = blob, 0

    def __call__(self, url, timeout=None):
        self.calls += 1
        if self.blob is None:
            raise OSError("no network")
        return io.BytesIO(self.blob)


@pytest.fixture
def net(monkeypatch, tmp_path):
    import urllib.request
    server = _Server(_zip())
    monkeypatch.setattr(urllib.request, "urlopen", server)
    monkeypatch.setenv("SCANSNAP_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(wikitext, "_verified", {})
    return server


def test_full_is_verified_cached_atomically_and_reused(net, tmp_path, monkeypatch):
    c = wikitext.load("full")
    assert c.source == "full" and c.train[:4] == ["=", "A", "=", "<eos>"]
    assert len(c.valid) == 217_646 and "downloaded from" in c.detail and "sha256 checked" in c.detail
    cache = tmp_path / "cache"
    assert [p.name for p in cache.iterdir()] == ["wikitext-2-v1.zip"]          # no temporary left
    assert (cache / "wikitext-2-v1.zip").read_bytes() == net.blob
    monkeypatch.setattr(wikitext, "_verified", {})
    again = wikitext.load("full")
    assert net.calls == 1 and "from the cached" in again.detail and again.valid == c.valid


def test_a_corrupt_cached_archive_is_replaced(net, tmp_path):
    z = tmp_path / "cache" / "wikitext-2-v1.zip"
    z.parent.mkdir(parents=True)
    z.write_bytes(net.blob[: len(net.blob) // 2])                              # a truncated zip
    with pytest.warns(UserWarning, match="cached archive is corrupt.*downloading again"):
        c = wikitext.load("full")
    assert c.source == "full" and net.calls == 1 and z.read_bytes() == net.blob


def test_a_corrupt_cache_offline_says_what_to_do(net, tmp_path, monkeypatch):
    z = tmp_path / "cache" / "wikitext-2-v1.zip"
    z.parent.mkdir(parents=True)
    z.write_bytes(b"not a zip")
    net.blob = None
    with pytest.warns(UserWarning, match="corrupt"), pytest.raises(OSError, match="could not download"):
        wikitext.load("full")
    assert not z.exists()                                                       # next time: a clean start
    z.write_bytes(b"not a zip")
    monkeypatch.setattr(Path, "unlink", lambda self, *a, **k: (_ for _ in ()).throw(PermissionError("read-only")))
    with pytest.warns(UserWarning), pytest.raises(wikitext.CorruptArchive, match=f"{z} is corrupt and could not "
                                                                             "be deleted .*delete it by hand"):
        wikitext.load("full")


def test_auto_never_trusts_a_corrupt_cache_forever(net, tmp_path):
    z = tmp_path / "cache" / "wikitext-2-v1.zip"
    z.parent.mkdir(parents=True)
    z.write_bytes(b"garbage")
    with pytest.warns(UserWarning, match="corrupt"):
        assert wikitext.load("auto").source == "full"                          # recovered, not shipped


def test_an_unwritable_cache_keeps_the_good_download(net, tmp_path, monkeypatch):
    (tmp_path / "file").write_text("x")
    monkeypatch.setenv("SCANSNAP_CACHE", str(tmp_path / "file" / "cache"))   # cannot be a folder
    with pytest.warns(UserWarning, match="could not cache the download .*using it from memory"):
        c = wikitext.load("auto")
    assert c.source == "full" and "not cached" in c.detail and len(c.test) == 245_569


def test_a_download_that_fails_verification_is_not_cached(net, tmp_path):
    net.blob = _zip(valid=" = Not WikiText = \n")
    with pytest.raises(wikitext.CorruptArchive, match="its valid split does not match the shipped checksum"):
        wikitext.load("full")
    net.blob = _zip(test=" = Not WikiText = \n")
    with pytest.raises(wikitext.CorruptArchive, match="its test split does not match the shipped checksum"):
        wikitext.load("full")
    assert not (tmp_path / "cache" / "wikitext-2-v1.zip").exists()
    with pytest.warns(UserWarning, match="using the shipped text"):
        c = wikitext.load("auto")
    assert c.source == "shipped" and c.detail.startswith("auto fell back to the shipped") and "test split does not match" in c.detail


def test_a_crc_error_is_caught_without_checksums(net):
    """WikiText-103 has no shipped checksum: the zip's own CRCs are checked."""
    blob = bytearray(_zip(stored=True))
    i = blob.index(b"the cat sat")
    blob[i] ^= 1                                                                # one bit flipped in a member
    net.blob = bytes(blob)
    with pytest.raises(wikitext.CorruptArchive, match="wiki.train.tokens fails its CRC check"):
        wikitext.load("wikitext-103")
    net.blob = _zip(train="")
    with pytest.raises(wikitext.CorruptArchive, match="training split is empty"):
        wikitext.load("wikitext-103")


def test_a_corrupt_shipped_file_is_refused(tmp_path, monkeypatch):
    for name in ("valid.txt", "test.txt"):
        (tmp_path / name).write_bytes((wikitext.HERE / name).read_bytes())
    data = bytearray((tmp_path / "test.txt").read_bytes())
    data[1000] ^= 0x20
    (tmp_path / "test.txt").write_bytes(bytes(data))
    monkeypatch.setattr(wikitext, "HERE", tmp_path)
    assert wikitext.shipped_text("valid").startswith(" \n = Homarus")       # the intact one still reads
    with pytest.raises(RuntimeError, match=r"test\.txt is corrupt: sha256 [0-9a-f]{64}, expected d790b833"):
        wikitext.shipped_text("test")
    with pytest.raises(RuntimeError, match="is corrupt"):
        wikitext.load("shipped")


def test_shipped_detail_says_what_was_used():
    c = wikitext.load("shipped")
    assert c.detail == ("the shipped WikiText-2 valid+test splits (sha256 checked), 122 articles split by "
                        "article: 110 train, 12 validation (seed 0)")
