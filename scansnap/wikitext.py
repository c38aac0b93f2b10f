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
import io
import os
import re
import tempfile
import urllib.request
import warnings
import zipfile
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
FULL_URL = "https://wikitext.smerity.com/wikitext-2-v1.zip"
URLS = {"full": FULL_URL, "wikitext-103": "https://wikitext.smerity.com/wikitext-103-v1.zip"}
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


class Vocab:
    def __init__(self, itos: list[str]):
        self.itos = list(itos)
        self.stoi = {w: i for i, w in enumerate(self.itos)}

    @classmethod
    def build(cls, tokens, min_freq: int = 1):
        """Most frequent first (ties by first appearance): ids are stable across runs."""
        counts = Counter(tokens)
        return cls([w for w, c in counts.most_common() if c >= min_freq])

    def __len__(self):
        return len(self.itos)

    def encode(self, tokens) -> torch.Tensor:
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
    return Path(os.environ.get("SCANSNAP_CACHE", Path.home() / ".cache" / "scansnap"))


class CorruptArchive(RuntimeError):
    """A WikiText archive that is not what it claims to be (bad zip, wrong splits)."""


_verified: dict = {}     # name -> (train, valid, test) texts verified in this process


def _read_archive(blob: bytes, name: str, where: str):
    """The three token files of a WikiText zip, verified: zip CRCs, and for WikiText-2 the
    validation and test splits against the shipped checksums. CorruptArchive otherwise."""
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
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, UnicodeDecodeError) as e:
        raise CorruptArchive(f"{where}: not a readable WikiText zip ({e})") from None
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
    a cache that cannot be written costs only the caching (a warning), not the download.
    """
    if name not in URLS:
        raise ValueError(f"unknown WikiText download {name!r}: use one of {tuple(URLS)}")
    timeout = positive("timeout", timeout)
    url = URLS[name]
    zpath = cache_dir() / url.rsplit("/", 1)[1]
    verified = "zip CRCs" + (" and the valid/test sha256" if name == "full" else "")
    if name in _verified:
        tr, va, te = _verified[name][0]
        return Corpus(tokenize(tr), tokenize(va), tokenize(te), name, _verified[name][1])
    texts, detail = None, None
    if zpath.exists():
        try:
            texts = _read_archive(zpath.read_bytes(), name, str(zpath))
            detail = f"{name} from the cached {zpath} ({verified} checked)"
        except (CorruptArchive, OSError) as e:
            warnings.warn(f"the cached archive is corrupt ({e}); deleting it and downloading again",
                          stacklevel=2)
            try:
                zpath.unlink()
            except OSError as e2:
                raise CorruptArchive(f"{zpath} is corrupt and could not be deleted ({e2}): delete it "
                                     "by hand and run again") from None
    if texts is None:
        try:
            with urllib.request.urlopen(url, timeout=timeout) as r:
                blob = r.read()
        except OSError as e:
            raise OSError(f"could not download {url} ({e}); the offline text is source='shipped'") from e
        texts = _read_archive(blob, name, f"the download of {url}")
        try:
            _write_atomic(zpath, blob)
            detail = f"{name} downloaded from {url} ({verified} checked), cached at {zpath}"
        except OSError as e:
            warnings.warn(f"could not cache the download at {zpath} ({e}); using it from memory "
                          "(it will be downloaded again next time)", stacklevel=2)
            detail = f"{name} downloaded from {url} ({verified} checked), not cached ({e})"
    _verified[name] = (texts, detail)
    tr, va, te = texts
    return Corpus(tokenize(tr), tokenize(va), tokenize(te), name, detail)


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
