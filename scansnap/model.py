"""The models (paper Sec. 3.1, Eq. 1-4, and Sec. 8).

``YZModel`` is the reparameterised one-layer transformer of Eq. 1-2 with Y = U W_V^T U^T
(decoder) and Z = U W_Q W_K^T U^T / sqrt(d) (attention logits), batched over R
independent runs: Y and Z have shape (R, M, M) and run r only ever touches Y[r], Z[r].

``EmbeddingTransformer`` is the standard parameterisation (embedding U, W_Q, W_K, W_V,
optional positional encoding, layers, heads) used on real text (Fig. 7, 10).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from ._validate import positive_int

INITS = ("zero", "default")


class YZOutput(NamedTuple):
    """What the Y/Z model computes for a batch (all with leading run axis R)."""
    c: torch.Tensor        # (R, B, M)  X^T b_T: attention mass per token (Eq. 20)
    f: torch.Tensor        # (R, B, M)  LN(X^T b_T) (+ residual), the decoder input
    logits: torch.Tensor   # (R, B, M)  Y^T f
    b: torch.Tensor | None  # (R, B, T-1) attention over positions (token path only)


def init_yz(M: int, runs: int, init: str, seeds, dtype=torch.float32, device="cpu"):
    """Initial (Y, Z), shape (R, M, M) each.

    ``zero``: Y = Z = 0 (Syn-Small). ``default``: what ``nn.Linear(M, M, bias=False)``
    gives, U(-1/sqrt(M), 1/sqrt(M)), drawn as the authors' Model2 does: first K1 then
    K2 from the run's seed, with Y = K1.weight^T and Z = K2.weight.
    """
    if init not in INITS:
        raise ValueError(f"unknown init {init!r}: use one of {INITS}")
    if init == "zero":
        z = torch.zeros(runs, M, M, dtype=dtype, device=device)
        return z.clone(), z
    if len(seeds) != runs:
        raise ValueError(f"need one seed per run: {runs} runs, {len(seeds)} seeds")
    bound = 1.0 / math.sqrt(M)
    Y, Z = [], []
    uniq, which = np.unique([int(s) for s in seeds], return_inverse=True)
    for s in uniq:   # once per distinct seed (a learning-rate grid shares few seeds)
        g = torch.Generator().manual_seed(int(s))
        k1 = torch.empty(M, M, dtype=dtype).uniform_(-bound, bound, generator=g)
        k2 = torch.empty(M, M, dtype=dtype).uniform_(-bound, bound, generator=g)
        Y.append(k1.T)
        Z.append(k2)
    which = torch.as_tensor(which.reshape(-1))
    return torch.stack(Y)[which].to(device), torch.stack(Z)[which].to(device)


class YZModel(nn.Module):
    """Eq. 1-2 in the (Y, Z) variables, for R runs at once.

    The query token x_T is masked out of its own attention: only x_1..x_{T-1} are keys.
    ``normalize`` applies LN(x) = x/||x||_2 to the attention output (Sec. 3.1);
    ``residual`` adds the query's one-hot before the normalisation (Sec. 7, as in the
    authors' code: LN(X^T b + x_T)).
    """

    def __init__(self, M: int, runs: int = 1, *, init: str = "zero", seeds=None,
                 normalize: bool = True, residual: bool = False, dtype=torch.float32,
                 device="cpu"):
        super().__init__()
        self.M = positive_int("M (vocabulary size)", M, minimum=2)
        self.runs = positive_int("runs", runs)
        seeds = list(range(runs)) if seeds is None else list(seeds)
        Y, Z = init_yz(M, runs, init, seeds, dtype, device)
        self.Y = nn.Parameter(Y)
        self.Z = nn.Parameter(Z)
        self.normalize = bool(normalize)
        self.residual = bool(residual)

    # -- shared tail: from attention output c to logits --------------------------------
    def _head(self, c, query):
        v = c + F.one_hot(query, self.M).to(c.dtype) if self.residual else c
        f = v / v.norm(dim=-1, keepdim=True) if self.normalize else v
        return f, torch.bmm(f, self.Y)  # logits = Y^T f, row-wise

    def _runs_axis(self, x, name):
        if x.dim() == 1 + (name != "query"):  # shared by all runs
            x = x.expand(self.runs, *x.shape)
        elif x.shape[0] != self.runs:
            raise ValueError(f"{name} has {x.shape[0]} runs, model has {self.runs}")
        return x

    def forward_counts(self, counts: torch.Tensor, query: torch.Tensor) -> YZOutput:
        """Counts path (Eq. 20): counts (B, M) or (R, B, M), query (B,) or (R, B).

        ``counts[..., l]`` is how often token l occurs among x_1..x_{T-1} (any non-negative
        finite weights, e.g. P(.|n) for the T -> infinity limit), with at least one token per
        sequence; ``query`` holds the query token ids x_T in [0, M). Anything else is a
        ValueError naming the bad entry (an all-zero row would make every logit NaN).
        """
        if not isinstance(counts, torch.Tensor) or counts.dim() not in (2, 3):
            raise ValueError(f"counts must be a (B, M) or (R, B, M) tensor, got "
                             f"{getattr(counts, 'shape', type(counts).__name__)}")
        if not isinstance(query, torch.Tensor) or query.dtype.is_floating_point or query.dtype == torch.bool:
            raise ValueError(f"query must be a tensor of integer token ids, got "
                             f"{getattr(query, 'dtype', type(query).__name__)}")
        counts = self._runs_axis(counts, "counts")
        query = self._runs_axis(query, "query")
        R, B, M = counts.shape
        if M != self.M:
            raise ValueError(f"counts have {M} tokens, model has M={self.M}")
        if query.shape != (R, B):
            raise ValueError(f"query must have one token per sequence: counts are {tuple(counts.shape)}, "
                             f"query is {tuple(query.shape)}")
        if query.numel() and (int(query.min()) < 0 or int(query.max()) >= M):
            bad = query[(query < 0) | (query >= M)][0].item()
            raise ValueError(f"query token id {bad} out of range [0, {M})")
        if not torch.isfinite(counts).all() or (counts < 0).any():
            bad = counts[~torch.isfinite(counts) | (counts < 0)][0].item()
            raise ValueError(f"counts must be finite and non-negative, got {bad!r}")
        empty = (counts.sum(-1) <= 0).nonzero()
        if len(empty):
            r, b = empty[0].tolist()
            raise ValueError(f"sequence {b} (run {r}) has all-zero counts: its attention, and every "
                             "logit, would be NaN (a sequence needs at least one contextual token)")
        zq = self.Z.gather(1, query[..., None].expand(R, B, M))  # z_{x_T, l}
        # Eq. 20: X^T b = X^T p_X / 1^T X^T p_X = softmax over tokens of z + log count
        c = torch.softmax(zq + counts.to(zq.dtype).log(), dim=-1)
        f, logits = self._head(c, query)
        return YZOutput(c, f, logits, None)

    def forward_tokens(self, tokens: torch.Tensor) -> YZOutput:
        """Sequence path: tokens (B, T) or (R, B, T), the last column the query."""
        tokens = self._runs_axis(tokens, "tokens")
        if int(tokens.min()) < 0 or int(tokens.max()) >= self.M:
            bad = tokens[(tokens < 0) | (tokens >= self.M)][0].item()
            raise ValueError(f"token id {bad} out of range [0, {self.M})")
        R, B, T = tokens.shape
        if T < 2:
            raise ValueError(f"T (sequence length) must be >= 2, got {T}")
        ctx, query = tokens[..., :-1], tokens[..., -1]
        zq = self.Z.gather(1, query[..., None].expand(R, B, self.M))
        b = torch.softmax(zq.gather(-1, ctx), dim=-1)  # Eq. 1, b_{tT}, t < T
        c = torch.zeros_like(zq).scatter_add(-1, ctx, b)  # X^T b_T
        f, logits = self._head(c, query)
        return YZOutput(c, f, logits, b)

    @torch.no_grad()
    def lemma1_grads(self, logcounts: torch.Tensor, query: torch.Tensor, labels: torch.Tensor,
                     buf: dict | None = None) -> torch.Tensor:
        """Closed-form gradients of Lemma 1 (Eq. 3, App. C Eq. 17-19), batched; no autograd.

        Inputs are per run: logcounts (R, B, M) = log of the token counts (-inf where a
        token is absent), query (R, B), labels (R, B). Sets ``Y.grad`` and ``Z.grad`` to the
        gradients of the summed per-run batch-mean cross-entropy (that is, -dJ/dtheta
        averaged over the batch) and returns the per-run losses (R,). ``buf`` holds the
        (R, B, M) work arrays between calls: on a CPU, fresh arrays of that size cost more
        (page faults) than the arithmetic. ``tests/test_lemma1.py`` checks this against
        autograd.
        """
        R, B, M = logcounts.shape
        if buf is None:
            buf = {}
        key = (R, B, M, self.Y.dtype, self.Y.device)
        if buf.get("key") != key:
            e = lambda *shape: torch.empty(*shape, dtype=self.Y.dtype, device=self.Y.device)
            buf.update(key=key, c=e(R, B, M), f=e(R, B, M), a=e(R, B, M), g=e(R, B, M),
                       t=e(R, B, M), gy=e(R, M, M), gz=e(R, M, M))
        c, f, a, g, t = buf["c"], buf["f"], buf["a"], buf["g"], buf["t"]

        def rowdot(x, y):  # (R, B, M) x (R, B, M) -> (R, B, 1), through the scratch array t
            return torch.mul(x, y, out=t).sum(-1, keepdim=True)

        # forward. c = X^T b_T = softmax_l(z_{x_T, l} + log count_l)   (Eq. 20); row x_T of each
        # run's Z, copied whole (index_select: a row copy; a gather over (R, B, M) is ~8x slower)
        rows = (query + torch.arange(R, device=query.device)[:, None] * M).reshape(-1)
        torch.index_select(self.Z.reshape(R * M, M), 0, rows, out=c.view(R * B, M))
        c.add_(logcounts)
        c.sub_(c.amax(-1, keepdim=True)).exp_()
        c.div_(c.sum(-1, keepdim=True))
        f.copy_(c)
        if self.residual:
            f.scatter_add_(-1, query[..., None], torch.ones_like(query[..., None], dtype=f.dtype))
        if self.normalize:
            nv = f.norm(dim=-1, keepdim=True)
            f.div_(nv)                                    # f = LN(v)
        torch.bmm(f, self.Y, out=a)                       # logits = Y^T f
        a.sub_(a.amax(-1, keepdim=True))
        a.sub_(torch.exp(a, out=t).sum(-1, keepdim=True).log_())   # log alpha
        loss = -a.gather(-1, labels[..., None]).squeeze(-1).mean(-1)
        # backward. delta = x_{T+1} - alpha; dJ/dY = f delta^T  (Eq. 3, first part)
        a.exp_().neg_().scatter_add_(-1, labels[..., None],
                                     torch.ones_like(labels[..., None], dtype=a.dtype))
        a.mul_(-1.0 / B)                                  # d loss / d logits
        self.Y.grad = torch.bmm(f.transpose(1, 2), a, out=buf["gy"])
        torch.bmm(a, self.Y.transpose(1, 2), out=g)       # d loss / d f = Y (...)
        if self.normalize:                                # P_perp_v / ||v||  (Eq. 17)
            g.addcmul_(f, rowdot(f, g), value=-1).div_(nv)
        # softmax Jacobian diag(b) - b b^T; restricted to X it is X^T diag(b) X (Eq. 19)
        g.sub_(rowdot(c, g)).mul_(c)
        gz = buf["gz"].zero_()                            # only rows x_T move (Eq. 4)
        gz.view(R * M, M).index_add_(0, rows, g.view(R * B, M))
        self.Z.grad = gz
        return loss

    @staticmethod
    def loss(out: YZOutput, labels: torch.Tensor) -> torch.Tensor:
        """Per-run batch-mean cross-entropy, shape (R,): -J of Eq. 2 on the batch."""
        logp = torch.log_softmax(out.logits, dim=-1)
        R = logp.shape[0]
        if labels.dim() == 1:
            labels = labels.expand(R, *labels.shape)
        return -logp.gather(-1, labels[..., None]).squeeze(-1).mean(dim=-1)


# ---------------------------------------------------------------------------------------
# The standard parameterisation for real text (Sec. 8, Fig. 7 and 10)
# ---------------------------------------------------------------------------------------

class SelfAttention(nn.Module):
    """Causal multi-head self-attention that also returns its attention maps."""

    def __init__(self, d: int, heads: int):
        super().__init__()
        if d % heads:
            raise ValueError(f"model width d={d} is not divisible by heads={heads}")
        self.heads, self.dh = heads, d // heads
        self.W_Q = nn.Linear(d, d, bias=False)
        self.W_K = nn.Linear(d, d, bias=False)
        self.W_V = nn.Linear(d, d, bias=False)
        self.W_O = nn.Linear(d, d, bias=False)

    def forward(self, x, mask):
        B, T, d = x.shape
        def split(t):
            return t.view(B, T, self.heads, self.dh).transpose(1, 2)
        q, k, v = split(self.W_Q(x)), split(self.W_K(x)), split(self.W_V(x))
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(self.dh)
        attn = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
        y = (attn @ v).transpose(1, 2).reshape(B, T, d)
        return self.W_O(y), attn


class Dropout(nn.Dropout):
    """``nn.Dropout`` whose mask is ``bernoulli_`` on every device: what ``F.dropout`` computes on
    the CPU (bit for bit), and on CUDA what the batched trainer ``scansnap.lm.train_lms`` draws
    from each run's generator (CUDA's fused dropout kernel consumes the random stream
    differently, so with it the Fig. 10 runs would differ batched and one at a time).
    ``generator``: the torch.Generator the masks are drawn from (None: torch's default);
    ``scansnap.lm.train_lm`` gives each run its own, so runs can train side by side."""

    generator = None

    def forward(self, x):
        if not self.training or self.p == 0:
            return x
        if self.p == 1:  # nn.Dropout's answer; the mask below would divide by 1 - p = 0
            return torch.zeros_like(x)
        noise = torch.empty_like(x).bernoulli_(1 - self.p, generator=self.generator)
        return x * noise.div_(1 - self.p)


class Block(nn.Module):
    def __init__(self, d, heads, d_hidden, dropout):
        super().__init__()
        self.attn = SelfAttention(d, heads)
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.ff = nn.Sequential(nn.Linear(d, d_hidden), nn.ReLU(), nn.Linear(d_hidden, d))
        self.drop = Dropout(dropout)

    def forward(self, x, mask):
        a, attn = self.attn(x, mask)
        x = self.ln1(x + self.drop(a))  # post-norm, as nn.TransformerEncoderLayer
        x = self.ln2(x + self.drop(self.ff(x)))
        return x, attn


def sinusoidal_encoding(T: int, d: int) -> torch.Tensor:
    """The fixed positional encoding of Vaswani et al. (and the PyTorch LM tutorial)."""
    pos = torch.arange(T, dtype=torch.float32)[:, None]
    div = torch.exp(torch.arange(0, d, 2, dtype=torch.float32) * (-math.log(10000.0) / d))
    pe = torch.zeros(T, d)
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div[: d // 2])
    return pe


class EmbeddingTransformer(nn.Module):
    """A causal language model: embedding U, ``layers`` blocks of ``heads`` heads, decoder (Sec. 8).

    The standard parameterisation of the paper's real-text experiments (the PyTorch word-language-
    model tutorial's, as the authors' code): token embedding U (vocab x d, scaled by sqrt(d)),
    optional sinusoidal positions, ``layers`` post-norm blocks (causal self-attention with W_Q,
    W_K, W_V, W_O; a ReLU feed-forward of width ``d_hidden``; dropout), a linear decoder. In the
    Y/Z language of Sec. 3.1 the attention logits of one head are U W_Q W_K^T U^T / sqrt(d/heads).
    ``forward(x)`` returns the logits and every layer's attention maps; ``scansnap.lm.train_lm``
    trains it and keeps the maps at chosen steps (``LMResult.snapshots``, the same maps for a
    batch of one, B dropped).
    """

    def __init__(self, vocab: int, d: int = 200, heads: int = 1, layers: int = 1,
                 d_hidden: int = 200, dropout: float = 0.2, positional: str | None = "sinusoidal",
                 max_len: int = 512):
        """``vocab``: number of token ids (>= 2); ``d``: model width (divisible by ``heads``);
        ``heads``: attention heads per layer; ``layers``: blocks; ``d_hidden``: feed-forward
        width; ``dropout``: in [0, 1), on the embeddings and each block's two residual branches;
        ``positional``: ``"sinusoidal"`` (Vaswani et al.) or ``None`` (no positions: the paper's
        Assumption 1a); ``max_len``: the longest sequence with positions. Weights: the tutorial's
        init (U and the decoder U(-0.1, 0.1), decoder bias 0; the rest PyTorch's defaults), drawn
        from torch's global random stream (seed it with ``torch.manual_seed``)."""
        super().__init__()
        positive_int("vocab", vocab, 2)
        positive_int("heads", heads)
        positive_int("layers", layers)
        if positional not in ("sinusoidal", None):
            raise ValueError(f"unknown positional encoding {positional!r}: use 'sinusoidal' or None")
        if not 0 <= dropout < 1:
            raise ValueError(f"dropout must be in [0, 1), got {dropout!r}")
        self.d = d
        self.U = nn.Embedding(vocab, d)
        self.register_buffer("pe", sinusoidal_encoding(max_len, d) if positional else None)
        self.blocks = nn.ModuleList(Block(d, heads, d_hidden, dropout) for _ in range(layers))
        self.decoder = nn.Linear(d, vocab)
        self.drop = Dropout(dropout)
        # the PyTorch LM tutorial's init (the authors' decoder_wiki.py follows it): with N(0, 1)
        # embeddings times sqrt(d) the attention would start saturated
        nn.init.uniform_(self.U.weight, -0.1, 0.1)
        nn.init.uniform_(self.decoder.weight, -0.1, 0.1)
        nn.init.zeros_(self.decoder.bias)

    def forward(self, x):
        """``x``: (B, T) token ids -> (logits (B, T, vocab), maps): ``maps`` is a list of ``layers``
        tensors (B, heads, T, T), the attention of each layer (0 = the lowest), each row a
        distribution over the positions up to and including its own (causal). Dropout acts in
        training mode only (``model.eval()`` for clean maps)."""
        B, T = x.shape
        h = self.U(x) * math.sqrt(self.d)
        if self.pe is not None:
            if T > self.pe.shape[0]:
                raise ValueError(f"sequence length {T} exceeds max_len {self.pe.shape[0]}")
            h = h + self.pe[:T]
        h = self.drop(h)
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        maps = []
        for blk in self.blocks:
            h, a = blk(h, mask)
            maps.append(a)
        return self.decoder(h), maps


# ---------------------------------------------------------------------------------------
# The support path: Lemma 1 computed only where a sequence has tokens (train(path="support"))
# ---------------------------------------------------------------------------------------

_FUSED_SGD = getattr(torch, "_fused_sgd_", None)   # m = momentum m + g (g on the first step), p -= lr m
# torch's CPU kernels run a SIMD loop over whole vectors and a scalar loop over the last
# numel % width elements, and the compiler may fuse that scalar loop's a * b + c into one FMA
# (one rounding instead of two). Which elements fall in that tail depends on how many runs are
# in the tensor, so a run's last bits would depend on the runs trained beside it (a torchrun
# rank's share, a thread's set). Fused kernels therefore only see a prefix of whole vectors:
# 64 elements is a multiple of every vector width (AVX2, AVX-512, NEON) and cache-line unit.
_VEC_ALIGN = 64


def _rowdot(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """sum(x * y, -1) without an (..., M) temporary (einsum: 1.1-1.4x a batch of 1 x M times M x 1 products)."""
    return torch.einsum("...m,...m->...", x, y)


def _nll_from_softmax(alpha, logits, labels):
    """-log alpha[label] per row (..., 1) -> (...); rows where alpha[label] underflows are
    recomputed from the logits (logsumexp - logit), so a huge loss stays a number."""
    a = alpha.gather(-1, labels)
    out = -torch.log(a)
    tiny = a < 1e-30
    if bool(tiny.any()):
        rows = tiny.squeeze(-1)
        lg = logits[rows]
        out[rows] = (torch.logsumexp(lg, -1) - lg.gather(-1, labels[rows]).squeeze(-1))[:, None]
    return out.squeeze(-1)


class SupportYZ:
    """The rows of (Y, Z) that training moves, packed, and Lemma 1's gradients on them.

    A sequence of class n has tokens only in supp(n) (~20 of M), so its attention output
    f is zero elsewhere: the logits Y^T f read only the rows of Y of those tokens, dJ/dY =
    f delta^T writes only those rows, and dJ/dZ only row psi(n), columns supp(n) (Eq. 3-4).
    This class keeps Y's rows of the shared tokens (``Ys``, (R, s0, M)), of each class's own
    tokens (``Yo``, (R, K x own width, M); padding rows stay zero) and Z's rows of the query
    tokens (``Za``, (R, Q, M)), and computes on the slots of :func:`scansnap.data.support_table`.

    The arithmetic is Lemma 1's (App. C, Eq. 17-19) regrouped so that no per-sequence
    (B, s, M) array is formed: with delta_b = alpha_b - x_{T+1}, mu_b = delta_b . (Y^T f_b)
    and H_{n,j} = sum over the sequences b of class n of f_bj delta_b, the Z gradient of
    class n at slot j is (Y_j . H_{n,j} - sum_b f_bj^2 mu_b) / B (with LN; f_bj mu_b without),
    and H_{n,j} of a token owned by class n is B times its row of dJ/dY. The same gradients
    as :meth:`YZModel.lemma1_grads` up to the order of summation (checked in float64 by
    ``tests/test_fast_paths.py``).
    """

    def __init__(self, model: "YZModel", classes, table):
        if model.residual:
            raise ValueError("the support path has no residual connection: use path='counts'")
        R, M = model.runs, model.M
        K, s = table.cols.shape
        dev, dt = model.Y.device, model.Y.dtype
        self.R, self.M, self.K, self.s = R, M, K, s
        self.s0, self.o = table.n_shared, table.own_width
        self.normalize = model.normalize
        cols = table.cols.cpu()
        own = cols[:, self.s0:]
        real = torch.arange(self.o)[None, :] < table.own_count.cpu()[:, None]   # (K, o): not padding
        self.shared_rows = cols[0, :self.s0].clone()
        self.own_rows = torch.where(real, own, -1).reshape(-1)          # -1: a padding row
        # slot j of class n -> row of Yo (own slots; shared slot j is row j of Ys)
        self.own_row = (torch.arange(K)[:, None] * self.o + torch.arange(self.o)).to(dev)
        self.z_rows = torch.as_tensor(np.unique(classes.query))
        qi = torch.searchsorted(self.z_rows, torch.tensor(classes.query))
        self.z_index = (qi[:, None] * M + cols).to(dev)                  # (K, s) into Za.view(R, Q*M)
        self.labels = torch.tensor(classes.next_token).to(dev)
        self.Ys = torch.empty(R, self.s0, M, dtype=dt, device=dev)
        self.Yo = torch.zeros(R, K * self.o, M, dtype=dt, device=dev)
        self.Za = torch.empty(R, len(self.z_rows), M, dtype=dt, device=dev)
        self.load(model.Y, model.Z)

    def _pairs(self):
        real = self.own_rows >= 0
        return ((self.Ys, slice(None), self.shared_rows), (self.Yo, real, self.own_rows[real]))

    def load(self, Y: torch.Tensor, Z: torch.Tensor):
        """Copy the rows of full (R, M, M) tensors Y, Z into the packed ones."""
        with torch.no_grad():
            for packed, sel, rows in self._pairs():
                packed[:, sel.to(packed.device) if torch.is_tensor(sel) else sel] = Y[:, rows.to(Y.device)]
            self.Za.copy_(Z[:, self.z_rows.to(Z.device)])

    def store(self, Y: torch.Tensor, Z: torch.Tensor):
        """Write the packed rows back into full (R, M, M) tensors Y, Z (in place)."""
        with torch.no_grad():
            for packed, sel, rows in self._pairs():
                Y[:, rows.to(Y.device)] = packed[:, sel.to(packed.device) if torch.is_tensor(sel) else sel]
            Z[:, self.z_rows.to(Z.device)] = self.Za

    @torch.no_grad()
    def grads(self, counts: torch.Tensor, classes: torch.Tensor, group: torch.Tensor,
              scale_y: torch.Tensor | None = None, scale_z: torch.Tensor | None = None) -> torch.Tensor:
        """Set ``Ys.grad``, ``Yo.grad``, ``Za.grad`` for the batches of S seeds; return the losses (R,).

        counts (S, B, s): the slot counts of each sequence; classes (S, B); group (R,):
        the seed of each run (run r trains on batch group[r]). ``scale_y``, ``scale_z`` (R,):
        multiply run r's gradients by these (SGD folds its rates in here: see :meth:`sgd_step`).
        """
        R, M, K, s, s0, o = self.R, self.M, self.K, self.s, self.s0, self.o
        S, B, _ = counts.shape
        dev = counts.device
        Ys, Yo, Za = self.Ys, self.Yo, self.Za
        # each seed's batch in class order: the sums are the same (up to their order), and
        # consecutive sequences then read the same rows of Yo (2-3x faster gathers at M = 240)
        order = torch.argsort(classes, dim=1, stable=True)
        classes = classes.gather(1, order)
        counts = counts.gather(1, order[..., None].expand(S, B, s))
        per_run = lambda x: x.index_select(0, group)                     # (S, ...) -> (R, ...)
        cls = per_run(classes)                                           # (R, B)
        # forward. c = X^T b_T = softmax_l(z_{x_T, l} + log count_l) over the slots (Eq. 20),
        # taken as count_l exp(z_l) / sum: the exponentials once per class row, not per sequence
        zs = Za.view(R, -1).index_select(1, self.z_index.view(-1)).view(R, K, s)
        idx = cls[..., None].expand(R, B, s)
        c = torch.gather(zs.sub(zs.amax(-1, keepdim=True)).exp_(), 1, idx).mul_(per_run(counts))
        total = c.norm(dim=-1, keepdim=True) if self.normalize else c.sum(-1, keepdim=True)
        if not bool(total.min() > 0):   # all of a sequence's slots underflowed (or a NaN): in the log domain
            c = torch.softmax(torch.gather(zs, 1, idx).add_(per_run(counts).log()), -1)
            total = c.norm(dim=-1, keepdim=True) if self.normalize else 1.0
        f = c / total                                                    # LN (c itself when normalize=False)
        # logits = Y^T f: the shared rows for every sequence, then each sequence's own rows
        if o:   # own rows first, then the shared ones added by the product itself (one pass fewer)
            idx = per_run(self.own_row.index_select(0, classes.view(-1)).view(S, B, o)).add_(
                (torch.arange(R, device=dev) * (K * o))[:, None, None])
            logits = F.embedding_bag(idx.view(R * B, o), Yo.view(-1, M),
                                     per_sample_weights=f[..., s0:].reshape(R * B, o), mode="sum").view(R, B, M)
            logits.baddbmm_(f[..., :s0], Ys)
        else:
            logits = torch.bmm(f[..., :s0], Ys)
        a = torch.softmax(logits, -1)                                          # alpha
        lab = per_run(self.labels.index_select(0, classes.view(-1)).view(S, B, 1))   # (R, B, 1)
        loss = _nll_from_softmax(a, logits, lab).mean(-1)
        # backward. delta = alpha - x_{T+1} = B d loss / d logits; dJ/dY = f delta^T (Eq. 3)
        a.scatter_add_(-1, lab, torch.full_like(lab, -1, dtype=a.dtype))
        mu = _rowdot(a, logits)                                                # (R, B)
        w = f / B
        wy = w if scale_y is None else w * scale_y[:, None, None]
        Ys.grad = torch.bmm(wy[..., :s0].transpose(1, 2), a)                  # shared rows: all sequences
        # per sequence, the terms of the Z gradient that sum over a class's sequences:
        # f_bj (delta_b . Y_j) for the shared slots (own slots: below, by rows) minus f_bj^2 mu_b
        d = (w * f if self.normalize else w) * -mu[..., None]
        d[..., :s0].addcmul_(w[..., :s0], torch.bmm(a, Ys.transpose(1, 2)))
        onehot = per_run(torch.zeros(S, K, B, dtype=a.dtype, device=dev).scatter_(
            1, classes[:, None, :], 1.0))                                     # (R, K, B)
        t = torch.bmm(onehot, d)                                               # (R, K, s)
        if o:   # own rows: row j of class n sums the sequences of class n (bags of rows sorted by class)
            row, bag0, sizes = _class_bags(classes, K, o)
            wslot = torch.repeat_interleave((s0 + torch.arange(o, device=dev)).repeat(K).expand(S, K * o).reshape(-1),
                                            sizes.reshape(-1)).view(S, B * o)
            ind = per_run(row).add_((torch.arange(R, device=dev) * B)[:, None]).view(-1)
            offs = per_run(bag0).add_((torch.arange(R, device=dev) * (B * o))[:, None]).view(-1)
            psw = torch.gather(wy.reshape(R, B * s), 1, per_run(row * s + wslot)).view(-1)
            Yo.grad = F.embedding_bag(ind, a.view(R * B, M), offs, mode="sum",
                                      per_sample_weights=psw).view(R, K * o, M)
            h = _rowdot(Yo, Yo.grad).view(R, K, o)                            # Y_j . H_{n,j}
            t[..., s0:] += h if scale_y is None else h / scale_y[:, None, None]
        if scale_z is not None:
            t *= scale_z[:, None, None]
        Za.grad = torch.zeros_like(Za)
        Za.grad.view(R, -1).index_add_(1, self.z_index.view(-1), t.view(R, K * s))
        return loss

    @torch.no_grad()
    def sgd_step(self, momentum: float, buffers: list):
        """SGD with momentum on gradients that already carry each run's rate (``grads(...,
        scale_y=eta_y, scale_z=eta_z)``): m = momentum m + eta g, p -= m, which is PyTorch's
        m = momentum m + g, p -= eta m with m scaled by eta. On the largest sweeps this step is
        memory-bound: torch's fused SGD kernel (the one ``torch.optim.SGD(fused=True)`` calls;
        building that optimizer imports torch._dynamo, 0.8 s) makes it one pass over the rows
        that move, 1.35x faster than two; where that kernel is missing, two passes.

        Every element is rounded the same way wherever it lies in the (R, ...) stacks: the fused
        kernel gets the longest prefix of whole SIMD vectors (its scalar tail may fuse a multiply
        and an add, see ``_VEC_ALIGN``) and the rest takes the two passes, which round like the
        kernel's vectors (m * momentum, then + g; then p - m). So a run's numbers do not depend
        on which runs share its tensors: the runs split over threads (``train(workers=)``) or
        over torchrun's ranks give the same bits as one batch (``tests/test_fast_paths.py``)."""
        params = [self.Ys, self.Yo, self.Za]
        first = not buffers
        if first:
            buffers.extend(torch.zeros_like(p) for p in params)
        grads = [p.grad for p in params]
        if not (momentum and _FUSED_SGD is not None and self.Yo.device.type == "cpu"):
            for p, g, m in zip(params, grads, buffers):
                if momentum:
                    p.sub_(m.copy_(g) if first else m.mul_(momentum).add_(g))
                else:
                    p.sub_(g)
            return
        # the parameters' and buffers' whole-vector heads and short tails, as views made once
        if getattr(self, "_split", None) is None or self._split[0] is not buffers:
            ends = [p.numel() - p.numel() % _VEC_ALIGN for p in params]
            self._split = (buffers, ends, [p.view(-1)[:n] for p, n in zip(params, ends)],
                           [m.view(-1)[:n] for m, n in zip(buffers, ends)],
                           [(p.view(-1)[n:], m.view(-1)[n:], i) for i, (p, m, n) in enumerate(zip(params, buffers, ends))
                            if n < p.numel()])
        _, ends, p_heads, m_heads, tails = self._split
        _FUSED_SGD(p_heads, [g.view(-1)[:n] for g, n in zip(grads, ends)], m_heads, weight_decay=0.0,
                   momentum=momentum, lr=1.0, dampening=0.0, nesterov=False, maximize=False, is_first_step=first)
        if tails:   # a few elements each: one foreach call per pass (exactly rounded, as the vectors)
            pt, mt = [t[0] for t in tails], [t[1] for t in tails]
            gt = [grads[i].view(-1)[ends[i]:] for _, _, i in tails]
            if first:
                torch._foreach_copy_(mt, gt)
            else:
                torch._foreach_mul_(mt, momentum)
                torch._foreach_add_(mt, gt)
            torch._foreach_sub_(pt, mt)


def _class_bags(classes: torch.Tensor, K: int, o: int):
    """Per seed (row of ``classes``, (S, B)): the sequences of each class, each listed o times.

    Returns row (S, B*o), the sequence of each entry, ordered by (class n, slot j, sequence);
    bag0 (S, K*o), where bag (n, j) starts; sizes (S, K*o), its length (the class's count).
    """
    S, B = classes.shape
    dev = classes.device
    _, perm = torch.sort(classes, dim=1, stable=True)
    counts = torch.zeros(S, K, dtype=torch.long, device=dev).scatter_add_(1, classes, torch.ones_like(classes))
    start = torch.cumsum(counts, 1) - counts
    sizes = counts[:, :, None].expand(S, K, o).reshape(S, K * o).contiguous()
    bag0 = torch.cumsum(sizes, 1) - sizes
    flat = sizes.reshape(-1)
    pos = (torch.repeat_interleave((start[:, :, None].expand(S, K, o).reshape(-1) - bag0.reshape(-1)), flat)
           + torch.arange(B * o, device=dev).repeat(S))
    return torch.gather(perm, 1, pos.view(S, B * o)), bag0, sizes
