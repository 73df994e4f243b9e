"""Brute-force reference of native/cachesim.c for tests: the same policies (docs/commands/whatif.md) in
plain Python, one dict per line, written for clarity, not speed (thousands of accesses)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

APP, OS = 0, 1


@dataclass
class Cache:
    sets: int
    ways: int
    lines: list[list[dict[str, Any]]] = field(default_factory=list)
    ovf: list[bool] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.lines = [[] for _ in range(self.sets)]
        self.ovf = [False] * self.sets

    def set_of(self, tag: int) -> list[dict[str, Any]]:
        return self.lines[tag % self.sets]

    def find(self, tag: int) -> dict[str, Any] | None:
        return next((x for x in self.set_of(tag) if x["tag"] == tag), None)


class RefSim:
    def __init__(self, cfg: dict[str, int], sources: list[tuple[int, int, int]]) -> None:
        self.c = cfg
        self.l1 = Cache(cfg["l1_sets"], cfg["l1_ways"]) if cfg["l1_sets"] else None
        self.l2 = Cache(cfg["l2_sets"], cfg["l2_ways"])
        self.os = Cache(cfg["os_sets"], cfg["os_ways"]) if cfg["os_sets"] else None
        self.sources = [list(s) + [0] for s in sources]  # base, lines, write_every, cursor
        self.now = 0
        self.ticks = 0
        self.st: dict[str, int] = {}

    def stamp(self) -> int:
        self.ticks += 1
        return self.ticks

    def bump(self, k: str, n: int = 1) -> None:
        self.st[k] = self.st.get(k, 0) + n

    def home(self, lvl: int) -> Cache:
        return self.os if lvl == OS and self.os else self.l2

    def other(self, c: Cache) -> Cache | None:
        return None if self.os is None else (self.os if c is self.l2 else self.l2)

    def leave(self, c: Cache, x: dict[str, Any], by: int, may_overflow: bool) -> None:
        c.set_of(x["tag"]).remove(x)
        if x["dirty"]:
            self.bump("writebacks")
        if x["lvl"] == APP and by == OS and c is not self.l1:
            self.bump("app_evicted_by_os")
        o = self.other(c) if c is not self.l1 else None
        if may_overflow and o is not None and self.c["overflow"] and not x["alien"]:
            s = o.set_of(x["tag"])
            if 2 * sum(y["alien"] for y in s) >= o.ways:
                self.bump("overflow_rejected")
                return
            if len(s) >= o.ways:
                self.leave(o, min((y for y in s if not y["alien"]), key=lambda y: y["last"]), self.cur, False)
            s.append({"tag": x["tag"], "last": x["last"], "dirty": False, "alien": True, "lvl": x["lvl"]})
            c.ovf[x["tag"] % c.sets] = True
            self.bump("overflows")

    def install(self, c: Cache, tag: int, lvl: int, dirty: bool) -> None:
        s = c.set_of(tag)
        if len(s) >= c.ways:
            self.leave(c, min(s, key=lambda y: (not y["alien"], y["last"])), self.cur, True)
        s.append({"tag": tag, "last": self.stamp(), "dirty": dirty, "alien": False, "lvl": lvl})

    def l2_access(self, tag: int, lvl: int, write: bool) -> None:
        h = self.home(lvl)
        o = self.other(h)
        x = h.find(tag)
        if x is not None and not x["alien"]:
            self.bump(f"home_hits_{'os' if lvl else 'app'}")
            x["last"] = self.stamp()
            x["dirty"] |= write
            return
        y = o.find(tag) if o is not None and self.c["overflow"] and h.ovf[tag % h.sets] else None
        if y is not None and y["alien"]:
            self.bump(f"other_hits_{'os' if lvl else 'app'}")
            o.set_of(tag).remove(y)  # type: ignore[union-attr]
            self.install(h, tag, lvl, y["dirty"] or write)
            return
        self.bump(f"misses_{'os' if lvl else 'app'}")
        self.install(h, tag, lvl, write)

    def access(self, addr: int, lvl: int, write: bool) -> None:
        if self.l1 is None:
            return self.l2_access(addr >> 6, lvl, write)
        sh = self.c["l1_line_shift"]
        tag = addr >> sh
        x = self.l1.find(tag)
        if x is not None:
            x["last"] = self.stamp()
            x["dirty"] |= write
            return None
        s = self.l1.set_of(tag)
        if len(s) >= self.l1.ways:
            v = min(s, key=lambda y: y["last"])
            s.remove(v)
            if v["dirty"]:
                self.l2_access(v["tag"] >> (6 - sh), v["lvl"], True)
        self.l2_access(addr >> 6, lvl, False)
        s.append({"tag": tag, "last": self.stamp(), "dirty": write, "alien": False, "lvl": lvl})
        return None

    def flush(self) -> None:
        assert self.os is not None
        for c in (self.os, self.l2):
            for s in c.lines:
                for x in [x for x in s if c is self.os or x["alien"]]:
                    if x["dirty"]:
                        self.bump("writebacks")
                    s.remove(x)
            c.ovf = [False] * c.sets

    def burst(self, src: int, n: int) -> None:
        self.cur = OS
        base, lines, every, cursor = self.sources[src]
        for j in range(n):
            self.now += 1
            self.access(((base >> 6) + (cursor + j) % lines) << 6, OS, bool(every) and j % every == every - 1)
        self.sources[src][3] += n
        if self.c["flush"] and self.os is not None:
            self.flush()
        self.cur = APP

    def run(self, trace: list[int], bursts: list[tuple[int, int, int]]) -> dict[str, int]:
        """trace words as in js_cachesim.h; bursts (pos, src, len) sorted by pos."""
        self.cur = APP
        b = 0
        for i, w in enumerate(trace):
            while b < len(bursts) and bursts[b][0] <= i:
                self.burst(bursts[b][1], bursts[b][2])
                b += 1
            addr, op = w >> 2, w & 3
            self.now += 1
            self.access(addr, APP, op == 1)
            if op == 2:
                self.now += 1
                self.access(addr, APP, True)
        return self.st
