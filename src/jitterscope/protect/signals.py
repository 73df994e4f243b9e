"""The signals the controller can act on: what each measures, its threshold, whether this host has it.

| signal  | measures (per best-effort CPU, every Ts)                        | threshold (>= triggers)          |
|---------|-----------------------------------------------------------------|----------------------------------|
| pmu     | LLC read and write accesses x 64 B (perf_event_open, per CPU)   | bandwidth, or % of the peak      |
| resctrl | memory bandwidth of the group, MBM mbm_total_bytes              | bandwidth, or % of the peak      |
| report  | bytes the best-effort programs publish (report API)             | bandwidth, or % of the peak      |
| slack   | the critical program's latest latency against its deadline      | slack margin: time or % deadline |
| noise   | a pointer chase on a protected CPU while they run / while not   | slowdown %                       |
| cputime | CPU time of the best-effort tasks (perf task-clock)             | share of the CPU %               |
| replay  | a CSV of (t, read_bytes, write_bytes), in virtual time          | bandwidth                        |
| always  | nothing: every sample is over (duty-cycle unconditionally)      | -                                |
| none    | nothing: no sample is over (measure only: the unprotected case) | -                                |

`auto` picks, in order: pmu (a hardware PMU), resctrl (MBM), report (every
best-effort program publishes), slack (the critical program publishes
heartbeats and a deadline), cputime (anything else: weak, but needs nothing).

Event-based sampling (--sampling event) needs a perf counter that can
overflow at the budget: pmu (LLC lines, where a PMU exists) or cputime (the
best-effort tasks' task-clock, a software event: the stand-in on hosts
without a PMU, such as this project's VM).  `auto` then picks pmu, else cputime.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from jitterscope.doe.loads import llc_bytes
from jitterscope.errors import JitterscopeError
from jitterscope.native_bin import native_bin
from jitterscope.units import parse_duration_ns

BANDWIDTH = ("pmu", "resctrl", "report", "replay")
EVENT_SIGNALS = ("pmu", "cputime")
SIGNALS = ("auto", "pmu", "resctrl", "report", "slack", "noise", "cputime", "replay", "always", "none")
DEFAULT_THRESHOLD = {"bandwidth": "25%", "slack": "10%", "noise": "20%", "cputime": "50%"}
RESCTRL = Path("/sys/fs/resctrl")

_BW_UNITS = {"b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "kib": 1024, "mib": 1024**2, "gib": 1024**3}


@dataclass
class Threshold:
    """A parsed --threshold: bytes/s per direction, a share (0..1), or a time (ns)."""

    read_bps: float | None = None
    write_bps: float | None = None
    percent: float | None = None  # of the peak bandwidth, of the deadline, slowdown or CPU share
    ns: float | None = None


def parse_bandwidth(text: str, what: str = "--threshold") -> float:
    """Bytes per second from `2GB/s`, `500MiB/s`, `1.5e9B/s`."""
    m = re.fullmatch(r"\s*([0-9.]+(?:[eE][+-]?\d+)?)\s*([kKmMgG]i?[bB]|[bB])/s\s*", text)
    if not m:
        raise JitterscopeError(f"malformed bandwidth {text!r} in {what}: use e.g. 2GB/s, 500MiB/s")
    v = float(m.group(1)) * _BW_UNITS[m.group(2).lower()]
    if not math.isfinite(v) or v <= 0 or v > 1e15:
        raise JitterscopeError(f"{what} {text!r} must be a positive bandwidth below 1PB/s")
    return v


def _percent(text: str, what: str) -> float:
    try:
        v = float(text.strip().rstrip("%"))
    except ValueError:
        raise JitterscopeError(f"malformed percentage {text!r} in {what}: use e.g. 25%") from None
    if not 0 < v <= 1000:
        raise JitterscopeError(f"{what} {text!r} must be above 0% and at most 1000%")
    return v / 100


def parse_threshold(text: str, signal: str) -> Threshold:
    """--threshold for `signal`: `2GB/s`, `read=2GB/s,write=1GB/s`, `25%` (bandwidth signals),
    `100us` or `10%` (slack), `20%` (noise, cputime)."""

    what = f"--threshold {text!r}"
    t = text.strip()
    if signal in BANDWIDTH:
        if t.endswith("%"):
            return Threshold(percent=_percent(t, what))
        if "=" not in t:
            bw = parse_bandwidth(t)
            return Threshold(read_bps=bw, write_bps=bw)
        out = Threshold()
        for part in t.split(","):
            key, _, val = part.partition("=")
            if key.strip() not in ("read", "write"):
                raise JitterscopeError(f"{what}: use read=BW and/or write=BW, e.g. read=2GB/s,write=1GB/s")
            setattr(out, f"{key.strip()}_bps", parse_bandwidth(val))
        return out
    if signal == "slack" and not t.endswith("%"):
        return Threshold(ns=parse_duration_ns(t, what="--threshold", allow_zero=True, bounds=(0.0, 3600.0)))
    if signal in ("slack", "noise", "cputime"):
        if not t.endswith("%"):
            raise JitterscopeError(f"{what}: the {signal} signal takes a percentage, e.g. 20%")
        return Threshold(percent=_percent(t, what))
    return Threshold()


def default_threshold(signal: str) -> str:
    if signal in ("always", "none"):
        return ""
    return DEFAULT_THRESHOLD["bandwidth" if signal in BANDWIDTH else signal]


# Raw L2<->LLC events per microarchitecture, (vendor, family, model) -> (read, write) PERF_TYPE_RAW configs
# (umask << 8 | event), used where the kernel has no generic LLC events.  Read = lines brought into L2,
# write = lines written back from it: the thesis's level_2_transactions.load / level_2_lines_out.any
# (Nehalem, L1809-1832) and their successors.  Untested on this project's VM (it has no PMU).
RAW_EVENTS: dict[tuple[str, int, int], tuple[int, int]] = {
    ("GenuineIntel", 6, 0x1A): (0x01F0, 0x0FF2),  # Nehalem-EP: L2_TRANSACTIONS.LOAD, L2_LINES_OUT.ANY
    ("GenuineIntel", 6, 0x1E): (0x01F0, 0x0FF2),  # Nehalem (Core i7 860, the thesis's machine)
    ("GenuineIntel", 6, 0x55): (0x1FF1, 0x02F2),  # Skylake-SP: L2_LINES_IN.ALL, L2_LINES_OUT.NON_SILENT
    ("GenuineIntel", 6, 0x6A): (0x1FF1, 0x02F2),  # Ice Lake-SP: the same events
}


def raw_events() -> tuple[int, int] | None:
    """This CPU's raw (read, write) events from RAW_EVENTS, or None."""
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        return None
    f = {k.strip(): v.strip() for k, _, v in (ln.partition(":") for ln in info.splitlines()[:30])}
    try:
        return RAW_EVENTS.get((f.get("vendor_id", ""), int(f.get("cpu family", -1)), int(f.get("model", -1))))
    except ValueError:
        return None


def pmu_args() -> list[str]:
    """The controller's PMU options: the generic LLC events, or this CPU's raw ones when the kernel
    has a CPU PMU but no generic LLC events."""
    raw = raw_events()
    return ["--pmu-raw", f"{raw[0]:x},{raw[1]:x}"] if raw and _generic_missing() else []


def _generic_missing() -> bool:
    return not _check([])[0]


def _check(extra: list[str], cpu: int = 0) -> tuple[bool, str]:
    try:
        out = subprocess.run(
            [str(native_bin("jitterscope-protect")), *extra, "--check-pmu", str(cpu)],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
        got = json.loads(out.stdout)
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return False, "could not run the PMU check"
    return bool(got.get("ok")), str(got.get("error", ""))


def pmu_status(cpu: int) -> tuple[bool, str]:
    """Whether LLC read/write events (generic, else this CPU's raw ones) can be counted on `cpu`, and if not why."""
    ok, why = _check([], cpu)
    raw = raw_events()
    if not ok and raw is not None:
        ok, why = _check(["--pmu-raw", f"{raw[0]:x},{raw[1]:x}"], cpu)
    return ok, why


def mbm_files() -> list[Path]:
    """resctrl's per-domain memory-bandwidth counters of the default group (empty without MBM)."""
    return sorted(RESCTRL.glob("mon_data/mon_L3_*/mbm_total_bytes")) if RESCTRL.is_dir() else []


def choose(
    requested: str, cpus: list[int], be_publish: bool, critical_beats: bool, event: bool = False
) -> tuple[str, str]:
    """The signal to use and why (`auto` follows the order in the module docstring)."""
    if event and requested == "auto":
        ok, why = pmu_status(cpus[0])
        if ok:
            return "pmu", "event-based sampling: LLC lines overflow at the budget (hardware PMU)"
        return "cputime", (
            f"event-based sampling: {why}, so the best-effort tasks' CPU time (task-clock, a "
            f"software event) overflows at the budget instead, standing in for LLC lines"
        )
    if requested == "pmu":
        ok, why = pmu_status(cpus[0])
        if not ok:
            raise JitterscopeError(f"--signal pmu: {why}; use --signal report, slack, noise or cputime")
        return "pmu", "requested"
    if requested == "resctrl" and not mbm_files():
        raise JitterscopeError(
            "--signal resctrl: no /sys/fs/resctrl with MBM counters on this host "
            "(mount resctrl on a CPU with RDT monitoring)"
        )
    if requested == "report" and not be_publish:
        raise JitterscopeError(
            "--signal report: the best-effort programs publish no counters (they must use "
            "the report API, as jitterscope-synload does); use --signal cputime or slack"
        )
    if requested == "slack" and not critical_beats:
        raise JitterscopeError(
            "--signal slack: the critical program publishes no heartbeats with a deadline "
            "(use the report API and --deadline, or --signal report/cputime)"
        )
    if requested != "auto":
        return requested, "requested"
    ok, why = pmu_status(cpus[0])
    if ok:
        return "pmu", "hardware PMU counts LLC reads/writes"
    if mbm_files():
        return "resctrl", f"{why}; resctrl MBM present"
    if be_publish:
        return "report", f"{why}; the best-effort programs publish their bytes"
    if critical_beats:
        return "slack", f"{why}; the critical program publishes heartbeats and a deadline"
    return "cputime", f"{why} and nothing publishes: best-effort CPU time is the only signal"


def peak_bandwidth(cpu: int, seconds: float = 0.3) -> tuple[float, float]:
    """The CPU's own peak read and write bandwidth (B/s), by jitterscope-synload streaming half the LLC.

    The reference of a percentage threshold (the thesis: 25% "of the maximal bandwidth", L1908);
    measured before any best-effort program starts, or given with --peak."""

    buf = max(1 << 20, (llc_bytes(cpu) or 32 << 20) // 2)
    out = []
    for mode in ("read", "write"):
        proc = subprocess.run(
            [
                str(native_bin("jitterscope-synload")),
                "--mode",
                mode,
                "--cpu",
                str(cpu),
                "--buffer",
                str(buf),
                "--duration-ns",
                str(int(seconds * 1e9)),
            ],
            capture_output=True,
            text=True,
            timeout=60,
            env={},
            check=False,
        )
        if proc.returncode != 0:
            raise JitterscopeError(
                f"measuring the peak bandwidth of CPU {cpu} failed: "
                f"{(proc.stderr.strip().splitlines() or ['no message'])[-1]}"
            )
        out.append(float(json.loads(proc.stdout)["bytes_per_s"]))
    return out[0], out[1]
