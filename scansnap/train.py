"""Training the Y/Z model: many independent runs as one batched tensor program (Sec. 8).

Each run r has its own eta_Y[r], eta_Z[r] and seed[r]. As in the authors' code, the
seed fixes both the initialisation and the stream of training batches, so runs that
share a seed (say, one point of a learning-rate grid) see the same data: one batch is
drawn per distinct seed and step, and every run of that seed trains on it.
"""
from __future__ import annotations

import collections
import itertools
import time
import warnings
from dataclasses import dataclass, field

import numpy as np
import torch
from tqdm.auto import tqdm

from ._cpu import keep_freed_memory, map_on_threads
from ._validate import positive, positive_int, resolve_device, seed as _seed, unit_interval
from .data import SequenceClasses, sample_tokens, counts_from_tokens, sample_support, support_table
from .model import SupportYZ, YZModel

OPTIMIZERS = ("sgd", "adam")
PATHS = ("counts", "support", "tokens")
GRADS = ("lemma1", "autograd")
MIN_RUNS_PER_WORKER = 8   # fewer runs a thread: the per-op overhead outweighs the second core
DIVERGED_FACTOR = 10.0   # a run whose loss is ever above 10 x max(first loss, ln M) has diverged (see train)
SATURATED_STEPS = 2      # a run whose loss is exactly 0 after at most 2 updates has saturated (see train)


class DivergenceWarning(UserWarning):
    """Some runs of a Y/Z training diverged (their loss rose far above where it started, at some step)
    or saturated (their loss was exactly 0 within ``SATURATED_STEPS`` updates): see :func:`train`."""


class BatchedOptimizer:
    """SGD with momentum, or Adam, with a learning rate per run.

    ``torch.optim`` takes one learning rate per parameter group; here the parameters are
    (R, M, M) stacks with a rate per slice. The update rules are PyTorch's own (SGD:
    dampening 0, no Nesterov, no weight decay; Adam: bias-corrected, eps outside the
    root); ``tests/test_train.py`` checks them against ``torch.optim`` to 1e-12.
    """

    def __init__(self, params_and_lrs, method="sgd", momentum=0.9, betas=(0.9, 0.999), eps=1e-8):
        if method not in OPTIMIZERS:
            raise ValueError(f"unknown optimizer {method!r}: use one of {OPTIMIZERS}")
        momentum = unit_interval("momentum", momentum)
        betas = _betas(betas)
        eps = positive("eps", eps)
        params_and_lrs = list(params_and_lrs)
        for i, (p, lr) in enumerate(params_and_lrs):
            if lr.dim() != 1 or lr.shape[0] != p.shape[0]:
                raise ValueError(f"parameter {i}: need one learning rate per run ({p.shape[0]}), "
                                 f"got shape {tuple(lr.shape)}")
            bad = ~(torch.isfinite(lr) & (lr > 0))
            if bad.any():
                r = int(bad.nonzero()[0, 0])
                raise ValueError(f"parameter {i}: learning rate of run {r} must be a positive number, "
                                 f"got {lr[r].item()!r}")
        self.method, self.momentum, self.betas, self.eps = method, momentum, betas, eps
        self.groups = [(p, lr.to(p.dtype).view(-1, *([1] * (p.dim() - 1))))
                       for p, lr in params_and_lrs]
        self.state = [dict(step=0, m=torch.zeros_like(p), v=torch.zeros_like(p),
                           d=torch.empty_like(p)) for p, _ in self.groups]

    @torch.no_grad()
    def step(self):
        for (p, lr), st in zip(self.groups, self.state):
            g = p.grad
            st["step"] += 1
            # in place throughout: fresh (R, M, M) temporaries cost more than the arithmetic
            if self.method == "sgd":
                if self.momentum:
                    st["m"].mul_(self.momentum).add_(g)
                    g = st["m"]
                p.addcmul_(lr, g, value=-1)
            else:
                b1, b2 = self.betas
                t = st["step"]
                st["m"].lerp_(g, 1 - b1)
                st["v"].mul_(b2).addcmul_(g, g, value=1 - b2)
                denom = torch.sqrt(st["v"], out=st["d"]).div_((1 - b2 ** t) ** 0.5).add_(self.eps)
                p.sub_(denom.reciprocal_().mul_(st["m"]).mul_(lr / (1 - b1 ** t)))

    def zero_grad(self):
        for p, _ in self.groups:
            p.grad = None


@dataclass(repr=False)
class TrainResult:
    """The history of R independent runs of :func:`train` (on the CPU, whatever device trained them).

    With R runs, K classes, M tokens and ``steps`` steps:

    - ``eta_y``, ``eta_z``: (R,) float, each run's rates; ``seed``: (R,) int.
    - ``loss``: (R, steps), the batch loss *before* update s: ``loss[:, 0]`` is the loss at the
      initial weights (ln M for ``init="zero"``), ``loss[:, -1]`` the loss before the last update.
    - ``Y``, ``Z``: (R, M, M) torch tensors after the last update (Y the decoder, Z the attention
      logits; row psi(n) of Z is class n's query row, Eq. 4).
    - ``snapshots``: {step: (R, M, M) Z after ``step`` updates} at the ``snapshot_steps`` asked
      for (0 = the initial Z; ``steps`` = the final Z).
    - ``config``: the settings (steps, batch, T, optimizer, momentum, init, path, grad, dtype as
      its name, e.g. ``"float32"``, ...; device).
    - ``diverged``: (R,) bool, runs whose loss rose above ``DIVERGED_FACTOR`` (10) x max(first loss,
      ln M) at some step, or that saturated (loss exactly 0 within ``SATURATED_STEPS`` (2)
      updates; see :func:`train`); their numbers are no result.
    - ``classes``: the :class:`~scansnap.data.SequenceClasses` trained on.
    - ``seconds``: the wall time :func:`train` took (what :meth:`save` records), or None.

    Read it with methods rather than by hand (``step=None``: the end; else a snapshot step):
    :meth:`attention` (R, K, M) c_n of Eq. 5; :meth:`class_entropy` (R, K) over each class's
    distinct tokens or support; :meth:`distinct_entropy` (R,) Fig. 6's metric; :meth:`common_mass`
    (R, K); :meth:`to_frame` a pandas DataFrame (per run or per class); :meth:`predict` the
    theory's prediction for these runs (:func:`scansnap.theory.predict`); :meth:`save` a CSV +
    provenance set, as the command line writes.
    """
    eta_y: np.ndarray            # (R,)
    eta_z: np.ndarray            # (R,)
    seed: np.ndarray             # (R,)
    loss: np.ndarray             # (R, steps): batch loss before update s
    Y: torch.Tensor              # (R, M, M) at the end
    Z: torch.Tensor              # (R, M, M) at the end
    snapshots: dict = field(default_factory=dict)  # step -> Z (R, M, M) after `step` updates
    config: dict = field(default_factory=dict)
    diverged: np.ndarray | None = None   # (R,) bool: runs that diverged (see train)
    classes: SequenceClasses | None = None
    seconds: float | None = None          # train()'s wall time

    @property
    def R(self) -> int:
        """The number of runs."""
        return len(self.seed)

    def __repr__(self):
        R, steps = self.loss.shape
        M = self.Z.shape[-1]
        shape = f"K={self.classes.K}, M={M}" if self.classes is not None else f"M={M}"
        cfg = self.config
        opt = cfg.get("optimizer", "?") + (f" (momentum {cfg['momentum']:g})" if cfg.get("optimizer") == "sgd" else "")
        div = int(np.sum(self.diverged)) if self.diverged is not None else 0
        line = DIVERGED_FACTOR * np.maximum(self.loss[:, 0], np.log(M))
        above = np.any(self.loss > line[:, None], axis=1)                 # the two causes of the one flag
        sat = int(np.sum(saturated(self.loss) & ~above & self.diverged)) if self.diverged is not None else 0
        return "\n".join([
            f"TrainResult: {R} run{'s' * (R != 1)} x {steps} steps of {opt}, init {cfg.get('init', '?')!r}, {shape}",
            f"  eta_y {_short(np.unique(self.eta_y))}; eta_z {_short(np.unique(self.eta_z))}; "
            f"seeds {_short(np.unique(self.seed))}",
            f"  median loss {np.median(self.loss[:, 0]):.4g} -> {np.median(self.loss[:, -1]):.4g}; "
            + (f"{div} diverged (loss ever above {DIVERGED_FACTOR:g}x its start)" if not sat else
               f"{div} flagged (diverged or saturated, see .diverged)")]
            + ([f"  of them {div - sat} diverged (loss ever above {DIVERGED_FACTOR:g}x its start), {sat} saturated "
                f"(loss exactly 0 within {SATURATED_STEPS} steps)"] if sat else []) + [
            f"  loss {tuple(self.loss.shape)}; Y, Z {tuple(self.Z.shape)}",
            f"  snapshots {{step: Z}} at {_short(sorted(self.snapshots), 'steps')}" if self.snapshots
            else "  snapshots: none (train(..., snapshot_steps=[...]))"])

    def select(self, runs) -> "TrainResult":
        """A TrainResult of the runs ``runs`` (indices or a boolean mask, in that order); its
        ``seconds`` stay those of the training that made them all."""
        idx = np.arange(self.R)[np.asarray(runs)]
        t = torch.as_tensor(idx, dtype=torch.long)
        return TrainResult(self.eta_y[idx], self.eta_z[idx], self.seed[idx], self.loss[idx], self.Y[t], self.Z[t],
                           {s: z[t] for s, z in self.snapshots.items()}, dict(self.config),
                           None if self.diverged is None else self.diverged[idx], self.classes, self.seconds)

    @staticmethod
    def concat(results) -> "TrainResult":
        """The runs of several TrainResults (same classes, steps and settings) as one, in order;
        ``seconds``: the sum of theirs (their trainings one after another)."""
        results = list(results)
        if not results:
            raise ValueError("concat needs at least one TrainResult")
        first = results[0]
        for r in results[1:]:
            same = {k: v for k, v in r.config.items() if k != "device"} == \
                   {k: v for k, v in first.config.items() if k != "device"}
            if not same or sorted(r.snapshots) != sorted(first.snapshots) or r.Z.shape[1:] != first.Z.shape[1:]:
                raise ValueError("concat: the results differ in their settings, snapshots or vocabulary")
        cat = lambda xs: np.concatenate(xs)
        div = None if any(r.diverged is None for r in results) else cat([r.diverged for r in results])
        secs = None if any(r.seconds is None for r in results) else float(sum(r.seconds for r in results))
        return TrainResult(cat([r.eta_y for r in results]), cat([r.eta_z for r in results]),
                           cat([r.seed for r in results]), cat([r.loss for r in results]),
                           torch.cat([r.Y for r in results]), torch.cat([r.Z for r in results]),
                           {s: torch.cat([r.snapshots[s] for r in results]) for s in first.snapshots},
                           dict(first.config), div, first.classes, secs)

    def _classes(self) -> SequenceClasses:
        if self.classes is None:
            raise ValueError("this TrainResult does not know its sequence classes (made by hand?): "
                             "set result.classes = the SequenceClasses it was trained on")
        return self.classes

    def Z_at(self, step=None) -> torch.Tensor:
        """Z (R, M, M) after ``step`` updates: the end (None) or one of the snapshot steps."""
        if step is None:
            return self.Z
        if step not in self.snapshots:
            raise ValueError(f"no snapshot at step {step!r}: this result has snapshots at {sorted(self.snapshots)} "
                             "(train(..., snapshot_steps=[...]) saves more)")
        return self.snapshots[step]

    def attention(self, step=None) -> np.ndarray:
        """(R, K, M): each class's long-sequence attention c_n (Eq. 5) over the M tokens, from
        row psi(n) of Z (after ``step`` updates; default the end). Rows sum to 1."""
        from .theory import attention_limit_all
        return attention_limit_all(self._classes(), self.Z_at(step).double().numpy())

    def class_entropy(self, over: str = "distinct", step=None) -> np.ndarray:
        """(R, K): the entropy of c_n over class n's distinct tokens (``over="distinct"``) or its
        whole support (``"support"``), renormalised (:func:`scansnap.metrics.class_entropy`)."""
        from .metrics import class_entropy
        return class_entropy(self._classes(), self.Z_at(step), over)

    def distinct_entropy(self, step=None) -> np.ndarray:
        """(R,): Fig. 6's metric, the distinct-token entropy averaged over the classes
        (:func:`scansnap.metrics.distinct_entropy`)."""
        from .metrics import distinct_entropy
        return distinct_entropy(self._classes(), self.Z_at(step))

    def common_mass(self, step=None) -> np.ndarray:
        """(R, K): the share of c_n on the common tokens (:func:`scansnap.metrics.common_mass`)."""
        from .metrics import common_mass
        return common_mass(self._classes(), self.Z_at(step))

    def to_frame(self, per: str = "run", step=None):
        """A pandas DataFrame: ``per="run"``, one row per run (rates, seed, first and last loss,
        diverged, and the class means of the entropies and the common mass); ``per="class"``,
        one row per (run, class) with each class's own values."""
        import pandas as pd
        if per not in ("run", "class"):
            raise ValueError(f"per must be 'run' or 'class', got {per!r}")
        classes = self._classes()
        has_distinct = bool(classes.distinct_mask.any(axis=1).all())
        cols = {"support_entropy": self.class_entropy("support", step), "common_mass": self.common_mass(step)}
        if has_distinct:
            cols = {"distinct_entropy": self.class_entropy("distinct", step), **cols}
        diverged = self.diverged if self.diverged is not None else np.zeros(self.R, bool)
        base = {"run": np.arange(self.R), "eta_y": self.eta_y, "eta_z": self.eta_z, "seed": self.seed,
                "loss_first": self.loss[:, 0], "loss_last": self.loss[:, -1], "diverged": diverged}
        # + 0.0: a loss or an entropy of exactly 0 (-log 1, -0 log 0) is -0.0, which prints "-0"
        base = {k: v + 0.0 if v.dtype.kind == "f" else v for k, v in base.items()}
        cols = {k: v + 0.0 for k, v in cols.items()}
        if per == "run":
            return pd.DataFrame({**base, **{k: v.mean(axis=1) + 0.0 for k, v in cols.items()}})
        K = classes.K
        rep = {k: np.repeat(v, K) for k, v in base.items() if k in ("run", "eta_y", "eta_z", "seed")}
        return pd.DataFrame({**rep, "class": np.tile(np.arange(K), self.R),
                             "query": np.tile(classes.query, self.R), "next_token": np.tile(classes.next_token, self.R),
                             **{k: v.ravel() for k, v in cols.items()}})

    def predict(self):
        """The theory's prediction for these runs (their rates, steps and momentum):
        :func:`scansnap.theory.predict`; ``.compare(result)`` sets the two side by side. The
        prediction starts from Y = Z = 0 (``init="zero"``); runs made with ``init="default"``
        start within 1/sqrt(M) of it. A run's top tokens can differ from the predicted winners not
        only where P(l|n) ties: also from such a random start, before the run has converged, or
        where the leading probabilities are close (:meth:`scansnap.theory.Prediction.compare`)."""
        from .theory import predict
        cfg = self.config
        if cfg.get("optimizer") != "sgd" or cfg.get("residual") or not cfg.get("normalize", True):
            raise ValueError("the theory's prediction is for SGD with LN and no residual; this result used "
                             f"optimizer={cfg.get('optimizer')!r}, normalize={cfg.get('normalize')}, "
                             f"residual={cfg.get('residual')}: a different dynamics, with no prediction"
                             + (" (Adam rescales each step: eta_y, eta_z are not the theory's rates)"
                                if cfg.get("optimizer") != "sgd" else "") + "; for the SGD one at these rates, "
                             "scansnap.theory.predict(result.classes, result.eta_y, result.eta_z, steps) beside "
                             "result.to_frame('class')")
        return predict(self._classes(), self.eta_y, self.eta_z, cfg["steps"], cfg["momentum"],
                       snapshot_steps=sorted(self.snapshots))

    def save(self, folder, name: str = "train") -> list:
        """Write this result as a result set in ``folder`` (made if missing), atomically, with
        its provenance record, as ``python -m scansnap reproduce`` writes a figure's:
        ``<name>.csv`` (one row per run, :meth:`to_frame`), ``<name>_classes.csv`` (per run and
        class), ``<name>_loss.csv`` (run, step, loss), ``<name>_attention.csv`` (run, step,
        class, token, c: c_n on each class's support at the end and at every snapshot),
        ``<name>_weights.npz`` (loss, Y, Z, snapshots: :meth:`load` reads the result back) and
        ``<name>.provenance.json`` (the settings, rates, seeds and classes; versions, device,
        date; ``seconds``, the training time; every file's sha256). Read the tables with
        ``scansnap.experiments.read_results(folder, paper=False)`` (``diverged`` comes back as
        a bool, whole-number columns as integers). Returns the paths written."""
        from ._save import save_set
        classes = self._classes()
        runs, classes_ = self.to_frame("run"), self.to_frame("class")
        fmt = lambda v: f"{v:.10g}" if isinstance(v, (float, np.floating)) else str(int(v)) if isinstance(
            v, (bool, np.bool_, int, np.integer)) else str(v)
        table = lambda df: (list(df.columns), [[fmt(v) for v in row] for row in df.itertuples(index=False)])
        R, steps = self.loss.shape
        loss_rows = [(r, s, f"{self.loss[r, s]:.10g}") for r in range(R) for s in range(steps)]
        att_rows = []
        for s in sorted(set(self.snapshots) | {steps}):
            c = self.attention(None if s == steps and s not in self.snapshots else s)
            for r in range(R):
                for n in range(classes.K):
                    att_rows += [(r, s, n, int(l), f"{c[r, n, l]:.10g}") for l in classes.support(n)]
        cfg = {k: v for k, v in self.config.items() if k != "device"}
        settings = dict(cfg, eta_y=self.eta_y.tolist(), eta_z=self.eta_z.tolist(), seeds=self.seed.tolist(),
                        snapshots=sorted(self.snapshots),
                        classes=dict(K=classes.K, M=classes.M, query=classes.query.tolist(),
                                     next_token=classes.next_token.tolist(), probs=classes.probs.tolist()))
        arrays = {"loss": np.asarray(self.loss), "Y": self.Y.detach().cpu().numpy(),
                  "Z": self.Z.detach().cpu().numpy(),
                  **{f"snapshot_{s}": z.detach().cpu().numpy() for s, z in self.snapshots.items()}}
        return save_set(folder, name, {name: table(runs), f"{name}_classes": table(classes_),
                                       f"{name}_loss": (["run", "step", "loss"], loss_rows),
                                       f"{name}_attention": (["run", "step", "class", "token", "c"], att_rows)},
                        settings, self.config.get("device", "cpu"), f"TrainResult.save({name!r})",
                        seconds=self.seconds, what_seconds="train()'s wall time",
                        arrays={f"{name}_weights": arrays})

    @staticmethod
    def load(folder, name: str = "train") -> "TrainResult":
        """The result :meth:`save` wrote as ``name`` in ``folder`` (str or Path), after checking
        every file its record lists (sha256), the record's own hash (naming an edited field where
        it can) and its settings against the CSVs. The same rates, seeds, ``loss``, ``Y``, ``Z``,
        ``snapshots`` (bit for bit), ``config``, ``diverged``, ``seconds`` (to the ms) and an equal
        ``classes`` (new; a layout outside Sec. 3.2: one ClassLayoutWarning per call). Not saved,
        so not restored: the optimiser's state (no training on from it) and the RNGs'."""
        import json

        from . import provenance
        from .data import SequenceClasses
        from .experiments import load_csv
        folder = provenance.results_folder(folder)
        rec_path = folder / f"{name}{provenance.SUFFIX}"
        if not rec_path.is_file():
            raise ValueError(f"{folder} holds no saved result {name!r} (no {rec_path.name}; "
                             f"{', '.join(sorted(p.name for p in folder.glob('*' + provenance.SUFFIX))) or 'no records'} "
                             "there): save one with result.save(folder, name)")
        records = provenance.read_records(folder)
        rec = records.get(f"{name}.csv")
        if rec is None or rec.get("figure") != name:
            raise ValueError(f"{rec_path} does not list {name}.csv: not a TrainResult.save set")
        weights = f"{name}_weights.npz"
        if weights not in rec["files"]:
            raise ValueError(f"{rec_path} lists no {weights} (saved before TrainResult.save kept the weights, or "
                             f"not a TrainResult set): Y and Z cannot be restored; {provenance.remake(rec, folder)}")
        for f in rec["files"]:
            if not (folder / f).is_file():
                raise ValueError(f"{folder / f} is missing, though its record {rec_path.name} lists it: an "
                                 f"incomplete set; {provenance.remake(rec, folder)}")
            provenance.verify(folder / f, records)
        tables = {f[:-4]: load_csv(folder / f) for f in rec["files"] if f.endswith(".csv")}
        provenance.check_saved_set(rec_path, rec, tables)   # the record's settings against the CSVs
        provenance.check_record_hash(rec_path, rec)
        st = dict(rec["settings"])
        with np.load(folder / weights, allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in npz.files}
        c = st.pop("classes")
        from .data import ClassLayoutWarning
        from .metrics import _stacklevel
        with warnings.catch_warnings():     # the layout warning once, from load, at the caller's line
            warnings.simplefilter("ignore", ClassLayoutWarning)
            classes = SequenceClasses(np.asarray(c["probs"], float), np.asarray(c["query"]), np.asarray(c["next_token"]))
        if classes.layout_issue() is not None:
            warnings.warn(f"TrainResult.load: the saved classes are outside the theory's layout: {classes.layout_issue()}",
                          ClassLayoutWarning, stacklevel=_stacklevel())
        eta_y, eta_z = np.asarray(st.pop("eta_y"), float), np.asarray(st.pop("eta_z"), float)
        seed = np.asarray(st.pop("seeds"), np.int64)
        snaps = st.pop("snapshots")
        if isinstance(st.get("betas"), list):
            st["betas"] = tuple(st["betas"])
        st["device"] = rec.get("device", "cpu")
        runs = tables[name]
        diverged = np.asarray(runs["diverged"], bool) if "diverged" in runs else None
        secs = rec.get("seconds")
        return TrainResult(eta_y, eta_z, seed, arrays["loss"], torch.from_numpy(arrays["Y"]),
                           torch.from_numpy(arrays["Z"]), {int(s): torch.from_numpy(arrays[f"snapshot_{s}"])
                                                           for s in snaps},
                           st, diverged, classes, None if secs is None else float(secs))


def _short(values, unit: str = "values") -> str:
    """[1, 5, 20] or, for more than 6 values, [0, 5, 10, ..., 100] (21 steps): a repr line that fits."""
    v = [f"{x:g}" if isinstance(x, (float, np.floating)) else str(x) for x in list(values)]
    if len(v) <= 6:
        return "[" + ", ".join(v) + "]"
    return "[" + ", ".join(v[:3]) + f", ..., {v[-1]}] ({len(v)} {unit})"


def _betas(betas):
    try:
        b1, b2 = betas
    except (TypeError, ValueError):
        raise ValueError(f"Adam betas must be a pair (beta1, beta2), got {betas!r}") from None
    return unit_interval("Adam beta1", b1), unit_interval("Adam beta2", b2)


def _grid_axis(name, values, kind):
    # a list keeps Python ints exact: as an array, 2**64 - 1 would be a uint64 (then -1 in the grid)
    vals = list(values) if isinstance(values, (list, tuple, range)) else np.atleast_1d(np.asarray(values)).tolist()
    if not vals:
        raise ValueError(f"lr_grid: {name} is empty")
    if kind == "rate":
        vals = [positive(f"lr_grid: {name}", v) for v in vals]
    else:
        vals = [_seed(f"lr_grid: {name}", v) for v in vals]
    counts = collections.Counter(vals)                 # linear: a long list must not take minutes
    dup = sorted(v for v, c in counts.items() if c > 1)
    if dup:
        raise ValueError(f"lr_grid: {name} has duplicates {dup}: a repeated value repeats runs "
                         "(and a repeated seed silently shrinks the error bars)")
    return vals


def lr_grid(eta_z, ratio=None, seeds=0, *, eta_y=None):
    """The runs of a learning-rate grid x seeds, flattened for :func:`train`: three (R,) arrays
    (eta_y, eta_z, seed), R = (number of eta_Z) x (number of ratios or eta_Y) x (number of seeds).

    Give the attention rates ``eta_z`` and either ``ratio`` (eta_Y = ratio x eta_Z, the paper's
    Fig. 6 axes) or ``eta_y`` (every eta_Y with every eta_Z). Rows run eta_Z slowest and seeds
    fastest. Every axis must be non-empty with distinct values (rates positive, seeds integers)::

        eta_y, eta_z, seeds = lr_grid(eta_z=[0.5, 2.0], ratio=[1, 10], seeds=[1, 2, 3])   # (12,) each
        res = train(classes, eta_y=eta_y, eta_z=eta_z, seeds=seeds)
        res.to_frame().groupby(["eta_z", "eta_y"]).distinct_entropy.agg(["mean", "sem"])
    """
    if (ratio is None) == (eta_y is None):
        raise ValueError("lr_grid: give either ratio (eta_Y = ratio x eta_Z) or eta_y, not "
                         + ("both" if ratio is not None else "neither"))
    eta_z = _grid_axis("eta_z", eta_z, "rate")
    second = _grid_axis("ratio" if eta_y is None else "eta_y", ratio if eta_y is None else eta_y, "rate")
    seeds = _grid_axis("seeds", seeds, "seed")
    rows = [(r * z if eta_y is None else r, z, s) for z, r, s in itertools.product(eta_z, second, seeds)]
    ey, ez, sd = (np.array(c) for c in zip(*rows))
    return ey.astype(float), ez.astype(float), sd.astype(int)


def _runs_count(**given) -> int:
    """R, the number of runs: the length every per-run argument that is not a scalar shares.
    Lengths that disagree are a ValueError naming each (not a complaint about one of them)."""
    sizes = {k: np.size(v) for k, v in given.items()}
    lengths = {k: n for k, n in sizes.items() if n != 1}
    if len(set(lengths.values())) > 1:
        said = ", ".join(f"{k} has {n}" for k, n in lengths.items())
        raise ValueError(f"the per-run lengths disagree: {said}; give each one value per run (the same "
                         "length) or a single value for every run (lr_grid builds a grid of rates x seeds)")
    return max(sizes.values())


def _per_run(name, value, R):
    a = np.atleast_1d(np.asarray(value, dtype=float))
    if a.size == 1:
        a = np.full(R, a.item())
    if a.shape != (R,):
        raise ValueError(f"{name} must be a scalar or have one value per run ({R}); got shape {a.shape}")
    for v in a:
        positive(name, v)
    return a


def train(classes: SequenceClasses, *, eta_y=1.0, eta_z=1.0, seeds=0, steps: int = 100,
          batch: int = 128, T: int = 128, optimizer: str = "sgd", momentum: float = 0.9,
          betas=(0.9, 0.999), init: str = "zero", normalize: bool = True,
          residual: bool = False, path: str = "counts", grad: str = "lemma1", snapshot_steps=(),
          dtype=torch.float32, device=None, progress=False, workers=None) -> TrainResult:
    """Train R = len(seeds) (or len(eta_y), len(eta_z)) independent Y/Z models; returns a
    :class:`TrainResult` (its fields, shapes and methods: ``help(TrainResult)``).

    Each step draws ``batch`` fresh sequences of length ``T`` (T-1 contextual tokens and
    the query) per distinct seed, and takes one step of ``optimizer`` on the batch-mean
    cross-entropy with rates eta_Y (for Y) and eta_Z (for Z). ``path`` picks where the
    forward pass runs: ``counts`` (the default: token counts over all M tokens), ``support``
    (Lemma 1 on each class's support tokens only, ~20 of M: several times faster for large
    sweeps over large vocabularies, such as Fig. 6's; no residual) or ``tokens`` (the
    sequences). All draw the same batches (on a CPU) and give the same numbers up to the
    order of summation (``tests/test_fast_paths.py``; in float32 about 1e-7 relative).
    ``grad`` picks Lemma 1's closed-form gradients (counts and support paths) or autograd.
    ``init``: ``"zero"`` (the default: Y = Z = 0, the theory's start and Figs. 4-5's) or
    ``"default"`` (PyTorch's ``nn.Linear`` default, U(-1/sqrt(M), 1/sqrt(M)) from each run's
    seed, as the authors' code for the Syn-Medium sweep of Figs. 6, 11, 12: "default" names
    nn.Linear's init, not this function's default). ``momentum``: SGD's (0.9, the paper's);
    the theory's clock counts plain-SGD steps: see ``scansnap.theory.transition_time``.
    ``snapshot_steps``: steps s at which Z is kept (after s updates; 0 = the start).
    ``progress`` is a bool or a tqdm bar to advance one tick per step. ``device=None`` is
    the package's default device (see :mod:`scansnap.book`: the CPU in the chapters).
    ``workers``: on a CPU, the runs are split into this many sets trained side by side in
    threads, one torch thread each (default with ``grad='lemma1'``: one per torch thread, at
    most one per ``MIN_RUNS_PER_WORKER`` runs; 1 on a GPU or with autograd). Each set draws its
    seeds' batches from its own generators, so with Lemma 1 the split changes no bit; with
    autograd, the last bits (``tests/test_fast_paths.py``).

    Two runs with the same (eta_y, eta_z, seed) would be the same run twice (and would
    shrink error bars): that is a ValueError.

    Divergence: a NaN or inf loss raises ``FloatingPointError`` naming the first such run.
    A run whose loss stays finite but rises, at any step, above ``DIVERGED_FACTOR`` (10) x
    max(its first loss, ln M) (ln M: the loss of guessing uniformly, Y = 0) has diverged, even
    if its loss falls back later: at absurd rates one step throws Y and Z to ~1e13, the softmax
    saturates and the batch loss then reads exactly 0, which is no convergence. Such runs are
    reported, not hidden: a :class:`DivergenceWarning` names every one, its rates and seed and
    the first step its loss crossed that line, and ``TrainResult.diverged`` marks them (the
    command line refuses to make a figure of them, by the same flag). A warning rather than an
    error, so one absurd rate does not throw away the rest of a sweep; its numbers are still
    no result. The book's runs (Figs. 4-6's and chapter 5's rates, up to eta_Y = 30 with
    momentum 0.9) never rise above their first loss.

    Saturation counts the same way (one flag, ``diverged``, one warning): a run whose batch loss
    is exactly 0 after at most ``SATURATED_STEPS`` (2) updates. At an absurd eta_Y (1e5, say)
    the first step throws Y to ~1e8, the decoder's softmax saturates (the loss reads exactly 0
    in float32), and the attention's gradient, which passes through the decoder's error
    (Lemma 1, Eq. 6: gamma = 0 once the prediction is one-hot), is exactly 0: Z never moves, and
    its entropies are those of Z = 0, which says nothing about the scan. Ordinary runs reach a
    loss of exactly 0 too, later (float32 underflow once a class's logit gap passes ~17: at
    eta_Y = 5, eta_Z = 2 after ~10 steps); that is convergence, not saturation, and is not
    flagged. No run of the book saturates (``tests/test_research_saturation.py``).
    """
    if not isinstance(classes, SequenceClasses):
        raise ValueError(f"classes must be a SequenceClasses, got {type(classes).__name__}")
    steps = positive_int("steps", steps)
    batch = positive_int("batch size", batch)
    T = positive_int("T (sequence length)", T, minimum=2)
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"unknown optimizer {optimizer!r}: use one of {OPTIMIZERS}")
    momentum = unit_interval("momentum", momentum)
    betas = _betas(betas)
    if path not in PATHS:
        raise ValueError(f"unknown path {path!r}: use one of {PATHS}")
    if grad not in GRADS:
        raise ValueError(f"unknown grad {grad!r}: use one of {GRADS}")
    if grad == "lemma1" and path == "tokens":
        raise ValueError("grad='lemma1' works on the counts path; use grad='autograd' with path='tokens'")
    if path == "support" and (grad != "lemma1" or residual):
        raise ValueError("path='support' computes Lemma 1's gradients without a residual: "
                         "use path='counts' for grad='autograd' or residual=True")
    if not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
        raise ValueError(f"dtype must be a floating torch dtype (torch.float32, torch.float64), got {dtype!r}")
    dev = resolve_device(device)
    t_start = time.perf_counter()
    seed_arr = np.atleast_1d(np.asarray(seeds))
    if seed_arr.dtype == object or seed_arr.dtype == np.uint64:   # past int64: named, never wrapped
        seed_arr = np.array([_seed("seed", v) for v in seed_arr.ravel().tolist()], dtype=np.int64)
    R = _runs_count(seeds=seed_arr, eta_y=eta_y, eta_z=eta_z)
    if seed_arr.size == 1:
        seed_arr = np.full(R, seed_arr.item())
    if seed_arr.shape != (R,) or not np.issubdtype(seed_arr.dtype, np.integer):
        raise ValueError(f"seeds must be integers, one per run ({R}); got {seeds!r}")
    ey, ez = _per_run("eta_y", eta_y, R), _per_run("eta_z", eta_z, R)
    _no_duplicate_runs(ey, ez, seed_arr)
    snaps = sorted({positive_int("snapshot step", s, minimum=0) for s in snapshot_steps})
    for s in snaps:
        if not 0 <= s <= steps:
            raise ValueError(f"snapshot step {s} out of range [0, {steps}]")

    workers = _workers(workers, R, dev, grad)
    if dev.type == "cpu":
        keep_freed_memory()
    cfg = dict(steps=steps, batch=batch, T=T, optimizer=optimizer, momentum=momentum, betas=betas,
               init=init, normalize=normalize, residual=residual, path=path, grad=grad, snaps=snaps,
               dtype=dtype, dev=dev)
    bar = progress if hasattr(progress, "update") else tqdm(
        total=steps, disable=not progress, desc=f"training {R} runs", leave=False)
    chunks = _chunks(seed_arr, workers)
    if len(chunks) == 1:
        parts = [_train_runs(classes, ey, ez, seed_arr, bar=bar, **cfg)]
    else:
        # Independent runs on the CPU's cores, one torch thread per set of runs. Each set
        # draws its seeds' batches from its own generators, so a run's numbers do not depend
        # on the split; an error in one set (or a Ctrl-C) stops the others at their next step.
        parts = map_on_threads(lambda i, stop: _train_runs(classes, ey[chunks[i]], ez[chunks[i]], seed_arr[chunks[i]],
                                                           bar=bar if i == 0 else None, stop=stop, **cfg),
                               range(len(chunks)), len(chunks))
    if bar is not progress:
        bar.close()
    losses, Y, Z, snapshots = _merge(chunks, parts, R)
    losses = losses + 0.0    # a loss of exactly 0 (-log 1 in float32) is -0.0, which prints "-0"
    if not np.all(np.isfinite(losses)):
        r, s = (int(i) for i in np.argwhere(~np.isfinite(losses))[0])
        raise FloatingPointError(
            f"run {r} (eta_y={ey[r]:g}, eta_z={ez[r]:g}, seed={seed_arr[r]}) diverged: "
            f"non-finite loss at step {s}")
    diverged = _divergence_report(losses, classes.M, ey, ez, seed_arr)
    return TrainResult(ey, ez, seed_arr, losses, Y, Z, snapshots,
                       dict(steps=steps, batch=batch, T=T, optimizer=optimizer, path=path,
                            momentum=momentum, betas=betas, init=init, normalize=normalize,
                            residual=residual, grad=grad, dtype=str(dtype).replace("torch.", ""),
                            device=str(dev)),
                       diverged, classes, time.perf_counter() - t_start)


def _workers(workers, R, dev, grad) -> int:
    """How many threads train the runs: on a CPU with Lemma 1's gradients, one per torch
    thread (at most one per MIN_RUNS_PER_WORKER runs); else one. On a GPU a step is one
    stream of kernels; with autograd the split moves the last bits (its reductions follow
    the thread count), and the book's stored outputs are bit-for-bit."""
    if workers is None:
        if dev.type != "cpu" or grad != "lemma1":
            return 1
        return max(1, min(torch.get_num_threads(), R // MIN_RUNS_PER_WORKER))
    return positive_int("workers", workers)


def _chunks(seeds: np.ndarray, workers: int) -> list:
    """Split the runs into at most ``workers`` lists of run indices of near-equal size,
    keeping the runs of one seed together where that costs no balance (they share batches)."""
    R = len(seeds)
    workers = min(workers, R)
    if workers == 1:
        return [np.arange(R)]
    order = np.argsort(seeds, kind="stable")     # runs of a seed adjacent
    bounds = np.linspace(0, R, workers + 1).round().astype(int)
    return [np.sort(order[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]


def _merge(chunks, parts, R):
    """The chunks' (losses, Y, Z, snapshots) put back in run order."""
    if len(parts) == 1:
        return parts[0]
    steps = parts[0][0].shape[1]
    losses = np.empty((R, steps))
    Y = torch.empty((R,) + tuple(parts[0][1].shape[1:]), dtype=parts[0][1].dtype)
    Z = torch.empty_like(Y)
    snapshots = {s: torch.empty_like(Z) for s in parts[0][3]}
    for c, (l, y, z, snaps) in zip(chunks, parts):
        idx = torch.as_tensor(c)
        losses[c] = l
        Y[idx], Z[idx] = y, z
        for s, zs in snaps.items():
            snapshots[s][idx] = zs
    return losses, Y, Z, snapshots


def _train_runs(classes, ey, ez, seed_arr, *, steps, batch, T, optimizer, momentum, betas, init,
                normalize, residual, path, grad, snaps, dtype, dev, bar, stop=None):
    """The training loop of :func:`train` for one set of runs (validated arguments); returns
    (losses (R, steps), Y, Z, snapshots) on the CPU. ``bar``: a tqdm bar to advance, or None;
    ``stop``: a threading.Event that ends the loop early (another set failed), or None."""
    R = len(seed_arr)
    model = YZModel(classes.M, R, init=init, seeds=seed_arr.tolist(), normalize=normalize,
                    residual=residual, dtype=dtype, device=dev)
    uniq, group = np.unique(seed_arr, return_inverse=True)
    group_t = torch.as_tensor(group, device=dev)
    # One data stream per distinct seed, separate from the init draw (see init_yz).
    gens = [torch.Generator(device=dev).manual_seed(int(s) + 1_000_003) for s in uniq]
    probs = classes.torch_probs(dev)

    losses = np.empty((R, steps))
    snapshots = {}
    # the state the loop needs: the optimizer over (Y, Z), or over the packed rows of the support path
    lr_y, lr_z = torch.as_tensor(ey, device=dev), torch.as_tensor(ez, device=dev)
    if path == "support":
        table = support_table(classes, device=dev)
        sup = SupportYZ(model, classes, table)
        sgd_buffers = []   # SGD folds the rates into the gradients (SupportYZ.sgd_step); Adam cannot
        opt = None if optimizer == "sgd" else BatchedOptimizer(
            [(sup.Ys, lr_y), (sup.Yo, lr_y), (sup.Za, lr_z)], optimizer, momentum, betas)
    else:
        opt = BatchedOptimizer([(model.Y, lr_y), (model.Z, lr_z)], optimizer, momentum, betas)
        buf = {}
        logc_runs = torch.empty(R, batch, classes.M, dtype=dtype, device=dev)
    for s in range(steps):
        if stop is not None and stop.is_set():
            return None
        if s in snaps:
            if path == "support":
                sup.store(model.Y.data, model.Z.data)
            snapshots[s] = model.Z.detach().cpu().clone()
        if path == "support":
            sb = sample_support(classes, batch, T, gens, table, dtype)
            if optimizer == "sgd":
                loss = sup.grads(sb.counts, sb.classes, group_t, lr_y.to(dtype), lr_z.to(dtype))
                sup.sgd_step(momentum, sgd_buffers)
            else:
                loss = sup.grads(sb.counts, sb.classes, group_t)
                opt.step()
            losses[:, s] = loss.cpu().double().numpy()
            if bar is not None:
                bar.update(1)
            continue
        draws = [sample_tokens(classes, batch, T, g, probs) for g in gens]
        tokens = torch.stack([d.tokens for d in draws])            # (S, B, T), S seeds
        labels = torch.stack([d.labels for d in draws])[group_t]   # (R, B)
        query = tokens[group_t, :, -1]
        opt.zero_grad()
        if grad == "lemma1":
            logc = counts_from_tokens(tokens, classes.M, dtype).log_()
            torch.index_select(logc, 0, group_t, out=logc_runs)
            loss = model.lemma1_grads(logc_runs, query, labels, buf)
        else:
            if path == "counts":
                out = model.forward_counts(counts_from_tokens(tokens, classes.M, dtype)[group_t], query)
            else:
                out = model.forward_tokens(tokens[group_t])
            loss = model.loss(out, labels)
            loss.sum().backward()
        opt.step()
        losses[:, s] = loss.detach().cpu().double().numpy()
        if bar is not None:
            bar.update(1)
    if path == "support":
        sup.store(model.Y.data, model.Z.data)
    if steps in snaps:
        snapshots[steps] = model.Z.detach().cpu().clone()
    return losses, model.Y.detach().cpu(), model.Z.detach().cpu(), snapshots


def _no_duplicate_runs(ey, ez, seeds):
    seen = {}
    for r, key in enumerate(zip(ey.tolist(), ez.tolist(), seeds.tolist())):
        if key in seen:
            raise ValueError(
                f"runs {seen[key]} and {r} are the same run (eta_y={key[0]:g}, eta_z={key[1]:g}, "
                f"seed={key[2]}): a duplicate adds no information and shrinks error bars")
        seen[key] = r


def saturated(losses) -> np.ndarray:
    """(R,) bool: runs whose batch loss is exactly 0 after at most ``SATURATED_STEPS`` updates
    (``losses[:, 1:SATURATED_STEPS + 1]``; ``losses[:, 0]`` is the loss before any update): the
    decoder's softmax saturated at once, so the attention gets no gradient (see :func:`train`)."""
    losses = np.asarray(losses)
    return np.any(losses[:, 1:SATURATED_STEPS + 1] == 0, axis=1)


def _divergence_report(losses, M, ey, ez, seeds):
    """Runs whose loss rises above DIVERGED_FACTOR x max(first loss, ln M) at some step, or is
    exactly 0 within SATURATED_STEPS updates (:func:`saturated`): warn naming each; return the
    mask (R,)."""
    line = DIVERGED_FACTOR * np.maximum(losses[:, 0], np.log(M))
    above = losses > line[:, None]
    sat = saturated(losses)
    diverged = above.any(axis=1) | sat
    if diverged.any():
        runs = np.flatnonzero(diverged)
        blown = above.any(axis=1)
        how = lambda r: (f"from step {int(np.argmax(above[r]))}" if blown[r] else
                         f"saturated, loss exactly 0 from step {int(np.argmax(losses[r, 1:] == 0)) + 1}")
        shown = "; ".join(f"run {r} (eta_y={ey[r]:g}, eta_z={ez[r]:g}, seed={seeds[r]}) {how(r)}" for r in runs[:10])
        more = f"; and {len(runs) - 10} more" if len(runs) > 10 else ""
        why = (f"saturated (loss exactly 0 within {SATURATED_STEPS} updates: the decoder's softmax saturated at once, "
               "so the attention Z got no gradient)")
        if blown.any():
            why = (f"diverged (loss above {DIVERGED_FACTOR:g} x max(initial loss, ln M) at some step; worst "
                   f"{losses[runs].max():.3g})" + (f" or {why}" if (sat & ~blown).any() else ""))
        warnings.warn(f"{len(runs)} of {len(ey)} runs {why}: {shown}{more}. "
                      "Their numbers are no result; lower the learning rates.",
                      DivergenceWarning, stacklevel=3)
    return diverged


# The WikiText trainers (Sec. 8, Figs. 7 and 10) live in scansnap.lm; imported here so that
# ``from scansnap.train import train_lm`` keeps working.
from .lm import LMResult, train_lm, train_lms  # noqa: E402,F401
