"""scansnap/wikitext.py, third part (issue 28's mutation testing; the evening's mutmut run):
the article split's title test, a hand-made Vocab's description, an empty encoding's dtype,
shipped_corpus's bounds and its one-article minimum, load's defaults and where its fallback
warning points, batchify's message. The shipped corpus is replaced by a small fake where
the test is not about it, so each test takes well under a second."""
import pytest
import torch

from scansnap import wikitext
from scansnap.wikitext import Corpus, Vocab
from callers import points_at


def test_a_line_that_only_ends_like_a_title_is_not_one():
    text = " = A = \n a \n = B = X\n b \n = C = \n c \n"
    assert wikitext.documents(text) == [" = A = \n a \n = B = X\n b \n", " = C = \n c \n"]


def test_a_hand_made_vocabulary_describes_no_build():
    d = Vocab(["a", "b"]).describe()
    assert d["size"] == 2 and d["min_freq"] is None and d["text"] is None


def test_an_empty_encoding_is_int64():
    ids = Vocab(["a"]).encode([])
    assert ids.dtype == torch.int64 and ids.shape == (0,)


@pytest.mark.parametrize("bad", [0, 0.0, 1, 1.0, 1.5, -0.1])
def test_shipped_corpus_valid_fraction_is_open_unit_interval(bad):
    with pytest.raises(ValueError) as e:
        wikitext.shipped_corpus(valid_fraction=bad)
    assert str(e.value) == f"valid_fraction must be in (0, 1), got {bad!r}"


def test_shipped_corpus_keeps_one_validation_article_at_least(monkeypatch):
    monkeypatch.setattr(wikitext, "shipped_text", lambda split: "".join(
        f" = {split} {i} = \n w{i} \n" for i in range(3)))            # 6 articles in all
    c = wikitext.shipped_corpus(valid_fraction=0.01)                   # round(0.06) = 0: one kept
    assert c.detail.endswith("6 articles split by article: 5 train, 1 validation (seed 0)")
    assert len(c.valid) == 7                                           # one article: " = test 0 = ", " w0 ", each + <eos>


def _fake_shipped(**kw):
    return Corpus(["a"], ["b"], None, "shipped", "the shipped text")


def test_load_defaults_to_auto_with_a_10_s_timeout(monkeypatch):
    asked = []

    def full(timeout, name="full"):
        asked.append((timeout, name))
        return Corpus(["x"], ["y"], ["z"], name, "downloaded")
    monkeypatch.setattr(wikitext, "full_corpus", full)
    assert wikitext.load().source == "full"
    assert asked == [(10.0, "full")] and type(asked[0][0]) is float


def test_auto_fallback_warns_at_the_callers_line(monkeypatch):
    def offline(timeout, name="full"):
        raise OSError("no network")
    monkeypatch.setattr(wikitext, "full_corpus", offline)
    monkeypatch.setattr(wikitext, "shipped_corpus", _fake_shipped)
    with pytest.warns(UserWarning) as w:
        c = wikitext.load()
    assert [str(x.message) for x in w] == [
        "--data auto: using the shipped text, not the full WikiText-2 (no network)"]
    assert points_at(w[0].filename, __file__)
    assert c.detail == "auto fell back to the shipped text, because the full WikiText-2 failed: no network"


def test_batchify_names_the_batch_size():
    with pytest.raises(ValueError) as e:
        wikitext.batchify(torch.arange(5), 0)
    assert str(e.value) == "batch size must be an integer >= 1, got 0"


class _Warnings:
    """Stands in for the ``warnings`` module inside wikitext.py: records each call's arguments.
    Under mutmut a warning's frame is checked only loosely (``callers.points_at`` accepts
    mutmut's trampoline, and with two trampoline frames between the test and the package,
    ``stacklevel=3`` lands there too); the argument itself is exact."""
    def __init__(self):
        self.calls = []

    def warn(self, *args, **kw):
        self.calls.append((args, kw))


def test_auto_fallback_warns_with_stacklevel_2(monkeypatch):
    def offline(timeout, name="full"):
        raise OSError("no network")
    monkeypatch.setattr(wikitext, "full_corpus", offline)
    monkeypatch.setattr(wikitext, "shipped_corpus", _fake_shipped)
    rec = _Warnings()
    monkeypatch.setattr(wikitext, "warnings", rec)
    wikitext.load()
    assert rec.calls == [(("--data auto: using the shipped text, not the full WikiText-2 (no network)",),
                          {"stacklevel": 2})]


def _zip(train=" = A = \n the cat sat \n", valid=None):
    import io
    import zipfile
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("wikitext-2/wiki.train.tokens", train)
        z.writestr("wikitext-2/wiki.valid.tokens", valid or wikitext.shipped_text("valid"))
        z.writestr("wikitext-2/wiki.test.tokens", wikitext.shipped_text("test"))
    return buf.getvalue()


@pytest.mark.parametrize("case", ["unreadable", "corrupt", "unwritable"])
def test_full_corpus_warns_with_stacklevel_2(case, monkeypatch, tmp_path):
    import errno
    zpath = tmp_path / "cache" / "wikitext-2-v1.zip"
    blob = _zip()
    monkeypatch.setattr(wikitext, "_download", lambda src, timeout: blob)
    monkeypatch.setattr(wikitext, "_verified", {})
    monkeypatch.setenv("SCANSNAP_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("SCANSNAP_DOWNLOAD_BASE", raising=False)
    if case == "unreadable":
        zpath.mkdir(parents=True)                                 # a folder where the archive should be
    elif case == "corrupt":
        zpath.parent.mkdir(parents=True)
        zpath.write_bytes(_zip(valid=" = B = \n other \n"))
    else:
        def full(path, data):
            raise OSError(errno.ENOSPC, "No space left on device")
        monkeypatch.setattr(wikitext, "_write_atomic", full)
    rec = _Warnings()
    monkeypatch.setattr(wikitext, "warnings", rec)
    wikitext.full_corpus()
    assert len(rec.calls) == 1 and rec.calls[0][1] == {"stacklevel": 2}
    start = {"unreadable": "cannot read the cached archive", "corrupt": "the cached archive is corrupt",
             "unwritable": "could not cache the download"}[case]
    assert rec.calls[0][0][0].startswith(start)
