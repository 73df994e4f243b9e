"""Happens-before between sub-box executions of two consecutive iterations.

Node (s, k) is sub-box s in iteration k (k = 0, 1).  Edges: each thread's
program order, a thread's last sub-box of iteration 0 before its first of
iteration 1, and every signal from its poster (s, k) to its waiter
(s', k + tokens).  Orders that hold between iterations k and k+1 hold for every
k (the schedule repeats), and no path from iteration 0 to iteration 1 passes
through a later one, so two iterations decide every question the compiler and
the verifier ask.  Sets of nodes are Python ints used as bitsets.
"""

from __future__ import annotations

import itertools
from graphlib import CycleError, TopologicalSorter


class Order:
    """Reachability over the two-iteration unrolling; edges may be added one at a time."""

    def __init__(self, n: int, threads: list[list[int]], signals: list[tuple[int, int, int]] = ()) -> None:  # type: ignore[assignment]
        self.n = n
        self.succ: list[set[int]] = [set() for _ in range(2 * n)]
        for subs in threads:
            for it in (0, 1):
                for a, b in itertools.pairwise(subs):
                    self.succ[a + it * n].add(b + it * n)
            if subs:
                self.succ[subs[-1]].add(subs[0] + n)
        for src, dst, tokens in signals:
            for u, v in self._edges(src, dst, tokens):
                self.succ[u].add(v)
        self.desc: list[int] = []
        self._close()

    def node(self, s: int, it: int) -> int:
        return s + it * self.n

    def _close(self) -> None:
        ts = TopologicalSorter({v: () for v in range(2 * self.n)})
        for v, ss in enumerate(self.succ):
            for w in ss:
                ts.add(w, v)
        try:
            order = list(ts.static_order())
        except CycleError as err:
            raise ValueError(f"cyclic order among {err.args[1]}") from None
        desc = [0] * (2 * self.n)
        for v in reversed(order):
            d = 0
            for w in self.succ[v]:
                d |= desc[w] | (1 << w)
            desc[v] = d
        self.desc = desc

    def add_signal(self, src: int, dst: int, tokens: int) -> None:
        """Poster `src` in iteration k releases waiter `dst` in iteration k + tokens."""
        for u, v in self._edges(src, dst, tokens):
            if v in self.succ[u]:
                continue
            self.succ[u].add(v)
            gain = self.desc[v] | (1 << v)
            ubit = 1 << u
            for w in range(2 * self.n):
                if w == u or self.desc[w] & ubit:
                    self.desc[w] |= gain

    def _edges(self, src: int, dst: int, tokens: int) -> list[tuple[int, int]]:
        if tokens == 0:
            return [(src, dst), (src + self.n, dst + self.n)]
        if tokens == 1:
            return [(src, dst + self.n)]
        return []  # releases an iteration beyond the two modelled: orders nothing here (conservative)

    def before(self, a: int, ia: int, b: int, ib: int) -> bool:
        """Does (a, ia) happen before (b, ib)?"""
        return bool(self.desc[self.node(a, ia)] >> self.node(b, ib) & 1)

    def ancestors0(self) -> list[int]:
        """Per sub-box, the bitset of sub-boxes that happen before it within one iteration."""
        mask = (1 << self.n) - 1
        anc = [0] * self.n
        for v in range(self.n):
            d = self.desc[v] & mask
            while d:
                low = d & -d
                anc[low.bit_length() - 1] |= 1 << v
                d ^= low
        return anc
