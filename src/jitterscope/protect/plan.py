"""What a `protect` run will do, built from the command line and checked before anything changes.

Defaults are the thesis's (the thesis section 4.4): Ts = 100us, S = 900us, the
fixed duty-cycle law, the real-time blocker; the signal is chosen by what the
host and the programs offer (signals.py), its threshold 25% of the peak
bandwidth (the synthetic experiment's, L1908) or the signal's own default.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jitterscope import sysinfo
from jitterscope.errors import JitterscopeError
from jitterscope.protect import actuators, signals, slacklaw
from jitterscope.protect.programs import Program, given, split_command
from jitterscope.rundir import new_run_path
from jitterscope.units import (
    format_cpulist,
    format_ns,
    parse_cpulist,
    parse_duration_ns,
)

LAWS = ("fixed", "proportional", "slack")
SAMPLINGS = ("timer", "event")
TS_BOUNDS = (1e-6, 1.0)  # --sample: 1us to 1s
S_BOUNDS = (1e-6, 10.0)  # --suspend: 1us to 10s


@dataclass
class Plan:
    cpus: list[int]  # best-effort CPUs (one control thread each)
    critical_cpus: list[int]
    ts_ns: float = 100e3
    s_ns: float = 900e3
    law: str = "fixed"
    sampling: str = "timer"  # event: counters overflow at the budget (no timer)
    gain: float = 10.0
    s_min_ns: float = 0.0
    s_max_ns: float = 0.0
    signal: str = "auto"
    threshold: str | None = None
    actuator: str = "rt"
    cgroup_version: int | None = None
    duration_ns: float | None = None
    compare_ns: float | None = None
    deadline_ns: float | None = None
    priority: int = 50
    critical_pid: int | None = None
    critical_cmd: list[str] = field(default_factory=list)
    critical_page: Path | None = None
    be_pids: list[int] = field(default_factory=list)
    be_cmds: list[list[str]] = field(default_factory=list)
    be_cgroup: Path | None = None
    replay: Path | None = None
    calibration: Path | None = None
    peak_bps: float | None = None
    out: Path = field(default_factory=lambda: new_run_path(sysinfo.host(), "protect"))
    progress: bool = True
    given_programs: list[Program] = field(default_factory=list)

    @property
    def longest_s_ns(self) -> float:
        return self.s_max_ns if self.law == "proportional" else self.s_ns


def default_cpus() -> tuple[list[int], list[int]]:
    """Best-effort CPUs = the upper half of the online CPUs (at least one), critical = the rest."""
    online = sysinfo.online_cpus()
    if len(online) < 2:
        raise JitterscopeError("protect needs at least two online CPUs (critical and best-effort apart)")
    half = max(1, len(online) // 2)
    return online[-half:], online[:-half]


def duration(text: str, what: str, bounds: tuple[float, float]) -> float:
    return parse_duration_ns(text, what=what, bounds=bounds)


def build(a: dict[str, Any], calibrating: bool = False) -> Plan:
    """The plan from parsed arguments (a dict of the command's options), fully checked.

    `calibrating`: a calibration point, which may run no best-effort program (share 0)."""
    be_default, _ = default_cpus()
    cpus = parse_cpulist(str(a["cpus"])) if a.get("cpus") else be_default
    crit = (
        parse_cpulist(str(a["critical_cpus"]))
        if a.get("critical_cpus")
        else [c for c in sysinfo.online_cpus() if c not in cpus]
    )
    sysinfo.check_cpus(cpus + crit)
    both = sorted(set(cpus) & set(crit))
    if both:
        raise JitterscopeError(
            f"CPU {format_cpulist(both)} is both best-effort (--cpus) and critical "
            f"(--critical-cpus): they must be apart"
        )
    if not crit:
        raise JitterscopeError(f"--cpus {format_cpulist(cpus)} leaves no CPU for the critical program")
    p = Plan(cpus=cpus, critical_cpus=crit)
    p.ts_ns = duration(str(a.get("sample") or "100us"), "--sample", TS_BOUNDS)
    p.s_ns = duration(str(a.get("suspend") or "900us"), "--suspend", S_BOUNDS)
    p.law = str(a.get("law") or "fixed")
    if p.law not in LAWS:
        raise JitterscopeError(f"unknown law {p.law!r}: use {', '.join(LAWS)}")
    _law_options(p, a)
    p.signal = str(a.get("signal") or "auto")
    if p.signal not in signals.SIGNALS:
        raise JitterscopeError(f"unknown signal {p.signal!r}: use {', '.join(signals.SIGNALS)}")
    _sampling(p, a)
    p.threshold = str(a["threshold"]) if a.get("threshold") else None
    if p.threshold and p.signal not in ("auto", "always"):
        signals.parse_threshold(p.threshold, p.signal)
    if p.sampling == "event" and p.signal in ("auto", "cputime"):
        _event_cputime_budget(p)
    p.actuator, p.cgroup_version = actuators.parse(str(a.get("actuator") or "rt"))
    for key, what in (("duration", "--duration"), ("compare", "--compare"), ("deadline", "--deadline")):
        if a.get(key):
            setattr(
                p,
                f"{key}_ns",
                duration(str(a[key]), what, (1e-6, 7 * 86400.0) if key != "duration" else (0.1, 7 * 86400.0)),
            )
    if p.compare_ns is not None and p.compare_ns < 20 * (p.ts_ns + p.longest_s_ns):
        raise JitterscopeError(
            f"--compare {format_ns(p.compare_ns)} is too short: each phase needs at least "
            f"20 sampling periods with suspensions ({format_ns(20 * (p.ts_ns + p.longest_s_ns))})"
        )
    p.priority = 50 if a.get("priority") is None else int(a["priority"])
    if not 1 <= p.priority <= 99:
        raise JitterscopeError(f"--priority fifo:{p.priority} out of range 1-99")
    if a.get("peak"):
        p.peak_bps = signals.parse_bandwidth(str(a["peak"]), "--peak")
    _programs(p, a, calibrating)
    if p.signal == "replay" or p.replay is not None:
        _replay_checks(p)
    else:
        actuators.check(p.actuator, p.ts_ns, p.longest_s_ns)
    if a.get("out"):
        p.out = Path(str(a["out"]))
    if p.out.exists():
        raise JitterscopeError(f"{p.out}: already exists; choose a new --out directory")
    parent = p.out.parent if str(p.out.parent) else Path(".")
    if parent.exists() and not os.access(parent, os.W_OK):
        raise JitterscopeError(f"{parent}: not writable; choose another --out directory")
    return p


def _law_options(p: Plan, a: dict[str, Any]) -> None:
    if a.get("gain") is not None:
        p.gain = float(str(a["gain"]))
        if not 0 < p.gain <= 1000:
            raise JitterscopeError(f"--gain {p.gain:g} must be above 0 and at most 1000")
    p.s_min_ns = duration(str(a["suspend_min"]), "--suspend-min", S_BOUNDS) if a.get("suspend_min") else p.ts_ns
    p.s_max_ns = duration(str(a["suspend_max"]), "--suspend-max", S_BOUNDS) if a.get("suspend_max") else 4 * p.s_ns
    if p.law == "proportional" and p.s_min_ns > p.s_max_ns:
        raise JitterscopeError("--suspend-min must not exceed --suspend-max")
    if a.get("calibration"):
        # read under every law: a file named and not usable is an error, never silently ignored
        p.calibration = Path(str(a["calibration"]))
        slacklaw.load(p.calibration)
    if p.law == "slack":
        if not a.get("calibration"):
            raise JitterscopeError("--law slack needs --calibration FILE (made by 'jitterscope protect calibrate')")
        if not a.get("deadline"):
            raise JitterscopeError("--law slack needs --deadline: the critical program's latency bound")


def _sampling(p: Plan, a: dict[str, Any]) -> None:
    p.sampling = str(a.get("sampling") or "timer")
    if p.sampling not in SAMPLINGS:
        raise JitterscopeError(f"unknown sampling {p.sampling!r}: use {', '.join(SAMPLINGS)}")
    if p.sampling != "event":
        return
    if p.signal not in signals.EVENT_SIGNALS + ("auto",):
        raise JitterscopeError(
            f"--sampling event needs a counter that overflows at the budget: --signal "
            f"{' or '.join(signals.EVENT_SIGNALS)}, not {p.signal}"
        )
    if p.law == "slack" or a.get("replay"):
        raise JitterscopeError(
            "--sampling event works with the fixed and proportional laws on live counters (not --law slack or --replay)"
        )


def _event_cputime_budget(p: Plan) -> None:
    """On CPU time the budget is threshold x Ts, and the kernel's software events overflow no sooner
    than every 10 us (perf_swevent_init_hrtimer)."""
    text = p.threshold if p.threshold and p.threshold.endswith("%") else signals.default_threshold("cputime")
    budget = signals.parse_threshold(text, "cputime").percent or 0.0
    if budget * p.ts_ns < 10e3:
        raise JitterscopeError(
            f"--sampling event on CPU time: the budget {format_ns(budget * p.ts_ns)} (threshold "
            f"{text} x --sample {format_ns(p.ts_ns)}) is below the kernel's 10 us: use a longer "
            f"--sample or a larger --threshold"
        )


def _programs(p: Plan, a: dict[str, Any], calibrating: bool) -> None:
    if a.get("critical") is not None and a.get("critical_cmd"):
        raise JitterscopeError("give --critical PID or --critical-cmd CMD, not both")
    if a.get("critical") is not None:
        crit_pid = int(str(a["critical"])) if str(a["critical"]).strip().isdigit() else -1
        if crit_pid <= 0:
            raise JitterscopeError(f"--critical {a['critical']!r}: give a process id, e.g. 4242")
        if crit_pid in [_pid(x) for t in a.get("best_effort") or [] for x in str(t).split(",")]:
            raise JitterscopeError(f"--best-effort {crit_pid} is the critical program: the two sets must not overlap")
        prog = given("critical", crit_pid, "--critical")
        p.critical_pid = prog.pid
        outside = sorted(set(prog.cpus) - set(p.critical_cpus))
        if outside:
            raise JitterscopeError(
                f"critical process {prog.pid} may run on CPU {format_cpulist(outside)}, outside "
                f"the critical CPUs {format_cpulist(p.critical_cpus)}: pin it first "
                f"(taskset -a -p -c {format_cpulist(p.critical_cpus)} {prog.pid}) or change --cpus"
            )
        p.given_programs.append(prog)
    if a.get("critical_cmd"):
        p.critical_cmd = split_command(str(a["critical_cmd"]), "--critical-cmd")
    if a.get("critical_page"):
        p.critical_page = Path(str(a["critical_page"]))
    for text in a.get("best_effort") or []:
        for part in str(text).split(","):
            pid = _pid(part)
            if pid == p.critical_pid:
                raise JitterscopeError(f"--best-effort {pid} is the critical program: the two sets must not overlap")
            p.be_pids.append(pid)
            p.given_programs.append(given("best-effort", pid, "--best-effort"))
    p.be_cmds = [split_command(str(c), "--best-effort-cmd") for c in a.get("best_effort_cmd") or []]
    if a.get("best_effort_cgroup"):
        p.be_cgroup = Path(str(a["best_effort_cgroup"]))
        _cgroup_members(p)
    if a.get("replay"):
        p.replay = Path(str(a["replay"]))
        return
    if not (p.be_pids or p.be_cmds or p.be_cgroup or calibrating):
        raise JitterscopeError(
            "no best-effort program: give --best-effort PID,..., --best-effort-cmd CMD or --best-effort-cgroup PATH"
        )


def _pid(text: str) -> int:
    try:
        pid = int(text.strip())
    except ValueError:
        raise JitterscopeError(f"--best-effort {text!r}: give process ids, e.g. 4242,4243") from None
    if pid <= 0:
        raise JitterscopeError(f"--best-effort {pid}: not a process id")
    return pid


def _cgroup_members(p: Plan) -> None:
    d = p.be_cgroup
    assert d is not None
    if not (d / "cgroup.procs").is_file():
        raise JitterscopeError(f"--best-effort-cgroup {d}: not a cgroup directory (no cgroup.procs)")
    pids = [int(x) for x in (d / "cgroup.procs").read_text().split()]
    if not pids:
        raise JitterscopeError(f"--best-effort-cgroup {d}: no process in it")
    if p.critical_pid in pids:
        raise JitterscopeError(f"--best-effort-cgroup {d} holds the critical process {p.critical_pid}")
    for pid in pids:
        if pid not in p.be_pids:
            p.be_pids.append(pid)
            p.given_programs.append(given("best-effort", pid, "--best-effort-cgroup"))


def _replay_checks(p: Plan) -> None:
    if p.replay is None:
        raise JitterscopeError("--signal replay needs --replay FILE (a CSV of t,read_bytes,write_bytes)")
    p.signal = "replay"
    if p.actuator not in ("rt", "none"):
        raise JitterscopeError("a replay runs in virtual time: it suspends nothing (leave --actuator out)")
    p.actuator = "none"
    if len(p.cpus) != 1:
        p.cpus = p.cpus[:1]


def law_args(plan: Plan, s_ns: float) -> list[str]:
    """The controller's options for the law: Ts, S and, for the proportional law, its gain and bounds."""
    args = ["--sample-ns", str(int(plan.ts_ns)), "--suspend-ns", str(int(s_ns)), "--sampling", plan.sampling]
    if plan.law == "proportional":
        args += [
            "--law",
            "proportional",
            "--gain",
            str(int(plan.gain * 1000)),
            "--suspend-min-ns",
            str(int(plan.s_min_ns)),
            "--suspend-max-ns",
            str(int(plan.s_max_ns)),
        ]
    return args
