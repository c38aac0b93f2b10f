"""Training the Y/Z model: many independent runs as one batched tensor program (Sec. 8).

Each run r has its own eta_Y[r], eta_Z[r] and seed[r]. As in the authors' code, the
seed fixes both the initialisation and the stream of training batches, so runs that
share a seed (say, one point of a learning-rate grid) see the same data: one batch is
drawn per distinct seed and step, and every run of that seed trains on it.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np
import torch
from tqdm.auto import tqdm

from ._validate import positive, positive_int, resolve_device
from .data import SequenceClasses, sample_tokens, counts_from_tokens, sample_support, support_table
from .model import SupportYZ, YZModel

OPTIMIZERS = ("sgd", "adam")
PATHS = ("counts", "support", "tokens")
GRADS = ("lemma1", "autograd")


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
        if not 0 <= momentum < 1:
            raise ValueError(f"momentum must be in [0, 1), got {momentum!r}")
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


def lr_grid(eta_z, ratio, seeds):
    """Flattened grid (eta_y, eta_z, seed) over eta_Z x (eta_Y/eta_Z) x seeds."""
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
          dtype=torch.float32, device="auto", progress=False) -> TrainResult:
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
    ``progress`` is a bool or a tqdm bar to advance one tick per step.
    """
    if not isinstance(classes, SequenceClasses):
        raise ValueError(f"classes must be a SequenceClasses, got {type(classes).__name__}")
    steps = positive_int("steps", steps)
    batch = positive_int("batch size", batch)
    T = positive_int("T (sequence length)", T, minimum=2)
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"unknown optimizer {optimizer!r}: use one of {OPTIMIZERS}")
    if path not in PATHS:
        raise ValueError(f"unknown path {path!r}: use one of {PATHS}")
    dev = resolve_device(device)
    seed_arr = np.atleast_1d(np.asarray(seeds))
    R = max(seed_arr.size, np.size(eta_y), np.size(eta_z))
    if seed_arr.size == 1:
        seed_arr = np.full(R, seed_arr.item())
    if seed_arr.shape != (R,) or not np.issubdtype(seed_arr.dtype, np.integer):
        raise ValueError(f"seeds must be integers, one per run ({R}); got {seeds!r}")
    ey, ez = _per_run("eta_y", eta_y, R), _per_run("eta_z", eta_z, R)
    snaps = sorted({int(s) for s in snapshot_steps})
    for s in snaps:
        if not 0 <= s <= steps:
            raise ValueError(f"snapshot step {s} out of range [0, {steps}]")

    model = YZModel(classes.M, R, init=init, seeds=seed_arr.tolist(), normalize=normalize,
                    residual=residual, dtype=dtype, device=dev)
    uniq, group = np.unique(seed_arr, return_inverse=True)
    group_t = torch.as_tensor(group, device=dev)
    # One data stream per distinct seed, separate from the init draw (see init_yz).
    gens = [torch.Generator(device=dev).manual_seed(int(s) + 1_000_003) for s in uniq]
    probs = classes.torch_probs(dev)
    if grad not in GRADS:
        raise ValueError(f"unknown grad {grad!r}: use one of {GRADS}")
    if grad == "lemma1" and path == "tokens":
        raise ValueError("grad='lemma1' works on the counts path; use grad='autograd' with path='tokens'")
    if path == "support" and (grad != "lemma1" or residual):
        raise ValueError("path='support' computes Lemma 1's gradients without a residual: "
                         "use path='counts' for grad='autograd' or residual=True")

    losses = np.empty((R, steps))
    snapshots = {}
    bar = progress if hasattr(progress, "update") else tqdm(
        total=steps, disable=not progress, desc=f"training {R} runs", leave=False)
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
        if s in snaps:
            if path == "support":
                sup.store(model.Y.data, model.Z.data)
            snapshots[s] = model.Z.detach().cpu().clone()
        if path == "support":
            sb = sample_support(classes, batch, T, gens, table, dtype)
            if optimizer == "sgd":
                loss = sup.grads(sb.counts.log_(), sb.classes, group_t, lr_y.to(dtype), lr_z.to(dtype))
                sup.sgd_step(momentum, sgd_buffers)
            else:
                loss = sup.grads(sb.counts.log_(), sb.classes, group_t)
                opt.step()
            losses[:, s] = loss.cpu().double().numpy()
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
        bar.update(1)
    if bar is not progress:
        bar.close()
    if path == "support":
        sup.store(model.Y.data, model.Z.data)
    if steps in snaps:
        snapshots[steps] = model.Z.detach().cpu().clone()
    if not np.all(np.isfinite(losses)):
        r = int(np.argwhere(~np.isfinite(losses))[0][0])
        raise FloatingPointError(
            f"run {r} (eta_y={ey[r]}, eta_z={ez[r]}, seed={seed_arr[r]}) diverged: non-finite loss")
    return TrainResult(ey, ez, seed_arr, losses, model.Y.detach().cpu(), model.Z.detach().cpu(),
                       snapshots, dict(steps=steps, batch=batch, T=T, optimizer=optimizer, path=path,
                                       momentum=momentum, init=init, normalize=normalize,
                                       residual=residual, device=str(dev)))


# The WikiText trainers (Sec. 8, Figs. 7 and 10) live in scansnap.lm; imported here so that
# ``from scansnap.train import train_lm`` keeps working.
from .lm import LMResult, train_lm, train_lms  # noqa: E402,F401
