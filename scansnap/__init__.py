"""scansnap: the package behind the executable book on *Scan and Snap* (Tian et al., 2023).

Sequence classes (``scansnap.data``), the Y/Z model and its batched trainer (``train``), the
paper's closed forms and noiseless dynamics (``scansnap.theory``), its metrics
(``scansnap.metrics``), the real-text transformer (``scansnap.lm``), and
``python -m scansnap reproduce figN`` (the paper's figures, with provenance; ``torchrun`` past
one machine: ``scansnap.distributed``). The book's chapter "Your own experiment" walks through
the same steps as this quickstart (about 5 s on a laptop CPU)::

    from scansnap import TrainResult, sequence_classes, train, lr_grid
    from scansnap.experiments import read_results

    classes = sequence_classes(K=3, M=40, num_common=5, num_distinct=8)   # tokens 33-39 unused
    print(classes, classes.roles()[[0, 5, 29, 30, 39]])
    res = train(classes, eta_y=[1.0, 5.0], eta_z=1.0, seeds=0, steps=60, snapshot_steps=[0, 30, 60])
    print(res)                                # 2 runs x 60 steps: loss (2, 60), Y and Z (2, 40, 40)
    c = res.attention()                       # (2, 3, 40): c_n of each run and class (Eq. 5)
    print(res.to_frame().round(3).to_string())   # a row per run: rates, loss, entropies, common mass
    pred = res.predict()                      # the theory, on this optimiser's clock (SGD, momentum 0.9)
    print(pred.t0_steps)                      # Theorem 4's t0, in steps of this optimiser
    cmp = pred.compare(res)                   # a row per run and class: the run against the prediction
    print(cmp[["run", "class", "top_token", "predicted_winners", "top_as_predicted", "rank_correlation",
               "margin", "common_mass", "predicted_common_mass", "agrees"]].round(3).to_string())
    # margin: how clear Theorem 3's winner is (a near-tie, below ~0.05, can go either way); agrees: within tolerance
    res.save("my-results")                    # CSVs + provenance record, written atomically
    back = read_results("my-results", paper=False)   # hashes checked; {file: {column: array}}
    again = TrainResult.load("my-results")    # the result itself, hashes checked: loss, Y, Z, snapshots
    print(back["train"]["distinct_entropy"])

    # a grid: every eta_Z x ratio (eta_Y = ratio x eta_Z) x seed, as three (R,) arrays for train()
    eta_y, eta_z, seeds = lr_grid(eta_z=[0.5, 2.0], ratio=[1, 10], seeds=[1, 2, 3])   # R = 12
    grid = train(classes, eta_y=eta_y, eta_z=eta_z, seeds=seeds, steps=60)
    print(grid.to_frame().groupby(["eta_z", "eta_y"])["distinct_entropy"].agg(["mean", "sem"]).round(3))

The embedding transformer on the shipped WikiText-2, and on your own text (``help(scansnap.lm)``)::

    from scansnap.lm import wikitext_data, train_lm
    train_ids, valid_ids, vocab = wikitext_data()          # offline: the shipped text
    lm = train_lm(train_ids, len(vocab), steps=20, probe=valid_ids[:30], snapshot_steps=[0, 20])
    print(lm, lm.attention_entropy(0), lm.attention_entropy(20))   # nats: the maps sharpen

    # your own text: a vocabulary from its words, its ids, a run, its record (help(scansnap.lm))
    from scansnap.lm import replay, train_lm
    from scansnap.wikitext import Vocab
    words = ("the cat sat on the mat . the dog sat on the log . " * 40 + "a zebra").split()   # your text, as words
    vocab = Vocab.build(words, min_freq=2)      # words seen once ('a', 'zebra') become '<unk>'
    ids = vocab.encode(words)                   # a torch.LongTensor of shape (562,): .clone(), not .copy()
    own = train_lm(ids, len(vocab), steps=20, d=32, d_hidden=32, batch=4, bptt=8, probe=ids[:8], snapshot_steps=[20])
    own.save("my-lm", vocab=vocab)              # the record: train_lm's settings; the ids', probe's, vocabulary's sha256
    again = replay("my-lm", ids, probe=ids[:8]) # ids checked, re-run, its loss checked against the saved lm_loss.csv

``scansnap.train`` is the function (``import scansnap.train as t`` gives it too); its module, with
``TrainResult`` and ``DivergenceWarning``: ``help(sys.modules["scansnap.train"])``, or
``from scansnap.train import TrainResult``.

The models are torch modules, importable from here and documented in ``help(scansnap.model)``:
``scansnap.YZModel`` (the Y/Z model, batched over runs) and ``scansnap.EmbeddingTransformer``
(the real-text transformer). They are left out of ``__all__`` so that ``help(scansnap)`` shows
this package's API rather than torch.nn.Module's hundreds of inherited methods.
"""
import os

from . import _startup

_startup.install()       # `python -m scansnap`: a signal during the imports below says so in one line

# torch's OpenMP threads sleep, not spin, while they wait (read once, when torch loads; so only
# if scansnap is imported first, as every chapter does). The same numbers; on a machine whose
# cores are busy with other work (a browser, a second job) small steps are not several times
# slower (bench/RESULTS.md). OMP_WAIT_POLICY set by the caller wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
from .data import (SequenceClasses, make_classes, sequence_classes, syn_small, syn_medium, sample_tokens,
                   sample_counts, counts_from_tokens)
from .model import YZModel, EmbeddingTransformer
from .train import train, lr_grid, TrainResult
from . import book

__version__ = "0.2.0"

# The submodules, reachable after a plain ``import scansnap`` (``help(scansnap.theory.predict)``),
# each imported on first use (PEP 562): matplotlib (plots) or the CLI's machinery load only when asked.
_SUBMODULES = ("data", "model", "theory", "metrics", "experiments", "provenance", "plots", "lm", "wikitext",
               "beyond", "distributed", "printed", "ledger", "live", "ui")


def __getattr__(name):
    if name in _SUBMODULES:
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_SUBMODULES))
# What help(scansnap) documents. The torch modules YZModel and EmbeddingTransformer are importable
# from here too but left out: pydoc would print every method they inherit from torch.nn.Module.
__all__ = ["SequenceClasses", "make_classes", "sequence_classes", "syn_small", "syn_medium", "sample_tokens",
           "sample_counts", "counts_from_tokens", "train", "lr_grid", "TrainResult"]
