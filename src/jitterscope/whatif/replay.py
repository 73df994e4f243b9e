"""Replay a recorded program on a simulated machine (spec A.13): ideal, as recorded, and with the DVFS
controller (controller.py) on every thread.

Two passes, because a thread's controller only sees its own jitter (the paper's controller "does
not have instantaneous knowledge of the critical path"; jitter counts meet only at create and join,
spec A.5):

1. per thread, in its own order (native: native/dvfs.c through ctypes; tests/support/dvfs_ref.py is the
   pure-Python reference it must match exactly): its compute (segment wall time minus the time lost in
   it) is cut into subframes of `subframe_ns` of nominal work (A.13); before each the controller picks a
   factor (after `warmup` subframes at 1.0), the work runs at tau(f), a change of factor stalls the core
   `transition_ns`, recorded lost time and wake-up jitter are added unchanged (DVFS speeds the program,
   not the kernel), and J += T - tau(f0), plus the L2-eviction term of A.6 (`evict_ns` per kernel burst
   in the subframe).  A create and a join force a deadline; a created thread starts with its creator's
   J, a join takes the max (A.5).  This gives each segment a map from recorded to simulated offset.
2. all threads together, in recorded order (timing.py): a segment starts when its thread's previous item
   ends; a wait ends at max(entry, its release on the releaser's simulated timeline + the wake-up
   latency), a barrier round's release being the latest simulated arrival of the round; a thread starts
   at its creator's simulated create + the recorded start latency.  Program order stays as recorded.
"""

from __future__ import annotations

import ctypes
import functools
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from jitterscope.errors import JitterscopeError
from jitterscope.native_bin import native_bin
from jitterscope.whatif.controller import Controller
from jitterscope.whatif.program import Program, Segment

LIB = "libjsdvfs.so"
OP_SEG, OP_WORK, OP_LOST, OP_CREATE, OP_END, OP_WAIT, OP_JOIN = range(7)
OP_DTYPE = np.dtype([("val", "f8"), ("a", "i8"), ("op", "i4"), ("item", "i4")])
I32, I64, F64 = ctypes.c_int32, ctypes.c_int64, ctypes.c_double
PF, PI = ctypes.POINTER(F64), ctypes.POINTER(I64)


@dataclass
class Mode:
    jitter: bool  # inject the recorded jitter
    ctl: Controller | None  # None: nominal frequency throughout
    subframe_ns: int = 330_000
    warmup: int = 90
    evict_ns: float = 0.0  # A.6 term booked on J per kernel burst: E x t_mem / n_banks


class Params(ctypes.Structure):
    _fields_ = [
        ("table", F64 * 64),
        ("ntable", I32),
        ("ctl", I32),
        ("jitter", I32),
        ("physical", I32),
        ("ceil", I32),
        ("warmup", I32),
        ("k", I64),
        ("alpha", F64),
        ("transition_ns", F64),
        ("subframe_ns", F64),
        ("evict_ns", F64),
    ]


class State(ctypes.Structure):
    _fields_ = [
        (n, F64)
        for n in (
            "j",
            "f",
            "left",
            "t",
            "tau0",
            "pending",
            "sim_off",
            "start_off",
            "rec",
            "scale",
            "evict",
            "busy",
            "energy",
        )
    ] + [("n", I64), ("item", I64), ("next", I64), ("open", I32), ("pad", I32), ("nbp", I64), ("nsub", I64)]


class Out(ctypes.Structure):
    _fields_ = [
        ("bp_rec", PF),
        ("bp_sim", PF),
        ("map_lo", PI),
        ("map_hi", PI),
        ("sub_item", PI),
        ("sub_off", PF),
        ("sub_f", PF),
        ("sub_t", PF),
        ("sub_j", PF),
        ("cap_bp", I64),
        ("cap_sub", I64),
    ]


@functools.lru_cache(maxsize=1)
def _lib() -> ctypes.CDLL:
    path = native_bin(LIB)
    try:
        lib = ctypes.CDLL(str(path))
    except OSError as err:
        raise JitterscopeError(f"cannot load {path} ({err}): run 'make native'") from None
    lib.js_dvfs_run.argtypes = [
        ctypes.POINTER(State),
        ctypes.POINTER(Params),
        ctypes.c_void_p,
        I64,
        ctypes.POINTER(Out),
    ]
    lib.js_dvfs_run.restype = I64
    lib.js_dvfs_layout.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_int]
    return lib


def c_layout() -> list[int]:
    out = (ctypes.c_uint64 * 16)()
    n = _lib().js_dvfs_layout(out, 16)
    return list(out[:n])


def py_layout() -> list[int]:
    fields: Any = OP_DTYPE.fields
    return [
        OP_DTYPE.itemsize,
        fields["op"][1],
        fields["item"][1],
        ctypes.sizeof(Params),
        Params.ntable.offset,
        Params.k.offset,
        Params.evict_ns.offset,
        ctypes.sizeof(State),
        State.n.offset,
        State.open.offset,
        State.nsub.offset,
        ctypes.sizeof(Out),
        Out.cap_sub.offset,
    ]


@dataclass
class Plan:
    """One thread's replay under a mode: where each recorded segment lands in simulated time, per subframe."""

    maps: list[tuple[np.ndarray, np.ndarray] | None]  # per item: segment offset map (rec -> sim)
    sub_item: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # per subframe: item,
    sub_off: np.ndarray = field(default_factory=lambda: np.zeros(0))  # sim offset in the item,
    sub_f: np.ndarray = field(default_factory=lambda: np.zeros(0))  # factor, busy time T,
    sub_t: np.ndarray = field(default_factory=lambda: np.zeros(0))  # J before it
    sub_j: np.ndarray = field(default_factory=lambda: np.zeros(0))
    end_j: float = 0.0
    busy: float = 0.0  # compute + stalls + jitter, simulated ns
    energy: float = 0.0  # sum f^3 T


@dataclass
class Ops:
    """One thread's op stream (js_dvfs.h) with the output capacities it can need."""

    ops: np.ndarray
    cap_sub: int
    cap_bp: int


def compile_ops(prog: Program, subframe_ns: int) -> dict[int, Ops]:
    """Every thread's items as ops; segment marks sorted as the reference does (create before lost at a tie)."""
    out: dict[int, Ops] = {}
    for tid, th in prog.threads.items():
        rows: list[tuple[float, int, int, int]] = []
        work = 0
        for i, it in enumerate(th.items):
            if isinstance(it, Segment):
                rows.append((0.0, i, OP_SEG, i))
                marks = sorted(
                    [(s - it.start, 1, e - s) for s, e in it.lost]
                    + [(c - it.start, 0, child) for c, child in it.creates]
                )
                for off, kind, val in marks:
                    rows.append((float(off), 0, OP_WORK, i))
                    rows.append((float(val), 0, OP_LOST, i) if kind == 1 else (0.0, val, OP_CREATE, i))
                rows.append((float(it.end - it.start), i, OP_END, i))
                work += it.end - it.start
            else:
                rows.append((float(it.jitter), i, OP_WAIT, i))
                if it.op == "join":
                    rows.append((0.0, it.releaser, OP_JOIN, i))
        ops = np.array(rows, dtype=OP_DTYPE)
        # a subframe closes on a full subframe of work or a create/join/end; each loop step writes at most 3
        # breakpoints (2 around a transition), every op at most one more
        cap_sub = work // max(subframe_ns, 1) + len(rows) + 4
        out[tid] = Ops(ops, cap_sub, 3 * (cap_sub + len(rows)) + len(rows) + 4)
    return out


def _params(mode: Mode) -> Params:
    p = Params()
    c = mode.ctl
    table = c.table if c else (1.0,)
    if len(table) > 64:
        raise JitterscopeError(f"the DVFS table has {len(table)} factors; at most 64")
    p.table[: len(table)] = table
    p.ntable, p.ctl, p.jitter, p.warmup = len(table), c is not None, mode.jitter, mode.warmup
    if c is not None:
        p.physical, p.ceil, p.k, p.alpha = c.model != "paper", c.quantize == "ceil", c.k, c.alpha
        p.transition_ns = c.transition_ns
    p.subframe_ns, p.evict_ns = float(mode.subframe_ns), float(mode.evict_ns)
    return p


class _Thread:
    """Pass 1 for one thread: the native loop, resumed after each create and join."""

    def __init__(self, tid: int, ops: Ops, nitems: int) -> None:
        self.ops, self.n = ops, len(ops.ops)
        self.bp_rec, self.bp_sim = np.empty(ops.cap_bp), np.empty(ops.cap_bp)
        self.map_lo, self.map_hi = np.full(nitems, -1, np.int64), np.full(nitems, -1, np.int64)
        self.subs = [np.empty(ops.cap_sub, np.int64)] + [np.empty(ops.cap_sub) for _ in range(4)]
        self.out = Out(
            *(
                a.ctypes.data_as(PF if a.dtype == np.float64 else PI)
                for a in (self.bp_rec, self.bp_sim, self.map_lo, self.map_hi, *self.subs)
            ),
            ops.cap_bp,
            ops.cap_sub,
        )
        self.state = State()
        self.state.f = 1.0

    def run(self, p: Params) -> int:
        at = _lib().js_dvfs_run(
            ctypes.byref(self.state), ctypes.byref(p), self.ops.ops.ctypes.data, self.n, ctypes.byref(self.out)
        )
        if at < 0:
            raise JitterscopeError("whatif dvfs: the replay's output bound was too small (a bug: please report it)")
        return int(at)

    def plan(self) -> Plan:
        s = self.state
        maps: list[tuple[np.ndarray, np.ndarray] | None] = [
            None if lo < 0 else (self.bp_rec[lo:hi], self.bp_sim[lo:hi]) for lo, hi in zip(self.map_lo, self.map_hi)
        ]
        k = int(s.nsub)
        item, off, f, t, j = (a[:k] for a in self.subs)
        return Plan(maps, item, off, f, t, j, end_j=s.j, busy=s.busy, energy=s.energy)


def _schedule(
    prog: Program, tid: int, mode: Mode, p: Params, j0: float, plans: dict[int, Plan], ops: dict[int, Ops]
) -> Plan:
    th = _Thread(tid, ops[tid], len(prog.threads[tid].items))
    th.state.j = j0
    while (at := th.run(p)) < th.n:
        op = th.ops.ops[at]
        other = int(op["a"])
        if op["op"] == OP_CREATE:
            if other in prog.threads and other not in plans:
                plans[other] = _schedule(prog, other, mode, p, th.state.j, plans, ops)
        else:
            done = plans.get(other)
            if done is not None:
                th.state.j = max(th.state.j, done.end_j)
    return th.plan()


def plan_all(prog: Program, mode: Mode, ops: dict[int, Ops] | None = None) -> dict[int, Plan]:
    ops = ops if ops is not None else compile_ops(prog, mode.subframe_ns)
    p = _params(mode)
    plans: dict[int, Plan] = {}
    for tid in sorted(prog.threads, key=lambda t: (prog.threads[t].start, t)):
        if tid not in plans:  # a thread whose creator was not recorded starts with J = 0
            plans[tid] = _schedule(prog, tid, mode, p, 0.0, plans, ops)
    return plans
