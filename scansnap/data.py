"""Sequence classes and their sampling (paper Sec. 3.2).

A *sequence class* s_n = (P(l|n), psi(n), n): the contextual tokens x_1..x_{T-1} are drawn
i.i.d. from P(.|n), the query token is x_T = psi(n) and the next token (the label) is
x_{T+1} = n. With no positional encoding (Assumption 1a) the model sees a sequence only
through its token-count vector, so a batch can be drawn as tokens (B, T) or as counts
(B, M); both come from the same random draws here, so they are the same batch.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

import numpy as np
import torch

from ._validate import array, positive_int

_SUM_TOL = 1e-9


class ClassLayoutWarning(UserWarning):
    """A query or next token is also a contextual token of some class: allowed by the model,
    outside the paper's setting (Sec. 3.2: the context, the query and the next token are
    separate tokens), so the theory's predictions need not hold."""


class SharedTokenWarning(ClassLayoutWarning):
    """A contextual token is in some but not all classes' contexts (hand-made classes): the paper
    counts it as common (G_CT, Sec. 3.2: |Omega(l)| > 1), and so do ``roles()``, ``common_tokens``
    and ``scansnap.metrics.common_mass``; ``sequence_classes``'s common tokens are in every class."""


@dataclass(frozen=True, eq=False)
class SequenceClasses:
    """K sequence classes over a vocabulary of M tokens.

    probs[n, l] = P(l | n) (each row a distribution over the M tokens), query[n] = psi(n),
    next_token[n] = the token id of the label n. Row n is "class n"; its label is the
    token next_token[n].
    """

    probs: np.ndarray
    query: np.ndarray
    next_token: np.ndarray

    def __post_init__(self):
        # a copy: the table is made read-only below, and the caller's own array must stay writable
        probs = np.array(array("probs", self.probs), dtype=np.float64)   # ragged rows: named, not numpy's words
        if probs.ndim != 2 or probs.shape[0] < 1 or probs.shape[1] < 2:
            raise ValueError(f"probs must be a (K, M) table with K >= 1, M >= 2; got shape {probs.shape}")
        K, M = probs.shape
        if not np.all(np.isfinite(probs)):
            n, l = np.argwhere(~np.isfinite(probs))[0]
            raise ValueError(f"P(l={l} | class {n}) is not finite: {float(probs[n, l])!r}")
        if np.any(probs < 0):
            n, l = np.argwhere(probs < 0)[0]
            raise ValueError(f"P(l={l} | class {n}) is negative: {float(probs[n, l])!r}")
        sums = probs.sum(axis=1)
        bad = np.flatnonzero(np.abs(sums - 1.0) > _SUM_TOL)
        if bad.size:
            n = bad[0]
            hint = ""
            if K > 1 and np.allclose(probs.sum(axis=0), 1.0, atol=_SUM_TOL):
                hint = f"; its columns sum to 1: transposed? pass probs.T, a ({M}, {K}) table"
            raise ValueError(f"P(. | class {n}) sums to {float(sums[n])!r}, not 1: probs is read as a (K, M) table, "
                             f"one row per class, here K={K} classes over M={M} tokens{hint}")
        query = _token_ids("query token", self.query, K, M)
        nxt = _token_ids("next token", self.next_token, K, M)
        seen: dict[int, int] = {}
        for n, (m, tok) in enumerate(zip(query, nxt)):
            if tok in seen:
                first = seen[tok]
                if query[first] != m:
                    raise ValueError(
                        f"next token {tok} has two query tokens, {query[first]} (class {first}) "
                        f"and {m} (class {n}): psi must be a function of the next token"
                    )
                raise ValueError(f"next token {tok} is listed twice (classes {first} and {n})")
            seen[tok] = n
        object.__setattr__(self, "probs", probs)
        object.__setattr__(self, "query", query)
        object.__setattr__(self, "next_token", nxt)
        for a in (probs, query, nxt):
            a.setflags(write=False)
        _warn_layout(probs, query, nxt)

    def layout_issue(self) -> str | None:
        """None in the paper's layout; else, in words, the first query or next token that is also
        a contextual token (the :class:`ClassLayoutWarning` given when the classes were made,
        which ``scansnap.theory.predict`` repeats and records in its Prediction)."""
        return _layout_issue(self.probs, self.query, self.next_token)

    @property
    def K(self) -> int:
        """Number of classes (next tokens)."""
        return self.probs.shape[0]

    @property
    def M(self) -> int:
        """Vocabulary size."""
        return self.probs.shape[1]

    @cached_property
    def omega(self) -> np.ndarray:
        """|Omega(l)| = number of classes n with P(l|n) > 0 (Sec. 3.2)."""
        return (self.probs > 0).sum(axis=0)

    @cached_property
    def common_tokens(self) -> np.ndarray:
        """G_CT: tokens that occur in more than one class (the paper's definition, Sec. 3.2:
        |Omega(l)| > 1), whether in every class's context (as ``sequence_classes`` makes them)
        or in some only (``partly_shared_tokens``)."""
        return np.flatnonzero(self.omega > 1)

    @cached_property
    def partly_shared_tokens(self) -> np.ndarray:
        """Common tokens that are in some but not all classes' contexts (1 < |Omega(l)| < K):
        possible in hand-made classes only. They count as common (G_CT) in every metric; ``roles()``
        and ``scansnap.metrics.common_mass`` say so with a :class:`SharedTokenWarning`."""
        return np.flatnonzero((self.omega > 1) & (self.omega < self.K))

    def _warn_partly_shared(self, where: str, stacklevel: int = 3):
        toks = self.partly_shared_tokens
        if toks.size:
            import warnings
            shown = "; ".join(f"token {int(l)} in classes {', '.join(map(str, np.flatnonzero(self.probs[:, l] > 0)))}"
                              for l in toks[:5]) + ("; ..." if toks.size > 5 else "")
            warnings.warn(f"{where}: {toks.size} token(s) are in some but not all of the {self.K} classes' contexts "
                          f"({shown}): they count as common (G_CT, Sec. 3.2: in more than one class), in roles() "
                          "and in common_mass, not as distinct; sequence_classes' common tokens are in every "
                          "class's context", SharedTokenWarning, stacklevel=stacklevel)

    @cached_property
    def distinct_mask(self) -> np.ndarray:
        """(K, M) boolean: distinct_mask[n, l] iff l is in G_DT(n) (|Omega(l)| = 1)."""
        return (self.probs > 0) & (self.omega == 1)[None, :]

    def distinct_tokens(self, n: int) -> np.ndarray:
        """G_DT(n): the tokens that occur in class n and in no other class."""
        self._check_class(n)
        return np.flatnonzero(self.distinct_mask[n])

    def support(self, n: int) -> np.ndarray:
        """supp(n) = {l : P(l|n) > 0}."""
        self._check_class(n)
        return np.flatnonzero(self.probs[n] > 0)

    def psi_inverse(self, m: int) -> np.ndarray:
        """psi^{-1}(m): the classes whose query token is m."""
        if not 0 <= int(m) < self.M:
            raise ValueError(f"query token {m!r} out of range [0, {self.M})")
        return np.flatnonzero(self.query == m)

    def _check_class(self, n):
        if not 0 <= int(n) < self.K:
            raise ValueError(f"class {n!r} out of range [0, {self.K})")

    def torch_probs(self, device=None, dtype=torch.float64) -> torch.Tensor:
        return torch.tensor(self.probs, dtype=dtype, device=device)

    def __repr__(self):
        return (f"SequenceClasses(K={self.K}, M={self.M}, common={len(self.common_tokens)}, "
                f"distinct per class={self.distinct_mask.sum(axis=1).tolist()})")

    def roles(self) -> np.ndarray:
        """(M,) the role of every token, as text: ``"common"`` (in more than one class's
        context: G_CT, Sec. 3.2; ``sequence_classes`` puts its common tokens in every class's,
        and a hand-made token in some but not all classes' is common too, with a
        :class:`SharedTokenWarning`), ``"distinct n"`` (in class n's context only), ``"query"``
        (psi of some class), ``"next n"`` (class n's next token), ``"unused"`` (never drawn). A
        token with two roles (say a query that is also contextual) shows both, joined by ``" + "``."""
        self._warn_partly_shared("roles()")
        out = []
        for l in range(self.M):
            r = []
            if self.omega[l] > 1:
                r.append("common")
            elif self.omega[l] == 1:
                r.append(f"distinct {int(np.flatnonzero(self.probs[:, l] > 0)[0])}")
            if l in self.query:
                r.append("query")
            r += [f"next {n}" for n in np.flatnonzero(self.next_token == l)]
            out.append(" + ".join(r) or "unused")
        return np.array(out)


def _layout_issue(probs, query, nxt) -> str | None:
    """The first query or next token that is also contextual, in words, naming every class that
    uses it and every class whose context holds it (None if there is none)."""
    def classes(ns):
        return f"class {ns[0]}" if len(ns) == 1 else "classes " + ", ".join(str(n) for n in ns)

    for what, ids in (("query", query), ("next", nxt)):
        ids = [int(t) for t in ids]
        for t in dict.fromkeys(ids):
            owners = [int(k) for k in np.flatnonzero(probs[:, t] > 0)]
            if owners:
                users = [n for n, u in enumerate(ids) if u == t]
                whose = (f"class {users[0]}'s {what} token {t}" if len(users) == 1
                         else f"the {what} token {t} (of {classes(users)})")
                return (f"{whose} is also a contextual token of {classes(owners)} "
                        f"(P({t} | class {owners[0]}) = {probs[owners[0], t]:.3g}): the paper keeps the "
                        "context, query and next tokens apart (Sec. 3.2), and its theory assumes it")
    return None


def _warn_layout(probs, query, nxt):
    """A ClassLayoutWarning naming the first query or next token that is also contextual."""
    import warnings
    issue = _layout_issue(probs, query, nxt)
    if issue is not None:
        warnings.warn(issue, ClassLayoutWarning, stacklevel=4)


def _token_ids(what: str, ids, K: int, M: int) -> np.ndarray:
    a = np.asarray(ids)
    if a.shape != (K,):
        raise ValueError(f"{what}s must have one entry per class (K={K}); got shape {a.shape}")
    if not np.issubdtype(a.dtype, np.integer):
        if not np.all(np.equal(np.mod(a, 1), 0)):
            raise ValueError(f"{what} ids must be integers; got {a.tolist()}")
    for n, t in enumerate(a):
        if not 0 <= t < M:
            raise ValueError(f"{what} {int(t)} (class {n}) out of range [0, {M})")
    return a.astype(np.int64)


# ---------------------------------------------------------------------------------------
# Presets (the authors' Dataset2 generator behind the paper's Sec. 8 and App. G)
# ---------------------------------------------------------------------------------------

def make_classes(num_last: int, num_next_per_last: int = 1, *, num_common: int = 10,
                 num_distinct: int = 10, common_weight: float = 1.0,
                 distinct_min: float = 0.1, distinct_max: float = 1.0, M: int | None = None) -> SequenceClasses:
    """The authors' generator: token layout ``common | distinct blocks | queries | nexts``.

    Every class gets the ``num_common`` common tokens with weight ``common_weight`` and its
    own block of ``num_distinct`` tokens with weights ``linspace(distinct_min,
    distinct_max)``, normalised. Query m has ``num_next_per_last`` next tokens, so there are
    K = num_last * num_next_per_last classes over num_common + K num_distinct + num_last + K
    tokens. ``M``: a larger vocabulary, the tokens beyond those never drawn (default: just the
    tokens used). :func:`sequence_classes` takes K and M directly.
    """
    num_last = positive_int("num_last", num_last)
    num_next_per_last = positive_int("num_next_per_last", num_next_per_last)
    num_common = positive_int("num_common", num_common, minimum=0)
    num_distinct = positive_int("num_distinct", num_distinct, minimum=0)
    if num_common + num_distinct == 0:
        raise ValueError("a class needs at least one contextual token (num_common + num_distinct = 0)")
    if not common_weight > 0 or not 0 < distinct_min <= distinct_max:
        raise ValueError(
            f"weights must be positive with distinct_min <= distinct_max; got common_weight="
            f"{common_weight!r}, distinct_min={distinct_min!r}, distinct_max={distinct_max!r}")
    K = num_last * num_next_per_last
    distinct0 = num_common
    query0 = distinct0 + num_distinct * K
    next0 = query0 + num_last
    used = next0 + K
    M = used if M is None else positive_int("M (vocabulary size)", M)
    if M < used:
        raise ValueError(f"M = {M} is smaller than the {used} tokens this layout uses "
                         f"({num_common} common + {K} x {num_distinct} distinct + {num_last} query + {K} next)")
    probs = np.zeros((K, M))
    weights = np.linspace(distinct_min, distinct_max, num_distinct)
    for n in range(K):
        probs[n, :num_common] = common_weight
        probs[n, distinct0 + n * num_distinct: distinct0 + (n + 1) * num_distinct] = weights
    probs /= probs.sum(axis=1, keepdims=True)
    query = query0 + np.arange(K) // num_next_per_last
    return SequenceClasses(probs, query, next0 + np.arange(K))


def sequence_classes(K: int, M: int | None = None, *, queries: int = 1, num_common: int = 10,
                     num_distinct: int = 10, common_weight: float = 1.0, distinct_weights=None) -> SequenceClasses:
    """K sequence classes over a vocabulary of M tokens, laid out as the paper's (Sec. 3.2):

    ``common (num_common) | distinct: class 0's, class 1's, ... (num_distinct each) | queries | next tokens | unused``

    - ``num_common``: tokens in every class's context (K >= 2; with K = 1 none can be common,
      so ``num_common`` must be 0 there).
    - ``queries``: how many query tokens; the K classes share them in order (K a multiple of it):
      1 (every class has the same query, Theorem 2(b)'s and Sec. 6's setting) up to K (one each).
    - ``common_weight``: the weight of each common token; ``distinct_weights``: the
      ``num_distinct`` weights of a class's own tokens (default ``linspace(0.1, 1)``, the
      authors'; every class gets the same). A row is normalised to sum to 1.
    - ``M``: the vocabulary size, at least the tokens used (num_common + K num_distinct +
      queries + K); the rest are never drawn (default: exactly the tokens used).

    Row n is class n; ``classes.roles()`` names every token's role. E.g.
    ``sequence_classes(3, 40, num_common=5, num_distinct=8)``: tokens 0-4 common, 5-28
    distinct (8 per class), 29 the query, 30-32 the next tokens, 33-39 unused.
    """
    K = positive_int("K (number of classes)", K)
    queries = positive_int("queries", queries)
    if K == 1 and num_common:
        raise ValueError(f"K = 1 class has no common tokens (a common token is in more than one class's context, "
                         f"Sec. 3.2): num_common={num_common!r} would be {num_common!r} more distinct tokens of "
                         "class 0; pass num_common=0 (and num_distinct= for its tokens)")
    if K % queries:
        raise ValueError(f"K = {K} classes cannot share {queries} query tokens equally: K must be a multiple of queries")
    num_distinct = positive_int("num_distinct", num_distinct, minimum=0)
    if distinct_weights is None:
        return make_classes(queries, K // queries, num_common=num_common, num_distinct=num_distinct,
                            common_weight=common_weight, M=M)
    w = np.asarray(distinct_weights, dtype=float)
    if w.shape != (num_distinct,) or not np.all(np.isfinite(w)) or np.any(w <= 0):
        raise ValueError(f"distinct_weights must be {num_distinct} positive numbers (one per distinct token), "
                         f"got {distinct_weights!r}")
    base = make_classes(queries, K // queries, num_common=num_common, num_distinct=num_distinct,
                        common_weight=common_weight, M=M)
    probs = (base.probs > 0) * 1.0
    probs[:, :num_common] *= common_weight
    for n in range(K):
        probs[n, num_common + n * num_distinct: num_common + (n + 1) * num_distinct] = w
    return SequenceClasses(probs / probs.sum(axis=1, keepdims=True), base.query, base.next_token)


def syn_small() -> SequenceClasses:
    """Syn-Small (Fig. 4-5): 2 query tokens with one next token each; M = 34."""
    return make_classes(num_last=2, num_next_per_last=1)


def syn_medium(num_last: int, num_next_per_last: int = 2) -> SequenceClasses:
    """Syn-Medium (Fig. 6, 11-12): ``num_last`` queries, ``num_next_per_last`` nexts each."""
    return make_classes(num_last=num_last, num_next_per_last=num_next_per_last)


def one_query(K: int = 3, common_weight: float = 4.8, num_distinct: int = 200) -> SequenceClasses:
    """K next tokens sharing one query and one common token, distinct tokens uniform.

    The setting of Theorem 2(b) and Sec. 6; with the defaults (M = 605) the f_n satisfy
    Assumption 2 (f_n^T f_n' = 0.1: |lambda_1| = 0.2 < 1/K, min |lambda_i| >= sqrt(6/M)).
    """
    return make_classes(num_last=1, num_next_per_last=K, num_common=1, num_distinct=num_distinct,
                        common_weight=common_weight, distinct_min=1.0, distinct_max=1.0)


# ---------------------------------------------------------------------------------------
# Sampling
# ---------------------------------------------------------------------------------------

def two_classes(common=(5,), distinct=(1, 2, 3, 4), M: int = 60, common_1=None) -> SequenceClasses:
    """Two classes that share one query (chapter 4's small examples of Theorems 2-3). Tokens:
    the common ones (weights ``common``, or ``common_1`` in class 1), class 0's distinct tokens,
    class 1's (the same weights), then the query and the two next tokens; the rest of the
    M-token vocabulary is unused. Weights are normalised to P(l|n)."""
    common = np.asarray(common, dtype=float)
    distinct = np.asarray(distinct, dtype=float)
    common_1 = common if common_1 is None else np.asarray(common_1, dtype=float)
    C, D = len(common), len(distinct)
    if common_1.shape != common.shape:
        raise ValueError(f"common_1 must have one weight per common token ({C}), got {len(common_1)}")
    if C + 2 * D + 3 > M:
        raise ValueError(f"{C} common, 2 x {D} distinct tokens, a query and two next tokens need "
                         f"M >= {C + 2 * D + 3}, got M = {M}")
    P = np.zeros((2, M))
    P[0, :C] = common
    P[1, :C] = common_1
    P[0, C:C + D] = distinct
    P[1, C + D:C + 2 * D] = distinct
    P /= P.sum(axis=1, keepdims=True)                 # weights -> P(l|n)
    q = C + 2 * D
    return SequenceClasses(P, [q, q], [q + 1, q + 2])


class TokenBatch(NamedTuple):
    tokens: torch.Tensor   # (B, T) long: x_1..x_{T-1} contextual, x_T = query
    labels: torch.Tensor   # (B,) long: next-token ids x_{T+1}
    classes: torch.Tensor  # (B,) long: class index n of each sequence


class SupportTable(NamedTuple):
    """Each class's support as a row of *slots* (``support_table``), on one device.

    Slot j of class n holds token ``cols[n, j]``. The slots of every class are the same
    ``shared`` tokens (those of more than one class's list) followed by the class's own
    tokens (padded to ``own_width`` with copies of a real token that never get a count).
    ``cum[n]`` is the cumulative distribution torch.multinomial builds over the M tokens
    (a running sum in token order, divided by the total, the last bucket set to 1), read at
    class n's support tokens in token order; ``slot_of[n, p]`` is the slot of support
    position p. ``query_slot[n]`` is the slot of psi(n) (-1 if psi(n) has no slot).
    """
    cols: torch.Tensor        # (K, s) long
    cum: torch.Tensor         # (K, p) float64, +inf beyond the support
    slot_of: torch.Tensor     # (K, p) long
    query_slot: torch.Tensor  # (K,) long
    token_slot: torch.Tensor  # (K, M) long: the slot of token l in class n's row, -1 if none
    plain: bool               # every class has the same cum row and slot p = support position p
    own_count: torch.Tensor   # (K,) long: how many of class n's own slots hold real tokens
    n_shared: int             # the first n_shared slots of every class are the shared tokens
    own_width: int            # then own_width slots of the class's own tokens
    bucket: torch.Tensor | None = None   # (K, CDF_BUCKETS) long: #{p: cum[n, p] < k / CDF_BUCKETS}


class SupportBatch(NamedTuple):
    counts: torch.Tensor   # (..., B, s) float: count of slot j's token among x_1..x_{T-1}
    query: torch.Tensor    # (..., B) long
    labels: torch.Tensor   # (..., B) long
    classes: torch.Tensor  # (..., B) long


class CountBatch(NamedTuple):
    counts: torch.Tensor   # (B, M) float: how often each token occurs among x_1..x_{T-1}
    query: torch.Tensor    # (B,) long: x_T
    labels: torch.Tensor   # (B,) long
    classes: torch.Tensor  # (B,) long


def sample_tokens(classes: SequenceClasses, batch: int, T: int, generator: torch.Generator,
                  probs: torch.Tensor | None = None) -> TokenBatch:
    """Draw ``batch`` sequences of length T (T-1 contextual tokens and the query).

    The class of each sequence is uniform over the K classes (as in the authors' code);
    its contextual tokens are i.i.d. from P(.|n). ``probs`` may pass a cached tensor of
    ``classes.probs`` on the generator's device.
    """
    if not isinstance(classes, SequenceClasses):
        raise ValueError(f"classes must be a SequenceClasses, got {type(classes).__name__}")
    batch = positive_int("batch size", batch)
    T = positive_int("T (sequence length)", T, minimum=2)
    if not isinstance(generator, torch.Generator):
        raise ValueError(f"generator must be a torch.Generator (seeded), got {type(generator).__name__}")
    if probs is not None and tuple(probs.shape) != classes.probs.shape:
        raise ValueError(f"probs must be the ({classes.K}, {classes.M}) table of the classes, "
                         f"got shape {tuple(probs.shape)}")
    device = generator.device
    if probs is None:
        probs = classes.torch_probs(device)
    cls = torch.randint(classes.K, (batch,), generator=generator, device=device)
    ctx = torch.multinomial(probs[cls], T - 1, replacement=True, generator=generator)
    query = torch.tensor(classes.query, device=device)[cls]
    labels = torch.tensor(classes.next_token, device=device)[cls]
    return TokenBatch(torch.cat([ctx, query[:, None]], dim=1), labels, cls)


def counts_from_tokens(tokens: torch.Tensor, M: int, dtype=torch.float32) -> torch.Tensor:
    """Token-count vectors (..., M) of the contextual part tokens[..., :-1]."""
    M = positive_int("M (vocabulary size)", M)
    if not isinstance(tokens, torch.Tensor) or tokens.dtype.is_floating_point or tokens.dtype == torch.bool \
            or tokens.dim() < 1:
        raise ValueError(f"tokens must be a tensor of integer token ids (..., T), got "
                         f"{getattr(tokens, 'dtype', type(tokens).__name__)}")
    ctx = tokens[..., :-1]
    if ctx.numel() and (int(ctx.min()) < 0 or int(ctx.max()) >= M):
        bad = ctx[(ctx < 0) | (ctx >= M)][0].item()
        raise ValueError(f"token id {bad} out of range [0, {M})")
    counts = torch.zeros(*ctx.shape[:-1], M, dtype=dtype, device=tokens.device)
    return counts.scatter_add_(-1, ctx, torch.ones_like(ctx, dtype=dtype))


def sample_counts(classes: SequenceClasses, batch: int, T: int, generator: torch.Generator,
                  probs: torch.Tensor | None = None, dtype=torch.float32) -> CountBatch:
    """The same draws as :func:`sample_tokens`, reduced to counts (B, M)."""
    tb = sample_tokens(classes, batch, T, generator, probs)
    return CountBatch(counts_from_tokens(tb.tokens, classes.M, dtype), tb.tokens[:, -1],
                      tb.labels, tb.classes)


# ---------------------------------------------------------------------------------------
# Sampling on the support: the same draws as sample_tokens, counted over ~20 slots, not M
# ---------------------------------------------------------------------------------------

def _multinomial_cdf(p: np.ndarray) -> np.ndarray:
    """The cumulative distribution torch.multinomial (CPU, with replacement) searches:
    a running sum in token order (float64), divided by the total, the last bucket 1."""
    cum = np.add.accumulate(np.asarray(p, dtype=np.float64))
    cum = cum / cum[-1]
    cum[-1] = 1.0
    return cum


CDF_BUCKETS = 4096   # a power of 2, so u * CDF_BUCKETS is exact in float64


def _cdf_buckets(cum: np.ndarray):
    """(K, CDF_BUCKETS) counts of boundaries below each bucket's start, or None when a bucket of
    some row holds two boundaries (then the one comparison of :func:`_cdf_position` is not enough)."""
    edges = np.arange(CDF_BUCKETS + 1) / CDF_BUCKETS
    lo = np.stack([np.searchsorted(row, edges, side="left") for row in cum])   # (K, NB + 1)
    if np.diff(lo, axis=1).max(initial=0) > 1:
        return None
    return np.ascontiguousarray(lo[:, :-1])


def _cdf_position(table: SupportTable, cls, u: torch.Tensor) -> torch.Tensor:
    """torch.searchsorted(table.cum[cls], u), the first p with cum[p] >= u, for u in [0, 1],
    with one lookup and one comparison instead of a binary search: the bucket of u gives the
    boundaries below it, and at most one boundary lies inside it. Exact (no rounding: u is
    scaled by a power of 2 and compared with cum as it is). u = 1 reads the last bucket."""
    k = u.mul(CDF_BUCKETS).long().clamp_(max=CDF_BUCKETS - 1)
    take = lambda t, i: t.index_select(0, i.view(-1)).view(i.shape)   # 3-4x faster than t[i] here
    if table.plain:
        lo = take(table.bucket[0], k)
        return lo.add_(take(table.cum[0], lo) < u)
    K, nb = table.bucket.shape
    lo = take(table.bucket.view(-1), k.add_((cls * nb)[..., None]))
    p = table.cum.shape[1]
    return lo.add_(take(table.cum.view(-1), lo + (cls * p)[..., None]) < u)


def support_table(classes: SequenceClasses, with_query: bool = False, device=None) -> SupportTable:
    """The slots of every class (see :class:`SupportTable`).

    ``with_query`` also gives each class a slot for its query token psi(n) (the residual
    of Sec. 7 adds the query's one-hot to the attention output): a shared slot when psi(n)
    is not already in the class's support.
    """
    K, M = classes.K, classes.M
    supp = classes.probs > 0
    owners = supp.sum(axis=0)
    shared_mask = owners > 1
    if with_query:
        shared_mask[classes.query] = True
    shared = np.flatnonzero(shared_mask)
    own = [np.flatnonzero(supp[n] & ~shared_mask) for n in range(K)]
    own_width = max(len(o) for o in own)
    s = len(shared) + own_width
    cols = np.empty((K, max(s, 1)), np.int64)
    p_max = int(supp.sum(axis=1).max())
    cum = np.full((K, p_max), np.inf)
    slot_of = np.zeros((K, p_max), np.int64)
    query_slot = np.full(K, -1, np.int64)
    token_slot = np.full((K, M), -1, np.int64)
    for n in range(K):
        row = np.concatenate([shared, own[n]])
        pad = row[0] if len(row) else 0
        cols[n] = np.concatenate([row, np.full(s - len(row), pad, np.int64)])
        where = {int(t): j for j, t in enumerate(row)}
        tokens = np.flatnonzero(supp[n])
        cum[n, :len(tokens)] = _multinomial_cdf(classes.probs[n])[tokens]
        slot_of[n, :len(tokens)] = [where[int(t)] for t in tokens]
        query_slot[n] = where.get(int(classes.query[n]), -1)
        token_slot[n, row] = np.arange(len(row))
    plain = bool(np.all(cum == cum[:1]) and np.all(slot_of == np.arange(p_max)))
    t = lambda a, dt=torch.long: torch.as_tensor(a, dtype=dt, device=device)
    bucket = _cdf_buckets(cum)
    return SupportTable(t(cols), t(cum, torch.float64), t(slot_of), t(query_slot), t(token_slot),
                        plain, t([len(x) for x in own]), len(shared), own_width,
                        None if bucket is None else t(bucket))


def sample_support(classes: SequenceClasses, batch: int, T: int, generators, table: SupportTable,
                   dtype=torch.float32) -> SupportBatch:
    """The batch of :func:`sample_tokens`, counted over each class's slots: counts (S, B, s).

    ``generators`` is a list of S generators (one batch each; a single generator gives
    S = 1). On a CPU the tokens are exactly those of ``sample_tokens`` with the same
    generator state: torch.multinomial draws one uniform (float64) per token, row after row,
    and returns the first token whose cumulative probability reaches it; here the same
    uniforms come from one ``torch.rand`` call and the search runs over the class's support
    only (tokens of probability 0 never come first). Only a uniform of exactly 0
    (probability 2^-53 a draw) could differ. On CUDA it is a sampler of the same distribution.
    """
    if isinstance(generators, torch.Generator):
        generators = [generators]
    batch = positive_int("batch size", batch)
    T = positive_int("T (sequence length)", T, minimum=2)
    device = table.cols.device
    if T == 2:   # one token a sequence: torch.multinomial then draws differently (argmax of p/q, q ~ Exp(1))
        draws = [sample_tokens(classes, batch, T, g) for g in generators]
        cls = torch.stack([d.classes for d in draws])
        slot = torch.gather(table.token_slot[cls], 2, torch.stack([d.tokens[:, :1] for d in draws]))
    else:
        cls = torch.empty(len(generators), batch, dtype=torch.long, device=device)
        u = torch.empty(len(generators), batch, T - 1, dtype=torch.float64, device=device)
        for i, g in enumerate(generators):   # in place: the same draws as randint, then rand
            torch.randint(classes.K, (batch,), generator=g, out=cls[i], device=device)
            torch.rand(batch, T - 1, generator=g, out=u[i], dtype=torch.float64, device=device)
        # support position of each token: the first whose cumulative probability reaches u
        if table.bucket is not None:
            pos = _cdf_position(table, cls, u)
        elif table.plain:
            pos = torch.searchsorted(table.cum[0], u)
        else:
            pos = torch.searchsorted(table.cum[cls], u)
        slot = pos if table.plain else torch.gather(table.slot_of[cls], 2, pos)
    counts = torch.zeros(*cls.shape, table.cols.shape[1], dtype=dtype, device=device)
    counts.scatter_add_(2, slot, torch.ones((), dtype=dtype, device=device).expand(slot.shape))
    query = torch.tensor(classes.query, device=device).index_select(0, cls.view(-1)).view(cls.shape)
    labels = torch.tensor(classes.next_token, device=device).index_select(0, cls.view(-1)).view(cls.shape)
    return SupportBatch(counts, query, labels, cls)
