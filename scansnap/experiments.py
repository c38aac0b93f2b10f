"""The paper's experiments as functions: settings in, numbers out (the CLI and the book call these)."""
from __future__ import annotations

from dataclasses import dataclass
import warnings

import numpy as np
import torch
from tqdm.auto import tqdm

from .data import syn_medium, syn_small
from .metrics import distinct_entropy, recall_threshold
from ._validate import positive_int
from .train import lr_grid, train

# Syn-Small and Syn-Medium training settings (paper Sec. 8 and App. G; the authors' command lines)
COMMON = dict(steps=100, batch=128, T=128, optimizer="sgd", momentum=0.9)
FIG4_SNAPSHOTS = (0, 5, 10, 20, 50, 100)
# The learning-rate grid of the chapters' sliders (each point is precomputed for the static page).
SLIDER_ETAS = (0.1, 0.3, 1.0, 3.0, 10.0)
FIG6 = dict(num_last=(1, 3, 5, 10), eta_z=(0.5, 1, 2, 3), ratio=(1, 2, 5, 10), seeds=tuple(range(1, 11)))


def fig4(eta_y=1.0, eta_z=1.0, seed=2, device=None, **overrides):
    """Paper Fig. 4 (Syn-Small): one run from Y = Z = 0; returns (classes, TrainResult)."""
    classes = syn_small()
    kw = dict(COMMON, init="zero", snapshot_steps=FIG4_SNAPSHOTS)
    kw.update(overrides)
    return classes, train(classes, eta_y=eta_y, eta_z=eta_z, seeds=seed, device=device, **kw)


def syn_medium_sweep(num_last=FIG6["num_last"], eta_z=FIG6["eta_z"], ratio=FIG6["ratio"],
                     seeds=FIG6["seeds"], device=None, progress=False, **overrides):
    """The Syn-Medium grid of Figs. 6, 11, 12: {num_last: (classes, TrainResult)}, batched per num_last.

    Each vocabulary trains on the support path (``train(path="support")``, products over
    each class's 20 support tokens only), which draws the same batches as the dense counts
    path and agrees with it to rounding; on 2 cores it is the faster of the two at every
    num_last, 1.2x at num_last = 1 (M = 33) and 2x at 3 (bench/fig6.md). ``path=...`` forces one."""
    kw = dict(COMMON, init="default")
    kw.update(overrides)
    ey, ez, sd = lr_grid(eta_z, ratio, seeds)
    out = {}
    # one tick per training step of one vocabulary: the bar's total is vocabularies x steps
    bar = tqdm(total=len(num_last) * kw["steps"], disable=not progress, unit="step",
               desc=f"Syn-Medium sweep, {len(num_last)} vocabular{'y' if len(num_last) == 1 else 'ies'} x {kw['steps']} steps")
    try:              # closed however the sweep ends: a bar left open is drawn again at exit, below the last line
        for i, nl in enumerate(num_last):
            bar.set_postfix_str(f"num_last={nl} ({i + 1} of {len(num_last)}), {len(sd)} run{'s' * (len(sd) != 1)}",
                                refresh=False)
            classes = syn_medium(nl)
            path = kw.get("path") or "support"
            out[nl] = (classes, train(classes, eta_y=ey, eta_z=ez, seeds=sd, device=device, progress=bar,
                                      **dict(kw, path=path)))
    finally:
        bar.close()
    return out


def fig6(num_last=FIG6["num_last"], eta_z=FIG6["eta_z"], ratio=FIG6["ratio"], seeds=FIG6["seeds"],
         device=None, progress=False, sweep=None, **overrides):
    """Paper Fig. 6 (Syn-Medium): the entropy sweep, batched per num_last (one vocabulary each).

    Returns a dict of flat arrays num_last, eta_z, ratio, seed, entropy (one row per run).
    """
    sweep = sweep or syn_medium_sweep(num_last, eta_z, ratio, seeds, device, progress, **overrides)
    rows = {k: [] for k in ("num_last", "eta_z", "ratio", "seed", "entropy")}
    for nl, (classes, res) in sweep.items():
        rows["num_last"].append(np.full(len(res.seed), nl))
        rows["eta_z"].append(res.eta_z)
        rows["ratio"].append(res.eta_y / res.eta_z)
        rows["seed"].append(res.seed)
        rows["entropy"].append(distinct_entropy(classes, res.Z))
    return {k: np.concatenate(v) for k, v in rows.items()}


def fig11_12(sweep, n_thresholds: int = 17):
    """Figs. 11-12: recall of distinct tokens vs a threshold around 1/M, mean over seeds.

    Returns flat arrays num_last, eta_z, ratio, threshold, recall (one row per setting and
    threshold); thresholds are geomspace(1/(4M), 4/M) for each vocabulary size M.
    """
    rows = {k: [] for k in ("num_last", "eta_z", "ratio", "threshold", "recall")}
    for nl, (classes, res) in sweep.items():
        th = np.geomspace(0.25 / classes.M, 4.0 / classes.M, n_thresholds)
        rec = recall_threshold(classes, res.Z, th)                   # (R, n_th)
        ratio = res.eta_y / res.eta_z
        for ez, r in sorted({(a, b) for a, b in zip(res.eta_z, ratio)}):
            sel = (res.eta_z == ez) & (ratio == r)
            rows["num_last"].append(np.full(n_thresholds, nl))
            rows["eta_z"].append(np.full(n_thresholds, ez))
            rows["ratio"].append(np.full(n_thresholds, r))
            rows["threshold"].append(th)
            rows["recall"].append(rec[sel].mean(axis=0))
    return {k: np.concatenate(v) for k, v in rows.items()}


def fig5(etas=(0.1, 0.5, 1.0), seed=2, device=None, **overrides):
    """Paper Fig. 5 (Syn-Small, Adam, eta_Y = eta_Z = eta): final c_n of class 0 for each eta."""
    classes = syn_small()
    kw = dict(COMMON, init="zero", optimizer="adam")
    kw.update(overrides)
    res = train(classes, eta_y=list(etas), eta_z=list(etas), seeds=seed, device=device, **kw)
    return classes, res


# WikiText-2 (Sec. 8): words seen at least LM_MIN_FREQ times in the shipped training text keep
# their id, the rest map to <unk> (speed on a CPU: 10k instead of 18k output classes).
LM_MIN_FREQ = 3
FIG7 = dict(lr=5.0, steps=1500, snapshots=(0, 500, 1000, 1500), window=30)
FIG10 = dict(lrs=(1.0, 2.0, 3.0, 4.0, 5.0), seeds=(1, 2, 3, 4, 5), steps=300)


def wikitext_data(source="shipped", min_freq=LM_MIN_FREQ):
    """(train ids, valid ids, vocab) with a vocabulary from the training text (min_freq).

    Also ``scansnap.lm.wikitext_data`` and ``scansnap.wikitext.wikitext_data`` (the same
    function). ``train ids``, ``valid ids``: 1-D int64 tensors of token ids; ``vocab``: a
    :class:`scansnap.wikitext.Vocab`; ``source``: see :func:`scansnap.wikitext.load`."""
    from . import wikitext
    corpus = wikitext.load(source)
    vocab = wikitext.Vocab.build(corpus.train + ["<unk>"], min_freq=min_freq)
    if "<unk>" not in vocab.stoi:
        vocab = wikitext.Vocab(vocab.itos + ["<unk>"])
    return vocab.encode(corpus.train), vocab.encode(corpus.valid), vocab


def lm_workers(workers, runs: int, dev: torch.device) -> int:
    """How many WikiText runs train side by side: on a CPU, one per torch thread (each run
    then computes on one core: 1.16-1.18x the throughput of one run at a time on two cores,
    whose memory-bound softmax and dropout use the second core poorly; bench/RESULTS.md); on a GPU,
    one. A run's numbers depend on the thread count it computes with (the order of its sums),
    not on the runs beside it."""
    if workers is None:
        return max(1, min(torch.get_num_threads(), runs)) if dev.type == "cpu" else 1
    return positive_int("workers", workers)


def lm_runs(fn, items, workers: int, progress=False, desc="runs", one_thread=False):
    """``[fn(item, stop) for item in items]``: one after another, or on ``workers`` threads of
    one torch thread each (:func:`scansnap._cpu.map_on_threads`); a progress bar over the runs.
    ``one_thread``: one after another on one torch thread too, so that a run's arithmetic (the
    order of its sums) is the same whichever way the runs are spread (threads, processes,
    machines: :mod:`scansnap.distributed`)."""
    from ._cpu import map_on_threads
    bar = tqdm(total=len(items), disable=not progress, desc=desc, unit="run")

    def one(item, stop):
        res = fn(item, stop)
        if res is not None:      # None: stopped (another run failed), not done
            bar.update()
        return res
    try:
        if workers <= 1 or len(items) <= 1:
            if not one_thread:
                return [one(item, None) for item in items]
            caller = torch.get_num_threads()
            torch.set_num_threads(1)
            try:
                return [one(item, None) for item in items]
            finally:
                torch.set_num_threads(caller)
        return map_on_threads(one, items, workers)
    finally:
        bar.close()


def fig7(steps=FIG7["steps"], layers=(1, 3), device=None, progress=False, source="shipped", workers=None):
    """Fig. 7: lowest-layer attention on a validation window during SGD (lr 5), 1 and 3 layers.
    ``workers``: how many of the models train side by side (:func:`lm_workers`). On a CPU each
    model computes on one torch thread, so its maps do not depend on the thread count or on
    how the models are spread over processes (``torchrun``: :mod:`scansnap.distributed`)."""
    from ._validate import resolve_device
    from .lm import train_lm
    dev = resolve_device(device)
    tr, va, vocab = wikitext_data(source)
    probe = va[:FIG7["window"]]
    snaps = sorted({int(round(x)) for x in np.linspace(0, steps, len(FIG7["snapshots"]))})   # 0, 500, 1000, 1500
    layers = list(layers)
    res = lm_runs(lambda L, stop: train_lm(tr, len(vocab), layers=L, lr=FIG7["lr"], steps=steps, probe=probe,
                                           snapshot_steps=snaps, device=dev, stop=stop,
                                           progress=progress and L == layers[-1]),   # one bar: the last model's steps
                  layers, lm_workers(workers, len(layers), dev), one_thread=dev.type == "cpu")
    return dict(zip(layers, res)), probe, vocab


FREEZE = dict(lr=FIG7["lr"], steps=6000, every=250, layers=1)


def lm_freezing(steps=FREEZE["steps"], every=FREEZE["every"], lr=FREEZE["lr"], layers=FREEZE["layers"],
                device=None, progress=False, source="shipped"):
    """Does the real model's attention freeze while the learning rate stays constant (Sec. 8)?

    One run of Fig. 7's setting (SGD at one rate), longer, with the lowest layer's attention on
    the Fig. 7 window saved every ``every`` steps. Rows: (iteration, mean row entropy, sum of
    |change| since the previous snapshot, mean training loss over those steps).
    """
    from .metrics import attention_entropy
    from .lm import train_lm
    tr, va, vocab = wikitext_data(source)
    every = min(positive_int("every", every), positive_int("steps", steps))
    snaps = list(range(0, steps + 1, every))
    res = train_lm(tr, len(vocab), layers=layers, lr=lr, steps=steps, probe=va[:FIG7["window"]],
                   snapshot_steps=snaps, device=device, progress=progress)
    rows, prev = [], None
    for s in snaps:
        a = res.snapshots[s][0][0].numpy()
        rows.append((s, attention_entropy(a), float("nan") if prev is None else float(np.abs(a - prev).sum()),
                     float("nan") if s == 0 else float(res.loss[s - every:s].mean())))
        prev = a
    return rows


def fig7_maps(f7: dict, window: int = FIG7["window"]) -> dict:
    """The CSV of ``reproduce fig7`` back as {layers: {iteration: (window, window) attention map}}."""
    maps = {}
    for L in np.unique(f7["layers"]).astype(int):
        maps[int(L)] = {}
        for s in np.unique(f7["iteration"][f7["layers"] == L]).astype(int):
            sel = (f7["layers"] == L) & (f7["iteration"] == s)
            A = np.zeros((window, window))
            A[f7["query"][sel].astype(int), f7["key"][sel].astype(int)] = f7["attention"][sel]
            maps[int(L)][int(s)] = A
    return maps


def lowest_attention(model, x):
    """The attention maps (B, heads, T, T) of the lowest layer on tokens x (B, T), dropout off:
    ``model(x)[1][0]`` without the layers above and the decoder (a (B*T, vocab) product)."""
    import math
    B, T = x.shape
    x = x.to(model.U.weight.device)                    # token ids may come from the CPU
    h = model.U(x) * math.sqrt(model.d)
    if model.pe is not None:
        h = h + model.pe[:T]
    mask = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
    return model.blocks[0].attn(h, mask)[1]


def validation_attention_entropy(model, valid_ids, bptt=35, batches=20, batch=10):
    """Fig. 10: mean attention entropy of the lowest layer on validation windows (dropout off)."""
    from .metrics import attention_entropy
    from .wikitext import batchify
    data = batchify(valid_ids, batch)
    dev = next(model.parameters()).device
    was_training = model.training
    model.eval()
    vals = []
    with torch.no_grad():
        for k in range(min(batches, (data.shape[0] - 1) // bptt)):
            vals.append(attention_entropy(lowest_attention(model, data[k * bptt:(k + 1) * bptt].t().to(dev))))
    model.train(was_training)
    if not vals:
        raise ValueError(f"validation text too short for one window of bptt={bptt} tokens in {batch} columns")
    return float(np.mean(vals))


def fig10(lrs=FIG10["lrs"], seeds=FIG10["seeds"], steps=FIG10["steps"], device=None, progress=False,
          source="shipped", batched=None, workers=None):
    """Fig. 10: validation attention entropy of a 1-layer model vs the SGD learning rate.

    Rows (lr, seed, entropy, mean training loss of the last 20 steps), one per run, the runs
    in the order lrs x seeds (:func:`fig10_rows` for any list of runs). On a CPU every run
    computes on one torch thread (``workers`` of them side by side, :func:`lm_workers`): a
    run's row is then the same whatever the machine's thread count, and whichever process
    trains it (``torchrun``, :mod:`scansnap.distributed`). On a GPU the runs of one seed (its
    learning rates) train as one batched program (``scansnap.lm.train_lms``; ``batched=False``:
    model by model), so the same runs share a program however the seeds are spread. The two
    programs do the same arithmetic (equal to rounding over a few steps, tested), but 300 SGD
    steps at these rates amplify rounding to the spread between seeds, so they give different
    rows, equally valid (see :mod:`scansnap.lm`).
    """
    if not len(lrs) or not len(seeds):
        raise ValueError(f"fig10 needs at least one learning rate and one seed; got lrs={lrs!r}, seeds={seeds!r}")
    return fig10_rows([(lr, s) for lr in lrs for s in seeds], steps=steps, device=device, progress=progress,
                      source=source, batched=batched, workers=workers)


def fig10_groups(runs, device=None, batched=None) -> list:
    """The runs of :func:`fig10_rows` in the groups that compute together: on a CPU (or with
    ``batched=False``) one run a group; on a GPU the runs of one seed, in order of first
    appearance. Distributed training hands out whole groups (:mod:`scansnap.distributed`)."""
    from ._validate import resolve_device
    dev = resolve_device(device)
    if not (dev.type == "cuda" if batched is None else batched):
        return [[r] for r in runs]
    groups: dict = {}
    for r in runs:
        groups.setdefault(r[1], []).append(r)
    return list(groups.values())


def fig10_rows(runs, steps=FIG10["steps"], device=None, progress=False, source="shipped", batched=None,
               workers=None, data=None):
    """:func:`fig10`'s rows for an explicit list of runs [(lr, seed), ...], in that order.
    ``data``: the (train ids, valid ids, vocab) of :func:`wikitext_data`, if already loaded."""
    from ._validate import resolve_device
    from .lm import _runs, train_lm, train_lms
    runs = [(lr, s) for lr, s in runs]
    if not runs:
        raise ValueError("fig10 needs at least one run (lr, seed)")
    _runs([r[0] for r in runs], [r[1] for r in runs])          # rejects bad rates and duplicate runs
    dev = resolve_device(device)
    tr, va, vocab = data if data is not None else wikitext_data(source)
    if batched is None:
        batched = dev.type == "cuda"
    if batched:
        results = {}
        for group in fig10_groups(runs, dev, True):
            for r, res in zip(group, train_lms(tr, len(vocab), [g[0] for g in group], [g[1] for g in group], layers=1,
                                               steps=steps, device=dev, progress=progress)):
                results[r] = res
        results = [results[r] for r in runs]
    else:
        results = lm_runs(lambda run, stop: train_lm(tr, len(vocab), layers=1, lr=run[0], steps=steps, seed=run[1],
                                                     device=dev, stop=stop, progress=False),
                          runs, lm_workers(workers, len(runs), dev), progress, "fig10 runs",
                          one_thread=dev.type == "cpu")
    return [(lr, s, validation_attention_entropy(res.model, va), float(res.loss[-20:].mean()))
            for (lr, s), res in zip(runs, results)]


def book_results() -> dict:
    """The committed results of ``reproduce all`` (package data, so a chapter opened alone in
    Colab has them too): {figure name: {column: array}}. Regenerate them with
    ``python -m scansnap reproduce all --out scansnap/results`` (and ``reproduce freeze``).

    Every CSV must be vouched for by the provenance record written beside it (its sha256
    matches: not a mixed or edited set) and have been made with the paper's settings (no
    ``--steps``, ``--seeds`` or ``--data``): otherwise a ValueError says which file and why,
    since the book quotes these numbers as the paper's. The CSVs are what is checked: the book's
    PNGs are not shipped with the package, nor tracked in the repository.
    """
    from importlib.resources import files

    folder = files("scansnap") / "results"
    try:
        # the CSVs only: the book's PNGs are neither shipped nor tracked (a checkout's are its own drawings)
        return _read_results(folder, paper=True, every_file=False)
    except FileNotFoundError:
        raise FileNotFoundError(f"no results in {folder} (the book's own): make them with `python -m scansnap "
                                "reproduce all --out scansnap/results`") from None


class UnlistedFileWarning(UserWarning):
    """A results folder holds a CSV that no provenance record lists and that is named like no
    result set (a file of the user's own): :func:`read_results` skips it, naming it."""


def read_results(folder, paper: bool = True) -> dict:
    """The CSVs of a result folder (``python -m scansnap reproduce --out``, or ``.save()`` of a
    result) as {file stem: {column: numpy array}}, after checking every file the provenance
    records beside them list: each CSV and PNG is the one its record describes (sha256: not a
    mixed or edited set; a listed file that is missing, a PNG too, is a ValueError naming it and
    the command that regenerates the set), and each CSV holds the grid its
    record's settings say (the rates, seeds, vocabularies: ``provenance.check_columns``).
    A CSV no record lists is refused when it is named like a result set (``fig6.csv``,
    ``train_loss.csv``, a PNG or CSVs of its name beside it: its record ``<name>.provenance.json``
    is missing, and the error says so); any other CSV (a file of your own, ``notes.csv``) is
    skipped with an :class:`UnlistedFileWarning` naming it.
    ``folder``: a str or a Path.

    ``paper=True`` (what :func:`book_results` asks) also requires the paper's settings, since the
    book quotes those numbers as the paper's; ``paper=False`` checks the files and their records
    only, for your own grids, steps, seeds and saved results (read each record's settings with
    ``scansnap.provenance.read_records(folder)``). Integer columns (seed, step, ...) come back as
    integers (:func:`load_csv`). The book's own folder (``scansnap/results``, what
    :func:`book_results` reads) ships its CSVs only: there the records' PNGs may be absent.
    """
    return _read_results(folder, paper, every_file=not _is_book_folder(folder))


def _is_book_folder(folder) -> bool:
    """Whether ``folder`` is the package's own results folder (its PNGs neither shipped nor tracked)."""
    from importlib.resources import files
    from pathlib import Path
    try:
        return Path(str(folder)).resolve() == Path(str(files("scansnap") / "results")).resolve()
    except (OSError, RuntimeError):
        return False


def _read_results(folder, paper: bool, every_file: bool) -> dict:
    from . import provenance

    folder = provenance.results_folder(folder)
    records = provenance.read_records(folder)          # first: a CSV a record lists but the folder lacks is named
    csvs = sorted((p for p in folder.iterdir() if p.name.endswith(".csv")), key=lambda p: p.name)
    if not csvs:
        raise FileNotFoundError(f"{folder} has no results (no CSV files in it): {provenance.make_some(folder)}")
    unlisted = [p for p in csvs if p.name not in records]
    for p in unlisted:              # a result set whose record was deleted: refused, naming the record
        missing = provenance.missing_record(p)
        if missing is not None:
            raise ValueError(f"{p} has no provenance record: its record {missing} is missing (deleted or "
                             f"moved?), so nothing says where the file came from; put the record back or "
                             f"regenerate the set")
    if unlisted:                    # a file of the user's own, named like no result set: not read
        warnings.warn(f"{folder}: {', '.join(p.name for p in unlisted)} "
                      f"{'is' if len(unlisted) == 1 else 'are'} listed by no provenance record and not part of a "
                      "result set, so not read (move it out of the folder to silence this)",
                      UnlistedFileWarning, stacklevel=3)
        csvs = [p for p in csvs if p.name in records]
        if not csvs:
            raise FileNotFoundError(f"{folder} has no results (no CSV a provenance record lists): "
                                    f"{provenance.make_some(folder)}")
    out = {}
    for p in csvs:
        rec = provenance.verify(p, records)
        table = load_csv(p)
        if paper:
            try:
                provenance.settings_for(rec["figure"])
            except ValueError:
                raise ValueError(f"{p} belongs to {rec['figure']!r}, which is not one of the paper's figures "
                                 f"(it was written by {rec.get('command', '?')!r}): read your own results "
                                 "with read_results(folder, paper=False)") from None
            provenance.check_settings(p, rec)
        provenance.check_columns(p, rec, table)        # the record's grid is the CSV's (not edited around it)
        out[p.name[:-4]] = table
    for name in sorted(records) if every_file else ():
        if not name.endswith(".csv"):                                  # a PNG: listed, so it must be there
            if not (folder / name).is_file():
                rec = records[name]
                raise ValueError(f"{folder / name} is missing, though its record {rec['figure']}{provenance.SUFFIX} "
                                 f"lists it: an incomplete set; {provenance.remake(rec, folder)}")
            provenance.verify(folder / name, records)
    for rec in {r["figure"]: r for r in records.values()}.values():     # last: the records' own hashes
        provenance.check_record_hash(folder / f"{rec['figure']}{provenance.SUFFIX}", rec)
    return out


# Columns that hold whole numbers by definition: load_csv returns them as int64 (the rest float64).
INTEGER_COLUMNS = frozenset({"seed", "num_last", "step", "iteration", "layers", "query", "key", "token",
                             "M", "run", "class", "next_token", "top_token", "predicted_top"})
# Columns that hold yes/no (written 0/1, as pandas writes booleans as numbers): load_csv returns bools.
BOOL_COLUMNS = frozenset({"diverged", "tied", "top_as_predicted", "entropy_ok", "common_mass_ok", "agrees"})
# Columns where a written 'nan' means "not defined here", not a failed number: freeze.csv's first
# row (iteration 0) has no change since a previous snapshot and no training loss yet.
UNDEFINED_ALLOWED = {"freeze.csv": ("change", "loss")}


def load_csv(path, undefined=None) -> dict:
    """A CSV written by ``python -m scansnap reproduce`` as {column: numpy array}: the columns of
    :data:`INTEGER_COLUMNS` (seed, step, token, ...) as int64 when every value is a whole
    number, those of :data:`BOOL_COLUMNS` (diverged, ...) as bool when every value is 0 or 1,
    the others as float64. Checks nothing about where the file came from: use
    :func:`read_results` for that.

    A 'nan' or 'inf' is a ValueError naming the line and column (a diverged run or a damaged
    file is not a number to plot), except 'nan' in the columns ``undefined`` names (default:
    :data:`UNDEFINED_ALLOWED` for the file's name), where it means "not defined"."""
    import csv
    import math
    from pathlib import Path
    allowed = set(UNDEFINED_ALLOWED.get(Path(str(path)).name, ()) if undefined is None else undefined)
    with open(path, newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        rows = list(reader)
    if not header or not rows:
        raise ValueError(f"{path} has no rows")
    out = {k: np.empty(len(rows)) for k in header}
    for i, row in enumerate(rows, start=2):
        if len(row) != len(header):
            raise ValueError(f"{path}, line {i}: {len(row)} fields, the header has {len(header)}")
        for k, v in zip(header, row):
            try:
                out[k][i - 2] = x = float(v)
            except ValueError:
                raise ValueError(f"{path}, line {i}: {k} = {v!r} is not a number") from None
            if not math.isfinite(x) and not (math.isnan(x) and k in allowed):
                raise ValueError(f"{path}, line {i}: {k} = {v!r} is not a finite number (a diverged run or a "
                                 "damaged file)")
    return _integer_columns(out)


def _integer_columns(table: dict) -> dict:
    """The columns of INTEGER_COLUMNS as int64 where every value is a whole number, and those of
    BOOL_COLUMNS as bool where every value is 0 or 1."""
    for k, v in table.items():
        if k in INTEGER_COLUMNS and np.all(np.isfinite(v)) and np.all(v == np.round(v)) and np.all(np.abs(v) < 2 ** 53):
            table[k] = v.astype(np.int64)
        elif k in BOOL_COLUMNS and np.all((v == 0) | (v == 1)):
            table[k] = v == 1
    return table


# ---------------------------------------------------------------------------------------
# Chapter 5: the snap in the real model (Syn-Medium with one query), three dynamics side by side
# ---------------------------------------------------------------------------------------

SNAP = dict(etas=(0.2, 0.5, 1.0, 2.0, 5.0), seed=1, steps=2048, momentum=0.9)
FREEZE_FRACTION = 0.05     # chapter 5's freeze test: the last doubling's change below 5% of the peak


def snap_train_args(etas=SNAP["etas"], seed=SNAP["seed"], steps=SNAP["steps"],
                    momentum=SNAP["momentum"]) -> dict:
    """``train``'s arguments for chapter 5's grid: every pair (eta_Y, eta_Z) from ``etas``
    (eta_Y-major), one seed, ``steps`` steps of SGD with ``momentum`` (the paper's 0.9; batch
    128, T = 128, from Y = Z = 0: ``train``'s defaults). Z is saved at every step up to 64 (peak times),
    at every power of two (changes per doubling) and on a log grid (smooth curves)."""
    steps = positive_int("steps", steps)
    grid = [(float(ey), float(ez)) for ey in etas for ez in etas]
    if not grid:
        raise ValueError("snap_train_args: etas is empty")
    doublings = [2 ** k for k in range(int(np.log2(steps)) + 1)]
    log_grid = np.unique(np.geomspace(1, steps, 60).round().astype(int)).tolist()
    snaps = sorted(s for s in set(range(65)) | set(doublings) | set(log_grid) if s <= steps)
    return dict(eta_y=[g[0] for g in grid], eta_z=[g[1] for g in grid], seeds=[int(seed)] * len(grid),
                steps=steps, optimizer="sgd", momentum=momentum, snapshot_steps=snaps)


def change_per_doubling(c) -> np.ndarray:
    """||c(2s) - c(s)||_1 from c (..., D, M) at the steps 1, 2, 4, ..., 2^(D-1): (..., D - 1)."""
    c = np.asarray(c, float)
    return np.abs(np.diff(c, axis=-2)).sum(-1)


def population_loss(classes, Y, Z) -> float:
    """E_n[-ln alpha_n(n)] in the long-sequence limit, classes uniform (what the population
    dynamics minimise; ``theory.population_sgd`` records the same quantity at each step)."""
    from .theory import attention_limit_all
    c = attention_limit_all(classes, Z)
    f = c / np.linalg.norm(c, axis=-1, keepdims=True)
    lg = f @ np.asarray(Y, float)
    lg = lg - lg.max(-1, keepdims=True)
    la = lg - np.log(np.exp(lg).sum(-1, keepdims=True))
    return float(-np.mean(la[np.arange(classes.K), classes.next_token]))


@dataclass
class SnapSweep:
    """Chapter 5's three dynamics on one grid of rates, all from Y = Z = 0 on the same classes.

    - ``sgd``: the real training (``train``: SGD with momentum, finite T and batch);
    - ``population``: the same optimiser on the exact expected gradient
      (``theory.population_sgd``: T and the batch infinite, no noise);
    - the gradient flow (``theory.population_dynamics``) at the effective rates
      eta / (1 - momentum), the theory's dynamics with no Sec. 6 approximation.

    ``c_sgd`` (runs, len(snapshot_steps), M): the attention c_n of class 0 at every SGD snapshot.
    ``change[kind]`` (runs, len(doublings) - 1), kind in sgd / population / flow: the change
    ||c_n(2s) - c_n(s)||_1 of class 0 over [s, 2s] for s = doublings[:-1].
    ``flow_t``, ``flow_loss`` (runs, len(flow_t)): the flow's times and its loss.
    ``flow_early_t``, ``flow_early_change`` (runs, len(flow_early_t)): the flow's change over
    [t, 2t] for t = 2^-k, ..., 1/2, before the first SGD step. At the rates eta / (1 - momentum)
    the flow can peak there, so :meth:`peak` and the freeze test include them.
    """
    classes: object
    grid: list
    doublings: np.ndarray
    snapshot_steps: list
    sgd: object
    c_sgd: np.ndarray
    population: object
    change: dict
    flow_t: np.ndarray
    flow_loss: np.ndarray
    momentum: float
    flow_early_t: np.ndarray = None
    flow_early_change: np.ndarray = None

    def run(self, eta_y: float, eta_z: float) -> int:
        """The index of the run with rates (eta_y, eta_z)."""
        key = (float(eta_y), float(eta_z))
        if key not in self.grid:
            raise ValueError(f"no run with eta_y={eta_y!r}, eta_z={eta_z!r} in the sweep {self.grid}")
        return self.grid.index(key)

    def frozen(self, kind: str, fraction: float = FREEZE_FRACTION) -> np.ndarray:
        """Chapter 5's freeze test per run (bool, runs): the change over the last doubling is
        below ``fraction`` of the run's largest change per doubling (kind: sgd, population, flow)."""
        return self.late_fraction(kind) < fraction

    def peak(self, kind: str) -> np.ndarray:
        """The largest change per doubling of each run (runs,); for the flow, the doublings
        before t = 1 (``flow_early_change``) count too."""
        if kind not in self.change:
            raise ValueError(f"kind must be one of {sorted(self.change)}, got {kind!r}")
        cd = self.change[kind]
        if kind == "flow" and self.flow_early_change is not None:
            cd = np.concatenate([self.flow_early_change, cd], axis=1)
        return cd.max(1)

    def late_fraction(self, kind: str) -> np.ndarray:
        """The change over the last doubling as a fraction of :meth:`peak` (runs,): what
        chapter 5's freeze test compares with 5%."""
        peak = self.peak(kind)                      # checks kind
        return self.change[kind][:, -1] / peak

    def c_at(self, steps) -> np.ndarray:
        """c_n of class 0 after each SGD step in ``steps`` (saved snapshots only): (runs, len(steps), M)."""
        idx = {s: i for i, s in enumerate(self.snapshot_steps)}
        missing = [s for s in np.atleast_1d(steps).tolist() if s not in idx]
        if missing:
            raise ValueError(f"no snapshot at steps {missing}")
        return self.c_sgd[:, [idx[s] for s in np.atleast_1d(steps).tolist()]]


def snap_sweep(classes, sgd, momentum: float = SNAP["momentum"], flow_points: int = 40,
               flow_early: int = 10) -> SnapSweep:
    """Beside ``sgd`` (a ``train`` result on ``classes``, e.g. with :func:`snap_train_args`), run
    the same grid of rates with the same optimiser on the population gradient and as the
    gradient flow at the effective rates eta / (1 - momentum); see :class:`SnapSweep`. The
    flow's change per doubling is also measured before t = 1, from t = 2^-flow_early."""
    from .theory import attention_limit_all, population_dynamics, population_sgd
    if not 0 <= momentum < 1:
        raise ValueError(f"momentum must be in [0, 1), got {momentum!r}")
    grid = [(float(ey), float(ez)) for ey, ez in zip(np.asarray(sgd.eta_y), np.asarray(sgd.eta_z))]
    snaps = sorted(int(s) for s in sgd.snapshots)
    steps = sgd.loss.shape[1]
    doublings = np.array([2 ** k for k in range(int(np.log2(steps)) + 1)])
    missing = sorted(set(doublings.tolist()) - set(snaps))
    if missing:
        raise ValueError(f"snap_sweep needs the SGD snapshots at every power of two; missing {missing}")
    c_sgd = np.stack([attention_limit_all(classes, sgd.snapshots[s].numpy())[:, 0] for s in snaps], axis=1)
    at = {s: i for i, s in enumerate(snaps)}
    pop = population_sgd(classes, [g[0] for g in grid], [g[1] for g in grid], steps, momentum=momentum,
                         snapshot_steps=[0] + doublings.tolist())
    c_pop = np.stack([attention_limit_all(classes, pop.snapshots[d])[:, 0] for d in doublings], axis=1)
    flow_early = positive_int("flow_early", flow_early, minimum=0)
    flow_t = np.unique(np.concatenate([doublings, np.geomspace(1, steps, flow_points)]))
    early_t = 2.0 ** np.arange(-flow_early, 0)                   # before t = 1: [t, 2t] ends at 1
    on_doubling = np.isin(flow_t, doublings)
    c_flow, flow_loss, early_change = [], [], []
    for ey, ez in grid:
        # t_eval only reads the solver's dense output: the extra early times change no step
        sol = population_dynamics(classes, ey / (1 - momentum), ez / (1 - momentum), float(flow_t[-1]),
                                  t_eval=np.concatenate([early_t, flow_t]), rtol=1e-4, atol=1e-7)
        Z_early, Z, Y = sol.Z[:early_t.size], sol.Z[early_t.size:], sol.Y[early_t.size:]
        c_flow.append(attention_limit_all(classes, Z[on_doubling])[:, 0])
        c_early = attention_limit_all(classes, np.concatenate([Z_early, Z[:1]]))[:, 0]   # ..., 1/2, 1
        early_change.append(change_per_doubling(c_early))
        flow_loss.append([population_loss(classes, y, z) for y, z in zip(Y, Z)])
    change = {"sgd": change_per_doubling(c_sgd[:, [at[d] for d in doublings]]),
              "population": change_per_doubling(c_pop),
              "flow": change_per_doubling(np.stack(c_flow))}
    return SnapSweep(classes, grid, doublings, snaps, sgd, c_sgd, pop, change, flow_t,
                     np.array(flow_loss), momentum, early_t,
                     np.array(early_change).reshape(len(grid), early_t.size))


# Chapter 3's decoder runs (Lemmas 5 and 6): four queries with one next token each and no common
# token, so E = 0 and the decoder's problem decouples; the attention is held still (eta_Z = 1e-8)
DECODER = dict(eta_y=(0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0), seeds=(0, 1), steps=300, batch=512, T=256)


@dataclass(frozen=True)
class DecoderSweep:
    """Chapter 3's decoder runs beside Lemma 5's prediction (see :func:`decoder_sweep`).

    ``classes``: the sequence classes (M = 14 tokens, K = 4); ``run``: the batched
    :class:`~scansnap.train.TrainResult` (one run per (eta_y, seed), eta_y outer); ``losses``:
    {(eta_y, seed): loss (steps + 1,), loss[0] before the first update}."""
    classes: object
    run: object
    losses: dict
    steps: int

    def prediction(self, eta_y: float, discrete: bool = False) -> np.ndarray:
        """Lemma 5's loss at each step: Eq. 45's closed form at t = step / K (the rate eta_Y / K
        per step), or with ``discrete`` the recursion h* of Eq. 33 that SGD's steps follow."""
        from .theory import h_closed, h_star, loss_of_h
        M, K = self.classes.M, self.classes.K
        if discrete:
            return loss_of_h(h_star(self.steps - 1, M, eta_y / K), M)
        return loss_of_h(h_closed(np.arange(self.steps) / K, M, eta_y), M)

    def deviation(self, discrete: bool = False) -> dict:
        """{(eta_y, seed): the largest relative deviation of the run's loss from the prediction},
        over the steps after the first."""
        return {k: float(np.abs(v / self.prediction(k[0], discrete) - 1)[1:].max())
                for k, v in self.losses.items()}


_DECODER_SWEEPS: dict = {}


def decoder_sweep(eta_y=DECODER["eta_y"], seeds=DECODER["seeds"], steps=DECODER["steps"],
                  batch=DECODER["batch"], T=DECODER["T"]) -> DecoderSweep:
    """Chapter 3's decoder runs: every (eta_y, seed) in one batched :func:`train` (momentum 0,
    eta_Z = 1e-8, ``path="support"``: Lemma 1's update on each class's support tokens, the same
    batches as the dense path). Cached per settings, so a slider only redraws."""
    from .data import make_classes
    key = (tuple(eta_y), tuple(seeds), steps, batch, T)
    if key not in _DECODER_SWEEPS:
        # 4 queries, 1 next token each, 10 distinct tokens, no common token: E = 0
        classes = make_classes(num_last=4, num_next_per_last=1, num_common=0, num_distinct=10)
        grid = [(e, s) for e in eta_y for s in seeds]
        run = train(classes, eta_y=[e for e, _ in grid], eta_z=1e-8, seeds=[s for _, s in grid],
                    steps=steps, batch=batch, T=T, momentum=0.0, path="support")
        _DECODER_SWEEPS[key] = DecoderSweep(classes, run, dict(zip(grid, run.loss)), steps)
    return _DECODER_SWEEPS[key]
