"""Training the Y/Z model: many independent runs as one batched tensor program (Sec. 8).

Each run r has its own eta_Y[r], eta_Z[r] and seed[r]. As in the authors' code, the
seed fixes both the initialisation and the stream of training batches, so runs that
share a seed (say, one point of a learning-rate grid) see the same data: one batch is
drawn per distinct seed and step, and every run of that seed trains on it.
"""
from __future__ import annotations

import collections
import itertools
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
DIVERGED_FACTOR = 10.0   # a run ending above 10 x max(first loss, ln M) has diverged (see train)


class DivergenceWarning(UserWarning):
    """Some runs of a Y/Z training diverged (their loss ended far above where it started)."""


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


@dataclass
class TrainResult:
    """The history of R runs. Arrays are on the CPU."""
    eta_y: np.ndarray            # (R,)
    eta_z: np.ndarray            # (R,)
    seed: np.ndarray             # (R,)
    loss: np.ndarray             # (R, steps): batch loss before update s
    Y: torch.Tensor              # (R, M, M) at the end
    Z: torch.Tensor              # (R, M, M) at the end
    snapshots: dict = field(default_factory=dict)  # step -> Z (R, M, M) after `step` updates
    config: dict = field(default_factory=dict)
    diverged: np.ndarray | None = None   # (R,) bool: runs that diverged (see train)


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


def lr_grid(eta_z, ratio, seeds):
    """Flattened grid (eta_y, eta_z, seed) over eta_Z x (eta_Y/eta_Z) x seeds, eta_Y = ratio * eta_Z.

    Rows run eta_Z slowest and seeds fastest. Every axis must be non-empty with distinct
    values (rates positive, seeds integers).
    """
    eta_z = _grid_axis("eta_z", eta_z, "rate")
    ratio = _grid_axis("ratio", ratio, "rate")
    seeds = _grid_axis("seeds", seeds, "seed")
    rows = [(r * z, z, s) for z, r, s in itertools.product(eta_z, ratio, seeds)]
    ey, ez, sd = (np.array(c) for c in zip(*rows))
    return ey.astype(float), ez.astype(float), sd.astype(int)


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
    """Train R = len(seeds) (or len(eta_y), len(eta_z)) independent Y/Z models.

    Each step draws ``batch`` fresh sequences of length ``T`` (T-1 contextual tokens and
    the query) per distinct seed, and takes one step of ``optimizer`` on the batch-mean
    cross-entropy with rates eta_Y (for Y) and eta_Z (for Z). ``path`` picks where the
    forward pass runs: ``counts`` (the default: token counts over all M tokens), ``support``
    (Lemma 1 on each class's support tokens only, ~20 of M: several times faster for large
    sweeps over large vocabularies, such as Fig. 6's; no residual) or ``tokens`` (the
    sequences). All draw the same batches (on a CPU) and give the same numbers up to the
    order of summation (``tests/test_fast_paths.py``; in float32 about 1e-7 relative).
    ``grad`` picks Lemma 1's closed-form gradients (counts and support paths) or autograd.
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
    A run whose loss stays finite but ends far above where it started (the mean of the last
    tenth of its steps above ``DIVERGED_FACTOR`` x max(its first loss, ln M), the loss of
    guessing uniformly) is reported, not hidden: a :class:`DivergenceWarning` names every
    such run, its rates and seed and the first step its loss crossed that line, and
    ``TrainResult.diverged`` marks them. A warning rather than an error, so one absurd
    rate does not throw away the rest of a sweep; its numbers are still no result.
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
    seed_arr = np.atleast_1d(np.asarray(seeds))
    if seed_arr.dtype == object or seed_arr.dtype == np.uint64:   # past int64: named, never wrapped
        seed_arr = np.array([_seed("seed", v) for v in seed_arr.ravel().tolist()], dtype=np.int64)
    R = max(seed_arr.size, np.size(eta_y), np.size(eta_z))
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
    if not np.all(np.isfinite(losses)):
        r, s = (int(i) for i in np.argwhere(~np.isfinite(losses))[0])
        raise FloatingPointError(
            f"run {r} (eta_y={ey[r]:g}, eta_z={ez[r]:g}, seed={seed_arr[r]}) diverged: "
            f"non-finite loss at step {s}")
    diverged = _divergence_report(losses, classes.M, ey, ez, seed_arr)
    return TrainResult(ey, ez, seed_arr, losses, Y, Z, snapshots,
                       dict(steps=steps, batch=batch, T=T, optimizer=optimizer, path=path,
                            momentum=momentum, betas=betas, init=init, normalize=normalize,
                            residual=residual, device=str(dev)),
                       diverged)


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


def _divergence_report(losses, M, ey, ez, seeds):
    """Runs whose loss ends far above where it started: warn naming each; return the mask (R,)."""
    steps = losses.shape[1]
    line = DIVERGED_FACTOR * np.maximum(losses[:, 0], np.log(M))
    tail = losses[:, steps - max(1, steps // 10):].mean(axis=1)
    diverged = tail > line
    if diverged.any():
        runs = np.flatnonzero(diverged)
        first = [int(np.argmax(losses[r] > line[r])) for r in runs]
        shown = "; ".join(f"run {r} (eta_y={ey[r]:g}, eta_z={ez[r]:g}, seed={seeds[r]}) from step {s}"
                          for r, s in list(zip(runs, first))[:10])
        more = f"; and {len(runs) - 10} more" if len(runs) > 10 else ""
        warnings.warn(f"{len(runs)} of {len(ey)} runs diverged (loss above {DIVERGED_FACTOR:g} x "
                      f"max(initial loss, ln M) at the end; worst {tail[runs].max():.3g}): {shown}{more}. "
                      "Their numbers are no result; lower the learning rates.",
                      DivergenceWarning, stacklevel=3)
    return diverged


# The WikiText trainers (Sec. 8, Figs. 7 and 10) live in scansnap.lm; imported here so that
# ``from scansnap.train import train_lm`` keeps working.
from .lm import LMResult, train_lm, train_lms  # noqa: E402,F401
