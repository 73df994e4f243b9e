"""Real per-CPU frequency limits for `whatif dvfs --apply` (spec A.7 mapping (c)): the cpufreq policies of
the CPUs, the controller's factor table mapped onto their frequencies, and limit changes made through the
journal (undone on exit, Ctrl-C, and by the next command or `jitterscope restore` after a crash).

A factor f/f0 becomes a frequency f0 x factor, with f0 = cpuinfo_max_freq / the table's top factor (the
paper's headroom: 1.0 = 3 GHz base, 1.2 = 3.6 GHz peak), or --nominal; clamped to cpuinfo_min/max_freq and
snapped to the nearest scaling_available_frequencies entry where the driver lists them.  A limit is set
by writing the same value to scaling_max_freq and scaling_min_freq (raising: max first; lowering: min
first, so that min <= max holds between the two writes on kernels that check it).

JITTERSCOPE_CPUFREQ_ROOT replaces /sys/devices/system/cpu: a STAND-IN directory (tests build one with
cpuN/cpufreq/ files) on machines without cpufreq, like this project's VM.  Writing there changes no
frequency: it exercises the mapping, the journal and the restore only, and every output says so.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from jitterscope.journal import Entry, Journal, Outcome

SYS = Path("/sys/devices/system/cpu")
ROOT_ENV = "JITTERSCOPE_CPUFREQ_ROOT"
OP = "whatif_cpufreq"


def root() -> tuple[Path, bool]:
    """The cpu directory and whether it is a stand-in."""
    env = os.environ.get(ROOT_ENV)
    return (Path(env), True) if env else (SYS, False)


def _int(p: Path) -> int:
    return int(p.read_text().split()[0])


@dataclass
class Policy:
    cpu: int
    dir: Path
    lo_khz: int  # cpuinfo_min_freq
    hi_khz: int  # cpuinfo_max_freq
    available: list[int]  # scaling_available_frequencies (empty: any value)
    transition_ns: int  # cpuinfo_transition_latency


def policies(cpus: list[int]) -> tuple[list[Policy], str | None]:
    """The policies of `cpus`, or why there are none (the reason --apply is skipped)."""
    base, stand_in = root()
    out = []
    for cpu in cpus:
        d = base / f"cpu{cpu}" / "cpufreq"
        if not (d / "scaling_max_freq").exists():
            where = f"{d} (stand-in root {ROOT_ENV})" if stand_in else str(d)
            return [], f"this host has no cpufreq for CPU {cpu} ({where} is absent): no frequency to drive"
        try:
            avail = (
                [int(x) for x in (d / "scaling_available_frequencies").read_text().split()]
                if (d / "scaling_available_frequencies").exists()
                else []
            )
            lat = _int(d / "cpuinfo_transition_latency") if (d / "cpuinfo_transition_latency").exists() else 0
            out.append(Policy(cpu, d, _int(d / "cpuinfo_min_freq"), _int(d / "cpuinfo_max_freq"), sorted(avail), lat))
        except (OSError, ValueError) as err:
            return [], f"cannot read {d} ({getattr(err, 'strerror', None) or err})"
    return out, None


def frequency_map(table: tuple[float, ...], p: Policy, nominal_khz: int | None = None) -> dict[float, int]:
    """factor -> kHz for one policy (see the module's docstring)."""
    f0 = nominal_khz or p.hi_khz / max(table)
    out = {}
    for x in table:
        khz = min(max(int(round(x * f0)), p.lo_khz), p.hi_khz)
        if p.available:
            khz = min(p.available, key=lambda a: (abs(a - khz), -a))
        out[x] = khz
    return out


def _write(d: Path, lo: int, hi: int, current_max: int) -> None:
    first, second = (
        (("scaling_max_freq", hi), ("scaling_min_freq", lo))
        if hi >= current_max
        else (("scaling_min_freq", lo), ("scaling_max_freq", hi))
    )
    (d / first[0]).write_text(str(first[1]))
    (d / second[0]).write_text(str(second[1]))


def undo_limits(e: Entry) -> Outcome:
    """Journal undo: the policy's original scaling_min/max_freq, in an order the kernel accepts."""
    d = Path(e["path"])
    lo, hi = int(e["min"]), int(e["max"])
    if _int(d / "scaling_min_freq") == lo and _int(d / "scaling_max_freq") == hi:
        return Outcome("unchanged", f"{d} already {lo}..{hi} kHz")
    _write(d, lo, hi, _int(d / "scaling_max_freq"))
    (d / "scaling_max_freq").write_text(str(hi))  # again: a min above the old max may have clipped it
    return Outcome("restored", f"{d} limits set back to {lo}..{hi} kHz")


class Limits:
    """Pins each policy's frequency (min = max) through the journal; counts the changes."""

    def __init__(self, journal: Journal, pols: list[Policy]) -> None:
        self.journal, self.pols = journal, {p.cpu: p for p in pols}
        self.now: dict[int, int] = {}
        self.changes = 0

    def set(self, cpu: int, khz: int) -> None:
        if self.now.get(cpu) == khz:
            return
        d = self.pols[cpu].dir
        cur_max = _int(d / "scaling_max_freq")
        if cpu not in self.now:
            self.journal.begin(OP, path=str(d), min=_int(d / "scaling_min_freq"), max=cur_max)
        else:
            self.changes += 1
        _write(d, khz, khz, cur_max)
        self.now[cpu] = khz
