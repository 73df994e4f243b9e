"""Built-in DoE factors: knobs and interference that act on the real system.

Every factor validates its two levels and checks that this machine can apply
them *before* the experiment starts (`check`), so a plan that cannot run fails
with nothing changed.  `apply` makes the change for one run, always through the
Journal, which records the undo durably first; the runner undoes the journal
after each run, and `jitterscope restore` does it after a crash.  System knobs
are read and written through `jitterscope.knobs`, the layer `tune` uses too.

Kinds (levels in brackets; the plan picks two of them as low and high):
  cache_load      [none, resident, thrash]  CPU-bound load on another CPU
  udp_flood       [off, on]                 UDP datagrams over 127.0.0.1 to another CPU
  irq_affinity    [unchanged, to, away]     every movable IRQ to / away from the measured CPUs
  task_affinity   [unchanged, allowed, away] every movable task allowed on / kept off them
  timer_migration [0, 1]                    the kernel.timer_migration sysctl
  fifo            [off, 1..99]              SCHED_FIFO priority of the measured workload
  thp             [always, madvise, never]  transparent huge pages (on = always, off = never)
  ksm             [0, 1]                    kernel samepage merging (on = 1, off = 0)
  custom          shell commands for low, high and restore, from the user's own plan
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from jitterscope import knobs
from jitterscope.doe.loads import MAX_UDP_RATE, l2_bytes, llc_bytes, mem_available, start_load
from jitterscope.errors import JitterscopeError
from jitterscope.journal import Journal
from jitterscope.knobs import irq as irq_knobs
from jitterscope.knobs import tasks as task_knobs
from jitterscope.ownenv import program_environ
from jitterscope.units import format_cpulist, parse_size


@dataclass
class Context:
    """What every factor needs to know about the experiment."""

    cpus: list[int]  # measured CPUs
    online: list[int]
    load_seconds: float  # hard lifetime of a background load started for one run

    @property
    def others(self) -> list[int]:
        return [c for c in self.online if c not in self.cpus]


class Factor:
    """One factor of the plan: a kind, two levels, and the kind's settings."""

    LEVELS: ClassVar[tuple[str, ...]] = ()
    ALIASES: ClassVar[dict[str, str]] = {}
    PARAMS: ClassVar[tuple[str, ...]] = ()
    setup_s: ClassVar[float] = 0.05  # time one apply + undo takes, for the duration estimate

    def __init__(self, name: str, kind: str, low: str, high: str, params: dict[str, Any]) -> None:
        self.name, self.kind, self.low, self.high, self.params = name, kind, low, high, params
        self.letter = ""

    def level(self, sign: int) -> str:
        return self.high if sign > 0 else self.low

    def canonical(self, value: str) -> str:
        v = str(value).strip().lower()
        v = self.ALIASES.get(v, v)
        if self.LEVELS and v not in self.LEVELS:
            raise JitterscopeError(
                f"factor {self.name!r} ({self.kind}): level {value!r} is not one of {', '.join(self.LEVELS)}"
            )
        return v

    def check(self, ctx: Context) -> None:
        self.low, self.high = self.canonical(self.low), self.canonical(self.high)
        if self.low == self.high:
            raise JitterscopeError(f"factor {self.name!r}: low and high are both {self.low!r}")
        for key in self.params:
            if key not in self.PARAMS:
                raise JitterscopeError(
                    f"factor {self.name!r} ({self.kind}): unknown setting {key!r}"
                    + (f"; known: {', '.join(self.PARAMS)}" if self.PARAMS else "")
                )
        self.check_machine(ctx)

    def check_machine(self, ctx: Context) -> None:
        pass

    def apply(self, value: str, j: Journal, ctx: Context) -> None:
        raise NotImplementedError

    def fifo_priority(self, value: str) -> int | None:
        return None


def _need_root(f: Factor, what: str) -> None:
    if os.geteuid() != 0:
        raise JitterscopeError(f"factor {f.name!r} ({f.kind}) needs root to {what}")


def _need_file(f: Factor, path: Path, what: str) -> None:
    if not path.exists():
        raise JitterscopeError(f"factor {f.name!r} ({f.kind}): {path} is not present; this kernel has no {what}")
    if not os.access(path, os.W_OK):
        raise JitterscopeError(f"factor {f.name!r} ({f.kind}): {path} is not writable (needs root)")


def _other_cpu(f: Factor, ctx: Context, key: str = "cpu") -> int:
    if key in f.params:
        cpu = int(f.params[key])
        if cpu not in ctx.online:
            raise JitterscopeError(
                f"factor {f.name!r}: {key} {cpu} is not an online CPU (online: {format_cpulist(ctx.online)})"
            )
        if cpu in ctx.cpus:
            raise JitterscopeError(
                f"factor {f.name!r}: {key} {cpu} is a measured CPU; a background load must run on another one"
            )
        return cpu
    if not ctx.others:
        raise JitterscopeError(
            f"factor {f.name!r} ({f.kind}) needs a CPU that is not measured; "
            f"every online CPU ({format_cpulist(ctx.online)}) is measured"
        )
    return ctx.others[-1]


class CacheLoad(Factor):
    LEVELS = ("none", "resident", "thrash")
    ALIASES = {"off": "none"}
    PARAMS = ("cpu", "size")
    setup_s = 0.6  # starting either load; touching a thrash set larger than the LLC dominates (bench_doe)

    def check_machine(self, ctx: Context) -> None:

        self.cpu = _other_cpu(self, ctx)
        llc = llc_bytes(ctx.cpus[0])
        if "size" in self.params:
            self.thrash_bytes = parse_size(str(self.params["size"]), what=f"factor {self.name!r} size")
        elif llc is None:
            raise JitterscopeError(
                f"factor {self.name!r} (cache_load): this machine does not report its "
                f"last-level cache size in sysfs; give size: explicitly"
            )
        else:
            # 1.5x the LLC: every line of the measured CPU's share is evicted, yet memory stays modest.
            self.thrash_bytes = max(int(1.5 * llc), 64 << 20)
        if llc is not None and self.thrash_bytes <= llc and "thrash" in (self.low, self.high):
            raise JitterscopeError(
                f"factor {self.name!r}: size {self.thrash_bytes} B does not exceed the "
                f"last-level cache ({llc} B), so it would not thrash it"
            )
        avail = mem_available()
        if "thrash" in (self.low, self.high) and self.thrash_bytes > avail // 2:
            raise JitterscopeError(
                f"factor {self.name!r}: a {self.thrash_bytes >> 20} MiB working set is "
                f"more than half the available memory ({avail >> 20} MiB)"
            )
        self.resident_bytes = max(64 << 10, (l2_bytes(self.cpu) or (512 << 10)) // 4)
        self.llc = llc

    def apply(self, value: str, j: Journal, ctx: Context) -> None:

        if value == "none":
            return
        size = self.thrash_bytes if value == "thrash" else self.resident_bytes
        start_load(j, ["cache", "--cpu", str(self.cpu), "--bytes", str(size), "--seconds", f"{ctx.load_seconds:.1f}"])


class UdpFlood(Factor):
    LEVELS = ("off", "on")
    ALIASES = {"0": "off", "1": "on", "false": "off", "true": "on"}
    PARAMS = ("cpu", "sender_cpu", "rate", "payload")
    setup_s = 0.3

    def check_machine(self, ctx: Context) -> None:

        self.cpu = _other_cpu(self, ctx)
        self.sender_cpu = _other_cpu(self, ctx, "sender_cpu") if "sender_cpu" in self.params else self.cpu
        self.rate = int(self.params.get("rate", 50_000))
        if not 1 <= self.rate <= MAX_UDP_RATE:
            raise JitterscopeError(f"factor {self.name!r}: rate {self.rate} datagrams/s is outside 1..{MAX_UDP_RATE}")
        self.payload = int(self.params.get("payload", 500))
        if not 1 <= self.payload <= 65507:
            raise JitterscopeError(f"factor {self.name!r}: payload {self.payload} B is outside 1..65507")

    def apply(self, value: str, j: Journal, ctx: Context) -> None:

        if value == "on":
            start_load(
                j,
                [
                    "udp",
                    "--cpu",
                    str(self.cpu),
                    "--sender-cpu",
                    str(self.sender_cpu),
                    "--rate",
                    str(self.rate),
                    "--payload",
                    str(self.payload),
                    "--seconds",
                    f"{ctx.load_seconds:.1f}",
                ],
            )


class IrqAffinity(Factor):
    LEVELS = ("unchanged", "to", "away")
    ALIASES = {"default": "unchanged", "on": "to", "off": "away"}
    setup_s = 0.1

    def check_machine(self, ctx: Context) -> None:
        _need_root(self, "change IRQ affinity")
        if not any(i.movable for i in irq_knobs.irqs()):
            raise JitterscopeError(f"factor {self.name!r} (irq_affinity): no IRQ in /proc/irq can move")
        if "away" in (self.low, self.high) and not ctx.others:
            raise JitterscopeError(f"factor {self.name!r}: IRQs cannot go away from every online CPU")

    def apply(self, value: str, j: Journal, ctx: Context) -> None:
        if value != "unchanged":
            # IRQs that cannot move (managed, per-CPU) or refuse these CPUs are left as they are.
            irq_knobs.move_all(j, ctx.cpus if value == "to" else ctx.others)


class TaskAffinity(Factor):
    LEVELS = ("unchanged", "allowed", "away")
    ALIASES = {"default": "unchanged", "on": "allowed", "off": "away"}
    setup_s = 0.3

    def check_machine(self, ctx: Context) -> None:
        _need_root(self, "change other tasks' CPU affinity")
        if "away" in (self.low, self.high) and not ctx.others:
            raise JitterscopeError(f"factor {self.name!r}: tasks cannot be kept away from every online CPU")

    def apply(self, value: str, j: Journal, ctx: Context) -> None:
        if value != "unchanged":
            # The runner starts the measured workload itself; its children set their own CPUs.
            task_knobs.move_all(j, ctx.cpus, away=value == "away")


class _FileFactor(Factor):
    KNOB = ""  # its name in jitterscope.knobs
    WHAT = ""

    @property
    def knob(self) -> knobs.FileKnob:
        return knobs.FILE_KNOBS[self.KNOB]

    def check_machine(self, ctx: Context) -> None:
        _need_file(self, self.knob.path, self.WHAT)

    def apply(self, value: str, j: Journal, ctx: Context) -> None:
        self.knob.apply(j, self.knob.normalise(value))


class TimerMigration(_FileFactor):
    LEVELS = ("0", "1")
    ALIASES = {"off": "0", "on": "1", "false": "0", "true": "1"}
    KNOB = "kernel.timer_migration"
    WHAT = "kernel.timer_migration (CONFIG_NO_HZ_COMMON)"


class Thp(_FileFactor):
    LEVELS = ("always", "madvise", "never")
    ALIASES = {"on": "always", "off": "never", "true": "always", "false": "never"}
    KNOB = "mm.thp.enabled"
    WHAT = "transparent huge pages"

    def check_machine(self, ctx: Context) -> None:
        super().check_machine(ctx)
        choices = self.knob.offered()
        for v in (self.low, self.high):
            if v not in choices:
                raise JitterscopeError(
                    f"factor {self.name!r} (thp): this kernel offers {', '.join(choices)}, not {v!r}"
                )


class Ksm(_FileFactor):
    LEVELS = ("0", "1")
    ALIASES = {"off": "0", "on": "1", "false": "0", "true": "1"}
    KNOB = "mm.ksm.run"
    WHAT = "KSM (CONFIG_KSM)"


class Fifo(Factor):
    ALIASES = {"false": "off", "0": "off", "none": "off", "other": "off"}
    setup_s = 0.0

    def canonical(self, value: str) -> str:
        v = str(value).strip().lower()
        v = self.ALIASES.get(v, v)
        if v.startswith("fifo:"):
            v = v[5:]
        if v == "off":
            return v
        if not v.isdigit() or not 1 <= int(v) <= 99:
            raise JitterscopeError(f"factor {self.name!r} (fifo): level {value!r} must be off or a priority 1-99")
        return str(int(v))

    def check_machine(self, ctx: Context) -> None:
        if os.geteuid() != 0:
            import resource

            soft, _ = resource.getrlimit(resource.RLIMIT_RTPRIO)
            top = max(int(v) for v in (self.low, self.high) if v != "off")
            if soft != resource.RLIM_INFINITY and soft < top:
                raise JitterscopeError(
                    f"factor {self.name!r} (fifo): SCHED_FIFO priority {top} needs root or RLIMIT_RTPRIO >= {top}"
                )

    def apply(self, value: str, j: Journal, ctx: Context) -> None:
        pass  # applied to the measured workload itself when it starts (it dies with the run)

    def fifo_priority(self, value: str) -> int | None:
        return None if value == "off" else int(value)


class Custom(Factor):
    PARAMS = ("restore", "timeout")
    setup_s = 0.1

    def canonical(self, value: str) -> str:
        if not isinstance(value, str) or not value.strip():
            raise JitterscopeError(f"factor {self.name!r} (custom): low and high must be shell commands")
        return value

    def check_machine(self, ctx: Context) -> None:
        r = self.params.get("restore")
        if not isinstance(r, str) or not r.strip():
            raise JitterscopeError(
                f"factor {self.name!r} (custom) needs restore: a shell command that puts the system back"
            )

    def apply(self, value: str, j: Journal, ctx: Context) -> None:
        # Shell only for text the user wrote in their own plan; nothing is interpolated into it.
        timeout = float(self.params.get("timeout", 60))
        j.begin("shell", command=self.params["restore"])
        proc = subprocess.run(value, shell=True, capture_output=True, text=True, timeout=timeout, env=program_environ())
        if proc.returncode != 0:
            last = (proc.stderr.strip().splitlines() or [""])[-1]
            raise JitterscopeError(
                f"factor {self.name!r}: command {value!r} exited {proc.returncode}" + (f": {last}" if last else "")
            )


KINDS: dict[str, Callable[..., Factor]] = {
    "cache_load": CacheLoad,
    "udp_flood": UdpFlood,
    "irq_affinity": IrqAffinity,
    "task_affinity": TaskAffinity,
    "timer_migration": TimerMigration,
    "fifo": Fifo,
    "thp": Thp,
    "ksm": Ksm,
    "custom": Custom,
}

# Order of application within a run: settings that steer tasks and IRQs first, so
# the loads started afterwards pin themselves and are not moved; loads last.
APPLY_ORDER = {
    "custom": 0,
    "timer_migration": 1,
    "thp": 1,
    "ksm": 1,
    "irq_affinity": 2,
    "task_affinity": 3,
    "fifo": 4,
    "cache_load": 5,
    "udp_flood": 5,
}


def make(name: str, kind: str, low: Any, high: Any, params: dict[str, Any]) -> Factor:
    if kind not in KINDS:
        raise JitterscopeError(f"factor {name!r}: unknown kind {kind!r}; known: {', '.join(sorted(KINDS))}")
    return KINDS[kind](name, kind, _text(low), _text(high), params)


def _text(v: Any) -> str:
    """YAML 1.1 reads on/off as booleans; give them back as the words the user wrote."""
    if v is True:
        return "on"
    if v is False:
        return "off"
    return "" if v is None else str(v)
