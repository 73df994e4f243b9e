"""The machine shape placement works on: LLC groups, SMT siblings, core types, and an override file.

From sysfs: a CPU's LLC group is the `shared_cpu_list` of its highest-level
unified or data cache (`cpuN/cache/indexK`), its SMT siblings
`topology/thread_siblings_list`, its capacity `cpu_capacity` (arm64 big.LITTLE;
1024 where absent), and Intel hybrid core types `/sys/devices/cpu_core/cpus` and
`cpu_atom/cpus`.  LITTLE CPUs (OBS-F's cores without the special feature) are
the E-cores, or the CPUs below the largest capacity.

The override file (`--topology FILE`, YAML, checked by config.py) replaces what
sysfs says, for tests and for what-if on a shape this machine does not have:

    llc_groups: ["0", "1"]      # CPU lists, one per LLC group (required)
    little: "1"                 # CPUs lacking the special feature (OBS-F); default none
    smt: ["0-1"]                # SMT sibling sets; default each CPU alone
    capacity: {0: 1024, 1: 512} # default 1024 each

The default override `/etc/jitterscope/topology.yaml` (if it exists) must agree
with the machine's LLC groups; one that contradicts it is refused unless given
explicitly with --topology, which is then noted in the run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pydantic import field_validator

from jitterscope import sysinfo
from jitterscope.config import ConfigModel, CpuList, load_config
from jitterscope.errors import JitterscopeError
from jitterscope.place.results import TopologyInfo
from jitterscope.units import format_cpulist, parse_cpulist

SYS_CPU = Path("/sys/devices/system/cpu")
DEFAULT_FILE = Path("/etc/jitterscope/topology.yaml")


@dataclass
class Topology:
    groups: list[list[int]]  # LLC groups
    little: list[int] = field(default_factory=list)
    smt: list[list[int]] = field(default_factory=list)
    capacity: dict[int, int] = field(default_factory=dict)
    source: str = "sysfs"
    note: str = ""

    @property
    def cpus(self) -> list[int]:
        return sorted(c for g in self.groups for c in g)

    def group_of(self, cpu: int) -> int:
        for i, g in enumerate(self.groups):
            if cpu in g:
                return i
        raise JitterscopeError(f"CPU {cpu} is in no LLC group of the topology ({self.source})")

    @property
    def big(self) -> list[int]:
        return [c for c in self.cpus if c not in self.little]

    def describe(self) -> str:
        groups = " ".join(f"[{format_cpulist(g)}]" for g in self.groups)
        little = f", LITTLE {format_cpulist(self.little)}" if self.little else ""
        return f"LLC groups {groups}{little} ({self.source})"

    def as_dict(self) -> TopologyInfo:
        return {
            "llc_groups": self.groups,
            "little": self.little,
            "smt": self.smt,
            "capacity": {str(k): v for k, v in self.capacity.items()},
            "source": self.source,
            "note": self.note,
        }


class TopologyFile(ConfigModel):
    llc_groups: list[CpuList]
    little: CpuList = []
    smt: list[CpuList] = []
    capacity: dict[int, int] = {}

    @field_validator("llc_groups")
    @classmethod
    def _disjoint(cls, v: list[list[int]]) -> list[list[int]]:
        if not v:
            raise ValueError("must list at least one LLC group")
        seen: set[int] = set()
        for g in v:
            if seen & set(g):
                raise ValueError(f"must be disjoint: CPU {sorted(seen & set(g))[0]} is in two groups")
            seen |= set(g)
        return v


def _read(p: Path) -> str | None:
    try:
        return p.read_text().strip()
    except OSError:
        return None


def llc_group(cpu: int) -> list[int]:
    """The CPUs sharing `cpu`'s last-level cache (itself alone if sysfs says nothing)."""
    best: tuple[int, list[int]] = (-1, [cpu])
    for idx in sorted((SYS_CPU / f"cpu{cpu}" / "cache").glob("index[0-9]*")):
        level, kind, shared = _read(idx / "level"), _read(idx / "type"), _read(idx / "shared_cpu_list")
        if level and shared and kind in ("Unified", "Data") and int(level) > best[0]:
            best = (int(level), parse_cpulist(shared))
    return best[1]


def from_sysfs() -> Topology:
    online = sysinfo.online_cpus()
    groups: list[list[int]] = []
    for c in online:
        g = [x for x in llc_group(c) if x in online]
        if g not in groups:
            groups.append(g)
    smt = []
    for c in online:
        s = _read(SYS_CPU / f"cpu{c}" / "topology" / "thread_siblings_list")
        sib = [x for x in parse_cpulist(s) if x in online] if s else [c]
        if sib not in smt:
            smt.append(sib)
    cap = {c: int(_read(SYS_CPU / f"cpu{c}" / "cpu_capacity") or 1024) for c in online}
    atom = _read(Path("/sys/devices/cpu_atom/cpus"))
    little = (
        [c for c in parse_cpulist(atom) if c in online] if atom else [c for c in online if cap[c] < max(cap.values())]
    )
    return Topology(groups, little, smt, cap)


def load(path: Path | None) -> Topology:
    """The topology: the explicit file, else the default file (if it agrees with sysfs), else sysfs."""
    machine = from_sysfs()
    explicit = path is not None
    if path is None:
        if not DEFAULT_FILE.exists():
            return machine
        path = DEFAULT_FILE
    f = load_config(path, TopologyFile, "topology file")
    online = set(sysinfo.online_cpus())
    t = Topology(
        [sorted(g) for g in f.llc_groups],
        sorted(f.little),
        [sorted(s) for s in f.smt] or [[c] for g in f.llc_groups for c in g],
        {**{c: 1024 for g in f.llc_groups for c in g}, **f.capacity},
        source=str(path),
    )
    missing = sorted(set(t.cpus) - online)
    if sorted(map(sorted, t.groups)) != sorted(map(sorted, machine.groups)):
        if not explicit:
            raise JitterscopeError(
                f"{path}: its LLC groups {t.describe()} contradict this machine's "
                f"({machine.describe()}); give it with --topology to use it anyway"
            )
        t.note = f"overrides the machine's {machine.describe()}"
    if missing:
        t.note += f"{'; ' if t.note else ''}CPUs {format_cpulist(missing)} are not online here (dry run only)"
    return t
