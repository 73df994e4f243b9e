"""Stand-in cache weights where the machine has no PMU (spec B.1 (ii) and (iii)), as a labels file for --labels.

cachegrind (B.1 ii)  each program runs under valgrind's cachegrind for
    --duration (default 10 s of simulated run, ~50x slower than native), then
    is interrupted; weight = LL misses / instructions x --ipc (an assumed IPC:
    misses per cycle, the paper's unit).  The simulated LL is the machine's
    last-level cache (size, ways and line size from sysfs: 32 MiB, 16-way in the
    spec; rounded down to a power-of-two number of sets, which cachegrind needs),
    or --ll SIZE.  Static: one weight per program, no phases.
    The program runs alone in the simulation, so a working set that fits the LL
    alone weighs ~0 however it thrashes next to another (jitterscope-cachebuster,
    24 MiB, is the example): give --ll the share a task gets of a shared LLC.
probe (B.1 iii)  the calibrated interference probe: jitterscope-chase (a
    dependent pointer chase over 16 MiB, half the LLC, back to back) runs on one CPU while the
    program runs on another CPU of the same LLC group, stopped and continued in
    alternate 500 ms phases (--duration / 1 s pairs, at least 2); slowdown = median chase latency with the
    program running / stopped per pair of phases, their median - 1 (`noise`:
    half their interquartile range; `within_noise` when the slowdown, or the
    calibration's, is not above it).  Calibrated: jitterscope-cachebuster is
    measured the same way and weight = slowdown / cachebuster's slowdown, so
    cachebuster weighs 1 as its oracle weight does (negative slowdowns, noise,
    count as 0).  Phases alternate, so load from elsewhere falls on both alike.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from typing import Any, TypedDict

import numpy as np

from jitterscope import boundedio
from jitterscope.errors import JitterscopeError, UsageError
from jitterscope.journal import Journal
from jitterscope.native_bin import native_bin
from jitterscope.place.actuate import Actuator
from jitterscope.place.observe import Beats
from jitterscope.place.plan import commands
from jitterscope.place.tasks import start
from jitterscope.place.topology import SYS_CPU, Topology, load
from jitterscope.protect import programs
from jitterscope.protect.report import ReportPage
from jitterscope.units import format_size, parse_cpulist, parse_duration_s, parse_size

METHODS = ("cachegrind", "probe")


def llc_geometry(cpu: int = 0) -> tuple[int, int, int]:
    """(size, ways, line) of the CPU's last-level cache from sysfs; 32 MiB, 16-way, 64 B if it says nothing."""
    best = (32 << 20, 16, 64)
    idx = sorted((SYS_CPU / f"cpu{cpu}" / "cache").glob("index[0-9]*"))
    for d in idx[-1:]:
        try:
            size = (d / "size").read_text().strip().upper()
            n = int(size.rstrip("KMG")) << {"K": 10, "M": 20, "G": 30}.get(size[-1:], 0)
            best = (n, int((d / "ways_of_associativity").read_text()), int((d / "coherency_line_size").read_text()))
        except (OSError, ValueError):
            pass
    return best


def parse_cachegrind(path: Path) -> dict[str, int]:
    """The summary line of a cachegrind output file, by event name."""
    events: list[str] = []
    for ln in boundedio.read_text(path, "cachegrind output", boundedio.table_cap()).splitlines():
        if ln.startswith("events:"):
            events = ln.split()[1:]
        elif ln.startswith("summary:") and events:
            return dict(zip(events, (int(x) for x in ln.split()[1:])))
    raise JitterscopeError(f"{path}: no summary in cachegrind's output (did the program start?)")


class _LabelBase(TypedDict):
    weight: float
    source: str  # profiled (cachegrind) or probe
    method: str


class CachegrindLabel(_LabelBase):
    """A program's stand-in weight from cachegrind: LL misses per instruction x the assumed IPC."""

    ll_misses: int
    instructions: int
    ll_bytes: int
    ll_ways: int
    ipc: float
    seconds: float


class ProbeLabel(_LabelBase):
    """A program's stand-in weight from the interference probe: the slowdown it causes the probe."""

    slowdown: float
    noise: float
    calibration_slowdown: float | None
    calibration_noise: float | None
    within_noise: bool
    cpu: int
    probe_cpu: int
    phases: int
    phase_s: float


def cachegrind(
    j: Journal,
    argv: list[str],
    scratch: Path,
    n: int,
    cpus: list[int],
    duration_s: float,
    ll: tuple[int, int, int],
    ipc: float,
) -> CachegrindLabel:
    out = scratch / f"cachegrind-{n}.out"
    print(
        f"place --profile: {Path(argv[0]).name} under cachegrind for {duration_s:g} s (LL {ll[0] >> 20} MiB, "
        f"{ll[1]}-way)",
        file=sys.stderr,
    )
    vg = [
        "valgrind",
        "--tool=cachegrind",
        "--cache-sim=yes",
        f"--LL={ll[0]},{ll[1]},{ll[2]}",
        f"--cachegrind-out-file={out}",
        "--",
    ]
    prog = programs.start(j, "task", vg + argv, cpus, None, scratch / f"cachegrind-{n}.log")
    deadline = time.monotonic() + duration_s
    while time.monotonic() < deadline and prog.alive():
        time.sleep(0.05)
    if prog.alive():
        os.killpg(prog.pid, signal.SIGINT)  # valgrind writes its output when the program dies of a signal
    assert prog.proc is not None
    try:
        prog.proc.wait(timeout=60)
    except Exception:
        programs.stop(prog)
    if not out.exists():
        raise JitterscopeError(
            f"cachegrind did not profile {Path(argv[0]).name}: {programs.log_tail(scratch / f'cachegrind-{n}.log')}"
        )
    c = parse_cachegrind(out)
    misses = sum(c.get(k, 0) for k in ("ILmr", "DLmr", "DLmw"))
    instr = c.get("Ir", 0)
    mpi = misses / instr if instr else 0.0
    return {
        "weight": mpi * ipc,
        "source": "profiled",
        "method": "cachegrind",
        "ll_misses": misses,
        "instructions": instr,
        "ll_bytes": ll[0],
        "ll_ways": ll[1],
        "ipc": ipc,
        "seconds": duration_s,
    }


def _pair(topo: Topology, cpus: list[int]) -> tuple[int, int]:
    for g in topo.groups:
        mine = [c for c in g if c in cpus]
        if len(mine) >= 2:
            return mine[0], mine[1]
    raise JitterscopeError("--profile probe needs two CPUs sharing a last-level cache (give --cpus or --topology)")


def slowdown(
    j: Journal, argv: list[str], scratch: Path, n: int, cpu: int, beats: Beats, phases: int, phase_s: float
) -> tuple[float, float]:
    """The probe's slowdown with `argv` running on `cpu`: per pair of phases (running, stopped) the ratio of the
    probe's median latencies; their median - 1, and half their interquartile range (the noise floor)."""
    print(
        f"place --profile: the probe's latency with {Path(argv[0]).name} on CPU {cpu} running and stopped, "
        f"{phases} x {2 * phase_s * 1.2:g} s",
        file=sys.stderr,
    )
    p = start(j, argv, [cpu], scratch, n, {})
    act = Actuator(j, "sigstop", [p])
    med: dict[bool, list[float]] = {True: [], False: []}
    try:
        time.sleep(phase_s)  # let it set up (a buffer to fill) before measuring
        for k in range(2 * phases):
            running = k % 2 == 0
            (act.cont if running else act.stop)(p)
            time.sleep(phase_s / 5)  # the switch's transient (caches refill) is not measured
            beats.read()
            beats.latencies.clear()
            time.sleep(phase_s)
            beats.read()
            lat = beats.all()
            if not len(lat):
                raise JitterscopeError(
                    "the probe (jitterscope-chase) published no heartbeats in a phase: is the machine overloaded?"
                )
            med[running].append(float(np.median(lat)))
        if not p.prog.alive():
            raise JitterscopeError(
                f"{argv[0]} ended during the probe (exit code {p.prog.returncode()}: "
                f"{programs.log_tail(p.prog.log)}); it must run {2 * phases * phase_s * 1.2:.0f} s "
                f"or more"
            )
    finally:
        act.cont(p)
        programs.stop(p.prog)
    r = np.array(med[True]) / np.array(med[False])
    q1, q2, q3 = np.percentile(r, [25, 50, 75])
    return float(q2 - 1), float((q3 - q1) / 2)


def probe(
    j: Journal,
    cmds: list[list[str]],
    scratch: Path,
    topo: Topology,
    cpus: list[int],
    phases: int,
    phase_s: float,
    calibrate: bool,
) -> dict[str, ProbeLabel]:
    a, b = _pair(topo, cpus)
    rp = scratch / "probe.page"

    ReportPage.create(rp)
    chase = programs.start(
        j, "probe", [str(native_bin("jitterscope-chase")), "--buffer", str(16 << 20)], [b], rp, scratch / "probe.log"
    )
    beats = Beats(rp)
    try:
        cb = [str(native_bin("jitterscope-cachebuster"))]
        ref, ref_noise = slowdown(j, cb, scratch, 999, a, beats, phases, phase_s) if calibrate else (None, None)
        out: dict[str, ProbeLabel] = {}
        for n, argv in enumerate(cmds):
            s, noise = slowdown(j, argv, scratch, n, a, beats, phases, phase_s)
            w = max(0.0, s) / ref if ref and ref > 0 else max(0.0, s)
            out[Path(argv[0]).name] = {
                "weight": w,
                "source": "probe",
                "method": "interference probe",
                "slowdown": s,
                "noise": noise,
                "calibration_slowdown": ref,
                "calibration_noise": ref_noise,
                "within_noise": abs(s) <= noise or (ref is not None and ref <= (ref_noise or 0)),
                "cpu": a,
                "probe_cpu": b,
                "phases": phases,
                "phase_s": phase_s,
            }
        return out
    finally:
        programs.stop(chase)


def labels_yaml(entries: dict[str, CachegrindLabel] | dict[str, ProbeLabel], method: str) -> str:
    """The labels file (`--labels`): one entry per program, weight and source first, the evidence after."""
    import yaml

    what = (
        "LL misses per instruction x the assumed IPC"
        if method == "cachegrind"
        else "the probe's slowdown the program causes / the one jitterscope-cachebuster causes"
    )
    return (
        f"# jitterscope place --profile {method}: stand-in cache weights (no PMU); use with --labels FILE\n"
        f"# weight: {what}\n" + yaml.safe_dump(entries, sort_keys=False)
    )


def run(a: dict[str, Any], cmds: list[list[str]], topo: Topology, cpus: list[int]) -> str:
    """Profile every command with the method of --profile; the labels file's text."""

    method = a["profile"]
    if method not in METHODS:
        raise JitterscopeError(f"unknown --profile {method!r}: use {' or '.join(METHODS)}")
    dur = parse_duration_s(a["duration"] or "10s", what="--duration")
    names = [Path(argv[0]).name for argv in cmds]
    twice = next((x for x in names if names.count(x) > 1), None)
    if twice:
        raise UsageError(
            f"--profile: two commands run {twice}; a labels file weighs programs by name, so profile "
            f"one invocation of each"
        )
    with Journal("place-profile") as j:
        scratch = j.scratch_dir("jitterscope-profile-", parent="/dev/shm" if Path("/dev/shm").is_dir() else None)
        if method == "cachegrind":
            ll = _cachegrind_ll(a.get("ll"), llc_geometry(cpus[0]))
            if not any((Path(d) / "valgrind").exists() for d in os.environ.get("PATH", "").split(":")):
                raise JitterscopeError("--profile cachegrind needs valgrind (apt-get install valgrind)")
            entries: dict[str, CachegrindLabel] | dict[str, ProbeLabel] = {
                Path(argv[0]).name: cachegrind(j, argv, scratch, n, cpus, dur, ll, a.get("ipc") or 1.0)
                for n, argv in enumerate(cmds)
            }
        else:
            phases = max(2, int(dur / 1.0))
            entries = probe(j, cmds, scratch, topo, cpus, phases, 0.5, calibrate=True)
    return labels_yaml(entries, method)


def _cachegrind_ll(given: str | None, geo: tuple[int, int, int]) -> tuple[int, int, int]:
    """The LL cachegrind simulates: --ll, or the machine's.  cachegrind needs a power-of-two number of sets:
    a given size without one is refused; the machine's own (480 MiB, 16-way, on a cloud Xeon) is rounded down
    to the largest size with one, with a note, since the user chose nothing."""
    size = parse_size(given, "--ll") if given else geo[0]
    sets = size // (geo[1] * geo[2])
    if sets >= 1 and not sets & (sets - 1) and sets * geo[1] * geo[2] == size:
        return (size, geo[1], geo[2])
    lo = (1 << (max(sets, 1).bit_length() - 1)) * geo[1] * geo[2]
    if given:
        raise UsageError(
            f"--ll {given}: cachegrind needs a power-of-two number of sets ({geo[1]}-way, "
            f"{geo[2]} B lines here): try {format_size(lo)} or {format_size(2 * lo)}"
        )
    print(
        f"note: cachegrind simulates a {format_size(lo)} LL: the machine's {format_size(size)} ({geo[1]}-way, "
        f"{geo[2]} B lines) has no power-of-two number of sets, which cachegrind needs (--ll SIZE to choose)",
        file=sys.stderr,
    )
    return (lo, geo[1], geo[2])


def from_args(a: dict[str, Any]) -> str:
    """--profile from the parsed options: the commands, the topology and the CPUs; the labels file's text."""

    cmds = commands(a)
    if not cmds:
        raise UsageError("--profile weighs commands: give --cmd CMD (repeatable) or -- CMD")
    topo = load(Path(a["topology"]) if a["topology"] else None)
    return run(a, cmds, topo, parse_cpulist(a["cpus"]) if a["cpus"] else topo.cpus)
