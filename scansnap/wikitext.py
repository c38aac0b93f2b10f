"""WikiText-2 for the real-text experiments (Sec. 8, Fig. 7 and 10).

Offline (the default on machines without network), the shipped validation and test splits
are pooled and split by *document* (a ``= Title =`` article) into train and validation, so
no article straddles the split. With network, ``load("full")`` fetches the whole dataset
(with its 2M-token training split) once into a cache folder, verified against the shipped
checksums; ``load("auto")`` tries that and falls back to the shipped copy, saying so. Every
corpus records what it is (``Corpus.source``, ``Corpus.detail``).

As token ids for training, in one call: :func:`wikitext_data` (``scansnap.lm.wikitext_data``):
``train_ids, valid_ids, vocab = wikitext_data()``.
"""
from __future__ import annotations

import contextlib
import hashlib
import http.client
import io
import json
import os
import re
import tempfile
import urllib.error
import urllib.request
import warnings
import zipfile
import zlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ._validate import positive, positive_int

HERE = Path(__file__).parent / "datasets" / "wikitext-2"
SHA256 = {
    "valid.txt": "f0737ed31fc1329026e95cb8b98e19c2a182c39c240ab909dc31abf2f8af58e8",
    "test.txt": "d790b833ef8cf03a90db7bf1271b7520b83c45ce07ba3c1a9699df81e239eca0",
}
BASE_URL = "https://wikitext.smerity.com"
ARCHIVES = {"full": "wikitext-2-v1.zip", "wikitext-103": "wikitext-103-v1.zip"}
FULL_URL = f"{BASE_URL}/{ARCHIVES['full']}"
URLS = {name: f"{BASE_URL}/{zip_name}" for name, zip_name in ARCHIVES.items()}
SOURCES = ("auto", "shipped", "full", "wikitext-103")
_TITLE = re.compile(r"^ = [^=].* = $")


def shipped_text(split: str) -> str:
    """The shipped ``valid`` or ``test`` split, checked against its sha256."""
    name = {"valid": "valid.txt", "test": "test.txt"}.get(split)
    if name is None:
        raise ValueError(f"unknown shipped split {split!r}: use 'valid' or 'test'")
    data = (HERE / name).read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != SHA256[name]:
        raise RuntimeError(f"{HERE / name} is corrupt: sha256 {digest}, expected {SHA256[name]}")
    return data.decode("utf-8")


def documents(text: str) -> list[str]:
    """Split a WikiText file into articles at its top-level ``= Title =`` lines."""
    docs, cur = [], []
    for line in text.splitlines(keepends=True):
        if _TITLE.match(line.rstrip("\n")) and any(l.strip() for l in cur):
            docs.append("".join(cur))
            cur = []
        cur.append(line)
    if any(l.strip() for l in cur):
        docs.append("".join(cur))
    return docs


def tokenize(text: str) -> list[str]:
    """Whitespace words and ``<eos>`` at every line end, as the PyTorch LM tutorial (and the
    published token counts: 217,646 for valid, 245,569 for test)."""
    out = []
    for line in text.splitlines():
        out.extend(line.split())
        out.append("<eos>")
    return out


@dataclass
class Corpus:
    train: list[str]
    valid: list[str]
    test: list[str] | None
    source: str              # what was used: "shipped", "full" or "wikitext-103"
    detail: str = ""         # where it came from, in words (for the terminal and the results)

    def vocab(self) -> "Vocab":
        return Vocab.build(self.train + self.valid + (self.test or []))


def _words_sha256(words) -> str:
    """The sha256 of a list of words: of the UTF-8 of its JSON (``json.dumps(list(words))``)."""
    return hashlib.sha256(json.dumps(list(words)).encode("utf-8")).hexdigest()


class Vocab:
    """Words <-> token ids: ``itos[i]`` the word of id i, ``stoi[w]`` the id of word w.

    Your own text as ids for :func:`scansnap.lm.train_lm` (``help(scansnap.lm)`` has the
    example): ``vocab = Vocab.build(words, min_freq=2)``, then ``ids = vocab.encode(words)`` and
    ``train_lm(ids, len(vocab), ...)``."""

    def __init__(self, itos: list[str]):
        self.itos = list(itos)
        self.stoi = {w: i for i, w in enumerate(self.itos)}
        self.min_freq = None        # set by build: how the words were chosen
        self.text = None            # set by build: {"sha256", "length"} of the words it counted

    def describe(self) -> dict:
        """What a saved language-model run records of its vocabulary
        (``LMResult.save(..., vocab=...)``), so a rebuilt one can be checked against it:
        ``size``; ``sha256``, of the words in id order (the UTF-8 of ``json.dumps(itos)``);
        and, for a vocabulary from :meth:`build`, its ``min_freq`` and ``text`` (the
        ``{"sha256", "length"}`` of the word list it counted, hashed the same way), else None."""
        return {"size": len(self.itos), "sha256": _words_sha256(self.itos), "min_freq": self.min_freq,
                "text": self.text}

    @classmethod
    def build(cls, tokens, min_freq: int = 1):
        """The words of ``tokens`` seen at least ``min_freq`` times, most frequent first (ties by
        first appearance): ids are stable across runs. When ``min_freq`` leaves words out,
        ``<unk>`` stands for them (appended last, unless it is one of the words kept), so
        :meth:`encode` of the same text works."""
        min_freq = positive_int("min_freq", min_freq)
        tokens = list(tokens)
        counts = Counter(tokens)
        itos = [w for w, c in counts.most_common() if c >= min_freq]
        if len(itos) < len(counts) and "<unk>" not in itos:
            itos.append("<unk>")
        vocab = cls(itos)
        vocab.min_freq = min_freq
        vocab.text = {"sha256": _words_sha256(tokens), "length": len(tokens)}
        return vocab

    def __len__(self):
        return len(self.itos)

    def encode(self, tokens) -> torch.Tensor:
        """A 1-D int64 tensor of the ids of ``tokens`` (a list of words); a word not in the
        vocabulary is ``<unk>``'s id, or a ValueError naming it when there is no ``<unk>``."""
        unk = self.stoi.get("<unk>")
        ids = []
        for w in tokens:
            i = self.stoi.get(w, unk)
            if i is None:
                raise ValueError(f"word {w!r} is not in the vocabulary and there is no <unk>")
            ids.append(i)
        return torch.tensor(ids, dtype=torch.long)


def shipped_corpus(valid_fraction: float = 0.1, seed: int = 0) -> Corpus:
    """Offline corpus: shipped valid+test articles, shuffled (seeded) and split by document."""
    if not 0 < valid_fraction < 1:
        raise ValueError(f"valid_fraction must be in (0, 1), got {valid_fraction!r}")
    docs = documents(shipped_text("valid")) + documents(shipped_text("test"))
    order = np.random.default_rng(seed).permutation(len(docs))
    n_val = max(1, int(round(valid_fraction * len(docs))))
    val = [docs[i] for i in order[:n_val]]
    tr = [docs[i] for i in order[n_val:]]
    return Corpus(tokenize("".join(tr)), tokenize("".join(val)), None, "shipped",
                  f"the shipped WikiText-2 valid+test splits (sha256 checked), {len(docs)} articles "
                  f"split by article: {len(docs) - n_val} train, {n_val} validation (seed {seed})")


def cache_dir() -> Path:
    """``$SCANSNAP_CACHE``, or ``~/.cache/scansnap`` when it is unset or empty (as the XDG
    variables read: an empty value is no value, not the working folder)."""
    return Path(os.environ.get("SCANSNAP_CACHE") or Path.home() / ".cache" / "scansnap")


def url(name: str) -> str:
    """Where ``name`` (``full``, ``wikitext-103``) is downloaded from: ``URLS[name]``, or the same
    archive under ``$SCANSNAP_DOWNLOAD_BASE`` when set (a mirror; the tests' local server)."""
    base = os.environ.get("SCANSNAP_DOWNLOAD_BASE")
    return f"{base.rstrip('/')}/{ARCHIVES[name]}" if base else URLS[name]


class CorruptArchive(RuntimeError):
    """A WikiText archive that is not what it claims to be (bad zip, wrong splits)."""


_verified: dict = {}     # name -> (train, valid, test) texts verified in this process


def _read_archive(blob: bytes, name: str, where: str):
    """The three token files of a WikiText zip, verified: zip CRCs, and for WikiText-2 the
    validation and test splits against the shipped checksums. CorruptArchive otherwise."""
    if re.match(rb"\s*<", blob):      # a zip starts with PK; an HTML (or XML) page with <
        raise CorruptArchive(f"{where}: an HTML page, not a zip (a login, proxy or error page?)")
    try:
        with zipfile.ZipFile(io.BytesIO(blob)) as z:
            bad = z.testzip()
            if bad is not None:
                raise CorruptArchive(f"{where}: member {bad} fails its CRC check")
            texts = []
            for split in ("train", "valid", "test"):
                member = next((n for n in z.namelist() if n.endswith(f"wiki.{split}.tokens")), None)
                if member is None:
                    raise CorruptArchive(f"{where}: no wiki.{split}.tokens inside")
                texts.append(z.read(member).decode("utf-8"))
    except CorruptArchive:
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, UnicodeDecodeError, zlib.error,
            NotImplementedError, RuntimeError, ValueError) as e:   # damaged deflate data: zlib.error
        raise CorruptArchive(f"{where}: not a readable WikiText zip ({type(e).__name__}: {e})") from None
    if name == "full":   # WikiText-2's validation and test text is exactly what we ship
        for split, text in zip(("valid", "test"), texts[1:]):
            digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
            if digest != SHA256[f"{split}.txt"]:
                raise CorruptArchive(f"{where}: its {split} split does not match the shipped checksum "
                                     f"(sha256 {digest})")
    if not texts[0].strip():
        raise CorruptArchive(f"{where}: its training split is empty")
    return tuple(texts)


def _write_atomic(path: Path, blob: bytes) -> None:
    """Write to a temporary name in the same folder, then rename: never a half-written file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(blob)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def full_corpus(timeout: float = 10.0, name: str = "full") -> Corpus:
    """The whole WikiText-2 (``full``) or WikiText-103 (``wikitext-103``; its train split is 50x
    larger, its articles for valid/test are WikiText-2's), downloaded once into :func:`cache_dir`.

    An archive is verified before it is trusted (zip CRCs; for WikiText-2 the validation and
    test splits against the shipped sha256): a download that fails is never cached, a cached
    archive that fails is deleted and downloaded again. The cache is written atomically, and
    a cache that cannot be written costs only the caching (a warning), not the download; a
    cached archive that cannot be *read* (permissions, a folder in its place) is left as it is,
    with a warning, and the archive downloaded and used from memory.
    """
    if name not in URLS:
        raise ValueError(f"unknown WikiText download {name!r}: use one of {tuple(URLS)}")
    timeout = positive("timeout", timeout)
    src = url(name)
    zpath = cache_dir() / ARCHIVES[name]
    verified = "zip CRCs" + (" and the valid/test sha256" if name == "full" else "")
    if name in _verified:
        tr, va, te = _verified[name][0]
        return Corpus(tokenize(tr), tokenize(va), tokenize(te), name, _verified[name][1])
    texts, detail, cache_ok = None, None, True
    if zpath.exists() or zpath.is_symlink():
        blob = None
        try:
            if not zpath.is_file():
                raise IsADirectoryError(f"not a file: {'a folder' if zpath.is_dir() else 'a broken link or device'}")
            blob = zpath.read_bytes()
        except OSError as e:        # unreadable is not corrupt: never delete what we cannot read
            cache_ok = False
            warnings.warn(f"cannot read the cached archive {zpath} ({e.strerror or e}); leaving it as it is "
                          "and downloading again (not cached)", stacklevel=2)
        if blob is not None:
            try:
                texts = _read_archive(blob, name, str(zpath))
                detail = f"{name} from the cached {zpath} ({verified} checked)"
            except CorruptArchive as e:
                warnings.warn(f"the cached archive is corrupt ({e}); deleting it and downloading again",
                              stacklevel=2)
                try:
                    zpath.unlink()
                except OSError as e2:
                    raise CorruptArchive(f"{zpath} is corrupt and could not be deleted ({e2.strerror or e2}): "
                                         "delete it by hand and run again") from None
    if texts is None:
        blob = _download(src, timeout)
        texts = _read_archive(blob, name, f"the download of {src}")
        if not cache_ok:
            detail = f"{name} downloaded from {src} ({verified} checked), not cached (the cache path is unreadable)"
        else:
            try:
                _write_atomic(zpath, blob)
                detail = f"{name} downloaded from {src} ({verified} checked), cached at {zpath}"
            except OSError as e:
                warnings.warn(f"could not cache the download at {zpath} ({e.strerror or e}); using it from "
                              "memory (it will be downloaded again next time)", stacklevel=2)
                detail = f"{name} downloaded from {src} ({verified} checked), not cached ({e.strerror or e})"
    _verified[name] = (texts, detail)
    tr, va, te = texts
    return Corpus(tokenize(tr), tokenize(va), tokenize(te), name, detail)


def _download(src: str, timeout: float) -> bytes:
    """The body at ``src``, whole, or OSError saying why not: an HTTP error (404), no network,
    a connection cut before the body's announced length (``http.client.IncompleteRead``)."""
    try:
        with urllib.request.urlopen(src, timeout=timeout) as r:
            return r.read()
    except http.client.IncompleteRead as e:
        raise OSError(f"could not download {src} (the connection closed after {len(e.partial)} bytes, "
                      f"{e.expected} more expected); the offline text is source='shipped'") from None
    except (OSError, http.client.HTTPException, ValueError) as e:
        if isinstance(e, urllib.error.HTTPError):
            e.close()                    # its body's socket, else a ResourceWarning when collected
        why = getattr(e, "reason", None) if isinstance(e, urllib.error.URLError) and not hasattr(e, "code") else e
        raise OSError(f"could not download {src} ({why or type(e).__name__}); the offline text is "
                      "source='shipped'") from None


def load(source: str = "auto", timeout: float = 10.0, **shipped_kw) -> Corpus:
    """``shipped`` (offline), ``full`` / ``wikitext-103`` (network, raise if unreachable) or ``auto``
    (try WikiText-2, fall back to the shipped text with a warning saying why).

    The returned corpus says what it is: ``source`` is what was used (never ``auto``) and
    ``detail`` where it came from, in words.
    """
    if source not in SOURCES:
        raise ValueError(f"unknown WikiText source {source!r}: use one of {SOURCES}")
    if source == "shipped":
        return shipped_corpus(**shipped_kw)
    if source in URLS:
        return full_corpus(timeout, source)
    try:
        return full_corpus(timeout)
    except (OSError, CorruptArchive) as e:
        corpus = shipped_corpus(**shipped_kw)
        corpus.detail = f"auto fell back to {corpus.detail}, because the full WikiText-2 failed: {e}"
        warnings.warn(f"--data auto: using the shipped text, not the full WikiText-2 ({e})", stacklevel=2)
        return corpus


def batchify(ids: torch.Tensor, batch: int) -> torch.Tensor:
    """(N,) -> (N // batch, batch) columns of contiguous text (the PyTorch LM tutorial layout)."""
    batch = positive_int("batch size", batch)
    n = ids.numel() // batch
    return ids[: n * batch].view(batch, n).t().contiguous()


def wikitext_data(source="shipped", min_freq=3):
    """(train ids, valid ids, vocab): the corpus as token ids for ``scansnap.lm.train_lm``
    (the same function as ``scansnap.lm.wikitext_data``; see there)."""
    from .lm import wikitext_data as _wikitext_data
    return _wikitext_data(source, min_freq)
