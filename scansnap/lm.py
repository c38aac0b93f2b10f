"""Training the standard transformer on real text (Sec. 8, Figs. 7 and 10).

Quick start (50 steps, about 10 s on a 2-core CPU)::

    from scansnap.lm import wikitext_data, train_lm
    train_ids, valid_ids, vocab = wikitext_data()          # the shipped WikiText-2, offline
    res = train_lm(train_ids, len(vocab), steps=50, probe=valid_ids[:30], snapshot_steps=[0, 50])
    res.attention(50)                                      # (30, 30): the lowest layer's map

Your own text: a vocabulary from its words (``scansnap.wikitext.Vocab``), its ids, a run, its
record (a few seconds)::

    from scansnap.lm import replay, train_lm
    from scansnap.wikitext import Vocab
    words = ("the cat sat on the mat . the dog sat on the log . " * 40 + "a zebra").split()   # your text, as words
    vocab = Vocab.build(words, min_freq=2)      # words seen once ('a', 'zebra') become '<unk>'
    ids = vocab.encode(words)                   # a torch.LongTensor of shape (562,): .clone(), not .copy()
    own = train_lm(ids, len(vocab), steps=20, d=32, d_hidden=32, batch=4, bptt=8, probe=ids[:8], snapshot_steps=[20])
    own.save("my-lm", vocab=vocab)              # the record: train_lm's settings; the ids', probe's, vocabulary's sha256
    again = replay("my-lm", ids, probe=ids[:8]) # ids checked, re-run, its loss checked against the saved lm_loss.csv

The record's ``settings`` are :func:`train_lm`'s keyword arguments, exactly (``dtype`` by its
name): ``train_lm(ids, record["data"]["vocab_size"], probe=..., **record["settings"])`` re-runs
the run. Its ``data`` identifies what is not a setting: ``vocab_size``, the ``train_ids`` and
``probe`` as ``{"sha256", "length"}`` (:func:`ids_digest`) and, where ``save`` was given it, the
vocabulary (``Vocab.describe()``: size, the words' sha256, and for ``Vocab.build`` its
``min_freq`` and the sha256 of the words it counted). :func:`replay` checks the ids (and the
vocabulary, if you pass it) against the record before it re-runs, and refuses others.

``train_lm`` trains one model, PyTorch-tutorial style (plain SGD at one learning rate,
gradient clipping, dropout). ``train_lms`` trains R such models with their own rates and
seeds as one batched tensor program: every weight gets a leading run axis, each run keeps
its own random stream for dropout, and every run computes what ``train_lm`` computes for
it, on the CPU and on CUDA (``tests/test_lm.py``, ``tests/test_cuda.py``: equal to rounding
over a few steps). Over the 300 steps of Fig. 10 at the paper's rates the training is chaotic:
the two programs' different rounding (1e-15 in float64) stays at that level for some 10-20 steps,
then grows about 1.7-2x a step and reaches the spread between seeds (~0.1 in the loss) by step
~100, on either device (bench/gpu.md).
So a run's row is reproducible only by the same program on the same machine with the same
number of torch threads (the order of a sum follows it); Fig. 10's claim, the trend over
learning rates, is what carries across. On a CPU the figures train their runs side by side,
one torch thread each (``scansnap.experiments.lm_runs``): a run's numbers are then those of
``train_lm`` on one thread, whichever run trains beside it.
"""
from __future__ import annotations

import collections
import hashlib
import json
import math
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from ._cpu import keep_freed_memory
from ._validate import positive, positive_int, resolve_device, seed as _seed
from .model import Dropout, EmbeddingTransformer


def wikitext_data(source="shipped", min_freq=3):
    """(train ids, valid ids, vocab): WikiText-2 as token ids, ready for :func:`train_lm`.

    The same function as ``scansnap.experiments.wikitext_data`` (the figures' text): ``source``
    ``"shipped"`` (offline: the shipped valid+test splits, split by article), ``"full"``,
    ``"wikitext-103"`` or ``"auto"`` (:func:`scansnap.wikitext.load`); words seen fewer than
    ``min_freq`` times in the training text become ``<unk>``. ``train ids``, ``valid ids``: 1-D
    int64 tensors; ``vocab``: a :class:`scansnap.wikitext.Vocab` (``len(vocab)`` words,
    ``vocab.itos[i]`` the word of id i)."""
    from .experiments import wikitext_data as _wikitext_data
    return _wikitext_data(source, min_freq)


@dataclass(repr=False)
class LMResult:
    """One run of :func:`train_lm` (or one of :func:`train_lms`).

    - ``loss``: (steps,) the training loss (batch mean cross-entropy, nats) *before* update s:
      ``loss[0]`` at the initial weights (about ln(vocab size)).
    - ``snapshots``: {step: list of ``layers`` tensors (heads, T, T)}: after ``step`` updates,
      the attention maps of every layer on the probe (a (T,) token sequence), dropout off:
      ``EmbeddingTransformer.forward``'s maps (B, heads, T, T) for the batch of one probe, B
      dropped. Row i of a map is query position i; it is causal (zero above the diagonal).
    - ``model``: the trained :class:`~scansnap.model.EmbeddingTransformer` (on its device).
    - ``config``: every setting of :func:`train_lm` that decides the numbers (layers, heads, d,
      d_hidden, dropout, positional, lr, steps, batch, bptt, clip, seed, dtype as its name,
      e.g. ``"float32"``, optimizer ``"sgd"``), ``vocab_size``, and ``train_ids`` and ``probe``
      as ``{"sha256", "length"}`` (:func:`ids_digest`; ``probe`` None without one). :meth:`save`
      records them as the record's ``settings`` (:attr:`settings`) and ``data``.
    - :attr:`settings`: :func:`train_lm`'s keyword arguments that re-run this run, exactly
      (``train_lm(ids, vocab_size, probe=probe, **res.settings)``; :func:`replay` does it from a
      saved record).
    - ``seconds``: the wall time :func:`train_lm` took (what :meth:`save` records), or None.

    Methods: :meth:`attention` one map as a (T, T) array; :meth:`attention_entropy` its mean
    row entropy (Fig. 10's measure); :meth:`to_frame` a pandas DataFrame (a row per step, 0 to
    steps: loss and every layer's entropy at the snapshots; or a row per snapshot); :meth:`save`
    a CSV + provenance set, as the command line writes.
    """
    loss: np.ndarray                                   # (steps,) training loss per step
    snapshots: dict = field(default_factory=dict)      # step -> [per layer (heads, T, T)] on the probe
    model: object = None
    config: dict = field(default_factory=dict)
    seconds: float | None = None                       # train_lm's wall time

    def __repr__(self):
        c = self.config
        first = next(iter(self.snapshots.values()), None)
        shape = f": per layer {tuple(first[0].shape)}" if first else ""
        heads = c.get("heads", "?")
        return (f"LMResult: {c.get('layers', '?')}-layer, {heads} head{'s' * (heads != 1)}, lr {c.get('lr', float('nan')):g}, "
                f"seed {c.get('seed', '?')}, {len(self.loss)} steps; loss {self.loss[0]:.4g} -> {self.loss[-1]:.4g}\n"
                f"  loss {tuple(self.loss.shape)}; snapshots (maps) at steps {sorted(self.snapshots)}{shape}")

    @property
    def settings(self) -> dict:
        """{keyword: value}: the keyword arguments of :func:`train_lm` that re-run this run
        (``layers`` ... ``seed``, ``dtype`` by name, ``snapshot_steps``), all but the data
        (``probe``) and where it runs (``device``, ``progress``, ``stop``): what :meth:`save`
        records as the record's ``settings``."""
        c = self.config
        return dict({k: c[k] for k in _SETTINGS}, snapshot_steps=sorted(self.snapshots))

    def attention(self, step, layer: int = 0, head: int = 0) -> np.ndarray:
        """(T, T): the attention map of ``layer`` (0 = the lowest), ``head``, on the probe after
        ``step`` updates (one of the snapshot steps)."""
        if step not in self.snapshots:
            raise ValueError(f"no snapshot at step {step!r}: this result has snapshots at {sorted(self.snapshots)} "
                             "(train_lm(..., probe=..., snapshot_steps=[...]) saves them)")
        maps = self.snapshots[step]
        if not 0 <= layer < len(maps):
            raise ValueError(f"layer {layer!r} out of range [0, {len(maps)})")
        if not 0 <= head < maps[layer].shape[0]:
            raise ValueError(f"head {head!r} out of range [0, {maps[layer].shape[0]})")
        return maps[layer][head].numpy()

    def attention_entropy(self, step, layer: int = 0) -> float:
        """The mean row entropy (nats) of ``layer``'s maps on the probe after ``step`` updates, over
        its heads (:func:`scansnap.metrics.attention_entropy`): ln-ish of the positions attended;
        lower = sparser."""
        from .metrics import attention_entropy
        self.attention(step, layer)
        return attention_entropy(self.snapshots[step][layer].numpy(), what=f"the attention at step {step}")

    def to_frame(self, per: str = "step"):
        """A pandas DataFrame. ``per="step"`` (default): one row per step s = 0, ..., steps:
        ``step``; ``loss``, the batch loss before update s (NaN at s = steps: no batch follows
        the last update); and for every layer L, ``entropy_layerL``, the mean row entropy of its
        maps on the probe after s updates (:meth:`attention_entropy`) at the snapshot steps, NaN
        elsewhere. So the final snapshot (s = steps) has its row, and a 3-layer model three
        entropy columns. ``per="snapshot"``: only the snapshot steps, with those entropy columns
        (no loss column, so ``dropna()`` keeps every snapshot)."""
        import pandas as pd
        if per not in ("step", "snapshot"):
            raise ValueError(f"per must be 'step' or 'snapshot', got {per!r}")
        n = len(self.loss)
        layers = max((len(m) for m in self.snapshots.values()), default=0)
        frame = {"step": np.arange(n + 1), "loss": np.append(self.loss, np.nan)}
        for L in range(layers):
            ent = np.full(n + 1, np.nan)
            for s in self.snapshots:
                ent[s] = self.attention_entropy(s, layer=L)
            frame[f"entropy_layer{L}"] = ent
        df = pd.DataFrame(frame)
        if per == "snapshot":
            df = df.loc[sorted(self.snapshots)].drop(columns="loss").reset_index(drop=True)
        return df

    def save(self, folder, name: str = "lm", vocab=None) -> list:
        """Write this run as a result set in ``folder``, atomically, with its provenance record (as
        ``python -m scansnap reproduce`` writes a figure's): ``<name>_loss.csv`` (step, loss),
        ``<name>_attention.csv`` (step, layer, head, query, key, attention: every map's lower
        triangle) and ``<name>.provenance.json``: its ``settings`` (:attr:`settings`, train_lm's
        keyword arguments), its ``data`` (``vocab_size``; ``train_ids`` and ``probe`` as
        ``{"sha256", "length"}``; ``vocab``: ``vocab.describe()``, or None when no ``vocab``, a
        :class:`scansnap.wikitext.Vocab`, is given; ``torch_threads``: ``torch.get_num_threads()``
        when saved, which :func:`replay` names when a loss differs); device, versions and date beside them.
        Re-run it with :func:`replay`; read it back with
        ``scansnap.experiments.read_results(folder, paper=False)``. Returns the paths written."""
        from ._save import save_set
        from .wikitext import Vocab
        c = self.config
        if vocab is not None:
            if not isinstance(vocab, Vocab):
                raise ValueError(f"vocab must be the scansnap.wikitext.Vocab the ids were encoded with, "
                                 f"got {type(vocab).__name__}")
            if len(vocab) != c["vocab_size"]:
                raise ValueError(f"vocab has {len(vocab)} words but this run was trained with vocab_size "
                                 f"{c['vocab_size']}: not the vocabulary of this run")
        data = {"vocab_size": c["vocab_size"], "train_ids": c["train_ids"], "probe": c["probe"],
                "vocab": None if vocab is None else vocab.describe(),
                "torch_threads": torch.get_num_threads()}   # float sums depend on it: replay names it
        loss = [(s, f"{l:.10g}") for s, l in enumerate(self.loss)]
        att = []
        for s in sorted(self.snapshots):
            for L, m in enumerate(self.snapshots[s]):
                a = m.numpy()
                att += [(s, L, h, i, j, f"{a[h, i, j]:.8g}") for h in range(a.shape[0])
                        for i in range(a.shape[1]) for j in range(i + 1)]
        dev = str(next(self.model.parameters()).device) if self.model is not None else "cpu"
        return save_set(folder, name, {f"{name}_loss": (["step", "loss"], loss),
                                       f"{name}_attention": (["step", "layer", "head", "query", "key", "attention"], att)},
                        self.settings, dev, f"LMResult.save({name!r})",
                        seconds=self.seconds, what_seconds="train_lm's wall time", data=data)


# train_lm's keyword arguments that decide a run's numbers, in the order of its signature
# (with snapshot_steps: LMResult.settings); the others are the data and where it runs.
_SETTINGS = ("layers", "heads", "d", "d_hidden", "dropout", "positional", "lr", "steps", "batch", "bptt", "clip",
             "seed", "dtype")


def ids_digest(ids) -> dict:
    """``{"sha256": ..., "length": n}`` of a 1-D sequence of token ids: the sha256 of its values
    as little-endian int64 bytes (``numpy.asarray(ids, "<i8").tobytes()``). What a saved
    :class:`LMResult` records of its training text and probe, so the same ids can be told
    from others before a re-run."""
    a = np.ascontiguousarray(torch.as_tensor(ids).cpu().numpy().astype("<i8", copy=False).ravel())
    return {"sha256": hashlib.sha256(a.tobytes()).hexdigest(), "length": int(a.size)}


def _config(train_ids, vocab_size, probe, *, layers, heads, d, d_hidden, dropout, positional, lr, steps, batch,
            bptt, clip, seed, dtype) -> dict:
    """An LMResult's ``config``: the same for :func:`train_lm` and each run of :func:`train_lms`."""
    return dict(layers=layers, heads=heads, d=d, d_hidden=d_hidden, dropout=dropout, positional=positional,
                lr=lr, steps=steps, seed=seed, batch=batch, bptt=bptt, clip=clip,
                dtype=str(dtype).replace("torch.", ""), optimizer="sgd", vocab_size=vocab_size, train_ids=ids_digest(train_ids),
                probe=None if probe is None else ids_digest(probe))


def _check(train_ids, vocab_size, steps, batch, bptt, clip, probe, snapshot_steps):
    """The arguments every LM trainer shares: clear errors, raised before any work."""
    steps = positive_int("steps", steps)
    batch = positive_int("batch size", batch)
    bptt = positive_int("bptt", bptt)
    clip = positive("clip (the gradient-norm bound)", clip)
    vocab_size = positive_int("vocab_size", vocab_size, 2)
    ids = torch.as_tensor(train_ids)
    if ids.dim() != 1 or ids.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"train_ids must be a 1-D tensor of token ids, got {ids.dtype} of shape {tuple(ids.shape)}")
    if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= vocab_size):
        raise ValueError(f"token id {int(ids.max()) if int(ids.max()) >= vocab_size else int(ids.min())} "
                         f"out of range [0, {vocab_size})")
    snaps = sorted({int(s) for s in snapshot_steps})
    for s in snaps:
        if not 0 <= s <= steps:
            raise ValueError(f"snapshot step {s} out of range [0, {steps}]")
    if snaps and probe is None:
        raise ValueError(f"snapshot steps {snaps} need a probe (a (T,) token sequence to take attention on)")
    if probe is not None:
        p = torch.as_tensor(probe)
        if p.dim() != 1 or p.numel() < 1 or int(p.min()) < 0 or int(p.max()) >= vocab_size:
            raise ValueError(f"probe must be a non-empty (T,) sequence of token ids in [0, {vocab_size})")
    return steps, batch, bptt, clip, vocab_size, snaps


def _data(train_ids, batch, bptt, dev):
    from .wikitext import batchify
    data = batchify(torch.as_tensor(train_ids), batch).to(dev)
    if data.shape[0] < bptt + 1:
        raise ValueError(f"training text too short for bptt={bptt}: {data.shape[0]} rows")
    return data, (data.shape[0] - 1) // bptt


def _diverged(what, step, loss):
    return FloatingPointError(f"{what} diverged at step {step}: loss {loss} (not a finite number); "
                              f"lower the learning rate")


def _dtype(dtype) -> torch.dtype:
    """A floating torch dtype, given as one or by its name (``"float64"``: as a record stores it)."""
    got = getattr(torch, dtype, None) if isinstance(dtype, str) else dtype
    if not isinstance(got, torch.dtype) or not got.is_floating_point:
        raise ValueError(f"dtype must be a floating torch dtype or its name (torch.float32 or 'float32', "
                         f"'float64', ...), got {dtype!r}")
    return got


def _rate(lr, dtype):
    """A positive learning rate that the weights' dtype holds (torch's SGD multiplies in it)."""
    lr = positive("lr", lr)
    if lr > torch.finfo(dtype).max:
        raise ValueError(f"lr = {lr:g} is larger than the largest {dtype} ({torch.finfo(dtype).max:.4g})")
    return lr


def _after_last_update(what, steps, logits, snapshots=()):
    """FloatingPointError when the last update diverged: the loss of step s is taken before
    update s, so only the model's output after the last one can show it (logits on the next
    window, and the attention maps saved then), never an all-NaN result returned as a run."""
    if not bool(torch.isfinite(logits).all()) or not all(bool(torch.isfinite(a).all()) for a in snapshots):
        raise FloatingPointError(f"{what} diverged at its last update (step {steps - 1}): its output after "
                                 f"it is not finite; lower the learning rate")


def train_lm(train_ids: torch.Tensor, vocab_size: int, *, layers: int = 1, heads: int = 1,
             d: int = 200, d_hidden: int = 200, dropout: float = 0.2, positional="sinusoidal",
             lr: float = 5.0, steps: int = 1500, batch: int = 20, bptt: int = 35, clip: float = 0.5,
             seed: int = 0, probe: torch.Tensor | None = None, snapshot_steps=(), device=None,
             dtype=torch.float32, progress=None, stop: threading.Event | None = None) -> LMResult | None:
    """Plain SGD (one learning rate, as the paper) on next-token prediction, PyTorch-tutorial style.

    ``train_ids``: a 1-D tensor of token ids (e.g. from :func:`wikitext_data`), ``vocab_size``
    the number of ids; ``dtype``: a torch dtype or its name (``"float64"``). Returns an :class:`LMResult`. **Time**: the defaults (1 layer, d = 200,
    batch 20 x bptt 35, the shipped text's 10k-word vocabulary) take 0.2-0.4 s a step on a 2-core
    CPU (0.17 s measured on a quiet one), so the default 1,500 steps take 5-10 minutes (a GPU:
    seconds); ``steps=50`` is a quick look (about 10 s).
    ``progress``: a tqdm bar over the steps; ``None`` (default) shows it when stderr is a
    terminal (not in a notebook or a log file), ``True``/``False`` always/never.

    The text is cut into ``batch`` columns and read in windows of ``bptt`` tokens, wrapping
    around; gradients are clipped to norm ``clip``. At ``snapshot_steps`` (after that many
    updates) the attention maps of every layer on ``probe`` (a (T,) token sequence) are saved,
    with dropout off. A non-finite loss stops training with a FloatingPointError naming the
    run and the step. ``stop``: a threading.Event; once it is set, training ends at the next
    step and returns None (the WikiText figures train runs side by side and stop the others
    when one fails).

    The initial weights come from the global stream seeded with ``seed``; the dropout masks
    from a generator of the run's own that continues that stream (the draws of a plain
    ``torch.manual_seed(seed)`` script), so runs on several threads draw what they would alone.
    """
    steps, batch, bptt, clip, vocab_size, snaps = _check(train_ids, vocab_size, steps, batch, bptt, clip,
                                                         probe, snapshot_steps)
    dtype = _dtype(dtype)
    lr = _rate(lr, dtype)
    seed = _seed("seed", seed)
    dev = resolve_device(device)
    progress = _progress(progress)
    model, gen = _build(seed, dev, dtype, vocab_size, d=d, heads=heads, layers=layers, d_hidden=d_hidden,
                        dropout=dropout, positional=positional)
    drops = [m for m in model.modules() if isinstance(m, Dropout)]
    for m in drops:
        m.generator = gen
    t_start = time.perf_counter()
    try:
        cfg = _config(train_ids, vocab_size, probe, layers=layers, heads=heads, d=d, d_hidden=d_hidden,
                      dropout=dropout, positional=positional, lr=lr, steps=steps, batch=batch, bptt=bptt, clip=clip,
                      seed=seed, dtype=dtype)
        res = _train_lm(model, train_ids, vocab_size, dev, lr=lr, steps=steps, batch=batch, bptt=bptt, clip=clip,
                        seed=seed, probe=probe, snaps=snaps, progress=progress, stop=stop, config=cfg)
        if res is not None:
            res.seconds = time.perf_counter() - t_start
        return res
    finally:
        for m in drops:
            m.generator = None


_INIT = threading.Lock()


def _progress(progress) -> bool:
    """``None``: a progress bar when stderr is a terminal (an interactive shell), else none."""
    if progress is None:
        import sys
        try:
            return bool(sys.stderr.isatty())
        except (AttributeError, ValueError):
            return False
    return bool(progress)


def _build(seed, dev, dtype, vocab_size, **arch):
    """Run ``seed``'s model and its dropout generator: the global stream seeded, the model
    built from it, and the stream's state after that handed to a torch.Generator of the run's
    own. One run at a time (a lock): runs on other threads seed the same global stream."""
    with _INIT:
        torch.manual_seed(seed)
        model = EmbeddingTransformer(vocab_size, **arch).to(device=dev, dtype=dtype)
        gen = torch.Generator(device=dev)
        gen.set_state(torch.get_rng_state() if dev.type == "cpu" else torch.cuda.get_rng_state(dev))
    if dev.type == "cpu":
        keep_freed_memory()
    return model, gen


def _train_lm(model, train_ids, vocab_size, dev, *, lr, steps, batch, bptt, clip, seed, probe, snaps,
              progress, stop, config):
    """train_lm's loop, on a built model."""
    layers = len(model.blocks)
    data, n_windows = _data(train_ids, batch, bptt, dev)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    out = {}

    def snapshot(s):
        model.eval()
        with torch.no_grad():
            _, maps = model(torch.as_tensor(probe).to(dev)[None])
        out[s] = [a[0].cpu() for a in maps]
        model.train()

    losses = np.empty(steps)
    for s in tqdm(range(steps), disable=not progress, desc=f"{layers}-layer LM, lr {lr:g}", leave=False):
        if stop is not None and stop.is_set():
            return None
        if s in snaps:
            snapshot(s)
        i = (s % n_windows) * bptt
        x, y = data[i:i + bptt].t(), data[i + 1:i + 1 + bptt].t()
        logits, _ = model(x)
        loss = F.cross_entropy(logits.reshape(-1, vocab_size), y.reshape(-1))
        losses[s] = loss.item()
        if not math.isfinite(losses[s]):
            raise _diverged(f"the {layers}-layer LM (lr={lr:g}, seed={seed})", s, losses[s])
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
    if steps in snaps:
        snapshot(steps)
    i = (steps % n_windows) * bptt
    model.eval()
    with torch.no_grad():
        logits, _ = model(data[i:i + bptt].t())
    model.train()
    _after_last_update(f"the {layers}-layer LM (lr={lr:g}, seed={seed})", steps, logits, out.get(steps, ()))
    return LMResult(losses, out, model, config)


# ---------------------------------------------------------------------------------------
# R independent runs as one program
# ---------------------------------------------------------------------------------------

class _Stacked:
    """The weights of R EmbeddingTransformers, stacked on a leading run axis (nn.Linear
    layout: weight (R, out, in)), and their forward pass on a batch shared by every run."""

    def __init__(self, models, dropout):
        self.names = [n for n, _ in models[0].named_parameters()]
        self.params = {n: torch.stack([dict(m.named_parameters())[n].detach() for m in models]).requires_grad_(True)
                       for n in self.names}
        m0 = models[0]
        self.d, self.layers, self.heads = m0.d, len(m0.blocks), m0.blocks[0].attn.heads
        self.pe = m0.pe
        self.p = dropout

    def unstack(self, models):
        with torch.no_grad():
            for r, m in enumerate(models):
                for n, p in m.named_parameters():
                    p.copy_(self.params[n][r])

    def _drop(self, x, gens):
        """F.dropout of each run's slice, drawn from that run's generator (the draws of train_lm)."""
        if gens is None or self.p == 0:
            return x
        noise = torch.stack([torch.empty_like(x[r]).bernoulli_(1 - self.p, generator=g) for r, g in enumerate(gens)])
        return x * noise.div_(1 - self.p)

    @staticmethod
    def _linear(x, w, b=None):                     # x (R, N, in), w (R, out, in)
        return torch.bmm(x, w.transpose(1, 2)) if b is None else torch.baddbmm(b[:, None, :], x, w.transpose(1, 2))

    @staticmethod
    def _ln(x, w, b, eps=1e-5):                    # x (R, N, d), per-run affine
        return F.layer_norm(x, x.shape[-1:], eps=eps) * w[:, None, :] + b[:, None, :]

    def forward(self, x, gens=None, attention_only=False):
        """x (B, T) token ids, the same for every run -> logits (R, B*T, V) and maps
        [per layer (R, B, heads, T, T)]. ``gens``: one generator per run (training, dropout
        on) or None (evaluation)."""
        P = self.params
        R = P["U.weight"].shape[0]
        B, T = x.shape
        N, d, H = B * T, self.d, self.heads
        dh = d // H
        h = P["U.weight"][:, x.reshape(-1)] * math.sqrt(d)          # (R, N, d)
        if self.pe is not None:
            h = (h.view(R, B, T, d) + self.pe[:T]).view(R, N, d)
        h = self._drop(h, gens)
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        maps = []
        for i in range(self.layers):
            k = f"blocks.{i}."

            def heads(t):
                return t.view(R, B, T, H, dh).transpose(2, 3)
            q, kk, v = (heads(self._linear(h, P[k + f"attn.W_{n}.weight"])) for n in "QKV")
            scores = (q @ kk.transpose(-1, -2)) / math.sqrt(dh)
            attn = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
            maps.append(attn)
            if attention_only and i == 0:
                return None, maps
            y = (attn @ v).transpose(2, 3).reshape(R, N, d)
            a = self._linear(y, P[k + "attn.W_O.weight"])
            h = self._ln(h + self._drop(a, gens), P[k + "ln1.weight"], P[k + "ln1.bias"])
            ff = self._linear(torch.relu(self._linear(h, P[k + "ff.0.weight"], P[k + "ff.0.bias"])),
                              P[k + "ff.2.weight"], P[k + "ff.2.bias"])
            h = self._ln(h + self._drop(ff, gens), P[k + "ln2.weight"], P[k + "ln2.bias"])
        return self._linear(h, P["decoder.weight"], P["decoder.bias"]), maps


def _runs(lrs, seeds):
    lrs = [positive("lr", v) for v in np.atleast_1d(np.asarray(lrs, dtype=object)).tolist()]
    # a list keeps Python ints exact: as an array, 2**64 - 1 would be a uint64 and 2**64 a float
    seeds = list(seeds) if isinstance(seeds, (list, tuple)) else np.atleast_1d(np.asarray(seeds)).tolist()
    if not lrs:
        raise ValueError("no learning rates given (an empty list)")
    if not seeds:
        raise ValueError("no seeds given (an empty list)")
    if len(seeds) == 1:
        seeds = seeds * len(lrs)
    if len(lrs) == 1:
        lrs = lrs * len(seeds)
    if len(lrs) != len(seeds):
        raise ValueError(f"{len(lrs)} learning rates for {len(seeds)} seeds: give one of each per run")
    for s in seeds:
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)):
            raise ValueError(f"seeds must be integers, got {s!r}")
        _seed("seed", s)
    pairs = list(zip(lrs, seeds))
    dup = sorted(p for p, c in collections.Counter(pairs).items() if c > 1)   # linear in the runs
    if dup:
        raise ValueError(f"run (lr={dup[0][0]:g}, seed={dup[0][1]}) is listed twice: repeated runs are "
                         f"identical and would shrink the spread over seeds")
    return lrs, [int(s) for s in seeds]


def train_lms(train_ids: torch.Tensor, vocab_size: int, lrs, seeds, *, layers: int = 1, heads: int = 1,
              d: int = 200, d_hidden: int = 200, dropout: float = 0.2, positional="sinusoidal",
              steps: int = 300, batch: int = 20, bptt: int = 35, clip: float = 0.5,
              probe: torch.Tensor | None = None, snapshot_steps=(), device=None, dtype=torch.float32,
              progress=None) -> list[LMResult]:
    """R = len(lrs) runs of :func:`train_lm` (run r: rate lrs[r], seed seeds[r]) as one program.

    The runs read the same windows of text; each has its own initial weights and dropout
    masks, drawn from its seed exactly as ``train_lm`` draws them, its own gradient
    clipping and its own SGD rate. Returns one LMResult per run, as ``train_lm`` would.
    A run whose loss is not finite stops training with a FloatingPointError naming it and
    the step.
    """
    steps, batch, bptt, clip, vocab_size, snaps = _check(train_ids, vocab_size, steps, batch, bptt, clip,
                                                         probe, snapshot_steps)
    lrs, seeds = _runs(lrs, seeds)
    dtype = _dtype(dtype)
    for lr in lrs:
        _rate(lr, dtype)
    dev = resolve_device(device)
    progress = _progress(progress)
    built = [_build(s, dev, dtype, vocab_size, d=d, heads=heads, layers=layers, d_hidden=d_hidden,
                    dropout=dropout, positional=positional) for s in seeds]    # as train_lm draws them
    models, gens = [m for m, _ in built], [g for _, g in built]
    net = _Stacked(models, dropout)
    data, n_windows = _data(train_ids, batch, bptt, dev)
    R = len(seeds)
    lr_t = torch.tensor(lrs, dtype=dtype, device=dev)
    params = [net.params[n] for n in net.names]
    out = [dict() for _ in range(R)]
    probe_t = None if probe is None else torch.as_tensor(probe).to(dev)[None]

    def snapshot(s):
        with torch.no_grad():
            _, maps = net.forward(probe_t)
        for r in range(R):
            out[r][s] = [a[r, 0].cpu() for a in maps]

    losses = np.empty((R, steps))
    for s in tqdm(range(steps), disable=not progress, desc=f"{R} {layers}-layer LMs", leave=False):
        if s in snaps:
            snapshot(s)
        i = (s % n_windows) * bptt
        x, y = data[i:i + bptt].t(), data[i + 1:i + 1 + bptt].t()
        logits, _ = net.forward(x, gens)
        loss = F.cross_entropy(logits.reshape(-1, vocab_size), y.reshape(-1).repeat(R),
                               reduction="none").view(R, -1).mean(1)
        losses[:, s] = loss.detach().cpu().double().numpy()
        bad = np.flatnonzero(~np.isfinite(losses[:, s]))
        if bad.size:
            r = int(bad[0])
            raise _diverged(f"run {r} ({layers}-layer LM, lr={lrs[r]:g}, seed={seeds[r]})", s, losses[r, s])
        for p in params:
            p.grad = None
        loss.sum().backward()
        with torch.no_grad():   # clip_grad_norm_ per run, then SGD with each run's rate
            norm = torch.stack([p.grad.reshape(R, -1).norm(dim=1) for p in params], 1).norm(dim=1)
            coef = torch.clamp(clip / (norm + 1e-6), max=1.0) * lr_t
            for p in params:
                p.sub_(p.grad * coef.view(-1, *([1] * (p.dim() - 1))))
    if steps in snaps:
        snapshot(steps)
    i = (steps % n_windows) * bptt
    with torch.no_grad():
        logits, _ = net.forward(data[i:i + bptt].t())
    for r in range(R):
        _after_last_update(f"run {r} ({layers}-layer LM, lr={lrs[r]:g}, seed={seeds[r]})", steps, logits[r],
                           [out[r][steps][0]] if steps in snaps else ())
    net.unstack(models)
    cfg = _config(train_ids, vocab_size, probe, layers=layers, heads=heads, d=d, d_hidden=d_hidden, dropout=dropout,
                  positional=positional, lr=None, steps=steps, batch=batch, bptt=bptt, clip=clip, seed=None,
                  dtype=dtype)
    return [LMResult(losses[r], out[r], models[r], dict(cfg, lr=lrs[r], seed=seeds[r])) for r in range(R)]


# ---------------------------------------------------------------------------------------
# A saved run, re-run from its record
# ---------------------------------------------------------------------------------------

def _load_record(record_or_folder, name):
    """(record, where): a record dict as given, or read from a ``*.provenance.json`` file or from
    the folder that holds it (``name``: which run; None: the folder's only LMResult record)."""
    if isinstance(record_or_folder, dict):
        return record_or_folder, "the record"
    from . import provenance
    p = Path(str(record_or_folder))
    if p.is_dir():
        if name is not None:
            p = p / f"{name}{provenance.SUFFIX}"
        else:
            found = []
            for q in sorted(p.glob("*" + provenance.SUFFIX)):
                try:
                    if "train_ids" in (json.loads(q.read_text()).get("data") or {}):
                        found.append(q)
                except (OSError, ValueError, AttributeError):
                    continue
            if len(found) != 1:
                raise ValueError(f"{p} holds {len(found)} LMResult records"
                                 f"{' (' + ', '.join(q.name for q in found) + ')' if found else ''}: "
                                 f"name one (replay(folder, ids, name=...) or the record's path)")
            p = found[0]
    try:
        rec = json.loads(p.read_text())
    except (OSError, ValueError) as e:
        raise ValueError(f"{p} is not a readable provenance record ({e})") from None
    if not isinstance(rec, dict):
        raise ValueError(f"{p} is not a provenance record (a JSON {type(rec).__name__}, not an object)")
    return rec, str(p)


def _same(what, got, want, where):
    if got != want:
        raise ValueError(f"{what} are not the ones {where} was trained on: given sha256 {got['sha256']}, "
                         f"length {got['length']}; the record's sha256 {want['sha256']}, length {want['length']}")


def replay(record_or_folder, train_ids, probe=None, *, name: str | None = None, vocab=None, device=None,
           progress=None, rtol: float = 0.0) -> LMResult:
    """Re-run a saved :class:`LMResult` from its record: the LMResult that :func:`train_lm`
    returns with the recorded settings on ``train_ids`` (and ``probe``).

    ``record_or_folder``: the record (a dict), its ``<name>.provenance.json``, or the folder that
    :meth:`LMResult.save` wrote (``name`` picks the run when it holds several). The ids are
    checked first (after the record itself: one whose ``record_sha256`` does not match it was
    edited, a ValueError naming the fields that differ where it can): ``train_ids`` and
    ``probe`` must have the sha256 and length that the record's ``data`` lists (a ValueError naming both otherwise; the probe is needed exactly when the run
    had one); ``vocab`` (optional, a :class:`scansnap.wikitext.Vocab`) must be the recorded one
    (size and words' sha256), so a rebuilt vocabulary can be checked (``Vocab.build`` with the
    recorded ``min_freq`` on the recorded text). The loss is the same bit for bit on the same
    machine, device and number of torch threads (see the module's notes).

    Then the replayed loss is checked against the saved one: when the record comes from a file
    (a folder or a ``.provenance.json``, not a dict), its ``<name>_loss.csv`` must be the file the
    record hashes (sha256), and every step's replayed loss must equal the saved one. Tolerance:
    ``rtol=0`` (the default) asks for the same text as the CSV's (10 significant digits; a float32
    or float64 loss computed with the same bits prints the same), since on the same machine the
    run is bit for bit the same; anything else means the record's settings were edited, or the
    ids, device or thread count differ. On another machine or device the training's rounding
    grows step by step (chaotic, see the module's notes): pass a relative ``rtol`` there
    (|replayed - saved| <= rtol |saved| at every step) and read the result as a new run. A
    difference is a ValueError naming the first step, both values and both environments.
    """
    rec, where = _load_record(record_or_folder, name)
    from . import provenance
    if provenance.RECORD_HASH in rec or not isinstance(record_or_folder, dict):   # an edited record: said first
        provenance.check_record_hash(Path(where) if not isinstance(record_or_folder, dict) else where, rec)
    settings, data = rec.get("settings"), rec.get("data")
    want = set(_SETTINGS) | {"snapshot_steps"}
    if not isinstance(settings, dict) or not isinstance(data, dict) or set(settings) != want \
            or not {"vocab_size", "train_ids", "probe"} <= set(data):
        keys = sorted(settings) if isinstance(settings, dict) else settings
        raise ValueError(f"{where} is not a record of LMResult.save that can be replayed: its settings are {keys} "
                         f"(train_lm's keyword arguments {sorted(want)} expected) and its data {data!r} (vocab_size, "
                         "train_ids and probe expected): an older scansnap's record (settings with 'optimizer' and "
                         "'train_ids') cannot be replayed; re-run it and save it again")
    _same("train_ids", ids_digest(train_ids), data["train_ids"], where)
    if (probe is None) != (data["probe"] is None):
        raise ValueError(f"{where} records a run {'without' if data['probe'] is None else 'with'} a probe "
                         + ("(no snapshots): pass probe=None" if data["probe"] is None else
                            f"(sha256 {data['probe']['sha256']}, length {data['probe']['length']}): pass it as probe=..."))
    if probe is not None:
        _same("the probe's ids", ids_digest(probe), data["probe"], where)
    if vocab is not None:
        got = vocab.describe()
        rv = data.get("vocab")
        if len(vocab) != data["vocab_size"] or (rv is not None and got["sha256"] != rv["sha256"]):
            raise ValueError(f"vocab is not the vocabulary {where} was trained with: given {got['size']} words "
                             f"(sha256 {got['sha256']}); the record's {data['vocab_size']} words"
                             + (f" (sha256 {rv['sha256']}, min_freq {rv['min_freq']})" if rv else ""))
    rtol = float(rtol)
    if not (np.isfinite(rtol) and rtol >= 0):
        raise ValueError(f"rtol must be a finite number >= 0, got {rtol!r}")
    saved = None if isinstance(record_or_folder, dict) else _saved_loss(rec, where)
    res = train_lm(train_ids, data["vocab_size"], probe=probe, device=device, progress=progress, **settings)
    if saved is not None:
        _check_replayed_loss(res, rec, saved, rtol)
    return res


def _saved_loss(rec, where):
    """(path, losses as written) of the record's ``<figure>_loss.csv``, its sha256 checked first."""
    from . import provenance
    from .experiments import load_csv
    fname = f"{rec.get('figure')}_loss.csv"
    if fname not in (rec.get("files") or {}):
        raise ValueError(f"{where} lists no {fname} (its files: {sorted(rec.get('files') or {})}): the saved "
                         "loss to check a replay against is missing; save the run again")
    path = Path(where).parent / fname
    if not path.is_file():
        raise ValueError(f"{path} is missing, though {where} lists it: the saved loss to check the replay "
                         f"against; {provenance.remake(rec, Path(where).parent)}")
    provenance.verify(path, {fname: rec})                # an edited loss file is no reference
    return path, load_csv(path)["loss"]


def _check_replayed_loss(res, rec, saved, rtol):
    """ValueError naming the first step where the replayed loss is not the saved one (see replay)."""
    path, want = saved
    got = np.asarray(res.loss, float)
    if got.shape != want.shape:
        raise ValueError(f"the replay has {got.size} steps of loss, {path} {want.size}: not the run it records")
    if rtol == 0:
        same = np.array([f"{g:.10g}" == f"{w:.10g}" for g, w in zip(got, want)])
    else:
        same = np.abs(got - want) <= rtol * np.abs(want)
    if not same.all():
        s = int(np.flatnonzero(~same)[0])
        dev = next(res.model.parameters()).device if res.model is not None else "?"
        now = torch.get_num_threads()
        was = (rec.get("data") or {}).get("torch_threads")
        here = f"device {dev}, torch {torch.__version__}, {now} torch threads"
        there = (f"device {rec.get('device', '?')}, torch {rec.get('torch', '?')}, "
                 + (f"{was} torch threads" if was is not None else
                    "torch threads not recorded (a record written before they were)"))
        if was is not None and was != now:
            there += (f". The thread count differs ({was} recorded, {now} now): a different thread count changes "
                      f"how float sums are split and so the loss's last bits; torch.set_num_threads({was}) "
                      "and replay again")
        elif was is None:
            there += (f". A different thread count than the run's changes float sums: if it was not {now}, "
                      "torch.set_num_threads(<the run's>) and replay again")
        raise ValueError(f"the replayed loss is not the saved one: at step {s} replayed {got[s]:.10g}, saved "
                         f"{want[s]:.10g} in {path} (sha256 checked; final loss replayed {got[-1]:.6g}, saved "
                         f"{want[-1]:.6g}; tolerance rtol={rtol:g}). The record's settings "
                         f"({rec.get('settings')}) or the machine differ (here: {here}; recorded: {there}); on "
                         "another machine pass rtol= and read it as a new run")
