"""WikiText-2 for the real-text experiments (Sec. 8, Fig. 7 and 10).

Offline (the default on machines without network), the shipped validation and test splits
are pooled and split by *document* (a ``= Title =`` article) into train and validation, so
no article straddles the split. With network, ``load("full")`` fetches the whole dataset
(with its 2M-token training split) once into a cache folder; ``load("auto")`` tries that and
falls back to the shipped copy.
"""
from __future__ import annotations

import hashlib
import io
import os
import re
import urllib.request
import zipfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

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
    source: str

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
    return Corpus(tokenize("".join(tr)), tokenize("".join(val)), None, "shipped")


def cache_dir() -> Path:
    return Path(os.environ.get("SCANSNAP_CACHE", Path.home() / ".cache" / "scansnap"))


def full_corpus(timeout: float = 10.0, name: str = "full") -> Corpus:
    """The whole WikiText-2 (``full``) or WikiText-103 (``wikitext-103``; its train split is 50x
    larger, its articles for valid/test are WikiText-2's), downloaded once into :func:`cache_dir`."""
    if name not in URLS:
        raise ValueError(f"unknown WikiText download {name!r}: use one of {tuple(URLS)}")
    url = URLS[name]
    zpath = cache_dir() / url.rsplit("/", 1)[1]
    if not zpath.exists():
        try:
            with urllib.request.urlopen(url, timeout=timeout) as r:
                blob = r.read()
        except OSError as e:
            raise OSError(f"could not download {url} ({e}); the offline text is source='shipped'") from e
        zpath.parent.mkdir(parents=True, exist_ok=True)
        zpath.write_bytes(blob)
    with zipfile.ZipFile(zpath) as z:
        def read(name):
            member = next(n for n in z.namelist() if n.endswith(name))
            return io.TextIOWrapper(z.open(member), encoding="utf-8").read()
        tr, va, te = (read(f"wiki.{s}.tokens") for s in ("train", "valid", "test"))
    # WikiText-2's validation text is what we ship; WikiText-103's has a larger vocabulary (fewer <unk>).
    if name == "full" and hashlib.sha256(va.encode()).hexdigest() != SHA256["valid.txt"]:
        raise RuntimeError(f"{zpath}: its validation split does not match the shipped checksum")
    return Corpus(tokenize(tr), tokenize(va), tokenize(te), name)


def load(source: str = "auto", timeout: float = 10.0, **shipped_kw) -> Corpus:
    """``shipped`` (offline), ``full`` / ``wikitext-103`` (network, raise if unreachable) or ``auto``
    (try WikiText-2, fall back to the shipped text)."""
    if source not in SOURCES:
        raise ValueError(f"unknown WikiText source {source!r}: use one of {SOURCES}")
    if source == "shipped":
        return shipped_corpus(**shipped_kw)
    if source in URLS:
        return full_corpus(timeout, source)
    try:
        return full_corpus(timeout)
    except (OSError, zipfile.BadZipFile, StopIteration, RuntimeError):
        return shipped_corpus(**shipped_kw)


def batchify(ids: torch.Tensor, batch: int) -> torch.Tensor:
    """(N,) -> (N // batch, batch) columns of contiguous text (the PyTorch LM tutorial layout)."""
    if batch < 1:
        raise ValueError(f"batch size must be >= 1, got {batch!r}")
    n = ids.numel() // batch
    return ids[: n * batch].view(batch, n).t().contiguous()
