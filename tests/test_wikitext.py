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
    assert wikitext.load("auto").source == "shipped"
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
    assert wikitext.load("auto").source == "shipped"
    with pytest.raises(ValueError, match="unknown WikiText download"):
        wikitext.full_corpus(name="wikitext-3")
