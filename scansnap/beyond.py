"""Sec. 7's extensions of the Y/Z model, for the chapter "Beyond the paper".

``ExtendedYZ`` is Eq. 1-2 in the (Y, Z) variables (as ``YZModel``) with what the paper's
analysis leaves out, each switchable:

- ``heads=H``: H attention heads, each with its own Z_h (M x M) and its own random initial
  value ("initial value as prior", Sec. 5); the decoder reads the concatenated LN(c_h);
- ``pos="linear"``: a learned relative linear bias on the attention logits, one slope per
  (head, query token): z_{m,x_t} + s_m (t - T) / T (T5 / ALiBi style, Sec. 7);
  ``pos="sinusoidal"``: z_{m,x_t} + w_m . p(T - t), with p the sinusoidal features of the
  relative distance and w_m learned;
- ``residual=True``: LN(LN(c) + x_T), Sec. 7's residual connection as the paper writes it
  (``YZModel(residual=True)`` is the authors' code, LN(c + x_T)).

Trained with autograd (``fit``): these are experiments, not the paper's batched sweeps.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from ._validate import positive, positive_int
from .data import SequenceClasses, sample_tokens
from .model import sinusoidal_encoding

POSITIONAL = (None, "linear", "sinusoidal")


class ExtendedYZ(nn.Module):
    def __init__(self, M: int, *, heads: int = 1, pos: str | None = None, residual: bool = False,
                 init_std: float = 0.0, seed: int = 0, pos_dim: int = 16):
        super().__init__()
        self.M = positive_int("M (vocabulary size)", M, minimum=2)
        self.heads = positive_int("heads", heads)
        if pos not in POSITIONAL:
            raise ValueError(f"unknown positional encoding {pos!r}: use one of {POSITIONAL}")
        if init_std < 0:
            raise ValueError(f"init_std must be >= 0, got {init_std!r}")
        self.pos, self.residual, self.pos_dim = pos, bool(residual), positive_int("pos_dim", pos_dim)
        g = torch.Generator().manual_seed(int(seed))
        self.Y = nn.Parameter(torch.zeros(self.heads * M, M))
        self.Z = nn.Parameter(init_std * torch.randn(self.heads, M, M, generator=g))
        if pos == "linear":
            self.slope = nn.Parameter(torch.zeros(self.heads, M))
        elif pos == "sinusoidal":
            self.w_pos = nn.Parameter(torch.zeros(self.heads, M, pos_dim))

    def attention(self, tokens: torch.Tensor) -> torch.Tensor:
        """b: (B, H, T-1), the query's attention over the contextual positions (Eq. 1 + bias)."""
        if tokens.dim() != 2 or tokens.shape[1] < 2:
            raise ValueError(f"tokens must be (batch, T) with T >= 2, got shape {tuple(tokens.shape)}")
        if int(tokens.min()) < 0 or int(tokens.max()) >= self.M:
            bad = tokens[(tokens < 0) | (tokens >= self.M)][0].item()
            raise ValueError(f"token id {bad} out of range [0, {self.M})")
        ctx, q = tokens[:, :-1], tokens[:, -1]
        T1 = ctx.shape[1]
        H = self.heads
        logits = self.Z[:, q].gather(2, ctx[None].expand(H, -1, -1))         # (H, B, T-1): z_{q, x_t}
        if self.pos == "linear":
            rel = (torch.arange(T1, dtype=logits.dtype) - T1) / T1             # (t - T)/T in [-1, 0)
            logits = logits + self.slope[:, q][..., None] * rel
        elif self.pos == "sinusoidal":
            p = sinusoidal_encoding(T1 + 1, self.pos_dim)[1:].flip(0)       # row t: features of T - t
            logits = logits + torch.einsum("hbd,td->hbt", self.w_pos[:, q], p.to(logits.dtype))
        return logits.softmax(-1).permute(1, 0, 2)

    def forward(self, tokens: torch.Tensor):
        """(logits (B, M), c (B, H, M), b (B, H, T-1)): c_h = X^T b_h, the attention mass per token
        of head h, and b_h its attention over positions."""
        b = self.attention(tokens)                                              # (B, H, T-1)
        idx = tokens[:, None, :-1].expand(-1, self.heads, -1)
        c = torch.zeros(*b.shape[:2], self.M, dtype=b.dtype).scatter_add(2, idx, b)  # X^T b per head
        f = F.normalize(c, dim=-1)
        if self.residual:
            f = F.normalize(f + F.one_hot(tokens[:, -1], self.M).to(f.dtype)[:, None], dim=-1)
        return f.reshape(len(tokens), -1) @ self.Y, c, b


@dataclass
class FitResult:
    model: ExtendedYZ
    losses: np.ndarray
    snapshots: dict = field(default_factory=dict)   # step -> c per class: (K, H, M), mean over a probe batch
    positions: dict = field(default_factory=dict)   # step -> attention over positions per class: (K, H, T-1)


def sample(classes: SequenceClasses, batch: int, T: int, generator: torch.Generator, noise_prefix: float = 0.0):
    """``sample_tokens``, optionally with position-dependent data: the first ``noise_prefix``
    fraction of the contextual positions is redrawn uniformly from the common tokens (which
    carry no information about the class), so the class shows only in the recent positions."""
    if not 0.0 <= noise_prefix < 1.0:
        raise ValueError(f"noise_prefix must be in [0, 1), got {noise_prefix!r}")
    b = sample_tokens(classes, batch, T, generator=generator)
    k = int(noise_prefix * (T - 1))
    if k:
        common = torch.as_tensor(classes.common_tokens)
        if len(common) == 0:
            raise ValueError("noise_prefix needs common tokens (tokens shared by several classes)")
        b.tokens[:, :k] = common[torch.randint(len(common), (batch, k), generator=generator)]
    return b


def class_attention(model: ExtendedYZ, classes: SequenceClasses, *, T: int = 128, per_class: int = 64,
                    seed: int = 10_000, noise_prefix: float = 0.0):
    """Mean attention per class and head on fresh sequences: mass per token (K, H, M) and
    attention over positions (K, H, T-1)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        batch = sample(classes, per_class * classes.K, T, g, noise_prefix)
        _, c, b = model(batch.tokens)
    pick = [batch.classes == n for n in range(classes.K)]
    return torch.stack([c[m].mean(0) for m in pick]), torch.stack([b[m].mean(0) for m in pick])


MODEL_OPTIONS = ("heads", "pos", "residual", "init_std", "optimizer", "eta_y", "eta_z")


def fit(classes: SequenceClasses, *, heads: int = 1, pos=None, residual: bool = False,
        init_std: float = 0.0, optimizer: str = "sgd", eta_y: float = 1.0, eta_z: float = 1.0,
        steps: int = 100, batch: int = 128, T: int = 128, seed: int = 0,
        snapshot_steps=(), noise_prefix: float = 0.0) -> FitResult:
    """Train ``ExtendedYZ`` on sequences of ``classes`` (next-token loss, as the paper).

    SGD with momentum 0.9 (the paper's setting) or Adam; eta_y for the decoder, eta_z for the
    attention (Z and the positional parameters).
    """
    return fit_group(classes, [dict(heads=heads, pos=pos, residual=residual, init_std=init_std,
                                    optimizer=optimizer, eta_y=eta_y, eta_z=eta_z)],
                     steps=steps, batch=batch, T=T, seed=seed, snapshot_steps=snapshot_steps,
                     noise_prefix=noise_prefix)[0]


def fit_group(classes: SequenceClasses, variants, *, steps: int = 100, batch: int = 128, T: int = 128,
              seed: int = 0, snapshot_steps=(), noise_prefix: float = 0.0) -> list[FitResult]:
    """``[fit(classes, **v, seed=seed, ...) for v in variants]``, the same numbers, with each
    training batch drawn once for all the variants (runs with one seed see the same batches).

    ``variants`` is a list of dicts of :func:`fit`'s model and optimizer options
    (:data:`MODEL_OPTIONS`); what is not given takes :func:`fit`'s default.
    """
    variants = list(variants)
    if not variants:
        raise ValueError("fit_group needs at least one variant")
    defaults = dict(heads=1, pos=None, residual=False, init_std=0.0, optimizer="sgd", eta_y=1.0, eta_z=1.0)
    runs = []
    for v in variants:
        if not isinstance(v, dict):
            raise ValueError(f"each variant must be a dict of fit's options, got {type(v).__name__}")
        unknown = sorted(set(v) - set(MODEL_OPTIONS))
        if unknown:
            raise ValueError(f"unknown variant option(s) {unknown}: use {MODEL_OPTIONS}")
        o = {**defaults, **v}
        positive("eta_y", o["eta_y"])
        positive("eta_z", o["eta_z"])
        if o["optimizer"] not in ("sgd", "adam"):
            raise ValueError(f"unknown optimizer {o['optimizer']!r}: use 'sgd' or 'adam'")
        runs.append(o)
    positive_int("steps", steps, minimum=0)
    fits = []
    for o in runs:
        model = ExtendedYZ(classes.M, heads=o["heads"], pos=o["pos"], residual=o["residual"],
                           init_std=o["init_std"], seed=seed)
        attn = [p for n, p in model.named_parameters() if n != "Y"]
        groups = [{"params": [model.Y], "lr": o["eta_y"]}, {"params": attn, "lr": o["eta_z"]}]
        opt = torch.optim.SGD(groups, momentum=0.9) if o["optimizer"] == "sgd" else torch.optim.Adam(groups)
        fits.append((model, opt, [], {}, {}))
    g = torch.Generator().manual_seed(seed + 1)
    for step in range(steps + 1):
        if step in snapshot_steps:
            for model, _, _, snaps, positions in fits:
                c, b = class_attention(model, classes, T=T, noise_prefix=noise_prefix)
                snaps[step], positions[step] = c.numpy(), b.numpy()
        if step == steps:
            break
        b = sample(classes, batch, T, g, noise_prefix)
        for model, opt, losses, _, _ in fits:
            loss = F.cross_entropy(model(b.tokens)[0], b.labels)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
    return [FitResult(model, np.array(losses), snaps, positions) for model, _, losses, snaps, positions in fits]
