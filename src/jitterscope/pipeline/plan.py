"""A compiled schedule as the runtime's binary plan (layout: native/pipeline_records.h)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from jitterscope.pipeline import kernels as K
from jitterscope.pipeline import plan_format as F
from jitterscope.pipeline.compiler import Schedule
from jitterscope.pipeline.graph import Graph
from jitterscope.units import parse_cpulist

DEFAULT_SPIN_LIMIT = 20_000  # hybrid waits: pause loops (~50-100 us) before sleeping


@dataclass
class RunOptions:
    """How the runtime executes a schedule (the `pipeline run` options)."""

    iterations: int = 1000
    cpus: tuple[int, ...] = (0,)
    seed: int = 1
    wait: str = "auto"  # spin | futex | hybrid | auto (spin when every thread has its own CPU)
    priority: int | None = None  # SCHED_FIFO priority
    mlock: bool = True
    hugepages: bool = False
    guard: bool = False
    timers: bool = True
    period_ns: int = 0  # 0: back to back
    hang_s: float = 10.0

    def wait_mode(self, sched: Schedule) -> str:
        """auto: spin where nothing else is meant to run (isolated CPUs, or SCHED_FIFO threads), hybrid
        when each thread has a CPU it shares with other work, futex when threads share CPUs."""
        if self.wait != "auto":
            return self.wait
        if not sched.plan.pinned or len(sched.threads) > len(self.cpus):
            return "futex"
        return "spin" if self.priority or set(self.cpus) <= isolated_cpus() else "hybrid"


def isolated_cpus() -> set[int]:
    """CPUs the kernel keeps other work off (isolcpus, nohz_full)."""

    out: set[int] = set()
    for f in ("isolated", "nohz_full"):
        try:
            text = Path(f"/sys/devices/system/cpu/{f}").read_text().strip()
        except OSError:
            continue
        if text and text != "(null)":
            out |= set(parse_cpulist(text))
    return out


def user_library(g: Graph, spec: K.KernelSpec) -> Path:
    """A user kernel's shared object: as given, relative to the graph file's directory."""
    lib = Path(spec.library or "")
    if not lib.is_absolute() and g.path is not None:
        lib = (g.path.parent / lib).resolve()
    return lib


def thread_cpus(sched: Schedule, cpus: tuple[int, ...]) -> list[int]:
    """Pinned heuristics: thread t on cpus[t % n]; simple and barrier: -1 (the OS places them)."""
    if not sched.plan.pinned:
        return [-1] * len(sched.threads)
    return [cpus[t % len(cpus)] for t in range(len(sched.threads))]


def build_plan(sched: Schedule, ro: RunOptions, tsc_hz: float) -> bytes:
    g, inst, mem = sched.graph, sched.inst, sched.memory
    sinks = {b.name: i for i, b in enumerate(x for x in g.boxes if x.kernel == "sink")}
    subs = np.zeros(len(inst.subboxes), F.PLAN_SUBBOX)
    consts: list[int] = []
    strings = bytearray()

    def string(text: str) -> int:
        off = len(strings)
        strings.extend(text.encode() + b"\0")
        return off

    for s in inst.subboxes:
        r = subs[s.index]
        box = g.box(s.box)
        spec = box.spec
        r["kernel"] = K.KERNEL_IDS[spec.kernel]
        r["row0"], r["row1"] = s.row0, s.row1
        r["sink"] = sinks.get(s.box, F.NO_SINK)
        reads = [a for a in inst.accesses[s.index] if not a.write]
        writes = [a for a in inst.accesses[s.index] if a.write]
        r["n_in"], r["n_out"] = len(reads), len(writes)
        for j, a in enumerate(reads):
            r["in_buf"][j], r["in_row0"][j], r["in_row1"][j] = a.buffer, a.row0, a.row1
            r["in_off"][j] = mem.offsets[a.buffer]
        for j, a in enumerate(writes):
            r["out_buf"][j], r["out_off"][j] = a.buffer, mem.offsets[a.buffer]
        params = list(spec.params)
        if spec.kernel == "conv":
            params = [spec.inputs[0].footprint[0]]
            r["consts_off"], r["n_consts"] = len(consts), len(spec.conv)
            consts.extend(spec.conv)
        r["n_params"] = len(params)
        r["params"][: len(params)] = params
        r["fparams"][: len(spec.fparams)] = spec.fparams
        if spec.kernel == "user":
            r["lib_off"], r["sym_off"] = string(str(user_library(g, spec))), string(spec.symbol or "")
    ops: list[tuple[int, int]] = []
    threads = np.zeros(len(sched.threads), F.PLAN_THREAD)
    kinds = {"W": F.OP_WAIT, "E": F.OP_EXEC, "S": F.OP_SIGNAL}
    for t, (lst, cpu) in enumerate(zip(sched.ops, thread_cpus(sched, ro.cpus))):
        threads[t] = (len(ops), len(lst), cpu, 0)
        ops += [(kinds[k], i) for k, i in lst]
    sigs = np.array([(x.tokens, 0) for x in sched.signals], F.PLAN_SIGNAL)
    head = np.zeros(1, F.PLAN_HEADER)
    h = head[0]
    h["magic"], h["version"], h["header_size"] = F.PLAN_MAGIC, F.VERSION, F.PLAN_HEADER.itemsize
    h["subbox_size"], h["op_size"] = F.PLAN_SUBBOX.itemsize, F.PLAN_OP.itemsize
    h["thread_size"], h["signal_size"] = F.PLAN_THREAD.itemsize, F.PLAN_SIGNAL.itemsize
    h["n_subboxes"], h["n_ops"], h["n_threads"], h["n_signals"] = len(subs), len(ops), len(threads), len(sigs)
    h["n_sinks"], h["n_consts"], h["n_strings"] = len(sinks), len(consts), len(strings)
    h["flags"] = (
        (F.FLAG_MLOCK if ro.mlock else 0)
        | (F.FLAG_HUGEPAGES if ro.hugepages else 0)
        | (F.FLAG_GUARD if ro.guard else 0)
        | (F.FLAG_TIMERS if ro.timers else 0)
    )
    h["width"], h["height"], h["pixel_type"] = g.width, g.height, K.PIXEL_TYPES[g.pixel]
    h["wait_mode"] = F.WAIT_MODES[ro.wait_mode(sched)]
    h["fifo_priority"] = ro.priority or 0
    h["spin_limit"] = DEFAULT_SPIN_LIMIT
    h["pool_bytes"], h["iterations"], h["seed"] = mem.total, ro.iterations, ro.seed
    h["tsc_hz"] = round(tsc_hz)
    h["period_tsc"] = round(ro.period_ns * tsc_hz / 1e9)
    h["hang_tsc"] = round(ro.hang_s * tsc_hz)
    for c in ro.cpus:
        h["cpu_mask"][c // 64] |= np.uint64(1 << (c % 64))
    return b"".join(
        [
            head.tobytes(),
            subs.tobytes(),
            np.array(ops, F.PLAN_OP).tobytes(),
            threads.tobytes(),
            sigs.tobytes(),
            np.array(consts, "<i8").tobytes(),
            bytes(strings),
        ]
    )
