"""Exact end-to-end latency and frame-loss analysis of a PTTS chain (the thesis, section 5.6).

Semantics (the thesis's, made precise)
------------------------------------
Component C_i triggers at every instant of A_i = {o_i + n*d_i : n integer}: the
system is in its steady state, so offsets act modulo the period and the state
at the end of a hyper-period h = lcm(d_i) equals the state at its start (the
the thesis's eq. 5.7 sums from t_b - d_i + 1 for every triggering, the first one
included, which is this reading).  A triggering of C_0 at a ("a frame") starts
a container; C_0 produces it at a + X_0.  A container produced at p is consumed
by the first triggering of the next component at or after p (production
precedes consumption at equal instants):

    T_0 = a,   T_{i+1} = ceil_{A_{i+1}}(T_i + X_i),   latency = T_{N-1} + X_{N-1} - a

with X_i drawn from the ETP f_i independently per triggering.  The end-to-end
distribution is the average over the h/d_0 triggerings of C_0 in one
hyper-period (the thesis's forest of latency trees, eq. 5.11, flattened by
eq. 5.12 and aggregated).

How it is computed without walking a million trees one by one
-------------------------------------------------------------
The path is a Markov chain over triggering instants, and what happens after
T_i depends only on T_i modulo M_i = lcm(d_i, ..., d_{N-1}).  So the engine
carries a measure over (class of T_i mod M_i, delay so far T_i - a) from stage
to stage: each state expands into the few triggerings of C_{i+1} that can
consume its container, with the thesis's eq. 5.7 probability
P(T_{i+1} = b | T_i = t) = F_i(b - t) - F_i(b - t - d_{i+1}) (F_i the cumulative
ETP), and equal states are merged (bincount/unique).  Many frames share the
class of their C_1 triggering, so the work after stage 0 is bounded by the
number of classes times the delay range, not by the number of trees times the
branching.  The last component adds its ETP by one convolution.  All
probabilities are sums of products of ETP masses: exact up to float rounding.

Loss
----
`loss` is the probability, per frame, that its container and the next frame's
container are consumed by the same triggering of some component C_i, i >= 1
(both lie in C_i's one-place input buffer between two of its triggerings, so
the one written first is overwritten before it is read: one frame's data is
lost).  It is computed exactly by the same propagation over pairs of paths
(class of T_i^k, gap T_i^{k+1} - T_i^k), the two frames having independent
execution times until they meet; the collision is counted at the first
component where they meet.  A run of m consecutive frames meeting in one
buffer loses m-1 frames and counts m-1 adjacent collisions, so this is the
expected number of frames lost per frame, except for overwrites between frames
that are not consecutive and do not meet their neighbour (possible only when a
frame can overtake the next one; the simulation counts those too and reports
both).  The latency distribution includes every frame, lost or not: a lost
frame contributes the latency its container would have had (the thesis's trees).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from jitterscope.ptts.model import ETP, Model, ModelError

# seconds per expanded state, measured on the 2-core reference machine (see
# BENCHMARKS.md); used only to predict and refuse too-long analyses
SEC_PER_STATE = 1.6e-8
SEC_PER_PAIR_STATE = 3.5e-9
SEC_PER_CONV = 2.0e-9
CHUNK_STATES = 1 << 21
# rows computed at once inside a chunk, so the temporaries stay in cache
BLOCK_ROWS = 1 << 14
# largest period (ticks) whose transitions are tabulated per wait
TABLE_MAX = 1 << 20


@dataclass
class Chain:
    """The model in the engine's terms: ticks, offsets modulo the period."""

    d: list[int]
    o: list[int]
    etp: list[ETP]
    names: list[str]
    # per stage: (E, P, j0) of every wait, for `from_wait`
    _tables: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, model: Model) -> Chain:
        return cls(
            [c.period for c in model.components],
            [c.offset % c.period for c in model.components],
            [c.etp for c in model.components],
            [c.name for c in model.components],
        )

    @property
    def n(self) -> int:
        return len(self.d)

    @property
    def h(self) -> int:
        return math.lcm(*self.d)

    @property
    def trees(self) -> int:
        return self.h // self.d[0]

    def M(self, i: int) -> int:
        """lcm of the periods from component i to the end."""
        return math.lcm(*self.d[i:])

    def K(self, i: int) -> int:
        """Number of classes of C_i's triggerings (modulo M_i)."""
        return self.M(i) // self.d[i]

    def branching(self, i: int) -> int:
        """Most triggerings of C_{i+1} that can consume one container of C_i."""
        e, d = self.etp[i], self.d[i + 1]
        return (e.hi - e.lo + d - 1) // d + 1

    def delay_bounds(self, i: int) -> tuple[int, int]:
        """Bounds of T_i - a (the delay before C_i triggers on the frame)."""
        lo = hi = 0
        for j in range(i):
            lo += self.etp[j].lo
            hi += self.etp[j].hi + self.d[j + 1] - 1
        return lo, hi

    def reach(self, i: int) -> int:
        """How much the gap between two frames' paths can still change from stage i to the end."""
        return sum(self.etp[j].hi - self.etp[j].lo + self.d[j + 1] - 1 for j in range(i, self.n - 1))

    def transitions(self, i: int, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For C_i triggered at t: candidate delays E to the consuming C_{i+1} triggering and their probabilities.

        Thesis eq. 5.7: u(i+1, t, b) = sum_{x = b-d+1}^{b} f_i(x - t) = F_i(b-t) - F_i(b-t-d).
        Rows are padded with probability-0 candidates.
        """
        w = (self.o[i + 1] - t) % self.d[i + 1]
        E, P, _ = self.from_wait(i, w, len(w) > self.d[i + 1])
        return E, P

    def from_wait(self, i: int, w: np.ndarray, tabulate: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """`transitions` by the wait w from t to C_{i+1}'s next triggering, plus the index j0 of the first
        candidate triggering after that one.

        Everything depends on t only through w, which takes at most d_{i+1} values: with more rows
        than that (`tabulate`), the rows are looked up in a table of all waits, computed once per stage.
        """
        d = self.d[i + 1]
        if tabulate and d <= TABLE_MAX:
            if i not in self._tables:
                self._tables[i] = self._candidates(i, np.arange(d, dtype=np.int64))
            E, P, j0 = self._tables[i]
            # np.take: fancy indexing of rows is several times slower
            return np.take(E, w, axis=0), np.take(P, w, axis=0), np.take(j0, w)
        return self._candidates(i, w)

    def _candidates(self, i: int, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        etp, d = self.etp[i], self.d[i + 1]
        j0 = np.maximum(0, -((w - etp.lo) // d))  # first candidate not earlier than t + lo
        e0 = w + j0 * d
        E = e0[:, None] + d * np.arange(self.branching(i), dtype=np.int64)
        P = etp.interval(E - d, E)
        return E, P, j0

    def next_class(self, i: int, t: np.ndarray, w: np.ndarray, j0: np.ndarray, K: int) -> np.ndarray:
        """Class modulo K of each candidate C_{i+1} triggering (rows of `from_wait`), without dividing per candidate.

        t + w is C_{i+1}'s first triggering at or after t, so the candidate j is triggering
        (t + w - o) / d + j0 + j of C_{i+1}, exactly.
        """
        d, o = self.d[i + 1], self.o[i + 1]
        B = self.branching(i)
        q = (((t + w - o) // d + j0) % K)[:, None] + np.arange(B, dtype=np.int64)
        if B <= K:
            np.subtract(q, K, out=q, where=q >= K)
        else:
            q %= K
        return q


def predicted_work(model: Model) -> int:
    """Thesis eq. 5.15: (h/d_0) * prod_{i=0}^{N-2} ceil((tau_hat(i) - tau_check(i) + 1) / d_{i+1})."""
    ch = Chain.of(model)
    w = ch.trees
    for i in range(ch.n - 1):
        w *= -(-ch.etp[i].span // ch.d[i + 1])
    return w


def collisions_possible(ch: Chain) -> bool:
    """False when no two consecutive frames can ever meet in a buffer (loss is exactly 0)."""
    if ch.n < 2:
        return False
    e0, d1 = ch.etp[0], ch.d[1]
    closest = ch.d[0] - (e0.hi - e0.lo + d1 - 1)  # smallest possible gap at C_1
    return closest <= ch.reach(1)


@dataclass
class Estimate:
    trees: int
    predicted_work: int
    states: int
    pair_states: int
    seconds: float
    peak_bytes: int = 0  # memory the largest stage may hold (states kept between stages)


def estimate(model: Model, loss: bool = True) -> Estimate:
    """How many states the engine will expand and how long that takes (for refusing and --approximate)."""
    ch = Chain.of(model)
    n0 = ch.trees
    states = 0
    s = n0
    s_last = n0
    peak = n0
    for i in range(ch.n - 1):
        b = ch.branching(i)
        states += s * b
        lo, hi = ch.delay_bounds(i + 1)
        s_last = s * b
        s = min(s * b, ch.K(i + 1) * (hi - lo + 1)) if i + 1 < ch.n - 1 else 0
        peak = max(peak, s)
    pair = 0
    if loss and collisions_possible(ch):
        s = n0
        for i in range(ch.n - 1):
            b = ch.branching(i)
            pair += s * b * b
            s = min(s * b * b, ch.K(i + 1) * (2 * ch.reach(i + 1) + 1)) if i + 1 < ch.n - 1 else 0
    # the last component's profile is added by one convolution over the final delays
    lo, hi = ch.delay_bounds(ch.n - 1)
    conv = min(s_last, hi - lo + 1) * len(ch.etp[-1].support)
    secs = states * SEC_PER_STATE + pair * SEC_PER_PAIR_STATE + conv * SEC_PER_CONV
    # per kept state: class, delay and weight (24 bytes), about twice over while merging
    return Estimate(n0, predicted_work(model), states, pair, secs, peak * 48)


@dataclass
class Distribution:
    """A latency PMF on ticks (support ascending, probabilities > 0)."""

    times: np.ndarray
    probs: np.ndarray

    def cdf(self) -> np.ndarray:
        return np.cumsum(self.probs)


@dataclass
class Result:
    hyperperiod: int
    trees: int
    frames: int
    latency: Distribution
    loss: float | None
    loss_by_component: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0
    states: int = 0


def _aggregate(keys: np.ndarray, weights: np.ndarray, key_range: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Sum weights of equal keys; returns (unique keys, sums), dropping exact zeros."""
    if len(keys) == 0:
        return keys, weights
    if key_range is not None and key_range <= max(8 * len(keys), 1 << 22) and key_range <= 1 << 27:
        acc = np.bincount(keys, weights, minlength=key_range)
        nz = np.flatnonzero(acc)
        return nz.astype(np.int64), acc[nz]
    u, inv = np.unique(keys, return_inverse=True)
    s = np.bincount(inv, weights)
    keep = s != 0
    return u[keep], s[keep]


DENSE_MAX = 1 << 25


class _Accumulator:
    """Sums weights by integer key: over a dense range when it is small, else by sorted merging.

    Keys arrive in batches and are summed in groups of at least FLUSH keys, a
    group's sums starting from zero and then added to the total (in the dense
    case, as a bincount of the group would: the group's weights are added key by
    key in arrival order, so how a group arrives in batches does not change one
    bit; only where groups end does).  `add` ends a group once FLUSH keys have
    arrived; `scatter` and `count` split that for callers that produce one
    batch in pieces small enough to stay in cache.
    """

    FLUSH = 1 << 24

    def __init__(self, key_range: int) -> None:
        self.range = key_range
        self.is_dense = key_range <= DENSE_MAX
        self.dense: np.ndarray | None = None  # the first group's sums become the total
        self.group: np.ndarray | None = None
        self.parts: list[tuple[np.ndarray, np.ndarray]] = []
        self.buf_k: list[np.ndarray] = []
        self.buf_w: list[np.ndarray] = []
        self.buffered = 0

    def add(self, keys: np.ndarray, weights: np.ndarray) -> None:
        self.scatter(keys, weights)
        self.count(len(keys))

    def scatter(self, keys: np.ndarray, weights: np.ndarray) -> None:
        """Sum a piece of the current batch (the arrays may be reused by the caller afterwards)."""
        if self.is_dense:
            if self.group is None:
                self.group = np.zeros(self.range)
            np.add.at(self.group, keys, weights)  # in order, as bincount would (and with no array per call)
        else:
            self.buf_k.append(keys.copy())
            self.buf_w.append(weights.copy())

    def count(self, n: int) -> None:
        """The current batch, of n keys, has been scattered: end the group if it is full."""
        self.buffered += n
        if self.buffered >= self.FLUSH:
            self._flush()

    def _flush(self) -> None:
        self.buffered = 0
        if self.is_dense:
            if self.group is None:
                return
            # weights are >= 0, so 0.0 + group would be group bit for bit
            if self.dense is None:
                self.dense = self.group
            else:
                self.dense += self.group
            self.group = None
            return
        if not self.buf_k:
            return
        k = np.concatenate(self.buf_k) if len(self.buf_k) > 1 else self.buf_k[0]
        w = np.concatenate(self.buf_w) if len(self.buf_w) > 1 else self.buf_w[0]
        self.buf_k, self.buf_w = [], []
        m = w > 0
        self.parts.append(_aggregate(k[m], w[m], None))

    def result_split(self, inner: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """`result` with each key split as outer * inner + rest: (outer, rest, sums)."""
        keys, sums = self.result()
        outer = keys // inner  # division by one number is cheap (np.divmod is not)
        return outer, keys - outer * inner, sums

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        self._flush()
        if self.is_dense:
            if self.dense is None:
                return np.zeros(0, np.int64), np.zeros(0)
            nz = np.flatnonzero(self.dense != 0)  # several times faster than on the floats
            return nz, np.take(self.dense, nz)
        if not self.parts:
            return np.zeros(0, np.int64), np.zeros(0)
        if len(self.parts) == 1:
            return self.parts[0]
        return _aggregate(np.concatenate([k for k, _ in self.parts]), np.concatenate([w for _, w in self.parts]), None)


@dataclass
class _States:
    """The measure carried from stage to stage: rows (class, delay or gap, weight) in ascending key order.

    After a stage summed over a dense range, the rows are read from its sums
    window by window, so no array of all states is made (fresh memory is costly:
    page faults) and each piece stays in cache.
    """

    n: int
    rows: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    dense: np.ndarray | None = None
    inner: int = 1  # key = class * inner + (second - offset)
    offset: int = 0

    WINDOW = 1 << 16

    @classmethod
    def of(cls, acc: _Accumulator, inner: int, offset: int) -> _States:
        acc._flush()
        if acc.is_dense:
            dense = acc.dense
            return cls(0 if dense is None else int(np.count_nonzero(dense)), dense=dense, inner=inner, offset=offset)
        outer, rest, sums = acc.result_split(inner)
        return cls(len(outer), rows=(outer, rest + offset, sums))

    def _windows(self) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        if self.rows is not None:
            yield self.rows
            return
        if self.dense is None:
            return
        for a in range(0, len(self.dense), self.WINDOW):
            keys = np.flatnonzero(self.dense[a : a + self.WINDOW] != 0)  # several times faster than on floats
            if len(keys) == 0:
                continue
            keys += a
            outer = keys // self.inner
            yield outer, keys - outer * self.inner + self.offset, np.take(self.dense, keys)

    def pieces(self, chunk: int) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, int]]:
        """(classes, seconds, weights, rows) of at most BLOCK_ROWS rows, never across a multiple of `chunk`
        rows; `rows` is the number of rows of the chunk a piece ends (else 0), so sums can be grouped
        by chunks as before the rows were streamed."""
        r = 0
        for q, x, w in self._windows():
            a = 0
            while a < len(q):
                b = min(len(q), a + BLOCK_ROWS, a + chunk - r)
                r += b - a
                yield q[a:b], x[a:b], w[a:b], (r if r == chunk else 0)
                r %= chunk
                a = b
        if r:
            empty = np.zeros(0, dtype=np.int64)
            yield empty, empty, np.zeros(0), r

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        parts = list(self._windows())
        if not parts:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
        if len(parts) == 1:
            return parts[0]
        return (
            np.concatenate([p[0] for p in parts]),
            np.concatenate([p[1] for p in parts]),
            np.concatenate([p[2] for p in parts]),
        )


def _frames(ch: Chain, frames: np.ndarray | None) -> np.ndarray:
    if frames is None:
        return np.arange(ch.trees, dtype=np.int64)
    f = np.asarray(frames, dtype=np.int64) % ch.trees
    return f


def latency_distribution(model: Model, frames: np.ndarray | None = None) -> tuple[Distribution, int]:
    """The exact end-to-end latency PMF averaged over the given triggerings of C_0 (default: all)."""
    ch = Chain.of(model)
    ks = _frames(ch, frames)
    states = _States(len(ks), rows=(ks, np.zeros(len(ks), dtype=np.int64), np.full(len(ks), 1.0 / len(ks))))
    expanded = 0
    for i in range(ch.n - 1):
        d_next, o_next = ch.d[i + 1], ch.o[i + 1]
        last = i + 1 == ch.n - 1
        K_next = 1 if last else ch.K(i + 1)
        dlo, dhi = ch.delay_bounds(i + 1)
        D = dhi - dlo + 1
        if K_next * D >= 2**62:
            raise ModelError(
                f"component {ch.names[i + 1]!r}: field period: too many phase classes "
                f"({K_next}) times delays ({D}) to index; use --approximate"
            )
        B = ch.branching(i)
        tabulate = states.n > d_next
        acc = _Accumulator(K_next * D)
        keys = np.empty((min(BLOCK_ROWS, states.n), B), dtype=np.int64)
        wts = np.empty(keys.shape)
        # chunks: the batches the sums are grouped by (see _Accumulator)
        for q, delta, w, chunk_rows in states.pieces(max(1, CHUNK_STATES // B)):
            if len(q):
                t = ch.o[i] + q * ch.d[i]
                wait = (o_next - t) % d_next
                E, P, j0 = ch.from_wait(i, wait, tabulate)
                # a real candidate lies within the stage's delay bounds; padding (probability 0)
                # may not, and is sent to key 0 where it adds nothing
                key, wt = keys[: len(q)], wts[: len(q)]
                np.add(E, (delta - dlo)[:, None], out=key)
                if not last:
                    qn = ch.next_class(i, t, wait, j0, K_next)
                    qn *= D
                    key += qn
                key[P == 0] = 0
                np.multiply(w[:, None], P, out=wt)
                acc.scatter(key.ravel(), wt.ravel())
            if chunk_rows:
                acc.count(chunk_rows * B)
        expanded += states.n * B
        states = _States.of(acc, D, dlo)
    _, delta, w = states.arrays()
    # the last component: add its ETP (one convolution)
    f = ch.etp[-1]
    times, probs = _convolve(delta, w, f)
    return Distribution(times, probs), expanded


def _convolve(delta: np.ndarray, w: np.ndarray, f: ETP) -> tuple[np.ndarray, np.ndarray]:
    if len(delta) * len(f.support) <= 4_000_000:
        t = (delta[:, None] + f.support[None, :]).ravel()
        p = (w[:, None] * f.prob[None, :]).ravel()
        lo = int(t.min())
        k, s = _aggregate(t - lo, p, int(t.max()) - lo + 1)
        return k + lo, s
    # dense: direct convolution in C (exact sums of products, no FFT noise)
    dlo, dhi = int(delta.min()), int(delta.max())
    a = np.zeros(dhi - dlo + 1)
    np.add.at(a, delta - dlo, w)
    b = np.zeros(f.hi - f.lo + 1)
    b[f.support - f.lo] = f.prob
    c = np.convolve(a, b)
    support_mask = np.convolve(a != 0, b != 0) > 0  # exact support, so rounding never invents mass
    nz = np.flatnonzero(support_mask & (c > 0))
    return nz.astype(np.int64) + dlo + f.lo, c[nz]


def loss_probability(model: Model, frames: np.ndarray | None = None) -> tuple[float, list[float], int]:
    """Exact probability that frame k's and frame k+1's containers meet in one buffer (see module doc).

    Returns (total, per-component list where index i is the input buffer of C_i, states expanded).
    """
    ch = Chain.of(model)
    by = [0.0] * ch.n
    if not collisions_possible(ch):
        return 0.0, by, 0
    ks = _frames(ch, frames)
    states = _States(len(ks), rows=(ks, np.full(len(ks), ch.d[0], dtype=np.int64), np.full(len(ks), 1.0 / len(ks))))
    expanded = 0
    for i in range(ch.n - 1):
        d_next, o_next = ch.d[i + 1], ch.o[i + 1]
        last = i + 1 == ch.n - 1
        R = 0 if last else ch.reach(i + 1)
        K_next = 1 if last else ch.K(i + 1)
        G = 2 * R + 1
        B = ch.branching(i)
        tabulate = states.n > d_next
        acc = _Accumulator(0 if last else K_next * G)
        j = np.arange(B, dtype=np.int64)
        steps = ((j[None, :] - j[:, None]) * d_next).ravel()
        gs_buf = np.empty((min(BLOCK_ROWS, states.n), B * B), dtype=np.int64)
        hit_total = 0.0
        hits: list[np.ndarray] = []
        keys: list[np.ndarray] = []
        wts: list[np.ndarray] = []
        # a chunk's hits and states are concatenated in row order before they are summed, so the
        # sums see the same arrays however the rows arrive
        for q, gc, wc, chunk_rows in states.pieces(max(1, CHUNK_STATES // (B * B))):
            if len(q):
                t = ch.o[i] + q * ch.d[i]
                E1, P1, _ = ch.from_wait(i, (o_next - t) % d_next, tabulate)
                E2, P2, _ = ch.from_wait(i, (o_next - t - gc) % d_next, tabulate)
                # candidates are E[:, j] = E[:, 0] + j * d, so the pair (j1, j2) moves the gap by
                # (j2 - j1) * d; plus R, the next gap is kept when within [0, 2R] (one unsigned comparison)
                base = gc + R + E2[:, 0] - E1[:, 0]
                gs = np.add(base[:, None], steps, out=gs_buf[: len(q)])
                idx = np.flatnonzero(gs.view(np.uint64) <= 2 * R)  # in (row, j1, j2) order
                if len(idx):
                    rows = idx // (B * B)
                    r1 = (idx - rows * (B * B)) // B
                    i1 = rows * B + r1  # flat index of (row, j1)
                    i2 = rows * B + (idx - i1 * B)  # of (row, j2)
                    wsel = np.take(wc, rows) * np.take(P1, i1) * np.take(P2, i2)
                    gsel = np.take(gs, idx)
                    hit = gsel == R
                    hits.append(wsel[hit])
                    if not last:
                        keep = ~hit & (wsel > 0)
                        i1, gsel, wsel = i1[keep], gsel[keep], wsel[keep]
                        tn = np.take(t, i1 // B) + np.take(E1, i1)
                        qn = ((tn - o_next) // d_next) % K_next
                        keys.append(qn * G + gsel)
                        wts.append(wsel)
            if chunk_rows:
                if hits:
                    hit_total += float(np.concatenate(hits).sum())
                if keys:
                    acc.add(np.concatenate(keys), np.concatenate(wts))
                hits, keys, wts = [], [], []
        expanded += states.n * B * B
        by[i + 1] = hit_total
        if last:
            break
        states = _States.of(acc, G, -R)
        if states.n == 0:
            break
    return float(sum(by)), by, expanded


def analyse(model: Model, loss: bool = True, frames: np.ndarray | None = None) -> Result:
    """Exact latency distribution and loss probability of the whole hyper-period (or of some frames)."""
    t0 = time.perf_counter()
    ch = Chain.of(model)
    dist, n1 = latency_distribution(model, frames)
    lp, by, n2 = loss_probability(model, frames) if loss else (None, [0.0] * ch.n, 0)
    nfr = ch.trees if frames is None else len(np.asarray(frames))
    return Result(
        ch.h,
        ch.trees,
        nfr,
        dist,
        lp,
        {ch.names[i]: by[i] for i in range(1, ch.n)} if loss else {},
        time.perf_counter() - t0,
        n1 + n2,
    )


# ---------------------------------------------------------------------------
# One latency tree, as the thesis draws it (figures 5.4 and 5.5)


@dataclass
class TreeNode:
    component: int  # index; == N for the end node (output of the last component)
    time: int  # ticks (absolute, within the hyper-period's timeline)
    children: list[tuple[float, TreeNode]] = field(default_factory=list)


def latency_tree(model: Model, k: int, max_nodes: int = 100_000) -> TreeNode:
    """The latency tree of the k-th triggering of C_0 (thesis eqs. 5.6-5.10)."""
    ch = Chain.of(model)
    a = ch.o[0] + (k % ch.trees) * ch.d[0]
    count = [0]

    def Z(i: int, t: int) -> TreeNode:
        count[0] += 1
        if count[0] > max_nodes:
            raise ModelError(f"latency tree {k} has more than {max_nodes} nodes")
        node = TreeNode(i, t)
        if i + 1 == ch.n:  # W: the last component adds its latency
            f = ch.etp[i]
            for x, p in zip(f.support.tolist(), f.prob.tolist()):
                node.children.append((p, TreeNode(ch.n, t + x)))
            return node
        E, P = ch.transitions(i, np.array([t], dtype=np.int64))
        for e, p in zip(E[0].tolist(), P[0].tolist()):
            if p > 0:
                node.children.append((p, Z(i + 1, t + e)))
        return node

    return Z(0, a)


def flatten(node: TreeNode, p: float = 1.0) -> dict[int, float]:
    """Thesis eq. 5.12: leaves of the tree with path probabilities, equal instants aggregated."""
    out: dict[int, float] = {}
    if not node.children:
        out[node.time] = p
        return out
    for q, child in node.children:
        for t, r in flatten(child, p * q).items():
            out[t] = out.get(t, 0.0) + r
    return out
